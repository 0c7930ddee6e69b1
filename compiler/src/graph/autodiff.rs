//! Reverse-mode differentiation of Graph IR (SPEC §8): [`grad`] turns a traced graph with one
//! scalar output into a graph that computes that output's gradient with respect to some of its
//! parameters (and, for `value_and_grad`, the output too). The backward graph is ordinary Graph
//! IR: the pipeline optimises, fuses and lowers it like any traced kernel.
//!
//! Each op's derivative is its row's `vjp` in the op tables (unary, binary, reduction); the ops
//! without a table (matmul, softmax, shape ops, where, cast) have theirs in [`op_vjp`]. The
//! helpers here ([`emit`], [`sum_to`], …) are what those derivatives build with. Cotangents are
//! carried in fp32 (fp64 for fp64 values), so bf16/fp16 gradients accumulate in fp32; a
//! parameter's gradient is cast to the parameter's dtype at the end (as JAX returns it).

use super::infer::{infer, TypeError};
use super::{
    AttnWrt, BinaryOp, DType, Graph, Op, ReduceOp, Scalar, SliceItem, TensorType, UnaryOp, ValueId,
};
use tessera_lang::{Code, Diagnostic, Span};

type R<T> = Result<T, TypeError>;

/// Why a graph cannot be differentiated: a user-facing diagnostic at `span`.
#[derive(Clone, Debug, PartialEq)]
pub struct GradError {
    pub code: Code,
    pub message: String,
    pub span: Option<Span>,
    pub label: Option<String>,
    pub help: Option<String>,
}

