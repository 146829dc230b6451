//! The operations, in two forms: methods that return `Result`, and operators (`&a + &b`,
//! `a * 2.0`) that panic with the same message, since an operator cannot return an error.
//!
//! Each method checks shapes, promotes dtypes (torch's rules, see `dtype::promote`) and
//! makes one call into `Storage`, which picks the backend.

use super::autocast::{autocast, autocast1, autocast2, unlisted, AmpOp};
use super::cpu_backend::CpuStorage;
use super::dtype::{promote_dims, promote_scalar, DType};
use super::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use super::shape::{broadcast, resolve_dim, Broadcast};
use super::storage::Storage;
use super::Tensor;
use crate::autograd::rules;
use crate::device::Device;
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::ops;

/// The right-hand side of an arithmetic method: a tensor or a scalar, so that `a.mul(&b)`,
/// `a.mul(2.0)` and `a.add(1)` all work. A float scalar makes an integer tensor's result
/// float32; an integer scalar keeps the tensor's dtype (torch's rule for Python scalars).
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(f64),
    Int(i64),
}

impl<'a> Operand<'a> {
    /// The tensor, or the number as a [`Number`](super::dtype::Number) (an `Int` stays
    /// whole, as a Python int does in torch), for ops that treat every number alike.
    pub(crate) fn tensor_or_number(self) -> std::result::Result<&'a Tensor, super::dtype::Number> {
        use super::dtype::Number;
        match self {
            Operand::Tensor(t) => Ok(t),
            Operand::Scalar(s) => Err(Number::Float(s)),
            Operand::Int(i) => Err(Number::Int(i)),
        }
    }
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}
impl From<f32> for Operand<'_> {
    fn from(s: f32) -> Self {
        Operand::Scalar(s as f64)
    }
}
impl From<f64> for Operand<'_> {
    fn from(s: f64) -> Self {
        Operand::Scalar(s)
    }
}
impl From<i32> for Operand<'_> {
    fn from(s: i32) -> Self {
        Operand::Int(s as i64)
    }
}
impl From<i64> for Operand<'_> {
    fn from(s: i64) -> Self {
        Operand::Int(s)
    }
}

impl Tensor {
    fn with(&self, storage: Storage, dims: Vec<usize>) -> Tensor {
        Tensor::from_storage(storage, dims)
    }

    /// The dtype `self op other` computes in, as `torch.result_type(self, other)`: `promote`,
    /// except that a zero-dimensional operand beside a dimensioned one counts only when its
    /// category is higher (`promote_dims`).
    pub fn result_type(&self, other: &Tensor) -> DType {
        promote_dims(
            self.dtype(),
            self.shape().is_empty(),
            other.dtype(),
            other.shape().is_empty(),
        )
    }

