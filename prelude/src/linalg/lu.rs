//! torch.linalg's LU factorisation with partial pivoting, `A = P L U`: `lu_factor` (the
//! packed factor and LAPACK's 1-based pivots), `lu` (P, L and U apart) and `lu_solve`.
//! The elimination runs on the host in float64 (`host::lu`, LAPACK's `getrf` pivot rule);
//! the gradient is the derivative of `A = P L U` for square, tall and wide `A`, and
//! `lu_solve` is two triangular solves and a permutation, so its gradients come from those.

use super::factors::{eye_like, Factors, HostBatch};
use super::host;
use super::solve_triangular;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// `A`'s packed LU factor (recorded for autograd), its pivots (int32, 1-based) and the
/// permutation matrix P (A's dtype, no gradient).
struct Factored {
    lu: Tensor,
    pivots: Tensor,
    p: Tensor,
    /// Per matrix (int32): 0, or the 1-based step whose pivot is exactly zero, as LAPACK's.
    info: Tensor,
    /// The first matrix (row-major batch index) and step with a zero pivot, if any.
    first_zero: Option<(usize, usize)>,
}

fn factor(op: &str, a: &Tensor) -> Result<Factored> {
    let host = HostBatch::read(op, a, false)?;
    let (m, n) = (host.m, host.n);
    let k = m.min(n);
    let mut factors = Factors::new(vec![vec![m, n]]);
    let (mut pivots, mut perms, mut info) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_zero = None;
    for b in 0..host.count() {
        let (lu, piv) = host::lu(host.matrix(b), m, n);
        let zero = (0..k).find(|&j| lu[j * n + j] == 0.0);
        info.push(zero.map_or(0, |j| j as i32 + 1));
        if let (None, Some(j)) = (first_zero, zero) {
            first_zero = Some((b, j));
        }
        factors.push(&[&lu]);
        perms.extend(permutation_matrix(&piv, m));
        pivots.extend(piv.iter().map(|&p| p as i32 + 1));
    }
    let (dt, dev) = (a.dtype(), a.device());
    let mut shape = host.batch.clone();
    shape.push(k);
    let pivots = Tensor::from_vec(pivots, shape.clone(), Device::Cpu)?.to(dev)?;
    shape.pop();
    let info = Tensor::from_vec(info, shape.clone(), Device::Cpu)?.to(dev)?;
    shape.extend([m, m]);
    let p = Tensor::from_vec(perms, shape, Device::Cpu)?
        .to_dtype(dt)?
        .to(dev)?;
    let pb = p.clone();
    let lu = factors.finish(&host, a, "linalg_lu_factor", move |f, g| {
        backward(&pb, &f[0], &g[0], m, n)
    })?;
    Ok(Factored {
        lu: lu[0].clone(),
        pivots,
        p,
        info,
        first_zero,
    })
}

/// P with `A = P L U` for the row swaps `piv` (0-based, `piv[i]`: the row swapped with i at
/// step i), row-major `m x m`: `Pᵀ A` is A's rows in the swapped order.
fn permutation_matrix(piv: &[usize], m: usize) -> Vec<f64> {
    let mut order: Vec<usize> = (0..m).collect();
    for (i, &p) in piv.iter().enumerate() {
        order.swap(i, p);
    }
    let mut pm = vec![0.0; m * m];
    for (i, &r) in order.iter().enumerate() {
        pm[r * m + i] = 1.0;
    }
    pm
}

/// L (`m x k`, unit lower) and U (`k x n`, upper) out of the packed factor.
fn split(lu: &Tensor, m: usize, n: usize) -> Result<(Tensor, Tensor)> {
    let k = m.min(n);
    let l = lu.narrow(-1, 0, k)?.tril(-1)?;
    let eye = eye_like(m, lu)?.narrow(-1, 0, k)?;
    Ok((l.add(&eye)?, lu.narrow(-2, 0, k)?.triu(0)?))
}

