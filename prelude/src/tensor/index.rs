//! Python's indexing, `x[0]`, `x[:, 1:3]`, `x[..., -1]`, `x[::2]`, `x[None]`, `x[idx]`,
//! `x[mask]`, as `x.i(0)`, `x.i((.., 1..3))`, `x.i((Ellipsis, -1))`, `x.i((0..).step_by(2))`,
//! `x.i(NewAxis)`, `x.i(&idx)`, `x.i(&mask)`. Integers, ranges, `Ellipsis` and `NewAxis` give a
//! view, as in torch (a write into it shows in `x`); a tensor index gives a copy, as torch's
//! advanced indexing does.

use super::shape::{broadcast, resolve_dim, strides};
use super::{DType, Tensor};
use crate::device::Device;
use crate::error::{Error, Result};
use std::iter::StepBy;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// Python's `...` in an index: as many `:` as the dimensions the other entries leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ellipsis;

/// Python's `None` (numpy's `newaxis`) in an index: a new dimension of size 1 there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewAxis;

/// One entry of an index, as Python writes it between the brackets.
#[derive(Clone, Debug)]
pub enum Idx {
    /// `i`: that position, the dimension disappears; negative counts from the end.
    At(i64),
    /// `start:end:step`, either end open; negative ends count from the end, and ends past the
    /// dimension are clamped, as in Python.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: usize,
    },
    /// `...`
    Ellipsis,
    /// `None`
    NewAxis,
    /// An int64-like tensor of positions (any shape: those dimensions replace this one), or a
    /// bool mask over the next dimensions (they become one, of the count of `true`s).
    Tensor(Tensor),
}

macro_rules! int_index {
    ($($t:ty),*) => {$(
        impl From<$t> for Idx {
            fn from(i: $t) -> Idx {
                Idx::At(i as i64)
            }
        }
        impl From<Range<$t>> for Idx {
            fn from(r: Range<$t>) -> Idx {
                Idx::Slice { start: Some(r.start as i64), end: Some(r.end as i64), step: 1 }
            }
        }
        impl From<RangeFrom<$t>> for Idx {
            fn from(r: RangeFrom<$t>) -> Idx {
                Idx::Slice { start: Some(r.start as i64), end: None, step: 1 }
            }
        }
        impl From<RangeTo<$t>> for Idx {
            fn from(r: RangeTo<$t>) -> Idx {
                Idx::Slice { start: None, end: Some(r.end as i64), step: 1 }
            }
        }
        impl From<RangeInclusive<$t>> for Idx {
            fn from(r: RangeInclusive<$t>) -> Idx {
                // `a..=-1` reaches the last element, as Python's `a:` does.
                let end = (*r.end() as i64).checked_add(1).filter(|&e| e != 0);
                Idx::Slice { start: Some(*r.start() as i64), end, step: 1 }
            }
        }
        impl From<RangeToInclusive<$t>> for Idx {
            fn from(r: RangeToInclusive<$t>) -> Idx {
                let end = (r.end as i64).checked_add(1).filter(|&e| e != 0);
                Idx::Slice { start: None, end, step: 1 }
            }
        }
        /// `(a..b).step_by(s)`: Python's `a:b:s`.
        impl From<StepBy<Range<$t>>> for Idx {
            fn from(mut r: StepBy<Range<$t>>) -> Idx {
                let Some(first) = r.next() else {
                    return Idx::Slice { start: Some(0), end: Some(0), step: 1 };
                };
                let second = r.next();
                let step = second.map_or(1, |s| (s as i64 - first as i64) as usize);
                // The rest counted, not walked (a long range must not take long).
                let last = second.map_or(first as i64, |s| {
                    s as i64 + r.size_hint().0 as i64 * step as i64
                });
                // Through the last element taken; `..-1` style ends open, as above.
                let end = Some(last + 1).filter(|&e| e != 0);
                Idx::Slice { start: Some(first as i64), end, step }
            }
        }
        /// `(a..).step_by(s)`: Python's `a::s`.
        impl From<StepBy<RangeFrom<$t>>> for Idx {
            fn from(mut r: StepBy<RangeFrom<$t>>) -> Idx {
                let first = r.next().map_or(0, |f| f as i64);
                let step = r.next().map_or(1, |s| (s as i64 - first) as usize);
                Idx::Slice { start: Some(first), end: None, step }
            }
        }
        /// A list of positions, as Python's `x[[2, 0]]`: a tensor index.
        impl From<Vec<$t>> for Idx {
            fn from(v: Vec<$t>) -> Idx {
                Idx::Tensor(Tensor::from(v.into_iter().map(|i| i as i64).collect::<Vec<i64>>()))
            }
        }
        impl<const N: usize> From<[$t; N]> for Idx {
            fn from(v: [$t; N]) -> Idx {
                Idx::from(v.to_vec())
            }
        }
    )*};
}
int_index!(i32, i64, isize, usize);

