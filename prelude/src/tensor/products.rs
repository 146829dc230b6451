//! torch's named products, built on `matmul` and `mul` (so each runs on every device and
//! takes its gradient from theirs): `mm`, `bmm`, `mv`, `inner`, `vdot`, `kron`, `tensordot`, and the
//! scaled sums `addmm`, `addmv`, `addr`, `baddbmm`, `addbmm` (`beta * self + alpha * product`).

use super::arith::Operand;
use super::autocast::{autocast, AmpOp};
use super::dtype::{promote, DType};
use super::shape::resolve_dim;
use super::Tensor;
use crate::autograd;
use crate::error::{Error, Result};

/// Ok when each tensor has the rank its op needs; otherwise an error naming the op, what it
/// needs and both shapes.
fn ranks(op: &str, need: &str, pairs: &[(&Tensor, usize)]) -> Result<()> {
    if pairs.iter().all(|(t, r)| t.rank() == *r) {
        return Ok(());
    }
    let shapes: Vec<&[usize]> = pairs.iter().map(|(t, _)| t.shape()).collect();
    Err(Error::BadShape(format!(
        "{op}: needs {need}, got shapes {shapes:?}"
    )))
}

impl Tensor {
    /// The product of two matrices (torch's `mm`; no broadcasting, unlike `matmul`).
    pub fn mm(&self, mat2: &Tensor) -> Result<Tensor> {
        ranks("mm", "two matrices (2-D tensors)", &[(self, 2), (mat2, 2)])?;
        Ok(autograd::relabel("mm", self.matmul(mat2)?))
    }

