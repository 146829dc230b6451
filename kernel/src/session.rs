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

/// The content hash of the prelude this binary embeds: it names this version's `src-<hash>`
/// and `prebuilt-<hash>` folders.
pub const CURRENT_HASH: &str = embedded::HASH;

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

pub fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".local/share"))
        .join("gpulab")
}

pub fn cache_dir() -> PathBuf {
    std::env::var_os("GPULAB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("gpulab")))
        .unwrap_or_else(|| home().join(".cache/gpulab"))
}

/// Where the prelude's sources are extracted and its shared prebuilt build lives: beside the
/// kernel's binary when that binary is an installed kernelspec's (so a `--sys-prefix` install
/// serves every user of the machine, and `uninstall` removes it), else the user's data folder.
/// `GPULAB_PRELUDE_DIR` chooses another folder (a shared disk for a JupyterHub, say).
pub fn prelude_root() -> PathBuf {
    if let Some(d) = std::env::var_os("GPULAB_PRELUDE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let beside_spec = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .filter(|dir| dir.join("kernel.json").is_file());
    beside_spec.unwrap_or_else(data_dir)
}

/// The extracted prelude under `root`, if it is complete.
fn extracted_prelude(root: &Path) -> Option<PathBuf> {
    let prelude = root.join(format!("src-{}", embedded::HASH)).join("prelude");
    prelude.join("Cargo.toml").exists().then_some(prelude)
}

/// Writes the embedded prelude and kernels-cu once per content hash and returns the prelude's
/// directory. Written to a temporary name and renamed, so concurrent kernels never see a
/// half-written tree. Under the shared root when it is there or can be written (the prebuilt
/// prelude is only valid for sources at that path), else in the user's data folder.
pub fn extract_prelude() -> Result<PathBuf> {
    let shared = prelude_root();
    if let Some(p) = extracted_prelude(&shared) {
        return Ok(p);
    }
    match extract_into(&shared) {
        Ok(p) => Ok(p),
        Err(e) if shared != data_dir() => extract_into(&data_dir())
            .with_context(|| format!("(and under {}: {e:#})", shared.display())),
        Err(e) => Err(e),
    }
}

fn extract_into(base: &Path) -> Result<PathBuf> {
    let root = base.join(format!("src-{}", embedded::HASH));
    let prelude = root.join("prelude");
    if prelude.join("Cargo.toml").exists() {
        return Ok(prelude);
    }
    let tmp = base.join(format!(".src-{}-{}", embedded::HASH, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for (rel, bytes) in embedded::FILES {
        let path = tmp.join(rel);
        std::fs::create_dir_all(path.parent().unwrap())
            .with_context(|| format!("creating {}", path.parent().unwrap().display()))?;
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
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e)
                .with_context(|| format!("renaming {} to {}", tmp.display(), root.display()));
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

impl Slot {
    /// A second handle on the slot's lock (the lock is held while any handle is open).
    pub fn hold(&self) -> Result<File> {
        Ok(self._lock.try_clone()?)
    }
}

fn flock(file: &File, how: libc::c_int) -> bool {
    // SAFETY: flock on a file descriptor we own.
    unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(file), how) == 0 }
}

fn lock_file(path: &Path) -> Result<File> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// The lock at `path` taken without waiting (created if missing): `None` while a session, a
/// `warm` or a `clean` holds it. Released when the file is dropped.
pub fn try_lock(path: &Path) -> Result<Option<File>> {
    let file = lock_file(path)?;
    Ok(flock(&file, libc::LOCK_EX | libc::LOCK_NB).then_some(file))
}

pub fn take_slot() -> Result<Slot> {
    let base = cache_dir().join("slots");
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    for n in 0..64 {
        let lock = lock_file(&base.join(format!("slot-{n}.lock")))?;
        if flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
            let dir = base.join(format!("slot-{n}"));
            std::fs::create_dir_all(&dir)?;
            seed_lock_file(&dir)?;
            return Ok(Slot { dir, _lock: lock });
        }
    }
    anyhow::bail!("all 64 build slots under {} are in use", base.display())
}

/// A fresh slot starts from a lock file that resolves the prelude's dependencies to the
/// versions we tested, and needs no registry lookup. Only the embedded copy is used: another
/// slot's lock file may be half-written by its cargo at this very moment (cargo rewrites it in
/// place), and a truncated lock file fails the prelude's build.
fn seed_lock_file(dir: &Path) -> Result<()> {
    let lock = dir.join("Cargo.lock");
    if lock.exists() {
        return Ok(());
    }
    write_atomically(&lock, embedded_lock_file())
}

/// Writes `path` through a temporary file and a rename, so no reader sees it half-written.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// The shared prebuilt prelude: evcxr's build folder in which `gpulab-kernel warm` loaded the
/// prelude once, under `prelude_root()`. New slots start from its compiled dependencies and
/// prelude (symbolic links to the big artifacts, copies of cargo's small bookkeeping files)
/// instead of compiling them again.
pub fn prebuilt_dir() -> PathBuf {
    prelude_root().join(format!("prebuilt-{}", embedded::HASH))
}

const READY: &str = "READY";

/// The prebuilt folder, held while `warm` builds it (other warms wait; kernels do not seed from
/// a folder being built).
pub fn take_prebuilt_slot() -> Result<Slot> {
    let dir = prebuilt_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock = lock_file(&dir.with_extension("lock"))?;
    anyhow::ensure!(
        flock(&lock, libc::LOCK_EX),
        "locking {}",
        dir.with_extension("lock").display()
    );
    seed_lock_file(&dir)?;
    Ok(Slot { dir, _lock: lock })
}

/// What a prebuilt folder records: the compiler it was built with (cargo rebuilds everything
/// for another one, so such a folder is no help).
pub fn toolchain_id() -> String {
    std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Whether the prebuilt prelude is complete and built by this toolchain.
pub fn prebuilt_ready(toolchain: &str) -> bool {
    std::fs::read_to_string(prebuilt_dir().join(READY)).is_ok_and(|t| t == toolchain)
}

pub fn mark_prebuilt(dir: &Path, toolchain: &str) -> Result<()> {
    write_atomically(&dir.join(READY), toolchain.as_bytes())
}

pub fn unmark_prebuilt(slot: &Slot) {
    let _ = std::fs::remove_file(slot.dir.join(READY));
}

/// Starts a build slot from the prebuilt prelude, once per prelude version. Returns the number
/// of files linked or copied, or None when there is no usable prebuilt prelude. The prebuilt
/// folder is only read: its artifacts are linked, never written (rustc and the linker replace
/// an output by renaming a new file over it, which replaces the slot's link, not the target).
pub fn seed_slot(slot: &Path, prelude: &Path) -> Result<Option<usize>> {
    let template = prebuilt_dir();
    // The prebuilt build is valid for the sources at exactly this path (cargo's package id).
    if !prelude.starts_with(prelude_root()) || !template.join(READY).is_file() {
        return Ok(None);
    }
    // "r2": slots seeded before existing files were replaced may hold an older dylib under
    // this version's stamp; the new name makes them seed once more.
    let stamp = slot.join(format!(".seeded-r2-{}", embedded::HASH));
    if stamp.exists() {
        return Ok(Some(0));
    }
    // A warm rebuilding the folder holds it exclusively; then this session builds for itself.
    let lock = File::open(template.with_extension("lock"))?;
    if !flock(&lock, libc::LOCK_SH | libc::LOCK_NB) {
        return Ok(None);
    }
    let mut n = 0;
    link_tree(&template.join("target"), &slot.join("target"), &mut n)?;
    write_atomically(&stamp, b"")?;
    Ok(Some(n))
}

fn link_tree(from: &Path, to: &Path, n: &mut usize) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let name_s = name.to_string_lossy();
        // The session's own crate (evcxr calls it `ctx`) is rebuilt by every cell; incremental
        // state is only for it and the prelude, and cargo's lock belongs to each folder.
        if name_s == "incremental"
            || name_s == ".cargo-lock"
            || name_s.starts_with("ctx-")
            || name_s.starts_with("libctx")
        {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            link_tree(&src, &dst, n)?;
            continue;
        }
        // Whatever the slot already holds under this name (its own build of an older prelude,
        // or a link into an older prebuilt folder) is replaced, never kept: the prebuilt
        // bookkeeping says "fresh" for the prebuilt artifacts only, and a dylib's name
        // (`libgpulab.so`) carries no hash, so a kept old one would be loaded as if it were
        // this version. Both kinds land by rename, so a reader never sees the name missing.
        let artifact = matches!(
            Path::new(&name).extension().and_then(|e| e.to_str()),
            Some("rlib" | "rmeta" | "so" | "a")
        );
        if artifact && kind.is_file() {
            if std::fs::read_link(&dst).is_ok_and(|t| t == src) {
                continue;
            }
            let tmp = to.join(format!(".{}.{}.link", name_s, std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(&src, &tmp)
                .with_context(|| format!("linking {}", tmp.display()))?;
            std::fs::rename(&tmp, &dst).with_context(|| format!("replacing {}", dst.display()))?;
        } else if kind.is_file() {
            // cargo decides freshness by comparing modification times, so copies keep them; a
            // copy cut short (the kernel killed) must not look complete, hence the rename.
            let tmp = to.join(format!(".{}.{}", name_s, std::process::id()));
            std::fs::copy(&src, &tmp).with_context(|| format!("copying {}", src.display()))?;
            let meta = entry.metadata()?;
            let times = std::fs::FileTimes::new()
                .set_accessed(meta.accessed()?)
                .set_modified(meta.modified()?);
            File::options().write(true).open(&tmp)?.set_times(times)?;
            std::fs::rename(&tmp, &dst)?;
        } else {
            continue;
        }
        *n += 1;
    }
    Ok(())
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
    fn seeding_links_artifacts_copies_bookkeeping_with_its_times_and_skips_the_cell_crate() {
        use std::path::Path;
        use std::time::{Duration, SystemTime};
        let base = std::env::temp_dir().join(format!("gpulab-seed-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (from, to) = (base.join("template"), base.join("slot"));
        let write = |rel: &str, text: &str| {
            let p = from.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        };
        write("deps/libdep-1.rlib", "rlib");
        write("deps/libgpulab-2.so", "so");
        write("deps/dep-1.d", "dep-info");
        write(".fingerprint/dep-1/lib-dep", "fingerprint");
        write("deps/libctx-3.so", "a cell");
        write(".fingerprint/ctx-3/lib-ctx", "a cell");
        write("incremental/gpulab-4/state", "incremental");
        write(".cargo-lock", "");
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(from.join(".fingerprint/dep-1/lib-dep"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        // What the slot already has under those names (its own build of an older prelude:
        // a dylib's name has no hash) is replaced, or cargo would call the old build fresh.
        std::fs::create_dir_all(to.join("deps")).unwrap();
        std::fs::write(to.join("deps/dep-1.d"), "the slot's own").unwrap();
        std::fs::write(to.join("deps/libgpulab-2.so"), "an older prelude").unwrap();

        let mut n = 0;
        super::link_tree(&from, &to, &mut n).unwrap();
        let link = |rel: &str| std::fs::symlink_metadata(to.join(rel)).unwrap();
        assert!(link("deps/libdep-1.rlib").file_type().is_symlink());
        assert!(link("deps/libgpulab-2.so").file_type().is_symlink());
        let fp = to.join(".fingerprint/dep-1/lib-dep");
        assert!(!link(".fingerprint/dep-1/lib-dep").file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&fp).unwrap(), "fingerprint");
        assert_eq!(std::fs::metadata(&fp).unwrap().modified().unwrap(), old);
        assert_eq!(
            std::fs::read_to_string(to.join("deps/dep-1.d")).unwrap(),
            "dep-info"
        );
        assert_eq!(
            std::fs::read_to_string(to.join("deps/libgpulab-2.so")).unwrap(),
            "so"
        );
        for skipped in [
            "deps/libctx-3.so",
            ".fingerprint/ctx-3",
            "incremental",
            ".cargo-lock",
        ] {
            assert!(
                !Path::new(&to.join(skipped)).exists(),
                "{skipped} was seeded"
            );
        }
        assert_eq!(n, 4);
        // Seeding again changes nothing: the links are already there.
        let mut again = 0;
        super::link_tree(&from, &to, &mut again).unwrap();
        assert_eq!(again, 2, "only the bookkeeping copies are refreshed");
        let _ = std::fs::remove_dir_all(&base);
    }

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
