//! What the kernel process runs itself for a magic: shell commands and scripts (`!cmd`,
//! `%%bash`), `%%writefile`, `%cd`'s folder, and `%who`'s listing. `Surroundings` keeps what
//! `%env` and `%cd` set, so these follow them as the cell process does.

use crate::interp::Outputs;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

/// What `%env` and `%cd` set, kept by the kernel for what it runs itself (`!cmd`, `%%bash`,
/// `%%writefile`); the cell process gets the same directly and through evcxr's restarts.
#[derive(Debug, Default)]
pub struct Surroundings {
    /// Variables `%env NAME=value` set.
    pub env: BTreeMap<String, String>,
    /// Where `%cd` went; None: the kernel's own working folder (the notebook's).
    pub dir: Option<PathBuf>,
    /// Where `%cd` left, for `%cd -`.
    pub previous: Option<PathBuf>,
}

impl Surroundings {
    /// The working folder of what the kernel runs: `%cd`'s, or the kernel's own.
    pub fn here(&self) -> PathBuf {
        self.dir
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default()
    }
}

/// Where `%cd ARG` goes from `here`: home without an argument, the previous folder for `-`,
/// `~` expanded, anything else relative to `here`; an existing folder, made absolute. Err is
/// IPython's line for a folder that is not there.
pub fn cd_target(
    arg: Option<&str>,
    here: &Path,
    previous: Option<&Path>,
    home: Option<&Path>,
) -> Result<PathBuf, String> {
    let no_home = || "%cd: HOME is not set, so there is no home folder to go to".to_string();
    let target = match arg {
        None => home.ok_or_else(no_home)?.to_path_buf(),
        Some("-") => previous
            .ok_or("%cd -: there is no previous folder yet")?
            .to_path_buf(),
        Some("~") => home.ok_or_else(no_home)?.to_path_buf(),
        Some(a) if a.starts_with("~/") => home.ok_or_else(no_home)?.join(&a[2..]),
        Some(a) => here.join(a),
    };
    let shown = arg.unwrap_or("~");
    let dir = target.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("[Errno 2] No such file or directory: '{shown}'")
        }
        _ => format!("{e}: '{shown}'"),
    })?;
    if !dir.is_dir() {
        return Err(format!("[Errno 20] Not a directory: '{shown}'"));
    }
    Ok(dir)
}

/// `%%writefile`: writes (or with `append`, adds) `body` to `path`, relative to `dir` (where
/// `%cd` went; the kernel's working folder, the notebook's, without one); a text file ends
/// with a newline. Returns IPython's line ("Writing x.cu", "Overwriting x.cu", "Appending to
/// x.cu") with the path as written; Err names the path and why.
pub fn write_file(
    path: &str,
    append: bool,
    body: &str,
    dir: Option<&Path>,
) -> Result<String, String> {
    use std::io::Write as _;
    let given = path;
    let full = match dir {
        Some(d) => d.join(path),
        None => PathBuf::from(path),
    };
    let path = full.as_path();
    let exists = path.exists();
    let mut text = body.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("%%writefile could not write {given}: {e}"))?;
    Ok(match (append, exists) {
        (true, _) => format!("Appending to {given}\n"),
        (false, true) => format!("Overwriting {given}\n"),
        (false, false) => format!("Writing {given}\n"),
    })
}

/// Runs one shell command with its output streamed as it comes. The process gets its own
/// process group, recorded in `pgid`, so an interrupt can end it and everything it started.
pub fn run_shell(
    cmd: &str,
    at: &Surroundings,
    outputs: &dyn Outputs,
    pgid: &AtomicI32,
) -> std::io::Result<i32> {
    run_in("sh", cmd, at, outputs, pgid)
}

