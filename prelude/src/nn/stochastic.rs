//! torch's activations and dropouts that draw random numbers while training: `F.rrelu`
//! (a random leak per element), `F.alpha_dropout` and `F.feature_alpha_dropout` (dropout for
//! SELU networks, keeping the mean and variance), `F.gumbel_softmax` (a differentiable
//! sample of a category), and the layers `RReLU`, `AlphaDropout`, `FeatureAlphaDropout`.
//! The draws come from the seeded generator (`manual_seed`), on the host.

use super::functional::{float_input, one_hot};
use super::{py_float, Module, SHAPE_PASS};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::Device;
use std::cell::Cell;

/// SELU's negative saturation, `-scale * alpha` (torch's `alpha_dropout` constant).
const SELU_SATURATION: f64 = 1.758_099_340_847_376_6;

/// Uniform draws in `[0, 1)` of `x`'s dtype on `x`'s device, in `shape`.
fn uniform(x: &Tensor, shape: Vec<usize>) -> Result<Tensor> {
    Tensor::rand(shape, Device::Cpu)?
        .to_dtype(x.dtype())?
        .to(x.device())
}

/// Randomised leaky ReLU (torch's `F.rrelu(x, lower, upper, training)`): while training each
/// element at or below 0 is multiplied by its own slope drawn uniformly from `[lower,
/// upper)`; otherwise by their mean, as `leaky_relu`. torch's defaults are 1/8 and 1/3.
pub fn rrelu(x: &Tensor, lower: f64, upper: f64, training: bool) -> Result<Tensor> {
    float_input(x, "rrelu")?;
    if lower > upper || lower.is_nan() || upper.is_nan() {
        return Err(Error::Invalid(format!(
            "rrelu: lower bound {lower} must not exceed the upper bound {upper}"
        )));
    }
    if !training {
        return x.leaky_relu((lower + upper) / 2.0);
    }
    let slopes = uniform(x, x.shape().to_vec())?
        .mul(upper - lower)?
        .add(lower)?;
    x.where_(&x.gt(0)?, &x.mul(&slopes)?)
}

/// One draw of which elements to keep, `1` with probability `1 - p`, in `mask_shape`.
fn keep_mask(x: &Tensor, p: f64, mask_shape: Vec<usize>) -> Result<Tensor> {
    uniform(x, mask_shape)?.ge(p)?.to_dtype(x.dtype())
}

/// Alpha dropout (torch's `F.alpha_dropout`): while training each element is set with
/// probability `p` to SELU's negative saturation, then all are scaled and shifted so that
/// inputs of mean 0 and variance 1 keep them (Klambauer et al.); otherwise `x` itself.
pub fn alpha_dropout(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    alpha_dropout_with(x, p, training, "alpha_dropout", false)
}

/// [`alpha_dropout`] of whole channels (torch's `F.feature_alpha_dropout`): one draw per
/// sample and channel of `[N, C, ...]`, as `dropout2d`'s.
pub fn feature_alpha_dropout(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    alpha_dropout_with(x, p, training, "feature_alpha_dropout", true)
}

fn alpha_dropout_with(
    x: &Tensor,
    p: f64,
    training: bool,
    op: &str,
    per_channel: bool,
) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::Invalid(format!(
            "{op}: dropout probability has to be between 0 and 1, but got {p}"
        )));
    }
    float_input(x, op)?;
    if per_channel && x.rank() < 2 {
        return Err(Error::BadShape(format!(
            "{op}: expected input [N, C, ...] with at least 2 dimensions, got {:?}",
            x.shape()
        )));
    }
    if !training || p == 0.0 || x.numel() == 0 {
        return Ok(x.clone());
    }
    if p == 1.0 {
        // torch's formula divides by zero there; every element is dropped.
        return x.mul(0.0);
    }
    let mask_shape = if per_channel {
        let mut s = x.shape()[..2].to_vec();
        s.extend(std::iter::repeat_n(1, x.rank() - 2));
        s
    } else {
        x.shape().to_vec()
    };
    let keep = keep_mask(x, p, mask_shape)?;
    let a = 1.0 / ((SELU_SATURATION * SELU_SATURATION * p + 1.0) * (1.0 - p)).sqrt();
    // torch's: x * (keep * a) + (keep - 1) * alpha * a + alpha * a * p.
    let b = keep
        .sub(1.0)?
        .mul(SELU_SATURATION * a)?
        .add(SELU_SATURATION * a * p)?;
    x.mul(&keep.mul(a)?)?.add(&b)
}

