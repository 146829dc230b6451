//! The operations, in two forms: methods that return `Result`, and operators (`&a + &b`,
//! `a * 2.0`) that panic with the same message, since an operator cannot return an error.

use super::op::{BinaryOp, ReduceOp, UnaryOp};
use super::shape::{broadcast, resolve_dim, strides};
use super::storage::{CudaBuf, Storage};
use super::{cpu, gpu, matmul, Tensor};
use crate::error::{Error, Result};
use std::ops;

/// The right-hand side of an arithmetic method: a tensor or a scalar, so that both
/// `a.mul(&b)` and `a.mul(2.0)` work.
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(f32),
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}
impl From<f32> for Operand<'_> {
    fn from(s: f32) -> Self {
        Operand::Scalar(s)
    }
}

fn cuda_out(b: CudaBuf) -> Storage {
    Storage::Cuda(b)
}

impl Tensor {
    fn with(&self, storage: Storage, dims: Vec<usize>) -> Tensor {
        Tensor::from_storage(storage, dims)
    }

    fn binary(&self, rhs: Operand, op: BinaryOp) -> Result<Tensor> {
        let rhs = match rhs {
            Operand::Scalar(s) => return self.scalar_op(s, op, false),
            Operand::Tensor(t) => t,
        };
        self.same_device(rhs)?;
        let same = self.dims == rhs.dims;
        let bc = if same {
            None
        } else {
            Some(broadcast(op.name(), &self.dims, &rhs.dims)?)
        };
        let (storage, dims) = match (&*self.storage, &*rhs.storage, &bc) {
            (Storage::Cpu(a), Storage::Cpu(b), None) => {
                (Storage::Cpu(cpu::binary_same(op, a, b)), self.dims.clone())
            }
            (Storage::Cpu(a), Storage::Cpu(b), Some(bc)) => (
                Storage::Cpu(cpu::binary_bcast(op, a, b, bc)),
                bc.dims.clone(),
            ),
            (Storage::Cuda(a), Storage::Cuda(b), None) => {
                (cuda_out(gpu::binary_same(op, a, b)?), self.dims.clone())
            }
            (Storage::Cuda(a), Storage::Cuda(b), Some(bc)) => {
                (cuda_out(gpu::binary_bcast(op, a, b, bc)?), bc.dims.clone())
            }
            _ => unreachable!("checked by same_device"),
        };
        Ok(self.with(storage, dims))
    }

    fn scalar_op(&self, s: f32, op: BinaryOp, scalar_first: bool) -> Result<Tensor> {
        let storage = match &*self.storage {
            Storage::Cpu(a) => Storage::Cpu(cpu::binary_scalar(op, a, s, scalar_first)),
            Storage::Cuda(a) => cuda_out(gpu::binary_scalar(op, a, s, scalar_first)?),
        };
        Ok(self.with(storage, self.dims.clone()))
    }

    fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let storage = match &*self.storage {
            Storage::Cpu(a) => Storage::Cpu(cpu::unary(op, a)),
            Storage::Cuda(a) => cuda_out(gpu::unary(op, a)?),
        };
        Ok(self.with(storage, self.dims.clone()))
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
    pub fn pow<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.binary(rhs.into(), BinaryOp::Pow)
    }

    pub fn neg(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Neg)
    }
    pub fn abs(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Abs)
    }
    pub fn exp(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Exp)
    }
    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sqrt)
    }
    pub fn relu(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Relu)
    }
    pub fn log(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Log)
    }
    pub fn tanh(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Tanh)
    }
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sigmoid)
    }

    fn reduce_all(&self, op: ReduceOp) -> Result<Tensor> {
        if op != ReduceOp::Sum && self.numel() == 0 {
            return Err(Error::Invalid(format!(
                "{}() of an empty tensor has no value",
                op.name()
            )));
        }
        let storage = match &*self.storage {
            Storage::Cpu(a) => Storage::Cpu(vec![cpu::reduce_all(op, a)]),
            Storage::Cuda(a) => cuda_out(gpu::reduce_all(op, a)?),
        };
        Ok(self.with(storage, vec![]))
    }

    fn reduce_dim(&self, op: ReduceOp, dim: isize, keepdim: bool) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.dims[d];
        if op != ReduceOp::Sum && len == 0 {
            return Err(Error::Invalid(format!(
                "{}() over dimension {d} of size 0 has no value",
                op.name()
            )));
        }
        let outer: usize = self.dims[..d].iter().product();
        let inner: usize = self.dims[d + 1..].iter().product();
        let storage = match &*self.storage {
            Storage::Cpu(a) => Storage::Cpu(cpu::reduce_dim(op, a, outer, len, inner)),
            Storage::Cuda(a) => cuda_out(gpu::reduce_dim(op, a, outer, len, inner)?),
        };
        let mut dims = self.dims.clone();
        if keepdim {
            dims[d] = 1;
        } else {
            dims.remove(d);
        }
        Ok(self.with(storage, dims))
    }

    /// Sum of all elements, as a 0-dimensional tensor (`.item()` gives the number).
    pub fn sum(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Sum)
    }
    /// Sum along `dim` (negative counts from the end), which disappears from the shape.
    pub fn sum_dim(&self, dim: isize) -> Result<Tensor> {
        self.reduce_dim(ReduceOp::Sum, dim, false)
    }
    /// Sum along `dim`, which stays in the shape with size 1.
    pub fn sum_keepdim(&self, dim: isize) -> Result<Tensor> {
        self.reduce_dim(ReduceOp::Sum, dim, true)
    }
    pub fn mean(&self) -> Result<Tensor> {
        if self.numel() == 0 {
            return Err(Error::Invalid(
                "mean() of an empty tensor has no value".into(),
            ));
        }
        self.sum()?.mul(1.0 / self.numel() as f32)
    }
    pub fn mean_dim(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.dims[d];
        if len == 0 {
            return Err(Error::Invalid(format!(
                "mean() over dimension {d} of size 0 has no value"
            )));
        }
        self.sum_dim(dim)?.mul(1.0 / len as f32)
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

    /// Swaps two dimensions (a copy: tensors here are always contiguous).
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        let (d0, d1) = (
            resolve_dim(dim0, self.rank())?,
            resolve_dim(dim1, self.rank())?,
        );
        if d0 == d1 {
            return Ok(self.clone());
        }
        let src = strides(&self.dims);
        let mut dims = self.dims.clone();
        let mut src_strides = src.clone();
        dims.swap(d0, d1);
        src_strides.swap(d0, d1);
        let storage = match &*self.storage {
            Storage::Cpu(a) => Storage::Cpu(cpu::permute(a, &dims, &src_strides)),
            Storage::Cuda(a) => cuda_out(gpu::permute(a, &dims, &src_strides)?),
        };
        Ok(self.with(storage, dims))
    }

    /// The transpose of a 2-D tensor (a 1-D tensor is returned as is, like torch).
    pub fn t(&self) -> Result<Tensor> {
        match self.rank() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            r => Err(Error::BadShape(format!(
                "t() expects a tensor with at most 2 dimensions, got {r}"
            ))),
        }
    }

    /// Matrix product of 1-D or 2-D tensors (torch's rules: a 1-D left operand is a row,
    /// a 1-D right operand a column, and that dimension is dropped from the result).
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        self.same_device(rhs)?;
        let bad = || Error::ShapeMismatch {
            op: "matmul",
            lhs: self.dims.clone(),
            rhs: rhs.dims.clone(),
        };
        let (m, k, lhs_vec) = match self.dims[..] {
            [k] => (1, k, true),
            [m, k] => (m, k, false),
            _ => return Err(bad()),
        };
        let (k2, n, rhs_vec) = match rhs.dims[..] {
            [k2] => (k2, 1, true),
            [k2, n] => (k2, n, false),
            _ => return Err(bad()),
        };
        if k != k2 {
            return Err(bad());
        }
        let storage = match (&*self.storage, &*rhs.storage) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Storage::Cpu(matmul::matmul(a, b, m, k, n)),
            (Storage::Cuda(a), Storage::Cuda(b)) => cuda_out(gpu::matmul(a, b, m, k, n)?),
            _ => unreachable!("checked by same_device"),
        };
        let dims = match (lhs_vec, rhs_vec) {
            (false, false) => vec![m, n],
            (true, false) => vec![n],
            (false, true) => vec![m],
            (true, true) => vec![],
        };
        Ok(self.with(storage, dims))
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
        impl ops::$trait<f32> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f32) -> Tensor {
                unwrap(self.scalar_op(rhs, $op, false))
            }
        }
        impl ops::$trait<f32> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f32) -> Tensor {
                unwrap(self.scalar_op(rhs, $op, false))
            }
        }
        impl ops::$trait<&Tensor> for f32 {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                unwrap(rhs.scalar_op(self, $op, true))
            }
        }
        impl ops::$trait<Tensor> for f32 {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                unwrap(rhs.scalar_op(self, $op, true))
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
