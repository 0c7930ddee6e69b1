//! `set` values (SPEC §3): built by `set(iterable)` (a set display `{1, 2}` is outside the
//! subset), holding the hashable kinds dict keys hold, in insertion order, bounded by
//! `TESSERA_MAX_BYTES` as dicts are.

use super::dict::Dict;
use super::host::{AttrResult, HostObject, HostResult};
use super::{CallArgs, Interp, Value};
use crate::ast::{BinOp, CmpOp};
use crate::diag::{Code, Diagnostic};
use std::cell::RefCell;
use std::rc::Rc;

/// A set: a dict whose values are all `None`.
pub struct SetObj {
    pub items: RefCell<Dict>,
}

const METHODS: &[&str] = &[
    "add",
    "clear",
    "copy",
    "difference",
    "discard",
    "intersection",
    "issubset",
    "issuperset",
    "pop",
    "remove",
    "union",
    "update",
];

impl SetObj {
    /// A set of `items`, E0700 past the host limit.
    pub fn build(it: &Interp, items: Vec<Value>) -> Result<Value, Diagnostic> {
        let mut d = Dict::new();
        for x in items {
            d.insert(x, Value::None)?;
            if d.len().is_multiple_of(1024) {
                it.check_dict_len(d.len())?;
            }
        }
        it.check_dict_len(d.len())?;
        Ok(Value::host(SetObj {
            items: RefCell::new(d),
        }))
    }
    /// `repr`, or `None` past `limit` bytes (items hold strings of any size).
    pub fn repr_within(&self, limit: usize) -> Option<String> {
        let d = self.items.borrow();
        if d.is_empty() {
            return Some("set()".to_string());
        }
        let mut out = String::from("{");
        for (i, (k, _)) in d.entries().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let t = k.repr_within(limit.checked_sub(out.len())?)?;
            out.push_str(&t);
        }
        out.push('}');
        (out.len() <= limit).then_some(out)
    }
    fn keys(&self) -> Vec<Value> {
        self.items.borrow().keys()
    }
    pub fn contains(&self, v: &Value) -> Result<bool, Diagnostic> {
        self.items.borrow().contains(v)
    }
}

fn of(v: &Value) -> Option<&SetObj> {
    v.downcast::<SetObj>()
}

fn new_set(keys: impl IntoIterator<Item = Value>) -> Result<Value, Diagnostic> {
    let mut d = Dict::new();
    for k in keys {
        d.insert(k, Value::None)?;
    }
    Ok(Value::host(SetObj {
        items: RefCell::new(d),
    }))
}

/// The items of a set operand: another set, or (for the methods) any iterable.
fn operand_items(
    it: &mut Interp,
    v: &Value,
    span: crate::span::Span,
) -> Result<Vec<Value>, Diagnostic> {
    match of(v) {
        Some(s) => Ok(s.keys()),
        None => it.iterate(v, span),
    }
}

