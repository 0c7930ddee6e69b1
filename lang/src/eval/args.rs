//! Call arguments and the binder that matches them to a native function's parameters.

use super::value::Value;
use crate::diag::{Code, Diagnostic};
use crate::span::Span;
use std::rc::Rc;

/// Arguments of one call, with the span of each and of the whole call.
#[derive(Clone, Debug, Default)]
pub struct CallArgs {
    pub positional: Vec<(Value, Span)>,
    pub keywords: Vec<(Rc<str>, Value, Span)>,
    /// The whole call expression.
    pub span: Span,
}

/// One bound argument: its value and where it came from.
#[derive(Clone, Debug)]
pub struct Arg {
    pub value: Value,
    pub span: Span,
}

impl CallArgs {
    /// The same call with every argument value replaced by `f` of it (names and spans kept).
    pub fn try_map<E>(&self, mut f: impl FnMut(&Value) -> Result<Value, E>) -> Result<CallArgs, E> {
        let mut out = CallArgs::new(self.span);
        for (v, s) in &self.positional {
            out.positional.push((f(v)?, *s));
        }
        for (k, v, s) in &self.keywords {
            out.keywords.push((k.clone(), f(v)?, *s));
        }
        Ok(out)
    }

    pub fn new(span: Span) -> CallArgs {
        CallArgs {
            positional: Vec::new(),
            keywords: Vec::new(),
            span,
        }
    }
    pub fn positional(values: Vec<Value>, span: Span) -> CallArgs {
        CallArgs {
            positional: values.into_iter().map(|v| (v, span)).collect(),
            keywords: Vec::new(),
            span,
        }
    }
    pub fn len(&self) -> usize {
        self.positional.len() + self.keywords.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Matches the arguments to parameters: `required` must be given (positionally or by
    /// keyword), `optional` may be. Returns one slot per parameter, in order.
    pub fn bind(
        &self,
        fname: &str,
        required: &[&str],
        optional: &[&str],
    ) -> Result<Vec<Option<Arg>>, Diagnostic> {
        let names: Vec<&str> = required.iter().chain(optional.iter()).copied().collect();
        let mut slots: Vec<Option<Arg>> = vec![None; names.len()];
        if self.positional.len() > names.len() {
            let extra = self
                .positional
                .get(names.len())
                .map(|p| p.1)
                .unwrap_or(self.span);
            return Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "{fname}() takes {} {} but {} were given",
                    arity_text(required.len(), names.len()),
                    if names.len() == 1 {
                        "argument"
                    } else {
                        "arguments"
                    },
                    self.positional.len()
                ),
            )
            .at(extra)
            .with_label("unexpected argument")
            .with_help(signature_help(fname, required, optional)));
        }
        for (slot, (v, s)) in slots.iter_mut().zip(self.positional.iter()) {
            *slot = Some(Arg {
                value: v.clone(),
                span: *s,
            });
        }
        for (name, v, s) in &self.keywords {
            let Some(i) = names.iter().position(|n| **n == **name) else {
                let mut d = Diagnostic::new(
                    Code::E0101,
                    format!("{fname}() got an unexpected keyword argument '{name}'"),
                )
                .at(*s)
                .with_label("unknown keyword");
                if let Some(sug) = crate::diag::suggest(name, names.iter().copied()) {
                    d = d.with_help(format!("did you mean `{sug}`?"));
                } else {
                    d = d.with_help(signature_help(fname, required, optional));
                }
                return Err(d);
            };
            if slots.get(i).is_some_and(|x| x.is_some()) {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{fname}() got multiple values for argument '{name}'"),
                )
                .at(*s));
            }
            if let Some(slot) = slots.get_mut(i) {
                *slot = Some(Arg {
                    value: v.clone(),
                    span: *s,
                });
            }
        }
        for (i, r) in required.iter().enumerate() {
            if slots.get(i).is_some_and(|x| x.is_none()) {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{fname}() missing required argument '{r}'"),
                )
                .at(self.span)
                .with_help(signature_help(fname, required, optional)));
            }
        }
        Ok(slots)
    }
}

fn arity_text(required: usize, total: usize) -> String {
    if required == total {
        format!("{total}")
    } else {
        format!("from {required} to {total}")
    }
}

fn signature_help(fname: &str, required: &[&str], optional: &[&str]) -> String {
    let mut parts: Vec<String> = required.iter().map(|s| s.to_string()).collect();
    parts.extend(optional.iter().map(|s| format!("{s}=…")));
    format!("the signature is {fname}({})", parts.join(", "))
}

/// Slot `i` of a [`CallArgs::bind`] result, which the binder has made sure is given (a
/// required parameter); E0101 if it is not.
pub fn required(slots: &[Option<Arg>], i: usize) -> Result<&Arg, Diagnostic> {
    slots
        .get(i)
        .and_then(|x| x.as_ref())
        .ok_or_else(|| Diagnostic::new(Code::E0101, "missing argument"))
}

/// Slot `i` if it was given and is not `None`.
pub fn given(slots: &[Option<Arg>], i: usize) -> Option<&Arg> {
    slots
        .get(i)
        .and_then(|x| x.as_ref())
        .filter(|x| !matches!(x.value, Value::None))
}

impl Arg {
    fn type_error(&self, what: &str, expected: &str) -> Diagnostic {
        Diagnostic::new(
            Code::E0101,
            format!("{what} must be {expected}, not {}", self.value.type_name()),
        )
        .at(self.span)
    }

    /// The argument as an int (E0101 naming `what` otherwise).
    pub fn int(&self, what: &str) -> Result<i64, Diagnostic> {
        match &self.value {
            Value::Int(i) => Ok(*i),
            _ => Err(self.type_error(what, "an int")),
        }
    }

    /// The argument as a float (an int converts).
    pub fn float(&self, what: &str) -> Result<f64, Diagnostic> {
        match &self.value {
            Value::Int(i) => Ok(*i as f64),
            Value::Float(f) => Ok(*f),
            _ => Err(self.type_error(what, "a number")),
        }
    }

    /// The argument as a bool (an int is true when nonzero, as Python's `bool(1)`).
    pub fn bool(&self, what: &str) -> Result<bool, Diagnostic> {
        match &self.value {
            Value::Bool(b) => Ok(*b),
            Value::Int(i) => Ok(*i != 0),
            _ => Err(self.type_error(what, "a bool")),
        }
    }
}
