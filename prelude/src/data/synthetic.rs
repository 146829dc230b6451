//! Labelled synthetic stand-ins for MNIST and for the cat-vs-dog photos, so that notebooks and
//! CI train on data with real class structure when the files are absent.
//!
//! Digits are drawn as strokes (line and arc templates per digit, with random thickness, size,
//! aspect, slant, rotation, shift, per-point wobble and noise) on a 28x28 canvas, anti-aliased
//! by the distance to the nearest stroke. The variation is wide enough that a model has to learn
//! shapes: a linear model does clearly worse than a small CNN. Cats and dogs are faces: a head
//! with pointed upright ears (cat) or long hanging ears and a snout (dog), in colours, sizes and
//! places drawn from the same ranges for both classes, on a random background, so only the
//! shapes tell them apart.
//!
//! Each sample is drawn from its own generator (seeded from the seed and its index), so a
//! dataset is the same for one seed whatever the thread count.

use super::{mnist, Rng, TensorDataset};
use crate::error::Result;
use crate::{Device, Tensor};
use rayon::prelude::*;
use std::path::Path;

type Pt = (f32, f32);

/// Points of an elliptic arc in the digit's unit box (x right, y down; angle 0 points right,
/// -90 up), from `a0` to `a1` degrees.
fn arc(cx: f32, cy: f32, rx: f32, ry: f32, a0: f32, a1: f32) -> Vec<Pt> {
    let steps = (((a1 - a0).abs() / 20.0).ceil() as usize).max(2);
    (0..=steps)
        .map(|i| {
            let t = (a0 + (a1 - a0) * i as f32 / steps as f32).to_radians();
            (cx + rx * t.cos(), cy + ry * t.sin())
        })
        .collect()
}

/// The strokes (polylines) of `digit` in a unit box, with the random variants real handwriting
/// shows (a 1 with or without its flag, a 7 with or without its bar, open or closed 4s).
fn template(digit: usize, rng: &mut Rng) -> Vec<Vec<Pt>> {
    let j = |rng: &mut Rng| rng.uniform(-0.06, 0.06);
    match digit {
        0 => vec![arc(0.5, 0.5, 0.36 + j(rng), 0.48, -90.0, 275.0)],
        1 => {
            let mut s = vec![vec![(0.5 + j(rng), 0.0), (0.5, 1.0)]];
            if rng.chance(0.5) {
                s.push(vec![(0.25, 0.22 + j(rng)), (0.5, 0.0)]);
            }
            s
        }
        2 => {
            let mut top = arc(0.5, 0.3, 0.34, 0.3, -165.0, 25.0);
            top.push((0.12 + j(rng), 1.0));
            top.push((0.9, 1.0 + j(rng)));
            vec![top]
        }
        3 => vec![
            arc(0.48, 0.26, 0.32, 0.25, -160.0, 95.0),
            arc(0.48, 0.74, 0.36 + j(rng), 0.26, -95.0, 160.0),
        ],
        4 => {
            let x = 0.66 + j(rng);
            let mut s = vec![vec![(x, 0.0), (x, 1.0)]];
            if rng.chance(0.5) {
                s.push(vec![(x, 0.0), (0.08, 0.66), (0.92, 0.66)]); // closed 4
            } else {
                s.push(vec![(0.2, 0.0), (0.1, 0.62), (0.92, 0.62)]); // open 4
            }
            s
        }
        5 => {
            let mut s = vec![(0.85, 0.0), (0.25, 0.0 + j(rng)), (0.2, 0.45)];
            s.extend(arc(0.5, 0.68, 0.36, 0.32, -135.0, 150.0));
            vec![s]
        }
        6 => {
            let mut s = vec![(0.78, 0.0 + j(rng)), (0.45, 0.18), (0.24, 0.55)];
            s.extend(arc(0.5, 0.72, 0.3, 0.28, 180.0, 545.0));
            vec![s]
        }
        7 => {
            let mut s = vec![vec![(0.1, 0.0), (0.9, 0.0 + j(rng)), (0.4 + j(rng), 1.0)]];
            if rng.chance(0.3) {
                s.push(vec![(0.4, 0.52), (0.82, 0.52)]);
            }
            s
        }
        8 => vec![
            arc(0.5, 0.25, 0.27 + j(rng), 0.25, -90.0, 275.0),
            arc(0.5, 0.73, 0.33, 0.27, -90.0, 275.0),
        ],
        _ => {
            let mut s = arc(0.5, 0.3, 0.3, 0.28 + j(rng), 0.0, 365.0);
            s.push((0.72 + j(rng), 1.0));
            vec![s]
        }
    }
}

