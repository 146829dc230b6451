//! The CUDA backend: launches of the kernels in kernels-cu/ (elementwise.cu, reduce.cu),
//! each instantiated once per dtype as `<kernel>_<suffix>` (`binary_same_bf16`), and cuBLAS
//! for matmul, all queued on the device's stream.
//!
//! Every op code is checked here before a launch ([`check_op`]): the kernels' switches have
//! no silent default, and an op a dtype lacks (bool subtraction, integer exp) is an error
//! naming the op, the dtype and the device, as on the CPU.

use super::dtype::DType;
use super::op::{BinaryOp, ReduceOp, UnaryOp};
use super::shape::Broadcast;
use super::storage::{alloc, zeros, CudaBuf};
use crate::cuda::blas;
use crate::cuda::{launch_builtin, Gpu, KernelArg as A, LaunchConfig};
use crate::device::Device;
use crate::error::{Error, Result};
use std::sync::Arc;

const BLOCK: u32 = 256;
/// Must match GPULAB_MAX_DIMS in gpulab_dtypes.cuh.
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

fn i64_(x: usize) -> A<'static> {
    A::I64(x as i64)
}

/// The instance of `kernel` for `dtype`: `binary_same` + bf16 is `binary_same_bf16`.
pub(crate) fn kernel_name(kernel: &str, dtype: DType) -> String {
    format!("{kernel}_{}", dtype.kernel_suffix())
}

/// The instance of a byte-moving kernel (fill, where) for `dtype`'s element size.
fn sized_name(kernel: &str, dtype: DType) -> String {
    format!("{kernel}_b{}", dtype.size_in_bytes())
}

/// Kernels instantiated once per dtype, by file stem (see `launched_kernels`).
#[cfg(test)]
const PER_DTYPE: [(&str, &[&str]); 2] = [
    (
        "elementwise",
        &[
            "binary_same",
            "binary_scalar",
            "binary_bcast",
            "unary",
            "cmp_same",
            "cmp_bcast",
        ],
    ),
    (
        "reduce",
        &[
            "reduce_partial",
            "reduce_rows",
            "reduce_strided",
            "reduce_rows_split",
            "reduce_strided_split",
            "arg_rows",
            "arg_strided",
            "scan_strided",
        ],
    ),
];
/// elementwise.cu's kernels instantiated per element size.
#[cfg(test)]
const PER_SIZE: [&str; 2] = ["fill", "where"];

/// Every kernel instance this backend can launch, as (file stem, name): what the NVRTC test
/// compiles and looks for, so a dtype missing from a `.cu` file fails here, not on a GPU.
#[cfg(test)]
pub(crate) fn launched_kernels() -> Vec<(&'static str, Variant, String)> {
    let mut all = Vec::new();
    for (stem, kernels) in PER_DTYPE {
        for k in kernels {
            for d in DType::ALL {
                all.push((stem, Variant::Dtype(d), kernel_name(k, d)));
            }
        }
    }
    for k in PER_SIZE {
        for d in DType::ALL {
            // One instance per size: f32 and i32 share `fill_b4`.
            let entry = ("elementwise", Variant::Bytes, sized_name(k, d));
            if !all.contains(&entry) {
                all.push(entry);
            }
        }
    }
    for from in DType::ALL {
        for to in DType::ALL {
            all.push(("elementwise", Variant::Dtype(from), cast_name(from, to)));
        }
    }
    all
}

fn cast_name(from: DType, to: DType) -> String {
    format!("cast_{}_{}", from.kernel_suffix(), to.kernel_suffix())
}

/// Which instances of a kernel file one module holds: NVRTC compiles a file per dtype (the
/// first op on a dtype waits for its 1/8 of the file, not for all of it), plus one module of
/// elementwise.cu's per-size kernels. See GPULAB_ONLY_DTYPE in gpulab_dtypes.cuh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    Dtype(DType),
    Bytes,
}