/// A sample from the Gumbel-softmax distribution over `dim` (torch's `F.gumbel_softmax(
/// logits, tau, hard, dim)`): `softmax((logits + g) / tau)` with `g` Gumbel noise, so the
/// result is a soft one-hot whose gradient reaches the logits; with `hard` it is the one-hot
/// of its argmax in the forward pass and the soft sample's gradient in the backward
/// (the straight-through estimator).
pub fn gumbel_softmax(logits: &Tensor, tau: f64, hard: bool, dim: isize) -> Result<Tensor> {
    float_input(logits, "gumbel_softmax")?;
    if tau.is_nan() || tau <= 0.0 {
        return Err(Error::Invalid(format!(
            "gumbel_softmax: the temperature tau must be positive, got {tau}"
        )));
    }
    // -log(E) with E ~ Exp(1): E = -log(1 - U), kept above 0 so no noise is infinite.
    let gumbels = no_grad(|| {
        Tensor::rand(logits.shape().to_vec(), Device::Cpu)?
            .neg()?
            .add(1.0)?
            .log()?
            .neg()?
            .clamp_min(1e-30)?
            .log()?
            .neg()?
            .to_dtype(logits.dtype())?
            .to(logits.device())
    })?;
    let soft = logits.add(&gumbels)?.div(tau)?.softmax(dim)?;
    if !hard {
        return Ok(soft);
    }
    let rank = soft.rank().max(1) as isize;
    let d = if dim < 0 { dim + rank } else { dim };
    let classes = soft.shape().get(d as usize).copied().unwrap_or(1);
    let index = soft.argmax_dim(d)?;
    // one_hot puts the classes last: moved back to `dim`.
    let hot = one_hot(&index, Some(classes))?
        .to_dtype(soft.dtype())?
        .movedim(-1, d)?;
    hot.sub(&soft.detach())?.add(&soft)
}

/// torch's `nn.RReLU(lower=1/8, upper=1/3)`: random slopes while training, their mean in
/// `eval()`.
pub struct RReLU {
    lower: f64,
    upper: f64,
    training: bool,
}

impl RReLU {
    pub fn new(lower: f64, upper: f64) -> RReLU {
        RReLU {
            lower,
            upper,
            training: true,
        }
    }
}

impl Default for RReLU {
    fn default() -> RReLU {
        RReLU::new(1.0 / 8.0, 1.0 / 3.0)
    }
}

impl Module for RReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let training = self.training && !SHAPE_PASS.with(Cell::get);
        rrelu(x, self.lower, self.upper, training)
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!(
            "RReLU(lower={}, upper={})",
            py_float(self.lower),
            py_float(self.upper)
        )
    }
}

/// A dropout layer of probability `p`: active while training, nothing in `eval()`.
macro_rules! dropout_layer {
    ($(#[$doc:meta])* $name:ident => $f:ident) => {
        $(#[$doc])*
        pub struct $name {
            p: f64,
            training: bool,
        }

        impl $name {
            pub fn new(p: f64) -> $name {
                $name { p, training: true }
            }
        }

        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                let training = self.training && !SHAPE_PASS.with(Cell::get);
                $f(x, self.p, training)
            }
            fn set_training(&mut self, training: bool) {
                self.training = training;
            }
            fn describe(&self) -> String {
                format!(concat!(stringify!($name), "(p={}, inplace=False)"), py_float(self.p))
            }
        }
    };
}

dropout_layer!(
    /// torch's `nn.AlphaDropout(p)` (`F::alpha_dropout`), for SELU networks.
    AlphaDropout => alpha_dropout
);
dropout_layer!(
    /// torch's `nn.FeatureAlphaDropout(p)` (`F::feature_alpha_dropout`): whole channels.
    FeatureAlphaDropout => feature_alpha_dropout
);
