//! The methods of builtin values: `str`, `list` and `tuple`.

use super::args::CallArgs;
use super::builtins::{int_arg, one, sort_values};
use super::ops::values_equal;
use super::value::Value;
use super::{Interp, ITEM_BYTES};
use crate::diag::{Code, Diagnostic};

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
        Value::Dict(_) => &["get", "items", "keys", "pop", "popitem", "update", "values"],
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

/// The methods of a dict: `get items keys values pop popitem update`. `items`, `keys` and `values`
/// give lists (Python's views print differently, iterate the same).
fn dict_method(
    it: &mut Interp,
    d: &std::rc::Rc<std::cell::RefCell<super::dict::Dict>>,
    name: &str,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    match name {
        "keys" | "values" | "items" => {
            args.bind(name, &[], &[])?;
            let d = d.borrow();
            let each = if name == "items" {
                super::tuple_item_bytes(2)
            } else {
                super::ITEM_BYTES
            };
            it.check_host_size(d.len(), each, || {
                format!("the {name} of a dict of {} entries", d.len())
            })?;
            Ok(Value::list(match name {
                "keys" => d.keys(),
                "values" => d.values(),
                _ => d
                    .entries()
                    .map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()]))
                    .collect(),
            }))
        }
        "get" => {
            let a = args.bind("get", &["key"], &["default"])?;
            let [k, default] = <[Option<super::Arg>; 2]>::try_from(a).unwrap_or([None, None]);
            let Some(k) = k else { return Ok(Value::None) };
            let found = d.borrow().get(&k.value).map_err(|e| e.at(k.span))?;
            Ok(found.unwrap_or_else(|| default.map_or(Value::None, |x| x.value)))
        }
        "pop" => {
            let a = args.bind("pop", &["key"], &["default"])?;
            let [k, default] = <[Option<super::Arg>; 2]>::try_from(a).unwrap_or([None, None]);
            let Some(k) = k else { return Ok(Value::None) };
            let removed = d.borrow_mut().remove(&k.value).map_err(|e| e.at(k.span))?;
            match (removed, default) {
                (Some(v), _) => Ok(v),
                (None, Some(x)) => Ok(x.value),
                (None, None) => Err(Diagnostic::new(
                    Code::E0500,
                    format!("KeyError: {}", k.value.repr()),
                )
                .at(k.span)),
            }
        }
        "popitem" => {
            args.bind("popitem", &[], &[])?;
            let last = d.borrow_mut().pop_last();
            match last {
                Some((k, v)) => Ok(Value::tuple(vec![k, v])),
                None => Err(Diagnostic::new(
                    Code::E0500,
                    "KeyError: 'popitem(): dictionary is empty'",
                )),
            }
        }
        _ => {
            let pairs = super::dict::update_pairs(it, "update", &args)?;
            let n = d.borrow().len();
            it.check_dict_len(n.saturating_add(pairs.len()))?;
            let mut d = d.borrow_mut();
            for (k, v) in pairs {
                d.insert(k, v)?;
            }
            Ok(Value::None)
        }
    }
}

/// Python's line boundaries for `splitlines`.
fn is_line_boundary(c: char) -> bool {
    matches!(
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
    )
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
        Value::Dict(d) => dict_method(it, d, name, args),
        Value::List(l) => list_method(it, l, name, args),
        Value::Tuple(t) => tuple_method(t, name, &args),
        Value::Str(s) => str_method(it, s, name, args),
        _ => Ok(Value::None),
    }
}

