//! The `dist` module (SPEC §7): device meshes, shard specs, sharded tensors, and operations
//! on them.
//!
//! - `dist.Mesh(axes, shape, devices=None)`, `dist.ShardSpec(partition, mesh_axes)`;
//! - `dist.shard(t, spec, mesh=None)`: a tensor split over a mesh (or a sharded tensor
//!   resharded to another spec), `dist.gather(t)`: the full tensor;
//! - `dist.tensor(shape, dtype, layout=None, mesh=None)`: an abstract tensor (no data);
//! - `dist.all_reduce(t, axis, op="sum")`, `dist.reduce_scatter(t, axis, dim=0, op="sum")`,
//!   `dist.all_gather(t, axis)`: the collectives, called directly.
//!
//! Operations on sharded tensors (`+ - * / ** @`, comparisons, the `op` functions, kernels
//! called with sharded arguments) run per device, one worker thread per device, following the
//! partitioning rules of [`tessera_compiler::schedule::mesh`]; the collectives they need run
//! on [`tessera_runtime::mesh::Local`] (fixed reduction order). Every kernel and collective
//! is a [`Step`] of the mesh Schedule IR, recorded while a log is open (`graph.lower(...,
//! level="schedule")`, a kernel call with `--dump schedule`) and added to the profile while
//! the profiler records. Ops without a rule (shape ops, `concat`, ...) gather their sharded
//! operands and run on the full tensors; the result is an ordinary tensor.

use crate::kernel::Session;
use crate::tensor::*;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tessera_compiler::schedule::mesh as rules;
use tessera_lang::ast::{BinOp, CmpOp, UnaryOp};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, CallArgs, HostObject, HostResult, Interp, Module, Value};
use tessera_lang::Span;
use tessera_runtime::mesh::{
    per_device, Comm, CommKind, Layout, Local, Mesh, Program, RedOp, Sharded, Step,
};
use tessera_runtime::{self as rtm, BinaryOp, DType, Scalar, Tensor};

thread_local! {
    static SESSION: RefCell<Option<Rc<Session>>> = const { RefCell::new(None) };
    /// Open logs of mesh steps (innermost last).
    static LOGS: RefCell<Vec<Program>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<usize> = const { Cell::new(0) };
}

fn next_id() -> usize {
    NEXT_ID.with(|n| {
        let v = n.get();
        n.set(v + 1);
        v
    })
}

/// Opens a log of mesh steps.
pub fn open_log() {
    LOGS.with(|l| l.borrow_mut().push(Program::default()));
}

/// Closes the innermost log; its steps also belong to the enclosing one.
pub fn close_log() -> Program {
    LOGS.with(|l| {
        let mut l = l.borrow_mut();
        let p = l.pop().unwrap_or_default();
        if let Some(outer) = l.last_mut() {
            if outer.mesh.is_none() {
                outer.mesh = p.mesh.clone();
            }
            outer.steps.extend(p.steps.iter().cloned());
        }
        p
    })
}

fn note(mesh: &Mesh, step: Step) {
    LOGS.with(|l| {
        if let Some(p) = l.borrow_mut().last_mut() {
            if p.mesh.is_none() {
                p.mesh = Some(mesh.shape.clone());
            }
            p.steps.push(step.clone());
        }
    });
    SESSION.with(|s| {
        if let Some(s) = &*s.borrow() {
            if s.profile.borrow().active {
                crate::profile::record_mesh_step(s, &mesh.shape, &step);
            }
        }
    });
}

/// Sequential per-device execution (`TESSERA_MESH_THREADS=1`), for checking that results do
/// not depend on the threads.
fn sequential() -> bool {
    std::env::var("TESSERA_MESH_THREADS").is_ok_and(|v| v.trim() == "1")
}

fn rt_at(e: rtm::RuntimeError, span: Span) -> Diagnostic {
    rt(e).at(span)
}

fn e400(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(Code::E0400, msg)
}

// ----- host objects ---------------------------------------------------------------------------

/// `dist.Mesh`.
pub struct MeshObj(pub Arc<Mesh>);

/// One entry of a spec's `partition`.
#[derive(Clone, Debug, PartialEq)]
pub enum PDim {
    Row,
    Col,
    Index(i64),
}

/// `dist.ShardSpec`.
#[derive(Clone, Debug)]
pub struct SpecObj {
    pub partition: Vec<PDim>,
    pub mesh_axes: Vec<String>,
    /// For a layout read back from a tensor: a pending sum over this mesh axis.
    pub partial: Option<String>,
}

/// A tensor split over a mesh.
pub struct ShardedObj {
    pub s: Sharded,
    pub id: usize,
}

pub fn sharded_value(s: Sharded) -> Value {
    Value::host(ShardedObj { s, id: next_id() })
}

fn with_id(s: Sharded, id: usize) -> Value {
    Value::host(ShardedObj { s, id })
}

pub fn as_sharded(v: &Value) -> Option<&ShardedObj> {
    v.downcast::<ShardedObj>()
}

