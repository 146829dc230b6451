//! More of torch's losses, mean-reduced like those in `functional` (which re-exports these):
//! `l1_loss`, `smooth_l1_loss`, `huber_loss`, `nll_loss`, `binary_cross_entropy` and `kl_div`,
//! and
//! `Reduction`, torch's `reduction=` argument, which the loss modules (`nn::MSELoss`,
//! `nn::CrossEntropyLoss`, ...; `loss_modules.rs`) take.
//! Composed from tensor ops, so they run on every device with gradients from theirs, except
//! `binary_cross_entropy`, whose gradient is torch's closed form.

use super::class_loss::{class_loss, ClassLossOptions};
use super::functional::{difference, float_input, float_target, same_shape};
use crate::autograd::{no_grad, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast2, AmpOp};
use crate::tensor::{DType, Tensor};

/// How a loss turns its per-element (or, for class losses, per-sample) values into its
/// result, torch's `reduction=` argument: `None` keeps them all (`'none'`), `Mean` averages
/// them (`'mean'`, the default; NaN for no values, as torch), `Sum` adds them (`'sum'`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    None,
    #[default]
    Mean,
    Sum,
}

impl Reduction {
    /// The loss of `per_element` values, reduced.
    pub(crate) fn apply(self, per_element: Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(per_element),
            Reduction::Mean => per_element.mean(),
            Reduction::Sum => per_element.sum(),
        }
    }

    /// The gradient that reaches each of `n` elements from the reduced value's gradient `g`
    /// (for the closed-form rules): `g / n` for a mean (torch divides too), `g` itself (a
    /// scalar, or one value per element for `None`) otherwise; `mul` broadcasts either.
    pub(crate) fn gradient(self, g: &Tensor, n: usize) -> Result<Tensor> {
        match self {
            Reduction::Mean => g.div(n as f64),
            Reduction::None | Reduction::Sum => Ok(g.clone()),
        }
    }
}

/// Mean absolute error, `mean(|input - target|)` (torch's `l1_loss`); both of one shape.
pub fn l1_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    l1_loss_reduced(input, target, Reduction::Mean)
}

pub(crate) fn l1_loss_reduced(input: &Tensor, target: &Tensor, r: Reduction) -> Result<Tensor> {
    if let Some(y) = autocast2(AmpOp::L1Loss, "l1_loss", input, target, |a, b| {
        l1_loss_reduced(a, b, r)
    }) {
        return y;
    }
    r.apply(difference(input, target, "l1_loss")?.abs()?)
}

/// `0.5 d^2 / beta` where `|d| < beta`, else `|d| - 0.5 beta`, averaged, with
/// `d = input - target` (torch's `smooth_l1_loss`; its default `beta` is 1.0, and `beta = 0`
/// is `l1_loss`).
pub fn smooth_l1_loss(input: &Tensor, target: &Tensor, beta: f64) -> Result<Tensor> {
    smooth_l1_loss_reduced(input, target, beta, Reduction::Mean)
}

pub(crate) fn smooth_l1_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    beta: f64,
    r: Reduction,
) -> Result<Tensor> {
    if let Some(y) = autocast2(
        AmpOp::SmoothL1Loss,
        "smooth_l1_loss",
        input,
        target,
        |a, b| smooth_l1_loss_reduced(a, b, beta, r),
    ) {
        return y;
    }
    if beta.is_nan() || beta < 0.0 {
        return Err(Error::Invalid(format!(
            "smooth_l1_loss: beta must be 0 or more, got {beta}"
        )));
    }
    let d = difference(input, target, "smooth_l1_loss")?;
    let a = d.abs()?;
    if beta == 0.0 {
        return r.apply(a);
    }
    r.apply(
        d.square()?
            .mul(0.5 / beta)?
            .where_(&a.lt(beta)?, &a.sub(0.5 * beta)?)?,
    )
}

