//! Tensors and dtypes as host objects of the evaluator, and the conversions between `.tsr`
//! values and runtime types.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use tessera_lang::ast::{BinOp, CmpOp, UnaryOp};
use tessera_lang::diag::{suggest, Code, Diagnostic};
use tessera_lang::eval::{AttrResult, CallArgs, HostObject, HostResult, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::{
    binary, unary, BinaryOp, DType, IndexItem, Nested, Operand, ReduceOp, RuntimeError, Scalar,
    Tensor, UnaryOp as TUnary, ALL_DTYPES,
};

/// A runtime error as a diagnostic (the caller's span is attached by the evaluator).
pub fn rt(e: RuntimeError) -> Diagnostic {
    Diagnostic::from(e)
}

/// A tensor value.
pub struct TensorObj(RefCell<Tensor>);

impl TensorObj {
    pub fn new(t: Tensor) -> TensorObj {
        TensorObj(RefCell::new(t))
    }

    /// The tensor as it is now (a cheap handle: the storage is shared).
    pub fn get(&self) -> Tensor {
        self.0.borrow().clone()
    }

    /// `x[index] = value`: writes the elements `x[index]` reads, the value broadcast to the
    /// selection and cast to the tensor's dtype (as NumPy assigns). Every name bound to this
    /// tensor sees the new values; tensors made from it earlier (slices, results) keep theirs.
    pub fn assign(&self, index: &Value, value: &Value) -> Result<(), Diagnostic> {
        // The value and the selection are read before the tensor is borrowed for writing
        // (either may be this tensor: `x[:] = x[::-1]`, `x[x > 0] = 0`).
        let cur = self.get();
        // Numbers and lists convert straight to the tensor's dtype (one rounding, as NumPy
        // converts a Python float); a tensor value is cast by `assign_at`.
        let v = match value {
            Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::List(_) | Value::Tuple(_) => {
                let n = nested_from_value(value, Span::default(), 0).map_err(unplaced)?;
                Tensor::from_nested(&n, Some(cur.dtype())).map_err(rt)?
            }
            _ => as_tensor(value).ok_or_else(|| {
                Diagnostic::new(
                    Code::E0101,
                    format!(
                        "cannot assign a {} to elements of a tensor",
                        value.type_name()
                    ),
                )
                .with_help("assign a number, a list of numbers or a tensor")
            })?,
        };
        let offsets = select(&cur, index, true)?;
        drop(cur);
        let mut t = self.0.borrow_mut();
        t.assign_at(&offsets, &v).map_err(rt)
    }
}

/// A dtype value (`op.bf16`, `t.dtype`).
pub struct DTypeObj(pub DType);

pub fn tensor_value(t: Tensor) -> Value {
    Value::host(TensorObj::new(t))
}

pub fn dtype_value(d: DType) -> Value {
    Value::host(DTypeObj(d))
}

/// A shape as a `.tsr` tuple of ints.
pub fn shape_value(s: &[usize]) -> Value {
    Value::tuple(s.iter().map(|d| Value::Int(*d as i64)).collect())
}

/// `t.shape`, `t.dtype` and `t.ndim` of a tensor of any kind (eager, traced, sharded).
pub fn meta_attr(name: &str, shape: &[usize], dtype: DType) -> Option<Value> {
    Some(match name {
        "shape" => shape_value(shape),
        "dtype" => dtype_value(dtype),
        "ndim" => Value::Int(shape.len() as i64),
        _ => return None,
    })
}

/// The tensor held by a value, if it is one.
pub fn as_tensor(v: &Value) -> Option<Tensor> {
    v.downcast::<TensorObj>().map(TensorObj::get)
}

/// `&` and `|` on tensors are elementwise logical and/or (SPEC §2): both operands must be bool
/// (bool tensors, or `True`/`False`). `mine` is the tensor's dtype, `other` the other operand.
/// E0201 otherwise: NumPy's bitwise ops on integer tensors are not supported.
pub fn check_logical(op: BinOp, mine: DType, other: &Value) -> Result<(), Diagnostic> {
    if !matches!(op, BinOp::BitAnd | BinOp::BitOr) {
        return Ok(());
    }
    let theirs = match other {
        Value::Bool(_) => Some(DType::Bool),
        Value::Int(_) => Some(DType::I64),
        Value::Float(_) => Some(DType::F32),
        v => as_tensor(v)
            .map(|t| t.dtype())
            .or_else(|| crate::trace::as_sym(v).map(|s| s.aval.dtype()))
            .or_else(|| crate::dist::as_sharded(v).map(|s| s.s.dtype)),
    };
    match theirs {
        Some(DType::Bool) if mine == DType::Bool => Ok(()),
        _ => {
            let other_name =
                theirs.map_or_else(|| other.type_name().to_string(), |d| d.to_string());
            Err(Diagnostic::new(
                Code::E0201,
                format!(
                    "`{}` on tensors is elementwise logical and needs bool operands, got {mine} and {other_name}",
                    op.symbol()
                ),
            )
            .with_help("compare first (`(x > 0) & (y < 1)`); bitwise ops on integer tensors are not supported"))
        }
    }
}

/// `~t` of a tensor of dtype `d`: logical not of a bool tensor (SPEC §2), else E0201.
pub fn check_invert(d: DType) -> Result<(), Diagnostic> {
    if d == DType::Bool {
        return Ok(());
    }
    Err(Diagnostic::new(
        Code::E0201,
        format!("`~` on tensors is elementwise logical not and needs a bool tensor, got {d}"),
    )
    .with_help(
        "use `op.logical_not`, or compare first; bitwise not of integer tensors is not supported",
    ))
}

/// The diagnostic without its position, for a helper called without one (the evaluator then
/// places it at the expression being evaluated).
fn unplaced(mut d: Diagnostic) -> Diagnostic {
    d.span = None;
    d.label = None;
    d
}

/// A dtype argument: a dtype value or a name (`"bf16"`, `"float32"`).
pub fn dtype_arg(v: &Value, span: Span) -> Result<DType, Diagnostic> {
    if let Some(d) = v.downcast::<DTypeObj>() {
        return Ok(d.0);
    }
    match v {
        Value::Str(s) => DType::parse(s).ok_or_else(|| {
            let mut d = Diagnostic::new(Code::E0201, format!("unknown dtype '{s}'"))
                .at(span)
                .with_label("not a dtype");
            let names: Vec<&str> = ALL_DTYPES.iter().map(|d| d.name()).collect();
            if let Some(sug) = suggest(s, names.iter().copied()) {
                d = d.with_help(format!("did you mean `{sug}`?"));
            } else {
                d = d.with_help(format!("dtypes are {}", names.join(", ")));
            }
            d
        }),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a dtype, got {}", other.type_name()),
        )
        .at(span)),
    }
}

