//! torch.linalg's spectral functions: the symmetric eigendecomposition (`eigh`,
//! `eigvalsh`) and the singular value decomposition (`svd`, `svdvals`), both by Jacobi
//! rotations on the host in float64 (`host.rs`), with torch's backward formulas; and what
//! singular values give: `matrix_rank`, `pinv`, `cond` and the spectral and nuclear norms.

use super::factors::{all_zero, eye_like, Factors, HostBatch};
use super::host;
use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// `v` on the diagonal of a `[.., k, k]` matrix (torch's `diag_embed` of the last dimension).
fn diag_embed(v: &Tensor) -> Result<Tensor> {
    let k = v.shape()[v.rank() - 1];
    v.unsqueeze(-1)?.mul(&eye_like(k, v)?)
}

fn t(x: &Tensor) -> Result<Tensor> {
    x.transpose(-2, -1)
}

/// The eigenvalues (ascending) and orthonormal eigenvectors (the columns of `V`) of a real
/// symmetric matrix or of each in a batch (torch's `torch.linalg.eigh(A, UPLO)`): only the
/// triangle `uplo` names (`"L"`, torch's default, or `"U"`) is read, the other taken as its
/// mirror. Float32 or float64. An eigenvector's sign, and the basis of a repeated
/// eigenvalue's space, are not determined by `A`, and torch's LAPACK may choose another;
/// the gradient is torch's, and a loss must not depend on those choices (as in torch).
pub fn eigh(a: &Tensor, uplo: &str) -> Result<(Tensor, Tensor)> {
    let lower = match uplo {
        "L" => true,
        "U" => false,
        other => {
            return Err(Error::Invalid(format!(
                "linalg.eigh: UPLO must be \"L\" or \"U\", got {other:?}"
            )))
        }
    };
    let host = HostBatch::read("eigh", a, true)?;
    let n = host.n;
    if host.m != n {
        return Err(Error::BadShape(format!(
            "linalg.eigh: A must be a square matrix or a batch of them, got shape {:?}",
            a.shape()
        )));
    }
    let mut factors = Factors::new(vec![vec![n], vec![n, n]]);
    for b in 0..host.count() {
        let m = host.matrix(b);
        let sym: Vec<f64> = (0..n * n)
            .map(|idx| {
                let (i, j) = (idx / n, idx % n);
                let (r, c) = if (i >= j) == lower { (i, j) } else { (j, i) };
                m[r * n + c]
            })
            .collect();
        let (w, v) = host::eigh(&sym, n);
        factors.push(&[&w, &v]);
    }
    let out = factors.finish(&host, a, "linalg_eigh", |f, g| {
        eigh_backward(&f[0], &f[1], &g[0], &g[1])
    })?;
    Ok((out[0].clone(), out[1].clone()))
}

/// torch's `linalg_eig_backward` for a symmetric `A`: `gA = V (diag(gL) + skew(Vᵀ gV) / E)
/// Vᵀ` with `skew(X) = (X - Xᵀ) / 2` and `E_ij = L_j - L_i`; `V diag(gL) Vᵀ` when the
/// eigenvectors took no part in the loss (finite even for repeated eigenvalues).
fn eigh_backward(l: &Tensor, v: &Tensor, gl: &Tensor, gv: &Tensor) -> Result<Tensor> {
    if all_zero(gv)? {
        return v.mul(&gl.unsqueeze(-2)?)?.matmul(&t(v)?);
    }
    let n = l.shape()[l.rank() - 1];
    let x = t(v)?.matmul(gv)?;
    let skew = x.sub(&t(&x)?)?.mul(0.5)?;
    let e = l
        .unsqueeze(-2)?
        .sub(&l.unsqueeze(-1)?)?
        .add(&eye_like(n, l)?)?;
    let inner = skew.div(&e)?.add(&diag_embed(gl)?)?;
    v.matmul(&inner)?.matmul(&t(v)?)
}

/// The eigenvalues of a symmetric matrix, ascending (torch's `torch.linalg.eigvalsh`); see
/// [`eigh`]. Their gradient `V diag(gL) Vᵀ` is defined even where eigenvalues repeat.
pub fn eigvalsh(a: &Tensor, uplo: &str) -> Result<Tensor> {
    Ok(eigh(a, uplo).map_err(|e| rename(e, "eigh", "eigvalsh"))?.0)
}

fn rename(e: Error, from: &str, to: &str) -> Error {
    let swap = |s: String| s.replace(&format!("linalg.{from}:"), &format!("linalg.{to}:"));
    match e {
        Error::Invalid(s) => Error::Invalid(swap(s)),
        Error::BadShape(s) => Error::BadShape(swap(s)),
        other => other,
    }
}

