//! Gradients on a mesh (SPEC §8, data parallel): a `graph.grad` kernel called with sharded
//! arguments. Its backward graph is traced on the global shapes as on one device, then run op
//! by op on the mesh with the same partitioning rules as eager sharded ops: a parameter
//! replicated over `dp` meets activations split over `dp`, so its gradient's matmul contracts
//! over the split batch and leaves a partial sum on every device. Those partial sums are the
//! data-parallel gradient all-reduce: they are packed into buckets (in the order the backward
//! pass finishes them, at most `schedule.grad_bucket(bytes)` each, 1 MiB by default) and each
//! bucket is all-reduced as soon as its last gradient is final, so the collective comes before
//! the rest of the backward pass in the mesh Schedule IR and its overlap plan shows what it
//! can hide behind. Ops without a partitioning rule gather their operands and run whole.

use super::*;
use crate::tensor::sharded::exec::{
    common_mesh, elementwise_binary, kernel, on_mesh, value_of, Sv,
};
use tessera_compiler::cost::system::System;
use tessera_compiler::graph::{Graph, Op, ReduceOp, ValueId};

/// The default gradient bucket: 1 MiB of gradients per all-reduce.
pub const GRAD_BUCKET_BYTES: u64 = 1 << 20;

/// A value of the replayed graph.
#[derive(Clone)]
enum Rv {
    /// An ordinary (host) tensor.
    Host(Tensor),
    /// A `const`: the Python scalar, and its declared dtype as a tensor of its own.
    Scalar(tessera_compiler::graph::Scalar, DType),
    /// A sharded tensor.
    Mesh(Value),
}

impl Rv {
    fn value(&self) -> Result<Value, Diagnostic> {
        Ok(match self {
            Rv::Host(t) => tensor_value(t.clone()),
            Rv::Scalar(s, d) => tensor_value(scalar_tensor(*s, *d)?),
            Rv::Mesh(v) => v.clone(),
        })
    }
    fn scalar_value(&self) -> Result<Value, Diagnostic> {
        Ok(match self {
            Rv::Scalar(s, _) => match s {
                Scalar::Int(i) => Value::Int(*i),
                Scalar::Float(f) => Value::Float(*f),
                Scalar::Bool(b) => Value::Bool(*b),
            },
            other => other.value()?,
        })
    }
}

fn scalar_tensor(s: Scalar, d: DType) -> Result<Tensor, Diagnostic> {
    Tensor::from_f64(&[], vec![s.as_f64()], d).map_err(rt)
}

/// One all-reduce bucket being filled: gradients (output positions) with their partial sums.
struct Bucket {
    axis: usize,
    dtype: DType,
    bytes: u64,
    grads: Vec<(usize, Sv)>,
}

/// How a gradient's partial sums are all-reduced: buckets of at most `bytes`, each on its own
/// thread while the backward pass goes on (`overlap`), or waited for when issued.
#[derive(Copy, Clone, Debug)]
pub struct Buckets {
    pub bytes: u64,
    pub overlap: bool,
}

