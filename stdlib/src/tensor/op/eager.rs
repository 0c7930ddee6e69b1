//! The eager form of each op of the table: runtime tensors in, a runtime tensor (or a Python
//! value) out. Each takes the arguments already bound to the row's parameters.

use super::table::{Call, Family};
use crate::tensor::*;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::args::{given as opt, required as req};
use tessera_lang::eval::{Arg, Interp, Value};
use tessera_runtime::{self as rtm, DType, Scalar, Tensor};

mod conv;
mod spectral;
pub(crate) use conv::*;
pub(crate) use spectral::*;

type R = Result<Value, Diagnostic>;

fn scalar_of(x: &Arg) -> Result<Scalar, Diagnostic> {
    match &x.value {
        Value::Int(i) => Ok(Scalar::Int(*i)),
        Value::Float(f) => Ok(Scalar::Float(*f)),
        Value::Bool(b) => Ok(Scalar::Bool(*b)),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a number, got {}", other.type_name()),
        )
        .at(x.span)),
    }
}

fn dtype_opt(a: &[Option<Arg>], i: usize) -> Result<Option<DType>, Diagnostic> {
    opt(a, i).map(|x| dtype_arg(&x.value, x.span)).transpose()
}

fn axis_opt(a: &[Option<Arg>], i: usize) -> Result<Option<isize>, Diagnostic> {
    opt(a, i)
        .map(|x| x.int("axis").map(|v| v as isize))
        .transpose()
}

fn float_or(a: &[Option<Arg>], i: usize, what: &str, default: f64) -> Result<f64, Diagnostic> {
    Ok(opt(a, i)
        .map(|x| x.float(what))
        .transpose()?
        .unwrap_or(default))
}

fn tens(a: &[Option<Arg>], i: usize) -> Result<Tensor, Diagnostic> {
    let x = req(a, i)?;
    tensor_arg(&x.value, x.span)
}

fn tens_opt(a: &[Option<Arg>], i: usize) -> Result<Option<Tensor>, Diagnostic> {
    opt(a, i).map(|x| tensor_arg(&x.value, x.span)).transpose()
}

fn ok(t: Result<Tensor, rtm::RuntimeError>) -> R {
    t.map(tensor_value).map_err(rt)
}

pub(super) fn unary(_: &mut Interp, c: &Call) -> R {
    let Family::Unary(u) = c.row.family else {
        return Err(c.not_in_family());
    };
    ok(rtm::unary(u, &tens(&c.a, 0)?))
}

pub(super) fn binary(_: &mut Interp, c: &Call) -> R {
    let Family::Binary(op) = c.row.family else {
        return Err(c.not_in_family());
    };
    let (x, y) = (req(&c.a, 0)?, req(&c.a, 1)?);
    let (p, q) = (operand(&x.value, x.span)?, operand(&y.value, y.span)?);
    if let (Opnd::S(_), Opnd::S(_)) = (&p, &q) {
        // Two Python scalars: make the first a 0-d tensor so the result is a tensor.
        let t = tensor_arg(&x.value, x.span)?;
        return ok(rtm::binary(op, &t, q.as_operand()));
    }
    ok(rtm::binary(op, p.as_operand(), q.as_operand()))
}

pub(super) fn reduce(_: &mut Interp, c: &Call) -> R {
    let Family::Reduce(r) = c.row.family else {
        return Err(c.not_in_family());
    };
    let a = &c.a;
    let keep = match opt(a, 2) {
        Some(k) => k.bool("keepdim")?,
        None => false,
    };
    let t = tens(a, 0)?;
    match opt(a, 1) {
        Some(ax) if ax.value.items().is_some() => {
            let axes = ints_arg(&ax.value, ax.span)?;
            reduce_axes(&t, r, &axes, keep).map_err(|d| d.or_at(ax.span))
        }
        _ => ok(rtm::reduce(&t, r, axis_opt(a, 1)?, keep)),
    }
}

