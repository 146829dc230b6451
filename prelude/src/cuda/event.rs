//! Timing device work, as with `torch.cuda.Event(enable_timing=True)`.
//!
//! On a CUDA device an event is a CUDA event recorded on the device's stream: the elapsed time
//! between two of them is measured by the GPU between the points where the stream reached
//! them, so it covers the queued work and not the (asynchronous) host calls that queued it.
//! On the CPU, where every operation finishes before it returns, an event records the host
//! clock (`Instant::now()`) instead, which measures the same thing.

use super::context::{gpu, Gpu};
use super::driver_err;
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::{sys, sys::CUevent_flags, CudaEvent};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub struct Event {
    device: Device,
    inner: Inner,
}

enum Inner {
    Host(Mutex<Option<Instant>>),
    Cuda {
        gpu: Arc<Gpu>,
        event: CudaEvent,
        recorded: Mutex<bool>,
    },
}

impl Event {
    pub fn new(device: impl Into<Device>) -> Result<Event> {
        let device = device.into();
        let inner = match device {
            Device::Cpu => Inner::Host(Mutex::new(None)),
            Device::Cuda(i) => {
                let gpu = gpu(i)?;
                let event = gpu
                    .ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| driver_err("cuEventCreate", e))?;
                Inner::Cuda {
                    gpu,
                    event,
                    recorded: Mutex::new(false),
                }
            }
        };
        Ok(Event { device, inner })
    }

    pub fn device(&self) -> Device {
        self.device
    }

    /// Marks the current point of the device's queue (returns at once on a GPU).
    pub fn record(&self) -> Result<()> {
        match &self.inner {
            Inner::Host(t) => *t.lock().unwrap() = Some(Instant::now()),
            Inner::Cuda {
                gpu,
                event,
                recorded,
            } => {
                event
                    .record(&gpu.stream)
                    .map_err(|e| driver_err("cuEventRecord", e))?;
                *recorded.lock().unwrap() = true;
            }
        }
        Ok(())
    }

    /// Waits until the device has reached this event.
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner {
            Inner::Host(_) => Ok(()),
            Inner::Cuda { event, .. } => event
                .synchronize()
                .map_err(|e| driver_err("cuEventSynchronize", e)),
        }
    }

    /// Whether the device has passed this event (always true on the CPU).
    pub fn query(&self) -> bool {
        match &self.inner {
            Inner::Host(_) => true,
            Inner::Cuda { event, .. } => event.is_complete(),
        }
    }

    /// Milliseconds from this event to `end`, waiting for both to complete.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if self.device != end.device {
            return Err(Error::DeviceMismatch {
                lhs: self.device,
                rhs: end.device,
            });
        }
        let unrecorded = || Error::Invalid("elapsed_ms: both events must be recorded first".into());
        match (&self.inner, &end.inner) {
            (Inner::Host(a), Inner::Host(b)) => {
                let (a, b) = (
                    a.lock().unwrap().ok_or_else(unrecorded)?,
                    b.lock().unwrap().ok_or_else(unrecorded)?,
                );
                let ms = if b >= a {
                    (b - a).as_secs_f64() * 1e3
                } else {
                    -((a - b).as_secs_f64() * 1e3)
                };
                Ok(ms as f32)
            }
            (
                Inner::Cuda {
                    event: a,
                    recorded: ra,
                    ..
                },
                Inner::Cuda {
                    event: b,
                    recorded: rb,
                    ..
                },
            ) => {
                if !*ra.lock().unwrap() || !*rb.lock().unwrap() {
                    return Err(unrecorded());
                }
                elapsed_between(a, b)
            }
            _ => unreachable!("same device, same kind"),
        }
    }

    /// torch's name for [`Event::elapsed_ms`].
    pub fn elapsed_time(&self, end: &Event) -> Result<f32> {
        self.elapsed_ms(end)
    }
}

/// `cuEventElapsedTime` between two recorded events (G10). cudarc's build for CUDA 13 calls
/// `cuEventElapsedTime_v2`, which drivers older than R570 (CUDA 12.8) do not export, and a
/// missing symbol is a panic in cudarc; those drivers get the original entry point, looked up
/// by hand in the already-loaded driver.
fn elapsed_between(a: &CudaEvent, b: &CudaEvent) -> Result<f32> {
    let v2 = super::driver_version().is_ok_and(|v| (v.major, v.minor) >= (12, 8));
    if v2 {
        return super::loader::guarded("cuEventElapsedTime_v2", || a.elapsed_ms(b))
            .map_err(|p| Error::Cuda {
                op: "cuEventElapsedTime".into(),
                detail: p,
            })?
            .map_err(|e| driver_err("cuEventElapsedTime", e));
    }
    type ElapsedFn = unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> sys::CUresult;
    let missing = |e: String| Error::Cuda {
        op: "cuEventElapsedTime".into(),
        detail: e,
    };
    // SAFETY: libcuda.so.1 is loaded already (events exist), so this only takes a reference.
    let lib =
        unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| missing(e.to_string()))?;
    // SAFETY: the signature is the driver API's `cuEventElapsedTime`.
    let f = unsafe { lib.get::<ElapsedFn>(b"cuEventElapsedTime\0") }
        .map_err(|e| missing(e.to_string()))?;
    // Wait for the end event first, as cudarc's version does.
    b.synchronize()
        .map_err(|e| driver_err("cuEventSynchronize", e))?;
    let mut ms = 0f32;
    // SAFETY: both events are live and belong to the same context; `ms` is a valid out-pointer.
    unsafe { f(&mut ms, a.cu_event(), b.cu_event()) }
        .result()
        .map_err(|e| driver_err("cuEventElapsedTime", e))?;
    Ok(ms)
}