/// A list of bools, as Python's `x[[True, False, True]]`: a mask.
impl From<Vec<bool>> for Idx {
    fn from(v: Vec<bool>) -> Idx {
        Idx::Tensor(Tensor::from(v))
    }
}
impl<const N: usize> From<[bool; N]> for Idx {
    fn from(v: [bool; N]) -> Idx {
        Idx::from(v.to_vec())
    }
}

impl From<RangeFull> for Idx {
    fn from(_: RangeFull) -> Idx {
        Idx::Slice {
            start: None,
            end: None,
            step: 1,
        }
    }
}
impl From<Ellipsis> for Idx {
    fn from(_: Ellipsis) -> Idx {
        Idx::Ellipsis
    }
}
impl From<NewAxis> for Idx {
    fn from(_: NewAxis) -> Idx {
        Idx::NewAxis
    }
}
impl From<&Tensor> for Idx {
    fn from(t: &Tensor) -> Idx {
        Idx::Tensor(t.clone())
    }
}
impl From<Tensor> for Idx {
    fn from(t: Tensor) -> Idx {
        Idx::Tensor(t)
    }
}

/// What [`Tensor::i`] takes: one entry, or a tuple of up to eight (`(.., 0)`), or a `Vec<Idx>`.
pub trait IndexArg {
    fn entries(self) -> Vec<Idx>;
}

macro_rules! single_arg {
    ($($t:ty),*) => {$(
        impl IndexArg for $t {
            fn entries(self) -> Vec<Idx> {
                vec![self.into()]
            }
        }
    )*};
}
macro_rules! int_args {
    ($($t:ty),*) => {$(
        single_arg!($t, Range<$t>, RangeFrom<$t>, RangeTo<$t>, RangeInclusive<$t>,
                    RangeToInclusive<$t>, StepBy<Range<$t>>, StepBy<RangeFrom<$t>>);
    )*};
}
int_args!(i32, i64, isize, usize);
single_arg!(RangeFull, Ellipsis, NewAxis, Tensor, Idx);

macro_rules! list_args {
    ($($t:ty),*) => {$(
        single_arg!(Vec<$t>);
        impl<const N: usize> IndexArg for [$t; N] {
            fn entries(self) -> Vec<Idx> {
                vec![self.into()]
            }
        }
    )*};
}
list_args!(i32, i64, isize, usize, bool);

impl IndexArg for &Tensor {
    fn entries(self) -> Vec<Idx> {
        vec![self.into()]
    }
}
impl IndexArg for Vec<Idx> {
    fn entries(self) -> Vec<Idx> {
        self
    }
}

macro_rules! tuple_arg {
    ($($name:ident),+) => {
        impl<$($name: Into<Idx>),+> IndexArg for ($($name,)+) {
            #[allow(non_snake_case)]
            fn entries(self) -> Vec<Idx> {
                let ($($name,)+) = self;
                vec![$($name.into()),+]
            }
        }
    };
}
tuple_arg!(A);
tuple_arg!(A, B);
tuple_arg!(A, B, C);
tuple_arg!(A, B, C, D);
tuple_arg!(A, B, C, D, E);
tuple_arg!(A, B, C, D, E, G);
tuple_arg!(A, B, C, D, E, G, H);
tuple_arg!(A, B, C, D, E, G, H, J);