pub(super) fn tensor(_: &mut Interp, c: &Call) -> R {
    let d = req(&c.a, 0)?;
    let dt = dtype_opt(&c.a, 1)?;
    if let Some(t) = as_tensor(&d.value) {
        return ok(match dt {
            Some(dt) => t.to(dt),
            None => Ok(t.clone()),
        });
    }
    let n = nested_from_value(&d.value, d.span, 0)?;
    Tensor::from_nested(&n, dt)
        .map(tensor_value)
        .map_err(|e| rt(e).at(d.span))
}

/// `zeros`, `ones`, `rand`, `randn`: a shape and a dtype (and a seed).
pub(super) fn filled(_: &mut Interp, c: &Call) -> R {
    let s = req(&c.a, 0)?;
    let shape = shape_arg(&s.value, s.span)?;
    let dt = dtype_opt(&c.a, 1)?.unwrap_or(DType::F32);
    let seed = || -> Result<i64, Diagnostic> { opt(&c.a, 2).map_or(Ok(0), |x| x.int("seed")) };
    ok(match c.row.name {
        "zeros" => Tensor::zeros(&shape, dt),
        "ones" => Tensor::ones(&shape, dt),
        "rand" => Tensor::rand(&shape, dt, seed()?),
        _ => Tensor::randn(&shape, dt, seed()?),
    })
}

/// `randint(low, high, shape, seed)`: int64 values in `[low, high)`; element `i` is
/// `low + ((bits(seed, i) * (high - low)) >> 64)` (docs/decisions.md "Random numbers").
pub(super) fn randint(_: &mut Interp, c: &Call) -> R {
    let lo_arg = req(&c.a, 0)?;
    let (lo, hi) = (lo_arg.int("low")?, req(&c.a, 1)?.int("high")?);
    let s = req(&c.a, 2)?;
    let shape = shape_arg(&s.value, s.span)?;
    let seed = opt(&c.a, 3).map_or(Ok(0), |x| x.int("seed"))?;
    if hi <= lo {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("randint: high must be greater than low, got low={lo}, high={hi}"),
        )
        .at(c.span));
    }
    let n = rtm::memory::check_shape_alloc(&shape, DType::I64).map_err(rt)?;
    let range = (hi as i128 - lo as i128) as u128;
    let data = (0..n as u64)
        .map(|i| {
            let off = (u128::from(rtm::rng::bits(seed, i)) * range) >> 64;
            (lo as i128 + off as i128) as i64
        })
        .collect();
    ok(Tensor::from_i64(&shape, data, DType::I64))
}

pub(super) fn full(_: &mut Interp, c: &Call) -> R {
    let s = req(&c.a, 0)?;
    let shape = shape_arg(&s.value, s.span)?;
    let v = scalar_of(req(&c.a, 1)?)?;
    let dt = dtype_opt(&c.a, 2)?.unwrap_or(v.default_dtype());
    if let Scalar::Int(i) = v {
        // NumPy 2: `full(3, 300, dtype=int8)` is an error, not 44
        rtm::tensor::check_python_int(i, dt)
            .map_err(|e| rt(e).at(c.a[1].as_ref().map_or(c.span, |a| a.span)))?;
    }
    ok(Tensor::full(&shape, v, dt))
}

/// `arange(stop)` / `arange(start, stop, step=1, dtype=None)` (NumPy's): int64 when every
/// bound is an int, else fp32 (Tessera's default float, as PyTorch).
pub(super) fn arange(_: &mut Interp, c: &Call) -> R {
    let first = req(&c.a, 0)?;
    let (start, stop) = match opt(&c.a, 1) {
        Some(stop) => (scalar_of(first)?, scalar_of(stop)?),
        None => (Scalar::Int(0), scalar_of(first)?),
    };
    let step = match opt(&c.a, 2) {
        Some(s) => scalar_of(s)?,
        None => Scalar::Int(1),
    };
    let ints = [start, stop, step]
        .iter()
        .all(|s| matches!(s, Scalar::Int(_) | Scalar::Bool(_)));
    let dt = dtype_opt(&c.a, 3)?.unwrap_or(if ints { DType::I64 } else { DType::F32 });
    let int = |s: Scalar| match s {
        Scalar::Int(i) => i,
        Scalar::Bool(b) => i64::from(b),
        Scalar::Float(f) => f as i64,
    };
    let r = if ints {
        Tensor::arange_i64(int(start), int(stop), int(step), dt)
    } else {
        Tensor::arange_f64(start.as_f64(), stop.as_f64(), step.as_f64(), dt)
    };
    r.map(tensor_value).map_err(|e| rt(e).at(c.span))
}

