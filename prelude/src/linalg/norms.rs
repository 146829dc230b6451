//! torch.linalg's norms: `vector_norm` (any order, over any dimensions) with torch's
//! backward rule, and `matrix_norm` for the orders that need no singular values, composed
//! as torch composes them.

use crate::autograd::{self, record, Saved};
use crate::error::{Error, Result};
use crate::tensor::shape::resolve_dim;
use crate::tensor::{DType, Tensor};

/// The reduced dimensions of a rank-`rank` tensor (all of them for None or an empty list),
/// sorted, each once.
fn reduced_dims(op: &str, dim: Option<&[isize]>, rank: usize) -> Result<Vec<usize>> {
    let dims = match dim {
        None | Some([]) => (0..rank).collect::<Vec<_>>(),
        Some(ds) => {
            let mut out = Vec::with_capacity(ds.len());
            for &d in ds {
                let r = resolve_dim(d, rank.max(1))?;
                if out.contains(&r) {
                    return Err(Error::Invalid(format!(
                        "linalg.{op}: dim {d} appears more than once in {ds:?}"
                    )));
                }
                out.push(r);
            }
            out.sort_unstable();
            out
        }
    };
    Ok(dims)
}

/// `t` with the `reduced` dimensions moved last and merged into one: `[kept.., r]`.
fn gather_reduced(t: &Tensor, reduced: &[usize]) -> Result<Tensor> {
    let rank = t.rank();
    let kept: Vec<usize> = (0..rank).filter(|d| !reduced.contains(d)).collect();
    let perm: Vec<isize> = kept.iter().chain(reduced).map(|&d| d as isize).collect();
    let mut shape: Vec<usize> = kept.iter().map(|&d| t.shape()[d]).collect();
    shape.push(reduced.iter().map(|&d| t.shape()[d]).product());
    t.permute(&perm)?.reshape(shape)
}

