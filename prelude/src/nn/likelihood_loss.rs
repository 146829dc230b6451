//! torch's negative log-likelihood losses of a distribution's parameters:
//! `poisson_nll_loss` (a rate) and `gaussian_nll_loss` (a mean and a variance), mean-reduced
//! as `F`'s other losses (the modules in `loss_modules.rs` take torch's `reduction`).
//! Composed from tensor ops as torch composes them, so they run on every device with
//! autograd's gradients.

use super::functional::{float_input, float_target};
use super::loss::Reduction;
use crate::autograd::{no_grad, record};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// How `poisson_nll_loss` reads its input: torch's arguments after the two tensors, with its
/// defaults (`PoissonNll::default()`: the input is a log-rate, no Stirling term, eps 1e-8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonNll {
    /// The input is `log(rate)` (the loss is `exp(input) - target * input`); otherwise the
    /// rate itself (`input - target * log(input + eps)`).
    pub log_input: bool,
    /// Add Stirling's approximation of `log(target!)`, for targets above 1, so the loss is the
    /// full negative log-likelihood.
    pub full: bool,
    /// Keeps `log` finite at a rate of 0 when `log_input` is false.
    pub eps: f64,
}

impl Default for PoissonNll {
    fn default() -> Self {
        PoissonNll {
            log_input: true,
            full: false,
            eps: 1e-8,
        }
    }
}

/// The negative log-likelihood of counts `target` under Poisson rates given by `input`,
/// averaged (torch's `poisson_nll_loss`); the two broadcast.
pub fn poisson_nll_loss(input: &Tensor, target: &Tensor, how: PoissonNll) -> Result<Tensor> {
    poisson_nll_loss_reduced(input, target, how, Reduction::Mean)
}

pub(crate) fn poisson_nll_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    how: PoissonNll,
    r: Reduction,
) -> Result<Tensor> {
    let y = float_target(target, input)?;
    let mut loss = if how.log_input {
        input.exp()?.sub(&y.mul(input)?)?
    } else {
        input.sub(&y.mul(&input.add(how.eps)?.log()?)?)?
    };
    if how.full {
        // y log y - y + log(2 pi y) / 2, zero where y <= 1 (where it is no approximation).
        let stirling = y
            .mul(&y.log()?)?
            .sub(&*y)?
            .add(&y.mul(2.0 * std::f64::consts::PI)?.log()?.mul(0.5)?)?;
        loss = loss.add(&stirling.masked_fill(&y.le(1.0)?, 0.0)?)?;
    }
    r.apply(loss)
}

/// The negative log-likelihood of `target` under normal distributions of mean `input` and
/// variance `var`, up to a constant (unless `full`): `(log(var) + (input - target)^2 / var) / 2`,
/// averaged (torch's `gaussian_nll_loss`; eps 1e-6 by default).
///
/// `var` has the input's shape (one variance per value), or that shape without its last
/// dimension, or with that dimension 1 (one per row); for one variance everywhere pass
/// `input.full_like(v)`. No entry may be negative. Variances below `eps` count as `eps`, but
/// their gradient passes straight through, as torch's (which clamps a copy without recording
/// it).
pub fn gaussian_nll_loss(
    input: &Tensor,
    target: &Tensor,
    var: &Tensor,
    full: bool,
    eps: f64,
) -> Result<Tensor> {
    gaussian_nll_loss_reduced(input, target, var, full, eps, Reduction::Mean)
}

pub(crate) fn gaussian_nll_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    var: &Tensor,
    full: bool,
    eps: f64,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "gaussian_nll_loss";
    float_input(var, OP)?;
    let negative = no_grad(|| var.lt(0.0)?.to_dtype(DType::I64)?.sum()?.item::<i64>())?;
    if negative > 0 {
        return Err(Error::Invalid(format!(
            "{OP}: a variance cannot be negative, but {negative} of the {} in var are",
            var.numel()
        )));
    }
    let (shape, vshape) = (input.shape(), var.shape());
    let var = if vshape == shape {
        var.clone()
    } else if !shape.is_empty() && vshape == &shape[..shape.len() - 1] {
        var.unsqueeze(-1)?
    } else if !shape.is_empty()
        && vshape.len() == shape.len()
        && vshape[..vshape.len() - 1] == shape[..shape.len() - 1]
        && vshape[vshape.len() - 1] == 1
    {
        var.clone()
    } else {
        return Err(Error::Invalid(format!(
            "{OP}: var must have the input's shape {shape:?}, or that shape without its last \
             dimension or with it 1 (one variance per row), got {vshape:?}"
        )));
    };
    // The clamped value, with the identity as its gradient.
    let clamped = no_grad(|| var.clamp_min(eps))?;
    let var = record(clamped, "clone", &[&var], |g| Ok(vec![Some(g.clone())]));
    let target = float_target(target, input)?;
    let mut loss = var
        .log()?
        .add(&input.sub(&*target)?.square()?.div(&var)?)?
        .mul(0.5)?;
    if full {
        loss = loss.add(0.5 * (2.0 * std::f64::consts::PI).ln())?;
    }
    r.apply(loss)
}