/// `linspace(start, stop, num=50, dtype='fp32')` (NumPy's, both ends included).
pub(super) fn linspace(_: &mut Interp, c: &Call) -> R {
    let start = req(&c.a, 0)?.float("start")?;
    let stop = req(&c.a, 1)?.float("stop")?;
    let num = match opt(&c.a, 2) {
        Some(n) => {
            let v = n.int("num")?;
            usize::try_from(v).map_err(|_| {
                Diagnostic::new(
                    Code::E0200,
                    format!("linspace: num must not be negative, got {v}"),
                )
                .at(n.span)
            })?
        }
        None => 50,
    };
    let dt = dtype_opt(&c.a, 3)?.unwrap_or(DType::F32);
    Tensor::linspace(start, stop, num, dt)
        .map(tensor_value)
        .map_err(|e| rt(e).at(c.span))
}

pub(super) fn eye(_: &mut Interp, c: &Call) -> R {
    let x = req(&c.a, 0)?;
    let n = x.int("n")?;
    if n < 0 {
        return Err(Diagnostic::new(Code::E0200, format!("negative size {n}")).at(x.span));
    }
    let dt = dtype_opt(&c.a, 1)?.unwrap_or(DType::F32);
    ok(Tensor::eye(n as usize, dt))
}

pub(super) fn where_(_: &mut Interp, c: &Call) -> R {
    let cond = tens(&c.a, 0)?;
    let (x, y) = (req(&c.a, 1)?, req(&c.a, 2)?);
    let (p, q) = (operand(&x.value, x.span)?, operand(&y.value, y.span)?);
    ok(rtm::where_(&cond, p.as_operand(), q.as_operand()))
}

pub(super) fn cast(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let d = req(&c.a, 1)?;
    ok(t.cast(dtype_arg(&d.value, d.span)?))
}

pub(super) fn matmul(_: &mut Interp, c: &Call) -> R {
    let (x, y) = (tens(&c.a, 0)?, tens(&c.a, 1)?);
    let acc = dtype_opt(&c.a, 2)?;
    if let Some(ts) = opt(&c.a, 3) {
        // A schedule hint for compiled kernels; eager matmul only checks its form.
        ints_arg(&ts.value, ts.span)?;
    }
    ok(rtm::matmul(&x, &y, acc))
}

/// A row function (`softmax`, `logsumexp`): `f(x, axis=-1[, keepdim=False])`.
pub(super) fn row_fn(_: &mut Interp, c: &Call) -> R {
    let Family::Row(f) = c.row.family else {
        return Err(c.not_in_family());
    };
    let keep = f.row().reduces && bool_opt(&c.a, 2, "keepdim", false)?;
    let axis = axis_opt(&c.a, 1)?.unwrap_or(-1);
    ok(rtm::row_fn(&tens(&c.a, 0)?, f, axis, keep))
}

pub(super) fn layernorm(_: &mut Interp, c: &Call) -> R {
    let eps = float_or(&c.a, 3, "eps", 1e-5)?;
    let (w, b) = (tens_opt(&c.a, 1)?, tens_opt(&c.a, 2)?);
    ok(rtm::layernorm(&tens(&c.a, 0)?, w.as_ref(), b.as_ref(), eps))
}

pub(super) fn rmsnorm(_: &mut Interp, c: &Call) -> R {
    let eps = float_or(&c.a, 2, "eps", 1e-6)?;
    let w = tens_opt(&c.a, 1)?;
    ok(rtm::rmsnorm(&tens(&c.a, 0)?, w.as_ref(), eps))
}