    /// `to_dtype` that borrows when the dtype is already right (no clone on the fast path).
    fn cast(&self, dtype: DType) -> Result<Cow<'_, Tensor>> {
        if dtype == self.dtype() {
            Ok(Cow::Borrowed(self))
        } else {
            Ok(Cow::Owned(self.to_dtype(dtype)?))
        }
    }

    /// A one-element tensor holding a scalar operand in `dtype`, on this tensor's device.
    fn scalar_tensor(&self, s: f64, dtype: DType) -> Result<Tensor> {
        Tensor::full_dtype((), s, dtype, Device::Cpu)?.to_device(self.device())
    }

    /// Both operands promoted to one dtype, and the broadcast (None for equal shapes).
    fn promoted<'a>(
        &'a self,
        rhs: &'a Tensor,
        op: &'static str,
        dtype: impl FnOnce(DType) -> DType,
    ) -> Result<(Cow<'a, Tensor>, Cow<'a, Tensor>, Option<Broadcast>)> {
        let (lhs, rhs) = self.joined(rhs)?;
        let bc = if lhs.shape() == rhs.shape() {
            None
        } else {
            Some(broadcast(op, lhs.shape(), rhs.shape())?)
        };
        let dt = dtype(lhs.result_type(&rhs));
        Ok((cast_cow(lhs, dt)?, cast_cow(rhs, dt)?, bc))
    }

    /// Both operands on one device. As in torch, a zero-dimensional CPU tensor joins a tensor
    /// on a GPU there (`x_cuda * Tensor::full((), 2.0, Device::Cpu)`, as
    /// `x_cuda * torch.tensor(2.)`); any other pair on two devices is a device mismatch.
    fn joined<'a>(&'a self, other: &'a Tensor) -> Result<(Cow<'a, Tensor>, Cow<'a, Tensor>)> {
        let cpu_scalar = |t: &Tensor| t.device() == Device::Cpu && t.shape().is_empty();
        if self.device() != other.device() {
            if cpu_scalar(other) {
                return Ok((Cow::Borrowed(self), Cow::Owned(other.to(self.device())?)));
            }
            if cpu_scalar(self) {
                return Ok((Cow::Owned(self.to(other.device())?), Cow::Borrowed(other)));
            }
        }
        self.same_device(other)?;
        Ok((Cow::Borrowed(self), Cow::Borrowed(other)))
    }

    pub(super) fn binary(&self, rhs: Operand, op: BinaryOp) -> Result<Tensor> {
        // torch's `/` is true division, and atan2 is float-only: integer operands give float32.
        let float_div = |d: DType| {
            if op.true_float() && !d.is_float() {
                DType::F32
            } else {
                d
            }
        };
        let rhs = match rhs {
            Operand::Scalar(s) => return self.scalar_op(s, true, op, false),
            Operand::Int(s) => {
                // Order-based and integer-division ops see the wrapped value (torch's: -3 is 253
                // for a uint8 tensor); `/` and `**` see the number itself
                // (true division is in float, and a negative exponent must stay an error).
                let s = match op {
                    BinaryOp::Maximum
                    | BinaryOp::Minimum
                    | BinaryOp::Fmod
                    | BinaryOp::Remainder
                    | BinaryOp::FloorDivide => wrap_int(s, promote_scalar(self.dtype(), false)),
                    _ => s as f64,
                };
                return self.scalar_op(s, false, op, false);
            }
            Operand::Tensor(t) => t,
        };
        no_bool_sub(op, self, Some(rhs))?;
        let (a, b, bc) = self.promoted(rhs, op.name(), float_div)?;
        if op.int_divides() && a.dtype().is_int() && !b.ne(0)?.all()?.item::<bool>()? {
            return Err(zero_division(op, a.dtype(), b.device()));
        }
        let storage = a
            .dense()?
            .read()
            .binary(&b.dense()?.read(), op, bc.as_ref())?;
        let dims = bc.map_or_else(|| self.shape().to_vec(), |bc| bc.dims);
        Ok(rules::binary(op, &a, &b, self.with(storage, dims)))
    }

    pub(super) fn scalar_op(
        &self,
        s: f64,
        is_float: bool,
        op: BinaryOp,
        scalar_first: bool,
    ) -> Result<Tensor> {
        no_bool_sub(op, self, None)?;
        let mut dt = promote_scalar(self.dtype(), is_float);
        if op.true_float() && !dt.is_float() {
            dt = DType::F32;
        }
        if op.int_divides() && dt.is_int() && s == 0.0 && !scalar_first {
            return Err(zero_division(op, dt, self.device()));
        }
        let a = self.cast(dt)?;
        let storage = a.dense()?.read().binary_scalar(op, s, scalar_first)?;
        let out = self.with(storage, self.shape().to_vec());
        Ok(rules::scalar(op, s, scalar_first, &a, out))
    }

    pub(super) fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let a = if op.needs_float() && !self.dtype().is_float() {
            self.cast(DType::F32)?
        } else {
            Cow::Borrowed(self)
        };
        let storage = a.dense()?.read().unary(op)?;
        Ok(rules::unary(
            op,
            &a,
            self.with(storage, self.shape().to_vec()),
        ))
    }

    fn compare(&self, rhs: Operand, op: CmpOp) -> Result<Tensor> {
        let scalar;
        let rhs = match rhs {
            Operand::Tensor(t) => t,
            Operand::Scalar(s) => {
                scalar = self.scalar_tensor(s, promote_scalar(self.dtype(), true))?;
                &scalar
            }
            Operand::Int(s) => {
                let dt = promote_scalar(self.dtype(), false);
                scalar = self.scalar_tensor(wrap_int(s, dt), dt)?;
                &scalar
            }
        };
        let (a, b, bc) = self.promoted(rhs, op.name(), |d| d)?;
        let storage = a.dense()?.read().cmp(&b.dense()?.read(), op, bc.as_ref())?;
        let dims = bc.map_or_else(|| self.shape().to_vec(), |bc| bc.dims);
        Ok(self.with(storage, dims))
    }

    /// Element-wise `==`, a bool tensor; the operands broadcast and promote as for `add`.
    pub fn eq<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.compare(rhs.into(), CmpOp::Eq)
    }
    pub fn ne<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.compare(rhs.into(), CmpOp::Ne)
    }
    pub fn lt<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.compare(rhs.into(), CmpOp::Lt)
    }
    pub fn le<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.compare(rhs.into(), CmpOp::Le)
    }
    pub fn gt<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.compare(rhs.into(), CmpOp::Gt)
    }
    pub fn ge<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.compare(rhs.into(), CmpOp::Ge)
    }

    /// This tensor where `condition` is true, `other` elsewhere (torch's
    /// `input.where(condition, other)`); all three broadcast, the values promote.
    pub fn where_(&self, condition: &Tensor, other: &Tensor) -> Result<Tensor> {
        let (x, y) = self.joined(other)?;
        condition.same_device(&x)?;
        if condition.dtype() != DType::Bool {
            return Err(Error::Invalid(format!(
                "where: the condition must be a bool tensor, got {} (shape {:?})",
                condition.dtype(),
                condition.shape()
            )));
        }
        let xy = broadcast("where", x.shape(), y.shape())?;
        let all = broadcast("where", condition.shape(), &xy.dims)?;
        let dims = all.dims.clone();
        let dt = x.result_type(&y);
        // Each operand as a stride-0 view of the common shape, made dense.
        let expand =
            |t: &Tensor| Ok::<_, Error>(t.broadcast_to(dims.as_slice())?.dense()?.into_owned());
        let (x, y) = (x.to_dtype(dt)?, y.to_dtype(dt)?);
        let storage = Storage::where_(
            &expand(condition)?.read(),
            &expand(&x)?.read(),
            &expand(&y)?.read(),
        )?;
        Ok(rules::where_(&x, condition, &y, self.with(storage, dims)))
    }

    /// Element-wise sum; a tensor operand broadcasts (numpy's rule), a scalar applies to all.
    pub fn add<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Add)
    }
    pub fn sub<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Sub)
    }
    pub fn mul<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Mul)
    }
    pub fn div<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Div)
    }
    /// Element-wise larger of the two.
    pub fn maximum<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Maximum)
    }
    pub fn minimum<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Minimum)
    }
    /// Each element limited to `[min, max]` (torch's `clamp`; a NaN stays NaN, and `min >
    /// max` gives `max` everywhere). The gradient passes where `min <= x <= max`.
    pub fn clamp<'a>(
        &self,
        min: impl Into<Operand<'a>>,
        max: impl Into<Operand<'a>>,
    ) -> Result<Tensor> {
        self.maximum(min)?.minimum(max)
    }
    /// `clamp` with only a lower bound (torch's `clamp_min`, `clamp(min=..)`).
    pub fn clamp_min<'a>(&self, min: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.maximum(min)
    }
    /// `clamp` with only an upper bound (torch's `clamp_max`).
    pub fn clamp_max<'a>(&self, max: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.minimum(max)
    }
    pub fn pow<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        let rhs = rhs.into();
        let exponent = match rhs {
            Operand::Tensor(t) => Some(t),
            _ => None,
        };
        if let Some(r) = autocast(AmpOp::Pow, "pow", &[Some(self), exponent], |t| {
            let base = t[0].as_ref().expect("the base");
            match &t[1] {
                Some(e) => base.binary(e.into(), BinaryOp::Pow),
                None => base.binary(rhs, BinaryOp::Pow),
            }
        }) {
            return r;
        }
        self.binary(rhs, BinaryOp::Pow)
    }

    /// `true` where the element is zero (`false`), as a bool tensor: torch's `logical_not`,
    /// the `~mask` of a mask. `!&t` is the same.
    pub fn logical_not(&self) -> Result<Tensor> {
        self.eq(0)
    }

    /// `true` where both elements are non-zero (torch's `logical_and`); broadcasts.
    pub fn logical_and(&self, other: &Tensor) -> Result<Tensor> {
        self.ne(0)?.mul(&other.ne(0)?)
    }

    /// `true` where either element is non-zero (torch's `logical_or`); broadcasts.
    pub fn logical_or(&self, other: &Tensor) -> Result<Tensor> {
        self.ne(0)?.add(&other.ne(0)?)
    }

    pub fn neg(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Neg)
    }
    pub fn abs(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Abs)
    }
    pub fn exp(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Exp, "exp", self, |x| x.exp()) {
            return r;
        }
        self.unary(UnaryOp::Exp)
    }
    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sqrt)
    }
    pub fn relu(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Relu)
    }
    pub fn log(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Log, "log", self, |x| x.log()) {
            return r;
        }
        self.unary(UnaryOp::Log)
    }
    pub fn tanh(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Tanh)
    }
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sigmoid)
    }
    pub fn sin(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sin)
    }
    pub fn cos(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Cos)
    }
    /// `ln(1 + x)`, exact for small `x` (where `(1 + x).log()` rounds to 0), as torch's.
    pub fn log1p(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Log1p, "log1p", self, |x| x.log1p()) {
            return r;
        }
        self.unary(UnaryOp::Log1p)
    }
    /// `exp(x) - 1`, exact for small `x`, as torch's.
    pub fn expm1(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Expm1, "expm1", self, |x| x.expm1()) {
            return r;
        }
        self.unary(UnaryOp::Expm1)
    }
    /// The error function, `2/sqrt(pi) * integral of exp(-t^2) from 0 to x`, as torch's.
    pub fn erf(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Erf)
    }
    /// Largest integer not above each element (an integer tensor is returned as it is).
    pub fn floor(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Floor)
    }
    pub fn ceil(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Ceil)
    }
    /// Nearest integer, halves to even as torch's `round` (`2.5` gives 2).
    pub fn round(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Round)
    }
    /// -1, 0 or 1 by the sign of each element (0 for NaN, as torch's); a bool tensor's
    /// sign is itself.
    pub fn sign(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return self.to_dtype(DType::U8)?.to_dtype(DType::Bool);
        }
        self.unary(UnaryOp::Sign)
    }

    fn reduce_all(&self, op: ReduceOp) -> Result<Tensor> {
        if matches!(op, ReduceOp::Max | ReduceOp::Min) && self.numel() == 0 {
            return Err(Error::Invalid(format!(
                "{}() of an empty tensor has no value",
                op.name()
            )));
        }
        let storage = self.dense()?.read().reduce_all(op)?;
        Ok(rules::reduce(op, self, None, self.with(storage, vec![])))
    }

    fn reduce_dim(&self, op: ReduceOp, dim: isize, keepdim: bool) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.shape()[d];
        if matches!(op, ReduceOp::Max | ReduceOp::Min) && len == 0 {
            return Err(Error::Invalid(format!(
                "{}() over dimension {d} of size 0 has no value",
                op.name()
            )));
        }
        let outer: usize = self.shape()[..d].iter().product();
        let inner: usize = self.shape()[d + 1..].iter().product();
        let storage = self.dense()?.read().reduce_dim(op, outer, len, inner)?;
        let mut dims = self.shape().to_vec();
        if keepdim {
            dims[d] = 1;
        } else {
            dims.remove(d);
        }
        Ok(rules::reduce(op, self, Some(d), self.with(storage, dims)))
    }

    /// Sum of all elements, as a 0-dimensional tensor (`.item()` gives the number).
    pub fn sum(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Sum, "sum", self, |x| x.sum()) {
            return r;
        }
        self.reduce_all(ReduceOp::Sum)
    }
    /// Sum along `dim` (negative counts from the end), which disappears from the shape.
    pub fn sum_dim(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Sum, "sum", self, |x| x.sum_dim(dim)) {
            return r;
        }
        self.reduce_dim(ReduceOp::Sum, dim, false)
    }
    /// Sum along `dim`, which stays in the shape with size 1.
    pub fn sum_keepdim(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Sum, "sum", self, |x| x.sum_keepdim(dim)) {
            return r;
        }
        self.reduce_dim(ReduceOp::Sum, dim, true)
    }
    /// Product of all elements, a 0-d tensor (1 for an empty tensor; integers and bools give
    /// int64, wrapping on overflow, as torch's).
    pub fn prod(&self) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Prod, "prod", self, |x| x.prod()) {
            return r;
        }
        self.reduce_all(ReduceOp::Prod)
    }
    /// Product along `dim`, which disappears from the shape.
    pub fn prod_dim(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Prod, "prod", self, |x| x.prod_dim(dim)) {
            return r;
        }
        self.reduce_dim(ReduceOp::Prod, dim, false)
    }
    /// Product along `dim`, which stays in the shape with size 1.
    pub fn prod_keepdim(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Prod, "prod", self, |x| x.prod_keepdim(dim)) {
            return r;
        }
        self.reduce_dim(ReduceOp::Prod, dim, true)
    }
    /// This tensor if it is a float one, else converted to float32: the dtype torch's
    /// float-only functions give integer and bool input.
    pub(crate) fn float_or_self(&self) -> Result<Tensor> {
        if self.dtype().is_float() {
            Ok(self.clone())
        } else {
            self.to_dtype(DType::F32)
        }
    }

    pub(super) fn float_only(&self, op: &str) -> Result<()> {
        if self.dtype().is_float() {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "{op}() needs a floating-point tensor, got {} (shape {:?}, {}); \
                 convert first with .to_dtype(DType::F32)",
                self.dtype(),
                self.shape(),
                self.device()
            )))
        }
    }

    /// Variance of all elements with torch's default correction (divides by n - 1, so one
    /// element or none gives NaN), a 0-d tensor.
    pub fn var(&self) -> Result<Tensor> {
        unlisted(self, || self.variance("var", None))
    }
    /// Variance along `dim` (n - 1 in the denominator), which disappears from the shape.
    pub fn var_dim(&self, dim: isize) -> Result<Tensor> {
        unlisted(self, || self.variance("var", Some(dim)))
    }
    /// Standard deviation, `var().sqrt()` (torch's `std`, corrected as `var`).
    pub fn std(&self) -> Result<Tensor> {
        let s = unlisted(self, || self.variance("std", None)?.sqrt())?;
        Ok(crate::autograd::relabel("std", s))
    }
    pub fn std_dim(&self, dim: isize) -> Result<Tensor> {
        let s = unlisted(self, || self.variance("std", Some(dim))?.sqrt())?;
        Ok(crate::autograd::relabel("std", s))
    }
    /// `sum((x - mean)^2) / (n - 1)`, over everything or along one dimension; two passes, as
    /// torch's, so a large mean does not swallow the spread. The gradient is torch's closed
    /// form, `2 (x - mean) / (n - 1)` (`rules::variance`).
    fn variance(&self, name: &str, dim: Option<isize>) -> Result<Tensor> {
        self.variance_corrected(name, dim, 1.0)
    }

    /// [`Tensor::variance`] dividing by `n - correction` (torch's `correction=`).
    pub(super) fn variance_corrected(
        &self,
        name: &str,
        dim: Option<isize>,
        correction: f64,
    ) -> Result<Tensor> {
        self.float_only(name)?;
        let d = dim.map(|dim| resolve_dim(dim, self.rank())).transpose()?;
        let (out, centred) = crate::autograd::no_grad(|| -> Result<_> {
            let centred = match d {
                None => self.sub(&self.mean()?)?,
                Some(d) => self.sub(&self.mean_dim(d as isize)?.unsqueeze(d as isize)?)?,
            };
            let squares = centred.mul(&centred)?;
            let total = match d {
                None => squares.sum()?,
                Some(d) => squares.sum_dim(d as isize)?,
            };
            // torch's degrees of freedom, max(0, n - correction): one element or none gives
            // 0/0 with the default correction of 1.
            let n = d.map_or(self.numel(), |d| self.shape()[d]);
            Ok((total.div((n as f64 - correction).max(0.0))?, centred))
        })?;
        Ok(rules::variance(self, centred, d, correction, out))
    }

    /// Mean of all elements, a 0-d tensor; NaN for an empty tensor (0/0), as in torch.
    pub fn mean(&self) -> Result<Tensor> {
        self.float_only("mean")?;
        let m = unlisted(self, || self.sum()?.mul(1.0 / self.numel() as f64))?;
        Ok(crate::autograd::relabel("mean", m))
    }
    /// Mean along `dim`; NaN where that dimension has size 0, as in torch.
    pub fn mean_dim(&self, dim: isize) -> Result<Tensor> {
        self.float_only("mean")?;
        let len = self.shape()[resolve_dim(dim, self.rank())?];
        let m = unlisted(self, || self.sum_dim(dim)?.mul(1.0 / len as f64))?;
        Ok(crate::autograd::relabel("mean_dim", m))
    }
    /// Largest element (NaN if any element is NaN, as in torch).
    pub fn max(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Max)
    }
    /// Largest values along `dim` (values only; torch also returns the indices).
    pub fn max_dim(&self, dim: isize) -> Result<Tensor> {
        self.reduce_dim(ReduceOp::Max, dim, false)
    }
    pub fn min(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Min)
    }
    pub fn min_dim(&self, dim: isize) -> Result<Tensor> {
        self.reduce_dim(ReduceOp::Min, dim, false)
    }

    fn arg_reduce(&self, max: bool, dim: Option<isize>) -> Result<Tensor> {
        let name = if max { "argmax" } else { "argmin" };
        let (outer, len, inner, dims) = match dim {
            None => (1, self.numel(), 1, vec![]),
            Some(dim) => {
                let d = resolve_dim(dim, self.rank())?;
                let mut dims = self.shape().to_vec();
                dims.remove(d);
                (
                    self.shape()[..d].iter().product(),
                    self.shape()[d],
                    self.shape()[d + 1..].iter().product(),
                    dims,
                )
            }
        };
        self.refuse_bool(&format!("{name}()"))?;
        if len == 0 {
            return Err(Error::Invalid(format!(
                "{name}() of an empty dimension has no value (shape {:?})",
                self.shape()
            )));
        }
        let storage = self.dense()?.read().arg_reduce(max, outer, len, inner)?;
        Ok(self.with(storage, dims))
    }

    /// Index of the largest element of the flattened tensor, an int64 0-d tensor (the
    /// first one on ties; a NaN counts as the largest, as in torch).
    pub fn argmax(&self) -> Result<Tensor> {
        self.arg_reduce(true, None)
    }
    /// Indices (int64) of the largest values along `dim`, which disappears from the shape.
    pub fn argmax_dim(&self, dim: isize) -> Result<Tensor> {
        self.arg_reduce(true, Some(dim))
    }
    pub fn argmin(&self) -> Result<Tensor> {
        self.arg_reduce(false, None)
    }
    pub fn argmin_dim(&self, dim: isize) -> Result<Tensor> {
        self.arg_reduce(false, Some(dim))
    }

    /// torch's batched matmul, for an operand of rank > 2: a stack of matrices whose leading
    /// dimensions broadcast against the other's (a 1-D operand is a row on the left, a column
    /// on the right, its dimension dropped from the result). Against one matrix the stack is
    /// one product of stacked rows; otherwise one product per matrix of the broadcast batch,
    /// stacked (composed of differentiable ops, so autograd needs no rule of its own).
    fn matmul_batched(&self, rhs: &Tensor) -> Result<Tensor> {
        let bad = || Error::ShapeMismatch {
            op: "matmul",
            lhs: self.shape().to_vec(),
            rhs: rhs.shape().to_vec(),
        };
        if self.rank() == 0 || rhs.rank() == 0 {
            return Err(bad());
        }
        let a = if self.rank() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if rhs.rank() == 1 {
            rhs.unsqueeze(1)?
        } else {
            rhs.clone()
        };
        let (ar, br) = (a.rank(), b.rank());
        let (m, k) = (a.shape()[ar - 2], a.shape()[ar - 1]);
        let (k2, n) = (b.shape()[br - 2], b.shape()[br - 1]);
        if k != k2 {
            return Err(bad());
        }
        let batch = broadcast("matmul", &a.shape()[..ar - 2], &b.shape()[..br - 2])
            .map_err(|_| bad())?
            .dims;
        let with = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
        let out = if br == 2 {
            // [..., m, k] x [k, n]: one product of all the rows.
            let rows: usize = a.shape()[..ar - 1].iter().product();
            a.reshape((rows, k))?.matmul(&b)?.reshape(with([m, n]))?
        } else {
            let count: usize = batch.iter().product();
            let a = a.expand(with([m, k]))?.reshape((count, m, k))?;
            let b = b.expand(with([k, n]))?.reshape((count, k, n))?;
            let parts = (0..count as isize)
                .map(|i| a.select(0, i)?.matmul(&b.select(0, i)?))
                .collect::<Result<Vec<_>>>()?;
            if parts.is_empty() {
                Tensor::zeros_dtype(with([m, n]), a.dtype(), self.device())?
            } else {
                Tensor::stack(&parts, 0)?.reshape(with([m, n]))?
            }
        };
        let out = if self.rank() == 1 {
            out.squeeze(-2)?
        } else {
            out
        };
        if rhs.rank() == 1 {
            out.squeeze(-1)
        } else {
            Ok(out)
        }
    }

    /// Matrix product (torch's rules: a 1-D left operand is a row, a 1-D right operand a
    /// column, and that dimension is dropped from the result; operands of rank > 2 are stacks
    /// of matrices whose leading dimensions broadcast).
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        if let Some(r) = autocast2(AmpOp::Matmul, "matmul", self, rhs, |a, b| a.matmul(b)) {
            return r;
        }
        self.same_device(rhs)?;
        let bad = || Error::ShapeMismatch {
            op: "matmul",
            lhs: self.shape().to_vec(),
            rhs: rhs.shape().to_vec(),
        };
        if self.dtype() != rhs.dtype() {
            return Err(Error::Invalid(format!(
                "matmul: both operands need one dtype, got {} (shape {:?}) and {} (shape {:?}) on {}",
                self.dtype(),
                self.shape(),
                rhs.dtype(),
                rhs.shape(),
                self.device()
            )));
        }
        if self.rank() > 2 || rhs.rank() > 2 {
            return self.matmul_batched(rhs);
        }
        let (m, k, lhs_vec) = match self.shape()[..] {
            [k] => (1, k, true),
            [m, k] => (m, k, false),
            _ => return Err(bad()),
        };
        let (k2, n, rhs_vec) = match rhs.shape()[..] {
            [k2] => (k2, 1, true),
            [k2, n] => (k2, n, false),
            _ => return Err(bad()),
        };
        if k != k2 {
            return Err(bad());
        }
        let storage = match self.matmul_cpu_views(rhs, m, k, n) {
            Some(s) => s,
            None => self.dense()?.read().matmul(&rhs.dense()?.read(), m, k, n)?,
        };
        let dims = match (lhs_vec, rhs_vec) {
            (false, false) => vec![m, n],
            (true, false) => vec![n],
            (false, true) => vec![m],
            (true, true) => vec![],
        };
        Ok(rules::matmul(self, rhs, self.with(storage, dims)))
    }
}

