//! The elementwise ops: `Unary` (the [`UnaryOp`] table), `Binary` (the [`BinaryOp`] table),
//! `where(cond, a, b)` and `cast`. Everything about them as ops is here: the shape and dtype
//! rule (NumPy broadcasting, SPEC §4 promotion with Python scalars: [`binary_type`],
//! [`unary_type`], [`where_type`]), run by the verifier and by the runtime's eager ops (which
//! the tracer runs), the printed attributes (none: the operands and types say it all), the
//! derivative, the kernel kind, the cost and the sharding rule.
//!
//! Each unary and binary op's own facts (its name, result dtype, derivative) are its row of
//! the tables in `graph::types` / `graph::derivs`, which matmul epilogues share. The eager
//! evaluation is the runtime's (`tessera_runtime::ops::elementwise`); in a kernel a chain of
//! them is one `fused_elementwise` (`graph::passes`), lowered by `kernels::elementwise`.

use super::{AttrPrinter, OpDef, ShardRule};
use crate::dtype::ScalarKind;
use crate::graph::autodiff::build::{route, sum_to, ty};
use crate::graph::infer::{broadcast, TypeError};
use crate::graph::Kind;
use crate::graph::{BinaryOp, DType, Graph, Op, TensorType, UnaryOp, ValueId};

/// What the dtype rule needs to know about an operand: a tensor's dtype, or the kind of a
/// Python scalar (which takes the dtype of the tensor it meets, SPEC §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandType {
    Tensor(DType),
    Scalar(ScalarKind),
}

/// The promoted dtype of two operands (tensor/tensor, tensor/scalar, scalar/scalar).
pub fn promote_operands(a: OperandType, b: OperandType) -> DType {
    match (a, b) {
        (OperandType::Tensor(x), OperandType::Tensor(y)) => DType::promote(x, y),
        (OperandType::Tensor(x), OperandType::Scalar(k))
        | (OperandType::Scalar(k), OperandType::Tensor(x)) => DType::promote_scalar(x, k),
        (OperandType::Scalar(k1), OperandType::Scalar(k2)) => {
            let d = |k: ScalarKind| match k {
                ScalarKind::Int => DType::I64,
                ScalarKind::Float => DType::F32,
                ScalarKind::Bool => DType::Bool,
            };
            DType::promote(d(k1), d(k2))
        }
    }
}

/// The shape and dtype of `a op b`: the broadcast shape and the op's result dtype of the
/// promoted operands ([`BinaryOp::result_for`]).
pub fn binary_type(
    op: BinaryOp,
    a: (&[usize], OperandType),
    b: (&[usize], OperandType),
) -> Result<(Vec<usize>, DType), TypeError> {
    let shape = broadcast(a.0, b.0)?;
    Ok((shape, op.result_for(promote_operands(a.1, b.1))))
}

/// The dtype of `op(x)` for an `x` of dtype `d` (float functions of ints give fp32; neg, abs,
/// relu keep ints; tests give bool).
pub fn unary_type(op: UnaryOp, d: DType) -> DType {
    op.result_dtype(d)
}

/// The shape and dtype of `where(cond, a, b)`: the three shapes broadcast, `a` and `b`
/// promoted.
pub fn where_type(
    cond: &[usize],
    a: (&[usize], OperandType),
    b: (&[usize], OperandType),
) -> Result<(Vec<usize>, DType), TypeError> {
    let shape = broadcast(&broadcast(cond, a.0)?, b.0)?;
    Ok((shape, promote_operands(a.1, b.1)))
}

/// The family's [`OpDef`].
pub struct ElementwiseFamily;

/// A tensor operand's shape and [`OperandType`] in `g`.
fn operand(g: &Graph, v: ValueId) -> Result<(&[usize], OperandType), TypeError> {
    let t = g.ty(v).ok_or(TypeError::Undefined(v))?;
    Ok((&t.shape, OperandType::Tensor(t.dtype)))
}

fn is_complex(g: &Graph, v: ValueId) -> bool {
    g.ty(v).is_some_and(|t| t.dtype.is_complex())
}

