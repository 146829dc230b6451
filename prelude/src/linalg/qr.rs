//! torch.linalg's QR factorisation, `A = Q R`, by Householder reflections on the host in
//! float64 (`host::qr`, LAPACK's signs), with torch's backward for every mode it
//! differentiates; LAPACK's packed form of it (`geqrf`) and the product of its reflections
//! (`householder_product`, built from matrix products so that it has a gradient).

use super::factors::{Factors, HostBatch};
use super::host;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// `(Q, R)` with `A = Q R`, `Q` with orthonormal columns and `R` upper triangular (torch's
/// `torch.linalg.qr(A, mode)`), batched over leading dimensions, float32 or float64.
/// `mode` is torch's: `"reduced"` (`Q` is `m x k`, `R` `k x n`, `k = min(m, n)`),
/// `"complete"` (`Q` `m x m`, `R` `m x n`) or `"r"` (`R` alone; `Q` comes back empty, as
/// torch's). R's diagonal has LAPACK's signs (a reflection sends a column `x` to
/// `-sign(x_0) |x|`), so both factors are torch's. The gradient is torch's; as in torch,
/// mode `"r"` and a tall `"complete"` factorisation have none (backward is refused).
pub fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let (complete, want_q) = match mode {
        "reduced" => (false, true),
        "complete" => (true, true),
        "r" => (false, false),
        other => {
            return Err(Error::Invalid(format!(
                "linalg.qr: mode must be \"reduced\", \"complete\" or \"r\", got {other:?}"
            )))
        }
    };
    let host = HostBatch::read("qr", a, false)?;
    let (m, n) = (host.m, host.n);
    let c = if complete { m } else { m.min(n) };
    let mut factors = Factors::new(vec![vec![m, c], vec![c, n]]);
    for b in 0..host.count() {
        let (q, r) = host::qr(host.matrix(b), m, n, complete);
        factors.push(&[&q, &r]);
    }
    let out = factors.finish(&host, a, "linalg_qr", move |f, g| {
        if !want_q {
            return Err(Error::Invalid(
                "linalg.qr: the derivative depends on Q, which mode \"r\" does not compute; \
                 use mode \"reduced\" to differentiate through the QR factorisation"
                    .into(),
            ));
        }
        if complete && m > n {
            return Err(Error::Invalid(format!(
                "linalg.qr: the factorisation is not differentiable with mode \"complete\" \
                 when A has more rows than columns ({m} x {n}): Q's last {} columns are not \
                 determined by A",
                m - n
            )));
        }
        backward(&f[0], &f[1], &g[0], &g[1], m, n)
    })?;
    let (q, r) = (out[0].clone(), out[1].clone());
    if want_q {
        Ok((q, r))
    } else {
        Ok((Tensor::zeros_dtype([0], a.dtype(), a.device())?, r))
    }
}

/// torch's `linalg_qr_backward`, real case. With `G = gR Rᵀ - Qᵀ gQ`:
/// for `m >= n`, `gA = (Q copyltu(G) + gQ) R⁻ᵀ` where `copyltu` keeps G's upper triangle
/// and mirrors its strict part below; for `m < n`, `gA = [Q tril(Gᵀ - G) R₁⁻ᵀ, 0] + Q gR`
/// with `R₁` R's leading `m x m` block.
fn backward(
    q: &Tensor,
    r: &Tensor,
    gq: &Tensor,
    gr: &Tensor,
    m: usize,
    n: usize,
) -> Result<Tensor> {
    let g = gr
        .matmul(&r.transpose(-2, -1)?)?
        .sub(&q.transpose(-2, -1)?.matmul(gq)?)?;
    // X R⁻ᵀ for an upper-triangular R: the transpose of R⁻¹ Xᵀ.
    let right_solve = |x: &Tensor, r: &Tensor| -> Result<Tensor> {
        super::solve(r, &x.transpose(-2, -1)?)?.transpose(-2, -1)
    };
    if m >= n {
        let up = g.triu(0)?;
        let sym = up.add(&up.triu(1)?.transpose(-2, -1)?)?;
        right_solve(&q.matmul(&sym)?.add(gq)?, r)
    } else {
        let skew = g.transpose(-2, -1)?.sub(&g)?.tril(0)?;
        let r1 = r.narrow(-1, 0, m)?;
        let left = right_solve(&q.matmul(&skew)?, &r1)?;
        let mut zeros_shape = left.shape().to_vec();
        *zeros_shape.last_mut().expect("a matrix") = n - m;
        let zeros = Tensor::zeros_dtype(zeros_shape, left.dtype(), left.device())?;
        Tensor::cat(&[&left, &zeros], -1)?.add(&q.matmul(gr)?)
    }
}

