//! The CUDA backend: launches of the kernels in kernels-cu/ (elementwise.cu, reduce.cu) and
//! cuBLAS for matmul, all queued on the device's stream.

use super::op::{BinaryOp, ReduceOp, UnaryOp};
use super::shape::Broadcast;
use super::storage::{alloc, CudaBuf};
use crate::cuda::{launch_builtin, Gpu, KernelArg as A, LaunchConfig};
use crate::error::{Error, Result};
use std::sync::Arc;

const BLOCK: u32 = 256;
/// Must match GPULAB_MAX_DIMS in elementwise.cu.
pub(crate) const MAX_DIMS: usize = 6;

/// Enough blocks to cover `n` elements, capped at a few waves: the kernels loop with a grid
/// stride, and more blocks than the SMs can hold only add scheduling.
fn cfg(gpu: &Gpu, n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, gpu.sms as usize * 32);
    linear(blocks as u32, BLOCK)
}

fn linear(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid: (blocks, 1, 1),
        block: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn p(b: &CudaBuf) -> A<'static> {
    A::U64(b.ptr())
}

/// A fresh `n`-element buffer written by one elementwise.cu kernel. `args` receives the output
/// pointer because each kernel takes it at a different position.
fn elementwise(
    gpu: &Arc<Gpu>,
    kernel: &'static str,
    n: usize,
    args: impl FnOnce(A<'static>) -> Vec<A<'static>>,
) -> Result<CudaBuf> {
    let out = alloc(gpu, n)?;
    if n > 0 {
        launch_builtin(gpu, "elementwise", kernel, cfg(gpu, n), &args(p(&out)))?;
    }
    Ok(out)
}

pub(crate) fn full(gpu: &Arc<Gpu>, n: usize, v: f32) -> Result<CudaBuf> {
    elementwise(gpu, "fill", n, |out| vec![out, A::F32(v), A::I64(n as i64)])
}

pub(crate) fn binary_same(op: BinaryOp, a: &CudaBuf, b: &CudaBuf) -> Result<CudaBuf> {
    let n = a.slice.len();
    elementwise(&a.gpu, "binary_same", n, |out| {
        vec![A::I32(op as i32), p(a), p(b), out, A::I64(n as i64)]
    })
}

pub(crate) fn binary_scalar(
    op: BinaryOp,
    a: &CudaBuf,
    s: f32,
    scalar_first: bool,
) -> Result<CudaBuf> {
    let n = a.slice.len();
    elementwise(&a.gpu, "binary_scalar", n, |out| {
        vec![
            A::I32(op as i32),
            p(a),
            A::F32(s),
            A::I32(scalar_first as i32),
            out,
            A::I64(n as i64),
        ]
    })
}

/// The `Strides` struct of elementwise.cu as 8-byte words: `int ndim` padded to 8, then
/// `long long dims[6], sa[6], sb[6]`.
fn strides_arg(dims: &[usize], sa: &[usize], sb: &[usize]) -> Result<A<'static>> {
    if dims.len() > MAX_DIMS {
        return Err(Error::BadShape(format!(
            "CUDA kernels handle up to {MAX_DIMS} dimensions here, got {}",
            dims.len()
        )));
    }
    let mut w = vec![0u64; 1 + 3 * MAX_DIMS];
    w[0] = dims.len() as u64;
    for i in 0..dims.len() {
        w[1 + i] = dims[i] as u64;
        w[1 + MAX_DIMS + i] = sa[i] as u64;
        w[1 + 2 * MAX_DIMS + i] = sb.get(i).copied().unwrap_or(0) as u64;
    }
    Ok(A::Struct(w))
}

pub(crate) fn binary_bcast(
    op: BinaryOp,
    a: &CudaBuf,
    b: &CudaBuf,
    bc: &Broadcast,
) -> Result<CudaBuf> {
    let n: usize = bc.dims.iter().product();
    let st = strides_arg(&bc.dims, &bc.sa, &bc.sb)?;
    elementwise(&a.gpu, "binary_bcast", n, |out| {
        vec![A::I32(op as i32), p(a), p(b), out, A::I64(n as i64), st]
    })
}

