//! The matrix product `a @ b` (`Op::Matmul`) with NumPy's rules: 1-d operands promoted (and
//! the added axis dropped), batch dimensions broadcast; an optional result dtype
//! (`accum_dtype`), a fused epilogue and prologue, and the tile the call asked for
//! (`tile_shape`). Here: the shape rule ([`matmul_shape`], with the batch and `M K N` the
//! runtime's GEMM runs over) and the dtype rule ([`matmul_dtype`], [`accumulator`]), run by
//! the verifier and by the runtime's eager `matmul`/`infer_matmul` (which the tracer runs);
//! the type of the steps ([`matmul_steps`]); the printed attributes; the derivative; the
//! kernel kind; the sharding rule and the crosscheck's length.
//!
//! Each epilogue step's own type rule is `graph::infer::epilogue_step` (the fusion passes
//! build steps with it); the cost is `cost::matmul_cost`'s panel model; the kernels are
//! `kernels::matmul` (CUDA cores) and the tensor-core templates; the eager GEMM is the
//! runtime's (`tessera_runtime::ops::matmul`, `cpu_gemm`).

use super::{AttrPrinter, OpDef, ShardRule};
use crate::graph::autodiff::build::{matmul, reshape, sum_to, swap_last, ty};
use crate::graph::infer::{broadcast, epilogue_step, TypeError};
use crate::graph::Kind;
use crate::graph::{
    prologue_dtype, split_steps, DType, Epilogue, EpilogueStep, Graph, Op, TensorType, ValueId,
};

/// The shapes of a product after NumPy's 1-d promotion: the broadcast batch, each operand's
/// batch, `M K N` and the result shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulShape {
    pub batch: Vec<usize>,
    pub a_batch: Vec<usize>,
    pub b_batch: Vec<usize>,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub out: Vec<usize>,
}

/// The shape rule of `a @ b`: both at least 1-d ([`TypeError::MatmulRank`]), equal inner
/// dimensions ([`TypeError::MatmulInner`]), batch dimensions that broadcast
/// ([`TypeError::Broadcast`]).
pub fn matmul_shape(a: &[usize], b: &[usize]) -> Result<MatmulShape, TypeError> {
    let (a_batch, m, ka) = match a {
        [k] => (&[][..], None, *k),
        [rest @ .., m, k] => (rest, Some(*m), *k),
        [] => return Err(TypeError::MatmulRank),
    };
    let (b_batch, kb, n) = match b {
        [k] => (&[][..], *k, None),
        [rest @ .., k, n] => (rest, *k, Some(*n)),
        [] => return Err(TypeError::MatmulRank),
    };
    if ka != kb {
        return Err(TypeError::MatmulInner { ka, kb });
    }
    let batch = broadcast(a_batch, b_batch)?;
    let mut out = batch.clone();
    out.extend(m);
    out.extend(n);
    Ok(MatmulShape {
        batch,
        a_batch: a_batch.to_vec(),
        b_batch: b_batch.to_vec(),
        m: m.unwrap_or(1),
        k: ka,
        n: n.unwrap_or(1),
        out,
    })
}

/// The result dtype of `a @ b` with the requested `accum` dtype: the promoted operand dtype
/// (bool gives int64) unless one is asked for; float operands need a float result
/// ([`TypeError::Accum`]).
pub fn matmul_dtype(a: DType, b: DType, accum: Option<DType>) -> Result<DType, TypeError> {
    let p = DType::promote(a, b);
    let p = if p == DType::Bool { DType::I64 } else { p };
    let r = accum.unwrap_or(p);
    if p.is_float() && !r.is_float() {
        return Err(TypeError::Accum {
            accum: r,
            inputs: p,
        });
    }
    Ok(r)
}

