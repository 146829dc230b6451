//! The training loop: [`Fit`], a builder ending in `run()`.

use super::history::{EpochLog, History};
use super::live::{Live, Mode};
use super::{
    check_loader_device, double_activation_note, evaluate_loader, forward_batch, model_device,
    scalar, Loss,
};
use crate::autograd::no_grad;
use crate::data::{DataLoader, TensorDataset};
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::optim::lr_scheduler::{LRScheduler, ReduceLROnPlateau};
use crate::optim::Optimizer;
use crate::tensor::Tensor;
use crate::timing::{Clock, InstantClock};
use std::time::Duration;

/// Where the live display's lines go.
type Sink<'a> = Box<dyn FnMut(&str) + 'a>;

/// Training or validation data for `fit`/`evaluate`: a dataset (cut into batches by `fit`'s
/// `batch_size`), an `(x, y)` pair of tensors, or a [`DataLoader`] (its own batches).
pub enum FitData {
    Dataset(TensorDataset),
    Pair(Tensor, Tensor),
    Loader(DataLoader),
}

impl From<TensorDataset> for FitData {
    fn from(d: TensorDataset) -> Self {
        FitData::Dataset(d)
    }
}
impl From<&TensorDataset> for FitData {
    fn from(d: &TensorDataset) -> Self {
        FitData::Dataset(d.clone())
    }
}
impl From<(Tensor, Tensor)> for FitData {
    fn from((x, y): (Tensor, Tensor)) -> Self {
        FitData::Pair(x, y)
    }
}
impl From<(&Tensor, &Tensor)> for FitData {
    fn from((x, y): (&Tensor, &Tensor)) -> Self {
        FitData::Pair(x.clone(), y.clone())
    }
}
impl From<DataLoader> for FitData {
    fn from(l: DataLoader) -> Self {
        FitData::Loader(l)
    }
}
impl From<&DataLoader> for FitData {
    fn from(l: &DataLoader) -> Self {
        FitData::Loader(l.clone())
    }
}

impl FitData {
    fn is_loader(&self) -> bool {
        matches!(self, FitData::Loader(_))
    }

    /// A loader over the data: a loader as it is, anything else in batches of `batch_size`.
    pub(crate) fn into_loader(self, batch_size: usize, shuffle: bool) -> Result<DataLoader> {
        let ds = match self {
            FitData::Loader(l) => return Ok(l),
            FitData::Dataset(d) => d,
            FitData::Pair(x, y) => TensorDataset::new(x, y)?,
        };
        Ok(DataLoader::new(ds, batch_size)?.shuffle(shuffle))
    }
}

/// A training run, Keras' `model.fit`: made by `model.fit(&mut opt, loss, data)` (trait
/// [`super::ModelExt`]) or `Fit::new(&mut model, &mut opt, loss).data(..)`, configured, then
/// `run()`.
///
/// Each epoch puts the model in `train()` mode and goes once through the data in a new order
/// (`shuffle`, default on, seeded: `seed`, or drawn from `manual_seed`'s generator). Each batch
/// is moved to the model's device, then `forward`, the loss, `zero_grad`, `backward`,
/// `step`. With validation data the model is evaluated in `eval()` mode without gradients
/// after each epoch. The model is left in train mode.
///
/// An interrupt (the notebook's stop button) is checked before every batch: training stops
/// there, the model keeps the weights of its last step, and `run` returns the history so far
/// with `interrupted` set (the cell then ends as interrupted, with every variable kept).
pub struct Fit<'a> {
    model: &'a mut dyn Module,
    opt: &'a mut dyn Optimizer,
    loss: Loss,
    data: Option<FitData>,
    validation: Option<FitData>,
    epochs: usize,
    batch_size: Option<usize>,
    shuffle: bool,
    seed: Option<u64>,
    verbose: u8,
    chart_interval: Duration,
    clock: Box<dyn Clock + 'a>,
    interrupted: Box<dyn FnMut() -> bool + 'a>,
    sink: Option<(Mode, Sink<'a>)>,
    schedule: Option<Schedule<'a>>,
}

