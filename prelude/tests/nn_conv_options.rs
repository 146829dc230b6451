//! conv2d's torch arguments beyond a square kernel: (h, w) pairs, dilation, groups, padding
//! "same"/"valid", no bias; and the transposed convolution (conv_transpose2d, ConvTranspose2d).
//! Outputs against the convolution's definition written as plain loops in f64, on both CPU
//! paths (the fused one floats take, and the composed gather + matmul one that integers and
//! CUDA take); the layers' reprs against torch's; bad arguments named.
//! (Gradients: `autograd_gradcheck.rs`; values and gradients against torch itself:
//! `bench/torch_parity.py`'s `nn conv` and `nn convT` cases.)

use gpulab::nn::{self, Conv2d, ConvTranspose2d, Module, Padding};
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
        // Floats take the CPU's fused path (halves through float32), integers the composed
        // gather + matmul one (what CUDA runs for every dtype).
        for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64] {
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
    // The strings below are what torch 2.9 prints for the same layers.
    let fancy = Conv2d::new(4, 8, (3, 5))
        .padding("same")
        .dilation(2)
        .groups(4);
    assert_eq!(
        fancy.describe(),
        "Conv2d(4, 8, kernel_size=(3, 5), stride=(1, 1), padding=same, dilation=(2, 2), \
         groups=4)"
    );
    assert_eq!(
        Conv2d::new(4, 8, (3, 5))
            .stride((1, 2))
            .padding((1, 0))
            .dilation((2, 1))
            .groups(4)
            .describe(),
        "Conv2d(4, 8, kernel_size=(3, 5), stride=(1, 2), padding=(1, 0), dilation=(2, 1), \
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

/// One transposed convolution: input, weight `[C_in, C_out/g, kh, kw]`, stride, padding,
/// output padding, groups, dilation.
type Transposed = (
    [usize; 4],
    [usize; 4],
    (usize, usize),
    (usize, usize),
    (usize, usize),
    usize,
    (usize, usize),
);

/// The definition: every input pixel (b, c, y, x) adds `x * w[c, o, i, j]` to output pixel
/// (b, g*C_out/g + o, y*sh - ph + i*dh, x*sw - pw + j*dw) where that lies inside the output.
fn transposed_reference(
    t: &Transposed,
    x: &[f64],
    w: &[f64],
    bias: &[f64],
) -> (Vec<usize>, Vec<f64>) {
    let ([n, cin, h, wd], [_, og, kh, kw], (sh, sw), (ph, pw), (oph, opw), groups, (dh, dw)) = *t;
    let oh = (h - 1) * sh + dh * (kh - 1) + oph + 1 - 2 * ph;
    let ow = (wd - 1) * sw + dw * (kw - 1) + opw + 1 - 2 * pw;
    let (cg, cout) = (cin / groups, og * groups);
    let mut out = vec![0.0; n * cout * oh * ow];
    for b in 0..n {
        for oc in 0..cout {
            for p in 0..oh * ow {
                out[(b * cout + oc) * oh * ow + p] = bias[oc];
            }
        }
        for c in 0..cin {
            let g = c / cg;
            for y in 0..h {
                for xi in 0..wd {
                    let v = x[((b * cin + c) * h + y) * wd + xi];
                    for o in 0..og {
                        for i in 0..kh {
                            for j in 0..kw {
                                let yo = (y * sh + i * dh) as isize - ph as isize;
                                let xo = (xi * sw + j * dw) as isize - pw as isize;
                                if yo < 0 || xo < 0 || yo >= oh as isize || xo >= ow as isize {
                                    continue;
                                }
                                let oc = g * og + o;
                                out[((b * cout + oc) * oh + yo as usize) * ow + xo as usize] +=
                                    v * w[((c * og + o) * kh + i) * kw + j];
                            }
                        }
                    }
                }
            }
        }
    }
    (vec![n, cout, oh, ow], out)
}

#[test]
fn conv_transpose2d_matches_its_definition_on_both_cpu_paths() {
    let cases: [Transposed; 6] = [
        // A decoder's doubling: kernel 2, stride 2.
        (
            [2, 3, 4, 5],
            [3, 2, 2, 2],
            (2, 2),
            (0, 0),
            (0, 0),
            1,
            (1, 1),
        ),
        // Kernel 3, stride 2, padding 1, output padding 1 (exactly double as well).
        (
            [1, 2, 4, 4],
            [2, 3, 3, 3],
            (2, 2),
            (1, 1),
            (1, 1),
            1,
            (1, 1),
        ),
        // Per-axis everything, dilated.
        (
            [1, 2, 3, 5],
            [2, 2, 3, 2],
            (3, 1),
            (2, 0),
            (2, 0),
            1,
            (2, 3),
        ),
        // Groups, and a padding beyond the dilated kernel's reach (the spread input is cut).
        (
            [2, 4, 5, 4],
            [4, 1, 3, 3],
            (2, 1),
            (3, 1),
            (0, 0),
            2,
            (1, 1),
        ),
        // Stride 1: the adjoint of a "valid" convolution, growing by k - 1.
        (
            [1, 2, 3, 3],
            [2, 3, 4, 2],
            (1, 1),
            (0, 0),
            (0, 0),
            1,
            (1, 1),
        ),
        // Depthwise.
        (
            [1, 3, 4, 4],
            [3, 1, 2, 3],
            (2, 2),
            (0, 1),
            (1, 0),
            3,
            (1, 1),
        ),
    ];
    for (k, case) in cases.iter().enumerate() {
        let (xs, ws) = (case.0, case.1);
        let cout = ws[1] * case.5;
        let (xv, wv, bv) = (
            ints(xs.iter().product(), k),
            ints(ws.iter().product(), k + 3),
            ints(cout, k + 5),
        );
        let (shape, want) = transposed_reference(case, &xv, &wv, &bv);
        for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64] {
            let t = |v: &[f64], s: &[usize]| {
                Tensor::from_vec(v.to_vec(), s.to_vec(), CPU)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
            };
            let got = F::conv_transpose2d(
                &t(&xv, &xs),
                &t(&wv, &ws),
                Some(&t(&bv, &[cout])),
                case.2,
                case.3,
                case.4,
                case.5,
                case.6,
            )
            .unwrap_or_else(|e| panic!("case {k} {dtype:?}: {e}"));
            assert_eq!(got.shape(), shape, "case {k} {dtype:?}");
            let got = got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert_eq!(got, want, "case {k} {dtype:?}");
        }
    }
}

/// conv_transpose2d is conv2d's adjoint: <conv2d(x, w), y> = <x, conv_transpose2d(y, w)> for
/// the same stride, padding, dilation and groups; and the gradient conv2d sends to its input
/// is conv_transpose2d of the output's gradient.
#[test]
fn conv_transpose2d_is_the_adjoint_of_conv2d() {
    let x = Tensor::from_vec(ints(2 * 4 * 9 * 8, 7), [2, 4, 9, 8], CPU).unwrap();
    let w = Tensor::from_vec(ints(6 * 2 * 3 * 2, 8), [6, 2, 3, 2], CPU).unwrap();
    let (stride, pad, dil) = ((2, 3), (1, 2), (2, 1));
    let y = F::conv2d(&x, &w, None, stride, pad, dil, 2).unwrap();
    let g = Tensor::from_vec(ints(y.numel(), 9), y.shape().to_vec(), CPU).unwrap();
    // conv2d shrinks 9 -> 4 rows and 8 -> 4 columns; transposed, those need output padding
    // to reach 9 and 8 again.
    let (oph, opw) = (
        (9 + 2 * pad.0 - dil.0 * 2 - 1) % stride.0,
        (8 + 2 * pad.1 - dil.1 - 1) % stride.1,
    );
    let back = F::conv_transpose2d(&g, &w, None, stride, pad, (oph, opw), 2, dil).unwrap();
    assert_eq!(back.shape(), x.shape());
    let lhs: f64 = y.mul(&g).unwrap().sum().unwrap().item().unwrap();
    let rhs: f64 = x.mul(&back).unwrap().sum().unwrap().item().unwrap();
    assert_eq!(lhs, rhs);

    let xg = x.requires_grad_(true).unwrap();
    let y = F::conv2d(&xg, &w, None, stride, pad, dil, 2).unwrap();
    y.mul(&g).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(
        xg.grad().unwrap().to_vec::<f64>().unwrap(),
        back.to_vec::<f64>().unwrap()
    );
}

#[test]
fn the_transposed_layer_upsamples_prints_like_torch_and_refuses_bad_input() {
    // The strings are torch 2.9's for the same layers.
    let up = ConvTranspose2d::new(16, 8, 3)
        .stride(2)
        .padding(1)
        .output_padding(1);
    assert_eq!(
        up.describe(),
        "ConvTranspose2d(16, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), \
         output_padding=(1, 1))"
    );
    assert_eq!(up.weight.tensor().shape(), &[16, 8, 3, 3]);
    let x = Tensor::ones((2, 16, 5, 7), CPU).unwrap();
    assert_eq!(up.forward(&x).unwrap().shape(), &[2, 8, 10, 14]);
    let odd = ConvTranspose2d::new(16, 8, (2, 4))
        .stride((2, 1))
        .dilation(2)
        .groups(4)
        .bias(false);
    assert_eq!(
        odd.describe(),
        "ConvTranspose2d(16, 8, kernel_size=(2, 4), stride=(2, 1), dilation=(2, 2), groups=4, \
         bias=False)"
    );
    assert_eq!(odd.weight.tensor().shape(), &[16, 2, 2, 4]);
    assert_eq!(odd.parameters().len(), 1);
    // torch's fan-in for a transposed weight is its second size times the kernel: 2 * 8.
    let bound = 1.0 / 16f64.sqrt();
    assert!(odd
        .weight
        .tensor()
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| (*v as f64).abs() <= bound));
    let doubling = ConvTranspose2d::new(4, 8, 2).stride(2);
    assert_eq!(
        doubling.describe(),
        "ConvTranspose2d(4, 8, kernel_size=(2, 2), stride=(2, 2))"
    );
    assert_eq!(
        doubling
            .forward(&Tensor::ones((1, 4, 5, 5), CPU).unwrap())
            .unwrap()
            .shape(),
        &[1, 8, 10, 10]
    );

    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let e = err(doubling.forward(&Tensor::ones((1, 3, 5, 5), CPU).unwrap()));
    assert!(e.contains("expected input of shape [N, 4, H, W]"), "{e}");
    let w = Tensor::ones((4, 2, 3, 3), CPU).unwrap();
    let x = Tensor::ones((1, 4, 5, 5), CPU).unwrap();
    let e = err(F::conv_transpose2d(&x, &w, None, 2, 0, 2, 1, 1));
    assert!(e.contains("output_padding (2, 2) must be smaller"), "{e}");
    let e = err(F::conv_transpose2d(&x, &w, None, 1, 4, 0, 1, 1));
    assert!(e.contains("leaves no output height"), "{e}");
    let e = err(F::conv_transpose2d(&x, &w, None, 1, 0, 0, 3, 1));
    assert!(e.contains("got groups 3"), "{e}");
    let e = err(F::conv_transpose2d(&x, &w, None, 0, 0, 0, 1, 1));
    assert!(e.contains("must be positive"), "{e}");
    let b = Tensor::ones(4, CPU).unwrap();
    // One group: 2 output channels (the weight's second size), so a bias of 4 is wrong.
    let e = err(F::conv_transpose2d(&x, &w, Some(&b), 1, 0, 0, 1, 1));
    assert!(e.contains("bias of shape [2]") && e.contains("[4]"), "{e}");
}

