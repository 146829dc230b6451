//! `torch.cuda` for gpulab: is there a GPU, what is it, and running our own kernels on it.
//!
//! Everything here works on a machine without NVIDIA's driver: `is_available()` is then false
//! and every other call returns an error that says what is missing. The layers, from the
//! bottom: `loader` finds the libraries (cudarc panics on a missing one, so nothing touches
//! cudarc before its guard), `context` keeps one context and stream per device, `nvrtc`
//! compiles CUDA C++, and `module` / `event` / `props` are the safe API on top.

mod blas;
mod cells;
pub use cells::{cell_kernel, cell_kernel_on, cell_kernels, compile_cell, CellReport};
mod context;
mod event;
mod loader;
mod module;
pub mod nvrtc;
mod props;

pub use event::Event;
pub use module::{builtin_source, Function, KernelArg, LaunchConfig, Module, BUILTIN};
pub use props::{cores_per_sm, DeviceProperties};

pub(crate) use context::{gpu, Gpu};
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

/// Waits until all work queued on `device` has finished (a no-op for the CPU). This is also
/// where an error from an earlier asynchronous kernel surfaces.
pub fn synchronize(device: impl Into<Device>) -> Result<()> {
    match device.into() {
        Device::Cpu => Ok(()),
        Device::Cuda(i) => gpu(i)?
            .stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e)),
    }
}

/// The folder holding the CUDA C++ sources (`kernels-cu/`), next to the prelude both in the
/// checkout and where the kernel extracts it.
pub fn kernels_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels-cu"))
}

/// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
pub(crate) fn driver_error_text(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name} ({})", s.to_string_lossy()),
        Err(_) => name,
    }
}

pub(crate) fn driver_err(op: &str, e: DriverError) -> Error {
    Error::Cuda {
        op: op.to_string(),
        detail: driver_error_text(&e),
    }
}

pub(crate) fn is_oom(e: &DriverError) -> bool {
    e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY
}
