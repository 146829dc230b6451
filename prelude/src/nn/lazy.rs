//! Lazy layers, torch's `nn.LazyLinear`, `nn.LazyConv1d`/`2d`/`3d`,
//! `nn.LazyConvTranspose1d`/`2d`/`3d`, `nn.LazyBatchNorm1d`/`2d`/`3d` and
//! `nn.LazyInstanceNorm1d`/`2d`/`3d`: the input size (features, channels) is read from the
//! first input, so a model can be written without working it out. Until then the layer
//! holds placeholder parameters and buffers (empty tensors); the first forward draws the
//! real ones into those same handles, so an optimiser built before it updates them, and
//! `model.to(..)` before it places them. `load_state_dict` before the first forward takes
//! the size from the saved weight (or running mean), as torch's.

use super::conv_layers::{Conv, ConvSize, ConvTranspose};
use super::running_norm::{BatchNorm, InstanceNorm};
use super::{Linear, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::{Mutex, OnceLock};

/// A layer that can be built once its input size is known (see [`Lazy`]).
pub trait Materialize: Module + Sized + 'static {
    /// This layer's settings for `inputs` input features or channels, parameters drawn.
    fn with_inputs(&self, inputs: usize) -> Self;
    /// The input size `x` gives it, or None when `x` has no shape it takes (`expected`
    /// names those).
    fn inputs_of(&self, x: &Tensor) -> Option<usize>;
    /// What shapes the layer takes, for the error when an input has none of them.
    fn expected(&self) -> String;
    /// The input size a saved state was made for (read off its weight).
    fn inputs_of_state(&self, state: &[(String, Tensor)]) -> Option<usize>;
    /// The handles of its tensors sized by the input, parameters then buffers (as
    /// `parameters()` and `buffers()` list them), to swap for the placeholders'.
    fn handles(&mut self) -> Vec<&mut Parameter>;
}

/// The shape of the tensor `state` saves under `name`.
fn saved<'a>(state: &'a [(String, Tensor)], name: &str) -> Option<&'a [usize]> {
    state
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.shape())
}

/// A layer whose input size comes from its first input (torch's lazy modules): `M` is the
/// layer it becomes, e.g. `Lazy<Linear>` ([`LazyLinear`]). Prints as torch's, `LazyLinear(
/// in_features=0, ..)` before the first forward, then as the layer it became.
pub struct Lazy<M: Materialize> {
    template: M,
    made: OnceLock<M>,
    init: Mutex<()>,
}

/// torch's `nn.LazyLinear(out_features)`: `in_features` from the input's last dimension.
pub type LazyLinear = Lazy<Linear>;
/// torch's `nn.LazyConv1d(out_channels, kernel_size)`.
pub type LazyConv1d = Lazy<Conv<super::Size1>>;
/// torch's `nn.LazyConv2d(out_channels, kernel_size)`.
pub type LazyConv2d = Lazy<Conv<super::Size2>>;
/// torch's `nn.LazyConv3d(out_channels, kernel_size)`.
pub type LazyConv3d = Lazy<Conv<super::Size3>>;
/// torch's `nn.LazyConvTranspose1d(out_channels, kernel_size)`.
pub type LazyConvTranspose1d = Lazy<ConvTranspose<super::Size1>>;
/// torch's `nn.LazyConvTranspose2d(out_channels, kernel_size)`.
pub type LazyConvTranspose2d = Lazy<ConvTranspose<super::Size2>>;
/// torch's `nn.LazyConvTranspose3d(out_channels, kernel_size)`.
pub type LazyConvTranspose3d = Lazy<ConvTranspose<super::Size3>>;

impl<M: Materialize> Lazy<M> {
    /// A lazy layer with `template`'s settings (built for 0 inputs).
    pub fn from_template(template: M) -> Lazy<M> {
        Lazy {
            template,
            made: OnceLock::new(),
            init: Mutex::new(()),
        }
    }

    /// Whether the first forward (or a load) has built the layer.
    pub fn is_materialized(&self) -> bool {
        self.made.get().is_some()
    }

    /// The layer it became, once it has.
    pub fn layer(&self) -> Option<&M> {
        self.made.get()
    }

