//! `%%cuda` cells: CUDA C++ written in a notebook cell of its own.
//!
//! The kernel turns a cell that starts with `%%cuda` into a Rust cell calling [`compile_cell`]
//! with the cell's text (its first line blanked, so NVRTC's line numbers are the cell's own).
//! The source is compiled at once, so a mistake shows in the cell that made it, and kept in a
//! session registry; a later Rust cell takes a kernel by name with [`cell_kernel`]. The prelude
//! is one dylib per session, so the registry lives as long as the session.

use super::{loader, nvrtc, Function, Module};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::CString;
use std::fmt;
use std::sync::Mutex;

/// What NVRTC calls a `%%cuda` cell in its messages (`cell(3): error: …`).
pub const CELL_FILE: &str = "cell";

/// The architecture a cell is compiled for when there is no GPU: PTX would say whether it
/// compiles, a CUBIN also says how many registers each kernel needs (on an H100-class GPU).
const REFERENCE_ARCH: i32 = 90;

struct Kept {
    source: String,
    kernels: Vec<String>,
}

static CELLS: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// The outcome of compiling a `%%cuda` cell.
#[derive(Clone, PartialEq)]
pub struct CellReport {
    /// `sm_XY` (a CUBIN) or `compute_XY` (PTX).
    pub arch: String,
    /// Whether this is the session's GPU (false: compiled for a reference GPU, no GPU here).
    pub for_this_gpu: bool,
    /// The `extern "C" __global__` kernels, callable by name through [`cell_kernel`].
    pub kernels: Vec<String>,
    /// Registers per thread for each kernel, when NVRTC compiled a CUBIN.
    pub registers: Vec<(String, u32)>,
    /// Bytes spilled to local memory (stores) per kernel, when known.
    pub spills: Vec<(String, u32)>,
    /// NVRTC's warnings, with `cell(N)` written as `cell line N`.
    pub warnings: String,
}

impl fmt::Display for CellReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = if self.for_this_gpu {
            "for this GPU"
        } else {
            "as a check: there is no CUDA device here"
        };
        write!(f, "compiled for {} ({target})", self.arch)?;
        if self.kernels.is_empty() {
            write!(f, "; no extern \"C\" __global__ kernels")?;
        }
        writeln!(f)?;
        for k in &self.kernels {
            write!(f, "  {k}")?;
            if let Some((_, r)) = self.registers.iter().find(|(n, _)| n == k) {
                write!(f, ": {r} registers per thread")?;
            }
            if let Some((_, s)) = self.spills.iter().find(|(n, s)| n == k && *s > 0) {
                write!(f, ", {s} bytes spilled")?;
            }
            writeln!(f)?;
        }
        if !self.kernels.is_empty() {
            writeln!(
                f,
                "Use one from Rust: let f = cuda::cell_kernel(\"{}\")?;",
                self.kernels[0]
            )?;
        }
        if !self.warnings.trim().is_empty() {
            writeln!(f, "{}", self.warnings.trim_end())?;
        }
        Ok(())
    }
}

