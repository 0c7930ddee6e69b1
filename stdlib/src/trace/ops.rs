//! Recording each traced op: argument checks, the result's type from the shared rules, and
//! the Graph IR op.

use super::*;

// ----- recording each op --------------------------------------------------------------------

pub fn t_unary(ctx: &Rc<TraceCtx>, u: UnaryOp, x: &TArg, span: Span) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let aval = rtm::unary(u, xa).map_err(rt)?;
    let xi = ctx.id_of(x, xa.dtype(), span);
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
    Ok(ctx.record(Op::Binary { op, a: ai, b: bi }, aval, span))
}

pub(super) fn t_cast(
    ctx: &Rc<TraceCtx>,
    x: &TArg,
    d: DType,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
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
    Ok(ctx.record(Op::Cast { x: xi }, aval, span))
}

pub fn t_matmul(
    ctx: &Rc<TraceCtx>,
    a: &TArg,
    b: &TArg,
    accum: Option<DType>,
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

pub(super) fn t_index(
    ctx: &Rc<TraceCtx>,
    x: &TArg,
    index: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    let xa = x.need_tensor()?;
    let ritems = crate::tensor::index_items(index)?;
    let gitems = ritems
        .iter()
        .map(|r| match *r {
            IndexItem::Int(i) => gir::SliceItem::Index(i),
            IndexItem::NewAxis => gir::SliceItem::NewAxis,
            IndexItem::Slice { start, stop, step } => gir::SliceItem::Range { start, stop, step },
            IndexItem::Ellipsis => gir::SliceItem::Ellipsis,
        })
        .collect();
    let aval = xa.index(&ritems).map_err(rt)?;
    let xi = ctx.id_of(x, xa.dtype(), span);
    Ok(ctx.record(
        Op::Slice {
            x: xi,
            items: gitems,
        },
        aval,
        span,
    ))
}

/// `op.<name>(...)` with at least one symbolic argument.
pub fn trace_op(
    it: &mut Interp,
    ctx: &Rc<TraceCtx>,
    name: &str,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    let span = args.span;
    if !ctx.active.get() {
        return Err(escaped().at(span));
    }
    let arg = |a: &[Option<Arg>], i: usize| -> Result<TArg, Diagnostic> {
        let x = req(a, i)?;
        targ(ctx, &x.value, x.span)
    };
    let targ = |a: &[Option<Arg>], i: usize| -> Result<TArg, Diagnostic> {
        let x = req(a, i)?;
        tens(ctx, &x.value, x.span)
    };
    if let Some(u) = crate::tensor::unary_op(name) {
        let a = args.bind(name, &["x"], &[])?;
        return t_unary(ctx, u, &targ(&a, 0)?, span);
    }
    if let Some(r) = crate::tensor::reduce_op(name) {
        let a = args.bind(name, &["x"], &["axis", "keepdim"])?;
        let keep = bool_opt(&a, 2, "keepdim")?.unwrap_or(false);
        let x = targ(&a, 0)?;
        return match opt(&a, 1) {
            Some(ax) if matches!(ax.value, Value::Tuple(_) | Value::List(_)) => {
                let axes = ints_arg(&ax.value, ax.span)?;
                t_reduce_axes(ctx, r, &x, &axes, keep, span).map_err(|d| d.or_at(ax.span))
            }
            _ => t_reduce(ctx, r, &x, int_opt(&a, 1, "axis")?, keep, span),
        };
    }
    let bin = crate::op::binary_op(name);
    if let Some(op) = bin {
        let a = args.bind(name, &["a", "b"], &[])?;
        return t_binary(ctx, op, &arg(&a, 0)?, &arg(&a, 1)?, span);
    }
    match name {
        "where" => {
            let a = args.bind("where", &["cond", "a", "b"], &[])?;
            let (c, x, y) = (targ(&a, 0)?, arg(&a, 1)?, arg(&a, 2)?);
            let ca = c
                .tensor()
                .ok_or_else(|| Diagnostic::new(Code::E0101, "where needs a tensor condition"))?;
            let aval = rtm::where_(ca, x.aval(), y.aval()).map_err(rt)?;
            let p = rtm::promote_operands(x.aval().operand_type(), y.aval().operand_type());
            let ci = ctx.id_of(&c, ca.dtype(), span);
            let xi = ctx.id_of(&x, p, span);
            let yi = ctx.id_of(&y, p, span);
            Ok(ctx.record(
                Op::Where {
                    cond: ci,
                    a: xi,
                    b: yi,
                },
                aval,
                span,
            ))
        }
        "cast" | "to" | "tensor" => {
            let a = if name == "tensor" {
                args.bind(name, &["data"], &["dtype"])?
            } else {
                args.bind(name, &["x", "dtype"], &[])?
            };
            let x = targ(&a, 0)?;
            match opt(&a, 1) {
                Some(d) => t_cast(ctx, &x, dtype_arg(&d.value, d.span)?, span),
                None => sym_value(ctx, &x, span),
            }
        }
        "matmul" => {
            let a = args.bind("matmul", &["A", "B"], &["accum_dtype", "tile_shape"])?;
            let acc = opt(&a, 2)
                .map(|x| dtype_arg(&x.value, x.span))
                .transpose()?;
            if let Some(ts) = opt(&a, 3) {
                ints_arg(&ts.value, ts.span)?;
            }
            t_matmul(ctx, &targ(&a, 0)?, &targ(&a, 1)?, acc, span)
        }
        "softmax" => {
            let a = args.bind("softmax", &["x"], &["axis"])?;
            let x = targ(&a, 0)?;
            let xa = x
                .tensor()
                .cloned()
                .ok_or_else(|| Diagnostic::new(Code::E0101, "expected a tensor"))?;
            let ax = int_opt(&a, 1, "axis")?.unwrap_or(-1);
            let aval = rtm::softmax(&xa, ax as isize).map_err(rt)?;
            let axis = norm_axis(ax, xa.ndim())?;
            let xi = ctx.id_of(&x, xa.dtype(), span);
            Ok(ctx.record(Op::Softmax { x: xi, axis }, aval, span))
        }
        "layernorm" | "rmsnorm" => {
            let layer = name == "layernorm";
            let a = if layer {
                args.bind(name, &["x"], &["weight", "bias", "eps"])?
            } else {
                args.bind(name, &["x"], &["weight", "eps"])?
            };
            let x = targ(&a, 0)?;
            let w = opt(&a, 1)
                .map(|v| tens(ctx, &v.value, v.span))
                .transpose()?;
            let b = if layer {
                opt(&a, 2)
                    .map(|v| tens(ctx, &v.value, v.span))
                    .transpose()?
            } else {
                None
            };
            let eps_i = if layer { 3 } else { 2 };
            let eps = float_opt(&a, eps_i, "eps")?.unwrap_or(if layer { 1e-5 } else { 1e-6 });
            let xa = x
                .tensor()
                .cloned()
                .ok_or_else(|| Diagnostic::new(Code::E0101, "expected a tensor"))?;
            let aval = if layer {
                rtm::layernorm(
                    &xa,
                    w.as_ref().and_then(|t| t.tensor()),
                    b.as_ref().and_then(|t| t.tensor()),
                    eps,
                )
            } else {
                rtm::rmsnorm(&xa, w.as_ref().and_then(|t| t.tensor()), eps)
            }
            .map_err(rt)?;
            let xi = ctx.id_of(&x, xa.dtype(), span);
            let wi = w.map(|t| ctx.id_of(&t, xa.dtype(), span));
            let bi = b.map(|t| ctx.id_of(&t, xa.dtype(), span));
            let op = if layer {
                Op::LayerNorm {
                    x: xi,
                    weight: wi,
                    bias: bi,
                    eps,
                }
            } else {
                Op::RmsNorm {
                    x: xi,
                    weight: wi,
                    eps,
                }
            };
            Ok(ctx.record(op, aval, span))
        }
        "transpose" => {
            let a = args.bind("transpose", &["x"], &["perm"])?;
            let x = targ(&a, 0)?;
            let nd = x.tensor().map(|t| t.ndim()).unwrap_or(0);
            let perm = match opt(&a, 1) {
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
            t_transpose(ctx, &x, perm, span)
        }
        "reshape" => {
            let a = args.bind("reshape", &["x", "shape"], &[])?;
            let s = req(&a, 1)?;
            t_reshape(ctx, &targ(&a, 0)?, &ints_arg(&s.value, s.span)?, span)
        }
        "concat" => {
            let a = args.bind("concat", &["xs"], &["axis"])?;
            let xs = req(&a, 0)?;
            let items = it.iterate(&xs.value, xs.span)?;
            let ts = items
                .iter()
                .map(|v| tens(ctx, v, xs.span))
                .collect::<Result<Vec<_>, _>>()?;
            let avals: Vec<Tensor> = ts.iter().filter_map(|t| t.tensor().cloned()).collect();
            let ax = int_opt(&a, 1, "axis")?.unwrap_or(0);
            let aval = rtm::concat(&avals, ax as isize).map_err(rt)?;
            let axis = norm_axis(ax, aval.ndim())?;
            let ids = ts
                .iter()
                .map(|t| ctx.id_of(t, aval.dtype(), span))
                .collect();
            Ok(ctx.record(Op::Concat { xs: ids, axis }, aval, span))
        }
        "flash_attention" => {
            let a = args.bind("flash_attention", &["Q", "K", "V"], &["causal", "scale"])?;
            let causal = bool_opt(&a, 3, "causal")?.unwrap_or(false);
            let (q, k, v) = (targ(&a, 0)?, targ(&a, 1)?, targ(&a, 2)?);
            let scale = float_opt(&a, 4, "scale")?;
            let (Some(qa), Some(ka), Some(va)) = (q.tensor(), k.tensor(), v.tensor()) else {
                return Err(Diagnostic::new(
                    Code::E0101,
                    "flash_attention needs tensors",
                ));
            };
            let aval = rtm::flash_attention(qa, ka, va, causal, scale).map_err(rt)?;
            let d = qa.shape().last().copied().unwrap_or(1);
            let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
            let (qi, ki, vi) = (
                ctx.id_of(&q, qa.dtype(), span),
                ctx.id_of(&k, ka.dtype(), span),
                ctx.id_of(&v, va.dtype(), span),
            );
            Ok(ctx.record(
                Op::FlashAttention {
                    q: qi,
                    k: ki,
                    v: vi,
                    causal,
                    scale,
                },
                aval,
                span,
            ))
        }
        "allclose" | "max_abs_diff" => Err(value_error(&format!("op.{name}")).at(span)),
        _ => Err(Diagnostic::new(
            Code::E0201,
            format!("op.{name} cannot take a traced tensor inside a kernel"),
        )
        .at(span)),
    }
}
