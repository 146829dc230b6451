//! The mock interpreter and the test client shared by the protocol and fuzz tests.
#![allow(dead_code)]

use bytes::Bytes;
use gpulab_kernel::connection::ConnectionInfo;
use gpulab_kernel::interp::*;
use gpulab_kernel::server::{self, KernelConfig, Logger, Shutdown};
use gpulab_kernel::wire::{self, Message, Signer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

/// Echoes `code` to stdout; `display` emits two displays and an update; `panic` fails; `fail-slow`
/// fails after 300 ms (long enough for requests to queue behind it); `loop` spins until
/// interrupted; `input` asks for a line; `kernel-panic` panics inside the worker itself.
/// Every executed cell is recorded in `ran`, so a test can prove what never ran.
pub struct Mock {
    pub stop: Arc<MockStop>,
    pub ran: Arc<Mutex<Vec<String>>>,
    pub start_delay: Duration,
}

/// The mock's interrupt flag; every interrupt that reaches the interpreter is also counted.
#[derive(Default)]
pub struct MockStop(AtomicBool, pub AtomicUsize);

impl Interrupter for MockStop {
    fn interrupt(&self) {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Interpreter for Mock {
    fn start(&mut self, _outputs: Arc<dyn Outputs>) {
        std::thread::sleep(self.start_delay);
    }
    fn execute(&mut self, req: &ExecuteRequest, out: Arc<dyn Outputs>) -> ExecuteOutcome {
        self.stop.0.store(false, Ordering::SeqCst);
        self.ran.lock().unwrap().push(req.code.to_owned());
        match req.code {
            "fail-slow" => {
                std::thread::sleep(Duration::from_millis(300));
                ExecuteOutcome::error("Failed", "slowly", vec![])
            }
            "kernel-panic" => panic!("the mock interpreter exploded"),
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
                let got = out
                    .input("name? ", false)
                    .unwrap_or_else(|| "<none>".into());
                out.stream("stdout", &format!("hello {got}\n"));
                ExecuteOutcome::ok()
            }
            code => {
                out.stream("stdout", &format!("{code}\n"));
                let mut b = Bundle::new();
                b.insert("text/plain".into(), json!(code.len().to_string()));
                ExecuteOutcome::Ok {
                    result: Some(b),
                    payload: vec![],
                }
            }
        }
    }
    fn complete(&mut self, code: &str, cursor: usize) -> Completion {
        if code == "kernel-panic" {
            panic!("completion exploded");
        }
        Completion {
            matches: vec![format!("{}_done", &code[..cursor])],
            cursor_start: 0,
            cursor_end: cursor,
        }
    }
    fn inspect(&mut self, _code: &str, _cursor: usize, _d: u64) -> Option<Bundle> {
        None
    }
    fn interrupter(&self) -> Arc<dyn Interrupter> {
        self.stop.clone()
    }
}

pub struct Client {
    pub shell: zeromq::DealerSocket,
    pub control: zeromq::DealerSocket,
    pub stdin: zeromq::DealerSocket,
    pub iopub: zeromq::SubSocket,
    pub signer: Signer,
    pub session: String,
    pub conn: ConnectionInfo,
}

impl Client {
    pub async fn connect(conn: &ConnectionInfo) -> Client {
        // Like jupyter_client, shell and stdin share one identity so the kernel can route
        // input_request to the client that ran the cell.
        let dealer = || {
            let mut opts = zeromq::SocketOptions::default();
            opts.peer_identity(zeromq::util::PeerIdentity::try_from(b"client-1".to_vec()).unwrap());
            zeromq::DealerSocket::with_options(opts)
        };
        let mut shell = dealer();
        shell
            .connect(&conn.endpoint(conn.shell_port))
            .await
            .unwrap();
        let mut control = zeromq::DealerSocket::new();
        control
            .connect(&conn.endpoint(conn.control_port))
            .await
            .unwrap();
        let mut stdin = dealer();
        stdin
            .connect(&conn.endpoint(conn.stdin_port))
            .await
            .unwrap();
        let mut iopub = zeromq::SubSocket::new();
        iopub
            .connect(&conn.endpoint(conn.iopub_port))
            .await
            .unwrap();
        iopub.subscribe("").await.unwrap();
        let signer = Signer::new(&conn.key, "hmac-sha256").unwrap();
        let mut c = Client {
            shell,
            control,
            stdin,
            iopub,
            signer,
            session: "test-session".into(),
            conn: conn.clone(),
        };
        // The welcome message says our subscription is live, so nothing published later is lost.
        let welcome = c.next_iopub().await;
        assert_eq!(welcome.msg_type(), "iopub_welcome");
        c
    }

    pub fn request(&self, msg_type: &str, content: Value) -> Message {
        Message::new(msg_type, &self.session, content)
    }

    pub async fn send(sock: &mut zeromq::DealerSocket, frames: Vec<Bytes>) {
        sock.send(ZmqMessage::try_from(frames).unwrap())
            .await
            .unwrap();
    }

    pub async fn shell_request(&mut self, msg_type: &str, content: Value) -> (Message, Message) {
        let req = self.request(msg_type, content);
        let frames = wire::encode(&req, &self.signer, None);
        Self::send(&mut self.shell, frames).await;
        let reply = recv(&mut self.shell, &self.signer).await;
        (req, reply)
    }

    pub async fn next_iopub(&mut self) -> Message {
        let m = tokio::time::timeout(Duration::from_secs(5), self.iopub.recv())
            .await
            .expect("iopub timeout")
            .unwrap();
        wire::decode(m.into_vec(), &self.signer).unwrap()
    }

    /// iopub messages caused by `req`, up to its idle status.
    pub async fn iopub_until_idle(&mut self, req: &Message) -> Vec<Message> {
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

pub async fn recv(sock: &mut zeromq::DealerSocket, signer: &Signer) -> Message {
    let m = tokio::time::timeout(Duration::from_secs(5), sock.recv())
        .await
        .expect("reply timeout")
        .unwrap();
    wire::decode(m.into_vec(), signer).unwrap()
}

pub type Server = tokio::task::JoinHandle<anyhow::Result<Shutdown>>;

pub async fn start() -> (Client, Server) {
    let (c, server, _) = start_with(Duration::ZERO).await;
    (c, server)
}

pub fn test_conn() -> ConnectionInfo {
    // Five ports held open together, so they differ from each other; another process (or a
    // test running beside this one) can still take one before the server binds it, which
    // `start_logged` answers by trying new ports.
    let held: Vec<std::net::TcpListener> = (0..5)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let port = |i: usize| held[i].local_addr().unwrap().port();
    ConnectionInfo {
        transport: "tcp".into(),
        ip: "127.0.0.1".into(),
        shell_port: port(0),
        iopub_port: port(1),
        stdin_port: port(2),
        control_port: port(3),
        hb_port: port(4),
        key: "a-test-key".into(),
        signature_scheme: "hmac-sha256".into(),
    }
}

/// A server with a mock whose `start` takes `start_delay`; also returns what the mock ran.
pub async fn start_with(start_delay: Duration) -> (Client, Server, Arc<Mutex<Vec<String>>>) {
    start_logged(start_delay, None).await
}

/// As `start_with`, with the kernel's log lines going to `log` (stderr when None).
pub async fn start_logged(
    start_delay: Duration,
    log: Option<Logger>,
) -> (Client, Server, Arc<Mutex<Vec<String>>>) {
    let mut attempt = 0;
    loop {
        let conn = test_conn();
        let mut config = KernelConfig::new(
            gpulab_kernel::kernel_info(),
            gpulab_kernel::syntax::is_complete,
        );
        if let Some(log) = &log {
            config.log = log.clone();
        }
        let ran = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(MockStop::default());
        LAST_STOP.with(|s| *s.borrow_mut() = Some(stop.clone()));
        let mock = Mock {
            stop,
            ran: ran.clone(),
            start_delay,
        };
        let server = tokio::spawn(server::serve(conn.clone(), config, Box::new(mock)));
        tokio::time::sleep(Duration::from_millis(100)).await;
        // A server that has already returned could not bind a port (taken between test_conn
        // and the bind): the client would wait 30 s for it and fail. Try new ports instead.
        attempt += 1;
        if server.is_finished() && attempt < 5 {
            continue;
        }
        return (Client::connect(&conn).await, server, ran);
    }
}

thread_local! {
    /// The interrupter of the last mock this thread started, for tests that count interrupts.
    pub static LAST_STOP: std::cell::RefCell<Option<Arc<MockStop>>> = const { std::cell::RefCell::new(None) };
}

/// How many interrupts reached the last mock started on this thread.
pub fn interrupts_seen() -> usize {
    LAST_STOP.with(|s| {
        s.borrow()
            .as_ref()
            .map_or(0, |s| s.1.load(Ordering::SeqCst))
    })
}
