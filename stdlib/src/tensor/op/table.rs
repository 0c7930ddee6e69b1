//! The op table: one row per `op.` function, and the one place an op call is dispatched.
//!
//! A row names the op and gives its signature (the text `help` shows; the parameters and which
//! of them are optional are read from it, so binding and help agree), and its forms: the eager
//! implementation ([`super::eager`]), the Graph IR builder the tracer runs
//! ([`crate::tensor::trace`]), the sharding rule sharded execution runs ([`crate::tensor::sharded`]) and, for
//! the derivatives work, its derivative. The shape and dtype rule is the eager form itself:
//! the tracer runs it on shape-only tensors, so traced and eager ops agree on every shape and
//! dtype error.
//!
//! The elementwise, reduction and row-function rows are made from the compiler's tables
//! ([`UNARY_OPS`], [`BINARY_OPS`], [`REDUCE_OPS`], [`ROW_FNS`]), which carry their dtype rules, lowerings and derivatives:
//! a new unary op is a row there, its eager kernel and its lowering.
//!
//! [`call`] binds the arguments once and picks the form: sharded when an argument is a sharded
//! tensor, traced when one is a traced tensor, eager otherwise.

use super::eager;
use crate::tensor::sharded;
use crate::tensor::trace;
use crate::tensor::trace::TraceCtx;
use std::rc::Rc;
use std::sync::LazyLock;
use tessera_compiler::graph::{OpVjp, RowFn, BINARY_OPS, REDUCE_OPS, ROW_FNS, UNARY_OPS};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, CallArgs, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::{BinaryOp, ReduceOp, UnaryOp};

/// One call of an op: its row and its arguments bound to the row's parameters.
pub struct Call<'r> {
    pub row: &'r OpRow,
    /// The arguments in parameter order (`None`: not given).
    pub a: Vec<Option<Arg>>,
    pub span: Span,
}

impl Call<'_> {
    /// The error for a form of one op family run on another's row (a table mistake).
    pub fn not_in_family(&self) -> Diagnostic {
        Diagnostic::new(
            Code::E0101,
            format!("op.{} is not an op of this family", self.row.name),
        )
        .at(self.span)
    }

    /// What the arguments are (and the items of list and tuple arguments, for `concat`): a
    /// sharded tensor among them, else the trace of a traced tensor among them, else neither.
    fn kind_of_args(&self) -> Args {
        // A traced argument makes the call part of the trace, sharded operands included (the
        // tracer records a captured sharded tensor as a param on its mesh).
        let mut trace = None;
        let mut sharded = false;
        let mut see = |v: &Value| {
            sharded |= crate::tensor::sharded::as_sharded(v).is_some();
            if trace.is_none() {
                trace = crate::tensor::trace::as_sym(v).map(|s| s.ctx.clone());
            }
        };
        for x in self.a.iter().flatten() {
            match &x.value {
                Value::List(l) => l.borrow().iter().for_each(&mut see),
                Value::Tuple(t) => t.iter().for_each(&mut see),
                v => see(v),
            }
        }
        match trace {
            Some(ctx) => Args::Traced(ctx),
            None if sharded => Args::Sharded,
            None => Args::Eager,
        }
    }
}

/// Which form of an op a call runs.
enum Args {
    Sharded,
    Traced(Rc<TraceCtx>),
    Eager,
}

pub type EagerFn = fn(&mut Interp, &Call) -> Result<Value, Diagnostic>;
pub type TraceFn = fn(&mut Interp, &Rc<TraceCtx>, &Call) -> Result<Value, Diagnostic>;
pub type MeshFn = fn(&mut Interp, &Call) -> Result<Value, Diagnostic>;

/// What an op does with a traced tensor argument.
#[derive(Clone, Copy)]
pub enum InTrace {
    /// Records Graph IR.
    Record(TraceFn),
    /// Reads tensor values, which a trace does not have (E0201).
    ReadsValues,
    /// Takes no tensors (creation ops): a traced argument is an error (E0201).
    Refused,
}

/// How an op runs when an argument is a sharded tensor.
#[derive(Clone, Copy)]
pub enum OnMesh {
    /// Per device, with the collectives its partitioning rule needs.
    Rule(MeshFn),
    /// On the gathered (whole) operands, by the eager form.
    Gathered,
}

/// The op family of a row made from the compiler's elementwise and reduction tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Reduce(ReduceOp),
    /// A row function ([`ROW_FNS`]).
    Row(RowFn),
    Other,
}

