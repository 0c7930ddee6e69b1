//! The evaluator answered without sockets: message order, errors, aborts, completion.

use super::*;
use crate::wire::{frames, Verifier};
use serde_json::json;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

fn request(v: &Verifier, id: &str, msg_type: &str, content: Value) -> Request {
    let header = json!({
        "msg_id": id, "username": "u", "session": "s",
        "date": "2026-01-01T00:00:00Z", "msg_type": msg_type, "version": "5.3"
    });
    v.accept(frames(v, &[b"client"], &header, &content))
        .expect("signed")
}

fn exec(v: &Verifier, id: &str, code: &str) -> Request {
    request(
        v,
        id,
        "execute_request",
        json!({"code": code, "silent": false, "store_history": true,
               "user_expressions": {}, "allow_stdin": false, "stop_on_error": true}),
    )
}

/// (channel, msg_type, parent msg_id, content as JSON) of everything sent so far.
fn drain(rx: &mut UnboundedReceiver<Out>) -> Vec<(&'static str, String, String, Value)> {
    let mut got = Vec::new();
    while let Ok(o) = rx.try_recv() {
        let (ch, m) = match o {
            Out::Iopub(m) => ("iopub", m),
            Out::Shell(m) => ("shell", m),
            Out::Exit => {
                got.push(("exit", String::new(), String::new(), Value::Null));
                continue;
            }
        };
        if ch == "iopub" {
            assert!(
                m.zmq_identities.is_empty(),
                "iopub keeps no routing identity"
            );
        } else {
            assert_eq!(m.zmq_identities, vec![bytes::Bytes::from_static(b"client")]);
        }
        let parent = m
            .parent_header
            .as_ref()
            .map(|h| h.msg_id.clone())
            .unwrap_or_default();
        let content = serde_json::to_value(&m.content).unwrap();
        got.push((ch, m.header.msg_type.clone(), parent, content));
    }
    got
}

/// (parent msg_id, status) of every shell reply sent so far.
fn reply_statuses(rx: &mut UnboundedReceiver<Out>) -> Vec<(String, Value)> {
    drain(rx)
        .into_iter()
        .filter(|g| g.0 == "shell")
        .map(|g| (g.2, g.3["status"].clone()))
        .collect()
}

fn evaluator() -> (Evaluator, UnboundedReceiver<Out>, Verifier) {
    let (tx, rx) = unbounded_channel();
    let ev = Evaluator::new(SessionOptions::default(), tx).expect("session");
    (ev, rx, Verifier::new("key"))
}

#[test]
fn execute_sends_outputs_between_busy_and_idle_in_order() {
    let (mut ev, mut rx, v) = evaluator();
    ev.handle(&exec(&v, "a", "print('hi')\n1 + 1"));
    let got = drain(&mut rx);
    let kinds: Vec<(&str, &str)> = got.iter().map(|g| (g.0, g.1.as_str())).collect();
    assert_eq!(
        kinds,
        vec![
            ("iopub", "status"),
            ("iopub", "execute_input"),
            ("iopub", "stream"),
            ("iopub", "execute_result"),
            ("shell", "execute_reply"),
            ("iopub", "status"),
        ]
    );
    assert!(got.iter().all(|g| g.2 == "a"));
    assert_eq!(got[0].3["execution_state"], "busy");
    assert_eq!(got[2].3, json!({"name": "stdout", "text": "hi\n"}));
    let result = &got[3].3;
    assert_eq!(result["data"]["text/plain"], "2");
    assert_eq!(result["execution_count"], 1);
    // Fields that nbclient and the v5 schema need, never null.
    assert_eq!(result["transient"], json!({}));
    let reply = &got[4].3;
    assert_eq!(reply["status"], "ok");
    assert_eq!(reply["execution_count"], 1);
    assert_eq!(reply["user_expressions"], json!({}));
    assert_eq!(got[5].3["execution_state"], "idle");
}

