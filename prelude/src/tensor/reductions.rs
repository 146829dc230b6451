//! torch's reductions built from the primitive ones (so each runs on every device and has
//! its gradient from theirs): `any`/`all`, `count_nonzero`, `amax`/`amin`, `logsumexp`,
//! `var_mean`/`std_mean`, `median` and `kthvalue`.

use super::autocast::{autocast1, AmpOp};
use super::dtype::DType;
use super::shape::resolve_dim;
use super::Tensor;
use crate::autograd::{self, record, relabel};
use crate::error::{Error, Result};

impl Tensor {
    /// The tensor as bool, true where an element is nonzero (NaN counts as nonzero).
    pub(super) fn truth(&self) -> Result<Tensor> {
        autograd::no_grad(|| match self.dtype() {
            DType::Bool => Ok(self.detach()),
            _ => self.ne(0),
        })
    }

    /// torch gives uint8 for `any`/`all` of a uint8 tensor and bool otherwise.
    fn truth_result(&self, b: Tensor) -> Result<Tensor> {
        match self.dtype() {
            DType::U8 => b.to_dtype(DType::U8),
            _ => Ok(b),
        }
    }

    /// True (a 0-d bool tensor) when any element is nonzero, as torch's `any`; false for
    /// an empty tensor.
    pub fn any(&self) -> Result<Tensor> {
        let t = self.truth()?;
        let b = if t.numel() == 0 {
            Tensor::full_dtype((), 0.0, DType::Bool, self.device())?
        } else {
            t.max()?
        };
        self.truth_result(b)
    }

    /// True when every element is nonzero, as torch's `all`; true for an empty tensor.
    pub fn all(&self) -> Result<Tensor> {
        let t = self.truth()?;
        let b = if t.numel() == 0 {
            Tensor::full_dtype((), 1.0, DType::Bool, self.device())?
        } else {
            t.min()?
        };
        self.truth_result(b)
    }

    /// `any` along `dim`, which disappears from the shape.
    pub fn any_dim(&self, dim: isize) -> Result<Tensor> {
        let counts = self.count_nonzero_dim(dim)?;
        self.truth_result(counts.gt(0)?)
    }

    /// `all` along `dim`, which disappears from the shape.
    pub fn all_dim(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.shape().get(d).copied().unwrap_or(1);
        let counts = self.count_nonzero_dim(dim)?;
        self.truth_result(counts.eq(len as i64)?)
    }

    /// The number of nonzero elements (int64, 0-d), as torch's `count_nonzero`.
    pub fn count_nonzero(&self) -> Result<Tensor> {
        self.truth()?.sum()
    }

    /// The number of nonzero elements along `dim` (int64), which disappears from the shape.
    pub fn count_nonzero_dim(&self, dim: isize) -> Result<Tensor> {
        self.truth()?.sum_dim(dim)
    }

    /// The largest element over the dimensions `dims` (all of them when empty), which
    /// disappear from the shape unless `keepdim`, as torch's `amax`. Unlike `max_dim`, the
    /// gradient is shared evenly between equal largest elements, as torch's.
    pub fn amax(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.extreme("amax", dims, keepdim, true)
    }

    /// The smallest element over `dims`, as torch's `amin` (gradient as [`Tensor::amax`]).
    pub fn amin(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.extreme("amin", dims, keepdim, false)
    }

