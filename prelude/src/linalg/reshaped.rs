//! torch.linalg's tensor forms of the square solvers: `tensorinv` and `tensorsolve` read a
//! tensor's dimensions as the rows and the columns of one matrix, call `inv` or `solve` on
//! it, and give the result its tensor shape back, so gradients and devices are theirs.

use super::{inv, solve};
use crate::error::{Error, Result};
use crate::tensor::shape::resolve_dim;
use crate::tensor::Tensor;

/// The inverse of `a` read as a matrix with rows `a.shape[..ind]` and columns
/// `a.shape[ind..]` (torch's `torch.linalg.tensorinv(a, ind=2)`): shape `a.shape[ind..] +
/// a.shape[..ind]`, so that `tensordot(tensorinv(a), a, ind)` is the identity. The two
/// products must be equal.
pub fn tensorinv(a: &Tensor, ind: usize) -> Result<Tensor> {
    if ind == 0 || ind > a.rank() {
        return Err(Error::Invalid(format!(
            "linalg.tensorinv: ind must be between 1 and the rank, got {ind} for shape {:?}",
            a.shape()
        )));
    }
    let (rows, cols) = a.shape().split_at(ind);
    let (p, q) = (
        rows.iter().product::<usize>(),
        cols.iter().product::<usize>(),
    );
    if p != q {
        return Err(Error::BadShape(format!(
            "linalg.tensorinv: the product of shape[..{ind}] ({p}) must equal that of \
             shape[{ind}..] ({q}) for shape {:?}",
            a.shape()
        )));
    }
    let mut shape = cols.to_vec();
    shape.extend_from_slice(rows);
    inv(&a.reshape([p, q])?)?.reshape(shape)
}

/// The `x` with `tensordot(a, x, x.rank()) = b` (torch's `torch.linalg.tensorsolve(a, b,
/// dims)`): `a`'s leading dimensions are `b`'s, its trailing ones are `x`'s shape, and the
/// two products must be equal. `dims` names dimensions of `a` moved to the end first (in
/// that order), as torch's.
pub fn tensorsolve(a: &Tensor, b: &Tensor, dims: Option<&[isize]>) -> Result<Tensor> {
    let a = match dims {
        Some(dims) => {
            let moved = dims
                .iter()
                .map(|&d| resolve_dim(d, a.rank()).map(|d| d as isize))
                .collect::<Result<Vec<_>>>()?;
            let mut perm: Vec<isize> = (0..a.rank() as isize)
                .filter(|d| !moved.contains(d))
                .collect();
            perm.extend(&moved);
            a.permute(&perm)?
        }
        None => a.clone(),
    };
    if b.rank() > a.rank() {
        return Err(Error::BadShape(format!(
            "linalg.tensorsolve: B has more dimensions than A (shapes {:?} and {:?})",
            a.shape(),
            b.shape()
        )));
    }
    let (lead, x_shape) = a.shape().split_at(b.rank());
    let (p, q) = (
        lead.iter().product::<usize>(),
        x_shape.iter().product::<usize>(),
    );
    if p != q || b.numel() != q {
        return Err(Error::BadShape(format!(
            "linalg.tensorsolve: A's first {} dimensions must hold as many elements as its \
             others and as B, got A of shape {:?} (after moving dims) and B of shape {:?}",
            b.rank(),
            a.shape(),
            b.shape()
        )));
    }
    solve(&a.reshape([p, q])?, &b.reshape([q])?)?.reshape(x_shape.to_vec())
}
