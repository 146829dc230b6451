//! More of torch's activations and shape layers: `F::elu`, `F::hardtanh`, `F::relu6`,
//! `F::mish` (re-exported by `functional`) and the layers `ELU`, `Hardtanh`, `ReLU6`, `Mish`,
//! `LogSoftmax`, `Identity`, `Unflatten`. Each is composed from tensor ops, so it runs on every
//! device and autograd differentiates it; the compositions give torch's gradients at the
//! kinks too (hardtanh passes none at its bounds, elu passes `alpha` at 0).

use super::{py_float, same_device, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::autocast::unlisted;
use crate::tensor::{DType, Tensor};

/// `x` where `x > 0`, else `alpha * (exp(x) - 1)` (torch's `F.elu`); a NaN passes through
/// with gradient 1, as torch's (its rule tests `x <= 0`).
pub fn elu(x: &Tensor, alpha: f64) -> Result<Tensor> {
    super::functional::float_input(x, "elu")?;
    // One op in torch, on no autocast list: its expm1 keeps the input's dtype.
    unlisted(x, || elu_body(x, alpha))
}

fn elu_body(x: &Tensor, alpha: f64) -> Result<Tensor> {
    // The exponential sees x only where x <= 0 (0 elsewhere, NaN included): the branch not
    // taken never overflows or turns NaN, so its zero gradient stays 0 (0 * inf is NaN).
    let le0 = x.le(0.0)?;
    let negative = x.where_(&le0, &x.zeros_like()?)?.expm1()?.mul(alpha)?;
    negative.where_(&le0, x)
}

/// `x` clamped to `[min_val, max_val]` (torch's `F.hardtanh`), with torch's gradient: 0 at
/// and beyond the bounds, else 1 (a NaN stays NaN and passes its gradient). Integer tensors
/// are clamped to the bounds truncated to integers and keep their dtype, as torch's; bool,
/// and uint8 with a bound still negative after truncation, are refused as torch refuses them.
pub fn hardtanh(x: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    if min_val > max_val {
        return Err(Error::Invalid(format!(
            "hardtanh: min_val ({min_val}) must not be greater than max_val ({max_val})"
        )));
    }
    match x.dtype() {
        DType::Bool => {
            return Err(Error::Invalid(format!(
                "hardtanh does not take bool input, as in torch (shape {:?})",
                x.shape()
            )))
        }
        DType::U8 if (min_val as i64) < 0 || (max_val as i64) < 0 => {
            return Err(Error::Invalid(format!(
                "hardtanh: a uint8 tensor cannot be clamped to negative limits ({min_val}, \
                 {max_val}), as torch refuses"
            )))
        }
        d if !d.is_float() => return x.clamp(min_val as i64, max_val as i64),
        _ => {}
    }
    let outside = x.le(min_val)?.logical_or(&x.ge(max_val)?)?;
    let bounds = x.detach().clamp(min_val, max_val)?;
    x.where_(&outside.logical_not()?, &bounds)
}

/// `min(max(x, 0), 6)` (torch's `F.relu6`, hardtanh on [0, 6]).
pub fn relu6(x: &Tensor) -> Result<Tensor> {
    hardtanh(x, 0.0, 6.0)
}

/// `x * tanh(softplus(x))` (torch's `F.mish`).
pub fn mish(x: &Tensor) -> Result<Tensor> {
    unlisted(x, || x.mul(&x.softplus()?.tanh()?))
}

/// torch's `nn.ELU(alpha=1.0)`.
#[derive(Clone, Copy)]
pub struct ELU {
    alpha: f64,
}

impl ELU {
    pub fn new(alpha: f64) -> ELU {
        ELU { alpha }
    }
}

impl Default for ELU {
    fn default() -> ELU {
        ELU::new(1.0)
    }
}

impl Module for ELU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        elu(x, self.alpha)
    }
    fn describe(&self) -> String {
        format!("ELU(alpha={})", py_float(self.alpha))
    }
}

/// torch's `nn.Hardtanh(min_val=-1.0, max_val=1.0)`.
#[derive(Clone, Copy)]
pub struct Hardtanh {
    min_val: f64,
    max_val: f64,
}

impl Hardtanh {
    pub fn new(min_val: f64, max_val: f64) -> Hardtanh {
        Hardtanh { min_val, max_val }
    }
}

impl Default for Hardtanh {
    fn default() -> Hardtanh {
        Hardtanh::new(-1.0, 1.0)
    }
}

impl Module for Hardtanh {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        hardtanh(x, self.min_val, self.max_val)
    }
    fn describe(&self) -> String {
        format!(
            "Hardtanh(min_val={}, max_val={})",
            py_float(self.min_val),
            py_float(self.max_val)
        )
    }
}

/// torch's `nn.ReLU6()`.
#[derive(Clone, Copy, Default)]
pub struct ReLU6;

impl Module for ReLU6 {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        relu6(x)
    }
    fn describe(&self) -> String {
        "ReLU6()".into()
    }
}

