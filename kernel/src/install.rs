//! `gpulab-kernel install` / `uninstall`: writes the kernelspec and copies this binary beside it,
//! so the kernel keeps working when the checkout moves. Flags follow `ipykernel install`.

use anyhow::{bail, Context, Result};
use serde_json::json;
use std::path::PathBuf;

pub const NAME: &str = "gpulab";
pub const DISPLAY_NAME: &str = "Rust + GPU (gpulab)";

const LOGOS: &[(&str, &[u8])] = &[
    ("logo-32x32.png", include_bytes!("../assets/logo-32x32.png")),
    ("logo-64x64.png", include_bytes!("../assets/logo-64x64.png")),
    ("logo-svg.svg", include_bytes!("../assets/logo-svg.svg")),
];

/// Where Jupyter looks for kernelspecs for each of ipykernel's install locations.
fn kernels_dir(args: &[String]) -> Result<PathBuf> {
    let mut it = args.iter();
    let mut dir = None;
    while let Some(a) = it.next() {
        let chosen = match a.as_str() {
            "--user" => user_data_dir(),
            "--sys-prefix" => sys_prefix()?.join("share/jupyter"),
            "--prefix" => PathBuf::from(it.next().context("--prefix needs a directory")?)
                .join("share/jupyter"),
            p if p.starts_with("--prefix=") => {
                PathBuf::from(&p["--prefix=".len()..]).join("share/jupyter")
            }
            other => {
                bail!("unknown option {other:?} (expected --user, --sys-prefix or --prefix DIR)")
            }
        };
        if dir.replace(chosen).is_some() {
            bail!("give one of --user, --sys-prefix or --prefix");
        }
    }
    Ok(dir.unwrap_or_else(user_data_dir).join("kernels").join(NAME))
}

fn user_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("JUPYTER_DATA_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp".into());
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".local/share"))
        .join("jupyter")
}

/// The active Python environment's prefix: a virtualenv or conda env if one is active, else the
/// prefix of the `python3` on PATH.
fn sys_prefix() -> Result<PathBuf> {
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(p) = std::env::var_os(var) {
            return Ok(PathBuf::from(p));
        }
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .context("running python3 to find sys.prefix")?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

type EnvEntries = Vec<(&'static str, String)>;

/// `--gpu-memory-fraction F` / `--gpu-memory-limit SIZE`: the per-kernel GPU memory cap a
/// teacher sets for every student (prelude/src/cuda/memcap.rs reads and checks the values);
/// returns the other arguments and the env entries.
fn gpu_memory_flags(args: &[String]) -> Result<(Vec<String>, EnvEntries)> {
    let (mut rest, mut env) = (Vec::new(), Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let var = match a.as_str() {
            "--gpu-memory-fraction" => "GPULAB_GPU_MEMORY_FRACTION",
            "--gpu-memory-limit" => "GPULAB_GPU_MEMORY_LIMIT",
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        let v = it.next().with_context(|| format!("{a} needs a value"))?;
        if var.ends_with("FRACTION") && !matches!(v.parse::<f64>(), Ok(f) if f > 0.0 && f <= 1.0) {
            bail!("{a} must be a fraction in (0, 1], such as 0.1; got {v:?}");
        }
        if var.ends_with("LIMIT") && !v.starts_with(|c: char| c.is_ascii_digit()) {
            bail!("{a} must be a memory size such as 4GiB or 512MiB; got {v:?}");
        }
        env.push((var, v.clone()));
    }
    Ok((rest, env))
}

pub fn install(args: &[String]) -> Result<()> {
    let (args, gpu_env) = gpu_memory_flags(args)?;
    let dir = kernels_dir(&args)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let exe = std::env::current_exe()?;
    let target = dir.join("gpulab-kernel");
    // Copy to a temporary name and rename: a running kernel keeps its old binary open.
    let tmp = dir.join(".gpulab-kernel.new");
    std::fs::copy(&exe, &tmp)
        .with_context(|| format!("copying {} to {}", exe.display(), tmp.display()))?;
    std::fs::rename(&tmp, &target)?;
    // Jupyter started from a desktop launcher may not have ~/.cargo/bin on PATH; the kernel
    // adds the folder of the cargo found now when it cannot find one itself.
    let mut env = serde_json::Map::new();
    if let Some(dir) = find_on_path("cargo").and_then(|c| c.parent().map(|d| d.to_path_buf())) {
        env.insert("GPULAB_TOOLCHAIN_BIN".into(), json!(dir.to_string_lossy()));
    }
    // The Python environment holding NVIDIA's pip wheels (NVRTC, cuBLAS): the prelude's loader
    // searches it, and Jupyter may start the kernel without that environment activated.
    if let Some(venv) = std::env::var_os("GPULAB_VENV").filter(|v| !v.is_empty()) {
        env.insert("GPULAB_VENV".into(), json!(venv.to_string_lossy()));
    }
    for (var, value) in gpu_env {
        env.insert(var.into(), json!(value));
    }
    let spec = json!({
        "argv": [target.to_string_lossy(), "--connection-file", "{connection_file}"],
        "display_name": DISPLAY_NAME,
        "language": "rust",
        "interrupt_mode": "message",
        "env": env,
        "metadata": {"debugger": false},
    });
    std::fs::write(
        dir.join("kernel.json"),
        serde_json::to_string_pretty(&spec)?,
    )?;
    for (name, bytes) in LOGOS {
        std::fs::write(dir.join(name), bytes)?;
    }
    println!(
        "Installed kernelspec {NAME} ({DISPLAY_NAME}) in {}",
        dir.display()
    );
    Ok(())
}

pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Puts the toolchain recorded at install time on PATH when cargo is not already there.
pub fn ensure_toolchain_on_path() {
    if find_on_path("cargo").is_some() {
        return;
    }
    let Some(dir) = std::env::var_os("GPULAB_TOOLCHAIN_BIN") else {
        return;
    };
    let mut paths = vec![PathBuf::from(dir)];
    if let Some(old) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    if let Ok(joined) = std::env::join_paths(paths) {
        std::env::set_var("PATH", joined);
    }
}

pub fn uninstall(args: &[String]) -> Result<()> {
    let dir = kernels_dir(args)?;
    if !dir.exists() {
        bail!("no gpulab kernelspec at {}", dir.display());
    }
    std::fs::remove_dir_all(&dir)?;
    println!("Removed kernelspec {NAME} from {}", dir.display());
    Ok(())
}
