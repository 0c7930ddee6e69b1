//! The `optim` module (SPEC §8): `optim.sgd(lr, momentum=0.0)` and `optim.adam(lr,
//! betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)` make optimizers whose
//! `opt.update(params, grads)` returns the new parameters (functional, like optax) in the
//! structure of `params`: a list, tuple or dict of tensors, nested ([`crate::pytree`]); the
//! state (velocities, moments, the step count) lives in the optimizer, one slot per parameter. The rules are PyTorch's: SGD's velocity `v = μ·v + g` (the first step
//! `v = g`), `p − lr·v`; Adam's bias-corrected moments with `weight_decay` added to the
//! gradient (`g + wd·p`, `torch.optim.Adam`, not AdamW). The arithmetic is in fp32 (fp64 for
//! fp64 parameters) and each new parameter is rounded once to its dtype.
//!
//! Each parameter's update is a compiled kernel ([`tessera_compiler::graph::update`]): its
//! Graph IR fuses into one elementwise kernel that writes the new parameter and the new state
//! together, compiled once per parameter signature and run on the session's device like any
//! kernel (profiled, cross-checked, dumped by `--dump`).
//!
//! On a mesh (SPEC §8, data parallel): a sharded parameter is updated per device, each device
//! running the update kernel on its shards of the parameter, the gradient (brought to the
//! parameter's layout first: a partial sum all-reduced) and the state
//! ([`crate::dist::MeshUpdate`]); an ordinary parameter with a sharded gradient is updated on
//! the gathered gradient (a replicated one is rank 0's copy, no communication).

use std::cell::RefCell;
use std::rc::Rc;

use tessera_compiler::graph::update::{update_graph, Rule};
use tessera_compiler::graph::TensorType;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, AttrResult, CallArgs, HostObject, Interp, Module, Value};
use tessera_lang::Span;
use tessera_runtime::{DType, Scalar, Tensor};

use crate::dist::{whole_gradient, MeshUpdate};
use crate::kernel::{compile_graph, run_compiled, Compiled};
use crate::pytree::{self, Tree};
use crate::session::Session;
use crate::tensor::sharded::as_sharded;
use crate::tensor::{as_tensor, rt, tensor_value};

/// An optimizer and its state; its update kernels are kept by the `optim` module of its
/// session (`Updates`).
pub struct Optimizer {
    rule: Rule,
    state: RefCell<State>,
    session: Rc<Session>,
    updates: Updates,
}

/// Optimizer update kernels, by rule and parameter signature: shared by every optimizer of a
/// session (made by its one `optim` module) with the same hyperparameters.
type Updates = Rc<RefCell<std::collections::HashMap<String, Rc<Compiled>>>>;

