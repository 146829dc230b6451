//! A per-process cap on the GPU memory this kernel's tensors may hold, so that one student's
//! notebook cannot take the whole GPU from a class sharing it (torch's
//! `torch.cuda.set_per_process_memory_fraction`).
//!
//! The cap comes from the kernelspec's environment (a teacher sets it for every student:
//! `gpulab-kernel install --gpu-memory-fraction 0.1`, or the `env` of kernel.json):
//!   GPULAB_GPU_MEMORY_FRACTION=0.1    a fraction of each device's total memory, in (0, 1]
//!   GPULAB_GPU_MEMORY_LIMIT=4GiB      bytes (suffixes K/M/G/T, KiB/MiB/GiB/TiB, KB/MB/GB/TB)
//! (both set: the smaller wins), or from [`set_per_process_memory_fraction`] in a cell.
//!
//! What counts: every tensor buffer the prelude allocates on the device, charged before the
//! driver is asked and released when the buffer is dropped (the two hooks in
//! `tensor/storage.rs`), like torch's `memory_allocated`. What does not: the CUDA context itself
//! (a few hundred MiB per process, the driver's), cuBLAS's workspace and the memory pool's
//! cached free blocks; the pool only ever caches blocks that were allocated under the cap.

use crate::device::Device;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::Mutex;

pub const FRACTION_VAR: &str = "GPULAB_GPU_MEMORY_FRACTION";
pub const LIMIT_VAR: &str = "GPULAB_GPU_MEMORY_LIMIT";

/// Per device ordinal: bytes in use by tensors, and the cap once resolved.
#[derive(Default)]
struct State {
    used: HashMap<usize, u64>,
    caps: HashMap<usize, Option<Cap>>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(State::default))
}

/// A cap in bytes and where it came from (for the error message).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cap {
    pub bytes: u64,
    pub source: String,
}

/// "0.25" -> 0.25; anything outside (0, 1] is refused, naming the variable.
pub(crate) fn parse_fraction(what: &str, s: &str) -> Result<f64> {
    match s.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(Error::Invalid(format!(
            "{what} must be a fraction of the GPU's memory in (0, 1], such as 0.25; got {s:?}"
        ))),
    }
}

/// "4GiB", "512 MiB", "2.5G", "1000000" -> bytes. K/M/G/T and KiB/MiB/... are powers of 1024
/// (as nvidia-smi and torch count memory); KB/MB/GB/TB are powers of 1000.
pub(crate) fn parse_bytes(what: &str, s: &str) -> Result<u64> {
    let bad = || {
        Error::Invalid(format!(
            "{what} must be a memory size such as 4GiB, 512MiB or 1000000 (bytes); got {s:?}"
        ))
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.parse().map_err(|_| bad())?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(bad()),
    };
    let bytes = num * scale;
    if !(bytes >= 1.0 && bytes.is_finite()) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// The cap the environment sets for a device with `total` bytes: `fraction` and `limit` are
/// the two variables' values, if set.
pub(crate) fn cap_from(
    fraction: Option<&str>,
    limit: Option<&str>,
    total: u64,
) -> Result<Option<Cap>> {
    let mut caps = Vec::new();
    if let Some(f) = fraction.filter(|s| !s.trim().is_empty()) {
        let f = parse_fraction(FRACTION_VAR, f)?;
        caps.push(Cap {
            bytes: (f * total as f64) as u64,
            source: format!("{FRACTION_VAR}={f} of {}", crate::error::human_bytes(total)),
        });
    }
    if let Some(l) = limit.filter(|s| !s.trim().is_empty()) {
        caps.push(Cap {
            bytes: parse_bytes(LIMIT_VAR, l)?,
            source: format!("{LIMIT_VAR}={}", l.trim()),
        });
    }
    Ok(caps.into_iter().min_by_key(|c| c.bytes))
}

fn cap(device: usize, total: impl FnOnce() -> Result<u64>) -> Result<Option<Cap>> {
    if let Some(c) = with_state(|s| s.caps.get(&device).cloned()) {
        return Ok(c);
    }
    let fraction = std::env::var(FRACTION_VAR).ok();
    let limit = std::env::var(LIMIT_VAR).ok();
    let c = if fraction.is_some() || limit.is_some() {
        cap_from(fraction.as_deref(), limit.as_deref(), total()?)?
    } else {
        None
    };
    with_state(|s| s.caps.insert(device, c.clone()));
    Ok(c)
}

/// The error for an allocation of `requested` bytes over `cap` with `in_use` already held.
pub(crate) fn exceeded(device: usize, cap: &Cap, in_use: u64, requested: u64) -> Error {
    Error::MemoryCap {
        device: Device::Cuda(device),
        cap: cap.bytes,
        source: cap.source.clone(),
        in_use,
        requested,
    }
}

/// Bytes of device memory charged to this kernel's tensors for one allocation; released when
/// dropped unless [`Charge::keep`] hands the release over to the buffer's own `Drop`.
pub(crate) struct Charge {
    device: usize,
    bytes: u64,
}

impl Charge {
    /// Charges `bytes` on `cuda:device`, or fails with [`Error::MemoryCap`] when that would
    /// pass the cap. `total` gives the device's memory (only asked for when a fraction is set).
    pub fn new(device: usize, bytes: u64, total: impl FnOnce() -> Result<u64>) -> Result<Charge> {
        let cap = cap(device, total)?;
        with_state(|s| {
            let used = s.used.entry(device).or_insert(0);
            if let Some(c) = &cap {
                if used.saturating_add(bytes) > c.bytes {
                    return Err(exceeded(device, c, *used, bytes));
                }
            }
            *used += bytes;
            Ok(Charge { device, bytes })
        })
    }

    /// The allocation succeeded: the buffer's `Drop` calls [`release`] with the same bytes.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        release(self.device, self.bytes);
    }
}

