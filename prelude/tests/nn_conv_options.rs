//! conv2d's torch arguments beyond a square kernel: (h, w) pairs, dilation, groups, padding
//! "same"/"valid", no bias. Outputs against the convolution's definition written as plain
//! loops in f64, on both CPU paths (the fused f32/f64 one and the composed gather + matmul one
//! that half types and CUDA take); the layer's repr against torch's; bad arguments named.
//! (Gradients: `autograd_gradcheck.rs`; values and gradients against torch itself:
//! `bench/torch_parity.py`'s `nn conv` cases.)

use gpulab::nn::{self, Conv2d, Module, Padding};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

/// One convolution's arguments: input, weight, stride, padding (before/after per axis as
/// the definition needs it, and as given to conv2d), dilation, groups.
struct Case {
    x: [usize; 4],
    w: [usize; 4],
    stride: (usize, usize),
    pads: [usize; 4],
    padding: Padding,
    dilation: (usize, usize),
    groups: usize,
}

/// The definition: out[b, o, y, x] = bias[o] + sum over the group's channels c and taps
/// (i, j) of in[b, g*C/groups + c, y*sh + i*dh - top, x*sw + j*dw - left] * w[o, c, i, j].
fn reference(c: &Case, x: &[f64], w: &[f64], bias: &[f64]) -> (Vec<usize>, Vec<f64>) {
    let [n, ch, h, wd] = c.x;
    let [o, cg, kh, kw] = c.w;
    let [pt, pb, pl, pr] = c.pads;
    let (sh, sw) = c.stride;
    let (dh, dw) = c.dilation;
    let oh = (h + pt + pb - dh * (kh - 1) - 1) / sh + 1;
    let ow = (wd + pl + pr - dw * (kw - 1) - 1) / sw + 1;
    let og = o / c.groups;
    let mut out = vec![0.0; n * o * oh * ow];
    for b in 0..n {
        for oc in 0..o {
            let g = oc / og;
            for y in 0..oh {
                for xo in 0..ow {
                    let mut s = bias[oc];
                    for ci in 0..cg {
                        let cin = g * cg + ci;
                        for i in 0..kh {
                            for j in 0..kw {
                                let iy = (y * sh + i * dh) as isize - pt as isize;
                                let ix = (xo * sw + j * dw) as isize - pl as isize;
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                    continue;
                                }
                                let xv = x[((b * ch + cin) * h + iy as usize) * wd + ix as usize];
                                s += xv * w[((oc * cg + ci) * kh + i) * kw + j];
                            }
                        }
                    }
                    out[((b * o + oc) * oh + y) * ow + xo] = s;
                }
            }
        }
    }
    (vec![n, o, oh, ow], out)
}

/// Small integers (exact in every float dtype, and their sums of products too).
fn ints(n: usize, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7 + salt * 13) % 5) as f64 - 2.0)
        .collect()
}

fn cases() -> Vec<Case> {
    let c = |x, w, stride, pads, padding: Padding, dilation, groups| Case {
        x,
        w,
        stride,
        pads,
        padding,
        dilation,
        groups,
    };
    vec![
        // A rectangular kernel with a stride and padding per axis.
        c(
            [2, 3, 7, 9],
            [4, 3, 3, 2],
            (2, 1),
            [1, 1, 0, 0],
            (1, 0).into(),
            (1, 1),
            1,
        ),
        // Dilation (the taps spread, the padding keeps the size).
        c(
            [1, 2, 8, 8],
            [3, 2, 3, 3],
            (1, 1),
            [2; 4],
            2.into(),
            (2, 2),
            1,
        ),
        c(
            [2, 2, 9, 7],
            [2, 2, 3, 2],
            (2, 3),
            [1, 1, 2, 2],
            (1, 2).into(),
            (3, 2),
            1,
        ),
        // Groups: two, and depthwise (one input channel per group, two outputs each).
        c(
            [2, 4, 6, 6],
            [6, 2, 3, 3],
            (1, 1),
            [1; 4],
            1.into(),
            (1, 1),
            2,
        ),
        c(
            [1, 3, 7, 6],
            [6, 1, 3, 3],
            (2, 2),
            [1; 4],
            1.into(),
            (1, 2),
            3,
        ),
        // "same": odd kernel; even kernel (the extra zero row and column after), dilated.
        c(
            [1, 2, 6, 5],
            [3, 2, 3, 3],
            (1, 1),
            [1; 4],
            "same".into(),
            (1, 1),
            1,
        ),
        c(
            [2, 2, 5, 6],
            [3, 2, 2, 4],
            (1, 1),
            [0, 1, 3, 3],
            "same".into(),
            (1, 2),
            1,
        ),
        c(
            [1, 2, 6, 6],
            [2, 2, 4, 4],
            (1, 1),
            [1, 2, 1, 2],
            "same".into(),
            (1, 1),
            1,
        ),
        // "valid" is no padding.
        c(
            [1, 2, 6, 5],
            [3, 2, 3, 3],
            (1, 1),
            [0; 4],
            "valid".into(),
            (1, 1),
            1,
        ),
    ]
}

