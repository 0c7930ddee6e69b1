//! `dist.plan(f, *args, devices=N, axes=[...])` (SPEC §7): the candidate mesh shapes for a step,
//! ranked by the cost model.
//!
//! Every ordered factorisation of `N` over the axes is a candidate. For each, the sharded
//! arguments are laid out by their own specs (the same axis names) as abstract tensors on a
//! mesh of that shape, `f` runs on them (each op per device on shapes only, nothing
//! allocated), and its mesh Schedule IR is costed for the session's system: the per-device
//! kernels at the roofline of one GPU and the collectives over NVLink inside a domain or the
//! scale-out network across domains, in sequence (no overlap), for the placement of the axes
//! on the devices (which axis is innermost) that is fastest. The table shows the predicted
//! step time, the bytes the collectives carry, the memory per device (the arguments' largest
//! shards plus the largest intermediate), the collectives chosen, the placement and the axes
//! that stay inside an NVLink domain.

use super::*;
use crate::table::{Table, TableObj};
use tessera_compiler::schedule::mesh::{comm_bytes, MeshShape};

type R = Result<Value, Diagnostic>;

/// The prime factorisation of `n` (by trial division): `(p, e)` pairs, `p` ascending.
fn prime_factors(mut n: usize) -> Vec<(usize, u32)> {
    let mut out = Vec::new();
    let mut p = 2usize;
    while p.saturating_mul(p) <= n {
        if n.is_multiple_of(p) {
            let mut e = 0;
            while n.is_multiple_of(p) {
                n /= p;
                e += 1;
            }
            out.push((p, e));
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if n > 1 {
        out.push((n, 1));
    }
    out
}

/// How many ordered tuples of `k` factors have product `n` (saturating): per prime of
/// exponent `e`, the ways to spread `e` over `k` factors, `C(e + k - 1, k - 1)`.
pub fn count_factorisations(n: usize, k: usize) -> u128 {
    if k == 0 {
        return 0;
    }
    prime_factors(n).iter().fold(1u128, |acc, &(_, e)| {
        // C(e + k - 1, e), exact at each step
        let mut c = 1u128;
        for i in 1..=u128::from(e) {
            c = c.saturating_mul(k as u128 - 1 + i) / i;
        }
        acc.saturating_mul(c)
    })
}

/// Every ordered tuple of `k` factors whose product is `n`, smaller first factors first.
pub fn factorisations(n: usize, k: usize) -> Vec<Vec<usize>> {
    fn go(n: usize, k: usize, divs: &[usize], cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if k == 1 {
            cur.push(n);
            out.push(cur.clone());
            cur.pop();
            return;
        }
        for &f in divs {
            if f > n {
                break;
            }
            if n.is_multiple_of(f) {
                cur.push(f);
                go(n / f, k - 1, divs, cur, out);
                cur.pop();
            }
        }
    }
    let mut out = Vec::new();
    if k == 0 || n == 0 {
        return out;
    }
    // the divisors of `n`, from its prime factors
    let mut divs = vec![1usize];
    for (p, e) in prime_factors(n) {
        let mut more = Vec::new();
        for &d in &divs {
            let mut x = d;
            for _ in 0..e {
                x *= p;
                more.push(x);
            }
        }
        divs.extend(more);
    }
    divs.sort_unstable();
    go(n, k, &divs, &mut Vec::new(), &mut out);
    out
}

/// Every permutation of `0..k`, the identity first.
fn permutations(k: usize) -> Vec<Vec<usize>> {
    fn go(rest: &mut Vec<usize>, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if rest.is_empty() {
            out.push(cur.clone());
            return;
        }
        for i in 0..rest.len() {
            let x = rest.remove(i);
            cur.push(x);
            go(rest, cur, out);
            cur.pop();
            rest.insert(i, x);
        }
    }
    let mut out = Vec::new();
    go(&mut (0..k).collect(), &mut Vec::new(), &mut out);
    out
}

/// One candidate's figures.
struct Candidate {
    shape: Vec<usize>,
    /// The axes from outer to inner on the devices, or "as given".
    placement: String,
    step_us: f64,
    comm_bytes: f64,
    mem_bytes: f64,
    collectives: String,
    inside: String,
}

fn fmt_bytes(b: f64) -> String {
    let (v, u) = if b >= 1e12 {
        (b / 1e12, "TB")
    } else if b >= 1e9 {
        (b / 1e9, "GB")
    } else if b >= 1e6 {
        (b / 1e6, "MB")
    } else if b >= 1e3 {
        (b / 1e3, "kB")
    } else {
        (b, "B")
    };
    format!("{v:.1} {u}")
}

/// Most candidates a plan costs.
const MAX_CANDIDATES: usize = 2000;

/// `dist.plan(f, *args, devices=N, axes=[...])`.
pub fn plan(session: &Rc<Session>, it: &mut Interp, args: CallArgs) -> R {
    let span = args.span;
    let Some((f, _)) = args.positional.first().cloned() else {
        return Err(Diagnostic::new(
            Code::E0101,
            "dist.plan(f, *args, devices=N, axes=[...]) needs the step function",
        )
        .at(span));
    };
    let rest: Vec<(Value, Span)> = args.positional[1..].to_vec();
    let mut devices: Option<usize> = None;
    let mut axes: Option<Vec<String>> = None;
    for (k, v, s) in &args.keywords {
        match &**k {
            "devices" => {
                devices = Some(match v {
                    Value::Int(n) if *n >= 1 => *n as usize,
                    other => {
                        return Err(Diagnostic::new(
                            Code::E0101,
                            format!("devices must be a positive int, not {}", other.repr()),
                        )
                        .at(*s))
                    }
                })
            }
            "axes" => axes = Some(module::str_items(v, *s, "axes")?),
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("dist.plan() got an unexpected keyword argument '{other}'"),
                )
                .at(*s)
                .with_help("its keywords are devices= and axes="))
            }
        }
    }
    let first_mesh = rest
        .iter()
        .find_map(|(v, _)| as_sharded(v).map(|o| o.s.mesh.clone()));
    let devices = devices
        .or(first_mesh.as_ref().map(|m| m.size()))
        .ok_or_else(|| {
            Diagnostic::new(
                Code::E0101,
                "dist.plan needs devices=N (no argument is sharded)",
            )
            .at(span)
        })?;
    let axes = match (axes, &first_mesh) {
        (Some(a), _) => a,
        (None, Some(m)) => m.shape.axes.clone(),
        (None, None) => {
            return Err(Diagnostic::new(
                Code::E0101,
                "dist.plan needs axes=[...] (no argument is sharded)",
            )
            .at(span))
        }
    };
    // every sharded argument's axes must be among the plan's
    for (v, s) in &rest {
        if let Some(o) = as_sharded(v) {
            for a in o.s.layout.dims.iter().flatten() {
                let name = &o.s.mesh.shape.axes[*a];
                if !axes.contains(name) {
                    return Err(e400(format!(
                        "an argument is split over mesh axis '{name}', which the plan's axes ({}) do not name",
                        axes.join(", ")
                    ))
                    .at(*s));
                }
            }
        }
    }
    // every candidate is a mesh of `devices` devices: over the host bound, none can be made
    rtm::mesh::check_mesh_size(devices).map_err(|e| rt_at(e, span))?;
    let count = count_factorisations(devices, axes.len());
    if count > MAX_CANDIDATES as u128 {
        return Err(e400(format!(
            "{devices} devices over {} axes make {count} mesh shapes, more than the {MAX_CANDIDATES} a plan costs",
            axes.len(),
        ))
        .at(span)
        .with_help("name fewer axes"));
    }
    let shapes = factorisations(devices, axes.len());
    let sys = session.system();
    // the plan's runs are not the profile's
    let was_active = std::mem::replace(&mut session.profile.borrow_mut().active, false);
    let mut cands = Vec::new();
    let mut failed: Vec<(Vec<usize>, String)> = Vec::new();
    for shape in shapes {
        match candidate(session, it, &f, &rest, &axes, &shape, &sys, span) {
            Ok(c) => cands.push(c),
            Err(d) => failed.push((shape, d.message)),
        }
    }
    session.profile.borrow_mut().active = was_active;
    cands.sort_by(|a, b| {
        a.step_us
            .total_cmp(&b.step_us)
            .then(a.mem_bytes.total_cmp(&b.mem_bytes))
    });
    let mut t = Table::new(&[
        "#",
        "mesh",
        "step (model)",
        "comm bytes",
        "memory / device",
        "collectives",
        "placement (outer → inner)",
        "inside NVLink",
    ]);
    t.right = vec![0, 2, 3, 4];
    t.title = Some(format!(
        "dist.plan: {devices} devices over ({}) on {} ({} per NVLink domain, {}), ranked by the model's step time",
        axes.join(", "),
        sys.name,
        sys.domain,
        sys.spec.gpu
    ));
    for (i, c) in cands.iter().enumerate() {
        let mesh: Vec<String> = axes
            .iter()
            .zip(&c.shape)
            .map(|(a, n)| format!("{a}={n}"))
            .collect();
        t.rows.push(vec![
            (i + 1).to_string(),
            mesh.join(" "),
            crate::profile::fmt_time(c.step_us).trim().to_string(),
            fmt_bytes(c.comm_bytes),
            fmt_bytes(c.mem_bytes),
            c.collectives.clone(),
            c.placement.clone(),
            c.inside.clone(),
        ]);
    }
    t.notes.push(
        "step: the per-device kernels at one GPU's roofline plus the collectives (NVLink inside a domain, the scale-out network across), in sequence; memory: the arguments' largest shards plus the largest intermediate (model)".into(),
    );
    for (shape, msg) in failed.iter().take(3) {
        t.notes.push(format!("{shape:?}: not possible: {msg}"));
    }
    if failed.len() > 3 {
        t.notes
            .push(format!("{} more shapes not possible", failed.len() - 3));
    }
    Ok(Value::host(TableObj {
        type_name: "plan",
        lines: vec![],
        parts: vec![t],
    }))
}

