//! F::interpolate and nn::Upsample: what each mode copies or blends, gradients that go back
//! to the pixels read, torch's repr, and errors that name the bad argument. (Values and
//! gradients against torch itself: `bench/torch_parity.py`'s `nn interp` cases.)

use gpulab::nn::{Module, Upsample};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|v| v as f64).collect::<Vec<_>>(), shape, CPU).unwrap()
}

#[test]
fn nearest_copies_pixels_and_sends_their_gradients_back() {
    let x = ramp(&[1, 1, 2, 3]).requires_grad_(true).unwrap();
    let y = F::interpolate(&x, 2.0, "nearest", false).unwrap();
    assert_eq!(y.shape(), &[1, 1, 4, 6]);
    assert_eq!(
        y.to_vec::<f64>().unwrap(),
        vec![
            0., 0., 1., 1., 2., 2., //
            0., 0., 1., 1., 2., 2., //
            3., 3., 4., 4., 5., 5., //
            3., 3., 4., 4., 5., 5.,
        ]
    );
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![4.0; 6]);

    // To a size: output row i reads input row floor(i * 3 / 5) ("nearest"), or
    // floor((i + 0.5) * 3 / 5) ("nearest-exact").
    let x = ramp(&[1, 1, 3, 1]);
    let rows = |mode| {
        F::interpolate(&x, (5, 1), mode, false)
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
    };
    assert_eq!(rows("nearest"), vec![0., 0., 1., 1., 2.]);
    assert_eq!(rows("nearest-exact"), vec![0., 0., 1., 2., 2.]);
    // Downsampling by 0.5 keeps every other pixel.
    let y = F::interpolate(&ramp(&[1, 1, 4, 4]), 0.5, "nearest", false).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![0., 2., 8., 10.]);
    // uint8 images resize too (as in torch), keeping their dtype.
    let img = Tensor::from_vec(vec![0u8, 255, 7, 9], [1, 1, 2, 2], CPU).unwrap();
    let big = F::interpolate(&img, (3.0, 1.0), "nearest", false).unwrap();
    assert_eq!(big.dtype(), DType::U8);
    assert_eq!(
        big.to_vec::<u8>().unwrap(),
        vec![0, 255, 0, 255, 0, 255, 7, 9, 7, 9, 7, 9]
    );
}

#[test]
fn bilinear_blends_neighbours_and_keeps_linear_ramps() {
    // With align_corners the corners stay put and a linear ramp stays linear, exactly.
    let x = ramp(&[1, 1, 2, 3]).requires_grad_(true).unwrap();
    let y = F::interpolate(&x, (3, 5), "bilinear", true).unwrap();
    let want: Vec<f64> = (0..3)
        .flat_map(|r| (0..5).map(move |c| r as f64 * 1.5 + c as f64 * 0.5))
        .collect();
    assert_eq!(y.to_vec::<f64>().unwrap(), want);
    // Each output's weights sum to one, so the input gradients of sum(y) add up to y's size.
    y.sum().unwrap().backward().unwrap();
    let g: f64 = x.grad().unwrap().to_vec::<f64>().unwrap().iter().sum();
    assert!((g - 15.0).abs() < 1e-12, "{g}");

    // Without align_corners (torch's default) samples sit at pixel centres: doubling [0, 1]
    // gives 0, 0.25, 0.75, 1 (the edges clamp).
    let x = Tensor::from_vec(vec![0.0f32, 1.0], [1, 1, 1, 2], CPU).unwrap();
    let y = F::interpolate(&x, 2.0, "bilinear", false).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 4]);
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        vec![0.0, 0.25, 0.75, 1.0, 0.0, 0.25, 0.75, 1.0]
    );
    // Half precision is computed in float32 and rounded once.
    let h = F::interpolate(&x.to_dtype(DType::BF16).unwrap(), 2.0, "bilinear", false).unwrap();
    assert_eq!(h.dtype(), DType::BF16);
    assert_eq!(
        h.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
        y.to_vec::<f32>().unwrap()
    );
}

