// Copyright 2020 The Evcxr Authors.
//
// Licensed under the Apache License, Version 2.0 <LICENSE or
// https://www.apache.org/licenses/LICENSE-2.0> or the MIT license <LICENSE
// or https://opensource.org/licenses/MIT>, at your option. This file may not be
// copied, modified, or distributed except according to those terms.

use self::artifacts::read_artifacts;
use self::cache::CacheResult;
use crate::code_block::CodeBlock;
use crate::errors::CompilationError;
use crate::errors::Error;
use crate::errors::bail;
use crate::eval_context::Config;
use crate::eval_context::ContextState;
use anyhow::Context;
use anyhow::Result;
use anyhow::anyhow;
use once_cell::sync::Lazy;
use regex::Regex;
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

mod artifacts;
pub(crate) mod cache;

pub(crate) const CORE_EXTERN_ENV: &str = "EVCXR_CORE_EXTERN";
pub(crate) const CACHE_ENABLED_ENV: &str = "EVCXR_CACHE_ENABLED";
const EXECUTION_SO_PATH_FILE: &str = ".evcxr-execution-so";
const EXECUTION_SO_PATH_ENV: &str = "EVCXR_EXECUTION_SO_PATH";

pub(crate) fn shared_object_prefix() -> &'static str {
    if cfg!(target_os = "macos") {
        "lib"
    } else if cfg!(target_os = "windows") {
        ""
    } else {
        "lib"
    }
}

pub(crate) fn rlib_prefix() -> &'static str {
    // Rlibs are, fortunately consistent in that they always start with "lib" for all platforms.
    "lib"
}

pub(crate) fn shared_object_extension() -> &'static str {
    if cfg!(target_os = "macos") {
        "dylib"
    } else if cfg!(target_os = "windows") {
        "dll"
    } else {
        "so"
    }
}

fn shared_object_name_from_crate_name(crate_name: &str) -> String {
    let prefix = shared_object_prefix();
    let extension = shared_object_extension();
    format!("{prefix}{crate_name}.{extension}")
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    if let Err(err) = fs::create_dir_all(dir) {
        bail!("Error creating directory '{:?}': {}", dir, err);
    }
    Ok(())
}

fn write_file(dir: &Path, basename: &str, contents: &str) -> Result<(), Error> {
    create_dir(dir)?;
    let filename = dir.join(basename);
    // If the file contents is already correct, then skip writing it again. This
    // is mostly to avoid rewriting Cargo.toml which should change relatively
    // little.
    if fs::read_to_string(&filename)
        .map(|c| c == contents)
        .unwrap_or(false)
    {
        return Ok(());
    }
    if let Err(err) = fs::write(&filename, contents) {
        bail!("Error writing '{:?}': {}", filename, err);
    }
    Ok(())
}

/// On Mac, if we copy the dylib, we get intermittent failures where we end up
/// with the previous version of the file when we shouldn't. On windows, if
/// rename the file, we get errors subsequently when something (perhaps the
/// Windows linker) tries to delete the file that it expects to still be there.
/// On Linux either renaming or copying works, but renaming should be more
/// efficient, so we do that.
#[cfg(windows)]
fn rename_or_copy_so_file(src: &Path, dest: &Path) -> Result<(), Error> {
    // Copy file by reading and writing instead of using std::fs::copy. The src
    // is a hard-linked file and we want to make extra sure that we end up with
    // a completely independent copy.
    fn alt_copy(src: &Path, dest: &Path) -> Result<(), std::io::Error> {
        use std::fs::File;
        std::io::copy(&mut File::open(src)?, &mut File::create(dest)?)?;
        Ok(())
    }
    if let Err(err) = alt_copy(src, dest) {
        bail!("Error copying '{:?}' to '{:?}': {}", src, dest, err);
    }
    Ok(())
}

