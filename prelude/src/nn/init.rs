//! torch's `nn.init`: fill a weight in place with values from a distribution, scaled by its
//! fan-in and fan-out as Xavier (Glorot) and Kaiming (He) initialisation prescribe. Each
//! takes a [`Parameter`] or a [`Tensor`] and writes through it without recording a gradient
//! (as torch's run under `no_grad`), on the tensor's own device and in its dtype; the values
//! come from the seeded generator (`manual_seed`), so a seeded run repeats.

use super::Parameter;
use crate::autograd::no_grad;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// What the init functions write into: a model's [`Parameter`] or a plain [`Tensor`].
pub trait InitTarget {
    /// The tensor to write through (it shares its storage with the target).
    fn target(&self) -> Tensor;
}

impl InitTarget for Tensor {
    fn target(&self) -> Tensor {
        self.clone()
    }
}

impl InitTarget for Parameter {
    fn target(&self) -> Tensor {
        self.tensor()
    }
}

/// Which fan Kaiming initialisation keeps the variance of (torch's `mode`): `FanIn` the
/// forward pass's, `FanOut` the backward pass's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    FanIn,
    FanOut,
}

/// The gain torch recommends for a nonlinearity (`calculate_gain`): 1 for `linear`,
/// `conv1d`/`conv2d`/`conv3d` and `sigmoid`, 5/3 for `tanh`, √2 for `relu`, √(2 / (1 +
/// slope²)) for `leaky_relu` (slope `param`, 0.01 when `None`), 3/4 for `selu`.
pub fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> Result<f64> {
    Ok(match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d"
        | "conv_transpose3d" | "sigmoid" => 1.0,
        "tanh" => 5.0 / 3.0,
        "relu" => 2f64.sqrt(),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        "selu" => 0.75,
        other => {
            return Err(Error::Invalid(format!(
                "calculate_gain: unknown nonlinearity {other:?}; expected linear, conv1d, \
                 conv2d, conv3d, sigmoid, tanh, relu, leaky_relu or selu"
            )))
        }
    })
}

/// `(fan_in, fan_out)` of a weight as torch counts them: `[out, in, k...]` gives
/// `in * k...` and `out * k...`; fewer than 2 dimensions is an error.
pub fn calculate_fan_in_and_fan_out(t: &impl InitTarget) -> Result<(usize, usize)> {
    let t = t.target();
    let dims = t.shape();
    if dims.len() < 2 {
        return Err(Error::BadShape(format!(
            "fan in and fan out cannot be computed for a tensor with fewer than 2 \
             dimensions (shape {dims:?}), as in torch"
        )));
    }
    let receptive: usize = dims[2..].iter().product();
    Ok((dims[1] * receptive, dims[0] * receptive))
}

/// Writes `values` (float64 on the CPU, the target's shape) into the target.
fn fill(t: &Tensor, values: Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        return Err(Error::Invalid(format!(
            "nn::init needs a floating-point tensor, got {} (shape {:?})",
            t.dtype(),
            t.shape()
        )));
    }
    no_grad(|| t.copy_(&values.to_dtype(t.dtype())?.to(t.device())?))
}

/// Uniform values in `[a, b)`, as torch's `uniform_`.
pub fn uniform_(t: &impl InitTarget, a: f64, b: f64) -> Result<()> {
    let t = t.target();
    let u = Tensor::rand(t.shape().to_vec(), Device::Cpu)?;
    fill(&t, u.to_dtype(crate::DType::F64)?.mul(b - a)?.add(a)?)
}

/// Normal values of mean `mean` and standard deviation `std`, as torch's `normal_`.
pub fn normal_(t: &impl InitTarget, mean: f64, std: f64) -> Result<()> {
    let t = t.target();
    let z = Tensor::randn(t.shape().to_vec(), Device::Cpu)?;
    fill(&t, z.to_dtype(crate::DType::F64)?.mul(std)?.add(mean)?)
}

