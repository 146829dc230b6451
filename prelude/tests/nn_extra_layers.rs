//! Threshold, Softmax2d, the random activations and dropouts (RReLU, AlphaDropout,
//! FeatureAlphaDropout, gumbel_softmax), Bilinear, CosineSimilarity / PairwiseDistance and
//! the triplet loss with a distance: what they compute, what they draw, their errors and
//! reprs. (Their deterministic values and gradients in every dtype are checked against torch
//! by tests/test_torch_parity.py.)

use gpulab::nn::{self, Module};
use gpulab::{fork_rng, DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn t(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec(), CPU).unwrap()
}

fn err(r: gpulab::error::Result<Tensor>) -> String {
    r.map(|t| format!("no error: a tensor of shape {:?}", t.shape()))
        .unwrap_or_else(|e| e.to_string())
}

#[test]
fn threshold_keeps_what_is_above_and_passes_its_gradient() {
    let x = t(&[-1.0, 0.5, 0.6, 2.0], &[4])
        .requires_grad_(true)
        .unwrap();
    let y = F::threshold(&x, 0.5, -7.0).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [-7.0, -7.0, 0.6, 2.0]);
    y.sum().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        [0.0, 0.0, 1.0, 1.0]
    );
    let ints = Tensor::from_vec(vec![1i64, 5, 3], vec![3], CPU).unwrap();
    let y = nn::Threshold::new(2.0, 0.0).forward(&ints).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), [0, 5, 3]);
    assert_eq!(
        nn::Threshold::new(0.1, 20.0).describe(),
        "Threshold(threshold=0.1, value=20.0)"
    );
    let e = err(F::threshold(&ints.gt(2).unwrap(), 0.0, 1.0));
    assert!(e.contains("threshold"), "{e}");
}

#[test]
fn softmax2d_normalises_the_channels_of_each_position() {
    let x = Tensor::randn([2, 3, 4, 5], CPU).unwrap();
    let y = nn::Softmax2d.forward(&x).unwrap();
    let s = y.sum_dim(1).unwrap().to_vec::<f32>().unwrap();
    assert!(s.iter().all(|v| (v - 1.0).abs() < 1e-6), "{s:?}");
    assert_eq!(nn::Softmax2d.describe(), "Softmax2d()");
    let e = err(nn::Softmax2d.forward(&Tensor::zeros([3, 4], CPU).unwrap()));
    assert!(
        e.contains("Softmax2d: expected input [N, C, H, W] or [C, H, W]"),
        "{e}"
    );
}

#[test]
fn rrelu_draws_a_slope_per_negative_element_while_training() {
    let x = Tensor::full([1000], -2.0f32, CPU).unwrap();
    let y = fork_rng(5, || F::rrelu(&x, 0.1, 0.3, true)).unwrap();
    let v = y.to_vec::<f32>().unwrap();
    assert!(
        v.iter().all(|&v| (-0.6..=-0.2).contains(&v)),
        "slopes in [0.1, 0.3)"
    );
    let distinct: std::collections::BTreeSet<u32> = v.iter().map(|v| v.to_bits()).collect();
    assert!(
        distinct.len() > 900,
        "a slope per element: {} distinct",
        distinct.len()
    );
    // The same seed, the same slopes; eval is leaky_relu with their mean.
    let again = fork_rng(5, || F::rrelu(&x, 0.1, 0.3, true)).unwrap();
    assert!(again.equal(&y).unwrap());
    let mut layer = nn::RReLU::default();
    layer.set_training(false);
    let y = layer
        .forward(&t(&[-3.0, 4.0], &[2]))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!((y[0] - -3.0 * (1.0 / 8.0 + 1.0 / 3.0) / 2.0).abs() < 1e-6 && y[1] == 4.0);
    assert_eq!(
        layer.describe(),
        "RReLU(lower=0.125, upper=0.3333333333333333)"
    );
    let e = err(F::rrelu(&x, 0.5, 0.1, true));
    assert!(e.contains("lower bound"), "{e}");
}

