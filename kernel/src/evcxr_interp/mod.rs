//! The real interpreter: evcxr's `CommandContext` with the gpulab prelude preloaded, plus the
//! magics, panic reporting and interrupts that evcxr_jupyter lacks.

use crate::forward::{Forwarders, Sink};
use crate::interp::{
    Bundle, Completion, ExecuteOutcome, ExecuteRequest, Interpreter, Interrupter, Outputs,
};
use crate::magics::{self, Cell};
use crate::session::{self, InterruptFlag, Slot};
use crate::startup::{
    rust_libs_loader_path, Capture, ALLOW_QUESTION_MARK, GPU_NOTICE, PANIC_HOOK, PRELUDE_PROFILE,
};
use crate::stopper::Stopper;
use evcxr::{CommandContext, EvalCallbacks, EvalOutputs};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod magic_cells;

pub struct EvcxrInterpreter {
    ctx: Option<CommandContext>,
    forwarders: Option<Forwarders>,
    sink: Sink,
    stop: Arc<Stopper>,
    _slot: Option<Slot>,
    /// Why the session could not start.
    startup_error: Option<String>,
    /// The prelude is in scope (`use gpulab::*`).
    prelude_loaded: bool,
    /// Why the prelude could not be loaded, while it is not (each cell tries again first).
    prelude_error: Option<String>,
    /// Test hook (`GPULAB_TEST_PRELUDE_FAILURES=N` with `GPULAB_TEST_HOOKS=1`): the first N
    /// prelude loads point cargo at a missing folder, so the load really fails.
    injected_failures: u32,
    /// The one-line no-GPU notice, shown after the first cell that succeeds.
    notice: Option<String>,
    /// The prelude's dylib and its identity as the child process loaded it (see
    /// `restart_if_prelude_rebuilt`).
    prelude_dylib: Option<(PathBuf, FileIdentity)>,
    load_prelude: bool,
    /// What `%env` and `%cd` set, for what the kernel runs itself (`!cmd`, `%%bash`,
    /// `%%writefile`); the cell process gets it directly, and evcxr gives it to the children it
    /// restarts.
    around: magics::Surroundings,
}

impl EvcxrInterpreter {
    /// Sets the environment evcxr and its child read (the interrupt file, the build slot), so it
    /// must be called before any other thread starts: `set_var` races with threads reading the
    /// environment (it is `unsafe` in edition 2024). main calls it before the tokio runtime
    /// exists. Nothing slow happens here, so the sockets are bound within milliseconds.
    pub fn new(load_prelude: bool) -> anyhow::Result<EvcxrInterpreter> {
        Self::in_slot(load_prelude, session::take_slot())
    }

