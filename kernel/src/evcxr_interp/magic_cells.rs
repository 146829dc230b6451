//! What a cell is run as, once `magics::classify` has read it: Rust through evcxr, or one of
//! the magics (run here, in the kernel, or as Rust the cell process runs for them).

use super::*;

impl EvcxrInterpreter {
    /// Runs `cell` (the cell's whole text) as what `magics::classify` says it is.
    pub(super) fn run_cell(&mut self, cell: &str, outputs: Arc<dyn Outputs>) -> ExecuteOutcome {
        match magics::classify(cell) {
            Cell::Shell(commands) => {
                let mut outcome = ExecuteOutcome::ok();
                for cmd in commands {
                    if let Err(e) =
                        magics::run_shell(cmd, &self.around, &*outputs, &self.stop.shell_pgid)
                    {
                        outcome = ExecuteOutcome::error(
                            "OSError",
                            format!("could not run `{cmd}`: {e}"),
                            vec![],
                        );
                        break;
                    }
                    if self.stop.interrupted() {
                        outcome = ExecuteOutcome::error(
                            "KeyboardInterrupt",
                            format!("`{cmd}` was stopped"),
                            vec![],
                        );
                        break;
                    }
                }
                outcome
            }
            Cell::Show { mime, plain, body } => {
                let mut data = crate::interp::Bundle::new();
                data.insert(mime.into(), body.into());
                data.insert("text/plain".into(), plain.unwrap_or(body).into());
                outputs.display(data, serde_json::json!({}), None, false);
                ExecuteOutcome::ok()
            }
            Cell::Script(script) => {
                let ran = magics::run_in(
                    script.shell,
                    script.body,
                    &self.around,
                    &*outputs,
                    &self.stop.shell_pgid,
                );
                match ran {
                    _ if self.stop.interrupted() => ExecuteOutcome::error(
                        "KeyboardInterrupt",
                        format!("the %%{} script was stopped", script.shell),
                        vec![],
                    ),
                    Err(e) => ExecuteOutcome::error(
                        "OSError",
                        format!("could not run {}: {e}", script.shell),
                        vec![],
                    ),
                    Ok(rc) if rc != 0 && script.raise_error => {
                        let why = if rc < 0 {
                            format!(
                                "Command '{}' (the cell's script) was ended by a signal.",
                                script.shell
                            )
                        } else {
                            format!(
                            "Command '{}' (the cell's script) returned non-zero exit status {rc}.",
                            script.shell
                        )
                        };
                        ExecuteOutcome::error(
                            "CalledProcessError",
                            why.clone(),
                            vec![
                                format!("CalledProcessError: {why}"),
                                format!(
                                    "(%%{} --no-raise-error lets a failing script pass)",
                                    script.shell
                                ),
                            ],
                        )
                    }
                    Ok(_) => ExecuteOutcome::ok(),
                }
            }
            Cell::Help(name) => self.help(name),
            Cell::Time(code) => {
                let start = Instant::now();
                let (result, vars) = self.run_rust(code, &outputs);
                let wall = start.elapsed();
                let run = result.as_ref().ok().and_then(|o| {
                    o.phases
                        .iter()
                        .find(|p| p.name == "Execution")
                        .map(|p| p.duration)
                });
                let outcome = self.outcome(result, vars, code, line_base(cell, code));
                let line = match run {
                    Some(run) => format!(
                        "compile: {}, run: {}, total: {}\n",
                        fmt_dur(wall.saturating_sub(run)),
                        fmt_dur(run),
                        fmt_dur(wall)
                    ),
                    None => format!("total: {}\n", fmt_dur(wall)),
                };
                outputs.stream("stdout", &line);
                outcome
            }
            Cell::Timeit(_) if !self.load_prelude => {
                let why = "%timeit runs through gpulab's prelude, which this session does not load (GPULAB_NO_PRELUDE)";
                ExecuteOutcome::named("UsageError", why)
            }
            Cell::Timeit(t) => {
                let code = magics::timeit_cell_code(cell, &t);
                let (result, vars) = self.run_rust(&code, &outputs);
                self.outcome(result, vars, &code, 0)
            }
            Cell::Env(env) => {
                let code = magics::env_cell_code(&env);
                let (result, vars) = self.run_rust(&code, &outputs);
                match self.outcome(result, vars, &code, 0) {
                    ExecuteOutcome::Error { ename, evalue, .. } if ename == "Error" => {
                        ExecuteOutcome::named("UsageError", evalue)
                    }
                    ok @ ExecuteOutcome::Ok { .. } => {
                        if let magics::Env::Set { name, value } = env {
                            if let Some(ctx) = self.ctx.as_mut() {
                                ctx.set_child_env(name, value);
                            }
                            self.around.env.insert(name.to_owned(), value.to_owned());
                            outputs.stream("stdout", &format!("env: {name}={value}\n"));
                        }
                        ok
                    }
                    other => other,
                }
            }
            Cell::Who { table, types } => {
                let vars: Vec<(String, String)> = self
                    .ctx
                    .as_ref()
                    .map(|ctx| {
                        ctx.variables_and_types()
                            .map(|(n, t)| (n.to_owned(), t.to_owned()))
                            .collect()
                    })
                    .unwrap_or_default();
                outputs.stream("stdout", &magics::who(&vars, table, &types));
                ExecuteOutcome::ok()
            }
            Cell::Pwd => {
                let here = self.around.here();
                let mut data = crate::interp::Bundle::new();
                data.insert(
                    "text/plain".into(),
                    format!("{:?}", here.display().to_string()).into(),
                );
                ExecuteOutcome::Ok {
                    result: Some(data),
                    payload: Vec::new(),
                }
            }
            Cell::Cd { arg, quiet } => self.cd(arg, quiet, &outputs),
            Cell::LsMagic => {
                outputs.stream("stdout", &format!("{}\n", magics::MAGICS));
                ExecuteOutcome::ok()
            }
            Cell::WriteFile { path, append, body } => {
                match magics::write_file(path, append, body, self.around.dir.as_deref()) {
                    Ok(said) => {
                        outputs.stream("stdout", &said);
                        ExecuteOutcome::ok()
                    }
                    Err(why) => ExecuteOutcome::named("OSError", why),
                }
            }
            Cell::BadMagic(why) => ExecuteOutcome::named("UsageError", why),
            Cell::Cuda(source) => {
                let code = magics::cuda_cell_code(source);
                let (result, vars) = self.run_rust(&code, &outputs);
                match self.outcome(result, vars, &code, 0) {
                    // NVRTC's log already names the cell's lines; the `?` explanation would not help.
                    ExecuteOutcome::Error { ename, evalue, .. } if ename == "Error" => {
                        let ename = if evalue.starts_with("NVRTC") {
                            "CUDACompileError"
                        } else {
                            "CUDAError"
                        };
                        ExecuteOutcome::error(ename, evalue.clone(), vec![evalue])
                    }
                    other => other,
                }
            }
            Cell::Rust(code) => {
                let (result, vars) = self.run_rust(code, &outputs);
                // After evcxr's `:timing`, each cell says how long it took (as evcxr_jupyter).
                if let Some(took) = result.as_ref().ok().and_then(|o| o.timing) {
                    outputs.stream("stdout", &format!("Took {}\n", fmt_dur(took)));
                }
                self.outcome(result, vars, code, line_base(cell, code))
            }
        }
    }

