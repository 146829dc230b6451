//! CPU matrix multiply: the BLIS/GotoBLAS scheme. B is packed into panels `NR` columns wide
//! and A into panels `MR` rows tall, sized so a B micro-panel stays in L1 and an A block in
//! L2, and a register-tiled micro-kernel does the FLOPs. On several cores (rayon), each
//! core takes a tile of C (a grid shaped so the packing each tile repeats costs least) as a
//! product of its own, and a small C over a long depth is split over the depth. The
//! micro-kernel is picked at run time: AVX-512, AVX2+FMA, or a portable one the compiler
//! vectorises as it can.

// The micro-kernels index their accumulator tiles by row and column on purpose: fixed-size loops
// over `acc[i][j]` are what the compiler unrolls into registers. The packing helpers take the
// blocking parameters one by one for the same reason.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

use super::cpu::vec_filled_by;
use rayon::prelude::*;
use std::cell::Cell;
use std::mem::MaybeUninit;

/// Depth of a packed block: a KC x NR micro-panel of B is 32 KiB with the AVX-512 kernel.
const KC: usize = 256;
/// Rows of A per block (a multiple of every MR below): 144 x 256 floats = 144 KiB, in L2.
const MC: usize = 144;
/// Columns of B per block.
const NC: usize = 4096;

/// `c[0..MR][0..NR] (+)= sum_p a[p][0..MR] * b[p][0..NR]` over packed panels, `c` with row
/// stride `ldc`; `accumulate` adds to C instead of overwriting it.
type MicroKernel<T> =
    unsafe fn(kc: usize, a: *const T, b: *const T, c: *mut T, ldc: usize, accumulate: bool);

#[derive(Clone, Copy)]
pub(crate) struct Kernel<T> {
    mr: usize,
    nr: usize,
    f: MicroKernel<T>,
}

/// The element types of the packed product (f32 and f64), each with its micro-kernels; the
/// packing and blocking below are the same code for both.
pub(crate) trait Elem:
    Copy + Default + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + 'static
{
    /// The micro-kernels this CPU can run for the type, best first; the portable one last.
    fn kernels() -> Vec<Kernel<Self>>;
    /// The best of them (looked up once).
    fn kernel() -> Kernel<Self>;
    /// This thread's packing buffers, one per operand (see [`with_pack_buffer`]).
    fn pack_buffers() -> &'static std::thread::LocalKey<[Cell<Vec<Self>>; 2]>;
    /// Packs a whole `nr`-wide panel of a transposed operand, `panel[p * nr + j] =
    /// src[j * cs + p]` for p < kc, j < nr, with vector transposes where this type and CPU
    /// have them; false (nothing written) leaves it to the element-by-element loop.
    fn pack_transposed(
        _src: &[Self],
        _cs: usize,
        _kc: usize,
        _nr: usize,
        _panel: &mut [Self],
    ) -> bool {
        false
    }
}

/// The portable micro-kernel: a 4 x 16 tile the compiler vectorises as it can.
fn portable<T: Elem>() -> Kernel<T> {
    Kernel {
        mr: 4,
        nr: 16,
        f: kernel_portable::<T>,
    }
}

/// `Elem` for a type with an AVX-512 and an AVX2 kernel in `x86` (f64's tiles are half as
/// wide as f32's: NR halves, MR stays).
macro_rules! impl_elem {
    ($t:ty, $avx512:ident, $avx2:ident $(, $pack_t:path)?) => {
        impl Elem for $t {
            fn kernels() -> Vec<Kernel<$t>> {
                #[cfg(target_arch = "x86_64")]
                let mut k = x86::available(x86::$avx512, x86::$avx2);
                #[cfg(not(target_arch = "x86_64"))]
                let mut k = Vec::new();
                k.push(portable());
                k
            }
            fn kernel() -> Kernel<$t> {
                static BEST: std::sync::OnceLock<Kernel<$t>> = std::sync::OnceLock::new();
                *BEST.get_or_init(|| Self::kernels()[0])
            }
            fn pack_buffers() -> &'static std::thread::LocalKey<[Cell<Vec<$t>>; 2]> {
                thread_local! {
                    static BUFFERS: [Cell<Vec<$t>>; 2] =
                        const { [Cell::new(Vec::new()), Cell::new(Vec::new())] };
                }
                &BUFFERS
            }
            $(
                fn pack_transposed(src: &[$t], cs: usize, kc: usize, nr: usize, panel: &mut [$t]) -> bool {
                    #[cfg(target_arch = "x86_64")]
                    return $pack_t(src, cs, kc, nr, panel);
                    #[cfg(not(target_arch = "x86_64"))]
                    false
                }
            )?
        }
    };
}

impl_elem!(f32, AVX512_F32, AVX2_F32, x86::pack_transposed_f32);
impl_elem!(f64, AVX512_F64, AVX2_F64);

