//! Builtin functions (`print len range …`) and builtin types as constructors.
//! The methods of `str`, `list` and `tuple` are in `methods.rs`.

use super::args::CallArgs;
use super::ops::order;
use super::textfile::TextFile;
use super::value::{range_len, TypeKind, Value};
use super::Interp;
use crate::diag::{Code, Diagnostic};
use std::cmp::Ordering;

/// The Ellipsis constant, `...` (also named `Ellipsis`), as in Python: one object, used in
/// indexing (`x[..., 1]`) and as a placeholder.
pub struct EllipsisObj;

impl super::HostObject for EllipsisObj {
    fn type_name(&self) -> &'static str {
        "ellipsis"
    }
    fn repr(&self) -> String {
        "Ellipsis".to_string()
    }
}

pub(super) fn install(it: &mut Interp) {
    let ellipsis = Value::host(EllipsisObj);
    it.set_builtin("...", ellipsis.clone());
    it.set_builtin("Ellipsis", ellipsis);
    it.set_builtin("Exception", Value::host(super::exc::ExceptionType));
    super::pybuiltins::install(it);
    for t in [
        TypeKind::Int,
        TypeKind::Float,
        TypeKind::Str,
        TypeKind::Bool,
        TypeKind::List,
        TypeKind::Tuple,
        TypeKind::Dict,
        TypeKind::Type,
    ] {
        it.set_builtin(t.name(), Value::Type(t));
    }
    it.set_builtin("range", Value::Type(TypeKind::Range));
    install_print(it);
    install_introspection(it);
    install_numeric(it);
    install_iteration(it);
}

/// `print`, the one builtin that writes.
fn install_print(it: &mut Interp) {
    it.set_builtin(
        "print",
        Value::native(
            "print",
            "print(*args, sep=' ', end='\\n', file=None, flush=False)",
            |it, args| {
            let mut sep = " ".to_string();
            let mut end = "\n".to_string();
            let mut flush = false;
            let mut file = None;
            for (k, v, s) in &args.keywords {
                match (&**k, v) {
                    ("sep" | "end" | "file", Value::None) => {}
                    ("sep", Value::Str(x)) => sep = x.to_string(),
                    ("end", Value::Str(x)) => end = x.to_string(),
                    ("sep" | "end", other) => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("{k} must be None or a string, not {}", other.type_name()),
                        )
                        .at(*s))
                    }
                    // As in Python, any value: its truth decides.
                    ("flush", v) => flush = it.truthy(v, *s)?,
                    ("file", v @ Value::Host(_)) if v.downcast::<TextFile>().is_some() => {
                        file = Some((v.clone(), *s));
                    }
                    ("file", other) => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!(
                                "print() writes to the standard output or to a file from open(): file={} is not supported",
                                other.type_name()
                            ),
                        )
                        .at(*s)
                        .with_help("leave `file` out (or None), or pass a file: open(path, \"w\")"))
                    }
                    _ => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("'{k}' is an invalid keyword argument for print()"),
                        )
                        .at(*s)
                        .with_help("print accepts `sep`, `end` and `flush`"))
                    }
                }
            }
            let mut out = String::new();
            for (i, (v, span)) in args.positional.iter().enumerate() {
                if i > 0 {
                    out.push_str(&sep);
                }
                out.push_str(&it.text_of(v, true).map_err(|d| d.at(*span))?);
            }
            out.push_str(&end);
            if let Some((f, span)) = file {
                if let Some(f) = f.downcast::<TextFile>() {
                    f.write_str(&out).map_err(|d| d.or_at(span))?;
                    if flush {
                        f.flush().map_err(|d| d.or_at(span))?;
                    }
                }
                return Ok(Value::None);
            }
            it.write_out(&out);
            if flush {
                it.flush_out();
            }
            Ok(Value::None)
        }),
    );
}

