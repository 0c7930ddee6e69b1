//! Tile IR: one kernel's block program — grid/block/warp mapping, shared-memory buffers,
//! copies (async or not), MMA or FMA loops, warp shuffles, barriers, edge masks.
//!
//! One data type, [`TileKernel`]: the launch shape, the shared buffers, the structured body
//! (`tile.for` loops of tile ops, each with the span of the Graph op it comes from) and the
//! [`Shape`] parameters the Target IR lowering instantiates.
//!
//! Invariants (checked by [`verify`]):
//! - `block` has at most 1024 threads and a whole number of warps; `grid` is non-zero;
//! - every shared buffer an op names is declared; total shared memory ≤ 48 KiB (static);
//! - every `tile.copy_async` is followed, before any `tile.mma`/`tile.fma` reading the
//!   buffer, by a `tile.wait` and a `tile.barrier` in the same loop body;
//! - every op has a real span.

pub mod build;
pub mod check;
pub mod ir;
pub mod text;

use crate::graph::print::loc;
use crate::graph::{TensorType, ValueId};
use crate::target::MmaKind;
use std::fmt::Write as _;
use tessera_lang::{SourceMap, Span};

/// What a row kernel computes over the last axis of each row.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RowOp {
    /// `(x - mean) / sqrt(var + eps) · weight + bias` (biased variance).
    LayerNorm {
        eps: f64,
        weight: bool,
        bias: bool,
    },
    /// `x / sqrt(mean(x²) + eps) · weight`.
    RmsNorm {
        eps: f64,
        weight: bool,
    },
    Sum,
    Mean,
    Max,
    Min,
}

impl RowOp {
    pub fn name(self) -> &'static str {
        match self {
            RowOp::LayerNorm { .. } => "layernorm",
            RowOp::RmsNorm { .. } => "rmsnorm",
            RowOp::Sum => "sum",
            RowOp::Mean => "mean",
            RowOp::Max => "max",
            RowOp::Min => "min",
        }
    }
}

/// The batch of a batched matmul: `count` problems along grid z; `a`/`b` say whether that
/// operand has the batch dims (else it is shared by every problem). `count` 1: not batched.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MatmulBatch {
    pub count: u32,
    pub a: bool,
    pub b: bool,
}

impl MatmulBatch {
    pub const NONE: MatmulBatch = MatmulBatch {
        count: 1,
        a: false,
        b: false,
    };
}

/// One source of a copy kernel ([`Shape::Gather`]): output coordinates `c` (row-major over
/// the kernel's `dims`) read element `base + Σ c[d]·strides[d]` of kernel input `input`, when
/// `select` is `None` or `c[select.0]` lies in `select.1..select.2` (a concat segment).
#[derive(Clone, Debug, PartialEq)]
pub struct GatherSrc {
    pub input: usize,
    pub base: i64,
    pub strides: Vec<i64>,
    pub select: Option<(usize, u32, u32)>,
}

/// The batches of an attention whose operands' batch dims broadcast: output batch `z`
/// (row-major coordinates `c` over `dims`) reads batch `Σ c[d]·q[d]` of Q (likewise K, V;
/// a stride is 0 along a broadcast dimension).
#[derive(Clone, Debug, PartialEq)]
pub struct AttnBatch {
    pub dims: Vec<u32>,
    pub q: Vec<u32>,
    pub k: Vec<u32>,
    pub v: Vec<u32>,
}

