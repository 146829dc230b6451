//! The CPU backend: `CpuStorage` holds one `Vec` per dtype, and each operation here is the
//! CPU half of one `Storage` method. The f32 arm runs the tuned kernels of cpu.rs and
//! matmul.rs unchanged; f16 and bf16 compute in f32 through the same kernels (as torch does
//! on the CPU); f64 shares matmul.rs's packed product with its own micro-kernels, and the
//! integer types run the generic loops below. Operands arrive
//! already promoted to one dtype (the tensor layer casts them), so a dtype mismatch here is
//! a bug reported as an error, not a panic.

use super::dtype::{DType, WithDType};
use super::layout::Layout;
use super::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use super::shape::Broadcast;
use super::{cpu, matmul};
use crate::device::Device;
use crate::error::{Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;

#[derive(Clone)]
pub enum CpuStorage {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
}

/// `op` cannot run on `dtypes` on `device`: the error every backend returns for a
/// combination it does not implement.
pub(crate) fn unsupported(op: &str, dtypes: &[DType], device: Device) -> Error {
    let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
    Error::Invalid(format!(
        "{op} is not supported for dtype {} on {device}",
        names.join(" and ")
    ))
}

/// Applies `$body` to the vector inside whatever variant `$s` is, rebuilding the same variant.
macro_rules! same_variant {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            CpuStorage::F32($v) => CpuStorage::F32($body),
            CpuStorage::F64($v) => CpuStorage::F64($body),
            CpuStorage::F16($v) => CpuStorage::F16($body),
            CpuStorage::BF16($v) => CpuStorage::BF16($body),
            CpuStorage::I32($v) => CpuStorage::I32($body),
            CpuStorage::I64($v) => CpuStorage::I64($body),
            CpuStorage::U8($v) => CpuStorage::U8($body),
            CpuStorage::Bool($v) => CpuStorage::Bool($body),
        }
    };
}

pub(crate) use same_variant;

/// Applies `$body` (generic over the element type) to the vector inside `$s`.
macro_rules! any_variant {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            CpuStorage::F32($v) => $body,
            CpuStorage::F64($v) => $body,
            CpuStorage::F16($v) => $body,
            CpuStorage::BF16($v) => $body,
            CpuStorage::I32($v) => $body,
            CpuStorage::I64($v) => $body,
            CpuStorage::U8($v) => $body,
            CpuStorage::Bool($v) => $body,
        }
    };
}

/// See `CpuStorage::flip`: one pass in output order. The walk starts at the element the
/// first output reads (the last one along every flipped dimension) and steps backwards
/// along those, so no index is ever recomputed from coordinates.
fn flip_vec<T: Copy>(v: &[T], layout: &Layout, flip: &[bool]) -> Vec<T> {
    let dims = layout.dims();
    let n = layout.numel();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let rank = dims.len();
    if rank == 0 {
        out.push(v[layout.offset()]);
        return out;
    }
    let mut base = layout.offset() as isize;
    let steps: Vec<isize> = (0..rank)
        .map(|d| {
            let s = layout.strides()[d] as isize;
            if flip[d] {
                base += (dims[d] - 1) as isize * s;
                -s
            } else {
                s
            }
        })
        .collect();
    let (last, step) = (dims[rank - 1], steps[rank - 1]);
    let mut idx = vec![0usize; rank];
    loop {
        let mut at = base;
        for _ in 0..last {
            out.push(v[at as usize]);
            at += step;
        }
        // The odometer over the outer dimensions, carrying into the next one out.
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            base += steps[d];
            if idx[d] < dims[d] {
                break;
            }
            base -= steps[d] * dims[d] as isize;
            idx[d] = 0;
        }
    }
}

fn cast_vec<S: WithDType, D: WithDType>(v: &[S]) -> Vec<D> {
    // Through i64 between integer types (exact past 2^53), through f64 otherwise (exact
    // for every float type and every value a float can hold).
    if S::DTYPE.is_float() || D::DTYPE.is_float() {
        v.iter().map(|&x| D::from_f64(x.to_f64())).collect()
    } else {
        v.iter().map(|&x| D::from_i64(x.to_i64())).collect()
    }
}

