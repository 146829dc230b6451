//! The worker thread: owns the interpreter and runs execute, complete and inspect requests in
//! order, publishing `idle` after each (its `busy` went out when the server received it) and
//! routing the cell's output to iopub. Every request runs inside `catch_unwind`, so a panic in
//! the interpreter becomes an error reply instead of a dead worker and a frontend stuck on busy.

use crate::hub::{Channel, InputAsk, Iopub, Shared, Work};
use crate::interp::{Bundle, ExecuteOutcome, ExecuteRequest, Interpreter, Outputs};
use crate::messages::{
    self, to_content, CompleteReply, ErrorReply, ExecuteReply, InspectReply, Request,
};
use crate::wire::Message;
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc as std_mpsc, Arc};
use tokio::sync::mpsc;

/// `Outputs` for the cell being run: everything goes to iopub with the execute_request as parent.
pub(crate) struct CellOutputs {
    iopub: Iopub,
    parent: Message,
    allow_stdin: bool,
    stdin: mpsc::UnboundedSender<InputAsk>,
}

impl Outputs for CellOutputs {
    fn stream(&self, name: &str, text: &str) {
        self.iopub.send(Message::reply_to(
            &self.parent,
            "stream",
            json!({"name": name, "text": text}),
        ));
    }

    fn display(&self, data: Bundle, metadata: Value, display_id: Option<String>, update: bool) {
        let mut content = json!({"data": data, "metadata": metadata, "transient": {}});
        if let Some(id) = display_id {
            content["transient"] = json!({"display_id": id});
        }
        let kind = if update {
            "update_display_data"
        } else {
            "display_data"
        };
        self.iopub
            .send(Message::reply_to(&self.parent, kind, content));
    }

    fn clear_output(&self, wait: bool) {
        self.iopub.send(Message::reply_to(
            &self.parent,
            "clear_output",
            json!({"wait": wait}),
        ));
    }

    fn input(&self, prompt: &str, password: bool) -> Option<String> {
        if !self.allow_stdin {
            return None;
        }
        let ask = Message::reply_to(
            &self.parent,
            "input_request",
            json!({"prompt": prompt, "password": password}),
        );
        let (tx, rx) = std_mpsc::channel();
        self.stdin.send((ask, tx)).ok()?;
        rx.recv().ok().flatten()
    }
}

pub(crate) fn worker_loop(
    mut interp: Box<dyn Interpreter>,
    work: std_mpsc::Receiver<Work>,
    shared: Arc<Shared>,
    stdin: mpsc::UnboundedSender<InputAsk>,
) {
    let quiet = Message::new("status", &shared.iopub.session, json!({}));
    let start_outputs = Arc::new(CellOutputs {
        iopub: shared.iopub.clone(),
        parent: quiet,
        allow_stdin: false,
        stdin: stdin.clone(),
    });
    // A panic during start-up must not end the worker with requests already queued: each
    // later request then fails (caught) on its own and says why.
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| interp.start(start_outputs))) {
        shared.log(&format!(
            "the interpreter panicked while starting: {}",
            panic_message(&*panic)
        ));
    }
    let mut execution_count: u64 = 0;
    // Requests taken off the channel but not yet handled (see `aborting`).
    let mut queue: VecDeque<Work> = VecDeque::new();
    // How many requests at the front of `queue` were already waiting when a cell failed with
    // `stop_on_error`; their execute requests are answered `aborted` without running.
    let mut aborting = 0usize;
    loop {
        let item = match queue.pop_front() {
            Some(item) => item,
            None => match work.try_recv() {
                Ok(item) => item,
                Err(std_mpsc::TryRecvError::Disconnected) => break,
                Err(std_mpsc::TryRecvError::Empty) => {
                    shared.interrupter.queue_drained();
                    match work.recv() {
                        Ok(item) => item,
                        Err(_) => break,
                    }
                }
            },
        };
        let abort = aborting > 0;
        aborting = aborting.saturating_sub(1);
        let Work {
            msg,
            req,
            busy_stamp,
        } = item;
        shared.iopub.busy_when_started(&msg, busy_stamp);
        let reply_type = messages::reply_type(msg.msg_type());
        if let (true, Request::Execute(_)) = (abort, &req) {
            // As ipykernel (kernelbase.py, `dispatch_shell` and `_send_abort_reply`): only
            // execute requests are aborted; the reply's content and metadata say `aborted`;
            // nothing runs, no execute_input, the execution count stays; busy and idle as usual.
            shared.log(&format!(
                "aborting {}: a cell before it failed",
                msg.header["msg_id"].as_str().unwrap_or("?")
            ));
            let mut reply =
                Message::reply_to(&msg, &reply_type, to_content(&ExecuteReply::Aborted {}));
            reply.metadata = json!({"status": "aborted"});
            shared.reply(Channel::Shell, reply);
            shared.iopub.worker_idle(&msg);
            continue;
        }
        let handled = catch_unwind(AssertUnwindSafe(|| {
            handle(
                &mut *interp,
                &msg,
                &req,
                &shared,
                &stdin,
                &mut execution_count,
            )
        }));
        let content = match handled {
            Ok(content) => content,
            Err(panic) => panicked(&msg, &req, &shared, &*panic, execution_count),
        };
        // ipykernel aborts the queue only after a visible failure: `not silent and stop_on_error`.
        // What is queued is taken before the reply leaves, so a request sent in answer to the
        // reply is never mistaken for one queued behind the failure.
        if let Request::Execute(e) = &req {
            if content["status"] == "error" && !e.silent && e.stop_on_error {
                queue.extend(work.try_iter());
                aborting = queue.len();
            }
        }
        shared.reply(
            Channel::Shell,
            Message::reply_to(&msg, &reply_type, content),
        );
        shared.iopub.worker_idle(&msg);
    }
    let _ = catch_unwind(AssertUnwindSafe(|| interp.shutdown(false)));
}

