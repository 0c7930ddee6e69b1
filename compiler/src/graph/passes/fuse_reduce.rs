//! A reduction over a middle axis fused into the elementwise kernel that produces its operand
//! (rule `reduction_prologue`): the reduction kernel evaluates the elementwise body per
//! element as it folds, and writes the operand out too when something else reads it. The
//! typical case is a backward pass: a bias's gradient is the sum over the batch rows of the
//! gradient flowing into the bias add, which the weight's gradient (a matmul) also reads; the
//! sum is computed by the kernel that computes that gradient.
//!
//! ```text
//! %5 = fused_elementwise(%1, %2) {…dz…}            %5 = fused_reduce(%1, %2) {
//! %6 = matmul %4, %5                        ─▶         …dz…  yield %dz, %dz
//! %7 = sum %5 {axis = 0}                             } {op = sum, axis = 0, keepdim = false}
//!                                                   %6 = result %5 {index = 1}
//!                                                   %7 = matmul %4, %6
//! ```
//!
//! Conditions: the reduction is over one axis that is not the last (the axis kernel: lanes
//! across the columns after it), the operand is a one-result elementwise op or fused group
//! whose values are floats or masks (no status word), and the group limit holds. The fused op
//! takes the operand's place (its inputs are defined there); the reduction's readers read it.

use super::{as_body, copy_op, finish_rebuild, PassCx};
use crate::graph::{DType, Fired, Graph, Op, ValueId};

const RULE: &str = "reduction_prologue";

fn float_like(d: DType) -> bool {
    d.is_float()
}

/// The operand `v` as a fused op's inputs and body with one output.
fn one_body(g: &Graph, v: ValueId) -> Option<(Vec<ValueId>, Graph)> {
    as_body(g, v).filter(|(_, b)| b.outputs.len() == 1)
}

/// A reduction `r` whose operand `v` can be fused: (r, v, inputs, body).
fn find(g: &Graph, limit: usize) -> Option<(ValueId, ValueId, Vec<ValueId>, Graph)> {
    for r in g.ids() {
        let Some(Op::Reduce {
            x,
            axis: Some(axis),
            ..
        }) = g.op(r)
        else {
            continue;
        };
        let (Some(xt), Some(rt)) = (g.ty(*x), g.ty(r)) else {
            continue;
        };
        let inner: usize = xt.shape.iter().skip(axis + 1).product();
        if inner <= 1 || !float_like(rt.dtype) {
            continue;
        }
        let Some((inputs, body)) = one_body(g, *x) else {
            continue;
        };
        // floats (and comparison masks): no op that can fail, no integer arithmetic
        let floats = body.ids().all(|id| {
            body.ty(id)
                .is_some_and(|t| float_like(t.dtype) || t.dtype == DType::Bool)
        }) && body
            .outputs
            .iter()
            .all(|o| body.ty(*o).is_some_and(|t| float_like(t.dtype)));
        let ops = body
            .ids()
            .filter(|id| body.op(*id).is_some_and(Op::is_elementwise))
            .count();
        if !floats || ops > limit {
            continue;
        }
        return Some((r, *x, inputs, body));
    }
    None
}

fn rewrite(
    g: &Graph,
    r: ValueId,
    v: ValueId,
    inputs: Vec<ValueId>,
    mut body: Graph,
) -> Option<Graph> {
    let Some(Op::Reduce {
        op, axis, keepdim, ..
    }) = g.op(r)
    else {
        return None;
    };
    let (op, axis, keepdim) = (*op, (*axis)?, *keepdim);
    // the operand is written out when anything but the reduction reads it
    let read_elsewhere = g.outputs.contains(&v)
        || g.ids()
            .any(|u| u != r && g.op(u).is_some_and(|o| o.operands().contains(&v)));
    let out = *body.outputs.first()?;
    if read_elsewhere {
        body.outputs.push(out);
    }
    let mut ng = Graph::new(g.name.clone());
    let mut map: Vec<Option<ValueId>> = vec![None; g.len()];
    let get = |map: &[Option<ValueId>], x: ValueId| map.get(x.index()).copied().flatten();
    for id in g.ids() {
        if id == r {
            continue; // defined at v
        }

        if id == v {
            let ins: Vec<ValueId> = inputs
                .iter()
                .map(|x| get(&map, *x))
                .collect::<Option<_>>()?;
            let fused = ng.push(
                Op::FusedReduce {
                    inputs: ins,
                    body: Box::new(body.clone()),
                    op,
                    axis,
                    keepdim,
                },
                g.ty(r)?.clone(),
                g.span(r),
            );
            map[r.index()] = Some(fused);
            if read_elsewhere {
                let res = ng.push(
                    Op::Result {
                        of: fused,
                        index: 1,
                    },
                    g.ty(v)?.clone(),
                    g.span(v),
                );
                map[v.index()] = Some(res);
            }
            continue;
        }
        copy_op(g, &mut ng, &mut map, id)?;
    }
    finish_rebuild(g, &mut ng, &map)?;
    Some(ng)
}

