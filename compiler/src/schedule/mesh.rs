//! Partitioning at Graph → Schedule IR (SPEC §7): how an op on tensors laid out over a device
//! mesh runs per device, and which collectives it needs.
//!
//! A [`Layout`] says, for each tensor dimension, the mesh axis it is split over (`None`:
//! replicated), and whether the values are a pending sum over a mesh axis (`partial`: each
//! device holds a partial result of a contraction split over that axis).
//!
//! The rules (each returns the layout every operand must be brought to, and the result's
//! layout; bringing an operand to its target is a [`reshard`] plan):
//! - elementwise with NumPy broadcasting ([`elementwise`]): the result takes, per dimension,
//!   the first operand's split of a dimension it does not broadcast; the others follow (a
//!   replicated operand is sliced locally, for free; a differently split one is gathered);
//! - matmul ([`matmul`]): rows of `A` split → rows of the result; columns of `B` split → columns;
//!   the contraction dimension split on both → a partial result (`all_reduce`, or
//!   `reduce_scatter` when the consumer is split over that axis);
//! - reductions over a split axis ([`reduce`]): a local reduction, then `all_reduce`;
//! - softmax along a split axis ([`gathered`]): `all_gather` of that axis, the local softmax, and
//!   a local slice back to the input's layout (bit-identical to the unsharded softmax);
//! - attention ([`attention`]): split by heads (any leading dimension) runs locally; split by
//!   sequence keeps the query rows split and gathers the keys and values;
//! - reshards between layouts ([`reshard`]): `all_to_all` when a split moves from one dimension
//!   to another over the same axis, `all_gather` when a split is dropped or changes axis, and a
//!   local slice for a new split.
//!
//! [`Program`] is the Schedule IR of a computation on a mesh: the per-device kernels and the
//! collectives in order, with the overlap plan; it prints as text.

use std::fmt::Write as _;

/// The axes of a device mesh and their sizes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MeshShape {
    pub axes: Vec<String>,
    pub shape: Vec<usize>,
}

impl MeshShape {
    /// The number of devices.
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn axis_index(&self, name: &str) -> Option<usize> {
        self.axes.iter().position(|a| a == name)
    }
    /// `[tp=2, dp=4]`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .axes
            .iter()
            .zip(&self.shape)
            .map(|(a, n)| format!("{a}={n}"))
            .collect();
        format!("[{}]", parts.join(", "))
    }
}

/// How a tensor is laid out over a mesh.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Per tensor dimension: the mesh axis it is split over.
    pub dims: Vec<Option<usize>>,
    /// The values are partial sums over this mesh axis.
    pub partial: Option<usize>,
}

impl Layout {
    pub fn replicated(ndim: usize) -> Layout {
        Layout {
            dims: vec![None; ndim],
            partial: None,
        }
    }
    pub fn is_replicated(&self) -> bool {
        self.dims.iter().all(Option::is_none) && self.partial.is_none()
    }
    /// The tensor dimension split over mesh axis `axis`.
    pub fn dim_of(&self, axis: usize) -> Option<usize> {
        self.dims.iter().position(|d| *d == Some(axis))
    }
    /// The largest shard a device holds (every shard when the splits are even): a split
    /// dimension of `n` over `k` devices is `ceil(n / k)`, as `torch.chunk` cuts it.
    pub fn local_shape(&self, global: &[usize], mesh: &MeshShape) -> Vec<usize> {
        global
            .iter()
            .zip(&self.dims)
            .map(|(&n, d)| match d {
                Some(a) => n.div_ceil(mesh.shape[*a].max(1)),
                None => n,
            })
            .collect()
    }
    /// The shard of the device at mesh coordinates `coords`: per dimension, the start and
    /// length of its slice ([`shard_range`]).
    pub fn shard_ranges(
        &self,
        global: &[usize],
        mesh: &MeshShape,
        coords: &[usize],
    ) -> Vec<(usize, usize)> {
        global
            .iter()
            .zip(&self.dims)
            .map(|(&n, d)| match d {
                Some(a) => shard_range(n, mesh.shape[*a], coords[*a]),
                None => (0, n),
            })
            .collect()
    }
    /// Whether every split dimension divides evenly by its mesh axis.
    pub fn is_even(&self, global: &[usize], mesh: &MeshShape) -> bool {
        global.iter().zip(&self.dims).all(|(&n, d)| match d {
            Some(a) => n.is_multiple_of(mesh.shape[*a].max(1)),
            None => true,
        })
    }
    /// `(tp, None)`, with `, partial=tp` when partial.
    pub fn describe(&self, mesh: &MeshShape) -> String {
        let name = |a: usize| mesh.axes.get(a).cloned().unwrap_or_else(|| format!("#{a}"));
        let parts: Vec<String> = self
            .dims
            .iter()
            .map(|d| d.map_or("None".to_string(), name))
            .collect();
        let mut s = format!("({})", parts.join(", "));
        if let Some(p) = self.partial {
            let _ = write!(s, " partial(sum over {})", name(p));
        }
        s
    }
}

