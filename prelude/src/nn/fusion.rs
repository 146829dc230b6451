//! torch's `nn.utils.fusion`: a convolution or linear layer followed by a batch norm in eval
//! mode folded into one layer, `w' = w · γ / sqrt(var + eps)` per output channel and `b' =
//! (b - mean) · γ / sqrt(var + eps) + β`, which gives the pair's output in one product (an
//! inference-time speed-up).

use super::conv_layers::{Conv, ConvSize, ConvTranspose};
use super::running_norm::BatchNorm;
use super::{Linear, Module, Parameter};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A fused weight and bias as torch's `Parameter`s: learnable when the originals were.
fn learned(t: Tensor, like: &Tensor) -> Result<Parameter> {
    let p = Parameter::new(t)?;
    p.requires_grad_(like.requires_grad())?;
    Ok(p)
}

/// torch's `fuse_conv_bn_weights`: the weight and bias of a convolution (`[out, in/g, k..]`,
/// or `[in, out/g, k..]` with `transpose`) that computes the convolution then a batch norm
/// with these statistics and (when given) affine parameters; a missing bias is 0, a missing
/// norm weight 1 and bias 0. Each keeps its dtype.
#[allow(clippy::too_many_arguments)]
pub fn fuse_conv_bn_weights(
    conv_w: &Tensor,
    conv_b: Option<&Tensor>,
    bn_rm: &Tensor,
    bn_rv: &Tensor,
    bn_eps: f64,
    bn_w: Option<&Tensor>,
    bn_b: Option<&Tensor>,
    transpose: bool,
) -> Result<(Parameter, Parameter)> {
    no_grad(|| {
        let out_axis = usize::from(transpose);
        let channels = conv_w.shape().get(out_axis).copied().unwrap_or(0);
        if conv_w.rank() < 2 || bn_rm.shape() != [channels] || bn_rv.shape() != [channels] {
            return Err(Error::BadShape(format!(
                "fuse_conv_bn_weights: the norm's statistics ({:?}, {:?}) must have one value per \
                 output channel of the weight {:?} ({channels}, its dimension {out_axis})",
                bn_rm.shape(),
                bn_rv.shape(),
                conv_w.shape()
            )));
        }
        let scale = bn_rv.add(bn_eps)?.rsqrt()?;
        let scale = match bn_w {
            Some(w) => w.mul(&scale)?,
            None => scale,
        };
        let mut shape = vec![1; conv_w.rank()];
        shape[out_axis] = channels;
        let w = conv_w
            .mul(&scale.reshape(shape)?)?
            .to_dtype(conv_w.dtype())?;
        let b = match conv_b {
            Some(b) => b.sub(bn_rm)?,
            None => bn_rm.neg()?,
        };
        let mut b = b.mul(&scale)?;
        if let Some(beta) = bn_b {
            b = b.add(beta)?;
        }
        let b = b.to_dtype(conv_b.map_or(conv_w.dtype(), Tensor::dtype))?;
        Ok((learned(w, conv_w)?, learned(b, conv_b.unwrap_or(conv_w))?))
    })
}

/// torch's `fuse_linear_bn_weights`: a linear layer's weight `[out, in]` and bias followed
/// by a batch norm over its `out` features (or one feature, broadcast), folded.
pub fn fuse_linear_bn_weights(
    linear_w: &Tensor,
    linear_b: Option<&Tensor>,
    bn_rm: &Tensor,
    bn_rv: &Tensor,
    bn_eps: f64,
    bn_w: &Tensor,
    bn_b: &Tensor,
) -> Result<(Parameter, Parameter)> {
    no_grad(|| {
        let out = linear_w.shape().first().copied().unwrap_or(0);
        let c = bn_rm.numel();
        if linear_w.rank() != 2 || !(c == out || c == 1) {
            return Err(Error::BadShape(format!(
                "fuse_linear_bn_weights: the norm's {c} features must be the linear layer's {out} \
                 outputs (or 1), weight {:?}",
                linear_w.shape()
            )));
        }
        let scale = bn_w.mul(&bn_rv.add(bn_eps)?.rsqrt()?)?;
        let w = linear_w.mul(&scale.unsqueeze(-1)?)?;
        let b = match linear_b {
            Some(b) => b.sub(bn_rm)?,
            None => bn_rm.neg()?,
        };
        let b = b.mul(&scale)?.add(bn_b)?;
        Ok((
            learned(w, linear_w)?,
            learned(b, linear_b.unwrap_or(linear_w))?,
        ))
    })
}