#[test]
fn every_option_matches_the_definition_on_both_cpu_paths() {
    for (k, case) in cases().into_iter().enumerate() {
        let nx: usize = case.x.iter().product();
        let nw: usize = case.w.iter().product();
        let (xv, wv, bv) = (ints(nx, k), ints(nw, k + 1), ints(case.w[0], k + 2));
        let (shape, want) = reference(&case, &xv, &wv, &bv);
        // f64 and f32 take the fused path; f16 and bf16 the composed one (what CUDA runs).
        for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16] {
            let t = |v: &[f64], s: &[usize]| {
                Tensor::from_vec(v.to_vec(), s.to_vec(), CPU)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
            };
            let b = t(&bv, &case.w[..1]);
            let got = F::conv2d(
                &t(&xv, &case.x),
                &t(&wv, &case.w),
                Some(&b),
                case.stride,
                case.padding.clone(),
                case.dilation,
                case.groups,
            )
            .unwrap_or_else(|e| panic!("case {k} {dtype:?}: {e}"));
            assert_eq!(got.shape(), shape, "case {k} {dtype:?}");
            assert_eq!(got.dtype(), dtype);
            let got = got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert_eq!(got, want, "case {k} {dtype:?}");
        }
    }
}

/// A view as input (a non-contiguous slice of channels) gives what its contiguous copy does,
/// and `groups` over a view works too.
#[test]
fn non_contiguous_input_and_grouped_gradients_reach_every_channel() {
    let base = Tensor::from_vec(ints(2 * 6 * 5 * 5, 1), [2, 6, 5, 5], CPU).unwrap();
    let view = base.narrow(1, 1, 4).unwrap().transpose(2, 3).unwrap();
    let dense = view.contiguous().unwrap();
    let w = Tensor::from_vec(ints(4 * 2 * 3 * 3, 2), [4, 2, 3, 3], CPU).unwrap();
    let a = F::conv2d(&view, &w, None, 1, 1, (1, 2), 2).unwrap();
    let b = F::conv2d(&dense, &w, None, 1, 1, (1, 2), 2).unwrap();
    assert_eq!(
        a.to_vec::<f64>().unwrap(),
        b.to_vec::<f64>().unwrap(),
        "a view convolves as its copy"
    );

    // Every weight of every group gets a gradient, and the bias's is the output count.
    let x = dense.requires_grad_(true).unwrap();
    let w = w.requires_grad_(true).unwrap();
    let bias = Tensor::zeros(4, CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = F::conv2d(&x, &w, Some(&bias), 1, 1, (1, 2), 2).unwrap();
    y.sum().unwrap().backward().unwrap();
    let per_channel = (y.numel() / 4) as f64;
    assert_eq!(
        bias.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![per_channel; 4]
    );
    let gw = w.grad().unwrap().to_vec::<f64>().unwrap();
    for oc in 0..4 {
        assert!(
            gw[oc * 18..(oc + 1) * 18].iter().any(|v| *v != 0.0),
            "output channel {oc}'s weight got no gradient"
        );
    }
    assert_eq!(x.grad().unwrap().shape(), x.shape());
}

#[test]
fn the_layer_prints_like_torch_and_shapes_its_weight() {
    let plain = Conv2d::new(3, 64, 3);
    assert_eq!(
        plain.describe(),
        "Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1))"
    );
    let resnet = Conv2d::new(3, 64, 7).stride(2).padding(3).bias(false);
    assert_eq!(
        resnet.describe(),
        "Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)"
    );
    assert!(resnet.bias.is_none());
    assert_eq!(resnet.parameters().len(), 1);
    let fancy = Conv2d::new(4, 8, (3, 5))
        .stride((1, 2))
        .padding("same")
        .dilation(2)
        .groups(4);
    assert_eq!(
        fancy.describe(),
        "Conv2d(4, 8, kernel_size=(3, 5), stride=(1, 2), padding=same, dilation=(2, 2), \
         groups=4)"
    );
    assert_eq!(fancy.weight.tensor().shape(), &[8, 1, 3, 5]);
    // Kaiming-uniform with fan-in in / groups * kh * kw = 15.
    let bound = 1.0 / 15f64.sqrt();
    let w = fancy.weight.tensor().to_vec::<f32>().unwrap();
    assert!(w.iter().all(|v| (*v as f64).abs() <= bound));
    assert!(w.iter().any(|v| (*v as f64).abs() > bound / 2.0));

    let same = Conv2d::new(2, 3, 4).padding("same").bias(false);
    let x = Tensor::ones((1, 2, 7, 6), CPU).unwrap();
    assert_eq!(same.forward(&x).unwrap().shape(), &[1, 3, 7, 6]);
    let depthwise = Conv2d::new(3, 3, 3).padding(1).groups(3);
    let x = Tensor::ones((2, 3, 5, 5), CPU).unwrap();
    assert_eq!(depthwise.forward(&x).unwrap().shape(), &[2, 3, 5, 5]);
    let model = nn::Sequential::new().add(depthwise).add(nn::Flatten);
    let shown = model.describe();
    assert!(shown.contains("groups=3"), "{shown}");
}

#[test]
fn bad_arguments_are_named() {
    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let x = Tensor::ones((1, 4, 6, 6), CPU).unwrap();
    let w = Tensor::ones((4, 2, 3, 3), CPU).unwrap();
    let e = err(F::conv2d(&x, &w, None, 2, "same", 1, 2));
    assert!(
        e.contains("\"same\" needs stride 1") && e.contains("(2, 2)"),
        "{e}"
    );
    let e = err(F::conv2d(&x, &w, None, 1, "full", 1, 2));
    assert!(e.contains("\"same\" or \"valid\", got \"full\""), "{e}");
    let e = err(F::conv2d(&x, &w, None, 1, 0, 1, 3));
    assert!(e.contains("groups") && e.contains("got groups 3"), "{e}");
    let e = err(F::conv2d(&x, &w, None, 1, 0, 1, 0));
    assert!(e.contains("groups must be positive"), "{e}");
    let e = err(F::conv2d(&x, &w, None, 1, 0, 1, 1));
    assert!(
        e.contains("expected input [N, 2, H, W]") && e.contains("[1, 4, 6, 6]"),
        "{e}"
    );
    let w4 = Tensor::ones((4, 1, 3, 3), CPU).unwrap();
    let e = err(F::conv2d(&x, &w4, None, 1, 0, 1, 2));
    assert!(e.contains("1 channels times 2 groups"), "{e}");
    let e = err(F::conv2d(&x, &w, None, 1, 0, 3, 2));
    assert!(e.contains("kernel (3, 7 wide with dilation 3)"), "{e}");
    let e = err(F::conv2d(&x, &w, None, (1, 0), 0, 1, 2));
    assert!(
        e.contains("stride must be positive") || e.contains("stride 0"),
        "{e}"
    );
    let b = Tensor::ones(3, CPU).unwrap();
    let e = err(F::conv2d(&x, &w, Some(&b), 1, 0, 1, 2));
    assert!(e.contains("bias of shape [4]") && e.contains("[3]"), "{e}");
    // The layer checks its channels before anything runs.
    let layer = Conv2d::new(4, 6, 3).groups(4);
    let e = err(layer.forward(&x));
    assert!(e.contains("groups=4"), "{e}");
}
