//! Views (new layouts over the same storage), the in-place writes that go through them, and
//! the copying index ops (`index_select`, `gather`, `cat`, `stack`).
//!
//! Views, with torch's names and rules:
//!
//! | method | result |
//! |---|---|
//! | `transpose(d0, d1)`, `t()`, `permute(&[..])` | dimensions reordered |
//! | `narrow(dim, start, len)`, `slice(dim, a..b)` | a range of one dimension (`slice` takes any Rust range: `1..3`, `..2`, `1..`, `..`) |
//! | `select(dim, i)` | one index of a dimension, which disappears (torch's `x[:, i]`) |
//! | `expand(shape)` / `broadcast_to(shape)` | size-1 and new leading dimensions repeated (stride 0) |
//! | `unsqueeze(dim)`, `squeeze(dim)`, `squeeze_all()` | size-1 dimensions added or removed |
//! | `view(shape)` | another shape over the same elements; an error when the strides cannot express it |
//! | `reshape(shape)`, `flatten()` | a view when possible, else a contiguous copy |
//!
//! `contiguous()` returns the tensor itself when it is already contiguous, else a copy;
//! `is_contiguous()`, `stride()` and `storage_offset()` are torch's. Dimension arguments may
//! be negative (counted from the end).

use super::dtype::{promote, DType};
use super::layout::{resolve_insert_dim, Layout};
use super::shape::{resolve_dim, IntoViewShape, Shape};
use super::{Operand, Tensor};
use crate::autograd::rules;
use crate::error::{Error, Result};
use std::borrow::Borrow;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// torch's `can_cast` for in-place results: no float into an integer or bool tensor, no
/// integer into a bool one.
fn can_cast(from: DType, to: DType) -> bool {
    let rank = |d: DType| {
        if d.is_float() {
            2
        } else if d.is_int() {
            1
        } else {
            0
        }
    };
    rank(from) <= rank(to)
}

impl Tensor {
    /// torch's `is_contiguous()`: row-major without gaps (a view may still start at an
    /// offset into its storage).
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Elements to step in the storage per index of each dimension (torch's `stride()`).
    pub fn stride(&self) -> Vec<usize> {
        self.layout.strides().to_vec()
    }

    /// Where the first element sits in the storage (torch's `storage_offset()`).
    pub fn storage_offset(&self) -> usize {
        self.layout.offset()
    }

    /// True when both tensors see one storage (a view and its base, clones).
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// This tensor when it is contiguous, else a contiguous copy (torch's `contiguous()`).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let storage = self.read().copy_layout(&self.layout)?;
        let out = Tensor::from_storage(storage, self.shape().to_vec());
        Ok(rules::identity("contiguous", self, out))
    }

    /// A copy with storage of its own (torch's `clone()`; Rust's `clone()` shares).
    pub fn deep_clone(&self) -> Result<Tensor> {
        let storage = self.read().copy_layout(&self.layout)?;
        let out = Tensor::from_storage(storage, self.shape().to_vec());
        Ok(rules::identity("clone", self, out))
    }

    fn resolve(&self, op: &str, dim: isize) -> Result<usize> {
        resolve_dim(dim, self.rank()).map_err(|_| {
            Error::Invalid(format!(
                "{op}: dimension {dim} is out of range for shape {:?} (rank {})",
                self.shape(),
                self.rank()
            ))
        })
    }