unsafe fn kernel_portable<T: Elem>(
    kc: usize,
    a: *const T,
    b: *const T,
    c: *mut T,
    ldc: usize,
    accumulate: bool,
) {
    const MR: usize = 4;
    const NR: usize = 16;
    let mut acc = [[T::default(); NR]; MR];
    for p in 0..kc {
        let bp = std::slice::from_raw_parts(b.add(p * NR), NR);
        for i in 0..MR {
            let ai = *a.add(p * MR + i);
            for j in 0..NR {
                acc[i][j] = acc[i][j] + ai * bp[j];
            }
        }
    }
    for i in 0..MR {
        let row = std::slice::from_raw_parts_mut(c.add(i * ldc), NR);
        for j in 0..NR {
            row[j] = if accumulate {
                row[j] + acc[i][j]
            } else {
                acc[i][j]
            };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Kernel;
    use std::arch::x86_64::*;

    /// Of the two kernels, those this CPU has the instructions for, AVX-512 first.
    pub(super) fn available<T>(avx512: Kernel<T>, avx2: Kernel<T>) -> Vec<Kernel<T>> {
        let mut k = Vec::new();
        if is_x86_feature_detected!("avx512f") {
            k.push(avx512);
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            k.push(avx2);
        }
        k
    }

    /// [`super::Elem::pack_transposed`] for f32: AVX's 8 x 8 transposes over the panel's
    /// full blocks of eight rows, the last `kc % 8` rows element by element; false without
    /// AVX, for a width that is not a multiple of 8, or for slices too short for the panel.
    pub(super) fn pack_transposed_f32(
        src: &[f32],
        cs: usize,
        kc: usize,
        nr: usize,
        panel: &mut [f32],
    ) -> bool {
        if !is_x86_feature_detected!("avx")
            || nr == 0
            || !nr.is_multiple_of(8)
            || kc == 0
            || panel.len() < kc * nr
            || src.len() < (nr - 1) * cs + kc
        {
            return false;
        }
        // SAFETY: the CPU has AVX; every read, src[j * cs + p] for j < nr, p < kc, is at
        // most (nr - 1) * cs + kc - 1 < src.len(), and every write, panel[p * nr + j], below
        // kc * nr <= panel.len() (both checked above).
        unsafe { pack_transposed_f32_avx(src.as_ptr(), cs, kc, nr, panel.as_mut_ptr()) };
        true
    }

    /// The body of [`pack_transposed_f32`]: `panel[p * nr + j] = src[j * cs + p]`.
    #[target_feature(enable = "avx")]
    unsafe fn pack_transposed_f32_avx(
        src: *const f32,
        cs: usize,
        kc: usize,
        nr: usize,
        panel: *mut f32,
    ) {
        let mut p = 0;
        while p + 8 <= kc {
            for jb in (0..nr).step_by(8) {
                let row = |i: usize| src.add((jb + i) * cs + p);
                let cols = transpose8([
                    _mm256_loadu_ps(row(0)),
                    _mm256_loadu_ps(row(1)),
                    _mm256_loadu_ps(row(2)),
                    _mm256_loadu_ps(row(3)),
                    _mm256_loadu_ps(row(4)),
                    _mm256_loadu_ps(row(5)),
                    _mm256_loadu_ps(row(6)),
                    _mm256_loadu_ps(row(7)),
                ]);
                for (i, c) in cols.into_iter().enumerate() {
                    _mm256_storeu_ps(panel.add((p + i) * nr + jb), c);
                }
            }
            p += 8;
        }
        for p in p..kc {
            for j in 0..nr {
                *panel.add(p * nr + j) = *src.add(j * cs + p);
            }
        }
    }

    /// The 8 x 8 transpose: output vector i holds element i of each input, in order.
    #[inline]
    #[target_feature(enable = "avx")]
    fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
        // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves swapped.
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        [
            _mm256_permute2f128_ps::<0x20>(u0, u4),
            _mm256_permute2f128_ps::<0x20>(u1, u5),
            _mm256_permute2f128_ps::<0x20>(u2, u6),
            _mm256_permute2f128_ps::<0x20>(u3, u7),
            _mm256_permute2f128_ps::<0x31>(u0, u4),
            _mm256_permute2f128_ps::<0x31>(u1, u5),
            _mm256_permute2f128_ps::<0x31>(u2, u6),
            _mm256_permute2f128_ps::<0x31>(u3, u7),
        ]
    }

    /// One register-tiled micro-kernel, `$kernel` (its tile: `MR` rows, two vectors of `W`
    /// lanes), whose function `$f` keeps `MR x 2` accumulators over the packed panels and
    /// then stores (or adds) them into `c`. The four instances differ only in the vector
    /// width, the element type and the intrinsics.
    macro_rules! micro_kernel {
        ($kernel:ident, $f:ident, $feature:literal, $t:ty, $mr:literal, $w:literal,
         $zero:ident, $load:ident, $splat:ident, $fma:ident, $add:ident, $store:ident) => {
            pub(super) const $kernel: Kernel<$t> = Kernel {
                mr: $mr,
                nr: 2 * $w,
                f: $f,
            };

            #[target_feature(enable = $feature)]
            unsafe fn $f(
                kc: usize,
                a: *const $t,
                b: *const $t,
                c: *mut $t,
                ldc: usize,
                accumulate: bool,
            ) {
                const MR: usize = $mr;
                const W: usize = $w;
                // The C tile is read (or written) only after the loop, but it lies in rows
                // `ldc` apart that no hardware prefetcher predicts: fetching its lines now
                // hides the misses behind the kc x MR x 2 multiply-adds (BLIS does the same).
                for i in 0..MR {
                    let row = c.add(i * ldc) as *const i8;
                    _mm_prefetch::<_MM_HINT_T0>(row);
                    _mm_prefetch::<_MM_HINT_T0>(row.add(2 * W * std::mem::size_of::<$t>() - 1));
                }
                let mut acc = [[$zero(); 2]; MR];
                for p in 0..kc {
                    let b0 = $load(b.add(p * 2 * W));
                    let b1 = $load(b.add(p * 2 * W + W));
                    let ap = a.add(p * MR);
                    for i in 0..MR {
                        let ai = $splat(*ap.add(i));
                        acc[i][0] = $fma(ai, b0, acc[i][0]);
                        acc[i][1] = $fma(ai, b1, acc[i][1]);
                    }
                }
                for i in 0..MR {
                    let row = c.add(i * ldc);
                    for h in 0..2 {
                        let v = if accumulate {
                            $add($load(row.add(W * h)), acc[i][h])
                        } else {
                            acc[i][h]
                        };
                        $store(row.add(W * h), v);
                    }
                }
            }
        };
    }

    #[rustfmt::skip]
    micro_kernel!(AVX512_F64, avx512_f64, "avx512f", f64, 12, 8, _mm512_setzero_pd,
        _mm512_loadu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, _mm512_storeu_pd);
    #[rustfmt::skip]
    micro_kernel!(AVX2_F64, avx2_f64, "avx2,fma", f64, 6, 4, _mm256_setzero_pd,
        _mm256_loadu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, _mm256_storeu_pd);
    #[rustfmt::skip]
    micro_kernel!(AVX512_F32, avx512_f32, "avx512f", f32, 12, 16, _mm512_setzero_ps,
        _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps);
    #[rustfmt::skip]
    micro_kernel!(AVX2_F32, avx2_f32, "avx2,fma", f32, 6, 8, _mm256_setzero_ps,
        _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps);
}

/// Packs `b[pc..pc+kc][jc..jc+nc]` (element `(p, j)` at `p * b.rs + j * b.cs`) into NR-wide
/// panels, each kc x NR row-major, zero-padded past the last column.
fn pack_b<T: Elem>(
    b: Strided<T>,
    pc: usize,
    kc: usize,
    jc: usize,
    nc: usize,
    nr: usize,
    out: &mut [T],
) {
    let pack = |(jp, panel): (usize, &mut [T])| {
        let j0 = jc + jp * nr;
        let w = nr.min(jc + nc - j0);
        if b.cs == 1 && w == nr && matches!(nr, 8 | 16 | 32) {
            // A whole panel of a row-major operand: rows of a width known at compile time
            // are a few vector moves (a copy of a run-time length calls memmove, per row).
            let start = pc * b.rs + j0;
            match nr {
                8 => pack_rows::<T, 8>(b.data, start, b.rs, kc, panel),
                16 => pack_rows::<T, 16>(b.data, start, b.rs, kc, panel),
                _ => pack_rows::<T, 32>(b.data, start, b.rs, kc, panel),
            }
        } else if b.cs == 1 {
            for p in 0..kc {
                let at = (pc + p) * b.rs + j0;
                let dst = &mut panel[p * nr..(p + 1) * nr];
                dst[..w].copy_from_slice(&b.data[at..at + w]);
                dst[w..].fill(T::default());
            }
        } else if b.rs == 1
            && w == nr
            && T::pack_transposed(&b.data[j0 * b.cs + pc..], b.cs, kc, nr, panel)
        {
            // A transposed operand whose panel rows are columns of memory (`w.t()` in a
            // Linear layer): transposed 8 x 8 at a time in vector registers.
        } else {
            // A transposed operand (`w.t()` in a Linear layer): gathered row by row so the
            // panel is written in order; the NR source columns stay in L1 across rows.
            let base = j0 * b.cs + pc * b.rs;
            for (p, dst) in panel.chunks_exact_mut(nr).take(kc).enumerate() {
                let row = base + p * b.rs;
                let src = &b.data[row..row + (w - 1) * b.cs + 1];
                for (j, d) in dst[..w].iter_mut().enumerate() {
                    *d = src[j * b.cs];
                }
                dst[w..].fill(T::default());
            }
        }
    };
    out.chunks_mut(kc * nr).enumerate().for_each(pack);
}

/// `kc` rows of `NR` values, `rs` apart from `data[start..]`, one after another into `panel`.
#[inline(always)]
fn pack_rows<T: Copy, const NR: usize>(
    data: &[T],
    start: usize,
    rs: usize,
    kc: usize,
    panel: &mut [T],
) {
    for (p, dst) in panel.chunks_exact_mut(NR).take(kc).enumerate() {
        let at = start + p * rs;
        // Both sides as arrays: a copy of NR elements the compiler emits as vector moves
        // even where it does not inline `copy_from_slice` (without cross-unit LTO it called
        // memmove per row).
        let src: &[T; NR] = data[at..at + NR].try_into().unwrap();
        let dst: &mut [T; NR] = dst.try_into().unwrap();
        *dst = *src;
    }
}

/// Packs `a[ic..ic+mc][pc..pc+kc]` (element `(i, p)` at `i * a.rs + p * a.cs`) into MR-tall
/// panels, each kc x MR with the MR values of one column together, zero-padded past the last
/// row.
fn pack_a<T: Elem>(
    a: Strided<T>,
    ic: usize,
    mc: usize,
    pc: usize,
    kc: usize,
    mr: usize,
    out: &mut [T],
) {
    for (ip, panel) in out.chunks_mut(kc * mr).enumerate().take(mc.div_ceil(mr)) {
        let i0 = ic + ip * mr;
        let h = mr.min(ic + mc - i0);
        let base = i0 * a.rs + pc * a.cs;
        // A whole panel of a row-major operand: its MR rows read side by side, the count known
        // at compile time (with a run-time count the loop stayed strided and scalar, a bounds
        // check per element: a tenth of a 256^3 product's time).
        match (a.cs, h == mr, mr) {
            (1, true, 4) => pack_a_rows::<T, 4>(a.data, base, a.rs, kc, panel),
            (1, true, 6) => pack_a_rows::<T, 6>(a.data, base, a.rs, kc, panel),
            (1, true, 12) => pack_a_rows::<T, 12>(a.data, base, a.rs, kc, panel),
            _ => pack_a_panel(a, base, h, kc, mr, panel),
        }
    }
}

/// `panel[p * MR + i] = data[base + i * rs + p]` for p < kc, i < MR: MR rows of a
/// row-major operand interleaved column by column.
#[inline(always)]
fn pack_a_rows<T: Copy, const MR: usize>(
    data: &[T],
    base: usize,
    rs: usize,
    kc: usize,
    panel: &mut [T],
) {
    let rows: [&[T]; MR] = std::array::from_fn(|i| &data[base + i * rs..base + i * rs + kc]);
    for (p, dst) in panel[..kc * MR].chunks_exact_mut(MR).enumerate() {
        let dst: &mut [T; MR] = dst.try_into().unwrap();
        for i in 0..MR {
            dst[i] = rows[i][p];
        }
    }
}

/// One panel of [`pack_a`] in general: `h` of `mr` rows from `base` through any strides,
/// the rest zero. Column by column, so the panel is written in order (writing it row by row,
/// MR apart, cost as much as the product itself for im2col's long, thin operands).
fn pack_a_panel<T: Elem>(
    a: Strided<T>,
    base: usize,
    h: usize,
    kc: usize,
    mr: usize,
    panel: &mut [T],
) {
    for (p, dst) in panel.chunks_exact_mut(mr).take(kc).enumerate() {
        let col = base + p * a.cs;
        if a.rs == 1 {
            // A transposed operand: the MR values lie together.
            dst[..h].copy_from_slice(&a.data[col..col + h]);
        } else {
            let src = &a.data[col..col + (h - 1) * a.rs + 1];
            for (i, d) in dst[..h].iter_mut().enumerate() {
                *d = src[i * a.rs];
            }
        }
        dst[h..].fill(T::default());
    }
}

/// A matrix operand read through strides: element `(r, c)` is `data[r * rs + c * cs]`. A
/// row-major matrix has `cs == 1`; its transpose (a `.t()` view) has `rs == 1`.
#[derive(Clone, Copy)]
pub(crate) struct Strided<'a, T> {
    pub data: &'a [T],
    pub rs: usize,
    pub cs: usize,
}