/// The norm's statistics and affine parameters, once it is known to be in eval mode with
/// running statistics (torch asserts both).
fn eval_statistics(
    op: &str,
    bn: &BatchNorm,
) -> Result<(Tensor, Tensor, Option<Tensor>, Option<Tensor>)> {
    if bn.is_training() {
        return Err(Error::Invalid(format!(
            "{op}: fusion is for eval mode, and {} is training; call .eval() on it first",
            bn.describe()
        )));
    }
    match (&bn.running_mean, &bn.running_var) {
        (Some(m), Some(v)) => Ok((
            m.tensor(),
            v.tensor(),
            bn.weight.as_ref().map(Parameter::tensor),
            bn.bias.as_ref().map(Parameter::tensor),
        )),
        _ => Err(Error::Invalid(format!(
            "{op}: {} keeps no running statistics to fold in",
            bn.describe()
        ))),
    }
}

/// A convolution layer a batch norm can be folded into: `Conv` and `ConvTranspose`.
pub trait FuseConv: Module + Sized {
    /// Whether the weight's output channels are its second dimension.
    const TRANSPOSED: bool;
    fn weight_and_bias(&self) -> (Tensor, Option<Tensor>);
    fn with_fused(&self, weight: Parameter, bias: Parameter) -> Self;
}

impl<S: ConvSize> FuseConv for Conv<S> {
    const TRANSPOSED: bool = false;
    fn weight_and_bias(&self) -> (Tensor, Option<Tensor>) {
        (
            self.weight.tensor(),
            self.bias.as_ref().map(Parameter::tensor),
        )
    }
    fn with_fused(&self, weight: Parameter, bias: Parameter) -> Self {
        self.with_parameters(weight, bias)
    }
}

impl<S: ConvSize> FuseConv for ConvTranspose<S> {
    const TRANSPOSED: bool = true;
    fn weight_and_bias(&self) -> (Tensor, Option<Tensor>) {
        (
            self.weight.tensor(),
            self.bias.as_ref().map(Parameter::tensor),
        )
    }
    fn with_fused(&self, weight: Parameter, bias: Parameter) -> Self {
        self.with_parameters(weight, bias)
    }
}

/// torch's `fuse_conv_bn_eval(conv, bn)`: a new convolution (with a bias) whose output is
/// `bn(conv(x))` for `bn` in eval mode; a transposed convolution folds as torch's
/// `transpose=True`. The originals are left as they are.
pub fn fuse_conv_bn_eval<C: FuseConv>(conv: &C, bn: &BatchNorm) -> Result<C> {
    let (rm, rv, w, b) = eval_statistics("fuse_conv_bn_eval", bn)?;
    let (cw, cb) = conv.weight_and_bias();
    let (weight, bias) = fuse_conv_bn_weights(
        &cw,
        cb.as_ref(),
        &rm,
        &rv,
        bn.eps_of(),
        w.as_ref(),
        b.as_ref(),
        C::TRANSPOSED,
    )?;
    Ok(conv.with_fused(weight, bias))
}

/// torch's `fuse_linear_bn_eval(linear, bn)`: a new `Linear` (with a bias) whose output is
/// `bn(linear(x))` for `bn` (affine) in eval mode.
pub fn fuse_linear_bn_eval(linear: &Linear, bn: &BatchNorm) -> Result<Linear> {
    let (rm, rv, w, b) = eval_statistics("fuse_linear_bn_eval", bn)?;
    let (Some(w), Some(b)) = (w, b) else {
        return Err(Error::Invalid(format!(
            "fuse_linear_bn_eval: {} has no weight and bias (affine=False)",
            bn.describe()
        )));
    };
    let lb = linear.bias.as_ref().map(Parameter::tensor);
    let (weight, bias) = fuse_linear_bn_weights(
        &linear.weight.tensor(),
        lb.as_ref(),
        &rm,
        &rv,
        bn.eps_of(),
        &w,
        &b,
    )?;
    Ok(Linear {
        weight,
        bias: Some(bias),
        in_features: linear.in_features,
        out_features: linear.out_features,
    })
}