impl Variant {
    /// The `#define`s put before the file's source.
    pub(crate) fn prefix(self) -> String {
        match self {
            Variant::Dtype(d) => format!(
                "#define GPULAB_ONLY_DTYPE(M) M({}, {})\n",
                c_type(d),
                d.kernel_suffix()
            ),
            Variant::Bytes => {
                "#define GPULAB_ONLY_DTYPE(M)\n#define GPULAB_BYTE_KERNELS 1\n".into()
            }
        }
    }
}

/// The element type gpulab_dtypes.cuh uses for `d`.
fn c_type(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::F16 => "f16_t",
        DType::BF16 => "bf16_t",
        DType::I32 => "int",
        DType::I64 => "long long",
        DType::U8 => "unsigned char",
        DType::Bool => "bool_t",
    }
}

fn launch(
    gpu: &Arc<Gpu>,
    stem: &'static str,
    variant: Variant,
    kernel: &str,
    cfg: LaunchConfig,
    args: &mut [A],
) -> Result<()> {
    launch_builtin(gpu, stem, &variant.prefix(), kernel, cfg, args)
}

/// The kernels switching on an op code, for [`check_op`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpFamily {
    Binary,
    Unary,
    Compare,
    Reduce,
}

const BINARY_NAMES: [&str; 12] = [
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "pow",
    "atan2",
    "fmod",
    "remainder",
    "floor_divide",
    "zeta",
];
const UNARY_NAMES: [&str; 31] = [
    "neg",
    "abs",
    "exp",
    "sqrt",
    "relu",
    "log",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
    "floor",
    "ceil",
    "round",
    "sign",
    "log1p",
    "expm1",
    "erf",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "lgamma",
    "digamma",
    "polygamma",
    "erfc",
    "erfinv",
];
const COMPARE_NAMES: [&str; 6] = ["eq", "ne", "lt", "le", "gt", "ge"];
const REDUCE_NAMES: [&str; 4] = ["sum", "max", "min", "prod"];

