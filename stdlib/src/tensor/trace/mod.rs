//! The tracer: runs a kernel body with symbolic tensors and records Graph IR.
//!
//! A kernel parameter becomes a [`SymTensor`]: a host object with a shape and dtype (an abstract
//! runtime tensor, its "aval") and the Graph IR value it stands for. Every `op.*` function, tensor
//! method and operator applied to a symbolic tensor records one op, typed by running the eager op
//! on the abstract avals — so shape and dtype errors are exactly the eager ones. Python scalars
//! become `const` ops; concrete tensors the body meets (globals, `op.ones(...)` inside the body)
//! become `capture` ops: operands of the compiled kernel, read again on every call (a kernel
//! call traces its body each time, see [`crate::kernel`]); sharded tensors the body reads
//! become params after the arguments' ones (the call then runs on their mesh).
//!
//! Host control flow runs (and so unrolls); branching on, or reading, a traced tensor's values
//! is E0201. `print(x)` of a traced tensor shows `tensor(shape=[..], dtype=.., traced)`: there are
//! no values to show (`str()` cannot fail in the evaluator).
//!
//! Spans: an op recorded by a native call (`op.matmul(...)`, `x.sum()`) gets the span of that
//! call. Operators (`a @ b`, `x * 2`, `x[i]`, `x.T`) are reached through `HostObject::binary` and
//! friends, which receive no span: until `lang` passes one, they get the span of the kernel's
//! `def` name.

use crate::tensor::{as_tensor, dtype_arg, ints_arg, rt, tensor_arg, MethodCall};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use tessera_compiler::graph::{self as gir, Graph, Op, ValueId};
use tessera_lang::ast::{BinOp, CmpOp, UnaryOp as AstUnary};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, AttrResult, CallArgs, HostObject, HostResult, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::{
    self as rtm, BinaryOp, DType, IndexItem, Operand, ReduceOp, Scalar, Tensor, UnaryOp,
};

mod ops;
mod spectral;
pub use ops::*;
pub use spectral::{t_complex, t_fft1, t_fft2, t_part};

fn ctype(t: &Tensor) -> gir::TensorType {
    gir::TensorType::new(t.shape().to_vec(), t.dtype())
}

thread_local! {
    /// How many kernel traces are in progress on this thread.
    static TRACING: Cell<usize> = const { Cell::new(0) };
}

/// Whether a kernel body is being traced (host tensors must not be written then: the body
/// is traced, not run, and its writes would happen at trace time only).
pub fn tracing() -> bool {
    TRACING.with(|d| d.get() > 0)
}

thread_local! {
    /// The kernel traces in progress on this thread, innermost last (`schedule.*` calls record
    /// their directives on the innermost).
    static TRACES: RefCell<Vec<Rc<TraceCtx>>> = const { RefCell::new(Vec::new()) };
}

/// Opens `ctx` as the innermost trace in progress.
pub(crate) fn push_trace(ctx: Rc<TraceCtx>) {
    TRACES.with(|t| t.borrow_mut().push(ctx));
}

/// Closes the innermost trace in progress.
pub(crate) fn pop_trace() {
    TRACES.with(|t| t.borrow_mut().pop());
}

/// The innermost trace in progress.
pub fn current_trace() -> Option<Rc<TraceCtx>> {
    TRACES.with(|t| t.borrow().last().cloned())
}

/// Marks a trace in progress until dropped.
pub(crate) struct TracingGuard;

impl TracingGuard {
    pub(crate) fn enter() -> TracingGuard {
        TRACING.with(|d| d.set(d.get() + 1));
        TracingGuard
    }
}

