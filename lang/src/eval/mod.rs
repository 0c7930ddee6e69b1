//! The evaluator of host code: a tree-walking interpreter with Python's semantics for the
//! subset in SPEC §2–3. Tensors and other host objects plug in through [`HostObject`].

pub mod args;
mod builtins;
mod call;
mod check;
pub mod dict;
pub mod exc;
mod expr;
pub mod format;
pub mod host;
mod methods;
mod ops;
mod pybuiltins;
pub mod pyset;
mod stmt;
pub mod textfile;
pub mod value;

pub use args::{Arg, CallArgs};
pub use builtins::EllipsisObj;
pub use host::{AttrResult, HostObject, HostResult};
pub use value::{Frame, Function, Module, Native, TypeKind, Value};

use crate::ast::{self, Expr, ExprKind, FStringPart, Stmt, StmtKind};
use crate::diag::{suggest, Code, Diagnostic};
use crate::span::{SourceMap, Span};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Non-local exits while executing statements.
pub enum Flow {
    Error(Box<Diagnostic>),
    Return(Value),
    Break,
    Continue,
}

impl From<Diagnostic> for Flow {
    fn from(d: Diagnostic) -> Flow {
        Flow::Error(Box::new(d))
    }
}

type R<T> = Result<T, Flow>;

/// Where names are looked up and stored while running a block.
#[derive(Clone)]
struct Env {
    /// `None` at module level: names live in the globals.
    frame: Option<Rc<RefCell<Frame>>>,
    /// The names local to `frame`.
    locals: Rc<Vec<Rc<str>>>,
}

/// The message of the error that stops a cell interrupted through [`Interp::interrupt`].
pub const INTERRUPTED: &str = "interrupted";

/// The default of [`Interp::max_bytes`]: 4 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// The bytes one list or tuple item takes (the value itself; what it points to is counted
/// where it is built).
pub const ITEM_BYTES: usize = std::mem::size_of::<Value>();

/// The bytes one dict entry takes: key and value, the hashed key and its index slot.
pub const ENTRY_BYTES: usize =
    2 * ITEM_BYTES + std::mem::size_of::<dict::Key>() + 2 * std::mem::size_of::<usize>();

/// The bytes a list item that is a new `k`-tuple takes (`zip`, `enumerate`, `dict.items()`):
/// the item, the tuple's allocation and its `k` items.
pub const fn tuple_item_bytes(k: usize) -> usize {
    ITEM_BYTES + 40 + k * ITEM_BYTES
}

/// The error (E0500) that stops an interrupted cell; natives with long loops return it when they
/// observe the interrupt flag.
pub fn interrupted() -> Diagnostic {
    Diagnostic::new(Code::E0500, INTERRUPTED)
}

/// Whether an error is the one an interrupt produces (not a failure of the cell's code).
pub fn is_interrupt(d: &Diagnostic) -> bool {
    d.code == Code::E0500 && d.message == INTERRUPTED
}

/// The default limit of nested calls (Python's `sys.getrecursionlimit()`).
pub const DEFAULT_RECURSION_LIMIT: usize = 1000;

/// The interpreter state of one session: globals, sources, output sink and limits.
pub struct Interp {
    pub sources: SourceMap,
    globals: Rc<RefCell<HashMap<Rc<str>, Value>>>,
    builtins: HashMap<Rc<str>, Value>,
    out: Box<dyn FnMut(&str)>,
    flush: Box<dyn FnMut()>,
    err: Box<dyn FnMut(&str)>,
    depth: usize,
    pub recursion_limit: usize,
    steps: u64,
    /// Stop with E0500 after this many evaluation steps (used by fuzzing and tests).
    pub step_limit: Option<u64>,
    /// Set from another thread (Ctrl-C, Jupyter interrupt) to stop the running cell.
    pub interrupt: Arc<AtomicBool>,
    /// The span of the innermost call being evaluated, for natives that need a location.
    pub call_span: Span,
    /// The frame of the user function running now (`None` at module level), for `dir()`.
    frame: Option<Rc<RefCell<Frame>>>,
    /// The most bytes a string, list or tuple built by host code may take (E0700 beyond); the
    /// session sets it to the tensors' limit, `TESSERA_MAX_BYTES`.
    pub max_bytes: u64,
}

impl Default for Interp {
    fn default() -> Self {
        Interp::new()
    }
}

