//! Pooling with torch's other arguments: (h, w) sizes, dilation and ceil_mode for max
//! pooling; ceil_mode and count_include_pad for average pooling. Outputs against torch's
//! definitions written as plain loops (max: the CPU's one-pass path for floats, the gathered
//! windows for integers, what CUDA runs); the layers' reprs against torch's; gradients by
//! finite differences are in `autograd_gradcheck.rs`, values and gradients against torch
//! itself in `bench/torch_parity.py`'s `nn pool` / `nn avgpool` cases.

use gpulab::nn::{AvgPool2d, MaxPool2d, Module};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

/// torch's `pooling_output_shape`.
fn out_len(len: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> usize {
    let span = d * (k - 1) + 1;
    let mut out = (len + 2 * p - span + if ceil { s - 1 } else { 0 }) / s + 1;
    if ceil && (out - 1) * s >= len + p {
        out -= 1;
    }
    out
}

/// Max pooling by its definition: the largest input under each window's taps (padding and
/// anything past the input never win).
#[allow(clippy::too_many_arguments)]
fn max_reference(
    x: &[f64],
    [h, w]: [usize; 2],
    k: (usize, usize),
    s: (usize, usize),
    p: (usize, usize),
    d: (usize, usize),
    ceil: bool,
) -> (usize, usize, Vec<f64>) {
    let oh = out_len(h, k.0, s.0, p.0, d.0, ceil);
    let ow = out_len(w, k.1, s.1, p.1, d.1, ceil);
    let mut out = vec![];
    for y in 0..oh {
        for xo in 0..ow {
            let mut best = f64::NEG_INFINITY;
            for i in 0..k.0 {
                for j in 0..k.1 {
                    let iy = (y * s.0 + i * d.0) as isize - p.0 as isize;
                    let ix = (xo * s.1 + j * d.1) as isize - p.1 as isize;
                    if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                        best = best.max(x[iy as usize * w + ix as usize]);
                    }
                }
            }
            out.push(best);
        }
    }
    (oh, ow, out)
}

/// Average pooling as torch's kernel computes it: the window clipped to the padded input
/// for its size with padding, to the input for its sum and its size without.
fn avg_reference(
    x: &[f64],
    [h, w]: [usize; 2],
    k: (usize, usize),
    s: (usize, usize),
    p: (usize, usize),
    ceil: bool,
    include_pad: bool,
) -> (usize, usize, Vec<f64>) {
    let oh = out_len(h, k.0, s.0, p.0, 1, ceil);
    let ow = out_len(w, k.1, s.1, p.1, 1, ceil);
    let mut out = vec![];
    for y in 0..oh {
        for xo in 0..ow {
            let (h0, w0) = (
                (y * s.0) as isize - p.0 as isize,
                (xo * s.1) as isize - p.1 as isize,
            );
            let h1 = (h0 + k.0 as isize).min((h + p.0) as isize);
            let w1 = (w0 + k.1 as isize).min((w + p.1) as isize);
            let padded_size = (h1 - h0) * (w1 - w0);
            let (h0, w0) = (h0.max(0), w0.max(0));
            let (h1, w1) = (h1.min(h as isize), w1.min(w as isize));
            let mut sum = 0.0;
            for iy in h0..h1 {
                for ix in w0..w1 {
                    sum += x[iy as usize * w + ix as usize];
                }
            }
            let size = if include_pad {
                padded_size
            } else {
                (h1 - h0) * (w1 - w0)
            };
            out.push(sum / size as f64);
        }
    }
    (oh, ow, out)
}

/// Distinct values in an order unrelated to position, so every window has one maximum.
fn values(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 37 + 11) % 101) as f64 - 50.0)
        .collect()
}

/// kernel, stride, padding
type Sizes = ((usize, usize), (usize, usize), (usize, usize));
/// (input h, w), sizes, dilation, ceil_mode
type MaxCase = ([usize; 2], Sizes, (usize, usize), bool);