impl fmt::Debug for CellReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Compiles a `%%cuda` cell's source for the session's GPU (or, without one, for a reference
/// GPU), keeps it for [`cell_kernel`], and prints what it found. NVRTC's errors come back as
/// [`Error::Compile`] with the cell's line numbers.
pub fn compile_cell(source: &str) -> Result<CellReport> {
    let (arch, for_this_gpu) = target_arch()?;
    let (log, is_cubin) = compile(source, &arch)?;
    let kernels = kernel_names(source);
    let (registers, spills) = if is_cubin {
        resource_usage(&log)
    } else {
        (Vec::new(), Vec::new())
    };
    let warnings = log
        .lines()
        .filter(|l| {
            !l.starts_with("ptxas")
                && !l.trim().is_empty()
                && !l.trim_start().starts_with(|c: char| c.is_ascii_digit())
        })
        .collect::<Vec<_>>()
        .join("\n");
    let report = CellReport {
        arch,
        for_this_gpu,
        kernels: kernels.clone(),
        registers,
        spills,
        warnings: cell_lines(&warnings),
    };
    let mut cells = CELLS.lock().unwrap_or_else(|p| p.into_inner());
    cells.push(Kept {
        source: source.to_string(),
        kernels,
    });
    drop(cells);
    print!("{report}");
    Ok(report)
}

/// A kernel from the latest `%%cuda` cell that declares it, compiled for `cuda:0`. Without a
/// GPU this is the usual error saying why there is no device.
pub fn cell_kernel(name: &str) -> Result<Function> {
    cell_kernel_on(Device::Cuda(0), name)
}

/// [`cell_kernel`] for another device.
pub fn cell_kernel_on(device: impl Into<Device>, name: &str) -> Result<Function> {
    let source = {
        let cells = CELLS.lock().unwrap_or_else(|p| p.into_inner());
        match cells
            .iter()
            .rev()
            .find(|c| c.kernels.iter().any(|k| k == name))
        {
            Some(c) => c.source.clone(),
            None => {
                let known: Vec<&str> = cells
                    .iter()
                    .flat_map(|c| c.kernels.iter().map(String::as_str))
                    .collect();
                return Err(Error::Invalid(if known.is_empty() {
                    format!("no %%cuda cell has been run, so there is no kernel {name:?}")
                } else {
                    format!(
                        "no %%cuda cell declares an extern \"C\" kernel {name:?} (there are: {})",
                        known.join(", ")
                    )
                }));
            }
        }
    };
    Module::from_source(device, &source, &format!("{CELL_FILE}.cu"))?.function(name)
}

/// The kernels of every `%%cuda` cell run so far, latest last.
pub fn cell_kernels() -> Vec<String> {
    CELLS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .flat_map(|c| c.kernels.clone())
        .collect()
}

fn target_arch() -> Result<(String, bool)> {
    if super::is_available() {
        let p = super::get_device_properties(0)?;
        return Ok((nvrtc::arch_for((p.major as i32, p.minor as i32))?, true));
    }
    let archs = nvrtc::supported_archs()?;
    let best = if archs.contains(&REFERENCE_ARCH) {
        REFERENCE_ARCH
    } else {
        archs.iter().copied().max().unwrap_or(REFERENCE_ARCH)
    };
    Ok((format!("sm_{best}"), false))
}

/// Compiles with ptxas's verbose report on (for a CUBIN); returns NVRTC's log.
fn compile(source: &str, arch: &str) -> Result<(String, bool)> {
    loader::nvrtc()?;
    let csrc =
        CString::new(source).map_err(|_| Error::Invalid("the cell contains a NUL byte".into()))?;
    let cname = CString::new(CELL_FILE).expect("no NUL");
    let is_cubin = arch.starts_with("sm_");
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
    ];
    if is_cubin {
        opts.push("--ptxas-options=-v".to_string());
    }
    let op = |what: &str, e: result::NvrtcError| Error::Cuda {
        op: format!("{what} (%%cuda cell)"),
        detail: format!("{e:?}"),
    };
    let prog =
        result::create_program(&csrc, Some(&cname)).map_err(|e| op("nvrtcCreateProgram", e))?;
    struct Prog(sys::nvrtcProgram);
    impl Drop for Prog {
        fn drop(&mut self) {
            // SAFETY: the program was created above and is destroyed once, here.
            let _ = unsafe { result::destroy_program(self.0) };
        }
    }
    let prog = Prog(prog);
    // SAFETY: a live program; the options outlive the call.
    let compiled = unsafe { result::compile_program(prog.0, &opts) };
    // SAFETY: the program is live; the log is copied out before it is destroyed.
    let log = unsafe { result::get_program_log(prog.0) }
        .map(|raw| {
            String::from_utf8_lossy(
                &raw.iter()
                    .map(|&c| c as u8)
                    .take_while(|&b| b != 0)
                    .collect::<Vec<u8>>(),
            )
            .into_owned()
        })
        .unwrap_or_default();
    if let Err(e) = compiled {
        let log = if log.trim().is_empty() {
            format!("{e:?} (NVRTC gave no log)")
        } else {
            cell_lines(&log)
        };
        return Err(Error::Compile {
            name: "the %%cuda cell".into(),
            arch: arch.to_string(),
            log,
        });
    }
    Ok((log, is_cubin))
}

