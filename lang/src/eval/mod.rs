//! The evaluator of host code: a tree-walking interpreter with Python's semantics for the
//! subset in SPEC §2–3. Tensors and other host objects plug in through [`HostObject`].

pub mod args;
mod builtins;
mod check;
pub mod format;
pub mod host;
mod ops;
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
    /// The most items a list, tuple or string built by host code may have (E0700 beyond).
    pub max_items: usize,
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
            max_items: 100_000_000,
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
            _ => builtins::method_names(v)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
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

    // ----- statements -------------------------------------------------------------------

    fn exec_block(&mut self, body: &[Stmt], env: &Env) -> R<()> {
        for s in body {
            self.exec_stmt(s, env)?;
        }
        Ok(())
    }

    fn exec_stmt(&mut self, stmt: &Stmt, env: &Env) -> R<()> {
        self.tick(stmt.span)?;
        match &stmt.kind {
            StmtKind::Expr(e) => {
                self.eval(e, env)?;
            }
            StmtKind::Assign { targets, value } => {
                let v = self.eval(value, env)?;
                for t in targets {
                    self.assign(t, v.clone(), env)?;
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                self.aug_assign(target, *op, value, stmt.span, env)?;
            }
            StmtKind::FunctionDef(def) => {
                let mut defaults = Vec::with_capacity(def.params.len());
                for p in &def.params {
                    defaults.push(match &p.default {
                        Some(d) => Some(self.eval(d, env)?),
                        None => None,
                    });
                }
                let f = Value::Function(Rc::new(Function {
                    def: def.clone(),
                    defaults,
                    enclosing: env.frame.clone(),
                    locals: Rc::new(local_names(def)),
                }));
                let mut v = f;
                for d in def.decorators.iter().rev() {
                    let dec = self.eval(d, env)?;
                    let args = CallArgs {
                        positional: vec![(v, def.span)],
                        keywords: Vec::new(),
                        span: d.span,
                    };
                    v = self.call_value(&dec, args, d.span)?;
                }
                self.store(&def.name.name, v, env);
            }
            StmtKind::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e, env)?,
                    None => Value::None,
                };
                return Err(Flow::Return(v));
            }
            StmtKind::If { test, body, orelse } => {
                let t = self.eval(test, env)?;
                if self.truthy(&t, test.span)? {
                    self.exec_block(body, env)?;
                } else {
                    self.exec_block(orelse, env)?;
                }
            }
            StmtKind::While { test, body, orelse } => {
                let mut broke = false;
                loop {
                    let t = self.eval(test, env)?;
                    if !self.truthy(&t, test.span)? {
                        break;
                    }
                    match self.exec_block(body, env) {
                        Ok(()) | Err(Flow::Continue) => {}
                        Err(Flow::Break) => {
                            broke = true;
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                    self.tick(stmt.span)?;
                }
                if !broke {
                    self.exec_block(orelse, env)?;
                }
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let it = self.eval(iter, env)?;
                let mut broke = false;
                let run = |this: &mut Interp, item: Value| -> R<bool> {
                    this.tick(stmt.span)?;
                    this.assign(target, item, env)?;
                    match this.exec_block(body, env) {
                        Ok(()) | Err(Flow::Continue) => Ok(true),
                        Err(Flow::Break) => Ok(false),
                        Err(e) => Err(e),
                    }
                };
                if let Value::Range(a, b, s) = it {
                    let n = value::range_len(a, b, s);
                    for k in 0..n {
                        let x = a + k * s;
                        if !run(self, Value::Int(x))? {
                            broke = true;
                            break;
                        }
                    }
                } else {
                    let items = self.iterate(&it, iter.span)?;
                    for x in items {
                        if !run(self, x)? {
                            broke = true;
                            break;
                        }
                    }
                }
                if !broke {
                    self.exec_block(orelse, env)?;
                }
            }
            StmtKind::Break => return Err(Flow::Break),
            StmtKind::Continue => return Err(Flow::Continue),
            StmtKind::Pass => {}
            StmtKind::Assert { test, msg } => {
                let t = self.eval(test, env)?;
                if !self.truthy(&t, test.span)? {
                    let text = match msg {
                        Some(m) => {
                            let v = self.eval(m, env)?;
                            format!("assertion failed: {}", v.to_str())
                        }
                        None => "assertion failed".to_string(),
                    };
                    return Err(Diagnostic::new(Code::E0600, text)
                        .at(test.span)
                        .with_label("this is false")
                        .into());
                }
            }
        }
        Ok(())
    }

    fn store(&mut self, name: &Rc<str>, v: Value, env: &Env) {
        match &env.frame {
            Some(f) => {
                f.borrow_mut().vars.insert(name.clone(), v);
            }
            None => {
                self.globals.borrow_mut().insert(name.clone(), v);
            }
        }
    }

    fn assign(&mut self, target: &Expr, v: Value, env: &Env) -> R<()> {
        match &target.kind {
            ExprKind::Name(n) => {
                self.store(n, v, env);
                Ok(())
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let vals = self.iterate(&v, target.span)?;
                if vals.len() != items.len() {
                    let msg = if vals.len() > items.len() {
                        format!("too many values to unpack (expected {})", items.len())
                    } else {
                        format!(
                            "not enough values to unpack (expected {}, got {})",
                            items.len(),
                            vals.len()
                        )
                    };
                    return Err(Diagnostic::new(Code::E0500, msg).at(target.span).into());
                }
                for (t, x) in items.iter().zip(vals) {
                    self.assign(t, x, env)?;
                }
                Ok(())
            }
            ExprKind::Subscript { value, index } => {
                let container = self.eval(value, env)?;
                let idx = self.eval(index, env)?;
                self.set_item(&container, &idx, v, target.span, index.span)
            }
            ExprKind::Attribute { value, attr } => {
                let obj = self.eval(value, env)?;
                match &obj {
                    Value::Host(h) => match h.set_attr(&attr.name, v) {
                        Some(r) => r.map(|_| ()).map_err(|d| d.or_at(attr.span).into()),
                        None => Err(Diagnostic::new(
                            Code::E0100,
                            format!(
                                "cannot set attribute '{}' of a {}",
                                attr.name,
                                obj.type_name()
                            ),
                        )
                        .at(attr.span)
                        .into()),
                    },
                    _ => Err(Diagnostic::new(
                        Code::E0100,
                        format!(
                            "cannot set attribute '{}' of a {}",
                            attr.name,
                            obj.type_name()
                        ),
                    )
                    .at(attr.span)
                    .into()),
                }
            }
            _ => Err(
                Diagnostic::new(Code::E0001, "cannot assign to this expression")
                    .at(target.span)
                    .into(),
            ),
        }
    }

    fn set_item(
        &mut self,
        container: &Value,
        idx: &Value,
        v: Value,
        span: Span,
        idx_span: Span,
    ) -> R<()> {
        match container {
            Value::List(l) => {
                let len = l.borrow().len();
                match idx {
                    Value::Slice(_) => {
                        let items = self.iterate(&v, span)?;
                        let (lo, hi, step) = ops::slice_bounds(idx, len, idx_span)?;
                        if step != 1 {
                            return Err(Diagnostic::new(
                                Code::E0500,
                                "assignment to an extended slice is not supported",
                            )
                            .at(idx_span)
                            .into());
                        }
                        let hi = hi.max(lo) as usize;
                        let lo = lo as usize;
                        l.borrow_mut().splice(lo..hi, items);
                        Ok(())
                    }
                    _ => {
                        let i = ops::index_of(idx, len, "list", idx_span)?;
                        if let Some(slot) = l.borrow_mut().get_mut(i) {
                            *slot = v;
                        }
                        Ok(())
                    }
                }
            }
            _ => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "'{}' object does not support item assignment",
                    container.type_name()
                ),
            )
            .at(span)
            .into()),
        }
    }

    fn aug_assign(
        &mut self,
        target: &Expr,
        op: ast::BinOp,
        value: &Expr,
        span: Span,
        env: &Env,
    ) -> R<()> {
        match &target.kind {
            ExprKind::Name(_) => {
                let cur = self.eval(target, env)?;
                let rhs = self.eval(value, env)?;
                if let (Value::List(l), ast::BinOp::Add) = (&cur, op) {
                    let items = self.iterate(&rhs, value.span)?;
                    l.borrow_mut().extend(items);
                    return Ok(());
                }
                let v = self.binary(op, &cur, &rhs, span, target.span, value.span)?;
                self.assign(target, v, env)
            }
            ExprKind::Subscript {
                value: cv,
                index: ix,
            } => {
                let container = self.eval(cv, env)?;
                let idx = self.eval(ix, env)?;
                let cur = self.subscript(&container, &idx, target.span, ix.span)?;
                let rhs = self.eval(value, env)?;
                let v = self.binary(op, &cur, &rhs, span, target.span, value.span)?;
                self.set_item(&container, &idx, v, target.span, ix.span)
            }
            ExprKind::Attribute { .. } => {
                let cur = self.eval(target, env)?;
                let rhs = self.eval(value, env)?;
                let v = self.binary(op, &cur, &rhs, span, target.span, value.span)?;
                self.assign(target, v, env)
            }
            _ => Err(
                Diagnostic::new(Code::E0001, "invalid target for augmented assignment")
                    .at(target.span)
                    .into(),
            ),
        }
    }

    // ----- expressions ------------------------------------------------------------------

    fn lookup(&self, name: &Rc<str>, span: Span, env: &Env) -> R<Value> {
        if let Some(f) = &env.frame {
            if env.locals.contains(name) {
                return match f.borrow().vars.get(name) {
                    Some(v) => Ok(v.clone()),
                    None => Err(Diagnostic::new(
                        Code::E0100,
                        format!("local variable '{name}' referenced before assignment"),
                    )
                    .at(span)
                    .into()),
                };
            }
            // Enclosing function frames (closures).
            let mut cur = f.borrow().enclosing.clone();
            while let Some(fr) = cur {
                if let Some(v) = fr.borrow().vars.get(name) {
                    return Ok(v.clone());
                }
                cur = fr.borrow().enclosing.clone();
            }
        }
        if let Some(v) = self.globals.borrow().get(name) {
            return Ok(v.clone());
        }
        if let Some(v) = self.builtins.get(name) {
            return Ok(v.clone());
        }
        let mut candidates: Vec<Rc<str>> = self.visible_names();
        if let Some(f) = &env.frame {
            candidates.extend(f.borrow().vars.keys().cloned());
            candidates.extend(env.locals.iter().cloned());
        }
        let mut d = Diagnostic::new(Code::E0100, format!("name '{name}' is not defined"))
            .at(span)
            .with_label("not defined");
        if let Some(s) = suggest(name, candidates.iter().map(|s| &**s)) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        Err(d.into())
    }

    fn eval(&mut self, e: &Expr, env: &Env) -> R<Value> {
        match &e.kind {
            ExprKind::Int(i) => Ok(Value::Int(*i)),
            ExprKind::Float(f) => Ok(Value::Float(*f)),
            ExprKind::Str(s) => Ok(Value::Str(s.clone())),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::None => Ok(Value::None),
            ExprKind::FString(parts) => {
                let mut out = String::new();
                for p in parts {
                    match p {
                        FStringPart::Literal(s) => out.push_str(s),
                        FStringPart::Expr {
                            expr,
                            conversion,
                            format_spec,
                        } => {
                            let v = self.eval(expr, env)?;
                            let v = match conversion {
                                Some('r') => Value::Str(v.repr().into()),
                                Some('s') => Value::Str(v.to_str().into()),
                                _ => v,
                            };
                            let spec = format_spec.as_deref().unwrap_or("");
                            let s = format::format_value(&v, spec).map_err(|d| d.at(expr.span))?;
                            out.push_str(&s);
                        }
                    }
                }
                Ok(Value::Str(out.into()))
            }
            ExprKind::Name(n) => self.lookup(n, e.span, env),
            ExprKind::List(items) => {
                let mut v = Vec::with_capacity(items.len());
                for x in items {
                    v.push(self.eval(x, env)?);
                }
                Ok(Value::list(v))
            }
            ExprKind::Tuple(items) => {
                let mut v = Vec::with_capacity(items.len());
                for x in items {
                    v.push(self.eval(x, env)?);
                }
                Ok(Value::tuple(v))
            }
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand, env)?;
                Ok(self.unary(*op, &v, e.span)?)
            }
            ExprKind::Binary { op, left, right } => {
                let a = self.eval(left, env)?;
                let b = self.eval(right, env)?;
                self.binary(*op, &a, &b, e.span, left.span, right.span)
            }
            ExprKind::Compare { left, ops } => {
                let mut a = self.eval(left, env)?;
                let mut a_span = left.span;
                let mut result = Value::Bool(true);
                for (op, rhs) in ops {
                    let b = self.eval(rhs, env)?;
                    let r = self.compare(*op, &a, &b, a_span.to(rhs.span))?;
                    if ops.len() == 1 {
                        return Ok(r);
                    }
                    if !self.truthy(&r, e.span)? {
                        return Ok(r);
                    }
                    result = r;
                    a = b;
                    a_span = rhs.span;
                }
                Ok(result)
            }
            ExprKind::BoolOp { op, left, right } => {
                let a = self.eval(left, env)?;
                let t = self.truthy(&a, left.span)?;
                match (op, t) {
                    (ast::BoolOp::And, false) | (ast::BoolOp::Or, true) => Ok(a),
                    _ => self.eval(right, env),
                }
            }
            ExprKind::IfExp { test, body, orelse } => {
                let t = self.eval(test, env)?;
                if self.truthy(&t, test.span)? {
                    self.eval(body, env)
                } else {
                    self.eval(orelse, env)
                }
            }
            ExprKind::Call { func, args } => {
                let f = self.eval(func, env)?;
                let mut ca = CallArgs::new(e.span);
                for a in args {
                    match a {
                        ast::Arg::Positional(x) => {
                            let v = self.eval(x, env)?;
                            ca.positional.push((v, x.span));
                        }
                        ast::Arg::Keyword(name, x) => {
                            let v = self.eval(x, env)?;
                            if ca.keywords.iter().any(|(k, _, _)| *k == name.name) {
                                return Err(Diagnostic::new(
                                    Code::E0101,
                                    format!("keyword argument repeated: {}", name.name),
                                )
                                .at(name.span)
                                .into());
                            }
                            ca.keywords.push((name.name.clone(), v, x.span));
                        }
                        ast::Arg::Star(x) => {
                            let v = self.eval(x, env)?;
                            for item in self.iterate(&v, x.span)? {
                                ca.positional.push((item, x.span));
                            }
                        }
                    }
                }
                self.call_value(&f, ca, func.span)
            }
            ExprKind::Attribute { value, attr } => {
                let v = self.eval(value, env)?;
                self.get_attr(&v, &attr.name, attr.span)
            }
            ExprKind::Subscript { value, index } => {
                let v = self.eval(value, env)?;
                let i = self.eval(index, env)?;
                self.subscript(&v, &i, e.span, index.span)
            }
            ExprKind::Slice { lo, hi, step } => {
                let mut part = |x: &Option<Box<Expr>>| -> R<Value> {
                    match x {
                        Some(x) => self.eval(x, env),
                        None => Ok(Value::None),
                    }
                };
                let a = part(lo)?;
                let b = part(hi)?;
                let c = part(step)?;
                Ok(Value::Slice(Rc::new([a, b, c])))
            }
            ExprKind::ListComp {
                elt,
                target,
                iter,
                conds,
            } => {
                let src = self.eval(iter, env)?;
                let items = self.iterate(&src, iter.span)?;
                let mut names = Vec::new();
                target_names(target, &mut names);
                let frame = Rc::new(RefCell::new(Frame {
                    vars: HashMap::new(),
                    enclosing: env.frame.clone(),
                }));
                let inner = Env {
                    frame: Some(frame),
                    locals: Rc::new(names),
                };
                let mut out = Vec::new();
                'items: for x in items {
                    self.tick(e.span)?;
                    self.assign(target, x, &inner)?;
                    for c in conds {
                        let t = self.eval(c, &inner)?;
                        if !self.truthy(&t, c.span)? {
                            continue 'items;
                        }
                    }
                    out.push(self.eval(elt, &inner)?);
                }
                Ok(Value::list(out))
            }
            ExprKind::Error => Err(Diagnostic::new(Code::E0001, "invalid syntax")
                .at(e.span)
                .into()),
        }
    }

    /// Python truthiness, with the span for host objects that refuse.
    pub fn truthy(&mut self, v: &Value, span: Span) -> Result<bool, Diagnostic> {
        v.truthy().map_err(|d| d.or_at(span))
    }

    /// Calls any callable value.
    pub fn call_value(&mut self, f: &Value, args: CallArgs, fspan: Span) -> R<Value> {
        let span = args.span;
        match f {
            Value::Function(func) => self.call_function(func, args),
            Value::Native(n) => {
                let saved = self.call_span;
                self.call_span = span;
                let r = (n.func)(self, args);
                self.call_span = saved;
                r.map_err(|d| d.or_at(span).into())
            }
            Value::Type(t) => builtins::construct(self, *t, args).map_err(|d| d.or_at(span).into()),
            Value::Host(h) => {
                let saved = self.call_span;
                self.call_span = span;
                let r = h.call(f, self, args);
                self.call_span = saved;
                match r {
                    Some(r) => r.map_err(|d| d.or_at(span).into()),
                    None => Err(not_callable(f, fspan)),
                }
            }
            _ => Err(not_callable(f, fspan)),
        }
    }

    /// Calls a value from native code (decorators, `map`-like natives).
    pub fn call(&mut self, f: &Value, args: CallArgs) -> Result<Value, Diagnostic> {
        let span = args.span;
        match self.call_value(f, args, span) {
            Ok(v) => Ok(v),
            Err(fl) => Err(flow_to_diag(fl)),
        }
    }

    fn call_function(&mut self, func: &Rc<Function>, args: CallArgs) -> R<Value> {
        let def = &func.def;
        if self.depth >= self.recursion_limit {
            return Err(Diagnostic::new(
                Code::E0500,
                format!(
                    "recursion limit exceeded: more than {} nested calls",
                    self.recursion_limit
                ),
            )
            .at(args.span)
            .with_label(format!("calling `{}` here", def.name.name))
            .into());
        }
        let frame = Rc::new(RefCell::new(Frame {
            vars: HashMap::new(),
            enclosing: func.enclosing.clone(),
        }));
        let site = args.span;
        self.bind_params(func, args, &frame)?;
        let env = Env {
            frame: Some(frame),
            locals: func.locals.clone(),
        };
        self.depth += 1;
        let r = self.exec_block(&def.body, &env);
        self.depth -= 1;
        match r {
            Ok(()) => Ok(Value::None),
            Err(Flow::Return(v)) => Ok(v),
            Err(Flow::Break) | Err(Flow::Continue) => Ok(Value::None),
            Err(Flow::Error(mut d)) => {
                // A short call trace: label the call sites the error came through (a few, each
                // once), like the last lines of a Python traceback.
                let seen = d.span == Some(site) || d.secondary.iter().any(|l| l.span == site);
                if !seen && d.secondary.len() < 3 && d.span.is_some_and(|p| p.file == site.file) {
                    d.secondary.push(crate::diag::Label {
                        span: site,
                        message: format!("in this call of `{}`", def.name.name),
                    });
                }
                Err(Flow::Error(d))
            }
        }
    }

    fn bind_params(
        &mut self,
        func: &Rc<Function>,
        args: CallArgs,
        frame: &Rc<RefCell<Frame>>,
    ) -> R<()> {
        let def = &func.def;
        let fname = &def.name.name;
        let mut vars = frame.borrow_mut();
        let params = &def.params;
        let star = params
            .iter()
            .position(|p| p.kind == ast::ParamKind::VarArgs);
        let n_pos = star.unwrap_or_else(|| {
            params
                .iter()
                .take_while(|p| p.kind == ast::ParamKind::Normal)
                .count()
        });
        let mut filled = vec![false; params.len()];
        let mut extra = Vec::new();
        for (i, (v, s)) in args.positional.into_iter().enumerate() {
            if i < n_pos {
                if let Some(p) = params.get(i) {
                    vars.vars.insert(p.name.name.clone(), v);
                    filled[i] = true;
                }
            } else if star.is_some() {
                extra.push(v);
            } else {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "{fname}() takes {} positional argument{} but more were given",
                        n_pos,
                        if n_pos == 1 { "" } else { "s" }
                    ),
                )
                .at(s)
                .with_label("unexpected argument")
                .with_secondary(def.span, "defined here")
                .into());
            }
        }
        if let Some(si) = star {
            if let Some(p) = params.get(si) {
                vars.vars.insert(p.name.name.clone(), Value::tuple(extra));
                filled[si] = true;
            }
        }
        for (k, v, s) in args.keywords {
            let Some(i) = params
                .iter()
                .position(|p| p.name.name == k && p.kind != ast::ParamKind::VarArgs)
            else {
                let mut d = Diagnostic::new(
                    Code::E0101,
                    format!("{fname}() got an unexpected keyword argument '{k}'"),
                )
                .at(s)
                .with_secondary(def.span, "defined here");
                if let Some(sug) = suggest(&k, params.iter().map(|p| &*p.name.name)) {
                    d = d.with_help(format!("did you mean `{sug}`?"));
                }
                return Err(d.into());
            };
            if filled[i] {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{fname}() got multiple values for argument '{k}'"),
                )
                .at(s)
                .into());
            }
            vars.vars.insert(k, v);
            filled[i] = true;
        }
        for (i, p) in params.iter().enumerate() {
            if filled[i] {
                continue;
            }
            match func.defaults.get(i).cloned().flatten() {
                Some(d) => {
                    vars.vars.insert(p.name.name.clone(), d);
                }
                None => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("{fname}() missing required argument '{}'", p.name.name),
                    )
                    .at(args.span)
                    .with_secondary(def.span, "defined here")
                    .into());
                }
            }
        }
        Ok(())
    }

    /// `v.name`.
    pub fn get_attr(&mut self, v: &Value, name: &str, span: Span) -> R<Value> {
        let found = match v {
            Value::Module(m) => m.get(name),
            Value::Host(h) => {
                let saved = self.call_span;
                self.call_span = span;
                let r = h.get_attr(v, name, self);
                self.call_span = saved;
                r.map_err(|d| d.or_at(span))?
            }
            _ => builtins::method(v, name),
        };
        match found {
            Some(x) => Ok(x),
            None => {
                let names: Vec<String> = match v {
                    Value::Module(m) => m.names().iter().map(|s| s.to_string()).collect(),
                    Value::Host(h) => h.attr_names().iter().map(|s| s.to_string()).collect(),
                    _ => builtins::method_names(v)
                        .iter()
                        .map(|s| s.to_string())
                        .collect(),
                };
                let what = match v {
                    Value::Module(m) => format!("module '{}'", m.name),
                    _ => format!("'{}' object", v.type_name()),
                };
                let mut d =
                    Diagnostic::new(Code::E0100, format!("{what} has no attribute '{name}'"))
                        .at(span)
                        .with_label("unknown attribute");
                if let Some(s) = suggest(name, names.iter().map(|s| s.as_str())) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                Err(d.into())
            }
        }
    }

    /// Every item of an iterable value.
    pub fn iterate(&mut self, v: &Value, span: Span) -> Result<Vec<Value>, Diagnostic> {
        match v {
            Value::List(l) => Ok(l.borrow().clone()),
            Value::Tuple(t) => Ok(t.as_ref().clone()),
            Value::Str(s) => Ok(s
                .chars()
                .map(|c| Value::Str(c.to_string().into()))
                .collect()),
            Value::Range(a, b, s) => {
                let n = value::range_len(*a, *b, *s);
                if n as u64 > self.max_items as u64 {
                    return Err(Diagnostic::new(
                        Code::E0700,
                        format!("range of {n} items is too large to materialise"),
                    )
                    .at(span));
                }
                Ok((0..n).map(|k| Value::Int(a + k * s)).collect())
            }
            Value::Host(h) => match h.iter() {
                Some(r) => r.map_err(|d| d.or_at(span)),
                None => Err(not_iterable(v, span)),
            },
            _ => Err(not_iterable(v, span)),
        }
    }
}