/// Shard `i` of a dimension of `n` split over `k` devices, as `torch.chunk` cuts it: chunks
/// of `ceil(n / k)`, the last ones smaller or empty. Returns `(start, len)`.
pub fn shard_range(n: usize, k: usize, i: usize) -> (usize, usize) {
    let c = n.div_ceil(k.max(1));
    let start = i.saturating_mul(c).min(n);
    let end = (i + 1).saturating_mul(c).min(n);
    (start, end - start)
}

/// A reduction of a collective.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedOp {
    Sum,
    Max,
    Min,
}

impl RedOp {
    pub fn name(self) -> &'static str {
        match self {
            RedOp::Sum => "sum",
            RedOp::Max => "max",
            RedOp::Min => "min",
        }
    }
    pub fn parse(s: &str) -> Option<RedOp> {
        Some(match s {
            "sum" => RedOp::Sum,
            "max" => RedOp::Max,
            "min" => RedOp::Min,
            _ => return None,
        })
    }
}

/// A collective over one mesh axis (every group of devices that differ only in that axis).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CommKind {
    AllReduce(RedOp),
    /// Reduce, and leave each device the slice of dimension `dim` of its rank.
    ReduceScatter(RedOp, usize),
    /// Concatenate the group's shards along `dim`.
    AllGather(usize),
    /// Split dimension `split` into group-size chunks, send chunk `j` to rank `j`, concatenate
    /// what arrives along `concat`.
    AllToAll {
        split: usize,
        concat: usize,
    },
}

impl CommKind {
    pub fn name(self) -> &'static str {
        match self {
            CommKind::AllReduce(_) => "all_reduce",
            CommKind::ReduceScatter(..) => "reduce_scatter",
            CommKind::AllGather(_) => "all_gather",
            CommKind::AllToAll { .. } => "all_to_all",
        }
    }
}

/// One collective of a plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Comm {
    pub kind: CommKind,
    pub axis: usize,
}

/// The layout after `c` is applied to a tensor laid out as `l`.
pub fn after(l: &Layout, c: Comm) -> Layout {
    let mut out = l.clone();
    match c.kind {
        CommKind::AllReduce(_) => out.partial = None,
        CommKind::ReduceScatter(_, d) => {
            out.partial = None;
            out.dims[d] = Some(c.axis);
        }
        CommKind::AllGather(d) => out.dims[d] = None,
        CommKind::AllToAll { split, concat } => {
            out.dims[concat] = None;
            out.dims[split] = Some(c.axis);
        }
    }
    out
}

/// The collectives that bring a tensor laid out as `from` to `to` (a local slice for the
/// splits `to` adds is left to the caller: it needs no communication). A partial `from` is
/// reduced first: `reduce_scatter` onto the dimension `to` splits over that axis, if any,
/// else `all_reduce`.
pub fn reshard(from: &Layout, to: &Layout) -> Vec<Comm> {
    let mut cur = from.clone();
    let mut out = Vec::new();
    if let Some(p) = cur.partial {
        let c = match to.dim_of(p) {
            Some(d) if cur.dims[d].is_none() && cur.dim_of(p).is_none() => Comm {
                kind: CommKind::ReduceScatter(RedOp::Sum, d),
                axis: p,
            },
            _ => Comm {
                kind: CommKind::AllReduce(RedOp::Sum),
                axis: p,
            },
        };
        cur = after(&cur, c);
        out.push(c);
    }
    // A split moving between dimensions over the same axis: all_to_all.
    for i in 0..cur.dims.len() {
        let Some(a) = cur.dims[i] else { continue };
        if to.dims.get(i) == Some(&Some(a)) {
            continue;
        }
        if let Some(j) = to.dim_of(a) {
            if cur.dims[j].is_none() {
                let c = Comm {
                    kind: CommKind::AllToAll {
                        split: j,
                        concat: i,
                    },
                    axis: a,
                };
                cur = after(&cur, c);
                out.push(c);
            }
        }
    }
    for i in 0..cur.dims.len() {
        if let Some(a) = cur.dims[i] {
            if to.dims.get(i) != Some(&Some(a)) {
                let c = Comm {
                    kind: CommKind::AllGather(i),
                    axis: a,
                };
                cur = after(&cur, c);
                out.push(c);
            }
        }
    }
    out
}

