//! The `op` module: tensor creation, elementwise ops, matmul, reductions, normalisations,
//! shape ops, attention, comparisons, and the dtype constants.

use crate::tensor::*;
use tessera_compiler::graph::{BINARY_OPS, UNARY_OPS};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, CallArgs, Interp, Module, Value};
use tessera_runtime::{self as rtm, BinaryOp, DType, Scalar, Tensor, ALL_DTYPES};

/// Every function of the module but the elementwise ones (the op table's rows, [`UNARY_OPS`]
/// and [`BINARY_OPS`]), with its signature for help and completion.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("tensor", "tensor(data, dtype=None)"),
    ("zeros", "zeros(shape, dtype='fp32')"),
    ("ones", "ones(shape, dtype='fp32')"),
    ("full", "full(shape, value, dtype=None)"),
    ("arange", "arange(n, dtype='int64')"),
    ("eye", "eye(n, dtype='fp32')"),
    ("rand", "rand(shape, dtype='fp32', seed=0)"),
    ("randn", "randn(shape, dtype='fp32', seed=0)"),
    ("where", "where(cond, a, b)"),
    ("cast", "cast(x, dtype)"),
    ("matmul", "matmul(A, B, accum_dtype=None, tile_shape=None)"),
    ("sum", "sum(x, axis=None, keepdim=False)"),
    ("mean", "mean(x, axis=None, keepdim=False)"),
    ("max", "max(x, axis=None, keepdim=False)"),
    ("min", "min(x, axis=None, keepdim=False)"),
    ("softmax", "softmax(x, axis=-1)"),
    (
        "layernorm",
        "layernorm(x, weight=None, bias=None, eps=1e-5)",
    ),
    ("rmsnorm", "rmsnorm(x, weight=None, eps=1e-6)"),
    ("transpose", "transpose(x, perm=None)"),
    ("reshape", "reshape(x, shape)"),
    ("concat", "concat(xs, axis=0)"),
    (
        "flash_attention",
        "flash_attention(Q, K, V, causal=False, scale=None)",
    ),
    ("allclose", "allclose(a, b, rtol=1e-5, atol=1e-8)"),
    ("max_abs_diff", "max_abs_diff(a, b)"),
];

/// Builds the `op` module.
pub fn module() -> Module {
    let m = Module::new("op", "tensor operations");
    let unary = UNARY_OPS.iter().filter(|r| r.function).map(|r| r.name);
    let binary = BINARY_OPS.iter().filter(|r| r.function).map(|r| r.name);
    for name in FUNCTIONS.iter().map(|f| f.0).chain(unary).chain(binary) {
        if let Some(f) = function(name) {
            m.set(name, f);
        }
    }
    for d in ALL_DTYPES {
        m.set(d.name(), dtype_value(d));
    }
    for (alias, d) in [
        ("float64", DType::F64),
        ("float32", DType::F32),
        ("float16", DType::F16),
        ("bfloat16", DType::BF16),
        ("f64", DType::F64),
        ("f32", DType::F32),
        ("f16", DType::F16),
    ] {
        m.set(alias, dtype_value(d));
    }
    m
}

use tessera_lang::eval::args::{given as opt, required as req};

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

fn tens(a: &[Option<Arg>], i: usize) -> Result<Tensor, Diagnostic> {
    let x = req(a, i)?;
    tensor_arg(&x.value, x.span)
}

fn tens_opt(a: &[Option<Arg>], i: usize) -> Result<Option<Tensor>, Diagnostic> {
    opt(a, i).map(|x| tensor_arg(&x.value, x.span)).transpose()
}

fn ok(t: Result<Tensor, rtm::RuntimeError>) -> Result<Value, Diagnostic> {
    t.map(tensor_value).map_err(rt)
}

fn binary_fn(name: &'static str, op: BinaryOp) -> Value {
    Value::native(name, &format!("{name}(a, b)"), move |_, args: CallArgs| {
        let a = args.bind(name, &["a", "b"], &[])?;
        let (x, y) = (req(&a, 0)?, req(&a, 1)?);
        let (p, q) = (operand(&x.value, x.span)?, operand(&y.value, y.span)?);
        if let (Opnd::S(_), Opnd::S(_)) = (&p, &q) {
            // Two Python scalars: make the first a 0-d tensor so the result is a tensor.
            let t = tensor_arg(&x.value, x.span)?;
            return ok(rtm::binary(op, &t, q.as_operand()));
        }
        ok(rtm::binary(op, p.as_operand(), q.as_operand()))
    })
}

/// The binary op bound as `op.<name>`, if any.
pub fn binary_op(name: &str) -> Option<BinaryOp> {
    BinaryOp::function(name)
}

/// The native function `op.<name>`: eager, or traced when an argument is a traced tensor.
pub fn function(name: &str) -> Option<Value> {
    let n: &'static str = match (unary_op(name), binary_op(name)) {
        (Some(u), _) => u.name(),
        (_, Some(b)) => b.name(),
        _ => FUNCTIONS.iter().find(|f| f.0 == name)?.0,
    };
    eager_function(name).map(|f| crate::dist::wrap(n, crate::trace::traced(n, f)))
}

