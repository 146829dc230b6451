//! Interrupts (ARCHITECTURE.md, contract 2): the flag the prelude's loops read, then the
//! shell escape and any build, then, only once the cell's own code runs and only after a grace
//! period, the child process itself. Nothing is touched while the session starts.

use crate::interp::Interrupter;
use crate::session::InterruptFlag;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Seconds a cell that never checks the interrupt flag gets before its process is ended.
fn grace() -> Duration {
    let secs = std::env::var("GPULAB_INTERRUPT_GRACE_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

/// How often the interrupt watcher looks at the cell.
const POLL: Duration = Duration::from_millis(25);

/// Everything an interrupt needs, shared between the worker (which runs cells) and the control
/// channel (which interrupts them).
pub struct Stopper {
    /// The interrupt watcher outlives the call that starts it, so it holds the Stopper itself.
    me: Weak<Stopper>,
    pub flag: InterruptFlag,
    pub child: Mutex<Option<Arc<Mutex<Child>>>>,
    pub shell_pgid: AtomicI32,
    /// Bumped at the start of every cell; a watcher only acts on the cell it was started for.
    cell: AtomicU64,
    running: Mutex<bool>,
    /// The session is still starting (evcxr, the prelude's build): nothing may be touched.
    starting: AtomicBool,
    /// An interrupt arrived during start-up, or while the cell it was meant for still waited on
    /// the worker's queue: the next cell is cancelled instead of run.
    cancel_next: AtomicBool,
    /// The cell a watcher is already looking after, so repeated presses start only one.
    watched: AtomicU64,
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
            starting: AtomicBool::new(true),
            cancel_next: AtomicBool::new(false),
            watched: AtomicU64::new(0),
        })
    }

    /// The session is busy getting ready (start-up, or a prelude load a cell retries): an
    /// interrupt now cancels the cell that waits for it rather than touching anything.
    pub fn starting(&self) {
        self.starting.store(true, Ordering::SeqCst);
    }

    /// The session has started; from now on interrupts act on cells.
    pub fn started(&self) {
        self.starting.store(false, Ordering::SeqCst);
    }

    /// Marks a new cell as running, with the interrupt flag cleared, unless an interrupt
    /// arrived before it started (during start-up, or while it waited on the queue): then
    /// returns false and the cell must not run. Decided under the lock `interrupt` takes, so an
    /// interrupt lands either before the cell started (cancelling it) or on the running cell.
    pub fn start_cell(&self) -> bool {
        let mut running = self.running.lock().unwrap();
        if self.cancel_next.swap(false, Ordering::SeqCst) {
            return false;
        }
        self.flag.set(false);
        self.flag.clear_running();
        self.cell.fetch_add(1, Ordering::SeqCst);
        *running = true;
        true
    }

    pub fn cell_finished(&self) {
        *self.running.lock().unwrap() = false;
    }

    /// The child was ended (by the watcher or otherwise) while it ran code.
    pub fn child_ended(&self) {
        self.flag.clear_running();
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

    fn same_cell_running(&self, cell: u64) -> bool {
        *self.running.lock().unwrap() && self.cell.load(Ordering::SeqCst) == cell
    }

    /// Follows an interrupted cell until it ends. While evcxr analyses or builds it (the
    /// child's running byte is 0), every build that starts is ended, so the cell fails as
    /// `KeyboardInterrupt` with the child and its variables untouched. Once the cell's code
    /// runs, it gets the grace period to notice the flag; only then is the child ended.
    fn watch(&self, cell: u64) {
        let grace = grace();
        let mut running_since: Option<Instant> = None;
        while self.same_cell_running(cell) {
            if self.flag.code_running() {
                let since = *running_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= grace {
                    // Checked under the lock the worker takes to finish the cell, so a cell that
                    // ended a moment ago is never confused with this one.
                    let running = self.running.lock().unwrap();
                    if *running
                        && self.cell.load(Ordering::SeqCst) == cell
                        && self.flag.code_running()
                    {
                        self.kill_child();
                    }
                    return;
                }
            } else {
                running_since = None;
                self.kill_builds();
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Interrupter for Stopper {
    fn interrupt(&self) {
        if self.starting.load(Ordering::SeqCst) {
            // Start-up builds the prelude and starts the child that will hold the variables;
            // killing either would break the session for good. The cell waiting for start-up
            // is cancelled instead.
            self.cancel_next.store(true, Ordering::SeqCst);
            return;
        }
        let cell = self.cell.load(Ordering::SeqCst);
        {
            let running = self.running.lock().unwrap();
            if !*running {
                // The server only calls this while an execute request is pending, so that cell
                // is still on the worker's queue (or the one just answered, which
                // `queue_drained` then forgets): it is cancelled when it starts.
                self.cancel_next.store(true, Ordering::SeqCst);
                return;
            }
        }
        if !self.same_cell_running(cell) {
            return;
        }
        self.flag.set(true);
        self.kill_shell();
        if self.watched.swap(cell, Ordering::SeqCst) == cell {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        std::thread::spawn(move || me.watch(cell));
    }

    fn queue_drained(&self) {
        let _running = self.running.lock().unwrap();
        if !self.starting.load(Ordering::SeqCst) {
            self.cancel_next.store(false, Ordering::SeqCst);
        }
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
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // The command name is in parentheses and may contain spaces; the ppid follows it.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
                continue;
            };
            let ppid = after
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse::<i32>().ok())
                .unwrap_or(0);
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
