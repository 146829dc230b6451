//! The functions behind the layers, torch's `torch.nn.functional` (exported at the crate root
//! as `F`, so `F::cross_entropy(&logits, &labels)` reads as in PyTorch).
//!
//! Each is composed from tensor ops that autograd already differentiates, so each works on
//! every device those ops support and needs no backward rule of its own. `conv2d` and
//! `max_pool2d` gather their windows with one index op (im2col), then use matmul and max;
//! on the CPU (f32/f64) both first try a fused op with its own backward
//! (`Tensor::conv2d_cpu`, `Tensor::max_pool2d_cpu`), which CUDA never takes.

use crate::autograd::{record, Saved};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast1, autocast2, autocast3, AmpOp};
use crate::tensor::host_mem::{checked_numel, host_room};
use crate::tensor::{promote, DType, Tensor};
use crate::Device;
use std::borrow::Cow;

pub use super::activation::{elu, hardtanh, mish, prelu, relu6};
pub use super::adaptive_pool::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
};
pub use super::adaptive_pool3d::{
    adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices,
};
pub use super::attention::scaled_dot_product_attention;
use super::class_loss::class_loss;
pub use super::class_loss::ClassLossOptions;
pub use super::conv::{conv2d, conv_transpose2d};
pub use super::conv1d::{avg_pool1d, conv1d, conv_transpose1d, max_pool1d};
pub use super::conv3d::conv3d;
pub use super::conv_transpose3d::conv_transpose3d;
pub use super::ctc::ctc_loss;
pub use super::embedding_bag::embedding_bag;
pub use super::fractional_pool::{
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
};
pub use super::grid_sample::{affine_grid, grid_sample};
pub use super::inplace_activation::{
    celu_, elu_, hardtanh_, leaky_relu_, relu_, rrelu_, selu_, threshold_,
};
pub use super::likelihood_loss::{gaussian_nll_loss, poisson_nll_loss, PoissonNll};
use super::loss::Reduction;
pub use super::loss::{
    binary_cross_entropy, huber_loss, kl_div, l1_loss, nll_loss, nll_loss_with, smooth_l1_loss,
};
pub use super::lp_pool::{lp_pool1d, lp_pool2d, lp_pool3d};
pub use super::margin_loss::{
    cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss, multi_margin_loss,
    multilabel_margin_loss, multilabel_soft_margin_loss, soft_margin_loss, triplet_margin_loss,
    triplet_margin_with_distance_loss, Distance, TripletMargin,
};
pub use super::norm::{batch_norm, group_norm, instance_norm, layer_norm};
pub use super::pad::pad;
pub use super::pairwise::bilinear;
pub use super::pointwise::{
    celu, glu, hardshrink, hardsigmoid, hardswish, logsigmoid, selu, softmax2d, softmin,
    softshrink, softsign, tanhshrink, threshold,
};
pub use super::pool::{avg_pool2d, max_pool2d, max_pool2d_with_indices};
pub use super::pool3d::{avg_pool3d, max_pool3d, max_pool3d_with_indices};
pub use super::rearrange::{channel_shuffle, pixel_shuffle, pixel_unshuffle};
pub use super::resample::{interpolate, upsample, upsample_bilinear, upsample_nearest};
pub use super::scale_norm::{local_response_norm, rms_norm};
pub use super::stochastic::{alpha_dropout, feature_alpha_dropout, gumbel_softmax, rrelu};
pub use super::unfold::{fold, unfold};
pub use super::unpool::{max_pool1d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d};

fn resolve(dim: isize, rank: usize, op: &str) -> Result<usize> {
    let d = if dim < 0 { dim + rank as isize } else { dim };
    if rank == 0 || d < 0 || d >= rank as isize {
        return Err(Error::Invalid(format!(
            "{op}: dimension {dim} is out of range for a tensor of rank {rank}"
        )));
    }
    Ok(d as usize)
}

/// For a float16/bfloat16 `x`: `f` run on float32 copies of `x` and `others` (`[x, others..]`,
/// None kept), its result cast back, as torch computes these functions for half types (rounding
/// every step in half precision would lose a digit or two). None for other dtypes.
pub(super) fn in_float32(
    x: &Tensor,
    others: &[Option<&Tensor>],
    f: impl FnOnce(&Tensor, &[Option<Tensor>]) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    if !matches!(x.dtype(), DType::F16 | DType::BF16) {
        return None;
    }
    let run = || -> Result<Tensor> {
        let up: Vec<Option<Tensor>> = others
            .iter()
            .map(|t| t.map(|t| t.to_dtype(DType::F32)).transpose())
            .collect::<Result<_>>()?;
        f(&x.to_dtype(DType::F32)?, &up)?.to_dtype(x.dtype())
    };
    Some(run())
}