/// The methods of a list: `append count extend index insert pop reverse sort`.
fn list_method(
    it: &mut Interp,
    l: &std::rc::Rc<std::cell::RefCell<Vec<Value>>>,
    name: &str,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    match name {
        "append" => {
            let a = args.bind("append", &["object"], &[])?;
            if let Some(x) = a.into_iter().flatten().next() {
                let n = l.borrow().len();
                it.check_list_len(n.saturating_add(1), "appending to a list")?;
                l.borrow_mut().push(x.value);
            }
            Ok(Value::None)
        }
        "extend" => {
            let a = args.bind("extend", &["iterable"], &[])?;
            if let Some(x) = a.into_iter().flatten().next() {
                let items = it.iterate(&x.value, x.span)?;
                let n = l.borrow().len();
                it.check_list_len(n.saturating_add(items.len()), "extending a list")
                    .map_err(|d| d.at(x.span))?;
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
            let n = l.borrow().len();
            it.check_list_len(n.saturating_add(1), "inserting into a list")?;
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
    }
}

/// The methods of a tuple: `count index`.
fn tuple_method(t: &[Value], name: &str, args: &CallArgs) -> Result<Value, Diagnostic> {
    match name {
        "count" => {
            let x = one(args, "count")?;
            Ok(Value::Int(
                t.iter().filter(|y| values_equal(y, &x)).count() as i64
            ))
        }
        _ => {
            let x = one(args, "index")?;
            match t.iter().position(|y| values_equal(y, &x)) {
                Some(i) => Ok(Value::Int(i as i64)),
                None => Err(Diagnostic::new(
                    Code::E0500,
                    format!("{} is not in tuple", x.repr()),
                )),
            }
        }
    }
}

/// The methods of a str; the longer ones are the `str_*` functions below.
fn str_method(it: &mut Interp, s: &str, name: &str, args: CallArgs) -> Result<Value, Diagnostic> {
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
        "splitlines" => str_splitlines(it, s, args),
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
        "split" => str_split(it, s, args),
        "join" => str_join(it, s, args),
        "replace" => str_replace(it, s, args),
        "startswith" | "endswith" => {
            let a = args.bind(name, &["prefix"], &[])?;
            let p = str_arg(&a[0], name)?.unwrap_or_default();
            Ok(Value::Bool(if name == "startswith" {
                s.starts_with(&p)
            } else {
                s.ends_with(&p)
            }))
        }
        "find" => str_find(s, args),
        "format" => {
            for (v, span) in &args.positional {
                it.check_text(v).map_err(|d| d.at(*span))?;
            }
            for (_, v, span) in &args.keywords {
                it.check_text(v).map_err(|d| d.at(*span))?;
            }
            str_format(s, &args, it.max_bytes)
        }
        _ => Ok(Value::None),
    }
}

/// `str.splitlines()`: the pieces between Python's line boundaries, `\r\n` counting as one.
fn str_splitlines(it: &mut Interp, s: &str, args: CallArgs) -> Result<Value, Diagnostic> {
    args.bind("splitlines", &[], &[])?;
    // Python's line boundaries: \n, \r\n, \r (and the rarer separators)
    let lines = s.chars().filter(|c| is_line_boundary(*c)).count() + 1;
    it.check_host_size(lines, ITEM_BYTES + 32, || {
        format!("splitting a string of {} bytes into {lines} lines", s.len())
    })?;
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if is_line_boundary(c) {
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

/// `str.split(sep=None, maxsplit=-1)`; the pieces are counted against the limit first.
fn str_split(it: &mut Interp, s: &str, args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("split", &[], &["sep", "maxsplit"])?;
    let sep = str_arg(&a[0], "split")?;
    let maxsplit = match &a[1] {
        Some(m) => int_arg(&m.value, "split").map_err(|d| d.at(m.span))?,
        None => -1,
    };
    // every piece is a new string: counted before any is made
    let pieces = match &sep {
        Some(sep) if !sep.is_empty() => s.matches(sep.as_str()).count() + 1,
        Some(_) => 0,
        None => s.split_whitespace().count(),
    };
    it.check_host_size(pieces, ITEM_BYTES + 32, || {
        format!(
            "splitting a string of {} bytes into {pieces} pieces",
            s.len()
        )
    })?;
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

/// `str.join(iterable)`: every item must be a str; the total length is checked first.
fn str_join(it: &mut Interp, s: &str, args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("join", &["iterable"], &[])?;
    let Some(x) = a.into_iter().flatten().next() else {
        return Ok(Value::None);
    };
    let items = it.iterate(&x.value, x.span)?;
    let mut total = s.len().saturating_mul(items.len().saturating_sub(1));
    for (i, v) in items.iter().enumerate() {
        match v {
            Value::Str(t) => total = total.saturating_add(t.len()),
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
    it.check_host_size(total, 1, || format!("joining {} strings", items.len()))
        .map_err(|d| d.at(x.span))?;
    let mut out = String::with_capacity(total);
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(s);
        }
        if let Value::Str(t) = v {
            out.push_str(t);
        }
    }
    Ok(Value::Str(out.into()))
}

/// `str.replace(old, new, count=-1)`; a growing result is checked against the limit first.
fn str_replace(it: &mut Interp, s: &str, args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("replace", &["old", "new"], &["count"])?;
    let old = str_arg(&a[0], "replace")?.unwrap_or_default();
    let new = str_arg(&a[1], "replace")?.unwrap_or_default();
    let count = match &a[2] {
        Some(c) => int_arg(&c.value, "replace").map_err(|d| d.at(c.span))?,
        None => -1,
    };
    let grows = new.len().saturating_sub(old.len());
    if grows > 0 {
        let hits = if old.is_empty() {
            s.chars().count() + 1
        } else {
            s.matches(old.as_str()).count()
        };
        let hits = if count < 0 {
            hits
        } else {
            hits.min(count as usize)
        };
        it.check_host_size(s.len() + hits.saturating_mul(grows), 1, || {
            format!(
                "replacing {hits} occurrences in a string of {} bytes",
                s.len()
            )
        })?;
    }
    Ok(Value::str(&if count < 0 {
        s.replace(&old, &new)
    } else {
        s.replacen(&old, &new, count as usize)
    }))
}

/// `str.find(sub, start=None, end=None)`: a character index, or -1.
fn str_find(s: &str, args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("find", &["sub"], &["start", "end"])?;
    let p = str_arg(&a[0], "find")?.unwrap_or_default();
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    let bound = |x: &Option<super::Arg>, default: i64| -> Result<usize, Diagnostic> {
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

/// `"{} and {name:>4}".format(a, name=b)`.
/// E0700 once the result is over `limit` bytes.
fn str_format(fmt: &str, args: &CallArgs, limit: u64) -> Result<Value, Diagnostic> {
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
                    Some('a') => Value::Str(super::format::ascii_escaped(&v.repr()).into()),
                    _ => v,
                };
                let piece = super::format::format_value(&v, &spec)?;
                if (out.len() + piece.len()) as u64 > limit {
                    return Err(Diagnostic::new(
                        Code::E0700,
                        format!(
                            "format() would make a string of more than {limit} bytes, over the limit"
                        ),
                    )
                    .with_help("raise TESSERA_MAX_BYTES, or build the value in smaller pieces"));
                }
                out.push_str(&piece);
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
