//! Whether a kernel's schedule fits its kernel template on a target: the one place that
//! decides it. It holds the target's limits (threads per block, the MMA shape, shared memory)
//! and the templates' own (the FMA matmul's thread layout, the MMA matmul's warp tiles and
//! loads, the implicit GEMM's tiles, the attention tiles' shared memory); the templates in
//! `kernels/` read their limits from here.
//!
//! A tile the user gave (`schedule.tile`, an autotuner candidate, a cached config) is honoured
//! or refused: [`verify_kernel`] returns the E0300 naming the reason, at the directive that
//! breaks it. A tile the compiler picked itself may be adjusted to fit ([`default_fma_tile`]):
//! that is choosing a default, not overriding the user.

use crate::arch::Target;
use crate::graph::{DType, Graph, TensorType, ValueId};
use crate::schedule::{Directive, Directives, Kernel, Kind, Schedule, ScheduleError};
use tessera_lang::Span;

/// The outputs one thread of the FMA matmul computes, `[RM, RN]`, for a BM×BN tile: 4×4,
/// halved (the larger side first, RM on a tie) while that leaves fewer than 32 threads, so
/// that every tile of at least 32 outputs runs in whole warps (16×16: 2×4 over 32 threads;
/// 8×8: 1×2), and never more than the tile's own side. A tile of fewer than 32 outputs ends at
/// 1×1 with fewer threads than a warp: the kernel does not take it.
pub fn fma_thread_tile(bm: u32, bn: u32) -> [u32; 2] {
    let outputs = u64::from(bm) * u64::from(bn);
    let floor2 = |v: u32| if v == 0 { 1 } else { 1 << v.ilog2() };
    let (mut rm, mut rn) = (floor2(bm.min(4)), floor2(bn.min(4)));
    while outputs / u64::from(rm * rn) < 32 && rm * rn > 1 {
        if rm >= rn {
            rm /= 2;
        } else {
            rn /= 2;
        }
    }
    [rm, rn]
}

/// Threads per block of the FMA matmul on a BM×BN tile (`BM·BN/(RM·RN)` of
/// [`fma_thread_tile`]), at least 1; in u64, since a tile from a directive or a cache entry
/// can be anything.
pub fn fma_threads(bm: u32, bn: u32) -> u64 {
    let [rm, rn] = fma_thread_tile(bm, bn);
    (u64::from(bm) * u64::from(bn) / u64::from(rm * rn)).max(1)
}

/// The threads of a BM×BN×BK tile the FMA matmul takes: whole warps (32..=1024 threads) whose
/// loads of the A and B tiles divide evenly among them; `None` for any other tile.
pub fn fma_even_threads(bm: u32, bn: u32, bk: u32) -> Option<u64> {
    let t = fma_threads(bm, bn);
    let (bm, bn, bk) = (u64::from(bm), u64::from(bn), u64::from(bk));
    ((32..=1024).contains(&t)
        && t.is_multiple_of(bk)
        && t.is_multiple_of(bn)
        && (bm * bk).is_multiple_of(t)
        && (bk * bn).is_multiple_of(t))
    .then_some(t)
}

/// The threads of the MMA matmul on a BM×BN×BK tile with a WM×WN warp tile: one warp per warp
/// tile; `None` unless the warp tile is a power of two each way, BK a multiple of 16 and the
/// loads of both tiles divide evenly among at most 1024 threads.
pub fn mma_threads([bm, bn, bk]: [u32; 3], [wm, wn]: [u32; 2]) -> Option<u32> {
    let pow2 = |v: u32| v.is_power_of_two();
    if !(pow2(wm) && pow2(wn)) || bk % 16 != 0 {
        return None;
    }
    let threads = u64::from(bm / wm) * u64::from(bn / wn) * 32;
    let (bm, bn, bk) = (u64::from(bm), u64::from(bn), u64::from(bk));
    (threads > 0
        && threads <= 1024
        && (bm * bk).is_multiple_of(threads)
        && (bk * bn).is_multiple_of(threads))
    .then_some(threads as u32)
}

/// The warps-per-block range of `occupancy_target(min_warps, max_warps)` (1 and 32 where a
/// bound is not given).
pub fn warp_range((lo, hi): (Option<u32>, Option<u32>)) -> (u32, u32) {
    (lo.unwrap_or(1), hi.unwrap_or(32))
}

