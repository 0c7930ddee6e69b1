//! The notebook session through its public API: variables across cells, errors, `:` commands
//! and their rich outputs, completion, inspection, interrupts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tessera_repl::{CellOutcome, IsComplete, Output, Rich, Session, SessionOptions};

type Got = Rc<RefCell<Vec<Output>>>;

fn session() -> (Session, Got) {
    session_with(SessionOptions::default())
}

fn session_with(opts: SessionOptions) -> (Session, Got) {
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = got.clone();
    let s = Session::new(opts, Box::new(move |o| g.borrow_mut().push(o))).expect("session");
    (s, got)
}

/// Runs a cell that must succeed; returns its outputs.
fn ok(s: &mut Session, got: &Got, cell: &str) -> Vec<Output> {
    got.borrow_mut().clear();
    let r = s.execute(cell);
    assert_eq!(
        r,
        CellOutcome::Ok,
        "cell {cell:?} failed; outputs {:?}",
        got.borrow()
    );
    got.borrow().clone()
}

/// Runs a cell that must fail; returns (code, message, traceback text).
fn err(s: &mut Session, got: &Got, cell: &str) -> (String, String, String) {
    got.borrow_mut().clear();
    match s.execute(cell) {
        CellOutcome::Error {
            ename,
            evalue,
            traceback,
        } => (ename, evalue, traceback.join("\n")),
        other => panic!("cell {cell:?}: expected an error, got {other:?}"),
    }
}

/// The value of an expression, as its repr.
fn value(s: &mut Session, got: &Got, expr: &str) -> String {
    match ok(s, got, expr).as_slice() {
        [Output::Result(r)] => r.text.clone(),
        other => panic!("{expr}: expected one result, got {other:?}"),
    }
}