/// Whether the kernels of `family` implement op `code` for `dtype` (an error naming the op,
/// dtype and device if not, and the code itself if no op has it). The device code traps on
/// a code it does not know, so this is what makes a bad code an error instead of a broken
/// context; it mirrors the CPU backend's dtype rules.
pub(crate) fn check_op(family: OpFamily, code: i32, dtype: DType, device: Device) -> Result<()> {
    let names: &[&str] = match family {
        OpFamily::Binary => &BINARY_NAMES,
        OpFamily::Unary => &UNARY_NAMES,
        OpFamily::Compare => &COMPARE_NAMES,
        OpFamily::Reduce => &REDUCE_NAMES,
    };
    let Some(name) = usize::try_from(code).ok().and_then(|i| names.get(i)) else {
        return Err(Error::Invalid(format!(
            "unknown {family:?} op code {code} for a {dtype} tensor on {device} \
             (the kernels know codes 0..{})",
            names.len()
        )));
    };
    let ok = match (family, dtype) {
        // torch's bool arithmetic: + and max are "or", * and min "and".
        (OpFamily::Binary, DType::Bool) => matches!(code, 0 | 2 | 4 | 5),
        // atan2 and zeta are float-only (the tensor layer promotes integers); zeta has no
        // half-precision form, as in torch.
        (OpFamily::Binary, d) => BinaryOp::ALL[code as usize].defined_for(d),
        (OpFamily::Unary, DType::Bool) => false,
        // Integers: the ops `UnaryOp::int_ok` names (the tensor layer converts to float for
        // the rest).
        (OpFamily::Unary, d) if !d.is_float() => UnaryOp::ALL[code as usize].int_ok(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(super::cpu_backend::unsupported(name, &[dtype], device))
    }
}

/// `op` needs both operands of one dtype (the tensor layer promotes them first).
fn same_dtype(op: &str, a: &CudaBuf, b: &CudaBuf) -> Result<DType> {
    if a.dtype != b.dtype {
        return Err(super::cpu_backend::unsupported(
            op,
            &[a.dtype, b.dtype],
            a.gpu.device(),
        ));
    }
    Ok(a.dtype)
}

/// A fresh `n`-element buffer of `dtype` written by one elementwise.cu kernel. `args`
/// receives the output pointer because each kernel takes it at a different position.
fn elementwise(
    gpu: &Arc<Gpu>,
    variant: Variant,
    kernel: &str,
    n: usize,
    dtype: DType,
    args: impl FnOnce(A<'static>) -> Vec<A<'static>>,
) -> Result<CudaBuf> {
    let out = alloc(gpu, n, dtype)?;
    if n > 0 {
        launch(
            gpu,
            "elementwise",
            variant,
            kernel,
            cfg(gpu, n),
            &mut args(p(&out)),
        )?;
    }
    Ok(out)
}

/// `n` copies of the element whose bytes are the low bytes of `bits`.
pub(crate) fn fill(gpu: &Arc<Gpu>, n: usize, dtype: DType, bits: u64) -> Result<CudaBuf> {
    elementwise(
        gpu,
        Variant::Bytes,
        &sized_name("fill", dtype),
        n,
        dtype,
        |out| vec![out, A::U64(bits), i64_(n)],
    )
}

/// `to_dtype` on the device: `cast_<from>_<to>`.
pub(crate) fn cast(a: &CudaBuf, dtype: DType) -> Result<CudaBuf> {
    elementwise(
        &a.gpu,
        Variant::Dtype(a.dtype),
        &cast_name(a.dtype, dtype),
        a.len,
        dtype,
        |out| vec![p(a), out, i64_(a.len)],
    )
}

/// `a op b`, of one shape (`bc` None) or broadcast.
pub(crate) fn binary(
    op: BinaryOp,
    a: &CudaBuf,
    b: &CudaBuf,
    bc: Option<&Broadcast>,
) -> Result<CudaBuf> {
    let dt = same_dtype(op.name(), a, b)?;
    check_op(OpFamily::Binary, op as i32, dt, a.gpu.device())?;
    match bc {
        None => {
            let n = a.len;
            elementwise(
                &a.gpu,
                Variant::Dtype(dt),
                &kernel_name("binary_same", dt),
                n,
                dt,
                |out| vec![A::I32(op as i32), p(a), p(b), out, i64_(n)],
            )
        }
        Some(bc) => {
            let n: usize = bc.dims.iter().product();
            let st = strides_arg(&bc.dims, &bc.sa, &bc.sb)?;
            elementwise(
                &a.gpu,
                Variant::Dtype(dt),
                &kernel_name("binary_bcast", dt),
                n,
                dt,
                |out| vec![A::I32(op as i32), p(a), p(b), out, i64_(n), st],
            )
        }
    }
}

/// The scalar in the kernel's compute type: float for f32/f16/bf16 (as the CPU rounds it),
/// double for f64, and for the integers Rust's saturating `as i64`.
fn scalar_arg(dtype: DType, s: f64) -> A<'static> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => A::F32(s as f32),
        DType::F64 => A::F64(s),
        _ => A::I64(s as i64),
    }
}