#[test]
fn alpha_dropout_keeps_a_standard_normal_standard() {
    let x = fork_rng(11, || Tensor::randn([200_000], CPU)).unwrap();
    let y = fork_rng(12, || F::alpha_dropout(&x, 0.2, true)).unwrap();
    let (mean, std) = (
        y.mean().unwrap().item::<f32>().unwrap(),
        y.std().unwrap().item::<f32>().unwrap(),
    );
    assert!(
        mean.abs() < 0.02 && (std - 1.0).abs() < 0.02,
        "mean {mean}, std {std}"
    );
    // A dropped element is SELU's saturation, scaled and shifted: one value, a fifth of them.
    let alpha = 1.758_099_3f64;
    let a = 1.0 / ((alpha * alpha * 0.2 + 1.0) * 0.8f64).sqrt();
    let dropped = (alpha * a * (0.2 - 1.0)) as f32;
    let v = y.to_vec::<f32>().unwrap();
    let n = v.iter().filter(|&&e| (e - dropped).abs() < 1e-6).count() as f64 / v.len() as f64;
    assert!((n - 0.2).abs() < 0.01, "dropped share {n}");
    // Not training, or p 0: the input itself; p 1: all zero.
    assert!(F::alpha_dropout(&x, 0.2, false).unwrap().equal(&x).unwrap());
    assert_eq!(
        F::alpha_dropout(&x, 1.0, true)
            .unwrap()
            .abs()
            .unwrap()
            .max()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        0.0
    );
    let e = err(F::alpha_dropout(&x, 1.5, true));
    assert!(e.contains("between 0 and 1"), "{e}");
    // Feature alpha dropout drops whole channels.
    let x = Tensor::ones([4, 16, 3, 3], CPU).unwrap();
    let y = nn::FeatureAlphaDropout::new(0.5).forward(&x).unwrap();
    let planes = y.reshape([64, 9]).unwrap();
    let spread = planes
        .amax(&[1], false)
        .unwrap()
        .sub(&planes.amin(&[1], false).unwrap())
        .unwrap();
    assert_eq!(
        spread.abs().unwrap().max().unwrap().item::<f32>().unwrap(),
        0.0
    );
    assert_eq!(
        nn::AlphaDropout::new(0.1).describe(),
        "AlphaDropout(p=0.1, inplace=False)"
    );
    let e = err(F::feature_alpha_dropout(
        &Tensor::ones([5], CPU).unwrap(),
        0.5,
        true,
    ));
    assert!(e.contains("feature_alpha_dropout"), "{e}");
}

#[test]
fn gumbel_softmax_samples_the_logits_categories() {
    let logits = t(&[6.0, 0.0, 0.0, 0.0, 0.0, 6.0], &[2, 3])
        .requires_grad_(true)
        .unwrap();
    let mut hits = 0;
    for seed in 0..200 {
        let y = fork_rng(seed, || F::gumbel_softmax(&logits, 1.0, true, -1)).unwrap();
        let v = y.to_vec::<f32>().unwrap();
        // Hard samples are one-hot rows.
        assert!(v.iter().all(|&e| e == 0.0 || e == 1.0), "{v:?}");
        assert_eq!(v.iter().sum::<f32>(), 2.0);
        hits += (v[0] == 1.0) as usize + (v[5] == 1.0) as usize;
    }
    // P(the favoured class) = e^6 / (e^6 + 2), about 0.995 per row.
    assert!(hits >= 390, "{hits} of 400 draws took the favoured class");
    // Soft samples are distributions, and the gradient reaches the logits through them.
    let soft = F::gumbel_softmax(&logits, 0.5, false, 1).unwrap();
    let s = soft.sum_dim(1).unwrap().to_vec::<f32>().unwrap();
    assert!(s.iter().all(|v| (v - 1.0).abs() < 1e-5), "{s:?}");
    let w = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    F::gumbel_softmax(&logits, 1.0, true, -1)
        .unwrap()
        .mul(&w)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let g = logits
        .grad()
        .unwrap()
        .abs()
        .unwrap()
        .sum()
        .unwrap()
        .item::<f32>()
        .unwrap();
    assert!(g > 0.0, "straight-through gradient");
    let e = err(F::gumbel_softmax(&logits, 0.0, false, -1));
    assert!(e.contains("tau"), "{e}");
    // A dimension other than the last.
    let y = F::gumbel_softmax(&logits.t().unwrap(), 1.0, true, 0).unwrap();
    assert_eq!(y.sum_dim(0).unwrap().to_vec::<f32>().unwrap(), [1.0, 1.0]);
}

