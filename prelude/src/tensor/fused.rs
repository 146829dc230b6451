//! Fused optimiser updates on the CPU: one pass over a parameter, its gradient and the
//! optimiser's state instead of a dozen tensor ops, each of which would allocate (and fault
//! in) a parameter-sized buffer. Article 01's dense network has 11 M parameters: Adam as
//! separate ops took about 1 s a step on 2 cores, fused it is a few tens of milliseconds.
//!
//! The state tensors (Adam's moments) belong to the optimiser alone and are updated in
//! place. So is the parameter when nothing else holds its storage; otherwise it gets a fresh
//! buffer: the autograd graph of the last forward pass, or a clone the user kept, may share
//! it, and tensors here are values unless written through an in-place method. Anything else
//! (CUDA, half types, shared state) returns `None` and the optimiser falls back to its
//! tensor-op path.

use super::cpu::vec_filled_by;
use super::cpu_backend::CpuStorage;
use super::dtype::WithDType;
use super::matmul::{self, Elem, Strided};
use super::storage::Storage;
use super::Tensor;
use crate::autograd;
use crate::device::Device;
use crate::error::Result;
use rayon::prelude::*;
use std::mem::MaybeUninit;
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

/// The parameter an Adam step reads and where its new value goes: a fresh buffer, or the
/// parameter's own storage when nothing else holds it.
enum AdamTarget<'a, T: ?Sized> {
    Fresh(&'a T),
    InPlace(&'a mut T),
}

/// The element types the fused step runs on (f32, f64); their slices in a storage come from
/// [`WithDType`].
trait AdamElem: WithDType {
    /// One Adam step over every element; returns the new parameter when `w` is `Fresh`
    /// (an empty vector when it was updated in place).
    fn adam(
        w: AdamTarget<[Self]>,
        g: &[Self],
        m: &mut [Self],
        v: &mut [Self],
        c: AdamCoeffs,
    ) -> Vec<Self>;
}

/// The step on the storages, when all four hold `T` on the CPU: the new parameter's storage
/// (`Fresh`) or `None` for an in-place update; `Err(())` when a storage is not `T`'s, before
/// anything is written.
fn adam_on<T: AdamElem>(
    w: AdamTarget<Storage>,
    g: &Storage,
    m: &mut Storage,
    v: &mut Storage,
    c: AdamCoeffs,
) -> std::result::Result<Option<CpuStorage>, ()> {
    fn slice<T: WithDType>(s: &Storage) -> std::result::Result<&[T], ()> {
        match s {
            Storage::Cpu(s) => T::cpu_slice(s).ok_or(()),
            _ => Err(()),
        }
    }
    fn slice_mut<T: WithDType>(s: &mut Storage) -> std::result::Result<&mut [T], ()> {
        match s {
            Storage::Cpu(s) => T::cpu_slice_mut(s).ok_or(()),
            _ => Err(()),
        }
    }
    let fresh = matches!(w, AdamTarget::Fresh(_));
    let w = match w {
        AdamTarget::Fresh(w) => AdamTarget::Fresh(slice(w)?),
        AdamTarget::InPlace(w) => AdamTarget::InPlace(slice_mut(w)?),
    };
    let (g, m, v) = (slice(g)?, slice_mut(m)?, slice_mut(v)?);
    let out = T::adam(w, g, m, v, c);
    Ok(fresh.then(|| T::into_cpu(out)))
}

macro_rules! adam_elem {
    ($t:ty) => {
        impl AdamElem for $t {
            fn adam(
                w: AdamTarget<[$t]>,
                g: &[$t],
                m: &mut [$t],
                v: &mut [$t],
                c: AdamCoeffs,
            ) -> Vec<$t> {
                let (b1, b2) = (c.beta1 as $t, c.beta2 as $t);
                let (lr, isb, eps, wd) = (
                    c.lr_bc1 as $t,
                    c.inv_sqrt_bc2 as $t,
                    c.eps as $t,
                    c.weight_decay as $t,
                );
                // One element: (new m, new v, new w). A function forced inline: as a closure
                // called from both loops below it was not inlined, and the per-element call kept
                // the loops scalar. Inlined, both loops vectorise: the cat-vs-dog CNN's Adam step
                // went from 10-14 ms (the loop before this one) to 4-5 ms, in place or fresh.
                #[inline(always)]
                fn step(w: $t, g: $t, m: $t, v: $t, k: [$t; 6]) -> ($t, $t, $t) {
                    let [b1, b2, lr, isb, eps, wd] = k;
                    let g = if wd != 0.0 { g + wd * w } else { g };
                    let m = b1 * m + (1.0 - b1) * g;
                    let v = b2 * v + (1.0 - b2) * g * g;
                    (m, v, w - lr * (m / (v.sqrt() * isb + eps)))
                }
                let k = [b1, b2, lr, isb, eps, wd];
                let state = g
                    .par_chunks(CHUNK)
                    .zip(m.par_chunks_mut(CHUNK))
                    .zip(v.par_chunks_mut(CHUNK));
                match w {
                    AdamTarget::InPlace(w) => {
                        w.par_chunks_mut(CHUNK)
                            .zip(state)
                            .for_each(|(w, ((g, m), v))| {
                                for i in 0..w.len() {
                                    (m[i], v[i], w[i]) = step(w[i], g[i], m[i], v[i], k);
                                }
                            });
                        Vec::new()
                    }
                    // SAFETY: the chunks cover the output, and each element of each is written.
                    AdamTarget::Fresh(w) => unsafe {
                        vec_filled_by(w.len(), |out| {
                            out.par_chunks_mut(CHUNK)
                                .zip(w.par_chunks(CHUNK))
                                .zip(state)
                                .for_each(|((o, w), ((g, m), v))| {
                                    for i in 0..o.len() {
                                        let (mi, vi, wi) = step(w[i], g[i], m[i], v[i], k);
                                        (m[i], v[i]) = (mi, vi);
                                        o[i].write(wi);
                                    }
                                })
                        })
                    },
                }
            }
        }
    };
}
adam_elem!(f32);
adam_elem!(f64);

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
    /// when the fused CPU path does not apply. `holders` is how many handles on the
    /// parameter's storage the caller accounts for (the parameter's own slot and the copy it
    /// passed): with no other (no view, no clone a user kept, no autograd graph that still
    /// saves it), the new value is written over the old in place, a new version of the
    /// storage, and the parameter is returned; otherwise into a fresh buffer, so the others
    /// keep their values. In place spares allocating the parameter anew every step: from
    /// 32 MiB on (the dense network's first layer, 40 MB) malloc maps a fresh buffer anew
    /// and every page of it faults in.
    pub(crate) fn fused_adam_cpu(
        &self,
        g: &Tensor,
        m: &Tensor,
        v: &Tensor,
        c: AdamCoeffs,
        holders: usize,
    ) -> Result<Option<Tensor>> {
        let all = [self, g, m, v];
        if all.iter().any(|t| t.device() != Device::Cpu || t.dtype() != self.dtype())
            || !matches!(self.dtype(), super::DType::F32 | super::DType::F64)
            || all.iter().any(|t| t.shape() != self.shape())
            // The state must be the optimiser's alone: written in place.
            || [m, v]
                .iter()
                .any(|t| !t.is_dense() || Arc::strong_count(&t.storage) != 1)
            || Arc::ptr_eq(&m.storage, &v.storage)
            || [g, m, v].iter().any(|t| Arc::ptr_eq(&t.storage, &self.storage))
        {
            return Ok(None);
        }
        super::cpu::keep_freed_memory();
        let in_place = self.is_dense() && Arc::strong_count(&self.storage) <= holders;
        let g = g.dense()?;
        let gr = g.read();
        let (mut mw, mut vw) = (m.write(), v.write());
        // The parameter under a write lock when it is updated in place, else a read lock on
        // its dense values; either way one call per dtype below.
        let (mut ww, wd, wr);
        let target = if in_place {
            ww = self.write();
            AdamTarget::InPlace(&mut *ww)
        } else {
            wd = self.dense()?;
            wr = wd.read();
            AdamTarget::Fresh(&*wr)
        };
        let out = match self.dtype() {
            super::DType::F32 => adam_on::<f32>(target, &gr, &mut mw, &mut vw, c),
            super::DType::F64 => adam_on::<f64>(target, &gr, &mut mw, &mut vw, c),
            _ => Err(()),
        };
        Ok(match out {
            Ok(Some(fresh)) => Some(Tensor::from_storage(
                Storage::Cpu(fresh),
                self.shape().to_vec(),
            )),
            Ok(None) => Some(self.clone()),
            // Unreachable: the dtypes were checked above, and nothing was written.
            Err(()) => None,
        })
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
        super::cpu::keep_freed_memory();
        fn run<T: Copy + Default + PartialOrd + Send + Sync>(g: &[T], x: &[T]) -> Vec<T> {
            let zero = T::default();
            g.par_iter()
                .with_min_len(CHUNK)
                .zip(x.par_iter())
                // Cleared where x <= 0, so a NaN passes the gradient, as torch's.
                .map(|(&g, &x)| if x <= zero { zero } else { g })
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

/// The shape of one 2-D convolution: input `[n, c, h, w]`, weight `[o, c, kh, kw]`, output
/// `[n, o, oh, ow]`; per axis a stride (`sh`, `sw`), the zero padding before the first row and
/// column (`ph`, `pw`; the padding after only shows in `oh`, `ow`, which the caller computed)
/// and a dilation (`dh`, `dw`: kernel tap `(i, j)` reads input row `y*sh + i*dh - ph`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvGeom {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub o: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
}

impl ConvGeom {
    /// Rows of one image's unfolded input (`c * kh * kw`).
    fn ckk(&self) -> usize {
        self.c * self.kh * self.kw
    }
    /// Output positions per image (`oh * ow`).
    fn p(&self) -> usize {
        self.oh * self.ow
    }
    fn chw(&self) -> usize {
        self.c * self.h * self.w
    }
    /// For kernel column `j`, the output columns `lo..hi` whose input column is inside the
    /// image (the others read padding).
    fn cols_inside(&self, j: usize) -> (usize, usize) {
        let (s, p, tap) = (self.sw, self.pw, j * self.dw);
        // xo * s + tap >= p  and  xo * s + tap < w + p
        let lo = p.saturating_sub(tap).div_ceil(s);
        let hi = if self.w + p > tap {
            (self.w + p - tap).div_ceil(s).min(self.ow)
        } else {
            0
        };
        (lo.min(hi), hi)
    }
    /// The input row under kernel row `i` at output row `y`, if it is inside the image.
    fn row_inside(&self, y: usize, i: usize) -> Option<usize> {
        (y * self.sh + i * self.dh)
            .checked_sub(self.ph)
            .filter(|&iy| iy < self.h)
    }
}

/// Row `r = (ch, i, j)` of the batch's unfolded input `[c*kh*kw, n*oh*ow]`: for every
/// image `b` and output position `(y, xo)`, the input under kernel tap `(i, j)` of channel
/// `ch` (zero in the padding), at column `b*oh*ow + y*ow + xo`. Laid out so that
/// `W [o, c*kh*kw] x cols` is the whole batch's output in one product.
fn im2col_row<T: Copy + Default>(x: &[T], g: &ConvGeom, r: usize, row: &mut [MaybeUninit<T>]) {
    let (p, s) = (g.p(), g.sw);
    let (ch, i, j) = (r / (g.kh * g.kw), r / g.kw % g.kh, r % g.kw);
    let (lo, hi) = g.cols_inside(j);
    let zero = |d: &mut [MaybeUninit<T>]| d.iter_mut().for_each(|d| _ = d.write(T::default()));
    for (b, dimg) in row.chunks_mut(p).enumerate() {
        let plane = &x[b * g.chw() + ch * g.h * g.w..][..g.h * g.w];
        // Every element of each output row is written: zeros where the tap falls in the
        // padding, the input elsewhere (the caller relies on it, `vec_filled_by`).
        for y in 0..g.oh {
            let dst = &mut dimg[y * g.ow..(y + 1) * g.ow];
            let iy = match g.row_inside(y, i) {
                Some(iy) if lo < hi => iy,
                _ => {
                    zero(dst);
                    continue;
                }
            };
            let src = &plane[iy * g.w..][..g.w];
            zero(&mut dst[..lo]);
            zero(&mut dst[hi..]);
            let x0 = lo * s + j * g.dw - g.pw;
            if s == 1 {
                dst[lo..hi].write_copy_of_slice(&src[x0..x0 + hi - lo]);
            } else {
                for (k, d) in dst[lo..hi].iter_mut().enumerate() {
                    d.write(src[x0 + k * s]);
                }
            }
        }
    }
}

/// The adjoint of [`im2col_row`] for one image `b`: each of its entries in `cols` added into
/// the pixel of `dx` (`[c, h, w]`, zeroed by the caller) it was read from.
fn col2im<T: Copy + std::ops::AddAssign>(cols: &[T], g: &ConvGeom, b: usize, dx: &mut [T]) {
    let (p, s) = (g.p(), g.sw);
    let ld = g.n * p;
    for ch in 0..g.c {
        let plane = &mut dx[ch * g.h * g.w..(ch + 1) * g.h * g.w];
        for i in 0..g.kh {
            for j in 0..g.kw {
                let r = (ch * g.kh + i) * g.kw + j;
                let row = &cols[r * ld + b * p..][..p];
                let (lo, hi) = g.cols_inside(j);
                if lo >= hi {
                    continue;
                }
                for y in 0..g.oh {
                    let Some(iy) = g.row_inside(y, i) else {
                        continue;
                    };
                    let src = &row[y * g.ow + lo..y * g.ow + hi];
                    let dst = &mut plane[iy * g.w..][..g.w];
                    let x0 = lo * s + j * g.dw - g.pw;
                    if s == 1 {
                        for (d, &v) in dst[x0..x0 + hi - lo].iter_mut().zip(src) {
                            *d += v;
                        }
                    } else {
                        for (k, &v) in src.iter().enumerate() {
                            dst[x0 + k * s] += v;
                        }
                    }
                }
            }
        }
    }
}

/// `a x b` through strides, copying small operands to row-major first (the unpacked
/// product wants them so).
fn mm<T: Elem>(a: Strided<T>, b: Strided<T>, m: usize, k: usize, n: usize) -> Vec<T> {
    let row_major = a.cs == 1 && a.rs == k && b.cs == 1 && b.rs == n;
    if row_major || matmul::packs(m, k, n) {
        return matmul::matmul_strided(a, b, m, k, n);
    }
    let dense = |s: Strided<T>, r: usize, c: usize| -> Vec<T> {
        (0..r * c)
            .map(|i| s.data[(i / c) * s.rs + (i % c) * s.cs])
            .collect()
    };
    matmul::matmul(&dense(a, m, k), &dense(b, k, n), m, k, n)
}

/// Rows (at least one) per rayon task for `rows` rows of `len` elements: about `CHUNK`
/// elements each.
fn rows_per_task(len: usize) -> usize {
    CHUNK.div_ceil(len.max(1))
}

/// Forward: the batch unfolded (`cols [ckk, n*p]`, rows in parallel), one product
/// `Y [o, n*p] = W [o, ckk] x cols`, then `Y` moved into NCHW with the bias added in the
/// same pass. One product for the batch keeps the matrices wide even where an image has
/// few output positions (the MNIST CNN's last conv has 9). Returns the output and `cols`,
/// which the weight's gradient reads.
fn conv_forward<T: Elem>(x: &[T], wt: &[T], bias: Option<&[T]>, g: ConvGeom) -> (Vec<T>, Vec<T>) {
    let (ckk, p, o) = (g.ckk(), g.p(), g.o);
    let np = g.n * p;
    // SAFETY: im2col_row writes every element of its row, and the rows cover `cols`.
    let cols = unsafe {
        vec_filled_by(ckk * np, |cols| {
            cols.par_chunks_mut(np)
                .with_min_len(rows_per_task(np))
                .enumerate()
                .for_each(|(r, row)| im2col_row(x, &g, r, row))
        })
    };
    let y = mm(
        Strided {
            data: wt,
            rs: ckk,
            cs: 1,
        },
        Strided {
            data: &cols,
            rs: np,
            cs: 1,
        },
        o,
        ckk,
        np,
    );
    // SAFETY: every image's `o` rows of `p` are written, with or without the bias.
    let out = unsafe {
        vec_filled_by(g.n * o * p, |out| {
            out.par_chunks_mut(o * p)
                .with_min_len(rows_per_task(o * p))
                .enumerate()
                .for_each(|(b, ob)| {
                    for (oc, orow) in ob.chunks_mut(p).enumerate() {
                        let yrow = &y[oc * np + b * p..][..p];
                        match bias {
                            Some(bias) => {
                                let bv = bias[oc];
                                orow.iter_mut()
                                    .zip(yrow)
                                    .for_each(|(d, &v)| _ = d.write(v + bv));
                            }
                            None => _ = orow.write_copy_of_slice(yrow),
                        }
                    }
                })
        })
    };
    (out, cols)
}

/// The gradients the caller asks for, from `g` `[n, o, p]` moved to `G [o, n*p]`: of the
/// weight (`G x colsᵀ`, one product), of the input (`Wᵀ x G`, folded back with col2im per
/// image in parallel) and of the bias (`G`'s row sums).
#[allow(clippy::type_complexity)]
fn conv_backward<T: Elem + std::ops::AddAssign>(
    gout: &[T],
    wt: &[T],
    cols: &[T],
    g: ConvGeom,
    need: [bool; 3],
) -> (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>) {
    let (ckk, p, o) = (g.ckk(), g.p(), g.o);
    let np = g.n * p;
    // SAFETY: each of the `o` rows is `n` images' `p` values, every one copied.
    let gm = unsafe {
        vec_filled_by(o * np, |gm| {
            gm.par_chunks_mut(np)
                .with_min_len(rows_per_task(np))
                .enumerate()
                .for_each(|(oc, row)| {
                    for (b, d) in row.chunks_mut(p).enumerate() {
                        d.write_copy_of_slice(&gout[(b * o + oc) * p..][..p]);
                    }
                })
        })
    };
    let gs = Strided {
        data: &gm,
        rs: np,
        cs: 1,
    };
    let dx = need[0].then(|| {
        let wtt = Strided {
            data: wt,
            rs: 1,
            cs: ckk,
        };
        let dcols = mm(wtt, gs, ckk, o, np);
        let mut dx = vec![T::default(); g.n * g.chw()];
        dx.par_chunks_mut(g.chw())
            .enumerate()
            .for_each(|(b, dxb)| col2im(&dcols, &g, b, dxb));
        dx
    });
    let dw = need[1].then(|| {
        // `G x colsᵀ` is `o x ckk`; the first layer has ckk = 9 (one channel, 3x3), a third
        // of a 32-wide register tile. Computed as `(cols x Gᵀ)ᵀ` when that shape fills the
        // tiles better (then transposed, `o * ckk` elements).
        let (mr, nr) = matmul::tile::<T>();
        let fill = |m: usize, n: usize| {
            (m as f64 / m.next_multiple_of(mr) as f64) * (n as f64 / n.next_multiple_of(nr) as f64)
        };
        if fill(ckk, o) > fill(o, ckk) {
            let c = Strided {
                data: cols,
                rs: np,
                cs: 1,
            };
            let gt = Strided {
                data: &gm,
                rs: 1,
                cs: np,
            };
            let dwt = mm(c, gt, ckk, np, o);
            let mut dw = vec![T::default(); o * ckk];
            for (r, row) in dwt.chunks(o).enumerate() {
                for (oc, &v) in row.iter().enumerate() {
                    dw[oc * ckk + r] = v;
                }
            }
            dw
        } else {
            let colst = Strided {
                data: cols,
                rs: 1,
                cs: np,
            };
            mm(gs, colst, o, np, ckk)
        }
    });
    let db = need[2].then(|| {
        gm.chunks(np)
            .map(|row| {
                let mut s = T::default();
                for &v in row {
                    s += v;
                }
                s
            })
            .collect()
    });
    (dx, dw, db)
}

impl Tensor {
    /// `conv2d` on the CPU as one product for the whole batch (see [`conv_forward`] and
    /// [`conv_backward`]): the layout changes around it are single passes fused with the
    /// bias (forward) or feeding both gradient products (backward), and col2im runs per
    /// image in parallel. `None` (nothing done) off the
    /// CPU, for dtypes other than f32/f64, or for mixed dtypes; the caller then takes the
    /// composed path (gather + matmul), which CUDA always runs. The caller has checked the
    /// shapes (`g`).
    pub(crate) fn conv2d_cpu(
        x: &Tensor,
        weight: &Tensor,
        bias: Option<&Tensor>,
        g: ConvGeom,
    ) -> Result<Option<Tensor>> {
        let mut all = vec![x, weight];
        all.extend(bias);
        if all
            .iter()
            .any(|t| t.device() != Device::Cpu || t.dtype() != x.dtype())
            || bias.is_some_and(|b| b.shape() != [g.o])
            || !matches!(x.dtype(), super::DType::F32 | super::DType::F64)
            // Empty tensors (an empty input padded to a non-empty output too): nothing to
            // parallelise over, and no zero-sized chunks.
            || g.n * g.o * g.p() * g.ckk() * g.chw() == 0
        {
            return Ok(None);
        }
        // im2col's buffer (`ckk` rows of `n * p`) can be far bigger than the input.
        super::host_mem::host_room(
            (g.ckk().saturating_mul(g.n * g.p())).saturating_add(g.n * g.o * g.p()),
            x.dtype(),
        )?;
        super::cpu::keep_freed_memory();
        let (xd, wd) = (x.dense()?, weight.dense()?);
        let bd = bias.map(|b| b.dense()).transpose()?;
        let (xr, wr) = (xd.read(), wd.read());
        let br = bd.as_ref().map(|b| b.read());
        let bs = br.as_deref();
        let (out, cols) = match (&*xr, &*wr, bs) {
            (
                Storage::Cpu(CpuStorage::F32(x)),
                Storage::Cpu(CpuStorage::F32(w)),
                None | Some(Storage::Cpu(CpuStorage::F32(_))),
            ) => {
                let b = match bs {
                    Some(Storage::Cpu(CpuStorage::F32(b))) => Some(&b[..]),
                    _ => None,
                };
                let (o, c) = conv_forward(x, w, b, g);
                (CpuStorage::F32(o), CpuStorage::F32(c))
            }
            (
                Storage::Cpu(CpuStorage::F64(x)),
                Storage::Cpu(CpuStorage::F64(w)),
                None | Some(Storage::Cpu(CpuStorage::F64(_))),
            ) => {
                let b = match bs {
                    Some(Storage::Cpu(CpuStorage::F64(b))) => Some(&b[..]),
                    _ => None,
                };
                let (o, c) = conv_forward(x, w, b, g);
                (CpuStorage::F64(o), CpuStorage::F64(c))
            }
            _ => return Ok(None),
        };
        let out = Tensor::from_storage(Storage::Cpu(out), vec![g.n, g.o, g.oh, g.ow]);
        if !autograd::needs_grad(&all) {
            return Ok(Some(out));
        }
        let need = [
            x.requires_grad(),
            weight.requires_grad(),
            bias.is_some_and(|b| b.requires_grad()),
        ];
        // The unfolded input is kept for the weight's gradient (recomputing it would cost
        // about as much as keeping it).
        let ncols = cols.len();
        let cols = need[1].then(|| Tensor::from_storage(Storage::Cpu(cols), vec![ncols]));
        let has_bias = bias.is_some();
        let wkeep = crate::autograd::Saved::new(weight);
        let dims = [x.shape().to_vec(), weight.shape().to_vec(), vec![g.o]];
        Ok(Some(autograd::record(out, "conv2d", &all, move |gout| {
            let gd = gout.dense()?;
            let gr = gd.read();
            let wd = wkeep.get()?.dense()?;
            let wr = wd.read();
            let cr = cols.as_ref().map(|c| c.read());
            let empty32: [f32; 0] = [];
            let empty64: [f64; 0] = [];
            let (dx, dw, db) = match (&*gr, &*wr) {
                (Storage::Cpu(CpuStorage::F32(go)), Storage::Cpu(CpuStorage::F32(w))) => {
                    let c = match cr.as_deref() {
                        Some(Storage::Cpu(CpuStorage::F32(c))) => &c[..],
                        _ => &empty32[..],
                    };
                    let (a, b, d) = conv_backward(go, w, c, g, need);
                    let f = |v: Option<Vec<f32>>| v.map(CpuStorage::F32);
                    (f(a), f(b), f(d))
                }
                (Storage::Cpu(CpuStorage::F64(go)), Storage::Cpu(CpuStorage::F64(w))) => {
                    let c = match cr.as_deref() {
                        Some(Storage::Cpu(CpuStorage::F64(c))) => &c[..],
                        _ => &empty64[..],
                    };
                    let (a, b, d) = conv_backward(go, w, c, g, need);
                    let f = |v: Option<Vec<f64>>| v.map(CpuStorage::F64);
                    (f(a), f(b), f(d))
                }
                _ => {
                    return Err(crate::error::Error::Invalid(format!(
                        "conv2d backward: a {:?} gradient on {:?} for a {:?} weight",
                        gout.dtype(),
                        gout.device(),
                        wd.dtype()
                    )))
                }
            };
            let t = |s: Option<CpuStorage>, d: &Vec<usize>| {
                s.map(|s| Tensor::from_storage(Storage::Cpu(s), d.clone()))
            };
            let mut grads = vec![t(dx, &dims[0]), t(dw, &dims[1])];
            if has_bias {
                grads.push(t(db, &dims[2]));
            }
            Ok(grads)
        })))
    }
}
