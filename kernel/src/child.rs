//! Runs inside evcxr's child process (this binary re-executed, see `main`), before evcxr's
//! runtime takes over. It puts a thin relay on the child's stdin, stdout and stderr so the
//! kernel learns two things evcxr keeps to itself (ARCHITECTURE.md, contract 2):
//!
//! - **when the user's code is running**: evcxr tells its runtime to run a cell with a
//!   `LOAD_AND_RUN` line on stdin and the runtime answers `EVCXR_EXECUTION_COMPLETE` on stdout.
//!   The relay writes byte 1 of the interrupt flag file (1 while a cell's code runs), so an
//!   interrupt that lands while evcxr is still analysing or building never kills the child;
//! - **when a `?` ended the cell**: evcxr's generated code prints the error's Display on stderr
//!   and then `EVCXR_ERROR_OCCURRED` on stdout, which evcxr swallows. The relay turns the two
//!   into one display-channel line `{"op":"user_error","message":…}` before the marker, so the
//!   kernel can end the cell with an `error`.
//!
//! Everything else passes through unchanged. Output still in the relay when the process
//! aborts or exits is written out by a SIGABRT handler and an `atexit` hook.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Set by evcxr in the environment of its child process.
const RUNTIME_VAR: &str = "EVCXR_IS_RUNTIME";
const LOAD_AND_RUN: &[u8] = b"LOAD_AND_RUN ";
const EXECUTION_COMPLETE: &[u8] = b"EVCXR_EXECUTION_COMPLETE";
const ERROR_OCCURRED: &[u8] = b"EVCXR_ERROR_OCCURRED";
/// How long stderr text is held back in case a `?` marker follows it. evcxr prints the error
/// and the marker back to back, so this only needs to cover a scheduling hiccup.
const HOLD: Duration = Duration::from_millis(30);

/// Offset of the "a cell's code is running" byte in the interrupt flag file.
pub const RUNNING_BYTE: u64 = 1;

static OUT_R: AtomicI32 = AtomicI32::new(-1);
static ERR_R: AtomicI32 = AtomicI32::new(-1);
static REAL_OUT: AtomicI32 = AtomicI32::new(-1);
static REAL_ERR: AtomicI32 = AtomicI32::new(-1);

/// Installs the relay when this process is evcxr's child; does nothing otherwise. Must run
/// before `evcxr::runtime_hook()` and before any other thread starts.
pub fn install() {
    if std::env::var_os(RUNTIME_VAR).is_none() {
        return;
    }
    let flag = std::env::var_os("GPULAB_INTERRUPT_FILE")
        .and_then(|p| File::options().read(true).write(true).open(p).ok());
    // A relay that cannot be set up leaves the streams as they were: the kernel then falls back
    // to its old behaviour (see stopper.rs), which is worse but not broken.
    if let Err(e) = relay(flag) {
        eprintln!("gpulab-kernel: could not relay the session's streams: {e}");
    }
}

fn cloexec_dup(fd: RawFd) -> std::io::Result<RawFd> {
    // SAFETY: duplicating a descriptor we hold.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(new)
}

fn pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

fn dup2(from: RawFd, to: RawFd) -> std::io::Result<()> {
    // SAFETY: plain descriptor juggling; `to` is one of 0, 1, 2 (dup2 clears its CLOEXEC, so
    // programs the cell starts inherit the relay's ends, as they inherited the originals).
    if unsafe { libc::dup2(from, to) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `from` is ours and now duplicated.
    unsafe { libc::close(from) };
    Ok(())
}

fn relay(flag: Option<File>) -> std::io::Result<()> {
    let real_in = cloexec_dup(0)?;
    let real_out = cloexec_dup(1)?;
    let real_err = cloexec_dup(2)?;
    let (in_r, in_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    dup2(in_r, 0)?;
    dup2(out_w, 1)?;
    dup2(err_w, 2)?;
    OUT_R.store(out_r, Ordering::SeqCst);
    ERR_R.store(err_r, Ordering::SeqCst);
    REAL_OUT.store(real_out, Ordering::SeqCst);
    REAL_ERR.store(real_err, Ordering::SeqCst);
    let flag = flag.map(std::sync::Arc::new);
    let flag_in = flag.clone();
    // SAFETY: descriptors created above and owned by these threads from here on.
    let (from, to) = unsafe { (File::from_raw_fd(real_in), File::from_raw_fd(in_w)) };
    std::thread::Builder::new()
        .name("gpulab-stdin".into())
        .spawn(move || pump_stdin(from, to, flag_in.as_deref()))?;
    std::thread::Builder::new()
        .name("gpulab-output".into())
        .spawn(move || pump_output(flag.as_deref()))?;
    // SAFETY: installing process-wide hooks that only use async-signal-safe calls.
    unsafe {
        libc::atexit(drain_at_exit);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
    }
    Ok(())
}

fn set_running(flag: Option<&File>, on: bool) {
    if let Some(f) = flag {
        let _ = f.write_at(&[on as u8], RUNNING_BYTE);
    }
}

fn pump_stdin(from: File, mut to: File, flag: Option<&File>) {
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.starts_with(LOAD_AND_RUN) {
            set_running(flag, true);
        }
        if to.write_all(&line).is_err() {
            break;
        }
    }
    // Dropping `to` closes the runtime's stdin, so it exits as it would have.
}

fn write_fd(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writing from a live buffer to a descriptor we own.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Reads what is available on `fd` without blocking; false at end of file or on error.
fn read_available(fd: RawFd, into: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 8192];
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack.
        if unsafe { libc::poll(&mut p, 1, 0) } <= 0
            || p.revents & (libc::POLLIN | libc::POLLHUP) == 0
        {
            return true;
        }
        // SAFETY: reading into a stack buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
        }
        into.extend_from_slice(&buf[..n as usize]);
    }
}

