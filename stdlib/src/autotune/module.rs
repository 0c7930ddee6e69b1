//! The `autotune` module of `.tsr` scripts over a session's [`State`]: `enable`, the cache
//! files (`save_cache`, `load_cache`, `clear`), `candidates()` and `report()`.

use super::{env_off, flush_warnings, shapes_text, warn, Origin, State};
use crate::table::{Table, TableObj};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use tessera_compiler::tune::{self, cache};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{CallArgs, Module, Value};
use tessera_lang::Span;

/// Shapes as `[1000,512] [512,1000]`.
fn dims_text(shapes: &[Vec<usize>]) -> String {
    shapes
        .iter()
        .map(|s| {
            let d: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            format!("[{}]", d.join(","))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `autotune.report()`: this session's tuning, the cache entries, and every measured
/// candidate's predicted beside measured time.
pub fn report(st: &State) -> TableObj {
    let mut runs = Table::new(&[
        "op",
        "shapes",
        "arch",
        "config",
        "predicted",
        "measured",
        "source",
        "from",
        "ranked",
        "pruned",
        "trials",
    ]);
    runs.title = Some("autotune: this session".into());
    runs.right = vec![4, 5, 8, 9, 10];
    for e in &st.events {
        runs.rows.push(vec![
            e.entry.key.op.clone(),
            shapes_text(&e.entry.key),
            e.entry.key.arch.clone(),
            e.entry.config.describe(),
            crate::profile::fmt_time(e.entry.predicted_us),
            e.entry
                .measured_us
                .map_or("-".to_string(), crate::profile::fmt_time),
            e.entry.source.clone(),
            match &e.origin {
                Origin::Tuned => "tuned".to_string(),
                Origin::Cache => "cache".to_string(),
                Origin::Off => "off".to_string(),
                Origin::Interpolated(from) => format!("interpolated from {from}"),
            },
            e.ranked.to_string(),
            e.pruned.to_string(),
            e.trials.to_string(),
        ]);
    }
    let ranked: u32 = st.events.iter().map(|e| e.ranked).sum();
    let trials: u32 = st.events.iter().map(|e| e.trials).sum();
    let hits = st
        .events
        .iter()
        .filter(|e| e.origin == Origin::Cache)
        .count();
    runs.notes.push(format!(
        "{} kernel(s): {} candidates ranked by the model, {} trials measured, {} from the cache",
        st.events.len(),
        ranked,
        trials,
        hits
    ));
    if !st.enabled {
        runs.notes
            .push("autotuning is disabled (autotune.enable(False))".into());
    } else if env_off() {
        runs.notes
            .push("TESSERA_AUTOTUNE=off: the model's pick, no cache".into());
    }
    let mut entries = Table::new(&[
        "op",
        "shapes",
        "arch",
        "config",
        "predicted",
        "measured",
        "source",
        "candidates",
        "trials",
    ]);
    entries.title = Some(format!("autotune cache: {} entries", st.entries.len()));
    entries.right = vec![4, 5, 7, 8];
    for e in &st.entries {
        entries.rows.push(vec![
            e.key.op.clone(),
            shapes_text(&e.key),
            e.key.arch.clone(),
            e.config.describe(),
            crate::profile::fmt_time(e.predicted_us),
            e.measured_us
                .map_or("-".to_string(), crate::profile::fmt_time),
            match &e.interpolated_from {
                None => e.source.clone(),
                Some(from) => format!("{}, interpolated from {}", e.source, dims_text(from)),
            },
            e.candidates.to_string(),
            e.trials.to_string(),
        ]);
    }
    let mut meas = Table::new(&["op", "config", "predicted", "measured"]);
    meas.title = Some("measured candidates".into());
    meas.right = vec![2, 3];
    for m in &st.measured {
        meas.rows.push(vec![
            m.op.clone(),
            m.config.describe(),
            crate::profile::fmt_time(m.predicted_us),
            crate::profile::fmt_time(m.measured_us),
        ]);
    }
    if st.measured.is_empty() {
        meas.notes.push(
            "none: no GPU timer in this session, so configs are the cost model's picks".into(),
        );
    } else if let Some(r) = tune::spearman(
        &st.measured
            .iter()
            .map(|m| m.predicted_us)
            .collect::<Vec<_>>(),
        &st.measured
            .iter()
            .map(|m| m.measured_us)
            .collect::<Vec<_>>(),
    ) {
        meas.notes.push(format!(
            "Spearman rank correlation of predicted and measured: {r:.3}"
        ));
    }
    TableObj {
        type_name: "autotune_report",
        lines: vec![],
        parts: vec![runs, entries, meas],
    }
}

/// `autotune.candidates()`: one dict per candidate ranked this session, in ranking order per
/// tuned kernel: `op`, `shapes`, `config`, `rank`, `predicted_us`, `measured_us` (None unless
/// a GPU timed it) and `chosen`. Kernels configured from the cache add none (nothing is
/// ranked).
fn candidates(st: &State) -> Result<Value, Diagnostic> {
    let mut out = Vec::with_capacity(st.candidates.len());
    for c in &st.candidates {
        let mut d = tessera_lang::eval::dict::Dict::new();
        let f = |x: Option<f64>| x.map_or(Value::None, Value::Float);
        for (k, v) in [
            ("op", Value::str(&c.op)),
            ("shapes", Value::str(&c.shapes)),
            ("config", Value::str(&c.config.describe())),
            ("rank", Value::Int(c.rank as i64)),
            ("predicted_us", Value::Float(c.predicted_us)),
            ("measured_us", f(c.measured_us)),
            ("chosen", Value::Bool(c.chosen)),
        ] {
            d.insert(Value::str(k), v)?;
        }
        out.push(Value::Dict(Rc::new(std::cell::RefCell::new(d))));
    }
    Ok(Value::list(out))
}

/// The one `path` argument of `fname(path)`, and its span.
fn path_arg(args: &CallArgs, fname: &str) -> Result<(PathBuf, Span), Diagnostic> {
    let a = args.bind(fname, &["path"], &[])?;
    let Some(x) = a.into_iter().flatten().next() else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("{fname}() missing required argument 'path'"),
        ));
    };
    match &x.value {
        Value::Str(s) => Ok((PathBuf::from(&**s), x.span)),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("path must be a str, not {}", other.type_name()),
        )
        .at(x.span)),
    }
}

