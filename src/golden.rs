//! Golden-output tests of `.tsr` scripts (`tessera test`, SPEC §1), also run by `cargo test`.
//!
//! Each `NAME.tsr` runs as `tessera run NAME.tsr` in its own directory, with `NO_COLOR=1`, and
//! its stdout, stderr and exit status are compared with `NAME.stdout`, `NAME.stderr` and
//! `NAME.code` beside it; a missing file is not checked (without `NAME.code` the status must be
//! 0, so a script that fails is never a silent pass). Each case has a time limit
//! (`--timeout S`, 120 s by default): a case that runs longer is killed and fails, and so does
//! one ended by a signal (the report names it and shows the script's stderr). A case's process
//! dies with `tessera test`. Runs get `TESSERA_MAX_BYTES=4 GiB` unless it is set, so E0700
//! messages do not depend on the machine. Blessing writes `.stdout` always and `.stderr` /
//! `.code` when they are not empty / not 0 (removing stale ones).
//!
//! Snapshots: a line `# snapshot: graph, tile, ptx` (any of `graph`, `schedule`, `tile`,
//! `target`, `ptx`) makes the run also pass `--dump LEVEL` for each level, with
//! `TESSERA_DUMP_DIR` set to a fresh temporary directory so the dumps land in files there
//! instead of on the script's stderr; the dump of each level (every kernel the script compiles,
//! in order) is compared with `NAME.LEVEL` (`NAME.graph`, `NAME.schedule`, `NAME.tile`,
//! `NAME.target`, `NAME.ptx`). A declared snapshot whose file is missing fails; blessing writes
//! them all.
//!
//! Patterns: a line of `NAME.stdout` or `NAME.stderr` may hold `{{re:REGEX}}` holes; such a line
//! matches an output line when the text around the holes is equal and each hole matches its
//! regular expression (for measured times and other figures that change from run to run).
//! Blessing keeps a pattern line whose output line still matches it. Each run also gets a fresh,
//! empty `TESSERA_CACHE_DIR`, so autotune caches never leak between runs or into the home
//! directory. Runs get `TESSERA_CUDA=off` unless it is set: expected outputs are those of a
//! machine without a GPU (`auto` is the cpu), wherever the tests run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The scripts of `tests/golden`, `tests/ir` and `examples` under `root` that make a kernel
/// (`op.kernel`, `op.autotune`, `graph.grad`, `graph.value_and_grad` or an optimizer's
/// `.update(` in their text).
pub fn kernel_scripts(root: &std::path::Path) -> Vec<PathBuf> {
    discover(&[
        root.join("tests/golden"),
        root.join("tests/ir"),
        root.join("examples"),
    ])
    .into_iter()
    .filter(|p| {
        std::fs::read_to_string(p).is_ok_and(|t| {
            t.contains("op.kernel")
                || t.contains("op.autotune")
                || t.contains("graph.grad")
                || t.contains("graph.value_and_grad")
                || t.contains(".update(")
        })
    })
    .collect()
}

/// Every `.tsr` file, and every Markdown page with ```` ```tsr ```` blocks, under the given
/// files and directories, sorted. Each real directory is visited once (a symbolic link back
/// up the tree is not followed again) and each real file is one case; a `.tsr` or `.md` that
/// is not a regular file (a named pipe, a device) is skipped with a warning.
pub fn discover(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in paths {
        collect(p, &mut out, &mut seen);
    }
    out.sort();
    out.dedup();
    out
}

/// `seen`: the real paths of the directories and files already taken.
fn collect(p: &Path, out: &mut Vec<PathBuf>, seen: &mut std::collections::HashSet<PathBuf>) {
    let Ok(meta) = std::fs::metadata(p) else {
        return;
    };
    if meta.is_dir() {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if !seen.insert(real) {
            return;
        }
        if let Ok(rd) = std::fs::read_dir(p) {
            let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            // sorted, so that of two paths to one file the first in order is the one kept
            entries.sort();
            for e in entries {
                collect(&e, out, seen);
            }
        }
        return;
    }
    let is_tsr = p.extension().is_some_and(|e| e == "tsr");
    let is_md = p.extension().is_some_and(|e| e == "md");
    if !is_tsr && !is_md {
        return;
    }
    if !meta.is_file() {
        eprintln!("warning: skipping {}: not a regular file", p.display());
        return;
    }
    if is_tsr || is_guide_page(p) {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if seen.insert(real) {
            out.push(p.to_path_buf());
        }
    }
}

