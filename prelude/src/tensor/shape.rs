//! Shapes and the broadcasting rule (numpy's: align from the right, a size-1 dimension
//! stretches).

use crate::error::{Error, Result};

/// A tensor's dimensions. Built from `usize`, tuples, arrays, slices or vectors, so
/// `Tensor::zeros((2, 3), dev)` and `Tensor::zeros([2, 3], dev)` both work.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    pub fn dims(&self) -> &[usize] {
        &self.0
    }
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }
}

impl From<usize> for Shape {
    fn from(n: usize) -> Self {
        Shape(vec![n])
    }
}
impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape(vec![])
    }
}
impl From<(usize,)> for Shape {
    fn from(d: (usize,)) -> Self {
        Shape(vec![d.0])
    }
}
impl From<(usize, usize)> for Shape {
    fn from(d: (usize, usize)) -> Self {
        Shape(vec![d.0, d.1])
    }
}
impl From<(usize, usize, usize)> for Shape {
    fn from(d: (usize, usize, usize)) -> Self {
        Shape(vec![d.0, d.1, d.2])
    }
}
impl From<(usize, usize, usize, usize)> for Shape {
    fn from(d: (usize, usize, usize, usize)) -> Self {
        Shape(vec![d.0, d.1, d.2, d.3])
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Self {
        Shape(d.to_vec())
    }
}
impl<const N: usize> From<&[usize; N]> for Shape {
    fn from(d: &[usize; N]) -> Self {
        Shape(d.to_vec())
    }
}
impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape(d.to_vec())
    }
}
impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Self {
        Shape(d)
    }
}
impl From<&Vec<usize>> for Shape {
    fn from(d: &Vec<usize>) -> Self {
        Shape(d.clone())
    }
}

/// Row-major strides of a contiguous tensor.
pub(crate) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// The broadcast result shape and, for each operand, its stride in every output dimension
/// (0 where it is stretched).
pub(crate) struct Broadcast {
    pub dims: Vec<usize>,
    pub sa: Vec<usize>,
    pub sb: Vec<usize>,
}

pub(crate) fn broadcast(op: &'static str, a: &[usize], b: &[usize]) -> Result<Broadcast> {
    let n = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, n - s.len())
            .chain(s.iter().copied())
            .collect()
    };
    let (pa, pb) = (pad(a), pad(b));
    let mut dims = Vec::with_capacity(n);
    for i in 0..n {
        dims.push(match (pa[i], pb[i]) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::ShapeMismatch {
                    op,
                    lhs: a.to_vec(),
                    rhs: b.to_vec(),
                })
            }
        });
    }
    let stretch = |p: &[usize]| -> Vec<usize> {
        let st = strides(p);
        (0..n)
            .map(|i| if p[i] == 1 && dims[i] != 1 { 0 } else { st[i] })
            .collect()
    };
    Ok(Broadcast {
        sa: stretch(&pa),
        sb: stretch(&pb),
        dims,
    })
}

/// Resolves a possibly negative dimension index against `rank`.
pub(crate) fn resolve_dim(dim: isize, rank: usize) -> Result<usize> {
    let r = rank as isize;
    let d = if dim < 0 { dim + r } else { dim };
    if d < 0 || d >= r.max(1) || rank == 0 {
        return Err(Error::Invalid(format!(
            "dimension {dim} is out of range for a tensor of rank {rank}"
        )));
    }
    Ok(d as usize)
}
