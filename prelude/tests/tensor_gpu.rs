//! The CUDA backend against the CPU backend, events, custom launches and the GPU error
//! paths: one test per behaviour, so the first failure hides nothing. Every GPU test is
//! `#[ignore]`d (cargo has no skip status): `cargo test -- --ignored` (tests/test_gpu.py) runs
//! them on a GPU machine; run without a device they print "skipped: no CUDA device".

mod common;

use common::{data, have_gpu, matmul_error_bound, within};
use gpulab::cuda::{self, KernelArg, LaunchConfig, Module};
use gpulab::{fork_rng, manual_seed, Bench, Device, Error, Event, Tensor};

const CPU: Device = Device::Cpu;
const GPU: Device = Device::Cuda(0);

/// Whether a CUDA device is present; prints the skip line when not.
#[track_caller]
fn close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            within(*x, *y, tol),
            "{what}: element {i}: gpu {x} vs cpu {y}"
        );
    }
}

/// The same computation on both devices, compared.
#[track_caller]
fn both(
    what: &str,
    tol: f32,
    inputs: &[&Tensor],
    f: impl Fn(&[Tensor]) -> gpulab::error::Result<Tensor>,
) {
    let cpu: Vec<Tensor> = inputs.iter().map(|t| t.to(CPU).unwrap()).collect();
    let gpu: Vec<Tensor> = inputs.iter().map(|t| t.to(GPU).unwrap()).collect();
    let (c, g) = (f(&cpu).unwrap(), f(&gpu).unwrap());
    assert_eq!(g.device(), GPU, "{what}: result device");
    assert_eq!(g.shape(), c.shape(), "{what}: shape");
    close(
        what,
        &g.to_vec::<f32>().unwrap(),
        &c.to_vec::<f32>().unwrap(),
        tol,
    );
}

macro_rules! gpu_tests {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA device"]
        fn $name() {
            if have_gpu() {
                super::$name();
                println!("ok: {}", stringify!($name));
            }
        }
    )*};
}

/// The GPU tests, by behaviour; each body is the function of the same name below.
mod gpu {
    use super::have_gpu;
    gpu_tests!(
        queries,
        copies_and_constructors,
        zero_size_tensors,
        elementwise,
        broadcasting,
        reductions,
        reductions_of_long_rows_and_few_columns,
        matmul,
        matmul_of_empty_shapes,
        layout,
        display,
        device_errors,
        cpu_scalar_tensors_join_gpu_tensors,
        out_of_memory_and_recovery,
        freed_memory_is_reused,
        events,
        custom_launches,
        launch_errors,
        launch_argument_count_is_checked,
        tensor_mut_copies_on_write,
        drop_on_another_thread,
        bench_of_a_failing_launch_has_no_time,
        sticky_error_says_restart,
    );
}

fn queries() {
    let n = cuda::device_count();
    assert!(n >= 1);
    assert_eq!(Device::cuda_if_available(), GPU);
    let p = cuda::get_device_properties(0).unwrap();
    println!("{p}");
    assert_eq!(cuda::get_device_name(0).unwrap(), p.name);
    assert!(!p.name.is_empty() && p.total_memory > (1 << 30) && p.multi_processor_count > 0);
    assert!(p.major >= 3 && p.warp_size == 32 && p.max_threads_per_block >= 512);
    assert!(p.memory_bus_width_bits > 0 && p.clock_rate_khz > 0);
    let v = cuda::driver_version().unwrap();
    assert!(v.major >= 12, "driver supports CUDA {v}");
    println!(
        "driver supports CUDA {v}, NVRTC {:?}",
        cuda::nvrtc_version().map(|v| v.to_string())
    );
    cuda::synchronize(GPU).unwrap();
}

fn copies_and_constructors() {
    let v = data(1000, 1);
    let g = Tensor::from_slice(&v, (10, 100), GPU).unwrap();
    assert_eq!(g.device(), GPU);
    assert!(g.is_cuda());
    assert_eq!(g.to_vec::<f32>().unwrap(), v);
    let c = Tensor::from_slice(&v, (10, 100), CPU).unwrap();
    assert_eq!(c.cuda().unwrap().cpu().unwrap().to_vec::<f32>().unwrap(), v);
    assert_eq!(
        c.to(Device::new("cuda:0").unwrap())
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        v
    );
    assert_eq!(
        Tensor::zeros((3, 5), GPU).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0; 15]
    );
    assert_eq!(
        Tensor::ones(7, GPU).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0; 7]
    );
    let big = Tensor::full(1 << 20, 2.5, GPU)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(big.len() == 1 << 20 && big.iter().all(|&x| x == 2.5));
    assert_eq!(
        Tensor::arange(0.0, 5.0, GPU)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0., 1., 2., 3., 4.]
    );
    // One seed, the same numbers on both devices (forks: no other test's draws between).
    let a = fork_rng(3, || Tensor::randn((64, 64), GPU)).unwrap();
    let b = fork_rng(3, || Tensor::randn((64, 64), CPU)).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert_eq!(
        Tensor::full((), 4.0, GPU).unwrap().item::<f32>().unwrap(),
        4.0
    );
}

