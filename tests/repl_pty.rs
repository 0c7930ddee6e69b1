//! The `tessera repl` binary driven through a pseudo-terminal, as a user at a terminal would:
//! tab completion, a multi-line `def`, Ctrl-C interrupting an infinite loop, Ctrl-C at the
//! prompt, history recalled across two runs, Ctrl-D exiting.
//!
//! The pty is opened with `openpty`; the child gets the slave side as its controlling terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code
#![cfg(unix)]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_tessera");
const TIMEOUT: Duration = Duration::from_secs(20);

struct Pty {
    master: std::fs::File,
    child: Child,
    /// Everything read so far, escape sequences removed.
    seen: String,
    /// How much of `seen` earlier `expect`s consumed.
    pos: usize,
}

/// Removes ANSI escape sequences (CSI `ESC [ ... letter`, and two-byte `ESC x`) and carriage
/// returns.
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\x1b' => {
                if it.next() == Some('[') {
                    for d in it.by_ref() {
                        if d.is_ascii_alphabetic() || d == '~' {
                            break;
                        }
                    }
                }
            }
            '\r' | '\x07' => {}
            c => out.push(c),
        }
    }
    out
}

impl Pty {
    fn spawn(history: &Path) -> Pty {
        let mut master: libc::c_int = 0;
        let mut slave: libc::c_int = 0;
        let ws = libc::winsize {
            ws_row: 24,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty with valid out-pointers and a window size.
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &ws,
            )
        };
        assert_eq!(r, 0, "openpty failed");
        // SAFETY: both fds were just opened and are owned here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let slave_fd = slave.as_raw_fd();
        let mut cmd = Command::new(EXE);
        cmd.arg("repl")
            .env("TESSERA_HISTORY", history)
            .env("TERM", "xterm")
            .env("NO_COLOR", "1")
            .stdin(Stdio::from(slave.try_clone().expect("dup")))
            .stdout(Stdio::from(slave.try_clone().expect("dup")))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(slave_fd, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn tessera repl");
        Pty {
            master: std::fs::File::from(master),
            child,
            seen: String::new(),
            pos: 0,
        }
    }

    fn send(&mut self, s: &str) {
        self.master
            .write_all(s.as_bytes())
            .expect("write to the pty");
        self.master.flush().expect("flush");
    }

    /// Reads what is available within `wait`; answers cursor-position queries.
    fn pump(&mut self, wait: Duration) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as libc::c_int) };
        if n <= 0 {
            return false;
        }
        let mut buf = [0u8; 4096];
        match self.master.read(&mut buf) {
            Ok(0) | Err(_) => false,
            Ok(k) => {
                let raw = String::from_utf8_lossy(&buf[..k]).to_string();
                if raw.contains("\x1b[6n") {
                    self.send("\x1b[1;1R");
                }
                self.seen.push_str(&strip_ansi(&raw));
                true
            }
        }
    }

    /// Waits until `needle` appears after what earlier calls consumed; returns the text up to
    /// and including it.
    fn expect(&mut self, needle: &str) -> String {
        let end = Instant::now() + TIMEOUT;
        loop {
            if let Some(i) = self.seen[self.pos..].find(needle) {
                let upto = self.pos + i + needle.len();
                let got = self.seen[self.pos..upto].to_string();
                self.pos = upto;
                return got;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!(
                    "timed out waiting for {needle:?}; the terminal shows:\n{}",
                    &self.seen[self.pos..]
                );
            }
            self.pump(Duration::from_millis(50));
        }
    }

    /// Reads for `d`, then returns everything not yet consumed (and consumes it).
    fn drain(&mut self, d: Duration) -> String {
        let end = Instant::now() + d;
        while Instant::now() < end {
            self.pump(Duration::from_millis(20));
        }
        let s = self.seen[self.pos..].to_string();
        self.pos = self.seen.len();
        s
    }

    /// Sends Ctrl-D at the prompt and waits for the exit status.
    fn quit(mut self) -> i32 {
        self.send("\x04");
        let end = Instant::now() + TIMEOUT;
        loop {
            self.pump(Duration::from_millis(20));
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code().unwrap_or(-1);
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("the REPL did not exit on Ctrl-D:\n{}", self.seen);
            }
        }
    }
}

fn temp_history(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-pty-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("history")
}

