//! The normalisation layers that can keep running statistics: `BatchNorm1d`/`2d`/`3d` and
//! `InstanceNorm1d`/`2d`/`3d`, with torch's options (`affine`, `track_running_stats`,
//! `momentum`, where `None` is a cumulative average for batch norm) and reprs, over
//! `F::batch_norm` and `F::instance_norm`.

use super::norm::{affine, batch_norm, instance_norm};
use super::pool_layers::py_bool;
use super::{py_float, same_device, weight_and_bias, Module, Parameter, SHAPE_PASS};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// A layer's running mean (zeros), variance (ones) and torch's `num_batches_tracked` (0),
/// buffers: no gradient.
type Running = (Parameter, Parameter, Parameter);

fn running(channels: usize) -> Running {
    let cpu = crate::Device::Cpu;
    (
        Parameter::buffer(Tensor::zeros([channels], cpu).expect("zeros on the CPU")),
        Parameter::buffer(Tensor::ones([channels], cpu).expect("ones on the CPU")),
        Parameter::buffer(Tensor::zeros_dtype((), DType::I64, cpu).expect("a 0-d int64")),
    )
}

fn running_named(r: &Running) -> Vec<(String, Parameter)> {
    vec![
        ("running_mean".into(), r.0.clone()),
        ("running_var".into(), r.1.clone()),
        ("num_batches_tracked".into(), r.2.clone()),
    ]
}

fn py_momentum(m: Option<f64>) -> String {
    m.map_or("None".into(), py_float)
}

/// torch's `nn.BatchNorm1d` (input `[N, C]` or `[N, C, L]`), `nn.BatchNorm2d` (`[N, C, H,
/// W]`) and `nn.BatchNorm3d` (`[N, C, D, H, W]`): each channel normalised by the batch's
/// statistics in training, by the running ones (which training moves by `momentum`, 0.1) in
/// eval mode; then a learned per-channel `weight` (ones) and `bias` (zeros). torch's
/// options: `.affine(false)` (no weight or bias), `.track_running_stats(false)` (the batch's
/// statistics in eval mode too, no buffers), `.momentum(None)` (a cumulative average).
pub struct BatchNorm {
    name: &'static str,
    ranks: &'static [usize],
    channels: usize,
    /// None with `affine(false)`, as torch's `bn.weight`.
    pub weight: Option<Parameter>,
    pub bias: Option<Parameter>,
    /// None with `track_running_stats(false)`, as torch's `bn.running_mean`.
    pub running_mean: Option<Parameter>,
    pub running_var: Option<Parameter>,
    num_batches_tracked: Option<Parameter>,
    momentum: Option<f64>,
    eps: f64,
    training: bool,
}

/// Per-channel batch normalisation of `[N, C]` or `[N, C, L]` inputs.
pub struct BatchNorm1d;
/// Per-channel batch normalisation of `[N, C, H, W]` inputs.
pub struct BatchNorm2d;
/// Per-channel batch normalisation of `[N, C, D, H, W]` inputs.
pub struct BatchNorm3d;

impl BatchNorm1d {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(channels: usize) -> BatchNorm {
        BatchNorm::with("BatchNorm1d", &[2, 3], channels)
    }
}

impl BatchNorm2d {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(channels: usize) -> BatchNorm {
        BatchNorm::with("BatchNorm2d", &[4], channels)
    }
}

impl BatchNorm3d {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(channels: usize) -> BatchNorm {
        BatchNorm::with("BatchNorm3d", &[5], channels)
    }
}

impl BatchNorm {
    fn with(name: &'static str, ranks: &'static [usize], channels: usize) -> BatchNorm {
        let (weight, bias) = affine(vec![channels]);
        let (mean, var, count) = running(channels);
        BatchNorm {
            name,
            ranks,
            channels,
            weight: Some(weight),
            bias: Some(bias),
            running_mean: Some(mean),
            running_var: Some(var),
            num_batches_tracked: Some(count),
            momentum: Some(0.1),
            eps: 1e-5,
            training: true,
        }
    }

    /// The running statistics' update rate (torch's `momentum`, default 0.1); `None` makes
    /// them the plain average of every batch seen (torch's `momentum=None`).
    pub fn momentum(mut self, momentum: impl Into<Option<f64>>) -> BatchNorm {
        self.momentum = momentum.into();
        self
    }

    /// Added to the variance before the square root (default 1e-5).
    pub fn eps(mut self, eps: f64) -> BatchNorm {
        self.eps = eps;
        self
    }

    /// Whether the layer learns a per-channel scale and shift (torch's `affine`, default on).
    pub fn affine(mut self, on: bool) -> BatchNorm {
        let (w, b) = affine(vec![self.channels]);
        (self.weight, self.bias) = if on { (Some(w), Some(b)) } else { (None, None) };
        self
    }

    /// Whether it keeps running statistics for eval mode (torch's `track_running_stats`,
    /// default on); without them, eval mode normalises by the batch's statistics too.
    pub fn track_running_stats(mut self, on: bool) -> BatchNorm {
        let (m, v, n) = running(self.channels);
        (
            self.running_mean,
            self.running_var,
            self.num_batches_tracked,
        ) = if on {
            (Some(m), Some(v), Some(n))
        } else {
            (None, None, None)
        };
        self
    }