impl HostObject for SetObj {
    fn type_name(&self) -> &'static str {
        "set"
    }
    fn repr(&self) -> String {
        self.repr_within(usize::MAX).unwrap_or_default()
    }
    fn truthy(&self) -> Result<bool, Diagnostic> {
        Ok(!self.items.borrow().is_empty())
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(Ok(self.items.borrow().len()))
    }
    fn iter(&self) -> Option<Result<Vec<Value>, Diagnostic>> {
        Some(Ok(self.keys()))
    }
    fn compare(&self, op: CmpOp, other: &Value, reflected: bool) -> HostResult {
        let o = of(other)?;
        let (a, b) = if reflected { (o, self) } else { (self, o) };
        let subset = |x: &SetObj, y: &SetObj| -> Result<bool, Diagnostic> {
            for k in x.keys() {
                if !y.contains(&k)? {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let (la, lb) = (a.items.borrow().len(), b.items.borrow().len());
        let r = (|| {
            Ok(match op {
                CmpOp::Eq => la == lb && subset(a, b)?,
                CmpOp::Ne => !(la == lb && subset(a, b)?),
                CmpOp::Le => subset(a, b)?,
                CmpOp::Lt => la < lb && subset(a, b)?,
                CmpOp::Ge => subset(b, a)?,
                CmpOp::Gt => la > lb && subset(b, a)?,
                _ => return Err(None),
            })
        })();
        match r {
            Ok(b) => Some(Ok(Value::Bool(b))),
            Err(None) => None,
            Err(Some(d)) => Some(Err(d)),
        }
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
        let o = of(other)?;
        let (a, b) = if reflected { (o, self) } else { (self, o) };
        let r = match op {
            BinOp::BitOr => new_set(a.keys().into_iter().chain(b.keys())),
            BinOp::BitAnd => keep(a, b, true),
            BinOp::Sub => keep(a, b, false),
            _ => return None,
        };
        Some(r)
    }
    fn get_attr(&self, this: &Value, name: &str, _interp: &mut Interp) -> AttrResult {
        if !METHODS.contains(&name) {
            return Ok(None);
        }
        let this = this.clone();
        let mname: Rc<str> = name.into();
        let doc = format!("set.{name}");
        Ok(Some(Value::native(name, &doc, move |it, args| {
            let Some(s) = of(&this) else {
                return Ok(Value::None);
            };
            method(it, s, &mname, args)
        })))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        METHODS.to_vec()
    }
}

/// The items of `a` that are (`inside`) or are not in `b`.
fn keep(a: &SetObj, b: &SetObj, inside: bool) -> Result<Value, Diagnostic> {
    let mut out = Vec::new();
    for k in a.keys() {
        if b.contains(&k)? == inside {
            out.push(k);
        }
    }
    new_set(out)
}

fn method(it: &mut Interp, s: &SetObj, name: &str, args: CallArgs) -> Result<Value, Diagnostic> {
    let fname = format!("set.{name}");
    let one = |args: &CallArgs| -> Result<(Value, crate::span::Span), Diagnostic> {
        let a = args.bind(&fname, &["x"], &[])?;
        match a.into_iter().flatten().next() {
            Some(a) => Ok((a.value, a.span)),
            None => Err(Diagnostic::new(
                Code::E0101,
                format!("{fname}() missing an argument"),
            )),
        }
    };
    match name {
        "add" => {
            let (v, span) = one(&args)?;
            let mut d = s.items.borrow_mut();
            d.insert(v, Value::None).map_err(|e| e.at(span))?;
            it.check_dict_len(d.len()).map_err(|e| e.at(span))?;
            Ok(Value::None)
        }
        "remove" | "discard" => {
            let (v, span) = one(&args)?;
            let gone = s.items.borrow_mut().remove(&v).map_err(|e| e.at(span))?;
            if gone.is_none() && name == "remove" {
                return Err(Diagnostic::new(
                    Code::E0500,
                    format!("set.remove(x): {} is not in the set", v.repr()),
                )
                .at(span)
                .with_help("`discard` removes an item only when it is there"));
            }
            Ok(Value::None)
        }
        "pop" => {
            args.bind(&fname, &[], &[])?;
            let first = s.items.borrow().keys().into_iter().next();
            match first {
                Some(k) => {
                    s.items.borrow_mut().remove(&k)?;
                    Ok(k)
                }
                None => Err(Diagnostic::new(Code::E0500, "pop from an empty set")),
            }
        }
        "clear" => {
            args.bind(&fname, &[], &[])?;
            *s.items.borrow_mut() = Dict::new();
            Ok(Value::None)
        }
        "copy" => {
            args.bind(&fname, &[], &[])?;
            new_set(s.keys())
        }
        "update" | "union" | "intersection" | "difference" | "issubset" | "issuperset" => {
            let mut others = Vec::new();
            for (v, span) in &args.positional {
                others.push(operand_items(it, v, *span)?);
            }
            if let Some((k, _, span)) = args.keywords.first() {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{fname}() takes no keyword arguments, got '{k}'"),
                )
                .at(*span));
            }
            let other_set = |items: &Vec<Value>| new_set(items.iter().cloned());
            match name {
                "update" => {
                    let mut d = s.items.borrow_mut();
                    for o in others {
                        for k in o {
                            d.insert(k, Value::None)?;
                        }
                        it.check_dict_len(d.len())?;
                    }
                    Ok(Value::None)
                }
                "union" => {
                    let mut all = s.keys();
                    for o in others {
                        all.extend(o);
                    }
                    SetObj::build(it, all)
                }
                "intersection" | "difference" => {
                    let mut cur = new_set(s.keys())?;
                    for o in &others {
                        let o = other_set(o)?;
                        let (Some(a), Some(b)) = (of(&cur), of(&o)) else {
                            break;
                        };
                        cur = keep(a, b, name == "intersection")?;
                    }
                    Ok(cur)
                }
                _ => {
                    let [o] = others.as_slice() else {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!(
                                "{fname}() takes exactly one argument ({} given)",
                                others.len()
                            ),
                        ));
                    };
                    let o = other_set(o)?;
                    let Some(o) = of(&o) else {
                        return Ok(Value::None);
                    };
                    let (a, b) = if name == "issubset" { (s, o) } else { (o, s) };
                    for k in a.keys() {
                        if !b.contains(&k)? {
                            return Ok(Value::Bool(false));
                        }
                    }
                    Ok(Value::Bool(true))
                }
            }
        }
        _ => Ok(Value::None),
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::eval::{Interp, ENTRY_BYTES, ITEM_BYTES};

    fn run(it: &mut Interp, src: &str) -> Result<(), crate::diag::Diagnostic> {
        let m = crate::parse::parse_module(src, 0).map_err(|mut d| d.remove(0))?;
        it.exec_module(&m).map(|_| ())
    }

    #[test]
    fn sets_are_bounded_like_dicts() {
        const { assert!(ENTRY_BYTES > 2 * ITEM_BYTES) };
        let mut it = Interp::new();
        // a range of 1000 items fits, a set of 1000 entries does not
        it.max_bytes = (1000 * (ITEM_BYTES + ENTRY_BYTES) / 2) as u64;
        run(&mut it, "r = list(range(1000))").unwrap();
        let e = run(&mut it, "s = set(range(1000))").unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
        assert!(e.message.contains("dict of 1000 entries"), "{}", e.message);
        // growing a set one item at a time stops at the limit too
        let e = run(&mut it, "s = set()\nfor i in range(1000):\n    s.add(i)\n").unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
        let e = run(&mut it, "s = set()\ns.update(range(1000))\n").unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
        run(&mut it, "s = set(range(100))\nassert len(s) == 100").unwrap();
        // the text of a set of long strings is bounded too
        it.max_bytes = 100_000;
        let e = run(
            &mut it,
            "s = set([str(i) * 20000 for i in range(8)])\nt = repr(s)",
        )
        .unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
        let e = run(&mut it, "print(s)").unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
    }

    #[test]
    fn text_files_are_bounded_by_the_host_limit() {
        let path =
            std::env::temp_dir().join(format!("tessera-open-limit-{}.txt", std::process::id()));
        std::fs::write(&path, "x".repeat(2000)).unwrap();
        let p = path.to_string_lossy().replace('\\', "/");
        let mut it = Interp::new();
        it.max_bytes = 1000;
        let e = run(&mut it, &format!("t = open({p:?}).read()")).unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
        assert!(e.span.is_some());
        it.max_bytes = 4000;
        run(
            &mut it,
            &format!("t = open({p:?}).read()\nassert len(t) == 2000"),
        )
        .unwrap();
        let _ = std::fs::remove_file(&path);
    }
}