/// One row of the op table.
pub struct OpRow {
    /// `op.<name>`.
    pub name: &'static str,
    /// `layernorm(x, weight=None, bias=None, eps=1e-5)`: shown by `help`, and the parameters.
    pub signature: &'static str,
    pub required: Vec<&'static str>,
    pub optional: Vec<&'static str>,
    pub family: Family,
    pub eager: EagerFn,
    pub trace: InTrace,
    pub mesh: OnMesh,
    /// The derivative for `graph.grad` (Graph IR in, Graph IR out); `None`: none yet. The
    /// elementwise and reduction rows' derivatives are in the compiler's tables.
    pub vjp: Option<OpVjp>,
}

impl OpRow {
    fn new(signature: &'static str, eager: EagerFn, trace: InTrace, mesh: OnMesh) -> OpRow {
        let (name, rest) = signature.split_once('(').unwrap_or((signature, ")"));
        let params = rest.trim_end_matches(')');
        let (mut required, mut optional) = (Vec::new(), Vec::new());
        for p in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.split_once('=') {
                Some((n, _)) => optional.push(n.trim()),
                None => required.push(p),
            }
        }
        OpRow {
            name,
            signature,
            required,
            optional,
            family: Family::Other,
            eager,
            trace,
            mesh,
            vjp: None,
        }
    }

    fn of(self, family: Family) -> OpRow {
        OpRow { family, ..self }
    }
}

/// A signature made at start-up (the elementwise rows'), kept for the process's lifetime.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The table: [`OTHER`], then the reductions, unary and binary ops.
static ROWS: LazyLock<Vec<OpRow>> = LazyLock::new(|| {
    let mut rows: Vec<OpRow> = OTHER
        .iter()
        .map(|&(sig, eager, trace, mesh)| OpRow::new(sig, eager, trace, mesh))
        .collect();
    // the row functions after matmul
    let at = rows
        .iter()
        .position(|r| r.name == "matmul")
        .map_or(0, |i| i + 1);
    for (i, r) in ROW_FNS.iter().enumerate() {
        let (t, m) = (
            InTrace::Record(trace::t_row_fn),
            OnMesh::Rule(sharded::m_row_fn),
        );
        let row = OpRow::new(r.signature, eager::row_fn, t, m).of(Family::Row(r.f));
        rows.insert(at + i, row);
    }
    for r in &REDUCE_OPS {
        let sig = leak(format!("{}(x, axis=None, keepdim=False)", r.name));
        let (t, m) = (
            InTrace::Record(trace::t_reduce_call),
            OnMesh::Rule(sharded::m_reduce),
        );
        rows.push(OpRow::new(sig, eager::reduce, t, m).of(Family::Reduce(r.op)));
    }
    for u in UNARY_OPS.iter().filter(|u| u.function) {
        let sig = leak(format!("{}(x)", u.name));
        let (t, m) = (
            InTrace::Record(trace::t_unary_call),
            OnMesh::Rule(sharded::m_unary),
        );
        rows.push(OpRow::new(sig, eager::unary, t, m).of(Family::Unary(u.op)));
    }
    for b in BINARY_OPS.iter().filter(|b| b.function) {
        let sig = leak(format!("{}(a, b)", b.name));
        let (t, m) = (
            InTrace::Record(trace::t_binary_call),
            OnMesh::Rule(sharded::m_binary),
        );
        rows.push(OpRow::new(sig, eager::binary, t, m).of(Family::Binary(b.op)));
    }
    rows
});

