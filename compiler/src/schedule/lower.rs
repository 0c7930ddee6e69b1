//! Graph IR → Schedule IR: one kernel per op that does work, each with the directives of the
//! kernel body or the target's defaults:
//!
//! | kernel | default schedule |
//! | --- | --- |
//! | matmul, bf16/fp16 operands | 128×128×32 tile, warp 64×32 (8 warps), tensor cores, 3 stages, async copies |
//! | matmul, tf32 (both operands tf32, or `accum_dtype="tf32"`) | 128×128×16 tile, warp 64×32, tf32 tensor cores (m16n8k8), 3 stages |
//! | matmul, other dtypes | 64×64×16 tile, fp32 FMA, 256 threads (4×4 outputs each; fewer on a tile of under 512 outputs, whole warps), 2 stages, async copies |
//! | elementwise | 256 threads, 16-byte vectors: width 16 / the widest full-size dtype (4 fp32, 8 bf16/fp16) |
//! | row kernels | one warp per row, 4 rows per block |
//! | flash attention | 16 query rows per block (4 warps × 4 rows), key tiles of 32, fp32 FMA |

use crate::arch::Target;
use crate::graph::{DType, Graph, Op, TensorType};
use crate::schedule::fit::{
    attention_elem_bytes, attention_grad_smem, attention_mma, conv_mma_tile_ok, default_fma_tile,
    fma_attention_smem, fma_threads, verify_kernel, Blame, FMA_ATTENTION_SMEM,
};
use crate::schedule::{
    kind_of, mma_tf32, tensor_core_dtype, verify, Directives, Kernel, Kind, Program, Schedule,
    ScheduleError,
};
fn numel(t: &TensorType) -> u64 {
    t.shape.iter().map(|&d| d as u64).product()
}

/// The vector width of an elementwise kernel: the elements one thread handles, as many as fit
/// one 16-byte access of the widest full-size operand or result (4 fp32, 8 bf16/fp16, 2 int64);
/// 1-byte dtypes (bool) and broadcast operands are read element by element and do not count.
/// The generator vectorises the threads whose elements are all in range and runs the last
/// partial group element by element, so any length works.
fn elementwise_vector(g: &Graph, inputs: &[crate::graph::ValueId], out: &TensorType) -> u32 {
    let n = numel(out);
    if n == 0 {
        return 1;
    }
    let mut widest = if (out.dtype.size_bytes() as u32) > 1 {
        out.dtype.size_bytes() as u32
    } else {
        0
    };
    for v in inputs {
        match g.ty(*v) {
            Some(t) if numel(t) == n && (t.dtype.size_bytes() as u32) > 1 => {
                widest = widest.max(t.dtype.size_bytes() as u32)
            }
            Some(_) => {}
            None => return 1,
        }
    }
    16u32.checked_div(widest).map_or(1, |v| v.clamp(1, 8))
}

/// The implicit-GEMM tile of a convolution that runs on tensor cores
/// ([`crate::schedule::conv_tensor_cores`]), `schedule.use_tensor_cores` not `False`, and a kernel
/// tile, if given, that the implicit GEMM takes as (output channels, output pixels[, BK]):
/// 32, 64 or 128 each (BK 16 or 32). A 2-D tile outside that keeps the direct kernel with
/// that tile.
pub fn conv_mma_tile(g: &Graph, op: &Op, d: &Directives) -> Option<[u32; 3]> {
    let Op::Conv { x, w, attrs, .. } = op else {
        return None;
    };
    let (tx, tw) = (g.ty(*x)?, g.ty(*w)?);
    let groups = attrs.groups.max(1);
    let (cin_g, cout_g) = (tw.shape.get(1).copied()?, tw.shape[0] / groups);
    if !(d.tensor_cores.unwrap_or(true)
        && crate::schedule::conv_tensor_cores(tx.dtype, tw.dtype, cin_g, cout_g))
    {
        return None;
    }
    let bk = if cin_g <= 16 { 16 } else { 32 };
    let tile = match d.tile {
        Some([m, n, k]) => [m, n, if k == 0 { bk } else { k }],
        None => [64, 64, bk],
    };
    conv_mma_tile_ok(tile).then_some(tile)
}

