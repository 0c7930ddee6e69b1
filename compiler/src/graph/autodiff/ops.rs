//! The derivatives of the ops without a definition in `graph::ops` (which answers first):
//! reshape, broadcast, transpose, concat, slice, take (integer-array indexing)
//! and its adjoint scatter_add, fft, complex ops, flash_attention and conv.

use super::slices::{full_range, unslice};
use super::*;
use crate::graph::infer::TypeError;
use crate::graph::{SliceItem, TensorType};

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
        // a reshape's cotangent is reshaped back (the same elements); a broadcast's is summed
        // over the broadcast dimensions
        Op::Reshape { x } => {
            let s = ty(g, *x)?.shape;
            ok(vec![Some(reshape(g, dy, &s)?)])
        }
        Op::Broadcast { x } => {
            let s = ty(g, *x)?.shape;
            ok(vec![Some(sum_to(g, dy, &s)?)])
        }
        Op::Transpose { perm, .. } => {
            let t = emit(
                g,
                Op::Transpose {
                    x: dy,
                    perm: inverse(perm),
                },
            )?;
            ok(vec![Some(t)])
        }
        Op::Concat { xs, axis } => {
            let rank = ty(g, dy)?.shape.len();
            let mut off = 0i64;
            let mut v = Vec::with_capacity(xs.len());
            for x in xs {
                let n = ty(g, *x)?.shape.get(*axis).copied().unwrap_or(0) as i64;
                let mut items = vec![full_range(); rank];
                items[*axis] = SliceItem::Range {
                    start: Some(off),
                    stop: Some(off + n),
                    step: None,
                };
                let piece = emit(g, Op::Slice { x: dy, items })?;
                v.push(Some(piece));
                off += n;
            }
            ok(v)
        }
        Op::Slice { x, items } => match unslice(g, *x, items, dy)? {
            Some(dx) => ok(vec![Some(dx)]),
            None => Err(None),
        },
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
        Op::Take { x, index, axis } => {
            // the cotangent's slices added back where they were taken from
            let tx = ty(g, *x)?;
            let d = ty(g, dy)?.dtype;
            let dx = emit_as(
                g,
                Op::ScatterAdd {
                    index: *index,
                    src: dy,
                    axis: *axis,
                },
                TensorType::new(tx.shape, d),
            )?;
            ok(vec![Some(dx), None])
        }
        Op::ScatterAdd { index, axis, .. } => {
            let t = emit(
                g,
                Op::Take {
                    x: dy,
                    index: *index,
                    axis: *axis,
                },
            )?;
            ok(vec![None, Some(t)])
        }
        _ => Err(None),
    }
}
