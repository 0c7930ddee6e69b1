//! The derivative of `conv1d`/`conv2d`, as convolutions (so the backward runs the same direct
//! convolution kernel as the forward), on 4-d operands (a 1-d convolution is a 2-d one of
//! height 1, an unbatched input a batch of one):
//!
//! - `dx`: `dy` spread by the stride (`s − 1` zeros after each element), convolved with `w`
//!   flipped in space and with its input and output channels swapped per group, padded by
//!   `d·(k − 1) − p` (cropped where that is negative, plus the rows a stride left unread);
//! - `dw`: the correlation of `x` with `dy`, each image's channel pair summed over the batch:
//!   the images become the channels (`xᵀ` `[C, N, H, W]`, `dyᵀ` `[O, N, OH, OW]`), the stride
//!   becomes the dilation and the dilation the stride, cropped to the kernel's size. One
//!   convolution for `groups = 1`; for one input channel per group (depthwise) one grouped
//!   convolution of all channels at once; otherwise one per group;
//! - `dbias`: `dy` summed over the images and positions.

use super::*;
use crate::graph::{ConvAlgorithm, ConvAttrs, SliceItem};

fn transpose(g: &mut Graph, x: ValueId, perm: &[usize]) -> R<ValueId> {
    emit(
        g,
        Op::Transpose {
            x,
            perm: perm.to_vec(),
        },
    )
}

fn conv(g: &mut Graph, x: ValueId, w: ValueId, attrs: ConvAttrs) -> R<ValueId> {
    emit(
        g,
        Op::Conv {
            x,
            w,
            bias: None,
            attrs,
        },
    )
}

fn range(start: usize, stop: usize, step: i64) -> SliceItem {
    SliceItem::Range {
        start: Some(start as i64),
        stop: Some(stop as i64),
        step: Some(step),
    }
}

fn slice(g: &mut Graph, x: ValueId, items: Vec<SliceItem>) -> R<ValueId> {
    emit(g, Op::Slice { x, items })
}

/// `x` (4-d) cut to `lo..len − hi` along axes 2 and 3.
fn crop(g: &mut Graph, x: ValueId, lo: [usize; 2], hi: [usize; 2]) -> R<ValueId> {
    if lo == [0, 0] && hi == [0, 0] {
        return Ok(x);
    }
    let s = ty(g, x)?.shape;
    let mut items = vec![super::slices::full_range(), super::slices::full_range()];
    for i in 0..2 {
        items.push(range(lo[i], s[2 + i] - hi[i], 1));
    }
    slice(g, x, items)
}

/// `x` (4-d) with `s − 1` zeros after each element along `axis` (2 or 3), the trailing ones
/// dropped: a concat with zeros on a new axis, a reshape and a slice.
fn spread(g: &mut Graph, x: ValueId, axis: usize, s: usize) -> R<ValueId> {
    if s <= 1 {
        return Ok(x);
    }
    let t = ty(g, x)?;
    let n = t.shape[axis];
    let mut one = t.shape.clone();
    one.insert(axis + 1, 1);
    let v = reshape(g, x, &one)?;
    let mut zs = one.clone();
    zs[axis + 1] = s - 1;
    let z = konst(g, 0.0, t.dtype)?;
    let z = broadcast_to(g, z, &zs)?;
    let cat = emit(
        g,
        Op::Concat {
            xs: vec![v, z],
            axis: axis + 1,
        },
    )?;
    let mut flat = t.shape.clone();
    flat[axis] = n * s;
    let flat_v = reshape(g, cat, &flat)?;
    let mut items: Vec<SliceItem> = (0..t.shape.len())
        .map(|_| super::slices::full_range())
        .collect();
    items[axis] = range(0, (n - 1) * s + 1, 1);
    slice(g, flat_v, items)
}