/// `0.5 d^2` where `|d| < delta`, else `delta (|d| - 0.5 delta)`, averaged (torch's
/// `huber_loss`; its default `delta` is 1.0, and it must be positive).
pub fn huber_loss(input: &Tensor, target: &Tensor, delta: f64) -> Result<Tensor> {
    huber_loss_reduced(input, target, delta, Reduction::Mean)
}

pub(crate) fn huber_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    delta: f64,
    r: Reduction,
) -> Result<Tensor> {
    if let Some(y) = autocast2(AmpOp::HuberLoss, "huber_loss", input, target, |a, b| {
        huber_loss_reduced(a, b, delta, r)
    }) {
        return y;
    }
    if delta.is_nan() || delta <= 0.0 {
        return Err(Error::Invalid(format!(
            "huber_loss: delta must be positive, got {delta}"
        )));
    }
    let d = difference(input, target, "huber_loss")?;
    let a = d.abs()?;
    r.apply(
        d.square()?
            .mul(0.5)?
            .where_(&a.lt(delta)?, &a.sub(0.5 * delta)?.mul(delta)?)?,
    )
}

/// Negative log-likelihood of class indices: `-mean(input[i, target[i]])` with `input`
/// `[N, C]` log-probabilities (a `log_softmax` output; also `[C]` or `[N, C, d1, ...]`) and
/// `target` `[N]` class indices (torch's `nll_loss` with its defaults: targets of -100 are
/// ignored; `cross_entropy` is `nll_loss` of `log_softmax`). [`nll_loss_with`] takes
/// torch's `weight`, `ignore_index` and `reduction`.
pub fn nll_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    nll_loss_reduced(input, target, Reduction::Mean)
}

/// `nll_loss` with torch's options (label smoothing is cross_entropy's only).
pub fn nll_loss_with(input: &Tensor, target: &Tensor, opts: &ClassLossOptions) -> Result<Tensor> {
    if let Some(y) = autocast2(AmpOp::NllLoss, "nll_loss", input, target, |a, b| {
        nll_loss_with(a, b, opts)
    }) {
        return y;
    }
    if opts.label_smoothing != 0.0 {
        return Err(Error::Invalid(format!(
            "nll_loss has no label_smoothing (got {}); it is cross_entropy's",
            opts.label_smoothing
        )));
    }
    let loss = class_loss(input, target, opts, "nll_loss", false)?;
    Ok(crate::autograd::relabel("nll_loss", loss))
}

pub(crate) fn nll_loss_reduced(input: &Tensor, target: &Tensor, r: Reduction) -> Result<Tensor> {
    let opts = ClassLossOptions {
        reduction: r,
        ..ClassLossOptions::default()
    };
    nll_loss_with(input, target, &opts)
}

/// Binary cross-entropy of probabilities (torch's `binary_cross_entropy`, after a sigmoid):
/// `-mean(y log p + (1 - y) log(1 - p))`, each log clamped at -100 as torch does, so `p` of
/// exactly 0 or 1 gives a finite loss. Every `p` must lie in [0, 1] (checked on the host, one
/// read of the input). The gradient is torch's: `(p - y) / max(p (1 - p), 1e-12)` for `p`
/// and `-logit(p)` for `y`, over N. `binary_cross_entropy_with_logits` is the stable form.
pub fn binary_cross_entropy(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    binary_cross_entropy_reduced(input, target, Reduction::Mean)
}