/// Gives back `bytes` charged on `cuda:device` (a tensor buffer was freed).
pub(crate) fn release(device: usize, bytes: u64) {
    with_state(|s| {
        if let Some(u) = s.used.get_mut(&device) {
            *u = u.saturating_sub(bytes);
        }
    });
}

fn ordinal(device: impl Into<Device>) -> Result<usize> {
    match device.into() {
        Device::Cuda(i) => Ok(i),
        Device::Cpu => Err(Error::Invalid(
            "a GPU memory cap applies to a CUDA device (\"cuda:0\"), not the CPU".into(),
        )),
    }
}

/// Limits this kernel's tensors on `device` to `fraction` of its memory, as
/// `torch.cuda.set_per_process_memory_fraction`; an allocation past it fails with an error
/// naming the cap, what is in use and what was asked for. Overrides the kernelspec's
/// GPULAB_GPU_MEMORY_FRACTION / GPULAB_GPU_MEMORY_LIMIT for this session.
pub fn set_per_process_memory_fraction(fraction: f64, device: impl Into<Device>) -> Result<()> {
    let device = ordinal(device)?;
    let f = parse_fraction("the memory fraction", &fraction.to_string())?;
    let total = super::get_device_properties(device)?.total_memory;
    let c = Cap {
        bytes: (f * total as f64) as u64,
        source: format!(
            "set_per_process_memory_fraction({f}) of {}",
            crate::error::human_bytes(total)
        ),
    };
    with_state(|s| s.caps.insert(device, Some(c)));
    Ok(())
}

/// Bytes this kernel's tensors hold on `device` now (torch's `memory_allocated`).
pub fn memory_allocated(device: impl Into<Device>) -> Result<u64> {
    let device = ordinal(device)?;
    Ok(with_state(|s| s.used.get(&device).copied().unwrap_or(0)))
}

