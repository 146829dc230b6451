//! torch's `nn.utils.parametrizations.orthogonal`: a layer's weight kept orthogonal (its
//! columns, or rows for a wide matrix, orthonormal) by computing it from a free matrix at each
//! forward: the matrix exponential or the Cayley transform of a skew-symmetric matrix, or a
//! product of Householder reflections. With torch's default "trivialization" the result
//! multiplies a fixed orthogonal `base` (a buffer, the weight orthogonalised at the start), so
//! training starts where the layer's weight was.

use super::parametrized::{register_parametrization_with, Parametrized};
use super::{Module, Parameter};
use crate::error::{Error, Result};
use crate::linalg;
use crate::tensor::{DType, Tensor};

/// How the free matrix becomes an orthogonal one (torch's `orthogonal_map`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OrthogonalMap {
    /// `exp(A)` of the skew-symmetric `A = X - Xᵀ` (X's lower triangle).
    MatrixExp,
    /// `(I + A/2)(I - A/2)⁻¹`, the same `A`.
    Cayley,
    /// The Householder reflections stored below X's diagonal (float32 and float64 only).
    Householder,
}

impl OrthogonalMap {
    fn parse(s: &str) -> Result<OrthogonalMap> {
        match s {
            "matrix_exp" => Ok(OrthogonalMap::MatrixExp),
            "cayley" => Ok(OrthogonalMap::Cayley),
            "householder" => Ok(OrthogonalMap::Householder),
            _ => Err(Error::Invalid(format!(
                "orthogonal: orthogonal_map has to be one of \"matrix_exp\", \"cayley\", \
                 \"householder\", got {s:?}"
            ))),
        }
    }
}

/// The parametrisation itself (torch's `_Orthogonal`), the one module of the chain.
struct Orthogonal {
    map: OrthogonalMap,
    shape: Vec<usize>,
    /// The orthogonal matrix the result multiplies (trivialization), or None.
    base: Option<Parameter>,
}

/// The last two dimensions swapped.
fn mt(x: &Tensor) -> Result<Tensor> {
    x.transpose(-2, -1)
}

/// `[.., n, k]` ones on the diagonal, zeros elsewhere, in `like`'s dtype and device.
fn eye_like(like: &Tensor) -> Result<Tensor> {
    let r = like.rank();
    let (n, k) = (like.shape()[r - 2], like.shape()[r - 1]);
    let eye = Tensor::eye(n.max(k), like.device())?
        .to_dtype(like.dtype())?
        .narrow(0, 0, n)?
        .narrow(1, 0, k)?;
    like.zeros_like()?.add(&eye)
}

/// The Q of the QR decomposition of `a`, its columns' signs those of R's diagonal (torch's
/// `_make_orthogonal`).
fn make_orthogonal(a: &Tensor) -> Result<Tensor> {
    let (x, tau) = linalg::geqrf(a)?;
    let q = linalg::householder_product(&x, &tau)?;
    q.mul(&x.diagonal(0, -2, -1)?.sign()?.unsqueeze(-2)?)
}

/// Whether `QᵀQ` is the identity to `10 n` machine epsilons (torch's `_is_orthogonal`).
fn is_orthogonal(q: &Tensor) -> Result<bool> {
    let n = q.shape()[q.rank() - 1];
    let eps = match q.dtype() {
        DType::F64 => f64::EPSILON,
        _ => f32::EPSILON as f64,
    };
    let qtq = mt(q)?.matmul(q)?;
    qtq.allclose(&eye_like(&qtq)?, 1e-5, 10.0 * n as f64 * eps)
}

impl Orthogonal {
    /// The starting `original` for the weight `q` (torch's `right_inverse`): with a base, the
    /// base becomes `q` orthogonalised (completed with random columns when not square) and the
    /// original minus the identity, which every map sends to the identity; without, the
    /// Householder vectors of `q`'s QR.
    fn right_inverse(&self, q0: &Tensor) -> Result<Tensor> {
        let r = q0.rank();
        let (mut n, mut k) = (q0.shape()[r - 2], q0.shape()[r - 1]);
        let transposed = n < k;
        let q = if transposed {
            std::mem::swap(&mut n, &mut k);
            mt(q0)?
        } else {
            q0.clone()
        };
        let Some(base) = &self.base else {
            if self.map != OrthogonalMap::Householder {
                // torch's NotImplementedError here means "start from the weight as it is".
                return Ok(q0.clone());
            }
            let (a, tau) = linalg::geqrf(&q)?;
            // The diagonal holds each reflection's sign: R's, flipped where no reflection
            // was needed (tau 0), as torch's.
            let d = a.diagonal(0, -2, -1)?.sign()?;
            let d = d.where_(&tau.ne(0.0)?, &d.neg()?)?;
            let eye = eye_like(&a)?;
            let a = a
                .mul(&eye.neg()?.add(1.0)?)?
                .add(&eye.mul(&d.unsqueeze(-2)?)?)?;
            return if transposed { mt(&a) } else { Ok(a) };
        };
        let q = if n == k {
            if is_orthogonal(&q)? {
                q.deep_clone()?
            } else {
                make_orthogonal(&q)?
            }
        } else {
            let mut dims = q.shape().to_vec();
            dims[r - 1] = n - k;
            let extra = Tensor::randn(dims, q.device())?.to_dtype(q.dtype())?;
            make_orthogonal(&Tensor::cat(&[q, extra], -1)?)?
        };
        base.set_data(q)?;
        eye_like(q0)?.neg()
    }
}