#[cfg(not(windows))]
fn rename_or_copy_so_file(src: &Path, dest: &Path) -> Result<(), Error> {
    if let Err(err) = fs::rename(src, dest) {
        bail!("Error renaming '{:?}' to '{:?}': {}", src, dest, err);
    }
    Ok(())
}

#[derive(Default)]
pub(crate) struct Module {
    build_num: i32,
    last_allow_static: Option<bool>,
    /// gpulab patch: how cargo last built the cell crate, for building the next cell without it.
    direct: Option<DirectBuild>,
    /// gpulab patch: whether the last build ran rustc directly (shown in `:timing`'s phases).
    pub(crate) last_build_direct: bool,
    /// gpulab patch: the next build has type probes, so rustc is to print full type paths.
    pub(crate) untrimmed_types: bool,
    /// gpulab patch: the types the last build's probes named, by variable.
    type_probes: HashMap<String, String>,
    /// gpulab patch: whether this rustc takes `-Ztrim-diagnostic-paths=no` (asked once).
    untrimmed_supported: Option<bool>,
}

const CRATE_NAME: &str = "ctx";

impl Module {
    pub(crate) fn new() -> Result<Module, Error> {
        Ok(Module {
            build_num: 0,
            last_allow_static: None,
            untrimmed_types: false,
            type_probes: HashMap::new(),
            untrimmed_supported: None,
            direct: None,
            last_build_direct: false,
        })
    }

    // Writes Cargo.toml. Should be called before compile.
    pub(crate) fn write_cargo_toml(&self, state: &ContextState) -> Result<(), Error> {
        write_file(
            state.config.crate_dir(),
            "Cargo.toml",
            &self.get_cargo_toml_contents(state),
        )
    }

    // Writes .cargo/config.toml. Should be called before compile.
    pub(crate) fn write_config_toml(&self, state: &ContextState) -> Result<(), Error> {
        let dot_config_dir = state.config.crate_dir().join(".cargo");
        fs::create_dir_all(dot_config_dir.as_path())?;
        write_file(
            dot_config_dir.as_path(),
            "config.toml",
            &self.get_config_toml_contents(state),
        )
    }

    pub(crate) fn check(
        &mut self,
        code_block: &CodeBlock,
        config: &Config,
    ) -> Result<Vec<CompilationError>, Error> {
        self.write_code(code_block, config)?;
        let output = config.cargo_command("check").output();

        let cargo_output = match output {
            Ok(out) => out,
            Err(err) => bail!("Error running 'cargo check': {}", err),
        };
        let (errors, _non_json_error) = errors_from_cargo_output(&cargo_output, code_block);
        Ok(errors)
    }