#[test]
fn bilinear_is_x1_a_x2_per_output_feature() {
    let layer = nn::Bilinear::new(3, 2, 4);
    assert_eq!(layer.weight.shape(), [4, 3, 2]);
    let bound = 1.0 / 3f32.sqrt();
    assert!(
        layer
            .weight
            .tensor()
            .abs()
            .unwrap()
            .max()
            .unwrap()
            .item::<f32>()
            .unwrap()
            <= bound
    );
    let x1 = Tensor::randn([5, 3], CPU).unwrap();
    let x2 = Tensor::randn([5, 2], CPU).unwrap();
    let y = layer.forward_with(&x1, &x2).unwrap();
    assert_eq!(y.shape(), [5, 4]);
    let (a, b) = (x1.to_vec::<f32>().unwrap(), x2.to_vec::<f32>().unwrap());
    let w = layer.weight.tensor().to_vec::<f32>().unwrap();
    let bias = layer
        .bias
        .as_ref()
        .unwrap()
        .tensor()
        .to_vec::<f32>()
        .unwrap();
    let got = y.to_vec::<f32>().unwrap();
    for r in 0..5 {
        for o in 0..4 {
            let mut want = bias[o];
            for i in 0..3 {
                for j in 0..2 {
                    want += a[r * 3 + i] * w[(o * 3 + i) * 2 + j] * b[r * 2 + j];
                }
            }
            assert!((got[r * 4 + o] - want).abs() < 1e-5, "row {r} out {o}");
        }
    }
    assert_eq!(
        layer.describe(),
        "Bilinear(in1_features=3, in2_features=2, out_features=4, bias=True)"
    );
    let names: Vec<String> = layer
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["weight", "bias"]);
    let e = err(layer.forward(&x1));
    assert!(e.contains("forward_with(x1, x2)"), "{e}");
    let e = err(layer.forward_with(&x1, &x1));
    assert!(e.contains("Bilinear(") && e.contains("x2 [.., 2]"), "{e}");
    let e = err(layer.forward_with(&x1, &Tensor::zeros([4, 2], CPU).unwrap()));
    assert!(e.contains("same leading dimensions"), "{e}");
    assert_eq!(nn::Bilinear::new(3, 2, 4).bias(false).parameters().len(), 1);
}

