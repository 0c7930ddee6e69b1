//! The Graph IR interpreter, the cpu's way of running a kernel: op by op with the runtime's
//! reference ops. Fused ops run their body; `flash_attention` runs [`crate::flash_attention`].
//! Abstract inputs give abstract results (every runtime op propagates shapes and dtypes
//! without data). The other devices run a kernel's lowered code through a [`Hook`] asked
//! first for every op.
//!
//! Generic in the error type `E` the caller's hooks and observers return (any type a
//! [`RuntimeError`] converts into).

use crate::{self as rtm, Code, DType, IndexItem, Operand, RuntimeError, Scalar, Tensor};
use tessera_compiler::graph::{
    AttnWrt, ComplexOp, Epilogue, EpilogueStep, FftEmbed, FftKind, FftNorm, Graph, NormKind, Op,
    SliceItem, ValueId,
};

/// A computed value: a tensor, or a scalar const (applied as the eager scalar operand).
#[derive(Clone)]
enum Val {
    T(Tensor),
    /// A `const`: the Python scalar (weakly typed next to a tensor operand, as in eager code)
    /// and its declared dtype (what it is as a tensor of its own: reshaped, broadcast).
    S(Scalar, DType),
}

impl Val {
    fn operand(&self) -> Operand<'_> {
        match self {
            Val::T(t) => Operand::Tensor(t),
            Val::S(s, _) => Operand::Scalar(*s),
        }
    }
}

fn internal(msg: &str) -> RuntimeError {
    RuntimeError::new(
        Code::E0500,
        format!("internal compiler error: cannot run the kernel: {msg}"),
    )
    .with_help("this is a bug in Tessera, not in your script; please report it")
}

/// Runs one op elsewhere (the emulator): given the op's value and its tensor operands (in
/// operand order, consts left out), `Some(results)` replaces the CPU evaluation (one tensor
/// per result of the op: [`Graph::result_types`]).
pub type Hook<'a, E> = dyn FnMut(ValueId, &[Tensor]) -> Option<Result<Vec<Tensor>, E>> + 'a;

/// Runs `g` with `inputs` (one per param) and the captured tensors; returns the outputs.
pub fn run(g: &Graph, inputs: &[Tensor], captures: &[Tensor]) -> crate::Result<Vec<Tensor>> {
    run_with(g, inputs, captures, &mut |_, _| None)
}

/// Told the wall time each op of the graph took (the profiler).
pub type Timer<'a> = dyn FnMut(ValueId, std::time::Duration) + 'a;

/// [`run`] with a [`Hook`] asked first for every op.
pub fn run_with<E: From<RuntimeError>>(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_, E>,
) -> Result<Vec<Tensor>, E> {
    run_inner(g, inputs, captures, hook, None)
}

/// [`run_with`], telling `timer` how long each op took.
pub fn run_timed<E: From<RuntimeError>>(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_, E>,
    timer: &mut Timer<'_>,
) -> Result<Vec<Tensor>, E> {
    run_inner(g, inputs, captures, hook, Some(timer))
}