/// Runs the gradient graph `g` (as traced, before fusion) on the mesh of its sharded
/// arguments `params` (one per graph param, in order). The outputs from `first_grad` on are
/// gradients: their partial sums are all-reduced in buckets.
pub fn run_gradient(
    g: &Graph,
    params: &[Value],
    captures: &[Tensor],
    first_grad: usize,
    buckets: Buckets,
    span: Span,
) -> Result<(Vec<Value>, Overlap), Diagnostic> {
    let bucket = buckets.bytes;
    let mut ov = Overlap {
        enabled: buckets.overlap,
        ..Overlap::default()
    };
    let mut vals: Vec<Option<Rv>> = vec![None; g.len()];
    let mut pending: Vec<Pending> = Vec::new();
    // output position(s) of each value that is a gradient
    let mut grad_of: std::collections::HashMap<ValueId, Vec<usize>> = Default::default();
    for (i, &o) in g.outputs.iter().enumerate().skip(first_grad) {
        grad_of.entry(o).or_default().push(i);
    }
    let mut reduced: Vec<Option<Value>> = vec![None; g.outputs.len()];
    let mut open: Vec<Bucket> = Vec::new();
    for id in g.ids() {
        let Some(op) = g.op(id) else { continue };
        let v = step(g, id, op, &vals, params, captures, span)?;
        if let (Some(outs), Rv::Mesh(mv)) = (grad_of.get(&id), &v) {
            if let Some(x) = sv_of(mv).filter(bucketable) {
                let axis = x.s.layout.partial.unwrap_or(0);
                let bytes = (x.s.shape.iter().product::<usize>() * x.s.dtype.size_bytes()) as u64;
                let at = match open
                    .iter()
                    .position(|b| b.axis == axis && b.dtype == x.s.dtype)
                {
                    Some(i) => i,
                    None => {
                        open.push(Bucket {
                            axis,
                            dtype: x.s.dtype,
                            bytes: 0,
                            grads: vec![],
                        });
                        open.len() - 1
                    }
                };
                for &o in outs {
                    open[at].grads.push((o, x.clone()));
                }
                open[at].bytes += bytes;
                if open[at].bytes >= bucket {
                    let b = open.remove(at);
                    let p = issue(b, span)?;
                    if buckets.overlap {
                        pending.push(p);
                    } else {
                        finish(p, &mut reduced, &mut ov, span)?;
                    }
                }
            }
        }
        vals[id.index()] = Some(v);
    }
    for b in open {
        pending.push(issue(b, span)?);
    }
    for p in pending {
        finish(p, &mut reduced, &mut ov, span)?;
    }
    let outs = g
        .outputs
        .iter()
        .enumerate()
        .map(|(i, o)| match reduced[i].take() {
            Some(v) => Ok(v),
            None => {
                let v = vals[o.index()]
                    .as_ref()
                    .ok_or_else(|| internal("an output without a value"))?
                    .value()?;
                settle_value(v)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((outs, ov))
}

/// A gradient the bucketed all-reduce takes: a partial sum, otherwise replicated.
fn bucketable(x: &Sv) -> bool {
    x.s.layout.partial.is_some() && x.s.layout.dims.iter().all(Option::is_none)
}

/// A bucket whose all-reduce runs on its own thread while the backward pass goes on.
struct Pending {
    grads: Vec<(usize, Vec<usize>)>,
    dtype: DType,
    /// The packed partial sums (one flat buffer per device, or the one gradient).
    packed: Sv,
    /// The all-reduce's step, recorded in the log when issued, timed when joined.
    step: Step,
    job: std::thread::JoinHandle<rtm::Result<(Sharded, f64)>>,
}

/// What the bucket all-reduces took: their own time, and the part of it the backward pass
/// did not wait for (measured).
#[derive(Default)]
pub struct Overlap {
    pub comm_us: f64,
    pub hidden_us: f64,
    /// The all-reduces ran beside the backward pass (`schedule.overlap`, on by default).
    pub enabled: bool,
}

/// Packs a bucket's partial sums into one flat buffer per device and starts its all-reduce on
/// another thread (recorded in the mesh Schedule IR now; [`finish`] joins it).
fn issue(b: Bucket, span: Span) -> Result<Pending, Diagnostic> {
    let ins: Vec<Sv> = b.grads.iter().map(|(_, x)| x.clone()).collect();
    let packed = if ins.len() == 1 {
        ins[0].clone()
    } else {
        let layout = Layout {
            dims: vec![None],
            partial: Some(b.axis),
        };
        kernel("grad_bucket", &ins, layout, b.dtype, 0.0, 0.0, |ts| {
            let flat = ts
                .iter()
                .map(|t| t.reshape(&[-1]))
                .collect::<rtm::Result<Vec<_>>>()?;
            rtm::concat(&flat, 0)
        })
        .map_err(|d| d.or_at(span))?
    };
    let comm = Comm {
        kind: CommKind::AllReduce(RedOp::Sum),
        axis: b.axis,
    };
    let step = Step::Collective {
        comm,
        input: packed.id,
        out: next_id(&packed.cx),
        local_shape: packed.s.local_shape(),
        dtype: b.dtype.name().to_string(),
        elem_bytes: b.dtype.size_bytes(),
        measured_us: None,
    };
    if let Some(p) = packed.cx.mesh_logs.borrow_mut().last_mut() {
        if p.mesh.is_none() {
            p.mesh = Some(packed.s.mesh.shape.clone());
        }
        p.steps.push(step.clone());
    }
    let data = packed.s.clone();
    let run = move || -> rtm::Result<(Sharded, f64)> {
        let t0 = Instant::now();
        let s = crate::tensor::sharded::exec::reduce_on_local(&data, comm)?;
        Ok((s, t0.elapsed().as_secs_f64() * 1e6))
    };
    let job = std::thread::Builder::new()
        .name("tessera-allreduce".into())
        .spawn(run)
        .map_err(|e| e400(format!("cannot start the all-reduce thread: {e}")).at(span))?;
    Ok(Pending {
        grads: b
            .grads
            .iter()
            .map(|(o, x)| (*o, x.s.shape.clone()))
            .collect(),
        dtype: b.dtype,
        packed,
        step,
        job,
    })
}

/// Joins a bucket's all-reduce (timing the wait), records its time, and unpacks each gradient.
fn finish(
    p: Pending,
    out: &mut [Option<Value>],
    ov: &mut Overlap,
    span: Span,
) -> Result<(), Diagnostic> {
    let t0 = Instant::now();
    let (s, us) = p
        .job
        .join()
        .map_err(|_| internal("the all-reduce thread panicked"))?
        .map_err(|e| rt_at(e, span))?;
    // the part of the all-reduce's own time the backward pass did not wait for
    let waited = t0.elapsed().as_secs_f64() * 1e6;
    ov.hidden_us += (us - waited).max(0.0);
    ov.comm_us += us;
    let Step::Collective { out: id, .. } = p.step else {
        return Err(internal("not a collective"));
    };
    let mut step = p.step.clone();
    if let Step::Collective { measured_us, .. } = &mut step {
        *measured_us = (!p.packed.s.is_abstract()).then_some(us);
    }
    if let Some(l) = p.packed.cx.mesh_logs.borrow_mut().last_mut() {
        if let Some(x) = l.steps.iter_mut().find(|x| x.out() == id) {
            *x = step.clone();
        }
        // the backward pass waits for the all-reduce here
        l.steps.push(Step::Wait { out: id });
    }
    if p.packed.cx.profile.borrow().active {
        crate::profile::record_mesh_step(&p.packed.cx.profile_sink(), &s.mesh.shape, &step);
    }
    let all = Sv {
        s,
        id,
        cx: p.packed.cx.clone(),
    };
    if p.grads.len() == 1 {
        out[p.grads[0].0] = Some(value_of(all));
        return Ok(());
    }
    let mut off = 0i64;
    for (o, shape) in &p.grads {
        let n = shape.iter().product::<usize>() as i64;
        let (start, stop) = (off, off + n);
        off += n;
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let piece = kernel(
            "grad_unbucket",
            std::slice::from_ref(&all),
            Layout::replicated(shape.len()),
            p.dtype,
            0.0,
            0.0,
            move |t| {
                t[0].index(&[rtm::IndexItem::Slice {
                    start: Some(start),
                    stop: Some(stop),
                    step: None,
                }])?
                .reshape(&dims)
            },
        )
        .map_err(|d| d.or_at(span))?;
        out[*o] = Some(value_of(piece));
    }
    Ok(())
}

/// The profile's summary of a gradient's collectives on a mesh: how many all-reduces, their
/// bytes, and the share of their measured time the overlap plan puts behind independent
/// kernels (each collective against the measured time of the kernels it may run beside).
/// The local mesh runs its collectives in program order, so this is what the plan would
/// hide, not a measured overlap.
pub fn overlap_note(p: &Program, ov: &Overlap, sys: &System) -> Option<String> {
    let mesh = p.mesh.as_ref()?;
    let us = |s: &Step| match s {
        Step::Kernel { measured_us, .. } | Step::Collective { measured_us, .. } => *measured_us,
        Step::Wait { .. } => None,
    };
    let (mut count, mut bytes, mut comm, mut hidden) = (0, 0.0, 0.0, 0.0);
    // the same plan with the model's times for the target (its kernels' roofline, its NVLink)
    let model = |s: &Step| crate::profile::mesh_step_model_us(mesh, s, sys);
    let (mut comm_m, mut hidden_m) = (0.0, 0.0);
    let plan = rules::overlap(&p.steps);
    for (i, s) in p.steps.iter().enumerate() {
        let Step::Collective {
            comm: c,
            local_shape,
            elem_bytes,
            ..
        } = s
        else {
            continue;
        };
        count += 1;
        bytes += rules::comm_bytes(*c, local_shape, *elem_bytes, mesh);
        let beside_ks: &[usize] = plan
            .iter()
            .find(|(c, _)| *c == i)
            .map_or(&[], |(_, ks)| ks.as_slice());
        let tm = model(s);
        let beside_m: f64 = beside_ks.iter().map(|&k| model(&p.steps[k])).sum();
        comm_m += tm;
        hidden_m += tm.min(beside_m);
        let t = us(s)?;
        let beside: f64 = beside_ks.iter().filter_map(|&k| us(&p.steps[k])).sum();
        comm += t;
        hidden += t.min(beside);
    }
    if count == 0 {
        return None;
    }
    let measured = if ov.comm_us > 0.0 && !ov.enabled {
        format!(
            "; overlap off (schedule.overlap(False)): the bucket all-reduces took {:.1} µs, each waited for when issued (measured)",
            ov.comm_us
        )
    } else if ov.comm_us > 0.0 {
        format!(
            "; the bucket all-reduces ran on their own thread for {:.1} µs, {:.0}% of it while the backward pass computed (measured)",
            ov.comm_us,
            100.0 * ov.hidden_us / ov.comm_us
        )
    } else {
        String::new()
    };
    let modelled = format!(
        "; modelled for {} ×{}: {comm_m:.1} µs of collectives, {:.0}% beside kernels (model)",
        sys.target.name(),
        mesh.size(),
        if comm_m > 0.0 {
            100.0 * hidden_m / comm_m
        } else {
            0.0
        },
    );
    Some(format!(
        "gradients on the mesh: {count} collective(s), {bytes:.0} B; the overlap plan puts {:.0}% of their measured {:.1} µs beside independent kernels{measured}{modelled}",
        if comm > 0.0 { 100.0 * hidden / comm } else { 0.0 },
        comm
    ))
}

fn settle_sv(x: &Sv) -> Result<Sv, Diagnostic> {
    crate::tensor::sharded::exec::settle(x)
}

fn internal(msg: &str) -> Diagnostic {
    Diagnostic::new(
        Code::E0500,
        format!("internal compiler error: a gradient on a mesh: {msg}"),
    )
}

/// One op of the gradient graph: by its partitioning rule when an operand is sharded, on the
/// host (the cpu interpreter) otherwise or when the op has no rule (sharded operands gathered).
fn step(
    g: &Graph,
    id: ValueId,
    op: &Op,
    vals: &[Option<Rv>],
    params: &[Value],
    captures: &[Tensor],
    span: Span,
) -> Result<Rv, Diagnostic> {
    let ty = g.ty(id).ok_or_else(|| internal("an untyped value"))?;
    let get = |v: ValueId| -> Result<&Rv, Diagnostic> {
        vals[v.index()]
            .as_ref()
            .ok_or_else(|| internal("an operand before its value"))
    };
    match op {
        Op::Param { index } => {
            let v = params
                .get(*index)
                .ok_or_else(|| internal("a missing argument"))?;
            return Ok(match as_tensor(v) {
                Some(t) if as_sharded(v).is_none() => Rv::Host(t),
                _ => Rv::Mesh(v.clone()),
            });
        }
        Op::Const { value } => return Ok(Rv::Scalar(*value, ty.dtype)),
        _ => {}
    }
    let operands = op.operands();
    let sharded = operands
        .iter()
        .map(|&x| get(x).map(|v| matches!(v, Rv::Mesh(_))))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .any(|b| b);
    if sharded {
        if let Some(v) = on_mesh_rule(op, ty, &get, span)? {
            return Ok(Rv::Mesh(v));
        }
    }
    // the cpu interpreter on a one-op graph, sharded operands gathered
    let mut one = Graph::new("step");
    let mut inputs = Vec::new();
    let mut map = std::collections::HashMap::new();
    for &x in &operands {
        if map.contains_key(&x) {
            continue;
        }
        let xt = g
            .ty(x)
            .ok_or_else(|| internal("an untyped operand"))?
            .clone();
        let nx = match get(x)? {
            Rv::Scalar(s, _) => one.push(Op::Const { value: *s }, xt, span),
            Rv::Host(t) => {
                inputs.push(t.clone());
                one.add_param(xt, span)
            }
            Rv::Mesh(v) => {
                let o = as_sharded(v).ok_or_else(|| internal("not a sharded tensor"))?;
                inputs.push(gather_full(o, span)?);
                one.add_param(xt, span)
            }
        };
        map.insert(x, nx);
    }
    let mut op1 = op.clone();
    op1.map_operands(&mut |x| map[&x]);
    let r = one.push(op1, ty.clone(), span);
    one.outputs = vec![r];
    let mut outs = rtm::interp::run(&one, &inputs, captures).map_err(|e| rt_at(e, span))?;
    Ok(Rv::Host(outs.pop().ok_or_else(|| internal("no result"))?))
}

/// The op by its partitioning rule; `None`: it has none (the caller gathers).
fn on_mesh_rule<'a>(
    op: &Op,
    ty: &tessera_compiler::graph::TensorType,
    get: &dyn Fn(ValueId) -> Result<&'a Rv, Diagnostic>,
    span: Span,
) -> Result<Option<Value>, Diagnostic> {
    Ok(Some(match op {
        Op::Unary { op: u, x } => {
            let u = *u;
            map_unary(u.name(), &get(*x)?.value()?, span, move |t| {
                rtm::unary(u, t)
            })?
        }
        Op::Binary { op: b, a, b: bb } if matches!(b, BinaryOp::Add | BinaryOp::Sub) => {
            match (get(*a)?, get(*bb)?) {
                (Rv::Mesh(x), Rv::Mesh(y)) if partial_pair(x, y) => add_partial(*b, x, y, span)?,
                (x, y) => elementwise_binary(*b, &x.scalar_value()?, &y.scalar_value()?, span)?,
            }
        }
        Op::Reduce {
            op: r @ (ReduceOp::Sum | ReduceOp::Mean),
            x,
            axis,
            keepdim,
        } if matches!(get(*x)?, Rv::Mesh(v) if split_sum(v, *axis)) => {
            let Rv::Mesh(v) = get(*x)? else {
                return Ok(None);
            };
            partial_sum(v, *r == ReduceOp::Mean, *axis, *keepdim, span)?
        }
        Op::Binary { op: b, a, b: bb } => elementwise_binary(
            *b,
            &get(*a)?.scalar_value()?,
            &get(*bb)?.scalar_value()?,
            span,
        )?,
        Op::Where { cond, a, b } => where_on_mesh(get(*cond)?, get(*a)?, get(*b)?, span)?,
        Op::Cast { x } => {
            let d = ty.dtype;
            map_unary("cast", &get(*x)?.value()?, span, move |t| t.cast(d))?
        }
        Op::Matmul {
            a,
            b,
            accum,
            epilogue,
            ..
        } if epilogue.is_empty() => crate::tensor::sharded::exec::matmul(
            &get(*a)?.value()?,
            &get(*b)?.value()?,
            *accum,
            span,
        )?,
        Op::Reduce {
            op: r,
            x,
            axis,
            keepdim,
        } => crate::tensor::sharded::exec::reduce(
            r.name(),
            &get(*x)?.value()?,
            axis.map(|a| a as i64),
            *keepdim,
            span,
        )?,
        Op::Row {
            f,
            x,
            axis,
            keepdim,
        } => {
            let a = match tessera_compiler::graph::op_def(op).map(|d| d.shard_rule(op)) {
                Some(tessera_compiler::graph::ShardRule::WholeAxis(a)) => a,
                _ => *axis,
            };
            crate::tensor::sharded::exec::row_fn(*f, &get(*x)?.value()?, a as i64, *keepdim, span)?
        }
        Op::LayerNorm {
            x,
            weight,
            bias,
            eps,
        } => {
            // the last axis whole on every device, weight and bias whole
            let whole = |v: &Option<ValueId>| -> Result<Option<Tensor>, Diagnostic> {
                v.map(|w| match get(w)? {
                    Rv::Mesh(m) => crate::tensor::sharded::exec::full_of(m, span),
                    other => other
                        .value()
                        .and_then(|v| crate::tensor::sharded::exec::full_of(&v, span)),
                })
                .transpose()
            };
            let (w, b, eps) = (whole(weight)?, whole(bias)?, *eps);
            crate::tensor::sharded::exec::along_axis(
                "layernorm",
                &get(*x)?.value()?,
                -1,
                span,
                move |t| rtm::layernorm(t, w.as_ref(), b.as_ref(), eps),
            )?
        }
        Op::RmsNorm { x, weight, eps } => {
            let w = match weight {
                Some(w) => Some(crate::tensor::sharded::exec::full_of(
                    &get(*w)?.value()?,
                    span,
                )?),
                None => None,
            };
            let eps = *eps;
            crate::tensor::sharded::exec::along_axis(
                "rmsnorm",
                &get(*x)?.value()?,
                -1,
                span,
                move |t| rtm::rmsnorm(t, w.as_ref(), eps),
            )?
        }
        Op::Transpose { x, perm } => match get(*x)? {
            Rv::Mesh(v) => transpose(v, perm, span)?,
            _ => return Ok(None),
        },
        Op::Reshape { x } | Op::Broadcast { x } => match get(*x)? {
            Rv::Mesh(v) if as_sharded(v).is_some_and(|o| o.s.shape == ty.shape) => v.clone(),
            _ => return Ok(None),
        },
        Op::FlashAttention {
            q,
            k,
            v,
            causal,
            scale,
        } => crate::tensor::sharded::exec::attention(
            &get(*q)?.value()?,
            &get(*k)?.value()?,
            &get(*v)?.value()?,
            *causal,
            Some(*scale),
            span,
        )?,
        _ => return Ok(None),
    }))
}

/// `where(cond, a, b)` elementwise on the mesh (NumPy broadcasting; `a`/`b` may be consts).
fn where_on_mesh(c: &Rv, a: &Rv, b: &Rv, span: Span) -> Result<Value, Diagnostic> {
    let scalar = |v: &Rv| match v {
        Rv::Scalar(s, _) => Some(*s),
        _ => None,
    };
    let (sa, sb) = (scalar(a), scalar(b));
    let vals = [c.value()?, a.value()?, b.value()?];
    let mesh = common_mesh(&[&vals[0], &vals[1], &vals[2]])?;
    // the tensor operands: cond, then a and b unless they are consts
    let mut ins = vec![on_mesh(&vals[0], &mesh, span)?];
    for (v, s) in [(&vals[1], sa), (&vals[2], sb)] {
        if s.is_none() {
            ins.push(on_mesh(v, &mesh, span)?);
        }
    }
    let ins = ins.iter().map(settle_sv).collect::<Result<Vec<_>, _>>()?;
    let mut out_shape = ins[0].s.shape.clone();
    for x in &ins[1..] {
        out_shape = rtm::shape::broadcast_shapes(&out_shape, &x.s.shape, "where")
            .map_err(|e| rt_at(e, span))?;
    }
    let (ins, out) = crate::tensor::sharded::exec::elementwise_layouts(&ins, &out_shape, span)?;
    let dt = {
        let probe = |i: usize| Tensor::abstract_tensor(&[], ins[i].s.dtype).map_err(rt);
        let pc = probe(0)?;
        let pa = match sa {
            Some(_) => None,
            None => Some(probe(1)?),
        };
        let pb = match sb {
            Some(_) => None,
            None => Some(probe(ins.len() - 1)?),
        };
        let oa: rtm::Operand = pa
            .as_ref()
            .map_or_else(|| sa.unwrap_or(Scalar::Int(0)).into(), Into::into);
        let ob: rtm::Operand = pb
            .as_ref()
            .map_or_else(|| sb.unwrap_or(Scalar::Int(0)).into(), Into::into);
        rtm::where_(&pc, oa, ob)
            .map_err(|e| rt_at(e, span))?
            .dtype()
    };
    kernel("where", &ins, out, dt, 1.0, 0.0, move |t| {
        let mut rest = t[1..].iter();
        let oa: rtm::Operand = match sa {
            Some(s) => s.into(),
            None => rest
                .next()
                .ok_or_else(|| rtm::RuntimeError::args("where: a"))?
                .into(),
        };
        let ob: rtm::Operand = match sb {
            Some(s) => s.into(),
            None => rest
                .next()
                .ok_or_else(|| rtm::RuntimeError::args("where: b"))?
                .into(),
        };
        rtm::where_(&t[0], oa, ob)
    })
    .map(value_of)
    .map_err(|d| d.or_at(span))
}

/// Two partial sums over the same axis, laid out alike: their sum is one too.
fn partial_pair(x: &Value, y: &Value) -> bool {
    match (sv_of(x), sv_of(y)) {
        (Some(x), Some(y)) => {
            x.s.layout.partial.is_some() && x.s.layout == y.s.layout && x.s.shape == y.s.shape
        }
        _ => false,
    }
}

/// `x ± y` of two partial sums: per device, the result still a partial sum (no collective;
/// the gradient of a parameter used twice is then reduced once).
fn add_partial(op: BinaryOp, x: &Value, y: &Value, span: Span) -> Result<Value, Diagnostic> {
    let (x, y) = (
        sv_of(x).ok_or_else(|| internal("not a sharded tensor"))?,
        sv_of(y).ok_or_else(|| internal("not a sharded tensor"))?,
    );
    let layout = x.s.layout.clone();
    let dt = x.s.dtype;
    kernel(op.name(), &[x, y], layout, dt, 1.0, 0.0, move |t| {
        rtm::binary(op, &t[0], &t[1])
    })
    .map(value_of)
    .map_err(|d| d.or_at(span))
}

/// Whether a sum over `axis` of `v` splits over exactly one mesh axis (then each device sums
/// its part and the result is a partial sum over that axis).
fn split_sum(v: &Value, axis: Option<usize>) -> bool {
    let Some(x) = sv_of(v) else { return false };
    if x.s.layout.partial.is_some() {
        return false;
    }
    let axes: Vec<usize> = match axis {
        Some(a) => vec![a],
        None => (0..x.s.shape.len()).collect(),
    };
    rules::reduce(&x.s.layout, &axes, false).1.len() == 1
}

/// `sum` (or `mean`) over a split axis left as a partial sum: each device reduces its part
/// (a mean divides by the global count); the all-reduce waits for the gradient buckets.
fn partial_sum(
    v: &Value,
    mean: bool,
    axis: Option<usize>,
    keepdim: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let x = sv_of(v).ok_or_else(|| internal("not a sharded tensor"))?;
    let nd = x.s.shape.len();
    let axes: Vec<usize> = match axis {
        Some(a) => vec![a],
        None => (0..nd).collect(),
    };
    let (mut out, comms) = rules::reduce(&x.s.layout, &axes, keepdim);
    if axis.is_none() {
        out = Layout::replicated(if keepdim { nd } else { 0 });
    }
    out.partial = comms.first().copied();
    let count: f64 = axes.iter().map(|&a| x.s.shape[a] as f64).product();
    let ax = axis.map(|a| a as isize);
    let dt = {
        let t = Tensor::abstract_tensor(&x.s.shape, x.s.dtype).map_err(rt)?;
        rtm::reduce(&t, rtm::ReduceOp::Sum, ax, keepdim)
            .map_err(|e| rt_at(e, span))?
            .dtype()
    };
    let work: f64 = x.s.local_shape().iter().map(|&d| d as f64).product();
    let name = if mean { "reduce_mean" } else { "reduce_sum" };
    kernel(name, &[x], out, dt, 0.0, work, move |t| {
        let s = rtm::reduce(&t[0], rtm::ReduceOp::Sum, ax, keepdim)?;
        if mean {
            rtm::binary(BinaryOp::Div, &s, Scalar::Float(count))
        } else {
            Ok(s)
        }
    })
    .map(value_of)
    .map_err(|d| d.or_at(span))
}

/// A transpose of a sharded tensor: each device transposes its shard; the split dims follow
/// the permutation (a partial sum stays partial).
fn transpose(v: &Value, perm: &[usize], span: Span) -> Result<Value, Diagnostic> {
    let x = sv_of(v).ok_or_else(|| internal("not a sharded tensor"))?;
    let layout = Layout {
        dims: perm.iter().map(|&p| x.s.layout.dims[p]).collect(),
        partial: x.s.layout.partial,
    };
    let dt = x.s.dtype;
    let perm = perm.to_vec();
    kernel("transpose", &[x], layout, dt, 0.0, 0.0, move |t| {
        t[0].transpose(Some(&perm))
    })
    .map(value_of)
    .map_err(|d| d.or_at(span))
}
