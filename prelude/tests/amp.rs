//! `amp::autocast` and `amp::GradScaler` (torch's `torch.amp`): which ops run in which dtype
//! inside a region on the CPU (torch's CPU lists: matrix products in bfloat16 or float16,
//! losses in float32, everything else in its input's dtype), that gradients reach the
//! float32 parameters, that regions nest and close, and the scaler's arithmetic, skipped
//! steps and errors. `bench/torch_parity.py`'s `amp` cases compare the values with torch's.
//! The CUDA half is at the end (ignored without a GPU).

use gpulab::amp::{self, Autocast, GradScaler};
use gpulab::nn::{self, Module};
use gpulab::optim::SGD;
use gpulab::{fork_rng, DType, Device, Tensor, F};

mod common;
use common::have_gpu;

const CPU: Device = Device::Cpu;

fn ramp(shape: &[usize], scale: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i % 7) as f32 - 3.0) * scale).collect();
    Tensor::from_vec(v, shape, CPU).unwrap()
}

#[test]
fn a_cpu_region_runs_matrix_products_in_bfloat16_and_losses_in_float32() {
    fork_rng(1, || {
        let lin = nn::Linear::new(4, 3);
        let conv = nn::Conv2d::new(2, 3, 3);
        let x = ramp(&[5, 4], 0.25);
        let img = ramp(&[1, 2, 5, 5], 0.5);
        let labels = Tensor::from_vec(vec![0i64, 2, 1, 0, 1], 5, CPU).unwrap();
        amp::autocast(CPU, || {
            assert!(amp::is_autocast_enabled(CPU));
            assert!(!amp::is_autocast_enabled(Device::Cuda(0)));
            assert_eq!(amp::get_autocast_dtype(CPU), DType::BF16);
            let y = lin.forward(&x).unwrap();
            assert_eq!(y.dtype(), DType::BF16, "Linear");
            assert_eq!(x.matmul(&x.t().unwrap()).unwrap().dtype(), DType::BF16);
            assert_eq!(conv.forward(&img).unwrap().dtype(), DType::BF16, "Conv2d");
            // torch's CPU list leaves softmax, ReLU and additions in the input's dtype.
            assert_eq!(y.softmax(1).unwrap().dtype(), DType::BF16);
            assert_eq!(y.relu().unwrap().dtype(), DType::BF16);
            // Losses in float32, whatever dtype reaches them.
            let ce = F::cross_entropy(&y, &labels).unwrap();
            assert_eq!(ce.dtype(), DType::F32, "cross_entropy");
            let mse = F::mse_loss(&y, &ramp(&[5, 3], 0.1)).unwrap();
            assert_eq!(mse.dtype(), DType::F32, "mse_loss");
            // float64 is never lowered (torch's rule), integers are left alone.
            let d = x.to_dtype(DType::F64).unwrap();
            assert_eq!(d.matmul(&d.t().unwrap()).unwrap().dtype(), DType::F64);
            let i = Tensor::from_vec(vec![1i64, 2, 3, 4], (2, 2), CPU).unwrap();
            assert_eq!(i.matmul(&i).unwrap().dtype(), DType::I64);
            // torch lowers matmul, not dot (computed here as a matmul).
            let v = x.select(0, 1).unwrap();
            assert_eq!(v.dot(&v).unwrap().dtype(), DType::F32, "dot");
        });
        assert!(!amp::is_autocast_enabled(CPU), "the region closed");
        assert_eq!(
            lin.forward(&x).unwrap().dtype(),
            DType::F32,
            "outside: float32 again"
        );
    });
}