#[test]
fn error_is_published_and_replied_with_the_diagnostic() {
    let (mut ev, mut rx, v) = evaluator();
    ev.handle(&exec(&v, "b", "nope"));
    let got = drain(&mut rx);
    let err = got
        .iter()
        .find(|g| g.1 == "error")
        .expect("an error output");
    assert_eq!(err.3["ename"], "E0100");
    let tb = err.3["traceback"].as_array().unwrap();
    assert!(tb.iter().any(|l| l.as_str().unwrap().contains("nope")));
    let reply = got.iter().find(|g| g.1 == "execute_reply").unwrap();
    assert_eq!(reply.3["status"], "error");
    assert_eq!(reply.3["ename"], "E0100");
    assert_eq!(reply.3["execution_count"], 1);
    // The session goes on.
    ev.handle(&exec(&v, "c", "2 * 3"));
    let got = drain(&mut rx);
    let result = got.iter().find(|g| g.1 == "execute_result").unwrap();
    assert_eq!(result.3["data"]["text/plain"], "6");
    assert_eq!(result.3["execution_count"], 2);
}

#[test]
fn failed_cell_aborts_only_queued_execute_requests() {
    let (mut ev, mut out, v) = evaluator();
    let (tx, rx) = std::sync::mpsc::channel();
    ev.rx = Some(rx);
    tx.send(exec(&v, "q1", "x = 1")).unwrap();
    tx.send(request(&v, "k", "kernel_info_request", json!({})))
        .unwrap();
    tx.send(exec(&v, "q2", "x = 2")).unwrap();
    ev.handle(&exec(&v, "f", "undefined_thing"));
    let replies = reply_statuses(&mut out);
    assert_eq!(
        replies,
        vec![
            ("f".into(), json!("error")),
            ("q1".into(), json!("aborted")),
            ("q2".into(), json!("aborted")),
        ]
    );
    // The kernel_info request is kept and answered next.
    let next = ev.next_request().unwrap();
    assert_eq!(next.msg_type(), "kernel_info_request");
}

#[test]
fn a_request_still_arriving_when_a_cell_fails_is_aborted() {
    // "Run All": the first cell fails before the client has finished sending the batch; the
    // request that arrives a few milliseconds later was sent before the error reply left.
    let (mut ev, mut out, v) = evaluator();
    let (tx, rx) = std::sync::mpsc::channel();
    ev.rx = Some(rx);
    let late = exec(&v, "late", "y = 1");
    let sender = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        tx.send(late).unwrap();
        tx
    });
    ev.handle(&exec(&v, "f", "undefined_thing"));
    let _tx = sender.join().unwrap();
    let replies = reply_statuses(&mut out);
    assert_eq!(
        replies,
        vec![
            ("f".into(), json!("error")),
            ("late".into(), json!("aborted"))
        ]
    );
}

#[test]
fn complete_counts_code_points() {
    let (mut ev, mut rx, v) = evaluator();
    // 'é' is two bytes: the cursor after "prin" is code point 7, byte 8.
    let code = "'é'; prin";
    ev.handle(&request(
        &v,
        "d",
        "complete_request",
        json!({"code": code, "cursor_pos": 9}),
    ));
    let got = drain(&mut rx);
    let reply = &got.iter().find(|g| g.1 == "complete_reply").unwrap().3;
    assert_eq!(reply["matches"], json!(["print"]));
    assert_eq!(reply["cursor_start"], 5);
    assert_eq!(reply["cursor_end"], 9);
}