#[test]
fn upsample_prints_like_torch_and_runs_as_a_layer() {
    // torch 2.9's reprs of the same layers (torch leaves align_corners out).
    assert_eq!(
        Upsample::new(2.0).describe(),
        "Upsample(scale_factor=2.0, mode='nearest')"
    );
    assert_eq!(
        Upsample::new((5, 7))
            .mode("bilinear")
            .align_corners(true)
            .describe(),
        "Upsample(size=(5, 7), mode='bilinear')"
    );
    assert_eq!(
        Upsample::new((2.0, 3.0)).mode("bilinear").describe(),
        "Upsample(scale_factor=(2.0, 3.0), mode='bilinear')"
    );
    assert_eq!(
        Upsample::new(1.5).mode("nearest-exact").describe(),
        "Upsample(scale_factor=1.5, mode='nearest-exact')"
    );
    let up = Upsample::new(2.0).mode("bilinear");
    let x = Tensor::ones((2, 3, 4, 5), CPU).unwrap();
    let y = up.forward(&x).unwrap();
    assert_eq!(y.shape(), &[2, 3, 8, 10]);
    assert!(y.to_vec::<f32>().unwrap().iter().all(|v| *v == 1.0));
    assert!(up.parameters().is_empty());
}

#[test]
fn bad_arguments_are_named() {
    let x = Tensor::ones((1, 1, 4, 4), CPU).unwrap();
    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let e = err(F::interpolate(&x, 2.0, "cubic", false));
    assert!(e.contains("got \"cubic\""), "{e}");
    let e = err(F::interpolate(&x, 2.0, "nearest", true));
    assert!(
        e.contains("align_corners") && e.contains("\"nearest\""),
        "{e}"
    );
    let e = err(F::interpolate(&x, 2.0, "area", true));
    assert!(e.contains("align_corners") && e.contains("\"area\""), "{e}");
    let e = err(F::interpolate(&x, 0.0, "nearest", false));
    assert!(e.contains("scale factors must be positive"), "{e}");
    let e = err(F::interpolate(&x, 0.1, "nearest", false));
    assert!(e.contains("output [0, 0]"), "{e}");
    let e = err(F::interpolate(&x, (0, 3), "nearest", false));
    assert!(e.contains("sizes must be positive"), "{e}");
    let ints = Tensor::from_vec(vec![1i64; 4], [1, 1, 2, 2], CPU).unwrap();
    let e = err(F::interpolate(&ints, 2.0, "bilinear", false));
    assert!(
        e.contains("floating-point") && e.contains("bilinear"),
        "{e}"
    );
    let flat = Tensor::ones((4, 4), CPU).unwrap();
    let e = err(F::interpolate(&flat, 2.0, "nearest", false));
    assert!(
        e.contains("[N, C, L], [N, C, H, W] or [N, C, D, H, W]") && e.contains("[4, 4]"),
        "{e}"
    );
    // Each interpolating mode has its rank, as torch's.
    let e = err(F::interpolate(&x, 2.0, "linear", false));
    assert!(
        e.contains("got 4D input, but linear mode needs 3D input"),
        "{e}"
    );
    let e = err(F::interpolate(&x, 2.0, "trilinear", false));
    assert!(e.contains("trilinear mode needs 5D input"), "{e}");
    // One size per axis, or one for all.
    let e = err(F::interpolate(&x, (2, 3, 4), "nearest", false));
    assert!(
        e.contains("gives 3 sizes") && e.contains("2 spatial"),
        "{e}"
    );
}

