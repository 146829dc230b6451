//! The 3-D layers: conv3d against a direct six-fold loop, the 3-D pools against theirs, the
//! layers' parameters, reprs and errors, BatchNorm3d / InstanceNorm3d / Dropout3d. (Their
//! values and gradients in every dtype are checked against torch by
//! tests/test_torch_parity.py, their gradients against finite differences by
//! autograd_gradcheck.rs.)

use gpulab::nn::{self, Module};
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], m: usize, scale: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 7 + 3) % m) as f64 * scale - 1.0)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), CPU).unwrap()
}

fn err(r: gpulab::error::Result<Tensor>) -> String {
    r.map(|t| format!("no error: a tensor of shape {:?}", t.shape()))
        .unwrap_or_else(|e| e.to_string())
}

/// conv3d by its definition: every output a sum over channels of the group and kernel taps.
#[allow(clippy::too_many_arguments)]
fn conv3d_loops(
    x: &[f64],
    [n, c, d, h, w]: [usize; 5],
    wt: &[f64],
    [o, cg, kd, kh, kw]: [usize; 5],
    s: [usize; 3],
    p: [usize; 3],
    dl: [usize; 3],
    groups: usize,
) -> (Vec<f64>, [usize; 3]) {
    let out = |len: usize, k: usize, i: usize| (len + 2 * p[i] - dl[i] * (k - 1) - 1) / s[i] + 1;
    let (od, oh, ow) = (out(d, kd, 0), out(h, kh, 1), out(w, kw, 2));
    let og = o / groups;
    let mut y = vec![0.0; n * o * od * oh * ow];
    for b in 0..n {
        for oc in 0..o {
            let g = oc / og;
            for z in 0..od {
                for r in 0..oh {
                    for q in 0..ow {
                        let mut acc = 0.0;
                        for ci in 0..cg {
                            let ch = g * cg + ci;
                            for a in 0..kd {
                                for bb in 0..kh {
                                    for cc in 0..kw {
                                        let iz = (z * s[0] + a * dl[0]) as isize - p[0] as isize;
                                        let iy = (r * s[1] + bb * dl[1]) as isize - p[1] as isize;
                                        let ix = (q * s[2] + cc * dl[2]) as isize - p[2] as isize;
                                        if iz < 0 || iy < 0 || ix < 0 {
                                            continue;
                                        }
                                        let (iz, iy, ix) = (iz as usize, iy as usize, ix as usize);
                                        if iz >= d || iy >= h || ix >= w {
                                            continue;
                                        }
                                        let xv = x[(((b * c + ch) * d + iz) * h + iy) * w + ix];
                                        let wv =
                                            wt[(((oc * cg + ci) * kd + a) * kh + bb) * kw + cc];
                                        acc += xv * wv;
                                    }
                                }
                            }
                        }
                        y[(((b * o + oc) * od + z) * oh + r) * ow + q] = acc;
                    }
                }
            }
        }
    }
    (y, [od, oh, ow])
}