/// This kernel's cap on `device` in bytes, `None` without one.
pub fn memory_cap(device: impl Into<Device>) -> Result<Option<u64>> {
    let device = ordinal(device)?;
    Ok(cap(device, || {
        Ok(super::get_device_properties(device)?.total_memory)
    })?
    .map(|c| c.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn fractions_parse_and_bad_ones_name_the_variable() {
        assert_eq!(parse_fraction(FRACTION_VAR, " 0.25 ").unwrap(), 0.25);
        assert_eq!(parse_fraction(FRACTION_VAR, "1").unwrap(), 1.0);
        for bad in ["0", "-0.5", "1.5", "half", "", "NaN"] {
            let e = parse_fraction(FRACTION_VAR, bad).unwrap_err().to_string();
            assert!(
                e.contains(FRACTION_VAR) && e.contains("(0, 1]"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        let p = |s| parse_bytes(LIMIT_VAR, s).unwrap();
        assert_eq!(p("4GiB"), 4 * GIB);
        assert_eq!(p("4G"), 4 * GIB);
        assert_eq!(p("512 MiB"), 512 << 20);
        assert_eq!(p("2.5g"), 5 * GIB / 2);
        assert_eq!(p("1000000"), 1_000_000);
        assert_eq!(p("3GB"), 3_000_000_000);
        for bad in ["", "GiB", "4 parsecs", "-1G", "0"] {
            let e = parse_bytes(LIMIT_VAR, bad).unwrap_err().to_string();
            assert!(e.contains(LIMIT_VAR) && e.contains("4GiB"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_smaller_of_fraction_and_limit_wins() {
        let total = 80 * GIB;
        assert_eq!(cap_from(None, None, total).unwrap(), None);
        assert_eq!(cap_from(Some(" "), None, total).unwrap(), None);
        let c = cap_from(Some("0.1"), None, total).unwrap().unwrap();
        assert_eq!(c.bytes, 8 * GIB);
        assert!(
            c.source
                .contains("GPULAB_GPU_MEMORY_FRACTION=0.1 of 80.0 GiB"),
            "{}",
            c.source
        );
        let c = cap_from(Some("0.1"), Some("4GiB"), total).unwrap().unwrap();
        assert_eq!(
            (c.bytes, c.source.as_str()),
            (4 * GIB, "GPULAB_GPU_MEMORY_LIMIT=4GiB")
        );
        let c = cap_from(Some("0.01"), Some("4GiB"), total)
            .unwrap()
            .unwrap();
        assert_eq!(c.bytes, (0.01 * total as f64) as u64);
        assert!(cap_from(Some("2"), None, total).is_err());
    }

    #[test]
    fn the_error_says_the_cap_was_hit_with_cap_use_and_request() {
        let cap = Cap {
            bytes: 4 * GIB,
            source: "GPULAB_GPU_MEMORY_LIMIT=4GiB".into(),
        };
        let text = exceeded(0, &cap, 3 * GIB + GIB / 2, GIB).to_string();
        for part in [
            "GPU memory cap",
            "cuda:0",
            "4.0 GiB",
            "GPULAB_GPU_MEMORY_LIMIT=4GiB",
            "3.5 GiB in use",
            "1.0 GiB more",
        ] {
            assert!(text.contains(part), "{part:?} missing from: {text}");
        }
        assert!(
            !text.contains("out of memory on"),
            "not the generic OOM: {text}"
        );
    }

    #[test]
    fn charges_stop_at_the_cap_and_come_back_when_freed() {
        // Device 7, reserved for this test: the state is per process and tests run in parallel.
        let dev = 7;
        with_state(|s| {
            s.caps.insert(
                dev,
                Some(Cap {
                    bytes: 1000,
                    source: "test".into(),
                }),
            )
        });
        let never = || -> Result<u64> { panic!("the cap is already known") };
        let a = Charge::new(dev, 600, never).unwrap();
        a.keep(); // a live tensor of 600 bytes
        let e = Charge::new(dev, 500, never).err().expect("over the cap");
        assert!(
            matches!(
                e,
                Error::MemoryCap {
                    cap: 1000,
                    in_use: 600,
                    requested: 500,
                    ..
                }
            ),
            "{e:?}"
        );
        {
            // A failed driver allocation drops its charge: nothing stays counted.
            let _b = Charge::new(dev, 400, never).unwrap();
            assert_eq!(memory_allocated(Device::Cuda(dev)).unwrap(), 1000);
        }
        assert_eq!(memory_allocated(Device::Cuda(dev)).unwrap(), 600);
        release(dev, 600); // the tensor is freed
        assert_eq!(memory_allocated(Device::Cuda(dev)).unwrap(), 0);
        Charge::new(dev, 1000, never).unwrap().keep();
        release(dev, 1000);
        assert!(memory_allocated(Device::Cpu).is_err());
    }
}
