//! Robustness of the front end and the evaluator: at least 10,000 mutated and random sources go
//! through the parser and (when they parse) the evaluator with a step limit. Nothing may panic
//! or overflow the stack, every diagnostic must point inside its source, and the `tessera`
//! binary must exit with 0, 1 or 2 only, also under `ulimit -v` and a time limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Command, Stdio};
use tessera_lang::eval::Interp;
use tessera_lang::{parse, Diagnostic};

#[path = "robustness/wellformed.rs"]
mod wellformed;

/// xorshift64*: a small seeded generator, so every failure is reproducible from its case number.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const SNIPPETS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "\"",
    "'",
    "\t",
    ":",
    "\n",
    "\n    ",
    "\n        ",
    "def ",
    "**",
    "op.",
    "1e309",
    "9223372036854775807",
    "-9223372036854775808",
    "@",
    "f\"{",
    "}",
    "{",
    "\\",
    ",",
    "=",
    "-",
    "not ",
    " in ",
    " if ",
    " else ",
    "for x in ",
    "while True:",
    "return",
    "break",
    "continue",
    "\"\"\"",
    "op.rand((3, 4))",
    "op.zeros((100000, 100000))",
    "x",
    "print(",
    "lambda",
    "é",
    "∑",
    "0x",
    "1_",
    "..",
    ";",
    "assert ",
    "+=",
    "//",
    "%",
    "[::-1]",
    "op.tensor([[1, 2], [3, 4]])",
    "range(10**9)",
    "[0] * 10**9",
    "op.matmul(",
    ".T",
    "None",
    "True",
    "#",
    "f'{x:>8.3f}'",
    "1/0",
    "def f(x):\n    return f(x)\nf(1)\n",
];

fn corpus(root: &Path) -> Vec<String> {
    named_corpus(root).into_iter().map(|(_, t)| t).collect()
}

/// The golden and example scripts, with their file names.
fn named_corpus(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in ["tests/golden", "examples"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            let mut files: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            files.sort();
            for p in files {
                if p.extension().is_some_and(|e| e == "tsr") {
                    if let Ok(t) = std::fs::read_to_string(&p) {
                        let name = p.file_name().unwrap_or_default().to_string_lossy();
                        out.push((name.into_owned(), t));
                    }
                }
            }
        }
    }
    out
}

fn mutate(src: &str, rng: &mut Rng) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let n = chars.len();
        match rng.below(5) {
            0 if n > 0 => {
                let a = rng.below(n);
                let b = (a + 1 + rng.below(12)).min(n);
                chars.drain(a..b);
            }
            1 => {
                let s = SNIPPETS[rng.below(SNIPPETS.len())];
                let at = rng.below(n + 1);
                chars.splice(at..at, s.chars());
            }
            2 if n > 0 => {
                let a = rng.below(n);
                let b = (a + 1 + rng.below(30)).min(n);
                let piece: Vec<char> = chars[a..b].to_vec();
                let at = rng.below(chars.len() + 1);
                chars.splice(at..at, piece);
            }
            3 if n > 0 => {
                let a = rng.below(n);
                chars[a] = SNIPPETS[rng.below(SNIPPETS.len())]
                    .chars()
                    .next()
                    .unwrap_or(' ');
            }
            _ => {
                let s = SNIPPETS[rng.below(SNIPPETS.len())];
                chars.extend(s.chars());
            }
        }
    }
    chars.into_iter().collect()
}

fn soup(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(40) {
        s.push_str(SNIPPETS[rng.below(SNIPPETS.len())]);
        if rng.below(3) == 0 {
            s.push(' ');
        }
    }
    s
}

