//! `op.log_softmax`, `op.one_hot`, `op.cross_entropy` and `op.embedding` (SPEC §4), composed of
//! the table's ops (logsumexp, sub, mul, cast, transpose, reshape, indexing). Each step
//! is an ordinary op call, so the composite runs eagerly, inside a kernel's trace, under
//! `graph.grad` (its derivative is the chain of the steps' derivatives) and on a mesh alike.
//!
//! The row normaliser is `x - logsumexp(x)`, in one place, [`log_sum_exp_shifted`].

use super::table;
use crate::tensor::{as_tensor, kind_name, tensor_value};
use tessera_lang::ast::CmpOp;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::args::{given, required};
use tessera_lang::eval::{Arg, CallArgs, Interp, Module, Value};
use tessera_lang::Span;
use tessera_runtime::{DType, Tensor};

type R = Result<Value, Diagnostic>;

/// Calls `op.<name>` with positional and keyword arguments.
fn op(it: &mut Interp, name: &str, pos: Vec<Value>, kw: Vec<(&str, Value)>, span: Span) -> R {
    let row = table::row(name).ok_or_else(|| {
        Diagnostic::new(Code::E0500, format!("internal error: no op.{name}")).at(span)
    })?;
    let mut args = CallArgs::new(span);
    args.positional = pos.into_iter().map(|v| (v, span)).collect();
    args.keywords = kw.into_iter().map(|(k, v)| (k.into(), v, span)).collect();
    table::call(it, row, &args).map_err(|d| d.or_at(span))
}

/// The shape and dtype of an ordinary, traced or sharded tensor.
fn meta(v: &Value) -> Option<(Vec<usize>, DType)> {
    if let Some(t) = as_tensor(v) {
        return Some((t.shape().to_vec(), t.dtype()));
    }
    if let Some(s) = crate::tensor::trace::as_sym(v) {
        return Some((s.aval.shape().to_vec(), s.aval.dtype()));
    }
    crate::tensor::sharded::as_sharded(v).map(|o| (o.s.shape.clone(), o.s.dtype))
}

/// A tensor argument's shape and dtype, or E0101 naming `what`.
fn tensor_meta(a: &Arg, fname: &str, what: &str) -> Result<(Vec<usize>, DType), Diagnostic> {
    meta(&a.value).ok_or_else(|| {
        Diagnostic::new(
            Code::E0101,
            format!(
                "{fname}: {what} must be a tensor, not {}",
                kind_name(&a.value)
            ),
        )
        .at(a.span)
    })
}

/// `axis` normalised for `ndim` dimensions (E0200 out of range).
fn norm_axis(axis: i64, ndim: usize, fname: &str, span: Span) -> Result<usize, Diagnostic> {
    let n = ndim as i64;
    if ndim == 0 || axis < -n || axis >= n {
        return Err(Diagnostic::new(
            Code::E0200,
            format!("{fname}: axis {axis} is out of range for a tensor of {ndim} dimensions"),
        )
        .at(span));
    }
    Ok(axis.rem_euclid(n) as usize)
}

/// The `axis` argument and where to point an error about it (the call when not given).
fn axis_arg(a: &[Option<Arg>], i: usize, call: Span) -> Result<(i64, Span), Diagnostic> {
    match given(a, i) {
        Some(x) => Ok((x.int("axis")?, x.span)),
        None => Ok((-1, call)),
    }
}

/// Whether the composite computes in fp32 for a `dtype` input (narrow floats, as softmax does).
fn widened(d: DType) -> bool {
    matches!(
        d,
        DType::F16 | DType::BF16 | DType::TF32 | DType::F8E4M3 | DType::F8E5M2
    )
}

fn need_float(d: DType, fname: &str, what: &str, span: Span) -> Result<(), Diagnostic> {
    if d.is_float() {
        return Ok(());
    }
    Err(Diagnostic::new(
        Code::E0201,
        format!(
            "{fname}: {what} must be a floating-point tensor, got {}",
            d.name()
        ),
    )
    .at(span)
    .with_help(format!("cast it first: op.cast({what}, \"fp32\")")))
}

fn need_int(d: DType, fname: &str, what: &str, span: Span) -> Result<(), Diagnostic> {
    if matches!(d, DType::I64 | DType::I32 | DType::I8) {
        return Ok(());
    }
    Err(Diagnostic::new(
        Code::E0201,
        format!("{fname}: {what} must be an int tensor, got {}", d.name()),
    )
    .at(span))
}

