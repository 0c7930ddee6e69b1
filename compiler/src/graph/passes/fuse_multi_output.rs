//! Multi-output elementwise kernels: an elementwise producer `p` read by an elementwise
//! consumer `c` of the same shape joins `c`'s kernel even when `p` is also read elsewhere (or
//! is an output of the graph); the kernel then writes `p` as a further result, which the other
//! readers take through a `result` op (rule `elementwise_multi_output`). One launch instead of
//! two, and `p` is written once and never read back. An optimizer step is the typical case:
//! the new moments are outputs and feed the new parameter.
//!
//! ```text
//! %3 = fused_elementwise(%0, %1) {…m'…}           %4 = fused_elementwise(%0, %1, %2) {
//! %4 = fused_elementwise(%3, %2) {…p'…}    ─▶        …m'… …p'…
//! return %4, %3                                      yield %p', %m'
//!                                                  }
//!                                                  %5 = result %4 {index = 1}
//!                                                  return %4, %5
//! ```
//!
//! Conditions: `p` and `c` have the same shape (each element of `p` is computed by the thread
//! that computes the same element of `c`); every other reader of `p` comes after `c` (the
//! merged kernel runs where `c` was); the merged body holds at most `PassCx::max_fused_ops`
//! elementwise ops.

use super::{as_body, copy_body, copy_op, finish_rebuild, PassCx};
use crate::graph::{Fired, Graph, Op, ValueId};

const RULE: &str = "elementwise_multi_output";

fn is_kernel(g: &Graph, v: ValueId) -> bool {
    g.op(v)
        .is_some_and(|o| o.is_elementwise() || matches!(o, Op::FusedElementwise { .. }))
}

/// The elementwise op producing `v`: `v` itself, or the multi-output op a `result` reads.
fn producer(g: &Graph, v: ValueId) -> Option<ValueId> {
    match g.op(v)? {
        Op::Result { of, .. } => is_kernel(g, *of).then_some(*of),
        _ if is_kernel(g, v) => Some(v),
        _ => None,
    }
}

/// Which result of its producer `v` is (0: the op's own value).
fn result_index(g: &Graph, v: ValueId) -> usize {
    match g.op(v) {
        Some(Op::Result { index, .. }) => *index,
        _ => 0,
    }
}

fn ew_count(body: &Graph) -> usize {
    body.ids()
        .filter(|id| body.op(*id).is_some_and(Op::is_elementwise))
        .count()
}

/// A merge: producer `p` into consumer `c`.
struct Merge {
    p: ValueId,
    c: ValueId,
}

/// The values of `p`'s results: `p` and the `result` ops reading it.
fn results_of(g: &Graph, p: ValueId) -> Vec<ValueId> {
    g.ids()
        .filter(|id| *id == p || matches!(g.op(*id), Some(Op::Result { of, .. }) if *of == p))
        .collect()
}

/// Whether value `v` is read by anything but `c` and `p`'s own `result` ops (a graph output
/// counts).
fn read_elsewhere(g: &Graph, v: ValueId, c: ValueId, p: ValueId) -> bool {
    g.outputs.contains(&v)
        || g.ids().any(|u| {
            u != c
                && !matches!(g.op(u), Some(Op::Result { of, .. }) if *of == p)
                && g.op(u).is_some_and(|o| o.operands().contains(&v))
        })
}

fn find(g: &Graph, limit: usize) -> Option<Merge> {
    // the readers of each value
    let mut users: Vec<Vec<ValueId>> = vec![Vec::new(); g.len()];
    for u in g.ids() {
        for x in g.op(u).map(Op::operands).unwrap_or_default() {
            if let Some(l) = users.get_mut(x.index()) {
                l.push(u);
            }
        }
    }
    for c in g.ids() {
        if !is_kernel(g, c) {
            continue;
        }
        let Some(cop) = g.op(c) else { continue };
        let cty = g.ty(c)?;
        for x in cop.operands() {
            let Some(p) = producer(g, x) else { continue };
            if p == c || g.ty(p).map(|t| &t.shape) != Some(&cty.shape) {
                continue;
            }
            // every other reader of p's results runs after c
            let mut results = vec![p];
            results.extend(
                users[p.index()]
                    .iter()
                    .filter(|u| matches!(g.op(**u), Some(Op::Result { .. }))),
            );
            let early = results.iter().any(|r| {
                users[r.index()]
                    .iter()
                    .any(|u| *u < c && !matches!(g.op(*u), Some(Op::Result { of, .. }) if *of == p))
            });
            if early {
                continue;
            }
            let (Some((_, pb)), Some((_, cb))) = (as_body(g, p), as_body(g, c)) else {
                continue;
            };
            if ew_count(&pb) + ew_count(&cb) > limit {
                continue;
            }
            return Some(Merge { p, c });
        }
    }
    None
}

