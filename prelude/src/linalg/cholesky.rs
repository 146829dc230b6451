//! torch.linalg's Cholesky factorisation, `A = L Lᵀ` for a symmetric positive-definite `A`,
//! in whole-tensor ops as the elimination in `mod.rs` is: one step per column, each a
//! batched matrix-vector product over the columns already found, so it runs on every
//! device and never reads the matrix on the host (one host read of a flag refuses a matrix
//! that is not positive-definite, naming the leading minor, as torch does).

use super::square;
use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// The lower-triangular `L` with positive diagonal and `L Lᵀ = A` (torch's
/// `torch.linalg.cholesky(A, upper)`; with `upper`, `Lᵀ`). Only `A`'s lower triangle is
/// read, as in torch. Batched over leading dimensions; float32 and float64. The gradient
/// is torch's (Murray's formula, symmetrised).
pub fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    Ok(cholesky_with(a, upper, true)?.0)
}

/// [`cholesky`] without the check (torch's `torch.linalg.cholesky_ex(A, upper)`): `(L,
/// info)`, `info` (int32, one per matrix) 0 where the matrix is positive-definite and
/// otherwise the order of its first leading minor that is not, as LAPACK's `potrf`. Where
/// `info` is not 0, L's columns from that order on are not a factor (torch's are
/// unspecified there too).
pub fn cholesky_ex(a: &Tensor, upper: bool) -> Result<(Tensor, Tensor)> {
    cholesky_with(a, upper, false)
}

fn cholesky_with(a: &Tensor, upper: bool, check: bool) -> Result<(Tensor, Tensor)> {
    let n = square("cholesky", a)?;
    let batch = a.shape()[..a.rank() - 2].to_vec();
    let count: usize = batch.iter().product();
    let (dt, dev) = (a.dtype(), a.device());
    let (l, info) = autograd::no_grad(|| -> Result<(Tensor, Tensor)> {
        let m = a.reshape([count, n, n])?;
        let rows = Tensor::arange(0i64, n as i64, dev)?;
        let mut l = Tensor::zeros_dtype([count, n, n], dt, dev)?;
        // The first column (1-based order) whose pivot is not positive, per matrix; n + 1
        // when there is none.
        let mut failed = Tensor::full_dtype([count], (n + 1) as f64, DType::I64, dev)?;
        let zero = Tensor::zeros_dtype((), dt, dev)?;
        let one = Tensor::ones_dtype((), dt, dev)?;
        for j in 0..n {
            // v_i = A[i, j] - Σ_k<j L[i, k] L[j, k], for every row i.
            let lj = l.narrow(1, j, 1)?.transpose(1, 2)?; // [count, n, 1]
            let v = m.narrow(2, j, 1)?.sub(&l.matmul(&lj)?)?; // [count, n, 1]
            let d = v.narrow(1, j, 1)?; // [count, 1, 1]
            let bad = d.le(0)?.logical_or(&d.isnan()?)?.reshape([count])?;
            let first = bad.logical_and(&failed.gt(n as i64)?)?;
            let order = Tensor::full_dtype((), (j + 1) as f64, DType::I64, dev)?;
            failed = order.where_(&first, &failed)?;
            let root = one.where_(&d.le(0)?, &d)?.sqrt()?;
            let below = rows.ge(j as i64)?.reshape([1, n, 1])?;
            let col = zero.where_(&below.logical_not()?, &v.div(&root)?)?;
            let is_j = rows.eq(j as i64)?.reshape([1, 1, n])?.to_dtype(dt)?;
            l = l.add(&col.mul(&is_j)?)?;
        }
        let worst = failed.amin(&[0], false)?.to_vec::<i64>()?.first().copied();
        let worst = worst.unwrap_or(n as i64 + 1);
        if check && worst <= n as i64 {
            return Err(Error::Invalid(format!(
                "linalg.cholesky: the factorization could not be completed because the input \
                 is not positive-definite (the leading minor of order {worst} is not \
                 positive-definite; shape {:?})",
                a.shape()
            )));
        }
        let zero_info = Tensor::zeros_dtype((), DType::I64, dev)?;
        let info = zero_info
            .where_(&failed.gt(n as i64)?, &failed)?
            .to_dtype(DType::I32)?
            .reshape(batch.clone())?;
        let mut shape = batch.clone();
        shape.extend([n, n]);
        Ok((l.reshape(shape)?, info))
    })?;
    let ls = Saved::new(&l);
    let l = record(l, "linalg_cholesky", &[a], move |g| {
        // torch's cholesky_backward: Linv = L^-1, phi = tril(Lᵀ g) with its diagonal
        // halved, gA = Linvᵀ phi Linv, symmetrised.
        let l = ls.get()?;
        let linv = super::inv(l)?;
        let phi = l.transpose(-2, -1)?.matmul(g)?.tril(0)?;
        let eye = Tensor::eye(n, l.device())?.to_dtype(l.dtype())?;
        let phi = phi.sub(&phi.mul(&eye)?.mul(0.5)?)?;
        let ga = linv.transpose(-2, -1)?.matmul(&phi)?.matmul(&linv)?;
        Ok(vec![Some(ga.add(&ga.transpose(-2, -1)?)?.mul(0.5)?)])
    });
    let l = if upper { l.transpose(-2, -1)? } else { l };
    Ok((l, info))
}