#[derive(Default)]
struct State {
    step: u64,
    /// Per parameter, per device (one for an ordinary parameter): SGD's velocity, or Adam's
    /// two moments.
    slots: Vec<Vec<Vec<Tensor>>>,
    /// Per parameter: its shape, and its mesh and layout when sharded.
    sigs: Vec<String>,
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
        if let Some(c) = self.updates.borrow().get(&key) {
            s.engine.hit();
            return Ok(c.clone());
        }
        s.engine.miss();
        let ty = TensorType::new(p.shape().to_vec(), p.dtype());
        let graph = update_graph(self.rule, &ty, g.dtype(), first, span).map_err(|e| {
            Diagnostic::new(
                Code::E0500,
                format!("internal compiler error: the optimizer's update graph: {e}"),
            )
            .at(span)
        })?;
        let c = Rc::new(compile_graph(it, s, graph, span)?);
        self.updates.borrow_mut().insert(key, c.clone());
        Ok(c)
    }

    /// The new parameters from `params` and `grads` (lists or tuples of tensors, paired by
    /// position): per parameter one compiled update kernel, run on the session's device, or
    /// per device on the shards of a sharded parameter.
    fn update(&self, it: &mut Interp, params: &Arg, grads: &Arg, span: Span) -> R<Value> {
        let (tree, ps, names) = structure(params)?;
        let gs = match &tree {
            // one bare tensor: updated as a list of one (its gradient bare or in a list)
            Tree::List(_) if !pytree::is_container(&params.value) => tensors(grads, "grads")?,
            _ => pytree::leaves_like(&tree, &grads.value)
                .map_err(|m| pytree::mismatch("grads", &m).at(grads.span))?,
        };
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
        for (i, g) in gs.iter().enumerate() {
            if as_tensor(g).is_none() && as_sharded(g).is_none() {
                return Err(not_tensor_at(&format!("grads{}", names[i]), g, grads.span));
            }
        }
        for (i, (p, g)) in ps.iter().zip(&gs).enumerate() {
            let ((pshape, pd), (gshape, gd)) = (meta(p), meta(g));
            if pshape != gshape {
                return Err(Diagnostic::new(
                    Code::E0200,
                    format!(
                        "grads{0} has shape {gshape:?} but params{0} has shape {pshape:?}",
                        names[i]
                    ),
                )
                .at(grads.span));
            }
            if !pd.is_float() || !gd.is_float() {
                let (what, d) = if pd.is_float() {
                    ("grads", gd)
                } else {
                    ("params", pd)
                };
                return Err(Diagnostic::new(
                    Code::E0201,
                    format!(
                        "{what}{} is {d}: an optimizer updates floating-point tensors",
                        names[i]
                    ),
                )
                .at(if what == "grads" {
                    grads.span
                } else {
                    params.span
                }));
            }
        }
        // each parameter with its gradient: a sharded parameter is updated per device on its
        // layout; an ordinary one on the gathered gradient
        let mut pairs = Vec::with_capacity(ps.len());
        for (i, (p, g)) in ps.iter().zip(&gs).enumerate() {
            pairs.push(match (as_sharded(p), as_tensor(p)) {
                (Some(o), _) => Pair::Mesh(MeshUpdate::new(
                    o,
                    g,
                    &format!("grads{}", names[i]),
                    grads.span,
                )?),
                (None, Some(pt)) => {
                    let gt = match as_sharded(g) {
                        Some(o) => whole_gradient(o, grads.span)?,
                        None => as_tensor(g).ok_or_else(|| {
                            not_tensor_at(&format!("grads{}", names[i]), g, grads.span)
                        })?,
                    };
                    Pair::Whole(pt, gt)
                }
                (None, None) => {
                    return Err(not_tensor_at(
                        &format!("params{}", names[i]),
                        p,
                        params.span,
                    ))
                }
            });
        }
        let sigs: Vec<String> = ps
            .iter()
            .zip(&pairs)
            .map(|(p, pair)| match pair {
                Pair::Whole(..) => format!("{:?}", meta(p).0),
                Pair::Mesh(m) => format!("{:?} {}", meta(p).0, m.placement()),
            })
            .zip(&names)
            .map(|(sig, name)| format!("{name} {sig}"))
            .collect();
        {
            let st = self.state.borrow();
            if st.step > 0 && st.sigs != sigs {
                return Err(Diagnostic::new(
                    Code::E0101,
                    "this optimizer was updated with other parameters before (its state is per parameter: its place in the structure, shape, mesh and layout)",
                )
                .at(params.span)
                .with_help("make one optimizer per parameter list (a parameter keeps its shape, mesh and layout)"));
            }
        }
        let t = self.state.borrow().step + 1;
        // Adam's bias corrections, the same for every parameter
        let mut extra = Vec::new();
        if let Rule::Adam { b1, b2, .. } = self.rule {
            let e = t.min(i32::MAX as u64) as i32;
            extra = vec![1.0 - b1.powi(e), 1.0 - b2.powi(e)];
        }
        // abstract tensors (`graph.lower`, a plan): shapes only, the state left as it is
        let shapes_only = pairs.iter().any(|p| match p {
            Pair::Whole(p, g) => p.is_abstract() || g.is_abstract(),
            Pair::Mesh(m) => m.is_abstract(),
        });
        let mut out = Vec::with_capacity(pairs.len());
        let mut slots = Vec::with_capacity(pairs.len());
        for (i, pair) in pairs.iter().enumerate() {
            if shapes_only {
                out.push(match pair {
                    Pair::Whole(p, _) => {
                        tensor_value(Tensor::abstract_tensor(p.shape(), p.dtype()).map_err(rt)?)
                    }
                    Pair::Mesh(m) => self.run_mesh(it, m, Vec::new(), &extra, span)?.0,
                });
                continue;
            }
            let slot: Vec<Vec<Tensor>> = self
                .state
                .borrow()
                .slots
                .get(i)
                .cloned()
                .unwrap_or_default();
            let (new, state) = match pair {
                Pair::Whole(p, g) => {
                    let (new, state) = self.run_whole(it, p, g, slot, &extra, span)?;
                    (new, vec![state])
                }
                Pair::Mesh(m) => self.run_mesh(it, m, slot, &extra, span)?,
            };
            out.push(new);
            slots.push(state);
        }
        if shapes_only {
            return pytree::build(&tree, &mut out.into_iter());
        }
        // the state changes only once every parameter's update ran
        let mut st = self.state.borrow_mut();
        st.sigs = sigs;
        st.step = t;
        st.slots = slots;
        pytree::build(&tree, &mut out.into_iter())
    }

    /// The inputs of an update kernel: the parameter, the gradient, the state, Adam's bias
    /// corrections in the work dtype.
    fn inputs(p: &Tensor, g: &Tensor, slot: Vec<Tensor>, extra: &[f64]) -> R<Vec<Tensor>> {
        let mut inputs = vec![p.clone(), g.clone()];
        inputs.extend(slot);
        let wd = Rule::work_dtype(p.dtype());
        for &c in extra {
            inputs.push(Tensor::scalar(Scalar::Float(c), wd).map_err(rt)?);
        }
        Ok(inputs)
    }

    /// An ordinary parameter's update on the session's device: the new parameter and state.
    fn run_whole(
        &self,
        it: &mut Interp,
        p: &Tensor,
        g: &Tensor,
        slot: Vec<Vec<Tensor>>,
        extra: &[f64],
        span: Span,
    ) -> R<(Value, Vec<Tensor>)> {
        let slot = slot.into_iter().next().unwrap_or_default();
        let c = self.kernel(it, p, g, slot.is_empty(), span)?;
        let inputs = Self::inputs(p, g, slot, extra)?;
        let mut res = run_compiled(&self.session, it, &c, &inputs, span)?.into_iter();
        let new = res.next().ok_or_else(|| {
            Diagnostic::new(
                Code::E0500,
                "internal compiler error: an update gave no result",
            )
            .at(span)
        })?;
        Ok((tensor_value(new), res.collect()))
    }

    /// A sharded parameter's update: every device runs the update kernel (compiled once per
    /// shard shape) on its shards of the parameter, the gradient and the state, on the mesh's
    /// worker threads; the new parameter keeps its layout, each device its state.
    fn run_mesh(
        &self,
        it: &mut Interp,
        m: &MeshUpdate,
        slot: Vec<Vec<Tensor>>,
        extra: &[f64],
        span: Span,
    ) -> R<(Value, Vec<Vec<Tensor>>)> {
        let first = slot.iter().all(Vec::is_empty);
        let mut kernels: Vec<(Vec<usize>, Rc<Compiled>)> = Vec::new();
        let mut kernel_of = Vec::with_capacity(m.devices());
        let mut inputs = Vec::with_capacity(m.devices());
        for r in 0..m.devices() {
            let (p, g) = m.shards(r);
            let k = match kernels.iter().position(|(s, _)| s == p.shape()) {
                Some(k) => k,
                None => {
                    let c = self.kernel(it, &p, &g, first, span)?;
                    kernels.push((p.shape().to_vec(), c));
                    kernels.len() - 1
                }
            };
            kernel_of.push(k);
            let state = slot.get(r).cloned().unwrap_or_default();
            inputs.push(Self::inputs(&p, &g, state, extra)?);
        }
        let target = self.session.target.get();
        let c = &kernels[kernel_of.first().copied().unwrap_or(0)].1;
        let flops: f64 = (0..c.lowered.program.kernels.len())
            .filter_map(|i| tessera_compiler::cost::estimate(&c.lowered, i, target, None))
            .map(|e| e.flops)
            .sum();
        let bytes: f64 = inputs.first().map_or(0.0, |ins| {
            // what a device reads, and writes back (the parameter and the state)
            let b = |t: &Tensor| t.numel() as f64 * t.dtype().size_bytes() as f64;
            ins.iter().map(b).sum::<f64>()
                + ins
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != 1)
                    .map(|(_, t)| b(t))
                    .sum::<f64>()
        });
        let graphs: Vec<(&tessera_compiler::graph::Graph, &[Tensor])> = kernels
            .iter()
            .map(|(_, c)| (&c.graph, c.captures.as_slice()))
            .collect();
        m.run("optim.update", flops, bytes, |r| {
            let (g, caps) = graphs[kernel_of[r]];
            tessera_runtime::interp::run(g, &inputs[r], caps)
        })
        .map_err(|d| d.or_at(span))
    }
}