fn not_iterable(v: &Value, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::E0101,
        format!("'{}' object is not iterable", v.type_name()),
    )
    .at(span)
}

fn not_callable(v: &Value, span: Span) -> Flow {
    Diagnostic::new(
        Code::E0101,
        format!("'{}' object is not callable", v.type_name()),
    )
    .at(span)
    .into()
}

fn flow_to_diag(f: Flow) -> Diagnostic {
    match f {
        Flow::Error(d) => *d,
        Flow::Return(_) => Diagnostic::new(Code::E0001, "'return' outside function"),
        Flow::Break => Diagnostic::new(Code::E0001, "'break' outside loop"),
        Flow::Continue => Diagnostic::new(Code::E0001, "'continue' not properly in loop"),
    }
}

/// The names a function assigns (its locals): parameters, assignment and `for` targets and
/// nested `def` names, not looking into nested functions.
fn local_names(def: &ast::FunctionDef) -> Vec<Rc<str>> {
    let mut out: Vec<Rc<str>> = def.params.iter().map(|p| p.name.name.clone()).collect();
    fn walk(body: &[Stmt], out: &mut Vec<Rc<str>>) {
        for s in body {
            match &s.kind {
                StmtKind::Assign { targets, .. } => {
                    for t in targets {
                        target_names(t, out);
                    }
                }
                StmtKind::AugAssign { target, .. } => target_names(target, out),
                StmtKind::FunctionDef(d) => out.push(d.name.name.clone()),
                StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
                    walk(body, out);
                    walk(orelse, out);
                }
                StmtKind::For {
                    target,
                    body,
                    orelse,
                    ..
                } => {
                    target_names(target, out);
                    walk(body, out);
                    walk(orelse, out);
                }
                StmtKind::Expr(_)
                | StmtKind::Return(_)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Pass
                | StmtKind::Assert { .. } => {}
            }
        }
    }
    walk(&def.body, &mut out);
    out.sort();
    out.dedup();
    out
}

fn target_names(t: &Expr, out: &mut Vec<Rc<str>>) {
    match &t.kind {
        ExprKind::Name(n) => out.push(n.clone()),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            for i in items {
                target_names(i, out);
            }
        }
        _ => {}
    }
}