/// Normal values of mean `mean` and standard deviation `std` redrawn until they fall in
/// `[a, b]`, as torch's `trunc_normal_` (defaults there: 0, 1, -2, 2).
pub fn trunc_normal_(t: &impl InitTarget, mean: f64, std: f64, a: f64, b: f64) -> Result<()> {
    let ordered = a < b && std > 0.0;
    if !ordered {
        return Err(Error::Invalid(format!(
            "trunc_normal_: needs a < b and std > 0, got a = {a}, b = {b}, std = {std}"
        )));
    }
    // A range far out in a tail would redraw nearly forever; torch's inverse-CDF method
    // degrades there too.
    let mass = (libm::erf((b - mean) / std / 2f64.sqrt())
        - libm::erf((a - mean) / std / 2f64.sqrt()))
        / 2.0;
    if mass < 1e-6 {
        return Err(Error::Invalid(format!(
            "trunc_normal_: [{a}, {b}] holds almost none of a normal of mean {mean} and std \
             {std}"
        )));
    }
    let t = t.target();
    let n = t.numel();
    let mut values = Vec::with_capacity(n);
    while values.len() < n {
        let draw = Tensor::randn((n - values.len()).max(16), Device::Cpu)?.to_vec::<f32>()?;
        values.extend(
            draw.iter()
                .map(|&z| mean + std * z as f64)
                .filter(|v| (a..=b).contains(v))
                .take(n - values.len()),
        );
    }
    fill(
        &t,
        Tensor::from_vec(values, t.shape().to_vec(), Device::Cpu)?,
    )
}

/// `value` everywhere, as torch's `constant_`.
pub fn constant_(t: &impl InitTarget, value: f64) -> Result<()> {
    let t = t.target();
    fill(
        &t,
        Tensor::full_dtype(t.shape().to_vec(), value, crate::DType::F64, Device::Cpu)?,
    )
}

/// Zeros, as torch's `zeros_`.
pub fn zeros_(t: &impl InitTarget) -> Result<()> {
    constant_(t, 0.0)
}

/// Ones, as torch's `ones_`.
pub fn ones_(t: &impl InitTarget) -> Result<()> {
    constant_(t, 1.0)
}

/// The identity matrix (ones on the main diagonal of a 2-D tensor), as torch's `eye_`.
pub fn eye_(t: &impl InitTarget) -> Result<()> {
    let t = t.target();
    if t.rank() != 2 {
        return Err(Error::BadShape(format!(
            "eye_: needs a 2-D tensor, got shape {:?}",
            t.shape()
        )));
    }
    let (r, c) = (t.shape()[0], t.shape()[1]);
    let v: Vec<f64> = (0..r * c)
        .map(|p| if p / c == p % c { 1.0 } else { 0.0 })
        .collect();
    fill(&t, Tensor::from_vec(v, [r, c], Device::Cpu)?)
}

/// Xavier (Glorot) uniform: `U(-a, a)` with `a = gain * √(6 / (fan_in + fan_out))`, as
/// torch's `xavier_uniform_`.
pub fn xavier_uniform_(t: &impl InitTarget, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(t)?;
    let a = gain * (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
    uniform_(t, -a, a)
}

/// Xavier (Glorot) normal: `N(0, std²)` with `std = gain * √(2 / (fan_in + fan_out))`, as
/// torch's `xavier_normal_`.
pub fn xavier_normal_(t: &impl InitTarget, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(t)?;
    normal_(
        t,
        0.0,
        gain * (2.0 / (fan_in + fan_out).max(1) as f64).sqrt(),
    )
}

/// Kaiming's standard deviation `gain / √fan`, or None for an empty tensor (torch warns and
/// leaves it).
fn kaiming_std(
    t: &impl InitTarget,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
) -> Result<Option<f64>> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(t)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    let gain = calculate_gain(nonlinearity, Some(a))?;
    Ok((fan > 0).then(|| gain / (fan as f64).sqrt()))
}

/// Kaiming (He) uniform: `U(-b, b)` with `b = gain * √(3 / fan)`, as torch's
/// `kaiming_uniform_` (torch's defaults: `a` 0, `FanIn`, `"leaky_relu"`; `a` is the
/// leaky slope the gain uses).
pub fn kaiming_uniform_(
    t: &impl InitTarget,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
) -> Result<()> {
    match kaiming_std(t, a, mode, nonlinearity)? {
        Some(std) => uniform_(t, -3f64.sqrt() * std, 3f64.sqrt() * std),
        None => Ok(()),
    }
}

/// Kaiming (He) normal: `N(0, std²)` with `std = gain / √fan`, as torch's `kaiming_normal_`.
pub fn kaiming_normal_(
    t: &impl InitTarget,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
) -> Result<()> {
    match kaiming_std(t, a, mode, nonlinearity)? {
        Some(std) => normal_(t, 0.0, std),
        None => Ok(()),
    }
}