    pub(crate) fn compile(
        &mut self,
        code_block: &CodeBlock,
        config: &Config,
    ) -> Result<SoFile, Error> {
        if self.last_allow_static == Some(!config.allow_static_linking) {
            // If allow_static_linking has changed, then we need to rebuild everything.
            config.cargo_command("clean").output()?;
        }
        self.last_allow_static = Some(config.allow_static_linking);
        let mut command = config.cargo_command("build");
        if config.time_passes && config.toolchain != "nightly" {
            bail!("time_passes option requires nightly compiler");
        }

        self.write_code(code_block, config)?;

        let next_build_num = self.build_num + 1;
        let so_path_file = config.crate_dir().join(EXECUTION_SO_PATH_FILE);
        command.env(EXECUTION_SO_PATH_ENV, &so_path_file);

        match fs::remove_file(&so_path_file) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error.into()),
        }

        // gpulab patch: while nothing cargo would look at has changed since it last built the
        // cell crate, run that rustc command directly (cargo would only have found every
        // dependency fresh and run the same command). Anything else goes through cargo, with
        // `-vv` so that its command for the cell crate can be reused next time.
        let key = DirectBuild::key(config);
        let direct = self.direct.take().filter(|d| Some(&d.key) == key.as_ref());
        let so_file = if let Some(direct) = direct {
            let mut command = direct.command(config);
            if self.untrimmed_types {
                command
                    .args(UNTRIMMED_FLAGS)
                    .env("RUSTC_BOOTSTRAP", CRATE_NAME);
            }
            let output = run_cargo(command, code_block);
            if let Ok(output) = &output {
                self.type_probes = type_probes(output, code_block);
            }
            let so_file = direct.so_file.clone();
            // Errors in the cell's code leave the command good for the next cell; any other
            // failure (rustc killed by an interrupt, say) hands the next build back to cargo.
            if matches!(output, Ok(_) | Err(Error::CompilationErrors(_))) {
                self.direct = Some(direct);
            }
            self.last_build_direct = true;
            output?;
            so_file
        } else {
            self.last_build_direct = false;
            if key.is_some() {
                command.arg("-vv");
            }
            let cargo_output = run_cargo(command, code_block)?;
            if config.time_passes {
                let output = String::from_utf8_lossy(&cargo_output.stderr);
                eprintln!("{output}");
            }

            let so_file = match fs::read_to_string(&so_path_file) {
                Ok(path) => PathBuf::from(path),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    compiled_so_path(&cargo_output.stdout)?
                }
                Err(error) => return Err(error.into()),
            };
            // Cargo may have rewritten Cargo.lock: the key is taken again after the build.
            self.direct = DirectBuild::key(config)
                .and_then(|key| DirectBuild::from_cargo_stderr(&cargo_output.stderr, key));
            so_file
        };

        let copied_so_file = so_file.with_file_name(shared_object_name_from_crate_name(&format!(
            "code_{next_build_num}"
        )));

        rename_or_copy_so_file(&so_file, &copied_so_file)?;
        self.build_num = next_build_num;

        if config.cache_bytes() > 0 {
            crate::module::cache::cleanup(config.cache_bytes())?;
        }

        Ok(SoFile {
            path: copied_so_file,
        })
    }

    /// gpulab patch: whether the next build will call rustc directly with a rustc that can print
    /// full type paths, so that type probes can name the types of new variables (see
    /// `EvalContext::set_types_from_rustc`). Other builds go through cargo, which would pass
    /// the flag to every crate, so their variables' types come from rust-analyzer.
    pub(crate) fn probes_types(&mut self, config: &Config) -> bool {
        let Some(direct) = &self.direct else {
            return false;
        };
        if Some(&direct.key) != DirectBuild::key(config).as_ref() {
            return false;
        }
        if self.untrimmed_supported.is_none() {
            self.untrimmed_supported = Some(rustc_prints_untrimmed(&direct.program, config));
        }
        self.untrimmed_supported == Some(true)
    }

    /// gpulab patch: the types the last build's probes named, by variable.
    pub(crate) fn take_type_probes(&mut self) -> HashMap<String, String> {
        std::mem::take(&mut self.type_probes)
    }

    fn write_code(&self, code_block: &CodeBlock, config: &Config) -> Result<(), Error> {
        write_file(&config.src_dir(), "lib.rs", &code_block.code_string())?;
        self.maybe_bump_lib_mtime(config);
        Ok(())
    }

    #[cfg(not(target_os = "macos"))]
    fn maybe_bump_lib_mtime(&self, _config: &Config) {}

    #[cfg(target_os = "macos")]
    fn maybe_bump_lib_mtime(&self, config: &Config) {
        // Some Macs use a filesystem that only has 1 second precision on file modification
        // timestamps. Cargo uses these timestamps to see if it needs to recompile things, otherwise
        // it just reuses the previous output. We set the modification timestamp on our source file
        // to be 10 seconds in the future. That way it's guaranteed to be newer than any outputs
        // produced by previous runs. In the event that setting the mtime fails, we just ignore it,
        // as this mostly affects tests and we don't want inability to set mtime to break things for
        // users.
        let _ = filetime::set_file_mtime(
            config.src_dir().join("lib.rs"),
            filetime::FileTime::from_unix_time(filetime::FileTime::now().unix_seconds() + 10, 0),
        );
    }

    // gpulab patch: `:opt` sets the optimisation of the cell crate only; dependencies keep
    // the profile's opt-level 2 (the level goes in `[profile.dev.package.ctx]`, which leaves
    // every other crate's profile, build scripts included, as it was). Upstream's profile
    // applied to every crate, so `:opt` rebuilt all dependencies (about 35 s with gpulab's
    // prelude on 2 cores), and a dependency built as a dylib (the prelude) was rebuilt under
    // the same file name as the copy the session's process had already loaded: the next cell
    // could not link against it, the process ended and every variable was lost.
    // gpulab patch: the embedder's profile sections for dependencies follow the cell crate's
    // (`EvalContext::set_dependency_profiles`).
    fn get_cargo_toml_contents(&self, state: &ContextState) -> String {
        let crate_imports = state.format_cargo_deps();
        format!(
            r#"
[package]
name = "{}"
version = "1.0.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]
path = "src/lib.rs"

[profile.dev]
opt-level = 2
debug = false
strip = "debuginfo"
rpath = true
lto = false
debug-assertions = true
codegen-units = 16
panic = 'unwind'
incremental = true
overflow-checks = true

[profile.dev.package.{}]
opt-level = {}
{}
[dependencies]
{}
"#,
            CRATE_NAME,
            CRATE_NAME,
            toml_opt_level(state.opt_level()),
            state.dependency_profiles(),
            crate_imports
        )
    }

    // Pass offline mode to cargo through .cargo/config.toml
    fn get_config_toml_contents(&self, state: &ContextState) -> String {
        format!(
            r#"
[net]
offline = {}
"#,
            state.offline_mode()
        )
    }
}