/// A Python slice's bounds on a dimension of `size`: negative ends count from the end, and
/// both are clamped to `0..=size`.
fn slice_bounds(start: Option<i64>, end: Option<i64>, size: usize) -> (usize, usize) {
    let n = size as i64;
    let fix = |v: i64| (if v < 0 { v + n } else { v }).clamp(0, n) as usize;
    let s = start.map_or(0, fix);
    let e = end.map_or(size, fix);
    (s, e.max(s))
}

/// A tensor entry of an index, read on the host: the dimension of the basic view it picks
/// along, the entry's shape, and its positions (made non-negative, checked against the size).
/// A bool mask over `k` dimensions becomes `k` of these, one per masked dimension, as in torch.
pub(super) struct Picks {
    dim: usize,
    dims: Vec<usize>,
    pos: Vec<i64>,
}

/// Whether torch reads a tensor of this dtype as a mask (bool, and the deprecated uint8) rather
/// than as positions.
fn is_mask(dt: DType) -> bool {
    matches!(dt, DType::Bool | DType::U8)
}

/// torch's rule for index tensors: on the CPU, or on the indexed tensor's device.
pub(super) fn check_index_device(t: &Tensor, ix: &Tensor) -> Result<()> {
    if ix.device() != Device::Cpu && ix.device() != t.device() {
        return Err(Error::Invalid(format!(
            "index: an index tensor must be on the CPU or on the indexed tensor's device ({}), \
             got one on {}",
            t.device(),
            ix.device()
        )));
    }
    Ok(())
}

impl Tensor {
    /// Python-style indexing, as torch's `x[...]`: `x.i(0)` is `x[0]`, `x.i((.., 1..3))` is
    /// `x[:, 1:3]`, `x.i((Ellipsis, -1))` is `x[..., -1]`, `x.i((0..).step_by(2))` is `x[::2]`,
    /// `x.i(NewAxis)` is `x[None]`, `x.i(&idx)` picks positions, `x.i(&mask)` the elements where
    /// a bool mask is true, `x.i((&rows, &cols))` the elements at pairs of positions (index
    /// tensors broadcast together, as torch's advanced indexing). Integers, ranges, `Ellipsis`
    /// and `NewAxis` give a view (a write into it shows in `x`, as `x[:, 0] = 1` does); a
    /// tensor gives a copy. Where several index tensors are separated by a slice, their
    /// dimensions come first in the result, as in torch.
    pub fn i(&self, index: impl IndexArg) -> Result<Tensor> {
        let (t, picks) = self.basic_index(index.entries())?;
        if picks.is_empty() {
            return Ok(t);
        }
        let out = t.pick(&picks)?;
        Ok(crate::autograd::relabel("index", out))
    }

