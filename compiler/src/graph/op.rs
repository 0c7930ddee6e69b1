//! The ops of Graph IR: the op vocabulary, matmul epilogues, and what each op reads.

use super::*;

/// One step of a matmul epilogue, applied to the accumulator in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Epilogue {
    /// `acc op operand` (for `add mul maximum minimum` the accumulator may have been on either
    /// side; for `sub div` it is the left operand).
    Binary { op: BinaryOp, operand: ValueId },
    /// `acc op scalar` (a Python scalar, applied exactly like the eager scalar operand).
    Scalar { op: BinaryOp, value: Scalar },
    /// An activation.
    Unary(UnaryOp),
    /// A cast of the result.
    Cast(DType),
    /// An elementwise body applied to the accumulator: `body`'s param 0 is the accumulator
    /// (of the type the steps before give), params 1, … are `inputs` (read at the output
    /// element, broadcast), its one output the new value.
    Body {
        inputs: Vec<ValueId>,
        body: Box<Graph>,
    },
    /// A norm of A before the product ([`Prologue`]): only ever the first step.
    Prologue(Prologue),
}

/// An epilogue step and the span of the op it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct EpilogueStep {
    pub step: Epilogue,
    pub span: Span,
}

/// The ops of Graph IR. Shapes and dtypes of results live in the graph's type table.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The `index`-th parameter of the function.
    Param {
        index: usize,
    },
    /// The `index`-th tensor captured at trace time (a concrete tensor the body closed over).
    Capture {
        index: usize,
    },
    /// A Python scalar; its dtype is the one it takes next to the tensor it meets.
    Const {
        value: Scalar,
    },
    Unary {
        op: UnaryOp,
        x: ValueId,
    },
    Binary {
        op: BinaryOp,
        a: ValueId,
        b: ValueId,
    },
    Where {
        cond: ValueId,
        a: ValueId,
        b: ValueId,
    },
    /// A cast to the result type's dtype.
    Cast {
        x: ValueId,
    },
    /// `a @ b` with an optional requested result dtype and the epilogue fused into it.
    Matmul {
        a: ValueId,
        b: ValueId,
        accum: Option<DType>,
        epilogue: Vec<EpilogueStep>,
        /// `op.matmul(..., tile_shape=(BM, BN, BK))`: this product's tile, as `schedule.tile`
        /// gives every product of the body (SPEC §5).
        tile: Option<[u32; 3]>,
    },
    /// A reduction over one axis (`None`: all of them).
    Reduce {
        op: ReduceOp,
        x: ValueId,
        axis: Option<usize>,
        keepdim: bool,
    },
    /// A row function of the slices along `axis` ([`super::ops::rows`]); `keepdim` for the
    /// ones that write one value per slice.
    Row {
        f: super::ops::rows::RowFn,
        x: ValueId,
        axis: usize,
        keepdim: bool,
    },
    LayerNorm {
        x: ValueId,
        weight: Option<ValueId>,
        bias: Option<ValueId>,
        eps: f64,
    },
    RmsNorm {
        x: ValueId,
        weight: Option<ValueId>,
        eps: f64,
    },
    Transpose {
        x: ValueId,
        perm: Vec<usize>,
    },
    /// A reshape to the result type's shape.
    Reshape {
        x: ValueId,
    },
    /// A broadcast to the result type's shape.
    Broadcast {
        x: ValueId,
    },
    Concat {
        xs: Vec<ValueId>,
        axis: usize,
    },
    Slice {
        x: ValueId,
        items: Vec<SliceItem>,
    },
    FlashAttention {
        q: ValueId,
        k: ValueId,
        v: ValueId,
        causal: bool,
        scale: f64,
    },
    /// The row log-sum-exp of FlashAttention's scores, `log Σ_j exp(scale·q_i·k_j)` over the
    /// keys row `i` sees (`[..., sq]`, fp32; fp64 for fp64 operands): what the backward kernels
    /// recompute the attention probabilities from. Operands share their batch dims.
    AttentionLse {
        q: ValueId,
        k: ValueId,
        causal: bool,
        scale: f64,
    },
    /// One operand's gradient of FlashAttention (`wrt`), with `dout` the output's cotangent,
    /// `lse` the scores' row log-sum-exp and `delta = Σ_c dout·out` per query row. The kernel
    /// recomputes the probabilities tile by tile and never holds a `sq × sk` matrix. Operands
    /// share their batch dims; the result has `wrt`'s shape and `dout`'s dtype.
    AttentionGrad {
        wrt: AttnWrt,
        q: ValueId,
        k: ValueId,
        v: ValueId,
        dout: ValueId,
        lse: ValueId,
        delta: ValueId,
        causal: bool,
        scale: f64,
    },
    /// `conv1d`/`conv2d` (PyTorch's cross-correlation): `x` `[N, C, (H,) W]` (or without N),
    /// `w` `[O, C/groups, (kH,) kW]`, `bias` `[O]`; the padding resolved to zeros per side.
    Conv {
        x: ValueId,
        w: ValueId,
        bias: Option<ValueId>,
        attrs: ConvAttrs,
    },
    /// A 1-d discrete Fourier transform of length `n` along `axis` (NumPy's `fft`, `ifft`,
    /// `rfft`, `irfft` with `n=`, `axis=`, `norm=`), the input placed by `embed`. c64 results
    /// for fp32 (or narrower) operands, c128 for fp64 ones; `irfft` gives the real part's type.
    Fft {
        x: ValueId,
        kind: FftKind,
        axis: usize,
        n: usize,
        norm: FftNorm,
        embed: FftEmbed,
    },
    /// The frequency-domain product of a convolution: `x` `[N, C, ...F]`, `w` `[O, C/groups,
    /// ...F]` complex, the result `[N, O, ...F]` with
    /// `y[n, o, f] = Σ_c x[n, g·C/groups + c, f] · conj(w[o, c, f])` (`g` the group of `o`).
    SpectralMul {
        x: ValueId,
        w: ValueId,
        groups: usize,
    },
    /// An elementwise complex op (the parts, `complex(re, im)`, `+ - *` and negation with a
    /// complex operand; [`ComplexOp`]): `b` is the second operand of a binary one. Never
    /// fused: one kernel each.
    Complex {
        op: ComplexOp,
        a: ValueId,
        b: Option<ValueId>,
    },
    /// `x` indexed along `axis` by an integer tensor (NumPy's `take`, what `x[..., idx]` with
    /// an int list or tensor traces to): the result's shape is `x.shape[..axis]`, then
    /// `index.shape`, then `x.shape[axis+1..]`; a negative index counts from the end; one out
    /// of range is an error when the kernel runs.
    Take {
        x: ValueId,
        index: ValueId,
        axis: usize,
    },
    /// The adjoint of [`Op::Take`]: zeros of the result type with `src`'s slices added at the
    /// positions `index` names along `axis` (repeated indices add up, in index order).
    ScatterAdd {
        index: ValueId,
        src: ValueId,
        axis: usize,
    },
    /// A chain of elementwise ops run as one kernel: `body`'s params are `inputs`; its first
    /// output is the op's value, further outputs are read through [`Op::Result`] (one kernel
    /// writing several tensors: an optimizer's new parameter and moments).
    FusedElementwise {
        inputs: Vec<ValueId>,
        body: Box<Graph>,
    },
    /// A reduction over `axis` of an elementwise body computed in the same kernel (a bias
    /// gradient's sum fused into the kernel producing its operand): the value is `op` of body
    /// output 0; body outputs 1, … are written out by the same kernel and read through
    /// [`Op::Result`] (the operand, when something else reads it too).
    FusedReduce {
        inputs: Vec<ValueId>,
        body: Box<Graph>,
        op: ReduceOp,
        axis: usize,
        keepdim: bool,
    },
    /// Result `index` (≥ 1) of the multi-output op `of` (a [`Op::FusedElementwise`] whose body
    /// has more than `index` outputs): no kernel of its own, the value its kernel wrote.
    Result {
        of: ValueId,
        index: usize,
    },
}

