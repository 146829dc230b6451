//! `torch.cuda` for gpulab: is there a GPU, what is it, and running our own kernels on it.
//!
//! Everything here works on a machine without NVIDIA's driver: `is_available()` is then false
//! and every other call returns an error that says what is missing. The layers, from the
//! bottom: `loader` finds the libraries (cudarc panics on a missing one, so nothing touches
//! cudarc before its guard), `context` keeps one context and stream per device, `nvrtc`
//! compiles CUDA C++, and `module` / `event` / `props` are the safe API on top. Nothing here
//! depends on `tensor/`: kernel arguments take any [`DeviceBuffer`], which `Tensor` implements.

pub(crate) mod alloc;
pub use alloc::ALLOC_ENV;
pub(crate) mod blas;
mod cells;
pub use cells::{cell_kernel, cell_kernel_on, cell_kernels, compile_cell, CellReport};
mod context;
mod current;
pub use current::{current_device, device, set_device};
mod event;
mod libraries;
pub use libraries::{libraries, Libraries, LibraryStatus};
mod loader;
pub(crate) mod memcap;
pub use memcap::{memory_allocated, memory_cap, set_per_process_memory_fraction};
mod module;
pub mod nvrtc;
mod props;

pub use event::Event;
pub use module::{
    builtin_source, DeviceBuffer, Function, KernelArg, LaunchConfig, Module, BUILTIN,
};
pub use props::{cores_per_sm, DeviceProperties};

pub(crate) use context::{gpu, trim_pool, Gpu};
pub(crate) use module::launch_builtin;

use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::{result::DriverError, sys::CUresult};
use std::fmt;
use std::path::PathBuf;

/// True when the driver loads and at least one CUDA device is present.
pub fn is_available() -> bool {
    device_count() > 0
}

impl Device {
    /// `cuda:0` when a CUDA device can be used, else `cpu`: the device-agnostic idiom. It is
    /// here rather than in `device.rs` because it asks the driver, and `device` stays a leaf.
    pub fn cuda_if_available() -> Device {
        if is_available() {
            Device::Cuda(0)
        } else {
            Device::Cpu
        }
    }
}

/// Number of CUDA devices, 0 when the driver cannot be used (as `torch.cuda.device_count()`),
/// so `for i in 0..device_count()` works everywhere. `unavailable_reason()` says why it is 0.
pub fn device_count() -> usize {
    context::device_count().unwrap_or(0)
}

/// Why no CUDA device can be used (the driver is missing, failed to start, or sees no GPU);
/// `None` when `is_available()`.
pub fn unavailable_reason() -> Option<String> {
    match context::device_count() {
        Ok(0) => Some("the NVIDIA driver reports no GPU".to_string()),
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

pub fn get_device_name(index: usize) -> Result<String> {
    Ok(props::query(index)?.name)
}

pub fn get_device_properties(index: usize) -> Result<DeviceProperties> {
    props::query(index)
}

/// A CUDA version such as 13.0 (the driver's supported CUDA version, or NVRTC's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The newest CUDA version the installed driver supports (what nvidia-smi calls "CUDA Version").
pub fn driver_version() -> Result<Version> {
    loader::driver()?;
    let mut v = 0;
    // SAFETY: the driver is loaded and initialised (loader::driver above); `v` is a valid out-pointer.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(|e| driver_err("cuDriverGetVersion", e))?;
    Ok(Version {
        major: (v / 1000) as u32,
        minor: ((v % 1000) / 10) as u32,
    })
}

/// The version of the NVRTC library the kernels are compiled with.
pub fn nvrtc_version() -> Result<Version> {
    let (major, minor) = nvrtc::version()?;
    Ok(Version {
        major: major as u32,
        minor: minor as u32,
    })
}

/// Waits until all work queued on `device` has finished, on every stream of the context (as
/// `torch.cuda.synchronize`; a no-op for the CPU). This is also where an error from an
/// earlier asynchronous kernel surfaces.
pub fn synchronize(device: impl Into<Device>) -> Result<()> {
    match device.into() {
        Device::Cpu => Ok(()),
        Device::Cuda(i) => {
            let g = gpu(i)?;
            // cuCtxSynchronize, not just our stream: work a user queued on another stream
            // (or the legacy default stream) is waited for too.
            g.ctx
                .synchronize()
                .map_err(|e| driver_err("cuCtxSynchronize", e))
        }
    }
}

/// Waits for every CUDA device this session has used, as [`synchronize`] does for one; true
/// when there was one to wait for. Nothing to do (false) without CUDA or before a device was
/// used, so CPU-only code pays nothing (`timeit` calls it around every run).
pub fn synchronize_all() -> Result<bool> {
    let used = context::initialised();
    for g in &used {
        synchronize(Device::Cuda(g.ordinal))?;
    }
    Ok(!used.is_empty())
}

/// Hands the GPU memory this kernel keeps for reuse back to the device (torch's
/// `torch.cuda.empty_cache()`): freed tensors' memory stays in each device's pool so the next
/// allocation is fast, but while it is there no other process (another student's kernel on a
/// shared GPU) can have it. Live tensors are untouched. `fit` calls it when training ends.
/// Nothing to do without CUDA or before a device was used.
pub fn empty_cache() {
    for g in context::initialised() {
        context::trim_pool(&g);
    }
}

/// Bytes this kernel holds on `device` from the driver: its live tensors plus the freed memory
/// kept for reuse ([`empty_cache`] gives that back; torch's `memory_reserved`). Not the CUDA
/// context or cuBLAS's workspace. 0 before the device was used.
pub fn memory_reserved(device: impl Into<Device>) -> Result<u64> {
    let ordinal = match device.into() {
        Device::Cuda(i) => i,
        Device::Cpu => {
            return Err(Error::Invalid(
                "memory_reserved needs a CUDA device, got cpu".into(),
            ))
        }
    };
    let Some(g) = context::initialised()
        .into_iter()
        .find(|g| g.ordinal == ordinal)
    else {
        // Not used yet: nothing held, if there is such a device at all.
        let count = context::device_count()?;
        if ordinal >= count {
            return Err(Error::BadDeviceIndex {
                index: ordinal,
                count,
            });
        }
        return Ok(0);
    };
    match context::pool_reserved(&g) {
        Some(bytes) if alloc::backend(&g) == alloc::Backend::Pool => Ok(bytes),
        // Without a pool every buffer is its own cuMemAlloc, freed at once: what is reserved
        // is what is allocated. (After a switch away from a refusing pool, whatever that pool
        // still caches is not counted.)
        _ => memory_allocated(Device::Cuda(ordinal)),
    }
}

/// How this kernel allocates on `device` (torch's `get_allocator_backend`):
/// `"cuMemAllocAsync"` when tensors come from the device's memory pool (the default where
/// the device has pools), `"cuMemAlloc"` without one, with `GPULAB_CUDA_ALLOC=plain`, or
/// after the pool refused an allocation. Makes the device's context if it has none yet.
pub fn get_allocator_backend(device: impl Into<Device>) -> Result<&'static str> {
    match device.into() {
        Device::Cuda(i) => Ok(alloc::backend(&*context::gpu(i)?).name()),
        Device::Cpu => Err(Error::Invalid(
            "get_allocator_backend needs a CUDA device, got cpu".into(),
        )),
    }
}

/// The folder holding the CUDA C++ sources (`kernels-cu/`), next to the prelude both in the
/// checkout and where the kernel extracts it.
pub fn kernels_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels-cu"))
}

/// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
pub(crate) fn driver_error_text(e: &DriverError) -> String {
    // cudarc looks the texts up in libcuda, and panics when it is not loaded.
    let text = loader::guarded("cuGetErrorName", || {
        let name = e
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", e.0));
        match e.error_string() {
            Ok(s) => format!("{name} ({})", s.to_string_lossy()),
            Err(_) => name,
        }
    });
    text.unwrap_or_else(|_| format!("{:?}", e.0))
}

pub(crate) fn driver_err(op: &str, e: DriverError) -> Error {
    cuda_error(op, e.0, driver_error_text(&e))
}

/// The error for driver call `op` that returned `code`, described as `text`; a sticky error
/// gets the advice to restart (G9).
fn cuda_error(op: &str, code: CUresult, mut text: String) -> Error {
    if is_sticky(code) {
        text.push_str(STICKY_ADVICE);
    }
    Error::Cuda {
        op: op.to_string(),
        detail: text,
    }
}

/// Appended to a sticky error: the call that reports it is usually not the one that failed.
pub(crate) const STICKY_ADVICE: &str = ". This error is sticky: a kernel launched earlier \
     (asynchronously) failed, not necessarily the call named here, and the GPU context of this \
     process is now unusable: every later CUDA call fails the same way. Restart the kernel \
     (Kernel > Restart) to use the GPU again";

/// The driver errors after which the context is unusable for the rest of the process (CUDA's
/// "sticky" errors: a kernel faulted, so the context's state is undefined).
pub(crate) fn is_sticky(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ECC_UNCORRECTABLE
    )
}

pub(crate) fn is_oom(e: &DriverError) -> bool {
    e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY
}

#[cfg(test)]
mod tests {
    use super::{cuda_error, is_sticky};
    use cudarc::driver::sys::CUresult;

    #[test]
    fn sticky_errors_say_restart_and_others_do_not() {
        for c in [
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            CUresult::CUDA_ERROR_LAUNCH_FAILED,
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
            CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
        ] {
            assert!(is_sticky(c), "{c:?}");
            let e = cuda_error("cuMemAlloc", c, format!("{c:?}")).to_string();
            assert!(e.starts_with("cuMemAlloc failed: "), "{e}");
            assert!(e.contains("not necessarily the call named here"), "{e}");
            assert!(e.contains("Restart the kernel"), "{e}");
        }
        for c in [
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            CUresult::CUDA_ERROR_NOT_FOUND,
            CUresult::CUDA_ERROR_INVALID_VALUE,
            CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        ] {
            assert!(!is_sticky(c), "{c:?}");
            let e = cuda_error("cuLaunchKernel", c, format!("{c:?}")).to_string();
            assert!(!e.contains("Restart"), "{e}");
        }
    }
}
