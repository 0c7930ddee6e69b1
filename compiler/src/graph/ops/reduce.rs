//! The reductions: `sum mean max min` over one axis or all of them, with `keepdim`
//! (`Op::Reduce`; each op's name, dtype rule and derivative is its row of
//! [`crate::graph::REDUCE_OPS`]). Here: the shape and dtype rule ([`reduce_type`], run by the
//! verifier, by `fused_reduce`'s and by the runtime's eager `infer_reduce`, which the tracer
//! runs), the printed attributes, the derivative, the kernel kind, the cost, the sharding rule
//! and the crosscheck's length.
//!
//! The eager kernels are the runtime's (`tessera_runtime::ops::reduce`); the kernel templates
//! `kernels::rows` (the last axis or all) and `kernels::axis` (a middle axis). A reduction of
//! an elementwise body becomes one `fused_reduce` (`graph::passes::fuse_reduce`).

use super::{AttrPrinter, OpDef, ShardRule};
use crate::graph::infer::TypeError;
use crate::graph::Kind;
use crate::graph::{DType, Graph, Op, ReduceOp, TensorType, ValueId};
use std::fmt;

/// An axis out of range for a tensor of `ndim` dimensions (`axis` as given, maybe negative).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AxisError {
    pub axis: isize,
    pub ndim: usize,
}

impl fmt::Display for AxisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let AxisError { axis, ndim } = *self;
        write!(
            f,
            "axis {axis} is out of range for a tensor with {ndim} dimension{}",
            if ndim == 1 { "" } else { "s" }
        )
    }
}

/// The shape and dtype of `op(x, axis, keepdim)` for an `x` of `shape` and `dtype`: `axis`
/// may count from the end; `None` reduces every axis (to a 0-d result, or all ones with
/// `keepdim`).
pub fn reduce_type(
    op: ReduceOp,
    shape: &[usize],
    dtype: DType,
    axis: Option<isize>,
    keepdim: bool,
) -> Result<(Vec<usize>, DType), AxisError> {
    let nd = shape.len();
    let out = match axis {
        None if keepdim => vec![1; nd],
        None => vec![],
        Some(ax) => {
            let a = if ax < 0 { ax + nd as isize } else { ax };
            if a < 0 || a >= nd as isize {
                return Err(AxisError { axis: ax, ndim: nd });
            }
            let mut s = shape.to_vec();
            if keepdim {
                s[a as usize] = 1;
            } else {
                s.remove(a as usize);
            }
            s
        }
    };
    Ok((out, op.result_dtype(dtype)))
}

/// [`reduce_type`] of a Graph IR operand type (axes counted from the front).
pub fn reduce_tensor_type(
    t: &TensorType,
    op: ReduceOp,
    axis: Option<usize>,
    keepdim: bool,
) -> Result<TensorType, TypeError> {
    let ax = match axis {
        Some(a) => Some(isize::try_from(a).map_err(|_| TypeError::AxisOutOfRange(a))?),
        None => None,
    };
    match reduce_type(op, &t.shape, t.dtype, ax, keepdim) {
        Ok((shape, d)) => Ok(TensorType::new(shape, d)),
        Err(_) => Err(TypeError::AxisOutOfRange(axis.unwrap_or(0))),
    }
}

/// The family's [`OpDef`].
pub struct ReduceFamily;

fn parts(op: &Op) -> Result<(ReduceOp, ValueId, Option<usize>, bool), TypeError> {
    match op {
        Op::Reduce {
            op,
            x,
            axis,
            keepdim,
        } => Ok((*op, *x, *axis, *keepdim)),
        _ => Err(TypeError::Undefined(ValueId(0))),
    }
}

impl OpDef for ReduceFamily {
    fn name(&self, op: &Op) -> &'static str {
        parts(op).map_or("reduce", |p| p.0.name())
    }

    fn infer(&self, g: &Graph, op: &Op, _declared: &TensorType) -> Result<TensorType, TypeError> {
        let (r, x, axis, keepdim) = parts(op)?;
        let t = g.ty(x).ok_or(TypeError::Undefined(x))?;
        reduce_tensor_type(t, r, axis, keepdim)
    }

    fn attrs(&self, _g: &Graph, op: &Op, _p: &mut dyn AttrPrinter) -> Vec<String> {
        let Ok((_, _, axis, keepdim)) = parts(op) else {
            return Vec::new();
        };
        let mut v = Vec::new();
        if let Some(a) = axis {
            v.push(format!("axis = {a}"));
        }
        v.push(format!("keepdim = {keepdim}"));
        v
    }

    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
        let (r, x, axis, keepdim) = parts(op)?;
        match r.row().vjp {
            Some(f) => Ok(vec![Some(f(g, x, y, dy, axis, keepdim)?)]),
            None => Err(None),
        }
    }

    fn kernel_kind(&self, _op: &Op) -> Option<Kind> {
        Some(Kind::Reduce)
    }

    fn flops_per_elem(&self, _op: &Op) -> f64 {
        1.0
    }

    fn shard_rule(&self, op: &Op) -> ShardRule {
        let (r, _, axis, _) = parts(op).unwrap_or((ReduceOp::Max, ValueId(0), None, false));
        ShardRule::Reduce {
            axis,
            partial: matches!(r, ReduceOp::Sum | ReduceOp::Mean),
        }
    }

    fn reduced_len(&self, g: &Graph, op: &Op) -> u64 {
        let Ok((_, x, axis, _)) = parts(op) else {
            return 1;
        };
        let Some(t) = g.ty(x) else { return 1 };
        match axis {
            Some(a) => t.shape.get(a).map_or(1, |&d| d as u64),
            None => t.shape.iter().map(|&d| d as u64).product(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_count_from_the_end_and_dtypes_follow_the_op() {
        assert_eq!(
            reduce_type(ReduceOp::Mean, &[2, 3, 4], DType::I32, Some(-2), true),
            Ok((vec![2, 1, 4], DType::F32))
        );
        assert_eq!(
            reduce_type(ReduceOp::Sum, &[2, 3], DType::Bool, None, false),
            Ok((vec![], DType::I64))
        );
        let e = reduce_type(ReduceOp::Max, &[5], DType::F16, Some(1), false);
        assert_eq!(e, Err(AxisError { axis: 1, ndim: 1 }));
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("axis 1 is out of range for a tensor with 1 dimension".into())
        );
    }
}
