//! The `tessera` command line: running scripts, checking them, and golden-output tests.

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.
#![allow(clippy::result_large_err)]

pub mod golden;
pub mod lower;
pub mod script;
