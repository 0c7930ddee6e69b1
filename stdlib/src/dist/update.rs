//! The mesh side of an optimizer's update (`opt.update(params, grads)`, SPEC §8): a sharded
//! parameter is updated per device, each device running the update kernel on its own shard of
//! the parameter, of the gradient and of the optimizer's state, as a data-parallel replica
//! does (docs/decisions.md, "Optimizer updates on a mesh"). The gradient is first brought to
//! the parameter's layout: a partial sum is all-reduced, a split the parameter does not have is
//! gathered, an ordinary tensor is sliced locally, each collective recorded like any other.

use super::*;

/// A sharded parameter and its gradient, both on the parameter's layout (no partial sum).
pub struct MeshUpdate {
    p: Sv,
    g: Sv,
}

impl MeshUpdate {
    /// Parameter `p` and gradient `g` (sharded on `p`'s mesh, or an ordinary tensor) of
    /// `p`'s global shape; `what` names the gradient in errors (`grads[0]`).
    pub fn new(p: &ShardedObj, g: &Value, what: &str, span: Span) -> Result<Self, Diagnostic> {
        let p = Sv {
            s: p.s.clone(),
            id: p.id,
            cx: p.cx.clone(),
        };
        let to = Layout {
            dims: p.s.layout.dims.clone(),
            partial: None,
        };
        let g = match sv_of(g) {
            Some(g) if *g.s.mesh != *p.s.mesh => {
                return Err(e400(format!(
                    "{what} lives on {}, its parameter on {}",
                    mesh_text(&g.s.mesh),
                    mesh_text(&p.s.mesh)
                ))
                .at(span)
                .with_help("shard the parameter and its gradient over the same mesh"))
            }
            Some(g) => g,
            None => {
                // an ordinary gradient is every device's: each keeps its slice, no communication
                let t = tensor_arg(g, span)?;
                let s =
                    Sharded::split(&t, to.clone(), p.s.mesh.clone()).map_err(|e| rt_at(e, span))?;
                Sv {
                    s,
                    id: next_id(&p.cx),
                    cx: p.cx.clone(),
                }
            }
        };
        let p = bring(&p, &to).map_err(|d| d.or_at(span))?;
        let g = bring(&g, &to).map_err(|d| d.or_at(span))?;
        Ok(MeshUpdate { p, g })
    }

    /// How many devices run the update.
    pub fn devices(&self) -> usize {
        self.p.s.mesh.size()
    }

    /// Device `r`'s shards of the parameter and of the gradient.
    pub fn shards(&self, r: usize) -> (Tensor, Tensor) {
        (self.p.s.shards[r].clone(), self.g.s.shards[r].clone())
    }

    /// Whether the parameter or the gradient is abstract (no values to update).
    pub fn is_abstract(&self) -> bool {
        self.p.s.is_abstract() || self.g.s.is_abstract()
    }

    /// The parameter's mesh and layout, as its optimizer state is kept (one slot per device).
    pub fn placement(&self) -> String {
        format!(
            "{} on {}",
            SpecObj::of(&self.p.s.layout, &self.p.s.mesh).text(),
            mesh_text(&self.p.s.mesh)
        )
    }

    /// Runs `f(r)` for every device `r` on the mesh's worker threads (its first result the
    /// new parameter shard, the others the new state), records one kernel step `name`
    /// (`flops` and `bytes` per device, model) and returns the new sharded parameter, on the
    /// parameter's layout, and each device's state. Abstract operands: `f` does not run, the
    /// parameter's shards are abstract and there is no state.
    pub fn run(
        &self,
        name: &str,
        flops: f64,
        bytes: f64,
        f: impl Fn(usize) -> rtm::Result<Vec<Tensor>> + Sync,
    ) -> Result<(Value, Vec<Vec<Tensor>>), Diagnostic> {
        let abstract_run = self.is_abstract();
        let t0 = Instant::now();
        let outs = if abstract_run {
            // shapes only: the parameter's layout gives every device's shard
            Vec::new()
        } else {
            per_device(self.devices(), sequential(), f).map_err(rt)?
        };
        let measured = (!abstract_run).then(|| t0.elapsed().as_secs_f64() * 1e6);
        let mut shards = Vec::with_capacity(outs.len());
        let mut state = Vec::with_capacity(outs.len());
        for mut o in outs {
            if o.is_empty() {
                return Err(Diagnostic::new(
                    Code::E0500,
                    "internal compiler error: an update gave no result",
                ));
            }
            shards.push(o.remove(0));
            state.push(o);
        }
        let p = &self.p;
        let out = next_id(&p.cx);
        let local = p.s.local_shape();
        note(
            &p.cx,
            &p.s.mesh,
            Step::Kernel {
                op: name.to_string(),
                inputs: vec![p.id, self.g.id],
                out,
                in_shapes: vec![local.clone(), self.g.s.local_shape()],
                out_shape: local,
                out_layout: p.s.layout.clone(),
                dtype: p.s.dtype.name().to_string(),
                flops,
                bytes,
                measured_us: measured,
            },
        );
        let s = if abstract_run {
            Sharded::abstract_of(&p.s.shape, p.s.dtype, p.s.layout.clone(), p.s.mesh.clone())
                .map_err(rt)?
        } else {
            Sharded {
                mesh: p.s.mesh.clone(),
                layout: p.s.layout.clone(),
                shape: p.s.shape.clone(),
                dtype: p.s.dtype,
                shards: shards.into(),
            }
        };
        Ok((with_id(&p.cx, s, out), state))
    }
}

/// A sharded gradient of an ordinary (unsharded) parameter as one tensor: gathered, its
/// collectives recorded (a replicated gradient is rank 0's copy, no communication).
pub fn whole_gradient(g: &ShardedObj, span: Span) -> Result<Tensor, Diagnostic> {
    gather_full(g, span)
}
