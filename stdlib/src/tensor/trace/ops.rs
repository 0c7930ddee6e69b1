//! Recording each traced op: argument checks, the result's type from the shared rules, and
//! the Graph IR op.

use super::*;
use crate::tensor::op::table::{Call, Family, InTrace};

// ----- recording each op --------------------------------------------------------------------

pub fn t_unary(ctx: &Rc<TraceCtx>, u: UnaryOp, x: &TArg, span: Span) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let aval = rtm::unary(u, xa).map_err(rt)?;
    let xi = ctx.id_of(x, xa.dtype(), span);
    if let Some(op) = super::spectral::complex_unary(u, xa.dtype()) {
        return Ok(ctx.record(Op::Complex { op, a: xi, b: None }, aval, span));
    }
    Ok(ctx.record(Op::Unary { op: u, x: xi }, aval, span))
}

pub fn t_binary(
    ctx: &Rc<TraceCtx>,
    op: BinaryOp,
    a: &TArg,
    b: &TArg,
    span: Span,
) -> Result<Value, Diagnostic> {
    let aval = rtm::binary(op, a.aval(), b.aval()).map_err(rt)?;
    let p = rtm::promote_operands(a.aval().operand_type(), b.aval().operand_type());
    let ai = ctx.id_of(a, p, span);
    let bi = ctx.id_of(b, p, span);
    if let Some(c) = super::spectral::complex_binary(op, aval.dtype()) {
        let op = Op::Complex {
            op: c,
            a: ai,
            b: Some(bi),
        };
        return Ok(ctx.record(op, aval, span));
    }
    Ok(ctx.record(Op::Binary { op, a: ai, b: bi }, aval, span))
}

pub(super) fn t_cast(
    ctx: &Rc<TraceCtx>,
    x: &TArg,
    d: DType,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    refuse_complex(d, span)?;
    if let TArg::Sym(id, _) = x {
        if xa.dtype() == d {
            return Ok(Value::host(SymTensor {
                ctx: ctx.clone(),
                id: *id,
                aval: xa.clone(),
            }));
        }
    }
    let aval = xa.cast(d).map_err(rt)?;
    let xi = ctx.id_of(x, xa.dtype(), span);
    // complex to a real number type: the real part (a complex op), then a real cast
    if xa.dtype().is_complex() && d != DType::Bool {
        let part = rtm::real(xa).map_err(rt)?;
        let re = ctx.record(
            Op::Complex {
                op: gir::ComplexOp::Real,
                a: xi,
                b: None,
            },
            part,
            span,
        );
        return t_cast(ctx, &targ(ctx, &re, span)?, d, span);
    }
    Ok(ctx.record(Op::Cast { x: xi }, aval, span))
}

pub fn t_matmul(
    ctx: &Rc<TraceCtx>,
    a: &TArg,
    b: &TArg,
    accum: Option<DType>,
    tile: Option<[u32; 3]>,
    span: Span,
) -> Result<Value, Diagnostic> {
    let (Some(aa), Some(ba)) = (a.tensor(), b.tensor()) else {
        return Err(Diagnostic::new(Code::E0101, "matmul needs tensors"));
    };
    let aval = rtm::matmul(aa, ba, accum).map_err(rt)?;
    let ai = ctx.id_of(a, aa.dtype(), span);
    let bi = ctx.id_of(b, ba.dtype(), span);
    Ok(ctx.record(
        Op::Matmul {
            a: ai,
            b: bi,
            accum,
            epilogue: vec![],
            tile,
        },
        aval,
        span,
    ))
}

pub(super) fn t_transpose(
    ctx: &Rc<TraceCtx>,
    x: &TArg,
    perm: Option<Vec<usize>>,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let perm = perm.unwrap_or_else(|| (0..xa.ndim()).rev().collect());
    let aval = xa.transpose(Some(&perm)).map_err(rt)?;
    if perm.iter().enumerate().all(|(i, p)| i == *p) {
        // The identity: eager `transpose` returns its input, and so does the trace.
        return sym_value(ctx, x, span);
    }
    let xi = ctx.id_of(x, xa.dtype(), span);
    Ok(ctx.record(Op::Transpose { x: xi, perm }, aval, span))
}

pub(super) fn t_reshape(
    ctx: &Rc<TraceCtx>,
    x: &TArg,
    dims: &[i64],
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let aval = xa.reshape(dims).map_err(rt)?;
    let xi = ctx.id_of(x, xa.dtype(), span);
    Ok(ctx.record(Op::Reshape { x: xi }, aval, span))
}

