//! The builtin modules of `.tsr` scripts: `op`, `dist`, `schedule`, `graph`, `autotune`,
//! `target`, `optim`, `plot`, as native functions over `tessera-runtime`.
//!
//! The top-level modules are layered; each uses only modules of the layers below it (no
//! import cycle: `tests/module_layers.rs`). From the bottom:
//!
//! 1. [`table`], [`help_text`], [`device`] (launch diagnostics, the [`device::DeviceTimer`]
//!    interface and the engine's timer), [`crosscheck`] (a trace's `schedule.*` calls fill the compiler's
//!    `schedule::Directives`);
//! 2. [`env`](mod@env), [`profile`] (records into a [`profile::Sink`]), [`help`];
//! 3. [`autotune`]: its state, and [`autotune::tune`] of a [`autotune::Tunable`];
//! 4. [`session`]: the [`session::Session`] the modules share;
//! 5. [`tensor`]: tensors of each kind and the ops over them, one concept whose parts call each
//!    other (a tensor method is an `op` function; the op table calls the eager form,
//!    [`tensor::trace`] or [`tensor::sharded`] by its arguments): eager tensors,
//!    [`tensor::op`], traced and sharded tensors;
//! 6. [`pytree`], [`plot`], [`schedule`], [`target_mod`], [`dist`] (the `dist` module, the
//!    planner, the mesh programs);
//! 7. [`kernel`]: `@op.kernel` and `@op.autotune`, compiled kernels on a session's device;
//! 8. [`pipeline`] (`dist.pipeline`), [`optim`];
//! 9. [`graph_mod`] (with `graph.run_tile`, `run_tile.rs`, which reads only the session and
//!    tensors).
//!
//! [`install`] builds the modules and puts what a higher layer defines into a lower module's
//! namespace (`op.kernel`, `op.autotune`, `dist.pipeline`).

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.

pub mod autotune;
pub mod crosscheck;
pub mod device;
pub mod dist;
pub mod env;
pub mod graph_mod;
pub mod help;
pub mod help_text;
pub mod kernel;
pub mod optim;
pub mod pipeline;
pub mod plot;
pub mod profile;
pub mod pytree;
pub mod schedule;
pub mod session;
pub mod table;
pub mod target_mod;
pub mod tensor;

#[cfg(test)]
mod tests;

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
    /// `--dump` levels: each compiled kernel's IR at that level goes to stderr.
    pub dump: Vec<String>,
    /// `--emit-ptx DIR`.
    pub emit_ptx: Option<std::path::PathBuf>,
    /// `--emit-spirv DIR`.
    pub emit_spirv: Option<std::path::PathBuf>,
}

/// Installs every builtin module into an interpreter.
pub fn install(interp: &mut Interp, cfg: &Config) -> Result<(), Diagnostic> {
    install_session(interp, cfg).map(|_| ())
}

/// [`install`], returning the session the modules share (the profiler, the autotuner and the
/// compile caches live there: `tessera run --profile` and the REPL's `:profile` reach them).
pub fn install_session(
    interp: &mut Interp,
    cfg: &Config,
) -> Result<Rc<session::Session>, Diagnostic> {
    let sys = Module::new("sys", "the script's arguments");
    sys.set(
        "argv",
        Value::list(cfg.argv.iter().map(|a| Value::str(a)).collect()),
    );
    interp.set_builtin("sys", Value::Module(Rc::new(sys)));
    // strings, lists and tuples are bounded like tensors (E0700)
    interp.max_bytes = tessera_runtime::memory::max_bytes();
    let session = session::Session::open(
        cfg.dump.clone(),
        cfg.target.clone(),
        cfg.device.clone(),
        cfg.emit_ptx.clone(),
    )?;
    if let Some(dir) = &cfg.emit_spirv {
        session::writable_dir(dir, "--emit-spirv")?;
        *session.emit_spirv.borrow_mut() = Some(dir.clone());
    }
    let op = tensor::op::module();
    op.set("kernel", kernel::kernel_decorator(session.clone()));
    op.set("autotune", kernel::autotune_decorator(session.clone()));
    interp.set_builtin("op", Value::Module(Rc::new(op)));
    interp.set_builtin(
        "schedule",
        Value::Module(Rc::new(schedule::module(session.clone()))),
    );
    interp.set_builtin(
        "target",
        Value::Module(Rc::new(target_mod::module(session.clone()))),
    );
    interp.set_builtin(
        "autotune",
        Value::Module(Rc::new(autotune::module(session.tune.clone()))),
    );
    let dist = dist::module(session.clone());
    dist.set("pipeline", pipeline::function(session.clone()));
    interp.set_builtin("dist", Value::Module(Rc::new(dist)));
    interp.set_builtin(
        "graph",
        Value::Module(Rc::new(graph_mod::module(session.clone()))),
    );
    interp.set_builtin(
        "optim",
        Value::Module(Rc::new(optim::module(session.clone()))),
    );
    interp.set_builtin("plot", Value::Module(Rc::new(plot::module())));
    help::install(interp);
    Ok(session)
}
