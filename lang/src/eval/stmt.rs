//! Statements: blocks, assignment targets, item and augmented assignment.

use super::*;

impl Interp {
    pub(super) fn exec_block(&mut self, body: &[Stmt], env: &Env) -> R<()> {
        for s in body {
            self.exec_stmt(s, env)?;
        }
        Ok(())
    }

    pub(super) fn exec_stmt(&mut self, stmt: &Stmt, env: &Env) -> R<()> {
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
            StmtKind::Global(_) => {}
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => self.exec_try(body, handlers, orelse, finalbody, env)?,
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

    pub(super) fn store(&mut self, name: &Rc<str>, v: Value, env: &Env) {
        match &env.frame {
            // a function's assignments bind its locals; any other name it assigns was
            // declared `global`
            Some(_) if !env.locals.contains(name) => {
                self.globals.borrow_mut().insert(name.clone(), v);
            }
            Some(f) => {
                f.borrow_mut().vars.insert(name.clone(), v);
            }
            None => {
                self.globals.borrow_mut().insert(name.clone(), v);
            }
        }
    }

    pub(super) fn assign(&mut self, target: &Expr, v: Value, env: &Env) -> R<()> {
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
            Value::Dict(d) => {
                let n = d.borrow().len();
                self.check_dict_len(n + 1).map_err(|e| e.at(span))?;
                d.borrow_mut()
                    .insert(idx.clone(), v)
                    .map_err(|e| e.at(idx_span))?;
                Ok(())
            }
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
                        self.check_list_len(
                            (len - (hi - lo).min(len)).saturating_add(items.len()),
                            "assigning to a slice of a list",
                        )
                        .map_err(|d| d.at(span))?;
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
            Value::Host(h) => match h.setitem(idx, v) {
                Some(r) => r.map_err(|d| d.or_at(span).into()),
                None => Err(not_assignable(container, span)),
            },
            _ => Err(not_assignable(container, span)),
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
                    let n = l.borrow().len();
                    self.check_list_len(n.saturating_add(items.len()), "extending a list")
                        .map_err(|d| d.at(span))?;
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
                StmtKind::Try {
                    body,
                    handlers,
                    orelse,
                    finalbody,
                } => {
                    walk(body, out);
                    for h in handlers {
                        if let Some(n) = &h.name {
                            out.push(n.name.clone());
                        }
                        walk(&h.body, out);
                    }
                    walk(orelse, out);
                    walk(finalbody, out);
                }
                StmtKind::Global(_)
                | StmtKind::Expr(_)
                | StmtKind::Return(_)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Pass
                | StmtKind::Assert { .. } => {}
            }
        }
    }
    walk(&def.body, &mut out);
    // names declared `global` anywhere in the body are not locals
    let mut globals: Vec<Rc<str>> = Vec::new();
    let mut todo: Vec<&[Stmt]> = vec![&def.body];
    while let Some(stmts) = todo.pop() {
        for s in stmts {
            match &s.kind {
                StmtKind::Global(names) => globals.extend(names.iter().map(|n| n.name.clone())),
                StmtKind::If { body, orelse, .. }
                | StmtKind::While { body, orelse, .. }
                | StmtKind::For { body, orelse, .. } => {
                    todo.push(body);
                    todo.push(orelse);
                }
                StmtKind::Try {
                    body,
                    handlers,
                    orelse,
                    finalbody,
                } => {
                    todo.push(body);
                    todo.push(orelse);
                    todo.push(finalbody);
                    todo.extend(handlers.iter().map(|h| h.body.as_slice()));
                }
                _ => {}
            }
        }
    }
    out.retain(|n| !globals.contains(n));
    out.sort();
    out.dedup();
    out
}

pub(super) fn target_names(t: &Expr, out: &mut Vec<Rc<str>>) {
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

fn not_assignable(container: &Value, span: Span) -> Flow {
    Diagnostic::new(
        Code::E0101,
        format!(
            "'{}' object does not support item assignment",
            container.type_name()
        ),
    )
    .at(span)
    .into()
}
