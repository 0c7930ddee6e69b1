//! Tile IR: one kernel's block program, a typed SSA program ([`ir::Kernel`]: global views,
//! shared buffers with their layouts, fragments, `tile.for` loops, copies, barriers, MMAs),
//! built per kind by `kernels` ([`build`]), printed and parsed ([`text`]) and checked
//! ([`check`]).
//!
//! This module also holds what Schedule → Tile decides before a program is built: the
//! [`TileKernel`] record of one scheduled kernel (its launch shape and the [`Shape`]
//! parameters of its kind), from which `kernels::build` makes the program.
//!
//! Invariants of a [`TileKernel`] (checked by [`verify`]): `block` has at most 1024 threads
//! and a whole number of warps; `grid` is non-zero.

pub mod build;
pub mod check;
pub mod ir;
pub mod math;
pub mod opdef;
pub mod ops;
pub mod text;

use crate::graph::{TensorType, ValueId};
use crate::scalar::MmaKind;
use tessera_lang::Span;

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
/// operand has the batch dims (else it is shared by every problem); `bcast`, when the
/// operands' batch dimensions broadcast against each other, maps problem `z` to each
/// operand's problem instead. `count` 1: not batched.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MatmulBatch {
    pub count: u32,
    pub a: bool,
    pub b: bool,
    pub bcast: Option<BatchMap>,
}

/// Broadcast batch dimensions (at most 4): the output's batch sizes and, per dimension, each
/// operand's stride in problems (0 where it broadcasts). Problem `z` (row-major over `dims`)
/// reads A's problem `Σ c_d·a[d]` and B's `Σ c_d·b[d]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BatchMap {
    pub n: usize,
    pub dims: [u32; 4],
    pub a: [u32; 4],
    pub b: [u32; 4],
}

impl MatmulBatch {
    pub const NONE: MatmulBatch = MatmulBatch {
        count: 1,
        a: false,
        b: false,
        bcast: None,
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
/// What a FlashAttention kernel computes. The backward kernels (`kernels::attention_grad`)
/// take blocks of `bm` rows of the operand they differentiate: query rows for `dq`, key rows
/// for `dk` and `dv`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum AttnPart {
    /// `softmax(scale·q·kᵀ)·v`
    Out,
    /// `log Σ_j exp(scale·q_i·k_j)` per query row
    Lse,
    /// the gradient with respect to one operand
    Grad(crate::graph::AttnWrt),
}

/// (row-major coordinates `c` over `dims`) reads batch `Σ c[d]·q[d]` of Q (likewise K, V;
/// a stride is 0 along a broadcast dimension).
#[derive(Clone, Debug, PartialEq)]
pub struct AttnBatch {
    pub dims: Vec<u32>,
    pub q: Vec<u32>,
    pub k: Vec<u32>,
    pub v: Vec<u32>,
}

/// The sizes of a convolution kernel ([`Shape::Conv`]); 1-d as 2-d with height 1.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvDims {
    /// images × output channels: the planes the grid walks (y, continued on z)
    pub planes: u32,
    pub cin: u32,
    pub cout: u32,
    pub groups: u32,
    pub input: [u32; 2],
    pub kernel: [u32; 2],
    pub output: [u32; 2],
    pub stride: [u32; 2],
    pub dilation: [u32; 2],
    /// zeros before the first row and column
    pub pad: [u32; 2],
    pub bias: bool,
    /// the output tile of a block (rows, cols) and the adjacent outputs of a row per thread
    /// (the direct kernel)
    pub tile: [u32; 2],
    pub vector: u32,
    /// `Some`: an implicit GEMM on tensor cores instead of the direct kernel.
    pub mma: Option<ConvMma>,
}

/// A convolution as an implicit GEMM on tensor cores (`kernels::conv_mma`): per group,
/// `out[oc, p] = Σ_k w[oc, k]·col[k, p]` over the output channels of the group (M), the output
/// pixels of every image (N = batch·OH·OW) and the taps × input channels (K, tap-major, the
/// channels of a tap in chunks of `tile[2]`), with `col` gathered from the input on the fly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvMma {
    pub kind: MmaKind,
    /// BM (output channels) × BN (output pixels) × BK (input channels of one tap) per block,
    /// warps of 32×32.
    pub tile: [u32; 3],
}

/// The sizes of an FFT kernel ([`Shape::Fft`]): `outer × inner` lines along the middle
/// axis of `[outer, len_in, inner]` → `[outer, len_out, inner]`, each transformed with
/// length `n` (a power of two), `lines` adjacent ones (`i` to `i + lines − 1`) per block.
#[derive(Clone, Debug, PartialEq)]
pub struct FftDims {
    pub kind: crate::graph::FftKind,
    pub n: u32,
    pub lines: u32,
    pub outer: u32,
    pub inner: u32,
    pub len_in: u32,
    pub len_out: u32,
    /// The input's placement in the line: element `j` at `lo + j·step`.
    pub lo: u32,
    pub step: u32,
    /// What each output is multiplied by (the `norm=`).
    pub scale: f64,
    /// c128 (fp64 arithmetic) rather than c64.
    pub wide: bool,
}

