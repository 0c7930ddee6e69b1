//! Schedule IR: how an optimised graph is split into kernels and how each kernel is tiled.
//!
//! One data type, [`Program`]: the optimised Graph IR it schedules plus one [`Kernel`] per
//! fused group (a graph op that does work: fused elementwise, matmul with its epilogue, a row
//! reduction, flash attention, a data movement op). Glue (`param`, `capture`, `const`,
//! `reshape`) is no kernel. Each kernel has a [`Schedule`]: tile sizes, warp tile, pipeline
//! stages, vector width, tensor cores, async copies, threads per block.
//!
//! Invariants (checked by [`verify`] against the [`Target`]; a violation caused by a user's
//! directive is E0300 naming the number that breaks the target):
//! - `root` is a value of the graph and `inputs` are its operands, in order;
//! - with tensor cores on, BM, BN, BK are multiples of the MMA shape m16n8k16 and the warp tile
//!   divides the block tile (and is itself a multiple of 16×8);
//! - shared memory per block, `stages × (BM·BK + BK·BN) × bytes`, is within the target's limit;
//! - at most 1024 threads per block (the target's limit).

pub mod directives;
pub mod fit;
pub mod lower;
pub mod mesh;

pub use directives::{AutotuneOpts, Directive, Directives, SearchSpace};
pub use fit::{verify_kernel, Blame};

use crate::arch::Target;
pub use crate::graph::kind::{conv_tensor_cores, kind_of, tensor_core_dtype, Kind};
use crate::graph::print::loc;
use crate::graph::{DType, Graph, Op, TensorType, ValueId};
use std::fmt::Write as _;
use tessera_lang::{SourceMap, Span};

/// The shared memory a matmul's norm prologue adds to its tiles: its rows' statistics (mean
/// and 1/std, 2·BM fp32, or fp64 for an fp64 A); 0 for other kernels.
pub fn prologue_smem(g: &Graph, k: &Kernel) -> u64 {
    match g.op(k.root) {
        Some(op @ Op::Matmul { a, .. }) if crate::graph::prologue_of(op).is_some() => {
            let es = match g.ty(*a).map(|t| t.dtype) {
                Some(DType::F64) => 8,
                _ => 4,
            };
            2 * u64::from(k.schedule.tile[0]) * es
        }
        _ => 0,
    }
}

/// How one kernel is tiled.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// (BM, BN, BK) for matmul; (rows per block, 1, 1) for row kernels; (elements per block,
    /// 1, 1) for elementwise.
    pub tile: [u32; 3],
    /// (WM, WN): the warp tile of a matmul (16×8 multiples with tensor cores).
    pub warp: [u32; 2],
    pub stages: u32,
    pub vector: u32,
    pub tensor_cores: bool,
    pub async_copy: bool,
    pub threads: u32,
    /// Operand element size in bytes (for the shared-memory budget).
    pub elem_bytes: u32,
}

impl Schedule {
    /// Shared memory per block: `stages × (BM·BK + BK·BN) × bytes` for a matmul, 0 otherwise.
    pub fn smem_bytes(&self, kind: Kind) -> u64 {
        match kind {
            Kind::Matmul => {
                // saturating: tile sizes from a directive or a cache entry can be anything
                let [bm, bn, bk] = self.tile.map(u64::from);
                let per_stage = bm.saturating_mul(bk).saturating_add(bk.saturating_mul(bn));
                u64::from(self.stages)
                    .saturating_mul(per_stage)
                    .saturating_mul(u64::from(self.elem_bytes))
            }
            Kind::Elementwise
            | Kind::Row(_)
            | Kind::LayerNorm
            | Kind::RmsNorm
            | Kind::Reduce
            | Kind::FlashAttention
            | Kind::Copy => 0,
            // the implicit GEMM: two stages of A (BM × (BK + 8)) and B (BK × (BN + 8))
            Kind::Conv if self.tensor_cores => {
                let [bm, bn, bk] = self.tile.map(u64::from);
                let per_stage = bm
                    .saturating_mul(bk.saturating_add(8))
                    .saturating_add(bk.saturating_mul(bn.saturating_add(8)));
                2u64.saturating_mul(per_stage).saturating_mul(2)
            }
            Kind::Conv => 0,
            // one line of complex values (8 bytes each for c64) and its twiddles
            Kind::Spectral => u64::from(self.tile[0]).saturating_mul(12),
        }
    }
}

/// One kernel: a fused group of the graph and its schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub kind: Kind,
    /// The graph value the kernel computes.
    pub root: ValueId,
    /// The graph values it reads (tensor operands, in operand order).
    pub inputs: Vec<ValueId>,
    pub ty: TensorType,
    pub span: Span,
    pub schedule: Schedule,
}

/// A scheduled graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub graph: Graph,
    pub target: Target,
    pub kernels: Vec<Kernel>,
}

/// A schedule a target cannot run (E0300) or a broken invariant.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleError {
    pub message: String,
    pub help: Option<String>,
    pub span: Option<Span>,
    /// A user error (E0300), not a compiler bug.
    pub user: bool,
    /// The kernel call, when the primary span is the directive that breaks the limit.
    pub call: Option<Span>,
}

