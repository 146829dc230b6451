//! Normalisation layers: `BatchNorm1d`/`2d`/`3d` (per channel over the batch, with running
//! statistics for eval mode), `LayerNorm` (per sample over its last dimensions), `GroupNorm`
//! and `InstanceNorm*`, torch's definitions, built from the tensor ops so they run on every
//! device; the normalisation itself carries torch's closed-form gradient (`standardized`).

use super::functional::{float_input, in_float32};
use super::{py_float, same_device, weight_and_bias, Module, Parameter};
use crate::autograd::{no_grad, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast3, unlisted, AmpOp};
use crate::tensor::{DType, Shape, Tensor};

/// `x` summed over every dimension in `dims` (ascending), each kept with size 1.
fn sum_keep(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    dims.iter()
        .rev()
        .try_fold(x.clone(), |acc, &d| acc.sum_keepdim(d as isize))
}

/// Mean and biased variance over `dims` (kept as size 1), and the element count behind each.
fn moments(x: &Tensor, dims: &[usize]) -> Result<(Tensor, Tensor, usize)> {
    let n: usize = dims.iter().map(|&d| x.shape()[d]).product();
    let mean = sum_keep(x, dims)?.div(n as f64)?;
    let centred = x.sub(&mean)?;
    let var = sum_keep(&centred.square()?, dims)?.div(n as f64)?;
    Ok((mean, var, n))
}

/// `(x - mean) / sqrt(var + eps)` over `dims` (mean and biased variance of `x` there), with
/// torch's closed-form gradient, `(g - mean(g) - x̂ mean(g x̂)) / sqrt(var + eps)`, instead of
/// autograd's through the mean and variance: the same value, but rounded the way torch's
/// norm kernels round it (the composed chain cancels large terms, several units in the last
/// place off on small elements). Also gives the mean, variance and count behind them.
fn standardized(
    x: &Tensor,
    dims: &[usize],
    eps: f64,
    name: &'static str,
) -> Result<(Tensor, Tensor, Tensor, usize)> {
    let (mean, var, n) = no_grad(|| moments(x, dims))?;
    let (xhat, std) = no_grad(|| -> Result<(Tensor, Tensor)> {
        let std = var.add(eps)?.sqrt()?;
        Ok((x.sub(&mean)?.div(&std)?, std))
    })?;
    let (saved, std_saved) = (Saved::new(&xhat), Saved::new(&std));
    let dims = dims.to_vec();
    let out = record(xhat, name, &[x], move |g| {
        let (xhat, std) = (saved.get()?, std_saved.get()?);
        let mean_of = |t: &Tensor| sum_keep(t, &dims)?.div(n as f64);
        let gx = g
            .sub(&mean_of(g)?)?
            .sub(&xhat.mul(&mean_of(&g.mul(xhat)?)?)?)?
            .div(std)?;
        Ok(vec![Some(gx)])
    });
    Ok((out, mean, var, n))
}

/// `[1, C, 1, ..]` for a channel vector against an input of `rank` dimensions.
fn per_channel(t: &Tensor, rank: usize) -> Result<Tensor> {
    let mut dims = vec![1; rank];
    dims[1] = t.numel();
    t.reshape(dims)
}