/// The parameters the Target IR lowering instantiates for this kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A 1-d FFT per line (Stockham radix-2 in shared memory, one block per line).
    Fft(FftDims),
    /// The frequency-domain product of a convolution: `[batch, cout, bins]` complex outputs,
    /// one thread each, summed over the `cin / groups` channels of the output's group.
    SpectralMul {
        batch: u32,
        cin: u32,
        cout: u32,
        groups: u32,
        bins: u32,
        wide: bool,
    },
    /// A direct convolution: a block per `tile` of an output plane, each thread `vector`
    /// outputs of a row, each summed over its group's channels and the kernel taps.
    Conv(ConvDims),
    /// `take` (`scatter: false`): output `[outer, k, inner]` read from `x` `[outer, n, inner]`
    /// at row `index[j]`; `scatter_add` (`scatter: true`): output `[outer, n, inner]`, each
    /// element the sum over `j` (in order) of `src[outer, j, inner]` where `index[j]` names its
    /// row. One thread per output element; an index out of range sets the status word.
    Take {
        outer: u32,
        n: u32,
        k: u32,
        inner: u32,
        scatter: bool,
        /// As [`Shape::Elementwise`]'s (one element per thread).
        tile: Option<[u32; 3]>,
    },
    /// A copy kernel (transpose, broadcast, slice, concat): `n` output elements, `vector`
    /// consecutive ones per thread, each read from the first of `sources` that selects it.
    /// `dims` is the output shape with unit dims dropped and contiguous runs merged.
    Gather {
        n: u64,
        vector: u32,
        dims: Vec<u32>,
        sources: Vec<GatherSrc>,
        /// As [`Shape::Elementwise`]'s.
        tile: Option<[u32; 3]>,
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
    /// A row function of `[outer, len, inner]` over the middle axis (`len`): the block mapping
    /// of [`Shape::ReduceAxis`], the max and the sum of exponentials folded through shared
    /// memory, then `out` written.
    ExpAxis {
        out: crate::graph::RowOut,
        outer: u32,
        len: u32,
        inner: u32,
    },
    /// `n` elements, `vector` per thread: consecutive groups of `vector` by global thread, or
    /// with `tile` = (BM, BN, C) one BM×BN tile of the output viewed as rows of C (its last
    /// dim) per block (a 2-D `schedule.tile`).
    Elementwise {
        n: u64,
        vector: u32,
        tile: Option<[u32; 3]>,
    },
    /// `rows × cols`, one warp per row, `warps` rows per block; or, `row_block`, one block
    /// of `warps` warps per row (few long rows: [`row_block`]).
    /// The max and the sum of exponentials of each row, then `out` written.
    RowExp {
        out: crate::graph::RowOut,
        rows: u32,
        cols: u32,
        warps: u32,
        row_block: bool,
    },
    /// A normalisation or reduction of `rows × cols`, mapped as [`Shape::RowExp`] (a
    /// reduction writes one value per row).
    Rows {
        op: RowOp,
        rows: u32,
        cols: u32,
        warps: u32,
        row_block: bool,
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
        /// What the kernel computes: the output, the scores' row log-sum-exp, or a gradient.
        part: AttnPart,
    },
    /// `c[m,n] = a[m,k]·b[k,n]` with fp32 FMA: BM×BN×BK tile, 4×4 outputs per thread.
    MatmulFma {
        m: u32,
        n: u32,
        k: u32,
        tile: [u32; 3],
        stages: u32,
        /// Tiles stream into shared memory with `cp.async` (else a load and a shared store,
        /// `schedule.async_copy(False)`).
        async_copy: bool,
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
        /// As [`Shape::MatmulFma`]'s.
        async_copy: bool,
        batch: MatmulBatch,
    },
}

/// Whether a row kernel takes one block per row rather than one warp: when a warp per row
/// would leave the GPU mostly idle (at most 512 rows: under four warps per SM of an H100)
/// and rows are long enough to share (at least 1024 columns). The block's warps then split
/// each row and combine through `tile.reduce_block`.
pub fn row_block(rows: u64, cols: u64) -> bool {
    rows <= 512 && cols >= 1024
}

/// One scheduled kernel's launch and kind parameters, the input of `kernels::build`.
#[derive(Clone, Debug, PartialEq)]
pub struct TileKernel {
    pub name: String,
    /// The graph value computed and the graph values read (kernel buffers, in order).
    pub root: ValueId,
    pub inputs: Vec<ValueId>,
    pub ty: TensorType,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shape: Shape,
    pub span: Span,
}

impl TileKernel {
    pub fn threads(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }
}

/// A launch shape the verifier rejects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// Not 1..=1024 threads in whole warps.
    Threads { kernel: String, threads: u64 },
    /// A grid dimension of 0.
    EmptyGrid { kernel: String },
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::Threads { kernel, threads } => write!(
                f,
                "kernel '{kernel}': {threads} threads per block (must be 1..=1024 whole warps)"
            ),
            LaunchError::EmptyGrid { kernel } => write!(f, "kernel '{kernel}': empty grid"),
        }
    }
}

/// Checks the invariants in the module docs.
pub fn verify(k: &TileKernel) -> Result<(), LaunchError> {
    let t = k.threads();
    if t == 0 || t > 1024 || !t.is_multiple_of(32) {
        return Err(LaunchError::Threads {
            kernel: k.name.clone(),
            threads: t,
        });
    }
    if k.grid.contains(&0) {
        return Err(LaunchError::EmptyGrid {
            kernel: k.name.clone(),
        });
    }
    Ok(())
}
