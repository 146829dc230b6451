//! Embeds the prelude crate, kernels-cu and the workspace lock file into the kernel binary, so
//! an installed kernel keeps working after the checkout is moved or deleted.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn collect(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let dir = root.join(rel);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let rel = rel.join(&name);
        if e.path().is_dir() {
            collect(root, &rel, out);
        } else {
            out.push(rel);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut files = Vec::new();
    collect(&root, Path::new("prelude/src"), &mut files);
    collect(&root, Path::new("kernels-cu"), &mut files);
    files.push("prelude/Cargo.toml".into());
    files.push("Cargo.lock".into());
    // FNV-1a over names and contents: a stable id for this exact source set.
    let mut hash: u64 = 0xcbf29ce484222325;
    let mut code = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    for rel in &files {
        let abs = root.join(rel);
        let bytes =
            std::fs::read(&abs).unwrap_or_else(|e| panic!("reading {}: {e}", abs.display()));
        for b in rel.to_string_lossy().bytes().chain(bytes.iter().copied()) {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x100000001b3);
        }
        writeln!(
            code,
            "    ({:?}, include_bytes!({:?})),",
            rel.to_string_lossy(),
            abs.to_string_lossy()
        )
        .unwrap();
    }
    code.push_str("];\n");
    // How the prelude is built (its profile section, see src/startup.rs) is part of what a
    // prebuilt prelude is: hashed, not embedded (the kernel includes it itself).
    let profile = Path::new("kernel/src/prelude_profile.toml");
    let bytes = std::fs::read(root.join(profile)).expect("reading kernel/src/prelude_profile.toml");
    for b in profile.to_string_lossy().bytes().chain(bytes) {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x100000001b3);
    }
    writeln!(code, "pub const HASH: &str = \"{hash:016x}\";").unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded.rs");
    std::fs::write(out, code).unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=GPULAB_RUSTC_VERSION={version}");
    for dir in [
        "prelude/src",
        "prelude/Cargo.toml",
        "kernels-cu",
        "Cargo.lock",
        "kernel/src/prelude_profile.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
}