impl Tensor {
    /// The product of two 2-D float32/float64 CPU tensors read through their layouts: a
    /// transposed view (`w.t()` in every Linear layer and in matmul's backward rule) is
    /// packed straight from its storage instead of first being copied contiguous (for
    /// article 01's 10,000 x 1000 weight, a 40 MB copy per use). `None` when that does not
    /// apply: the caller takes the dense path.
    fn matmul_cpu_views(&self, rhs: &Tensor, m: usize, k: usize, n: usize) -> Option<Storage> {
        use super::layout::Layout;
        use super::matmul::{matmul_strided, packs, Elem, Strided};
        if self.device() != Device::Cpu
            || self.rank() != 2
            || rhs.rank() != 2
            || (self.is_dense() && rhs.is_dense())
            || !packs(m, k, n)
        {
            return None;
        }
        // Both operands read through their own (row, column) strides.
        fn product<T: Elem>(
            a: &[T],
            la: &Layout,
            b: &[T],
            lb: &Layout,
            (m, k, n): (usize, usize, usize),
        ) -> Vec<T> {
            let strided = |data, l: &Layout| Strided {
                data,
                rs: l.strides()[0],
                cs: l.strides()[1],
            };
            matmul_strided(
                strided(&a[la.offset()..], la),
                strided(&b[lb.offset()..], lb),
                m,
                k,
                n,
            )
        }
        let (la, lb) = (&self.layout, &rhs.layout);
        let (a, b) = (self.read(), rhs.read());
        let out = match (&*a, &*b) {
            (Storage::Cpu(CpuStorage::F32(a)), Storage::Cpu(CpuStorage::F32(b))) => {
                CpuStorage::F32(product(a, la, b, lb, (m, k, n)))
            }
            (Storage::Cpu(CpuStorage::F64(a)), Storage::Cpu(CpuStorage::F64(b))) => {
                CpuStorage::F64(product(a, la, b, lb, (m, k, n)))
            }
            _ => return None,
        };
        Some(Storage::Cpu(out))
    }
}

