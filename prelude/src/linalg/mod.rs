//! torch's `torch.linalg` for square systems: `solve`, `inv`, `det`, `slogdet` (and the
//! tensor methods `det`, `slogdet`, `inverse`), on every device, for float32 and float64,
//! batched over leading dimensions that broadcast.
//!
//! One algorithm serves all four: Gauss-Jordan elimination with partial pivoting, written
//! with whole-tensor ops (one step per column, each a handful of element-wise ops over the
//! batch), so it runs wherever those ops run and never reads the matrix on the host. That is
//! `n` steps for an `n x n` system: right for the sizes a notebook solves, not a replacement
//! for LAPACK or cuSOLVER at thousands of unknowns. Gradients are torch's formulas
//! (`solve`: `gB = solve(A^T, g)`, `gA = -gB X^T`; `det`: `g det A^-T`), recorded on the
//! result, not the elimination's steps.
//!
//! The factorisations whose steps are rotations or reflections (`qr`, `eigh`, `svd` and
//! what is built on them) run on the host in float64 instead (`host.rs`): the matrices are
//! read from their device once, factorised, and the factors uploaded as one tensor, rounded
//! once to the input's dtype. Their gradients are torch's formulas in tensor ops, so they
//! run on the input's device.

use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

mod cholesky;
mod factors;
mod host;
mod lu;
mod matrix_exp;
mod norms;
mod products;
mod qr;
mod reshaped;
mod spectral;
mod systems;
pub use cholesky::{cholesky, cholesky_ex, cholesky_inverse, cholesky_solve};
pub use lu::{lu, lu_factor, lu_factor_ex, lu_solve};
pub use matrix_exp::matrix_exp;
pub use norms::{matrix_norm, norm, vector_norm};
pub use products::{cross, multi_dot, vander, vecdot};
pub use qr::{geqrf, householder_product, qr};
pub use reshaped::{tensorinv, tensorsolve};
pub use spectral::{cond, eigh, eigvalsh, matrix_rank, pinv, svd, svdvals};
pub use systems::{lstsq, solve_triangular};

/// What one elimination gives: the reduced `[b, n, w]` matrix (its first `n` columns the
/// identity when the system is regular), the product of the pivots with the sign of the row
/// swaps (the determinant), the sum of `log |pivot|` and the sign alone (for `slogdet`), and
/// the step (1-based) of the first pivot that was exactly zero, 0 for none (LAPACK's `info`:
/// nonzero for a singular matrix), each `[b]`.
struct Reduced {
    m: Tensor,
    det: Tensor,
    sign: Tensor,
    logabs: Tensor,
    info: Tensor,
}

impl Reduced {
    /// Per matrix, whether it is singular (a pivot was exactly zero).
    fn singular(&self) -> Result<Tensor> {
        self.info.ne(0)
    }
}

/// Gauss-Jordan elimination of `m` (`[b, n, w]`, `w >= n`) with partial pivoting, under
/// `no_grad`.
fn eliminate(m: &Tensor, n: usize) -> Result<Reduced> {
    autograd::no_grad(|| {
        let b = m.shape()[0];
        let (dt, dev) = (m.dtype(), m.device());
        let rows = Tensor::arange(0i64, n as i64, dev)?;
        let mut m = m.clone();
        let mut det = Tensor::ones_dtype([b], dt, dev)?;
        let mut sign = det.clone();
        let mut logabs = Tensor::zeros_dtype([b], dt, dev)?;
        let mut info = Tensor::zeros_dtype([b], DType::I64, dev)?;
        let zero = Tensor::zeros_dtype((), dt, dev)?;
        let one = Tensor::ones_dtype((), dt, dev)?;
        for k in 0..n {
            // The pivot: the largest |value| in column k at or below row k, per matrix.
            let col = m.narrow(2, k, 1)?.squeeze(2)?.abs()?;
            let above = rows.lt(k as i64)?.reshape([1, n])?;
            let piv = Tensor::full_dtype((), -1.0, dt, dev)?
                .where_(&above, &col)?
                .argmax_dim(1)?;
            // Rows k and piv swapped, both picked by masks (no host read of piv).
            let is_p = rows
                .reshape([1, n])?
                .eq(&piv.reshape([b, 1])?)?
                .unsqueeze(2)?;
            let is_k = rows.eq(k as i64)?.reshape([1, n, 1])?;
            let row_k = m.narrow(1, k, 1)?;
            let row_p = m.mul(&is_p.to_dtype(dt)?)?.sum_keepdim(1)?;
            m = row_k.where_(&is_p, &m)?;
            m = row_p.where_(&is_k, &m)?;
            let flips = piv.ne(k as i64)?;
            let swap_sign = one.neg()?.where_(&flips, &one)?;
            // Divide row k by the pivot, clear column k from every other row.
            let pv = m.narrow(1, k, 1)?.narrow(2, k, 1)?;
            let pv_flat = pv.reshape([b])?;
            det = det.mul(&pv_flat)?.mul(&swap_sign)?;
            sign = sign.mul(&pv_flat.sign()?)?.mul(&swap_sign)?;
            logabs = logabs.add(&pv_flat.abs()?.log()?)?;
            let is_zero = pv_flat.eq(0)?;
            let first = is_zero.logical_and(&info.eq(0)?)?;
            info =
                Tensor::full_dtype((), (k + 1) as f64, DType::I64, dev)?.where_(&first, &info)?;
            let safe = one.where_(&pv.eq(0)?, &pv)?;
            let row = m.narrow(1, k, 1)?.div(&safe)?;
            let f = zero.where_(&is_k, &m.narrow(2, k, 1)?)?;
            m = m.sub(&f.mul(&row)?)?;
            m = row.where_(&is_k, &m)?;
        }
        Ok(Reduced {
            m,
            det,
            sign,
            logabs,
            info,
        })
    })
}