fn schedule_for(
    g: &Graph,
    kind: Kind,
    op: &Op,
    ty: &TensorType,
    inputs: &[crate::graph::ValueId],
    d: &Directives,
) -> Schedule {
    match kind {
        Kind::Matmul => {
            let (ad, bd, accum) = match op {
                Op::Matmul { a, b, accum, .. } => (
                    g.ty(*a).map(|t| t.dtype).unwrap_or(ty.dtype),
                    g.ty(*b).map(|t| t.dtype).unwrap_or(ty.dtype),
                    *accum,
                ),
                _ => (ty.dtype, ty.dtype, None),
            };
            // Tensor cores take bf16/fp16 operand pairs, and tf32 when the operands or the
            // accumulator ask for it; fp32 operands otherwise keep fp32 FMA even when tensor
            // cores are requested (tf32 would round them to 10-bit mantissas).
            let tf32 = mma_tf32(ad, bd, accum);
            let tc = d.tensor_cores.unwrap_or(true) && (tensor_core_dtype(ad, bd) || tf32);
            let (tile, warp, stages) = if tc && tf32 {
                // 4-byte operands: half the k-step keeps 3 stages within 48 KiB.
                ([128, 128, 16], [64, 32], 3)
            } else if tc {
                ([128, 128, 32], [64, 32], 3)
            } else {
                ([64, 64, 16], [32, 32], 2)
            };
            // a 2-D tile (BK 0) keeps the default BK
            let tile = d
                .tile
                .map(|t| if t[2] == 0 { [t[0], t[1], tile[2]] } else { t })
                .unwrap_or(tile);
            let warp = d.warp.unwrap_or(if tc {
                let w = [warp[0].min(tile[0]), warp[1].min(tile[1])];
                // `occupancy_target`: a warp tile the user did not give is picked to fit
                match d.occupancy {
                    Some(r) => crate::schedule::fit::occupancy_warp_tile(tile, w, r),
                    None => w,
                }
            } else {
                warp
            });
            // in u64, saturated to u32: tile sizes from a directive or a cache entry can be
            // anything, and the schedule check reports a count over the target's limit
            let [t0, t1] = [u64::from(tile[0]), u64::from(tile[1])];
            let threads = if tc {
                let wm = u64::from(warp[0].max(1));
                let wn = u64::from(warp[1].max(1));
                (t0 / wm).max(1) * (t1 / wn).max(1) * 32
            } else {
                // 4×4 outputs per thread, fewer on a small tile (whole warps)
                fma_threads(tile[0], tile[1])
            };
            let threads = u32::try_from(threads).unwrap_or(u32::MAX);
            Schedule {
                tile,
                warp,
                stages: d.stages.unwrap_or(stages),
                vector: 1,
                tensor_cores: tc,
                async_copy: d.async_copy.unwrap_or(true),
                threads,
                elem_bytes: if tc {
                    (ad.size_bytes() as u32).max(bd.size_bytes() as u32)
                } else if ad == DType::F64 && bd == DType::F64 {
                    // fp64 FMA stages fp64 tiles.
                    8
                } else {
                    4
                },
            }
        }
        Kind::Elementwise | Kind::Copy => elementwise_schedule(g, op, ty, inputs, d),
        Kind::FlashAttention => {
            // Tensor cores: 64 query rows per block (4 warps × 16), key tiles of 64, for
            // bf16/fp16 operands of one head dimension that is a multiple of 16. Otherwise
            // fp32 FMA: 16 query rows per block (4 warps × 4 rows), key tiles of 32, fewer
            // rows where the tiles of a large head dimension would not fit in shared memory.
            let tc = d.tensor_cores.unwrap_or(true) && attention_mma(g, inputs, ty).is_some();
            let dims = |i: usize| {
                let t = inputs.get(i).and_then(|&v| g.ty(v));
                t.and_then(|t| t.shape.last().copied()).unwrap_or(0) as u64
            };
            let (dq, dv) = (dims(0), dims(2));
            let eb = attention_elem_bytes(g, inputs, ty);
            let smem = |bm: u64| match op {
                Op::AttentionGrad { .. } => attention_grad_smem(eb, bm, 32, dq, dv),
                Op::AttentionLse { .. } => fma_attention_smem(eb, bm, 32, dq, 0),
                _ => fma_attention_smem(eb, bm, 32, dq, dv),
            };
            let bm = [16, 8, 4]
                .into_iter()
                .find(|&bm| smem(bm) <= FMA_ATTENTION_SMEM)
                .unwrap_or(4);
            Schedule {
                tile: if tc { [64, 64, 16] } else { [bm as u32, 32, 1] },
                warp: [1, 1],
                stages: 1,
                vector: 1,
                tensor_cores: tc,
                async_copy: false,
                threads: 128,
                elem_bytes: if tc { 2 } else { eb as u32 },
            }
        }
        Kind::Conv => {
            // bf16/fp16 operand pairs of a dense convolution: the implicit GEMM on tensor
            // cores, (BM, BN, BK) = (64, 64, 32) unless the kernel says otherwise (BK 16 when
            // a group has 16 channels or fewer)
            if let Some(tile) = conv_mma_tile(g, op, d) {
                return Schedule {
                    tile,
                    warp: [32, 32],
                    stages: 2,
                    vector: 1,
                    tensor_cores: true,
                    async_copy: false,
                    threads: (tile[0] / 32) * (tile[1] / 32) * 32,
                    elem_bytes: 2,
                };
            }
            // otherwise the direct kernel: a 2-D tile (BM, BN) of an output plane per block,
            // `vector` adjacent outputs of a row per thread: (8, 32) and 1 unless the kernel
            // says otherwise.
            let [bm, bn] = match d.tile {
                Some([m, n, _]) if m > 0 && n > 0 => [m, n],
                _ => [8, 32],
            };
            let vector = d.vectorize.filter(|&v| v > 0 && bn % v == 0).unwrap_or(1);
            Schedule {
                tile: [bm, bn, 1],
                warp: [1, 1],
                stages: d.stages.unwrap_or(1).max(1),
                vector,
                tensor_cores: false,
                async_copy: false,
                // whole warps: the threads past the tile idle
                threads: (bm * bn / vector).max(1).next_multiple_of(32),
                elem_bytes: (ty.dtype.size_bytes() as u32),
            }
        }
        Kind::Spectral => {
            // an FFT: one line of `n` per block, `n/2` butterflies a pass over up to 256
            // threads; the product: elementwise over the frequencies
            let (line, threads) = match op {
                Op::Fft { n, .. } => {
                    let n = u32::try_from(*n).unwrap_or(u32::MAX);
                    (n, (n / 2).clamp(32, 256).next_multiple_of(32))
                }
                _ => (256, 256),
            };
            Schedule {
                tile: [line, 1, 1],
                warp: [1, 1],
                stages: 1,
                vector: 1,
                tensor_cores: false,
                async_copy: false,
                threads,
                elem_bytes: (ty.dtype.size_bytes() as u32),
            }
        }
        Kind::Row(_) | Kind::LayerNorm | Kind::RmsNorm | Kind::Reduce => Schedule {
            // a warp per row: `rows_per_block` is the warps per block
            tile: [occupancy_threads(128, d) / 32, 1, 1],
            warp: [1, 1],
            stages: 1,
            vector: 1,
            tensor_cores: false,
            async_copy: false,
            threads: occupancy_threads(128, d),
            elem_bytes: (ty.dtype.size_bytes() as u32),
        },
    }
}