pub(super) fn float_input(x: &Tensor, op: &str) -> Result<()> {
    if x.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{op} needs a floating-point input, got {} (shape {:?}); convert first with \
             .to_dtype(DType::F32)",
            x.dtype(),
            x.shape()
        )))
    }
}

impl Tensor {
    /// `log(softmax(x))` along `dim`, computed as `x - max - log(sum(exp(x - max)))` so
    /// that large logits neither overflow nor lose precision.
    pub fn log_softmax(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::LogSoftmax, "log_softmax", self, |x| {
            x.log_softmax(dim)
        }) {
            return r;
        }
        float_input(self, "log_softmax")?;
        let d = resolve(dim, self.rank(), "log_softmax")?;
        // Halves in float32, rounded once (torch's kernels accumulate in float32 too): the
        // composed steps rounded each in float16 put the gradient several units off.
        if let Some(y) = in_float32(self, &[], |x, _| x.log_softmax(dim)) {
            return y;
        }
        if self.numel() == 0 {
            // Nothing to normalise (and no max of an empty slice): an empty result, linked to
            // the input for autograd, as torch's.
            return self.mul(1.0);
        }
        let mut kept = self.shape().to_vec();
        kept[d] = 1;
        // The shift changes no gradient (it cancels), so it is taken without history.
        let m = self.detach().max_dim(d as isize)?.reshape(&kept)?;
        let z = self.sub(&m)?;
        let lse = z.exp()?.sum_keepdim(d as isize)?.log()?;
        Ok(crate::autograd::relabel("log_softmax", z.sub(&lse)?))
    }

    /// `x` where positive, `slope * x` elsewhere (torch's `leaky_relu`, whose default slope
    /// is 0.01); at 0 the gradient is `slope`, as torch's.
    pub fn leaky_relu(&self, slope: f64) -> Result<Tensor> {
        float_input(self, "leaky_relu")?;
        self.where_(&self.gt(0)?, &self.mul(slope)?)
    }

    /// `ln(1 + exp(x))`, a smooth ReLU (torch's `softplus` with its defaults, beta 1 and
    /// threshold 20: above 20 it is `x` itself).
    pub fn softplus(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Softplus, "softplus", self, |x| x.softplus()) {
            return r;
        }
        float_input(self, "softplus")?;
        // exp(12) already overflows float16.
        if let Some(y) = in_float32(self, &[], |x, _| x.softplus()) {
            return y;
        }
        // The exponent is clamped so that the branch `where` drops stays finite: its
        // gradient would otherwise be 0 * inf = NaN for large x.
        let smooth = self.clamp_max(20)?.exp()?.log1p()?;
        self.where_(&self.gt(20)?, &smooth)
    }

    /// GELU, `x * Phi(x)` with `Phi` the standard normal CDF, `0.5 * x * (1 + erf(x /
    /// sqrt(2)))` (torch's `gelu` with its default `approximate='none'`; halves computed in
    /// float32 as torch does).
    pub fn gelu(&self) -> Result<Tensor> {
        float_input(self, "gelu")?;
        if let Some(y) = in_float32(self, &[], |x, _| x.gelu()) {
            return y;
        }
        let phi = self
            .mul(std::f64::consts::FRAC_1_SQRT_2)?
            .erf()?
            .add(1.0)?
            .mul(0.5)?;
        self.mul(&phi)
    }

    /// `x * sigmoid(x)` (torch's `silu`, also called swish).
    pub fn silu(&self) -> Result<Tensor> {
        float_input(self, "silu")?;
        self.mul(&self.sigmoid()?)
    }

    /// Softmax along `dim` (each slice sums to 1), the exponential of [`Tensor::log_softmax`].
    pub fn softmax(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Softmax, "softmax", self, |x| x.softmax(dim)) {
            return r;
        }
        float_input(self, "softmax")?;
        if let Some(y) = in_float32(self, &[], |x, _| x.softmax(dim)) {
            return y;
        }
        Ok(crate::autograd::relabel(
            "softmax",
            self.log_softmax(dim)?.exp()?,
        ))
    }
}