impl OpDef for ElementwiseFamily {
    fn name(&self, op: &Op) -> &'static str {
        match op {
            Op::Unary { op, .. } => op.name(),
            Op::Binary { op, .. } => op.name(),
            Op::Where { .. } => "where",
            _ => "cast",
        }
    }

    fn infer(&self, g: &Graph, op: &Op, declared: &TensorType) -> Result<TensorType, TypeError> {
        let (shape, d) = match op {
            Op::Unary { op, x } => {
                let t = g.ty(*x).ok_or(TypeError::Undefined(*x))?;
                (t.shape.clone(), unary_type(*op, t.dtype))
            }
            Op::Binary { op, a, b } => binary_type(*op, operand(g, *a)?, operand(g, *b)?)?,
            Op::Where { cond, a, b } => {
                let c = g.ty(*cond).ok_or(TypeError::Undefined(*cond))?;
                where_type(&c.shape, operand(g, *a)?, operand(g, *b)?)?
            }
            // a cast's target dtype is the one it is declared with
            Op::Cast { x } => (operand(g, *x)?.0.to_vec(), declared.dtype),
            _ => return Err(TypeError::Undefined(ValueId(0))),
        };
        Ok(TensorType::new(shape, d))
    }

    fn attrs(&self, _g: &Graph, _op: &Op, _p: &mut dyn AttrPrinter) -> Vec<String> {
        Vec::new()
    }

    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
        match op {
            // on complex values the real ops' derivatives hold for the linear ones with real
            // coefficients only (negation, + and −); the others need the conjugate (not
            // written)
            Op::Unary { op: u, x } if is_complex(g, *x) && *u != UnaryOp::Neg => Err(None),
            Op::Binary { op: b, .. }
                if is_complex(g, y) && !matches!(b, BinaryOp::Add | BinaryOp::Sub) =>
            {
                Err(None)
            }
            Op::Unary { op: u, x } => match u.row().vjp {
                Some(f) => Ok(vec![Some(f(g, *x, y, dy)?)]),
                None => Err(None),
            },
            Op::Binary { op: b, a, b: bb } => match b.row().vjp {
                Some(f) => {
                    let (da, db) = f(g, *a, *bb, y, dy)?;
                    let sa = ty(g, *a)?.shape;
                    let sb = ty(g, *bb)?.shape;
                    Ok(vec![Some(sum_to(g, da, &sa)?), Some(sum_to(g, db, &sb)?)])
                }
                None => Err(None),
            },
            // the cotangent goes to the side the condition picked, summed over broadcasting
            Op::Where { cond, a, b } => {
                let sa = ty(g, *a)?.shape;
                let sb = ty(g, *b)?.shape;
                let (da, db) = route(g, *cond, dy)?;
                Ok(vec![
                    None,
                    Some(sum_to(g, da, &sa)?),
                    Some(sum_to(g, db, &sb)?),
                ])
            }
            Op::Cast { .. } => Ok(vec![Some(dy)]),
            _ => Err(None),
        }
    }

    fn kernel_kind(&self, _op: &Op) -> Option<Kind> {
        Some(Kind::Elementwise)
    }

    fn flops_per_elem(&self, _op: &Op) -> f64 {
        1.0
    }

    fn shard_rule(&self, _op: &Op) -> ShardRule {
        ShardRule::Elementwise
    }

    fn reduced_len(&self, _g: &Graph, _op: &Op) -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_take_the_tensor_dtype_and_shapes_broadcast() {
        let t = |d| OperandType::Tensor(d);
        let s = OperandType::Scalar;
        // a Python float next to an int tensor gives fp32; an int next to bf16 keeps bf16
        assert_eq!(
            binary_type(
                BinaryOp::Add,
                (&[2, 1], t(DType::I32)),
                (&[], s(ScalarKind::Float))
            ),
            Ok((vec![2, 1], DType::F32))
        );
        assert_eq!(
            binary_type(
                BinaryOp::Lt,
                (&[3], t(DType::BF16)),
                (&[2, 1], s(ScalarKind::Int))
            ),
            Ok((vec![2, 3], DType::Bool))
        );
        assert_eq!(unary_type(UnaryOp::Exp, DType::I64), DType::F32);
        assert_eq!(
            where_type(&[4, 1], (&[5], t(DType::F16)), (&[], t(DType::F32))),
            Ok((vec![4, 5], DType::F32))
        );
        assert!(matches!(
            where_type(&[4], (&[5], t(DType::F16)), (&[], t(DType::F32))),
            Err(TypeError::Broadcast { .. })
        ));
    }
}