/// `B` solved against `A = L Lᵀ` (or `Uᵀ U` with `upper`) given A's Cholesky factor, as
/// torch's `torch.cholesky_solve(B, L, upper)`: two triangular solves, reading only the
/// factor's triangle. The gradients are torch's: `gB = cholesky_solve(g, L)`, and the
/// factor gets `-(C + Cᵀ) L` (or `-U (C + Cᵀ)`) with `C = gB Xᵀ`.
pub fn cholesky_solve(b: &Tensor, l: &Tensor, upper: bool) -> Result<Tensor> {
    if l.dtype() != b.dtype() {
        return Err(Error::Invalid(format!(
            "cholesky_solve: B and the factor need one dtype, got {} and {} (shapes {:?} and \
             {:?})",
            b.dtype(),
            l.dtype(),
            b.shape(),
            l.shape()
        )));
    }
    let x = autograd::no_grad(|| -> Result<Tensor> {
        let lt = l.transpose(-2, -1)?;
        // A = L Lᵀ: L y = b, Lᵀ x = y. A = Uᵀ U: Uᵀ y = b, U x = y.
        let (first, second) = if upper { (&lt, l) } else { (l, &lt) };
        let y = super::solve_triangular(first, b, false, true, false)?;
        super::solve_triangular(second, &y, true, true, false)
    })
    .map_err(|e| rename_solver(e, "cholesky_solve"))?;
    let (ls, xs) = (Saved::new(l), Saved::new(&x));
    Ok(record(x, "cholesky_solve", &[b, l], move |g| {
        let (l, x) = (ls.get()?, xs.get()?);
        let gb = cholesky_solve(g, l, upper)?;
        let c = gb.matmul(&x.transpose(-2, -1)?)?;
        let c = c.add(&c.transpose(-2, -1)?)?;
        let gl = if upper { l.matmul(&c)? } else { c.matmul(l)? };
        Ok(vec![Some(gb), Some(gl.neg()?)])
    }))
}

/// The inverse of `A = L Lᵀ` (or `Uᵀ U`) from its Cholesky factor, as torch's
/// `torch.cholesky_inverse(L, upper)`, with torch's gradient: the factor gets
/// `-(S L)` (or `-(U S)`) with `S = A⁻¹ (g + gᵀ) A⁻¹`.
pub fn cholesky_inverse(l: &Tensor, upper: bool) -> Result<Tensor> {
    let r = l.rank();
    if r < 2 || l.shape()[r - 1] != l.shape()[r - 2] {
        return Err(Error::BadShape(format!(
            "cholesky_inverse: the factor must be a square matrix or a batch of them, got shape \
             {:?}",
            l.shape()
        )));
    }
    let n = l.shape()[r - 1];
    let inv = autograd::no_grad(|| {
        let eye = Tensor::eye(n, l.device())?.to_dtype(l.dtype())?;
        cholesky_solve(&eye.broadcast_to(l.shape().to_vec())?, l, upper)
    })
    .map_err(|e| rename_solver(e, "cholesky_inverse"))?;
    let (ls, is) = (Saved::new(l), Saved::new(&inv));
    Ok(record(inv, "cholesky_inverse", &[l], move |g| {
        let (l, inv) = (ls.get()?, is.get()?);
        let s = inv.matmul(&g.add(&g.transpose(-2, -1)?)?)?.matmul(inv)?;
        let gl = if upper { l.matmul(&s)? } else { s.matmul(l)? };
        Ok(vec![Some(gl.neg()?)])
    }))
}

fn rename_solver(e: Error, op: &str) -> Error {
    match e {
        Error::Invalid(s) => Error::Invalid(s.replace("linalg.solve_triangular", op)),
        Error::BadShape(s) => Error::BadShape(s.replace("linalg.solve_triangular", op)),
        other => other,
    }
}

impl Tensor {
    /// `self` (B) solved against the matrix whose Cholesky factor is `l` (torch's
    /// `B.cholesky_solve(L, upper)`); see [`cholesky_solve`].
    pub fn cholesky_solve(&self, l: &Tensor, upper: bool) -> Result<Tensor> {
        cholesky_solve(self, l, upper)
    }

    /// The inverse of the matrix whose Cholesky factor is `self` (torch's
    /// `L.cholesky_inverse(upper)`); see [`cholesky_inverse`].
    pub fn cholesky_inverse(&self, upper: bool) -> Result<Tensor> {
        cholesky_inverse(self, upper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn the_factor_rebuilds_a_and_a_matrix_that_is_not_positive_definite_is_named() {
        let a = Tensor::from_vec(vec![4.0, 2.0, 2.0, 3.0], [2, 2], Device::Cpu).unwrap();
        let l = cholesky(&a, false).unwrap();
        let v = l.to_vec::<f64>().unwrap();
        assert_eq!((v[0], v[1], v[2]), (2.0, 0.0, 1.0));
        assert!((v[3] - 2f64.sqrt()).abs() < 1e-15, "{v:?}");
        let back = l.matmul(&l.t().unwrap()).unwrap().to_vec::<f64>().unwrap();
        for (b, w) in back.iter().zip([4.0, 2.0, 2.0, 3.0]) {
            assert!((b - w).abs() < 1e-15, "{back:?}");
        }
        let bad = Tensor::from_vec(vec![1.0, 2.0, 2.0, 1.0], [2, 2], Device::Cpu).unwrap();
        let e = cholesky(&bad, false).unwrap_err().to_string();
        assert!(
            e.contains("not positive-definite") && e.contains("order 2"),
            "{e}"
        );
        let ints = Tensor::from_vec(vec![1i64, 0, 0, 1], [2, 2], Device::Cpu).unwrap();
        assert!(cholesky(&ints, false)
            .unwrap_err()
            .to_string()
            .contains("float32"));
    }
}