#[test]
fn conv3d_is_the_sum_over_channels_and_taps() {
    for (xs, ws, s, p, dl, g) in [
        (
            [1, 2, 3, 4, 4],
            [3, 2, 2, 3, 3],
            [1, 1, 1],
            [0, 0, 0],
            [1, 1, 1],
            1,
        ),
        (
            [2, 2, 5, 5, 4],
            [2, 2, 3, 3, 3],
            [2, 2, 1],
            [1, 1, 0],
            [1, 1, 1],
            1,
        ),
        (
            [1, 4, 6, 5, 5],
            [4, 2, 2, 2, 3],
            [2, 1, 2],
            [1, 0, 1],
            [2, 1, 1],
            2,
        ),
    ] {
        let x = ramp(&xs, 11, 0.25);
        let w = ramp(&ws, 7, 0.5);
        let y = F::conv3d(&x, &w, None, s, p, dl, g).unwrap();
        let (want, [od, oh, ow]) = conv3d_loops(
            &x.to_vec::<f64>().unwrap(),
            xs,
            &w.to_vec::<f64>().unwrap(),
            ws,
            s,
            p,
            dl,
            g,
        );
        assert_eq!(y.shape(), [xs[0], ws[0], od, oh, ow], "{xs:?} {ws:?}");
        let got = y.to_vec::<f64>().unwrap();
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() < 1e-12,
                "{xs:?} {ws:?}: element {i}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn conv3d_of_one_frame_is_conv2d_and_same_keeps_the_size() {
    let x = ramp(&[2, 3, 1, 5, 6], 13, 0.2);
    let w = ramp(&[4, 3, 1, 3, 3], 5, 0.3);
    let b = ramp(&[4], 3, 0.5);
    let y3 = F::conv3d(&x, &w, Some(&b), 1, (0, 1, 1), 1, 1).unwrap();
    let y2 = F::conv2d(
        &x.squeeze(2).unwrap(),
        &w.squeeze(2).unwrap(),
        Some(&b),
        1,
        1,
        1,
        1,
    )
    .unwrap();
    assert!(y3.squeeze(2).unwrap().allclose(&y2, 1e-12, 1e-12).unwrap());
    // "same" with an even depth kernel pads the extra slice after, as torch.
    let x = ramp(&[1, 2, 4, 5, 5], 9, 0.1);
    let w = ramp(&[3, 2, 2, 3, 2], 5, 0.3);
    let y = F::conv3d(&x, &w, None, 1, "same", 1, 1).unwrap();
    assert_eq!(y.shape(), [1, 3, 4, 5, 5]);
    // Unbatched input gives an unbatched output.
    let y = F::conv3d(&x.squeeze(0).unwrap(), &w, None, 1, 1, 1, 1).unwrap();
    assert_eq!(y.shape(), [3, 5, 5, 6]);
}

#[test]
fn conv3d_refuses_bad_arguments_by_name() {
    let x = Tensor::zeros([1, 2, 4, 4, 4], CPU).unwrap();
    let w = Tensor::zeros([3, 2, 2, 2, 2], CPU).unwrap();
    let e = err(F::conv3d(&x, &w.select(2, 0).unwrap(), None, 1, 0, 1, 1));
    assert!(e.contains("conv3d") && e.contains("5-D weight"), "{e}");
    let e = err(F::conv3d(&x.narrow(1, 0, 1).unwrap(), &w, None, 1, 0, 1, 1));
    assert!(e.contains("conv3d: expected input [N, 2, D, H, W]"), "{e}");
    let e = err(F::conv3d(&x, &w, None, 1, 0, 1, 2));
    assert!(e.contains("groups"), "{e}");
    let e = err(F::conv3d(
        &x,
        &w,
        Some(&Tensor::zeros([2], CPU).unwrap()),
        1,
        0,
        1,
        1,
    ));
    assert!(e.contains("bias of shape [3]"), "{e}");
    let e = err(F::conv3d(&x, &w, None, 2, "same", 1, 1));
    assert!(e.contains("\"same\" needs stride 1"), "{e}");
    let e = err(F::conv3d(&x, &w, None, 1, "full", 1, 1));
    assert!(e.contains("got \"full\""), "{e}");
    let e = err(F::conv3d(
        &x,
        &Tensor::zeros([3, 2, 5, 2, 2], CPU).unwrap(),
        None,
        1,
        0,
        1,
        1,
    ));
    assert!(e.contains("conv3d"), "{e}");
    let e = err(F::conv3d(
        &x,
        &Tensor::zeros([3, 2, 2, 5, 2], CPU).unwrap(),
        None,
        1,
        0,
        1,
        1,
    ));
    assert!(
        e.contains("conv3d (its height and width, as conv2d)"),
        "{e}"
    );
    let e = err(F::conv3d(
        &x.select(0, 0).unwrap().select(0, 0).unwrap(),
        &w,
        None,
        1,
        0,
        1,
        1,
    ));
    assert!(
        e.contains("expected input [N, C, D, H, W] or [C, D, H, W]"),
        "{e}"
    );
}

#[test]
fn conv3d_layer_draws_torchs_shapes_and_prints_torchs_repr() {
    let c = nn::Conv3d::new(4, 8, (1, 3, 3))
        .padding((0, 1, 1))
        .groups(2);
    assert_eq!(c.weight.shape(), [8, 2, 1, 3, 3]);
    let names: Vec<String> = c.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    // Kaiming-uniform with torch's fan-in, in / groups * kd * kh * kw = 18.
    let bound = 1.0 / 18f32.sqrt();
    assert!(
        c.weight
            .tensor()
            .abs()
            .unwrap()
            .max()
            .unwrap()
            .item::<f32>()
            .unwrap()
            <= bound
    );
    assert_eq!(
        c.describe(),
        "Conv3d(4, 8, kernel_size=(1, 3, 3), stride=(1, 1, 1), padding=(0, 1, 1), groups=2)"
    );
    let y = c
        .forward(&Tensor::zeros([2, 4, 3, 5, 5], CPU).unwrap())
        .unwrap();
    assert_eq!(y.shape(), [2, 8, 3, 5, 5]);
    let e = err(c.forward(&Tensor::zeros([2, 3, 3, 5, 5], CPU).unwrap()));
    assert!(e.contains("expected input of shape [N, 4, D, H, W]"), "{e}");
    let plain = nn::Conv3d::new(1, 2, 3)
        .stride(2)
        .bias(false)
        .padding("same");
    assert_eq!(
        format!("{plain:?}"),
        "Conv3d(1, 2, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=same, bias=False)"
    );
    assert_eq!(plain.parameters().len(), 1);
}

#[test]
fn max_pool3d_takes_the_first_maximum_and_gives_its_volume_index() {
    // Two frames of one channel: every value of the second frame exceeds the first's, and
    // each frame has a tie in its window; the index goes to the first, in depth, row, column
    // order.
    let x = Tensor::from_vec(
        vec![1.0f32, 5.0, 5.0, 2.0, 7.0, 9.0, 9.0, 3.0],
        vec![1, 1, 2, 2, 2],
        CPU,
    )
    .unwrap();
    let (v, i) = F::max_pool3d_with_indices(&x, 2, 2, 0, 1, false).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), [9.0]);
    assert_eq!(i.to_vec::<i64>().unwrap(), [5]);
    assert_eq!(i.dtype(), DType::I64);
    // The gradient goes to that element alone.
    let x = x.requires_grad_(true).unwrap();
    F::max_pool3d(&x, 2, 2, 0, 1, false)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    );
    // Padding never wins, and integers pool too.
    let x = Tensor::from_vec(vec![-3i64, -1, -2, -4], vec![1, 1, 1, 2, 2], CPU).unwrap();
    let (v, i) = F::max_pool3d_with_indices(&x, 3, 1, 1, 1, false).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), [-1, -1, -1, -1]);
    assert_eq!(i.to_vec::<i64>().unwrap(), [1, 1, 1, 1]);
}

