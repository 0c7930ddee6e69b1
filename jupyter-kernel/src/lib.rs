//! The Jupyter kernel: the wire protocol (shell, control, iopub, stdin, heartbeat) around one
//! [`tessera_repl::Session`] running on its own thread.
//!
//! - [`wire`]: signature checking, replay guard and decoding of incoming frames.
//! - [`eval`]: the evaluator thread that answers shell requests with the session.
//! - [`kernel`]: the sockets and the tasks that serve them.
//! - [`history`]: the in-memory input history behind `history_request`.
//! - [`spec`]: the kernelspec written by `tessera jupyter install`.

pub mod eval;
pub mod history;
pub mod kernel;
pub mod spec;
pub mod wire;

pub use kernel::{read_connection_file, run_kernel};
pub use spec::{install, InstallTarget};
pub use tessera_repl::SessionOptions;
