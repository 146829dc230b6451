//! torch's conveniences built from the primitive ops (so each runs on every device and has
//! its gradient from theirs): tests for NaN and infinity, `square`/`reciprocal`/`rsqrt`,
//! `norm`, `isclose`/`allclose`, `masked_fill`, `tril`/`triu`, `outer`/`dot`, `repeat`,
//! `chunk`/`split`, the `*_like` constructors, `log2`/`log10`/`exp2`, `trunc`/`frac`,
//! `lerp` and `equal`.

use super::autocast::{autocast1, AmpOp};
use super::dtype::{fill_scalar, promote, DType, Number};
use super::op::BinaryOp;
use super::shape::resolve_dim;
use super::Tensor;
use crate::autograd::{self, record};
use crate::device::Device;
use crate::error::{Error, Result};

/// Ok for a bool `mask`; otherwise an error naming `op` and how to make one.
pub(super) fn bool_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        return Err(Error::Invalid(format!(
            "{op}: the mask must be a bool tensor, got {} (shape {:?}); make one with a \
             comparison, e.g. x.lt(0)",
            mask.dtype(),
            mask.shape()
        )));
    }
    Ok(())
}

impl Tensor {
    /// A bool tensor of this shape, true everywhere (`value`) or false, on this device.
    pub(super) fn bools(&self, value: bool) -> Result<Tensor> {
        Tensor::full_dtype(
            self.shape().to_vec(),
            value as u8 as f64,
            DType::Bool,
            self.device(),
        )
    }