pub(crate) fn unary(op: UnaryOp, a: &CudaBuf) -> Result<CudaBuf> {
    let n = a.slice.len();
    elementwise(&a.gpu, "unary", n, |out| {
        vec![A::I32(op as i32), p(a), out, A::I64(n as i64)]
    })
}

pub(crate) fn permute(a: &CudaBuf, dims: &[usize], src_strides: &[usize]) -> Result<CudaBuf> {
    let n: usize = dims.iter().product();
    let st = strides_arg(dims, src_strides, &[])?;
    elementwise(&a.gpu, "permute", n, |out| {
        vec![p(a), out, A::I64(n as i64), st]
    })
}

/// A one-element buffer: per-block partials, then one block over the partials.
pub(crate) fn reduce_all(op: ReduceOp, a: &CudaBuf) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let n = a.slice.len();
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1024);
    let partial = alloc(gpu, blocks)?;
    launch_builtin(
        gpu,
        "reduce",
        "reduce_partial",
        linear(blocks as u32, BLOCK),
        &[A::I32(op as i32), p(a), p(&partial), A::I64(n as i64)],
    )?;
    let out = alloc(gpu, 1)?;
    launch_builtin(
        gpu,
        "reduce",
        "reduce_partial",
        linear(1, 1024),
        &[
            A::I32(op as i32),
            p(&partial),
            p(&out),
            A::I64(blocks as i64),
        ],
    )?;
    Ok(out)
}

/// Reduces the middle axis of `[outer, len, inner]`.
pub(crate) fn reduce_dim(
    op: ReduceOp,
    a: &CudaBuf,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let out = alloc(gpu, outer * inner)?;
    if outer * inner == 0 {
        return Ok(out);
    }
    if inner == 1 {
        launch_builtin(
            gpu,
            "reduce",
            "reduce_rows",
            linear(outer.min(1 << 16) as u32, BLOCK),
            &[
                A::I32(op as i32),
                p(a),
                p(&out),
                A::I64(outer as i64),
                A::I64(len as i64),
            ],
        )?;
    } else {
        launch_builtin(
            gpu,
            "reduce",
            "reduce_strided",
            cfg(gpu, outer * inner),
            &[
                A::I32(op as i32),
                p(a),
                p(&out),
                A::I64(outer as i64),
                A::I64(len as i64),
                A::I64(inner as i64),
            ],
        )?;
    }
    Ok(out)
}

/// Row-major `[m, k] x [k, n]` with cuBLAS, which is column-major: a row-major matrix is its
/// own transpose in column-major, so C^T = B^T A^T is one sgemm with the operands swapped.
pub(crate) fn matmul(a: &CudaBuf, b: &CudaBuf, m: usize, k: usize, n: usize) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let out = if k == 0 {
        super::storage::zeros(gpu, m * n)?
    } else {
        alloc(gpu, m * n)?
    };
    if m * n == 0 || k == 0 {
        return Ok(out);
    }
    let too_big = |x: usize| x > i32::MAX as usize;
    if too_big(m) || too_big(n) || too_big(k) {
        return Err(Error::BadShape(format!(
            "matmul: dimensions {m}x{k}x{n} exceed cuBLAS's 32-bit sizes"
        )));
    }
    let blas = gpu.blas()?;
    // cuBLAS runs in whatever context is current on the calling thread.
    gpu.ctx
        .bind_to_thread()
        .map_err(|e| crate::cuda::driver_err("cuCtxSetCurrent", e))?;
    let (m, k, n) = (m as i32, k as i32, n as i32);
    // SAFETY: the buffers hold k*n, m*k and m*n floats, matching the sizes and leading
    // dimensions: B^T (n x k, ld n) times A^T (k x m, ld k) into C^T (n x m, ld n).
    unsafe {
        blas.lock()
            .unwrap()
            .sgemm(n, m, k, b.ptr(), n, a.ptr(), k, out.ptr(), n)
    }?;
    Ok(out)
}