pub(super) fn transpose(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let perm = match opt(&c.a, 1) {
        Some(p) => {
            let v = ints_arg(&p.value, p.span)?;
            let mut out = Vec::with_capacity(v.len());
            for x in v {
                let nd = t.ndim() as i64;
                let y = if x < 0 { x + nd } else { x };
                if y < 0 || y >= nd.max(1) {
                    return Err(Diagnostic::new(
                        Code::E0200,
                        format!("axis {x} is out of range for a tensor of {nd} dimensions"),
                    )
                    .at(p.span));
                }
                out.push(y as usize);
            }
            Some(out)
        }
        None => None,
    };
    ok(t.transpose(perm.as_deref()))
}

pub(super) fn reshape(_: &mut Interp, c: &Call) -> R {
    let s = req(&c.a, 1)?;
    ok(tens(&c.a, 0)?.reshape(&ints_arg(&s.value, s.span)?))
}

/// Argument `i`: a list or tuple of tensors.
fn tensor_list(it: &mut Interp, a: &[Option<Arg>], i: usize) -> Result<Vec<Tensor>, Diagnostic> {
    let xs = req(a, i)?;
    let items = it.iterate(&xs.value, xs.span)?;
    items.iter().map(|v| tensor_arg(v, xs.span)).collect()
}

pub(super) fn concat(it: &mut Interp, c: &Call) -> R {
    let ts = tensor_list(it, &c.a, 0)?;
    ok(rtm::concat(&ts, axis_opt(&c.a, 1)?.unwrap_or(0)))
}

pub(super) fn flash_attention(_: &mut Interp, c: &Call) -> R {
    let causal = match opt(&c.a, 3) {
        Some(x) => x.bool("causal")?,
        None => false,
    };
    let scale = opt(&c.a, 4).map(|x| x.float("scale")).transpose()?;
    let (q, k, v) = (tens(&c.a, 0)?, tens(&c.a, 1)?, tens(&c.a, 2)?);
    ok(rtm::flash_attention(&q, &k, &v, causal, scale))
}

pub(super) fn allclose(_: &mut Interp, c: &Call) -> R {
    let rtol = float_or(&c.a, 2, "rtol", 1e-5)?;
    let atol = float_or(&c.a, 3, "atol", 1e-8)?;
    rtm::allclose(&tens(&c.a, 0)?, &tens(&c.a, 1)?, rtol, atol)
        .map(Value::Bool)
        .map_err(rt)
}

pub(super) fn max_abs_diff(_: &mut Interp, c: &Call) -> R {
    rtm::max_abs_diff(&tens(&c.a, 0)?, &tens(&c.a, 1)?)
        .map(Value::Float)
        .map_err(rt)
}

/// A file format `save`/`load` know, chosen by the path's extension.
#[derive(Clone, Copy, PartialEq)]
enum FileFormat {
    Npy,
    Safetensors,
}

/// The path argument of `save`/`load`: a string ending in `.npy` or `.safetensors`.
fn file_path(a: &[Option<Arg>], i: usize) -> Result<(std::path::PathBuf, FileFormat), Diagnostic> {
    let p = req(a, i)?;
    let Value::Str(s) = &p.value else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("the path must be a string, got {}", p.value.type_name()),
        )
        .at(p.span));
    };
    let format = if s.ends_with(".npy") {
        FileFormat::Npy
    } else if s.ends_with(".safetensors") {
        FileFormat::Safetensors
    } else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("cannot tell the format of {s:?}: Tessera reads and writes .npy and .safetensors files"),
        )
        .at(p.span)
        .with_help("name the file `….npy` (one tensor) or `….safetensors` (named tensors)"));
    };
    Ok((std::path::PathBuf::from(&**s), format))
}