/// [`run_timed`] with the clock read only when there is a timer (an untimed run of many small
/// ops would spend a tenth of its time reading it).
fn run_inner<E: From<RuntimeError>>(
    g: &Graph,
    inputs: &[Tensor],
    captures: &[Tensor],
    hook: &mut Hook<'_, E>,
    mut timer: Option<&mut Timer<'_>>,
) -> Result<Vec<Tensor>, E> {
    let mut vals: Vec<Option<Val>> = vec![None; g.len()];
    // the further results of multi-output ops
    let mut rest: std::collections::HashMap<ValueId, Vec<Tensor>> = Default::default();
    for id in g.ids() {
        let Some(op) = g.op(id) else { continue };
        let started = timer.is_some().then(std::time::Instant::now);
        let ty = g.ty(id).ok_or_else(|| internal("a value has no type"))?;
        if let Op::Result { of, index } = op {
            let t = rest
                .get(of)
                .and_then(|r| r.get(index.wrapping_sub(1)))
                .cloned()
                .ok_or_else(|| internal("a result of an op that did not give it"))?;
            if let Some(slot) = vals.get_mut(id.index()) {
                *slot = Some(Val::T(t));
            }
            continue;
        }
        let mut operands = Vec::new();
        if !matches!(op, Op::Param { .. } | Op::Capture { .. } | Op::Const { .. }) {
            for x in op.operands() {
                if let Some(Val::T(t)) = vals.get(x.index()).cloned().flatten() {
                    operands.push(t);
                }
            }
            if let Some(r) = hook(id, &operands) {
                let mut r = r?.into_iter();
                let main = r
                    .next()
                    .ok_or_else(|| E::from(internal("a launch gave no result")))?;
                if let Some(slot) = vals.get_mut(id.index()) {
                    *slot = Some(Val::T(main));
                }
                rest.insert(id, r.collect());
                if let (Some(t), Some(s)) = (timer.as_mut(), started) {
                    t(id, s.elapsed());
                }
                continue;
            }
        }
        let (v, more) = eval_op(op, ty, &vals, inputs, captures)?;
        let took = started.map(|s| s.elapsed());
        if let Some(slot) = vals.get_mut(id.index()) {
            *slot = Some(v);
        }
        if !more.is_empty() {
            rest.insert(id, more);
        }
        if let (Some(t), Some(took)) = (timer.as_mut(), took) {
            t(id, took);
        }
    }
    g.outputs
        .iter()
        .map(|o| tens(&vals, *o).map_err(E::from))
        .collect()
}

/// Elements per chunk when a fused body runs chunk by chunk ([`run_body`]).
const FUSED_CHUNK: usize = 1 << 14;

/// How a fused body's input is cut into chunks of the output's elements.
enum Piece {
    /// The output's shape: a contiguous range of its flat elements.
    Same(Tensor),
    /// One element: passed whole (it broadcasts against every chunk).
    One(Tensor),
    /// Broadcast: the flat input and its strides along the output's dimensions.
    Spread(Tensor, Vec<usize>),
}

/// Runs a fused elementwise body whose outputs have `shape`, chunk by chunk and in parallel
/// when it is large: each chunk's inputs are that range of the output's elements (a broadcast
/// input's gathered) as 1-D tensors, so every op of the body touches a chunk that stays in
/// cache instead of passing over whole tensors once per op. The ops and their order per
/// element are the body's, so the values are the same bit for bit (elementwise ops do not
/// depend on the shape). Small bodies, abstract inputs and bodies whose outputs are not
/// elementwise in the chunk run on whole tensors.
fn run_body(body: &Graph, ins: &[Tensor], captures: &[Tensor]) -> crate::Result<Vec<Tensor>> {
    use rayon::prelude::*;
    let shape = match body.outputs.first().and_then(|o| body.ty(*o)) {
        Some(t) => t.shape.clone(),
        None => return run(body, ins, captures),
    };
    let n: usize = shape.iter().product();
    if n < 2 * FUSED_CHUNK || ins.iter().any(Tensor::is_abstract) {
        return run(body, ins, captures);
    }
    let mut pieces = Vec::with_capacity(ins.len());
    for t in ins {
        let flat = t.reshape(&[t.numel() as i64])?;
        pieces.push(if t.shape() == shape.as_slice() {
            Piece::Same(flat)
        } else if t.numel() == 1 {
            Piece::One(t.reshape(&[])?)
        } else if t.shape().len() <= shape.len() {
            Piece::Spread(flat, crate::shape::broadcast_strides(t.shape(), &shape))
        } else {
            return run(body, ins, captures);
        });
    }
    let chunks = n.div_ceil(FUSED_CHUNK);
    let parts: Vec<crate::Result<Option<Vec<Tensor>>>> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let (lo, hi) = (c * FUSED_CHUNK, ((c + 1) * FUSED_CHUNK).min(n));
            let mut cin = Vec::with_capacity(pieces.len());
            for p in &pieces {
                cin.push(match p {
                    Piece::Same(f) => f.index(&[IndexItem::Slice {
                        start: Some(lo as i64),
                        stop: Some(hi as i64),
                        step: None,
                    }])?,
                    Piece::One(t) => t.clone(),
                    Piece::Spread(f, strides) => {
                        let idx: Vec<i64> = (lo..hi)
                            .map(|i| {
                                let (mut rest, mut at) = (i, 0usize);
                                for d in (0..shape.len()).rev() {
                                    at += (rest % shape[d]) * strides[d];
                                    rest /= shape[d];
                                }
                                at as i64
                            })
                            .collect();
                        rtm::take(f, &idx, 0)?
                    }
                });
            }
            let outs = run(body, &cin, captures)?;
            Ok(outs.iter().all(|o| o.shape() == [hi - lo]).then_some(outs))
        })
        .collect();
    let mut per_chunk = Vec::with_capacity(chunks);
    for p in parts {
        match p? {
            Some(outs) => per_chunk.push(outs),
            None => return run(body, ins, captures),
        }
    }
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    (0..body.outputs.len())
        .map(|k| {
            let cols: Vec<Tensor> = per_chunk.iter().map(|o| o[k].clone()).collect();
            rtm::concat(&cols, 0)?.reshape(&dims)
        })
        .collect()
}

