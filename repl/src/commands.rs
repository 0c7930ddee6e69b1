//! The `:` commands of SPEC §8, at the REPL prompt and as a notebook cell's first line.
//!
//! Each command's output is a [`Rich`] display (plain text and HTML). Errors are diagnostics
//! whose spans point into the cell, like those of code.

use crate::render;
use crate::session::{Output, Rich, Session};
use std::ops::Range;
use std::time::{Duration, Instant};
use tessera_lang::ast::{self, ExprKind};
use tessera_lang::diag::{suggest, Code};
use tessera_lang::eval::{interrupted, CallArgs, Interp, Value};
use tessera_lang::span::{FileId, Span};
use tessera_lang::{parse, Diagnostic};

/// What the session does after a command.
pub enum After {
    Continue,
    Quit,
}

/// Every command: name, argument, one-line description.
const COMMANDS: &[(&str, &str, &str)] = &[
    (":help", "", "this list"),
    (":quit", "", "leave the session (also Ctrl-D at the prompt)"),
    (":reset", "", "delete every user variable"),
    (":load", "FILE", "run a .tsr file in the session"),
    (":vars", "", "table of user variables"),
    (
        ":time",
        "EXPR",
        "run an expression once and show its wall time and value (IPython's %time)",
    ),
    (
        ":timeit",
        "EXPR",
        "time an expression by repeating it: mean ± std. dev. per loop (IPython's %timeit)",
    ),
    (
        ":graph",
        "CALL",
        "Graph IR of a kernel call, after the graph passes",
    ),
    (":schedule", "CALL", "Schedule IR of a kernel call"),
    (":tile", "CALL", "Tile IR of each kernel of the call"),
    (
        ":target",
        "CALL | NAME",
        "Target IR of a kernel call; with a name (sm_80 sm_90 sm_90a sm_100), set the target",
    ),
    (":ptx", "CALL", "PTX of each kernel of the call"),
    (":profile", "CALL", "profile table of a kernel call"),
    (
        ":fusions",
        "CALL",
        "graph rewrites that fired, and near misses",
    ),
    (":autotune", "", "the autotune cache"),
    (":device", "NAME", "set the device: auto cpu emu cuda"),
];

/// Every command: name, argument, one-line description (the guide's reference lists them).
pub fn list() -> &'static [(&'static str, &'static str, &'static str)] {
    COMMANDS
}

/// Command names (with the colon), for completion.
pub fn names() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().map(|c| c.0)
}

/// The `:help` table.
pub fn help() -> Rich {
    let rows: Vec<Vec<String>> = COMMANDS
        .iter()
        .map(|(n, a, d)| {
            vec![
                if a.is_empty() {
                    n.to_string()
                } else {
                    format!("{n} {a}")
                },
                d.to_string(),
            ]
        })
        .collect();
    let mut r = render::table(&["command", "what it does"], &rows);
    r.text.push_str(
        "\nCALL is a call of an @op.kernel (or a plain function), e.g. f(x, w). \
         The lines after a command in the same cell run as code.",
    );
    r
}

