//! Running optimised Graph IR on the CPU: op by op with the runtime's reference ops. Fused ops
//! run their body; `flash_attention` runs `runtime::flash_attention`. Abstract inputs give
//! abstract results (every runtime op propagates shapes and dtypes without data).

use crate::tensor::rt;

use tessera_compiler::graph::{Epilogue, Graph, Op, SliceItem, ValueId};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::{self as rtm, IndexItem, Operand, Scalar, Tensor};

/// A computed value: a tensor, or a scalar const (applied as the eager scalar operand).
#[derive(Clone)]
enum Val {
    T(Tensor),
    S(Scalar),
}

impl Val {
    fn operand(&self) -> Operand<'_> {
        match self {
            Val::T(t) => Operand::Tensor(t),
            Val::S(s) => Operand::Scalar(*s),
        }
    }
}

fn internal(msg: &str) -> Diagnostic {
    Diagnostic::new(
        Code::E0500,
        format!("internal compiler error: cannot run the kernel: {msg}"),
    )
    .with_help("this is a bug in Tessera, not in your script; please report it")
}

/// Runs one op elsewhere (the emulator): given the op's value and its tensor operands (in
/// operand order, consts left out), `Some(result)` replaces the CPU evaluation.
pub type Hook<'a> = dyn FnMut(ValueId, &[Tensor]) -> Option<Result<Tensor, Diagnostic>> + 'a;

/// Runs `g` with `inputs` (one per param) and the captured tensors; returns the outputs.
pub fn run(g: &Graph, inputs: &[Tensor], captures: &[Tensor]) -> Result<Vec<Tensor>, Diagnostic> {
    run_with(g, inputs, captures, &mut |_, _| None)
}

/// Sees every op the CPU evaluated: its value, its tensor operands (as for [`Hook`]) and the
/// result; `Some(tensor)` replaces the result for the ops after it; an error stops the run.
pub type Observer<'a> =
    dyn FnMut(ValueId, &[Tensor], &Tensor) -> Result<Option<Tensor>, Diagnostic> + 'a;

/// Told the wall time each op of the graph took (the profiler); an observer's time is not
/// counted.
pub type Timer<'a> = dyn FnMut(ValueId, std::time::Duration) + 'a;

/// [`run`] with a [`Hook`] asked first for every op.
pub fn run_with(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_>,
) -> Result<Vec<Tensor>, Diagnostic> {
    run_full(
        g,
        inputs,
        captures,
        hook,
        &mut |_, _, _| Ok(None),
        &mut |_, _| {},
    )
}

/// [`run_with`], and `observe` called after the CPU evaluates an op that is not a param,
/// capture or const (ops the hook replaced are not observed).
pub fn run_observed(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_>,
    observe: &mut Observer<'_>,
) -> Result<Vec<Tensor>, Diagnostic> {
    run_full(g, inputs, captures, hook, observe, &mut |_, _| {})
}

/// [`run_with`], telling `timer` how long each op took.
pub fn run_timed(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_>,
    timer: &mut Timer<'_>,
) -> Result<Vec<Tensor>, Diagnostic> {
    run_full(g, inputs, captures, hook, &mut |_, _, _| Ok(None), timer)
}