/// The block size (threads) a kernel whose template takes any power-of-two number of warps
/// runs under `occupancy_target`: `default` when its warps are in range, else the power of two
/// in range nearest to it; `default` when there is none (the pipeline then refuses it).
pub fn occupancy_threads(default: u32, range: (Option<u32>, Option<u32>)) -> u32 {
    let (lo, hi) = warp_range(range);
    let w = (default / 32).max(1);
    if (lo..=hi).contains(&w) {
        return default;
    }
    let dist = |x: u32| (i64::from(x.ilog2()) - i64::from(w.ilog2())).abs();
    (0..=5)
        .map(|e| 1u32 << e)
        .filter(|x| (lo..=hi).contains(x))
        .min_by_key(|&x| dist(x))
        .map_or(default, |x| x * 32)
}

/// The warp tile of a tensor-core matmul on `tile` under `occupancy_target`: `warp` when its
/// warps are in range, else the valid warp tile ([`mma_threads`]) with warps in range nearest
/// to `warp`'s count (the larger warp tile on a tie); `warp` when there is none.
pub fn occupancy_warp_tile(
    tile: [u32; 3],
    warp: [u32; 2],
    range: (Option<u32>, Option<u32>),
) -> [u32; 2] {
    let (lo, hi) = warp_range(range);
    let Some(t) = mma_threads(tile, warp) else {
        return warp;
    };
    let w = t / 32;
    if (lo..=hi).contains(&w) {
        return warp;
    }
    // nearest count, then the larger warp tile, then the squarer one
    let mut best: Option<([u32; 2], (i64, i64, i64))> = None;
    for wm in [16u32, 32, 64, 128] {
        for wn in [8u32, 16, 32, 64, 128] {
            if wm > tile[0]
                || wn > tile[1]
                || !tile[0].is_multiple_of(wm)
                || !tile[1].is_multiple_of(wn)
            {
                continue;
            }
            let Some(th) = mma_threads(tile, [wm, wn]) else {
                continue;
            };
            let x = th / 32;
            if !(lo..=hi).contains(&x) {
                continue;
            }
            let key = (
                (i64::from(x.ilog2()) - i64::from(w.ilog2())).abs(),
                -i64::from(wm * wn),
                (i64::from(wm.ilog2()) - i64::from(wn.ilog2())).abs(),
            );
            if best.is_none_or(|(_, k)| key < k) {
                best = Some(([wm, wn], key));
            }
        }
    }
    best.map_or(warp, |(w, _)| w)
}

/// `occupancy_target(min_warps, max_warps)` against the block a kernel's template runs
/// (`threads`): E0300 at the directive when its warps are outside the range, naming what fixes
/// the block size of that kernel.
pub fn occupancy_honoured(k: &Kernel, threads: u32, d: &Directives) -> Result<(), ScheduleError> {
    let Some(r) = d.occupancy else {
        return Ok(());
    };
    let (lo, hi) = warp_range(r);
    let warps = threads.div_ceil(32);
    if (lo..=hi).contains(&warps) {
        return Ok(());
    }
    let why = match k.kind {
        Kind::Matmul if k.schedule.tensor_cores && d.warp.is_some() => format!(
            "its {}x{} tile with the {}x{} warp tile schedule.tile gives takes one warp per warp \
             tile",
            k.schedule.tile[0], k.schedule.tile[1], k.schedule.warp[0], k.schedule.warp[1]
        ),
        Kind::Matmul if k.schedule.tensor_cores => format!(
            "its {}x{} tile takes one warp per warp tile, and no warp tile of it gives a count in \
             range",
            k.schedule.tile[0], k.schedule.tile[1]
        ),
        Kind::Matmul => format!(
            "the FMA matmul runs one thread per 4x4 outputs of its {}x{} tile",
            k.schedule.tile[0], k.schedule.tile[1]
        ),
        Kind::Elementwise | Kind::Copy | Kind::Row(_) | Kind::LayerNorm | Kind::RmsNorm => {
            "its template takes a power-of-two number of warps and none is in range".to_string()
        }
        _ => format!("the {} template runs a fixed block", k.kind.name()),
    };
    let bound = |b: Option<u32>| b.map_or("None".to_string(), |v| v.to_string());
    let directive = d.span_of(Directive::Occupancy);
    Err(ScheduleError {
        message: format!(
            "kernel '{}' runs {warps} warps per block, outside occupancy_target(min_warps={}, \
             max_warps={}): {why}",
            k.name,
            bound(r.0),
            bound(r.1)
        ),
        help: Some(
            match k.kind {
                Kind::Matmul => {
                    "widen the range, or choose a tile (schedule.tile) whose block is in it"
                }
                _ => "widen the range, or leave occupancy_target out of this kernel",
            }
            .to_string(),
        ),
        span: Some(directive.or(d.span).unwrap_or(k.span)),
        user: true,
        call: directive.and(d.span),
    })
}

