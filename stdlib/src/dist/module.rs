//! The `dist` module: meshes, shard specs, sharding, collectives.

use super::*;

// ----- the module -------------------------------------------------------------------------------

pub(super) fn str_items(v: &Value, span: Span, what: &str) -> Result<Vec<String>, Diagnostic> {
    let items = match v {
        Value::Str(_) => vec![v.clone()],
        _ => v.items().ok_or_else(|| {
            let got = v.type_name();
            Diagnostic::new(
                Code::E0101,
                format!("{what} must be a tuple of str, not {got}"),
            )
            .at(span)
        })?,
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

pub(crate) fn mesh_arg(v: &Value, span: Span) -> Result<Arc<Mesh>, Diagnostic> {
    v.downcast::<MeshObj>().map(|m| m.0.clone()).ok_or_else(|| {
        Diagnostic::new(
            Code::E0101,
            format!("expected a mesh (dist.Mesh), got {}", v.type_name()),
        )
        .at(span)
    })
}

pub(super) fn spec_arg(v: &Value, span: Span) -> Result<SpecObj, Diagnostic> {
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

pub(super) fn axis_of(mesh: &Mesh, v: &Arg) -> Result<usize, Diagnostic> {
    match &v.value {
        Value::Str(s) => mesh.axis(s).map_err(|e| rt_at(e, v.span)),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("axis must be a mesh axis name, not {}", other.type_name()),
        )
        .at(v.span)),
    }
}

pub(super) fn red_arg(a: &[Option<Arg>], i: usize) -> Result<RedOp, Diagnostic> {
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

pub(super) fn sharded_arg(a: &Arg) -> Result<Sv, Diagnostic> {
    sv_of(&a.value).ok_or_else(|| {
        Diagnostic::new(
            Code::E0400,
            format!(
                "expected a sharded tensor (dist.shard), got {}",
                match crate::tensor::kind_name(&a.value).as_str() {
                    "tensor" => "an ordinary tensor".to_string(),
                    k => k.to_string(),
                }
            ),
        )
        .at(a.span)
    })
}

/// Every function of the module, with its signature.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("Mesh", "Mesh(axes, shape=None, devices=None)"),
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
    (
        "pipeline",
        "pipeline(stages, mesh=None, mesh_axis='pp', microbatches=8, schedule='1f1b')",
    ),
    ("plan", "plan(f, *args, devices=None, axes=None)"),
];

/// `dist.Mesh(devices=...)`: a list, tuple or range of device ids, each an int from 0.
fn device_ids(v: &Value, span: Span) -> Result<Vec<usize>, Diagnostic> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.as_ref().clone(),
        other => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "devices must be a list or range of device ids (devices=range(4)), not {}",
                    other.type_name()
                ),
            )
            .at(span))
        }
    };
    items
        .iter()
        .map(|d| match d {
            Value::Int(i) => usize::try_from(*i).map_err(|_| {
                e400(format!(
                    "device id {i} is negative: devices are numbered from 0"
                ))
                .at(span)
            }),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "device ids must be ints, not {} ({})",
                    other.type_name(),
                    other.repr()
                ),
            )
            .at(span)),
        })
        .collect()
}

/// `dist.Mesh(axes, shape=None, devices=None)`.
fn make_mesh(it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("Mesh", &["axes"], &["shape", "devices"])?;
    let axes_a = need(&a, 0, args.span)?;
    let axes = str_items(&axes_a.value, axes_a.span, "axes")?;
    let shape = match arg(&a, 1) {
        Some(sh) if !matches!(sh.value, Value::None) => Some(shape_arg(&sh.value, sh.span)?),
        _ => None,
    };
    let devices = match arg(&a, 2) {
        Some(d) => {
            let v = match &d.value {
                Value::Range(..) => Value::list(it.iterate(&d.value, d.span)?),
                other => other.clone(),
            };
            Some(device_ids(&v, d.span)?)
        }
        None => None,
    };
    // without a shape: the most balanced factorisation of the devices (SPEC §7)
    let shape = match (shape, &devices) {
        (Some(s), _) => s,
        (None, Some(d)) => tessera_runtime::mesh::balanced_shape(d.len(), axes.len()),
        (None, None) => {
            return Err(
                e400("dist.Mesh needs a shape or a device list (devices=range(N))").at(args.span),
            )
        }
    };
    Mesh::new(axes, shape, devices)
        .map(|m| Value::host(MeshObj(Arc::new(m))))
        .map_err(|e| rt_at(e, args.span))
}

/// `dist.ShardSpec(partition, mesh_axes)`.
fn make_shard_spec(args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("ShardSpec", &["partition", "mesh_axes"], &[])?;
    let p = need(&a, 0, args.span)?;
    let items = p.value.items().unwrap_or_else(|| vec![p.value.clone()]);
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
}

