//! Autograd on CUDA against the CPU: the same model, weights and batch give the same
//! gradients, and the same seeded training run the same loss curve. `#[ignore]`d like every
//! GPU test (`cargo test -- --ignored` on a GPU machine); without a device each prints
//! "skipped: no CUDA device".
//!
//! Tolerance: float32 on both devices, but cuBLAS and the reduction kernels sum in another
//! order than the CPU, so values agree to about 1e-6 relative per op; after a few layers
//! and a backward pass we allow 1e-3 * (1 + |cpu|) per element.

use gpulab::nn::{self, Module};
use gpulab::optim::Adam;
use gpulab::{fork_rng, manual_seed, Device, Tensor, F};

mod common;
use common::have_gpu;

const CPU: Device = Device::Cpu;
const GPU: Device = Device::Cuda(0);
const TOL: f32 = 1e-3;

#[track_caller]
fn close(what: &str, cpu: &Tensor, gpu: &Tensor) {
    assert_eq!(cpu.shape(), gpu.shape(), "{what}: shapes");
    let a = cpu.to_vec::<f32>().unwrap();
    let b = gpu.cpu().unwrap().to_vec::<f32>().unwrap();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(
            (x - y).abs() <= TOL * (1.0 + x.abs()),
            "{what}[{i}]: cpu {x}, cuda {y}"
        );
    }
}

fn cnn() -> nn::Sequential {
    nn::Sequential::new()
        .add(nn::Conv2d::new(1, 4, 3).padding(1))
        .add(nn::ReLU)
        .add(nn::MaxPool2d::new(2))
        .add(nn::Flatten)
        .add(nn::Linear::new(4 * 4 * 4, 16))
        .add(nn::Sigmoid)
        .add(nn::Linear::new(16, 3))
}

/// Builds the model twice from one seed, one copy per device.
fn twin(build: fn() -> nn::Sequential) -> (nn::Sequential, nn::Sequential) {
    // Forks, so that other tests' draws cannot come between and the copies differ.
    let a = fork_rng(9, build);
    let b = fork_rng(9, build);
    b.to(GPU).unwrap();
    (a, b)
}

