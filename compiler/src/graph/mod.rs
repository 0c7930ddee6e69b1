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
mod op;
pub use op::{AttnWrt, Epilogue, EpilogueStep, Op};
pub mod error;
pub mod infer;
pub mod kind;
pub mod ops;
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
            tile: None,
        },
        TensorType::new(vec![m, n], DType::BF16),
        sp,
    );
    g.outputs = vec![c];
    g
}

pub use kind::{kind_of, Kind};
pub use ops::rows::{RowFn, RowOut, ROW_FNS};
pub use ops::{def as op_def, OpDef, ShardRule};
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