fn tuple_text(items: &[String]) -> String {
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

impl SpecObj {
    fn text(&self) -> String {
        let p: Vec<String> = self
            .partition
            .iter()
            .map(|d| match d {
                PDim::Row => "'row'".into(),
                PDim::Col => "'col'".into(),
                PDim::Index(i) => i.to_string(),
            })
            .collect();
        let a: Vec<String> = self.mesh_axes.iter().map(|a| format!("'{a}'")).collect();
        let mut s = format!(
            "ShardSpec(partition={}, mesh_axes={}",
            tuple_text(&p),
            tuple_text(&a)
        );
        if let Some(x) = &self.partial {
            s.push_str(&format!(", partial='{x}'"));
        }
        s.push(')');
        s
    }

    /// The layout of this spec for a tensor of `ndim` dimensions on `mesh` (E0400 naming the
    /// axis or dimension that does not fit).
    pub fn layout(&self, ndim: usize, mesh: &Mesh) -> Result<Layout, Diagnostic> {
        if self.partition.len() != self.mesh_axes.len() {
            return Err(e400(format!(
                "ShardSpec has {} partition entries but {} mesh axes",
                self.partition.len(),
                self.mesh_axes.len()
            )));
        }
        let mut l = Layout::replicated(ndim);
        for (p, a) in self.partition.iter().zip(&self.mesh_axes) {
            let axis = mesh.axis(a).map_err(rt)?;
            let d = match p {
                PDim::Row if ndim >= 2 => ndim - 2,
                PDim::Row | PDim::Col if ndim >= 1 => ndim - 1,
                PDim::Index(i) if *i >= -(ndim as i64) && *i < ndim as i64 => {
                    if *i < 0 {
                        (*i + ndim as i64) as usize
                    } else {
                        *i as usize
                    }
                }
                _ => {
                    return Err(e400(format!(
                        "partition dimension {} does not exist in a tensor of {ndim} dimensions",
                        match p {
                            PDim::Row => "'row'".to_string(),
                            PDim::Col => "'col'".to_string(),
                            PDim::Index(i) => i.to_string(),
                        }
                    )))
                }
            };
            if l.dims[d].is_some() {
                return Err(e400(format!(
                    "dimension {d} is split twice (over '{}' and '{a}')",
                    mesh.shape.axes[l.dims[d].unwrap_or(0)]
                )));
            }
            if l.dim_of(axis).is_some() {
                return Err(e400(format!("mesh axis '{a}' splits two dimensions")));
            }
            l.dims[d] = Some(axis);
        }
        Ok(l)
    }

    /// The spec of a layout.
    pub fn of(l: &Layout, mesh: &Mesh) -> SpecObj {
        let mut partition = Vec::new();
        let mut mesh_axes = Vec::new();
        for (d, a) in l.dims.iter().enumerate() {
            if let Some(a) = a {
                partition.push(PDim::Index(d as i64));
                mesh_axes.push(mesh.shape.axes[*a].clone());
            }
        }
        SpecObj {
            partition,
            mesh_axes,
            partial: l.partial.map(|p| mesh.shape.axes[p].clone()),
        }
    }
}

fn mesh_text(m: &Mesh) -> String {
    let axes: Vec<String> = m.shape.axes.iter().map(|a| format!("'{a}'")).collect();
    let shape: Vec<String> = m.shape.shape.iter().map(|a| a.to_string()).collect();
    format!(
        "Mesh(axes={}, shape={}, devices={})",
        tuple_text(&axes),
        tuple_text(&shape),
        m.size()
    )
}

fn shape_list(s: &[usize]) -> String {
    let v: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

fn shape_value(s: &[usize]) -> Value {
    Value::tuple(s.iter().map(|d| Value::Int(*d as i64)).collect())
}

impl HostObject for MeshObj {
    fn type_name(&self) -> &'static str {
        "mesh"
    }
    fn repr(&self) -> String {
        mesh_text(&self.0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn get_attr(&self, _: &Value, name: &str, _: &mut Interp) -> Result<Option<Value>, Diagnostic> {
        let m = &self.0;
        Ok(Some(match name {
            "axes" => Value::tuple(m.shape.axes.iter().map(|a| Value::str(a)).collect()),
            "shape" => shape_value(&m.shape.shape),
            "devices" => Value::list(m.devices.iter().map(|d| Value::Int(*d as i64)).collect()),
            "size" => Value::Int(m.size() as i64),
            _ => return Ok(None),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["axes", "shape", "devices", "size"]
    }
    fn same(&self, other: &dyn HostObject) -> bool {
        other
            .as_any()
            .downcast_ref::<MeshObj>()
            .is_some_and(|o| o.0 == self.0)
    }
}

impl HostObject for SpecObj {
    fn type_name(&self) -> &'static str {
        "shard spec"
    }
    fn repr(&self) -> String {
        self.text()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn get_attr(&self, _: &Value, name: &str, _: &mut Interp) -> Result<Option<Value>, Diagnostic> {
        Ok(Some(match name {
            "partition" => Value::tuple(
                self.partition
                    .iter()
                    .map(|p| match p {
                        PDim::Row => Value::str("row"),
                        PDim::Col => Value::str("col"),
                        PDim::Index(i) => Value::Int(*i),
                    })
                    .collect(),
            ),
            "mesh_axes" => Value::tuple(self.mesh_axes.iter().map(|a| Value::str(a)).collect()),
            "partial" => self.partial.as_deref().map_or(Value::None, Value::str),
            _ => return Ok(None),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["partition", "mesh_axes", "partial"]
    }
}

impl ShardedObj {
    fn text(&self) -> String {
        let s = &self.s;
        let mut o = format!(
            "tensor(shape={}, dtype={}",
            shape_list(&s.shape),
            s.dtype.name()
        );
        if s.is_abstract() {
            o.push_str(", abstract");
        }
        o.push_str(&format!(
            ", layout={}, mesh={}, shard={} ×{})",
            SpecObj::of(&s.layout, &s.mesh).text(),
            mesh_text(&s.mesh),
            shape_list(&s.local_shape()),
            s.mesh.size()
        ));
        o
    }
}

/// Sharded-tensor methods: a tensor's ([`crate::tensor::is_tensor_method`]) and `gather`.
fn is_sharded_method(name: &str) -> bool {
    name == "gather" || crate::tensor::is_tensor_method(name)
}

impl HostObject for ShardedObj {
    fn type_name(&self) -> &'static str {
        "tensor"
    }
    fn repr(&self) -> String {
        self.text()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn get_attr(
        &self,
        this: &Value,
        name: &str,
        _: &mut Interp,
    ) -> Result<Option<Value>, Diagnostic> {
        let s = &self.s;
        Ok(Some(match name {
            "shape" => shape_value(&s.shape),
            "dtype" => dtype_value(s.dtype),
            "ndim" => Value::Int(s.shape.len() as i64),
            "is_abstract" => Value::Bool(s.is_abstract()),
            "layout" => Value::host(SpecObj::of(&s.layout, &s.mesh)),
            "mesh" => Value::host(MeshObj(s.mesh.clone())),
            "local_shape" => shape_value(&s.local_shape()),
            "shards" => Value::list(s.shards.iter().cloned().map(tensor_value).collect()),
            "T" => {
                let g = gather_full(self, Span::default())?;
                tensor_value(g.transpose(None).map_err(rt)?)
            }
            _ => {
                let m = crate::tensor::bound_method(this, name, is_sharded_method, sharded_method);
                return Ok(m);
            }
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        crate::tensor::tensor_attr_names(&["mesh", "local_shape", "shards", "gather"])
    }
    fn binary_at(&self, op: BinOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        let me = Value::host(ShardedObj {
            s: self.s.clone(),
            id: self.id,
        });
        let (l, r) = if reflected {
            (other.clone(), me)
        } else {
            (me, other.clone())
        };
        if !is_operand(other) {
            return None;
        }
        Some(match op {
            BinOp::MatMul => matmul(&l, &r, None, span),
            _ => {
                let b = match op {
                    BinOp::Add => BinaryOp::Add,
                    BinOp::Sub => BinaryOp::Sub,
                    BinOp::Mul => BinaryOp::Mul,
                    BinOp::Div => BinaryOp::Div,
                    BinOp::FloorDiv => BinaryOp::FloorDiv,
                    BinOp::Mod => BinaryOp::Mod,
                    BinOp::Pow => BinaryOp::Pow,
                    BinOp::MatMul => return None,
                };
                elementwise_binary(b, &l, &r, span)
            }
        })
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
        self.binary_at(op, other, reflected, Span::default())
    }
    fn compare_at(&self, op: CmpOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        let b = match op {
            CmpOp::Eq => BinaryOp::Eq,
            CmpOp::Ne => BinaryOp::Ne,
            CmpOp::Lt => BinaryOp::Lt,
            CmpOp::Le => BinaryOp::Le,
            CmpOp::Gt => BinaryOp::Gt,
            CmpOp::Ge => BinaryOp::Ge,
            _ => return None,
        };
        if !is_operand(other) {
            return None;
        }
        let me = with_id(self.s.clone(), self.id);
        let (l, r) = if reflected {
            (other.clone(), me)
        } else {
            (me, other.clone())
        };
        Some(elementwise_binary(b, &l, &r, span))
    }
    fn compare(&self, op: CmpOp, other: &Value, reflected: bool) -> HostResult {
        self.compare_at(op, other, reflected, Span::default())
    }
    fn unary_at(&self, op: UnaryOp, span: Span) -> HostResult {
        let me = with_id(self.s.clone(), self.id);
        match op {
            UnaryOp::Neg => Some(map_unary("neg", &me, span, |t| {
                rtm::unary(rtm::UnaryOp::Neg, t)
            })),
            UnaryOp::Pos => Some(Ok(me)),
            UnaryOp::Not => None,
        }
    }
    fn unary(&self, op: UnaryOp) -> HostResult {
        self.unary_at(op, Span::default())
    }
    fn truthy(&self) -> Result<bool, Diagnostic> {
        let t = gather_full(self, Span::default())?;
        TensorObj(t).truthy()
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(match self.s.shape.first() {
            Some(n) => Ok(*n),
            None => Err(Diagnostic::new(Code::E0101, "len() of a 0-d tensor")),
        })
    }
    fn getitem(&self, index: &Value) -> HostResult {
        let t = match gather_full(self, Span::default()) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        TensorObj(t).getitem(index)
    }
}

fn is_operand(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
        || as_tensor(v).is_some()
        || as_sharded(v).is_some()
}

fn sharded_method(
    it: &mut Interp,
    recv: &Value,
    name: &str,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    let Some(me) = as_sharded(recv) else {
        return Err(Diagnostic::new(Code::E0101, "not a tensor"));
    };
    match name {
        "gather" => {
            args.bind("gather", &[], &[])?;
            Ok(tensor_value(gather_full(me, args.span)?))
        }
        "to" | "cast" => {
            let a = args.bind(name, &["dtype"], &[])?;
            let Some(d) = a.into_iter().flatten().next() else {
                return Ok(recv.clone());
            };
            let dt = dtype_arg(&d.value, d.span)?;
            map_unary("cast", recv, args.span, move |t| t.to(dt))
        }
        "tolist" | "item" | "numel" | "reshape" | "transpose" => {
            let full = tensor_value(gather_full(me, args.span)?);
            let m = match full.downcast::<TensorObj>() {
                Some(t) => t.get_attr(&full, name, it)?,
                None => None,
            };
            match m {
                Some(m) => it.call(&m, args),
                None => Err(Diagnostic::new(
                    Code::E0100,
                    format!("tensor has no method '{name}'"),
                )),
            }
        }
        _ => {
            let f = crate::op::function(name).ok_or_else(|| {
                Diagnostic::new(Code::E0100, format!("tensor has no method '{name}'"))
            })?;
            let mut full = CallArgs::new(args.span);
            full.positional.push((recv.clone(), args.span));
            full.positional.extend(args.positional.iter().cloned());
            full.keywords = args.keywords.clone();
            it.call(&f, full)
        }
    }
}

// ----- execution --------------------------------------------------------------------------------

/// A sharded operand of an op: the sharded tensor and its value number.
#[derive(Clone)]
struct Sv {
    s: Sharded,
    id: usize,
}

fn sv_of(v: &Value) -> Option<Sv> {
    as_sharded(v).map(|o| Sv {
        s: o.s.clone(),
        id: o.id,
    })
}

/// Applies the collectives that bring `x` to `to`, then slices locally to it.
fn bring(x: &Sv, to: &Layout) -> Result<Sv, Diagnostic> {
    let mut cur = x.clone();
    for c in rules::reshard(&x.s.layout, to) {
        cur = collective(&cur, c)?;
    }
    let s = cur.s.slice_to(to).map_err(rt)?;
    Ok(Sv { s, id: cur.id })
}

/// Runs one collective and records it.
fn collective(x: &Sv, c: Comm) -> Result<Sv, Diagnostic> {
    let t0 = Instant::now();
    let mut s = x.s.apply(c, &Local).map_err(rt)?;
    if matches!(c.kind, CommKind::AllReduce(_) | CommKind::ReduceScatter(..)) {
        // Partial sums accumulated wider than the tensor's dtype are rounded once, here.
        if s.shards.first().is_some_and(|t| t.dtype() != s.dtype) {
            let dt = s.dtype;
            s.shards = s
                .shards
                .iter()
                .map(|t| t.to(dt))
                .collect::<Result<_, _>>()
                .map_err(rt)?;
        }
    }
    let measured = (!x.s.is_abstract()).then(|| t0.elapsed().as_secs_f64() * 1e6);
    let out = next_id();
    let local = x.s.local_shape();
    let elem = x.s.shards.first().map_or(4, |t| t.dtype().size_bytes());
    note(
        &x.s.mesh,
        Step::Collective {
            comm: c,
            input: x.id,
            out,
            local_shape: local,
            dtype: x.s.dtype.name().to_string(),
            elem_bytes: elem,
            measured_us: measured,
        },
    );
    Ok(Sv { s, id: out })
}

/// Reduces a partial tensor (`all_reduce`); others unchanged.
fn settle(x: &Sv) -> Result<Sv, Diagnostic> {
    match x.s.layout.partial {
        Some(p) => collective(
            x,
            Comm {
                kind: CommKind::AllReduce(RedOp::Sum),
                axis: p,
            },
        ),
        None => Ok(x.clone()),
    }
}

/// Runs `f` on every device's shards of `ins` (all on `layouts` already), one thread per
/// device, and records the kernel.
#[allow(clippy::too_many_arguments)]
fn kernel(
    op: &str,
    ins: &[Sv],
    out_layout: Layout,
    out_dtype: DType,
    flops_per_elem: f64,
    extra_flops: f64,
    f: impl Fn(&[Tensor]) -> rtm::Result<Tensor> + Sync,
) -> Result<Sv, Diagnostic> {
    let mesh = ins[0].s.mesh.clone();
    let abstract_run = ins.iter().any(|x| x.s.is_abstract());
    let t0 = Instant::now();
    let shards = per_device(mesh.size(), abstract_run || sequential(), |r| {
        let local: Vec<Tensor> = ins.iter().map(|x| x.s.shards[r].clone()).collect();
        f(&local)
    })
    .map_err(rt)?;
    let measured = (!abstract_run).then(|| t0.elapsed().as_secs_f64() * 1e6);
    let local_out = shards
        .first()
        .map(|t| t.shape().to_vec())
        .unwrap_or_default();
    let global: Vec<usize> = local_out
        .iter()
        .zip(&out_layout.dims)
        .map(|(&n, d)| d.map_or(n, |a| n * mesh.shape.shape[a]))
        .collect();
    let out_elems: f64 = local_out.iter().map(|&d| d as f64).product();
    let mut bytes = out_elems * out_dtype.size_bytes() as f64;
    for x in ins {
        let n: f64 = x.s.local_shape().iter().map(|&d| d as f64).product();
        bytes += n * x.s.dtype.size_bytes() as f64;
    }
    let out = next_id();
    note(
        &mesh,
        Step::Kernel {
            op: op.to_string(),
            inputs: ins.iter().map(|x| x.id).collect(),
            out,
            in_shapes: ins.iter().map(|x| x.s.local_shape()).collect(),
            out_shape: local_out,
            out_layout: out_layout.clone(),
            dtype: out_dtype.name().to_string(),
            flops: out_elems * flops_per_elem + extra_flops,
            bytes,
            measured_us: measured,
        },
    );
    Ok(Sv {
        s: Sharded {
            mesh,
            layout: out_layout,
            shape: global,
            dtype: out_dtype,
            shards,
        },
        id: out,
    })
}

/// The mesh of the sharded operands (E0400 when they differ).
fn common_mesh(vals: &[&Value]) -> Result<Arc<Mesh>, Diagnostic> {
    let mut m: Option<Arc<Mesh>> = None;
    for v in vals {
        if let Some(o) = as_sharded(v) {
            match &m {
                None => m = Some(o.s.mesh.clone()),
                Some(x) if **x != *o.s.mesh => {
                    return Err(e400(format!(
                        "operands live on different meshes: {} and {}",
                        mesh_text(x),
                        mesh_text(&o.s.mesh)
                    )))
                }
                _ => {}
            }
        }
    }
    m.ok_or_else(|| e400("no operand is sharded"))
}

/// A tensor operand on `mesh`: sharded as it is, or an ordinary tensor replicated (every
/// device shares its buffer).
fn on_mesh(v: &Value, mesh: &Arc<Mesh>, span: Span) -> Result<Sv, Diagnostic> {
    if let Some(x) = sv_of(v) {
        return Ok(x);
    }
    let t = tensor_arg(v, span)?;
    let s = Sharded::split(&t, Layout::replicated(t.ndim()), mesh.clone()).map_err(rt)?;
    Ok(Sv { s, id: next_id() })
}

fn value_of(x: Sv) -> Value {
    with_id(x.s, x.id)
}

fn map_unary(
    name: &str,
    x: &Value,
    span: Span,
    f: impl Fn(&Tensor) -> rtm::Result<Tensor> + Sync,
) -> Result<Value, Diagnostic> {
    let Some(x) = sv_of(x) else {
        return Err(Diagnostic::new(Code::E0101, "expected a sharded tensor").at(span));
    };
    let x = settle(&x)?;
    let probe = f(&Tensor::abstract_tensor(&[], x.s.dtype).map_err(|e| rt_at(e, span))?)
        .map_err(|e| rt_at(e, span))?;
    let l = x.s.layout.clone();
    kernel(name, &[x], l, probe.dtype(), 1.0, 0.0, |t| f(&t[0]))
        .map(value_of)
        .map_err(|d| d.or_at(span))
}

/// `a op b` with NumPy broadcasting; either side may be a scalar or an ordinary tensor.
fn elementwise_binary(op: BinaryOp, a: &Value, b: &Value, span: Span) -> Result<Value, Diagnostic> {
    let mesh = common_mesh(&[a, b])?;
    let scalar = |v: &Value| match v {
        Value::Int(i) => Some(Scalar::Int(*i)),
        Value::Float(f) => Some(Scalar::Float(*f)),
        Value::Bool(x) => Some(Scalar::Bool(*x)),
        _ => None,
    };
    let (sa, sb) = (scalar(a), scalar(b));
    let mut ins = Vec::new();
    for (v, s) in [(a, sa), (b, sb)] {
        if s.is_none() {
            ins.push(on_mesh(v, &mesh, span)?);
        }
    }
    let shapes: Vec<Vec<usize>> = ins.iter().map(|x| x.s.shape.clone()).collect();
    let out_shape = match (sa, sb) {
        (None, None) => rtm::shape::broadcast_shapes(&shapes[0], &shapes[1], op.name())
            .map_err(|e| rt_at(e, span))?,
        _ => shapes[0].clone(),
    };
    let pairs: Vec<(&[usize], &Layout)> = ins
        .iter()
        .map(|x| (x.s.shape.as_slice(), &x.s.layout))
        .collect();
    let (targets, out) = rules::elementwise(&pairs, &out_shape);
    let ins = ins
        .iter()
        .zip(&targets)
        .map(|(x, t)| bring(x, t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|d| d.or_at(span))?;
    let dt = {
        let probe = |x: &Sv| Tensor::abstract_tensor(&[], x.s.dtype);
        let pa = match sa {
            Some(_) => None,
            None => Some(probe(&ins[0]).map_err(rt)?),
        };
        let pb = match sb {
            Some(_) => None,
            None => Some(probe(&ins[ins.len() - 1]).map_err(rt)?),
        };
        let r = match (&pa, &pb, sa, sb) {
            (Some(x), Some(y), _, _) => rtm::binary(op, x, y),
            (Some(x), None, _, Some(s)) => rtm::binary(op, x, s),
            (None, Some(y), Some(s), _) => rtm::binary(op, s, y),
            _ => return Err(Diagnostic::new(Code::E0101, "no tensor operand").at(span)),
        };
        r.map_err(|e| rt_at(e, span))?.dtype()
    };
    kernel(op.name(), &ins, out, dt, 1.0, 0.0, |t| match (sa, sb) {
        (None, None) => rtm::binary(op, &t[0], &t[1]),
        (Some(s), None) => rtm::binary(op, s, &t[0]),
        (None, Some(s)) => rtm::binary(op, &t[0], s),
        (Some(_), Some(_)) => Err(rtm::RuntimeError::args("no tensor operand")),
    })
    .map(value_of)
    .map_err(|d| d.or_at(span))
}

fn matmul(a: &Value, b: &Value, acc: Option<DType>, span: Span) -> Result<Value, Diagnostic> {
    let mesh = common_mesh(&[a, b])?;
    let (x, y) = (on_mesh(a, &mesh, span)?, on_mesh(b, &mesh, span)?);
    if x.s.shape.len() < 2 || y.s.shape.len() < 2 {
        return fallback_binary(a, b, span, |p, q| rtm::matmul(p, q, acc));
    }
    let out_t = {
        let p = Tensor::abstract_tensor(&x.s.shape, x.s.dtype).map_err(rt)?;
        let q = Tensor::abstract_tensor(&y.s.shape, y.s.dtype).map_err(rt)?;
        rtm::matmul(&p, &q, acc).map_err(|e| rt_at(e, span))?
    };
    let (ta, tb, out) = rules::matmul(
        &x.s.shape,
        &x.s.layout,
        &y.s.shape,
        &y.s.layout,
        out_t.shape(),
    );
    let (x, y) = (
        bring(&x, &ta).map_err(|d| d.or_at(span))?,
        bring(&y, &tb).map_err(|d| d.or_at(span))?,
    );
    // A split contraction accumulates its partial sums in fp32 (fp64 for fp64): the
    // reduction rounds once to the result dtype.
    let dt = out_t.dtype();
    let local_acc = if out.partial.is_some() && dt.is_float() && dt != DType::F64 {
        Some(DType::F32)
    } else {
        acc
    };
    let k = x.s.local_shape().last().copied().unwrap_or(1) as f64;
    let mut r = kernel("matmul", &[x, y], out, dt, 2.0 * k, 0.0, move |t| {
        rtm::matmul(&t[0], &t[1], local_acc)
    })
    .map_err(|d| d.or_at(span))?;
    r.s.dtype = dt;
    Ok(value_of(r))
}

/// An op without a partitioning rule: gathers, then runs on the full tensors.
fn fallback_binary(
    a: &Value,
    b: &Value,
    span: Span,
    f: impl Fn(&Tensor, &Tensor) -> rtm::Result<Tensor>,
) -> Result<Value, Diagnostic> {
    let (p, q) = (full_of(a, span)?, full_of(b, span)?);
    f(&p, &q).map(tensor_value).map_err(|e| rt_at(e, span))
}

/// The full tensor of a value (sharded tensors are gathered, with the collectives recorded).
fn full_of(v: &Value, span: Span) -> Result<Tensor, Diagnostic> {
    match as_sharded(v) {
        Some(o) => gather_full(o, span),
        None => tensor_arg(v, span),
    }
}

/// Gathers a sharded tensor: `all_gather` of each split, `all_reduce` of a partial sum.
pub fn gather_full(o: &ShardedObj, span: Span) -> Result<Tensor, Diagnostic> {
    let x = Sv {
        s: o.s.clone(),
        id: o.id,
    };
    let to = Layout::replicated(x.s.shape.len());
    let r = bring(&x, &to).map_err(|d| d.or_at(span))?;
    // Every device now holds the whole tensor; rank 0's copy is the result.
    r.s.shards
        .first()
        .cloned()
        .ok_or_else(|| e400("a mesh without devices").at(span))
}

fn norm_axis(axis: i64, nd: usize, span: Span) -> Result<usize, Diagnostic> {
    let a = if axis < 0 { axis + nd as i64 } else { axis };
    if a < 0 || a as usize >= nd.max(1) {
        return Err(Diagnostic::new(
            Code::E0200,
            format!("axis {axis} is out of range for a tensor of {nd} dimensions"),
        )
        .at(span));
    }
    Ok(a as usize)
}

/// `sum mean max min` of a sharded tensor over one axis or all.
fn reduce(
    name: &str,
    x: &Value,
    axis: Option<i64>,
    keepdim: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let Some(x) = sv_of(x) else {
        return Err(Diagnostic::new(Code::E0101, "expected a tensor").at(span));
    };
    let x = settle(&x)?;
    let nd = x.s.shape.len();
    let axes: Vec<usize> = match axis {
        Some(a) => vec![norm_axis(a, nd, span)?],
        None => (0..nd).collect(),
    };
    let (out, comms) = rules::reduce(&x.s.layout, &axes, keepdim);
    let op = reduce_op(name).ok_or_else(|| e400("not a reduction"))?;
    // A split mean: local sums, summed over the devices, divided by the global count.
    let local_op = if name == "mean" && !comms.is_empty() {
        rtm::ReduceOp::Sum
    } else {
        op
    };
    let ax = axis.map(|a| a as isize);
    let probe = {
        let t = Tensor::abstract_tensor(&x.s.shape, x.s.dtype).map_err(rt)?;
        rtm::reduce(&t, op, ax, keepdim).map_err(|e| rt_at(e, span))?
    };
    let out = if axis.is_none() && !keepdim {
        Layout::replicated(0)
    } else if axis.is_none() {
        Layout::replicated(nd)
    } else {
        out
    };
    let count: f64 = axes.iter().map(|&a| x.s.shape[a] as f64).product();
    let work: f64 = x.s.local_shape().iter().map(|&d| d as f64).product();
    let mut r = kernel(
        &format!("reduce_{name}"),
        &[x],
        out,
        probe.dtype(),
        0.0,
        work,
        move |t| rtm::reduce(&t[0], local_op, ax, keepdim),
    )
    .map_err(|d| d.or_at(span))?;
    let red = match op {
        rtm::ReduceOp::Max => RedOp::Max,
        rtm::ReduceOp::Min => RedOp::Min,
        _ => RedOp::Sum,
    };
    for a in &comms {
        r = collective(
            &r,
            Comm {
                kind: CommKind::AllReduce(red),
                axis: *a,
            },
        )?;
    }
    if name == "mean" && !comms.is_empty() {
        let l = r.s.layout.clone();
        let dt = r.s.dtype;
        r = kernel("div", &[r], l, dt, 1.0, 0.0, move |t| {
            rtm::binary(BinaryOp::Div, &t[0], Scalar::Float(count))
        })?;
    }
    Ok(value_of(r))
}

/// An op that needs `axis` whole on each device (softmax, layernorm, rmsnorm): gathered along
/// it, run locally, sliced back to the input's layout.
fn along_axis(
    name: &str,
    x: &Value,
    axis: i64,
    span: Span,
    f: impl Fn(&Tensor) -> rtm::Result<Tensor> + Sync,
) -> Result<Value, Diagnostic> {
    let Some(x) = sv_of(x) else {
        return Err(Diagnostic::new(Code::E0101, "expected a tensor").at(span));
    };
    let x = settle(&x)?;
    let a = norm_axis(axis, x.s.shape.len(), span)?;
    let keep = x.s.layout.clone();
    let t = rules::gathered(&x.s.layout, a);
    let x = bring(&x, &t).map_err(|d| d.or_at(span))?;
    let dt = x.s.dtype;
    let r = kernel(name, &[x], t, dt, 5.0, 0.0, |t| f(&t[0])).map_err(|d| d.or_at(span))?;
    let s = r.s.slice_to(&keep).map_err(rt)?;
    Ok(value_of(Sv { s, id: r.id }))
}

#[allow(clippy::too_many_arguments)]
fn attention(
    q: &Value,
    k: &Value,
    v: &Value,
    causal: bool,
    scale: Option<f64>,
    span: Span,
) -> Result<Value, Diagnostic> {
    let mesh = common_mesh(&[q, k, v])?;
    let (q, k, v) = (
        on_mesh(q, &mesh, span)?,
        on_mesh(k, &mesh, span)?,
        on_mesh(v, &mesh, span)?,
    );
    let (q, k, v) = (settle(&q)?, settle(&k)?, settle(&v)?);
    if q.s.shape.len() < 2 || k.s.shape.len() < 2 || v.s.shape.len() < 2 {
        return Err(Diagnostic::new(
            Code::E0200,
            "flash_attention: q, k and v must be at least 2-D ([..., seq, d])",
        )
        .at(span));
    }
    let (tq, tk, tv, out) = rules::attention(
        &q.s.shape,
        &q.s.layout,
        &k.s.shape,
        &k.s.layout,
        &v.s.shape,
        &v.s.layout,
        causal,
    );
    let (q, k, v) = (bring(&q, &tq)?, bring(&k, &tk)?, bring(&v, &tv)?);
    let d = 1.0;
    let skv = k.s.local_shape().iter().rev().nth(1).copied().unwrap_or(1) as f64;
    let dt = q.s.dtype;
    kernel(
        "flash_attention",
        &[q, k, v],
        out,
        dt,
        4.0 * skv * d,
        0.0,
        move |t| rtm::flash_attention(&t[0], &t[1], &t[2], causal, scale),
    )
    .map(value_of)
    .map_err(|d| d.or_at(span))
}

// ----- op dispatch ------------------------------------------------------------------------------

fn has_sharded(args: &CallArgs) -> bool {
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

fn arg(a: &[Option<Arg>], i: usize) -> Option<&Arg> {
    a.get(i)
        .and_then(|x| x.as_ref())
        .filter(|x| !matches!(x.value, Value::None))
}

fn need(a: &[Option<Arg>], i: usize, span: Span) -> Result<&Arg, Diagnostic> {
    arg(a, i).ok_or_else(|| Diagnostic::new(Code::E0101, "missing argument").at(span))
}

fn bool_arg(a: &[Option<Arg>], i: usize) -> Result<bool, Diagnostic> {
    match arg(a, i).map(|x| (&x.value, x.span)) {
        None => Ok(false),
        Some((Value::Bool(b), _)) => Ok(*b),
        Some((Value::Int(i), _)) => Ok(*i != 0),
        Some((other, s)) => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a bool, got {}", other.type_name()),
        )
        .at(s)),
    }
}

fn float_arg(a: &[Option<Arg>], i: usize) -> Result<Option<f64>, Diagnostic> {
    match arg(a, i).map(|x| (&x.value, x.span)) {
        None => Ok(None),
        Some((Value::Float(f), _)) => Ok(Some(*f)),
        Some((Value::Int(i), _)) => Ok(Some(*i as f64)),
        Some((other, s)) => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a number, got {}", other.type_name()),
        )
        .at(s)),
    }
}

fn int_arg(a: &[Option<Arg>], i: usize) -> Result<Option<i64>, Diagnostic> {
    match arg(a, i).map(|x| (&x.value, x.span)) {
        None => Ok(None),
        Some((Value::Int(i), _)) => Ok(Some(*i)),
        Some((other, s)) => Err(Diagnostic::new(
            Code::E0101,
            format!("expected an int, got {}", other.type_name()),
        )
        .at(s)),
    }
}

fn sharded_op(
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
    let bin = match name {
        "add" => Some(BinaryOp::Add),
        "sub" => Some(BinaryOp::Sub),
        "mul" => Some(BinaryOp::Mul),
        "div" => Some(BinaryOp::Div),
        "pow" => Some(BinaryOp::Pow),
        "maximum" => Some(BinaryOp::Maximum),
        "minimum" => Some(BinaryOp::Minimum),
        _ => None,
    };
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
                _ => int_arg(&a, 1)?,
            };
            reduce(
                name,
                &need(&a, 0, span)?.value,
                axis,
                bool_arg(&a, 2)?,
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
            let axis = int_arg(&a, 1)?.unwrap_or(-1);
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
                    float_arg(&a, 3)?.unwrap_or(1e-5),
                )
            } else {
                (None, float_arg(&a, 2)?.unwrap_or(1e-6))
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
                bool_arg(&a, 3)?,
                float_arg(&a, 4)?,
                span,
            )
        }
        _ => gathered_call(it, args, eager),
    }
}

/// Calls the eager op on the gathered operands.
fn gathered_call(
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

// ----- the module -------------------------------------------------------------------------------

fn str_items(v: &Value, span: Span, what: &str) -> Result<Vec<String>, Diagnostic> {
    let items: Vec<Value> = match v {
        Value::Str(_) => vec![v.clone()],
        Value::Tuple(t) => t.as_ref().clone(),
        Value::List(l) => l.borrow().clone(),
        other => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("{what} must be a tuple of str, not {}", other.type_name()),
            )
            .at(span))
        }
    };
    items
        .into_iter()
        .map(|x| match x {
            Value::Str(s) => Ok(s.to_string()),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!("{what} must hold str, not {}", other.type_name()),
            )
            .at(span)),
        })
        .collect()
}

fn mesh_arg(v: &Value, span: Span) -> Result<Arc<Mesh>, Diagnostic> {
    v.downcast::<MeshObj>().map(|m| m.0.clone()).ok_or_else(|| {
        Diagnostic::new(
            Code::E0101,
            format!("expected a mesh (dist.Mesh), got {}", v.type_name()),
        )
        .at(span)
    })
}

fn spec_arg(v: &Value, span: Span) -> Result<SpecObj, Diagnostic> {
    v.downcast::<SpecObj>().cloned().ok_or_else(|| {
        Diagnostic::new(
            Code::E0101,
            format!(
                "expected a shard spec (dist.ShardSpec), got {}",
                v.type_name()
            ),
        )
        .at(span)
    })
}

fn axis_of(mesh: &Mesh, v: &Arg) -> Result<usize, Diagnostic> {
    match &v.value {
        Value::Str(s) => mesh.axis(s).map_err(|e| rt_at(e, v.span)),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("axis must be a mesh axis name, not {}", other.type_name()),
        )
        .at(v.span)),
    }
}

