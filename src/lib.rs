//! The `tessera` command line: running scripts, checking them, and golden-output tests.

pub mod golden;
pub mod script;
