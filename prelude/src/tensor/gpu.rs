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
        launch_builtin(gpu, "elementwise", kernel, cfg(gpu, n), &mut args(p(&out)))?;
    }
    Ok(out)
}

pub(crate) fn full(gpu: &Arc<Gpu>, n: usize, v: f32) -> Result<CudaBuf> {
    elementwise(gpu, "fill", n, |out| vec![out, A::F32(v), A::I64(n as i64)])
}

pub(crate) fn binary_same(op: BinaryOp, a: &CudaBuf, b: &CudaBuf) -> Result<CudaBuf> {
    let n = a.len;
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
    let n = a.len;
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
    let n = a.len;
    elementwise(&a.gpu, "unary", n, |out| {
        vec![A::I32(op as i32), p(a), out, A::I64(n as i64)]
    })
}

/// A one-element buffer: per-block partials, then one block over the partials.
pub(crate) fn reduce_all(op: ReduceOp, a: &CudaBuf) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let n = a.len;
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1024);
    let partial = alloc(gpu, blocks)?;
    launch_builtin(
        gpu,
        "reduce",
        "reduce_partial",
        linear(blocks as u32, BLOCK),
        &mut [A::I32(op as i32), p(a), p(&partial), A::I64(n as i64)],
    )?;
    let out = alloc(gpu, 1)?;
    launch_builtin(
        gpu,
        "reduce",
        "reduce_partial",
        linear(1, 1024),
        &mut [
            A::I32(op as i32),
            p(&partial),
            p(&out),
            A::I64(blocks as i64),
        ],
    )?;
    Ok(out)
}

/// How `reduce_dim` runs on a device with `sms` multiprocessors (G5): the one-block-per-row
/// and one-thread-per-output kernels leave most SMs idle when there are few outputs and long
/// reductions, so those shapes are split into chunks (a first pass of partials, then a second
/// reduction over the chunks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReducePlan {
    /// `reduce_rows`: one block per row (`inner == 1`, enough rows or short rows).
    Rows,
    /// `reduce_strided`: one thread per output (also used for many very short rows).
    Strided,
    /// `reduce_rows_split`: `chunks` blocks per row of `chunk` elements, then `Rows` over
    /// the `[outer, chunks]` partials.
    SplitRows { chunk: usize, chunks: usize },
    /// `reduce_strided_split`: `chunks` threads per output, then `Strided` over the
    /// `[outer, chunks, inner]` partials.
    SplitStrided { chunk: usize, chunks: usize },
}