fn elementwise() {
    for n in [1usize, 1000, 1 << 20] {
        let a = Tensor::from_vec(data(n, 2), n, CPU).unwrap();
        let b = Tensor::from_vec(data(n, 3).iter().map(|v| v + 10.5).collect(), n, CPU).unwrap();
        both("add", 0.0, &[&a, &b], |t| Ok(&t[0] + &t[1]));
        both("sub", 0.0, &[&a, &b], |t| t[0].sub(&t[1]));
        both("mul", 0.0, &[&a, &b], |t| Ok(&t[0] * &t[1]));
        both("div", 1e-6, &[&a, &b], |t| Ok(&t[0] / &t[1]));
        both("maximum", 0.0, &[&a, &b], |t| t[0].maximum(&t[1]));
        both("minimum", 0.0, &[&a, &b], |t| t[0].minimum(&t[1]));
        both("scalar right", 1e-6, &[&a], |t| {
            Ok((&t[0] * 2.0 + 1.0) / 3.0 - 0.5)
        });
        both("scalar left", 1e-6, &[&b], |t| Ok(2.0 - 1.0 / &t[0]));
        both("pow", 1e-5, &[&b], |t| t[0].pow(2.0));
        both("neg", 0.0, &[&a], |t| Ok(-&t[0]));
        both("abs", 0.0, &[&a], |t| t[0].abs());
        both("exp", 1e-5, &[&a], |t| t[0].exp());
        both("sqrt", 1e-6, &[&b], |t| t[0].sqrt());
        both("log", 1e-5, &[&b], |t| t[0].log());
        both("relu", 0.0, &[&a], |t| t[0].relu());
        both("tanh", 1e-5, &[&a], |t| t[0].tanh());
        both("sigmoid", 1e-5, &[&a], |t| t[0].sigmoid());
    }
}

fn broadcasting() {
    // Broadcasting a row, a column, both, and a plane under a 3-D tensor.
    let m = Tensor::from_vec(data(300 * 200, 4), (300, 200), CPU).unwrap();
    let row = Tensor::from_vec(data(200, 5), 200, CPU).unwrap();
    let col = Tensor::from_vec(data(300, 6), (300, 1), CPU).unwrap();
    both("row", 0.0, &[&m, &row], |t| Ok(&t[0] + &t[1]));
    both("column", 0.0, &[&m, &col], |t| Ok(&t[0] * &t[1]));
    both(
        "outer",
        0.0,
        &[&col, &row.reshape((1, 200)).unwrap()],
        |t| t[0].sub(&t[1]),
    );
    let cube = Tensor::from_vec(data(4 * 300 * 200, 7), (4, 300, 200), CPU).unwrap();
    both("plane", 1e-6, &[&cube, &m], |t| t[0].div(&t[1]));
    // A scalar (rank 0) against rank 3, and stride 0 in several dimensions at once.
    let s = Tensor::full((), 2.5, CPU).unwrap();
    both("scalar tensor", 0.0, &[&cube, &s], |t| Ok(&t[0] * &t[1]));
    let a = Tensor::from_vec(data(4 * 6, 30), (4, 1, 6, 1), CPU).unwrap();
    let b = Tensor::from_vec(data(5 * 7, 31), (1, 5, 1, 7), CPU).unwrap();
    both("stride 0 twice each", 0.0, &[&a, &b], |t| t[0].sub(&t[1]));
    // Six dimensions work; a seventh is refused with a clear error, not a wrong launch.
    let six = Tensor::ones(vec![2, 1, 2, 1, 2, 3], CPU).unwrap();
    let six_b = Tensor::ones(vec![1, 2, 1, 2, 1, 3], CPU).unwrap();
    both("6-D", 0.0, &[&six, &six_b], |t| Ok(&t[0] + &t[1]));
    let seven = Tensor::ones(vec![1, 2, 1, 2, 1, 2, 3], GPU).unwrap();
    let seven_b = Tensor::ones(vec![2, 1, 2, 1, 2, 1, 3], GPU).unwrap();
    match seven.add(&seven_b) {
        Err(e @ Error::BadShape(_)) => assert!(e.to_string().contains("6 dimensions"), "{e}"),
        other => panic!("7-D broadcast: {:?}", other.map(|t| t.shape().to_vec())),
    }
}