#[test]
fn max_pool2d_with_dilation_ceil_mode_and_pairs_follows_the_definition() {
    let cases: [MaxCase; 6] = [
        ([7, 7], ((2, 2), (2, 2), (0, 0)), (1, 1), true),
        ([7, 8], ((3, 3), (2, 2), (1, 1)), (1, 1), true),
        ([9, 8], ((3, 2), (2, 3), (1, 0)), (2, 1), false),
        ([9, 10], ((3, 3), (2, 2), (1, 1)), (2, 2), true),
        ([5, 6], ((2, 3), (1, 2), (0, 1)), (1, 2), true),
        ([6, 6], ((3, 3), (3, 3), (0, 0)), (1, 1), true),
    ];
    for (c, ([h, w], (k, s, p), d, ceil)) in cases.into_iter().enumerate() {
        let xv = values(2 * 3 * h * w);
        let mut want = vec![];
        let mut dims = (0, 0);
        for plane in xv.chunks(h * w) {
            let (oh, ow, v) = max_reference(plane, [h, w], k, s, p, d, ceil);
            dims = (oh, ow);
            want.extend(v);
        }
        // f64/f32 take the CPU's one pass; int64 the gathered windows (CUDA's way).
        for dtype in [DType::F64, DType::F32, DType::I64] {
            let x = Tensor::from_vec(xv.clone(), [2, 3, h, w], CPU)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let y = F::max_pool2d(&x, k, s, p, d, ceil)
                .unwrap_or_else(|e| panic!("case {c} {dtype:?}: {e}"));
            assert_eq!(y.shape(), &[2, 3, dims.0, dims.1], "case {c} {dtype:?}");
            let got = y.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert_eq!(got, want, "case {c} {dtype:?}");
        }
    }
}

#[test]
fn avg_pool2d_with_ceil_mode_and_count_include_pad_follows_torchs_divisors() {
    let cases: [([usize; 2], Sizes, bool, bool); 6] = [
        ([5, 5], ((2, 2), (2, 2), (0, 0)), true, true),
        ([5, 7], ((3, 3), (2, 2), (1, 1)), false, false),
        ([5, 7], ((3, 3), (2, 2), (1, 1)), true, false),
        ([6, 5], ((3, 3), (2, 2), (1, 1)), true, true),
        ([7, 6], ((3, 2), (2, 3), (1, 1)), true, false),
        ([4, 4], ((2, 2), (1, 1), (1, 1)), false, false),
    ];
    for (c, ([h, w], (k, s, p), ceil, include)) in cases.into_iter().enumerate() {
        let xv = values(2 * h * w);
        let mut want = vec![];
        let mut dims = (0, 0);
        for plane in xv.chunks(h * w) {
            let (oh, ow, v) = avg_reference(plane, [h, w], k, s, p, ceil, include);
            dims = (oh, ow);
            want.extend(v);
        }
        let x = Tensor::from_vec(xv.clone(), [1, 2, h, w], CPU).unwrap();
        let y = F::avg_pool2d(&x, k, s, p, ceil, include).unwrap();
        assert_eq!(y.shape(), &[1, 2, dims.0, dims.1], "case {c}");
        let got = y.to_vec::<f64>().unwrap();
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((a - b).abs() < 1e-12, "case {c} [{i}]: {a}, expected {b}");
        }
    }
}

#[test]
fn the_layers_print_like_torch_and_refuse_bad_sizes() {
    // torch 2.9's reprs of the same layers.
    assert_eq!(
        MaxPool2d::new(2).describe(),
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    );
    assert_eq!(
        MaxPool2d::new(3)
            .stride(2)
            .padding(1)
            .dilation(2)
            .ceil_mode(true)
            .describe(),
        "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)"
    );
    assert_eq!(
        MaxPool2d::new((2, 3)).describe(),
        "MaxPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, ceil_mode=False)"
    );
    assert_eq!(
        AvgPool2d::new(3)
            .stride(2)
            .padding(1)
            .ceil_mode(true)
            .count_include_pad(false)
            .describe(),
        "AvgPool2d(kernel_size=3, stride=2, padding=1)"
    );
    // ceil_mode keeps the last, partial window: 7 -> 4 instead of 3.
    let x = Tensor::ones((1, 1, 7, 7), CPU).unwrap();
    let y = MaxPool2d::new(2).ceil_mode(true).forward(&x).unwrap();
    assert_eq!(y.shape(), &[1, 1, 4, 4]);
    let y = AvgPool2d::new(2).ceil_mode(true).forward(&x).unwrap();
    assert!(y.to_vec::<f32>().unwrap().iter().all(|v| *v == 1.0));

    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let e = err(F::max_pool2d(&x, 3, 1, 1, 0, false));
    assert!(e.contains("dilation must be positive"), "{e}");
    let e = err(F::max_pool2d(&x, 3, 1, 1, 5, false));
    assert!(e.contains("kernel (3, 11 wide with dilation 5)"), "{e}");
    let e = err(F::max_pool2d(&x, (3, 2), 1, (1, 2), 1, false));
    assert!(
        e.contains("padding 2 is more than half the kernel size 2"),
        "{e}"
    );
    let e = err(F::avg_pool2d(&x, (2, 0), 1, 0, true, true));
    assert!(e.contains("must be positive"), "{e}");
}