/// `len repr isinstance`: what a value is and how it reads.
fn install_introspection(it: &mut Interp) {
    it.set_builtin(
        "len",
        Value::native("len", "len(x)", |_, args| {
            let a = args.bind("len", &["obj"], &[])?;
            let Some(x) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            let n = match &x.value {
                Value::Str(s) => s.chars().count(),
                Value::List(l) => l.borrow().len(),
                Value::Tuple(t) => t.len(),
                Value::Dict(d) => d.borrow().len(),
                Value::Range(a, b, s) => range_len(*a, *b, *s) as usize,
                Value::Host(h) => match h.len() {
                    Some(r) => r.map_err(|d| d.or_at(x.span))?,
                    None => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("object of type '{}' has no len()", x.value.type_name()),
                        )
                        .at(x.span))
                    }
                },
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("object of type '{}' has no len()", other.type_name()),
                    )
                    .at(x.span))
                }
            };
            Ok(Value::Int(n as i64))
        }),
    );
    it.set_builtin(
        "repr",
        Value::native("repr", "repr(x)", |it, args| {
            let a = one(&args, "repr")?;
            Ok(Value::Str(it.text_of(&a, false)?.into()))
        }),
    );
    it.set_builtin(
        "isinstance",
        Value::native("isinstance", "isinstance(x, type_or_tuple)", |_, args| {
            let a = args.bind("isinstance", &["obj", "classinfo"], &[])?;
            let mut a = a.into_iter().flatten();
            let (Some(x), Some(t)) = (a.next(), a.next()) else {
                return Ok(Value::None);
            };
            let types: Vec<Value> = match &t.value {
                Value::Tuple(ts) => ts.as_ref().clone(),
                other => vec![other.clone()],
            };
            let mut result = false;
            for ty in types {
                match ty {
                    Value::Type(k) => {
                        result |= type_of(&x.value) == k
                            || (k == TypeKind::Int && matches!(x.value, Value::Bool(_)));
                    }
                    // `Exception` and `set` are not `Value::Type`s but are classes to Python
                    Value::Host(_) if ty.downcast::<super::exc::ExceptionType>().is_some() => {
                        result |= x.value.downcast::<super::exc::ErrorValue>().is_some();
                    }
                    Value::Native(n) if &*n.name == "set" => {
                        result |= x.value.downcast::<super::pyset::SetObj>().is_some();
                    }
                    other => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!(
                                "isinstance() arg 2 must be a type or tuple of types, not {}",
                                other.type_name()
                            ),
                        )
                        .at(t.span))
                    }
                }
            }
            Ok(Value::Bool(result))
        }),
    );
}

