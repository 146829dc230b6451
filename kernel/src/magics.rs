//! IPython-style cell magics on top of Rust cells: `!cmd`, `%time`/`%%time`, `?name`/`name?`.

use crate::interp::Outputs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

#[derive(Debug, PartialEq)]
pub enum Cell<'a> {
    /// Every non-blank line starts with `!`.
    Shell(Vec<&'a str>),
    /// `?name`, `name?` or `:doc name`.
    Help(&'a str),
    /// `%%time` on the first line or a single `%time` line: run and report compile and run time.
    Time(&'a str),
    /// `%%cuda` on the first line: CUDA C++, compiled by NVRTC (prelude/src/cuda/cells.rs).
    Cuda(&'a str),
    Rust(&'a str),
}

pub fn classify(code: &str) -> Cell<'_> {
    let trimmed = code.trim();
    let lines: Vec<&str> = trimmed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if !lines.is_empty() && lines.iter().all(|l| l.starts_with('!')) {
        return Cell::Shell(lines.iter().map(|l| l[1..].trim()).collect());
    }
    if let Some(rest) = code.trim_start().strip_prefix("%%cuda") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return Cell::Cuda(code);
        }
    }
    if let Some(rest) = trimmed.strip_prefix("%%time") {
        return Cell::Time(
            rest.trim_start_matches([' ', '\t'])
                .trim_start_matches('\n'),
        );
    }
    if let Some(rest) = trimmed.strip_prefix("%time ") {
        return Cell::Time(rest.trim());
    }
    if lines.len() == 1 {
        let l = lines[0];
        if let Some(name) = l.strip_prefix(":doc ") {
            return Cell::Help(name.trim());
        }
        let name = l
            .strip_prefix('?')
            .or_else(|| l.strip_suffix('?'))
            .map(str::trim);
        if let Some(name) = name {
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                return Cell::Help(name);
            }
        }
    }
    Cell::Rust(code)
}

/// The Rust cell that compiles a `%%cuda` cell: the source with its `%%cuda` line blanked, so
/// NVRTC's line numbers are the cell's own, in a raw string no line of it can end.
pub fn cuda_cell_code(cell: &str) -> String {
    let start = cell.len() - cell.trim_start().len();
    let first_end = cell[start..]
        .find('\n')
        .map(|i| start + i)
        .unwrap_or(cell.len());
    let source = format!(
        "{}{}",
        "\n".repeat(cell[..start].matches('\n').count()),
        &cell[first_end..]
    );
    let mut hashes = 1;
    while source.contains(&format!("\"{}", "#".repeat(hashes))) {
        hashes += 1;
    }
    let h = "#".repeat(hashes);
    format!("gpulab::cuda::compile_cell(r{h}\"{source}\"{h})?;")
}

/// Runs one shell command with its output streamed as it comes. The process gets its own
/// process group, recorded in `pgid`, so an interrupt can end it and everything it started.
pub fn run_shell(cmd: &str, outputs: &dyn Outputs, pgid: &AtomicI32) -> std::io::Result<i32> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    pgid.store(child.id() as i32, Ordering::SeqCst);
    let err = child.stderr.take().unwrap();
    let out = child.stdout.take().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| pump(err, "stderr", outputs));
        pump(out, "stdout", outputs);
    });
    let status = child.wait();
    pgid.store(0, Ordering::SeqCst);
    Ok(status?.code().unwrap_or(-1))
}

fn pump(mut from: impl Read, name: &str, outputs: &dyn Outputs) {
    let mut buf = [0u8; 8192];
    let mut pending: Vec<u8> = Vec::new();
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        pending.extend_from_slice(&buf[..n]);
        // Send whole UTF-8 sequences only.
        let valid = match std::str::from_utf8(&pending) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        if valid > 0 {
            outputs.stream(name, &String::from_utf8_lossy(&pending[..valid]));
            pending.drain(..valid);
        }
    }
    if !pending.is_empty() {
        outputs.stream(name, &String::from_utf8_lossy(&pending));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert_eq!(classify("!nvidia-smi"), Cell::Shell(vec!["nvidia-smi"]));
        assert_eq!(
            classify("!lspci | grep VGA\n!echo hi"),
            Cell::Shell(vec!["lspci | grep VGA", "echo hi"])
        );
        assert_eq!(classify("%%time\nlet x = 1;"), Cell::Time("let x = 1;"));
        assert_eq!(classify("%time 1 + 1"), Cell::Time("1 + 1"));
        assert_eq!(classify("?Vec"), Cell::Help("Vec"));
        assert_eq!(classify("Tensor?"), Cell::Help("Tensor"));
        assert_eq!(classify(":doc std::vec::Vec"), Cell::Help("std::vec::Vec"));
        assert_eq!(classify("let x = a != b;"), Cell::Rust("let x = a != b;"));
        assert_eq!(classify("x?"), Cell::Help("x"));
        assert_eq!(classify("f()?;"), Cell::Rust("f()?;"));
        assert_eq!(
            classify("%%cuda\n__global__ void k() {}"),
            Cell::Cuda("%%cuda\n__global__ void k() {}")
        );
        assert_eq!(classify("%%cudax"), Cell::Rust("%%cudax"));
    }

    #[test]
    fn cuda_cells_keep_their_line_numbers() {
        let code = cuda_cell_code("%%cuda\nline2\nconst char* s = R\"#(x)#\";");
        assert_eq!(
            code,
            "gpulab::cuda::compile_cell(r##\"\nline2\nconst char* s = R\"#(x)#\";\"##)?;"
        );
    }
}