fn f16s_to_f32(v: &[f16]) -> Vec<f32> {
    v.iter().map(|x| x.to_f32()).collect()
}
fn bf16s_to_f32(v: &[bf16]) -> Vec<f32> {
    v.iter().map(|x| x.to_f32()).collect()
}

/// `out[i]` for broadcast operands (or same-shape ones when `bc` is `None`).
fn zip_map<T: WithDType, U: Send>(
    a: &[T],
    b: &[T],
    bc: Option<&Broadcast>,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Vec<U> {
    match bc {
        None => a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect(),
        Some(bc) => {
            let n: usize = bc.dims.iter().product();
            let rank = bc.dims.len();
            let mut out = Vec::with_capacity(n);
            let mut idx = vec![0usize; rank];
            let (mut ia, mut ib) = (0usize, 0usize);
            for _ in 0..n {
                out.push(f(a[ia], b[ib]));
                // Odometer step: bump the last index, carrying leftwards.
                for d in (0..rank).rev() {
                    idx[d] += 1;
                    ia += bc.sa[d];
                    ib += bc.sb[d];
                    if idx[d] < bc.dims[d] {
                        break;
                    }
                    ia -= bc.sa[d] * bc.dims[d];
                    ib -= bc.sb[d] * bc.dims[d];
                    idx[d] = 0;
                }
            }
            out
        }
    }
}

/// torch's integer power: wrapping for y >= 0; for a negative exponent (allowed from a tensor,
/// refused from a scalar) 1 and -1 keep their powers and every other base gives 0.
fn int_pow(x: i64, y: i64) -> i64 {
    match (x, y) {
        (_, 0..) => x.wrapping_pow(y.min(u32::MAX as i64) as u32),
        (1, _) => 1,
        (-1, _) => {
            if y % 2 == 0 {
                1
            } else {
                -1
            }
        }
        _ => 0,
    }
}

fn int_binary(op: BinaryOp, x: i64, y: i64) -> i64 {
    match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        // Integer operands are promoted to float before a division (torch's true division).
        BinaryOp::Div => x.checked_div(y).unwrap_or(0),
        BinaryOp::Maximum => x.max(y),
        BinaryOp::Minimum => x.min(y),
        BinaryOp::Pow => int_pow(x, y),
        // The tensor layer refuses a zero divisor first (torch's ZeroDivisionError); 0 keeps
        // this total. `i64::MIN` by -1 wraps, as torch's.
        _ if y == 0 => 0,
        BinaryOp::Fmod => x.wrapping_rem(y),
        BinaryOp::Remainder => {
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        }
        BinaryOp::FloorDivide => {
            let (q, r) = (x.wrapping_div(y), x.wrapping_rem(y));
            if r != 0 && ((r < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        }
        // Float-only: the tensor layer promotes integer operands, and `binary` refuses them.
        BinaryOp::Atan2 | BinaryOp::Zeta => 0,
    }
}

fn cmp_apply<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
    match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
    }
}

