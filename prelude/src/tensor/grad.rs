//! Tensor's autograd methods (torch's names); the engine is `crate::autograd`.

use super::Tensor;
use crate::autograd::{self, Meta};
use crate::error::{Error, Result};
use std::sync::Arc;

impl Tensor {
    pub(crate) fn grad_meta(&self) -> Option<&Arc<Meta>> {
        self.grad_meta.as_ref()
    }

    pub(crate) fn with_grad_meta(mut self, meta: Option<Arc<Meta>>) -> Tensor {
        self.grad_meta = meta;
        self
    }

    /// Makes this tensor a leaf whose gradient `backward` computes (`true`), or stops
    /// tracking it (`false`), like torch's `requires_grad_`. Only floating-point tensors
    /// can require grad; a tensor computed from others cannot be switched off (use
    /// [`Tensor::detach`]).
    pub fn requires_grad_(self, requires_grad: bool) -> Result<Tensor> {
        match (&self.grad_meta, requires_grad) {
            (Some(_), true) => Ok(self),
            (None, true) => {
                if !self.dtype().is_float() {
                    return Err(Error::Invalid(format!(
                        "requires_grad_: only floating-point tensors can require gradients, \
                         this one is {} (shape {:?}); convert first with .to_dtype(DType::F32)",
                        self.dtype(),
                        self.shape()
                    )));
                }
                Ok(self.with_grad_meta(Some(Meta::leaf())))
            }
            (Some(m), false) if !m.is_leaf() => Err(Error::Invalid(format!(
                "requires_grad_(false) on a tensor computed by {} (not a leaf): \
                 use .detach() to get a copy without history",
                m.op_name().unwrap_or("an op")
            ))),
            (_, false) => Ok(self.with_grad_meta(None)),
        }
    }

    /// Whether gradients flow to (or through) this tensor.
    pub fn requires_grad(&self) -> bool {
        self.grad_meta.is_some()
    }

    /// True for a tensor that was not computed by a recorded op (torch's `is_leaf`).
    pub fn is_leaf(&self) -> bool {
        self.grad_meta.as_ref().is_none_or(|m| m.is_leaf())
    }

    /// Makes `backward` keep the gradient that reaches this computed tensor in its
    /// `.grad()` (torch's `retain_grad()`), for looking at the gradient of an activation; a
    /// no-op for a leaf, which keeps its gradient anyway. An error for a tensor that does not
    /// require grad, as torch's.
    pub fn retain_grad(&self) -> Result<()> {
        let Some(m) = &self.grad_meta else {
            return Err(Error::Invalid(format!(
                "retain_grad: this tensor (shape {:?}) does not require grad, so no gradient \
                 reaches it; compute it from tensors that require grad, outside no_grad",
                self.shape()
            )));
        };
        if !m.is_leaf() {
            m.retain_grad();
        }
        Ok(())
    }

    /// Whether `backward` keeps this computed tensor's gradient (torch's `retains_grad`):
    /// true after [`Tensor::retain_grad`] on a tensor that is not a leaf.
    pub fn retains_grad(&self) -> bool {
        self.grad_meta
            .as_ref()
            .is_some_and(|m| !m.is_leaf() && m.retains_grad())
    }

    /// The backward node of the op that computed this tensor, by torch's name for it
    /// (`"MulBackward0"` for a product, as `type(t.grad_fn).__name__` in torch); `None` for a
    /// leaf and for a tensor that does not require grad.
    pub fn grad_fn(&self) -> Option<&'static str> {
        self.grad_meta.as_ref().and_then(|m| m.node_name())
    }

    /// The gradient accumulated by `backward` for this leaf; `None` before any backward,
    /// after `zero_grad`, and for tensors that are not leaves unless they
    /// [`retain_grad`](Tensor::retain_grad) (as in torch).
    pub fn grad(&self) -> Option<Tensor> {
        self.grad_meta.as_ref().and_then(|m| m.grad())
    }

    /// Replaces the accumulated gradient (`None` clears it). Shared with every clone.
    pub fn set_grad(&self, grad: Option<Tensor>) {
        if let Some(m) = &self.grad_meta {
            m.set_grad(grad);
        }
    }

    /// Clears the accumulated gradient (torch's `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&self) {
        self.set_grad(None);
    }

    /// The same data without autograd history: it does not require grad (no copy).
    pub fn detach(&self) -> Tensor {
        self.view_of(self.layout.clone())
    }

    /// Computes the gradient of this one-element tensor (a loss) with respect to every leaf
    /// that requires grad, and adds it to their `.grad()`. Frees what the graph saved for it
    /// as it goes, as torch does: a second `backward` through the same graph is an error
    /// (see [`backward_retain_graph`](Tensor::backward_retain_graph)).
    pub fn backward(&self) -> Result<()> {
        self.backward_seeded(false)
    }

    /// `backward`, keeping the graph's saved tensors so that it can run again (torch's
    /// `backward(retain_graph=True)`): each run adds its gradients once more.
    pub fn backward_retain_graph(&self) -> Result<()> {
        self.backward_seeded(true)
    }

    fn backward_seeded(&self, retain_graph: bool) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::Invalid(format!(
                "backward(): grad can be implicitly created only for a tensor with one \
                 element, this one has shape {:?}; reduce it first (.sum(), .mean()) or pass \
                 the gradient with backward_with(&grad)",
                self.shape()
            )));
        }
        let seed = Tensor::full_dtype(self.shape().to_vec(), 1.0, self.dtype(), self.device())?;
        autograd::backward(self, seed, retain_graph)
    }

    /// `backward` with the gradient of this tensor given (torch's `backward(gradient)`),
    /// for a tensor with more than one element; frees the graph's saved tensors as
    /// `backward` does.
    pub fn backward_with(&self, grad: &Tensor) -> Result<()> {
        let g = grad.detach().to_dtype(self.dtype())?;
        self.same_device(&g)?;
        autograd::backward(self, g, false)
    }

    /// This tensor repeated along its size-1 (or missing leading) dimensions to `dims`,
    /// as a contiguous copy (torch's `expand(...).contiguous()`).
    pub fn expand_to(&self, dims: &[usize]) -> Result<Tensor> {
        if self.shape() == dims {
            return Ok(self.clone());
        }
        self.expand(dims.to_vec())?.contiguous()
    }
}
