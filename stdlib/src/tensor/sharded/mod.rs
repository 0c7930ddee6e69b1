//! Sharded tensors (SPEC §7): a tensor split over a device mesh, its operators and methods,
//! and the op table's forms on a mesh (the sharding rules of `dispatch.rs` and `spectral.rs`;
//! ops without a rule gather their operands). The `dist` module that makes them, and the
//! mesh programs built on them (gradients, compiled kernels per device), are [`crate::dist`].
//!
//! Operations on sharded tensors (`+ - * / ** @`, comparisons, the `op` functions, kernels
//! called with sharded arguments) run per device, one worker thread per device, following the
//! partitioning rules of [`tessera_compiler::schedule::mesh`]; the collectives they need run
//! on [`tessera_runtime::mesh::Local`] (fixed reduction order). Every kernel and collective
//! is a [`Step`] of the mesh Schedule IR, recorded while a log is open (`graph.lower(...,
//! level="schedule")`, a kernel call with `--dump schedule`) and added to the profile while
//! the profiler records. Ops without a rule (shape ops, `concat`, ...) gather their sharded
//! operands and run on the full tensors; the result is an ordinary tensor.
use crate::session::Session;
use crate::tensor::*;
use std::any::Any;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tessera_compiler::schedule::mesh as rules;
use tessera_lang::ast::{BinOp, CmpOp, UnaryOp};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, AttrResult, CallArgs, HostObject, HostResult, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::mesh::{
    per_device, Comm, CommKind, Layout, Local, Mesh, Program, RedOp, Sharded, Step,
};
use tessera_runtime::{self as rtm, BinaryOp, DType, Scalar, Tensor};

mod dispatch;
pub(crate) mod exec;
mod spectral;
pub use dispatch::*;
pub(crate) use exec::gather_full;
use exec::*;
pub use spectral::{m_fft1, m_fft2, m_part};

/// The next value number of a sharded tensor in session `cx`.
pub(crate) fn next_id(cx: &Session) -> usize {
    let v = cx.next_sharded.get();
    cx.next_sharded.set(v + 1);
    v
}

/// Opens a log of mesh steps in session `cx`.
pub fn open_log(cx: &Session) {
    cx.mesh_logs.borrow_mut().push(Program::default());
}

/// Closes the innermost log; its steps also belong to the enclosing one.
pub fn close_log(cx: &Session) -> Program {
    let mut l = cx.mesh_logs.borrow_mut();
    let p = l.pop().unwrap_or_default();
    if let Some(outer) = l.last_mut() {
        if outer.mesh.is_none() {
            outer.mesh = p.mesh.clone();
        }
        outer.steps.extend(p.steps.iter().cloned());
    }
    p
}

/// Records a step in the open log (and in the profile when one is being taken).
pub(crate) fn note(cx: &Session, mesh: &Mesh, step: Step) {
    if let Some(p) = cx.mesh_logs.borrow_mut().last_mut() {
        if p.mesh.is_none() {
            p.mesh = Some(mesh.shape.clone());
        }
        p.steps.push(step.clone());
    }
    if cx.profile.borrow().active {
        crate::profile::record_mesh_step(&cx.profile_sink(), &mesh.shape, &step);
    }
}

/// Sequential per-device execution (`TESSERA_MESH_THREADS=1`), for checking that results do
/// not depend on the threads.
pub(crate) fn sequential() -> bool {
    std::env::var("TESSERA_MESH_THREADS").is_ok_and(|v| v.trim() == "1")
}

pub(crate) fn rt_at(e: rtm::RuntimeError, span: Span) -> Diagnostic {
    rt(e).at(span)
}