/// One parameter of an update and its gradient.
enum Pair {
    /// An ordinary parameter (a sharded gradient of it gathered).
    Whole(Tensor, Tensor),
    /// A sharded parameter, updated per device.
    Mesh(MeshUpdate),
}

/// The global shape and dtype of a tensor or sharded tensor (checked by [`tensors`]).
fn meta(v: &Value) -> (Vec<usize>, DType) {
    match (as_tensor(v), as_sharded(v)) {
        (Some(t), _) => (t.shape().to_vec(), t.dtype()),
        (None, Some(o)) => (o.s.shape.clone(), o.s.dtype),
        (None, None) => (Vec::new(), DType::F32),
    }
}

fn not_tensor(what: &str, i: usize, v: &Value, span: Span) -> Diagnostic {
    not_tensor_at(&format!("{what}[{i}]"), v, span)
}

fn not_tensor_at(name: &str, v: &Value, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::E0101,
        format!(
            "{name} is a {}, not an ordinary or sharded tensor",
            crate::tensor::kind_name(v)
        ),
    )
    .at(span)
}

/// The structure of `params` (a bare tensor is a list of one), its leaves and their paths
/// (`[0]`, `['w1']`); E0101 for a leaf that is not a tensor, or no container at all.
fn structure(params: &Arg) -> R<(Tree, Vec<Value>, Vec<String>)> {
    if !pytree::is_container(&params.value) {
        let ps = tensors(params, "params")?;
        return Ok((Tree::List(vec![Tree::Leaf]), ps, vec!["[0]".into()]));
    }
    let (tree, leaves) = pytree::flatten(&params.value);
    let mut ps = Vec::with_capacity(leaves.len());
    let mut names = Vec::with_capacity(leaves.len());
    for (path, v) in leaves {
        if as_tensor(&v).is_none() && as_sharded(&v).is_none() {
            return Err(not_tensor_at(&format!("params{path}"), &v, params.span));
        }
        ps.push(v);
        names.push(path);
    }
    Ok((tree, ps, names))
}