fn reductions() {
    let (d0, d1, d2) = (7, 300, 129);
    let a = Tensor::from_vec(data(d0 * d1 * d2, 8), (d0, d1, d2), CPU).unwrap();
    both("sum", 1e-5, &[&a], |t| t[0].sum());
    both("mean", 1e-5, &[&a], |t| t[0].mean());
    both("max", 0.0, &[&a], |t| t[0].max());
    both("min", 0.0, &[&a], |t| t[0].min());
    for d in [0isize, 1, 2, -1] {
        both("sum_dim", 1e-4, &[&a], |t| t[0].sum_dim(d));
        both("sum_keepdim", 1e-4, &[&a], |t| t[0].sum_keepdim(d));
        both("mean_dim", 1e-4, &[&a], |t| t[0].mean_dim(d));
        both("max_dim", 0.0, &[&a], |t| t[0].max_dim(d));
        both("min_dim", 0.0, &[&a], |t| t[0].min_dim(d));
    }
    // Many blocks in the first pass, and a length that is not a multiple of anything.
    let long = Tensor::from_vec(data((1 << 22) + 3, 9), (1 << 22) + 3, CPU).unwrap();
    both("long sum", 1e-4, &[&long], |t| t[0].sum());
    both("long max", 0.0, &[&long], |t| t[0].max());
    let ones = Tensor::ones(1 << 24, GPU).unwrap();
    assert_eq!(ones.sum().unwrap().item::<f32>().unwrap(), (1 << 24) as f32);
    let nan = Tensor::from_slice(&[1.0, f32::NAN, 3.0], 3, GPU).unwrap();
    assert!(nan.max().unwrap().item::<f32>().unwrap().is_nan());
}

/// G5: shapes that used to run on one block or a few threads, against the CPU.
fn reductions_of_long_rows_and_few_columns() {
    // Few long rows (split across blocks), rows longer than a block, many rows.
    for (rows, len) in [
        (1usize, (1 << 22) + 3),
        (3, 1 << 20),
        (2, 1000),
        (70_000, 5),
        (1 << 17, 3),
    ] {
        let a = Tensor::from_vec(data(rows * len, 40), (rows, len), CPU).unwrap();
        both("sum_dim(-1)", 1e-4, &[&a], |t| t[0].sum_dim(-1));
        both("max_dim(-1)", 0.0, &[&a], |t| t[0].max_dim(-1));
    }
    // Few long columns (split across threads), and a middle dimension.
    for (len, cols) in [((1usize << 20) + 7, 4), (1 << 18, 16), (3, 100_000)] {
        let a = Tensor::from_vec(data(len * cols, 41), (len, cols), CPU).unwrap();
        both("sum_dim(0)", 1e-4, &[&a], |t| t[0].sum_dim(0));
        both("mean_dim(0)", 1e-4, &[&a], |t| t[0].mean_dim(0));
        both("min_dim(0)", 0.0, &[&a], |t| t[0].min_dim(0));
    }
    let a = Tensor::from_vec(data(2 * 300_000 * 3, 42), (2, 300_000, 3), CPU).unwrap();
    both("sum_dim(1) of [2, 300000, 3]", 1e-4, &[&a], |t| {
        t[0].sum_dim(1)
    });
    // Exact where the answer is exact: 2^22 ones per row, summed in any order.
    let ones = Tensor::ones((2, 1 << 22), GPU).unwrap();
    assert_eq!(
        ones.sum_dim(-1).unwrap().to_vec::<f32>().unwrap(),
        vec![(1 << 22) as f32; 2]
    );
    let ones = Tensor::ones((1 << 22, 3), GPU).unwrap();
    assert_eq!(
        ones.sum_dim(0).unwrap().to_vec::<f32>().unwrap(),
        vec![(1 << 22) as f32; 3]
    );
}

/// G2: empty tensors never ask the driver for 0 bytes, and nothing goes wrong afterwards
/// (a bad zero-byte free would surface as an error on a later, unrelated call).
fn zero_size_tensors() {
    for _ in 0..3 {
        let z = Tensor::zeros(0, GPU).unwrap();
        assert_eq!(z.to_vec::<f32>().unwrap(), Vec::<f32>::new());
        assert_eq!(z.sum().unwrap().item::<f32>().unwrap(), 0.0);
        assert!(z.max().is_err());
        assert_eq!((&z + 1.0).to_vec::<f32>().unwrap(), Vec::<f32>::new());
        assert_eq!(Tensor::ones((0, 5), GPU).unwrap().shape(), &[0, 5]);
        assert_eq!(
            Tensor::from_vec(Vec::<f32>::new(), 0, GPU).unwrap().numel(),
            0
        );
        assert_eq!(Tensor::arange(3.0, 3.0, GPU).unwrap().numel(), 0);
        // A reduction over an empty dimension: sums are 0; outputs of size 0 are empty.
        let e = Tensor::zeros((4, 0), GPU).unwrap();
        assert_eq!(e.sum_dim(1).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 4]);
        assert_eq!(e.sum_dim(0).unwrap().numel(), 0);
        assert_eq!(e.t().unwrap().shape(), &[0, 4]);
        drop((z, e));
    }
    cuda::synchronize(GPU).unwrap();
    // The device is still healthy: a fresh allocation and a copy back work.
    manual_seed(1);
    let r = Tensor::randn(1000, GPU).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap().len(), 1000);
}