#[test]
fn gradients_reach_the_float32_parameters_in_float32() {
    fork_rng(2, || {
        let model = nn::Sequential::new()
            .add(nn::Linear::new(4, 8))
            .add(nn::ReLU)
            .add(nn::Linear::new(8, 3));
        let x = ramp(&[6, 4], 0.3);
        let labels = Tensor::from_vec(vec![0i64, 1, 2, 0, 1, 2], 6, CPU).unwrap();
        let loss = amp::autocast(CPU, || F::cross_entropy(&model.forward(&x)?, &labels)).unwrap();
        loss.backward().unwrap();
        for p in model.parameters() {
            assert_eq!(p.tensor().dtype(), DType::F32);
            let g = p.grad().expect("every parameter got a gradient");
            assert_eq!(
                g.dtype(),
                DType::F32,
                "a float32 parameter's gradient is float32"
            );
            assert!(g.abs().unwrap().sum().unwrap().item::<f32>().unwrap() > 0.0);
        }
        // The same values as computing in bfloat16 by hand: lowering is the only change.
        let by_hand = {
            let h = x.to_dtype(DType::BF16).unwrap();
            let mut out = h;
            for layer in [0, 2] {
                let ps = model.parameters();
                let (w, b) = (&ps[layer], &ps[layer + 1]);
                let w = w.tensor().to_dtype(DType::BF16).unwrap();
                let b = b.tensor().to_dtype(DType::BF16).unwrap();
                out = out.matmul(&w.t().unwrap()).unwrap().add(&b).unwrap();
                if layer == 0 {
                    out = out.relu().unwrap();
                }
            }
            F::cross_entropy(&out.to_dtype(DType::F32).unwrap(), &labels).unwrap()
        };
        assert_eq!(loss.item::<f32>().unwrap(), by_hand.item::<f32>().unwrap());
    });
}

#[test]
fn cudas_lists_run_the_range_hungry_ops_in_float32_and_keep_the_rest() {
    // CUDA's lists applied to a CPU region (amp::with_cuda_lists), in float16 as on CUDA: what
    // torch's CUDA autocast gives for each op.
    fork_rng(4, || {
        let lin = nn::Linear::new(3, 5);
        let conv = nn::Conv2d::new(2, 3, 3);
        let x = ramp(&[4, 3], 0.25);
        let img = ramp(&[2, 2, 6, 6], 0.5);
        let labels = Tensor::from_vec(vec![0i64, 2, 1, 4], 4, CPU).unwrap();
        amp::with_cuda_lists(|| {
            Autocast::new(CPU).dtype(DType::F16).run(|| {
                let h = lin.forward(&x).unwrap();
                let c = conv.forward(&img).unwrap();
                assert_eq!((h.dtype(), c.dtype()), (DType::F16, DType::F16));
                let pos = h.abs().unwrap().add(1.0).unwrap();
                let f32_ops = [
                    ("exp", h.exp()),
                    ("expm1", h.expm1()),
                    ("log", pos.log()),
                    ("log1p", pos.log1p()),
                    ("reciprocal", pos.reciprocal()),
                    ("rsqrt", pos.rsqrt()),
                    ("pow", h.pow(2)),
                    ("pow tensor", h.pow(&pos)),
                    ("square", h.square()),
                    ("sum", h.sum()),
                    ("sum_dim", h.sum_dim(1)),
                    ("prod", h.prod_dim(1)),
                    ("cumsum", h.cumsum(1)),
                    ("norm", h.norm_dim(1)),
                    ("softmax", h.softmax(1)),
                    ("log_softmax", h.log_softmax(1)),
                    ("softplus", h.softplus()),
                    ("layer_norm", F::layer_norm(&h, &[5], None, None, 1e-5)),
                    ("group_norm", F::group_norm(&c, 3, None, None, 1e-5)),
                    ("normalize", F::normalize(&h, 1)),
                    ("cross_entropy", F::cross_entropy(&h, &labels)),
                    ("interpolate", F::interpolate(&c, 2.0, "nearest", false)),
                    ("tan", h.tan()),
                    ("sinh", h.sinh()),
                    ("cosh", h.cosh()),
                    ("asin", h.tanh().unwrap().asin()),
                    ("acos", h.tanh().unwrap().acos()),
                ];
                for (name, r) in f32_ops {
                    assert_eq!(r.unwrap().dtype(), DType::F32, "{name}");
                }
                // One op each in torch and on no list, though gpulab composes them from
                // listed ones (sums, expm1, softplus): they keep float16.
                let kept = [
                    ("mean", h.mean()),
                    ("mean_dim", h.mean_dim(0)),
                    ("var", h.var()),
                    ("std_dim", h.std_dim(1)),
                    ("elu", F::elu(&h, 1.0)),
                    ("mish", F::mish(&h)),
                    ("gelu", h.gelu()),
                    ("sigmoid", h.sigmoid()),
                    ("relu", h.relu()),
                    ("atan", h.atan()),
                    ("fmod", h.fmod(1.5)),
                    ("avg_pool2d", F::avg_pool2d(&c, 2, 2, 0, false, true)),
                    ("adaptive_avg_pool2d", F::adaptive_avg_pool2d(&c, (1, 1))),
                    ("max_pool2d", F::max_pool2d(&c, 2, 2, 0, 1, false)),
                    ("batch_norm", nn::BatchNorm2d::new(3).forward(&c)),
                    ("dot", h.select(0, 0).unwrap().dot(&h.select(0, 1).unwrap())),
                ];
                for (name, r) in kept {
                    assert_eq!(r.unwrap().dtype(), DType::F16, "{name}");
                }
                let e = F::binary_cross_entropy(&h.sigmoid().unwrap(), &h.sigmoid().unwrap())
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("unsafe to autocast"), "{e}");
            });
        });
        // Outside with_cuda_lists, the CPU's lists again.
        amp::autocast(CPU, || {
            let h = lin.forward(&x).unwrap();
            assert_eq!(h.exp().unwrap().dtype(), DType::BF16);
            assert_eq!(h.sum().unwrap().dtype(), DType::BF16);
        });
    });
}

