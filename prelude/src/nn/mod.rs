//! Layers in torch's `torch.nn` names: a [`Module`] trait, [`Parameter`]s that optimisers
//! update in place, the layers the articles' networks use, and [`Sequential`] to chain them.
//!
//! ```ignore
//! let model = nn::Sequential::new()
//!     .add(nn::Linear::new(2, 16))
//!     .add(nn::ReLU)
//!     .add(nn::Linear::new(16, 1));
//! ```
//!
//! Parameters are shared cells (`Parameter` is an `Arc`): a model and the optimiser built from
//! `model.parameters()` hold the same ones, so `optimizer.step()` changes the model's weights
//! without borrowing the model, as in torch. Weights start as torch's do: Kaiming-uniform
//! (a = sqrt(5)), i.e. uniform in ±1/sqrt(fan_in), and so do biases; drawn from the seeded
//! generator ([`crate::manual_seed`]).

/// torch's repr with `{:?}` and `{}` for generic layers (`Conv<S>`, `MaxPool<S>`, ...), one
/// impl for every rank: `generic_repr!(ConvSize: Conv, ConvTranspose)` prints each through
/// its `describe()`. (The plain layers get theirs from `torch_repr!` below.)
macro_rules! generic_repr {
    ($bound:ident: $($t:ident),*) => {$(
        impl<S: $bound> std::fmt::Debug for $t<S> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.describe())
            }
        }
        impl<S: $bound> std::fmt::Display for $t<S> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.describe())
            }
        }
    )*};
}

mod activation;
mod adaptive_pool;
mod adaptive_pool3d;
mod adaptive_softmax;
mod attention;
mod class_loss;
mod containers;
mod conv;
mod conv1d;
mod conv3d;
mod conv_layers;
mod conv_transpose3d;
mod ctc;
mod embedding;
mod embedding_bag;
mod fractional_pool;
pub mod functional;
mod fusion;
mod grid_sample;
pub mod init;
mod inplace_activation;
mod lazy;
mod likelihood_loss;
mod loss;
mod loss_modules;
mod lp_pool;
mod margin_loss;
mod margin_modules;
mod norm;
mod orthogonal;
mod packed;
mod pad;
mod pairwise;
mod parametrize;
mod parametrized;
mod pointwise;
mod pool;
mod pool3d;
mod pool_layers;
mod prune;
mod rearrange;
mod recurrent;
mod recurrent_cell;
mod resample;
mod running_norm;
pub mod safetensors;
mod scale_norm;
mod stateless;
mod stochastic;
mod transformer;
mod transformer_decoder;
mod transformer_stack;
mod unfold;
mod unpool;
pub mod utils;
mod windows;
pub use activation::{Hardtanh, Identity, LogSoftmax, Mish, PReLU, ReLU6, Unflatten, ELU};
pub use adaptive_pool3d::{AdaptiveAvgPool3d, AdaptiveMaxPool3d};
pub use adaptive_softmax::{ASMOutput, AdaptiveLogSoftmaxWithLoss};
pub use attention::{Attention, MultiheadAttention};
pub use containers::{ModuleDict, ModuleList, ParameterDict, ParameterList};
pub use conv::{Padding, Size1, Size2};
pub use conv1d::Padding1;
pub use conv3d::{Padding3, Size3};
pub use conv_layers::{
    Conv, Conv1d, Conv2d, Conv3d, ConvArgs, ConvSize, ConvTranspose, ConvTranspose1d,
    ConvTranspose2d, ConvTranspose3d, PaddingArg,
};
pub use ctc::CTCLoss;
pub use embedding::Embedding;
pub use embedding_bag::EmbeddingBag;
pub use fractional_pool::{FractionalMaxPool2d, FractionalMaxPool3d, FractionalOutput};
pub use lazy::{
    Lazy, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,
    LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
    LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, Materialize,
};
pub use likelihood_loss::PoissonNll;
pub use loss::{KlReduction, Reduction};
pub use loss_modules::{
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss,
    SmoothL1Loss,
};
pub use margin_loss::TripletMargin;
pub use margin_modules::{
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss,
    SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss,
};
pub use norm::{GroupNorm, LayerNorm};
pub use orthogonal::OrthogonalMap;
pub use pad::{
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, Pad2,
    Pad4, Pad6, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
    ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
};
pub use pairwise::{Bilinear, CosineSimilarity, PairwiseDistance};
pub use parametrize::{SpectralNorm, SpectralOptions, WeightNorm};
pub use parametrized::Parametrized;
pub use pointwise::{
    Hardshrink, Hardsigmoid, Hardswish, LogSigmoid, Softmax2d, Softmin, Softshrink, Softsign,
    Tanhshrink, Threshold, CELU, GLU, SELU,
};
pub use pool_layers::{
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool, AvgPool1d,
    AvgPool2d, AvgPool3d, LPPool, LPPool1d, LPPool2d, LPPool3d, MaxPool, MaxPool1d, MaxPool2d,
    MaxPool3d, PoolSize,
};
pub use rearrange::{ChannelShuffle, PixelShuffle, PixelUnshuffle};
pub use recurrent::{PackedOutput, Recurrent, RecurrentOutput, GRU, LSTM, RNN};
pub use recurrent_cell::{GRUCell, LSTMCell, RNNCell, RecurrentCell};
pub use resample::{Resize, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d};
pub use running_norm::{
    BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm, InstanceNorm1d, InstanceNorm2d,
    InstanceNorm3d,
};
pub use safetensors::{load_safetensors, save_safetensors};
pub use scale_norm::{LocalResponseNorm, RMSNorm};
pub use stochastic::{AlphaDropout, FeatureAlphaDropout, RReLU};
pub use transformer::TransformerEncoderLayer;
pub use transformer_decoder::{TransformerDecoderLayer, TransformerMasks};
pub use transformer_stack::{
    StackedLayer, Transformer, TransformerConfig, TransformerDecoder, TransformerEncoder,
    TransformerStack,
};
pub use unfold::{Fold, Unfold};
pub use unpool::{MaxUnpool, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d};

