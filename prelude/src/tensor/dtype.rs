//! Element types (`DType`), the Rust types that carry them (`WithDType`), and torch's type
//! promotion rule (`promote`).

use half::{bf16, f16};
use std::fmt;

/// The element type of a tensor, with torch's names (`torch.float32`, ...).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DType {
    F32,
    F64,
    F16,
    BF16,
    I32,
    I64,
    U8,
    Bool,
}

/// Promotion categories, lowest first: torch promotes across categories to the higher one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    Bool,
    Int,
    Float,
}

impl DType {
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ];

    /// torch's name without the `torch.` prefix: `float32`, `int64`, `bool`, ...
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// The suffix of this dtype's kernel instances in kernels-cu/ (`binary_same_bf16`): the
    /// second argument of GPULAB_FOR_EACH_DTYPE in gpulab_dtypes.cuh.
    pub(crate) fn kernel_suffix(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }

    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }

    /// Integer types, bool excluded (as torch's `is_floating_point` / integral split).
    pub fn is_int(self) -> bool {
        self.category() == Category::Int
    }

    fn category(self) -> Category {
        match self {
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => Category::Float,
            DType::I32 | DType::I64 | DType::U8 => Category::Int,
            DType::Bool => Category::Bool,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dtype of `a op b` when only one operand has dimensions, as `torch.result_type` gives it:
/// a zero-dimensional tensor beside a dimensioned one decides the dtype only when its category
/// is higher, as a Python number would (`f16[n] * tensor(2.0)` stays float16, `i32[n] +
/// tensor(2)` stays int32, `i64[n] * tensor(0.5)` is float32). Two operands that both have
/// dimensions, or both have none, follow `promote`.
pub fn promote_dims(a: DType, a_zero_dim: bool, b: DType, b_zero_dim: bool) -> DType {
    match (a_zero_dim, b_zero_dim) {
        (false, true) if b.category() <= a.category() => a,
        (true, false) if a.category() <= b.category() => b,
        _ => promote(a, b),
    }
}

/// The dtype of `a op b` for two tensors that both have dimensions (or both have none), as
/// `torch.result_type` gives it (`promote_dims` covers a zero-dimensional one beside a
/// dimensioned one; torch calls this `promote_types`): the higher category wins (bool < integer < float); within a category the type that can hold both
/// (u8 with i32 is i32, f16 with bf16 is f32 since neither holds the other).
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    let (ca, cb) = (a.category(), b.category());
    if ca != cb {
        return if ca > cb { a } else { b };
    }
    match ca {
        Category::Bool => Bool,
        Category::Int => {
            // u8 < i32 < i64: every pair has a type holding both.
            let rank = |d| match d {
                U8 => 0,
                I32 => 1,
                _ => 2,
            };
            if rank(a) > rank(b) {
                a
            } else {
                b
            }
        }
        Category::Float => match (a, b) {
            (F64, _) | (_, F64) => F64,
            // f16/bf16 with f32 is f32, and f16 with bf16 too.
            _ => F32,
        },
    }
}

/// Whether the whole number `i` may be written into a tensor of `dt` (torch's
/// `checked_convert` from a Python int): uint8 takes -255..=255 (negatives wrap), int32 its
/// range, a float dtype anything up to its largest finite value.
fn int_fits(i: i64, dt: DType) -> bool {
    match dt {
        DType::U8 => (-255..=255).contains(&i),
        DType::I32 => i32::try_from(i).is_ok(),
        DType::I64 | DType::Bool => true,
        _ => float_fits(i as f64, dt),
    }
}

/// Whether `v` may be written into a tensor of `dt` (torch's `checked_convert` from a
/// Python float): an integer dtype takes finite values from its lowest to its largest, a float
/// dtype infinities, NaN and finite values up to its largest.
fn float_fits(v: f64, dt: DType) -> bool {
    let (lo, hi) = match dt {
        DType::Bool | DType::F64 => return true,
        DType::U8 => (0.0, 255.0),
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        DType::I64 => (i64::MIN as f64, i64::MAX as f64),
        DType::F32 => return !v.is_finite() || v.abs() <= f32::MAX as f64,
        DType::F16 => return !v.is_finite() || v.abs() <= f16::MAX.to_f64(),
        DType::BF16 => return !v.is_finite() || v.abs() <= bf16::MAX.to_f64(),
    };
    v >= lo && v <= hi
}

/// A number written into a tensor (`fill_`, `masked_fill`, `index_fill`, `full_like`,
/// `new_full`): a float or a whole number, which torch tells apart as Python does (`-1` into
/// uint8 wraps to 255, `-1.0` is an overflow error). `x.fill_(-1)` passes an `Int`,
/// `x.fill_(-1.0)` a `Float`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Float(f64),
    Int(i64),
}

impl From<f64> for Number {
    fn from(v: f64) -> Self {
        Number::Float(v)
    }
}
impl From<f32> for Number {
    fn from(v: f32) -> Self {
        Number::Float(v as f64)
    }
}
impl From<i64> for Number {
    fn from(v: i64) -> Self {
        Number::Int(v)
    }
}
impl From<i32> for Number {
    fn from(v: i32) -> Self {
        Number::Int(v as i64)
    }
}
impl From<bool> for Number {
    fn from(v: bool) -> Self {
        Number::Int(v as i64)
    }
}