fn matmul() {
    for &(m, k, n) in &[
        (1, 1, 1),
        (2, 3, 4),
        (33, 17, 65),
        (256, 300, 128),
        (1000, 1000, 1000),
    ] {
        // G3: each element within twice the f32 bound (both sides round), not a fixed
        // tolerance, which at k = 1000 is as small as the rounding noise itself.
        let (va, vb) = (data(m * k, 10), data(k * n, 11));
        let a = Tensor::from_slice(&va, (m, k), CPU).unwrap();
        let b = Tensor::from_slice(&vb, (k, n), CPU).unwrap();
        let want = a.matmul(&b).unwrap().to_vec::<f32>().unwrap();
        let got = a.to(GPU).unwrap().matmul(&b.to(GPU).unwrap()).unwrap();
        assert_eq!(got.shape(), &[m, n]);
        let got = got.to_vec::<f32>().unwrap();
        let bound = matmul_error_bound(&va, &vb, m, k, n);
        let mut worst = 0f64;
        for (i, ((x, y), b)) in got.iter().zip(&want).zip(&bound).enumerate() {
            let d = (*x as f64 - *y as f64).abs();
            assert!(
                d <= 2.0 * b + 1e-30,
                "{m}x{k}x{n} element {i}: gpu {x} vs cpu {y}, bound 2x{b}"
            );
            worst = worst.max(d / (2.0 * b).max(1e-30));
        }
        println!("matmul {m}x{k}x{n}: worst difference {worst:.3} of the allowed bound");
    }
    let v = Tensor::from_vec(data(50, 12), 50, CPU).unwrap();
    let m = Tensor::from_vec(data(50 * 20, 13), (50, 20), CPU).unwrap();
    both("vector-matrix", 1e-4, &[&v, &m], |t| t[0].matmul(&t[1]));
    both("matrix-vector", 1e-4, &[&m.t().unwrap(), &v], |t| {
        t[0].matmul(&t[1])
    });
    both("dot", 1e-4, &[&v, &v], |t| t[0].matmul(&t[1]));
    let e = Tensor::zeros((2, 3), GPU)
        .unwrap()
        .matmul(&Tensor::zeros((4, 5), GPU).unwrap())
        .unwrap_err();
    assert!(
        matches!(e, Error::ShapeMismatch { .. }) && e.to_string().contains("[2, 3] and [4, 5]"),
        "{e}"
    );
}

/// matmul with an empty dimension: k = 0 gives zeros, m = 0 or n = 0 an empty result.
fn matmul_of_empty_shapes() {
    let a = Tensor::zeros((3, 0), GPU).unwrap();
    let b = Tensor::zeros((0, 4), GPU).unwrap();
    let c = a.matmul(&b).unwrap();
    assert_eq!(c.shape(), &[3, 4]);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0.0; 12]);
    let m0 = Tensor::ones((0, 5), GPU)
        .unwrap()
        .matmul(&Tensor::ones((5, 2), GPU).unwrap())
        .unwrap();
    assert_eq!((m0.shape(), m0.numel()), (&[0usize, 2][..], 0));
    let n0 = Tensor::ones((2, 5), GPU)
        .unwrap()
        .matmul(&Tensor::ones((5, 0), GPU).unwrap())
        .unwrap();
    assert_eq!(n0.shape(), &[2, 0]);
    assert_eq!(
        Tensor::ones(3, GPU)
            .unwrap()
            .sum()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        3.0
    );
}

fn layout() {
    let a = Tensor::from_vec(data(5 * 6 * 7, 14), (5, 6, 7), CPU).unwrap();
    both("transpose(0,2)", 0.0, &[&a], |t| t[0].transpose(0, 2));
    both("transpose(1,-1)", 0.0, &[&a], |t| t[0].transpose(1, -1));
    let m = Tensor::from_vec(data(513 * 257, 15), (513, 257), CPU).unwrap();
    both("t()", 0.0, &[&m], |t| t[0].t());
    both("reshape", 0.0, &[&a], |t| t[0].reshape((30, 7))?.add(1.0));
}

