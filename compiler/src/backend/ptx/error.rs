//! The Target IR layer's one error type: facts, not text; text is written in `Display` and
//! `to_diagnostic` only.

use super::{Target, Ty};
use tessera_lang::{Code, Diagnostic, Span};

/// Where in a kernel: a block and an instruction index (`None`: the terminator).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct At {
    pub block: u32,
    pub inst: Option<u32>,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.inst {
            Some(i) => write!(f, "block {} instruction {}", self.block, i),
            None => write!(f, "block {} terminator", self.block),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum TargetError {
    /// The kernel or a parameter/shared/label name is not a PTX identifier.
    BadName {
        name: String,
    },
    /// Two of the kernel's names (parameters, shared arrays, block labels, the kernel) are
    /// the same.
    DuplicateName {
        name: String,
    },
    NoBlocks,
    /// A block's span table does not have one span per instruction.
    SpanTable {
        block: u32,
    },
    /// An instruction or terminator has no real span.
    MissingSpan {
        at: At,
    },
    /// A register, block, parameter or shared id out of range.
    OutOfRange {
        at: At,
        what: &'static str,
        index: u32,
        span: Span,
    },
    /// A register read before any write (in block order).
    Undefined {
        at: At,
        reg: u32,
        span: Span,
    },
    /// A register's type does not fit the instruction (PTX operand type rules).
    TypeMismatch {
        at: At,
        reg: u32,
        expected: Ty,
        found: Ty,
        span: Span,
    },
    /// An immediate where the instruction takes none, or of the wrong kind.
    BadImmediate {
        at: At,
        expected: Ty,
        span: Span,
    },
    /// An instruction form PTX does not have (reason says which rule).
    Invalid {
        at: At,
        reason: &'static str,
        span: Span,
    },
    /// Valid IR the target cannot run.
    Unsupported {
        what: &'static str,
        target: Target,
        span: Span,
    },
    /// Static shared memory over the target's limit.
    SharedTooLarge {
        bytes: u32,
        limit: u32,
        target: Target,
    },
    /// `.maxntid` over the target's limit.
    TooManyThreads {
        threads: u32,
        limit: u32,
        target: Target,
    },
    /// A span's file is not in the source map given to the printer.
    UnknownFile {
        file: u32,
    },
}

impl TargetError {
    /// Where in the source, if anywhere (a `loc(unknown)` span is nowhere).
    pub fn span(&self) -> Option<Span> {
        let span = match self {
            TargetError::OutOfRange { span, .. }
            | TargetError::Undefined { span, .. }
            | TargetError::TypeMismatch { span, .. }
            | TargetError::BadImmediate { span, .. }
            | TargetError::Invalid { span, .. }
            | TargetError::Unsupported { span, .. } => Some(*span),
            TargetError::BadName { .. }
            | TargetError::DuplicateName { .. }
            | TargetError::NoBlocks
            | TargetError::SpanTable { .. }
            | TargetError::MissingSpan { .. }
            | TargetError::SharedTooLarge { .. }
            | TargetError::TooManyThreads { .. }
            | TargetError::UnknownFile { .. } => None,
        };
        span.filter(|s| s.file != super::NO_FILE)
    }

    /// Whether this is a compiler bug (IR that should never have been built) rather than a
    /// limit of the target.
    pub fn is_internal(&self) -> bool {
        !matches!(
            self,
            TargetError::Unsupported { .. }
                | TargetError::SharedTooLarge { .. }
                | TargetError::TooManyThreads { .. }
        )
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(Code::E0300, self.to_string());
        if let Some(s) = self.span() {
            d = d.at(s);
        }
        if self.is_internal() {
            d = d.with_note("internal compiler error: Target IR did not verify (please report it)");
        }
        d
    }
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::BadName { name } => write!(f, "`{name}` is not a PTX identifier"),
            TargetError::DuplicateName { name } => write!(
                f,
                "the PTX name `{name}` is given twice (parameters, shared arrays and block labels need distinct names)"
            ),
            TargetError::NoBlocks => write!(f, "kernel has no blocks"),
            TargetError::SpanTable { block } => {
                write!(
                    f,
                    "block {block}: span table does not match its instructions"
                )
            }
            TargetError::MissingSpan { at } => write!(f, "{at}: no source span"),
            TargetError::OutOfRange {
                at, what, index, ..
            } => {
                write!(f, "{at}: {what} {index} out of range")
            }
            TargetError::Undefined { at, reg, .. } => {
                write!(f, "{at}: register %{reg} read before it is written")
            }
            TargetError::TypeMismatch {
                at,
                reg,
                expected,
                found,
                ..
            } => write!(
                f,
                "{at}: register %{reg} is .{} where .{} is expected",
                found.name(),
                expected.name()
            ),
            TargetError::BadImmediate { at, expected, .. } => {
                write!(
                    f,
                    "{at}: immediate operand does not fit .{}",
                    expected.name()
                )
            }
            TargetError::Invalid { at, reason, .. } => write!(f, "{at}: {reason}"),
            TargetError::Unsupported { what, target, .. } => {
                write!(f, "{what} is not supported on {target}")
            }
            TargetError::SharedTooLarge {
                bytes,
                limit,
                target,
            } => write!(
                f,
                "kernel uses {bytes} bytes of static shared memory; {target} allows {limit}"
            ),
            TargetError::TooManyThreads {
                threads,
                limit,
                target,
            } => write!(
                f,
                "kernel asks for {threads} threads per block; {target} allows {limit}"
            ),
            TargetError::UnknownFile { file } => write!(f, "span refers to unknown file {file}"),
        }
    }
}

impl std::error::Error for TargetError {}
