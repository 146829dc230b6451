//! Thousands of malformed messages on every socket of the real server (with the mock
//! interpreter): wrong frame counts, bad JSON, wrong field types, huge fields, and correctly
//! signed messages with missing or nonsensical content. Nothing may run, every message must
//! either get the reply the protocol asks for or be dropped with exactly one log line, and a
//! normal request must be answered afterwards. Deterministic (fixed seed) and bounded.

mod common;

use bytes::Bytes;
use common::*;
use gpulab_kernel::messages::reply_type;
use gpulab_kernel::server::Logger;
use gpulab_kernel::wire::{self, Signer, DELIMITER};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// xorshift64*: small, deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// Up to `max` bytes, or once in `one_in` up to `huge`.
    fn sized(&mut self, max: usize, huge: usize, one_in: usize) -> usize {
        if self.chance(one_in) {
            huge
        } else {
            max
        }
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
    /// Bytes that are never valid JSON (they start with `#`).
    fn not_json(&mut self, max: usize) -> Vec<u8> {
        let mut b = self.bytes(max);
        b.insert(0, b'#');
        b
    }
    /// A string that is occasionally huge (up to 1 MiB).
    fn text(&mut self) -> String {
        let len = if self.chance(60) {
            256 * 1024 + self.below(768 * 1024)
        } else {
            self.below(40)
        };
        let alphabet = b"abc xyz{}()[];:=+-*/\"'\\\n\t0123456789_!?%\xce";
        let bytes: Vec<u8> = (0..len).map(|_| *self.pick(alphabet)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    /// Any JSON value, including the wrong type for whatever field it lands in.
    fn json(&mut self, depth: usize) -> Value {
        match self.below(if depth > 2 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => json!(self.chance(2)),
            2 => json!(self.next() as i64),
            3 => json!(-(self.below(1000) as i64)),
            4 => json!(f64::from_bits(self.next() & 0x7fef_ffff_ffff_ffff)),
            5 => json!(self.text()),
            6 => Value::Array((0..self.below(4)).map(|_| self.json(depth + 1)).collect()),
            _ => {
                let mut m = serde_json::Map::new();
                for _ in 0..self.below(4) {
                    let k = self
                        .pick(&["code", "cursor_pos", "silent", "restart", "value", "x", "n"])
                        .to_string();
                    m.insert(k, self.json(depth + 1));
                }
                Value::Object(m)
            }
        }
    }
    /// A JSON value that is not of the kind `like` is. Never null: null is a valid "absent"
    /// for optional fields.
    fn wrong_type(&mut self, like: &Value) -> Value {
        loop {
            let v = self.json(1);
            let same = v.is_null()
                || matches!(
                    (like, &v),
                    (Value::String(_), Value::String(_))
                        | (Value::Bool(_), Value::Bool(_))
                        | (Value::Object(_), Value::Object(_))
                        | (Value::Array(_), Value::Array(_))
                        | (Value::Null, Value::Null)
                )
                || (like.is_number() && v.is_number());
            if !same {
                return v;
            }
        }
    }
}

/// What the protocol (and our drop policy) asks of the kernel for one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A reply on the same socket; `ok` says whether it is a success (else status "error").
    Reply { ok: bool },
    /// No reply; one log line.
    Log,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sock {
    Shell,
    Control,
    Stdin,
}

/// A field's name and a value of the right type for it.
type Field = (&'static str, fn() -> Value);

/// Fields a request needs, with a value of the right type, per message type.
fn required(msg_type: &str) -> &'static [Field] {
    match msg_type {
        "execute_request" | "is_complete_request" | "complete_request" | "inspect_request" => {
            &[("code", || json!("x"))]
        }
        "input_reply" => &[("value", || json!("x"))],
        "comm_open" => &[("comm_id", || json!("c")), ("target_name", || json!("t"))],
        _ => &[],
    }
}

/// Optional fields with a value of the right type.
fn optional(msg_type: &str) -> &'static [Field] {
    match msg_type {
        "execute_request" => &[
            ("silent", || json!(false)),
            ("store_history", || json!(true)),
            ("allow_stdin", || json!(false)),
            ("stop_on_error", || json!(true)),
            ("user_expressions", || json!({})),
        ],
        "complete_request" => &[("cursor_pos", || json!(1))],
        "inspect_request" => &[("cursor_pos", || json!(1)), ("detail_level", || json!(0))],
        "history_request" => &[
            ("output", || json!(false)),
            ("raw", || json!(true)),
            ("hist_access_type", || json!("tail")),
            ("n", || json!(3)),
            ("start", || json!(1)),
            ("pattern", || json!("*")),
            ("unique", || json!(false)),
        ],
        "shutdown_request" => &[("restart", || json!(false))],
        "comm_info_request" => &[("target_name", || json!("t"))],
        _ => &[],
    }
}

const KNOWN: &[&str] = &[
    "execute_request",
    "complete_request",
    "inspect_request",
    "is_complete_request",
    "history_request",
    "kernel_info_request",
    "comm_info_request",
    "shutdown_request",
    "interrupt_request",
    "input_reply",
    "comm_open",
    "comm_msg",
    "comm_close",
];

/// Content for `msg_type` that must not decode: not an object, a required field missing, or a
/// field of the wrong type.
fn bad_content(rng: &mut Rng, msg_type: &str) -> Option<Value> {
    let req = required(msg_type);
    let opt = optional(msg_type);
    let mut good = serde_json::Map::new();
    for (k, v) in req {
        good.insert(k.to_string(), v());
    }
    match rng.below(3) {
        0 => loop {
            let v = rng.json(1);
            if !v.is_object() {
                return Some(v);
            }
        },
        1 if !req.is_empty() => {
            let (k, _) = rng.pick(req);
            good.remove(*k);
            Some(Value::Object(good))
        }
        _ => {
            let fields: Vec<&Field> = req.iter().chain(opt.iter()).collect();
            if fields.is_empty() {
                return None;
            }
            let (k, v) = *rng.pick(&fields);
            // Values of the right JSON kind that are still invalid.
            let wrong = match *k {
                "cursor_pos" | "detail_level" | "n" if rng.chance(2) => {
                    json!(-1 - rng.below(5) as i64)
                }
                "hist_access_type" if rng.chance(2) => json!("everything"),
                _ => rng.wrong_type(&v()),
            };
            good.insert(k.to_string(), wrong);
            Some(Value::Object(good))
        }
    }
}

/// Valid content that runs nothing and stops nothing (no execute, no shutdown, no comm_open),
/// often with huge or nonsensical values where the type allows them.
fn harmless_content(rng: &mut Rng, msg_type: &str) -> Value {
    let mut m = serde_json::Map::new();
    for (k, v) in required(msg_type) {
        m.insert(
            k.to_string(),
            if *k == "code" || *k == "value" {
                json!(rng.text())
            } else {
                v()
            },
        );
    }
    for (k, v) in optional(msg_type) {
        if rng.chance(2) {
            m.insert(k.to_string(), v());
        }
    }
    if rng.chance(3) {
        // Fields the spec does not define are ignored.
        m.insert(format!("extra{}", rng.below(9)), rng.json(1));
    }
    Value::Object(m)
}

fn expect_for(sock: Sock, msg_type: &str, decodes: bool) -> Expect {
    if sock == Sock::Stdin {
        return Expect::Log;
    }
    let known = KNOWN.contains(&msg_type);
    match (known, decodes) {
        (false, _) => Expect::Log,
        (true, false) if msg_type.ends_with("_request") => Expect::Reply { ok: false },
        (true, false) => Expect::Log,
        (true, true) => match msg_type {
            "kernel_info_request"
            | "is_complete_request"
            | "history_request"
            | "comm_info_request"
            | "interrupt_request" => Expect::Reply { ok: true },
            "complete_request" | "inspect_request" if sock == Sock::Shell => {
                Expect::Reply { ok: true }
            }
            _ => Expect::Log,
        },
    }
}

fn signed_frames(signer: &Signer, parts: [Vec<u8>; 4]) -> Vec<Bytes> {
    let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
    let sig = signer.sign(&refs);
    let mut frames = vec![Bytes::from_static(DELIMITER), Bytes::from(sig)];
    frames.extend(parts.into_iter().map(Bytes::from));
    frames
}

fn header(msg_type: &Value, id: &str, rng: &mut Rng) -> Value {
    let mut h = json!({"msg_id": id, "session": "fuzz", "username": "fuzz", "date": "2026-01-01T00:00:00Z",
        "msg_type": msg_type, "version": "5.4"});
    if rng.chance(20) {
        h["username"] = json!(rng.text());
    }
    h
}

/// One malformed message: its frames, what it must cause, and its msg_id when it has one.
fn malformed(
    rng: &mut Rng,
    sock: Sock,
    signer: &Signer,
    n: usize,
) -> (Vec<Bytes>, Expect, Option<String>) {
    let id = format!("fuzz-{n}");
    let j = |v: &Value| serde_json::to_vec(v).unwrap();
    match rng.below(10) {
        // Random frames, no delimiter.
        0 => {
            let count = 1 + rng.below(6);
            let frames = (0..count)
                .map(|_| {
                    Bytes::from({
                        let n = rng.sized(64, 300_000, 50);
                        rng.bytes(n)
                    })
                })
                .collect();
            (frames, Expect::Log, None)
        }
        // The delimiter with too few frames after it.
        1 => {
            let mut frames = vec![Bytes::from_static(DELIMITER)];
            for _ in 0..rng.below(5) {
                frames.push(Bytes::from(rng.bytes(32)));
            }
            (frames, Expect::Log, None)
        }
        // A valid-looking message with a wrong or garbage signature.
        2 => {
            let h = header(&json!("kernel_info_request"), &id, rng);
            let mut frames =
                signed_frames(signer, [j(&h), j(&json!({})), j(&json!({})), j(&json!({}))]);
            frames[1] = if rng.chance(2) {
                Bytes::from(rng.bytes(64))
            } else {
                Bytes::from(hex_of(rng.bytes(32)))
            };
            (frames, Expect::Log, None)
        }
        // Signed, but a frame is not JSON.
        3 => {
            let h = header(&json!("kernel_info_request"), &id, rng);
            let mut parts = [j(&h), j(&json!({})), j(&json!({})), j(&json!({}))];
            let which = rng.below(4);
            parts[which] = if rng.chance(2) {
                rng.not_json(40)
            } else {
                b"{\"unterminated\": ".to_vec()
            };
            (signed_frames(signer, parts), Expect::Log, None)
        }
        // Signed, header without a usable msg_type.
        4 => {
            let h = match rng.below(3) {
                0 => rng.wrong_type(&json!({})),
                1 => json!({"msg_id": id, "session": "fuzz"}),
                _ => json!({"msg_id": id, "msg_type": rng.wrong_type(&json!("s"))}),
            };
            (
                signed_frames(signer, [j(&h), j(&json!({})), j(&json!({})), j(&json!({}))]),
                Expect::Log,
                None,
            )
        }
        // Signed, an unknown msg_type (sometimes huge).
        5 => {
            let t = if rng.chance(3) {
                format!("{}_request", rng.text())
            } else {
                format!("made_up_{}", rng.below(99))
            };
            let h = header(&json!(t), &id, rng);
            let frames = signed_frames(
                signer,
                [j(&h), j(&json!({})), j(&json!({})), j(&rng.json(0))],
            );
            (frames, Expect::Log, Some(id))
        }
        // Signed, a known type with content that must not decode.
        6..=8 => loop {
            let t = *rng.pick(KNOWN);
            if let Some(content) = bad_content(rng, t) {
                let h = header(&json!(t), &id, rng);
                let frames =
                    signed_frames(signer, [j(&h), j(&json!({})), j(&json!({})), j(&content)]);
                return (frames, expect_for(sock, t, false), Some(id));
            }
        },
        // Signed, a known type with valid but nonsensical content that runs nothing.
        _ => {
            let harmless: Vec<&str> = KNOWN
                .iter()
                .copied()
                .filter(|t| !matches!(*t, "execute_request" | "shutdown_request" | "comm_open"))
                .collect();
            let t = *rng.pick(&harmless);
            let content = harmless_content(rng, t);
            let h = header(&json!(t), &id, rng);
            let frames = signed_frames(signer, [j(&h), j(&json!({})), j(&json!({})), j(&content)]);
            (frames, expect_for(sock, t, true), Some(id))
        }
    }
}

fn hex_of(bytes: Vec<u8>) -> Vec<u8> {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into_bytes()
}

fn dealer(sock: Sock, c: &mut Client) -> &mut zeromq::DealerSocket {
    match sock {
        Sock::Shell => &mut c.shell,
        Sock::Control => &mut c.control,
        Sock::Stdin => &mut c.stdin,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_on_every_socket_are_answered_or_logged_and_nothing_runs() {
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let log: Logger = Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned()));
    let (mut c, _server, ran) = start_logged(Duration::ZERO, Some(log)).await;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    let mut total = 0;
    let mut counts: HashMap<&str, usize> = HashMap::new();

    for (sock, batches) in [(Sock::Shell, 40), (Sock::Control, 25), (Sock::Stdin, 12)] {
        for _ in 0..batches {
            let logged_before = lines.lock().unwrap().len();
            let mut expected: HashMap<String, Expect> = HashMap::new();
            let (mut want_logs, mut want_replies) = (0, 0);
            for _ in 0..50 {
                let (frames, expect, id) = malformed(&mut rng, sock, &c.signer, total);
                total += 1;
                match expect {
                    Expect::Log => want_logs += 1,
                    Expect::Reply { .. } => {
                        want_replies += 1;
                        expected.insert(id.clone().expect("a reply needs a msg_id"), expect);
                    }
                }
                *counts
                    .entry(if matches!(expect, Expect::Log) {
                        "logged"
                    } else {
                        "answered"
                    })
                    .or_default() += 1;
                Client::send(dealer(sock, &mut c), frames).await;
            }
            // A marker that goes the same way as the batch: once it is answered, everything
            // before it has been handled (shell: through the worker, which replies in order).
            let (marker, marker_sock) = match sock {
                Sock::Shell => (
                    c.request("complete_request", json!({"code": "mark", "cursor_pos": 4})),
                    Sock::Shell,
                ),
                Sock::Control => (c.request("kernel_info_request", json!({})), Sock::Control),
                Sock::Stdin => (c.request("kernel_info_request", json!({})), Sock::Shell),
            };
            let frames = wire::encode(&marker, &c.signer, None);
            Client::send(dealer(marker_sock, &mut c), frames).await;
            let mut replies = 0;
            loop {
                let signer = c.signer.clone();
                let reply = recv(dealer(marker_sock, &mut c), &signer).await;
                if reply.parent_header["msg_id"] == marker.header["msg_id"] {
                    break;
                }
                let parent = reply.parent_header["msg_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let Some(Expect::Reply { ok }) = expected.remove(&parent) else {
                    panic!(
                        "unexpected reply {} to {parent}: {}",
                        reply.msg_type(),
                        reply.content
                    );
                };
                let parent_type = reply.parent_header["msg_type"].as_str().unwrap();
                assert_eq!(reply.msg_type(), reply_type(parent_type));
                let status = reply.content["status"].as_str().unwrap_or_default();
                // is_complete answers with its verdict (complete, invalid, ...) as the status.
                let fine = if parent_type == "is_complete_request" {
                    ["complete", "incomplete", "invalid", "unknown"].contains(&status)
                } else {
                    status == "ok"
                };
                assert_eq!(fine, ok, "{parent_type}: {}", reply.content);
                assert_eq!(status == "error", !ok, "{parent_type}: {}", reply.content);
                replies += 1;
            }
            // stdin messages are handled on their own task: wait for their log lines.
            let deadline = Instant::now() + Duration::from_secs(10);
            while lines.lock().unwrap().len() < logged_before + want_logs
                && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(if sock == Sock::Stdin {
                50
            } else {
                0
            }))
            .await;
            let logged = lines.lock().unwrap().len() - logged_before;
            assert_eq!(
                replies, want_replies,
                "{sock:?}: replies, missing {expected:?}"
            );
            assert_eq!(
                logged, want_logs,
                "{sock:?}: one log line per dropped message"
            );
        }
    }

    // The heartbeat echoes whatever it is sent, huge or empty frames included.
    let mut hb = zeromq::ReqSocket::new();
    hb.connect(&c.conn.endpoint(c.conn.hb_port)).await.unwrap();
    for _ in 0..200 {
        // Non-empty frames: an empty frame is REQ/REP's own envelope delimiter.
        let frames: Vec<Bytes> = (0..1 + rng.below(3))
            .map(|_| {
                Bytes::from({
                    let n = rng.sized(50, 200_000, 40);
                    rng.not_json(n)
                })
            })
            .collect();
        hb.send(ZmqMessage::try_from(frames.clone()).unwrap())
            .await
            .unwrap();
        let echo = tokio::time::timeout(Duration::from_secs(5), hb.recv())
            .await
            .expect("heartbeat timeout")
            .unwrap();
        assert_eq!(echo.into_vec(), frames);
        total += 1;
    }

    // iopub only takes subscriptions; odd and huge topics must not disturb it.
    let mut sub = zeromq::SubSocket::new();
    sub.connect(&c.conn.endpoint(c.conn.iopub_port))
        .await
        .unwrap();
    for _ in 0..50 {
        let topic = String::from_utf8_lossy(&{
            let n = rng.sized(30, 100_000, 10);
            rng.bytes(n)
        })
        .into_owned();
        sub.subscribe(&topic).await.unwrap();
        sub.unsubscribe(&topic).await.unwrap();
        total += 1;
    }
    drop(sub);

    // Read what iopub published during the fuzz, so the last request's output is not queued
    // behind it.
    while tokio::time::timeout(Duration::from_millis(300), c.iopub.recv())
        .await
        .is_ok()
    {}

    // Nothing ran, and the kernel still answers a normal request, on shell and on iopub.
    assert!(
        ran.lock().unwrap().is_empty(),
        "a fuzzed message was executed: {:?}",
        ran.lock().unwrap()
    );
    let (req, reply) = c
        .shell_request("execute_request", json!({"code": "after the fuzz"}))
        .await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(reply.content["execution_count"], 1);
    let outputs = c.iopub_until_idle(&req).await;
    assert!(outputs
        .iter()
        .any(|m| m.msg_type() == "stream" && m.content["text"] == "after the fuzz\n"));
    assert_eq!(*ran.lock().unwrap(), ["after the fuzz"]);
    assert!(total > 4000, "{total} messages");
    assert!(
        counts["answered"] > 300 && counts["logged"] > 1500,
        "{counts:?}"
    );
    eprintln!(
        "fuzz: {total} messages in {:.1} s ({counts:?})",
        started.elapsed().as_secs_f64()
    );
    assert!(started.elapsed() < Duration::from_secs(120));
}
