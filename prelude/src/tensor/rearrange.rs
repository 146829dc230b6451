//! torch's ways of moving elements around, built from views, `cat` and `index_select` (so
//! each runs on every device and has its gradient from theirs): `roll`, `diag`, `trace`,
//! `movedim`, `swapaxes`, `unflatten`, `tile`, `repeat_interleave`, `unbind` and `meshgrid`.

use super::shape::resolve_dim;
use super::{DType, Tensor};
use crate::autograd::relabel;
use crate::device::Device;
use crate::error::{Error, Result};

impl Tensor {
    /// The elements shifted by `shifts[i]` places along `dims[i]`, those pushed off one end
    /// coming back at the other, as torch's `roll` (a copy). With `dims` empty, the tensor
    /// is rolled as if flattened, by one shift.
    pub fn roll(&self, shifts: &[isize], dims: &[isize]) -> Result<Tensor> {
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::Invalid(format!(
                    "roll: without dims, give one shift (got {})",
                    shifts.len()
                )));
            }
            return self
                .flatten()?
                .roll(shifts, &[0])?
                .reshape(self.shape().to_vec());
        }
        if shifts.len() != dims.len() {
            return Err(Error::Invalid(format!(
                "roll: {} shifts for {} dims; give one shift per dimension",
                shifts.len(),
                dims.len()
            )));
        }
        let mut t = self.clone();
        for (&shift, &dim) in shifts.iter().zip(dims) {
            let d = resolve_dim(dim, self.rank().max(1))?;
            let len = if self.rank() == 0 { 1 } else { self.shape()[d] };
            if len == 0 {
                continue;
            }
            let s = shift.rem_euclid(len as isize) as usize;
            if s == 0 {
                continue;
            }
            // The last s elements come first.
            let (d, head) = (d as isize, len - s);
            t = Tensor::cat(&[t.narrow(d, head, s)?, t.narrow(d, 0, head)?], d)?;
        }
        if t.shares_storage(self) {
            // Nothing moved: still a copy, as torch's.
            return self.deep_clone();
        }
        Ok(t)
    }

    /// For a vector: a square matrix with it on diagonal `diagonal` (0 the main one, above
    /// it positive, below negative) and zeros elsewhere. For a matrix: that diagonal as a
    /// vector. As torch's `diag`.
    pub fn diag(&self, diagonal: i64) -> Result<Tensor> {
        let k = diagonal.unsigned_abs() as usize;
        match self.rank() {
            1 => {
                let n = self.shape()[0];
                let size = n + k;
                // Every output position reads one element of [v, 0]: its own diagonal
                // element, or the zero appended at index n.
                let index: Vec<i64> = (0..size * size)
                    .map(|p| {
                        let (i, j) = ((p / size) as i64, (p % size) as i64);
                        if j - i == diagonal {
                            i.min(j)
                        } else {
                            n as i64
                        }
                    })
                    .collect();
                let zero = Tensor::zeros_dtype(1, self.dtype(), self.device())?;
                let padded = Tensor::cat(&[self.clone(), zero], 0)?;
                let index = Tensor::from_vec(index, size * size, Device::Cpu)?;
                padded.index_select(0, &index)?.reshape([size, size])
            }
            2 => self.diagonal(diagonal, 0, 1),
            r => Err(Error::BadShape(format!(
                "diag: needs a 1-D or 2-D tensor, got {r} dimensions (shape {:?})",
                self.shape()
            ))),
        }
    }

    /// The elements `(i, i + offset)` of dimensions `dim1` and `dim2` (offset 0 the main
    /// diagonal, positive above it, negative below), as torch's `diagonal`: the two
    /// dimensions go, and the diagonal is the last dimension of the result (a copy here).
    pub fn diagonal(&self, offset: i64, dim1: isize, dim2: isize) -> Result<Tensor> {
        let rank = self.rank();
        let (p, q) = (resolve_dim(dim1, rank)?, resolve_dim(dim2, rank)?);
        if p == q {
            return Err(Error::Invalid(format!(
                "diagonal: dim1 and dim2 are both dimension {p} (shape {:?})",
                self.shape()
            )));
        }
        let (rows, cols) = (self.shape()[p] as i64, self.shape()[q] as i64);
        let (r0, c0) = if offset >= 0 {
            (0, offset)
        } else {
            (-offset, 0)
        };
        let len = (rows - r0).min(cols - c0).max(0);
        // The two dimensions moved last and merged; the diagonal is every (cols + 1)-th
        // element from its start.
        let rest: Vec<usize> = (0..rank).filter(|&i| i != p && i != q).collect();
        let mut perm: Vec<isize> = rest.iter().map(|&i| i as isize).collect();
        perm.extend([p as isize, q as isize]);
        let mut dims: Vec<usize> = rest.iter().map(|&i| self.shape()[i]).collect();
        dims.push((rows * cols) as usize);
        let merged = self.permute(&perm)?.reshape(dims)?;
        let index: Vec<i64> = (0..len).map(|i| (r0 + i) * cols + c0 + i).collect();
        let index = Tensor::from_vec(index, len as usize, Device::Cpu)?;
        merged.index_select(rest.len() as isize, &index)
    }

    /// The sum of a matrix's main diagonal, as torch's `trace` (integers give int64).
    pub fn trace(&self) -> Result<Tensor> {
        if self.rank() != 2 {
            return Err(Error::BadShape(format!(
                "trace: needs a 2-D tensor, got shape {:?}",
                self.shape()
            )));
        }
        self.refuse_bool("trace")?;
        self.diag(0)?.sum()
    }

    /// A view with dimension `source` moved to position `destination`, the others keeping
    /// their order, as torch's `movedim`.
    pub fn movedim(&self, source: isize, destination: isize) -> Result<Tensor> {
        let rank = self.rank().max(1);
        let (s, d) = (resolve_dim(source, rank)?, resolve_dim(destination, rank)?);
        if self.rank() == 0 {
            return Ok(self.view_of(self.layout.clone()));
        }
        let mut order: Vec<isize> = (0..self.rank() as isize)
            .filter(|&i| i != s as isize)
            .collect();
        order.insert(d, s as isize);
        self.permute(&order)
    }

    /// A view with two dimensions swapped, torch's `swapaxes` (its `transpose`).
    pub fn swapaxes(&self, axis0: isize, axis1: isize) -> Result<Tensor> {
        self.transpose(axis0, axis1)
    }

    /// torch's `swapdims`, another name for [`Tensor::swapaxes`].
    pub fn swapdims(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        self.transpose(dim0, dim1)
    }

    /// Dimension `dim` split into `sizes` (whose product must be its size), as torch's
    /// `unflatten`.
    pub fn unflatten(&self, dim: isize, sizes: &[usize]) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.shape()[d];
        if sizes.iter().product::<usize>() != len {
            return Err(Error::BadShape(format!(
                "unflatten: sizes {sizes:?} do not multiply to the size {len} of dimension \
                 {d} (shape {:?})",
                self.shape()
            )));
        }
        let mut shape = self.shape()[..d].to_vec();
        shape.extend_from_slice(sizes);
        shape.extend_from_slice(&self.shape()[d + 1..]);
        self.reshape(shape)
    }

    /// This tensor tiled `reps[i]` times along each dimension, as torch's `tile`: like
    /// [`Tensor::repeat`], but fewer counts than dimensions are padded with 1s in front.
    pub fn tile(&self, reps: &[usize]) -> Result<Tensor> {
        let mut all = vec![1; self.rank().saturating_sub(reps.len())];
        all.extend_from_slice(reps);
        self.repeat(&all)
    }

    /// Each element repeated `repeats` times in place along `dim` (`[a, b]` becomes
    /// `[a, a, b, b]`), or over the flattened tensor with `dim` None, as torch's
    /// `repeat_interleave` (where [`Tensor::repeat`] repeats the whole tensor).
    pub fn repeat_interleave(&self, repeats: usize, dim: Option<isize>) -> Result<Tensor> {
        let (x, d) = match dim {
            None => (self.flatten()?, 0),
            Some(dim) => (self.clone(), resolve_dim(dim, self.rank().max(1))?),
        };
        if x.rank() == 0 {
            return x.reshape([1])?.repeat_interleave(repeats, Some(0));
        }
        // A new axis of `repeats` after `d`, as a stride-0 view, folded into `d`.
        let mut wide = x.shape().to_vec();
        wide.insert(d + 1, repeats);
        let mut out = x.shape().to_vec();
        out[d] *= repeats;
        x.unsqueeze(d as isize + 1)?.expand(wide)?.reshape(out)
    }

    /// Element `i` along `dim` repeated `repeats[i]` times (a 1-D integer tensor as long as
    /// that dimension; the flattened tensor with `dim` None), as torch's `repeat_interleave`
    /// with a tensor of counts.
    pub fn repeat_interleave_counts(&self, repeats: &Tensor, dim: Option<isize>) -> Result<Tensor> {
        let (x, d) = match dim {
            None => (self.flatten()?, 0),
            Some(dim) => (self.clone(), resolve_dim(dim, self.rank().max(1))?),
        };
        let len = x.shape().get(d).copied().unwrap_or(1);
        if repeats.rank() > 1 || !repeats.dtype().is_int() || repeats.dtype() == DType::Bool {
            return Err(Error::Invalid(format!(
                "repeat_interleave: the counts must be a 1-D integer tensor, got {} of shape {:?}",
                repeats.dtype(),
                repeats.shape()
            )));
        }
        let counts = repeats.to_dtype(DType::I64)?.flatten()?.to_vec::<i64>()?;
        let counts = match counts.len() {
            1 => vec![counts[0]; len],
            n if n == len => counts,
            n => {
                return Err(Error::BadShape(format!(
                    "repeat_interleave: {n} counts for dimension {d} of size {len} (shape {:?}); \
                     give one count per element, or one for all",
                    self.shape()
                )))
            }
        };
        if let Some(c) = counts.iter().find(|&&c| c < 0) {
            return Err(Error::Invalid(format!(
                "repeat_interleave: counts must be non-negative, found {c}"
            )));
        }
        let index: Vec<i64> = counts
            .iter()
            .enumerate()
            .flat_map(|(i, &c)| std::iter::repeat_n(i as i64, c as usize))
            .collect();
        let n = index.len();
        let index = Tensor::from_vec(index, n, Device::Cpu)?.to(self.device())?;
        let x = if x.rank() == 0 { x.reshape([1])? } else { x };
        x.index_select(d as isize, &index)
    }

    /// The slices along `dim`, each without that dimension (torch's `unbind`): the views
    /// `select(dim, 0)`, `select(dim, 1)`, ...
    pub fn unbind(&self, dim: isize) -> Result<Vec<Tensor>> {
        let d = resolve_dim(dim, self.rank())?;
        (0..self.shape()[d])
            .map(|i| Ok(relabel("unbind", self.select(d as isize, i as isize)?)))
            .collect()
    }

    /// Coordinate grids from 1-D (or 0-d) tensors, as torch's `meshgrid`: output `i` holds
    /// `tensors[i]`'s values repeated along every other axis, all of shape `[len0, len1, ..]`
    /// with `indexing` "ij" (matrix order), or `[len1, len0, ..]` with "xy" (Cartesian, as
    /// numpy's default and plotting want). The grids are views (stride 0), not copies.
    pub fn meshgrid(tensors: &[&Tensor], indexing: &str) -> Result<Vec<Tensor>> {
        let swap = match indexing {
            "ij" => false,
            "xy" => true,
            other => {
                return Err(Error::Invalid(format!(
                    "meshgrid: indexing must be \"ij\" or \"xy\", got {other:?}"
                )))
            }
        };
        let Some(first) = tensors.first() else {
            return Err(Error::Invalid("meshgrid: give at least one tensor".into()));
        };
        for t in tensors {
            if t.rank() > 1 {
                return Err(Error::BadShape(format!(
                    "meshgrid: expects 0-d or 1-d tensors, got shape {:?}",
                    t.shape()
                )));
            }
            if t.dtype() != first.dtype() || t.device() != first.device() {
                return Err(Error::Invalid(format!(
                    "meshgrid: all tensors need one dtype and device, got {} on {} and {} on {}",
                    first.dtype(),
                    first.device(),
                    t.dtype(),
                    t.device()
                )));
            }
        }
        // Tensor i varies along axis i; "xy" swaps the first two axes.
        let axis = |i: usize| match (swap && tensors.len() > 1, i) {
            (true, 0) => 1,
            (true, 1) => 0,
            _ => i,
        };
        let mut shape = vec![0; tensors.len()];
        for (i, t) in tensors.iter().enumerate() {
            shape[axis(i)] = t.numel();
        }
        tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut view = vec![1; shape.len()];
                view[axis(i)] = t.numel();
                t.reshape(view)?.expand(shape.clone())
            })
            .collect()
    }

    /// Rotated by 90 degrees `k` times in the plane of `dims` (from the first axis towards
    /// the second), as torch's `rot90(k, dims)`; negative `k` turns the other way. A copy.
    pub fn rot90(&self, k: i64, dims: [isize; 2]) -> Result<Tensor> {
        let rank = self.rank();
        let (a, b) = (resolve_dim(dims[0], rank)?, resolve_dim(dims[1], rank)?);
        if rank < 2 || a == b {
            return Err(Error::Invalid(format!(
                "rot90: needs two different dimensions of a tensor of at least 2, got dims \
                 {dims:?} for shape {:?}",
                self.shape()
            )));
        }
        let (a, b) = (a as isize, b as isize);
        match k.rem_euclid(4) {
            1 => self.flip(&[b])?.transpose(a, b)?.contiguous(),
            2 => self.flip(&[a, b]),
            3 => self.flip(&[a])?.transpose(a, b)?.contiguous(),
            _ => self.deep_clone(),
        }
    }

    /// Columns in reverse order, dimension 1 (torch's `fliplr`; at least 2-D). A copy.
    pub fn fliplr(&self) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::BadShape(format!(
                "fliplr: needs at least 2 dimensions, got shape {:?}",
                self.shape()
            )));
        }
        self.flip(&[1])
    }

    /// Rows in reverse order, dimension 0 (torch's `flipud`; at least 1-D). A copy.
    pub fn flipud(&self) -> Result<Tensor> {
        if self.rank() < 1 {
            return Err(Error::BadShape(
                "flipud: needs at least 1 dimension, got a 0-d tensor".into(),
            ));
        }
        self.flip(&[0])
    }
}