/// The named tensors of `save(path.safetensors, items)`: a list (or tuple) of
/// `(name, tensor)` pairs, or a dict from names to tensors.
fn named_tensors(arg: &Arg) -> Result<Vec<(String, rtm::Tensor)>, Diagnostic> {
    let wrong = |what: String| {
        Diagnostic::new(Code::E0101, what)
            .at(arg.span)
            .with_help("a .safetensors file holds named tensors: `op.save(path, [(\"w\", w), (\"b\", b)])` or a dict `{\"w\": w}`")
    };
    let pairs: Vec<(Value, Value)> = match &arg.value {
        Value::Dict(d) => d.borrow().entries().cloned().collect(),
        Value::List(_) | Value::Tuple(_) => {
            let items: Vec<Value> = match &arg.value {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.as_ref().clone(),
                _ => Vec::new(),
            };
            let mut pairs = Vec::with_capacity(items.len());
            for item in items {
                match &item {
                    Value::Tuple(t) if t.len() == 2 => pairs.push((t[0].clone(), t[1].clone())),
                    other => {
                        return Err(wrong(format!(
                            "expected (name, tensor) pairs, got a {}",
                            other.type_name()
                        )))
                    }
                }
            }
            pairs
        }
        other => {
            return Err(wrong(format!(
                "expected a list of (name, tensor) pairs or a dict, got {}",
                other.type_name()
            )))
        }
    };
    let mut out = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let Value::Str(name) = &k else {
            return Err(wrong(format!(
                "a tensor's name must be a string, got {}",
                k.type_name()
            )));
        };
        let Some(t) = crate::tensor::as_tensor(&v) else {
            return Err(wrong(format!(
                "{name:?} names a {}, not an ordinary tensor",
                crate::tensor::kind_name(&v)
            )));
        };
        out.push((name.to_string(), t));
    }
    Ok(out)
}

/// `save(path, x)`: one tensor to a `.npy` file, or named tensors to a `.safetensors` file.
pub(super) fn save(_: &mut Interp, c: &Call) -> R {
    let (path, format) = file_path(&c.a, 0)?;
    match format {
        FileFormat::Npy => {
            let t = tens(&c.a, 1)?;
            rtm::npy::save(&path, &t).map_err(|e| rt(e).at(c.span))?;
        }
        FileFormat::Safetensors => {
            let arg = req(&c.a, 1)?;
            if crate::tensor::as_tensor(&arg.value).is_some() {
                return Err(Diagnostic::new(
                    Code::E0101,
                    "a .safetensors file holds named tensors, not one tensor",
                )
                .at(arg.span)
                .with_help("name it: `op.save(path, [(\"x\", x)])`, or save one tensor as .npy"));
            }
            let named = named_tensors(arg)?;
            rtm::safetensors_file::save(&path, &named).map_err(|e| rt(e).at(c.span))?;
        }
    }
    Ok(Value::None)
}

/// `load(path)`: the tensor in a `.npy` file, or the `(name, tensor)` pairs of a
/// `.safetensors` file, sorted by name.
pub(super) fn load(_: &mut Interp, c: &Call) -> R {
    let (path, format) = file_path(&c.a, 0)?;
    match format {
        FileFormat::Npy => rtm::npy::load(&path)
            .map(tensor_value)
            .map_err(|e| rt(e).at(c.span)),
        FileFormat::Safetensors => {
            let named = rtm::safetensors_file::load(&path).map_err(|e| rt(e).at(c.span))?;
            Ok(Value::list(
                named
                    .into_iter()
                    .map(|(n, t)| Value::tuple(vec![Value::str(&n), tensor_value(t)]))
                    .collect(),
            ))
        }
    }
}

/// `clip(x, min=None, max=None)`: `minimum(maximum(x, min), max)` (NumPy's: `max` wins when
/// `min > max`; NaN stays NaN); `min`/`max` are numbers or tensors, broadcast.
pub(super) fn clip(_: &mut Interp, c: &Call) -> R {
    let mut t = tens(&c.a, 0)?;
    if let Some(lo) = opt(&c.a, 1).filter(|a| !matches!(a.value, Value::None)) {
        let o = operand(&lo.value, lo.span)?;
        t = rtm::binary(rtm::BinaryOp::Maximum, &t, o.as_operand())
            .map_err(|e| rt(e).at(lo.span))?;
    }
    if let Some(hi) = opt(&c.a, 2).filter(|a| !matches!(a.value, Value::None)) {
        let o = operand(&hi.value, hi.span)?;
        t = rtm::binary(rtm::BinaryOp::Minimum, &t, o.as_operand())
            .map_err(|e| rt(e).at(hi.span))?;
    }
    ok(Ok(t))
}

