//! The content of every message the kernel receives, decoded once into typed structs
//! (Jupyter messaging spec 5.4). `Request::decode` is the only place that reads a request's
//! JSON; everything after it works on these types, so a field cannot go unread by accident, and
//! a field of the wrong type is a decoding error, never a panic or a silent default.

use crate::wire::Message;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Test-only request type that panics inside the worker (honoured only when the server was
/// configured with `test_hooks`, which `GPULAB_TEST_HOOKS=1` switches on).
pub const TEST_PANIC_REQUEST: &str = "gpulab_test_panic_request";

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
pub struct Execute {
    pub code: String,
    #[serde(default)]
    pub silent: bool,
    /// Defaults to `!silent`, as in the spec.
    #[serde(default)]
    pub store_history: Option<bool>,
    /// Accepted and answered with `{}`: Rust has no expression evaluation outside a cell.
    #[serde(default)]
    pub user_expressions: Map<String, Value>,
    #[serde(default)]
    pub allow_stdin: bool,
    #[serde(default = "yes")]
    pub stop_on_error: bool,
}

impl Execute {
    pub fn store_history(&self) -> bool {
        !self.silent && self.store_history.unwrap_or(true)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Complete {
    pub code: String,
    /// In Unicode code points; the spec requires it, older clients omit it (end of code then).
    #[serde(default)]
    pub cursor_pos: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Inspect {
    pub code: String,
    #[serde(default)]
    pub cursor_pos: u64,
    #[serde(default)]
    pub detail_level: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IsComplete {
    pub code: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistAccess {
    Range,
    #[default]
    Tail,
    Search,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct History {
    #[serde(default)]
    pub output: bool,
    #[serde(default)]
    pub raw: bool,
    #[serde(default)]
    pub hist_access_type: HistAccess,
    #[serde(default)]
    pub session: Option<i64>,
    #[serde(default)]
    pub start: Option<i64>,
    #[serde(default)]
    pub stop: Option<i64>,
    #[serde(default)]
    pub n: Option<u64>,
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    pub unique: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CommInfo {
    #[serde(default)]
    pub target_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Shutdown {
    #[serde(default)]
    pub restart: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CommOpen {
    pub comm_id: String,
    pub target_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct InputReply {
    pub value: String,
}

/// Content the kernel ignores but still checks is a JSON object.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Empty {}

/// Every message the kernel understands, by `msg_type`.
#[derive(Debug, Clone)]
pub enum Request {
    Execute(Execute),
    Complete(Complete),
    Inspect(Inspect),
    IsComplete(IsComplete),
    History(History),
    KernelInfo,
    CommInfo(CommInfo),
    Shutdown(Shutdown),
    Interrupt,
    InputReply(InputReply),
    CommOpen(CommOpen),
    /// `comm_msg` and `comm_close`: no comm is ever open, so there is nothing to do.
    CommOther,
    /// `gpulab_test_panic_request` (see `TEST_PANIC_REQUEST`).
    TestPanic,
}

/// Why a message was not turned into a `Request`.
#[derive(Debug)]
pub enum Undecodable {
    /// A `msg_type` this kernel does not handle.
    Unknown,
    /// A known `msg_type` whose content has a missing field or a field of the wrong type.
    BadContent(String),
}

fn content<T: DeserializeOwned>(msg: &Message) -> Result<T, Undecodable> {
    // serde would also accept a struct written as a JSON array; the spec says object.
    if !msg.content.is_object() {
        return Err(Undecodable::BadContent(format!(
            "{}: content is not a JSON object",
            msg.msg_type()
        )));
    }
    T::deserialize(&msg.content)
        .map_err(|e| Undecodable::BadContent(format!("{}: {e}", msg.msg_type())))
}

impl Request {
    /// Decodes `msg.content` according to `msg.msg_type()`.
    pub fn decode(msg: &Message, test_hooks: bool) -> Result<Request, Undecodable> {
        Ok(match msg.msg_type() {
            "execute_request" => Request::Execute(content(msg)?),
            "complete_request" => Request::Complete(content(msg)?),
            "inspect_request" => Request::Inspect(content(msg)?),
            "is_complete_request" => Request::IsComplete(content(msg)?),
            "history_request" => Request::History(content(msg)?),
            "kernel_info_request" => content::<Empty>(msg).map(|_| Request::KernelInfo)?,
            "comm_info_request" => Request::CommInfo(content(msg)?),
            "shutdown_request" => Request::Shutdown(content(msg)?),
            "interrupt_request" => content::<Empty>(msg).map(|_| Request::Interrupt)?,
            "input_reply" => Request::InputReply(content(msg)?),
            "comm_open" => Request::CommOpen(content(msg)?),
            "comm_msg" | "comm_close" => content::<Empty>(msg).map(|_| Request::CommOther)?,
            TEST_PANIC_REQUEST if test_hooks => Request::TestPanic,
            _ => return Err(Undecodable::Unknown),
        })
    }
}

// ---- Replies -------------------------------------------------------------------------------

/// `execute_reply`. `Aborted` is what ipykernel's `_send_abort_reply` sends for a request
/// queued behind a failed cell: `{"status": "aborted"}` and nothing else.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ExecuteReply {
    Ok {
        execution_count: u64,
        payload: Vec<Value>,
        user_expressions: Map<String, Value>,
    },
    Error {
        execution_count: u64,
        ename: String,
        evalue: String,
        traceback: Vec<String>,
    },
    Aborted {},
}

/// The reply to any request that failed before or while being handled.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "error")]
pub struct ErrorReply {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "ok")]
pub struct CompleteReply {
    pub matches: Vec<String>,
    pub cursor_start: usize,
    pub cursor_end: usize,
    pub metadata: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "ok")]
pub struct InspectReply {
    pub found: bool,
    pub data: Map<String, Value>,
    pub metadata: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum IsCompleteReply {
    Complete,
    Incomplete { indent: String },
    Invalid,
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "ok")]
pub struct HistoryReply {
    pub history: Vec<Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "ok")]
pub struct CommInfoReply {
    pub comms: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "ok")]
pub struct ShutdownReply {
    pub restart: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename = "ok")]
pub struct InterruptReply {}

/// A reply's content as JSON. These types hold only strings, numbers and JSON values, so
/// serialising cannot fail; if it ever did, the client still gets an error reply.
pub fn to_content(reply: &impl Serialize) -> Value {
    serde_json::to_value(reply).unwrap_or_else(|e| {
        serde_json::json!({"status": "error", "ename": "KernelError", "evalue": e.to_string(), "traceback": []})
    })
}

/// `foo_request` -> `foo_reply` (ipykernel: `msg_type.rsplit("_", 1)[0] + "_reply"`).
pub fn reply_type(msg_type: &str) -> String {
    match msg_type.strip_suffix("_request") {
        Some(stem) => format!("{stem}_reply"),
        None => format!("{msg_type}_reply"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(msg_type: &str, content: Value) -> Message {
        Message::new(msg_type, "s", content)
    }

    #[test]
    fn execute_defaults_follow_the_spec() {
        let Ok(Request::Execute(e)) =
            Request::decode(&msg("execute_request", json!({"code": "1"})), false)
        else {
            panic!("not an execute request")
        };
        assert!(e.stop_on_error && !e.silent && !e.allow_stdin && e.store_history());
        let Ok(Request::Execute(e)) = Request::decode(
            &msg(
                "execute_request",
                json!({"code": "1", "silent": true, "stop_on_error": false}),
            ),
            false,
        ) else {
            panic!("not an execute request")
        };
        assert!(!e.stop_on_error && !e.store_history());
    }

    #[test]
    fn wrong_types_and_missing_fields_are_errors() {
        for (t, c) in [
            ("execute_request", json!({"code": 5})),
            ("execute_request", json!({})),
            ("execute_request", json!({"code": "x", "silent": "no"})),
            ("complete_request", json!({"code": "x", "cursor_pos": -1})),
            ("history_request", json!({"hist_access_type": "everything"})),
            ("shutdown_request", json!({"restart": "yes"})),
            ("kernel_info_request", json!([])),
            ("input_reply", json!({"value": null})),
        ] {
            assert!(
                matches!(
                    Request::decode(&msg(t, c.clone()), false),
                    Err(Undecodable::BadContent(_))
                ),
                "{t} {c}"
            );
        }
        assert!(matches!(
            Request::decode(&msg("made_up_request", json!({})), false),
            Err(Undecodable::Unknown)
        ));
        assert!(matches!(
            Request::decode(&msg(TEST_PANIC_REQUEST, json!({})), false),
            Err(Undecodable::Unknown)
        ));
        assert!(matches!(
            Request::decode(&msg(TEST_PANIC_REQUEST, json!({})), true),
            Ok(Request::TestPanic)
        ));
    }

    #[test]
    fn replies_serialise_as_the_spec_says() {
        assert_eq!(
            to_content(&ExecuteReply::Aborted {}),
            json!({"status": "aborted"})
        );
        assert_eq!(
            to_content(&ExecuteReply::Ok {
                execution_count: 3,
                payload: vec![],
                user_expressions: Map::new()
            }),
            json!({"status": "ok", "execution_count": 3, "payload": [], "user_expressions": {}})
        );
        assert_eq!(
            to_content(&IsCompleteReply::Incomplete {
                indent: "  ".into()
            }),
            json!({"status": "incomplete", "indent": "  "})
        );
        assert_eq!(
            to_content(&ErrorReply {
                ename: "E".into(),
                evalue: "v".into(),
                traceback: vec![]
            }),
            json!({"status": "error", "ename": "E", "evalue": "v", "traceback": []})
        );
        assert_eq!(to_content(&InterruptReply {}), json!({"status": "ok"}));
    }

    #[test]
    fn reply_types() {
        assert_eq!(reply_type("execute_request"), "execute_reply");
        assert_eq!(reply_type("odd"), "odd_reply");
    }
}
