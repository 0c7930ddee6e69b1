//! Tensor methods (`t.to(...)`, `t.sum(axis=0)`), shared by eager, traced and sharded tensors.

use super::*;

/// The shape of `t.reshape((2, 3))`, `t.reshape(2, 3)` or `t.reshape(shape=(2, 3))`.
pub(crate) fn reshape_dims(args: &CallArgs) -> Result<Vec<i64>, Diagnostic> {
    if args.positional.len() == 1 && args.keywords.is_empty() {
        let (v, s) = &args.positional[0];
        ints_arg(v, *s)
    } else if args.keywords.is_empty() {
        let mut d = Vec::new();
        for (v, s) in &args.positional {
            d.extend(ints_arg(v, *s)?);
        }
        Ok(d)
    } else {
        let a = args.bind("reshape", &["shape"], &[])?;
        match a.into_iter().flatten().next() {
            Some(x) => ints_arg(&x.value, x.span),
            None => Ok(Vec::new()),
        }
    }
}

/// Methods of a tensor value (`t.to(...)`, `t.sum(axis=0)`) besides the unary ops of the op
/// table ([`is_tensor_method`] covers both); traced and sharded tensors have the same ones
/// (reading a traced tensor's values is E0201).
pub(crate) const TENSOR_METHODS: &[&str] = &[
    "to",
    "cast",
    "reshape",
    "tolist",
    "item",
    "transpose",
    "sum",
    "mean",
    "max",
    "min",
    "softmax",
    "matmul",
    "numel",
];

/// Whether `name` is a tensor method: [`TENSOR_METHODS`] or a unary op row with `method`.
pub(crate) fn is_tensor_method(name: &str) -> bool {
    TENSOR_METHODS.contains(&name) || TUnary::from_name(name).is_some_and(|u| u.row().method)
}

/// A tensor method's implementation: (interpreter, receiver, method name, arguments).
pub(crate) type MethodFn = fn(&mut Interp, MethodCall) -> Result<Value, Diagnostic>;

/// A call of a bound method of a tensor-like value: the receiver, the method and its arguments.
pub(crate) struct MethodCall<'a> {
    pub recv: &'a Value,
    pub name: &'a str,
    pub args: CallArgs,
}

impl<'a> MethodCall<'a> {
    /// The receiver as the host object `T` it was bound on.
    pub fn me<T: 'static>(&self) -> Result<&'a T, Diagnostic> {
        self.recv
            .downcast::<T>()
            .ok_or_else(|| Diagnostic::new(Code::E0101, "not a tensor").at(self.args.span))
    }

    /// The arguments with the receiver first: `x.f(a, k=b)` as `op.f(x, a, k=b)`.
    pub fn with_receiver(&self) -> CallArgs {
        let span = self.args.span;
        let mut full = CallArgs::new(span);
        full.positional.push((self.recv.clone(), span));
        full.positional.extend(self.args.positional.iter().cloned());
        full.keywords = self.args.keywords.clone();
        full
    }
}

/// The bound method `name` of the tensor-like value `this` (eager, traced or sharded), calling
/// `call`, or `None` when `is_method(name)` says it has none.
pub(crate) fn bound_method(
    this: &Value,
    name: &str,
    is_method: fn(&str) -> bool,
    call: MethodFn,
) -> Option<Value> {
    if !is_method(name) {
        return None;
    }
    let recv = this.clone();
    let m = name.to_string();
    Some(Value::native(
        name,
        &format!("tensor.{name}"),
        move |it, args| {
            let call_ = MethodCall {
                recv: &recv,
                name: &m,
                args,
            };
            call(it, call_)
        },
    ))
}

/// The attribute names of a tensor-like value: the common ones, `extra`, and every method.
pub(crate) fn tensor_attr_names(extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec!["shape", "dtype", "ndim", "T", "is_abstract", "layout"];
    v.extend_from_slice(extra);
    v.extend(tensor_method_names());
    v
}

