//! Gathering elements by index, and its adjoint: the primitive under `conv2d` (im2col) and
//! `max_pool2d` (windows), kept in one op so that both devices and the backward pass share it.
//! `gather_flat` reads `out[i] = src[idx[i]]` over the flattened source (`-1` reads zero:
//! padding); its gradient is `scatter_add_flat`, which adds `g[i]` into `src[idx[i]]`.

use super::cpu_backend::{same_variant, unsupported, CpuStorage};
use super::dtype::DType;
use super::storage::{self, CudaBuf, Storage};
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

/// The `kernels-cu/conv.cu` kernel that gathers `dtype`'s elements: one per element size.
fn gather_kernel(dtype: DType) -> String {
    format!("gather_b{}", dtype.size_in_bytes())
}

/// The `conv.cu` kernel that scatter-adds `dtype` (f32 and f64 have one).
fn scatter_kernel(dtype: DType) -> String {
    format!("scatter_add_{}", dtype.kernel_suffix())
}

/// One grid-stride launch of a `conv.cu` kernel over `n` indices: `(src, idx, out, n)`.
fn launch_indexed(b: &CudaBuf, kernel: &str, idx: &[i32], out: &CudaBuf) -> Result<()> {
    let n = idx.len();
    if n == 0 {
        return Ok(());
    }
    let ix = upload_indices(&b.gpu, idx)?;
    let ip = ix.device_ptr(&b.gpu.stream).0;
    launch_builtin(
        &b.gpu,
        "conv",
        "",
        kernel,
        launch_cfg(n),
        &mut [
            A::U64(b.ptr()),
            A::U64(ip),
            A::U64(out.ptr()),
            A::I64(n as i64),
        ],
    )
}

impl Storage {
    /// Every dtype: a gather only copies elements (zero for `-1`).
    fn gather_flat_idx(&self, idx: &[i32]) -> Result<Storage> {
        fn run<T: Copy + Default + Send + Sync>(src: &[T], idx: &[i32]) -> Vec<T> {
            idx.par_iter()
                .with_min_len(4096)
                .map(|&j| if j < 0 { T::default() } else { src[j as usize] })
                .collect()
        }
        match self {
            Storage::Cpu(c) => Ok(Storage::Cpu(same_variant!(c, v => run(v, idx)))),
            Storage::Cuda(b) => {
                let out = storage::alloc(&b.gpu, idx.len(), b.dtype)?;
                launch_indexed(b, &gather_kernel(b.dtype), idx, &out)?;
                Ok(Storage::Cuda(out))
            }
        }
    }

    /// `len` zeros, then `out[idx[i]] += self[i]`; f32 and f64 (`scatter_add_flat` brings
    /// halves here as f32).
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
            Storage::Cuda(b) if matches!(b.dtype, DType::F32 | DType::F64) => {
                let out = storage::zeros(&b.gpu, len, b.dtype)?;
                launch_indexed(b, &scatter_kernel(b.dtype), idx, &out)?;
                Ok(Storage::Cuda(out))
            }
            Storage::Cuda(b) => Err(unsupported("scatter_add", &[b.dtype], self.device())),
        }
    }
}

/// The indices on the device. The returned slice is freed stream-ordered when dropped, so
/// dropping it right after the launch is safe.
fn upload_indices(
    gpu: &Arc<crate::cuda::Gpu>,
    idx: &[i32],
) -> Result<crate::cuda::alloc::DeviceMem<i32>> {
    crate::cuda::alloc::upload(gpu, idx).map_err(|e| crate::cuda::driver_err("cuMemcpyHtoD", e))
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
        if matches!(self.dtype(), DType::F16 | DType::BF16) {
            // Added up in f32 (no rounding between the additions), as torch accumulates halves.
            let dt = self.dtype();
            return self
                .to_dtype(DType::F32)?
                .scatter_add_flat(idx, dims)?
                .to_dtype(dt);
        }
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

/// f32 and f64 as max pooling compares them, with the value select written as bit masks
/// (branch-free: on real data which element of a window wins is unpredictable).
trait PoolElem: Copy + PartialOrd + Send + Sync {
    fn pick(c: bool, a: Self, b: Self) -> Self;
}

impl PoolElem for f32 {
    #[inline(always)]
    fn pick(c: bool, a: f32, b: f32) -> f32 {
        let m = (c as u32).wrapping_neg();
        f32::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
    }
}

impl PoolElem for f64 {
    #[inline(always)]
    fn pick(c: bool, a: f64, b: f64) -> f64 {
        let m = (c as u64).wrapping_neg();
        f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
    }
}

/// The shape of one max pooling over planes `[h, w]`: windows of `kh` x `kw` taps spaced by
/// the dilation (`dh`, `dw`), moved by the stride (`sh`, `sw`), giving `[oh, ow]`; every
/// window lies inside the plane (the caller has padded it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolGeom {
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub dh: usize,
    pub dw: usize,
    pub oh: usize,
    pub ow: usize,
}

