//! Runtime values of host code.

use super::args::CallArgs;
use super::host::HostObject;
use super::Interp;
use crate::ast::FunctionDef;
use crate::diag::Diagnostic;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

/// A native function: `op.matmul`, `print`, a bound method.
pub type NativeFn = dyn Fn(&mut Interp, CallArgs) -> Result<Value, Diagnostic>;

#[derive(Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<Vec<Value>>),
    /// `{k: v}`, insertion-ordered.
    Dict(Rc<RefCell<super::dict::Dict>>),
    /// `range(start, stop, step)`, lazy.
    Range(i64, i64, i64),
    /// `lo:hi:step` inside a subscript; each part is `None` when omitted.
    Slice(Rc<[Value; 3]>),
    Function(Rc<Function>),
    Native(Rc<Native>),
    Module(Rc<Module>),
    /// A builtin type used as a value: `int`, `float`, `isinstance(x, list)`.
    Type(TypeKind),
    Host(Rc<dyn HostObject>),
}

/// The types `type(x)` gives: the builtin ones that can be named in host code, and the types
/// of the session's own objects (tensors, kernels, meshes, …), which have no name to call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TypeKind {
    NoneType,
    Bool,
    Int,
    Float,
    Str,
    List,
    Tuple,
    Dict,
    Range,
    Function,
    Module,
    Type,
    /// A slice's or a host object's type, by its name (`tensor`, `kernel`, `mesh`).
    Host(&'static str),
}

impl TypeKind {
    pub fn name(self) -> &'static str {
        match self {
            TypeKind::NoneType => "NoneType",
            TypeKind::Bool => "bool",
            TypeKind::Int => "int",
            TypeKind::Float => "float",
            TypeKind::Str => "str",
            TypeKind::List => "list",
            TypeKind::Tuple => "tuple",
            TypeKind::Dict => "dict",
            TypeKind::Range => "range",
            TypeKind::Function => "function",
            TypeKind::Module => "module",
            TypeKind::Type => "type",
            TypeKind::Host(name) => name,
        }
    }
}

/// A user-defined function (a `def`).
pub struct Function {
    pub def: Rc<FunctionDef>,
    /// Default values, evaluated once at definition time (one per parameter, `None` if none).
    pub defaults: Vec<Option<Value>>,
    /// The frame of the enclosing function, for closures; `None` at module level.
    pub enclosing: Option<Rc<RefCell<Frame>>>,
    /// Names assigned in the body (locals), computed once.
    pub locals: Rc<Vec<Rc<str>>>,
}

/// Local variables of one function activation.
#[derive(Default)]
pub struct Frame {
    pub vars: HashMap<Rc<str>, Value>,
    pub enclosing: Option<Rc<RefCell<Frame>>>,
}

pub struct Native {
    pub name: Rc<str>,
    pub func: Box<NativeFn>,
    /// One line shown by help/inspection: `matmul(A, B, accum_dtype=None)`.
    pub doc: Rc<str>,
}

/// A builtin module such as `op` or `dist`: a name and its attributes.
pub struct Module {
    pub name: Rc<str>,
    pub attrs: RefCell<HashMap<Rc<str>, Value>>,
    pub doc: Rc<str>,
}

