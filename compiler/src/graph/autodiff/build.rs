//! The ops derivatives build with: typed emission, constants, casts, broadcasts and the sums
//! that reverse them.

use super::R;
use crate::graph::infer::{infer, TypeError};
use crate::graph::{BinaryOp, DType, Graph, Op, ReduceOp, Scalar, TensorType, UnaryOp, ValueId};
use tessera_lang::Span;

/// The type of `v`.
pub(crate) fn ty(g: &Graph, v: ValueId) -> R<TensorType> {
    g.ty(v).cloned().ok_or(TypeError::Undefined(v))
}

/// Appends `op` with the type [`infer`] gives it (spans are set by [`grad`] afterwards).
pub(crate) fn emit(g: &mut Graph, op: Op) -> R<ValueId> {
    let t = infer(g, &op, &TensorType::new(vec![], DType::F32))?;
    Ok(g.push(op, t, Span::default()))
}

/// Appends `op` whose attributes live in its type (`declared`: cast, reshape, broadcast, const).
pub(crate) fn emit_as(g: &mut Graph, op: Op, declared: TensorType) -> R<ValueId> {
    let t = infer(g, &op, &declared)?;
    Ok(g.push(op, t, Span::default()))
}

/// A 0-d constant of dtype `d`.
pub(crate) fn konst(g: &mut Graph, v: f64, d: DType) -> R<ValueId> {
    emit_as(
        g,
        Op::Const {
            value: Scalar::Float(v),
        },
        TensorType::new(vec![], d),
    )
}

pub(crate) fn un(g: &mut Graph, op: UnaryOp, x: ValueId) -> R<ValueId> {
    emit(g, Op::Unary { op, x })
}

pub(crate) fn bin(g: &mut Graph, op: BinaryOp, a: ValueId, b: ValueId) -> R<ValueId> {
    emit(g, Op::Binary { op, a, b })
}

/// `a op c` with `c` a constant in `a`'s dtype.
pub(crate) fn bin_c(g: &mut Graph, op: BinaryOp, a: ValueId, c: f64) -> R<ValueId> {
    let d = ty(g, a)?.dtype;
    let k = konst(g, c, d)?;
    bin(g, op, a, k)
}

pub(crate) fn select(g: &mut Graph, cond: ValueId, a: ValueId, b: ValueId) -> R<ValueId> {
    emit(g, Op::Where { cond, a, b })
}

/// `(where(cond, v, 0), where(cond, 0, v))`: `v` routed by `cond` to two places.
pub(crate) fn route(g: &mut Graph, cond: ValueId, v: ValueId) -> R<(ValueId, ValueId)> {
    let yes = keep_where(g, cond, v)?;
    let z = konst(g, 0.0, ty(g, v)?.dtype)?;
    let no = select(g, cond, z, v)?;
    Ok((yes, no))
}

/// `where(cond, v, 0)`.
pub(crate) fn keep_where(g: &mut Graph, cond: ValueId, v: ValueId) -> R<ValueId> {
    let z = konst(g, 0.0, ty(g, v)?.dtype)?;
    select(g, cond, v, z)
}

pub(crate) fn cast(g: &mut Graph, x: ValueId, d: DType) -> R<ValueId> {
    let t = ty(g, x)?;
    if t.dtype == d {
        return Ok(x);
    }
    emit_as(g, Op::Cast { x }, TensorType::new(t.shape, d))
}

pub(crate) fn reshape(g: &mut Graph, x: ValueId, shape: &[usize]) -> R<ValueId> {
    let t = ty(g, x)?;
    if t.shape == shape {
        return Ok(x);
    }
    emit_as(
        g,
        Op::Reshape { x },
        TensorType::new(shape.to_vec(), t.dtype),
    )
}

pub(crate) fn broadcast_to(g: &mut Graph, x: ValueId, shape: &[usize]) -> R<ValueId> {
    let t = ty(g, x)?;
    if t.shape == shape {
        return Ok(x);
    }
    // A 0-d value goes through a reshape to ones first: the broadcast kernel reads its input
    // from a buffer, which a `const` feeding it directly does not have.
    let x = if t.shape.is_empty() {
        reshape(g, x, &vec![1; shape.len()])?
    } else {
        x
    };
    if ty(g, x)?.shape == shape {
        return Ok(x);
    }
    emit_as(
        g,
        Op::Broadcast { x },
        TensorType::new(shape.to_vec(), t.dtype),
    )
}

pub(crate) fn sum_axis(g: &mut Graph, x: ValueId, axis: usize, keepdim: bool) -> R<ValueId> {
    emit(
        g,
        Op::Reduce {
            op: ReduceOp::Sum,
            x,
            axis: Some(axis),
            keepdim,
        },
    )
}

/// `sum(x, axis, keepdim)`.
pub(crate) fn sum_reduce(
    g: &mut Graph,
    x: ValueId,
    axis: Option<usize>,
    keepdim: bool,
) -> R<ValueId> {
    emit(
        g,
        Op::Reduce {
            op: ReduceOp::Sum,
            x,
            axis,
            keepdim,
        },
    )
}

/// `x` (of a broadcast result's shape) summed down to `shape`: the reverse of broadcasting
/// (leading dimensions summed away, size-1 dimensions summed with keepdim).
pub(crate) fn sum_to(g: &mut Graph, x: ValueId, shape: &[usize]) -> R<ValueId> {
    let mut v = x;
    let mut cur = ty(g, v)?.shape;
    while cur.len() > shape.len() {
        v = sum_axis(g, v, 0, false)?;
        cur.remove(0);
    }
    for i in 0..shape.len() {
        if shape[i] == 1 && cur.get(i).is_some_and(|&c| c != 1) {
            v = sum_axis(g, v, i, true)?;
            cur[i] = 1;
        }
    }
    reshape(g, v, shape)
}

/// The inverse of permutation `perm`.
pub(crate) fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        if let Some(s) = inv.get_mut(p) {
            *s = i;
        }
    }
    inv
}

/// `x` with its last two axes swapped.
pub(crate) fn swap_last(g: &mut Graph, x: ValueId) -> R<ValueId> {
    let n = ty(g, x)?.shape.len();
    let mut perm: Vec<usize> = (0..n).collect();
    perm.swap(n - 2, n - 1);
    emit(g, Op::Transpose { x, perm })
}

pub(crate) fn matmul(g: &mut Graph, a: ValueId, b: ValueId) -> R<ValueId> {
    emit(
        g,
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
            tile: None,
        },
    )
}

/// The dtype cotangents of a value of dtype `d` are carried in (a complex value's in its own
/// dtype).
pub(crate) fn cot_dtype(d: DType) -> DType {
    if d.is_complex() {
        d
    } else if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}
