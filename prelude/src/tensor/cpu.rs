//! The CPU backend: element-wise loops, reductions and permutes over `&[f32]`, split across
//! cores with rayon once the work is big enough to pay for it.

use super::op::{BinaryOp, ReduceOp, UnaryOp};
use super::shape::Broadcast;
use rayon::prelude::*;

/// Below this many elements one core streams faster than several can be woken up
/// (measured on a 2-core VM: at 2^16 the threaded loop was twice as slow).
const PAR_MIN: usize = 1 << 18;
const CHUNK: usize = 1 << 14;

/// Buffers from this size on are asked for transparent huge pages (numpy's threshold).
const HUGE_FROM: usize = 4 << 20;

/// Asks Linux to back `v`'s allocation with 2 MiB pages when it is big (`madvise`
/// `MADV_HUGEPAGE`), before anything is written to it. A fresh multi-megabyte output is a
/// fresh `mmap` from malloc, and every 4 KiB page of it faults on first write: on the 2-core
/// VM that cost more than the arithmetic, so an element-wise op on 2^24 floats ran at half of
/// numpy's speed, numpy having made this same call since 1.16 (measured: numpy's `a + b` at
/// 2^24 took 16 ms with it and 36-44 ms without). Where transparent huge pages are off, or set
/// to `always`, the call changes nothing. Only glibc-Linux is asked; elsewhere a no-op.
pub(crate) fn advise_huge_pages<T>(v: &Vec<T>) {
    advise_range(v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>());
}

/// [`advise_huge_pages`] for a buffer about to be written whole, e.g. the spare capacity
/// that [`vec_filled_by`] hands out.
pub(crate) fn advise_huge_pages_for<T>(buf: &[T]) {
    advise_range(buf.as_ptr() as usize, std::mem::size_of_val(buf));
}

/// The `madvise` behind both: `bytes` from `start`, one allocation that stays mapped while
/// the caller's buffer lives.
fn advise_range(start: usize, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        if bytes < HUGE_FROM {
            return;
        }
        const PAGE: usize = 4096;
        let first = start.next_multiple_of(PAGE);
        let end = (start + bytes) / PAGE * PAGE;
        if end > first {
            // SAFETY: [first, end) lies inside the caller's own allocation (page-aligned
            // inwards), which stays mapped while it lives. MADV_HUGEPAGE is advice: it changes
            // how the kernel backs those pages, never their contents, so nothing the buffer
            // holds or any other allocation sharing a page at either end could see is
            // altered. A refusal (EINVAL without THP support) only leaves the 4 KiB pages.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

/// An empty vector with room for `n` elements, advised for huge pages when big.
pub(crate) fn output_vec<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    advise_huge_pages(&v);
    v
}

// Collecting writes each output once; filling a zeroed Vec would touch it twice. The parallel
// paths collect into a vector advised for huge pages (rayon reuses its capacity).
fn map2(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32 + Sync + Send) -> Vec<f32> {
    if a.len() < PAR_MIN {
        a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
    } else {
        let mut out = output_vec(a.len());
        a.par_iter()
            .zip(b.par_iter())
            .with_min_len(CHUNK)
            .map(|(&x, &y)| f(x, y))
            .collect_into_vec(&mut out);
        out
    }
}

fn map1(a: &[f32], f: impl Fn(f32) -> f32 + Sync + Send) -> Vec<f32> {
    if a.len() < PAR_MIN {
        a.iter().map(|&x| f(x)).collect()
    } else {
        let mut out = output_vec(a.len());
        a.par_iter()
            .with_min_len(CHUNK)
            .map(|&x| f(x))
            .collect_into_vec(&mut out);
        out
    }
}

/// A fresh `n`-element vector handed to `fill` in pieces of `chunk` with their index; for
/// outputs that need per-piece set-up (a row's base offset, a tile) before a tight loop.
fn fill_chunks(n: usize, chunk: usize, fill: impl Fn(usize, &mut [f32]) + Sync) -> Vec<f32> {
    // calloc maps a big buffer fresh and leaves it untouched, so the advice still comes
    // before the first write.
    let mut out = vec![0f32; n];
    advise_huge_pages(&out);
    if n >= PAR_MIN {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, o)| fill(i, o));
    } else {
        out.chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, o)| fill(i, o));
    }
    out
}