    /// True where the element is NaN (never for integers), as torch's `isnan`.
    pub fn isnan(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.bools(false);
        }
        autograd::no_grad(|| self.ne(self))
    }

    /// True where the element is +inf or -inf, as torch's `isinf`.
    pub fn isinf(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.bools(false);
        }
        autograd::no_grad(|| self.abs()?.eq(f64::INFINITY))
    }

    /// True where the element is neither NaN nor infinite, as torch's `isfinite`.
    pub fn isfinite(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.bools(true);
        }
        // x - x is 0 for every finite x and NaN for NaN and the infinities.
        autograd::no_grad(|| self.sub(self)?.eq(0))
    }

    /// `x * x` (bool counts as int64, as torch's `square` gives).
    pub fn square(&self) -> Result<Tensor> {
        // torch's `square` is `pow(x, 2)`, which CUDA's autocast runs in float32.
        if let Some(r) = autocast1(AmpOp::Pow, "square", self, |x| x.square()) {
            return r;
        }
        if self.dtype() == DType::Bool {
            return self.to_dtype(DType::I64)?.square();
        }
        self.mul(self)
    }

    /// `1 / x` (float32 for integer input), as torch's `reciprocal`.
    pub fn reciprocal(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Reciprocal, "reciprocal", self, |x| x.reciprocal()) {
            return r;
        }
        self.scalar_op(1.0, true, BinaryOp::Div, true)
    }

    /// `1 / sqrt(x)`, as torch's `rsqrt`.
    pub fn rsqrt(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Rsqrt, "rsqrt", self, |x| x.rsqrt()) {
            return r;
        }
        self.sqrt()?.reciprocal()
    }

    /// The Euclidean (L2) norm of all elements, a 0-d tensor, as torch's `norm()`. Its
    /// gradient is `x / norm`, and 0 at the zero vector (torch's choice there).
    pub fn norm(&self) -> Result<Tensor> {
        self.l2_norm(None, false)
    }

    /// The Euclidean norm along `dim`, which disappears from the shape (torch's
    /// `norm(dim=d)`); gradient as [`Tensor::norm`]'s, 0 for a zero line.
    pub fn norm_dim(&self, dim: isize) -> Result<Tensor> {
        self.l2_norm(Some(dim), false)
    }

    /// The Euclidean norm along `dim`, which stays in the shape with size 1.
    pub fn norm_keepdim(&self, dim: isize) -> Result<Tensor> {
        self.l2_norm(Some(dim), true)
    }

    fn l2_norm(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Norm, "norm", self, |x| x.l2_norm(dim, keepdim)) {
            return r;
        }
        if !self.dtype().is_float() {
            return Err(Error::Invalid(format!(
                "norm() needs a floating-point tensor, got {} (shape {:?}); convert first with \
                 .to_dtype(DType::F32)",
                self.dtype(),
                self.shape()
            )));
        }
        // Halves are squared and summed in float32 and rounded once, as torch's norm kernel
        // (squares rounded to half lose a bit of the result's last place).
        let wide = match self.dtype() {
            DType::F16 | DType::BF16 => self.to_dtype(DType::F32)?,
            _ => self.clone(),
        };
        let out = autograd::no_grad(|| match dim {
            None => wide.square()?.sum()?.sqrt(),
            Some(d) => wide.square()?.sum_keepdim(d)?.sqrt(),
        })?
        .to_dtype(self.dtype())?;
        let (x, kept) = (self.detach(), out.detach());
        let out = match dim {
            Some(d) if !keepdim => out.squeeze(d)?,
            _ => out,
        };
        Ok(record(out, "norm", &[self], move |g| {
            // `kept` has the norm's dimension as 1, so it broadcasts over x.
            let g = g.reshape(kept.shape().to_vec())?;
            let scale = g.div(&kept)?;
            let scale = scale.where_(&kept.ne(0)?, &scale.zeros_like()?)?;
            Ok(vec![Some(x.mul(&scale)?)])
        }))
    }

    /// Element-wise closeness, as torch's `isclose`: `|a - b| <= atol + rtol * |b|`, or
    /// equal (so equal infinities are close; NaN never is). Both of one dtype; integers are
    /// compared in float32, as torch does.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            return Err(Error::Invalid(format!(
                "isclose: both tensors need one dtype, got {} and {} (shapes {:?} and {:?})",
                self.dtype(),
                other.dtype(),
                self.shape(),
                other.shape()
            )));
        }
        autograd::no_grad(|| {
            let equal = self.eq(other)?;
            if rtol == 0.0 && atol == 0.0 {
                return Ok(equal);
            }
            let dt = promote(self.dtype(), DType::F32);
            let (a, b) = (self.to_dtype(dt)?, other.to_dtype(dt)?);
            let actual = a.sub(&b)?.abs()?;
            let allowed = b.mul(rtol)?.abs()?.add(atol)?;
            let near = actual.isfinite()?.logical_and(&actual.le(&allowed)?)?;
            equal.logical_or(&near)
        })
    }

    /// Whether every element is close to `other`'s ([`Tensor::isclose`]), as torch's
    /// `allclose`.
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64) -> Result<bool> {
        Ok(self
            .isclose(other, rtol, atol)?
            .to_vec::<bool>()?
            .into_iter()
            .all(|c| c))
    }

    /// This tensor with `value` wherever the bool `mask` is true, as torch's `masked_fill`
    /// (the mask broadcasts to this tensor's shape; `value`, a float or a whole number, takes
    /// this tensor's dtype under torch's overflow check: see [`Number`]).
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Number>) -> Result<Tensor> {
        bool_mask("masked_fill", mask)?;
        let expanded = mask.broadcast_to(self.shape().to_vec()).map_err(|_| {
            Error::BadShape(format!(
                "masked_fill: mask of shape {:?} does not broadcast to the tensor's shape {:?}",
                mask.shape(),
                self.shape()
            ))
        })?;
        let fill = fill_scalar("masked_fill", value, self.dtype(), self.device())?;
        self.where_(&expanded.logical_not()?, &fill)
    }

    /// The lower triangle of the last two dimensions (`diagonal` 0: the main diagonal and
    /// below, 1: one more above, -1: one fewer), zeros elsewhere, as torch's `tril`.
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("tril", |i, j| j - i <= diagonal)
    }

    /// The upper triangle (`diagonal` as in [`Tensor::tril`]), as torch's `triu`.
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("triu", |i, j| j - i >= diagonal)
    }

    fn triangle(&self, op: &str, keep: impl Fn(i64, i64) -> bool) -> Result<Tensor> {
        let r = self.rank();
        if r < 2 {
            return Err(Error::BadShape(format!(
                "{op}: needs at least 2 dimensions, got shape {:?}",
                self.shape()
            )));
        }
        let (rows, cols) = (self.shape()[r - 2], self.shape()[r - 1]);
        // An empty batch of large matrices: the mask would be all the memory there is.
        let zero = Tensor::zeros_dtype((), self.dtype(), self.device())?;
        if self.numel() == 0 {
            let all = Tensor::ones_dtype((), DType::Bool, self.device())?;
            return self.where_(&all, &zero);
        }
        let mask: Vec<bool> = (0..rows * cols)
            .map(|p| keep((p / cols) as i64, (p % cols) as i64))
            .collect();
        let mask = Tensor::from_vec(mask, [rows, cols], Device::Cpu)?.to(self.device())?;
        self.where_(&mask, &zero)
    }

    /// The outer product of two vectors, `[n] x [m] -> [n, m]`, as torch's `outer`.
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        if self.rank() != 1 || other.rank() != 1 {
            return Err(Error::BadShape(format!(
                "outer: needs two 1-D tensors, got shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        self.unsqueeze(1)?.mul(&other.unsqueeze(0)?)
    }

    /// The dot product of two vectors of one length and dtype, a 0-d tensor, as torch's `dot`.
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        if self.rank() != 1 || other.rank() != 1 || self.numel() != other.numel() {
            return Err(Error::BadShape(format!(
                "dot: needs two 1-D tensors of one length, got shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        if self.dtype() != other.dtype() {
            return Err(Error::Invalid(format!(
                "dot: both vectors need one dtype, got {} and {}",
                self.dtype(),
                other.dtype()
            )));
        }
        // torch's `dot` is not among the ops autocast lowers: a product of vectors stays in
        // its dtype inside a region, although it is computed here as a matmul.
        super::autocast::suspended(|| self.matmul(other))
    }

    /// This tensor tiled `repeats[i]` times along each dimension, as torch's `repeat` (a
    /// copy; `repeats` may be longer than the rank, adding leading dimensions).
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        let r = self.rank();
        if repeats.len() < r {
            return Err(Error::BadShape(format!(
                "repeat: {} repeat counts for a tensor of rank {r} (shape {:?}); give one per \
                 dimension at least",
                repeats.len(),
                self.shape()
            )));
        }
        let mut dims = vec![1; repeats.len() - r];
        dims.extend_from_slice(self.shape());
        // [d0, d1, ..] seen as [1, d0, 1, d1, ..], each 1 stretched to its count, then merged.
        let spaced: Vec<usize> = dims.iter().flat_map(|&d| [1, d]).collect();
        let stretched: Vec<usize> = dims
            .iter()
            .zip(repeats)
            .flat_map(|(&d, &k)| [k, d])
            .collect();
        let merged: Vec<usize> = dims.iter().zip(repeats).map(|(&d, &k)| d * k).collect();
        self.reshape(spaced)?.expand(stretched)?.reshape(merged)
    }

    /// Views of `chunks` nearly equal pieces along `dim` (each `ceil(len / chunks)` long,
    /// the last shorter), as torch's `chunk`.
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        if chunks == 0 {
            return Err(Error::Invalid(
                "chunk: the number of chunks must be positive".into(),
            ));
        }
        let len = self.shape()[resolve_dim(dim, self.rank())?];
        self.split(len.div_ceil(chunks).max(1), dim)
    }

    /// Views of pieces `size` long along `dim` (the last one shorter), as torch's `split`.
    pub fn split(&self, size: usize, dim: isize) -> Result<Vec<Tensor>> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.shape()[d];
        if size == 0 {
            return Err(Error::Invalid(format!(
                "split: the piece size must be positive (dimension {d} has size {len})"
            )));
        }
        if len == 0 {
            return Ok(vec![self.clone()]);
        }
        (0..len)
            .step_by(size)
            .map(|start| self.narrow(d as isize, start, size.min(len - start)))
            .collect()
    }

    /// Zeros of `shape` in this tensor's dtype, on its device (torch's `new_zeros`).
    pub fn new_zeros(&self, shape: impl Into<crate::tensor::Shape>) -> Result<Tensor> {
        self.new_full(shape, 0.0)
    }

    /// Ones of `shape` in this tensor's dtype, on its device (torch's `new_ones`).
    pub fn new_ones(&self, shape: impl Into<crate::tensor::Shape>) -> Result<Tensor> {
        self.new_full(shape, 1.0)
    }

    /// `value` in `shape`, in this tensor's dtype, on its device (torch's `new_full`).
    pub fn new_full(
        &self,
        shape: impl Into<crate::tensor::Shape>,
        value: impl Into<Number>,
    ) -> Result<Tensor> {
        let dims = shape.into().dims().to_vec();
        let v = fill_scalar("new_full", value, self.dtype(), self.device())?;
        v.broadcast_to(dims)?.contiguous()
    }

    /// Uniform values in [0, 1) of this tensor's shape, float dtype and device (torch's
    /// `rand_like`), from the seeded generator.
    pub fn rand_like(&self) -> Result<Tensor> {
        self.random_like(
            "rand_like",
            Tensor::rand(self.shape().to_vec(), Device::Cpu)?,
        )
    }

    /// Standard normal values of this tensor's shape, float dtype and device (torch's
    /// `randn_like`).
    pub fn randn_like(&self) -> Result<Tensor> {
        self.random_like(
            "randn_like",
            Tensor::randn(self.shape().to_vec(), Device::Cpu)?,
        )
    }

    fn random_like(&self, op: &str, values: Tensor) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::Invalid(format!(
                "{op}: needs a floating-point tensor, as in torch, got {} (shape {:?})",
                self.dtype(),
                self.shape()
            )));
        }
        values.to_dtype(self.dtype())?.to(self.device())
    }

    /// Zeros of this tensor's shape, dtype and device (torch's `zeros_like`).
    pub fn zeros_like(&self) -> Result<Tensor> {
        self.full_like(0.0)
    }

    /// Ones of this tensor's shape, dtype and device (torch's `ones_like`).
    pub fn ones_like(&self) -> Result<Tensor> {
        self.full_like(1.0)
    }

    /// `value` (converted to this tensor's dtype) in this tensor's shape, on its device.
    pub fn full_like(&self, value: impl Into<Number>) -> Result<Tensor> {
        let v = fill_scalar("full_like", value, self.dtype(), self.device())?;
        v.broadcast_to(self.shape().to_vec())?.contiguous()
    }

    /// `f` on this float tensor computed one precision up (float16 and bfloat16 in float32,
    /// float32 in float64) and rounded back once, as torch's kernels compute, so a result
    /// made of two steps is as exact as torch's one; integers give float32, as torch.
    fn widened(&self, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let to = if self.dtype().is_float() {
            self.dtype()
        } else {
            DType::F32
        };
        let work = match to {
            DType::F64 | DType::F32 => DType::F64,
            _ => DType::F32,
        };
        f(&self.to_dtype(work)?)?.to_dtype(to)
    }

    /// Base-2 logarithm (float32 for integers), as torch's `log2`.
    pub fn log2(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Log, "log2", self, |x| x.log2()) {
            return r;
        }
        Ok(autograd::relabel(
            "log2",
            self.widened(|x| x.log()?.mul(std::f64::consts::LOG2_E))?,
        ))
    }

    /// Base-10 logarithm (float32 for integers), as torch's `log10`.
    pub fn log10(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Log, "log10", self, |x| x.log10()) {
            return r;
        }
        let y = self.widened(|x| x.log()?.mul(std::f64::consts::LOG10_E))?;
        Ok(autograd::relabel("log10", y))
    }

    /// `2^x` (float32 for integers), as torch's `exp2`.
    pub fn exp2(&self) -> Result<Tensor> {
        let y = self.widened(|x| x.mul(std::f64::consts::LN_2)?.exp())?;
        Ok(autograd::relabel("exp2", y))
    }

    /// Rounded toward zero, as torch's `trunc` (integers unchanged, as a copy; its gradient
    /// is zero, as floor's).
    pub fn trunc(&self) -> Result<Tensor> {
        self.refuse_bool("trunc")?;
        match self.dtype() {
            d if d.is_float() => {
                let t = self.ceil()?.where_(&self.lt(0)?, &self.floor()?)?;
                Ok(autograd::relabel("trunc", t))
            }
            _ => self.deep_clone(),
        }
    }

    /// The fractional part, `x - trunc(x)` (with x's sign), as torch's `frac`: floats only.
    pub fn frac(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::Invalid(format!(
                "frac needs a floating-point tensor, got {} (shape {:?}), as in torch",
                self.dtype(),
                self.shape()
            )));
        }
        Ok(autograd::relabel("frac", self.sub(&self.trunc()?)?))
    }

    /// `self + weight * (end - self)`, as torch's `lerp` with a number as the weight (both
    /// tensors floats of one dtype; computed as torch does, from the nearer end).
    pub fn lerp(&self, end: &Tensor, weight: f64) -> Result<Tensor> {
        if !self.dtype().is_float() || self.dtype() != end.dtype() {
            return Err(Error::Invalid(format!(
                "lerp: needs two floating-point tensors of one dtype, got {} and {} (shapes \
                 {:?} and {:?})",
                self.dtype(),
                end.dtype(),
                self.shape(),
                end.shape()
            )));
        }
        let to = self.dtype();
        let work = if to == DType::F64 { to } else { DType::F32 };
        let (a, b) = (self.to_dtype(work)?, end.to_dtype(work)?);
        let diff = b.sub(&a)?;
        let out = if weight.abs() < 0.5 {
            a.add(&diff.mul(weight)?)?
        } else {
            b.sub(&diff.mul(1.0 - weight)?)?
        };
        Ok(autograd::relabel("lerp", out.to_dtype(to)?))
    }

    /// True when both tensors have one shape and equal elements (NaN is never equal), as
    /// torch's `equal`.
    pub fn equal(&self, other: &Tensor) -> Result<bool> {
        if self.shape() != other.shape() {
            return Ok(false);
        }
        let same = autograd::no_grad(|| self.eq(other)?.all())?;
        Ok(same.to_vec::<bool>()?[0])
    }

    /// Zeros written into this tensor (through a view, into its base), torch's `zero_`.
    pub fn zero_(&self) -> Result<()> {
        self.fill_(0.0)
    }
}