use crate::autograd::no_grad;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Shape, Tensor};
use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, RwLock};

/// A tensor a model learns: it requires grad, and its data can be replaced in place (by an
/// optimiser step or `Module::to`) while keeping its gradient slot. Clones share it.
#[derive(Clone)]
pub struct Parameter(Arc<RwLock<Tensor>>);

impl Parameter {
    /// A parameter holding `t` (detached from any history), requiring grad.
    pub fn new(t: Tensor) -> Result<Parameter> {
        Ok(Parameter(Arc::new(RwLock::new(
            t.detach().requires_grad_(true)?,
        ))))
    }

    /// A tensor a layer keeps but does not learn (torch's buffers: BatchNorm's running
    /// statistics): no gradient; moved, converted and saved with the parameters.
    pub fn buffer(t: Tensor) -> Parameter {
        Parameter(Arc::new(RwLock::new(t.detach())))
    }

    /// The current value, for use in a forward pass (gradients reach this parameter).
    pub fn tensor(&self) -> Tensor {
        self.0.read().unwrap().clone()
    }

    pub fn grad(&self) -> Option<Tensor> {
        self.tensor().grad()
    }

    /// Whether the parameter is learned (torch's `p.requires_grad`); false once frozen.
    pub fn requires_grad(&self) -> bool {
        self.0.read().unwrap().requires_grad()
    }

    /// Freezes the parameter (`false`: no gradient reaches it, so optimisers leave it as it
    /// is) or unfreezes it, as torch's `p.requires_grad_(False)` for fine-tuning part of a
    /// model. Its gradient is cleared either way.
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<()> {
        let mut slot = self.0.write().unwrap();
        if slot.requires_grad() == requires_grad {
            return Ok(());
        }
        let data = slot.detach();
        *slot = if requires_grad {
            data.requires_grad_(true)?
        } else {
            data
        };
        Ok(())
    }

