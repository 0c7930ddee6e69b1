//! The Jupyter kernel: the wire protocol (shell, control, iopub, stdin, heartbeat) around one
//! [`tessera_repl::Session`] running on its own thread.
