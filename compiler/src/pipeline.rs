//! The lowering pipeline on one screen: optimised Graph IR → Schedule IR (verified against
//! the target) → Tile IR per kernel (verified) → Target IR per kernel (verified by the
//! builder) → PTX. A kernel whose kind is not lowered yet stays in the result with the reason,
//! so a caller can fall back (the CPU executor) and say so.

use crate::arch::Target;
use crate::backend::ptx::TargetError;
use crate::backend::{self, ptx, spirv};
use crate::graph::Graph;
use crate::kernels;
use crate::schedule::lower as to_schedule;
use crate::schedule::{self, Directives, Program, ScheduleError};
use crate::tile::{self, TileKernel};
use tessera_lang::{Code, Diagnostic, SourceMap};

/// One kernel through every level it reached.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// Index into the program's kernels.
    pub index: usize,
    pub tile: Option<TileKernel>,
    /// The kernel's Tile IR program ([`kernels::build`]).
    pub program: Option<tile::ir::Kernel>,
    pub target: Option<ptx::Lowered>,
    /// The kernel as SPIR-V (the `spirv` target only).
    pub spirv: Option<spirv::Spirv>,
    /// Why the kernel stops before Target IR (None when it reached it).
    pub not_lowered: Option<String>,
}

/// A whole graph lowered.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub program: Program,
    pub kernels: Vec<Compiled>,
}

impl ScheduleError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = if self.user {
            Diagnostic::new(Code::E0300, self.message.clone())
        } else {
            Diagnostic::new(
                Code::E0500,
                format!(
                    "internal compiler error: invalid Schedule IR: {}",
                    self.message
                ),
            )
            .with_help("this is a bug in Tessera, not in your script; please report it")
        };
        if let Some(h) = &self.help {
            d = d.with_help(h.clone());
        }
        if let Some(s) = self.span {
            d = d.at(s).with_label(match (self.user, self.call) {
                (true, Some(_)) => "this directive",
                (true, None) => "the schedule of this kernel",
                (false, _) => "while scheduling this op",
            });
        }
        if let Some(c) = self.call {
            d = d.with_secondary(c, "the kernel is compiled for this call");
        }
        d
    }
}

fn internal(kernel: &str, msg: String) -> Diagnostic {
    Diagnostic::new(
        Code::E0500,
        format!("internal compiler error: lowering kernel '{kernel}': {msg}"),
    )
    .with_help("this is a bug in Tessera, not in your script; please report it")
}

/// Lowers an optimised graph for `target`.
pub fn lower(g: &Graph, d: &Directives, target: Target) -> Result<Lowered, Diagnostic> {
    let program = to_schedule::lower(g, d, target).map_err(|e| e.to_diagnostic())?;
    schedule::verify(&program).map_err(|e| e.to_diagnostic())?;
    let mut kernels = Vec::new();
    for (index, k) in program.kernels.iter().enumerate() {
        let mut c = Compiled {
            index,
            tile: None,
            program: None,
            target: None,
            spirv: None,
            not_lowered: None,
        };
        match kernels::lower::lower(&program.graph, k) {
            Ok(tk) => {
                tile::verify(&tk).map_err(|e| internal(&k.name, e.to_string()))?;
                schedule::fit::occupancy_honoured(k, tk.block[0], d)
                    .map_err(|e| e.to_diagnostic())?;
                let lowered = match kernels::build(&program.graph, &tk) {
                    Ok(prog) => {
                        // the back ends take a checked program only: the checker runs in
                        // debug builds (every test); release builds trust the templates
                        let checked = if cfg!(debug_assertions) {
                            tile::check::check(&prog)
                                .map_err(|e| internal(&k.name, format!("invalid Tile IR: {e}")))?
                        } else {
                            tile::check::trusted(&prog)
                        };
                        let mut l = ptx::from_tile::translate(checked);
                        if target.is_spirv() && l.is_ok() {
                            match spirv::translate(checked) {
                                Ok(s) => c.spirv = Some(s),
                                Err(e) => l = Err(e),
                            }
                        }
                        c.program = Some(prog);
                        l
                    }
                    Err(e) => Err(e.into()),
                };
                match lowered {
                    Ok(l) => c.target = Some(l),
                    Err(backend::Error::NotLowered(r)) => c.not_lowered = Some(r),
                    Err(backend::Error::Target(e)) => {
                        return Err(internal(&k.name, target_msg(&e)))
                    }
                }
                c.tile = Some(tk);
            }
            Err(nl) => c.not_lowered = Some(nl.reason),
        }
        kernels.push(c);
    }
    Ok(Lowered { program, kernels })
}

