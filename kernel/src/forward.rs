//! Carries the child process's stdout and stderr to the current cell's `Outputs`, turning
//! display-channel lines (ARCHITECTURE.md, contract 1) into display messages on the way.
//! A barrier lets the interpreter wait until every line of a finished cell has been sent, so
//! no stream message can arrive after the cell's reply.

use crate::interp::{Bundle, Outputs};
use crossbeam_channel::{select, Receiver, Sender};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const DISPLAY_PREFIX: &str = "\x1egpulab:";
/// A line the child's relay writes on stdout and on stderr, with the same number, as a cell's
/// code ends (kernel/src/child.rs). evcxr reads stdout in step with the cell but stderr on a
/// thread of its own, so the stderr copy tells `flush` when stderr has caught up.
pub const SYNC_PREFIX: &str = "\x1egpulab-sync:";
/// How long `flush` waits for stderr to catch up with stdout (only a stalled reader needs it).
const SYNC_WAIT: Duration = Duration::from_secs(2);

/// A panic reported by the session's panic hook: (message, location).
pub type PanicReport = (String, String);

#[derive(Clone, Default)]
pub struct Sink {
    outputs: Arc<Mutex<Option<Arc<dyn Outputs>>>>,
    panics: Arc<Mutex<Vec<PanicReport>>>,
    /// Errors that ended a cell through `?` (reported by the child's relay, kernel/src/child.rs).
    user_errors: Arc<Mutex<Vec<String>>>,
}

impl Sink {
    pub fn set(&self, outputs: Arc<dyn Outputs>) {
        *self.outputs.lock().unwrap() = Some(outputs);
    }

    pub fn get(&self) -> Option<Arc<dyn Outputs>> {
        self.outputs.lock().unwrap().clone()
    }

    pub fn take_panics(&self) -> Vec<PanicReport> {
        std::mem::take(&mut *self.panics.lock().unwrap())
    }

    pub fn take_user_errors(&self) -> Vec<String> {
        std::mem::take(&mut *self.user_errors.lock().unwrap())
    }

    fn with(&self, f: impl FnOnce(&dyn Outputs)) {
        if let Some(o) = self.outputs.lock().unwrap().as_ref() {
            f(&**o);
        }
    }
}

pub struct Forwarders {
    barriers: Vec<Sender<Sender<()>>>,
    /// The last sync number each thread (stdout, stderr) has seen.
    synced: Vec<Arc<AtomicU64>>,
}

impl Forwarders {
    pub fn start(stdout: Receiver<String>, stderr: Receiver<String>, sink: Sink) -> Forwarders {
        let mut barriers = Vec::new();
        let mut synced = Vec::new();
        for (name, rx) in [("stdout", stdout), ("stderr", stderr)] {
            let (btx, brx) = crossbeam_channel::unbounded();
            barriers.push(btx);
            let seen = Arc::new(AtomicU64::new(0));
            synced.push(seen.clone());
            let sink = sink.clone();
            std::thread::Builder::new()
                .name(format!("gpulab-{name}"))
                .spawn(move || forward(name, rx, brx, sink, seen))
                .expect("spawning an output thread");
        }
        Forwarders { barriers, synced }
    }

    /// Returns once both threads have sent everything they had received.
    /// Returns once both threads have sent everything they had received, and stderr has
    /// caught up with the last sync line stdout saw (what the cell printed on stderr just
    /// before it ended would otherwise trail the reply).
    pub fn flush(&self) {
        self.flush_threads();
        let want = self.synced[0].load(Ordering::SeqCst);
        // Equality, not order: a restarted child numbers its sync lines from 1 again.
        if self.synced[1].load(Ordering::SeqCst) != want {
            let deadline = Instant::now() + SYNC_WAIT;
            while self.synced[1].load(Ordering::SeqCst) != want && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.flush_threads();
        }
    }

    fn flush_threads(&self) {
        let acks: Vec<_> = self
            .barriers
            .iter()
            .filter_map(|b| {
                let (tx, rx) = crossbeam_channel::bounded(1);
                b.send(tx).ok().map(|_| rx)
            })
            .collect();
        for rx in acks {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(5));
        }
    }
}

