//! The cost model: per kernel the FLOPs and the DRAM bytes its tiling moves (re-reads
//! included), then a roofline estimate corrected for occupancy (latency hiding) and wave
//! quantisation; for collectives the ring and tree formulas with the target's link bandwidth.
//! Every figure here is a model figure: callers show it with `source: model`.
//!
//! The model, per kernel on a [`Spec`]:
//! - compute time = the FLOPs of the tiles the busiest SM runs (edge tiles count whole:
//!   `ceil(tiles / SMs)` tiles of `2·BM·BN·ceil(K/BK)·BK` FLOPs for a matmul) at the SM's share
//!   of the peak rate of the kernel's path (tensor cores by operand dtype, else the CUDA cores),
//!   divided by the pipeline efficiency (below);
//! - memory time = DRAM bytes / HBM bandwidth, divided by the bytes-in-flight efficiency: by
//!   Little's law an SM must keep `HBM GB/s × latency / SMs` bytes in flight to reach the peak
//!   bandwidth; the kernel keeps (resident warps × bytes per load) or (resident blocks ×
//!   (stages − 1) × stage bytes) in flight;
//! - a matmul's DRAM bytes: blocks run in waves of `SMs × resident blocks`, in launch order
//!   (N tiles fastest); each wave reads the A row panels and B column panels its blocks touch
//!   once (blocks resident together share them through L2; nothing is reused across waves),
//!   plus the result and epilogue operands;
//! - pipeline efficiency of a matmul: a k-step of all resident blocks takes
//!   `max(blocks·t, (latency + t) / stages)` where `t` is one block's k-step at the SM's peak;
//! - latency = launch overhead + max(compute, memory); `bound` says which term won.

pub mod occupancy;
pub mod regs;
pub mod system;

use crate::arch::Spec;
use crate::arch::Target;
pub use crate::arch::LAUNCH_US;
pub use crate::graph::passes::spectral_conv::cost as conv;
use crate::graph::{AttnWrt, DType, Graph, Op, TensorType};
use crate::pipeline::Lowered;
use crate::schedule::{Kernel, Kind};
pub use occupancy::{occupancy, Limiter, Occupancy, RegSource};

/// DRAM access latency the bytes-in-flight and pipeline terms assume (ns). An assumption:
/// microbenchmarks of A100 and H100 measure 450–650 ns for a DRAM miss.
pub const DRAM_LATENCY_NS: f64 = 500.0;
/// Latency of one hop of a collective over NVLink (µs), an assumption.
pub const LINK_LATENCY_US: f64 = 2.0;

/// Which term of the roofline dominates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    Compute,
    Memory,
    Comm,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Comm => "comm",
        }
    }
}

/// The model's estimate for one kernel launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Useful FLOPs (edge padding not counted).
    pub flops: f64,
    /// DRAM bytes the model expects the launch to move.
    pub bytes: f64,
    /// Bytes the kernel reads and writes at least once (inputs and outputs).
    pub min_bytes: f64,
    pub compute_us: f64,
    pub memory_us: f64,
    pub latency_us: f64,
    pub bound: Bound,
    pub occupancy: Occupancy,
    pub threads: u32,
    pub smem: u32,
    pub regs: u32,
    pub reg_source: RegSource,
    /// Blocks launched.
    pub blocks: u64,
    /// Blocks / (SMs × resident blocks per SM).
    pub waves: f64,
}

impl Estimate {
    /// Achieved TFLOP/s at the model's latency.
    pub fn tflops(&self) -> f64 {
        self.flops / (self.latency_us * 1e-6) / 1e12
    }
    /// Achieved GB/s (model DRAM bytes) at the model's latency.
    pub fn gbps(&self) -> f64 {
        self.bytes / (self.latency_us * 1e-6) / 1e9
    }
}
fn numel(t: &TensorType) -> f64 {
    t.shape.iter().map(|&d| d as f64).product()
}