/// An int scalar as torch casts it to an integer tensor's dtype before the op, wrapping:
/// `u8_tensor == -3` compares with 253 and `u8_tensor.clamp_min(-3)` is 253 everywhere.
/// (Arithmetic wraps to the same result either way; the order-based ops need it first.)
fn wrap_int(s: i64, dt: DType) -> f64 {
    match dt {
        DType::U8 => s as u8 as f64,
        DType::I32 => s as i32 as f64,
        _ => s as f64,
    }
}

/// torch refuses `-` with a bool operand (`1 - mask` is how a mask gets inverted by mistake as
/// an integer tensor); the error says what to use instead. `rhs` is `None` for a scalar.
/// torch's error for an integer `fmod`, `remainder` or `floor_divide` by zero.
fn zero_division(op: BinaryOp, dtype: DType, device: Device) -> Error {
    Error::Invalid(format!(
        "{}: ZeroDivisionError: an integer divisor ({dtype} on {device}) is 0, as torch refuses \
         it; convert to a float dtype for IEEE results (inf, NaN)",
        op.name()
    ))
}

fn no_bool_sub(op: BinaryOp, lhs: &Tensor, rhs: Option<&Tensor>) -> Result<()> {
    let is_bool = |t: &Tensor| t.dtype() == DType::Bool;
    if op != BinaryOp::Sub || !(is_bool(lhs) || rhs.is_some_and(is_bool)) {
        return Ok(());
    }
    let what = match rhs {
        Some(r) => format!("{} and {} on {}", lhs.dtype(), r.dtype(), lhs.device()),
        None => format!("{} and a scalar on {}", lhs.dtype(), lhs.device()),
    };
    let hint = if is_bool(lhs) && rhs.is_some_and(is_bool) {
        "for two masks, a.ne(&b) is their exclusive or"
    } else {
        "to invert a mask use mask.logical_not() (or !&mask); to count with it, convert it \
         first (mask.to_dtype(DType::I64))"
    };
    Err(Error::Invalid(format!(
        "sub: subtraction with a bool tensor is not supported, as in torch ({what}); {hint}"
    )))
}

