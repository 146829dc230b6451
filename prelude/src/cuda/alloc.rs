//! Device memory, from the device's memory pool or from plain `cuMemAlloc`.
//!
//! cudarc allocates stream-ordered from the device's default pool (`cuMemAllocAsync`)
//! whenever the device reports memory pools, and offers no way to choose. Some setups report
//! pools and then refuse them (vGPU profiles and sandboxes answer "not supported" or
//! "operating system"), and a pool is not what every teacher wants on a shared GPU. So every
//! buffer the prelude makes comes through here:
//! - `GPULAB_CUDA_ALLOC=plain` (read when a device is first used) allocates with `cuMemAlloc`
//!   and frees with `cuMemFree` after the stream has finished; `pool`, the default, leaves it
//!   to cudarc.
//! - When the pool refuses an allocation for any reason but lack of memory, the device
//!   switches to plain allocation for the rest of the session, says so once, and retries.
//!
//! A plain buffer is still a cudarc `CudaSlice` (kernels, copies and cuBLAS take it as any
//! other); only its drop differs, because cudarc would free it with `cuMemFreeAsync`, which
//! is documented for pool memory only.

use super::Gpu;
use cudarc::driver::{result, sys::CUresult, CudaSlice, DeviceRepr, DriverError};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;

/// The environment variable that chooses the allocator when a device is first used.
pub const ALLOC_ENV: &str = "GPULAB_CUDA_ALLOC";

/// Where a device's buffers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// The device's default memory pool, stream-ordered (`cuMemAllocAsync`).
    Pool,
    /// `cuMemAlloc` / `cuMemFree`, as in CUDA before memory pools.
    Plain,
}

impl Backend {
    /// The driver call that allocates, as `allocator_backend` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Pool => "cuMemAllocAsync",
            Backend::Plain => "cuMemAlloc",
        }
    }
}

/// The backend asked for by `GPULAB_CUDA_ALLOC`'s value (unset: the pool).
pub(crate) fn requested(value: Option<&str>) -> std::result::Result<Backend, String> {
    match value.map(str::trim) {
        None | Some("") | Some("pool") | Some("async") => Ok(Backend::Pool),
        Some("plain") | Some("sync") => Ok(Backend::Plain),
        Some(other) => Err(format!(
            "{ALLOC_ENV}={other:?} is not an allocator: use `pool` (the device's memory pool, \
             the default) or `plain` (cuMemAlloc)"
        )),
    }
}

/// Errors from the pool that mean "this setup cannot use memory pools", after which plain
/// allocation is worth a try. Anything else (out of memory, a sticky error from an earlier
/// kernel) is reported as it is.
pub(crate) fn pool_refused(code: CUresult) -> bool {
    matches!(
        code,
        CUresult::CUDA_ERROR_NOT_SUPPORTED
            | CUresult::CUDA_ERROR_NOT_PERMITTED
            | CUresult::CUDA_ERROR_OPERATING_SYSTEM
    )
}

/// The backend `g` allocates with now.
pub(crate) fn backend(g: &Gpu) -> Backend {
    if g.ctx.has_async_alloc() && !g.plain_alloc.load(Ordering::Relaxed) {
        Backend::Pool
    } else {
        Backend::Plain
    }
}

/// A device buffer of `T`s; dereferences to the cudarc slice.
pub(crate) struct DeviceMem<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    /// Allocated by us with `cuMemAlloc` in a context where cudarc would free it as pool
    /// memory: our drop frees it.
    ours: bool,
}

impl<T> Deref for DeviceMem<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T> DerefMut for DeviceMem<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> Drop for DeviceMem<T> {
    fn drop(&mut self) {
        // SAFETY: the slice is taken once, here, and not touched again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        // cudarc frees without making the context current; a buffer dropped on another
        // thread (a rayon task) or while another device is current must still find its own.
        let _ = slice.context().bind_to_thread();
        if !self.ours {
            return drop(slice);
        }
        let stream = slice.stream().clone();
        let ptr = slice.leak();
        // Work queued on the stream may still read or write the buffer: wait for it, as
        // cudarc does before its own cuMemFree.
        let _ = stream.synchronize();
        // SAFETY: `ptr` came from cuMemAlloc (`alloc` below) and nothing holds it any more.
        let _ = unsafe { result::free_sync(ptr) };
    }
}

