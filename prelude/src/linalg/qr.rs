//! torch.linalg's QR factorisation, `A = Q R`, by Householder reflections on the host in
//! float64 (`host::qr`, LAPACK's signs), with torch's backward for every mode it
//! differentiates.

use super::factors::{Factors, HostBatch};
use super::host;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

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