/// `x - logsumexp(x, axis)` with kept dimensions: the log-softmax (`op.logsumexp` is
/// max-shifted, and one fused row kernel inside a kernel).
fn log_sum_exp_shifted(it: &mut Interp, x: Value, axis: usize, span: Span) -> R {
    let ax = Value::Int(axis as i64);
    let lse = op(
        it,
        "logsumexp",
        vec![x.clone()],
        vec![("axis", ax), ("keepdim", Value::Bool(true))],
        span,
    )?;
    op(it, "sub", vec![x, lse], vec![], span)
}

/// Log-softmax of `x` along `axis` in its dtype (fp32 arithmetic for narrow floats).
fn log_softmax_of(it: &mut Interp, x: &Arg, axis: (i64, Span), fname: &str, span: Span) -> R {
    let (shape, d) = tensor_meta(x, fname, "x")?;
    need_float(d, fname, "x", x.span)?;
    let ax = norm_axis(axis.0, shape.len(), fname, axis.1)?;
    if widened(d) {
        let w = op(
            it,
            "cast",
            vec![x.value.clone(), Value::str("fp32")],
            vec![],
            span,
        )?;
        let r = log_sum_exp_shifted(it, w, ax, span)?;
        return op(it, "cast", vec![r, Value::str(d.name())], vec![], span);
    }
    log_sum_exp_shifted(it, x.value.clone(), ax, span)
}

/// An int tensor's values are in `[0, n)` (eager operands; traced ones cannot be read).
fn check_classes(v: &Value, n: i64, fname: &str, what: &str, span: Span) -> Result<(), Diagnostic> {
    let Some(t) = as_tensor(v) else {
        return Ok(());
    };
    if t.is_abstract() {
        return Ok(());
    }
    let vals = t.to_i64_vec().map_err(crate::tensor::rt)?;
    if let Some(bad) = vals.iter().find(|&&i| i < 0 || i >= n) {
        return Err(Diagnostic::new(
            Code::E0500,
            format!("{fname}: index {bad} is out of range for {n} {what}"),
        )
        .at(span)
        .with_help(format!("the indices are 0 to {}", n - 1)));
    }
    Ok(())
}

/// `one_hot(indices, n, dtype)`: `indices[..., None] == arange(n)` cast to `dtype`.
fn one_hot_of(it: &mut Interp, idx: &Arg, n: i64, dtype: Value, fname: &str, span: Span) -> R {
    let (shape, d) = tensor_meta(idx, fname, "indices")?;
    need_int(d, fname, "indices", idx.span)?;
    check_classes(&idx.value, n, fname, "classes", idx.span)?;
    let mut col = shape
        .iter()
        .map(|&s| Value::Int(s as i64))
        .collect::<Vec<_>>();
    col.push(Value::Int(1));
    let ids = op(
        it,
        "reshape",
        vec![idx.value.clone(), Value::tuple(col)],
        vec![],
        span,
    )?;
    let classes = Tensor::arange_i64(0, n, 1, d).map_err(|e| crate::tensor::rt(e).at(span))?;
    let eq = match &ids {
        Value::Host(h) => h.compare_at(CmpOp::Eq, &tensor_value(classes), false, span),
        _ => None,
    }
    .unwrap_or_else(|| Err(Diagnostic::new(Code::E0500, "one_hot: not a tensor")))
    .map_err(|d| d.or_at(span))?;
    op(it, "cast", vec![eq, dtype], vec![], span)
}

fn classes_arg(a: &Arg, fname: &str) -> Result<i64, Diagnostic> {
    let n = a.int("n")?;
    if n < 1 {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("{fname}: the number of classes must be at least 1, got {n}"),
        )
        .at(a.span));
    }
    Ok(n)
}

fn log_softmax(it: &mut Interp, args: &CallArgs) -> R {
    let a = args.bind("log_softmax", &["x"], &["axis"])?;
    let axis = axis_arg(&a, 1, args.span)?;
    log_softmax_of(it, required(&a, 0)?, axis, "log_softmax", args.span)
}

fn one_hot(it: &mut Interp, args: &CallArgs) -> R {
    let a = args.bind("one_hot", &["indices", "n"], &["dtype"])?;
    let n = classes_arg(required(&a, 1)?, "one_hot")?;
    let dtype = match given(&a, 2) {
        Some(d) => {
            crate::tensor::dtype_arg(&d.value, d.span)?;
            d.value.clone()
        }
        None => Value::str("fp32"),
    };
    one_hot_of(it, required(&a, 0)?, n, dtype, "one_hot", args.span)
}

