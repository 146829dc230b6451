//! The CUDA entry points fail with an explanation, never a panic, on a machine without a
//! driver or GPU; and the crate's own NVRTC wrapper compiles every kernel when NVRTC is
//! present (no GPU needed for that).

use gpulab::cuda::{self, nvrtc};
use gpulab::{Device, Error, Event, Tensor};

fn no_gpu() -> bool {
    !cuda::is_available()
}

#[test]
fn device_strings_parse() {
    assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
    assert_eq!(Device::new("cuda").unwrap(), Device::Cuda(0));
    assert_eq!(Device::new("cuda:1").unwrap(), Device::Cuda(1));
    assert_eq!(Device::new(" CUDA:3 ").unwrap(), Device::Cuda(3));
    assert_eq!(Device::Cuda(2).to_string(), "cuda:2");
    assert_eq!(Device::Cpu.to_string(), "cpu");
    assert_eq!(
        format!("{:?}", Device::Cuda(0)),
        "device(type='cuda', index=0)"
    );
    for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "", "tpu:0"] {
        match Device::new(bad) {
            Err(e) => {
                assert!(e.to_string().contains("cuda:N"), "{e}");
                // `?` in a cell turns it into the prelude's error with the same message.
                let converted = Error::from(e.clone());
                assert_eq!(converted, Error::BadDevice(e.clone()));
                assert_eq!(converted.to_string(), e.to_string());
            }
            other => panic!("{bad:?} gave {other:?}"),
        }
    }
}

/// The no-driver paths, tested on every machine: in this process when it has no driver, and
/// always in a child process (this binary, one test selected) with the driver hidden by
/// GPULAB_DISABLE_CUDA, which must be set before the process first touches CUDA.
#[test]
fn without_a_gpu_every_call_explains_itself() {
    if std::env::var_os("GPULAB_DISABLE_CUDA").is_some() {
        no_driver_checks();
        println!("NO-DRIVER-CHECKED");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "without_a_gpu_every_call_explains_itself",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GPULAB_DISABLE_CUDA", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!(
        "child with GPULAB_DISABLE_CUDA=1:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && stdout.contains("NO-DRIVER-CHECKED"),
        "the child failed"
    );
    assert!(stdout.contains("disabled by the GPULAB_DISABLE_CUDA environment variable"));
    if no_gpu() {
        // And the real thing: this machine has no usable driver.
        no_driver_checks();
    }
}

fn no_driver_checks() {
    assert_eq!(Device::cuda_if_available(), Device::Cpu);
    assert_eq!(cuda::device_count(), 0);
    let why = cuda::unavailable_reason().expect("a reason when no device is available");
    println!("device_count: {why}");
    assert!(why.starts_with("CUDA is not available: "), "{why}");
    assert!(
        why.contains("libcuda.so.1")
            || why.contains("cuInit")
            || why.contains("GPULAB_DISABLE_CUDA"),
        "{why}"
    );

    let errors: Vec<(&str, Error)> = vec![
        ("get_device_name", cuda::get_device_name(0).unwrap_err()),
        (
            "get_device_properties",
            cuda::get_device_properties(0).unwrap_err(),
        ),
        ("driver_version", cuda::driver_version().unwrap_err()),
        (
            "synchronize",
            cuda::synchronize(Device::Cuda(0)).unwrap_err(),
        ),
        ("zeros", Tensor::zeros((2, 2), Device::Cuda(0)).unwrap_err()),
        ("randn", Tensor::randn(4, Device::Cuda(0)).unwrap_err()),
        (
            "to",
            Tensor::ones(3, Device::Cpu)
                .unwrap()
                .to(Device::new("cuda").unwrap())
                .unwrap_err(),
        ),
        (
            "cuda()",
            Tensor::ones(3, Device::Cpu).unwrap().cuda().unwrap_err(),
        ),
        ("Event::new", Event::new(Device::Cuda(0)).err().unwrap()),
        (
            "Module::builtin",
            cuda::Module::builtin(Device::Cuda(0), "vector_add")
                .err()
                .unwrap(),
        ),
    ];
    for (what, e) in errors {
        assert!(matches!(e, Error::CudaUnavailable(_)), "{what}: {e:?}");
        assert_eq!(e.to_string(), why, "{what}");
    }
    // The CPU side is unaffected.
    assert!(cuda::synchronize(Device::Cpu).is_ok());
}