/// The single display a command produced.
fn display(s: &mut Session, got: &Got, cell: &str) -> Rich {
    let outs = ok(s, got, cell);
    let shown: Vec<Rich> = outs
        .into_iter()
        .filter_map(|o| match o {
            Output::Display(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(
        shown.len(),
        1,
        "{cell}: expected one display, got {shown:?}"
    );
    shown.into_iter().next().unwrap_or_else(|| Rich::text(""))
}

const KERNEL: &str = "@op.kernel\ndef lin(x, w, b):\n    return op.relu(op.matmul(x, w) + b)\n\nx = op.randn((32, 16), seed=0)\nw = op.randn((16, 8), seed=1)\nb = op.randn((8,), seed=2)\n";

#[test]
fn variables_persist_and_errors_keep_state() {
    let (mut s, got) = session();
    assert_eq!(
        ok(&mut s, &got, "x = 20\nprint(x + 1)"),
        vec![Output::Stdout("21\n".into())]
    );
    assert_eq!(value(&mut s, &got, "x + 22"), "42");
    let (code, msg, tb) = err(&mut s, &got, "y = x\nx = 1 + undefined_name");
    assert_eq!(code, "E0100");
    assert!(msg.contains("undefined_name"), "{msg}");
    // the traceback is the diagnostic rendered with the cell as its source
    assert!(tb.contains("<cell 3>"), "{tb}");
    assert!(tb.contains("x = 1 + undefined_name"), "{tb}");
    // the statement before the failing one ran; the failing one changed nothing
    assert_eq!(value(&mut s, &got, "(x, y)"), "(20, 20)");
    assert_eq!(s.execution_count(), 4);
    // a syntax error runs nothing
    let (code, _, _) = err(&mut s, &got, "x = 5\ny = (");
    assert_eq!(code, "E0002");
    assert_eq!(value(&mut s, &got, "x"), "20");
    // None is not echoed
    assert!(ok(&mut s, &got, "None").is_empty());
}

#[test]
fn help_vars_reset() {
    let (mut s, got) = session();
    let h = display(&mut s, &got, ":help");
    for c in [
        ":graph CALL",
        ":time EXPR",
        ":timeit EXPR",
        ":load FILE",
        ":device NAME",
        ":quit",
    ] {
        assert!(h.text.contains(c), "{c} missing from {}", h.text);
    }
    assert!(h.html.as_deref().unwrap_or("").contains("<table"));

    ok(
        &mut s,
        &got,
        "t = op.zeros((2, 3), dtype='bf16')\nn = 7\nname = 'a<b>'",
    );
    let v = display(&mut s, &got, ":vars");
    let lines: Vec<&str> = v.text.lines().collect();
    assert_eq!(lines.len(), 5, "{}", v.text);
    assert!(lines[0].starts_with("name"));
    assert!(lines[2].starts_with("n "), "{}", lines[2]);
    assert!(lines[4].starts_with("t ") && lines[4].contains("(2, 3)") && lines[4].contains("bf16"));
    let html = v.html.unwrap_or_default();
    assert_eq!(html.matches("<tr>").count(), 4);
    assert!(html.contains("&#39;a&lt;b&gt;&#39;"), "{html}");

    let r = display(&mut s, &got, ":reset");
    assert_eq!(r.text, "deleted 3 variables");
    let (code, _, _) = err(&mut s, &got, "n");
    assert_eq!(code, "E0100");
    assert_eq!(display(&mut s, &got, ":vars").text, "no variables");
    // builtins survive a reset
    assert_eq!(value(&mut s, &got, "len([1, 2])"), "2");
}

#[test]
fn ir_commands_match_graph_lower() {
    let (mut s, got) = session();
    ok(&mut s, &got, KERNEL);
    for level in ["graph", "schedule", "tile", "target", "ptx"] {
        let shown = display(&mut s, &got, &format!(":{level} lin(x, w, b)"));
        let printed = match ok(
            &mut s,
            &got,
            &format!("print(graph.lower(lin, x, w, b, level='{level}'))"),
        )
        .as_slice()
        {
            [Output::Stdout(t)] => t.trim_end().to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(shown.text, printed, "level {level}");
        let html = shown.html.unwrap_or_default();
        assert!(html.starts_with("<pre"), "{level}: {html}");
        assert!(html.contains("<span style="), "{level}: no highlighting");
    }
    let g = display(&mut s, &got, ":graph lin(x, w, b)");
    assert!(g.text.starts_with("graph @lin("), "{}", g.text);
    let p = display(&mut s, &got, ":ptx lin(x, w, b)");
    assert!(p.text.contains(".version"), "{}", p.text);
    // keyword and starred arguments are passed on
    let args = display(&mut s, &got, ":graph lin(*[x, w], b=b)");
    assert_eq!(args.text, g.text);
}

#[test]
fn command_errors_point_into_the_cell() {
    let (mut s, got) = session();
    ok(&mut s, &got, KERNEL);
    let (code, msg, tb) = err(&mut s, &got, ":grpah lin(x, w, b)");
    assert_eq!(code, "E0100");
    assert!(msg.contains(":grpah"), "{msg}");
    assert!(tb.contains("did you mean `:graph`"), "{tb}");
    let (code, _, tb) = err(&mut s, &got, ":graph lin(x, nope, b)");
    assert_eq!(code, "E0100");
    assert!(tb.contains("<cell 3>:1:15"), "{tb}");
    let (code, _, _) = err(&mut s, &got, ":graph x");
    assert_eq!(code, "E0101");
    let (code, _, _) = err(&mut s, &got, ":graph");
    assert_eq!(code, "E0101");
    let (code, _, _) = err(&mut s, &got, ":graph lin(x,");
    assert!(code.starts_with("E000"), "{code}");
    let (code, _, _) = err(&mut s, &got, ":vars now");
    assert_eq!(code, "E0101");
    // a shape mismatch inside the traced kernel is the kernel's own diagnostic
    let (code, _, _) = err(&mut s, &got, ":tile lin(w, x, b)");
    assert_eq!(code, "E0200");
    // the session goes on
    assert_eq!(value(&mut s, &got, "x.shape"), "(32, 16)");
}

#[test]
fn target_and_device() {
    let (mut s, got) = session();
    assert_eq!(s.target(), "sm_90");
    assert_eq!(display(&mut s, &got, ":target sm_80").text, "target: sm_80");
    assert_eq!(value(&mut s, &got, "target.current()"), "'sm_80'");
    assert_eq!(s.target(), "sm_80");
    assert_eq!(display(&mut s, &got, ":target").text, "target: sm_80");
    let (code, _, tb) = err(&mut s, &got, ":target sm_99");
    assert_eq!(code, "E0101");
    assert!(tb.contains("sm_99"), "{tb}");
    assert_eq!(s.target(), "sm_80");
    ok(&mut s, &got, KERNEL);
    let ptx = display(&mut s, &got, ":ptx lin(x, w, b)");
    assert!(ptx.text.contains(".target sm_80"), "{}", ptx.text);

    assert_eq!(display(&mut s, &got, ":device emu").text, "device: emu");
    assert_eq!(s.device(), "emu");
    let (code, _, _) = err(&mut s, &got, ":device tpu");
    assert_eq!(code, "E0101");
    assert_eq!(s.device(), "emu");
    // the kernel runs in the emulator and still matches the eager body
    assert_eq!(
        value(
            &mut s,
            &got,
            "op.allclose(lin(x, w, b), op.relu(x @ w + b), rtol=1e-4, atol=1e-5)"
        ),
        "True"
    );
    assert_eq!(display(&mut s, &got, ":device cpu").text, "device: cpu");

    let (mut s2, got2) = session_with(SessionOptions {
        target: Some("sm_100".into()),
        device: Some("emu".into()),
        color: false,
    });
    assert_eq!(
        value(&mut s2, &got2, "(target.current(), target.device())"),
        "('sm_100', 'emu')"
    );
}

#[test]
fn lines_after_a_command_run_as_code() {
    let (mut s, got) = session();
    let outs = ok(
        &mut s,
        &got,
        ":target sm_80\ny = target.current()\nprint(y)\ny",
    );
    assert_eq!(outs.len(), 3, "{outs:?}");
    assert_eq!(outs[1], Output::Stdout("sm_80\n".into()));
    assert_eq!(outs[2], Output::Result(Rich::text("'sm_80'")));
    // a failing command runs none of them
    err(&mut s, &got, ":target sm_1\nz = 1");
    assert_eq!(err(&mut s, &got, "z").0, "E0100");
    // errors in the code after the command point at the right line
    let (_, _, tb) = err(&mut s, &got, "\n:vars\n\nboom");
    assert!(tb.contains(":4:1"), "{tb}");
}

#[test]
fn fusions_profile_autotune() {
    let (mut s, got) = session();
    ok(&mut s, &got, KERNEL);
    let fired = value(&mut s, &got, "graph.fusions(lin, x, w, b)");
    let t = display(&mut s, &got, ":fusions lin(x, w, b)");
    let rules: Vec<String> = fired
        .trim_matches(['[', ']'])
        .split(", ")
        .filter(|r| !r.is_empty())
        .map(|r| r.trim_matches('\'').to_string())
        .collect();
    assert!(
        !rules.is_empty(),
        "the bias+relu epilogue should fuse: {fired}"
    );
    for r in &rules {
        assert!(
            t.text
                .lines()
                .any(|l| l.starts_with(r.as_str()) && l.contains("fired")),
            "{r} not in {}",
            t.text
        );
    }
    assert!(t.html.unwrap_or_default().contains("<table"));
    // `:profile` shows graph.profile's table where the build has the profiler, and otherwise
    // says so with an error (never a made-up table)
    let has_profile = s.complete("graph.prof", 10).matches == vec!["profile".to_string()];
    if has_profile {
        let p = display(&mut s, &got, ":profile lin(x, w, b)");
        assert!(
            p.text.contains("source") || p.text.contains("measured"),
            "{}",
            p.text
        );
    } else {
        let (code, msg, _) = err(&mut s, &got, ":profile lin(x, w, b)");
        assert_eq!(code, "E0100");
        assert!(msg.contains("profiling is not available"), "{msg}");
    }
    // `:autotune` shows autotune.report(): this session's tuning and the cache, text and HTML
    let a = display(&mut s, &got, ":autotune");
    assert!(a.text.contains("autotune cache"), "{}", a.text);
    assert!(a.html.unwrap_or_default().contains("<table"));
}

#[test]
fn time_runs_once_and_shows_the_value() {
    let (mut s, got) = session();
    ok(
        &mut s,
        &got,
        "calls = [0]\ndef bump():\n    calls[0] += 1\n    return calls[0] * 10\n",
    );
    // as IPython's %time: one run, its wall time, then the value as a cell shows it
    let outs = ok(&mut s, &got, ":time bump()");
    match outs.as_slice() {
        [Output::Display(t), Output::Result(v)] => {
            let words: Vec<&str> = t.text.split_whitespace().collect();
            assert_eq!(words[..2], ["Wall", "time:"], "{}", t.text);
            assert!(words[2].parse::<f64>().is_ok(), "{}", t.text);
            assert!(["ns", "µs", "ms", "s"].contains(&words[3]), "{}", t.text);
            assert_eq!(v.text, "10");
        }
        other => panic!("expected a time and a value, got {other:?}"),
    }
    assert_eq!(value(&mut s, &got, "calls[0]"), "1");
    // IPython's spelling, `%time`, is the same command
    let outs = ok(&mut s, &got, "%time bump()");
    assert!(matches!(outs.as_slice(), [Output::Display(_), Output::Result(v)] if v.text == "20"));
    assert_eq!(value(&mut s, &got, "calls[0]"), "2");
    // a None value shows only the time
    let outs = ok(&mut s, &got, ":time print('hi')");
    assert_eq!(outs.len(), 2, "{outs:?}");
    assert_eq!(outs[0], Output::Stdout("hi\n".into()));
    let (code, _, _) = err(&mut s, &got, ":time bump(nope)");
    assert_eq!(code, "E0100");
    let (code, _, _) = err(&mut s, &got, ":time");
    assert_eq!(code, "E0101");
    assert_eq!(value(&mut s, &got, "calls[0]"), "2");
}

#[test]
fn time_cell_magic_runs_the_cell_once() {
    let (mut s, got) = session();
    ok(&mut s, &got, "calls = [0]\n");
    // IPython's %%time: the rest of the cell runs once; its prints, then the wall time, then
    // the trailing expression's value
    let outs = ok(
        &mut s,
        &got,
        "%%time\ncalls[0] += 1\nprint('body')\ncalls[0] * 10\n",
    );
    match outs.as_slice() {
        [Output::Stdout(p), Output::Display(t), Output::Result(v)] => {
            assert_eq!(p, "body\n");
            let words: Vec<&str> = t.text.split_whitespace().collect();
            assert_eq!(words[..2], ["Wall", "time:"], "{}", t.text);
            assert!(words[2].parse::<f64>().is_ok(), "{}", t.text);
            assert_eq!(v.text, "10");
        }
        other => panic!("expected the print, a time and a value, got {other:?}"),
    }
    assert_eq!(value(&mut s, &got, "calls[0]"), "1");
    // an error in the body keeps its line in the cell (line 3) and the session's state
    let (code, _, rendered) = err(&mut s, &got, "%%time\ncalls[0] += 1\nnope + 1\n");
    assert_eq!(code, "E0100");
    assert!(rendered.contains(":3:"), "{rendered}");
    assert_eq!(value(&mut s, &got, "calls[0]"), "2");
    // `%%time` alone opens a cell whose body follows
    assert!(matches!(
        s.is_complete("%%time\n"),
        IsComplete::Incomplete { .. }
    ));
    assert_eq!(s.is_complete("%%time\nx = 1\n"), IsComplete::Complete);
}

#[test]
fn timeit_repeats_and_reports_mean_and_std() {
    let (mut s, got) = session();
    ok(
        &mut s,
        &got,
        "calls = [0]\ndef slow(n):\n    calls[0] += 1\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n",
    );
    let start = std::time::Instant::now();
    let t = display(&mut s, &got, ":timeit slow(200)");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // "<mean> <unit> ± <std> <unit> per loop (mean ± std. dev. of 7 runs, <n> loops each)"
    let words: Vec<&str> = t.text.split_whitespace().collect();
    assert_eq!(words.len(), 17, "{}", t.text);
    assert!(words[0].parse::<f64>().is_ok() && words[3].parse::<f64>().is_ok());
    assert_eq!(words[2], "±", "{}", t.text);
    assert_eq!(
        words[5..12],
        ["per", "loop", "(mean", "±", "std.", "dev.", "of"],
        "{}",
        t.text
    );
    let runs: u64 = words[12].parse().expect("a run count");
    let loops: u64 = words[14].parse().expect("a loop count");
    // 7 runs, fewer (at least 2) when they would take more than a few seconds
    assert!((2..=7).contains(&runs), "{}", t.text);
    assert!(
        (0..7).any(|k| loops == 10u64.pow(k)),
        "loops grow by tens: {}",
        t.text
    );
    let calls: u64 = value(&mut s, &got, "calls[0]").parse().unwrap();
    // the calibration runs (1, 10, … loops) and 7 runs of `loops`
    assert!(calls > runs * loops, "{calls} calls, {}", t.text);
    let (code, _, _) = err(&mut s, &got, ":timeit");
    assert_eq!(code, "E0101");
    // `%timeit` is IPython's spelling of it
    let t = display(&mut s, &got, "%timeit slow(10)");
    assert!(
        t.text.contains(" per loop (mean ± std. dev. of "),
        "{}",
        t.text
    );
}

#[test]
fn load_runs_a_file_in_the_session() {
    let dir = std::env::temp_dir().join(format!("tessera-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let good = dir.join("good.tsr");
    std::fs::write(&good, "loaded = 41 + 1\nprint('hi from file')\nloaded\n").expect("write");
    let bad = dir.join("bad.tsr");
    std::fs::write(&bad, "a = 1\nb = a / 0\n").expect("write");
    let (mut s, got) = session();
    let outs = ok(&mut s, &got, &format!(":load {}", good.display()));
    assert_eq!(outs, vec![Output::Stdout("hi from file\n".into())]);
    assert_eq!(value(&mut s, &got, "loaded"), "42");
    let (code, _, tb) = err(&mut s, &got, &format!(":load {}", bad.display()));
    assert_eq!(code, "E0500");
    assert!(tb.contains("bad.tsr:2:"), "{tb}");
    assert_eq!(value(&mut s, &got, "a"), "1");
    let (code, msg, _) = err(&mut s, &got, ":load /nonexistent/x.tsr");
    assert_eq!(code, "E0500");
    assert!(msg.contains("cannot read"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn interrupt_stops_a_cell_and_keeps_state() {
    let (mut s, got) = session();
    ok(&mut s, &got, "keep = 5");
    let flag = s.interrupt_handle();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::SeqCst);
    });
    let r = s.execute("keep = 6\nwhile True:\n    pass\n");
    assert_eq!(r, CellOutcome::Interrupted);
    let _ = setter.join();
    assert!(!s.interrupt_handle().load(Ordering::SeqCst));
    assert_eq!(value(&mut s, &got, "keep"), "6");
    // `:time` observes it too
    let flag = s.interrupt_handle();
    ok(&mut s, &got, "def spin():\n    while True:\n        pass\n");
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::SeqCst);
    });
    assert_eq!(s.execute(":time spin()"), CellOutcome::Interrupted);
    let _ = setter.join();
    let flag = s.interrupt_handle();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::SeqCst);
    });
    assert_eq!(s.execute(":timeit spin()"), CellOutcome::Interrupted);
    let _ = setter.join();
    assert_eq!(value(&mut s, &got, "keep + 1"), "7");
}