pub(super) fn t_reduce(
    ctx: &Rc<TraceCtx>,
    r: ReduceOp,
    x: &TArg,
    axis: Option<i64>,
    keep: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let aval = rtm::reduce(xa, r, axis.map(|a| a as isize), keep).map_err(rt)?;
    let axis = axis.map(|a| norm_axis(a, xa.ndim())).transpose()?;
    let xi = ctx.id_of(x, xa.dtype(), span);
    Ok(ctx.record(
        Op::Reduce {
            op: r,
            x: xi,
            axis,
            keepdim: keep,
        },
        aval,
        span,
    ))
}

/// A reduction over several axes, recorded as the eager `op.sum(x, axis=(..))` computes it:
/// move the axes last, merge them, reduce once, restore kept dims.
pub(super) fn t_reduce_axes(
    ctx: &Rc<TraceCtx>,
    r: ReduceOp,
    x: &TArg,
    axes: &[i64],
    keep: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let shape = xa.shape().to_vec();
    let mut red = Vec::new();
    for &a in axes {
        let x = norm_axis(a, shape.len()).map_err(|_| {
            Diagnostic::new(
                Code::E0200,
                format!(
                    "axis {a} is out of range for a tensor of {} dimensions",
                    shape.len()
                ),
            )
        })?;
        if red.contains(&x) {
            return Err(Diagnostic::new(
                Code::E0200,
                format!("axis {a} is repeated"),
            ));
        }
        red.push(x);
    }
    if red.is_empty() {
        return sym_value(ctx, x, span);
    }
    red.sort_unstable();
    let kept: Vec<usize> = (0..shape.len()).filter(|i| !red.contains(i)).collect();
    let mut perm = kept.clone();
    perm.extend(red.iter().copied());
    let moved = t_transpose(ctx, x, Some(perm), span)?;
    let mut merged: Vec<i64> = kept
        .iter()
        .map(|&i| shape.get(i).copied().unwrap_or(1) as i64)
        .collect();
    merged.push(
        red.iter()
            .map(|&i| shape.get(i).copied().unwrap_or(1) as i64)
            .product(),
    );
    let flat = t_reshape(ctx, &targ(ctx, &moved, span)?, &merged, span)?;
    let out = t_reduce(ctx, r, &targ(ctx, &flat, span)?, Some(-1), false, span)?;
    if keep {
        let dims: Vec<i64> = (0..shape.len())
            .map(|i| {
                if red.contains(&i) {
                    1
                } else {
                    shape.get(i).copied().unwrap_or(1) as i64
                }
            })
            .collect();
        t_reshape(ctx, &targ(ctx, &out, span)?, &dims, span)
    } else {
        Ok(out)
    }
}

/// The operand as a symbolic value (captures a concrete tensor).
pub(super) fn sym_value(ctx: &Rc<TraceCtx>, x: &TArg, span: Span) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?.clone();
    let id = ctx.id_of(x, xa.dtype(), span);
    Ok(Value::host(SymTensor {
        ctx: ctx.clone(),
        id,
        aval: xa,
    }))
}

/// The Graph IR slice items of basic index items.
fn slice_items(ritems: &[IndexItem]) -> Vec<gir::SliceItem> {
    ritems
        .iter()
        .map(|r| match *r {
            IndexItem::Int(i) => gir::SliceItem::Index(i),
            IndexItem::NewAxis => gir::SliceItem::NewAxis,
            IndexItem::Slice { start, stop, step } => gir::SliceItem::Range { start, stop, step },
            IndexItem::Ellipsis => gir::SliceItem::Ellipsis,
        })
        .collect()
}