/// Whether the implicit-GEMM convolution takes `tile` (BM, BN, BK): BM and BN 32, 64 or 128,
/// BK 16 or 32, so that the threads split both tiles evenly.
pub fn conv_mma_tile_ok([bm, bn, bk]: [u32; 3]) -> bool {
    let side = |v: u32| matches!(v, 32 | 64 | 128);
    side(bm) && side(bn) && matches!(bk, 16 | 32)
}

/// Rows of the FMA attention backward's `[bn, width]` column tile held with pitch
/// `width + 1` (conflict-free lane-strided reads), plus the rows its weighted-rows step may
/// read past the last one (it reads 32 columns per step, past `width` into the padding; those
/// columns are never stored).
pub fn attention_grad_col_rows(bn: u32, width: u32) -> u32 {
    bn + (width.div_ceil(32) * 32).div_ceil(width + 1)
}

/// The shared memory, in bytes, of an FMA attention backward kernel's tiles of `eb`-byte
/// values.
pub fn attention_grad_smem(eb: u64, bm: u64, bn: u64, dq: u64, dv: u64) -> u64 {
    let rows = |w: u64| attention_grad_col_rows(bn as u32, w as u32) as u64;
    eb * (bm * dq + bm * dv + rows(dq) * (dq + 1) + rows(dv) * (dv + 1))
}

/// The bytes of an FMA attention's tile element: 8 when an operand or the result is fp64 (the
/// kernel computes in fp64), else 4 (fp32).
pub fn attention_elem_bytes(g: &Graph, inputs: &[ValueId], ty: &TensorType) -> u64 {
    let f64_in = inputs
        .iter()
        .any(|&v| g.ty(v).is_some_and(|t| t.dtype == DType::F64));
    if f64_in || ty.dtype == DType::F64 {
        8
    } else {
        4
    }
}

/// Shared memory of the FMA attention: Q rows, K (padded rows) and V tiles of `eb`-byte
/// values.
pub fn fma_attention_smem(eb: u64, bm: u64, bn: u64, dq: u64, dv: u64) -> u64 {
    eb * (bm * dq + bn * (dq + 1) + (bn + 1) * dv.next_multiple_of(32))
}

/// The most shared memory an fp32 FMA attention's tiles take: the smallest per-block limit
/// of the targets (sm_80's 163 KiB), so one schedule serves every target.
pub const FMA_ATTENTION_SMEM: u64 = 163 * 1024;

/// The MMA of a tensor-core attention of these operands (q, k, v) and result: all bf16 or all
/// fp16, one head dimension (dq = dv) that is a multiple of 16 up to 128, and the same batch
/// dims everywhere (no broadcasting).
pub fn attention_mma(
    g: &Graph,
    inputs: &[ValueId],
    ty: &TensorType,
) -> Option<crate::scalar::MmaKind> {
    use crate::scalar::MmaKind;
    let kind = match ty.dtype {
        DType::BF16 => MmaKind::M16n8k16Bf16,
        DType::F16 => MmaKind::M16n8k16F16,
        _ => return None,
    };
    let ts: Vec<&TensorType> = inputs.iter().map(|v| g.ty(*v)).collect::<Option<_>>()?;
    let [q, k, v] = ts.as_slice() else {
        return None;
    };
    let r = ty.shape.len();
    let same = [q, k, v].iter().all(|t| {
        t.dtype == ty.dtype && t.shape.len() == r && t.shape[..r - 2] == ty.shape[..r - 2]
    });
    let dq = *q.shape.last()?;
    let dv = *v.shape.last()?;
    (r >= 2 && same && dq == dv && dq % 16 == 0 && (16..=128).contains(&dq)).then_some(kind)
}

