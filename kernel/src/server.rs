//! The protocol layer: five ZeroMQ sockets, message routing, and the worker thread that owns
//! the interpreter. Requests that need no interpreter state (kernel_info, is_complete,
//! history, comm_info) are answered on the socket tasks at once, so they stay fast while the
//! interpreter is busy warming up or running a cell.

use crate::connection::ConnectionInfo;
use crate::history::History;
use crate::interp::{Interpreter, Interrupter, IsComplete};
use crate::wire::{self, Message, Signer};
use anyhow::Result;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use tokio::sync::mpsc;
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// What the server needs to know about the language without asking the interpreter.
#[derive(Clone)]
pub struct KernelConfig {
    /// `kernel_info_reply` content, without `status` and `protocol_version`.
    pub kernel_info: Value,
    pub is_complete: fn(&str) -> IsComplete,
}

/// How the kernel stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    Exit,
    Restart,
}

type Reply = (Channel, Message);

#[derive(Debug, Clone, Copy)]
pub(crate) enum Channel {
    Shell,
    Control,
}

/// Publishes on iopub. Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct Iopub {
    pub(crate) tx: mpsc::UnboundedSender<Message>,
    pub(crate) session: String,
}

impl Iopub {
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
}

/// A pending `input_request`: the prompt message and where to deliver the answer.
pub(crate) type InputAsk = (Message, std_mpsc::Sender<Option<String>>);

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

    /// Replies that need no interpreter. Returns false if the request must go to the worker.
    fn answer_directly(&self, channel: Channel, msg: &Message) -> bool {
        let content = match msg.msg_type() {
            "kernel_info_request" => {
                let mut info = self.config.kernel_info.clone();
                info["status"] = json!("ok");
                info["protocol_version"] = json!(wire::PROTOCOL_VERSION);
                info
            }
            "is_complete_request" => {
                let code = msg.content["code"].as_str().unwrap_or("");
                match (self.config.is_complete)(code) {
                    IsComplete::Complete => json!({"status": "complete"}),
                    IsComplete::Incomplete { indent } => json!({"status": "incomplete", "indent": indent}),
                    IsComplete::Invalid => json!({"status": "invalid"}),
                    IsComplete::Unknown => json!({"status": "unknown"}),
                }
            }
            "history_request" => {
                let history = self.history.lock().unwrap().query(&msg.content);
                json!({"status": "ok", "history": history})
            }
            "comm_info_request" => json!({"status": "ok", "comms": {}}),
            "interrupt_request" => {
                self.interrupter.interrupt();
                if let Some(tx) = self.stdin_cancel.lock().unwrap().take() {
                    let _ = tx.send(None);
                }
                json!({"status": "ok"})
            }
            "shutdown_request" => {
                let restart = msg.content["restart"].as_bool().unwrap_or(false);
                let _ = self.shutdown.send(if restart { Shutdown::Restart } else { Shutdown::Exit });
                json!({"status": "ok", "restart": restart})
            }
            // Comms are not offered: opening one is answered by closing it, as ipykernel does
            // for an unknown target.
            "comm_open" => {
                let id = msg.content["comm_id"].clone();
                self.iopub.send(Message::reply_to(msg, "comm_close", json!({"comm_id": id, "data": {}})));
                return true;
            }
            "comm_msg" | "comm_close" => return true,
            _ => return false,
        };
        let reply_type = msg.msg_type().replace("_request", "_reply");
        self.iopub.status(Some(msg), "busy");
        self.reply(channel, Message::reply_to(msg, &reply_type, content));
        self.iopub.status(Some(msg), "idle");
        true
    }
}

