//! The profiler (SPEC §6): while it records, every kernel launch of the session is timed where
//! it really runs and set beside the cost model's estimate for the current GPU target.
//!
//! - On the `cpu` device each kernel of the launch (one Schedule IR kernel = one graph op that
//!   does work) is timed by the CPU executor: the wall time of that op, the median of
//!   `repeats` runs of the whole graph (the result is the last run's). That row says
//!   `source: measured`, `device: cpu`.
//! - Beside it, the model's row for the target (`device: sm_90`, `source: model`): latency,
//!   occupancy (registers from ptxas when it is present, else the Target IR estimate, marked
//!   `*`), GB/s and TFLOP/s at the model's latency, and which bound.
//! - On `emu` each launch the emulator runs adds a measured row (`device: emu`,
//!   `source: measured`) whose latency, occupancy, GB/s, TFLOP/s and bound are `-`: the
//!   emulator's wall time says nothing about a GPU, so the model's row gives the time. What
//!   the emulator measures exactly is printed in two tables under the profile table, one row
//!   per kernel, summed over its launches ([`tessera_runtime::emu::counters`] defines them):
//!   `emu memory counters` (warp instructions; shared wavefronts and bank conflicts, those of
//!   `ldmatrix` apart; global load and store requests with sectors/request as Nsight Compute
//!   reports it: 4 for a coalesced warp of 4-byte loads, 32 when every lane is in its own
//!   32-byte sector) and `emu instruction mix` (warp instructions by class). Kernels that run
//!   on the cpu (not lowered to Target IR) have no measured row.
//! - On `cuda` a [`crate::device::DeviceTimer`] (device events) provides the measured rows; none is installed
//!   in this build.
//!
//! A measured row's GB/s and TFLOP/s are the kernel's input + output bytes and its FLOPs over
//! the measured time; its occupancy and bound are `-` (a CPU has neither).

use crate::table::{Table, TableObj};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;
use tessera_compiler::backend::ptx::Target;
use tessera_compiler::cost::system::System;
use tessera_compiler::cost::{self, Estimate, RegSource};
use tessera_compiler::graph::{Graph, ValueId};
use tessera_compiler::pipeline::Lowered;
use tessera_compiler::schedule::{Kernel, Kind};
use tessera_lang::diag::Diagnostic;
use tessera_lang::SourceMap;
use tessera_runtime::emu::Counters;
use tessera_runtime::Tensor;

mod mesh;
mod table;

pub use mesh::*;
pub use table::*;

/// One kernel as the table shows it: launches of the same kernel (the traced function and op
/// kind, without the kernel's index in its program), shapes and `.tsr` line are merged.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    /// `file.tsr:12`, the line of the op the kernel computes (`-` when it has none).
    pub line: String,
    pub kind: Kind,
    pub tile: String,
    /// Measured times (µs) of each launch, and where they were measured.
    pub samples: Vec<f64>,
    pub device: Option<String>,
    pub target: Target,
    pub estimate: Option<Estimate>,
    pub launches: u32,
    /// Shapes of the result, to tell launches apart.
    shape: Vec<usize>,
    /// A step on a mesh: the model's figures (the kernel cost model is for compiled kernels).
    pub mesh: Option<MeshModel>,
    /// What the emulator counted, summed over the launches (`emu` only).
    pub counters: Option<Counters>,
}

/// The model's row of a per-device kernel or a collective on a mesh.
#[derive(Clone, Debug)]
pub struct MeshModel {
    pub latency_us: f64,
    pub gbps: f64,
    pub tflops: f64,
    pub bound: &'static str,
    /// `sm_90 ×8`: the target and the number of devices.
    pub device: String,
}

/// What the profiler has recorded.
#[derive(Default)]
pub struct Recorder {
    /// Recording (inside `graph.profile`, or the whole run with `--profile`).
    pub active: bool,
    /// Runs of each launch's graph; the median is kept.
    pub repeats: usize,
    /// Use ptxas' register counts when ptxas is present.
    pub ptxas: bool,
    pub rows: Vec<Row>,
    /// Lines printed under the table (a gradient's collectives on a mesh).
    pub notes: Vec<String>,
    ptxas_regs: HashMap<String, Option<u32>>,
}

