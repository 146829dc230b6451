//! Fused optimiser updates on the CPU: one pass over a parameter, its gradient and the
//! optimiser's state instead of a dozen tensor ops, each of which would allocate (and fault
//! in) a parameter-sized buffer. Article 01's dense network has 11 M parameters: Adam as
//! separate ops took about 1 s a step on 2 cores, fused it is a few tens of milliseconds.
//!
//! The state tensors (Adam's moments) belong to the optimiser alone and are updated in
//! place. The parameter gets a fresh buffer: the autograd graph of the last forward pass, or
//! a clone the user kept, may share its storage, and tensors here are values unless written
//! through an in-place method. Anything else (CUDA, half types, shared state) returns `None`
//! and the optimiser falls back to its tensor-op path.

use super::cpu_backend::CpuStorage;
use super::storage::Storage;
use super::Tensor;
use crate::device::Device;
use crate::error::Result;
use rayon::prelude::*;
use std::sync::Arc;

/// Adam's coefficients for one step (torch's form: `p -= lr_bc1 * m / (sqrt(v) * inv_sqrt_bc2 + eps)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdamCoeffs {
    pub beta1: f64,
    pub beta2: f64,
    /// lr / (1 - beta1^t)
    pub lr_bc1: f64,
    /// 1 / sqrt(1 - beta2^t)
    pub inv_sqrt_bc2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

/// Elements per rayon task: below this, waking a second core costs more than it saves.
const CHUNK: usize = 1 << 15;

macro_rules! adam_kernel {
    ($name:ident, $t:ty) => {
        fn $name(w: &[$t], g: &[$t], m: &mut [$t], v: &mut [$t], c: AdamCoeffs) -> Vec<$t> {
            let (b1, b2) = (c.beta1 as $t, c.beta2 as $t);
            let (lr, isb, eps, wd) = (
                c.lr_bc1 as $t,
                c.inv_sqrt_bc2 as $t,
                c.eps as $t,
                c.weight_decay as $t,
            );
            let mut out = vec![0 as $t; w.len()];
            out.par_chunks_mut(CHUNK)
                .zip(w.par_chunks(CHUNK))
                .zip(g.par_chunks(CHUNK))
                .zip(m.par_chunks_mut(CHUNK))
                .zip(v.par_chunks_mut(CHUNK))
                .for_each(|((((o, w), g), m), v)| {
                    for i in 0..o.len() {
                        let gi = if wd != 0.0 { g[i] + wd * w[i] } else { g[i] };
                        let mi = b1 * m[i] + (1.0 - b1) * gi;
                        let vi = b2 * v[i] + (1.0 - b2) * gi * gi;
                        m[i] = mi;
                        v[i] = vi;
                        o[i] = w[i] - lr * (mi / (vi.sqrt() * isb + eps));
                    }
                });
            out
        }
    };
}
adam_kernel!(adam_f32, f32);
adam_kernel!(adam_f64, f64);

impl Tensor {
    /// A tensor of zeros shaped and typed as `self`, on the CPU, for optimiser state.
    pub(crate) fn fused_state_like(&self) -> Option<Tensor> {
        let n = self.numel();
        let s = match self.dtype() {
            super::DType::F32 => CpuStorage::F32(vec![0.0; n]),
            super::DType::F64 => CpuStorage::F64(vec![0.0; n]),
            _ => return None,
        };
        Some(Tensor::from_storage(Storage::Cpu(s), self.shape().to_vec()))
    }

    /// One Adam step for the parameter `self` with gradient `g`, updating the moments `m`
    /// and `v` in place and returning the parameter's new value; `None` (nothing changed)
    /// when the fused CPU path does not apply.
    pub(crate) fn fused_adam_cpu(
        &self,
        g: &Tensor,
        m: &Tensor,
        v: &Tensor,
        c: AdamCoeffs,
    ) -> Result<Option<Tensor>> {
        let all = [self, g, m, v];
        if all.iter().any(|t| t.device() != Device::Cpu || t.dtype() != self.dtype())
            || all.iter().any(|t| t.shape() != self.shape())
            // The state must be the optimiser's alone: written in place.
            || [m, v]
                .iter()
                .any(|t| !t.is_dense() || Arc::strong_count(&t.storage) != 1)
            || Arc::ptr_eq(&m.storage, &v.storage)
        {
            return Ok(None);
        }
        let (w, g) = (self.dense()?, g.dense()?);
        let (wr, gr) = (w.read(), g.read());
        let (mut mw, mut vw) = (m.write(), v.write());
        let out = match (&*wr, &*gr, &mut *mw, &mut *vw) {
            (
                Storage::Cpu(CpuStorage::F32(w)),
                Storage::Cpu(CpuStorage::F32(g)),
                Storage::Cpu(CpuStorage::F32(m)),
                Storage::Cpu(CpuStorage::F32(v)),
            ) => CpuStorage::F32(adam_f32(w, g, m, v, c)),
            (
                Storage::Cpu(CpuStorage::F64(w)),
                Storage::Cpu(CpuStorage::F64(g)),
                Storage::Cpu(CpuStorage::F64(m)),
                Storage::Cpu(CpuStorage::F64(v)),
            ) => CpuStorage::F64(adam_f64(w, g, m, v, c)),
            _ => return Ok(None),
        };
        Ok(Some(Tensor::from_storage(
            Storage::Cpu(out),
            self.shape().to_vec(),
        )))
    }
}

impl Tensor {
    /// ReLU's backward on the CPU in one pass, `g` where `x > 0`, else 0 (the op-by-op form,
    /// a comparison, a cast and a product, allocates three buffers); `None` when it does not
    /// apply (CUDA, other dtypes, shapes that differ).
    pub(crate) fn relu_backward_cpu(g: &Tensor, x: &Tensor) -> Result<Option<Tensor>> {
        if g.device() != Device::Cpu
            || x.device() != Device::Cpu
            || g.dtype() != x.dtype()
            || g.shape() != x.shape()
        {
            return Ok(None);
        }
        fn run<T: Copy + Default + PartialOrd + Send + Sync>(g: &[T], x: &[T]) -> Vec<T> {
            let zero = T::default();
            g.par_iter()
                .with_min_len(CHUNK)
                .zip(x.par_iter())
                .map(|(&g, &x)| if x > zero { g } else { zero })
                .collect()
        }
        let (gd, xd) = (g.dense()?, x.dense()?);
        let (gr, xr) = (gd.read(), xd.read());
        let out = match (&*gr, &*xr) {
            (Storage::Cpu(CpuStorage::F32(g)), Storage::Cpu(CpuStorage::F32(x))) => {
                CpuStorage::F32(run(g, x))
            }
            (Storage::Cpu(CpuStorage::F64(g)), Storage::Cpu(CpuStorage::F64(x))) => {
                CpuStorage::F64(run(g, x))
            }
            _ => return Ok(None),
        };
        Ok(Some(Tensor::from_storage(
            Storage::Cpu(out),
            g.shape().to_vec(),
        )))
    }
}