/// Max pooling of planes (`x` holds whole planes) as `g` says, straight from the input: each
/// output is the window's first maximum (a NaN counts as the maximum, as in torch), and `arg`
/// gets its flat index in `x`. Parallel over planes.
fn pool_planes<T: PoolElem>(x: &[T], g: PoolGeom) -> (Vec<T>, Vec<i32>) {
    let PoolGeom { h, w, oh, ow, .. } = g;
    if oh == 0 || ow == 0 || h == 0 || w == 0 {
        return (Vec::new(), Vec::new());
    }
    // Every tap of every window inside its plane: the bound `pool_row` reads within.
    assert!(
        (oh - 1) * g.sh + (g.kh.max(1) - 1) * g.dh < h
            && (ow - 1) * g.sw + (g.kw.max(1) - 1) * g.dw < w,
        "max_pool2d: a window outside its plane ({g:?})"
    );
    let planes = x.len() / (h * w);
    let mut out = vec![x[0]; planes * oh * ow];
    let mut arg = vec![0i32; planes * oh * ow];
    // The CNNs' pooling (2 x 2, stride 2, no dilation) has a path of its own; otherwise the
    // width of a window is a constant where it is 2 or 3 (almost every pooling), so the
    // compiler unrolls the taps of a row.
    let row: PoolRow<T> = match (g.kh, g.kw, g.sh, g.sw, g.dh, g.dw) {
        (2, 2, 2, 2, 1, 1) => pool_row_2x2,
        (_, 2, ..) => pool_row::<T, 2>,
        (_, 3, ..) => pool_row::<T, 3>,
        _ => pool_row::<T, 0>,
    };
    out.par_chunks_mut(oh * ow)
        .zip(arg.par_chunks_mut(oh * ow))
        .enumerate()
        .with_min_len((1 << 14) / (oh * ow).max(1) + 1)
        .for_each(|(q, (o, a))| {
            let base = q * h * w;
            let plane = &x[base..base + h * w];
            for y in 0..oh {
                let (orow, arow) = (&mut o[y * ow..(y + 1) * ow], &mut a[y * ow..(y + 1) * ow]);
                row(plane, orow, arow, y, base, g);
            }
        });
    (out, arg)
}

/// One tap of a max-pooling window: `v`, at `off`, replaces the best so far (and its
/// offset) when it is greater, or when it is a NaN and the best is not. Offsets are i32, as
/// the recorded indices are (`max_pool2d_cpu` refuses inputs past i32::MAX elements): lanes
/// as wide as an f32's, so that the 2 x 2 path vectorises.
#[inline(always)]
fn tap<T: PoolElem>(best: &mut T, at: &mut i32, v: T, off: i32) {
    // `b == b` is false for a NaN.
    #[allow(clippy::eq_op)]
    let better = (v > *best) | ((v != v) & (*best == *best));
    *best = T::pick(better, v, *best);
    // A select by mask: written as a branch, the compiler branches.
    *at ^= (*at ^ off) & (better as i32).wrapping_neg();
}

/// [`pool_row`] for 2 x 2 windows at stride 2: the two input rows under output row `y` read
/// as pairs, the four taps in row-major order with the same rule (a greater value or a first
/// NaN replaces the best, [`tap`]). Written for the vectoriser: exact-length slices indexed by
/// one counter (no bounds checks left) and i32 offsets, so that with AVX2 eight windows go
/// through the four taps at once (the form over zipped chunk iterators with usize offsets
/// stayed scalar: a tenth of the MNIST CNN's training step).
#[inline(always)]
fn pool_row_2x2<T: PoolElem>(
    plane: &[T],
    orow: &mut [T],
    arow: &mut [i32],
    y: usize,
    base: usize,
    g: PoolGeom,
) {
    let (w, ow) = (g.w, orow.len());
    let r0 = 2 * y * w;
    let (top, bottom) = (&plane[r0..r0 + 2 * ow], &plane[r0 + w..r0 + w + 2 * ow]);
    let arow = &mut arow[..ow];
    // The flat index of each window's first tap. Every tap's index fits an i32:
    // `max_pool2d_cpu` refuses inputs of more than i32::MAX elements.
    let first = (base + r0) as i32;
    let (down, down_right) = (w as i32, w as i32 + 1);
    for xo in 0..ow {
        let (mut best, mut at) = (top[2 * xo], 0i32);
        for (v, off) in [
            (top[2 * xo + 1], 1),
            (bottom[2 * xo], down),
            (bottom[2 * xo + 1], down_right),
        ] {
            tap(&mut best, &mut at, v, off);
        }
        orow[xo] = best;
        arow[xo] = first + 2 * xo as i32 + at;
    }
}