impl Recorder {
    /// Starts recording; returns what was recorded before (restore it with [`Recorder::resume`]).
    pub fn start(&mut self, repeats: usize, ptxas: bool) -> (bool, usize, bool, Vec<Row>) {
        let prev = (
            self.active,
            self.repeats,
            self.ptxas,
            std::mem::take(&mut self.rows),
        );
        self.active = true;
        self.repeats = repeats.max(1);
        self.ptxas = ptxas;
        prev
    }
    /// Stops recording, returns the rows, and restores the previous state.
    pub fn finish(&mut self, prev: (bool, usize, bool, Vec<Row>)) -> Vec<Row> {
        let rows = std::mem::replace(&mut self.rows, prev.3);
        self.active = prev.0;
        self.repeats = prev.1;
        self.ptxas = prev.2;
        // Launches inside a nested profile also belong to the enclosing one.
        if self.active {
            for r in &rows {
                merge(&mut self.rows, r.clone());
            }
        }
        rows
    }
}

/// Where a launch is recorded: a session's profile, its GPU target and the multi-GPU system
/// named for the mesh cost model (`None`: the target's own).
pub struct Sink<'a> {
    pub rec: &'a RefCell<Recorder>,
    pub target: Target,
    pub system: Option<System>,
}

impl Sink<'_> {
    /// The system the mesh cost model describes.
    pub fn system(&self) -> System {
        self.system
            .unwrap_or_else(|| System::of_target(self.target))
    }
}

fn merge(rows: &mut Vec<Row>, r: Row) {
    match rows.iter_mut().find(|x| {
        x.name == r.name
            && x.line == r.line
            && x.tile == r.tile
            && x.shape == r.shape
            && x.device == r.device
            && x.target == r.target
    }) {
        Some(x) => {
            x.samples.extend(r.samples);
            x.launches += r.launches;
            match (&mut x.counters, r.counters) {
                (Some(a), Some(b)) => a.add(&b),
                (a @ None, b) => *a = b,
                (Some(_), None) => {}
            }
        }
        None => rows.push(r),
    }
}