// The match sits outside the loops so each loop body is monomorphic and vectorises.
pub(crate) fn binary_same(op: BinaryOp, a: &[f32], b: &[f32]) -> Vec<f32> {
    match op {
        BinaryOp::Add => map2(a, b, |x, y| x + y),
        BinaryOp::Sub => map2(a, b, |x, y| x - y),
        BinaryOp::Mul => map2(a, b, |x, y| x * y),
        BinaryOp::Div => map2(a, b, |x, y| x / y),
        op => map2(a, b, move |x, y| op.apply(x, y)),
    }
}

pub(crate) fn binary_scalar(op: BinaryOp, a: &[f32], s: f32, scalar_first: bool) -> Vec<f32> {
    match (op, scalar_first) {
        (BinaryOp::Add, _) => map1(a, |x| x + s),
        (BinaryOp::Mul, _) => map1(a, |x| x * s),
        (BinaryOp::Sub, false) => map1(a, |x| x - s),
        (BinaryOp::Div, false) => map1(a, |x| x / s),
        (op, false) => map1(a, move |x| op.apply(x, s)),
        (op, true) => map1(a, move |x| op.apply(s, x)),
    }
}

/// Broadcast operands: walks the output one last-dimension row at a time, so the inner loop
/// has fixed strides (0 or 1 for each side) and no index arithmetic.
pub(crate) fn binary_bcast(op: BinaryOp, a: &[f32], b: &[f32], bc: &Broadcast) -> Vec<f32> {
    let n: usize = bc.dims.iter().product();
    let rank = bc.dims.len();
    let row = bc.dims[rank - 1].max(1);
    let (sa, sb) = (bc.sa[rank - 1], bc.sb[rank - 1]);
    fill_chunks(n, row, |r, o| {
        let (mut rest, mut ia, mut ib) = (r, 0, 0);
        for d in (0..rank - 1).rev() {
            let c = rest % bc.dims[d];
            rest /= bc.dims[d];
            ia += c * bc.sa[d];
            ib += c * bc.sb[d];
        }
        for (j, v) in o.iter_mut().enumerate() {
            *v = op.apply(a[ia + j * sa], b[ib + j * sb]);
        }
    })
}

pub(crate) fn unary(op: UnaryOp, a: &[f32]) -> Vec<f32> {
    match op {
        UnaryOp::Neg => map1(a, |x| -x),
        UnaryOp::Abs => map1(a, f32::abs),
        UnaryOp::Relu => map1(a, |x| if x < 0.0 { 0.0 } else { x }),
        UnaryOp::Sqrt => map1(a, f32::sqrt),
        op => map1(a, move |x| op.apply(x)),
    }
}

/// A sum in f32 lanes over blocks, the blocks combined in f64: close to numpy's pairwise sum
/// in accuracy and as fast as a plain loop.
fn sum_block(x: &[f32]) -> f64 {
    let mut lanes = [0f32; 16];
    let mut it = x.chunks_exact(16);
    for c in &mut it {
        for i in 0..16 {
            lanes[i] += c[i];
        }
    }
    let mut s: f64 = lanes.iter().map(|&v| v as f64).sum();
    s += it.remainder().iter().map(|&v| v as f64).sum::<f64>();
    s
}

fn reduce_slice(op: ReduceOp, x: &[f32]) -> f32 {
    match op {
        ReduceOp::Sum => x.chunks(4096).map(sum_block).sum::<f64>() as f32,
        _ => x.iter().fold(op.identity(), |acc, &v| op.combine(acc, v)),
    }
}

pub(crate) fn reduce_all(op: ReduceOp, x: &[f32]) -> f32 {
    if x.len() < PAR_MIN {
        return reduce_slice(op, x);
    }
    match op {
        ReduceOp::Sum => x
            .par_chunks(1 << 16)
            .map(|c| c.chunks(4096).map(sum_block).sum::<f64>())
            .sum::<f64>() as f32,
        _ => x
            .par_chunks(1 << 16)
            .map(|c| reduce_slice(op, c))
            .reduce(|| op.identity(), |a, b| op.combine(a, b)),
    }
}

