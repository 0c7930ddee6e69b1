//! Elementwise chains: a tree of elementwise ops whose inner values have one use becomes one
//! `fused_elementwise` op whose body holds them (rule `elementwise_chain`).
//!
//! ```text
//! %1 = exp %0 : fp32[8]                      %1 = fused_elementwise(%0) {
//! %2 = const 2.0 : fp32[]             ─▶       ^(%2: fp32[8]):
//! %3 = mul %1, %2 : fp32[8]                    %3 = exp %2 : fp32[8]
//!                                              %4 = const 2.0 : fp32[]
//!                                              %5 = mul %3, %4 : fp32[8]
//!                                              yield %5
//!                                            } : fp32[8]
//! ```
//!
//! A group has at least two elementwise ops (consts do not count) and at most
//! `PassCx::max_fused_ops`.

use super::PassCx;
use crate::graph::{Fired, Graph, Op, ValueId};
use std::collections::{BTreeSet, HashMap};

const RULE: &str = "elementwise_chain";

pub fn run(g: &mut Graph, cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let limit = cx.max_fused_ops.unwrap_or(usize::MAX);
    if limit < 2 {
        return fired;
    }
    let uses = g.use_counts();
    // The single elementwise user of each value, if it has exactly one use and it is one.
    let mut sole_user: HashMap<ValueId, ValueId> = HashMap::new();
    for id in g.ids() {
        if let Some(op) = g.op(id) {
            if op.is_elementwise() {
                for x in op.operands() {
                    sole_user.insert(x, id);
                }
            }
        }
    }
    let is_output = |v: ValueId| g.outputs.contains(&v);
    let absorbable = |v: ValueId| {
        uses.get(v.index()).copied() == Some(1)
            && !is_output(v)
            && g.op(v)
                .is_some_and(|o| o.is_elementwise() || matches!(o, Op::Const { .. }))
    };
    let roots: Vec<ValueId> = g
        .ids()
        .filter(|id| g.op(*id).is_some_and(|o| o.is_elementwise()))
        .filter(|id| !(absorbable(*id) && sole_user.contains_key(id)))
        .collect();
    let mut rewrites = Vec::new();
    for root in roots {
        // Collect the group: the root and every absorbable operand, transitively.
        let mut group: BTreeSet<ValueId> = BTreeSet::new();
        let mut stack = vec![root];
        let mut count = 0usize;
        while let Some(v) = stack.pop() {
            if group.contains(&v) {
                continue;
            }
            let is_ew = g.op(v).is_some_and(|o| o.is_elementwise());
            if is_ew {
                if count >= limit {
                    continue;
                }
                count += 1;
            }
            group.insert(v);
            if let Some(op) = g.op(v) {
                for x in op.operands() {
                    if absorbable(x) && sole_user.get(&x) == Some(&v) {
                        stack.push(x);
                    }
                }
            }
        }
        if count < 2 {
            continue;
        }
        // External inputs, in order of first use; the body in definition order.
        let mut body = Graph::new(format!("{}_body", g.name));
        let mut map: HashMap<ValueId, ValueId> = HashMap::new();
        let mut inputs = Vec::new();
        for v in &group {
            let Some(op) = g.op(*v) else { continue };
            for x in op.operands() {
                if !group.contains(&x) && !map.contains_key(&x) {
                    if let Some(t) = g.ty(x) {
                        // A const read by several groups is copied into each body (it is an
                        // immediate, not a buffer a kernel could take).
                        let p = match g.op(x) {
                            Some(Op::Const { value }) => {
                                body.push(Op::Const { value: *value }, t.clone(), g.span(x))
                            }
                            _ => {
                                inputs.push(x);
                                body.add_param(t.clone(), g.span(x))
                            }
                        };
                        map.insert(x, p);
                    }
                }
            }
        }
        for v in &group {
            let (Some(op), Some(t)) = (g.op(*v), g.ty(*v)) else {
                continue;
            };
            let mut op = op.clone();
            op.map_operands(&mut |x| map.get(&x).copied().unwrap_or(x));
            let nv = body.push(op, t.clone(), g.span(*v));
            map.insert(*v, nv);
        }
        if let Some(o) = map.get(&root) {
            body.outputs.push(*o);
        }
        rewrites.push((root, inputs, body));
    }
    for (root, inputs, body) in rewrites {
        let Some(t) = g.ty(root).cloned() else {
            continue;
        };
        let span = g.span(root);
        g.replace(
            root,
            Op::FusedElementwise {
                inputs,
                body: Box::new(body),
            },
            t,
        );
        fired.fire(RULE, span);
    }
    fired
}
