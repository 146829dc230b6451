//! The CUDA backend against the CPU backend, events, custom launches and the GPU error
//! paths. Runs as one test so that "skipped" is printed once when there is no GPU (cargo
//! has no skip status); each case prints its name as it passes.

mod common;

use common::{data, within};
use gpulab::cuda::{self, KernelArg, LaunchConfig, Module};
use gpulab::{manual_seed, Device, Error, Event, Tensor};

const CPU: Device = Device::Cpu;
const GPU: Device = Device::Cuda(0);

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
    close(what, &g.to_vec().unwrap(), &c.to_vec().unwrap(), tol);
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn gpu_suite() {
    if !cuda::is_available() {
        let why = cuda::unavailable_reason().unwrap_or_default();
        println!("skipped: no CUDA device ({why})");
        return;
    }
    let cases: &[(&str, fn())] = &[
        ("device queries", queries),
        ("copies and constructors", copies_and_constructors),
        ("element-wise ops", elementwise),
        ("reductions", reductions),
        ("matmul", matmul),
        ("transpose and reshape", layout),
        ("display", display),
        ("device mix and bad index", device_errors),
        ("out of memory", out_of_memory),
        ("events", events),
        ("custom launches", launches),
        ("launch errors", launch_errors),
    ];
    for (name, case) in cases {
        case();
        println!("ok: {name}");
    }
    println!("{} GPU cases passed", cases.len());
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
    assert_eq!(g.to_vec().unwrap(), v);
    let c = Tensor::from_slice(&v, (10, 100), CPU).unwrap();
    assert_eq!(c.cuda().unwrap().cpu().unwrap().to_vec().unwrap(), v);
    assert_eq!(
        c.to(Device::new("cuda:0").unwrap())
            .unwrap()
            .to_vec()
            .unwrap(),
        v
    );
    assert_eq!(
        Tensor::zeros((3, 5), GPU).unwrap().to_vec().unwrap(),
        vec![0.0; 15]
    );
    assert_eq!(
        Tensor::ones(7, GPU).unwrap().to_vec().unwrap(),
        vec![1.0; 7]
    );
    let big = Tensor::full(1 << 20, 2.5, GPU).unwrap().to_vec().unwrap();
    assert!(big.len() == 1 << 20 && big.iter().all(|&x| x == 2.5));
    assert_eq!(
        Tensor::arange(0.0, 5.0, GPU).unwrap().to_vec().unwrap(),
        vec![0., 1., 2., 3., 4.]
    );
    assert_eq!(
        Tensor::zeros(0, GPU).unwrap().to_vec().unwrap(),
        Vec::<f32>::new()
    );
    // One seed, the same numbers on both devices.
    manual_seed(3);
    let a = Tensor::randn((64, 64), GPU).unwrap();
    manual_seed(3);
    let b = Tensor::randn((64, 64), CPU).unwrap();
    assert_eq!(a.to_vec().unwrap(), b.to_vec().unwrap());
    assert_eq!(Tensor::full((), 4.0, GPU).unwrap().item().unwrap(), 4.0);
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
    assert_eq!(ones.sum().unwrap().item().unwrap(), (1 << 24) as f32);
    let nan = Tensor::from_slice(&[1.0, f32::NAN, 3.0], 3, GPU).unwrap();
    assert!(nan.max().unwrap().item().unwrap().is_nan());
    assert_eq!(
        Tensor::zeros(0, GPU)
            .unwrap()
            .sum()
            .unwrap()
            .item()
            .unwrap(),
        0.0
    );
    assert!(Tensor::zeros(0, GPU).unwrap().max().is_err());
}

fn matmul() {
    for &(m, k, n) in &[
        (1, 1, 1),
        (2, 3, 4),
        (33, 17, 65),
        (256, 300, 128),
        (1000, 1000, 1000),
    ] {
        let a = Tensor::from_vec(data(m * k, 10), (m, k), CPU).unwrap();
        let b = Tensor::from_vec(data(k * n, 11), (k, n), CPU).unwrap();
        both("matmul", 1e-3, &[&a, &b], |t| t[0].matmul(&t[1]));
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
    assert_eq!(g.sum().unwrap().item().unwrap(), 3.0);
}

fn out_of_memory() {
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
        Tensor::ones(4, GPU).unwrap().sum().unwrap().item().unwrap(),
        4.0
    );
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

fn launches() {
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
    assert_eq!(c.to_vec().unwrap(), want);

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
        c2.to_vec().unwrap(),
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
    close("mix", &out.to_vec().unwrap(), &want, 1e-6);
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
