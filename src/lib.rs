//! The `tessera` command line: running scripts, checking them, and golden-output tests.

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.

pub mod explain;
pub mod golden;
pub mod guide;
pub mod lower;
pub mod reference;
pub mod script;