fn extremes() -> Vec<String> {
    let mut v = Vec::new();
    for (open, close) in [("(", ")"), ("[", "]"), ("{", "}")] {
        v.push(format!(
            "x = {}1{}\n",
            open.repeat(5000),
            close.repeat(5000)
        ));
        v.push(format!("x = {}\n", open.repeat(5000)));
    }
    v.push(format!("x = {}1\n", "-".repeat(5000)));
    v.push(format!("x = {}1\n", "not ".repeat(5000)));
    v.push(format!("x = 1{}\n", " + 1".repeat(10000)));
    v.push(format!("x = 2{}\n", " ** 2".repeat(3000)));
    v.push(format!("x = f(){}\n", "()".repeat(5000)));
    v.push(format!("x = a{}\n", ".b".repeat(5000)));
    v.push(format!("x = a{}\n", "[0]".repeat(5000)));
    let mut nested = String::new();
    for d in 0..300 {
        nested.push_str(&" ".repeat(d));
        nested.push_str("if True:\n");
    }
    nested.push_str(&" ".repeat(300));
    nested.push_str("pass\n");
    v.push(nested);
    v.push("def f(n):\n    return f(n + 1)\nf(0)\n".into());
    v.push("\u{feff}print(1)\r\nprint(2)\r\n".into());
    v
}

fn check_spans(src: &str, diags: &[Diagnostic]) {
    for d in diags {
        if let Some(s) = d.span {
            assert!(
                (s.lo as usize) <= src.len() && (s.hi as usize) <= src.len() && s.lo <= s.hi,
                "diagnostic span {s:?} outside a source of {} bytes: {}",
                src.len(),
                d.message
            );
            assert!(
                src.is_char_boundary(s.lo as usize) && src.is_char_boundary(s.hi as usize),
                "diagnostic span {s:?} splits a character: {}",
                d.message
            );
        }
    }
}

/// Parses and runs one source; returns 0, 1 or 2 as the CLI would.
fn run_one(src: &str) -> i32 {
    let mut interp = Interp::new();
    let cfg = tessera_stdlib::Config::default();
    if tessera_stdlib::install(&mut interp, &cfg).is_err() {
        return 2;
    }
    interp.step_limit = Some(20_000);
    interp.max_bytes = 100_000 * tessera_lang::eval::ITEM_BYTES as u64;
    interp.set_output(Box::new(|_| {}));
    let file = interp.sources.add("fuzz.tsr", src.to_string());
    match parse::parse_module(src, file) {
        Err(diags) => {
            assert!(!diags.is_empty(), "a failed parse must report something");
            check_spans(src, &diags);
            for d in &diags {
                let _ = d.render(&interp.sources, false);
            }
            2
        }
        Ok(m) => match interp.exec_module(&m) {
            Ok(_) => 0,
            Err(d) => {
                check_spans(src, std::slice::from_ref(&d));
                let _ = d.render(&interp.sources, false);
                1
            }
        },
    }
}

fn cases() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = corpus(root);
    assert!(!corpus.is_empty(), "the golden corpus is missing");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = extremes();
    while out.len() < 10_500 {
        if rng.below(4) == 0 {
            out.push(soup(&mut rng));
        } else {
            let base = &corpus[rng.below(corpus.len())];
            out.push(mutate(base, &mut rng));
        }
    }
    out
}

#[test]
fn ten_thousand_sources_never_panic() {
    std::env::set_var("TESSERA_MAX_BYTES", "67108864");
    // A mutated size can make an emulated kernel run for minutes in a debug build: bound each
    // (a run past it is E0500, like any other failed case).
    tessera_runtime::emu::set_default_max_steps(200_000);
    let cases = std::sync::Arc::new(cases());
    let n = cases.len();
    // case i on worker i % workers: all cores, each worker with a deep stack
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let cases = cases.clone();
            std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn(move || {
                    let mut counts = [0usize; 3];
                    for (i, src) in cases.iter().enumerate().skip(w).step_by(workers) {
                        match catch_unwind(AssertUnwindSafe(|| run_one(src))) {
                            Ok(code) => counts[code as usize] += 1,
                            Err(_) => panic!("case {i} panicked; source:\n{src}"),
                        }
                    }
                    counts
                })
                .expect("spawn")
        })
        .collect();
    let mut counts = [0usize; 3];
    for h in handles {
        let c = h.join().expect("a case panicked (see above)");
        for (t, x) in counts.iter_mut().zip(c) {
            *t += x;
        }
    }
    assert_eq!(counts.iter().sum::<usize>(), n);
    assert!(n >= 10_000);
    // Both outcomes must occur, or the generator is not exercising the evaluator.
    assert!(
        counts[0] > 100 && counts[1] > 100 && counts[2] > 1000,
        "{counts:?}"
    );
}

