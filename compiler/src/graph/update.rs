//! The Graph IR of an optimizer's update of one parameter (SPEC §8, `optim.sgd` / `optim.adam`):
//! a graph of elementwise ops whose outputs are the new parameter and the new optimizer state.
//! The pipeline fuses it like any kernel; `elementwise_multi_output` makes it one kernel that
//! writes the parameter and the state together.
//!
//! Params, in order: the parameter `p`, its gradient `g`, the state (SGD's velocity; Adam's
//! two moments — none on the first step), and for Adam the bias corrections `1 − β₁ᵗ` and
//! `1 − β₂ᵗ` as 0-d tensors (they change every step; as params the kernel stays the same).
//! Outputs: the new parameter (in `p`'s dtype), then the new state. The arithmetic is in fp32
//! (fp64 for fp64 parameters) in the order of PyTorch's rules, op for op what the eager
//! version computed: SGD `v = μ·v + g` (first step `v = g`), `p − lr·v`; Adam with
//! `weight_decay` added to the gradient, bias-corrected moments, `p − lr·m̂/(√v̂ + ε)`.

use super::autodiff::{bin, cast, konst, un, R};
use super::{BinaryOp, DType, Graph, TensorType, UnaryOp, ValueId};
use tessera_lang::Span;

/// An update rule and its hyperparameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Rule {
    Sgd {
        lr: f64,
        momentum: f64,
    },
    Adam {
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        wd: f64,
    },
}

impl Rule {
    /// The state tensors a parameter carries after its first step.
    pub fn state_len(&self) -> usize {
        match self {
            Rule::Sgd { momentum, .. } if *momentum != 0.0 => 1,
            Rule::Sgd { .. } => 0,
            Rule::Adam { .. } => 2,
        }
    }

    /// The dtype the arithmetic (and the state) is in for a parameter of dtype `d`.
    pub fn work_dtype(d: DType) -> DType {
        if d == DType::F64 {
            DType::F64
        } else {
            DType::F32
        }
    }
}

/// `x · c` with `c` a constant of `x`'s dtype.
fn scale(g: &mut Graph, x: ValueId, c: f64, d: DType) -> R<ValueId> {
    let k = konst(g, c, d)?;
    bin(g, BinaryOp::Mul, x, k)
}

/// `α·a + β·b`, as `a·α + b·β`.
fn axpby(g: &mut Graph, alpha: f64, a: ValueId, beta: f64, b: ValueId, d: DType) -> R<ValueId> {
    let x = scale(g, a, alpha, d)?;
    let y = scale(g, b, beta, d)?;
    bin(g, BinaryOp::Add, x, y)
}

/// `a + b·β` (`axpby` with α = 1: the multiplication by one is exact and left out).
fn add_scaled(g: &mut Graph, a: ValueId, beta: f64, b: ValueId, d: DType) -> R<ValueId> {
    let y = scale(g, b, beta, d)?;
    bin(g, BinaryOp::Add, a, y)
}

