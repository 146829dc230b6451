use anyhow::{bail, Context, Result};
use gpulab_kernel::{
    connection::ConnectionInfo, evcxr_interp::EvcxrInterpreter, install, interp, server, session,
};
use std::sync::Arc;

const USAGE: &str = "usage:
  gpulab-kernel --connection-file FILE      run the kernel (Jupyter starts it this way)
  gpulab-kernel install [--user | --sys-prefix | --prefix DIR]
                        [--gpu-memory-fraction F] [--gpu-memory-limit SIZE]
                                             (a per-kernel GPU memory cap, e.g. 0.1 or 4GiB)
  gpulab-kernel uninstall [--user | --sys-prefix | --prefix DIR]
  gpulab-kernel warm                         build the prelude once so the first cell is fast
  gpulab-kernel clean [--dry-run]            remove what older gpulab versions left (sources,
                                             prebuilt preludes, idle build slots that built them)
  gpulab-kernel --version";

fn main() {
    // As evcxr's child process, relay the streams first (kernel/src/child.rs).
    gpulab_kernel::child::install();
    // When this binary is re-run as evcxr's child process or rustc wrapper, this never returns.
    evcxr::runtime_hook();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("gpulab-kernel: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("install") => install::install(&args[1..]),
        Some("uninstall") => install::uninstall(&args[1..]),
        Some("warm") => warm(),
        Some("clean") => {
            let dry_run = match &args[1..] {
                [] => false,
                [flag] if flag == "--dry-run" || flag == "-n" => true,
                _ => bail!("{USAGE}"),
            };
            let report = gpulab_kernel::clean::clean(dry_run)?;
            gpulab_kernel::clean::print(&report, dry_run);
            Ok(())
        }
        Some("--version") | Some("-V") => {
            println!("gpulab-kernel {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Some("--connection-file") | Some("-f") => {
            let path = args.get(1).context("--connection-file needs a path")?;
            kernel(path)
        }
        Some(path) if path.ends_with(".json") => kernel(path),
        _ => bail!("{USAGE}"),
    }
}

fn kernel(path: &str) -> Result<()> {
    install::ensure_toolchain_on_path();
    let conn = ConnectionInfo::from_file(std::path::Path::new(path))?;
    let interp = EvcxrInterpreter::new(std::env::var_os("GPULAB_NO_PRELUDE").is_none())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(server::serve(
        conn,
        gpulab_kernel::config(),
        Box::new(interp),
    ))?;
    // The worker thread may still be inside a cell; leave without waiting for it.
    std::process::exit(0);
}

/// Prints what a session prints, for `warm`.
struct Console;

impl interp::Outputs for Console {
    fn stream(&self, _name: &str, text: &str) {
        eprint!("{text}");
    }
    fn display(
        &self,
        data: interp::Bundle,
        _m: serde_json::Value,
        _id: Option<String>,
        _update: bool,
    ) {
        eprintln!(
            "[display: {}]",
            data.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    fn clear_output(&self, _wait: bool) {}
    fn input(&self, _prompt: &str, _password: bool) -> Option<String> {
        None
    }
}

/// Builds the shared prebuilt prelude (session::prebuilt_dir) once, so that every new build
/// slot on this machine starts from it instead of compiling the prelude and its dependencies.
/// Where that folder cannot be written (a system-wide kernelspec warmed by a user), warms the
/// user's own build slot instead.
fn warm() -> Result<()> {
    warm_prebuilt()?;
    // After an update the older version's folders are still there: say what `clean` would free.
    if let Ok(report) = gpulab_kernel::clean::clean(true) {
        if report.freed() > 0 {
            println!(
                "older gpulab versions left {} here: `gpulab-kernel clean` removes them \
                 (`--dry-run` lists them)",
                gpulab_kernel::clean::mib(report.freed())
            );
        }
    }
    Ok(())
}

fn warm_prebuilt() -> Result<()> {
    let toolchain = session::toolchain_id();
    if session::prebuilt_ready(&toolchain) {
        println!(
            "gpulab prelude already prebuilt in {}",
            session::prebuilt_dir().display()
        );
        return Ok(());
    }
    match session::take_prebuilt_slot() {
        Ok(slot) => {
            // Another warm may have finished it while this one waited for the lock.
            if session::prebuilt_ready(&toolchain) {
                println!(
                    "gpulab prelude already prebuilt in {}",
                    session::prebuilt_dir().display()
                );
                return Ok(());
            }
            session::unmark_prebuilt(&slot);
            let dir = slot.dir.clone();
            // The session below owns the slot and drops it when done; this keeps the folder
            // locked until it is marked complete.
            let _held = slot.hold()?;
            warm_in(Ok(slot))?;
            session::mark_prebuilt(&dir, &toolchain)?;
            println!(
                "gpulab prelude prebuilt for every session in {}",
                dir.display()
            );
            Ok(())
        }
        Err(e) => {
            eprintln!(
                "gpulab-kernel: cannot write the shared prebuilt prelude ({e:#}); warming this user's build slot instead"
            );
            warm_in(session::take_slot())
        }
    }
}

/// Starts a session the way the kernel does in `slot` and runs one prelude cell.
fn warm_in(slot: Result<session::Slot>) -> Result<()> {
    use interp::Interpreter;
    let start = std::time::Instant::now();
    let mut interp = EvcxrInterpreter::in_slot(true, slot)?;
    let out: Arc<dyn interp::Outputs> = Arc::new(Console);
    interp.start(out.clone());
    let req = interp::ExecuteRequest {
        code: "println!(\"prelude ready: cuda available = {}\", cuda::is_available());",
        silent: false,
        allow_stdin: false,
        execution_count: 1,
    };
    let outcome = interp.execute(&req, out);
    interp.shutdown(false);
    match outcome {
        interp::ExecuteOutcome::Ok { .. } => {
            println!(
                "gpulab prelude built and cached in {:.1} s",
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        interp::ExecuteOutcome::Error {
            ename,
            evalue,
            traceback,
        } => {
            bail!(
                "warm-up cell failed: {ename}: {evalue}\n{}",
                traceback.join("\n")
            )
        }
    }
}