    pub fn zero_grad(&self) {
        self.tensor().zero_grad()
    }

    pub fn shape(&self) -> Vec<usize> {
        self.tensor().shape().to_vec()
    }

    pub fn numel(&self) -> usize {
        self.tensor().numel()
    }

    pub fn device(&self) -> Device {
        self.tensor().device()
    }

    /// Replaces the value with `data` (same shape), keeping the gradient slot: what an
    /// optimiser's step does (torch's `p.data = ...`).
    /// The value of a lazy layer's parameter, drawn at its first forward: any shape (the
    /// placeholder's is empty), in the placeholder's dtype and on its device (where
    /// `model.to(..)` put it), keeping its gradient settings.
    pub(crate) fn materialize(&self, data: Tensor) -> Result<()> {
        let mut slot = self.0.write().unwrap();
        let data = data.to_dtype(slot.dtype())?.to(slot.device())?;
        let meta = slot.grad_meta().cloned();
        *slot = data.detach().with_grad_meta(meta);
        Ok(())
    }

    /// Whether the two are one parameter (torch's `p is q`): tied weights, a parameter shared
    /// by two layers.
    pub fn same_as(&self, other: &Parameter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Puts `t` in the slot as it is, history included, and returns what was there: how a
    /// reparametrised layer ([`utils::parametrizations`]) lends the weight it computed to the
    /// layer it wraps for one forward, so gradients reach the tensors it was computed from.
    pub(crate) fn replace(&self, t: Tensor) -> Tensor {
        std::mem::replace(&mut *self.0.write().unwrap(), t)
    }

    pub fn set_data(&self, data: Tensor) -> Result<()> {
        let mut slot = self.0.write().unwrap();
        if data.shape() != slot.shape() {
            return Err(Error::BadShape(format!(
                "set_data: a parameter of shape {:?} cannot take a value of shape {:?}",
                slot.shape(),
                data.shape()
            )));
        }
        let meta = slot.grad_meta().cloned();
        *slot = data.detach().with_grad_meta(meta);
        Ok(())
    }
}

impl fmt::Debug for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Parameter containing:\n{:?}", self.tensor())
    }
}

/// A layer or a model (torch's `nn.Module`).
pub trait Module: Send + Sync {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// Every learnable parameter (shared with the module: see [`Parameter`]).
    fn parameters(&self) -> Vec<Parameter> {
        Vec::new()
    }

