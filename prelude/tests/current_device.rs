//! The current CUDA device: `cuda::current_device`, `set_device`, the `cuda::device` block,
//! `Tensor::cuda()` going to the current device, and `Tensor::get_device`. Without a GPU every
//! call is an error that says why (and changes nothing); with one, the device follows.
//! The GPU tests run in one function because the current device is one setting per process.

use gpulab::*;

#[test]
fn get_device_is_minus_one_on_the_cpu() {
    let t = Tensor::ones(3, Device::Cpu).unwrap();
    assert_eq!(t.get_device(), -1);
}

#[test]
fn without_a_gpu_the_current_device_calls_say_why() {
    if cuda::is_available() {
        eprintln!("skipped: a CUDA device is present (see current_device_follows_set_device)");
        return;
    }
    let why = cuda::unavailable_reason().expect("no device, so a reason");
    let e = cuda::current_device().unwrap_err();
    assert!(matches!(e, Error::CudaUnavailable(_)), "{e:?}");
    assert!(
        e.to_string().contains(&why) || why.contains("reports no GPU"),
        "{e} / {why}"
    );

    let e = cuda::set_device(0).unwrap_err();
    assert!(e.to_string().starts_with("CUDA is not available"), "{e}");

    let mut ran = false;
    let e = cuda::device(0, || ran = true).unwrap_err();
    assert!(matches!(e, Error::CudaUnavailable(_)), "{e:?}");
    assert!(
        !ran,
        "the block must not run when its device does not exist"
    );

    let e = Tensor::ones(2, Device::Cpu).unwrap().cuda().unwrap_err();
    assert!(matches!(e, Error::CudaUnavailable(_)), "{e:?}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn current_device_follows_set_device() {
    let n = cuda::device_count();
    assert!(n > 0, "skipped: no CUDA device");
    assert_eq!(cuda::current_device().unwrap(), 0);
    let t = Tensor::ones(3, Device::Cpu).unwrap();
    assert_eq!(t.cuda().unwrap().device(), Device::Cuda(0));
    assert_eq!(t.cuda().unwrap().get_device(), 0);

    // A missing index is refused and leaves the current device alone.
    let e = cuda::set_device(n).unwrap_err();
    assert!(
        matches!(e, Error::BadDeviceIndex { index, count } if index == n && count == n),
        "{e:?}"
    );
    assert_eq!(cuda::current_device().unwrap(), 0);

    let last = n - 1;
    let inside = cuda::device(last, || {
        (
            cuda::current_device().unwrap(),
            t.cuda().unwrap().get_device(),
        )
    })
    .unwrap();
    assert_eq!(inside, (last, last as i64));
    assert_eq!(
        cuda::current_device().unwrap(),
        0,
        "the block restores cuda:0"
    );

    cuda::set_device(last).unwrap();
    assert_eq!(t.cuda().unwrap().device(), Device::Cuda(last));
    cuda::set_device(0).unwrap();
}