#[test]
fn the_distance_modules_and_the_triplet_loss_with_a_distance() {
    let a = Tensor::randn([6, 4], CPU).unwrap();
    let p = Tensor::randn([6, 4], CPU).unwrap();
    let n = Tensor::randn([6, 4], CPU).unwrap();
    let cos = nn::CosineSimilarity::default().forward(&a, &p).unwrap();
    assert!(cos
        .allclose(&F::cosine_similarity(&a, &p, 1).unwrap(), 0.0, 0.0)
        .unwrap());
    let d = nn::PairwiseDistance::default().forward(&a, &p).unwrap();
    assert!(d
        .allclose(
            &F::pairwise_distance(&a, &p, 2.0, 1e-6, false).unwrap(),
            0.0,
            0.0
        )
        .unwrap());
    // The default distance is the triplet margin loss's; a custom one is used as given.
    let with = nn::TripletMarginWithDistanceLoss::new()
        .forward(&a, &p, &n)
        .unwrap();
    let plain = nn::TripletMarginLoss::new().forward(&a, &p, &n).unwrap();
    assert!(with.allclose(&plain, 1e-6, 1e-6).unwrap());
    let l1 = nn::TripletMarginWithDistanceLoss::new()
        .distance_function(|u, v| u.sub(v)?.abs()?.sum_dim(1))
        .margin(2.0)
        .reduction(nn::Reduction::None)
        .forward(&a, &p, &n)
        .unwrap();
    let by_hand = a
        .sub(&p)
        .unwrap()
        .abs()
        .unwrap()
        .sum_dim(1)
        .unwrap()
        .sub(&a.sub(&n).unwrap().abs().unwrap().sum_dim(1).unwrap())
        .unwrap()
        .add(2.0)
        .unwrap()
        .clamp_min(0.0)
        .unwrap();
    assert!(l1.allclose(&by_hand, 1e-6, 1e-6).unwrap());
    let e = err(F::triplet_margin_with_distance_loss(
        &a, &p, &n, None, 0.0, false,
    ));
    assert!(e.contains("margin must be greater than 0"), "{e}");
    let e = err(F::triplet_margin_with_distance_loss(
        &a,
        &p,
        &n.reshape([24]).unwrap(),
        None,
        1.0,
        false,
    ));
    assert!(e.contains("one number of dimensions"), "{e}");
    assert_eq!(a.dtype(), DType::F32);
}

#[test]
fn grid_sample_of_the_identity_grid_is_the_image() {
    let x = Tensor::randn([2, 3, 5, 7], CPU).unwrap();
    let eye = Tensor::from_vec(
        vec![
            1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0,
        ],
        vec![2, 2, 3],
        CPU,
    )
    .unwrap();
    for align in [false, true] {
        let grid = F::affine_grid(&eye, [2, 3, 5, 7], align).unwrap();
        assert_eq!(grid.shape(), [2, 5, 7, 2]);
        for mode in ["bilinear", "nearest", "bicubic"] {
            let y = F::grid_sample(&x, &grid, mode, "zeros", align).unwrap();
            assert!(y.allclose(&x, 1e-5, 1e-5).unwrap(), "{mode}, align {align}");
        }
    }
    // Far outside the image: zeros, the border's value, or the reflection.
    let img = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], vec![1, 1, 2, 2], CPU).unwrap();
    let far = Tensor::from_vec(vec![5.0f32, -5.0], vec![1, 1, 1, 2], CPU).unwrap();
    let at = |pad: &str| {
        F::grid_sample(&img, &far, "bilinear", pad, false)
            .unwrap()
            .item::<f32>()
            .unwrap()
    };
    assert_eq!(at("zeros"), 0.0);
    assert_eq!(at("border"), 2.0);
    let e = F::grid_sample(&img, &far, "bilinear", "mirror", false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("padding_mode") && e.contains("\"mirror\""),
        "{e}"
    );
    let e = F::grid_sample(&img, &far, "area", "zeros", false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mode") && e.contains("\"area\""), "{e}");
    let e = F::grid_sample(
        &img,
        &far.reshape([1, 2, 1]).unwrap(),
        "bilinear",
        "zeros",
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("expected a grid [1, H_out, W_out, 2]"), "{e}");
    let e = F::affine_grid(&eye, [1, 3, 5, 7], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected theta [1, 2, 3]"), "{e}");
}

