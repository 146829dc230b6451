//! torch's element-wise functions of two or three tensors that the primitive ops compose:
//! `addcmul` / `addcdiv` (the optimisers' update step), `fmax` / `fmin` (NaN-ignoring),
//! `hypot`, `copysign`, `heaviside`, `float_power`, and the one-tensor tests and functions
//! `signbit`, `isposinf`, `isneginf`, `sinc`; plus torch's aliases (`clip`, `arccos`,
//! `multiply`, ...), so code written against torch's names reads the same here.

use super::arith::Operand;
use super::dtype::{promote, DType};
use super::Tensor;
use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use std::f64::consts::PI;

/// The dtype a float result of `want` is computed in: float16 and bfloat16 in float32, as
/// torch's kernels compute them (one rounding at the end).
fn opmath(want: DType) -> DType {
    match want {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

impl Tensor {
    /// `self + value * tensor1 * tensor2`, as torch's `addcmul` (the three broadcast and
    /// promote; for integer tensors `value` is cut toward zero, and bool is refused, as in
    /// torch). Float16 and bfloat16 are computed in float32 and rounded once.
    pub fn addcmul(&self, tensor1: &Tensor, tensor2: &Tensor, value: f64) -> Result<Tensor> {
        self.add_scaled("addcmul", tensor1, tensor2, value, false)
    }

    /// `self + value * tensor1 / tensor2`, as torch's `addcdiv` (Adam's step). Integer
    /// `tensor1` and `tensor2` together are refused, as torch no longer divides them here.
    pub fn addcdiv(&self, tensor1: &Tensor, tensor2: &Tensor, value: f64) -> Result<Tensor> {
        self.add_scaled("addcdiv", tensor1, tensor2, value, true)
    }

    fn add_scaled(
        &self,
        op: &'static str,
        t1: &Tensor,
        t2: &Tensor,
        value: f64,
        divide: bool,
    ) -> Result<Tensor> {
        let want = promote(self.dtype(), promote(t1.dtype(), t2.dtype()));
        if divide && !t1.dtype().is_float() && !t2.dtype().is_float() {
            return Err(Error::Invalid(format!(
                "{op}: integer division is not supported (tensor1 is {}, tensor2 is {}, shapes \
                 {:?} and {:?}), as in torch; make one of them a float first, e.g. \
                 .to_dtype(DType::F32)",
                t1.dtype(),
                t2.dtype(),
                t1.shape(),
                t2.shape()
            )));
        }
        if want == DType::Bool {
            return Err(Error::Invalid(format!(
                "{op} does not support bool tensors, as in torch (shapes {:?}, {:?} and {:?})",
                self.shape(),
                t1.shape(),
                t2.shape()
            )));
        }
        // For integer tensors torch converts `value` to the integer type, toward zero.
        let scale = if want.is_float() {
            Operand::Scalar(value)
        } else {
            Operand::Int(value.trunc() as i64)
        };
        let work = opmath(want);
        let cast = |t: &Tensor| t.to_dtype(work);
        let (s, a, b) = (cast(self)?, cast(t1)?, cast(t2)?);
        let term = if divide {
            a.mul(scale)?.div(&b)?
        } else {
            a.mul(scale)?.mul(&b)?
        };
        Ok(autograd::relabel(op, s.add(&term)?.to_dtype(want)?))
    }

    /// The larger of the two, element-wise, ignoring NaN: NaN only where both are NaN
    /// (torch's `fmax`; `maximum` gives NaN where either is). Broadcasts and promotes.
    pub fn fmax(&self, other: &Tensor) -> Result<Tensor> {
        self.nan_ignoring(other, true)
    }

    /// The smaller of the two, ignoring NaN (torch's `fmin`).
    pub fn fmin(&self, other: &Tensor) -> Result<Tensor> {
        self.nan_ignoring(other, false)
    }

    fn nan_ignoring(&self, other: &Tensor, max: bool) -> Result<Tensor> {
        let op = if max { "fmax" } else { "fmin" };
        let out = autograd::no_grad(|| {
            let m = if max {
                self.maximum(other)?
            } else {
                self.minimum(other)?
            };
            let m = other.to_dtype(m.dtype())?.where_(&self.isnan()?, &m)?;
            self.to_dtype(m.dtype())?.where_(&other.isnan()?, &m)
        })?;
        let (xs, ys) = (Saved::new(self), Saved::new(other));
        Ok(record(out, op, &[self, other], move |g| {
            // torch's: self takes the gradient where it won (ties included) or other is NaN,
            // other takes the rest.
            let (x, y) = (xs.get()?, ys.get()?);
            let won = if max { x.ge(y)? } else { x.le(y)? };
            let mine = won.logical_or(&y.isnan()?)?;
            let zero = Tensor::zeros_dtype((), g.dtype(), g.device())?;
            Ok(vec![
                Some(g.where_(&mine, &zero)?),
                Some(zero.where_(&mine, g)?),
            ])
        }))
    }

    /// `sqrt(self^2 + other^2)`, the hypotenuse, element-wise (torch's `hypot`; floats only,
    /// computed one precision up so that large values do not overflow in the squares).
    pub fn hypot(&self, other: &Tensor) -> Result<Tensor> {
        let want = promote(self.dtype(), other.dtype());
        if !want.is_float() {
            return Err(Error::Invalid(format!(
                "hypot needs floating-point tensors, got {} and {} (shapes {:?} and {:?}), as \
                 in torch",
                self.dtype(),
                other.dtype(),
                self.shape(),
                other.shape()
            )));
        }
        let work = match want {
            DType::F64 | DType::F32 => DType::F64,
            _ => DType::F32,
        };
        let out = autograd::no_grad(|| {
            let (a, b) = (self.to_dtype(work)?, other.to_dtype(work)?);
            a.square()?.add(&b.square()?)?.sqrt()?.to_dtype(want)
        })?;
        let (xs, ys, rs) = (Saved::new(self), Saved::new(other), Saved::new(&out));
        Ok(record(out, "hypot", &[self, other], move |g| {
            // torch's: g * self / result and g * other / result.
            let r = rs.get()?;
            let share = |t: &Tensor| g.mul(t)?.div(r);
            Ok(vec![Some(share(xs.get()?)?), Some(share(ys.get()?)?)])
        }))
    }

    /// `self`'s magnitude with `other`'s sign, element-wise, `-0.0` counting as negative
    /// (torch's `copysign`; integers give float32). The gradient flows to `self`, with
    /// torch's rule.
    pub fn copysign(&self, other: &Tensor) -> Result<Tensor> {
        let mut want = promote(self.dtype(), other.dtype());
        if !want.is_float() {
            want = DType::F32;
        }
        let x = self.to_dtype(want)?;
        let out = autograd::no_grad(|| {
            let magnitude = x.abs()?;
            magnitude.neg()?.where_(&other.signbit()?, &magnitude)
        })?;
        let (xs, rs) = (Saved::new(&x), Saved::new(&out));
        Ok(record(out, "copysign", &[&x], move |g| {
            // torch's: g * result / self, 0 where self is 0 (so NaN where self is infinite).
            let (x, r) = (xs.get()?, rs.get()?);
            let ratio = r.div(x)?;
            let zero = Tensor::zeros_dtype((), ratio.dtype(), ratio.device())?;
            Ok(vec![Some(g.mul(&zero.where_(&x.eq(0)?, &ratio)?)?)])
        }))
    }

    /// True where the sign bit is set: negative numbers and `-0.0` (torch's `signbit`).
    pub fn signbit(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::Bool | DType::U8 => self.bools(false),
            d if d.is_float() => autograd::no_grad(|| {
                // -0.0 is the one zero whose reciprocal is negative.
                let neg_zero = self.eq(0)?.logical_and(&self.reciprocal()?.lt(0)?)?;
                self.lt(0)?.logical_or(&neg_zero)
            }),
            _ => self.lt(0),
        }
    }

    /// The step function: 0 below zero, 1 above, and `values` (broadcast) where `self` is 0
    /// (torch's `heaviside`; both of one dtype, and no gradient, as in torch).
    pub fn heaviside(&self, values: &Tensor) -> Result<Tensor> {
        if self.dtype() != values.dtype() {
            return Err(Error::Invalid(format!(
                "heaviside: input and values need one dtype, got {} and {} (shapes {:?} and \
                 {:?}), as in torch",
                self.dtype(),
                values.dtype(),
                self.shape(),
                values.shape()
            )));
        }
        autograd::no_grad(|| {
            let step = self.gt(0)?.to_dtype(self.dtype())?;
            values.where_(&self.eq(0)?, &step)
        })
    }

    /// True where the element is +inf (torch's `isposinf`; never for integers).
    pub fn isposinf(&self) -> Result<Tensor> {
        self.is_inf_of_sign(f64::INFINITY)
    }

    /// True where the element is -inf (torch's `isneginf`).
    pub fn isneginf(&self) -> Result<Tensor> {
        self.is_inf_of_sign(f64::NEG_INFINITY)
    }

    fn is_inf_of_sign(&self, inf: f64) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.bools(false);
        }
        autograd::no_grad(|| self.eq(inf))
    }

    /// The normalised sinc, `sin(pi x) / (pi x)` and 1 at 0 (torch's `sinc`; integers give
    /// float32), with torch's gradient (0 at 0).
    pub fn sinc(&self) -> Result<Tensor> {
        let x = self.float_or_self()?;
        let want = x.dtype();
        let work = match want {
            DType::F64 | DType::F32 => DType::F64,
            _ => DType::F32,
        };
        let out = autograd::no_grad(|| {
            let px = x.to_dtype(work)?.mul(PI)?;
            let ratio = px.sin()?.div(&px)?;
            let one = Tensor::ones_dtype((), work, x.device())?;
            one.where_(&px.eq(0)?, &ratio)?.to_dtype(want)
        })?;
        let xs = Saved::new(&x);
        Ok(record(out, "sinc", &[&x], move |g| {
            // torch's: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where x is 0.
            let x = xs.get()?;
            let px = x.mul(PI)?;
            let d = px.mul(&px.cos()?)?.sub(&px.sin()?)?.div(&px.mul(x)?)?;
            let zero = Tensor::zeros_dtype((), d.dtype(), d.device())?;
            Ok(vec![Some(g.mul(&zero.where_(&x.eq(0)?, &d)?)?)])
        }))
    }

    /// `self ** exponent` in float64, whatever the dtypes (torch's `float_power`: both sides
    /// are converted to float64 first, so the result is always float64).
    pub fn float_power<'a>(&self, exponent: impl Into<Operand<'a>>) -> Result<Tensor> {
        let base = self.to_dtype(DType::F64)?;
        let out = match exponent.into() {
            Operand::Tensor(t) => base.pow(&t.to_dtype(DType::F64)?)?,
            Operand::Scalar(s) => base.pow(s)?,
            Operand::Int(i) => base.pow(i as f64)?,
        };
        Ok(autograd::relabel("float_power", out))
    }
}

