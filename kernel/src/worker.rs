//! The worker thread: owns the interpreter and runs execute, complete and inspect requests in
//! order, publishing busy/idle around each and routing the cell's output to iopub.

use crate::interp::{Bundle, ExecuteOutcome, ExecuteRequest, Interpreter, Outputs};
use crate::server::{Channel, InputAsk, Iopub, Shared};
use crate::wire::Message;
use serde_json::{json, Value};
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
        self.iopub.send(Message::reply_to(&self.parent, "stream", json!({"name": name, "text": text})));
    }

    fn display(&self, data: Bundle, metadata: Value, display_id: Option<String>, update: bool) {
        let mut content = json!({"data": data, "metadata": metadata, "transient": {}});
        if let Some(id) = display_id {
            content["transient"] = json!({"display_id": id});
        }
        let kind = if update { "update_display_data" } else { "display_data" };
        self.iopub.send(Message::reply_to(&self.parent, kind, content));
    }

    fn clear_output(&self, wait: bool) {
        self.iopub.send(Message::reply_to(&self.parent, "clear_output", json!({"wait": wait})));
    }

    fn input(&self, prompt: &str, password: bool) -> Option<String> {
        if !self.allow_stdin {
            return None;
        }
        let ask = Message::reply_to(&self.parent, "input_request", json!({"prompt": prompt, "password": password}));
        let (tx, rx) = std_mpsc::channel();
        self.stdin.send((ask, tx)).ok()?;
        rx.recv().ok().flatten()
    }
}

pub(crate) fn worker_loop(
    mut interp: Box<dyn Interpreter>,
    work: std_mpsc::Receiver<Message>,
    shared: Arc<Shared>,
    stdin: mpsc::UnboundedSender<InputAsk>,
) {
    let quiet = Message::new("status", &shared.iopub.session, json!({}));
    interp.start(Arc::new(CellOutputs {
        iopub: shared.iopub.clone(),
        parent: quiet,
        allow_stdin: false,
        stdin: stdin.clone(),
    }));
    let mut execution_count: u64 = 0;
    loop {
        // Work that can wait (warming caches) runs only while no request is queued.
        let msg = match work.try_recv() {
            Ok(msg) => msg,
            Err(std_mpsc::TryRecvError::Disconnected) => break,
            Err(std_mpsc::TryRecvError::Empty) => {
                interp.idle();
                match work.recv() {
                    Ok(msg) => msg,
                    Err(_) => break,
                }
            }
        };
        shared.iopub.status(Some(&msg), "busy");
        let reply = match msg.msg_type() {
            "execute_request" => {
                let outputs = Arc::new(CellOutputs {
                    iopub: shared.iopub.clone(),
                    parent: msg.clone(),
                    allow_stdin: msg.content["allow_stdin"].as_bool().unwrap_or(false),
                    stdin: stdin.clone(),
                });
                Some(execute(&mut *interp, &msg, outputs, &shared, &mut execution_count))
            }
            "complete_request" => {
                let code = msg.content["code"].as_str().unwrap_or("");
                let cursor = char_to_byte(code, msg.content["cursor_pos"].as_u64().unwrap_or(code.chars().count() as u64));
                let c = interp.complete(code, cursor);
                Some(json!({"status": "ok", "matches": c.matches,
                    "cursor_start": byte_to_char(code, c.cursor_start), "cursor_end": byte_to_char(code, c.cursor_end),
                    "metadata": {}}))
            }
            "inspect_request" => {
                let code = msg.content["code"].as_str().unwrap_or("");
                let cursor = char_to_byte(code, msg.content["cursor_pos"].as_u64().unwrap_or(0));
                let detail = msg.content["detail_level"].as_u64().unwrap_or(0);
                let data = interp.inspect(code, cursor, detail);
                Some(json!({"status": "ok", "found": data.is_some(), "data": data.unwrap_or_default(), "metadata": {}}))
            }
            other => {
                eprintln!("gpulab-kernel: ignoring unknown request {other}");
                None
            }
        };
        if let Some(content) = reply {
            let reply_type = msg.msg_type().replace("_request", "_reply");
            shared.reply(Channel::Shell, Message::reply_to(&msg, &reply_type, content));
        }
        shared.iopub.status(Some(&msg), "idle");
    }
    interp.shutdown(false);
}

fn execute(interp: &mut dyn Interpreter, msg: &Message, outputs: Arc<CellOutputs>, shared: &Shared, count: &mut u64) -> Value {
    let code = msg.content["code"].as_str().unwrap_or("");
    let silent = msg.content["silent"].as_bool().unwrap_or(false);
    let store_history = !silent && msg.content["store_history"].as_bool().unwrap_or(true);
    if store_history {
        *count += 1;
        shared.history.lock().unwrap().push(*count, code);
    }
    let n = (*count).max(1);
    if !silent {
        shared.iopub.send(Message::reply_to(msg, "execute_input", json!({"code": code, "execution_count": n})));
    }
    let req = ExecuteRequest { code, silent, allow_stdin: outputs.allow_stdin, execution_count: n };
    match interp.execute(&req, outputs) {
        ExecuteOutcome::Ok { result, payload } => {
            if let (Some(data), false) = (result, silent) {
                shared.iopub.send(Message::reply_to(msg, "execute_result",
                    json!({"execution_count": n, "data": data, "metadata": {}})));
            }
            json!({"status": "ok", "execution_count": n, "payload": payload, "user_expressions": {}})
        }
        ExecuteOutcome::Error { ename, evalue, traceback } => {
            let err = json!({"ename": ename, "evalue": evalue, "traceback": traceback});
            if !silent {
                shared.iopub.send(Message::reply_to(msg, "error", err.clone()));
            }
            let mut reply = err;
            reply["status"] = json!("error");
            reply["execution_count"] = json!(n);
            reply
        }
    }
}

/// Jupyter counts cursor positions in Unicode code points; Rust strings index bytes.
pub fn char_to_byte(s: &str, chars: u64) -> usize {
    s.char_indices().nth(chars as usize).map(|(i, _)| i).unwrap_or(s.len())
}

pub fn byte_to_char(s: &str, byte: usize) -> usize {
    s[..byte.min(s.len())].chars().count()
}