/// A diagnostic a user may see: a span inside the source (when `need_span`), and a message that
/// is neither an internal error nor a Rust dump.
fn check_user_error(src: &str, d: &Diagnostic, need_span: bool) {
    check_spans(src, std::slice::from_ref(d));
    assert!(
        !need_span || d.span.is_some(),
        "{} without a source position: {}",
        d.code.as_str(),
        d.message
    );
    let text = std::iter::once(&d.message)
        .chain(&d.notes)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !text.contains("internal") && !text.contains("RuntimeError") && !text.contains("Some("),
        "{}: an internal error or a Rust dump reached the user: {text}",
        d.code.as_str()
    );
}

/// Runs a program that parses the way `tessera check` and then `tessera run` would; returns 0
/// when it ran to its end and 1 for an error, which must point into the source.
fn run_parsed(src: &str) -> i32 {
    let mut interp = Interp::new();
    let cfg = tessera_stdlib::Config::default();
    tessera_stdlib::install(&mut interp, &cfg).expect("install");
    interp.step_limit = Some(20_000);
    interp.max_bytes = 100_000 * tessera_lang::eval::ITEM_BYTES as u64;
    interp.set_output(Box::new(|_| {}));
    let file = interp.sources.add("fuzz.tsr", src.to_string());
    let m = parse::parse_module(src, file).expect("a well-formed program parses");
    for d in interp.check_names(&m) {
        check_user_error(src, &d, true);
    }
    match interp.exec_module(&m) {
        Ok(_) => 0,
        Err(d) => {
            check_user_error(src, &d, true);
            let _ = d.render(&interp.sources, false);
            1
        }
    }
}

/// Well-formed mutations of the corpus (see `wellformed`): `count` programs that parse, and the
/// number generated to get them.
fn wellformed_cases(seed: u64, count: usize) -> (Vec<String>, usize) {
    let corpus = named_corpus(Path::new(env!("CARGO_MANIFEST_DIR")));
    let bases = wellformed::bases(&corpus);
    assert!(
        bases.len() > 200,
        "{} scripts of the corpus parse",
        bases.len()
    );
    wellformed::generate(&bases, &wellformed::Vocab::new(), seed, count)
}

