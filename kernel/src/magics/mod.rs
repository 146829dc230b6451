//! IPython-style cell magics on top of Rust cells: `!cmd`, `%time`/`%%time`,
//! `%timeit`/`%%timeit`, `%%bash`/`%%sh`, `%%html`/`%%markdown`/`%%svg`/`%%latex`,
//! `%%writefile`, `%env`, `%cd`/`%pwd`, `%lsmagic`, `%who`, `?name`/`name?`, `%%cuda`.
//!
//! This module reads a cell (`classify`) and completes magic names; `rust_code` writes the
//! Rust that the cell process runs for a magic, and `local` runs what the kernel process
//! does itself (shells, files, the working folder, the variable listing).

mod local;
mod rust_code;

pub use local::{cd_target, run_in, run_shell, who, write_file, Surroundings};
pub use rust_code::{cuda_cell_code, env_cell_code, timeit_cell_code};

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
    /// `%%writefile [-a] PATH` on the first line: the rest of the cell written to PATH.
    WriteFile {
        path: &'a str,
        append: bool,
        body: &'a str,
    },
    /// `%%html`, `%%markdown`, `%%svg` or `%%latex` on the first line: the rest of the cell
    /// shown as that kind of output (IPython's display magics), without compiling anything.
    Show {
        mime: &'static str,
        plain: Option<&'static str>,
        body: &'a str,
    },
    /// `%%bash` or `%%sh` on the first line: the rest of the cell is a script for that shell.
    Script(Script<'a>),
    /// `%lsmagic`: the magics this kernel knows.
    LsMagic,
    /// `%who [TYPE ...]` (names) or `%whos [TYPE ...]` (a table of names and types): the
    /// session's variables, only those of the types named when some are.
    Who {
        table: bool,
        types: Vec<&'a str>,
    },
    /// `%pwd`: the working folder.
    Pwd,
    /// `%cd [-q] [PATH]`: change the working folder (home without a path, `-` for the last).
    Cd {
        arg: Option<&'a str>,
        quiet: bool,
    },
    /// `%env`, `%env NAME` or `%env NAME=value`: the cell process's environment.
    Env(Env<'a>),
    /// A magic that cannot run (unknown, or its arguments wrong), and why: the cell's error.
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

/// A `%%bash` / `%%sh` cell: IPython's `%%script` family. A script that exits with a status
/// other than 0 fails the cell (IPython's `CalledProcessError`) unless `--no-raise-error`.
#[derive(Debug, PartialEq)]
pub struct Script<'a> {
    pub shell: &'a str,
    pub body: &'a str,
    pub raise_error: bool,
}

/// IPython's `%env`: list the environment, show one variable, or set one.
#[derive(Debug, PartialEq)]
pub enum Env<'a> {
    List,
    Get(&'a str),
    Set { name: &'a str, value: &'a str },
}

/// IPython's display cell magics: the MIME type each shows its body as, and the plain-text
/// stand-in (None: the body itself), as the prelude's `Html`, `Markdown` and `Svg` have them.
pub const DISPLAY_MAGICS: [(&str, &str, Option<&str>); 5] = [
    ("%%html", "text/html", Some("<HTML>")),
    ("%%markdown", "text/markdown", None),
    ("%%md", "text/markdown", None),
    ("%%svg", "image/svg+xml", Some("<SVG image>")),
    ("%%latex", "text/latex", None),
];

/// What `%lsmagic` says, and the end of the error for a magic this kernel does not have.
pub const MAGICS: &str = "gpulab's magics: !command (a shell command), %time and %%time, \
%timeit and %%timeit (-n loops, -r runs), %%cuda (a cell of CUDA C++), %%bash and %%sh (a shell script), \
%%html, %%markdown, %%svg and %%latex (the cell shown as such), \
%%writefile [-a] PATH, %cd and %pwd (the working folder), \
%env [NAME[=value]] (the environment), ?name and name? (documentation), %who and %whos (the \
session's variables), %lsmagic; and \
evcxr's commands, such as :dep and :vars (:help lists them).";

/// The magics Tab completes: line magics anywhere a line starts, cell magics on a cell's
/// first line.
const LINE_MAGICS: [&str; 8] = [
    "%cd", "%env", "%lsmagic", "%pwd", "%time", "%timeit", "%who", "%whos",
];

const CELL_MAGICS: [&str; 11] = [
    "%%bash",
    "%%cuda",
    "%%html",
    "%%latex",
    "%%markdown",
    "%%md",
    "%%sh",
    "%%svg",
    "%%time",
    "%%timeit",
    "%%writefile",
];

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
    for (magic, mime, plain) in DISPLAY_MAGICS {
        if let Some(rest) = trimmed.strip_prefix(magic) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                let line_end = rest.find('\n').unwrap_or(rest.len());
                if !rest[..line_end].trim().is_empty() {
                    return Cell::BadMagic(format!(
                        "{magic} takes no options (got {:?}); what to show goes on the lines below",
                        rest[..line_end].trim()
                    ));
                }
                let body = &rest[line_end..];
                let body = body.strip_prefix('\n').unwrap_or(body);
                return Cell::Show { mime, plain, body };
            }
        }
    }
    for shell in ["bash", "sh"] {
        let magic = format!("%%{shell}");
        if let Some(rest) = trimmed.strip_prefix(magic.as_str()) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return script(shell, rest);
            }
        }
    }
    if let Some(rest) = code.trim_start().strip_prefix("%%cuda") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return Cell::Cuda(code);
        }
    }
    for magic in ["%%timeit", "%timeit"] {
        if let Some(rest) = trimmed.strip_prefix(magic) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return timeit(magic, rest);
            }
        }
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
    // No Rust statement starts with `%`: every other such cell is a magic this kernel either
    // runs or names as unknown, as IPython does, instead of a compiler error about `%`.
    if trimmed.starts_with('%') {
        return other_magic(trimmed);
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

/// `%%bash`/`%%sh` and `rest`, the cell after the magic: its one option, then the script.
fn script<'a>(shell: &'static str, rest: &'a str) -> Cell<'a> {
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let (line, body) = (&rest[..line_end], &rest[line_end..]);
    let mut raise_error = true;
    for arg in line.split_whitespace() {
        match arg {
            "--no-raise-error" => raise_error = false,
            other => {
                return Cell::BadMagic(format!(
                    "%%{shell}: unknown option {other:?} (the script goes on the lines below; \
                     the one option is --no-raise-error)"
                ))
            }
        }
    }
    Cell::Script(Script {
        shell,
        body: body.strip_prefix('\n').unwrap_or(body),
        raise_error,
    })
}

/// `%timeit` or `%%timeit` (`magic`) and `rest`, the cell after it: the code to time with its
/// options, or what is wrong with them.
fn timeit<'a>(magic: &str, rest: &'a str) -> Cell<'a> {
    let cell_magic = magic == "%%timeit";
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let (line, below) = (&rest[..line_end], &rest[line_end..]);
    let (loops, runs, on_line) = match timeit_options(line) {
        Ok(parsed) => parsed,
        Err(why) => return Cell::BadMagic(format!("{magic}: {why}")),
    };
    let code = if cell_magic {
        if !on_line.trim().is_empty() {
            return Cell::BadMagic(format!(
                "%%timeit: the code goes on the lines below it, not on its line (got {:?}); \
                 for one line, use %timeit",
                on_line.trim()
            ));
        }
        below.strip_prefix('\n').unwrap_or(below)
    } else {
        if !below.trim().is_empty() {
            return Cell::BadMagic(
                "%timeit times the rest of its own line; for a cell of several lines, start it \
                 with %%timeit"
                    .into(),
            );
        }
        on_line
    };
    if code.trim().is_empty() {
        return Cell::BadMagic(format!(
            "{magic}: nothing to time ({})",
            if cell_magic {
                "the code goes on the lines below it"
            } else {
                "e.g. %timeit a.matmul(&b)"
            }
        ));
    }
    Cell::Timeit(Timeit {
        loops,
        runs,
        code,
        cell_magic,
    })
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

