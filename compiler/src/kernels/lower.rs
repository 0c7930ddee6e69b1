//! Schedule IR → Tile IR: the block program of one scheduled kernel. Kernels whose kind has
//! no block program yet give [`NotLowered`] with the reason (the caller falls back).

use crate::graph::{DType, Graph, Op, TensorType, ValueId};
use crate::scalar::MmaKind;
use crate::schedule::{Kernel, Kind};
use crate::tile::{MatmulBatch, RowOp, Shape, TileKernel};

/// Why a kernel has no Tile IR (yet).
#[derive(Clone, Debug, PartialEq)]
pub struct NotLowered {
    pub kernel: String,
    pub reason: String,
}

pub(crate) fn nl(k: &Kernel, reason: impl Into<String>) -> NotLowered {
    NotLowered {
        kernel: k.name.clone(),
        reason: reason.into(),
    }
}

fn u32_of(k: &Kernel, v: usize) -> Result<u32, NotLowered> {
    u32::try_from(v).map_err(|_| nl(k, "a dimension does not fit in 32 bits"))
}

fn numel(t: &TensorType) -> u64 {
    t.shape.iter().map(|&d| d as u64).product()
}

fn float_io(d: DType) -> bool {
    matches!(d, DType::F32 | DType::TF32 | DType::BF16 | DType::F16)
}

/// [`float_io`] or fp8 (1-byte floats: loaded and stored one byte at a time, computed in f32).
pub(super) fn any_float(d: DType) -> bool {
    float_io(d) || matches!(d, DType::F8E4M3 | DType::F8E5M2)
}

fn ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Blocks of a row kernel: one per row, or one per `warps` rows.
fn row_grid(k: &Kernel, rows: u64, warps: u32, row_block: bool) -> Result<u32, NotLowered> {
    let blocks = if row_block {
        rows
    } else {
        ceil(rows, u64::from(warps))
    };
    u32::try_from(blocks).map_err(|_| nl(k, "grid too large"))
}

/// Lowers one kernel of `g`.
mod attention;

pub fn lower(g: &Graph, k: &Kernel) -> Result<TileKernel, NotLowered> {
    let op = g.op(k.root).ok_or_else(|| nl(k, "no such graph value"))?;
    // every Tile IR op carries the span of the source it comes from (graphs built without a
    // source, as in unit tests, stay at Schedule IR)
    if k.span == tessera_lang::Span::default() {
        return Err(nl(k, "an op without a span"));
    }
    let s = &k.schedule;
    let sp = k.span;
    let mut tk = TileKernel {
        name: k.name.clone(),
        root: k.root,
        inputs: k.inputs.clone(),
        ty: k.ty.clone(),
        grid: [1, 1, 1],
        block: [s.threads, 1, 1],
        shape: Shape::Elementwise { n: 0, vector: 1 },
        span: sp,
    };
    match k.kind {
        Kind::Conv => conv_tile(g, k, &mut tk)?,
        Kind::Spectral => spectral_tile(g, k, &mut tk)?,
        Kind::Elementwise => elementwise_tile(g, k, op, &mut tk)?,
        Kind::Row(f) => row_fn_tile(g, k, op, f, &mut tk)?,
        Kind::Matmul => matmul_tile(g, k, op, &mut tk)?,
        Kind::Reduce if matches!(op, Op::FusedReduce { .. }) => fused_reduce_tile(k, op, &mut tk)?,
        Kind::LayerNorm | Kind::RmsNorm | Kind::Reduce => rows_tile(g, k, op, &mut tk)?,
        Kind::FlashAttention => attention::tile(g, k, op, &mut tk)?,
        Kind::Copy => match op {
            Op::Take { x, index, axis } => take_tile(g, k, *x, *index, *axis, false, &mut tk)?,
            Op::ScatterAdd { index, src, axis } => {
                take_tile(g, k, *src, *index, *axis, true, &mut tk)?
            }
            _ => super::copy_map::tile(g, k, op, &mut tk)?,
        },
    }
    Ok(tk)
}