/// The computed value `v`.
fn get(vals: &[Option<Val>], v: ValueId) -> crate::Result<Val> {
    vals.get(v.index())
        .cloned()
        .flatten()
        .ok_or_else(|| internal("a value is used before it is computed"))
}

/// The computed value `v` as a tensor (a scalar const as a 0-d tensor).
fn tens(vals: &[Option<Val>], v: ValueId) -> crate::Result<Tensor> {
    match get(vals, v)? {
        Val::T(t) => Ok(t),
        Val::S(s, d) => Tensor::scalar(s, d),
    }
}

/// Operands as they take part: a `const` is a weakly typed scalar next to a tensor (as in
/// eager code), but when every operand is a `const` (derivatives make such ops) none gives
/// the dtype, so each becomes a tensor of its declared dtype.
fn typed_if_all_consts<const N: usize>(vs: [Val; N]) -> crate::Result<[Val; N]> {
    if !vs.iter().all(|v| matches!(v, Val::S(..))) {
        return Ok(vs);
    }
    let mut out = vs.clone();
    for (o, v) in out.iter_mut().zip(&vs) {
        if let Val::S(s, d) = v {
            *o = Val::T(Tensor::scalar(*s, *d)?);
        }
    }
    Ok(out)
}

/// The value of `op` (of type `ty`), its operands read from `vals` (indexed by value id), and
/// the further results of a multi-output op.
fn eval_op(
    op: &Op,
    ty: &tessera_compiler::graph::TensorType,
    vals: &[Option<Val>],
    inputs: &[Tensor],
    captures: &[Tensor],
) -> crate::Result<(Val, Vec<Tensor>)> {
    let (ins, body, reduce) = match op {
        Op::FusedElementwise { inputs, body } => (inputs, body, None),
        Op::FusedReduce {
            inputs,
            body,
            op,
            axis,
            keepdim,
        } => (inputs, body, Some((*op, *axis, *keepdim))),
        _ => return Ok((eval_one(op, ty, vals, inputs, captures)?, Vec::new())),
    };
    let ins = ins
        .iter()
        .map(|x| tens(vals, *x))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = run_body(body, &ins, captures)?.into_iter();
    let first = out
        .next()
        .ok_or_else(|| internal("a fused body returned nothing"))?;
    // a fused reduction's value is the reduction of its body's first output
    let main = match reduce {
        Some((r, axis, keepdim)) => rtm::reduce(&first, r, Some(axis as isize), keepdim)?,
        None => first,
    };
    Ok((Val::T(main), out.collect()))
}