pub(crate) fn binary_scalar(
    op: BinaryOp,
    a: &CudaBuf,
    s: f64,
    scalar_first: bool,
) -> Result<CudaBuf> {
    let dt = a.dtype;
    let device = a.gpu.device();
    // A scalar with a bool tensor is promoted by the tensor layer; here it is a bug.
    if dt == DType::Bool {
        return Err(super::cpu_backend::unsupported(op.name(), &[dt], device));
    }
    check_op(OpFamily::Binary, op as i32, dt, device)?;
    if op == BinaryOp::Pow && dt.is_int() && !scalar_first && s < 0.0 {
        return Err(Error::Invalid(format!(
            "pow: integers to negative integer powers are not allowed ({dt} tensor, exponent {s})"
        )));
    }
    let n = a.len;
    elementwise(
        &a.gpu,
        Variant::Dtype(dt),
        &kernel_name("binary_scalar", dt),
        n,
        dt,
        |out| {
            vec![
                A::I32(op as i32),
                p(a),
                scalar_arg(dt, s),
                A::I32(scalar_first as i32),
                out,
                i64_(n),
            ]
        },
    )
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

pub(crate) fn unary(op: UnaryOp, a: &CudaBuf) -> Result<CudaBuf> {
    let dt = a.dtype;
    check_op(OpFamily::Unary, op as i32, dt, a.gpu.device())?;
    let n = a.len;
    elementwise(
        &a.gpu,
        Variant::Dtype(dt),
        &kernel_name("unary", dt),
        n,
        dt,
        |out| vec![A::I32(op as i32), p(a), out, i64_(n)],
    )
}

/// `a op b` as a bool buffer.
pub(crate) fn cmp(
    op: super::op::CmpOp,
    a: &CudaBuf,
    b: &CudaBuf,
    bc: Option<&Broadcast>,
) -> Result<CudaBuf> {
    let dt = same_dtype(op.name(), a, b)?;
    check_op(OpFamily::Compare, op as i32, dt, a.gpu.device())?;
    match bc {
        None => {
            let n = a.len;
            elementwise(
                &a.gpu,
                Variant::Dtype(dt),
                &kernel_name("cmp_same", dt),
                n,
                DType::Bool,
                |out| vec![A::I32(op as i32), p(a), p(b), out, i64_(n)],
            )
        }
        Some(bc) => {
            let n: usize = bc.dims.iter().product();
            let st = strides_arg(&bc.dims, &bc.sa, &bc.sb)?;
            elementwise(
                &a.gpu,
                Variant::Dtype(dt),
                &kernel_name("cmp_bcast", dt),
                n,
                DType::Bool,
                |out| vec![A::I32(op as i32), p(a), p(b), out, i64_(n), st],
            )
        }
    }
}

/// `cond ? x : y`, all three of one length.
pub(crate) fn where_(cond: &CudaBuf, x: &CudaBuf, y: &CudaBuf) -> Result<CudaBuf> {
    if cond.dtype != DType::Bool {
        return Err(Error::Invalid(format!(
            "where: the condition must be a bool tensor, got {} (on {})",
            cond.dtype,
            cond.gpu.device()
        )));
    }
    let dt = same_dtype("where", x, y)?;
    let n = x.len;
    elementwise(
        &x.gpu,
        Variant::Bytes,
        &sized_name("where", dt),
        n,
        dt,
        |out| vec![p(cond), p(x), p(y), out, i64_(n)],
    )
}

/// The dtype the reduction kernels accumulate and write for `dtype` (`Ty<T>::acc`).
pub(crate) fn acc_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => DType::F32,
        DType::F64 => DType::F64,
        _ => DType::I64,
    }
}

/// The dtype of a reduction's result, as the CPU backend (and torch) gives it: floats keep
/// their dtype, integer and bool sums and products are int64, integer max/min keep the dtype.
pub(crate) fn reduce_out_dtype(op: ReduceOp, dtype: DType) -> DType {
    if !dtype.is_float() && op.widens_ints() {
        DType::I64
    } else {
        dtype
    }
}

/// The accumulator-typed result of a reduction, cast to the result dtype when they differ.
fn finish(op: ReduceOp, dtype: DType, acc: CudaBuf) -> Result<CudaBuf> {
    let want = reduce_out_dtype(op, dtype);
    if acc.dtype == want {
        Ok(acc)
    } else {
        cast(&acc, want)
    }
}