    /// This layer's settings for `channels` channels, its tensors new (a lazy layer's).
    pub(super) fn with_channels(&self, channels: usize) -> BatchNorm {
        let mut made = BatchNorm::with(self.name, self.ranks, channels)
            .momentum(self.momentum)
            .eps(self.eps)
            .affine(self.weight.is_some())
            .track_running_stats(self.running_mean.is_some());
        made.training = self.training;
        made
    }

    /// The input shapes it takes, with `channels` channels.
    pub(super) fn expected(&self, channels: &str) -> String {
        match self.ranks {
            [4] => format!("[N, {channels}, H, W]"),
            [5] => format!("[N, {channels}, D, H, W]"),
            _ => format!("[N, {channels}] or [N, {channels}, L]"),
        }
    }

    pub(super) fn is_training(&self) -> bool {
        self.training
    }

    pub(super) fn eps_of(&self) -> f64 {
        self.eps
    }

    pub(super) fn takes_rank(&self, rank: usize) -> bool {
        self.ranks.contains(&rank)
    }

    /// Its tensors that depend on the channel count, parameters then buffers (a lazy
    /// layer's placeholders), and their handles.
    pub(super) fn sized(&mut self) -> Vec<&mut Parameter> {
        [
            &mut self.weight,
            &mut self.bias,
            &mut self.running_mean,
            &mut self.running_var,
            &mut self.num_batches_tracked,
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

impl Module for BatchNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if !self.ranks.contains(&x.rank()) || x.shape()[1] != self.channels {
            return Err(Error::BadShape(format!(
                "{}: expected an input {}, got shape {:?}",
                self.describe(),
                self.expected(&self.channels.to_string()),
                x.shape()
            )));
        }
        if let Some(p) = self.weight.as_ref().or(self.running_mean.as_ref()) {
            same_device(self, p, x)?;
        }
        // A summary's shape pass (zeros) must not move the running statistics.
        let training = self.training && !SHAPE_PASS.with(std::cell::Cell::get);
        let tensor = |p: &Option<Parameter>| p.as_ref().map(Parameter::tensor);
        let (rm, rv) = (tensor(&self.running_mean), tensor(&self.running_var));
        let (w, b) = (tensor(&self.weight), tensor(&self.bias));
        let count = self.num_batches_tracked.as_ref().map(Parameter::tensor);
        let count = count.filter(|_| training);
        // torch's rate: `momentum`, or with None one over the batches seen, this one counted.
        let factor = match (self.momentum, &count) {
            (Some(m), _) => m,
            (None, Some(n)) => 1.0 / (n.to_vec::<i64>()?[0] + 1) as f64,
            (None, None) => 0.0,
        };
        // Without running statistics, the batch's normalise in eval mode too (torch's).
        let batch_stats = training || rm.is_none();
        let y = batch_norm(
            x,
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            batch_stats,
            factor,
            self.eps,
        )?;
        if let Some(n) = count {
            no_grad(|| n.add_(1))?;
        }
        Ok(y)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.weight.iter().chain(&self.bias).cloned().collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        match &self.weight {
            Some(w) => weight_and_bias(w, &self.bias),
            None => Vec::new(),
        }
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        match (
            &self.running_mean,
            &self.running_var,
            &self.num_batches_tracked,
        ) {
            (Some(m), Some(v), Some(n)) => running_named(&(m.clone(), v.clone(), n.clone())),
            _ => Vec::new(),
        }
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!(
            "{}({}, eps={}, momentum={}, affine={}, track_running_stats={})",
            self.name,
            self.channels,
            py_float(self.eps),
            py_momentum(self.momentum),
            py_bool(self.weight.is_some()),
            py_bool(self.running_mean.is_some())
        )
    }
}

/// torch's `nn.InstanceNorm1d` / `2d` / `3d`: each channel of each sample normalised on its
/// own, as style transfer and GAN generators use it; torch's defaults, no learned scale and
/// no running statistics. `.affine(true)` adds a learned scale (ones) and shift (zeros) per
/// channel; `.track_running_stats(true)` keeps running statistics (moved by `momentum`, 0.1,
/// in training; `None` leaves them) that normalise in eval mode. Takes unbatched input too.
pub struct InstanceNorm {
    name: &'static str,
    rank: usize,
    channels: usize,
    eps: f64,
    momentum: Option<f64>,
    affine: Option<(Parameter, Parameter)>,
    running: Option<Running>,
    training: bool,
}

/// torch's `nn.InstanceNorm1d`: [`InstanceNorm`] over `[N, C, L]` or `[C, L]`.
pub type InstanceNorm1d = InstanceNorm;
/// torch's `nn.InstanceNorm2d`: [`InstanceNorm`] over `[N, C, H, W]` or `[C, H, W]`.
pub type InstanceNorm2d = InstanceNorm;
/// torch's `nn.InstanceNorm3d`: [`InstanceNorm`] over `[N, C, D, H, W]` or `[C, D, H, W]`.
pub type InstanceNorm3d = InstanceNorm;

impl InstanceNorm {
    fn with(name: &'static str, rank: usize, num_features: usize) -> InstanceNorm {
        InstanceNorm {
            name,
            rank,
            channels: num_features,
            eps: 1e-5,
            momentum: Some(0.1),
            affine: None,
            running: None,
            training: true,
        }
    }
    /// Over `[N, C, L]` (torch's `InstanceNorm1d(num_features)`).
    pub fn new_1d(num_features: usize) -> InstanceNorm {
        InstanceNorm::with("InstanceNorm1d", 3, num_features)
    }
    /// Over `[N, C, H, W]` (torch's `InstanceNorm2d(num_features)`).
    pub fn new_2d(num_features: usize) -> InstanceNorm {
        InstanceNorm::with("InstanceNorm2d", 4, num_features)
    }
    /// Over `[N, C, D, H, W]` (torch's `InstanceNorm3d(num_features)`).
    pub fn new_3d(num_features: usize) -> InstanceNorm {
        InstanceNorm::with("InstanceNorm3d", 5, num_features)
    }
    /// Added to the variance before the square root (default 1e-5).
    pub fn eps(mut self, eps: f64) -> InstanceNorm {
        self.eps = eps;
        self
    }
    /// A learned scale (1) and shift (0) per channel, torch's `affine=True`.
    pub fn affine(mut self, on: bool) -> InstanceNorm {
        self.affine = on.then(|| affine(vec![self.channels]));
        self
    }
    /// Running statistics for eval mode, torch's `track_running_stats=True`.
    pub fn track_running_stats(mut self, on: bool) -> InstanceNorm {
        self.running = on.then(|| running(self.channels));
        self
    }
    /// The running statistics' update rate (default 0.1; torch's `None` leaves them as they
    /// are).
    pub fn momentum(mut self, momentum: impl Into<Option<f64>>) -> InstanceNorm {
        self.momentum = momentum.into();
        self
    }

