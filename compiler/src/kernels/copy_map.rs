//! Copy kernels (transpose/permute, broadcast, slice, concat): the Schedule → Tile
//! description ([`tile`]: the gather map, simplified); the Tile IR program is built by
//! [`super::copy`].
//!
//! Every copy is a gather: output element `i` (row-major coordinates `c`) reads element
//! `base + Σ c[d]·stride[d]` of one input — strides of a permutation for a transpose, 0 for
//! a broadcast dimension, `step × stride` from a start offset for a slice, and one source per
//! input selected by the coordinate along the axis for a concat. Unit dimensions are dropped
//! and runs of dimensions every source reads contiguously are merged, so a contiguous slice
//! or a concat of rows needs one division per element. Threads take `vector` consecutive
//! output elements (stores coalesced); integer arithmetic is `u32`, wrapping, which is exact
//! because every final offset lies inside its buffer (< 2^32 elements).

use crate::graph::infer::slice_indices;
use crate::graph::{DType, Graph, Op, SliceItem, TensorType};
use crate::kernels::lower::{nl, NotLowered};
use crate::schedule::Kernel;
use crate::tile::{GatherSrc, Shape, TileKernel};

fn contiguous_strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as i64;
    }
    s
}

/// The view `x[items]` of a contiguous `shape`: (offset, shape, strides).
fn slice_view(
    k: &Kernel,
    shape: &[usize],
    items: &[SliceItem],
) -> Result<(i64, Vec<usize>, Vec<i64>), NotLowered> {
    let consumed = items
        .iter()
        .filter(|it| matches!(it, SliceItem::Index(_) | SliceItem::Range { .. }))
        .count();
    if consumed > shape.len() {
        return Err(nl(k, "more indices than dimensions"));
    }
    let cs = contiguous_strides(shape);
    let (mut off, mut dims, mut strides) = (0i64, vec![], vec![]);
    let mut dim = 0usize;
    for it in items {
        match *it {
            SliceItem::Index(i) => {
                let len = shape[dim] as i64;
                let j = if i < 0 { i + len } else { i };
                if j < 0 || j >= len {
                    return Err(nl(k, "an index out of range"));
                }
                off += j * cs[dim];
                dim += 1;
            }
            SliceItem::Range { start, stop, step } => {
                let (s, count, st) = slice_indices(start, stop, step, shape[dim])
                    .ok_or_else(|| nl(k, "a slice with step 0"))?;
                if count > 0 {
                    off += s * cs[dim];
                }
                dims.push(count);
                strides.push(if count > 1 { st * cs[dim] } else { 0 });
                dim += 1;
            }
            SliceItem::NewAxis => {
                dims.push(1);
                strides.push(0);
            }
            SliceItem::Ellipsis => {
                for _ in 0..shape.len() - consumed {
                    dims.push(shape[dim]);
                    strides.push(cs[dim]);
                    dim += 1;
                }
            }
        }
    }
    while dim < shape.len() {
        dims.push(shape[dim]);
        strides.push(cs[dim]);
        dim += 1;
    }
    Ok((off, dims, strides))
}

fn ty_of<'g>(
    k: &Kernel,
    g: &'g Graph,
    v: crate::graph::ValueId,
) -> Result<&'g TensorType, NotLowered> {
    g.ty(v).ok_or_else(|| nl(k, "an untyped operand"))
}