fn tbytes(t: &TensorType) -> f64 {
    numel(t) * (t.dtype.size_bytes() as f64)
}

/// Peak TFLOP/s of the path a kernel takes.
fn peak(spec: &Spec, tensor_cores: bool, dtype: DType) -> f64 {
    let p = &spec.peak_tflops;
    if !tensor_cores {
        return if dtype == DType::F64 { p.fp64 } else { p.fp32 };
    }
    match dtype {
        DType::BF16 | DType::F16 => p.bf16,
        DType::TF32 | DType::F32 => p.tf32,
        DType::F8E4M3 | DType::F8E5M2 => p.fp8.unwrap_or(p.bf16),
        DType::F64 | DType::C128 => p.fp64,
        DType::I64 | DType::I32 | DType::I8 | DType::Bool | DType::C64 => p.fp32,
    }
}

/// How a kernel is launched: from its Target IR when it has one, else from its schedule.
#[derive(Copy, Clone, Debug)]
pub struct LaunchShape {
    pub blocks: u64,
    pub threads: u32,
    pub smem: u32,
    pub regs: u32,
    pub reg_source: RegSource,
}

/// The launch shape of kernel `index` of `l`. `ptxas_regs`: the registers ptxas reported, when
/// it ran.
pub fn launch_shape(l: &Lowered, index: usize, ptxas_regs: Option<u32>) -> Option<LaunchShape> {
    let k = l.program.kernels.get(index)?;
    let c = l.kernels.get(index)?;
    let (regs, reg_source) = match (ptxas_regs, &c.target) {
        (Some(r), _) => (r, RegSource::Ptxas),
        (None, Some(t)) => (regs::estimate(&t.kernel), RegSource::Estimate),
        (None, None) => (default_regs(k), RegSource::Estimate),
    };
    if let Some(t) = &c.target {
        let blocks = t.grid.iter().map(|&d| u64::from(d)).product();
        let threads = t.block.iter().product();
        let smem = t.kernel.shared_layout().1;
        return Some(LaunchShape {
            blocks,
            threads,
            smem,
            regs,
            reg_source,
        });
    }
    Some(LaunchShape {
        blocks: schedule_blocks(&l.program.graph, k),
        threads: k.schedule.threads,
        smem: k.schedule.smem_bytes(k.kind).min(u64::from(u32::MAX)) as u32,
        regs,
        reg_source,
    })
}

/// Registers assumed for a kernel with no Target IR (the common register budget of its kind).
fn default_regs(k: &Kernel) -> u32 {
    match k.kind {
        Kind::Matmul if k.schedule.tensor_cores => 128,
        Kind::Matmul => 64,
        Kind::FlashAttention => 96,
        _ => 32,
    }
}

/// Matmul dimensions: (batch, M, N, K).
fn mnk(g: &Graph, k: &Kernel) -> Option<(f64, u64, u64, u64)> {
    let Some(Op::Matmul { a, .. }) = g.op(k.root) else {
        return None;
    };
    let at = g.ty(*a)?;
    let out = &k.ty;
    let n = *out.shape.last()? as u64;
    let m = if out.shape.len() >= 2 {
        out.shape[out.shape.len() - 2] as u64
    } else {
        1
    };
    let kk = *at.shape.last()? as u64;
    let batch = numel(out) / (m.max(1) * n.max(1)) as f64;
    Some((batch, m, n, kk))
}