/// torch's `nn.Mish()`.
#[derive(Clone, Copy, Default)]
pub struct Mish;

impl Module for Mish {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        mish(x)
    }
    fn describe(&self) -> String {
        "Mish()".into()
    }
}

/// Log-softmax along `dim` (torch's `nn.LogSoftmax(dim=...)`), what `NLLLoss` expects.
#[derive(Clone, Copy)]
pub struct LogSoftmax {
    dim: isize,
}

impl LogSoftmax {
    pub fn new(dim: isize) -> LogSoftmax {
        LogSoftmax { dim }
    }
}

impl Module for LogSoftmax {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.log_softmax(self.dim)
    }
    fn describe(&self) -> String {
        format!("LogSoftmax(dim={})", self.dim)
    }
}

/// Passes its input through (torch's `nn.Identity()`), a placeholder in a `Sequential`.
#[derive(Clone, Copy, Default)]
pub struct Identity;

impl Module for Identity {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    fn describe(&self) -> String {
        "Identity()".into()
    }
}

/// Splits dimension `dim` into `sizes` (torch's `nn.Unflatten(dim, unflattened_size)`, the
/// inverse of `Flatten`: `Unflatten::new(1, &[64, 7, 7])` turns `[N, 3136]` into
/// `[N, 64, 7, 7]`, as a decoder starts); a view where the input allows one.
#[derive(Clone)]
pub struct Unflatten {
    dim: isize,
    sizes: Vec<usize>,
}

impl Unflatten {
    pub fn new(dim: isize, sizes: &[usize]) -> Unflatten {
        Unflatten {
            dim,
            sizes: sizes.to_vec(),
        }
    }
}

impl Module for Unflatten {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let rank = x.rank() as isize;
        let d = if self.dim < 0 {
            self.dim + rank
        } else {
            self.dim
        };
        if d < 0 || d >= rank {
            return Err(Error::Invalid(format!(
                "{}: dimension {} is out of range for an input of shape {:?}",
                self.describe(),
                self.dim,
                x.shape()
            )));
        }
        let d = d as usize;
        let product: usize = self.sizes.iter().product();
        if product != x.shape()[d] {
            return Err(Error::BadShape(format!(
                "{}: the sizes multiply to {product}, but dimension {d} of the input {:?} has {}",
                self.describe(),
                x.shape(),
                x.shape()[d]
            )));
        }
        let mut dims = x.shape()[..d].to_vec();
        dims.extend(&self.sizes);
        dims.extend(&x.shape()[d + 1..]);
        x.reshape(dims)
    }
    fn describe(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|s| s.to_string()).collect();
        let tuple = if sizes.len() == 1 {
            format!("({},)", sizes[0])
        } else {
            format!("({})", sizes.join(", "))
        };
        format!("Unflatten(dim={}, unflattened_size={tuple})", self.dim)
    }
}

/// `x` where it is positive, `weight * x` elsewhere, with one slope per channel (dimension 1)
/// or one for all (torch's `F.prelu`); the slopes learn.
pub fn prelu(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    super::functional::float_input(x, "prelu")?;
    let n = weight.numel();
    let slope = if n == 1 {
        weight.reshape(Vec::<usize>::new())?
    } else {
        let channels = if x.rank() >= 2 { x.shape()[1] } else { 0 };
        if weight.rank() != 1 || channels != n {
            return Err(Error::BadShape(format!(
                "prelu: {n} slopes need an input with {n} channels (dimension 1), got shape {:?}",
                x.shape()
            )));
        }
        let mut shape = vec![1; x.rank()];
        shape[1] = n;
        weight.reshape(shape)?
    };
    // `x > 0` as torch's kernel: at 0 the gradient is the slope's.
    x.where_(&x.gt(0)?, &x.mul(&slope)?)
}

/// torch's `nn.PReLU(num_parameters=1, init=0.25)`: a leaky ReLU whose negative slope is
/// learned, one for all channels or one per channel.
pub struct PReLU {
    pub weight: Parameter,
}

impl PReLU {
    /// `num_parameters` slopes (1, or the input's channel count), each starting at `init`.
    pub fn new(num_parameters: usize, init: f64) -> PReLU {
        let w = Tensor::full([num_parameters], init as f32, crate::Device::Cpu)
            .expect("a small tensor on the CPU");
        PReLU {
            weight: Parameter::new(w).expect("float32 can require grad"),
        }
    }
}

impl Default for PReLU {
    fn default() -> PReLU {
        PReLU::new(1, 0.25)
    }
}

impl Module for PReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        same_device(self, &self.weight, x)?;
        prelu(x, &self.weight.tensor())
    }
    fn parameters(&self) -> Vec<Parameter> {
        vec![self.weight.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        vec![("weight".into(), self.weight.clone())]
    }
    fn describe(&self) -> String {
        format!("PReLU(num_parameters={})", self.weight.shape()[0])
    }
}
