//! The notebook session shared by the `tessera` REPL and the Jupyter kernel: it keeps variables
//! across cells, runs `:` commands (SPEC §8), and produces every output as a value with a plain
//! text and an HTML rendering.

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.
#![allow(clippy::result_large_err)]

pub mod session;

pub use session::{CellOutcome, Completion, IsComplete, Output, Rich, Session, SessionOptions};