/// [`eval_op`] of an op with one result.
/// The row functions and the norms (the families of `tessera_compiler::graph::ops`) on the
/// cpu: the runtime's kernels of each.
fn rows_cpu(vals: &[Option<Val>], op: &Op) -> crate::Result<Tensor> {
    match op {
        Op::Row {
            f,
            x,
            axis,
            keepdim,
        } => rtm::row_fn(&tens(vals, *x)?, *f, *axis as isize, *keepdim),
        Op::LayerNorm {
            x,
            weight,
            bias,
            eps,
        } => {
            let w = weight.map(|w| tens(vals, w)).transpose()?;
            let b = bias.map(|b| tens(vals, b)).transpose()?;
            rtm::layernorm(&tens(vals, *x)?, w.as_ref(), b.as_ref(), *eps)
        }
        Op::RmsNorm { x, weight, eps } => {
            let w = weight.map(|w| tens(vals, w)).transpose()?;
            rtm::rmsnorm(&tens(vals, *x)?, w.as_ref(), *eps)
        }
        _ => Err(internal("not a row function or norm")),
    }
}

fn eval_one(
    op: &Op,
    ty: &tessera_compiler::graph::TensorType,
    vals: &[Option<Val>],
    inputs: &[Tensor],
    captures: &[Tensor],
) -> crate::Result<Val> {
    Ok(match op {
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
        Op::Const { value } => Val::S(*value, ty.dtype),
        Op::Unary { op, x } => Val::T(rtm::unary(*op, &tens(vals, *x)?)?),
        Op::Binary { op, a, b } => {
            let [a, b] = typed_if_all_consts([get(vals, *a)?, get(vals, *b)?])?;
            Val::T(rtm::binary(*op, a.operand(), b.operand())?)
        }
        Op::Where { cond, a, b } => {
            let c = tens(vals, *cond)?;
            let [a, b] = typed_if_all_consts([get(vals, *a)?, get(vals, *b)?])?;
            Val::T(rtm::where_(&c, a.operand(), b.operand())?)
        }
        Op::Cast { x } => Val::T(tens(vals, *x)?.cast(ty.dtype)?),
        Op::Matmul {
            a,
            b,
            accum,
            epilogue,
            ..
        } => Val::T(matmul_cpu(vals, captures, *a, *b, *accum, epilogue)?),
        Op::Reduce {
            op,
            x,
            axis,
            keepdim,
        } => Val::T(rtm::reduce(
            &tens(vals, *x)?,
            *op,
            axis.map(|a| a as isize),
            *keepdim,
        )?),
        Op::Row { .. } | Op::LayerNorm { .. } | Op::RmsNorm { .. } => Val::T(rows_cpu(vals, op)?),
        Op::Transpose { x, perm } => Val::T(tens(vals, *x)?.transpose(Some(perm))?),
        Op::Reshape { x } => {
            let dims: Vec<i64> = ty.shape.iter().map(|d| *d as i64).collect();
            Val::T(tens(vals, *x)?.reshape(&dims)?)
        }
        Op::Broadcast { x } => {
            let t = tens(vals, *x)?;
            let all = Tensor::ones(&ty.shape, crate::DType::Bool)?;
            Val::T(rtm::where_(&all, &t, &t)?)
        }
        Op::Concat { xs, axis } => {
            let ts = xs
                .iter()
                .map(|x| tens(vals, *x))
                .collect::<Result<Vec<_>, _>>()?;
            Val::T(rtm::concat(&ts, *axis as isize)?)
        }
        Op::Slice { x, items } => Val::T(tens(vals, *x)?.index(&slice_items(items))?),
        Op::Conv { x, w, bias, attrs } => {
            let b = bias.map(|b| tens(vals, b)).transpose()?;
            Val::T(rtm::conv(
                &tens(vals, *x)?,
                &tens(vals, *w)?,
                b.as_ref(),
                &rtm::ConvSpec::of_attrs(attrs),
            )?)
        }
        Op::Fft {
            x,
            kind,
            axis,
            n,
            norm,
            embed,
        } => Val::T(fft_cpu(vals, *x, *kind, *axis, *n, *norm, *embed)?),
        Op::Complex { op, a, b } => Val::T(complex_cpu(vals, *op, *a, *b)?),
        Op::SpectralMul { x, w, groups } => Val::T(rtm::spectral_mul(
            &tens(vals, *x)?,
            &tens(vals, *w)?,
            *groups,
        )?),
        Op::FlashAttention {
            q,
            k,
            v,
            causal,
            scale,
        } => Val::T(rtm::flash_attention(
            &tens(vals, *q)?,
            &tens(vals, *k)?,
            &tens(vals, *v)?,
            *causal,
            Some(*scale),
        )?),
        Op::AttentionLse {
            q,
            k,
            causal,
            scale,
        } => Val::T(rtm::attention_lse(
            &tens(vals, *q)?,
            &tens(vals, *k)?,
            *causal,
            *scale,
        )?),
        Op::AttentionGrad {
            wrt,
            q,
            k,
            v,
            dout,
            lse,
            delta,
            causal,
            scale,
        } => Val::T(rtm::attention_grad(
            match wrt {
                AttnWrt::Q => rtm::AttnWrt::Q,
                AttnWrt::K => rtm::AttnWrt::K,
                AttnWrt::V => rtm::AttnWrt::V,
            },
            &tens(vals, *q)?,
            &tens(vals, *k)?,
            &tens(vals, *v)?,
            &tens(vals, *dout)?,
            &tens(vals, *lse)?,
            &tens(vals, *delta)?,
            *causal,
            *scale,
        )?),
        Op::Take { x, index, axis } => {
            Val::T(rtm::take_at(&tens(vals, *x)?, &tens(vals, *index)?, *axis)?)
        }
        Op::ScatterAdd { index, src, axis } => Val::T(rtm::scatter_add(
            &tens(vals, *index)?,
            &tens(vals, *src)?,
            *axis,
            &ty.shape,
        )?),
        Op::FusedElementwise { .. } | Op::FusedReduce { .. } | Op::Result { .. } => {
            return Err(internal("a multi-output op evaluated as one result"))
        }
    })
}