/// torch's other names for ops gpulab already has, each the same op.
macro_rules! aliases {
    ($($(#[$doc:meta])* $alias:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $alias(&self) -> Result<Tensor> {
                    self.$op()
                }
            )*
        }
    };
}

macro_rules! binary_aliases {
    ($($(#[$doc:meta])* $alias:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $alias<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
                    self.$op(other)
                }
            )*
        }
    };
}

aliases!(
    /// torch's `arccos`: [`Tensor::acos`].
    arccos => acos,
    /// torch's `arcsin`: [`Tensor::asin`].
    arcsin => asin,
    /// torch's `arctan`: [`Tensor::atan`].
    arctan => atan,
    /// torch's `arccosh`: [`Tensor::acosh`].
    arccosh => acosh,
    /// torch's `arcsinh`: [`Tensor::asinh`].
    arcsinh => asinh,
    /// torch's `arctanh`: [`Tensor::atanh`].
    arctanh => atanh,
    /// torch's `absolute`: [`Tensor::abs`].
    absolute => abs,
    /// torch's `negative`: [`Tensor::neg`].
    negative => neg,
    /// torch's `fix`: [`Tensor::trunc`].
    fix => trunc,
    /// torch's `sgn`, which for real dtypes is [`Tensor::sign`].
    sgn => sign,
);

binary_aliases!(
    /// torch's `multiply`: [`Tensor::mul`].
    multiply => mul,
    /// torch's `subtract`: [`Tensor::sub`].
    subtract => sub,
    /// torch's `divide`: [`Tensor::div`] (true division).
    divide => div,
    /// torch's `true_divide`: [`Tensor::div`].
    true_divide => div,
    /// torch's `greater`: [`Tensor::gt`].
    greater => gt,
    /// torch's `greater_equal`: [`Tensor::ge`].
    greater_equal => ge,
    /// torch's `less`: [`Tensor::lt`].
    less => lt,
    /// torch's `less_equal`: [`Tensor::le`].
    less_equal => le,
    /// torch's `not_equal`: [`Tensor::ne`].
    not_equal => ne,
);

impl Tensor {
    /// torch's `arctan2`: [`Tensor::atan2`].
    pub fn arctan2(&self, other: &Tensor) -> Result<Tensor> {
        self.atan2(other)
    }

    /// torch's `clip`: [`Tensor::clamp`].
    pub fn clip<'a>(
        &self,
        min: impl Into<Operand<'a>>,
        max: impl Into<Operand<'a>>,
    ) -> Result<Tensor> {
        self.clamp(min, max)
    }
}
