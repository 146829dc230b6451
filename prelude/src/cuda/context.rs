//! One CUDA context and one stream per device, created on first use and kept for the
//! process (a notebook session), like torch's current stream. Every tensor operation on
//! `cuda:i` is queued on that device's stream, so they run in the order they were issued.

use super::blas::Blas;
use super::{driver_err, loader};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) struct Gpu {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// (major, minor) compute capability, for NVRTC's `--gpu-architecture`.
    pub cc: (i32, i32),
    /// Multiprocessors, to size grids: a few blocks per SM keep it busy.
    pub sms: u32,
    /// The device's default memory pool (what cudarc's stream-ordered allocations use), when
    /// the device has memory pools; `None` means cudarc falls back to `cuMemAlloc`.
    pub pool: Option<Pool>,
    /// Set when this device allocates with plain `cuMemAlloc` although it has pools: asked
    /// for by `GPULAB_CUDA_ALLOC=plain`, or after the pool refused (see `alloc.rs`).
    pub(crate) plain_alloc: AtomicBool,
    blas: OnceLock<std::result::Result<Arc<Mutex<Blas>>, Error>>,
    /// Compiled modules, keyed by a hash of their source and options.
    pub(crate) modules: Mutex<HashMap<u64, Arc<CudaModule>>>,
    /// The builtin kernels the tensor operations launch, by (file stem, kernel name such as
    /// `binary_same_f16`).
    pub(crate) functions: Mutex<HashMap<(&'static str, String), CudaFunction>>,
}

impl Gpu {
    pub fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    /// The cuBLAS handle bound to this device's stream, created on first use.
    pub fn blas(&self) -> Result<Arc<Mutex<Blas>>> {
        self.blas
            .get_or_init(|| {
                self.ctx
                    .bind_to_thread()
                    .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
                Blas::new(self.stream.cu_stream() as *mut _).map(|b| Arc::new(Mutex::new(b)))
            })
            .clone()
    }
}

/// A device's default memory pool handle.
#[derive(Clone, Copy)]
pub(crate) struct Pool(cudarc::driver::sys::CUmemoryPool);
// SAFETY: a pool handle is a process-wide driver object, usable from any thread.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

/// Number of CUDA devices, or the reason there are none.
pub(crate) fn device_count() -> Result<usize> {
    loader::driver()?;
    let n = CudaContext::device_count().map_err(|e| driver_err("cuDeviceGetCount", e))?;
    Ok(n.max(0) as usize)
}

/// Every device's context once made, by ordinal.
static GPUS: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();

/// The devices this process has used so far (their contexts made); none without CUDA. Touches
/// no CUDA library.
pub(crate) fn initialised() -> Vec<Arc<Gpu>> {
    match GPUS.get() {
        Some(map) => map.lock().unwrap().values().cloned().collect(),
        None => Vec::new(),
    }
}

/// The context and stream of `cuda:ordinal`, created the first time it is asked for.
pub(crate) fn gpu(ordinal: usize) -> Result<Arc<Gpu>> {
    let map = GPUS.get_or_init(Default::default);
    if let Some(g) = map.lock().unwrap().get(&ordinal) {
        return Ok(g.clone());
    }
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::BadDeviceIndex {
            index: ordinal,
            count,
        });
    }
    let backend = super::alloc::requested(std::env::var(super::alloc::ALLOC_ENV).ok().as_deref())
        .map_err(Error::Invalid)?;
    let ctx = CudaContext::new(ordinal).map_err(|e| driver_err("cuDevicePrimaryCtxRetain", e))?;
    // One stream per device and nothing else uses our buffers, so cudarc's per-buffer event
    // tracking (two events per allocation, waits on every launch) would only add overhead.
    // SAFETY: called before any buffer exists in this context.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx
        .new_stream()
        .map_err(|e| driver_err("cuStreamCreate", e))?;
    let cc = ctx
        .compute_capability()
        .map_err(|e| driver_err("cuDeviceGetAttribute", e))?;
    let sms = ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .map_err(|e| driver_err("cuDeviceGetAttribute", e))?
        .max(1) as u32;
    // A plain allocator leaves the pool unused: nothing to keep in it.
    let pool = match backend {
        super::alloc::Backend::Pool => keep_freed_memory(&ctx),
        super::alloc::Backend::Plain => None,
    };
    let g = Arc::new(Gpu {
        ordinal,
        ctx,
        stream,
        cc,
        sms,
        pool,
        plain_alloc: AtomicBool::new(backend == super::alloc::Backend::Plain),
        blas: OnceLock::new(),
        modules: Mutex::new(HashMap::new()),
        functions: Mutex::new(HashMap::new()),
    });
    Ok(map.lock().unwrap().entry(ordinal).or_insert(g).clone())
}

/// Makes the device's default memory pool keep memory freed by tensors for reuse (G4).
///
/// The pool's release threshold defaults to 0, so every synchronisation (each `to_vec`,
/// `item`, benchmark run) would hand freed memory back to the OS and the next allocation
/// would map it again. With the threshold at "everything", freed memory stays mapped in
/// the pool; `storage::alloc` trims the pool and retries once when an allocation runs out
/// of memory, so other processes are not starved for longer than it takes to ask.
fn keep_freed_memory(ctx: &CudaContext) -> Option<Pool> {
    use cudarc::driver::sys;
    let pools = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
        .unwrap_or(0);
    if pools == 0 {
        return None;
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold = u64::MAX;
    // SAFETY: plain driver calls with valid out-pointers; the ordinal was checked against
    // the device count, and the pool handle stays valid for the life of the device.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .ok()?;
        // A failure only costs speed, so it is not an error.
        let _ = sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut std::ffi::c_void,
        );
    }
    Some(Pool(pool))
}

/// Hands the memory the pool keeps (freed tensors) back to the device, after waiting for
/// the frees queued on the stream; used before retrying an allocation that ran out.
pub(crate) fn trim_pool(g: &Gpu) {
    if let Some(pool) = g.pool {
        let _ = g.stream.synchronize();
        // SAFETY: the pool handle came from cuDeviceGetDefaultMemPool for this device.
        let _ = unsafe { cudarc::driver::sys::cuMemPoolTrimTo(pool.0, 0) };
    }
}

/// Bytes the device's pool holds from the driver (live buffers and freed ones kept for
/// reuse), `None` without a pool.
pub(crate) fn pool_reserved(g: &Gpu) -> Option<u64> {
    let pool = g.pool?;
    let mut bytes = 0u64;
    // SAFETY: the pool handle came from cuDeviceGetDefaultMemPool for this device, and the
    // attribute is a u64 written through a valid out-pointer.
    unsafe {
        cudarc::driver::sys::cuMemPoolGetAttribute(
            pool.0,
            cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            &mut bytes as *mut u64 as *mut std::ffi::c_void,
        )
    }
    .result()
    .ok()?;
    Some(bytes)
}

/// The GPU behind `device`, or an error for the CPU.
pub(crate) fn gpu_of(device: Device) -> Result<Arc<Gpu>> {
    match device {
        Device::Cuda(i) => gpu(i),
        Device::Cpu => Err(Error::Invalid("this needs a CUDA device, got cpu".into())),
    }
}
