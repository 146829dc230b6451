//! One CUDA context and one stream per device, created on first use and kept for the
//! process (a notebook session), like torch's current stream. Every tensor operation on
//! `cuda:i` is queued on that device's stream, so they run in the order they were issued.

use super::blas::Blas;
use super::{driver_err, loader};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) struct Gpu {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// (major, minor) compute capability, for NVRTC's `--gpu-architecture`.
    pub cc: (i32, i32),
    /// Multiprocessors, to size grids: a few blocks per SM keep it busy.
    pub sms: u32,
    blas: OnceLock<std::result::Result<Arc<Mutex<Blas>>, Error>>,
    /// Compiled modules, keyed by a hash of their source and options.
    pub(crate) modules: Mutex<HashMap<u64, Arc<CudaModule>>>,
    /// The builtin kernels the tensor operations launch, by (file stem, kernel name).
    pub(crate) functions: Mutex<HashMap<(&'static str, &'static str), CudaFunction>>,
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

/// Number of CUDA devices, or the reason there are none.
pub(crate) fn device_count() -> Result<usize> {
    loader::driver()?;
    let n = CudaContext::device_count().map_err(|e| driver_err("cuDeviceGetCount", e))?;
    Ok(n.max(0) as usize)
}

/// The context and stream of `cuda:ordinal`, created the first time it is asked for.
pub(crate) fn gpu(ordinal: usize) -> Result<Arc<Gpu>> {
    static GPUS: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();
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
    let g = Arc::new(Gpu {
        ordinal,
        ctx,
        stream,
        cc,
        sms,
        blas: OnceLock::new(),
        modules: Mutex::new(HashMap::new()),
        functions: Mutex::new(HashMap::new()),
    });
    Ok(map.lock().unwrap().entry(ordinal).or_insert(g).clone())
}

/// The GPU behind `device`, or an error for the CPU.
pub(crate) fn gpu_of(device: Device) -> Result<Arc<Gpu>> {
    match device {
        Device::Cuda(i) => gpu(i),
        Device::Cpu => Err(Error::Invalid("this needs a CUDA device, got cpu".into())),
    }
}
