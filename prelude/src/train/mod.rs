//! Keras-like training on top of `nn`, `optim` and `data`: [`Fit`] (the loop, with a live
//! progress bar and chart), [`History`], and `evaluate`/`predict`.
//!
//! ```ignore
//! let mut opt = optim::Adam::new(model.parameters(), 1e-3);           // model.compile(
//! let history = model.fit(&mut opt, Loss::CrossEntropy, &train)      //   optimizer, loss)
//!     .epochs(5).batch_size(64)                                      // model.fit(x, y, epochs=5,
//!     .validation_data(&test)                                        //   batch_size=64,
//!     .run()?;                                                       //   validation_data=...)
//! let (test_loss, test_acc) = model.evaluate(&test, Loss::CrossEntropy)?;
//! let probs = model.predict(&test.x)?;
//! ```
//!
//! Models end in logits (no final softmax or sigmoid): the losses apply them, stably, as
//! torch's do. `predict` applies them for you.

mod fit;
mod history;
mod live;

pub use fit::{Fit, FitData};
pub use history::{EpochLog, History};

use crate::autograd::no_grad;
use crate::data::DataLoader;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::nn::{functional as F, Module};
use crate::optim::Optimizer;
use crate::tensor::{DType, Tensor};

/// The loss a model is trained with (Keras' `loss=`), computed on the model's raw outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// `F::cross_entropy`: outputs `[N, C]` logits, targets `[N]` class indices (i64).
    /// Keras' `sparse_categorical_crossentropy`. Accuracy: argmax equals the label.
    CrossEntropy,
    /// `F::mse_loss`: outputs and targets of one shape (targets `[N]` for outputs `[N, 1]`
    /// are accepted, as Keras does). No accuracy.
    Mse,
    /// `F::binary_cross_entropy_with_logits`: outputs `[N, 1]` (or `[N]`) logits, targets 0/1
    /// of the same shape (any dtype; `[N]` for `[N, 1]` accepted). Keras' `binary_crossentropy`
    /// on a sigmoid output. Accuracy: `logit > 0` equals `target > 0.5`.
    BceWithLogits,
}

impl Loss {
    /// Keras' name for it.
    pub fn name(self) -> &'static str {
        match self {
            Loss::CrossEntropy => "cross_entropy",
            Loss::Mse => "mse",
            Loss::BceWithLogits => "binary_cross_entropy_with_logits",
        }
    }

    /// Whether an accuracy is reported for this loss.
    pub fn is_classification(self) -> bool {
        !matches!(self, Loss::Mse)
    }

    /// The targets in the form the loss takes for `output`, or an error naming the expected
    /// and the given shapes.
    fn targets(self, output: &Tensor, y: &Tensor) -> Result<Tensor> {
        let (o, t) = (output.shape(), y.shape());
        match self {
            Loss::CrossEntropy => {
                if o.len() != 2 || t != [o[0]] {
                    return Err(Error::BadShape(format!(
                        "fit with Loss::CrossEntropy: expected model output [N, C] (class \
                         scores) and targets [N] (class indices), got output {o:?} and targets \
                         {t:?}"
                    )));
                }
                Ok(y.clone())
            }
            Loss::Mse | Loss::BceWithLogits => {
                let y = if t == o {
                    y.clone()
                } else if o.len() == 2 && o[1] == 1 && t == [o[0]] {
                    y.reshape((o[0], 1))?
                } else {
                    let want = if o.len() == 2 && o[1] == 1 {
                        format!("{o:?} or [{}]", o[0])
                    } else {
                        format!("{o:?}")
                    };
                    return Err(Error::BadShape(format!(
                        "fit with Loss::{self:?}: the model's output has shape {o:?}, so the \
                         targets must have shape {want}; got targets of shape {t:?}"
                    )));
                };
                if y.dtype() == output.dtype() {
                    Ok(y)
                } else {
                    y.to_dtype(output.dtype())
                }
            }
        }
    }

    /// The loss of `output` against targets already in form (see `targets`).
    fn compute(self, output: &Tensor, y: &Tensor) -> Result<Tensor> {
        match self {
            Loss::CrossEntropy => F::cross_entropy(output, y),
            Loss::Mse => F::mse_loss(output, y),
            Loss::BceWithLogits => F::binary_cross_entropy_with_logits(output, y),
        }
    }

    /// How many of the batch's predictions are right (classification losses).
    fn correct(self, output: &Tensor, y: &Tensor) -> Result<Option<f64>> {
        let right = match self {
            Loss::Mse => return Ok(None),
            Loss::CrossEntropy => output.argmax_dim(1)?.eq(y)?,
            Loss::BceWithLogits => output.gt(0.0)?.eq(&y.gt(0.5)?)?,
        };
        Ok(Some(
            right.to_dtype(DType::F32)?.sum()?.item::<f32>()? as f64
        ))
    }
}