/// The update graph of `rule` for a parameter of type `p` with a gradient of dtype `gd`;
/// `first`: the parameter's first step (no state yet). Every op carries `span` (the update
/// call).
pub fn update_graph(rule: Rule, p: &TensorType, gd: DType, first: bool, span: Span) -> R<Graph> {
    let name = match rule {
        Rule::Sgd { .. } => "sgd_update",
        Rule::Adam { .. } => "adam_update",
    };
    let mut g = Graph::new(name);
    let wd = Rule::work_dtype(p.dtype);
    let shape = p.shape.clone();
    let pp = g.add_param(p.clone(), span);
    let gp = g.add_param(TensorType::new(shape.clone(), gd), span);
    let state: Vec<ValueId> = if first {
        vec![]
    } else {
        (0..rule.state_len())
            .map(|_| g.add_param(TensorType::new(shape.clone(), wd), span))
            .collect()
    };
    let pw = cast(&mut g, pp, wd)?;
    let gw = cast(&mut g, gp, wd)?;
    let (new, state_out) = match rule {
        Rule::Sgd { lr, momentum } => {
            if momentum != 0.0 {
                let v = match state.first() {
                    Some(v) => axpby(&mut g, momentum, *v, 1.0, gw, wd)?,
                    None => gw,
                };
                (add_scaled(&mut g, pw, -lr, v, wd)?, vec![v])
            } else {
                (add_scaled(&mut g, pw, -lr, gw, wd)?, vec![])
            }
        }
        Rule::Adam {
            lr,
            b1,
            b2,
            eps,
            wd: decay,
        } => {
            let c1 = g.add_param(TensorType::new(vec![], wd), span);
            let c2 = g.add_param(TensorType::new(vec![], wd), span);
            let gr = if decay != 0.0 {
                add_scaled(&mut g, gw, decay, pw, wd)?
            } else {
                gw
            };
            let gg = bin(&mut g, BinaryOp::Mul, gr, gr)?;
            let (m, v) = match (state.first(), state.get(1)) {
                (Some(m), Some(v)) => (
                    axpby(&mut g, b1, *m, 1.0 - b1, gr, wd)?,
                    axpby(&mut g, b2, *v, 1.0 - b2, gg, wd)?,
                ),
                _ => (
                    scale(&mut g, gr, 1.0 - b1, wd)?,
                    scale(&mut g, gg, 1.0 - b2, wd)?,
                ),
            };
            let mhat = bin(&mut g, BinaryOp::Div, m, c1)?;
            let vhat = bin(&mut g, BinaryOp::Div, v, c2)?;
            let root = un(&mut g, UnaryOp::Sqrt, vhat)?;
            let e = konst(&mut g, eps, wd)?;
            let den = bin(&mut g, BinaryOp::Add, root, e)?;
            let q = bin(&mut g, BinaryOp::Div, mhat, den)?;
            (add_scaled(&mut g, pw, -lr, q, wd)?, vec![m, v])
        }
    };
    let new = cast(&mut g, new, p.dtype)?;
    g.outputs = std::iter::once(new).chain(state_out).collect();
    for id in g.ids().collect::<Vec<_>>() {
        g.set_span(id, span);
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::pipeline::{optimize, Options};
    use crate::graph::Op;
    use tessera_lang::SourceMap;

    fn kernels(g: &Graph) -> usize {
        g.ids()
            .filter(|id| crate::graph::kind_of(g.op(*id).unwrap()).is_some())
            .count()
    }

    #[test]
    fn an_update_is_one_kernel_writing_the_parameter_and_its_state() {
        let sp = Span::new(0, 0, 1);
        let adam = Rule::Adam {
            lr: 1e-3,
            b1: 0.9,
            b2: 0.999,
            eps: 1e-8,
            wd: 0.01,
        };
        let sgd = Rule::Sgd {
            lr: 0.1,
            momentum: 0.9,
        };
        for (rule, first, outs) in [
            (adam, false, 3),
            (adam, true, 3),
            (sgd, false, 2),
            (
                Rule::Sgd {
                    lr: 0.1,
                    momentum: 0.0,
                },
                false,
                1,
            ),
        ] {
            for dt in [DType::F32, DType::BF16] {
                let p = TensorType::new(vec![16, 8], dt);
                let mut g = update_graph(rule, &p, dt, first, sp).unwrap();
                assert_eq!(g.outputs.len(), outs);
                assert!(
                    kernels(&g) > 1,
                    "{rule:?}: the traced update is several ops"
                );
                optimize(&mut g, &Options::default(), &SourceMap::default()).unwrap();
                assert_eq!(kernels(&g), 1, "{rule:?} first={first} {dt}: one kernel");
                let fused = g
                    .ids()
                    .find(|id| matches!(g.op(*id), Some(Op::FusedElementwise { .. })))
                    .unwrap();
                // every output is the fused kernel's, or (SGD's first velocity) the gradient
                for o in &g.outputs {
                    let ok = *o == fused
                        || matches!(g.op(*o), Some(Op::Result { of, .. }) if *of == fused)
                        || matches!(g.op(*o), Some(Op::Param { .. }));
                    assert!(ok, "{rule:?}: output {o:?} is not the kernel's");
                }
                assert_eq!(g.ty(g.outputs[0]).unwrap().dtype, dt);
            }
        }
    }
}
