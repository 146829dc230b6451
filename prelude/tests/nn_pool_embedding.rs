//! AvgPool2d, AdaptiveAvgPool2d and Embedding beyond what the parity harness compares with
//! torch value by value: the window arithmetic against plain loops, how the layers print and
//! chain, repeated indices' gradients, and the errors.
use gpulab::nn::{self, AdaptiveAvgPool2d, AvgPool2d, Embedding, Module, Sequential};
use gpulab::{fork_rng, DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n)
            .map(|i| ((i * 7) % 11) as f64 - 5.0)
            .collect::<Vec<_>>(),
        shape,
        CPU,
    )
    .unwrap()
}

/// Mean of `x[plane][r0..r1][c0..c1]` (an `[.., h, w]` tensor's values), divided by `count`.
fn window_mean(
    v: &[f64],
    plane: usize,
    h: usize,
    w: usize,
    r: (isize, isize),
    c: (isize, isize),
    count: f64,
) -> f64 {
    let mut sum = 0.0;
    for i in r.0..r.1 {
        for j in c.0..c.1 {
            if i >= 0 && j >= 0 && (i as usize) < h && (j as usize) < w {
                sum += v[plane * h * w + i as usize * w + j as usize];
            }
        }
    }
    sum / count
}

#[test]
fn avg_pool2d_matches_plain_loops_with_padding_counted() {
    let (n, c, h, w) = (2, 3, 6, 5);
    let x = ramp(&[n, c, h, w]);
    let v = x.to_vec::<f64>().unwrap();
    for (k, s, p) in [(2, 2, 0), (3, 1, 1), (3, 2, 1), (2, 1, 1), (4, 3, 2)] {
        let got = F::avg_pool2d(&x, k, s, p, false, true).unwrap();
        let (oh, ow) = ((h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1);
        assert_eq!(got.shape(), [n, c, oh, ow], "k{k} s{s} p{p}");
        let g = got.to_vec::<f64>().unwrap();
        for plane in 0..n * c {
            for y in 0..oh {
                for xo in 0..ow {
                    let r0 = (y * s) as isize - p as isize;
                    let c0 = (xo * s) as isize - p as isize;
                    let r = (r0, r0 + k as isize);
                    let cc = (c0, c0 + k as isize);
                    let want = window_mean(&v, plane, h, w, r, cc, (k * k) as f64);
                    let at = (plane * oh + y) * ow + xo;
                    assert!(
                        (g[at] - want).abs() < 1e-12,
                        "k{k} s{s} p{p} at {at}: {} vs {want}",
                        g[at]
                    );
                }
            }
        }
    }
}

#[test]
fn adaptive_avg_pool2d_uses_torchs_windows() {
    let (n, c, h, w) = (1, 2, 5, 7);
    let x = ramp(&[n, c, h, w]);
    let v = x.to_vec::<f64>().unwrap();
    for (oh, ow) in [(1, 1), (2, 3), (5, 7), (3, 4), (7, 9)] {
        let got = F::adaptive_avg_pool2d(&x, (oh, ow)).unwrap();
        assert_eq!(got.shape(), [n, c, oh, ow]);
        let g = got.to_vec::<f64>().unwrap();
        for plane in 0..n * c {
            for i in 0..oh {
                for j in 0..ow {
                    // floor(i * h / oh) .. ceil((i + 1) * h / oh), as torch's.
                    let r = ((i * h / oh) as isize, ((i + 1) * h).div_ceil(oh) as isize);
                    let cc = ((j * w / ow) as isize, ((j + 1) * w).div_ceil(ow) as isize);
                    let count = ((r.1 - r.0) * (cc.1 - cc.0)) as f64;
                    let want = window_mean(&v, plane, h, w, r, cc, count);
                    let at = (plane * oh + i) * ow + j;
                    assert!(
                        (g[at] - want).abs() < 1e-12,
                        "{oh}x{ow} at {at}: {} vs {want}",
                        g[at]
                    );
                }
            }
        }
    }
    // Where the grid divides the input evenly it is avg_pool2d with that kernel.
    let y = ramp(&[2, 2, 6, 6]);
    let a = F::adaptive_avg_pool2d(&y, (3, 3))
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let b = F::avg_pool2d(&y, 2, 2, 0, false, true)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn pooling_layers_print_chain_and_refuse_bad_input() {
    fork_rng(3, || {
        assert_eq!(
            AvgPool2d::new(3).stride(2).padding(1).describe(),
            "AvgPool2d(kernel_size=3, stride=2, padding=1)"
        );
        assert_eq!(
            AdaptiveAvgPool2d::new((1, 1)).describe(),
            "AdaptiveAvgPool2d(output_size=(1, 1))"
        );
        // Global average pooling makes the head independent of the picture size.
        let model = Sequential::new()
            .add(nn::Conv2d::new(3, 4, 3).padding(1))
            .add(AdaptiveAvgPool2d::new((1, 1)))
            .add(nn::Flatten)
            .add(nn::Linear::new(4, 2));
        for side in [8, 13] {
            let out = model
                .forward(&Tensor::randn((2, 3, side, side), CPU).unwrap())
                .unwrap();
            assert_eq!(out.shape(), [2, 2]);
        }
        let summary = model.summary_for([1, 3, 8, 8]).to_string();
        assert!(summary.contains("AdaptiveAvgPool2d"), "{summary}");

        let ints = Tensor::zeros_dtype((1, 1, 4, 4), DType::I64, CPU).unwrap();
        let e = AvgPool2d::new(2).forward(&ints).unwrap_err().to_string();
        assert!(e.contains("avg_pool2d") && e.contains("int64"), "{e}");
        let e = F::avg_pool2d(&ramp(&[1, 1, 4, 4]), 2, 2, 2, false, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("padding 2 is more than half the kernel size 2"),
            "{e}"
        );
        let e = AvgPool2d::new(2)
            .forward(&ramp(&[4, 4]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("avg_pool2d") && e.contains("[4, 4]"), "{e}");
        let e = AdaptiveAvgPool2d::new((2, 2))
            .forward(&ramp(&[1, 1, 0, 4]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("height and width must not be 0"), "{e}");
        // Half types are summed in float32 and rounded once.
        let h = ramp(&[1, 1, 4, 4]).to_dtype(DType::F16).unwrap();
        let p = F::adaptive_avg_pool2d(&h, (1, 1)).unwrap();
        assert_eq!(p.dtype(), DType::F16);
    })
}

#[test]
fn embedding_looks_up_rows_and_adds_gradients_of_repeats() {
    fork_rng(4, || {
        let emb = Embedding::new(6, 3);
        assert_eq!(emb.describe(), "Embedding(6, 3)");
        assert_eq!(emb.num_parameters(), 18);
        let table = emb.weight.tensor().to_vec::<f32>().unwrap();
        let idx = Tensor::from_vec(vec![5i64, 0, 5, 2], (2, 2), CPU).unwrap();
        let out = emb.forward(&idx).unwrap();
        assert_eq!(out.shape(), [2, 2, 3]);
        let got = out.to_vec::<f32>().unwrap();
        for (k, &i) in [5usize, 0, 5, 2].iter().enumerate() {
            assert_eq!(got[k * 3..k * 3 + 3], table[i * 3..i * 3 + 3]);
        }
        out.sum().unwrap().backward().unwrap();
        let g = emb.weight.grad().unwrap().to_vec::<f32>().unwrap();
        // Row 5 was read twice, rows 0 and 2 once, the rest never.
        let per_row: Vec<f32> = (0..6).map(|r| g[r * 3]).collect();
        assert_eq!(per_row, [1.0, 0.0, 1.0, 0.0, 0.0, 2.0]);
        // int32 indices too; a 0-d index gives one vector.
        let one = Tensor::from_vec(vec![2i32], (), CPU).unwrap();
        assert_eq!(emb.forward(&one).unwrap().shape(), [3]);

        let e = emb
            .forward(&Tensor::from_vec(vec![1i64, 6], 2, CPU).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("index 6 is out of range") && e.contains("takes indices 0..6"),
            "{e}"
        );
        let e = emb.forward(&ramp(&[2])).unwrap_err().to_string();
        assert!(e.contains("int64 or int32 indices, got float64"), "{e}");
        let e = F::embedding(&idx, &ramp(&[6])).unwrap_err().to_string();
        assert!(e.contains("expected a 2-D weight"), "{e}");
    })
}

#[test]
fn max_pool2d_pads_with_values_that_never_win() {
    // All negative, so a zero padding would win every border window: -inf must not.
    let x = ramp(&[1, 1, 5, 5]).neg().unwrap().sub(1.0).unwrap();
    let v = x.to_vec::<f64>().unwrap();
    let pool = nn::MaxPool2d::new(3).stride(2).padding(1);
    assert_eq!(
        pool.describe(),
        "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"
    );
    let y = pool.forward(&x).unwrap();
    assert_eq!(y.shape(), &[1, 1, 3, 3]);
    let got = y.to_vec::<f64>().unwrap();
    for oy in 0..3 {
        for ox in 0..3 {
            let mut best = f64::NEG_INFINITY;
            for i in 0..3 {
                for j in 0..3 {
                    let (iy, ix) = (2 * oy as isize - 1 + i, 2 * ox as isize - 1 + j);
                    if (0..5).contains(&iy) && (0..5).contains(&ix) {
                        best = best.max(v[(iy * 5 + ix) as usize]);
                    }
                }
            }
            assert_eq!(got[oy * 3 + ox], best, "window ({oy}, {ox})");
        }
    }
    // Integers pad with their lowest value, so they keep their own maxima too.
    let xi = x.to_dtype(DType::I64).unwrap();
    let yi = F::max_pool2d(&xi, 3, 2, 1, 1, false).unwrap();
    assert_eq!(yi.dtype(), DType::I64);
    let want: Vec<i64> = got.iter().map(|&g| g as i64).collect();
    assert_eq!(yi.to_vec::<i64>().unwrap(), want);
    // torch's limit: padding at most half the kernel.
    let e = F::max_pool2d(&x, 3, 1, 2, 1, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("padding 2 is more than half the kernel size 3"),
        "{e}"
    );
}