/// Elementwise with broadcasting: the target layout of each operand (same rank as the
/// operand) and the result's layout.
pub fn elementwise(operands: &[(&[usize], &Layout)], out_shape: &[usize]) -> (Vec<Layout>, Layout) {
    let nd = out_shape.len();
    let mut out = Layout::replicated(nd);
    let mut used = Vec::new();
    // Output dim `o` corresponds to operand dim `o - (nd - rank)`.
    for (shape, lay) in operands {
        let off = nd - shape.len().min(nd);
        for (i, d) in lay.dims.iter().enumerate() {
            let Some(a) = d else { continue };
            let o = off + i;
            if shape[i] == out_shape[o] && out.dims[o].is_none() && !used.contains(a) {
                out.dims[o] = Some(*a);
                used.push(*a);
            }
        }
    }
    let targets = operands
        .iter()
        .map(|(shape, _)| {
            let off = nd - shape.len().min(nd);
            Layout {
                dims: (0..shape.len())
                    .map(|i| {
                        if shape[i] == out_shape[off + i] {
                            out.dims[off + i]
                        } else {
                            None // broadcast along this dimension: every device needs all of it
                        }
                    })
                    .collect(),
                partial: None,
            }
        })
        .collect();
    (targets, out)
}

/// `A @ B` (both at least 2-D after NumPy's promotion of 1-D operands is excluded by the
/// caller): targets for `A`, `B`, and the result layout (partial when the contraction is split).
pub fn matmul(
    a_shape: &[usize],
    a: &Layout,
    b_shape: &[usize],
    b: &Layout,
    out_shape: &[usize],
) -> (Layout, Layout, Layout) {
    let (na, nb, no) = (a_shape.len(), b_shape.len(), out_shape.len());
    // Batch dims follow the elementwise rule.
    let ab = &a_shape[..na - 2];
    let bb = &b_shape[..nb - 2];
    let a_batch = Layout {
        dims: a.dims[..na - 2].to_vec(),
        partial: None,
    };
    let b_batch = Layout {
        dims: b.dims[..nb - 2].to_vec(),
        partial: None,
    };
    let (bt, ob) = elementwise(&[(ab, &a_batch), (bb, &b_batch)], &out_shape[..no - 2]);
    let mut used: Vec<usize> = ob.dims.iter().flatten().copied().collect();
    let mut take = |x: Option<usize>| -> Option<usize> {
        let a = x?;
        if used.contains(&a) {
            None
        } else {
            used.push(a);
            Some(a)
        }
    };
    let m = take(a.dims[na - 2]);
    let n = take(b.dims[nb - 1]);
    let k = take(a.dims[na - 1].or(b.dims[nb - 2]));
    let mut ta = bt[0].dims.clone();
    ta.extend([m, k]);
    let mut tb = bt[1].dims.clone();
    tb.extend([k, n]);
    let mut to = ob.dims.clone();
    to.extend([m, n]);
    (
        Layout {
            dims: ta,
            partial: None,
        },
        Layout {
            dims: tb,
            partial: None,
        },
        Layout {
            dims: to,
            partial: k,
        },
    )
}

/// A reduction over `axes` (sorted, distinct): the input stays as it is; the result drops (or
/// keeps as size 1, replicated) the reduced dimensions; the mesh axes of reduced dimensions
/// need an `all_reduce` (returned, in dimension order).
pub fn reduce(x: &Layout, axes: &[usize], keepdim: bool) -> (Layout, Vec<usize>) {
    let mut dims = Vec::new();
    let mut comm = Vec::new();
    for (i, d) in x.dims.iter().enumerate() {
        if axes.contains(&i) {
            if let Some(a) = d {
                comm.push(*a);
            }
            if keepdim {
                dims.push(None);
            }
        } else {
            dims.push(*d);
        }
    }
    (
        Layout {
            dims,
            partial: None,
        },
        comm,
    )
}