impl Drop for TracingGuard {
    fn drop(&mut self) {
        TRACING.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

// ----- the trace context and symbolic tensors -----------------------------------------------

/// One trace in progress: the graph being recorded and what the body captured.
pub struct TraceCtx {
    pub graph: RefCell<Graph>,
    pub captures: RefCell<Vec<Tensor>>,
    /// Sharded tensors the body read from outside (captured): each is a graph param after the
    /// arguments' ones, so that the call runs on their mesh as if they had been passed.
    pub sharded: RefCell<Vec<(Value, ValueId)>>,
    pub directives: RefCell<tessera_compiler::schedule::Directives>,
    /// False once the trace has ended: a traced tensor that escaped cannot be used.
    pub active: Cell<bool>,
    /// The trace is differentiated (`graph.grad`): an op without a derivative says so.
    pub grad: Cell<bool>,
    /// The span given to ops recorded by operators (see the module docs).
    pub op_span: Span,
}

impl TraceCtx {
    pub fn new(name: &str, op_span: Span) -> Rc<TraceCtx> {
        Rc::new(TraceCtx {
            graph: RefCell::new(Graph::new(name)),
            captures: RefCell::new(Vec::new()),
            sharded: RefCell::new(Vec::new()),
            directives: RefCell::new(Default::default()),
            active: Cell::new(true),
            grad: Cell::new(false),
            op_span,
        })
    }

    /// Records an op whose result has the shape and dtype of `aval`.
    fn record(self: &Rc<Self>, op: Op, aval: Tensor, span: Span) -> Value {
        let id = self.graph.borrow_mut().push(op, ctype(&aval), span);
        Value::host(SymTensor {
            ctx: self.clone(),
            id,
            aval,
        })
    }

    /// A new parameter.
    pub fn param(self: &Rc<Self>, t: &Tensor, span: Span) -> Result<Value, Diagnostic> {
        let aval = Tensor::abstract_tensor(t.shape(), t.dtype()).map_err(rt)?;
        let id = self.graph.borrow_mut().add_param(ctype(&aval), span);
        Ok(Value::host(SymTensor {
            ctx: self.clone(),
            id,
            aval,
        }))
    }

    /// The param standing for the captured sharded tensor `v` (its global type), added on its
    /// first use.
    pub(crate) fn sharded_param(
        self: &Rc<Self>,
        v: &Value,
        span: Span,
    ) -> Result<TArg, Diagnostic> {
        let Some(o) = crate::tensor::sharded::as_sharded(v) else {
            return Err(Diagnostic::new(Code::E0500, "not a sharded tensor").at(span));
        };
        let aval = Tensor::abstract_tensor(&o.s.shape, o.s.dtype).map_err(rt)?;
        let known = self.sharded.borrow().iter().find_map(|(w, id)| {
            crate::tensor::sharded::as_sharded(w)
                .is_some_and(|w| std::ptr::eq(w, o))
                .then_some(*id)
        });
        let id = match known {
            Some(id) => id,
            None => {
                let id = self.graph.borrow_mut().add_param(ctype(&aval), span);
                self.sharded.borrow_mut().push((v.clone(), id));
                id
            }
        };
        Ok(TArg::Sym(id, aval))
    }

    /// The value id of an operand, recording a capture or a const as needed. `scalar_dtype`
    /// is the dtype a scalar takes next to the other operand(s).
    fn id_of(self: &Rc<Self>, a: &TArg, scalar_dtype: DType, span: Span) -> ValueId {
        match a {
            TArg::Sym(id, _) => *id,
            TArg::Conc(t, aval) => {
                let index = {
                    let mut c = self.captures.borrow_mut();
                    c.push(t.clone());
                    c.len() - 1
                };
                self.graph
                    .borrow_mut()
                    .push(Op::Capture { index }, ctype(aval), span)
            }
            TArg::Scalar(s) => self.graph.borrow_mut().push(
                Op::Const { value: *s },
                gir::TensorType::new(vec![], scalar_dtype),
                span,
            ),
        }
    }
}

/// Records graph `g` into trace `ctx` (a gradient traced on its own, called inside another
/// trace): `g`'s params take the values of `feeds` (traced tensors of `ctx`, or concrete ones,
/// captured), its captures are captured again in `ctx`, and every other op is recorded with
/// its operands renumbered. Returns `g`'s outputs as traced tensors of `ctx`.
pub fn inline_graph(
    ctx: &Rc<TraceCtx>,
    g: &Graph,
    captures: &[Tensor],
    feeds: &[Value],
    span: Span,
) -> Result<Vec<Value>, Diagnostic> {
    let mut map: Vec<Option<ValueId>> = vec![None; g.len()];
    for id in g.ids() {
        let (Some(op), Some(t)) = (g.op(id), g.ty(id)) else {
            continue;
        };
        let new = match op {
            Op::Param { index } => {
                let v = feeds.get(*index).ok_or_else(|| {
                    Diagnostic::new(Code::E0500, "a gradient parameter has no argument").at(span)
                })?;
                let a = targ(ctx, v, span)?;
                ctx.id_of(&a, t.dtype, span)
            }
            Op::Capture { index } => {
                let c = captures.get(*index).cloned().ok_or_else(|| {
                    Diagnostic::new(Code::E0500, "a gradient capture is missing").at(span)
                })?;
                let aval = Tensor::abstract_tensor(c.shape(), c.dtype()).map_err(rt)?;
                ctx.id_of(&TArg::Conc(c, aval), t.dtype, span)
            }
            other => {
                let mut op = other.clone();
                op.map_operands(&mut |x| map.get(x.index()).copied().flatten().unwrap_or(x));
                ctx.graph.borrow_mut().push(op, t.clone(), g.span(id))
            }
        };
        if let Some(slot) = map.get_mut(id.index()) {
            *slot = Some(new);
        }
    }
    g.outputs
        .iter()
        .map(|o| {
            let id = map.get(o.index()).copied().flatten().ok_or_else(|| {
                Diagnostic::new(Code::E0500, "a gradient output was not recorded").at(span)
            })?;
            let t = g.ty(*o).cloned().ok_or_else(|| {
                Diagnostic::new(Code::E0500, "a gradient output has no type").at(span)
            })?;
            let aval = Tensor::abstract_tensor(&t.shape, t.dtype).map_err(rt)?;
            Ok(Value::host(SymTensor {
                ctx: ctx.clone(),
                id,
                aval,
            }))
        })
        .collect()
}

/// A tensor inside a trace: shape and dtype, no data.
pub struct SymTensor {
    pub ctx: Rc<TraceCtx>,
    pub id: ValueId,
    /// An abstract tensor of the value's shape and dtype.
    pub aval: Tensor,
}

/// An operand of a traced op.
pub enum TArg {
    Sym(ValueId, Tensor),
    /// A concrete tensor and an abstract one of its type.
    Conc(Tensor, Tensor),
    Scalar(Scalar),
}

impl TArg {
    fn aval(&self) -> Operand<'_> {
        match self {
            TArg::Sym(_, a) | TArg::Conc(_, a) => Operand::Tensor(a),
            TArg::Scalar(s) => Operand::Scalar(*s),
        }
    }
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            TArg::Sym(_, a) | TArg::Conc(_, a) => Some(a),
            TArg::Scalar(_) => None,
        }
    }
    /// The operand's abstract tensor, or E0101 for a scalar where a tensor is needed.
    fn need_tensor(&self) -> Result<&Tensor, Diagnostic> {
        self.tensor()
            .ok_or_else(|| Diagnostic::new(Code::E0101, "expected a tensor"))
    }
}