impl Op {
    /// The op's name as printed.
    pub fn name(&self) -> &'static str {
        if let Some(d) = super::ops::def(self) {
            return d.name(self);
        }
        match self {
            Op::Param { .. } => "param",
            Op::Capture { .. } => "capture",
            Op::Const { .. } => "const",
            // the ops of a definition in `ops` (answered above)
            crate::graph::ops::defined_ops!() => "op",
            Op::FlashAttention { .. } => "flash_attention",
            Op::AttentionLse { .. } => "flash_attention_lse",
            Op::AttentionGrad { wrt, .. } => match wrt {
                AttnWrt::Q => "flash_attention_dq",
                AttnWrt::K => "flash_attention_dk",
                AttnWrt::V => "flash_attention_dv",
            },
            Op::FusedElementwise { .. } => "fused_elementwise",
            Op::Result { .. } => "result",
            Op::Conv { attrs, .. } => {
                if attrs.dims == 1 {
                    "conv1d"
                } else {
                    "conv2d"
                }
            }
            Op::FusedReduce { .. } => "fused_reduce",
            Op::Fft { kind, .. } => kind.name(),
            Op::SpectralMul { .. } => "spectral_mul",
            Op::Complex { op, .. } => op.name(),
        }
    }

    /// The values the op reads, in order.
    pub fn operands(&self) -> Vec<ValueId> {
        let mut v = Vec::new();
        self.visit_operands(&mut |x| v.push(x));
        v
    }

    pub(super) fn visit_operands(&self, f: &mut dyn FnMut(ValueId)) {
        match self {
            Op::Param { .. } | Op::Capture { .. } | Op::Const { .. } => {}
            Op::Unary { x, .. }
            | Op::Cast { x }
            | Op::Reduce { x, .. }
            | Op::Row { x, .. }
            | Op::Transpose { x, .. }
            | Op::Reshape { x }
            | Op::Broadcast { x }
            | Op::Slice { x, .. }
            | Op::Fft { x, .. }
            | Op::Result { of: x, .. } => f(*x),
            Op::Binary { a, b, .. }
            | Op::SpectralMul { x: a, w: b, .. }
            | Op::Take { x: a, index: b, .. }
            | Op::ScatterAdd {
                index: a, src: b, ..
            } => {
                f(*a);
                f(*b);
            }
            Op::Where { cond, a, b } => {
                f(*cond);
                f(*a);
                f(*b);
            }
            Op::Complex { a, b, .. } => {
                f(*a);
                if let Some(b) = b {
                    f(*b);
                }
            }
            Op::Matmul { a, b, epilogue, .. } => {
                f(*a);
                f(*b);
                for s in epilogue {
                    match &s.step {
                        Epilogue::Binary { operand, .. } => f(*operand),
                        Epilogue::Body { inputs, .. } => inputs.iter().for_each(|x| f(*x)),
                        Epilogue::Prologue(p) => p.operands().for_each(&mut *f),
                        _ => {}
                    }
                }
            }
            Op::Conv { x, w, bias, .. } => {
                f(*x);
                f(*w);
                if let Some(b) = bias {
                    f(*b);
                }
            }
            Op::LayerNorm {
                x, weight, bias, ..
            } => {
                f(*x);
                if let Some(w) = weight {
                    f(*w);
                }
                if let Some(b) = bias {
                    f(*b);
                }
            }
            Op::RmsNorm { x, weight, .. } => {
                f(*x);
                if let Some(w) = weight {
                    f(*w);
                }
            }
            Op::Concat { xs, .. }
            | Op::FusedElementwise { inputs: xs, .. }
            | Op::FusedReduce { inputs: xs, .. } => {
                for x in xs {
                    f(*x);
                }
            }
            Op::FlashAttention { q, k, v, .. } => {
                f(*q);
                f(*k);
                f(*v);
            }
            Op::AttentionLse { q, k, .. } => {
                f(*q);
                f(*k);
            }
            Op::AttentionGrad {
                q,
                k,
                v,
                dout,
                lse,
                delta,
                ..
            } => {
                for x in [q, k, v, dout, lse, delta] {
                    f(*x);
                }
            }
        }
    }

    /// Rewrites every operand through `f`.
    pub fn map_operands(&mut self, f: &mut dyn FnMut(ValueId) -> ValueId) {
        match self {
            Op::Param { .. } | Op::Capture { .. } | Op::Const { .. } => {}
            Op::Unary { x, .. }
            | Op::Cast { x }
            | Op::Reduce { x, .. }
            | Op::Row { x, .. }
            | Op::Transpose { x, .. }
            | Op::Reshape { x }
            | Op::Broadcast { x }
            | Op::Slice { x, .. }
            | Op::Fft { x, .. }
            | Op::Result { of: x, .. } => *x = f(*x),
            Op::Binary { a, b, .. }
            | Op::SpectralMul { x: a, w: b, .. }
            | Op::Take { x: a, index: b, .. }
            | Op::ScatterAdd {
                index: a, src: b, ..
            } => {
                *a = f(*a);
                *b = f(*b);
            }
            Op::Where { cond, a, b } => {
                *cond = f(*cond);
                *a = f(*a);
                *b = f(*b);
            }
            Op::Complex { a, b, .. } => {
                *a = f(*a);
                if let Some(b) = b {
                    *b = f(*b);
                }
            }
            Op::Matmul { a, b, epilogue, .. } => {
                *a = f(*a);
                *b = f(*b);
                for s in epilogue {
                    match &mut s.step {
                        Epilogue::Binary { operand, .. } => *operand = f(*operand),
                        Epilogue::Body { inputs, .. } => {
                            for x in inputs {
                                *x = f(*x);
                            }
                        }
                        Epilogue::Prologue(p) => {
                            for x in [&mut p.weight, &mut p.bias].into_iter().flatten() {
                                *x = f(*x);
                            }
                        }
                        _ => {}
                    }
                }
            }
            Op::Conv { x, w, bias, .. } => {
                *x = f(*x);
                *w = f(*w);
                if let Some(b) = bias {
                    *b = f(*b);
                }
            }
            Op::LayerNorm {
                x, weight, bias, ..
            } => {
                *x = f(*x);
                if let Some(w) = weight {
                    *w = f(*w);
                }
                if let Some(b) = bias {
                    *b = f(*b);
                }
            }
            Op::RmsNorm { x, weight, .. } => {
                *x = f(*x);
                if let Some(w) = weight {
                    *w = f(*w);
                }
            }
            Op::Concat { xs, .. }
            | Op::FusedElementwise { inputs: xs, .. }
            | Op::FusedReduce { inputs: xs, .. } => {
                for x in xs {
                    *x = f(*x);
                }
            }
            Op::FlashAttention { q, k, v, .. } => {
                *q = f(*q);
                *k = f(*k);
                *v = f(*v);
            }
            Op::AttentionLse { q, k, .. } => {
                *q = f(*q);
                *k = f(*k);
            }
            Op::AttentionGrad {
                q,
                k,
                v,
                dout,
                lse,
                delta,
                ..
            } => {
                for x in [q, k, v, dout, lse, delta] {
                    *x = f(*x);
                }
            }
        }
    }

    /// An elementwise op that `fuse_elementwise` may put into a fused body.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary { .. } | Op::Binary { .. } | Op::Where { .. } | Op::Cast { .. }
        )
    }
}

/// Which operand an [`Op::AttentionGrad`] differentiates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttnWrt {
    Q,
    K,
    V,
}