/// A one-element buffer: per-block partials, then one block over the partials.
pub(crate) fn reduce_all(op: ReduceOp, a: &CudaBuf) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    check_op(OpFamily::Reduce, op as i32, a.dtype, gpu.device())?;
    let acc = acc_dtype(a.dtype);
    let n = a.len;
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1024);
    let partial = alloc(gpu, blocks, acc)?;
    launch(
        gpu,
        "reduce",
        Variant::Dtype(a.dtype),
        &kernel_name("reduce_partial", a.dtype),
        linear(blocks as u32, BLOCK),
        &mut [A::I32(op as i32), p(a), p(&partial), i64_(n)],
    )?;
    let out = alloc(gpu, 1, acc)?;
    launch(
        gpu,
        "reduce",
        Variant::Dtype(acc),
        &kernel_name("reduce_partial", acc),
        linear(1, 1024),
        &mut [A::I32(op as i32), p(&partial), p(&out), i64_(blocks)],
    )?;
    finish(op, a.dtype, out)
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
    check_op(OpFamily::Reduce, op as i32, a.dtype, gpu.device())?;
    if outer * inner == 0 {
        return alloc(gpu, 0, reduce_out_dtype(op, a.dtype));
    }
    let acc = reduce_dim_acc(op, a, outer, len, inner)?;
    finish(op, a.dtype, acc)
}