/// What follows `%env` (one line): `NAME=value` or `NAME value` sets, `NAME` shows, nothing
/// lists; Err says what cannot be a variable.
fn env_magic(rest: &str) -> Result<Env<'_>, String> {
    let rest = rest.trim();
    if rest.is_empty() {
        return Ok(Env::List);
    }
    let (name, value) = match rest.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => match rest.split_once(char::is_whitespace) {
            Some((n, v)) => (n, Some(v.trim())),
            None => (rest, None),
        },
    };
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '\0') {
        return Err(format!(
            "%env: {name:?} is not a variable name (%env NAME=value sets one, %env NAME shows it, \
             %env lists them)"
        ));
    }
    match value {
        None => Ok(Env::Get(name)),
        Some(v) if v.contains('\0') => Err(format!("%env: the value of {name} holds a NUL byte")),
        Some(value) => Ok(Env::Set { name, value }),
    }
}

/// A cell starting with `%` that is none of the magics above: `%lsmagic`, `%who`,
/// `%%writefile`, or a magic this kernel does not have.
fn other_magic(trimmed: &str) -> Cell<'_> {
    let (first, body) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let mut words = first.split_whitespace();
    let name = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    match name {
        "%lsmagic" => Cell::LsMagic,
        "%pwd" if args.is_empty() && body.trim().is_empty() => Cell::Pwd,
        "%cd" if !body.trim().is_empty() => Cell::BadMagic("%cd takes one line (%cd PATH)".into()),
        "%cd" => {
            let rest = first["%cd".len()..].trim();
            let (quiet, rest) = match rest.strip_prefix("-q") {
                Some(r) if r.is_empty() || r.starts_with(char::is_whitespace) => (true, r.trim()),
                _ => (false, rest),
            };
            if rest.len() > 1 && rest.starts_with('-') {
                return Cell::BadMagic(format!(
                    "%cd: option {rest:?} is not supported (%cd [-q] [PATH], %cd - for the last folder)"
                ));
            }
            let arg = rest.trim_matches(|c| c == '"' || c == '\'');
            Cell::Cd {
                arg: (!arg.is_empty()).then_some(arg),
                quiet,
            }
        }
        "%env" if !body.trim().is_empty() => Cell::BadMagic(
            "%env takes one line (%env NAME=value); set several with one %env cell each".into(),
        ),
        "%env" => match env_magic(&first["%env".len()..]) {
            Ok(env) => Cell::Env(env),
            Err(why) => Cell::BadMagic(why),
        },
        // IPython's variable listings: evcxr's own command gives names and types.
        "%who" | "%whos" if body.trim().is_empty() => Cell::Who {
            table: name == "%whos",
            types: args,
        },
        "%time" => Cell::BadMagic("%time: nothing to time (e.g. %time a.matmul(&b))".into()),
        "%%writefile" => {
            let append = args.first().is_some_and(|a| *a == "-a" || *a == "--append");
            let path = first["%%writefile".len()..].trim_start();
            let path = if append {
                path.split_once(char::is_whitespace).map_or("", |(_, p)| p)
            } else {
                path
            };
            let path = path.trim().trim_matches(|c| c == '"' || c == '\'');
            if path.is_empty() {
                Cell::BadMagic(
                    "%%writefile: which file? (%%writefile [-a] PATH, then the text on the lines \
                     below)"
                        .into(),
                )
            } else {
                Cell::WriteFile { path, append, body }
            }
        }
        _ => Cell::BadMagic(format!(
            "{} magic `{name}` not found. {MAGICS}",
            if name.starts_with("%%") {
                "Cell"
            } else {
                "Line"
            }
        )),
    }
}