/// `t[index]` of a concrete tensor whose index holds a traced tensor (an embedding table the
/// kernel closes over, indexed by a traced `ids`): traced like a traced tensor's indexing,
/// `t` captured. `None` when no item of the index is traced.
pub fn index_concrete(t: &Tensor, index: &Value) -> Option<Result<Value, Diagnostic>> {
    let parts: Vec<Value> = match index {
        Value::Tuple(items) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let ctx = parts.iter().find_map(as_sym)?.ctx.clone();
    let span = ctx.op_span;
    if !ctx.active.get() {
        return Some(Err(escaped().at(span)));
    }
    Some(
        Tensor::abstract_tensor(t.shape(), t.dtype())
            .map_err(rt)
            .and_then(|a| t_index(&ctx, &TArg::Conc(t.clone(), a), index, span)),
    )
}

pub fn as_sym(v: &Value) -> Option<&SymTensor> {
    v.downcast::<SymTensor>()
}

fn escaped() -> Diagnostic {
    Diagnostic::new(
        Code::E0201,
        "a traced tensor is used outside the kernel that traced it",
    )
    .with_help("return it from the kernel instead of storing it elsewhere")
}

/// An operand of an op traced in `ctx`.
fn targ(ctx: &Rc<TraceCtx>, v: &Value, span: Span) -> Result<TArg, Diagnostic> {
    if let Some(s) = as_sym(v) {
        if !Rc::ptr_eq(&s.ctx, ctx) || !s.ctx.active.get() {
            return Err(escaped().at(span));
        }
        return Ok(TArg::Sym(s.id, s.aval.clone()));
    }
    match v {
        Value::Int(i) => Ok(TArg::Scalar(Scalar::Int(*i))),
        Value::Float(f) => Ok(TArg::Scalar(Scalar::Float(*f))),
        Value::Bool(b) => Ok(TArg::Scalar(Scalar::Bool(*b))),
        _ if crate::tensor::sharded::as_sharded(v).is_some() => ctx.sharded_param(v, span),
        _ => {
            let t = tensor_arg(v, span)?;
            let a = Tensor::abstract_tensor(t.shape(), t.dtype()).map_err(rt)?;
            Ok(TArg::Conc(t, a))
        }
    }
}

/// A tensor operand (a scalar becomes a 0-d tensor, as in eager mode).
fn tens(ctx: &Rc<TraceCtx>, v: &Value, span: Span) -> Result<TArg, Diagnostic> {
    match targ(ctx, v, span)? {
        TArg::Scalar(_) => {
            let t = tensor_arg(v, span)?;
            let a = Tensor::abstract_tensor(t.shape(), t.dtype()).map_err(rt)?;
            Ok(TArg::Conc(t, a))
        }
        t => Ok(t),
    }
}

/// E0201 for a cast to a complex dtype inside a kernel (not compiled: `op.complex(x, 0)`
/// makes the same values).
pub fn refuse_complex(d: DType, span: Span) -> Result<(), Diagnostic> {
    if !d.is_complex() {
        return Ok(());
    }
    Err(Diagnostic::new(
        Code::E0201,
        format!("a cast to {d} inside a kernel is not compiled yet"),
    )
    .at(span)
    .with_label("a cast to a complex dtype")
    .with_help("write op.complex(x, 0.0) for x + 0j, or cast outside @op.kernel"))
}

fn value_error(what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::E0201,
        format!("{what} reads a tensor's values inside a kernel, where tensors are traced"),
    )
    .with_label("no values exist while tracing")
    .with_help("return the tensor from the kernel and read it outside")
}

