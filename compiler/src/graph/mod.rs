//! Graph IR: what a traced kernel computes — tensor ops with shapes, dtypes and the `.tsr`
//! span each came from.
//!
//! One data type, [`Graph`]: an arena of ops where op `i` defines value `ValueId(i)` (one result
//! per op). Invariants (checked by [`verify::verify`], run after every pass):
//! - every operand of op `i` is a value `< i` (defined before use); outputs are in range;
//! - `params[k]` is an [`Op::Param`] with `index == k`;
//! - every op has a real span (never `Span::default()`), kept in a side table so op equality
//!   ignores spans;
//! - each op's type is the one [`infer::infer`] computes from its operands;
//! - the body of an [`Op::FusedElementwise`] is a graph of elementwise ops whose params have the
//!   inputs' types and whose first output has the fused op's type; the others, of the same
//!   shape, are read by [`Op::Result`] ops (a multi-output op's value and results are one
//!   kernel's).

mod complex_op;
mod conv_attrs;
mod prologue;
pub use complex_op::ComplexOp;
pub use conv_attrs::{ConvAlgorithm, ConvAttrs, ConvSizes, FftEmbed, FftKind, FftNorm};
pub use prologue::{prologue_dtype, prologue_of, split_steps, NormKind, Prologue};
pub mod autodiff;
mod derivs;
pub mod error;
pub mod infer;
pub mod passes;
pub mod pipeline;
pub mod print;
mod types;
pub mod update;
pub mod verify;

#[cfg(test)]
mod tests;

/// A bf16 matmul graph `[m,k] @ [k,n]`, for the cost model's and the autotuner's tests.
#[cfg(test)]
pub(crate) fn bf16_matmul(m: usize, n: usize, k: usize) -> Graph {
    let mut g = Graph::new("mm");
    let sp = Span::new(0, 0, 0);
    let a = g.push(
        Op::Param { index: 0 },
        TensorType::new(vec![m, k], DType::BF16),
        sp,
    );
    let b = g.push(
        Op::Param { index: 1 },
        TensorType::new(vec![k, n], DType::BF16),
        sp,
    );
    let c = g.push(
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
        },
        TensorType::new(vec![m, n], DType::BF16),
        sp,
    );
    g.outputs = vec![c];
    g
}

pub use types::{
    BinaryOp, BinaryResult, BinaryRow, BinaryVjp, DType, OpVjp, ReduceOp, ReduceResult, ReduceRow,
    ReduceVjp, Scalar, SliceItem, TensorType, UnaryOp, UnaryResult, UnaryRow, UnaryVjp, BINARY_OPS,
    REDUCE_OPS, UNARY_OPS,
};

use tessera_lang::Span;

