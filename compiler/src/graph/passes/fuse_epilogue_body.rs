//! A matmul's one elementwise reader becomes the last step of its epilogue (rule
//! `epilogue_elementwise`): the kernel applies the reader's body to each accumulator before
//! it stores, so the matmul's result is never written out and read back. This takes the
//! chains `fuse_epilogue`'s steps do not express — a ReLU's derivative in a backward pass,
//! `where(pre > 0, dh, 0)` with `dh` a matmul and `pre` another tensor; gelu's derivative
//! multiplying a matmul; any fused chain over a matmul and other tensors.
//!
//! ```text
//! %4 = matmul %0, %1                        %5 = matmul %0, %1 {epilogue = [
//! %5 = fused_elementwise(%2, %4) {   ─▶            elementwise(%2) [gt where]]}
//!   gt %2, 0; where …, %4, 0 }
//! ```
//!
//! Conditions: the matmul has no other reader and is not an output; the reader is not summed
//! over a middle axis (a bias's gradient: `reduction_prologue` computes that sum in the
//! reader's kernel instead, as the backward pass's fusion of bias gradients asks; the matmul
//! then writes its result once more than with this rule); the reader is a
//! one-result elementwise op or fused group of the matmul's shape whose values are floats or
//! masks (no integer arithmetic, so the kernel needs no status word); the group limit holds.
//! The matmul takes the reader's place (every input of the reader is defined there).

use super::{as_body, copy_body, PassCx};
use crate::graph::{DType, Epilogue, EpilogueStep, Fired, Graph, Op, ValueId};
use std::collections::HashMap;

const RULE: &str = "epilogue_elementwise";

/// The reader `c` of matmul `m` as an epilogue body: param 0 the accumulator, then the
/// reader's other inputs.
fn body_of(g: &Graph, c: ValueId, m: ValueId) -> Option<(Vec<ValueId>, Graph)> {
    let (ins, src) = as_body(g, c).filter(|(_, b)| b.outputs.len() == 1)?;
    // the new body: the accumulator first, then the reader's inputs other than the matmul
    let mut nb = Graph::new(src.name.clone());
    let acc = nb.add_param(g.ty(m)?.clone(), g.span(m));
    // `as_body` lists each input once
    let outer: Vec<ValueId> = ins.iter().copied().filter(|x| *x != m).collect();
    let params: Vec<ValueId> = outer
        .iter()
        .map(|x| Some(nb.add_param(g.ty(*x)?.clone(), g.span(*x))))
        .collect::<Option<_>>()?;
    let outs = copy_body(&mut nb, &src, &|i| {
        let x = *ins.get(i)?;
        if x == m {
            Some(acc)
        } else {
            outer.iter().position(|o| *o == x).map(|k| params[k])
        }
    })?;
    nb.outputs = vec![*outs.first()?];
    Some((outer, nb))
}

/// Elements after axis `a` of `v`'s shape.
fn ct_inner(g: &Graph, v: ValueId, a: usize) -> usize {
    g.ty(v).map_or(1, |t| t.shape.iter().skip(a + 1).product())
}

