//! The `optim` module (SPEC §8): `optim.sgd(lr, momentum=0.0)` and `optim.adam(lr,
//! betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)` make optimizers whose
//! `opt.update(params, grads)` returns the new parameter list (functional, like optax); the
//! state (velocities, moments, the step count) lives in the optimizer, one slot per position
//! of the list. The rules are PyTorch's: SGD's velocity `v = μ·v + g` (the first step
//! `v = g`), `p − lr·v`; Adam's bias-corrected moments with `weight_decay` added to the
//! gradient (`g + wd·p`, `torch.optim.Adam`, not AdamW). The arithmetic is in fp32 (fp64 for
//! fp64 parameters) and each new parameter is rounded once to its dtype.
//!
//! Each parameter's update is a compiled kernel ([`tessera_compiler::graph::update`]): its
//! Graph IR fuses into one elementwise kernel that writes the new parameter and the new state
//! together, compiled once per parameter signature and run on the session's device like any
//! kernel (profiled, cross-checked, dumped by `--dump`).

use std::cell::RefCell;
use std::rc::Rc;

use tessera_compiler::graph::update::{update_graph, Rule};
use tessera_compiler::graph::TensorType;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, AttrResult, CallArgs, HostObject, Interp, Module, Value};
use tessera_lang::Span;
use tessera_runtime::{Scalar, Tensor};

use crate::kernel::{compile_graph, run_compiled, Compiled, Session};
use crate::tensor::{as_tensor, rt, tensor_value};

/// An optimizer and its state; its update kernels are kept by the session.
pub struct Optimizer {
    rule: Rule,
    state: RefCell<State>,
    session: Rc<Session>,
}

#[derive(Default)]
struct State {
    step: u64,
    /// Per parameter: SGD's velocity, or Adam's two moments.
    slots: Vec<Vec<Tensor>>,
    shapes: Vec<Vec<usize>>,
}

type R<T> = Result<T, Diagnostic>;

impl Optimizer {
    /// The update kernel for parameter `p` and gradient `g` (compiled on first use).
    fn kernel(
        &self,
        it: &mut Interp,
        p: &Tensor,
        g: &Tensor,
        first: bool,
        span: Span,
    ) -> R<Rc<Compiled>> {
        // the rule with its hyperparameters (their exact bits), the parameter's signature,
        // whether it is the first step, the target
        let key = format!(
            "{:?} {:?} {} {} {first} {}",
            self.rule,
            p.shape(),
            p.dtype().name(),
            g.dtype().name(),
            self.session.target.get().name()
        );
        let s = &self.session;
        if let Some(c) = s.updates.borrow().get(&key) {
            s.hits.set(s.hits.get() + 1);
            return Ok(c.clone());
        }
        s.misses.set(s.misses.get() + 1);
        let ty = TensorType::new(p.shape().to_vec(), p.dtype());
        let graph = update_graph(self.rule, &ty, g.dtype(), first, span).map_err(|e| {
            Diagnostic::new(
                Code::E0500,
                format!("internal compiler error: the optimizer's update graph: {e}"),
            )
            .at(span)
        })?;
        let c = Rc::new(compile_graph(it, s, graph, span)?);
        s.updates.borrow_mut().insert(key, c.clone());
        Ok(c)
    }

    /// The new parameters from `params` and `grads` (lists or tuples of tensors, paired by
    /// position): per parameter one compiled update kernel, run on the session's device.
    fn update(&self, it: &mut Interp, params: &Arg, grads: &Arg, span: Span) -> R<Value> {
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
            if !p.dtype().is_float() || !g.dtype().is_float() {
                let (what, d) = if p.dtype().is_float() {
                    ("grads", g.dtype())
                } else {
                    ("params", p.dtype())
                };
                return Err(Diagnostic::new(
                    Code::E0201,
                    format!("{what}[{i}] is {d}: an optimizer updates floating-point tensors"),
                )
                .at(if what == "grads" {
                    grads.span
                } else {
                    params.span
                }));
            }
        }
        let shapes: Vec<Vec<usize>> = ps.iter().map(|p| p.shape().to_vec()).collect();
        {
            let st = self.state.borrow();
            if st.step > 0 && st.shapes != shapes {
                return Err(Diagnostic::new(
                    Code::E0101,
                    "this optimizer was updated with other parameters before (its state is per position of the list)",
                )
                .at(params.span)
                .with_help("make one optimizer per parameter list"));
            }
        }
        let t = self.state.borrow().step + 1;
        let mut out = Vec::with_capacity(ps.len());
        let mut slots = Vec::with_capacity(ps.len());
        for (i, (p, g)) in ps.iter().zip(&gs).enumerate() {
            let slot: Vec<Tensor> = self
                .state
                .borrow()
                .slots
                .get(i)
                .cloned()
                .unwrap_or_default();
            let first = slot.is_empty();
            let c = self.kernel(it, p, g, first, span)?;
            let mut inputs = vec![p.clone(), g.clone()];
            inputs.extend(slot);
            if let Rule::Adam { b1, b2, .. } = self.rule {
                let wd = Rule::work_dtype(p.dtype());
                let e = t.min(i32::MAX as u64) as i32;
                for c in [1.0 - b1.powi(e), 1.0 - b2.powi(e)] {
                    inputs.push(Tensor::scalar(Scalar::Float(c), wd).map_err(rt)?);
                }
            }
            let mut res = run_compiled(&self.session, it, &c, &inputs, span)?.into_iter();
            let new = res.next().ok_or_else(|| {
                Diagnostic::new(
                    Code::E0500,
                    "internal compiler error: an update gave no result",
                )
                .at(span)
            })?;
            out.push(tensor_value(new));
            slots.push(res.collect::<Vec<_>>());
        }
        // the state changes only once every parameter's update ran
        let mut st = self.state.borrow_mut();
        st.shapes = shapes;
        st.step = t;
        st.slots = slots;
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
                    move |it, args| {
                        let span = args.span;
                        let a = args.bind("update", &["params", "grads"], &[])?;
                        let mut a = a.into_iter().flatten();
                        let (Some(p), Some(g)) = (a.next(), a.next()) else {
                            return Err(
                                Diagnostic::new(Code::E0101, "update(params, grads)").at(args.span)
                            );
                        };
                        match me.downcast::<Optimizer>() {
                            Some(o) => o.update(it, &p, &g, span),
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

fn sgd(session: &Rc<Session>, args: CallArgs) -> R<Value> {
    let a = args.bind("sgd", &["lr"], &["momentum"])?;
    let mut a = a.into_iter();
    let lr = number(a.next().flatten(), "lr", 0.0, 0.0, f64::MAX)?;
    let momentum = number(a.next().flatten(), "momentum", 0.0, 0.0, 1.0)?;
    Ok(Value::host(Optimizer {
        rule: Rule::Sgd { lr, momentum },
        state: RefCell::default(),
        session: session.clone(),
    }))
}

fn adam(session: &Rc<Session>, args: CallArgs) -> R<Value> {
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
        session: session.clone(),
    }))
}

/// Builds the `optim` module; its optimizers compile their updates in `session`.
pub fn module(session: Rc<Session>) -> Module {
    let m = Module::new("optim", "optimizers: sgd, adam (SPEC §8)");
    let s = session.clone();
    m.set(
        "sgd",
        Value::native("sgd", "sgd(lr, momentum=0.0)", move |_, args| sgd(&s, args)),
    );
    m.set(
        "adam",
        Value::native(
            "adam",
            "adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)",
            move |_, args| adam(&session, args),
        ),
    );
    m
}
