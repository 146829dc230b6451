//! torch's `nn.utils.parametrize`: a layer's tensor computed at every forward by modules the
//! user chooses, e.g. a symmetric weight from a free one:
//!
//! ```ignore
//! struct Symmetric;
//! impl nn::Module for Symmetric {
//!     fn forward(&self, x: &Tensor) -> Result<Tensor> { x.triu(0)?.add(&x.triu(1)?.t()?) }
//!     fn describe(&self) -> String { "Symmetric()".into() }
//! }
//! let layer = nn::utils::parametrize::register_parametrization(nn::Linear::new(3, 3), "weight", Symmetric)?;
//! ```
//!
//! The layer's tensor becomes `parametrizations.weight.original` (learned) and the weight is
//! `P_n(..P_1(original))`, lent to the layer for each forward as weight and spectral norm
//! lend theirs (`parametrize.rs`).

use super::parametrize::{
    convert_own, forward_lent, move_own, parametrized_repr, params_but, weight_of,
};
use super::{Module, Parameter};
use crate::autograd::no_grad;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::sync::Mutex;

/// A layer whose tensor `name` is computed from `original` by a chain of modules (torch's
/// parametrized module): made by [`register_parametrization`], one more link by
/// [`Parametrized::register`].
pub struct Parametrized<M: Module> {
    module: M,
    name: String,
    chain: Vec<Box<dyn Module>>,
    /// The tensor the chain starts from (`parametrizations.{name}.original`).
    pub original: Parameter,
    slot: Parameter,
    lock: Mutex<()>,
}

/// torch's `parametrize.register_parametrization(module, name, parametrization)`: the tensor
/// `name` of `module` becomes `parametrization(original)`, `original` starting as the tensor
/// itself. `parametrization` is any module that keeps the tensor's shape and dtype (checked
/// now, as torch's); its own parameters are learned with the layer's.
pub fn register_parametrization<M: Module>(
    module: M,
    name: &str,
    parametrization: impl Module + 'static,
) -> Result<Parametrized<M>> {
    register_parametrization_with(module, name, parametrization, |w| Ok(w.clone()))
}

/// [`register_parametrization`] with torch's `right_inverse`: `original` starts as
/// `right_inverse(tensor)` (computed without gradient), so that the parametrised tensor can
/// start where the layer's was, e.g. `original = w` for `Symmetric` or `log(w)` for an
/// exponential.
pub fn register_parametrization_with<M: Module>(
    module: M,
    name: &str,
    parametrization: impl Module + 'static,
    right_inverse: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Parametrized<M>> {
    let op = "register_parametrization";
    let slot = weight_of(&module, name, op)?;
    let w = slot.tensor().detach();
    let start = no_grad(|| right_inverse(&w))?;
    if start.dtype() != w.dtype() {
        return Err(Error::Invalid(format!(
            "{op}: right_inverse may not change the dtype of {name:?}: it is {}, right_inverse \
             gave {}",
            w.dtype(),
            start.dtype()
        )));
    }
    let original = Parameter::new(start.detach().deep_clone()?)?;
    original.requires_grad_(slot.requires_grad())?;
    slot.replace(w);
    let mut p = Parametrized {
        module,
        name: name.to_string(),
        chain: Vec::new(),
        original,
        slot,
        lock: Mutex::new(()),
    };
    p.register(parametrization)?;
    Ok(p)
}

impl<M: Module> Parametrized<M> {
    /// One more parametrisation after the others (torch's `register_parametrization` on an
    /// already parametrised tensor): the tensor becomes `parametrization(the tensor so far)`,
    /// `original` unchanged. It must keep the tensor's shape and dtype; when it does not,
    /// nothing changes.
    pub fn register(&mut self, parametrization: impl Module + 'static) -> Result<()> {
        let before = self.slot.tensor();
        let got = no_grad(|| parametrization.forward(&self.computed()?))?;
        if got.shape() != before.shape() || got.dtype() != before.dtype() {
            return Err(Error::BadShape(format!(
                "register_parametrization: {} may not change the shape or dtype of {:?}: it \
                 is {:?} {}, the parametrization gave {:?} {}",
                parametrization.describe(),
                self.name,
                before.shape(),
                before.dtype(),
                got.shape(),
                got.dtype()
            )));
        }
        self.chain.push(Box::new(parametrization));
        self.slot.replace(got);
        Ok(())
    }

    fn computed(&self) -> Result<Tensor> {
        self.chain
            .iter()
            .try_fold(self.original.tensor(), |x, p| p.forward(&x))
    }

    /// The tensor as the layer sees it, the chain applied to `original`, with its history
    /// (torch's `module.weight`).
    pub fn weight(&self) -> Result<Tensor> {
        self.computed()
    }

    /// The layer it wraps (its tensor is the one last computed).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The parametrisations, in the order they apply.
    pub fn parametrizations(&self) -> &[Box<dyn Module>] {
        &self.chain
    }

    /// The layer back with a plain parameter again (torch's
    /// `parametrize.remove_parametrizations(module, name, leave_parametrized)`): the tensor
    /// as computed, or with `leave_parametrized` false, `original`'s value.
    pub fn remove(self, leave_parametrized: bool) -> Result<M> {
        let value = if leave_parametrized {
            no_grad(|| self.computed())?
        } else {
            self.original.tensor()
        };
        if value.shape() != self.slot.tensor().shape() {
            return Err(Error::BadShape(format!(
                "remove_parametrizations: original has shape {:?} and {:?} has {:?}, so the \
                 layer cannot keep original; remove with leave_parametrized true",
                self.original.shape(),
                self.name,
                self.slot.shape()
            )));
        }
        let requires_grad = self.original.requires_grad();
        self.slot
            .replace(value.detach().deep_clone()?.requires_grad_(requires_grad)?);
        Ok(self.module)
    }

    fn prefix(&self, i: usize, name: &str) -> String {
        format!("parametrizations.{}.{i}.{name}", self.name)
    }
}

impl<M: Module> Module for Parametrized<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        forward_lent(
            &self.lock,
            &self.slot,
            || self.computed(),
            || self.module.forward(x),
        )
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let mut out = params_but(&self.module, &self.name);
        out.push((
            format!("parametrizations.{}.original", self.name),
            self.original.clone(),
        ));
        for (i, p) in self.chain.iter().enumerate() {
            out.extend(
                p.named_parameters()
                    .into_iter()
                    .map(|(n, t)| (self.prefix(i, &n), t)),
            );
        }
        out
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        let mut out = self.module.buffers();
        for (i, p) in self.chain.iter().enumerate() {
            out.extend(
                p.buffers()
                    .into_iter()
                    .map(|(n, t)| (self.prefix(i, &n), t)),
            );
        }
        out
    }
    fn describe(&self) -> String {
        let entries: Vec<String> = self.chain.iter().map(|p| p.describe()).collect();
        parametrized_repr(&self.module.describe(), &self.name, &entries)
    }
    fn set_training(&mut self, training: bool) {
        self.module.set_training(training);
        for p in &mut self.chain {
            p.set_training(training);
        }
    }
    fn to(&self, device: Device) -> Result<()> {
        self.module.to(device)?;
        move_own(&[&self.original], &[], device)?;
        self.chain.iter().try_for_each(|p| p.to(device))
    }
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        self.module.to_dtype(dtype)?;
        convert_own(&[&self.original], &[], dtype)?;
        self.chain.iter().try_for_each(|p| p.to_dtype(dtype))
    }
}