/// `x @ weight.T + bias` (torch's `F.linear`, what `nn::Linear` computes): `x` `[..., in]`,
/// `weight` `[out, in]`, optional `bias` `[out]`; the result is `[..., out]`.
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if let Some(r) = autocast3(AmpOp::Linear, "linear", x, Some(weight), bias, |x, w, b| {
        linear(x, w.expect("the weight"), b)
    }) {
        return r;
    }
    let [out, width] = weight.shape()[..] else {
        return Err(Error::BadShape(format!(
            "linear: expected a weight [out_features, in_features], got shape {:?}",
            weight.shape()
        )));
    };
    let dims = x.shape();
    if dims.last() != Some(&width) {
        return Err(Error::BadShape(format!(
            "linear: expected input of shape [..., {width}] (the weight is [{out}, {width}]), got \
             {dims:?}"
        )));
    }
    if let Some(b) = bias {
        if b.shape() != [out] {
            return Err(Error::BadShape(format!(
                "linear: expected a bias of shape [{out}] (one per output feature), got {:?}",
                b.shape()
            )));
        }
    }
    let flat = if dims.len() > 2 {
        // The leading dimensions' product (not numel / width: a width of 0 is allowed, as in
        // torch, and gives the bias alone).
        let rows = dims[..dims.len() - 1].iter().product::<usize>();
        x.reshape((rows, width))?
    } else {
        x.clone()
    };
    let mut y = flat.matmul(&weight.t()?)?;
    if let Some(b) = bias {
        y = y.add(b)?;
    }
    if dims.len() > 2 {
        let mut shape = dims.to_vec();
        *shape.last_mut().expect("rank > 2") = out;
        y = y.reshape(shape)?;
    }
    Ok(y)
}

/// `x.softmax(dim)`.
pub fn softmax(x: &Tensor, dim: isize) -> Result<Tensor> {
    x.softmax(dim)
}

/// `x.leaky_relu(slope)`.
pub fn leaky_relu(x: &Tensor, slope: f64) -> Result<Tensor> {
    x.leaky_relu(slope)
}

/// `x.pdist(p)`: the p-norm distance between every pair of rows `i < j` of `[N, M]` `x`
/// (torch's `F.pdist`; its default p is 2).
pub fn pdist(x: &Tensor, p: f64) -> Result<Tensor> {
    x.pdist(p)
}

/// `x1.pairwise_distance(x2, p, eps, keepdim)`: the p-norm of each row of `x1 - x2 + eps`
/// (torch's `F.pairwise_distance`; its defaults are p 2, eps 1e-6, keepdim false).
pub fn pairwise_distance(
    x1: &Tensor,
    x2: &Tensor,
    p: f64,
    eps: f64,
    keepdim: bool,
) -> Result<Tensor> {
    x1.pairwise_distance(x2, p, eps, keepdim)
}

/// `x.softplus()`.
pub fn softplus(x: &Tensor) -> Result<Tensor> {
    x.softplus()
}

/// `x.gelu()`.
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    x.gelu()
}

/// `x.silu()`.
pub fn silu(x: &Tensor) -> Result<Tensor> {
    x.silu()
}

/// `x.log_softmax(dim)`.
pub fn log_softmax(x: &Tensor, dim: isize) -> Result<Tensor> {
    x.log_softmax(dim)
}

pub fn relu(x: &Tensor) -> Result<Tensor> {
    x.relu()
}

pub fn sigmoid(x: &Tensor) -> Result<Tensor> {
    x.sigmoid()
}

/// Mean cross-entropy between `logits` (`[N, C]` unnormalised scores; also `[C]`, or
/// `[N, C, d1, ...]` with targets `[N, d1, ...]`) and `targets`, the class index of each row
/// (int64), or class probabilities of the logits' shape, like torch's `F.cross_entropy` with
/// its defaults (targets of -100 are ignored; NaN for an empty batch).
/// [`cross_entropy_with`] takes torch's other arguments.
pub fn cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    cross_entropy_with(logits, targets, &ClassLossOptions::default())
}