/// Whether a matmul asks for tf32 tensor cores: fp32-stored operands that are both tf32, or a
/// tf32 accumulator dtype (the CPU then rounds both operands to tf32 and accumulates in fp32).
pub fn mma_tf32(a: DType, b: DType, accum: Option<DType>) -> bool {
    let f = |d: DType| matches!(d, DType::F32 | DType::TF32);
    f(a) && f(b) && ((a == DType::TF32 && b == DType::TF32) || accum == Some(DType::TF32))
}

/// Prints a program: one line per kernel with its schedule and location.
pub fn print(p: &Program, sources: &SourceMap) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedule @{} target = {} {{",
        p.graph.name,
        p.target.name()
    );
    for k in &p.kernels {
        let ins: Vec<String> = k.inputs.iter().map(|v| format!("%{}", v.0)).collect();
        let s = &k.schedule;
        let mut attrs = vec![];
        match k.kind {
            Kind::Matmul => {
                attrs.push(format!(
                    "tile = [{}, {}, {}]",
                    s.tile[0], s.tile[1], s.tile[2]
                ));
                attrs.push(format!("warp = [{}, {}]", s.warp[0], s.warp[1]));
                attrs.push(format!("stages = {}", s.stages));
                attrs.push(format!("tensor_cores = {}", s.tensor_cores));
                attrs.push(format!("async_copy = {}", s.async_copy));
                let norm = p.graph.op(k.root).and_then(crate::graph::prologue_of);
                attrs.push(format!(
                    "smem = {}",
                    s.smem_bytes(k.kind) + prologue_smem(&p.graph, k)
                ));
                if let Some(n) = norm {
                    attrs.push(format!("prologue = {}", n.norm.name()));
                }
            }
            Kind::Elementwise | Kind::Copy if s.tile[2] == 0 => {
                attrs.push(format!("tile = [{}, {}]", s.tile[0], s.tile[1]));
                attrs.push(format!("vector = {}", s.vector));
            }
            Kind::Elementwise | Kind::Copy => {
                attrs.push(format!("block_elems = {}", s.tile[0]));
                attrs.push(format!("vector = {}", s.vector));
            }
            Kind::Conv if s.tensor_cores => {
                attrs.push("implicit_gemm".to_string());
                attrs.push(format!(
                    "tile = [{}, {}, {}]",
                    s.tile[0], s.tile[1], s.tile[2]
                ));
                attrs.push(format!("warp = [{}, {}]", s.warp[0], s.warp[1]));
                attrs.push("tensor_cores = true".to_string());
                attrs.push(format!("smem = {}", s.smem_bytes(k.kind)));
            }
            Kind::Conv => {
                attrs.push(format!("tile = [{}, {}]", s.tile[0], s.tile[1]));
                attrs.push(format!("vector = {}", s.vector));
            }
            Kind::Spectral => {
                attrs.push(format!("line = {}", s.tile[0]));
            }
            Kind::FlashAttention => {
                attrs.push(format!("block_q = {}", s.tile[0]));
                attrs.push(format!("block_k = {}", s.tile[1]));
            }
            Kind::Row(_) | Kind::LayerNorm | Kind::RmsNorm | Kind::Reduce => {
                attrs.push(format!("rows_per_block = {}", s.tile[0]));
                attrs.push("warp_per_row".to_string());
            }
        }
        attrs.push(format!("threads = {}", s.threads));
        let _ = writeln!(
            out,
            "  kernel @{} = {} %{}({}) {{{}}} : {}   {}",
            k.name,
            k.kind.name(),
            k.root.0,
            ins.join(", "),
            attrs.join(", "),
            k.ty,
            loc(sources, k.span)
        );
    }
    let outs: Vec<String> = p
        .graph
        .outputs
        .iter()
        .map(|v| format!("%{}", v.0))
        .collect();
    let _ = writeln!(out, "  return {}", outs.join(", "));
    out.push_str("}\n");
    out
}

/// Checks the whole program: structure first (a compiler bug if broken), then each schedule.
pub fn verify(p: &Program) -> Result<(), ScheduleError> {
    for k in &p.kernels {
        let op = p.graph.op(k.root).ok_or_else(|| ScheduleError {
            message: format!(
                "kernel '{}' computes %{}, not a graph value",
                k.name, k.root.0
            ),
            help: None,
            span: Some(k.span),
            user: false,
            call: None,
        })?;
        if kind_of(op) != Some(k.kind) {
            return Err(ScheduleError {
                message: format!(
                    "kernel '{}' has kind {} but computes {}",
                    k.name,
                    k.kind.name(),
                    op.name()
                ),
                help: None,
                span: Some(k.span),
                user: false,
                call: None,
            });
        }
        let ops = op.operands();
        let tensors: Vec<ValueId> = ops
            .into_iter()
            .filter(|v| !matches!(p.graph.op(*v), Some(Op::Const { .. })))
            .collect();
        if tensors != k.inputs {
            return Err(ScheduleError {
                message: format!("kernel '{}' inputs are not its op's operands", k.name),
                help: None,
                span: Some(k.span),
                user: false,
                call: None,
            });
        }
        verify_kernel(&p.graph, k, p.target, &Blame::call(k.span))?;
    }
    Ok(())
}