/// The tile mapping of an elementwise kernel: one thread per `vector` results.
fn elementwise_tile(g: &Graph, k: &Kernel, op: &Op, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let s = &k.schedule;
    // a complex op's kernel reads and writes (re, im) pairs
    let cplx = matches!(op, Op::Complex { .. });
    let io = |d: DType| {
        any_float(d)
            || (cplx && d.is_complex())
            || matches!(
                d,
                DType::F64 | DType::I32 | DType::I64 | DType::I8 | DType::Bool
            )
    };
    if !io(k.ty.dtype) {
        return Err(nl(k, format!("{} results are not lowered yet", k.ty.dtype)));
    }
    for v in &k.inputs {
        let t = g.ty(*v).ok_or_else(|| nl(k, "untyped input"))?;
        if !io(t.dtype) {
            return Err(nl(k, format!("{} operands are not lowered yet", t.dtype)));
        }
    }
    let n = numel(&k.ty);
    if n == 0 || n > u64::from(u32::MAX) {
        return Err(nl(k, "empty or too large (>2^32 elements)"));
    }
    let grid = ceil(n, u64::from(s.threads * s.vector));
    tk.grid = [
        u32::try_from(grid).map_err(|_| nl(k, "grid too large"))?,
        1,
        1,
    ];
    tk.shape = Shape::Elementwise {
        n,
        vector: s.vector,
    };
    Ok(())
}

/// The tile mapping of a matmul: the MMA template with tensor cores, the FMA one without.
fn matmul_tile(g: &Graph, k: &Kernel, op: &Op, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let s = &k.schedule;
    let (a, b, accum) = match op {
        Op::Matmul { a, b, accum, .. } => (*a, *b, *accum),
        _ => return Err(nl(k, "not a matmul")),
    };
    let at = g.ty(a).ok_or_else(|| nl(k, "untyped operand"))?;
    let bt = g.ty(b).ok_or_else(|| nl(k, "untyped operand"))?;
    // A 1-D operand is the matrix with the same memory: a [k] is [1, k], b [k] is
    // [k, 1]; the result ([..., n], [..., m] or []) then gains that 1.
    let (a1, b1) = (at.shape.len() == 1, bt.shape.len() == 1);
    if at.shape.is_empty() || bt.shape.is_empty() {
        return Err(nl(k, "0-D matmul operand"));
    }
    let as_matrix = |t: &TensorType, front: bool| TensorType {
        shape: if front {
            vec![1, t.shape[0]]
        } else {
            vec![t.shape[0], 1]
        },
        dtype: t.dtype,
    };
    let (a2, b2) = (as_matrix(at, true), as_matrix(bt, false));
    let at = if a1 { &a2 } else { at };
    let bt = if b1 { &b2 } else { bt };
    let mut oshape = k.ty.shape.clone();
    if a1 {
        let at_n = oshape.len().saturating_sub(usize::from(!b1));
        oshape.insert(at_n, 1);
    }
    if b1 {
        oshape.push(1);
    }
    if oshape.len() < 2 {
        return Err(nl(k, "a matmul result below 2-D"));
    }
    let batch = matmul_batch(k, &oshape, at, bt)?;
    let (at, bt) = (
        &TensorType {
            shape: at.shape[at.shape.len() - 2..].to_vec(),
            dtype: at.dtype,
        },
        &TensorType {
            shape: bt.shape[bt.shape.len() - 2..].to_vec(),
            dtype: bt.dtype,
        },
    );
    let f64_mm = at.dtype == DType::F64 && bt.dtype == DType::F64;
    let intlike = |d: DType| matches!(d, DType::I8 | DType::I32 | DType::I64 | DType::Bool);
    let int_mm = intlike(at.dtype)
        && intlike(bt.dtype)
        && matches!(k.ty.dtype, DType::I8 | DType::I32 | DType::I64);
    let fp8_mm = at.dtype == bt.dtype
        && matches!(at.dtype, DType::F8E4M3 | DType::F8E5M2)
        && any_float(k.ty.dtype);
    // fp64 results: an fp64 matmul, or a float one whose epilogue promotes to fp64.
    let f64_out = k.ty.dtype == DType::F64 && at.dtype.is_float() && bt.dtype.is_float();
    // Mixed float operands (bf16 @ fp32, fp32 @ fp64, …) run the FMA kernel, each
    // converted as it is staged.
    let mixed = at.dtype != bt.dtype && at.dtype.is_float() && bt.dtype.is_float();
    let fma_only = (f64_mm || int_mm || fp8_mm || mixed) && !s.tensor_cores;
    if !(any_float(k.ty.dtype) || f64_out || fma_only) {
        return Err(nl(k, format!("{} result", k.ty.dtype)));
    }
    let (m, kk, n) = (
        u32_of(k, at.shape[0])?,
        u32_of(k, at.shape[1])?,
        u32_of(k, bt.shape[1])?,
    );
    let [bm, bn, bk] = s.tile;
    let pow2 = |v: u32| v.is_power_of_two();
    if !(pow2(bm) && pow2(bn) && pow2(bk)) {
        return Err(nl(k, "tile sizes that are not powers of two"));
    }
    tk.grid = [n.div_ceil(bn).max(1), m.div_ceil(bm).max(1), batch.count];
    if s.tensor_cores {
        let tf32 = crate::schedule::mma_tf32(at.dtype, bt.dtype, accum);
        let kind = match (at.dtype, bt.dtype) {
            (DType::BF16, DType::BF16) => MmaKind::M16n8k16Bf16,
            (DType::F16, DType::F16) => MmaKind::M16n8k16F16,
            _ if tf32 => MmaKind::M16n8k8Tf32,
            _ => {
                return Err(nl(
                    k,
                    "tensor cores with operands other than bf16/fp16 pairs or tf32",
                ))
            }
        };
        let [wm, wn] = s.warp;
        if !(pow2(wm) && pow2(wn)) || bk % 16 != 0 || s.stages == 0 {
            return Err(nl(k, "warp tiles that are not powers of two"));
        }
        let threads = (bm / wm) * (bn / wn) * 32;
        if (bm * bk) % threads != 0 || (bk * bn) % threads != 0 || threads > 1024 {
            return Err(nl(k, "a tile the threads cannot load evenly"));
        }
        tk.block = [threads, 1, 1];
        tk.shape = Shape::MatmulMma {
            m,
            n,
            k: kk,
            tile: s.tile,
            warp: s.warp,
            stages: s.stages,
            kind,
            batch,
        };
    } else {
        // whole warps of up to 4×4 outputs each: a tile of fewer than 32 outputs
        // has no such layout
        if u64::from(bm) * u64::from(bn) < 32 {
            return Err(nl(k, "a tile of fewer than 32 outputs (one warp)"));
        }
        let threads = crate::kernels::matmul_fma::even_threads(bm, bn, bk)
            .filter(|_| s.stages >= 2)
            .ok_or_else(|| nl(k, "a tile the threads cannot load evenly"))?;
        tk.block = [threads as u32, 1, 1];
        tk.shape = Shape::MatmulFma {
            m,
            n,
            k: kk,
            tile: s.tile,
            stages: s.stages,
            batch,
        };
    }
    Ok(())
}