    /// The settings changed by `f` (a builder of the layer), before the first forward.
    fn map(self, f: impl FnOnce(M) -> M) -> Lazy<M> {
        Lazy::from_template(f(self.template))
    }

    /// The layer for `inputs`, built once: its parameters drawn into the placeholders'
    /// handles (their dtype and device), so whoever holds those sees the real values.
    fn build(&self, inputs: usize) -> Result<&M> {
        let _only_one = self.init.lock().unwrap();
        if let Some(m) = self.made.get() {
            return Ok(m);
        }
        let mut m = self.template.with_inputs(inputs);
        let placeholders = self.template.parameters().into_iter();
        let placeholders: Vec<Parameter> = placeholders
            .chain(self.template.buffers().into_iter().map(|(_, b)| b))
            .collect();
        for (slot, new) in placeholders.iter().zip(m.handles()) {
            slot.materialize(new.tensor())?;
            *new = slot.clone();
        }
        let _ = self.made.set(m);
        Ok(self.made.get().expect("just set"))
    }

    fn ready(&self, x: &Tensor) -> Result<&M> {
        if let Some(m) = self.made.get() {
            return Ok(m);
        }
        let inputs = self.template.inputs_of(x).ok_or_else(|| {
            Error::BadShape(format!(
                "{}: expected input {} to read its input size from, got {:?}",
                self.describe(),
                self.template.expected(),
                x.shape()
            ))
        })?;
        self.build(inputs)
    }
}

impl Lazy<Linear> {
    /// torch's `nn.LazyLinear(out_features)`, with a bias.
    pub fn new(out_features: usize) -> LazyLinear {
        Lazy::from_template(Linear::new(0, out_features))
    }
    /// torch's `nn.LazyLinear(out_features, bias=False)`.
    pub fn no_bias(out_features: usize) -> LazyLinear {
        Lazy::from_template(Linear::no_bias(0, out_features))
    }
}

/// The lazy convolutions take the layers' builders.
macro_rules! lazy_conv {
    ($layer:ident) => {
        impl<S: ConvSize> Lazy<$layer<S>> {
            /// torch's `nn.Lazy..(out_channels, kernel_size)`.
            pub fn new(out_channels: usize, kernel_size: impl Into<S>) -> Lazy<$layer<S>> {
                Lazy::from_template($layer::new(0, out_channels, kernel_size))
            }
            pub fn stride(self, stride: impl Into<S>) -> Self {
                self.map(|c| c.stride(stride))
            }
            pub fn dilation(self, dilation: impl Into<S>) -> Self {
                self.map(|c| c.dilation(dilation))
            }
            /// `groups` must divide the input channels the first forward finds.
            pub fn groups(self, groups: usize) -> Self {
                self.map(|c| c.groups(groups))
            }
            pub fn bias(self, bias: bool) -> Self {
                self.map(|c| c.bias(bias))
            }
        }

        impl<S: ConvSize> Materialize for $layer<S> {
            fn with_inputs(&self, inputs: usize) -> Self {
                self.with_in_channels(inputs)
            }
            fn inputs_of(&self, x: &Tensor) -> Option<usize> {
                match x.rank() {
                    r if r == S::RANK + 2 => Some(x.shape()[1]),
                    r if r == S::RANK + 1 => Some(x.shape()[0]),
                    _ => None,
                }
            }
            fn expected(&self) -> String {
                format!("[N, C, {a}] or [C, {a}]", a = S::AXES)
            }
            fn inputs_of_state(&self, state: &[(String, Tensor)]) -> Option<usize> {
                let shape = saved(state, "weight")?;
                lazy_conv!(@inputs $layer, shape, self.groups_of())
            }
            fn handles(&mut self) -> Vec<&mut Parameter> {
                std::iter::once(&mut self.weight).chain(&mut self.bias).collect()
            }
        }
    };
    // A convolution's weight is [out, in / groups, k..], a transposed one's [in, out / groups, k..].
    (@inputs Conv, $shape:expr, $groups:expr) => {
        $shape.get(1).map(|c| c * $groups)
    };
    (@inputs ConvTranspose, $shape:expr, $groups:expr) => {{
        let _ = $groups;
        $shape.first().copied()
    }};
}