/// `cast` for an operand that may already be a copy (`to_dtype` keeps one already in `dtype`).
fn cast_cow(t: Cow<'_, Tensor>, dtype: DType) -> Result<Cow<'_, Tensor>> {
    match t {
        Cow::Borrowed(t) => t.cast(dtype),
        Cow::Owned(t) => Ok(Cow::Owned(t.to_dtype(dtype)?)),
    }
}

/// For operators: the error becomes a panic with the same message.
fn unwrap(r: Result<Tensor>) -> Tensor {
    r.unwrap_or_else(|e| panic!("{e}"))
}

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl ops::$trait<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                unwrap(self.binary(Operand::Tensor(rhs), $op))
            }
        }
        impl ops::$trait<Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                unwrap(self.binary(Operand::Tensor(&rhs), $op))
            }
        }
        impl ops::$trait<&Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                unwrap(self.binary(Operand::Tensor(rhs), $op))
            }
        }
        impl ops::$trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                unwrap(self.binary(Operand::Tensor(&rhs), $op))
            }
        }
        // A number on either side, as torch's Python numbers: a float (`x * 0.5`, `1.0 - x`)
        // or an integer (`x + 1`, `2 * x`; an integer keeps an integer tensor's dtype, a float
        // makes it float32). One type of each kind only: with f32 and f64 both, an unsuffixed
        // literal would have two candidates and `(&x * 3.0).sum()` would stop compiling
        // (rustc picks the literal's type only after it needs the method's receiver).
        scalar_operator!($trait, $method, $op, f32, true);
        scalar_operator!($trait, $method, $op, i32, false);
    };
}

