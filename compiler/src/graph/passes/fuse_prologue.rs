//! Norm prologues: a layernorm or rmsnorm whose one reader is a matmul's A operand becomes
//! that matmul's prologue (rules `prologue_layernorm`, `prologue_rmsnorm`): the matmul's
//! kernel computes each row's statistics over K and normalises every A tile in shared memory
//! as it lands, so the normalised tensor is never written out and read back. The matmul keeps
//! its epilogue (the prologue is its first step, [`crate::graph::Prologue`]).
//!
//! ```text
//! %4 = layernorm %0, %1, %2 {eps = 1e-5} : bf16[256,512]
//! %6 = matmul %4, %3 {epilogue = [add %5, gelu]}     ─▶   %6 = matmul %0, %3 {accum = fp32,
//!                                                          prologue = [layernorm %1, %2 {eps = 1e-5}],
//!                                                          epilogue = [add %5, gelu]}
//! ```
//!
//! The norm runs over its operand's last axis, which for A is the contraction axis K. Near
//! misses: the normalised tensor has another reader or is returned (it is written out
//! anyway), B is the normalised operand (its last axis is N; transposed, a prologue of B would
//! be needed), A is a transpose of the normalised tensor (the norm's axis is not K), and a
//! norm whose result dtype is not its operand's (an integer x: fp32 result) or not a float
//! the kernels normalise in place.

use super::PassCx;
use crate::graph::{prologue_dtype, Epilogue, EpilogueStep, Fired, Graph, Op, Prologue, ValueId};

/// The norm `v` is, with its rule name.
fn norm(g: &Graph, v: ValueId) -> Option<(Prologue, ValueId, &'static str)> {
    let (p, x) = Prologue::of_norm(g.op(v)?)?;
    let rule = p.norm.rule();
    Some((p, x, rule))
}

/// A transpose of a norm: (the norm, its rule, the transpose's permutation).
fn transposed_norm(g: &Graph, v: ValueId) -> Option<(ValueId, &'static str, Vec<usize>)> {
    match g.op(v)? {
        Op::Transpose { x, perm } => norm(g, *x).map(|(_, _, rule)| (*x, rule, perm.clone())),
        _ => None,
    }
}

pub fn run(g: &mut Graph, _cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let uses = g.use_counts();
    let mut reported = std::collections::HashSet::new();
    let ids: Vec<ValueId> = g.ids().collect();
    for id in ids {
        let Some(Op::Matmul {
            a,
            b,
            accum,
            epilogue,
            tile,
        }) = g.op(id).cloned()
        else {
            continue;
        };
        if let Some((_, _, rule)) = norm(g, b) {
            fired.miss(
                rule,
                "B is the normalised operand: its norm runs over N, not the contraction axis K (only A takes a norm prologue)",
                g.span(b),
            );
        } else if let Some((n, rule, _)) = transposed_norm(g, b) {
            fired.miss(
                rule,
                "B is the normalised operand (transposed): only A takes a norm prologue",
                g.span(n),
            );
        }
        if let Some((n, rule, perm)) = transposed_norm(g, a) {
            let last = perm.len().saturating_sub(1);
            let axis = perm.iter().position(|&p| p == last).unwrap_or(last);
            let why = if axis == last {
                "A is a transpose of the normalised tensor, not the normalised tensor itself"
                    .to_string()
            } else {
                format!(
                    "the norm runs over axis {axis} of A, not its contraction axis K (axis {last})"
                )
            };
            fired.miss(rule, why, g.span(n));
            continue;
        }
        let Some((prologue, x, rule)) = norm(g, a) else {
            continue;
        };
        let span = g.span(a);
        let n_uses = uses.get(a.index()).copied().unwrap_or(0);
        if g.outputs.contains(&a) {
            fired.miss(
                rule,
                "the normalised tensor is also returned, so it is written out anyway",
                span,
            );
            continue;
        }
        if n_uses != 1 {
            // once per norm, not once per reader
            if !reported.insert(a) {
                continue;
            }
            fired.miss(
                rule,
                format!("the normalised tensor has {n_uses} users, so it is written out anyway"),
                span,
            );
            continue;
        }
        let (Some(xt), Some(at)) = (g.ty(x), g.ty(a)) else {
            continue;
        };
        if xt.dtype != at.dtype || !prologue_dtype(xt.dtype) {
            fired.miss(
                rule,
                format!(
                    "a norm of {} giving {}: the prologue normalises fp32, fp64, bf16, fp16 or tf32 A in its own dtype",
                    xt.dtype, at.dtype
                ),
                span,
            );
            continue;
        }
        let Some(ty) = g.ty(id).cloned() else {
            continue;
        };
        let mut steps = vec![EpilogueStep {
            step: Epilogue::Prologue(prologue),
            span,
        }];
        steps.extend(epilogue);
        g.replace(
            id,
            Op::Matmul {
                a: x,
                b,
                accum,
                epilogue: steps,
                tile,
            },
            ty,
        );
        fired.fire(rule, span);
    }
    fired
}

#[cfg(test)]
#[path = "fuse_prologue_tests.rs"]
mod tests;
