//! torch's `ReduceLROnPlateau`: the rate cut by a factor when a watched metric (the
//! validation loss, say) has stopped improving for a number of epochs. It is stepped with
//! the metric, so it is not an [`LRScheduler`](super::lr_scheduler::LRScheduler).

use super::state::{Loader, Saver};
use super::Optimizer;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Whether a smaller or a larger metric is better (torch's `mode="min"` / `"max"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlateauMode {
    Min,
    Max,
}

/// How much better counts as better: relative to the best so far (`best * (1 - threshold)`
/// for `Min`) or by an absolute amount (`best - threshold`), torch's `threshold_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdMode {
    Rel,
    Abs,
}

/// Cuts the rate by `factor` when the metric has not improved for more than `patience`
/// epochs, then waits `cooldown` epochs before counting again; never below `min_lr`, and a
/// cut smaller than `eps` is skipped. torch's defaults: `new(&opt)` is `Min`, factor 0.1,
/// patience 10, threshold 1e-4 relative, cooldown 0, min_lr 0, eps 1e-8; the builder methods
/// change them.
#[derive(Clone, Debug)]
pub struct ReduceLROnPlateau {
    mode: PlateauMode,
    factor: f64,
    patience: usize,
    threshold: f64,
    threshold_mode: ThresholdMode,
    cooldown: usize,
    min_lr: f64,
    eps: f64,
    best: f64,
    num_bad_epochs: usize,
    cooldown_counter: usize,
    last_epoch: usize,
    last_lr: f64,
}

impl ReduceLROnPlateau {
    pub fn new(opt: &dyn Optimizer) -> ReduceLROnPlateau {
        ReduceLROnPlateau {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: 0.0,
            eps: 1e-8,
            best: f64::INFINITY,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
            last_lr: opt.lr(),
        }
    }
    /// `Max` for a metric such as accuracy.
    pub fn mode(mut self, mode: PlateauMode) -> Self {
        self.mode = mode;
        self.best = self.worst();
        self
    }
    /// What the rate is multiplied by at a cut (below 1).
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }
    /// Epochs without improvement that are tolerated before a cut.
    pub fn patience(mut self, patience: usize) -> Self {
        self.patience = patience;
        self
    }
    pub fn threshold(mut self, threshold: f64, mode: ThresholdMode) -> Self {
        self.threshold = threshold;
        self.threshold_mode = mode;
        self
    }
    /// Epochs after a cut during which bad epochs are not counted.
    pub fn cooldown(mut self, cooldown: usize) -> Self {
        self.cooldown = cooldown;
        self
    }
    pub fn min_lr(mut self, min_lr: f64) -> Self {
        self.min_lr = min_lr;
        self
    }

    fn worst(&self) -> f64 {
        match self.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        }
    }

    fn is_better(&self, a: f64) -> bool {
        let (best, t) = (self.best, self.threshold);
        match (self.mode, self.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - t),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - t,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (t + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + t,
        }
    }

    /// One epoch's end with the watched metric: counts it as an improvement or not and cuts
    /// the optimiser's rate when the patience is used up (torch's `scheduler.step(metric)`).
    pub fn step(&mut self, opt: &mut dyn Optimizer, metric: f64) {
        self.last_epoch += 1;
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.patience {
            let old = opt.lr();
            let new = (old * self.factor).max(self.min_lr);
            if old - new > self.eps {
                opt.set_lr(new);
            }
            self.cooldown_counter = self.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lr = opt.lr();
    }

    /// The rate after the last `step`.
    pub fn get_last_lr(&self) -> f64 {
        self.last_lr
    }

    /// Where it is and its numeric settings, under torch's state-dict keys (`best`,
    /// `num_bad_epochs`, `cooldown_counter`, `last_epoch`, `_last_lr`, `factor`, `patience`,
    /// `cooldown`, `threshold`, `min_lrs`, `eps`); the two modes are settings of the
    /// schedule made in code, not saved.
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut s = Saver::new();
        s.value("best", &[self.best])?;
        s.value("num_bad_epochs", &[self.num_bad_epochs as f64])?;
        s.value("cooldown_counter", &[self.cooldown_counter as f64])?;
        s.value("last_epoch", &[self.last_epoch as f64])?;
        s.list("_last_lr", &[self.last_lr])?;
        s.value("factor", &[self.factor])?;
        s.value("patience", &[self.patience as f64])?;
        s.value("cooldown", &[self.cooldown as f64])?;
        s.value("threshold", &[self.threshold])?;
        s.list("min_lrs", &[self.min_lr])?;
        s.value("eps", &[self.eps])?;
        Ok(s.done())
    }

    /// Restores what [`ReduceLROnPlateau::state_dict`] gave; an unknown name is an error,
    /// and then nothing has changed.
    pub fn load_state_dict(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        let mut l = Loader::named(
            "ReduceLROnPlateau",
            "expected best, num_bad_epochs, cooldown_counter, last_epoch, _last_lr, factor, \
             patience, cooldown, threshold, min_lrs, eps",
            state,
        );
        let mut s = self.clone();
        s.best = l.value("best", s.best)?;
        s.num_bad_epochs = l.count("num_bad_epochs", s.num_bad_epochs as u64)? as usize;
        s.cooldown_counter = l.count("cooldown_counter", s.cooldown_counter as u64)? as usize;
        s.last_epoch = l.count("last_epoch", s.last_epoch as u64)? as usize;
        s.last_lr = l.value("_last_lr", s.last_lr)?;
        s.factor = l.value("factor", s.factor)?;
        s.patience = l.count("patience", s.patience as u64)? as usize;
        s.cooldown = l.count("cooldown", s.cooldown as u64)? as usize;
        s.threshold = l.value("threshold", s.threshold)?;
        s.min_lr = l.value("min_lrs", s.min_lr)?;
        s.eps = l.value("eps", s.eps)?;
        l.finish()?;
        if s.factor >= 1.0 || s.factor.is_nan() {
            return Err(Error::Invalid(format!(
                "ReduceLROnPlateau load_state_dict: factor is {}, it must be below 1",
                s.factor
            )));
        }
        *self = s;
        Ok(())
    }
}
