//! The mesh rows of a profile: a per-device kernel's modelled time, the collectives' model and
//! a whole mesh step's, recorded as profile rows.

use super::*;

/// The model's time of a per-device kernel: the slower of its FLOPs at the target's peak for
/// the dtype and its bytes at the DRAM bandwidth, plus a launch. Returns (µs, bound).
pub fn mesh_kernel_us(flops: f64, bytes: f64, dtype: &str, sys: &System) -> (f64, &'static str) {
    let spec = sys.spec;
    let peak = match dtype {
        "fp64" => spec.peak_tflops.fp64,
        "bf16" | "fp16" => spec.peak_tflops.bf16,
        "fp8_e4m3" | "fp8_e5m2" => spec.peak_tflops.fp8.unwrap_or(spec.peak_tflops.bf16),
        "tf32" => spec.peak_tflops.tf32,
        _ => spec.peak_tflops.fp32,
    };
    let c = if peak > 0.0 {
        flops / (peak * 1e12) * 1e6
    } else {
        0.0
    };
    let m = if spec.hbm_gbps > 0.0 {
        bytes / (spec.hbm_gbps * 1e9) * 1e6
    } else {
        0.0
    };
    let launch = tessera_compiler::cost::LAUNCH_US;
    if c >= m {
        (c + launch, "compute")
    } else {
        (m + launch, "memory")
    }
}

/// The model's time of a collective on `mesh` for system `sys` (NVLink inside a domain, the
/// scale-out network across domains): (µs, algorithm, bytes of the whole tensor, link).
pub fn collective_model(
    mesh: &tessera_compiler::schedule::mesh::MeshShape,
    comm: &tessera_compiler::schedule::mesh::Comm,
    local_shape: &[usize],
    elem_bytes: usize,
    sys: &System,
) -> (f64, &'static str, f64, &'static str) {
    use tessera_compiler::schedule::mesh::{comm_bytes, CommKind};
    let bytes = comm_bytes(*comm, local_shape, elem_bytes, mesh);
    let p = mesh.shape.get(comm.axis).copied().unwrap_or(1) as u32;
    let c = match comm.kind {
        CommKind::AllReduce(_) => cost::Collective::AllReduce,
        CommKind::ReduceScatter(..) => cost::Collective::ReduceScatter,
        CommKind::AllGather(_) => cost::Collective::AllGather,
        CommKind::AllToAll { .. } => cost::Collective::AllToAll,
    };
    let (gbps, link) = sys.link(&mesh.shape, comm.axis);
    let (us, algo) = cost::collective_us_at(c, bytes, p, gbps);
    (us, algo, bytes, link)
}

/// The model's time of one mesh step on system `sys` (µs): a kernel per device, or a
/// collective.
pub fn mesh_step_model_us(
    mesh: &tessera_compiler::schedule::mesh::MeshShape,
    step: &tessera_compiler::schedule::mesh::Step,
    sys: &System,
) -> f64 {
    use tessera_compiler::schedule::mesh::Step;
    match step {
        Step::Kernel {
            flops,
            bytes,
            dtype,
            ..
        } => mesh_kernel_us(*flops, *bytes, dtype, sys).0,
        Step::Collective {
            comm,
            local_shape,
            elem_bytes,
            ..
        } => collective_model(mesh, comm, local_shape, *elem_bytes, sys).0,
        Step::Wait { .. } => 0.0,
    }
}

