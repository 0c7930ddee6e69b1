//! The `.tsr` front end and host-code evaluator.
//!
//! `source ─lex─▶ tokens ─layout─▶ INDENT/DEDENT ─parse─▶ ast::Module ─eval─▶ values`.
//! This crate knows nothing of tensors: host objects plug in through [`eval::HostObject`].

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.

pub mod ast;
pub mod diag;
pub mod span;

pub use diag::{Code, Diagnostic};
pub use span::{SourceMap, Span};
pub mod eval;
pub mod lex;
pub mod parse;
pub mod read;
