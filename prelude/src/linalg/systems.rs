//! torch.linalg's other linear systems: triangular ones (`solve_triangular`) and least
//! squares (`lstsq`), each built on the square solver or the pseudo-inverse with torch's
//! gradients.

use super::{broadcast_batch, pinv, solve};
use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

fn float_pair(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if !matches!(a.dtype(), DType::F32 | DType::F64) || a.dtype() != b.dtype() {
        return Err(Error::Invalid(format!(
            "linalg.{op}: A and B need one dtype, float32 or float64, got {} and {} (shapes \
             {:?} and {:?})",
            a.dtype(),
            b.dtype(),
            a.shape(),
            b.shape()
        )));
    }
    if a.rank() < 2 || b.rank() < 2 {
        return Err(Error::BadShape(format!(
            "linalg.{op}: A and B must be matrices or batches of them, got shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    Ok(())
}

/// The triangle of `a` a triangular solver reads: the upper or lower part, with ones on
/// the diagonal when `unit`.
fn triangle(a: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
    let off = i64::from(unit);
    let t = if upper { a.triu(off)? } else { a.tril(-off)? };
    if unit {
        let n = a.shape()[a.rank() - 1];
        t.add(&Tensor::eye(n, a.device())?.to_dtype(a.dtype())?)
    } else {
        Ok(t)
    }
}

/// The solution `X` of `A X = B` (or `X A = B` when `left` is false) for a triangular `A`
/// (torch's `torch.linalg.solve_triangular(A, B, upper=, left=, unitriangular=)`): only the
/// triangle `upper` names is read, and with `unitriangular` its diagonal is taken to be
/// ones. Batch dimensions broadcast; A and B are promoted to one dtype (torch's rule),
/// which must be float32 or float64. A zero on the diagonal is an
/// error (torch gives infinities there). The gradient is torch's: B gets the solve with
/// `Aᵀ`, A gets `-G_B Xᵀ` (or `-Xᵀ G_B`) cut to the triangle read.
pub fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> Result<Tensor> {
    // As torch: the two promoted to one dtype, which must be float32 or float64.
    let dt = a.result_type(b);
    let (a, b) = (&a.to_dtype(dt)?, &b.to_dtype(dt)?);
    float_pair("solve_triangular", a, b)?;
    let r = a.rank();
    let n = a.shape()[r - 1];
    let (rb, cb) = (b.shape()[b.rank() - 2], b.shape()[b.rank() - 1]);
    if a.shape()[r - 2] != n || (left && rb != n) || (!left && cb != n) {
        return Err(Error::BadShape(format!(
            "linalg.solve_triangular: A must be square and match B's {} ({}), got shapes {:?} \
             and {:?}",
            if left { "rows" } else { "columns" },
            if left { "A X = B" } else { "X A = B" },
            a.shape(),
            b.shape()
        )));
    }
    let x = autograd::no_grad(|| -> Result<Tensor> {
        let t = triangle(a, upper, unitriangular)?;
        let x = if left {
            solve(&t, b)
        } else {
            solve(&t.transpose(-2, -1)?, &b.transpose(-2, -1)?)?.transpose(-2, -1)
        };
        x.map_err(|e| match e {
            Error::Invalid(_) => Error::Invalid(format!(
                "linalg.solve_triangular: A has a zero on its diagonal, so the system has no \
                 unique solution (shapes {:?} and {:?})",
                a.shape(),
                b.shape()
            )),
            other => other,
        })
    })?;
    let (as_, xs) = (Saved::new(a), Saved::new(&x));
    Ok(record(x, "linalg_solve_triangular", &[a, b], move |g| {
        let (a, x) = (as_.get()?, xs.get()?);
        let at = a.transpose(-2, -1)?;
        let gb = solve_triangular(&at, g, !upper, left, unitriangular)?;
        let xt = x.transpose(-2, -1)?;
        let ga = if left {
            gb.matmul(&xt)?
        } else {
            xt.matmul(&gb)?
        }
        .neg()?;
        let off = i64::from(unitriangular);
        let ga = if upper { ga.triu(off)? } else { ga.tril(-off)? };
        Ok(vec![Some(ga), Some(gb)])
    }))
}

/// The least-squares solution of `A X ≈ B` (torch's `torch.linalg.lstsq(A, B, rcond,
/// driver=)`): `(solution, residuals, rank, singular_values)`. The solution is always the
/// minimum-norm one, `pinv(A) B` (singular values below `rcond` times the largest dropped;
/// `rcond` defaults to `eps * max(m, n)`). Which of the others are filled follows torch's
/// LAPACK drivers, each empty otherwise: `"gelsy"` (torch's default on the CPU) gives the
/// rank; `"gelsd"` and `"gelss"` the rank, the singular values and, for a tall (`m > n`)
/// `A` of full rank, the squared residual `‖A X - B‖²` of each column; `"gels"` (the only
/// one on CUDA, and the default there) the residuals of a tall `A`. `B` is `[.., m, k]`, or
/// `[.., m]` when it is 1-D or its shape is `A`'s without the last dimension; batch
/// dimensions broadcast. The gradients are torch's (through the pseudo-inverse, and
/// Danskin's for the residuals).
pub fn lstsq(
    a: &Tensor,
    b: &Tensor,
    rcond: Option<f64>,
    driver: Option<&str>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    if a.rank() < 2 {
        return Err(Error::BadShape(format!(
            "linalg.lstsq: A must be a matrix or a batch of them, got shape {:?}",
            a.shape()
        )));
    }
    let cuda = a.device().is_cuda();
    let driver = driver.unwrap_or(if cuda { "gels" } else { "gelsy" });
    let (rank_of, values, residual_of) = match driver {
        "gelsy" => (true, false, false),
        "gelsd" | "gelss" => (true, true, true),
        "gels" => (false, false, true),
        other => {
            return Err(Error::Invalid(format!(
                "linalg.lstsq: driver must be one of \"gels\", \"gelsy\", \"gelsd\" or \
                 \"gelss\", got {other:?}"
            )))
        }
    };
    if cuda && driver != "gels" {
        return Err(Error::Invalid(format!(
            "linalg.lstsq: driver {driver:?} is CPU-only, as torch's; on CUDA the driver is \"gels\""
        )));
    }
    let vector = b.rank() == 1 || b.shape() == &a.shape()[..a.rank() - 1];
    let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
    float_pair("lstsq", a, &bm)?;
    let (m, n) = (a.shape()[a.rank() - 2], a.shape()[a.rank() - 1]);
    if bm.shape()[bm.rank() - 2] != m {
        return Err(Error::BadShape(format!(
            "linalg.lstsq: B must have {m} rows to match A, got shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    broadcast_batch(&a.shape()[..a.rank() - 2], &bm.shape()[..bm.rank() - 2]).ok_or_else(|| {
        Error::BadShape(format!(
            "linalg.lstsq: the batch dimensions of A {:?} and B {:?} do not broadcast",
            a.shape(),
            b.shape()
        ))
    })?;
    let rtol = rcond.filter(|r| *r > 0.0);
    let renamed = |e: Error| match e {
        Error::Invalid(s) => Error::Invalid(s.replace("linalg.pinv", "linalg.lstsq")),
        other => other,
    };
    let x = pinv(a, None, rtol).map_err(renamed)?.matmul(&bm)?;
    let (dt, dev) = (a.dtype(), a.device());
    let empty = |dt| Tensor::zeros_dtype([0], dt, dev);
    let rank = super::matrix_rank(&a.detach(), None, rtol)?;
    let full_rank = !rank.lt(m.min(n) as i64)?.any()?.to_vec::<bool>()?[0];
    let residuals = if residual_of && m > n && (full_rank || driver == "gels") {
        let r = a.matmul(&x)?.sub(&bm)?;
        r.mul(&r)?.sum_dim(-2)?
    } else {
        empty(dt)?
    };
    let rank = if rank_of { rank } else { empty(DType::I64)? };
    let values = if values {
        super::svdvals(&a.detach())?
    } else {
        empty(dt)?
    };
    let x = if vector { x.squeeze(-1)? } else { x };
    Ok((x, residuals, rank, values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    fn m(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape.to_vec(), Device::Cpu).unwrap()
    }

    #[test]
    fn a_triangular_solve_reads_only_its_triangle() {
        // Upper [[2, 1], [99, 4]]: the 99 is not read.
        let a = m(vec![2.0, 1.0, 99.0, 4.0], &[2, 2]);
        let b = m(vec![4.0, 8.0], &[2, 1]);
        let x = solve_triangular(&a, &b, true, true, false).unwrap();
        assert_eq!(x.to_vec::<f64>().unwrap(), [1.0, 2.0]);
        // Unit lower, X A = B: [[1, 0], [99, 1]] read as lower with ones on the diagonal.
        let x = solve_triangular(&a, &m(vec![100.0, 1.0], &[1, 2]), false, false, true).unwrap();
        assert_eq!(x.to_vec::<f64>().unwrap(), [1.0, 1.0]);
        let zero = m(vec![0.0, 1.0, 0.0, 1.0], &[2, 2]);
        let e = solve_triangular(&zero, &b, true, true, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("zero on its diagonal"), "{e}");
        let e = solve_triangular(&a, &m(vec![1.0; 3], &[3, 1]), true, true, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[2, 2]") && e.contains("[3, 1]"), "{e}");
    }

    #[test]
    fn lstsq_fits_a_line_and_reports_residuals_and_rank() {
        // y = 1 + 2 t at t = 0, 1, 2, 3, with the last point off by 1.
        let a = m(vec![1.0, 0.0, 1.0, 1.0, 1.0, 2.0, 1.0, 3.0], &[4, 2]);
        let y = m(vec![1.0, 3.0, 5.0, 8.0], &[4]);
        let (x, res, rank, sv) = lstsq(&a, &y, None, Some("gelsd")).unwrap();
        let x = x.to_vec::<f64>().unwrap();
        assert!(
            (x[0] - 0.8).abs() < 1e-12 && (x[1] - 2.3).abs() < 1e-12,
            "{x:?}"
        );
        assert!((res.to_vec::<f64>().unwrap()[0] - 0.3).abs() < 1e-12);
        assert_eq!(rank.to_vec::<i64>().unwrap(), [2]);
        assert_eq!(sv.shape(), &[2]);
        // torch's CPU default, gelsy, gives the rank but no residuals.
        let (_, res, rank, _) = lstsq(&a, &y, None, None).unwrap();
        assert_eq!(
            (res.shape(), rank.to_vec::<i64>().unwrap()),
            (&[0][..], vec![2])
        );
        // A rank-deficient A: no residuals, the minimum-norm solution.
        let d = m(vec![1.0, 1.0, 1.0, 1.0], &[2, 2]);
        let (x, res, rank, _) = lstsq(&d, &m(vec![2.0, 2.0], &[2]), None, Some("gelsd")).unwrap();
        let x = x.to_vec::<f64>().unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] - 1.0).abs() < 1e-12,
            "{x:?}"
        );
        assert_eq!(
            (res.shape(), rank.to_vec::<i64>().unwrap()),
            (&[0][..], vec![1])
        );
        let e = lstsq(&a, &m(vec![1.0; 3], &[3]), None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("linalg.lstsq") && e.contains("4 rows"), "{e}");
    }
}