/// Every tensor method name (for completion).
pub(crate) fn tensor_method_names() -> Vec<&'static str> {
    let unary = tessera_compiler::graph::UNARY_OPS
        .iter()
        .filter(|r| r.method)
        .map(|r| r.name);
    TENSOR_METHODS.iter().copied().chain(unary).collect()
}

pub(crate) fn tensor_method(it: &mut Interp, call: MethodCall) -> Result<Value, Diagnostic> {
    let obj = call.me::<TensorObj>()?;
    if call.name == "to" {
        return to(obj, call.recv, &call.args);
    }
    // the method form of an op pins its result as the op does; the others keep the tensor's
    // placement
    place::within(obj.pin(), || tensor_method_at(it, obj.get(), call))
}

/// `t.to(dtype)`, `t.to(device)`, `t.to(device, dtype)` (either as a keyword too).
fn to(obj: &TensorObj, recv: &Value, args: &CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("to", &[], &["dtype", "device"])?;
    let (mut dtype, mut device) = (None, None);
    let device_kw = args.keywords.iter().any(|(k, _, _)| &**k == "device");
    for (i, x) in a.into_iter().enumerate() {
        let Some(x) = x else { continue };
        let as_device = match &x.value {
            // a dtype's name is a dtype unless given as `device=`
            Value::Str(s) if DType::parse(s).is_none() || (i == 1 && device_kw) => {
                Some(s.to_string())
            }
            _ => None,
        };
        match as_device {
            Some(s) => {
                let e = match place::parse_device(&s) {
                    Some(e) => e.map_err(|d| d.at(x.span))?,
                    None => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("'{s}' is neither a dtype nor a device"),
                        )
                        .at(x.span)
                        .with_label("not a dtype or device")
                        .with_help(format!(
                            "devices are {}; dtypes are {}",
                            place::device_list(),
                            ALL_DTYPES
                                .iter()
                                .map(|d| d.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )))
                    }
                };
                device = Some((e, x.span));
            }
            None => dtype = Some(dtype_arg(&x.value, x.span)?),
        }
    }
    let here = obj.place();
    let target = match device {
        Some((e, span)) => {
            if e != here.device {
                place::open(e).map_err(|d| d.at(span))?;
            }
            Place {
                device: e,
                committed: true,
            }
        }
        None => here,
    };
    let t = obj.get();
    match dtype {
        None if device.is_none() => Ok(Value::None),
        None if target.device == here.device => {
            // the tensor itself, placed there for good
            obj.commit();
            Ok(recv.clone())
        }
        None => Ok(place::within(Some(target), || tensor_value(t))),
        Some(d) => {
            let r = place::within(Some(target), || t.to(d).map(tensor_value));
            r.map_err(rt)
        }
    }
}

fn tensor_method_at(it: &mut Interp, t: Tensor, call: MethodCall) -> Result<Value, Diagnostic> {
    let full = call.with_receiver();
    let MethodCall { name, args, .. } = call;
    match name {
        "cast" => {
            let a = args.bind(name, &["dtype"], &[])?;
            let Some(d) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            let dt = dtype_arg(&d.value, d.span)?;
            Ok(tensor_value(t.to(dt).map_err(rt)?))
        }
        "reshape" => {
            let dims = reshape_dims(&args)?;
            Ok(tensor_value(t.reshape(&dims).map_err(rt)?))
        }
        "tolist" => {
            args.bind("tolist", &[], &[])?;
            Ok(value_from_nested(t.tolist().map_err(rt)?))
        }
        "item" => {
            args.bind("item", &[], &[])?;
            Ok(scalar_value(t.item().map_err(rt)?))
        }
        "numel" => {
            args.bind("numel", &[], &[])?;
            Ok(Value::Int(t.numel() as i64))
        }
        _ => {
            // The method form of an `op` function: `t.sum(axis=0)` is `op.sum(t, axis=0)`.
            let f = crate::tensor::op::function(name).ok_or_else(|| {
                Diagnostic::new(Code::E0100, format!("tensor has no method '{name}'"))
            })?;
            it.call(&f, full)
        }
    }
}