/// The schedule of a kernel without a reduction dimension (elementwise, copy, gather): a 1-D
/// block of `vector` elements per thread, or a 2-D tile `(BM, BN)` of the output.
fn elementwise_schedule(
    g: &Graph,
    op: &Op,
    ty: &TensorType,
    inputs: &[crate::graph::ValueId],
    d: &Directives,
) -> Schedule {
    let vector = d
        .vectorize
        .unwrap_or_else(|| elementwise_vector(g, inputs, ty));
    // a 2-D tile (BM, BN): one BM×BN tile of the output (as rows of its last dim) per
    // block, BM·BN / vector threads (a 3-D tile is a matmul's: SPEC §5)
    if let Some([bm, bn, 0]) = d.tile {
        // the default vector narrowed to one that divides BN; a given one is checked
        let vector = match d.vectorize {
            // a take or scatter_add kernel moves one element per thread
            _ if matches!(op, Op::Take { .. } | Op::ScatterAdd { .. }) => 1,
            Some(v) => v,
            None => (0..=vector.max(1).ilog2())
                .rev()
                .map(|e| 1u32 << e)
                .find(|&v| bn % v == 0)
                .unwrap_or(1),
        };
        let threads = u64::from(bm) * u64::from(bn) / u64::from(vector.max(1));
        return Schedule {
            tile: [bm, bn, 0],
            warp: [1, 1],
            stages: 1,
            vector,
            tensor_cores: false,
            async_copy: false,
            threads: u32::try_from(threads).unwrap_or(u32::MAX),
            elem_bytes: (ty.dtype.size_bytes() as u32),
        };
    }
    let threads = occupancy_threads(256, d);
    Schedule {
        tile: [threads * vector, 1, 1],
        warp: [1, 1],
        stages: 1,
        vector,
        tensor_cores: false,
        async_copy: false,
        threads,
        elem_bytes: (ty.dtype.size_bytes() as u32),
    }
}

