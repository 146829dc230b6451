//! `fit` on CUDA: a model on the GPU trains from a dataset in host memory (each batch moved to
//! the model's device), and a seeded run gives the CPU's loss and accuracy curve within
//! tolerance. `#[ignore]`d like every GPU test (`cargo test -- --ignored` on a GPU machine);
//! without a device it prints "skipped: no CUDA device".
//!
//! Tolerance: float32 on both devices, summed in another order (cuBLAS, reduction kernels),
//! over 3 epochs of 10 Adam steps: 1e-3 * (1 + |cpu|) per epoch's mean loss; accuracies are
//! counts of right answers, which may differ by a sample or two near the boundary.

use gpulab::*;

#[test]
#[ignore = "needs a CUDA device"]
fn a_seeded_fit_on_cuda_follows_the_cpus_curve() {
    if !cuda::is_available() {
        let why = cuda::unavailable_reason().unwrap_or_default();
        println!("skipped: no CUDA device ({why})");
        return;
    }
    // Each run draws from a generator of its own, so other tests' draws cannot come between.
    let run = |device: Device| {
        fork_rng(11, || {
            let x = Tensor::randn((320, 4), Device::Cpu).unwrap();
            let y = x
                .sum_dim(1)
                .unwrap()
                .gt(0.0)
                .unwrap()
                .to_dtype(DType::I64)
                .unwrap();
            let data = TensorDataset::new(x.clone(), y).unwrap();
            let mut model = nn::Sequential::new()
                .add(nn::Linear::new(4, 32))
                .add(nn::ReLU)
                .add(nn::Linear::new(32, 2));
            model.to(device).unwrap();
            let mut opt = optim::Adam::new(model.parameters(), 0.01);
            let h = model
                .fit(&mut opt, Loss::CrossEntropy, &data)
                .epochs(3)
                .batch_size(32)
                .validation_data(&data)
                .seed(5)
                .verbose(0)
                .run()
                .unwrap();
            let p = model.predict(&x).unwrap();
            assert_eq!(p.device(), device);
            assert_eq!(p.shape(), &[320, 2]);
            h
        })
    };
    let (cpu, gpu) = (run(Device::Cpu), run(Device::Cuda(0)));
    println!("cpu loss {:?}\ngpu loss {:?}", cpu.loss(), gpu.loss());
    for (a, b) in cpu.loss().iter().zip(gpu.loss()) {
        assert!((a - b).abs() <= 1e-3 * (1.0 + a.abs()), "cpu {a} cuda {b}");
    }
    for (a, b) in cpu.val_accuracy().iter().zip(gpu.val_accuracy()) {
        assert!(
            (a - b).abs() <= 2.0 / 320.0,
            "val accuracy cpu {a} cuda {b}"
        );
    }
}
