//! Learning-rate schedules in torch's `torch.optim.lr_scheduler` names and formulas. A
//! scheduler reads the optimiser's starting rate when it is made and sets the rate for the
//! next epoch on each `step(&mut opt)` (call it once per epoch, after the optimiser's steps,
//! as in torch). It takes the optimiser by argument rather than holding it, so the training
//! loop keeps using the optimiser in between.

pub use super::plateau::{PlateauMode, ReduceLROnPlateau, ThresholdMode};
use super::state::{Loader, Saver};
use super::Optimizer;
use crate::error::Result;
use crate::tensor::Tensor;

/// What every schedule does.
pub trait LRScheduler {
    /// Moves to the next epoch and sets the optimiser's rate for it.
    fn step(&mut self, opt: &mut dyn Optimizer);
    /// The rate the last `step` set (the starting rate before any).
    fn get_last_lr(&self) -> f64;
    /// Where it is and its settings as named tensors, under torch's `scheduler.state_dict()`
    /// keys (`last_epoch`, `base_lrs`, `_last_lr`, then its own: `step_size`, `gamma`,
    /// `T_max`, `eta_min`), for a checkpoint beside the optimiser's.
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>>;
    /// Restores what [`LRScheduler::state_dict`] gave; a name it does not know is an error,
    /// and then nothing has changed. The optimiser's rate comes back with the optimiser's
    /// own state dict, as in torch.
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()>;
}

/// What the error about an unknown name says the names look like.
const SCHEDULE_NAMES: &str =
    "expected last_epoch, base_lrs, _last_lr and the schedule's own settings";

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

    fn save(&self, s: &mut Saver) -> Result<()> {
        s.value("last_epoch", &[self.epoch as f64])?;
        s.list("base_lrs", &[self.base_lr])?;
        s.list("_last_lr", &[self.last_lr])
    }

    /// This progress as `l` has it (what it lacks kept from `self`).
    fn load(&self, l: &mut Loader) -> Result<Progress> {
        Ok(Progress {
            epoch: l.count("last_epoch", self.epoch as u64)? as usize,
            // One-element lists: `value` takes any shape of one value.
            base_lr: l.value("base_lrs", self.base_lr)?,
            last_lr: l.value("_last_lr", self.last_lr)?,
        })
    }
}

/// A schedule's whole-epoch setting (`step_size`, `T_max`) from `l`: a count from 1.
fn period(l: &mut Loader, name: &str, current: usize) -> Result<usize> {
    let v = l.count(name, current as u64)?;
    if v == 0 {
        return Err(l.err(format!("{name} is 0; it must be at least 1")));
    }
    Ok(v as usize)
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
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        s.value("step_size", &[self.step_size as f64])?;
        s.value("gamma", &[self.gamma])?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("StepLR", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        let step_size = period(&mut l, "step_size", self.step_size)?;
        let gamma = l.value("gamma", self.gamma)?;
        l.finish()?;
        (self.at, self.step_size, self.gamma) = (at, step_size, gamma);
        Ok(())
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
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        s.value("gamma", &[self.gamma])?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("ExponentialLR", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        let gamma = l.value("gamma", self.gamma)?;
        l.finish()?;
        (self.at, self.gamma) = (at, gamma);
        Ok(())
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
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        s.value("T_max", &[self.t_max as f64])?;
        s.value("eta_min", &[self.eta_min])?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("CosineAnnealingLR", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        let t_max = period(&mut l, "T_max", self.t_max)?;
        let eta_min = l.value("eta_min", self.eta_min)?;
        l.finish()?;
        (self.at, self.t_max, self.eta_min) = (at, t_max, eta_min);
        Ok(())
    }
}

/// Multiplies the rate by `gamma` at each epoch listed in `milestones` (torch's
/// `MultiStepLR`; an epoch listed twice multiplies twice, as torch counts them).
#[derive(Clone, Debug)]
pub struct MultiStepLR {
    at: Progress,
    milestones: Vec<usize>,
    gamma: f64,
}

impl MultiStepLR {
    pub fn new(opt: &dyn Optimizer, milestones: &[usize], gamma: f64) -> MultiStepLR {
        let mut milestones = milestones.to_vec();
        milestones.sort_unstable();
        MultiStepLR {
            at: Progress::new(opt),
            milestones,
            gamma,
        }
    }
}

impl LRScheduler for MultiStepLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.at.epoch += 1;
        let hits = self
            .milestones
            .iter()
            .filter(|&&m| m == self.at.epoch)
            .count();
        let lr = opt.lr() * self.gamma.powi(hits as i32);
        self.at.set(opt, lr);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        let m: Vec<f64> = self.milestones.iter().map(|&m| m as f64).collect();
        s.list("milestones", &m)?;
        s.value("gamma", &[self.gamma])?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("MultiStepLR", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        let milestones = match l.values("milestones", self.milestones.len())? {
            Some(v) => v.iter().map(|&m| m as usize).collect(),
            None => self.milestones.clone(),
        };
        let gamma = l.value("gamma", self.gamma)?;
        l.finish()?;
        (self.at, self.milestones, self.gamma) = (at, milestones, gamma);
        Ok(())
    }
}

/// Scales the rate linearly from `start_factor` times the starting rate to `end_factor`
/// times it over `total_iters` epochs, then keeps it (torch's `LinearLR`, a warm-up; torch's
/// defaults are 1/3, 1 and 5). Like torch's, it sets the first factor as it is made, so it
/// takes the optimiser mutably.
#[derive(Clone, Debug)]
pub struct LinearLR {
    at: Progress,
    start_factor: f64,
    end_factor: f64,
    total_iters: usize,
}

impl LinearLR {
    pub fn new(
        opt: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> LinearLR {
        let mut s = LinearLR {
            at: Progress::new(opt),
            start_factor,
            end_factor,
            total_iters,
        };
        let first = opt.lr() * start_factor;
        s.at.set(opt, first);
        s
    }
}

impl LRScheduler for LinearLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.at.epoch += 1;
        let (e, n) = (self.at.epoch as f64, self.total_iters as f64);
        let (a, b) = (self.start_factor, self.end_factor);
        // torch's chainable form: each epoch's factor relative to the one before.
        let lr = if self.at.epoch > self.total_iters {
            opt.lr()
        } else {
            opt.lr() * (1.0 + (b - a) / (n * a + (e - 1.0) * (b - a)))
        };
        self.at.set(opt, lr);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        s.value("start_factor", &[self.start_factor])?;
        s.value("end_factor", &[self.end_factor])?;
        s.value("total_iters", &[self.total_iters as f64])?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("LinearLR", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        let start = l.value("start_factor", self.start_factor)?;
        let end = l.value("end_factor", self.end_factor)?;
        let total = l.count("total_iters", self.total_iters as u64)? as usize;
        l.finish()?;
        (
            self.at,
            self.start_factor,
            self.end_factor,
            self.total_iters,
        ) = (at, start, end, total);
        Ok(())
    }
}

/// The starting rate times `lr_lambda(epoch)` (torch's `LambdaLR`): any schedule written as a
/// closure, `LambdaLR::new(&opt, |epoch| 0.95f64.powi(epoch as i32))`. As torch's, it sets
/// `lr_lambda(0)` as it is made, so it takes the optimiser mutably. Its state dict holds the
/// epoch and rates; the closure itself is not saved (torch saves only callable objects).
pub struct LambdaLR {
    at: Progress,
    lr_lambda: Box<dyn Fn(usize) -> f64 + Send + Sync>,
}

impl LambdaLR {
    pub fn new(
        opt: &mut dyn Optimizer,
        lr_lambda: impl Fn(usize) -> f64 + Send + Sync + 'static,
    ) -> LambdaLR {
        let mut s = LambdaLR {
            at: Progress::new(opt),
            lr_lambda: Box::new(lr_lambda),
        };
        let first = s.at.base_lr * (s.lr_lambda)(0);
        s.at.set(opt, first);
        s
    }
}

impl LRScheduler for LambdaLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.at.epoch += 1;
        let lr = self.at.base_lr * (self.lr_lambda)(self.at.epoch);
        self.at.set(opt, lr);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("LambdaLR", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        l.finish()?;
        self.at = at;
        Ok(())
    }
}