lazy_conv!(Conv);
lazy_conv!(ConvTranspose);

impl<S: ConvSize> Lazy<ConvTranspose<S>> {
    /// Zeros fewer around the spread input, as `ConvTranspose`'s.
    pub fn padding(self, padding: impl Into<S>) -> Self {
        self.map(|c| c.padding(padding))
    }
    pub fn output_padding(self, output_padding: impl Into<S>) -> Self {
        self.map(|c| c.output_padding(output_padding))
    }
}

impl<S: ConvSize> Lazy<Conv<S>> {
    /// Zeros around the input: a size or `"same"` / `"valid"`, as `Conv`'s.
    pub fn padding(self, padding: impl Into<S::Padding>) -> Self {
        self.map(|c| c.padding(padding))
    }
}

impl Materialize for Linear {
    fn with_inputs(&self, inputs: usize) -> Linear {
        let out = self.weight.tensor().shape()[0];
        if self.bias.is_some() {
            Linear::new(inputs, out)
        } else {
            Linear::no_bias(inputs, out)
        }
    }
    fn inputs_of(&self, x: &Tensor) -> Option<usize> {
        x.shape().last().copied()
    }
    fn expected(&self) -> String {
        "[..., in_features]".into()
    }
    fn inputs_of_state(&self, state: &[(String, Tensor)]) -> Option<usize> {
        saved(state, "weight")?.get(1).copied()
    }
    fn handles(&mut self) -> Vec<&mut Parameter> {
        std::iter::once(&mut self.weight)
            .chain(&mut self.bias)
            .collect()
    }
}

/// A norm's channels, from its saved weight or, without one (`affine(false)`), its running
/// mean.
fn norm_channels(state: &[(String, Tensor)]) -> Option<usize> {
    let shape = saved(state, "weight").or_else(|| saved(state, "running_mean"))?;
    shape.first().copied()
}

impl Materialize for BatchNorm {
    fn with_inputs(&self, inputs: usize) -> BatchNorm {
        self.with_channels(inputs)
    }
    fn inputs_of(&self, x: &Tensor) -> Option<usize> {
        self.takes_rank(x.rank()).then(|| x.shape()[1])
    }
    fn expected(&self) -> String {
        BatchNorm::expected(self, "C")
    }
    fn inputs_of_state(&self, state: &[(String, Tensor)]) -> Option<usize> {
        norm_channels(state)
    }
    fn handles(&mut self) -> Vec<&mut Parameter> {
        self.sized()
    }
}

impl Materialize for InstanceNorm {
    fn with_inputs(&self, inputs: usize) -> InstanceNorm {
        self.with_channels(inputs)
    }
    fn inputs_of(&self, x: &Tensor) -> Option<usize> {
        match x.rank() {
            r if r == self.rank() => Some(x.shape()[1]),
            r if r + 1 == self.rank() => Some(x.shape()[0]),
            _ => None,
        }
    }
    fn expected(&self) -> String {
        InstanceNorm::expected(self, "C")
    }
    fn inputs_of_state(&self, state: &[(String, Tensor)]) -> Option<usize> {
        norm_channels(state)
    }
    fn handles(&mut self) -> Vec<&mut Parameter> {
        self.sized()
    }
}

/// A lazy norm's settings, as the layer's builders, before the first forward.
macro_rules! lazy_norm_builders {
    ($layer:ident) => {
        impl Lazy<$layer> {
            /// Added to the variance before the square root (default 1e-5).
            pub fn eps(self, eps: f64) -> Self {
                self.map(|n| n.eps(eps))
            }
            /// The running statistics' update rate (default 0.1), as the layer's.
            pub fn momentum(self, momentum: impl Into<Option<f64>>) -> Self {
                let momentum = momentum.into();
                self.map(|n| n.momentum(momentum))
            }
            /// A learned per-channel scale and shift (torch's `affine`).
            pub fn affine(self, on: bool) -> Self {
                self.map(|n| n.affine(on))
            }
            /// Running statistics for eval mode (torch's `track_running_stats`).
            pub fn track_running_stats(self, on: bool) -> Self {
                self.map(|n| n.track_running_stats(on))
            }
        }
    };
}