/// Batch normalisation as torch's `F.batch_norm`: `x` is `[N, C, ...]`; in training the
/// batch's statistics per channel normalise it (and, when given, the running statistics
/// move towards them by `momentum`, the variance unbiased); otherwise the running ones do.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    // One op in torch, on no autocast list: its sums keep the input's dtype.
    unlisted(x, || {
        batch_norm_body(
            x,
            running_mean,
            running_var,
            weight,
            bias,
            training,
            momentum,
            eps,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn batch_norm_body(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    if x.rank() < 2 {
        return Err(Error::BadShape(format!(
            "batch_norm: expected an input [N, C, ...], got shape {:?}",
            x.shape()
        )));
    }
    let c = x.shape()[1];
    for (what, t) in [
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ] {
        if let Some(t) = t.filter(|t| t.shape() != [c]) {
            return Err(Error::BadShape(format!(
                "batch_norm: {what} has shape {:?}, the input has {c} channels (shape {:?})",
                t.shape(),
                x.shape()
            )));
        }
    }
    if let Some(y) = in_float32(x, &[running_mean, running_var, weight, bias], |x, t| {
        let [rm, rv, w, b] = [&t[0], &t[1], &t[2], &t[3]].map(Option::as_ref);
        let y = batch_norm(x, rm, rv, w, b, training, momentum, eps)?;
        // The running statistics moved in the float32 copies: back into the caller's.
        for (mine, theirs) in [(&t[0], running_mean), (&t[1], running_var)] {
            if let (Some(m), Some(t)) = (mine, theirs.filter(|_| training)) {
                no_grad(|| t.copy_(&m.to_dtype(t.dtype())?))?;
            }
        }
        Ok(y)
    }) {
        return y;
    }
    let dims: Vec<usize> = (0..x.rank()).filter(|&d| d != 1).collect();
    let rank = x.rank();
    let (standard, mean, var) = if training {
        let (standard, mean, var, n) = standardized(x, &dims, eps, "native_batch_norm")?;
        if n <= 1 {
            return Err(Error::Invalid(format!(
                "batch_norm: expected more than 1 value per channel when training, got input \
                 shape {:?}",
                x.shape()
            )));
        }
        if let (Some(rm), Some(rv)) = (running_mean, running_var) {
            no_grad(|| -> Result<()> {
                let unbiased = var.mul(n as f64 / (n as f64 - 1.0))?;
                let new_mean = rm
                    .mul(1.0 - momentum)?
                    .add(&mean.reshape([c])?.mul(momentum)?)?;
                let new_var = rv
                    .mul(1.0 - momentum)?
                    .add(&unbiased.reshape([c])?.mul(momentum)?)?;
                rm.copy_(&new_mean.to_dtype(rm.dtype())?)?;
                rv.copy_(&new_var.to_dtype(rv.dtype())?)
            })?;
        }
        (Some(standard), mean, var)
    } else {
        match (running_mean, running_var) {
            (Some(rm), Some(rv)) => (None, per_channel(rm, rank)?, per_channel(rv, rank)?),
            _ => {
                return Err(Error::Invalid(
                    "batch_norm: eval mode needs the running mean and variance".into(),
                ))
            }
        }
    };
    // Eval mode's statistics are constants: the composed chain's gradient is exact there.
    let mut y = match standard {
        Some(s) => s,
        None => x.sub(&mean)?.div(&var.add(eps)?.sqrt()?)?,
    };
    if let Some(w) = weight {
        y = y.mul(&per_channel(w, rank)?)?;
    }
    if let Some(b) = bias {
        y = y.add(&per_channel(b, rank)?)?;
    }
    Ok(y)
}

/// Layer normalisation as torch's `F.layer_norm`: each sample normalised over its last
/// `normalized_shape.len()` dimensions (which must equal `normalized_shape`), then scaled by
/// `weight` and shifted by `bias` of that shape.
pub fn layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if let Some(r) = autocast3(
        AmpOp::LayerNorm,
        "layer_norm",
        x,
        weight,
        bias,
        |x, w, b| layer_norm(x, normalized_shape, w, b, eps),
    ) {
        return r;
    }
    let k = normalized_shape.len();
    if k == 0 || x.rank() < k || x.shape()[x.rank() - k..] != *normalized_shape {
        return Err(Error::BadShape(format!(
            "layer_norm: the input's last dimensions must be {normalized_shape:?}, got shape {:?}",
            x.shape()
        )));
    }
    for (what, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t.filter(|t| t.shape() != normalized_shape) {
            return Err(Error::BadShape(format!(
                "layer_norm: {what} has shape {:?}, expected {normalized_shape:?}",
                t.shape()
            )));
        }
    }
    if let Some(y) = in_float32(x, &[weight, bias], |x, t| {
        layer_norm(x, normalized_shape, t[0].as_ref(), t[1].as_ref(), eps)
    }) {
        return y;
    }
    let dims: Vec<usize> = (x.rank() - k..x.rank()).collect();
    let (mut y, ..) = standardized(x, &dims, eps, "native_layer_norm")?;
    if let Some(w) = weight {
        y = y.mul(w)?;
    }
    if let Some(b) = bias {
        y = y.add(b)?;
    }
    Ok(y)
}

/// A normalisation layer's learned affine transform of `shape`: weight ones, bias zeros, as
/// torch starts them.
pub(super) fn affine(shape: Vec<usize>) -> (Parameter, Parameter) {
    let t = |v: f32| Tensor::full(shape.clone(), v, crate::Device::Cpu).expect("on the CPU");
    let learned = |t: Tensor| Parameter::new(t).expect("float32 can require grad");
    (learned(t(1.0)), learned(t(0.0)))
}

/// torch's `nn.LayerNorm(normalized_shape)`: each sample normalised over its last
/// dimensions, with learned `weight` (ones) and `bias` (zeros) of that shape (eps 1e-5).
pub struct LayerNorm {
    shape: Vec<usize>,
    pub weight: Parameter,
    pub bias: Parameter,
    eps: f64,
}

impl LayerNorm {
    pub fn new(normalized_shape: impl Into<Shape>) -> LayerNorm {
        let shape = normalized_shape.into().0;
        let (weight, bias) = affine(shape.clone());
        LayerNorm {
            weight,
            bias,
            shape,
            eps: 1e-5,
        }
    }

    /// Added to the variance before the square root (default 1e-5).
    pub fn eps(mut self, eps: f64) -> LayerNorm {
        self.eps = eps;
        self
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        same_device(self, &self.weight, x)?;
        layer_norm(
            x,
            &self.shape,
            Some(&self.weight.tensor()),
            Some(&self.bias.tensor()),
            self.eps,
        )
    }
    fn parameters(&self) -> Vec<Parameter> {
        vec![self.weight.clone(), self.bias.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        weight_and_bias(&self.weight, &Some(self.bias.clone()))
    }
    fn describe(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        let trail = if dims.len() == 1 { "," } else { "" };
        format!(
            "LayerNorm(({}{trail}), eps={}, elementwise_affine=True)",
            dims.join(", "),
            py_float(self.eps)
        )
    }
}

/// Group normalisation as torch's `F.group_norm`: `x` `[N, C, ...]`, its channels split into
/// `num_groups` groups, each sample's group normalised over its channels and positions
/// (biased variance), then the optional per-channel `weight` and `bias` `[C]`. Independent of
/// the batch size, unlike batch norm: what diffusion U-Nets use.
pub fn group_norm(
    x: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if let Some(r) = autocast3(
        AmpOp::GroupNorm,
        "group_norm",
        x,
        weight,
        bias,
        |x, w, b| group_norm(x, num_groups, w, b, eps),
    ) {
        return r;
    }
    float_input(x, "group_norm")?;
    if x.rank() < 2 {
        return Err(Error::BadShape(format!(
            "group_norm: expected an input [N, C, ...], got shape {:?}",
            x.shape()
        )));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    if num_groups == 0 || c % num_groups != 0 {
        return Err(Error::Invalid(format!(
            "group_norm: the {c} channels must split into num_groups ({num_groups}) equal groups"
        )));
    }
    for (what, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t.filter(|t| t.shape() != [c]) {
            return Err(Error::BadShape(format!(
                "group_norm: {what} has shape {:?}, expected [{c}] (one per channel)",
                t.shape()
            )));
        }
    }
    if let Some(y) = in_float32(x, &[weight, bias], |x, t| {
        group_norm(x, num_groups, t[0].as_ref(), t[1].as_ref(), eps)
    }) {
        return y;
    }
    let per_group = x.numel() / (n * num_groups).max(1);
    let grouped = x.reshape(vec![n, num_groups, per_group])?;
    let (standard, ..) = standardized(&grouped, &[2], eps, "native_group_norm")?;
    let mut y = standard.reshape(x.shape().to_vec())?;
    if let Some(w) = weight {
        y = y.mul(&per_channel(w, x.rank())?)?;
    }
    if let Some(b) = bias {
        y = y.add(&per_channel(b, x.rank())?)?;
    }
    Ok(y)
}

/// torch's `nn.GroupNorm(num_groups, num_channels)`: learned per-channel `weight` (ones) and
/// `bias` (zeros), eps 1e-5.
pub struct GroupNorm {
    groups: usize,
    channels: usize,
    pub weight: Parameter,
    pub bias: Parameter,
    eps: f64,
}

impl GroupNorm {
    pub fn new(num_groups: usize, num_channels: usize) -> GroupNorm {
        let (weight, bias) = affine(vec![num_channels]);
        GroupNorm {
            groups: num_groups,
            channels: num_channels,
            weight,
            bias,
            eps: 1e-5,
        }
    }

    /// Added to the variance before the square root (default 1e-5).
    pub fn eps(mut self, eps: f64) -> GroupNorm {
        self.eps = eps;
        self
    }
}

impl Module for GroupNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.rank() < 2 || x.shape()[1] != self.channels {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [N, {}, ...], got {:?}",
                self.describe(),
                self.channels,
                x.shape()
            )));
        }
        same_device(self, &self.weight, x)?;
        group_norm(
            x,
            self.groups,
            Some(&self.weight.tensor()),
            Some(&self.bias.tensor()),
            self.eps,
        )
    }
    fn parameters(&self) -> Vec<Parameter> {
        vec![self.weight.clone(), self.bias.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        weight_and_bias(&self.weight, &Some(self.bias.clone()))
    }
    fn describe(&self) -> String {
        format!(
            "GroupNorm({}, {}, eps={}, affine=True)",
            self.groups,
            self.channels,
            py_float(self.eps)
        )
    }
}

