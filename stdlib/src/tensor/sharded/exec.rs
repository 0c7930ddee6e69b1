//! Sharded execution: moving shards between layouts, collectives, and each op kind run
//! over a mesh (elementwise, matmul in every split position, reductions, attention).

use super::*;
use tessera_compiler::graph::{RowFn, RowOut};

// ----- execution --------------------------------------------------------------------------------

/// A sharded operand of an op: the sharded tensor and its value number.
#[derive(Clone)]
pub(crate) struct Sv {
    pub(crate) s: Sharded,
    pub(crate) id: usize,
    pub(crate) cx: Rc<Session>,
}

pub(crate) fn sv_of(v: &Value) -> Option<Sv> {
    as_sharded(v).map(|o| Sv {
        s: o.s.clone(),
        id: o.id,
        cx: o.cx.clone(),
    })
}

/// The mesh of an op's sharded operands and the session they belong to.
pub(crate) struct OnMesh {
    pub(crate) mesh: Arc<Mesh>,
    pub(crate) cx: Rc<Session>,
    /// Some sharded operand is abstract: the result is, so an ordinary operand is replicated
    /// as an abstract copy (shapes only, on a mesh of any size).
    pub(crate) shapes_only: bool,
}

impl std::ops::Deref for OnMesh {
    type Target = Arc<Mesh>;
    fn deref(&self) -> &Arc<Mesh> {
        &self.mesh
    }
}

/// Applies the collectives that bring `x` to `to`, then slices locally to it.
pub(crate) fn bring(x: &Sv, to: &Layout) -> Result<Sv, Diagnostic> {
    let mut cur = x.clone();
    for c in rules::reshard(&x.s.layout, to) {
        cur = collective(&cur, c)?;
    }
    let s = cur.s.slice_to(to).map_err(rt)?;
    Ok(Sv {
        s,
        id: cur.id,
        cx: cur.cx,
    })
}

/// Runs collective `c` on the local mesh. Partial sums accumulated wider than the tensor's
/// dtype are rounded once, after the reduction.
pub(crate) fn reduce_on_local(x: &Sharded, c: Comm) -> rtm::Result<Sharded> {
    let mut s = x.apply(c, &Local)?;
    if matches!(c.kind, CommKind::AllReduce(_) | CommKind::ReduceScatter(..))
        && s.shard_dtype() != s.dtype
    {
        let dt = s.dtype;
        if s.is_abstract() {
            return Sharded::abstract_of(&s.shape, dt, s.layout, s.mesh);
        }
        s.shards = s
            .shards
            .iter()
            .map(|t| t.to(dt))
            .collect::<rtm::Result<Vec<_>>>()?
            .into();
    }
    Ok(s)
}

/// Runs one collective and records it.
pub(crate) fn collective(x: &Sv, c: Comm) -> Result<Sv, Diagnostic> {
    let t0 = Instant::now();
    let s = reduce_on_local(&x.s, c).map_err(rt)?;
    if x.s.mesh.shape.shape.get(c.axis).copied().unwrap_or(1) <= 1 {
        // one device along the axis: nothing moves, no collective is recorded
        return Ok(Sv {
            s,
            id: x.id,
            cx: x.cx.clone(),
        });
    }
    let measured = (!x.s.is_abstract()).then(|| t0.elapsed().as_secs_f64() * 1e6);
    let out = next_id(&x.cx);
    let local = x.s.local_shape();
    // the dtype the shards travel in: a split contraction's partial sums are in its fp32
    // accumulator (rounded to the tensor's dtype after the reduction)
    let travel = x.s.shards.first().map_or(x.s.dtype, Tensor::dtype);
    note(
        &x.cx,
        &x.s.mesh,
        Step::Collective {
            comm: c,
            input: x.id,
            out,
            local_shape: local,
            dtype: travel.name().to_string(),
            elem_bytes: travel.size_bytes(),
            measured_us: measured,
        },
    );
    Ok(Sv {
        s,
        id: out,
        cx: x.cx.clone(),
    })
}

