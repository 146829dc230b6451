//! Python's index assignment, `x[idx] = v` and `x[idx] += v`: torch's `index_put` /
//! `index_put_` (values of the tensor's dtype, broadcast to what `x[idx]` would give; with
//! `accumulate`, repeated positions add up) and `x.i_set(idx, v)`, which is `x[idx] = v` as
//! Python writes it (a number is converted to the tensor's dtype; an index of integers and
//! ranges writes into the view, converting as `copy_` does).
//!
//! Where each value goes is the flat position that `x.i(idx)` would read it from: the same
//! index applied to a ramp of positions on the host, so reading and writing can never
//! disagree on torch's placement rules. The values then move with `scatter.rs`'s placement.

use super::arith::Operand;
use super::dtype::fill_scalar;
use super::index::{check_index_device, Idx, IndexArg};
use super::scatter::Placement;
use super::Tensor;
use crate::device::Device;
use crate::error::{Error, Result};
use std::sync::Arc;

impl Tensor {
    /// The flat (row-major) positions of this tensor that `self.i(entries)` reads, and the
    /// shape that indexing gives.
    fn read_positions(&self, op: &str, entries: Vec<Idx>) -> Result<(Vec<i32>, Vec<usize>)> {
        let n = self.numel();
        if n > i32::MAX as usize {
            return Err(Error::BadShape(format!(
                "{op}: a tensor of {n} elements is past the 32-bit index range"
            )));
        }
        // The index tensors' device rule is checked against this tensor before they move to
        // the host, where the ramp lives.
        let mut host = Vec::with_capacity(entries.len());
        for e in entries {
            host.push(match e {
                Idx::Tensor(t) => {
                    check_index_device(self, &t)?;
                    Idx::Tensor(t.detach().to(Device::Cpu)?)
                }
                e => e,
            });
        }
        let ramp = Tensor::arange(0i64, n as i64, Device::Cpu)?.reshape(self.shape().to_vec())?;
        let picked = ramp.i(host)?;
        let dims = picked.shape().to_vec();
        let pos = picked
            .to_vec::<i64>()?
            .into_iter()
            .map(|p| p as i32)
            .collect();
        Ok((pos, dims))
    }

    /// A copy with `values` written at the elements `self.i(index)` names (torch's
    /// `index_put`; with `accumulate`, added there, repeated positions adding up). `values`
    /// has this tensor's dtype and broadcasts to the shape of `self.i(index)`. Gradients as
    /// torch's: for `values`, the gradient at the positions written; for this tensor, the
    /// gradient with zeros at the overwritten positions (all of it when accumulating).
    pub fn index_put(
        &self,
        index: impl IndexArg,
        values: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        if values.dtype() != self.dtype() {
            return Err(Error::Invalid(format!(
                "index_put: the values must have the tensor's dtype, as in torch: got {} \
                 values for a {} tensor; convert them with .to_dtype",
                values.dtype(),
                self.dtype()
            )));
        }
        // A 0-d value may live anywhere (torch's scalar rule); others on this device.
        if values.rank() > 0 && values.device() != self.device() {
            return Err(Error::DeviceMismatch {
                lhs: self.device(),
                rhs: values.device(),
            });
        }
        let (writes, dims) = self.read_positions("index_put", index.entries())?;
        let v = values.to(self.device())?;
        let src = v
            .view_of(v.layout.broadcast_to("index_put", &dims).map_err(|_| {
                Error::BadShape(format!(
                    "index_put: values of shape {:?} cannot be broadcast to the indexing \
                     result's shape {dims:?} (tensor shape {:?})",
                    values.shape(),
                    self.shape()
                ))
            })?)
            .detach()
            .contiguous()?;
        let reads = (0..writes.len() as i32).collect();
        let writes = Arc::new(writes);
        let placement = Placement {
            reads,
            writes: writes.to_vec(),
        };
        let out = crate::autograd::no_grad(|| self.detach().place(&src, placement, accumulate))?;
        if !crate::autograd::needs_grad(&[self, values]) {
            return Ok(out);
        }
        // Overwritten positions get no gradient from before the write.
        let overwritten = (!accumulate)
            .then(|| {
                let mut mask = vec![false; self.numel()];
                for &w in writes.iter() {
                    mask[w as usize] = true;
                }
                Tensor::from_vec(mask, self.shape().to_vec(), Device::Cpu)
            })
            .transpose()?;
        Ok(crate::autograd::record(
            out,
            "index_put",
            &[self, values],
            move |g| {
                let gx = match &overwritten {
                    None => g.clone(),
                    Some(m) => Tensor::zeros_dtype((), g.dtype(), g.device())?
                        .where_(&m.to(g.device())?, g)?,
                };
                // Every value's gradient is the one at its position (the engine sums a
                // broadcast value's copies), as torch's `grad[indices]`.
                let gv = g.gather_flat(writes.clone(), dims.clone())?;
                Ok(vec![Some(gx), Some(gv)])
            },
        ))
    }

    /// [`Tensor::index_put`] written into this tensor (torch's `index_put_`, which
    /// `x[idx] = v` calls): `x.index_put_((&rows, &cols), &v, false)?` is
    /// `x[rows, cols] = v`, and with `true` it is `x.index_put_((rows, cols), v,
    /// accumulate=True)`, where repeated positions add up (unlike `x[rows, cols] += v`).
    pub fn index_put_(
        &self,
        index: impl IndexArg,
        values: &Tensor,
        accumulate: bool,
    ) -> Result<()> {
        self.no_grad_source("index_put_", values)?;
        let out = crate::autograd::no_grad(|| self.detach().index_put(index, values, accumulate))?;
        self.copy_(&out)
    }