fn red_arg(a: &[Option<Arg>], i: usize) -> Result<RedOp, Diagnostic> {
    match arg(a, i) {
        None => Ok(RedOp::Sum),
        Some(x) => match &x.value {
            Value::Str(s) => RedOp::parse(s).ok_or_else(|| {
                Diagnostic::new(Code::E0101, format!("unknown reduction '{s}'"))
                    .at(x.span)
                    .with_help("op is one of 'sum', 'max', 'min'")
            }),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!("op must be a str, not {}", other.type_name()),
            )
            .at(x.span)),
        },
    }
}

fn sharded_arg(a: &Arg) -> Result<Sv, Diagnostic> {
    sv_of(&a.value).ok_or_else(|| {
        Diagnostic::new(
            Code::E0400,
            format!(
                "expected a sharded tensor (dist.shard), got {}",
                a.value.type_name()
            ),
        )
        .at(a.span)
    })
}

/// Every function of the module, with its signature.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("Mesh", "Mesh(axes, shape, devices=None)"),
    ("ShardSpec", "ShardSpec(partition, mesh_axes)"),
    ("shard", "shard(t, spec, mesh=None)"),
    ("gather", "gather(t)"),
    (
        "tensor",
        "tensor(shape, dtype='fp32', layout=None, mesh=None)",
    ),
    ("all_reduce", "all_reduce(t, axis, op='sum')"),
    ("reduce_scatter", "reduce_scatter(t, axis, dim=0, op='sum')"),
    ("all_gather", "all_gather(t, axis)"),
];

