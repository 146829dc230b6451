//! Gathering elements by index, and its adjoint: the primitive under `conv2d` (im2col) and
//! `max_pool2d` (windows), kept in one op so that both devices and the backward pass share it.
//! `gather_flat` reads `out[i] = src[idx[i]]` over the flattened source (`-1` reads zero:
//! padding); its gradient is `scatter_add_flat`, which adds `g[i]` into `src[idx[i]]`.

use super::cpu_backend::{unsupported, CpuStorage};
use super::dtype::DType;
use super::storage::{self, Storage};
use super::Tensor;
use crate::autograd;
use crate::cuda::{launch_builtin, KernelArg as A, LaunchConfig};
use crate::error::{Error, Result};
use cudarc::driver::DevicePtr;
use rayon::prelude::*;
use std::sync::Arc;

/// Source indices for a gather; `-1` stands for a zero (padding).
pub(crate) type Indices = Arc<Vec<i32>>;

fn check_index_range(n: usize) -> Result<()> {
    if n > i32::MAX as usize {
        return Err(Error::BadShape(format!(
            "gather: a source of {n} elements is past the 32-bit index range"
        )));
    }
    Ok(())
}

fn launch_cfg(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, 65_535) as u32;
    LaunchConfig {
        grid: (blocks, 1, 1),
        block: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Storage {
    fn gather_flat_idx(&self, idx: &[i32]) -> Result<Storage> {
        fn run<T: Copy + Default + Send + Sync>(src: &[T], idx: &[i32]) -> Vec<T> {
            idx.par_iter()
                .with_min_len(4096)
                .map(|&j| if j < 0 { T::default() } else { src[j as usize] })
                .collect()
        }
        match self {
            Storage::Cpu(CpuStorage::F32(v)) => Ok(Storage::Cpu(CpuStorage::F32(run(v, idx)))),
            Storage::Cpu(CpuStorage::F64(v)) => Ok(Storage::Cpu(CpuStorage::F64(run(v, idx)))),
            Storage::Cpu(c) => Err(unsupported("gather", &[c.dtype()], self.device())),
            Storage::Cuda(b) if b.dtype != DType::F32 => {
                Err(unsupported("gather", &[b.dtype], self.device()))
            }
            Storage::Cuda(b) => {
                let n = idx.len();
                let out = storage::alloc(&b.gpu, n, DType::F32)?;
                if n > 0 {
                    let ix = upload_indices(&b.gpu, idx)?;
                    let ip = ix.device_ptr(&b.gpu.stream).0;
                    launch_builtin(
                        &b.gpu,
                        "conv",
                        "",
                        "gather_f32",
                        launch_cfg(n),
                        &mut [
                            A::U64(b.ptr()),
                            A::U64(ip),
                            A::U64(out.ptr()),
                            A::I64(n as i64),
                        ],
                    )?;
                }
                Ok(Storage::Cuda(out))
            }
        }
    }

    /// `len` zeros, then `out[idx[i]] += self[i]`.
    fn scatter_add_idx(&self, idx: &[i32], len: usize) -> Result<Storage> {
        fn run<T: Copy + Default + std::ops::AddAssign>(
            g: &[T],
            idx: &[i32],
            len: usize,
        ) -> Vec<T> {
            let mut out = vec![T::default(); len];
            for (&j, &v) in idx.iter().zip(g) {
                if j >= 0 {
                    out[j as usize] += v;
                }
            }
            out
        }
        match self {
            Storage::Cpu(CpuStorage::F32(v)) => Ok(Storage::Cpu(CpuStorage::F32(run(v, idx, len)))),
            Storage::Cpu(CpuStorage::F64(v)) => Ok(Storage::Cpu(CpuStorage::F64(run(v, idx, len)))),
            Storage::Cpu(c) => Err(unsupported("scatter_add", &[c.dtype()], self.device())),
            Storage::Cuda(b) if b.dtype != DType::F32 => {
                Err(unsupported("scatter_add", &[b.dtype], self.device()))
            }
            Storage::Cuda(b) => {
                let out = storage::zeros(&b.gpu, len, DType::F32)?;
                let n = idx.len();
                if n > 0 {
                    let ix = upload_indices(&b.gpu, idx)?;
                    let ip = ix.device_ptr(&b.gpu.stream).0;
                    launch_builtin(
                        &b.gpu,
                        "conv",
                        "",
                        "scatter_add_f32",
                        launch_cfg(n),
                        &mut [
                            A::U64(b.ptr()),
                            A::U64(ip),
                            A::U64(out.ptr()),
                            A::I64(n as i64),
                        ],
                    )?;
                }
                Ok(Storage::Cuda(out))
            }
        }
    }
}

/// The indices on the device. The returned slice is freed stream-ordered when dropped, so
/// dropping it right after the launch is safe.
fn upload_indices(
    gpu: &Arc<crate::cuda::Gpu>,
    idx: &[i32],
) -> Result<cudarc::driver::CudaSlice<i32>> {
    gpu.ctx
        .bind_to_thread()
        .map_err(|e| crate::cuda::driver_err("cuCtxSetCurrent", e))?;
    gpu.stream
        .clone_htod(idx)
        .map_err(|e| crate::cuda::driver_err("cuMemcpyHtoD", e))
}

impl Tensor {
    /// `out[i] = self.flatten()[idx[i]]` (zero where `idx[i]` is -1), shaped `dims`.
    pub(crate) fn gather_flat(&self, idx: Indices, dims: Vec<usize>) -> Result<Tensor> {
        check_index_range(self.numel())?;
        debug_assert_eq!(idx.len(), dims.iter().product::<usize>());
        let storage = self.dense()?.read().gather_flat_idx(&idx)?;
        let out = Tensor::from_storage(storage, dims);
        let src_dims = self.shape().to_vec();
        Ok(autograd::record(out, "gather", &[self], move |g| {
            Ok(vec![Some(
                g.scatter_add_flat(idx.clone(), src_dims.clone())?,
            )])
        }))
    }

    /// The adjoint of `gather_flat`: a tensor of shape `dims`, zero except that each
    /// `self[i]` is added at `idx[i]`.
    pub(crate) fn scatter_add_flat(&self, idx: Indices, dims: Vec<usize>) -> Result<Tensor> {
        let len: usize = dims.iter().product();
        check_index_range(len)?;
        let storage = self.dense()?.read().scatter_add_idx(&idx, len)?;
        let out = Tensor::from_storage(storage, dims);
        let in_dims = self.shape().to_vec();
        Ok(autograd::record(out, "scatter_add", &[self], move |g| {
            Ok(vec![Some(g.gather_flat(idx.clone(), in_dims.clone())?)])
        }))
    }
}

impl Tensor {
    /// The maximum of each run of `k` consecutive entries of `idx` (source indices into this
    /// tensor, none -1), shaped `dims`, on the CPU in one pass: `max_pool2d`'s forward
    /// without materialising the windows. The gradient goes to the first maximum of each
    /// window (torch's rule; a NaN counts as the maximum), added back with
    /// `scatter_add_flat` at the recorded positions. `None` off the CPU or for dtypes other
    /// than f32/f64, where the caller gathers the windows and reduces them.
    pub(crate) fn window_max_cpu(
        &self,
        idx: &[i32],
        k: usize,
        dims: Vec<usize>,
    ) -> Result<Option<Tensor>> {
        fn run<T: Copy + PartialOrd + Send + Sync>(
            src: &[T],
            idx: &[i32],
            k: usize,
        ) -> (Vec<T>, Vec<i32>) {
            idx.par_chunks(k)
                .with_min_len(1024)
                .map(|w| {
                    let mut at = w[0];
                    let mut best = src[at as usize];
                    for &j in &w[1..] {
                        let v = src[j as usize];
                        // `best != best`: a NaN stays the maximum, as in torch.
                        #[allow(clippy::eq_op)]
                        if v > best || (v != v && best == best) {
                            best = v;
                            at = j;
                        }
                    }
                    (best, at)
                })
                .unzip()
        }
        if self.device() != crate::Device::Cpu || k == 0 || !idx.len().is_multiple_of(k) {
            return Ok(None);
        }
        check_index_range(self.numel())?;
        debug_assert_eq!(idx.len() / k, dims.iter().product::<usize>());
        let src = self.dense()?;
        let (storage, arg) = match &*src.read() {
            Storage::Cpu(CpuStorage::F32(v)) => {
                let (m, a) = run(v, idx, k);
                (CpuStorage::F32(m), a)
            }
            Storage::Cpu(CpuStorage::F64(v)) => {
                let (m, a) = run(v, idx, k);
                (CpuStorage::F64(m), a)
            }
            _ => return Ok(None),
        };
        let out = Tensor::from_storage(Storage::Cpu(storage), dims);
        let arg: Indices = Arc::new(arg);
        let src_dims = self.shape().to_vec();
        Ok(Some(autograd::record(
            out,
            "max_pool2d",
            &[self],
            move |g| {
                Ok(vec![Some(
                    g.scatter_add_flat(arg.clone(), src_dims.clone())?,
                )])
            },
        )))
    }
}