/// One row of windows, [`pool_row`] or [`pool_row_2x2`]: (plane, maxima, their indices, `y`,
/// `base`, geometry).
type PoolRow<T> = fn(&[T], &mut [T], &mut [i32], usize, usize, PoolGeom);

/// One row `y` of windows of a plane: the maxima into `orow`, their indices (plus `base`) into
/// `arow`. `KW` is the window's width when it is known here, 0 when `g.kw` says it. One pass
/// per window: each tap replaces the best so far when it is greater, or a NaN where the best
/// is not (a NaN stays the maximum), so ties keep the first maximum in row-major order, as
/// torch's scan finds it, and its index comes with it. Selects, not branches: which tap wins
/// is a coin toss on real data.
#[inline(always)]
fn pool_row<T: PoolElem, const KW: usize>(
    plane: &[T],
    orow: &mut [T],
    arow: &mut [i32],
    y: usize,
    base: usize,
    g: PoolGeom,
) {
    let kw = if KW == 0 { g.kw } else { KW };
    let (w, kh, sh, sw, dh, dw) = (g.w, g.kh, g.sh, g.sw, g.dh, g.dw);
    for (xo, (ov, av)) in orow.iter_mut().zip(arow.iter_mut()).enumerate() {
        let c0 = y * sh * w + xo * sw;
        // SAFETY (both reads): pool_planes asserted that the last tap of the last window,
        // ((oh-1)*sh + (kh-1)*dh, (ow-1)*sw + (kw-1)*dw), lies inside the `[h, w]` plane,
        // and y < oh, xo < ow, i < kh, j < kw here.
        let (mut best, mut at) = (unsafe { *plane.get_unchecked(c0) }, c0 as i32);
        for i in 0..kh {
            let row = c0 + i * dh * w;
            for j in 0..kw {
                let off = row + j * dw;
                tap(
                    &mut best,
                    &mut at,
                    unsafe { *plane.get_unchecked(off) },
                    off as i32,
                );
            }
        }
        *ov = best;
        *av = base as i32 + at;
    }
}

/// The gradient of [`pool_planes`]: `g` (one value per window) added at `arg` into zeros of
/// `len` elements, plane by plane in parallel (a window's maximum lies in its own plane).
fn unpool_planes<T: Copy + Default + std::ops::AddAssign + Send + Sync>(
    g: &[T],
    arg: &[i32],
    plane_in: usize,
    plane_out: usize,
    len: usize,
) -> Vec<T> {
    let mut dx = vec![T::default(); len];
    // No windows (an output of no rows or columns) or no input: nothing to send back.
    if plane_in == 0 || plane_out == 0 {
        return dx;
    }
    dx.par_chunks_mut(plane_in)
        .zip(g.par_chunks(plane_out).zip(arg.par_chunks(plane_out)))
        .enumerate()
        .with_min_len((1 << 14) / plane_in.max(1) + 1)
        .for_each(|(q, (d, (g, a)))| {
            let base = q * plane_in;
            for (&v, &j) in g.iter().zip(a) {
                d[j as usize - base] += v;
            }
        });
    dx
}