/// The items of an int or a tuple/list (of what `what` names, for the error).
fn int_items(v: &Value, span: Span, what: &str) -> Result<Vec<Value>, Diagnostic> {
    if let Value::Int(_) = v {
        return Ok(vec![v.clone()]);
    }
    v.items().ok_or_else(|| {
        let got = v.type_name();
        Diagnostic::new(Code::E0101, format!("expected {what}, got {got}")).at(span)
    })
}

/// A shape argument: an int or a tuple/list of non-negative ints.
pub fn shape_arg(v: &Value, span: Span) -> Result<Vec<usize>, Diagnostic> {
    let items = int_items(v, span, "a shape (a tuple of ints)")?;
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Value::Int(i) if i >= 0 => out.push(i as usize),
            Value::Int(i) => {
                return Err(Diagnostic::new(
                    Code::E0200,
                    format!("negative dimension {i} in shape"),
                )
                .at(span))
            }
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("shape dimensions must be ints, not {}", other.type_name()),
                )
                .at(span))
            }
        }
    }
    Ok(out)
}

/// Integers of a tuple/list (or one int), e.g. a permutation or a reshape target.
pub fn ints_arg(v: &Value, span: Span) -> Result<Vec<i64>, Diagnostic> {
    let items = int_items(v, span, "a tuple of ints")?;
    items
        .into_iter()
        .map(|x| match x {
            Value::Int(i) => Ok(i),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!("expected an int, got {}", other.type_name()),
            )
            .at(span)),
        })
        .collect()
}

