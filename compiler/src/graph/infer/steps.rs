//! The type rule of a matmul's epilogue steps, each applied to the accumulator (the product
//! and its prologue: `graph::ops::matmul`).

use super::{broadcast, ty, TypeError, R};
use crate::graph::{DType, Epilogue, Graph, TensorType};

/// Result type of one epilogue step applied to an accumulator of type `acc`.
pub fn epilogue_step(g: &Graph, acc: &TensorType, step: &Epilogue) -> R<TensorType> {
    Ok(match step {
        Epilogue::Binary { op, operand } => {
            let o = ty(g, *operand)?;
            let shape = broadcast(&acc.shape, &o.shape)?;
            if shape != acc.shape {
                return Err(TypeError::EpilogueShape {
                    operand: o.clone(),
                    acc: acc.shape.clone(),
                });
            }
            TensorType::new(shape, op.result_dtype(acc.dtype, o.dtype))
        }
        Epilogue::Scalar { op, value } => TensorType::new(
            acc.shape.clone(),
            op.result_dtype(acc.dtype, DType::promote_scalar(acc.dtype, value.kind())),
        ),
        Epilogue::Unary(u) => TensorType::new(acc.shape.clone(), u.result_dtype(acc.dtype)),
        Epilogue::Cast(d) => TensorType::new(acc.shape.clone(), *d),
        Epilogue::Body { inputs, body } => {
            let bad = TypeError::FusedBody(
                "an epilogue body's params are the accumulator and its inputs",
            );
            if body.params.len() != inputs.len() + 1 {
                return Err(bad);
            }
            if ty(body, body.params[0])? != acc {
                return Err(bad);
            }
            for (i, p) in inputs.iter().zip(&body.params[1..]) {
                if ty(g, *i)? != ty(body, *p)? {
                    return Err(bad);
                }
            }
            let out = match body.outputs.as_slice() {
                [o] => ty(body, *o)?.clone(),
                _ => return Err(TypeError::FusedBody("an epilogue body has one output")),
            };
            if out.shape != acc.shape {
                return Err(TypeError::FusedBody(
                    "an epilogue body keeps the accumulator's shape",
                ));
            }
            out
        }
        Epilogue::Prologue(_) => {
            return Err(TypeError::FusedBody("a matmul prologue is its first step"))
        }
    })
}
