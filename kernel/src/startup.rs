//! What a session runs before the user's first cell, and how its output is kept aside.

use crate::interp::{Bundle, Outputs};
use serde_json::Value;
use std::sync::Mutex;

/// The prelude's `[profile.dev.package.gpulab]` section, appended to every session's manifest
/// (its text is hashed with the prelude's sources by build.rs, so a prebuilt prelude is always
/// one built with it).
pub const PRELUDE_PROFILE: &str = include_str!("prelude_profile.toml");

/// Installed in the child process before anything else. It reports a panic through the display
/// channel so the kernel can end the cell with an error (evcxr itself catches the unwind and
/// would call the cell a success).
pub const PANIC_HOOK: &str = r#"std::panic::set_hook(Box::new(|info| {
    fn esc(s: &str) -> String {
        let mut o = String::new();
        for c in s.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
                c => o.push(c),
            }
        }
        o
    }
    let p = info.payload();
    let msg = p.downcast_ref::<&str>().map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "Box<dyn Any>".to_string());
    let loc = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())).unwrap_or_default();
    println!("\x1egpulab:{{\"op\":\"panic\",\"message\":\"{}\",\"location\":\"{}\"}}", esc(&msg), esc(&loc));
}));"#;

/// One line of information when there is no GPU, shown after the first cell that succeeds.
/// The reason (often a list of library paths) stays behind `cuda::unavailable_reason()`.
pub const GPU_NOTICE: &str = r#"if gpulab::cuda::unavailable_reason().is_some() {
    println!("No CUDA device here: tensors and kernels run on the CPU (cuda::unavailable_reason() and nvidia_smi() say why).");
}"#;

/// evcxr wraps cells so that `?` works only after a first cell has failed for want of it, and
/// on that first failure it also gives up the cell's rich display (an image shows as text).
/// A `?` in the start-up cell turns the wrapping on before the user's first cell.
pub const ALLOW_QUESTION_MARK: &str = r#""0".parse::<u8>()?;"#;

/// Collects what a cell prints, for start-up cells whose output is not shown as it comes.
#[derive(Default)]
pub struct Capture(pub Mutex<String>);

impl Outputs for Capture {
    fn stream(&self, _name: &str, text: &str) {
        self.0.lock().unwrap().push_str(text);
    }
    fn display(&self, _data: Bundle, _metadata: Value, _id: Option<String>, _update: bool) {}
    fn clear_output(&self, _wait: bool) {}
    fn input(&self, _prompt: &str, _password: bool) -> Option<String> {
        None
    }
}

/// Cells are dylibs linked against the toolchain's `libstd-*.so` and the prelude's dylib. The
/// runpath cargo writes is relative to the deps folder, so it misses when evcxr loads a cell from
/// the folder above; the child process finds both through LD_LIBRARY_PATH instead. Returns that
/// variable's value for the child's command: the kernel's own environment is not changed, since
/// this runs while other threads are reading it.
pub fn rust_libs_loader_path(slot: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("rustc")
        .args(["--print", "target-libdir"])
        .output()
        .ok()?;
    let std_dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if std_dir.is_empty() {
        return None;
    }
    // target-libdir is <sysroot>/lib/rustlib/<host triple>/lib.
    let triple = std::path::Path::new(&std_dir)
        .parent()
        .and_then(|p| p.file_name())
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_default();
    let deps = slot.join("target").join(&triple).join("debug").join("deps");
    // glibc remembers a search directory that did not exist at its first lookup and never looks
    // there again, so the folder must exist before the child process loads anything.
    let _ = std::fs::create_dir_all(&deps);
    let mut path = format!("{}:{std_dir}", deps.display());
    if let Ok(old) = std::env::var("LD_LIBRARY_PATH") {
        if !old.is_empty() {
            path = format!("{path}:{old}");
        }
    }
    Some(path)
}