/// A scalar loss as f64, whatever its float dtype.
fn scalar(t: &Tensor) -> Result<f64> {
    Ok(t.to_f64_vec()?[0])
}

/// The device of the model's parameters (None for a model without any).
pub(crate) fn model_device(model: &dyn Module) -> Option<Device> {
    model.parameters().first().map(|p| p.device())
}

/// How a device is written in a cell.
fn rust_name(d: Device) -> String {
    match d {
        Device::Cpu => "Device::Cpu".into(),
        Device::Cuda(i) => format!("Device::Cuda({i})"),
    }
}

/// The error for a batch that is not where the model is.
fn device_mismatch(model: Device, batch: Device) -> Error {
    Error::Invalid(format!(
        "the batch is on {batch} but the model's parameters are on {model}; move the model \
         with model.to({}) (then build the optimiser) or the data with DataLoader::device({})",
        rust_name(batch),
        rust_name(model)
    ))
}

/// One batch through `model`, as both the training loop and evaluation take it: moved to
/// the model's device when `move_to` says so, `forward`, then the targets in the form the
/// loss takes for that output (or the shape error). Returns the output, the targets and the
/// batch size.
pub(crate) fn forward_batch(
    model: &mut dyn Module,
    (x, y): (Tensor, Tensor),
    loss: Loss,
    move_to: Option<Device>,
) -> Result<(Tensor, Tensor, usize)> {
    let (x, y) = match move_to {
        Some(d) => (x.to(d)?, y.to(d)?),
        None => (x, y),
    };
    let out = model.forward(&x)?;
    let y = loss.targets(&out, &y)?;
    Ok((out, y, x.shape()[0]))
}

/// Runs `model` over `loader` without gradients; `(mean loss, accuracy)`.
fn evaluate_loader(
    model: &mut dyn Module,
    loader: &DataLoader,
    loss: Loss,
    move_to: Option<Device>,
) -> Result<(f64, Option<f64>)> {
    model.eval();
    no_grad(|| {
        let (mut total, mut right, mut n) = (0.0, 0.0, 0usize);
        for batch in loader.epoch(0) {
            let (out, y, b) = forward_batch(model, batch?, loss, move_to)?;
            total += scalar(&loss.compute(&out, &y)?)? * b as f64;
            right += loss.correct(&out, &y)?.unwrap_or(0.0);
            n += b;
        }
        let n = n.max(1) as f64;
        Ok((total / n, loss.is_classification().then_some(right / n)))
    })
}