fn schedule_blocks(g: &Graph, k: &Kernel) -> u64 {
    let s = &k.schedule;
    match k.kind {
        Kind::Matmul => match mnk(g, k) {
            Some((b, m, n, _)) => {
                (b as u64).max(1)
                    * m.div_ceil(u64::from(s.tile[0].max(1)))
                    * n.div_ceil(u64::from(s.tile[1].max(1)))
            }
            None => 1,
        },
        Kind::Elementwise | Kind::Copy => {
            (numel(&k.ty) as u64).div_ceil(u64::from((s.threads * s.vector).max(1)))
        }
        // an FFT: one block per line; the product like an elementwise kernel
        Kind::Spectral => match g.op(k.root) {
            Some(Op::Fft { axis, .. }) => {
                let len = k.ty.shape.get(*axis).copied().unwrap_or(1).max(1);
                (numel(&k.ty) as u64) / len as u64
            }
            _ => (numel(&k.ty) as u64).div_ceil(u64::from(s.threads.max(1))),
        },
        Kind::FlashAttention => {
            // blocks of rows of the result: [.., rows, d], or the log-sum-exp's [.., rows]
            let lse = matches!(g.op(k.root), Some(Op::AttentionLse { .. }));
            let back = if lse { 1 } else { 2 };
            let sq =
                k.ty.shape
                    .len()
                    .checked_sub(back)
                    .map_or(1, |i| k.ty.shape[i]) as u64;
            let width = if lse {
                1
            } else {
                *k.ty.shape.last().unwrap_or(&1) as u64
            };
            let b = (numel(&k.ty) as u64) / (sq * width).max(1);
            b.max(1) * sq.div_ceil(u64::from(s.tile[0].max(1)))
        }
        Kind::Conv if s.tensor_cores => {
            // the implicit GEMM: BM output channels × BN output pixels of one group
            let (cout, groups) = match g.op(k.root) {
                Some(Op::Conv { w, attrs, .. }) => (
                    g.ty(*w).map_or(1, |t| t.shape[0]) as u64,
                    attrs.groups.max(1) as u64,
                ),
                _ => (1, 1),
            };
            let pixels = (numel(&k.ty) as u64) / cout.max(1);
            groups
                * (cout / groups).div_ceil(u64::from(s.tile[0].max(1)))
                * pixels.div_ceil(u64::from(s.tile[1].max(1)))
        }
        Kind::Conv => {
            // blocks of BM×BN outputs of each [.., H, W] plane
            let r = k.ty.shape.len();
            let (oh, ow) = if r >= 4 {
                (k.ty.shape[r - 2] as u64, k.ty.shape[r - 1] as u64)
            } else {
                (1, k.ty.shape.last().copied().unwrap_or(1) as u64)
            };
            let planes = (numel(&k.ty) as u64) / (oh * ow).max(1);
            planes.max(1)
                * oh.div_ceil(u64::from(s.tile[0].max(1)))
                * ow.div_ceil(u64::from(s.tile[1].max(1)))
        }
        // a row function that writes one value per row: one row per output element
        Kind::Row(f) if f.row().reduces => {
            (numel(&k.ty) as u64).div_ceil(u64::from(s.threads / 32).max(1))
        }
        Kind::Row(_) | Kind::LayerNorm | Kind::RmsNorm | Kind::Reduce => {
            let rows = numel(&k.ty) / k.ty.shape.last().map_or(1.0, |&d| d.max(1) as f64);
            (rows as u64).div_ceil(u64::from(s.threads / 32).max(1))
        }
    }
}

/// Arithmetic ops of an elementwise body (at least 1).
fn elementwise_ops(op: &Op) -> f64 {
    match op {
        Op::FusedElementwise { body, .. } | Op::FusedReduce { body, .. } => {
            let n = body
                .ids()
                .filter(|id| body.op(*id).is_some_and(Op::is_elementwise))
                .count();
            n.max(1) as f64
        }
        _ => 1.0,
    }
}

