//! Builtin functions (`print len range …`), builtin types as constructors, and the methods of
//! `str` and `list`.

use super::args::CallArgs;
use super::ops::{order, values_equal};
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
    for t in [
        TypeKind::Int,
        TypeKind::Float,
        TypeKind::Str,
        TypeKind::Bool,
        TypeKind::List,
        TypeKind::Tuple,
        TypeKind::Type,
    ] {
        it.set_builtin(t.name(), Value::Type(t));
    }
    it.set_builtin("range", Value::Type(TypeKind::Range));
    it.set_builtin(
        "print",
        Value::native("print", "print(*args, sep=' ', end='\\n')", |it, args| {
            let mut sep = " ".to_string();
            let mut end = "\n".to_string();
            for (k, v, s) in &args.keywords {
                let text = match v {
                    Value::Str(x) => x.to_string(),
                    Value::None => continue,
                    other => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("{k} must be None or a string, not {}", other.type_name()),
                        )
                        .at(*s))
                    }
                };
                match &**k {
                    "sep" => sep = text,
                    "end" => end = text,
                    "flush" | "file" => {}
                    _ => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("print() got an unexpected keyword argument '{k}'"),
                        )
                        .at(*s)
                        .with_help("print accepts `sep` and `end`"))
                    }
                }
            }
            let mut out = String::new();
            for (i, (v, _)) in args.positional.iter().enumerate() {
                if i > 0 {
                    out.push_str(&sep);
                }
                out.push_str(&v.to_str());
            }
            out.push_str(&end);
            it.write_out(&out);
            Ok(Value::None)
        }),
    );
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
        Value::native("repr", "repr(x)", |_, args| {
            let a = one(&args, "repr")?;
            Ok(Value::Str(a.repr().into()))
        }),
    );
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
                        result |= type_of(&x.value) == Some(k)
                            || (k == TypeKind::Int && matches!(x.value, Value::Bool(_)));
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
                    Ok(Value::Int(f.round_ties_even() as i64))
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

fn one(args: &CallArgs, name: &str) -> Result<Value, Diagnostic> {
    Ok(one_arg(args, name)?.value)
}

fn one_arg(args: &CallArgs, name: &str) -> Result<super::Arg, Diagnostic> {
    let a = args.bind(name, &["x"], &[])?;
    a.into_iter()
        .flatten()
        .next()
        .ok_or_else(|| Diagnostic::new(Code::E0101, format!("{name}() missing an argument")))
}

fn int_arg(v: &Value, fname: &str) -> Result<i64, Diagnostic> {
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

fn sort_values(items: &mut [Value], reverse: bool) -> Result<(), Diagnostic> {
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
fn type_of(v: &Value) -> Option<TypeKind> {
    Some(match v {
        Value::None => TypeKind::NoneType,
        Value::Bool(_) => TypeKind::Bool,
        Value::Int(_) => TypeKind::Int,
        Value::Float(_) => TypeKind::Float,
        Value::Str(_) => TypeKind::Str,
        Value::List(_) => TypeKind::List,
        Value::Tuple(_) => TypeKind::Tuple,
        Value::Range(..) => TypeKind::Range,
        Value::Function(_) | Value::Native(_) => TypeKind::Function,
        Value::Module(_) => TypeKind::Module,
        Value::Type(_) => TypeKind::Type,
        Value::Slice(_) | Value::Host(_) => return None,
    })
}

/// `int(x)`, `float(x)`, `str(x)`, … : a builtin type called as a function.
pub(super) fn construct(it: &mut Interp, t: TypeKind, args: CallArgs) -> Result<Value, Diagnostic> {
    let name = t.name();
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
        TypeKind::Str => Value::Str(x.value.to_str().into()),
        TypeKind::Bool => Value::Bool(it.truthy(&x.value, span)?),
        TypeKind::List => Value::list(it.iterate(&x.value, span)?),
        TypeKind::Tuple => Value::tuple(it.iterate(&x.value, span)?),
        TypeKind::Type => match type_of(&x.value) {
            Some(k) => Value::Type(k),
            None => Value::Str(x.value.type_name().into()),
        },
        TypeKind::NoneType | TypeKind::Range | TypeKind::Function | TypeKind::Module => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("cannot create '{name}' instances"),
            ))
        }
    })
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

/// Names of the methods of a builtin value, for suggestions and completion.
pub(super) fn method_names(v: &Value) -> &'static [&'static str] {
    match v {
        Value::List(_) => &[
            "append", "count", "extend", "index", "insert", "pop", "reverse", "sort",
        ],
        Value::Str(_) => &[
            "count",
            "endswith",
            "find",
            "format",
            "join",
            "lower",
            "lstrip",
            "replace",
            "rstrip",
            "split",
            "splitlines",
            "startswith",
            "strip",
            "upper",
        ],
        Value::Tuple(_) => &["count", "index"],
        _ => &[],
    }
}

