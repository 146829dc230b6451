//! The connectionist temporal classification loss, torch's `F.ctc_loss` and `nn.CTCLoss`
//! (speech and handwriting recognition: a per-frame class distribution scored against a
//! shorter label sequence, over every alignment of the one to the other). The forward
//! recursion runs in log space over the blank-extended labels, one time step at a time for
//! the whole batch, from tensor ops, so it runs on every device and autograd gives its
//! gradient.

use super::functional::{float_input, in_float32};
use super::loss::Reduction;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::Device;

/// `log(sum(exp(x)))` over dimension 0 of `x`, with no NaN where every term is -inf: such a
/// sum is -inf with a zero gradient (the recursion reaches many unreachable states, and
/// plain logsumexp's gradient there is 0/0).
fn log_sum_exp0(x: &Tensor) -> Result<Tensor> {
    let m = no_grad(|| x.amax(&[0], false))?;
    let m = m.where_(&m.isfinite()?, &m.zeros_like()?)?;
    let s = x.sub(&m)?.exp()?.sum_dim(0)?;
    let reachable = s.gt(0.0)?;
    let safe = s.where_(&reachable, &s.ones_like()?)?;
    let lse = safe.log()?.add(&m)?;
    let minus_inf = Tensor::full_dtype([1], f64::NEG_INFINITY, x.dtype(), x.device())?;
    lse.where_(&reachable, &minus_inf)
}

/// `x` `[N, L]` moved `by` places along its last axis, -inf shifted in.
fn shifted(x: &Tensor, by: usize) -> Result<Tensor> {
    let [n, l] = [x.shape()[0], x.shape()[1]];
    let fill = Tensor::full_dtype([n, by.min(l)], f64::NEG_INFINITY, x.dtype(), x.device())?;
    if by >= l {
        return Ok(fill);
    }
    Tensor::cat(&[fill, x.narrow(1, 0, l - by)?], 1)
}

/// Each sample's labels, read on the host from `targets` (`[N, S]` padded, or the
/// concatenation of every sample's labels), checked against the classes and the blank.
fn labels(
    op: &str,
    targets: &Tensor,
    target_lengths: &[usize],
    classes: usize,
    batched: bool,
) -> Result<Vec<Vec<usize>>> {
    let values: Vec<f64> = targets.to_f64_vec()?;
    let n = target_lengths.len();
    let rows: Vec<Vec<f64>> = if batched && targets.rank() == 2 {
        let s = targets.shape()[1];
        if targets.shape()[0] != n {
            return Err(Error::BadShape(format!(
                "{op}: targets [N, S] must have one row per sample ({n}), got shape {:?}",
                targets.shape()
            )));
        }
        if let Some(&too_long) = target_lengths.iter().find(|&&len| len > s) {
            return Err(Error::BadShape(format!(
                "{op}: a target length of {too_long} does not fit targets of shape {:?} \
                 (at most {s} labels a sample)",
                targets.shape()
            )));
        }
        (0..n)
            .map(|i| values[i * s..i * s + target_lengths[i]].to_vec())
            .collect()
    } else if targets.rank() == 1 {
        let total: usize = target_lengths.iter().sum();
        let expected = if batched { total } else { target_lengths[0] };
        if values.len() < expected || (batched && values.len() != total) {
            return Err(Error::BadShape(format!(
                "{op}: 1-D targets hold every sample's labels one after another, {expected} in \
                 all for target lengths {target_lengths:?}, got shape {:?}",
                targets.shape()
            )));
        }
        let mut start = 0;
        target_lengths
            .iter()
            .map(|&len| {
                start += len;
                values[start - len..start].to_vec()
            })
            .collect()
    } else {
        return Err(Error::BadShape(format!(
            "{op}: expected targets [N, S] or the concatenated labels [sum(target_lengths)]{}, \
             got shape {:?}",
            if batched { "" } else { " ([S] unbatched)" },
            targets.shape()
        )));
    };
    rows.into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| {
                    if v >= 0.0 && v < classes as f64 && v.fract() == 0.0 {
                        Ok(v as usize)
                    } else {
                        Err(Error::Invalid(format!(
                            "{op}: target label {v} is not a class of the {classes} the \
                             log-probabilities have"
                        )))
                    }
                })
                .collect()
        })
        .collect()
}