fn display() {
    let g = Tensor::from_slice(&[1., 2., 3., 4.], (2, 2), GPU).unwrap();
    assert_eq!(
        g.to_string(),
        "tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')"
    );
    assert_eq!(format!("{g:?}"), g.to_string());
}

fn device_errors() {
    let g = Tensor::ones(3, GPU).unwrap();
    let c = Tensor::ones(3, CPU).unwrap();
    let e = g.add(&c).unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected all tensors on the same device, found cuda:0 and cpu"
    );
    assert_eq!(
        c.mul(&g).unwrap_err().to_string(),
        "expected all tensors on the same device, found cpu and cuda:0"
    );
    assert!(g.matmul(&c).is_err());
    let panic = std::panic::catch_unwind(|| &g + &c).unwrap_err();
    assert_eq!(panic.downcast_ref::<String>().unwrap(), &e.to_string());
    let n = cuda::device_count();
    let e = Tensor::zeros(2, Device::Cuda(n)).unwrap_err();
    assert_eq!(e, Error::BadDeviceIndex { index: n, count: n });
    assert!(c.to(Device::Cuda(n + 1)).is_err());
    assert!(Event::new(Device::Cuda(n)).is_err());
    // A tensor left on the GPU still works after the errors.
    assert_eq!(g.sum().unwrap().item::<f32>().unwrap(), 3.0);
}

