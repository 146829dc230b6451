//! Plain float64 loops for the factorisations that have no whole-tensor form worth having
//! (each step depends on the last through a rotation or a reflection built from one column):
//! Householder QR with LAPACK's sign convention, LU with LAPACK's pivots, cyclic Jacobi for symmetric eigenproblems
//! and one-sided (Hestenes) Jacobi for the SVD. Each takes one row-major matrix and gives
//! row-major factors; the callers in `qr.rs` and `spectral.rs` loop over the batch and move
//! the matrices between the device and the host. Jacobi is chosen because it is short and
//! accurate to the last digits at the sizes a notebook factorises, not for speed at
//! thousands of rows (LAPACK's and cuSOLVER's territory).

/// The most sweeps a Jacobi method makes; a matrix of notebook size converges in well under
/// twenty (the convergence is quadratic), so the cap only bounds work on hostile input.
const MAX_SWEEPS: usize = 100;

fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

/// The rotation (cos, sin) that zeroes the off-diagonal term of the symmetric 2 x 2 problem
/// `[[app, apq], [apq, aqq]]`: the smaller of the two angles, so nothing is reordered.
fn rotation(app: f64, aqq: f64, apq: f64) -> (f64, f64) {
    let theta = (aqq - app) / (2.0 * apq);
    let t = theta.signum() / (theta.abs() + theta.hypot(1.0));
    let c = 1.0 / t.hypot(1.0);
    (c, t * c)
}

/// Columns p and q of the row-major `m` (`cols` wide) rotated: p' = c p - s q, q' = s p + c q.
fn rotate_columns(m: &mut [f64], cols: usize, p: usize, q: usize, c: f64, s: f64) {
    // Only called with p < q < cols, so cols is never 0 here.
    for row in m.chunks_exact_mut(cols) {
        let (xp, xq) = (row[p], row[q]);
        row[p] = c * xp - s * xq;
        row[q] = s * xp + c * xq;
    }
}

/// One reflector per column: `v` (its entries from the diagonal down, `v[0] = 1`) and its
/// `tau` (0 where the column below the diagonal is already zero: no reflection).
type Reflectors = Vec<(Vec<f64>, f64)>;

/// The Householder reduction of the `m x n` matrix `a` to upper-triangular form, as
/// LAPACK's `dgeqrf` computes it (`dlarfg`'s signs): R (`m x n`, zero below the diagonal)
/// and the `min(m, n)` reflectors whose product `H_0 H_1 ...` is Q.
fn householder(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Reflectors) {
    let k = m.min(n);
    let mut r = a.to_vec();
    let mut reflectors: Reflectors = Vec::with_capacity(k);
    for j in 0..k {
        let alpha = r[j * n + j];
        let below = (j + 1..m).map(|i| r[i * n + j].powi(2)).sum::<f64>().sqrt();
        if below == 0.0 {
            reflectors.push((Vec::new(), 0.0));
            continue;
        }
        let beta = -alpha.hypot(below).copysign(alpha);
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        let mut v = vec![1.0; m - j];
        for i in j + 1..m {
            v[i - j] = r[i * n + j] * scale;
        }
        for c in j + 1..n {
            let w: f64 = (j..m).map(|i| v[i - j] * r[i * n + c]).sum();
            for i in j..m {
                r[i * n + c] -= tau * v[i - j] * w;
            }
        }
        r[j * n + j] = beta;
        for i in j + 1..m {
            r[i * n + j] = 0.0;
        }
        reflectors.push((v, tau));
    }
    (r, reflectors)
}

/// LAPACK's `dgeqrf` packed form of the `m x n` matrix `a`: R on and above the diagonal,
/// each reflector's `v` (without its leading 1) below it, and the `min(m, n)` taus.
pub(crate) fn geqrf(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut r, reflectors) = householder(a, m, n);
    let mut tau = Vec::with_capacity(reflectors.len());
    for (j, (v, t)) in reflectors.iter().enumerate() {
        for i in j + 1..m {
            // An empty v is no reflection: the column below the diagonal is zero already.
            r[i * n + j] = v.get(i - j).copied().unwrap_or(0.0);
        }
        tau.push(*t);
    }
    (r, tau)
}

