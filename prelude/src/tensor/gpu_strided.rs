//! The CUDA half of views: launches of kernels-cu/strided.cu (strided copy into a dense
//! buffer, a dense buffer written into a view, and the gather behind `index_select` and
//! `gather`). Kernels are picked by element size, so one instance serves every dtype of
//! that size; a size without an instance is an error.
//!
//! Kept apart from gpu.rs, whose kernels are instantiated per dtype: these only move bytes,
//! so they need no `#define` prefix (`""`) and one instance per element size.

use super::dtype::DType;
use super::layout::Layout;
use super::storage::{alloc, CudaBuf};
use crate::cuda::{self, launch_builtin, Gpu, KernelArg as A, LaunchConfig};
use crate::error::{Error, Result};
use cudarc::driver::DevicePtr;

/// Must match GPULAB_STRIDED_MAX_DIMS in strided.cu.
const MAX_DIMS: usize = 8;
const BLOCK: u32 = 256;

fn cfg(gpu: &Gpu, n: usize) -> LaunchConfig {
    let blocks = n
        .div_ceil(BLOCK as usize)
        .clamp(1, gpu.sms.max(1) as usize * 32);
    LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The kernel `<base>_<element size>`.
fn kernel(op: &str, dtype: DType) -> Result<&'static str> {
    Ok(match (op, dtype.size_in_bytes()) {
        ("copy", 1) => "strided_copy_1",
        ("copy", 2) => "strided_copy_2",
        ("copy", 4) => "strided_copy_4",
        ("copy", 8) => "strided_copy_8",
        ("write", 1) => "strided_write_1",
        ("write", 2) => "strided_write_2",
        ("write", 4) => "strided_write_4",
        ("write", 8) => "strided_write_8",
        ("gather", 1) => "gather_1",
        ("gather", 2) => "gather_2",
        ("gather", 4) => "gather_4",
        ("gather", 8) => "gather_8",
        (op, size) => {
            return Err(Error::Invalid(format!(
                "strided {op}: no CUDA kernel for {dtype} ({size}-byte elements)"
            )))
        }
    })
}

/// The `StridedLayout` struct of strided.cu as 8-byte words: `int ndim` padded to 8, then
/// `long long dims[8], a[8], b[8]`.
fn strided_arg(op: &str, dims: &[usize], a: &[usize], b: &[usize]) -> Result<A<'static>> {
    if dims.len() > MAX_DIMS {
        return Err(Error::BadShape(format!(
            "{op}: CUDA strided kernels handle up to {MAX_DIMS} dimensions, got shape {dims:?}"
        )));
    }
    let mut w = vec![0u64; 1 + 3 * MAX_DIMS];
    w[0] = dims.len() as u64;
    for i in 0..dims.len() {
        w[1 + i] = dims[i] as u64;
        w[1 + MAX_DIMS + i] = a[i] as u64;
        w[1 + 2 * MAX_DIMS + i] = b.get(i).copied().unwrap_or(0) as u64;
    }
    Ok(A::Struct(w))
}

fn p(b: &CudaBuf) -> A<'static> {
    A::U64(b.ptr())
}

/// A dense copy of the elements `layout` selects in `src`.
pub(crate) fn copy_layout(src: &CudaBuf, dtype: DType, layout: &Layout) -> Result<CudaBuf> {
    let gpu = &src.gpu;
    let n = layout.numel();
    let out = alloc(gpu, n, dtype)?;
    if n > 0 {
        let st = strided_arg("contiguous", layout.dims(), layout.strides(), &[])?;
        launch_builtin(
            gpu,
            "strided",
            "",
            kernel("copy", dtype)?,
            cfg(gpu, n),
            &mut [
                p(src),
                A::I64(layout.offset() as i64),
                p(&out),
                A::I64(n as i64),
                st,
            ],
        )?;
    }
    Ok(out)
}

/// Writes the dense `src` into the elements `layout` selects in `dst`.
pub(crate) fn write_layout(
    dst: &mut CudaBuf,
    dtype: DType,
    layout: &Layout,
    src: &CudaBuf,
) -> Result<()> {
    let n = layout.numel();
    if n == 0 {
        return Ok(());
    }
    if dst.gpu.device() != src.gpu.device() {
        return Err(Error::DeviceMismatch {
            lhs: dst.gpu.device(),
            rhs: src.gpu.device(),
        });
    }
    let gpu = dst.gpu.clone();
    let st = strided_arg("copy_", layout.dims(), layout.strides(), &[])?;
    launch_builtin(
        &gpu,
        "strided",
        "",
        kernel("write", dtype)?,
        cfg(&gpu, n),
        &mut [
            p(src),
            p(dst),
            A::I64(layout.offset() as i64),
            A::I64(n as i64),
            st,
        ],
    )
}

/// See `Storage::gather`. The indices (checked on the host) are uploaded per call: index
/// tensors are small next to the data they pick.
pub(crate) fn gather(
    src: &CudaBuf,
    dtype: DType,
    layout: &Layout,
    dim: usize,
    idx: &[i64],
    idx_strides: &[usize],
    out_dims: &[usize],
) -> Result<CudaBuf> {
    let gpu = &src.gpu;
    let n: usize = out_dims.iter().product();
    let out = alloc(gpu, n, dtype)?;
    if n == 0 {
        return Ok(out);
    }
    let st = strided_arg("gather", out_dims, layout.strides(), idx_strides)?;
    let dev_idx = cuda::alloc::upload(gpu, idx).map_err(|e| cuda::driver_err("cuMemcpyHtoD", e))?;
    let idx_ptr = dev_idx.device_ptr(&gpu.stream).0;
    launch_builtin(
        gpu,
        "strided",
        "",
        kernel("gather", dtype)?,
        cfg(gpu, n),
        &mut [
            p(src),
            A::I64(layout.offset() as i64),
            A::U64(idx_ptr),
            p(&out),
            A::I64(n as i64),
            A::I32(dim as i32),
            st,
        ],
    )?;
    // The free is stream-ordered (cuMemFreeAsync), so the kernel reads the indices first.
    drop(dev_idx);
    Ok(out)
}