/// How a matmul with result shape `oshape` (2-D or more) and 2-D-or-more operands `at`, `bt`
/// maps its problems over the batch dimensions.
fn matmul_batch(
    k: &Kernel,
    oshape: &[usize],
    at: &TensorType,
    bt: &TensorType,
) -> Result<MatmulBatch, NotLowered> {
    // Leading batch dims: each operand has the output's batch dims or none (shared), or
    // they broadcast against each other (a map from problem z to each operand's).
    let ob = &oshape[..oshape.len() - 2];
    let whole = |t: &TensorType| -> Option<bool> {
        let tb = &t.shape[..t.shape.len() - 2];
        if tb == ob {
            Some(true)
        } else if tb.iter().all(|&d| d == 1) {
            Some(false)
        } else {
            None
        }
    };
    let count: u64 = ob.iter().map(|&d| d as u64).product();
    if count > 65535 {
        return Err(nl(k, "more than 65535 batched matmuls"));
    }
    let batch = match (whole(at), whole(bt)) {
        (Some(a), Some(b)) => MatmulBatch {
            count: count.max(1) as u32,
            a,
            b,
            bcast: None,
        },
        _ => {
            if ob.len() > 4 {
                return Err(nl(
                    k,
                    "a broadcast batched matmul with over 4 batch dimensions",
                ));
            }
            // Each operand's stride (in problems) along each output batch dimension:
            // its batch dims right-aligned to the output's, 0 where it has size 1.
            let strides = |t: &TensorType| -> [u32; 4] {
                let tb = &t.shape[..t.shape.len() - 2];
                let mut st = [0u32; 4];
                let mut acc = 1u64;
                for d in (0..ob.len()).rev() {
                    let j = (d + tb.len()).checked_sub(ob.len());
                    let size = j.and_then(|j| tb.get(j)).copied().unwrap_or(1);
                    if size != 1 {
                        st[d] = acc as u32;
                    }
                    acc *= size as u64;
                }
                st
            };
            let mut dims = [1u32; 4];
            for (d, &v) in ob.iter().enumerate() {
                dims[d] = v as u32;
            }
            MatmulBatch {
                count: count.max(1) as u32,
                a: true,
                b: true,
                bcast: Some(crate::tile::BatchMap {
                    n: ob.len(),
                    dims,
                    a: strides(at),
                    b: strides(bt),
                }),
            }
        }
    };
    let batch = if batch.count == 1 {
        MatmulBatch::NONE
    } else {
        batch
    };
    Ok(batch)
}

