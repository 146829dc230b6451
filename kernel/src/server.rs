//! The protocol layer: five ZeroMQ sockets and the routing of every message, in one place
//! (`route`). Requests that need no interpreter state (kernel_info, is_complete, history,
//! comm_info, interrupt, shutdown) are answered on the socket tasks at once, so they stay fast
//! while the interpreter is busy warming up or running a cell; execute, complete and inspect go,
//! in order, to the worker thread (worker.rs).

use crate::connection::ConnectionInfo;
use crate::history::History;
use crate::hub::{Channel, InputAsk, Iopub, Reply, Shared, Work};
use crate::interp::{Interpreter, IsComplete};
use crate::messages::{
    self, to_content, CommInfoReply, ErrorReply, HistoryReply, InterruptReply, IsCompleteReply,
    Request, ShutdownReply, Undecodable,
};
use crate::wire::{self, Message, Signer};
use anyhow::Result;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use tokio::sync::mpsc;
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

pub use crate::hub::{KernelConfig, Logger, Shutdown};

/// Sends `content` as the reply to `msg`, between busy and idle with `msg` as parent (as
/// ipykernel does for every request it handles on the socket).
fn answer(shared: &Shared, channel: Channel, msg: &Message, content: Value) {
    shared.iopub.status(Some(msg), "busy");
    shared.reply(
        channel,
        Message::reply_to(msg, &messages::reply_type(msg.msg_type()), content),
    );
    shared.iopub.status(Some(msg), "idle");
}

/// busy, a log line, idle: for a message that gets no reply.
fn ignore(shared: &Shared, msg: &Message, why: &str) {
    shared.iopub.status(Some(msg), "busy");
    shared.log(why);
    shared.iopub.status(Some(msg), "idle");
}