#[test]
fn avg_pool3d_divides_as_torch() {
    let x = Tensor::ones([1, 1, 3, 3, 3], CPU).unwrap();
    // Padding counts in the divisor by default, not with count_include_pad(false).
    let with = F::avg_pool3d(&x, 2, 2, 1, false, true, None).unwrap();
    assert_eq!(with.shape(), [1, 1, 2, 2, 2]);
    assert_eq!(with.to_vec::<f32>().unwrap()[0], 1.0 / 8.0);
    let without = nn::AvgPool3d::new(2)
        .padding(1)
        .count_include_pad(false)
        .forward(&x)
        .unwrap();
    assert!(without.to_vec::<f32>().unwrap().iter().all(|&v| v == 1.0));
    let over = F::avg_pool3d(&x, 2, 1, 0, false, true, Some(4)).unwrap();
    assert!(over.to_vec::<f32>().unwrap().iter().all(|&v| v == 2.0));
    let e = err(F::avg_pool3d(&x, 2, 1, 0, false, true, Some(0)));
    assert!(e.contains("divisor_override"), "{e}");
    let e = err(F::avg_pool3d(
        &x.to_dtype(DType::I64).unwrap(),
        2,
        1,
        0,
        false,
        true,
        None,
    ));
    assert!(
        e.contains("avg_pool3d") && e.contains("floating-point"),
        "{e}"
    );
    let e = err(F::max_pool3d(&x, 2, 1, 2, 1, false));
    assert!(
        e.contains("max_pool3d") && e.contains("half the kernel"),
        "{e}"
    );
    let e = err(F::max_pool3d(
        &x.squeeze(0).unwrap().squeeze(0).unwrap(),
        2,
        1,
        0,
        1,
        false,
    ));
    assert!(
        e.contains("max_pool3d: expected input [N, C, D, H, W]"),
        "{e}"
    );
}