fn eager_function(name: &str) -> Option<Value> {
    if let Some(u) = unary_op(name) {
        let n = u.name();
        return Some(Value::native(
            n,
            &format!("{n}(x)"),
            move |_, args: CallArgs| {
                let a = args.bind(n, &["x"], &[])?;
                ok(rtm::unary(u, &tens(&a, 0)?))
            },
        ));
    }
    if let Some(r) = reduce_op(name) {
        let n: &'static str = FUNCTIONS.iter().find(|f| f.0 == name)?.0;
        return Some(Value::native(n, n, move |_, args: CallArgs| {
            let a = args.bind(n, &["x"], &["axis", "keepdim"])?;
            let keep = match opt(&a, 2) {
                Some(k) => k.bool("keepdim")?,
                None => false,
            };
            let t = tens(&a, 0)?;
            match opt(&a, 1) {
                Some(ax) if matches!(ax.value, Value::Tuple(_) | Value::List(_)) => {
                    let axes = ints_arg(&ax.value, ax.span)?;
                    reduce_axes(&t, r, &axes, keep).map_err(|d| d.or_at(ax.span))
                }
                _ => ok(rtm::reduce(&t, r, axis_opt(&a, 1)?, keep)),
            }
        }));
    }
    if let Some(b) = binary_op(name) {
        return Some(binary_fn(b.name(), b));
    }
    Some(match name {
        "tensor" => Value::native("tensor", "tensor(data, dtype=None)", |_, args| {
            let a = args.bind("tensor", &["data"], &["dtype"])?;
            let d = req(&a, 0)?;
            let dt = dtype_opt(&a, 1)?;
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
        }),
        "zeros" | "ones" => {
            let n: &'static str = if name == "zeros" { "zeros" } else { "ones" };
            Value::native(n, n, move |_, args| {
                let a = args.bind(n, &["shape"], &["dtype"])?;
                let s = req(&a, 0)?;
                let shape = shape_arg(&s.value, s.span)?;
                let dt = dtype_opt(&a, 1)?.unwrap_or(DType::F32);
                ok(if n == "zeros" {
                    Tensor::zeros(&shape, dt)
                } else {
                    Tensor::ones(&shape, dt)
                })
            })
        }
        "full" => Value::native("full", "full(shape, value, dtype=None)", |_, args| {
            let a = args.bind("full", &["shape", "value"], &["dtype"])?;
            let s = req(&a, 0)?;
            let shape = shape_arg(&s.value, s.span)?;
            let v = scalar_of(req(&a, 1)?)?;
            let dt = dtype_opt(&a, 2)?.unwrap_or(v.default_dtype());
            ok(Tensor::full(&shape, v, dt))
        }),
        "arange" => Value::native("arange", "arange(n, dtype='int64')", |_, args| {
            let a = args.bind("arange", &["n"], &["dtype"])?;
            let n = req(&a, 0)?.int("n")?;
            let dt = dtype_opt(&a, 1)?.unwrap_or(DType::I64);
            ok(Tensor::arange(n, dt))
        }),
        "eye" => Value::native("eye", "eye(n, dtype='fp32')", |_, args| {
            let a = args.bind("eye", &["n"], &["dtype"])?;
            let x = req(&a, 0)?;
            let n = x.int("n")?;
            if n < 0 {
                return Err(Diagnostic::new(Code::E0200, format!("negative size {n}")).at(x.span));
            }
            let dt = dtype_opt(&a, 1)?.unwrap_or(DType::F32);
            ok(Tensor::eye(n as usize, dt))
        }),
        "rand" | "randn" => {
            let n: &'static str = if name == "rand" { "rand" } else { "randn" };
            Value::native(n, n, move |_, args| {
                let a = args.bind(n, &["shape"], &["dtype", "seed"])?;
                let s = req(&a, 0)?;
                let shape = shape_arg(&s.value, s.span)?;
                let dt = dtype_opt(&a, 1)?.unwrap_or(DType::F32);
                let seed = match opt(&a, 2) {
                    Some(x) => x.int("seed")?,
                    None => 0,
                };
                ok(if n == "rand" {
                    Tensor::rand(&shape, dt, seed)
                } else {
                    Tensor::randn(&shape, dt, seed)
                })
            })
        }
        "where" => Value::native("where", "where(cond, a, b)", |_, args| {
            let a = args.bind("where", &["cond", "a", "b"], &[])?;
            let c = tens(&a, 0)?;
            let (x, y) = (req(&a, 1)?, req(&a, 2)?);
            let (p, q) = (operand(&x.value, x.span)?, operand(&y.value, y.span)?);
            ok(rtm::where_(&c, p.as_operand(), q.as_operand()))
        }),
        "cast" => Value::native("cast", "cast(x, dtype)", |_, args| {
            let a = args.bind("cast", &["x", "dtype"], &[])?;
            let t = tens(&a, 0)?;
            let d = req(&a, 1)?;
            ok(t.cast(dtype_arg(&d.value, d.span)?))
        }),
        "matmul" => Value::native(
            "matmul",
            "matmul(A, B, accum_dtype=None, tile_shape=None)",
            |_, args| {
                let a = args.bind("matmul", &["A", "B"], &["accum_dtype", "tile_shape"])?;
                let (x, y) = (tens(&a, 0)?, tens(&a, 1)?);
                let acc = dtype_opt(&a, 2)?;
                if let Some(ts) = opt(&a, 3) {
                    // A schedule hint for compiled kernels; eager matmul only checks its form.
                    ints_arg(&ts.value, ts.span)?;
                }
                ok(rtm::matmul(&x, &y, acc))
            },
        ),
        "softmax" => Value::native("softmax", "softmax(x, axis=-1)", |_, args| {
            let a = args.bind("softmax", &["x"], &["axis"])?;
            ok(rtm::softmax(&tens(&a, 0)?, axis_opt(&a, 1)?.unwrap_or(-1)))
        }),
        "layernorm" => Value::native(
            "layernorm",
            "layernorm(x, weight=None, bias=None, eps=1e-5)",
            |_, args| {
                let a = args.bind("layernorm", &["x"], &["weight", "bias", "eps"])?;
                let eps = opt(&a, 3)
                    .map(|x| x.float("eps"))
                    .transpose()?
                    .unwrap_or(1e-5);
                let (w, b) = (tens_opt(&a, 1)?, tens_opt(&a, 2)?);
                ok(rtm::layernorm(&tens(&a, 0)?, w.as_ref(), b.as_ref(), eps))
            },
        ),
        "rmsnorm" => Value::native("rmsnorm", "rmsnorm(x, weight=None, eps=1e-6)", |_, args| {
            let a = args.bind("rmsnorm", &["x"], &["weight", "eps"])?;
            let eps = opt(&a, 2)
                .map(|x| x.float("eps"))
                .transpose()?
                .unwrap_or(1e-6);
            let w = tens_opt(&a, 1)?;
            ok(rtm::rmsnorm(&tens(&a, 0)?, w.as_ref(), eps))
        }),
        "transpose" => Value::native("transpose", "transpose(x, perm=None)", |_, args| {
            let a = args.bind("transpose", &["x"], &["perm"])?;
            let t = tens(&a, 0)?;
            let perm = match opt(&a, 1) {
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
        }),
        "reshape" => Value::native("reshape", "reshape(x, shape)", |_, args| {
            let a = args.bind("reshape", &["x", "shape"], &[])?;
            let s = req(&a, 1)?;
            ok(tens(&a, 0)?.reshape(&ints_arg(&s.value, s.span)?))
        }),
        "concat" => Value::native("concat", "concat(xs, axis=0)", |it: &mut Interp, args| {
            let a = args.bind("concat", &["xs"], &["axis"])?;
            let xs = req(&a, 0)?;
            let items = it.iterate(&xs.value, xs.span)?;
            let ts = items
                .iter()
                .map(|v| tensor_arg(v, xs.span))
                .collect::<Result<Vec<_>, _>>()?;
            ok(rtm::concat(&ts, axis_opt(&a, 1)?.unwrap_or(0)))
        }),
        "flash_attention" => Value::native(
            "flash_attention",
            "flash_attention(Q, K, V, causal=False, scale=None)",
            |_, args| {
                let a = args.bind("flash_attention", &["Q", "K", "V"], &["causal", "scale"])?;
                let causal = match opt(&a, 3) {
                    Some(c) => c.bool("causal")?,
                    None => false,
                };
                let scale = opt(&a, 4).map(|x| x.float("scale")).transpose()?;
                ok(rtm::flash_attention(
                    &tens(&a, 0)?,
                    &tens(&a, 1)?,
                    &tens(&a, 2)?,
                    causal,
                    scale,
                ))
            },
        ),
        "allclose" => Value::native(
            "allclose",
            "allclose(a, b, rtol=1e-5, atol=1e-8)",
            |_, args| {
                let a = args.bind("allclose", &["a", "b"], &["rtol", "atol"])?;
                let rtol = opt(&a, 2)
                    .map(|x| x.float("rtol"))
                    .transpose()?
                    .unwrap_or(1e-5);
                let atol = opt(&a, 3)
                    .map(|x| x.float("atol"))
                    .transpose()?
                    .unwrap_or(1e-8);
                rtm::allclose(&tens(&a, 0)?, &tens(&a, 1)?, rtol, atol)
                    .map(Value::Bool)
                    .map_err(rt)
            },
        ),
        "max_abs_diff" => Value::native("max_abs_diff", "max_abs_diff(a, b)", |_, args| {
            let a = args.bind("max_abs_diff", &["a", "b"], &[])?;
            rtm::max_abs_diff(&tens(&a, 0)?, &tens(&a, 1)?)
                .map(Value::Float)
                .map_err(rt)
        }),
        _ => return None,
    })
}

/// A reduction over several axes: the reduced axes are moved last, merged, and reduced once,
/// so the result rounds once like a single-axis reduction.
fn reduce_axes(
    t: &Tensor,
    r: rtm::ReduceOp,
    axes: &[i64],
    keep: bool,
) -> Result<Value, Diagnostic> {
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
