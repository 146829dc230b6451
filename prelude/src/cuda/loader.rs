//! Finds the CUDA libraries before cudarc (or our cuBLAS layer) touches them.
//!
//! cudarc loads `libcuda`, `libnvrtc` and `libcublas` by name on first use and panics when
//! the name does not resolve. So every path into cudarc goes through one of the guards here
//! first: each asks cudarc whether its library resolves and, when it does not, looks in the
//! places CUDA usually lives (CUDA_HOME, /usr/local/cuda, the `nvidia-*` Python wheels) and
//! `dlopen`s the file it finds. Once a library is loaded, a later `dlopen` of its soname (what
//! cudarc does) returns the loaded copy, so cudarc ends up using our file. The result of each
//! search is kept, so the cost is paid once per process.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Runs `f`, turning a panic into an error string. cudarc panics on a missing library or
/// symbol; the guards below should make that impossible, this is the second line of defence.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        format!("{what}: {msg}")
    })
}

/// The driver (`libcuda.so.1`) is loaded and `cuInit` succeeded.
pub(crate) fn driver() -> Result<()> {
    static STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(load_driver)
        .clone()
        .map_err(Error::CudaUnavailable)
}

fn load_driver() -> std::result::Result<(), String> {
    if std::env::var_os("GPULAB_DISABLE_CUDA").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("disabled by the GPULAB_DISABLE_CUDA environment variable".into());
    }
    let present = || {
        guarded("libcuda", || unsafe {
            cudarc::driver::sys::is_culib_present()
        })
    };
    if present() != Ok(true) {
        // Containers and WSL keep the driver outside the loader's default path.
        let dirs = [
            "/usr/lib/wsl/lib",
            "/usr/local/nvidia/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
        ];
        let found = dirs
            .iter()
            .map(|d| Path::new(d).join("libcuda.so.1"))
            .find(|p| p.is_file() && preload(p, false).is_ok());
        if found.is_none() || present() != Ok(true) {
            return Err(format!(
                "no NVIDIA driver found: libcuda.so.1 could not be loaded (searched the dynamic \
                 loader path and {})",
                dirs.join(", ")
            ));
        }
    }
    match guarded("cuInit", cudarc::driver::result::init) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!(
            "the NVIDIA driver is installed but cuInit failed: {}",
            super::driver_error_text(&e)
        )),
        Err(p) => Err(p),
    }
}

/// NVRTC (and its builtins library) is loaded.
pub(crate) fn nvrtc() -> Result<()> {
    static STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            load_lib(
                "GPULAB_NVRTC_PATH",
                || unsafe { cudarc::nvrtc::sys::is_culib_present() },
                &["cu13/lib", "cuda_nvrtc/lib"],
                &["libnvrtc-builtins.so.13.0", "libnvrtc-builtins.so.12"],
                &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"],
            )
        })
        .clone()
        .map_err(|detail| Error::LibraryNotFound {
            library: "NVRTC (libnvrtc.so)",
            detail,
        })
}

const CUBLAS_NAMES: &[&str] = &["libcublas.so.13", "libcublas.so.12", "libcublas.so"];

/// cuBLAS (and cuBLASLt, which it needs), opened. We call it directly (see `blas.rs`).
pub(crate) fn cublas() -> Result<libloading::Library> {
    static STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    let open = || {
        CUBLAS_NAMES
            .iter()
            .find_map(|n| unsafe { libloading::Library::new(*n) }.ok())
    };
    STATE
        .get_or_init(|| {
            load_lib(
                "GPULAB_CUBLAS_PATH",
                || open().is_some(),
                &["cu13/lib", "cublas/lib"],
                &["libcublasLt.so.13", "libcublasLt.so.12"],
                CUBLAS_NAMES,
            )
        })
        .clone()
        .map_err(|detail| Error::LibraryNotFound {
            library: "cuBLAS (libcublas.so)",
            detail,
        })?;
    // Already loaded, so this resolves to the same copy.
    open().ok_or_else(|| Error::LibraryNotFound {
        library: "cuBLAS (libcublas.so)",
        detail: "found, then lost".into(),
    })
}