    /// `%cd`: the cell process moves there (`set_current_dir`), and so do the processes evcxr
    /// restarts and what the kernel runs itself. IPython prints the new folder.
    fn cd(&mut self, arg: Option<&str>, quiet: bool, outputs: &Arc<dyn Outputs>) -> ExecuteOutcome {
        let here = self.around.here();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let fail = |why: String| ExecuteOutcome::named("OSError", why);
        let dir =
            match magics::cd_target(arg, &here, self.around.previous.as_deref(), home.as_deref()) {
                Ok(dir) => dir,
                Err(why) => return fail(why),
            };
        let Some(text) = dir.to_str() else {
            return fail(format!(
                "%cd: {} is not UTF-8, which a Rust string literal needs",
                dir.display()
            ));
        };
        // No leading `::`: evcxr takes a line starting with `:` for one of its commands.
        let code = format!("std::env::set_current_dir({text:?})?;");
        let (result, vars) = self.run_rust(&code, outputs);
        let outcome = self.outcome(result, vars, &code, 0);
        if matches!(outcome, ExecuteOutcome::Ok { .. }) {
            if let Some(ctx) = self.ctx.as_mut() {
                ctx.set_child_dir(&dir);
            }
            self.around.previous = Some(here);
            self.around.dir = Some(dir.clone());
            if !quiet {
                outputs.stream("stdout", &format!("{}\n", dir.display()));
            }
        }
        outcome
    }
}
