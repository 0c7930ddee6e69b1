//! The kind of kernel a fused group of Graph IR becomes ([`Kind`], [`kind_of`]), and the
//! dtype rules that say whether a matmul or a convolution runs on tensor cores. Graph IR owns
//! them: its op definitions name their kernel kind and the spectral rewrite asks whether the
//! direct convolution would use tensor cores; Schedule IR tiles each kind.

use super::{DType, Op, RowFn};

/// What a kernel computes (one per kind of fused group).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A fused chain of elementwise ops (or one elementwise op).
    Elementwise,
    /// `a @ b` with its epilogue.
    Matmul,
    /// A row function along an axis (`softmax`, `logsumexp`: [`crate::graph::ops::rows`]).
    Row(RowFn),
    LayerNorm,
    RmsNorm,
    /// `sum mean max min` over an axis or all.
    Reduce,
    FlashAttention,
    /// Data movement: transpose, broadcast, concat, slice.
    Copy,
    /// `conv1d`/`conv2d`: a 2-D tile `(BM, BN)` of an output plane per block.
    Conv,
    /// The spectral rewrite's ops: an FFT along an axis (one line per block) or the
    /// frequency-domain product.
    Spectral,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Elementwise => "elementwise",
            Kind::Matmul => "matmul",
            Kind::Row(f) => f.name(),
            Kind::LayerNorm => "layernorm",
            Kind::RmsNorm => "rmsnorm",
            Kind::Reduce => "reduce",
            Kind::FlashAttention => "flash_attention",
            Kind::Copy => "copy",
            Kind::Conv => "conv",
            Kind::Spectral => "spectral",
        }
    }
}

/// The kind of kernel a graph op becomes (`None`: glue, no kernel).
pub fn kind_of(op: &Op) -> Option<Kind> {
    if let Some(d) = super::op_def(op) {
        return d.kernel_kind(op);
    }
    Some(match op {
        Op::Param { .. } | Op::Capture { .. } | Op::Const { .. } | Op::Result { .. } => {
            return None
        }
        Op::FusedElementwise { .. } | Op::Complex { .. } => Kind::Elementwise,
        Op::Conv { .. } => Kind::Conv,
        Op::Fft { .. } | Op::SpectralMul { .. } => Kind::Spectral,
        Op::FusedReduce { .. } => Kind::Reduce,
        // the ops of a definition in `ops` (answered above)
        crate::graph::ops::defined_ops!() => return None,
        Op::FlashAttention { .. } | Op::AttentionLse { .. } | Op::AttentionGrad { .. } => {
            Kind::FlashAttention
        }
    })
}

/// Whether a matmul of these operand dtypes runs on tensor cores by default.
pub fn tensor_core_dtype(a: DType, b: DType) -> bool {
    a == b && matches!(a, DType::BF16 | DType::F16)
}

/// Whether a convolution of `x`, `w` dtypes with `cin_g` input and `cout_g` output channels
/// per group can run as the implicit GEMM on tensor cores: bf16/fp16 pairs, at least 8 input
/// and 16 output channels per group (a depthwise or nearly depthwise convolution would leave
/// most of each MMA empty; it keeps the direct kernel).
pub fn conv_tensor_cores(x: DType, w: DType, cin_g: usize, cout_g: usize) -> bool {
    tensor_core_dtype(x, w) && cin_g >= 8 && cout_g >= 16
}
