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
//! - On `cuda` a [`DeviceTimer`] (device events) provides the measured rows; none is installed
//!   in this build.
//!
//! A measured row's GB/s and TFLOP/s are the kernel's input + output bytes and its FLOPs over
//! the measured time; its occupancy and bound are `-` (a CPU has neither).

use crate::kernel::{Compiled, Session};
use crate::table::{Table, TableObj};
use std::collections::HashMap;
use std::time::Duration;
use tessera_compiler::backend::ptx::Target;
use tessera_compiler::cost::system::System;
use tessera_compiler::cost::{self, Estimate, RegSource};
use tessera_compiler::graph::ValueId;
use tessera_compiler::schedule::{Kernel, Kind};
use tessera_lang::diag::Diagnostic;
use tessera_lang::SourceMap;
use tessera_runtime::emu::Counters;
use tessera_runtime::Tensor;

/// Times kernels on a GPU with device events: the interface the CUDA device implements (none
/// is installed in this build). `time_us` launches kernel `index` of `l` on inputs of its
/// operand types (the timer makes them) and returns the median time of repeated launches, µs.
pub trait DeviceTimer {
    fn device(&self) -> String;
    fn time_us(
        &self,
        l: &tessera_compiler::pipeline::Lowered,
        index: usize,
    ) -> Result<f64, TimeError>;
}

/// Why a kernel could not be timed on a device.
#[derive(Debug)]
pub enum TimeError {
    /// The program has no kernel of that index.
    NoKernel(usize),
    /// The kernel (named) has no Target IR.
    NotLowered(String),
    /// Operand `index` of kernel `kernel` has no type.
    Untyped { kernel: String, index: usize },
    /// The sample inputs could not be made.
    Input(tessera_runtime::RuntimeError),
    /// The device was closed (after a failed rebuild).
    Closed,
    /// The PTX could not be printed, or the inputs passed.
    Kernel(Diagnostic),
    /// The driver failed.
    Driver(tessera_runtime::cuda::CudaError),
}