/// `abs min max sum round`.
fn install_numeric(it: &mut Interp) {
    it.set_builtin(
        "abs",
        Value::native("abs", "abs(x)", |it, args| {
            let a = args.bind("abs", &["x"], &[])?;
            let Some(x) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            match &x.value {
                Value::Int(i) => i.checked_abs().map(Value::Int).ok_or_else(|| {
                    Diagnostic::new(Code::E0500, "integer overflow in abs()").at(x.span)
                }),
                Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
                Value::Float(f) => Ok(Value::Float(f.abs())),
                Value::Host(_) => {
                    // Host objects (tensors) provide `abs` through their module; try a method.
                    let f = it
                        .get_attr(&x.value, "abs", x.span)
                        .map_err(super::flow_to_diag)?;
                    it.call(&f, CallArgs::new(args.span))
                }
                other => Err(Diagnostic::new(
                    Code::E0101,
                    format!("bad operand type for abs(): '{}'", other.type_name()),
                )
                .at(x.span)),
            }
        }),
    );
    it.set_builtin(
        "min",
        Value::native("min", "min(iterable) or min(a, b, ...)", |it, args| {
            extreme(it, args, "min", Ordering::Less)
        }),
    );
    it.set_builtin(
        "max",
        Value::native("max", "max(iterable) or max(a, b, ...)", |it, args| {
            extreme(it, args, "max", Ordering::Greater)
        }),
    );
    it.set_builtin(
        "sum",
        Value::native("sum", "sum(iterable, start=0)", |it, args| {
            let a = args.bind("sum", &["iterable"], &["start"])?;
            let mut a = a.into_iter();
            let Some(Some(xs)) = a.next() else {
                return Ok(Value::None);
            };
            let mut acc = match a.next().flatten() {
                Some(s) => s.value,
                None => Value::Int(0),
            };
            for x in it.iterate(&xs.value, xs.span)? {
                acc = it
                    .binary(
                        crate::ast::BinOp::Add,
                        &acc,
                        &x,
                        args.span,
                        args.span,
                        xs.span,
                    )
                    .map_err(super::flow_to_diag)?;
            }
            Ok(acc)
        }),
    );
    it.set_builtin(
        "round",
        Value::native("round", "round(x, ndigits=None)", |_, args| {
            let a = args.bind("round", &["number"], &["ndigits"])?;
            let mut a = a.into_iter();
            let Some(Some(x)) = a.next() else {
                return Ok(Value::None);
            };
            let nd = match a.next().flatten() {
                Some(n) if !matches!(n.value, Value::None) => {
                    Some(int_arg(&n.value, "round").map_err(|d| d.at(n.span))?)
                }
                _ => None,
            };
            match (&x.value, nd) {
                (Value::Int(i), Some(n)) if n < 0 => match round_int(*i, n) {
                    Some(r) => Ok(Value::Int(r)),
                    None => Err(Diagnostic::new(
                        Code::E0500,
                        format!("round({i}, {n}) does not fit in a 64-bit int"),
                    )
                    .at(x.span)),
                },
                (Value::Int(i), _) => Ok(Value::Int(*i)),
                (Value::Bool(b), _) => Ok(Value::Int(i64::from(*b))),
                (Value::Float(f), None) => {
                    if !f.is_finite() {
                        return Err(Diagnostic::new(
                            Code::E0500,
                            format!(
                                "cannot convert float {} to integer",
                                super::format::float_repr(*f)
                            ),
                        )
                        .at(x.span));
                    }
                    let r = f.round_ties_even();
                    if !(-(2f64.powi(63))..2f64.powi(63)).contains(&r) {
                        return Err(Diagnostic::new(
                            Code::E0500,
                            format!(
                                "round({}) does not fit in a 64-bit int",
                                super::format::float_repr(*f)
                            ),
                        )
                        .at(x.span)
                        .with_help("pass `ndigits` (`round(x, 0)`) to keep a float"));
                    }
                    Ok(Value::Int(r as i64))
                }
                (Value::Float(f), Some(n)) => {
                    // Round through the decimal text, as Python does (correctly rounded).
                    let n = n.clamp(-300, 300);
                    if n >= 0 {
                        let s = format!("{:.*}", n as usize, f);
                        Ok(Value::Float(s.parse().unwrap_or(*f)))
                    } else {
                        let p = 10f64.powi((-n) as i32);
                        Ok(Value::Float((f / p).round_ties_even() * p))
                    }
                }
                (other, _) => Err(Diagnostic::new(
                    Code::E0101,
                    format!("type {} doesn't define __round__", other.type_name()),
                )
                .at(x.span)),
            }
        }),
    );
}

