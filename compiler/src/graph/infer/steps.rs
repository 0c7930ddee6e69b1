//! The type rules of a matmul's steps: its prologue (a norm of A, first if at all) and each
//! epilogue step applied to the accumulator.

use super::{broadcast, matmul, ty, TypeError, R};
use crate::graph::{prologue_dtype, DType, Epilogue, EpilogueStep, Graph, TensorType, ValueId};

/// The type of `a @ b` with `steps` applied: a prologue only as the first step, over A's last
/// axis (its weight and bias `[K]`), of a float A whose dtype the norm keeps.
pub(super) fn matmul_steps(
    g: &Graph,
    a: ValueId,
    b: ValueId,
    accum: Option<DType>,
    steps: &[EpilogueStep],
) -> R<TensorType> {
    let ta = ty(g, a)?;
    let mut t = matmul(ta, ty(g, b)?, accum)?;
    for (i, s) in steps.iter().enumerate() {
        t = match &s.step {
            Epilogue::Prologue(p) => {
                if i != 0 {
                    return Err(TypeError::FusedBody("a matmul prologue is its first step"));
                }
                if !prologue_dtype(ta.dtype) {
                    return Err(TypeError::FusedBody(
                        "a matmul prologue normalises a float A (fp32, fp64, bf16, fp16, tf32)",
                    ));
                }
                let d = *ta.shape.last().ok_or(TypeError::MatmulRank)?;
                for w in p.operands() {
                    if ty(g, w)?.shape != [d] {
                        return Err(TypeError::NormParam {
                            what: "matmul prologue parameter",
                            d,
                        });
                    }
                }
                t
            }
            step => epilogue_step(g, &t, step)?,
        };
    }
    Ok(t)
}

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