/// `(U, S, Vh)` with `A = U diag(S) Vh` (torch's `torch.linalg.svd(A, full_matrices)`):
/// `S` the `k = min(m, n)` singular values in descending order; `U` `m x k` and `Vh`
/// `k x n`, or `m x m` and `n x n` with `full_matrices` (torch's default is `true`).
/// Batched, float32 or float64. Each pair of singular vectors is determined only up to a
/// common sign (and a repeated singular value's only up to a rotation), which torch's LAPACK
/// may choose otherwise. The gradient is torch's `svd_backward`: it ignores the columns
/// beyond `k` that `full_matrices` adds, and needs distinct (and, for a non-square `A`,
/// non-zero) singular values where `U` or `Vh` enter the loss.
pub fn svd(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let host = HostBatch::read("svd", a, true)?;
    let (m, n) = (host.m, host.n);
    let k = m.min(n);
    let (uc, vr) = if full_matrices { (m, n) } else { (k, k) };
    let mut factors = Factors::new(vec![vec![m, uc], vec![k], vec![vr, n]]);
    for b in 0..host.count() {
        let (u, s, vt) = host::svd(host.matrix(b), m, n, full_matrices);
        factors.push(&[&u, &s, &vt]);
    }
    let out = factors.finish(&host, a, "linalg_svd", move |f, g| {
        let (u, vh) = (f[0].narrow(-1, 0, k)?, f[2].narrow(-2, 0, k)?);
        let (gu, gvh) = (g[0].narrow(-1, 0, k)?, g[2].narrow(-2, 0, k)?);
        svd_backward(&u, &f[1], &vh, &gu, &g[1], &gvh, m, n)
    })?;
    Ok((out[0].clone(), out[1].clone(), out[2].clone()))
}

/// torch's `svd_backward`, real case, on the reduced factors. With `skew(X) = X - Xᵀ` and
/// `E_ij = S_j² - S_i²`: `J = (skew(Uᵀ gU) S + S skew(Vh gVhᵀ)) / E + diag(gS)`, and
/// `gA = U J Vh`, plus `(I - U Uᵀ) gU S⁻¹ Vh` for a tall `A` and `U S⁻¹ gVh (I - Vhᵀ Vh)`
/// for a wide one. When only `S` entered the loss, `U diag(gS) Vh`.
#[allow(clippy::too_many_arguments)]
fn svd_backward(
    u: &Tensor,
    s: &Tensor,
    vh: &Tensor,
    gu: &Tensor,
    gs: &Tensor,
    gvh: &Tensor,
    m: usize,
    n: usize,
) -> Result<Tensor> {
    let (u_used, vh_used) = (!all_zero(gu)?, !all_zero(gvh)?);
    if !u_used && !vh_used {
        return u.mul(&gs.unsqueeze(-2)?)?.matmul(vh);
    }
    let k = s.shape()[s.rank() - 1];
    let skew = |x: Tensor| -> Result<Tensor> { x.sub(&t(&x)?) };
    let s2 = s.mul(s)?;
    let e = s2
        .unsqueeze(-2)?
        .sub(&s2.unsqueeze(-1)?)?
        .add(&eye_like(k, s)?)?;
    let mut num = Tensor::zeros_dtype(e.shape().to_vec(), e.dtype(), e.device())?;
    if u_used {
        num = num.add(&skew(t(u)?.matmul(gu)?)?.mul(&s.unsqueeze(-2)?)?)?;
    }
    if vh_used {
        num = num.add(&s.unsqueeze(-1)?.mul(&skew(vh.matmul(&t(gvh)?)?)?)?)?;
    }
    let j = num.div(&e)?.add(&diag_embed(gs)?)?;
    if m > n && u_used {
        let gus = gu.div(&s.unsqueeze(-2)?)?;
        let outside = gus.sub(&u.matmul(&t(u)?.matmul(&gus)?)?)?;
        u.matmul(&j)?.add(&outside)?.matmul(vh)
    } else if m < n && vh_used {
        let sgvh = gvh.div(&s.unsqueeze(-1)?)?;
        let outside = sgvh.sub(&sgvh.matmul(&t(vh)?)?.matmul(vh)?)?;
        u.matmul(&j.matmul(vh)?.add(&outside)?)
    } else {
        u.matmul(&j)?.matmul(vh)
    }
}

/// The singular values, descending (torch's `torch.linalg.svdvals`); see [`svd`]. Their
/// gradient `U diag(gS) Vh` is defined everywhere the values are distinct or not.
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    Ok(svd(a, false).map_err(|e| rename(e, "svd", "svdvals"))?.1)
}