/// The one routing table: every verified message on shell or control goes through here.
fn route(shared: &Shared, channel: Channel, msg: Message, work: Option<&std_mpsc::Sender<Work>>) {
    let req = match Request::decode(&msg, shared.config.test_hooks) {
        Ok(req) => req,
        // ipykernel logs "Unknown message type" (kernelbase.py, `dispatch_shell`; "UNKNOWN
        // CONTROL MESSAGE TYPE" in `dispatch_control`) and xeus logs "received unknown message"
        // (xkernel_core.cpp, `dispatch`); neither replies, both say busy and idle around it.
        // A client waiting on an unknown `*_request` is told nothing, as with those kernels.
        Err(Undecodable::Unknown) => {
            return ignore(
                shared,
                &msg,
                &format!(
                    "ignoring unknown message type {:?} on {channel:?}",
                    msg.msg_type()
                ),
            );
        }
        // ipykernel drops a request whose content it cannot read with a logged error and no
        // reply, which leaves the client waiting. Here a known request gets an error reply that
        // says which field was wrong (the reply is the record; nothing is logged); anything else
        // (comm messages) is logged and dropped.
        Err(Undecodable::BadContent(why)) => {
            if msg.msg_type().ends_with("_request") {
                let err = ErrorReply {
                    ename: "BadRequest".into(),
                    evalue: why,
                    traceback: vec![],
                };
                return answer(shared, channel, &msg, to_content(&err));
            }
            return ignore(
                shared,
                &msg,
                &format!("dropped a {} with bad content: {why}", msg.msg_type()),
            );
        }
    };
    match req {
        Request::KernelInfo => {
            let mut info = shared.config.kernel_info.clone();
            info["status"] = json!("ok");
            info["protocol_version"] = json!(wire::PROTOCOL_VERSION);
            answer(shared, channel, &msg, info);
        }
        Request::IsComplete(r) => {
            let reply = match (shared.config.is_complete)(&r.code) {
                IsComplete::Complete => IsCompleteReply::Complete,
                IsComplete::Incomplete { indent } => IsCompleteReply::Incomplete { indent },
                IsComplete::Invalid => IsCompleteReply::Invalid,
                IsComplete::Unknown => IsCompleteReply::Unknown,
            };
            answer(shared, channel, &msg, to_content(&reply));
        }
        Request::History(r) => {
            let history = shared.history().query(&r);
            answer(shared, channel, &msg, to_content(&HistoryReply { history }));
        }
        Request::CommInfo(_) => answer(
            shared,
            channel,
            &msg,
            to_content(&CommInfoReply { comms: Map::new() }),
        ),
        Request::Interrupt => {
            if shared.iopub.cell_pending() {
                shared.interrupter.interrupt();
            }
            if let Some(tx) = shared.take_stdin_waiter() {
                let _ = tx.send(None);
            }
            answer(shared, channel, &msg, to_content(&InterruptReply {}));
        }
        Request::Shutdown(r) => {
            let _ = shared.shutdown.send(if r.restart {
                Shutdown::Restart
            } else {
                Shutdown::Exit
            });
            answer(
                shared,
                channel,
                &msg,
                to_content(&ShutdownReply { restart: r.restart }),
            );
        }
        // Comms are not offered: opening one is answered by closing it, as ipykernel does for
        // an unknown target.
        Request::CommOpen(r) => {
            shared.iopub.status(Some(&msg), "busy");
            shared.iopub.send(Message::reply_to(
                &msg,
                "comm_close",
                json!({"comm_id": r.comm_id, "data": {}}),
            ));
            shared.iopub.status(Some(&msg), "idle");
        }
        Request::CommOther => ignore(
            shared,
            &msg,
            &format!("ignoring {}: no comm is open", msg.msg_type()),
        ),
        Request::InputReply(_) => ignore(
            shared,
            &msg,
            &format!("ignoring input_reply on {channel:?} (it belongs on stdin)"),
        ),
        req @ (Request::Execute(_)
        | Request::Complete(_)
        | Request::Inspect(_)
        | Request::TestPanic) => {
            let Some(work) = work else {
                return ignore(
                    shared,
                    &msg,
                    &format!(
                        "ignoring {} on {channel:?}: it belongs on shell",
                        msg.msg_type()
                    ),
                );
            };
            // Busy the moment the request arrives, with it as parent; the worker says idle
            // after the reply.
            let busy_stamp = shared.iopub.busy_on_arrival(&msg);
            if let Err(std_mpsc::SendError(Work { msg, .. })) = work.send(Work {
                msg,
                req,
                busy_stamp,
            }) {
                // Only after shutdown: the worker has stopped taking requests.
                shared.log(&format!("{} after the worker stopped", msg.msg_type()));
                let err = ErrorReply {
                    ename: "KernelShuttingDown".into(),
                    evalue: "the kernel is shutting down".into(),
                    traceback: vec![],
                };
                shared.reply(
                    channel,
                    Message::reply_to(
                        &msg,
                        &messages::reply_type(msg.msg_type()),
                        to_content(&err),
                    ),
                );
                shared.iopub.worker_idle(&msg);
            }
        }
    }
}