/// Runs the command on `line` (a byte range of `cell`, registered as `file`).
pub fn run(
    s: &mut Session,
    cell: &str,
    file: FileId,
    line: Range<usize>,
) -> Result<After, Diagnostic> {
    let text = &cell[line.clone()];
    let name_len = text[1..]
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(text.len(), |i| i + 1);
    let name = &text[..name_len];
    let name_span = Span::new(file, line.start, line.start + name_len);
    // the argument: the rest of the line, trimmed
    let arg_lo = line.start + name_len;
    let raw = &cell[arg_lo..line.end];
    let lead = raw.len() - raw.trim_start().len();
    let arg = raw.trim();
    let arg_range = arg_lo + lead..arg_lo + lead + arg.len();
    let cmd = Cmd {
        cell,
        file,
        name,
        name_span,
        arg,
        arg_range,
    };
    match name {
        ":help" | ":h" | ":?" => {
            cmd.no_arg()?;
            s.emit(Output::Display(help()));
        }
        ":quit" | ":q" | ":exit" => {
            cmd.no_arg()?;
            return Ok(After::Quit);
        }
        ":reset" => {
            cmd.no_arg()?;
            let n = s.interp.user_globals().len();
            s.interp.clear_globals();
            s.emit(Output::Display(render::message(format!(
                "deleted {n} variable{}",
                if n == 1 { "" } else { "s" }
            ))));
        }
        ":vars" => {
            cmd.no_arg()?;
            s.emit(Output::Display(vars(&s.interp)));
        }
        ":load" => load(s, &cmd)?,
        ":time" | "%time" => time(s, &cmd)?,
        ":timeit" | "%timeit" => timeit(s, &cmd)?,
        ":graph" | ":schedule" | ":tile" | ":ptx" => {
            let v = cmd.call_graph(s, "lower", Some(&name[1..]))?;
            s.emit(Output::Display(render::ir(&v.to_str())));
        }
        ":target" => {
            if cmd.arg.contains('(') {
                let v = cmd.call_graph(s, "lower", Some("target"))?;
                s.emit(Output::Display(render::ir(&v.to_str())));
            } else {
                set_setting(s, &cmd, "set", "current", "target")?;
            }
        }
        ":device" => set_setting(s, &cmd, "set_device", "device", "device")?,
        ":fusions" => fusions(s, &cmd)?,
        ":profile" => profile(s, &cmd)?,
        ":autotune" => autotune(s, &cmd)?,
        _ => {
            let mut d = Diagnostic::new(Code::E0100, format!("unknown command `{name}`"))
                .at(name_span)
                .with_label("not a command");
            d = match suggest(name, names()) {
                Some(n) => d.with_help(format!("did you mean `{n}`? (`:help` lists the commands)")),
                None => d.with_help("`:help` lists the commands"),
            };
            return Err(d);
        }
    }
    Ok(After::Continue)
}

struct Cmd<'a> {
    cell: &'a str,
    file: FileId,
    name: &'a str,
    name_span: Span,
    arg: &'a str,
    arg_range: Range<usize>,
}

impl Cmd<'_> {
    fn arg_span(&self) -> Span {
        Span::new(self.file, self.arg_range.start, self.arg_range.end)
    }

    fn no_arg(&self) -> Result<(), Diagnostic> {
        if self.arg.is_empty() {
            return Ok(());
        }
        Err(
            Diagnostic::new(Code::E0101, format!("`{}` takes no argument", self.name))
                .at(self.arg_span())
                .with_label("unexpected"),
        )
    }

    fn usage(&self) -> String {
        let (n, a, _) = COMMANDS
            .iter()
            .find(|c| c.0 == self.name)
            .copied()
            .unwrap_or((self.name, "", ""));
        format!("usage: {n} {a}")
    }

    fn need_arg(&self, what: &str) -> Result<(), Diagnostic> {
        if !self.arg.is_empty() {
            return Ok(());
        }
        Err(
            Diagnostic::new(Code::E0101, format!("`{}` needs {what}", self.name))
                .at(self.name_span)
                .with_help(self.usage()),
        )
    }

    /// The argument parsed as one expression.
    fn expr(&self, what: &str) -> Result<ast::Expr, Diagnostic> {
        self.need_arg(what)?;
        parse::parse_expr_at(self.cell, self.arg_range.clone(), self.file).map_err(|mut ds| {
            if ds.is_empty() {
                Diagnostic::new(Code::E0001, "expected an expression").at(self.arg_span())
            } else {
                ds.swap_remove(0)
            }
        })
    }

    /// The argument as a call `f(args)`: `f` and the evaluated arguments.
    fn call(&self, s: &mut Session) -> Result<(Value, Span, CallArgs), Diagnostic> {
        let e = self.expr("a kernel call, e.g. f(x, w)")?;
        let ExprKind::Call { func, args } = &e.kind else {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("`{}` needs a kernel call, e.g. f(x, w)", self.name),
            )
            .at(e.span)
            .with_label("not a call")
            .with_help(self.usage()));
        };
        let it = &mut s.interp;
        let f = it.eval_expr(func)?;
        let mut ca = CallArgs::new(e.span);
        for a in args {
            match a {
                ast::Arg::Positional(x) => {
                    let v = it.eval_expr(x)?;
                    ca.positional.push((v, x.span));
                }
                ast::Arg::Keyword(k, x) => {
                    let v = it.eval_expr(x)?;
                    ca.keywords.push((k.name.clone(), v, x.span));
                }
                ast::Arg::Star(x) => {
                    let v = it.eval_expr(x)?;
                    for item in it.iterate(&v, x.span)? {
                        ca.positional.push((item, x.span));
                    }
                }
            }
        }
        Ok((f, func.span, ca))
    }

    /// `graph.NAME(f, *args[, level=LEVEL])` for the call in the argument.
    fn call_graph(
        &self,
        s: &mut Session,
        member: &str,
        level: Option<&str>,
    ) -> Result<Value, Diagnostic> {
        let (f, fspan, args) = self.call(s)?;
        let native = s.builtin_member("graph", member).ok_or_else(|| {
            Diagnostic::new(
                Code::E0100,
                format!("`graph.{member}` is not available in this build"),
            )
            .at(self.name_span)
        })?;
        let mut ga = CallArgs::new(args.span);
        ga.positional.push((f, fspan));
        ga.positional.extend(args.positional);
        ga.keywords = args.keywords;
        if let Some(l) = level {
            ga.keywords
                .push(("level".into(), Value::str(l), self.name_span));
        }
        s.interp.call(&native, ga)
    }
}