/// Arithmetic per element of the kernel's work (its input for a row kernel, else its output):
/// from the op's definition where it has one ([`crate::graph::ops`]).
fn flops_per_elem(g: &Graph, k: &Kernel, op: &Op) -> f64 {
    if let Some(d) = crate::graph::op_def(op) {
        return d.flops_per_elem(op);
    }
    match k.kind {
        Kind::Elementwise => elementwise_ops(op),
        Kind::Reduce => 1.0,
        // an FFT: 5·log2(n) per complex output (half for the real ones); the
        // product: a complex multiply-add (8) per channel of the group
        Kind::Spectral => match op {
            Op::Fft { n, kind, .. } => {
                let lg = (*n).max(1) as f64;
                let real = matches!(
                    kind,
                    crate::graph::FftKind::RealForward
                        | crate::graph::FftKind::RealInverse
                        | crate::graph::FftKind::RealInverseAdjoint
                );
                if real {
                    2.5 * lg.log2()
                } else {
                    5.0 * lg.log2()
                }
            }
            Op::SpectralMul { w, .. } => g
                .ty(*w)
                .map_or(8.0, |t| 8.0 * t.shape.get(1).copied().unwrap_or(1) as f64),
            _ => 1.0,
        },
        // a multiply-add per input channel of the group and kernel tap
        Kind::Conv => match op {
            Op::Conv { w, .. } => g.ty(*w).map_or(1.0, |t| {
                2.0 * t.shape.iter().skip(1).product::<usize>() as f64
            }),
            _ => 1.0,
        },
        _ => 0.0,
    }
}

/// The model's estimate of kernel `index` of `l` on `target`.
pub fn estimate(
    l: &Lowered,
    index: usize,
    target: Target,
    ptxas_regs: Option<u32>,
) -> Option<Estimate> {
    let spec = target.spec();
    let g = &l.program.graph;
    let k = l.program.kernels.get(index)?;
    let shape = launch_shape(l, index, ptxas_regs)?;
    let occ = occupancy(&spec, shape.threads, shape.regs, shape.smem);
    let op = g.op(k.root)?;
    // every result the kernel writes (a multi-output fused kernel's several)
    let out_bytes: f64 = g.result_types(k.root).iter().map(tbytes).sum();
    let in_bytes: f64 = k.inputs.iter().filter_map(|v| g.ty(*v)).map(tbytes).sum();
    let min_bytes = in_bytes + out_bytes;
    let sms = f64::from(spec.sm_count.max(1));
    let bps = f64::from(occ.blocks_per_sm.max(1));
    let hbm = spec.hbm_gbps * 1e9;
    let need_in_flight = hbm * DRAM_LATENCY_NS * 1e-9 / sms;
    let blocks = shape.blocks.max(1);
    let c = Ctx {
        spec: &spec,
        g,
        k,
        op,
        occ: &occ,
        out_bytes,
        min_bytes,
        sms,
        bps,
        blocks,
    };
    let (flops, bytes, compute_s, in_flight) = match k.kind {
        Kind::Matmul => matmul_cost(&c),
        Kind::FlashAttention => attention_cost(&c),
        _ => streaming_cost(&c),
    };
    let mem_eff = (in_flight / need_in_flight).clamp(0.05, 1.0);
    let memory_s = bytes / hbm / mem_eff;
    let (compute_s, memory_s) = if occ.blocks_per_sm == 0 {
        (f64::INFINITY, f64::INFINITY)
    } else {
        (compute_s, memory_s)
    };
    let bound = if compute_s >= memory_s {
        Bound::Compute
    } else {
        Bound::Memory
    };
    let latency_us = LAUNCH_US + compute_s.max(memory_s) * 1e6;
    Some(Estimate {
        flops,
        bytes,
        min_bytes,
        compute_us: compute_s * 1e6,
        memory_us: memory_s * 1e6,
        latency_us,
        bound,
        occupancy: occ,
        threads: shape.threads,
        smem: shape.smem,
        regs: shape.regs,
        reg_source: shape.reg_source,
        blocks,
        waves: blocks as f64 / (sms * bps),
    })
}

/// What the estimate of one kernel starts from: the target, the kernel and its root op, the
/// occupancy, the bytes every result and input take, the SM count, the resident blocks per SM
/// and the blocks launched.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    spec: &'a Spec,
    g: &'a Graph,
    k: &'a Kernel,
    op: &'a Op,
    occ: &'a Occupancy,
    out_bytes: f64,
    min_bytes: f64,
    sms: f64,
    bps: f64,
    blocks: u64,
}