/// An op that needs dimension `axis` whole on every device (softmax, layernorm along it): the
/// input's target layout.
pub fn gathered(x: &Layout, axis: usize) -> Layout {
    let mut t = x.clone();
    t.partial = None;
    if let Some(d) = t.dims.get_mut(axis) {
        *d = None;
    }
    t
}

/// Attention over `[..., seq, d]`: targets for Q, K, V and the result's layout. Leading
/// (batch, head) dimensions follow the elementwise rule; Q's sequence split is kept unless
/// `causal` (the mask needs the global row index); K and V are gathered along sequence.
pub fn attention(
    q_shape: &[usize],
    q: &Layout,
    k_shape: &[usize],
    k: &Layout,
    v_shape: &[usize],
    v: &Layout,
    causal: bool,
) -> (Layout, Layout, Layout, Layout) {
    let lead = |s: &[usize]| s[..s.len() - 2].to_vec();
    let ld = |l: &Layout| Layout {
        dims: l.dims[..l.dims.len() - 2].to_vec(),
        partial: None,
    };
    let (qs, ks, vs) = (lead(q_shape), lead(k_shape), lead(v_shape));
    let (ql, kl, vl) = (ld(q), ld(k), ld(v));
    let mut out_lead = qs.clone();
    for s in [&ks, &vs] {
        if s.len() > out_lead.len() {
            out_lead = s.clone();
        }
    }
    let (t, o) = elementwise(&[(&qs, &ql), (&ks, &kl), (&vs, &vl)], &out_lead);
    let used: Vec<usize> = o.dims.iter().flatten().copied().collect();
    let q_seq = q.dims[q.dims.len() - 2].filter(|a| !causal && !used.contains(a));
    let full = |mut l: Layout, seq: Option<usize>| {
        l.dims.extend([seq, None]);
        l
    };
    let mut out = o.clone();
    out.dims.extend([q_seq, None]);
    (
        full(t[0].clone(), q_seq),
        full(t[1].clone(), None),
        full(t[2].clone(), None),
        out,
    )
}

/// One step of a [`Program`].
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The same kernel on every device, on its local shards.
    Kernel {
        op: String,
        /// Value numbers of the operands and the result.
        inputs: Vec<usize>,
        out: usize,
        /// Local shapes of the operands and the result.
        in_shapes: Vec<Vec<usize>>,
        out_shape: Vec<usize>,
        out_layout: Layout,
        dtype: String,
        /// Work per device: floating-point operations, bytes read and written.
        flops: f64,
        bytes: f64,
        /// Measured wall time of the step over all devices (µs), when it ran on data.
        measured_us: Option<f64>,
    },
    /// A collective over one mesh axis.
    Collective {
        comm: Comm,
        input: usize,
        out: usize,
        /// The shape each device sends (its local shard) and the element size.
        local_shape: Vec<usize>,
        dtype: String,
        elem_bytes: usize,
        measured_us: Option<f64>,
    },
    /// Where an asynchronous collective (value `out`, issued earlier and running beside the
    /// steps between) is waited for. A collective with a wait prints as `async`.
    Wait { out: usize },
}

impl Step {
    pub fn out(&self) -> usize {
        match self {
            Step::Kernel { out, .. } | Step::Collective { out, .. } | Step::Wait { out } => *out,
        }
    }
    pub fn inputs(&self) -> Vec<usize> {
        match self {
            Step::Kernel { inputs, .. } => inputs.clone(),
            Step::Collective { input, .. } => vec![*input],
            Step::Wait { out } => vec![*out],
        }
    }
}

/// The Schedule IR of a computation on a mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub mesh: Option<MeshShape>,
    pub steps: Vec<Step>,
}

/// A collective's payload: the full tensor it reduces or assembles, in bytes (what the
/// bandwidth terms of the cost model take).
pub fn comm_bytes(c: Comm, local: &[usize], elem: usize, mesh: &MeshShape) -> f64 {
    let n: f64 = local.iter().map(|&d| d as f64).product::<f64>() * elem as f64;
    let p = mesh.shape.get(c.axis).copied().unwrap_or(1) as f64;
    match c.kind {
        // Each device holds the full tensor (all-reduce, reduce-scatter input, all-to-all).
        CommKind::AllReduce(_) | CommKind::ReduceScatter(..) | CommKind::AllToAll { .. } => n,
        // Each device holds 1/p of the result.
        CommKind::AllGather(_) => n * p,
    }
}

