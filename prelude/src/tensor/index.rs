//! Python's indexing, `x[0]`, `x[:, 1:3]`, `x[..., -1]`, `x[::2]`, `x[None]`, `x[idx]`,
//! `x[mask]`, as `x.i(0)`, `x.i((.., 1..3))`, `x.i((Ellipsis, -1))`, `x.i((0..).step_by(2))`,
//! `x.i(NewAxis)`, `x.i(&idx)`, `x.i(&mask)`. Integers, ranges, `Ellipsis` and `NewAxis` give a
//! view, as in torch (a write into it shows in `x`); a tensor index gives a copy, as torch's
//! advanced indexing does.

use super::shape::resolve_dim;
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
    )*};
}
int_index!(i32, i64, isize, usize);

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

impl Tensor {
    /// Python-style indexing, as torch's `x[...]`: `x.i(0)` is `x[0]`, `x.i((.., 1..3))` is
    /// `x[:, 1:3]`, `x.i((Ellipsis, -1))` is `x[..., -1]`, `x.i((0..).step_by(2))` is `x[::2]`,
    /// `x.i(NewAxis)` is `x[None]`, `x.i(&idx)` picks positions, `x.i(&mask)` the elements where
    /// a bool mask is true. Integers, ranges, `Ellipsis` and `NewAxis` give a view (a write into
    /// it shows in `x`, as `x[:, 0] = 1` does); a tensor gives a copy. One tensor per index.
    pub fn i(&self, index: impl IndexArg) -> Result<Tensor> {
        let entries = index.entries();
        let consumes = |e: &Idx| match e {
            Idx::Ellipsis | Idx::NewAxis => 0,
            Idx::Tensor(t) if t.dtype() == DType::Bool => t.rank().max(1),
            _ => 1,
        };
        let used: usize = entries.iter().map(consumes).sum();
        let ellipses = entries
            .iter()
            .filter(|e| matches!(e, Idx::Ellipsis))
            .count();
        let tensors = entries
            .iter()
            .filter(|e| matches!(e, Idx::Tensor(_)))
            .count();
        if ellipses > 1 || tensors > 1 || used > self.rank() {
            return Err(Error::BadShape(format!(
                "index: {} for a tensor of shape {:?}",
                if ellipses > 1 {
                    "more than one Ellipsis".to_string()
                } else if tensors > 1 {
                    "more than one tensor in one index (index one dimension at a time)".into()
                } else {
                    format!("{used} indexed dimensions")
                },
                self.shape()
            )));
        }
        let mut t = self.clone();
        let mut d = 0; // the dimension of `t` the next entry applies to
        for e in entries {
            match e {
                Idx::At(i) => {
                    t = t.select(d as isize, i as isize).map_err(|_| {
                        Error::BadShape(format!(
                            "index {i} is out of range for dimension {d} of size {} (shape {:?})",
                            t.shape()[d],
                            self.shape()
                        ))
                    })?
                }
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
                    let (out, taken) = t.index_by_tensor(d, &ix)?;
                    t = out;
                    d += taken;
                }
            }
        }
        Ok(t)
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
        let (out, _) = self.flatten()?.index_by_tensor(0, index)?;
        Ok(out)
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

    /// `t[.., ix]` at dimension `d`: positions (int tensor, any shape) or a mask over the
    /// dimensions from `d` (bool); the result, and how many dimensions of it the index made.
    fn index_by_tensor(&self, d: usize, ix: &Tensor) -> Result<(Tensor, usize)> {
        self.same_device(ix)?;
        if ix.dtype() == DType::Bool {
            let k = ix.rank().max(1);
            let covered = &self.shape()[d..d + k.min(self.rank() - d)];
            if ix.rank() == 0 || covered != ix.shape() {
                return Err(Error::BadShape(format!(
                    "index: a mask of shape {:?} does not match dimensions {d}.. of shape {:?}",
                    ix.shape(),
                    self.shape()
                )));
            }
            // The masked dimensions as one, then the flat positions of the trues.
            let mut flat = self.shape()[..d].to_vec();
            flat.push(covered.iter().product());
            flat.extend_from_slice(&self.shape()[d + k..]);
            let positions = ix.flatten()?.nonzero()?.flatten()?;
            let out = self.reshape(flat)?.index_select(d as isize, &positions)?;
            return Ok((out, 1));
        }
        if !ix.dtype().is_int() {
            return Err(Error::Invalid(format!(
                "index: a tensor index must hold integers (positions) or bools (a mask), got {}",
                ix.dtype()
            )));
        }
        // Negative positions count from the end, as in torch.
        let size = self.shape()[d] as i64;
        let pos = ix.to_dtype(DType::I64)?.to_vec::<i64>()?;
        if let Some(&p) = pos.iter().find(|&&p| p < -size || p >= size) {
            return Err(Error::BadShape(format!(
                "index {p} is out of range for dimension {d} of size {size} (shape {:?})",
                self.shape()
            )));
        }
        let pos: Vec<i64> = pos
            .iter()
            .map(|&p| if p < 0 { p + size } else { p })
            .collect();
        let n = pos.len();
        let flat = Tensor::from_vec(pos, n, Device::Cpu)?.to(self.device())?;
        let out = self.index_select(d as isize, &flat)?;
        let mut dims = self.shape()[..d].to_vec();
        dims.extend_from_slice(ix.shape());
        dims.extend_from_slice(&self.shape()[d + 1..]);
        Ok((out.reshape(dims)?, ix.rank()))
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