/// The 1-D layers and im2col: torch's reprs (read off torch 2.9), shapes and parameters; the
/// values are compared with torch's in bench/torch_parity.py (`more conv1d*`, `unfold*`).
#[test]
fn one_dimensional_layers_and_unfold_print_and_shape_as_torch() {
    use gpulab::nn::{AvgPool1d, Conv1d, Fold, MaxPool1d, Unfold};
    let c = Conv1d::new(4, 8, 3);
    assert_eq!(c.describe(), "Conv1d(4, 8, kernel_size=(3,), stride=(1,))");
    let c2 = Conv1d::new(4, 8, 3)
        .stride(2)
        .padding(1)
        .dilation(2)
        .groups(2)
        .bias(false);
    assert_eq!(
        c2.describe(),
        "Conv1d(4, 8, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), groups=2, \
         bias=False)"
    );
    assert_eq!(
        Conv1d::new(4, 8, 3).padding("same").describe(),
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=same)"
    );
    assert_eq!(c2.weight.shape(), vec![8, 2, 3]);
    let names: Vec<String> = c.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    let x = Tensor::randn((2, 4, 10), Device::Cpu).unwrap();
    assert_eq!(c.forward(&x).unwrap().shape(), &[2, 8, 8]);
    assert_eq!(c2.forward(&x).unwrap().shape(), &[2, 8, 4]);
    let e = c
        .forward(&Tensor::randn((2, 3, 10), Device::Cpu).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("[N, 4, L]"), "{e}");
    assert_eq!(
        MaxPool1d::new(2).describe(),
        "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    );
    assert_eq!(
        AvgPool1d::new(3).stride(1).padding(1).describe(),
        "AvgPool1d(kernel_size=(3,), stride=(1,), padding=(1,))"
    );
    assert_eq!(MaxPool1d::new(2).forward(&x).unwrap().shape(), &[2, 4, 5]);
    assert_eq!(
        Unfold::new((2, 3)).padding(1).stride(2).describe(),
        "Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=2)"
    );
    assert_eq!(
        Fold::new(4, 2).describe(),
        "Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=1)"
    );
    // unfold then fold with non-overlapping windows gives the image back; the columns of a
    // convolution times its weight matrix are the convolution.
    let img = Tensor::randn((2, 3, 4, 4), Device::Cpu).unwrap();
    let cols = F::unfold(&img, 2, 1, 0, 2).unwrap();
    assert_eq!(cols.shape(), &[2, 12, 4]);
    assert_eq!(cols.grad_fn(), None);
    let back = F::fold(&cols, 4, 2, 1, 0, 2).unwrap();
    assert!(back.allclose(&img, 0.0, 0.0).unwrap());
    let w = Tensor::randn((5, 3, 3, 3), Device::Cpu).unwrap();
    let conv = F::conv2d(&img, &w, None, 1, 1, 1, 1).unwrap();
    let cols = F::unfold(&img, 3, 1, 1, 1).unwrap();
    let by_matmul = w
        .reshape([5, 27])
        .unwrap()
        .matmul(&cols)
        .unwrap()
        .reshape([2, 5, 4, 4])
        .unwrap();
    assert!(by_matmul.allclose(&conv, 1e-4, 1e-5).unwrap());
    let e = F::fold(&cols, 5, 3, 1, 1, 1).unwrap_err().to_string();
    assert!(e.contains("25 windows") && e.contains("16"), "{e}");
}

#[test]
fn an_empty_image_is_refused_even_when_padding_would_give_an_output() {
    // Found by the no_panics sweep: the CPU's fused convolution sent zero-sized chunks to
    // rayon in its backward. torch 2.9 refuses such an input ("Only zero batch or zero
    // channel inputs are supported"), and so does gpulab, naming the shape.
    let x = Tensor::zeros([1, 1, 0, 3], Device::Cpu).unwrap();
    let w = Tensor::ones([2, 1, 1, 1], Device::Cpu).unwrap();
    let e = F::conv2d(&x, &w, None, 1, 1, 1, 1).unwrap_err().to_string();
    assert!(
        e.contains("only an empty batch or no channels") && e.contains("[1, 1, 0, 3]"),
        "{e}"
    );
    // An empty batch is fine.
    let y = F::conv2d(
        &Tensor::zeros([0, 1, 4, 3], Device::Cpu).unwrap(),
        &w,
        None,
        1,
        1,
        1,
        1,
    )
    .unwrap();
    assert_eq!(y.shape(), [0, 2, 6, 5]);
}