/// Mutations that keep the program parsing: most of what the generator makes parses (a
/// generator that stopped doing so fails here), and every program it keeps reaches the
/// evaluator (and the tracer and the compiler, for the kernels among them). None panics; every
/// error has a code and a span inside the source.
#[test]
fn wellformed_mutations_reach_the_evaluator() {
    std::env::set_var("TESSERA_MAX_BYTES", "67108864");
    tessera_runtime::emu::set_default_max_steps(200_000);
    let count: usize = std::env::var("TESSERA_FUZZ_WELLFORMED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let (cases, tried) = wellformed_cases(0x5EED_FA11, count);
    eprintln!("{} of {tried} well-formed mutations parse", cases.len());
    // TESSERA_FUZZ_SAVE=DIR writes them out as DIR/wellformedN.tsr, to rerun one with `tessera`
    if let Ok(dir) = std::env::var("TESSERA_FUZZ_SAVE") {
        for (i, src) in cases.iter().enumerate() {
            std::fs::write(Path::new(&dir).join(format!("wellformed{i}.tsr")), src).expect("save");
        }
    }
    assert!(
        cases.len() * 10 >= tried * 7,
        "only {} of {tried} well-formed mutations parse",
        cases.len()
    );
    let cases = std::sync::Arc::new(cases);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let cases = cases.clone();
            std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn(move || {
                    let mut counts = [0usize; 2];
                    for (i, src) in cases.iter().enumerate().skip(w).step_by(workers) {
                        let t = std::time::Instant::now();
                        match catch_unwind(AssertUnwindSafe(|| run_parsed(src))) {
                            Ok(code) => counts[code as usize] += 1,
                            Err(_) => panic!("well-formed case {i} failed; source:\n{src}"),
                        }
                        if t.elapsed().as_secs_f64() > 2.0 {
                            eprintln!("well-formed case {i}: {:.1} s", t.elapsed().as_secs_f64());
                        }
                    }
                    counts
                })
                .expect("spawn")
        })
        .collect();
    let mut counts = [0usize; 2];
    for h in handles {
        let c = h.join().expect("a case failed (see above)");
        counts[0] += c[0];
        counts[1] += c[1];
    }
    eprintln!(
        "well-formed programs: {} ran to the end, {} stopped at an error",
        counts[0], counts[1]
    );
    // both outcomes are common: the mutations neither break every program nor leave them alone
    assert!(
        counts[0] * 5 >= count && counts[1] * 5 >= count,
        "{counts:?}"
    );
}

