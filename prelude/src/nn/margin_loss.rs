//! torch's margin and embedding losses: `margin_ranking_loss`, `hinge_embedding_loss`,
//! `soft_margin_loss`, `cosine_embedding_loss`, `triplet_margin_loss`, `multi_margin_loss`,
//! `multilabel_margin_loss` and `multilabel_soft_margin_loss`, mean-reduced as `F`'s other
//! losses (the modules in `loss_modules.rs` take torch's `reduction`).
//!
//! Each is composed from tensor ops in the order torch's ATen composes it, so it runs on every
//! device and its gradient is autograd's. The two class-margin losses, whose torch kernels are
//! hand-written, use `where(z > 0, z, 0)` rather than `clamp_min(z, 0)`: their kernels count a
//! term only where it is strictly positive, and so do the gradients here.

use super::functional::{float_input, float_target};
use super::loss::Reduction;
use super::pointwise::logsigmoid;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// `max(0, -target * (x1 - x2) + margin)`, averaged: how far each pair is on the wrong side
/// of the ranking `target` (1: `x1` should rank higher, -1: `x2` should) by at least
/// `margin` (torch's `margin_ranking_loss`, margin 0 by default). All three have one rank.
pub fn margin_ranking_loss(
    x1: &Tensor,
    x2: &Tensor,
    target: &Tensor,
    margin: f64,
) -> Result<Tensor> {
    margin_ranking_loss_reduced(x1, x2, target, margin, Reduction::Mean)
}

pub(crate) fn margin_ranking_loss_reduced(
    x1: &Tensor,
    x2: &Tensor,
    target: &Tensor,
    margin: f64,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "margin_ranking_loss";
    if x1.rank() != x2.rank() || x1.rank() != target.rank() {
        return Err(Error::Invalid(format!(
            "{OP}: all three tensors need the same number of dimensions, got x1 {:?}, x2 {:?} \
             and target {:?}",
            x1.shape(),
            x2.shape(),
            target.shape()
        )));
    }
    r.apply(
        target
            .neg()?
            .mul(&x1.sub(x2)?)?
            .add(margin)?
            .clamp_min(0.0)?,
    )
}

/// The hinge loss of distances: `input` where `target` is 1, `max(0, margin - input)` where
/// it is -1, averaged (torch's `hinge_embedding_loss`, margin 1 by default; a target that is
/// neither contributes both terms, as torch's).
pub fn hinge_embedding_loss(input: &Tensor, target: &Tensor, margin: f64) -> Result<Tensor> {
    hinge_embedding_loss_reduced(input, target, margin, Reduction::Mean)
}

pub(crate) fn hinge_embedding_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    margin: f64,
    r: Reduction,
) -> Result<Tensor> {
    let zeros = input.zeros_like()?;
    // `margin - input` in the input's dtype, as ATen's `Scalar - Tensor` (a filled copy minus
    // the input: an integer input keeps its dtype, the margin truncated).
    let below_margin = input.full_like(margin)?.sub(input)?.clamp_min(0)?;
    let from_margin = below_margin.where_(&target.ne(1)?, &zeros)?;
    let from_input = input.where_(&target.ne(-1)?, &zeros)?;
    r.apply(from_margin.add(&from_input)?)
}

/// The logistic loss of a two-class score: `log(1 + exp(-target * input))` with targets 1 or
/// -1, averaged (torch's `soft_margin_loss`).
pub fn soft_margin_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    soft_margin_loss_reduced(input, target, Reduction::Mean)
}

pub(crate) fn soft_margin_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    r: Reduction,
) -> Result<Tensor> {
    float_input(input, "soft_margin_loss")?;
    r.apply(input.neg()?.mul(target)?.exp()?.log1p()?)
}

/// `1 - cos(x1, x2)` where `target` is 1 and `max(0, cos(x1, x2) - margin)` where it is -1,
/// averaged, the cosine taken along each row of `[N, D]` inputs with `[N]` targets (or of
/// `[D]` inputs with a 0-d target); torch's `cosine_embedding_loss`, margin 0 by default, with
/// its 1e-12 added to each squared length.
pub fn cosine_embedding_loss(
    x1: &Tensor,
    x2: &Tensor,
    target: &Tensor,
    margin: f64,
) -> Result<Tensor> {
    cosine_embedding_loss_reduced(x1, x2, target, margin, Reduction::Mean)
}