/// The parameters the Target IR lowering instantiates for this kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A copy kernel (transpose, broadcast, slice, concat): `n` output elements, `vector`
    /// consecutive ones per thread, each read from the first of `sources` that selects it.
    /// `dims` is the output shape with unit dims dropped and contiguous runs merged.
    Gather {
        n: u64,
        vector: u32,
        dims: Vec<u32>,
        sources: Vec<GatherSrc>,
    },
    /// A reduction of `[outer, len, inner]` over the middle axis (`inner` > 1): a block of
    /// 32 columns × 8 row slices (lane ↔ column, so loads are coalesced), fp32 partials
    /// combined through shared memory in a fixed order.
    ReduceAxis {
        op: RowOp,
        outer: u32,
        len: u32,
        inner: u32,
    },
    /// A softmax of `[outer, len, inner]` over the middle axis (`len`): the block mapping of
    /// [`Shape::ReduceAxis`], the max and the sum of exponentials folded through shared memory.
    SoftmaxAxis { outer: u32, len: u32, inner: u32 },
    /// `n` elements, `vector` per thread.
    Elementwise { n: u64, vector: u32 },
    /// `rows × cols`, one warp per row, `warps` rows per block.
    RowSoftmax { rows: u32, cols: u32, warps: u32 },
    /// A normalisation or reduction of `rows × cols`, one warp per row, `warps` rows per
    /// block (a reduction writes one value per row).
    Rows {
        op: RowOp,
        rows: u32,
        cols: u32,
        warps: u32,
    },
    /// FlashAttention forward, fp32 FMA: `batch` independent `[sq, dq]·[sk, dq]ᵀ·[sk, dv]`
    /// problems (grid y), a block of 4 warps per `bm` query rows (`bm / 4` rows per warp),
    /// key tiles of `bn` = 32 (lane ↔ key) through shared memory, online softmax.
    FlashAttention {
        batch: u32,
        sq: u32,
        sk: u32,
        dq: u32,
        dv: u32,
        causal: bool,
        scale: f64,
        bm: u32,
        bn: u32,
        /// `None`: every operand has the output's batch dims.
        bcast: Option<AttnBatch>,
        /// Tensor cores (`kernels::attention_mma`): the MMA, with `bm` 64 and `bn` 64.
        mma: Option<MmaKind>,
    },
    /// `c[m,n] = a[m,k]·b[k,n]` with fp32 FMA: BM×BN×BK tile, 4×4 outputs per thread.
    MatmulFma {
        m: u32,
        n: u32,
        k: u32,
        tile: [u32; 3],
        stages: u32,
        batch: MatmulBatch,
    },
    /// Tensor cores: BM×BN×BK tile, WM×WN warp tile, `mma.sync` of `kind`.
    MatmulMma {
        m: u32,
        n: u32,
        k: u32,
        tile: [u32; 3],
        warp: [u32; 2],
        stages: u32,
        kind: MmaKind,
        batch: MatmulBatch,
    },
}

/// A shared-memory buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Smem {
    pub name: String,
    pub elem_bytes: u32,
    /// `[stages, rows, cols]`.
    pub shape: Vec<u32>,
}

impl Smem {
    pub fn bytes(&self) -> u64 {
        self.shape.iter().map(|&d| u64::from(d)).product::<u64>() * u64::from(self.elem_bytes)
    }
}

/// One op of a block program.
#[derive(Clone, Debug, PartialEq)]
pub enum TileOp {
    /// How threads map onto the data (`block.x -> columns of C`, ...).
    Map(String),
    /// `tile.load %v[idx] {vector, mask}` into registers.
    Load {
        src: String,
        vector: u32,
        masked: bool,
    },
    /// A global → shared copy; `async` is `cp.async` (zero-filled past the edges).
    Copy {
        src: String,
        dst: String,
        bytes: u32,
        is_async: bool,
    },
    Commit,
    Wait(u32),
    Barrier,
    /// `ldmatrix.x4{.trans}` fragments from a shared buffer.
    Ldmatrix {
        src: String,
        trans: bool,
    },
    /// `tiles` MMAs of `shape` per warp per k-step.
    Mma {
        shape: &'static str,
        tiles: u32,
    },
    /// An `rows × cols` register tile of FMAs per thread per k-step.
    Fma {
        rows: u32,
        cols: u32,
    },
    /// Elementwise computation in fp32 registers.
    Compute(String),
    /// A butterfly all-reduce across the warp (`shfl.sync.bfly`).
    ReduceWarp(&'static str),
    /// `tile.store %out {vector, mask}`.
    Store {
        dst: String,
        vector: u32,
        masked: bool,
    },
    For {
        var: String,
        extent: String,
        body: Vec<(TileOp, Span)>,
    },
}

/// One kernel's block program.
#[derive(Clone, Debug, PartialEq)]
pub struct TileKernel {
    pub name: String,
    /// The graph value computed and the graph values read (kernel buffers, in order).
    pub root: ValueId,
    pub inputs: Vec<ValueId>,
    pub ty: TensorType,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub smem: Vec<Smem>,
    pub body: Vec<(TileOp, Span)>,
    pub shape: Shape,
    pub span: Span,
}

impl TileKernel {
    pub fn threads(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }
}

fn print_ops(out: &mut String, ops: &[(TileOp, Span)], depth: usize, sources: &SourceMap) {
    let pad = "  ".repeat(depth);
    for (op, span) in ops {
        let l = loc(sources, *span);
        let text = match op {
            TileOp::Map(s) => format!("tile.map {s}"),
            TileOp::Load {
                src,
                vector,
                masked,
            } => format!(
                "tile.load {src} {{vector = {vector}, mask = {}}}",
                mask(*masked)
            ),
            TileOp::Copy {
                src,
                dst,
                bytes,
                is_async,
            } => format!(
                "{} {src} -> {dst} {{bytes = {bytes}, mask = edge}}",
                if *is_async {
                    "tile.copy_async"
                } else {
                    "tile.copy"
                }
            ),
            TileOp::Commit => "tile.commit".to_string(),
            TileOp::Wait(n) => format!("tile.wait {n}"),
            TileOp::Barrier => "tile.barrier".to_string(),
            TileOp::Ldmatrix { src, trans } => {
                format!("tile.ldmatrix{} {src}", if *trans { ".trans" } else { "" })
            }
            TileOp::Mma { shape, tiles } => format!("tile.mma {shape} x{tiles}"),
            TileOp::Fma { rows, cols } => format!("tile.fma {rows}x{cols}"),
            TileOp::Compute(s) => format!("tile.compute {s}"),
            TileOp::ReduceWarp(op) => format!("tile.reduce_warp {op}"),
            TileOp::Store {
                dst,
                vector,
                masked,
            } => format!(
                "tile.store {dst} {{vector = {vector}, mask = {}}}",
                mask(*masked)
            ),
            TileOp::For { var, extent, body } => {
                let _ = writeln!(out, "{pad}tile.for {var} in 0..{extent} {{   {l}");
                print_ops(out, body, depth + 1, sources);
                let _ = writeln!(out, "{pad}}}");
                continue;
            }
        };
        let _ = writeln!(out, "{pad}{text}   {l}");
    }
}

fn mask(m: bool) -> &'static str {
    if m {
        "edge"
    } else {
        "none"
    }
}