fn seg_dist2(p: Pt, a: Pt, b: Pt) -> f32 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (ex, ey) = (p.0 - a.0 - t * dx, p.1 - a.1 - t * dy);
    ex * ex + ey * ey
}

/// One 28x28 digit, values in [0, 1] quantised to multiples of 1/255 as MNIST's bytes are.
fn draw_digit(digit: usize, rng: &mut Rng, out: &mut [f32]) {
    let strokes = template(digit, rng);
    let height = rng.uniform(15.0, 21.0);
    let aspect = if digit == 1 {
        0.5
    } else {
        rng.uniform(0.6, 0.85)
    };
    let width = height * aspect;
    let slant = rng.uniform(-0.35, 0.35);
    let rot = rng.uniform(-12.0f32, 12.0).to_radians();
    let (cx, cy) = (14.0 + rng.uniform(-2.5, 2.5), 14.0 + rng.uniform(-2.5, 2.5));
    let radius = rng.uniform(0.8, 1.9);
    let wobble = 0.6;
    let (sin, cos) = rot.sin_cos();
    // Unit box -> canvas pixels: centre, scale, slant (x shifts with height), rotate, move.
    let mut segs: Vec<(Pt, Pt)> = Vec::new();
    for stroke in &strokes {
        let pts: Vec<Pt> = stroke
            .iter()
            .map(|&(u, v)| {
                let (x, y) = ((u - 0.5) * width, (v - 0.5) * height);
                let x = x - slant * y;
                let (x, y) = (x * cos - y * sin, x * sin + y * cos);
                (
                    cx + x + rng.uniform(-wobble, wobble),
                    cy + y + rng.uniform(-wobble, wobble),
                )
            })
            .collect();
        segs.extend(pts.windows(2).map(|w| (w[0], w[1])));
    }
    let noise = rng.uniform(0.0, 0.08);
    for r in 0..28 {
        for c in 0..28 {
            let p = (c as f32 + 0.5, r as f32 + 0.5);
            let d2 = segs
                .iter()
                .map(|&(a, b)| seg_dist2(p, a, b))
                .fold(f32::INFINITY, f32::min);
            // Full ink inside the radius, a one-pixel soft edge outside it (anti-aliasing).
            let mut v = (radius + 0.5 - d2.sqrt()).clamp(0.0, 1.0);
            if noise > 0.0 {
                v += noise * rng.normal();
            }
            out[r * 28 + c] = (v.clamp(0.0, 1.0) * 255.0).round() / 255.0;
        }
    }
}

fn sample_rng(seed: u64, stream: u64, i: usize) -> Rng {
    // Mix the index through one SplitMix64 step so neighbouring samples are unrelated.
    let mut r = Rng::new(
        seed.wrapping_add(stream.wrapping_mul(0xA076_1D64_78BD_642F))
            .wrapping_add((i as u64).wrapping_mul(0xE703_7ED1_A0B4_28DB)),
    );
    Rng::new(r.next_u64())
}

fn digits(n: usize, seed: u64, stream: u64) -> TensorDataset {
    let mut x = vec![0f32; n * 784];
    x.par_chunks_mut(784).enumerate().for_each(|(i, img)| {
        let mut rng = sample_rng(seed, stream, i);
        draw_digit(i % 10, &mut rng, img);
    });
    // Classes cycle 0..9 and are then shuffled, so every class has n/10 samples (±1).
    let mut order: Vec<usize> = (0..n).collect();
    Rng::new(seed ^ stream).shuffle(&mut order);
    let mut xs = vec![0f32; n * 784];
    let mut ys = vec![0i64; n];
    for (dst, &src) in order.iter().enumerate() {
        xs[dst * 784..(dst + 1) * 784].copy_from_slice(&x[src * 784..(src + 1) * 784]);
        ys[dst] = (src % 10) as i64;
    }
    TensorDataset {
        x: Tensor::from_vec(xs, [n, 1, 28, 28], Device::Cpu).expect("shape matches"),
        y: Tensor::from_vec(ys, [n], Device::Cpu).expect("shape matches"),
    }
}

