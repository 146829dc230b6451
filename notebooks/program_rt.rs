//! Run-time helpers for the notebook programs written by `notebooks/to_program.py`.
//!
//! Each program is one notebook's cells, in order, in one function. What a cell prints reaches
//! the program's stdout exactly as it would reach the kernel (prelude display-channel lines,
//! evcxr's `EVCXR_BEGIN_CONTENT` blocks, plain text), and this module adds the few lines the
//! kernel would otherwise know by itself, on a channel of their own (`\x1egpulab-nb:{json}`):
//!
//! - `{"cell": N}` before cell N runs (on stdout and stderr), so each output can be put back
//!   into the cell it came from;
//! - `{"error": {"ename", "evalue"}}` when a cell's `?` returns an error, or a `!` command
//!   cannot be started.
//!
//! A panic is reported the way the kernel's panic hook reports it: a display-channel `panic`
//! line. `to_program.py fill` turns all of this back into notebook outputs.

use std::io::Write as _;

/// Prefix of this module's own lines; distinct from the prelude's `\x1egpulab:` channel.
pub const PREFIX: &str = "\x1egpulab-nb:";

/// What a cell's `?` propagates: any error, by its `Display` text (what a notebook shows).
/// It deliberately does not implement `Display` itself, so the blanket `From` below does not
/// overlap with `impl<T> From<T> for T`.
pub struct CellError {
    pub ename: String,
    pub evalue: String,
}

impl<E: std::fmt::Display> From<E> for CellError {
    fn from(e: E) -> Self {
        let full = std::any::type_name::<E>();
        // `gpulab::error::Error` -> `Error`; generics dropped.
        let base = full.split('<').next().unwrap_or(full);
        let ename = base.rsplit("::").next().unwrap_or(base).to_string();
        CellError {
            ename,
            evalue: e.to_string(),
        }
    }
}

/// `s` as a JSON string literal on one line: the prelude's own escaping, so both channels agree.
pub fn json_str(s: &str) -> String {
    gpulab::display::json_string(s)
}

fn both(line: &str) {
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    let _ = std::io::stderr().flush();
}

/// Installs the panic hook (as the kernel does for a session): a display-channel `panic` line.
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-string payload".to_string()
        };
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "\x1egpulab:{{\"op\":\"panic\",\"message\":{},\"location\":{}}}",
            json_str(&message),
            json_str(&location)
        );
        let _ = out.flush();
        eprintln!("panicked at {location}: {message}");
    }));
}

/// Marks the start of notebook cell `index` (its position among all the notebook's cells).
pub fn cell(index: usize) {
    both(&format!("{PREFIX}{{\"cell\":{index}}}\n"));
}

/// Reports the error a cell's `?` returned and ends the program, as a failing cell ends
/// "Run All" in a notebook.
pub fn finish(outcome: Result<(), CellError>) {
    if let Err(e) = outcome {
        both(&format!(
            "{PREFIX}{{\"error\":{{\"ename\":{},\"evalue\":{}}}}}\n",
            json_str(&e.ename),
            json_str(&e.evalue)
        ));
        std::process::exit(1);
    }
}

/// A `!command` line: run by `sh -c` with the program's stdout and stderr, as the kernel
/// runs it. A non-zero exit status does not fail the cell (it does not in the kernel either);
/// a command that cannot be started does.
pub fn shell(cmd: &str) -> Result<(), CellError> {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    match std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .status()
    {
        Ok(_) => Ok(()),
        Err(e) => Err(CellError {
            ename: "OSError".into(),
            evalue: format!("could not run `{cmd}`: {e}"),
        }),
    }
}

/// `%pwd`: the working folder, shown as the kernel shows it (a string result).
pub fn pwd() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