pub(crate) fn e400(msg: impl Into<String>) -> Diagnostic {
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

/// A tensor split over a mesh, with its value number and the session that logs its steps.
pub struct ShardedObj {
    pub s: Sharded,
    pub id: usize,
    pub cx: Rc<Session>,
}

/// A new sharded tensor value of session `cx`.
pub(crate) fn new_sharded(cx: &Rc<Session>, s: Sharded) -> Value {
    with_id(cx, s, next_id(cx))
}

pub(crate) fn with_id(cx: &Rc<Session>, s: Sharded, id: usize) -> Value {
    Value::host(ShardedObj {
        s,
        id,
        cx: cx.clone(),
    })
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
    pub(crate) fn text(&self) -> String {
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

pub(crate) fn mesh_text(m: &Mesh) -> String {
    let axes: Vec<String> = m.shape.axes.iter().map(|a| format!("'{a}'")).collect();
    let shape: Vec<String> = m.shape.shape.iter().map(|a| a.to_string()).collect();
    format!(
        "Mesh(axes={}, shape={}, devices={})",
        tuple_text(&axes),
        tuple_text(&shape),
        m.size()
    )
}

pub(crate) fn shape_list(s: &[usize]) -> String {
    let v: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

use crate::tensor::shape_value;

impl HostObject for MeshObj {
    fn type_name(&self) -> &'static str {
        "mesh"
    }
    fn repr(&self) -> String {
        mesh_text(&self.0)
    }
    fn get_attr(&self, _: &Value, name: &str, _: &mut Interp) -> AttrResult {
        let m = &self.0;
        Ok(Some(match name {
            "axes" => Value::tuple(m.shape.axes.iter().map(|a| Value::str(a)).collect()),
            "shape" => shape_value(&m.shape.shape),
            "devices" => Value::list(m.devices().iter().map(|d| Value::Int(*d as i64)).collect()),
            "size" => Value::Int(m.size() as i64),
            _ => return Ok(None),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["axes", "shape", "devices", "size"]
    }
    fn same(&self, other: &dyn HostObject) -> bool {
        (other as &dyn Any)
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
    fn get_attr(&self, _: &Value, name: &str, _: &mut Interp) -> AttrResult {
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
    /// `tensor(shape=[..], dtype=.., abstract, layout=.., ...)` when abstract; a concrete one
    /// prints its values as a tensor does (assembled from the shards without running a
    /// collective), then its layout.
    pub(crate) fn text(&self) -> String {
        let s = &self.s;
        let full = (!s.is_abstract())
            .then(|| s.gather(&Local).ok())
            .flatten()
            .map(|t| t.repr());
        let mut o = match full.as_deref().and_then(|r| r.strip_suffix(')')) {
            Some(values) => values.to_string(),
            None => format!(
                "tensor(shape={}, dtype={}",
                shape_list(&s.shape),
                s.dtype.name()
            ),
        };
        if s.is_abstract() {
            o.push_str(", abstract");
        }
        // uneven splits (`torch.chunk`): the largest shard, the last ones smaller
        let even = s.layout.is_even(&s.shape, &s.mesh.shape);
        o.push_str(&format!(
            ", layout={}, mesh={}, shard={}{} ×{})",
            SpecObj::of(&s.layout, &s.mesh).text(),
            mesh_text(&s.mesh),
            if even { "" } else { "≤" },
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
    fn get_attr(&self, this: &Value, name: &str, _: &mut Interp) -> AttrResult {
        let s = &self.s;
        if let Some(v) = crate::tensor::meta_attr(name, &s.shape, s.dtype) {
            return Ok(Some(v));
        }
        Ok(Some(match name {
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
        let me = with_id(&self.cx, self.s.clone(), self.id);
        let (l, r) = if reflected {
            (other.clone(), me)
        } else {
            (me, other.clone())
        };
        if !is_operand(other) {
            return None;
        }
        if let Err(d) =
            crate::tensor::check_logical(op, self.s.dtype, other).map_err(|d| d.or_at(span))
        {
            return Some(Err(d));
        }
        Some(match BinaryOp::of_operator(op) {
            Some(b) => elementwise_binary(b, &l, &r, span),
            None => matmul(&l, &r, None, span),
        })
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> HostResult {
        self.binary_at(op, other, reflected, Span::default())
    }
    fn compare_at(&self, op: CmpOp, other: &Value, reflected: bool, span: Span) -> HostResult {
        let b = BinaryOp::of_comparison(op)?;
        if !is_operand(other) {
            return None;
        }
        let me = with_id(&self.cx, self.s.clone(), self.id);
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
        let me = with_id(&self.cx, self.s.clone(), self.id);
        match op {
            UnaryOp::Neg => Some(map_unary("neg", &me, span, |t| {
                rtm::unary(rtm::UnaryOp::Neg, t)
            })),
            UnaryOp::Pos => Some(Ok(me)),
            UnaryOp::Invert => Some(
                crate::tensor::check_invert(self.s.dtype)
                    .map_err(|d| d.or_at(span))
                    .and_then(|_| {
                        map_unary("logical_not", &me, span, |t| {
                            rtm::unary(rtm::UnaryOp::Not, t)
                        })
                    }),
            ),
            UnaryOp::Not => None,
        }
    }
    fn unary(&self, op: UnaryOp) -> HostResult {
        self.unary_at(op, Span::default())
    }
    fn truthy(&self) -> Result<bool, Diagnostic> {
        let t = gather_full(self, Span::default())?;
        TensorObj::new(t).truthy()
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(match self.s.shape.first() {
            Some(n) => Ok(*n),
            None => Err(Diagnostic::new(Code::E0101, "len() of a 0-d tensor")),
        })
    }
    fn setitem(&self, _index: &Value, _value: Value) -> Option<Result<(), Diagnostic>> {
        Some(Err(Diagnostic::new(
            Code::E0201,
            "item assignment on a sharded tensor is not supported",
        )
        .with_label("not supported on a sharded tensor")
        .with_help("gather it first (`dist.gather(x)` gives a host tensor), or build the result with `op.where`")))
    }
    fn getitem(&self, index: &Value) -> HostResult {
        let t = match gather_full(self, Span::default()) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        TensorObj::new(t).getitem(index)
    }
}

fn is_operand(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
        || as_tensor(v).is_some()
        || as_sharded(v).is_some()
}

fn sharded_method(it: &mut Interp, call: MethodCall) -> Result<Value, Diagnostic> {
    let me = call.me::<ShardedObj>()?;
    let full = call.with_receiver();
    let MethodCall { recv, name, args } = call;
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
            let f = crate::tensor::op::function(name).ok_or_else(|| {
                Diagnostic::new(Code::E0100, format!("tensor has no method '{name}'"))
            })?;
            it.call(&f, full)
        }
    }
}
