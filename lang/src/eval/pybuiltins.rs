//! The builtins `ord chr divmod set open` and the module `time` (SPEC §3).

use super::pyset::SetObj;
use super::textfile::{parse_mode, TextFile};
use super::value::Module;
use super::{CallArgs, Interp, Value};
use crate::ast::BinOp;
use crate::diag::{Code, Diagnostic};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The longest `time.sleep` accepted, in seconds (a day).
pub const MAX_SLEEP_S: f64 = 86_400.0;

fn arg1(args: &CallArgs, fname: &str, param: &str) -> Result<super::Arg, Diagnostic> {
    let a = args.bind(fname, &[param], &[])?;
    a.into_iter().flatten().next().ok_or_else(|| {
        Diagnostic::new(Code::E0101, format!("{fname}() missing an argument")).at(args.span)
    })
}

pub(super) fn install(it: &mut Interp) {
    it.set_builtin(
        "ord",
        Value::native("ord", "ord(c)", |_, args| {
            let c = arg1(&args, "ord", "c")?;
            let Value::Str(s) = &c.value else {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "ord() expected a string of length 1, but {} found",
                        c.value.type_name()
                    ),
                )
                .at(c.span));
            };
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(ch), None) => Ok(Value::Int(i64::from(u32::from(ch)))),
                _ => Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "ord() expected a character, but string of length {} found",
                        s.chars().count()
                    ),
                )
                .at(c.span)),
            }
        }),
    );
    it.set_builtin(
        "chr",
        Value::native("chr", "chr(i)", |_, args| {
            let c = arg1(&args, "chr", "i")?;
            let i = match &c.value {
                Value::Int(i) => *i,
                Value::Bool(b) => i64::from(*b),
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("chr() expected an int, got {}", other.type_name()),
                    )
                    .at(c.span))
                }
            };
            let ch = u32::try_from(i).ok().and_then(char::from_u32);
            match ch {
                Some(ch) => Ok(Value::Str(ch.to_string().into())),
                None if (0xD800..0xE000).contains(&i) => Err(Diagnostic::new(
                    Code::E0500,
                    format!("chr({i:#x}) is a surrogate code point, which is not a character"),
                )
                .at(c.span)),
                None => Err(Diagnostic::new(
                    Code::E0500,
                    format!("chr() arg not in range(0x110000): {i}"),
                )
                .at(c.span)),
            }
        }),
    );
    it.set_builtin(
        "divmod",
        Value::native("divmod", "divmod(a, b)", |it, args| {
            let a = args.bind("divmod", &["a", "b"], &[])?;
            let mut a = a.into_iter().flatten();
            let (Some(x), Some(y)) = (a.next(), a.next()) else {
                return Ok(Value::None);
            };
            for v in [&x, &y] {
                if !matches!(v.value, Value::Int(_) | Value::Float(_) | Value::Bool(_)) {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "unsupported operand types for divmod(): '{}' and '{}'",
                            x.value.type_name(),
                            y.value.type_name()
                        ),
                    )
                    .at(v.span));
                }
            }
            let span = args.span;
            let q = it
                .binary(BinOp::FloorDiv, &x.value, &y.value, span, x.span, y.span)
                .map_err(super::flow_to_diag)?;
            let r = it
                .binary(BinOp::Mod, &x.value, &y.value, span, x.span, y.span)
                .map_err(super::flow_to_diag)?;
            Ok(Value::tuple(vec![q, r]))
        }),
    );
    it.set_builtin(
        "set",
        Value::native("set", "set(iterable=())", |it, args| {
            let a = args.bind("set", &[], &["iterable"])?;
            let items = match a.into_iter().flatten().next() {
                Some(x) => it.iterate(&x.value, x.span)?,
                None => Vec::new(),
            };
            SetObj::build(it, items).map_err(|d| d.or_at(args.span))
        }),
    );
    it.set_builtin(
        "open",
        Value::native("open", "open(path, mode='r', encoding=None)", |it, args| {
            let a = args.bind("open", &["path"], &["mode", "encoding"])?;
            let mut a = a.into_iter();
            let Some(Some(path)) = a.next() else {
                return Ok(Value::None);
            };
            let Value::Str(p) = &path.value else {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "open() expected a path string, got {}",
                        path.value.type_name()
                    ),
                )
                .at(path.span));
            };
            let mode = match a.next().flatten() {
                Some(m) => match &m.value {
                    Value::Str(s) => parse_mode(s).map_err(|d| d.at(m.span))?,
                    other => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("open() mode must be a string, not {}", other.type_name()),
                        )
                        .at(m.span))
                    }
                },
                None => parse_mode("r")?,
            };
            if let Some(enc) = a.next().flatten() {
                let ok = match &enc.value {
                    Value::None => true,
                    Value::Str(s) => {
                        matches!(s.to_ascii_lowercase().as_str(), "utf-8" | "utf8")
                    }
                    _ => false,
                };
                if !ok {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "open(): encoding {} is not supported; files are UTF-8",
                            enc.value.repr()
                        ),
                    )
                    .at(enc.span));
                }
            }
            TextFile::open(it, p, mode).map_err(|d| d.at(path.span))
        }),
    );
    it.set_builtin("time", Value::Module(Rc::new(time_module())));
}

fn time_module() -> Module {
    let m = Module::new("time", "clocks and sleeping");
    let start = Instant::now();
    m.set(
        "perf_counter",
        Value::native("perf_counter", "perf_counter()", move |_, args| {
            args.bind("time.perf_counter", &[], &[])?;
            Ok(Value::Float(start.elapsed().as_secs_f64()))
        }),
    );
    m.set(
        "time",
        Value::native("time", "time()", |_, args| {
            args.bind("time.time", &[], &[])?;
            let t = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            Ok(Value::Float(t))
        }),
    );
    m.set(
        "sleep",
        Value::native("sleep", "sleep(secs)", |it, args| {
            let s = arg1(&args, "time.sleep", "secs")?;
            let secs = match &s.value {
                Value::Int(i) => *i as f64,
                Value::Float(f) => *f,
                Value::Bool(b) => f64::from(u8::from(*b)),
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "time.sleep() expected a number of seconds, got {}",
                            other.type_name()
                        ),
                    )
                    .at(s.span))
                }
            };
            if secs.is_nan() {
                return Err(Diagnostic::new(
                    Code::E0500,
                    "time.sleep(): the number of seconds is nan",
                )
                .at(s.span));
            }
            if secs < 0.0 {
                return Err(Diagnostic::new(
                    Code::E0500,
                    "time.sleep(): the number of seconds must be non-negative",
                )
                .at(s.span));
            }
            if secs > MAX_SLEEP_S {
                return Err(Diagnostic::new(
                    Code::E0700,
                    format!(
                        "time.sleep({}): over the limit of {MAX_SLEEP_S} seconds (a day)",
                        super::format::float_repr(secs)
                    ),
                )
                .at(s.span));
            }
            let end = Instant::now() + Duration::from_secs_f64(secs);
            // in slices, so that an interrupt (Ctrl-C, Jupyter) stops it
            loop {
                if it.interrupt.load(Ordering::Relaxed) {
                    it.interrupt.store(false, Ordering::Relaxed);
                    return Err(super::interrupted().at(s.span));
                }
                let now = Instant::now();
                if now >= end {
                    break;
                }
                std::thread::sleep((end - now).min(Duration::from_millis(20)));
            }
            Ok(Value::None)
        }),
    );
    m
}
