//! The per-kernel GPU memory cap on a real device (needs a CUDA device; skipped without): an
//! allocation past the cap fails with the cap's error, not the driver's out-of-memory, and
//! freeing a tensor gives its bytes back. Its own test binary, because the cap is per process.
//! Also what the pool keeps of freed tensors (`memory_reserved`) and `empty_cache` giving it
//! back to the device, for the other kernels sharing it.
use gpulab::*;

fn gpu() -> Option<Device> {
    if gpulab::cuda::is_available() {
        Some(Device::Cuda(0))
    } else {
        println!("skipped: no CUDA device");
        None
    }
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn allocations_past_the_cap_fail_with_the_caps_error() {
    let Some(dev) = gpu() else { return };
    let total = cuda::get_device_properties(0).unwrap().total_memory;
    cuda::set_per_process_memory_fraction(0.01, dev).unwrap();
    let cap = cuda::memory_cap(dev).unwrap().expect("a cap was just set");
    assert_eq!(cap, (0.01 * total as f64) as u64);

    // Half the cap fits; a second half-and-a-bit does not.
    let half = (cap / 2 / 4) as usize;
    let a = Tensor::zeros(half, dev).unwrap();
    assert_eq!(cuda::memory_allocated(dev).unwrap(), half as u64 * 4);
    let err = Tensor::zeros(half + 1024, dev).expect_err("past the cap");
    assert!(
        matches!(err, Error::MemoryCap { .. }),
        "not the cap's error: {err}"
    );
    let text = err.to_string();
    assert!(text.contains("GPU memory cap hit on cuda:0"), "{text}");
    assert!(
        text.contains("set_per_process_memory_fraction(0.01)"),
        "{text}"
    );

    // Freed, its bytes count no more: the same allocation now fits.
    drop(a);
    assert_eq!(cuda::memory_allocated(dev).unwrap(), 0);
    let b = Tensor::zeros(half + 1024, dev).unwrap();
    assert_eq!(
        b.to(Device::Cpu)
            .unwrap()
            .sum()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        0.0
    );
}

#[test]
fn the_cap_refuses_the_cpu_and_bad_fractions_without_a_gpu() {
    assert!(cuda::set_per_process_memory_fraction(0.5, Device::Cpu).is_err());
    let e = cuda::set_per_process_memory_fraction(1.5, Device::Cuda(0)).unwrap_err();
    assert!(e.to_string().contains("(0, 1]"), "{e}");
}

#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn empty_cache_gives_the_pools_kept_memory_back() {
    let Some(dev) = gpu() else { return };
    let bytes = 64u64 << 20;
    let t = Tensor::zeros((bytes / 4) as usize, dev).unwrap();
    cuda::synchronize(dev).unwrap();
    let holding = cuda::memory_reserved(dev).unwrap();
    assert!(
        holding >= bytes,
        "{holding} reserved while a {bytes}-byte tensor lives"
    );
    drop(t);
    cuda::synchronize(dev).unwrap();
    let kept = cuda::memory_reserved(dev).unwrap();
    cuda::empty_cache();
    let after = cuda::memory_reserved(dev).unwrap();
    println!(
        "reserved: {holding} with the tensor, {kept} after freeing it, {after} after empty_cache"
    );
    assert!(
        after <= kept,
        "empty_cache grew the pool: {kept} -> {after}"
    );
    assert!(
        after < bytes,
        "{after} bytes still reserved after empty_cache with no tensor alive"
    );
}

#[test]
fn memory_reserved_and_empty_cache_without_a_gpu() {
    assert!(cuda::memory_reserved(Device::Cpu).is_err());
    cuda::empty_cache();
    if !cuda::is_available() {
        println!("no CUDA device: memory_reserved(cuda:0) must say why");
        let e = cuda::memory_reserved(Device::Cuda(0)).unwrap_err();
        assert!(!e.to_string().is_empty());
    } else {
        let n = cuda::device_count();
        assert!(cuda::memory_reserved(Device::Cuda(n)).is_err());
    }
}