/// [`reduce_dim`] into the accumulator dtype; partial passes recurse on their f32, f64 or
/// i64 partials.
fn reduce_dim_acc(
    op: ReduceOp,
    a: &CudaBuf,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let acc = acc_dtype(a.dtype);
    let k = |name: &str| kernel_name(name, a.dtype);
    match reduce_plan(outer, len, inner, gpu.sms as usize) {
        ReducePlan::Rows => {
            let out = alloc(gpu, outer, acc)?;
            launch(
                gpu,
                "reduce",
                Variant::Dtype(a.dtype),
                &k("reduce_rows"),
                linear(outer.min(1 << 16) as u32, BLOCK),
                &mut [A::I32(op as i32), p(a), p(&out), i64_(outer), i64_(len)],
            )?;
            Ok(out)
        }
        ReducePlan::Strided => {
            let out = alloc(gpu, outer * inner, acc)?;
            launch_lines("reduce_strided", op as i32, a, &out, [outer, len, inner])?;
            Ok(out)
        }
        ReducePlan::SplitRows { chunk, chunks } => {
            let partial = alloc(gpu, outer * chunks, acc)?;
            launch(
                gpu,
                "reduce",
                Variant::Dtype(a.dtype),
                &k("reduce_rows_split"),
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
            reduce_dim_acc(op, &partial, outer, chunks, 1)
        }
        ReducePlan::SplitStrided { chunk, chunks } => {
            let partial = alloc(gpu, outer * chunks * inner, acc)?;
            launch(
                gpu,
                "reduce",
                Variant::Dtype(a.dtype),
                &k("reduce_strided_split"),
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
            reduce_dim_acc(op, &partial, outer, chunks, inner)
        }
    }
}

/// argmax (`max`) or argmin along the middle axis of `[outer, len, inner]`, as int64: a
/// block per row for long contiguous rows, else a thread per output.
pub(crate) fn arg_reduce(
    max: bool,
    a: &CudaBuf,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let out = alloc(gpu, outer * inner, DType::I64)?;
    if outer * inner == 0 {
        return Ok(out);
    }
    if inner == 1 && len > 32 {
        // arg_rows's shared arrays are sized for exactly BLOCK threads.
        launch(
            gpu,
            "reduce",
            Variant::Dtype(a.dtype),
            &kernel_name("arg_rows", a.dtype),
            linear(outer.min(1 << 16) as u32, BLOCK),
            &mut [A::I32(max as i32), p(a), p(&out), i64_(outer), i64_(len)],
        )?;
    } else {
        launch_lines("arg_strided", max as i32, a, &out, [outer, len, inner])?;
    }
    Ok(out)
}

/// Launches one of reduce.cu's kernels that take `(code, in, out, outer, len, inner)` and run
/// one thread per line of `[outer, len, inner]` along the middle axis.
fn launch_lines(
    kernel: &str,
    code: i32,
    a: &CudaBuf,
    out: &CudaBuf,
    [outer, len, inner]: [usize; 3],
) -> Result<()> {
    let gpu = &a.gpu;
    launch(
        gpu,
        "reduce",
        Variant::Dtype(a.dtype),
        &kernel_name(kernel, a.dtype),
        cfg(gpu, outer * inner),
        &mut [
            A::I32(code),
            p(a),
            p(out),
            i64_(outer),
            i64_(len),
            i64_(inner),
        ],
    )
}

/// Inclusive scan (`Sum`: cumsum, `Prod`: cumprod) along the middle axis of
/// `[outer, len, inner]`: one thread per line (reduce.cu's `scan_strided`), into the
/// accumulator dtype, then cast as a reduction's result (floats keep their dtype, integers and
/// bools give int64).
pub(crate) fn scan_dim(
    op: ReduceOp,
    a: &CudaBuf,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    check_op(OpFamily::Reduce, op as i32, a.dtype, gpu.device())?;
    let acc = alloc(gpu, outer * len * inner, acc_dtype(a.dtype))?;
    if outer * len * inner > 0 {
        launch_lines("scan_strided", op as i32, a, &acc, [outer, len, inner])?;
    }
    finish(op, a.dtype, acc)
}

/// How cuBLAS computes a product of `dtype`: `None` for plain `sgemm`/`dgemm`, else the
/// `cublasGemmEx` data and compute types (f16/bf16 on the tensor cores with f32
/// accumulation; f32 as TF32 when `set_float32_matmul_precision` allows it).
pub(crate) fn gemm_kind(dtype: DType, allow_tf32: bool) -> Option<(i32, i32)> {
    match dtype {
        DType::F16 => Some((blas::CUDA_R_16F, blas::CUBLAS_COMPUTE_32F)),
        DType::BF16 => Some((blas::CUDA_R_16BF, blas::CUBLAS_COMPUTE_32F)),
        DType::F32 if allow_tf32 => Some((blas::CUDA_R_32F, blas::CUBLAS_COMPUTE_32F_FAST_TF32)),
        _ => None,
    }
}

/// Row-major `[m, k] x [k, n]` with cuBLAS, which is column-major: a row-major matrix is its
/// own transpose in column-major, so C^T = B^T A^T is one gemm with the operands swapped.
pub(crate) fn matmul(a: &CudaBuf, b: &CudaBuf, m: usize, k: usize, n: usize) -> Result<CudaBuf> {
    let gpu = &a.gpu;
    let dt = same_dtype("matmul", a, b)?;
    if !dt.is_float() {
        // As torch: cuBLAS has no integer GEMM for these types.
        return Err(super::cpu_backend::unsupported(
            "matmul",
            &[a.dtype, b.dtype],
            gpu.device(),
        ));
    }
    let out = if k == 0 {
        zeros(gpu, m * n, dt)?
    } else {
        alloc(gpu, m * n, dt)?
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
    let blas = blas.lock().unwrap();
    // SAFETY: the buffers hold k*n, m*k and m*n elements of `dt`, matching the sizes and
    // leading dimensions: B^T (n x k, ld n) times A^T (k x m, ld k) into C^T (n x m, ld n).
    unsafe {
        match (dt, gemm_kind(dt, super::precision::allow_tf32())) {
            (_, Some((data, compute))) => {
                blas.gemm_ex(data, compute, n, m, k, b.ptr(), n, a.ptr(), k, out.ptr(), n)
            }
            (DType::F64, None) => blas.dgemm(n, m, k, b.ptr(), n, a.ptr(), k, out.ptr(), n),
            _ => blas.sgemm(n, m, k, b.ptr(), n, a.ptr(), k, out.ptr(), n),
        }
    }?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{
        check_op, gemm_kind, launched_kernels, reduce_plan, DType, OpFamily, ReducePlan, Variant,
        PER_DTYPE, PER_SIZE,
    };
    use crate::cuda::{blas, builtin_source, nvrtc};
    use crate::device::Device;

    /// Every instance the backend launches is an entry of its file's PTX, compiled by the
    /// NVRTC the prelude uses (with the dtype header), and every kernel this file names at a
    /// launch is in the list.
    #[test]
    fn every_kernel_instance_the_backend_launches_compiles() {
        let src = include_str!("gpu.rs");
        let listed: Vec<&str> = PER_DTYPE
            .iter()
            .flat_map(|(_, ks)| ks.iter().copied())
            .chain(PER_SIZE)
            .collect();
        for pat in ["kernel_name(\"", "k(\"", "sized_name(\"", "launch_lines(\""] {
            for (i, _) in src.match_indices(pat) {
                let name = src[i + pat.len()..].split('"').next().unwrap();
                if name.is_empty() || name.contains('{') {
                    continue;
                }
                assert!(listed.contains(&name), "{name} is launched but not listed");
            }
        }
        let all = launched_kernels();
        // 6 + 8 per-dtype kernels x 8 dtypes, 2 per-size kernels x 4 sizes, 64 casts.
        assert_eq!(all.len(), 14 * 8 + 2 * 4 + 64);
        match nvrtc::version() {
            Ok(v) => println!("NVRTC {}.{}", v.0, v.1),
            Err(e) => {
                println!("skipped: no NVRTC ({e})");
                return;
            }
        }
        // Each variant module holds its instances and no other dtype's.
        let mut variants: Vec<(&str, Variant)> = Vec::new();
        for (s, v, _) in &all {
            if !variants.contains(&(*s, *v)) {
                variants.push((*s, *v));
            }
        }
        for (stem, variant) in variants {
            let file = format!("{stem}.cu");
            let src = format!("{}{}", variant.prefix(), builtin_source(stem).unwrap());
            let ptx = nvrtc::compile_ptx(&src, &file, "compute_90")
                .unwrap_or_else(|e| panic!("{file} {variant:?}: {e}"));
            let entries = ptx.matches(".entry ").count();
            let want: Vec<&String> = all
                .iter()
                .filter(|(s, v, _)| *s == stem && *v == variant)
                .map(|(_, _, k)| k)
                .collect();
            for k in &want {
                assert!(
                    ptx.contains(&format!(".entry {k}(")),
                    "{file} {variant:?}: no entry {k}"
                );
            }
            assert_eq!(
                entries,
                want.len(),
                "{file} {variant:?}: other instances built too"
            );
            println!("{file} {variant:?}: {entries} instances");
        }
    }

    /// The host's op codes, names and integer support agree with the kernels' switch order.
    #[test]
    fn unary_codes_names_and_the_op_list_agree() {
        use super::UnaryOp;
        assert_eq!(UnaryOp::ALL.len(), super::UNARY_NAMES.len());
        for (i, op) in UnaryOp::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i, "{op:?}");
            assert_eq!(super::UNARY_NAMES[i], op.name());
            let on_int = check_op(OpFamily::Unary, i as i32, DType::I32, Device::Cuda(0));
            assert_eq!(on_int.is_ok(), op.int_ok(), "{op:?} on int32");
        }
    }

    #[test]
    fn binary_codes_and_names_agree() {
        use super::BinaryOp;
        assert_eq!(BinaryOp::ALL.len(), super::BINARY_NAMES.len());
        for (i, op) in BinaryOp::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i, "{op:?}");
            assert_eq!(super::BINARY_NAMES[i], op.name());
            let on_int = check_op(OpFamily::Binary, i as i32, DType::I64, Device::Cuda(0));
            assert_eq!(on_int.is_ok(), !op.float_only(), "{op:?} on int64");
        }
    }

    /// Each `binary_apply` / `unary_apply` overload in elementwise.cu has a `case` for every
    /// code the host may send it (float types: all; integers: what `check_op` lets through),
    /// so a code added on the host without its kernel case fails here, not as a trap on a GPU.
    #[test]
    fn every_op_code_has_its_kernel_case() {
        let src = include_str!("../../../kernels-cu/elementwise.cu");
        let body = |signature: &str| -> Vec<i32> {
            let start = src
                .find(signature)
                .unwrap_or_else(|| panic!("{signature} not in elementwise.cu"));
            let rest = &src[start..];
            let end = rest.find("\n}\n").expect("the function's end");
            let mut codes = Vec::new();
            for part in rest[..end].split("case ").skip(1) {
                let n: String = part.chars().take_while(|c| c.is_ascii_digit()).collect();
                codes.push(n.parse().expect("a case number"));
            }
            codes
        };
        for (family, n, names) in [
            (OpFamily::Binary, super::BINARY_NAMES.len(), "binary_apply"),
            (OpFamily::Unary, super::UNARY_NAMES.len(), "unary_apply"),
        ] {
            for (ty, dtype) in [
                ("float", DType::F32),
                ("double", DType::F64),
                ("long long", DType::I64),
            ] {
                let cases = body(&format!("{names}(int op, {ty} "));
                for code in 0..n as i32 {
                    let sent = check_op(family, code, dtype, Device::Cuda(0)).is_ok();
                    assert!(
                        !sent || cases.contains(&code),
                        "{names}({ty}) has no case {code}, which the host sends"
                    );
                }
            }
        }
    }

    #[test]
    fn an_unknown_op_code_is_an_error_naming_it() {
        let dev = Device::Cuda(0);
        for family in [
            OpFamily::Binary,
            OpFamily::Unary,
            OpFamily::Compare,
            OpFamily::Reduce,
        ] {
            let past_the_end = match family {
                OpFamily::Binary => super::BINARY_NAMES.len(),
                OpFamily::Unary => super::UNARY_NAMES.len(),
                OpFamily::Compare => super::COMPARE_NAMES.len(),
                OpFamily::Reduce => super::REDUCE_NAMES.len(),
            } as i32;
            for code in [-1, past_the_end, 99] {
                let e = check_op(family, code, DType::F16, dev)
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.contains(&format!("op code {code}"))
                        && e.contains("float16")
                        && e.contains("cuda:0"),
                    "{e}"
                );
            }
            check_op(family, 0, DType::F32, dev).unwrap();
        }
        // Known ops a dtype lacks, as on the CPU: named with the dtype and the device.
        let e = check_op(OpFamily::Binary, 1, DType::Bool, dev)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sub") && e.contains("bool") && e.contains("cuda:0"),
            "{e}"
        );
        let e = check_op(OpFamily::Unary, 2, DType::I64, dev)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exp") && e.contains("int64"), "{e}");
        for code in [0, 2, 4, 5] {
            check_op(OpFamily::Binary, code, DType::Bool, dev).unwrap();
        }
        for code in [0, 1, 4, 10, 11, 12, 13] {
            check_op(OpFamily::Unary, code, DType::U8, dev).unwrap();
        }
        for code in 0..super::UNARY_NAMES.len() as i32 {
            check_op(OpFamily::Unary, code, DType::BF16, dev).unwrap();
        }
    }

    /// The switch between sgemm, TF32 and the tensor-core GemmEx paths.
    #[test]
    fn matmul_uses_the_tensor_cores_for_halves_and_tf32_only_when_allowed() {
        assert_eq!(gemm_kind(DType::F32, false), None, "highest: sgemm");
        assert_eq!(gemm_kind(DType::F64, true), None, "f64: dgemm");
        assert_eq!(
            gemm_kind(DType::F32, true),
            Some((blas::CUDA_R_32F, blas::CUBLAS_COMPUTE_32F_FAST_TF32))
        );
        for (d, t) in [
            (DType::F16, blas::CUDA_R_16F),
            (DType::BF16, blas::CUDA_R_16BF),
        ] {
            assert_eq!(gemm_kind(d, false), Some((t, blas::CUBLAS_COMPUTE_32F)));
            assert_eq!(gemm_kind(d, true), Some((t, blas::CUBLAS_COMPUTE_32F)));
        }
        // cuBLAS's enum values (library_types.h, cublas_api.h).
        assert_eq!(
            (blas::CUDA_R_32F, blas::CUDA_R_16F, blas::CUDA_R_16BF),
            (0, 2, 14)
        );
        assert_eq!(
            (blas::CUBLAS_COMPUTE_32F, blas::CUBLAS_COMPUTE_32F_FAST_TF32),
            (68, 77)
        );
    }

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