    /// The integers, ranges, `Ellipsis` and `NewAxis` of an index applied as views, and the
    /// tensor entries read for [`Tensor::pick`] on that view.
    pub(super) fn basic_index(&self, entries: Vec<Idx>) -> Result<(Tensor, Vec<Picks>)> {
        let consumes = |e: &Idx| match e {
            Idx::Ellipsis | Idx::NewAxis => 0,
            // A 0-d mask adds a dimension (of size 1 or 0), as `None` does.
            Idx::Tensor(t) if is_mask(t.dtype()) => t.rank(),
            _ => 1,
        };
        let used: usize = entries.iter().map(consumes).sum();
        let ellipses = entries
            .iter()
            .filter(|e| matches!(e, Idx::Ellipsis))
            .count();
        if ellipses > 1 || used > self.rank() {
            return Err(Error::BadShape(format!(
                "index: {} for a tensor of shape {:?}",
                if ellipses > 1 {
                    "more than one Ellipsis".to_string()
                } else {
                    format!("{used} indexed dimensions")
                },
                self.shape()
            )));
        }
        let mut t = self.clone();
        let mut picks = Vec::new();
        let mut d = 0; // the dimension of `t` the next entry applies to
        for e in entries {
            match e {
                Idx::At(i) => t = t.select_at(d, i, self)?,
                Idx::Slice { start, end, step } => {
                    let (s, e) = slice_bounds(start, end, t.shape()[d]);
                    t = t.slice_step(d as isize, s, e, step)?;
                    d += 1;
                }
                Idx::Ellipsis => d += self.rank() - used,
                Idx::NewAxis => {
                    t = t.unsqueeze(d as isize)?;
                    d += 1;
                }
                Idx::Tensor(ix) => {
                    check_index_device(self, &ix)?;
                    if is_mask(ix.dtype()) {
                        if ix.rank() == 0 {
                            // `x[True]` is `x[None]` kept, `x[False]` the same emptied.
                            t = t.unsqueeze(d as isize)?;
                        }
                        d += t.mask_picks(d, &ix, self, &mut picks)?;
                    } else if !ix.dtype().is_int() {
                        return Err(Error::Invalid(format!(
                            "index: a tensor index must hold integers (positions) or bools (a \
                             mask), got {}",
                            ix.dtype()
                        )));
                    } else if ix.rank() == 0 {
                        // torch reads a 0-d integer tensor as the integer itself (a view).
                        let i = ix.to_dtype(DType::I64)?.to_vec::<i64>()?[0];
                        t = t.select_at(d, i, self)?;
                    } else {
                        let size = t.shape()[d] as i64;
                        let mut pos = ix.to_dtype(DType::I64)?.to_vec::<i64>()?;
                        for p in pos.iter_mut() {
                            if *p < -size || *p >= size {
                                return Err(Error::BadShape(format!(
                                    "index {p} is out of range for dimension {d} of size {size} \
                                     (shape {:?})",
                                    self.shape()
                                )));
                            }
                            if *p < 0 {
                                *p += size;
                            }
                        }
                        let dims = ix.shape().to_vec();
                        picks.push(Picks { dim: d, dims, pos });
                        d += 1;
                    }
                }
            }
        }
        Ok((t, picks))
    }

    /// `t[.., i]` at dimension `d` as a view, with the error naming the original shape.
    fn select_at(&self, d: usize, i: i64, base: &Tensor) -> Result<Tensor> {
        self.select(d as isize, i as isize).map_err(|_| {
            Error::BadShape(format!(
                "index {i} is out of range for dimension {d} of size {} (shape {:?})",
                self.shape()[d],
                base.shape()
            ))
        })
    }

    /// A mask over the dimensions from `d` as one position list per masked dimension (the
    /// coordinates of its trues, as torch's `mask.nonzero()` columns); how many it covers.
    fn mask_picks(
        &self,
        d: usize,
        mask: &Tensor,
        base: &Tensor,
        out: &mut Vec<Picks>,
    ) -> Result<usize> {
        let k = mask.rank().max(1);
        let covered = &self.shape()[d..(d + k).min(self.rank())];
        let want: &[usize] = if mask.rank() == 0 { &[1] } else { mask.shape() };
        if covered != want {
            return Err(Error::BadShape(format!(
                "index: a mask of shape {:?} does not match dimensions {d}.. of shape {:?}",
                mask.shape(),
                base.shape()
            )));
        }
        let trues: Vec<usize> = mask
            .to_dtype(DType::Bool)?
            .to_vec::<bool>()?
            .iter()
            .enumerate()
            .filter_map(|(i, &b)| b.then_some(i))
            .collect();
        let st = strides(want);
        for (j, (&s, &size)) in st.iter().zip(want).enumerate() {
            let pos = trues.iter().map(|&f| ((f / s) % size) as i64).collect();
            out.push(Picks {
                dim: d + j,
                dims: vec![trues.len()],
                pos,
            });
        }
        Ok(k)
    }