    /// As `new`, building in the given slot (`warm` builds the shared prebuilt prelude this way).
    pub fn in_slot(
        load_prelude: bool,
        slot: anyhow::Result<Slot>,
    ) -> anyhow::Result<EvcxrInterpreter> {
        let flag = InterruptFlag::create()?;
        // The evcxr child process inherits this; it is spawned after this point.
        std::env::set_var("GPULAB_INTERRUPT_FILE", &flag.path);
        let stop = Stopper::new(flag);
        // A slot that cannot be taken is reported by `start`, on the user's first cell.
        let (slot, startup_error) = match slot {
            Ok(slot) => {
                std::env::set_var("EVCXR_TMPDIR", &slot.dir);
                (Some(slot), None)
            }
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        Ok(EvcxrInterpreter {
            ctx: None,
            forwarders: None,
            sink: Sink::default(),
            stop,
            _slot: slot,
            startup_error,
            prelude_loaded: false,
            prelude_error: None,
            prelude_dylib: None,
            around: Default::default(),
            injected_failures: if std::env::var("GPULAB_TEST_HOOKS").is_ok_and(|v| v == "1") {
                std::env::var("GPULAB_TEST_PRELUDE_FAILURES")
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
            } else {
                0
            },
            notice: None,
            load_prelude,
        })
    }

    fn init(&mut self) -> Result<(), String> {
        let t0 = Instant::now();
        let log = |what: &str| {
            if std::env::var_os("GPULAB_LOG_STARTUP").is_some() {
                eprintln!(
                    "gpulab-kernel: {what} at {:.3} s",
                    t0.elapsed().as_secs_f64()
                );
            }
        };
        if let Some(e) = &self.startup_error {
            return Err(e.clone());
        }
        // evcxr's child is this binary again; the loader path goes on its command (evcxr keeps
        // the command and reuses it when it restarts the child), not into our environment.
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the kernel's own binary: {e}"))?;
        let mut child = std::process::Command::new(exe);
        if let Some(dir) = &self._slot {
            if let Some(path) = rust_libs_loader_path(&dir.dir) {
                child.env("LD_LIBRARY_PATH", path);
            }
        }
        let (mut eval, outputs) = evcxr::EvalContext::with_subprocess_command(child)
            .map_err(|e| format!("evcxr could not start: {e}"))?;
        // The extracted prelude's folder is named by the hash of its contents, so it never
        // changes under a session: cells may then skip cargo and call rustc directly (our
        // evcxr patch; any other path dependency, a `:dep` on a local crate, keeps cargo).
        if let Ok(prelude) = session::extract_prelude() {
            if let Some(sources) = prelude.parent() {
                eval.set_immutable_path_deps(vec![sources.to_owned()]);
            }
        }
        // The types of the variables a cell declares come from rustc, in the build that
        // compiles the cell (our evcxr patch): rust-analyzer, several hundred MB once loaded
        // and seconds to load, is then only started for completions, hover, and the rare cell
        // whose variable types rustc cannot name in a way a later cell can write.
        eval.set_types_from_rustc(true);
        if self.load_prelude {
            // Our evcxr patch: the prelude's own profile (release settings), in every build of
            // the session and of the prebuilt prelude alike, so cargo never sees a difference
            // between them (the text is part of the hash that names the prebuilt prelude).
            eval.set_dependency_profiles(PRELUDE_PROFILE.to_owned());
        }
        let ctx = CommandContext::with_eval_context(eval);
        log("evcxr context ready");
        *self.stop.child.lock().unwrap() = Some(ctx.process_handle());
        self.forwarders = Some(Forwarders::start(
            outputs.stdout,
            outputs.stderr,
            self.sink.clone(),
        ));
        // evcxr's `:cache` (compiled dependencies shared through ~/.cache/evcxr) is left off: its
        // entries are read and rewritten without locks, so kernels starting together broke
        // each other's prelude builds. Slots start from the shared prebuilt prelude instead.
        self.ctx = Some(ctx);
        if self.load_prelude {
            match self.load_prelude() {
                Ok(()) => log("prelude loaded, panic hook installed, GPU checked"),
                Err(e) => {
                    eprintln!("gpulab-kernel: the prelude could not be loaded: {e}");
                    self.prelude_error = Some(e);
                }
            }
        }
        if !self.prelude_loaded {
            if let Some(ctx) = self.ctx.as_mut() {
                ctx.execute(PANIC_HOOK)
                    .map_err(|e| format!("installing the panic hook: {e}"))?;
            }
            log("panic hook installed");
        }
        Ok(())
    }

    /// Loads the prelude, the panic hook and the GPU check in one eval (each eval is a cargo
    /// build). On failure evcxr keeps its previous state, so this can simply be tried again.
    fn load_prelude(&mut self) -> Result<(), String> {
        let prelude = session::extract_prelude().map_err(|e| format!("{e:#}"))?;
        if let Some(slot) = &self._slot {
            if slot.dir != session::prebuilt_dir() {
                match session::seed_slot(&slot.dir, &prelude) {
                    Ok(Some(n)) if n > 0 && std::env::var_os("GPULAB_LOG_STARTUP").is_some() => {
                        eprintln!(
                            "gpulab-kernel: slot {} started from the prebuilt prelude ({n} files)",
                            slot.dir.display()
                        )
                    }
                    Ok(_) => {}
                    // Not fatal: the session then compiles the prelude itself.
                    Err(e) => {
                        eprintln!("gpulab-kernel: could not start from the prebuilt prelude: {e:#}")
                    }
                }
            }
        }
        let mut path = prelude.display().to_string();
        if self.injected_failures > 0 {
            self.injected_failures -= 1;
            path = "/nonexistent/gpulab-test-hook/prelude".into();
        }
        let first = format!(
            ":dep gpulab = {{ path = {path:?} }}\nuse gpulab::*;\n{PANIC_HOOK}\n{GPU_NOTICE};\n{ALLOW_QUESTION_MARK}"
        );
        let mut ctx = self.ctx.take().ok_or("the session did not start")?;
        let result = self.capture(&mut ctx, &first);
        self.ctx = Some(ctx);
        let notice = result.map_err(|e| e.to_string())?;
        self.prelude_loaded = true;
        self.prelude_error = None;
        self.prelude_dylib = self.find_prelude_dylib();
        self.notice = notice
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        Ok(())
    }

    /// The prelude's dylib in this session's build slot, found once per prelude load (cargo
    /// names a path crate's dylib without a hash, so a rebuild replaces it under the same name).
    fn find_prelude_dylib(&self) -> Option<(PathBuf, FileIdentity)> {
        let target = self._slot.as_ref()?.dir.join("target");
        let mut dirs = vec![target.join("debug/deps")];
        if let Ok(entries) = std::fs::read_dir(&target) {
            dirs.extend(entries.flatten().map(|e| e.path().join("debug/deps")));
        }
        dirs.into_iter().find_map(|d| {
            let path = d.join("libgpulab.so");
            FileIdentity::of(&path).map(|id| (path, id))
        })
    }

    /// A `:dep` whose features differ from the prelude's for a crate they share (cargo builds
    /// one copy with the union of the features) rebuilds the prelude's dylib under the file
    /// name the child process has already loaded: the next cell could not be linked against
    /// it and the process ended (exit 99), every variable lost, with no word of why. When the
    /// file changed, the child is restarted now, and the cell says so; a cell whose own run
    /// already ended the process gets the reason added.
    fn restart_if_prelude_rebuilt(
        &mut self,
        mut outcome: ExecuteOutcome,
        outputs: &Arc<dyn Outputs>,
    ) -> ExecuteOutcome {
        let Some((path, loaded)) = self.prelude_dylib.as_mut().filter(|_| self.prelude_loaded)
        else {
            return outcome;
        };
        // One stat per cell.
        let Some(now) = FileIdentity::of(path).filter(|now| now != loaded) else {
            return outcome;
        };
        *loaded = now;
        let why = "gpulab's prelude was rebuilt: a dependency added with `:dep` asks for \
                   features of a crate the prelude also uses, and cargo builds one copy of it \
                   with both sets. The session's process must load the new prelude, so it was \
                   restarted";
        if let ExecuteOutcome::Error {
            ename,
            evalue,
            traceback,
        } = &mut outcome
        {
            // evcxr has already started a new process (it does after one ends).
            if ename == "ProcessEnded" {
                evalue.push_str(&format!("\n{why}."));
                traceback.push(format!("{why}."));
                return outcome;
            }
        }
        self.restart_now(outcome, why, outputs)
    }

    fn restart_now(
        &mut self,
        outcome: ExecuteOutcome,
        why: &str,
        outputs: &Arc<dyn Outputs>,
    ) -> ExecuteOutcome {
        let Some(ctx) = self.ctx.as_mut() else {
            return outcome;
        };
        let lost: Vec<String> = ctx
            .variables_and_types()
            .map(|(v, _)| v.to_owned())
            .collect();
        if let Err(e) = ctx.restart_child_process() {
            outputs.stream("stderr", &format!("{why}, but the restart failed: {e}\n"));
            return outcome;
        }
        self.stop.child_ended();
        self.reinstall_hook();
        outputs.stream(
            "stderr",
            &format!("{why}; variables lost: {}\n", names_or_none(&lost)),
        );
        outcome
    }

    /// Runs `code` with its output kept rather than shown; returns what it printed, if anything.
    fn capture(
        &self,
        ctx: &mut CommandContext,
        code: &str,
    ) -> Result<Option<String>, evcxr::Error> {
        let capture = Arc::new(Capture::default());
        let previous = self.sink.get();
        self.sink.set(capture.clone());
        let result = ctx.execute(code);
        self.finish_output();
        if let Some(p) = previous {
            self.sink.set(p);
        }
        let text = std::mem::take(&mut *capture.0.lock().unwrap());
        match result {
            Ok(_) => Ok((!text.is_empty()).then_some(text)),
            // What the child printed (a loader error, say) is the useful part of a failure.
            Err(e) => Err(evcxr::Error::Message(format!("{text}{e}"))),
        }
    }

    fn finish_output(&self) {
        if let Some(f) = &self.forwarders {
            f.flush();
        }
    }

    fn run_rust(
        &mut self,
        code: &str,
        outputs: &Arc<dyn Outputs>,
    ) -> (Result<EvalOutputs, evcxr::Error>, Vec<String>) {
        let ctx = self.ctx.as_mut().expect("session started");
        let vars_before: Vec<String> = ctx
            .variables_and_types()
            .map(|(v, _)| v.to_owned())
            .collect();
        let out = outputs.clone();
        let stop = self.stop.clone();
        let mut callbacks = EvalCallbacks {
            input_reader: &move |req| {
                ask_unless_interrupted(&out, &stop, &decode_prompt(&req.prompt), req.is_password)
            },
        };
        let result = ctx.execute_with_callbacks(code, &mut callbacks);
        if std::env::var_os("GPULAB_LOG_TIMING").is_some() {
            if let Ok(o) = &result {
                let phases: Vec<String> = o
                    .phases
                    .iter()
                    .map(|p| format!("{} {:.3}s", p.name, p.duration.as_secs_f64()))
                    .collect();
                eprintln!("gpulab-kernel: phases: {}", phases.join(", "));
            }
        }
        (result, vars_before)
    }

    fn reinstall_hook(&mut self) {
        if let Some(ctx) = self.ctx.as_mut() {
            let _ = ctx.execute(PANIC_HOOK);
        }
    }

    fn outcome(
        &mut self,
        result: Result<EvalOutputs, evcxr::Error>,
        vars_before: Vec<String>,
        code: &str,
        line_base: usize,
    ) -> ExecuteOutcome {
        self.finish_output();
        let panics = self.sink.take_panics();
        let user_errors = self.sink.take_user_errors();
        let interrupted = self.stop.interrupted();
        match result {
            Ok(outputs) => {
                if interrupted {
                    return ExecuteOutcome::error(
                        "KeyboardInterrupt",
                        "interrupted; the session's variables are kept",
                        vec![
                            "KeyboardInterrupt: the cell stopped early and every variable is kept"
                                .into(),
                        ],
                    );
                }
                if let Some((message, location)) = panics.into_iter().next() {
                    let location = self.cell_location(&location, code, line_base);
                    let mut tb = vec![
                        format!("\x1b[0;31mpanicked\x1b[0m at {location}:"),
                        message.clone(),
                    ];
                    tb.push("Variables defined by earlier cells are kept.".into());
                    return ExecuteOutcome::error("panic", message, tb);
                }
                if let Some(message) = user_errors.into_iter().next() {
                    let evalue = if message.is_empty() {
                        "the cell returned an error through `?`".to_owned()
                    } else {
                        message
                    };
                    let tb = vec![
                        format!("\x1b[0;31mError\x1b[0m: {evalue}"),
                        "The cell stopped at a `?`. Variables it defined are not kept; those of earlier cells are.".into(),
                    ];
                    return ExecuteOutcome::error("Error", evalue, tb);
                }
                let result = bundle(&outputs);
                ExecuteOutcome::Ok {
                    result,
                    payload: Vec::new(),
                }
            }
            Err(evcxr::Error::CompilationErrors(errors)) => {
                if interrupted {
                    return ExecuteOutcome::error("KeyboardInterrupt", "the build was stopped", vec!["KeyboardInterrupt: the build was stopped; the session's variables are kept".into()]);
                }
                let (evalue, traceback) = render_compile_errors(&errors, code);
                ExecuteOutcome::error("CompilationError", evalue, traceback)
            }
            Err(evcxr::Error::SubprocessTerminated(message)) => {
                self.stop.child_ended();
                self.reinstall_hook();
                let lost = names_or_none(&vars_before);
                let (ename, why) = if interrupted {
                    (
                        "KeyboardInterrupt",
                        "the cell did not stop within the grace period, so its process was ended"
                            .to_owned(),
                    )
                } else {
                    (
                        "ProcessEnded",
                        format!("the session's process ended: {message}"),
                    )
                };
                let evalue = format!("{why}; variables lost: {lost}");
                ExecuteOutcome::error(ename, evalue.clone(), vec![evalue])
            }
            Err(e) => {
                if interrupted {
                    // Killing cargo surfaces as a failed build rather than as compile errors.
                    return ExecuteOutcome::error("KeyboardInterrupt", "the build was stopped", vec!["KeyboardInterrupt: the build was stopped; the session's variables are kept".into()]);
                }
                let text = e.to_string();
                ExecuteOutcome::error("Error", text.clone(), vec![text])
            }
        }
    }

    /// `src/lib.rs:111:2` in evcxr's generated crate becomes `cell line 3`; other locations (the
    /// prelude, the standard library) stay as they are.
    fn cell_location(&self, location: &str, code: &str, line_base: usize) -> String {
        let mut parts = location.rsplitn(3, ':');
        let (_col, line, file) = (parts.next(), parts.next(), parts.next());
        let (Some(file), Some(line)) = (file, line.and_then(|l| l.parse::<usize>().ok())) else {
            return location.to_owned();
        };
        if file != "src/lib.rs" {
            return location.to_owned();
        }
        let Some(slot) = &self._slot else {
            return location.to_owned();
        };
        let Ok(generated) = std::fs::read_to_string(slot.dir.join("src").join("lib.rs")) else {
            return location.to_owned();
        };
        match cell_line(&generated, line, code) {
            Some(n) => format!("cell line {}", n + line_base),
            None => location.to_owned(),
        }
    }

    fn help(&mut self, name: &str) -> ExecuteOutcome {
        let ctx = self.ctx.as_mut().expect("session started");
        match ctx.hover_at(name, name.len()) {
            Ok((plain, html)) if !plain.trim().is_empty() => ExecuteOutcome::Ok {
                result: None,
                payload: vec![
                    json!({"source": "page", "data": {"text/plain": plain, "text/html": html}, "start": 0}),
                ],
            },
            Ok(_) => ExecuteOutcome::error(
                "NameError",
                format!("no documentation found for `{name}`"),
                vec![format!("no documentation found for `{name}`")],
            ),
            Err(e) => ExecuteOutcome::error(
                "NameError",
                format!("`{name}`: {e}"),
                vec![format!("`{name}`: {e}")],
            ),
        }
    }
}

fn bundle(outputs: &EvalOutputs) -> Option<Bundle> {
    if outputs.content_by_mime_type.is_empty() {
        return None;
    }
    Some(
        outputs
            .content_by_mime_type
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn render_compile_errors(errors: &[evcxr::CompilationError], code: &str) -> (String, Vec<String>) {
    let mut traceback = Vec::new();
    for error in errors {
        let mut rendered = None;
        if error.is_from_user_code() {
            if let Some(report) =
                error.build_report("cell".to_owned(), code.to_owned(), evcxr::Theme::Light)
            {
                let mut buf = Vec::new();
                if report
                    .write(
                        ariadne::sources([("cell".to_owned(), code.to_owned())]),
                        &mut buf,
                    )
                    .is_ok()
                {
                    rendered = Some(String::from_utf8_lossy(&buf).into_owned());
                }
            }
        }
        let text = rendered.unwrap_or_else(|| {
            let r = error.rendered();
            if r.is_empty() {
                error.message()
            } else {
                r
            }
        });
        traceback.push(text);
        for help in error.help() {
            traceback.push(format!("help: {help}"));
        }
    }
    let evalue = errors
        .first()
        .map(|e| e.message())
        .unwrap_or_else(|| "compilation failed".into());
    (evalue, traceback)
}

impl Interpreter for EvcxrInterpreter {
    fn start(&mut self, outputs: Arc<dyn Outputs>) {
        self.sink.set(outputs);
        if let Err(e) = self.init() {
            eprintln!("gpulab-kernel: {e}");
            self.startup_error = Some(e);
        }
        self.stop.started();
    }

    fn execute(&mut self, req: &ExecuteRequest, outputs: Arc<dyn Outputs>) -> ExecuteOutcome {
        self.sink.set(outputs.clone());
        if let Some(e) = &self.startup_error {
            return ExecuteOutcome::error("KernelStartError", e.clone(), vec![e.clone()]);
        }
        // A session without its prelude is never left silently without `use gpulab::*`: every
        // cell tries to load it again first, and says why it could not.
        if self.load_prelude && !self.prelude_loaded {
            self.stop.starting();
            let loaded = self.load_prelude();
            self.stop.started();
            if let Err(e) = loaded {
                let evalue = format!(
                    "gpulab's prelude (`use gpulab::*`) could not be loaded, so this cell did not run: {e}"
                );
                let tb = vec![
                    format!("\x1b[0;31mPreludeError\x1b[0m: {evalue}"),
                    "The kernel tries again when you run the next cell. If this keeps happening, restart the kernel; with GPULAB_NO_PRELUDE=1 in its environment it runs plain Rust without the prelude.".into(),
                ];
                self.prelude_error = Some(e);
                return ExecuteOutcome::error("PreludeError", evalue, tb);
            }
        }
        if !self.stop.start_cell() {
            return ExecuteOutcome::named(
                "KeyboardInterrupt",
                "interrupted before the cell started; it did not run",
            );
        }
        let outcome = self.run_cell(req.code, outputs.clone());
        self.stop.cell_finished();
        let outcome = self.restart_if_prelude_rebuilt(outcome, &outputs);
        // evcxr's `:clear` empties the session, its dependencies and `use`s included, so every
        // later cell failed with "cannot find type `Tensor`". Put the prelude back at once, as
        // a restarted kernel would have it; if that fails, the next cell tries again and says why.
        if self.load_prelude && clears_state(req.code) {
            self.prelude_loaded = false;
            let notice = self.notice.take(); // shown once per session, not again after a clear
            self.stop.starting();
            if let Err(e) = self.load_prelude() {
                self.prelude_error = Some(e);
            }
            self.stop.started();
            self.notice = notice;
        }
        // Information, not an error: one line, on the first cell that worked, so a failing
        // first cell still shows exactly its error.
        if matches!(outcome, ExecuteOutcome::Ok { .. }) && !req.silent {
            if let Some(notice) = self.notice.take() {
                let mut b = Bundle::new();
                b.insert("text/plain".into(), Value::String(notice.clone()));
                b.insert(
                    "text/html".into(),
                    Value::String(format!(
                        "<small style=\"opacity:0.7\">{}</small>",
                        html_escape(&notice)
                    )),
                );
                outputs.display(b, json!({}), None, false);
            }
        }
        outcome
    }

    fn complete(&mut self, code: &str, cursor: usize) -> Completion {
        let none = Completion {
            matches: Vec::new(),
            cursor_start: cursor,
            cursor_end: cursor,
        };
        if let Some((matches, start)) = magics::complete_magic(code, cursor) {
            return Completion {
                matches,
                cursor_start: start,
                cursor_end: cursor,
            };
        }
        if !magics::completes_as_rust(code) {
            return none;
        }
        let Some(ctx) = self.ctx.as_mut() else {
            return none;
        };
        match ctx.completions(code, cursor) {
            Ok(c) => Completion {
                matches: c
                    .completions
                    .into_iter()
                    .map(|c| completion_text(&c.code))
                    .collect(),
                cursor_start: c.start_offset,
                cursor_end: c.end_offset,
            },
            Err(_) => none,
        }
    }

    fn inspect(&mut self, code: &str, cursor: usize, _detail: u64) -> Option<Bundle> {
        let ctx = self.ctx.as_mut()?;
        // Hover wants the end of a name: extend the cursor over the identifier it sits in.
        let end = code[cursor.min(code.len())..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map(|i| cursor + i)
            .unwrap_or(code.len());
        let (plain, html) = ctx.hover_at(code, end).ok()?;
        if plain.trim().is_empty() {
            return None;
        }
        let mut b = Bundle::new();
        b.insert("text/plain".into(), Value::String(plain));
        b.insert("text/html".into(), Value::String(html));
        Some(b)
    }

    fn interrupter(&self) -> Arc<dyn Interrupter> {
        self.stop.clone()
    }

    fn shutdown(&mut self, _restart: bool) {
        self.stop.terminate();
    }
}

/// A file as the loader saw it: a rebuild replaces it (new inode) or rewrites it (new mtime).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    len: u64,
}

impl FileIdentity {
    fn of(path: &Path) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileIdentity {
            dev: m.dev(),
            ino: m.ino(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            len: m.len(),
        })
    }
}

/// Variable names for a "variables lost" message.
fn names_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Whether a cell holds evcxr's `:clear` command (a line of its own; not `:clear_cache`).
fn clears_state(code: &str) -> bool {
    code.lines()
        .any(|l| l.split_whitespace().next() == Some(":clear"))
}

fn fmt_dur(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// Asks the frontend for a line, unless the cell was interrupted, and gives up waiting when it
/// is: the worker must never sit on an `input_request` whose cell was stopped (the frontend's
/// late answer, if any, goes nowhere).
fn ask_unless_interrupted(
    out: &Arc<dyn Outputs>,
    stop: &Arc<Stopper>,
    prompt: &str,
    password: bool,
) -> String {
    if stop.interrupted() {
        return String::new();
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let (out, prompt) = (out.clone(), prompt.to_owned());
    std::thread::spawn(move || {
        let _ = tx.send(out.input(&prompt, password));
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(25)) {
            Ok(answer) => return answer.unwrap_or_default(),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return String::new(),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) if stop.interrupted() => {
                return String::new()
            }
            Err(_) => {}
        }
    }
}

/// The prelude's `input()` sends colons and newlines as look-alikes (prelude/src/input.rs).
fn decode_prompt(prompt: &str) -> String {
    prompt.replace('\u{A789}', ":").replace('\u{2028}', "\n")
}

/// How many lines of the cell come before `code` (the part after a `%%time` line, say).
fn line_base(cell: &str, code: &str) -> usize {
    let start = (code.as_ptr() as usize).wrapping_sub(cell.as_ptr() as usize);
    if start <= cell.len() {
        cell[..start].matches('\n').count()
    } else {
        0
    }
}

/// The 1-based line of `code` that evcxr put at line `gen_line` of its generated crate. evcxr
/// copies each statement of the cell into the generated file; the offset at which most of the
/// cell's lines line up is taken, so a line that appears twice in the cell is still placed.
pub fn cell_line(generated: &str, gen_line: usize, code: &str) -> Option<usize> {
    let g: Vec<&str> = generated.lines().map(str::trim).collect();
    let c: Vec<&str> = code.lines().map(str::trim).collect();
    let target = *g.get(gen_line.checked_sub(1)?)?;
    if target.is_empty() {
        return None;
    }
    let score = |i: usize| -> usize {
        let Some(offset) = (gen_line - 1).checked_sub(i) else {
            return 0;
        };
        c.iter()
            .enumerate()
            .filter(|(j, l)| !l.is_empty() && g.get(j + offset) == Some(*l))
            .count()
    };
    let exact = (0..c.len())
        .filter(|&i| c[i] == target)
        .max_by_key(|&i| (score(i), std::cmp::Reverse(i)));
    // A line holding several statements is split by evcxr; find the cell line that holds it.
    exact
        .or_else(|| (0..c.len()).find(|&i| c[i].contains(target)))
        .map(|i| i + 1)
}

/// rust-analyzer's snippets, as evcxr passes them on, carry the parameter names as text
/// (`zeros(shape, device)`); accepting one would insert them. Keep the name and the bracket.
pub fn completion_text(code: &str) -> String {
    let code = strip_tab_stops(code);
    if let Some(open) = code.find('(') {
        let name = &code[..open];
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '!');
        if is_name && code.ends_with(')') && code.len() > open + 2 {
            return code[..=open].to_owned();
        }
    }
    code
}

/// Removes `$1`, `${2}` and `${3:text}` (keeping `text`) tab stops.
fn strip_tab_stops(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            rest = &after[digits..];
        } else if let Some(body) = after.strip_prefix('{') {
            let d = body.chars().take_while(char::is_ascii_digit).count();
            match body[d..].find('}') {
                Some(close) if d > 0 => {
                    out.push_str(body[d..d + close].trim_start_matches(':'));
                    rest = &body[d + close + 1..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_insert_no_parameter_names() {
        assert_eq!(completion_text("zeros(shape, device)"), "zeros(");
        assert_eq!(
            completion_text("Tensor::zeros(${1:shape}, ${2:device})$0"),
            "Tensor::zeros("
        );
        assert_eq!(completion_text("len()"), "len()");
        assert_eq!(completion_text("vec![$0]"), "vec![]");
        assert_eq!(completion_text("Device"), "Device");
        assert_eq!(completion_text("costs $5"), "costs ");
    }

    #[test]
    fn generated_lines_map_back_to_the_cell() {
        let code = "let a = 1;\nlet b = 2;\npanic!(\"boom\");\nlet c = 3;";
        let generated = "fn f() {\nstuff\nlet a = 1;\nlet b = 2;\npanic!(\"boom\");\nlet c = 3;\n}";
        assert_eq!(cell_line(generated, 5, code), Some(3));
        assert_eq!(cell_line(generated, 2, code), None);
        let twice = "let x = 1;\nlet x = 1;";
        assert_eq!(cell_line("a\nlet x = 1;\nlet x = 1;", 3, twice), Some(2));
        assert_eq!(cell_line("let a = 1;", 1, "let a = 1; let b = 2;"), Some(1));
    }

    #[test]
    fn prompts_come_back_whole() {
        assert_eq!(decode_prompt("Your name\u{A789} "), "Your name: ");
        let cell = "%%time\nlet x = 1;";
        assert_eq!(line_base(cell, &cell[7..]), 1);
    }
}