/// Reduces the middle axis of `x` seen as `[outer, len, inner]`.
pub(crate) fn reduce_dim(
    op: ReduceOp,
    x: &[f32],
    outer: usize,
    len: usize,
    inner: usize,
) -> Vec<f32> {
    let mut out = vec![op.identity(); outer * inner];
    if out.is_empty() {
        // `chunks_mut(0)` panics; an empty output has nothing to reduce into.
        return out;
    }
    if inner == 1 {
        let f = |(o, v): (usize, &mut f32)| *v = reduce_slice(op, &x[o * len..(o + 1) * len]);
        if x.len() >= PAR_MIN {
            out.par_iter_mut().enumerate().for_each(f);
        } else {
            out.iter_mut().enumerate().for_each(f);
        }
        return out;
    }
    // Accumulate whole rows of `inner` at a time: contiguous reads, vectorisable adds.
    let f = |(o, acc): (usize, &mut [f32])| {
        let mut wide = vec![0f64; if op == ReduceOp::Sum { inner } else { 0 }];
        for k in 0..len {
            let row = &x[(o * len + k) * inner..(o * len + k + 1) * inner];
            if op == ReduceOp::Sum {
                wide.iter_mut().zip(row).for_each(|(a, &v)| *a += v as f64);
            } else {
                acc.iter_mut()
                    .zip(row)
                    .for_each(|(a, &v)| *a = op.combine(*a, v));
            }
        }
        if op == ReduceOp::Sum {
            acc.iter_mut().zip(&wide).for_each(|(a, &w)| *a = w as f32);
        }
    };
    if x.len() >= PAR_MIN && outer > 1 {
        out.par_chunks_mut(inner).enumerate().for_each(f);
    } else {
        out.chunks_mut(inner).enumerate().for_each(f);
    }
    out
}

/// Output element `i` (row-major over `dims`) is `x[sum(coord[d] * src_strides[d])]`.
pub(crate) fn permute(x: &[f32], dims: &[usize], src_strides: &[usize]) -> Vec<f32> {
    let n: usize = dims.iter().product();
    let rank = dims.len();
    if rank == 2 && src_strides == [1, dims[0]] {
        return transpose2d(x, dims[1], dims[0]);
    }
    // A batch of transposed planes (conv2d's [N, HW, O] -> [N, O, HW] and its gradient):
    // one tiled transpose per plane, planes shared between cores.
    if rank == 3 && dims[0] > 1 && src_strides == [dims[1] * dims[2], 1, dims[1]] {
        let (rows, cols) = (dims[2], dims[1]);
        return fill_chunks(n, (rows * cols).max(1), |b, o| {
            transpose2d_into(&x[b * rows * cols..(b + 1) * rows * cols], rows, cols, o)
        });
    }
    let row = dims[rank - 1].max(1);
    let s_last = src_strides[rank - 1];
    fill_chunks(n, row, |r, o| {
        let (mut rest, mut base) = (r, 0);
        for d in (0..rank - 1).rev() {
            base += (rest % dims[d]) * src_strides[d];
            rest /= dims[d];
        }
        for (j, v) in o.iter_mut().enumerate() {
            *v = x[base + j * s_last];
        }
    })
}

/// One plane of `permute`'s batched case: `x` (`rows x cols`) transposed into `o`, in 32x32
/// tiles.
fn transpose2d_into(x: &[f32], rows: usize, cols: usize, o: &mut [f32]) {
    const T: usize = 32;
    for j0 in (0..cols).step_by(T) {
        for i0 in (0..rows).step_by(T) {
            for j in j0..(j0 + T).min(cols) {
                for i in i0..(i0 + T).min(rows) {
                    o[j * rows + i] = x[i * cols + j];
                }
            }
        }
    }
}

/// `rows x cols` to `cols x rows`, in 32x32 tiles so both sides stay in cache.
fn transpose2d(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const T: usize = 32;
    fill_chunks(rows * cols, T * rows.max(1), |bj, o| {
        // o holds output rows bj*T .. bj*T + T, i.e. input columns.
        let j0 = bj * T;
        let jn = (o.len() / rows.max(1)).min(T);
        for i0 in (0..rows).step_by(T) {
            for j in 0..jn {
                for i in i0..(i0 + T).min(rows) {
                    o[j * rows + i] = x[i * cols + j0 + j];
                }
            }
        }
    })
}