/// `:vars`: name, type, shape and dtype of tensors, a short repr.
fn vars(it: &Interp) -> Rich {
    let rows: Vec<Vec<String>> = it
        .user_globals()
        .into_iter()
        .map(|(name, v)| {
            let (shape, dtype) = match tessera_stdlib::tensor::as_tensor(&v) {
                Some(t) => (
                    format!(
                        "({})",
                        t.shape()
                            .iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                            + if t.shape().len() == 1 { "," } else { "" }
                    ),
                    t.dtype().name().to_string(),
                ),
                None => (String::new(), String::new()),
            };
            vec![
                name.to_string(),
                v.type_name().to_string(),
                shape,
                dtype,
                short(&v.repr(), 60),
            ]
        })
        .collect();
    if rows.is_empty() {
        return render::message("no variables");
    }
    render::table(&["name", "type", "shape", "dtype", "value"], &rows)
}

/// The first line of `s`, at most `n` characters (with `...` when cut).
fn short(s: &str, n: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    let cut = first.chars().count() > n || s.lines().nth(1).is_some();
    let mut out: String = first.chars().take(n).collect();
    if cut {
        out.push_str("...");
    }
    out
}

/// `:load FILE`: runs the file in the session (like `%run`: its last value is not shown).
fn load(s: &mut Session, cmd: &Cmd) -> Result<(), Diagnostic> {
    cmd.need_arg("a file name")?;
    let path = cmd.arg.trim_matches(|c| c == '"' || c == '\'');
    let limit = tessera_lang::read::MAX_SCRIPT_BYTES;
    let text = match tessera_lang::read::read_text(std::path::Path::new(path), limit) {
        Ok(t) => t,
        Err(tessera_lang::read::ReadError::Io(e)) => {
            return Err(
                Diagnostic::new(Code::E0500, format!("cannot read {path}: {e}"))
                    .at(cmd.arg_span())
                    .with_label("this file"),
            )
        }
        // The session keeps the excerpt's text, so the diagnostic can show the bad byte.
        Err(e) => return Err(e.diagnostic(path, &mut s.interp.sources)),
    };
    let file = s.interp.sources.add(path, text.clone());
    let module = parse::parse_module(&text, file).map_err(|mut ds| ds.swap_remove(0))?;
    s.interp.exec_module(&module)?;
    Ok(())
}

/// `:time EXPR`: runs the expression once, as IPython's `%time`: its wall time, then its value
/// (as a cell's trailing expression shows it). An expression with effects (an optimiser step)
/// has them once.
fn time(s: &mut Session, cmd: &Cmd) -> Result<(), Diagnostic> {
    let e = cmd.expr("an expression")?;
    let t = Instant::now();
    let v = s.interp.eval_expr(&e)?;
    let wall = t.elapsed();
    s.emit(Output::Display(render::message(format!(
        "Wall time: {}",
        fmt_sig3(wall.as_secs_f64())
    ))));
    if !matches!(v, Value::None) {
        s.emit(Output::Result(crate::session::rich_value(&v)));
    }
    Ok(())
}

