//! Running the `tessera` binary from the command-line tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// What one run of the binary did.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs `tessera ARGS…` with `NO_COLOR=1` and the variables of `env`.
pub fn tessera<S: AsRef<OsStr>>(args: &[S], env: &[(&str, &str)]) -> Ran {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run tessera");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: start.elapsed(),
    }
}

/// A fresh, empty directory for one test (`tag` keeps tests apart).
pub fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a temporary directory");
    d
}

/// Writes `src` to `dir/name` and runs it with `tessera run`.
pub fn run_script(dir: &std::path::Path, name: &str, src: &str) -> Ran {
    let path = dir.join(name);
    std::fs::write(&path, src).expect("write a script");
    tessera(&["run".as_ref(), path.as_os_str()], &[])
}

/// Each `(name, bytes)` written to `dir/name.ext` fails `op.load` with E0500 (or E0700)
/// naming the file, after the script's earlier output, without a panic.
pub fn assert_bad_files_fail(dir: &std::path::Path, ext: &str, cases: Vec<(&str, Vec<u8>)>) {
    for (name, bytes) in cases {
        let file = dir.join(format!("{name}.{ext}"));
        std::fs::write(&file, bytes).expect("write a bad file");
        let r = run_script(
            dir,
            &format!("{name}.tsr"),
            &format!(
                "print('start')\nx = op.load({:?})\n",
                file.display().to_string()
            ),
        );
        assert_eq!(r.code, 1, "{name}: {}", r.stderr);
        assert_eq!(r.stdout, "start\n", "{name}");
        assert!(
            r.stderr.contains("error[E0500]") || r.stderr.contains("error[E0700]"),
            "{name}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!("{name}.{ext}")),
            "{name}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{name}: {}", r.stderr);
    }
}

/// `f(i, &items[i])` for every item, on all cores (2 to 8 workers, each taking the next item
/// not started); the results in the items' order.
pub fn on_all_cores<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(i, item);
                done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}