impl GradError {
    fn new(code: Code, message: impl Into<String>, span: Option<Span>) -> GradError {
        GradError {
            code,
            message: message.into(),
            span,
            label: None,
            help: None,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(self.code, self.message.clone());
        if let Some(s) = self.span {
            d = d.at(s);
        }
        if let Some(l) = &self.label {
            d = d.with_label(l.clone());
        }
        if let Some(h) = &self.help {
            d = d.with_help(h.clone());
        }
        d
    }
}

impl From<TypeError> for GradError {
    fn from(e: TypeError) -> GradError {
        GradError::new(
            Code::E0500,
            format!("internal compiler error: a derivative does not type: {e:?}"),
            None,
        )
    }
}

// ----- building ops --------------------------------------------------------------------------

/// The type of `v`.
pub(crate) fn ty(g: &Graph, v: ValueId) -> R<TensorType> {
    g.ty(v).cloned().ok_or(TypeError::Undefined(v))
}

/// Appends `op` with the type [`infer`] gives it (spans are set by [`grad`] afterwards).
pub(crate) fn emit(g: &mut Graph, op: Op) -> R<ValueId> {
    let t = infer(g, &op, &TensorType::new(vec![], DType::F32))?;
    Ok(g.push(op, t, Span::default()))
}

/// Appends `op` whose attributes live in its type (`declared`: cast, reshape, broadcast, const).
pub(crate) fn emit_as(g: &mut Graph, op: Op, declared: TensorType) -> R<ValueId> {
    let t = infer(g, &op, &declared)?;
    Ok(g.push(op, t, Span::default()))
}

/// A 0-d constant of dtype `d`.
pub(crate) fn konst(g: &mut Graph, v: f64, d: DType) -> R<ValueId> {
    emit_as(
        g,
        Op::Const {
            value: Scalar::Float(v),
        },
        TensorType::new(vec![], d),
    )
}

pub(crate) fn un(g: &mut Graph, op: UnaryOp, x: ValueId) -> R<ValueId> {
    emit(g, Op::Unary { op, x })
}

pub(crate) fn bin(g: &mut Graph, op: BinaryOp, a: ValueId, b: ValueId) -> R<ValueId> {
    emit(g, Op::Binary { op, a, b })
}

/// `a op c` with `c` a constant in `a`'s dtype.
pub(crate) fn bin_c(g: &mut Graph, op: BinaryOp, a: ValueId, c: f64) -> R<ValueId> {
    let d = ty(g, a)?.dtype;
    let k = konst(g, c, d)?;
    bin(g, op, a, k)
}

pub(crate) fn select(g: &mut Graph, cond: ValueId, a: ValueId, b: ValueId) -> R<ValueId> {
    emit(g, Op::Where { cond, a, b })
}

/// `(where(cond, v, 0), where(cond, 0, v))`: `v` routed by `cond` to two places.
pub(crate) fn route(g: &mut Graph, cond: ValueId, v: ValueId) -> R<(ValueId, ValueId)> {
    let yes = keep_where(g, cond, v)?;
    let z = konst(g, 0.0, ty(g, v)?.dtype)?;
    let no = select(g, cond, z, v)?;
    Ok((yes, no))
}

/// `where(cond, v, 0)`.
pub(crate) fn keep_where(g: &mut Graph, cond: ValueId, v: ValueId) -> R<ValueId> {
    let z = konst(g, 0.0, ty(g, v)?.dtype)?;
    select(g, cond, v, z)
}

pub(crate) fn cast(g: &mut Graph, x: ValueId, d: DType) -> R<ValueId> {
    let t = ty(g, x)?;
    if t.dtype == d {
        return Ok(x);
    }
    emit_as(g, Op::Cast { x }, TensorType::new(t.shape, d))
}

pub(crate) fn reshape(g: &mut Graph, x: ValueId, shape: &[usize]) -> R<ValueId> {
    let t = ty(g, x)?;
    if t.shape == shape {
        return Ok(x);
    }
    emit_as(
        g,
        Op::Reshape { x },
        TensorType::new(shape.to_vec(), t.dtype),
    )
}

pub(crate) fn broadcast_to(g: &mut Graph, x: ValueId, shape: &[usize]) -> R<ValueId> {
    let t = ty(g, x)?;
    if t.shape == shape {
        return Ok(x);
    }
    // A 0-d value goes through a reshape to ones first: the broadcast kernel reads its input
    // from a buffer, which a `const` feeding it directly does not have.
    let x = if t.shape.is_empty() {
        reshape(g, x, &vec![1; shape.len()])?
    } else {
        x
    };
    if ty(g, x)?.shape == shape {
        return Ok(x);
    }
    emit_as(
        g,
        Op::Broadcast { x },
        TensorType::new(shape.to_vec(), t.dtype),
    )
}

pub(crate) fn sum_axis(g: &mut Graph, x: ValueId, axis: usize, keepdim: bool) -> R<ValueId> {
    emit(
        g,
        Op::Reduce {
            op: ReduceOp::Sum,
            x,
            axis: Some(axis),
            keepdim,
        },
    )
}

/// `sum(x, axis, keepdim)`.
pub(crate) fn sum_reduce(
    g: &mut Graph,
    x: ValueId,
    axis: Option<usize>,
    keepdim: bool,
) -> R<ValueId> {
    emit(
        g,
        Op::Reduce {
            op: ReduceOp::Sum,
            x,
            axis,
            keepdim,
        },
    )
}

/// `x` (of a broadcast result's shape) summed down to `shape`: the reverse of broadcasting
/// (leading dimensions summed away, size-1 dimensions summed with keepdim).
pub(crate) fn sum_to(g: &mut Graph, x: ValueId, shape: &[usize]) -> R<ValueId> {
    let mut v = x;
    let mut cur = ty(g, v)?.shape;
    while cur.len() > shape.len() {
        v = sum_axis(g, v, 0, false)?;
        cur.remove(0);
    }
    for i in 0..shape.len() {
        if shape[i] == 1 && cur.get(i).is_some_and(|&c| c != 1) {
            v = sum_axis(g, v, i, true)?;
            cur[i] = 1;
        }
    }
    reshape(g, v, shape)
}

/// The inverse of permutation `perm`.
fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        if let Some(s) = inv.get_mut(p) {
            *s = i;
        }
    }
    inv
}

/// `x` with its last two axes swapped.
fn swap_last(g: &mut Graph, x: ValueId) -> R<ValueId> {
    let n = ty(g, x)?.shape.len();
    let mut perm: Vec<usize> = (0..n).collect();
    perm.swap(n - 2, n - 1);
    emit(g, Op::Transpose { x, perm })
}

fn matmul(g: &mut Graph, a: ValueId, b: ValueId) -> R<ValueId> {
    emit(
        g,
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
        },
    )
}

