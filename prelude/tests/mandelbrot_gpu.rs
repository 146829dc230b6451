//! GPU Mandelbrot equals the CPU one, pixel for pixel (needs a CUDA device; skipped without).
use gpulab::*;

fn gpu() -> Option<Device> {
    if gpulab::cuda::is_available() {
        Some(Device::Cuda(0))
    } else {
        println!("skipped: no CUDA device");
        None
    }
}

fn same(m: &Mandelbrot, dev: Device) {
    let cpu = m.cpu_parallel().unwrap();
    let gpu = m.gpu(dev).unwrap();
    let diff = cpu.differences(&gpu);
    assert!(
        diff.is_empty(),
        "{} pixels differ, first: {:?}",
        diff.len(),
        &diff[..diff.len().min(5)]
    );
    assert_eq!(gpu.how(), "GPU");
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn gpu_equals_cpu_in_the_articles_setting() {
    let Some(dev) = gpu() else { return };
    same(&Mandelbrot::default(), dev);
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn gpu_equals_cpu_zoomed_and_odd_sized() {
    let Some(dev) = gpu() else { return };
    same(
        &Mandelbrot::default()
            .size(1001, 333)
            .zoom(-0.7436438870, 0.1318259042, 5000.0)
            .iterations(2000),
        dev,
    );
    // Taller than 65535 blocks of 16 rows: the grid is capped, the y stride loop covers the rest.
    same(
        &Mandelbrot::default().size(3, 1_100_000).iterations(50),
        dev,
    );
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn gpu_launch_checks_the_buffer_shape() {
    let Some(dev) = gpu() else { return };
    let mut wrong = Tensor::zeros((10, 10), dev).unwrap();
    assert!(matches!(
        Mandelbrot::default().gpu_launch(&mut wrong),
        Err(gpulab::Error::ShapeMismatch { .. })
    ));
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn synchronised_timing_sees_the_kernel_and_unsynchronised_does_not() {
    let Some(dev) = gpu() else { return };
    let m = Mandelbrot::default().size(4096, 4096).iterations(2000);
    let mut out = Tensor::zeros((m.height, m.width), dev).unwrap();
    let right = Bench::new("synced")
        .warmup(1)
        .repeats(3)
        .on(&dev)
        .run(|| m.gpu_launch(&mut out));
    let wrong = Bench::new("not synced")
        .warmup(1)
        .repeats(3)
        .on(&dev)
        .no_sync()
        .run(|| m.gpu_launch(&mut out));
    println!("{right}\n{wrong}");
    let g = right.gpu_stats().expect("CUDA events timed the kernel");
    let (right, wrong) = (right.median().unwrap(), wrong.median().unwrap());
    assert!(
        right >= g.median.mul_f64(0.9),
        "host time includes the kernel"
    );
    assert!(wrong < right, "without a wait only the launch is timed");
}

#[test]
fn kernel_ptx_has_no_fused_multiply_add() {
    // Bit-identical counts need the CPU's two roundings per a*b+c; a fused FMA has one.
    // Needs only NVRTC (no GPU): GPULAB_NVRTC_PATH or a CUDA toolkit.
    let src = gpulab::cuda::builtin_source("mandelbrot").expect("mandelbrot in the builtin table");
    let ptx = match gpulab::cuda::nvrtc::compile_ptx(src, "mandelbrot.cu", "compute_90") {
        Ok(p) => p,
        Err(e) => {
            println!("skipped: no NVRTC ({e})");
            return;
        }
    };
    assert!(ptx.contains(".entry mandelbrot("));
    assert!(ptx.contains("mul.rn.f64") && ptx.contains("add.rn.f64"));
    assert!(!ptx.contains("fma."), "FMA found in mandelbrot PTX");
}
