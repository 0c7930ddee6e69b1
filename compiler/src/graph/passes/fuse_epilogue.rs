//! Matmul epilogues: the elementwise ops applied to a matmul's result — bias add, activation,
//! scale, residual add, cast — become steps of the matmul itself, in order.
//!
//! ```text
//! %3 = matmul %0, %1 : fp32[64,256]
//! %4 = add %3, %2 : fp32[64,256]                ─▶   %3 = matmul %0, %1 {accum = fp32,
//! %5 = gelu %4 : fp32[64,256]                          epilogue = [add %2, gelu]} : fp32[64,256]
//! ```
//!
//! Rules: `epilogue_bias` (add/sub of a tensor that broadcasts onto the result, or of a scalar),
//! `epilogue_residual` (add of a tensor of the result's shape), `epilogue_scale` (mul/div by a
//! scalar or a broadcastable tensor), `epilogue_activation` (relu gelu silu sigmoid tanh),
//! `epilogue_cast`. A step is fused only when the matmul's value has exactly one use; the
//! accumulator must be the left operand of `sub` and `div`; integer matmuls take none.

use super::PassCx;
use crate::graph::infer::epilogue_step;
use crate::graph::{BinaryOp, Epilogue, EpilogueStep, Fired, Graph, Op, Scalar, ValueId};

/// The epilogue step `user` applies to `acc`, with its rule name; `Err` when it is not one.
fn as_step(g: &Graph, user: &Op, acc: ValueId) -> Option<(Epilogue, &'static str)> {
    match user {
        Op::Unary { op, x } if *x == acc && op.is_activation() => {
            Some((Epilogue::Unary(*op), "epilogue_activation"))
        }
        Op::Cast { .. } => None, // handled by the caller (needs the result dtype)
        Op::Binary { op, a, b } => {
            let (other, acc_left) = if *a == acc && *b != acc {
                (*b, true)
            } else if *b == acc && *a != acc {
                (*a, false)
            } else {
                return None;
            };
            let commutative = matches!(op, BinaryOp::Add | BinaryOp::Mul);
            let rule = match op {
                BinaryOp::Add | BinaryOp::Sub => "epilogue_bias",
                BinaryOp::Mul | BinaryOp::Div => "epilogue_scale",
                _ => return None,
            };
            if !acc_left && !commutative {
                return None;
            }
            if let Some(Op::Const { value }) = g.op(other) {
                if matches!(value, Scalar::Bool(_)) {
                    return None;
                }
                return Some((
                    Epilogue::Scalar {
                        op: *op,
                        value: *value,
                    },
                    rule,
                ));
            }
            let rule = match (op, g.ty(other), g.ty(acc)) {
                (BinaryOp::Add, Some(o), Some(t)) if o.shape == t.shape => "epilogue_residual",
                _ => rule,
            };
            Some((
                Epilogue::Binary {
                    op: *op,
                    operand: other,
                },
                rule,
            ))
        }
        _ => None,
    }
}

pub fn run(g: &mut Graph, _cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let ids: Vec<ValueId> = g.ids().collect();
    let mut done = std::collections::HashSet::new();
    // Uses and users of every value, counted once and kept up to date as ops are replaced
    // (counting them again at each step made long chains of matmuls quadratic).
    let mut uses = g.use_counts();
    let mut users: Vec<std::collections::BTreeSet<ValueId>> = vec![Default::default(); g.len()];
    for u in g.ids() {
        if let Some(op) = g.op(u) {
            for x in op.operands() {
                if let Some(set) = users.get_mut(x.index()) {
                    set.insert(u);
                }
            }
        }
    }
    for root in ids {
        let Some(Op::Matmul { .. }) = g.op(root) else {
            continue;
        };
        if !done.insert(root) {
            continue;
        }
        // Grow this matmul's epilogue one user at a time; the fused op moves to the user.
        let mut cur = root;
        loop {
            let n_uses = uses.get(cur.index()).copied().unwrap_or(0);
            let Some(&user) = users.get(cur.index()).and_then(|u| u.first()) else {
                break;
            };
            let Some(user_op) = g.op(user).cloned() else {
                break;
            };
            let step = match &user_op {
                Op::Cast { .. } => g
                    .ty(user)
                    .map(|t| (Epilogue::Cast(t.dtype), "epilogue_cast")),
                other => as_step(g, other, cur),
            };
            let Some((step, rule)) = step else { break };
            if n_uses != 1 {
                fired.miss(
                    rule,
                    format!("matmul result used {n_uses} times, epilogue not fused"),
                    g.span(user),
                );
                break;
            }
            let Some(Op::Matmul {
                a,
                b,
                accum,
                mut epilogue,
                tile,
            }) = g.op(cur).cloned()
            else {
                break;
            };
            let Some(acc_ty) = g.ty(cur).cloned() else {
                break;
            };
            if !acc_ty.dtype.is_float() {
                // The integer matmul kernel has no epilogue: the step stays its own kernel.
                fired.miss(
                    rule,
                    format!(
                        "{} matmuls keep their epilogue as a separate kernel",
                        acc_ty.dtype
                    ),
                    g.span(user),
                );
                break;
            }
            let new_ty = match epilogue_step(g, &acc_ty, &step) {
                Ok(t) => t,
                Err(why) => {
                    fired.miss(rule, why.to_string(), g.span(user));
                    break;
                }
            };
            if g.ty(user) != Some(&new_ty) {
                break;
            }
            let user_span = g.span(user);
            epilogue.push(EpilogueStep {
                step,
                span: user_span,
            });
            let root_span = g.span(cur);
            let fused = Op::Matmul {
                a,
                b,
                accum,
                epilogue,
                tile,
            };
            for x in user_op.operands() {
                if let Some(n) = uses.get_mut(x.index()) {
                    *n = n.saturating_sub(1);
                }
                if let Some(set) = users.get_mut(x.index()) {
                    set.remove(&user);
                }
            }
            for x in fused.operands() {
                if let Some(n) = uses.get_mut(x.index()) {
                    *n += 1;
                }
                if let Some(set) = users.get_mut(x.index()) {
                    set.insert(user);
                }
            }
            g.replace(user, fused, new_ty);
            g.set_span(user, root_span);
            fired.fire(rule, user_span);
            cur = user;
            done.insert(cur);
        }
    }
    fired
}