/// `default` threads, or the count `occupancy_target` picks for a template that takes any
/// power-of-two number of warps.
fn occupancy_threads(default: u32, d: &Directives) -> u32 {
    d.occupancy.map_or(default, |r| {
        crate::schedule::fit::occupancy_threads(default, r)
    })
}

/// Schedules an optimised graph for `target` with the kernel body's directives.
pub fn lower(g: &Graph, d: &Directives, target: Target) -> Result<Program, ScheduleError> {
    // `use_tensor_cores(True)` is honoured or refused per kernel (fit::tensor_cores_honoured)
    let asked_tc = d.tensor_cores == Some(true);
    // a target without tensor cores (spirv) schedules every kernel for the CUDA-core kinds
    let no_mma;
    let d = if target.tensor_cores() {
        d
    } else {
        no_mma = Directives {
            tensor_cores: Some(false),
            ..d.clone()
        };
        &no_mma
    };
    let mut kernels = Vec::new();
    for id in g.ids() {
        let Some(op) = g.op(id) else { continue };
        let Some(kind) = kind_of(op) else { continue };
        let Some(ty) = g.ty(id) else { continue };
        let inputs: Vec<_> = op
            .operands()
            .into_iter()
            .filter(|v| !matches!(g.op(*v), Some(Op::Const { .. })))
            .collect();
        // `op.matmul(..., tile_shape=...)`: that product's tile, blamed at its call
        let own;
        let d = match op {
            Op::Matmul { tile: Some(t), .. } => {
                let mut x = d.clone();
                x.tile = Some(*t);
                x.given_at(crate::schedule::Directive::Tile, g.span(id));
                own = x;
                &own
            }
            _ => d,
        };
        let mut schedule = schedule_for(g, kind, op, ty, &inputs, d);
        // without `cp.async` (spirv) tiles are loaded and stored (an explicit
        // async_copy(True) is refused below)
        schedule.async_copy &= target.async_copy();
        if !target.tensor_cores() && kind == Kind::Matmul && d.tile.is_none() {
            // a tile the compiler picked; a user's is checked as given (fit::verify_kernel)
            default_fma_tile(&mut schedule, target, d.stages.is_some());
        }
        kernels.push(Kernel {
            // the attention backward's kernels by their op (flash_attention_dq, ...)
            name: match op {
                Op::AttentionLse { .. } | Op::AttentionGrad { .. } => {
                    format!("{}_{}_{}", g.name, op.name(), kernels.len())
                }
                _ => format!("{}_{}_{}", g.name, kind.name(), kernels.len()),
            },
            kind,
            root: id,
            inputs,
            ty: ty.clone(),
            span: g.span(id),
            schedule,
        });
    }
    let p = Program {
        graph: g.clone(),
        target,
        kernels,
    };
    // A directive the target cannot run is reported at that directive, with the kernel call.
    // Without a call (a graph lowered on its own) it is reported at the kernel's op.
    for k in &p.kernels {
        let mut blame = Blame::of(d, d.span.unwrap_or(k.span));
        if let Some(Op::Matmul { tile: Some(_), .. }) = g.op(k.root) {
            // the product's own `tile_shape=`: its call
            blame.tile = Some(k.span);
        }
        crate::schedule::fit::tensor_cores_honoured(g, k, asked_tc, target, &blame)?;
        crate::schedule::fit::async_copy_honoured(k, d.async_copy, target, &blame)?;
        verify_kernel(g, k, target, &blame)?;
    }
    verify(&p)?;
    Ok(p)
}