/// A value of a [`Graph`]: the result of the op with the same index.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

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
    },
    /// A reduction over one axis (`None`: all of them).
    Reduce {
        op: ReduceOp,
        x: ValueId,
        axis: Option<usize>,
        keepdim: bool,
    },
    Softmax {
        x: ValueId,
        axis: usize,
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
        match self {
            Op::Param { .. } => "param",
            Op::Capture { .. } => "capture",
            Op::Const { .. } => "const",
            Op::Unary { op, .. } => op.name(),
            Op::Binary { op, .. } => op.name(),
            Op::Where { .. } => "where",
            Op::Cast { .. } => "cast",
            Op::Matmul { .. } => "matmul",
            Op::Reduce { op, .. } => op.name(),
            Op::Softmax { .. } => "softmax",
            Op::LayerNorm { .. } => "layernorm",
            Op::RmsNorm { .. } => "rmsnorm",
            Op::Transpose { .. } => "transpose",
            Op::Reshape { .. } => "reshape",
            Op::Broadcast { .. } => "broadcast",
            Op::Concat { .. } => "concat",
            Op::Slice { .. } => "slice",
            Op::FlashAttention { .. } => "flash_attention",
            Op::AttentionLse { .. } => "flash_attention_lse",
            Op::AttentionGrad { wrt, .. } => match wrt {
                AttnWrt::Q => "flash_attention_dq",
                AttnWrt::K => "flash_attention_dk",
                AttnWrt::V => "flash_attention_dv",
            },
            Op::FusedElementwise { .. } => "fused_elementwise",
            Op::Result { .. } => "result",
            Op::Take { .. } => "take",
            Op::Conv { attrs, .. } => {
                if attrs.dims == 1 {
                    "conv1d"
                } else {
                    "conv2d"
                }
            }
            Op::FusedReduce { .. } => "fused_reduce",
            Op::ScatterAdd { .. } => "scatter_add",
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

    fn visit_operands(&self, f: &mut dyn FnMut(ValueId)) {
        match self {
            Op::Param { .. } | Op::Capture { .. } | Op::Const { .. } => {}
            Op::Unary { x, .. }
            | Op::Cast { x }
            | Op::Reduce { x, .. }
            | Op::Softmax { x, .. }
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
            | Op::Softmax { x, .. }
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

/// A scalar's kind and exact bits.
fn scalar_bits(s: Scalar) -> (u8, u64) {
    match s {
        Scalar::Int(i) => (0, i as u64),
        Scalar::Float(f) => (1, f.to_bits()),
        Scalar::Bool(b) => (2, u64::from(b)),
    }
}

/// A traced function: params, ops, outputs. See the module docs for the invariants.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub name: String,
    ops: Vec<Op>,
    types: Vec<TensorType>,
    /// Side table: the span of each op (not part of equality in spirit; kept beside the ops).
    spans: Vec<Span>,
    pub params: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
}

impl Graph {
    pub fn new(name: impl Into<String>) -> Graph {
        Graph {
            name: name.into(),
            ops: Vec::new(),
            types: Vec::new(),
            spans: Vec::new(),
            params: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Appends an op with its result type and span.
    pub fn push(&mut self, op: Op, ty: TensorType, span: Span) -> ValueId {
        let id = ValueId(self.ops.len() as u32);
        self.ops.push(op);
        self.types.push(ty);
        self.spans.push(span);
        id
    }

    /// Appends the next parameter.
    pub fn add_param(&mut self, ty: TensorType, span: Span) -> ValueId {
        let index = self.params.len();
        let id = self.push(Op::Param { index }, ty, span);
        self.params.push(id);
        id
    }

    /// A hash of the graph's structure: each op's kind, operands and result type, each
    /// constant's exact bits, the params and outputs. Cheap next to formatting the graph; equal
    /// graphs ([`Graph::same_trace`]) hash equal.
    pub fn fingerprint<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        self.ops.len().hash(h);
        for (op, ty) in self.ops.iter().zip(&self.types) {
            std::mem::discriminant(op).hash(h);
            ty.hash(h);
            op.visit_operands(&mut |x| x.hash(h));
            if let Op::Const { value } = op {
                scalar_bits(*value).hash(h);
            }
        }
        self.params.hash(h);
        self.outputs.hash(h);
    }

    /// Whether two traces are the same computation: equal graphs (ops, types, spans, params,
    /// outputs) whose constants have the same bits (so `-0.0` is not `0.0`, and a NaN constant
    /// is itself).
    pub fn same_trace(&self, other: &Graph) -> bool {
        self.ops.len() == other.ops.len()
            && self.types == other.types
            && self.spans == other.spans
            && self.params == other.params
            && self.outputs == other.outputs
            && self.name == other.name
            && self.ops.iter().zip(&other.ops).all(|(a, b)| match (a, b) {
                (Op::Const { value: x }, Op::Const { value: y }) => {
                    scalar_bits(*x) == scalar_bits(*y)
                }
                _ => a == b,
            })
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// Every value, in definition order.
    pub fn ids(&self) -> impl Iterator<Item = ValueId> {
        (0..self.ops.len() as u32).map(ValueId)
    }
    pub fn op(&self, id: ValueId) -> Option<&Op> {
        self.ops.get(id.index())
    }
    pub fn ty(&self, id: ValueId) -> Option<&TensorType> {
        self.types.get(id.index())
    }
    /// The op's span (`Span::default()` for an id out of range, which the verifier rejects).
    pub fn span(&self, id: ValueId) -> Span {
        self.spans.get(id.index()).copied().unwrap_or_default()
    }
    /// Replaces the op defining `id` (a pass rewriting a root in place keeps every use valid).
    pub fn replace(&mut self, id: ValueId, op: Op, ty: TensorType) {
        if let Some(slot) = self.ops.get_mut(id.index()) {
            *slot = op;
        }
        if let Some(slot) = self.types.get_mut(id.index()) {
            *slot = ty;
        }
    }

    /// Sets the span of the op defining `id` (a fused op takes its root's span).
    pub fn set_span(&mut self, id: ValueId, span: Span) {
        if let Some(slot) = self.spans.get_mut(id.index()) {
            *slot = span;
        }
    }

    /// The types of every result of the op defining `id`: a multi-output fused op's body
    /// outputs; a fused reduction's value, then its written body outputs; else the op's one
    /// type.
    pub fn result_types(&self, id: ValueId) -> Vec<TensorType> {
        match self.op(id) {
            Some(Op::FusedElementwise { body, .. }) if body.outputs.len() > 1 => body
                .outputs
                .iter()
                .filter_map(|o| body.ty(*o).cloned())
                .collect(),
            Some(Op::FusedReduce { body, .. }) => self
                .ty(id)
                .cloned()
                .into_iter()
                .chain(
                    body.outputs
                        .iter()
                        .skip(1)
                        .filter_map(|o| body.ty(*o).cloned()),
                )
                .collect(),
            _ => self.ty(id).cloned().into_iter().collect(),
        }
    }

    /// How many times each value is read (by ops and as an output).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut n = vec![0usize; self.ops.len()];
        for op in &self.ops {
            op.visit_operands(&mut |x| {
                if let Some(c) = n.get_mut(x.index()) {
                    *c += 1;
                }
            });
        }
        for o in &self.outputs {
            if let Some(c) = n.get_mut(o.index()) {
                *c += 1;
            }
        }
        n
    }

    /// Keeps only the ops where `keep` is true, renumbering values; operands of kept ops must
    /// be kept too (DCE guarantees it). Params are always kept.
    pub fn retain(&mut self, keep: &[bool]) {
        let mut map: Vec<Option<ValueId>> = vec![None; self.ops.len()];
        let mut ops = Vec::new();
        let mut types = Vec::new();
        let mut spans = Vec::new();
        let old_ops = std::mem::take(&mut self.ops);
        for (i, mut op) in old_ops.into_iter().enumerate() {
            let is_param = matches!(op, Op::Param { .. });
            if !is_param && !keep.get(i).copied().unwrap_or(true) {
                continue;
            }
            op.map_operands(&mut |x| map.get(x.index()).copied().flatten().unwrap_or(x));
            if let Some(m) = map.get_mut(i) {
                *m = Some(ValueId(ops.len() as u32));
            }
            ops.push(op);
            types.push(self.types.get(i).cloned().unwrap_or(TensorType {
                shape: vec![],
                dtype: DType::F32,
            }));
            spans.push(self.spans.get(i).copied().unwrap_or_default());
        }
        let remap = |x: ValueId| map.get(x.index()).copied().flatten().unwrap_or(x);
        self.params = self.params.iter().map(|p| remap(*p)).collect();
        self.outputs = self.outputs.iter().map(|p| remap(*p)).collect();
        self.ops = ops;
        self.types = types;
        self.spans = spans;
    }
}

/// What a pass did: the rules that fired (with the span of the op each rewrote) and the near
/// misses (a pattern that almost matched, and why it did not).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fired {
    pub rules: Vec<(String, Span)>,
    pub near_misses: Vec<NearMiss>,
    /// What a rule that fired states about that rewrite (the spectral rewrite's error bound):
    /// `reason` is the statement.
    pub notes: Vec<NearMiss>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NearMiss {
    pub rule: String,
    pub reason: String,
    pub span: Span,
}

impl Fired {
    pub fn fire(&mut self, rule: &str, span: Span) {
        self.rules.push((rule.to_string(), span));
    }
    pub fn miss(&mut self, rule: &str, reason: impl Into<String>, span: Span) {
        self.near_misses.push(NearMiss {
            rule: rule.to_string(),
            reason: reason.into(),
            span,
        });
    }
    /// A rule that fired at `span` with a statement about the rewrite.
    pub fn fire_with(&mut self, rule: &str, note: impl Into<String>, span: Span) {
        self.fire(rule, span);
        self.notes.push(NearMiss {
            rule: rule.to_string(),
            reason: note.into(),
            span,
        });
    }
    /// What `rule` (fired at `span`) states: its note, else the rule's summary.
    pub fn note(&self, rule: &str, span: Span) -> String {
        self.notes
            .iter()
            .find(|n| n.rule == rule && n.span == span)
            .map_or_else(|| passes::summary(rule).to_string(), |n| n.reason.clone())
    }
    pub fn extend(&mut self, other: Fired) {
        self.rules.extend(other.rules);
        self.near_misses.extend(other.near_misses);
        self.notes.extend(other.notes);
    }
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}