/// Tab after `%na` at the start of a line: the magics that start so, and where the word
/// starts (a byte offset). None when the cursor is not on such a word (Rust completion then).
pub fn complete_magic(code: &str, cursor: usize) -> Option<(Vec<String>, usize)> {
    let before = code.get(..cursor)?;
    let start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '%'))
        .map_or(0, |i| i + 1);
    let word = &before[start..];
    let line_start = before[..start].rfind('\n').map_or(0, |i| i + 1);
    if !word.starts_with('%') || !before[line_start..start].trim().is_empty() {
        return None;
    }
    let first_line = before[..line_start].trim().is_empty();
    let mut matches: Vec<String> = LINE_MAGICS
        .iter()
        .chain(if first_line { &CELL_MAGICS[..] } else { &[] })
        .filter(|m| m.starts_with(word))
        .map(|m| m.to_string())
        .collect();
    matches.sort();
    Some((matches, start))
}

/// Whether Tab in this cell should ask rust-analyzer: not in a cell of shell script, HTML,
/// text to write, or a magic line (loading the analyzer costs a kernel about 600 MB).
pub fn completes_as_rust(code: &str) -> bool {
    matches!(
        classify(code),
        Cell::Rust(_) | Cell::Time(_) | Cell::Timeit(_) | Cell::Help(_)
    )
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
        assert!(
            matches!(classify("%%cudax"), Cell::BadMagic(m) if m.contains("`%%cudax` not found"))
        );
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
        assert!(matches!(classify("%%timex\nx"), Cell::BadMagic(m) if m.starts_with("Cell magic")));
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
    fn other_magics_are_run_or_named_as_unknown() {
        assert_eq!(classify("%lsmagic"), Cell::LsMagic);
        assert_eq!(
            classify("%%writefile kernels/add.cu\n__global__ void add() {}\n"),
            Cell::WriteFile {
                path: "kernels/add.cu",
                append: false,
                body: "__global__ void add() {}"
            }
        );
        assert_eq!(
            classify("%%writefile -a \"notes.txt\"\nmore"),
            Cell::WriteFile {
                path: "notes.txt",
                append: true,
                body: "more"
            }
        );
        for (cell, says) in [
            ("%%writefile", "which file?"),
            (
                "%matplotlib inline",
                "Line magic `%matplotlib` not found. gpulab's magics: !command",
            ),
            ("%env A=1\nB=2", "%env takes one line"),
            ("%env =1", "is not a variable name"),
            ("%env A b=c", "\"A b\" is not a variable name"),
            (
                "%%javascript\nalert(1)",
                "Cell magic `%%javascript` not found",
            ),
            ("%time", "nothing to time"),
        ] {
            match classify(cell) {
                Cell::BadMagic(why) => assert!(why.contains(says), "{cell:?}: {why}"),
                other => panic!("{cell:?} gave {other:?}"),
            }
        }
        assert_eq!(
            classify("%whos"),
            Cell::Who {
                table: true,
                types: vec![]
            }
        );
        assert_eq!(
            classify("%who Tensor i32"),
            Cell::Who {
                table: false,
                types: vec!["Tensor", "i32"]
            }
        );
        // %cd and %pwd.
        assert_eq!(classify("%pwd"), Cell::Pwd);
        assert_eq!(
            classify("%cd"),
            Cell::Cd {
                arg: None,
                quiet: false
            }
        );
        assert_eq!(
            classify("%cd -q 'my data'"),
            Cell::Cd {
                arg: Some("my data"),
                quiet: true
            }
        );
        assert_eq!(
            classify("%cd -"),
            Cell::Cd {
                arg: Some("-"),
                quiet: false
            }
        );
        assert!(matches!(classify("%cd -b mark"), Cell::BadMagic(_)));
        // Display magics: the body as the MIME type, a plain stand-in beside it.
        assert_eq!(
            classify("%%html\n<b>bold</b>\n"),
            Cell::Show {
                mime: "text/html",
                plain: Some("<HTML>"),
                body: "<b>bold</b>"
            }
        );
        assert_eq!(
            classify("%%markdown\n# Title\n\n$x^2$"),
            Cell::Show {
                mime: "text/markdown",
                plain: None,
                body: "# Title\n\n$x^2$"
            }
        );
        assert!(matches!(
            classify("%%latex\n$$a$$"),
            Cell::Show {
                mime: "text/latex",
                ..
            }
        ));
        assert!(matches!(
            classify("%%html --isolated\n<b>"),
            Cell::BadMagic(_)
        ));
        assert!(matches!(classify("%%htmlx\n<b>"), Cell::BadMagic(_)));
        // %%bash and %%sh: the script below the magic, failing on a non-zero exit unless told.
        assert_eq!(
            classify("%%bash\necho 1\nexit 3"),
            Cell::Script(Script {
                shell: "bash",
                body: "echo 1\nexit 3",
                raise_error: true
            })
        );
        assert_eq!(
            classify("  %%sh --no-raise-error\nfalse"),
            Cell::Script(Script {
                shell: "sh",
                body: "false",
                raise_error: false
            })
        );
        match classify("%%bash -x\necho") {
            Cell::BadMagic(why) => assert!(why.contains("unknown option \"-x\""), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(classify("%%bashful\nx"), Cell::BadMagic(_)));
        // %env as IPython reads it: list, show, set with `=` or a space.
        assert_eq!(classify("%env"), Cell::Env(Env::List));
        assert_eq!(classify("%env  HOME "), Cell::Env(Env::Get("HOME")));
        for (cell, name, value) in [
            ("%env A=1", "A", "1"),
            ("%env A = b c", "A", "b c"),
            ("%env CUDA_VISIBLE_DEVICES 1", "CUDA_VISIBLE_DEVICES", "1"),
            ("%env A=", "A", ""),
        ] {
            assert_eq!(
                classify(cell),
                Cell::Env(Env::Set { name, value }),
                "{cell}"
            );
        }
        // Rust that merely contains `%` stays Rust.
        assert_eq!(classify("let r = 7 % 3;"), Cell::Rust("let r = 7 % 3;"));
    }

    #[test]
    fn tab_completes_magic_names_where_a_line_starts() {
        assert_eq!(
            complete_magic("%ti", 3),
            Some((vec!["%time".into(), "%timeit".into()], 0))
        );
        // Cell magics on the first line only; line magics on any line.
        let (m, start) = complete_magic("let a = 1;\n  %w", 15).unwrap();
        assert_eq!((m, start), (vec!["%who".into(), "%whos".into()], 13));
        assert_eq!(complete_magic("%%b", 3), Some((vec!["%%bash".into()], 0)));
        assert_eq!(complete_magic("x;\n%%b", 6), Some((vec![], 3)));
        // Not at a line's start, or not a magic: Rust's completion.
        assert_eq!(complete_magic("let p = 5 %ti", 13), None);
        assert_eq!(complete_magic("tens", 4), None);
        assert!(completes_as_rust("let t = Tensor::"));
        assert!(completes_as_rust("%%time\nlet t = Tensor::"));
        assert!(!completes_as_rust("%%bash\nech"));
        assert!(!completes_as_rust("%%html\n<b"));
    }
}