/// torch's check on a number written into a tensor of `dt`, and the number to write: one
/// that does not fit is an error, not a saturated value. A whole number follows Python
/// int's rule (a negative one wraps into uint8: -1 is 255), a float Python float's (it must
/// lie inside an integer dtype's range; its fraction is then cut, as a cast cuts it).
pub(crate) fn fill_value(op: &str, v: impl Into<Number>, dt: DType) -> crate::error::Result<f64> {
    match v.into() {
        Number::Int(i) => fill_value_int(op, i, dt),
        Number::Float(v) => {
            fill_result(op, float_fits(v, dt), &format!("{v:?}"), dt)?;
            Ok(v)
        }
    }
}

/// The zero-dimensional tensor of `dt` on `device` that holds `v` once [`fill_value`] has
/// checked it: what the filling methods broadcast. A whole number into int64 stays exact
/// past 2^53 (it does not pass through f64).
pub(crate) fn fill_scalar(
    op: &str,
    v: impl Into<Number>,
    dt: DType,
    device: crate::device::Device,
) -> crate::error::Result<super::Tensor> {
    let v = v.into();
    let value = fill_value(op, v, dt)?;
    match (v, dt) {
        (Number::Int(i), DType::I64) => {
            super::Tensor::from_vec(vec![i], (), crate::device::Device::Cpu)?.to(device)
        }
        _ => super::Tensor::full_dtype((), value, dt, device),
    }
}

/// [`fill_value`] for a number given as a whole number.
pub(crate) fn fill_value_int(op: &str, i: i64, dt: DType) -> crate::error::Result<f64> {
    fill_result(op, int_fits(i, dt), &i.to_string(), dt)?;
    Ok(match dt {
        DType::U8 => i as u8 as f64,
        _ => i as f64,
    })
}

fn fill_result(op: &str, fits: bool, v: &str, dt: DType) -> crate::error::Result<()> {
    if fits {
        return Ok(());
    }
    Err(crate::error::Error::Invalid(format!(
        "{op}: the value {v} cannot be converted to {dt} without overflow (as in torch); \
         pick a value inside the dtype's range or convert the tensor first"
    )))
}

/// The dtype of `tensor op scalar`: a scalar takes part only when it is of a higher
/// category (torch: an int tensor times 2.5 is float32, a float16 tensor times 2.5 stays
/// float16, an int32 tensor plus 1 stays int32).
pub(crate) fn promote_scalar(t: DType, scalar_is_float: bool) -> DType {
    if scalar_is_float && !t.is_float() {
        DType::F32
    } else if !scalar_is_float && t == DType::Bool {
        DType::I64
    } else {
        t
    }
}

/// A Rust type that is the element type of some dtype: what `from_vec`, `item` and
/// `to_vec` are generic over.
pub trait WithDType: Copy + Send + Sync + fmt::Debug + PartialOrd + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    /// Exact for every integer type (f64 would round i64 past 2^53).
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
    #[doc(hidden)]
    fn into_cpu(v: Vec<Self>) -> super::cpu_backend::CpuStorage;
    #[doc(hidden)]
    fn cpu_slice(s: &super::cpu_backend::CpuStorage) -> Option<&[Self]>;
    #[doc(hidden)]
    fn cpu_slice_mut(s: &mut super::cpu_backend::CpuStorage) -> Option<&mut [Self]>;
}

macro_rules! with_dtype {
    ($t:ty, $variant:ident, $to_f64:expr, $from_f64:expr, $to_i64:expr, $from_i64:expr) => {
        impl WithDType for $t {
            const DTYPE: DType = DType::$variant;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to_f64(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from_f64(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                $to_i64(self)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                $from_i64(v)
            }
            fn into_cpu(v: Vec<Self>) -> super::cpu_backend::CpuStorage {
                super::cpu_backend::CpuStorage::$variant(v)
            }
            fn cpu_slice(s: &super::cpu_backend::CpuStorage) -> Option<&[Self]> {
                match s {
                    super::cpu_backend::CpuStorage::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn cpu_slice_mut(s: &mut super::cpu_backend::CpuStorage) -> Option<&mut [Self]> {
                match s {
                    super::cpu_backend::CpuStorage::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

// Casts follow Rust's `as` (saturating from float to int), which is what torch does for
// in-range values; out-of-range float-to-int casts are undefined in torch.
with_dtype!(
    f32,
    F32,
    |x: f32| x as f64,
    |v: f64| v as f32,
    |x: f32| x as i64,
    |v: i64| v as f32
);
with_dtype!(
    f64,
    F64,
    |x: f64| x,
    |v: f64| v,
    |x: f64| x as i64,
    |v: i64| v as f64
);
with_dtype!(
    f16,
    F16,
    |x: f16| x.to_f64(),
    f16::from_f64,
    |x: f16| x.to_f32() as i64,
    |v: i64| f16::from_f64(v as f64)
);
with_dtype!(
    bf16,
    BF16,
    |x: bf16| x.to_f64(),
    bf16::from_f64,
    |x: bf16| x.to_f32() as i64,
    |v: i64| bf16::from_f64(v as f64)
);
with_dtype!(
    i32,
    I32,
    |x: i32| x as f64,
    |v: f64| v as i32,
    |x: i32| x as i64,
    |v: i64| v as i32
);
with_dtype!(
    i64,
    I64,
    |x: i64| x as f64,
    |v: f64| v as i64,
    |x: i64| x,
    |v: i64| v
);
with_dtype!(
    u8,
    U8,
    |x: u8| x as f64,
    |v: f64| v as u8,
    |x: u8| x as i64,
    |v: i64| v as u8
);
with_dtype!(
    bool,
    Bool,
    |x: bool| x as u8 as f64,
    |v: f64| v != 0.0,
    |x: bool| x as i64,
    |v: i64| v != 0
);