/// A vector of `n` elements that `fill` writes, with no zeroing first. Freed buffers come
/// back from the heap (see [`keep_freed_memory`]), so a zeroed one costs a memset that the
/// fill then overwrites at once: on the 2-core VM the memsets were about a tenth of the MNIST
/// CNN's forward pass (`perf`, `examples/train_bench.rs`).
///
/// # Safety
/// `fill` must write every element of the slice it is given (`MaybeUninit::write`,
/// `write_copy_of_slice`), also when it runs in parallel; the vector is read as initialised
/// afterwards.
pub(crate) unsafe fn vec_filled_by<T>(
    n: usize,
    fill: impl FnOnce(&mut [std::mem::MaybeUninit<T>]),
) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    // The unit tests poison the buffer first (all bits set: NaN for floats, -1 for
    // integers), so an element a fill misses shows up instead of reading as a fresh zero page.
    #[cfg(test)]
    // SAFETY: the capacity is at least n elements; they stay uninitialised as far as the
    // types go (`MaybeUninit`) until `fill` writes them.
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr(), 0xFF, n)
    };
    fill(&mut v.spare_capacity_mut()[..n]);
    // SAFETY: the capacity is at least n, and the caller's `fill` wrote all n elements.
    unsafe { v.set_len(n) };
    v
}

/// Lets glibc's malloc keep freed buffers of up to 32 MiB for reuse, once per process,
/// called by the CPU training paths (conv2d, max_pool2d, ReLU's backward, fused Adam).
///
/// By default glibc maps every buffer above a threshold (128 KiB, raised as big buffers are
/// freed, up to 32 MiB) with a fresh `mmap` and returns memory above 128 KiB at the top of
/// the heap to the kernel when freed. A training step allocates the same few-megabyte
/// activations and gradients every time, so each step page-faulted them in anew; on the
/// 2-core VM this was measured at about 2 µs per 4 KiB page, a fifth of the MNIST CNN's
/// step and a quarter of the cat-vs-dog CNN's (`examples/train_bench.rs`). With buffers
/// below 32 MiB served from the heap and up to 256 MiB of freed memory kept, the next step
/// reuses pages already mapped. The cost: the process keeps up to that much freed memory
/// instead of returning it at once. `mallopt` takes malloc's own lock; only glibc has it.
pub(crate) fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only sets malloc's tunables (under malloc's lock); a refusal
            // (return 0) leaves glibc's defaults, which are correct, only slower.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
            }
        });
    }
}

/// Returns the freed memory malloc keeps (see [`keep_freed_memory`]) to the system
/// (`malloc_trim`: free pages anywhere in the heaps, not only at their tops), for when a
/// training loop has ended. A few milliseconds; the next step faults its buffers in again.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only hands free pages back to the kernel, under malloc's lock;
    // no allocation is moved or changed.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` line of the mapping in /proc/self/smaps that holds `addr`.
    #[cfg(target_os = "linux")]
    fn vm_flags_at(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.trim().to_string());
                }
            }
        }
        None
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn big_outputs_are_advised_for_huge_pages_and_small_ones_are_not() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            println!("skipped: this kernel has no transparent huge pages");
            return;
        }
        // A control: advice given here directly must show in smaps, or this kernel does not
        // report it (gVisor, which the GPU machines run, accepts the call and records nothing).
        let control = vec![0u8; 8 << 20];
        let page = (control.as_ptr() as usize).next_multiple_of(2 << 20);
        // SAFETY: [page, page + 2 MiB) lies inside `control` (8 MiB from an address at most
        // 2 MiB below `page`); madvise only records advice, the memory is not touched.
        let rc = unsafe { libc::madvise(page as *mut libc::c_void, 2 << 20, libc::MADV_HUGEPAGE) };
        let shown = vm_flags_at(page).is_some_and(|f| f.split_whitespace().any(|f| f == "hg"));
        if rc != 0 || !shown {
            println!("skipped: this kernel does not show MADV_HUGEPAGE in /proc/self/smaps");
            return;
        }
        let a = vec![1f32; 16 << 20]; // 64 MiB: a fresh mmap from malloc
        for out in [map1(&a, |x| x + 1.0), map2(&a, &a, |x, y| x * y)] {
            assert_eq!(out.len(), a.len());
            assert!(out.iter().all(|&v| v == 2.0 || v == 1.0));
            // Inside the advised part (the allocation's first page may hold malloc's header
            // and is not advised).
            let flags = vm_flags_at(out.as_ptr() as usize + (1 << 20)).expect("smaps entry");
            assert!(
                flags.split_whitespace().any(|f| f == "hg"),
                "no MADV_HUGEPAGE on a 64 MiB output: VmFlags {flags}"
            );
        }
        // A small output is left alone (it shares pages with other allocations).
        let small = output_vec::<f32>(1000);
        let flags = vm_flags_at(small.as_ptr() as usize).expect("smaps entry");
        assert!(
            !flags.split_whitespace().any(|f| f == "hg"),
            "VmFlags {flags}"
        );
    }
}
