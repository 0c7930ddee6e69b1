//! The derivative of slicing: the cotangent put back where the slice took it from.

use super::*;
use crate::graph::SliceItem;

pub(crate) fn full_range() -> SliceItem {
    SliceItem::Range {
        start: None,
        stop: None,
        step: None,
    }
}

/// The cotangent of `x` from that of `x[items]`: `dy` put back where the slice took it from,
/// zeros elsewhere. A stepped range spreads `dy` along its axis (each element followed by
/// `|step| − 1` zeros, by a concat with zeros on a new axis and a reshape); a negative step
/// reverses it first. `None` when the items are not ones this can invert.
pub(crate) fn unslice(
    g: &mut Graph,
    x: ValueId,
    items: &[SliceItem],
    dy: ValueId,
) -> R<Option<ValueId>> {
    let xs = ty(g, x)?.shape;
    let consumed = items
        .iter()
        .filter(|i| matches!(i, SliceItem::Index(_) | SliceItem::Range { .. }))
        .count();
    // per input axis: (first index taken, count, step)
    let mut spans: Vec<(usize, usize, i64)> = Vec::with_capacity(xs.len());
    for it in items {
        let axis = spans.len();
        match *it {
            SliceItem::Index(i) => {
                let n = xs.get(axis).copied().unwrap_or(0) as i64;
                let j = if i < 0 { i + n } else { i };
                spans.push((j.max(0) as usize, 1, 1));
            }
            SliceItem::Range { start, stop, step } => {
                let n = xs.get(axis).copied().unwrap_or(0);
                let Some((s0, count, st)) =
                    crate::graph::infer::slice_indices(start, stop, step, n)
                else {
                    return Ok(None);
                };
                if st == 0 || (count > 0 && s0 < 0) {
                    return Ok(None);
                }
                spans.push((s0.max(0) as usize, count, st));
            }
            SliceItem::NewAxis => {}
            SliceItem::Ellipsis => {
                for a in 0..xs.len().saturating_sub(consumed) {
                    spans.push((0, xs[axis + a], 1));
                }
            }
        }
    }
    while spans.len() < xs.len() {
        spans.push((0, xs[spans.len()], 1));
    }
    let sub: Vec<usize> = spans.iter().map(|&(_, c, _)| c).collect();
    let mut cur = reshape(g, dy, &sub)?;
    let d = ty(g, dy)?.dtype;
    let zeros = |g: &mut Graph, s: &[usize]| -> R<ValueId> {
        let z = konst(g, 0.0, d)?;
        broadcast_to(g, z, s)
    };
    for (axis, &(s0, count, step)) in spans.iter().enumerate() {
        let n = xs[axis];
        if count == n && step == 1 {
            continue;
        }
        // the lowest index taken, with `cur` in increasing index order
        let mut start = s0;
        if step < 0 && count > 1 {
            let rank = ty(g, cur)?.shape.len();
            let mut it = vec![full_range(); rank];
            it[axis] = SliceItem::Range {
                start: None,
                stop: None,
                step: Some(-1),
            };
            cur = emit(g, Op::Slice { x: cur, items: it })?;
            start = (s0 as i64 + (count as i64 - 1) * step).max(0) as usize;
        }
        let k = step.unsigned_abs() as usize;
        let mut covered = count;
        if k > 1 && count > 1 {
            // [.., count, ..] → [.., count, 1, ..] ++ zeros [.., count, k−1, ..] → [.., count·k, ..]
            let shape = ty(g, cur)?.shape;
            let mut one = shape.clone();
            one.insert(axis + 1, 1);
            let c1 = reshape(g, cur, &one)?;
            let mut zs = shape.clone();
            zs.insert(axis + 1, k - 1);
            let z = zeros(g, &zs)?;
            let both = emit(
                g,
                Op::Concat {
                    xs: vec![c1, z],
                    axis: axis + 1,
                },
            )?;
            let mut spread = shape.clone();
            spread[axis] = count * k;
            let flat = reshape(g, both, &spread)?;
            covered = (count - 1) * k + 1;
            let mut it = vec![full_range(); spread.len()];
            it[axis] = SliceItem::Range {
                start: Some(0),
                stop: Some(covered as i64),
                step: None,
            };
            cur = emit(g, Op::Slice { x: flat, items: it })?;
        }
        let shape_now = ty(g, cur)?.shape;
        let mut parts = Vec::new();
        let after = n.saturating_sub(start + covered);
        for (len, is_cur) in [(start, false), (covered, true), (after, false)] {
            if is_cur {
                parts.push(cur);
            } else if len > 0 {
                let mut s = shape_now.clone();
                s[axis] = len;
                parts.push(zeros(g, &s)?);
            }
        }
        cur = if parts.len() == 1 {
            parts[0]
        } else {
            emit(g, Op::Concat { xs: parts, axis })?
        };
    }
    Ok(Some(cur))
}