/// The cotangents `(dx, dw, dbias)` of `conv(x, w, bias)` given the result's `dy`.
pub(super) fn vjp(
    g: &mut Graph,
    x: ValueId,
    w: ValueId,
    a: &ConvAttrs,
    dy: ValueId,
) -> R<(ValueId, ValueId, ValueId)> {
    let (tx, tw, tdy) = (ty(g, x)?, ty(g, w)?, ty(g, dy)?);
    let d = usize::from(a.dims);
    let batched = tx.shape.len() == d + 2;
    // 4-d views: [N, C, H, W], [O, Cg, kh, kw], [N, O, OH, OW]
    let four = |s: &[usize], lead: bool| -> Vec<usize> {
        let mut v = s.to_vec();
        if !lead {
            v.insert(0, 1);
        }
        if d == 1 {
            v.insert(2, 1);
        }
        v
    };
    let xs = four(&tx.shape, batched);
    let ws = four(&tw.shape, true);
    let ys = four(&tdy.shape, batched);
    let (x4, w4, dy4) = (
        reshape(g, x, &xs)?,
        reshape(g, w, &ws)?,
        reshape(g, dy, &ys)?,
    );
    let (groups, cg, og) = (a.groups, ws[1], ws[0] / a.groups.max(1));
    let k = [ws[2], ws[3]];
    let span = |i: usize| a.dilation[i] * (k[i] - 1);

    // dx: the spread dy convolved with the flipped, channel-swapped weights
    let mut dys = dy4;
    for i in 0..2 {
        dys = spread(g, dys, 2 + i, a.stride[i])?;
    }
    let wg = reshape(g, w4, &[groups, og, cg, k[0], k[1]])?;
    let wg = transpose(g, wg, &[0, 2, 1, 3, 4])?;
    let wt = reshape(g, wg, &[groups * cg, og, k[0], k[1]])?;
    let rev = |n: usize| SliceItem::Range {
        start: Some(n as i64 - 1),
        stop: None,
        step: Some(-1),
    };
    let full = super::slices::full_range;
    let wf = slice(g, wt, vec![full(), full(), rev(k[0]), rev(k[1])])?;
    let mut pad = [(0, 0); 2];
    let (mut lo_cut, mut hi_cut) = ([0; 2], [0; 2]);
    for i in 0..2 {
        let (pb, pa) = a.pad[i];
        let len = xs[2 + i];
        // rows of x past the last window a stride reached
        let rest = (len + pb + pa - span(i) - 1) % a.stride[i];
        let lo = span(i) as i64 - pb as i64;
        let hi = span(i) as i64 - pa as i64 + rest as i64;
        pad[i] = (lo.max(0) as usize, hi.max(0) as usize);
        lo_cut[i] = (-lo).max(0) as usize;
        hi_cut[i] = (-hi).max(0) as usize;
    }
    let dx_attrs = ConvAttrs {
        dims: 2,
        stride: [1, 1],
        pad,
        dilation: a.dilation,
        groups,
        // the same kernel size as the forward convolution, so the same choice
        algorithm: a.algorithm,
    };
    let dx4 = conv(g, dys, wf, dx_attrs)?;
    let dx4 = crop(g, dx4, lo_cut, hi_cut)?;
    let dx = reshape(g, dx4, &tx.shape)?;

    // dw: x against dy with the batch as channels
    let xt = transpose(g, x4, &[1, 0, 2, 3])?; // [C, N, H, W]
    let dyt = transpose(g, dy4, &[1, 0, 2, 3])?; // [O, N, OH, OW]
    let dw_attrs = |groups: usize| ConvAttrs {
        dims: 2,
        stride: a.dilation,
        pad: a.pad,
        dilation: a.stride,
        groups,
        // dy is the kernel here (as large as the output): the cost model decides
        algorithm: ConvAlgorithm::Auto,
    };
    let n = xs[0];
    let fit = |g: &mut Graph, v: ValueId| -> R<ValueId> {
        let s = ty(g, v)?.shape;
        crop(g, v, [0, 0], [s[2] - k[0], s[3] - k[1]])
    };
    let dw4 = if groups == 1 {
        // [C, O, k, k] → [O, C, k, k]
        let r = conv(g, xt, dyt, dw_attrs(1))?;
        let r = fit(g, r)?;
        transpose(g, r, &[1, 0, 2, 3])?
    } else if cg == 1 {
        // one input channel per group: each channel's images are one group's channels
        let xin = reshape(g, xt, &[1, xs[1] * n, xs[2], xs[3]])?;
        let r = conv(g, xin, dyt, dw_attrs(groups))?;
        let r = fit(g, r)?;
        let s = ty(g, r)?.shape;
        reshape(g, r, &[ws[0], 1, s[2], s[3]])?
    } else {
        let mut parts = Vec::with_capacity(groups);
        for gi in 0..groups {
            let xg = slice(g, xt, vec![range(gi * cg, (gi + 1) * cg, 1)])?;
            let dg = slice(g, dyt, vec![range(gi * og, (gi + 1) * og, 1)])?;
            let r = conv(g, xg, dg, dw_attrs(1))?;
            let r = fit(g, r)?;
            parts.push(transpose(g, r, &[1, 0, 2, 3])?);
        }
        emit(g, Op::Concat { xs: parts, axis: 0 })?
    };
    let dw = reshape(g, dw4, &tw.shape)?;

    // dbias: dy summed over everything but its channels
    let mut db = dy4;
    for axis in [3, 2, 0] {
        db = sum_axis(g, db, axis, false)?;
    }
    Ok((dx, dw, db))
}
