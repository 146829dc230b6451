//! torch.linalg's products and constructors: `multi_dot` (a chain of matrix products in
//! the cheapest order, as torch picks it), `vecdot`, `cross` and `vander`, each composed of tensor
//! ops, so gradients and devices come from those.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Where to split the chain `dims[i]..dims[j + 1]` (matrix `t` is `dims[t] x dims[t + 1]`)
/// so the multiplications cost least: the textbook dynamic programme torch's `multi_dot`
/// runs, the first split of least cost winning a tie.
fn chain_order(dims: &[usize]) -> Vec<Vec<usize>> {
    let n = dims.len() - 1;
    let mut cost = vec![vec![0u128; n]; n];
    let mut split = vec![vec![0usize; n]; n];
    for len in 1..n {
        for i in 0..n - len {
            let j = i + len;
            cost[i][j] = u128::MAX;
            for k in i..j {
                let q = cost[i][k] + cost[k + 1][j] + (dims[i] * dims[k + 1] * dims[j + 1]) as u128;
                if q < cost[i][j] {
                    cost[i][j] = q;
                    split[i][j] = k;
                }
            }
        }
    }
    split
}

fn chain(ms: &[Tensor], split: &[Vec<usize>], i: usize, j: usize) -> Result<Tensor> {
    if i == j {
        return Ok(ms[i].clone());
    }
    let k = split[i][j];
    chain(ms, split, i, k)?.mm(&chain(ms, split, k + 1, j)?)
}

/// The product of two or more matrices (torch's `torch.linalg.multi_dot`), multiplied in
/// the order that costs fewest multiply-adds (torch's rule, so the rounding is torch's
/// too). The first may be a vector (a row) and the last a vector (a column); the result
/// drops those dimensions again. All must share one dtype.
pub fn multi_dot(tensors: &[&Tensor]) -> Result<Tensor> {
    let n = tensors.len();
    if n < 2 {
        return Err(Error::Invalid(format!(
            "linalg.multi_dot: expected at least 2 tensors, got {n}"
        )));
    }
    let mut ms = Vec::with_capacity(n);
    for (i, t) in tensors.iter().enumerate() {
        let vector_ok = i == 0 || i == n - 1;
        let m = match t.rank() {
            1 if i == 0 => t.unsqueeze(0)?,
            1 if vector_ok => t.unsqueeze(-1)?,
            2 => (*t).clone(),
            _ => {
                return Err(Error::BadShape(format!(
                    "linalg.multi_dot: tensor {i} must be 2-D{}, got shape {:?}",
                    if vector_ok { " or 1-D" } else { "" },
                    t.shape()
                )))
            }
        };
        if t.dtype() != tensors[0].dtype() {
            return Err(Error::Invalid(format!(
                "linalg.multi_dot: all tensors need one dtype, got {} for tensor 0 and {} for \
                 tensor {i}",
                tensors[0].dtype(),
                t.dtype()
            )));
        }
        if i > 0 && ms.last().map(|p: &Tensor| p.shape()[1]) != Some(m.shape()[0]) {
            return Err(Error::BadShape(format!(
                "linalg.multi_dot: tensors {} and {i} cannot be multiplied (shapes {:?} and {:?})",
                i - 1,
                tensors[i - 1].shape(),
                t.shape()
            )));
        }
        ms.push(m);
    }
    let mut dims: Vec<usize> = ms.iter().map(|m| m.shape()[0]).collect();
    dims.push(ms[n - 1].shape()[1]);
    let out = if n == 3 {
        // torch's own rule for three: (AB)C unless A(BC) is strictly cheaper.
        let (a, b, c, d) = (dims[0], dims[1], dims[2], dims[3]);
        if a * c * (b + d) > b * d * (a + c) {
            ms[0].mm(&ms[1].mm(&ms[2])?)?
        } else {
            ms[0].mm(&ms[1])?.mm(&ms[2])?
        }
    } else {
        chain(&ms, &chain_order(&dims), 0, n - 1)?
    };
    let out = if tensors[0].rank() == 1 {
        out.squeeze(0)?
    } else {
        out
    };
    if tensors[n - 1].rank() == 1 {
        out.squeeze(-1)
    } else {
        Ok(out)
    }
}

