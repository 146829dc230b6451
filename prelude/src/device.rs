//! Where a tensor lives: `Device::Cpu` or `Device::Cuda(i)`, written like torch's
//! `"cpu"`, `"cuda"`, `"cuda:1"`.
//!
//! A leaf of the crate: it names a device and knows nothing about finding one, so `error`
//! and `cuda` can both depend on it without a cycle. What needs the driver lives in `cuda`
//! (`Device::cuda_if_available` is implemented there), and a bad device string has its own
//! error type, as `str::parse` has `ParseIntError`; `?` turns it into [`crate::Error`].

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    Cuda(usize),
}

impl Device {
    /// Parses `"cpu"`, `"cuda"` (= `cuda:0`) or `"cuda:N"`. Parsing does not look for the
    /// device: like `torch.device`, an index is checked when something is placed on it.
    pub fn new(s: &str) -> Result<Device, ParseDeviceError> {
        s.parse()
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// The CUDA ordinal, `None` for the CPU.
    pub fn index(&self) -> Option<usize> {
        match self {
            Device::Cpu => None,
            Device::Cuda(i) => Some(*i),
        }
    }
}

impl FromStr for Device {
    type Err = ParseDeviceError;
    fn from_str(s: &str) -> Result<Device, ParseDeviceError> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "cpu" => return Ok(Device::Cpu),
            "cuda" => return Ok(Device::Cuda(0)),
            _ => {}
        }
        if let Some(rest) = t.strip_prefix("cuda:") {
            if let Ok(i) = rest.parse::<usize>() {
                return Ok(Device::Cuda(i));
            }
        }
        Err(ParseDeviceError(s.to_string()))
    }
}

impl TryFrom<&str> for Device {
    type Error = ParseDeviceError;
    fn try_from(s: &str) -> Result<Device, ParseDeviceError> {
        s.parse()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

/// Shown the way torch shows a device, since evcxr prints a trailing expression with `{:?}`.
impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("device(type='cpu')"),
            Device::Cuda(i) => write!(f, "device(type='cuda', index={i})"),
        }
    }
}

/// Lets every API that takes `impl Into<Device>` accept `&dev` as well as `dev`.
impl From<&Device> for Device {
    fn from(d: &Device) -> Device {
        *d
    }
}

/// A string that names no device; holds the string as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDeviceError(pub String);

impl fmt::Display for ParseDeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown device {:?}: expected \"cpu\", \"cuda\" or \"cuda:N\"",
            self.0
        )
    }
}

impl std::error::Error for ParseDeviceError {}
