//! A kernel called with sharded arguments, compiled per device (SPEC §7).
//!
//! When the call needs no communication (a dry run on abstract shards records no collective,
//! [`crate::dist::compiled`]), the kernel is traced on the global shapes, as on one device (so
//! a shape the body reads is the global one), and its traced graph is retyped for each
//! device's shard shapes: every op's type is inferred again from the local parameter types.
//! Each distinct local signature is one compiled kernel (the Graph IR passes and lowering for
//! the session's target, with the body's `schedule.*` directives), run on each device's shards
//! on the mesh's worker threads. A retyped result whose shape is not the device's shard of the
//! dry run's result (a captured global tensor the local shapes broadcast against, a shape baked
//! into an op) sends the call back to running op by op, as does any call that communicates.
//! Plans are cached per signature of the sharded arguments, the source and the target.

use super::*;
use tessera_compiler::graph::infer::infer;

/// A call's per-device kernels.
pub(super) struct MeshPlan {
    /// The global trace the plan was made from (compared on a lookup).
    traced: Graph,
    dry: crate::dist::compiled::DryRun,
    /// The compiled kernel of each distinct local signature.
    kernels: Vec<Rc<Compiled>>,
    /// Device `r` runs `kernels[kernel_of[r]]`.
    kernel_of: Vec<usize>,
    out: OutShape,
    /// The first kernel's FLOPs per device (model).
    flops: f64,
}

/// `g` with its params typed `params` (shapes, dtypes kept) and every op's type inferred
/// again; `None` when an op does not take the new types.
fn retype(g: &Graph, params: &[Vec<usize>]) -> Option<Graph> {
    let mut g = g.clone();
    let ids: Vec<ValueId> = g.ids().collect();
    for id in ids {
        let Some(op) = g.op(id).cloned() else {
            continue;
        };
        let old = g.ty(id)?.clone();
        let declared = match &op {
            Op::Param { index } => TensorType::new(params.get(*index)?.clone(), old.dtype),
            _ => old,
        };
        let ty = infer(&g, &op, &declared).ok()?;
        g.replace(id, op, ty);
    }
    Some(g)
}

/// Each device's tensor arguments in the trace's param order (positional, then keyword): its
/// shard of a sharded argument, the tensor itself otherwise.
fn device_inputs(args: &CallArgs, n: usize) -> Vec<Vec<Tensor>> {
    let vals: Vec<&Value> = args
        .positional
        .iter()
        .map(|(v, _)| v)
        .chain(args.keywords.iter().map(|(_, v, _)| v))
        .collect();
    (0..n)
        .map(|r| {
            vals.iter()
                .filter_map(|v| match crate::tensor::sharded::as_sharded(v) {
                    Some(o) => Some(o.s.shards[r].clone()),
                    None => as_tensor(v),
                })
                .collect()
        })
        .collect()
}

impl KernelObj {
    /// The call run as compiled per-device kernels, or `None` when it runs op by op (it
    /// communicates, or the local types do not follow from the global trace). CPU device
    /// only: on `emu` and `cuda` a call with sharded arguments runs op by op (a cross-check
    /// of the cpu against the emulator does not check these kernels).
    pub(super) fn per_device(
        &self,
        it: &mut Interp,
        args: &CallArgs,
    ) -> Result<Option<Value>, Diagnostic> {
        let s = self.session.clone();
        if s.device().code != tessera_runtime::device::Code::None || self.grad.is_some() {
            return Ok(None);
        }
        // the global trace: what the body reads now
        let global = crate::dist::plain_args(args, false)?;
        let Ok(t) = trace_call(it, &self.func, &global, None) else {
            return Ok(None);
        };
        // the sharded arguments' signature, the trace, the source and the target
        let key = format!(
            "{}|{:x}|{}|{}",
            crate::dist::compiled::signature(args),
            trace_fingerprint(&t),
            source_hash(it, &self.func),
            s.target.get().name()
        );
        let cached = self.mesh_plans.borrow().get(&key).and_then(|p| match p {
            Some(p) if p.traced.same_trace(&t.graph) => Some(Some(p.clone())),
            Some(_) => None,
            None => Some(None),
        });
        let plan = match cached {
            Some(p) => p,
            None => {
                let p = self.plan_mesh(it, args, &t)?.map(Rc::new);
                self.mesh_plans.borrow_mut().insert(key, p.clone());
                p
            }
        };
        let Some(plan) = plan else {
            return Ok(None);
        };
        let n = crate::dist::compiled::sharded_args(args)
            .first()
            .map_or(0, |o| o.s.mesh.size());
        let inputs = device_inputs(args, n);
        if inputs.iter().flatten().any(Tensor::is_abstract) {
            // shapes only (`graph.lower`, a profile of abstract tensors): each device's shards
            // of the dry run's results
            let mesh = crate::dist::compiled::sharded_args(args)[0].s.mesh.clone();
            let outs = (0..n)
                .map(|r| {
                    plan.dry
                        .outs
                        .iter()
                        .map(|(l, g, d)| {
                            let s = crate::dist::compiled::shard_shape(&mesh, l, g, r);
                            Tensor::abstract_tensor(&s, *d)
                        })
                        .collect::<tessera_runtime::Result<Vec<_>>>()
                })
                .collect::<tessera_runtime::Result<Vec<_>>>()
                .map_err(|e| Diagnostic::from(e).or_at(args.span))?;
            let vals = crate::dist::compiled::results(
                args, &plan.dry, outs, &self.name, plan.flops, None,
            )?;
            return Ok(Some(shape_result(&plan.out, vals)));
        }
        let captures = t.captures.as_slice();
        let graphs: Vec<(&Graph, &[Tensor])> =
            plan.kernels.iter().map(|c| (&c.graph, captures)).collect();
        let kernel_of = plan.kernel_of.as_slice();
        let (outs, us) = crate::dist::compiled::run_devices(args, |r| {
            let (g, caps) = graphs[kernel_of[r]];
            tessera_runtime::interp::run(g, &inputs[r], caps)
        })
        .map_err(|d| d.or_at(args.span))?;
        let vals = crate::dist::compiled::results(
            args,
            &plan.dry,
            outs,
            &self.name,
            plan.flops,
            Some(us),
        )?;
        Ok(Some(shape_result(&plan.out, vals)))
    }