    /// Swaps two dimensions (a view).
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        let (d0, d1) = (
            self.resolve("transpose", dim0)?,
            self.resolve("transpose", dim1)?,
        );
        let out = self.view_of(self.layout.transpose(d0, d1));
        Ok(rules::transpose(self, dim0, dim1, out))
    }

    /// The transpose of a 2-D tensor (a 1-D or 0-D tensor is returned as is, like torch).
    pub fn t(&self) -> Result<Tensor> {
        match self.rank() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            r => Err(Error::BadShape(format!(
                "t() expects a tensor with at most 2 dimensions, got {r} (shape {:?})",
                self.shape()
            ))),
        }
    }

    /// Dimensions reordered: dimension `i` of the result is dimension `dims[i]` of this one.
    pub fn permute(&self, dims: &[isize]) -> Result<Tensor> {
        let rank = self.rank();
        let perm: Vec<usize> = dims
            .iter()
            .map(|&d| {
                resolve_dim(d, rank).map_err(|_| {
                    Error::BadShape(format!(
                        "permute: {dims:?} is not a permutation of the {rank} dimensions of \
                         shape {:?}",
                        self.shape()
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let out = self.view_of(self.layout.permute(&perm)?);
        let dims = dims.to_vec();
        Ok(rules::view("permute", self, out, move |z| z.permute(&dims)))
    }

    /// Elements `start .. start + len` of dimension `dim` (a view).
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<Tensor> {
        let d = self.resolve("narrow", dim)?;
        let out = self.view_of(self.layout.narrow(d, start, len)?);
        Ok(rules::view("narrow", self, out, move |z| {
            z.narrow(d as isize, start, len)
        }))
    }

    /// A range of dimension `dim`, as Python's `x[:, 1:3]` is `x.slice(1, 1..3)`; any Rust
    /// range works (`..2`, `1..`, `..`, `1..=2`). A view.
    pub fn slice(&self, dim: isize, range: impl RangeBounds<usize>) -> Result<Tensor> {
        let d = self.resolve("slice", dim)?;
        let size = self.shape()[d];
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e + 1,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => size,
        };
        if start > end || end > size {
            return Err(Error::BadShape(format!(
                "slice: range {start}..{end} does not fit dimension {d} of size {size} \
                 (shape {:?})",
                self.shape()
            )));
        }
        self.narrow(d as isize, start, end - start)
    }

    /// Index `index` of dimension `dim`, which disappears (torch's `select`, `x[i]` for
    /// dim 0). Negative indices count from the end. A view.
    pub fn select(&self, dim: isize, index: isize) -> Result<Tensor> {
        let d = self.resolve("select", dim)?;
        let size = self.shape()[d] as isize;
        let i = if index < 0 { index + size } else { index };
        if i < 0 || i >= size {
            return Err(Error::BadShape(format!(
                "select: index {index} is out of range for dimension {d} of size {size} \
                 (shape {:?})",
                self.shape()
            )));
        }
        let out = self.view_of(self.layout.select(d, i as usize)?);
        Ok(rules::view("select", self, out, move |z| {
            z.select(d as isize, i)
        }))
    }

    /// Size-1 dimensions (and new leading ones) repeated to `shape` without copying
    /// (stride 0), numpy's broadcasting rule.
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let dims = shape.into().0;
        let out = self.view_of(self.layout.broadcast_to("broadcast_to", &dims)?);
        Ok(rules::identity("expand", self, out))
    }

    /// torch's `expand` (sizes given in full; the same as [`Tensor::broadcast_to`]).
    pub fn expand(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let dims = shape.into().0;
        let out = self.view_of(self.layout.broadcast_to("expand", &dims)?);
        Ok(rules::identity("expand", self, out))
    }

    /// A size-1 dimension inserted at `dim` (0 ..= rank; negative from the end).
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_insert_dim(dim, self.rank()).map_err(|_| {
            Error::Invalid(format!(
                "unsqueeze: dimension {dim} is out of range for shape {:?} (a new dimension \
                 goes at 0..={})",
                self.shape(),
                self.rank()
            ))
        })?;
        Ok(rules::reshape(self, self.view_of(self.layout.unsqueeze(d))))
    }

    /// Dimension `dim` removed if its size is 1, else the tensor unchanged (torch's rule).
    pub fn squeeze(&self, dim: isize) -> Result<Tensor> {
        let d = self.resolve("squeeze", dim)?;
        if self.shape()[d] != 1 {
            return Ok(self.clone());
        }
        Ok(rules::reshape(
            self,
            self.view_of(self.layout.select(d, 0)?),
        ))
    }

    /// Every size-1 dimension removed (torch's `squeeze()`).
    pub fn squeeze_all(&self) -> Tensor {
        let mut l = self.layout.clone();
        while let Some(d) = l.dims().iter().position(|&s| s == 1) {
            l = l.select(d, 0).expect("a size-1 dimension has index 0");
        }
        rules::reshape(self, self.view_of(l))
    }

    /// The same elements in shape `shape`, always sharing storage (torch's `view`): an
    /// error when the strides cannot express it (after a transpose, say); use `reshape`,
    /// or `contiguous()` first. One size may be -1, inferred from the element count
    /// (`t.view((n, -1))`; see [`ViewShape`](super::ViewShape)).
    pub fn view(&self, shape: impl IntoViewShape) -> Result<Tensor> {
        let dims = shape.into_view_shape().resolve("view", self.shape())?;
        match self.layout.view(&dims) {
            Some(l) => Ok(rules::reshape(self, self.view_of(l))),
            None => Err(Error::BadShape(format!(
                "view: shape {:?} with strides {:?} cannot be seen as {dims:?} without a \
                 copy; use .reshape(..) or .contiguous()? first",
                self.shape(),
                self.layout.strides()
            ))),
        }
    }

    /// The same elements in shape `shape`: a view when the strides allow it (always for a
    /// contiguous tensor), else a contiguous copy, as torch's `reshape`. One size may be
    /// -1, inferred from the element count (`t.reshape(-1)`, `t.reshape([-1, 4])`).
    pub fn reshape(&self, shape: impl IntoViewShape) -> Result<Tensor> {
        let dims = shape.into_view_shape().resolve("reshape", self.shape())?;
        match self.layout.view(&dims) {
            Some(l) => Ok(rules::reshape(self, self.view_of(l))),
            None => {
                let c = self.contiguous()?;
                Ok(rules::reshape(self, c.view_of(Layout::contiguous(dims))))
            }
        }
    }

    /// A 1-D tensor of all elements (a view when possible, as `reshape`).
    pub fn flatten(&self) -> Result<Tensor> {
        self.reshape(vec![self.numel()])
    }

    /// Dimensions `start_dim` to the last merged into one (torch's `flatten(start_dim)`;
    /// `x.flatten_from(1)` keeps the batch dimension). A view when possible.
    pub fn flatten_from(&self, start_dim: isize) -> Result<Tensor> {
        self.flatten_dims(start_dim, -1)
    }

    /// Dimensions `start_dim` to `end_dim` (both included) merged into one, as torch's
    /// `flatten(start_dim, end_dim)`. A 0-d tensor becomes 1-D, as in torch.
    pub fn flatten_dims(&self, start_dim: isize, end_dim: isize) -> Result<Tensor> {
        if self.rank() == 0 {
            return self.reshape([1]);
        }
        let (a, b) = (
            self.resolve("flatten", start_dim)?,
            self.resolve("flatten", end_dim)?,
        );
        if a > b {
            return Err(Error::Invalid(format!(
                "flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {:?})",
                self.shape()
            )));
        }
        let mut dims = self.shape()[..a].to_vec();
        dims.push(self.shape()[a..=b].iter().product());
        dims.extend_from_slice(&self.shape()[b + 1..]);
        self.reshape(dims)
    }

    /// This tensor broadcast to `other`'s shape (torch's `expand_as`), a view.
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.expand(other.shape().to_vec())
    }

    /// This tensor in `other`'s shape (torch's `reshape_as`; `view_as` is the same here).
    pub fn reshape_as(&self, other: &Tensor) -> Result<Tensor> {
        self.reshape(other.shape().to_vec())
    }

    /// torch's `view_as`: [`Tensor::reshape_as`].
    pub fn view_as(&self, other: &Tensor) -> Result<Tensor> {
        self.reshape_as(other)
    }

    /// This tensor converted to `other`'s dtype (torch's `type_as`).
    pub fn type_as(&self, other: &Tensor) -> Result<Tensor> {
        self.to_dtype(other.dtype())
    }

    // ---- in-place writes --------------------------------------------------------------

    /// Copies `src` into this tensor's elements, in place (torch's `copy_`): `src` is
    /// converted to this dtype and device and broadcast to this shape. Writes through a
    /// view reach every tensor sharing the storage.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        self.check_inplace_autograd()?;
        if self.layout.has_overlap() {
            return Err(Error::Invalid(format!(
                "copy_: this tensor (shape {:?}, strides {:?}) is an expanded view in which \
                 several elements share one memory location; write into a .contiguous()? \
                 copy instead",
                self.shape(),
                self.layout.strides()
            )));
        }
        let src = src.to_dtype(self.dtype())?.to_device(self.device())?;
        let src = src
            .view_of(src.layout.broadcast_to("copy_", self.shape())?)
            .dense()?
            .into_owned();
        // A source that shares this storage would be read while it is written (and its
        // read lock would wait for our write lock): copy it out first.
        let src = if src.shares_storage(self) {
            src.deep_clone()?
        } else {
            src
        };
        let data = src.read();
        self.write().write_layout(&self.layout, &data)
    }

    /// torch's rule for in-place writes while grad mode is on: not into a leaf that requires
    /// grad (a parameter changed behind autograd's back; an optimiser's update runs under
    /// `no_grad`), and not into a tensor computed by a recorded op (torch records the write;
    /// this engine cannot, so the gradient would silently be that of the old value).
    fn check_inplace_autograd(&self) -> Result<()> {
        let Some(meta) = self.grad_meta() else {
            return Ok(());
        };
        if !crate::autograd::is_grad_enabled() {
            return Ok(());
        }
        Err(Error::Invalid(match meta.op_name() {
            None => format!(
                "a leaf tensor that requires grad (shape {:?}) is being used in an in-place \
                 operation: write under no_grad(|| ...) (as an optimiser's step does), or \
                 into a .detach()ed tensor",
                self.shape()
            ),
            Some(op) => format!(
                "in-place operation on a tensor computed by {op} (shape {:?}), which \
                 backward needs as it was: in-place writes are not recorded for backward; \
                 use the out-of-place op (x = x.add(..)?) or write into a .detach()ed tensor",
                self.shape()
            ),
        }))
    }

    /// Sets every element to `value`, in place: a float or a whole number, converted to the
    /// dtype under torch's overflow check (`fill_(-1)` into uint8 is 255, `fill_(-1.0)` an
    /// error, as in torch; see [`super::Number`]).
    pub fn fill_(&self, value: impl Into<super::Number>) -> Result<()> {
        let dev = crate::device::Device::Cpu;
        self.copy_(&super::dtype::fill_scalar(
            "fill_",
            value,
            self.dtype(),
            dev,
        )?)
    }

    pub(crate) fn inplace(&self, op: &str, result: Result<Tensor>) -> Result<()> {
        let r = result?;
        if r.shape() != self.shape() {
            return Err(Error::BadShape(format!(
                "{op}: output with shape {:?} doesn't match the broadcast shape {:?}",
                self.shape(),
                r.shape()
            )));
        }
        if !can_cast(r.dtype(), self.dtype()) {
            return Err(Error::Invalid(format!(
                "{op}: result type {} can't be cast to the desired output type {} \
                 (shape {:?})",
                r.dtype(),
                self.dtype(),
                self.shape()
            )));
        }
        self.copy_(&r)
    }

    /// `self += rhs` in place (a tensor broadcasts to this shape, or a scalar).
    pub fn add_<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("add_", self.add(rhs))
    }
    pub fn sub_<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("sub_", self.sub(rhs))
    }
    pub fn mul_<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("mul_", self.mul(rhs))
    }
    pub fn div_<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<()> {
        self.inplace("div_", self.div(rhs))
    }

    // ---- index ops (copies) -------------------------------------------------------------

    /// The indices as host i64, each checked against `size`.
    fn index_values(&self, op: &str, index: &Tensor, size: usize, dim: usize) -> Result<Vec<i64>> {
        if !matches!(index.dtype(), DType::I64 | DType::I32) {
            return Err(Error::Invalid(format!(
                "{op}: the index must be an int64 or int32 tensor, got {} (shape {:?})",
                index.dtype(),
                index.shape()
            )));
        }
        // Bounds are checked on the host; a CUDA index tensor is read back for that (a
        // synchronisation), which is fine for index tensors' sizes.
        let idx = index.to_dtype(DType::I64)?.to_vec::<i64>()?;
        if let Some(&bad) = idx.iter().find(|&&i| i < 0 || i as usize >= size) {
            return Err(Error::BadShape(format!(
                "{op}: index {bad} is out of range for dimension {dim} of size {size} \
                 (shape {:?})",
                self.shape()
            )));
        }
        Ok(idx)
    }

    /// The entries of `index` (a 1-D int64/int32 tensor) along `dim`, in its order
    /// (torch's `index_select`; a copy). The index may live on the CPU for a CUDA tensor.
    pub fn index_select(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        let d = self.resolve("index_select", dim)?;
        if index.rank() > 1 {
            return Err(Error::BadShape(format!(
                "index_select: the index must be 1-D, got shape {:?} (source shape {:?})",
                index.shape(),
                self.shape()
            )));
        }
        let idx = self.index_values("index_select", index, self.shape()[d], d)?;
        let mut dims = self.shape().to_vec();
        dims[d] = idx.len();
        let mut idx_strides = vec![0; dims.len()];
        idx_strides[d] = 1;
        let storage = self
            .read()
            .gather(&self.layout, d, &idx, &idx_strides, &dims)?;
        let out = Tensor::from_storage(storage, dims);
        Ok(rules::index_select(self, d, idx, out))
    }

    /// The elements in reverse order along each of `dims` (negative counts from the end),
    /// as torch's `flip`: a new contiguous tensor, since strides here are never negative
    /// (torch copies too). `flip(&[])` is a plain copy.
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        let mut flip = vec![false; self.rank()];
        for &dim in dims {
            let d = self.resolve("flip", dim)?;
            if flip[d] {
                return Err(Error::Invalid(format!(
                    "flip: dimension {d} appears more than once in dims {dims:?} (shape {:?})",
                    self.shape()
                )));
            }
            flip[d] = true;
        }
        let storage = self.read().flip(&self.layout, &flip)?;
        let out = Tensor::from_storage(storage, self.shape().to_vec());
        Ok(rules::flip(self, dims.to_vec(), out))
    }

    /// torch's `gather`: `out[i][j] = self[index[i][j]][j]` for `dim = 0` (and so on);
    /// `index` has this rank and no dimension larger than this tensor's outside `dim`;
    /// the result has the index's shape.
    pub fn gather(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        let d = self.resolve("gather", dim)?;
        let fits = index.rank() == self.rank()
            && (0..self.rank()).all(|i| i == d || index.shape()[i] <= self.shape()[i]);
        if !fits {
            return Err(Error::BadShape(format!(
                "gather: index of shape {:?} does not fit source of shape {:?} along \
                 dimension {d} (same rank, no larger size outside dimension {d})",
                index.shape(),
                self.shape()
            )));
        }
        let idx = self.index_values("gather", index, self.shape()[d], d)?;
        let dims = index.shape().to_vec();
        let idx_strides = Layout::contiguous(dims.clone()).strides().to_vec();
        let storage = self
            .read()
            .gather(&self.layout, d, &idx, &idx_strides, &dims)?;
        let out = Tensor::from_storage(storage, dims);
        Ok(rules::gather(self, d, &idx, index.shape(), out))
    }

    /// The tensors joined along `dim` (torch's `cat`): every other dimension and the device
    /// must agree; the dtypes promote as for `add`. Takes `&[Tensor]` or `&[&Tensor]`.
    pub fn cat<T: Borrow<Tensor>>(tensors: &[T], dim: isize) -> Result<Tensor> {
        let first = match tensors.first() {
            Some(t) => t.borrow(),
            None => return Err(Error::Invalid("cat: needs at least one tensor".into())),
        };
        let d = first.resolve("cat", dim)?;
        let shapes: Vec<Vec<usize>> = tensors
            .iter()
            .map(|t| t.borrow().shape().to_vec())
            .collect();
        for t in tensors.iter().map(Borrow::borrow) {
            let same_rest = t.rank() == first.rank()
                && (0..t.rank()).all(|i| i == d || t.shape()[i] == first.shape()[i]);
            if !same_rest {
                return Err(Error::BadShape(format!(
                    "cat: shapes {shapes:?} differ outside dimension {d}"
                )));
            }
            if t.device() != first.device() {
                return Err(Error::Invalid(format!(
                    "cat: all tensors need one device, got {} and {} (shapes {shapes:?})",
                    first.device(),
                    t.device()
                )));
            }
        }
        // Mixed dtypes promote as torch's `cat` does (an int64 and a float32 part give
        // float32); the casts are recorded, so each part's gradient comes back in its dtype.
        let dtype = tensors
            .iter()
            .map(|t| t.borrow().dtype())
            .reduce(promote)
            .unwrap_or(first.dtype());
        if tensors.iter().any(|t| t.borrow().dtype() != dtype) {
            let parts: Vec<Tensor> = tensors
                .iter()
                .map(|t| t.borrow().to_dtype(dtype))
                .collect::<Result<_>>()?;
            return Tensor::cat(&parts, dim);
        }
        let mut dims = first.shape().to_vec();
        dims[d] = shapes.iter().map(|s| s[d]).sum();
        let out = Tensor::zeros_dtype(dims, first.dtype(), first.device())?;
        let mut at = 0;
        for t in tensors.iter().map(Borrow::borrow) {
            let len = t.shape()[d];
            // The copies themselves are not recorded: `rules::cat` below is the op's rule.
            crate::autograd::no_grad(|| out.narrow(d as isize, at, len)?.copy_(t))?;
            at += len;
        }
        let xs: Vec<&Tensor> = tensors.iter().map(Borrow::borrow).collect();
        let lens = xs.iter().map(|t| t.shape()[d]).collect();
        Ok(rules::cat(&xs, d, lens, out))
    }

    /// The tensors (all of one shape) joined along a new dimension `dim` (torch's `stack`).
    pub fn stack<T: Borrow<Tensor>>(tensors: &[T], dim: isize) -> Result<Tensor> {
        let first = match tensors.first() {
            Some(t) => t.borrow(),
            None => return Err(Error::Invalid("stack: needs at least one tensor".into())),
        };
        if let Some(t) = tensors
            .iter()
            .map(Borrow::borrow)
            .find(|t| t.shape() != first.shape())
        {
            return Err(Error::BadShape(format!(
                "stack: every tensor needs one shape, got {:?} and {:?}",
                first.shape(),
                t.shape()
            )));
        }
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| t.borrow().unsqueeze(dim))
            .collect::<Result<_>>()?;
        let d = resolve_insert_dim(dim, first.rank())?;
        Tensor::cat(&parts, d as isize)
    }
}
