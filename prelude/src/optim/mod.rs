//! Optimisers in torch's `torch.optim` names. Each holds the model's [`Parameter`]s (shared
//! cells, so the model sees every update) and its own state per parameter; `step` runs under
//! [`no_grad`] with tensor ops, so it updates the parameters on their own device.

use crate::autograd::no_grad;
use crate::error::Result;
use crate::nn::Parameter;
use crate::tensor::{AdamCoeffs, Tensor};

pub mod lr_scheduler;
mod plateau;
pub(crate) mod state;

use state::{Loader, Saver};
use std::path::Path;

/// What every optimiser does.
pub trait Optimizer {
    /// One update of every parameter that has a gradient.
    fn step(&mut self) -> Result<()>;
    /// Clears every parameter's gradient (torch's `set_to_none=True`).
    fn zero_grad(&self);
    /// The learning rate the next step uses (torch's `param_groups[0]["lr"]`).
    fn lr(&self) -> f64;
    /// Sets the learning rate, as the schedulers in [`lr_scheduler`] do.
    fn set_lr(&mut self, lr: f64);
    /// The parameters it updates (torch's `param_groups[0]["params"]`): what
    /// `amp::GradScaler` unscales and checks before a step.
    fn params(&self) -> &[Parameter];
    /// Its state and hyperparameters as named tensors, torch's `optimizer.state_dict()`
    /// flattened with dots: `state.<i>.<key>` per parameter (`exp_avg`, `exp_avg_sq` and
    /// `step` for Adam, `momentum_buffer` for SGD, ...), `param_groups.0.<name>` for `lr` and
    /// the rest. Copies: training on does not change them.
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>>;
    /// Restores what [`Optimizer::state_dict`] gave, for the same parameters in the same
    /// order (a checkpoint of the same model): the moments, the step count and the
    /// hyperparameters, the moments moved to each parameter's device and dtype. A name it does
    /// not know or a shape that does not fit is an error, and then nothing has changed.
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()>;
}

/// Saves an optimiser's [`Optimizer::state_dict`] in the safetensors format: with
/// [`crate::nn::save_safetensors`] for the model, a checkpoint that resumes training.
pub fn save_safetensors(opt: &dyn Optimizer, path: impl AsRef<Path>) -> Result<()> {
    crate::nn::safetensors::save(&opt.state_dict()?, path)
}

/// Loads a state saved by [`save_safetensors`] into an optimiser made for the same model.
pub fn load_safetensors(opt: &mut dyn Optimizer, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let state = crate::nn::safetensors::load(path)?;
    opt.load_state_dict(&state)
        .map_err(|e| crate::error::Error::Invalid(format!("{}: {e}", path.display())))
}

/// What every optimiser shares: `lr`/`set_lr` and `zero_grad`, inherent and in the trait
/// (inherent too, so `opt.step()` works without the trait in scope), and the trait's `step`
/// calling the inherent one.
macro_rules! optimizer {
    ($t:ty) => {
        impl $t {
            /// The learning rate the next step uses.
            pub fn lr(&self) -> f64 {
                self.lr
            }
            pub fn set_lr(&mut self, lr: f64) {
                self.lr = lr;
            }
            /// Clears every parameter's gradient.
            pub fn zero_grad(&self) {
                for p in &self.params {
                    p.zero_grad();
                }
            }
        }
        impl Optimizer for $t {
            fn step(&mut self) -> Result<()> {
                <$t>::step(self)
            }
            fn zero_grad(&self) {
                <$t>::zero_grad(self)
            }
            fn lr(&self) -> f64 {
                <$t>::lr(self)
            }
            fn set_lr(&mut self, lr: f64) {
                <$t>::set_lr(self, lr)
            }
            fn params(&self) -> &[Parameter] {
                &self.params
            }
            fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
                <$t>::state_dict(self)
            }
            fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
                <$t>::load_state_dict(self, state)
            }
        }
    };
}

/// Stochastic gradient descent with optional momentum and weight decay, torch's algorithm
/// (`buf = momentum * buf + g`, no dampening, `p -= lr * buf`).
pub struct SGD {
    params: Vec<Parameter>,
    lr: f64,
    momentum: f64,
    weight_decay: f64,
    buffers: Vec<Option<Tensor>>,
}

