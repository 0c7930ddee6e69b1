//! The notebook session shared by the `tessera` REPL and the Jupyter kernel: it keeps variables
//! across cells, runs `:` commands (SPEC §8), and produces every output as a value with a plain
//! text and an HTML rendering.

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.

pub mod commands;
pub mod render;
pub mod session;
pub mod term;

pub use session::{CellOutcome, Completion, IsComplete, Output, Rich, Session, SessionOptions};

/// The stack size of the thread that runs a session: deep recursion in user code must reach
/// the recursion limit (E0500), never overflow the native stack.
pub const EVAL_STACK_BYTES: usize = 1 << 30;

/// Runs `f` on a new thread with [`EVAL_STACK_BYTES`] of stack and waits for it; `None` when the
/// thread cannot start or panicked.
pub fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    std::thread::Builder::new()
        .name("tessera-eval".into())
        .stack_size(EVAL_STACK_BYTES)
        .spawn(f)
        .ok()?
        .join()
        .ok()
}
