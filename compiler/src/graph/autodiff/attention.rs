//! The derivative of `flash_attention`: FlashAttention-2's backward as Graph IR ops, so that no
//! value of the backward graph is `sq × sk`.

use super::{bin, broadcast_to, cast, emit, sum_axis, sum_to, ty, R};
use crate::graph::{AttnWrt, BinaryOp, Graph, Op, ValueId};

/// The cotangents of `[q, k, v]` given the attention's result `y` and its cotangent `dy`: the
/// row log-sum-exp of the scores, delta = Σ dy·y per query row, then one fused op per operand
/// recomputing the probabilities tile by tile; operands broadcast to the output's batch first
/// and their gradients summed back.
pub(super) fn vjp(
    g: &mut Graph,
    [q, k, v]: [ValueId; 3],
    causal: bool,
    scale: f64,
    y: ValueId,
    dy: ValueId,
) -> R<Vec<Option<ValueId>>> {
    let ys = ty(g, y)?.shape;
    let batch = &ys[..ys.len() - 2];
    let mut full = |x: ValueId| -> R<ValueId> {
        let t = ty(g, x)?.shape;
        let mut s = batch.to_vec();
        s.extend_from_slice(&t[t.len() - 2..]);
        broadcast_to(g, x, &s)
    };
    let (bq, bk, bv) = (full(q)?, full(k)?, full(v)?);
    let lse = emit(
        g,
        Op::AttentionLse {
            q: bq,
            k: bk,
            causal,
            scale,
        },
    )?;
    let yc = cast(g, y, ty(g, dy)?.dtype)?;
    let prod = bin(g, BinaryOp::Mul, dy, yc)?;
    let delta = sum_axis(g, prod, ys.len() - 1, false)?;
    let mut v_out = Vec::with_capacity(3);
    for (wrt, x) in [(AttnWrt::Q, q), (AttnWrt::K, k), (AttnWrt::V, v)] {
        let d = emit(
            g,
            Op::AttentionGrad {
                wrt,
                q: bq,
                k: bk,
                v: bv,
                dout: dy,
                lse,
                delta,
                causal,
                scale,
            },
        )?;
        let s = ty(g, x)?.shape;
        v_out.push(Some(sum_to(g, d, &s)?));
    }
    Ok(v_out)
}
