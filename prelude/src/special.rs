//! torch's `torch.special` namespace under its names: `special::gammaln(&x)` is
//! `torch.special.gammaln(x)`. Most are the tensor methods by another name (`psi` is
//! `digamma`, `expit` is `sigmoid`); `xlog1py`, `entr` and `ndtr` exist only here, as in
//! torch, each with torch's backward rule and node name.

use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::{Operand, Tensor};
use std::f64::consts::FRAC_1_SQRT_2;

/// `ln |Γ(x)|`; see [`Tensor::lgamma`].
pub fn gammaln(x: &Tensor) -> Result<Tensor> {
    x.lgamma()
}

/// ψ(x); see [`Tensor::digamma`].
pub fn digamma(x: &Tensor) -> Result<Tensor> {
    x.digamma()
}

/// ψ(x) under its other name; see [`Tensor::digamma`].
pub fn psi(x: &Tensor) -> Result<Tensor> {
    x.digamma()
}

/// ψ⁽ⁿ⁾(x), in torch's argument order; see [`Tensor::polygamma`].
pub fn polygamma(n: u32, x: &Tensor) -> Result<Tensor> {
    x.polygamma(n)
}

/// The multivariate log-gamma function of dimension `p`; see [`Tensor::mvlgamma`].
pub fn multigammaln(x: &Tensor, p: usize) -> Result<Tensor> {
    x.mvlgamma(p)
}

/// Hurwitz's ζ(x, q), either of them a number (not both), as torch's `special.zeta`;
/// see [`Tensor::zeta`]. Only q has a gradient.
pub fn zeta<'a, 'b>(x: impl Into<Operand<'a>>, q: impl Into<Operand<'b>>) -> Result<Tensor> {
    let number = |o: Operand| match o {
        Operand::Scalar(s) => Some(s),
        Operand::Int(i) => Some(i as f64),
        Operand::Tensor(_) => None,
    };
    match (x.into(), q.into()) {
        (Operand::Tensor(x), q) => x.zeta(q),
        (x, Operand::Tensor(q)) => q.zeta_scalar_first(number(x).expect("a number")),
        _ => Err(Error::Invalid(
            "special.zeta: at least one of x and q must be a tensor, got two numbers".into(),
        )),
    }
}

/// erf(x); see [`Tensor::erf`].
pub fn erf(x: &Tensor) -> Result<Tensor> {
    x.erf()
}

/// 1 - erf(x); see [`Tensor::erfc`].
pub fn erfc(x: &Tensor) -> Result<Tensor> {
    x.erfc()
}

/// erf's inverse; see [`Tensor::erfinv`].
pub fn erfinv(x: &Tensor) -> Result<Tensor> {
    x.erfinv()
}

/// The logistic function `1 / (1 + e^-x)`; see [`Tensor::sigmoid`].
pub fn expit(x: &Tensor) -> Result<Tensor> {
    x.sigmoid()
}

/// The log-odds, sigmoid's inverse; see [`Tensor::logit`].
pub fn logit(x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    x.logit(eps)
}

/// `x ln y`, 0 where x is 0; see [`Tensor::xlogy`].
pub fn xlogy(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.xlogy(y)
}

/// `2^x`; see [`Tensor::exp2`].
pub fn exp2(x: &Tensor) -> Result<Tensor> {
    x.exp2()
}

/// `e^x - 1`, exact near 0; see [`Tensor::expm1`].
pub fn expm1(x: &Tensor) -> Result<Tensor> {
    x.expm1()
}

/// `ln(1 + x)`, exact near 0; see [`Tensor::log1p`].
pub fn log1p(x: &Tensor) -> Result<Tensor> {
    x.log1p()
}

/// `sin(πx) / (πx)`, 1 at 0; see [`Tensor::sinc`].
pub fn sinc(x: &Tensor) -> Result<Tensor> {
    x.sinc()
}

/// Softmax along `dim`; see [`Tensor::softmax`].
pub fn softmax(x: &Tensor, dim: isize) -> Result<Tensor> {
    x.softmax(dim)
}

/// Log-softmax along `dim`; see [`Tensor::log_softmax`].
pub fn log_softmax(x: &Tensor, dim: isize) -> Result<Tensor> {
    x.log_softmax(dim)
}

/// `ln Σ e^x` along `dim`; see [`Tensor::logsumexp`].
pub fn logsumexp(x: &Tensor, dim: isize, keepdim: bool) -> Result<Tensor> {
    x.logsumexp(dim, keepdim)
}

/// `x ln(1 + y)`, 0 where x is 0 (unless y is NaN), as torch's `special.xlog1py`: xlogy's
/// twin for log-likelihoods written in `1 + y`. Broadcasts; integers give float32.
pub fn xlog1py(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    crate::tensor::x_times_log(x, y, crate::tensor::XLog::Log1p)
}