/// The dtype cotangents of a value of dtype `d` are carried in.
pub(crate) fn cot_dtype(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

// ----- derivatives of the ops without a table ------------------------------------------------

/// The cotangents of `op`'s operands (one per [`Op::operands`], `None`: none) given its result
/// `y` and the result's cotangent `dy`; `Err(None)` when the op has no derivative yet.
fn op_vjp(
    g: &mut Graph,
    op: &Op,
    y: ValueId,
    dy: ValueId,
) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
    let ok = |v: Vec<Option<ValueId>>| Ok(v);
    match op {
        Op::Unary { op: u, x } => match u.row().vjp {
            Some(f) => ok(vec![Some(f(g, *x, y, dy)?)]),
            None => Err(None),
        },
        Op::Binary { op: b, a, b: bb } => match b.row().vjp {
            Some(f) => {
                let (da, db) = f(g, *a, *bb, y, dy)?;
                let sa = ty(g, *a)?.shape;
                let sb = ty(g, *bb)?.shape;
                ok(vec![Some(sum_to(g, da, &sa)?), Some(sum_to(g, db, &sb)?)])
            }
            None => Err(None),
        },
        Op::Reduce {
            op: r,
            x,
            axis,
            keepdim,
        } => match r.row().vjp {
            Some(f) => ok(vec![Some(f(g, *x, y, dy, *axis, *keepdim)?)]),
            None => Err(None),
        },
        Op::Where { cond, a, b } => {
            let sa = ty(g, *a)?.shape;
            let sb = ty(g, *b)?.shape;
            let (da, db) = route(g, *cond, dy)?;
            ok(vec![
                None,
                Some(sum_to(g, da, &sa)?),
                Some(sum_to(g, db, &sb)?),
            ])
        }
        Op::Cast { .. } => ok(vec![Some(dy)]),
        Op::Reshape { x } | Op::Broadcast { x } => {
            let s = ty(g, *x)?.shape;
            ok(vec![Some(sum_to(g, dy, &s)?)])
        }
        Op::Transpose { perm, .. } => {
            let t = emit(
                g,
                Op::Transpose {
                    x: dy,
                    perm: inverse(perm),
                },
            )?;
            ok(vec![Some(t)])
        }
        Op::Softmax { axis, .. } => {
            // dx = y·(dy − Σ dy·y)
            let p = bin(g, BinaryOp::Mul, dy, y)?;
            let s = sum_axis(g, p, *axis, true)?;
            let d = bin(g, BinaryOp::Sub, dy, s)?;
            ok(vec![Some(bin(g, BinaryOp::Mul, d, y)?)])
        }
        Op::LayerNorm {
            x,
            weight,
            bias,
            eps,
        } => {
            let (xhat, r) = normalized(g, *x, *eps, true)?;
            let n = norm_rest(g, *x, xhat, r, *weight, dy, true)?;
            let db = match bias {
                Some(_) => Some(sum_leading(g, dy)?),
                None => None,
            };
            let mut v = vec![Some(n.dx)];
            if weight.is_some() {
                v.push(n.dw);
            }
            if bias.is_some() {
                v.push(db);
            }
            ok(v)
        }
        Op::RmsNorm { x, weight, eps } => {
            let (xhat, r) = normalized(g, *x, *eps, false)?;
            let n = norm_rest(g, *x, xhat, r, *weight, dy, false)?;
            let mut v = vec![Some(n.dx)];
            if weight.is_some() {
                v.push(n.dw);
            }
            ok(v)
        }
        Op::Concat { xs, axis } => {
            let rank = ty(g, dy)?.shape.len();
            let mut off = 0i64;
            let mut v = Vec::with_capacity(xs.len());
            for x in xs {
                let n = ty(g, *x)?.shape.get(*axis).copied().unwrap_or(0) as i64;
                let mut items = vec![full_range(); rank];
                items[*axis] = SliceItem::Range {
                    start: Some(off),
                    stop: Some(off + n),
                    step: None,
                };
                let piece = emit(g, Op::Slice { x: dy, items })?;
                v.push(Some(piece));
                off += n;
            }
            ok(v)
        }
        Op::Slice { x, items } => match unslice(g, *x, items, dy)? {
            Some(dx) => ok(vec![Some(dx)]),
            None => Err(None),
        },
        Op::FlashAttention {
            q,
            k,
            v,
            causal,
            scale,
        } => {
            // FlashAttention-2's backward: the row log-sum-exp of the scores, delta = Σ dy·y per
            // query row, then one fused kernel per operand recomputing the probabilities tile
            // by tile (no [sq, sk] value anywhere); operands broadcast to the output's batch.
            let ys = ty(g, y)?.shape;
            let batch = &ys[..ys.len() - 2];
            let mut full = |x: ValueId| -> R<ValueId> {
                let t = ty(g, x)?.shape;
                let mut s = batch.to_vec();
                s.extend_from_slice(&t[t.len() - 2..]);
                broadcast_to(g, x, &s)
            };
            let (bq, bk, bv) = (full(*q)?, full(*k)?, full(*v)?);
            let (causal, scale) = (*causal, *scale);
            let lse = emit(
                g,
                Op::AttentionLse {
                    q: bq,
                    k: bk,
                    causal,
                    scale,
                },
            )?;
            let yc = cast(g, y, ty(g, dy)?.dtype)?;
            let prod = bin(g, BinaryOp::Mul, dy, yc)?;
            let delta = sum_axis(g, prod, ys.len() - 1, false)?;
            let mut v_out = Vec::with_capacity(3);
            for (wrt, x) in [(AttnWrt::Q, *q), (AttnWrt::K, *k), (AttnWrt::V, *v)] {
                let d = emit(
                    g,
                    Op::AttentionGrad {
                        wrt,
                        q: bq,
                        k: bk,
                        v: bv,
                        dout: dy,
                        lse,
                        delta,
                        causal,
                        scale,
                    },
                )?;
                let s = ty(g, x)?.shape;
                v_out.push(Some(sum_to(g, d, &s)?));
            }
            ok(v_out)
        }
        Op::Matmul { a, b, epilogue, .. } if epilogue.is_empty() => {
            let (ta, tb) = (ty(g, *a)?, ty(g, *b)?);
            // 1-d operands as matrices: a [k] is [1,k], b [k] is [k,1]
            let a2 = if ta.shape.len() == 1 {
                reshape(g, *a, &[1, ta.shape[0]])?
            } else {
                *a
            };
            let b2 = if tb.shape.len() == 1 {
                reshape(g, *b, &[tb.shape[0], 1])?
            } else {
                *b
            };
            let mut ys = ty(g, y)?.shape;
            if ta.shape.len() == 1 {
                ys.insert(ys.len() - usize::from(tb.shape.len() != 1), 1);
            }
            if tb.shape.len() == 1 {
                ys.push(1);
            }
            let dy2 = reshape(g, dy, &ys)?;
            let bt = swap_last(g, b2)?;
            let da = matmul(g, dy2, bt)?;
            let at = swap_last(g, a2)?;
            let db = matmul(g, at, dy2)?;
            // summed over broadcast batch dimensions to the matrix shapes, then 1-d again
            let (sa, sb) = (ty(g, a2)?.shape, ty(g, b2)?.shape);
            let da = sum_to(g, da, &sa)?;
            let db = sum_to(g, db, &sb)?;
            ok(vec![
                Some(reshape(g, da, &ta.shape)?),
                Some(reshape(g, db, &tb.shape)?),
            ])
        }
        _ => Err(None),
    }
}