/// LAPACK's packed QR of each matrix of `a` (torch's `torch.geqrf`): `(a2, tau)`, with R on
/// and above `a2`'s diagonal, the Householder vectors (their leading 1 left out) below it,
/// and their `min(m, n)` scales in `tau`, so that `householder_product(a2, tau)` is the
/// reduced Q. Float32 or float64; as in torch, it has no derivative (use [`qr`]).
pub fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let host = HostBatch::read("geqrf", a, false)?;
    let (m, n) = (host.m, host.n);
    let mut factors = Factors::new(vec![vec![m, n], vec![m.min(n)]]);
    for b in 0..host.count() {
        let (packed, tau) = host::geqrf(host.matrix(b), m, n);
        factors.push(&[&packed, &tau]);
    }
    let out = factors.finish(&host, a, "geqrf", |_, _| {
        Err(Error::Invalid(
            "the derivative of geqrf is not implemented (nor is it in torch); differentiate \
             through linalg.qr instead"
                .into(),
        ))
    })?;
    Ok((out[0].clone(), out[1].clone()))
}

/// The first `n` columns of the product of the Householder reflections `H_i = I - tau_i v_i
/// v_iᵀ` stored in `a` (`[.., m, n]`, `v_i` below the diagonal of column `i` with an
/// implicit 1 on it) and `tau` (`[.., k]`, `m >= n >= k`): torch's
/// `torch.linalg.householder_product` (LAPACK's `orgqr`), the Q of [`geqrf`]'s output.
/// Built from matrix products, one reflection at a time, so the gradient with respect to
/// both `a` and `tau` comes from theirs.
pub fn householder_product(a: &Tensor, tau: &Tensor) -> Result<Tensor> {
    let op = "linalg.householder_product";
    let r = a.rank();
    if r < 2 {
        return Err(Error::BadShape(format!(
            "{op}: A must have at least 2 dimensions, got shape {:?}",
            a.shape()
        )));
    }
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    let batch = &a.shape()[..r - 2];
    if tau.rank() != r - 1 || &tau.shape()[..r - 2] != batch {
        return Err(Error::BadShape(format!(
            "{op}: tau's batch dimensions must be A's, got shapes {:?} and {:?}",
            a.shape(),
            tau.shape()
        )));
    }
    let k = tau.shape()[r - 2];
    if m < n || n < k {
        return Err(Error::BadShape(format!(
            "{op}: needs rows >= columns >= reflections, got A of shape {:?} and tau of shape \
             {:?}",
            a.shape(),
            tau.shape()
        )));
    }
    if !matches!(a.dtype(), DType::F32 | DType::F64) || a.dtype() != tau.dtype() {
        return Err(Error::Invalid(format!(
            "{op}: A and tau need one dtype, float32 or float64, got {} and {}",
            a.dtype(),
            tau.dtype()
        )));
    }
    let (dev, dt) = (a.device(), a.dtype());
    // Row indices as a column, on A's device: each reflection's masks are comparisons with
    // it (no upload per reflection), as the eliminations in mod.rs and cholesky.rs build theirs.
    let rows = Tensor::arange(0i64, m as i64, dev)?.reshape([m, 1])?;
    let mut scale_shape = batch.to_vec();
    scale_shape.extend([1, 1]);
    // Y = E (the identity's first n columns, batched), then Y <- H_i Y from the last i.
    let eye = Tensor::eye(m, dev)?.to_dtype(dt)?.narrow(1, 0, n)?;
    let mut y = Tensor::zeros_dtype(a.shape().to_vec(), dt, dev)?.add(&eye)?;
    for i in (0..k).rev() {
        let below = rows.gt(i as i64)?.to_dtype(dt)?;
        let one = rows.eq(i as i64)?.to_dtype(dt)?;
        let v = a.narrow(-1, i, 1)?.mul(&below)?.add(&one)?;
        let t = tau.narrow(-1, i, 1)?.reshape(scale_shape.clone())?;
        let vty = v.transpose(-2, -1)?.matmul(&y)?;
        y = y.sub(&v.matmul(&vty)?.mul(&t)?)?;
    }
    Ok(y)
}

impl Tensor {
    /// LAPACK's packed QR (torch's `Tensor.geqrf`, [`geqrf`]).
    pub fn geqrf(&self) -> Result<(Tensor, Tensor)> {
        geqrf(self)
    }

    /// Q from [`geqrf`]'s packed form (torch's `Tensor.orgqr`,
    /// [`householder_product`]).
    pub fn orgqr(&self, tau: &Tensor) -> Result<Tensor> {
        householder_product(self, tau)
    }
}