pub(crate) fn cosine_embedding_loss_reduced(
    x1: &Tensor,
    x2: &Tensor,
    target: &Tensor,
    margin: f64,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "cosine_embedding_loss";
    let dim = target.rank();
    if dim > 1 {
        return Err(Error::Invalid(format!(
            "{OP}: the target must be 0-d (one pair of vectors) or 1-d (one per row), got \
             shape {:?}",
            target.shape()
        )));
    }
    if x1.rank() != dim + 1 || x2.rank() != dim + 1 {
        return Err(Error::Invalid(format!(
            "{OP}: a {dim}-d target needs {}-d inputs, got x1 {:?} and x2 {:?}",
            dim + 1,
            x1.shape(),
            x2.shape()
        )));
    }
    let d = dim as isize;
    let dot = x1.mul(x2)?.sum_dim(d)?;
    let len1 = x1.mul(x1)?.sum_dim(d)?.add(1e-12)?;
    let len2 = x2.mul(x2)?.sum_dim(d)?.add(1e-12)?;
    let cos = dot.div(&len1.mul(&len2)?.sqrt()?)?;
    let zeros = cos.zeros_like()?;
    let pos = cos.neg()?.add(1.0)?.where_(&target.eq(1)?, &zeros)?;
    let neg = cos
        .sub(margin)?
        .clamp_min(0.0)?
        .where_(&target.eq(-1)?, &zeros)?;
    r.apply(pos.add(&neg)?)
}

/// How to measure a triplet: torch's `triplet_margin_loss` arguments after the three tensors,
/// with its defaults (`TripletMargin::default()`: margin 1, p 2, eps 1e-6, no swap).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TripletMargin {
    /// How much nearer the positive must be than the negative; more than 0.
    pub margin: f64,
    /// The norm of the distances (`pairwise_distance`'s p).
    pub p: f64,
    /// Added to each difference before the norm, as `pairwise_distance` does.
    pub eps: f64,
    /// Also measure positive to negative, and use the nearer of the two negatives' distances
    /// (the "distance swap" of Balntas et al.).
    pub swap: bool,
}

impl Default for TripletMargin {
    fn default() -> Self {
        TripletMargin {
            margin: 1.0,
            p: 2.0,
            eps: 1e-6,
            swap: false,
        }
    }
}

/// `max(0, margin + d(anchor, positive) - d(anchor, negative))`, averaged, with `d` the
/// p-norm distance of each row (torch's `triplet_margin_loss`; `[N, D]` or `[D]` inputs, all
/// of one rank).
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    how: TripletMargin,
) -> Result<Tensor> {
    triplet_margin_loss_reduced(anchor, positive, negative, how, Reduction::Mean)
}

pub(crate) fn triplet_margin_loss_reduced(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    how: TripletMargin,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "triplet_margin_loss";
    if how.margin.is_nan() || how.margin <= 0.0 {
        return Err(Error::Invalid(format!(
            "{OP}: the margin must be greater than 0, got {}",
            how.margin
        )));
    }
    let rank = anchor.rank();
    if positive.rank() != rank || negative.rank() != rank || !(1..=2).contains(&rank) {
        return Err(Error::Invalid(format!(
            "{OP}: the anchor, positive and negative need one rank, 1 (one triplet) or 2 \
             (a batch), got {:?}, {:?} and {:?}",
            anchor.shape(),
            positive.shape(),
            negative.shape()
        )));
    }
    let dist = |a: &Tensor, b: &Tensor| a.pairwise_distance(b, how.p, how.eps, false);
    triplet_terms(anchor, positive, negative, how.margin, how.swap, &dist, r)
}

/// `max(0, margin + d(a, p) - d(a, n))`, `d(a, n)` the nearer of it and `d(p, n)` with
/// `swap`, reduced.
fn triplet_terms(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    swap: bool,
    dist: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>,
    r: Reduction,
) -> Result<Tensor> {
    let to_positive = dist(anchor, positive)?;
    let mut to_negative = dist(anchor, negative)?;
    if swap {
        to_negative = to_negative.minimum(&dist(positive, negative)?)?;
    }
    r.apply(to_positive.add(margin)?.sub(&to_negative)?.clamp_min(0.0)?)
}

/// A distance between two batches of embeddings, one value per pair
/// (`triplet_margin_with_distance_loss`'s `distance_function`).
pub type Distance<'a> = &'a dyn Fn(&Tensor, &Tensor) -> Result<Tensor>;