/// The gradient through `A = P L U`, from the packed factor's gradient (its strict lower
/// part is L's, the rest U's). With `X = L⁻¹ Pᵀ dA U⁻¹` on the leading `k x k` block, L's
/// change is `L tril(X, -1)` and U's `triu(X) U`; the rows of a tall A below `k` and the
/// columns of a wide A beyond `k` follow from those. Adjoint:
/// square: `gA = P L⁻ᵀ φ U⁻ᵀ` with `φ = tril(Lᵀ gL, -1) + triu(gU Uᵀ)`;
/// tall: `φ -= triu(L₂ᵀ gL₂)`, and the bottom rows get `gL₂ U⁻ᵀ`;
/// wide: `φ -= tril(gU₂ U₂ᵀ, -1)`, and the right columns get `L⁻ᵀ gU₂`.
fn backward(p: &Tensor, lu: &Tensor, g: &Tensor, m: usize, n: usize) -> Result<Tensor> {
    let k = m.min(n);
    let t = |x: &Tensor| x.transpose(-2, -1);
    let (l, u) = split(lu, m, n)?;
    let (gl, gu) = (g.narrow(-1, 0, k)?.tril(-1)?, g.narrow(-2, 0, k)?.triu(0)?);
    let (l1, gl1) = (l.narrow(-2, 0, k)?, gl.narrow(-2, 0, k)?);
    let (u1, gu1) = (u.narrow(-1, 0, k)?, gu.narrow(-1, 0, k)?);
    let mut phi = t(&l1)?
        .matmul(&gl1)?
        .tril(-1)?
        .add(&gu1.matmul(&t(&u1)?)?.triu(0)?)?;
    if m > n {
        let (l2, gl2) = (l.narrow(-2, k, m - k)?, gl.narrow(-2, k, m - k)?);
        phi = phi.sub(&t(&l2)?.matmul(&gl2)?.triu(0)?)?;
    } else if n > m {
        let (u2, gu2) = (u.narrow(-1, k, n - k)?, gu.narrow(-1, k, n - k)?);
        phi = phi.sub(&gu2.matmul(&t(&u2)?)?.tril(-1)?)?;
    }
    // L₁⁻ᵀ φ U₁⁻ᵀ: L₁ᵀ is unit upper, U₁ᵀ lower.
    let left = solve_triangular(&t(&l1)?, &phi, true, true, true)?;
    let core = solve_triangular(&t(&u1)?, &left, false, false, false)?;
    let g_pa = if m > n {
        let gl2 = gl.narrow(-2, k, m - k)?;
        let bottom = solve_triangular(&t(&u1)?, &gl2, false, false, false)?;
        Tensor::cat(&[core, bottom], -2)?
    } else if n > m {
        let gu2 = gu.narrow(-1, k, n - k)?;
        let right = solve_triangular(&t(&l1)?, &gu2, true, true, true)?;
        Tensor::cat(&[core, right], -1)?
    } else {
        core
    };
    p.matmul(&g_pa)
}

/// The LU factorisation with partial pivoting, packed (torch's
/// `torch.linalg.lu_factor(A)`): `(LU, pivots)` with L's strict lower part and U's upper
/// part in one `m x n` matrix and `pivots` (int32, 1-based, `min(m, n)` of them, as
/// LAPACK's `getrf`): at step i, row i was swapped with row `pivots[i]`. Float32 or
/// float64, batched; any shape. As torch's, a zero on U's diagonal is an error (lu_solve
/// would divide by it); [`lu`] and [`lu_factor_ex`] factorise such a matrix anyway.
pub fn lu_factor(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let f = factor("lu_factor", a)?;
    if let Some((b, j)) = f.first_zero {
        let j1 = j + 1; // 1-based, as torch's message counts
        let which = if a.rank() > 2 {
            format!(" of matrix {b} of the batch")
        } else {
            String::new()
        };
        return Err(Error::Invalid(format!(
            "linalg.lu_factor: U[{j1},{j1}]{which} is zero, so lu_solve would divide by zero \
             (shape {:?}); linalg.lu or linalg.lu_factor_ex factorise it anyway",
            a.shape()
        )));
    }
    Ok((f.lu, f.pivots))
}

/// [`lu_factor`] without the check (torch's `torch.linalg.lu_factor_ex(A)`): `(LU, pivots,
/// info)`, `info` (int32, one per matrix) 0 or the 1-based step of the first zero pivot,
/// as LAPACK's.
pub fn lu_factor_ex(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let f = factor("lu_factor_ex", a)?;
    Ok((f.lu, f.pivots, f.info))
}

/// `(P, L, U)` with `A = P L U` (torch's `torch.linalg.lu(A)`): P a permutation matrix,
/// L `m x k` unit lower triangular, U `k x n` upper triangular, `k = min(m, n)`. The
/// gradient is the derivative of the factorisation for every shape, as torch's.
pub fn lu(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let f = factor("lu", a)?;
    let r = a.rank();
    let (l, u) = split(&f.lu, a.shape()[r - 2], a.shape()[r - 1])?;
    Ok((f.p, l, u))
}