/// Volumes: the identity affine grid samples a volume back, and trilinear sampling at any
/// point is the eight corners weighted by their opposite boxes (a direct loop in float64).
#[test]
fn grid_sample_samples_volumes_trilinearly() {
    let x = Tensor::randn([1, 2, 3, 4, 5], CPU).unwrap();
    let mut eye = vec![0.0f32; 12];
    for i in 0..3 {
        eye[i * 4 + i] = 1.0;
    }
    let eye = Tensor::from_vec(eye, vec![1, 3, 4], CPU).unwrap();
    for align in [false, true] {
        let grid = F::affine_grid(&eye, [1, 2, 3, 4, 5], align).unwrap();
        assert_eq!(grid.shape(), [1, 3, 4, 5, 3]);
        for mode in ["bilinear", "nearest"] {
            let y = F::grid_sample(&x, &grid, mode, "zeros", align).unwrap();
            assert!(y.allclose(&x, 1e-5, 1e-5).unwrap(), "{mode}, align {align}");
        }
    }
    let xs = x.to_dtype(DType::F64).unwrap();
    let v = xs.to_vec::<f64>().unwrap();
    let (d, h, w) = (3usize, 4usize, 5usize);
    // Points (x, y, z) in [-1, 1], some near the edges; align_corners: pixel = (g + 1) / 2 * (len - 1).
    let pts = [
        [0.3, -0.7, 0.1],
        [-0.95, 0.55, 0.9],
        [0.0, 0.0, -1.0],
        [0.81, 0.99, 0.35],
    ];
    let grid: Vec<f64> = pts.iter().flatten().copied().collect();
    let grid = Tensor::from_vec(grid, vec![1, 1, 1, 4, 3], CPU).unwrap();
    let y = F::grid_sample(&xs, &grid, "bilinear", "zeros", true).unwrap();
    assert_eq!(y.shape(), [1, 2, 1, 1, 4]);
    let got = y.to_vec::<f64>().unwrap();
    for c in 0..2 {
        for (k, p) in pts.iter().enumerate() {
            let at = |g: f64, len: usize| (g + 1.0) / 2.0 * (len - 1) as f64;
            let (px, py, pz) = (at(p[0], w), at(p[1], h), at(p[2], d));
            let mut want = 0.0;
            for (zi, wz) in [
                (pz.floor(), 1.0 - pz.fract()),
                (pz.floor() + 1.0, pz.fract()),
            ] {
                for (yi, wy) in [
                    (py.floor(), 1.0 - py.fract()),
                    (py.floor() + 1.0, py.fract()),
                ] {
                    for (xi, wx) in [
                        (px.floor(), 1.0 - px.fract()),
                        (px.floor() + 1.0, px.fract()),
                    ] {
                        let inside = zi < d as f64 && yi < h as f64 && xi < w as f64;
                        if inside {
                            let idx = ((c * d + zi as usize) * h + yi as usize) * w + xi as usize;
                            want += wx * wy * wz * v[idx];
                        }
                    }
                }
            }
            let g = got[c * 4 + k];
            assert!(
                (g - want).abs() < 1e-12,
                "channel {c} point {p:?}: {g} vs {want}"
            );
        }
    }
    let e = F::grid_sample(&xs, &grid, "bicubic", "zeros", true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bicubic") && e.contains("images"), "{e}");
    let flat_grid = grid.reshape([1, 1, 4, 3]).unwrap();
    let e = F::grid_sample(&xs, &flat_grid, "bilinear", "zeros", true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("expected a grid [1, D_out, H_out, W_out, 3]"),
        "{e}"
    );
    let e = F::affine_grid(&eye, [1, 1, 4, 5], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected theta [1, 2, 3]"), "{e}");
}

#[test]
fn a_spatial_transformer_learns_the_shift_between_two_images() {
    // A blob, and the same blob moved right: gradient descent on theta through affine_grid
    // and grid_sample finds the translation.
    let blob = |cx: f32| {
        let v: Vec<f32> = (0..16 * 16)
            .map(|i| {
                let (y, x) = ((i / 16) as f32, (i % 16) as f32);
                (-((x - cx).powi(2) + (y - 7.5).powi(2)) / 8.0).exp()
            })
            .collect();
        Tensor::from_vec(v, vec![1, 1, 16, 16], CPU).unwrap()
    };
    let (source, target) = (blob(6.0), blob(9.0));
    let theta = nn::Parameter::new(
        Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0], vec![1, 2, 3], CPU).unwrap(),
    )
    .unwrap();
    let mut opt = gpulab::optim::Adam::new(vec![theta.clone()], 0.02);
    let loss = || {
        let grid = F::affine_grid(&theta.tensor(), [1, 1, 16, 16], false).unwrap();
        let warped = F::grid_sample(&source, &grid, "bilinear", "zeros", false).unwrap();
        F::mse_loss(&warped, &target).unwrap()
    };
    let first = loss().item::<f32>().unwrap();
    for _ in 0..150 {
        opt.zero_grad();
        loss().backward().unwrap();
        opt.step().unwrap();
    }
    let last = loss().item::<f32>().unwrap();
    assert!(last < first * 0.05, "loss {first} -> {last}");
    // Reading the source 3 pixels to the left: x shifted by -3 / 8 in normalised units.
    let tx = theta.tensor().to_vec::<f32>().unwrap()[2];
    assert!((tx + 3.0 / 8.0).abs() < 0.05, "tx {tx}");
}