/// Prints a kernel's block program.
pub fn print(k: &TileKernel, sources: &SourceMap) -> String {
    let mut out = String::new();
    let ins: Vec<String> = k.inputs.iter().map(|v| format!("%{}", v.0)).collect();
    let _ = writeln!(
        out,
        "tile.kernel @{}({}) -> %{}: {} grid = [{}, {}, {}] block = [{}, {}, {}] {{   {}",
        k.name,
        ins.join(", "),
        k.root.0,
        k.ty,
        k.grid[0],
        k.grid[1],
        k.grid[2],
        k.block[0],
        k.block[1],
        k.block[2],
        loc(sources, k.span)
    );
    for s in &k.smem {
        let dims: Vec<String> = s.shape.iter().map(|d| d.to_string()).collect();
        let _ = writeln!(
            out,
            "  %{} = tile.alloc shared b{}[{}]",
            s.name,
            s.elem_bytes * 8,
            dims.join(", ")
        );
    }
    print_ops(&mut out, &k.body, 1, sources);
    out.push_str("}\n");
    out
}

/// Checks the invariants in the module docs.
pub fn verify(k: &TileKernel) -> Result<(), String> {
    let t = k.threads();
    if t == 0 || t > 1024 || !t.is_multiple_of(32) {
        return Err(format!(
            "kernel '{}': {t} threads per block (must be 1..=1024 whole warps)",
            k.name
        ));
    }
    if k.grid.contains(&0) {
        return Err(format!("kernel '{}': empty grid", k.name));
    }
    let smem: u64 = k.smem.iter().map(Smem::bytes).sum();
    // the schedule checked the target's own limit; this is the largest of any target
    if smem > 227 * 1024 {
        return Err(format!(
            "kernel '{}': {smem} bytes of shared memory (over 227 KiB)",
            k.name
        ));
    }
    fn walk(k: &TileKernel, ops: &[(TileOp, Span)]) -> Result<(), String> {
        let mut pending = false;
        let mut waited = false;
        for (op, span) in ops {
            if *span == Span::default() {
                return Err(format!("kernel '{}': a tile op has no span", k.name));
            }
            let named = match op {
                TileOp::Copy { dst, is_async, .. } => {
                    if *is_async {
                        pending = true;
                        waited = false;
                    }
                    Some(dst)
                }
                TileOp::Ldmatrix { src, .. } => Some(src),
                TileOp::Wait(_) => {
                    waited = true;
                    None
                }
                TileOp::Barrier => {
                    if waited {
                        pending = false;
                    }
                    None
                }
                TileOp::Mma { .. } | TileOp::Fma { .. } => {
                    if pending {
                        return Err(format!(
                            "kernel '{}': compute reads shared memory with async copies not waited for",
                            k.name
                        ));
                    }
                    None
                }
                TileOp::For { body, .. } => {
                    walk(k, body)?;
                    None
                }
                TileOp::Map(_)
                | TileOp::Load { .. }
                | TileOp::Commit
                | TileOp::Compute(_)
                | TileOp::ReduceWarp(_)
                | TileOp::Store { .. } => None,
            };
            if let Some(n) = named {
                let base = n.split('[').next().unwrap_or(n).trim_start_matches('%');
                if n.starts_with("%smem") && !k.smem.iter().any(|s| s.name == base) {
                    return Err(format!("kernel '{}': undeclared shared buffer {n}", k.name));
                }
            }
        }
        Ok(())
    }
    walk(k, &k.body)
}
