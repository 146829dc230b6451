//! torch's gamma family and the complementary and inverse error functions, element-wise:
//! `lgamma`, `digamma`, `polygamma`, `mvlgamma`, Hurwitz's `zeta`, `erfc`, `erfinv`. An
//! integer or bool tensor gives float32, as in torch, and each has torch's gradient (the
//! derivative of each gamma function is the next one along; zeta has one in q only).
//!
//! The scalar series are gamma_math's; this file only chooses the op and composes the
//! higher orders (`polygamma(n >= 2)` from zeta, `mvlgamma` from lgamma) as torch does.

use super::arith::Operand;
use super::autocast::{autocast1, AmpOp};
use super::op::{BinaryOp, UnaryOp};
use super::Tensor;
use crate::autograd;
use crate::error::{Error, Result};

impl Tensor {
    /// `ln |Γ(x)|` (torch's `lgamma`, `special.gammaln`): +inf at 0 and the negative
    /// integers.
    pub fn lgamma(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Lgamma)
    }

    /// ψ(x) = Γ'(x) / Γ(x) (torch's `digamma`, `special.psi`): -inf at +0, NaN at the
    /// negative integers.
    pub fn digamma(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Digamma)
    }

    /// ψ⁽ⁿ⁾(x), the n-th derivative of digamma (torch's `polygamma(n, x)`, written
    /// `x.polygamma(n)` here as torch's method is): n = 0 is digamma, and n >= 2 is
    /// `(-1)^(n+1) n! zeta(n + 1, x)`, as torch computes it.
    pub fn polygamma(&self, n: u32) -> Result<Tensor> {
        match n {
            0 => self.digamma(),
            1 => self.unary(UnaryOp::Trigamma),
            _ => {
                // zeta has no half-precision kernel (torch's neither): float32 inside.
                let x = self.float_or_self()?;
                if !matches!(x.dtype(), super::DType::F32 | super::DType::F64) {
                    let y = x.to_dtype(super::DType::F32)?.polygamma(n)?;
                    return Ok(autograd::relabel("polygamma", y.to_dtype(x.dtype())?));
                }
                let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
                let factorial = libm::lgamma(n as f64 + 1.0).exp();
                let y = x.zeta_scalar_first(n as f64 + 1.0)?.mul(sign * factorial)?;
                Ok(autograd::relabel("polygamma", y))
            }
        }
    }

    /// The multivariate log-gamma function of dimension `p` (torch's `mvlgamma`,
    /// `special.multigammaln`): `p (p - 1) / 4 · ln π + Σ_{j < p} lgamma(x - j / 2)`.
    /// `p` must be at least 1; bool tensors are refused, as in torch.
    pub fn mvlgamma(&self, p: usize) -> Result<Tensor> {
        if p < 1 {
            return Err(Error::Invalid(
                "mvlgamma: p has to be greater than or equal to 1, got 0".into(),
            ));
        }
        if self.dtype() == super::DType::Bool {
            return Err(Error::Invalid(format!(
                "mvlgamma: the input may not be a bool tensor (shape {:?}, {})",
                self.shape(),
                self.device()
            )));
        }
        let x = self.float_or_self()?;
        // torch's arange(-p/2 + 1/2, 1/2, 1/2): the offsets -(p-1)/2, ..., -1/2, 0.
        let offsets: Vec<f64> = (0..p)
            .map(|j| (j as f64 - (p as f64 - 1.0)) * 0.5)
            .collect();
        let offsets = Tensor::from_vec(offsets, [p], x.device())?.to_dtype(x.dtype())?;
        let constant = (p * (p - 1)) as f64 * std::f64::consts::PI.ln() * 0.25;
        let y = offsets
            .add(&x.unsqueeze(-1)?)?
            .lgamma()?
            .sum_dim(-1)?
            .add(constant)?;
        Ok(autograd::relabel("mvlgamma", y))
    }

    /// The Hurwitz zeta function ζ(self, q) = Σ_k (k + q)^-self (torch's `special.zeta`;
    /// ζ(x, 1) is Riemann's). `other` is a tensor (the two broadcast) or a number. Only q
    /// has a gradient, `-x ζ(x + 1, q)`; asking for x's is an error, as in torch. See
    /// [`crate::special::zeta`] for a number as x.
    pub fn zeta<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(other.into(), BinaryOp::Zeta)
    }

    /// ζ(x, self) for a number x: zeta with this tensor as q.
    pub(crate) fn zeta_scalar_first(&self, x: f64) -> Result<Tensor> {
        self.scalar_op(x, true, BinaryOp::Zeta, true)
    }

    /// `1 - erf(x)`, without erf's cancellation for large x (torch's `erfc`).
    pub fn erfc(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Erfc)
    }

    /// The inverse of erf on `(-1, 1)` (torch's `erfinv`): ±inf at ±1, NaN beyond. Runs in
    /// float32 under CUDA autocast, as torch's.
    pub fn erfinv(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Trig, "erfinv", self, |x| x.erfinv()) {
            return r;
        }
        self.unary(UnaryOp::Erfinv)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Device, Tensor};

    fn t(v: Vec<f64>) -> Tensor {
        let n = v.len();
        Tensor::from_vec(v, [n], Device::Cpu).unwrap()
    }

    #[test]
    fn the_gamma_family_differentiates_into_itself() {
        // d/dx lgamma = digamma, d/dx digamma = polygamma(1), d/dx polygamma(1) = polygamma(2).
        let x = t(vec![0.3, 1.5, 4.25]).requires_grad_(true).unwrap();
        type F = fn(&Tensor) -> Tensor;
        let pairs: [(F, u32); 3] = [
            (|x| x.lgamma().unwrap(), 0),
            (|x| x.digamma().unwrap(), 1),
            (|x| x.polygamma(1).unwrap(), 2),
        ];
        for (f, next) in pairs {
            x.zero_grad();
            f(&x).sum().unwrap().backward().unwrap();
            let want = x.detach().polygamma(next).unwrap().to_vec::<f64>().unwrap();
            let got = x.grad().unwrap().to_vec::<f64>().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                    "{got:?} vs {want:?}"
                );
            }
        }
        assert_eq!(
            x.polygamma(3).unwrap().grad_fn(),
            Some("PolygammaBackward0")
        );
        assert_eq!(x.lgamma().unwrap().grad_fn(), Some("LgammaBackward0"));
    }

    #[test]
    fn polygamma_of_higher_order_is_the_zeta_form() {
        // ψ''(1) = -2 ζ(3), ψ'''(1) = π⁴/15.
        let y = t(vec![1.0]).polygamma(2).unwrap().item::<f64>().unwrap();
        assert!((y + 2.404_113_806_319_188_5).abs() < 1e-14, "{y}");
        let y = t(vec![1.0]).polygamma(3).unwrap().item::<f64>().unwrap();
        assert!(
            (y - std::f64::consts::PI.powi(4) / 15.0).abs() < 1e-13,
            "{y}"
        );
    }

    #[test]
    fn mvlgamma_sums_shifted_lgammas() {
        let x = t(vec![2.5, 7.0]);
        let y = x.mvlgamma(3).unwrap().to_vec::<f64>().unwrap();
        for (xi, yi) in [2.5f64, 7.0].iter().zip(&y) {
            let want = 1.5 * std::f64::consts::PI.ln()
                + (0..3)
                    .map(|j| libm::lgamma(xi - j as f64 / 2.0))
                    .sum::<f64>();
            assert!((yi - want).abs() < 1e-12, "{yi} vs {want}");
        }
        assert!(x
            .mvlgamma(0)
            .unwrap_err()
            .to_string()
            .contains("p has to be"));
    }

    #[test]
    fn zeta_has_a_gradient_in_q_only() {
        let q = t(vec![1.0, 2.5]).requires_grad_(true).unwrap();
        let x = t(vec![3.0, 4.0]);
        x.zeta(&q).unwrap().sum().unwrap().backward().unwrap();
        let want = x
            .neg()
            .unwrap()
            .mul(&x.add(1.0).unwrap().zeta(&q.detach()).unwrap());
        assert_eq!(
            q.grad().unwrap().to_vec::<f64>().unwrap(),
            want.unwrap().to_vec::<f64>().unwrap()
        );
        let xr = x.requires_grad_(true).unwrap();
        let e = xr.zeta(2.0).unwrap().sum().unwrap().backward().unwrap_err();
        assert!(e.to_string().contains("not implemented"), "{e}");
        // Integers give float32, as in torch.
        let n = Tensor::from_vec(vec![2i64, 3], [2], Device::Cpu).unwrap();
        assert_eq!(n.zeta(1).unwrap().dtype(), crate::DType::F32);
    }
}
