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
        // SAFETY: is_culib_present only tries dlopen on cudarc's candidate names.
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

/// The CUDA version the driver supports, when a driver is usable (NVRTC works without one:
/// then any NVRTC will do).
fn driver_cuda() -> Option<super::Version> {
    super::driver_version().ok()
}

/// NVRTC (and its builtins library) is loaded, and its CUDA major version is one the driver
/// supports (G1).
pub(crate) fn nvrtc() -> Result<()> {
    static STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let driver = driver_cuda();
            let chosen = load_lib(
                "GPULAB_NVRTC_PATH",
                // SAFETY: only tries dlopen on cudarc's candidate names.
                || unsafe { cudarc::nvrtc::sys::is_culib_present() },
                &["cuda_nvrtc/lib", "cu13/lib", "cu12/lib"],
                "libnvrtc-builtins.so.",
                &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"],
                "NVRTC",
                driver,
            )?;
            let (mut major, mut minor) = (0i32, 0i32);
            // SAFETY: nvrtcVersion writes two ints through valid pointers; NVRTC was loaded above.
            guarded("nvrtcVersion", || unsafe {
                cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor)
            })?
            .result()
            .map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
            if let Some(d) = driver {
                check_major("NVRTC", major as u32, minor as u32, d, "GPULAB_NVRTC_PATH")?;
            }
            // G14: cudarc opens NVRTC by name itself; when the user named a file, make sure
            // that is the library cudarc ended up with, rather than another on the path.
            if let (Some(want), Some(file)) = (std::env::var_os("GPULAB_NVRTC_PATH"), chosen) {
                let want = PathBuf::from(want);
                if want.is_file() {
                    if let Some(got) = loaded_file_of("nvrtcVersion") {
                        if !same_file(&got, &file) {
                            return Err(format!(
                                "GPULAB_NVRTC_PATH names {}, but {} was loaded from the dynamic \
                                 loader path first; remove its folder from LD_LIBRARY_PATH",
                                file.display(),
                                got.display()
                            ));
                        }
                    }
                }
            }
            Ok(())
        })
        .clone()
        .map_err(|detail| Error::LibraryNotFound {
            library: "NVRTC (libnvrtc.so)",
            detail,
        })
}

const CUBLAS_NAMES: &[&str] = &["libcublas.so.13", "libcublas.so.12", "libcublas.so"];

/// cuBLAS (and cuBLASLt, which it needs), opened. We call it directly (see `blas.rs`). Its
/// major version must be one the driver supports: cuBLAS carries its own CUDA runtime, and
/// a CUDA 13 runtime on a CUDA 12 driver fails `cublasCreate` with no useful message (G1).
pub(crate) fn cublas() -> Result<libloading::Library> {
    static STATE: OnceLock<std::result::Result<String, String>> = OnceLock::new();
    let not_found = |detail: String| Error::LibraryNotFound {
        library: "cuBLAS (libcublas.so)",
        detail,
    };
    let name = STATE
        .get_or_init(|| {
            let driver = driver_cuda();
            // On the loader path: the newest name the driver supports.
            let on_path = ordered_for_driver(CUBLAS_NAMES, driver, "cuBLAS", "GPULAB_CUBLAS_PATH");
            if std::env::var_os("GPULAB_CUBLAS_PATH").is_none() {
                if let Ok(names) = &on_path {
                    for n in names {
                        // SAFETY: NVIDIA's libraries; their initialisers have no preconditions.
                        if unsafe { libloading::Library::new(n) }.is_ok() {
                            return Ok(n.to_string());
                        }
                    }
                }
            }
            let chosen = load_lib(
                "GPULAB_CUBLAS_PATH",
                || false,
                &["cublas/lib", "cu13/lib", "cu12/lib"],
                "libcublasLt.so.",
                CUBLAS_NAMES,
                "cuBLAS",
                driver,
            )?;
            match chosen {
                Some(file) => Ok(file.display().to_string()),
                None => Err(match on_path {
                    Err(e) => e,
                    Ok(_) => "found, then lost".into(),
                }),
            }
        })
        .clone()
        .map_err(not_found)?;
    // Already loaded, so this resolves to the same copy.
    // SAFETY: cuBLAS's initialisers have no preconditions.
    unsafe { libloading::Library::new(&name) }.map_err(|e| not_found(e.to_string()))
}