/// Ok for a batch of square float32/float64 matrices; otherwise an error naming `op`.
fn square(op: &str, a: &Tensor) -> Result<usize> {
    let r = a.rank();
    if r < 2 || a.shape()[r - 1] != a.shape()[r - 2] {
        return Err(Error::BadShape(format!(
            "linalg.{op}: A must be a square matrix or a batch of them, got shape {:?}",
            a.shape()
        )));
    }
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        return Err(Error::Invalid(format!(
            "linalg.{op}: needs a float32 or float64 tensor, got {} (shape {:?}), as torch's \
             (half precision has no kernel there either); convert first with .to_dtype(DType::F32)",
            a.dtype(),
            a.shape()
        )));
    }
    Ok(a.shape()[r - 1])
}

/// The broadcast of two batch shapes, or None.
fn broadcast_batch(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        let pad = r - s.len();
        if i < pad {
            1
        } else {
            s[i - pad]
        }
    };
    (0..r)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

fn refuse_singular(op: &str, red: &Reduced, a: &Tensor) -> Result<()> {
    if red.singular()?.any()?.to_vec::<bool>()?[0] {
        return Err(Error::Invalid(format!(
            "linalg.{op}: the matrix is singular (a pivot of its elimination is exactly zero), \
             so the system has no unique solution (shape {:?})",
            a.shape()
        )));
    }
    Ok(())
}

/// The solution `X` of `A X = B` (torch's `torch.linalg.solve(A, B)`): `A` is `[.., n, n]`,
/// `B` is `[.., n, k]`, or `[.., n]` (a batch of vectors) when its shape is `A`'s without the
/// last dimension or it is 1-D; the batch dimensions broadcast. A singular `A` is an error,
/// as in torch. Both float32 or both float64.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(solve_with(a, b, true)?.0)
}

/// [`solve`] without the check for a singular `A` (torch's `torch.linalg.solve_ex(A, B)`):
/// `(X, info)` with `info` (int32, one per matrix of the batch) 0 where `A` is regular and
/// otherwise the step of the first zero pivot, 1-based, as LAPACK's; where `info` is not 0,
/// `X` holds what the elimination gave with that pivot skipped, which solves nothing
/// (torch's is unspecified there too).
pub fn solve_ex(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    solve_with(a, b, false)
}