/// gpulab patch: an opt-level as TOML: a number bare, "s" and "z" quoted (`set_opt_level` only
/// accepts these).
fn toml_opt_level(level: &str) -> String {
    if level.bytes().all(|b| b.is_ascii_digit()) {
        level.to_owned()
    } else {
        format!("{level:?}")
    }
}

pub(crate) fn wrap_rustc() {
    match wrap_rustc_helper() {
        Err(error) => {
            eprintln!("Failed to wrap rustc: {error}");
            std::process::exit(-1);
        }
        Ok(exit_code) => {
            std::process::exit(exit_code);
        }
    }
}

pub(crate) fn wrap_rustc_helper() -> Result<i32> {
    let mut command = rustc_command()?;

    let cache_result = cache::access_cache(&command)?;
    if matches!(cache_result, CacheResult::Hit) {
        report_execution_so(&command)?;
        return Ok(0);
    }

    let output = command.output()?;

    std::io::stdout().write_all(&output.stdout)?;
    std::io::stderr().write_all(&output.stderr)?;

    if output.status.code() == Some(0) {
        let stderr = std::str::from_utf8(&output.stderr).context("Rustc emitted invalid UTF-8")?;
        let artifacts = read_artifacts(stderr);
        if let CacheResult::Miss(cache_miss) = cache_result {
            cache_miss.update_cache(&artifacts)?;
        }
        report_execution_so(&command)?;
    }

    Ok(output.status.code().unwrap_or(-1))
}

fn report_execution_so(command: &Command) -> Result<()> {
    let Some(source) = execution_so_source(command) else {
        return Ok(());
    };

    let Some(path_file) = std::env::var_os(EXECUTION_SO_PATH_ENV) else {
        return Ok(());
    };
    fs::write(path_file, source.to_string_lossy().as_bytes())?;

    Ok(())
}