/// The `tile` column: what the schedule chose.
pub fn tile_text(k: &Kernel) -> String {
    let s = &k.schedule;
    match k.kind {
        Kind::Matmul => format!("{}x{}x{}", s.tile[0], s.tile[1], s.tile[2]),
        // the implicit GEMM: output channels × output pixels × input channels per k-tile
        Kind::Conv if s.tensor_cores => format!("{}x{}x{}", s.tile[0], s.tile[1], s.tile[2]),
        Kind::FlashAttention | Kind::Conv => format!("{}x{}", s.tile[0], s.tile[1]),
        Kind::Elementwise | Kind::Copy if s.tile[2] == 0 => format!("{}x{}", s.tile[0], s.tile[1]),
        Kind::Elementwise | Kind::Copy => format!("{}/block", s.tile[0]),
        Kind::Spectral => format!("line {}", s.tile[0]),
        Kind::Row(_) | Kind::LayerNorm | Kind::RmsNorm | Kind::Reduce => {
            format!("{} rows/block", s.tile[0])
        }
    }
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// ptxas' register count of kernel `index`, when ptxas is present (cached per PTX text).
fn ptxas_regs(
    rec: &mut Recorder,
    l: &Lowered,
    index: usize,
    target: Target,
    sources: &SourceMap,
) -> Option<u32> {
    if !rec.ptxas {
        return None;
    }
    let t = l.kernels.get(index)?.target.as_ref()?;
    let ptx =
        tessera_compiler::backend::ptx::print::print_verified(&t.kernel, target, sources).ok()?;
    let key = format!(
        "{}:{}",
        target.name(),
        tessera_compiler::tune::cache::stable_hash(&ptx)
    );
    if let Some(r) = rec.ptxas_regs.get(&key) {
        return *r;
    }
    let r = tessera_compiler::backend::ptx::ptxas::run_ptxas(&ptx, target)
        .ok()
        .map(|r| r.registers);
    rec.ptxas_regs.insert(key, r);
    r
}

/// Records one launch of the kernels `l`: `times` holds each kernel's measured µs (by its root
/// value), empty when nothing was measured.
pub fn record(
    sink: &Sink,
    l: &Lowered,
    times: &HashMap<ValueId, f64>,
    device: Option<&str>,
    sources: &SourceMap,
) {
    record_counted(sink, l, times, &HashMap::new(), device, sources);
}

/// Records one launch of the kernels `l` on `emu`: `counted` holds what the emulator counted
/// for each kernel it ran (by root value); those kernels get a measured row.
pub fn record_emu(
    sink: &Sink,
    l: &Lowered,
    counted: &HashMap<ValueId, Counters>,
    sources: &SourceMap,
) {
    record_counted(sink, l, &HashMap::new(), counted, Some("emu"), sources);
}

/// A kernel's name without its index in the program: `step_matmul_3` → `step_matmul`.
pub fn base_name(name: &str) -> &str {
    match name.rsplit_once('_') {
        Some((base, i))
            if !base.is_empty() && !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => name,
    }
}

/// `file.tsr:12` of a span (the file's last path component), `-` when the span has no file.
pub fn line_text(sources: &SourceMap, span: tessera_lang::Span) -> String {
    match sources.get(span.file) {
        Some(f) => {
            let (l, _) = f.line_col(span.lo as usize);
            let name = f.name.rsplit('/').next().unwrap_or(&f.name);
            format!("{name}:{l}")
        }
        None => "-".to_string(),
    }
}

fn record_counted(
    sink: &Sink,
    l: &Lowered,
    times: &HashMap<ValueId, f64>,
    counted: &HashMap<ValueId, Counters>,
    device: Option<&str>,
    sources: &SourceMap,
) {
    let target = sink.target;
    let mut rec = sink.rec.borrow_mut();
    for (i, k) in l.program.kernels.iter().enumerate() {
        let regs = ptxas_regs(&mut rec, l, i, target, sources);
        let estimate = cost::estimate(l, i, target, regs);
        let row = Row {
            name: base_name(&k.name).to_string(),
            line: line_text(sources, k.span),
            kind: k.kind,
            tile: tile_text(k),
            samples: times.get(&k.root).map(|t| vec![*t]).unwrap_or_default(),
            device: device.map(str::to_string),
            target,
            estimate,
            launches: 1,
            shape: k.ty.shape.clone(),
            mesh: None,
            counters: counted.get(&k.root).copied(),
        };
        merge(&mut rec.rows, row);
    }
}

/// Runs `graph` (its kernels `l`, reading the captured tensors `captures`) on the CPU `repeats`
/// times, timing each kernel, and records the launch.
pub fn run_cpu(
    sink: &Sink,
    (graph, captures, l): (&Graph, &[Tensor], &Lowered),
    inputs: &[Tensor],
    sources: &SourceMap,
) -> Result<Vec<Tensor>, Diagnostic> {
    let repeats = sink.rec.borrow().repeats.max(1);
    let roots: Vec<ValueId> = l.program.kernels.iter().map(|k| k.root).collect();
    let mut samples: HashMap<ValueId, Vec<f64>> = HashMap::new();
    let mut outs = Vec::new();
    for _ in 0..repeats {
        let mut timer = |id: ValueId, d: Duration| {
            if roots.contains(&id) {
                samples.entry(id).or_default().push(d.as_secs_f64() * 1e6);
            }
        };
        outs = tessera_runtime::interp::run_timed(
            graph,
            inputs,
            captures,
            &mut |_, _| None::<Result<Vec<Tensor>, Diagnostic>>,
            &mut timer,
        )?;
    }
    // Abstract inputs run nothing: no measurement.
    let abstract_run = inputs.iter().any(|t| t.is_abstract());
    let times: HashMap<ValueId, f64> = if abstract_run {
        HashMap::new()
    } else {
        samples
            .iter()
            .filter_map(|(k, v)| median(v).map(|m| (*k, m)))
            .collect()
    };
    record(sink, l, &times, Some("cpu"), sources);
    Ok(outs)
}