impl std::fmt::Display for TimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeError::NoKernel(i) => write!(f, "no kernel {i}"),
            TimeError::NotLowered(k) => write!(f, "kernel '{k}' has no Target IR"),
            TimeError::Untyped { kernel, index } => {
                write!(f, "kernel '{kernel}': operand {index} has no type")
            }
            TimeError::Input(e) => f.write_str(&e.message),
            TimeError::Closed => f.write_str("the CUDA device is closed"),
            TimeError::Kernel(d) => f.write_str(&d.message),
            TimeError::Driver(e) => e.fmt(f),
        }
    }
}

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
    c: &Compiled,
    index: usize,
    target: Target,
    sources: &SourceMap,
) -> Option<u32> {
    if !rec.ptxas {
        return None;
    }
    let t = c.lowered.kernels.get(index)?.target.as_ref()?;
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

/// Records one launch of `c`: `times` holds each kernel's measured µs (by its root value),
/// empty when nothing was measured.
pub fn record(
    session: &Session,
    c: &Compiled,
    times: &HashMap<ValueId, f64>,
    device: Option<&str>,
    sources: &SourceMap,
) {
    record_counted(session, c, times, &HashMap::new(), device, sources);
}

/// Records one launch of `c` on `emu`: `counted` holds what the emulator counted for each
/// kernel it ran (by root value); those kernels get a measured row.
pub fn record_emu(
    session: &Session,
    c: &Compiled,
    counted: &HashMap<ValueId, Counters>,
    sources: &SourceMap,
) {
    record_counted(session, c, &HashMap::new(), counted, Some("emu"), sources);
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
    session: &Session,
    c: &Compiled,
    times: &HashMap<ValueId, f64>,
    counted: &HashMap<ValueId, Counters>,
    device: Option<&str>,
    sources: &SourceMap,
) {
    let target = session.target.get();
    let mut rec = session.profile.borrow_mut();
    for (i, k) in c.lowered.program.kernels.iter().enumerate() {
        let regs = ptxas_regs(&mut rec, c, i, target, sources);
        let estimate = cost::estimate(&c.lowered, i, target, regs);
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

/// Runs `c` on the CPU `repeats` times, timing each kernel, and records the launch.
pub fn run_cpu(
    session: &Session,
    c: &Compiled,
    inputs: &[Tensor],
    sources: &SourceMap,
) -> Result<Vec<Tensor>, Diagnostic> {
    let repeats = session.profile.borrow().repeats.max(1);
    let roots: Vec<ValueId> = c.lowered.program.kernels.iter().map(|k| k.root).collect();
    let mut samples: HashMap<ValueId, Vec<f64>> = HashMap::new();
    let mut outs = Vec::new();
    for _ in 0..repeats {
        let mut timer = |id: ValueId, d: Duration| {
            if roots.contains(&id) {
                samples.entry(id).or_default().push(d.as_secs_f64() * 1e6);
            }
        };
        outs = tessera_runtime::interp::run_timed(
            &c.graph,
            inputs,
            &c.captures,
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
    record(session, c, &times, Some("cpu"), sources);
    Ok(outs)
}

/// A time with a unit, always 11 characters wide (`   12.345 µs`).
pub fn fmt_time(us: f64) -> String {
    if !us.is_finite() {
        return format!("{:>11}", "-");
    }
    let (v, unit) = if us < 1.0 {
        (us * 1e3, "ns")
    } else if us < 1e3 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s ")
    };
    format!("{v:>8.3} {unit}")
}

fn fmt_rate(v: f64, width: usize, prec: usize) -> String {
    if v.is_finite() {
        format!("{v:>width$.prec$}")
    } else {
        format!("{:>width$}", "-")
    }
}

/// The name a row shows: the kernel and its result's shape (`mlp_matmul[64x128]`); rows of a
/// mesh or a pipeline carry their shapes in the `tile` column.
pub fn row_label(r: &Row) -> String {
    if r.mesh.is_some() || r.shape.is_empty() {
        return r.name.clone();
    }
    let dims: Vec<String> = r.shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", r.name, dims.join("x"))
}

/// Sums of one (source, device) group of rows, for the totals at the end of the table.
#[derive(Default)]
struct Total {
    launches: u64,
    us: f64,
    bytes: f64,
}

/// Adds one row's launches, time (µs) and bytes to the sums of its (source, device).
fn add_total(
    sums: &mut Vec<((&'static str, String), Total)>,
    source: &'static str,
    device: &str,
    n: u32,
    us: f64,
    bytes: f64,
) {
    let key = (source, device.to_string());
    let i = match sums.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            sums.push((key, Total::default()));
            sums.len() - 1
        }
    };
    let tot = &mut sums[i].1;
    tot.launches += u64::from(n);
    if us.is_finite() {
        tot.us += us;
    }
    if bytes.is_finite() {
        tot.bytes += bytes;
    }
}

/// How many kernels a profile table shows by default; the rest are summed in one `other` row
/// per device (`graph.profile(..., top=N)` changes it).
pub const TOP_KERNELS: usize = 20;

/// Which rows to show: all when there are at most `top`, else the `top` with the most time by
/// the model (the measured total for a row the model has no figure for), in their order.
fn top_rows(rows: &[Row], top: Option<usize>) -> Vec<bool> {
    let Some(top) = top.filter(|&n| rows.len() > n) else {
        return vec![true; rows.len()];
    };
    // the model's total first: the same kernels are shown run after run (a measured time
    // changes), the ones that would cost most on the target
    let weight = |r: &Row| -> f64 {
        if let Some(e) = &r.estimate {
            e.latency_us * f64::from(r.launches)
        } else if let Some(m) = &r.mesh {
            m.latency_us * f64::from(r.launches)
        } else {
            r.samples.iter().sum()
        }
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| weight(&rows[b]).total_cmp(&weight(&rows[a])));
    let mut keep = vec![false; rows.len()];
    for &i in order.iter().take(top) {
        keep[i] = true;
    }
    keep
}

/// The µs of a [`fmt_time`] text (NaN for `-`).
fn parse_time(s: &str) -> f64 {
    let mut it = s.split_whitespace();
    let (Some(v), Some(unit)) = (it.next(), it.next()) else {
        return f64::NAN;
    };
    let v: f64 = v.parse().unwrap_or(f64::NAN);
    v * match unit {
        "ns" => 1e-3,
        "µs" => 1.0,
        "ms" => 1e3,
        _ => 1e6,
    }
}

/// The profile table of `rows` (SPEC §6 columns): one row per kernel, shapes and `.tsr` line
/// with its launch count, total time and median latency, measured and model rows apart, then
/// the totals of each device (time and launches) and the bytes moved.
pub fn table(rows: &[Row], title: Option<String>) -> TableObj {
    table_top(rows, title, Some(TOP_KERNELS))
}

/// The table rows of one profiled kernel (measured, mesh model, cost model), adding their sums
/// to `totals`; `estimated` is set when an occupancy comes from the register estimate.
fn kernel_rows(
    r: &Row,
    totals: &mut Vec<((&'static str, String), Total)>,
    estimated: &mut bool,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let name = row_label(r);
    let count = r.launches.to_string();
    if let (Some(m), Some(dev)) = (median(&r.samples), &r.device) {
        let (flops, bytes) = r
            .estimate
            .as_ref()
            .map_or((f64::NAN, f64::NAN), |e| (e.flops, e.min_bytes));
        let sum: f64 = r.samples.iter().sum();
        let s = m * 1e-6;
        add_total(
            totals,
            "measured",
            dev,
            r.launches,
            sum,
            bytes * f64::from(r.launches),
        );
        rows.push(vec![
            name.clone(),
            r.line.clone(),
            r.tile.clone(),
            dev.clone(),
            count.clone(),
            fmt_time(sum),
            fmt_time(m),
            "-".into(),
            fmt_rate(bytes / s / 1e9, 9, 2),
            fmt_rate(flops / s / 1e12, 8, 4),
            "-".into(),
            "measured".into(),
        ]);
    } else if let (Some(_), Some(dev)) = (&r.counters, &r.device) {
        add_total(totals, "measured", dev, r.launches, f64::NAN, f64::NAN);
        let mut row = vec![
            name.clone(),
            r.line.clone(),
            r.tile.clone(),
            dev.clone(),
            count.clone(),
        ];
        row.push(format!("{:>11}", "-"));
        row.push(format!("{:>11}", "-"));
        row.extend(["-", "-", "-", "-"].map(String::from));
        row.push("measured".into());
        rows.push(row);
    }
    if let Some(m) = &r.mesh {
        let total = m.latency_us * f64::from(r.launches);
        add_total(totals, "model", &m.device, r.launches, total, f64::NAN);
        rows.push(vec![
            name.clone(),
            r.line.clone(),
            r.tile.clone(),
            m.device.clone(),
            count.clone(),
            fmt_time(total),
            fmt_time(m.latency_us),
            "-".into(),
            fmt_rate(m.gbps, 9, 2),
            fmt_rate(m.tflops, 8, 4),
            m.bound.to_string(),
            "model".into(),
        ]);
    }
    if let Some(e) = &r.estimate {
        let star = if e.reg_source == RegSource::Estimate {
            *estimated = true;
            "*"
        } else {
            " "
        };
        let total = e.latency_us * f64::from(r.launches);
        add_total(
            totals,
            "model",
            r.target.name(),
            r.launches,
            total,
            e.min_bytes * f64::from(r.launches),
        );
        rows.push(vec![
            name,
            r.line.clone(),
            r.tile.clone(),
            r.target.name().to_string(),
            count,
            fmt_time(total),
            fmt_time(e.latency_us),
            format!("{:>5.1}%{star}", e.occupancy.fraction * 100.0),
            fmt_rate(e.gbps(), 9, 2),
            fmt_rate(e.tflops(), 8, 4),
            e.bound.name().to_string(),
            "model".into(),
        ]);
    }
    rows
}

/// [`table`] showing the `top` kernels with the most time (every kernel with `None`).
pub fn table_top(rows: &[Row], title: Option<String>, top: Option<usize>) -> TableObj {
    let mut t = Table::new(&[
        "op",
        "line",
        "tile",
        "device",
        "count",
        "total",
        "latency",
        "occupancy",
        "GB/s",
        "TFLOP/s",
        "bound",
        "source",
    ]);
    t.right = vec![4, 5, 6, 7, 8, 9];
    t.title = title;
    let mut estimated = false;
    // (source, device) → sums, in the order they first appear
    let mut totals: Vec<((&'static str, String), Total)> = Vec::new();
    // the same for the rows folded into `other` (beyond the `top` kernels)
    let mut others: Vec<((&'static str, String), Total)> = Vec::new();
    let keep = top_rows(rows, top);
    let folded = keep.iter().filter(|k| !**k).count();
    let mut moved = 0.0f64;
    for (r, keep) in rows.iter().zip(keep) {
        let before = t.rows.len();
        let bytes_each = r.estimate.as_ref().map_or(f64::NAN, |e| e.min_bytes);
        if bytes_each.is_finite() {
            moved += bytes_each * f64::from(r.launches);
        }
        let rows = kernel_rows(r, &mut totals, &mut estimated);
        t.rows.extend(rows);
        if !keep {
            // folded: its rows go into `other`, by source and device
            for row in t.rows.drain(before..) {
                let us = parse_time(&row[5]);
                let n: u32 = row[4].parse().unwrap_or(0);
                let source = if row[11] == "measured" {
                    "measured"
                } else {
                    "model"
                };
                add_total(&mut others, source, &row[3], n, us, f64::NAN);
            }
        }
    }
    for ((source, device), tot) in &others {
        t.rows.push(vec![
            format!("other ({folded} kernels)"),
            String::new(),
            String::new(),
            device.clone(),
            tot.launches.to_string(),
            if tot.us > 0.0 {
                fmt_time(tot.us)
            } else {
                format!("{:>11}", "-")
            },
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            source.to_string(),
        ]);
    }
    if folded > 0 {
        t.notes.push(format!(
            "the {} kernels with the most time are shown; {folded} more are summed in `other` (graph.profile(..., top=None) shows every row)",
            rows.len() - folded
        ));
    }
    if rows.is_empty() {
        t.notes.push("no kernel was launched".into());
    }
    for ((source, device), tot) in &totals {
        let time = if tot.us > 0.0 {
            fmt_time(tot.us)
        } else {
            format!("{:>11}", "-")
        };
        let gbps = if tot.us > 0.0 && tot.bytes > 0.0 {
            tot.bytes / (tot.us * 1e-6) / 1e9
        } else {
            f64::NAN
        };
        let blank = String::new;
        t.rows.push(vec![
            "total".into(),
            blank(),
            blank(),
            device.clone(),
            tot.launches.to_string(),
            time,
            blank(),
            blank(),
            fmt_rate(gbps, 9, 2),
            blank(),
            blank(),
            source.to_string(),
        ]);
    }
    if !rows.is_empty() {
        let launches: u64 = rows.iter().map(|r| u64::from(r.launches)).sum();
        let mut note = format!(
            "count: launches of the kernel with these shapes from this line; total: their time; latency: the median launch; {launches} launch(es)"
        );
        if moved > 0.0 {
            note.push_str(&format!(
                " moved {} (the model's bytes: each kernel's inputs and outputs)",
                fmt_bytes(moved)
            ));
        }
        t.notes.push(note);
    }
    if estimated {
        t.notes
            .push("* occupancy from registers estimated on the Target IR (ptxas not used)".into());
    }
    let mut parts = vec![t];
    parts.extend(counter_tables(rows));
    TableObj {
        type_name: "profile",
        parts,
    }
}

/// Bytes with a decimal unit: `512 B`, `1.50 kB`, `12.35 MB`, `3.20 GB`.
pub fn fmt_bytes(b: f64) -> String {
    if b < 1e3 {
        format!("{b:.0} B")
    } else if b < 1e6 {
        format!("{:.2} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.2} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

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
    session: &Session,
    mesh: &tessera_compiler::schedule::mesh::MeshShape,
    step: &tessera_compiler::schedule::mesh::Step,
) {
    use tessera_compiler::schedule::mesh::Step;
    if matches!(step, Step::Wait { .. }) {
        return;
    }
    let target = session.target.get();
    let sys = session.system();
    let dev = match session.system.get() {
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
    let mut rec = session.profile.borrow_mut();
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
    if n > 1 && (session.system.get().is_some() || !across.is_empty()) {
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
pub fn record_pipeline_stage(
    session: &Session,
    name: &str,
    tile: &str,
    busy_us: &[f64],
    model_us: f64,
) {
    let target = session.target.get();
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
    merge(&mut session.profile.borrow_mut().rows, row);
}

fn shape_text(s: &[usize]) -> String {
    let v: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// The emulator's counters of the rows that have them: a memory table and an instruction-mix
/// table (none when no row was counted).
fn counter_tables(rows: &[Row]) -> Vec<Table> {
    let counted: Vec<(String, &Counters)> = rows
        .iter()
        .filter_map(|r| {
            let name = if r.launches > 1 {
                format!("{} ×{}", row_label(r), r.launches)
            } else {
                row_label(r)
            };
            r.counters.as_ref().map(|c| (name, c))
        })
        .collect();
    if counted.is_empty() {
        return vec![];
    }
    let mut mem = Table::new(&[
        "op",
        "warp inst",
        "shared req",
        "wavefronts",
        "bank conflicts",
        "ldmatrix conflicts",
        "global ld req",
        "ld sectors/req",
        "global st req",
        "st sectors/req",
    ]);
    mem.right = (1..10).collect();
    mem.title = Some("emu memory counters (exact, per kernel, summed over launches)".into());
    let per = |v: f64| {
        if v.is_finite() {
            format!("{v:.2}")
        } else {
            "-".into()
        }
    };
    for (name, c) in &counted {
        mem.rows.push(vec![
            name.clone(),
            c.mix.total().to_string(),
            c.shared_requests.to_string(),
            c.shared_wavefronts.to_string(),
            c.bank_conflicts.to_string(),
            c.ldmatrix_conflicts.to_string(),
            c.global_load_requests.to_string(),
            per(c.load_sectors_per_request()),
            c.global_store_requests.to_string(),
            per(c.store_sectors_per_request()),
        ]);
    }
    mem.notes.push(
        "wavefronts: 32 banks of 4 bytes, one phase per 32/16/8 lanes for 4/8/16-byte accesses and per ldmatrix matrix; conflicts = wavefronts - phases".into(),
    );
    mem.notes.push(
        "sectors/req: distinct 32-byte sectors per warp-level request (coalesced 4-byte loads: 4; 16-byte: 16)".into(),
    );
    let mut header = vec!["op"];
    header.extend(Counters::default().mix.entries().map(|e| e.0));
    let mut mix = Table::new(&header);
    mix.right = (1..header.len()).collect();
    mix.title = Some("emu instruction mix (warp instructions)".into());
    for (name, c) in &counted {
        let mut row = vec![name.clone()];
        row.extend(c.mix.entries().map(|e| e.1.to_string()));
        mix.rows.push(row);
    }
    vec![mem, mix]
}