/// The gather map of copy op `op` with output shape `out`: per input, (base, strides,
/// select) over the output's dims (before simplification).
fn gather_map(k: &Kernel, g: &Graph, op: &Op, out: &[usize]) -> Result<Vec<GatherSrc>, NotLowered> {
    let src = |base: i64, strides: Vec<i64>| GatherSrc {
        input: 0,
        base,
        strides,
        select: None,
    };
    match op {
        Op::Transpose { x, perm } => {
            let s = &ty_of(k, g, *x)?.shape;
            if perm.len() != s.len() || perm.iter().any(|&p| p >= s.len()) {
                return Err(nl(k, "an invalid permutation"));
            }
            let cs = contiguous_strides(s);
            Ok(vec![src(0, perm.iter().map(|&p| cs[p]).collect())])
        }
        Op::Broadcast { x } => {
            let s = &ty_of(k, g, *x)?.shape;
            if s.len() > out.len() {
                return Err(nl(k, "a broadcast to fewer dimensions"));
            }
            let cs = contiguous_strides(s);
            let lead = out.len() - s.len();
            let strides = (0..out.len())
                .map(|d| match d.checked_sub(lead) {
                    Some(j) if s[j] != 1 => cs[j],
                    _ => 0,
                })
                .collect();
            Ok(vec![src(0, strides)])
        }
        Op::Slice { x, items } => {
            let s = &ty_of(k, g, *x)?.shape;
            let (off, dims, strides) = slice_view(k, s, items)?;
            if dims != out {
                return Err(nl(
                    k,
                    format!("a slice whose view {dims:?} differs from its type {out:?}"),
                ));
            }
            Ok(vec![src(off, strides)])
        }
        Op::Concat { xs, axis } => {
            let mut lo = 0usize;
            let mut v = vec![];
            for (i, x) in xs.iter().enumerate() {
                let s = &ty_of(k, g, *x)?.shape;
                if s.len() != out.len() || *axis >= s.len() {
                    return Err(nl(k, "a concat of mismatched ranks"));
                }
                let cs = contiguous_strides(s);
                let hi = lo + s[*axis];
                v.push(GatherSrc {
                    input: i,
                    base: -(lo as i64) * cs[*axis],
                    strides: cs,
                    select: Some((*axis, lo as u32, hi as u32)),
                });
                lo = hi;
            }
            Ok(v)
        }
        other => Err(nl(k, format!("{} is not a copy", other.name()))),
    }
}

/// Drops unit dims, removes sources that select nothing, and merges runs of dims every
/// source reads contiguously.
fn simplify(out: &[usize], mut sources: Vec<GatherSrc>) -> (Vec<u32>, Vec<GatherSrc>) {
    let mut dims: Vec<usize> = out.to_vec();
    // Unit dims: the coordinate is 0.
    let mut d = 0;
    while d < dims.len() {
        if dims[d] == 1 {
            dims.remove(d);
            sources.retain_mut(|s| {
                s.strides.remove(d);
                match s.select {
                    Some((a, lo, hi)) if a == d => {
                        s.select = None;
                        lo == 0 && hi >= 1
                    }
                    Some((a, lo, hi)) if a > d => {
                        s.select = Some((a - 1, lo, hi));
                        true
                    }
                    _ => true,
                }
            });
        } else {
            d += 1;
        }
    }
    sources.retain(|s| s.select.is_none_or(|(_, lo, hi)| lo < hi));
    // A source covering its whole select axis needs no select.
    for s in &mut sources {
        if let Some((a, lo, hi)) = s.select {
            if lo == 0 && hi as usize == dims[a] {
                s.select = None;
            }
        }
    }
    // Merge d with d + 1 where every source has stride[d] == stride[d+1]·dims[d+1] and does
    // not select on d + 1 (a select on d scales: c[d] in lo..hi is c' in lo·m..hi·m).
    let mut d = 0;
    while d + 1 < dims.len() {
        let m = dims[d + 1];
        let ok = sources.iter().all(|s| {
            s.strides[d] == s.strides[d + 1] * m as i64
                && s.select.is_none_or(|(a, lo, hi)| {
                    a != d + 1
                        && (a != d || u64::from(hi) * m as u64 <= u64::from(u32::MAX) && lo <= hi)
                })
        });
        if ok {
            dims[d] *= m;
            dims.remove(d + 1);
            for s in &mut sources {
                s.strides.remove(d);
                if let Some((a, lo, hi)) = s.select {
                    if a == d {
                        s.select = Some((a, lo * m as u32, hi * m as u32));
                    } else if a > d {
                        s.select = Some((a - 1, lo, hi));
                    }
                }
            }
        } else {
            d += 1;
        }
    }
    (dims.iter().map(|&d| d as u32).collect(), sources)
}

fn float_io(d: DType) -> bool {
    matches!(d, DType::F32 | DType::BF16 | DType::F16)
}