    /// Advanced indexing on the basic view `self`: the index tensors broadcast together to a
    /// shape `B`; the result holds, for each position of `B`, the slice of `self` at those
    /// coordinates. `B` stands where the indexed dimensions were when they are adjacent,
    /// and first otherwise (torch's and numpy's rule). A copy, with gradients.
    pub(super) fn pick(&self, picks: &[Picks]) -> Result<Tensor> {
        // The index tensors broadcast together, as operands of one element-wise op would.
        let b = picks.iter().try_fold(Vec::new(), |acc, p| {
            broadcast("index", &acc, &p.dims).map(|b| b.dims)
        })?;
        let nb: usize = b.iter().product();
        let dims: Vec<usize> = picks.iter().map(|p| p.dim).collect();
        let sizes: Vec<usize> = dims.iter().map(|&d| self.shape()[d]).collect();
        // Each broadcast position's flat offset into the indexed dimensions (row-major).
        let bst = strides(&b);
        let mut flat = vec![0i64; nb];
        let mut along = 1i64;
        for (p, &size) in picks.iter().zip(&sizes).rev() {
            let pst = strides(&p.dims);
            let pad = b.len() - p.dims.len();
            for (o, f) in flat.iter_mut().enumerate() {
                let src: usize = (0..p.dims.len())
                    .filter(|&i| p.dims[i] != 1)
                    .map(|i| (o / bst[pad + i]) % b[pad + i] * pst[i])
                    .sum();
                *f += p.pos[src] * along;
            }
            along *= size as i64;
        }
        let flat = Tensor::from_vec(flat, nb, Device::Cpu)?;
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let first = dims[0];
        let rest: Vec<usize> = (0..self.rank()).filter(|d| !dims.contains(d)).collect();
        if adjacent {
            // The indexed dimensions as one, picked in place.
            let mut merged = self.shape()[..first].to_vec();
            merged.push(sizes.iter().product());
            merged.extend_from_slice(&self.shape()[first + dims.len()..]);
            let src = if dims.len() == 1 {
                self.clone()
            } else {
                self.reshape(merged)?
            };
            let out = src.index_select(first as isize, &flat)?;
            let mut shape = self.shape()[..first].to_vec();
            shape.extend_from_slice(&b);
            shape.extend_from_slice(&self.shape()[first + dims.len()..]);
            return out.reshape(shape);
        }
        // Separated: the indexed dimensions moved to the front, merged, picked there.
        let perm: Vec<isize> = dims.iter().chain(&rest).map(|&d| d as isize).collect();
        let mut merged = vec![sizes.iter().product()];
        merged.extend(rest.iter().map(|&d| self.shape()[d]));
        let out = self
            .permute(&perm)?
            .reshape(merged)?
            .index_select(0, &flat)?;
        let mut shape = b;
        shape.extend(rest.iter().map(|&d| self.shape()[d]));
        out.reshape(shape)
    }