    /// This layer's settings for `channels` channels, its tensors new (a lazy layer's).
    pub(super) fn with_channels(&self, channels: usize) -> InstanceNorm {
        let mut made = InstanceNorm::with(self.name, self.rank, channels)
            .eps(self.eps)
            .momentum(self.momentum)
            .affine(self.affine.is_some())
            .track_running_stats(self.running.is_some());
        made.training = self.training;
        made
    }

    /// The number of dimensions of a batched input.
    pub(super) fn rank(&self) -> usize {
        self.rank
    }

    /// The input shapes it takes, with `channels` channels.
    pub(super) fn expected(&self, channels: &str) -> String {
        let rest = ["L", "H, W", "D, H, W"][self.rank - 3];
        format!("[N, {channels}, {rest}] or [{channels}, {rest}]")
    }

    /// Its tensors that depend on the channel count, parameters then buffers (a lazy
    /// layer's placeholders), and their handles.
    pub(super) fn sized(&mut self) -> Vec<&mut Parameter> {
        let mut out = Vec::new();
        if let Some((w, b)) = &mut self.affine {
            out.extend([w, b]);
        }
        if let Some((m, v, n)) = &mut self.running {
            out.extend([m, v, n]);
        }
        out
    }
}

impl Module for InstanceNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.rank() + 1 == self.rank && x.rank() >= 2 {
            return self.forward(&x.unsqueeze(0)?)?.squeeze(0);
        }
        if x.rank() != self.rank || x.shape()[1] != self.channels {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape {}, got {:?}",
                self.describe(),
                self.expected(&self.channels.to_string()),
                x.shape()
            )));
        }
        let first = self.affine.as_ref().map(|a| &a.0);
        if let Some(p) = first.or(self.running.as_ref().map(|r| &r.0)) {
            same_device(self, p, x)?;
        }
        let (w, b) = match &self.affine {
            Some((w, b)) => (Some(w.tensor()), Some(b.tensor())),
            None => (None, None),
        };
        let (rm, rv) = match &self.running {
            Some((m, v, _)) => (Some(m.tensor()), Some(v.tensor())),
            None => (None, None),
        };
        // A summary's shape pass must not move the running statistics.
        let training = self.training && !SHAPE_PASS.with(std::cell::Cell::get);
        instance_norm(
            x,
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            training || rm.is_none(),
            self.momentum.unwrap_or(0.0),
            self.eps,
        )
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.affine
            .iter()
            .flat_map(|(w, b)| [w.clone(), b.clone()])
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        match &self.affine {
            Some((w, b)) => weight_and_bias(w, &Some(b.clone())),
            None => Vec::new(),
        }
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        self.running.as_ref().map(running_named).unwrap_or_default()
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn describe(&self) -> String {
        format!(
            "{}({}, eps={}, momentum={}, affine={}, track_running_stats={})",
            self.name,
            self.channels,
            py_float(self.eps),
            py_momentum(self.momentum),
            py_bool(self.affine.is_some()),
            py_bool(self.running.is_some())
        )
    }
}
