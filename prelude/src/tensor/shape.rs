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

/// One size in a shape given to `reshape` or `view`: any of Rust's usual integer types, so
/// `t.reshape((n, -1))` mixes a `usize` with a literal `-1`. A negative size other than -1
/// is an error when the shape is resolved.
pub trait ViewDim: Copy {
    fn view_dim(self) -> i128;
}

macro_rules! view_dim {
    ($($t:ty),*) => {$(
        impl ViewDim for $t {
            fn view_dim(self) -> i128 {
                self as i128
            }
        }
    )*};
}
view_dim!(usize, isize, u32, u64, i32, i64);

/// The shape `reshape` and `view` take: everything a [`Shape`] is built from, and the same
/// forms with signed sizes, where one size may be -1 (inferred from the element count, as
/// torch's `reshape(-1)` / `view(-1, 4)`). Integer literals alone fall back to `i32`, so
/// `t.reshape([2, -1])`, `t.reshape(-1)` and `t.reshape((2, 3))` all work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewShape(Vec<i128>);

/// Converts a shape argument of `reshape`/`view` (see [`ViewShape`]).
pub trait IntoViewShape {
    fn into_view_shape(self) -> ViewShape;
}

impl IntoViewShape for ViewShape {
    fn into_view_shape(self) -> ViewShape {
        self
    }
}
impl IntoViewShape for Shape {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.0.iter().map(|&d| d as i128).collect())
    }
}
impl IntoViewShape for &Shape {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.0.iter().map(|&d| d as i128).collect())
    }
}
impl IntoViewShape for () {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(vec![])
    }
}
macro_rules! view_scalar {
    ($($t:ty),*) => {$(
        impl IntoViewShape for $t {
            fn into_view_shape(self) -> ViewShape {
                ViewShape(vec![self.view_dim()])
            }
        }
    )*};
}
view_scalar!(usize, isize, u32, u64, i32, i64);
macro_rules! view_tuple {
    ($($name:ident . $i:tt),+) => {
        impl<$($name: ViewDim),+> IntoViewShape for ($($name,)+) {
            fn into_view_shape(self) -> ViewShape {
                ViewShape(vec![$(self.$i.view_dim()),+])
            }
        }
    };
}
view_tuple!(A.0);
view_tuple!(A.0, B.1);
view_tuple!(A.0, B.1, C.2);
view_tuple!(A.0, B.1, C.2, D.3);
view_tuple!(A.0, B.1, C.2, D.3, E.4);
view_tuple!(A.0, B.1, C.2, D.3, E.4, F.5);
impl<T: ViewDim, const N: usize> IntoViewShape for [T; N] {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.iter().map(|d| d.view_dim()).collect())
    }
}
impl<T: ViewDim, const N: usize> IntoViewShape for &[T; N] {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.iter().map(|d| d.view_dim()).collect())
    }
}
impl<T: ViewDim> IntoViewShape for &[T] {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.iter().map(|d| d.view_dim()).collect())
    }
}
impl<T: ViewDim> IntoViewShape for Vec<T> {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.iter().map(|d| d.view_dim()).collect())
    }
}
impl<T: ViewDim> IntoViewShape for &Vec<T> {
    fn into_view_shape(self) -> ViewShape {
        ViewShape(self.iter().map(|d| d.view_dim()).collect())
    }
}

impl ViewShape {
    /// The sizes for a tensor of shape `from`, the -1 (if any) replaced by what the element
    /// count leaves for it. Errors name `op`, the shape asked and the element count.
    pub(crate) fn resolve(&self, op: &str, from: &[usize]) -> Result<Vec<usize>> {
        let numel: usize = from.iter().product();
        let asked = &self.0;
        let bad = |why: String| {
            Error::BadShape(format!(
                "{op}: cannot make a tensor of shape {from:?} ({numel} elements) into shape \
                 {asked:?}: {why}"
            ))
        };
        if let Some(&n) = asked.iter().find(|&&d| d < -1) {
            return Err(bad(format!(
                "size {n} is negative (only -1 is allowed, for the one size to infer)"
            )));
        }
        let inferred: Vec<usize> = (0..asked.len()).filter(|&i| asked[i] == -1).collect();
        if inferred.len() > 1 {
            return Err(bad(format!(
                "only one size can be -1 (inferred), got {} of them",
                inferred.len()
            )));
        }
        // The product of the given sizes, or None when it overflows (no tensor has that
        // many elements).
        let known = asked
            .iter()
            .filter(|&&d| d != -1)
            .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
        let Some(known) = known else {
            return Err(bad("the sizes multiply past the largest usize".into()));
        };
        let fill = match inferred.first() {
            None if known == numel => None,
            None => {
                return Err(bad(format!(
                    "that shape holds {known} elements, not {numel}"
                )))
            }
            Some(_) if known == 0 => {
                return Err(bad(
                    "the -1 cannot be inferred when the other sizes multiply to 0 (any \
                     size would fit)"
                        .into(),
                ))
            }
            Some(_) if !numel.is_multiple_of(known) => {
                return Err(bad(format!(
                    "{numel} is not a multiple of {known}, the product of the other sizes"
                )))
            }
            Some(&i) => Some((i, numel / known)),
        };
        let mut dims: Vec<usize> = asked.iter().map(|&d| d.max(0) as usize).collect();
        if let Some((i, n)) = fill {
            dims[i] = n;
        }
        Ok(dims)
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

impl Broadcast {
    /// The result's element count (checked not to overflow when it was built).
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }
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
    super::host_mem::checked_numel(op, &dims)?;
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
