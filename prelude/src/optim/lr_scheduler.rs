//! Learning-rate schedules in torch's `torch.optim.lr_scheduler` names and formulas. A
//! scheduler reads the optimiser's starting rate when it is made and sets the rate for the
//! next epoch on each `step(&mut opt)` (call it once per epoch, after the optimiser's steps,
//! as in torch). It takes the optimiser by argument rather than holding it, so the training
//! loop keeps using the optimiser in between.

use super::Optimizer;

/// What every schedule does.
pub trait LRScheduler {
    /// Moves to the next epoch and sets the optimiser's rate for it.
    fn step(&mut self, opt: &mut dyn Optimizer);
    /// The rate the last `step` set (the starting rate before any).
    fn get_last_lr(&self) -> f64;
}

/// The epoch count and rates every schedule keeps.
#[derive(Clone, Debug)]
struct Progress {
    base_lr: f64,
    last_lr: f64,
    epoch: usize,
}

impl Progress {
    fn new(opt: &dyn Optimizer) -> Progress {
        Progress {
            base_lr: opt.lr(),
            last_lr: opt.lr(),
            epoch: 0,
        }
    }

    fn set(&mut self, opt: &mut dyn Optimizer, lr: f64) {
        self.last_lr = lr;
        opt.set_lr(lr);
    }
}

/// Multiplies the rate by `gamma` every `step_size` epochs (torch's `StepLR`; gamma 0.1 there
/// by default).
#[derive(Clone, Debug)]
pub struct StepLR {
    at: Progress,
    step_size: usize,
    gamma: f64,
}

impl StepLR {
    pub fn new(opt: &dyn Optimizer, step_size: usize, gamma: f64) -> StepLR {
        StepLR {
            at: Progress::new(opt),
            step_size: step_size.max(1),
            gamma,
        }
    }
}

impl LRScheduler for StepLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.at.epoch += 1;
        // torch's chainable form: the current rate times gamma at each boundary.
        let lr = if self.at.epoch.is_multiple_of(self.step_size) {
            opt.lr() * self.gamma
        } else {
            opt.lr()
        };
        self.at.set(opt, lr);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
}

/// Multiplies the rate by `gamma` every epoch (torch's `ExponentialLR`).
#[derive(Clone, Debug)]
pub struct ExponentialLR {
    at: Progress,
    gamma: f64,
}

impl ExponentialLR {
    pub fn new(opt: &dyn Optimizer, gamma: f64) -> ExponentialLR {
        ExponentialLR {
            at: Progress::new(opt),
            gamma,
        }
    }
}

impl LRScheduler for ExponentialLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.at.epoch += 1;
        let lr = opt.lr() * self.gamma;
        self.at.set(opt, lr);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
}

/// Half a cosine from the starting rate down to `eta_min` over `t_max` epochs, then back up
/// (torch's `CosineAnnealingLR`, its recursive form, so the rates match torch's step by step).
#[derive(Clone, Debug)]
pub struct CosineAnnealingLR {
    at: Progress,
    t_max: usize,
    eta_min: f64,
}

impl CosineAnnealingLR {
    pub fn new(opt: &dyn Optimizer, t_max: usize, eta_min: f64) -> CosineAnnealingLR {
        CosineAnnealingLR {
            at: Progress::new(opt),
            t_max: t_max.max(1),
            eta_min,
        }
    }
}

impl LRScheduler for CosineAnnealingLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        use std::f64::consts::PI;
        self.at.epoch += 1;
        let (e, t) = (self.at.epoch as f64, self.t_max as f64);
        let (base, lr, min) = (self.at.base_lr, opt.lr(), self.eta_min);
        let next = if (self.at.epoch as i64 - 1 - self.t_max as i64)
            .rem_euclid(2 * self.t_max as i64)
            == 0
        {
            lr + (base - min) * (1.0 - (PI / t).cos()) / 2.0
        } else {
            (1.0 + (PI * e / t).cos()) / (1.0 + (PI * (e - 1.0) / t).cos()) * (lr - min) + min
        };
        self.at.set(opt, next);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
}