// ----- norms and slices ----------------------------------------------------------------------

fn full_range() -> SliceItem {
    SliceItem::Range {
        start: None,
        stop: None,
        step: None,
    }
}

/// `x` summed over every axis but the last (a norm parameter's gradient).
fn sum_leading(g: &mut Graph, x: ValueId) -> R<ValueId> {
    let s = ty(g, x)?.shape;
    let last = s.last().copied().unwrap_or(1);
    sum_to(g, x, &[last])
}

/// `mean(v, axis=-1, keepdim=True)`.
fn mean_last(g: &mut Graph, v: ValueId) -> R<ValueId> {
    let n = ty(g, v)?.shape.len();
    emit(
        g,
        Op::Reduce {
            op: ReduceOp::Mean,
            x: v,
            axis: Some(n.saturating_sub(1)),
            keepdim: true,
        },
    )
}

/// The normalised input of a layernorm (`centred`) or rmsnorm and `r = 1/σ` (keepdim on the
/// last axis), recomputed from `x` in the cotangent dtype.
fn normalized(g: &mut Graph, x: ValueId, eps: f64, centred: bool) -> R<(ValueId, ValueId)> {
    let d = cot_dtype(ty(g, x)?.dtype);
    let xc = cast(g, x, d)?;
    let c = if centred {
        let m = mean_last(g, xc)?;
        bin(g, BinaryOp::Sub, xc, m)?
    } else {
        xc
    };
    let sq = bin(g, BinaryOp::Mul, c, c)?;
    let var = mean_last(g, sq)?;
    let ve = bin_c(g, BinaryOp::Add, var, eps)?;
    let r = un(g, UnaryOp::Rsqrt, ve)?;
    let xhat = bin(g, BinaryOp::Mul, c, r)?;
    Ok((xhat, r))
}