fn cpu_scalar_tensors_join_gpu_tensors() {
    // As torch: a zero-dimensional CPU tensor combines with a GPU tensor, on the GPU, on
    // either side, in where_ too, and its gradient comes back to the CPU.
    let g = Tensor::from_slice(&[1., 2., 3.], 3, GPU).unwrap();
    let two = Tensor::full((), 2.0, CPU).unwrap();
    for (what, r) in [
        ("g * two", g.mul(&two).unwrap()),
        ("two * g", two.mul(&g).unwrap()),
        ("&g * &two", &g * &two),
    ] {
        assert_eq!(r.device(), GPU, "{what}");
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![2., 4., 6.], "{what}");
    }
    assert_eq!(
        g.lt(&two).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    let cond = g.gt(1.5).unwrap();
    let w = g.where_(&cond, &two).unwrap();
    assert_eq!(
        (w.device(), w.to_vec::<f32>().unwrap()),
        (GPU, vec![2., 2., 3.])
    );
    // float16 on the GPU with a float32 CPU scalar stays float16 (torch.result_type).
    let h = g.to_dtype(gpulab::DType::F16).unwrap();
    assert_eq!(h.mul(&two).unwrap().dtype(), gpulab::DType::F16);
    let s = Tensor::full((), 3.0, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    g.mul(&s).unwrap().sum().unwrap().backward().unwrap();
    let grad = s.grad().unwrap();
    assert_eq!((grad.device(), grad.item::<f32>().unwrap()), (CPU, 6.0));
    // Only zero-dimensional CPU tensors: a one-element 1-D one is still a mismatch.
    let one = Tensor::full(1, 2.0, CPU).unwrap();
    assert!(matches!(
        g.mul(&one).unwrap_err(),
        Error::DeviceMismatch { .. }
    ));
}

fn out_of_memory_and_recovery() {
    // 4 TiB: more than any single GPU has.
    match Tensor::zeros(1usize << 40, GPU) {
        Err(e @ Error::OutOfMemory { .. }) => {
            assert!(e.to_string().starts_with("out of memory on cuda:0"), "{e}");
        }
        other => panic!(
            "expected out of memory, got {:?}",
            other.map(|t| t.shape().to_vec())
        ),
    }
    // The device is still usable.
    assert_eq!(
        Tensor::ones(4, GPU)
            .unwrap()
            .sum()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        4.0
    );
    // Memory freed by tensors is reused (the pool keeps it), and an allocation near the
    // device's size succeeds after the pool gives back what it kept.
    let total = cuda::get_device_properties(0).unwrap().total_memory;
    let big = (total / 4 / 8) as usize; // an eighth of the device, in floats
    for _ in 0..3 {
        let t = Tensor::zeros(big, GPU).unwrap();
        drop(t);
    }
    let keep = Tensor::zeros(big, GPU).unwrap();
    let second = Tensor::zeros(big, GPU).unwrap();
    drop((keep, second));
    cuda::synchronize(GPU).unwrap();
}

/// G4: allocate, use and free in a loop; with the pool keeping freed memory, the second and
/// later rounds do not map new memory. The figure is printed for the results file.
fn freed_memory_is_reused() {
    let n = 16 << 20; // 64 MiB of floats
    let round = || {
        let t = std::time::Instant::now();
        let x = Tensor::ones(n, GPU).unwrap();
        assert_eq!(x.sum().unwrap().item::<f32>().unwrap(), n as f32);
        t.elapsed()
    };
    round();
    let mut times: Vec<_> = (0..20).map(|_| round()).collect();
    times.sort();
    println!(
        "allocate 64 MiB + fill + sum + free: median {:?}",
        times[10]
    );
    assert!(times[10] < std::time::Duration::from_secs(1), "{times:?}");
}

fn events() {
    let a = Tensor::randn((1024, 1024), GPU).unwrap();
    let start = Event::new(GPU).unwrap();
    let end = Event::new(GPU).unwrap();
    assert!(start.elapsed_ms(&end).is_err(), "unrecorded");
    start.record().unwrap();
    let mut x = a.clone();
    for _ in 0..20 {
        x = x.matmul(&a).unwrap().mul(1e-3).unwrap();
    }
    end.record().unwrap();
    end.synchronize().unwrap();
    assert!(end.query());
    let ms = start.elapsed_ms(&end).unwrap();
    println!("20 matmuls of 1024^2: {ms:.3} ms on the GPU");
    assert!(ms > 0.0 && ms < 10_000.0, "{ms}");
    let cpu_ev = Event::new(CPU).unwrap();
    cpu_ev.record().unwrap();
    assert!(matches!(
        start.elapsed_ms(&cpu_ev),
        Err(Error::DeviceMismatch { .. })
    ));
}

fn custom_launches() {
    let n = 100_000usize;
    let (va, vb) = (data(n, 16), data(n, 17));
    let a = Tensor::from_slice(&va, n, GPU).unwrap();
    let b = Tensor::from_slice(&vb, n, GPU).unwrap();
    let mut c = Tensor::zeros(n, GPU).unwrap();
    let m = Module::from_file(GPU, cuda::kernels_dir().join("vector_add.cu")).unwrap();
    assert!(m.arch().starts_with("sm_") || m.arch().starts_with("compute_"));
    assert_eq!(
        m.kernels(),
        &[
            "vector_add_single_block".to_string(),
            "vector_add".to_string()
        ]
    );
    let f = m.function("vector_add").unwrap();
    f.launch(
        LaunchConfig {
            grid: (n.div_ceil(256) as u32, 1, 1),
            block: (256, 1, 1),
            shared_mem_bytes: 0,
        },
        &mut [
            KernelArg::from(&a),
            KernelArg::from(&b),
            KernelArg::from(&mut c),
            KernelArg::from(n as i32),
        ],
    )
    .unwrap();
    let want: Vec<f32> = va.iter().zip(&vb).map(|(x, y)| x + y).collect();
    assert_eq!(c.to_vec::<f32>().unwrap(), want);

    // The one-block form, through the builtin table.
    let small = 512;
    let mut c2 = Tensor::zeros(small, GPU).unwrap();
    let a2 = Tensor::arange(0.0, small as f32, GPU).unwrap();
    let f1 = Module::builtin(GPU, "vector_add")
        .unwrap()
        .function("vector_add_single_block")
        .unwrap();
    f1.launch(
        LaunchConfig::for_elements(small, small as u32),
        &mut [(&a2).into(), (&a2).into(), (&mut c2).into()],
    )
    .unwrap();
    assert_eq!(
        c2.to_vec::<f32>().unwrap(),
        (0..small).map(|i| 2.0 * i as f32).collect::<Vec<_>>()
    );

    // Every scalar type, to check the argument layout.
    let src = r#"
extern "C" __global__ void mix(float* out, const float* in, float a, double b, int n,
                               long long m, unsigned int u, unsigned long long w)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + (float)b + (float)m + (float)u + (float)w;
}
"#;
    let mix = Module::from_source(GPU, src, "mix.cu")
        .unwrap()
        .function("mix")
        .unwrap();
    let mut out = Tensor::zeros(1000, GPU).unwrap();
    let inp = Tensor::from_vec(data(1000, 18), 1000, GPU).unwrap();
    mix.launch(
        LaunchConfig::for_elements(1000, 128),
        &mut [
            KernelArg::from(&mut out),
            KernelArg::from(&inp),
            KernelArg::from(2.0f32),
            KernelArg::from(0.5f64),
            KernelArg::from(1000i32),
            KernelArg::from(-3i64),
            KernelArg::from(7u32),
            KernelArg::from(11u64),
        ],
    )
    .unwrap();
    let want: Vec<f32> = data(1000, 18)
        .iter()
        .map(|x| x * 2.0 + 0.5 - 3.0 + 7.0 + 11.0)
        .collect();
    close("mix", &out.to_vec::<f32>().unwrap(), &want, 1e-6);
    // The second compile of the same source comes from the cache and still works.
    let again = Module::from_source(GPU, src, "mix.cu").unwrap();
    assert!(again.function("mix").is_ok());
}