/// The Householder QR of the `m x n` matrix `a`: `(q, r)` with `q` `m x c` (orthonormal
/// columns) and `r` `c x n` upper triangular, where `c` is `m` when `complete`, else
/// `min(m, n)`. The reflections follow LAPACK's `dlarfg` (`R[j][j] = -sign(x_0) |x|`, no
/// reflection where the column below the diagonal is already zero), so the factors are the
/// ones torch's `geqrf` gives, signs included.
pub(crate) fn qr(a: &[f64], m: usize, n: usize, complete: bool) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let (mut r, reflectors) = householder(a, m, n);
    let c = if complete { m } else { k };
    // Q = H_0 H_1 ... H_{k-1} applied to the first c columns of the identity, last first.
    let mut q = vec![0.0; m * c];
    for i in 0..c {
        q[i * c + i] = 1.0;
    }
    for (j, (v, tau)) in reflectors.iter().enumerate().rev() {
        if *tau == 0.0 {
            continue;
        }
        for col in 0..c {
            let w: f64 = (j..m).map(|i| v[i - j] * q[i * c + col]).sum();
            for i in j..m {
                q[i * c + col] -= tau * v[i - j] * w;
            }
        }
    }
    r.truncate(c * n);
    (q, r)
}

/// The LU factorisation with partial pivoting of the `m x n` matrix `a`, as LAPACK's
/// `getrf`: at step j the row holding the column's largest |value| at or below j (the first
/// of equals) is swapped up, then the column below the pivot is divided by it and the
/// trailing block updated. Gives the packed factor (L's strict lower part, U's upper part,
/// row-major `m x n`) and the 0-based row swapped in at each of the `min(m, n)` steps. A
/// zero pivot is left in place (the column below it is zero too), as LAPACK does.
pub(crate) fn lu(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<usize>) {
    let mut a = a.to_vec();
    let k = m.min(n);
    let mut pivots = Vec::with_capacity(k);
    for j in 0..k {
        let mut p = j;
        for i in j + 1..m {
            if a[i * n + j].abs() > a[p * n + j].abs() {
                p = i;
            }
        }
        pivots.push(p);
        if p != j {
            for c in 0..n {
                a.swap(j * n + c, p * n + c);
            }
        }
        let pivot = a[j * n + j];
        if pivot == 0.0 {
            continue;
        }
        for i in j + 1..m {
            let f = a[i * n + j] / pivot;
            a[i * n + j] = f;
            for c in j + 1..n {
                a[i * n + c] -= f * a[j * n + c];
            }
        }
    }
    (a, pivots)
}

/// The eigenvalues (ascending) and eigenvectors (the columns of the row-major `n x n`
/// result) of the symmetric `a`, by cyclic Jacobi rotations until a sweep finds every
/// off-diagonal term negligible beside its diagonal pair. Eigenvectors of a repeated
/// eigenvalue are some orthonormal basis of its space, as with any method.
pub(crate) fn eigh(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut a = a.to_vec();
    let mut v = identity(n);
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                let (app, aqq) = (a[p * n + p], a[q * n + q]);
                if apq == 0.0 || apq.abs() <= f64::EPSILON * 0.5 * (app * aqq).abs().sqrt() {
                    continue;
                }
                rotated = true;
                let (c, s) = rotation(app, aqq, apq);
                // A <- Jᵀ A J: columns p and q, then rows p and q.
                rotate_columns(&mut a, n, p, q, c, s);
                for col in 0..n {
                    let (xp, xq) = (a[p * n + col], a[q * n + col]);
                    a[p * n + col] = c * xp - s * xq;
                    a[q * n + col] = s * xp + c * xq;
                }
                rotate_columns(&mut v, n, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[i * n + i].total_cmp(&a[j * n + j]));
    let w = order.iter().map(|&i| a[i * n + i]).collect();
    (w, permute_columns(&v, n, &order))
}