fn compiled_so_path(cargo_stdout: &[u8]) -> Result<PathBuf, Error> {
    let expected_name = shared_object_name_from_crate_name(CRATE_NAME);

    for line in String::from_utf8_lossy(cargo_stdout).lines().rev() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };

        if message["reason"] != "compiler-artifact" || message["target"]["name"] != CRATE_NAME {
            continue;
        }

        let Some(filenames) = message["filenames"].as_array() else {
            continue;
        };

        if let Some(path) = filenames
            .iter()
            .filter_map(|filename| filename.as_str())
            .map(PathBuf::from)
            .find(|path| {
                path.file_name()
                    .is_some_and(|name| name == std::ffi::OsStr::new(&expected_name))
            })
        {
            return Ok(path);
        }
    }

    bail!(
        "Cargo did not report the path of the compiled shared object '{}'. Cargo stdout:\n{}",
        expected_name,
        String::from_utf8_lossy(cargo_stdout)
    );
}

fn execution_so_source(command: &Command) -> Option<PathBuf> {
    let mut args = command.get_args();
    let mut is_ctx = false;
    let mut out_dir = None;
    while let Some(arg) = args.next() {
        if arg == "--crate-name" {
            is_ctx = args.next().is_some_and(|name| name == CRATE_NAME);
        } else if arg == "--out-dir" {
            out_dir = args.next().map(PathBuf::from);
        }
    }
    if is_ctx {
        Some(out_dir?.join(shared_object_name_from_crate_name(CRATE_NAME)))
    } else {
        None
    }
}

fn rustc_command() -> Result<Command> {
    let mut args = std::env::args().peekable();
    args.next();
    let rustc = args.next().ok_or_else(|| anyhow!("Insufficient args"))?;
    let mut command = std::process::Command::new(rustc);

    if !should_force_dylibs() {
        command.args(args);
        return Ok(command);
    }

    let num_crate_types = std::env::args_os()
        .filter(|arg| arg == "--crate-type")
        .count();
    let core_extern = std::env::var(CORE_EXTERN_ENV)
        .with_context(|| format!("Internal env var {CORE_EXTERN_ENV}` not set"))?;

    let mut got_prefer_dynamic = false;
    while let Some(arg) = args.next() {
        if arg == "-C" {
            let next = args.peek();
            if next.map(|n| n == "prefer-dynamic").unwrap_or_default() {
                got_prefer_dynamic = true;
            }
        }
        if arg == "-Cprefer-dynamic" {
            got_prefer_dynamic = true;
        }

        // If a static library is being linked into this crate, then we modify the linker arguments
        // to make sure that the whole archive gets linked in, otherwise any symbol not referenced
        // by the functions in this crate (most of them) will be garbage collected by the linker.
        // This would be slightly nicer if we could just pass `-l static:+whole-archive=...` to
        // rustc, however rustc doesn't permit `+whole-archive` and `+bundle` at the same time which
        // is what we want.
        if arg == "-l" {
            let Some(next) = args.next() else { continue };
            if let Some(rest) = next.strip_prefix("static=") {
                command.arg("-Clink-arg=-Wl,--whole-archive");
                command.arg("-l").arg(rest);
                command.arg("-Clink-arg=-Wl,--no-whole-archive");
            } else {
                command.arg(arg);
                command.arg(next);
            }
            continue;
        }

        command.arg(&arg);

        // If we're compiling as a crate-type of lib and nothing else, then we tell rustc to also
        // compile as a dylib. We still need compile as type lib though, since otherwise cargo
        // recompiles every time - presumably because it detects that the lib file it asked for
        // isn't present.
        if arg == "--crate-type"
            && num_crate_types == 1
            && let Some(crate_type) = args.next()
        {
            command.arg(&crate_type);
            if crate_type == "lib" {
                command.arg("--crate-type");
                command.arg("dylib");
            }
        }
        // Make paths to our dependencies to use dylibs rather than rlibs.
        if arg == "--extern" {
            let ext = args.next().ok_or_else(|| anyhow!("Insufficient args"))?;
            let so_arg = map_extern_arg(&ext);
            command.arg(so_arg);
        }
    }
    command.arg("--extern").arg(core_extern);
    if !got_prefer_dynamic {
        command.arg("-C").arg("prefer-dynamic");
    }
    Ok(command)
}