/// `(X, info)` for [`solve`] and [`solve_ex`]; `check` refuses a singular `A`.
fn solve_with(a: &Tensor, b: &Tensor, check: bool) -> Result<(Tensor, Tensor)> {
    let n = square("solve", a)?;
    if a.dtype() != b.dtype() {
        return Err(Error::Invalid(format!(
            "linalg.solve: A and B need one dtype, got {} and {} (shapes {:?} and {:?})",
            a.dtype(),
            b.dtype(),
            a.shape(),
            b.shape()
        )));
    }
    let vector = b.rank() == 1 || b.shape() == &a.shape()[..a.rank() - 1];
    let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
    if bm.rank() < 2 || bm.shape()[bm.rank() - 2] != n {
        return Err(Error::BadShape(format!(
            "linalg.solve: B must have {n} rows to match A, got shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    let k = bm.shape()[bm.rank() - 1];
    let batch = broadcast_batch(&a.shape()[..a.rank() - 2], &bm.shape()[..bm.rank() - 2])
        .ok_or_else(|| {
            Error::BadShape(format!(
                "linalg.solve: the batch dimensions of A {:?} and B {:?} do not broadcast",
                a.shape(),
                b.shape()
            ))
        })?;
    let count: usize = batch.iter().product();
    let with = |last: [usize; 2]| {
        let mut s = batch.clone();
        s.extend_from_slice(&last);
        s
    };
    let (x, info) = autograd::no_grad(|| -> Result<(Tensor, Tensor)> {
        let aa = a.broadcast_to(with([n, n]))?.reshape([count, n, n])?;
        let bb = bm.broadcast_to(with([n, k]))?.reshape([count, n, k])?;
        let red = eliminate(&Tensor::cat(&[&aa, &bb], 2)?, n)?;
        if check {
            refuse_singular("solve", &red, a)?;
        }
        let info = red.info.to_dtype(DType::I32)?.reshape(batch.clone())?;
        let x = red.m.narrow(2, n, k)?.reshape(with([n, k]))?;
        Ok((if vector { x.squeeze(-1)? } else { x }, info))
    })?;
    let (as_, xs) = (Saved::new(a), Saved::new(&x));
    let x = record(x, "linalg_solve", &[a, b], move |g| {
        // torch's: gB = solve(A^T, g), gA = -gB X^T (outer products for vectors).
        let (a, x) = (as_.get()?, xs.get()?);
        let at = a.transpose(-2, -1)?;
        let gb = solve(&at, g)?;
        let ga = if vector {
            gb.unsqueeze(-1)?.mul(&x.unsqueeze(-2)?)?.neg()?
        } else {
            gb.matmul(&x.transpose(-2, -1)?)?.neg()?
        };
        Ok(vec![Some(ga), Some(gb)])
    });
    Ok((x, info))
}

/// The inverse of a square matrix or of each in a batch (torch's `torch.linalg.inv`); a
/// singular matrix is an error, as in torch.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    let n = square("inv", a)?;
    let eye = Tensor::eye(n, a.device())?.to_dtype(a.dtype())?;
    match solve(a, &eye) {
        Err(Error::Invalid(e)) => Err(Error::Invalid(e.replace("linalg.solve", "linalg.inv"))),
        r => Ok(autograd::relabel("linalg_inv", r?)),
    }
}

/// [`inv`] without the check for a singular matrix (torch's `torch.linalg.inv_ex(A)`):
/// `(inverse, info)`, `info` as [`solve_ex`]'s.
pub fn inv_ex(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let n = square("inv", a)?;
    let eye = Tensor::eye(n, a.device())?.to_dtype(a.dtype())?;
    let (x, info) = solve_ex(a, &eye)?;
    Ok((autograd::relabel("linalg_inv_ex", x), info))
}

/// The determinant of a square matrix or of each in a batch (torch's `torch.linalg.det`),
/// with torch's gradient `g det(A) A^-T`; at a singular matrix that gradient is refused
/// (torch computes it through an SVD, which gpulab has not).
pub fn det(a: &Tensor) -> Result<Tensor> {
    let (red, batch) = reduce("det", a)?;
    let d = red.det.reshape(batch)?;
    let (as_, ds) = (Saved::new(a), Saved::new(&d));
    Ok(record(d, "linalg_det", &[a], move |g| {
        let (a, d) = (as_.get()?, ds.get()?);
        let ainv_t = inv(a)
            .map_err(|e| {
                Error::Invalid(format!(
                    "linalg.det's gradient at a singular matrix is not implemented ({e})"
                ))
            })?
            .transpose(-2, -1)?;
        let scale = g.mul(d)?.unsqueeze(-1)?.unsqueeze(-1)?;
        Ok(vec![Some(ainv_t.mul(&scale)?)])
    }))
}

/// The sign (-1, 0 or 1) and the log of the absolute value of the determinant (torch's
/// `torch.linalg.slogdet`), which stays finite where `det` overflows or underflows. The
/// log's gradient is torch's, `g A^-T`.
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (red, batch) = reduce("slogdet", a)?;
    let zero = Tensor::zeros_dtype((), a.dtype(), a.device())?;
    let sign = zero
        .where_(&red.singular()?, &red.sign)?
        .reshape(batch.clone())?;
    let logabs = red.logabs.reshape(batch)?;
    let as_ = Saved::new(a);
    let logabs = record(logabs, "linalg_slogdet", &[a], move |g| {
        let ainv_t = inv(as_.get()?)?.transpose(-2, -1)?;
        Ok(vec![Some(ainv_t.mul(&g.unsqueeze(-1)?.unsqueeze(-1)?)?)])
    });
    Ok((sign, logabs))
}

/// `a`'s matrices eliminated on their own, and the batch shape.
fn reduce(op: &str, a: &Tensor) -> Result<(Reduced, Vec<usize>)> {
    let n = square(op, a)?;
    let batch = a.shape()[..a.rank() - 2].to_vec();
    let count: usize = batch.iter().product();
    let red = eliminate(&a.detach().reshape([count, n, n])?, n)?;
    Ok((red, batch))
}

impl Tensor {
    /// The determinant (torch's `Tensor.det`, [`det`]).
    pub fn det(&self) -> Result<Tensor> {
        det(self)
    }

    /// The sign and log-absolute-value of the determinant (torch's `Tensor.slogdet`,
    /// [`slogdet`]).
    pub fn slogdet(&self) -> Result<(Tensor, Tensor)> {
        slogdet(self)
    }

    /// The matrix inverse (torch's `Tensor.inverse`, [`inv`]).
    pub fn inverse(&self) -> Result<Tensor> {
        inv(self)
    }

    /// The log of the determinant (torch's `torch.logdet`): NaN where the determinant is
    /// negative, -inf where the matrix is singular; the gradient is `g A⁻ᵀ` where the
    /// determinant is positive and 0 where it is negative, as torch's.
    pub fn logdet(&self) -> Result<Tensor> {
        let (sign, logabs) = slogdet(self).map_err(|e| match e {
            Error::Invalid(s) => Error::Invalid(s.replace("linalg.slogdet", "logdet")),
            Error::BadShape(s) => Error::BadShape(s.replace("linalg.slogdet", "logdet")),
            other => other,
        })?;
        let nan = Tensor::full_dtype((), f64::NAN, logabs.dtype(), logabs.device())?;
        nan.where_(&sign.lt(0)?, &logabs)
    }

    /// The matrix exponential (torch's `Tensor.matrix_exp`, [`matrix_exp`]).
    pub fn matrix_exp(&self) -> Result<Tensor> {
        matrix_exp(self)
    }

    /// The pseudo-inverse with singular values below `rcond` times the largest dropped
    /// (torch's `Tensor.pinverse(rcond=1e-15)`, [`pinv`] with that `rtol`).
    pub fn pinverse(&self, rcond: f64) -> Result<Tensor> {
        pinv(self, None, Some(rcond))
    }
}

/// `A` to the integer power `n` (torch's `torch.linalg.matrix_power`): the identity for
/// 0, `inv(A)^|n|` for a negative `n` (floats only, a singular `A` an error), and by
/// repeated squaring as torch multiplies (least significant bit first), so the rounding
/// is torch's. Integer matrices take `n >= 0` on the CPU (CUDA has no integer matmul).
pub fn matrix_power(a: &Tensor, n: i64) -> Result<Tensor> {
    let r = a.rank();
    if r < 2 || a.shape()[r - 1] != a.shape()[r - 2] {
        return Err(Error::BadShape(format!(
            "linalg.matrix_power: A must be a square matrix or a batch of them, got shape {:?}",
            a.shape()
        )));
    }
    if n == 0 {
        // torch copies the identity into a clone of A: connected to A, with a zero gradient.
        let eye = Tensor::eye(a.shape()[r - 1], a.device())?.to_dtype(a.dtype())?;
        let out = eye.broadcast_to(a.shape().to_vec())?.contiguous()?;
        return Ok(record(out, "matrix_power", &[a], |g| {
            Ok(vec![Some(g.zeros_like()?)])
        }));
    }
    let base = if n < 0 {
        if !matches!(a.dtype(), DType::F32 | DType::F64) {
            return Err(Error::Invalid(format!(
                "linalg.matrix_power: a negative power inverts A, which needs float32 or                  float64, got {} (shape {:?})",
                a.dtype(),
                a.shape()
            )));
        }
        inv(a)?
    } else {
        a.clone()
    };
    let mut k = n.unsigned_abs();
    match k {
        1 => return base.deep_clone(),
        2 => return base.matmul(&base),
        3 => return base.matmul(&base)?.matmul(&base),
        _ => {}
    }
    let (mut z, mut result): (Option<Tensor>, Option<Tensor>) = (None, None);
    while k > 0 {
        let bit = k % 2;
        k /= 2;
        let next = match &z {
            Some(z) => z.matmul(z)?,
            None => base.clone(),
        };
        if bit == 1 {
            result = Some(match result {
                Some(r) => r.matmul(&next)?,
                None => next.clone(),
            });
        }
        z = Some(next);
    }
    Ok(result.expect("n > 3 has a set bit"))
}

/// The diagonals of the last two dimensions, or of `dim1` and `dim2` (torch's
/// `torch.linalg.diagonal(A, offset=0, dim1=-2, dim2=-1)`, [`Tensor::diagonal`] with
/// torch.linalg's defaults).
pub fn diagonal(a: &Tensor, offset: i64, dim1: isize, dim2: isize) -> Result<Tensor> {
    a.diagonal(offset, dim1, dim2)
}