impl SGD {
    pub fn new(params: Vec<Parameter>, lr: f64) -> SGD {
        let n = params.len();
        SGD {
            params,
            lr,
            momentum: 0.0,
            weight_decay: 0.0,
            buffers: vec![None; n],
        }
    }
    pub fn momentum(mut self, momentum: f64) -> SGD {
        self.momentum = momentum;
        self
    }
    pub fn weight_decay(mut self, weight_decay: f64) -> SGD {
        self.weight_decay = weight_decay;
        self
    }
}

optimizer!(SGD);

impl SGD {
    /// See [`Optimizer::state_dict`]: `state.<i>.momentum_buffer` once a step has made it.
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        s.state("momentum_buffer", &self.buffers)?;
        s.hyper("lr", &[self.lr])?;
        s.hyper("momentum", &[self.momentum])?;
        s.hyper("weight_decay", &[self.weight_decay])?;
        Ok(s.done())
    }

    /// See [`Optimizer::load_state_dict`].
    pub fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::new("SGD", state);
        let buffers = l.state("momentum_buffer", &self.params)?;
        let lr = l.scalar("lr", self.lr)?;
        let momentum = l.scalar("momentum", self.momentum)?;
        let weight_decay = l.scalar("weight_decay", self.weight_decay)?;
        l.finish()?;
        (self.buffers, self.lr, self.momentum, self.weight_decay) =
            (buffers, lr, momentum, weight_decay);
        Ok(())
    }
}

impl SGD {
    /// One update of every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
        no_grad(|| {
            for (p, buf) in self.params.iter().zip(&mut self.buffers) {
                let Some(mut g) = p.grad() else { continue };
                let w = p.tensor();
                if self.weight_decay != 0.0 {
                    g = g.add(&w.mul(self.weight_decay)?)?;
                }
                if self.momentum != 0.0 {
                    let b = match buf.take() {
                        Some(b) => b.mul(self.momentum)?.add(&g)?,
                        None => g,
                    };
                    g = b.clone();
                    *buf = Some(b);
                }
                p.set_data(w.sub(&g.mul(self.lr)?)?)?;
            }
            Ok(())
        })
    }
}

/// Adam (Kingma & Ba), torch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight
/// decay (L2 added to the gradient, as torch's `Adam`; [`AdamW`] decouples it).
pub struct Adam {
    params: Vec<Parameter>,
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    /// AdamW: the decay shrinks the weights directly instead of joining the gradient.
    decoupled: bool,
    t: i32,
    m: Vec<Option<Tensor>>,
    v: Vec<Option<Tensor>>,
}

impl Adam {
    pub fn new(params: Vec<Parameter>, lr: f64) -> Adam {
        let n = params.len();
        Adam {
            params,
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            t: 0,
            m: vec![None; n],
            v: vec![None; n],
        }
    }
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Adam {
        self.betas = (beta1, beta2);
        self
    }
    pub fn eps(mut self, eps: f64) -> Adam {
        self.eps = eps;
        self
    }
    pub fn weight_decay(mut self, weight_decay: f64) -> Adam {
        self.weight_decay = weight_decay;
        self
    }
}

optimizer!(Adam);

