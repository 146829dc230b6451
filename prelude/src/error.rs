//! The one error type of the prelude.
//!
//! Every message is meant to be read by a student in a notebook, so each variant says what
//! went wrong and, where we know it, what to do about it.

use crate::device::{Device, ParseDeviceError};
use std::fmt;

/// `Result` with [`Error`]; kept out of the crate root so `use gpulab::*` does not shadow std's.
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Two operands whose shapes do not fit together.
    ShapeMismatch {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
    },
    /// A shape that does not fit the data or the operation (reshape, from_vec, dims).
    BadShape(String),
    /// Operands on different devices (torch's rule: no implicit copies).
    DeviceMismatch { lhs: Device, rhs: Device },
    /// A device string that does not parse, e.g. "gpu" (`Device::new`'s error, through `?`).
    BadDevice(ParseDeviceError),
    /// `cuda:i` with `i` past the number of devices.
    BadDeviceIndex { index: usize, count: usize },
    /// No usable CUDA driver or device; the text says why.
    CudaUnavailable(String),
    /// A CUDA library (NVRTC, cuBLAS, NVML) could not be found; the text says where we looked.
    LibraryNotFound {
        library: &'static str,
        detail: String,
    },
    /// NVRTC rejected a kernel source; `log` is NVRTC's full compile log.
    Compile {
        name: String,
        arch: String,
        log: String,
    },
    /// The device ran out of memory.
    OutOfMemory { device: Device, bytes: usize },
    /// An allocation past this kernel's GPU memory cap (`cuda::memcap`): the cap, where it was
    /// set, the bytes this kernel's tensors hold and the bytes asked for.
    MemoryCap {
        device: Device,
        cap: u64,
        source: String,
        in_use: u64,
        requested: u64,
    },
    /// Any other CUDA driver, cuBLAS or NVML error.
    Cuda { op: String, detail: String },
    /// A bad argument that is none of the above (kernel name, dim out of range, ...).
    Invalid(String),
    /// The user interrupted the cell (see ARCHITECTURE.md, contract 2).
    Interrupted,
}

fn dims(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ShapeMismatch { op, lhs, rhs } => {
                write!(
                    f,
                    "shape mismatch in {op}: {} and {} are not compatible",
                    dims(lhs),
                    dims(rhs)
                )?;
                // The size that has to agree, for the product students get wrong most.
                if *op == "matmul" {
                    let k2 = match rhs.len() {
                        0 => None,
                        1 => Some(rhs[0]),
                        r => Some(rhs[r - 2]),
                    };
                    match (lhs.last(), k2) {
                        (Some(k), Some(k2)) if k != &k2 => write!(
                            f,
                            " (the left operand's last size, {k}, must equal the right \
                             operand's {}, {k2})",
                            if rhs.len() == 1 {
                                "size"
                            } else {
                                "second-to-last size"
                            }
                        )?,
                        (None, _) | (_, None) => {
                            f.write_str(" (matmul needs at least one dimension on each side)")?
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            Error::BadShape(s) => write!(f, "bad shape: {s}"),
            Error::DeviceMismatch { lhs, rhs } => write!(
                f,
                "expected all tensors on the same device, found {lhs} and {rhs}"
            ),
            Error::BadDevice(e) => e.fmt(f),
            Error::BadDeviceIndex { index, count } => write!(
                f,
                "invalid device cuda:{index}: this machine has {count} CUDA device{}",
                if *count == 1 { "" } else { "s" }
            ),
            Error::CudaUnavailable(why) => write!(f, "CUDA is not available: {why}"),
            Error::LibraryNotFound { library, detail } => {
                write!(f, "{library} could not be loaded: {detail}")
            }
            Error::Compile { name, arch, log } => write!(
                f,
                "NVRTC could not compile {name} for {arch}:\n{}",
                log.trim_end()
            ),
            Error::OutOfMemory { device, bytes } => write!(
                f,
                "out of memory on {device}: could not allocate {} ({bytes} bytes)",
                human_bytes(*bytes as u64)
            ),
            Error::MemoryCap {
                device,
                cap,
                source,
                in_use,
                requested,
            } => write!(
                f,
                "GPU memory cap hit on {device}: this kernel's tensors may hold {} ({source}); \
                 {} in use, and this allocation asks for {} more. Free tensors you no longer \
                 need (drop(t)), or ask for a bigger cap (the teacher sets it in the kernelspec)",
                human_bytes(*cap),
                human_bytes(*in_use),
                human_bytes(*requested)
            ),
            Error::Cuda { op, detail } => write!(f, "{op} failed: {detail}"),
            Error::Invalid(s) => f.write_str(s),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

impl From<ParseDeviceError> for Error {
    fn from(e: ParseDeviceError) -> Error {
        Error::BadDevice(e)
    }
}

/// 1536 -> "1.5 KiB"; shared by the error messages and the device reports.
pub(crate) fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