impl Tensor {
    /// `max_pool2d` of `[n, c, h, w]` on the CPU in one pass over the input, with no index
    /// table: the maximum of each window `geom` describes (its `h` and `w` are ignored: this
    /// tensor's), its gradient going to the window's first maximum (torch's rule), added back
    /// plane by plane in parallel. `None` off the CPU or for dtypes other than f32/f64, where
    /// the caller gathers the windows and reduces them.
    pub(crate) fn max_pool2d_cpu(&self, geom: PoolGeom) -> Result<Option<Tensor>> {
        let dims = self.shape().to_vec();
        if self.device() != crate::Device::Cpu || dims.len() != 4 || self.numel() == 0 {
            return Ok(None);
        }
        check_index_range(self.numel())?;
        super::cpu::keep_freed_memory();
        let [n, c, h, w] = [dims[0], dims[1], dims[2], dims[3]];
        let geom = PoolGeom { h, w, ..geom };
        let (oh, ow) = (geom.oh, geom.ow);
        let src = self.dense()?;
        let (storage, arg) = match &*src.read() {
            Storage::Cpu(CpuStorage::F32(v)) => {
                let (m, a) = pool_planes(v, geom);
                (CpuStorage::F32(m), a)
            }
            Storage::Cpu(CpuStorage::F64(v)) => {
                let (m, a) = pool_planes(v, geom);
                (CpuStorage::F64(m), a)
            }
            _ => return Ok(None),
        };
        let out = Tensor::from_storage(Storage::Cpu(storage), vec![n, c, oh, ow]);
        let arg: Indices = Arc::new(arg);
        Ok(Some(autograd::record(
            out,
            "max_pool2d",
            &[self],
            move |g| {
                let gd = g.dense()?;
                let (pin, pout, len) = (h * w, oh * ow, n * c * h * w);
                let dx = match &*gd.read() {
                    Storage::Cpu(CpuStorage::F32(g)) => {
                        CpuStorage::F32(unpool_planes(g, &arg, pin, pout, len))
                    }
                    Storage::Cpu(CpuStorage::F64(g)) => {
                        CpuStorage::F64(unpool_planes(g, &arg, pin, pout, len))
                    }
                    _ => return Ok(vec![Some(g.scatter_add_flat(arg.clone(), dims.clone())?)]),
                };
                Ok(vec![Some(Tensor::from_storage(
                    Storage::Cpu(dx),
                    dims.clone(),
                ))])
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::{gather_kernel, pool_row, pool_row_2x2, scatter_kernel, PoolGeom};
    use crate::cuda::{builtin_source, nvrtc};
    use crate::tensor::DType;

    /// The 2 x 2, stride-2 path picks the same maximum and the same index as the general one,
    /// ties and NaNs included (values drawn from {0, 1, 2, NaN}, an odd width and height).
    #[test]
    fn the_2x2_pooling_path_agrees_with_the_general_one() {
        // Rows narrower and wider than a vector of windows, with a remainder.
        for (h, w) in [(9, 13), (5, 41), (4, 64)] {
            agree_2x2(h, w);
        }
    }

    fn agree_2x2(h: usize, w: usize) {
        let (oh, ow) = (h / 2, w / 2);
        let mut state = 12345u64 + w as u64;
        let plane: Vec<f32> = (0..h * w)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                [0.0, 1.0, 2.0, f32::NAN][(state >> 33) as usize % 4]
            })
            .collect();
        let g = PoolGeom {
            h,
            w,
            kh: 2,
            kw: 2,
            sh: 2,
            sw: 2,
            dh: 1,
            dw: 1,
            oh,
            ow,
        };
        let base = 1000;
        for y in 0..oh {
            let (mut o1, mut a1) = (vec![0.0f32; ow], vec![0i32; ow]);
            let (mut o2, mut a2) = (vec![0.0f32; ow], vec![0i32; ow]);
            pool_row::<f32, 0>(&plane, &mut o1, &mut a1, y, base, g);
            pool_row_2x2(&plane, &mut o2, &mut a2, y, base, g);
            assert_eq!(a1, a2, "row {y}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&o1), bits(&o2), "row {y}");
        }
    }

    /// Every kernel the gathers launch is an entry of `conv.cu`'s PTX: a gather for each
    /// dtype, a scatter-add for f32 and f64.
    #[test]
    fn conv_cu_has_a_kernel_for_every_dtype_gathered() {
        let mut want: Vec<String> = DType::ALL.iter().map(|&d| gather_kernel(d)).collect();
        want.extend([DType::F32, DType::F64].map(scatter_kernel));
        if let Err(e) = nvrtc::version() {
            println!("skipped: no NVRTC ({e})");
            return;
        }
        let ptx =
            nvrtc::compile_ptx(builtin_source("conv").unwrap(), "conv.cu", "compute_90").unwrap();
        for k in &want {
            assert!(
                ptx.contains(&format!(".entry {k}(")),
                "conv.cu: no entry {k}"
            );
        }
        assert_eq!(ptx.matches(".entry ").count(), 6, "conv.cu: other kernels");
    }
}
