//! The protocol layer against a mock interpreter, over real ZeroMQ sockets: fast, and no evcxr.

mod common;

use bytes::Bytes;
use common::*;
use gpulab_kernel::server::Shutdown;
use gpulab_kernel::wire::{self, Message, Signer};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_info_execute_and_outputs() {
    let (mut c, _server) = start().await;
    let (_, info) = c.shell_request("kernel_info_request", json!({})).await;
    assert_eq!(info.msg_type(), "kernel_info_reply");
    assert_eq!(info.content["language_info"]["name"], "rust");
    assert_eq!(info.content["language_info"]["file_extension"], ".rs");
    assert_eq!(info.content["status"], "ok");

    let (req, reply) = c
        .shell_request("execute_request", json!({"code": "abc", "silent": false}))
        .await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(reply.content["execution_count"], 1);
    let msgs = c.iopub_until_idle(&req).await;
    let types: Vec<&str> = msgs.iter().map(|m| m.msg_type()).collect();
    assert_eq!(
        types,
        [
            "status",
            "execute_input",
            "stream",
            "execute_result",
            "status"
        ]
    );
    assert_eq!(msgs[2].content["text"], "abc\n");
    assert_eq!(msgs[3].content["data"]["text/plain"], "3");

    let (req, _) = c
        .shell_request("execute_request", json!({"code": "display"}))
        .await;
    let msgs = c.iopub_until_idle(&req).await;
    let displays: Vec<&Message> = msgs
        .iter()
        .filter(|m| m.msg_type().contains("display"))
        .collect();
    assert_eq!(displays.len(), 3);
    assert_eq!(displays[0].content["transient"]["display_id"], "d1");
    assert_eq!(displays[2].msg_type(), "update_display_data");
    assert_eq!(displays[2].content["data"]["text/plain"], "one, updated");

    let (req, reply) = c
        .shell_request("execute_request", json!({"code": "panic"}))
        .await;
    assert_eq!(reply.content["status"], "error");
    assert_eq!(reply.content["ename"], "panic");
    let msgs = c.iopub_until_idle(&req).await;
    assert!(msgs
        .iter()
        .any(|m| m.msg_type() == "error" && m.content["evalue"] == "boom"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_unsigned_messages_are_dropped_and_the_kernel_keeps_answering() {
    let (mut c, _server) = start().await;
    let forger = Signer::new("wrong-key", "hmac-sha256").unwrap();
    let evil = c.request("execute_request", json!({"code": "evil"}));
    Client::send(&mut c.shell, wire::encode(&evil, &forger, None)).await;
    let unsigned = c.request("execute_request", json!({"code": "unsigned"}));
    Client::send(
        &mut c.shell,
        wire::encode(&unsigned, &Signer::new("", "").unwrap(), None),
    )
    .await;
    Client::send(&mut c.shell, vec![Bytes::from_static(b"garbage")]).await;
    // A good request after the bad ones is answered, and it is the first thing executed.
    let (_, reply) = c
        .shell_request("execute_request", json!({"code": "good"}))
        .await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(
        reply.content["execution_count"], 1,
        "a dropped message must not have run"
    );
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

    let (_, comp) = c
        .shell_request("complete_request", json!({"code": "pri", "cursor_pos": 3}))
        .await;
    assert_eq!(comp.content["matches"], json!(["pri_done"]));
    assert_eq!(comp.content["cursor_end"], 3);

    for (code, status) in [
        ("fn f() {", "incomplete"),
        ("let x = 1;", "complete"),
        ("fn f() { ) }", "invalid"),
    ] {
        let (_, r) = c
            .shell_request("is_complete_request", json!({"code": code}))
            .await;
        assert_eq!(r.content["status"], status, "{code}");
    }

    let (_, h) = c
        .shell_request(
            "history_request",
            json!({"hist_access_type": "tail", "n": 5, "output": false, "raw": true}),
        )
        .await;
    assert_eq!(h.content["history"], json!([[1, 1, "loop"]]));

    // stdin: the kernel asks, the client answers on the stdin channel.
    let req = c.request(
        "execute_request",
        json!({"code": "input", "allow_stdin": true}),
    );
    Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
    let ask = recv(&mut c.stdin, &c.signer).await;
    assert_eq!(ask.msg_type(), "input_request");
    assert_eq!(ask.content["prompt"], "name? ");
    let answer = Message::reply_to(&ask, "input_reply", json!({"value": "Ada"}));
    Client::send(&mut c.stdin, wire::encode(&answer, &c.signer, None)).await;
    let _ = recv(&mut c.shell, &c.signer).await;
    let msgs = c.iopub_until_idle(&req).await;
    assert!(msgs
        .iter()
        .any(|m| m.msg_type() == "stream" && m.content["text"] == "hello Ada\n"));

    let sd = c.request("shutdown_request", json!({"restart": true}));
    Client::send(&mut c.control, wire::encode(&sd, &c.signer, None)).await;
    let sd_reply = recv(&mut c.control, &c.signer).await;
    assert_eq!(sd_reply.content["restart"], true);
    let how = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(how, Shutdown::Restart);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_cell_aborts_the_queue_behind_it_and_the_next_cell_runs() {
    let (mut c, _server, ran) = start_with(Duration::ZERO).await;
    let failing = c.request(
        "execute_request",
        json!({"code": "fail-slow", "stop_on_error": true}),
    );
    Client::send(&mut c.shell, wire::encode(&failing, &c.signer, None)).await;
    let mut queued = Vec::new();
    for i in 0..5 {
        let req = c.request("execute_request", json!({"code": format!("queued {i}")}));
        Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
        queued.push(req);
    }
    let reply = recv(&mut c.shell, &c.signer).await;
    assert_eq!(reply.parent_header["msg_id"], failing.header["msg_id"]);
    assert_eq!(reply.content["status"], "error");
    for req in &queued {
        let reply = recv(&mut c.shell, &c.signer).await;
        assert_eq!(reply.parent_header["msg_id"], req.header["msg_id"]);
        assert_eq!(reply.msg_type(), "execute_reply");
        assert_eq!(reply.content, json!({"status": "aborted"}));
        assert_eq!(reply.metadata["status"], "aborted");
    }
    // As ipykernel: only status messages with an aborted request as parent: busy on arrival,
    // busy again as it is taken (another request went idle since), idle.
    let mut iopub = Vec::new();
    let last = &queued[4].header["msg_id"];
    while !iopub.iter().any(|m: &Message| {
        &m.parent_header["msg_id"] == last && m.content["execution_state"] == "idle"
    }) {
        iopub.push(c.next_iopub().await);
    }
    for req in &queued {
        let states: Vec<&Value> = iopub
            .iter()
            .filter(|m| m.parent_header["msg_id"] == req.header["msg_id"])
            .map(|m| &m.content["execution_state"])
            .collect();
        assert_eq!(states, ["busy", "busy", "idle"]);
    }
    // The queue is drained: the next request runs, and the aborted ones never reached the mock.
    let (_, reply) = c
        .shell_request("execute_request", json!({"code": "after"}))
        .await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(
        reply.content["execution_count"], 2,
        "aborted cells must not be counted"
    );
    assert_eq!(*ran.lock().unwrap(), ["fail-slow", "after"]);

    // stop_on_error false, or a silent failure, aborts nothing.
    for content in [
        json!({"code": "fail-slow", "stop_on_error": false}),
        json!({"code": "fail-slow", "silent": true}),
    ] {
        let failing = c.request("execute_request", content);
        Client::send(&mut c.shell, wire::encode(&failing, &c.signer, None)).await;
        let next = c.request("execute_request", json!({"code": "runs anyway"}));
        Client::send(&mut c.shell, wire::encode(&next, &c.signer, None)).await;
        assert_eq!(
            recv(&mut c.shell, &c.signer).await.content["status"],
            "error"
        );
        assert_eq!(recv(&mut c.shell, &c.signer).await.content["status"], "ok");
    }
    assert_eq!(ran.lock().unwrap().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_inside_the_worker_becomes_an_error_reply_and_the_kernel_keeps_answering() {
    let (mut c, _server, ran) = start_with(Duration::ZERO).await;
    let (req, reply) = c
        .shell_request("execute_request", json!({"code": "kernel-panic"}))
        .await;
    assert_eq!(reply.content["status"], "error");
    assert_eq!(reply.content["ename"], "KernelPanic");
    assert_eq!(reply.content["evalue"], "the mock interpreter exploded");
    let msgs = c.iopub_until_idle(&req).await;
    assert!(
        msgs.iter()
            .any(|m| m.msg_type() == "error" && m.content["ename"] == "KernelPanic"),
        "{msgs:?}"
    );
    assert_eq!(msgs.last().unwrap().content["execution_state"], "idle");

    let (req, reply) = c
        .shell_request(
            "complete_request",
            json!({"code": "kernel-panic", "cursor_pos": 3}),
        )
        .await;
    assert_eq!(reply.msg_type(), "complete_reply");
    assert_eq!(reply.content["status"], "error");
    assert_eq!(reply.content["evalue"], "completion exploded");
    c.iopub_until_idle(&req).await;

    // The worker survived both: a normal cell runs and the count goes on.
    let (_, reply) = c
        .shell_request("execute_request", json!({"code": "still here"}))
        .await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(reply.content["execution_count"], 2);
    assert_eq!(*ran.lock().unwrap(), ["kernel-panic", "still here"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_goes_out_as_a_cell_arrives_even_while_the_interpreter_starts() {
    let (mut c, _server, _ran) = start_with(Duration::from_millis(1500)).await;
    let req = c.request("execute_request", json!({"code": "first"}));
    let sent = Instant::now();
    Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
    let first = loop {
        let m = c.next_iopub().await;
        if m.parent_header["msg_id"] == req.header["msg_id"] {
            break m;
        }
    };
    let busy_after = sent.elapsed();
    assert_eq!(
        (first.msg_type(), &first.content["execution_state"]),
        ("status", &json!("busy"))
    );
    assert!(
        busy_after < Duration::from_millis(500),
        "busy took {busy_after:?}"
    );
    let reply = recv(&mut c.shell, &c.signer).await;
    assert_eq!(reply.content["status"], "ok");
    // The mock was still starting when busy went out: the reply waited for it.
    assert!(
        sent.elapsed() > Duration::from_millis(1000),
        "reply after {:?}",
        sent.elapsed()
    );
    let msgs = c.iopub_until_idle(&req).await;
    let types: Vec<&str> = msgs.iter().map(|m| m.msg_type()).collect();
    assert_eq!(
        types,
        ["execute_input", "stream", "execute_result", "status"],
        "exactly one busy, then idle"
    );

    // A cell queued behind another says busy on arrival and again when it starts, after the
    // first cell's idle, so a frontend that shows the latest status shows Busy throughout.
    let a = c.request(
        "execute_request",
        json!({"code": "fail-slow", "stop_on_error": false}),
    );
    let b = c.request("execute_request", json!({"code": "second"}));
    Client::send(&mut c.shell, wire::encode(&a, &c.signer, None)).await;
    Client::send(&mut c.shell, wire::encode(&b, &c.signer, None)).await;
    let mut seen = Vec::new();
    loop {
        let m = c.next_iopub().await;
        let who = if m.parent_header["msg_id"] == a.header["msg_id"] {
            "a"
        } else {
            "b"
        };
        let what = match m.msg_type() {
            "status" => m.content["execution_state"].as_str().unwrap().to_owned(),
            other => other.to_owned(),
        };
        let done = who == "b" && what == "idle";
        seen.push(format!("{who}:{what}"));
        if done {
            break;
        }
    }
    let statuses: Vec<&str> = seen
        .iter()
        .map(String::as_str)
        .filter(|s| s.ends_with("busy") || s.ends_with("idle"))
        .collect();
    assert_eq!(
        statuses,
        ["a:busy", "b:busy", "a:idle", "b:busy", "b:idle"],
        "{seen:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_interrupt_of_an_idle_kernel_does_nothing_and_the_next_cell_runs() {
    // The interpreter is still starting (as a real session warms up), with no cell sent.
    let (mut c, _server, ran) = start_with(Duration::from_millis(800)).await;
    let int = c.request("interrupt_request", json!({}));
    Client::send(&mut c.control, wire::encode(&int, &c.signer, None)).await;
    let int_reply = recv(&mut c.control, &c.signer).await;
    assert_eq!(int_reply.msg_type(), "interrupt_reply");
    assert_eq!(
        interrupts_seen(),
        0,
        "an idle kernel's interrupt reached the interpreter"
    );
    let (_, reply) = c
        .shell_request("execute_request", json!({"code": "after"}))
        .await;
    assert_eq!(reply.content["status"], "ok");
    assert_eq!(*ran.lock().unwrap(), ["after"]);

    // With a cell running, the interrupt does reach it.
    let req = c.request("execute_request", json!({"code": "loop"}));
    Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let int = c.request("interrupt_request", json!({}));
    Client::send(&mut c.control, wire::encode(&int, &c.signer, None)).await;
    let _ = recv(&mut c.control, &c.signer).await;
    let reply = recv(&mut c.shell, &c.signer).await;
    assert_eq!(reply.content["ename"], "KeyboardInterrupt");
    assert_eq!(interrupts_seen(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_from_the_kernel_carries_the_kernels_session_not_the_clients() {
    // Two clients (a notebook and, say, the Jupyter server's own connection) with their own
    // session ids: the kernel answers both under one kernel session id, as the messaging spec
    // asks and JupyterLab relies on (it drops iopub messages from "another" kernel session).
    let (mut c, _server) = start().await;
    let (_, info) = c.shell_request("kernel_info_request", json!({})).await;
    let kernel_session = info.session().to_string();
    assert!(!kernel_session.is_empty());
    assert_ne!(kernel_session, c.session);

    c.session = "another-client".into();
    let (req, reply) = c
        .shell_request("execute_request", json!({"code": "abc"}))
        .await;
    assert_eq!(reply.session(), kernel_session);
    let (_, info2) = c.shell_request("kernel_info_request", json!({})).await;
    assert_eq!(info2.session(), kernel_session);
    let msgs = c.iopub_until_idle(&req).await;
    assert!(msgs.len() >= 3);
    for m in &msgs {
        assert_eq!(m.session(), kernel_session, "{}", m.msg_type());
    }
    // stdin too.
    let req = c.request(
        "execute_request",
        json!({"code": "input", "allow_stdin": true}),
    );
    Client::send(&mut c.shell, wire::encode(&req, &c.signer, None)).await;
    let ask = recv(&mut c.stdin, &c.signer).await;
    assert_eq!(ask.session(), kernel_session);
    let answer = c.request("input_reply", json!({"value": "Ada"}));
    let answer = Message {
        identities: ask.identities.clone(),
        parent_header: ask.header.clone(),
        ..answer
    };
    Client::send(&mut c.stdin, wire::encode(&answer, &c.signer, None)).await;
    let reply = recv(&mut c.shell, &c.signer).await;
    assert_eq!(reply.session(), kernel_session);
}