macro_rules! scalar_operator {
    ($trait:ident, $method:ident, $op:expr, $ty:ty, $is_float:expr) => {
        impl ops::$trait<$ty> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $ty) -> Tensor {
                unwrap(self.scalar_op(rhs as f64, $is_float, $op, false))
            }
        }
        impl ops::$trait<$ty> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $ty) -> Tensor {
                unwrap(self.scalar_op(rhs as f64, $is_float, $op, false))
            }
        }
        impl ops::$trait<&Tensor> for $ty {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                unwrap(rhs.scalar_op(self as f64, $is_float, $op, true))
            }
        }
        impl ops::$trait<Tensor> for $ty {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                unwrap(rhs.scalar_op(self as f64, $is_float, $op, true))
            }
        }
    };
}

binary_operator!(Add, add, BinaryOp::Add);
binary_operator!(Sub, sub, BinaryOp::Sub);
binary_operator!(Mul, mul, BinaryOp::Mul);
binary_operator!(Div, div, BinaryOp::Div);

impl ops::Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        unwrap(self.unary(UnaryOp::Neg))
    }
}
impl ops::Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        unwrap(self.unary(UnaryOp::Neg))
    }
}

/// `!&mask` is torch's `~mask` (`logical_not`): a bool tensor, `true` where the element is zero.
impl ops::Not for &Tensor {
    type Output = Tensor;
    fn not(self) -> Tensor {
        unwrap(self.logical_not())
    }
}
impl ops::Not for Tensor {
    type Output = Tensor;
    fn not(self) -> Tensor {
        unwrap(self.logical_not())
    }
}