/// A learning-rate schedule stepped at the end of each epoch.
enum Schedule<'a> {
    Epochs(&'a mut dyn LRScheduler),
    /// Stepped with the epoch's validation loss (its training loss without validation data).
    Plateau(&'a mut ReduceLROnPlateau),
}

impl<'a> Fit<'a> {
    pub fn new(model: &'a mut dyn Module, optimizer: &'a mut dyn Optimizer, loss: Loss) -> Self {
        Fit {
            model,
            opt: optimizer,
            loss,
            data: None,
            validation: None,
            epochs: 1,
            batch_size: None,
            shuffle: true,
            seed: None,
            verbose: 1,
            chart_interval: Duration::from_millis(500),
            clock: Box::new(InstantClock::default()),
            interrupted: Box::new(crate::interrupt::requested),
            sink: None,
            schedule: None,
        }
    }

    /// A schedule (`StepLR`, `CosineAnnealingLR`, ...) stepped after each epoch, as a torch
    /// loop calls `scheduler.step()`; each epoch's rate is then in the history.
    pub fn lr_scheduler(mut self, scheduler: &'a mut dyn LRScheduler) -> Self {
        self.schedule = Some(Schedule::Epochs(scheduler));
        self
    }

    /// A `ReduceLROnPlateau` stepped after each epoch with the validation loss (the
    /// training loss when there is no validation data), as Keras' callback of that name.
    pub fn reduce_lr_on_plateau(mut self, scheduler: &'a mut ReduceLROnPlateau) -> Self {
        self.schedule = Some(Schedule::Plateau(scheduler));
        self
    }

    /// The training data (a `TensorDataset`, `(x, y)`, or a `DataLoader`).
    pub fn data(mut self, data: impl Into<FitData>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// Passes over the data (default 1, as Keras).
    pub fn epochs(mut self, epochs: usize) -> Self {
        self.epochs = epochs;
        self
    }

    /// Samples per step (default 32, as Keras). Not with a `DataLoader`, which has its own.
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = Some(batch_size);
        self
    }

    /// Data evaluated after each epoch (Keras' `validation_data`), in batches of
    /// `batch_size`, in order.
    pub fn validation_data(mut self, data: impl Into<FitData>) -> Self {
        self.validation = Some(data.into());
        self
    }

    /// A new order every epoch (default true, as Keras). Not with a `DataLoader`.
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// Fixes the order of the batches (by default drawn from `manual_seed`'s generator).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Keras' `verbose`: 0 silent, 1 (default) a live bar and chart in a notebook (one line
    /// per epoch outside one), 2 one line per epoch.
    pub fn verbose(mut self, verbose: u8) -> Self {
        self.verbose = verbose;
        self
    }

    /// Minimum time between two redraws of the live chart (default 500 ms).
    pub fn chart_interval(mut self, d: Duration) -> Self {
        self.chart_interval = d;
        self
    }

    /// Use another clock (tests).
    #[doc(hidden)]
    pub fn clock(mut self, clock: impl Clock + 'a) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Replace the interrupt probe (tests); the default reads the kernel's flag.
    #[doc(hidden)]
    pub fn interrupt_probe(mut self, probe: impl FnMut() -> bool + 'a) -> Self {
        self.interrupted = Box::new(probe);
        self
    }

    /// Send the notebook's display-channel lines somewhere other than stdout (tests); the
    /// live display is used whatever `verbose` says.
    #[doc(hidden)]
    pub fn notebook_sink(mut self, sink: impl FnMut(&str) + 'a) -> Self {
        self.sink = Some((Mode::Notebook, Box::new(sink)));
        self
    }

    /// Send the plain per-epoch lines somewhere other than stdout (tests).
    #[doc(hidden)]
    pub fn plain_sink(mut self, sink: impl FnMut(&str) + 'a) -> Self {
        self.sink = Some((Mode::Plain, Box::new(sink)));
        self
    }

    /// Trains; returns one [`EpochLog`] per epoch run.
    pub fn run(self) -> Result<History> {
        let Fit {
            model,
            opt,
            loss,
            data,
            validation,
            epochs,
            batch_size,
            shuffle,
            seed,
            verbose,
            chart_interval,
            clock,
            mut interrupted,
            sink,
            mut schedule,
        } = self;
        let data = data.ok_or_else(|| {
            Error::Invalid(
                "fit: no training data; pass it as model.fit(&mut opt, loss, &train) or with \
                 .data(&train)"
                    .into(),
            )
        })?;
        if epochs == 0 {
            return Err(Error::Invalid(
                "fit: epochs must be at least 1, got 0".into(),
            ));
        }
        if data.is_loader() && (batch_size.is_some() || !shuffle || seed.is_some()) {
            return Err(Error::Invalid(
                "fit: the training data is a DataLoader, which sets its own batch size, \
                 shuffling and seed; set them on the DataLoader, not on fit"
                    .into(),
            ));
        }
        let bs = batch_size.unwrap_or(32);
        let mut loader = data.into_loader(bs, shuffle)?;
        if let Some(s) = seed {
            loader = loader.seed(s);
        }
        let val_loader = validation.map(|v| v.into_loader(bs, false)).transpose()?;
        let device = model_device(model);
        let move_to = check_loader_device(&loader, device)?;
        let val_move = match &val_loader {
            Some(v) => check_loader_device(v, device)?,
            None => None,
        };

        let (mode, sink): (Mode, Sink<'a>) = match sink {
            Some(s) => s,
            None => {
                let mode = match verbose {
                    0 => Mode::Silent,
                    1 if crate::interrupt::available() => Mode::Notebook,
                    _ => Mode::Plain,
                };
                let out: Sink<'a> = match mode {
                    Mode::Notebook => Box::new(crate::display::emit),
                    _ => Box::new(|s: &str| print!("{s}")),
                };
                (mode, out)
            }
        };
        if let (Some(note), true) = (double_activation_note(model, loss), verbose > 0) {
            eprintln!("{note}");
        }
        let batches = loader.len();
        let mut history = History::new(loss, epochs, batches);
        let mut live = Live::new(mode, sink, clock, chart_interval, epochs, batches, loss);
        live.begin(&history);

        let mut run = || -> Result<Option<String>> {
            for epoch in 0..epochs {
                model.train();
                live.start_epoch(epoch);
                let t0 = std::time::Instant::now();
                let lr = schedule.as_ref().map(|_| opt.lr());
                let (mut sum, mut right, mut seen, mut done) = (0.0, 0.0, 0usize, 0usize);
                let mut stopped = false;
                // The loader's next epoch: 0, 1, ... for a fresh one; a loader trained on
                // before goes on with new orders.
                for batch in loader.iter() {
                    if interrupted() {
                        stopped = true;
                        break;
                    }
                    let (out, y, n) = forward_batch(model, batch?, loss, move_to)?;
                    let l = loss.compute(&out, &y)?;
                    opt.zero_grad();
                    l.backward()?;
                    opt.step()?;
                    sum += scalar(&l)? * n as f64;
                    let c = no_grad(|| loss.correct(&out.detach(), &y))?;
                    right += c.unwrap_or(0.0);
                    seen += n;
                    done += 1;
                    let acc = c.map(|_| right / seen as f64);
                    live.batch(done, sum / seen as f64, acc, &history);
                }
                // The epoch's last batch may have been the interrupted one: check before
                // spending a validation pass.
                stopped = stopped || (val_loader.is_some() && interrupted());
                let complete = done == batches;
                let (val_loss, val_accuracy) = match (&val_loader, stopped) {
                    (Some(v), false) => {
                        let r = evaluate_loader(model, v, loss, val_move)?;
                        model.train();
                        (Some(r.0), r.1)
                    }
                    _ => (None, None),
                };
                if seen > 0 {
                    history.epochs.push(EpochLog {
                        epoch: epoch + 1,
                        loss: sum / seen as f64,
                        accuracy: loss.is_classification().then(|| right / seen as f64),
                        val_loss,
                        val_accuracy,
                        batches: done,
                        seconds: t0.elapsed().as_secs_f64(),
                        complete,
                        lr,
                    });
                }
                if stopped {
                    history.interrupted = Some((epoch + 1, done));
                    return Ok(history.interrupted_note());
                }
                match (&mut schedule, history.epochs.last()) {
                    (Some(Schedule::Epochs(s)), _) => s.step(&mut *opt),
                    (Some(Schedule::Plateau(s)), Some(log)) => {
                        s.step(&mut *opt, log.val_loss.unwrap_or(log.loss))
                    }
                    _ => {}
                }
                live.end_epoch(&history);
            }
            Ok(None)
        };
        let outcome = run();
        // The training steps' freed buffers, kept by malloc for the next step, go back to the
        // system now that no step follows: an idle student's kernel holds what the lesson's
        // cells hold, not the last batch's activations as well.
        crate::tensor::release_freed_memory();
        // The same on the GPU: a class shares it, and an idle kernel's pool would hold the
        // last batch's activations from the other students.
        crate::cuda::empty_cache();
        match outcome {
            Ok(note) => {
                live.finish(&history, note);
                Ok(history)
            }
            Err(e) => {
                let at = history.epochs.len() + 1;
                live.finish(
                    &history,
                    Some(format!("stopped by an error in epoch {at}: {e}")),
                );
                Err(e)
            }
        }
    }
}