/// The CTC loss of `log_probs` (`[T, N, C]`, each frame's log-probabilities over `C` classes,
/// as `log_softmax` gives; or `[T, C]` unbatched) against `targets` (`[N, S]` padded, or every
/// sample's labels concatenated; `[S]` unbatched), where sample `n` has `input_lengths[n]`
/// frames and `target_lengths[n]` labels, and `blank` is the blank class (torch's
/// `F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
/// zero_infinity)`). Each sample's loss is `-log p(target | input)` summed over its
/// alignments; `Reduction::Mean` divides each by its target length (at least 1) and averages,
/// as torch's. A target no alignment reaches has an infinite loss, or 0 with
/// `zero_infinity`, with a zero gradient. Float32 and float64 (halves are computed in
/// float32). The gradient is the derivative of the loss: torch's own backward returns
/// `exp(log_probs) - posterior`, which equals it only after `log_softmax`'s backward, so
/// gradients reaching the logits agree and those stopped at `log_probs` differ by
/// `exp(log_probs)`.
#[allow(clippy::too_many_arguments)]
pub fn ctc_loss(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[usize],
    target_lengths: &[usize],
    blank: usize,
    reduction: Reduction,
    zero_infinity: bool,
) -> Result<Tensor> {
    const OP: &str = "ctc_loss";
    float_input(log_probs, OP)?;
    if let Some(y) = in_float32(log_probs, &[], |lp, _| {
        ctc_loss(
            lp,
            targets,
            input_lengths,
            target_lengths,
            blank,
            reduction,
            zero_infinity,
        )
    }) {
        return y;
    }
    let batched = match log_probs.rank() {
        3 => true,
        2 => false,
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected log_probs [T, N, C] or [T, C], got shape {:?}",
                log_probs.shape()
            )))
        }
    };
    let lp = if batched {
        log_probs.clone()
    } else {
        log_probs.unsqueeze(1)?
    };
    let [t_max, n, c] = [0, 1, 2].map(|i| lp.shape()[i]);
    if input_lengths.len() != n || target_lengths.len() != n {
        return Err(Error::BadShape(format!(
            "{OP}: input_lengths ({}) and target_lengths ({}) need one length per sample, {n} \
             for log_probs of shape {:?}",
            input_lengths.len(),
            target_lengths.len(),
            log_probs.shape()
        )));
    }
    if blank >= c {
        return Err(Error::Invalid(format!(
            "{OP}: blank ({blank}) must be one of the {c} classes"
        )));
    }
    if let Some(&long) = input_lengths.iter().find(|&&len| len > t_max) {
        return Err(Error::BadShape(format!(
            "{OP}: an input length of {long} is more than the {t_max} frames of log_probs {:?}",
            log_probs.shape()
        )));
    }
    let labels = labels(OP, targets, target_lengths, c, batched)?;
    let (dev, dtype) = (lp.device(), lp.dtype());
    // The blank-extended labels: blank, l1, blank, l2, .., blank (2S + 1), padded with blanks
    // to the longest; a state may skip the blank before it when its label differs from the
    // one two back.
    let s_max = target_lengths.iter().copied().max().unwrap_or(0);
    let l = 2 * s_max + 1;
    let mut ext = vec![blank as i64; n * l];
    let mut skip = vec![false; n * l];
    for (i, row) in labels.iter().enumerate() {
        for (j, &label) in row.iter().enumerate() {
            let s = 2 * j + 1;
            ext[i * l + s] = label as i64;
            skip[i * l + s] = j > 0 && row[j - 1] != label;
        }
    }
    if t_max == 0 || n == 0 {
        // No frames at all: an empty target costs nothing, any other is unreachable.
        let per: Vec<f64> = target_lengths
            .iter()
            .map(|&s| if s == 0 { 0.0 } else { f64::INFINITY })
            .collect();
        let per = Tensor::from_vec(per, vec![n], Device::Cpu)?
            .to_dtype(dtype)?
            .to(dev)?
            .add(&lp.sum()?.mul(0.0)?)?;
        return finish(per, target_lengths, reduction, zero_infinity, batched);
    }
    let ext_idx = Tensor::from_vec(ext, vec![1, n, l], Device::Cpu)?
        .to(dev)?
        .expand([t_max, n, l])?
        .contiguous()?;
    // Each frame's log-probability of each extended label: [T, N, L].
    let emit = lp.gather(2, &ext_idx)?;
    let skip = Tensor::from_vec(skip, vec![n, l], Device::Cpu)?.to(dev)?;
    let minus_inf = Tensor::full_dtype([1], f64::NEG_INFINITY, dtype, dev)?;
    // alpha_0: the first blank or the first label.
    let first: Vec<f64> = (0..l)
        .map(|s| if s < 2 { 0.0 } else { f64::NEG_INFINITY })
        .collect();
    let first = Tensor::from_vec(first, vec![1, l], Device::Cpu)?
        .to_dtype(dtype)?
        .to(dev)?;
    let mut alpha = emit.select(0, 0)?.add(&first)?;
    let lengths: Vec<i64> = input_lengths.iter().map(|&v| v as i64).collect();
    let lengths = Tensor::from_vec(lengths, vec![n, 1], Device::Cpu)?.to(dev)?;
    for t in 1..t_max {
        let stay = alpha.clone();
        let step = shifted(&alpha, 1)?;
        let jump = shifted(&alpha, 2)?.where_(&skip, &minus_inf)?;
        let next = log_sum_exp0(&Tensor::stack(&[stay, step, jump], 0)?)?
            .add(&emit.select(0, t as isize)?)?;
        // A sample whose frames have ended keeps its last alpha.
        alpha = next.where_(&lengths.gt(t as f64)?, &alpha)?;
    }
    // The end: the last label or the blank after it.
    let mut ends = Vec::with_capacity(2 * n);
    let mut end_mask = Vec::with_capacity(2 * n);
    for &s in target_lengths {
        ends.extend([(2 * s) as i64, (2 * s).saturating_sub(1) as i64]);
        end_mask.extend([0.0, if s == 0 { f64::NEG_INFINITY } else { 0.0 }]);
    }
    let ends = Tensor::from_vec(ends, vec![n, 2], Device::Cpu)?.to(dev)?;
    let end_mask = Tensor::from_vec(end_mask, vec![n, 2], Device::Cpu)?
        .to_dtype(dtype)?
        .to(dev)?;
    let last = alpha.gather(1, &ends)?.add(&end_mask)?;
    let mut per = log_sum_exp0(&last.t()?)?.neg()?;
    // A sample with no frames: 0 for an empty target, else unreachable.
    if input_lengths.contains(&0) {
        let none: Vec<f64> = input_lengths
            .iter()
            .zip(target_lengths)
            .map(|(&t, &s)| match (t, s) {
                (0, 0) => 0.0,
                (0, _) => f64::INFINITY,
                _ => f64::NAN,
            })
            .collect();
        let none = Tensor::from_vec(none, vec![n], Device::Cpu)?
            .to_dtype(dtype)?
            .to(dev)?;
        let framed = Tensor::from_vec(
            input_lengths.iter().map(|&t| t > 0).collect::<Vec<bool>>(),
            vec![n],
            Device::Cpu,
        )?
        .to(dev)?;
        per = per.where_(&framed, &none)?;
    }
    finish(per, target_lengths, reduction, zero_infinity, batched)
}