/// `cmd` run by `shell -c` (`sh` for `!cmd`, `bash` or `sh` for a `%%bash`/`%%sh` cell), as
/// [`run_shell`] says; returns its exit status (-1 when a signal ended it).
pub fn run_in(
    shell: &str,
    cmd: &str,
    at: &Surroundings,
    outputs: &dyn Outputs,
    pgid: &AtomicI32,
) -> std::io::Result<i32> {
    let mut command = Command::new(shell);
    if let Some(dir) = &at.dir {
        command.current_dir(dir);
    }
    let mut child = command
        .arg("-c")
        .arg(cmd)
        .envs(&at.env)
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

/// What `%who` (`table` false) or `%whos` prints for the session's variables (name, type),
/// as IPython lays it out; `types` keeps only variables whose type is one of them, by its full
/// name or its last path segment (`Tensor` for `gpulab::Tensor`).
pub fn who(vars: &[(String, String)], table: bool, types: &[&str]) -> String {
    let short = |t: &str| t.rsplit("::").next().unwrap_or(t).to_string();
    let mut vars: Vec<&(String, String)> = vars
        .iter()
        .filter(|(_, t)| types.is_empty() || types.iter().any(|w| *w == t || *w == short(t)))
        .collect();
    vars.sort();
    if vars.is_empty() {
        return if types.is_empty() {
            "Interactive namespace is empty.\n".into()
        } else {
            "No variables match your requested type.\n".into()
        };
    }
    if !table {
        let names: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
        return format!("{}\n", names.join("\t "));
    }
    let w = vars
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0)
        .max("Variable".len())
        + 3;
    let tw = vars
        .iter()
        .map(|(_, t)| t.len())
        .max()
        .unwrap_or(0)
        .max("Type".len());
    let mut out = format!("{:<w$}Type\n{}\n", "Variable", "-".repeat(w + tw));
    for (n, t) in vars {
        out.push_str(&format!("{n:<w$}{t}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_lists_names_or_a_table_and_filters_by_type() {
        let vars = vec![
            ("x".to_string(), "gpulab::Tensor".to_string()),
            ("count".to_string(), "i32".to_string()),
            ("name".to_string(), "String".to_string()),
        ];
        assert_eq!(who(&vars, false, &[]), "count\t name\t x\n");
        assert_eq!(who(&vars, false, &["Tensor"]), "x\n");
        assert_eq!(who(&vars, false, &["gpulab::Tensor", "i32"]), "count\t x\n");
        assert_eq!(
            who(&vars, true, &[]),
            "Variable   Type\n-------------------------\ncount      i32\nname       String\nx          gpulab::Tensor\n"
        );
        assert_eq!(who(&[], false, &[]), "Interactive namespace is empty.\n");
        assert_eq!(
            who(&vars, true, &["f64"]),
            "No variables match your requested type.\n"
        );
    }

    #[test]
    fn cd_goes_home_back_and_relative_and_names_a_missing_folder() {
        let root = std::env::temp_dir().join(format!("gpulab-cd-{}", std::process::id()));
        let sub = root.join("sub dir");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        let root = root.canonicalize().unwrap();
        let sub = sub.canonicalize().unwrap();
        assert_eq!(cd_target(Some("sub dir"), &root, None, None).unwrap(), sub);
        assert_eq!(cd_target(Some(".."), &sub, None, None).unwrap(), root);
        assert_eq!(cd_target(None, &sub, None, Some(&root)).unwrap(), root);
        assert_eq!(
            cd_target(Some("~/sub dir"), &root, None, Some(&root)).unwrap(),
            sub
        );
        assert_eq!(cd_target(Some("-"), &root, Some(&sub), None).unwrap(), sub);
        let err = cd_target(Some("nope"), &root, None, None).unwrap_err();
        assert_eq!(err, "[Errno 2] No such file or directory: 'nope'");
        let err = cd_target(Some("file"), &root, None, None).unwrap_err();
        assert_eq!(err, "[Errno 20] Not a directory: 'file'");
        assert!(cd_target(Some("-"), &root, None, None)
            .unwrap_err()
            .contains("no previous"));
        assert!(cd_target(None, &root, None, None)
            .unwrap_err()
            .contains("HOME"));
        // %%writefile follows %cd but says the path as written.
        let said = write_file("made.txt", false, "hi", Some(&sub)).unwrap();
        assert_eq!(said, "Writing made.txt\n");
        assert_eq!(
            std::fs::read_to_string(sub.join("made.txt")).unwrap(),
            "hi\n"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn writefile_writes_overwrites_and_appends() {
        let dir = std::env::temp_dir().join(format!("gpulab-writefile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.cu");
        let p = path.to_str().unwrap();
        assert_eq!(
            write_file(p, false, "a", None),
            Ok(format!("Writing {p}\n"))
        );
        assert_eq!(
            write_file(p, false, "b\n", None),
            Ok(format!("Overwriting {p}\n"))
        );
        assert_eq!(
            write_file(p, true, "c", None),
            Ok(format!("Appending to {p}\n"))
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\nc\n");
        let missing = dir.join("no/such/folder/x.cu");
        let err = write_file(missing.to_str().unwrap(), false, "x", None).unwrap_err();
        assert!(
            err.contains("could not write") && err.contains("no/such/folder"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