/// A matmul with its fused norm prologue and epilogue steps.
fn matmul_cpu(
    vals: &[Option<Val>],
    captures: &[Tensor],
    a: ValueId,
    b: ValueId,
    accum: Option<DType>,
    epilogue: &[EpilogueStep],
) -> crate::Result<Tensor> {
    // a norm prologue first: A normalised as the norm op computes it
    let (prologue, epilogue) = tessera_compiler::graph::split_steps(epilogue);
    let mut a = tens(vals, a)?;
    if let Some(p) = prologue {
        let w = p.weight.map(|w| tens(vals, w)).transpose()?;
        let bias = p.bias.map(|b| tens(vals, b)).transpose()?;
        a = match p.norm {
            NormKind::LayerNorm => rtm::layernorm(&a, w.as_ref(), bias.as_ref(), p.eps)?,
            NormKind::RmsNorm => rtm::rmsnorm(&a, w.as_ref(), p.eps)?,
        };
    }
    let mut acc = rtm::matmul(&a, &tens(vals, b)?, accum)?;
    for s in epilogue {
        acc = match &s.step {
            Epilogue::Binary { op, operand } => {
                let o = get(vals, *operand)?;
                rtm::binary(*op, &acc, o.operand())?
            }
            Epilogue::Scalar { op, value } => rtm::binary(*op, &acc, *value)?,
            Epilogue::Unary(u) => rtm::unary(*u, &acc)?,
            Epilogue::Cast(d) => acc.cast(*d)?,
            Epilogue::Body { inputs, body } => {
                let mut ins = vec![acc];
                for x in inputs {
                    ins.push(tens(vals, *x)?);
                }
                run_body(body, &ins, captures)?
                    .into_iter()
                    .next()
                    .ok_or_else(|| internal("an epilogue body returned nothing"))?
            }
            Epilogue::Prologue(_) => return Err(internal("a prologue after the first step")),
        };
    }
    Ok(acc)
}

