//! `tessera run` with stdout to a pipe: output is line-buffered, so a long run shows its
//! progress while it runs, and `print(..., flush=True)` pushes out a partial line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `src` with stdout to a pipe and returns the first `n` bytes it writes, read while the
/// process is still running (it is killed afterwards). `None` if they did not come in time.
fn first_bytes_while_running(tag: &str, src: &str, n: usize) -> Option<String> {
    let dir = common::fresh_dir(tag);
    let path = dir.join("slow.tsr");
    std::fs::write(&path, src).expect("write a script");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("run")
        .arg(&path)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run tessera");
    let mut out = child.stdout.take().expect("stdout pipe");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; n];
        let r = out.read_exact(&mut buf).map(|_| buf);
        let _ = tx.send(r);
    });
    let got = rx.recv_timeout(Duration::from_secs(60));
    // The script loops for far longer than the wait: it must still be running.
    let running = child.try_wait().expect("poll the child").is_none();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(running, "the script ended before its output was read");
    match got {
        Ok(Ok(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

/// A loop that runs for minutes in a debug build.
const LONG_LOOP: &str = "x = 0\nfor i in range(1000000000):\n    x = x + i\nprint(x)\n";

#[test]
fn a_printed_line_reaches_a_pipe_before_the_run_ends() {
    let src = format!("print(\"step 0\")\n{LONG_LOOP}");
    let got = first_bytes_while_running("flush-line", &src, 7);
    assert_eq!(got.as_deref(), Some("step 0\n"));
}

#[test]
fn flush_true_pushes_out_a_partial_line() {
    let src = format!("print(\"progress:\", end=\"\", flush=True)\n{LONG_LOOP}");
    let got = first_bytes_while_running("flush-partial", &src, 9);
    assert_eq!(got.as_deref(), Some("progress:"));
}

#[test]
fn stderr_warnings_stay_in_order_with_stdout() {
    // Both streams to the same pipe: the line printed before the dump comes before it.
    let dir = common::fresh_dir("flush-order");
    let path = dir.join("order.tsr");
    std::fs::write(
        &path,
        "print(\"before\")\n@op.kernel\ndef f(x):\n    return x + 1.0\ny = f(op.ones((4,)))\nprint(\"after\")\n",
    )
    .unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "\"{}\" run --dump graph \"{}\" 2>&1",
            env!("CARGO_BIN_EXE_tessera"),
            path.display()
        ))
        .env("NO_COLOR", "1")
        .output()
        .expect("run tessera");
    let text = String::from_utf8_lossy(&out.stdout);
    let (before, dump, after) = (
        text.find("before").expect("before"),
        text.find("graph @f").expect("a dump"),
        text.find("after").expect("after"),
    );
    assert!(before < dump && dump < after, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