/// Records one step on a mesh: the measured row (when it ran on data) and the model's row.
pub fn record_mesh_step(
    sink: &Sink,
    mesh: &tessera_compiler::schedule::mesh::MeshShape,
    step: &tessera_compiler::schedule::mesh::Step,
) {
    use tessera_compiler::schedule::mesh::Step;
    if matches!(step, Step::Wait { .. }) {
        return;
    }
    let target = sink.target;
    let sys = sink.system();
    let dev = match sink.system {
        Some(s) => s.name,
        None => target.name(),
    };
    let n = mesh.size();
    let (name, kind, tile, shape, measured, model) = match step {
        Step::Kernel {
            op,
            out_shape,
            dtype,
            flops,
            bytes,
            measured_us,
            ..
        } => {
            let (us, bound) = mesh_kernel_us(*flops, *bytes, dtype, &sys);
            let s = us * 1e-6;
            (
                format!("{op} (per device)"),
                Kind::Elementwise,
                format!("{dtype} {}", shape_text(out_shape)),
                out_shape.clone(),
                *measured_us,
                MeshModel {
                    latency_us: us,
                    gbps: bytes / s / 1e9,
                    tflops: flops / s / 1e12,
                    bound,
                    device: format!("{dev} ×{n}"),
                },
            )
        }
        Step::Collective {
            comm,
            local_shape,
            dtype,
            elem_bytes,
            measured_us,
            ..
        } => {
            let (us, algo, bytes, link) =
                collective_model(mesh, comm, local_shape, *elem_bytes, &sys);
            let ax = mesh.axes.get(comm.axis).cloned().unwrap_or_default();
            let s = us * 1e-6;
            // a collective leaving its NVLink domain says so
            let algo = match link {
                "nvlink" => algo.to_string(),
                other => format!("{algo} {other}"),
            };
            (
                format!("{}[{ax}]", comm.kind.name()),
                Kind::Copy,
                format!("{algo} {dtype} {}", shape_text(local_shape)),
                local_shape.clone(),
                *measured_us,
                MeshModel {
                    latency_us: us,
                    gbps: if s > 0.0 { bytes / s / 1e9 } else { f64::NAN },
                    tflops: f64::NAN,
                    bound: "comm",
                    device: format!("{dev} ×{n}"),
                },
            )
        }
        Step::Wait { .. } => return,
    };
    let row = Row {
        name,
        line: "-".to_string(),
        kind,
        tile,
        samples: measured.map(|t| vec![t]).unwrap_or_default(),
        device: measured.map(|_| format!("cpu ×{n}")),
        target,
        estimate: None,
        launches: 1,
        shape,
        mesh: Some(model),
        counters: None,
    };
    let mut rec = sink.rec.borrow_mut();
    merge(&mut rec.rows, row);
    // where the mesh's axes sit, when a system is named or an axis leaves its NVLink domain
    let mut inside = Vec::new();
    let mut across = Vec::new();
    for (a, name) in mesh.axes.iter().enumerate() {
        if mesh.shape[a] > 1 {
            match sys.axis_in_domain(&mesh.shape, a) {
                true => inside.push(name.as_str()),
                false => across.push(name.as_str()),
            }
        }
    }
    if n > 1 && (sink.system.is_some() || !across.is_empty()) {
        let names = |v: &[&str]| match v.is_empty() {
            true => "none".to_string(),
            false => v.join(", "),
        };
        let note = format!(
            "topology {}: NVLink domains of {} GPUs; mesh {} axes inside a domain: {}; across domains (scale-out {} GB/s per GPU): {}",
            sys.name,
            sys.domain,
            mesh.describe(),
            names(&inside),
            sys.scaleout_gbps,
            names(&across),
        );
        if !rec.notes.contains(&note) {
            rec.notes.push(note);
        }
    }
}

/// Records one stage of a pipeline: its measured busy time per micro-batch (µs) on its
/// worker thread, beside the model's time per micro-batch for the target.
pub fn record_pipeline_stage(sink: &Sink, name: &str, tile: &str, busy_us: &[f64], model_us: f64) {
    let target = sink.target;
    let row = Row {
        name: name.to_string(),
        line: "-".to_string(),
        kind: Kind::Elementwise,
        tile: tile.to_string(),
        samples: busy_us.to_vec(),
        device: Some("cpu thread".into()),
        target,
        estimate: None,
        launches: busy_us.len() as u32,
        shape: Vec::new(),
        mesh: Some(MeshModel {
            latency_us: model_us,
            gbps: f64::NAN,
            tflops: f64::NAN,
            bound: "-",
            device: target.name().to_string(),
        }),
        counters: None,
    };
    merge(&mut sink.rec.borrow_mut().rows, row);
}
