//! The sockets: heartbeat, shell, control, stdin and iopub bound as the connection file says,
//! each served by a task on a multi-thread tokio runtime; the session lives on its own thread
//! ([`crate::eval`]).

use crate::eval::{kernel_info, Evaluator, Interrupter, Out};
use crate::wire::{Request, Verifier};
use jupyter_protocol::{
    ConnectionInfo, InterruptReply, JupyterMessage, JupyterMessageContent, ReplyStatus,
    ShutdownReply, Status, Stdio,
};
use jupyter_zmq_client::{
    create_kernel_control_connection, create_kernel_heartbeat_connection,
    create_kernel_iopub_connection, create_kernel_shell_connection, create_kernel_stdin_connection,
};
use std::path::Path;
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Duration;
use tessera_repl::SessionOptions;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use zeromq::{SocketRecv, SocketSend};

/// How long a reply gets to leave before the process exits on shutdown.
const LINGER: Duration = Duration::from_millis(100);

/// Stack of the evaluator thread: deep recursion in user code reaches the interpreter's
/// recursion limit (E0500) long before this.
const EVAL_STACK: usize = 1 << 30;

fn log(msg: impl std::fmt::Display) {
    eprintln!("tessera kernel: {msg}");
}

/// Reads and checks a connection file.
pub fn read_connection_file(path: &Path) -> Result<ConnectionInfo, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the connection file {}: {e}", path.display()))?;
    let info: ConnectionInfo = serde_json::from_str(&text)
        .map_err(|e| format!("the connection file {} is not valid: {e}", path.display()))?;
    if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "unsupported signature scheme `{}` in {} (only hmac-sha256 is supported)",
            info.signature_scheme,
            path.display()
        ));
    }
    Ok(info)
}