/// `cross_entropy` with torch's `weight`, `ignore_index`, `label_smoothing` and `reduction`.
pub fn cross_entropy_with(
    logits: &Tensor,
    targets: &Tensor,
    opts: &ClassLossOptions,
) -> Result<Tensor> {
    if let Some(r) = autocast2(
        AmpOp::CrossEntropy,
        "cross_entropy",
        logits,
        targets,
        |x, y| cross_entropy_with(x, y, opts),
    ) {
        return r;
    }
    float_input(logits, "cross_entropy")?;
    let class_dim = if logits.rank() == 1 { 0 } else { 1 };
    let logp = logits.log_softmax(class_dim)?;
    // torch's cross_entropy is nll_loss of log_softmax, and its node is nll_loss's.
    let loss = class_loss(&logp, targets, opts, "cross_entropy", true)?;
    Ok(crate::autograd::relabel("nll_loss", loss))
}

pub(super) fn same_shape(a: &Tensor, b: &Tensor, op: &'static str) -> Result<()> {
    if a.shape() != b.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: a.shape().to_vec(),
            rhs: b.shape().to_vec(),
        });
    }
    Ok(())
}

/// Integer and bool targets as floats of the input's dtype, as torch's losses read them
/// (`1 - mask` would otherwise be refused, and an int64 target would not promote to f16).
pub(super) fn float_target<'a>(target: &'a Tensor, input: &Tensor) -> Result<Cow<'a, Tensor>> {
    Ok(if target.dtype().is_float() {
        Cow::Borrowed(target)
    } else {
        Cow::Owned(target.to_dtype(input.dtype())?)
    })
}

/// Mean squared error, `mean((input - target)^2)`; both of one shape. The two promote to
/// one dtype, which must be a float one (an integer input with float targets is fine, as in
/// torch).
pub fn mse_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    mse_loss_reduced(input, target, Reduction::Mean)
}