#[test]
fn pooling_layers_print_torchs_reprs() {
    assert_eq!(
        nn::MaxPool3d::new(2).describe(),
        "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    );
    assert_eq!(
        nn::MaxPool3d::new((1, 2, 2)).ceil_mode(true).describe(),
        "MaxPool3d(kernel_size=(1, 2, 2), stride=(1, 2, 2), padding=0, dilation=1, ceil_mode=True)"
    );
    assert_eq!(
        nn::AvgPool3d::new(3).stride(2).padding(1).describe(),
        "AvgPool3d(kernel_size=3, stride=2, padding=1)"
    );
    let (v, i) = nn::MaxPool3d::new(2)
        .forward_with_indices(&ramp(&[1, 2, 4, 4, 4], 17, 1.0))
        .unwrap();
    assert_eq!(v.shape(), [1, 2, 2, 2, 2]);
    assert_eq!(i.shape(), [1, 2, 2, 2, 2]);
}

#[test]
fn batch_norm3d_instance_norm3d_and_dropout3d() {
    let x = ramp(&[2, 3, 2, 3, 3], 13, 0.3)
        .to_dtype(DType::F32)
        .unwrap();
    let bn = nn::BatchNorm3d::new(3);
    let y = bn.forward(&x).unwrap();
    // Each channel normalised over batch, depth, height and width.
    let m = y
        .transpose(0, 1)
        .unwrap()
        .reshape([3, 36])
        .unwrap()
        .mean_dim(1)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(m.iter().all(|v| v.abs() < 1e-5), "{m:?}");
    assert_eq!(
        bn.describe(),
        "BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    );
    let e = err(bn.forward(&x.select(0, 0).unwrap()));
    assert!(e.contains("BatchNorm3d"), "{e}");
    let inn = nn::InstanceNorm3d::new_3d(3);
    let y = inn.forward(&x).unwrap();
    let m = y
        .reshape([6, 18])
        .unwrap()
        .mean_dim(1)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(m.iter().all(|v| v.abs() < 1e-5), "{m:?}");
    assert!(
        inn.describe().starts_with("InstanceNorm3d(3"),
        "{}",
        inn.describe()
    );
    // Dropout3d zeroes whole channels while training and nothing in eval.
    let mut drop = nn::Dropout3d::new(0.5);
    let ones = Tensor::ones([4, 8, 2, 3, 3], CPU).unwrap();
    let y = drop.forward(&ones).unwrap();
    let per_channel = y.reshape([32, 18]).unwrap();
    let sums = per_channel.sum_dim(1).unwrap().to_vec::<f32>().unwrap();
    assert!(sums.iter().all(|&s| s == 0.0 || s == 36.0), "{sums:?}");
    assert!(sums.contains(&0.0) && sums.contains(&36.0), "{sums:?}");
    drop.set_training(false);
    assert!(drop.forward(&ones).unwrap().equal(&ones).unwrap());
    assert_eq!(drop.describe(), "Dropout3d(p=0.5, inplace=False)");
    let e = err(F::dropout3d(
        &Tensor::ones([2, 3, 3], CPU).unwrap(),
        0.5,
        true,
    ));
    assert!(
        e.contains("dropout3d: expected input [N, C, D, H, W]"),
        "{e}"
    );
    let e = err(F::dropout1d(&ones, 0.5, true));
    assert!(e.contains("dropout1d: expected input [N, C, L]"), "{e}");
    let seq = F::dropout1d(&Tensor::ones([2, 6, 5], CPU).unwrap(), 0.5, true).unwrap();
    let s = seq.sum_dim(2).unwrap().to_vec::<f32>().unwrap();
    assert!(s.iter().all(|&v| v == 0.0 || v == 10.0), "{s:?}");
}

#[test]
fn a_small_video_network_trains_through_the_3d_layers() {
    // Conv3d -> ReLU -> MaxPool3d -> AvgPool3d -> Flatten -> Linear, one SGD step lowers the
    // loss: the gradients reach every parameter through the 3-D layers.
    gpulab::manual_seed(3);
    let mut model = nn::Sequential::new()
        .add(nn::Conv3d::new(1, 4, 3).padding(1))
        .add(nn::BatchNorm3d::new(4))
        .add(nn::ReLU)
        .add(nn::MaxPool3d::new(2))
        .add(nn::AvgPool3d::new((1, 2, 2)))
        .add(nn::Flatten)
        .add(nn::Linear::new(4 * 2, 2));
    let x = ramp(&[4, 1, 4, 4, 4], 19, 0.1)
        .to_dtype(DType::F32)
        .unwrap();
    let target = Tensor::from_vec(vec![0i64, 1, 0, 1], vec![4], CPU).unwrap();
    let mut opt = gpulab::optim::SGD::new(model.parameters(), 0.1);
    let loss = |m: &nn::Sequential| F::cross_entropy(&m.forward(&x).unwrap(), &target).unwrap();
    let before = loss(&model);
    opt.zero_grad();
    before.backward().unwrap();
    for p in model.parameters() {
        assert!(
            p.tensor().grad().is_some(),
            "every parameter gets a gradient"
        );
    }
    opt.step().unwrap();
    let after = loss(&model);
    assert!(
        after.item::<f32>().unwrap() < before.item::<f32>().unwrap(),
        "one step lowers the loss"
    );
    model.set_training(false);
    assert_eq!(model.forward(&x).unwrap().shape(), [4, 2]);
}

#[test]
fn adaptive_3d_pools_give_global_pooling_and_torchs_windows() {
    let x = ramp(&[2, 3, 4, 5, 6], 23, 0.1);
    let mean = F::adaptive_avg_pool3d(&x, (1, 1, 1)).unwrap();
    assert_eq!(mean.shape(), [2, 3, 1, 1, 1]);
    let want = x.reshape([6, 120]).unwrap().mean_dim(1).unwrap();
    assert!(mean
        .reshape([6])
        .unwrap()
        .allclose(&want, 1e-12, 1e-12)
        .unwrap());
    // The global max's gradient goes to the first maximum only.
    let v = Tensor::from_vec(
        vec![1.0f64, 3.0, 3.0, 2.0, 3.0, 0.0, 1.0, 2.0],
        vec![1, 1, 2, 2, 2],
        CPU,
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    let m = F::adaptive_max_pool3d(&v, (1, 1, 1)).unwrap();
    assert_eq!(m.item::<f64>().unwrap(), 3.0);
    m.sum().unwrap().backward().unwrap();
    assert_eq!(
        v.grad().unwrap().to_vec::<f64>().unwrap(),
        [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    // Overlapping windows: 5 rows into 3 are [0, 2), [1, 4), [3, 5).
    let rows = Tensor::arange(0.0, 5.0, CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .reshape([1, 1, 1, 5, 1])
        .unwrap();
    let y = F::adaptive_max_pool3d(&rows, (1, 3, 1)).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), [1.0, 3.0, 4.0]);
    let y = nn::AdaptiveAvgPool3d::new((1, 3, 1))
        .forward(&rows)
        .unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), [0.5, 2.0, 3.5]);
    assert_eq!(
        nn::AdaptiveMaxPool3d::new((1, 1, 1)).describe(),
        "AdaptiveMaxPool3d(output_size=(1, 1, 1))"
    );
    let e = err(F::adaptive_avg_pool3d(&x, (0, 1, 1)));
    assert!(
        e.contains("adaptive_avg_pool3d") && e.contains("must not be 0"),
        "{e}"
    );
    let e = err(F::adaptive_max_pool3d(
        &x.to_dtype(DType::I64).unwrap(),
        (1, 1, 1),
    ));
    assert!(
        e.contains("adaptive_max_pool3d") && e.contains("floating-point"),
        "{e}"
    );
    let e = err(F::adaptive_max_pool3d(
        &x.select(0, 0).unwrap().select(0, 0).unwrap(),
        (1, 1, 1),
    ));
    assert!(e.contains("expected input [N, C, D, H, W]"), "{e}");
}

#[test]
fn conv_transpose3d_is_the_adjoint_of_conv3d() {
    // <conv3d(x, w), y> = <x, conv_transpose3d(y, w)> for the same stride, padding and
    // dilation: the transposed convolution is the convolution's adjoint.
    for (xs, ws, s, p, dl, g) in [
        (
            [1, 2, 5, 6, 5],
            [3, 2, 3, 2, 3],
            [2, 1, 2],
            [1, 0, 1],
            [1, 1, 1],
            1,
        ),
        (
            [2, 4, 6, 5, 5],
            [4, 2, 2, 3, 2],
            [1, 2, 1],
            [0, 1, 1],
            [2, 1, 1],
            2,
        ),
    ] {
        let x = ramp(&xs, 11, 0.25);
        let w = ramp(&ws, 7, 0.5);
        let y = F::conv3d(&x, &w, None, s, p, dl, g).unwrap();
        let probe = ramp(y.shape(), 5, 0.3);
        // Output padding restores the input's size where the stride rounded it down.
        let want: Vec<usize> = (0..3)
            .map(|a| {
                let full = (y.shape()[2 + a] - 1) * s[a] + dl[a] * (ws[2 + a] - 1) + 1 - 2 * p[a];
                xs[2 + a] - full
            })
            .collect();
        let back = F::conv_transpose3d(&probe, &w, None, s, p, [want[0], want[1], want[2]], g, dl)
            .unwrap();
        assert_eq!(back.shape(), x.shape());
        let lhs = y.mul(&probe).unwrap().sum().unwrap().item::<f64>().unwrap();
        let rhs = x.mul(&back).unwrap().sum().unwrap().item::<f64>().unwrap();
        assert!(
            (lhs - rhs).abs() < 1e-9 * lhs.abs().max(1.0),
            "{lhs} vs {rhs}"
        );
    }
    let layer = nn::ConvTranspose3d::new(4, 2, 2)
        .stride(2)
        .padding(1)
        .dilation(2)
        .bias(false);
    assert_eq!(layer.weight.shape(), [4, 2, 2, 2, 2]);
    assert_eq!(
        layer.describe(),
        "ConvTranspose3d(4, 2, kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(1, 1, 1), \
         dilation=(2, 2, 2), bias=False)"
    );
    let up = nn::ConvTranspose3d::new(3, 2, 2).stride(2);
    let y = up
        .forward(&Tensor::zeros([1, 3, 2, 3, 4], CPU).unwrap())
        .unwrap();
    assert_eq!(y.shape(), [1, 2, 4, 6, 8]);
    let e = err(up.forward(&Tensor::zeros([1, 2, 2, 3, 4], CPU).unwrap()));
    assert!(e.contains("expected input of shape [N, 3, D, H, W]"), "{e}");
    let e = err(F::conv_transpose3d(
        &Tensor::zeros([1, 3, 2, 2, 2], CPU).unwrap(),
        &up.weight.tensor(),
        None,
        2,
        0,
        2,
        1,
        1,
    ));
    assert!(e.contains("output_padding"), "{e}");
}