#[test]
fn bad_device_index_is_an_error() {
    match Some(cuda::device_count()).filter(|&n| n > 0) {
        Some(n) => {
            let e = Tensor::zeros(2, Device::Cuda(n + 3)).unwrap_err();
            assert_eq!(
                e,
                Error::BadDeviceIndex {
                    index: n + 3,
                    count: n
                }
            );
            assert!(e.to_string().contains(&format!("cuda:{}", n + 3)), "{e}");
            assert!(matches!(
                cuda::get_device_properties(n),
                Err(Error::BadDeviceIndex { .. })
            ));
        }
        None => {
            // Without a driver the index cannot be checked; the error says why instead.
            let e = Tensor::zeros(2, Device::Cuda(7)).unwrap_err().to_string();
            assert_eq!(Some(e.clone()), cuda::unavailable_reason());
            println!("skipped index check: {e}");
        }
    }
    let msg = Error::BadDeviceIndex { index: 3, count: 1 }.to_string();
    assert_eq!(msg, "invalid device cuda:3: this machine has 1 CUDA device");
}

#[test]
fn kernels_dir_holds_the_builtin_sources() {
    let dir = cuda::kernels_dir();
    for (stem, src) in cuda::BUILTIN {
        let on_disk = std::fs::read_to_string(dir.join(format!("{stem}.cu"))).unwrap();
        assert_eq!(&on_disk, src, "{stem}.cu differs from the embedded copy");
    }
    assert!(cuda::builtin_source("vector_add")
        .unwrap()
        .contains("__global__ void vector_add("));
    assert!(cuda::builtin_source("no_such_file").is_none());
}

/// Every `__global__` name written out in a source. Names built in a macro
/// (`binary_same_##S`, one per dtype) are left out: `tensor::gpu::tests::
/// every_kernel_instance_the_backend_launches_compiles` checks those instance by instance.
fn declared(src: &str) -> Vec<String> {
    src.match_indices("__global__ void ")
        .map(|(i, m)| {
            src[i + m.len()..]
                .split('(')
                .next()
                .unwrap()
                .trim()
                .to_string()
        })
        .filter(|k| !k.contains('#'))
        .collect()
}

#[test]
fn nvrtc_compiles_every_kernel_file() {
    let version = match nvrtc::version() {
        Ok(v) => v,
        Err(e) => {
            println!("skipped: no NVRTC ({e})");
            return;
        }
    };
    println!("NVRTC {}.{}", version.0, version.1);
    assert_eq!(cuda::nvrtc_version().unwrap().major as i32, version.0);
    let archs = nvrtc::supported_archs().unwrap();
    assert!(archs.contains(&90), "{archs:?}");
    assert_eq!(nvrtc::arch_for((9, 0)).unwrap(), "sm_90");
    // A compute capability newer than NVRTC knows falls back to PTX it can JIT.
    let newest = *archs.iter().max().unwrap();
    assert_eq!(
        nvrtc::arch_for((99, 9)).unwrap(),
        format!("compute_{newest}")
    );

    let mut files: Vec<_> = std::fs::read_dir(cuda::kernels_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    files.sort();
    assert!(files.len() >= 3);
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let ptx = nvrtc::compile_ptx(&src, name, "compute_90").unwrap_or_else(|e| panic!("{e}"));
        for k in declared(&src) {
            assert!(
                ptx.contains(&format!(".entry {k}(")),
                "{name}: no entry {k} in PTX"
            );
        }
        // The CUBIN path (what a device of compute capability 9.0 would load).
        let cubin = nvrtc::compile(&src, name, "sm_90").unwrap();
        assert!(
            cubin.is_cubin && cubin.image.starts_with(b"\x7fELF"),
            "{name}: not an ELF cubin"
        );
        println!("compiled {name}: {} bytes of PTX", ptx.len());
    }
}

#[test]
fn nvrtc_error_carries_the_log() {
    if nvrtc::version().is_err() {
        println!("skipped: no NVRTC");
        return;
    }
    let src = "extern \"C\" __global__ void broken(float* x) {\n    x[0] = undeclared_value;\n}\n";
    match nvrtc::compile(src, "broken.cu", "compute_90") {
        Err(Error::Compile { name, arch, log }) => {
            assert_eq!(name, "broken.cu");
            assert_eq!(arch, "compute_90");
            assert!(
                log.contains("undeclared_value") && log.contains("broken.cu(2)"),
                "{log}"
            );
            let msg = Error::Compile { name, arch, log }.to_string();
            assert!(
                msg.starts_with("NVRTC could not compile broken.cu for compute_90:\n"),
                "{msg}"
            );
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}