/// A norm's cotangents: of its input, and of its weight when it has one.
struct NormGrads {
    dx: ValueId,
    dw: Option<ValueId>,
}

/// With `g = dy·w`: layernorm `dx = r·(g − mean(g) − x̂·mean(g·x̂))`, rmsnorm
/// `dx = r·(g − x̂·mean(g·x̂))`; `dw = Σ dy·x̂` over the leading axes.
fn norm_rest(
    g: &mut Graph,
    _x: ValueId,
    xhat: ValueId,
    r: ValueId,
    weight: Option<ValueId>,
    dy: ValueId,
    centred: bool,
) -> R<NormGrads> {
    let gy = match weight {
        Some(w) => bin(g, BinaryOp::Mul, dy, w)?,
        None => dy,
    };
    let gx = bin(g, BinaryOp::Mul, gy, xhat)?;
    let m2 = mean_last(g, gx)?;
    let t = bin(g, BinaryOp::Mul, xhat, m2)?;
    let mut inner = bin(g, BinaryOp::Sub, gy, t)?;
    if centred {
        let m1 = mean_last(g, gy)?;
        inner = bin(g, BinaryOp::Sub, inner, m1)?;
    }
    let dx = bin(g, BinaryOp::Mul, inner, r)?;
    let dw = match weight {
        Some(_) => {
            let p = bin(g, BinaryOp::Mul, dy, xhat)?;
            Some(sum_leading(g, p)?)
        }
        None => None,
    };
    Ok(NormGrads { dx, dw })
}

