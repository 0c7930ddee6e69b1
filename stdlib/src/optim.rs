//! The `optim` module (SPEC §8): `optim.sgd(lr, momentum=0.0)` and `optim.adam(lr,
//! betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)` make optimizers whose
//! `opt.update(params, grads)` returns the new parameter list (functional, like optax); the
//! state (velocities, moments, the step count) lives in the optimizer, one slot per position
//! of the list. The rules are PyTorch's: SGD's velocity `v = μ·v + g` (the first step
//! `v = g`), `p − lr·v`; Adam's bias-corrected moments with `weight_decay` added to the
//! gradient (`g + wd·p`, `torch.optim.Adam`, not AdamW). The arithmetic is in fp32 (fp64 for
//! fp64 parameters) and each new parameter is rounded once to its dtype.

use std::cell::RefCell;

use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, AttrResult, CallArgs, HostObject, Interp, Module, Value};
use tessera_runtime::{binary, BinaryOp, DType, Operand, Scalar, Tensor, UnaryOp};

use crate::tensor::{as_tensor, rt, tensor_value};

#[derive(Clone, Copy, Debug)]
enum Rule {
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

/// An optimizer and its state.
pub struct Optimizer {
    rule: Rule,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    step: u64,
    /// Per parameter: SGD's velocity, or Adam's two moments.
    slots: Vec<Vec<Tensor>>,
    shapes: Vec<Vec<usize>>,
}

type R<T> = Result<T, Diagnostic>;

fn s(x: f64) -> Operand<'static> {
    Operand::Scalar(Scalar::Float(x))
}

fn op2<'a, 'b>(op: BinaryOp, a: impl Into<Operand<'a>>, b: impl Into<Operand<'b>>) -> R<Tensor> {
    binary(op, a, b).map_err(rt)
}

/// `α·a + β·b`.
fn axpby(alpha: f64, a: &Tensor, beta: f64, b: &Tensor) -> R<Tensor> {
    let x = op2(BinaryOp::Mul, a, s(alpha))?;
    let y = op2(BinaryOp::Mul, b, s(beta))?;
    op2(BinaryOp::Add, &x, &y)
}

impl Optimizer {
    /// The new parameters from `params` and `grads` (lists or tuples of tensors, paired by
    /// position).
    fn update(&self, params: &Arg, grads: &Arg) -> R<Value> {
        let ps = tensors(params, "params")?;
        let gs = tensors(grads, "grads")?;
        if ps.len() != gs.len() {
            return Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "update got {} params and {} grads: they pair up by position",
                    ps.len(),
                    gs.len()
                ),
            )
            .at(grads.span));
        }
        for (i, (p, g)) in ps.iter().zip(&gs).enumerate() {
            if p.shape() != g.shape() {
                return Err(Diagnostic::new(
                    Code::E0200,
                    format!(
                        "grads[{i}] has shape {:?} but params[{i}] has shape {:?}",
                        g.shape(),
                        p.shape()
                    ),
                )
                .at(grads.span));
            }
        }
        let mut st = self.state.borrow_mut();
        let shapes: Vec<Vec<usize>> = ps.iter().map(|p| p.shape().to_vec()).collect();
        if st.step > 0 && st.shapes != shapes {
            return Err(Diagnostic::new(
                Code::E0101,
                "this optimizer was updated with other parameters before (its state is per position of the list)",
            )
            .at(params.span)
            .with_help("make one optimizer per parameter list"));
        }
        st.shapes = shapes;
        st.step += 1;
        let t = st.step;
        let mut out = Vec::with_capacity(ps.len());
        for (i, (p, g)) in ps.iter().zip(&gs).enumerate() {
            let wd = if p.dtype() == DType::F64 {
                DType::F64
            } else {
                DType::F32
            };
            let pw = p.cast(wd).map_err(rt)?;
            let gw = g.cast(wd).map_err(rt)?;
            let first = st.slots.len() <= i;
            if first {
                st.slots.push(Vec::new());
            }
            let slot = &mut st.slots[i];
            let new = match self.rule {
                Rule::Sgd { lr, momentum } => {
                    let step = if momentum != 0.0 {
                        let v = match slot.first() {
                            Some(v) => axpby(momentum, v, 1.0, &gw)?,
                            None => gw.clone(),
                        };
                        *slot = vec![v.clone()];
                        v
                    } else {
                        gw
                    };
                    axpby(1.0, &pw, -lr, &step)?
                }
                Rule::Adam {
                    lr,
                    b1,
                    b2,
                    eps,
                    wd: decay,
                } => {
                    let g = if decay != 0.0 {
                        axpby(1.0, &gw, decay, &pw)?
                    } else {
                        gw
                    };
                    let gg = op2(BinaryOp::Mul, &g, &g)?;
                    let (m, v) = match (slot.first(), slot.get(1)) {
                        (Some(m), Some(v)) => {
                            (axpby(b1, m, 1.0 - b1, &g)?, axpby(b2, v, 1.0 - b2, &gg)?)
                        }
                        _ => (
                            op2(BinaryOp::Mul, &g, s(1.0 - b1))?,
                            op2(BinaryOp::Mul, &gg, s(1.0 - b2))?,
                        ),
                    };
                    *slot = vec![m.clone(), v.clone()];
                    let c1 = 1.0 - b1.powi(t.min(i32::MAX as u64) as i32);
                    let c2 = 1.0 - b2.powi(t.min(i32::MAX as u64) as i32);
                    let mhat = op2(BinaryOp::Div, &m, s(c1))?;
                    let vhat = op2(BinaryOp::Div, &v, s(c2))?;
                    let root = tessera_runtime::unary(UnaryOp::Sqrt, &vhat).map_err(rt)?;
                    let den = op2(BinaryOp::Add, &root, s(eps))?;
                    let q = op2(BinaryOp::Div, &mhat, &den)?;
                    axpby(1.0, &pw, -lr, &q)?
                }
            };
            out.push(tensor_value(new.cast(p.dtype()).map_err(rt)?));
        }
        Ok(Value::list(out))
    }
}