/// `v.name` for builtin values: a bound method, or `None`.
pub(super) fn method(v: &Value, name: &str) -> Option<Value> {
    if !method_names(v).contains(&name) {
        return None;
    }
    let recv = v.clone();
    let mname = name.to_string();
    let doc = format!("{}.{}", v.type_name(), name);
    Some(Value::native(name, &doc, move |it, args| {
        call_method(it, &recv, &mname, args)
    }))
}

fn str_arg(a: &Option<super::Arg>, fname: &str) -> Result<Option<String>, Diagnostic> {
    match a {
        None => Ok(None),
        Some(x) => match &x.value {
            Value::Str(s) => Ok(Some(s.to_string())),
            Value::None => Ok(None),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!("{fname}() argument must be str, not {}", other.type_name()),
            )
            .at(x.span)),
        },
    }
}

fn call_method(
    it: &mut Interp,
    recv: &Value,
    name: &str,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    match recv {
        Value::List(l) => match name {
            "append" => {
                let a = args.bind("append", &["object"], &[])?;
                if let Some(x) = a.into_iter().flatten().next() {
                    l.borrow_mut().push(x.value);
                }
                Ok(Value::None)
            }
            "extend" => {
                let a = args.bind("extend", &["iterable"], &[])?;
                if let Some(x) = a.into_iter().flatten().next() {
                    let items = it.iterate(&x.value, x.span)?;
                    l.borrow_mut().extend(items);
                }
                Ok(Value::None)
            }
            "insert" => {
                let a = args.bind("insert", &["index", "object"], &[])?;
                let mut a = a.into_iter().flatten();
                let (Some(i), Some(x)) = (a.next(), a.next()) else {
                    return Ok(Value::None);
                };
                let i = int_arg(&i.value, "insert").map_err(|d| d.at(i.span))?;
                let mut items = l.borrow_mut();
                let n = items.len() as i64;
                let pos = if i < 0 { (i + n).max(0) } else { i.min(n) } as usize;
                items.insert(pos, x.value);
                Ok(Value::None)
            }
            "pop" => {
                let a = args.bind("pop", &[], &["index"])?;
                let mut items = l.borrow_mut();
                let n = items.len() as i64;
                if n == 0 {
                    return Err(Diagnostic::new(Code::E0500, "pop from empty list"));
                }
                let i = match a.into_iter().flatten().next() {
                    Some(x) => int_arg(&x.value, "pop").map_err(|d| d.at(x.span))?,
                    None => -1,
                };
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(Diagnostic::new(
                        Code::E0500,
                        format!("pop index out of range: index {i} for length {n}"),
                    ));
                }
                Ok(items.remove(j as usize))
            }
            "index" => {
                let a = args.bind("index", &["value"], &[])?;
                let Some(x) = a.into_iter().flatten().next() else {
                    return Ok(Value::None);
                };
                let items = l.borrow();
                match items.iter().position(|y| values_equal(y, &x.value)) {
                    Some(i) => Ok(Value::Int(i as i64)),
                    None => Err(Diagnostic::new(
                        Code::E0500,
                        format!("{} is not in list", x.value.repr()),
                    )
                    .at(x.span)),
                }
            }
            "count" => {
                let a = args.bind("count", &["value"], &[])?;
                let Some(x) = a.into_iter().flatten().next() else {
                    return Ok(Value::None);
                };
                let n = l
                    .borrow()
                    .iter()
                    .filter(|y| values_equal(y, &x.value))
                    .count();
                Ok(Value::Int(n as i64))
            }
            "reverse" => {
                args.bind("reverse", &[], &[])?;
                l.borrow_mut().reverse();
                Ok(Value::None)
            }
            "sort" => {
                let a = args.bind("sort", &[], &["reverse"])?;
                let reverse = match a.into_iter().flatten().next() {
                    Some(r) => r.value.truthy()?,
                    None => false,
                };
                let mut items = l.borrow().clone();
                sort_values(&mut items, reverse)?;
                *l.borrow_mut() = items;
                Ok(Value::None)
            }
            _ => Ok(Value::None),
        },
        Value::Tuple(t) => match name {
            "count" => {
                let x = one(&args, "count")?;
                Ok(Value::Int(
                    t.iter().filter(|y| values_equal(y, &x)).count() as i64
                ))
            }
            _ => {
                let x = one(&args, "index")?;
                match t.iter().position(|y| values_equal(y, &x)) {
                    Some(i) => Ok(Value::Int(i as i64)),
                    None => Err(Diagnostic::new(
                        Code::E0500,
                        format!("{} is not in tuple", x.repr()),
                    )),
                }
            }
        },
        Value::Str(s) => {
            let s: &str = s;
            match name {
                "upper" => {
                    args.bind("upper", &[], &[])?;
                    Ok(Value::str(&s.to_uppercase()))
                }
                "lower" => {
                    args.bind("lower", &[], &[])?;
                    Ok(Value::str(&s.to_lowercase()))
                }
                "strip" => {
                    let a = args.bind("strip", &[], &["chars"])?;
                    Ok(match str_arg(&a[0], "strip")? {
                        Some(cs) => Value::str(s.trim_matches(|c| cs.contains(c))),
                        None => Value::str(s.trim()),
                    })
                }
                "lstrip" => {
                    let a = args.bind("lstrip", &[], &["chars"])?;
                    Ok(match str_arg(&a[0], "lstrip")? {
                        Some(cs) => Value::str(s.trim_start_matches(|c| cs.contains(c))),
                        None => Value::str(s.trim_start()),
                    })
                }
                "rstrip" => {
                    let a = args.bind("rstrip", &[], &["chars"])?;
                    Ok(match str_arg(&a[0], "rstrip")? {
                        Some(cs) => Value::str(s.trim_end_matches(|c| cs.contains(c))),
                        None => Value::str(s.trim_end()),
                    })
                }
                "splitlines" => {
                    args.bind("splitlines", &[], &[])?;
                    // Python's line boundaries: \n, \r\n, \r (and the rarer separators)
                    let mut out = Vec::new();
                    let mut start = 0;
                    let mut it = s.char_indices().peekable();
                    while let Some((i, c)) = it.next() {
                        let boundary = matches!(
                            c,
                            '\n' | '\r'
                                | '\x0b'
                                | '\x0c'
                                | '\x1c'
                                | '\x1d'
                                | '\x1e'
                                | '\u{85}'
                                | '\u{2028}'
                                | '\u{2029}'
                        );
                        if boundary {
                            out.push(Value::str(&s[start..i]));
                            let mut end = i + c.len_utf8();
                            if c == '\r' {
                                if let Some((j, '\n')) = it.peek().copied() {
                                    it.next();
                                    end = j + 1;
                                }
                            }
                            start = end;
                        }
                    }
                    if start < s.len() {
                        out.push(Value::str(&s[start..]));
                    }
                    Ok(Value::list(out))
                }
                "count" => {
                    let a = args.bind("count", &["sub"], &[])?;
                    let sub = str_arg(&a[0], "count")?.unwrap_or_default();
                    // Python counts non-overlapping occurrences; an empty string occurs
                    // between every two characters and at both ends
                    let n = if sub.is_empty() {
                        s.chars().count() + 1
                    } else {
                        s.matches(sub.as_str()).count()
                    };
                    Ok(Value::Int(n as i64))
                }
                "split" => {
                    let a = args.bind("split", &[], &["sep", "maxsplit"])?;
                    let sep = str_arg(&a[0], "split")?;
                    let maxsplit = match &a[1] {
                        Some(m) => int_arg(&m.value, "split").map_err(|d| d.at(m.span))?,
                        None => -1,
                    };
                    let parts: Vec<Value> = match sep {
                        Some(sep) => {
                            if sep.is_empty() {
                                return Err(Diagnostic::new(Code::E0500, "empty separator"));
                            }
                            if maxsplit >= 0 {
                                s.splitn(maxsplit as usize + 1, sep.as_str())
                                    .map(Value::str)
                                    .collect()
                            } else {
                                s.split(sep.as_str()).map(Value::str).collect()
                            }
                        }
                        None => {
                            if maxsplit >= 0 {
                                let mut out = Vec::new();
                                let mut rest = s.trim_start();
                                while !rest.is_empty() && (out.len() as i64) < maxsplit {
                                    match rest.find(char::is_whitespace) {
                                        Some(k) => {
                                            out.push(Value::str(&rest[..k]));
                                            rest = rest[k..].trim_start();
                                        }
                                        None => {
                                            out.push(Value::str(rest));
                                            rest = "";
                                        }
                                    }
                                }
                                if !rest.is_empty() {
                                    out.push(Value::str(rest));
                                }
                                out
                            } else {
                                s.split_whitespace().map(Value::str).collect()
                            }
                        }
                    };
                    Ok(Value::list(parts))
                }
                "join" => {
                    let a = args.bind("join", &["iterable"], &[])?;
                    let Some(x) = a.into_iter().flatten().next() else {
                        return Ok(Value::None);
                    };
                    let items = it.iterate(&x.value, x.span)?;
                    let mut out = Vec::new();
                    for (i, v) in items.iter().enumerate() {
                        match v {
                            Value::Str(t) => out.push(t.to_string()),
                            other => {
                                return Err(Diagnostic::new(
                                    Code::E0101,
                                    format!(
                                        "sequence item {i}: expected str instance, {} found",
                                        other.type_name()
                                    ),
                                )
                                .at(x.span))
                            }
                        }
                    }
                    Ok(Value::str(&out.join(s)))
                }
                "replace" => {
                    let a = args.bind("replace", &["old", "new"], &["count"])?;
                    let old = str_arg(&a[0], "replace")?.unwrap_or_default();
                    let new = str_arg(&a[1], "replace")?.unwrap_or_default();
                    let count = match &a[2] {
                        Some(c) => int_arg(&c.value, "replace").map_err(|d| d.at(c.span))?,
                        None => -1,
                    };
                    Ok(Value::str(&if count < 0 {
                        s.replace(&old, &new)
                    } else {
                        s.replacen(&old, &new, count as usize)
                    }))
                }
                "startswith" | "endswith" => {
                    let a = args.bind(name, &["prefix"], &[])?;
                    let p = str_arg(&a[0], name)?.unwrap_or_default();
                    Ok(Value::Bool(if name == "startswith" {
                        s.starts_with(&p)
                    } else {
                        s.ends_with(&p)
                    }))
                }
                "find" => {
                    let a = args.bind("find", &["sub"], &["start", "end"])?;
                    let p = str_arg(&a[0], "find")?.unwrap_or_default();
                    let chars: Vec<char> = s.chars().collect();
                    let n = chars.len() as i64;
                    let bound =
                        |x: &Option<super::Arg>, default: i64| -> Result<usize, Diagnostic> {
                            let v = match x {
                                Some(x) if !matches!(x.value, Value::None) => {
                                    int_arg(&x.value, "find").map_err(|d| d.at(x.span))?
                                }
                                _ => default,
                            };
                            let v = if v < 0 { v + n } else { v };
                            Ok(v.clamp(0, n) as usize)
                        };
                    let (lo, hi) = (bound(&a[1], 0)?, bound(&a[2], n)?);
                    if lo > hi {
                        return Ok(Value::Int(-1));
                    }
                    let hay: String = chars[lo..hi].iter().collect();
                    Ok(Value::Int(match hay.find(&p) {
                        Some(b) => (lo + hay[..b].chars().count()) as i64,
                        None => -1,
                    }))
                }
                "format" => str_format(s, &args),
                _ => Ok(Value::None),
            }
        }
        _ => Ok(Value::None),
    }
}