pub(crate) fn binary_cross_entropy_reduced(
    input: &Tensor,
    target: &Tensor,
    r: Reduction,
) -> Result<Tensor> {
    let name = "binary_cross_entropy";
    if let Some(y) = autocast2(AmpOp::BinaryCrossEntropy, name, input, target, |a, b| {
        binary_cross_entropy_reduced(a, b, r)
    }) {
        return y;
    }
    same_shape(input, target, "binary_cross_entropy")?;
    float_input(input, "binary_cross_entropy")?;
    let outside = no_grad(|| -> Result<i64> {
        let inside = input.ge(0.0)?.logical_and(&input.le(1.0)?)?;
        inside
            .logical_not()?
            .to_dtype(DType::I64)?
            .sum()?
            .item::<i64>()
    })?;
    if outside > 0 {
        return Err(Error::Invalid(format!(
            "binary_cross_entropy: every input must be a probability between 0 and 1, but {outside} \
             of {} are not (shape {:?}); for scores, use binary_cross_entropy_with_logits",
            input.numel(),
            input.shape()
        )));
    }
    let y = float_target(target, input)?;
    let n = input.numel();
    let out = no_grad(|| {
        let log_p = input.log()?.clamp_min(-100.0)?;
        let log_q = input.neg()?.log1p()?.clamp_min(-100.0)?;
        // (y - 1) log(1 - p) - y log p, as torch writes it.
        r.apply(y.sub(1.0)?.mul(&log_q)?.sub(&y.mul(&log_p)?)?)
    })?;
    let (ps, ys) = (Saved::new(input), Saved::new(&y));
    Ok(record(
        out,
        "binary_cross_entropy",
        &[input, &y],
        move |g| {
            let (p, y) = (ps.get()?, ys.get()?);
            let g = r.gradient(g, n)?;
            // torch's EPSILON is the float32 1e-12, also in float64 arithmetic.
            let spread = p.mul(&p.neg()?.add(1.0)?)?.clamp_min(1e-12f32 as f64)?;
            let gp = p.sub(y)?.div(&spread)?.mul(&g)?;
            let gy = p.neg()?.log1p()?.sub(&p.log()?)?.mul(&g)?;
            Ok(vec![Some(gp), Some(gy)])
        },
    ))
}

/// `kl_div`'s reduction, torch's `reduction=` string: [`Reduction`]'s three, and
/// `"batchmean"` (the sum divided by the batch size, the KL divergence's true value per
/// sample, which torch recommends over `"mean"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KlReduction {
    None,
    Mean,
    BatchMean,
    Sum,
    /// A string torch does not know: an error when the loss runs.
    Unknown(String),
}

impl From<Reduction> for KlReduction {
    fn from(r: Reduction) -> KlReduction {
        match r {
            Reduction::None => KlReduction::None,
            Reduction::Mean => KlReduction::Mean,
            Reduction::Sum => KlReduction::Sum,
        }
    }
}

impl From<&str> for KlReduction {
    fn from(s: &str) -> KlReduction {
        match s {
            "none" => KlReduction::None,
            "mean" => KlReduction::Mean,
            "batchmean" => KlReduction::BatchMean,
            "sum" => KlReduction::Sum,
            other => KlReduction::Unknown(other.to_string()),
        }
    }
}

/// The Kullback-Leibler divergence of `target` from the distribution whose log-probabilities
/// are `input` (torch's `F.kl_div(input, target, reduction, log_target)`): element-wise
/// `target * (log(target) - input)` (0 where the target is 0), or with `log_target` the
/// target given as log-probabilities too, `exp(target) * (target - input)`; then reduced
/// (`"batchmean"` for the divergence per sample). The two broadcast.
pub fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: impl Into<KlReduction>,
    log_target: bool,
) -> Result<Tensor> {
    float_input(input, "kl_div")?;
    let target = float_target(target, input)?;
    let per_element = if log_target {
        target.exp()?.mul(&target.sub(input)?)?
    } else {
        target.xlogy(&target)?.sub(&target.mul(input)?)?
    };
    match reduction.into() {
        KlReduction::None => Ok(per_element),
        KlReduction::Mean => per_element.mean(),
        KlReduction::Sum => per_element.sum(),
        KlReduction::BatchMean if input.rank() == 0 => per_element.sum(),
        KlReduction::BatchMean => per_element.sum()?.div(input.shape()[0] as f64),
        KlReduction::Unknown(r) => Err(Error::Invalid(format!(
            "kl_div: {r:?} is not a reduction; use \"batchmean\", \"mean\", \"sum\" or \"none\""
        ))),
    }
}