/// A matmul tile the compiler picked (no `schedule.tile`) for the FMA kernel on a target
/// without tensor cores (spirv), fitted to the kernel and to the device's shared memory: at
/// least 2 stages (unless the body gave them: the check then reports fewer); a tile the
/// thread mapping cannot take becomes the nearest one it can (BK halved or doubled, then BM
/// and BN together; else 64×64×16); a tile over the shared memory once staged has BK halved,
/// then BM and BN, until it fits. A user's tile never comes here.
pub fn default_fma_tile(s: &mut Schedule, target: Target, stages_given: bool) {
    let limit = u64::from(target.limits().max_dynamic_shared_bytes);
    let valid = |[bm, bn, bk]: [u32; 3]| {
        bm >= 4 && bn >= 4 && bk >= 4 && fma_even_threads(bm, bn, bk).is_some()
    };
    let pow2 = s.tile.iter().all(|v| v.is_power_of_two());
    if !stages_given {
        s.stages = s.stages.max(2);
    }
    if pow2 && !valid(s.tile) {
        let [bm, bn, bk] = s.tile;
        let near = [bk, bk / 2, bk * 2, 16, 8, 32]
            .into_iter()
            .flat_map(|k| [[bm, bn, k], [bm / 2, bn / 2, k], [bm * 2, bn * 2, k]])
            .find(|&t| valid(t));
        s.tile = near.unwrap_or([64, 64, 16]);
        s.threads = fma_threads(s.tile[0], s.tile[1]) as u32;
    }
    while pow2 && s.smem_bytes(Kind::Matmul) > limit {
        let [bm, bn, bk] = s.tile;
        let Some(t) = [
            [bm, bn, bk / 2],
            [bm / 2, bn / 2, bk],
            [bm / 2, bn / 2, bk / 2],
        ]
        .into_iter()
        .find(|&t| valid(t)) else {
            return;
        };
        s.tile = t;
        s.threads = fma_threads(t[0], t[1]) as u32;
    }
}

/// Where a user error about a schedule is reported: at the directive responsible when it was
/// given, with the kernel call as a secondary label; at the call otherwise.
#[derive(Copy, Clone, Debug)]
pub struct Blame {
    pub call: Span,
    pub tile: Option<Span>,
    pub stages: Option<Span>,
    pub tensor_cores: Option<Span>,
    pub async_copy: Option<Span>,
}

impl Blame {
    /// Blames the call only.
    pub fn call(call: Span) -> Blame {
        Blame {
            call,
            tile: None,
            stages: None,
            tensor_cores: None,
            async_copy: None,
        }
    }

    /// Blames the directives of `d`, with the kernel call `call`.
    pub fn of(d: &Directives, call: Span) -> Blame {
        Blame {
            call,
            tile: d.span_of(Directive::Tile),
            stages: d.span_of(Directive::Stages),
            tensor_cores: d.span_of(Directive::TensorCores),
            async_copy: d.span_of(Directive::AsyncCopy),
        }
    }

    /// The first directive span of `of` that was given, else the call.
    fn error(&self, of: &[Option<Span>], message: String, help: &str) -> ScheduleError {
        let directive = of.iter().flatten().next().copied();
        ScheduleError {
            message,
            help: Some(help.to_string()),
            span: Some(directive.unwrap_or(self.call)),
            user: true,
            call: directive.map(|_| self.call),
        }
    }
}

/// `schedule.use_tensor_cores(True)` on a kernel that could run on tensor cores (a matmul, a
/// convolution, an attention) but is scheduled without them: E0300 naming why, at the
/// directive, rather than the CUDA-core kernel in its place (SPEC §5: every directive takes
/// effect or is refused). `asked`: the body's directive was `True`.
pub fn tensor_cores_honoured(
    g: &Graph,
    k: &Kernel,
    asked: bool,
    target: Target,
    blame: &Blame,
) -> Result<(), ScheduleError> {
    if !asked
        || k.schedule.tensor_cores
        || !matches!(k.kind, Kind::Matmul | Kind::Conv | Kind::FlashAttention)
    {
        return Ok(());
    }
    // the product's operands (a fused epilogue's or prologue's inputs are not)
    let operands = match g.op(k.root) {
        Some(crate::graph::Op::Matmul { a, b, .. }) => vec![*a, *b],
        Some(op) => op.operands(),
        None => k.inputs.clone(),
    };
    let mut dtypes: Vec<String> = Vec::new();
    for v in operands {
        if let Some(t) = g.ty(v) {
            let n = t.dtype.name().to_string();
            if !dtypes.contains(&n) {
                dtypes.push(n);
            }
        }
    }
    let why = if !target.tensor_cores() {
        format!("{} has no tensor cores", target.name())
    } else {
        match k.kind {
            Kind::Matmul => format!(
                "its operands are {}: tensor cores take bf16 or fp16 pairs (fp8 and tf32 are not generated yet)",
                dtypes.join(" and ")
            ),
            Kind::FlashAttention => format!(
                "its operands are {}: the tensor-core attention takes bf16 or fp16 with a head dimension that is a multiple of 16",
                dtypes.join(", ")
            ),
            _ => format!(
                "its operands are {}: the implicit-GEMM convolution takes bf16 or fp16 with at least 16 channels per group",
                dtypes.join(" and ")
            ),
        }
    };
    Err(blame.error(
        &[blame.tensor_cores],
        format!(
            "kernel '{}' cannot run on tensor cores as schedule.use_tensor_cores(True) asks: {why}",
            k.name
        ),
        "leave use_tensor_cores out (the compiler then picks), or give it operands the tensor cores take",
    ))
}