/// Handles one worker request and returns its reply's content.
fn handle(
    interp: &mut dyn Interpreter,
    msg: &Message,
    req: &Request,
    shared: &Shared,
    stdin: &mpsc::UnboundedSender<InputAsk>,
    execution_count: &mut u64,
) -> Value {
    match req {
        Request::Execute(e) => {
            let outputs = Arc::new(CellOutputs {
                iopub: shared.iopub.clone(),
                parent: msg.clone(),
                allow_stdin: e.allow_stdin,
                stdin: stdin.clone(),
            });
            to_content(&execute(interp, msg, e, outputs, shared, execution_count))
        }
        Request::Complete(c) => {
            let code = &c.code;
            let cursor = char_to_byte(code, c.cursor_pos.unwrap_or(code.chars().count() as u64));
            let done = interp.complete(code, cursor);
            to_content(&CompleteReply {
                matches: done.matches,
                cursor_start: byte_to_char(code, done.cursor_start),
                cursor_end: byte_to_char(code, done.cursor_end),
                metadata: Map::new(),
            })
        }
        Request::Inspect(i) => {
            let cursor = char_to_byte(&i.code, i.cursor_pos);
            let data = interp.inspect(&i.code, cursor, i.detail_level);
            to_content(&InspectReply {
                found: data.is_some(),
                data: data.unwrap_or_default(),
                metadata: Map::new(),
            })
        }
        Request::TestPanic => panic!("test hook: deliberate panic inside the worker"),
        // The server routes only the four kinds above here.
        other => to_content(&ErrorReply {
            ename: "KernelError".into(),
            evalue: format!("the worker does not handle {other:?}"),
            traceback: vec![],
        }),
    }
}

/// The reply for a request whose handling panicked. The worker goes on with the next request
/// and says so; the panic may have left the interpreter half-way through something, so the
/// message also says what to do if later cells misbehave.
fn panicked(
    msg: &Message,
    req: &Request,
    shared: &Shared,
    panic: &(dyn std::any::Any + Send),
    count: u64,
) -> Value {
    let evalue = panic_message(panic);
    shared.log(&format!(
        "panic while handling {}: {evalue}",
        msg.msg_type()
    ));
    let traceback = vec![
        format!("KernelPanic: {evalue}"),
        "The kernel caught this panic and is still running. If later cells misbehave, restart the kernel.".to_owned(),
    ];
    match req {
        Request::Execute(e) => {
            if !e.silent {
                let err = json!({"ename": "KernelPanic", "evalue": evalue, "traceback": traceback});
                shared.iopub.send(Message::reply_to(msg, "error", err));
            }
            to_content(&ExecuteReply::Error {
                execution_count: count.max(1),
                ename: "KernelPanic".into(),
                evalue,
                traceback,
            })
        }
        _ => to_content(&ErrorReply {
            ename: "KernelPanic".into(),
            evalue,
            traceback,
        }),
    }
}

/// The text a panic was raised with (`panic!("...")` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

fn execute(
    interp: &mut dyn Interpreter,
    msg: &Message,
    e: &messages::Execute,
    outputs: Arc<CellOutputs>,
    shared: &Shared,
    count: &mut u64,
) -> ExecuteReply {
    if e.store_history() {
        *count += 1;
        shared.history().push(*count, &e.code);
    }
    let n = (*count).max(1);
    if !e.silent {
        shared.iopub.send(Message::reply_to(
            msg,
            "execute_input",
            json!({"code": e.code, "execution_count": n}),
        ));
    }
    let req = ExecuteRequest {
        code: &e.code,
        silent: e.silent,
        allow_stdin: e.allow_stdin,
        execution_count: n,
    };
    match interp.execute(&req, outputs) {
        ExecuteOutcome::Ok { result, payload } => {
            if let (Some(data), false) = (result, e.silent) {
                shared.iopub.send(Message::reply_to(
                    msg,
                    "execute_result",
                    json!({"execution_count": n, "data": data, "metadata": {}}),
                ));
            }
            ExecuteReply::Ok {
                execution_count: n,
                payload,
                user_expressions: Map::new(),
            }
        }
        ExecuteOutcome::Error {
            ename,
            evalue,
            traceback,
        } => {
            if !e.silent {
                shared.iopub.send(Message::reply_to(
                    msg,
                    "error",
                    json!({"ename": ename, "evalue": evalue, "traceback": traceback}),
                ));
            }
            ExecuteReply::Error {
                execution_count: n,
                ename,
                evalue,
                traceback,
            }
        }
    }
}

/// Jupyter counts cursor positions in Unicode code points; Rust strings index bytes.
pub fn char_to_byte(s: &str, chars: u64) -> usize {
    s.char_indices()
        .nth(chars as usize)
        .map(|(i, _)| i)
        .unwrap_or(s.len())
}

pub fn byte_to_char(s: &str, byte: usize) -> usize {
    s[..byte.min(s.len())].chars().count()
}