/// A labelled stand-in for MNIST: `(train, test)` with `n_train` and `n_test` procedurally drawn
/// digits, images `[n, 1, 28, 28]` f32 in [0, 1] and labels `[n]` i64 (0..=9, balanced),
/// as [`mnist`](super::mnist()) gives them. The same seed gives the same data; train and test
/// are drawn independently. About 0.1 ms per image on one core (measured: 20,000 in 2.1 s
/// on one busy core), spread over all cores with rayon.
///
/// ```
/// let (train, test) = gpulab::data::synthetic_mnist(2000, 500, 0);
/// assert_eq!(train.x.shape(), &[2000, 1, 28, 28]);
/// ```
pub fn synthetic_mnist(n_train: usize, n_test: usize, seed: u64) -> (TensorDataset, TensorDataset) {
    (digits(n_train, seed, 1), digits(n_test, seed, 2))
}

/// Real MNIST from `folder` when its four files are there, the synthetic stand-in
/// ([`synthetic_mnist`] with `n_train`, `n_test`, `seed`) otherwise; prints one line saying
/// which. The real files are used whole (`n_train`/`n_test` size only the stand-in). Files that
/// are there but broken are an error, not a silent fallback.
///
/// ```no_run
/// let (train, test) = gpulab::data::mnist_or_synthetic("data/mnist", 10_000, 2_000, 0)?;
/// # Ok::<(), gpulab::Error>(())
/// ```
pub fn mnist_or_synthetic(
    folder: impl AsRef<Path>,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(TensorDataset, TensorDataset)> {
    let folder = folder.as_ref();
    if mnist::mnist_files_present(folder) {
        let (train, test) = mnist::mnist(folder)?;
        println!(
            "MNIST: the real files in {} ({} train, {} test images)",
            folder.display(),
            train.len(),
            test.len()
        );
        Ok((train, test))
    } else {
        println!(
            "MNIST: files not found in {}, using the synthetic stand-in ({n_train} train, \
             {n_test} test, seed {seed}); see data::mnist's error for how to download them",
            folder.display()
        );
        Ok(synthetic_mnist(n_train, n_test, seed))
    }
}

/// The class names of [`synthetic_cats_dogs`], in label order (as an image folder with
/// `cats/` and `dogs/` subfolders would number them).
pub const CATS_DOGS_CLASSES: [&str; 2] = ["cat", "dog"];

fn in_ellipse(x: f32, y: f32, cx: f32, cy: f32, rx: f32, ry: f32, rot: f32) -> bool {
    let (s, c) = rot.sin_cos();
    let (dx, dy) = (x - cx, y - cy);
    let (u, v) = (dx * c + dy * s, -dx * s + dy * c);
    (u / rx).powi(2) + (v / ry).powi(2) <= 1.0
}

fn in_triangle(p: Pt, a: Pt, b: Pt, c: Pt) -> bool {
    let cross = |o: Pt, p1: Pt, p2: Pt| (p1.0 - o.0) * (p2.1 - o.1) - (p1.1 - o.1) * (p2.0 - o.0);
    let (d1, d2, d3) = (cross(a, b, p), cross(b, c, p), cross(c, a, p));
    let neg = d1 < 0.0 || d2 < 0.0 || d3 < 0.0;
    let pos = d1 > 0.0 || d2 > 0.0 || d3 > 0.0;
    !(neg && pos)
}

fn colour(rng: &mut Rng, lo: f32, hi: f32) -> [f32; 3] {
    [
        rng.uniform(lo, hi),
        rng.uniform(lo, hi),
        rng.uniform(lo, hi),
    ]
}

/// One face, `[3, size, size]` planes in `out`.
fn draw_face(dog: bool, size: usize, rng: &mut Rng, out: &mut [f32]) {
    let s = size as f32;
    let bg0 = colour(rng, 0.0, 1.0);
    let bg1 = colour(rng, 0.0, 1.0);
    let fur = colour(rng, 0.15, 0.95);
    let ear_col = if rng.chance(0.5) {
        fur
    } else {
        colour(rng, 0.1, 0.9)
    };
    let eye = colour(rng, 0.0, 0.2);
    let r = rng.uniform(0.2, 0.3); // head radius, as a fraction of the image
    let (cx, cy) = (rng.uniform(0.35, 0.65), rng.uniform(0.42, 0.62));
    let tilt = rng.uniform(-0.25, 0.25);
    let (ts, tc) = tilt.sin_cos();
    // Head-relative point (u right, v down, in head radii) -> image fraction.
    let at = |u: f32, v: f32| (cx + r * (u * tc - v * ts), cy + r * (u * ts + v * tc));
    let ear_l = if dog {
        // Long hanging ears beside the head, drawn as tilted ellipses.
        (at(-1.0, 0.25), r * 0.32, r * 0.8, tilt - 0.3)
    } else {
        (at(-0.6, -0.75), 0.0, 0.0, 0.0)
    };
    let ear_r = if dog {
        (at(1.0, 0.25), r * 0.32, r * 0.8, tilt + 0.3)
    } else {
        (at(0.6, -0.75), 0.0, 0.0, 0.0)
    };
    let cat_ears = [
        [at(-0.95, -0.35), at(-0.75, -1.45), at(-0.2, -0.85)],
        [at(0.95, -0.35), at(0.75, -1.45), at(0.2, -0.85)],
    ];
    let eyes = [at(-0.38, -0.15), at(0.38, -0.15)];
    let eye_r = r * rng.uniform(0.1, 0.16);
    let snout = at(0.0, 0.45);
    let nose = if dog { at(0.0, 0.3) } else { at(0.0, 0.25) };
    let noise = rng.uniform(0.0, 0.06);
    let plane = size * size;
    for py in 0..size {
        for px in 0..size {
            let (x, y) = ((px as f32 + 0.5) / s, (py as f32 + 0.5) / s);
            let g = y; // vertical background gradient
            let mut c = [
                bg0[0] * (1.0 - g) + bg1[0] * g,
                bg0[1] * (1.0 - g) + bg1[1] * g,
                bg0[2] * (1.0 - g) + bg1[2] * g,
            ];
            let head = in_ellipse(x, y, cx, cy, r, r * 0.92, tilt);
            if dog {
                for &(e, rx, ry, rot) in [ear_l, ear_r].iter() {
                    if !head && in_ellipse(x, y, e.0, e.1, rx, ry, rot) {
                        c = ear_col;
                    }
                }
            } else {
                for t in &cat_ears {
                    if in_triangle((x, y), t[0], t[1], t[2]) {
                        c = ear_col;
                    }
                }
            }
            if head {
                c = fur;
                if dog && in_ellipse(x, y, snout.0, snout.1, r * 0.45, r * 0.32, tilt) {
                    c = [
                        (fur[0] + 0.35).min(1.0),
                        (fur[1] + 0.35).min(1.0),
                        (fur[2] + 0.35).min(1.0),
                    ];
                }
                for e in &eyes {
                    if in_ellipse(x, y, e.0, e.1, eye_r, eye_r, 0.0) {
                        c = eye;
                    }
                }
                let nr = if dog { r * 0.16 } else { r * 0.09 };
                if in_ellipse(x, y, nose.0, nose.1, nr, nr * 0.75, tilt) {
                    c = eye;
                }
            }
            for (k, v) in c.iter().enumerate() {
                let n = if noise > 0.0 {
                    noise * rng.normal()
                } else {
                    0.0
                };
                out[k * plane + py * size + px] = (v + n).clamp(0.0, 1.0);
            }
        }
    }
}

/// A labelled two-class stand-in for article 04's cats and dogs: `n` images
/// `[n, 3, size, size]` f32 in [0, 1], labels `[n]` i64 with 0 = cat (pointed upright ears),
/// 1 = dog (long hanging ears and a snout), half of each, shuffled. Colours, positions, sizes,
/// tilt and background are random and drawn from the same ranges for both classes.
///
/// ```
/// let data = gpulab::data::synthetic_cats_dogs(200, 64, 0);
/// assert_eq!(data.x.shape(), &[200, 3, 64, 64]); // labels: 0 = cat, 1 = dog
/// ```
pub fn synthetic_cats_dogs(n: usize, size: usize, seed: u64) -> TensorDataset {
    let per = 3 * size * size;
    let mut x = vec![0f32; n * per];
    let labels: Vec<i64> = {
        let mut l: Vec<i64> = (0..n).map(|i| (i % 2) as i64).collect();
        Rng::new(seed ^ 0x00C4_7D06).shuffle(&mut l);
        l
    };
    if per > 0 {
        x.par_chunks_mut(per).enumerate().for_each(|(i, img)| {
            let mut rng = sample_rng(seed, 3, i);
            draw_face(labels[i] == 1, size, &mut rng, img);
        });
    }
    TensorDataset {
        x: Tensor::from_vec(x, [n, 3, size, size], Device::Cpu).expect("shape matches"),
        y: Tensor::from_vec(labels, [n], Device::Cpu).expect("shape matches"),
    }
}
