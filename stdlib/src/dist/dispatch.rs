//! Op dispatch: an `op.` function called with sharded arguments runs its sharded form,
//! or gathers and runs the plain op.

use super::*;

// ----- op dispatch ------------------------------------------------------------------------------

pub(super) fn has_sharded(args: &CallArgs) -> bool {
    let is = |v: &Value| {
        as_sharded(v).is_some()
            || match v {
                Value::List(l) => l.borrow().iter().any(|x| as_sharded(x).is_some()),
                Value::Tuple(t) => t.iter().any(|x| as_sharded(x).is_some()),
                _ => false,
            }
    };
    args.positional.iter().any(|(v, _)| is(v)) || args.keywords.iter().any(|(_, v, _)| is(v))
}

/// `op.<name>` that runs per device when an argument is sharded, else `f`.
pub fn wrap(name: &'static str, f: Value) -> Value {
    let Value::Native(n) = &f else {
        return f;
    };
    let doc = n.doc.clone();
    let inner = n.clone();
    Value::native(name, &doc, move |it, args| {
        if has_sharded(&args) {
            sharded_op(it, name, args, &inner)
        } else {
            (inner.func)(it, args)
        }
    })
}

pub(super) use tessera_lang::eval::args::given as arg;

/// Required slot `i` (E0101 at the call when missing).
pub(super) fn need(a: &[Option<Arg>], i: usize, span: Span) -> Result<&Arg, Diagnostic> {
    tessera_lang::eval::args::required(a, i).map_err(|d| d.or_at(span))
}

/// Optional bool slot `i` (false when not given), E0101 naming parameter `what`.
pub(super) fn bool_arg(a: &[Option<Arg>], i: usize, what: &str) -> Result<bool, Diagnostic> {
    arg(a, i).map_or(Ok(false), |x| x.bool(what))
}

/// Optional number slot `i`, E0101 naming parameter `what`.
pub(super) fn float_arg(
    a: &[Option<Arg>],
    i: usize,
    what: &str,
) -> Result<Option<f64>, Diagnostic> {
    arg(a, i).map(|x| x.float(what)).transpose()
}

/// Optional int slot `i`, E0101 naming parameter `what`.
pub(super) fn int_arg(a: &[Option<Arg>], i: usize, what: &str) -> Result<Option<i64>, Diagnostic> {
    arg(a, i).map(|x| x.int(what)).transpose()
}

pub(super) fn sharded_op(
    it: &mut Interp,
    name: &'static str,
    args: CallArgs,
    eager: &Rc<tessera_lang::eval::Native>,
) -> Result<Value, Diagnostic> {
    let span = args.span;
    if let Some(u) = unary_op(name) {
        let a = args.bind(name, &["x"], &[])?;
        let x = need(&a, 0, span)?;
        return map_unary(name, &x.value, span, move |t| rtm::unary(u, t));
    }
    let bin = crate::op::binary_op(name);
    if let Some(b) = bin {
        let a = args.bind(name, &["a", "b"], &[])?;
        return elementwise_binary(
            b,
            &need(&a, 0, span)?.value,
            &need(&a, 1, span)?.value,
            span,
        );
    }
    match name {
        "sum" | "mean" | "max" | "min" => {
            let a = args.bind(name, &["x"], &["axis", "keepdim"])?;
            let axis = match arg(&a, 1) {
                Some(x) if matches!(x.value, Value::Tuple(_) | Value::List(_)) => {
                    return gathered_call(it, args, eager)
                }
                _ => int_arg(&a, 1, "axis")?,
            };
            reduce(
                name,
                &need(&a, 0, span)?.value,
                axis,
                bool_arg(&a, 2, "keepdim")?,
                span,
            )
        }
        "matmul" => {
            let a = args.bind("matmul", &["A", "B"], &["accum_dtype", "tile_shape"])?;
            let acc = arg(&a, 2)
                .map(|d| dtype_arg(&d.value, d.span))
                .transpose()?;
            matmul(
                &need(&a, 0, span)?.value,
                &need(&a, 1, span)?.value,
                acc,
                span,
            )
        }
        "cast" => {
            let a = args.bind("cast", &["x", "dtype"], &[])?;
            let d = need(&a, 1, span)?;
            let dt = dtype_arg(&d.value, d.span)?;
            map_unary("cast", &need(&a, 0, span)?.value, span, move |t| t.cast(dt))
        }
        "softmax" => {
            let a = args.bind("softmax", &["x"], &["axis"])?;
            let axis = int_arg(&a, 1, "axis")?.unwrap_or(-1);
            along_axis("softmax", &need(&a, 0, span)?.value, axis, span, move |t| {
                rtm::softmax(t, axis as isize)
            })
        }
        "layernorm" | "rmsnorm" => {
            let a = if name == "layernorm" {
                args.bind(name, &["x"], &["weight", "bias", "eps"])?
            } else {
                args.bind(name, &["x"], &["weight", "eps"])?
            };
            let w = arg(&a, 1).map(|x| full_of(&x.value, x.span)).transpose()?;
            let (b, eps) = if name == "layernorm" {
                (
                    arg(&a, 2).map(|x| full_of(&x.value, x.span)).transpose()?,
                    float_arg(&a, 3, "eps")?.unwrap_or(1e-5),
                )
            } else {
                (None, float_arg(&a, 2, "eps")?.unwrap_or(1e-6))
            };
            let ln = name == "layernorm";
            along_axis(name, &need(&a, 0, span)?.value, -1, span, move |t| {
                if ln {
                    rtm::layernorm(t, w.as_ref(), b.as_ref(), eps)
                } else {
                    rtm::rmsnorm(t, w.as_ref(), eps)
                }
            })
        }
        "flash_attention" => {
            let a = args.bind("flash_attention", &["Q", "K", "V"], &["causal", "scale"])?;
            attention(
                &need(&a, 0, span)?.value,
                &need(&a, 1, span)?.value,
                &need(&a, 2, span)?.value,
                bool_arg(&a, 3, "causal")?,
                float_arg(&a, 4, "scale")?,
                span,
            )
        }
        _ => gathered_call(it, args, eager),
    }
}

/// Calls the eager op on the gathered operands.
pub(super) fn gathered_call(
    it: &mut Interp,
    args: CallArgs,
    eager: &Rc<tessera_lang::eval::Native>,
) -> Result<Value, Diagnostic> {
    let full = |v: &Value, s: Span| -> Result<Value, Diagnostic> {
        Ok(match v {
            Value::List(l) => Value::list(
                l.borrow()
                    .iter()
                    .map(|x| match as_sharded(x) {
                        Some(o) => gather_full(o, s).map(tensor_value),
                        None => Ok(x.clone()),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Value::Tuple(t) => Value::tuple(
                t.iter()
                    .map(|x| match as_sharded(x) {
                        Some(o) => gather_full(o, s).map(tensor_value),
                        None => Ok(x.clone()),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            _ => match as_sharded(v) {
                Some(o) => tensor_value(gather_full(o, s)?),
                None => v.clone(),
            },
        })
    };
    let mut g = CallArgs::new(args.span);
    for (v, s) in &args.positional {
        g.positional.push((full(v, *s)?, *s));
    }
    for (k, v, s) in &args.keywords {
        g.keywords.push((k.clone(), full(v, *s)?, *s));
    }
    (eager.func)(it, g)
}