/// The tile mapping of a fused reduction: the axis kernel with the elementwise body as its prologue.
fn fused_reduce_tile(k: &Kernel, op: &Op, tk: &mut TileKernel) -> Result<(), NotLowered> {
    // the axis kernel with the elementwise body as its prologue
    let Op::FusedReduce {
        body, op: r, axis, ..
    } = op
    else {
        return Err(nl(k, "not a fused reduction"));
    };
    let xt = body
        .outputs
        .first()
        .and_then(|o| body.ty(*o))
        .ok_or_else(|| nl(k, "a fused body without an output"))?;
    let both64 = k.ty.dtype == DType::F64 && xt.dtype == DType::F64;
    if !both64 && (!any_float(k.ty.dtype) || !any_float(xt.dtype)) {
        return Err(nl(k, format!("{} fused reductions", xt.dtype)));
    }
    if xt.shape.iter().skip(axis + 1).product::<usize>() <= 1 {
        return Err(nl(k, "a fused reduction over the last axis"));
    }
    middle_axis(k, row_op(*r), &xt.shape, *axis, tk)?;
    Ok(())
}

/// The tile mapping of a norm or a reduction: the row template over the last axis (or the
/// whole tensor), the axis template for a reduction over a middle axis.
fn rows_tile(g: &Graph, k: &Kernel, op: &Op, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let s = &k.schedule;
    let x = *k.inputs.first().ok_or_else(|| nl(k, "no input"))?;
    let xt = g.ty(x).ok_or_else(|| nl(k, "untyped input"))?;
    let (row_op, reduce_all) = match op {
        Op::LayerNorm {
            weight, bias, eps, ..
        } => (
            RowOp::LayerNorm {
                eps: *eps,
                weight: weight.is_some(),
                bias: bias.is_some(),
            },
            false,
        ),
        Op::RmsNorm { weight, eps, .. } => (
            RowOp::RmsNorm {
                eps: *eps,
                weight: weight.is_some(),
            },
            false,
        ),
        Op::Reduce { op: r, axis, .. } => {
            let ro = row_op(*r);
            let inner: u64 = match axis {
                Some(a) => xt.shape.iter().skip(a + 1).map(|&d| d as u64).product(),
                None => 1,
            };
            match axis {
                None => (ro, true),
                Some(_) if inner == 1 => (ro, false),
                Some(a) => {
                    // A middle axis: [outer, len, inner] -> [outer, inner].
                    let both64 = k.ty.dtype == DType::F64 && xt.dtype == DType::F64;
                    let int = matches!(xt.dtype, DType::I32 | DType::I64 | DType::I8 | DType::Bool);
                    if !both64 && !int && (!any_float(k.ty.dtype) || !any_float(xt.dtype)) {
                        return Err(nl(k, format!("{} reductions", xt.dtype)));
                    }
                    middle_axis(k, ro, &xt.shape, *a, tk)?;
                    return Ok(());
                }
            }
        }
        _ => return Err(nl(k, "not a row kernel")),
    };
    // fp32 and narrower floats, or fp64 throughout (accumulating in fp64).
    // fp32 and narrower floats, fp64, or a mix (computed in x's dtype); integer
    // reductions
    let int_red = matches!(xt.dtype, DType::I32 | DType::I64 | DType::I8 | DType::Bool)
        && matches!(row_op, RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min);
    // Row kernels read integer and bool inputs converted (softmax and norms of them
    // compute in fp32, as the cpu does); reductions of them keep their integer result.
    let int_in = |d: DType| matches!(d, DType::I32 | DType::I64 | DType::I8 | DType::Bool);
    let io = |d: DType| any_float(d) || d == DType::F64 || int_red && int_in(d);
    let io_in = |d: DType| io(d) || int_in(d);
    if !io(k.ty.dtype) {
        return Err(nl(k, format!("{} results", k.ty.dtype)));
    }
    for v in &k.inputs {
        let t = g.ty(*v).ok_or_else(|| nl(k, "untyped input"))?;
        if !io_in(t.dtype) {
            return Err(nl(k, format!("{} operands", t.dtype)));
        }
    }
    let n = numel(xt);
    let cols = match op {
        _ if reduce_all => n,
        // Over an axis followed by unit dims only: rows of `shape[axis..]`.
        Op::Reduce { axis: Some(a), .. } => xt.shape.iter().skip(*a).map(|&c| c as u64).product(),
        _ => xt.shape.last().map(|&c| c as u64).unwrap_or(1),
    };
    if cols == 0 || n == 0 || n > u64::from(u32::MAX) {
        return Err(nl(k, "an empty or too large (>2^32 elements) row kernel"));
    }
    let rows = n / cols;
    let warps = (s.threads / 32).max(1);
    let row_block = crate::tile::row_block(rows, cols);
    tk.block = [warps * 32, 1, 1];
    tk.grid = [row_grid(k, rows, warps, row_block)?, 1, 1];
    tk.shape = Shape::Rows {
        op: row_op,
        rows: rows as u32,
        cols: cols as u32,
        warps,
        row_block,
    };
    Ok(())
}