/// A Markdown file with ```` ```tsr ```` blocks: a page of the guide, tested by
/// [`crate::guide`].
fn is_guide_page(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "md")
        && read_case_file(p).is_ok_and(|t| t.contains("```tsr"))
}

/// The most bytes `tessera test` reads of a script, a page or an expected file.
pub const MAX_CASE_BYTES: u64 = tessera_lang::read::MAX_SCRIPT_BYTES;

/// The text of a script, page or expected file: only a regular file (a named pipe would block
/// and a device never end), of at most [`MAX_CASE_BYTES`], as UTF-8 (bad bytes replaced).
pub fn read_case_file(p: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind};
    let meta = std::fs::metadata(p)?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    match tessera_lang::read::read_bytes(p, MAX_CASE_BYTES) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(tessera_lang::read::ReadError::Io(e)) => Err(e),
        Err(_) => Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_CASE_BYTES >> 20),
        )),
    }
}

/// An expected file: `Ok(None)` when there is none; an error when it is there but cannot be
/// read (not a regular file, too large).
fn read_expected(p: &Path) -> Result<Option<String>, String> {
    match read_case_file(p) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}\n", p.display())),
    }
}

/// What one case did.
#[derive(Debug)]
pub enum Outcome {
    Passed,
    /// The report: one unified diff per mismatching stream.
    Failed(String),
    Blessed,
}

/// The output of one run.
struct Run {
    stdout: String,
    stderr: String,
    code: i32,
    /// `(level, dump)` for each snapshot level, in the order of the `# snapshot:` line.
    snapshots: Vec<(String, String)>,
}

/// The IR levels a snapshot may name (SPEC §1).
pub const SNAPSHOT_LEVELS: [&str; 5] = ["graph", "schedule", "tile", "target", "ptx"];

/// The levels of the first `# snapshot: a, b` line of a script (empty when it has none).
pub fn snapshot_levels(text: &str) -> Result<Vec<String>, String> {
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix('#') else {
            continue;
        };
        let Some(list) = rest.trim_start().strip_prefix("snapshot:") else {
            continue;
        };
        let mut out: Vec<String> = Vec::new();
        for l in list.split(',').map(str::trim).filter(|l| !l.is_empty()) {
            if !SNAPSHOT_LEVELS.contains(&l) {
                return Err(format!(
                    "unknown snapshot level '{l}' (levels are {})",
                    SNAPSHOT_LEVELS.join(", ")
                ));
            }
            if !out.iter().any(|o| o == l) {
                out.push(l.to_string());
            }
        }
        return Ok(out);
    }
    Ok(Vec::new())
}

/// A fresh, empty directory for one run's dumps (removed on drop).
struct DumpDir(PathBuf);

impl DumpDir {
    fn new() -> std::io::Result<DumpDir> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("tessera-dump-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)?;
        Ok(DumpDir(p))
    }
}

impl Drop for DumpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The memory limit of golden runs (4 GiB) unless `TESSERA_MAX_BYTES` is set.
pub const GOLDEN_MAX_BYTES: &str = "4294967296";

/// The default per-case time limit (`tessera test --timeout S`).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// What `tessera run` printed and its exit status.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Runs one script as a golden case does (its directory, `NO_COLOR`, the memory limit, the
/// time limit, `$DIR` for its directory in the output), with `env` set too; no snapshots.
pub fn run_script(exe: &Path, tsr: &Path, env: &[(&str, &str)]) -> Result<Output, String> {
    run_script_within(exe, tsr, env, TIMEOUT)
}