/// The CUDA major version in a library file name: `libcublas.so.12` -> 12,
/// `libnvrtc.so.13.0.88` -> 13, `libnvrtc.so` -> None.
pub(crate) fn major_of(file_name: &str) -> Option<u32> {
    let (_, rest) = file_name.split_once(".so.")?;
    rest.split('.').next()?.parse().ok()
}

/// An error unless a `what` library of CUDA `major.minor` can run on a driver for CUDA
/// `driver`: NVIDIA's compatibility promise holds within a major version only.
fn check_major(
    what: &str,
    major: u32,
    minor: u32,
    driver: super::Version,
    env_var: &str,
) -> std::result::Result<(), String> {
    if major <= driver.major {
        return Ok(());
    }
    Err(format!(
        "{what} {major}.{minor} needs a driver for CUDA {major} or newer, but this driver \
         supports CUDA {driver}: install the CUDA {d} version (pip install {pkg}-cu{d}) or \
         set {env_var} to a CUDA {d} library",
        d = driver.major,
        pkg = if what == "NVRTC" {
            "nvidia-cuda-nvrtc"
        } else {
            "nvidia-cublas"
        },
    ))
}

/// `candidates` (file names or paths) that can run on `driver`, newest major first, in their
/// given order within a major; unversioned names last. All of them, in order, when the
/// driver is unknown. An error naming both versions when every versioned candidate is too
/// new for the driver (G1).
pub(crate) fn ordered_for_driver<S: AsRef<str>>(
    candidates: &[S],
    driver: Option<super::Version>,
    what: &str,
    env_var: &str,
) -> std::result::Result<Vec<String>, String> {
    let major = |c: &S| {
        let name = c.as_ref().rsplit('/').next().unwrap_or("");
        major_of(name)
    };
    let Some(d) = driver else {
        return Ok(candidates.iter().map(|c| c.as_ref().to_string()).collect());
    };
    let mut ok: Vec<(u32, usize, String)> = Vec::new();
    let mut too_new: Vec<u32> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        match major(c) {
            Some(m) if m > d.major => too_new.push(m),
            // Unversioned: order after every versioned one, and let the loaded library's
            // own version be checked.
            m => ok.push((m.unwrap_or(0), i, c.as_ref().to_string())),
        }
    }
    if ok.is_empty() && !too_new.is_empty() {
        let m = too_new.into_iter().min().unwrap_or_default();
        return Err(format!(
            "{what} {m} was found, but it needs a driver for CUDA {m} or newer, and this \
             driver supports CUDA {d}: install the CUDA {dm} version (pip install {pkg}-cu{dm}) \
             or set {env_var} to a CUDA {dm} library",
            dm = d.major,
            pkg = if what == "NVRTC" {
                "nvidia-cuda-nvrtc"
            } else {
                "nvidia-cublas"
            },
        ));
    }
    ok.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(ok.into_iter().map(|(_, _, c)| c).collect())
}

/// The dependency (`<prefix><version>`, e.g. `libnvrtc-builtins.so.13.1`) among `files` that
/// belongs to a library of CUDA `major.minor`: the exact version if present, else the newest
/// of the same major (G6: the builtins are named by NVRTC's full version, so a fixed list of
/// names misses every new release).
pub(crate) fn pick_dep(
    files: &[String],
    prefix: &str,
    version: Option<(u32, u32)>,
) -> Option<String> {
    let parse = |f: &String| -> Option<(u32, u32)> {
        let v = f.strip_prefix(prefix)?;
        let mut it = v.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
        Some((major, minor))
    };
    let mut ok: Vec<((u32, u32), &String)> =
        files.iter().filter_map(|f| Some((parse(f)?, f))).collect();
    if let Some((major, _)) = version {
        ok.retain(|(v, _)| v.0 == major);
    }
    if let Some(v) = version {
        if let Some((_, f)) = ok.iter().find(|(fv, _)| *fv == v) {
            return Some((*f).clone());
        }
    }
    ok.sort();
    ok.last().map(|(_, f)| (*f).clone())
}