/// Runs the kernel until a shutdown request. `interp` runs on its own thread.
pub async fn serve(conn: ConnectionInfo, config: KernelConfig, interp: Box<dyn Interpreter>) -> Result<Shutdown> {
    let signer = Signer::new(&conn.key, &conn.signature_scheme)?;
    let session = uuid::Uuid::new_v4().to_string();

    let mut shell = zeromq::RouterSocket::new();
    shell.bind(&conn.endpoint(conn.shell_port)).await?;
    let mut control = zeromq::RouterSocket::new();
    control.bind(&conn.endpoint(conn.control_port)).await?;
    let mut stdin = zeromq::RouterSocket::new();
    stdin.bind(&conn.endpoint(conn.stdin_port)).await?;
    let mut iopub_sock = zeromq::XPubSocket::new();
    iopub_sock.bind(&conn.endpoint(conn.iopub_port)).await?;
    let mut hb = zeromq::RepSocket::new();
    hb.bind(&conn.endpoint(conn.hb_port)).await?;

    let (iopub_tx, iopub_rx) = mpsc::unbounded_channel();
    let iopub = Iopub { tx: iopub_tx, session: session.clone() };
    let (reply_tx, reply_rx) = mpsc::unbounded_channel();
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel::<InputAsk>();
    let (shutdown_tx, mut shutdown_rx) = mpsc::unbounded_channel();
    let (work_tx, work_rx) = std_mpsc::channel::<Message>();

    let shared = Arc::new(Shared {
        config,
        signer: signer.clone(),
        iopub: iopub.clone(),
        history: Mutex::new(History::default()),
        replies: reply_tx,
        interrupter: interp.interrupter(),
        stdin_cancel: Mutex::new(None),
        shutdown: shutdown_tx,
    });

    tokio::spawn(heartbeat(hb));
    tokio::spawn(iopub_loop(iopub_sock, iopub_rx, signer.clone(), session.clone()));
    iopub.status(None, "starting");

    let (shell_send, shell_recv) = shell.split();
    let (control_send, control_recv) = control.split();
    tokio::spawn(reply_loop(shell_send, control_send, reply_rx, signer.clone()));
    tokio::spawn(request_loop(shell_recv, Channel::Shell, shared.clone(), Some(work_tx.clone())));
    tokio::spawn(request_loop(control_recv, Channel::Control, shared.clone(), None));
    tokio::spawn(stdin_loop(stdin, stdin_rx, shared.clone()));

    let worker_shared = shared.clone();
    let worker = std::thread::Builder::new()
        .name("gpulab-worker".into())
        .spawn(move || crate::worker::worker_loop(interp, work_rx, worker_shared, stdin_tx))?;

    let how = shutdown_rx.recv().await.unwrap_or(Shutdown::Exit);
    drop(work_tx);
    shared.interrupter.terminate();
    // Let the shutdown reply and final status leave before the sockets close.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    // The worker may be deep in a cell; its thread is abandoned when the process exits.
    drop(worker);
    Ok(how)
}

fn to_frames(msg: ZmqMessage) -> Vec<Bytes> {
    msg.into_vec()
}

fn to_zmq(frames: Vec<Bytes>) -> Option<ZmqMessage> {
    ZmqMessage::try_from(frames).ok()
}

async fn heartbeat(mut hb: zeromq::RepSocket) {
    while let Ok(msg) = hb.recv().await {
        if hb.send(msg).await.is_err() {
            break;
        }
    }
}

/// Owns the XPUB socket: publishes queued messages and greets each new subscriber with
/// `iopub_welcome` (JEP 65), so a client knows when its subscription is live.
async fn iopub_loop(mut sock: zeromq::XPubSocket, mut rx: mpsc::UnboundedReceiver<Message>, signer: Signer, session: String) {
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(msg) = msg else { break };
                let topic = iopub_topic(&msg);
                if let Some(z) = to_zmq(wire::encode(&msg, &signer, Some(&topic))) {
                    let _ = sock.send(z).await;
                }
            }
            sub = sock.recv() => {
                let Ok(sub) = sub else { continue };
                let Some(frame) = sub.get(0) else { continue };
                if frame.first() == Some(&1) {
                    let topic = String::from_utf8_lossy(&frame[1..]).into_owned();
                    let welcome = Message::new("iopub_welcome", &session, json!({"subscription": topic}));
                    if let Some(z) = to_zmq(wire::encode(&welcome, &signer, Some(&topic))) {
                        let _ = sock.send(z).await;
                    }
                }
            }
        }
    }
}