/// `cell(3): error: …` becomes `cell line 3: error: …`.
pub fn cell_lines(log: &str) -> String {
    let prefix = format!("{CELL_FILE}(");
    log.lines()
        .map(
            |l| match l.strip_prefix(&prefix).and_then(|r| r.split_once("): ")) {
                Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => {
                    format!("cell line {n}: {rest}")
                }
                _ => l.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// A figure per kernel: (kernel name, value).
pub type PerKernel = Vec<(String, u32)>;

/// Registers and spill stores per kernel from ptxas's `-v` report.
pub fn resource_usage(log: &str) -> (PerKernel, PerKernel) {
    let (mut regs, mut spills) = (Vec::new(), Vec::new());
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(rest.trim().to_string());
        }
        let Some(name) = &current else { continue };
        if let Some(rest) = line.split("Used ").nth(1) {
            if let Some(n) = rest
                .split(" register")
                .next()
                .and_then(|n| n.trim().parse().ok())
            {
                regs.retain(|(k, _): &(String, u32)| k != name);
                regs.push((name.clone(), n));
            }
        }
        if let Some(before) = line
            .split(" bytes spill stores")
            .next()
            .filter(|_| line.contains("bytes spill stores"))
        {
            if let Some(n) = before
                .rsplit([' ', ','])
                .next()
                .and_then(|n| n.trim().parse().ok())
            {
                spills.retain(|(k, _): &(String, u32)| k != name);
                spills.push((name.clone(), n));
            }
        }
    }
    (regs, spills)
}

/// Names of the `extern "C" __global__` functions in `src` (comments are not parsed out; a
/// name that is not really a kernel fails clearly when it is looked up).
pub fn kernel_names(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_extern_block = 0usize;
    let mut depth = 0usize;
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &src[i..];
        if let Some(after) = rest.strip_prefix("extern \"C\"") {
            if after.trim_start().starts_with('{') {
                in_extern_block = depth + 1;
            }
        }
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                if in_extern_block == depth {
                    in_extern_block = 0;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        if rest.starts_with("__global__") {
            let before = &src[src[..i].rfind([';', '}', '{']).map(|p| p + 1).unwrap_or(0)..i];
            let extern_c = before.contains("extern \"C\"") || in_extern_block > 0;
            if let Some(paren) = rest.find('(') {
                let name = rest[..paren]
                    .trim_end()
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("");
                if extern_c && !name.is_empty() && !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
        i += rest.chars().next().map(char::len_utf8).unwrap_or(1);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_extern_c_kernels() {
        let src = "extern \"C\" __global__ void vadd(const float* a, float* b, int n) { }\n\
                   __global__ void mangled(int* x) {}\n\
                   extern \"C\" {\n__global__ void scale(float* x, float s) { if (1) { } }\n}\n\
                   __device__ float helper(float x) { return x; }";
        assert_eq!(kernel_names(src), vec!["vadd", "scale"]);
    }

    #[test]
    fn reads_ptxas_resource_usage() {
        let log = "ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'vadd' for 'sm_90'\n\
                   ptxas info    : Function properties for vadd\n    \
                   0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
                   ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0]\n";
        let (regs, spills) = resource_usage(log);
        assert_eq!(regs, vec![("vadd".to_string(), 8)]);
        assert_eq!(spills, vec![("vadd".to_string(), 4)]);
    }

    #[test]
    fn names_the_cells_lines() {
        assert_eq!(
            cell_lines("cell(3): error: identifier \"q\" is undefined"),
            "cell line 3: error: identifier \"q\" is undefined"
        );
        assert_eq!(cell_lines("1 error detected"), "1 error detected");
    }
}