/// Builds the `dist` module.
pub fn module(session: Rc<Session>) -> Module {
    SESSION.with(|s| *s.borrow_mut() = Some(session));
    let m = Module::new("dist", "device meshes and sharded tensors");
    m.set(
        "Mesh",
        Value::native("Mesh", FUNCTIONS[0].1, |it, args| {
            let a = args.bind("Mesh", &["axes", "shape"], &["devices"])?;
            let axes_a = need(&a, 0, args.span)?;
            let axes = str_items(&axes_a.value, axes_a.span, "axes")?;
            let sh = need(&a, 1, args.span)?;
            let shape = shape_arg(&sh.value, sh.span)?;
            let devices = match arg(&a, 2) {
                Some(d) => {
                    let v = match &d.value {
                        Value::Range(..) => Value::list(it.iterate(&d.value, d.span)?),
                        other => other.clone(),
                    };
                    Some(shape_arg(&v, d.span)?)
                }
                None => None,
            };
            Mesh::new(axes, shape, devices)
                .map(|m| Value::host(MeshObj(Arc::new(m))))
                .map_err(|e| rt_at(e, args.span))
        }),
    );
    m.set(
        "ShardSpec",
        Value::native("ShardSpec", FUNCTIONS[1].1, |_, args| {
            let a = args.bind("ShardSpec", &["partition", "mesh_axes"], &[])?;
            let p = need(&a, 0, args.span)?;
            let items: Vec<Value> = match &p.value {
                Value::Tuple(t) => t.as_ref().clone(),
                Value::List(l) => l.borrow().clone(),
                other => vec![other.clone()],
            };
            let mut partition = Vec::new();
            for x in items {
                partition.push(match x {
                    Value::Str(s) if &*s == "row" => PDim::Row,
                    Value::Str(s) if &*s == "col" => PDim::Col,
                    Value::Int(i) => PDim::Index(i),
                    other => {
                        return Err(Diagnostic::new(
                            Code::E0400,
                            format!(
                                "partition entries are 'row', 'col' or a dimension index, not {}",
                                other.repr()
                            ),
                        )
                        .at(p.span))
                    }
                });
            }
            let ax = need(&a, 1, args.span)?;
            let mesh_axes = str_items(&ax.value, ax.span, "mesh_axes")?;
            if mesh_axes.len() != partition.len() {
                return Err(e400(format!(
                    "partition names {} dimension(s) but mesh_axes names {} axis(es)",
                    partition.len(),
                    mesh_axes.len()
                ))
                .at(args.span));
            }
            Ok(Value::host(SpecObj {
                partition,
                mesh_axes,
                partial: None,
            }))
        }),
    );
    m.set(
        "shard",
        Value::native("shard", FUNCTIONS[2].1, |_, args| {
            let a = args.bind("shard", &["t", "spec"], &["mesh"])?;
            let t = need(&a, 0, args.span)?;
            let sp = need(&a, 1, args.span)?;
            let spec = spec_arg(&sp.value, sp.span)?;
            if let Some(x) = sv_of(&t.value) {
                let mesh = match arg(&a, 2) {
                    Some(m) => mesh_arg(&m.value, m.span)?,
                    None => x.s.mesh.clone(),
                };
                if *mesh != *x.s.mesh {
                    return Err(e400(
                        "resharding onto another mesh: gather the tensor first (dist.gather)",
                    )
                    .at(args.span));
                }
                let to = spec
                    .layout(x.s.shape.len(), &mesh)
                    .map_err(|d| d.or_at(sp.span))?;
                tessera_runtime::mesh::check_layout(&x.s.shape, &to, &mesh)
                    .map_err(|e| rt_at(e, args.span))?;
                return bring(&x, &to).map(value_of).map_err(|d| d.or_at(args.span));
            }
            let Some(m) = arg(&a, 2) else {
                return Err(Diagnostic::new(
                    Code::E0101,
                    "dist.shard() of an unsharded tensor needs a mesh",
                )
                .at(args.span)
                .with_help("pass it: dist.shard(t, spec, mesh)"));
            };
            let mesh = mesh_arg(&m.value, m.span)?;
            let tt = tensor_arg(&t.value, t.span)?;
            let l = spec
                .layout(tt.ndim(), &mesh)
                .map_err(|d| d.or_at(sp.span))?;
            Sharded::split(&tt, l, mesh)
                .map(sharded_value)
                .map_err(|e| rt_at(e, args.span))
        }),
    );
    m.set(
        "gather",
        Value::native("gather", FUNCTIONS[3].1, |_, args| {
            let a = args.bind("gather", &["t"], &[])?;
            let t = need(&a, 0, args.span)?;
            match as_sharded(&t.value) {
                Some(o) => gather_full(o, t.span).map(tensor_value),
                None => Ok(tensor_value(tensor_arg(&t.value, t.span)?)),
            }
        }),
    );
    m.set(
        "tensor",
        Value::native("tensor", FUNCTIONS[4].1, |_, args| {
            let a = args.bind("tensor", &["shape"], &["dtype", "layout", "mesh"])?;
            let s = need(&a, 0, args.span)?;
            let shape = shape_arg(&s.value, s.span)?;
            let dt = match arg(&a, 1) {
                Some(d) => dtype_arg(&d.value, d.span)?,
                None => DType::F32,
            };
            match (arg(&a, 2), arg(&a, 3)) {
                (None, _) => Tensor::abstract_tensor(&shape, dt)
                    .map(tensor_value)
                    .map_err(|e| rt_at(e, args.span)),
                (Some(_), None) => {
                    Err(e400("a layout needs a mesh: dist.tensor(..., mesh=...)").at(args.span))
                }
                (Some(l), Some(m)) => {
                    let spec = spec_arg(&l.value, l.span)?;
                    let mesh = mesh_arg(&m.value, m.span)?;
                    let lay = spec
                        .layout(shape.len(), &mesh)
                        .map_err(|d| d.or_at(l.span))?;
                    Sharded::abstract_of(&shape, dt, lay, mesh)
                        .map(sharded_value)
                        .map_err(|e| rt_at(e, args.span))
                }
            }
        }),
    );
    m.set(
        "all_reduce",
        Value::native("all_reduce", FUNCTIONS[5].1, |_, args| {
            let a = args.bind("all_reduce", &["t", "axis"], &["op"])?;
            let x = sharded_arg(need(&a, 0, args.span)?)?;
            let ax = axis_of(&x.s.mesh, need(&a, 1, args.span)?)?;
            let op = red_arg(&a, 2)?;
            if let Some(d) = x.s.layout.dim_of(ax) {
                return Err(e400(format!(
                    "all_reduce over '{}': the tensor is split over it along dimension {d}; \
                     the devices hold different parts, not values to reduce",
                    x.s.mesh.shape.axes[ax]
                ))
                .at(args.span)
                .with_help("all_gather it instead, or reduce a replicated or partial tensor"));
            }
            if x.s.layout.partial.is_some_and(|p| p != ax) {
                return Err(
                    e400("the tensor is a partial sum over another mesh axis").at(args.span)
                );
            }
            if x.s.layout.partial.is_some() && op != RedOp::Sum {
                return Err(e400("a partial sum is reduced with op='sum'").at(args.span));
            }
            collective(
                &x,
                Comm {
                    kind: CommKind::AllReduce(op),
                    axis: ax,
                },
            )
            .map(value_of)
            .map_err(|d| d.or_at(args.span))
        }),
    );
    m.set(
        "reduce_scatter",
        Value::native("reduce_scatter", FUNCTIONS[6].1, |_, args| {
            let a = args.bind("reduce_scatter", &["t", "axis"], &["dim", "op"])?;
            let x = sharded_arg(need(&a, 0, args.span)?)?;
            let ax = axis_of(&x.s.mesh, need(&a, 1, args.span)?)?;
            let nd = x.s.shape.len();
            let dim = norm_axis(int_arg(&a, 2)?.unwrap_or(0), nd, args.span)?;
            let op = red_arg(&a, 3)?;
            let p = x.s.mesh.shape.shape[ax];
            if x.s.layout.dim_of(ax).is_some() {
                return Err(e400(format!(
                    "reduce_scatter over '{}': the tensor is already split over it",
                    x.s.mesh.shape.axes[ax]
                ))
                .at(args.span));
            }
            if x.s.layout.dims[dim].is_some() {
                return Err(e400(format!("dimension {dim} is already split")).at(args.span));
            }
            if !x.s.shape[dim].is_multiple_of(p) {
                return Err(e400(format!(
                    "dimension {dim} of size {} is not divisible by mesh axis '{}' of size {p}",
                    x.s.shape[dim], x.s.mesh.shape.axes[ax]
                ))
                .at(args.span));
            }
            collective(
                &x,
                Comm {
                    kind: CommKind::ReduceScatter(op, dim),
                    axis: ax,
                },
            )
            .map(value_of)
            .map_err(|d| d.or_at(args.span))
        }),
    );
    m.set(
        "all_gather",
        Value::native("all_gather", FUNCTIONS[7].1, |_, args| {
            let a = args.bind("all_gather", &["t", "axis"], &[])?;
            let x = sharded_arg(need(&a, 0, args.span)?)?;
            let ax = axis_of(&x.s.mesh, need(&a, 1, args.span)?)?;
            let Some(d) = x.s.layout.dim_of(ax) else {
                return Err(e400(format!(
                    "all_gather over '{}': the tensor is not split over it",
                    x.s.mesh.shape.axes[ax]
                ))
                .at(args.span));
            };
            collective(
                &x,
                Comm {
                    kind: CommKind::AllGather(d),
                    axis: ax,
                },
            )
            .map(value_of)
            .map_err(|d| d.or_at(args.span))
        }),
    );
    m
}

