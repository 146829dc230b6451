//! The session side of the interrupt flag (ARCHITECTURE.md, contract 2).
//!
//! The kernel names a one-byte file in `GPULAB_INTERRUPT_FILE` and writes `1` there when the
//! user presses "interrupt". We map that byte read-only and shared, once, so a check is a
//! single load from memory the kernel's writes land in: cheap enough for every row of an
//! image or every item of a loop. Long-running prelude code calls [`requested`] and stops
//! early, so the cell ends normally and the session keeps its variables.

use std::sync::OnceLock;

use crate::error::Error;

/// Environment variable holding the flag file's path.
pub const ENV_VAR: &str = "GPULAB_INTERRUPT_FILE";

struct Flag {
    byte: *const u8,
}

// SAFETY: the pointer is to a read-only mapping that lives for the whole process (never
// unmapped) and is only ever read with volatile loads, so any thread may hold and read it.
unsafe impl Send for Flag {}
// SAFETY: as for Send: shared reads of a byte only the kernel (another process) writes.
unsafe impl Sync for Flag {}

static FLAG: OnceLock<Option<Flag>> = OnceLock::new();

#[cfg(unix)]
fn map_flag() -> Option<Flag> {
    use std::os::unix::io::AsRawFd;
    let path = std::env::var_os(ENV_VAR)?;
    let file = std::fs::File::open(path).ok()?;
    // A zero-length mapping would fault on the first read (SIGBUS), so insist on the byte.
    if file.metadata().ok()?.len() < 1 {
        return None;
    }
    // SAFETY: a fresh read-only shared mapping of one byte of a file we just opened; the
    // descriptor may be closed afterwards, the mapping stays valid until the process ends.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            1,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED || ptr.is_null() {
        return None;
    }
    Some(Flag {
        byte: ptr as *const u8,
    })
}

#[cfg(not(unix))]
fn map_flag() -> Option<Flag> {
    None
}

/// True when the kernel has asked the running cell to stop.
///
/// False when the session was not started by the gpulab kernel (no variable, or the file
/// cannot be mapped). Never panics; the mapping is made on the first call only.
#[inline]
pub fn requested() -> bool {
    match FLAG.get_or_init(map_flag) {
        // The kernel writes either the character '1' or the byte 1; anything else (its '0',
        // or a byte 0) means "keep going".
        Some(flag) => {
            // SAFETY: the pointer is a live one-byte mapping; an atomic load tells the
            // compiler the byte can change under us, so it is re-read on every call.
            let b = unsafe {
                (*(flag.byte as *const std::sync::atomic::AtomicU8))
                    .load(std::sync::atomic::Ordering::Relaxed)
            };
            b == b'1' || b == 1
        }
        None => false,
    }
}

/// `Err(Error::Interrupted)` when the kernel has asked the running cell to stop, for use
/// with `?` inside long loops.
#[inline]
pub fn check() -> Result<(), Error> {
    if requested() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// Whether this session has a flag to watch at all (i.e. runs under the gpulab kernel).
pub fn available() -> bool {
    FLAG.get_or_init(map_flag).is_some()
}