fn cleanup(history: &Path) {
    if let Some(dir) = history.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn completion_of_module_members_and_commands() {
    let h = temp_history("complete");
    let mut p = Pty::spawn(&h);
    p.expect(">>> ");
    // `op.matm` + Tab completes to `op.matmul`
    p.send("y = op.matm\t");
    p.expect("op.matmul");
    p.send("(op.full((2, 2), 3.0), op.eye(2))\r");
    p.expect(">>> ");
    p.send("y.tolist()\r");
    p.expect("[[3.0, 3.0], [3.0, 3.0]]");
    p.expect(">>> ");
    // attributes of a tensor in scope: `y.sh` + Tab
    p.send("y.sh\t\r");
    p.expect("(2, 2)");
    p.expect(">>> ");
    // `:` commands
    p.send(":va\t\r");
    p.expect("name  type");
    p.expect(">>> ");
    assert_eq!(p.quit(), 0);
    cleanup(&h);
}

#[test]
fn multi_line_def_and_block() {
    let h = temp_history("multiline");
    let mut p = Pty::spawn(&h);
    p.expect(">>> ");
    p.send("def twice(x):\r");
    p.expect("... ");
    // the continuation line starts indented: the body is typed without indentation
    p.send("y = x * 2\r");
    p.expect("... ");
    p.send("return y + 0\r");
    p.expect("... ");
    p.send("\r");
    p.expect(">>> ");
    p.send("twice(2121)\r");
    p.expect("4242");
    p.expect(">>> ");
    // an open bracket continues too
    p.send("z = [1,\r");
    p.expect("... ");
    p.send("2, 3]\r");
    p.expect(">>> ");
    p.send("sum(z) * 1000 + 7\r");
    p.expect("6007");
    p.expect(">>> ");
    assert_eq!(p.quit(), 0);
    cleanup(&h);
}

#[test]
fn ctrl_c_interrupts_a_loop_and_keeps_variables() {
    let h = temp_history("interrupt");
    let mut p = Pty::spawn(&h);
    p.expect(">>> ");
    p.send("kept = 31337\r");
    p.expect(">>> ");
    p.send("while True:\r");
    p.expect("... ");
    p.send("kept = kept\r");
    p.expect("... ");
    p.send("\r");
    // the loop runs: no prompt comes back on its own
    let running = p.drain(Duration::from_millis(500));
    assert!(
        !running.contains(">>> "),
        "the loop ended by itself: {running:?}"
    );
    p.send("\x03");
    p.expect("KeyboardInterrupt");
    p.expect(">>> ");
    p.send("kept + 1\r");
    p.expect("31338");
    p.expect(">>> ");
    // Ctrl-C at the prompt drops the line being typed
    p.send("this is not code");
    p.send("\x03");
    p.expect(">>> ");
    p.send("40 + 2\r");
    let out = p.expect(">>> ");
    assert!(out.contains("42"), "{out:?}");
    assert!(!out.contains("error"), "{out:?}");
    assert_eq!(p.quit(), 0);
    cleanup(&h);
}

#[test]
fn history_is_kept_across_runs() {
    let h = temp_history("history");
    let mut p = Pty::spawn(&h);
    p.expect(">>> ");
    p.send("remembered = 271828\r");
    p.expect(">>> ");
    p.send("def g():\r");
    p.expect("... ");
    p.send("return 5\r");
    p.expect("... ");
    p.send("\r");
    p.expect(">>> ");
    assert_eq!(p.quit(), 0);
    let text = std::fs::read_to_string(&h).expect("the history file exists");
    assert!(text.contains("remembered = 271828"), "{text}");

    // a second run recalls both entries with the up arrow
    let mut p = Pty::spawn(&h);
    p.expect(">>> ");
    p.send("\x1b[A");
    p.expect("return 5");
    // in a recalled block, Up first moves to the block's previous line, then to the older entry
    p.send("\x1b[A\x1b[A");
    p.expect("remembered = 271828");
    p.send("\r");
    p.expect(">>> ");
    p.send("remembered + 1\r");
    p.expect("271829");
    p.expect(">>> ");
    assert_eq!(p.quit(), 0);
    cleanup(&h);
}

/// `tessera repl` with piped stdin: no line editor, values echoed, errors reported without
/// ending the session; exit status 1 because a cell failed.
#[test]
fn piped_repl_echoes_values_and_goes_on_after_errors() {
    let mut child = Command::new(EXE)
        .args(["repl", "--device", "emu"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let input = "a = 6\na * 7\ndef f(x):\n    return x + 1\n\nf(a)\nmissing + 1\nprint('after the error', a)\n:device\nif a:\n    b = 1\nb + 1\n";
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout, "42\n7\nafter the error 6\ndevice: emu\n2\n",
        "stderr: {stderr}"
    );
    assert!(stderr.starts_with("error[E0100]"), "{stderr}");
    assert!(stderr.contains("missing + 1"), "{stderr}");
    assert!(!stderr.contains(">>>"), "{stderr}");
    assert_eq!(out.status.code(), Some(1));
}