impl Module for Orthogonal {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let r = x.rank();
        if x.shape() != self.shape.as_slice() {
            return Err(Error::BadShape(format!(
                "orthogonal: expected the original of shape {:?}, got {:?}",
                self.shape,
                x.shape()
            )));
        }
        let (mut n, mut k) = (x.shape()[r - 2], x.shape()[r - 1]);
        let transposed = n < k;
        let x = if transposed {
            std::mem::swap(&mut n, &mut k);
            mt(x)?
        } else {
            x.clone()
        };
        let mut q = match self.map {
            OrthogonalMap::MatrixExp | OrthogonalMap::Cayley => {
                let mut x = x.tril(0)?;
                if n != k {
                    let mut dims = x.shape().to_vec();
                    dims[r - 1] = n - k;
                    let zeros = Tensor::zeros_dtype(dims, x.dtype(), x.device())?;
                    x = Tensor::cat(&[x, zeros], -1)?;
                }
                let a = x.sub(&mt(&x)?)?;
                let q = if self.map == OrthogonalMap::MatrixExp {
                    linalg::matrix_exp(&a)?
                } else {
                    let half = a.mul(0.5)?;
                    let id = eye_like(&a)?;
                    linalg::solve(&id.sub(&half)?, &id.add(&half)?)?
                };
                if n != k {
                    q.narrow(-1, 0, k)?
                } else {
                    q
                }
            }
            OrthogonalMap::Householder => {
                let a = x.tril(-1)?;
                let tau = a.mul(&a)?.sum_dim(-2)?.add(1.0)?.reciprocal()?.mul(2.0)?;
                let q = linalg::householder_product(&a, &tau)?;
                // The diagonal's signs (truncated to integers, as torch's `.int()`, so no
                // gradient) flip the columns.
                let signs = x.diagonal(0, -2, -1)?.detach().to_dtype(DType::I32)?;
                q.mul(&signs.unsqueeze(-2)?)?
            }
        };
        if let Some(base) = &self.base {
            q = base.tensor().matmul(&q)?;
        }
        if transposed {
            mt(&q)
        } else {
            Ok(q)
        }
    }
    fn buffers(&self) -> Vec<(String, Parameter)> {
        self.base
            .iter()
            .map(|b| ("base".to_string(), b.clone()))
            .collect()
    }
    fn describe(&self) -> String {
        "_Orthogonal()".into()
    }
}

/// torch's `nn.utils.parametrizations.orthogonal(module)`: the layer's `weight` kept
/// orthogonal, starting at the weight orthogonalised; the map is the matrix exponential for a
/// square weight and Householder reflections otherwise, as torch's default.
pub fn orthogonal<M: Module>(module: M) -> Result<Parametrized<M>> {
    orthogonal_with(module, "weight", None, true)
}

/// [`orthogonal`] of the tensor `name` with torch's `orthogonal_map` (`"matrix_exp"`,
/// `"cayley"`, `"householder"`; None for the default) and `use_trivialization` (false: the
/// map alone, no base, so the map's own starting point; only Householder can start from the
/// weight then, as in torch).
pub fn orthogonal_with<M: Module>(
    module: M,
    name: &str,
    orthogonal_map: Option<&str>,
    use_trivialization: bool,
) -> Result<Parametrized<M>> {
    let op = "orthogonal";
    let w = super::parametrize::weight_of(&module, name, op)?.tensor();
    let r = w.rank();
    if r < 2 {
        return Err(Error::BadShape(format!(
            "{op}: expected a matrix or a batch of matrices for {name:?}, got a tensor of {r} \
             dimension{} (shape {:?})",
            if r == 1 { "" } else { "s" },
            w.shape()
        )));
    }
    let square = w.shape()[r - 2] == w.shape()[r - 1];
    let map = match orthogonal_map {
        Some(s) => OrthogonalMap::parse(s)?,
        None if square => OrthogonalMap::MatrixExp,
        None => OrthogonalMap::Householder,
    };
    if map == OrthogonalMap::Householder && !matches!(w.dtype(), DType::F32 | DType::F64) {
        return Err(Error::Invalid(format!(
            "{op}: the householder map needs float32 or float64 (linalg.householder_product's \
             dtypes), got {}",
            w.dtype()
        )));
    }
    // The base is square, the larger side (right_inverse completes a tall weight's columns).
    let side = w.shape()[r - 2].max(w.shape()[r - 1]);
    let mut base_shape = w.shape()[..r - 2].to_vec();
    base_shape.extend([side, side]);
    let base = match use_trivialization {
        true => Some(Parameter::buffer(Tensor::zeros_dtype(
            base_shape,
            w.dtype(),
            w.device(),
        )?)),
        false => None,
    };
    let orth = Orthogonal {
        map,
        shape: w.shape().to_vec(),
        base,
    };
    let start = orth.right_inverse(&w.detach())?;
    register_parametrization_with(module, name, orth, |_| Ok(start))
}