/// `%cd [-q] [ARG]`, as the kernel does it (kernel/src/magics/local.rs, `cd_target`): home without
/// an argument, the previous folder for `-`, `~` expanded; prints the new folder unless quiet.
pub fn cd(arg: Option<&str>, quiet: bool) -> Result<(), CellError> {
    static PREVIOUS: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);
    let fail = |evalue: String| CellError {
        ename: "OSError".into(),
        evalue,
    };
    let here = std::env::current_dir().map_err(|e| fail(e.to_string()))?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let no_home = || fail("%cd: HOME is not set, so there is no home folder to go to".into());
    let target = match arg {
        None | Some("~") => home.ok_or_else(no_home)?,
        Some("-") => PREVIOUS
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| fail("%cd -: there is no previous folder yet".into()))?,
        Some(a) if a.starts_with("~/") => home.ok_or_else(no_home)?.join(&a[2..]),
        Some(a) => here.join(a),
    };
    let shown = arg.unwrap_or("~");
    let dir = target.canonicalize().map_err(|e| {
        fail(match e.kind() {
            std::io::ErrorKind::NotFound => format!("[Errno 2] No such file or directory: '{shown}'"),
            _ => format!("{e}: '{shown}'"),
        })
    })?;
    if !dir.is_dir() {
        return Err(fail(format!("[Errno 20] Not a directory: '{shown}'")));
    }
    std::env::set_current_dir(&dir).map_err(|e| fail(format!("{e}: '{shown}'")))?;
    *PREVIOUS.lock().unwrap() = Some(here);
    if !quiet {
        println!("{}", dir.display());
    }
    Ok(())
}

/// A `%%bash` / `%%sh` cell: the script run by that shell; a non-zero exit fails the cell
/// unless `raise_error` is off (`--no-raise-error`), as the kernel does.
pub fn script(shell: &str, body: &str, raise_error: bool) -> Result<(), CellError> {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let status = std::process::Command::new(shell)
        .arg("-c")
        .arg(body)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| CellError {
            ename: "OSError".into(),
            evalue: format!("could not run {shell}: {e}"),
        })?;
    match status.code() {
        Some(0) => Ok(()),
        _ if !raise_error => Ok(()),
        Some(rc) => Err(CellError {
            ename: "CalledProcessError".into(),
            evalue: format!("Command '{shell}' (the cell's script) returned non-zero exit status {rc}."),
        }),
        None => Err(CellError {
            ename: "CalledProcessError".into(),
            evalue: format!("Command '{shell}' (the cell's script) was ended by a signal."),
        }),
    }
}

/// `%%writefile [-a] PATH`: the cell's text written (or appended) to PATH, with the kernel's
/// report (kernel/src/magics/local.rs, `write_file`).
pub fn write_file(path: &str, append: bool, text: &str) -> Result<(), CellError> {
    use std::io::Write as _;
    let exists = std::path::Path::new(path).exists();
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CellError {
            ename: "OSError".into(),
            evalue: format!("%%writefile could not write {path}: {e}"),
        })?;
    match (append, exists) {
        (true, _) => println!("Appending to {path}"),
        (false, true) => println!("Overwriting {path}"),
        (false, false) => println!("Writing {path}"),
    }
    Ok(())
}

/// `%env` (list), `%env NAME` (show) and `%env NAME=value` (set), as the kernel answers them
/// (kernel/src/magics/rust_code.rs, `env_cell_code`); the program is the cell process here.
pub fn env(name: Option<&str>, value: Option<&str>) -> Result<(), CellError> {
    match (name, value) {
        (Some(name), Some(value)) => {
            std::env::set_var(name, value);
            println!("env: {name}={value}");
        }
        (Some(name), None) => match std::env::var_os(name) {
            Some(v) => println!("{}", v.to_string_lossy()),
            None => {
                return Err(CellError {
                    ename: "UsageError".into(),
                    evalue: format!("Environment does not have key: {name}"),
                })
            }
        },
        (None, _) => {
            let mut all: Vec<(String, String)> = std::env::vars_os()
                .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
                .collect();
            all.sort();
            for (k, v) in all {
                println!("{k}={v}");
            }
        }
    }
    Ok(())
}

/// `%time` / `%%time`: the kernel reports compile and run time; a program was compiled ahead
/// of time, so only the run time exists here.
pub fn time_report(start: std::time::Instant) {
    println!(
        "run: {} (compiled ahead of time, so no compile figure)",
        gpulab::timing::format_duration(start.elapsed())
    );
}
