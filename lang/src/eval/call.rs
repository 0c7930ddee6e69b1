//! Calls: callables of every kind, parameter binding, attributes and iteration.

use super::*;

impl Interp {
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
        let outer = std::mem::replace(&mut self.frame, env.frame.clone());
        let r = self.exec_block(&def.body, &env);
        self.frame = outer;
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
        let given = args.positional.len();
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
                        "{fname}() takes {} positional argument{} but {given} {} given",
                        n_pos,
                        if n_pos == 1 { "" } else { "s" },
                        if given == 1 { "was" } else { "were" }
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
                // Only the parameters still unbound are worth suggesting.
                let open = params
                    .iter()
                    .zip(&filled)
                    .filter(|(p, f)| !**f && p.kind != ast::ParamKind::VarArgs)
                    .map(|(p, _)| &*p.name.name);
                if let Some(sug) = suggest(&k, open) {
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
            _ => methods::method(v, name),
        };
        match found {
            Some(x) => Ok(x),
            None => {
                let names = Interp::attr_names(v);
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
            Value::Dict(d) => Ok(d.borrow().keys()),
            Value::Str(s) => {
                // each character becomes a one-character string
                self.check_host_size(s.len(), ITEM_BYTES + 32, || {
                    format!("the characters of a string of {} bytes", s.len())
                })
                .map_err(|d| d.at(span))?;
                Ok(s.chars()
                    .map(|c| Value::Str(c.to_string().into()))
                    .collect())
            }
            Value::Range(a, b, s) => {
                let n = value::range_len(*a, *b, *s);
                let items = usize::try_from(n).unwrap_or(usize::MAX);
                self.check_host_size(items, ITEM_BYTES, || format!("a range of {n} items"))
                    .map_err(|d| d.at(span))?;
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
