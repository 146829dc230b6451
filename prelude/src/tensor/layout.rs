//! Where a tensor's elements sit in its storage: `Layout { dims, strides, offset }`, as
//! torch's size / stride / storage_offset (and candle's `Layout`). Element `(i0, i1, ...)` is
//! storage element `offset + i0 * strides[0] + i1 * strides[1] + ...`.
//!
//! Every view (transpose, permute, narrow, select, expand, unsqueeze, squeeze, a reshape that
//! strides allow) is a new `Layout` over the same storage; nothing here touches data. Strides
//! are never negative (no `flip` views); an expanded dimension has stride 0.

use super::shape::{resolve_dim, strides as contiguous_strides};
use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    dims: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

impl Layout {
    /// Row-major over `dims`, from storage element 0.
    pub fn contiguous(dims: Vec<usize>) -> Layout {
        Layout {
            strides: contiguous_strides(&dims),
            dims,
            offset: 0,
        }
    }

    pub fn new(dims: Vec<usize>, strides: Vec<usize>, offset: usize) -> Layout {
        debug_assert_eq!(dims.len(), strides.len());
        Layout {
            dims,
            strides,
            offset,
        }
    }

    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }
    pub fn offset(&self) -> usize {
        self.offset
    }
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }

    /// Row-major without gaps (torch's `is_contiguous`: the stride of a size-1 dimension does
    /// not matter, and an empty tensor is contiguous).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1;
        for (&d, &s) in self.dims.iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    /// One past the largest storage element this layout reaches: the storage must be at least
    /// this long. An empty layout reaches none, whatever its offset (a narrow of an empty
    /// tensor may keep an offset past its storage), so its end is 0.
    pub fn end(&self) -> usize {
        if self.numel() == 0 {
            return 0;
        }
        self.offset
            + self
                .dims
                .iter()
                .zip(&self.strides)
                .map(|(&d, &s)| (d - 1) * s)
                .sum::<usize>()
            + 1
    }

    /// True when two index tuples reach the same storage element (a stride-0 dimension of
    /// size > 1): such a view cannot be written to, as in torch.
    pub fn has_overlap(&self) -> bool {
        self.numel() > 1
            && self
                .dims
                .iter()
                .zip(&self.strides)
                .any(|(&d, &s)| d > 1 && s == 0)
    }

    /// Storage positions of the elements in row-major order (the odometer every strided CPU
    /// loop uses).
    pub fn offsets(&self) -> StridedIndex<'_> {
        StridedIndex {
            layout: self,
            idx: vec![0; self.dims.len()],
            at: self.offset,
            left: self.numel(),
        }
    }

    pub fn transpose(&self, d0: usize, d1: usize) -> Layout {
        let mut l = self.clone();
        l.dims.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }

    /// `perm[i]` is the old dimension that becomes dimension `i`.
    pub fn permute(&self, perm: &[usize]) -> Result<Layout> {
        let rank = self.dims.len();
        let mut seen = vec![false; rank];
        let valid = perm.len() == rank
            && perm.iter().all(|&p| {
                let ok = p < rank && !seen[p];
                if ok {
                    seen[p] = true;
                }
                ok
            });
        if !valid {
            return Err(Error::BadShape(format!(
                "permute: {perm:?} is not a permutation of the {rank} dimensions of shape {:?}",
                self.dims
            )));
        }
        Ok(Layout {
            dims: perm.iter().map(|&p| self.dims[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        })
    }

    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Layout> {
        let size = self.dims[dim];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::BadShape(format!(
                "narrow: start {start} + length {len} exceeds size {size} of dimension {dim} \
                 (shape {:?})",
                self.dims
            )));
        }
        let mut l = self.clone();
        l.dims[dim] = len;
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        Ok(l)
    }

    /// Every `step`-th element of dimension `dim` from its first (Python's `::step`).
    pub fn step(&self, dim: usize, step: usize) -> Layout {
        let mut l = self.clone();
        l.dims[dim] = self.dims[dim].div_ceil(step);
        l.strides[dim] *= step;
        l
    }

    /// Dimension `dim` fixed at `index`, and removed.
    pub fn select(&self, dim: usize, index: usize) -> Result<Layout> {
        let size = self.dims[dim];
        if index >= size {
            return Err(Error::BadShape(format!(
                "select: index {index} is out of range for dimension {dim} of size {size} \
                 (shape {:?})",
                self.dims
            )));
        }
        let mut l = self.clone();
        l.offset += index * self.strides[dim];
        l.dims.remove(dim);
        l.strides.remove(dim);
        Ok(l)
    }

    /// numpy's broadcast to `dims`: new leading dimensions and size-1 dimensions get
    /// stride 0.
    pub fn broadcast_to(&self, op: &str, dims: &[usize]) -> Result<Layout> {
        let bad = || {
            Error::BadShape(format!(
                "{op}: shape {:?} cannot be broadcast to {dims:?}",
                self.dims
            ))
        };
        if dims.len() < self.dims.len() {
            return Err(bad());
        }
        super::host_mem::checked_numel(op, dims)?;
        let pad = dims.len() - self.dims.len();
        let mut strides = vec![0; dims.len()];
        for (i, &d) in dims.iter().enumerate().skip(pad) {
            let (od, os) = (self.dims[i - pad], self.strides[i - pad]);
            strides[i] = if od == d {
                os
            } else if od == 1 {
                0
            } else {
                return Err(bad());
            };
        }
        Ok(Layout {
            dims: dims.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// A new size-1 dimension at `dim` (0..=rank).
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        // Any stride works for a size-1 dimension; this one keeps a contiguous layout
        // contiguous in every sense.
        let s = self
            .strides
            .get(dim)
            .map_or(1, |&s| s * self.dims[dim].max(1));
        l.dims.insert(dim, 1);
        l.strides.insert(dim, s);
        l
    }

    /// The same elements with dimensions `dims` without moving data, or `None` when the
    /// strides cannot express it (torch's `computeStride`: each run of merged dimensions must
    /// be contiguous within itself).
    pub fn view(&self, dims: &[usize]) -> Option<Layout> {
        let numel: usize = dims.iter().product();
        debug_assert_eq!(numel, self.numel());
        if self.is_contiguous() || numel == 0 {
            return Some(Layout {
                dims: dims.to_vec(),
                strides: contiguous_strides(dims),
                offset: self.offset,
            });
        }
        let (old, os) = (&self.dims, &self.strides);
        let mut new_strides = vec![0usize; dims.len()];
        let mut view_d = dims.len() as isize - 1;
        let mut chunk_base = *os.last()?;
        let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
        for td in (0..old.len()).rev() {
            tensor_numel *= old[td];
            if td == 0 || (old[td - 1] != 1 && os[td - 1] != tensor_numel * chunk_base) {
                while view_d >= 0 && (view_numel < tensor_numel || dims[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base;
                    view_numel *= dims[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if td > 0 {
                    chunk_base = os[td - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            dims: dims.to_vec(),
            strides: new_strides,
            offset: self.offset,
        })
    }
}

/// Resolves `dim` for ops that insert a dimension (0..=rank, negative from the end).
pub(crate) fn resolve_insert_dim(dim: isize, rank: usize) -> Result<usize> {
    resolve_dim(dim, rank + 1)
}

/// Iterator over the storage positions of a layout's elements, in row-major order.
pub(crate) struct StridedIndex<'a> {
    layout: &'a Layout,
    idx: Vec<usize>,
    at: usize,
    left: usize,
}

impl Iterator for StridedIndex<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let here = self.at;
        let (dims, strides) = (&self.layout.dims, &self.layout.strides);
        for d in (0..dims.len()).rev() {
            self.idx[d] += 1;
            self.at += strides[d];
            if self.idx[d] < dims[d] {
                break;
            }
            self.at -= strides[d] * dims[d];
            self.idx[d] = 0;
        }
        Some(here)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for StridedIndex<'_> {}

#[cfg(test)]
mod tests {
    use super::Layout;

    #[test]
    fn views_of_a_transpose_follow_torch() {
        let l = Layout::contiguous(vec![2, 3, 4]);
        let t = l.transpose(1, 2);
        assert!(!t.is_contiguous());
        // A transposed tensor cannot merge its last two dims, but can split the first.
        assert!(t.view(&[2, 12]).is_none());
        let v = t.view(&[1, 2, 4, 3]).unwrap();
        assert_eq!(v.strides(), &[24, 12, 1, 4]);
        assert_eq!(
            Layout::contiguous(vec![6]).view(&[2, 3]).unwrap().strides(),
            &[3, 1]
        );
        let offs: Vec<usize> = Layout::contiguous(vec![2, 2])
            .transpose(0, 1)
            .offsets()
            .collect();
        assert_eq!(offs, vec![0, 2, 1, 3]);
    }

    #[test]
    fn end_and_overlap() {
        let l = Layout::contiguous(vec![3, 4]).narrow(1, 1, 2).unwrap();
        assert_eq!((l.offset(), l.end()), (1, 11));
        // An empty narrow keeps its offset but reaches no element.
        let e = Layout::contiguous(vec![0, 6]).narrow(1, 3, 3).unwrap();
        assert_eq!((e.offset(), e.end()), (3, 0));
        assert!(Layout::contiguous(vec![1, 4])
            .broadcast_to("expand", &[3, 4])
            .unwrap()
            .has_overlap());
    }
}
