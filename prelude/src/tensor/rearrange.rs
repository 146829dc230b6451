//! torch's ways of moving elements around, built from views, `cat` and `index_select` (so
//! each runs on every device and has its gradient from theirs): `roll`, `diag`, `trace`,
//! `movedim`, `swapaxes`, `unflatten` and `tile`.

use super::shape::resolve_dim;
use super::Tensor;
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
}