/// `schedule.async_copy(True)` on a matmul for a target without asynchronous copies (spirv):
/// E0300 at the directive, rather than the loads and stores the kernel gets there.
pub fn async_copy_honoured(
    k: &Kernel,
    asked: Option<bool>,
    target: Target,
    blame: &Blame,
) -> Result<(), ScheduleError> {
    if asked != Some(true) || k.kind != Kind::Matmul || target.async_copy() {
        return Ok(());
    }
    Err(blame.error(
        &[blame.async_copy],
        format!(
            "kernel '{}' cannot copy its tiles asynchronously as schedule.async_copy(True) asks: {} has no asynchronous copy (cp.async)",
            k.name,
            target.name()
        ),
        "leave async_copy out on this target: its tiles are loaded and stored to shared memory",
    ))
}

/// A 2-D `schedule.tile((BM, BN))` on a kernel without a reduction dimension: the elementwise
/// template takes it when BN is a multiple of the vector width; the copy and complex templates
/// take no 2-D tile yet (E0300 at the directive).
fn elementwise_tile_2d(g: &Graph, k: &Kernel, blame: &Blame) -> Result<(), ScheduleError> {
    let s = &k.schedule;
    let why = if matches!(g.op(k.root), Some(crate::graph::Op::Complex { .. })) {
        Some("complex elementwise kernels run a 1-D block and take no 2-D tile yet".to_string())
    } else if s.vector == 0 || !s.tile[1].is_multiple_of(s.vector) {
        Some(format!(
            "BN = {} is not a multiple of the vector width {} (schedule.vectorize)",
            s.tile[1], s.vector
        ))
    } else if !s.threads.is_multiple_of(32) {
        Some(format!(
            "BM·BN / vector = {} threads is not a whole number of warps (32 threads)",
            s.threads
        ))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(blame.error(
            &[blame.tile],
            format!(
                "kernel '{}' cannot take the 2-D tile ({}, {}): {why}",
                k.name, s.tile[0], s.tile[1]
            ),
            "leave schedule.tile out of this kernel, or give a tile of whole warps whose BN the vector width divides",
        )),
    }
}

/// Checks one kernel's schedule against the target and its template (E0300 rules of SPEC §5):
/// threads per block, the MMA shape, shared memory, then the matmul templates' own limits.
pub fn verify_kernel(
    g: &Graph,
    k: &Kernel,
    target: Target,
    blame: &Blame,
) -> Result<(), ScheduleError> {
    let s = &k.schedule;
    let limits = target.limits();
    if s.threads == 0 || s.threads > limits.max_threads_per_block {
        return Err(blame.error(
            &[blame.tile],
            format!(
                "kernel '{}' needs {} threads per block, more than {}'s limit of {}{}",
                k.name,
                s.threads,
                target.name(),
                limits.max_threads_per_block,
                match k.kind {
                    Kind::Conv if !s.tensor_cores && !target.tensor_cores() => format!(
                        " ({} has no tensor cores: the convolution runs the direct kernel, whose tile (BM, BN) of an output plane takes BM·BN / vector threads)",
                        target.name()
                    ),
                    _ => String::new(),
                }
            ),
            "use a smaller tile or a larger warp tile",
        ));
    }
    if matches!(k.kind, Kind::Elementwise | Kind::Copy) && s.tile[2] == 0 {
        elementwise_tile_2d(g, k, blame)?;
    }
    if k.kind != Kind::Matmul {
        return Ok(());
    }
    let [bm, bn, bk] = s.tile;
    if s.tensor_cores {
        for (name, v, m) in [("BM", bm, 16), ("BN", bn, 8), ("BK", bk, 16)] {
            if v % m != 0 {
                return Err(blame.error(
                    &[blame.tile, blame.tensor_cores],
                    format!(
                        "tile dimension {name} = {v} is not a multiple of {m}, the MMA shape m16n8k16, with tensor cores on"
                    ),
                    "use tile dimensions that are multiples of (16, 8, 16), or schedule.use_tensor_cores(False)",
                ));
            }
        }
        let [wm, wn] = s.warp;
        for (name, w, m, t) in [("WM", wm, 16, bm), ("WN", wn, 8, bn)] {
            if w == 0 || w % m != 0 || t % w != 0 {
                return Err(blame.error(
                    &[blame.tile, blame.tensor_cores],
                    format!(
                        "warp tile dimension {name} = {w} must be a multiple of {m} (the MMA shape) and divide the block tile ({t})"
                    ),
                    "pick a warp tile such as (64, 32) that divides the block tile",
                ));
            }
        }
    }
    let stats = super::prologue_smem(g, k);
    let smem = s.smem_bytes(k.kind) + stats;
    let limit = u64::from(limits.max_dynamic_shared_bytes);
    if smem > limit {
        let prologue = if stats > 0 {
            format!(" + {stats} for the norm prologue's row statistics")
        } else {
            String::new()
        };
        return Err(blame.error(
            &[blame.stages, blame.tile],
            format!(
                "kernel '{}' needs {smem} bytes of shared memory per block ({} stages × ({bm}·{bk} + {bk}·{bn}) × {} bytes{prologue}), over {}'s limit of {limit}{}",
                k.name,
                s.stages,
                s.elem_bytes,
                target.name(),
                fma_why(target)
            ),
            "use fewer pipeline stages or a smaller tile",
        ));
    }
    matmul_template(k, target, blame)
}