/// Each channel of each sample normalised over its own positions (torch's
/// `F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
/// momentum, eps)`): `x` is `[N, C, ...]`. With `use_input_stats` (torch's default) each
/// instance's own statistics normalise it, and the running ones, when given, move by
/// `momentum` towards their mean over the batch (the variance unbiased); without, the
/// running statistics normalise every instance, as `batch_norm` in eval mode. Then an
/// optional per-channel scale and shift.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    const OP: &str = "instance_norm";
    if x.rank() < 3 {
        return Err(Error::BadShape(format!(
            "{OP}: expected input [N, C, ...] with positions to normalise over, got {:?}",
            x.shape()
        )));
    }
    let c = x.shape()[1];
    for (what, t) in [("running_mean", running_mean), ("running_var", running_var)] {
        if let Some(t) = t.filter(|t| t.shape() != [c]) {
            return Err(Error::BadShape(format!(
                "{OP}: {what} has shape {:?}, the input has {c} channels (shape {:?})",
                t.shape(),
                x.shape()
            )));
        }
    }
    if !use_input_stats {
        return match (running_mean, running_var) {
            (Some(_), Some(_)) => batch_norm(
                x,
                running_mean,
                running_var,
                weight,
                bias,
                false,
                momentum,
                eps,
            ),
            _ => Err(Error::Invalid(format!(
                "{OP}: use_input_stats=false needs the running mean and variance"
            ))),
        };
    }
    let positions: usize = x.shape()[2..].iter().product();
    if positions <= 1 {
        return Err(Error::Invalid(format!(
            "{OP}: expected more than 1 spatial element when training, got input shape {:?}",
            x.shape()
        )));
    }
    if let (Some(rm), Some(rv)) = (running_mean, running_var) {
        no_grad(|| -> Result<()> {
            // Each instance's statistics, in float32 at least, averaged over the batch.
            let wide = match x.dtype() {
                DType::F16 | DType::BF16 => DType::F32,
                d => d,
            };
            let flat = x
                .detach()
                .to_dtype(wide)?
                .reshape([x.shape()[0], c, positions])?;
            let (mean, var, n) = moments(&flat, &[2])?;
            let unbiased = var.mul(n as f64 / (n as f64 - 1.0))?;
            for (run, stat) in [(rm, mean), (rv, unbiased)] {
                let batch = stat.reshape([x.shape()[0], c])?.mean_dim(0)?;
                let new = run
                    .to_dtype(wide)?
                    .mul(1.0 - momentum)?
                    .add(&batch.mul(momentum)?)?;
                run.copy_(&new.to_dtype(run.dtype())?)?;
            }
            Ok(())
        })?;
    }
    group_norm(x, c, weight, bias, eps)
}