/// The tile mapping of a row function ([`crate::graph::ops::rows`]): the row template over
/// the last axis (one warp, or one block, per row), the axis template over a middle one.
fn row_fn_tile(
    g: &Graph,
    k: &Kernel,
    op: &Op,
    f: crate::graph::RowFn,
    tk: &mut TileKernel,
) -> Result<(), NotLowered> {
    let s = &k.schedule;
    let (x, axis) = match op {
        Op::Row { x, axis, .. } => (*x, *axis),
        _ => return Err(nl(k, "not a row function")),
    };
    let name = f.name();
    if !(any_float(k.ty.dtype) || k.ty.dtype == DType::F64) {
        return Err(nl(k, format!("{} {name}", k.ty.dtype)));
    }
    let out = f.out();
    let shape = &g.ty(x).ok_or_else(|| nl(k, "untyped operand"))?.shape;
    let inner: u64 = shape.iter().skip(axis + 1).map(|&d| d as u64).product();
    let len = shape.get(axis).map(|&d| d as u64).unwrap_or(1);
    let total: u64 = shape.iter().map(|&d| d as u64).product();
    if inner > 1 {
        // a middle axis: [outer, len, inner]
        let outer: u64 = shape[..axis].iter().map(|&d| d as u64).product();
        if outer * len * inner > u64::from(u32::MAX) {
            return Err(nl(k, format!("a {name} of more than 2^32 elements")));
        }
        if outer * len * inner == 0 {
            return Err(nl(k, format!("empty {name}")));
        }
        super::reduce_axis::tile(k, RowOp::Max, outer, len, inner, tk)?;
        tk.shape = Shape::ExpAxis {
            out,
            outer: u32_of(k, outer as usize)?,
            len: u32_of(k, len as usize)?,
            inner: u32_of(k, inner as usize)?,
        };
        return Ok(());
    }
    let cols = len as usize;
    let rows = if cols == 0 { 0 } else { total / cols as u64 };
    if rows == 0 {
        return Err(nl(k, format!("empty {name}")));
    }
    let warps = s.threads / 32;
    let row_block = crate::tile::row_block(rows, cols as u64);
    tk.grid = [row_grid(k, rows, warps, row_block)?, 1, 1];
    tk.shape = Shape::RowExp {
        out,
        rows: u32::try_from(rows).map_err(|_| nl(k, "too many rows"))?,
        cols: u32_of(k, cols)?,
        warps,
        row_block,
    };
    Ok(())
}

