//! What the host-computed factorisations (`qr.rs`, `spectral.rs`) share: reading a batch of
//! matrices to the host in float64, uploading every factor of every matrix as one tensor
//! (one transfer however many factors), and recording that tensor as one autograd node
//! whose outputs are views of it, so a factorisation with several results (Q and R, U, S
//! and Vh) has one backward that sees all their gradients at once, as torch's does.

use crate::autograd::{record, Saved};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// The matrices of `a` (`[.., m, n]`) on the host in float64, row-major one after another.
pub(super) struct HostBatch {
    pub batch: Vec<usize>,
    pub m: usize,
    pub n: usize,
    data: Vec<f64>,
}

impl HostBatch {
    /// `a` read for `op` (torch's name, for messages): float32 or float64 and at least 2-D;
    /// with `finite`, a NaN or infinity is refused, as torch's iterative solvers refuse it
    /// (an iteration on NaN never converges).
    pub fn read(op: &str, a: &Tensor, finite: bool) -> Result<HostBatch> {
        let r = a.rank();
        if r < 2 {
            return Err(Error::BadShape(format!(
                "linalg.{op}: A must have at least 2 dimensions, got shape {:?}",
                a.shape()
            )));
        }
        if !matches!(a.dtype(), DType::F32 | DType::F64) {
            return Err(Error::Invalid(format!(
                "linalg.{op}: needs a float32 or float64 tensor, got {} (shape {:?}), as \
                 torch's; convert first with .to_dtype(DType::F32)",
                a.dtype(),
                a.shape()
            )));
        }
        let data = a.detach().to_dtype(DType::F64)?.to_vec::<f64>()?;
        if finite && data.iter().any(|v| !v.is_finite()) {
            return Err(Error::Invalid(format!(
                "linalg.{op}: the input holds NaN or infinity, so the iteration cannot \
                 converge (shape {:?})",
                a.shape()
            )));
        }
        Ok(HostBatch {
            batch: a.shape()[..r - 2].to_vec(),
            m: a.shape()[r - 2],
            n: a.shape()[r - 1],
            data,
        })
    }

    pub fn count(&self) -> usize {
        self.batch.iter().product()
    }

    /// The `b`-th matrix, row-major.
    pub fn matrix(&self, b: usize) -> &[f64] {
        let size = self.m * self.n;
        &self.data[b * size..(b + 1) * size]
    }
}

/// The factors of each matrix of a batch, side by side: row `b` of a `[count, total]`
/// matrix holds matrix `b`'s factors one after another, each flattened.
pub(super) struct Factors {
    shapes: Vec<Vec<usize>>,
    data: Vec<f64>,
}

impl Factors {
    /// Room for factors of these per-matrix shapes.
    pub fn new(shapes: Vec<Vec<usize>>) -> Factors {
        Factors {
            shapes,
            data: Vec::new(),
        }
    }

    /// One matrix's factors, in the order of the shapes.
    pub fn push(&mut self, parts: &[&[f64]]) {
        debug_assert_eq!(parts.len(), self.shapes.len());
        for (p, s) in parts.iter().zip(&self.shapes) {
            debug_assert_eq!(p.len(), s.iter().product::<usize>());
            self.data.extend_from_slice(p);
        }
    }

    fn total(&self) -> usize {
        self.shapes
            .iter()
            .map(|s| s.iter().product::<usize>())
            .sum()
    }

    /// Each factor of `packed` (`[count, total]`, or its gradient) as `[batch.., shape]`.
    fn split(shapes: &[Vec<usize>], packed: &Tensor, batch: &[usize]) -> Result<Vec<Tensor>> {
        let mut at = 0;
        shapes
            .iter()
            .map(|s| {
                let len = s.iter().product::<usize>();
                let mut shape = batch.to_vec();
                shape.extend_from_slice(s);
                let part = packed.narrow(1, at, len)?.reshape(shape)?;
                at += len;
                Ok(part)
            })
            .collect()
    }

    /// The factors on `a`'s device in its dtype (rounded once from float64), recorded as
    /// one node named `name` whose `backward` gets the plain factors (no gradient history)
    /// and one gradient per factor, and gives `a`'s gradient.
    pub fn finish(
        self,
        host: &HostBatch,
        a: &Tensor,
        name: &'static str,
        backward: impl Fn(&[Tensor], &[Tensor]) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Result<Vec<Tensor>> {
        let total = self.total();
        let Factors { shapes, data } = self;
        let packed = Tensor::from_vec(data, [host.count(), total], Device::Cpu)?
            .to_dtype(a.dtype())?
            .to(a.device())?;
        let plain = Factors::split(&shapes, &packed, &host.batch)?;
        let saved: Vec<Saved> = plain.iter().map(Saved::new).collect();
        let (node_shapes, batch) = (shapes.clone(), host.batch.clone());
        let packed = record(packed, name, &[a], move |g| {
            let factors = saved
                .iter()
                .map(|s| s.get().cloned())
                .collect::<Result<Vec<_>>>()?;
            let grads = Factors::split(&node_shapes, g, &batch)?;
            Ok(vec![Some(backward(&factors, &grads)?)])
        });
        Factors::split(&shapes, &packed, &host.batch)
    }
}

/// Whether every element of `t` is zero: a factor whose gradient is all zero did not take
/// part in the loss, and torch's formulas then take a shorter form that stays finite where
/// the full one divides 0 by 0 (repeated eigenvalues, a zero singular value).
pub(super) fn all_zero(t: &Tensor) -> Result<bool> {
    Ok(!t.ne(0)?.any()?.to_vec::<bool>()?[0])
}

/// The `k x k` identity in `like`'s dtype on its device.
pub(super) fn eye_like(k: usize, like: &Tensor) -> Result<Tensor> {
    Tensor::eye(k, like.device())?.to_dtype(like.dtype())
}
