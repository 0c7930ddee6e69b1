//! The Graph IR pipeline on one screen: verify the trace, then each pass in order, verifying
//! after each. A verifier failure is [`CompileError::Internal`] with the IR dump.

use super::error::CompileError;
use super::passes::{
    dce, flash_attention, fuse_elementwise, fuse_epilogue, fuse_epilogue_body, fuse_multi_output,
    fuse_prologue, fuse_reduce, spectral_conv, PassCx,
};
use super::print::print;
use super::verify::verify;
use super::{Fired, Graph};
use tessera_lang::SourceMap;

/// `schedule.fusion(...)`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fusion {
    #[default]
    Auto,
    /// No fusion pass runs (DCE still does).
    None,
    /// At most this many elementwise ops per fused group.
    Depth(usize),
}

/// Options of the Graph IR pipeline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    pub fusion: Fusion,
    /// The target (the spectral rewrite's cost model).
    pub target: crate::arch::Target,
}

type Pass = fn(&mut Graph, &PassCx) -> Fired;

/// The passes, in order: (name, pass, is a fusion). DCE runs after each fusion so that no
/// pass matches ops a previous one left dead.
const PASSES: &[(&str, Pass, bool)] = &[
    ("dce", dce::run, false),
    // not a fusion: `schedule.fusion(False)` keeps it (it changes how, not whether, the
    // convolution is one kernel)
    ("spectral_conv", spectral_conv::run, false),
    ("dce", dce::run, false),
    ("flash_attention", flash_attention::run, true),
    ("dce", dce::run, false),
    // before the epilogues: the rules that fired read in the kernel's order
    ("fuse_prologue", fuse_prologue::run, true),
    ("dce", dce::run, false),
    ("fuse_epilogue", fuse_epilogue::run, true),
    ("dce", dce::run, false),
    ("fuse_elementwise", fuse_elementwise::run, true),
    ("dce", dce::run, false),
    ("fuse_epilogue_body", fuse_epilogue_body::run, true),
    ("dce", dce::run, false),
    ("fuse_multi_output", fuse_multi_output::run, true),
    ("dce", dce::run, false),
    ("fuse_reduce", fuse_reduce::run, true),
    ("dce", dce::run, false),
];

/// Checks `g` and names the step in the error.
pub fn check(g: &Graph, after: &str, sources: &SourceMap) -> Result<(), CompileError> {
    verify(g).map_err(|e| CompileError::Internal {
        pass: after.to_string(),
        message: e.message,
        span: e.span,
        dump: print(g, sources),
    })
}

/// Optimises a traced graph in place; returns what fired.
pub fn optimize(g: &mut Graph, opts: &Options, sources: &SourceMap) -> Result<Fired, CompileError> {
    check(g, "trace", sources)?;
    let cx = PassCx {
        max_fused_ops: match opts.fusion {
            Fusion::Depth(n) => Some(n),
            Fusion::Auto | Fusion::None => None,
        },
        target: opts.target,
    };
    let mut fired = Fired::default();
    for (name, pass, is_fusion) in PASSES {
        if *is_fusion && opts.fusion == Fusion::None {
            continue;
        }
        fired.extend(pass(g, &cx));
        check(g, name, sources)?;
    }
    Ok(fired)
}