/// `mse_loss` with torch's `reduction` (`nn::MSELoss` calls it).
pub(crate) fn mse_loss_reduced(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor> {
    if let Some(r) = autocast2(AmpOp::MseLoss, "mse_loss", input, target, |x, y| {
        mse_loss_reduced(x, y, reduction)
    }) {
        return r;
    }
    let d = difference(input, target, "mse_loss")?;
    Ok(crate::autograd::relabel(
        "mse_loss",
        reduction.apply(d.mul(&d)?)?,
    ))
}

/// `input - target` for the element-wise losses: one shape, promoted to one dtype, which must
/// be a float one (an integer input with float targets is fine, as in torch).
pub(super) fn difference(input: &Tensor, target: &Tensor, op: &'static str) -> Result<Tensor> {
    same_shape(input, target, op)?;
    let dt = promote(input.dtype(), target.dtype());
    if !dt.is_float() {
        float_input(input, op)?;
    }
    // Both as `dt` first, so a bool operand never meets `-` (which refuses bools).
    input.to_dtype(dt)?.sub(&target.to_dtype(dt)?)
}

/// Mean binary cross-entropy of `sigmoid(logits)` against `targets` in [0, 1], computed as
/// `max(x, 0) - x*y + log(1 + exp(-|x|))`, which never takes the log of 0. Its gradient is
/// torch's closed form, `(sigmoid(x) - y) / n` (and `-x / n` for the targets): the composed
/// ops' subgradients at x = 0 (of max and |x|) would not add up to it.
pub fn binary_cross_entropy_with_logits(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    bce_with_logits_reduced(logits, targets, Reduction::Mean)
}

/// `binary_cross_entropy_with_logits` with torch's `reduction` (`nn::BCEWithLogitsLoss` calls
/// it): the closed-form gradient is recorded on the reduced value, scaled by `1/n` for a mean.
pub(crate) fn bce_with_logits_reduced(
    logits: &Tensor,
    targets: &Tensor,
    reduction: Reduction,
) -> Result<Tensor> {
    let name = "binary_cross_entropy_with_logits";
    if let Some(r) = autocast2(AmpOp::BceWithLogits, name, logits, targets, |x, y| {
        bce_with_logits_reduced(x, y, reduction)
    }) {
        return r;
    }
    same_shape(logits, targets, "binary_cross_entropy_with_logits")?;
    float_input(logits, "binary_cross_entropy_with_logits")?;
    let targets = float_target(targets, logits)?;
    let out = crate::autograd::no_grad(|| {
        let soft = logits.abs()?.neg()?.exp()?.add(1.0)?.log()?;
        reduction.apply(logits.relu()?.sub(&logits.mul(&*targets)?)?.add(&soft)?)
    })?;
    let n = logits.numel();
    let (xs, ys) = (Saved::new(logits), Saved::new(&targets));
    Ok(record(
        out,
        "binary_cross_entropy_with_logits",
        &[logits, &targets],
        move |g| {
            let (x, y) = (xs.get()?, ys.get()?);
            let g = reduction.gradient(g, n)?;
            let gx = x.sigmoid()?.sub(y)?.mul(&g)?;
            let gy = x.neg()?.mul(&g)?;
            Ok(vec![Some(gx), Some(gy)])
        },
    ))
}

/// Class indices as one-hot rows (torch's `one_hot`): int64 `labels` of any shape give an
/// int64 tensor `[*labels.shape, num_classes]` with a 1 at each label's place;
/// `num_classes = None` takes the largest label plus one.
pub fn one_hot(labels: &Tensor, num_classes: Option<usize>) -> Result<Tensor> {
    if labels.dtype() != DType::I64 {
        return Err(Error::Invalid(format!(
            "one_hot: the labels must be an int64 tensor, as in torch, got {} (shape {:?}); \
             convert with .to_dtype(DType::I64)",
            labels.dtype(),
            labels.shape()
        )));
    }
    let v = labels.to_vec::<i64>()?;
    if let Some(&bad) = v.iter().find(|&&l| l < 0) {
        return Err(Error::Invalid(format!(
            "one_hot: labels must not be negative, got {bad}"
        )));
    }
    let largest = v.iter().max().map_or(0, |&l| l as usize + 1);
    let classes = match num_classes {
        None if v.is_empty() => {
            return Err(Error::Invalid(
                "one_hot: cannot infer the number of classes of an empty tensor; pass \
                 Some(num_classes)"
                    .into(),
            ))
        }
        None => largest,
        Some(c) if c < largest => {
            return Err(Error::Invalid(format!(
                "one_hot: label {} is out of range for {c} classes",
                largest - 1
            )))
        }
        Some(c) => c,
    };
    let mut dims = labels.shape().to_vec();
    dims.push(classes);
    let n = checked_numel("one_hot", &dims)?;
    host_room(n, DType::I64)?;
    let mut out = vec![0i64; n];
    for (row, &l) in v.iter().enumerate() {
        out[row * classes + l as usize] = 1;
    }
    Tensor::from_vec(out, dims, Device::Cpu)?.to(labels.device())
}

/// `x` divided by its Euclidean norm along `dim`, the norm held at least `1e-12` (torch's
/// `normalize` with its defaults `p = 2`, `eps = 1e-12`): each line becomes a unit vector,
/// a zero line stays zero.
pub fn normalize(x: &Tensor, dim: isize) -> Result<Tensor> {
    float_input(x, "normalize")?;
    x.div(&x.norm_keepdim(dim)?.clamp_min(1e-12)?)
}

/// Cosine of the angle between `x1` and `x2` along `dim` (torch's `cosine_similarity`, eps
/// 1e-8): each divided by its norm (held at least eps), then the products summed. The two
/// broadcast against each other first, so `a.unsqueeze(1)` against `b.unsqueeze(0)` gives
/// every pair.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: isize) -> Result<Tensor> {
    cosine_similarity_eps(x1, x2, dim, 1e-8)
}

/// [`cosine_similarity`] with torch's `eps=` (each norm held at least `eps`).
pub fn cosine_similarity_eps(x1: &Tensor, x2: &Tensor, dim: isize, eps: f64) -> Result<Tensor> {
    if let Some(r) = autocast2(
        AmpOp::CosineSimilarity,
        "cosine_similarity",
        x1,
        x2,
        |a, b| cosine_similarity_eps(a, b, dim, eps),
    ) {
        return r;
    }
    float_input(x1, "cosine_similarity")?;
    float_input(x2, "cosine_similarity")?;
    let (a, b) = broadcast_pair(x1, x2, "cosine_similarity")?;
    let unit = |t: &Tensor| t.div(&t.norm_keepdim(dim)?.clamp_min(eps)?);
    unit(&a)?.mul(&unit(&b)?)?.sum_dim(dim)
}

/// Both tensors expanded to their broadcast shape (torch's rules: aligned from the right,
/// sizes equal or 1), or an error naming both shapes.
fn broadcast_pair(a: &Tensor, b: &Tensor, op: &'static str) -> Result<(Tensor, Tensor)> {
    let (da, db) = (a.shape(), b.shape());
    let rank = da.len().max(db.len());
    let size = |d: &[usize], i: usize| (i + d.len()).checked_sub(rank).map_or(1, |j| d[j]);
    let mut dims = Vec::with_capacity(rank);
    for i in 0..rank {
        let (x, y) = (size(da, i), size(db, i));
        if x != y && x != 1 && y != 1 {
            return Err(Error::ShapeMismatch {
                op,
                lhs: da.to_vec(),
                rhs: db.to_vec(),
            });
        }
        dims.push(if x == 1 { y } else { x });
    }
    Ok((a.expand_to(&dims)?, b.expand_to(&dims)?))
}