fn target_msg(e: &TargetError) -> String {
    e.to_diagnostic().message
}

impl Lowered {
    /// The kernel whose result is graph value `root`, with what it was compiled to.
    pub fn kernel_at(&self, root: crate::graph::ValueId) -> Option<(&schedule::Kernel, &Compiled)> {
        self.program
            .kernels
            .iter()
            .zip(&self.kernels)
            .find(|(k, _)| k.root == root)
    }
    /// The text of one level (`schedule`, `tile`, `target`, `ptx`) of every kernel.
    pub fn text(&self, level: &str, sources: &SourceMap) -> Result<String, Diagnostic> {
        let p = &self.program;
        if level == "schedule" {
            return Ok(schedule::print(p, sources));
        }
        let mut out = String::new();
        for c in &self.kernels {
            let name = p
                .kernels
                .get(c.index)
                .map(|k| k.name.as_str())
                .unwrap_or("?");
            let kind = p.kernels.get(c.index).map(|k| k.kind.name()).unwrap_or("?");
            let piece = match (level, &c.tile, &c.target) {
                ("tile", _, _) if c.program.is_some() => c
                    .program
                    .as_ref()
                    .map(|k| tile::text::print(k, sources))
                    .unwrap_or_default(),
                ("target", _, Some(l)) => print_target(&l.kernel, sources),
                ("spirv", _, Some(_)) if c.spirv.is_some() => c
                    .spirv
                    .as_ref()
                    .map(|s| {
                        // the module's entry point is `main`: the kernel's name is said here
                        format!("; kernel @{name} ({kind})\n{}", spirv::disassemble(&s.words))
                    })
                    .unwrap_or_default(),
                ("ptx", _, Some(l)) if !p.target.is_spirv() => ptx::print::print_verified(&l.kernel, p.target, sources)
                    .map_err(|e| internal(name, target_msg(&e)))?,
                ("ptx", _, Some(_)) => {
                    format!("// kernel @{name} ({kind}): no ptx code: the target is spirv\n")
                }
                ("spirv", _, Some(_)) => format!(
                    "// kernel @{name} ({kind}): no spirv code: the target is {} (--target spirv)\n",
                    p.target
                ),
                _ => format!(
                    "// kernel @{name} ({kind}): no {level} code: {}\n",
                    c.not_lowered.as_deref().unwrap_or("not lowered")
                ),
            };
            out.push_str(&piece);
        }
        Ok(out)
    }
}

/// Target IR as text: MLIR-like blocks of PTX-spelled instructions, each with its `loc(...)`.
pub fn print_target(k: &crate::backend::ptx::Kernel, sources: &SourceMap) -> String {
    use crate::backend::ptx::Terminator;
    use crate::graph::print::loc;
    use std::fmt::Write as _;
    let names = ptx::print::RegNames::new(k);
    let mut out = String::new();
    let params: Vec<String> = k
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty.ty().name()))
        .collect();
    let _ = writeln!(out, "target.kernel @{}({}) {{", k.name, params.join(", "));
    for s in &k.shared {
        let _ = writeln!(out, "  .shared {}[{}] align {}", s.name, s.size, s.align);
    }
    for b in &k.blocks {
        let _ = writeln!(out, "{}:", b.label);
        for (i, sp) in b.insts.iter().zip(&b.spans) {
            let _ = writeln!(
                out,
                "  {}   {}",
                ptx::print::instr_text(k, &names, i).trim(),
                loc(sources, *sp)
            );
        }
        let label = |id: crate::backend::ptx::BlockId| {
            k.blocks
                .get(id.0 as usize)
                .map(|b| b.label.clone())
                .unwrap_or_default()
        };
        let t = match b.term {
            Terminator::Bra(t) => format!("bra {}", label(t)),
            Terminator::CondBra {
                pred,
                negate,
                then,
                els,
            } => format!(
                "@{}{} bra {}; bra {}",
                if negate { "!" } else { "" },
                names.get(pred),
                label(then),
                label(els)
            ),
            Terminator::Ret => "ret".to_string(),
        };
        let _ = writeln!(out, "  {t}   {}", loc(sources, b.term_span));
    }
    out.push_str("}\n");
    out
}