fn should_force_dylibs() -> bool {
    std::env::var(crate::runtime::FORCE_DYLIB_ENV).is_ok()
}

fn map_extern_arg(ext: &str) -> OsString {
    if let Some((crate_name, path)) = ext.split_once('=') {
        let mut path = PathBuf::from(path);
        let mut so_arg = OsString::from(crate_name);
        // Remove the rlib prefix and add the shared object prefix (if any). On unix platforms this
        // is redundant because both are "lib", but it's necessary on Windows. We do it
        // unconditionally though because it's cheap and it makes sure the code always gets tested.
        if let Some(without_prefix) = path
            .file_name()
            .and_then(|f| f.to_str())
            .and_then(|f| f.strip_prefix(rlib_prefix()))
        {
            let prefix = shared_object_prefix();
            path = path.with_file_name(format!("{prefix}{without_prefix}"));
        }
        so_arg.push("=");
        let path = path.with_extension(shared_object_extension());
        // The shared object might not exist yet if we're doing a `cargo check`, so we only attempt
        // to use it if it actually exists.
        if path.exists() {
            so_arg.push(path);
            return so_arg;
        }
    }
    OsString::from(ext)
}

/// Run a cargo command prepared for the provided `code_block`, processing the
/// command's output.
fn run_cargo(
    mut command: std::process::Command,
    code_block: &CodeBlock,
) -> Result<std::process::Output, Error> {
    use std::io::BufRead;
    use std::io::Read;

    let mb_child = command
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let mut child = match mb_child {
        Ok(out) => out,
        Err(err) => bail!("Error running 'cargo rustc': {}", err),
    };

    // Collect stdout in a parallel thread
    let mut stdout = child.stdout.take().unwrap();
    let output_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf)?;
        Ok::<_, Error>(buf)
    });

    // Collect stderr synchronously
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut all_errors = Vec::new();
    for mb_line in stderr.split(10) {
        let mut line = mb_line?;
        tee_error_line(&line);
        all_errors.append(&mut line);
        all_errors.push(10);
    }

    let status = child.wait()?;
    let all_output = output_thread.join().expect("Panic in child thread")?;

    let cargo_output = std::process::Output {
        status,
        stdout: all_output,
        stderr: all_errors,
    };
    if cargo_output.status.success() {
        Ok(cargo_output)
    } else {
        let (errors, non_json_error) = errors_from_cargo_output(&cargo_output, code_block);
        if errors.is_empty() {
            if let Some(error) = non_json_error {
                bail!(Error::Message(error));
            } else {
                bail!(Error::Message(format!(
                    "Compilation failed, but no parsable errors were found. STDERR:\n\
                     {}\nSTDOUT:{}\n",
                    String::from_utf8_lossy(&cargo_output.stderr),
                    String::from_utf8_lossy(&cargo_output.stdout)
                )));
            }
        } else {
            bail!(Error::CompilationErrors(errors));
        }
    }
}

/// Process one line from cargo, either copying it to stderr or ignoring.
///
/// At this point it looks for messages about compiling dependency crates.
fn tee_error_line(line: &[u8]) {
    static CRATE_COMPILING: Lazy<regex::bytes::Regex> =
        Lazy::new(|| regex::bytes::Regex::new("^\\s*Compiling (\\w+)(?:\\s+.*)?$").unwrap());
    if let Some(captures) = CRATE_COMPILING.captures(line) {
        let crate_name = captures.get(1).unwrap().as_bytes();
        if crate_name != CRATE_NAME.as_bytes() {
            // write line and the following nl symbol as it was stripped before
            std::io::stderr()
                .write_all(line)
                .expect("Writing to stderr should not fail");
            eprintln!();
        }
    }
}