impl Adam {
    /// See [`Optimizer::state_dict`]: `state.<i>.step`, `exp_avg` and `exp_avg_sq` for every
    /// parameter a step has updated.
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        s.step(self.t as i64, &self.m)?;
        s.state("exp_avg", &self.m)?;
        s.state("exp_avg_sq", &self.v)?;
        s.hyper("lr", &[self.lr])?;
        s.hyper("betas", &[self.betas.0, self.betas.1])?;
        s.hyper("eps", &[self.eps])?;
        s.hyper("weight_decay", &[self.weight_decay])?;
        Ok(s.done())
    }

    /// See [`Optimizer::load_state_dict`].
    pub fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::new(if self.decoupled { "AdamW" } else { "Adam" }, state);
        let t = l.step(self.params.len())?;
        let m = l.state("exp_avg", &self.params)?;
        let v = l.state("exp_avg_sq", &self.params)?;
        let lr = l.scalar("lr", self.lr)?;
        let betas = l.hyper("betas", 2)?.map_or(self.betas, |b| (b[0], b[1]));
        let eps = l.scalar("eps", self.eps)?;
        let weight_decay = l.scalar("weight_decay", self.weight_decay)?;
        l.finish()?;
        if let Some(i) = (0..m.len()).find(|&i| m[i].is_some() != v[i].is_some()) {
            return Err(crate::error::Error::Invalid(format!(
                "Adam load_state_dict: parameter {i} has one of exp_avg and exp_avg_sq, not both"
            )));
        }
        let t = i32::try_from(t).map_err(|_| {
            crate::error::Error::Invalid(format!("Adam load_state_dict: step {t} is too large"))
        })?;
        (self.t, self.m, self.v) = (t, m, v);
        (self.lr, self.betas, self.eps, self.weight_decay) = (lr, betas, eps, weight_decay);
        Ok(())
    }
}

impl Adam {
    /// One update of every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
        self.t += 1;
        let (b1, b2) = self.betas;
        let bc1 = 1.0 - b1.powi(self.t);
        let bc2 = 1.0 - b2.powi(self.t);
        // AdamW shrinks the weights by lr * weight_decay first; Adam adds the decay to the
        // gradient (L2) below or in the fused pass.
        let (decay, l2) = match self.decoupled {
            true => (1.0 - self.lr * self.weight_decay, 0.0),
            false => (1.0, self.weight_decay),
        };
        no_grad(|| {
            for (i, p) in self.params.iter().enumerate() {
                let Some(mut g) = p.grad() else { continue };
                let mut w = p.tensor();
                if decay != 1.0 {
                    w = w.mul(decay)?;
                }
                // On the CPU one fused pass (tensor/fused.rs): the op-by-op form below
                // allocates a parameter-sized buffer per op, ~1 s a step for 11 M parameters.
                if self.m[i].is_none() && !w.is_cuda() {
                    self.m[i] = w.fused_state_like();
                    self.v[i] = w.fused_state_like();
                }
                if let (Some(m), Some(v)) = (&self.m[i], &self.v[i]) {
                    let c = AdamCoeffs {
                        beta1: b1,
                        beta2: b2,
                        lr_bc1: self.lr / bc1,
                        inv_sqrt_bc2: 1.0 / bc2.sqrt(),
                        eps: self.eps,
                        weight_decay: l2,
                    };
                    // Handles on the parameter's storage accounted for: the parameter's
                    // slot and `w` (a decayed `w` is a fresh tensor, held once).
                    if let Some(new_w) = w.fused_adam_cpu(&g, m, v, c, 2)? {
                        p.set_data(new_w)?;
                        continue;
                    }
                }
                if l2 != 0.0 {
                    g = g.add(&w.mul(l2)?)?;
                }
                let m = match self.m[i].take() {
                    Some(m) => m.mul(b1)?.add(&g.mul(1.0 - b1)?)?,
                    None => g.mul(1.0 - b1)?,
                };
                let g2 = g.mul(&g)?.mul(1.0 - b2)?;
                let v = match self.v[i].take() {
                    Some(v) => v.mul(b2)?.add(&g2)?,
                    None => g2,
                };
                // torch's form: p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
                let denom = v.sqrt()?.mul(1.0 / bc2.sqrt())?.add(self.eps)?;
                let update = m.div(&denom)?.mul(self.lr / bc1)?;
                p.set_data(w.sub(&update)?)?;
                self.m[i] = Some(m);
                self.v[i] = Some(v);
            }
            Ok(())
        })
    }
}

/// torch's `AdamW` (Loshchilov & Hutter): Adam with the weight decay decoupled from the
/// gradient, `p *= 1 - lr * weight_decay` before each step; torch's default decay 0.01.
/// `AdamW::new` gives an [`Adam`] set up that way (its builder methods apply).
pub struct AdamW;

impl AdamW {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(params: Vec<Parameter>, lr: f64) -> Adam {
        let mut a = Adam::new(params, lr).weight_decay(0.01);
        a.decoupled = true;
        a
    }
}