/// A matmul's `(flops, bytes, compute seconds, bytes in flight)`: its panels read per wave, its
/// tiles at the SM's peak against the pipeline's load latency.
fn matmul_cost(c: &Ctx) -> (f64, f64, f64, f64) {
    let Ctx {
        spec,
        g,
        k,
        op,
        out_bytes,
        sms,
        bps,
        blocks,
        ..
    } = *c;
    let s = &k.schedule;
    let (batch, m, n, kd) = mnk(g, k).unwrap_or((1.0, 1, 1, 1));
    let [bm, bn, bk] = s.tile.map(|v| u64::from(v.max(1)));
    let (norm, steps) = match op {
        Op::Matmul { epilogue, .. } => crate::graph::split_steps(epilogue),
        _ => (None, &[][..]),
    };
    let epi = steps.len() as f64;
    // at least one tile each way: an empty matmul is one (idle) wave, not a division
    // by zero column tiles
    let tm = m.div_ceil(bm).max(1);
    let tn = n.div_ceil(bn).max(1);
    // A norm prologue: every block computes its rows' statistics over K (layernorm:
    // a sum, then a sum of squared deviations, 4 FLOPs an element; rmsnorm 2) and
    // normalises each A tile it loads (4 or 2), so each row panel's work is done once
    // per block of its row, on the CUDA cores.
    let norm_per_elem = match norm.map(|p| p.norm) {
        Some(crate::graph::NormKind::LayerNorm) => 8.0,
        Some(crate::graph::NormKind::RmsNorm) => 4.0,
        None => 0.0,
    };
    let norm_flops = batch * (tn * m * kd) as f64 * norm_per_elem;
    let flops = 2.0 * batch * (m * n * kd) as f64 + epi * numel(&k.ty) + norm_flops;
    let (ad, bd) = match op {
        Op::Matmul { a, b, .. } => (
            g.ty(*a).map_or(k.ty.dtype, |t| t.dtype),
            g.ty(*b).map_or(k.ty.dtype, |t| t.dtype),
        ),
        _ => (k.ty.dtype, k.ty.dtype),
    };
    let (sa, sb) = ((ad.size_bytes() as f64), (bd.size_bytes() as f64));
    let per_batch = tm * tn;
    // Panels: one A row panel is BM×K, one B column panel K×BN; with a norm prologue
    // A's panel is read twice (the statistics, then the k loop) and the normalised A
    // is never written.
    let a_reads = if norm.is_some() { 2.0 } else { 1.0 };
    let a_panel = (bm.min(m) * kd) as f64 * sa * a_reads;
    let b_panel = (kd * bn.min(n)) as f64 * sb;
    let wave = (f64::from(spec.sm_count) * bps) as u64;
    let mut panel_bytes = 0.0;
    let total = per_batch.max(1);
    let mut start = 0u64;
    while start < total {
        let end = (start + wave.max(1)).min(total);
        let rows = (end - 1) / tn - start / tn + 1;
        let cols = if rows > 1 { tn } else { end - start };
        panel_bytes += rows as f64 * a_panel + cols as f64 * b_panel;
        start = end;
    }
    let epi_bytes: f64 = k
        .inputs
        .iter()
        .skip(2)
        .filter_map(|v| g.ty(*v))
        .map(tbytes)
        .sum();
    let bytes = batch * panel_bytes + out_bytes + epi_bytes;
    // Compute: the busiest SM's tiles at its share of the peak.
    let kpad = kd.div_ceil(bk) * bk;
    let tile_flops = 2.0 * (bm * bn * kpad) as f64;
    let dt = if s.tensor_cores { ad } else { DType::F32 };
    let peak_sm = peak(spec, s.tensor_cores, dt) * 1e12 / sms;
    let busiest = (blocks as f64 / sms).ceil();
    let norm_s = busiest * (bm * kd) as f64 * norm_per_elem / (spec.peak_tflops.fp32 * 1e12 / sms);
    let ideal = busiest * tile_flops / peak_sm;
    // Pipeline: one k-step of one block at the SM's peak, against the load latency.
    let t_step = 2.0 * (bm * bn * bk) as f64 / peak_sm;
    let resident = busiest.min(bps).max(1.0);
    let lat = DRAM_LATENCY_NS * 1e-9;
    let round = (resident * t_step).max((lat + t_step) / f64::from(s.stages.max(1)));
    let eff = (resident * t_step / round).min(1.0);
    let stage_bytes = ((bm * bk) as f64 * sa + (bk * bn) as f64 * sb)
        * f64::from(s.stages.saturating_sub(1).max(1));
    (flops, bytes, ideal / eff + norm_s, resident * stage_bytes)
}

