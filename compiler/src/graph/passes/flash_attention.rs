//! `softmax(Q @ K^T * s) @ V` → one `flash_attention {scale = s}`.
//!
//! The scale may sit on the scores, on `Q` or on `K` (before or after the transpose), be
//! written `/ s`, appear several times (the factors multiply), or be absent (scale 1.0); the
//! transpose may be `K.T` (2-D) or `op.transpose(K, perm)` swapping the last two axes.
//!
//! ```text
//! %3 = transpose %1 {perm = [1, 0]} : fp32[128,64]
//! %4 = matmul %0, %3 : fp32[128,128]
//! %5 = const 0.125 : fp32[]
//! %6 = mul %4, %5 : fp32[128,128]
//! %7 = softmax %6 {axis = 1} : fp32[128,128]
//! %8 = matmul %7, %2 : fp32[128,64]
//!   ─▶
//! %3 = flash_attention %0, %1, %2 {causal = false, scale = 0.125} : fp32[128,64]
//! ```
//!
//! Near misses (reported for `graph.fusions(..., explain=True)`): a softmax over another
//! axis, a tensor scale, a transpose of other axes, intermediates used elsewhere, a rewrite that
//! would change the result type.

use super::{const_number, PassCx};
use crate::graph::infer::infer;
use crate::graph::{BinaryOp, Fired, Graph, Op, ValueId};

const RULE: &str = "flash_attention";

/// Strips `x * c`, `c * x`, `x / c` with `c` a scalar const. Returns the inner value and the
/// accumulated factor, or `Err(reason)` for a scale that is a tensor.
fn strip_scale(g: &Graph, mut v: ValueId, factor: &mut f64) -> Result<ValueId, &'static str> {
    loop {
        match g.op(v) {
            Some(Op::Binary {
                op: BinaryOp::Mul,
                a,
                b,
            }) => {
                if let Some(c) = const_number(g, *b) {
                    *factor *= c;
                    v = *a;
                } else if let Some(c) = const_number(g, *a) {
                    *factor *= c;
                    v = *b;
                } else {
                    return Err("the scale is a tensor, not a scalar");
                }
            }
            Some(Op::Binary {
                op: BinaryOp::Div,
                a,
                b,
            }) => match const_number(g, *b) {
                Some(c) if c != 0.0 => {
                    *factor /= c;
                    v = *a;
                }
                Some(_) => return Err("the scale divides by zero"),
                None => return Err("the scale is a tensor, not a scalar"),
            },
            _ => return Ok(v),
        }
    }
}

/// Whether `perm` swaps the last two axes and keeps the others.
fn swaps_last_two(perm: &[usize]) -> bool {
    let n = perm.len();
    n >= 2
        && perm.iter().enumerate().all(|(i, &p)| {
            if i + 2 == n {
                p == n - 1
            } else if i + 1 == n {
                p == n - 2
            } else {
                p == i
            }
        })
}

pub fn run(g: &mut Graph, _cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let ids: Vec<ValueId> = g.ids().collect();
    for out in ids {
        let Some(Op::Matmul {
            a: probs,
            b: v,
            epilogue,
            ..
        }) = g.op(out).cloned()
        else {
            continue;
        };
        if !epilogue.is_empty() {
            continue;
        }
        let Some((scores, axis)) = g.op(probs).and_then(crate::graph::ops::rows::softmax_of) else {
            continue;
        };
        // Counted per candidate (the graph changes as patterns are rewritten), not per op.
        let uses = g.use_counts();
        let span = g.span(out);
        let rank = g.ty(scores).map(|t| t.shape.len()).unwrap_or(0);
        if axis + 1 != rank {
            fired.miss(
                RULE,
                format!(
                    "softmax over axis {axis}, not the key axis {}",
                    rank.saturating_sub(1)
                ),
                g.span(probs),
            );
            continue;
        }
        let mut scale = 1.0f64;
        let qk = match strip_scale(g, scores, &mut scale) {
            Ok(x) => x,
            Err(why) => {
                fired.miss(RULE, why, g.span(scores));
                continue;
            }
        };
        let Some(Op::Matmul {
            a: qs,
            b: kts,
            epilogue: qk_epi,
            ..
        }) = g.op(qk).cloned()
        else {
            fired.miss(
                RULE,
                "the softmax input is not a matmul (Q @ K^T)",
                g.span(probs),
            );
            continue;
        };
        if !qk_epi.is_empty() {
            fired.miss(
                RULE,
                "the scores matmul already has an epilogue",
                g.span(qk),
            );
            continue;
        }
        // Every op between the scores matmul and the softmax must feed only the next one.
        let mut chain = vec![probs];
        let mut cur = scores;
        while cur != qk {
            chain.push(cur);
            match g.op(cur) {
                Some(Op::Binary { a, b, .. }) => {
                    cur = if const_number(g, *a).is_some() {
                        *b
                    } else {
                        *a
                    };
                }
                _ => break,
            }
        }
        chain.push(qk);
        if let Some(shared) = chain
            .iter()
            .find(|v| uses.get(v.index()).copied() != Some(1))
        {
            let what = if *shared == probs {
                "the softmax result is used elsewhere"
            } else {
                "the attention scores are used elsewhere"
            };
            fired.miss(RULE, what, g.span(*shared));
            continue;
        }
        let q = match strip_scale(g, qs, &mut scale) {
            Ok(x) => x,
            Err(why) => {
                fired.miss(RULE, why, g.span(qs));
                continue;
            }
        };
        let kt = match strip_scale(g, kts, &mut scale) {
            Ok(x) => x,
            Err(why) => {
                fired.miss(RULE, why, g.span(kts));
                continue;
            }
        };
        let Some(Op::Transpose { x: ks, perm }) = g.op(kt).cloned() else {
            fired.miss(
                RULE,
                "the second operand of Q @ K^T is not a transpose",
                g.span(qk),
            );
            continue;
        };
        if !swaps_last_two(&perm) {
            fired.miss(
                RULE,
                format!("K is transposed with perm {perm:?}, not over its last two axes"),
                g.span(kt),
            );
            continue;
        }
        let k = match strip_scale(g, ks, &mut scale) {
            Ok(x) => x,
            Err(why) => {
                fired.miss(RULE, why, g.span(ks));
                continue;
            }
        };
        let op = Op::FlashAttention {
            q,
            k,
            v,
            causal: false,
            scale,
        };
        let Some(want) = g.ty(out).cloned() else {
            continue;
        };
        match infer(g, &op, &want) {
            Ok(t) if t == want => {
                g.replace(out, op, t);
                fired.fire(RULE, span);
            }
            Ok(t) => fired.miss(
                RULE,
                format!("flash_attention would give {t}, not {want}"),
                span,
            ),
            Err(why) => fired.miss(RULE, why.to_string(), span),
        }
    }
    fired
}