impl Module {
    pub fn new(name: &str, doc: &str) -> Module {
        Module {
            name: name.into(),
            attrs: RefCell::new(HashMap::new()),
            doc: doc.into(),
        }
    }
    pub fn set(&self, name: &str, v: Value) {
        self.attrs.borrow_mut().insert(name.into(), v);
    }
    pub fn get(&self, name: &str) -> Option<Value> {
        self.attrs.borrow().get(name).cloned()
    }
    /// Sorted attribute names.
    pub fn names(&self) -> Vec<Rc<str>> {
        let mut v: Vec<Rc<str>> = self.attrs.borrow().keys().cloned().collect();
        v.sort();
        v
    }
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(s.into())
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }
    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }
    /// The items of a tuple or list; `None` for any other value.
    pub fn items(&self) -> Option<Vec<Value>> {
        match self {
            Value::Tuple(t) => Some(t.as_ref().clone()),
            Value::List(l) => Some(l.borrow().clone()),
            _ => None,
        }
    }
    pub fn native(
        name: &str,
        doc: &str,
        f: impl Fn(&mut Interp, CallArgs) -> Result<Value, Diagnostic> + 'static,
    ) -> Value {
        Value::Native(Rc::new(Native {
            name: name.into(),
            func: Box::new(f),
            doc: doc.into(),
        }))
    }
    pub fn host(h: impl HostObject) -> Value {
        Value::Host(Rc::new(h))
    }

    /// The type name users see in messages (`int`, `list`, `tensor`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Range(..) => "range",
            Value::Slice(_) => "slice",
            Value::Function(_) => "function",
            Value::Native(_) => "builtin_function",
            Value::Module(_) => "module",
            Value::Type(_) => "type",
            Value::Host(h) => h.type_name(),
        }
    }

    /// The host object, downcast to `T`.
    pub fn downcast<T: 'static>(&self) -> Option<&T> {
        match self {
            Value::Host(h) => (&**h as &dyn std::any::Any).downcast_ref::<T>(),
            _ => None,
        }
    }

    /// Python's truth value (host objects may refuse: an ambiguous tensor).
    pub fn truthy(&self) -> Result<bool, Diagnostic> {
        Ok(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::Range(a, b, s) => range_len(*a, *b, *s) > 0,
            Value::Host(h) => return h.truthy(),
            Value::Slice(_)
            | Value::Function(_)
            | Value::Native(_)
            | Value::Module(_)
            | Value::Type(_) => true,
        })
    }

    /// `repr(x)`.
    pub fn repr(&self) -> String {
        let mut s = String::new();
        self.write_repr(&mut s, 0, &mut Vec::new(), usize::MAX);
        s
    }

    /// `repr(x)` if it takes at most `limit` bytes; `None` when it would take more (writing
    /// stops soon after the limit is passed, so a huge nesting of shared lists is not built).
    pub fn repr_within(&self, limit: usize) -> Option<String> {
        let mut s = String::new();
        self.write_repr(&mut s, 0, &mut Vec::new(), limit);
        (s.len() <= limit).then_some(s)
    }

    /// `str(x)` if it takes at most `limit` bytes ([`Value::repr_within`]).
    pub fn to_str_within(&self, limit: usize) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.to_string()),
            Value::Host(h) => Some(h.str()),
            _ => self.repr_within(limit),
        }
    }

    /// `str(x)`.
    pub fn to_str(&self) -> String {
        match self {
            Value::Str(s) => s.to_string(),
            Value::Host(h) => h.str(),
            _ => self.repr(),
        }
    }

    /// `active`: the lists and dicts being written further up; one met again (a container that
    /// contains itself, at any depth) prints `[...]` or `{...}`, as in Python.
    /// Writing stops once `out` is over `limit` bytes.
    fn write_repr(
        &self,
        out: &mut String,
        depth: usize,
        active: &mut Vec<*const ()>,
        limit: usize,
    ) {
        if out.len() > limit {
            return;
        }
        if depth > 100 {
            out.push_str("...");
            return;
        }
        match self {
            Value::None => out.push_str("None"),
            Value::Bool(true) => out.push_str("True"),
            Value::Bool(false) => out.push_str("False"),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => out.push_str(&super::format::float_repr(*f)),
            Value::Str(s) => out.push_str(&super::format::str_repr(s)),
            Value::List(l) => {
                let me = Rc::as_ptr(l).cast::<()>();
                if active.contains(&me) {
                    out.push_str("[...]");
                    return;
                }
                out.push('[');
                active.push(me);
                match l.try_borrow() {
                    Ok(items) => {
                        for (i, v) in items.iter().enumerate() {
                            if i > 0 {
                                out.push_str(", ");
                            }
                            if out.len() > limit {
                                break;
                            }
                            v.write_repr(out, depth + 1, active, limit);
                        }
                    }
                    Err(_) => out.push_str("..."),
                }
                active.pop();
                out.push(']');
            }
            Value::Tuple(t) => {
                out.push('(');
                for (i, v) in t.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if out.len() > limit {
                        break;
                    }
                    v.write_repr(out, depth + 1, active, limit);
                }
                if t.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            Value::Dict(d) => {
                let me = Rc::as_ptr(d).cast::<()>();
                if active.contains(&me) {
                    out.push_str("{...}");
                    return;
                }
                out.push('{');
                active.push(me);
                match d.try_borrow() {
                    Ok(d) => {
                        for (i, (k, v)) in d.entries().enumerate() {
                            if i > 0 {
                                out.push_str(", ");
                            }
                            if out.len() > limit {
                                break;
                            }
                            k.write_repr(out, depth + 1, active, limit);
                            out.push_str(": ");
                            if out.len() > limit {
                                break;
                            }
                            v.write_repr(out, depth + 1, active, limit);
                        }
                    }
                    Err(_) => out.push_str("..."),
                }
                active.pop();
                out.push('}');
            }
            Value::Range(a, b, s) => {
                if *s == 1 {
                    let _ = write!(out, "range({a}, {b})");
                } else {
                    let _ = write!(out, "range({a}, {b}, {s})");
                }
            }
            Value::Slice(p) => {
                out.push_str("slice(");
                for (i, v) in p.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if out.len() > limit {
                        break;
                    }
                    v.write_repr(out, depth + 1, active, limit);
                }
                out.push(')');
            }
            Value::Function(f) => {
                let _ = write!(out, "<function {}>", f.def.name.name);
            }
            Value::Native(n) => {
                let _ = write!(out, "<built-in function {}>", n.name);
            }
            Value::Module(m) => {
                let _ = write!(out, "<module '{}'>", m.name);
            }
            Value::Type(t) => {
                let _ = write!(out, "<class '{}'>", t.name());
            }
            Value::Host(h) => out.push_str(&h.repr()),
        }
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repr())
    }
}

/// Number of items of `range(a, b, s)` (`s != 0`).
pub fn range_len(a: i64, b: i64, s: i64) -> i64 {
    if s > 0 && a < b {
        ((b as i128 - a as i128 - 1) / s as i128 + 1) as i64
    } else if s < 0 && a > b {
        ((a as i128 - b as i128 - 1) / (-(s as i128)) + 1) as i64
    } else {
        0
    }
}