/// `x[index]` traced: basic items become a `slice`; one integer list or tensor among them
/// (traced or concrete) a `take` along the axis it stands on, after the basic items, as
/// NumPy places it. A boolean mask is E0101 (its result's shape depends on its values).
pub(super) fn t_index(
    ctx: &Rc<TraceCtx>,
    x: &TArg,
    index: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?.clone();
    let parts: Vec<Value> = match index {
        Value::Tuple(items) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let advanced: Vec<usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            matches!(p, Value::List(_)) || as_tensor(p).is_some() || super::as_sym(p).is_some()
        })
        .map(|(i, _)| i)
        .collect();
    let Some(&p) = advanced.first() else {
        let ritems = crate::tensor::index_items(index)?;
        let aval = xa.index(&ritems).map_err(rt)?;
        let xi = ctx.id_of(x, xa.dtype(), span);
        return Ok(ctx.record(
            Op::Slice {
                x: xi,
                items: slice_items(&ritems),
            },
            aval,
            span,
        ));
    };
    if advanced.len() > 1 {
        return Err(Diagnostic::new(
            Code::E0101,
            "only one list, integer tensor or mask per index is supported",
        )
        .at(span)
        .with_help("index in two steps: `x[rows][:, cols]`"));
    }
    let idx = super::tens(ctx, &parts[p], span)?;
    let ia = idx.need_tensor()?.clone();
    if ia.dtype() == DType::Bool {
        return Err(Diagnostic::new(
            Code::E0101,
            "a boolean mask cannot index a tensor inside a kernel: the result's shape would depend on the mask's values",
        )
        .at(span)
        .with_label("a mask")
        .with_help("keep the shape and zero what the mask leaves out: `op.where(mask, x, 0.0)`"));
    }
    if !ia.dtype().is_int() {
        return Err(Diagnostic::new(
            Code::E0101,
            format!(
                "tensor indices must be integers or bools, not {}",
                ia.dtype()
            ),
        )
        .at(span));
    }
    // the basic items, with a full slice where the advanced one stood
    let full = Value::Slice(Rc::new([Value::None, Value::None, Value::None]));
    let mut basic: Vec<Value> = parts[..p].to_vec();
    basic.push(full);
    basic.extend(parts[p + 1..].iter().cloned());
    let ritems = crate::tensor::index_items(&Value::tuple(basic.clone()))?;
    let yaval = xa.index(&ritems).map_err(rt)?;
    let xi = ctx.id_of(x, xa.dtype(), span);
    let trivial = ritems.len() == 1
        && matches!(
            ritems[0],
            IndexItem::Slice {
                start: None,
                stop: None,
                step: None
            }
        );
    let yi = if trivial {
        xi
    } else {
        let y = ctx.record(
            Op::Slice {
                x: xi,
                items: slice_items(&ritems),
            },
            yaval.clone(),
            span,
        );
        super::as_sym(&y).map(|s| s.id).ok_or_else(|| {
            Diagnostic::new(Code::E0500, "internal: a slice did not trace").at(span)
        })?
    };
    // the axis of the slice's result the advanced item landed on
    let axis = crate::tensor::advanced_axis(&parts[..p], &basic, xa.ndim());
    let aval = tessera_runtime::take_at(&yaval, &ia, axis).map_err(rt)?;
    let ii = ctx.id_of(&idx, ia.dtype(), span);
    Ok(ctx.record(
        Op::Take {
            x: yi,
            index: ii,
            axis,
        },
        aval,
        span,
    ))
}

/// `op.<name>(...)` (or the method `x.<name>(...)`) with at least one symbolic argument.
pub fn trace_op(
    it: &mut Interp,
    ctx: &Rc<TraceCtx>,
    name: &str,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    match crate::tensor::op::table::row(name) {
        Some(row) => crate::tensor::op::table::call(it, row, &args),
        None if !ctx.active.get() => Err(escaped().at(args.span)),
        None => Err(no_trace(ctx, name).at(args.span)),
    }
}

/// An op that traces do not record: inside a kernel it cannot run, and under `graph.grad`
/// (`ctx.grad`) it has no derivative (the integer-valued ones never will).
fn no_trace(ctx: &TraceCtx, name: &str) -> Diagnostic {
    if !ctx.grad.get() {
        let d = Diagnostic::new(
            Code::E0201,
            format!("op.{name} cannot take a traced tensor inside a kernel"),
        )
        .with_label("not supported on a traced tensor");
        return match name {
            "stack" => {
                d.with_help("`op.concat` of the tensors reshaped with a new axis runs in kernels")
            }
            _ => d.with_help(
                "call it outside the kernel, on the tensors it is called with or returns",
            ),
        };
    }
    let why = match name {
        "argmax" | "argmin" => {
            format!("op.{name} has no derivative (its result is integer indices)")
        }
        "sort" | "topk" | "cumsum" | "stack" => {
            format!("op.{name} is not differentiable yet (graph.grad)")
        }
        _ => format!("op.{name} is not differentiated by graph.grad"),
    };
    let d = Diagnostic::new(Code::E0201, why).with_label(match name {
        "argmax" | "argmin" => "no derivative",
        _ => "not differentiable",
    });
    match name {
        "argmax" | "argmin" => d.with_help("compute the indices outside the differentiated function and pass them in (`op.where` or indexing with them is differentiable)"),
        "stack" => d.with_help("`op.concat` of the tensors reshaped with a new axis is differentiable"),
        _ => d.with_help("call it outside the differentiated function, on concrete tensors"),
    }
}

