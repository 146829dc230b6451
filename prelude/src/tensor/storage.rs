//! Where a tensor's numbers are: a `Vec<f32>` on the host or a buffer on one GPU. Storage is
//! immutable once built and shared by `Arc`, so `clone`, `reshape` and `to(same device)` copy
//! nothing.

use crate::cuda::{self, Gpu};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr};
use std::sync::Arc;

pub(crate) enum Storage {
    Cpu(Vec<f32>),
    Cuda(CudaBuf),
}

pub(crate) struct CudaBuf {
    pub gpu: Arc<Gpu>,
    pub slice: CudaSlice<f32>,
}

impl CudaBuf {
    /// The buffer's device address, for kernel arguments.
    pub fn ptr(&self) -> u64 {
        self.slice.device_ptr(&self.gpu.stream).0
    }
}

/// An uninitialised buffer of `n` floats on `gpu` (stream-ordered).
pub(crate) fn alloc(gpu: &Arc<Gpu>, n: usize) -> Result<CudaBuf> {
    // SAFETY: every caller writes all n elements (a kernel, a copy or a memset) before the
    // buffer is read.
    let slice = unsafe { gpu.stream.alloc::<f32>(n) }.map_err(|e| {
        if cuda::is_oom(&e) {
            Error::OutOfMemory {
                device: gpu.device(),
                bytes: n * 4,
            }
        } else {
            cuda::driver_err("cuMemAlloc", e)
        }
    })?;
    Ok(CudaBuf {
        gpu: gpu.clone(),
        slice,
    })
}

pub(crate) fn zeros(gpu: &Arc<Gpu>, n: usize) -> Result<CudaBuf> {
    let mut b = alloc(gpu, n)?;
    if n > 0 {
        gpu.stream
            .memset_zeros(&mut b.slice)
            .map_err(|e| cuda::driver_err("cuMemsetD8", e))?;
    }
    Ok(b)
}

/// Host to device. The driver copies pageable memory through a staging buffer before this
/// returns, so `data` may be dropped at once; the transfer to the device is stream-ordered.
pub(crate) fn upload(gpu: &Arc<Gpu>, data: &[f32]) -> Result<CudaBuf> {
    let mut b = alloc(gpu, data.len())?;
    if !data.is_empty() {
        gpu.stream
            .memcpy_htod(data, &mut b.slice)
            .map_err(|e| cuda::driver_err("cuMemcpyHtoD", e))?;
    }
    Ok(b)
}

/// Device to host; waits for everything queued before it, like torch's `.cpu()`.
pub(crate) fn download(b: &CudaBuf) -> Result<Vec<f32>> {
    let mut out = vec![0f32; b.slice.len()];
    if !out.is_empty() {
        b.gpu
            .stream
            .memcpy_dtoh(&b.slice, &mut out)
            .map_err(|e| cuda::driver_err("cuMemcpyDtoH", e))?;
    }
    b.gpu
        .stream
        .synchronize()
        .map_err(|e| cuda::driver_err("cuStreamSynchronize", e))?;
    Ok(out)
}

impl Storage {
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(b) => b.gpu.device(),
        }
    }
}