/// The cotangent of `x` from that of `x[items]`: `dy` put back where the slice took it from,
/// zeros elsewhere. A stepped range spreads `dy` along its axis (each element followed by
/// `|step| − 1` zeros, by a concat with zeros on a new axis and a reshape); a negative step
/// reverses it first. `None` when the items are not ones this can invert.
fn unslice(g: &mut Graph, x: ValueId, items: &[SliceItem], dy: ValueId) -> R<Option<ValueId>> {
    let xs = ty(g, x)?.shape;
    let consumed = items
        .iter()
        .filter(|i| matches!(i, SliceItem::Index(_) | SliceItem::Range { .. }))
        .count();
    // per input axis: (first index taken, count, step)
    let mut spans: Vec<(usize, usize, i64)> = Vec::with_capacity(xs.len());
    for it in items {
        let axis = spans.len();
        match *it {
            SliceItem::Index(i) => {
                let n = xs.get(axis).copied().unwrap_or(0) as i64;
                let j = if i < 0 { i + n } else { i };
                spans.push((j.max(0) as usize, 1, 1));
            }
            SliceItem::Range { start, stop, step } => {
                let n = xs.get(axis).copied().unwrap_or(0);
                let Some((s0, count, st)) = super::infer::slice_indices(start, stop, step, n)
                else {
                    return Ok(None);
                };
                if st == 0 || (count > 0 && s0 < 0) {
                    return Ok(None);
                }
                spans.push((s0.max(0) as usize, count, st));
            }
            SliceItem::NewAxis => {}
            SliceItem::Ellipsis => {
                for a in 0..xs.len().saturating_sub(consumed) {
                    spans.push((0, xs[axis + a], 1));
                }
            }
        }
    }
    while spans.len() < xs.len() {
        spans.push((0, xs[spans.len()], 1));
    }
    let sub: Vec<usize> = spans.iter().map(|&(_, c, _)| c).collect();
    let mut cur = reshape(g, dy, &sub)?;
    let d = ty(g, dy)?.dtype;
    let zeros = |g: &mut Graph, s: &[usize]| -> R<ValueId> {
        let z = konst(g, 0.0, d)?;
        broadcast_to(g, z, s)
    };
    for (axis, &(s0, count, step)) in spans.iter().enumerate() {
        let n = xs[axis];
        if count == n && step == 1 {
            continue;
        }
        // the lowest index taken, with `cur` in increasing index order
        let mut start = s0;
        if step < 0 && count > 1 {
            let rank = ty(g, cur)?.shape.len();
            let mut it = vec![full_range(); rank];
            it[axis] = SliceItem::Range {
                start: None,
                stop: None,
                step: Some(-1),
            };
            cur = emit(g, Op::Slice { x: cur, items: it })?;
            start = (s0 as i64 + (count as i64 - 1) * step).max(0) as usize;
        }
        let k = step.unsigned_abs() as usize;
        let mut covered = count;
        if k > 1 && count > 1 {
            // [.., count, ..] → [.., count, 1, ..] ++ zeros [.., count, k−1, ..] → [.., count·k, ..]
            let shape = ty(g, cur)?.shape;
            let mut one = shape.clone();
            one.insert(axis + 1, 1);
            let c1 = reshape(g, cur, &one)?;
            let mut zs = shape.clone();
            zs.insert(axis + 1, k - 1);
            let z = zeros(g, &zs)?;
            let both = emit(
                g,
                Op::Concat {
                    xs: vec![c1, z],
                    axis: axis + 1,
                },
            )?;
            let mut spread = shape.clone();
            spread[axis] = count * k;
            let flat = reshape(g, both, &spread)?;
            covered = (count - 1) * k + 1;
            let mut it = vec![full_range(); spread.len()];
            it[axis] = SliceItem::Range {
                start: Some(0),
                stop: Some(covered as i64),
                step: None,
            };
            cur = emit(g, Op::Slice { x: flat, items: it })?;
        }
        let shape_now = ty(g, cur)?.shape;
        let mut parts = Vec::new();
        let after = n.saturating_sub(start + covered);
        for (len, is_cur) in [(start, false), (covered, true), (after, false)] {
            if is_cur {
                parts.push(cur);
            } else if len > 0 {
                let mut s = shape_now.clone();
                s[axis] = len;
                parts.push(zeros(g, &s)?);
            }
        }
        cur = if parts.len() == 1 {
            parts[0]
        } else {
            emit(g, Op::Concat { xs: parts, axis })?
        };
    }
    Ok(Some(cur))
}

// ----- the pass ------------------------------------------------------------------------------