    /// The parameters under torch's `state_dict` names (`weight`, `0.bias`, ...), for
    /// saving and loading; by default `param0`, `param1`, ... in `parameters()` order.
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        self.parameters()
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("param{i}"), p))
            .collect()
    }

    /// The tensors the layer keeps without learning them (torch's buffers, e.g. BatchNorm's
    /// `running_mean`), under their `state_dict` names: `to` moves them, `to_dtype` converts
    /// the float ones, the safetensors functions save and load them; no optimiser sees them.
    fn buffers(&self) -> Vec<(String, Parameter)> {
        Vec::new()
    }

    /// Its parameters and buffers under their `state_dict` names (torch's
    /// `model.state_dict()`), the tensors as they are now: what [`save_safetensors`] writes,
    /// and with an optimiser's [`crate::optim::Optimizer::state_dict`], a checkpoint.
    fn state_dict(&self) -> Vec<(String, Tensor)> {
        self.named_parameters()
            .into_iter()
            .chain(self.buffers())
            .map(|(n, p)| (n, p.tensor()))
            .collect()
    }

    /// Sets every parameter and buffer from `state` by name (torch's `load_state_dict`,
    /// strict about what the model needs): each must be there with its shape; values are
    /// converted to the parameter's dtype and moved to its device. Nothing changes unless all
    /// of them fit.
    fn load_state_dict(&self, state: &[(String, Tensor)]) -> Result<()> {
        safetensors::load_into(self, state, "load_state_dict")
    }

    /// One line naming the layer and its settings, as torch prints it.
    fn describe(&self) -> String;

    /// Switches training behaviour (dropout) on or off; containers pass it on.
    fn set_training(&mut self, _training: bool) {}

    fn train(&mut self) {
        self.set_training(true)
    }

    fn eval(&mut self) {
        self.set_training(false)
    }

    /// Moves every parameter to `device` (torch's `model.to(device)`); gradients are
    /// cleared. Build the optimiser after moving, as in torch, so its state is there too.
    fn to(&self, device: Device) -> Result<()> {
        for p in self.parameters() {
            let t = p.tensor().detach().to(device)?;
            p.set_data(t)?;
            p.zero_grad();
        }
        for (_, b) in self.buffers() {
            b.set_data(b.tensor().to(device)?)?;
        }
        Ok(())
    }

    /// Converts every parameter to `dtype` (f64 for gradient checks); gradients are cleared.
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        for p in self.parameters() {
            let t = p.tensor().detach().to_dtype(dtype)?;
            p.set_data(t)?;
            p.zero_grad();
        }
        // As torch's `.double()`: float buffers follow, counters stay integers.
        for (_, b) in self.buffers() {
            if b.tensor().dtype().is_float() {
                b.set_data(b.tensor().to_dtype(dtype)?)?;
            }
        }
        Ok(())
    }

    fn zero_grad(&self) {
        for p in self.parameters() {
            p.zero_grad();
        }
    }

    /// Freezes (`false`) or unfreezes every parameter, as torch's
    /// `model.requires_grad_(False)`: a frozen layer still computes, but no gradient reaches
    /// its parameters and optimisers leave them as they are.
    fn requires_grad_(&self, requires_grad: bool) -> Result<()> {
        for p in self.parameters() {
            p.requires_grad_(requires_grad)?;
        }
        Ok(())
    }

    /// The number of learnable numbers (frozen ones included, as torch's `numel` sum).
    fn num_parameters(&self) -> usize {
        self.parameters().iter().map(Parameter::numel).sum()
    }

    /// The number of numbers that are learned now (not frozen).
    fn num_trainable_parameters(&self) -> usize {
        self.parameters()
            .iter()
            .filter(|p| p.requires_grad())
            .map(Parameter::numel)
            .sum()
    }
}

/// Uniform in ±`bound`, float32 on the CPU, from the seeded generator.
fn uniform(dims: Vec<usize>, bound: f64) -> Tensor {
    Tensor::rand(dims, Device::Cpu)
        .and_then(|u| u.mul(2.0 * bound)?.sub(bound))
        .expect("uniform values on the CPU")
}

/// torch's default initialisation of a weight with `fan_in` inputs per output, and of its bias.
fn init_param(dims: Vec<usize>, fan_in: usize) -> Parameter {
    let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
    Parameter::new(uniform(dims, bound)).expect("a float32 tensor can require grad")
}

/// A float as Python's `repr` writes it in torch's module reprs: `1.0`, `0.5`, `1e-05`.
pub(super) fn py_float(v: f64) -> String {
    if v != 0.0 && v.is_finite() && (v.abs() < 1e-4 || v.abs() >= 1e16) {
        // Rust writes 1e-5; Python pads the exponent to two digits and signs it: 1e-05.
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').expect("{:e} has an exponent");
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        format!("{mantissa}e{sign}{digits:0>2}")
    } else if v.is_finite() && v.fract() == 0.0 {
        format!("{v:.1}")
    } else if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v}")
    }
}

