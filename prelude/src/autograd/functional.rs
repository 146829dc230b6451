//! torch's `torch.autograd.functional`: derivatives of a function of one tensor, computed with
//! the reverse-mode engine ([`super::grad_with`]) instead of by `backward` on a loss.

use super::{enable_grad, grad_with};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `x` as a fresh leaf that requires grad, so `f`'s graph starts there (the caller's tensor
/// and its own graph are left alone).
fn fresh_input(x: &Tensor, op: &str) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::Invalid(format!(
            "autograd.functional.{op}: the input must be a floating-point tensor, got {} \
             (shape {:?})",
            x.dtype(),
            x.shape()
        )));
    }
    x.detach().requires_grad_(true)
}

/// The Jacobian of `f` at `x` (torch's `torch.autograd.functional.jacobian(f, x)`): shape
/// `f(x).shape + x.shape`, entry `[i.., j..]` the derivative of output `i` by input `j`. One
/// reverse pass per output element, so it suits the small functions one looks at. An output
/// that does not depend on `x` gives zeros, as torch's with `strict=False`.
pub fn jacobian(f: impl Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Result<Tensor> {
    let x0 = fresh_input(x, "jacobian")?;
    let y = enable_grad(|| f(&x0))?;
    let mut dims = y.shape().to_vec();
    dims.extend_from_slice(x.shape());
    if !y.requires_grad() || y.numel() == 0 {
        return Tensor::zeros_dtype(dims, y.dtype(), y.device());
    }
    let n = y.numel();
    let eye = Tensor::eye(n, y.device())?.to_dtype(y.dtype())?;
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let seed = eye.narrow(0, i, 1)?.reshape(y.shape().to_vec())?;
        let g = grad_with(&y, &[&x0], Some(&seed), i + 1 < n, true)?.remove(0);
        rows.push(match g {
            Some(g) => g,
            None => x0.detach().zeros_like()?,
        });
    }
    Tensor::stack(&rows, 0)?.reshape(dims)
}

/// `f(x)` and the vector-Jacobian product `vᵀ J` (torch's
/// `torch.autograd.functional.vjp(f, x, v)`): the gradient of `sum(f(x) * v)` by `x`, shape
/// `x.shape`. `v` is `f(x)`'s shape; None for a one-element output (then the gradient).
pub fn vjp(
    f: impl Fn(&Tensor) -> Result<Tensor>,
    x: &Tensor,
    v: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let x0 = fresh_input(x, "vjp")?;
    let y = enable_grad(|| f(&x0))?;
    if let Some(v) = v {
        if v.shape() != y.shape() {
            return Err(Error::BadShape(format!(
                "autograd.functional.vjp: v has shape {:?} but the output has shape {:?}",
                v.shape(),
                y.shape()
            )));
        }
    }
    if v.is_none() && y.numel() != 1 {
        return Err(Error::Invalid(format!(
            "autograd.functional.vjp: v can be None only when the function gives one element, \
             this output has shape {:?}",
            y.shape()
        )));
    }
    if !y.requires_grad() {
        return Ok((y, x0.detach().zeros_like()?));
    }
    let g = grad_with(&y, &[&x0], v, false, true)?.remove(0);
    let g = match g {
        Some(g) => g,
        None => x0.detach().zeros_like()?,
    };
    Ok((y.detach(), g))
}