/// The rows that are not elementwise or reductions: signature, eager form, traced form and
/// sharded form.
#[rustfmt::skip]
const OTHER: [(&str, EagerFn, InTrace, OnMesh); 45] = {
    use crate::tensor::sharded as m;
    use crate::tensor::trace as t;
    use InTrace::{ReadsValues, Record as R, Refused};
    use OnMesh::{Gathered, Rule};
    [
        ("tensor(data, dtype=None)", eager::tensor, R(t::t_tensor), Gathered),
        ("zeros(shape, dtype='fp32')", eager::filled, Refused, Gathered),
        ("ones(shape, dtype='fp32')", eager::filled, Refused, Gathered),
        ("full(shape, value, dtype=None)", eager::full, Refused, Gathered),
        ("arange(start, stop=None, step=1, dtype=None)", eager::arange, Refused, Gathered),
        ("linspace(start, stop, num=50, dtype='fp32')", eager::linspace, Refused, Gathered),
        ("eye(n, dtype='fp32')", eager::eye, Refused, Gathered),
        ("rand(shape, dtype='fp32', seed=None)", eager::filled, Refused, Gathered),
        ("randn(shape, dtype='fp32', seed=None)", eager::filled, Refused, Gathered),
        ("randint(low, high, shape, seed=None)", eager::randint, Refused, Gathered),
        ("where(cond, a, b)", eager::where_, R(t::t_where), Gathered),
        ("cast(x, dtype)", eager::cast, R(t::t_tensor), Rule(m::m_cast)),
        ("matmul(A, B, accum_dtype=None, tile_shape=None)", eager::matmul, R(t::t_matmul_call), Rule(m::m_matmul)),
        ("layernorm(x, weight=None, bias=None, eps=1e-5)", eager::layernorm, R(t::t_norm), Rule(m::m_norm)),
        ("rmsnorm(x, weight=None, eps=1e-6)", eager::rmsnorm, R(t::t_norm), Rule(m::m_norm)),
        ("transpose(x, perm=None)", eager::transpose, R(t::t_transpose_call), Gathered),
        ("reshape(x, shape)", eager::reshape, R(t::t_reshape_call), Gathered),
        ("concat(xs, axis=0)", eager::concat, R(t::t_concat), Gathered),
        ("flash_attention(Q, K, V, causal=False, scale=None)", eager::flash_attention, R(t::t_attention), Rule(m::m_attention)),
        ("conv1d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, algorithm='auto')", eager::conv1d, R(t::t_conv1d), Gathered),
        ("conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, algorithm='auto')", eager::conv2d, R(t::t_conv2d), Gathered),
        ("allclose(a, b, rtol=1e-5, atol=1e-8)", eager::allclose, ReadsValues, Gathered),
        ("max_abs_diff(a, b)", eager::max_abs_diff, ReadsValues, Gathered),
        ("clip(x, min=None, max=None)", eager::clip, R(t::t_clip), Gathered),
        ("stack(xs, axis=0)", eager::stack, Refused, Gathered),
        ("argmax(x, axis=None, keepdim=False)", eager::arg_extreme, Refused, Gathered),
        ("argmin(x, axis=None, keepdim=False)", eager::arg_extreme, Refused, Gathered),
        ("sort(x, axis=-1, descending=False)", eager::sort, Refused, Gathered),
        ("topk(x, k, axis=-1, largest=True)", eager::topk, Refused, Gathered),
        ("cumsum(x, axis=None)", eager::cumsum, Refused, Gathered),
        ("save(path, x)", eager::save, Refused, Gathered),
        ("load(path)", eager::load, Refused, Gathered),
        ("complex(re, im)", eager::complex, R(t::t_complex), Gathered),
        ("real(x)", eager::part, R(t::t_part), Rule(m::m_part)),
        ("imag(x)", eager::part, R(t::t_part), Rule(m::m_part)),
        ("conj(x)", eager::part, R(t::t_part), Rule(m::m_part)),
        ("angle(x)", eager::part, R(t::t_part), Rule(m::m_part)),
        ("fft(x, n=None, axis=-1, norm='backward')", eager::fft1, R(t::t_fft1), Rule(m::m_fft1)),
        ("ifft(x, n=None, axis=-1, norm='backward')", eager::fft1, R(t::t_fft1), Rule(m::m_fft1)),
        ("rfft(x, n=None, axis=-1, norm='backward')", eager::fft1, R(t::t_fft1), Rule(m::m_fft1)),
        ("irfft(x, n=None, axis=-1, norm='backward')", eager::fft1, R(t::t_fft1), Rule(m::m_fft1)),
        ("fft2(x, s=None, norm='backward')", eager::fft2, R(t::t_fft2), Rule(m::m_fft2)),
        ("ifft2(x, s=None, norm='backward')", eager::fft2, R(t::t_fft2), Rule(m::m_fft2)),
        ("rfft2(x, s=None, norm='backward')", eager::fft2, R(t::t_fft2), Rule(m::m_fft2)),
        ("irfft2(x, s=None, norm='backward')", eager::fft2, R(t::t_fft2), Rule(m::m_fft2)),
    ]
};

/// Every row.
pub fn rows() -> &'static [OpRow] {
    &ROWS
}

/// The row of `op.<name>`.
pub fn row(name: &str) -> Option<&'static OpRow> {
    ROWS.iter().find(|r| r.name == name)
}

/// Calls `row` with `args`: sharded, traced or eager by what the arguments are.
pub fn call(it: &mut Interp, row: &OpRow, args: &CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind(row.name, &row.required, &row.optional)?;
    let c = Call {
        row,
        a,
        span: args.span,
    };
    match c.kind_of_args() {
        Args::Sharded => match row.mesh {
            OnMesh::Rule(f) => f(it, &c),
            OnMesh::Gathered => crate::tensor::sharded::gathered_call(it, &c),
        },
        Args::Traced(ctx) => crate::tensor::trace::trace_call(it, &ctx, &c),
        Args::Eager => {
            let at = crate::tensor::place::of_operands(c.a.iter().flatten().map(|x| &x.value))
                .map_err(|d| d.at(c.span))?;
            crate::tensor::place::within(at, || (row.eager)(it, &c))
        }
    }
}

/// The native function `op.<name>`.
pub fn function(name: &str) -> Option<Value> {
    let row = row(name)?;
    Some(Value::native(row.name, row.signature, move |it, args| {
        call(it, row, &args)
    }))
}