/// The error for a batch on another device than the layer's parameters, saying how to fix it.
fn same_device(layer: &dyn Module, w: &Parameter, x: &Tensor) -> Result<()> {
    let (pd, xd) = (w.device(), x.device());
    if pd != xd {
        return Err(Error::Invalid(format!(
            "{}: the input is on {xd} but the layer's parameters are on {pd}; move the model \
             with model.to({}) (before building the optimiser) or the batch with x.to({})",
            layer.describe(),
            rust_name(xd),
            rust_name(pd)
        )));
    }
    Ok(())
}

/// How a device is written in a cell.
fn rust_name(d: Device) -> String {
    match d {
        Device::Cpu => "Device::Cpu".into(),
        Device::Cuda(i) => format!("Device::Cuda({i})"),
    }
}

fn weight_and_bias(w: &Parameter, b: &Option<Parameter>) -> Vec<(String, Parameter)> {
    std::iter::once(("weight".to_string(), w.clone()))
        .chain(b.clone().map(|b| ("bias".to_string(), b)))
        .collect()
}

/// `y = x W^T + b` over the last dimension (torch's `nn.Linear`); weight `[out, in]`.
pub struct Linear {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    in_features: usize,
    out_features: usize,
}

impl Linear {
    pub fn new(in_features: usize, out_features: usize) -> Linear {
        let mut l = Linear::no_bias(in_features, out_features);
        l.bias = Some(init_param(vec![out_features], in_features));
        l
    }

    /// Without the bias term (torch's `bias=False`).
    pub fn no_bias(in_features: usize, out_features: usize) -> Linear {
        Linear {
            weight: init_param(vec![out_features, in_features], in_features),
            bias: None,
            in_features,
            out_features,
        }
    }
}

impl Module for Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dims = x.shape();
        if dims.last() != Some(&self.in_features) {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [..., {}] (last dimension {}), got {:?}",
                self.describe(),
                self.in_features,
                self.in_features,
                dims
            )));
        }
        same_device(self, &self.weight, x)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        functional::linear(x, &self.weight.tensor(), b.as_ref())
    }
    fn parameters(&self) -> Vec<Parameter> {
        std::iter::once(self.weight.clone())
            .chain(self.bias.clone())
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn describe(&self) -> String {
        format!(
            "Linear(in_features={}, out_features={}, bias={})",
            self.in_features,
            self.out_features,
            if self.bias.is_some() { "True" } else { "False" }
        )
    }
}

macro_rules! activation {
    ($(#[$doc:meta])* $name:ident, $method:ident) => {
        activation!($(#[$doc])* $name, $method, "");
    };
    // `$args`: the settings torch's repr shows inside the parentheses.
    ($(#[$doc:meta])* $name:ident, $method:ident, $args:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        pub struct $name;
        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                x.$method()
            }
            fn describe(&self) -> String {
                concat!(stringify!($name), "(", $args, ")").to_string()
            }
        }
    };
}

activation!(
    /// `max(x, 0)`.
    ReLU,
    relu
);
activation!(
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    sigmoid
);
activation!(Tanh, tanh);
activation!(
    /// `x * Phi(x)`, the exact GELU (torch's `nn.GELU()`).
    GELU,
    gelu,
    "approximate='none'"
);
activation!(
    /// `ln(1 + exp(x))` (torch's `nn.Softplus()`).
    Softplus,
    softplus,
    "beta=1.0, threshold=20.0"
);
activation!(
    /// `x * sigmoid(x)` (torch's `nn.SiLU`).
    SiLU,
    silu
);

/// `x` where positive, `negative_slope * x` elsewhere (torch's `nn.LeakyReLU`; its default
/// slope is 0.01, `LeakyReLU::default()`).
#[derive(Clone, Copy)]
pub struct LeakyReLU {
    negative_slope: f64,
}

impl LeakyReLU {
    pub fn new(negative_slope: f64) -> LeakyReLU {
        LeakyReLU { negative_slope }
    }
}

impl Default for LeakyReLU {
    fn default() -> LeakyReLU {
        LeakyReLU::new(0.01)
    }
}

impl Module for LeakyReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.leaky_relu(self.negative_slope)
    }
    fn describe(&self) -> String {
        format!(
            "LeakyReLU(negative_slope={})",
            py_float(self.negative_slope)
        )
    }
}