    /// The elements at the flat (row-major) positions `index` names, in `index`'s shape
    /// (torch's `take`; negative positions count from the end). A copy.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        if !index.dtype().is_int() || index.dtype() == DType::Bool {
            return Err(Error::Invalid(format!(
                "take: the index must hold integer positions, got {}",
                index.dtype()
            )));
        }
        // A 0-d index is one position (a copy, unlike indexing with a 0-d tensor).
        let flat = self.flatten()?;
        let (_, picks) = flat.basic_index(vec![Idx::Tensor(index.flatten()?)])?;
        flat.pick(&picks)?.reshape(index.shape().to_vec())
    }

    /// Elements `start, start + step, ..` below `end` of dimension `dim`, as torch's
    /// `x[start:end:step]` along `dim`: a view (its stride multiplied by `step`).
    pub fn slice_step(&self, dim: isize, start: usize, end: usize, step: usize) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())?;
        let size = self.shape()[d];
        if step == 0 || start > end || end > size {
            return Err(Error::BadShape(format!(
                "slice: {start}..{end} with step {step} does not fit dimension {d} of size \
                 {size} (shape {:?}); the step must be positive",
                self.shape()
            )));
        }
        let t = self.narrow(d as isize, start, end - start)?;
        if step == 1 {
            return Ok(t);
        }
        let out = t.view_of(t.layout.step(d, step));
        Ok(crate::autograd::rules::view("slice", &t, out, move |z| {
            let len = z.shape()[d];
            z.slice_step(d as isize, 0, len, step)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{Ellipsis, NewAxis};
    use crate::{Device, Tensor};

    fn m() -> Tensor {
        Tensor::arange(0.0f32, 24.0, Device::Cpu)
            .unwrap()
            .reshape([2, 3, 4])
            .unwrap()
    }

    #[test]
    fn basic_indexing_is_pythons_and_gives_views() {
        let x = m();
        assert_eq!(x.i(1).unwrap().shape(), &[3, 4]);
        assert_eq!(
            x.i((0, -1)).unwrap().to_vec::<f32>().unwrap(),
            [8., 9., 10., 11.]
        );
        assert_eq!(
            x.i((Ellipsis, -1)).unwrap().to_vec::<f32>().unwrap(),
            [3., 7., 11., 15., 19., 23.]
        );
        assert_eq!(x.i((.., 1..3, ..2)).unwrap().shape(), &[2, 2, 2]);
        assert_eq!(
            x.i((0, 0, (0..).step_by(2)))
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [0., 2.]
        );
        assert_eq!(
            x.i((1, 2, (1..4).step_by(2)))
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [21., 23.]
        );
        // Python clamps slice ends; `-2..` is the last two.
        assert_eq!(
            x.i((0, 0, -2..)).unwrap().to_vec::<f32>().unwrap(),
            [2., 3.]
        );
        assert_eq!(
            x.i((0, 0, 2..100)).unwrap().to_vec::<f32>().unwrap(),
            [2., 3.]
        );
        #[allow(clippy::reversed_empty_ranges)] // Python's x[0, 0, 3:1], empty on purpose
        let empty = x.i((0, 0, 3..1)).unwrap();
        assert_eq!(empty.numel(), 0);
        assert_eq!(x.i((NewAxis, .., 0)).unwrap().shape(), &[1, 2, 4]);
        // A view: a write shows in the base.
        x.i((.., 0, (0..).step_by(3))).unwrap().fill_(-1.0).unwrap();
        assert_eq!(
            x.i((1, 0)).unwrap().to_vec::<f32>().unwrap(),
            [-1., 13., 14., -1.]
        );
        let e = x.i((0, 3)).unwrap_err().to_string();
        assert!(e.contains("index 3") && e.contains("size 3"), "{e}");
        let e = x.i((0, 0, 0, 0)).unwrap_err().to_string();
        assert!(e.contains("4 indexed dimensions"), "{e}");
    }

    #[test]
    fn tensor_indices_pick_positions_and_masks_pick_elements() {
        let x = m();
        let idx = Tensor::from_vec(vec![2i64, -3], 2, Device::Cpu).unwrap();
        let r = x.i((.., &idx)).unwrap();
        assert_eq!(r.shape(), &[2, 2, 4]);
        assert_eq!(
            r.i((0, 1)).unwrap().to_vec::<f32>().unwrap(),
            [0., 1., 2., 3.]
        );
        let mask = x.i(0).unwrap().gt(9.0).unwrap();
        let picked = x.i((1, &mask)).unwrap();
        assert_eq!(picked.to_vec::<f32>().unwrap(), [22., 23.]);
        let all = x.i(x.gt(21.0).unwrap()).unwrap();
        assert_eq!(all.to_vec::<f32>().unwrap(), [22., 23.]);
        let e = x.i((.., &x.gt(0.0).unwrap())).unwrap_err().to_string();
        assert!(e.contains("4 indexed dimensions"), "{e}");
        let row_mask = x.i((0, 0)).unwrap().gt(1.0).unwrap(); // shape [4] against size 3
        let e = x.i((.., &row_mask)).unwrap_err().to_string();
        assert!(e.contains("does not match") && e.contains("[4]"), "{e}");
        // Gradients flow back through views and picks.
        let w = m().requires_grad_(true).unwrap();
        w.i((.., 1..3, (0..).step_by(2)))
            .unwrap()
            .sum()
            .unwrap()
            .add(&w.i((0, &idx)).unwrap().sum().unwrap())
            .unwrap()
            .backward()
            .unwrap();
        let g = w.grad().unwrap();
        assert_eq!(
            g.i((1, 1)).unwrap().to_vec::<f32>().unwrap(),
            [1., 0., 1., 0.]
        );
        assert_eq!(
            g.i((0, 0)).unwrap().to_vec::<f32>().unwrap(),
            [1., 1., 1., 1.]
        );
        assert_eq!(
            g.i((0, 2)).unwrap().to_vec::<f32>().unwrap(),
            [2., 1., 2., 1.]
        );
    }
}
