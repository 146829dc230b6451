//! torch's in-place forms of the element-wise ops (`exp_`, `clamp_`, `masked_fill_`, ...):
//! the op's result written back into this tensor (through a view, into its base), under
//! torch's rules: the result must keep this tensor's shape and be castable to its dtype
//! (`exp_` of an int64 tensor is an error, as in torch), and autograd's in-place rules hold
//! (see `copy_`).

use super::arith::Operand;
use super::Tensor;
use crate::error::Result;

macro_rules! unary_inplace {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                #[doc = concat!("[`Tensor::", stringify!($op), "`] written into this tensor (torch's `", stringify!($name), "`).")]
                pub fn $name(&self) -> Result<()> {
                    self.inplace(stringify!($name), self.$op())
                }
            )*
        }
    };
}

unary_inplace!(
    abs_ => abs, neg_ => neg, exp_ => exp, log_ => log, sqrt_ => sqrt, relu_ => relu,
    sigmoid_ => sigmoid, tanh_ => tanh, sin_ => sin, cos_ => cos, floor_ => floor,
    ceil_ => ceil, round_ => round, sign_ => sign, log1p_ => log1p, expm1_ => expm1,
    erf_ => erf, square_ => square, reciprocal_ => reciprocal, rsqrt_ => rsqrt,
    trunc_ => trunc, frac_ => frac, log2_ => log2, log10_ => log10, exp2_ => exp2,
    tan_ => tan, asin_ => asin, acos_ => acos, atan_ => atan, sinh_ => sinh, cosh_ => cosh,
    asinh_ => asinh, acosh_ => acosh, atanh_ => atanh, deg2rad_ => deg2rad,
    rad2deg_ => rad2deg, lgamma_ => lgamma, digamma_ => digamma, erfc_ => erfc,
    erfinv_ => erfinv,
);

impl Tensor {
    /// [`Tensor::polygamma`] written into this tensor (torch's `polygamma_`).
    pub fn polygamma_(&self, n: u32) -> Result<()> {
        self.inplace("polygamma_", self.polygamma(n))
    }

    /// [`Tensor::mvlgamma`] written into this tensor (torch's `mvlgamma_`).
    pub fn mvlgamma_(&self, p: usize) -> Result<()> {
        self.inplace("mvlgamma_", self.mvlgamma(p))
    }

    /// [`Tensor::clamp`] written into this tensor (torch's `clamp_`).
    pub fn clamp_<'a>(
        &self,
        min: impl Into<Operand<'a>>,
        max: impl Into<Operand<'a>>,
    ) -> Result<()> {
        self.inplace("clamp_", self.clamp(min, max))
    }
    /// [`Tensor::clamp_min`] written into this tensor (torch's `clamp_min_`).
    pub fn clamp_min_<'a>(&self, min: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("clamp_min_", self.clamp_min(min))
    }
    /// [`Tensor::clamp_max`] written into this tensor (torch's `clamp_max_`).
    pub fn clamp_max_<'a>(&self, max: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("clamp_max_", self.clamp_max(max))
    }
    /// [`Tensor::pow`] written into this tensor (torch's `pow_`).
    pub fn pow_<'a>(&self, exponent: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("pow_", self.pow(exponent))
    }
    /// [`Tensor::masked_fill`] written into this tensor (torch's `masked_fill_`).
    pub fn masked_fill_(&self, mask: &Tensor, value: impl Into<super::Number>) -> Result<()> {
        self.inplace("masked_fill_", self.masked_fill(mask, value))
    }
    /// [`Tensor::lerp`] written into this tensor (torch's `lerp_`).
    pub fn lerp_(&self, end: &Tensor, weight: f64) -> Result<()> {
        self.inplace("lerp_", self.lerp(end, weight))
    }
}
