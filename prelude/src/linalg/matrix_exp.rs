//! torch.linalg's matrix exponential, `exp(A) = Σ A^k / k!`, by scaling and squaring in
//! whole-tensor ops on A's device: A is scaled by `2^-s` until its 1-norm is at most 1,
//! the Taylor series summed to degree 18 by Horner's rule (its remainder is below 1e-17
//! there), and the result squared `s` times. Float32 is computed in float64 and rounded
//! once. The gradient is torch's: the upper-right block of the exponential of
//! `[[Aᵀ, G], [0, Aᵀ]]` (the Fréchet derivative's adjoint, Mathias 1996).

use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// The Taylor degree after scaling: `1/19!` is about 8e-18, below float64's half-unit.
const DEGREE: usize = 18;

/// The exponential of each `n x n` matrix of `a` (float64), under `no_grad`.
fn expm(a: &Tensor, n: usize) -> Result<Tensor> {
    // One scale for the whole batch: the largest 1-norm (a host read of one number).
    let norm = a.abs()?.sum_dim(-2)?.amax(&[], false)?.to_vec::<f64>()?;
    let norm = norm.first().copied().unwrap_or(0.0);
    if !norm.is_finite() {
        return Err(Error::Invalid(format!(
            "linalg.matrix_exp: A holds NaN or infinity (shape {:?})",
            a.shape()
        )));
    }
    let s = if norm > 1.0 {
        norm.log2().ceil() as i32
    } else {
        0
    };
    let x = a.mul(2f64.powi(-s))?;
    let eye = Tensor::eye(n, a.device())?.to_dtype(DType::F64)?;
    let mut p = eye.clone();
    for k in (1..=DEGREE).rev() {
        p = x.matmul(&p)?.div(k as f64)?.add(&eye)?;
    }
    for _ in 0..s {
        p = p.matmul(&p)?;
    }
    Ok(p)
}

/// The matrix exponential of a square matrix or of each in a batch (torch's
/// `torch.linalg.matrix_exp`), float32 or float64. `exp(0) = I`, and `exp(A) exp(-A) = I`.
pub fn matrix_exp(a: &Tensor) -> Result<Tensor> {
    let r = a.rank();
    if r < 2 || a.shape()[r - 1] != a.shape()[r - 2] {
        return Err(Error::BadShape(format!(
            "linalg.matrix_exp: A must be a square matrix or a batch of them, got shape {:?}",
            a.shape()
        )));
    }
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        return Err(Error::Invalid(format!(
            "linalg.matrix_exp: needs a float32 or float64 tensor, got {} (shape {:?})",
            a.dtype(),
            a.shape()
        )));
    }
    let n = a.shape()[r - 1];
    if a.numel() == 0 {
        return a.zeros_like();
    }
    let dt = a.dtype();
    let out = autograd::no_grad(|| expm(&a.detach().to_dtype(DType::F64)?, n)?.to_dtype(dt))?;
    let as_ = Saved::new(a);
    Ok(record(out, "linalg_matrix_exp", &[a], move |g| {
        let at = as_.get()?.transpose(-2, -1)?;
        let zero = at.zeros_like()?;
        let top = Tensor::cat(&[&at, g], -1)?;
        let bottom = Tensor::cat(&[&zero, &at], -1)?;
        let block = Tensor::cat(&[top, bottom], -2)?;
        let e = autograd::no_grad(|| matrix_exp(&block))?;
        Ok(vec![Some(e.narrow(-2, 0, n)?.narrow(-1, n, n)?)])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn known_exponentials() {
        // A rotation generator: exp([[0, -t], [t, 0]]) = [[cos t, -sin t], [sin t, cos t]].
        let t = 2.5f64;
        let a = Tensor::from_vec(vec![0.0, -t, t, 0.0], [2, 2], Device::Cpu).unwrap();
        let e = matrix_exp(&a).unwrap().to_vec::<f64>().unwrap();
        let want = [t.cos(), -t.sin(), t.sin(), t.cos()];
        for (x, w) in e.iter().zip(want) {
            assert!((x - w).abs() < 1e-14, "{e:?}");
        }
        // A diagonal matrix with a large entry: the squarings keep the digits.
        let d = Tensor::from_vec(vec![10.0, 0.0, 0.0, -3.0], [2, 2], Device::Cpu).unwrap();
        let e = matrix_exp(&d).unwrap().to_vec::<f64>().unwrap();
        assert!((e[0] / 10f64.exp() - 1.0).abs() < 1e-13, "{e:?}");
        assert!(
            (e[3] / (-3f64).exp() - 1.0).abs() < 1e-13 && e[1] == 0.0,
            "{e:?}"
        );
        let e = matrix_exp(&Tensor::ones((2, 3), Device::Cpu).unwrap()).unwrap_err();
        assert!(e.to_string().contains("square"), "{e}");
    }
}