    fn extreme(
        &self,
        op: &'static str,
        dims: &[isize],
        keepdim: bool,
        max: bool,
    ) -> Result<Tensor> {
        let rank = self.rank();
        let mut ds: Vec<usize> = if dims.is_empty() {
            (0..rank).collect()
        } else {
            dims.iter()
                .map(|&d| resolve_dim(d, rank.max(1)))
                .collect::<Result<_>>()?
        };
        ds.sort_unstable();
        ds.dedup();
        if let Some(&d) = ds.iter().find(|&&d| self.shape().get(d) == Some(&0)) {
            return Err(Error::BadShape(format!(
                "{op}: cannot reduce over dimension {d} of size 0 (shape {:?}): it has no \
                 identity",
                self.shape()
            )));
        }
        // Reduced one dimension at a time, kept as size 1 so that it broadcasts over x.
        let kept = autograd::no_grad(|| {
            let mut t = self.detach();
            for &d in &ds {
                if d < t.rank() {
                    let r = if max {
                        t.max_dim(d as isize)?
                    } else {
                        t.min_dim(d as isize)?
                    };
                    t = r.unsqueeze(d as isize)?;
                }
            }
            Ok::<_, Error>(t)
        })?;
        let out = if keepdim || rank == 0 {
            kept.clone()
        } else {
            let shape: Vec<usize> = (0..rank)
                .filter(|d| !ds.contains(d))
                .map(|d| self.shape()[d])
                .collect();
            kept.reshape(shape)?
        };
        if !self.requires_grad() {
            return Ok(out);
        }
        let x = self.detach();
        let name = if max { "amax" } else { "amin" };
        Ok(record(out, name, &[self], move |g| {
            // Split evenly between the elements equal to the extreme. A line whose extreme
            // is NaN has none, and its gradient is 0 / 0, NaN throughout, as torch's.
            let hit = x.eq(&kept)?.to_dtype(g.dtype())?;
            let mut count = hit.clone();
            for &d in &ds {
                if d < count.rank() {
                    count = count.sum_keepdim(d as isize)?;
                }
            }
            let g = g.reshape(kept.shape().to_vec())?;
            Ok(vec![Some(hit.mul(&g.div(&count)?)?)])
        }))
    }

