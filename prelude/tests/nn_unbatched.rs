//! The 2-D convolutions and pools on torch's unbatched `[C, H, W]` input, `conv_transpose1d`
//! and `ConvTranspose1d`, `divisor_override` on `AvgPool2d`, and the generic layers' reprs
//! (`Conv<S>`, `ConvTranspose<S>`, `MaxPool<S>`, `AvgPool<S>`), against torch's.

use gpulab::nn::{self, Module};
use gpulab::F;
use gpulab::{Device, Tensor};

fn ramp(shape: &[usize], m: usize, off: f64, scale: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (((i % m) as f64 - off) * scale) as f32)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), Device::Cpu).unwrap()
}

fn err<T>(r: gpulab::error::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// Every 2-D op gives an unbatched image what it gives a batch of one, without the batch,
/// and the gradient to the unbatched input is the batched one's.
#[test]
fn unbatched_images_match_a_batch_of_one() {
    type Op = Box<dyn Fn(&Tensor) -> gpulab::error::Result<Tensor>>;
    let w = ramp(&[3, 2, 3, 3], 5, 2.0, 0.5);
    let wt = ramp(&[2, 3, 2, 2], 5, 2.0, 0.5);
    let ops: Vec<(&str, Op)> = vec![
        (
            "conv2d",
            Box::new(move |x| F::conv2d(x, &w, None, 1, 1, 1, 1)),
        ),
        (
            "conv_transpose2d",
            Box::new(move |x| F::conv_transpose2d(x, &wt, None, 2, 0, 0, 1, 1)),
        ),
        (
            "max_pool2d",
            Box::new(|x| F::max_pool2d(x, 3, 2, 1, 1, true)),
        ),
        (
            "max_pool2d_with_indices",
            Box::new(|x| Ok(F::max_pool2d_with_indices(x, 2, 1, 0, 1, false)?.0)),
        ),
        (
            "avg_pool2d",
            Box::new(|x| F::avg_pool2d(x, 3, 2, 1, true, false)),
        ),
        (
            "adaptive_avg_pool2d",
            Box::new(|x| F::adaptive_avg_pool2d(x, (2, 3))),
        ),
        (
            "adaptive_max_pool2d",
            Box::new(|x| F::adaptive_max_pool2d(x, (2, 3))),
        ),
        (
            "max_unpool2d",
            Box::new(|x| {
                let (v, i) = F::max_pool2d_with_indices(x, 2, 2, 0, 1, false)?;
                F::max_unpool2d(&v, &i, 2, None, 0, None)
            }),
        ),
        (
            "lp_pool2d",
            Box::new(|x| F::lp_pool2d(x, 2.0, 2, None, false)),
        ),
    ];
    for (name, f) in ops {
        let x = ramp(&[2, 5, 6], 7, 3.0, 0.5).requires_grad_(true).unwrap();
        let xb = x
            .detach()
            .unsqueeze(0)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let y = f(&x).unwrap();
        let yb = f(&xb).unwrap();
        assert_eq!(y.rank(), 3, "{name}: {:?}", y.shape());
        assert_eq!(yb.shape()[1..], y.shape()[..], "{name}");
        assert!(yb.squeeze(0).unwrap().equal(&y).unwrap(), "{name}: values");
        let weights = ramp(y.shape(), 4, 1.0, 1.0);
        y.mul(&weights).unwrap().sum().unwrap().backward().unwrap();
        let wb = weights.unsqueeze(0).unwrap();
        yb.mul(&wb).unwrap().sum().unwrap().backward().unwrap();
        let (g, gb) = (x.grad().unwrap(), xb.grad().unwrap());
        assert!(
            gb.squeeze(0).unwrap().equal(&g).unwrap(),
            "{name}: gradient"
        );
    }
}

/// A rank neither layout has is refused with both named, as torch's message does.
#[test]
fn other_ranks_name_both_layouts() {
    let flat = ramp(&[5, 6], 7, 3.0, 0.5);
    let w = ramp(&[1, 1, 3, 3], 5, 2.0, 0.5);
    for e in [
        err(F::conv2d(&flat, &w, None, 1, 0, 1, 1)),
        err(F::max_pool2d(&flat, 2, 2, 0, 1, false)),
        err(F::avg_pool2d(&flat, 2, 2, 0, false, true)),
        err(F::adaptive_avg_pool2d(&flat, (1, 1))),
    ] {
        assert!(e.contains("[N, C, H, W] or [C, H, W]"), "{e}");
        assert!(e.contains("[5, 6]"), "{e}");
    }
}

/// The layers take an unbatched input too, and check its channels.
#[test]
fn layers_take_unbatched_input() {
    let conv = nn::Conv2d::new(2, 4, 3).padding(1);
    let y = conv.forward(&ramp(&[2, 5, 6], 7, 3.0, 0.5)).unwrap();
    assert_eq!(y.shape(), [4, 5, 6]);
    let e = err(conv.forward(&ramp(&[3, 5, 6], 7, 3.0, 0.5)));
    assert!(
        e.contains("expected input of shape [N, 2, H, W] or [2, H, W]"),
        "{e}"
    );
    let up = nn::ConvTranspose2d::new(2, 3, 2).stride(2);
    assert_eq!(
        up.forward(&ramp(&[2, 3, 4], 7, 3.0, 0.5)).unwrap().shape(),
        [3, 6, 8]
    );
    let pool = nn::MaxPool2d::new(2);
    assert_eq!(
        pool.forward(&ramp(&[2, 4, 6], 7, 3.0, 0.5))
            .unwrap()
            .shape(),
        [2, 2, 3]
    );
}

/// conv_transpose1d is conv1d's adjoint: <conv1d(y, w), x> = <y, conv_transpose1d(x, w)>,
/// for strides, padding, dilation and groups, in float64.
#[test]
fn conv_transpose1d_is_the_adjoint_of_conv1d() {
    let f64t = |shape: &[usize], m: usize| ramp(shape, m, 2.0, 0.5).to_dtype(gpulab::DType::F64);
    // (in, out, k, stride, padding, dilation, groups, output length of conv1d's input)
    for (cin, cout, k, s, p, d, g, len) in [
        (4, 3, 3, 2, 0, 1, 1, 11),
        (4, 2, 3, 2, 1, 1, 2, 10),
        (2, 4, 2, 1, 1, 2, 2, 7),
    ] {
        let w = f64t(&[cin, cout / g, k], 5).unwrap();
        let y = f64t(&[2, cout, len], 7).unwrap();
        // The same weight, read as conv1d's [out, in / groups, k], maps [N, cout, len] to
        // [N, cin, L']; the transposed convolution maps back.
        let x_of = F::conv1d(&y, &w, None, s, p, d, g).unwrap();
        let x = f64t(x_of.shape(), 3).unwrap();
        let lhs = x_of.mul(&x).unwrap().sum().unwrap().item::<f64>().unwrap();
        // The output padding that gives back conv1d's input length exactly.
        let reach = (x.shape()[2] - 1) * s + d * (k - 1) + 1 - 2 * p;
        let op = len - reach;
        let back = F::conv_transpose1d(&x, &w, None, s, p, op, g, d).unwrap();
        assert_eq!(back.shape(), y.shape());
        let rhs = back.mul(&y).unwrap().sum().unwrap().item::<f64>().unwrap();
        assert!(
            (lhs - rhs).abs() < 1e-9 * lhs.abs().max(1.0),
            "{lhs} vs {rhs}"
        );
    }
}

#[test]
fn conv_transpose1d_checks_its_arguments() {
    let x = ramp(&[1, 4, 5], 7, 3.0, 0.5);
    let e = err(F::conv_transpose1d(
        &x,
        &ramp(&[4, 2, 3, 3], 5, 2.0, 0.5),
        None,
        1,
        0,
        0,
        1,
        1,
    ));
    assert!(e.contains("conv_transpose1d: expected a weight"), "{e}");
    let w = ramp(&[3, 2, 3], 5, 2.0, 0.5);
    let e = err(F::conv_transpose1d(&x, &w, None, 1, 0, 0, 1, 1));
    assert!(
        e.contains("conv_transpose1d") && e.contains("[N, 3, H, W]"),
        "{e}"
    );
    let w = ramp(&[4, 2, 3], 5, 2.0, 0.5);
    let e = err(F::conv_transpose1d(&x, &w, None, 2, 0, 2, 1, 1));
    assert!(e.contains("output_padding"), "{e}");
    let layer = nn::ConvTranspose1d::new(4, 2, 3);
    let e = err(layer.forward(&ramp(&[1, 3, 5], 7, 3.0, 0.5)));
    assert!(e.contains("[N, 4, L] or [4, L]"), "{e}");
}

#[test]
fn conv_transpose1d_layer_shapes_and_parameters() {
    let layer = nn::ConvTranspose1d::new(4, 2, 3)
        .stride(2)
        .padding(1)
        .output_padding(1);
    assert_eq!(layer.weight.tensor().shape(), [4, 2, 3]);
    assert_eq!(layer.bias.as_ref().unwrap().tensor().shape(), [2]);
    // (5 - 1) * 2 - 2 + 2 + 1 + 1 = 10
    let y = layer.forward(&ramp(&[3, 4, 5], 7, 3.0, 0.5)).unwrap();
    assert_eq!(y.shape(), [3, 2, 10]);
    let y = layer.forward(&ramp(&[4, 5], 7, 3.0, 0.5)).unwrap();
    assert_eq!(y.shape(), [2, 10]);
    let grouped = nn::ConvTranspose1d::new(4, 6, 3).groups(2);
    assert_eq!(grouped.weight.tensor().shape(), [4, 3, 3]);
    // torch's fan-in for a transposed weight: out / groups * k = 9; bound 1 / 3.
    let bound = grouped
        .weight
        .tensor()
        .abs()
        .unwrap()
        .max()
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert!(bound <= 1.0 / 3.0 + 1e-6, "{bound}");
}

/// `divisor_override` divides every window's sum by the one number, ceil-mode windows too,
/// and 0 is refused.
#[test]
fn avg_pool2d_divisor_override() {
    let x = ramp(&[1, 1, 4, 4], 7, 3.0, 0.5);
    let sums = nn::AvgPool2d::new(2)
        .divisor_override(1)
        .forward(&x)
        .unwrap();
    let means = nn::AvgPool2d::new(2).forward(&x).unwrap();
    let quarter = means.mul(4.0).unwrap();
    assert!(
        sums.sub(&quarter)
            .unwrap()
            .abs()
            .unwrap()
            .max()
            .unwrap()
            .item::<f32>()
            .unwrap()
            < 1e-6
    );
    let thirds = nn::AvgPool2d::new(3)
        .stride(2)
        .padding(1)
        .ceil_mode(true)
        .divisor_override(3)
        .forward(&x)
        .unwrap();
    let ones = nn::AvgPool2d::new(3)
        .stride(2)
        .padding(1)
        .ceil_mode(true)
        .divisor_override(1)
        .forward(&x)
        .unwrap();
    let three = thirds.mul(3.0).unwrap();
    assert!(
        three
            .sub(&ones)
            .unwrap()
            .abs()
            .unwrap()
            .max()
            .unwrap()
            .item::<f32>()
            .unwrap()
            < 1e-5
    );
    let e = err(nn::AvgPool2d::new(2).divisor_override(0).forward(&x));
    assert!(e.contains("divisor_override must be positive"), "{e}");
}

/// torch's reprs, now that every rank is one generic layer (printed with `{:?}` as a
/// notebook shows a cell's last value).
#[test]
fn generic_layers_print_as_torch() {
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{:?}", nn::ConvTranspose1d::new(4, 2, 3).stride(2).padding(1).output_padding(1)),
            "ConvTranspose1d(4, 2, kernel_size=(3,), stride=(2,), padding=(1,), output_padding=(1,))",
        ),
        (
            format!("{:?}", nn::ConvTranspose1d::new(4, 2, 3).groups(2).bias(false).dilation(2)),
            "ConvTranspose1d(4, 2, kernel_size=(3,), stride=(1,), dilation=(2,), groups=2, bias=False)",
        ),
        (
            format!("{:?}", nn::Conv1d::new(4, 2, 3).padding(1)),
            "Conv1d(4, 2, kernel_size=(3,), stride=(1,), padding=(1,))",
        ),
        (
            format!("{}", nn::ConvTranspose3d::new(2, 2, 3).padding(1)),
            "ConvTranspose3d(2, 2, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))",
        ),
        (
            format!("{:?}", nn::Conv3d::new(2, 4, 3).padding("same")),
            "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same)",
        ),
        (
            format!("{:?}", nn::MaxPool1d::new(2)),
            "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        ),
        (
            format!("{:?}", nn::AvgPool1d::new(3).stride(2).padding(1)),
            "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))",
        ),
        (
            format!("{:?}", nn::AvgPool2d::new(2).divisor_override(3)),
            "AvgPool2d(kernel_size=2, stride=2, padding=0)",
        ),
        (
            format!("{}", nn::AvgPool3d::new(2)),
            "AvgPool3d(kernel_size=2, stride=2, padding=0)",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

/// The 1-D pooling layer gives its indices too, now that every rank shares one layer.
#[test]
fn max_pool1d_layer_gives_indices() {
    let x = ramp(&[1, 2, 7], 4, 0.0, 1.0);
    let (v, i) = nn::MaxPool1d::new(2).forward_with_indices(&x).unwrap();
    let (fv, fi) = F::max_pool1d_with_indices(&x, 2, 2, 0, 1, false).unwrap();
    assert!(v.equal(&fv).unwrap() && i.equal(&fi).unwrap());
    let unpooled = nn::MaxUnpool1d::new(2).forward(&v, &i).unwrap();
    assert_eq!(unpooled.shape(), [1, 2, 6]);
}

/// MaxUnpool3d puts max_pool3d's maxima back where they were, and the 3-D adaptive max pool
/// gives indices the unpooling takes; torch's reprs for all three ranks.
#[test]
fn max_unpool3d_and_adaptive_indices() {
    let x = ramp(&[1, 2, 4, 4, 6], 11, 5.0, 0.5);
    let (v, i) = F::max_pool3d_with_indices(&x, 2, 2, 0, 1, false).unwrap();
    let back = nn::MaxUnpool3d::new(2).forward(&v, &i).unwrap();
    assert_eq!(back.shape(), x.shape());
    // Every nonzero of the unpooled volume is the input's value at that place, and pooling
    // it again gives the same maxima.
    let (b, xs) = (back.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    assert!(b.iter().zip(&xs).all(|(u, w)| *u == 0.0 || u == w));
    let again = F::max_pool3d(&back, 2, 2, 0, 1, false).unwrap();
    let positive = v.gt(0.0).unwrap();
    assert!(again.where_(&positive, &v).unwrap().equal(&v).unwrap());
    // Adaptive indices point at the maxima they report.
    let (av, ai) = F::adaptive_max_pool3d_with_indices(&x, (2, 3, 2)).unwrap();
    let flat = x.reshape(vec![1, 2, 96]).unwrap();
    let picked = flat
        .gather(2, &ai.reshape(vec![1, 2, 12]).unwrap())
        .unwrap()
        .reshape(av.shape().to_vec())
        .unwrap();
    assert!(picked.equal(&av).unwrap());
    let e = err(F::max_unpool3d(&v, &i, 2, None, 0, Some((9, 4, 6))));
    assert!(e.contains("invalid output_size (9, 4, 6)"), "{e}");
    for (got, want) in [
        (
            format!("{:?}", nn::MaxUnpool3d::new(2)),
            "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))",
        ),
        (
            format!("{}", nn::MaxUnpool2d::new(2).stride(1).padding(1)),
            "MaxUnpool2d(kernel_size=(2, 2), stride=(1, 1), padding=(1, 1))",
        ),
        (
            format!("{:?}", nn::MaxUnpool1d::new(2)),
            "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))",
        ),
    ] {
        assert_eq!(got, want);
    }
}