/// `dist.shard(t, spec, mesh=None)`: splits a tensor, or reshards a sharded one.
fn shard(session: &Rc<Session>, args: CallArgs) -> Result<Value, Diagnostic> {
    let a = args.bind("shard", &["t", "spec"], &["mesh"])?;
    let t = need(&a, 0, args.span)?;
    let sp = need(&a, 1, args.span)?;
    let spec = spec_arg(&sp.value, sp.span)?;
    if crate::tensor::trace::as_sym(&t.value).is_some() {
        return Err(Diagnostic::new(
            Code::E0201,
            "dist.shard cannot split a traced tensor inside a kernel",
        )
        .at(t.span)
        .with_label("traced here: only its shape and dtype are known")
        .with_help("shard the arguments before calling the kernel: called with sharded arguments, it runs on each device's shards"));
    }
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
        .map(|s| new_sharded(session, s))
        .map_err(|e| rt_at(e, args.span))
}

/// `dist.tensor(shape, dtype, layout, mesh)`.
fn dist_tensor(session: &Rc<Session>, args: CallArgs) -> Result<Value, Diagnostic> {
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
            // on a named system, a shard must fit one GPU's memory
            if let Some(sys) = session.system.get() {
                let local = lay.local_shape(&shape, &mesh.shape);
                let bytes =
                    local.iter().map(|&d| d as f64).product::<f64>() * dt.size_bytes() as f64;
                if bytes > sys.hbm_bytes as f64 {
                    return Err(e400(format!(
                        "a shard of {} {} needs {:.1} GB, over the {:.0} GB of one GPU ({}, {})",
                        shape_list(&local),
                        dt.name(),
                        bytes / 1e9,
                        sys.hbm_bytes as f64 / 1e9,
                        sys.spec.gpu,
                        sys.name
                    ))
                    .at(args.span)
                    .with_help("split it over more devices (another mesh axis in the ShardSpec)"));
                }
            }
            Sharded::abstract_of(&shape, dt, lay, mesh)
                .map(|s| new_sharded(session, s))
                .map_err(|e| rt_at(e, args.span))
        }
    }
}

/// Builds the `dist` module.
pub fn module(session: Rc<Session>) -> Module {
    let m = Module::new("dist", "device meshes and sharded tensors");
    m.set("Mesh", Value::native("Mesh", FUNCTIONS[0].1, make_mesh));
    m.set("plan", {
        let session = session.clone();
        Value::native("plan", FUNCTIONS[9].1, move |it, args| {
            super::plan::plan(&session, it, args)
        })
    });
    m.set(
        "ShardSpec",
        Value::native("ShardSpec", FUNCTIONS[1].1, |_, args| make_shard_spec(args)),
    );
    m.set("shard", {
        let session = session.clone();
        Value::native("shard", FUNCTIONS[2].1, move |_, args| {
            shard(&session, args)
        })
    });
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
    m.set("tensor", {
        let session = session.clone();
        Value::native("tensor", FUNCTIONS[4].1, move |_, args| {
            dist_tensor(&session, args)
        })
    });
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
            collective_value(&x, CommKind::AllReduce(op), ax, args.span)
        }),
    );
    m.set(
        "reduce_scatter",
        Value::native("reduce_scatter", FUNCTIONS[6].1, |_, args| {
            let a = args.bind("reduce_scatter", &["t", "axis"], &["dim", "op"])?;
            let x = sharded_arg(need(&a, 0, args.span)?)?;
            let ax = axis_of(&x.s.mesh, need(&a, 1, args.span)?)?;
            let nd = x.s.shape.len();
            let dim = norm_axis(int_arg(&a, 2, "dim")?.unwrap_or(0), nd, args.span)?;
            let op = red_arg(&a, 3)?;
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
            collective_value(&x, CommKind::ReduceScatter(op, dim), ax, args.span)
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
            collective_value(&x, CommKind::AllGather(d), ax, args.span)
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
                &o.cx,
                Sharded::abstract_of(&o.s.shape, o.s.dtype, o.s.layout.clone(), o.s.mesh.clone())
                    .map_err(rt)?,
                o.id,
            ),
            None => v.clone(),
        })
    };
    args.try_map(abs)
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
    args.try_map(abs)
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

/// Collective `kind` over mesh axis `ax` of `x`, as a value (errors at the call `span`).
fn collective_value(x: &Sv, kind: CommKind, ax: usize, span: Span) -> Result<Value, Diagnostic> {
    collective(x, Comm { kind, axis: ax })
        .map(value_of)
        .map_err(|d| d.or_at(span))
}