pub fn run(g: &mut Graph, cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let limit = cx.max_fused_ops.unwrap_or(usize::MAX);
    let uses = g.use_counts();
    let mut readers: HashMap<ValueId, ValueId> = HashMap::new();
    for u in g.ids() {
        for x in g.op(u).map(Op::operands).unwrap_or_default() {
            readers.insert(x, u);
        }
    }
    let matmuls: Vec<ValueId> = g
        .ids()
        .filter(|id| matches!(g.op(*id), Some(Op::Matmul { .. })))
        .collect();
    for m in matmuls {
        if uses.get(m.index()).copied() != Some(1) || g.outputs.contains(&m) {
            continue;
        }
        let Some(&c) = readers.get(&m) else { continue };
        // a reader summed over a middle axis (a bias's gradient) is left to
        // `reduction_prologue`, which computes that sum in the reader's kernel
        let summed = g.ids().any(|u| {
            matches!(g.op(u), Some(Op::Reduce { x, axis: Some(a), .. })
                if *x == c && ct_inner(g, c, *a) > 1)
        });
        if summed {
            continue;
        }
        let (Some(mt), Some(ct)) = (g.ty(m).cloned(), g.ty(c).cloned()) else {
            continue;
        };
        if mt.shape != ct.shape {
            continue;
        }
        let Some((inputs, body)) = body_of(g, c, m) else {
            continue;
        };
        let ok_type = |d: DType| d.is_float() || d == DType::Bool;
        let floats = body
            .ids()
            .all(|id| body.ty(id).is_some_and(|t| ok_type(t.dtype)))
            && ct.dtype.is_float();
        let ops = body
            .ids()
            .filter(|id| body.op(*id).is_some_and(Op::is_elementwise))
            .count();
        if !floats || ops > limit {
            continue;
        }
        let Some(Op::Matmul {
            a,
            b,
            accum,
            epilogue,
            tile,
        }) = g.op(m).cloned()
        else {
            continue;
        };
        let span = g.span(c);
        let mut epilogue = epilogue;
        epilogue.push(EpilogueStep {
            step: Epilogue::Body {
                inputs,
                body: Box::new(body),
            },
            span,
        });
        g.replace(
            c,
            Op::Matmul {
                a,
                b,
                accum,
                epilogue,
                tile,
            },
            ct,
        );
        fired.fire(RULE, span);
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::passes::test_util::after_chains;
    use crate::graph::{BinaryOp, ReduceOp, Scalar, TensorType};
    use tessera_lang::Span;

    fn t(shape: &[usize], d: DType) -> TensorType {
        TensorType::new(shape.to_vec(), d)
    }

    /// `where(pre > 0, a @ b, 0)`, summed over rows when `summed`.
    fn graph(summed: bool) -> Graph {
        let sp = Span::new(0, 0, 1);
        let f = DType::F32;
        let mut g = Graph::new("f");
        let a = g.add_param(t(&[16, 8], f), sp);
        let b = g.add_param(t(&[8, 12], f), sp);
        let pre = g.add_param(t(&[16, 12], f), sp);
        let m = g.push(
            Op::Matmul {
                a,
                b,
                accum: None,
                epilogue: vec![],
                tile: None,
            },
            t(&[16, 12], f),
            sp,
        );
        let z = g.push(
            Op::Const {
                value: Scalar::Float(0.0),
            },
            t(&[], f),
            sp,
        );
        let gt = g.push(
            Op::Binary {
                op: BinaryOp::Gt,
                a: pre,
                b: z,
            },
            t(&[16, 12], DType::Bool),
            sp,
        );
        let w = g.push(
            Op::Where {
                cond: gt,
                a: m,
                b: z,
            },
            t(&[16, 12], f),
            sp,
        );
        g.outputs = vec![w];
        if summed {
            let s = g.push(
                Op::Reduce {
                    op: ReduceOp::Sum,
                    x: w,
                    axis: Some(0),
                    keepdim: false,
                },
                t(&[12], f),
                sp,
            );
            g.outputs.push(s);
        }
        g
    }

    fn fuse(g: &mut Graph) -> Fired {
        after_chains(g, None, run)
    }

    #[test]
    fn a_relu_derivative_becomes_the_matmul_epilogue() {
        let mut g = graph(false);
        assert_eq!(fuse(&mut g).rules.len(), 1);
        let Some(Op::Matmul { epilogue, .. }) = g.op(g.outputs[0]) else {
            panic!("not a matmul")
        };
        let [EpilogueStep {
            step: Epilogue::Body { inputs, body },
            ..
        }] = epilogue.as_slice()
        else {
            panic!("no body step: {epilogue:?}")
        };
        assert_eq!(inputs.len(), 1, "pre");
        assert_eq!(body.params.len(), 2, "the accumulator and pre");
        // a matmul is the only kernel left
        let kernels = g
            .ids()
            .filter(|id| crate::graph::kind_of(g.op(*id).unwrap()).is_some())
            .count();
        assert_eq!(kernels, 1);
    }

    #[test]
    fn a_summed_reader_is_left_to_the_reduction() {
        let mut g = graph(true);
        assert!(fuse(&mut g).is_empty());
    }
}
