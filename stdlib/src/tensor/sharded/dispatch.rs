//! Op dispatch: an `op.` function called with sharded arguments runs its sharded form,
//! or gathers and runs the plain op.

use super::*;
use crate::tensor::op::table::{Call, Family};

// ----- op dispatch ------------------------------------------------------------------------------

pub(crate) fn has_sharded(args: &CallArgs) -> bool {
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

pub(crate) use tessera_lang::eval::args::given as arg;

/// Required slot `i` (E0101 at the call when missing).
pub(crate) fn need(a: &[Option<Arg>], i: usize, span: Span) -> Result<&Arg, Diagnostic> {
    tessera_lang::eval::args::required(a, i).map_err(|d| d.or_at(span))
}

/// Optional bool slot `i` (false when not given), E0101 naming parameter `what`.
pub(crate) fn bool_arg(a: &[Option<Arg>], i: usize, what: &str) -> Result<bool, Diagnostic> {
    arg(a, i).map_or(Ok(false), |x| x.bool(what))
}

/// Optional number slot `i`, E0101 naming parameter `what`.
pub(crate) fn float_arg(
    a: &[Option<Arg>],
    i: usize,
    what: &str,
) -> Result<Option<f64>, Diagnostic> {
    arg(a, i).map(|x| x.float(what)).transpose()
}

/// Optional int slot `i`, E0101 naming parameter `what`.
pub(crate) fn int_arg(a: &[Option<Arg>], i: usize, what: &str) -> Result<Option<i64>, Diagnostic> {
    arg(a, i).map(|x| x.int(what)).transpose()
}

type R = Result<Value, Diagnostic>;

pub fn m_unary(_: &mut Interp, c: &Call) -> R {
    let Family::Unary(u) = c.row.family else {
        return Err(c.not_in_family());
    };
    let x = need(&c.a, 0, c.span)?;
    map_unary(c.row.name, &x.value, c.span, move |t| rtm::unary(u, t))
}

pub fn m_binary(_: &mut Interp, c: &Call) -> R {
    let Family::Binary(b) = c.row.family else {
        return Err(c.not_in_family());
    };
    let (x, y) = (need(&c.a, 0, c.span)?, need(&c.a, 1, c.span)?);
    elementwise_binary(b, &x.value, &y.value, c.span)
}

pub fn m_reduce(it: &mut Interp, c: &Call) -> R {
    let axis = match arg(&c.a, 1) {
        Some(x) if x.value.items().is_some() => return gathered_call(it, c),
        _ => int_arg(&c.a, 1, "axis")?,
    };
    let x = need(&c.a, 0, c.span)?;
    let keep = bool_arg(&c.a, 2, "keepdim")?;
    reduce(c.row.name, &x.value, axis, keep, c.span)
}

pub fn m_matmul(_: &mut Interp, c: &Call) -> R {
    let acc = arg(&c.a, 2)
        .map(|d| dtype_arg(&d.value, d.span))
        .transpose()?;
    let (a, b) = (need(&c.a, 0, c.span)?, need(&c.a, 1, c.span)?);
    matmul(&a.value, &b.value, acc, c.span)
}

pub fn m_cast(_: &mut Interp, c: &Call) -> R {
    let d = need(&c.a, 1, c.span)?;
    let dt = dtype_arg(&d.value, d.span)?;
    let x = need(&c.a, 0, c.span)?;
    map_unary("cast", &x.value, c.span, move |t| t.cast(dt))
}

/// A row function (`softmax`, `logsumexp`): whole slices along `axis` on each device.
pub fn m_row_fn(_: &mut Interp, c: &Call) -> R {
    let Family::Row(f) = c.row.family else {
        return Err(c.not_in_family());
    };
    let axis = int_arg(&c.a, 1, "axis")?.unwrap_or(-1);
    let keep = f.row().reduces && bool_arg(&c.a, 2, "keepdim")?;
    let x = need(&c.a, 0, c.span)?;
    row_fn(f, &x.value, axis, keep, c.span)
}

/// `layernorm` and `rmsnorm`: the last axis gathered, the norm run locally.
pub fn m_norm(_: &mut Interp, c: &Call) -> R {
    let a = &c.a;
    let ln = c.row.name == "layernorm";
    let w = arg(a, 1).map(|x| full_of(&x.value, x.span)).transpose()?;
    let (b, eps) = match ln {
        true => (
            arg(a, 2).map(|x| full_of(&x.value, x.span)).transpose()?,
            float_arg(a, 3, "eps")?.unwrap_or(1e-5),
        ),
        false => (None, float_arg(a, 2, "eps")?.unwrap_or(1e-6)),
    };
    let x = need(a, 0, c.span)?;
    along_axis(c.row.name, &x.value, -1, c.span, move |t| match ln {
        true => rtm::layernorm(t, w.as_ref(), b.as_ref(), eps),
        false => rtm::rmsnorm(t, w.as_ref(), eps),
    })
}

pub fn m_attention(_: &mut Interp, c: &Call) -> R {
    let (a, span) = (&c.a, c.span);
    let (q, k, v) = (need(a, 0, span)?, need(a, 1, span)?, need(a, 2, span)?);
    let causal = bool_arg(a, 3, "causal")?;
    let scale = float_arg(a, 4, "scale")?;
    attention(&q.value, &k.value, &v.value, causal, scale, span)
}

/// Calls the eager op on the gathered (whole) operands.
pub fn gathered_call(it: &mut Interp, c: &Call) -> R {
    let whole = |x: &Value, s: Span| -> Result<Value, Diagnostic> {
        match as_sharded(x) {
            Some(o) => gather_full(o, s).map(tensor_value),
            None => Ok(x.clone()),
        }
    };
    let mut a = Vec::with_capacity(c.a.len());
    for slot in &c.a {
        a.push(match slot {
            Some(x) => Some(Arg {
                value: match &x.value {
                    Value::List(l) => Value::list(
                        l.borrow()
                            .iter()
                            .map(|v| whole(v, x.span))
                            .collect::<Result<_, _>>()?,
                    ),
                    Value::Tuple(t) => Value::tuple(
                        t.iter()
                            .map(|v| whole(v, x.span))
                            .collect::<Result<_, _>>()?,
                    ),
                    v => whole(v, x.span)?,
                },
                span: x.span,
            }),
            None => None,
        });
    }
    let g = Call {
        row: c.row,
        a,
        span: c.span,
    };
    (c.row.eager)(it, &g)
}