/// [`triplet_margin_loss`] with any distance (torch's `triplet_margin_with_distance_loss(
/// anchor, positive, negative, distance_function, margin, swap)`): `distance` `None` is
/// `pairwise_distance` (p 2, eps 1e-6), as torch's; e.g.
/// `Some(&|a, b| Ok(F::cosine_similarity(a, b, 1)?.neg()?.add(1.0)?))`. The three inputs
/// need one rank.
pub fn triplet_margin_with_distance_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    distance: Option<Distance>,
    margin: f64,
    swap: bool,
) -> Result<Tensor> {
    triplet_margin_with_distance_loss_reduced(
        anchor,
        positive,
        negative,
        distance,
        margin,
        swap,
        Reduction::Mean,
    )
}

pub(crate) fn triplet_margin_with_distance_loss_reduced(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    distance: Option<Distance>,
    margin: f64,
    swap: bool,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "triplet_margin_with_distance_loss";
    if margin.is_nan() || margin <= 0.0 {
        return Err(Error::Invalid(format!(
            "{OP}: the margin must be greater than 0, got {margin}"
        )));
    }
    let rank = anchor.rank();
    if positive.rank() != rank || negative.rank() != rank {
        return Err(Error::Invalid(format!(
            "{OP}: the anchor, positive and negative need one number of dimensions, got \
             {:?}, {:?} and {:?}",
            anchor.shape(),
            positive.shape(),
            negative.shape()
        )));
    }
    let pairwise = |a: &Tensor, b: &Tensor| a.pairwise_distance(b, 2.0, 1e-6, false);
    let dist: Distance = distance.unwrap_or(&pairwise);
    triplet_terms(anchor, positive, negative, margin, swap, dist, r)
}

/// `input` as `[N, C]` (a `[C]` vector as one row) and `target` as `[N]` class indices
/// (int64), for the class-margin losses; an error names what does not fit. Also says
/// whether the input was one vector.
fn as_rows(input: &Tensor, op: &str) -> Result<(Tensor, bool)> {
    float_input(input, op)?;
    match input.rank() {
        1 if input.numel() > 0 => Ok((input.unsqueeze(0)?, true)),
        2 if input.shape()[1] > 0 => Ok((input.clone(), false)),
        _ => Err(Error::Invalid(format!(
            "{op}: expected a non-empty vector [C] or matrix [N, C] of scores, got shape {:?}",
            input.shape()
        ))),
    }
}

/// Refuses an integer `target` with any value outside `[low, classes)` (one read of the
/// target to the host), naming how many are out.
fn check_indices(target: &Tensor, low: i64, classes: usize, op: &str) -> Result<()> {
    if !matches!(target.dtype(), DType::I64) {
        return Err(Error::Invalid(format!(
            "{op}: the target must hold int64 class indices, got {} (shape {:?}); convert with \
             .to_dtype(DType::I64)",
            target.dtype(),
            target.shape()
        )));
    }
    let outside = no_grad(|| -> Result<i64> {
        target
            .lt(low)?
            .logical_or(&target.ge(classes as i64)?)?
            .to_dtype(DType::I64)?
            .sum()?
            .item::<i64>()
    })?;
    if outside > 0 {
        return Err(Error::Invalid(format!(
            "{op}: {outside} of the {} targets lie outside {low}..{classes} (the input has \
             {classes} classes)",
            target.numel()
        )));
    }
    Ok(())
}

/// Each row's loss `[N]` reduced; `scalar`: `None` gives a 0-d result (torch's for one
/// vector with a 0-d target).
fn reduce_rows(per_row: Tensor, scalar: bool, r: Reduction) -> Result<Tensor> {
    if scalar && r == Reduction::None {
        return per_row.reshape(Vec::<usize>::new());
    }
    r.apply(per_row)
}

/// The multi-class hinge loss: for each row, the sum over the other classes `i` of
/// `max(0, margin - x[target] + x[i])^p` (times `weight[target]` when given), over the
/// number of classes, then averaged over rows (torch's `multi_margin_loss`; p 1 or 2, margin
/// 1 by default). `input` `[N, C]` or `[C]`, `target` `[N]` int64 class indices.
pub fn multi_margin_loss(
    input: &Tensor,
    target: &Tensor,
    p: u32,
    margin: f64,
    weight: Option<&Tensor>,
) -> Result<Tensor> {
    multi_margin_loss_reduced(input, target, p, margin, weight, Reduction::Mean)
}