#[test]
fn embedding_bag_reduces_each_bag_as_torch() {
    let w = Tensor::arange(0.0, 12.0, CPU)
        .unwrap()
        .reshape([4, 3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let idx = Tensor::from_vec(vec![1i64, 2, 0, 3], vec![4], CPU).unwrap();
    let off = Tensor::from_vec(vec![0i64, 2, 2], vec![3], CPU).unwrap();
    let bag = |mode: &str, pad: Option<i64>| {
        F::embedding_bag(&idx, &w, Some(&off), mode, None, false, pad).unwrap()
    };
    // torch 2.9's answers: the second bag is empty (zeros).
    assert_eq!(
        bag("max", None).to_vec::<f32>().unwrap(),
        [6., 7., 8., 0., 0., 0., 9., 10., 11.]
    );
    assert_eq!(
        bag("mean", Some(0)).to_vec::<f32>().unwrap(),
        [4.5, 5.5, 6.5, 0., 0., 0., 9., 10., 11.]
    );
    // The sum's gradient counts each row once per time it was read.
    bag("sum", None).sum().unwrap().backward().unwrap();
    assert_eq!(
        w.grad()
            .unwrap()
            .sum_dim(1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [3., 3., 3., 3.]
    );
    let layer = nn::EmbeddingBag::new(10, 3).mode("max").padding_idx(0);
    assert_eq!(
        layer.describe(),
        "EmbeddingBag(10, 3, mode='max', padding_idx=0)"
    );
    let row0 = layer.weight.tensor().narrow(0, 0, 1).unwrap();
    assert_eq!(
        row0.abs().unwrap().sum().unwrap().item::<f32>().unwrap(),
        0.0
    );
    let y = layer
        .forward(&Tensor::from_vec(vec![1i64, 2, 3, 4], vec![2, 2], CPU).unwrap())
        .unwrap();
    assert_eq!(y.shape(), [2, 3]);
    let err = |r: gpulab::error::Result<Tensor>| r.unwrap_err().to_string();
    let e = err(F::embedding_bag(&idx, &w, None, "sum", None, false, None));
    assert!(e.contains("needs offsets"), "{e}");
    let bad = Tensor::from_vec(vec![1i64, 0], vec![2], CPU).unwrap();
    let e = err(F::embedding_bag(
        &idx,
        &w,
        Some(&bad),
        "sum",
        None,
        false,
        None,
    ));
    assert!(e.contains("offsets[0] has to be 0"), "{e}");
    let e = err(F::embedding_bag(
        &idx,
        &w,
        Some(&off),
        "mean",
        Some(&w),
        false,
        None,
    ));
    assert!(e.contains("only supported for mode \"sum\""), "{e}");
    let far = Tensor::from_vec(vec![9i64], vec![1], CPU).unwrap();
    let zero = Tensor::from_vec(vec![0i64], vec![1], CPU).unwrap();
    let e = err(F::embedding_bag(
        &far,
        &w,
        Some(&zero),
        "sum",
        None,
        false,
        None,
    ));
    assert!(
        e.contains("index 9 is out of range for a table of 4 rows"),
        "{e}"
    );
}