#[test]
fn quit() {
    let (mut s, _) = session();
    assert_eq!(s.execute(":quit"), CellOutcome::Quit);
    assert_eq!(s.execute("  :q  "), CellOutcome::Quit);
}

#[test]
fn warnings_go_to_the_sink() {
    let (mut s, got) = session_with(SessionOptions {
        device: Some("emu".into()),
        ..Default::default()
    });
    // attention with a head dimension of 640 is not lowered to Target IR: the emulator
    // falls back to the cpu and says so
    let outs = ok(
        &mut s,
        &got,
        "@op.kernel\ndef p(q):\n    return op.flash_attention(q, q, q)\n\nr = p(op.ones((1, 4, 640)))\nr.shape",
    );
    let warn: Vec<&String> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Stderr(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(warn.len(), 1, "{outs:?}");
    assert!(warn[0].starts_with("warning: kernel"), "{}", warn[0]);
    assert_eq!(
        outs.last(),
        Some(&Output::Result(Rich::text("(1, 4, 640)")))
    );
}

#[test]
fn is_complete_and_indent() {
    let (s, _) = session();
    assert_eq!(s.is_complete("x = 1"), IsComplete::Complete);
    assert_eq!(
        s.is_complete("def f(x):"),
        IsComplete::Incomplete {
            indent: "    ".into()
        }
    );
    assert_eq!(
        s.is_complete("def f(x):\n    if x:  # c\n"),
        IsComplete::Incomplete {
            indent: "        ".into()
        }
    );
    assert_eq!(
        s.is_complete("def f(x):\n    return x\n"),
        IsComplete::Incomplete {
            indent: "    ".into()
        }
    );
    assert_eq!(
        s.is_complete("def f(x):\n    return x\n\n"),
        IsComplete::Complete
    );
    assert_eq!(
        s.is_complete("y = [1,"),
        IsComplete::Incomplete {
            indent: String::new()
        }
    );
    assert_eq!(s.is_complete("y = 1)"), IsComplete::Invalid);
    assert_eq!(s.is_complete(":graph f(x"), IsComplete::Complete);
}

#[test]
fn completion_uses_real_objects() {
    let (mut s, got) = session();
    ok(&mut s, &got, "xs = op.ones((2, 2))\nxylo = 1\nword = 'a'");
    let c = s.complete("op.ma", 5);
    assert_eq!((c.start, c.end), (3, 5));
    assert!(c.matches.contains(&"matmul".to_string()), "{:?}", c.matches);
    assert!(c.matches.iter().all(|m| m.starts_with("ma")));
    let c = s.complete("y = xs.sh", 9);
    assert_eq!(c.matches, vec!["shape".to_string()]);
    assert_eq!(c.start, 7);
    let c = s.complete("x", 1);
    assert!(c.matches.contains(&"xs".to_string()) && c.matches.contains(&"xylo".to_string()));
    let c = s.complete("print(wo", 8);
    assert_eq!(c.matches, vec!["word".to_string()]);
    let c = s.complete("word.up", 7);
    assert_eq!(c.matches, vec!["upper".to_string()]);
    let c = s.complete("schedule.", 9);
    assert!(c.matches.contains(&"tile".to_string()), "{:?}", c.matches);
    let c = s.complete("graph.lo", 8);
    assert_eq!(c.matches, vec!["lower".to_string()]);
    let c = s.complete("wh", 2);
    assert!(c.matches.contains(&"while".to_string()));
    let c = s.complete(":gr", 3);
    assert_eq!(
        (c.matches.clone(), c.start),
        (vec![":graph".to_string()], 0)
    );
    let c = s.complete(":t", 2);
    assert_eq!(c.matches, vec![":target", ":tile", ":time", ":timeit"]);
    let c = s.complete(":device e", 9);
    assert_eq!((c.matches.clone(), c.start), (vec!["emu".to_string()], 8));
    // every device of the registry, vulkan included
    let c = s.complete(":device v", 9);
    assert_eq!(
        (c.matches.clone(), c.start),
        (vec!["vulkan".to_string()], 8)
    );
    let c = s.complete(":device ", 8);
    assert_eq!(c.matches, ["auto", "cpu", "emu", "cuda", "vulkan"]);
    let c = s.complete("nothing.", 8);
    assert!(c.matches.is_empty());
}

#[test]
fn inspect_shows_signatures_and_docs() {
    let (mut s, got) = session();
    let r = s.inspect("op.matmul", 4).expect("op.matmul");
    assert!(r.text.starts_with("op.matmul("), "{}", r.text);
    let r = s.inspect("y = op.matmul(a, ", 17).expect("callee");
    assert!(r.text.starts_with("op.matmul("), "{}", r.text);
    ok(
        &mut s,
        &got,
        "def scale(x, k=2):\n    \"Multiplies x by k.\"\n    return x * k\n",
    );
    let r = s.inspect("scale", 2).expect("function");
    assert!(r.text.starts_with("def scale(x, k=2)"), "{}", r.text);
    assert!(r.text.contains("Multiplies x by k."), "{}", r.text);
    let r = s.inspect("op", 1).expect("module");
    assert!(r.text.contains("matmul"), "{}", r.text);
    assert!(s.inspect("undefined_thing", 3).is_none());
    assert!(s.inspect("   ", 1).is_none());
}

#[test]
fn deep_recursion_reaches_the_limit_on_a_big_stack() {
    let r = tessera_repl::with_big_stack(|| {
        let (mut s, got) = session();
        ok(&mut s, &got, "def f(n):\n    return f(n + 1)\n");
        let (code, msg, _) = err(&mut s, &got, "f(0)");
        (code, msg, value(&mut s, &got, "1 + 1"))
    })
    .expect("thread");
    assert_eq!(r.0, "E0500");
    assert!(r.1.contains("recursion"), "{}", r.1);
    assert_eq!(r.2, "2");
}

#[test]
fn help_and_dir_without_an_argument_list_the_session() {
    let (mut s, got) = session();
    assert_eq!(value(&mut s, &got, "dir()"), "[]");
    ok(&mut s, &got, "lr = 0.5\ndef f(x):\n    return x\n");
    assert_eq!(value(&mut s, &got, "dir()"), "['f', 'lr']");
    let outs = ok(&mut s, &got, "help()");
    let text: String = outs
        .iter()
        .filter_map(|o| match o {
            Output::Stdout(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.starts_with("Defined here:\n"), "{text}");
    assert!(text.contains("  f   function  def f(x)\n"), "{text}");
    assert!(text.contains("  lr  float     0.5\n"), "{text}");
    assert!(text.contains("Builtin modules: "), "{text}");
    assert!(text.contains(" op "), "{text}");
    // inside a function, dir() lists its locals
    assert_eq!(
        value(&mut s, &got, "def g(a):\n    b = a\n    return dir()\ng(1)"),
        "['a', 'b']"
    );
}
