//! `cumsum` and `cumprod`, torch's inclusive scans along one dimension: one backend op
//! (`Storage::scan_dim`: the CPU's loops, CUDA's `scan_strided` in reduce.cu) and their
//! gradients (`autograd::rules::scan`).

use super::autocast::{autocast1, AmpOp};
use super::shape::resolve_dim;
use super::Tensor;
use crate::autograd::rules;
use crate::error::Result;
use crate::tensor::op::ReduceOp;

impl Tensor {
    /// Running sums along `dim`: element `i` is the sum of elements `0..=i` (torch's
    /// `cumsum`). The shape is kept; integers and bools give int64, as in torch.
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Cumsum, "cumsum", self, |x| x.cumsum(dim)) {
            return r;
        }
        self.scan(ReduceOp::Sum, dim)
    }

    /// Running products along `dim` (torch's `cumprod`); the gradient is exact where the
    /// input has zeros, as torch's.
    pub fn cumprod(&self, dim: isize) -> Result<Tensor> {
        if let Some(r) = autocast1(AmpOp::Cumprod, "cumprod", self, |x| x.cumprod(dim)) {
            return r;
        }
        self.scan(ReduceOp::Prod, dim)
    }

    fn scan(&self, op: ReduceOp, dim: isize) -> Result<Tensor> {
        // A 0-d tensor scans as one element along dimension 0 or -1, as in torch.
        let d = resolve_dim(dim, self.rank().max(1))?;
        let dims = self.shape().to_vec();
        let (outer, len, inner) = if dims.is_empty() {
            (1, 1, 1)
        } else {
            (
                dims[..d].iter().product(),
                dims[d],
                dims[d + 1..].iter().product(),
            )
        };
        let storage = self.dense()?.read().scan_dim(op, outer, len, inner)?;
        let out = Tensor::from_storage(storage, dims);
        Ok(rules::scan(op, self, d, out))
    }
}