/// Builds the `autotune` module over a session's autotuner `state`.
pub fn module(state: Rc<RefCell<State>>) -> Module {
    let m = Module::new("autotune", "the autotuner and its cache");
    let s = state.clone();
    m.set(
        "enable",
        Value::native(
            "enable",
            "enable(on=True, interpolate=True)",
            move |_, args| {
                let a = args.bind("enable", &[], &["on", "interpolate"])?;
                let flag = |i: usize, name: &str| -> Result<Option<bool>, Diagnostic> {
                    match a.get(i).cloned().flatten() {
                        Some(x) => match x.value {
                            Value::Bool(b) => Ok(Some(b)),
                            other => Err(Diagnostic::new(
                                Code::E0101,
                                format!("{name} must be a bool, not {}", other.type_name()),
                            )
                            .at(x.span)),
                        },
                        None => Ok(None),
                    }
                };
                let on = flag(0, "on")?.unwrap_or(true);
                let interpolate = flag(1, "interpolate")?;
                let mut st = s.borrow_mut();
                st.enabled = on;
                if let Some(i) = interpolate {
                    st.interpolate = i;
                }
                Ok(Value::None)
            },
        ),
    );
    let s = state.clone();
    m.set(
        "save_cache",
        Value::native("save_cache", "save_cache(path)", move |_, args| {
            let (path, span) = path_arg(&args, "save_cache")?;
            let entries = s.borrow().entries.clone();
            let n = cache::save_merged(&path, &entries).map_err(|e| {
                Diagnostic::new(
                    Code::E0500,
                    format!("cannot save the autotune cache to {}: {e}", path.display()),
                )
                .at(span)
            })?;
            Ok(Value::Int(n as i64))
        }),
    );
    let s = state.clone();
    m.set(
        "load_cache",
        Value::native("load_cache", "load_cache(path)", move |it, args| {
            let r = load_cache(&s, &args);
            flush_warnings(it);
            r
        }),
    );
    let s = state.clone();
    m.set(
        "clear",
        Value::native("clear", "clear()", move |_, args| {
            args.bind("clear", &[], &[])?;
            let mut st = s.borrow_mut();
            st.entries.clear();
            st.events.clear();
            st.measured.clear();
            st.candidates.clear();
            // Files are read again on the next use (the disk is not touched); kernels already
            // compiled this session keep their config.
            st.loaded.clear();
            st.unusable.clear();
            Ok(Value::None)
        }),
    );
    let s = state.clone();
    m.set(
        "candidates",
        Value::native("candidates", "candidates()", move |_, args| {
            args.bind("candidates", &[], &[])?;
            candidates(&s.borrow())
        }),
    );
    let s = state;
    m.set(
        "report",
        Value::native("report", "report()", move |_, args| {
            args.bind("report", &[], &[])?;
            Ok(Value::host(report(&s.borrow())))
        }),
    );
    m
}

/// `autotune.load_cache(path)`: the number of entries read (0, with a warning, for a missing or
/// corrupt file).
fn load_cache(s: &RefCell<State>, args: &CallArgs) -> Result<Value, Diagnostic> {
    let (path, _) = path_arg(args, "load_cache")?;
    if !path.exists() {
        warn(&format!("autotune cache {}: no such file", path.display()));
        return Ok(Value::Int(0));
    }
    match cache::load(&path) {
        Ok(es) => {
            let n = es.len();
            let mut st = s.borrow_mut();
            for e in es {
                st.upsert(e);
            }
            Ok(Value::Int(n as i64))
        }
        Err(e) => {
            warn(&format!(
                "autotune cache {}: {e}; it is ignored and left as it is",
                path.display()
            ));
            Ok(Value::Int(0))
        }
    }
}
