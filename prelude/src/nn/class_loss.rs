//! The class losses, torch's `cross_entropy` and `nll_loss`, with torch's options: a weight
//! per class, an `ignore_index` (-100 by default, as torch's), label smoothing, class
//! probabilities as targets (cross_entropy), and inputs with extra dimensions after the
//! classes (`[N, C, d1, ...]` against `[N, d1, ...]`, as for segmentation).
//!
//! The per-sample weights are built on the host from the checked labels and applied as a
//! product with the log-probabilities, so the loss runs on every device with its gradient
//! from the ops it is made of.

use super::functional::float_input;
use super::loss::Reduction;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// torch's arguments of `F.cross_entropy` and `F.nll_loss` beyond input and target.
#[derive(Clone, Debug)]
pub struct ClassLossOptions {
    /// A weight per class (`[C]`), or None for 1 each.
    pub weight: Option<Tensor>,
    /// Targets equal to it count for nothing, not even in the mean's denominator.
    pub ignore_index: i64,
    /// `ε` in [0, 1]: the target becomes `1 - ε` on the class and `ε / C` spread over all
    /// (cross_entropy only).
    pub label_smoothing: f64,
    pub reduction: Reduction,
}

impl Default for ClassLossOptions {
    fn default() -> Self {
        ClassLossOptions {
            weight: None,
            ignore_index: -100,
            label_smoothing: 0.0,
            reduction: Reduction::Mean,
        }
    }
}

/// `input` (`[C]`, `[N, C]` or `[N, C, d1, ...]`) as rows of classes, `[M, C]`, and the shape
/// of one loss per row (`[]`, `[N]` or `[N, d1, ...]`).
fn rows_of_classes(input: &Tensor, op: &str) -> Result<(Tensor, Vec<usize>)> {
    match input.rank() {
        0 => Err(Error::BadShape(format!(
            "{op}: expected an input of shape [C], [N, C] or [N, C, d1, ...] (class scores), \
             got a 0-d tensor"
        ))),
        1 => Ok((input.unsqueeze(0)?, vec![])),
        2 => Ok((input.clone(), vec![input.shape()[0]])),
        r => {
            // The classes moved last: [N, d1, .., C], then one row per position.
            let mut order: Vec<isize> = vec![0];
            order.extend(2..r as isize);
            order.push(1);
            let c = input.shape()[1];
            let mut per = vec![input.shape()[0]];
            per.extend_from_slice(&input.shape()[2..]);
            Ok((input.permute(&order)?.reshape([-1, c as isize])?, per))
        }
    }
}

/// The per-row weight vector of class-index targets: `w[y]` on the target's class (`pick`,
/// `[M, C]`) and the mean's denominator, the sum of those weights; ignored rows get 0.
struct Picks {
    pick: Vec<f64>,
    kept: Vec<f64>,
    denominator: f64,
}

fn class_picks(
    targets: &Tensor,
    per_row: &[usize],
    classes: usize,
    weight: Option<&[f64]>,
    ignore_index: i64,
    op: &str,
) -> Result<Picks> {
    if targets.dtype().is_float() || targets.dtype() == DType::Bool {
        return Err(Error::Invalid(format!(
            "{op}: targets must be class indices (an int64 tensor of shape {per_row:?}), got \
             {} values; convert with .to_dtype(DType::I64)",
            targets.dtype()
        )));
    }
    if targets.shape() != per_row {
        return Err(Error::BadShape(format!(
            "{op}: expected targets of shape {per_row:?} (one class index per row of the \
             input), got {:?}",
            targets.shape()
        )));
    }
    let labels = targets.to_dtype(DType::I64)?.to_vec::<i64>()?;
    let m = labels.len();
    let (mut pick, mut kept, mut denominator) = (vec![0.0; m * classes], vec![0.0; m], 0.0);
    for (i, &l) in labels.iter().enumerate() {
        if l == ignore_index {
            continue;
        }
        if l < 0 || l as usize >= classes {
            return Err(Error::Invalid(format!(
                "{op}: target {l} (at position {i}) is out of range for {classes} classes: \
                 labels must lie in 0..={} (or be the ignore_index, {ignore_index})",
                classes.saturating_sub(1)
            )));
        }
        let w = weight.map_or(1.0, |w| w[l as usize]);
        pick[i * classes + l as usize] = w;
        kept[i] = 1.0;
        denominator += w;
    }
    Ok(Picks {
        pick,
        kept,
        denominator,
    })
}

