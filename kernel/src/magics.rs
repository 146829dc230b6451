//! IPython-style cell magics on top of Rust cells: `!cmd`, `%time`/`%%time`,
//! `%timeit`/`%%timeit`, `?name`/`name?`.

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
    /// `%%timeit` on the first line (its body the rest of the cell) or a one-line `%timeit
    /// STATEMENT`: run it many times through the prelude's `timeit` (prelude/src/timeit.rs).
    Timeit(Timeit<'a>),
    /// A `%timeit` that cannot run, and why (shown as the cell's error).
    BadMagic(String),
    /// `%%cuda` on the first line: CUDA C++, compiled by NVRTC (prelude/src/cuda/cells.rs).
    Cuda(&'a str),
    Rust(&'a str),
}

/// A `%timeit` or `%%timeit` cell: IPython's `-n` (loops per run) and `-r` (runs), and the
/// code to time, which starts on the magic's own line for `%timeit` and on the next for
/// `%%timeit`.
#[derive(Debug, PartialEq)]
pub struct Timeit<'a> {
    pub loops: Option<usize>,
    pub runs: Option<usize>,
    pub code: &'a str,
    pub cell_magic: bool,
}

/// `rest`, what follows `%timeit`/`%%timeit` on its line: `-n N` and `-r N` options, then the
/// code (for `%timeit`). Err names an option it cannot read.
fn timeit_options(rest: &str) -> Result<(Option<usize>, Option<usize>, &str), String> {
    let (mut loops, mut runs) = (None, None);
    let mut rest = rest.trim_start();
    while let Some(opt) = ["-n", "-r"].into_iter().find(|o| {
        rest.strip_prefix(o)
            .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || c.is_ascii_digit()))
    }) {
        let after = rest[2..].trim_start();
        let end = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let value: usize = after[..end].parse().map_err(|_| {
            format!(
                "{opt} needs a whole number (got {:?})",
                after.split_whitespace().next().unwrap_or("")
            )
        })?;
        if value == 0 {
            return Err(format!("{opt} must be at least 1"));
        }
        *(if opt == "-n" { &mut loops } else { &mut runs }) = Some(value);
        rest = after[end..].trim_start();
    }
    Ok((loops, runs, rest))
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
    for (magic, cell_magic) in [("%%timeit", true), ("%timeit", false)] {
        let Some(rest) = trimmed.strip_prefix(magic) else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
            continue;
        }
        let line_end = rest.find('\n').unwrap_or(rest.len());
        let (line, body) = (&rest[..line_end], &rest[line_end..]);
        return match timeit_options(line) {
            Err(why) => Cell::BadMagic(format!("{magic}: {why}")),
            Ok((loops, runs, code)) if cell_magic => {
                if !code.trim().is_empty() {
                    return Cell::BadMagic(format!(
                        "%%timeit: the code goes on the lines below it, not on its line (got {:?}); \
                         for one line, use %timeit",
                        code.trim()
                    ));
                }
                let code = body.strip_prefix('\n').unwrap_or(body);
                if code.trim().is_empty() {
                    return Cell::BadMagic(
                        "%%timeit: nothing to time (the code goes on the lines below it)".into(),
                    );
                }
                Cell::Timeit(Timeit {
                    loops,
                    runs,
                    code,
                    cell_magic,
                })
            }
            Ok((loops, runs, code)) => {
                if !body.trim().is_empty() {
                    return Cell::BadMagic(
                        "%timeit times the rest of its own line; for a cell of several lines, \
                         start it with %%timeit"
                            .into(),
                    );
                }
                if code.trim().is_empty() {
                    return Cell::BadMagic(
                        "%timeit: nothing to time (e.g. %timeit a.matmul(&b))".into(),
                    );
                }
                Cell::Timeit(Timeit {
                    loops,
                    runs,
                    code,
                    cell_magic,
                })
            }
        };
    }
    if let Some(rest) = trimmed
        .strip_prefix("%%time")
        .filter(|r| r.is_empty() || r.starts_with(char::is_whitespace))
    {
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

/// The Rust cell that runs a `%timeit`/`%%timeit` cell (`cell`, the whole cell, holds `t`):
/// the code in a closure given to the prelude's `timeit_cell`, which prints IPython's report.
/// The code keeps its line numbers: the wrapper's opening takes the magic's line (and a
/// `%timeit`'s code stays on it), so a compile error points at the line the student wrote.
/// As in IPython, what the code defines is not kept after the cell. (No leading `::`: evcxr
/// takes a line starting with `:` for one of its commands.)
pub fn timeit_cell_code(cell: &str, t: &Timeit) -> String {
    let opt = |v: Option<usize>| v.map_or("None".to_string(), |n| format!("Some({n})"));
    let open = format!(
        "gpulab::timeit::timeit_cell({}, {}, || -> ::std::result::Result<(), \
         ::std::boxed::Box<dyn ::std::error::Error + Send + Sync>> {{ \
         let __gpulab_value = ::gpulab::timeit::Value({{",
        opt(t.loops),
        opt(t.runs)
    );
    // The code's value: an Err fails the run (the prelude's `Value`), any other is dropped.
    let close = "}); { #[allow(unused_imports)] use ::gpulab::timeit::{ValueIsOther as _, \
                 ValueIsResult as _}; (&&__gpulab_value).outcome()?; } \
                 ::std::hint::black_box(&__gpulab_value); ::std::result::Result::Ok(()) })?;";
    // Blank lines above the magic stay, so the lines below keep their numbers.
    let above = "\n".repeat(line_of(cell, t.code) - usize::from(t.cell_magic));
    if t.cell_magic {
        format!("{above}{open}\n{}\n{close}", t.code)
    } else {
        format!("{above}{open} {} {close}", t.code)
    }
}

/// The 0-based line of `cell` on which `part` (a slice of it) starts.
fn line_of(cell: &str, part: &str) -> usize {
    let start = (part.as_ptr() as usize).wrapping_sub(cell.as_ptr() as usize);
    cell.get(..start).map_or(0, |s| s.matches('\n').count())
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
    fn classifies_timeit() {
        let t = |loops, runs, code, cell_magic| {
            Cell::Timeit(Timeit {
                loops,
                runs,
                code,
                cell_magic,
            })
        };
        assert_eq!(
            classify("%%timeit\nlet x = 1;\nx + 1"),
            t(None, None, "let x = 1;\nx + 1", true)
        );
        assert_eq!(
            classify("%timeit -n 10 -r 3 a.sum()"),
            t(Some(10), Some(3), "a.sum()", false)
        );
        assert_eq!(
            classify("%%timeit -r2 -n 5\nx"),
            t(Some(5), Some(2), "x", true)
        );
        assert_eq!(classify("%timeit -a"), t(None, None, "-a", false));
        // `%%time` and `%time` are not taken for `%%timeit` and `%timeit`, nor the other way.
        assert_eq!(classify("%%time\nx"), Cell::Time("x"));
        assert_eq!(classify("%%timex\nx"), Cell::Rust("%%timex\nx"));
        for (cell, says) in [
            ("%timeit", "nothing to time"),
            ("%%timeit", "nothing to time"),
            ("%timeit a\nb", "start it with %%timeit"),
            ("%%timeit a", "lines below it"),
            ("%timeit -n x a", "-n needs a whole number"),
            ("%timeit -r 0 a", "-r must be at least 1"),
        ] {
            match classify(cell) {
                Cell::BadMagic(why) => assert!(why.contains(says), "{cell:?}: {why}"),
                other => panic!("{cell:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn timeit_cells_keep_their_line_numbers() {
        for cell in [
            "\n%%timeit -n 3\nlet a = 1;\na + 1",
            "\n\n%timeit -r 2 f(1)?",
        ] {
            let Cell::Timeit(t) = classify(cell) else {
                panic!("{cell:?}")
            };
            let code = timeit_cell_code(cell, &t);
            let lines: Vec<&str> = code.lines().collect();
            for (i, line) in cell
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.starts_with('%'))
            {
                assert!(lines[i].contains(line.trim()), "line {i} of {code:?}");
            }
            let magic = cell.lines().position(|l| l.starts_with('%')).unwrap();
            assert!(lines[magic].contains("timeit_cell("), "{code:?}");
            if !t.cell_magic {
                assert!(lines[magic].contains(t.code), "{code:?}");
            }
            assert!(code.contains(&format!(
                "timeit_cell({}, {},",
                t.loops.map_or("None".into(), |n| format!("Some({n})")),
                t.runs.map_or("None".into(), |n| format!("Some({n})"))
            )));
        }
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