/// For each collective (by step index): the kernels after it, up to the next collective, that
/// do not depend on it, so that it can run while they compute (chunk N's compute hides chunk
/// N-1's communication).
pub fn overlap(steps: &[Step]) -> Vec<(usize, Vec<usize>)> {
    let mut plan = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let Step::Collective { out, .. } = s else {
            continue;
        };
        let mut tainted = vec![*out];
        let mut hide = Vec::new();
        for (j, t) in steps.iter().enumerate().skip(i + 1) {
            if matches!(t, Step::Collective { .. }) {
                break;
            }
            if matches!(t, Step::Wait { .. }) {
                continue;
            }
            if t.inputs().iter().any(|x| tainted.contains(x)) {
                tainted.push(t.out());
            } else {
                hide.push(j);
            }
        }
        if !hide.is_empty() {
            plan.push((i, hide));
        }
    }
    plan
}

fn shape_text(s: &[usize]) -> String {
    let v: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

impl Program {
    /// The Schedule IR text.
    pub fn print(&self) -> String {
        let mut o = String::new();
        let Some(mesh) = &self.mesh else {
            return "// no op ran on a mesh\n".into();
        };
        let _ = writeln!(o, "mesh {} ({} devices) {{", mesh.describe(), mesh.size());
        // Value numbers in order of appearance.
        let mut names: Vec<usize> = Vec::new();
        let name = |v: usize, names: &mut Vec<usize>| -> String {
            let i = match names.iter().position(|x| *x == v) {
                Some(i) => i,
                None => {
                    names.push(v);
                    names.len() - 1
                }
            };
            format!("%{i}")
        };
        for s in &self.steps {
            match s {
                Step::Kernel {
                    op,
                    inputs,
                    out,
                    in_shapes,
                    out_shape,
                    out_layout,
                    dtype,
                    ..
                } => {
                    let args: Vec<String> = inputs
                        .iter()
                        .zip(in_shapes)
                        .map(|(v, sh)| format!("{}: {}", name(*v, &mut names), shape_text(sh)))
                        .collect();
                    let r = name(*out, &mut names);
                    let _ = writeln!(
                        o,
                        "  {r} = kernel.{op}({}) per_device -> {}{dtype} layout={}",
                        args.join(", "),
                        shape_text(out_shape),
                        out_layout.describe(mesh)
                    );
                }
                Step::Collective {
                    comm,
                    input,
                    out,
                    local_shape,
                    dtype,
                    elem_bytes,
                    ..
                } => {
                    let ax = mesh.axes.get(comm.axis).cloned().unwrap_or_default();
                    let detail = match comm.kind {
                        CommKind::AllReduce(r) => r.name().to_string(),
                        CommKind::ReduceScatter(r, d) => format!("{}, dim={d}", r.name()),
                        CommKind::AllGather(d) => format!("dim={d}"),
                        CommKind::AllToAll { split, concat } => {
                            format!("split={split}, concat={concat}")
                        }
                    };
                    let a = name(*input, &mut names);
                    let r = name(*out, &mut names);
                    let bytes = comm_bytes(*comm, local_shape, *elem_bytes, mesh);
                    let waited = self
                        .steps
                        .iter()
                        .any(|w| matches!(w, Step::Wait { out: x } if x == out));
                    let _ = writeln!(
                        o,
                        "  {r} = collective.{}[{ax}]({a}: {}{dtype}) {{{detail}}} bytes={bytes}{}",
                        comm.kind.name(),
                        shape_text(local_shape),
                        if waited { " async" } else { "" },
                    );
                }
                Step::Wait { out } => {
                    let r = name(*out, &mut names);
                    let _ = writeln!(o, "  wait {r}");
                }
            }
        }
        let plan = overlap(&self.steps);
        let collectives = self
            .steps
            .iter()
            .any(|s| matches!(s, Step::Collective { .. }));
        if !collectives {
            o.push_str("  overlap: none (no collective)\n");
        } else if plan.is_empty() {
            o.push_str("  overlap: none (every collective feeds the next kernel)\n");
        } else {
            o.push_str("  overlap: load N+1 / compute N / communicate N-1\n");
            for (c, ks) in plan {
                let cn = name(self.steps[c].out(), &mut names);
                let kn: Vec<String> = ks
                    .iter()
                    .map(|k| name(self.steps[*k].out(), &mut names))
                    .collect();
                let _ = writeln!(o, "    {cn} communicates while {} compute", kn.join(", "));
            }
        }
        o.push_str("}\n");
        o
    }
}

#[cfg(test)]
mod tests;
