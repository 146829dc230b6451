//! What the socket tasks (server.rs) and the worker thread (worker.rs) share: the iopub
//! publisher, the reply queue, the pending input request, the kernel's configuration and its
//! log. Both modules depend on this one and not on each other.

use crate::history::History;
use crate::interp::{Interrupter, IsComplete};
use crate::messages::Request;
use crate::wire::{Message, Signer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use tokio::sync::mpsc;

/// Where the kernel's log lines go (the kernel's stderr unless a test collects them).
pub type Logger = Arc<dyn Fn(&str) + Send + Sync>;

/// What the server needs to know about the language without asking the interpreter.
#[derive(Clone)]
pub struct KernelConfig {
    /// `kernel_info_reply` content, without `status` and `protocol_version`.
    pub kernel_info: Value,
    pub is_complete: fn(&str) -> IsComplete,
    /// Every dropped or ignored message is logged here, one line each.
    pub log: Logger,
    /// Honour `gpulab_test_panic_request` (tests only; `GPULAB_TEST_HOOKS=1`).
    pub test_hooks: bool,
}

impl KernelConfig {
    pub fn new(kernel_info: Value, is_complete: fn(&str) -> IsComplete) -> KernelConfig {
        KernelConfig {
            kernel_info,
            is_complete,
            log: Arc::new(|line: &str| eprintln!("gpulab-kernel: {line}")),
            test_hooks: false,
        }
    }
}

/// How the kernel stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    Exit,
    Restart,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Channel {
    Shell,
    Control,
}

pub(crate) type Reply = (Channel, Message);

/// A pending `input_request`: the prompt message and where to deliver the answer.
pub(crate) type InputAsk = (Message, std_mpsc::Sender<Option<String>>);

/// A request for the worker, decoded once, with the stamp of its arrival `busy` (see
/// `Iopub::busy_on_arrival`).
pub(crate) struct Work {
    pub(crate) msg: Message,
    pub(crate) req: Request,
    pub(crate) busy_stamp: u64,
}

/// Publishes on iopub. Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct Iopub {
    pub(crate) tx: mpsc::UnboundedSender<Message>,
    pub(crate) session: String,
    /// How many worker requests have ended with `idle`. Held while publishing a worker's
    /// busy or idle, so the count and the order on the channel agree.
    worker_idles: Arc<Mutex<u64>>,
    /// Execute requests that arrived and have not yet gone idle (queued or running).
    executes_pending: Arc<AtomicUsize>,
}

impl Iopub {
    pub(crate) fn new(tx: mpsc::UnboundedSender<Message>, session: String) -> Iopub {
        Iopub {
            tx,
            session,
            worker_idles: Arc::default(),
            executes_pending: Arc::default(),
        }
    }

    pub fn send(&self, msg: Message) {
        let _ = self.tx.send(msg);
    }

    pub(crate) fn status(&self, parent: Option<&Message>, state: &str) {
        let content = json!({ "execution_state": state });
        self.send(match parent {
            Some(p) => Message::reply_to(p, "status", content),
            None => Message::new("status", &self.session, content),
        });
    }

    /// `busy` for a worker request, published the moment the server receives it (so a
    /// frontend shows Busy while the first cell waits for start-up). Returns a stamp for
    /// `busy_when_started`.
    pub(crate) fn busy_on_arrival(&self, parent: &Message) -> u64 {
        let idles = self.worker_idles.lock().unwrap_or_else(|e| e.into_inner());
        if parent.msg_type() == "execute_request" {
            self.executes_pending.fetch_add(1, Ordering::SeqCst);
        }
        self.status(Some(parent), "busy");
        *idles
    }

    /// True while an execute request is queued or running. An interrupt acts only then: like
    /// ipykernel's, an interrupt of an idle kernel does nothing (in particular it must not
    /// cancel the next cell because the session happened to be warming up).
    pub(crate) fn cell_pending(&self) -> bool {
        self.executes_pending.load(Ordering::SeqCst) > 0
    }

    /// Frontends show the last status they received. If another request's `idle` went out
    /// after this request's arrival `busy`, says `busy` again as the request starts, so Run All
    /// does not show Idle while queued cells run (ipykernel says busy at that moment too).
    pub(crate) fn busy_when_started(&self, parent: &Message, stamp: u64) {
        let idles = self.worker_idles.lock().unwrap_or_else(|e| e.into_inner());
        if *idles != stamp {
            self.status(Some(parent), "busy");
        }
    }

    /// `idle` after a worker request's reply.
    pub(crate) fn worker_idle(&self, parent: &Message) {
        let mut idles = self.worker_idles.lock().unwrap_or_else(|e| e.into_inner());
        if parent.msg_type() == "execute_request" {
            self.executes_pending.fetch_sub(1, Ordering::SeqCst);
        }
        self.status(Some(parent), "idle");
        *idles += 1;
    }
}

pub(crate) struct Shared {
    pub(crate) config: KernelConfig,
    pub(crate) signer: Signer,
    pub(crate) iopub: Iopub,
    pub(crate) history: Mutex<History>,
    pub(crate) replies: mpsc::UnboundedSender<Reply>,
    pub(crate) interrupter: Arc<dyn Interrupter>,
    /// Cancels a pending input request (on interrupt), so the worker is never stuck on stdin.
    pub(crate) stdin_cancel: Mutex<Option<std_mpsc::Sender<Option<String>>>>,
    pub(crate) shutdown: mpsc::UnboundedSender<Shutdown>,
}

impl Shared {
    pub(crate) fn reply(&self, channel: Channel, msg: Message) {
        let _ = self.replies.send((channel, msg));
    }

    /// One log line, cut to a readable length: a malformed message can carry a megabyte in
    /// its type or a field, and the log is read by people.
    pub(crate) fn log(&self, line: &str) {
        const MAX: usize = 300;
        if line.len() <= MAX {
            return (self.config.log)(line);
        }
        let cut = (0..=MAX)
            .rev()
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(0);
        (self.config.log)(&format!(
            "{}… ({} more bytes)",
            &line[..cut],
            line.len() - cut
        ));
    }

    pub(crate) fn history(&self) -> std::sync::MutexGuard<'_, History> {
        // A panic elsewhere cannot leave a half-written history entry; keep using it.
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the pending input request's answer channel, if any.
    pub(crate) fn take_stdin_waiter(&self) -> Option<std_mpsc::Sender<Option<String>>> {
        self.stdin_cancel
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
