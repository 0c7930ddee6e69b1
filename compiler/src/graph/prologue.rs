//! A matmul's prologue: the normalisation of its A operand's rows (layernorm or rmsnorm over
//! the contraction axis K) computed by the matmul's own kernel, so that the normalised tensor
//! is never written out (rules `prologue_layernorm`, `prologue_rmsnorm`:
//! [`super::passes::fuse_prologue`]).
//!
//! It rides as the first of the matmul's steps ([`super::Epilogue::Prologue`]): `Op::Matmul`
//! keeps its four fields, every step list with a prologue is non-empty (so the rules that
//! want a plain matmul — autodiff, the FlashAttention rewrite — leave it alone), and the
//! steps after it are the epilogue proper, applied to the accumulator as before. The
//! verifier admits a prologue only as the first step, over A's last axis.
//!
//! ```text
//! %4 = layernorm %0, %1, %2 {eps = 1e-05}        %5 = matmul %0, %3 {accum = fp32,
//! %5 = matmul %4, %3                     ─▶        prologue = [layernorm %1, %2 {eps = 1e-05}]}
//! ```

use super::{DType, EpilogueStep, Op, ValueId};

/// Which normalisation a prologue applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// `(a − mean) / sqrt(var + eps) · weight + bias` (biased variance).
    LayerNorm,
    /// `a / sqrt(mean(a²) + eps) · weight`.
    RmsNorm,
}

impl NormKind {
    /// The norm's Graph IR name.
    pub fn name(self) -> &'static str {
        match self {
            NormKind::LayerNorm => "layernorm",
            NormKind::RmsNorm => "rmsnorm",
        }
    }
    /// The rewrite rule that fuses it.
    pub fn rule(self) -> &'static str {
        match self {
            NormKind::LayerNorm => "prologue_layernorm",
            NormKind::RmsNorm => "prologue_rmsnorm",
        }
    }
}

/// A matmul's A operand normalised over its last axis before the product; the normalised
/// values are rounded to A's dtype, as the norm's own result would be.
#[derive(Clone, Debug, PartialEq)]
pub struct Prologue {
    pub norm: NormKind,
    /// `[K]` each (rmsnorm has no bias).
    pub weight: Option<ValueId>,
    pub bias: Option<ValueId>,
    pub eps: f64,
}

impl Prologue {
    /// The tensors it reads besides A, in operand order.
    pub fn operands(&self) -> impl Iterator<Item = ValueId> {
        self.weight.into_iter().chain(self.bias)
    }

    /// The norm op it stands for, applied to `x`.
    pub fn as_op(&self, x: ValueId) -> Op {
        match self.norm {
            NormKind::LayerNorm => Op::LayerNorm {
                x,
                weight: self.weight,
                bias: self.bias,
                eps: self.eps,
            },
            NormKind::RmsNorm => Op::RmsNorm {
                x,
                weight: self.weight,
                eps: self.eps,
            },
        }
    }

    /// The prologue a norm op would become (`None`: not a norm).
    pub fn of_norm(op: &Op) -> Option<(Prologue, ValueId)> {
        Some(match op {
            Op::LayerNorm {
                x,
                weight,
                bias,
                eps,
            } => (
                Prologue {
                    norm: NormKind::LayerNorm,
                    weight: *weight,
                    bias: *bias,
                    eps: *eps,
                },
                *x,
            ),
            Op::RmsNorm { x, weight, eps } => (
                Prologue {
                    norm: NormKind::RmsNorm,
                    weight: *weight,
                    bias: None,
                    eps: *eps,
                },
                *x,
            ),
            _ => return None,
        })
    }
}

/// The dtypes of A a prologue takes: floats the norm keeps (its result has A's dtype).
pub fn prologue_dtype(d: DType) -> bool {
    matches!(
        d,
        DType::F32 | DType::F64 | DType::BF16 | DType::F16 | DType::TF32
    )
}

/// A matmul's steps split into its prologue (the first step, when it is one) and the
/// epilogue proper.
pub fn split_steps(steps: &[EpilogueStep]) -> (Option<&Prologue>, &[EpilogueStep]) {
    match steps.split_first() {
        Some((
            EpilogueStep {
                step: super::Epilogue::Prologue(p),
                ..
            },
            rest,
        )) => (Some(p), rest),
        _ => (None, steps),
    }
}

/// The prologue of a matmul op (`None`: none, or not a matmul).
pub fn prologue_of(op: &Op) -> Option<&Prologue> {
    match op {
        Op::Matmul { epilogue, .. } => split_steps(epilogue).0,
        _ => None,
    }
}