#[test]
fn regions_nest_disable_and_take_a_dtype() {
    let x = ramp(&[3, 3], 1.0);
    Autocast::new(CPU).dtype(DType::F16).run(|| {
        assert_eq!(x.matmul(&x).unwrap().dtype(), DType::F16);
        Autocast::new(CPU).enabled(false).run(|| {
            assert!(!amp::is_autocast_enabled(CPU));
            assert_eq!(x.matmul(&x).unwrap().dtype(), DType::F32);
        });
        amp::autocast(CPU, || {
            assert_eq!(x.matmul(&x).unwrap().dtype(), DType::BF16)
        });
        assert_eq!(
            x.matmul(&x).unwrap().dtype(),
            DType::F16,
            "the outer region is back"
        );
    });
    // An unsupported dtype disables the region (with a warning), as torch does.
    Autocast::new(CPU).dtype(DType::F64).run(|| {
        assert!(!amp::is_autocast_enabled(CPU));
        assert_eq!(x.matmul(&x).unwrap().dtype(), DType::F32);
    });
    // A CUDA region leaves CPU tensors alone.
    amp::autocast(Device::Cuda(0), || {
        assert_eq!(x.matmul(&x).unwrap().dtype(), DType::F32);
        assert_eq!(amp::get_autocast_dtype(Device::Cuda(0)), DType::F16);
    });
    // A panic inside closes the region.
    let r = std::panic::catch_unwind(|| amp::autocast(CPU, || panic!("in the region")));
    assert!(r.is_err());
    assert!(!amp::is_autocast_enabled(CPU));
}

#[test]
fn backward_inside_a_region_runs_in_the_forward_dtypes() {
    let w = ramp(&[3, 3], 0.5).requires_grad_(true).unwrap();
    let x = ramp(&[2, 3], 0.25);
    amp::autocast(CPU, || {
        let y = x.matmul(&w).unwrap();
        assert_eq!(y.dtype(), DType::BF16);
        // The backward pass is not autocast again (torch's gradients follow the forward).
        y.sum().unwrap().backward().unwrap();
    });
    let g = w.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    // A float32 graph built outside a region and differentiated inside one gets the float32
    // gradients it gets outside, not bfloat16-rounded ones.
    let a = Tensor::from_vec(vec![0.1f32, 0.7, 1.3, 2.9, 0.33, 5.1], (2, 3), CPU).unwrap();
    let grads: Vec<Vec<f32>> = [false, true]
        .iter()
        .map(|&inside| {
            let v = Tensor::from_vec(vec![0.2f32, 1.1, 0.3], (3, 1), CPU)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let loss = a.matmul(&v).unwrap().square().unwrap().sum().unwrap();
            if inside {
                amp::autocast(CPU, || loss.backward()).unwrap();
            } else {
                loss.backward().unwrap();
            }
            v.grad().unwrap().to_vec().unwrap()
        })
        .collect();
    assert_eq!(grads[0], grads[1]);
    // d/dw sum(x @ w) = x^T @ ones, each column the column sums of x (bf16-exact here).
    let col: Vec<f32> = (0..3)
        .map(|j| (0..2).map(|i| x.to_vec::<f32>().unwrap()[i * 3 + j]).sum())
        .collect();
    let got = g.to_vec::<f32>().unwrap();
    for r in 0..3 {
        for c in 0..3 {
            assert_eq!(got[r * 3 + c], col[r]);
        }
    }
}