/// The tensors (ordinary or sharded) of a list or tuple argument.
fn tensors(a: &Arg, what: &str) -> R<Vec<Value>> {
    let is_tensor = |v: &Value| as_tensor(v).is_some() || as_sharded(v).is_some();
    let items: Vec<Value> = match &a.value {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.as_ref().clone(),
        other if is_tensor(other) => return Ok(vec![other.clone()]),
        other => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "{what} must be a list of tensors, not {}",
                    other.type_name()
                ),
            )
            .at(a.span))
        }
    };
    for (i, v) in items.iter().enumerate() {
        if !is_tensor(v) {
            return Err(not_tensor(what, i, v, a.span));
        }
    }
    Ok(items)
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

/// A finite float argument in `[lo, hi]` (ints allowed); `hi` of `f64::MAX`: no upper bound.
fn number(a: Option<Arg>, name: &str, default: f64, lo: f64, hi: f64) -> R<f64> {
    number_in(a, name, default, lo, hi, false)
}

/// [`number`], with `hi` itself excluded when `hi_open` (`[lo, hi)`).
fn number_in(a: Option<Arg>, name: &str, default: f64, lo: f64, hi: f64, hi_open: bool) -> R<f64> {
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
    let above = if hi_open { x >= hi } else { x > hi };
    if !(x.is_finite() && x >= lo) || above {
        let r = tessera_lang::eval::format::float_repr;
        let want = if hi == f64::MAX {
            format!("a finite number >= {}", r(lo))
        } else {
            format!(
                "in [{}, {}{}",
                r(lo),
                r(hi),
                if hi_open { ")" } else { "]" }
            )
        };
        return Err(
            Diagnostic::new(Code::E0101, format!("{name} must be {want}, got {}", r(x))).at(a.span),
        );
    }
    Ok(x)
}

fn sgd(session: &Rc<Session>, updates: &Updates, args: CallArgs) -> R<Value> {
    let a = args.bind("sgd", &["lr"], &["momentum"])?;
    let mut a = a.into_iter();
    let lr = number(a.next().flatten(), "lr", 0.0, 0.0, f64::MAX)?;
    let momentum = number(a.next().flatten(), "momentum", 0.0, 0.0, 1.0)?;
    Ok(Value::host(Optimizer {
        rule: Rule::Sgd { lr, momentum },
        state: RefCell::default(),
        session: session.clone(),
        updates: updates.clone(),
    }))
}

fn adam(session: &Rc<Session>, updates: &Updates, args: CallArgs) -> R<Value> {
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
                    // [0, 1) as PyTorch: a beta of 1 never updates its average (NaN steps)
                    number_in(Some(one(&t[0])), "betas[0]", 0.9, 0.0, 1.0, true)?,
                    number_in(Some(one(&t[1])), "betas[1]", 0.999, 0.0, 1.0, true)?,
                )
            }
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    match other {
                        Value::Tuple(t) => format!(
                            "betas must be a tuple of two numbers, got a tuple of {} items",
                            t.len()
                        ),
                        _ => format!(
                            "betas must be a tuple of two numbers, not {}",
                            other.type_name()
                        ),
                    },
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
        updates: updates.clone(),
    }))
}

/// Builds the `optim` module; its optimizers compile their updates in `session`.
pub fn module(session: Rc<Session>) -> Module {
    let m = Module::new("optim", "optimizers: sgd and adam");
    let updates = Updates::default();
    let (s, u) = (session.clone(), updates.clone());
    m.set(
        "sgd",
        Value::native("sgd", "sgd(lr, momentum=0.0)", move |_, args| {
            sgd(&s, &u, args)
        }),
    );
    m.set(
        "adam",
        Value::native(
            "adam",
            "adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)",
            move |_, args| adam(&session, &updates, args),
        ),
    );
    m
}
