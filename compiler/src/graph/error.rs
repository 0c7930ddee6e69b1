//! Errors of the Graph IR level: one enum, turned into a [`Diagnostic`] at the boundary.

use tessera_lang::{Code, Diagnostic, Span};

#[derive(Clone, Debug, PartialEq)]
pub enum CompileError {
    /// The verifier rejected the IR after `pass`: a compiler bug, shown with the IR dump.
    Internal {
        pass: String,
        message: String,
        span: Option<Span>,
        dump: String,
    },
    /// A lowering level that does not exist yet.
    NotImplemented { level: String, span: Option<Span> },
}

impl CompileError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            CompileError::Internal {
                pass,
                message,
                span,
                dump,
            } => {
                let mut d = Diagnostic::new(
                    Code::E0500,
                    format!("internal compiler error: Graph IR is invalid after `{pass}`: {message}"),
                )
                .with_note(format!("the IR:\n{dump}"))
                .with_help("this is a bug in Tessera, not in your script; please report it with this message");
                if let Some(s) = span {
                    d = d.at(*s).with_label("while compiling this op");
                }
                d
            }
            CompileError::NotImplemented { level, span } => {
                let mut d = Diagnostic::new(
                    Code::E0300,
                    format!("level '{level}' is not implemented yet"),
                )
                .with_help("only level=\"graph\" can be lowered for now");
                if let Some(s) = span {
                    d = d.at(*s).with_label("this level cannot be produced yet");
                }
                d
            }
        }
    }
}