use tessera_lang::eval::args::{given as opt, required as req};

fn bool_opt(a: &[Option<Arg>], i: usize, what: &str) -> Result<Option<bool>, Diagnostic> {
    opt(a, i).map(|x| x.bool(what)).transpose()
}

fn float_opt(a: &[Option<Arg>], i: usize, what: &str) -> Result<Option<f64>, Diagnostic> {
    opt(a, i)
        .map(|x| match &x.value {
            Value::Int(i) => Ok(*i as f64),
            Value::Float(f) => Ok(*f),
            other => Err(Diagnostic::new(
                Code::E0201,
                format!(
                    "{what} must be a Python number inside a kernel, not {}",
                    other.type_name()
                ),
            )
            .at(x.span)),
        })
        .transpose()
}

fn int_opt(a: &[Option<Arg>], i: usize, what: &str) -> Result<Option<i64>, Diagnostic> {
    opt(a, i).map(|x| x.int(what)).transpose()
}

fn norm_axis(axis: i64, nd: usize) -> Result<usize, Diagnostic> {
    let n = nd as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Diagnostic::new(
            Code::E0500,
            format!("axis {axis} is out of range for a tensor of {nd} dimensions"),
        ));
    }
    Ok(a as usize)
}

// ----- the symbolic tensor as a host object -------------------------------------------------

impl SymTensor {
    fn me(&self) -> TArg {
        TArg::Sym(self.id, self.aval.clone())
    }

    /// `self op other` at `span` (the operator expression's span).
    fn binary_span(&self, op: BinOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        let ctx = &self.ctx;
        let o = match other {
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => targ(ctx, other, span),
            _ if as_sym(other).is_some()
                || as_tensor(other).is_some()
                || crate::tensor::sharded::as_sharded(other).is_some() =>
            {
                targ(ctx, other, span)
            }
            Value::List(_) | Value::Tuple(_) => tens(ctx, other, span),
            _ => return None,
        };
        let o = match o {
            Ok(o) => o,
            Err(e) => return Some(Err(e)),
        };
        let me = self.me();
        let (l, r) = if reflected { (&o, &me) } else { (&me, &o) };
        Some(match BinaryOp::of_operator(op) {
            Some(b) => t_binary(ctx, b, l, r, span),
            None => match (l, r) {
                (TArg::Scalar(_), _) | (_, TArg::Scalar(_)) => {
                    return None;
                }
                _ => t_matmul(ctx, l, r, None, None, span),
            },
        })
    }

    fn compare_span(&self, op: CmpOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        let b = BinaryOp::of_comparison(op)?;
        if !matches!(other, Value::Int(_) | Value::Float(_) | Value::Bool(_))
            && as_sym(other).is_none()
            && as_tensor(other).is_none()
            && crate::tensor::sharded::as_sharded(other).is_none()
        {
            return None;
        }
        let o = match targ(&self.ctx, other, span) {
            Ok(o) => o,
            Err(e) => return Some(Err(e)),
        };
        let me = self.me();
        let (l, r) = if reflected { (&o, &me) } else { (&me, &o) };
        Some(t_binary(&self.ctx, b, l, r, span))
    }
}

