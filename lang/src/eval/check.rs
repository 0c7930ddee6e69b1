//! `tessera check`: names resolved without running anything.
//!
//! A name read somewhere in the script that no statement of the script binds (an assignment,
//! a `for` or comprehension target, a `def` or a parameter, anywhere in the file) and that is
//! not a global or builtin of the session is E0100, as running it would be. So is an unknown
//! member of a module the script does not rebind (`op.softmaxx`). Conservative: a name bound
//! anywhere counts as bound everywhere, and a name read inside a `try` statement that has an
//! `except` clause is not reported (the script may expect that error and catch it), so the
//! check never reports what would run, with one exception: a function, defined outside any
//! `try`, that reads an unbound name and is only ever called inside one.

use super::{Interp, Value};
use crate::ast::{Expr, ExprKind, Module, Stmt, StmtKind};
use crate::diag::{suggest, Code, Diagnostic};

use std::collections::HashSet;
use std::rc::Rc;

impl Interp {
    /// The names `module` reads that nothing defines, and unknown members of modules.
    pub fn check_names(&self, module: &Module) -> Vec<Diagnostic> {
        let mut bound: HashSet<Rc<str>> = HashSet::new();
        // `try` statements with a handler: an error raised inside may be the one it expects
        let mut guarded: Vec<crate::Span> = Vec::new();
        let mut stmts: Vec<&Stmt> = module.body.iter().collect();
        let mut exprs: Vec<&Expr> = Vec::new();
        while let Some(s) = stmts.pop() {
            match &s.kind {
                StmtKind::Assign { targets, .. } => {
                    targets.iter().for_each(|t| bind(t, &mut bound))
                }
                StmtKind::AugAssign { target, .. } => bind(target, &mut bound),
                StmtKind::For { target, .. } => bind(target, &mut bound),
                StmtKind::Try { handlers, .. } => {
                    if !handlers.is_empty() {
                        guarded.push(s.span);
                    }
                    bound.extend(
                        handlers
                            .iter()
                            .filter_map(|h| h.name.as_ref())
                            .map(|n| n.name.clone()),
                    )
                }
                StmtKind::FunctionDef(f) => {
                    bound.insert(f.name.name.clone());
                    bound.extend(f.params.iter().map(|p| p.name.name.clone()));
                }
                _ => {}
            }
            stmts.extend(children(s));
            exprs.extend(crate::parse::limits::stmt_exprs(s));
        }
        // Comprehension targets, and every name read.
        let mut reads: Vec<&Expr> = Vec::new();
        let mut attrs: Vec<&Expr> = Vec::new();
        let mut stack = exprs.clone();
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::ListComp { target, .. } => bind(target, &mut bound),
                ExprKind::Name(_) => reads.push(e),
                ExprKind::Attribute { .. } => attrs.push(e),
                _ => {}
            }
            e.for_each_child(&mut |c| stack.push(c));
        }
        let known = |n: &str| bound.contains(n) || self.get_global(n).is_some();
        let mut out = Vec::new();
        let mut seen: HashSet<Rc<str>> = HashSet::new();
        reads.sort_by_key(|e| (e.span.lo, e.span.hi));
        for e in reads {
            let ExprKind::Name(n) = &e.kind else { continue };
            let caught = guarded
                .iter()
                .any(|g| g.file == e.span.file && g.lo <= e.span.lo && e.span.hi <= g.hi);
            if known(n) || caught || !seen.insert(n.clone()) {
                continue;
            }
            let mut d = Diagnostic::new(Code::E0100, format!("name '{n}' is not defined"))
                .at(e.span)
                .with_label("not defined");
            let visible = self.visible_names();
            let candidates = visible.iter().chain(bound.iter()).map(|s| &**s);
            if let Some(s) = suggest(n, candidates) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            out.push(d);
        }
        attrs.sort_by_key(|e| (e.span.lo, e.span.hi));
        for e in attrs {
            let ExprKind::Attribute { value, attr } = &e.kind else {
                continue;
            };
            let ExprKind::Name(m) = &value.kind else {
                continue;
            };
            if bound.contains(m) {
                continue;
            }
            let Some(Value::Module(module)) = self.get_global(m) else {
                continue;
            };
            if module.get(&attr.name).is_some() {
                continue;
            }
            let what = format!("module '{}'", module.name);
            let mut d = Diagnostic::new(
                Code::E0100,
                format!("{what} has no attribute '{}'", attr.name),
            )
            .at(attr.span)
            .with_label("unknown attribute");
            let names = module.names();
            if let Some(s) = suggest(&attr.name, names.iter().map(|s| &**s)) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            out.push(d);
        }
        out.sort_by_key(|d| d.span.map(|s| (s.lo, s.hi)));
        out
    }
}

/// The names a target expression binds (`a`, `a, (b, c)`; not `x[i]` or `x.a`).
fn bind(target: &Expr, bound: &mut HashSet<Rc<str>>) {
    match &target.kind {
        ExprKind::Name(n) => {
            bound.insert(n.clone());
        }
        ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|t| bind(t, bound)),
        _ => {}
    }
}

/// The statements nested in `s` (blocks and function bodies).
fn children(s: &Stmt) -> Vec<&Stmt> {
    match &s.kind {
        StmtKind::If { body, orelse, .. }
        | StmtKind::For { body, orelse, .. }
        | StmtKind::While { body, orelse, .. } => body.iter().chain(orelse).collect(),
        StmtKind::FunctionDef(f) => f.body.iter().collect(),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => body
            .iter()
            .chain(handlers.iter().flat_map(|h| h.body.iter()))
            .chain(orelse)
            .chain(finalbody)
            .collect(),
        _ => Vec::new(),
    }
}