/// `tessera kernel --connection-file F`: serves until shutdown; returns the exit status.
pub fn run_kernel(connection_file: &Path, opts: SessionOptions) -> i32 {
    let info = match read_connection_file(connection_file) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let (out_tx, out_rx) = unbounded_channel::<Out>();
    let (req_tx, req_rx) = std_mpsc::channel::<Request>();
    let (ready_tx, ready_rx) = std_mpsc::channel::<Result<Arc<Interrupter>, String>>();
    let eval_out = out_tx.clone();
    let spawned = std::thread::Builder::new()
        .name("tessera-eval".into())
        .stack_size(EVAL_STACK)
        .spawn(move || match Evaluator::new(opts, eval_out) {
            Ok(ev) => {
                let _ = ready_tx.send(Ok(ev.interrupter()));
                ev.run(req_rx);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        });
    if let Err(e) = spawned {
        eprintln!("error: cannot start the evaluator thread: {e}");
        return 1;
    }
    let interrupter = match ready_rx.recv() {
        Ok(Ok(i)) => i,
        Ok(Err(e)) => {
            eprintln!("error: cannot start a session: {e}");
            return 1;
        }
        Err(_) => {
            eprintln!("error: the evaluator thread ended while starting");
            return 1;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the I/O runtime: {e}");
            return 1;
        }
    };
    let code = runtime.block_on(serve(info, out_tx, out_rx, req_tx, interrupter));
    // Do not wait for the evaluator: it may be in the middle of a cell.
    std::process::exit(code);
}

async fn serve(
    info: ConnectionInfo,
    out_tx: UnboundedSender<Out>,
    out_rx: UnboundedReceiver<Out>,
    req_tx: std_mpsc::Sender<Request>,
    interrupter: Arc<Interrupter>,
) -> i32 {
    let session_id = uuid::Uuid::new_v4().to_string();
    let verifier = Arc::new(Verifier::new(&info.key));
    let bound = async {
        let hb = create_kernel_heartbeat_connection(&info).await?;
        let shell = create_kernel_shell_connection(&info, &session_id).await?;
        let control = create_kernel_control_connection(&info, &session_id).await?;
        let stdin = create_kernel_stdin_connection(&info, &session_id).await?;
        let iopub = create_kernel_iopub_connection(&info, &session_id).await?;
        Ok::<_, jupyter_zmq_client::RuntimeError>((hb, shell, control, stdin, iopub))
    }
    .await;
    let (mut hb, shell, mut control, _stdin, iopub) = match bound {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot bind the kernel's sockets: {e}");
            return 1;
        }
    };
    let (shell_tx, mut shell_rx) = shell.split();

    // Heartbeat: echo every ping.
    tokio::spawn(async move {
        loop {
            match hb.socket.recv().await {
                Ok(m) => {
                    if let Err(e) = hb.socket.send(m).await {
                        log(format!("heartbeat: {e}"));
                    }
                }
                Err(e) => {
                    log(format!("heartbeat: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });

    // The one writer of iopub and of shell replies.
    let writer = tokio::spawn(write_loop(out_rx, iopub, shell_tx));
    let _ = out_tx.send(Out::Iopub(JupyterMessage::new(Status::starting(), None)));

    // Shell: verify, then queue for the evaluator in arrival order.
    let shell_verifier = verifier.clone();
    let shell_task = tokio::spawn(async move {
        loop {
            match shell_rx.socket.recv().await {
                Ok(m) => match shell_verifier.accept(m.into_vec()) {
                    Ok(req) => {
                        if req_tx.send(req).is_err() {
                            log("the evaluator has stopped");
                            return;
                        }
                    }
                    Err(why) => log(format!("dropped a shell message: {why}")),
                },
                Err(e) => {
                    log(format!("shell socket: {e}"));
                    return;
                }
            }
        }
    });

    // Control: answered here, never queued behind a running cell.
    let control_interrupter = interrupter.clone();
    let control_out = out_tx.clone();
    let control_task = tokio::spawn(async move {
        loop {
            let frames = match control.socket.recv().await {
                Ok(m) => m.into_vec(),
                Err(e) => {
                    log(format!("control socket: {e}"));
                    return;
                }
            };
            let req = match verifier.accept(frames) {
                Ok(r) => r,
                Err(why) => {
                    log(format!("dropped a control message: {why}"));
                    continue;
                }
            };
            let parent = &req.msg;
            let reply: Option<JupyterMessage> = match &parent.content {
                JupyterMessageContent::KernelInfoRequest(_) => {
                    Some(kernel_info().as_child_of(parent))
                }
                JupyterMessageContent::InterruptRequest(_) => {
                    control_interrupter.interrupt();
                    Some(
                        InterruptReply {
                            status: ReplyStatus::Ok,
                            error: None,
                        }
                        .as_child_of(parent),
                    )
                }
                JupyterMessageContent::ShutdownRequest(r) => {
                    let reply = ShutdownReply {
                        restart: r.restart,
                        status: ReplyStatus::Ok,
                        error: None,
                    };
                    if let Err(e) = control.send(reply.as_child_of(parent)).await {
                        log(format!("control socket: {e}"));
                    }
                    let _ = control_out.send(Out::Exit);
                    // Exit even if the writer is stuck behind a slow client.
                    tokio::time::sleep(LINGER * 10).await;
                    std::process::exit(0);
                }
                _ => {
                    log(format!(
                        "ignoring a `{}` message on control",
                        req.msg_type()
                    ));
                    None
                }
            };
            if let Some(r) = reply {
                if let Err(e) = control.send(r).await {
                    log(format!("control socket: {e}"));
                }
            }
        }
    });

    // SIGINT interrupts the running cell instead of ending the process.
    #[cfg(unix)]
    let sig_interrupter = interrupter.clone();
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::interrupt()) {
            Ok(mut s) => {
                while s.recv().await.is_some() {
                    sig_interrupter.interrupt();
                }
            }
            Err(e) => log(format!("cannot handle SIGINT: {e}")),
        }
    });

    // End with the parent process (the Jupyter server) so no kernel is orphaned.
    #[cfg(unix)]
    if let Some(parent) = std::env::var("JPY_PARENT_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|&p| p == std::os::unix::process::parent_id())
    {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if std::os::unix::process::parent_id() != parent {
                    log("the parent process is gone; exiting");
                    std::process::exit(0);
                }
            }
        });
    }

    tokio::select! {
        _ = writer => 0,
        _ = shell_task => 1,
        _ = control_task => 1,
    }
}

/// Sends what the evaluator and the control handler queue, in order; consecutive stream
/// outputs of one cell that are waiting together leave as one message.
async fn write_loop(
    mut rx: UnboundedReceiver<Out>,
    mut iopub: jupyter_zmq_client::KernelIoPubConnection,
    mut shell: jupyter_zmq_client::RouterSendConnection,
) {
    let mut batch: Vec<Out> = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < 1024 {
            match rx.try_recv() {
                Ok(o) => batch.push(o),
                Err(_) => break,
            }
        }
        for o in coalesce(std::mem::take(&mut batch)) {
            match o {
                Out::Iopub(m) => {
                    if let Err(e) = iopub.send(m).await {
                        log(format!("iopub socket: {e}"));
                    }
                }
                Out::Shell(m) => {
                    if let Err(e) = shell.send(m).await {
                        log(format!("shell socket: {e}"));
                    }
                }
                Out::Exit => {
                    tokio::time::sleep(LINGER).await;
                    std::process::exit(0);
                }
            }
        }
    }
}

/// Merges adjacent `stream` messages with the same parent and stream name.
pub fn coalesce(batch: Vec<Out>) -> Vec<Out> {
    let mut out: Vec<Out> = Vec::with_capacity(batch.len());
    for o in batch {
        if let (Some(Out::Iopub(prev)), Out::Iopub(next)) = (out.last_mut(), &o) {
            if let (
                JupyterMessageContent::StreamContent(a),
                JupyterMessageContent::StreamContent(b),
            ) = (&mut prev.content, &next.content)
            {
                let same_parent = prev.parent_header.as_ref().map(|h| &h.msg_id)
                    == next.parent_header.as_ref().map(|h| &h.msg_id);
                if same_parent
                    && matches!(
                        (&a.name, &b.name),
                        (Stdio::Stdout, Stdio::Stdout) | (Stdio::Stderr, Stdio::Stderr)
                    )
                {
                    a.text.push_str(&b.text);
                    continue;
                }
            }
        }
        out.push(o);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use jupyter_protocol::StreamContent;

    #[test]
    fn adjacent_streams_of_one_parent_merge() {
        let a = JupyterMessage::new(jupyter_protocol::KernelInfoRequest {}, None);
        let b = JupyterMessage::new(jupyter_protocol::KernelInfoRequest {}, None);
        let s = |t: &str, p: &JupyterMessage| {
            Out::Iopub(JupyterMessage::new(StreamContent::stdout(t), Some(p)))
        };
        let e = |t: &str, p: &JupyterMessage| {
            Out::Iopub(JupyterMessage::new(StreamContent::stderr(t), Some(p)))
        };
        let merged = coalesce(vec![
            s("1", &a),
            s("2", &a),
            e("x", &a),
            s("3", &a),
            s("4", &b),
        ]);
        let texts: Vec<String> = merged
            .iter()
            .map(|o| match o {
                Out::Iopub(m) => match &m.content {
                    JupyterMessageContent::StreamContent(c) => c.text.clone(),
                    _ => unreachable!(),
                },
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(texts, vec!["12", "x", "3", "4"]);
    }

    #[test]
    fn connection_file_errors_are_reported() {
        let dir = std::env::temp_dir().join(format!("tessera-conn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = read_connection_file(&dir.join("missing.json")).unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{").unwrap();
        assert!(read_connection_file(&bad)
            .unwrap_err()
            .contains("not valid"));
        let md5 = dir.join("md5.json");
        std::fs::write(
            &md5,
            r#"{"ip": "127.0.0.1", "transport": "tcp", "shell_port": 1, "iopub_port": 2,
                "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": "k",
                "signature_scheme": "hmac-md5", "kernel_name": "tessera"}"#,
        )
        .unwrap();
        assert!(read_connection_file(&md5).unwrap_err().contains("hmac-md5"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
