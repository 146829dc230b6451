//! gpu-check's probe: what the prelude sees on this machine, as one JSON line.
//!
//! Built by gpu-check/build as a bin beside the notebook programs and run first by
//! gpu-pack/run. It asks the driver for the device, runs one NVRTC kernel (an element-wise add
//! and a sum) and one cuBLAS product, checks their values, and lists the CUDA libraries this
//! process loaded (from /proc/self/maps): the record of which libnvrtc and libcublas a run used.

#[path = "../program_rt.rs"]
#[allow(dead_code)]
mod program_rt;
use gpulab::*;
use program_rt::json_str;

fn field<T: std::fmt::Display, E: std::fmt::Display>(r: Result<T, E>) -> String {
    match r {
        Ok(v) => format!("{{\"ok\":{}}}", json_str(&v.to_string())),
        Err(e) => format!("{{\"error\":{}}}", json_str(&e.to_string())),
    }
}

/// 1 + 1 over 2^20 elements summed on the device: NVRTC-compiled kernels, a known answer.
fn nvrtc_check(dev: Device) -> Result<String, String> {
    let n = 1usize << 20;
    let run = || -> Result<f32, Error> { Tensor::ones(n, dev)?.add(1.0)?.sum()?.item() };
    let got = run().map_err(|e| e.to_string())?;
    if got != 2.0 * n as f32 {
        return Err(format!("sum of 2^20 twos gave {got}"));
    }
    Ok(format!("add+sum of 2^20 elements = {got} (expected)"))
}

/// ones(256, 256) x ones(256, 256) through cuBLAS: every element is 256.
fn cublas_check(dev: Device) -> Result<String, String> {
    let run = || -> Result<Vec<f32>, Error> {
        let a = Tensor::ones((256, 256), dev)?;
        a.matmul(&a)?.to_vec()
    };
    let v = run().map_err(|e| e.to_string())?;
    match v.iter().find(|&&x| x != 256.0) {
        Some(bad) => Err(format!("ones x ones gave an element {bad}, not 256")),
        None => Ok("256x256 ones x ones = 256 everywhere (expected)".into()),
    }
}

fn loaded_cuda_libraries() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut libs: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| {
            ["libcuda", "libnvrtc", "libcublas", "libnvidia"]
                .iter()
                .any(|k| p.contains(k))
        })
        .map(str::to_string)
        .collect();
    libs.sort();
    libs.dedup();
    libs
}

fn main() {
    let available = cuda::is_available();
    let mut f = vec![
        format!("\"available\":{available}"),
        format!("\"device_count\":{}", cuda::device_count()),
        format!(
            "\"unavailable_reason\":{}",
            cuda::unavailable_reason()
                .map(|r| json_str(&r))
                .unwrap_or("null".into())
        ),
        format!("\"driver_version\":{}", field(cuda::driver_version())),
        format!("\"nvrtc_version\":{}", field(cuda::nvrtc_version())),
    ];
    if available {
        let dev = Device::Cuda(0);
        f.push(format!(
            "\"device_name\":{}",
            field(cuda::get_device_name(0))
        ));
        f.push(format!(
            "\"properties\":{}",
            field(cuda::get_device_properties(0))
        ));
        f.push(format!("\"nvrtc_check\":{}", field(nvrtc_check(dev))));
        f.push(format!("\"cublas_check\":{}", field(cublas_check(dev))));
        // After the checks' allocations: "cuMemAlloc" here on a device with pools means the
        // pool refused and the prelude fell back (its notice is on stderr).
        f.push(format!(
            "\"allocator\":{}",
            field(cuda::get_allocator_backend(dev))
        ));
    }
    let libs: Vec<String> = loaded_cuda_libraries()
        .iter()
        .map(|l| json_str(l))
        .collect();
    f.push(format!("\"loaded_libraries\":[{}]", libs.join(",")));
    println!("{{{}}}", f.join(","));
}