fn merge(g: &Graph, m: &Merge) -> Option<Graph> {
    let (Merge { p, c }, (pin, pb), (cin, cb)) = (m, as_body(g, m.p)?, as_body(g, m.c)?);
    let (p, c) = (*p, *c);
    let from_p = |v: ValueId| producer(g, v) == Some(p);
    // the merged kernel's inputs: p's, then c's that p does not compute
    let mut inputs: Vec<ValueId> = Vec::new();
    for v in pin.iter().chain(cin.iter().filter(|v| !from_p(**v))) {
        if !inputs.contains(v) {
            inputs.push(*v);
        }
    }
    let mut body = Graph::new(format!("{}_body", g.name));
    let params: Vec<ValueId> = inputs
        .iter()
        .map(|v| Some(body.add_param(g.ty(*v)?.clone(), g.span(*v))))
        .collect::<Option<_>>()?;
    let param_of = |v: ValueId| inputs.iter().position(|x| *x == v).map(|i| params[i]);
    let p_outs = copy_body(&mut body, &pb, &|i| param_of(*pin.get(i)?))?;
    let c_outs = copy_body(&mut body, &cb, &|i| {
        let v = *cin.get(i)?;
        if from_p(v) {
            p_outs.get(result_index(g, v)).copied()
        } else {
            param_of(v)
        }
    })?;
    // p's results read outside c become further outputs, after c's
    let p_results = results_of(g, p);
    let mut exported: Vec<(usize, ValueId)> = Vec::new(); // (p's result index, merged output)
    for (i, o) in p_outs.iter().enumerate() {
        let read = p_results
            .iter()
            .any(|r| result_index(g, *r) == i && read_elsewhere(g, *r, c, p));
        if read {
            exported.push((i, *o));
        }
    }
    body.outputs = c_outs.clone();
    body.outputs.extend(exported.iter().map(|(_, o)| *o));

    // Rebuild the graph with the merged kernel where c was.
    let mut ng = Graph::new(g.name.clone());
    let mut map: Vec<Option<ValueId>> = vec![None; g.len()];
    let c_results = results_of(g, c);
    for id in g.ids() {
        if p_results.contains(&id) || (c_results.contains(&id) && id != c) {
            continue; // defined at c
        }
        let get = |map: &[Option<ValueId>], x: ValueId| map.get(x.index()).copied().flatten();
        if id == c {
            let ins: Vec<ValueId> = inputs
                .iter()
                .map(|x| get(&map, *x))
                .collect::<Option<_>>()?;
            let fused = ng.push(
                Op::FusedElementwise {
                    inputs: ins,
                    body: Box::new(body.clone()),
                },
                g.ty(c)?.clone(),
                g.span(c),
            );
            map[c.index()] = Some(fused);
            let mut take = |ng: &mut Graph, index: usize, olds: Vec<ValueId>| -> Option<()> {
                let ty = body.ty(*body.outputs.get(index)?)?.clone();
                let span = olds.first().map_or(g.span(c), |o| g.span(*o));
                let r = ng.push(Op::Result { of: fused, index }, ty, span);
                for o in olds {
                    map[o.index()] = Some(r);
                }
                Some(())
            };
            for j in 1..c_outs.len() {
                let olds = c_results
                    .iter()
                    .copied()
                    .filter(|r| *r != c && result_index(g, *r) == j)
                    .collect();
                take(&mut ng, j, olds)?;
            }
            for (k, (i, _)) in exported.iter().enumerate() {
                let olds = p_results
                    .iter()
                    .copied()
                    .filter(|r| result_index(g, *r) == *i)
                    .collect();
                take(&mut ng, c_outs.len() + k, olds)?;
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
    // each merge removes a kernel: at most as many merges as ops
    for _ in 0..g.len() {
        let Some(m) = find(g, limit) else { break };
        let span = g.span(m.c);
        let Some(ng) = merge(g, &m) else { break };
        *g = ng;
        fired.fire(RULE, span);
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::passes::test_util::{after_chains, f32t};
    use crate::graph::{BinaryOp, TensorType, UnaryOp};
    use tessera_lang::Span;

    fn t(shape: &[usize]) -> TensorType {
        f32t(shape)
    }

    /// `m = exp(x) + y` (an output, and read by `p`), `p = m * y - x`; `between` puts a reader
    /// of `m` (a reduction) before `p`.
    fn graph(between: bool, y_shape: &[usize]) -> Graph {
        let sp = Span::new(0, 0, 1);
        let mut g = Graph::new("f");
        let x = g.add_param(t(&[4, 8]), sp);
        let y = g.add_param(t(y_shape), sp);
        let e = g.push(
            Op::Unary {
                op: UnaryOp::Exp,
                x,
            },
            t(&[4, 8]),
            sp,
        );
        let m = g.push(
            Op::Binary {
                op: BinaryOp::Add,
                a: e,
                b: y,
            },
            t(&[4, 8]),
            sp,
        );
        let mut outs = vec![];
        if between {
            let r = g.push(
                Op::Reduce {
                    op: crate::graph::ReduceOp::Sum,
                    x: m,
                    axis: None,
                    keepdim: false,
                },
                t(&[]),
                sp,
            );
            outs.push(r);
        }
        let q = g.push(
            Op::Binary {
                op: BinaryOp::Mul,
                a: m,
                b: y,
            },
            t(&[4, 8]),
            sp,
        );
        let p = g.push(
            Op::Binary {
                op: BinaryOp::Sub,
                a: q,
                b: x,
            },
            t(&[4, 8]),
            sp,
        );
        g.outputs = vec![p, m];
        g.outputs.extend(outs);
        g
    }

    fn fuse(g: &mut Graph, limit: Option<usize>) -> Fired {
        after_chains(g, limit, run)
    }

    fn kernels(g: &Graph) -> usize {
        g.ids()
            .filter(|id| is_kernel(g, *id) || matches!(g.op(*id), Some(Op::Reduce { .. })))
            .count()
    }

    #[test]
    fn a_producer_read_elsewhere_becomes_a_second_result() {
        let mut g = graph(false, &[4, 8]);
        let f = fuse(&mut g, None);
        assert_eq!(f.rules.len(), 1);
        assert_eq!(kernels(&g), 1);
        let (p, m) = (g.outputs[0], g.outputs[1]);
        assert!(matches!(g.op(m), Some(Op::Result { of, index: 1 }) if *of == p));
        let Some(Op::FusedElementwise { body, .. }) = g.op(p) else {
            panic!("not fused")
        };
        assert_eq!(body.outputs.len(), 2);
        // (the values are checked by the runtime's device suite: cpu == emu)
    }

    #[test]
    fn a_reader_before_the_consumer_or_a_broadcast_keeps_two_kernels() {
        // a reduction of m runs before p: the merged kernel (at p) would come too late
        let mut g = graph(true, &[4, 8]);
        let f = fuse(&mut g, None);
        assert!(f.rules.iter().all(|(r, _)| r != RULE), "{f:?}");
        // y broadcast into m and p: still the same shape for m and p, so they merge
        let mut g = graph(false, &[8]);
        let f = fuse(&mut g, None);
        assert_eq!(f.rules.iter().filter(|(r, _)| r == RULE).count(), 1);
        // the group limit holds
        let mut g = graph(false, &[4, 8]);
        let f = fuse(&mut g, Some(2));
        assert!(f.rules.iter().all(|(r, _)| r != RULE), "{f:?}");
        // a producer broadcast into its consumer is not merged (its elements are not the
        // consumer's): exp(b) is an output and is read by x + exp(b)
        let sp = Span::new(0, 0, 1);
        let mut g = Graph::new("f");
        let x = g.add_param(t(&[4, 8]), sp);
        let b = g.add_param(t(&[8]), sp);
        let e = g.push(
            Op::Unary {
                op: UnaryOp::Exp,
                x: b,
            },
            t(&[8]),
            sp,
        );
        let s = g.push(
            Op::Binary {
                op: BinaryOp::Add,
                a: x,
                b: e,
            },
            t(&[4, 8]),
            sp,
        );
        g.outputs = vec![s, e];
        let f = fuse(&mut g, None);
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(kernels(&g), 2);
    }
}