fn errors_from_cargo_output(
    cargo_output: &std::process::Output,
    code_block: &CodeBlock,
) -> (Vec<CompilationError>, Option<String>) {
    // Our compiler errors should all be in JSON format, but for errors from
    // Cargo errors, we need to add explicit matching for those errors that we
    // expect we might see.
    static KNOWN_NON_JSON_ERRORS: Lazy<Regex> =
        Lazy::new(|| Regex::new("(error: no matching package named)").unwrap());

    let stderr = String::from_utf8_lossy(&cargo_output.stderr);
    let stdout = String::from_utf8_lossy(&cargo_output.stdout);
    let mut non_json_error = None;
    let errors = stderr
        .lines()
        .chain(stdout.lines())
        .filter_map(|line| {
            serde_json::from_str(line)
                .ok()
                // gpulab patch: type probes' warnings are answers, not problems.
                .filter(|json| probed_type(json).is_none())
                .and_then(|json| CompilationError::opt_new(json, code_block))
                .or_else(|| {
                    if KNOWN_NON_JSON_ERRORS.is_match(line) {
                        non_json_error = Some(line.to_owned());
                    }
                    None
                })
        })
        .collect();
    (errors, non_json_error)
}

/// gpulab patch: make rustc print types with full visible paths (`std::collections::HashMap`,
/// `gpulab::Tensor`), which a later cell can write, rather than trimmed to a unique name
/// (`HashMap`), which it cannot unless it was imported; the second keeps long types from
/// being trimmed all the same. Unstable options: `RUSTC_BOOTSTRAP` set to the cell crate's name
/// allows them for that crate only.
const UNTRIMMED_FLAGS: [&str; 2] = [
    "-Ztrim-diagnostic-paths=no",
    "-Zwrite-long-types-to-disk=no",
];