/// A flash attention kernel's `(flops, bytes, compute seconds, bytes in flight)`: K and V read
/// once per query block.
fn attention_cost(c: &Ctx) -> (f64, f64, f64, f64) {
    let Ctx {
        spec,
        g,
        k,
        op,
        occ,
        out_bytes,
        sms,
        blocks,
        ..
    } = *c;
    let s = &k.schedule;
    let (q, kv) = match op {
        Op::FlashAttention { q, k, .. }
        | Op::AttentionLse { q, k, .. }
        | Op::AttentionGrad { q, k, .. } => (g.ty(*q), g.ty(*k)),
        _ => (None, None),
    };
    // multiply-adds per (query, key) pair and head column: the scores and P·V; the
    // scores alone; dq and dk also recompute dP = dO·Vᵀ
    let pair_flops = match op {
        Op::AttentionLse { .. } => 2.0,
        Op::AttentionGrad {
            wrt: AttnWrt::Q | AttnWrt::K,
            ..
        } => 6.0,
        _ => 4.0,
    };
    let (q, kv) = match (q, kv) {
        (Some(q), Some(kv)) => (q, kv),
        _ => (&k.ty, &k.ty),
    };
    let d = *q.shape.last().unwrap_or(&1) as f64;
    let sq = q.shape.len().checked_sub(2).map_or(1, |i| q.shape[i]) as f64;
    let skv = kv.shape.len().checked_sub(2).map_or(1, |i| kv.shape[i]) as f64;
    let bh = numel(q) / (sq * d).max(1.0);
    let causal = matches!(
        op,
        Op::FlashAttention { causal: true, .. }
            | Op::AttentionLse { causal: true, .. }
            | Op::AttentionGrad { causal: true, .. }
    );
    let flops = pair_flops * bh * sq * skv * d * if causal { 0.5 } else { 1.0 };
    let q_blocks = (sq / f64::from(s.tile[0].max(1))).ceil();
    let kv_bytes: f64 = k
        .inputs
        .iter()
        .skip(1)
        .filter_map(|v| g.ty(*v))
        .map(tbytes)
        .sum();
    let bytes = tbytes(q) + out_bytes + kv_bytes * q_blocks;
    let peak_sm = spec.peak_tflops.fp32 * 1e12 / sms;
    let busiest = (blocks as f64 / sms).ceil();
    let per_block = flops / blocks as f64;
    let in_flight = f64::from(occ.active_warps) * 32.0 * 4.0;
    (flops, bytes, busiest * per_block / peak_sm, in_flight)
}