/// Cosine annealing from the starting rate to `eta_min` over `t_0` epochs, then a restart at
/// the starting rate, each cycle `t_mult` times longer than the last (torch's
/// `CosineAnnealingWarmRestarts`, SGDR).
#[derive(Clone, Debug)]
pub struct CosineAnnealingWarmRestarts {
    at: Progress,
    t_0: usize,
    t_i: usize,
    t_cur: usize,
    t_mult: usize,
    eta_min: f64,
}

impl CosineAnnealingWarmRestarts {
    /// `t_0` epochs in the first cycle (at least 1), `t_mult` (at least 1) the growth.
    pub fn new(
        opt: &dyn Optimizer,
        t_0: usize,
        t_mult: usize,
        eta_min: f64,
    ) -> CosineAnnealingWarmRestarts {
        CosineAnnealingWarmRestarts {
            at: Progress::new(opt),
            t_0: t_0.max(1),
            t_i: t_0.max(1),
            t_cur: 0,
            t_mult: t_mult.max(1),
            eta_min,
        }
    }
}

impl LRScheduler for CosineAnnealingWarmRestarts {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.at.epoch += 1;
        self.t_cur += 1;
        if self.t_cur >= self.t_i {
            self.t_cur -= self.t_i;
            self.t_i *= self.t_mult;
        }
        let phase = std::f64::consts::PI * self.t_cur as f64 / self.t_i as f64;
        let lr = self.eta_min + (self.at.base_lr - self.eta_min) * (1.0 + phase.cos()) / 2.0;
        self.at.set(opt, lr);
    }
    fn get_last_lr(&self) -> f64 {
        self.at.last_lr
    }
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        self.at.save(&mut s)?;
        s.value("T_0", &[self.t_0 as f64])?;
        s.value("T_i", &[self.t_i as f64])?;
        s.value("T_mult", &[self.t_mult as f64])?;
        s.value("eta_min", &[self.eta_min])?;
        s.value("T_cur", &[self.t_cur as f64])?;
        Ok(s.done())
    }
    fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named("CosineAnnealingWarmRestarts", SCHEDULE_NAMES, state);
        let at = self.at.load(&mut l)?;
        let t_0 = period(&mut l, "T_0", self.t_0)?;
        let t_i = period(&mut l, "T_i", self.t_i)?;
        let t_mult = period(&mut l, "T_mult", self.t_mult)?;
        let eta_min = l.value("eta_min", self.eta_min)?;
        let t_cur = l.count("T_cur", self.t_cur as u64)? as usize;
        l.finish()?;
        (
            self.at,
            self.t_0,
            self.t_i,
            self.t_mult,
            self.eta_min,
            self.t_cur,
        ) = (at, t_0, t_i, t_mult, eta_min, t_cur);
        Ok(())
    }
}