/// `stack(xs, axis=0)`.
pub(super) fn stack(it: &mut Interp, c: &Call) -> R {
    let ts = tensor_list(it, &c.a, 0)?;
    ok(rtm::stack(&ts, axis_opt(&c.a, 1)?.unwrap_or(0)))
}

fn bool_opt(a: &[Option<Arg>], i: usize, what: &str, default: bool) -> Result<bool, Diagnostic> {
    opt(a, i).map_or(Ok(default), |x| x.bool(what))
}

/// `argmax`/`argmin(x, axis=None, keepdim=False)`.
pub(super) fn arg_extreme(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let keep = bool_opt(&c.a, 2, "keepdim", false)?;
    ok(rtm::arg_extreme(
        &t,
        axis_opt(&c.a, 1)?,
        keep,
        c.row.name == "argmax",
    ))
}

/// `sort(x, axis=-1, descending=False)`.
pub(super) fn sort(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let desc = bool_opt(&c.a, 2, "descending", false)?;
    ok(rtm::sort(&t, axis_opt(&c.a, 1)?.unwrap_or(-1), desc))
}

/// `topk(x, k, axis=-1, largest=True)`: `(values, indices)`.
pub(super) fn topk(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let kx = req(&c.a, 1)?;
    let k = kx.int("k")?;
    let k = usize::try_from(k).map_err(|_| {
        Diagnostic::new(
            Code::E0200,
            format!("topk: k must not be negative, got {k}"),
        )
        .at(kx.span)
    })?;
    let largest = bool_opt(&c.a, 3, "largest", true)?;
    let (v, i) = rtm::topk(&t, k, axis_opt(&c.a, 2)?.unwrap_or(-1), largest).map_err(rt)?;
    Ok(Value::tuple(vec![tensor_value(v), tensor_value(i)]))
}

/// `cumsum(x, axis=None)`.
pub(super) fn cumsum(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    ok(rtm::cumsum(&t, axis_opt(&c.a, 1)?))
}

/// A reduction over several axes: the reduced axes are moved last, merged, and reduced once,
/// so the result rounds once like a single-axis reduction.
fn reduce_axes(t: &Tensor, r: rtm::ReduceOp, axes: &[i64], keep: bool) -> R {
    let nd = t.ndim() as i64;
    let mut red = Vec::new();
    for &a in axes {
        let x = if a < 0 { a + nd } else { a };
        if x < 0 || x >= nd {
            return Err(Diagnostic::new(
                Code::E0200,
                format!("axis {a} is out of range for a tensor of {nd} dimensions"),
            ));
        }
        if red.contains(&(x as usize)) {
            return Err(Diagnostic::new(
                Code::E0200,
                format!("axis {a} is repeated"),
            ));
        }
        red.push(x as usize);
    }
    if red.is_empty() {
        return ok(Ok(t.clone()));
    }
    let shape = t.shape().to_vec();
    let kept: Vec<usize> = (0..shape.len()).filter(|i| !red.contains(i)).collect();
    let mut perm = kept.clone();
    let mut sorted_red = red.clone();
    sorted_red.sort_unstable();
    perm.extend(sorted_red.iter().copied());
    let moved = t.transpose(Some(&perm)).map_err(rt)?;
    let mut merged: Vec<i64> = kept.iter().map(|&i| shape[i] as i64).collect();
    merged.push(sorted_red.iter().map(|&i| shape[i] as i64).product());
    let flat = moved.reshape(&merged).map_err(rt)?;
    let out = rtm::reduce(&flat, r, Some(-1), false).map_err(rt)?;
    if keep {
        let dims: Vec<i64> = (0..shape.len())
            .map(|i| if red.contains(&i) { 1 } else { shape[i] as i64 })
            .collect();
        ok(out.reshape(&dims))
    } else {
        ok(Ok(out))
    }
}
