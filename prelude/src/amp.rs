//! Automatic mixed precision, torch's `torch.amp`: [`autocast`] regions, in which the matrix
//! products (matmul, `Linear`, convolutions, attention, recurrent layers) run in float16 or
//! bfloat16 (tensor cores on a GPU) while losses and, on CUDA, softmax and normalisation run in
//! float32; and [`GradScaler`], which scales the loss so that small float16 gradients do not
//! flush to zero, and skips the steps whose gradients overflowed.
//!
//! ```no_run
//! # use gpulab::*;
//! # fn main() -> Result<(), gpulab::Error> {
//! let device = Device::cuda_if_available();
//! let model = nn::Sequential::new()
//!     .add(nn::Linear::new(784, 256))
//!     .add(nn::ReLU)
//!     .add(nn::Linear::new(256, 10));
//! model.to(device)?;
//! let mut opt = optim::Adam::new(model.parameters(), 1e-3);
//! let mut scaler = amp::GradScaler::new();
//! let (x, y) = (Tensor::randn((64, 784), device)?, Tensor::zeros_dtype(64, DType::I64, device)?);
//! // The forward pass and the loss in the region, backward and the step outside it.
//! let loss = amp::autocast(device, || F::cross_entropy(&model.forward(&x)?, &y))?;
//! opt.zero_grad();
//! scaler.scale(&loss)?.backward()?;
//! scaler.step(&mut opt)?; // unscales the gradients; skips the step if any is inf or NaN
//! scaler.update()?;
//! # Ok(()) }
//! ```
//!
//! The op lists are torch's (its `autocast_mode.cpp`), for the ops gpulab has; what each op
//! does is in `tensor::autocast`. The regions are per thread and per device type, as torch's.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::optim::Optimizer;
use crate::tensor::autocast as state;
use crate::tensor::{DType, Tensor};
use std::collections::HashMap;

/// Runs `f` in an autocast region for `device`'s type (all CUDA devices, or the CPU) in its
/// default lower precision: float16 on CUDA, bfloat16 on the CPU (torch's
/// `with torch.autocast(device_type):`). Regions nest; the one before is restored when `f`
/// returns or panics. Run `backward` outside the region (gradients follow the forward pass's
/// dtypes wherever it runs).
pub fn autocast<T>(device: Device, f: impl FnOnce() -> T) -> T {
    Autocast::new(device).run(f)
}

/// An autocast region with its settings (torch's `torch.autocast(device_type, dtype=...,
/// enabled=...)`): `Autocast::new(device).dtype(DType::BF16).run(|| ...)`.
#[derive(Clone, Copy, Debug)]
pub struct Autocast {
    device: Device,
    dtype: DType,
    enabled: bool,
}

impl Autocast {
    /// A region for `device`'s type, in its default dtype (float16 on CUDA, bfloat16 on the
    /// CPU), enabled.
    pub fn new(device: Device) -> Autocast {
        Autocast {
            device,
            dtype: state::default_dtype(device),
            enabled: true,
        }
    }

    /// The lower precision: `DType::F16` or `DType::BF16`. Any other dtype disables the
    /// region with a warning, as torch does.
    pub fn dtype(mut self, dtype: DType) -> Autocast {
        self.dtype = dtype;
        self
    }

    /// `false` runs the block with autocast off for this device type (also inside an outer
    /// region), as torch's `enabled=False`.
    pub fn enabled(mut self, enabled: bool) -> Autocast {
        self.enabled = enabled;
        self
    }

    /// Runs `f` in the region.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        let supported = matches!(self.dtype, DType::F16 | DType::BF16);
        if self.enabled && !supported {
            eprintln!(
                "warning: in {} autocast, but the target dtype {} is not supported: autocast \
                 is disabled in this block (it takes float16 or bfloat16)",
                if self.device.is_cuda() { "CUDA" } else { "CPU" },
                self.dtype
            );
        }
        let dtype = (self.enabled && supported).then_some(self.dtype);
        state::with_region(self.device, dtype, f)
    }
}

/// Whether an autocast region is open for `device`'s type on this thread (torch's
/// `torch.is_autocast_enabled(device_type)`).
pub fn is_autocast_enabled(device: Device) -> bool {
    state::region(device).is_some()
}

/// The lower precision of the open region for `device`'s type, or the default a new region
/// takes (torch's `torch.get_autocast_dtype(device_type)`).
pub fn get_autocast_dtype(device: Device) -> DType {
    state::region(device).unwrap_or_else(|| state::default_dtype(device))
}

/// Runs `f` with the CPU's autocast regions applying CUDA's op lists instead of the CPU's
/// (softmax, layer normalisation, `exp`, `log`, `pow`, `sum`, ... in float32 too), so what a
/// CUDA region does to each op can be seen, taught and tested on a machine without a GPU.
/// The precision chosen is the only change: the CPU still computes.
pub fn with_cuda_lists<T>(f: impl FnOnce() -> T) -> T {
    state::with_cuda_lists(f)
}

