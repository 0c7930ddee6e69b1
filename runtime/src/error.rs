//! The runtime's one error type: a SPEC §9 code, a message and an optional help line.

use std::fmt;

pub use tessera_lang::diag::Code;

/// An error raised by a tensor operation. The caller (stdlib) attaches the source span.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeError {
    pub code: Code,
    pub message: String,
    pub help: Option<String>,
    /// The label under the span, where the code's default label would mislead.
    pub label: Option<&'static str>,
}

/// `Result` with [`RuntimeError`].
pub type Result<T> = std::result::Result<T, RuntimeError>;

impl RuntimeError {
    pub fn new(code: Code, message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            code,
            message: message.into(),
            help: None,
            label: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> RuntimeError {
        self.help = Some(help.into());
        self
    }

    /// E0101: wrong arguments.
    pub fn args(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(Code::E0101, message)
    }

    /// E0200: shape mismatch.
    pub fn shape(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(Code::E0200, message)
    }

    /// E0201: dtype error.
    pub fn dtype(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(Code::E0201, message)
    }

    /// E0500: runtime error (index out of range, division by zero, ...).
    pub fn runtime(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(Code::E0500, message)
    }

    /// E0700: resource limit.
    pub fn resource(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(Code::E0700, message)
    }

    /// E0700 "abstract tensor has no data".
    pub fn abstract_read(what: &str) -> RuntimeError {
        let mut e = RuntimeError::new(Code::E0700, "abstract tensor has no data").with_help(format!(
            "`{what}` reads values; an abstract tensor (dist.tensor) has only a shape, dtype and layout"
        ));
        e.label = Some("reads the values of an abstract tensor");
        e
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code.as_str(), self.message)?;
        if let Some(h) = &self.help {
            write!(f, " (help: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for RuntimeError {}

/// The one place a runtime error becomes a diagnostic (the caller adds the span).
impl From<RuntimeError> for tessera_lang::diag::Diagnostic {
    fn from(e: RuntimeError) -> Self {
        let mut d = tessera_lang::diag::Diagnostic::new(e.code, e.message);
        if let Some(l) = e.label {
            d = d.with_label(l);
        }
        match e.help {
            Some(h) => d.with_help(h),
            None => d,
        }
    }
}