/// The machine epsilon of a float dtype (torch's `finfo(dtype).eps`).
fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        _ => f32::EPSILON as f64,
    }
}

/// The cut below which a singular value counts as zero, per matrix (`[.., 1]`), as torch's
/// `matrix_rank` and `pinv` set it: `max(atol, rtol * S_max)`, where a missing `rtol` is
/// `eps * max(m, n)` when `atol` is missing too and 0 otherwise.
fn cutoff(s: &Tensor, a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    let r = a.rank();
    let size = a.shape()[r - 2].max(a.shape()[r - 1]) as f64;
    let rtol = rtol.unwrap_or(if atol.is_none() {
        eps(a.dtype()) * size
    } else {
        0.0
    });
    let top = if s.shape()[s.rank() - 1] == 0 {
        s.sum_keepdim(-1)?
    } else {
        s.narrow(-1, 0, 1)?
    };
    top.mul(rtol)?.clamp_min(atol.unwrap_or(0.0))
}

/// The number of singular values above the cut of [`cutoff`] (torch's
/// `torch.linalg.matrix_rank(A, atol=, rtol=)`), as int64, per matrix.
pub fn matrix_rank(a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    let s = svdvals(a)
        .map_err(|e| rename(e, "svdvals", "matrix_rank"))?
        .detach();
    let cut = cutoff(&s, a, atol, rtol)?;
    s.gt(&cut)?.sum_dim(-1)
}

/// The Moore-Penrose pseudo-inverse (torch's `torch.linalg.pinv(A, atol=, rtol=)`):
/// `V diag(1/S) Uᵀ` over the singular values above [`cutoff`]'s cut, the others dropped.
/// `n x m` for an `m x n` `A`, batched. The gradient is torch's (Golub and Pereyra's
/// derivative of `X = A⁺`: `-Xᵀ G Xᵀ + (I - A X) Gᵀ X Xᵀ + Xᵀ X Gᵀ (I - X A)`), which
/// holds wherever the rank does not change, rank-deficient matrices included.
pub fn pinv(a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    let x = autograd::no_grad(|| -> Result<Tensor> {
        let (u, s, vh) = svd(a, false).map_err(|e| rename(e, "svd", "pinv"))?;
        let keep = s.gt(&cutoff(&s, a, atol, rtol)?)?;
        // 1/S only where kept, computed on a safe value so no infinity appears.
        let one = Tensor::ones_dtype((), s.dtype(), s.device())?;
        let zero = Tensor::zeros_dtype((), s.dtype(), s.device())?;
        let inv = s.where_(&keep, &one)?.reciprocal()?.where_(&keep, &zero)?;
        t(&vh)?.mul(&inv.unsqueeze(-2)?)?.matmul(&t(&u)?)
    })?;
    let (as_, xs) = (Saved::new(a), Saved::new(&x));
    Ok(record(x, "linalg_pinv", &[a], move |g| {
        let (a, x) = (as_.get()?, xs.get()?);
        let (xt, gt) = (t(x)?, t(g)?);
        let (m, n) = (a.shape()[a.rank() - 2], a.shape()[a.rank() - 1]);
        let left = eye_like(m, a)?.sub(&a.matmul(x)?)?; // I - A X, m x m
        let right = eye_like(n, a)?.sub(&x.matmul(a)?)?; // I - X A, n x n
        let ga = xt.matmul(g)?.matmul(&xt)?.neg()?;
        let ga = ga.add(&left.matmul(&gt)?.matmul(x)?.matmul(&xt)?)?;
        Ok(vec![Some(
            ga.add(&xt.matmul(x)?.matmul(&gt)?.matmul(&right)?)?,
        )])
    }))
}

