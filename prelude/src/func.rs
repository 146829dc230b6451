//! torch's `torch.func`, the function transforms, for functions of one tensor: `grad`,
//! `grad_and_value`, `vjp` (a pullback that can be called many times), `jacrev` and `vmap`;
//! and `functional_call` (a module run with some of its tensors replaced).
//!
//! torch composes these freely (`vmap(grad(f))`, `jacrev(jacrev(f))`); here each is computed
//! directly by the reverse-mode engine, so they compose where the inner one's result is a
//! plain function of the input (`vmap` of `grad` does, one slice at a time), but not into
//! higher derivatives, which need the backward pass recorded (`create_graph`).

pub use crate::nn::utils::stateless::{functional_call, functional_call_with};

use crate::autograd::{enable_grad, grad_with};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `x` as a fresh leaf that requires grad, so `f`'s graph starts there.
fn fresh(x: &Tensor, op: &str) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::Invalid(format!(
            "func.{op}: the input must be a floating-point tensor, got {} (shape {:?})",
            x.dtype(),
            x.shape()
        )));
    }
    x.detach().requires_grad_(true)
}

/// The gradient of `f` at `x` (torch's `torch.func.grad(f)(x)`): `f` gives one element;
/// the gradient has `x`'s shape (zeros where `f` does not depend on `x`).
pub fn grad(f: impl Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Result<Tensor> {
    Ok(grad_and_value(f, x)?.0)
}

/// The gradient of `f` at `x` and `f(x)` (torch's `torch.func.grad_and_value(f)(x)`).
pub fn grad_and_value(
    f: impl Fn(&Tensor) -> Result<Tensor>,
    x: &Tensor,
) -> Result<(Tensor, Tensor)> {
    let x0 = fresh(x, "grad")?;
    let y = enable_grad(|| f(&x0))?;
    if y.numel() != 1 {
        return Err(Error::Invalid(format!(
            "func.grad: the function must give one element, it gave shape {:?}",
            y.shape()
        )));
    }
    let g = if y.requires_grad() {
        grad_with(&y, &[&x0], None, false, true)?.remove(0)
    } else {
        None
    };
    let g = match g {
        Some(g) => g,
        None => x0.detach().zeros_like()?,
    };
    Ok((g, y.detach()))
}

/// `f(x)` and its pullback (torch's `torch.func.vjp(f, x)`): `pullback(&v)` is `vᵀ J`, the
/// gradient of `sum(f(x) * v)` by `x`, for any number of `v`s of `f(x)`'s shape.
pub fn vjp(
    f: impl Fn(&Tensor) -> Result<Tensor>,
    x: &Tensor,
) -> Result<(Tensor, impl Fn(&Tensor) -> Result<Tensor>)> {
    let x0 = fresh(x, "vjp")?;
    let y = enable_grad(|| f(&x0))?;
    let out = y.detach();
    let pullback = move |v: &Tensor| -> Result<Tensor> {
        if v.shape() != y.shape() {
            return Err(Error::BadShape(format!(
                "func.vjp: the cotangent has shape {:?} but the output has shape {:?}",
                v.shape(),
                y.shape()
            )));
        }
        let g = if y.requires_grad() {
            grad_with(&y, &[&x0], Some(v), true, true)?.remove(0)
        } else {
            None
        };
        match g {
            Some(g) => Ok(g),
            None => x0.detach().zeros_like(),
        }
    };
    Ok((out, pullback))
}

/// The Jacobian of `f` at `x` by reverse mode (torch's `torch.func.jacrev(f)(x)`), shape
/// `f(x).shape + x.shape`; [`crate::autograd::functional::jacobian`].
pub fn jacrev(f: impl Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Result<Tensor> {
    crate::autograd::functional::jacobian(f, x)
}

/// `f` mapped over dimension `in_dim` of `x`, the results stacked along `out_dim` (torch's
/// `torch.func.vmap(f, in_dims, out_dims)(x)`): `f` sees one slice at a time, without that
/// dimension, as a function written for one example. It runs `f` once per slice (torch
/// batches the kernels instead), so it is for writing per-example code, such as per-sample
/// gradients with [`grad`], not for speed.
pub fn vmap(
    f: impl Fn(&Tensor) -> Result<Tensor>,
    x: &Tensor,
    in_dim: isize,
    out_dim: isize,
) -> Result<Tensor> {
    let r = x.rank() as isize;
    let d = if in_dim < 0 { in_dim + r } else { in_dim };
    if r == 0 || d < 0 || d >= r {
        return Err(Error::BadShape(format!(
            "func.vmap: in_dim {in_dim} is out of range for an input of shape {:?}",
            x.shape()
        )));
    }
    let n = x.shape()[d as usize];
    if n == 0 {
        return Err(Error::BadShape(format!(
            "func.vmap: the mapped dimension {d} of shape {:?} has size 0, so there is no \
             slice to learn the output's shape from",
            x.shape()
        )));
    }
    let outs = (0..n)
        .map(|i| f(&x.select(d, i as isize)?))
        .collect::<Result<Vec<Tensor>>>()?;
    let first = outs[0].shape().to_vec();
    if let Some(o) = outs.iter().find(|o| o.shape() != first.as_slice()) {
        return Err(Error::BadShape(format!(
            "func.vmap: the function gave shape {first:?} for the first slice and {:?} for \
             another; every slice's result must have one shape",
            o.shape()
        )));
    }
    let rank = first.len() as isize + 1;
    let od = if out_dim < 0 { out_dim + rank } else { out_dim };
    if od < 0 || od >= rank {
        return Err(Error::BadShape(format!(
            "func.vmap: out_dim {out_dim} is out of range for results of shape {first:?} \
             stacked"
        )));
    }
    Tensor::stack(&outs, od)
}