/// Why a matmul runs the FMA kernel, when the target is the reason.
fn fma_why(target: Target) -> String {
    if target.tensor_cores() {
        String::new()
    } else {
        format!(
            " ({} has no tensor cores: matmuls run the FMA kernel)",
            target.name()
        )
    }
}

/// The matmul templates' own limits (after the target's): the MMA kernel's warp tiles and
/// loads; the FMA kernel's whole warps, even loads and at least 2 stages.
fn matmul_template(k: &Kernel, target: Target, blame: &Blame) -> Result<(), ScheduleError> {
    let s = &k.schedule;
    let [bm, bn, bk] = s.tile;
    let tile = format!("({bm}, {bn}, {bk})");
    let why = if s.tensor_cores {
        String::new()
    } else {
        fma_why(target)
    };
    if !s.tile.iter().all(|v| v.is_power_of_two()) {
        return Err(blame.error(
            &[blame.tile],
            format!("the matmul kernels take tiles of powers of two, not {tile}{why}"),
            "use power-of-two tile sizes such as (64, 64, 16)",
        ));
    }
    if s.tensor_cores {
        if s.stages == 0 || mma_threads(s.tile, s.warp).is_some() {
            return Ok(());
        }
        let [wm, wn] = s.warp;
        return Err(blame.error(
            &[blame.tile],
            format!(
                "the tensor-core matmul kernel cannot take tile {tile} with warp tile ({wm}, {wn}): it needs a power-of-two warp tile, BK a multiple of 16, and loads of the A and B tiles that divide evenly among its threads (one warp per warp tile, at most 1024)"
            ),
            "use power-of-two sizes such as tile (128, 128, 32) with warp (64, 32)",
        ));
    }
    let outputs = u64::from(bm) * u64::from(bn);
    if outputs < 32 {
        return Err(blame.error(
            &[blame.tile],
            format!(
                "tile {tile} has {outputs} outputs per block, fewer than the FMA matmul kernel's one warp of 32 threads{why}"
            ),
            "use a tile of at least 32 outputs (BM·BN), such as (8, 8, 8) or (64, 64, 16)",
        ));
    }
    if fma_even_threads(bm, bn, bk).is_none() {
        return Err(blame.error(
            &[blame.tile],
            format!(
                "the FMA matmul kernel cannot take tile {tile}: its {} threads (up to 4×4 outputs each) must be whole warps, at most 1024, a multiple of BK and BN, and divide BM·BK and BK·BN{why}",
                fma_threads(bm, bn)
            ),
            "use power-of-two tile sizes such as (64, 64, 16)",
        ));
    }
    if s.stages < 2 {
        return Err(blame.error(
            &[blame.stages],
            format!(
                "the FMA matmul kernel needs at least 2 pipeline stages, got {}{why}",
                s.stages
            ),
            "use schedule.pipeline_stages(2) or more",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