#[allow(clippy::too_many_arguments)]
fn candidate(
    session: &Rc<Session>,
    it: &mut Interp,
    f: &Value,
    rest: &[(Value, Span)],
    axes: &[String],
    shape: &[usize],
    sys: &tessera_compiler::cost::system::System,
    span: Span,
) -> Result<Candidate, Diagnostic> {
    let mesh = Arc::new(Mesh::new(axes.to_vec(), shape.to_vec(), None).map_err(rt)?);
    let mut call = CallArgs::new(span);
    let mut mem = 0.0;
    for (v, s) in rest {
        let v = match as_sharded(v) {
            Some(o) => {
                let spec = SpecObj::of(&o.s.layout, &o.s.mesh);
                let l = spec.layout(o.s.shape.len(), &mesh)?;
                let x = Sharded::abstract_of(&o.s.shape, o.s.dtype, l, mesh.clone()).map_err(rt)?;
                mem += x.local_shape().iter().map(|&d| d as f64).product::<f64>()
                    * x.dtype.size_bytes() as f64;
                new_sharded(session, x)
            }
            None => {
                if let Some(t) = as_tensor(v) {
                    mem += t.numel() as f64 * t.dtype().size_bytes() as f64;
                }
                v.clone()
            }
        };
        call.positional.push((v, *s));
    }
    open_log(session);
    // the step's results leave it whole, as a kernel's do and as `graph.lower` shows them: a
    // partial sum left at the end is all-reduced (and costed) here
    let r = it.call(f, call).and_then(settle_value);
    let program = close_log(session);
    r?;
    let Some(ms) = program.mesh.clone() else {
        return Err(e400("the step ran no op on the mesh"));
    };
    let (mut comm, mut biggest) = (0.0, 0.0f64);
    let mut colls: Vec<(String, usize)> = Vec::new();
    for s in &program.steps {
        match s {
            Step::Collective {
                comm: c,
                local_shape,
                elem_bytes,
                ..
            } => {
                comm += comm_bytes(*c, local_shape, *elem_bytes, &ms);
                let name = format!("{}[{}]", c.kind.name(), ms.axes[c.axis]);
                match colls.iter_mut().find(|x| x.0 == name) {
                    Some(x) => x.1 += 1,
                    None => colls.push((name, 1)),
                }
            }
            Step::Wait { .. } => {}
            Step::Kernel {
                out_shape, dtype, ..
            } => {
                let e = DType::parse(dtype).map_or(4, |d| d.size_bytes());
                biggest =
                    biggest.max(out_shape.iter().map(|&d| d as f64).product::<f64>() * e as f64);
            }
        }
    }
    let collectives = if colls.is_empty() {
        "none".to_string()
    } else {
        colls
            .iter()
            .map(|(n, k)| {
                if *k > 1 {
                    format!("{n}×{k}")
                } else {
                    n.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    // the placement of the axes on the devices (outer to inner) that makes the step fastest:
    // the kernels do not depend on it, the collectives' links do (the given order first, kept
    // on a tie)
    let mut best: Option<(f64, Vec<usize>)> = None;
    for perm in permutations(axes.len()) {
        let placed = MeshShape {
            axes: perm.iter().map(|&a| ms.axes[a].clone()).collect(),
            shape: perm.iter().map(|&a| ms.shape[a]).collect(),
        };
        let pos = |a: usize| perm.iter().position(|&x| x == a).unwrap_or(a);
        let t: f64 = program
            .steps
            .iter()
            .map(|s| match s {
                Step::Collective {
                    comm: c,
                    local_shape,
                    elem_bytes,
                    ..
                } => {
                    let c = Comm {
                        kind: c.kind,
                        axis: pos(c.axis),
                    };
                    crate::profile::collective_model(&placed, &c, local_shape, *elem_bytes, sys).0
                }
                k => crate::profile::mesh_step_model_us(&ms, k, sys),
            })
            .sum();
        if best.as_ref().is_none_or(|b| t < b.0) {
            best = Some((t, perm));
        }
    }
    let (step, perm) = best.unwrap_or((0.0, (0..axes.len()).collect()));
    let placed: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
    let inside: Vec<&str> = perm
        .iter()
        .enumerate()
        .filter(|(i, &a)| shape[a] > 1 && sys.axis_in_domain(&placed, *i))
        .map(|(_, &a)| axes[a].as_str())
        .collect();
    let placement = if perm.iter().enumerate().all(|(i, &a)| i == a) {
        "as given".to_string()
    } else {
        perm.iter()
            .map(|&a| axes[a].as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(Candidate {
        shape: shape.to_vec(),
        placement,
        step_us: step,
        comm_bytes: comm,
        mem_bytes: mem + biggest,
        collectives,
        inside: if inside.is_empty() {
            "-".into()
        } else {
            inside.join(", ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::factorisations;

    #[test]
    fn every_ordered_factorisation() {
        let f = factorisations(72, 3);
        // 72 = 2^3 3^2: C(5,2) * C(4,2) = 60 ordered triples
        assert_eq!(f.len(), 60);
        assert!(f.iter().all(|s| s.iter().product::<usize>() == 72));
        assert!(f.contains(&vec![6, 4, 3]) && f.contains(&vec![1, 1, 72]));
        assert_eq!(factorisations(7, 2), vec![vec![1, 7], vec![7, 1]]);
        assert_eq!(factorisations(5, 1), vec![vec![5]]);
        for (n, k) in [
            (72, 3),
            (7, 2),
            (1, 3),
            (10_000_000, 2),
            (1 << 20, 2),
            (97, 4),
        ] {
            assert_eq!(
                super::count_factorisations(n, k),
                factorisations(n, k).len() as u128
            );
        }
        // 2^62 over 2 axes: 63 shapes, counted without enumerating
        assert_eq!(super::count_factorisations(1 << 62, 2), 63);
        let p = super::permutations(3);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![0, 1, 2]);
    }
}
