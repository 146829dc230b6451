//! The seam between the protocol layer and whatever runs the code. The server only ever talks
//! to an `Interpreter` (on the worker thread) and an `Interrupter` (from the control channel),
//! and the interpreter only ever talks back through an `Outputs`. Neither side sees a socket,
//! so protocol tests can run against a mock interpreter in milliseconds.

use serde_json::{Map, Value};
use std::sync::Arc;

/// A MIME bundle: MIME type -> data (binary types base64-encoded, as Jupyter expects).
pub type Bundle = Map<String, Value>;

pub struct ExecuteRequest<'a> {
    pub code: &'a str,
    pub silent: bool,
    pub allow_stdin: bool,
    pub execution_count: u64,
}

pub enum ExecuteOutcome {
    Ok {
        /// The trailing expression's value, sent as `execute_result`.
        result: Option<Bundle>,
        /// Pager and other payloads for the execute_reply.
        payload: Vec<Value>,
    },
    Error {
        ename: String,
        evalue: String,
        traceback: Vec<String>,
    },
}

impl ExecuteOutcome {
    pub fn ok() -> Self {
        ExecuteOutcome::Ok {
            result: None,
            payload: Vec::new(),
        }
    }

    /// An error whose traceback is the one line Python prints for it (`UsageError: why`).
    pub fn named(ename: &str, evalue: impl Into<String>) -> Self {
        let evalue = evalue.into();
        let line = format!("{ename}: {evalue}");
        ExecuteOutcome::error(ename, evalue, vec![line])
    }

    pub fn error(
        ename: impl Into<String>,
        evalue: impl Into<String>,
        traceback: Vec<String>,
    ) -> Self {
        ExecuteOutcome::Error {
            ename: ename.into(),
            evalue: evalue.into(),
            traceback,
        }
    }
}

pub enum IsComplete {
    Complete,
    Incomplete { indent: String },
    Invalid,
    Unknown,
}

pub struct Completion {
    pub matches: Vec<String>,
    pub cursor_start: usize,
    pub cursor_end: usize,
}

/// Where an interpreter sends what a cell produces while it runs. Implementations must be cheap
/// and non-blocking except `input`, which waits for the user.
pub trait Outputs: Send + Sync {
    fn stream(&self, name: &str, text: &str);
    fn display(&self, data: Bundle, metadata: Value, display_id: Option<String>, update: bool);
    fn clear_output(&self, wait: bool);
    /// Asks the frontend for a line of input. None when the frontend does not allow stdin.
    fn input(&self, prompt: &str, password: bool) -> Option<String>;
}

/// Stops the running cell. Called from the control channel's task while `execute` runs on the
/// worker thread, so it must be thread-safe and return quickly.
pub trait Interrupter: Send + Sync {
    fn interrupt(&self);
    /// The worker has no request left (it is about to go idle): an interrupt kept for a cell
    /// that had not started yet has nothing left to cancel.
    fn queue_drained(&self) {}
    /// Ends everything the session started (on kernel shutdown).
    fn terminate(&self) {}
}

pub trait Interpreter: Send {
    /// Called once on the worker thread before the first request; slow set-up goes here so the
    /// server can answer `kernel_info` while it runs.
    fn start(&mut self, _outputs: Arc<dyn Outputs>) {}
    fn execute(&mut self, req: &ExecuteRequest, outputs: Arc<dyn Outputs>) -> ExecuteOutcome;
    /// `cursor` is a byte offset into `code`; the returned positions are byte offsets too.
    fn complete(&mut self, code: &str, cursor: usize) -> Completion;
    /// Rich documentation of the name at `cursor` (a byte offset), if any.
    fn inspect(&mut self, code: &str, cursor: usize, detail_level: u64) -> Option<Bundle>;
    fn interrupter(&self) -> Arc<dyn Interrupter>;
    fn shutdown(&mut self, _restart: bool) {}
}