/// Softmax along `dim` (torch's `nn.Softmax(dim=...)`).
pub struct Softmax {
    dim: isize,
}

impl Softmax {
    pub fn new(dim: isize) -> Softmax {
        Softmax { dim }
    }
}

impl Module for Softmax {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.softmax(self.dim)
    }
    fn describe(&self) -> String {
        format!("Softmax(dim={})", self.dim)
    }
}

/// Keeps the first (batch) dimension and flattens the rest (torch's `nn.Flatten()`).
#[derive(Clone, Copy, Default)]
pub struct Flatten;

impl Module for Flatten {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match x.shape() {
            [] => x.reshape(1),
            [n, ..] => x.reshape((*n, x.numel() / (*n).max(1))),
        }
    }
    fn describe(&self) -> String {
        "Flatten(start_dim=1, end_dim=-1)".into()
    }
}

thread_local! {
    /// Set while `summary` runs a shape pass, so dropout draws no random numbers then.
    static SHAPE_PASS: Cell<bool> = const { Cell::new(false) };
}

/// Zeroes inputs with probability `p` while training (torch's `nn.Dropout`); the identity in
/// `eval()` mode.
pub struct Dropout {
    p: f64,
    training: bool,
}

impl Dropout {
    pub fn new(p: f64) -> Dropout {
        Dropout { p, training: true }
    }
}

impl Module for Dropout {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let training = self.training && !SHAPE_PASS.with(Cell::get);
        functional::dropout(x, self.p, training)
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!("Dropout(p={}, inplace=False)", py_float(self.p))
    }
}

/// torch's `nn.Dropout2d(p)`: whole channels dropped while training (`F::dropout2d`),
/// nothing in `eval()`.
pub struct Dropout2d {
    p: f64,
    training: bool,
}

impl Dropout2d {
    pub fn new(p: f64) -> Dropout2d {
        Dropout2d { p, training: true }
    }
}

impl Module for Dropout2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let training = self.training && !SHAPE_PASS.with(Cell::get);
        functional::dropout2d(x, self.p, training)
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!("Dropout2d(p={}, inplace=False)", py_float(self.p))
    }
}

/// torch's `nn.Dropout1d(p)`: whole channels of `[N, C, L]` (or `[C, L]`) dropped while
/// training (`F::dropout1d`), nothing in `eval()`.
pub struct Dropout1d {
    p: f64,
    training: bool,
}

impl Dropout1d {
    pub fn new(p: f64) -> Dropout1d {
        Dropout1d { p, training: true }
    }
}

impl Module for Dropout1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let training = self.training && !SHAPE_PASS.with(Cell::get);
        functional::dropout1d(x, self.p, training)
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!("Dropout1d(p={}, inplace=False)", py_float(self.p))
    }
}

/// torch's `nn.Dropout3d(p)`: whole channels of `[N, C, D, H, W]` (or `[C, D, H, W]`)
/// dropped while training (`F::dropout3d`), nothing in `eval()`.
pub struct Dropout3d {
    p: f64,
    training: bool,
}

impl Dropout3d {
    pub fn new(p: f64) -> Dropout3d {
        Dropout3d { p, training: true }
    }
}

impl Module for Dropout3d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let training = self.training && !SHAPE_PASS.with(Cell::get);
        functional::dropout3d(x, self.p, training)
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!("Dropout3d(p={}, inplace=False)", py_float(self.p))
    }
}

/// Layers applied in order (torch's `nn.Sequential`), built with `add`.
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Module>>,
}

impl Sequential {
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// Appends a layer; returns the model, so calls chain.
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, layer: impl Module + 'static) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }

