//! `nn::init` (torch's `nn.init`) and freezing parameters: gains and fans as torch computes
//! them (the numbers on the right are what torch 2.9.1 printed), each distribution's range
//! and spread, writes through a model's parameters, and a frozen layer that training leaves
//! alone.

use gpulab::nn::init::{self, FanMode};
use gpulab::nn::{self, Module};
use gpulab::optim::SGD;
use gpulab::{fork_rng, DType, Device, Tensor};

const CPU: Device = Device::Cpu;

fn values(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn gains_and_fans_are_torchs() {
    let gains = [
        ("linear", None, 1.0),
        ("sigmoid", None, 1.0),
        ("tanh", None, 1.6666666666666667),
        ("relu", None, std::f64::consts::SQRT_2),
        ("leaky_relu", None, 1.4141428569978354),
        ("leaky_relu", Some(0.2), 1.3867504905630728),
        ("selu", None, 0.75),
    ];
    for (name, param, torch) in gains {
        let g = init::calculate_gain(name, param).unwrap();
        assert!((g - torch).abs() < 1e-15, "{name}: {g} vs torch's {torch}");
    }
    let e = init::calculate_gain("swish", None).unwrap_err().to_string();
    assert!(e.contains("swish"), "{e}");
    let fans = |dims: &[usize]| {
        init::calculate_fan_in_and_fan_out(&Tensor::zeros(dims.to_vec(), CPU).unwrap()).unwrap()
    };
    assert_eq!(fans(&[4, 3]), (3, 4));
    assert_eq!(fans(&[8, 3, 5, 5]), (75, 200));
    let e = init::calculate_fan_in_and_fan_out(&Tensor::zeros(5, CPU).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("fewer than 2 dimensions") && e.contains("[5]"),
        "{e}"
    );
}

#[test]
fn each_distribution_has_its_range_and_spread() {
    fork_rng(3, || {
        let w = Tensor::zeros((200, 300), CPU).unwrap();
        // Xavier uniform: U(-a, a), a = sqrt(6 / 500); its std is a / sqrt(3).
        init::xavier_uniform_(&w, 1.0).unwrap();
        let a = (6.0f64 / 500.0).sqrt();
        let v = values(&w);
        let top = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(top <= a && top > 0.99 * a, "max |w| {top}, bound {a}");
        let (m, s) = mean_std(&v);
        assert!(
            m.abs() < 0.01 * a && (s / (a / 3f64.sqrt()) - 1.0).abs() < 0.02,
            "{m} {s}"
        );

        // Kaiming normal for a ReLU, fan_in 300: std sqrt(2 / 300).
        init::kaiming_normal_(&w, 0.0, FanMode::FanIn, "relu").unwrap();
        let (m, s) = mean_std(&values(&w));
        let want = (2.0f64 / 300.0).sqrt();
        assert!(
            m.abs() < 0.01 * want && (s / want - 1.0).abs() < 0.02,
            "{m} {s} {want}"
        );
        // Kaiming uniform with fan_out 200 and torch's default leaky_relu gain.
        init::kaiming_uniform_(&w, 5f64.sqrt(), FanMode::FanOut, "leaky_relu").unwrap();
        let bound = (3.0f64).sqrt()
            * init::calculate_gain("leaky_relu", Some(5f64.sqrt())).unwrap()
            / 200f64.sqrt();
        let top = values(&w).iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(top <= bound && top > 0.99 * bound, "{top} {bound}");

        init::xavier_normal_(&w, 2.0).unwrap();
        let (_, s) = mean_std(&values(&w));
        assert!(
            (s / (2.0 * (2.0f64 / 500.0).sqrt()) - 1.0).abs() < 0.02,
            "{s}"
        );

        init::trunc_normal_(&w, 0.5, 1.0, 0.0, 1.0).unwrap();
        assert!(values(&w).iter().all(|x| (0.0..=1.0).contains(x)));
        assert!(init::trunc_normal_(&w, 0.0, 1.0, 40.0, 41.0).is_err());

        init::uniform_(&w, 2.0, 3.0).unwrap();
        assert!(values(&w).iter().all(|x| (2.0..3.0).contains(x)));
        init::normal_(&w, -1.0, 0.1).unwrap();
        let (m, s) = mean_std(&values(&w));
        assert!(
            (m + 1.0).abs() < 0.002 && (s - 0.1).abs() < 0.002,
            "{m} {s}"
        );
    });
    let m = Tensor::zeros((2, 3), CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap();
    init::eye_(&m).unwrap();
    assert_eq!(values(&m), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    assert_eq!(m.dtype(), DType::F64, "the target keeps its dtype");
    init::constant_(&m, 2.5).unwrap();
    assert_eq!(values(&m), [2.5; 6]);
    init::ones_(&m).unwrap();
    init::zeros_(&m.narrow(1, 0, 1).unwrap()).unwrap();
    assert_eq!(
        values(&m),
        [0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        "written through a view"
    );
    let ints = Tensor::zeros_dtype((2, 2), DType::I64, CPU).unwrap();
    let e = init::ones_(&ints).unwrap_err().to_string();
    assert!(e.contains("floating-point") && e.contains("int64"), "{e}");
}

/// Initialising a layer's parameter writes into the layer, keeps it a leaf that requires
/// grad, and records nothing.
#[test]
fn init_writes_through_a_models_parameters() {
    let layer = nn::Linear::new(3, 2);
    init::constant_(&layer.weight, 0.25).unwrap();
    init::zeros_(layer.bias.as_ref().unwrap()).unwrap();
    let y = layer.forward(&Tensor::ones((1, 3), CPU).unwrap()).unwrap();
    assert_eq!(values(&y), [0.75, 0.75]);
    let w = layer.weight.tensor();
    assert!(w.requires_grad() && w.is_leaf() && w.grad().is_none());
}

/// A frozen first layer: training changes only the second, the summary counts it as
/// non-trainable, and unfreezing lets gradients reach it again.
#[test]
fn a_frozen_layer_is_left_alone_by_training() {
    fork_rng(11, || {
        let model = nn::Sequential::new()
            .add(nn::Linear::new(3, 4))
            .add(nn::ReLU)
            .add(nn::Linear::new(4, 1));
        let first = model.parameters()[0].clone();
        let last = model.parameters()[2].clone();
        let (w0, w2) = (values(&first.tensor()), values(&last.tensor()));
        model.layer(0).unwrap().requires_grad_(false).unwrap();
        assert!(!first.requires_grad() && last.requires_grad());
        assert_eq!(model.num_trainable_parameters(), 5);
        let summary = model.summary().to_string();
        assert!(
            summary.contains("Trainable params: 5") && summary.contains("Non-trainable params: 16"),
            "{summary}"
        );

        let mut opt = SGD::new(model.parameters(), 0.1);
        let x = Tensor::randn((8, 3), CPU).unwrap();
        model
            .forward(&x)
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert!(
            first.grad().is_none(),
            "no gradient reaches a frozen parameter"
        );
        opt.step().unwrap();
        assert_eq!(values(&first.tensor()), w0, "the frozen layer did not move");
        assert_ne!(values(&last.tensor()), w2, "the other one did");

        model.requires_grad_(true).unwrap();
        opt.zero_grad();
        model
            .forward(&x)
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert!(first.grad().is_some());
        assert!(!model.summary().to_string().contains("Non-trainable"));
    })
}