/// The class weights on the host, checked against the class count and the input's device.
fn class_weights(
    opts: &ClassLossOptions,
    input: &Tensor,
    classes: usize,
    op: &str,
) -> Result<Option<Vec<f64>>> {
    let Some(w) = &opts.weight else {
        return Ok(None);
    };
    if w.shape() != [classes] {
        return Err(Error::BadShape(format!(
            "{op}: weight must have one value per class, shape [{classes}], got {:?}",
            w.shape()
        )));
    }
    if w.device() != input.device() {
        return Err(Error::Invalid(format!(
            "{op}: the weight is on {} but the input on {}; move it with .to(device)",
            w.device(),
            input.device()
        )));
    }
    Ok(Some(w.to_f64_vec()?))
}

/// A host vector as a tensor of `like`'s dtype on its device.
fn host(values: Vec<f64>, dims: Vec<usize>, like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(values, dims, Device::Cpu)?
        .to_dtype(like.dtype())?
        .to(like.device())
}

/// The class loss of log-probabilities `logp` against `targets` (class indices, or
/// probabilities of `logp`'s shape when `soft` is allowed), as torch's `nll_loss` (smoothing
/// 0, no soft targets) and `cross_entropy` (after its `log_softmax`).
pub(super) fn class_loss(
    logp: &Tensor,
    targets: &Tensor,
    opts: &ClassLossOptions,
    op: &str,
    soft_allowed: bool,
) -> Result<Tensor> {
    float_input(logp, op)?;
    let eps = opts.label_smoothing;
    if !(0.0..=1.0).contains(&eps) {
        return Err(Error::Invalid(format!(
            "{op}: label_smoothing must lie in [0, 1], got {eps}"
        )));
    }
    let (rows, per_row) = rows_of_classes(logp, op)?;
    let classes = rows.shape()[1];
    let weights = class_weights(opts, logp, classes, op)?;
    let weight_row = match &weights {
        Some(w) => Some(host(w.clone(), vec![1, classes], &rows)?),
        None => None,
    };
    let soft = targets.dtype().is_float() && targets.shape() == logp.shape();
    let per_sample = if soft {
        if !soft_allowed {
            return Err(Error::Invalid(format!(
                "{op}: targets must be class indices (int64), got {} probabilities; \
                 F::cross_entropy takes probabilities",
                targets.dtype()
            )));
        }
        // Probabilities as rows too, smoothed towards the uniform distribution.
        let (p, _) = rows_of_classes(&targets.to_dtype(logp.dtype())?, op)?;
        let p = if eps > 0.0 {
            p.mul(1.0 - eps)?.add(eps / classes as f64)?
        } else {
            p
        };
        let terms = rows.mul(&p)?;
        let terms = match &weight_row {
            Some(w) => terms.mul(w)?,
            None => terms,
        };
        let loss = terms.sum_dim(1)?.neg()?;
        return match opts.reduction {
            Reduction::None => loss.reshape(per_row),
            Reduction::Sum => loss.sum(),
            // torch divides by the number of rows, whatever the weights.
            Reduction::Mean => loss.sum()?.div(rows.shape()[0] as f64),
        };
    } else {
        let picks = class_picks(
            targets,
            &per_row,
            classes,
            weights.as_deref(),
            opts.ignore_index,
            op,
        )?;
        let m = rows.shape()[0];
        let pick = host(picks.pick, vec![m, classes], &rows)?;
        let nll = rows.mul(&pick)?.sum_dim(1)?.neg()?;
        let loss = if eps > 0.0 {
            // Every class's log-probability, weighted, on the rows that are not ignored.
            let all = match &weight_row {
                Some(w) => rows.mul(w)?,
                None => rows.clone(),
            };
            let kept = host(picks.kept, vec![m], &rows)?;
            let smooth = all.sum_dim(1)?.neg()?.mul(&kept)?;
            nll.mul(1.0 - eps)?
                .add(&smooth.mul(eps / classes as f64)?)?
        } else {
            nll
        };
        (loss, picks.denominator)
    };
    let (loss, denominator) = per_sample;
    match opts.reduction {
        Reduction::None => loss.reshape(per_row),
        Reduction::Sum => loss.sum(),
        // Divided by the sum of the picked weights. With none (an empty batch, or every
        // target ignored) the loss is NaN and its gradient 0, as torch's: no row was picked.
        Reduction::Mean if denominator == 0.0 => loss.sum()?.mul(0.0)?.add(f64::NAN),
        Reduction::Mean => loss.sum()?.div(denominator),
    }
}