/// `"{} and {name:>4}".format(a, name=b)`.
fn str_format(fmt: &str, args: &CallArgs) -> Result<Value, Diagnostic> {
    let mut out = String::new();
    let mut auto = 0usize;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == '}' {
                        closed = true;
                        break;
                    }
                    field.push(d);
                }
                if !closed {
                    return Err(Diagnostic::new(
                        Code::E0500,
                        "single '{' encountered in format string",
                    ));
                }
                let (name, spec) = match field.split_once(':') {
                    Some((n, s)) => (n.to_string(), s.to_string()),
                    None => (field.clone(), String::new()),
                };
                let (name, conv) = match name.split_once('!') {
                    Some((n, c)) => (n.to_string(), c.chars().next()),
                    None => (name, None),
                };
                let v = if name.is_empty() {
                    let v = args.positional.get(auto).map(|p| p.0.clone());
                    auto += 1;
                    v
                } else if let Ok(i) = name.parse::<usize>() {
                    args.positional.get(i).map(|p| p.0.clone())
                } else {
                    args.keywords
                        .iter()
                        .find(|(k, _, _)| **k == *name)
                        .map(|(_, v, _)| v.clone())
                };
                let Some(v) = v else {
                    return Err(Diagnostic::new(
                        Code::E0500,
                        format!("format(): no argument for field '{{{field}}}'"),
                    ));
                };
                let v = match conv {
                    Some('r') => Value::Str(v.repr().into()),
                    Some('s') => Value::Str(v.to_str().into()),
                    _ => v,
                };
                out.push_str(&super::format::format_value(&v, &spec)?);
            }
            '}' => {
                return Err(Diagnostic::new(
                    Code::E0500,
                    "single '}' encountered in format string",
                ))
            }
            c => out.push(c),
        }
    }
    Ok(Value::str(&out))
}