/// How long one timed run of `:timeit` lasts at least: the loops per run grow ×10 until a run
/// takes this long (IPython's `autorange`).
const TIMEIT_RUN: Duration = Duration::from_millis(200);
/// The most loops per run.
const TIMEIT_MAX_LOOPS: u64 = 1_000_000;
/// Runs of `:timeit` (IPython's default `-r 7`) …
const TIMEIT_REPEATS: usize = 7;
/// … fewer when they would take longer than this together (at least [`TIMEIT_MIN_REPEATS`]).
const TIMEIT_BUDGET: Duration = Duration::from_secs(5);
const TIMEIT_MIN_REPEATS: usize = 2;

/// `:timeit EXPR`: as IPython's `%timeit`, the loops per run are chosen so that a run takes at
/// least [`TIMEIT_RUN`] (the calibration runs also compile the kernels, and are not reported),
/// then [`TIMEIT_REPEATS`] runs are timed; shows the mean ± the standard deviation of the time per
/// loop. For expressions without side effects: it runs many times.
fn timeit(s: &mut Session, cmd: &Cmd) -> Result<(), Diagnostic> {
    let e = cmd.expr("an expression")?;
    let flag = s.interp.interrupt.clone();
    let run = |it: &mut Interp, loops: u64| -> Result<Duration, Diagnostic> {
        let t = Instant::now();
        for _ in 0..loops {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(interrupted().at(e.span));
            }
            it.eval_expr(&e)?;
        }
        Ok(t.elapsed())
    };
    let mut loops = 1;
    loop {
        let took = run(&mut s.interp, loops)?;
        if took >= TIMEIT_RUN || loops >= TIMEIT_MAX_LOOPS {
            break;
        }
        loops *= 10;
    }
    let mut per_loop = Vec::with_capacity(TIMEIT_REPEATS);
    let timed = Instant::now();
    while per_loop.len() < TIMEIT_REPEATS
        && (per_loop.len() < TIMEIT_MIN_REPEATS || timed.elapsed() < TIMEIT_BUDGET)
    {
        per_loop.push(run(&mut s.interp, loops)?.as_secs_f64() / loops as f64);
    }
    let n = per_loop.len() as f64;
    let mean = per_loop.iter().sum::<f64>() / n;
    let std = (per_loop
        .iter()
        .map(|t| (t - mean) * (t - mean))
        .sum::<f64>()
        / n)
        .sqrt();
    let plural = |k: u64, w: &str| format!("{k} {w}{}", if k == 1 { "" } else { "s" });
    s.emit(Output::Display(render::message(format!(
        "{} ± {} per loop (mean ± std. dev. of {}, {} each)",
        fmt_sig3(mean),
        fmt_sig3(std),
        plural(per_loop.len() as u64, "run"),
        plural(loops, "loop"),
    ))));
    Ok(())
}

