//! The extra activations and shape layers: torch's reprs, a decoder built from them, and bad
//! input named. Values and gradients against torch, special values included (NaN, infinities,
//! the kinks), are `bench/torch_parity.py`'s `more elu|hardtanh|relu6|mish` cases; gradients
//! by finite differences are in `autograd_gradcheck.rs`.

use gpulab::nn::{self, Module};
use gpulab::{fork_rng, DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

#[test]
fn the_layers_print_like_torch() {
    // torch 2.9's reprs of the same layers.
    let shown: Vec<String> = [
        Box::new(nn::ELU::default()) as Box<dyn Module>,
        Box::new(nn::ELU::new(0.5)),
        Box::new(nn::Hardtanh::default()),
        Box::new(nn::ReLU6),
        Box::new(nn::Mish),
        Box::new(nn::LogSoftmax::new(1)),
        Box::new(nn::Identity),
        Box::new(nn::Unflatten::new(1, &[64, 7, 7])),
        Box::new(nn::Unflatten::new(-1, &[5])),
    ]
    .iter()
    .map(|m| m.describe())
    .collect();
    assert_eq!(
        shown,
        [
            "ELU(alpha=1.0)",
            "ELU(alpha=0.5)",
            "Hardtanh(min_val=-1.0, max_val=1.0)",
            "ReLU6()",
            "Mish()",
            "LogSoftmax(dim=1)",
            "Identity()",
            "Unflatten(dim=1, unflattened_size=(64, 7, 7))",
            "Unflatten(dim=-1, unflattened_size=(5,))",
        ]
    );
}

/// A small decoder, as an autoencoder's second half: a vector becomes a feature map
/// (Unflatten) and grows back to an image (ConvTranspose2d, Upsample), and it trains.
#[test]
fn a_decoder_of_the_new_layers_learns_to_draw_a_square() {
    fork_rng(3, || {
        let decoder = nn::Sequential::new()
            .add(nn::Linear::new(4, 8 * 4 * 4))
            .add(nn::ELU::default())
            .add(nn::Unflatten::new(1, &[8, 4, 4]))
            .add(nn::ConvTranspose2d::new(8, 4, 2).stride(2))
            .add(nn::Mish)
            .add(nn::Upsample::new(2.0))
            .add(nn::Conv2d::new(4, 1, 3).padding("same"))
            .add(nn::Identity);
        let z = Tensor::randn((6, 4), CPU).unwrap();
        let out = decoder.forward(&z).unwrap();
        assert_eq!(out.shape(), &[6, 1, 16, 16]);
        // Target: a bright square in the middle.
        let target: Vec<f32> = (0..16 * 16)
            .map(|i| {
                let (r, c) = (i / 16, i % 16);
                if (4..12).contains(&r) && (4..12).contains(&c) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        let target = Tensor::from_vec(target, (1, 1, 16, 16), CPU)
            .unwrap()
            .expand((6, 1, 16, 16))
            .unwrap();
        let mut opt = gpulab::optim::Adam::new(decoder.parameters(), 0.01);
        let loss = |d: &nn::Sequential| F::mse_loss(&d.forward(&z).unwrap(), &target).unwrap();
        let first: f32 = loss(&decoder).item().unwrap();
        for _ in 0..60 {
            opt.zero_grad();
            loss(&decoder).backward().unwrap();
            opt.step().unwrap();
        }
        let last: f32 = loss(&decoder).item().unwrap();
        assert!(last < first * 0.2, "loss {first} -> {last}");
    })
}

#[test]
fn kinks_and_bad_input_follow_torch() {
    // hardtanh passes no gradient at its bounds, relu6 none at 0 and 6; elu passes alpha at 0.
    let x = Tensor::from_vec(vec![-1.0f64, 0.0, 0.5, 1.0, 6.0], 5, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    F::hardtanh(&x, -1.0, 1.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        [0.0, 1.0, 1.0, 0.0, 0.0]
    );
    x.zero_grad();
    F::relu6(&x).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        [0.0, 0.0, 1.0, 1.0, 0.0]
    );
    x.zero_grad();
    F::elu(&x, 0.5).unwrap().sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    assert!(
        (g[0] - 0.5 * (-1f64).exp()).abs() < 1e-15 && g[1] == 0.5,
        "{g:?}"
    );
    // Integers keep their dtype under hardtanh (bounds truncated, as torch).
    let ints = Tensor::from_vec(vec![-3i32, 0, 2, 9], 4, CPU).unwrap();
    let y = F::relu6(&ints).unwrap();
    assert_eq!(y.dtype(), DType::I32);
    assert_eq!(y.to_vec::<i32>().unwrap(), [0, 0, 2, 6]);

    let err = |r: Result<Tensor, gpulab::Error>| r.unwrap_err().to_string();
    let e = err(F::hardtanh(&x, 2.0, 1.0));
    assert!(
        e.contains("min_val (2) must not be greater than max_val (1)"),
        "{e}"
    );
    let b = Tensor::from_vec(vec![true, false], 2, CPU).unwrap();
    assert!(err(F::hardtanh(&b, -1.0, 1.0)).contains("bool"));
    let u = Tensor::from_vec(vec![1u8, 2], 2, CPU).unwrap();
    assert!(err(F::hardtanh(&u, -1.0, 1.0)).contains("uint8"));
    assert!(err(F::elu(&ints, 1.0)).contains("floating-point"));
    let flat = Tensor::ones((2, 12), CPU).unwrap();
    let e = err(nn::Unflatten::new(1, &[5, 2]).forward(&flat));
    assert!(e.contains("multiply to 10") && e.contains("has 12"), "{e}");
    let e = err(nn::Unflatten::new(2, &[3, 4]).forward(&flat));
    assert!(e.contains("out of range"), "{e}");
    assert_eq!(
        nn::Unflatten::new(-1, &[3, 4])
            .forward(&flat)
            .unwrap()
            .shape(),
        &[2, 3, 4]
    );
}

/// PReLU, InstanceNorm and Dropout2d: torch's reprs and parameter names, and Dropout2d's
/// channel-wise draws (values and gradients of prelu / instance_norm against torch:
/// bench/torch_parity.py's `more prelu*`, `more instance_norm*`).
#[test]
fn prelu_instance_norm_and_dropout2d_are_torchs() {
    use gpulab::nn::{Dropout2d, InstanceNorm2d, PReLU};
    assert_eq!(PReLU::default().describe(), "PReLU(num_parameters=1)");
    let p = PReLU::new(3, 0.1);
    assert_eq!(p.describe(), "PReLU(num_parameters=3)");
    let names: Vec<String> = p.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight"]);
    let x = Tensor::from_vec(vec![-1.0f32, 2.0, -3.0], (1, 3), Device::Cpu).unwrap();
    assert_eq!(
        p.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        [-0.1, 2.0, -0.3]
    );
    let e = p
        .forward(&Tensor::ones((2, 4), Device::Cpu).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("3 slopes"), "{e}");

    let n = InstanceNorm2d::new_2d(3);
    assert_eq!(
        n.describe(),
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)"
    );
    assert!(n.parameters().is_empty());
    let a = InstanceNorm2d::new_2d(3).affine(true);
    let names: Vec<String> = a.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    let img = Tensor::randn((2, 3, 4, 4), Device::Cpu).unwrap();
    let y = a.forward(&img).unwrap();
    // Each sample's channel has mean 0 and (biased) variance 1.
    let m = y.mean_dim(-1).unwrap().mean_dim(-1).unwrap();
    assert!(m.abs().unwrap().max().unwrap().item::<f32>().unwrap() < 1e-5);
    let e = n
        .forward(&Tensor::ones((2, 4, 4, 4), Device::Cpu).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("[N, 3, H, W]"), "{e}");

    let mut d = Dropout2d::new(0.5);
    assert_eq!(d.describe(), "Dropout2d(p=0.5, inplace=False)");
    let ones = Tensor::ones((8, 16, 3, 3), Device::Cpu).unwrap();
    let out = fork_rng(3, || d.forward(&ones)).unwrap();
    // Every channel is all 0 or all 2 (kept and scaled by 1 / (1 - p)), and both happen.
    let v = out.reshape([8 * 16, 9]).unwrap();
    let (lo, hi) = (v.amin(&[1], false).unwrap(), v.amax(&[1], false).unwrap());
    assert!(lo.eq(&hi).unwrap().all().unwrap().item::<bool>().unwrap());
    let kept = hi.gt(0.0).unwrap().sum().unwrap().item::<i64>().unwrap();
    assert!((16..=112).contains(&kept), "{kept} of 128 channels kept");
    assert_eq!(hi.max().unwrap().item::<f32>().unwrap(), 2.0);
    d.set_training(false);
    assert!(d.forward(&ones).unwrap().equal(&ones).unwrap());
    let e = F::dropout2d(&Tensor::ones(4, Device::Cpu).unwrap(), 0.5, true).unwrap_err();
    assert!(e.to_string().contains("[N, C, H, W]"), "{e}");
}

/// The rest of torch's activation layers print as torch 2.9's; glu refuses an odd size.
#[test]
fn more_activation_layers_print_like_torch() {
    use gpulab::nn::{
        Hardshrink, Hardsigmoid, Hardswish, LogSigmoid, Softmin, Softshrink, Softsign, Tanhshrink,
        CELU, GLU, SELU,
    };
    let layers: Vec<(Box<dyn Module>, &str)> = vec![
        (Box::new(Hardsigmoid), "Hardsigmoid()"),
        (Box::new(Hardswish), "Hardswish()"),
        (Box::new(LogSigmoid), "LogSigmoid()"),
        (Box::new(Softsign), "Softsign()"),
        (Box::new(Tanhshrink), "Tanhshrink()"),
        (Box::new(Softshrink::default()), "Softshrink(0.5)"),
        (Box::new(Hardshrink(0.3)), "Hardshrink(0.3)"),
        (Box::new(GLU::default()), "GLU(dim=-1)"),
        (Box::new(CELU::default()), "CELU(alpha=1.0)"),
        (Box::new(CELU(0.5)), "CELU(alpha=0.5)"),
        (Box::new(SELU), "SELU()"),
        (Box::new(Softmin(1)), "Softmin(dim=1)"),
    ];
    let x = Tensor::randn((2, 4), Device::Cpu).unwrap();
    for (layer, repr) in layers {
        assert_eq!(layer.describe(), repr);
        let y = layer.forward(&x).unwrap();
        assert_eq!(y.dtype(), DType::F32, "{repr}");
    }
    let e = F::glu(&Tensor::ones((2, 3), Device::Cpu).unwrap(), -1).unwrap_err();
    assert!(e.to_string().contains("even size"), "{e}");
}

/// The in-place activations write into the tensor and return it; a tensor backward needs is
/// refused with the out-of-place way named.
#[test]
fn inplace_activations_write_into_the_tensor() {
    use gpulab::{Device, Tensor, F};
    let x = Tensor::from_vec(vec![-2.0f32, -0.5, 0.5, 3.0], vec![4], Device::Cpu).unwrap();
    let same = F::hardtanh_(&x, -1.0, 2.0).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), [-1.0, -0.5, 0.5, 2.0]);
    assert_eq!(same.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    F::threshold_(&x, 0.0, 9.0).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), [9.0, 9.0, 0.5, 2.0]);
    let ints = Tensor::from_vec(vec![-3i64, 4], vec![2], Device::Cpu).unwrap();
    F::relu_(&ints).unwrap();
    assert_eq!(ints.to_vec::<i64>().unwrap(), [0, 4]);
    let w = x.requires_grad_(true).unwrap();
    let tracked = w.mul(2.0).unwrap();
    let e = F::elu_(&tracked, 1.0).unwrap_err().to_string();
    assert!(e.contains("in-place"), "{e}");
}
