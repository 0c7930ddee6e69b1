//! Expressions: name lookup and the evaluation of every expression form.

use super::stmt::target_names;
use super::*;

impl Interp {
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

    pub(super) fn eval(&mut self, e: &Expr, env: &Env) -> R<Value> {
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
                            self.check_text(&v).map_err(|d| d.at(expr.span))?;
                            let v = match conversion {
                                Some('r') => Value::Str(v.repr().into()),
                                Some('s') => Value::Str(v.to_str().into()),
                                Some('a') => Value::Str(format::ascii_escaped(&v.repr()).into()),
                                _ => v,
                            };
                            let spec = format_spec.as_deref().unwrap_or("");
                            let s = format::format_value(&v, spec).map_err(|d| d.at(expr.span))?;
                            self.check_host_size(out.len() + s.len(), 1, || {
                                format!("an f-string of {} + {} bytes", out.len(), s.len())
                            })
                            .map_err(|d| d.at(e.span))?;
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
            ExprKind::Dict(pairs) => {
                let mut d = super::dict::Dict::new();
                for (k, x) in pairs {
                    let key = self.eval(k, env)?;
                    let val = self.eval(x, env)?;
                    d.insert(key, val).map_err(|d| d.at(k.span))?;
                }
                Ok(Value::Dict(Rc::new(RefCell::new(d))))
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
                    self.check_list_len(out.len() + 1, "a list comprehension")
                        .map_err(|d| d.at(e.span))?;
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
}
