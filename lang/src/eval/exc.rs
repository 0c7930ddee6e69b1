//! `try`/`except`/`finally` (SPEC §2): a Tessera error, any code, is caught as `Exception`;
//! the bound value gives its message (`e.args[0]`, `str(e)`) and code (`e.code`).

use super::*;
use crate::ast::Handler;

/// The builtin `Exception`: the one error class an `except` clause names.
pub struct ExceptionType;

impl HostObject for ExceptionType {
    fn type_name(&self) -> &'static str {
        "type"
    }
    fn repr(&self) -> String {
        "<class 'Exception'>".to_string()
    }
}

/// A caught error, as `except Exception as e` binds it.
pub struct ErrorValue {
    pub message: Rc<str>,
    pub code: Code,
}

impl HostObject for ErrorValue {
    fn type_name(&self) -> &'static str {
        "Exception"
    }
    fn repr(&self) -> String {
        format!("Exception({})", Value::Str(self.message.clone()).repr())
    }
    fn str(&self) -> String {
        self.message.to_string()
    }
    fn get_attr(&self, _this: &Value, name: &str, _interp: &mut Interp) -> AttrResult {
        Ok(match name {
            "args" => Some(Value::tuple(vec![Value::Str(self.message.clone())])),
            "code" => Some(Value::Str(self.code.as_str().into())),
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["args", "code"]
    }
}

/// Errors no `except` clause catches: an interrupt (Ctrl-C, a Jupyter interrupt) and the
/// step limit, which stop the cell whatever it does.
fn catchable(d: &Diagnostic) -> bool {
    !is_interrupt(d) && !d.message.starts_with("step limit exceeded")
}

impl Interp {
    pub(super) fn exec_try(
        &mut self,
        body: &[Stmt],
        handlers: &[Handler],
        orelse: &[Stmt],
        finalbody: &[Stmt],
        env: &Env,
    ) -> R<()> {
        let depth = self.depth;
        let r = match self.exec_block(body, env) {
            Err(Flow::Error(d)) if catchable(&d) && !handlers.is_empty() => {
                // the calls the error unwound are over
                self.depth = depth;
                self.handle(*d, handlers, env)
            }
            Ok(()) => self.exec_block(orelse, env),
            other => other,
        };
        if finalbody.is_empty() {
            return r;
        }
        // `finally` runs whatever happened; its own `return`, `break`, `continue` or error
        // replaces the pending one, as in Python
        self.exec_block(finalbody, env)?;
        r
    }

    /// Runs the first clause that matches `d`, or gives `d` back.
    fn handle(&mut self, d: Diagnostic, handlers: &[Handler], env: &Env) -> R<()> {
        for h in handlers {
            if let Some(t) = &h.typ {
                let tv = self.eval(t, env).map_err(|f| match f {
                    Flow::Error(d) if d.code == Code::E0100 => Flow::Error(Box::new(d.with_help(
                        "every Tessera error is caught as `Exception`; `e.code` tells them apart",
                    ))),
                    other => other,
                })?;
                if !self.is_exception_class(&tv, t.span)? {
                    continue;
                }
            }
            let Some(name) = &h.name else {
                return self.exec_block(&h.body, env);
            };
            let e = Value::host(ErrorValue {
                message: d.message.clone().into(),
                code: d.code,
            });
            self.store(&name.name, e, env);
            let r = self.exec_block(&h.body, env);
            // as in Python, the name is unbound when the clause ends
            self.unbind(&name.name, env);
            return r;
        }
        Err(Flow::Error(Box::new(d)))
    }

    /// Whether an `except` clause's class matches a Tessera error: `Exception` or a tuple
    /// holding it; E0101 for anything else that is not an error class.
    fn is_exception_class(&self, v: &Value, span: Span) -> R<bool> {
        match v {
            Value::Host(_) if v.downcast::<ExceptionType>().is_some() => Ok(true),
            Value::Tuple(items) => {
                let mut any = false;
                for x in items.iter() {
                    any |= self.is_exception_class(x, span)?;
                }
                Ok(any)
            }
            other => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "catching '{}' is not allowed: an `except` clause names `Exception`",
                    other.type_name()
                ),
            )
            .at(span)
            .with_label("not an error class")
            .with_help("every Tessera error is caught as `Exception`; `e.code` tells them apart")
            .into()),
        }
    }

    fn unbind(&mut self, name: &Rc<str>, env: &Env) {
        match &env.frame {
            Some(f) if env.locals.contains(name) => {
                f.borrow_mut().vars.remove(name);
            }
            _ => {
                self.globals.borrow_mut().remove(name);
            }
        }
    }
}
