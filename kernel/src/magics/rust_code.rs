//! The Rust a magic runs in the cell process: `%timeit`'s wrapper around the student's code,
//! a `%%cuda` cell handed to NVRTC, `%env`'s reads and writes of the environment. Line
//! numbers are kept, so errors point at the line the student wrote.

use super::{Env, Timeit};

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
    let close = "}); { #[allow(unused_imports)] use ::gpulab::timeit::{ValueIsErr as _, ValueIsOther as _, \
                 ValueIsResult as _}; (&&&__gpulab_value).outcome()?; } \
                 ::std::hint::black_box(&__gpulab_value); ::std::result::Result::Ok(()) })?;";
    // Blank lines above the magic stay, so the lines below keep their numbers.
    let above = "\n".repeat(line_of(cell, t.code) - usize::from(t.cell_magic));
    // A cell may end with a `let` and no `;` (a Rust cell may); inside the block that is a
    // syntax error, so the `;` is added (on the same line).
    let last = t.code.trim_end().lines().last().unwrap_or("").trim_start();
    let semi = if last.starts_with("let ") && !last.ends_with(';') {
        ";"
    } else {
        ""
    };
    if t.cell_magic {
        format!("{above}{open}\n{}{semi}\n{close}", t.code.trim_end())
    } else {
        format!("{above}{open} {}{semi} {close}", t.code.trim_end())
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

/// The Rust cell that does `env` in the cell process (the environment that matters there: what
/// CUDA and gpulab read). Blocks, so it leaves no variables behind. (No line starts with `:`,
/// which evcxr would take for one of its commands.)
pub fn env_cell_code(env: &Env) -> String {
    match env {
        Env::List => "{ let mut __gpulab_env: Vec<(String, String)> = ::std::env::vars_os()\
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))\
            .collect(); __gpulab_env.sort(); \
            for (k, v) in __gpulab_env { println!(\"{k}={v}\"); } }"
            .into(),
        // A missing variable is the cell's error (IPython's UsageError); the error type
        // prints the bare message whichever of Debug or Display `:efmt` chose.
        Env::Get(name) => format!(
            "{{ struct __GpulabEnvMissing; \
             impl ::std::fmt::Debug for __GpulabEnvMissing {{ fn fmt(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {{ f.write_str({msg:?}) }} }} \
             impl ::std::fmt::Display for __GpulabEnvMissing {{ fn fmt(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {{ f.write_str({msg:?}) }} }} \
             match ::std::env::var_os({name:?}) {{ Some(v) => println!(\"{{}}\", v.to_string_lossy()), \
             None => Err(__GpulabEnvMissing)? }} }}",
            msg = format!("Environment does not have key: {name}"),
        ),
        // SAFETY (of the generated `unsafe`): what IPython's `os.environ[...] = ...` does; a
        // thread of the cell's own reading the environment at that instant is the student's.
        Env::Set { name, value } => {
            format!("unsafe {{ ::std::env::set_var({name:?}, {value:?}) }}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::magics::{classify, Cell};

    #[test]
    fn a_timed_cell_ending_in_a_let_gets_its_semicolon() {
        for (cell, want) in [
            ("%%timeit\nlet a = 1;\nlet b = a + 1", "\nlet b = a + 1;\n"),
            ("%timeit let b = 2", " let b = 2; "),
            ("%%timeit\nlet a = 1;\na + 1", "\na + 1\n"),
        ] {
            let Cell::Timeit(t) = classify(cell) else {
                panic!("{cell:?}")
            };
            let code = timeit_cell_code(cell, &t);
            assert!(code.contains(want), "{cell:?}: {code}");
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
