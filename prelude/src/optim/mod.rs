//! Optimisers in torch's `torch.optim` names. Each holds the model's [`Parameter`]s (shared
//! cells, so the model sees every update) and its own state per parameter; `step` runs under
//! [`no_grad`] with tensor ops, so it updates the parameters on their own device.

use crate::autograd::no_grad;
use crate::error::Result;
use crate::nn::Parameter;
use crate::tensor::{AdamCoeffs, Tensor};

pub mod lr_scheduler;

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
    /// One update of every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
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