fn iopub_topic(msg: &Message) -> String {
    format!("kernel.{}.{}", std::process::id(), msg.msg_type())
}

async fn reply_loop(
    mut shell: zeromq::RouterSendHalf,
    mut control: zeromq::RouterSendHalf,
    mut rx: mpsc::UnboundedReceiver<Reply>,
    signer: Signer,
) {
    while let Some((channel, msg)) = rx.recv().await {
        let Some(z) = to_zmq(wire::encode(&msg, &signer, None)) else { continue };
        let sent = match channel {
            Channel::Shell => shell.send(z).await,
            Channel::Control => control.send(z).await,
        };
        if let Err(e) = sent {
            eprintln!("gpulab-kernel: could not send {}: {e}", msg.msg_type());
        }
    }
}

/// Receives on shell or control. A message that fails to decode or verify is logged and
/// dropped; the loop goes on answering everything after it.
async fn request_loop(
    mut sock: zeromq::RouterRecvHalf,
    channel: Channel,
    shared: Arc<Shared>,
    work: Option<std_mpsc::Sender<Message>>,
) {
    loop {
        let frames = match sock.recv().await {
            Ok(m) => to_frames(m),
            Err(zeromq::ZmqError::NoMessage) => break,
            Err(e) => {
                eprintln!("gpulab-kernel: {channel:?} receive error: {e}");
                continue;
            }
        };
        let msg = match wire::decode(frames, &shared.signer) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("gpulab-kernel: dropped a message on {channel:?}: {e}");
                continue;
            }
        };
        if shared.answer_directly(channel, &msg) {
            continue;
        }
        match &work {
            Some(work) => {
                let _ = work.send(msg);
            }
            None => {
                // Control requests we do not implement (debug_request, usage_request) get an
                // error reply rather than silence, so a client never waits on them.
                let reply_type = msg.msg_type().replace("_request", "_reply");
                let content = json!({"status": "error", "ename": "NotImplemented",
                    "evalue": format!("{} is not supported by gpulab-kernel", msg.msg_type()), "traceback": []});
                shared.iopub.status(Some(&msg), "busy");
                shared.reply(channel, Message::reply_to(&msg, &reply_type, content));
                shared.iopub.status(Some(&msg), "idle");
            }
        }
    }
}

async fn stdin_loop(mut sock: zeromq::RouterSocket, mut asks: mpsc::UnboundedReceiver<InputAsk>, shared: Arc<Shared>) {
    loop {
        tokio::select! {
            ask = asks.recv() => {
                let Some((msg, answer)) = ask else { break };
                *shared.stdin_cancel.lock().unwrap() = Some(answer);
                if let Some(z) = to_zmq(wire::encode(&msg, &shared.signer, None)) {
                    if sock.send(z).await.is_err() {
                        if let Some(tx) = shared.stdin_cancel.lock().unwrap().take() {
                            let _ = tx.send(None);
                        }
                    }
                }
            }
            incoming = sock.recv() => {
                let Ok(incoming) = incoming else { continue };
                match wire::decode(to_frames(incoming), &shared.signer) {
                    Ok(reply) if reply.msg_type() == "input_reply" => {
                        let value = reply.content["value"].as_str().unwrap_or("").to_owned();
                        if let Some(tx) = shared.stdin_cancel.lock().unwrap().take() {
                            let _ = tx.send(Some(value));
                        }
                    }
                    Ok(other) => eprintln!("gpulab-kernel: unexpected {} on stdin", other.msg_type()),
                    Err(e) => eprintln!("gpulab-kernel: dropped a message on stdin: {e}"),
                }
            }
        }
    }
}