fn forward(
    name: &'static str,
    lines: Receiver<String>,
    barrier: Receiver<Sender<()>>,
    sink: Sink,
    synced: Arc<AtomicU64>,
) {
    let mut text = String::new();
    let handle = |line: String, text: &mut String| match line
        .strip_prefix(SYNC_PREFIX)
        .map(|n| n.trim().parse::<u64>())
    {
        Some(Ok(n)) => synced.store(n, Ordering::SeqCst),
        _ => handle(name, line, text, &sink),
    };
    loop {
        select! {
            recv(lines) -> line => {
                let Ok(line) = line else { break };
                handle(line, &mut text);
                // Coalesce whatever is already queued into one stream message.
                while let Ok(line) = lines.try_recv() {
                    handle(line, &mut text);
                    if text.len() > 64 * 1024 {
                        break;
                    }
                }
                flush_text(name, &mut text, &sink);
            }
            recv(barrier) -> ack => {
                let Ok(ack) = ack else { break };
                while let Ok(line) = lines.try_recv() {
                    handle(line, &mut text);
                }
                flush_text(name, &mut text, &sink);
                let _ = ack.send(());
            }
        }
    }
    flush_text(name, &mut text, &sink);
}

fn flush_text(name: &str, text: &mut String, sink: &Sink) {
    if !text.is_empty() {
        sink.with(|o| o.stream(name, text));
        text.clear();
    }
}

fn handle(name: &str, line: String, text: &mut String, sink: &Sink) {
    if let Some(event) = line.strip_prefix(DISPLAY_PREFIX).and_then(parse_event) {
        flush_text(name, text, sink);
        match event {
            Event::Display {
                data,
                metadata,
                display_id,
                update,
            } => sink.with(|o| o.display(data, metadata, display_id, update)),
            Event::Clear { wait } => sink.with(|o| o.clear_output(wait)),
            Event::Panic(report) => sink.panics.lock().unwrap().push(report),
            Event::UserError(message) => sink.user_errors.lock().unwrap().push(message),
        }
        return;
    }
    text.push_str(&line);
    text.push('\n');
}

#[derive(Debug, PartialEq)]
pub enum Event {
    Display {
        data: Bundle,
        metadata: Value,
        display_id: Option<String>,
        update: bool,
    },
    Clear {
        wait: bool,
    },
    Panic(PanicReport),
    /// A `?` in the cell returned this error (its Display).
    UserError(String),
}

/// Parses the JSON part of a display-channel line. Malformed lines return None and are then
/// shown as ordinary text, so nothing a program prints is ever lost.
pub fn parse_event(json: &str) -> Option<Event> {
    let v: Value = serde_json::from_str(json).ok()?;
    let str_field = |k: &str| v[k].as_str().map(str::to_owned);
    match v["op"].as_str()? {
        op @ ("display" | "update") => {
            let data = v["data"].as_object()?.clone();
            let update = op == "update";
            let display_id = str_field("display_id");
            if update && display_id.is_none() {
                return None;
            }
            let metadata = if v["metadata"].is_object() {
                v["metadata"].clone()
            } else {
                Value::Object(Default::default())
            };
            Some(Event::Display {
                data,
                metadata,
                display_id,
                update,
            })
        }
        "clear" => Some(Event::Clear {
            wait: v["wait"].as_bool().unwrap_or(false),
        }),
        "user_error" => Some(Event::UserError(str_field("message").unwrap_or_default())),
        "panic" => Some(Event::Panic((
            str_field("message").unwrap_or_default(),
            str_field("location").unwrap_or_default(),
        ))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_op() {
        match parse_event(r#"{"op":"display","data":{"text/plain":"x"},"display_id":"d1"}"#) {
            Some(Event::Display {
                data,
                display_id,
                update: false,
                ..
            }) => {
                assert_eq!(data["text/plain"], "x");
                assert_eq!(display_id.as_deref(), Some("d1"));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_event(r#"{"op":"update","data":{}}"#).is_none());
        assert!(matches!(
            parse_event(r#"{"op":"update","data":{},"display_id":"a"}"#),
            Some(Event::Display { update: true, .. })
        ));
        assert_eq!(
            parse_event(r#"{"op":"clear","wait":true}"#),
            Some(Event::Clear { wait: true })
        );
        assert_eq!(
            parse_event(r#"{"op":"panic","message":"boom","location":"src/lib.rs:1:2"}"#),
            Some(Event::Panic(("boom".into(), "src/lib.rs:1:2".into())))
        );
        assert_eq!(
            parse_event(r#"{"op":"user_error","message":"bad: x"}"#),
            Some(Event::UserError("bad: x".into()))
        );
        assert_eq!(parse_event("not json"), None);
        assert_eq!(parse_event(r#"{"op":"nope"}"#), None);
    }
}