/// `sorted reversed enumerate zip any all`: builtins over an iterable.
fn install_iteration(it: &mut Interp) {
    it.set_builtin(
        "sorted",
        Value::native("sorted", "sorted(iterable, reverse=False)", |it, args| {
            let a = args.bind("sorted", &["iterable"], &["reverse"])?;
            let mut a = a.into_iter();
            let Some(Some(xs)) = a.next() else {
                return Ok(Value::None);
            };
            let reverse = match a.next().flatten() {
                Some(r) => r.value.truthy()?,
                None => false,
            };
            let mut items = it.iterate(&xs.value, xs.span)?;
            sort_values(&mut items, reverse).map_err(|d| d.at(xs.span))?;
            Ok(Value::list(items))
        }),
    );
    it.set_builtin(
        "reversed",
        Value::native("reversed", "reversed(seq)", |it, args| {
            let a = args.bind("reversed", &["seq"], &[])?;
            let Some(xs) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            let mut items = it.iterate(&xs.value, xs.span)?;
            items.reverse();
            Ok(Value::list(items))
        }),
    );
    it.set_builtin(
        "enumerate",
        Value::native("enumerate", "enumerate(iterable, start=0)", |it, args| {
            let a = args.bind("enumerate", &["iterable"], &["start"])?;
            let mut a = a.into_iter();
            let Some(Some(xs)) = a.next() else {
                return Ok(Value::None);
            };
            let start = match a.next().flatten() {
                Some(s) => int_arg(&s.value, "enumerate").map_err(|d| d.at(s.span))?,
                None => 0,
            };
            let items = it.iterate(&xs.value, xs.span)?;
            it.check_host_size(items.len(), super::tuple_item_bytes(2), || {
                format!("enumerating {} items", items.len())
            })
            .map_err(|d| d.at(xs.span))?;
            Ok(Value::list(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| Value::tuple(vec![Value::Int(start + i as i64), x]))
                    .collect(),
            ))
        }),
    );
    it.set_builtin(
        "zip",
        Value::native("zip", "zip(*iterables)", |it, args| {
            let mut cols = Vec::new();
            for (v, s) in &args.positional {
                cols.push(it.iterate(v, *s)?);
            }
            let n = cols.iter().map(|c| c.len()).min().unwrap_or(0);
            it.check_host_size(n, super::tuple_item_bytes(cols.len()), || {
                format!("zipping {} iterables of {n} items", cols.len())
            })?;
            Ok(Value::list(
                (0..n)
                    .map(|i| Value::tuple(cols.iter().filter_map(|c| c.get(i).cloned()).collect()))
                    .collect(),
            ))
        }),
    );
    it.set_builtin(
        "any",
        Value::native("any", "any(iterable)", |it, args| {
            let x = one_arg(&args, "any")?;
            for v in it.iterate(&x.value, x.span)? {
                if v.truthy()? {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }),
    );
    it.set_builtin(
        "all",
        Value::native("all", "all(iterable)", |it, args| {
            let x = one_arg(&args, "all")?;
            for v in it.iterate(&x.value, x.span)? {
                if !v.truthy()? {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        }),
    );
}

/// `round(i, n)` of an int for `n < 0`: to a multiple of `10**-n`, ties to even; `None` when
/// that does not fit in 64 bits.
fn round_int(i: i64, n: i64) -> Option<i64> {
    if n < -19 {
        return Some(0);
    }
    let p = 10i128.pow((-n) as u32);
    let x = i128::from(i);
    let q = x.div_euclid(p);
    let r = x.rem_euclid(p);
    let q = match (2 * r).cmp(&p) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal if q % 2 != 0 => q + 1,
        _ => q,
    };
    i64::try_from(q * p).ok()
}

pub(super) fn one(args: &CallArgs, name: &str) -> Result<Value, Diagnostic> {
    Ok(one_arg(args, name)?.value)
}

pub(super) fn one_arg(args: &CallArgs, name: &str) -> Result<super::Arg, Diagnostic> {
    let a = args.bind(name, &["x"], &[])?;
    a.into_iter()
        .flatten()
        .next()
        .ok_or_else(|| Diagnostic::new(Code::E0101, format!("{name}() missing an argument")))
}

pub(super) fn int_arg(v: &Value, fname: &str) -> Result<i64, Diagnostic> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(i64::from(*b)),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("{fname}() expected an int, got {}", other.type_name()),
        )),
    }
}

