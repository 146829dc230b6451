//! torch's ops whose result size depends on the values: `nonzero`/`argwhere`,
//! `masked_select`, `unique`, `bincount` and `histc`. Which elements (or how many) is found
//! on the host, as torch itself must synchronise for these; values are then picked with
//! `index_select` on the tensor's own device, so they carry gradients as it does.

use super::dtype::DType;
use super::Tensor;
use crate::device::Device;
use crate::error::{Error, Result};

impl Tensor {
    /// The flat (row-major) positions of the nonzero elements, on the host.
    fn nonzero_flat(&self) -> Result<Vec<i64>> {
        Ok(self
            .truth()?
            .to_vec::<bool>()?
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(i, _)| i as i64)
            .collect())
    }

    /// The indices of the nonzero elements (NaN counts as nonzero), one row of
    /// coordinates per element in row-major order: int64 of shape `[n, rank]`, on this
    /// tensor's device, as torch's `nonzero`.
    pub fn nonzero(&self) -> Result<Tensor> {
        let flat = self.nonzero_flat()?;
        let shape = self.shape();
        let mut coords = Vec::with_capacity(flat.len() * shape.len());
        for &p in &flat {
            let mut rest = p as usize;
            let start = coords.len();
            for &size in shape.iter().rev() {
                coords.push((rest % size) as i64);
                rest /= size;
            }
            coords[start..].reverse();
        }
        Tensor::from_vec(coords, [flat.len(), shape.len()], Device::Cpu)?.to(self.device())
    }

    /// torch's `argwhere`, the same as [`Tensor::nonzero`].
    pub fn argwhere(&self) -> Result<Tensor> {
        self.nonzero()
    }

    /// The elements where the bool `mask` is true, as a 1-D tensor in row-major order, as
    /// torch's `masked_select` (the mask and the tensor broadcast to one shape).
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        super::math::bool_mask("masked_select", mask)?;
        let shape = super::shape::broadcast("masked_select", self.shape(), mask.shape())?.dims;
        let index = mask.broadcast_to(shape.clone())?.nonzero_flat()?;
        let index = Tensor::from_vec(index.clone(), index.len(), Device::Cpu)?;
        self.broadcast_to(shape)?
            .reshape(-1)?
            .index_select(0, &index)
    }

    /// The distinct elements, sorted ascending (1-D), as torch's `unique` (each NaN is
    /// distinct, as in torch).
    pub fn unique(&self) -> Result<Tensor> {
        Ok(self.unique_counts()?.0)
    }

    /// The distinct elements, sorted, and how many times each occurs (int64), as torch's
    /// `unique(return_counts=True)`.
    pub fn unique_counts(&self) -> Result<(Tensor, Tensor)> {
        let sorted = crate::autograd::no_grad(|| self.flatten()?.sort(0, false))?.0;
        let n = sorted.numel();
        if n == 0 {
            let counts = Tensor::zeros_dtype(0, DType::I64, self.device())?;
            return Ok((sorted, counts));
        }
        // A run starts at 0 and wherever an element differs from the one before it.
        let differs = crate::autograd::no_grad(|| {
            sorted
                .narrow(0, 1, n - 1)?
                .ne(&sorted.narrow(0, 0, n - 1)?)?
                .to_vec::<bool>()
        })?;
        let starts: Vec<i64> = std::iter::once(0)
            .chain((1..n).filter(|&i| differs[i - 1]).map(|i| i as i64))
            .collect();
        let counts: Vec<i64> = starts
            .iter()
            .zip(starts.iter().skip(1).chain([&(n as i64)]))
            .map(|(a, b)| b - a)
            .collect();
        let index = Tensor::from_vec(starts.clone(), starts.len(), Device::Cpu)?;
        let values = sorted.index_select(0, &index)?;
        let counts = Tensor::from_vec(counts, starts.len(), Device::Cpu)?.to(self.device())?;
        Ok((values, counts))
    }

    /// How many times each value `0..=max` occurs in a 1-D tensor of non-negative
    /// integers (int64, at least `minlength` long), as torch's `bincount`.
    pub fn bincount(&self, minlength: usize) -> Result<Tensor> {
        if self.rank() != 1 || !self.dtype().is_int() || self.dtype() == DType::Bool {
            return Err(Error::Invalid(format!(
                "bincount: needs a 1-D tensor of integers, got {} of shape {:?}",
                self.dtype(),
                self.shape()
            )));
        }
        let values = self.to_dtype(DType::I64)?.to_vec::<i64>()?;
        if let Some(v) = values.iter().find(|&&v| v < 0) {
            return Err(Error::Invalid(format!(
                "bincount: the values must be non-negative, found {v}"
            )));
        }
        let len = values
            .iter()
            .map(|&v| v as usize + 1)
            .max()
            .unwrap_or(0)
            .max(minlength);
        super::host_mem::host_room(len, DType::I64)?;
        let mut counts = vec![0i64; len];
        for v in values {
            counts[v as usize] += 1;
        }
        Tensor::from_vec(counts, len, Device::Cpu)?.to(self.device())
    }

    /// A histogram of the elements in `bins` equal bins between `min` and `max` (the last
    /// bin includes `max`; elements outside are not counted; with `min == max` the data's
    /// own range is used), in this tensor's float dtype, as torch's `histc`.
    pub fn histc(&self, bins: usize, min: f64, max: f64) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::Invalid(format!(
                "histc: needs a floating-point tensor, got {} (shape {:?}); convert first \
                 with .to_dtype(DType::F32)",
                self.dtype(),
                self.shape()
            )));
        }
        if bins == 0 || min > max || !min.is_finite() || !max.is_finite() {
            return Err(Error::Invalid(format!(
                "histc: needs bins > 0 and finite min <= max, got bins = {bins}, range \
                 [{min}, {max}]"
            )));
        }
        let values = self.to_f64_vec()?;
        let (mut lo, mut hi) = (min, max);
        if lo == hi {
            let finite = values.iter().copied().filter(|v| v.is_finite());
            lo = finite.clone().fold(f64::INFINITY, f64::min);
            hi = finite.fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                (lo, hi) = (0.0, 0.0);
            }
            if lo == hi {
                (lo, hi) = (lo - 1.0, hi + 1.0);
            }
        }
        let mut counts = vec![0f64; bins];
        for v in values {
            if v >= lo && v <= hi {
                let b = (((v - lo) * bins as f64 / (hi - lo)) as usize).min(bins - 1);
                counts[b] += 1.0;
            }
        }
        Tensor::from_vec(counts, bins, Device::Cpu)?
            .to_dtype(self.dtype())?
            .to(self.device())
    }
}