    /// `log(sum(exp(x)))` along `dim` without overflow (the largest element is taken out
    /// first), as torch's `logsumexp`; integers give float32. Its gradient is the softmax.
    pub fn logsumexp(&self, dim: isize, keepdim: bool) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Logsumexp, "logsumexp", self, |x| {
            x.logsumexp(dim, keepdim)
        }) {
            return r;
        }
        if !self.dtype().is_float() {
            return self.to_dtype(DType::F32)?.logsumexp(dim, keepdim);
        }
        let d = resolve_dim(dim, self.rank().max(1))? as isize;
        if self.rank() == 0 {
            return self.mul(1);
        }
        // The largest element per line, with infinities replaced by 0 (as torch does) so
        // that a line of -inf gives -inf and one with +inf gives +inf, not NaN. An empty
        // line sums to 0 and gives -inf.
        let m = autograd::no_grad(|| {
            if self.shape()[d as usize] == 0 {
                return self.sum_keepdim(d);
            }
            let m = self.amax(&[d], true)?;
            let zero = m.zeros_like()?;
            m.where_(&m.isfinite()?, &zero)
        })?;
        let out = self.sub(&m)?.exp()?.sum_keepdim(d)?.log()?.add(&m)?;
        let out = if keepdim { out } else { out.squeeze(d)? };
        Ok(relabel("logsumexp", out))
    }

    /// This tensor with its NaNs as zeros (a copy; integers have none).
    fn nan_to_zero(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Ok(self.clone());
        }
        self.where_(&self.isnan()?.logical_not()?, &self.zeros_like()?)
    }

    /// The sum with NaNs counted as zero, as torch's `nansum` (integers give int64).
    pub fn nansum(&self) -> Result<Tensor> {
        self.nan_to_zero()?.sum()
    }

    /// [`Tensor::nansum`] along `dim`, which disappears from the shape.
    pub fn nansum_dim(&self, dim: isize) -> Result<Tensor> {
        self.nan_to_zero()?.sum_dim(dim)
    }

    /// The mean of the elements that are not NaN (NaN when all are), as torch's `nanmean`;
    /// floats only.
    pub fn nanmean(&self) -> Result<Tensor> {
        self.float_only("nanmean")?;
        let count = self.isnan()?.logical_not()?.sum()?.to_dtype(self.dtype())?;
        self.nansum()?.div(&count)
    }

    /// [`Tensor::nanmean`] along `dim`, which disappears from the shape.
    pub fn nanmean_dim(&self, dim: isize) -> Result<Tensor> {
        self.float_only("nanmean")?;
        let count = self
            .isnan()?
            .logical_not()?
            .sum_dim(dim)?
            .to_dtype(self.dtype())?;
        self.nansum_dim(dim)?.div(&count)
    }

    /// The variance and the mean along `dim` (variance corrected as [`Tensor::var_dim`]),
    /// as torch's `var_mean`.
    pub fn var_mean(&self, dim: isize) -> Result<(Tensor, Tensor)> {
        self.float_only("var_mean")?;
        Ok((self.var_dim(dim)?, self.mean_dim(dim)?))
    }

    /// The standard deviation and the mean along `dim`, as torch's `std_mean`.
    pub fn std_mean(&self, dim: isize) -> Result<(Tensor, Tensor)> {
        self.float_only("std_mean")?;
        Ok((self.std_dim(dim)?, self.mean_dim(dim)?))
    }

    /// The lower median of all elements, a 0-d tensor (NaN if any element is NaN), as
    /// torch's `median()`. The gradient goes to the element chosen.
    pub fn median(&self) -> Result<Tensor> {
        if self.numel() == 0 {
            // torch's answer for no elements: NaN, or an integer type's lowest value.
            self.refuse_bool("median")?;
            return match self.dtype() {
                d if d.is_float() => self.sum()?.mul(0)?.add(f64::NAN),
                d => {
                    let lowest = match d {
                        DType::I32 => i32::MIN as f64,
                        DType::I64 => i64::MIN as f64,
                        _ => 0.0,
                    };
                    Tensor::full_dtype((), lowest, d, self.device())
                }
            };
        }
        let (v, _) = self.flatten()?.median_dim(0)?;
        Ok(relabel("median", v))
    }

    /// The lower median along `dim` and its index there (int64), as torch's `median(dim)`;
    /// a line with a NaN gives NaN and the index of its first NaN.
    pub fn median_dim(&self, dim: isize) -> Result<(Tensor, Tensor)> {
        self.refuse_bool("median")?;
        let d = resolve_dim(dim, self.rank().max(1))?;
        let len = if self.rank() == 0 { 1 } else { self.shape()[d] };
        if len == 0 {
            return Err(Error::BadShape(format!(
                "median: dimension {d} has size 0 (shape {:?})",
                self.shape()
            )));
        }
        // Sorted ascending, NaNs come last: a line with k NaNs has its first at len - k.
        let nans = self.isnan()?.sum_keepdim(d as isize)?;
        let lower = Tensor::full_dtype((), ((len - 1) / 2) as f64, DType::I64, self.device())?;
        let at = nans
            .mul(-1)?
            .add(len as i64)?
            .where_(&nans.gt(0)?, &lower)?;
        let (v, i) = self.pick_sorted(d, at)?;
        Ok((relabel("median_dim", v), i))
    }

    /// The `k`-th smallest element along `dim` (k from 1) and its index, as torch's
    /// `kthvalue`.
    pub fn kthvalue(&self, k: usize, dim: isize) -> Result<(Tensor, Tensor)> {
        self.refuse_bool("kthvalue")?;
        let d = resolve_dim(dim, self.rank().max(1))?;
        let len = if self.rank() == 0 { 1 } else { self.shape()[d] };
        if k == 0 || k > len {
            return Err(Error::Invalid(format!(
                "kthvalue: k = {k} is out of range for dimension {d} of size {len} (shape \
                 {:?}); k counts from 1",
                self.shape()
            )));
        }
        let shape: Vec<usize> = if self.rank() == 0 {
            vec![]
        } else {
            let mut s = self.shape().to_vec();
            s[d] = 1;
            s
        };
        let at = Tensor::full_dtype(shape, (k - 1) as f64, DType::I64, self.device())?;
        let (v, i) = self.pick_sorted(d, at)?;
        Ok((relabel("kthvalue", v), i))
    }

    /// The values and original indices at the sorted positions `at` (int64, size 1 along
    /// `d`) of each line along `d`, with `d` removed from the shape.
    fn pick_sorted(&self, d: usize, at: Tensor) -> Result<(Tensor, Tensor)> {
        if self.rank() == 0 {
            return Ok((
                self.mul(1)?,
                Tensor::zeros_dtype((), DType::I64, self.device())?,
            ));
        }
        let (values, indices) = self.sort(d as isize, false)?;
        let v = values.gather(d as isize, &at)?.squeeze(d as isize)?;
        let i = indices.gather(d as isize, &at)?.squeeze(d as isize)?;
        Ok((v, i))
    }
}