/// The sharded arguments of a call replaced by abstract ones of the same layout (nothing is
/// computed on them), for showing the Schedule IR of a call.
pub fn abstract_args(args: &CallArgs) -> Result<CallArgs, Diagnostic> {
    let abs = |v: &Value| -> Result<Value, Diagnostic> {
        Ok(match as_sharded(v) {
            Some(o) => with_id(
                Sharded::abstract_of(&o.s.shape, o.s.dtype, o.s.layout.clone(), o.s.mesh.clone())
                    .map_err(rt)?,
                o.id,
            ),
            None => v.clone(),
        })
    };
    let mut out = CallArgs::new(args.span);
    for (v, s) in &args.positional {
        out.positional.push((abs(v)?, *s));
    }
    for (k, v, s) in &args.keywords {
        out.keywords.push((k.clone(), abs(v)?, *s));
    }
    Ok(out)
}

/// The sharded arguments replaced by abstract tensors of one device's shard (the per-device
/// kernel's signature) or of the global shape.
pub fn plain_args(args: &CallArgs, local: bool) -> Result<CallArgs, Diagnostic> {
    let abs = |v: &Value| -> Result<Value, Diagnostic> {
        Ok(match as_sharded(v) {
            Some(o) => {
                let shape = if local {
                    o.s.local_shape()
                } else {
                    o.s.shape.clone()
                };
                tensor_value(Tensor::abstract_tensor(&shape, o.s.dtype).map_err(rt)?)
            }
            None => v.clone(),
        })
    };
    let mut out = CallArgs::new(args.span);
    for (v, s) in &args.positional {
        out.positional.push((abs(v)?, *s));
    }
    for (k, v, s) in &args.keywords {
        out.keywords.push((k.clone(), abs(v)?, *s));
    }
    Ok(out)
}

/// Whether a call has a sharded argument.
pub fn call_is_sharded(args: &CallArgs) -> bool {
    has_sharded(args)
}

/// A kernel's results on a mesh: partial sums are reduced (`all_reduce`) before they leave the
/// kernel, so that a kernel returns ordinary sharded tensors.
pub fn settle_value(v: Value) -> Result<Value, Diagnostic> {
    Ok(match &v {
        Value::Tuple(t) => Value::tuple(
            t.iter()
                .cloned()
                .map(settle_value)
                .collect::<Result<_, _>>()?,
        ),
        Value::List(l) => {
            let items = l.borrow().clone();
            Value::list(
                items
                    .into_iter()
                    .map(settle_value)
                    .collect::<Result<_, _>>()?,
            )
        }
        _ => match sv_of(&v) {
            Some(x) if x.s.layout.partial.is_some() => value_of(settle(&x)?),
            _ => v,
        },
    })
}