/// The entropy term `-x ln x` for x > 0, 0 at 0 and -inf below (torch's `special.entr`);
/// its gradient is `-(1 + ln x)`.
pub fn entr(x: &Tensor) -> Result<Tensor> {
    let x = x.float_or_self()?;
    let out = autograd::no_grad(|| {
        let (dt, dev) = (x.dtype(), x.device());
        let pos = x.mul(&x.log()?)?.neg()?;
        let zero = Tensor::zeros_dtype((), dt, dev)?;
        let neg_inf = Tensor::full_dtype((), f64::NEG_INFINITY, dt, dev)?;
        // NaN stays NaN: x > 0 and x == 0 are both false there, and so is x < 0.
        let y = neg_inf.where_(&x.lt(0)?, &x)?;
        let y = zero.where_(&x.eq(0)?, &y)?;
        pos.where_(&x.gt(0)?, &y)
    })?;
    let xs = Saved::new(&x);
    Ok(record(out, "entr", &[&x], move |g| {
        Ok(vec![Some(g.mul(&xs.get()?.log()?.add(1.0)?.neg()?)?)])
    }))
}

/// The standard normal distribution function `Φ(x) = (1 + erf(x / √2)) / 2` (torch's
/// `special.ndtr`), through erfc in the tails as torch computes it, so that `Φ(-10)` keeps
/// its digits instead of cancelling to 0.
pub fn ndtr(x: &Tensor) -> Result<Tensor> {
    let x = x.float_or_self()?;
    let out = autograd::no_grad(|| {
        let z = x.mul(FRAC_1_SQRT_2)?;
        let az = z.abs()?;
        let centre = z.erf()?.mul(0.5)?.add(0.5)?;
        let tail = az.erfc()?.mul(0.5)?;
        let tail = tail.neg()?.add(1.0)?.where_(&x.gt(0)?, &tail)?;
        centre.where_(&az.lt(FRAC_1_SQRT_2)?, &tail)
    })?;
    let xs = Saved::new(&x);
    Ok(record(out, "ndtr", &[&x], move |g| {
        // torch's: e^(-x²/2) / √(2π).
        let x = xs.get()?;
        let density = x
            .mul(x)?
            .mul(-0.5)?
            .exp()?
            .mul(0.5 * FRAC_1_SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI)?;
        Ok(vec![Some(g.mul(&density)?)])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    fn t(v: Vec<f64>) -> Tensor {
        let n = v.len();
        Tensor::from_vec(v, [n], Device::Cpu).unwrap()
    }

    #[test]
    fn ndtr_keeps_its_digits_in_the_lower_tail() {
        let y = ndtr(&t(vec![-10.0, 0.0, 1.0, 10.0]))
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        // Φ(-10) = erfc(10/√2)/2 ≈ 7.62e-24, which 1 + erf would round to 0.
        assert!(
            (y[0] / 7.619_853_024_160_527e-24 - 1.0).abs() < 1e-12,
            "{y:?}"
        );
        assert_eq!(y[1], 0.5);
        assert!((y[2] - 0.841_344_746_068_542_9).abs() < 1e-15, "{y:?}");
        assert_eq!(y[3], 1.0);
    }

    #[test]
    fn entr_and_xlog1py_guard_zero() {
        let y = entr(&t(vec![0.0, 0.5, -1.0, f64::NAN]))
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(y[0], 0.0);
        assert!((y[1] - 0.5 * 2f64.ln()).abs() < 1e-16);
        assert_eq!(y[2], f64::NEG_INFINITY);
        assert!(y[3].is_nan());
        let y = xlog1py(&t(vec![0.0, 0.0, 2.0]), &t(vec![-1.0, f64::NAN, 1.0])).unwrap();
        let y = y.to_vec::<f64>().unwrap();
        assert_eq!(y[0], 0.0);
        assert!(y[1].is_nan());
        assert!((y[2] - 2.0 * 2f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn zeta_takes_a_number_on_either_side() {
        let q = t(vec![1.0, 2.0]);
        let a = zeta(2.0, &q).unwrap().to_vec::<f64>().unwrap();
        let b = t(vec![2.0, 2.0]).zeta(&q).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(a, b);
        let e = zeta(2.0, 1.0).unwrap_err().to_string();
        assert!(e.contains("two numbers"), "{e}");
        assert_eq!(
            zeta(2.0, &q.requires_grad_(true).unwrap())
                .unwrap()
                .grad_fn(),
            Some("SpecialZetaBackward1")
        );
    }
}
