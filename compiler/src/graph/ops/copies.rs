//! The copies: ops that move elements without arithmetic, `transpose`, `reshape`, `broadcast`
//! (to a declared shape), `concat`, `slice` (basic indexing `x[...]`), `take` (indexing along
//! an axis by an integer tensor) and its adjoint `scatter_add`. Here: their shape rules
//! ([`slice_indices`], Python's `slice.indices`; [`slice_shape`]; the others in
//! [`CopyFamily::infer`]), the printed attributes, the derivatives (each the adjoint copy),
//! the kernel kind (`copy`; a reshape is no kernel), the cost and the sharding rule.
//!
//! The eager ops are the runtime's (`tessera_runtime::ops::shape_ops`, `order`), which run
//! [`slice_indices`]; the kernel is `kernels::copy` with its index map `kernels::copy_map`.

use super::{AttrPrinter, OpDef, ShardRule};
use crate::graph::autodiff::build::{emit, emit_as, inverse, reshape, sum_to, ty};
use crate::graph::autodiff::slices::{full_range, unslice};
use crate::graph::infer::{broadcast, TypeError};
use crate::graph::Kind;
use crate::graph::{DType, Graph, Op, SliceItem, TensorType, ValueId};

fn tref(g: &Graph, v: ValueId) -> Result<&TensorType, TypeError> {
    g.ty(v).ok_or(TypeError::Undefined(v))
}

/// Python's `slice.indices(len)` for `start:stop:step` over a dimension of length `len`:
/// (first index, element count, step); `None` for a zero step.
pub fn slice_indices(
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
    len: usize,
) -> Option<(i64, usize, i64)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v.saturating_add(n) } else { v };
    let (start, stop) = if step > 0 {
        (
            start.map(|s| clamp(norm(s), 0, n)).unwrap_or(0),
            stop.map(|s| clamp(norm(s), 0, n)).unwrap_or(n),
        )
    } else {
        (
            start.map(|s| clamp(norm(s), -1, n - 1)).unwrap_or(n - 1),
            stop.map(|s| clamp(norm(s), -1, n - 1)).unwrap_or(-1),
        )
    };
    // In i128: `-step` overflows i64 for i64::MIN.
    let (st, sp, stp) = (i128::from(start), i128::from(stop), i128::from(step));
    let count = if stp > 0 {
        if sp > st {
            (sp - st - 1) / stp + 1
        } else {
            0
        }
    } else if st > sp {
        (st - sp - 1) / (-stp) + 1
    } else {
        0
    };
    Some((start, count as usize, step))
}

/// Result shape of `x[items]`.
pub fn slice_shape(shape: &[usize], items: &[SliceItem]) -> Result<Vec<usize>, TypeError> {
    let consumed = items
        .iter()
        .filter(|i| matches!(i, SliceItem::Index(_) | SliceItem::Range { .. }))
        .count();
    if consumed > shape.len() {
        return Err(TypeError::TooManyIndices(shape.to_vec()));
    }
    let mut out = Vec::new();
    let mut dim = 0usize;
    for it in items {
        match it {
            SliceItem::Index(i) => {
                let len = shape.get(dim).copied().unwrap_or(0) as i64;
                let j = if *i < 0 { i + len } else { *i };
                if j < 0 || j >= len {
                    return Err(TypeError::IndexOutOfRange {
                        index: *i,
                        axis: dim,
                    });
                }
                dim += 1;
            }
            SliceItem::Range { start, stop, step } => {
                let len = shape.get(dim).copied().unwrap_or(0);
                out.push(
                    slice_indices(*start, *stop, *step, len)
                        .ok_or(TypeError::ZeroStep)?
                        .1,
                );
                dim += 1;
            }
            SliceItem::NewAxis => out.push(1),
            SliceItem::Ellipsis => {
                for _ in 0..shape.len() - consumed {
                    out.push(shape.get(dim).copied().unwrap_or(0));
                    dim += 1;
                }
            }
        }
    }
    while dim < shape.len() {
        out.push(shape.get(dim).copied().unwrap_or(0));
        dim += 1;
    }
    Ok(out)
}

/// The shape of a transpose by `perm`, which must name each axis of `shape` once.
pub fn transpose_shape(shape: &[usize], perm: &[usize]) -> Result<Vec<usize>, TypeError> {
    let mut seen = vec![false; shape.len()];
    let mut out = Vec::with_capacity(perm.len());
    for &p in perm {
        match seen.get_mut(p) {
            Some(s) if !*s => *s = true,
            _ => return Err(TypeError::NotPermutation(perm.to_vec())),
        }
        out.push(shape[p]);
    }
    if perm.len() != shape.len() {
        return Err(TypeError::NotPermutation(perm.to_vec()));
    }
    Ok(out)
}