/// Graph IR slice items as the eager indexing's.
fn slice_items(items: &[SliceItem]) -> Vec<IndexItem> {
    items
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
        .collect()
}

/// An FFT along `axis`, its input first embedded in the length-`n` line.
fn fft_cpu(
    vals: &[Option<Val>],
    x: ValueId,
    kind: FftKind,
    axis: usize,
    n: usize,
    norm: FftNorm,
    embed: FftEmbed,
) -> crate::Result<Tensor> {
    let mut t = tens(vals, x)?;
    if embed != FftEmbed::default() && kind != FftKind::RealInverse {
        t = rtm::fft_embed(&t, axis, n, embed.lo, embed.step)?;
    }
    let norm = match norm {
        FftNorm::Backward => rtm::FftNorm::Backward,
        FftNorm::Ortho => rtm::FftNorm::Ortho,
        FftNorm::Forward => rtm::FftNorm::Forward,
    };
    let (n, axis) = (Some(n as i64), axis as isize);
    Ok(match kind {
        FftKind::Forward => rtm::fft(&t, n, axis, norm)?,
        FftKind::Inverse => rtm::ifft(&t, n, axis, norm)?,
        FftKind::RealForward => rtm::rfft(&t, n, axis, norm)?,
        FftKind::RealInverse => rtm::irfft(&t, n, axis, norm)?,
        FftKind::RealInverseAdjoint => rtm::double_interior_bins(
            &rtm::rfft(&t, n, axis, norm)?,
            axis as usize,
            n.unwrap_or(1) as usize,
        )?,
    })
}

/// An elementwise complex op: unary (`real`, `conj`, …) or binary (`complex(re, im)`, `+`, …).
fn complex_cpu(
    vals: &[Option<Val>],
    op: ComplexOp,
    a: ValueId,
    b: Option<ValueId>,
) -> crate::Result<Tensor> {
    use tessera_compiler::graph::ComplexOp as C;
    Ok(match (op, b) {
        (C::Real, None) => rtm::real(&tens(vals, a)?)?,
        (C::Imag, None) => rtm::imag(&tens(vals, a)?)?,
        (C::Conj, None) => rtm::conj(&tens(vals, a)?)?,
        (C::Angle, None) => rtm::angle(&tens(vals, a)?)?,
        (C::Abs, None) => rtm::unary(rtm::UnaryOp::Abs, &tens(vals, a)?)?,
        (C::Neg, None) => rtm::unary(rtm::UnaryOp::Neg, &tens(vals, a)?)?,
        (C::Make, Some(b)) => {
            let [x, y] = typed_if_all_consts([get(vals, a)?, get(vals, b)?])?;
            rtm::complex(x.operand(), y.operand())?
        }
        (C::Add | C::Sub | C::Mul, Some(b)) => {
            let bop = match op {
                C::Add => rtm::BinaryOp::Add,
                C::Sub => rtm::BinaryOp::Sub,
                _ => rtm::BinaryOp::Mul,
            };
            let [x, y] = typed_if_all_consts([get(vals, a)?, get(vals, b)?])?;
            rtm::binary(bop, x.operand(), y.operand())?
        }
        _ => return Err(internal("a complex op with the wrong number of operands")),
    })
}

