//! torch's element-wise functions that guard an edge of the number line: `nan_to_num`,
//! `logaddexp` / `logaddexp2` (no overflow for large inputs), `xlogy` (0 where x is 0) and
//! `logit`, plus `logical_xor`. Built from other ops under `no_grad`, each with torch's own
//! backward rule and node name, so gradients at the guarded edges are torch's too.

use super::{DType, Tensor};
use crate::autograd::{self, record, Saved};
use crate::error::Result;
use std::f64::consts::LN_2;

/// The largest finite value of a float dtype (torch's `finfo(dtype).max`).
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::MAX,
        DType::F16 => half::f16::MAX.to_f64(),
        DType::BF16 => half::bf16::MAX.to_f64(),
        _ => f32::MAX as f64,
    }
}

/// Which logarithm [`x_times_log`] takes: `ln y` (torch's `xlogy`) or `ln(1 + y)`
/// (`special.xlog1py`).
#[derive(Clone, Copy)]
pub(crate) enum XLog {
    Log,
    Log1p,
}

impl XLog {
    fn name(self) -> &'static str {
        match self {
            XLog::Log => "xlogy",
            XLog::Log1p => "xlog1py",
        }
    }

    fn apply(self, y: &Tensor) -> Result<Tensor> {
        match self {
            XLog::Log => y.log(),
            XLog::Log1p => y.log1p(),
        }
    }

    /// The shift s in `ln(y + s)`: where `y + s <= 0` the logarithm is undefined.
    fn shift(self) -> f64 {
        match self {
            XLog::Log => 0.0,
            XLog::Log1p => 1.0,
        }
    }
}

/// `x * log(y + s)` for [`XLog`]'s two logarithms, 0 where x is 0 (unless y is NaN), as
/// torch's `xlogy` and `special.xlog1py`. Integers give float32; broadcasts. torch's
/// backward for both: x gets the same function of (g, y), 0 where x is 0 and `y + s <= 0`;
/// y gets `g x / (y + s)`.
pub(crate) fn x_times_log(x: &Tensor, y: &Tensor, log: XLog) -> Result<Tensor> {
    let (x, y) = (x.float_or_self()?, y.float_or_self()?);
    let out = autograd::no_grad(|| {
        let prod = x.mul(&log.apply(&y)?)?;
        let zero = x.eq(0)?.logical_and(&y.isnan()?.logical_not()?)?;
        Tensor::zeros_dtype((), prod.dtype(), prod.device())?.where_(&zero, &prod)
    })?;
    let (xs, ys) = (Saved::new(&x), Saved::new(&y));
    // An integer operand was converted above; the node takes the converted tensors, whose
    // gradients flow back through the conversion (none for integers).
    Ok(record(out, log.name(), &[&x, &y], move |g| {
        let (x, y) = (xs.get()?, ys.get()?);
        let s = log.shift();
        let gx = x_times_log(g, y, log)?;
        let undefined = x.eq(0)?.logical_and(&y.le(-s)?)?;
        let gx = Tensor::zeros_dtype((), gx.dtype(), gx.device())?.where_(&undefined, &gx)?;
        let gy = match log {
            XLog::Log => g.mul(x)?.div(y)?,
            XLog::Log1p => g.mul(x)?.div(&y.add(s)?)?,
        };
        Ok(vec![Some(gx), Some(gy)])
    }))
}