/// Zeroes each element with probability `p` and scales the rest by `1/(1-p)` while
/// `training`; the identity otherwise. The mask comes from the seeded generator
/// ([`crate::manual_seed`]), drawn on the host.
pub fn dropout(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::Invalid(format!(
            "dropout probability has to be between 0 and 1, got {p}"
        )));
    }
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    if p == 1.0 {
        return x.mul(0.0);
    }
    let u = Tensor::rand(x.shape(), Device::Cpu)?.to_vec::<f32>()?;
    let keep = (1.0 / (1.0 - p)) as f32;
    let mask: Vec<f32> = u
        .iter()
        .map(|&v| if (v as f64) < p { 0.0 } else { keep })
        .collect();
    let mask = Tensor::from_vec(mask, x.shape(), Device::Cpu)?
        .to_dtype(x.dtype())?
        .to(x.device())?;
    x.mul(&mask)
}

/// Whole channels zeroed with probability `p` while training, the rest scaled by
/// `1 / (1 - p)` (torch's `F.dropout2d`): one draw per sample and channel of `[N, C, H, W]`
/// (or per channel of `[C, H, W]`), so neighbouring pixels drop together.
pub fn dropout2d(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    channel_dropout(x, p, training, 2)
}

/// [`dropout2d`] for sequences, torch's `F.dropout1d`: one draw per sample and channel of
/// `[N, C, L]` (or per channel of `[C, L]`).
pub fn dropout1d(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    channel_dropout(x, p, training, 1)
}

/// [`dropout2d`] for volumes, torch's `F.dropout3d`: one draw per sample and channel of
/// `[N, C, D, H, W]` (or per channel of `[C, D, H, W]`).
pub fn dropout3d(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    channel_dropout(x, p, training, 3)
}

/// Channel dropout over inputs with `spatial` dimensions after the channels, batched or not.
fn channel_dropout(x: &Tensor, p: f64, training: bool, spatial: usize) -> Result<Tensor> {
    let op = format!("dropout{spatial}d");
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::Invalid(format!(
            "{op} probability has to be between 0 and 1, got {p}"
        )));
    }
    let rank = x.rank();
    if rank != spatial + 1 && rank != spatial + 2 {
        let dims = ["L", "H, W", "D, H, W"][spatial - 1];
        return Err(Error::BadShape(format!(
            "{op}: expected input [N, C, {dims}] or [C, {dims}], got {:?}",
            x.shape()
        )));
    }
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    let mut mask_shape = x.shape()[..rank - spatial].to_vec();
    mask_shape.extend(std::iter::repeat_n(1, spatial));
    let ones = Tensor::ones(mask_shape, Device::Cpu)?;
    let mask = dropout(&ones, p, true)?
        .to_dtype(x.dtype())?
        .to(x.device())?;
    x.mul(&mask)
}

/// The rows of `weight` (`[num_embeddings, embedding_dim]`) that the integer `input` names,
/// shaped `[*input.shape, embedding_dim]` (torch's `embedding`); the gradient adds into the
/// rows that were read.
pub fn embedding(input: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let [num, dim] = match weight.shape()[..] {
        [num, dim] => [num, dim],
        _ => {
            return Err(Error::BadShape(format!(
                "embedding: expected a 2-D weight [num_embeddings, embedding_dim], got shape {:?}",
                weight.shape()
            )))
        }
    };
    if !matches!(input.dtype(), DType::I64 | DType::I32) {
        return Err(Error::Invalid(format!(
            "embedding: the input must hold int64 or int32 indices, got {} (shape {:?}); \
             convert with .to_dtype(DType::I64)",
            input.dtype(),
            input.shape()
        )));
    }
    let rows = weight
        .index_select(0, &input.reshape(vec![input.numel()])?)
        .map_err(|e| match e {
            Error::BadShape(m) => Error::BadShape(format!(
                "embedding: {m}: an embedding of {num} rows takes indices 0..{num}"
            )),
            e => e,
        })?;
    let mut dims = input.shape().to_vec();
    dims.push(dim);
    rows.reshape(dims)
}