    /// The dry run, the global trace and the per-device kernels of a call (`None`: op by op).
    fn plan_mesh(
        &self,
        it: &mut Interp,
        args: &CallArgs,
        t: &Traced,
    ) -> Result<Option<MeshPlan>, Diagnostic> {
        let s = self.session.clone();
        let func = self.func.clone();
        let Some(dry) = crate::dist::compiled::dry_run(&s, args, |a| it.call(&func, a)) else {
            return Ok(None);
        };
        let xs = crate::dist::compiled::sharded_args(args);
        let Some(mesh) = xs.first().map(|o| o.s.mesh.clone()) else {
            return Ok(None);
        };
        let inputs = device_inputs(args, mesh.size());
        let target = s.target.get();
        let mut keys: Vec<Vec<Vec<usize>>> = Vec::new();
        let mut kernels: Vec<Rc<Compiled>> = Vec::new();
        let mut kernel_of = Vec::with_capacity(mesh.size());
        for (r, ins) in inputs.iter().enumerate() {
            let shapes: Vec<Vec<usize>> = ins.iter().map(|t| t.shape().to_vec()).collect();
            if let Some(i) = keys.iter().position(|k| *k == shapes) {
                kernel_of.push(i);
                continue;
            }
            let Some(local) = retype(&t.graph, &shapes) else {
                return Ok(None);
            };
            // each result must be this device's shard of the dry run's result
            for (o, (layout, shape, dtype)) in local.outputs.iter().zip(&dry.outs) {
                let want = crate::dist::compiled::shard_shape(&mesh, layout, shape, r);
                if local
                    .ty(*o)
                    .is_none_or(|ty| ty.shape != want || ty.dtype != *dtype)
                {
                    return Ok(None);
                }
            }
            if local.outputs.len() != dry.outs.len() {
                return Ok(None);
            }
            let mut graph = local.clone();
            let opts = Options {
                fusion: t.directives.fusion,
                target,
            };
            let fired = optimize(&mut graph, &opts, &it.sources)
                .map_err(|e| e.to_diagnostic().or_at(args.span))?;
            let lowered = lower(&graph, &t.directives.at_call(args.span), target)?;
            let c = Compiled::new(
                KernelCode {
                    traced: local,
                    graph,
                    fired,
                    directives: t.directives.clone(),
                    lowered,
                    out: t.out.clone(),
                    ptx: RefCell::default(),
                },
                t.captures.clone(),
            );
            emit_dumps(it, &s, &c, args.span)?;
            keys.push(shapes);
            kernels.push(Rc::new(c));
            kernel_of.push(kernels.len() - 1);
        }
        let flops = kernels.first().map_or(0.0, |c| {
            (0..c.lowered.program.kernels.len())
                .filter_map(|i| tessera_compiler::cost::estimate(&c.lowered, i, target, None))
                .map(|e| e.flops)
                .sum()
        });
        Ok(Some(MeshPlan {
            traced: t.graph.clone(),
            dry,
            kernels,
            kernel_of,
            out: t.out.clone(),
            flops,
        }))
    }
}
