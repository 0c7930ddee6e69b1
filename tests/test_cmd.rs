//! `tessera test` itself: missing paths, cases without expected files, the per-case time limit,
//! cases ended by a signal, and cases outliving `tessera test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_tessera")
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("test-cmd-{name}"))
}

fn tessera_test(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["test"];
    all.extend_from_slice(args);
    let r = common::tessera(&all, &[]);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn a_path_that_does_not_exist_is_an_error() {
    let (code, stdout, stderr) = tessera_test(&["/nonexistent/tessera-cases"]);
    assert_eq!(code, 2, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stderr.contains("/nonexistent/tessera-cases: no such file or directory"),
        "{stderr}"
    );
    assert!(!stdout.contains("passed"), "{stdout}");
}

#[test]
fn a_case_without_expected_files_checks_only_its_exit_status() {
    let d = dir("no-expected");
    std::fs::write(d.join("ok.tsr"), "print(1 + 1)\n").unwrap();
    let (code, stdout, _) = tessera_test(&[d.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
    // A failing script without `.code` still fails.
    std::fs::write(d.join("bad.tsr"), "print(undefined_name)\n").unwrap();
    let (code, stdout, _) = tessera_test(&[d.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("FAILED") && stdout.contains("bad.tsr"),
        "{stdout}"
    );
    assert!(stdout.contains("1 passed, 1 failed"), "{stdout}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_case_past_its_time_limit_is_killed_and_fails() {
    let d = dir("timeout");
    std::fs::write(
        d.join("spin.tsr"),
        "print(\"started\")\nwhile True:\n    pass\n",
    )
    .unwrap();
    let start = Instant::now();
    let (code, stdout, _) = tessera_test(&[d.to_str().unwrap(), "--timeout", "1.5"]);
    let took = start.elapsed();
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("timed out after 1.5 s"), "{stdout}");
    assert!(stdout.contains("0 passed, 1 failed"), "{stdout}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_timeout_is_refused() {
    for bad in ["0", "-3", "soon", "1e99"] {
        let (code, _, stderr) = tessera_test(&[".", &format!("--timeout={bad}")]);
        assert_eq!(code, 2, "--timeout {bad}: {stderr}");
        assert!(stderr.contains("positive number of seconds"), "{stderr}");
    }
}

#[cfg(unix)]
#[test]
fn a_case_ended_by_a_signal_names_it_and_shows_its_stderr() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("signal");
    // Stands in for the `tessera` binary: writes to stderr, then dies of SIGSEGV.
    let fake = d.join("fake-tessera");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'about to fault' >&2\nkill -SEGV $$\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let case = d.join("case.tsr");
    std::fs::write(&case, "print(1)\n").unwrap();
    match tessera::golden::run_case(&fake, &case, false, tessera::golden::TIMEOUT) {
        tessera::golden::Outcome::Failed(report) => {
            assert!(report.contains("killed by signal 11 (SIGSEGV)"), "{report}");
            assert!(report.contains("about to fault"), "{report}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The pids whose parent is `pid` (from /proc).
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the fields after the last ')'.
        let rest = stat.rsplit_once(')').map(|r| r.1).unwrap_or("");
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// Whether `pid` is gone (or a zombie waiting to be reaped).
#[cfg(target_os = "linux")]
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|r| r.1.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_case_dies_with_tessera_test() {
    let d = dir("orphan");
    std::fs::write(d.join("spin.tsr"), "while True:\n    pass\n").unwrap();
    let mut t = Command::new(exe())
        .args(["test", d.to_str().unwrap(), "--timeout", "100"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start tessera test");
    let start = Instant::now();
    let kids = loop {
        let k = children(t.id());
        if !k.is_empty() || start.elapsed() > Duration::from_secs(20) {
            break k;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!kids.is_empty(), "tessera test started no case");
    // SIGTERM, as a CI runner or `timeout` sends.
    let term = Command::new("kill")
        .args(["-TERM", &t.id().to_string()])
        .status()
        .expect("kill");
    assert!(term.success());
    let _ = t.wait();
    let start = Instant::now();
    while !kids.iter().all(|&k| gone(k)) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = kids.iter().copied().filter(|&k| !gone(k)).collect();
    for k in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &k.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "case processes {left:?} outlived tessera test"
    );
    let _ = std::fs::remove_dir_all(Path::new(&d));
}

/// `tessera test DIR` run with a time limit: a test that hangs fails instead.
fn tessera_test_within(d: &Path, limit: Duration) -> (i32, String, String) {
    let out_path = d.with_extension("out");
    let err_path = d.with_extension("err");
    let mut child = Command::new(exe())
        .arg("test")
        .arg(d)
        .env("NO_COLOR", "1")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tessera test {} did not finish in {limit:?}", d.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (
        status.code().unwrap_or(-1),
        read(&out_path),
        read(&err_path),
    )
}

#[cfg(unix)]
#[test]
fn symbolic_link_loops_visit_each_directory_once() {
    let d = dir("symlink-loops");
    std::fs::write(d.join("ok.tsr"), "print(1)\n").unwrap();
    std::fs::write(d.join("ok.stdout"), "1\n").unwrap();
    std::os::unix::fs::symlink(".", d.join("a")).unwrap();
    std::os::unix::fs::symlink(".", d.join("b")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("..", d.join("sub/up")).unwrap();
    let (code, stdout, stderr) = tessera_test_within(&d, Duration::from_secs(60));
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    // the one script runs once, not once per path through the links
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
#[test]
fn a_named_pipe_or_a_device_is_skipped_with_a_warning() {
    let d = dir("fifo");
    std::fs::write(d.join("ok.tsr"), "print(1)\n").unwrap();
    let made = Command::new("mkfifo")
        .arg(d.join("page.md"))
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.md")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.tsr")).unwrap();
    let (code, stdout, stderr) = tessera_test_within(&d, Duration::from_secs(60));
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
    for name in ["page.md", "zero.md", "zero.tsr"] {
        assert!(
            stderr.contains("warning: skipping")
                && stderr.contains(&format!("{name}: not a regular file")),
            "{name}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
#[test]
fn an_expected_file_that_is_a_device_fails_the_case() {
    let d = dir("expected-device");
    std::fs::write(d.join("ok.tsr"), "print(1)\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("ok.stdout")).unwrap();
    let (code, stdout, stderr) = tessera_test_within(&d, Duration::from_secs(60));
    assert_eq!(code, 1, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("FAILED") && stdout.contains("ok.stdout: not a regular file"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