/// Nested lists of numbers → the runtime's `Nested`.
pub fn nested_from_value(v: &Value, span: Span, depth: usize) -> Result<Nested, Diagnostic> {
    if depth > 64 {
        return Err(Diagnostic::new(Code::E0200, "tensor data is nested too deeply").at(span));
    }
    match v {
        Value::Int(i) => Ok(Nested::Int(*i)),
        Value::Float(f) => Ok(Nested::Float(*f)),
        Value::Bool(b) => Ok(Nested::Bool(*b)),
        Value::List(l) => Ok(Nested::List(
            l.borrow()
                .iter()
                .map(|x| nested_from_value(x, span, depth + 1))
                .collect::<Result<_, _>>()?,
        )),
        Value::Tuple(t) => Ok(Nested::List(
            t.iter()
                .map(|x| nested_from_value(x, span, depth + 1))
                .collect::<Result<_, _>>()?,
        )),
        Value::Host(_) => match as_tensor(v) {
            Some(t) => t.tolist().map_err(|e| rt(e).at(span)),
            None => Err(bad_data(v, span)),
        },
        other => Err(bad_data(other, span)),
    }
}

fn bad_data(v: &Value, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::E0101,
        format!(
            "tensor data must be numbers or nested lists, not {}",
            v.type_name()
        ),
    )
    .at(span)
}

/// `Nested` → `.tsr` lists and scalars.
pub fn value_from_nested(n: Nested) -> Value {
    match n {
        Nested::List(items) => Value::list(items.into_iter().map(value_from_nested).collect()),
        Nested::Float(f) => Value::Float(f),
        Nested::Int(i) => Value::Int(i),
        Nested::Bool(b) => Value::Bool(b),
    }
}

pub fn scalar_value(s: Scalar) -> Value {
    match s {
        Scalar::Int(i) => Value::Int(i),
        Scalar::Float(f) => Value::Float(f),
        Scalar::Bool(b) => Value::Bool(b),
    }
}

/// An elementwise operand: a tensor, a Python scalar, or nested lists (made a tensor).
pub enum Opnd {
    T(Tensor),
    S(Scalar),
}

impl Opnd {
    pub fn as_operand(&self) -> Operand<'_> {
        match self {
            Opnd::T(t) => Operand::Tensor(t),
            Opnd::S(s) => Operand::Scalar(*s),
        }
    }
}

pub fn operand(v: &Value, span: Span) -> Result<Opnd, Diagnostic> {
    match v {
        Value::Int(i) => Ok(Opnd::S(Scalar::Int(*i))),
        Value::Float(f) => Ok(Opnd::S(Scalar::Float(*f))),
        Value::Bool(b) => Ok(Opnd::S(Scalar::Bool(*b))),
        _ => tensor_arg(v, span).map(Opnd::T),
    }
}

/// A tensor argument: a tensor, or a number / nested list made into one (like `np.asarray`).
pub fn tensor_arg(v: &Value, span: Span) -> Result<Tensor, Diagnostic> {
    if let Some(t) = as_tensor(v) {
        return Ok(t);
    }
    match v {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::List(_) | Value::Tuple(_) => {
            let n = nested_from_value(v, span, 0)?;
            Tensor::from_nested(&n, None).map_err(|e| rt(e).at(span))
        }
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a tensor, got {}", other.type_name()),
        )
        .at(span)),
    }
}

/// `self op other` with a tensor on one side, or `None` when `other` is not a tensor operand.
fn tensor_binary(t: &Tensor, op: BinaryOp, other: &Value, reflected: bool) -> HostResult {
    let o = match other {
        Value::Int(i) => Opnd::S(Scalar::Int(*i)),
        Value::Float(f) => Opnd::S(Scalar::Float(*f)),
        Value::Bool(b) => Opnd::S(Scalar::Bool(*b)),
        _ => Opnd::T(as_tensor(other)?),
    };
    let r = if reflected {
        binary(op, o.as_operand(), t)
    } else {
        binary(op, t, o.as_operand())
    };
    Some(r.map(tensor_value).map_err(rt))
}

