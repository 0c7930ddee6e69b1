//! The mesh side of a kernel compiled per device ([`crate::kernel`]'s `per_device`): the dry
//! run that tells whether a call needs communication, and the run of the per-device kernels.
//!
//! The dry run calls the body on abstract copies of the sharded arguments (same shapes,
//! layouts and mesh, nothing allocated) into a log of its own, outside any profile: when it
//! records no collective and every result is an ordinary (not partial) sharded tensor, each
//! device's part of the call is independent of the others, and the results' layouts are the
//! dry run's.

use super::*;

/// What a dry run found for a call with no communication: each result's layout and global
/// shape, in output order.
pub struct DryRun {
    pub outs: Vec<(Layout, Vec<usize>, DType)>,
}

/// The sharded values among a call's arguments (positional, then keyword), in order.
pub fn sharded_args(args: &CallArgs) -> Vec<&ShardedObj> {
    args.positional
        .iter()
        .map(|(v, _)| v)
        .chain(args.keywords.iter().map(|(_, v, _)| v))
        .filter_map(as_sharded)
        .collect()
}

/// A signature of the sharded arguments: a hash of their shapes, dtypes, layouts and mesh
/// (the mesh's device list is hashed, not printed: a call costs the same on any mesh size).
pub fn signature(args: &CallArgs) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for o in sharded_args(args) {
        (&o.s.shape, o.s.dtype.name(), &o.s.layout, &*o.s.mesh).hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

/// Runs `body` on abstract copies of the sharded arguments in a detached log; `None` when the
/// call needs communication, fails, or returns something other than sharded tensors.
pub fn dry_run(
    cx: &Rc<Session>,
    args: &CallArgs,
    body: impl FnOnce(CallArgs) -> Result<Value, Diagnostic>,
) -> Option<DryRun> {
    let abs = args
        .try_map(|v| -> Result<Value, Diagnostic> {
            Ok(match as_sharded(v) {
                Some(o) => {
                    let s = Sharded::abstract_of(
                        &o.s.shape,
                        o.s.dtype,
                        o.s.layout.clone(),
                        o.s.mesh.clone(),
                    )
                    .map_err(rt)?;
                    new_sharded(cx, s)
                }
                None => v.clone(),
            })
        })
        .ok()?;
    let was_active = std::mem::replace(&mut cx.profile.borrow_mut().active, false);
    cx.mesh_logs.borrow_mut().push(Program::default());
    let r = body(abs).and_then(settle_value);
    let program = cx.mesh_logs.borrow_mut().pop().unwrap_or_default();
    cx.profile.borrow_mut().active = was_active;
    let v = r.ok()?;
    if program
        .steps
        .iter()
        .any(|s| matches!(s, Step::Collective { .. }))
    {
        return None;
    }
    let items = match &v {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        other => vec![other.clone()],
    };
    let outs = items
        .iter()
        .map(|x| {
            as_sharded(x)
                .filter(|o| o.s.layout.partial.is_none())
                .map(|o| (o.s.layout.clone(), o.s.shape.clone(), o.s.dtype))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(DryRun { outs })
}

/// Each device's shards of the sharded arguments, and their value numbers.
pub fn shards_by_device(args: &CallArgs) -> (Vec<Vec<Tensor>>, Vec<usize>) {
    let xs = sharded_args(args);
    let n = xs.first().map_or(0, |o| o.s.mesh.size());
    let per = (0..n)
        .map(|r| xs.iter().map(|o| o.s.shards[r].clone()).collect())
        .collect();
    (per, xs.iter().map(|o| o.id).collect())
}

/// The shape device `r` holds of a tensor of `global` shape laid out as `l`.
pub fn shard_shape(mesh: &Mesh, l: &Layout, global: &[usize], r: usize) -> Vec<usize> {
    l.shard_ranges(global, &mesh.shape, &mesh.coords(r))
        .iter()
        .map(|x| x.1)
        .collect()
}

/// The results of a kernel compiled per device: `outs[r]` are device `r`'s outputs. Records one
/// kernel step per result (the call's FLOPs on the first) and returns the sharded values.
#[allow(clippy::too_many_arguments)]
pub fn results(
    args: &CallArgs,
    dry: &DryRun,
    outs: Vec<Vec<Tensor>>,
    name: &str,
    flops: f64,
    measured_us: Option<f64>,
) -> Result<Vec<Value>, Diagnostic> {
    let xs = sharded_args(args);
    let Some(first) = xs.first() else {
        return Err(e400("no sharded argument"));
    };
    let (mesh, cx) = (first.s.mesh.clone(), first.cx.clone());
    let in_ids: Vec<usize> = xs.iter().map(|o| o.id).collect();
    let in_shapes: Vec<Vec<usize>> = xs.iter().map(|o| o.s.local_shape()).collect();
    let mut in_bytes = 0.0;
    for o in &xs {
        in_bytes += o.s.local_shape().iter().map(|&d| d as f64).product::<f64>()
            * o.s.dtype.size_bytes() as f64;
    }
    let mut vals = Vec::new();
    for (i, (layout, global, dtype)) in dry.outs.iter().enumerate() {
        let s = if outs.first().is_some_and(|o| o[i].is_abstract()) {
            Sharded::abstract_of(global, *dtype, layout.clone(), mesh.clone()).map_err(rt)?
        } else {
            Sharded {
                mesh: mesh.clone(),
                layout: layout.clone(),
                shape: global.clone(),
                dtype: *dtype,
                shards: outs.iter().map(|o| o[i].clone()).collect::<Vec<_>>().into(),
            }
        };
        let local = s.local_shape();
        let out_bytes =
            local.iter().map(|&d| d as f64).product::<f64>() * dtype.size_bytes() as f64;
        let id = next_id(&cx);
        note(
            &cx,
            &mesh,
            Step::Kernel {
                op: if dry.outs.len() > 1 {
                    format!("{name}.{i}")
                } else {
                    name.to_string()
                },
                inputs: in_ids.clone(),
                out: id,
                in_shapes: in_shapes.clone(),
                out_shape: local,
                out_layout: layout.clone(),
                dtype: dtype.name().to_string(),
                flops: if i == 0 { flops } else { 0.0 },
                bytes: out_bytes + if i == 0 { in_bytes } else { 0.0 },
                measured_us: measured_us.filter(|_| i == 0),
            },
        );
        vals.push(with_id(&cx, s, id));
    }
    Ok(vals)
}

/// Runs `f(rank)` for every device of the mesh of the call's sharded arguments.
pub fn run_devices<T: Send>(
    args: &CallArgs,
    f: impl Fn(usize) -> rtm::Result<T> + Sync,
) -> Result<(Vec<T>, f64), Diagnostic> {
    let n = sharded_args(args).first().map_or(0, |o| o.s.mesh.size());
    let t0 = Instant::now();
    let r = per_device(n, sequential(), f).map_err(rt)?;
    Ok((r, t0.elapsed().as_secs_f64() * 1e6))
}