lazy_norm_builders!(BatchNorm);
lazy_norm_builders!(InstanceNorm);

/// The lazy norms' constructors: `LazyBatchNorm2d::new()` is a `Lazy<BatchNorm>`.
macro_rules! lazy_norm {
    ($(#[$doc:meta])* $name:ident($layer:ident) => $make:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl $name {
            #[allow(clippy::new_ret_no_self)]
            pub fn new() -> Lazy<$layer> {
                Lazy::from_template($make)
            }
        }
    };
}

lazy_norm!(
    /// torch's `nn.LazyBatchNorm1d()`: a `BatchNorm1d` whose channels come from the first
    /// input, `[N, C]` or `[N, C, L]`.
    LazyBatchNorm1d(BatchNorm) => super::BatchNorm1d::new(0)
);
lazy_norm!(
    /// torch's `nn.LazyBatchNorm2d()`: a `BatchNorm2d` whose channels come from the first
    /// input.
    LazyBatchNorm2d(BatchNorm) => super::BatchNorm2d::new(0)
);
lazy_norm!(
    /// torch's `nn.LazyBatchNorm3d()`: a `BatchNorm3d` whose channels come from the first
    /// input.
    LazyBatchNorm3d(BatchNorm) => super::BatchNorm3d::new(0)
);
lazy_norm!(
    /// torch's `nn.LazyInstanceNorm1d()`: an `InstanceNorm1d` whose channels come from the
    /// first input; unlike the eager layer, torch's defaults here are `affine=True` and
    /// `track_running_stats=True`.
    LazyInstanceNorm1d(InstanceNorm) => InstanceNorm::new_1d(0).affine(true).track_running_stats(true)
);
lazy_norm!(
    /// torch's `nn.LazyInstanceNorm2d()` (`affine` and `track_running_stats` on, as torch's).
    LazyInstanceNorm2d(InstanceNorm) => InstanceNorm::new_2d(0).affine(true).track_running_stats(true)
);
lazy_norm!(
    /// torch's `nn.LazyInstanceNorm3d()` (`affine` and `track_running_stats` on, as torch's).
    LazyInstanceNorm3d(InstanceNorm) => InstanceNorm::new_3d(0).affine(true).track_running_stats(true)
);

impl<M: Materialize> Module for Lazy<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.ready(x)?.forward(x)
    }
    /// Before the first forward, the placeholders (empty), which become the real parameters.
    fn parameters(&self) -> Vec<Parameter> {
        match self.made.get() {
            Some(m) => m.parameters(),
            None => self.template.parameters(),
        }
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        match self.made.get() {
            Some(m) => m.named_parameters(),
            None => self.template.named_parameters(),
        }
    }
    /// Train or eval mode, for the layer it becomes (or became).
    fn set_training(&mut self, training: bool) {
        self.template.set_training(training);
        if let Some(m) = self.made.get_mut() {
            m.set_training(training);
        }
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        match self.made.get() {
            Some(m) => m.buffers(),
            None => self.template.buffers(),
        }
    }
    /// Before the first forward, the input size is the saved weight's (torch's lazy load).
    fn load_state_dict(&self, state: &[(String, Tensor)]) -> Result<()> {
        if self.made.get().is_none() {
            let inputs = self.template.inputs_of_state(state).ok_or_else(|| {
                Error::BadShape(format!(
                    "{}: load_state_dict needs a \"weight\" (a norm without one, its \
                     \"running_mean\") to read the input size from",
                    self.describe()
                ))
            })?;
            self.build(inputs)?;
        }
        self.made.get().expect("built").load_state_dict(state)
    }
    /// torch's repr: `LazyLinear(in_features=0, ..)` until built, then the layer's own.
    fn describe(&self) -> String {
        match self.made.get() {
            Some(m) => m.describe(),
            None => format!("Lazy{}", self.template.describe()),
        }
    }
}

impl<M: Materialize> std::fmt::Debug for Lazy<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl<M: Materialize> std::fmt::Display for Lazy<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}
