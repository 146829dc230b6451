//! Helpers shared by the tensor tests, so the CPU and GPU suites feed the same inputs and
//! judge results by the same tolerance, and the GPU tests skip the same way. Each test file
//! uses a part of it.
#![allow(dead_code)]

use gpulab::{cuda, Device, Tensor};

pub mod clock;
pub mod ties;

/// Whether a CUDA device is there; if not, says "skipped: no CUDA device" with the reason, so
/// a GPU test that returns early counts as skipped, not passed silently.
pub fn have_gpu() -> bool {
    if cuda::is_available() {
        return true;
    }
    let why = cuda::unavailable_reason().unwrap_or_default();
    println!("skipped: no CUDA device ({why})");
    false
}

/// Deterministic, irregular test data without touching the crate's generator.
pub fn data(n: usize, salt: u32) -> Vec<f32> {
    let mix = salt.wrapping_mul(0x9E37_79B9) | 1;
    (0..n)
        .map(|i| ((((i as u32) ^ mix).wrapping_mul(2654435761) >> 8) % 2000) as f32 / 100.0 - 10.0)
        .collect()
}

/// `x` matches the expected `y` within `tol`, relative above 1 and absolute below; NaN
/// matches only NaN.
pub fn within(x: f32, y: f32, tol: f32) -> bool {
    (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + y.abs())
}

/// The f32 error bound of each element of a row-major `[m, k] x [k, n]` product computed in
/// any summation order: k * eps * sum_p |a_ip * b_pj| (the classic bound for a k-term dot
/// product). Two implementations that each meet it differ by at most twice this.
#[allow(dead_code)]
pub fn matmul_error_bound(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = (a[i * k + p] as f64).abs();
            let row = &b[p * n..(p + 1) * n];
            for (o, y) in out[i * n..(i + 1) * n].iter_mut().zip(row) {
                *o += x * (*y as f64).abs();
            }
        }
    }
    let k_eps = k as f64 * f32::EPSILON as f64;
    out.iter_mut().for_each(|v| *v *= k_eps);
    out
}

/// 0, 1, 2, ... in `shape` as f32, on the CPU.
pub fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|i| i as f32).collect::<Vec<_>>(),
        shape,
        Device::Cpu,
    )
    .unwrap()
}

pub fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

/// `r` is an error whose message contains every one of `parts`.
#[track_caller]
pub fn err_has(r: gpulab::error::Result<impl Sized>, parts: &[&str]) {
    let e = match r {
        Ok(_) => panic!("expected an error containing {parts:?}"),
        Err(e) => e.to_string(),
    };
    for p in parts {
        assert!(e.contains(p), "{e:?} should contain {p:?}");
    }
}

/// Named parts (`["output", "x grad"]`) of two runs agree element by element within `tol`,
/// relative above 1 and absolute below; the message names `what`, the part and the index.
#[track_caller]
pub fn parts_close(what: &str, names: &[&str], got: &[Vec<f64>], want: &[Vec<f64>], tol: f64) {
    for (part, (g, w)) in names.iter().zip(got.iter().zip(want)) {
        assert_eq!(g.len(), w.len(), "{what} {part}: lengths");
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{what} {part}[{i}]: {a}, expected {b}"
            );
        }
    }
}