/// Any other kernel's `(flops, bytes, compute seconds, bytes in flight)`: its per-element
/// arithmetic over the minimum traffic, quantised to whole waves.
fn streaming_cost(c: &Ctx) -> (f64, f64, f64, f64) {
    let Ctx {
        spec,
        g,
        k,
        op,
        occ,
        min_bytes,
        sms,
        bps,
        blocks,
        ..
    } = *c;
    let s = &k.schedule;
    let per_elem = flops_per_elem(g, k, op);
    let work = match k.kind {
        Kind::Reduce | Kind::Row(_) | Kind::LayerNorm | Kind::RmsNorm => k
            .inputs
            .first()
            .and_then(|v| g.ty(*v))
            .map_or(numel(&k.ty), numel),
        _ => numel(&k.ty),
    };
    let flops = per_elem * work;
    // the implicit-GEMM convolution at the tensor cores' peak for its operands
    let peak_all = match (k.kind, op) {
        (Kind::Conv, Op::Conv { x, .. }) if s.tensor_cores => {
            peak(spec, true, g.ty(*x).map_or(DType::BF16, |t| t.dtype)) * 1e12
        }
        _ => spec.peak_tflops.fp32 * 1e12,
    };
    let waves_exact = blocks as f64 / (sms * bps);
    let quant = if waves_exact > 0.0 {
        waves_exact.ceil() / waves_exact
    } else {
        1.0
    };
    let vec = f64::from(s.vector.max(1));
    let streams = (k.inputs.len() as f64).max(1.0);
    let in_flight =
        f64::from(occ.active_warps) * 32.0 * vec * (k.ty.dtype.size_bytes() as f64) * streams;
    (
        flops,
        min_bytes,
        flops / peak_all * quant.min(2.0),
        in_flight,
    )
}

/// The sum of the model latencies of every kernel of `l` (µs): the autotuner's objective.
pub fn total_latency_us(l: &Lowered, target: Target) -> f64 {
    (0..l.program.kernels.len())
        .filter_map(|i| estimate(l, i, target, None))
        .map(|e| e.latency_us)
        .sum()
}

/// A collective over `p` devices.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Collective {
    AllReduce,
    ReduceScatter,
    AllGather,
    /// Every device sends `1/p` of its tensor to each other device.
    AllToAll,
}

/// The model's time for a collective of `bytes` (the full tensor) over `p` devices linked by
/// NVLink: ring all-reduce `2(p−1)·α + 2(p−1)/p · n/β`, tree all-reduce `2⌈log2 p⌉·α + 2n/β`
/// (the faster of the two), reduce-scatter, all-gather and all-to-all (pairwise exchange)
/// `(p−1)·α + (p−1)/p · n/β`; `β` is one
/// direction of the target's NVLink bandwidth, `α` [`LINK_LATENCY_US`]. Returns (µs, algorithm).
pub fn collective_us(c: Collective, bytes: f64, p: u32, target: Target) -> (f64, &'static str) {
    collective_us_at(c, bytes, p, target.spec().nvlink_gbps)
}

/// [`collective_us`] over links of `link_gbps` per GPU (both directions together): NVLink
/// inside a domain, the scale-out network between domains ([`system::System::link`]).
pub fn collective_us_at(c: Collective, bytes: f64, p: u32, link_gbps: f64) -> (f64, &'static str) {
    if p <= 1 {
        return (0.0, "none");
    }
    let beta = link_gbps / 2.0 * 1e9;
    let a = LINK_LATENCY_US;
    let pf = f64::from(p);
    let n_us = bytes / beta * 1e6;
    match c {
        Collective::AllReduce => {
            let ring = 2.0 * (pf - 1.0) * a + 2.0 * (pf - 1.0) / pf * n_us;
            let steps = f64::from(32 - (p - 1).leading_zeros());
            let tree = 2.0 * steps * a + 2.0 * n_us;
            if ring <= tree {
                (ring, "ring")
            } else {
                (tree, "tree")
            }
        }
        Collective::ReduceScatter | Collective::AllGather => {
            ((pf - 1.0) * a + (pf - 1.0) / pf * n_us, "ring")
        }
        Collective::AllToAll => ((pf - 1.0) * a + (pf - 1.0) / pf * n_us, "pairwise"),
    }
}

#[cfg(test)]
mod prologue_tests;
#[cfg(test)]
mod tests;