    /// Batched matrix product `[b, n, m] x [b, m, p] -> [b, n, p]` with one batch size on
    /// both sides (torch's `bmm`; no broadcasting).
    pub fn bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        ranks("bmm", "two 3-D tensors", &[(self, 3), (mat2, 3)])?;
        if self.shape()[0] != mat2.shape()[0] {
            return Err(Error::BadShape(format!(
                "bmm: the batch sizes differ, got shapes {:?} and {:?}",
                self.shape(),
                mat2.shape()
            )));
        }
        Ok(autograd::relabel("bmm", self.matmul(mat2)?))
    }

    /// Matrix times vector, `[n, m] x [m] -> [n]` (torch's `mv`).
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        ranks("mv", "a matrix and a vector", &[(self, 2), (vec, 1)])?;
        Ok(autograd::relabel("mv", self.matmul(vec)?))
    }

    /// The sum of products over the last dimension of each (torch's `inner`): shape
    /// `self.shape[..-1] + other.shape[..-1]`; for two vectors, their dot product; a 0-d
    /// operand multiplies.
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        if self.rank() == 0 || other.rank() == 0 {
            return self.mul(other);
        }
        let (k, k2) = (
            self.shape()[self.rank() - 1],
            other.shape()[other.rank() - 1],
        );
        if k != k2 {
            return Err(Error::BadShape(format!(
                "inner: the last dimensions differ, got shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        let mut dims = self.shape()[..self.rank() - 1].to_vec();
        dims.extend_from_slice(&other.shape()[..other.rank() - 1]);
        let rows = |t: &Tensor| t.reshape(vec![t.numel() / k.max(1), k]);
        let (a, b) = (rows(self)?, rows(other)?);
        Ok(autograd::relabel(
            "inner",
            a.matmul(&b.t()?)?.reshape(dims)?,
        ))
    }

    /// The dot product of two vectors (torch's `vdot`, which conjugates the first of complex
    /// vectors; gpulab's dtypes are real, so it is [`Tensor::dot`]).
    pub fn vdot(&self, other: &Tensor) -> Result<Tensor> {
        self.dot(other)
    }

    /// The sum of products over the last `n` dimensions of `self` and the first `n` of
    /// `other` (torch's `tensordot(a, b, dims=n)`): shape `self.shape[..-n] +
    /// other.shape[n..]`; `n = 0` is the outer product of the two.
    pub fn tensordot(&self, other: &Tensor, n: usize) -> Result<Tensor> {
        if n > self.rank() || n > other.rank() {
            return Err(Error::BadShape(format!(
                "tensordot: cannot contract {n} dimensions of shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        let a: Vec<isize> = (self.rank() - n..self.rank()).map(|d| d as isize).collect();
        let b: Vec<isize> = (0..n).map(|d| d as isize).collect();
        self.tensordot_dims(other, &a, &b)
    }

    /// The sum of products over dimensions `dims_a` of `self` paired with `dims_b` of
    /// `other` (torch's `tensordot(a, b, dims=(dims_a, dims_b))`): the result has `self`'s
    /// other dimensions, then `other`'s, in order. A pair where one side has size 1 is
    /// summed on the other side first, as torch's; both tensors have one dtype, as torch
    /// requires. One matrix product of the two, each permuted and flattened to a matrix.
    pub fn tensordot_dims(
        &self,
        other: &Tensor,
        dims_a: &[isize],
        dims_b: &[isize],
    ) -> Result<Tensor> {
        if dims_a.len() != dims_b.len() {
            return Err(Error::BadShape(format!(
                "tensordot: both dimension lists must have the same length, got {dims_a:?} and {dims_b:?}"
            )));
        }
        if self.dtype() != other.dtype() {
            return Err(Error::Invalid(format!(
                "tensordot: both tensors must have the same dtype, got {} and {}",
                self.dtype(),
                other.dtype()
            )));
        }
        let resolve = |t: &Tensor, dims: &[isize]| -> Result<Vec<usize>> {
            let d = dims
                .iter()
                .map(|&d| resolve_dim(d, t.rank()))
                .collect::<Result<Vec<_>>>()?;
            if let Some(i) = (0..d.len()).find(|&i| d[..i].contains(&d[i])) {
                return Err(Error::BadShape(format!(
                    "tensordot: dimension {} appears twice in {dims:?} (shape {:?})",
                    d[i],
                    t.shape()
                )));
            }
            Ok(d)
        };
        let (da, db) = (resolve(self, dims_a)?, resolve(other, dims_b)?);
        let (mut a, mut b) = (self.clone(), other.clone());
        let mut k = 1;
        for (&i, &j) in da.iter().zip(&db) {
            let (s1, s2) = (self.shape()[i], other.shape()[j]);
            // A size-1 side broadcasts: the other side's sum is the whole contraction.
            if s2 == 1 && s1 != 1 {
                a = a.sum_keepdim(i as isize)?.to_dtype(self.dtype())?;
            } else if s1 == 1 && s2 != 1 {
                b = b.sum_keepdim(j as isize)?.to_dtype(other.dtype())?;
            } else if s1 != s2 {
                return Err(Error::BadShape(format!(
                    "tensordot: contracted dimensions differ: size {s1} in dimension {i} of \
                     shape {:?}, size {s2} in dimension {j} of shape {:?}",
                    self.shape(),
                    other.shape()
                )));
            } else {
                k *= s1;
            }
        }
        let free_a: Vec<usize> = (0..a.rank()).filter(|d| !da.contains(d)).collect();
        let free_b: Vec<usize> = (0..b.rank()).filter(|d| !db.contains(d)).collect();
        let sizes = |t: &Tensor, ds: &[usize]| ds.iter().map(|&d| t.shape()[d]).collect::<Vec<_>>();
        let (fa, fb) = (sizes(&a, &free_a), sizes(&b, &free_b));
        let perm = |first: &[usize], then: &[usize]| -> Vec<isize> {
            first.iter().chain(then).map(|&d| d as isize).collect()
        };
        let (m, n) = (fa.iter().product::<usize>(), fb.iter().product::<usize>());
        let a = a.permute(&perm(&free_a, &da))?.reshape([m, k])?;
        let b = b.permute(&perm(&db, &free_b))?.reshape([k, n])?;
        let mut shape = fa;
        shape.extend(fb);
        a.mm(&b)?.reshape(shape)
    }

    /// The Kronecker product (torch's `kron`): every element of `self` times the whole of
    /// `other`, as blocks; ranks are matched with leading 1s, and shape `i` is
    /// `self.shape[i] * other.shape[i]`. The dtypes promote as for `mul`.
    pub fn kron(&self, other: &Tensor) -> Result<Tensor> {
        let r = self.rank().max(other.rank());
        let padded = |t: &Tensor| {
            let mut d = vec![1; r - t.rank()];
            d.extend_from_slice(t.shape());
            d
        };
        let (a, b) = (padded(self), padded(other));
        let spread_a: Vec<usize> = a.iter().flat_map(|&n| [n, 1]).collect();
        let spread_b: Vec<usize> = b.iter().flat_map(|&n| [1, n]).collect();
        let dims: Vec<usize> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let out = self.reshape(spread_a)?.mul(&other.reshape(spread_b)?)?;
        Ok(autograd::relabel("kron", out.reshape(dims)?))
    }

    /// `beta * self + alpha * (mat1 @ mat2)`, as torch's `addmm` (`self` broadcasts to the
    /// product's shape and is not read when `beta` is 0; for integer tensors `beta` and
    /// `alpha` are cut toward zero to whole numbers, as torch converts them). A matrix
    /// product for autocast.
    pub fn addmm(&self, mat1: &Tensor, mat2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        ranks(
            "addmm",
            "mat1 and mat2 to be matrices",
            &[(mat1, 2), (mat2, 2)],
        )?;
        self.add_product("addmm", [mat1, mat2], beta, alpha, |a, b| a.matmul(b))
    }

    /// `beta * self + alpha * (mat @ vec)`, as torch's `addmv` (rules as [`Tensor::addmm`]).
    pub fn addmv(&self, mat: &Tensor, vec: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        ranks("addmv", "a matrix and a vector", &[(mat, 2), (vec, 1)])?;
        self.add_product("addmv", [mat, vec], beta, alpha, |a, b| a.matmul(b))
    }

    /// `beta * self + alpha * outer(vec1, vec2)`, as torch's `addr` (rules as
    /// [`Tensor::addmm`]).
    pub fn addr(&self, vec1: &Tensor, vec2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        ranks("addr", "two vectors", &[(vec1, 1), (vec2, 1)])?;
        self.add_product("addr", [vec1, vec2], beta, alpha, |a, b| a.outer(b))
    }

    /// `beta * self + alpha * bmm(batch1, batch2)`, as torch's `baddbmm` (`self` broadcasts
    /// to `[b, n, p]`; rules as [`Tensor::addmm`]).
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        self.add_product("baddbmm", [batch1, batch2], beta, alpha, |a, b| a.bmm(b))
    }

    /// `beta * self + alpha * sum_i(batch1[i] @ batch2[i])`, as torch's `addbmm`: the batch
    /// of products summed into one `[n, p]` matrix.
    pub fn addbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        self.add_product("addbmm", [batch1, batch2], beta, alpha, |a, b| {
            a.bmm(b)?.sum_dim(0)
        })
    }

    /// `beta * self + alpha * product(a, b)` in the dtype the three promote to: float16 and
    /// bfloat16 are computed in float32 and rounded once, as torch's kernels accumulate.
    fn add_product(
        &self,
        op: &'static str,
        [m1, m2]: [&Tensor; 2],
        beta: f64,
        alpha: f64,
        product: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Copy,
    ) -> Result<Tensor> {
        let inputs = [Some(self), Some(m1), Some(m2)];
        if let Some(r) = autocast(AmpOp::Matmul, op, &inputs, |t| {
            let t: Vec<&Tensor> = t
                .iter()
                .map(|x| x.as_ref().expect("three inputs"))
                .collect();
            t[0].add_product(op, [t[1], t[2]], beta, alpha, product)
        }) {
            return r;
        }
        // For integer tensors torch converts the numbers to the integer type, toward zero.
        let int = !self.dtype().is_float();
        let scalar = |v: f64| -> Operand<'static> {
            if int {
                Operand::Int(v.trunc() as i64)
            } else {
                Operand::Scalar(v)
            }
        };
        let (b, a) = (scalar(beta), scalar(alpha));
        let half = matches!(self.dtype(), DType::F16 | DType::BF16);
        let work = |t: &Tensor| {
            if half {
                t.to_dtype(DType::F32)
            } else {
                Ok(t.clone())
            }
        };
        let product = product(&work(m1)?, &work(m2)?)?.mul(a)?;
        let dims = product.shape().to_vec();
        if self.broadcast_to(dims.clone()).is_err() {
            return Err(Error::BadShape(format!(
                "{op}: self of shape {:?} does not broadcast to the product's shape {dims:?}",
                self.shape()
            )));
        }
        let out = if beta == 0.0 {
            product.broadcast_to(dims)?.deep_clone()?
        } else {
            product.add(&work(self)?.mul(b)?)?
        };
        let want = promote(self.dtype(), promote(m1.dtype(), m2.dtype()));
        Ok(autograd::relabel(op, out.to_dtype(want)?))
    }
}