pub fn run(g: &mut Graph, cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let limit = cx.max_fused_ops.unwrap_or(usize::MAX);
    for _ in 0..g.len() {
        let Some((r, v, inputs, body)) = find(g, limit) else {
            break;
        };
        let span = g.span(r);
        let Some(ng) = rewrite(g, r, v, inputs, body) else {
            break;
        };
        *g = ng;
        fired.fire(RULE, span);
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::passes::test_util::{after_chains, f32t};
    use crate::graph::{BinaryOp, ReduceOp, TensorType, UnaryOp};
    use tessera_lang::Span;

    fn t(shape: &[usize]) -> TensorType {
        f32t(shape)
    }

    /// `dz = tanh(x) * dy` read by a matmul (when `shared`) and summed over `axis`.
    fn graph(shared: bool, axis: usize) -> Graph {
        let sp = Span::new(0, 0, 1);
        let mut g = Graph::new("f");
        let x = g.add_param(t(&[6, 8]), sp);
        let dy = g.add_param(t(&[6, 8]), sp);
        let w = g.add_param(t(&[8, 3]), sp);
        let th = g.push(
            Op::Unary {
                op: UnaryOp::Tanh,
                x,
            },
            t(&[6, 8]),
            sp,
        );
        let dz = g.push(
            Op::Binary {
                op: BinaryOp::Mul,
                a: th,
                b: dy,
            },
            t(&[6, 8]),
            sp,
        );
        let mut rs = t(&[6, 8]).shape;
        rs.remove(axis);
        let db = g.push(
            Op::Reduce {
                op: ReduceOp::Sum,
                x: dz,
                axis: Some(axis),
                keepdim: false,
            },
            t(&rs),
            sp,
        );
        g.outputs = vec![db];
        if shared {
            let m = g.push(
                Op::Matmul {
                    a: dz,
                    b: w,
                    accum: None,
                    epilogue: vec![],
                    tile: None,
                },
                t(&[6, 3]),
                sp,
            );
            g.outputs.push(m);
        }
        g
    }

    fn fuse(g: &mut Graph) -> Fired {
        after_chains(g, None, run)
    }

    #[test]
    fn a_column_sum_is_computed_by_the_kernel_producing_its_operand() {
        for shared in [false, true] {
            let mut g = graph(shared, 0);
            let f = fuse(&mut g);
            assert_eq!(f.rules.len(), 1, "{f:?}");
            let db = g.outputs[0];
            let Some(Op::FusedReduce { body, .. }) = g.op(db) else {
                panic!("not fused: {:?}", g.op(db))
            };
            // the operand is written out only when the matmul reads it
            assert_eq!(body.outputs.len(), 1 + usize::from(shared));
            if shared {
                let Some(Op::Matmul { a, .. }) = g.op(g.outputs[1]) else {
                    panic!("no matmul")
                };
                assert!(matches!(g.op(*a), Some(Op::Result { of, index: 1 }) if *of == db));
            }
            assert_eq!(g.result_types(db).len(), 1 + usize::from(shared));
        }
    }

    #[test]
    fn a_sum_over_the_last_axis_is_left_to_the_row_kernel() {
        let mut g = graph(true, 1);
        assert!(fuse(&mut g).is_empty());
    }
}
