//! The protocol layer against a mock interpreter, over real ZeroMQ sockets: fast, and no evcxr.

use bytes::Bytes;
use gpulab_kernel::connection::ConnectionInfo;
use gpulab_kernel::interp::*;
use gpulab_kernel::server::{self, KernelConfig, Shutdown};
use gpulab_kernel::wire::{self, Message, Signer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// Echoes `code` to stdout; `display` emits two displays and an update; `panic` fails; `loop`
/// spins until interrupted; `input` asks for a line.
struct Mock {
    stop: Arc<MockStop>,
}

#[derive(Default)]
struct MockStop(AtomicBool);

impl Interrupter for MockStop {
    fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Interpreter for Mock {
    fn execute(&mut self, req: &ExecuteRequest, out: Arc<dyn Outputs>) -> ExecuteOutcome {
        self.stop.0.store(false, Ordering::SeqCst);
        match req.code {
            "display" => {
                let mut b = Bundle::new();
                b.insert("text/plain".into(), json!("one"));
                out.display(b.clone(), json!({}), Some("d1".into()), false);
                out.display(b.clone(), json!({}), None, false);
                b.insert("text/plain".into(), json!("one, updated"));
                out.display(b, json!({}), Some("d1".into()), true);
                ExecuteOutcome::ok()
            }
            "panic" => ExecuteOutcome::error("panic", "boom", vec!["boom".into()]),
            "loop" => {
                while !self.stop.0.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                ExecuteOutcome::error("KeyboardInterrupt", "interrupted", vec![])
            }
            "input" => {
                let got = out.input("name? ", false).unwrap_or_else(|| "<none>".into());
                out.stream("stdout", &format!("hello {got}\n"));
                ExecuteOutcome::ok()
            }
            code => {
                out.stream("stdout", &format!("{code}\n"));
                let mut b = Bundle::new();
                b.insert("text/plain".into(), json!(code.len().to_string()));
                ExecuteOutcome::Ok { result: Some(b), payload: vec![] }
            }
        }
    }
    fn complete(&mut self, code: &str, cursor: usize) -> Completion {
        Completion { matches: vec![format!("{}_done", &code[..cursor])], cursor_start: 0, cursor_end: cursor }
    }
    fn inspect(&mut self, _code: &str, _cursor: usize, _d: u64) -> Option<Bundle> {
        None
    }
    fn interrupter(&self) -> Arc<dyn Interrupter> {
        self.stop.clone()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Client {
    shell: zeromq::DealerSocket,
    control: zeromq::DealerSocket,
    stdin: zeromq::DealerSocket,
    iopub: zeromq::SubSocket,
    signer: Signer,
    session: String,
}

impl Client {
    async fn connect(conn: &ConnectionInfo) -> Client {
        // Like jupyter_client, shell and stdin share one identity so the kernel can route
        // input_request to the client that ran the cell.
        let dealer = || {
            let mut opts = zeromq::SocketOptions::default();
            opts.peer_identity(zeromq::util::PeerIdentity::try_from(b"client-1".to_vec()).unwrap());
            zeromq::DealerSocket::with_options(opts)
        };
        let mut shell = dealer();
        shell.connect(&conn.endpoint(conn.shell_port)).await.unwrap();
        let mut control = zeromq::DealerSocket::new();
        control.connect(&conn.endpoint(conn.control_port)).await.unwrap();
        let mut stdin = dealer();
        stdin.connect(&conn.endpoint(conn.stdin_port)).await.unwrap();
        let mut iopub = zeromq::SubSocket::new();
        iopub.connect(&conn.endpoint(conn.iopub_port)).await.unwrap();
        iopub.subscribe("").await.unwrap();
        let signer = Signer::new(&conn.key, "hmac-sha256").unwrap();
        let mut c = Client { shell, control, stdin, iopub, signer, session: "test-session".into() };
        // The welcome message says our subscription is live, so nothing published later is lost.
        let welcome = c.next_iopub().await;
        assert_eq!(welcome.msg_type(), "iopub_welcome");
        c
    }

    fn request(&self, msg_type: &str, content: Value) -> Message {
        Message::new(msg_type, &self.session, content)
    }

    async fn send(sock: &mut zeromq::DealerSocket, frames: Vec<Bytes>) {
        sock.send(ZmqMessage::try_from(frames).unwrap()).await.unwrap();
    }

    async fn shell_request(&mut self, msg_type: &str, content: Value) -> (Message, Message) {
        let req = self.request(msg_type, content);
        let frames = wire::encode(&req, &self.signer, None);
        Self::send(&mut self.shell, frames).await;
        let reply = recv(&mut self.shell, &self.signer).await;
        (req, reply)
    }

    async fn next_iopub(&mut self) -> Message {
        let m = tokio::time::timeout(Duration::from_secs(5), self.iopub.recv()).await.expect("iopub timeout").unwrap();
        wire::decode(m.into_vec(), &self.signer).unwrap()
    }

    /// iopub messages caused by `req`, up to its idle status.
    async fn iopub_until_idle(&mut self, req: &Message) -> Vec<Message> {
        let mut out = Vec::new();
        loop {
            let m = self.next_iopub().await;
            if m.parent_header["msg_id"] != req.header["msg_id"] {
                continue;
            }
            let idle = m.msg_type() == "status" && m.content["execution_state"] == "idle";
            out.push(m);
            if idle {
                return out;
            }
        }
    }
}

async fn recv(sock: &mut zeromq::DealerSocket, signer: &Signer) -> Message {
    let m = tokio::time::timeout(Duration::from_secs(5), sock.recv()).await.expect("reply timeout").unwrap();
    wire::decode(m.into_vec(), signer).unwrap()
}

async fn start() -> (Client, tokio::task::JoinHandle<anyhow::Result<Shutdown>>) {
    let conn = ConnectionInfo {
        transport: "tcp".into(),
        ip: "127.0.0.1".into(),
        shell_port: free_port(),
        iopub_port: free_port(),
        stdin_port: free_port(),
        control_port: free_port(),
        hb_port: free_port(),
        key: "a-test-key".into(),
        signature_scheme: "hmac-sha256".into(),
    };
    let config = KernelConfig { kernel_info: gpulab_kernel::kernel_info(), is_complete: gpulab_kernel::syntax::is_complete };
    let server = tokio::spawn(server::serve(conn.clone(), config, Box::new(Mock { stop: Arc::default() })));
    tokio::time::sleep(Duration::from_millis(100)).await;
    (Client::connect(&conn).await, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_info_execute_and_outputs() {
    let (mut c, _server) = start().await;
    let (_, info) = c.shell_request("kernel_info_request", json!({})).await;
    assert_eq!(info.msg_type(), "kernel_info_reply");
    assert_eq!(info.content["language_info"]["name"], "rust");
    assert_eq!(info.content["language_info"]["file_extension"], ".rs");
    assert_eq!(info.content["status"], "ok");

    let (req, reply) = c.shell_request("execute_request", json!({"code": "abc", "silent": false})).await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(reply.content["execution_count"], 1);
    let msgs = c.iopub_until_idle(&req).await;
    let types: Vec<&str> = msgs.iter().map(|m| m.msg_type()).collect();
    assert_eq!(types, ["status", "execute_input", "stream", "execute_result", "status"]);
    assert_eq!(msgs[2].content["text"], "abc\n");
    assert_eq!(msgs[3].content["data"]["text/plain"], "3");

    let (req, _) = c.shell_request("execute_request", json!({"code": "display"})).await;
    let msgs = c.iopub_until_idle(&req).await;
    let displays: Vec<&Message> = msgs.iter().filter(|m| m.msg_type().contains("display")).collect();
    assert_eq!(displays.len(), 3);
    assert_eq!(displays[0].content["transient"]["display_id"], "d1");
    assert_eq!(displays[2].msg_type(), "update_display_data");
    assert_eq!(displays[2].content["data"]["text/plain"], "one, updated");

    let (req, reply) = c.shell_request("execute_request", json!({"code": "panic"})).await;
    assert_eq!(reply.content["status"], "error");
    assert_eq!(reply.content["ename"], "panic");
    let msgs = c.iopub_until_idle(&req).await;
    assert!(msgs.iter().any(|m| m.msg_type() == "error" && m.content["evalue"] == "boom"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_unsigned_messages_are_dropped_and_the_kernel_keeps_answering() {
    let (mut c, _server) = start().await;
    let forger = Signer::new("wrong-key", "hmac-sha256").unwrap();
    let evil = c.request("execute_request", json!({"code": "evil"}));
    Client::send(&mut c.shell, wire::encode(&evil, &forger, None)).await;
    let unsigned = c.request("execute_request", json!({"code": "unsigned"}));
    Client::send(&mut c.shell, wire::encode(&unsigned, &Signer::new("", "").unwrap(), None)).await;
    Client::send(&mut c.shell, vec![Bytes::from_static(b"garbage")]).await;
    // A good request after the bad ones is answered, and it is the first thing executed.
    let (_, reply) = c.shell_request("execute_request", json!({"code": "good"})).await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(reply.content["execution_count"], 1, "a dropped message must not have run");
    let (_, again) = c.shell_request("kernel_info_request", json!({})).await;
    assert_eq!(again.content["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_complete_is_complete_history_input_shutdown() {
    let (mut c, server) = start().await;
    let req = c.request("execute_request", json!({"code": "loop"}));
    Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let int = c.request("interrupt_request", json!({}));
    Client::send(&mut c.control, wire::encode(&int, &c.signer, None)).await;
    let int_reply = recv(&mut c.control, &c.signer).await;
    assert_eq!(int_reply.msg_type(), "interrupt_reply");
    let reply = recv(&mut c.shell, &c.signer).await;
    assert_eq!(reply.content["ename"], "KeyboardInterrupt");

    let (_, comp) = c.shell_request("complete_request", json!({"code": "pri", "cursor_pos": 3})).await;
    assert_eq!(comp.content["matches"], json!(["pri_done"]));
    assert_eq!(comp.content["cursor_end"], 3);

    for (code, status) in [("fn f() {", "incomplete"), ("let x = 1;", "complete"), ("fn f() { ) }", "invalid")] {
        let (_, r) = c.shell_request("is_complete_request", json!({"code": code})).await;
        assert_eq!(r.content["status"], status, "{code}");
    }

    let (_, h) = c.shell_request("history_request", json!({"hist_access_type": "tail", "n": 5, "output": false, "raw": true})).await;
    assert_eq!(h.content["history"], json!([[1, 1, "loop"]]));

    // stdin: the kernel asks, the client answers on the stdin channel.
    let req = c.request("execute_request", json!({"code": "input", "allow_stdin": true}));
    Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
    let ask = recv(&mut c.stdin, &c.signer).await;
    assert_eq!(ask.msg_type(), "input_request");
    assert_eq!(ask.content["prompt"], "name? ");
    let answer = Message::reply_to(&ask, "input_reply", json!({"value": "Ada"}));
    Client::send(&mut c.stdin, wire::encode(&answer, &c.signer, None)).await;
    let _ = recv(&mut c.shell, &c.signer).await;
    let msgs = c.iopub_until_idle(&req).await;
    assert!(msgs.iter().any(|m| m.msg_type() == "stream" && m.content["text"] == "hello Ada\n"));

    let sd = c.request("shutdown_request", json!({"restart": true}));
    Client::send(&mut c.control, wire::encode(&sd, &c.signer, None)).await;
    let sd_reply = recv(&mut c.control, &c.signer).await;
    assert_eq!(sd_reply.content["restart"], true);
    let how = tokio::time::timeout(Duration::from_secs(5), server).await.unwrap().unwrap().unwrap();
    assert_eq!(how, Shutdown::Restart);
}