impl Interp {
    pub fn new() -> Interp {
        let mut it = Interp {
            sources: SourceMap::new(),
            globals: Rc::new(RefCell::new(HashMap::new())),
            builtins: HashMap::new(),
            out: Box::new(|s| {
                use std::io::Write;
                let _ = std::io::stdout().write_all(s.as_bytes());
            }),
            flush: Box::new(|| {
                use std::io::Write;
                let _ = std::io::stdout().flush();
            }),
            err: Box::new(|s| {
                use std::io::Write;
                let _ = std::io::stderr().write_all(s.as_bytes());
            }),
            depth: 0,
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            steps: 0,
            step_limit: None,
            interrupt: Arc::new(AtomicBool::new(false)),
            call_span: Span::default(),
            frame: None,
            max_bytes: DEFAULT_MAX_BYTES,
        };
        builtins::install(&mut it);
        it
    }

    /// Replaces where `print` writes.
    pub fn set_output(&mut self, out: Box<dyn FnMut(&str)>) {
        self.out = out;
    }
    /// Writes text to the output sink.
    pub fn write_out(&mut self, s: &str) {
        (self.out)(s)
    }
    /// Replaces what `print(..., flush=True)` does after writing (flushes stdout by default).
    pub fn set_flush(&mut self, flush: Box<dyn FnMut()>) {
        self.flush = flush;
    }
    /// Flushes the output sink (`print(..., flush=True)`).
    pub fn flush_out(&mut self) {
        (self.flush)()
    }
    /// Replaces where warnings and `--dump` text go (stderr by default; a notebook session
    /// routes them to its output sink).
    pub fn set_err_output(&mut self, err: Box<dyn FnMut(&str)>) {
        self.err = err;
    }
    /// Writes warning or diagnostic text to the error sink.
    pub fn write_err(&mut self, s: &str) {
        (self.err)(s)
    }
    /// Attribute names of a value (module members, host attributes, builtin methods), for
    /// completion.
    pub fn attr_names(v: &Value) -> Vec<String> {
        match v {
            Value::Module(m) => m.names().iter().map(|s| s.to_string()).collect(),
            Value::Host(h) => h.attr_names().iter().map(|s| s.to_string()).collect(),
            _ => methods::method_names(v)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    /// E0700 unless a host value of `items` items of `item_bytes` bytes each fits under
    /// [`Interp::max_bytes`]; `what` names it ("the string `a + b`").
    pub fn check_host_size(
        &self,
        items: usize,
        item_bytes: usize,
        what: impl FnOnce() -> String,
    ) -> Result<(), Diagnostic> {
        let bytes = (items as u128) * (item_bytes as u128);
        if bytes > u128::from(self.max_bytes) {
            return Err(Diagnostic::new(
                Code::E0700,
                format!(
                    "{} would take {bytes} bytes, over the limit of {} bytes",
                    what(),
                    self.max_bytes
                ),
            )
            .with_help("raise TESSERA_MAX_BYTES, or build the value in smaller pieces"));
        }
        Ok(())
    }

    /// E0700 unless a list grown to `len` items fits under [`Interp::max_bytes`].
    pub fn check_list_len(&self, len: usize, what: &str) -> Result<(), Diagnostic> {
        self.check_host_size(len, ITEM_BYTES, || format!("{what} to {len} items"))
    }

    /// E0700 unless a dict of `len` entries fits under [`Interp::max_bytes`].
    pub fn check_dict_len(&self, len: usize) -> Result<(), Diagnostic> {
        self.check_host_size(len, ENTRY_BYTES, || format!("a dict of {len} entries"))
    }

    /// `repr(v)` (or `str(v)` when `as_str`), or E0700 when the text of a container would be
    /// over [`Interp::max_bytes`] (a list holding the same large list many times).
    pub fn text_of(&self, v: &Value, as_str: bool) -> Result<String, Diagnostic> {
        let limit = usize::try_from(self.max_bytes).unwrap_or(usize::MAX);
        let text = if let Some(set) = v.downcast::<pyset::SetObj>() {
            set.repr_within(limit)
        } else if as_str {
            v.to_str_within(limit)
        } else {
            v.repr_within(limit)
        };
        text.ok_or_else(|| {
            Diagnostic::new(
                Code::E0700,
                format!(
                    "the text of this {} would take more than {limit} bytes, over the limit",
                    v.type_name()
                ),
            )
            .with_help("raise TESSERA_MAX_BYTES, or print a part of the value")
        })
    }

    /// E0700 when the text of `v`, a container, would be over [`Interp::max_bytes`] (checked
    /// before formatting it).
    pub fn check_text(&self, v: &Value) -> Result<(), Diagnostic> {
        if matches!(v, Value::List(_) | Value::Tuple(_) | Value::Dict(_))
            || v.downcast::<pyset::SetObj>().is_some()
        {
            self.text_of(v, false)?;
        }
        Ok(())
    }

    /// Defines a builtin name (visible everywhere, shadowed by globals).
    pub fn set_builtin(&mut self, name: &str, v: Value) {
        self.builtins.insert(name.into(), v);
    }
    pub fn set_global(&mut self, name: &str, v: Value) {
        self.globals.borrow_mut().insert(name.into(), v);
    }
    pub fn get_global(&self, name: &str) -> Option<Value> {
        self.globals
            .borrow()
            .get(name)
            .cloned()
            .or_else(|| self.builtins.get(name).cloned())
    }
    /// A builtin name (`graph`, `print`), whatever user globals shadow it.
    pub fn get_builtin(&self, name: &str) -> Option<Value> {
        self.builtins.get(name).cloned()
    }
    /// User-defined globals, sorted by name (for `:vars`).
    pub fn user_globals(&self) -> Vec<(Rc<str>, Value)> {
        let mut v: Vec<_> = self
            .globals
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
    /// The names defined in the scope running now, sorted (`dir()`): the local variables of the
    /// user function being called, else the user globals.
    pub fn scope_names(&self) -> Vec<Rc<str>> {
        let mut v: Vec<Rc<str>> = match &self.frame {
            Some(f) => f.borrow().vars.keys().cloned().collect(),
            None => self.globals.borrow().keys().cloned().collect(),
        };
        v.sort();
        v
    }
    /// The value of a name [`Interp::scope_names`] lists.
    pub fn scope_value(&self, name: &str) -> Option<Value> {
        match &self.frame {
            Some(f) => f.borrow().vars.get(name).cloned(),
            None => self.globals.borrow().get(name).cloned(),
        }
    }
    /// Every name visible at module level (globals and builtins), for completion.
    pub fn visible_names(&self) -> Vec<Rc<str>> {
        let mut v: Vec<Rc<str>> = self.globals.borrow().keys().cloned().collect();
        // `...` is reached by its token, not by a name: not offered for completion.
        v.extend(self.builtins.keys().filter(|k| &***k != "...").cloned());
        v.sort();
        v.dedup();
        v
    }
    /// Drops every user global (`:reset`); builtins stay.
    pub fn clear_globals(&mut self) {
        self.globals.borrow_mut().clear();
    }

    fn module_env(&self) -> Env {
        Env {
            frame: None,
            locals: Rc::new(Vec::new()),
        }
    }

    /// Runs a parsed module at top level. Returns the value of the last statement when it is
    /// an expression statement (what a REPL or notebook shows).
    pub fn exec_module(&mut self, module: &ast::Module) -> Result<Option<Value>, Diagnostic> {
        self.depth = 0;
        self.steps = 0;
        self.interrupt.store(false, Ordering::Relaxed);
        let env = self.module_env();
        let n = module.body.len();
        let mut last = None;
        for (i, stmt) in module.body.iter().enumerate() {
            if i + 1 == n {
                if let StmtKind::Expr(e) = &stmt.kind {
                    self.tick(stmt.span).map_err(flow_to_diag)?;
                    let v = self.eval(e, &env).map_err(flow_to_diag)?;
                    last = Some(v);
                    break;
                }
            }
            self.exec_stmt(stmt, &env).map_err(flow_to_diag)?;
        }
        Ok(last)
    }

    /// Evaluates one expression at module level.
    pub fn eval_expr(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        self.depth = 0;
        self.interrupt.store(false, Ordering::Relaxed);
        let env = self.module_env();
        self.eval(e, &env).map_err(flow_to_diag)
    }

    fn tick(&mut self, span: Span) -> R<()> {
        self.steps += 1;
        if let Some(limit) = self.step_limit {
            if self.steps > limit {
                return Err(Diagnostic::new(
                    Code::E0500,
                    format!("step limit exceeded ({limit} steps)"),
                )
                .at(span)
                .into());
            }
        }
        if self.interrupt.load(Ordering::Relaxed) {
            self.interrupt.store(false, Ordering::Relaxed);
            return Err(interrupted().at(span).with_label("stopped here").into());
        }
        Ok(())
    }
}

fn flow_to_diag(f: Flow) -> Diagnostic {
    match f {
        Flow::Error(d) => *d,
        Flow::Return(_) => Diagnostic::new(Code::E0001, "'return' outside function"),
        Flow::Break => Diagnostic::new(Code::E0001, "'break' outside loop"),
        Flow::Continue => Diagnostic::new(Code::E0001, "'continue' not properly in loop"),
    }
}