/// Products too small to pack. C is computed in 4 x 16 tiles held in registers while p runs
/// over k (the compiler vectorises the tile, 8 wide in `small_avx2`), so each C value is
/// written once; leftover rows and columns take plain loops. Every C value sums over p in
/// order, as the packed path does.
#[inline(always)]
fn small<T: Elem>(a: &[T], b: &[T], c: &mut [T], m: usize, k: usize, n: usize) {
    const R: usize = 4;
    const W: usize = 16;
    let mut i = 0;
    while i + R <= m {
        let mut j = 0;
        while j + W <= n {
            let mut acc = [[T::default(); W]; R];
            for p in 0..k {
                let bp: &[T; W] = b[p * n + j..p * n + j + W].try_into().unwrap();
                for (r, accr) in acc.iter_mut().enumerate() {
                    let av = a[(i + r) * k + p];
                    for x in 0..W {
                        accr[x] = accr[x] + av * bp[x];
                    }
                }
            }
            for (r, accr) in acc.iter().enumerate() {
                c[(i + r) * n + j..(i + r) * n + j + W].copy_from_slice(accr);
            }
            j += W;
        }
        for r in 0..R {
            for jj in j..n {
                let mut s = T::default();
                for p in 0..k {
                    s = s + a[(i + r) * k + p] * b[p * n + jj];
                }
                c[(i + r) * n + jj] = s;
            }
        }
        i += R;
    }
    for ii in i..m {
        let crow = &mut c[ii * n..(ii + 1) * n];
        for (p, brow) in b.chunks_exact(n).enumerate() {
            let aip = a[ii * k + p];
            crow.iter_mut()
                .zip(brow)
                .for_each(|(c, &b)| *c = *c + aip * b);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn small_avx2<T: Elem>(a: &[T], b: &[T], c: &mut [T], m: usize, k: usize, n: usize) {
    small(a, b, c, m, k, n)
}

/// `a` is m x k, `b` is k x n, both row-major; returns the m x n product.
pub(crate) fn matmul<T: Elem>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    matmul_strided(
        Strided {
            data: a,
            rs: k,
            cs: 1,
        },
        Strided {
            data: b,
            rs: n,
            cs: 1,
        },
        m,
        k,
        n,
    )
}

/// The register tile (rows, columns of C) of the packed product's micro-kernel for `T` on
/// this CPU: a product whose C is narrower than a tile wastes the rest of it.
pub(crate) fn tile<T: Elem>() -> (usize, usize) {
    let k = T::kernel();
    (k.mr, k.nr)
}

/// Whether [`matmul_strided`] takes these operands as they are: products big enough to pack
/// (the packing reads any strides); smaller ones want row-major operands.
pub(crate) fn packs(m: usize, k: usize, n: usize) -> bool {
    m * n * k > SMALL
}

/// Below ~32^3 multiply-adds, packing costs more than it saves.
const SMALL: usize = 32 * 32 * 32;

/// The m x n product of `a` (m x k) and `b` (k x n), each read through its strides, so a
/// transposed view is multiplied without first being copied. Row-major operands unless
/// [`packs`] holds.
pub(crate) fn matmul_strided<T: Elem>(
    a: Strided<T>,
    b: Strided<T>,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    matmul_with(T::kernel(), a, b, m, k, n)
}

/// [`matmul_strided`] with the packed product's micro-kernel given (the tests run each one
/// this CPU has).
fn matmul_with<T: Elem>(
    kern: Kernel<T>,
    a: Strided<T>,
    b: Strided<T>,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    if m == 0 || n == 0 || k == 0 {
        return vec![T::default(); m * n];
    }
    if m * n * k <= SMALL {
        debug_assert!(a.cs == 1 && a.rs == k && b.cs == 1 && b.rs == n);
        let mut c = vec![T::default(); m * n];
        let (a, b) = (a.data, b.data);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { small_avx2(a, b, &mut c, m, k, n) };
            return c;
        }
        small(a, b, &mut c, m, k, n);
        return c;
    }
    // Waking the other cores costs tens of microseconds: not worth it for small products.
    let threaded = m * n * k >= 1 << 21;
    let threads = rayon::current_num_threads().max(1);
    if threaded && threads > 1 && k >= 8 * KC && m * n <= SPLIT_K_MAX_C {
        // A small C over a long depth (a convolution's weight gradient sums over every
        // output position of the batch; a Linear layer on a wide input): row blocks would
        // be one or two, meeting once per KC block, hundreds of times. Each task instead
        // takes a slice of the depth whole, single-threaded, and the partial products are
        // added in a fixed order (the same sums whatever the timing).
        let parts = threads.min(k / (2 * KC));
        let chunk = k.div_ceil(parts).next_multiple_of(KC);
        let partials: Vec<Vec<T>> = (0..k.div_ceil(chunk))
            .into_par_iter()
            .map(|q| {
                let (p0, kq) = (q * chunk, chunk.min(k - q * chunk));
                // Element (i, p0 + p) of A and (p0 + p, j) of B, through the same strides.
                let aq = Strided {
                    data: &a.data[p0 * a.cs..],
                    ..a
                };
                let bq = Strided {
                    data: &b.data[p0 * b.rs..],
                    ..b
                };
                // SAFETY: `packed` writes every element of C (k > 0).
                unsafe { vec_filled_by(m * n, |part| packed(kern, aq, bq, m, kq, n, false, part)) }
            })
            .collect();
        let mut c = partials[0].clone();
        for part in &partials[1..] {
            for (x, &y) in c.iter_mut().zip(part) {
                *x = *x + y;
            }
        }
        return c;
    }
    // SAFETY: `packed` writes every element of C (k > 0).
    unsafe {
        vec_filled_by(m * n, |c| {
            super::cpu::advise_huge_pages_for(c);
            packed(kern, a, b, m, k, n, threaded, c)
        })
    }
}

/// Which packed operand a buffer holds: a thread packing both (the single-threaded product)
/// needs two.
#[derive(Clone, Copy)]
enum Operand {
    A = 0,
    B = 1,
}

/// Packing buffers up to this many bytes stay with their thread for the next product: a
/// 256^3 product spent a tenth of its time zeroing fresh ones and faulting their pages in.
/// Bigger ones are allocated each time (the product amortises them), so a thread keeps at most
/// 2 MiB.
const KEEP_PACK_BYTES: usize = 1 << 20;

/// Runs `f` on a buffer of `len` elements for packing `operand`. Its contents are left from
/// earlier products: the packing writes every element the micro-kernel reads.
fn with_pack_buffer<T: Elem, R>(operand: Operand, len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    if len * std::mem::size_of::<T>() > KEEP_PACK_BYTES {
        return f(&mut vec![T::default(); len]);
    }
    // Taken out of its cell, not borrowed: a thread that waits inside `f` (rayon) may run
    // another product's task, which then finds the cell empty and allocates its own.
    let mut buf = T::pack_buffers().with(|b| b[operand as usize].take());
    if buf.len() < len {
        buf.resize(len, T::default());
    }
    let r = f(&mut buf[..len]);
    T::pack_buffers().with(|b| b[operand as usize].set(buf));
    r
}

/// The largest C (elements) [`matmul_with`] splits over the depth: each core then holds a
/// partial C of its own.
const SPLIT_K_MAX_C: usize = 1 << 16;

/// The packed product of `a` (m x k) and `b` (k x n) into `c` (m x n, row-major), on the
/// cores when `threaded`. Any strides; any size with k > 0 (the caller picks the small
/// path). Every element of `c` is written (the first depth block stores, the later ones
/// add), so `c` need not be initialised.
///
/// On several cores, C is cut into a grid of one tile per core ([`grid`]), each a whole
/// product of its own: its task packs its rows of A and its columns of B. That is one
/// fork-join per product; sharing one packed B between the cores instead meets twice per
/// depth block (B's packing, then the row blocks), which cost a 128^3 product a third of its
/// time on 2 cores. Every element's sum runs over the same depth blocks in the same order
/// whatever the grid, so the result does not depend on the number of cores.
fn packed<T: Elem>(
    kern: Kernel<T>,
    a: Strided<T>,
    b: Strided<T>,
    m: usize,
    k: usize,
    n: usize,
    threaded: bool,
    c: &mut [MaybeUninit<T>],
) {
    assert_eq!(c.len(), m * n, "C holds m x n elements");
    let out = COut {
        ptr: c.as_mut_ptr().cast::<T>(),
        len: c.len(),
        ldc: n,
    };
    let threads = if threaded {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    let (rows, cols) = grid(m, n, threads, kern.mr, kern.nr);
    let (tr, tc) = (m.div_ceil(rows), n.div_ceil(cols));
    let tile = |t: usize| {
        let (i0, j0) = ((t / tc) * rows, (t % tc) * cols);
        // Row i0 of A (element (i0 + i, p) through the same strides) and of C.
        let at = Strided {
            data: &a.data[i0 * a.rs..],
            ..a
        };
        // SAFETY: row i0 < m lies in C; `at` and `c_rows` describe the same rows.
        let c_rows = COut {
            ptr: unsafe { out.row(i0) },
            len: out.len - i0 * n,
            ldc: n,
        };
        // SAFETY: the tasks' tiles are disjoint: rows i0.. of the tile's height, columns
        // j0.. of its width, inside C.
        unsafe {
            packed_columns(
                kern,
                at,
                b,
                rows.min(m - i0),
                k,
                j0,
                cols.min(n - j0),
                c_rows,
            )
        }
    };
    if tr * tc > 1 {
        (0..tr * tc).into_par_iter().for_each(tile);
    } else {
        tile(0);
    }
}

/// The tile of C each core computes in [`packed`] (rows, columns; multiples of the register
/// tile, `mr` x `nr`), for `threads` cores: the grid of at most `threads` tiles with the least
/// work per tile. A tile's work is its multiply-adds plus its packing, which the grid repeats:
/// every tile packs its rows of A (A is packed once per column of tiles) and its columns of B
/// (once per row of tiles). Per unit of depth, a tile of `r` x `c` costs `r * c + A_PACK * r +
/// B_PACK * c`, the constants measured on one core: a 1024-deep product ran at 75 % of its
/// full speed 64 columns wide (A packed for little work) and at 55 % 64 rows tall (B packed
/// for little work); 512 x 128 tiles at 89 %. So a wide machine cuts both ways: on 16 cores
/// a 1024^2 product is 2 x 8 tiles of 512 x 128, not 16 slabs of 64 columns.
fn grid(m: usize, n: usize, threads: usize, mr: usize, nr: usize) -> (usize, usize) {
    const A_PACK: usize = 22;
    const B_PACK: usize = 48;
    let mut best = (m, n);
    let mut best_cost = usize::MAX;
    for tc in 1..=threads.min(n.div_ceil(nr)) {
        let tr = (threads / tc).min(m.div_ceil(mr));
        let r = m.div_ceil(tr).next_multiple_of(mr);
        let c = n.div_ceil(tc).next_multiple_of(nr);
        let cost = r * c + A_PACK * r + B_PACK * c;
        if cost < best_cost {
            (best, best_cost) = ((r.min(m), c.min(n)), cost);
        }
    }
    best
}

/// C as the tasks of one product see it: its first element, its length and its row stride.
/// Tasks share it, each writing elements no other task writes.
#[derive(Clone, Copy)]
struct COut<T> {
    ptr: *mut T,
    len: usize,
    ldc: usize,
}

impl<T> COut<T> {
    /// Row `i`'s first element (a method, so closures capture the whole `COut`, which is
    /// `Sync`, not its raw pointer field).
    ///
    /// # Safety
    /// `i` is a row of C.
    unsafe fn row(self, i: usize) -> *mut T {
        debug_assert!(i * self.ldc <= self.len);
        // SAFETY: inside C (the caller's contract).
        unsafe { self.ptr.add(i * self.ldc) }
    }
}

// SAFETY: a `COut` is only a place to write; the functions taking one require that the tasks
// sharing it write disjoint elements (`packed_columns`, `block_product`).
unsafe impl<T: Send> Send for COut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for COut<T> {}

/// Columns `j_lo..j_lo + width` of the packed product, all `m` rows, into `c`, on this
/// thread: one tile of [`packed`]'s grid.
///
/// # Safety
/// `c` must point to m x `c.ldc` writable elements (`c.len`), of which these columns of
/// every row are written by this call alone while it runs.
unsafe fn packed_columns<T: Elem>(
    kern: Kernel<T>,
    a: Strided<T>,
    b: Strided<T>,
    m: usize,
    k: usize,
    j_lo: usize,
    width: usize,
    c: COut<T>,
) {
    assert!(m * c.ldc <= c.len && j_lo + width <= c.ldc);
    let (mr, nr) = (kern.mr, kern.nr);
    // The depth in equal blocks of at most KC: 288 as 144 + 144, not 256 + 32 (a 32-deep
    // block loads and stores every C tile for a tenth of the work of a full one).
    let kcb = k.div_ceil(k.div_ceil(KC));
    // Sized for this product, not the largest block: zeroing a 4 MiB buffer would cost more
    // than a whole 256 x 256 multiply.
    let b_len = kcb * NC.min(width).div_ceil(nr) * nr;
    with_pack_buffer(Operand::B, b_len, |bpack| {
        for jc in (j_lo..j_lo + width).step_by(NC) {
            let nc = NC.min(j_lo + width - jc);
            for pc in (0..k).step_by(kcb) {
                let kc = kcb.min(k - pc);
                let bp = &mut bpack[..kc * nc.div_ceil(nr) * nr];
                pack_b(b, pc, kc, jc, nc, nr, bp);
                let bp = &*bp;
                for ic in (0..m).step_by(MC) {
                    let mc = MC.min(m - ic);
                    with_pack_buffer(Operand::A, mc.div_ceil(mr) * mr * kc, |apack| {
                        pack_a(a, ic, mc, pc, kc, mr, apack);
                        let tile = Tile {
                            kc,
                            jc,
                            nc,
                            ldc: c.ldc,
                        };
                        // SAFETY: rows ic..ic + mc of columns jc..jc + nc lie in C (asserted
                        // above) and are this call's alone (the caller's contract); the first
                        // depth block (pc == 0) wrote them.
                        unsafe { block_product(kern, apack, bp, c.row(ic), mc, tile, pc > 0) }
                    })
                }
            }
        }
    })
}

/// Where a block product lies: depth `kc`, columns `jc..jc + nc` of C, whose rows are `ldc`
/// apart.
#[derive(Clone, Copy)]
struct Tile {
    kc: usize,
    jc: usize,
    nc: usize,
    ldc: usize,
}

/// The `mc` rows of C from `c` (its row 0 of the block, column 0), columns `t.jc..t.jc +
/// t.nc`, `(+)=` the packed A block (`mc` rows) times the packed B block, one micro-kernel
/// call per register tile; tiles cut by the block's edge go through a scratch tile.
///
/// # Safety
/// Those elements (`c.add(i * t.ldc + j)`) must be writable and written by no one else
/// while this runs; with `accumulate`, initialised (they are read).
unsafe fn block_product<T: Elem>(
    kern: Kernel<T>,
    apack: &[T],
    bpack: &[T],
    c: *mut T,
    mc: usize,
    t: Tile,
    accumulate: bool,
) {
    let (mr, nr, kc, n) = (kern.mr, kern.nr, t.kc, t.ldc);
    assert!(apack.len() >= mc.div_ceil(mr) * mr * kc && bpack.len() >= t.nc.div_ceil(nr) * nr * kc);
    let mut edge = vec![T::default(); mr * nr];
    for jp in 0..t.nc.div_ceil(nr) {
        let j0 = t.jc + jp * nr;
        let w = nr.min(t.jc + t.nc - j0);
        let bpanel = bpack[jp * kc * nr..].as_ptr();
        for ip in 0..mc.div_ceil(mr) {
            let i0 = ip * mr;
            let h = mr.min(mc - i0);
            let apanel = apack[ip * kc * mr..].as_ptr();
            // SAFETY: rows i0..i0 + h and columns j0..j0 + w are inside the block.
            let tile = unsafe { c.add(i0 * n + j0) };
            if h == mr && w == nr {
                // SAFETY: the panels hold kc * mr and kc * nr elements (asserted above); the
                // tile is writable and this call's (the caller's contract), and it is read
                // only when `accumulate`, which the caller vouches for.
                unsafe { (kern.f)(kc, apanel, bpanel, tile, n, accumulate) };
            } else {
                // SAFETY: as above, with the scratch tile (mr x nr, row stride nr) as C.
                unsafe { (kern.f)(kc, apanel, bpanel, edge.as_mut_ptr(), nr, false) };
                for i in 0..h {
                    for (j, &e) in edge[i * nr..i * nr + w].iter().enumerate() {
                        // SAFETY: inside the tile's h x w part of the block; initialised
                        // when `accumulate` (the caller's contract).
                        unsafe {
                            let x = tile.add(i * n + j);
                            x.write(if accumulate { x.read() + e } else { e });
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    /// Irregular `m x k` and `k x n` operands in [-1, 1], row-major.
    fn operands(m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
        let a = (0..m * k).map(|i| ((i * 37 % 101) as f64 - 50.0) / 50.0);
        let b = (0..k * n).map(|i| ((i * 53 % 97) as f64 - 48.0) / 48.0);
        (a.collect(), b.collect())
    }

    fn transpose<T: Copy>(x: &[T], r: usize, c: usize) -> Vec<T> {
        (0..c)
            .flat_map(|j| (0..r).map(move |i| (i, j)))
            .map(|(i, j)| x[i * c + j])
            .collect()
    }

    /// The vector-transposing panel pack writes what the element-by-element rule says, for
    /// depths below, at and past a block of eight, and panels 8 and 16 wide; where it does not
    /// apply (no AVX, a width not a multiple of 8, a source too short) it writes nothing.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn transposed_panels_pack_as_element_by_element() {
        for (kc, nr, cs) in [
            (3, 16, 40),
            (8, 16, 8),
            (29, 16, 37),
            (64, 8, 100),
            (150, 16, 151),
        ] {
            let src: Vec<f32> = (0..(nr - 1) * cs + kc)
                .map(|i| i as f32 * 0.5 - 7.0)
                .collect();
            let mut panel = vec![f32::NAN; kc * nr];
            if !f32::pack_transposed(&src, cs, kc, nr, &mut panel) {
                assert!(
                    !std::arch::is_x86_feature_detected!("avx"),
                    "refused {kc} {nr} {cs}"
                );
                println!("skipped: this CPU has no AVX");
                return;
            }
            for p in 0..kc {
                for j in 0..nr {
                    assert_eq!(
                        panel[p * nr + j],
                        src[j * cs + p],
                        "kc {kc} nr {nr} ({p}, {j})"
                    );
                }
            }
        }
        let mut panel = vec![1.0f32; 64];
        let short = vec![0.0f32; 10];
        assert!(!f32::pack_transposed(&short, 8, 4, 16, &mut panel));
        assert!(!f32::pack_transposed(&vec![0.0; 200], 8, 4, 12, &mut panel));
        assert!(panel.iter().all(|&v| v == 1.0));
        assert!(!f64::pack_transposed(&[0.0; 200], 8, 4, 16, &mut [0.0; 64]));
    }

    /// Every micro-kernel this CPU can run (AVX-512, AVX2+FMA, the portable one: only the best
    /// is used, so the others are checked here), f32 and f64, on sizes with edge tiles in
    /// both directions and more than one KC block.
    #[test]
    fn every_micro_kernel_this_cpu_has_gives_the_product() {
        fn run<T: Elem + Into<f64>>(from: fn(f64) -> T, tol: f64) -> usize {
            let (m, k, n) = (37, 300, 45);
            let (a, b) = operands(m, k, n);
            let want = naive(&a, &b, m, k, n);
            let (at, bt): (Vec<T>, Vec<T>) = (
                a.iter().map(|&v| from(v)).collect(),
                b.iter().map(|&v| from(v)).collect(),
            );
            let kernels = T::kernels();
            for kern in &kernels {
                let got = matmul_with(
                    *kern,
                    Strided {
                        data: &at[..],
                        rs: k,
                        cs: 1,
                    },
                    Strided {
                        data: &bt[..],
                        rs: n,
                        cs: 1,
                    },
                    m,
                    k,
                    n,
                );
                for (i, (g, w)) in got.into_iter().zip(&want).enumerate() {
                    let g: f64 = g.into();
                    assert!(
                        (g - w).abs() <= tol * (1.0 + w.abs()),
                        "{}x{} kernel [{i}]: {g} vs {w}",
                        kern.mr,
                        kern.nr
                    );
                }
            }
            kernels.len()
        }
        let n32 = run::<f32>(|v| v as f32, 1e-4);
        let n64 = run::<f64>(|v| v, 1e-12);
        println!("checked {n32} f32 and {n64} f64 micro-kernels");
        assert_eq!(n32, n64);
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            assert!(
                n32 >= 2,
                "an AVX2 CPU has a SIMD kernel besides the portable one"
            );
        }
    }

    /// Packing buffers are kept by their thread between products, stale: poisoned with NaN
    /// first, every product must still come out right: the packing writes every element
    /// whose product reaches C (edge panels, a second depth block, a narrow last panel).
    #[test]
    fn kept_packing_buffers_are_written_before_they_are_read() {
        for kern in f32::kernels() {
            for &(m, k, n) in &[(37, 300, 45), (6, 64, 100), (150, 513, 33), (64, 40, 16)] {
                for operand in [Operand::A, Operand::B] {
                    let len = KEEP_PACK_BYTES / std::mem::size_of::<f32>();
                    with_pack_buffer::<f32, _>(operand, len, |b| b.fill(f32::NAN));
                }
                let (a, b) = operands(m, k, n);
                let want = naive(&a, &b, m, k, n);
                let (a32, b32): (Vec<f32>, Vec<f32>) = (
                    a.iter().map(|&v| v as f32).collect(),
                    b.iter().map(|&v| v as f32).collect(),
                );
                let strided = |data, rs| Strided { data, rs, cs: 1 };
                let got = matmul_with(kern, strided(&a32, k), strided(&b32, n), m, k, n);
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                        "{}x{} kernel, {m}x{k}x{n} [{i}]: {g} vs {w}",
                        kern.mr,
                        kern.nr
                    );
                }
            }
        }
    }

    /// The grid of tiles: never more tiles than cores, the whole product on one core, and
    /// both directions cut where that packs least (the shapes of [`grid`]'s doc).
    #[test]
    fn the_grid_cuts_c_where_packing_costs_least() {
        let tiles = |m: usize, n: usize, t: usize| {
            let (r, c) = grid(m, n, t, 6, 16);
            (m.div_ceil(r), n.div_ceil(c))
        };
        assert_eq!(tiles(1024, 1024, 1), (1, 1));
        assert_eq!(
            tiles(1024, 1024, 2),
            (1, 2),
            "square on 2 cores: column slabs"
        );
        assert_eq!(
            tiles(1024, 1024, 16),
            (2, 8),
            "square on 16 cores: 512 x 128 tiles"
        );
        assert_eq!(
            tiles(50176, 32, 2),
            (2, 1),
            "a convolution's tall C: row halves"
        );
        assert_eq!(tiles(50176, 32, 16), (16, 1));
        assert_eq!(
            tiles(6, 4096, 8),
            (1, 8),
            "one register tile tall: columns only"
        );
        for (m, n) in [(1, 1), (7, 5), (100, 3000), (3000, 100), (2048, 2048)] {
            for t in [1, 2, 3, 5, 16, 64] {
                let (tr, tc) = tiles(m, n, t);
                assert!(
                    tr * tc <= t && tr >= 1 && tc >= 1,
                    "{m}x{n} on {t}: {tr}x{tc}"
                );
            }
        }
    }

    /// The same product on 1, 2, 3 and 5 cores is the same bits: the grid changes which core
    /// computes an element, not the order of its sum.
    #[test]
    fn the_result_does_not_depend_on_the_number_of_cores() {
        for &(m, k, n) in &[
            (300, 200, 170),
            (1000, 70, 40),
            (40, 300, 900),
            (130, 600, 130),
        ] {
            let (a, b) = operands(m, k, n);
            let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    fn s<T>(data: &[T], rs: usize) -> Strided<'_, T> {
                        Strided { data, rs, cs: 1 }
                    }
                    (
                        matmul_strided(s(&a, k), s(&b, n), m, k, n),
                        matmul_strided(s(&a32, k), s(&b32, n), m, k, n),
                    )
                })
            };
            let (one64, one32) = run(1);
            for threads in [2, 3, 5] {
                let (c64, c32) = run(threads);
                assert!(
                    c64.iter()
                        .zip(&one64)
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "f64 {m}x{k}x{n} on {threads} cores differs from one core"
                );
                assert!(
                    c32.iter()
                        .zip(&one32)
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "f32 {m}x{k}x{n} on {threads} cores differs from one core"
                );
            }
        }
    }

    /// Transposed operands read through their strides give the product of the matrices
    /// they stand for, f32 and f64, with sizes off every blocking multiple (edge tiles, more
    /// than one KC block, threaded and not).
    #[test]
    fn strided_operands_multiply_as_their_contiguous_copies() {
        // On a machine of 2 or more cores: the third and the last are cut into a grid of tiles
        // (the last into tiles wider than NC), the two before it split over the depth.
        for &(m, k, n) in &[
            (33, 45, 70),
            (130, 300, 17),
            (200, 520, 150),
            (7, 1000, 33),
            (9, 3000, 80),
            (20, 2600, 41),
            (8, 40, 9000),
        ] {
            let (a, b) = operands(m, k, n);
            let want = naive(&a, &b, m, k, n);
            // a^T stored k x m, b^T stored n x k: the views `.t()` of those.
            let (at, bt) = (transpose(&a, m, k), transpose(&b, k, n));
            for (sa, sb) in [(false, false), (false, true), (true, false), (true, true)] {
                let ao = if sa {
                    Strided {
                        data: &at[..],
                        rs: 1,
                        cs: m,
                    }
                } else {
                    Strided {
                        data: &a[..],
                        rs: k,
                        cs: 1,
                    }
                };
                let bo = if sb {
                    Strided {
                        data: &bt[..],
                        rs: 1,
                        cs: k,
                    }
                } else {
                    Strided {
                        data: &b[..],
                        rs: n,
                        cs: 1,
                    }
                };
                let got = matmul_strided(ao, bo, m, k, n);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() < 1e-9 * (1.0 + w.abs()),
                        "{m}x{k}x{n} {sa} {sb} [{i}]: {g} vs {w}"
                    );
                }
                let a32: Vec<f32> = ao.data.iter().map(|&v| v as f32).collect();
                let b32: Vec<f32> = bo.data.iter().map(|&v| v as f32).collect();
                let got = matmul_strided(
                    Strided {
                        data: &a32[..],
                        rs: ao.rs,
                        cs: ao.cs,
                    },
                    Strided {
                        data: &b32[..],
                        rs: bo.rs,
                        cs: bo.cs,
                    },
                    m,
                    k,
                    n,
                );
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        ((*g as f64) - w).abs() < 1e-4 * (k as f64).sqrt() * (1.0 + w.abs()),
                        "f32 {m}x{k}x{n} {sa} {sb} [{i}]: {g} vs {w}"
                    );
                }
            }
        }
    }
}