impl HostObject for TensorObj {
    fn type_name(&self) -> &'static str {
        "tensor"
    }
    fn as_number(&self) -> Option<Value> {
        let t = &self.get();
        if t.numel() != 1 || t.is_abstract() {
            return None;
        }
        t.item().ok().map(scalar_value)
    }
    fn repr(&self) -> String {
        self.get().repr()
    }
    fn get_attr(&self, this: &Value, name: &str, _interp: &mut Interp) -> AttrResult {
        let t = &self.get();
        if let Some(v) = meta_attr(name, t.shape(), t.dtype()) {
            return Ok(Some(v));
        }
        Ok(Some(match name {
            "T" => tensor_value(t.transpose(None).map_err(rt)?),
            "is_abstract" => Value::Bool(t.is_abstract()),
            "layout" => Value::None,
            _ => return Ok(bound_method(this, name, is_tensor_method, tensor_method)),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        tensor_attr_names(&[])
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
        if let Err(d) = check_logical(op, self.get().dtype(), other) {
            return Some(Err(d));
        }
        match BinaryOp::of_operator(op) {
            Some(b) => tensor_binary(&self.get(), b, other, reflected),
            None => {
                let o = match other {
                    Value::List(_) | Value::Tuple(_) => tensor_arg(other, Span::default()).ok()?,
                    _ => as_tensor(other)?,
                };
                let r = if reflected {
                    tessera_runtime::matmul(&o, &self.get(), None)
                } else {
                    tessera_runtime::matmul(&self.get(), &o, None)
                };
                Some(r.map(tensor_value).map_err(rt))
            }
        }
    }
    fn compare(&self, op: CmpOp, other: &Value, reflected: bool) -> HostResult {
        tensor_binary(&self.get(), BinaryOp::of_comparison(op)?, other, reflected)
    }
    fn unary(&self, op: UnaryOp) -> HostResult {
        match op {
            UnaryOp::Neg => Some(
                unary(TUnary::Neg, &self.get())
                    .map(tensor_value)
                    .map_err(rt),
            ),
            UnaryOp::Pos => Some(Ok(tensor_value(self.get().clone()))),
            UnaryOp::Invert => Some(check_invert(self.get().dtype()).and_then(|_| {
                unary(TUnary::Not, &self.get())
                    .map(tensor_value)
                    .map_err(rt)
            })),
            UnaryOp::Not => None,
        }
    }
    fn truthy(&self) -> Result<bool, Diagnostic> {
        let t = &self.get();
        if t.numel() != 1 {
            return Err(Diagnostic::new(
                Code::E0500,
                format!(
                    "the truth value of a tensor with {} elements is ambiguous",
                    t.numel()
                ),
            )
            .with_help("reduce it first, e.g. with op.max(x) or op.allclose(a, b)"));
        }
        let s = t.item().map_err(rt)?;
        Ok(match s {
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
            Scalar::Bool(b) => b,
        })
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(match self.get().shape().first() {
            Some(n) => Ok(*n),
            None => Err(Diagnostic::new(Code::E0101, "len() of a 0-d tensor")),
        })
    }
    fn getitem(&self, index: &Value) -> HostResult {
        Some(getitem(&self.get(), index))
    }
    fn setitem(&self, index: &Value, value: Value) -> Option<Result<(), Diagnostic>> {
        if crate::trace::tracing() {
            return Some(Err(Diagnostic::new(
                Code::E0201,
                "item assignment on a concrete tensor inside a kernel is not supported",
            )
            .with_label("not supported inside a kernel")
            .with_help(
                "a kernel is traced once; compute the new tensor with `op.where(mask, value, x)`",
            )));
        }
        Some(self.assign(index, &value))
    }
    fn iter(&self) -> Option<Result<Vec<Value>, Diagnostic>> {
        let t = &self.get();
        Some(match t.shape().first() {
            None => Err(Diagnostic::new(Code::E0101, "iteration over a 0-d tensor")),
            Some(n) => tessera_runtime::memory::check_host(*n, 128, "iterating over a tensor")
                .map_err(rt)
                .and_then(|_| {
                    (0..*n)
                        .map(|i| {
                            t.index(&[IndexItem::Int(i as i64)])
                                .map(tensor_value)
                                .map_err(rt)
                        })
                        .collect()
                }),
        })
    }
}

/// `t[index]`: basic indexing (ints, slices, `None`, `...`), and NumPy's advanced indexing with
/// one advanced item — an int list or int tensor (a gather along its axis; an N-d index gives
/// N dimensions there) or a bool list or bool tensor (a mask over as many axes as it has,
/// which become one axis of the selected elements). Two advanced items are E0101.
pub(crate) fn getitem(t: &Tensor, index: &Value) -> Result<Value, Diagnostic> {
    select(t, index, false).map(tensor_value)
}

/// The elements `t[index]` selects: their values, or (`offsets`) their flat offsets in `t` as
/// an int64 tensor of the same shape, for assignment.
fn select(t: &Tensor, index: &Value, offsets: bool) -> Result<Tensor, Diagnostic> {
    let basic_index = |items: &[IndexItem]| {
        if offsets {
            t.index_offsets(items)
        } else {
            t.index(items)
        }
    };
    let parts: Vec<Value> = match index {
        Value::Tuple(items) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let advanced: Vec<usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Value::List(_)) || as_tensor(p).is_some())
        .map(|(i, _)| i)
        .collect();
    let Some(&p) = advanced.first() else {
        return index_items(index).and_then(|items| basic_index(&items).map_err(rt));
    };
    if advanced.len() > 1 {
        return Err(Diagnostic::new(
            Code::E0101,
            "only one list, integer tensor or mask per index is supported",
        )
        .with_help("index in two steps: `x[rows][:, cols]`"));
    }
    let idx = tensor_arg(&parts[p], Span::default()).map_err(unplaced)?;
    let mask = idx.dtype() == DType::Bool;
    if !mask && !idx.dtype().is_int() && idx.numel() != 0 {
        return Err(Diagnostic::new(
            Code::E0101,
            format!(
                "tensor indices must be integers or bools, not {}",
                idx.dtype()
            ),
        ));
    }
    // the advanced item becomes full slices (one per mask dimension), applied first
    let covers = if mask { idx.ndim().max(1) } else { 1 };
    let full = Value::Slice(Rc::new([Value::None, Value::None, Value::None]));
    let mut basic: Vec<Value> = parts[..p].to_vec();
    basic.extend(std::iter::repeat_n(full, covers));
    basic.extend(parts[p + 1..].iter().cloned());
    let y = basic_index(&index_items(&Value::tuple(basic.clone()))?).map_err(rt)?;
    // the axis of `y` the advanced item landed on: the output dimensions of the items before it
    let is_ellipsis = |v: &Value| v.downcast::<tessera_lang::eval::EllipsisObj>().is_some();
    let consumed = basic
        .iter()
        .filter(|v| matches!(v, Value::Int(_) | Value::Bool(_) | Value::Slice(_)))
        .count();
    let axis: usize = parts[..p]
        .iter()
        .map(|v| match v {
            Value::Int(_) | Value::Bool(_) => 0,
            v if is_ellipsis(v) => t.ndim().saturating_sub(consumed),
            _ => 1,
        })
        .sum();
    let shape = y.shape().to_vec();
    if mask {
        let k = idx.ndim().max(1);
        let span = shape.get(axis..axis + k).unwrap_or(&[]);
        let mshape: Vec<usize> = if idx.ndim() == 0 {
            vec![1]
        } else {
            idx.shape().to_vec()
        };
        if span != mshape.as_slice() {
            return Err(Diagnostic::new(
                Code::E0200,
                format!(
                    "a mask of shape {} does not match the indexed dimensions {}",
                    tessera_runtime::shape::fmt_shape(&mshape),
                    tessera_runtime::shape::fmt_shape(span)
                ),
            ));
        }
        let mut merged: Vec<i64> = shape[..axis].iter().map(|&d| d as i64).collect();
        merged.push(mshape.iter().product::<usize>() as i64);
        merged.extend(shape[axis + k..].iter().map(|&d| d as i64));
        let flat = y.reshape(&merged).map_err(rt)?;
        let picks: Vec<i64> = idx
            .to_i64_vec()
            .map_err(rt)?
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != 0)
            .map(|(i, _)| i as i64)
            .collect();
        return tessera_runtime::take(&flat, &picks, axis).map_err(rt);
    }
    let picks = idx.to_i64_vec().map_err(rt)?;
    let r = tessera_runtime::take(&y, &picks, axis).map_err(rt)?;
    // an N-d index gives N dimensions at the axis
    let mut out: Vec<i64> = shape[..axis].iter().map(|&d| d as i64).collect();
    out.extend(idx.shape().iter().map(|&d| d as i64));
    out.extend(shape[axis + 1..].iter().map(|&d| d as i64));
    r.reshape(&out).map_err(rt)
}

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

