//! The builtin modules of `.tsr` scripts: `op`, `dist`, `schedule`, `graph`, `autotune`,
//! `target`, as native functions over `tessera-runtime`.

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.
#![allow(clippy::result_large_err)]

pub mod op;
pub mod tensor;

use std::rc::Rc;
use tessera_lang::eval::{Interp, Module, Value};
use tessera_lang::Diagnostic;

/// Session settings from the command line.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `sys.argv`: the script name, then its arguments.
    pub argv: Vec<String>,
    pub target: Option<String>,
    pub device: Option<String>,
}

/// Installs every builtin module into an interpreter.
pub fn install(interp: &mut Interp, cfg: &Config) -> Result<(), Diagnostic> {
    let sys = Module::new("sys", "the script's arguments");
    sys.set(
        "argv",
        Value::list(cfg.argv.iter().map(|a| Value::str(a)).collect()),
    );
    interp.set_builtin("sys", Value::Module(Rc::new(sys)));
    interp.set_builtin("op", Value::Module(Rc::new(op::module())));
    Ok(())
}