/// The file a loaded symbol of cudarc's NVRTC comes from (`dladdr`), to check which NVRTC
/// cudarc actually opened.
fn loaded_file_of(symbol: &str) -> Option<PathBuf> {
    // SAFETY: NVRTC was loaded above, so culib() only returns cudarc's handle to it.
    let lib = guarded("culib", || unsafe { cudarc::nvrtc::sys::culib() }).ok()?;
    // SAFETY: only the address is used, never called.
    let sym = unsafe { lib.get::<*const std::ffi::c_void>(symbol.as_bytes()) }.ok()?;
    let addr = *sym;
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated path owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Loads a library found in `env_var` (a file or a folder), on the loader's path, or in the
/// usual CUDA folders, choosing among the files found the newest the driver supports. The
/// dependency named `<dep_prefix><version>` in the same folder is loaded first, globally,
/// because the main library opens it by soname at run time (nvrtc-builtins) or at load time
/// (cublasLt). Returns the file loaded, or `None` when the library was already on the
/// loader's path.
fn load_lib(
    env_var: &str,
    present: impl Fn() -> bool,
    wheel_dirs: &[&str],
    dep_prefix: &str,
    names: &[&str],
    what: &str,
    driver: Option<super::Version>,
) -> std::result::Result<Option<PathBuf>, String> {
    let present = || guarded("probe", &present) == Ok(true);
    let explicit = std::env::var_os(env_var).map(PathBuf::from);
    if explicit.is_none() && present() {
        return Ok(None);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(p) = &explicit {
        if p.is_file() {
            dirs.push(p.parent().unwrap_or(Path::new(".")).to_path_buf());
        } else {
            dirs.push(p.clone());
        }
    }
    if explicit.as_ref().is_none_or(|p| !p.is_file()) {
        dirs.extend(cuda_dirs());
        for sp in site_packages() {
            for w in wheel_dirs {
                dirs.push(sp.join("nvidia").join(w));
            }
        }
    }
    // Every candidate file, in search order; the explicit file alone when one is named.
    let mut files: Vec<String> = Vec::new();
    let mut tried = Vec::new();
    match &explicit {
        Some(p) if p.is_file() => files.push(p.display().to_string()),
        _ => {
            for dir in &dirs {
                let found: Vec<String> = names
                    .iter()
                    .map(|n| dir.join(n))
                    .filter(|p| p.is_file())
                    .map(|p| p.display().to_string())
                    .collect();
                if found.is_empty() {
                    tried.push(dir.display().to_string());
                }
                files.extend(found);
            }
        }
    }
    // Several names of one file (libnvrtc.so -> libnvrtc.so.13) count once.
    let mut seen = Vec::new();
    files.retain(|f| {
        let c = Path::new(f)
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from(f));
        let new = !seen.contains(&c);
        seen.push(c);
        new
    });
    let ordered = ordered_for_driver(&files, driver, what, env_var)?;
    for f in ordered {
        let file = PathBuf::from(&f);
        let dir = file.parent().unwrap_or(Path::new("."));
        let version = Path::new(&f)
            .canonicalize()
            .ok()
            .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
            .and_then(|n| {
                let (_, rest) = n.split_once(".so.")?;
                let mut it = rest.split('.');
                Some((
                    it.next()?.parse().ok()?,
                    it.next().and_then(|m| m.parse().ok()).unwrap_or(0),
                ))
            });
        let deps: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(dep) = pick_dep(&deps, dep_prefix, version) {
            let _ = preload(&dir.join(dep), true);
        }
        match preload(&file, true) {
            Ok(()) if present() || what == "cuBLAS" => return Ok(Some(file)),
            Ok(()) => tried.push(format!(
                "{} (loaded, but not under a name cudarc looks for)",
                file.display()
            )),
            Err(e) => tried.push(format!("{} ({e})", file.display())),
        }
    }
    if present() {
        return Ok(None);
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

/// Every folder searched for NVRTC and cuBLAS when they are not on the loader's path, in
/// order: the toolkit folders, then NVIDIA's pip wheels in each site-packages.
pub(crate) fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = cuda_dirs();
    for sp in site_packages() {
        for w in ["cuda_nvrtc/lib", "cublas/lib", "cu13/lib", "cu12/lib"] {
            dirs.push(sp.join("nvidia").join(w));
        }
    }
    dirs
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

#[cfg(test)]
mod tests {
    use super::{major_of, ordered_for_driver, pick_dep};
    use crate::cuda::Version;

    const R570: Option<Version> = Some(Version {
        major: 12,
        minor: 8,
    });
    const R580: Option<Version> = Some(Version {
        major: 13,
        minor: 0,
    });

    #[test]
    fn majors_come_from_the_file_name() {
        assert_eq!(major_of("libcublas.so.12"), Some(12));
        assert_eq!(major_of("libnvrtc.so.13.0.88"), Some(13));
        assert_eq!(major_of("libnvrtc.so"), None);
    }

    #[test]
    fn libraries_are_chosen_for_the_drivers_cuda_version() {
        let found = [
            "/venv/nvidia/cu13/lib/libcublas.so.13",
            "/venv/nvidia/cublas/lib/libcublas.so.12",
            "/usr/local/cuda/lib64/libcublas.so",
        ];
        // R570 (CUDA 12.8): the CUDA 13 wheel is skipped, the 12 one wins.
        let o = ordered_for_driver(&found, R570, "cuBLAS", "GPULAB_CUBLAS_PATH").unwrap();
        assert_eq!(o, vec![found[1], found[2]]);
        // R580 (CUDA 13.0): newest first.
        let o = ordered_for_driver(&found, R580, "cuBLAS", "GPULAB_CUBLAS_PATH").unwrap();
        assert_eq!(o, vec![found[0], found[1], found[2]]);
        // No driver (compiling only): search order kept.
        let o = ordered_for_driver(&found, None, "NVRTC", "GPULAB_NVRTC_PATH").unwrap();
        assert_eq!(o, found.to_vec());
    }

    #[test]
    fn only_too_new_libraries_give_an_error_naming_both_versions() {
        let e = ordered_for_driver(
            &["/venv/nvidia/cu13/lib/libcublas.so.13"],
            R570,
            "cuBLAS",
            "GPULAB_CUBLAS_PATH",
        )
        .unwrap_err();
        assert!(
            e.contains("cuBLAS 13") && e.contains("supports CUDA 12.8"),
            "{e}"
        );
        assert!(
            e.contains("nvidia-cublas-cu12") && e.contains("GPULAB_CUBLAS_PATH"),
            "{e}"
        );
        let e = ordered_for_driver(&["libnvrtc.so.13"], R570, "NVRTC", "GPULAB_NVRTC_PATH")
            .unwrap_err();
        assert!(
            e.contains("NVRTC 13")
                && e.contains("CUDA 12.8")
                && e.contains("nvidia-cuda-nvrtc-cu12"),
            "{e}"
        );
        // Nothing found at all is not this error (the caller reports where it looked).
        assert_eq!(
            ordered_for_driver::<&str>(&[], R570, "NVRTC", "X").unwrap(),
            Vec::<String>::new()
        );
        let e = super::check_major("NVRTC", 13, 0, R570.unwrap(), "GPULAB_NVRTC_PATH").unwrap_err();
        assert!(e.starts_with("NVRTC 13.0 needs a driver for CUDA 13 or newer, but this driver supports CUDA 12.8"), "{e}");
        assert!(super::check_major("NVRTC", 12, 4, R570.unwrap(), "X").is_ok());
    }

    #[test]
    fn nvrtc_builtins_are_found_by_pattern() {
        let dir: Vec<String> = [
            "libnvrtc.so.13",
            "libnvrtc-builtins.so.13.0",
            "libnvrtc-builtins.so.13.2",
            "libnvrtc-builtins.so.12.8",
            "libnvrtc-builtins.alt.so.13.0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let p = "libnvrtc-builtins.so.";
        assert_eq!(
            pick_dep(&dir, p, Some((13, 0))).as_deref(),
            Some("libnvrtc-builtins.so.13.0")
        );
        assert_eq!(
            pick_dep(&dir, p, Some((12, 8))).as_deref(),
            Some("libnvrtc-builtins.so.12.8")
        );
        // 13.1 is not there: the newest 13.x, never a 12.x.
        assert_eq!(
            pick_dep(&dir, p, Some((13, 1))).as_deref(),
            Some("libnvrtc-builtins.so.13.2")
        );
        assert_eq!(pick_dep(&dir, p, Some((11, 0))), None);
        assert_eq!(
            pick_dep(&dir, p, None).as_deref(),
            Some("libnvrtc-builtins.so.13.2")
        );
        // cuBLASLt next to cuBLAS.
        let lt = vec![
            "libcublasLt.so.12".to_string(),
            "libcublasLt.so.12.8.4.1".to_string(),
        ];
        assert!(pick_dep(&lt, "libcublasLt.so.", Some((12, 8)))
            .unwrap()
            .starts_with("libcublasLt.so.12"));
    }
}