/// The items of a tensor index (`x[1, :, None]`), for eager and traced indexing alike.
pub(crate) fn index_items(index: &Value) -> Result<Vec<IndexItem>, Diagnostic> {
    let parts: Vec<Value> = match index {
        Value::Tuple(t) => t.as_ref().clone(),
        other => vec![other.clone()],
    };
    let opt = |v: &Value| -> Result<Option<i64>, Diagnostic> {
        match v {
            Value::None => Ok(None),
            Value::Int(i) => Ok(Some(*i)),
            Value::Bool(b) => Ok(Some(i64::from(*b))),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "slice indices must be ints or None, not {}",
                    other.type_name()
                ),
            )),
        }
    };
    parts
        .iter()
        .map(|p| match p {
            Value::Int(i) => Ok(IndexItem::Int(*i)),
            Value::None => Ok(IndexItem::NewAxis),
            v if v.downcast::<tessera_lang::eval::EllipsisObj>().is_some() => {
                Ok(IndexItem::Ellipsis)
            }
            Value::Slice(s) => Ok(IndexItem::Slice {
                start: opt(&s[0])?,
                stop: opt(&s[1])?,
                step: opt(&s[2])?,
            }),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "tensor indices must be ints, slices, None or ..., not {}",
                    other.type_name()
                ),
            )),
        })
        .collect()
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

