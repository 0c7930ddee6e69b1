//! The derivatives of the ops without a definition in `graph::ops` (which answers first):
//! fft, complex ops, flash_attention and conv.

use super::*;
use crate::graph::infer::TypeError;

/// The cotangents of `op`'s operands (one per [`Op::operands`], `None`: none) given its result
/// `y` and the result's cotangent `dy`; `Err(None)` when the op has no derivative yet.
pub(super) fn op_vjp(
    g: &mut Graph,
    op: &Op,
    y: ValueId,
    dy: ValueId,
) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
    let ok = |v: Vec<Option<ValueId>>| Ok(v);
    if let Some(d) = crate::graph::ops::def(op) {
        return d.vjp(g, op, y, dy);
    }
    match op {
        Op::Fft { .. } => match super::spectral::fft(g, op, dy)? {
            Some(dx) => ok(vec![Some(dx)]),
            None => Err(None),
        },
        Op::Complex { op: c, a, b } => ok(super::spectral::complex(g, *c, *a, *b, y, dy)?),
        Op::FlashAttention {
            q,
            k,
            v,
            causal,
            scale,
        } => ok(super::attention::vjp(
            g,
            [*q, *k, *v],
            *causal,
            *scale,
            y,
            dy,
        )?),
        Op::Conv { x, w, bias, attrs } => {
            let (dx, dw, db) = super::conv::vjp(g, *x, *w, attrs, dy)?;
            let mut v = vec![Some(dx), Some(dw)];
            if bias.is_some() {
                v.push(Some(db));
            }
            ok(v)
        }
        _ => Err(None),
    }
}