/// The p-norm of `x` over `dim` (all dimensions for None), as torch's
/// `torch.linalg.vector_norm(x, ord, dim, keepdim)`: `ord` is any real number or ±infinity
/// (`f64::INFINITY`: the largest |x|, `-inf` the smallest, 0 the count of non-zeros, a
/// negative one `(Σ |x|^ord)^(1/ord)`). Float tensors only, as torch; float16 and bfloat16
/// are computed in float32 and rounded once. The gradient is torch's (0 where the norm is
/// 0; the infinity norms share it between tied elements; none at all for ord 0).
pub fn vector_norm(x: &Tensor, ord: f64, dim: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::Invalid(format!(
            "linalg.vector_norm: needs a floating-point tensor, as torch's, got {} (shape {:?}); \
             convert first with .to_dtype(DType::F32)",
            x.dtype(),
            x.shape()
        )));
    }
    if ord.is_nan() {
        return Err(Error::Invalid("linalg.vector_norm: ord is NaN".into()));
    }
    if matches!(x.dtype(), DType::F16 | DType::BF16) {
        let y = vector_norm(&x.to_dtype(DType::F32)?, ord, dim, keepdim)?;
        return y.to_dtype(x.dtype());
    }
    let x0 = if x.rank() == 0 {
        x.reshape([1])?
    } else {
        x.clone()
    };
    let reduced = reduced_dims("vector_norm", dim, x0.rank())?;
    if x0.numel() == 0 && ord.is_infinite() {
        return Err(Error::Invalid(format!(
            "linalg.vector_norm: the {ord} norm of an empty tensor (shape {:?}) is undefined, as \
             in torch (its reduction has no identity)",
            x.shape()
        )));
    }
    // The output's shape with the reduced dimensions kept as 1, for keepdim and backward.
    let mut kept_shape = x0.shape().to_vec();
    for &d in &reduced {
        kept_shape[d] = 1;
    }
    let out_shape: Vec<usize> = if keepdim {
        kept_shape.clone()
    } else if x.rank() == 0 {
        vec![]
    } else {
        (0..x0.rank())
            .filter(|d| !reduced.contains(d))
            .map(|d| x0.shape()[d])
            .collect()
    };
    let out = autograd::no_grad(|| {
        let a = gather_reduced(&x0, &reduced)?.abs()?;
        let n = if ord == 0.0 {
            a.ne(0)?.to_dtype(a.dtype())?.sum_dim(-1)?
        } else if ord == 1.0 {
            a.sum_dim(-1)?
        } else if ord == 2.0 {
            a.square()?.sum_dim(-1)?.sqrt()?
        } else if ord == f64::INFINITY {
            a.amax(&[-1], false)?
        } else if ord == f64::NEG_INFINITY {
            a.amin(&[-1], false)?
        } else {
            a.pow(ord)?.sum_dim(-1)?.pow(1.0 / ord)?
        };
        n.reshape(out_shape)
    })?;
    let (xs, ns) = (Saved::new(&x0), Saved::new(&out));
    let (in_shape, red) = (x.shape().to_vec(), reduced);
    Ok(record(out, "norm", &[x], move |g| {
        let (x, norm) = (xs.get()?, ns.get()?.reshape(kept_shape.clone())?);
        let g = g.reshape(kept_shape.clone())?;
        let zero = Tensor::zeros_dtype((), x.dtype(), x.device())?;
        let p = ord;
        if p == 0.0 {
            // A count: torch gives the input no gradient at all (not zeros).
            return Ok(vec![None]);
        }
        let gx = if p == 1.0 {
            x.sgn()?.mul(&g)?
        } else if p == 2.0 {
            x.mul(&zero.where_(&norm.eq(0)?, &g.div(&norm)?)?)?
        } else if p.is_infinite() {
            let a = x.abs()?;
            let mask = a.eq(&norm)?.logical_or(&a.isnan()?)?.to_dtype(x.dtype())?;
            let count = gather_reduced(&mask, &red)?
                .sum_dim(-1)?
                .reshape(kept_shape.clone())?;
            x.sgn()?.mul(&g.div(&count)?.mul(&mask)?)?
        } else if p < 1.0 {
            let scaled = zero.where_(&x.eq(0)?, &x.abs()?.pow(p - 1.0)?)?;
            x.sgn()?.mul(&scaled)?.mul(&g)?.mul(&norm.pow(1.0 - p)?)?
        } else {
            let scaled = if p < 2.0 {
                x.sgn()?.mul(&x.abs()?.pow(p - 1.0)?)?
            } else {
                x.mul(&x.abs()?.pow(p - 2.0)?)?
            };
            let scale = zero.where_(&norm.eq(0)?, &g.div(&norm.pow(p - 1.0)?)?)?;
            scaled.mul(&scale)?
        };
        Ok(vec![Some(gx.reshape(in_shape.clone())?)])
    }))
}

/// The norm of a matrix or of each in a batch over its last two dimensions (torch's
/// `torch.linalg.matrix_norm(A, ord)`): `"fro"` (Frobenius), `"1"` / `"-1"` (the largest
/// / smallest column sum of |A|), `"inf"` / `"-inf"` (the same over rows), `"2"` / `"-2"`
/// (the largest / smallest singular value) and `"nuc"` (their sum; the singular values come
/// from [`svdvals`](super::svdvals), float32 and float64 only). Float tensors only.
pub fn matrix_norm(a: &Tensor, ord: &str, keepdim: bool) -> Result<Tensor> {
    if a.rank() < 2 {
        return Err(Error::BadShape(format!(
            "linalg.matrix_norm: A must have at least 2 dimensions, got shape {:?}",
            a.shape()
        )));
    }
    if !a.dtype().is_float() {
        return Err(Error::Invalid(format!(
            "linalg.matrix_norm: needs a floating-point tensor, as torch's, got {} (shape {:?})",
            a.dtype(),
            a.shape()
        )));
    }
    // (dimension summed, dimension then maximised or minimised, max?)
    let (sum_dim, ext_dim, max) = match ord {
        "fro" => return vector_norm(a, 2.0, Some(&[-2, -1]), keepdim),
        "1" => (-2, -1, true),
        "-1" => (-2, -1, false),
        "inf" => (-1, -2, true),
        "-inf" => (-1, -2, false),
        "2" | "-2" | "nuc" => {
            let s = super::svdvals(a).map_err(|e| match e {
                Error::Invalid(m) => {
                    Error::Invalid(m.replace("linalg.svdvals", "linalg.matrix_norm"))
                }
                other => other,
            })?;
            let v = match ord {
                "2" => s.amax(&[-1], false)?,
                "-2" => s.amin(&[-1], false)?,
                _ => s.sum_dim(-1)?,
            };
            return if keepdim {
                v.unsqueeze(-1)?.unsqueeze(-1)
            } else {
                Ok(v)
            };
        }
        other => {
            return Err(Error::Invalid(format!(
                "linalg.matrix_norm: unknown ord {other:?}; torch's are \"fro\", \"nuc\", \
                 \"1\", \"-1\", \"2\", \"-2\", \"inf\" and \"-inf\""
            )))
        }
    };
    // As torch: abs, sum (kept), then amax/amin (kept), and the two dimensions dropped.
    let s = a.abs()?.sum_keepdim(sum_dim)?;
    let m = if max {
        s.amax(&[ext_dim], true)?
    } else {
        s.amin(&[ext_dim], true)?
    };
    if keepdim {
        Ok(m)
    } else {
        m.squeeze(-1)?.squeeze(-1)
    }
}

