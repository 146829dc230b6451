//! What a new host buffer and a new shape may ask for. A `Vec` the allocator cannot give
//! aborts the process (Rust's allocation-failure handler), and one bigger than the free memory
//! gets it killed once it is filled: either way a notebook loses its session and every
//! variable. So a shape whose element count overflows is refused, and a big host buffer is
//! first checked against what Linux reports as available; both give an error a student can
//! read (torch refuses too, from its allocator, though only when malloc itself fails).

use super::dtype::DType;
use crate::device::Device;
use crate::error::{Error, Result};

/// Buffers below this are not checked: reading /proc/meminfo costs more than they do, and
/// a machine that cannot give 1 GiB has bigger trouble.
const CHECK_FROM: usize = 1 << 30;

/// The element count of `dims`, or an error naming `op` when it does not fit in a `usize`
/// (in release builds the plain product would wrap round to a small number).
pub(crate) fn checked_numel(op: &str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            Error::BadShape(format!(
                "{op}: shape {dims:?} has more elements than any memory can hold"
            ))
        })
}

/// Ok when a host buffer of `n` elements of `dtype` can be allocated without exhausting the
/// machine's memory (available RAM plus free swap), else `Error::OutOfMemory` on the CPU.
pub(crate) fn host_room(n: usize, dtype: DType) -> Result<()> {
    let bytes = n.saturating_mul(dtype.size_in_bytes());
    if bytes < CHECK_FROM {
        return Ok(());
    }
    match available() {
        Some(free) if bytes <= free => Ok(()),
        // Unknown (no /proc): only a size no address space has is refused.
        None if bytes < usize::MAX => Ok(()),
        _ => Err(Error::OutOfMemory {
            device: Device::Cpu,
            bytes,
        }),
    }
}

/// MemAvailable plus SwapFree from /proc/meminfo, in bytes.
fn available() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| {
        info.lines().find_map(|l| {
            l.strip_prefix(key)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<usize>()
                .ok()
        })
    };
    Some((kib("MemAvailable:")? + kib("SwapFree:").unwrap_or(0)).saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_shapes_and_impossible_buffers_are_refused() {
        assert_eq!(checked_numel("zeros", &[2, 3, 4]).unwrap(), 24);
        assert_eq!(checked_numel("zeros", &[]).unwrap(), 1);
        assert_eq!(checked_numel("zeros", &[0, usize::MAX]).unwrap(), 0);
        let e = checked_numel("expand", &[1 << 40, 1 << 40]).unwrap_err();
        assert!(
            e.to_string()
                .contains("expand: shape [1099511627776, 1099511627776]"),
            "{e}"
        );
        host_room(1 << 20, DType::F64).unwrap();
        let e = host_room(usize::MAX / 2, DType::F32).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfMemory {
                    device: Device::Cpu,
                    ..
                }
            ),
            "{e}"
        );
        // 2^50 bytes (1 PiB) is more than any machine this runs on has free.
        assert!(host_room(1 << 47, DType::F64).is_err());
    }
}