/// The traced form of the op call `c` (the table's [`InTrace`]).
pub fn trace_call(it: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> Result<Value, Diagnostic> {
    if !ctx.active.get() {
        return Err(escaped().at(c.span));
    }
    match c.row.trace {
        InTrace::Record(f) => f(it, ctx, c),
        InTrace::ReadsValues => Err(value_error(&format!("op.{}", c.row.name)).at(c.span)),
        InTrace::Refused => Err(no_trace(ctx, c.row.name).at(c.span)),
    }
}

/// Argument `i` as an operand (a scalar stays a scalar).
pub(super) fn operand_at(
    ctx: &Rc<TraceCtx>,
    a: &[Option<Arg>],
    i: usize,
) -> Result<TArg, Diagnostic> {
    let x = req(a, i)?;
    targ(ctx, &x.value, x.span)
}

/// Argument `i` as a tensor operand (a scalar becomes a 0-d tensor).
pub(super) fn tensor_at(
    ctx: &Rc<TraceCtx>,
    a: &[Option<Arg>],
    i: usize,
) -> Result<TArg, Diagnostic> {
    let x = req(a, i)?;
    tens(ctx, &x.value, x.span)
}

type R = Result<Value, Diagnostic>;

pub fn t_unary_call(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let Family::Unary(u) = c.row.family else {
        return Err(c.not_in_family());
    };
    t_unary(ctx, u, &tensor_at(ctx, &c.a, 0)?, c.span)
}

/// `clip(x, min, max)` in a kernel: `maximum` then `minimum`, as the eager form.
pub fn t_clip(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let mut v = tensor_at(ctx, &c.a, 0)?;
    let mut out = None;
    for (i, op) in [(1, BinaryOp::Maximum), (2, BinaryOp::Minimum)] {
        let Some(bound) = opt(&c.a, i).filter(|a| !matches!(a.value, Value::None)) else {
            continue;
        };
        let b = targ(ctx, &bound.value, bound.span)?;
        let r = t_binary(ctx, op, &v, &b, c.span)?;
        v = targ(ctx, &r, c.span)?;
        out = Some(r);
    }
    match out {
        Some(r) => Ok(r),
        None => sym_value(ctx, &v, c.span),
    }
}

pub fn t_binary_call(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let Family::Binary(op) = c.row.family else {
        return Err(c.not_in_family());
    };
    let (a, b) = (operand_at(ctx, &c.a, 0)?, operand_at(ctx, &c.a, 1)?);
    t_binary(ctx, op, &a, &b, c.span)
}

pub fn t_reduce_call(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let Family::Reduce(r) = c.row.family else {
        return Err(c.not_in_family());
    };
    let (a, span) = (&c.a, c.span);
    let keep = bool_opt(a, 2, "keepdim")?.unwrap_or(false);
    let x = tensor_at(ctx, a, 0)?;
    match opt(a, 1) {
        Some(ax) if ax.value.items().is_some() => {
            let axes = ints_arg(&ax.value, ax.span)?;
            t_reduce_axes(ctx, r, &x, &axes, keep, span).map_err(|d| d.or_at(ax.span))
        }
        _ => t_reduce(ctx, r, &x, int_opt(a, 1, "axis")?, keep, span),
    }
}

pub fn t_where(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let span = c.span;
    let cond = tensor_at(ctx, &c.a, 0)?;
    let (x, y) = (operand_at(ctx, &c.a, 1)?, operand_at(ctx, &c.a, 2)?);
    let ca = cond
        .tensor()
        .ok_or_else(|| Diagnostic::new(Code::E0101, "where needs a tensor condition"))?;
    let aval = rtm::where_(ca, x.aval(), y.aval()).map_err(rt)?;
    let p = rtm::promote_operands(x.aval().operand_type(), y.aval().operand_type());
    let ci = ctx.id_of(&cond, ca.dtype(), span);
    let xi = ctx.id_of(&x, p, span);
    let yi = ctx.id_of(&y, p, span);
    let op = Op::Where {
        cond: ci,
        a: xi,
        b: yi,
    };
    Ok(ctx.record(op, aval, span))
}

/// `op.tensor(x, dtype)` and `op.cast(x, dtype)` of a traced tensor: a cast (or `x` itself).
pub fn t_tensor(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let x = tensor_at(ctx, &c.a, 0)?;
    match opt(&c.a, 1) {
        Some(d) => t_cast(ctx, &x, dtype_arg(&d.value, d.span)?, c.span),
        None => sym_value(ctx, &x, c.span),
    }
}

pub fn t_matmul_call(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let acc = opt(&c.a, 2)
        .map(|x| dtype_arg(&x.value, x.span))
        .transpose()?;
    let tile = match opt(&c.a, 3) {
        Some(ts) if !matches!(ts.value, Value::None) => Some(tile_shape(&ts.value, ts.span)?),
        _ => None,
    };
    let (a, b) = (tensor_at(ctx, &c.a, 0)?, tensor_at(ctx, &c.a, 1)?);
    t_matmul(ctx, &a, &b, acc, tile, c.span)
}

/// `tile_shape=(BM, BN, BK)` of a traced `op.matmul` (or `(BM, BN)`: the kernel's default
/// BK, as `schedule.tile` takes it): each size 1..=65536 (E0300 otherwise).
fn tile_shape(v: &Value, span: Span) -> Result<[u32; 3], Diagnostic> {
    let t = ints_arg(v, span)?;
    if !(2..=3).contains(&t.len()) {
        return Err(Diagnostic::new(
            Code::E0300,
            format!(
                "tile_shape must be (BM, BN, BK) or (BM, BN), got {} sizes",
                t.len()
            ),
        )
        .at(span));
    }
    let mut out = [0u32; 3];
    for (o, &x) in out.iter_mut().zip(&t) {
        *o = u32::try_from(x)
            .ok()
            .filter(|x| (1..=65536).contains(x))
            .ok_or_else(|| {
                Diagnostic::new(
                    Code::E0300,
                    format!("tile_shape sizes must be between 1 and 65536, got {x}"),
                )
                .at(span)
            })?;
    }
    Ok(out)
}

/// A row function (`softmax`, `logsumexp`): the eager form on the shape-only tensor gives
/// the type (the compiler's rule), then one `Op::Row`.
pub fn t_row_fn(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let Family::Row(f) = c.row.family else {
        return Err(c.not_in_family());
    };
    let x = tensor_at(ctx, &c.a, 0)?;
    let xa = x.need_tensor()?.clone();
    let ax = int_opt(&c.a, 1, "axis")?.unwrap_or(-1);
    let keepdim = f.row().reduces && bool_opt(&c.a, 2, "keepdim")?.unwrap_or(false);
    let aval = rtm::row_fn(&xa, f, ax as isize, keepdim).map_err(rt)?;
    let axis = norm_axis(ax, xa.ndim())?;
    let xi = ctx.id_of(&x, xa.dtype(), c.span);
    let op = Op::Row {
        f,
        x: xi,
        axis,
        keepdim,
    };
    Ok(ctx.record(op, aval, c.span))
}

/// `layernorm(x, weight, bias, eps)` and `rmsnorm(x, weight, eps)`.
pub fn t_norm(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let (a, span) = (&c.a, c.span);
    let layer = c.row.name == "layernorm";
    let x = tensor_at(ctx, a, 0)?;
    let w = opt(a, 1).map(|v| tens(ctx, &v.value, v.span)).transpose()?;
    let b = match layer {
        true => opt(a, 2).map(|v| tens(ctx, &v.value, v.span)).transpose()?,
        false => None,
    };
    let eps_i = if layer { 3 } else { 2 };
    let eps = float_opt(a, eps_i, "eps")?.unwrap_or(if layer { 1e-5 } else { 1e-6 });
    let xa = x.need_tensor()?.clone();
    let (wa, ba) = (
        w.as_ref().and_then(|t| t.tensor()),
        b.as_ref().and_then(|t| t.tensor()),
    );
    let aval = match layer {
        true => rtm::layernorm(&xa, wa, ba, eps),
        false => rtm::rmsnorm(&xa, wa, eps),
    }
    .map_err(rt)?;
    let xi = ctx.id_of(&x, xa.dtype(), span);
    let wi = w.map(|t| ctx.id_of(&t, xa.dtype(), span));
    let bi = b.map(|t| ctx.id_of(&t, xa.dtype(), span));
    let op = match layer {
        true => Op::LayerNorm {
            x: xi,
            weight: wi,
            bias: bi,
            eps,
        },
        false => Op::RmsNorm {
            x: xi,
            weight: wi,
            eps,
        },
    };
    Ok(ctx.record(op, aval, span))
}

pub fn t_transpose_call(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let x = tensor_at(ctx, &c.a, 0)?;
    let nd = x.tensor().map(|t| t.ndim()).unwrap_or(0);
    let perm = match opt(&c.a, 1) {
        Some(p) => {
            let mut out = Vec::new();
            for v in ints_arg(&p.value, p.span)? {
                out.push(
                    norm_axis(v, nd.max(1))
                        .map_err(|d| Diagnostic::new(Code::E0200, d.message).at(p.span))?,
                );
            }
            Some(out)
        }
        None => None,
    };
    t_transpose(ctx, &x, perm, c.span)
}

pub fn t_reshape_call(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let s = req(&c.a, 1)?;
    let x = tensor_at(ctx, &c.a, 0)?;
    t_reshape(ctx, &x, &ints_arg(&s.value, s.span)?, c.span)
}

pub fn t_concat(it: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let span = c.span;
    let xs = req(&c.a, 0)?;
    let items = it.iterate(&xs.value, xs.span)?;
    let ts = items
        .iter()
        .map(|v| tens(ctx, v, xs.span))
        .collect::<Result<Vec<_>, _>>()?;
    let avals: Vec<Tensor> = ts.iter().filter_map(|t| t.tensor().cloned()).collect();
    let ax = int_opt(&c.a, 1, "axis")?.unwrap_or(0);
    let aval = rtm::concat(&avals, ax as isize).map_err(rt)?;
    let axis = norm_axis(ax, aval.ndim())?;
    let ids = ts
        .iter()
        .map(|t| ctx.id_of(t, aval.dtype(), span))
        .collect();
    Ok(ctx.record(Op::Concat { xs: ids, axis }, aval, span))
}

pub fn t_attention(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let span = c.span;
    let causal = bool_opt(&c.a, 3, "causal")?.unwrap_or(false);
    let (q, k, v) = (
        tensor_at(ctx, &c.a, 0)?,
        tensor_at(ctx, &c.a, 1)?,
        tensor_at(ctx, &c.a, 2)?,
    );
    let scale = float_opt(&c.a, 4, "scale")?;
    let (qa, ka, va) = (q.need_tensor()?, k.need_tensor()?, v.need_tensor()?);
    let aval = rtm::flash_attention(qa, ka, va, causal, scale).map_err(rt)?;
    let d = qa.shape().last().copied().unwrap_or(1);
    let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
    let op = Op::FlashAttention {
        q: ctx.id_of(&q, qa.dtype(), span),
        k: ctx.id_of(&k, ka.dtype(), span),
        v: ctx.id_of(&v, va.dtype(), span),
        causal,
        scale,
    };
    Ok(ctx.record(op, aval, span))
}

/// `conv1d`/`conv2d` in a kernel: the eager shape rule on the abstract operands, then one
/// `conv` op with its padding resolved.
fn t_conv(ctx: &Rc<TraceCtx>, c: &Call, dims: usize) -> R {
    let span = c.span;
    let spec = crate::tensor::op::eager::conv_spec(c, dims)?;
    let algorithm = crate::tensor::op::eager::conv_algorithm(c)?;
    let x = tensor_at(ctx, &c.a, 0)?;
    let w = tensor_at(ctx, &c.a, 1)?;
    let b = match opt(&c.a, 2) {
        Some(_) => Some(tensor_at(ctx, &c.a, 2)?),
        None => None,
    };
    let (xa, wa) = (x.need_tensor()?, w.need_tensor()?);
    let ba = b.as_ref().map(|b| b.need_tensor()).transpose()?;
    let aval = tessera_runtime::conv(xa, wa, ba, &spec).map_err(rt)?;
    let attrs = tessera_runtime::conv_plan(xa.shape(), wa.shape(), ba.map(|b| b.shape()), &spec)
        .map_err(rt)?
        .attrs(dims, algorithm);
    let bias = match (&b, ba) {
        (Some(b), Some(ba)) => Some(ctx.id_of(b, ba.dtype(), span)),
        _ => None,
    };
    let op = Op::Conv {
        x: ctx.id_of(&x, xa.dtype(), span),
        w: ctx.id_of(&w, wa.dtype(), span),
        bias,
        attrs,
    };
    Ok(ctx.record(op, aval, span))
}

pub fn t_conv1d(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    t_conv(ctx, c, 1)
}

pub fn t_conv2d(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    t_conv(ctx, c, 2)
}