/// Reduces a partial tensor (`all_reduce`); others unchanged.
/// The sharded tensor `v`, settled ([`settle`]); an E0101 when `v` is not one.
fn settled(v: &Value, span: Span) -> Result<Sv, Diagnostic> {
    let x = sv_of(v)
        .ok_or_else(|| Diagnostic::new(Code::E0101, "expected a sharded tensor").at(span))?;
    settle(&x)
}

pub(crate) fn settle(x: &Sv) -> Result<Sv, Diagnostic> {
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
pub(crate) fn kernel(
    op: &str,
    ins: &[Sv],
    out_layout: Layout,
    out_dtype: DType,
    flops_per_elem: f64,
    extra_flops: f64,
    f: impl Fn(&[Tensor]) -> rtm::Result<Tensor> + Sync,
) -> Result<Sv, Diagnostic> {
    let mesh = ins[0].s.mesh.clone();
    let cx = ins[0].cx.clone();
    let abstract_run = ins.iter().any(|x| x.s.is_abstract());
    let t0 = Instant::now();
    let inputs: Vec<&Sharded> = ins.iter().map(|x| &x.s).collect();
    let (shards, global) = if abstract_run {
        abstract_kernel(&mesh, &inputs, &out_layout, out_dtype, &f)?
    } else {
        let shards = per_device(mesh.size(), sequential(), |r| {
            let local: Vec<Tensor> = inputs.iter().map(|x| x.shards[r].clone()).collect();
            f(&local)
        })
        .map_err(rt)?;
        let global = global_shape(&mesh, &out_layout, &shards);
        (shards.into(), global)
    };
    let measured = (!abstract_run).then(|| t0.elapsed().as_secs_f64() * 1e6);
    let local_out = shards
        .first()
        .map(|t| t.shape().to_vec())
        .unwrap_or_default();
    let out_elems: f64 = local_out.iter().map(|&d| d as f64).product();
    let mut bytes = out_elems * out_dtype.size_bytes() as f64;
    for x in ins {
        let n: f64 = x.s.local_shape().iter().map(|&d| d as f64).product();
        bytes += n * x.s.dtype.size_bytes() as f64;
    }
    let out = next_id(&cx);
    note(
        &cx,
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
        cx,
    })
}

/// A per-device kernel on abstract shards, shapes only and O(1) in the number of devices: `f`
/// runs on the first and the last device's shards (the shapes and dtype of the result, and
/// any error a device would give), the global shape is `f`'s on the global shapes, and every
/// device's result shard follows from `out_layout`.
fn abstract_kernel(
    mesh: &Arc<Mesh>,
    inputs: &[&Sharded],
    out_layout: &Layout,
    out_dtype: DType,
    f: &impl Fn(&[Tensor]) -> rtm::Result<Tensor>,
) -> Result<(rtm::mesh::Shards, Vec<usize>), Diagnostic> {
    let n = mesh.size();
    let at = |r: usize| -> rtm::Result<Tensor> {
        let local: Vec<Tensor> = inputs.iter().map(|x| x.shards[r].clone()).collect();
        f(&local)
    };
    let first = at(0).map_err(rt)?;
    if n > 1 {
        at(n - 1).map_err(rt)?;
    }
    let whole: Vec<Tensor> = inputs
        .iter()
        .map(|x| Tensor::abstract_tensor(&x.shape, x.shard_dtype()))
        .collect::<rtm::Result<_>>()
        .map_err(rt)?;
    let global = f(&whole).map_err(rt)?.shape().to_vec();
    let s = Sharded::abstract_in(
        &global,
        out_dtype,
        first.dtype(),
        out_layout.clone(),
        mesh.clone(),
    )
    .map_err(rt)?;
    Ok((s.shards, global))
}