/// torch's `torch.linalg.norm(A, ord, dim, keepdim)`: with a `dim` of one dimension, a
/// vector norm (`ord` a number, `"inf"` or `"-inf"`; 2 when `None`); of two, a matrix norm
/// over those two (`ord` as [`matrix_norm`]'s; `"fro"` when `None`); with no `dim`, the
/// 2-norm of everything when `ord` is `None`, else a vector norm of a 1-D `A` or a matrix
/// norm of a 2-D one.
pub fn norm(a: &Tensor, ord: Option<&str>, dim: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    let vector_ord = |ord: Option<&str>| -> Result<f64> {
        match ord {
            None => Ok(2.0),
            Some(o) => o.parse::<f64>().map_err(|_| {
                Error::Invalid(format!(
                    "linalg.norm: a vector norm's ord must be a number, \"inf\" or \"-inf\", \
                     got {o:?}"
                ))
            }),
        }
    };
    let dims: Vec<isize> = match (dim, ord) {
        (Some(d), _) => d.to_vec(),
        (None, None) => return vector_norm(a, 2.0, None, keepdim),
        (None, Some(_)) => match a.rank() {
            1 => vec![0],
            2 => vec![0, 1],
            r => {
                return Err(Error::BadShape(format!(
                    "linalg.norm: with ord and no dim, A must be 1-D or 2-D, got {r}-D (shape \
                     {:?})",
                    a.shape()
                )))
            }
        },
    };
    match dims.len() {
        1 => vector_norm(a, vector_ord(ord)?, Some(&dims), keepdim),
        2 => {
            let r = a.rank() as isize;
            let wrap = |d: isize| if d < 0 { d + r } else { d };
            let (d0, d1) = (wrap(dims[0]), wrap(dims[1]));
            if d0 == d1 || !(0..r).contains(&d0) || !(0..r).contains(&d1) {
                return Err(Error::BadShape(format!(
                    "linalg.norm: dim {dims:?} must name two different dimensions of shape {:?}",
                    a.shape()
                )));
            }
            // The two dimensions last, in the order given (matrix_norm reads rows, columns).
            let mut order: Vec<isize> = (0..r).filter(|&d| d != d0 && d != d1).collect();
            order.extend([d0, d1]);
            let moved = a.permute(&order)?;
            let out = matrix_norm(&moved, ord.unwrap_or("fro"), false)?;
            if !keepdim {
                return Ok(out);
            }
            let (lo, hi) = (d0.min(d1), d0.max(d1));
            out.unsqueeze(lo)?.unsqueeze(hi)
        }
        n => Err(Error::BadShape(format!(
            "linalg.norm: dim must name one or two dimensions, got {n} ({dims:?})"
        ))),
    }
}
