//! The element-wise and reduction operations, with the codes the CUDA kernels switch on
//! (kernels-cu/elementwise.cu and reduce.cu) and their CPU definitions.

use super::gamma_math;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Add = 0,
    Sub = 1,
    Mul = 2,
    Div = 3,
    Maximum = 4,
    Minimum = 5,
    Pow = 6,
    Atan2 = 7,
    Fmod = 8,
    Remainder = 9,
    FloorDivide = 10,
    Zeta = 11,
}

/// One body for each float type's CPU kernel (`apply` in f32, `apply_f64` in f64), so the two
/// cannot drift apart.
macro_rules! binary_apply {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        pub fn $name(self, a: $t, b: $t) -> $t {
            match self {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
                BinaryOp::Maximum => nan_max(a, b),
                BinaryOp::Minimum => nan_min(a, b),
                BinaryOp::Pow => a.powf(b),
                BinaryOp::Atan2 => a.atan2(b),
                // Rust's `%` on floats is C's fmod: the sign of the dividend.
                BinaryOp::Fmod => a % b,
                BinaryOp::Remainder => float_remainder(a, b),
                BinaryOp::FloorDivide => float_floor_divide(a, b),
                BinaryOp::Zeta => Special::zeta(a, b),
            }
        }
    };
}

impl BinaryOp {
    /// Every op, in code order (`ALL[op as usize] == op`), for the CUDA side's checks.
    pub const ALL: [BinaryOp; 12] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Pow,
        BinaryOp::Atan2,
        BinaryOp::Fmod,
        BinaryOp::Remainder,
        BinaryOp::FloorDivide,
        BinaryOp::Zeta,
    ];
    binary_apply!(apply, f32);
    binary_apply!(apply_f64, f64);
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "pow",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::Fmod => "fmod",
            BinaryOp::Remainder => "remainder",
            BinaryOp::FloorDivide => "floor_divide",
            BinaryOp::Zeta => "zeta",
        }
    }
    /// Ops torch computes in float whatever the operands (`/`, `atan2`, `zeta`): integer or
    /// bool operands give float32.
    pub fn true_float(self) -> bool {
        matches!(self, BinaryOp::Div | BinaryOp::Atan2 | BinaryOp::Zeta)
    }
    /// Ops the kernels define for floats only (the tensor layer promotes integers first).
    pub fn float_only(self) -> bool {
        matches!(self, BinaryOp::Atan2 | BinaryOp::Zeta)
    }
    /// Whether the kernels define this op for `dtype`: float-only ops refuse integers and
    /// bools, and zeta refuses the half types too (torch's CPU and CUDA kernels have none).
    pub fn defined_for(self, dtype: super::DType) -> bool {
        use super::DType;
        match self {
            BinaryOp::Zeta => matches!(dtype, DType::F32 | DType::F64),
            _ if self.float_only() => dtype.is_float(),
            _ => true,
        }
    }
    /// Integer ops that divide, and so fail on a zero divisor, as torch's ZeroDivisionError.
    pub fn int_divides(self) -> bool {
        matches!(
            self,
            BinaryOp::Fmod | BinaryOp::Remainder | BinaryOp::FloorDivide
        )
    }
}

/// Python's `%` (torch's `remainder`): the sign of the divisor. From `fmod`, as torch's kernel
/// does, so the two agree on every input (`-1e-20 % 3` is 3 after rounding, as in torch).
#[inline(always)]
fn float_remainder<T: num_float::Float>(a: T, b: T) -> T {
    let zero = T::zero();
    let m = a % b;
    if m != zero && ((b < zero) != (m < zero)) {
        m + b
    } else {
        m
    }
}

