//! The element-wise and reduction operations, with the codes the CUDA kernels switch on
//! (kernels-cu/elementwise.cu and reduce.cu) and their CPU definitions.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Add = 0,
    Sub = 1,
    Mul = 2,
    Div = 3,
    Maximum = 4,
    Minimum = 5,
    Pow = 6,
}

impl BinaryOp {
    #[inline(always)]
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Maximum => nan_max(a, b),
            BinaryOp::Minimum => nan_min(a, b),
            BinaryOp::Pow => a.powf(b),
        }
    }
    /// The same operation in f64 (the f64 dtype's CPU kernels).
    #[inline(always)]
    pub fn apply_f64(self, a: f64, b: f64) -> f64 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Maximum => nan_max(a, b),
            BinaryOp::Minimum => nan_min(a, b),
            BinaryOp::Pow => a.powf(b),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "pow",
        }
    }
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
}

impl UnaryOp {
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
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
        }
    }
    #[inline(always)]
    pub fn apply_f64(self, x: f64) -> f64 {
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
        }
    }
    /// Ops defined only for floats: an integer or bool tensor is converted to float32
    /// first, as torch does (`torch.tensor([1, 4]).sqrt()` is float32).
    pub fn needs_float(self) -> bool {
        !matches!(self, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu)
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
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduceOp {
    Sum = 0,
    Max = 1,
    Min = 2,
}

impl ReduceOp {
    pub fn identity(self) -> f32 {
        match self {
            ReduceOp::Sum => 0.0,
            ReduceOp::Max => f32::NEG_INFINITY,
            ReduceOp::Min => f32::INFINITY,
        }
    }
    /// Like the kernel: NaN wins, as in torch.
    #[inline(always)]
    pub fn combine(self, a: f32, b: f32) -> f32 {
        match self {
            ReduceOp::Sum => a + b,
            _ if a.is_nan() || b.is_nan() => f32::NAN,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        }
    }
    #[inline(always)]
    pub fn combine_f64(self, a: f64, b: f64) -> f64 {
        match self {
            ReduceOp::Sum => a + b,
            _ if a.is_nan() || b.is_nan() => f64::NAN,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
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