/// Loads a library found in `env_var` (a file or a folder), on the loader's path, or in the
/// usual CUDA folders. `deps` are loaded first, globally, because the main library opens
/// them by soname at run time (nvrtc-builtins) or at load time (cublasLt).
fn load_lib(
    env_var: &str,
    present: impl Fn() -> bool,
    wheel_dirs: &[&str],
    deps: &[&str],
    names: &[&str],
) -> std::result::Result<(), String> {
    let present = || guarded("probe", &present) == Ok(true);
    let explicit = std::env::var_os(env_var).map(PathBuf::from);
    if explicit.is_none() && present() {
        return Ok(());
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(p) = &explicit {
        if p.is_file() {
            dirs.push(p.parent().unwrap_or(Path::new(".")).to_path_buf());
        } else {
            dirs.push(p.clone());
        }
    }
    dirs.extend(cuda_dirs());
    for sp in site_packages() {
        for w in wheel_dirs {
            dirs.push(sp.join("nvidia").join(w));
        }
    }
    let mut tried = Vec::new();
    for dir in &dirs {
        let file = match &explicit {
            Some(p) if p.is_file() && dir == p.parent().unwrap_or(Path::new(".")) => {
                Some(p.clone())
            }
            _ => names.iter().map(|n| dir.join(n)).find(|p| p.is_file()),
        };
        let Some(file) = file else {
            tried.push(dir.display().to_string());
            continue;
        };
        for d in deps {
            let dep = dir.join(d);
            if dep.is_file() {
                let _ = preload(&dep, true);
            }
        }
        match preload(&file, true) {
            Ok(()) if present() => return Ok(()),
            Ok(()) => tried.push(format!(
                "{} (loaded, but not under a name cudarc looks for)",
                file.display()
            )),
            Err(e) => tried.push(format!("{} ({e})", file.display())),
        }
    }
    if present() {
        return Ok(());
    }
    Err(format!(
        "not on the dynamic loader path (LD_LIBRARY_PATH) and not found in: {}. Install the \
         CUDA toolkit or the pip wheels (see tests/requirements-cuda.txt), or set {env_var} \
         to the library file",
        tried.join(", ")
    ))
}

/// `dlopen`s `path` and keeps it loaded for the life of the process.
fn preload(path: &Path, global: bool) -> std::result::Result<(), String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LOCAL, RTLD_NOW};
    let flags = RTLD_NOW | if global { RTLD_GLOBAL } else { RTLD_LOCAL };
    // SAFETY: these are NVIDIA's libraries; their initialisers have no preconditions.
    let lib = unsafe { Library::open(Some(path), flags) }.map_err(|e| e.to_string())?;
    std::mem::forget(lib);
    Ok(())
}

/// Toolkit folders: CUDA_HOME / CUDA_PATH and the default install places.
fn cuda_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    roots.push("/usr/local/cuda".into());
    roots.push("/opt/cuda".into());
    let mut dirs = Vec::new();
    for r in roots {
        dirs.push(r.join("lib64"));
        dirs.push(r.join("lib"));
        dirs.push(r.join("targets/x86_64-linux/lib"));
    }
    dirs
}

/// Python site-packages folders that may hold NVIDIA's wheels: the active venv or conda env,
/// the project's `.venv` next to the prelude, the user's and the system's.
pub(crate) fn site_packages() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX", "GPULAB_VENV"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv"));
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(Path::new(&home).join(".local"));
    }
    roots.push("/usr/local".into());
    roots.push("/usr".into());
    let mut out = Vec::new();
    for r in roots {
        for lib in ["lib", "lib64"] {
            let Ok(entries) = std::fs::read_dir(r.join(lib)) else {
                continue;
            };
            let mut pys: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("python3"))
                })
                .collect();
            pys.sort();
            for py in pys.into_iter().rev() {
                for sub in ["site-packages", "dist-packages"] {
                    let sp = py.join(sub);
                    if sp.is_dir() {
                        out.push(sp);
                    }
                }
            }
        }
    }
    out
}