#[test]
fn binary_exits_only_with_0_1_or_2() {
    let exe = env!("CARGO_BIN_EXE_tessera");
    let cases = cases();
    let mut rng = Rng(42);
    for k in 0..150 {
        let src = &cases[rng.below(cases.len())];
        let sub = if k % 2 == 0 { "run" } else { "check" };
        let dir = std::env::temp_dir().join(format!("tessera-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join(format!("case{k}.tsr"));
        std::fs::write(&file, src).expect("write case");
        let out = Command::new(exe)
            .arg(sub)
            .arg(&file)
            .env("TESSERA_MAX_BYTES", "67108864")
            .env("TESSERA_STEP_LIMIT", "20000")
            .stdin(Stdio::null())
            .output()
            .expect("run tessera");
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "exit {code:?} for `tessera {sub}` on:\n{src}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "a panic reached the user:\n{err}"
        );
        let _ = std::fs::remove_file(&file);
    }
}

/// `tessera run` of mutated scripts under a memory limit (`ulimit -v`, so the default
/// `TESSERA_MAX_BYTES` follows it) and a wall-clock limit: every run ends by itself with 0, 1
/// or 2 — no abort, no signal, no panic, no hang.
#[test]
fn mutated_scripts_run_under_ulimit_v_and_a_timeout() {
    let exe = env!("CARGO_BIN_EXE_tessera");
    let cases = cases();
    let mut rng = Rng(7);
    let dir = std::env::temp_dir().join(format!("tessera-fuzz-ulimit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut counts = [0usize; 3];
    for k in 0..300 {
        let src = &cases[rng.below(cases.len())];
        let file = dir.join(format!("case{k}.tsr"));
        std::fs::write(&file, src).expect("write case");
        let script = format!(
            "ulimit -v 3000000 && exec timeout -s KILL 60 '{exe}' run '{}'",
            file.display()
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .env_remove("TESSERA_MAX_BYTES")
            .env("TESSERA_STEP_LIMIT", "20000")
            .env("TESSERA_CUDA", "off")
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        let code = out.status.code();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(code, Some(0..=2)),
            "exit {code:?} (137: killed at the time limit) for `tessera run` under ulimit -v on:\n{src}\nstderr:\n{err}"
        );
        assert!(
            !err.contains("panicked")
                && !err.contains("RUST_BACKTRACE")
                && !err.contains("memory allocation of"),
            "an abort or a panic reached the user:\n{err}"
        );
        if let Some(c @ 0..=2) = code {
            counts[c as usize] += 1;
        }
        let _ = std::fs::remove_file(&file);
    }
    // the runs reach the evaluator: some succeed, some fail at run time
    eprintln!("exit statuses 0/1/2: {counts:?}");
    assert!(
        counts[0] > 0 && counts[1] > 0,
        "exit statuses 0/1/2: {counts:?}"
    );
}

/// `tessera run` of well-formed mutations under `ulimit -v` and a time limit: each ends by
/// itself with 0 or 1, and every error it prints has a code and a location inside the script.
#[test]
fn wellformed_scripts_run_under_ulimit_v_and_a_timeout() {
    let exe = env!("CARGO_BIN_EXE_tessera");
    let count: usize = std::env::var("TESSERA_FUZZ_WELLFORMED_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(80);
    let (cases, _) = wellformed_cases(0x0B1A_57ED, count);
    let dir = std::env::temp_dir().join(format!("tessera-fuzz-wf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut counts = [0usize; 2];
    for (k, src) in cases.iter().enumerate() {
        let name = format!("wf{k}.tsr");
        let file = dir.join(&name);
        std::fs::write(&file, src).expect("write case");
        // 600 s: a well-formed mutation may be real work for a debug build (a shape given
        // 100000 rows makes a bf16 [100000, 512] @ [512, 256] profile take 94 s alone on 2
        // cores, over 180 s beside the other tests)
        let script = format!(
            "ulimit -v 3000000 && exec timeout -s KILL 600 '{exe}' run '{}'",
            file.display()
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .env_remove("TESSERA_MAX_BYTES")
            .env("TESSERA_STEP_LIMIT", "20000")
            .env("TESSERA_CUDA", "off")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        let code = out.status.code();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(code, Some(0 | 1)),
            "exit {code:?} (137: killed at the time limit) for `tessera run` of a well-formed program:\n{src}\nstderr:\n{err}"
        );
        assert!(
            !err.contains("panicked")
                && !err.contains("RUST_BACKTRACE")
                && !err.contains("memory allocation of"),
            "an abort or a panic reached the user:\n{err}"
        );
        // every error is `error[E....]` with a `╭─[ wfK.tsr:LINE:COL ]` inside the script
        let lines = src.lines().count().max(1);
        for (i, l) in err.lines().enumerate() {
            if l.starts_with("error") {
                assert!(
                    l.starts_with("error[E") && l.as_bytes().get(11) == Some(&b']'),
                    "an error without a code:\n{err}\nfor:\n{src}"
                );
                let at = err
                    .lines()
                    .nth(i + 1)
                    .and_then(|n| n.split_once(&format!("{name}:")))
                    .and_then(|(_, pos)| pos.split(':').next()?.parse::<usize>().ok());
                assert!(
                    at.is_some_and(|line| (1..=lines).contains(&line)),
                    "an error without a location in the script:\n{err}\nfor:\n{src}"
                );
            }
        }
        counts[code.unwrap_or(0) as usize] += 1;
        let _ = std::fs::remove_file(&file);
    }
    eprintln!("well-formed runs, exit statuses 0/1: {counts:?}");
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
}

#[test]
fn a_closed_stdout_ends_an_endless_run_quietly() {
    // `tessera run loop.tsr | head -1`: once the reader is gone the run stops (it used to
    // print into the closed pipe forever), with no error message and exit status 0
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("tessera-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("loop.tsr");
    std::fs::write(&script, "i = 0\nwhile True:\n    print(i)\n    i += 1\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", script.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "0\n");
    // the reader (and the pipe) is dropped here
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the run kept going after its stdout closed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(err, "");
}

#[test]
fn commands_whose_reader_is_gone_end_quietly() {
    // `tessera lower f.tile | head -1`, `tessera explain | true`: stdout is a pipe whose reader
    // closed before anything was written. Each command ends with status 0 and nothing on
    // stderr (`lower` used to panic with a backtrace on the failed write).
    let dir = std::env::temp_dir().join(format!("tessera-epipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("k.tsr");
    std::fs::write(
        &script,
        "@op.kernel\ndef f(x):\n    return op.relu(x) * 2.0\nprint(f(op.ones((4, 4))).shape)\n",
    )
    .unwrap();
    let dump = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", "--device", "cpu", "--dump", "tile"])
        .arg(&script)
        .output()
        .unwrap();
    assert!(dump.status.success(), "{dump:?}");
    let tile = dir.join("k.tile");
    std::fs::write(&tile, &dump.stderr).unwrap();
    let tile = tile.to_str().unwrap();
    let runs: [&[&str]; 4] = [
        &["lower", tile],
        &["lower", tile, "--to", "target"],
        &["explain"],
        &["explain", "E0200"],
    ];
    for args in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

#[test]
fn tracing_an_unrolled_loop_is_linear_in_its_length() {
    // A kernel whose body unrolls into n elementwise ops: the trace, the fusion passes and the
    // lowering must take time linear in n (a pass that recounted every value's uses at every
    // op made this quadratic: 50,000 ops took a minute).
    let dir = std::env::temp_dir().join(format!("tessera-unroll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let time = |n: usize, body: &str, shape: &str| {
        let script = dir.join(format!("unroll{n}.tsr"));
        std::fs::write(
            &script,
            format!(
                "w = op.ones((4, 4)) * 0.25\n@op.kernel\ndef f(x):\n    for i in range({n}):\n        {body}\n    return x\nprint(f(op.ones({shape})).shape)\n"
            ),
        )
        .unwrap();
        let start = std::time::Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["run", script.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{shape}\n"));
        start.elapsed().as_secs_f64()
    };
    // 4× the ops: about 4× the time when linear, 16× when quadratic.
    let elementwise = "x = x * 1.0001 + 0.5";
    let (small, large) = (
        time(3000, elementwise, "(4,)"),
        time(12000, elementwise, "(4,)"),
    );
    assert!(
        large < 9.0 * small.max(0.05),
        "elementwise: 3,000 steps {small:.2} s; 12,000 steps {large:.2} s"
    );
    // Matmuls with fused epilogues (the epilogue pass counted uses at every step).
    let chain = "x = op.relu(x @ w) + 0.5";
    let (small, large) = (time(200, chain, "(4, 4)"), time(800, chain, "(4, 4)"));
    assert!(
        large < 9.0 * small.max(0.05),
        "matmul chain: 200 steps {small:.2} s; 800 steps {large:.2} s"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dict_removal_is_constant_time() {
    // `d.pop(k)` shifted every later entry and renumbered the index: 100,000 inserts and
    // 50,000 pops took 28 s. Removal leaves a hole, squeezed out when holes are half the slots.
    let dir = std::env::temp_dir().join(format!("tessera-dict-pop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let time = |n: usize| {
        let script = dir.join(format!("pop{n}.tsr"));
        std::fs::write(
            &script,
            format!(
                "d = {{}}\nfor i in range({n}):\n    d[i] = i\nfor i in range(0, {n}, 2):\n    d.pop(i)\nfor i in range({n} // 4):\n    d.popitem()\nfor i in range({n}):\n    d[i] = i\nprint(len(d), list(d.keys())[:3])\n"
            ),
        )
        .unwrap();
        let start = std::time::Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["run", script.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // the odd keys below n / 2 stay in order; the rest come back at the end
        let first = if n >= 6 { "[1, 3, 5]" } else { "" };
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{n} {first}\n")
        );
        start.elapsed().as_secs_f64()
    };
    // 4× the entries: about 4× the time when linear, 16× when quadratic.
    let (small, large) = (time(20_000), time(80_000));
    assert!(
        large < 9.0 * small.max(0.05),
        "20,000 entries {small:.2} s; 80,000 entries {large:.2} s"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