#[test]
#[ignore = "needs a CUDA device"]
fn cnn_gradients_on_cuda_equal_the_cpus() {
    if !have_gpu() {
        return;
    }
    let (cpu_model, gpu_model) = twin(cnn);
    manual_seed(1);
    let x = Tensor::randn((5, 1, 8, 8), CPU).unwrap();
    let y = Tensor::from_vec(vec![0i64, 2, 1, 1, 0], 5, CPU).unwrap();
    let xg = x.to(GPU).unwrap().requires_grad_(true).unwrap();
    let x = x.requires_grad_(true).unwrap();
    let lc = F::cross_entropy(&cpu_model.forward(&x).unwrap(), &y).unwrap();
    let lg = F::cross_entropy(&gpu_model.forward(&xg).unwrap(), &y).unwrap();
    close("loss", &lc, &lg);
    lc.backward().unwrap();
    lg.backward().unwrap();
    close("input grad", &x.grad().unwrap(), &xg.grad().unwrap());
    for (i, (pc, pg)) in cpu_model
        .parameters()
        .iter()
        .zip(gpu_model.parameters())
        .enumerate()
    {
        assert!(
            pg.grad().unwrap().is_cuda(),
            "parameter {i}: grad on the device"
        );
        close(
            &format!("parameter {i} grad"),
            &pc.grad().unwrap(),
            &pg.grad().unwrap(),
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn elementwise_rules_on_cuda_equal_the_cpus() {
    if !have_gpu() {
        return;
    }
    manual_seed(2);
    let a = Tensor::randn((3, 4), CPU).unwrap();
    let b = Tensor::randn(4, CPU).unwrap();
    let run = |a: &Tensor, b: &Tensor| {
        let a = a.clone().requires_grad_(true).unwrap();
        let b = b.clone().requires_grad_(true).unwrap();
        let y = a
            .mul(&b)
            .unwrap()
            .maximum(&a.abs().unwrap())
            .unwrap()
            .add(&a.tanh().unwrap().div(&b.exp().unwrap()).unwrap())
            .unwrap()
            .max_dim(1)
            .unwrap()
            .sum()
            .unwrap()
            .add(&F::binary_cross_entropy_with_logits(&a, &a.sigmoid().unwrap()).unwrap())
            .unwrap();
        y.backward().unwrap();
        (a.grad().unwrap(), b.grad().unwrap())
    };
    let (ga, gb) = run(&a, &b);
    let (ga2, gb2) = run(&a.to(GPU).unwrap(), &b.to(GPU).unwrap());
    close("a grad", &ga, &ga2);
    close("b grad", &gb, &gb2);
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_seeded_training_run_gives_the_same_loss_curve_on_cuda() {
    if !have_gpu() {
        return;
    }
    let (cpu_model, gpu_model) = twin(cnn);
    manual_seed(4);
    let x = Tensor::randn((16, 1, 8, 8), CPU).unwrap();
    let y: Vec<i64> = (0..16).map(|i| i % 3).collect();
    let y = Tensor::from_vec(y, 16, CPU).unwrap();
    let xg = x.to(GPU).unwrap();
    let curve = |model: &nn::Sequential, x: &Tensor| -> Vec<f32> {
        let mut opt = Adam::new(model.parameters(), 0.01);
        (0..20)
            .map(|_| {
                let loss = F::cross_entropy(&model.forward(x).unwrap(), &y).unwrap();
                opt.zero_grad();
                loss.backward().unwrap();
                opt.step().unwrap();
                loss.cpu().unwrap().item::<f32>().unwrap()
            })
            .collect()
    };
    let a = curve(&cpu_model, &x);
    let b = curve(&gpu_model, &xg);
    for (i, (p, q)) in a.iter().zip(&b).enumerate() {
        assert!(
            (p - q).abs() <= 1e-2 * (1.0 + p.abs()),
            "step {i}: cpu {p}, cuda {q}"
        );
    }
    assert!(a[19] < a[0], "the loss fell: {a:?}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_batch_on_another_device_than_the_model_says_how_to_fix_it() {
    if !have_gpu() {
        return;
    }
    let model = cnn();
    let x = Tensor::zeros((1, 1, 8, 8), GPU).unwrap();
    let err = model.forward(&x).unwrap_err().to_string();
    assert!(
        err.contains("Conv2d(1, 4")
            && err.contains("cuda:0")
            && err.contains("model.to(Device::Cuda(0))"),
        "{err}"
    );
}

/// The torch table of `common/ties.rs` on CUDA: the masks there are comparison kernels, so
/// ties, bounds and NaNs give exactly the CPU's (and torch's) gradients.
#[test]
#[ignore = "needs a CUDA device"]
fn element_picking_gradients_on_cuda_follow_torch() {
    if !have_gpu() {
        return;
    }
    common::ties::check_on(GPU);
}

/// conv2d's other torch arguments on CUDA (the composed gather + matmul path, per group):
/// dilation, (h, w) strides and paddings, groups, "same" with an even kernel, and
/// conv_transpose2d after it; outputs and gradients equal the CPU's (its fused path) in f64
/// and f32.
#[test]
#[ignore = "needs a CUDA device"]
fn conv2d_dilation_groups_and_same_on_cuda_equal_the_cpus() {
    use gpulab::DType;
    if !have_gpu() {
        return;
    }
    let (x0, w0, b0) = fork_rng(6, || {
        (
            Tensor::randn((2, 4, 7, 8), CPU).unwrap(),
            Tensor::randn((6, 2, 3, 2), CPU).unwrap(),
            Tensor::randn(6, CPU).unwrap(),
        )
    });
    for (dtype, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
        for (stride, padding, dilation) in [
            ((2, 1), nn::Padding::from((1, 2)), (2, 3)),
            ((1, 1), nn::Padding::from("same"), (1, 2)),
        ] {
            let run = |dev: Device| {
                let leaf = |t: &Tensor| {
                    t.to_dtype(dtype)
                        .unwrap()
                        .to(dev)
                        .unwrap()
                        .requires_grad_(true)
                        .unwrap()
                };
                let (x, w, b) = (leaf(&x0), leaf(&w0), leaf(&b0));
                let y = F::conv2d(&x, &w, Some(&b), stride, padding.clone(), dilation, 2).unwrap();
                // And back up with the transposed convolution (weight [6, 2, 3, 2] read as
                // [C_in 6, C_out/g 2]: 4 output channels in 2 groups).
                let up = F::conv_transpose2d(&y, &w, None, stride, 1, 0, 2, dilation).unwrap();
                y.square()
                    .unwrap()
                    .sum()
                    .unwrap()
                    .add(&up.square().unwrap().sum().unwrap())
                    .unwrap()
                    .backward()
                    .unwrap();
                let f = common::vals;
                [
                    f(&y),
                    f(&x.grad().unwrap()),
                    f(&w.grad().unwrap()),
                    f(&b.grad().unwrap()),
                ]
            };
            let what = format!("{dtype:?} {padding:?} dilation {dilation:?}: cuda against cpu");
            let names = ["output", "x grad", "w grad", "b grad"];
            common::parts_close(&what, &names, &run(GPU), &run(CPU), tol);
        }
    }
}

/// interpolate on CUDA (index_select along each axis, weighted for bilinear), and max/avg
/// pooling with dilation, ceil_mode and count_include_pad: outputs and gradients equal the
/// CPU's, in f32 and f64.
#[test]
#[ignore = "needs a CUDA device"]
fn interpolate_and_pooling_options_on_cuda_equal_the_cpus() {
    use gpulab::DType;
    if !have_gpu() {
        return;
    }
    let x0 = fork_rng(8, || Tensor::randn((2, 3, 5, 7), CPU).unwrap());
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        for (size, mode, align) in [
            (nn::Resize::from(2.0), "nearest", false),
            (nn::Resize::from((4, 9)), "nearest-exact", false),
            (nn::Resize::from((1.5, 2.5)), "bilinear", false),
            (nn::Resize::from((9, 4)), "bilinear", true),
        ] {
            let run = |dev: Device| {
                let x = x0
                    .to_dtype(dtype)
                    .unwrap()
                    .to(dev)
                    .unwrap()
                    .requires_grad_(true)
                    .unwrap();
                let y = F::interpolate(&x, size, mode, align).unwrap();
                // And pooling with torch's other arguments, on the same input.
                let m = F::max_pool2d(&x, (2, 3), 2, 1, (1, 2), true).unwrap();
                let a = F::avg_pool2d(&x, 3, 2, 1, true, false).unwrap();
                y.square()
                    .unwrap()
                    .sum()
                    .unwrap()
                    .add(&m.square().unwrap().sum().unwrap())
                    .unwrap()
                    .add(&a.square().unwrap().sum().unwrap())
                    .unwrap()
                    .backward()
                    .unwrap();
                let f = common::vals;
                [f(&y), f(&x.grad().unwrap())]
            };
            let what = format!("{dtype:?} {mode} {size:?}: cuda against cpu");
            common::parts_close(&what, &["output", "x grad"], &run(GPU), &run(CPU), tol);
        }
    }
}

/// RNN, LSTM and GRU on CUDA (matmuls and element-wise ops step by step): outputs, final
/// states and gradients through time equal the CPU's, in f64 and f32.
#[test]
#[ignore = "needs a CUDA device"]
fn recurrent_layers_on_cuda_equal_the_cpus() {
    use gpulab::DType;
    if !have_gpu() {
        return;
    }
    let x0 = fork_rng(9, || Tensor::randn((2, 5, 3), CPU).unwrap());
    for (dtype, tol) in [(DType::F64, 1e-10), (DType::F32, 1e-4)] {
        for kind in ["rnn", "lstm", "gru"] {
            let run = |dev: Device| {
                let layer = fork_rng(4, || {
                    match kind {
                        "rnn" => nn::RNN::new(3, 6),
                        "lstm" => nn::LSTM::new(3, 6),
                        _ => nn::GRU::new(3, 6),
                    }
                    .num_layers(2)
                    .batch_first(true)
                });
                layer.to_dtype(dtype).unwrap();
                layer.to(dev).unwrap();
                let x = x0
                    .to_dtype(dtype)
                    .unwrap()
                    .to(dev)
                    .unwrap()
                    .requires_grad_(true)
                    .unwrap();
                let r = layer.forward_with(&x, None, None).unwrap();
                r.output
                    .square()
                    .unwrap()
                    .sum()
                    .unwrap()
                    .add(&r.h_n.sum().unwrap())
                    .unwrap()
                    .backward()
                    .unwrap();
                let f = common::vals;
                let p = layer.parameters();
                [
                    f(&r.output),
                    f(&r.h_n),
                    f(&x.grad().unwrap()),
                    f(&p[0].grad().unwrap()),
                    f(&p[1].grad().unwrap()),
                ]
            };
            let what = format!("{dtype:?} {kind}: cuda against cpu");
            let names = [
                "output",
                "h_n",
                "x grad",
                "weight_ih_l0 grad",
                "weight_hh_l0 grad",
            ];
            common::parts_close(&what, &names, &run(GPU), &run(CPU), tol);
        }
    }
}

/// Attention on CUDA: scaled dot-product attention (causal) and multi-head attention with a
/// padding mask; outputs and gradients equal the CPU's, in f64 and f32.
#[test]
#[ignore = "needs a CUDA device"]
fn attention_on_cuda_equals_the_cpus() {
    use gpulab::DType;
    if !have_gpu() {
        return;
    }
    let x0 = fork_rng(12, || Tensor::randn((2, 5, 8), CPU).unwrap());
    let pad: Vec<bool> = (0..10).map(|i| i % 5 == 4).collect();
    for (dtype, tol) in [(DType::F64, 1e-10), (DType::F32, 1e-4)] {
        let run = |dev: Device| {
            let mha = fork_rng(3, || nn::MultiheadAttention::new(8, 2).batch_first(true));
            mha.to_dtype(dtype).unwrap();
            mha.to(dev).unwrap();
            let x = x0
                .to_dtype(dtype)
                .unwrap()
                .to(dev)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let mask = Tensor::from_vec(pad.clone(), (2, 5), dev).unwrap();
            let a = mha.attend(&x, &x, &x, Some(&mask), true, None).unwrap();
            let s = F::scaled_dot_product_attention(&x, &x, &x, None, 0.0, true, None).unwrap();
            a.output
                .square()
                .unwrap()
                .sum()
                .unwrap()
                .add(&s.square().unwrap().sum().unwrap())
                .unwrap()
                .backward()
                .unwrap();
            let f = common::vals;
            [
                f(&a.output),
                f(&a.weights.unwrap()),
                f(&s),
                f(&x.grad().unwrap()),
                f(&mha.in_proj_weight.grad().unwrap()),
            ]
        };
        let what = format!("{dtype:?} attention: cuda against cpu");
        let names = [
            "mha output",
            "mha weights",
            "sdpa output",
            "x grad",
            "in_proj grad",
        ];
        common::parts_close(&what, &names, &run(GPU), &run(CPU), tol);
    }
}

/// conv2d, max_pool2d and torch's gather in f64, f32, f16 and bf16 on CUDA (one gather kernel
/// per element size, scatter-adds in f32/f64): outputs and gradients equal the CPU's in the
/// same dtype, and a window's tied maxima send the gradient to the first, as on the CPU.
#[test]
#[ignore = "needs a CUDA device"]
fn conv_pool_and_gather_gradients_on_cuda_equal_the_cpus_in_every_float_dtype() {
    use gpulab::DType;
    if !have_gpu() {
        return;
    }
    manual_seed(4);
    let (x0, w0) = (
        Tensor::randn((2, 2, 6, 6), CPU).unwrap(),
        Tensor::randn((3, 2, 3, 3), CPU).unwrap(),
    );
    let idx = Tensor::from_vec(vec![2i64, 0, 2, 1, 1, 0], (2, 3), CPU).unwrap();
    for (dtype, tol) in [
        (DType::F64, 1e-9),
        (DType::F32, 1e-4),
        (DType::F16, 1e-2),
        (DType::BF16, 5e-2),
    ] {
        let run = |dev: Device| {
            let leaf = |t: &Tensor| {
                t.to_dtype(dtype)
                    .unwrap()
                    .to(dev)
                    .unwrap()
                    .requires_grad_(true)
                    .unwrap()
            };
            let (x, w) = (leaf(&x0), leaf(&w0));
            let y = F::max_pool2d(
                &F::conv2d(&x, &w, None, 1, 1, 1, 1).unwrap(),
                2,
                2,
                0,
                1,
                false,
            )
            .unwrap();
            let picked = y
                .flatten()
                .unwrap()
                .reshape((6, 9))
                .unwrap()
                .gather(1, &idx.to(dev).unwrap());
            let loss = y
                .sum()
                .unwrap()
                .add(&picked.unwrap().sum().unwrap())
                .unwrap();
            loss.backward().unwrap();
            let f = common::vals;
            [f(&y), f(&x.grad().unwrap()), f(&w.grad().unwrap())]
        };
        let what = format!("{dtype:?} cuda against cpu");
        let names = ["output", "x grad", "w grad"];
        common::parts_close(&what, &names, &run(GPU), &run(CPU), tol);
    }
    // Ties: a window of four equal values gives its gradient to the first.
    let x = Tensor::from_vec(vec![3.0f32; 4], [1, 1, 2, 2], CPU)
        .unwrap()
        .to(GPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    F::max_pool2d(&x, 2, 2, 0, 1, false)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let g = x.grad().unwrap().cpu().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(g, vec![1.0, 0.0, 0.0, 0.0]);
}