fn launch_errors() {
    let e = Module::from_source(
        GPU,
        "extern \"C\" __global__ void k(float* x) { x[0] = nope; }",
        "bad.cu",
    )
    .err()
    .unwrap();
    match &e {
        Error::Compile { log, .. } => assert!(log.contains("nope"), "{log}"),
        other => panic!("{other:?}"),
    }
    let m = Module::builtin(GPU, "vector_add").unwrap();
    let e = m.function("vectorAdd").err().unwrap().to_string();
    assert!(
        e.contains("vectorAdd") && e.contains("vector_add_single_block, vector_add"),
        "{e}"
    );
    assert!(Module::builtin(GPU, "no_such").is_err());
    let f = m.function("vector_add").unwrap();
    let cpu = Tensor::ones(4, CPU).unwrap();
    let g = Tensor::ones(4, GPU).unwrap();
    let mut out = Tensor::zeros(4, GPU).unwrap();
    let e = f
        .launch(
            LaunchConfig::for_elements(4, 32),
            &mut [(&cpu).into(), (&g).into(), (&mut out).into(), 4i32.into()],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("argument 0") && e.contains("cpu"), "{e}");
    // A block larger than the hardware allows is refused at launch.
    let e = f.launch(
        LaunchConfig {
            grid: (1, 1, 1),
            block: (4096, 1, 1),
            shared_mem_bytes: 0,
        },
        &mut [(&g).into(), (&g).into(), (&mut out).into(), 4i32.into()],
    );
    assert!(e.is_err());
    cuda::synchronize(GPU).unwrap();
}

/// `cuFuncGetParamInfo` (CUDA 12.4+ drivers) checks the number and size of the arguments.
fn launch_argument_count_is_checked() {
    let f = Module::builtin(GPU, "vector_add")
        .unwrap()
        .function("vector_add")
        .unwrap();
    let v = cuda::driver_version().unwrap();
    let Some(params) = f.param_sizes() else {
        assert!(
            (v.major, v.minor) < (12, 4),
            "driver {v} should report parameter sizes"
        );
        println!("skipped: this driver (CUDA {v}) cannot report kernel parameters");
        return;
    };
    assert_eq!(params, &[8, 8, 8, 4]);
    let (a, mut c) = (
        Tensor::ones(4, GPU).unwrap(),
        Tensor::zeros(4, GPU).unwrap(),
    );
    let e = f
        .launch(
            LaunchConfig::for_elements(4, 32),
            &mut [(&a).into(), (&a).into(), (&mut c).into()],
        )
        .unwrap_err()
        .to_string();
    assert_eq!(e, "kernel vector_add takes 4 arguments, but 3 were given");
    let e = f
        .launch(
            LaunchConfig::for_elements(4, 32),
            &mut [(&a).into(), (&a).into(), (&mut c).into(), 4i64.into()],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("argument 3 of kernel vector_add is an i64"),
        "{e}"
    );
    // Nothing was launched: c is still zeros.
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0.0; 4]);
}

/// G13: a kernel writing through `TensorMut` does not change clones or reshapes.
fn tensor_mut_copies_on_write() {
    let n = 1000;
    let a = Tensor::ones(n, GPU).unwrap();
    let mut c = Tensor::zeros(n, GPU).unwrap();
    let before = c.clone();
    let reshaped = c.reshape((10, 100)).unwrap();
    let f = Module::builtin(GPU, "vector_add")
        .unwrap()
        .function("vector_add")
        .unwrap();
    f.launch(
        LaunchConfig::for_elements(n, 256),
        &mut [(&a).into(), (&a).into(), (&mut c).into(), (n as i32).into()],
    )
    .unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![2.0; n]);
    assert_eq!(
        before.to_vec::<f32>().unwrap(),
        vec![0.0; n],
        "the clone kept its data"
    );
    assert_eq!(
        reshaped.to_vec::<f32>().unwrap(),
        vec![0.0; n],
        "the reshape kept its data"
    );
    // A tensor that owns its storage is written in place (no copy needed, same result).
    f.launch(
        LaunchConfig::for_elements(n, 256),
        &mut [(&a).into(), (&a).into(), (&mut c).into(), (n as i32).into()],
    )
    .unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![2.0; n]);
}

/// G8: tensors created on one thread and dropped (or used) on another; the next call on
/// the main thread must not see a stale error.
fn drop_on_another_thread() {
    let t = Tensor::ones(1 << 20, GPU).unwrap();
    let u = Tensor::ones(1 << 10, GPU).unwrap();
    std::thread::spawn(move || drop(t)).join().unwrap();
    let s = std::thread::spawn(move || u.sum().unwrap().item::<f32>().unwrap())
        .join()
        .unwrap();
    assert_eq!(s, 1024.0);
    // Created on a thread, dropped here.
    let v = std::thread::spawn(|| Tensor::ones(8, GPU).unwrap())
        .join()
        .unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![1.0; 8]);
    drop(v);
    cuda::synchronize(GPU).unwrap();
    assert_eq!(
        Tensor::ones(5, GPU)
            .unwrap()
            .sum()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        5.0
    );
}

