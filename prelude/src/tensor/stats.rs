//! Statistics as torch computes them: `var`/`std` with a chosen correction and `keepdim`,
//! `quantile`/`nanquantile` (linear interpolation between the sorted neighbours), `cov` and
//! `corrcoef`, `aminmax`, and `diff`. Composed from sort, sums and element-wise ops, so they
//! run on every device with gradients from those.

use super::autocast::unlisted;
use super::shape::resolve_dim;
use super::{DType, Tensor};
use crate::autograd::relabel;
use crate::error::{Error, Result};

impl Tensor {
    /// Variance over everything (`dim` None) or along `dim`, dividing by `n - correction`
    /// (torch's `var(dim, correction=.., keepdim=..)`: 1 is the sample variance and torch's
    /// default, 0 the population variance, `unbiased=False`).
    pub fn var_with(&self, dim: Option<isize>, correction: f64, keepdim: bool) -> Result<Tensor> {
        let v = unlisted(self, || self.variance_corrected("var", dim, correction))?;
        match (dim, keepdim) {
            (Some(d), true) => v.unsqueeze(resolve_dim(d, self.rank())? as isize),
            (None, true) => v.reshape(vec![1; self.rank()]),
            _ => Ok(v),
        }
    }

    /// Standard deviation, the square root of [`Tensor::var_with`].
    pub fn std_with(&self, dim: Option<isize>, correction: f64, keepdim: bool) -> Result<Tensor> {
        let s = self.var_with(dim, correction, keepdim)?.sqrt()?;
        Ok(relabel("std", s))
    }

    /// The `q`-quantile (0 to 1) over everything or along `dim`, interpolating linearly
    /// between the two sorted neighbours as torch's default (`quantile(q, dim, keepdim)`); a
    /// line holding a NaN gives NaN.
    pub fn quantile(&self, q: f64, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        self.quantile_impl("quantile", q, dim, keepdim, false)
    }

    /// [`Tensor::quantile`] ignoring NaNs (torch's `nanquantile`): NaN only for a line of NaNs.
    pub fn nanquantile(&self, q: f64, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        self.quantile_impl("nanquantile", q, dim, keepdim, true)
    }

    fn quantile_impl(
        &self,
        op: &str,
        q: f64,
        dim: Option<isize>,
        keepdim: bool,
        skip_nan: bool,
    ) -> Result<Tensor> {
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(Error::Invalid(format!(
                "{op}: needs a float32 or float64 tensor, as torch, got {} (shape {:?})",
                self.dtype(),
                self.shape()
            )));
        }
        if !(0.0..=1.0).contains(&q) {
            return Err(Error::Invalid(format!(
                "{op}: q must be in [0, 1], got {q}"
            )));
        }
        let (x, d) = match dim {
            None => (self.flatten()?, 0),
            Some(dim) => (self.clone(), resolve_dim(dim, self.rank())?),
        };
        let n = x.shape()[d];
        if n == 0 {
            return Err(Error::Invalid(format!(
                "{op}: cannot take a quantile of an empty dimension (shape {:?})",
                self.shape()
            )));
        }
        // Sorted ascending, NaN last (torch's order).
        let sorted = x.sort(d as isize, false)?.0;
        let di = d as isize;
        let out = if skip_nan {
            // Per line, the position among its own non-NaN count; gathered by index.
            let valid = x
                .isnan()?
                .logical_not()?
                .sum_keepdim(di)?
                .to_dtype(DType::F64)?;
            let pos = valid.sub(1.0)?.clamp_min(0.0)?.mul(q)?;
            let lo = pos.floor()?;
            let hi = pos.ceil()?;
            let w = pos.sub(&lo)?.to_dtype(self.dtype())?;
            let below = sorted.gather(di, &lo.to_dtype(DType::I64)?)?;
            let above = sorted.gather(di, &hi.to_dtype(DType::I64)?)?;
            let r = below.add(&above.sub(&below)?.mul(&w)?)?;
            // A line of NaNs: its count is 0.
            let nan = Tensor::full_dtype((), f64::NAN, self.dtype(), self.device())?;
            nan.where_(&valid.eq(0)?, &r)?
        } else {
            let pos = q * (n - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            let below = sorted.narrow(di, lo, 1)?;
            let above = sorted.narrow(di, hi, 1)?;
            let r = below.lerp(&above, pos - lo as f64)?;
            // NaN sorts last: a line with one takes its last element, that NaN (so its
            // gradient goes there, as torch's).
            let last = sorted.narrow(di, n - 1, 1)?;
            last.where_(&last.isnan()?, &r)?
        };
        match (dim, keepdim) {
            (Some(_), true) => Ok(out),
            (Some(_), false) => out.squeeze(di),
            (None, true) => out.reshape(vec![1; self.rank()]),
            (None, false) => out.reshape(Vec::<usize>::new()),
        }
    }

    /// The covariance matrix of the variables in the rows of this `[vars, observations]`
    /// tensor (or the variance of a 1-D one), dividing by `observations - correction`
    /// (torch's `cov(correction=1)`).
    pub fn cov(&self, correction: f64) -> Result<Tensor> {
        self.refuse_bool("cov")?;
        if self.rank() > 2 {
            return Err(Error::BadShape(format!(
                "cov: expects a [variables, observations] matrix or a vector, got {:?}",
                self.shape()
            )));
        }
        let x = if self.rank() < 2 {
            self.reshape([1, self.numel()])?
        } else {
            self.clone()
        };
        let x = if x.dtype().is_float() {
            x
        } else {
            x.to_dtype(DType::F32)?
        };
        let n = x.shape()[1] as f64;
        let centred = x.sub(&x.mean_dim(1)?.unsqueeze(1)?)?;
        let c = centred
            .matmul(&centred.t()?)?
            .div((n - correction).max(0.0))?;
        if self.rank() < 2 {
            c.reshape(Vec::<usize>::new())
        } else {
            Ok(c)
        }
    }

    /// Pearson's correlation coefficients between the rows (torch's `corrcoef`): the
    /// covariance over the outer product of the standard deviations, clipped to [-1, 1].
    pub fn corrcoef(&self) -> Result<Tensor> {
        let c = self.cov(1.0)?;
        if c.rank() == 0 {
            return c.div(&c);
        }
        let sd = c.diagonal(0, 0, 1)?.sqrt()?;
        c.div(&sd.unsqueeze(1)?)?
            .div(&sd.unsqueeze(0)?)?
            .clamp(-1, 1)
    }

    /// The smallest and the largest element, over everything or along `dim` (torch's
    /// `aminmax`, which has no gradient: the results do not require grad).
    pub fn aminmax(&self, dim: Option<isize>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let dims: Vec<isize> = dim.into_iter().collect();
        let x = self.detach();
        Ok((x.amin(&dims, keepdim)?, x.amax(&dims, keepdim)?))
    }

    /// The `n`-th forward difference along `dim`, `x[i + 1] - x[i]` applied `n` times (torch's
    /// `diff`); bool tensors give "not equal", as torch's.
    pub fn diff(&self, n: usize, dim: isize) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())? as isize;
        let mut t = self.clone();
        for _ in 0..n {
            let len = t.shape()[d as usize];
            if len == 0 {
                break;
            }
            let (next, prev) = (t.narrow(d, 1, len - 1)?, t.narrow(d, 0, len - 1)?);
            t = if t.dtype() == DType::Bool {
                next.ne(&prev)?
            } else {
                next.sub(&prev)?
            };
        }
        Ok(t)
    }
}
