//! Interrupts (ARCHITECTURE.md, contract 2): the flag the prelude's loops read, then the
//! shell escape and any build, then, after a grace period, the child process itself.

use crate::interp::Interrupter;
use crate::session::InterruptFlag;
use std::process::Child;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Seconds a cell that never checks the interrupt flag gets before its process is ended.
fn grace() -> Duration {
    let secs = std::env::var("GPULAB_INTERRUPT_GRACE_SECS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

/// Everything an interrupt needs, shared between the worker (which runs cells) and the control
/// channel (which interrupts them).
pub struct Stopper {
    /// The grace timer outlives the call that arms it, so it holds the Stopper itself.
    me: Weak<Stopper>,
    pub flag: InterruptFlag,
    pub child: Mutex<Option<Arc<Mutex<Child>>>>,
    pub shell_pgid: AtomicI32,
    /// Bumped at the start of every cell; the grace timer only ends the cell it was armed for.
    cell: AtomicU64,
    running: Mutex<bool>,
}

impl Stopper {
    pub fn new(flag: InterruptFlag) -> Arc<Stopper> {
        Arc::new_cyclic(|me| Stopper {
            me: me.clone(),
            flag,
            child: Mutex::new(None),
            shell_pgid: AtomicI32::new(0),
            cell: AtomicU64::new(0),
            running: Mutex::new(false),
        })
    }

    /// Marks a new cell as running, with the interrupt flag cleared.
    pub fn cell_started(&self) {
        self.flag.set(false);
        self.cell.fetch_add(1, Ordering::SeqCst);
        *self.running.lock().unwrap() = true;
    }

    pub fn cell_finished(&self) {
        *self.running.lock().unwrap() = false;
    }

    pub fn interrupted(&self) -> bool {
        self.flag.is_set()
    }

    fn child_pid(&self) -> Option<i32> {
        let handle = self.child.lock().unwrap().clone()?;
        let pid = handle.lock().unwrap().id() as i32;
        Some(pid)
    }

    fn kill_shell(&self) {
        let pg = self.shell_pgid.load(Ordering::SeqCst);
        if pg > 0 {
            // SAFETY: signalling a process group we created.
            unsafe { libc::kill(-pg, libc::SIGKILL) };
        }
    }

    /// Ends cargo and rustc (a build in progress) without touching the child that holds the
    /// session's variables.
    fn kill_builds(&self) {
        for pid in descendants(std::process::id() as i32, self.child_pid()) {
            // SAFETY: signalling our own descendants.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    fn kill_child(&self) {
        if let Some(handle) = self.child.lock().unwrap().clone() {
            let _ = handle.lock().unwrap().kill();
        }
    }
}

impl Interrupter for Stopper {
    fn interrupt(&self) {
        self.flag.set(true);
        self.kill_shell();
        self.kill_builds();
        let cell = self.cell.load(Ordering::SeqCst);
        let Some(me) = self.me.upgrade() else { return };
        std::thread::spawn(move || {
            std::thread::sleep(grace());
            let running = me.running.lock().unwrap();
            if *running && me.cell.load(Ordering::SeqCst) == cell {
                me.kill_child();
            }
        });
    }

    fn terminate(&self) {
        self.kill_shell();
        self.kill_builds();
        self.kill_child();
    }
}

/// Processes below `root` in the process tree, leaves first, excluding `keep` and its subtree.
fn descendants(root: i32, keep: Option<i32>) -> Vec<i32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            // The command name is in parentheses and may contain spaces; the ppid follows it.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
            let ppid = after.split(' ').nth(1).and_then(|s| s.parse::<i32>().ok()).unwrap_or(0);
            parent_of.push((pid, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid) in &parent_of {
            if ppid == p && Some(pid) != keep {
                out.push(pid);
                frontier.push(pid);
            }
        }
    }
    out.reverse();
    out
}