/// `len` uninitialised `T`s on `g`, from its current backend; out of memory is returned as
/// the driver's error (the caller trims the pool and retries).
///
/// # Safety
/// The memory is uninitialised: the caller writes every element before one is read.
pub(crate) unsafe fn alloc<T: DeviceRepr>(
    g: &Gpu,
    len: usize,
) -> std::result::Result<DeviceMem<T>, DriverError> {
    if backend(g) == Backend::Pool {
        match g.stream.alloc::<T>(len) {
            Ok(slice) => {
                return Ok(DeviceMem {
                    slice: ManuallyDrop::new(slice),
                    ours: false,
                })
            }
            Err(e) if pool_refused(e.0) => give_up_pool(g, &e),
            Err(e) => return Err(e),
        }
    }
    if !g.ctx.has_async_alloc() {
        // Without pools cudarc itself allocates with cuMemAlloc and frees with cuMemFree.
        return Ok(DeviceMem {
            slice: ManuallyDrop::new(g.stream.alloc::<T>(len)?),
            ours: false,
        });
    }
    g.ctx.bind_to_thread()?;
    let ptr = result::malloc_sync(len * std::mem::size_of::<T>())?;
    Ok(DeviceMem {
        slice: ManuallyDrop::new(g.stream.upgrade_device_ptr(ptr, len)),
        ours: true,
    })
}

/// A copy of `data` on `g` (stream-ordered after everything queued before it).
pub(crate) fn upload<T: DeviceRepr>(
    g: &Gpu,
    data: &[T],
) -> std::result::Result<DeviceMem<T>, DriverError> {
    // SAFETY: the copy below writes every element before anything reads the buffer.
    let mut mem = unsafe { alloc::<T>(g, data.len().max(1))? };
    if !data.is_empty() {
        g.stream.memcpy_htod(data, &mut *mem)?;
    }
    Ok(mem)
}

/// Switches `g` to plain allocation for good, saying so once.
fn give_up_pool(g: &Gpu, e: &DriverError) {
    if !g.plain_alloc.swap(true, Ordering::Relaxed) {
        eprintln!(
            "gpulab: cuda:{}'s memory pool refused an allocation ({}); allocating with \
             cuMemAlloc from now on. Set {ALLOC_ENV}=plain to start that way.",
            g.ordinal,
            super::driver_error_text(e)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_chooses_the_pool_or_plain_and_names_a_bad_value() {
        assert_eq!(requested(None), Ok(Backend::Pool));
        assert_eq!(requested(Some("")), Ok(Backend::Pool));
        assert_eq!(requested(Some("pool")), Ok(Backend::Pool));
        assert_eq!(requested(Some(" plain ")), Ok(Backend::Plain));
        assert_eq!(requested(Some("sync")), Ok(Backend::Plain));
        let err = requested(Some("cudaMalloc")).unwrap_err();
        assert!(err.contains("GPULAB_CUDA_ALLOC=\"cudaMalloc\""), "{err}");
        assert!(err.contains("`pool`") && err.contains("`plain`"), "{err}");
    }

    #[test]
    fn only_a_refusal_of_pools_switches_to_plain() {
        assert!(pool_refused(CUresult::CUDA_ERROR_NOT_SUPPORTED));
        assert!(pool_refused(CUresult::CUDA_ERROR_OPERATING_SYSTEM));
        assert!(!pool_refused(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!pool_refused(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert_eq!(Backend::Pool.name(), "cuMemAllocAsync");
        assert_eq!(Backend::Plain.name(), "cuMemAlloc");
    }
}
