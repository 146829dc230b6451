//! The files a session needs on disk: the extracted prelude, a build slot for evcxr, and the
//! interrupt flag shared with the child process.

use anyhow::{Context, Result};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".local/share"))
        .join("gpulab")
}

fn cache_dir() -> PathBuf {
    std::env::var_os("GPULAB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("gpulab")))
        .unwrap_or_else(|| home().join(".cache/gpulab"))
}

/// Writes the embedded prelude and kernels-cu once per content hash and returns the prelude's
/// directory. Written to a temporary name and renamed, so concurrent kernels never see a
/// half-written tree.
pub fn extract_prelude() -> Result<PathBuf> {
    let root = data_dir().join(format!("src-{}", embedded::HASH));
    let prelude = root.join("prelude");
    if prelude.join("Cargo.toml").exists() {
        return Ok(prelude);
    }
    let tmp = data_dir().join(format!(".src-{}-{}", embedded::HASH, std::process::id()));
    for (rel, bytes) in embedded::FILES {
        let path = tmp.join(rel);
        std::fs::create_dir_all(path.parent().unwrap())?;
        let bytes = if *rel == "prelude/Cargo.toml" {
            session_manifest(bytes)?
        } else {
            bytes.to_vec()
        };
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    match std::fs::rename(&tmp, &root) {
        Ok(()) => {}
        // Another kernel won the race; its copy is identical.
        Err(_) if prelude.join("Cargo.toml").exists() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("renaming {} to {}", tmp.display(), root.display()))
        }
    }
    Ok(prelude)
}

const RLIB_LINE: &str = "crate-type = [\"rlib\"]";

/// The prelude's manifest as sessions build it: a dylib, so every cell shares one copy of its
/// statics (see the comment beside the line in prelude/Cargo.toml).
fn session_manifest(bytes: &[u8]) -> Result<Vec<u8>> {
    let text = std::str::from_utf8(bytes)?;
    anyhow::ensure!(
        text.contains(RLIB_LINE),
        "prelude/Cargo.toml lost its `{RLIB_LINE}` line"
    );
    Ok(text
        .replacen(RLIB_LINE, "crate-type = [\"dylib\"]", 1)
        .into_bytes())
}

pub fn embedded_lock_file() -> &'static [u8] {
    embedded::FILES
        .iter()
        .find(|(p, _)| *p == "Cargo.lock")
        .map(|(_, b)| *b)
        .unwrap_or(b"")
}

/// A build directory for evcxr, held with an exclusive lock for the kernel's lifetime. Slots are
/// reused across sessions, so a new session finds the prelude already compiled; several kernels
/// at once each take their own slot.
pub struct Slot {
    pub dir: PathBuf,
    _lock: File,
}

pub fn take_slot() -> Result<Slot> {
    let base = cache_dir().join("slots");
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    for n in 0..64 {
        let lock_path = base.join(format!("slot-{n}.lock"));
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe {
            libc::flock(
                std::os::unix::io::AsRawFd::as_raw_fd(&lock),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        } == 0
        {
            let dir = base.join(format!("slot-{n}"));
            std::fs::create_dir_all(&dir)?;
            seed_lock_file(&dir, &base);
            return Ok(Slot { dir, _lock: lock });
        }
    }
    anyhow::bail!("all 64 build slots under {} are in use", base.display())
}

/// A fresh slot starts from a lock file that resolves the prelude's dependencies to the
/// versions we tested, and needs no registry lookup.
fn seed_lock_file(dir: &Path, base: &Path) {
    let lock = dir.join("Cargo.lock");
    if lock.exists() {
        return;
    }
    let from_other = (0..64)
        .map(|n| base.join(format!("slot-{n}/Cargo.lock")))
        .find(|p| p.exists());
    match from_other.and_then(|p| std::fs::read(p).ok()) {
        Some(bytes) => {
            let _ = std::fs::write(&lock, bytes);
        }
        None => {
            let _ = std::fs::write(&lock, embedded_lock_file());
        }
    }
}

/// The interrupt flag file (ARCHITECTURE.md, contract 2).
pub struct InterruptFlag {
    pub path: PathBuf,
    file: File,
}

impl InterruptFlag {
    pub fn create() -> Result<InterruptFlag> {
        let dir = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!("gpulab-interrupt-{}", std::process::id()));
        let mut file = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        // Byte 0: the interrupt request. Byte 1: the child's code is running (written by the
        // child, kernel/src/child.rs).
        file.write_all(&[0, 0])?;
        Ok(InterruptFlag { path, file })
    }

    /// Whether the child process is running a cell's code right now (as opposed to evcxr
    /// analysing or building it, or nothing at all).
    pub fn code_running(&self) -> bool {
        let mut b = [0u8];
        self.file
            .read_at(&mut b, crate::child::RUNNING_BYTE)
            .map(|n| n == 1 && b[0] != 0)
            .unwrap_or(false)
    }

    /// Clears the running byte, for a child that was ended while it ran code.
    pub fn clear_running(&self) {
        let _ = self.file.write_at(&[0], crate::child::RUNNING_BYTE);
    }

    pub fn set(&self, on: bool) {
        let _ = self.file.write_at(&[on as u8], 0);
    }

    pub fn is_set(&self) -> bool {
        let mut b = [0u8];
        self.file
            .read_at(&mut b, 0)
            .map(|_| b[0] != 0)
            .unwrap_or(false)
    }
}

impl Drop for InterruptFlag {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sessions_build_the_prelude_as_a_dylib() {
        let (_, manifest) = super::embedded::FILES
            .iter()
            .find(|(p, _)| *p == "prelude/Cargo.toml")
            .unwrap();
        let patched = String::from_utf8(super::session_manifest(manifest).unwrap()).unwrap();
        assert!(patched.contains("crate-type = [\"dylib\"]"));
        assert!(!patched.contains(super::RLIB_LINE));
    }
}