    /// Python's `x[index] = value`: `x.i_set((.., 0), 1.0)?` is `x[:, 0] = 1`,
    /// `x.i_set(&mask, 0.0)?` is `x[mask] = 0`, `x.i_set((&rows, &cols), &v)?` is
    /// `x[rows, cols] = v`. A number is converted to this tensor's dtype. An index of
    /// integers, ranges, `Ellipsis` and `NewAxis` writes into that view (a tensor value is
    /// converted and broadcast as `copy_` does); one with index tensors is
    /// [`Tensor::index_put_`], whose values must have this dtype, as in torch.
    pub fn i_set<'a>(&self, index: impl IndexArg, value: impl Into<Operand<'a>>) -> Result<()> {
        let entries = index.entries();
        let value = match value.into().tensor_or_number() {
            Ok(t) => t.clone(),
            Err(n) => fill_scalar("i_set", n, self.dtype(), self.device())?,
        };
        if !entries.iter().any(|e| matches!(e, Idx::Tensor(_))) {
            return self.i(entries)?.copy_(&value);
        }
        self.index_put_(entries, &value, false)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Device, Tensor};

    fn m() -> Tensor {
        Tensor::arange(0.0f32, 24.0, Device::Cpu)
            .unwrap()
            .reshape([2, 3, 4])
            .unwrap()
    }

    fn idx(v: Vec<i64>) -> Tensor {
        Tensor::from(v)
    }

    #[test]
    fn index_put_writes_where_indexing_reads() {
        let x = m();
        let (i, j) = (idx(vec![2, 0]), idx(vec![1, 3]));
        let v = Tensor::from(vec![-1.0f32, -2.0]);
        // x[:, i, j] = v: the values broadcast over the leading dimension.
        let y = x.index_put((.., &i, &j), &v, false).unwrap();
        let back = y.i((.., &i, &j)).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), [-1., -2., -1., -2.]);
        assert_eq!(
            y.sum().unwrap().to_vec::<f32>().unwrap()[0],
            276. - (9. + 3. + 21. + 15.) - 6.
        );
        // Accumulating adds repeated positions up; writing keeps one of them.
        let z = Tensor::zeros(3, Device::Cpu).unwrap();
        let twice = idx(vec![1, 1]);
        let acc = z
            .index_put(&twice, &Tensor::from(vec![5.0f32, 7.0]), true)
            .unwrap();
        assert_eq!(acc.to_vec::<f32>().unwrap(), [0., 12., 0.]);
        // Errors name what is wrong.
        let e = x
            .index_put(&i, &Tensor::from(vec![1i64]), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("dtype") && e.contains("int64"), "{e}");
        let e = x
            .index_put((.., &i, &j), &Tensor::from(vec![1.0f32, 2.0, 3.0]), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[3]") && e.contains("[2, 2]"), "{e}");
    }

    #[test]
    fn i_set_is_pythons_assignment() {
        let x = m();
        x.i_set((.., 0), 1.0).unwrap(); // x[:, 0] = 1
        assert_eq!(x.i((1, 0)).unwrap().to_vec::<f32>().unwrap(), [1.; 4]);
        let mask = x.gt(20.0).unwrap();
        x.i_set(&mask, 0.0).unwrap(); // x[x > 20] = 0
        assert_eq!(
            x.i((1, 2)).unwrap().to_vec::<f32>().unwrap(),
            [20., 0., 0., 0.]
        );
        x.i_set(([0, 1], [1, 2], [3, 0]), -5).unwrap(); // x[[0, 1], [1, 2], [3, 0]] = -5
        assert_eq!(x.i((0, 1, 3)).unwrap().to_vec::<f32>().unwrap(), [-5.]);
        assert_eq!(x.i((1, 2, 0)).unwrap().to_vec::<f32>().unwrap(), [-5.]);
        // A basic index converts a tensor value as copy_ does (int into float here).
        x.i_set((0, 0), &Tensor::from(vec![7i64, 8, 9, 10]))
            .unwrap();
        assert_eq!(
            x.i((0, 0)).unwrap().to_vec::<f32>().unwrap(),
            [7., 8., 9., 10.]
        );
        // Integer tensors take numbers in their dtype.
        let n = Tensor::from(vec![1i64, 2, 3]);
        n.i_set(idx(vec![0, 2]), 9_000_000_000_000_000_001i64)
            .unwrap();
        assert_eq!(
            n.to_vec::<i64>().unwrap(),
            [9_000_000_000_000_000_001, 2, 9_000_000_000_000_000_001]
        );
    }

    #[test]
    fn index_put_gradients_are_torchs() {
        let a = Tensor::arange(0.0f32, 6.0, Device::Cpu)
            .unwrap()
            .reshape([2, 3])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let v = Tensor::from(vec![10.0f32, 20.0])
            .requires_grad_(true)
            .unwrap();
        let w = Tensor::arange(0.0f32, 6.0, Device::Cpu)
            .unwrap()
            .reshape([2, 3])
            .unwrap();
        // Repeated positions, written: both values see the gradient there (torch's
        // `grad[indices]`), and the overwritten element none.
        let out = a
            .index_put((idx(vec![0, 0]), idx(vec![2, 2])), &v, false)
            .unwrap();
        assert_eq!(out.grad_fn(), Some("IndexPutBackward0"));
        out.mul(&w).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(
            a.grad().unwrap().to_vec::<f32>().unwrap(),
            [0., 1., 0., 3., 4., 5.]
        );
        assert_eq!(v.grad().unwrap().to_vec::<f32>().unwrap(), [2., 2.]);
        // In place into a leaf that requires grad is refused, as in torch.
        let e = a.i_set(idx(vec![0]), 1.0).unwrap_err().to_string();
        assert!(e.contains("leaf"), "{e}");
    }
}