/// The tensors of a list or tuple argument.
fn tensors(a: &Arg, what: &str) -> R<Vec<Tensor>> {
    let items: Vec<Value> = match &a.value {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.as_ref().clone(),
        other => match as_tensor(other) {
            Some(t) => return Ok(vec![t]),
            None => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "{what} must be a list of tensors, not {}",
                        other.type_name()
                    ),
                )
                .at(a.span))
            }
        },
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            as_tensor(v).ok_or_else(|| {
                Diagnostic::new(
                    Code::E0101,
                    format!("{what}[{i}] is a {}, not a tensor", v.type_name()),
                )
                .at(a.span)
            })
        })
        .collect()
}

impl HostObject for Optimizer {
    fn type_name(&self) -> &'static str {
        "optimizer"
    }
    fn repr(&self) -> String {
        let f = tessera_lang::eval::format::float_repr;
        match self.rule {
            Rule::Sgd { lr, momentum } => {
                format!("optim.sgd(lr={}, momentum={})", f(lr), f(momentum))
            }
            Rule::Adam {
                lr,
                b1,
                b2,
                eps,
                wd,
            } => format!(
                "optim.adam(lr={}, betas=({}, {}), eps={}, weight_decay={})",
                f(lr),
                f(b1),
                f(b2),
                f(eps),
                f(wd)
            ),
        }
    }
    fn get_attr(&self, this: &Value, name: &str, _it: &mut Interp) -> AttrResult {
        Ok(match name {
            "step" => Some(Value::Int(self.state.borrow().step as i64)),
            "update" => {
                let me = this.clone();
                Some(Value::native(
                    "update",
                    "update(params, grads)",
                    move |_, args| {
                        let a = args.bind("update", &["params", "grads"], &[])?;
                        let mut a = a.into_iter().flatten();
                        let (Some(p), Some(g)) = (a.next(), a.next()) else {
                            return Err(
                                Diagnostic::new(Code::E0101, "update(params, grads)").at(args.span)
                            );
                        };
                        match me.downcast::<Optimizer>() {
                            Some(o) => o.update(&p, &g),
                            None => Err(Diagnostic::new(Code::E0101, "not an optimizer")),
                        }
                    },
                ))
            }
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["update", "step"]
    }
}

/// A positive finite float argument (ints allowed).
fn number(a: Option<Arg>, name: &str, default: f64, lo: f64, hi: f64) -> R<f64> {
    let Some(a) = a else { return Ok(default) };
    let x = match a.value {
        Value::Int(i) => i as f64,
        Value::Float(f) => f,
        ref other => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("{name} must be a number, not {}", other.type_name()),
            )
            .at(a.span))
        }
    };
    if !(x.is_finite() && x >= lo && x <= hi) {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("{name} must be in [{lo}, {hi}], got {x}"),
        )
        .at(a.span));
    }
    Ok(x)
}

fn sgd(args: CallArgs) -> R<Value> {
    let a = args.bind("sgd", &["lr"], &["momentum"])?;
    let mut a = a.into_iter();
    let lr = number(a.next().flatten(), "lr", 0.0, 0.0, f64::MAX)?;
    let momentum = number(a.next().flatten(), "momentum", 0.0, 0.0, 1.0)?;
    Ok(Value::host(Optimizer {
        rule: Rule::Sgd { lr, momentum },
        state: RefCell::default(),
    }))
}

fn adam(args: CallArgs) -> R<Value> {
    let a = args.bind("adam", &["lr"], &["betas", "eps", "weight_decay"])?;
    let mut a = a.into_iter();
    let lr = number(a.next().flatten(), "lr", 0.0, 0.0, f64::MAX)?;
    let (b1, b2) = match a.next().flatten() {
        None => (0.9, 0.999),
        Some(b) => match &b.value {
            Value::Tuple(t) if t.len() == 2 => {
                let one = |v: &Value| Arg {
                    value: v.clone(),
                    span: b.span,
                };
                (
                    number(Some(one(&t[0])), "betas[0]", 0.9, 0.0, 1.0)?,
                    number(Some(one(&t[1])), "betas[1]", 0.999, 0.0, 1.0)?,
                )
            }
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "betas must be a tuple of two floats, not {}",
                        other.type_name()
                    ),
                )
                .at(b.span))
            }
        },
    };
    let eps = number(a.next().flatten(), "eps", 1e-8, 0.0, f64::MAX)?;
    let wd = number(a.next().flatten(), "weight_decay", 0.0, 0.0, f64::MAX)?;
    Ok(Value::host(Optimizer {
        rule: Rule::Adam {
            lr,
            b1,
            b2,
            eps,
            wd,
        },
        state: RefCell::default(),
    }))
}

/// Builds the `optim` module.
pub fn module() -> Module {
    let m = Module::new("optim", "optimizers: sgd, adam (SPEC §8)");
    m.set(
        "sgd",
        Value::native("sgd", "sgd(lr, momentum=0.0)", |_, args| sgd(args)),
    );
    m.set(
        "adam",
        Value::native(
            "adam",
            "adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)",
            |_, args| adam(args),
        ),
    );
    m
}