/// The Tile IR shape of a `take` (`data` = x) or a `scatter_add` (`data` = src) along `axis`.
fn take_tile(
    g: &Graph,
    k: &Kernel,
    data: ValueId,
    index: ValueId,
    axis: usize,
    scatter: bool,
    tk: &mut TileKernel,
) -> Result<(), NotLowered> {
    let ti = g.ty(index).ok_or_else(|| nl(k, "untyped index"))?;
    let td = g.ty(data).ok_or_else(|| nl(k, "untyped operand"))?;
    if !matches!(ti.dtype, DType::I32 | DType::I64 | DType::I8) {
        return Err(nl(k, format!("{} indices", ti.dtype)));
    }
    let ok = |d: DType| any_float(d) || matches!(d, DType::F64 | DType::I32 | DType::I64);
    if !ok(td.dtype) || !ok(k.ty.dtype) {
        return Err(nl(k, format!("{} values", td.dtype)));
    }
    // the full (non-indexed) shape: x's for take, the result's for scatter_add
    let full = if scatter { &k.ty.shape } else { &td.shape };
    let outer: u64 = full[..axis].iter().map(|&d| d as u64).product();
    let inner: u64 = full[axis + 1..].iter().map(|&d| d as u64).product();
    let n = full.get(axis).copied().unwrap_or(0) as u64;
    let kk = numel(ti);
    let total = numel(&k.ty);
    let biggest = total.max(numel(td)).max(kk);
    if total == 0 || biggest > u64::from(u32::MAX) {
        return Err(nl(k, "empty or too large (>2^32 elements)"));
    }
    let s = &k.schedule;
    tk.grid = [
        u32::try_from(ceil(total, u64::from(s.threads.max(1))))
            .map_err(|_| nl(k, "grid too large"))?,
        1,
        1,
    ];
    tk.shape = Shape::Take {
        outer: outer as u32,
        n: n as u32,
        k: kk as u32,
        inner: inner as u32,
        scatter,
    };
    Ok(())
}

/// The longest FFT line one block transforms: the line and its twiddles in 48 KiB of static
/// shared memory (c64: 4096; c128: 2048).
pub const FFT_MAX_LINE: [usize; 2] = [4096, 2048];

/// The longest line of a length that is not a power of two (transformed by the direct
/// `O(n²)` sum).
pub const FFT_MAX_DIRECT: usize = 1024;