/// torch's `div_floor_floating`: `floor(a / b)` computed from `fmod` so that it is exact where
/// `(a / b).floor()` would round across an integer, and IEEE's `a / b` for `b == 0`.
#[inline(always)]
fn float_floor_divide<T: num_float::Float>(a: T, b: T) -> T {
    let zero = T::zero();
    if b == zero {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != zero && ((b < zero) != (m < zero)) {
        div = div - T::one();
    }
    if div != zero {
        let mut f = div.floor();
        if div - f > T::half() {
            f = f + T::one();
        }
        f
    } else {
        zero.copysign(a / b)
    }
}

/// The float operations `float_floor_divide` needs, for f32 and f64.
mod num_float {
    pub trait Float:
        Copy
        + PartialOrd
        + std::ops::Rem<Output = Self>
        + std::ops::Sub<Output = Self>
        + std::ops::Add<Output = Self>
        + std::ops::Div<Output = Self>
    {
        fn zero() -> Self;
        fn one() -> Self;
        fn half() -> Self;
        fn floor(self) -> Self;
        fn copysign(self, sign: Self) -> Self;
    }
    macro_rules! float {
        ($t:ty) => {
            impl Float for $t {
                fn zero() -> Self {
                    0.0
                }
                fn one() -> Self {
                    1.0
                }
                fn half() -> Self {
                    0.5
                }
                fn floor(self) -> Self {
                    <$t>::floor(self)
                }
                fn copysign(self, sign: Self) -> Self {
                    <$t>::copysign(self, sign)
                }
            }
        };
    }
    float!(f32);
    float!(f64);
}

/// torch's `maximum`: a NaN on either side is the result (`f32::max` would drop it).
#[inline(always)]
pub(crate) fn nan_max<T: PartialOrd + Copy>(a: T, b: T) -> T {
    // `a != a` is NaN's test for any float type; when `b` is NaN, `a > b` is false and b wins.
    #[allow(clippy::eq_op)]
    let a_nan = a != a;
    if a > b || a_nan {
        a
    } else {
        b
    }
}

/// torch's `minimum`, NaN-propagating as [`nan_max`].
#[inline(always)]
pub(crate) fn nan_min<T: PartialOrd + Copy>(a: T, b: T) -> T {
    #[allow(clippy::eq_op)]
    let a_nan = a != a;
    if a < b || a_nan {
        a
    } else {
        b
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    Neg = 0,
    Abs = 1,
    Exp = 2,
    Sqrt = 3,
    Relu = 4,
    Log = 5,
    Tanh = 6,
    Sigmoid = 7,
    Sin = 8,
    Cos = 9,
    Floor = 10,
    Ceil = 11,
    Round = 12,
    Sign = 13,
    Log1p = 14,
    Expm1 = 15,
    Erf = 16,
    Tan = 17,
    Asin = 18,
    Acos = 19,
    Atan = 20,
    Sinh = 21,
    Cosh = 22,
    Asinh = 23,
    Acosh = 24,
    Atanh = 25,
    Lgamma = 26,
    Digamma = 27,
    /// ψ', torch's `polygamma(1, x)` (digamma's derivative).
    Trigamma = 28,
    Erfc = 29,
    Erfinv = 30,
}

/// torch's `sign`, `(0 < x) - (x < 0)`: -1, 0 or 1, and 0 for -0.0 and NaN.
#[inline(always)]
fn sign<T: PartialOrd + Copy + From<i8>>(x: T) -> T {
    let zero = T::from(0);
    T::from((zero < x) as i8 - (x < zero) as i8)
}

/// The special functions std lacks: libm's `erf`, `erfc` and `lgamma` in each precision, and
/// gamma_math's series, which f32 evaluates in f64 (as torch's CPU kernels accumulate them)
/// except trigamma, which torch evaluates in float32 for float32.
trait Special: Sized {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    fn lgamma(self) -> Self;
    fn via_f64(self, f: fn(f64) -> f64) -> Self;
    fn zeta(self, q: Self) -> Self;
    fn trigamma(self) -> Self;
}
impl Special for f32 {
    fn erf(self) -> f32 {
        libm::erff(self)
    }
    fn erfc(self) -> f32 {
        libm::erfcf(self)
    }
    fn lgamma(self) -> f32 {
        libm::lgammaf(self)
    }
    fn via_f64(self, f: fn(f64) -> f64) -> f32 {
        f(self as f64) as f32
    }
    fn zeta(self, q: f32) -> f32 {
        gamma_math::zeta(self as f64, q as f64) as f32
    }
    fn trigamma(self) -> f32 {
        gamma_math::trigamma_f32(self)
    }
}
impl Special for f64 {
    fn erf(self) -> f64 {
        libm::erf(self)
    }
    fn erfc(self) -> f64 {
        libm::erfc(self)
    }
    fn lgamma(self) -> f64 {
        libm::lgamma(self)
    }
    fn via_f64(self, f: fn(f64) -> f64) -> f64 {
        f(self)
    }
    fn zeta(self, q: f64) -> f64 {
        gamma_math::zeta(self, q)
    }
    fn trigamma(self) -> f64 {
        gamma_math::trigamma(self)
    }
}

/// As `binary_apply!`: the f32 and f64 CPU kernels from one body.
macro_rules! unary_apply {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        pub fn $name(self, x: $t) -> $t {
            match self {
                UnaryOp::Neg => -x,
                UnaryOp::Abs => x.abs(),
                UnaryOp::Exp => x.exp(),
                UnaryOp::Sqrt => x.sqrt(),
                // `x < 0` rather than `x > 0`: a NaN passes through, as in torch.
                UnaryOp::Relu => {
                    if x < 0.0 {
                        0.0
                    } else {
                        x
                    }
                }
                UnaryOp::Log => x.ln(),
                UnaryOp::Tanh => x.tanh(),
                UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
                UnaryOp::Sin => x.sin(),
                UnaryOp::Cos => x.cos(),
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                // torch rounds halves to even (`round(2.5)` is 2), not away from zero.
                UnaryOp::Round => x.round_ties_even(),
                UnaryOp::Sign => sign(x),
                UnaryOp::Log1p => x.ln_1p(),
                UnaryOp::Expm1 => x.exp_m1(),
                UnaryOp::Erf => Special::erf(x),
                UnaryOp::Tan => x.tan(),
                UnaryOp::Asin => x.asin(),
                UnaryOp::Acos => x.acos(),
                UnaryOp::Atan => x.atan(),
                UnaryOp::Sinh => x.sinh(),
                UnaryOp::Cosh => x.cosh(),
                UnaryOp::Asinh => x.asinh(),
                UnaryOp::Acosh => x.acosh(),
                UnaryOp::Atanh => x.atanh(),
                UnaryOp::Lgamma => Special::lgamma(x),
                UnaryOp::Digamma => x.via_f64(gamma_math::digamma),
                UnaryOp::Trigamma => Special::trigamma(x),
                UnaryOp::Erfc => Special::erfc(x),
                UnaryOp::Erfinv => x.via_f64(gamma_math::erfinv),
            }
        }
    };
}

impl UnaryOp {
    /// Every op, in code order (`ALL[op as usize] == op`), for the CUDA side's checks.
    pub const ALL: [UnaryOp; 31] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Sqrt,
        UnaryOp::Relu,
        UnaryOp::Log,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Erf,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Lgamma,
        UnaryOp::Digamma,
        UnaryOp::Trigamma,
        UnaryOp::Erfc,
        UnaryOp::Erfinv,
    ];
    unary_apply!(apply, f32);
    unary_apply!(apply_f64, f64);
    /// The same on an integer (the integer dtypes' CPU kernels; wrapping as torch's).
    pub fn apply_int(self, x: i64) -> i64 {
        match self {
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Abs => x.wrapping_abs(),
            UnaryOp::Relu => x.max(0),
            UnaryOp::Sign => x.signum(),
            // floor, ceil and round of an integer are the integer.
            _ => x,
        }
    }
    /// Ops defined only for floats: an integer or bool tensor is converted to float32
    /// first, as torch does (`torch.tensor([1, 4]).sqrt()` is float32).
    pub fn needs_float(self) -> bool {
        !self.int_ok()
    }
    /// Ops torch runs on integer tensors, keeping their dtype.
    pub fn int_ok(self) -> bool {
        matches!(
            self,
            UnaryOp::Neg
                | UnaryOp::Abs
                | UnaryOp::Relu
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Round
                | UnaryOp::Sign
        )
    }
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Relu => "relu",
            UnaryOp::Log => "log",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Sign => "sign",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Erf => "erf",
            UnaryOp::Tan => "tan",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Asinh => "asinh",
            UnaryOp::Acosh => "acosh",
            UnaryOp::Atanh => "atanh",
            UnaryOp::Lgamma => "lgamma",
            UnaryOp::Digamma => "digamma",
            UnaryOp::Trigamma => "polygamma",
            UnaryOp::Erfc => "erfc",
            UnaryOp::Erfinv => "erfinv",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduceOp {
    Sum = 0,
    Max = 1,
    Min = 2,
    Prod = 3,
}

impl ReduceOp {
    pub fn identity(self) -> f32 {
        match self {
            ReduceOp::Sum => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max => f32::NEG_INFINITY,
            ReduceOp::Min => f32::INFINITY,
        }
    }
    /// Like the kernel: NaN wins, as in torch.
    #[inline(always)]
    pub fn combine(self, a: f32, b: f32) -> f32 {
        match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            _ if a.is_nan() || b.is_nan() => f32::NAN,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        }
    }
    #[inline(always)]
    pub fn combine_f64(self, a: f64, b: f64) -> f64 {
        match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            _ if a.is_nan() || b.is_nan() => f64::NAN,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        }
    }
    /// Sums and products of integers and bools are int64 (torch's rule); max and min keep
    /// the dtype.
    pub fn widens_ints(self) -> bool {
        matches!(self, ReduceOp::Sum | ReduceOp::Prod)
    }
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
        }
    }
}

/// Element-wise comparisons; their results are bool tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq = 0,
    Ne = 1,
    Lt = 2,
    Le = 3,
    Gt = 4,
    Ge = 5,
}

impl CmpOp {
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}
