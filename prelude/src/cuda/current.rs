//! The current CUDA device, as `torch.cuda` has it: `current_device()`, `set_device(i)`, and
//! a block that runs on one device and restores the previous one (`with torch.cuda.device(i)`).
//!
//! The current device is what `Tensor::cuda()` copies to. It is one setting for the whole
//! process, not per thread as in torch: a notebook session runs its cells one after another,
//! and a per-thread setting would be lost whenever the interpreter ran a cell on another
//! thread. Without a usable driver every call here is an error that says why (torch raises
//! "Found no NVIDIA driver" too), rather than a made-up device 0.

use super::context;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The ordinal `Tensor::cuda()` uses; 0 until `set_device` changes it.
static CURRENT: AtomicUsize = AtomicUsize::new(0);

/// Checks that `cuda:index` exists: the driver loads and `index < device_count()`.
fn check(index: usize) -> Result<()> {
    let count = context::device_count()?;
    if count == 0 {
        return Err(Error::CudaUnavailable(
            "the NVIDIA driver reports no GPU".to_string(),
        ));
    }
    if index >= count {
        return Err(Error::BadDeviceIndex { index, count });
    }
    Ok(())
}

/// The index of the current CUDA device (as `torch.cuda.current_device()`): 0 unless
/// [`set_device`] or a [`device`] block changed it. An error when no CUDA device can be used.
pub fn current_device() -> Result<usize> {
    let i = CURRENT.load(Ordering::SeqCst);
    check(i)?;
    Ok(i)
}

/// Makes `cuda:index` the current device (as `torch.cuda.set_device`). An error, and no
/// change, when the device does not exist or no driver is usable.
pub fn set_device(index: usize) -> Result<()> {
    check(index)?;
    CURRENT.store(index, Ordering::SeqCst);
    Ok(())
}

/// Runs `f` with `cuda:index` as the current device and then restores the previous one,
/// also when `f` panics (as `with torch.cuda.device(index): ...`). Returns `f`'s value, or
/// an error without running `f` when the device does not exist.
///
/// ```no_run
/// # use gpulab::*;
/// let t = Tensor::ones(3, Device::Cpu)?;
/// let on_1 = cuda::device(1, || t.cuda())??;   // cuda:1, whatever the current device
/// # Ok::<(), Error>(())
/// ```
pub fn device<R>(index: usize, f: impl FnOnce() -> R) -> Result<R> {
    check(index)?;
    Ok(scoped(&CURRENT, index, f))
}

/// Restores the previous value when dropped, so a panicking block does not leave its device
/// current.
struct Restore<'a> {
    cell: &'a AtomicUsize,
    previous: usize,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.cell.store(self.previous, Ordering::SeqCst);
    }
}

/// Sets `cell` to `value` while `f` runs. Separate from [`device`] so the restore logic is
/// testable without a GPU.
fn scoped<R>(cell: &AtomicUsize, value: usize, f: impl FnOnce() -> R) -> R {
    let _restore = Restore {
        cell,
        previous: cell.swap(value, Ordering::SeqCst),
    };
    f()
}

#[cfg(test)]
mod tests {
    use super::scoped;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_block_restores_the_previous_device_even_when_nested_or_panicking() {
        let cell = AtomicUsize::new(0);
        let seen = scoped(&cell, 2, || {
            let inner = scoped(&cell, 1, || cell.load(Ordering::SeqCst));
            (inner, cell.load(Ordering::SeqCst))
        });
        assert_eq!(seen, (1, 2));
        assert_eq!(cell.load(Ordering::SeqCst), 0);

        let panicked = std::panic::catch_unwind(|| scoped(&cell, 3, || panic!("in the block")));
        assert!(panicked.is_err());
        assert_eq!(
            cell.load(Ordering::SeqCst),
            0,
            "a panic must not leave cuda:3 current"
        );
    }
}