#[test]
fn grad_scaler_scales_unscales_and_adapts_its_scale_as_torch() {
    let p = nn::Parameter::new(Tensor::from_vec(vec![1.0f32, 2.0], 2, CPU).unwrap()).unwrap();
    let mut opt = SGD::new(vec![p.clone()], 0.5);
    let mut scaler = GradScaler::new().init_scale(8.0).growth_interval(2);
    assert_eq!(scaler.get_scale(), 8.0);
    // A clean step: the gradient comes back unscaled and the step runs.
    let loss = p.tensor().mul(3.0).unwrap().sum().unwrap();
    let scaled = scaler.scale(&loss).unwrap();
    assert_eq!(
        scaled.item::<f32>().unwrap(),
        8.0 * loss.item::<f32>().unwrap()
    );
    scaled.backward().unwrap();
    assert_eq!(p.grad().unwrap().to_vec::<f32>().unwrap(), vec![24.0, 24.0]);
    scaler.unscale_(&opt).unwrap();
    assert_eq!(p.grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0, 3.0]);
    assert!(scaler.step(&mut opt).unwrap(), "a clean step runs");
    assert_eq!(p.tensor().to_vec::<f32>().unwrap(), vec![-0.5, 0.5]);
    scaler.update().unwrap();
    assert_eq!((scaler.get_scale(), scaler.get_growth_tracker()), (8.0, 1));
    // A second clean step completes the growth interval: the scale doubles.
    opt.zero_grad();
    scaler
        .scale(&p.tensor().sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert!(scaler.step(&mut opt).unwrap());
    scaler.update().unwrap();
    assert_eq!((scaler.get_scale(), scaler.get_growth_tracker()), (16.0, 0));
    // An overflowing gradient: the step is skipped, the parameter kept, the scale halved.
    opt.zero_grad();
    let before = p.tensor().to_vec::<f32>().unwrap();
    let inf = Tensor::from_vec(vec![f32::INFINITY, 1.0], 2, CPU).unwrap();
    scaler
        .scale(&p.tensor().mul(&inf).unwrap().sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert!(!scaler.step(&mut opt).unwrap(), "the step is skipped");
    assert_eq!(p.tensor().to_vec::<f32>().unwrap(), before);
    scaler.update().unwrap();
    assert_eq!((scaler.get_scale(), scaler.get_growth_tracker()), (8.0, 0));
}

#[test]
fn grad_scaler_says_what_was_called_out_of_order() {
    let p = nn::Parameter::new(Tensor::ones(2, CPU).unwrap()).unwrap();
    let mut opt = SGD::new(vec![p.clone()], 0.1);
    let mut scaler = GradScaler::new();
    let e = scaler.update().unwrap_err().to_string();
    assert!(e.contains("no inf checks were recorded"), "{e}");
    scaler
        .scale(&p.tensor().sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    scaler.unscale_(&opt).unwrap();
    let e = scaler.unscale_(&opt).unwrap_err().to_string();
    assert!(e.contains("already been called on this optimizer"), "{e}");
    scaler.step(&mut opt).unwrap();
    let e = scaler.step(&mut opt).unwrap_err().to_string();
    assert!(e.contains("step has already been called"), "{e}");
    let e = scaler.unscale_(&opt).unwrap_err().to_string();
    assert!(e.contains("after step()"), "{e}");
    scaler.update().unwrap();
    // float16 parameters cannot be unscaled (torch's rule: keep float32 master weights).
    let h =
        nn::Parameter::new(Tensor::ones(2, CPU).unwrap().to_dtype(DType::F16).unwrap()).unwrap();
    let opt16 = SGD::new(vec![h.clone()], 0.1);
    h.tensor().sum().unwrap().backward().unwrap();
    let e = scaler.unscale_(&opt16).unwrap_err().to_string();
    assert!(e.contains("unscale float16 gradients"), "{e}");
    // Disabled, it passes everything through.
    let mut off = GradScaler::new().enabled(false);
    let l = p.tensor().sum().unwrap();
    assert_eq!(
        off.scale(&l).unwrap().item::<f32>().unwrap(),
        l.item::<f32>().unwrap()
    );
    assert_eq!(off.get_scale(), 1.0);
    assert!(off.step(&mut opt).unwrap());
    off.update().unwrap();
    let _ = opt.lr();
}

#[test]
fn a_network_trains_with_autocast_and_a_grad_scaler() {
    fork_rng(3, || {
        // Two classes split by the sign of the first feature.
        let x = Tensor::randn((64, 8), CPU).unwrap();
        let first: Vec<f32> = x.narrow(1, 0, 1).unwrap().to_vec().unwrap();
        let labels: Vec<i64> = first.iter().map(|&v| (v > 0.0) as i64).collect();
        let y = Tensor::from_vec(labels.clone(), 64, CPU).unwrap();
        let model = nn::Sequential::new()
            .add(nn::Linear::new(8, 16))
            .add(nn::ReLU)
            .add(nn::Linear::new(16, 2));
        let mut opt = SGD::new(model.parameters(), 0.5);
        let mut scaler = GradScaler::new();
        let mut losses = Vec::new();
        for _ in 0..60 {
            let loss = amp::autocast(CPU, || F::cross_entropy(&model.forward(&x)?, &y)).unwrap();
            opt.zero_grad();
            scaler.scale(&loss).unwrap().backward().unwrap();
            scaler.step(&mut opt).unwrap();
            scaler.update().unwrap();
            losses.push(loss.item::<f32>().unwrap());
        }
        assert!(
            losses[59] < 0.5 * losses[0],
            "loss {} -> {}",
            losses[0],
            losses[59]
        );
        let pred = amp::autocast(CPU, || model.forward(&x))
            .unwrap()
            .argmax_dim(1)
            .unwrap();
        let pred: Vec<i64> = pred.to_vec().unwrap();
        let right = pred.iter().zip(&labels).filter(|(a, b)| a == b).count();
        assert!(right >= 58, "{right}/64 right");
    });
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_cuda_region_runs_matmul_in_float16_and_softmax_and_losses_in_float32() {
    if !have_gpu() {
        return;
    }
    let dev = Device::Cuda(0);
    let x = ramp(&[8, 8], 0.25).to(dev).unwrap();
    let labels = Tensor::from_vec(vec![0i64; 8], 8, CPU)
        .unwrap()
        .to(dev)
        .unwrap();
    amp::autocast(dev, || {
        let y = x.matmul(&x).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        assert_eq!(
            y.softmax(1).unwrap().dtype(),
            DType::F32,
            "CUDA's list: softmax in float32"
        );
        let ln = F::layer_norm(&y, &[8], None, None, 1e-5).unwrap();
        assert_eq!(ln.dtype(), DType::F32);
        assert_eq!(F::cross_entropy(&y, &labels).unwrap().dtype(), DType::F32);
        let e = F::binary_cross_entropy(&y.sigmoid().unwrap(), &y.sigmoid().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unsafe to autocast"), "{e}");
        // The CPU is not in a region: CPU tensors keep float32.
        let c = ramp(&[2, 2], 1.0);
        assert_eq!(c.matmul(&c).unwrap().dtype(), DType::F32);
    });
    // The product agrees with the CPU's float16 product.
    let gpu = amp::autocast(dev, || x.matmul(&x)).unwrap().cpu().unwrap();
    let h = ramp(&[8, 8], 0.25).to_dtype(DType::F16).unwrap();
    let cpu = h.matmul(&h).unwrap();
    assert_eq!(gpu.to_f64_vec().unwrap(), cpu.to_f64_vec().unwrap());
}