fn extreme(
    it: &mut Interp,
    args: CallArgs,
    name: &str,
    want: Ordering,
) -> Result<Value, Diagnostic> {
    for (k, _, s) in &args.keywords {
        if &**k != "default" {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("{name}() got an unexpected keyword argument '{k}'"),
            )
            .at(*s));
        }
    }
    let items = match args.positional.len() {
        0 => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("{name}() expected at least 1 argument, got 0"),
            ))
        }
        1 => {
            let (v, s) = &args.positional[0];
            it.iterate(v, *s)?
        }
        _ => args.positional.iter().map(|(v, _)| v.clone()).collect(),
    };
    let mut best: Option<Value> = None;
    for x in items {
        best = Some(match best {
            None => x,
            Some(b) => match order(&x, &b) {
                Some(o) if o == want => x,
                Some(_) => b,
                None => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "'{}' not supported between instances of '{}' and '{}'",
                            if want == Ordering::Less { "<" } else { ">" },
                            x.type_name(),
                            b.type_name()
                        ),
                    ))
                }
            },
        });
    }
    match best {
        Some(b) => Ok(b),
        None => match args.keywords.first() {
            Some((_, d, _)) => Ok(d.clone()),
            None => Err(Diagnostic::new(
                Code::E0500,
                format!("{name}() arg is an empty sequence"),
            )),
        },
    }
}

