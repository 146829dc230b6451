//! `GPULAB_CUDA_ALLOC=plain`: every tensor on the device comes from `cuMemAlloc` and is freed
//! with `cuMemFree` instead of the memory pool (for setups whose pools refuse, and teachers
//! who want no cache on a shared GPU). Its own test binary, because the variable is read once
//! per process, when the device is first used. The GPU tests are `#[ignore]`d; without a
//! device they print "skipped: no CUDA device".

mod common;

use common::{data, have_gpu};
use gpulab::{cuda, Device, Tensor, F};

const GPU: Device = Device::Cuda(0);

/// Sets the variable before anything in this process touches CUDA (every test calls it
/// first; tests in one binary share the process, and the first device use reads it).
fn plain() {
    std::env::set_var(cuda::ALLOC_ENV, "plain");
}

#[test]
fn the_allocator_is_a_question_for_a_cuda_device() {
    plain();
    let err = cuda::get_allocator_backend(Device::Cpu).unwrap_err();
    assert!(
        err.to_string().contains("needs a CUDA device, got cpu"),
        "{err}"
    );
    if !cuda::is_available() {
        // Without a driver the answer is the reason there is no device, not a guess.
        let err = cuda::get_allocator_backend(GPU).unwrap_err();
        assert_eq!(err.to_string(), cuda::unavailable_reason().unwrap());
    }
}

/// Element-wise work, cuBLAS, kernels that upload indices (pooling's gather and its
/// backward's scatter), copies back, and frees on another thread: the same values as the
/// CPU, and every byte given back.
#[test]
#[ignore = "needs a CUDA device; tests/test_gpu.py runs it when one is present"]
fn tensors_from_plain_cumemalloc_compute_and_free_like_pool_ones() {
    plain();
    if !have_gpu() {
        return;
    }
    assert_eq!(cuda::get_allocator_backend(GPU).unwrap(), "cuMemAlloc");

    let run = |dev: Device| -> Vec<Vec<f32>> {
        let a = Tensor::from_vec(data(64 * 48, 1), (64, 48), dev).unwrap();
        let b = Tensor::from_vec(data(48 * 32, 2), (48, 32), dev).unwrap();
        let c = a.matmul(&b).unwrap().relu().unwrap();
        let x = Tensor::from_vec(data(2 * 3 * 8 * 8, 3), (2, 3, 8, 8), dev)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let m = F::max_pool2d(&x, 2, 2, 0, 1, false).unwrap();
        m.square().unwrap().sum().unwrap().backward().unwrap();
        vec![
            c.to_vec().unwrap(),
            m.to_vec().unwrap(),
            x.grad().unwrap().to_vec().unwrap(),
        ]
    };
    let (g, c) = (run(GPU), run(Device::Cpu));
    for (part, (gv, cv)) in ["matmul", "max_pool2d", "its gradient"]
        .iter()
        .zip(g.iter().zip(&c))
    {
        assert_eq!(gv.len(), cv.len(), "{part}");
        for (i, (x, y)) in gv.iter().zip(cv).enumerate() {
            assert!(
                common::within(*x, *y, 1e-4),
                "{part}[{i}]: gpu {x} vs cpu {y}"
            );
        }
    }

    // Freed on another thread, where no context is current: the bytes come back.
    let t = Tensor::zeros(1 << 20, GPU).unwrap();
    assert_eq!(cuda::memory_allocated(GPU).unwrap(), 4 << 20);
    std::thread::spawn(move || drop(t)).join().unwrap();
    assert_eq!(cuda::memory_allocated(GPU).unwrap(), 0);
    // No pool: nothing is kept for reuse, so reserved is what is allocated.
    let kept = Tensor::ones(1000, GPU).unwrap();
    assert_eq!(
        cuda::memory_reserved(GPU).unwrap(),
        cuda::memory_allocated(GPU).unwrap()
    );
    assert_eq!(kept.sum().unwrap().item::<f32>().unwrap(), 1000.0);
    cuda::synchronize(GPU).unwrap();
}