/// The global shape of a tensor laid out as `l` from its shards (indexed by rank): a split
/// dimension is the sum of the shards along its mesh axis (uneven shards included).
pub(crate) fn global_shape(mesh: &Mesh, l: &Layout, shards: &[Tensor]) -> Vec<usize> {
    let Some(first) = shards.first() else {
        return Vec::new();
    };
    let mut g = first.shape().to_vec();
    for (d, a) in l.dims.iter().enumerate() {
        let Some(a) = *a else { continue };
        g[d] = (0..mesh.shape.shape[a])
            .map(|i| {
                let mut c = vec![0; mesh.shape.shape.len()];
                c[a] = i;
                shards[mesh.rank(&c)].shape()[d]
            })
            .sum();
    }
    g
}

/// The identity of `max` (`lowest`) or `min` in dtype `dt`: what a device whose shard is
/// empty along the reduced dimensions contributes to the all-reduce.
fn extreme(dt: DType, lowest: bool) -> Scalar {
    let s = if lowest { -1.0 } else { 1.0 };
    match dt {
        DType::Bool => Scalar::Bool(!lowest),
        DType::I8 => Scalar::Int(if lowest {
            i8::MIN as i64
        } else {
            i8::MAX as i64
        }),
        DType::I32 => Scalar::Int(if lowest {
            i32::MIN as i64
        } else {
            i32::MAX as i64
        }),
        DType::I64 => Scalar::Int(if lowest { i64::MIN } else { i64::MAX }),
        // e4m3 has no infinity: its largest finite value
        DType::F8E4M3 => Scalar::Float(s * 448.0),
        _ => Scalar::Float(s * f64::INFINITY),
    }
}

/// A local `max`/`min` over `axes` of a shard that may be empty along them (an uneven split):
/// an empty one gives the reduction's identity.
fn local_reduce(
    t: &Tensor,
    op: rtm::ReduceOp,
    axes: &[usize],
    ax: Option<isize>,
    keepdim: bool,
) -> rtm::Result<Tensor> {
    let empty = axes.iter().any(|&a| t.shape().get(a) == Some(&0));
    let ident = match op {
        rtm::ReduceOp::Max => Some(true),
        rtm::ReduceOp::Min => Some(false),
        _ => None,
    };
    match ident {
        Some(lowest) if empty => {
            let shape: Vec<usize> = t
                .shape()
                .iter()
                .enumerate()
                .filter_map(|(i, &n)| match axes.contains(&i) {
                    true => keepdim.then_some(1),
                    false => Some(n),
                })
                .collect();
            Tensor::full(&shape, extreme(t.dtype(), lowest), t.dtype())
        }
        _ => rtm::reduce(t, op, ax, keepdim),
    }
}