/// [`run_script`] with its own time limit.
pub fn run_script_within(
    exe: &Path,
    tsr: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Output, String> {
    run_script_args(exe, tsr, &[], env, timeout)
}

/// [`run_script_within`] with options of `run` before the script (`--target spirv`, ...).
pub fn run_script_args(
    exe: &Path,
    tsr: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Output, String> {
    let r = run_env(exe, tsr, &[], args, env, timeout)?;
    Ok(Output {
        stdout: r.stdout,
        stderr: r.stderr,
        code: r.code,
    })
}

/// A `tessera` command with the environment of a golden run: the fixed memory limit, no GPU
/// unless `TESSERA_CUDA` is set, `NO_COLOR`, no standard input, and `cache_dir` as the
/// autotune cache. `TESSERA_TEST_RUNNER` (words split at spaces, e.g. `qemu-aarch64 -cpu max`)
/// runs the binary through that program, as cargo's target runner
/// does: a cross-built tessera tests itself under an emulator.
fn golden_command(exe: &Path, cache_dir: &Path) -> Command {
    let runner = std::env::var("TESSERA_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut cmd = match words.next() {
        Some(prog) => {
            let mut c = Command::new(prog);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    if std::env::var_os("TESSERA_MAX_BYTES").is_none() {
        // E0700 messages name the memory limit: a fixed one keeps expected output the same on
        // every machine.
        cmd.env("TESSERA_MAX_BYTES", GOLDEN_MAX_BYTES);
    }
    // Expected outputs are the cpu's: `auto` must not pick a GPU where the machine has one.
    if std::env::var_os("TESSERA_CUDA").is_none() {
        cmd.env("TESSERA_CUDA", "off");
    }
    cmd.env("TESSERA_CACHE_DIR", cache_dir);
    cmd.env("NO_COLOR", "1").stdin(Stdio::null());
    die_with_parent(&mut cmd);
    cmd
}

/// Runs `tessera ARGS` as a golden run does, in a fresh temporary directory (so files a run
/// writes land there), with `$DIR` for that directory in its output.
pub fn run_in_temp_dir(
    exe: &Path,
    args: &[std::ffi::OsString],
    timeout: Duration,
) -> Result<Output, String> {
    let cache_dir = DumpDir::new().map_err(|e| format!("cannot create a cache directory: {e}"))?;
    let work = DumpDir::new().map_err(|e| format!("cannot create a directory: {e}"))?;
    let mut cmd = golden_command(exe, &cache_dir.0);
    cmd.env_remove("TESSERA_DUMP_DIR")
        .args(args)
        .current_dir(&work.0);
    let (status, stdout, stderr) = run_to_end(cmd, timeout)?;
    let norm = normaliser(&work.0);
    let stderr = norm(stderr);
    not_killed(&status, &stderr)?;
    Ok(Output {
        stdout: norm(stdout),
        stderr,
        code: status.code().unwrap_or(-1),
    })
}

/// Runs a command to its end or its time limit, reading stdout and stderr.
fn run_to_end(
    mut cmd: Command,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", cmd.get_program().to_string_lossy()))?;
    // Read both pipes on threads so a chatty script cannot block on a full pipe.
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    let t1 = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = so.as_mut() {
            let _ = std::io::Read::read_to_end(p, &mut s);
        }
        s
    });
    let t2 = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = se.as_mut() {
            let _ = std::io::Read::read_to_end(p, &mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = String::from_utf8_lossy(&t2.join().unwrap_or_default()).into_owned();
                return Err(format!(
                    "timed out after {} s: the script was killed (raise the limit with --timeout S)\n{}",
                    timeout.as_secs_f64(),
                    stderr_section(&stderr)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("wait failed: {e}")),
        }
    };
    let stdout = t1.join().unwrap_or_default();
    let stderr = t2.join().unwrap_or_default();
    Ok((status, stdout, stderr))
}

fn run_env(
    exe: &Path,
    tsr: &Path,
    levels: &[String],
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Run, String> {
    let dir = tsr
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = tsr.file_name().ok_or("not a file")?;
    let cache_dir = DumpDir::new().map_err(|e| format!("cannot create a cache directory: {e}"))?;
    let mut cmd = golden_command(exe, &cache_dir.0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg("run");
    let dump_dir = if levels.is_empty() {
        cmd.env_remove("TESSERA_DUMP_DIR");
        None
    } else {
        let d = DumpDir::new().map_err(|e| format!("cannot create a dump directory: {e}"))?;
        cmd.env("TESSERA_DUMP_DIR", &d.0);
        for l in levels {
            cmd.arg("--dump").arg(l);
        }
        Some(d)
    };
    cmd.args(args).arg(name).current_dir(dir);
    let (status, stdout, stderr) = run_to_end(cmd, timeout)?;
    let norm = normaliser(dir);
    let snapshots = match &dump_dir {
        Some(d) => levels
            .iter()
            .map(|l| {
                // A level no kernel reached leaves no file: an empty snapshot.
                let b = std::fs::read(d.0.join(l)).unwrap_or_default();
                (l.clone(), norm(b))
            })
            .collect(),
        None => Vec::new(),
    };
    let stderr = norm(stderr);
    not_killed(&status, &stderr)?;
    Ok(Run {
        stdout: norm(stdout),
        stderr,
        code: status.code().unwrap_or(-1),
        snapshots,
    })
}

/// Output bytes as text: `\r\n` line ends made `\n`, the run's directory written `$DIR`.
fn normaliser(dir: &Path) -> impl Fn(Vec<u8>) -> String {
    let abs = std::fs::canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string();
    move |b: Vec<u8>| {
        String::from_utf8_lossy(&b)
            .replace("\r\n", "\n")
            .replace(&abs, "$DIR")
    }
}

/// The report of a run ended by a signal, with its stderr.
fn not_killed(status: &std::process::ExitStatus, stderr: &str) -> Result<(), String> {
    match signal_of(status) {
        Some(sig) => Err(format!(
            "the script was killed by signal {sig} ({})\n{}",
            signal_name(sig),
            stderr_section(stderr)
        )),
        None => Ok(()),
    }
}

/// The script's stderr, for a report.
fn stderr_section(stderr: &str) -> String {
    if stderr.is_empty() {
        "--- stderr: empty ---\n".to_string()
    } else {
        format!("--- stderr ---\n{}", stderr.trim_end())
    }
}

/// The signal that ended a child, if one did.
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// The name of signal `sig` (Linux numbering).
fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => "a signal",
    }
}

/// Makes the child die when `tessera test` does (killed, or ended by a signal), so a script
/// in an endless loop is not left running.
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: `prctl` is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// The regular expression of an expected line with `{{re:...}}` holes (None: no hole).
fn line_pattern(line: &str) -> Option<regex_lite::Regex> {
    if !line.contains("{{re:") {
        return None;
    }
    let mut re = String::from("^");
    let mut rest = line;
    while let Some(at) = rest.find("{{re:") {
        re.push_str(&regex_lite::escape(&rest[..at]));
        let after = &rest[at + 5..];
        let Some(mut end) = after.find("}}") else {
            re.push_str(&regex_lite::escape(&rest[at..]));
            rest = "";
            break;
        };
        // `[0-9]{2}}}`: the hole ends at the last brace of the run.
        while after[end + 2..].starts_with('}') {
            end += 1;
        }
        re.push('(');
        re.push_str(&after[..end]);
        re.push(')');
        rest = &after[end + 2..];
    }
    re.push_str(&regex_lite::escape(rest));
    re.push('$');
    regex_lite::Regex::new(&re).ok()
}

/// Whether `actual` matches `expected` (exact text, or line by line with pattern holes).
pub fn text_matches(expected: &str, actual: &str) -> bool {
    if expected == actual {
        return true;
    }
    if !expected.contains("{{re:") {
        return false;
    }
    let e: Vec<&str> = expected.split('\n').collect();
    let a: Vec<&str> = actual.split('\n').collect();
    e.len() == a.len()
        && e.iter().zip(&a).all(|(e, a)| match line_pattern(e) {
            Some(re) => re.is_match(a),
            None => e == a,
        })
}

/// What blessing writes: `actual`, keeping the expected pattern lines that still match.
pub fn bless_text(expected: Option<&str>, actual: &str) -> String {
    let Some(expected) = expected.filter(|e| e.contains("{{re:")) else {
        return actual.to_string();
    };
    let e: Vec<&str> = expected.split('\n').collect();
    actual
        .split('\n')
        .enumerate()
        .map(
            |(i, a)| match e.get(i).and_then(|l| line_pattern(l).map(|re| (l, re))) {
                Some((l, re)) if re.is_match(a) => l.to_string(),
                _ => a.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn diff(name: &str, expected: &str, actual: &str) -> String {
    let d = similar::TextDiff::from_lines(expected, actual);
    format!(
        "{}",
        d.unified_diff()
            .context_radius(3)
            .header(&format!("expected {name}"), &format!("actual {name}"))
    )
}

fn sibling(tsr: &Path, ext: &str) -> PathBuf {
    tsr.with_extension(ext)
}

/// Writes `text` to `path`, but an empty text where there is no file leaves it absent (an
/// expectation nobody asked for is not created).
fn write_or_skip(path: &Path, text: &str) -> std::io::Result<()> {
    if text.is_empty() && !path.exists() {
        Ok(())
    } else {
        std::fs::write(path, text)
    }
}

/// Runs one case and compares (or blesses) its expected files.
pub fn run_case(exe: &Path, tsr: &Path, bless: bool, timeout: Duration) -> Outcome {
    if tsr.extension().is_some_and(|e| e == "md") {
        return crate::guide::run_page(exe, tsr, bless, timeout);
    }
    // the `# snapshot:` header is read leniently: a script that is not UTF-8 is itself a test
    // (the run reports E0001 at its first bad byte)
    let levels = match read_case_file(tsr) {
        Ok(text) => match snapshot_levels(&text) {
            Ok(l) => l,
            Err(e) => return Outcome::Failed(format!("{e}\n")),
        },
        Err(e) => return Outcome::Failed(format!("cannot read {}: {e}\n", tsr.display())),
    };
    let r = match run_env(exe, tsr, &levels, &[], &[], timeout) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    if bless {
        // An existing `.code` or `.stderr` stays, so a status of 0 or an empty stderr that was
        // checked stays checked (the hostile set needs every `.code`); an absent one is not
        // created for them.
        let code = if r.code == 0 && !sibling(tsr, "code").exists() {
            String::new()
        } else {
            format!("{}\n", r.code)
        };
        // `.stdout` is always written (an empty one checks that nothing was printed).
        let old = |ext: &str| read_case_file(&sibling(tsr, ext)).ok();
        let stdout = bless_text(old("stdout").as_deref(), &r.stdout);
        let stderr = bless_text(old("stderr").as_deref(), &r.stderr);
        let res = std::fs::write(sibling(tsr, "stdout"), &stdout)
            .and_then(|_| write_or_skip(&sibling(tsr, "stderr"), &stderr))
            .and_then(|_| write_or_skip(&sibling(tsr, "code"), &code))
            .and_then(|_| {
                r.snapshots
                    .iter()
                    .try_for_each(|(l, text)| std::fs::write(sibling(tsr, l), text))
            });
        return match res {
            Ok(()) => Outcome::Blessed,
            Err(e) => Outcome::Failed(format!("cannot write expected files: {e}")),
        };
    }
    let mut report = String::new();
    for (ext, actual) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        match read_expected(&sibling(tsr, ext)) {
            Ok(Some(expected)) => {
                let expected = expected.replace("\r\n", "\n");
                if !text_matches(&expected, actual) {
                    report.push_str(&diff(ext, &expected, actual));
                }
            }
            Ok(None) => {}
            Err(e) => report.push_str(&e),
        }
    }
    for (level, actual) in &r.snapshots {
        match read_case_file(&sibling(tsr, level)) {
            Ok(expected) => {
                let expected = expected.replace("\r\n", "\n");
                if expected != *actual {
                    report.push_str(&diff(level, &expected, actual));
                }
            }
            Err(_) => report.push_str(&format!(
                "snapshot {level}: no {} (run with --bless)\n",
                sibling(tsr, level).display()
            )),
        }
    }
    let code_file = sibling(tsr, "code");
    let expected_code = match read_expected(&code_file) {
        Ok(c) => c,
        Err(e) => {
            report.push_str(&e);
            None
        }
    };
    if let Some(expected) = expected_code {
        let want: Option<i32> = expected.trim().parse().ok();
        if want != Some(r.code) {
            report.push_str(&format!(
                "exit status: expected {}, got {}\n",
                expected.trim(),
                r.code
            ));
        }
    } else if r.code != 0 {
        report.push_str(&format!(
            "exit status {} but no NAME.code file expects it\n--- stderr ---\n{}",
            r.code, r.stderr
        ));
    }
    if report.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(report)
    }
}

/// `tessera test`: runs every case, prints a diff per failure and `N passed, N failed`.
pub fn main(
    exe: &Path,
    paths: &[PathBuf],
    bless: bool,
    filter: Option<&str>,
    timeout: Duration,
) -> i32 {
    if let Some(p) = paths.iter().find(|p| !p.exists()) {
        eprintln!("error: {}: no such file or directory", p.display());
        return 2;
    }
    let re = match filter.map(regex_lite::Regex::new).transpose() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: invalid --filter regular expression: {e}");
            return 2;
        }
    };
    let cases: Vec<PathBuf> = discover(paths)
        .into_iter()
        // The expression selects a script by its path as found or by its file name, so
        // `--filter '^conv'` picks `tests/golden/conv2d.tsr`.
        .filter(|p| {
            re.as_ref().is_none_or(|r| {
                let name = p.file_name().map(|n| n.to_string_lossy());
                r.is_match(&p.display().to_string()) || name.is_some_and(|n| r.is_match(&n))
            })
        })
        .collect();
    let (mut passed, mut failed, mut blessed) = (0, 0, 0);
    for c in &cases {
        match run_case(exe, c, bless, timeout) {
            Outcome::Passed => passed += 1,
            Outcome::Blessed => {
                blessed += 1;
                crate::sayln!("blessed {}", c.display());
            }
            Outcome::Failed(report) => {
                failed += 1;
                crate::sayln!("FAILED {}\n{report}", c.display());
            }
        }
    }
    if bless {
        crate::sayln!("{blessed} blessed, {failed} failed");
    } else {
        crate::sayln!("{passed} passed, {failed} failed");
    }
    i32::from(failed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_lines_match_by_regex() {
        let e = "a\n| x | {{re: *[0-9.]+ (ns|µs|ms)}} | model |\nb\n";
        assert!(text_matches(e, "a\n| x |   12.500 µs | model |\nb\n"));
        assert!(!text_matches(e, "a\n| x |   12.500 µs | measured |\nb\n"));
        assert!(!text_matches(e, "a\n| x |   fast | model |\nb\n"));
        assert!(!text_matches(e, "a\n| x |   12.500 µs | model |\n"));
        // Text around holes is literal (the `|` is not alternation).
        assert!(!text_matches("x|y {{re:a}}\n", "x a\n"));
        assert!(text_matches("plain\n", "plain\n"));
        // A quantifier's brace just before the closing braces belongs to the regex.
        assert!(text_matches("v {{re:[0-9]{2}}} x\n", "v 42 x\n"));
        assert!(!text_matches("v {{re:[0-9]{2}}} x\n", "v 4 x\n"));
        assert!(!text_matches("plain\n", "other\n"));
    }

    #[test]
    fn blessing_keeps_matching_patterns() {
        let e = "t: {{re:[0-9]+}} ms\nold\n";
        assert_eq!(
            bless_text(Some(e), "t: 42 ms\nnew\n"),
            "t: {{re:[0-9]+}} ms\nnew\n"
        );
        assert_eq!(bless_text(Some(e), "t: slow\nnew\n"), "t: slow\nnew\n");
        assert_eq!(bless_text(None, "x\n"), "x\n");
    }
}