    pub fn len(&self) -> usize {
        self.layers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The `i`-th layer.
    pub fn layer(&self, i: usize) -> Option<&dyn Module> {
        self.layers.get(i).map(|l| &**l)
    }

    /// Layers and parameter counts, like Keras' `model.summary()`; without output shapes
    /// (see [`Sequential::summary_for`]).
    pub fn summary(&self) -> Summary {
        self.summary_rows(None)
    }

    /// The summary with each layer's output shape for an input of `input_shape` (batch
    /// dimension included), found by one forward pass of zeros without gradients.
    pub fn summary_for(&self, input_shape: impl Into<Shape>) -> Summary {
        self.summary_rows(Some(input_shape.into().0))
    }

    fn summary_rows(&self, input: Option<Vec<usize>>) -> Summary {
        let device = self
            .parameters()
            .first()
            .map_or(Device::Cpu, Parameter::device);
        let mut x = input.map(|dims| Tensor::zeros(dims, device));
        SHAPE_PASS.with(|s| s.set(true));
        let rows = no_grad(|| {
            self.layers
                .iter()
                .map(|l| {
                    let shape = match x.take() {
                        Some(Ok(t)) => {
                            let y = l.forward(&t);
                            let s = match &y {
                                Ok(y) => format!("{:?}", y.shape()),
                                Err(e) => format!("error: {e}"),
                            };
                            x = Some(y);
                            Some(s)
                        }
                        Some(Err(e)) => {
                            x = Some(Err(e));
                            Some("-".into())
                        }
                        None => None,
                    };
                    (
                        l.describe(),
                        shape,
                        l.num_parameters(),
                        l.num_trainable_parameters(),
                    )
                })
                .collect()
        });
        SHAPE_PASS.with(|s| s.set(false));
        Summary { rows }
    }
}

impl Module for Sequential {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        for l in &self.layers {
            y = l.forward(&y)?;
        }
        Ok(y)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.layers.iter().flat_map(|l| l.parameters()).collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let mut out = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            for (name, p) in l.named_parameters() {
                out.push((format!("{i}.{name}"), p));
            }
        }
        out
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        let mut out = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            for (name, b) in l.buffers() {
                out.push((format!("{i}.{name}"), b));
            }
        }
        out
    }
    fn set_training(&mut self, training: bool) {
        for l in &mut self.layers {
            l.set_training(training);
        }
    }
    fn describe(&self) -> String {
        let mut s = String::from("Sequential(\n");
        for (i, l) in self.layers.iter().enumerate() {
            let inner = l.describe().replace('\n', "\n  ");
            s += &format!("  ({i}): {inner}\n");
        }
        s + ")"
    }
}

/// Every layer prints as torch's `repr` does (`describe()`), with `{:?}`, which a notebook uses
/// for a cell's last expression, and with `{}`: `Linear(in_features=3, out_features=2,
/// bias=True)`, a `Sequential` one numbered layer per line.
macro_rules! torch_repr {
    ($($t:ty),* $(,)?) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&Module::describe(self))
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&Module::describe(self))
            }
        }
    )*};
}