pub(super) fn sort_values(items: &mut [Value], reverse: bool) -> Result<(), Diagnostic> {
    let mut err = None;
    items.sort_by(|a, b| match order(a, b) {
        Some(o) => o,
        None => {
            if err.is_none()
                && !(matches!(a, Value::Float(x) if x.is_nan())
                    || matches!(b, Value::Float(x) if x.is_nan()))
            {
                err = Some(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "'<' not supported between instances of '{}' and '{}'",
                        a.type_name(),
                        b.type_name()
                    ),
                ));
            }
            Ordering::Equal
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    if reverse {
        items.reverse();
    }
    Ok(())
}

/// The builtin type of a value, for `type()` and `isinstance()`.
fn type_of(v: &Value) -> TypeKind {
    match v {
        Value::None => TypeKind::NoneType,
        Value::Bool(_) => TypeKind::Bool,
        Value::Int(_) => TypeKind::Int,
        Value::Float(_) => TypeKind::Float,
        Value::Str(_) => TypeKind::Str,
        Value::List(_) => TypeKind::List,
        Value::Tuple(_) => TypeKind::Tuple,
        Value::Dict(_) => TypeKind::Dict,
        Value::Range(..) => TypeKind::Range,
        Value::Function(_) | Value::Native(_) => TypeKind::Function,
        Value::Module(_) => TypeKind::Module,
        Value::Type(_) => TypeKind::Type,
        Value::Slice(_) | Value::Host(_) => TypeKind::Host(v.type_name()),
    }
}

/// `int(x)`, `float(x)`, `str(x)`, … : a builtin type called as a function.
pub(super) fn construct(it: &mut Interp, t: TypeKind, args: CallArgs) -> Result<Value, Diagnostic> {
    let name = t.name();
    if t == TypeKind::Dict {
        return dict_of(it, args);
    }
    if t == TypeKind::Range {
        let mut ints = Vec::new();
        for (v, s) in &args.positional {
            ints.push(match v {
                Value::Int(i) => *i,
                Value::Bool(b) => i64::from(*b),
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "'{}' object cannot be interpreted as an integer",
                            other.type_name()
                        ),
                    )
                    .at(*s))
                }
            });
        }
        if !args.keywords.is_empty() {
            return Err(Diagnostic::new(
                Code::E0101,
                "range() takes no keyword arguments",
            ));
        }
        return match ints.as_slice() {
            [n] => Ok(Value::Range(0, *n, 1)),
            [a, b] => Ok(Value::Range(*a, *b, 1)),
            [a, b, s] => {
                if *s == 0 {
                    Err(Diagnostic::new(
                        Code::E0500,
                        "range() arg 3 must not be zero",
                    ))
                } else {
                    Ok(Value::Range(*a, *b, *s))
                }
            }
            _ => Err(Diagnostic::new(
                Code::E0101,
                format!("range expected 1 to 3 arguments, got {}", ints.len()),
            )),
        };
    }
    let a = args.bind(name, &[], &["x"])?;
    let x = a.into_iter().flatten().next();
    let Some(x) = x else {
        return Ok(match t {
            TypeKind::Int => Value::Int(0),
            TypeKind::Float => Value::Float(0.0),
            TypeKind::Str => Value::str(""),
            TypeKind::Bool => Value::Bool(false),
            TypeKind::List => Value::list(Vec::new()),
            TypeKind::Tuple => Value::tuple(Vec::new()),
            _ => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{name}() takes exactly one argument"),
                ))
            }
        });
    };
    let span = x.span;
    let bad = |what: String| Diagnostic::new(Code::E0500, what).at(span);
    Ok(match t {
        TypeKind::Int => match &x.value {
            Value::Int(i) => Value::Int(*i),
            Value::Bool(b) => Value::Int(i64::from(*b)),
            Value::Float(f) => {
                if !f.is_finite() {
                    return Err(bad(format!(
                        "cannot convert float {} to integer",
                        super::format::float_repr(*f)
                    )));
                }
                let tr = f.trunc();
                if tr.abs() >= 9.223_372_036_854_776e18 {
                    return Err(bad(
                        "integer overflow: the float does not fit in 64 bits".into()
                    ));
                }
                Value::Int(tr as i64)
            }
            Value::Str(s) => {
                let clean: String = s.trim().replace('_', "");
                clean.parse::<i64>().map(Value::Int).map_err(|_| {
                    bad(format!(
                        "invalid literal for int() with base 10: {}",
                        super::format::str_repr(s)
                    ))
                })?
            }
            Value::Host(_) => host_scalar(it, &x.value, span, "item")?,
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "int() argument must be a string or a number, not '{}'",
                        other.type_name()
                    ),
                )
                .at(span))
            }
        },
        TypeKind::Float => match &x.value {
            Value::Int(i) => Value::Float(*i as f64),
            Value::Bool(b) => Value::Float(f64::from(u8::from(*b))),
            Value::Float(f) => Value::Float(*f),
            Value::Str(s) => {
                let t = s.trim().to_ascii_lowercase().replace('_', "");
                let v = match t.as_str() {
                    "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
                    "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
                    "nan" | "+nan" | "-nan" => Some(f64::NAN),
                    _ => t.parse::<f64>().ok(),
                };
                v.map(Value::Float).ok_or_else(|| {
                    bad(format!(
                        "could not convert string to float: {}",
                        super::format::str_repr(s)
                    ))
                })?
            }
            Value::Host(_) => {
                let v = host_scalar(it, &x.value, span, "item")?;
                match v {
                    Value::Int(i) => Value::Float(i as f64),
                    Value::Bool(b) => Value::Float(f64::from(u8::from(b))),
                    other => other,
                }
            }
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "float() argument must be a string or a number, not '{}'",
                        other.type_name()
                    ),
                )
                .at(span))
            }
        },
        TypeKind::Str => Value::Str(it.text_of(&x.value, true).map_err(|d| d.at(span))?.into()),
        TypeKind::Bool => Value::Bool(it.truthy(&x.value, span)?),
        TypeKind::List => Value::list(it.iterate(&x.value, span)?),
        TypeKind::Tuple => Value::tuple(it.iterate(&x.value, span)?),
        TypeKind::Type => Value::Type(type_of(&x.value)),
        TypeKind::Host(_)
        | TypeKind::NoneType
        | TypeKind::Range
        | TypeKind::Dict
        | TypeKind::Function
        | TypeKind::Module => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("cannot create '{name}' instances"),
            ))
        }
    })
}

/// `dict()`, `dict(mapping_or_pairs)`, `dict(a=1, b=2)`.
fn dict_of(it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
    let mut d = super::dict::Dict::new();
    let pairs = super::dict::update_pairs(it, "dict", &args)?;
    it.check_dict_len(pairs.len())?;
    for (k, v) in pairs {
        d.insert(k, v)?;
    }
    Ok(Value::Dict(std::rc::Rc::new(std::cell::RefCell::new(d))))
}

fn host_scalar(
    it: &mut Interp,
    v: &Value,
    span: crate::span::Span,
    method: &str,
) -> Result<Value, Diagnostic> {
    let f = it.get_attr(v, method, span).map_err(super::flow_to_diag)?;
    it.call(&f, CallArgs::new(span))
}