fn transpose_type(t: &TensorType, perm: &[usize]) -> Result<TensorType, TypeError> {
    Ok(TensorType::new(transpose_shape(&t.shape, perm)?, t.dtype))
}

/// Why [`concat_shape`] refuses its operands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConcatError {
    /// No operands.
    Empty,
    /// `axis` is not an axis of the first operand.
    Axis,
    /// Operand `index` differs from the first outside `axis` (or in rank).
    Shapes { index: usize },
    /// The concatenated axis overflows.
    TooLarge,
}

/// The shape and dtype of `concat(parts, axis)`: every part has the first one's shape outside
/// `axis`; the lengths along `axis` add up; the dtypes promote.
pub fn concat_shape(
    parts: &[(&[usize], DType)],
    axis: usize,
) -> Result<(Vec<usize>, DType), ConcatError> {
    let (first, mut dtype) = *parts.first().ok_or(ConcatError::Empty)?;
    let mut shape = first.to_vec();
    *shape.get_mut(axis).ok_or(ConcatError::Axis)? = 0;
    for (index, &(s, d)) in parts.iter().enumerate() {
        let same = s.len() == first.len()
            && s.iter()
                .zip(first)
                .enumerate()
                .all(|(i, (a, b))| i == axis || a == b);
        if !same {
            return Err(ConcatError::Shapes { index });
        }
        shape[axis] = shape[axis]
            .checked_add(s[axis])
            .ok_or(ConcatError::TooLarge)?;
        dtype = DType::promote(dtype, d);
    }
    Ok((shape, dtype))
}

fn concat_type(g: &Graph, xs: &[ValueId], axis: usize) -> Result<TensorType, TypeError> {
    let parts = xs
        .iter()
        .map(|x| tref(g, *x).map(|t| (&t.shape[..], t.dtype)))
        .collect::<Result<Vec<_>, _>>()?;
    match concat_shape(&parts, axis) {
        Ok((shape, d)) => Ok(TensorType::new(shape, d)),
        Err(ConcatError::Empty) => Err(TypeError::EmptyConcat),
        Err(ConcatError::Axis) => Err(TypeError::AxisOutOfRange(axis)),
        Err(ConcatError::Shapes { .. } | ConcatError::TooLarge) => Err(TypeError::ConcatShapes),
    }
}

/// `scatter_add` into a tensor of the declared shape `d`.
fn scatter_add_type(
    ti: &TensorType,
    ts: &TensorType,
    axis: usize,
    d: &[usize],
) -> Result<TensorType, TypeError> {
    if !ti.dtype.is_int() || axis >= d.len() {
        return Err(TypeError::Take);
    }
    let mut want = d[..axis].to_vec();
    want.extend(&ti.shape);
    want.extend(&d[axis + 1..]);
    if want != ts.shape {
        return Err(TypeError::Take);
    }
    Ok(TensorType::new(d.to_vec(), ts.dtype))
}

/// The family's [`OpDef`].
pub struct CopyFamily;