/// Where an optimizer is in the scaler's iteration (torch's `OptState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Ready,
    Unscaled,
    Stepped,
}

#[derive(Clone, Copy, Debug)]
struct OptState {
    stage: Stage,
    found_inf: bool,
}

/// torch's `torch.amp.GradScaler`: multiplies the loss by a scale factor before `backward`
/// (so float16 gradients keep their small values), divides the gradients by it before the
/// optimizer's step, skips the step when a gradient is inf or NaN, and adapts the factor:
/// halved after a skipped step, doubled after `growth_interval` steps in a row without one.
/// torch's defaults: start at 65,536, growth 2, backoff 0.5, interval 2000.
#[derive(Clone, Debug)]
pub struct GradScaler {
    enabled: bool,
    scale: f32,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: u64,
    growth_tracker: u64,
    /// Per optimizer (by address, as torch keys them by `id`), since the last `update`.
    states: HashMap<usize, OptState>,
}

impl Default for GradScaler {
    fn default() -> GradScaler {
        GradScaler::new()
    }
}

impl GradScaler {
    /// A scaler with torch's defaults, enabled.
    pub fn new() -> GradScaler {
        GradScaler {
            enabled: true,
            scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            growth_tracker: 0,
            states: HashMap::new(),
        }
    }

    /// The first scale factor (torch's `init_scale`, 2^16).
    pub fn init_scale(mut self, scale: f64) -> GradScaler {
        self.scale = scale as f32;
        self
    }

    /// The factor the scale grows by after `growth_interval` unskipped steps (2).
    pub fn growth_factor(mut self, factor: f64) -> GradScaler {
        self.growth_factor = factor;
        self
    }

    /// The factor the scale shrinks by after a skipped step (0.5).
    pub fn backoff_factor(mut self, factor: f64) -> GradScaler {
        self.backoff_factor = factor;
        self
    }

    /// How many unskipped steps in a row before the scale grows (2000).
    pub fn growth_interval(mut self, steps: u64) -> GradScaler {
        self.growth_interval = steps;
        self
    }

    /// `false` makes every method a pass-through (`scale` returns the loss, `step` steps),
    /// so one training loop serves with and without mixed precision (torch's `enabled`).
    pub fn enabled(mut self, enabled: bool) -> GradScaler {
        self.enabled = enabled;
        self
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The current scale factor (1 when disabled), torch's `get_scale()`.
    pub fn get_scale(&self) -> f64 {
        if self.enabled {
            self.scale as f64
        } else {
            1.0
        }
    }

    /// Unskipped steps since the scale last changed.
    pub fn get_growth_tracker(&self) -> u64 {
        self.growth_tracker
    }

    /// `outputs` times the scale factor (a float32 0-d tensor, so a float16 loss comes back
    /// float32, as in torch); call `backward` on the result.
    pub fn scale(&self, outputs: &Tensor) -> Result<Tensor> {
        if !self.enabled {
            return Ok(outputs.clone());
        }
        let s = Tensor::full_dtype(
            Vec::<usize>::new(),
            self.scale as f64,
            DType::F32,
            outputs.device(),
        )?;
        outputs.mul(&s)
    }

    fn key<O: Optimizer + ?Sized>(optimizer: &O) -> usize {
        optimizer as *const O as *const () as usize
    }

    fn stage<O: Optimizer + ?Sized>(&self, optimizer: &O) -> OptState {
        self.states
            .get(&Self::key(optimizer))
            .copied()
            .unwrap_or(OptState {
                stage: Stage::Ready,
                found_inf: false,
            })
    }

    /// Divides the gradients of `optimizer`'s parameters by the scale factor in place and
    /// records whether any is inf or NaN (torch's `unscale_`): call it before clipping
    /// gradients; `step` calls it when it was not called.
    pub fn unscale_<O: Optimizer + ?Sized>(&mut self, optimizer: &O) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        match self.stage(optimizer).stage {
            Stage::Unscaled => {
                return Err(Error::Invalid(
                    "GradScaler::unscale_ has already been called on this optimizer since the \
                     last update()"
                        .into(),
                ))
            }
            Stage::Stepped => {
                return Err(Error::Invalid(
                    "GradScaler::unscale_ is being called after step(); call update() first".into(),
                ))
            }
            Stage::Ready => {}
        }
        // torch's inv_scale: the reciprocal in float64, rounded to float32.
        let inv = (1.0 / self.scale as f64) as f32 as f64;
        let mut non_finite: Option<Tensor> = None;
        crate::autograd::no_grad(|| -> Result<()> {
            for p in optimizer.params() {
                let Some(g) = p.grad() else { continue };
                if g.dtype() == DType::F16 {
                    return Err(Error::Invalid(format!(
                        "GradScaler: attempting to unscale float16 gradients (a parameter of \
                         shape {:?} is float16). Keep the parameters in float32 and let \
                         amp::autocast run the ops in float16",
                        g.shape()
                    )));
                }
                let bad = g.isfinite()?.logical_not()?.sum()?;
                non_finite = Some(match non_finite.take() {
                    Some(n) => n.add(&bad)?,
                    None => bad,
                });
                if inv != 1.0 {
                    p.tensor().set_grad(Some(g.mul(inv)?));
                }
            }
            Ok(())
        })?;
        // One read from the device for all the parameters.
        let found_inf = match non_finite {
            Some(n) => n.item::<i64>()? > 0,
            None => false,
        };
        self.states.insert(
            Self::key(optimizer),
            OptState {
                stage: Stage::Unscaled,
                found_inf,
            },
        );
        Ok(())
    }

