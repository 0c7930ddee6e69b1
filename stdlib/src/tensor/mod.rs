//! Tensors of each kind and the ops over them. A tensor is eager (this module), traced
//! ([`trace`]: a kernel body's symbolic tensor) or sharded ([`sharded`]: split over a device
//! mesh); the `op` functions are the op table ([`op`]), which calls the eager, traced or
//! sharded form of an op by what its arguments are. The parts call each other by nature: a
//! tensor method or operator of any kind is an `op` function.
//!
//! Here: eager tensors as host objects of the evaluator (values, operators, item assignment),
//! and the conversions between `.tsr` values and runtime types. Dtype values are in `dtype`,
//! indexing in `index`, tensor methods in `methods`.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use tessera_lang::ast::{BinOp, CmpOp, UnaryOp};
use tessera_lang::diag::{suggest, Code, Diagnostic};
use tessera_lang::eval::{AttrResult, CallArgs, HostObject, HostResult, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::{
    binary, unary, BinaryOp, DType, IndexItem, Nested, Operand, ReduceOp, RuntimeError, Scalar,
    Tensor, UnaryOp as TUnary, ALL_DTYPES,
};

mod dtype;
mod index;
mod methods;
pub mod op;
pub mod place;
pub mod sharded;
pub mod trace;

pub use dtype::*;
pub(crate) use index::*;
pub(crate) use methods::*;
pub use place::Place;

/// A runtime error as a diagnostic (the caller's span is attached by the evaluator).
pub fn rt(e: RuntimeError) -> Diagnostic {
    Diagnostic::from(e)
}

/// A tensor value: the tensor and where it lives ([`place`]).
pub struct TensorObj(RefCell<Tensor>, Cell<Place>);

impl TensorObj {
    /// A tensor made now: on the device of the op running, else the session's.
    pub fn new(t: Tensor) -> TensorObj {
        TensorObj(RefCell::new(t), Cell::new(place::current()))
    }

    /// The tensor as it is now (a cheap handle: the storage is shared).
    pub fn get(&self) -> Tensor {
        self.0.borrow().clone()
    }

    /// Where it lives.
    pub fn place(&self) -> Place {
        self.1.get()
    }

    /// Its number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.borrow().ndim()
    }

    /// Where the ops on this tensor alone put their results: its device when it was placed.
    pub(crate) fn pin(&self) -> Option<Place> {
        Some(self.place()).filter(|p| p.committed)
    }

    /// Places the tensor on `device` for good (`t.to(t.device)`).
    pub(crate) fn commit(&self) {
        let p = self.place();
        self.1.set(Place {
            committed: true,
            ..p
        });
    }

    /// Where an op of this tensor with `other` puts its result, or E0800 for two devices.
    fn pin_with(&self, other: &Value) -> Result<Option<Place>, Diagnostic> {
        place::of_pair(self, other)
    }

    /// `x[index] = value`: writes the elements `x[index]` reads, the value broadcast to the
    /// selection and cast to the tensor's dtype (as NumPy assigns). Every name bound to this
    /// tensor sees the new values; tensors made from it earlier (slices, results) keep theirs.
    /// A value placed on another device than a placed tensor is E0800.
    pub fn assign(&self, index: &Value, value: &Value) -> Result<(), Diagnostic> {
        self.pin_with(value)?;
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
            .or_else(|| crate::tensor::trace::as_sym(v).map(|s| s.aval.dtype()))
            .or_else(|| crate::tensor::sharded::as_sharded(v).map(|s| s.s.dtype)),
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
        other => Err(not_a_tensor(other).at(span)),
    }
}

/// What kind of value `v` is, telling the tensors an eager op cannot take (a traced or a
/// sharded tensor, whose type name is `tensor`) from the others.
pub fn kind_name(v: &Value) -> String {
    if crate::tensor::trace::as_sym(v).is_some() {
        "traced tensor".into()
    } else if crate::tensor::sharded::as_sharded(v).is_some() {
        "sharded tensor".into()
    } else {
        v.type_name().to_string()
    }
}

/// The error for a value that is not an ordinary tensor where one is needed: a traced tensor
/// (inside a kernel or a function under `graph.grad`) and a sharded one say so.
pub fn not_a_tensor(v: &Value) -> Diagnostic {
    if crate::tensor::trace::as_sym(v).is_some() {
        Diagnostic::new(
            Code::E0201,
            "this needs a tensor's values, but this tensor is traced (inside a kernel or a function under graph.grad, only its shape and dtype are known)",
        )
        .with_label("a traced tensor")
        .with_help("do this outside the kernel, on the tensors it is called with or returns")
    } else if crate::tensor::sharded::as_sharded(v).is_some() {
        Diagnostic::new(
            Code::E0101,
            "this takes an ordinary tensor, not a sharded one",
        )
        .with_label("a sharded tensor")
        .with_help("gather it first: `dist.gather(x)` gives the whole tensor")
    } else {
        Diagnostic::new(
            Code::E0101,
            format!("expected a tensor, got {}", v.type_name()),
        )
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

impl TensorObj {
    /// `self op other` (an operator, not a comparison) with the result placed as made.
    fn binary_at(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
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

    /// `-self`, `+self`, `~self`, with the result placed as made.
    fn unary_at(&self, op: UnaryOp) -> HostResult {
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
            "T" => place::within(self.pin(), || t.transpose(None).map(tensor_value)).map_err(rt)?,
            "device" => Value::str(&place::device_name(self.place().device)),
            "is_abstract" => Value::Bool(t.is_abstract()),
            "layout" => Value::None,
            _ => return Ok(bound_method(this, name, is_tensor_method, tensor_method)),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        tensor_attr_names(&["device"])
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
        if let Err(d) = check_logical(op, self.get().dtype(), other) {
            return Some(Err(d));
        }
        let at = match self.pin_with(other) {
            Ok(p) => p,
            Err(d) => return Some(Err(d)),
        };
        place::within(at, || self.binary_at(op, other, reflected))
    }
    fn compare(&self, op: CmpOp, other: &Value, reflected: bool) -> HostResult {
        let at = match self.pin_with(other) {
            Ok(p) => p,
            Err(d) => return Some(Err(d)),
        };
        place::within(at, || {
            tensor_binary(&self.get(), BinaryOp::of_comparison(op)?, other, reflected)
        })
    }
    fn unary(&self, op: UnaryOp) -> HostResult {
        place::within(self.pin(), || self.unary_at(op))
    }
    fn getitem(&self, index: &Value) -> HostResult {
        let t = self.get();
        if let Some(r) = crate::tensor::trace::index_concrete(&t, index) {
            return Some(r);
        }
        Some(place::within(self.pin(), || getitem(&t, index)))
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
    fn setitem(&self, index: &Value, value: Value) -> Option<Result<(), Diagnostic>> {
        if crate::tensor::trace::tracing() {
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