impl HostObject for SymTensor {
    fn type_name(&self) -> &'static str {
        "tensor"
    }
    fn repr(&self) -> String {
        let dims: Vec<String> = self.aval.shape().iter().map(|d| d.to_string()).collect();
        format!(
            "tensor(shape=[{}], dtype={}, traced)",
            dims.join(", "),
            self.aval.dtype().name()
        )
    }
    fn get_attr(&self, this: &Value, name: &str, it: &mut Interp) -> AttrResult {
        let t = &self.aval;
        if let Some(v) = crate::tensor::meta_attr(name, t.shape(), t.dtype()) {
            return Ok(Some(v));
        }
        Ok(Some(match name {
            "T" => t_transpose(&self.ctx, &self.me(), None, it.call_span)?,
            "is_abstract" => Value::Bool(true),
            "layout" => Value::None,
            _ => {
                let m = crate::tensor::bound_method(
                    this,
                    name,
                    crate::tensor::is_tensor_method,
                    sym_method,
                );
                return Ok(m);
            }
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        crate::tensor::tensor_attr_names(&[])
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
        self.binary_span(op, other, reflected, self.ctx.op_span)
    }
    fn binary_at(&self, op: BinOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        if let Err(d) =
            crate::tensor::check_logical(op, self.aval.dtype(), other).map_err(|d| d.at(span))
        {
            return Some(Err(d));
        }
        self.binary_span(op, other, reflected, span)
    }
    fn compare(&self, op: CmpOp, other: &Value, reflected: bool) -> HostResult {
        self.compare_span(op, other, reflected, self.ctx.op_span)
    }
    fn compare_at(&self, op: CmpOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        self.compare_span(op, other, reflected, span)
    }
    fn unary(&self, op: AstUnary) -> HostResult {
        self.unary_at(op, self.ctx.op_span)
    }
    fn unary_at(&self, op: AstUnary, span: Span) -> HostResult {
        match op {
            AstUnary::Neg => Some(t_unary(&self.ctx, UnaryOp::Neg, &self.me(), span)),
            AstUnary::Pos => Some(Ok(Value::host(SymTensor {
                ctx: self.ctx.clone(),
                id: self.id,
                aval: self.aval.clone(),
            }))),
            AstUnary::Invert => Some(
                crate::tensor::check_invert(self.aval.dtype())
                    .map_err(|d| d.at(span))
                    .and_then(|_| t_unary(&self.ctx, UnaryOp::Not, &self.me(), span)),
            ),
            AstUnary::Not => None,
        }
    }
    fn truthy(&self) -> Result<bool, Diagnostic> {
        Err(
            Diagnostic::new(Code::E0201, "value-dependent control flow in a kernel")
                .with_label("this condition depends on a traced tensor's values")
                .with_help(
                    "kernels are traced with symbolic tensors: branch on shapes (x.shape[0] > 1), \
             or select values with op.where(cond, a, b)",
                ),
        )
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(match self.aval.shape().first() {
            Some(n) => Ok(*n),
            None => Err(Diagnostic::new(Code::E0101, "len() of a 0-d tensor")),
        })
    }
    fn setitem(&self, _index: &Value, _value: Value) -> Option<Result<(), Diagnostic>> {
        Some(Err(Diagnostic::new(
            Code::E0201,
            "item assignment on a traced tensor is not supported inside a kernel",
        )
        .with_label("not supported inside a kernel")
        .with_help(
            "tensors inside a kernel are values: build the result with `op.where(mask, value, x)`",
        )))
    }
    fn getitem(&self, index: &Value) -> HostResult {
        self.getitem_at(index, self.ctx.op_span)
    }
    fn getitem_at(&self, index: &Value, span: Span) -> HostResult {
        Some(t_index(&self.ctx, &self.me(), index, span))
    }
    fn iter(&self) -> Option<Result<Vec<Value>, Diagnostic>> {
        let n = match self.aval.shape().first() {
            Some(n) => *n,
            None => {
                return Some(Err(Diagnostic::new(
                    Code::E0101,
                    "iteration over a 0-d tensor",
                )))
            }
        };
        Some(
            (0..n)
                .map(|i| {
                    t_index(
                        &self.ctx,
                        &self.me(),
                        &Value::Int(i as i64),
                        self.ctx.op_span,
                    )
                })
                .collect(),
        )
    }
}

fn sym_method(it: &mut Interp, call: MethodCall) -> Result<Value, Diagnostic> {
    let s = call.me::<SymTensor>()?;
    let ctx = s.ctx.clone();
    let span = call.args.span;
    let (name, args) = (call.name, &call.args);
    match name {
        "tolist" | "item" => Err(value_error(&format!(".{name}()")).at(span)),
        "numel" => {
            args.bind("numel", &[], &[])?;
            Ok(Value::Int(s.aval.numel() as i64))
        }
        "reshape" => {
            let dims = crate::tensor::reshape_dims(args)?;
            t_reshape(&ctx, &s.me(), &dims, span)
        }
        _ => {
            let op = if name == "to" { "cast" } else { name };
            trace_op(it, &ctx, op, call.with_receiver())
        }
    }
}