torch_repr!(
    Sequential,
    containers::ModuleList,
    containers::ModuleDict,
    containers::ParameterList,
    containers::ParameterDict,
    pad::ZeroPad1d,
    pad::ZeroPad2d,
    pad::ZeroPad3d,
    pad::ConstantPad1d,
    pad::ConstantPad2d,
    pad::ConstantPad3d,
    pad::ReflectionPad1d,
    pad::ReflectionPad2d,
    pad::ReflectionPad3d,
    pad::ReplicationPad1d,
    pad::ReplicationPad2d,
    pad::ReplicationPad3d,
    pad::CircularPad1d,
    pad::CircularPad2d,
    pad::CircularPad3d,
    Linear,
    ReLU,
    Sigmoid,
    Tanh,
    GELU,
    Softplus,
    SiLU,
    LeakyReLU,
    Softmax,
    Flatten,
    Dropout,
    activation::ELU,
    activation::Hardtanh,
    activation::ReLU6,
    activation::Mish,
    activation::LogSoftmax,
    activation::Identity,
    activation::Unflatten,
    attention::MultiheadAttention,
    adaptive_pool3d::AdaptiveAvgPool3d,
    adaptive_pool3d::AdaptiveMaxPool3d,
    pairwise::Bilinear,
    stochastic::RReLU,
    stochastic::AlphaDropout,
    stochastic::FeatureAlphaDropout,
    Dropout1d,
    Dropout3d,
    embedding::Embedding,
    embedding_bag::EmbeddingBag,
    fractional_pool::FractionalMaxPool2d,
    fractional_pool::FractionalMaxPool3d,
    running_norm::BatchNorm,
    running_norm::InstanceNorm,
    norm::LayerNorm,
    norm::GroupNorm,
    pool_layers::AdaptiveAvgPool2d,
    pool_layers::AdaptiveMaxPool2d,
    pool_layers::AdaptiveAvgPool1d,
    pool_layers::AdaptiveMaxPool1d,
    rearrange::PixelShuffle,
    rearrange::PixelUnshuffle,
    rearrange::ChannelShuffle,
    scale_norm::RMSNorm,
    scale_norm::LocalResponseNorm,
    recurrent::Recurrent,
    recurrent_cell::RecurrentCell,
    resample::Upsample,
    transformer::TransformerEncoderLayer,
    transformer_decoder::TransformerDecoderLayer,
    transformer_stack::TransformerEncoder,
    transformer_stack::TransformerDecoder,
    transformer_stack::Transformer,
);

/// A model's layers, output shapes (when an input shape was given) and parameter counts.
pub struct Summary {
    /// Each layer: its line, its output shape, its parameters and the trainable ones.
    rows: Vec<(String, Option<String>, usize, usize)>,
}

impl Summary {
    pub fn total_parameters(&self) -> usize {
        self.rows.iter().map(|r| r.2).sum()
    }
    /// The parameters that are not frozen.
    pub fn trainable_parameters(&self) -> usize {
        self.rows.iter().map(|r| r.3).sum()
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shapes = self.rows.iter().any(|r| r.1.is_some());
        let w0 = self
            .rows
            .iter()
            .map(|r| r.0.len() + 5)
            .max()
            .unwrap_or(0)
            .max(12);
        let w1 = self
            .rows
            .iter()
            .filter_map(|r| r.1.as_ref().map(String::len))
            .max()
            .unwrap_or(0)
            .max(12);
        let line = w0 + if shapes { w1 + 2 } else { 0 } + 12;
        writeln!(f, "{}", "=".repeat(line))?;
        write!(f, "{:<w0$}", "Layer (type)")?;
        if shapes {
            write!(f, "  {:<w1$}", "Output Shape")?;
        }
        writeln!(f, "  {:>10}", "Param #")?;
        writeln!(f, "{}", "=".repeat(line))?;
        for (i, (name, shape, n, _)) in self.rows.iter().enumerate() {
            write!(f, "{:<w0$}", format!("({i}) {name}"))?;
            if shapes {
                write!(f, "  {:<w1$}", shape.as_deref().unwrap_or(""))?;
            }
            writeln!(f, "  {n:>10}")?;
        }
        writeln!(f, "{}", "=".repeat(line))?;
        let (total, trainable) = (self.total_parameters(), self.trainable_parameters());
        writeln!(f, "Total params: {}", group(total))?;
        write!(f, "Trainable params: {}", group(trainable))?;
        // Keras always prints this line; here only when something is frozen, so a model
        // being trained whole reads as before.
        if trainable < total {
            write!(f, "\nNon-trainable params: {}", group(total - trainable))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// 1234567 -> "1,234,567", as Keras prints counts.
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