impl CpuStorage {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
            CpuStorage::I32(_) => DType::I32,
            CpuStorage::I64(_) => DType::I64,
            CpuStorage::U8(_) => DType::U8,
            CpuStorage::Bool(_) => DType::Bool,
        }
    }

    pub(crate) fn len(&self) -> usize {
        any_variant!(self, v => v.len())
    }

    fn cast_to<D: WithDType>(&self) -> Vec<D> {
        any_variant!(self, v => cast_vec::<_, D>(v))
    }

    pub(crate) fn to_dtype(&self, dtype: DType) -> CpuStorage {
        if dtype == self.dtype() {
            return self.clone();
        }
        match dtype {
            DType::F32 => CpuStorage::F32(self.cast_to()),
            DType::F64 => CpuStorage::F64(self.cast_to()),
            DType::F16 => CpuStorage::F16(self.cast_to()),
            DType::BF16 => CpuStorage::BF16(self.cast_to()),
            DType::I32 => CpuStorage::I32(self.cast_to()),
            DType::I64 => CpuStorage::I64(self.cast_to()),
            DType::U8 => CpuStorage::U8(self.cast_to()),
            DType::Bool => CpuStorage::Bool(self.cast_to()),
        }
    }

    /// Every value as f64 (display, tests); exact for every dtype but i64 past 2^53.
    pub(crate) fn to_f64_vec(&self) -> Vec<f64> {
        self.cast_to()
    }

    /// The values as f32 for the half types, which compute in f32.
    fn half_as_f32(&self) -> Option<Vec<f32>> {
        match self {
            CpuStorage::F16(v) => Some(f16s_to_f32(v)),
            CpuStorage::BF16(v) => Some(bf16s_to_f32(v)),
            _ => None,
        }
    }

    /// f32 results back into `dtype` (f16 or bf16).
    fn from_f32(dtype: DType, v: Vec<f32>) -> CpuStorage {
        CpuStorage::F32(v).to_dtype(dtype)
    }

    fn mismatch(&self, op: &str, rhs: &CpuStorage) -> Error {
        unsupported(op, &[self.dtype(), rhs.dtype()], Device::Cpu)
    }

    pub(crate) fn binary(
        &self,
        rhs: &CpuStorage,
        op: BinaryOp,
        bc: Option<&Broadcast>,
    ) -> Result<CpuStorage> {
        use CpuStorage as S;
        let int = |a: &[i64], b: &[i64]| zip_map(a, b, bc, |x, y| int_binary(op, x, y));
        if !op.defined_for(self.dtype()) {
            return Err(unsupported(op.name(), &[self.dtype()], Device::Cpu));
        }
        Ok(match (self, rhs) {
            (S::F32(a), S::F32(b)) => S::F32(match bc {
                None => cpu::binary_same(op, a, b),
                Some(bc) => cpu::binary_bcast(op, a, b, bc),
            }),
            (S::F64(a), S::F64(b)) => S::F64(zip_map(a, b, bc, |x, y| op.apply_f64(x, y))),
            (S::F16(_), S::F16(_)) | (S::BF16(_), S::BF16(_)) => {
                let (a, b) = (self.half_as_f32().unwrap(), rhs.half_as_f32().unwrap());
                let out = match bc {
                    None => cpu::binary_same(op, &a, &b),
                    Some(bc) => cpu::binary_bcast(op, &a, &b, bc),
                };
                Self::from_f32(self.dtype(), out)
            }
            (S::I64(a), S::I64(b)) => S::I64(int(a, b)),
            (S::I32(_), S::I32(_)) | (S::U8(_), S::U8(_)) => {
                let out = S::I64(int(&self.cast_to(), &rhs.cast_to()));
                out.to_dtype(self.dtype())
            }
            (S::Bool(a), S::Bool(b)) => match op {
                // torch: + and max are "or", * and min are "and"; bool subtraction is an error.
                BinaryOp::Add | BinaryOp::Maximum => S::Bool(zip_map(a, b, bc, |x, y| x | y)),
                BinaryOp::Mul | BinaryOp::Minimum => S::Bool(zip_map(a, b, bc, |x, y| x & y)),
                _ => return Err(unsupported(op.name(), &[DType::Bool], Device::Cpu)),
            },
            _ => return Err(self.mismatch(op.name(), rhs)),
        })
    }

    /// `self op s` (or `s op self`), `self` already in the result dtype.
    pub(crate) fn binary_scalar(
        &self,
        op: BinaryOp,
        s: f64,
        scalar_first: bool,
    ) -> Result<CpuStorage> {
        use CpuStorage as S;
        let f = |x: f64| {
            if scalar_first {
                op.apply_f64(s, x)
            } else {
                op.apply_f64(x, s)
            }
        };
        let i = |x: i64| {
            let s = s as i64;
            if scalar_first {
                int_binary(op, s, x)
            } else {
                int_binary(op, x, s)
            }
        };
        if op == BinaryOp::Pow && self.dtype().is_int() && !scalar_first && s < 0.0 {
            return Err(Error::Invalid(format!(
                "pow: integers to negative integer powers are not allowed ({} tensor, exponent {s})",
                self.dtype()
            )));
        }
        if !op.defined_for(self.dtype()) {
            return Err(unsupported(op.name(), &[self.dtype()], Device::Cpu));
        }
        Ok(match self {
            S::F32(a) => S::F32(cpu::binary_scalar(op, a, s as f32, scalar_first)),
            S::F64(a) => S::F64(a.iter().map(|&x| f(x)).collect()),
            S::F16(_) | S::BF16(_) => Self::from_f32(
                self.dtype(),
                cpu::binary_scalar(op, &self.half_as_f32().unwrap(), s as f32, scalar_first),
            ),
            S::I32(_) | S::I64(_) | S::U8(_) => {
                let a: Vec<i64> = self.cast_to();
                S::I64(a.into_iter().map(i).collect()).to_dtype(self.dtype())
            }
            S::Bool(_) => return Err(unsupported(op.name(), &[DType::Bool], Device::Cpu)),
        })
    }

    /// Float-only ops arrive here with a float dtype (the tensor layer casts integers).
    pub(crate) fn unary(&self, op: UnaryOp) -> Result<CpuStorage> {
        use CpuStorage as S;
        let int_ok = op.int_ok();
        Ok(match self {
            S::F32(a) => S::F32(cpu::unary(op, a)),
            S::F64(a) => S::F64(a.iter().map(|&x| op.apply_f64(x)).collect()),
            S::F16(_) | S::BF16(_) => {
                Self::from_f32(self.dtype(), cpu::unary(op, &self.half_as_f32().unwrap()))
            }
            S::I32(_) | S::I64(_) | S::U8(_) if int_ok => {
                let a: Vec<i64> = self.cast_to();
                S::I64(a.into_iter().map(|x| op.apply_int(x)).collect()).to_dtype(self.dtype())
            }
            _ => return Err(unsupported(op.name(), &[self.dtype()], Device::Cpu)),
        })
    }

    pub(crate) fn cmp(
        &self,
        rhs: &CpuStorage,
        op: CmpOp,
        bc: Option<&Broadcast>,
    ) -> Result<CpuStorage> {
        use CpuStorage as S;
        let out = match (self, rhs) {
            (S::F32(a), S::F32(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::F64(a), S::F64(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::F16(a), S::F16(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::BF16(a), S::BF16(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::I32(a), S::I32(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::I64(a), S::I64(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::U8(a), S::U8(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            (S::Bool(a), S::Bool(b)) => zip_map(a, b, bc, |x, y| cmp_apply(op, x, y)),
            _ => return Err(self.mismatch(op.name(), rhs)),
        };
        Ok(S::Bool(out))
    }

    /// `cond ? x : y`, all three already expanded to one shape and `x`, `y` of one dtype.
    pub(crate) fn where_(cond: &CpuStorage, x: &CpuStorage, y: &CpuStorage) -> Result<CpuStorage> {
        let CpuStorage::Bool(c) = cond else {
            return Err(Error::Invalid(format!(
                "where: the condition must be a bool tensor, got {}",
                cond.dtype()
            )));
        };
        macro_rules! pick {
            ($($v:ident),*) => {
                match (x, y) {
                    $((CpuStorage::$v(a), CpuStorage::$v(b)) => CpuStorage::$v(
                        c.iter().zip(a.iter().zip(b)).map(|(&c, (&a, &b))| if c { a } else { b }).collect(),
                    ),)*
                    _ => return Err(x.mismatch("where", y)),
                }
            };
        }
        Ok(pick!(F32, F64, F16, BF16, I32, I64, U8, Bool))
    }

    /// The elements `layout` selects, contiguous. Dense runs are one `to_vec` of a slice;
    /// the f32 arm keeps cpu.rs's tiled transpose and parallel permute.
    pub(crate) fn copy_layout(&self, layout: &Layout) -> CpuStorage {
        let (off, n) = (layout.offset(), layout.numel());
        if n == 0 {
            // An empty view's offset may lie past its (empty) storage's end.
            return same_variant!(self, _v => Vec::new());
        }
        if layout.is_contiguous() {
            return same_variant!(self, v => v[off..off + n].to_vec());
        }
        match self {
            CpuStorage::F32(a) if n > 0 => {
                CpuStorage::F32(cpu::permute(&a[off..], layout.dims(), layout.strides()))
            }
            s => same_variant!(s, v => layout.offsets().map(|i| v[i]).collect()),
        }
    }

    /// Writes the dense `src` into the elements `layout` selects.
    pub(crate) fn write_layout(&mut self, layout: &Layout, src: &CpuStorage) -> Result<()> {
        fn put<T: Copy>(dst: &mut [T], layout: &Layout, src: &[T]) {
            let (off, n) = (layout.offset(), layout.numel());
            if n == 0 {
                return; // an empty view's offset may lie past the storage's end
            }
            if layout.is_contiguous() {
                dst[off..off + n].copy_from_slice(&src[..n]);
            } else {
                for (i, &v) in layout.offsets().zip(src) {
                    dst[i] = v;
                }
            }
        }
        use CpuStorage as S;
        match (self, src) {
            (S::F32(d), S::F32(s)) => put(d, layout, s),
            (S::F64(d), S::F64(s)) => put(d, layout, s),
            (S::F16(d), S::F16(s)) => put(d, layout, s),
            (S::BF16(d), S::BF16(s)) => put(d, layout, s),
            (S::I32(d), S::I32(s)) => put(d, layout, s),
            (S::I64(d), S::I64(s)) => put(d, layout, s),
            (S::U8(d), S::U8(s)) => put(d, layout, s),
            (S::Bool(d), S::Bool(s)) => put(d, layout, s),
            (d, s) => return Err(d.mismatch("copy_", s)),
        }
        Ok(())
    }

    /// The elements `layout` selects, reversed along each dimension where `flip` is true,
    /// contiguous (torch's `flip`).
    pub(crate) fn flip(&self, layout: &Layout, flip: &[bool]) -> CpuStorage {
        same_variant!(self, v => flip_vec(v, layout, flip))
    }

    /// See `Storage::gather`.
    pub(crate) fn gather(
        &self,
        layout: &Layout,
        dim: usize,
        idx: &[i64],
        idx_strides: &[usize],
        out_dims: &[usize],
    ) -> CpuStorage {
        // The out coordinates walk `out_dims`; the source position is the layout's except
        // along `dim`, which the index picks.
        let mut src = layout.strides().to_vec();
        let step = src[dim];
        src[dim] = 0;
        let walk_src = Layout::new(out_dims.to_vec(), src, layout.offset());
        let walk_idx = Layout::new(out_dims.to_vec(), idx_strides.to_vec(), 0);
        let at = |(s, i): (usize, usize)| s + idx[i] as usize * step;
        same_variant!(self, v => walk_src.offsets().zip(walk_idx.offsets()).map(|p| v[at(p)]).collect())
    }

    /// Reduces the middle axis of `[outer, len, inner]`. Sums and products of integers and
    /// bools are int64 (torch's rule); half types accumulate in f32.
    pub(crate) fn reduce_dim(
        &self,
        op: ReduceOp,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<CpuStorage> {
        use CpuStorage as S;
        Ok(match self {
            S::F32(a) => S::F32(cpu::reduce_dim(op, a, outer, len, inner)),
            S::F16(_) | S::BF16(_) => Self::from_f32(
                self.dtype(),
                cpu::reduce_dim(op, &self.half_as_f32().unwrap(), outer, len, inner),
            ),
            S::F64(a) => S::F64(fold_dim(
                a,
                outer,
                len,
                inner,
                op.identity() as f64,
                |acc, v| op.combine_f64(acc, v),
            )),
            _ => {
                let a: Vec<i64> = self.cast_to();
                let out = match op {
                    ReduceOp::Sum => fold_dim(&a, outer, len, inner, 0i64, i64::wrapping_add),
                    ReduceOp::Prod => fold_dim(&a, outer, len, inner, 1i64, i64::wrapping_mul),
                    ReduceOp::Max => fold_dim(&a, outer, len, inner, i64::MIN, i64::max),
                    ReduceOp::Min => fold_dim(&a, outer, len, inner, i64::MAX, i64::min),
                };
                let out = S::I64(out);
                if op.widens_ints() {
                    out
                } else {
                    out.to_dtype(self.dtype())
                }
            }
        })
    }

    /// Inclusive scan (`cumsum` for `Sum`, `cumprod` for `Prod`) along the middle axis of
    /// `[outer, len, inner]`, each line in order from its first element. The accumulators are
    /// torch's on the CPU: f64 for f32 and f64, f32 for the half types, each output rounded
    /// once; integers and bools give int64, wrapping on overflow.
    pub(crate) fn scan_dim(
        &self,
        op: ReduceOp,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<CpuStorage> {
        use CpuStorage as S;
        let init = op.identity();
        Ok(match self {
            S::F32(a) => S::F32(
                scan_lines(a, outer, len, inner, init as f64, |acc, &v| {
                    op.combine_f64(acc, v as f64)
                })
                .into_iter()
                .map(|v| v as f32)
                .collect(),
            ),
            S::F64(a) => S::F64(scan_lines(a, outer, len, inner, init as f64, |acc, &v| {
                op.combine_f64(acc, v)
            })),
            S::F16(_) | S::BF16(_) => {
                let a = self.half_as_f32().unwrap();
                let out = scan_lines(&a, outer, len, inner, init, |acc, &v| op.combine(acc, v));
                Self::from_f32(self.dtype(), out)
            }
            _ => {
                let a: Vec<i64> = self.cast_to();
                let prod = op == ReduceOp::Prod;
                S::I64(scan_lines(&a, outer, len, inner, prod as i64, |acc, &v| {
                    if prod {
                        acc.wrapping_mul(v)
                    } else {
                        acc.wrapping_add(v)
                    }
                }))
            }
        })
    }

    /// Sum, max or min of all elements, as a one-element storage.
    pub(crate) fn reduce_all(&self, op: ReduceOp) -> Result<CpuStorage> {
        match self {
            CpuStorage::F32(a) => Ok(CpuStorage::F32(vec![cpu::reduce_all(op, a)])),
            _ => self.reduce_dim(op, 1, self.len(), 1),
        }
    }

    /// Index (int64) of the largest (`max`) or smallest value along the middle axis of
    /// `[outer, len, inner]`; NaN counts as the largest and the smallest, as in torch, and
    /// ties go to the first index.
    pub(crate) fn arg_reduce(
        &self,
        max: bool,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> CpuStorage {
        fn run<T: WithDType>(
            a: &[T],
            max: bool,
            outer: usize,
            len: usize,
            inner: usize,
        ) -> Vec<i64> {
            let mut out = Vec::with_capacity(outer * inner);
            for o in 0..outer {
                for i in 0..inner {
                    let at = |k: usize| a[(o * len + k) * inner + i];
                    let mut best = 0usize;
                    for k in 1..len {
                        let (b, v) = (at(best), at(k));
                        #[allow(clippy::eq_op)]
                        let b_nan = b != b;
                        #[allow(clippy::eq_op)]
                        let v_nan = v != v;
                        if b_nan {
                            break;
                        }
                        if v_nan || (max && v > b) || (!max && v < b) {
                            best = k;
                        }
                    }
                    out.push(best as i64);
                }
            }
            out
        }
        CpuStorage::I64(any_variant!(self, v => run(v, max, outer, len, inner)))
    }

    /// `[m, k] x [k, n]`, both operands of one dtype.
    pub(crate) fn matmul(
        &self,
        rhs: &CpuStorage,
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<CpuStorage> {
        use CpuStorage as S;
        Ok(match (self, rhs) {
            (S::F32(a), S::F32(b)) => S::F32(matmul::matmul(a, b, m, k, n)),
            (S::F64(a), S::F64(b)) => S::F64(matmul::matmul(a, b, m, k, n)),
            (S::F16(_), S::F16(_)) | (S::BF16(_), S::BF16(_)) => {
                let (a, b) = (self.half_as_f32().unwrap(), rhs.half_as_f32().unwrap());
                Self::from_f32(self.dtype(), matmul::matmul(&a, &b, m, k, n))
            }
            (S::I32(_), S::I32(_)) | (S::I64(_), S::I64(_)) | (S::U8(_), S::U8(_)) => {
                let (a, b): (Vec<i64>, Vec<i64>) = (self.cast_to(), rhs.cast_to());
                S::I64(matmul_generic(&a, &b, m, k, n, 0, |c, x, y| {
                    c.wrapping_add(x.wrapping_mul(y))
                }))
                .to_dtype(self.dtype())
            }
            _ => {
                return Err(unsupported(
                    "matmul",
                    &[self.dtype(), rhs.dtype()],
                    Device::Cpu,
                ))
            }
        })
    }
}

/// Folds the middle axis of `[outer, len, inner]` with `f`.
fn fold_dim<T: Copy + Send + Sync>(
    a: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    init: T,
    f: impl Fn(T, T) -> T,
) -> Vec<T> {
    let mut out = vec![init; outer * inner];
    for o in 0..outer {
        let acc = &mut out[o * inner..(o + 1) * inner];
        for k in 0..len {
            let row = &a[(o * len + k) * inner..(o * len + k + 1) * inner];
            for (c, &v) in acc.iter_mut().zip(row) {
                *c = f(*c, v);
            }
        }
    }
    out
}

/// Each line of `a` seen as `[outer, len, inner]` (fixed outer and inner index) scanned in
/// order: `out[k] = f(out[k - 1], a[k])`, starting from `init`.
fn scan_lines<T, A: Copy>(
    a: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    init: A,
    f: impl Fn(A, &T) -> A,
) -> Vec<A> {
    let mut out: Vec<A> = Vec::with_capacity(a.len());
    for o in 0..outer {
        let base = o * len * inner;
        for k in 0..len {
            for j in 0..inner {
                // Pushed in order, so the element `inner` back is this line's previous one.
                let prev = if k == 0 { init } else { out[out.len() - inner] };
                out.push(f(prev, &a[base + k * inner + j]));
            }
        }
    }
    out
}

/// Row-major product in i-k-j order (contiguous inner loop the compiler vectorises), rows
/// of C split across cores: for the integer types (matmul.rs packs f32 and f64).
fn matmul_generic<T: Copy + Send + Sync>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
    zero: T,
    fma: impl Fn(T, T, T) -> T + Sync,
) -> Vec<T> {
    let mut c = vec![zero; m * n];
    if n == 0 {
        return c;
    }
    let row = |(i, crow): (usize, &mut [T])| {
        for p in 0..k {
            let x = a[i * k + p];
            let brow = &b[p * n..(p + 1) * n];
            for (cv, &bv) in crow.iter_mut().zip(brow) {
                *cv = fma(*cv, x, bv);
            }
        }
    };
    if m * n * k >= 1 << 21 {
        c.par_chunks_mut(n).enumerate().for_each(row);
    } else {
        c.chunks_mut(n).enumerate().for_each(row);
    }
    c
}