/// The per-sample losses `[N]`, with infinities zeroed if asked, reduced as torch's.
fn finish(
    per: Tensor,
    target_lengths: &[usize],
    reduction: Reduction,
    zero_infinity: bool,
    batched: bool,
) -> Result<Tensor> {
    let per = if zero_infinity {
        let zeros = per.zeros_like()?;
        zeros.where_(&per.isinf()?, &per)?
    } else {
        per
    };
    match reduction {
        Reduction::None if batched => Ok(per),
        Reduction::None => per.squeeze(0),
        Reduction::Sum => per.sum(),
        Reduction::Mean => {
            let lens: Vec<f64> = target_lengths.iter().map(|&s| s.max(1) as f64).collect();
            let lens = Tensor::from_vec(lens, vec![per.numel()], Device::Cpu)?
                .to_dtype(per.dtype())?
                .to(per.device())?;
            per.div(&lens)?.mean()
        }
    }
}

/// torch's `nn.CTCLoss(blank=0, reduction='mean', zero_infinity=False)`:
/// `CTCLoss::new().forward(&log_probs, &targets, &input_lengths, &target_lengths)`; see
/// [`ctc_loss`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CTCLoss {
    blank: usize,
    reduction: Reduction,
    zero_infinity: bool,
}

impl CTCLoss {
    pub fn new() -> CTCLoss {
        CTCLoss::default()
    }
    /// The blank class (torch's default: 0).
    pub fn blank(mut self, blank: usize) -> CTCLoss {
        self.blank = blank;
        self
    }
    pub fn reduction(mut self, reduction: Reduction) -> CTCLoss {
        self.reduction = reduction;
        self
    }
    /// An unreachable target's infinite loss (and its gradient) becomes 0.
    pub fn zero_infinity(mut self, on: bool) -> CTCLoss {
        self.zero_infinity = on;
        self
    }
    pub fn forward(
        &self,
        log_probs: &Tensor,
        targets: &Tensor,
        input_lengths: &[usize],
        target_lengths: &[usize],
    ) -> Result<Tensor> {
        ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )
    }
}