/// gpulab patch: whether `rustc` accepts `UNTRIMMED_FLAGS` (a later rustc may drop them; then
/// every type comes from rust-analyzer, as upstream).
fn rustc_prints_untrimmed(rustc: &OsString, config: &Config) -> bool {
    let out = config
        .crate_dir()
        .join("target")
        .join("evcxr-untrimmed-check");
    let _ = fs::create_dir_all(&out);
    Command::new(rustc)
        .args([
            "--crate-name",
            CRATE_NAME,
            "--crate-type",
            "lib",
            "--emit=metadata",
        ])
        .arg("--out-dir")
        .arg(&out)
        .args(UNTRIMMED_FLAGS)
        .arg("-")
        .env("RUSTC_BOOTSTRAP", CRATE_NAME)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// gpulab patch: the type a probe's warning names, "unused result of type
/// `std::marker::PhantomData<T>`" (see `evcxr_internal_runtime::evcxr_type_probe`). A trimmed
/// answer (`PhantomData<T>`) does not match, so that variable's type is asked elsewhere.
fn probed_type(json: &serde_json::Value) -> Option<&str> {
    let message = if json["message"].is_object() {
        &json["message"]
    } else {
        json
    };
    if message["level"].as_str() != Some("warning")
        || message["code"]["code"].as_str() != Some("unused_results")
    {
        return None;
    }
    message["message"]
        .as_str()?
        .strip_prefix("unused result of type `std::marker::PhantomData<")?
        .strip_suffix(">`")
}

/// gpulab patch: the types a build's probes named, by the variable whose segment holds the
/// probe.
fn type_probes(output: &std::process::Output, code_block: &CodeBlock) -> HashMap<String, String> {
    use crate::code_block::CodeKind;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut types = HashMap::new();
    for line in stderr.lines() {
        let Ok(json) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(type_name) = probed_type(&json) else {
            continue;
        };
        let type_name = type_name.to_owned();
        let Some(warning) = CompilationError::opt_new(json, code_block) else {
            continue;
        };
        for origin in warning.code_origins {
            if let CodeKind::PackVariable { variable_name } = origin {
                types.insert(variable_name, type_name.clone());
            }
        }
    }
    types
}

/// gpulab patch: the rustc command cargo ran for the cell crate, with its environment, kept so
/// that the next cell can be built without cargo while the build's inputs stay the same.
struct DirectBuild {
    /// Everything cargo's decision depends on that can change during a session: the manifest,
    /// the lock file, cargo's configuration and the command evcxr would run.
    key: String,
    envs: Vec<(OsString, OsString)>,
    program: OsString,
    args: Vec<OsString>,
    so_file: PathBuf,
}

impl DirectBuild {
    /// The key for a build by `cargo`, or `None` when the crate has a path dependency outside
    /// `config.immutable_path_deps` (its sources may change between cells, and only cargo would
    /// notice) or anything cannot be read.
    fn key(config: &Config) -> Option<String> {
        let cargo = config.cargo_command("build");
        let dir = config.crate_dir();
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let parsed: toml::Value = toml::from_str(&manifest).ok()?;
        for table in ["dependencies", "build-dependencies"] {
            for (_, dep) in parsed
                .get(table)
                .and_then(|t| t.as_table())
                .into_iter()
                .flatten()
            {
                if let Some(path) = dep.get("path").and_then(|p| p.as_str()) {
                    let path = Path::new(path);
                    if !path.is_absolute()
                        || !config
                            .immutable_path_deps
                            .iter()
                            .any(|f| path.starts_with(f))
                    {
                        return None;
                    }
                }
            }
        }
        if parsed.get("patch").is_some() || parsed.get("workspace").is_some() {
            return None;
        }
        let lock = fs::read_to_string(dir.join("Cargo.lock")).unwrap_or_default();
        let cargo_config = fs::read_to_string(dir.join(".cargo/config.toml")).unwrap_or_default();
        Some(format!(
            "{manifest}\0{lock}\0{cargo_config}\0{:?}\0{:?}",
            cargo.get_args().collect::<Vec<_>>(),
            cargo.get_envs().collect::<Vec<_>>()
        ))
    }

    /// Finds cargo's `-vv` line for the cell crate, "Running `ENV=.. rustc --crate-name ctx ..`".
    fn from_cargo_stderr(stderr: &[u8], key: String) -> Option<DirectBuild> {
        let stderr = String::from_utf8_lossy(stderr);
        let line = stderr.lines().find_map(|line| {
            let rest = line.trim_start().strip_prefix("Running `")?;
            let rest = rest.strip_suffix('`')?;
            rest.contains(&format!(" --crate-name {CRATE_NAME} "))
                .then_some(rest)
        })?;
        let mut words = split_shell_words(line)?.into_iter().peekable();
        let mut envs = Vec::new();
        while let Some(word) = words.next_if(|w| is_env_assignment(w)) {
            let (name, value) = word.split_once('=')?;
            envs.push((OsString::from(name), OsString::from(value)));
        }
        let program = OsString::from(words.next()?);
        let args: Vec<OsString> = words.map(OsString::from).collect();
        // rustc writes the library into its --out-dir; cargo then copies it up a folder.
        let mut rustc = Command::new(&program);
        rustc.args(&args);
        let so_file = execution_so_source(&rustc)?;
        Some(DirectBuild {
            key,
            envs,
            program,
            args,
            so_file,
        })
    }

    fn command(&self, config: &Config) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .current_dir(config.crate_dir());
        command
    }
}

fn is_env_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        }
        None => false,
    }
}

/// Splits a command line as cargo prints it (POSIX shell quoting: words separated by spaces,
/// single-quoted stretches, backslash escapes outside quotes). `None` on anything else, such
/// as double quotes or an unterminated quote, so an unexpected format is never guessed at.
fn split_shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            '"' | '`' | '$' => return None,
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

pub(crate) struct SoFile {
    pub(crate) path: PathBuf,
}