/// The dtype a product of `a`, `b` operands with a `result` dtype accumulates in (printed as
/// `accum`): fp64 if either is fp64, else fp32 if either is a float, else int64.
pub fn accumulator(a: DType, b: DType, result: DType) -> DType {
    let p = DType::promote(a, b);
    if p == DType::F64 || result == DType::F64 {
        DType::F64
    } else if p.is_float() || result.is_float() {
        DType::F32
    } else {
        DType::I64
    }
}

/// The type of `a @ b` (`accum`: the requested result dtype).
pub fn matmul_type(
    a: &TensorType,
    b: &TensorType,
    accum: Option<DType>,
) -> Result<TensorType, TypeError> {
    let s = matmul_shape(&a.shape, &b.shape)?;
    Ok(TensorType::new(
        s.out,
        matmul_dtype(a.dtype, b.dtype, accum)?,
    ))
}

/// The type of `a @ b` with `steps` applied: a prologue only as the first step, over A's last
/// axis (its weight and bias `[K]`), of a float A whose dtype the norm keeps.
pub fn matmul_steps(
    g: &Graph,
    a: ValueId,
    b: ValueId,
    accum: Option<DType>,
    steps: &[EpilogueStep],
) -> Result<TensorType, TypeError> {
    let ta = ty(g, a)?;
    let mut t = matmul_type(&ta, &ty(g, b)?, accum)?;
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

/// The family's [`OpDef`].
pub struct MatmulFamily;

/// The epilogue steps after the prologue as printed: `add %2`, `gelu`, `cast bf16`, …
fn step_text(s: &EpilogueStep, p: &mut dyn AttrPrinter) -> String {
    p.span(s.span);
    match &s.step {
        Epilogue::Binary { op, operand } => format!("{} {}", op.name(), p.value(*operand)),
        Epilogue::Scalar { op, value } => format!("{} {value}", op.name()),
        Epilogue::Unary(u) => u.name().to_string(),
        Epilogue::Cast(d) => format!("cast {d}"),
        Epilogue::Body { inputs, body } => {
            // the body's ops by name, its inputs after the accumulator
            let ins: Vec<String> = inputs.iter().map(|v| p.value(*v)).collect();
            let ops: Vec<&str> = body
                .ids()
                .filter_map(|id| body.op(id))
                .filter(|o| o.is_elementwise())
                .map(|o| o.name())
                .collect();
            format!("elementwise({}) [{}]", ins.join(", "), ops.join(" "))
        }
        Epilogue::Prologue(pr) => format!("misplaced prologue {}", pr.norm.name()),
    }
}

impl OpDef for MatmulFamily {
    fn name(&self, _op: &Op) -> &'static str {
        "matmul"
    }

    fn infer(&self, g: &Graph, op: &Op, _declared: &TensorType) -> Result<TensorType, TypeError> {
        match op {
            Op::Matmul {
                a,
                b,
                accum,
                epilogue,
                ..
            } => matmul_steps(g, *a, *b, *accum, epilogue),
            _ => Err(TypeError::Undefined(ValueId(0))),
        }
    }

    fn attrs(&self, g: &Graph, op: &Op, p: &mut dyn AttrPrinter) -> Vec<String> {
        let Op::Matmul {
            a,
            b,
            accum,
            epilogue,
            tile,
        } = op
        else {
            return Vec::new();
        };
        let dt = |v: &ValueId| g.ty(*v).map(|t| t.dtype);
        let mut v = Vec::new();
        if let (Some(da), Some(db)) = (dt(a), dt(b)) {
            let res = accum.unwrap_or(DType::promote(da, db));
            v.push(format!("accum = {}", accumulator(da, db, res)));
        }
        if let Some([bm, bn, bk]) = tile {
            v.push(format!("tile_shape = [{bm}, {bn}, {bk}]"));
        }
        let (prologue, rest) = split_steps(epilogue);
        if let (Some(pr), Some(first)) = (prologue, epilogue.first()) {
            // the prologue's own span: the norm it came from
            p.span(first.span);
            let ws: Vec<String> = pr.operands().map(|w| p.value(w)).collect();
            let ws = if ws.is_empty() {
                String::new()
            } else {
                format!(" {}", ws.join(", "))
            };
            v.push(format!(
                "prologue = [{}{ws} {{eps = {:?}}}]",
                pr.norm.name(),
                pr.eps
            ));
        }
        if !rest.is_empty() {
            let steps: Vec<String> = rest.iter().map(|s| step_text(s, p)).collect();
            v.push(format!("epilogue = [{}]", steps.join(", ")));
        }
        v
    }

    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
        // a product with fused steps has no derivative (autodiff runs before fusion)
        let Op::Matmul { a, b, epilogue, .. } = op else {
            return Err(None);
        };
        if !epilogue.is_empty() {
            return Err(None);
        }
        let (ta, tb) = (ty(g, *a)?, ty(g, *b)?);
        // 1-d operands as matrices: a [k] is [1,k], b [k] is [k,1]
        let a2 = if ta.shape.len() == 1 {
            reshape(g, *a, &[1, ta.shape[0]])?
        } else {
            *a
        };
        let b2 = if tb.shape.len() == 1 {
            reshape(g, *b, &[tb.shape[0], 1])?
        } else {
            *b
        };
        let mut ys = ty(g, y)?.shape;
        if ta.shape.len() == 1 {
            ys.insert(ys.len() - usize::from(tb.shape.len() != 1), 1);
        }
        if tb.shape.len() == 1 {
            ys.push(1);
        }
        let dy2 = reshape(g, dy, &ys)?;
        let bt = swap_last(g, b2)?;
        let da = matmul(g, dy2, bt)?;
        let at = swap_last(g, a2)?;
        let db = matmul(g, at, dy2)?;
        // summed over broadcast batch dimensions to the matrix shapes, then 1-d again
        let (sa, sb) = (ty(g, a2)?.shape, ty(g, b2)?.shape);
        let da = sum_to(g, da, &sa)?;
        let db = sum_to(g, db, &sb)?;
        Ok(vec![
            Some(reshape(g, da, &ta.shape)?),
            Some(reshape(g, db, &tb.shape)?),
        ])
    }

    fn kernel_kind(&self, _op: &Op) -> Option<Kind> {
        Some(Kind::Matmul)
    }

    /// Not read: a product's cost is `cost::matmul_cost`'s model of its tiles and panels.
    fn flops_per_elem(&self, _op: &Op) -> f64 {
        0.0
    }

    fn shard_rule(&self, _op: &Op) -> ShardRule {
        ShardRule::Matmul
    }

    fn reduced_len(&self, g: &Graph, op: &Op) -> u64 {
        match op {
            Op::Matmul { a, .. } => g
                .ty(*a)
                .and_then(|t| t.shape.last())
                .map_or(1, |&d| d as u64),
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_d_operands_batches_and_accum() {
        let s = matmul_shape(&[3], &[2, 3, 4]).map(|s| (s.batch, s.m, s.k, s.n, s.out));
        assert_eq!(s, Ok((vec![2], 1, 3, 4, vec![2, 4])));
        assert_eq!(
            matmul_shape(&[5, 1, 2, 3], &[4, 3, 7]).map(|s| s.out),
            Ok(vec![5, 4, 2, 7])
        );
        assert_eq!(
            matmul_shape(&[2, 3], &[4, 5]),
            Err(TypeError::MatmulInner { ka: 3, kb: 4 })
        );
        assert_eq!(matmul_shape(&[], &[4]), Err(TypeError::MatmulRank));
        assert_eq!(matmul_dtype(DType::Bool, DType::Bool, None), Ok(DType::I64));
        assert_eq!(
            matmul_dtype(DType::BF16, DType::BF16, Some(DType::I32)),
            Err(TypeError::Accum {
                accum: DType::I32,
                inputs: DType::BF16
            })
        );
        assert_eq!(
            accumulator(DType::BF16, DType::BF16, DType::BF16),
            DType::F32
        );
    }
}