/// The launch shape of an FFT (one block per line) or a frequency-domain product (one thread
/// per output).
fn spectral_tile(g: &Graph, k: &Kernel, tk: &mut TileKernel) -> Result<(), NotLowered> {
    use crate::graph::FftKind;
    match g.op(k.root) {
        Some(Op::Fft {
            x,
            kind,
            axis,
            n,
            norm,
            embed,
        }) => {
            let tx = g.ty(*x).ok_or_else(|| nl(k, "untyped operand"))?;
            let wide = k.ty.dtype == DType::C128 || k.ty.dtype == DType::F64;
            let max = FFT_MAX_LINE[usize::from(wide)];
            // other lengths: the direct sum, up to FFT_MAX_DIRECT
            let direct = !n.is_power_of_two() || *n < 2;
            if (direct && *n > FFT_MAX_DIRECT) || *n > max {
                return Err(nl(
                    k,
                    format!(
                        "an FFT of length {n} (the kernel transforms powers of two up to {max}, other lengths up to {FFT_MAX_DIRECT}, in one block; longer lines run on the cpu)"
                    ),
                ));
            }
            if !(tx.dtype.is_complex() || any_float(tx.dtype) || tx.dtype == DType::F64) {
                return Err(nl(k, format!("an FFT of {} data", tx.dtype)));
            }
            let outer: usize = tx.shape[..*axis].iter().product();
            let inner: usize = tx.shape[axis + 1..].iter().product();
            let lines = outer as u64 * inner as u64;
            if lines == 0 || numel(tx).max(numel(&k.ty)) * 2 > u64::from(u32::MAX) {
                return Err(nl(k, "an empty or too large FFT"));
            }
            let u = |v: usize| u32_of(k, v);
            let embed = if *kind == FftKind::RealInverse {
                crate::graph::FftEmbed::default()
            } else {
                *embed
            };
            // adjacent lines per block along a middle axis (coalesced loads and stores): up
            // to 32, as many as the 48 KiB of shared memory hold beside the twiddles
            let eb = if wide { 8 } else { 4 };
            let twiddles = if direct { 2 * n * eb } else { n * eb };
            let room = (49152 - twiddles) / (2 * n * eb);
            let per_block = if inner == 1 {
                1
            } else {
                let cap = room.min(32).min(inner.next_power_of_two()).max(1);
                1usize << cap.ilog2()
            };
            let blocks = outer as u64 * inner.div_ceil(per_block) as u64;
            tk.grid = [
                u32::try_from(blocks).map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            // whole warps (the kernel's loops mask the positions past a line): a direct
            // transform of 100 points once launched 50 threads
            let threads = (n / 2 * per_block).clamp(32, 256).next_multiple_of(32);
            tk.block = [threads as u32, 1, 1];
            tk.shape = Shape::Fft(crate::tile::FftDims {
                kind: *kind,
                n: u(*n)?,
                lines: u(per_block)?,
                outer: u(outer)?,
                inner: u(inner)?,
                len_in: u(tx.shape[*axis])?,
                len_out: u(k.ty.shape[*axis])?,
                lo: u(embed.lo)?,
                step: u(embed.step.max(1))?,
                scale: norm.scale(*n, kind.inverse()),
                wide,
            });
            Ok(())
        }
        Some(Op::SpectralMul { x, w, groups }) => {
            let tx = g.ty(*x).ok_or_else(|| nl(k, "untyped operand"))?;
            let tw = g.ty(*w).ok_or_else(|| nl(k, "untyped operand"))?;
            let bins: usize = tx.shape[2..].iter().product();
            let total = numel(&k.ty);
            if total == 0 || numel(tx).max(numel(tw)).max(total) * 2 > u64::from(u32::MAX) {
                return Err(nl(k, "an empty or too large product"));
            }
            let u = |v: usize| u32_of(k, v);
            let threads = 256u32;
            tk.block = [threads, 1, 1];
            tk.grid = [
                u32::try_from(total.div_ceil(u64::from(threads)))
                    .map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            tk.shape = Shape::SpectralMul {
                batch: u(tx.shape[0])?,
                cin: u(tx.shape[1])?,
                cout: u(tw.shape[0])?,
                groups: u(*groups)?,
                bins: u(bins)?,
                wide: k.ty.dtype == DType::C128,
            };
            Ok(())
        }
        _ => Err(nl(k, "not an FFT or a frequency-domain product")),
    }
}

/// The launch shape of a convolution kernel: the direct one, or the implicit GEMM when the
/// schedule says tensor cores.
fn conv_tile(g: &Graph, k: &Kernel, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let Some(Op::Conv { x, w, bias, attrs }) = g.op(k.root) else {
        return Err(nl(k, "not a convolution"));
    };
    let tx = g.ty(*x).ok_or_else(|| nl(k, "untyped operand"))?;
    let tw = g.ty(*w).ok_or_else(|| nl(k, "untyped operand"))?;
    let mut dts = vec![tx.dtype, tw.dtype, k.ty.dtype];
    if let Some(b) = bias {
        dts.push(g.ty(*b).ok_or_else(|| nl(k, "untyped operand"))?.dtype);
    }
    if let Some(d) = dts.iter().find(|&&d| !(any_float(d) || d == DType::F64)) {
        return Err(nl(k, format!("{d} convolutions")));
    }
    let d = usize::from(attrs.dims);
    let batched = tx.shape.len() == d + 2;
    let xs = &tx.shape[usize::from(batched)..];
    let batch = if batched { tx.shape[0] } else { 1 };
    let lift = |v: &[usize]| -> [usize; 2] {
        if d == 1 {
            [1, v[0]]
        } else {
            [v[0], v[1]]
        }
    };
    let input = lift(&xs[1..]);
    let kernel = lift(&tw.shape[2..]);
    let output = lift(&k.ty.shape[k.ty.shape.len() - d..]);
    let (cin, cout) = (xs[0], tw.shape[0]);
    let planes = batch as u64 * cout as u64;
    if planes == 0 || output.contains(&0) {
        return Err(nl(k, "empty convolution"));
    }
    if numel(tx).max(numel(tw)).max(numel(&k.ty)) > u64::from(u32::MAX) {
        return Err(nl(k, "too large a convolution"));
    }
    let s = &k.schedule;
    let u = |v: usize| u32_of(k, v);
    let u2 = |v: [usize; 2]| -> Result<[u32; 2], NotLowered> { Ok([u(v[0])?, u(v[1])?]) };
    let mut dims = crate::tile::ConvDims {
        planes: u32::try_from(planes).map_err(|_| nl(k, "too many planes"))?,
        cin: u(cin)?,
        cout: u(cout)?,
        groups: u(attrs.groups)?,
        input: u2(input)?,
        kernel: u2(kernel)?,
        output: u2(output)?,
        stride: u2(attrs.stride)?,
        dilation: u2(attrs.dilation)?,
        pad: u2([attrs.pad[0].0, attrs.pad[1].0])?,
        bias: bias.is_some(),
        tile: [s.tile[0].max(1), s.tile[1].max(1)],
        vector: s.vector.max(1),
        mma: None,
    };
    if s.tensor_cores {
        // the implicit GEMM: grid x the pixel tiles of every image, y the output-channel
        // tiles of a group, z the groups
        let kind = match (tx.dtype, tw.dtype) {
            (DType::BF16, DType::BF16) => MmaKind::M16n8k16Bf16,
            (DType::F16, DType::F16) => MmaKind::M16n8k16F16,
            _ => {
                return Err(nl(
                    k,
                    "tensor cores with operands other than bf16/fp16 pairs",
                ))
            }
        };
        let tile = s.tile;
        if !crate::kernels::conv_mma::tile_ok(tile) {
            return Err(nl(
                k,
                format!("an implicit-GEMM convolution tile of {tile:?} (BM and BN 32, 64 or 128; BK 16 or 32)"),
            ));
        }
        let groups = attrs.groups.max(1) as u64;
        let pixels = batch as u64 * (output[0] * output[1]) as u64;
        let cout_g = (cout / attrs.groups.max(1)) as u64;
        let grid = |v: u64, t: u32| u32::try_from(v.div_ceil(u64::from(t)).max(1));
        tk.grid = [
            grid(pixels, tile[1]).map_err(|_| nl(k, "grid too large"))?,
            grid(cout_g, tile[0]).map_err(|_| nl(k, "grid too large"))?,
            u32::try_from(groups)
                .ok()
                .filter(|&g| g <= 65535)
                .ok_or_else(|| nl(k, "more than 65535 groups"))?,
        ];
        tk.block = [(tile[0] / 32) * (tile[1] / 32) * 32, 1, 1];
        dims.mma = Some(crate::tile::ConvMma { kind, tile });
        tk.shape = Shape::Conv(dims);
        return Ok(());
    }
    let [bm, bn] = dims.tile;
    let vector = dims.vector;
    let threads = (bm * (bn / vector)).next_multiple_of(32);
    if !bn.is_multiple_of(vector) || threads > 1024 {
        return Err(nl(
            k,
            format!("a convolution tile of ({bm}, {bn}) with vector {vector} (at most 1024 threads, vector dividing BN)"),
        ));
    }
    let tiles = ceil(output[0] as u64, u64::from(bm)) * ceil(output[1] as u64, u64::from(bn));
    tk.block = [threads, 1, 1];
    tk.grid = [
        u32::try_from(tiles).map_err(|_| nl(k, "grid too large"))?,
        planes.min(65535) as u32,
        u32::try_from(planes.div_ceil(65535)).map_err(|_| nl(k, "grid too large"))?,
    ];
    tk.shape = Shape::Conv(dims);
    Ok(())
}

/// The row kernels' name for a reduction.
fn row_op(r: crate::graph::ReduceOp) -> RowOp {
    use crate::graph::ReduceOp as Ro;
    match r {
        Ro::Sum => RowOp::Sum,
        Ro::Mean => RowOp::Mean,
        Ro::Max => RowOp::Max,
        Ro::Min => RowOp::Min,
    }
}

/// A reduction of `shape` over `axis` (not the last) as the middle-axis kernel of
/// `[outer, len, inner]`.
fn middle_axis(
    k: &Kernel,
    ro: RowOp,
    shape: &[usize],
    axis: usize,
    tk: &mut TileKernel,
) -> Result<(), NotLowered> {
    let outer: u64 = shape[..axis].iter().map(|&d| d as u64).product();
    let len = shape.get(axis).map(|&d| d as u64).unwrap_or(1);
    let inner: u64 = shape.iter().skip(axis + 1).map(|&d| d as u64).product();
    if outer * len * inner == 0 || outer * len * inner > u64::from(u32::MAX) {
        return Err(nl(k, "an empty or too large (>2^32 elements) reduction"));
    }
    super::reduce_axis::tile(k, ro, outer, len, inner, tk)
}