#[test]
fn linear_bicubic_and_trilinear_keep_ramps_and_constants() {
    // A ramp stays a ramp under linear resizing with align_corners.
    let x = ramp(&[1, 1, 4]);
    let y = F::interpolate(&x, 7, "linear", true).unwrap();
    assert_eq!(
        y.to_vec::<f64>().unwrap(),
        [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    );
    // Cubic convolution reproduces constants everywhere and straight lines away from the
    // borders (torch's A = -0.75 weights sum to 1 and have first moment 0).
    let ones = Tensor::ones((1, 2, 5, 6), CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap();
    let y = F::interpolate(&ones, (9, 11), "bicubic", false).unwrap();
    assert!(y
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .all(|v| (v - 1.0).abs() < 1e-12));
    let cols = Tensor::arange(0.0, 8.0, CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .reshape([1, 1, 1, 8])
        .unwrap()
        .expand([1, 1, 4, 8])
        .unwrap()
        .contiguous()
        .unwrap();
    let y = F::interpolate(&cols, (4, 15), "bicubic", true).unwrap();
    let row = y.to_vec::<f64>().unwrap()[..15].to_vec();
    for (i, v) in row.iter().enumerate().skip(2).take(11) {
        assert!((v - i as f64 * 0.5).abs() < 1e-12, "column {i}: {v}");
    }
    // Bicubic overshoots at a step, as torch's does.
    let step = Tensor::from_vec(vec![0.0f64, 0.0, 1.0, 1.0], [1, 1, 1, 4], CPU).unwrap();
    let y = F::interpolate(&step, (1, 8), "bicubic", false).unwrap();
    let v = y.to_vec::<f64>().unwrap();
    assert!(
        v.iter().any(|&e| e < 0.0) && v.iter().any(|&e| e > 1.0),
        "{v:?}"
    );
    // Trilinear of a constant volume is constant; its gradient sums to the output's count.
    let vol = Tensor::full([1, 1, 2, 3, 3], 2.5, CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = F::interpolate(&vol, 2.0, "trilinear", false).unwrap();
    assert_eq!(y.shape(), [1, 1, 4, 6, 6]);
    assert!(y
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .all(|v| (v - 2.5).abs() < 1e-12));
    y.sum().unwrap().backward().unwrap();
    let g = vol.grad().unwrap().sum().unwrap().item::<f64>().unwrap();
    assert!((g - 144.0).abs() < 1e-9, "{g}");
}

#[test]
fn area_is_adaptive_average_pooling_and_nearest_takes_every_rank() {
    let x = Tensor::randn((2, 3, 7, 9), CPU).unwrap();
    let area = F::interpolate(&x, (3, 4), "area", false).unwrap();
    let pooled = F::adaptive_avg_pool2d(&x, (3, 4)).unwrap();
    assert!(area.allclose(&pooled, 1e-5, 1e-6).unwrap());
    let seq = Tensor::randn((2, 3, 10), CPU).unwrap();
    let area = F::interpolate(&seq, 4, "area", false).unwrap();
    assert!(area
        .allclose(&F::adaptive_avg_pool1d(&seq, 4).unwrap(), 1e-5, 1e-6)
        .unwrap());
    // Nearest on a sequence and a volume; integers too.
    let ints = Tensor::from_vec(vec![1i64, 2, 3], [1, 1, 3], CPU).unwrap();
    let y = F::interpolate(&ints, 2.0, "nearest", false).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), [1, 1, 2, 2, 3, 3]);
    let vol = ramp(&[1, 1, 2, 2, 2]);
    let y = F::interpolate(&vol, (4, 2, 2), "nearest", false).unwrap();
    assert_eq!(
        y.to_vec::<f64>().unwrap(),
        [0., 1., 2., 3., 0., 1., 2., 3., 4., 5., 6., 7., 4., 5., 6., 7.]
    );
    assert_eq!(
        Upsample::new(4).mode("trilinear").describe(),
        "Upsample(size=4, mode='trilinear')"
    );
    assert_eq!(
        Upsample::new((2.0, 1.0, 3.0)).describe(),
        "Upsample(scale_factor=(2.0, 1.0, 3.0), mode='nearest')"
    );
}