fn permute_columns(m: &[f64], cols: usize, order: &[usize]) -> Vec<f64> {
    if cols == 0 {
        return Vec::new();
    }
    m.chunks_exact(cols)
        .flat_map(|row| order.iter().map(move |&j| row[j]))
        .collect()
}

fn transpose(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..cols)
        .flat_map(|j| (0..rows).map(move |i| m[i * cols + j]))
        .collect()
}

/// `u`'s columns (`m x c`, row-major) made a full orthonormal set where `keep[j]` is false:
/// each such column becomes the first unit vector e_i, in order, that is still independent
/// of the columns kept so far, orthogonalised against them twice (Gram-Schmidt, repeated so
/// that no digits are lost). The subspace such columns span is all that is defined; torch's
/// LAPACK picks another basis of it.
fn complete_basis(u: &mut [f64], m: usize, c: usize, keep: &[bool]) {
    let mut kept: Vec<usize> = (0..c).filter(|&j| keep[j]).collect();
    let mut candidate = 0;
    for j in (0..c).filter(|&j| !keep[j]) {
        while candidate < m {
            let mut x = vec![0.0; m];
            x[candidate] = 1.0;
            candidate += 1;
            for _ in 0..2 {
                for &k in &kept {
                    let dot: f64 = (0..m).map(|i| u[i * c + k] * x[i]).sum();
                    for (i, xi) in x.iter_mut().enumerate() {
                        *xi -= dot * u[i * c + k];
                    }
                }
            }
            let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            if norm > 0.5 {
                for (i, xi) in x.iter().enumerate() {
                    u[i * c + j] = xi / norm;
                }
                kept.push(j);
                break;
            }
        }
    }
}