/// The condition number in the norm `p` (torch's `torch.linalg.cond(A, p)`): for `"2"`
/// (torch's default) and `"-2"`, the ratio of the extreme singular values, any shape; for
/// `"fro"`, `"nuc"`, `"1"`, `"-1"`, `"inf"` and `"-inf"`, `‖A‖ ‖A⁻¹‖` of a square `A`.
pub fn cond(a: &Tensor, p: &str) -> Result<Tensor> {
    match p {
        "2" | "-2" => {
            let s = svdvals(a).map_err(|e| rename(e, "svdvals", "cond"))?;
            let k = s.shape()[s.rank() - 1];
            if k == 0 {
                return Err(Error::BadShape(format!(
                    "linalg.cond: A has no singular values (shape {:?})",
                    a.shape()
                )));
            }
            let (big, small) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k - 1, 1)?);
            let ratio = if p == "2" {
                big.div(&small)?
            } else {
                small.div(&big)?
            };
            ratio.squeeze(-1)
        }
        _ => {
            let norm = super::matrix_norm(a, p, false)?;
            let inv = super::inv(a).map_err(|e| rename(e, "inv", "cond"))?;
            norm.mul(&super::matrix_norm(&inv, p, false)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    fn m(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape.to_vec(), Device::Cpu).unwrap()
    }

    fn close(a: &Tensor, b: &[f64], tol: f64) {
        let v = a.to_vec::<f64>().unwrap();
        assert_eq!(v.len(), b.len(), "{v:?} vs {b:?}");
        for (x, y) in v.iter().zip(b) {
            assert!((x - y).abs() <= tol, "{v:?} vs {b:?}");
        }
    }

    #[test]
    fn eigh_reads_one_triangle_and_refuses_what_is_not_square_or_finite() {
        // Only the lower triangle counts: [[2, 1], [1, 2]] has eigenvalues 1 and 3.
        let a = m(vec![2.0, 99.0, 1.0, 2.0], &[2, 2]);
        let (l, v) = eigh(&a, "L").unwrap();
        close(&l, &[1.0, 3.0], 1e-15);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        close(&v.abs().unwrap(), &[h; 4], 1e-15);
        close(&eigvalsh(&a, "U").unwrap(), &[-97.0, 101.0], 1e-13);
        let e = eigh(&m(vec![1.0; 6], &[2, 3]), "L")
            .unwrap_err()
            .to_string();
        assert!(e.contains("square") && e.contains("[2, 3]"), "{e}");
        let e = eigvalsh(&m(vec![f64::NAN, 0.0, 0.0, 1.0], &[2, 2]), "L")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("linalg.eigvalsh:") && e.contains("NaN"),
            "{e}"
        );
        assert!(eigh(&a, "X").is_err());
    }

    #[test]
    fn svd_gives_the_norms_rank_pseudo_inverse_and_condition_number() {
        // diag(3, 2) padded with a zero row: singular values 3 and 2.
        let a = m(vec![0.0, 2.0, 3.0, 0.0, 0.0, 0.0], &[3, 2]);
        close(&svdvals(&a).unwrap(), &[3.0, 2.0], 1e-15);
        let (u, s, vh) = svd(&a, true).unwrap();
        assert_eq!(
            (u.shape(), s.shape(), vh.shape()),
            (&[3, 3][..], &[2][..], &[2, 2][..])
        );
        close(
            &super::super::matrix_norm(&a, "2", false).unwrap(),
            &[3.0],
            1e-15,
        );
        close(
            &super::super::matrix_norm(&a, "-2", false).unwrap(),
            &[2.0],
            1e-15,
        );
        close(
            &super::super::matrix_norm(&a, "nuc", false).unwrap(),
            &[5.0],
            1e-15,
        );
        close(&cond(&a, "2").unwrap(), &[1.5], 1e-15);
        assert_eq!(
            matrix_rank(&a, None, None)
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            [2]
        );
        assert_eq!(
            matrix_rank(&a, Some(2.5), None)
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            [1]
        );
        close(
            &pinv(&a, None, None).unwrap(),
            &[0.0, 1.0 / 3.0, 0.0, 0.5, 0.0, 0.0],
            1e-15,
        );
        // A rank-one matrix: pinv drops the zero singular value instead of dividing by it.
        let r1 = m(vec![1.0, 2.0, 2.0, 4.0], &[2, 2]);
        assert_eq!(
            matrix_rank(&r1, None, None)
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            [1]
        );
        let p = pinv(&r1, None, None).unwrap();
        close(&p, &[0.04, 0.08, 0.08, 0.16], 1e-15);
        let ints = Tensor::from_vec(vec![1i64, 0, 0, 1], [2, 2], Device::Cpu).unwrap();
        let e = svd(&ints, false).unwrap_err().to_string();
        assert!(e.contains("linalg.svd") && e.contains("int64"), "{e}");
    }

    #[test]
    fn gradients_of_values_alone_survive_repeated_values() {
        // The identity: every eigenvalue (and singular value) repeats, so only the
        // values-alone formulas stay finite; d(sum L)/dA = I, d(sum S)/dA = U Vh = I.
        let a = Tensor::eye(3, Device::Cpu)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        eigvalsh(&a, "L")
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        let eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        close(&a.grad().unwrap(), &eye, 1e-15);
        a.zero_grad();
        svdvals(&a).unwrap().sum().unwrap().backward().unwrap();
        close(&a.grad().unwrap(), &eye, 1e-15);
    }
}