/// The solution of `A X = B` from `A`'s `lu_factor` (torch's
/// `torch.linalg.lu_solve(LU, pivots, B, left=, adjoint=)`): with `adjoint`, of `Aᵀ X = B`;
/// with `left` false, of `X A = B` (or `X Aᵀ = B`). `A` must be square. The gradients, to
/// B and to the factor, are those of the triangular solves it is made of.
pub fn lu_solve(
    lu: &Tensor,
    pivots: &Tensor,
    b: &Tensor,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    let r = lu.rank();
    if r < 2 || lu.shape()[r - 1] != lu.shape()[r - 2] {
        return Err(Error::BadShape(format!(
            "linalg.lu_solve: LU must be a square matrix or a batch of them, got shape {:?}",
            lu.shape()
        )));
    }
    let n = lu.shape()[r - 1];
    if lu.dtype() != b.dtype() {
        return Err(Error::Invalid(format!(
            "linalg.lu_solve: LU and B need one dtype, got {} and {} (shapes {:?} and {:?})",
            lu.dtype(),
            b.dtype(),
            lu.shape(),
            b.shape()
        )));
    }
    if pivots.dtype() != DType::I32 || pivots.shape() != &lu.shape()[..r - 1] {
        return Err(Error::Invalid(format!(
            "linalg.lu_solve: pivots must be lu_factor's int32 tensor of shape {:?}, got {} of \
             shape {:?}",
            &lu.shape()[..r - 1],
            pivots.dtype(),
            pivots.shape()
        )));
    }
    let piv = pivots.to_vec::<i32>()?;
    let mut perms = Vec::with_capacity(piv.len() * n);
    for (b, chunk) in piv.chunks(n.max(1)).enumerate() {
        let mut zero_based = Vec::with_capacity(n);
        for &p in chunk {
            if p < 1 || p as usize > n {
                return Err(Error::Invalid(format!(
                    "linalg.lu_solve: pivot {p} of matrix {b} is outside 1..={n}"
                )));
            }
            zero_based.push(p as usize - 1);
        }
        perms.extend(permutation_matrix(&zero_based, n));
    }
    let mut shape = lu.shape()[..r - 2].to_vec();
    shape.extend([n, n]);
    let p = Tensor::from_vec(perms, shape, Device::Cpu)?
        .to_dtype(lu.dtype())?
        .to(lu.device())?;
    let t = |x: &Tensor| x.transpose(-2, -1);
    let tri = |a: &Tensor, b: &Tensor, upper: bool, left: bool, unit: bool| {
        solve_triangular(a, b, upper, left, unit)
    };
    match (left, adjoint) {
        // A = P L U: X = U⁻¹ L⁻¹ Pᵀ B.
        (true, false) => {
            let y = tri(lu, &t(&p)?.matmul(b)?, false, true, true)?;
            tri(lu, &y, true, true, false)
        }
        // Aᵀ = Uᵀ Lᵀ Pᵀ: X = P L⁻ᵀ U⁻ᵀ B.
        (true, true) => {
            let lut = t(lu)?;
            let y = tri(&lut, b, false, true, false)?;
            p.matmul(&tri(&lut, &y, true, true, true)?)
        }
        // X P L U = B: X = B U⁻¹ L⁻¹ Pᵀ.
        (false, false) => {
            let y = tri(lu, b, true, false, false)?;
            tri(lu, &y, false, false, true)?.matmul(&t(&p)?)
        }
        // X Uᵀ Lᵀ Pᵀ = B: X = B P L⁻ᵀ U⁻ᵀ.
        (false, true) => {
            let lut = t(lu)?;
            let y = tri(&lut, &b.matmul(&p)?, true, false, true)?;
            tri(&lut, &y, false, false, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape.to_vec(), Device::Cpu).unwrap()
    }

    fn close(a: &Tensor, b: &Tensor) {
        let (x, y) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
        assert_eq!(a.shape(), b.shape());
        for (p, q) in x.iter().zip(&y) {
            assert!((p - q).abs() < 1e-13, "{x:?} vs {y:?}");
        }
    }

    #[test]
    fn p_l_u_rebuild_a_and_the_pivots_are_lapacks() {
        // The largest first column entry is in row 2 (1-based 3), then row 3's.
        let a = m(vec![1.0, 2.0, 3.0, 2.0, 5.0, 1.0, 4.0, 1.0, 2.0], &[3, 3]);
        let (lu_, piv) = lu_factor(&a).unwrap();
        assert_eq!(piv.to_vec::<i32>().unwrap(), [3, 2, 3]);
        let (p, l, u) = lu(&a).unwrap();
        close(&p.matmul(&l).unwrap().matmul(&u).unwrap(), &a);
        assert_eq!(lu_.shape(), &[3, 3]);
        for shape in [[4, 2], [2, 4]] {
            let a = m(
                (0..8).map(|i| ((i * 5 + 1) % 7) as f64 - 3.0).collect(),
                &shape,
            );
            let (p, l, u) = lu(&a).unwrap();
            close(&p.matmul(&l).unwrap().matmul(&u).unwrap(), &a);
        }
        // lu_solve in all four forms against the square solver.
        let bm = m(vec![1.0, -2.0, 0.5, 3.0, 1.0, 2.0], &[3, 2]);
        let x = lu_solve(&lu_, &piv, &bm, true, false).unwrap();
        close(&a.matmul(&x).unwrap(), &bm);
        let x = lu_solve(&lu_, &piv, &bm, true, true).unwrap();
        close(&a.t().unwrap().matmul(&x).unwrap(), &bm);
        let bt = bm.t().unwrap();
        let x = lu_solve(&lu_, &piv, &bt, false, false).unwrap();
        close(&x.matmul(&a).unwrap(), &bt.contiguous().unwrap());
        let x = lu_solve(&lu_, &piv, &bt, false, true).unwrap();
        close(
            &x.matmul(&a.t().unwrap()).unwrap(),
            &bt.contiguous().unwrap(),
        );
        let bad = Tensor::from_vec(vec![0i32, 1, 1], [3], Device::Cpu).unwrap();
        let e = lu_solve(&lu_, &bad, &bm, true, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pivot 0"), "{e}");
    }
}