fn pump_output(flag: Option<&File>) {
    let (out_r, err_r) = (OUT_R.load(Ordering::SeqCst), ERR_R.load(Ordering::SeqCst));
    let (real_out, real_err) = (
        REAL_OUT.load(Ordering::SeqCst),
        REAL_ERR.load(Ordering::SeqCst),
    );
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut err_since = Instant::now();
    let (mut out_open, mut err_open) = (true, true);
    let mut sync: u64 = 0;
    // Whether stderr text went out since the last sync line.
    let mut err_written = false;
    while out_open || err_open {
        let timeout = if err.is_empty() {
            -1
        } else {
            HOLD.saturating_sub(err_since.elapsed()).as_millis() as i32
        };
        let mut fds = [
            libc::pollfd {
                fd: if err_open { err_r } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if out_open { out_r } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds on the stack.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        // stderr first: whatever a cell printed there before a marker on stdout is in the pipe
        // by the time the marker is, because the same thread wrote both in that order.
        if err_open && fds[0].revents != 0 {
            let was_empty = err.is_empty();
            err_open = read_available(err_r, &mut err);
            if was_empty && !err.is_empty() {
                err_since = Instant::now();
            }
        }
        if out_open && fds[1].revents != 0 {
            out_open = read_available(out_r, &mut out);
            while let Some(end) = out.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = out.drain(..=end).collect();
                let body = &line[..line.len() - 1];
                if body == ERROR_OCCURRED {
                    read_available(err_r, &mut err);
                    let message = String::from_utf8_lossy(&err).trim_end().to_owned();
                    err.clear();
                    let event = serde_json::json!({"op": "user_error", "message": message});
                    write_fd(
                        real_out,
                        format!("{}{}\n", crate::forward::DISPLAY_PREFIX, event).as_bytes(),
                    );
                } else if body == EXECUTION_COMPLETE {
                    set_running(flag, false);
                    // The cell is over: stderr held back for a `?` marker that did not come
                    // must reach the kernel before the marker does, or it would trail the
                    // cell's reply and be lost (`eprintln!` as a cell's last act).
                    read_available(err_r, &mut err);
                    if !err.is_empty() {
                        write_fd(real_err, &err);
                        err.clear();
                        err_written = true;
                    }
                    // evcxr reads our stderr on a thread of its own, so getting there first is
                    // not enough: the same numbered line on both streams lets the kernel wait
                    // until its stderr reader has caught up (forward.rs, `flush`). Only after a
                    // cell that wrote to stderr: evcxr's own start-up run must print nothing
                    // on stdout, since nobody reads it yet and evcxr waits until it is read.
                    if std::mem::take(&mut err_written) {
                        sync += 1;
                        let marker = format!("{}{sync}\n", crate::forward::SYNC_PREFIX);
                        write_fd(real_err, marker.as_bytes());
                        write_fd(real_out, marker.as_bytes());
                    }
                }
                write_fd(real_out, &line);
            }
            if !out_open && !out.is_empty() {
                write_fd(real_out, &out);
                out.clear();
            }
        }
        if !err.is_empty() && (err_since.elapsed() >= HOLD || !err_open) {
            write_fd(real_err, &err);
            err.clear();
            err_written = true;
        }
    }
}

/// Writes out what is still in the relay's pipes. Only async-signal-safe calls.
fn drain_now() {
    let mut buf = [0u8; 4096];
    for (from, to) in [(&ERR_R, &REAL_ERR), (&OUT_R, &REAL_OUT)] {
        let (from, to) = (from.load(Ordering::SeqCst), to.load(Ordering::SeqCst));
        if from < 0 || to < 0 {
            continue;
        }
        loop {
            let mut p = libc::pollfd {
                fd: from,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll, read and write are async-signal-safe; the buffer is on the stack.
            unsafe {
                if libc::poll(&mut p, 1, 0) <= 0 || p.revents & libc::POLLIN == 0 {
                    break;
                }
                let n = libc::read(from, buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    break;
                }
                libc::write(to, buf.as_ptr().cast(), n as usize);
            }
        }
    }
}

extern "C" fn drain_at_exit() {
    drain_now();
}

extern "C" fn on_abort(_sig: libc::c_int) {
    drain_now();
    // SAFETY: restoring the default action and re-raising, so the process still aborts.
    unsafe {
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
        libc::raise(libc::SIGABRT);
    }
}