/// The kernel choice for reducing the middle axis of `[outer, len, inner]`; a pure function
/// of the shape and the SM count so it can be tested without a GPU.
pub(crate) fn reduce_plan(outer: usize, len: usize, inner: usize, sms: usize) -> ReducePlan {
    let sms = sms.max(1);
    // Below about a million elements a second launch costs more than idle SMs do.
    let small = outer * len * inner < 1 << 20;
    if inner == 1 {
        if len <= 32 {
            // A 256-thread block per row of at most 32 would leave 7 of 8 warps idle; a
            // thread per row reads its few floats from cache lines its neighbours share.
            return ReducePlan::Strided;
        }
        // About 8 blocks per SM keep it busy; each block should still get >= 4 elements
        // per thread, or the second pass costs more than the split saves.
        let want_blocks = sms * 8;
        if small || outer >= want_blocks || len <= 4 * BLOCK as usize {
            return ReducePlan::Rows;
        }
        let chunk = len
            .div_ceil(want_blocks.div_ceil(outer))
            .max(4 * BLOCK as usize);
        let chunks = len.div_ceil(chunk);
        if chunks <= 1 {
            ReducePlan::Rows
        } else {
            ReducePlan::SplitRows { chunk, chunks }
        }
    } else {
        // About 1024 threads per SM; each thread should still add >= 32 elements.
        let want_threads = sms * 1024;
        let outputs = outer * inner;
        if small || outputs >= want_threads || len <= 64 {
            return ReducePlan::Strided;
        }
        let chunk = len.div_ceil(want_threads.div_ceil(outputs)).max(32);
        let chunks = len.div_ceil(chunk);
        if chunks <= 1 {
            ReducePlan::Strided
        } else {
            ReducePlan::SplitStrided { chunk, chunks }
        }
    }
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
    if outer * inner == 0 {
        return alloc(gpu, 0);
    }
    let i64_ = |x: usize| A::I64(x as i64);
    match reduce_plan(outer, len, inner, gpu.sms as usize) {
        ReducePlan::Rows => {
            let out = alloc(gpu, outer)?;
            launch_builtin(
                gpu,
                "reduce",
                "reduce_rows",
                linear(outer.min(1 << 16) as u32, BLOCK),
                &mut [A::I32(op as i32), p(a), p(&out), i64_(outer), i64_(len)],
            )?;
            Ok(out)
        }
        ReducePlan::Strided => {
            let out = alloc(gpu, outer * inner)?;
            launch_builtin(
                gpu,
                "reduce",
                "reduce_strided",
                cfg(gpu, outer * inner),
                &mut [
                    A::I32(op as i32),
                    p(a),
                    p(&out),
                    i64_(outer),
                    i64_(len),
                    i64_(inner),
                ],
            )?;
            Ok(out)
        }
        ReducePlan::SplitRows { chunk, chunks } => {
            let partial = alloc(gpu, outer * chunks)?;
            launch_builtin(
                gpu,
                "reduce",
                "reduce_rows_split",
                linear((outer * chunks).min(1 << 16) as u32, BLOCK),
                &mut [
                    A::I32(op as i32),
                    p(a),
                    p(&partial),
                    i64_(outer),
                    i64_(len),
                    i64_(chunk),
                    i64_(chunks),
                ],
            )?;
            reduce_dim(op, &partial, outer, chunks, 1)
        }
        ReducePlan::SplitStrided { chunk, chunks } => {
            let partial = alloc(gpu, outer * chunks * inner)?;
            launch_builtin(
                gpu,
                "reduce",
                "reduce_strided_split",
                cfg(gpu, outer * chunks * inner),
                &mut [
                    A::I32(op as i32),
                    p(a),
                    p(&partial),
                    i64_(outer),
                    i64_(len),
                    i64_(inner),
                    i64_(chunk),
                    i64_(chunks),
                ],
            )?;
            reduce_dim(op, &partial, outer, chunks, inner)
        }
    }
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

#[cfg(test)]
mod tests {
    use super::{reduce_plan, ReducePlan};

    /// H200: 132 SMs.
    const SMS: usize = 132;

    /// Threads that do work in the first pass of a plan.
    fn busy_threads(p: ReducePlan, outer: usize, inner: usize) -> usize {
        match p {
            ReducePlan::Rows => outer * 256,
            ReducePlan::Strided => outer * inner,
            ReducePlan::SplitRows { chunks, .. } => outer * chunks * 256,
            ReducePlan::SplitStrided { chunks, .. } => outer * chunks * inner,
        }
    }

    #[test]
    fn few_long_rows_are_split_across_the_gpu() {
        // (1, 2^28).sum_dim(-1): one block before; now every SM gets blocks.
        let p = reduce_plan(1, 1 << 28, 1, SMS);
        let ReducePlan::SplitRows { chunk, chunks } = p else {
            panic!("{p:?}")
        };
        assert!(chunks >= SMS, "{p:?}");
        assert!(
            chunk * chunks >= 1 << 28 && chunk * (chunks - 1) < 1 << 28,
            "{p:?} covers the row"
        );
        // A few rows: still split, and together still enough blocks.
        let p = reduce_plan(4, 1 << 24, 1, SMS);
        assert!(busy_threads(p, 4, 1) >= SMS * 256 * 4, "{p:?}");
    }

    #[test]
    fn few_long_columns_are_split_across_the_gpu() {
        // (2^24, 4).sum_dim(0): 4 threads before.
        let p = reduce_plan(1, 1 << 24, 4, SMS);
        let ReducePlan::SplitStrided { chunk, chunks } = p else {
            panic!("{p:?}")
        };
        assert!(busy_threads(p, 1, 4) >= SMS * 512, "{p:?}");
        assert!(chunk >= 32 && chunk * chunks >= 1 << 24 && chunk * (chunks - 1) < 1 << 24);
        // mean_dim(0) of (batch, 16 features).
        assert!(matches!(
            reduce_plan(1, 1 << 20, 16, SMS),
            ReducePlan::SplitStrided { .. }
        ));
    }

    #[test]
    fn shapes_that_fill_the_gpu_keep_the_one_pass_kernels() {
        assert_eq!(reduce_plan(1 << 16, 1024, 1, SMS), ReducePlan::Rows);
        assert_eq!(
            reduce_plan(7, 300, 129, SMS),
            ReducePlan::Strided,
            "short reductions"
        );
        assert_eq!(
            reduce_plan(1, 1 << 20, 1 << 18, SMS),
            ReducePlan::Strided,
            "many outputs"
        );
        assert_eq!(
            reduce_plan(3, 1000, 1, SMS),
            ReducePlan::Rows,
            "short rows need no split"
        );
        // Tiny rows, many of them: a thread per row, not 256.
        assert_eq!(reduce_plan(1 << 20, 3, 1, SMS), ReducePlan::Strided);
    }

    #[test]
    fn the_second_pass_is_smaller_and_terminates() {
        for (outer, len, inner) in [
            (1, 1 << 28, 1),
            (2, 123_457, 1),
            (1, 1 << 24, 4),
            (3, 99_991, 7),
        ] {
            let mut shape = (outer, len, inner);
            for _ in 0..4 {
                match reduce_plan(shape.0, shape.1, shape.2, SMS) {
                    ReducePlan::SplitRows { chunks, .. }
                    | ReducePlan::SplitStrided { chunks, .. } => {
                        assert!(chunks < shape.1, "{shape:?}");
                        shape.1 = chunks;
                    }
                    _ => break,
                }
            }
            assert!(
                matches!(
                    reduce_plan(shape.0, shape.1, shape.2, SMS),
                    ReducePlan::Rows | ReducePlan::Strided
                ),
                "{outer},{len},{inner} still splitting at {shape:?}"
            );
        }
    }
}