/// [`run_with`] with both an observer and a timer.
pub fn run_full(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_>,
    observe: &mut Observer<'_>,
    timer: &mut Timer<'_>,
) -> Result<Vec<Tensor>, Diagnostic> {
    let mut vals: Vec<Option<Val>> = vec![None; g.len()];
    let get = |vals: &Vec<Option<Val>>, v: ValueId| -> Result<Val, Diagnostic> {
        vals.get(v.index())
            .cloned()
            .flatten()
            .ok_or_else(|| internal("a value is used before it is computed"))
    };
    let tens = |vals: &Vec<Option<Val>>, v: ValueId| -> Result<Tensor, Diagnostic> {
        match get(vals, v)? {
            Val::T(t) => Ok(t),
            Val::S(s) => Tensor::scalar(s, s.default_dtype()).map_err(rt),
        }
    };
    for id in g.ids() {
        let Some(op) = g.op(id) else { continue };
        let started = std::time::Instant::now();
        let ty = g.ty(id).ok_or_else(|| internal("a value has no type"))?;
        let mut operands = Vec::new();
        if !matches!(op, Op::Param { .. } | Op::Capture { .. } | Op::Const { .. }) {
            for x in op.operands() {
                if let Some(Val::T(t)) = vals.get(x.index()).cloned().flatten() {
                    operands.push(t);
                }
            }
            if let Some(r) = hook(id, &operands) {
                if let Some(slot) = vals.get_mut(id.index()) {
                    *slot = Some(Val::T(r?));
                }
                timer(id, started.elapsed());
                continue;
            }
        }
        let v = match op {
            Op::Param { index } => Val::T(
                inputs
                    .get(*index)
                    .cloned()
                    .ok_or_else(|| internal("missing kernel input"))?,
            ),
            Op::Capture { index } => Val::T(
                captures
                    .get(*index)
                    .cloned()
                    .ok_or_else(|| internal("missing captured tensor"))?,
            ),
            Op::Const { value } => Val::S(*value),
            Op::Unary { op, x } => Val::T(rtm::unary(*op, &tens(&vals, *x)?).map_err(rt)?),
            Op::Binary { op, a, b } => {
                let (a, b) = (get(&vals, *a)?, get(&vals, *b)?);
                Val::T(rtm::binary(*op, a.operand(), b.operand()).map_err(rt)?)
            }
            Op::Where { cond, a, b } => {
                let c = tens(&vals, *cond)?;
                let (a, b) = (get(&vals, *a)?, get(&vals, *b)?);
                Val::T(rtm::where_(&c, a.operand(), b.operand()).map_err(rt)?)
            }
            Op::Cast { x } => Val::T(tens(&vals, *x)?.cast(ty.dtype).map_err(rt)?),
            Op::Matmul {
                a,
                b,
                accum,
                epilogue,
            } => {
                let mut acc =
                    rtm::matmul(&tens(&vals, *a)?, &tens(&vals, *b)?, *accum).map_err(rt)?;
                for s in epilogue {
                    acc = match &s.step {
                        Epilogue::Binary { op, operand } => {
                            let o = get(&vals, *operand)?;
                            rtm::binary(*op, &acc, o.operand()).map_err(rt)?
                        }
                        Epilogue::Scalar { op, value } => {
                            rtm::binary(*op, &acc, *value).map_err(rt)?
                        }
                        Epilogue::Unary(u) => rtm::unary(*u, &acc).map_err(rt)?,
                        Epilogue::Cast(d) => acc.cast(*d).map_err(rt)?,
                    };
                }
                Val::T(acc)
            }
            Op::Reduce {
                op,
                x,
                axis,
                keepdim,
            } => Val::T(
                rtm::reduce(&tens(&vals, *x)?, *op, axis.map(|a| a as isize), *keepdim)
                    .map_err(rt)?,
            ),
            Op::Softmax { x, axis } => {
                Val::T(rtm::softmax(&tens(&vals, *x)?, *axis as isize).map_err(rt)?)
            }
            Op::LayerNorm {
                x,
                weight,
                bias,
                eps,
            } => {
                let w = weight.map(|w| tens(&vals, w)).transpose()?;
                let b = bias.map(|b| tens(&vals, b)).transpose()?;
                Val::T(rtm::layernorm(&tens(&vals, *x)?, w.as_ref(), b.as_ref(), *eps).map_err(rt)?)
            }
            Op::RmsNorm { x, weight, eps } => {
                let w = weight.map(|w| tens(&vals, w)).transpose()?;
                Val::T(rtm::rmsnorm(&tens(&vals, *x)?, w.as_ref(), *eps).map_err(rt)?)
            }
            Op::Transpose { x, perm } => {
                Val::T(tens(&vals, *x)?.transpose(Some(perm)).map_err(rt)?)
            }
            Op::Reshape { x } => {
                let dims: Vec<i64> = ty.shape.iter().map(|d| *d as i64).collect();
                Val::T(tens(&vals, *x)?.reshape(&dims).map_err(rt)?)
            }
            Op::Broadcast { x } => {
                let t = tens(&vals, *x)?;
                let all = Tensor::ones(&ty.shape, tessera_runtime::DType::Bool).map_err(rt)?;
                Val::T(rtm::where_(&all, &t, &t).map_err(rt)?)
            }
            Op::Concat { xs, axis } => {
                let ts = xs
                    .iter()
                    .map(|x| tens(&vals, *x))
                    .collect::<Result<Vec<_>, _>>()?;
                Val::T(rtm::concat(&ts, *axis as isize).map_err(rt)?)
            }
            Op::Slice { x, items } => {
                let items: Vec<IndexItem> = items
                    .iter()
                    .map(|i| match i {
                        SliceItem::Index(i) => IndexItem::Int(*i),
                        SliceItem::Range { start, stop, step } => IndexItem::Slice {
                            start: *start,
                            stop: *stop,
                            step: *step,
                        },
                        SliceItem::NewAxis => IndexItem::NewAxis,
                        SliceItem::Ellipsis => IndexItem::Ellipsis,
                    })
                    .collect();
                Val::T(tens(&vals, *x)?.index(&items).map_err(rt)?)
            }
            Op::FlashAttention {
                q,
                k,
                v,
                causal,
                scale,
            } => Val::T(
                rtm::flash_attention(
                    &tens(&vals, *q)?,
                    &tens(&vals, *k)?,
                    &tens(&vals, *v)?,
                    *causal,
                    Some(*scale),
                )
                .map_err(rt)?,
            ),
            Op::FusedElementwise { inputs, body } => {
                let ins = inputs
                    .iter()
                    .map(|x| tens(&vals, *x))
                    .collect::<Result<Vec<_>, _>>()?;
                let out = run(body, &ins, captures)?;
                Val::T(
                    out.into_iter()
                        .next()
                        .ok_or_else(|| internal("a fused body returned nothing"))?,
                )
            }
        };
        let took = started.elapsed();
        let v = match &v {
            Val::T(t)
                if !matches!(op, Op::Param { .. } | Op::Capture { .. } | Op::Const { .. }) =>
            {
                match observe(id, &operands, t)? {
                    Some(r) => Val::T(r),
                    None => v,
                }
            }
            _ => v,
        };
        if let Some(slot) = vals.get_mut(id.index()) {
            *slot = Some(v);
        }
        timer(id, took);
    }
    g.outputs.iter().map(|o| tens(&vals, *o)).collect()
}