/// The singular value decomposition of the `m x n` matrix `a`: `(u, s, vt)` with `s` the
/// `k = min(m, n)` singular values in descending order, `u` `m x k` (`m x m` when `full`)
/// and `vt` `k x n` (`n x n` when `full`), all row-major. One-sided Jacobi on the taller
/// orientation: columns are rotated in pairs until every pair is orthogonal to the last
/// digit; their norms are the singular values. Columns for a zero singular value, and the
/// extra ones of `full`, complete an orthonormal basis.
pub(crate) fn svd(a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if m < n {
        // Aᵀ = U' S V'ᵀ, so A = V' S U'ᵀ.
        let (u2, s, vt2) = svd(&transpose(a, m, n), n, m, full);
        let u_cols = if full { n } else { m };
        return (transpose(&vt2, m, m), s, transpose(&u2, n, u_cols));
    }
    let mut w = a.to_vec();
    let mut v = identity(n);
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for row in w.chunks_exact(n) {
                    alpha += row[p] * row[p];
                    beta += row[q] * row[q];
                    gamma += row[p] * row[q];
                }
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let (c, s) = rotation(alpha, beta, gamma);
                rotate_columns(&mut w, n, p, q, c, s);
                rotate_columns(&mut v, n, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| w.chunks_exact(n).map(|r| r[j] * r[j]).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| norms[j].total_cmp(&norms[i]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let c = if full { m } else { n };
    let mut u = vec![0.0; m * c];
    let mut keep = vec![false; c];
    for (col, &j) in order.iter().enumerate() {
        if s[col] > 0.0 {
            keep[col] = true;
            for i in 0..m {
                u[i * c + col] = w[i * n + j] / s[col];
            }
        }
    }
    complete_basis(&mut u, m, c, &keep);
    let vt = transpose(&permute_columns(&v, n, &order), n, n);
    (u, s, vt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    fn assert_close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol, "{a:?}\n{b:?}");
        }
    }

    fn orthonormal_columns(q: &[f64], m: usize, c: usize) {
        let qtq = matmul(&transpose(q, m, c), q, c, m, c);
        assert_close(&qtq, &identity(c), 1e-14);
    }

    /// A fixed matrix with no special structure.
    fn sample(m: usize, n: usize) -> Vec<f64> {
        (0..m * n)
            .map(|i| ((i * 7 + 3) % 11) as f64 - 4.5 + 0.1 * i as f64)
            .collect()
    }

    #[test]
    fn empty_matrices_factorise_to_empty_factors() {
        let (u, s, vt) = svd(&[], 3, 0, false);
        assert!(u.is_empty() && s.is_empty() && vt.is_empty());
        let (u, _, _) = svd(&[], 2, 0, true);
        assert_eq!(u, identity(2));
        assert_eq!(eigh(&[], 0), (vec![], vec![]));
        let (q, r) = qr(&[], 0, 3, false);
        assert!(q.is_empty() && r.is_empty());
        assert_eq!(lu(&[], 2, 0), (vec![], vec![]));
    }

    #[test]
    fn qr_rebuilds_a_with_lapacks_signs_in_every_shape() {
        for (m, n) in [(3, 3), (5, 3), (3, 5), (1, 4), (4, 1)] {
            let a = sample(m, n);
            let k = m.min(n);
            for complete in [false, true] {
                let (q, r) = qr(&a, m, n, complete);
                let c = if complete { m } else { k };
                orthonormal_columns(&q, m, c);
                assert_close(&matmul(&q, &r, m, c, n), &a, 1e-12);
                for i in 0..c {
                    for j in 0..i.min(n) {
                        assert_eq!(r[i * n + j], 0.0, "R below the diagonal");
                    }
                }
            }
        }
        // LAPACK's sign: the first column (3, 4) reflects to -5 e_1.
        let (q, r) = qr(&[3.0, 1.0, 4.0, 2.0], 2, 2, false);
        assert!(
            (r[0] + 5.0).abs() < 1e-15 && (q[0] + 0.6).abs() < 1e-15,
            "{r:?} {q:?}"
        );
    }

    #[test]
    fn eigh_diagonalises_a_symmetric_matrix_in_ascending_order() {
        let n = 4;
        let b = sample(n, n);
        let a: Vec<f64> = (0..n * n).map(|i| b[i] + b[(i % n) * n + i / n]).collect();
        let (w, v) = eigh(&a, n);
        assert!(w.windows(2).all(|p| p[0] <= p[1]), "{w:?}");
        orthonormal_columns(&v, n, n);
        let av = matmul(&a, &v, n, n, n);
        let vw: Vec<f64> = (0..n * n).map(|i| v[i] * w[i % n]).collect();
        assert_close(&av, &vw, 1e-12);
        // A repeated eigenvalue still gets an orthonormal basis.
        let (w, v) = eigh(&identity(3), 3);
        assert_eq!(w, [1.0; 3]);
        orthonormal_columns(&v, 3, 3);
    }

    #[test]
    fn svd_rebuilds_a_with_descending_values_and_completes_the_bases() {
        for (m, n) in [(3, 3), (5, 3), (3, 5), (1, 3), (4, 1)] {
            let a = sample(m, n);
            let k = m.min(n);
            for full in [false, true] {
                let (u, s, vt) = svd(&a, m, n, full);
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                assert!(s.windows(2).all(|p| p[0] >= p[1]), "{s:?}");
                orthonormal_columns(&u, m, uc);
                orthonormal_columns(&transpose(&vt, vr, n), n, vr);
                let us: Vec<f64> = (0..m * k)
                    .map(|i| u[(i / k) * uc + i % k] * s[i % k])
                    .collect();
                assert_close(&matmul(&us, &vt[..k * n], m, k, n), &a, 1e-12);
            }
        }
        // Rank one: the zero singular value's column is still a unit vector orthogonal to
        // the first.
        let (u, s, _) = svd(&[1.0, 2.0, 2.0, 4.0, 3.0, 6.0], 3, 2, false);
        assert!(
            (s[0] - 70f64.sqrt()).abs() < 1e-13 && s[1].abs() < 1e-13,
            "{s:?}"
        );
        orthonormal_columns(&u, 3, 2);
    }
}