/// Fills in the Tile IR of copy kernel `k` (root op `op`), or says why it cannot.
pub fn tile(g: &Graph, k: &Kernel, op: &Op, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let s = &k.schedule;
    // Inputs of the output's dtype are moved as bits (any dtype); others are converted, which
    // the copy kernel does between 16/32-bit floats.
    for v in &k.inputs {
        let t = ty_of(k, g, *v)?;
        if t.dtype != k.ty.dtype && !(float_io(t.dtype) && float_io(k.ty.dtype)) {
            return Err(nl(
                k,
                format!(
                    "copies from {} to {} are not lowered yet",
                    t.dtype, k.ty.dtype
                ),
            ));
        }
        if t.shape.iter().map(|&d| d as u64).product::<u64>() > u64::from(u32::MAX) {
            return Err(nl(k, "an input of more than 2^32 elements"));
        }
    }
    let n: u64 = k.ty.shape.iter().map(|&d| d as u64).product();
    if n == 0 || n > u64::from(u32::MAX) {
        return Err(nl(k, "empty or too large (>2^32 elements)"));
    }
    let sources = gather_map(k, g, op, &k.ty.shape)?;
    let (dims, sources) = simplify(&k.ty.shape, sources);
    let vector = s.vector.max(1);
    let (grid, tile) = crate::kernels::lower::grid_of(k, n, vector)?;
    tk.grid = [grid, 1, 1];
    tk.block = [s.threads, 1, 1];
    tk.shape = Shape::Gather {
        n,
        vector,
        dims,
        sources,
        tile,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(base: i64, strides: &[i64], select: Option<(usize, u32, u32)>) -> GatherSrc {
        GatherSrc {
            input: 0,
            base,
            strides: strides.to_vec(),
            select,
        }
    }

    #[test]
    fn contiguous_runs_merge_and_unit_dims_drop() {
        // A [4, 1, 6] broadcast of [4, 1, 6]: one dim of 24.
        let (d, s) = simplify(&[4, 1, 6], vec![src(0, &[6, 0, 1], None)]);
        assert_eq!(d, vec![24]);
        assert_eq!(s[0].strides, vec![1]);
        // A transpose [3, 5] -> [5, 3] does not merge.
        let (d, s) = simplify(&[5, 3], vec![src(0, &[1, 5], None)]);
        assert_eq!(d, vec![5, 3]);
        assert_eq!(s[0].strides, vec![1, 5]);
    }

    #[test]
    fn concat_select_axis_stays_and_empty_sources_go() {
        let out = [2, 5, 3];
        let srcs = vec![
            GatherSrc {
                input: 0,
                base: 0,
                strides: vec![6, 3, 1],
                select: Some((1, 0, 2)),
            },
            GatherSrc {
                input: 1,
                base: -2 * 3,
                strides: vec![9, 3, 1],
                select: Some((1, 2, 5)),
            },
            GatherSrc {
                input: 2,
                base: -5 * 3,
                strides: vec![0, 3, 1],
                select: Some((1, 5, 5)),
            },
        ];
        let (d, s) = simplify(&out, srcs);
        assert_eq!(s.len(), 2, "the empty input is dropped");
        // The select axis merges with the dim after it (its range scaled by 3), not with the
        // dim before it.
        assert_eq!(d, vec![2, 15]);
        assert_eq!(s[0].select, Some((1, 0, 6)));
        assert_eq!(s[1].select, Some((1, 6, 15)));
        assert_eq!(s[1].base, -6);
        assert_eq!(s[1].strides, vec![9, 1]);
    }

    #[test]
    fn python_slice_indices() {
        assert_eq!(slice_indices(None, None, Some(-1), 5).unwrap(), (4, 5, -1));
        assert_eq!(
            slice_indices(Some(1), Some(-1), None, 5).unwrap(),
            (1, 3, 1)
        );
        assert_eq!(slice_indices(Some(10), None, None, 5).unwrap(), (5, 0, 1));
        assert_eq!(
            slice_indices(Some(-2), None, Some(2), 7).unwrap(),
            (5, 1, 2)
        );
        assert!(slice_indices(None, None, Some(0), 3).is_none());
    }
}