fn tensor_method(it: &mut Interp, call: MethodCall) -> Result<Value, Diagnostic> {
    let t = call.me::<TensorObj>()?.get();
    let full = call.with_receiver();
    let MethodCall { name, args, .. } = call;
    match name {
        "to" | "cast" => {
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
            let f = crate::op::function(name).ok_or_else(|| {
                Diagnostic::new(Code::E0100, format!("tensor has no method '{name}'"))
            })?;
            it.call(&f, full)
        }
    }
}

impl HostObject for DTypeObj {
    fn type_name(&self) -> &'static str {
        "dtype"
    }
    fn repr(&self) -> String {
        self.0.name().to_string()
    }
    fn compare(&self, op: CmpOp, other: &Value, _reflected: bool) -> HostResult {
        let o = match other {
            Value::Str(s) => DType::parse(s),
            _ => other.downcast::<DTypeObj>().map(|d| d.0),
        };
        match op {
            CmpOp::Eq => Some(Ok(Value::Bool(o == Some(self.0)))),
            CmpOp::Ne => Some(Ok(Value::Bool(o != Some(self.0)))),
            _ => None,
        }
    }
    fn get_attr(&self, _this: &Value, name: &str, _: &mut Interp) -> AttrResult {
        Ok(match name {
            "name" => Some(Value::str(self.0.name())),
            "itemsize" => Some(Value::Int(self.0.size_bytes() as i64)),
            "is_float" => Some(Value::Bool(self.0.is_float())),
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["name", "itemsize", "is_float"]
    }
    fn same(&self, other: &dyn HostObject) -> bool {
        (other as &dyn Any)
            .downcast_ref::<DTypeObj>()
            .is_some_and(|d| d.0 == self.0)
    }
}

/// The reduction op named `name` (a row of the reduction table).
pub fn reduce_op(name: &str) -> Option<ReduceOp> {
    ReduceOp::from_name(name)
}

/// The unary op bound as `op.<name>` (a row of the op table with `function` set).
pub fn unary_op(name: &str) -> Option<TUnary> {
    TUnary::from_name(name).filter(|u| u.row().function)
}

/// Keeps `Rc` in scope for host values built elsewhere.
pub type Shared<T> = Rc<T>;