/// Honest timing on the device: a launch that fails gives an error, never a time.
fn bench_of_a_failing_launch_has_no_time() {
    let f = Module::builtin(GPU, "vector_add")
        .unwrap()
        .function("vector_add")
        .unwrap();
    let g = Tensor::ones(4, GPU).unwrap();
    let mut out = Tensor::zeros(4, GPU).unwrap();
    let too_big = LaunchConfig {
        grid: (1, 1, 1),
        block: (4096, 1, 1),
        shared_mem_bytes: 0,
    };
    let r = Bench::new("bad launch").on(&GPU).run(|| {
        f.launch(
            too_big,
            &mut [(&g).into(), (&g).into(), (&mut out).into(), 4i32.into()],
        )
    });
    let e = r
        .error
        .clone()
        .expect("the launch failed, so the bench did");
    assert!(e.contains("launching vector_add"), "{e}");
    assert!(r.cpu.is_empty() && r.median().is_err());
    let ok = Bench::new("ok").on(&GPU).run(|| Tensor::ones(4, GPU));
    assert!(ok.is_ok() && ok.gpu_stats().is_some(), "{ok}");
}

/// G9: after a kernel faults, errors say the context is broken and the kernel must be
/// restarted. The fault poisons the context for the whole process, so it happens in a child
/// process: this test binary, re-run with one test selected and a variable set.
fn sticky_error_says_restart() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "sticky_error_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GPULAB_STICKY_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("child:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("STICKY-CHECKED"),
        "the child failed"
    );
}

/// Runs only in the child process of `sticky_error_says_restart`.
#[test]
#[ignore = "needs a CUDA device"]
fn sticky_error_child() {
    if std::env::var_os("GPULAB_STICKY_CHILD").is_none() {
        println!("not a test on its own: gpu::sticky_error_says_restart runs it in a child");
        return;
    }
    if !have_gpu() {
        return;
    }
    let src = r#"extern "C" __global__ void poke(float* p) { p[threadIdx.x] = 1.0f; }"#;
    let f = Module::from_source(GPU, src, "poke.cu")
        .unwrap()
        .function("poke")
        .unwrap();
    // An address no allocation has: the kernel faults with CUDA_ERROR_ILLEGAL_ADDRESS.
    let launched = f.launch(
        LaunchConfig::for_elements(32, 32),
        &mut [KernelArg::U64(0x10)],
    );
    let sync = launched.and_then(|_| cuda::synchronize(GPU));
    let e = sync
        .expect_err("a write to address 0x10 faults")
        .to_string();
    println!("synchronize: {e}");
    assert!(
        e.contains("sticky") && e.contains("Restart the kernel"),
        "{e}"
    );
    // Every later call says the same, whatever it was.
    for (what, e) in [
        ("zeros", Tensor::zeros(4, GPU).err()),
        ("synchronize", cuda::synchronize(GPU).err()),
    ] {
        let e = e
            .unwrap_or_else(|| panic!("{what} succeeded on a broken context"))
            .to_string();
        println!("{what}: {e}");
        assert!(e.contains("Restart the kernel"), "{what}: {e}");
    }
    println!("STICKY-CHECKED");
}

/// G3 without a GPU: the bound the matmul test uses holds for the CPU product against an
/// f64 reference (so it is not too tight), and is a small fraction of the results (so a
/// misplaced row or block, off by about a result's size, would still fail).
#[test]
fn matmul_error_bound_holds_for_the_cpu() {
    let (m, k, n) = (40, 1000, 30);
    let (a, b) = (data(m * k, 10), data(k * n, 11));
    let got = Tensor::from_slice(&a, (m, k), CPU)
        .unwrap()
        .matmul(&Tensor::from_slice(&b, (k, n), CPU).unwrap())
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let bound = matmul_error_bound(&a, &b, m, k, n);
    for i in 0..m {
        for j in 0..n {
            let exact: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            let d = (got[i * n + j] as f64 - exact).abs();
            assert!(
                d <= bound[i * n + j],
                "({i}, {j}): {d} > {}",
                bound[i * n + j]
            );
        }
    }
    let mean = |v: &mut dyn Iterator<Item = f64>| v.sum::<f64>() / (m * n) as f64;
    let (b, y) = (
        mean(&mut bound.iter().copied()),
        mean(&mut got.iter().map(|y| y.abs() as f64)),
    );
    assert!(2.0 * b < 0.01 * y, "bound {b} vs mean |result| {y}");
}