/// Runs the kernel until a shutdown request. `interp` runs on its own thread.
pub async fn serve(
    conn: ConnectionInfo,
    config: KernelConfig,
    interp: Box<dyn Interpreter>,
) -> Result<Shutdown> {
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
    let iopub = Iopub::new(iopub_tx, session.clone());
    let (reply_tx, reply_rx) = mpsc::unbounded_channel();
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel::<InputAsk>();
    let (shutdown_tx, mut shutdown_rx) = mpsc::unbounded_channel();
    let (work_tx, work_rx) = std_mpsc::channel::<Work>();

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
    tokio::spawn(iopub_loop(
        iopub_sock,
        iopub_rx,
        signer.clone(),
        session.clone(),
    ));
    iopub.status(None, "starting");

    let (shell_send, shell_recv) = shell.split();
    let (control_send, control_recv) = control.split();
    tokio::spawn(reply_loop(
        shell_send,
        control_send,
        reply_rx,
        signer.clone(),
        session.clone(),
    ));
    tokio::spawn(request_loop(
        shell_recv,
        Channel::Shell,
        shared.clone(),
        Some(work_tx.clone()),
    ));
    tokio::spawn(request_loop(
        control_recv,
        Channel::Control,
        shared.clone(),
        None,
    ));
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
async fn iopub_loop(
    mut sock: zeromq::XPubSocket,
    mut rx: mpsc::UnboundedReceiver<Message>,
    signer: Signer,
    session: String,
) {
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(mut msg) = msg else { break };
                stamp_session(&mut msg, &session);
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

/// Every message the kernel sends carries the kernel's own session id in its header (the
/// messaging spec: "a kernel session id, in message headers from a kernel, should identify a
/// particular kernel process"), never the session of the client whose request it answers.
/// JupyterLab takes the kernel_info_reply's session as the kernel's and drops, as "old
/// messages", iopub messages whose header names another session; it also uses a change of
/// session to detect a restarted kernel.
fn stamp_session(msg: &mut Message, session: &str) {
    msg.header["session"] = json!(session);
}

fn iopub_topic(msg: &Message) -> String {
    format!("kernel.{}.{}", std::process::id(), msg.msg_type())
}

async fn reply_loop(
    mut shell: zeromq::RouterSendHalf,
    mut control: zeromq::RouterSendHalf,
    mut rx: mpsc::UnboundedReceiver<Reply>,
    signer: Signer,
    session: String,
) {
    while let Some((channel, mut msg)) = rx.recv().await {
        stamp_session(&mut msg, &session);
        let Some(z) = to_zmq(wire::encode(&msg, &signer, None)) else {
            continue;
        };
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
    work: Option<std_mpsc::Sender<Work>>,
) {
    loop {
        let frames = match sock.recv().await {
            Ok(m) => to_frames(m),
            Err(zeromq::ZmqError::NoMessage) => break,
            Err(e) => {
                shared.log(&format!("{channel:?} receive error: {e}"));
                continue;
            }
        };
        match wire::decode(frames, &shared.signer) {
            Ok(msg) => route(&shared, channel, msg, work.as_ref()),
            Err(e) => shared.log(&format!("dropped a message on {channel:?}: {e}")),
        }
    }
}

async fn stdin_loop(
    mut sock: zeromq::RouterSocket,
    mut asks: mpsc::UnboundedReceiver<InputAsk>,
    shared: Arc<Shared>,
) {
    loop {
        tokio::select! {
            ask = asks.recv() => {
                let Some((mut msg, answer)) = ask else { break };
                stamp_session(&mut msg, &shared.iopub.session);
                *shared.stdin_cancel.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer);
                if let Some(z) = to_zmq(wire::encode(&msg, &shared.signer, None)) {
                    if sock.send(z).await.is_err() {
                        if let Some(tx) = shared.take_stdin_waiter() {
                            let _ = tx.send(None);
                        }
                    }
                }
            }
            incoming = sock.recv() => {
                let Ok(incoming) = incoming else { continue };
                let msg = match wire::decode(to_frames(incoming), &shared.signer) {
                    Ok(msg) => msg,
                    Err(e) => {
                        shared.log(&format!("dropped a message on stdin: {e}"));
                        continue;
                    }
                };
                match Request::decode(&msg, false) {
                    Ok(Request::InputReply(reply)) => match shared.take_stdin_waiter() {
                        Some(tx) => {
                            let _ = tx.send(Some(reply.value));
                        }
                        None => shared.log("dropped an input_reply: no input was asked for"),
                    },
                    Ok(_) | Err(Undecodable::Unknown) => shared.log(&format!("dropped {:?} on stdin: only input_reply belongs there", msg.msg_type())),
                    Err(Undecodable::BadContent(why)) => shared.log(&format!("dropped an input_reply with bad content: {why}")),
                }
            }
        }
    }
}