#[test]
fn malformed_completion_and_inspection_requests_are_answered() {
    let (mut ev, mut rx, v) = evaluator();
    let cases = [
        ("complete_request", json!({"code": "pri", "cursor_pos": -5})),
        (
            "complete_request",
            json!({"code": "pri", "cursor_pos": 1e30}),
        ),
        ("complete_request", json!({"code": "pri"})),
        ("complete_request", json!({"cursor_pos": "x"})),
        (
            "inspect_request",
            json!({"code": "print", "cursor_pos": -1}),
        ),
        ("is_complete_request", json!({"code": 7})),
    ];
    for (i, (kind, content)) in cases.iter().enumerate() {
        ev.handle(&request(&v, &format!("m{i}"), kind, content.clone()));
        let got = drain(&mut rx);
        let want = kind.replace("_request", "_reply");
        let reply = got.iter().find(|g| g.1 == want);
        assert!(reply.is_some(), "{kind} {content}: no {want} in {got:?}");
        // is_complete replies carry the verdict as their status.
        let status = reply.unwrap().3["status"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let ok = if *kind == "is_complete_request" {
            ["complete", "incomplete", "invalid"].contains(&status.as_str())
        } else {
            status == "ok"
        };
        assert!(ok, "{kind} {content}: status {status:?}");
    }
    // A cursor past the end is the end; a negative one the start.
    assert_eq!(
        untyped_code_and_cursor(&json!({"code": "ab", "cursor_pos": 9})).1,
        2
    );
    assert_eq!(
        untyped_code_and_cursor(&json!({"code": "ab", "cursor_pos": -5})).1,
        0
    );
    assert_eq!(untyped_code_and_cursor(&json!({"code": "ab"})).1, 2);
}

#[test]
fn is_complete_history_kernel_info_and_shutdown() {
    let (mut ev, mut rx, v) = evaluator();
    ev.handle(&request(
        &v,
        "e",
        "is_complete_request",
        json!({"code": "def f():"}),
    ));
    ev.handle(&exec(&v, "g", "40 + 2"));
    ev.handle(&request(
        &v,
        "h",
        "history_request",
        json!({"hist_access_type": "tail", "n": 5, "output": true, "raw": true}),
    ));
    ev.handle(&request(&v, "i", "kernel_info_request", json!({})));
    ev.handle(&request(
        &v,
        "j",
        "shutdown_request",
        json!({"restart": false}),
    ));
    let got = drain(&mut rx);
    let reply = |t: &str| got.iter().find(|g| g.1 == t).unwrap().3.clone();
    assert_eq!(reply("is_complete_reply")["status"], "incomplete");
    assert_eq!(
        reply("history_reply")["history"],
        json!([[1, 1, ["40 + 2", "42"]]])
    );
    let info = reply("kernel_info_reply");
    assert_eq!(info["language_info"]["name"], "tessera");
    assert_eq!(info["language_info"]["file_extension"], ".tsr");
    assert_eq!(info["language_info"]["mimetype"], "text/x-tessera");
    assert_eq!(info["language_info"]["codemirror_mode"], "python");
    assert_eq!(info["language_info"]["pygments_lexer"], "python");
    assert_eq!(reply("shutdown_reply")["restart"], false);
    assert_eq!(got.last().unwrap().0, "exit");
}

#[test]
fn silent_cells_publish_nothing_and_keep_the_count() {
    let (mut ev, mut rx, v) = evaluator();
    let silent = request(
        &v,
        "s",
        "execute_request",
        json!({"code": "print(1)\n5", "silent": true, "store_history": false,
               "user_expressions": {}, "allow_stdin": false, "stop_on_error": true}),
    );
    ev.handle(&silent);
    let got = drain(&mut rx);
    let kinds: Vec<&str> = got.iter().map(|g| g.1.as_str()).collect();
    assert_eq!(kinds, vec!["status", "execute_reply", "status"]);
    assert_eq!(got[1].3["execution_count"], 0);
}

#[test]
fn interrupter_only_stops_a_running_cell() {
    let flag = Arc::new(AtomicBool::new(false));
    let i = Interrupter::new(flag.clone());
    assert!(!i.interrupt());
    assert!(!flag.load(Ordering::SeqCst));
    i.begin();
    assert!(i.interrupt());
    assert!(flag.load(Ordering::SeqCst));
    i.end();
    assert!(!flag.load(Ordering::SeqCst));
}

#[test]
fn a_figure_is_an_svg_image_with_its_text() {
    let (mut ev, mut rx, v) = evaluator();
    ev.handle(&exec(&v, "f", "plot.line([1.0, 2.0, 4.0], label='y')"));
    let got = drain(&mut rx);
    let result = got
        .iter()
        .find(|g| g.1 == "execute_result")
        .map(|g| &g.3)
        .expect("an execute_result");
    let data = result["data"].as_object().expect("a mime bundle");
    let mut mimes: Vec<&str> = data.keys().map(String::as_str).collect();
    mimes.sort();
    assert_eq!(mimes, ["image/svg+xml", "text/plain"]);
    assert_eq!(
        data["text/plain"],
        "figure: 1 series\n  line \"y\": 3 points, x in [0, 2], y in [1, 4]"
    );
    let svg = data["image/svg+xml"].as_str().expect("svg text");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.ends_with("</svg>\n"));
}
