//! What `cuda::get_device_properties(i)` reports, read from the driver without creating a
//! context (so asking costs no device memory).

use super::{driver_err, loader};
use crate::error::{human_bytes, Error, Result};
use cudarc::driver::{result, sys::CUdevice_attribute as A};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceProperties {
    pub name: String,
    /// Bytes of device memory.
    pub total_memory: u64,
    pub multi_processor_count: u32,
    pub major: u32,
    pub minor: u32,
    /// Peak SM clock in kHz.
    pub clock_rate_khz: u32,
    pub memory_clock_rate_khz: u32,
    pub memory_bus_width_bits: u32,
    pub l2_cache_bytes: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_multiprocessor: u32,
    pub warp_size: u32,
    /// `domain:bus:device`, as nvidia-smi prints it.
    pub pci_bus_id: String,
    /// FP32 cores per SM, from NVIDIA's tables by compute capability; `None` when unknown.
    pub cuda_cores_per_sm: Option<u32>,
}

impl DeviceProperties {
    /// All CUDA cores: SMs times cores per SM.
    pub fn cuda_cores(&self) -> Option<u32> {
        self.cuda_cores_per_sm
            .map(|c| c * self.multi_processor_count)
    }

    /// Theoretical peak memory bandwidth in GB/s (double data rate).
    pub fn memory_bandwidth_gbs(&self) -> f64 {
        2.0 * self.memory_clock_rate_khz as f64 * 1e3 * (self.memory_bus_width_bits as f64 / 8.0)
            / 1e9
    }
}

/// FP32 cores per SM by compute capability (CUDA C Programming Guide, "Arithmetic
/// Instructions" throughput table).
pub fn cores_per_sm(major: u32, minor: u32) -> Option<u32> {
    Some(match (major, minor) {
        (3, _) => 192,
        (5, _) => 128,
        (6, 0) => 64,
        (6, _) => 128,
        (7, _) => 64,
        (8, 0) => 64,
        (8, _) => 128,
        (9, 0) => 128,
        (10, _) | (11, _) | (12, _) => 128,
        _ => return None,
    })
}

pub(crate) fn query(ordinal: usize) -> Result<DeviceProperties> {
    let count = super::context::device_count()?;
    if ordinal >= count {
        return Err(Error::BadDeviceIndex {
            index: ordinal,
            count,
        });
    }
    loader::guarded("device query", || -> Result<DeviceProperties> {
        let dev = result::device::get(ordinal as i32).map_err(|e| driver_err("cuDeviceGet", e))?;
        let attr = |a: A| -> Result<u32> {
            // SAFETY: `dev` is a device handle from cuDeviceGet for an index below the device count.
            unsafe { result::device::get_attribute(dev, a) }
                .map(|v| v.max(0) as u32)
                .map_err(|e| driver_err("cuDeviceGetAttribute", e))
        };
        let (major, minor) = (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        Ok(DeviceProperties {
            name: result::device::get_name(dev).map_err(|e| driver_err("cuDeviceGetName", e))?,
            // SAFETY: as above.
            total_memory: unsafe { result::device::total_mem(dev) }
                .map_err(|e| driver_err("cuDeviceTotalMem", e))? as u64,
            multi_processor_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            major,
            minor,
            clock_rate_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            memory_clock_rate_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            memory_bus_width_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            l2_cache_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_multiprocessor: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
            warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            pci_bus_id: format!(
                "{:08X}:{:02X}:{:02X}.0",
                attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
                attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
                attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
            ),
            cuda_cores_per_sm: cores_per_sm(major, minor),
        })
    })
    .map_err(|p| Error::Cuda {
        op: "device query".into(),
        detail: p,
    })?
}

impl fmt::Display for DeviceProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} (compute capability {}.{}, {})",
            self.name, self.major, self.minor, self.pci_bus_id
        )?;
        writeln!(
            f,
            "  memory           {} on a {}-bit bus, {:.0} GB/s peak",
            human_bytes(self.total_memory),
            self.memory_bus_width_bits,
            self.memory_bandwidth_gbs()
        )?;
        match self.cuda_cores() {
            Some(c) => writeln!(
                f,
                "  multiprocessors  {} x {} CUDA cores = {c}",
                self.multi_processor_count,
                self.cuda_cores_per_sm.unwrap_or(0)
            )?,
            None => writeln!(
                f,
                "  multiprocessors  {} (cores per SM not known for this architecture)",
                self.multi_processor_count
            )?,
        }
        writeln!(f, "  clock            {} MHz", self.clock_rate_khz / 1000)?;
        writeln!(
            f,
            "  L2 cache         {}",
            human_bytes(self.l2_cache_bytes as u64)
        )?;
        write!(
            f,
            "  threads          {} per block, {} per SM, warps of {}",
            self.max_threads_per_block, self.max_threads_per_multiprocessor, self.warp_size
        )
    }
}