/// The mesh of the sharded operands (E0400 when they differ).
pub(crate) fn common_mesh(vals: &[&Value]) -> Result<OnMesh, Diagnostic> {
    let mut m: Option<OnMesh> = None;
    for v in vals {
        if let Some(o) = as_sharded(v) {
            match &m {
                None => {
                    m = Some(OnMesh {
                        mesh: o.s.mesh.clone(),
                        cx: o.cx.clone(),
                        shapes_only: false,
                    })
                }
                Some(x) if *x.mesh != *o.s.mesh => {
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
    let mut m = m.ok_or_else(|| e400("no operand is sharded"))?;
    m.shapes_only = vals
        .iter()
        .any(|v| as_sharded(v).is_some_and(|o| o.s.is_abstract()));
    Ok(m)
}

/// A tensor operand on `mesh`: sharded as it is, or an ordinary tensor replicated (every
/// device shares its buffer).
pub(crate) fn on_mesh(v: &Value, mesh: &OnMesh, span: Span) -> Result<Sv, Diagnostic> {
    if let Some(x) = sv_of(v) {
        return Ok(x);
    }
    let t = tensor_arg(v, span)?;
    let s = if mesh.shapes_only {
        Sharded::abstract_of(
            t.shape(),
            t.dtype(),
            Layout::replicated(t.ndim()),
            mesh.mesh.clone(),
        )
    } else {
        Sharded::split(&t, Layout::replicated(t.ndim()), mesh.mesh.clone())
    }
    .map_err(|e| rt_at(e, span))?;
    Ok(Sv {
        s,
        id: next_id(&mesh.cx),
        cx: mesh.cx.clone(),
    })
}

pub(crate) fn value_of(x: Sv) -> Value {
    with_id(&x.cx, x.s, x.id)
}

/// A partial `x` made whole before an elementwise op: `reduce_scatter` onto its largest
/// dimension not split (the op then runs on a slice, and an `all_gather` follows only where a
/// consumer needs the whole tensor) when the cost model for the session's system puts
/// reduce-scatter + the op on a slice + all-gather under all-reduce + the op on the whole;
/// else `all_reduce`. The values are the same either way.
fn settle_elementwise(x: &Sv) -> Result<Sv, Diagnostic> {
    let Some(p) = x.s.layout.partial else {
        return Ok(x.clone());
    };
    let k = x.s.mesh.shape.shape[p];
    let free = (0..x.s.shape.len())
        .filter(|&d| x.s.layout.dims[d].is_none() && x.s.shape[d] >= k)
        .max_by_key(|&d| (x.s.shape[d], d));
    let Some(d) = free else {
        return settle(x);
    };
    let sys = x.cx.system();
    let elem = x.s.dtype.size_bytes() as f64;
    let n: f64 = x.s.local_shape().iter().map(|&d| d as f64).product();
    let (link, _) = sys.link(&x.s.mesh.shape.shape, p);
    let coll = |c| tessera_compiler::cost::collective_us_at(c, n * elem, k as u32, link).0;
    let op = |m: f64| crate::profile::mesh_kernel_us(m, 2.0 * m * elem, x.s.dtype.name(), &sys).0;
    use tessera_compiler::cost::Collective as C;
    let all_reduce = coll(C::AllReduce) + op(n);
    let split = coll(C::ReduceScatter) + op(n / k as f64) + coll(C::AllGather);
    if split < all_reduce {
        collective(
            x,
            Comm {
                kind: CommKind::ReduceScatter(RedOp::Sum, d),
                axis: p,
            },
        )
    } else {
        settle(x)
    }
}

pub(crate) fn map_unary(
    name: &str,
    x: &Value,
    span: Span,
    f: impl Fn(&Tensor) -> rtm::Result<Tensor> + Sync,
) -> Result<Value, Diagnostic> {
    let x = sv_of(x)
        .ok_or_else(|| Diagnostic::new(Code::E0101, "expected a sharded tensor").at(span))?;
    let x = settle_elementwise(&x).map_err(|d| d.or_at(span))?;
    let probe = f(&Tensor::abstract_tensor(&[], x.s.dtype).map_err(|e| rt_at(e, span))?)
        .map_err(|e| rt_at(e, span))?;
    let l = x.s.layout.clone();
    kernel(name, &[x], l, probe.dtype(), 1.0, 0.0, |t| f(&t[0]))
        .map(value_of)
        .map_err(|d| d.or_at(span))
}

/// `a op b` with NumPy broadcasting; either side may be a scalar or an ordinary tensor.
pub(crate) fn elementwise_binary(
    op: BinaryOp,
    a: &Value,
    b: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
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
    let (ins, out) = elementwise_layouts(&ins, &out_shape, span)?;
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

/// Elementwise operands brought to the layouts the partitioning rule gives for a result of
/// `out_shape`, and the result's layout.
pub(crate) fn elementwise_layouts(
    ins: &[Sv],
    out_shape: &[usize],
    span: Span,
) -> Result<(Vec<Sv>, Layout), Diagnostic> {
    let pairs: Vec<(&[usize], &Layout)> = ins
        .iter()
        .map(|x| (x.s.shape.as_slice(), &x.s.layout))
        .collect();
    let (targets, out) = rules::elementwise(&pairs, out_shape);
    let ins = ins
        .iter()
        .zip(&targets)
        .map(|(x, t)| bring(x, t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|d| d.or_at(span))?;
    Ok((ins, out))
}

pub(crate) fn matmul(
    a: &Value,
    b: &Value,
    acc: Option<DType>,
    span: Span,
) -> Result<Value, Diagnostic> {
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
pub(crate) fn fallback_binary(
    a: &Value,
    b: &Value,
    span: Span,
    f: impl Fn(&Tensor, &Tensor) -> rtm::Result<Tensor>,
) -> Result<Value, Diagnostic> {
    let (p, q) = (full_of(a, span)?, full_of(b, span)?);
    f(&p, &q).map(tensor_value).map_err(|e| rt_at(e, span))
}

/// The full tensor of a value (sharded tensors are gathered, with the collectives recorded).
pub(crate) fn full_of(v: &Value, span: Span) -> Result<Tensor, Diagnostic> {
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
        cx: o.cx.clone(),
    };
    let to = Layout::replicated(x.s.shape.len());
    let r = bring(&x, &to).map_err(|d| d.or_at(span))?;
    // Every device now holds the whole tensor; rank 0's copy is the result.
    r.s.shards
        .first()
        .cloned()
        .ok_or_else(|| e400("a mesh without devices").at(span))
}

pub(crate) fn norm_axis(axis: i64, nd: usize, span: Span) -> Result<usize, Diagnostic> {
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
pub(crate) fn reduce(
    name: &str,
    x: &Value,
    axis: Option<i64>,
    keepdim: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let x = settled(x, span)?;
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
    let red_axes = axes.clone();
    let mut r = kernel(
        &format!("reduce_{name}"),
        &[x],
        out,
        probe.dtype(),
        0.0,
        work,
        move |t| local_reduce(&t[0], local_op, &red_axes, ax, keepdim),
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
pub(crate) fn along_axis(
    name: &str,
    x: &Value,
    axis: i64,
    span: Span,
    f: impl Fn(&Tensor) -> rtm::Result<Tensor> + Sync,
) -> Result<Value, Diagnostic> {
    let x = settled(x, span)?;
    let a = norm_axis(axis, x.s.shape.len(), span)?;
    let keep = x.s.layout.clone();
    let t = rules::gathered(&x.s.layout, a);
    let x = bring(&x, &t).map_err(|d| d.or_at(span))?;
    let dt = x.s.dtype;
    let r = kernel(name, &[x], t, dt, 5.0, 0.0, |t| f(&t[0])).map_err(|d| d.or_at(span))?;
    let s = r.s.slice_to(&keep).map_err(rt)?;
    Ok(value_of(Sv {
        s,
        id: r.id,
        cx: r.cx,
    }))
}

/// A row function on a sharded tensor, by its rule ([`ShardRule::WholeAxis`]): the slices
/// along `axis` whole on each device (gathered along it first; a tensor sharded along another
/// axis moves nothing), run locally. One that writes a value per slice drops the axis from
/// the layout (or keeps it as 1).
pub(crate) fn row_fn(
    f: RowFn,
    x: &Value,
    axis: i64,
    keepdim: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let run = move |t: &Tensor| rtm::row_fn(t, f, axis as isize, keepdim);
    if f.out() == RowOut::Normalized {
        return along_axis(f.name(), x, axis, span, run);
    }
    let x = settled(x, span)?;
    let a = norm_axis(axis, x.s.shape.len(), span)?;
    let t = rules::gathered(&x.s.layout, a);
    let x = bring(&x, &t).map_err(|d| d.or_at(span))?;
    let (out, _) = rules::reduce(&t, &[a], keepdim);
    let probe = Tensor::abstract_tensor(&x.s.shape, x.s.dtype).map_err(rt)?;
    let dt = run(&probe).map_err(|e| rt_at(e, span))?.dtype();
    let flops = f.row().flops;
    let r =
        kernel(f.name(), &[x], out, dt, flops, 0.0, |t| run(&t[0])).map_err(|d| d.or_at(span))?;
    Ok(value_of(r))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn attention(
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