/// The dot product of `x` and `y` along `dim`, broadcasting the rest (torch's
/// `torch.linalg.vecdot(x, y, dim=)`; real tensors, so no conjugate).
/// Both must be one floating-point dtype, as in torch.
pub fn vecdot(x: &Tensor, y: &Tensor, dim: isize) -> Result<Tensor> {
    if !x.dtype().is_float() || x.dtype() != y.dtype() {
        return Err(Error::Invalid(format!(
            "linalg.vecdot: expected x and y of one floating-point dtype, got {} and {} \
             (shapes {:?} and {:?})",
            x.dtype(),
            y.dtype(),
            x.shape(),
            y.shape()
        )));
    }
    x.mul(y)?.sum_dim(dim)
}

/// The Vandermonde matrix of `x` (`[.., n]` to `[.., n, columns]`, a 0-d `x` taken as
/// `[1]`), with increasing powers `x⁰, x¹, ...` as torch's `torch.linalg.vander(x, N=)`
/// (NumPy's `vander` decreases); `columns` defaults to `n` and must exceed 1, as torch's.
/// Built as torch builds it, a running product after a column of ones, so integer tensors
/// give int64 (the product's dtype) and the rounding is torch's. float32, float64 and
/// integer tensors, as torch.
pub fn vander(x: &Tensor, columns: Option<usize>) -> Result<Tensor> {
    use crate::tensor::DType;
    if matches!(x.dtype(), DType::F16 | DType::BF16 | DType::Bool) {
        return Err(Error::Invalid(format!(
            "linalg.vander: supports floating point (float32, float64) and integer tensors, \
             got {} (shape {:?}), as torch",
            x.dtype(),
            x.shape()
        )));
    }
    let x = if x.rank() == 0 {
        x.unsqueeze(-1)?
    } else {
        x.clone()
    };
    let n = columns.unwrap_or(x.shape()[x.rank() - 1]);
    if n <= 1 {
        return Err(Error::Invalid(format!(
            "linalg.vander: N must be greater than 1, got {n} (x of shape {:?})",
            x.shape()
        )));
    }
    let mut shape = x.shape().to_vec();
    shape.push(n - 1);
    let powers = x.unsqueeze(-1)?.expand(shape.clone())?.cumprod(-1)?;
    *shape.last_mut().expect("at least one dimension") = 1;
    let ones = Tensor::ones_dtype(shape, powers.dtype(), powers.device())?;
    Tensor::cat(&[ones, powers], -1)
}

/// The cross product of 3-vectors along `dim` (torch's `torch.linalg.cross(a, b, dim=-1)`):
/// as [`Tensor::cross`], except that torch.linalg requires both to have the same rank (the
/// other dimensions broadcast).
pub fn cross(a: &Tensor, b: &Tensor, dim: isize) -> Result<Tensor> {
    if a.rank() != b.rank() {
        return Err(Error::BadShape(format!(
            "linalg.cross: both inputs must have the same number of dimensions, got shapes \
             {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    a.cross(b, dim).map_err(|e| match e {
        Error::BadShape(s) => Error::BadShape(format!("linalg.{s}")),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn the_chain_order_is_the_cheapest() {
        // 10x100, 100x5, 5x50: (AB)C costs 7500, A(BC) 75000.
        assert_eq!(chain_order(&[10, 100, 5, 50])[0][2], 1);
        // 50x5, 5x100, 100x10, 10x1: multiplying from the right is cheapest.
        let s = chain_order(&[50, 5, 100, 10, 1]);
        assert_eq!((s[0][3], s[1][3], s[2][3]), (0, 1, 2));
    }

    #[test]
    fn vectors_at_the_ends_and_vander_powers() {
        let v = Tensor::from_vec(vec![1.0f64, 2.0], [2], Device::Cpu).unwrap();
        let m = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 3.0], [2, 2], Device::Cpu).unwrap();
        let d = multi_dot(&[&v, &m, &v]).unwrap();
        assert_eq!(
            (d.shape(), d.to_vec::<f64>().unwrap()),
            (&[][..], vec![13.0])
        );
        let e = multi_dot(&[&m, &v, &m]).unwrap_err().to_string();
        assert!(e.contains("tensor 1 must be 2-D"), "{e}");
        let x = Tensor::from_vec(vec![2i64, 3], [2], Device::Cpu).unwrap();
        let w = vander(&x, Some(3)).unwrap();
        assert_eq!(w.to_vec::<i64>().unwrap(), [1, 2, 4, 1, 3, 9]);
        assert_eq!(vecdot(&v, &v, -1).unwrap().to_vec::<f64>().unwrap(), [5.0]);
    }
}