    /// Unscales the gradients (unless `unscale_` did), then runs `optimizer.step()` unless a
    /// gradient is inf or NaN. Returns whether the step ran.
    pub fn step<O: Optimizer + ?Sized>(&mut self, optimizer: &mut O) -> Result<bool> {
        if !self.enabled {
            optimizer.step()?;
            return Ok(true);
        }
        let st = self.stage(optimizer);
        if st.stage == Stage::Stepped {
            return Err(Error::Invalid(
                "GradScaler::step has already been called since the last update()".into(),
            ));
        }
        if st.stage == Stage::Ready {
            self.unscale_(optimizer)?;
        }
        let key = Self::key(optimizer);
        let state = self.states.get_mut(&key).expect("unscale_ recorded it");
        state.stage = Stage::Stepped;
        if state.found_inf {
            return Ok(false);
        }
        optimizer.step()?;
        Ok(true)
    }

    /// Adapts the scale factor from this iteration's steps (torch's `update()`): halved (the
    /// backoff factor) when any optimizer found an inf or NaN, else doubled (the growth
    /// factor) once `growth_interval` steps in a row were clean.
    pub fn update(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        if self.states.is_empty() {
            return Err(Error::Invalid(
                "GradScaler::update: no inf checks were recorded prior to update (call \
                 scaler.step(&mut optimizer) first)"
                    .into(),
            ));
        }
        let found_inf = self.states.values().any(|s| s.found_inf);
        if found_inf {
            self.scale = (self.scale as f64 * self.backoff_factor) as f32;
            self.growth_tracker = 0;
        } else {
            let successful = self.growth_tracker + 1;
            if successful == self.growth_interval {
                let grown = (self.scale as f64 * self.growth_factor) as f32;
                if grown.is_finite() {
                    self.scale = grown;
                }
                self.growth_tracker = 0;
            } else {
                self.growth_tracker = successful;
            }
        }
        self.states.clear();
        Ok(())
    }

    /// Sets the scale factor (torch's `update(new_scale)`), starting a new iteration.
    pub fn update_to(&mut self, new_scale: f64) {
        if self.enabled {
            self.scale = new_scale as f32;
            self.states.clear();
        }
    }

    /// The scale and its settings as named tensors under torch's keys (`scale`,
    /// `growth_factor`, `backoff_factor`, `growth_interval`, `_growth_tracker`), for a
    /// checkpoint beside the model's and the optimizer's; empty when disabled, as torch's.
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        if !self.enabled {
            return Ok(Vec::new());
        }
        let mut s = crate::optim::state::Saver::new();
        s.value("scale", &[self.scale as f64])?;
        s.value("growth_factor", &[self.growth_factor])?;
        s.value("backoff_factor", &[self.backoff_factor])?;
        s.value("growth_interval", &[self.growth_interval as f64])?;
        s.value("_growth_tracker", &[self.growth_tracker as f64])?;
        Ok(s.done())
    }

    /// Restores what [`GradScaler::state_dict`] gave (nothing to do when disabled, as in
    /// torch). An empty state, saved from a disabled scaler, is an error, as in torch; so is a
    /// name it does not know, and then nothing has changed.
    pub fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        if state.is_empty() {
            return Err(Error::Invalid(
                "GradScaler load_state_dict: the state is empty, as a disabled scaler saves it"
                    .into(),
            ));
        }
        let mut l = crate::optim::state::Loader::named(
            "GradScaler",
            "expected scale, growth_factor, backoff_factor, growth_interval, _growth_tracker",
            state,
        );
        let scale = l.value("scale", self.scale as f64)?;
        let growth_factor = l.value("growth_factor", self.growth_factor)?;
        let backoff_factor = l.value("backoff_factor", self.backoff_factor)?;
        let growth_interval = l.count("growth_interval", self.growth_interval)?;
        let growth_tracker = l.count("_growth_tracker", self.growth_tracker)?;
        l.finish()?;
        self.scale = scale as f32;
        (self.growth_factor, self.backoff_factor) = (growth_factor, backoff_factor);
        (self.growth_interval, self.growth_tracker) = (growth_interval, growth_tracker);
        self.states.clear();
        Ok(())
    }
}