/// The gradient graph of `fwd` (one output, a one-element float tensor) with respect to the
/// params `wrt` (indices into `fwd.params`): its outputs are the output itself when
/// `with_value`, then one gradient per `wrt` entry, each of its param's shape and dtype.
/// Params `fwd` does not use get zeros. Ops on the path from a `wrt` param to the output
/// without a derivative are an error naming the op (E0201).
pub fn grad(fwd: &Graph, wrt: &[usize], with_value: bool) -> Result<Graph, GradError> {
    let [out] = fwd.outputs.as_slice() else {
        return Err(GradError::new(
            Code::E0101,
            format!(
                "graph.grad needs a function returning one tensor, not {}",
                fwd.outputs.len()
            ),
            None,
        ));
    };
    let out = *out;
    let tout = ty(fwd, out)?;
    if tout.shape.iter().product::<usize>() != 1 {
        let mut e = GradError::new(
            Code::E0200,
            format!(
                "graph.grad needs a scalar result, but the function returns a tensor of shape {:?}",
                tout.shape
            ),
            Some(fwd.span(out)),
        );
        e.label = Some("not a scalar".into());
        e.help = Some("reduce it first, e.g. `op.sum(loss)` or `op.mean(loss)`".into());
        return Err(e);
    }
    if !tout.dtype.is_float() {
        return Err(GradError::new(
            Code::E0201,
            format!("graph.grad needs a float result, not {}", tout.dtype),
            Some(fwd.span(out)),
        ));
    }
    let mut params = Vec::with_capacity(wrt.len());
    for &k in wrt {
        let Some(&p) = fwd.params.get(k) else {
            return Err(GradError::new(
                Code::E0101,
                format!(
                    "argnums names argument {k}, but the function has {} tensor arguments",
                    fwd.params.len()
                ),
                None,
            ));
        };
        let d = ty(fwd, p)?.dtype;
        if !d.is_float() {
            return Err(GradError::new(
                Code::E0201,
                format!("argument {k} is a {d} tensor: gradients are taken of float tensors"),
                Some(fwd.span(p)),
            ));
        }
        params.push(p);
    }

    let mut g = fwd.clone();
    let n = fwd.len();
    // which values depend on a differentiated param
    let mut needs = vec![false; n];
    for &p in &params {
        needs[p.index()] = true;
    }
    for id in fwd.ids() {
        if let Some(op) = fwd.op(id) {
            if op.operands().iter().any(|x| needs[x.index()]) {
                needs[id.index()] = true;
            }
        }
    }
    let mut cot: Vec<Option<ValueId>> = vec![None; n];
    if needs[out.index()] {
        let before = g.len();
        let one = konst(&mut g, 1.0, cot_dtype(tout.dtype))?;
        let seed = broadcast_to(&mut g, one, &tout.shape)?;
        mark(&mut g, before, fwd.span(out));
        cot[out.index()] = Some(seed);
    }
    for id in fwd.ids().collect::<Vec<_>>().into_iter().rev() {
        let Some(dy) = cot[id.index()] else { continue };
        let Some(op) = fwd.op(id) else { continue };
        if matches!(op, Op::Param { .. } | Op::Capture { .. } | Op::Const { .. }) {
            continue;
        }
        let operands = op.operands();
        if !operands.iter().any(|x| needs[x.index()]) {
            continue;
        }
        let before = g.len();
        let grads = match op_vjp(&mut g, op, id, dy) {
            Ok(v) => v,
            Err(Some(e)) => return Err(e.into()),
            Err(None) => {
                let mut e = GradError::new(
                    Code::E0201,
                    format!("`{}` has no derivative", op.name()),
                    Some(fwd.span(id)),
                );
                e.label = Some("no derivative".into());
                e.help = Some(match op {
                    Op::Binary { .. } | Op::Unary { .. } => {
                        "comparisons, logical and integer ops have no gradient; keep them off the path from the differentiated arguments to the result (`op.where` takes a mask without differentiating it)".into()
                    }
                    _ => "derivatives of this op are not implemented yet".into(),
                });
                return Err(e);
            }
        };
        for (x, dx) in operands.iter().zip(grads) {
            let Some(dx) = dx else { continue };
            if !needs[x.index()] {
                continue;
            }
            let xd = ty(fwd, *x)?.dtype;
            if !xd.is_float() {
                continue;
            }
            let dx = cast(&mut g, dx, cot_dtype(xd))?;
            cot[x.index()] = Some(match cot[x.index()] {
                Some(prev) => bin(&mut g, BinaryOp::Add, prev, dx)?,
                None => dx,
            });
        }
        mark(&mut g, before, fwd.span(id));
    }
    let mut outputs = Vec::new();
    if with_value {
        outputs.push(out);
    }
    for &p in &params {
        let tp = ty(fwd, p)?;
        let before = g.len();
        let d = match cot[p.index()] {
            Some(c) => cast(&mut g, c, tp.dtype)?,
            None => {
                let z = konst(&mut g, 0.0, tp.dtype)?;
                broadcast_to(&mut g, z, &tp.shape)?
            }
        };
        mark(&mut g, before, fwd.span(p));
        outputs.push(d);
    }
    g.outputs = outputs;
    g.name = format!("grad_{}", fwd.name);
    // derivatives build both operands' cotangents; drop the ones no gradient needs
    super::passes::dce::run(&mut g, &super::passes::PassCx::default());
    Ok(g)
}

/// Gives the ops appended since `before` the span of the forward op they differentiate.
fn mark(g: &mut Graph, before: usize, span: Span) {
    for i in before..g.len() {
        g.set_span(ValueId(i as u32), span);
    }
}