impl Tensor {
    /// NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (None: the dtype's largest
    /// and smallest finite values), as torch's `nan_to_num`. Integer and bool tensors come back
    /// unchanged. The gradient passes where the element was finite, 0 where it was replaced.
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        let dt = self.dtype();
        if !dt.is_float() {
            return self.deep_clone();
        }
        let max = finite_max(dt);
        let (pos, neg) = (posinf.unwrap_or(max), neginf.unwrap_or(-max));
        let out = autograd::no_grad(|| {
            let fill = |v: f64| Tensor::full_dtype((), v, dt, self.device());
            let x = fill(nan)?.where_(&self.isnan()?, self)?;
            let x = fill(pos)?.where_(&self.eq(f64::INFINITY)?, &x)?;
            fill(neg)?.where_(&self.eq(f64::NEG_INFINITY)?, &x)
        })?;
        let finite = self.isfinite()?;
        Ok(record(out, "nan_to_num", &[self], move |g| {
            Ok(vec![Some(g.mul(&finite.to_dtype(g.dtype())?)?)])
        }))
    }

    /// `true` where exactly one of the two is non-zero (torch's `logical_xor`); broadcasts.
    pub fn logical_xor(&self, other: &Tensor) -> Result<Tensor> {
        self.ne(0)?.ne(&other.ne(0)?)
    }

    /// `log(exp(self) + exp(other))` without overflow for large inputs (torch's `logaddexp`):
    /// `max + log1p(exp(-|self - other|))`, and the common infinity where both are the same
    /// infinity. Floats only, as torch; the two broadcast and promote.
    pub fn logaddexp(&self, other: &Tensor) -> Result<Tensor> {
        self.log_add_exp(other, false)
    }

    /// `log2(2^self + 2^other)`, as [`Tensor::logaddexp`] in base 2 (torch's `logaddexp2`).
    pub fn logaddexp2(&self, other: &Tensor) -> Result<Tensor> {
        self.log_add_exp(other, true)
    }

    fn log_add_exp(&self, other: &Tensor, base2: bool) -> Result<Tensor> {
        let op = if base2 { "logaddexp2" } else { "logaddexp" };
        self.float_only(op)?;
        other.float_only(op)?;
        let out = autograd::no_grad(|| {
            let m = self.maximum(other)?;
            let d = self.sub(other)?.abs()?.neg()?;
            let tail = if base2 {
                d.exp2()?.log1p()?.div(LN_2)?
            } else {
                d.exp()?.log1p()?
            };
            let same_inf = self.isinf()?.logical_and(&self.eq(other)?)?;
            m.where_(&same_inf, &m.add(&tail)?)
        })?;
        let (xs, ys) = (Saved::new(self), Saved::new(other));
        Ok(record(out, op, &[self, other], move |g| {
            // d/dx = 1 / (1 + e^(y - x)), and its mirror for y; 2^ in base 2 (torch's).
            let (x, y) = (xs.get()?, ys.get()?);
            let share = |a: &Tensor, b: &Tensor| -> Result<Tensor> {
                let e = b.sub(a)?;
                let e = if base2 { e.exp2()? } else { e.exp()? };
                g.div(&e.add(1.0)?)
            };
            Ok(vec![Some(share(x, y)?), Some(share(y, x)?)])
        }))
    }

    /// `log(cumsum(exp(self)))` along `dim` without overflow or underflow (torch's
    /// `logcumsumexp`): a running `logaddexp`, evaluated as a Hillis-Steele scan (log2 n
    /// whole-tensor steps, each combining every element with the one 2^k before it), so no
    /// element is lost to `exp` whatever the range. Floats only, as torch; float16 and
    /// bfloat16 run in float32. The gradient flows through the steps' logaddexp rules.
    pub fn logcumsumexp(&self, dim: isize) -> Result<Tensor> {
        self.float_only("logcumsumexp")?;
        if matches!(self.dtype(), DType::F16 | DType::BF16) {
            let y = self.to_dtype(DType::F32)?.logcumsumexp(dim)?;
            return y.to_dtype(self.dtype());
        }
        let x = if self.rank() == 0 {
            self.reshape([1])?
        } else {
            self.clone()
        };
        let d = super::shape::resolve_dim(dim, x.rank())?;
        let n = x.shape()[d];
        let mut acc = x;
        let mut step = 1;
        while step < n {
            let mut pad_shape = acc.shape().to_vec();
            pad_shape[d] = step;
            let pad = Tensor::full_dtype(pad_shape, f64::NEG_INFINITY, acc.dtype(), acc.device())?;
            let before = Tensor::cat(&[&pad, &acc.narrow(d as isize, 0, n - step)?], d as isize)?;
            acc = acc.logaddexp(&before)?;
            step *= 2;
        }
        let acc = acc.reshape(self.shape().to_vec())?;
        Ok(autograd::relabel("logcumsumexp", acc))
    }

    /// `self * log(other)`, 0 where `self` is 0 (unless `other` is NaN), as torch's `xlogy`:
    /// the entropy term `p log p` without NaN at p = 0. Broadcasts; integers give float32.
    pub fn xlogy(&self, other: &Tensor) -> Result<Tensor> {
        x_times_log(self, other, XLog::Log)
    }

    /// The log-odds `log(p / (1 - p))`, the inverse of `sigmoid` (torch's `logit`); with
    /// `eps`, `p` is first clamped to `[eps, 1 - eps]` and the gradient is 0 outside it.
    /// Integers give float32.
    pub fn logit(&self, eps: Option<f64>) -> Result<Tensor> {
        let x = self.float_or_self()?;
        let out = autograd::no_grad(|| {
            let z = match eps {
                Some(e) => x.clamp(e, 1.0 - e)?,
                None => x.clone(),
            };
            z.div(&z.neg()?.add(1.0)?)?.log()
        })?;
        let xs = Saved::new(&x);
        Ok(record(out, "logit", &[&x], move |g| {
            // torch's: g / (x (1 - x)), 0 outside [eps, 1 - eps] (NaN for x outside it).
            let x = xs.get()?;
            let gx = g.div(&x.mul(&x.neg()?.add(1.0)?)?)?;
            let gx = match eps {
                Some(e) => {
                    let outside = x.lt(e)?.logical_or(&x.gt(1.0 - e)?)?;
                    Tensor::zeros_dtype((), gx.dtype(), gx.device())?.where_(&outside, &gx)?
                }
                None => gx,
            };
            Ok(vec![Some(gx)])
        }))
    }
}