impl OpDef for CopyFamily {
    fn name(&self, op: &Op) -> &'static str {
        match op {
            Op::Transpose { .. } => "transpose",
            Op::Reshape { .. } => "reshape",
            Op::Broadcast { .. } => "broadcast",
            Op::Concat { .. } => "concat",
            Op::Slice { .. } => "slice",
            Op::Take { .. } => "take",
            _ => "scatter_add",
        }
    }

    fn infer(&self, g: &Graph, op: &Op, declared: &TensorType) -> Result<TensorType, TypeError> {
        match op {
            Op::Transpose { x, perm } => transpose_type(tref(g, *x)?, perm),
            // a reshape and a broadcast carry their target shape in the declared type
            Op::Reshape { x } => {
                let t = tref(g, *x)?;
                let (n, m): (usize, usize) =
                    (t.shape.iter().product(), declared.shape.iter().product());
                if n != m {
                    return Err(TypeError::Reshape { from: n, to: m });
                }
                Ok(TensorType::new(declared.shape.clone(), t.dtype))
            }
            Op::Broadcast { x } => {
                let t = tref(g, *x)?;
                if broadcast(&t.shape, &declared.shape)? != declared.shape {
                    return Err(TypeError::BroadcastTo {
                        from: t.clone(),
                        to: declared.shape.clone(),
                    });
                }
                Ok(TensorType::new(declared.shape.clone(), t.dtype))
            }
            Op::Concat { xs, axis } => concat_type(g, xs, *axis),
            Op::Slice { x, items } => {
                let t = tref(g, *x)?;
                Ok(TensorType::new(slice_shape(&t.shape, items)?, t.dtype))
            }
            Op::Take { x, index, axis } => {
                let (tx, ti) = (tref(g, *x)?, tref(g, *index)?);
                if !ti.dtype.is_int() || *axis >= tx.shape.len() {
                    return Err(TypeError::Take);
                }
                let mut shape = tx.shape[..*axis].to_vec();
                shape.extend(&ti.shape);
                shape.extend(&tx.shape[axis + 1..]);
                Ok(TensorType::new(shape, tx.dtype))
            }
            Op::ScatterAdd { index, src, axis } => {
                scatter_add_type(tref(g, *index)?, tref(g, *src)?, *axis, &declared.shape)
            }
            _ => Err(TypeError::Undefined(ValueId(0))),
        }
    }

    fn attrs(&self, _g: &Graph, op: &Op, _p: &mut dyn AttrPrinter) -> Vec<String> {
        match op {
            Op::Take { axis, .. } | Op::ScatterAdd { axis, .. } | Op::Concat { axis, .. } => {
                vec![format!("axis = {axis}")]
            }
            Op::Transpose { perm, .. } => vec![format!("perm = {perm:?}")],
            Op::Slice { items, .. } => {
                let s: Vec<String> = items.iter().map(|i| i.to_string()).collect();
                vec![format!("index = [{}]", s.join(", "))]
            }
            // the result type says it all
            _ => Vec::new(),
        }
    }

    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        _y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
        match op {
            // a reshape's cotangent is reshaped back (the same elements); a broadcast's is summed
            // over the broadcast dimensions
            Op::Reshape { x } => {
                let s = ty(g, *x)?.shape;
                Ok(vec![Some(reshape(g, dy, &s)?)])
            }
            Op::Broadcast { x } => {
                let s = ty(g, *x)?.shape;
                Ok(vec![Some(sum_to(g, dy, &s)?)])
            }
            Op::Transpose { perm, .. } => {
                let t = emit(
                    g,
                    Op::Transpose {
                        x: dy,
                        perm: inverse(perm),
                    },
                )?;
                Ok(vec![Some(t)])
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
                Ok(v)
            }
            Op::Slice { x, items } => match unslice(g, *x, items, dy)? {
                Some(dx) => Ok(vec![Some(dx)]),
                None => Err(None),
            },
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
                Ok(vec![Some(dx), None])
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
                Ok(vec![None, Some(t)])
            }
            _ => Err(None),
        }
    }

    fn kernel_kind(&self, op: &Op) -> Option<Kind> {
        match op {
            // a reshape is glue: its kernel is its reader's
            Op::Reshape { .. } => None,
            _ => Some(Kind::Copy),
        }
    }

    fn flops_per_elem(&self, _op: &Op) -> f64 {
        0.0
    }

    fn shard_rule(&self, _op: &Op) -> ShardRule {
        ShardRule::Copy
    }

    fn reduced_len(&self, _g: &Graph, _op: &Op) -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_lang::Span;

    #[test]
    fn transposes_need_a_permutation() {
        assert_eq!(transpose_shape(&[2, 3, 4], &[2, 0, 1]), Ok(vec![4, 2, 3]));
        for bad in [&[0, 0, 1][..], &[0, 1], &[0, 1, 3]] {
            assert_eq!(
                transpose_shape(&[2, 3, 4], bad),
                Err(TypeError::NotPermutation(bad.to_vec()))
            );
        }
    }

    #[test]
    fn concat_lengths_that_overflow_are_refused_not_wrapped() {
        let big = usize::MAX / 2 + 1;
        let mut g = Graph::new("g");
        let t = TensorType::new(vec![big, 1], DType::I8);
        let (a, b) = (
            g.add_param(t.clone(), Span::default()),
            g.add_param(t.clone(), Span::default()),
        );
        let op = Op::Concat {
            xs: vec![a, b],
            axis: 0,
        };
        assert_eq!(
            crate::graph::infer::infer(&g, &op, &t),
            Err(TypeError::ConcatShapes)
        );
        assert_eq!(
            concat_shape(&[(&[2, 3], DType::I8), (&[2, 4], DType::F32)], 1),
            Ok((vec![2, 7], DType::F32))
        );
        assert_eq!(
            concat_shape(&[(&[2, 3], DType::I8), (&[3, 4], DType::F32)], 1),
            Err(ConcatError::Shapes { index: 1 })
        );
    }
}