/// Keras' `model.fit`, `model.evaluate` and `model.predict` as methods of every [`Module`].
pub trait ModelExt: Module {
    /// Starts a training run (see [`Fit`]): `model.fit(&mut opt, Loss::Mse, &train)
    /// .epochs(5).batch_size(64).run()?`.
    fn fit<'a>(
        &'a mut self,
        optimizer: &'a mut dyn Optimizer,
        loss: Loss,
        data: impl Into<FitData>,
    ) -> Fit<'a>
    where
        Self: Sized,
    {
        Fit::new(self, optimizer, loss).data(data)
    }

    /// Mean loss and accuracy (None for `Loss::Mse`) over `data`, in eval mode without
    /// gradients; batches of 256 (or the loader's own). Batches go to the model's device.
    /// Leaves the model in eval mode.
    fn evaluate(&mut self, data: impl Into<FitData>, loss: Loss) -> Result<(f64, Option<f64>)>
    where
        Self: Sized,
    {
        let device = model_device(self);
        let loader = data.into().into_loader(256, false)?;
        let move_to = check_loader_device(&loader, device)?;
        evaluate_loader(self, &loader, loss, move_to)
    }

    /// Probabilities for the inputs `x` (`[N, ...]`), in eval mode without gradients:
    /// softmax over dimension 1 when the model gives `[N, C]` with `C > 1` (multi-class
    /// logits), sigmoid when it gives one logit per sample (`[N, 1]` or `[N]`, binary). A
    /// model whose last layer already is `Softmax` or `Sigmoid` has its outputs returned as
    /// they are. For a regression model use `no_grad(|| model.forward(&x))`. `x` goes to the
    /// model's device; the result stays there. Leaves the model in eval mode.
    fn predict(&mut self, x: &Tensor) -> Result<Tensor>
    where
        Self: Sized,
    {
        predict(self, x)
    }
}

impl<M: Module + ?Sized> ModelExt for M {}

/// The move to the model's device that batches of `loader` need (None: already there), or
/// the error when the loader was told to put them elsewhere.
fn check_loader_device(loader: &DataLoader, model: Option<Device>) -> Result<Option<Device>> {
    let Some(m) = model else { return Ok(None) };
    let batch = loader
        .target_device()
        .unwrap_or_else(|| loader.dataset().x.device());
    if batch == m {
        Ok(None)
    } else if loader.target_device().is_some() {
        Err(device_mismatch(m, batch))
    } else {
        Ok(Some(m))
    }
}

/// [`ModelExt::predict`] for a `&mut dyn Module`.
pub fn predict(model: &mut dyn Module, x: &Tensor) -> Result<Tensor> {
    model.eval();
    let x = match model_device(model) {
        Some(d) if d != x.device() => x.to(d)?,
        _ => x.clone(),
    };
    let ends_in_probabilities = last_activation(model).is_some();
    no_grad(|| {
        let out = model.forward(&x)?;
        if ends_in_probabilities {
            return Ok(out);
        }
        match out.shape() {
            [_, 1] | [_] => out.sigmoid(),
            [_, _] => out.softmax(1),
            s => Err(Error::BadShape(format!(
                "predict: expected the model to give [N, C] class scores or [N, 1] logits, got \
                 {s:?}; for other outputs use no_grad(|| model.forward(&x))"
            ))),
        }
    })
}

/// `Some("Softmax")`/`Some("Sigmoid")` when the model's last layer is one (read from its
/// description, the one view of a `dyn Module`'s layers there is).
fn last_activation(model: &dyn Module) -> Option<&'static str> {
    let d = model.describe();
    let last = d.lines().rev().find(|l| l.trim() != ")")?;
    if last.contains("Softmax(") {
        Some("Softmax")
    } else if last.contains("Sigmoid()") {
        Some("Sigmoid")
    } else {
        None
    }
}

/// A Keras habit that trains badly here: a final Softmax (or Sigmoid) before a loss that
/// applies it again. Said once per run, on stderr; training goes on.
fn double_activation_note(model: &dyn Module, loss: Loss) -> Option<String> {
    let act = last_activation(model)?;
    let applies = match loss {
        Loss::CrossEntropy => "log_softmax",
        Loss::BceWithLogits => "the sigmoid",
        Loss::Mse => return None,
    };
    Some(format!(
        "note: the model ends in {act}, and Loss::{loss:?} applies {applies} itself (it takes \
         logits, as torch's losses do): remove the final {act} layer, or training learns slowly; \
         predict() adds it back for you"
    ))
}

/// [`ModelExt::evaluate`] for a `&mut dyn Module`.
pub fn evaluate(
    model: &mut dyn Module,
    data: impl Into<FitData>,
    loss: Loss,
) -> Result<(f64, Option<f64>)> {
    let device = model_device(model);
    let loader = data.into().into_loader(256, false)?;
    let move_to = check_loader_device(&loader, device)?;
    evaluate_loader(model, &loader, loss, move_to)
}