fn cross_entropy(it: &mut Interp, args: &CallArgs) -> R {
    const F: &str = "cross_entropy";
    let span = args.span;
    let a = args.bind(F, &["logits", "targets"], &["axis", "reduction"])?;
    let (logits, targets) = (required(&a, 0)?, required(&a, 1)?);
    let reduction = match given(&a, 3) {
        Some(r) => match &r.value {
            Value::Str(s) if matches!(&**s, "mean" | "sum" | "none") => s.to_string(),
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "{F}: reduction must be 'mean', 'sum' or 'none', not {}",
                        other.repr()
                    ),
                )
                .at(r.span))
            }
        },
        None => "mean".to_string(),
    };
    let (lshape, ld) = tensor_meta(logits, F, "logits")?;
    let (tshape, td) = tensor_meta(targets, F, "targets")?;
    need_float(ld, F, "logits", logits.span)?;
    need_int(td, F, "targets", targets.span)?;
    let (axis, axis_span) = axis_arg(&a, 2, span)?;
    let ax = norm_axis(axis, lshape.len(), F, axis_span)?;
    let mut want = lshape.clone();
    let classes = want.remove(ax);
    if tshape != want {
        return Err(Diagnostic::new(
            Code::E0200,
            format!(
                "{F}: targets have shape {tshape:?} but logits of shape {lshape:?} with classes on axis {ax} need targets of shape {want:?}"
            ),
        )
        .at(targets.span));
    }
    let lp = log_softmax_of(it, logits, (ax as i64, axis_span), F, span)?;
    let lpd = meta(&lp).map_or(ld, |m| m.1);
    let oh = one_hot_of(it, targets, classes as i64, Value::str(lpd.name()), F, span)?;
    let nd = lshape.len();
    let oh = if ax + 1 == nd {
        oh
    } else {
        // the one-hot axis (last) moves to the class axis
        let mut perm: Vec<Value> = (0..nd - 1).map(|i| Value::Int(i as i64)).collect();
        perm.insert(ax, Value::Int(nd as i64 - 1));
        op(it, "transpose", vec![oh, Value::tuple(perm)], vec![], span)?
    };
    let picked = op(it, "mul", vec![lp, oh], vec![], span)?;
    let ll = op(
        it,
        "sum",
        vec![picked],
        vec![("axis", Value::Int(ax as i64))],
        span,
    )?;
    let nll = op(it, "neg", vec![ll], vec![], span)?;
    match reduction.as_str() {
        "mean" => op(it, "mean", vec![nll], vec![], span),
        "sum" => op(it, "sum", vec![nll], vec![], span),
        _ => Ok(nll),
    }
}

fn embedding(_: &mut Interp, args: &CallArgs) -> R {
    const F: &str = "embedding";
    let span = args.span;
    let a = args.bind(F, &["table", "indices"], &[])?;
    let (table, idx) = (required(&a, 0)?, required(&a, 1)?);
    let (tshape, _) = tensor_meta(table, F, "table")?;
    let (_, d) = tensor_meta(idx, F, "indices")?;
    need_int(d, F, "indices", idx.span)?;
    if tshape.is_empty() {
        return Err(Diagnostic::new(
            Code::E0200,
            format!("{F}: the table must have at least one dimension, got a 0-d tensor"),
        )
        .at(table.span));
    }
    check_classes(
        &idx.value,
        tshape[0] as i64,
        F,
        "rows of the table",
        idx.span,
    )?;
    match &table.value {
        Value::Host(h) => h.getitem_at(&idx.value, span),
        _ => None,
    }
    .unwrap_or_else(|| Err(Diagnostic::new(Code::E0101, "embedding: not a tensor")))
    .map_err(|d| d.or_at(span))
}

/// Sets the composite ops of `m`.
pub fn install(m: &Module) {
    type F = fn(&mut Interp, &CallArgs) -> R;
    let ops: [(&str, &str, F); 4] = [
        ("log_softmax", "log_softmax(x, axis=-1)", log_softmax),
        ("one_hot", "one_hot(indices, n, dtype='fp32')", one_hot),
        (
            "cross_entropy",
            "cross_entropy(logits, targets, axis=-1, reduction='mean')",
            cross_entropy,
        ),
        ("embedding", "embedding(table, indices)", embedding),
    ];
    for (name, sig, f) in ops {
        m.set(name, Value::native(name, sig, move |it, args| f(it, &args)));
    }
}