/// Seconds with three significant digits and a unit, as IPython's timings: `2.05 ms`,
/// `31.2 µs`, `123 ns`, `1.5 s`.
pub fn fmt_sig3(secs: f64) -> String {
    let (v, unit) = if secs >= 1.0 {
        (secs, "s")
    } else if secs >= 1e-3 {
        (secs * 1e3, "ms")
    } else if secs >= 1e-6 {
        (secs * 1e6, "µs")
    } else {
        (secs * 1e9, "ns")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// `:target NAME` / `:device NAME` (or without a name: show the current one).
fn set_setting(
    s: &mut Session,
    cmd: &Cmd,
    setter: &str,
    getter: &str,
    what: &str,
) -> Result<(), Diagnostic> {
    let missing = || {
        Diagnostic::new(
            Code::E0100,
            format!("`target.{setter}` is not available in this build"),
        )
        .at(cmd.name_span)
    };
    if !cmd.arg.is_empty() {
        let set = s.builtin_member("target", setter).ok_or_else(missing)?;
        let name = cmd.arg.trim_matches(|c| c == '"' || c == '\'');
        let mut ca = CallArgs::new(cmd.arg_span());
        ca.positional.push((Value::str(name), cmd.arg_span()));
        s.interp.call(&set, ca)?;
    }
    let get = s.builtin_member("target", getter).ok_or_else(missing)?;
    let now = s.interp.call(&get, CallArgs::new(cmd.name_span))?;
    s.emit(Output::Display(render::message(format!(
        "{what}: {}",
        now.to_str()
    ))));
    Ok(())
}

/// `:fusions CALL`: a table of the rewrite rules that fired and the near misses.
fn fusions(s: &mut Session, cmd: &Cmd) -> Result<(), Diagnostic> {
    let (f, fspan, args) = cmd.call(&mut *s)?;
    let native = s.builtin_member("graph", "fusions").ok_or_else(|| {
        Diagnostic::new(
            Code::E0100,
            "`graph.fusions` is not available in this build",
        )
        .at(cmd.name_span)
    })?;
    let mut ga = CallArgs::new(args.span);
    ga.positional.push((f, fspan));
    ga.positional.extend(args.positional);
    ga.keywords = args.keywords;
    ga.keywords
        .push(("explain".into(), Value::Bool(true), cmd.name_span));
    let v = s.interp.call(&native, ga)?;
    let mut rows = Vec::new();
    let items = |v: &Value| v.items().unwrap_or_default();
    let parts = items(&v);
    if let Some(fired) = parts.first() {
        for r in items(fired) {
            let f = items(&r);
            let get = |i: usize| f.get(i).map(|x| x.to_str()).unwrap_or_default();
            rows.push(vec![get(0), "fired".to_string(), get(1), get(2)]);
        }
    }
    if let Some(missed) = parts.get(1) {
        for m in items(missed) {
            let f = items(&m);
            let get = |i: usize| f.get(i).map(|x| x.to_str()).unwrap_or_default();
            rows.push(vec![get(0), "missed".to_string(), get(1), get(2)]);
        }
    }
    if rows.is_empty() {
        s.emit(Output::Display(render::message(
            "no graph rewrite fired or nearly fired",
        )));
    } else {
        s.emit(Output::Display(render::table(
            &["rule", "status", "reason", "location"],
            &rows,
        )));
    }
    Ok(())
}

/// `:profile CALL`: `graph.profile(f, *args)` where this build has it.
fn profile(s: &mut Session, cmd: &Cmd) -> Result<(), Diagnostic> {
    if s.builtin_member("graph", "profile").is_none() {
        return Err(Diagnostic::new(
            Code::E0100,
            "profiling is not available in this build yet: there is no `graph.profile`",
        )
        .at(cmd.name_span)
        .with_label("needs the profiler")
        .with_help("`:time EXPR` measures a call's wall-clock time"));
    }
    let v = cmd.call_graph(s, "profile", None)?;
    let r = rich_table_value(s, &v);
    s.emit(Output::Display(r));
    Ok(())
}

/// `:autotune`: `autotune.report()` where this build has it.
fn autotune(s: &mut Session, cmd: &Cmd) -> Result<(), Diagnostic> {
    cmd.no_arg()?;
    let Some(report) = s.builtin_member("autotune", "report") else {
        return Err(Diagnostic::new(
            Code::E0100,
            "autotuning is not available in this build yet: there is no `autotune.report`",
        )
        .at(cmd.name_span)
        .with_label("needs the autotuner"));
    };
    let v = s.interp.call(&report, CallArgs::new(cmd.name_span))?;
    let r = rich_table_value(s, &v);
    s.emit(Output::Display(r));
    Ok(())
}

/// A table-like value (a profile, an autotune report) as rich output: its text, and its HTML
/// rendering ([`HostObject::html`](tessera_lang::eval::HostObject), else an `html` attribute
/// that is a str).
fn rich_table_value(s: &mut Session, v: &Value) -> Rich {
    let text = v.to_str();
    let html = match v {
        Value::Host(h) => h.html().or_else(|| {
            if !h.attr_names().contains(&"html") {
                return None;
            }
            match h.get_attr(v, "html", &mut s.interp) {
                Ok(Some(Value::Str(h))) => Some(h.to_string()),
                _ => None,
            }
        }),
        _ => None,
    };
    Rich {
        html: html.or_else(|| Some(format!("<pre>{}</pre>", render::escape(&text)))),
        svg: None,
        text,
    }
}