pub(crate) fn multi_margin_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    p: u32,
    margin: f64,
    weight: Option<&Tensor>,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "multi_margin_loss";
    if p != 1 && p != 2 {
        return Err(Error::Invalid(format!("{OP}: p must be 1 or 2, got {p}")));
    }
    let (x, vector) = as_rows(input, OP)?;
    let (n, c) = (x.shape()[0], x.shape()[1]);
    if target.rank() > 1 || target.numel() != n {
        return Err(Error::Invalid(format!(
            "{OP}: expected {n} target{} for input of shape {:?}, got shape {:?}",
            if n == 1 { "" } else { "s" },
            input.shape(),
            target.shape()
        )));
    }
    if let Some(w) = weight {
        if w.rank() != 1 || w.numel() != c {
            return Err(Error::Invalid(format!(
                "{OP}: the weight must be a vector of one value per class ({c}), got shape {:?}",
                w.shape()
            )));
        }
    }
    check_indices(target, 0, c, OP)?;
    let t = target.reshape([n, 1])?;
    let z = x.sub(&x.gather(1, &t)?)?.add(margin)?;
    let others = Tensor::arange(0i64, c as i64, x.device())?.ne(&t)?;
    let counted = z.gt(0.0)?.logical_and(&others)?;
    let mut h = z.where_(&counted, &z.zeros_like()?)?;
    if p == 2 {
        h = h.square()?;
    }
    if let Some(w) = weight {
        h = h.mul(&w.index_select(0, &t.reshape([n])?)?.unsqueeze(1)?)?;
    }
    reduce_rows(
        h.sum_dim(1)?.div(c as f64)?,
        vector && target.rank() == 0,
        r,
    )
}

/// The multi-label hinge loss: each row's `target` lists its labels (int64 class indices,
/// ended by the first -1), and for every listed label `j` and every class `i` not listed,
/// `max(0, 1 - (x[j] - x[i]))` is added; the sum over the number of classes, averaged over
/// rows (torch's `multilabel_margin_loss`; `input` and `target` both `[N, C]` or `[C]`).
pub fn multilabel_margin_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    multilabel_margin_loss_reduced(input, target, Reduction::Mean)
}

pub(crate) fn multilabel_margin_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "multilabel_margin_loss";
    let (x, vector) = as_rows(input, OP)?;
    if target.shape() != input.shape() {
        return Err(Error::Invalid(format!(
            "{OP}: the target lists labels in the input's shape {:?}, got {:?}",
            input.shape(),
            target.shape()
        )));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    check_indices(target, -1, c, OP)?;
    let t = target.reshape([n, c])?;
    // A label counts while no -1 has come before it in its row; one listed twice counts
    // twice, as in torch's loop over the list.
    let listed = t
        .eq(-1)?
        .to_dtype(DType::I64)?
        .cumsum(1)?
        .eq(0)?
        .to_dtype(x.dtype())?;
    let times = x.zeros_like()?.scatter_add(1, &t.clamp_min(0)?, &listed)?;
    let unlisted = times.eq(0.0)?.to_dtype(x.dtype())?;
    // z[n, j, i] = 1 - x[n, j] + x[n, i], weighted by how often j is listed and whether i is not.
    let z = x.unsqueeze(1)?.sub(&x.unsqueeze(2)?)?.add(1.0)?;
    let pairs = times.unsqueeze(2)?.mul(&unlisted.unsqueeze(1)?)?;
    let h = z.where_(&z.gt(0.0)?, &z.zeros_like()?)?.mul(&pairs)?;
    reduce_rows(h.sum_dim(2)?.sum_dim(1)?.div(c as f64)?, vector, r)
}

/// The multi-label logistic loss: `-(y log(sigmoid(x)) + (1 - y) log(sigmoid(-x)))` for each
/// class (times its `weight` when given), averaged over the classes (the last dimension),
/// then over rows (torch's `multilabel_soft_margin_loss`; targets 0 or 1, of the input's shape).
pub fn multilabel_soft_margin_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
) -> Result<Tensor> {
    multilabel_soft_margin_loss_reduced(input, target, weight, Reduction::Mean)
}

pub(crate) fn multilabel_soft_margin_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    r: Reduction,
) -> Result<Tensor> {
    const OP: &str = "multilabel_soft_margin_loss";
    float_input(input, OP)?;
    if input.rank() == 0 {
        return Err(Error::Invalid(format!(
            "{OP}: the input needs a class dimension (its last), got a 0-d tensor"
        )));
    }
    let y = float_target(target, input)?;
    let on = y.mul(&logsigmoid(input)?)?;
    let off = y.neg()?.add(1.0)?.mul(&logsigmoid(&input.neg()?)?)?;
    let mut loss = on.add(&off)?.neg()?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    let class_dim = input.rank() as isize - 1;
    let classes = input.shape()[input.rank() - 1];
    r.apply(loss.sum_dim(class_dim)?.div(classes as f64)?)
}