/// RMSprop (Hinton), torch's algorithm and defaults: `sq = alpha * sq + (1 - alpha) * g^2`,
/// `p -= lr * g / (sqrt(sq) + eps)`; alpha 0.99, eps 1e-8, optional momentum and weight
/// decay (L2, added to the gradient).
pub struct RMSprop {
    params: Vec<Parameter>,
    lr: f64,
    alpha: f64,
    eps: f64,
    momentum: f64,
    weight_decay: f64,
    square_avg: Vec<Option<Tensor>>,
    buffers: Vec<Option<Tensor>>,
    /// Steps taken: not used by the update, kept for the state dict as torch keeps it.
    t: i64,
}

impl RMSprop {
    pub fn new(params: Vec<Parameter>, lr: f64) -> RMSprop {
        let n = params.len();
        RMSprop {
            params,
            lr,
            alpha: 0.99,
            eps: 1e-8,
            momentum: 0.0,
            weight_decay: 0.0,
            square_avg: vec![None; n],
            buffers: vec![None; n],
            t: 0,
        }
    }
    pub fn alpha(mut self, alpha: f64) -> RMSprop {
        self.alpha = alpha;
        self
    }
    pub fn eps(mut self, eps: f64) -> RMSprop {
        self.eps = eps;
        self
    }
    pub fn momentum(mut self, momentum: f64) -> RMSprop {
        self.momentum = momentum;
        self
    }
    pub fn weight_decay(mut self, weight_decay: f64) -> RMSprop {
        self.weight_decay = weight_decay;
        self
    }
}

optimizer!(RMSprop);

impl RMSprop {
    /// See [`Optimizer::state_dict`]: `state.<i>.step`, `square_avg` and, with momentum,
    /// `momentum_buffer`.
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        s.step(self.t, &self.square_avg)?;
        s.state("square_avg", &self.square_avg)?;
        s.state("momentum_buffer", &self.buffers)?;
        s.hyper("lr", &[self.lr])?;
        s.hyper("alpha", &[self.alpha])?;
        s.hyper("eps", &[self.eps])?;
        s.hyper("momentum", &[self.momentum])?;
        s.hyper("weight_decay", &[self.weight_decay])?;
        Ok(s.done())
    }

    /// See [`Optimizer::load_state_dict`].
    pub fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::new("RMSprop", state);
        let t = l.step(self.params.len())?;
        let square_avg = l.state("square_avg", &self.params)?;
        let buffers = l.state("momentum_buffer", &self.params)?;
        let lr = l.scalar("lr", self.lr)?;
        let alpha = l.scalar("alpha", self.alpha)?;
        let eps = l.scalar("eps", self.eps)?;
        let momentum = l.scalar("momentum", self.momentum)?;
        let weight_decay = l.scalar("weight_decay", self.weight_decay)?;
        l.finish()?;
        (self.t, self.square_avg, self.buffers) = (t, square_avg, buffers);
        (self.lr, self.alpha, self.eps) = (lr, alpha, eps);
        (self.momentum, self.weight_decay) = (momentum, weight_decay);
        Ok(())
    }
}

impl RMSprop {
    /// One update of every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
        self.t += 1;
        no_grad(|| {
            for (i, p) in self.params.iter().enumerate() {
                let Some(mut g) = p.grad() else { continue };
                let w = p.tensor();
                if self.weight_decay != 0.0 {
                    g = g.add(&w.mul(self.weight_decay)?)?;
                }
                let g2 = g.mul(&g)?.mul(1.0 - self.alpha)?;
                let sq = match self.square_avg[i].take() {
                    Some(s) => s.mul(self.alpha)?.add(&g2)?,
                    None => g2,
                };
                let step = g.div(&sq.sqrt()?.add(self.eps)?)?;
                let step = if self.momentum != 0.0 {
                    let b = match self.buffers[i].take() {
                        Some(b) => b.mul(self.momentum)?.add(&step)?,
                        None => step,
                    };
                    self.buffers[i] = Some(b.clone());
                    b
                } else {
                    step
                };
                p.set_data(w.sub(&step.mul(self.lr)?)?)?;
                self.square_avg[i] = Some(sq);
            }
            Ok(())
        })
    }
}