/// The cpu's results of the op at `id` of `g` (one per [`Graph::result_types`]) given its
/// tensor operands (in operand order, consts left out, as a [`Hook`] is given them) and the
/// graph's captured tensors: how the cpu device runs one kernel.
pub fn eval_at(
    g: &Graph,
    id: ValueId,
    operands: &[Tensor],
    captures: &[Tensor],
) -> crate::Result<Vec<Tensor>> {
    let op = g.op(id).ok_or_else(|| internal("no op at this value"))?;
    let ty = g.ty(id).ok_or_else(|| internal("a value has no type"))?;
    if matches!(op, Op::Param { .. } | Op::Capture { .. } | Op::Const { .. }) {
        return Err(internal("a param, capture or const is not a kernel"));
    }
    let mut vals: Vec<Option<Val>> = vec![None; g.len()];
    let mut given = operands.iter();
    for x in op.operands() {
        let v = match g.op(x) {
            Some(Op::Const { value }) => Val::S(
                *value,
                g.ty(x).map_or_else(|| value.default_dtype(), |t| t.dtype),
            ),
            _ => Val::T(
                given
                    .next()
                    .cloned()
                    .ok_or_else(|| internal("an operand is missing"))?,
            ),
        };
        if let Some(slot) = vals.get_mut(x.index()) {
            *slot = Some(v);
        }
    }
    let (main, more) = eval_op(op, ty, &vals, &[], captures)?;
    let main = match main {
        Val::T(t) => t,
        Val::S(s, d) => Tensor::scalar(s, d)?,
    };
    Ok(std::iter::once(main).chain(more).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_compiler::graph::{BinaryOp, TensorType, UnaryOp};
    use tessera_lang::Span;

    /// `gelu(x) * w + cast(i) // 3` over [300, 257] (w broadcast [257], i int32 [300, 1]),
    /// with a second output `tanh(x)`: the chunked run equals the whole-tensor run bit for bit.
    #[test]
    fn a_large_fused_body_runs_in_chunks_with_the_same_bits() {
        let sp = Span::new(0, 0, 1);
        let mut b = Graph::new("body");
        let f = |s: &[usize]| TensorType::new(s.to_vec(), DType::F32);
        let x = b.add_param(f(&[300, 257]), sp);
        let w = b.add_param(f(&[257]), sp);
        let i = b.add_param(TensorType::new(vec![300, 1], DType::I32), sp);
        let g = b.push(
            Op::Unary {
                op: UnaryOp::Gelu,
                x,
            },
            f(&[300, 257]),
            sp,
        );
        let m = b.push(
            Op::Binary {
                op: BinaryOp::Mul,
                a: g,
                b: w,
            },
            f(&[300, 257]),
            sp,
        );
        let three = b.push(
            Op::Const {
                value: Scalar::Int(3),
            },
            TensorType::new(vec![], DType::I32),
            sp,
        );
        let q = b.push(
            Op::Binary {
                op: BinaryOp::FloorDiv,
                a: i,
                b: three,
            },
            TensorType::new(vec![300, 1], DType::I32),
            sp,
        );
        let qf = b.push(Op::Cast { x: q }, f(&[300, 1]), sp);
        let o = b.push(
            Op::Binary {
                op: BinaryOp::Add,
                a: m,
                b: qf,
            },
            f(&[300, 257]),
            sp,
        );
        let t = b.push(
            Op::Unary {
                op: UnaryOp::Tanh,
                x,
            },
            f(&[300, 257]),
            sp,
        );
        b.outputs = vec![o, t];
        let ins = vec![
            Tensor::randn(&[300, 257], DType::F32, 1).unwrap(),
            Tensor::randn(&[257], DType::F32, 2).unwrap(),
            Tensor::from_i64(
                &[300, 1],
                (0..300).map(|v| v * 7 - 900).collect(),
                DType::I32,
            )
            .unwrap(),
        ];
        const { assert!(300 * 257 >= 2 * FUSED_CHUNK, "the chunked path runs") };
        let whole = run(&b, &ins, &[]).unwrap();
        let chunked = run_body(&b, &ins, &[]).unwrap();
        assert_eq!(whole.len(), 2);
        for (a, c) in whole.iter().zip(&chunked) {
            assert_eq!(a.shape(), c.shape());
            let (a, c) = (a.to_f32_vec().unwrap(), c.to_f32_vec().unwrap());
            assert!(a.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }
}
