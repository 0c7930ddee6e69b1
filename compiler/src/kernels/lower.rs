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
mod conv;
mod matmul;

use conv::{conv_tile, spectral_tile};
use matmul::matmul_tile;

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
        shape: Shape::Elementwise {
            n: 0,
            vector: 1,
            tile: None,
        },
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
    let (grid, tile) = grid_of(k, n, s.vector)?;
    tk.grid = [grid, 1, 1];
    tk.shape = Shape::Elementwise {
        n,
        vector: s.vector,
        tile,
    };
    Ok(())
}

/// The grid of a kernel without a reduction dimension over `n` output elements, `vector` per
/// thread, and its 2-D tile when the schedule has one (BK 0): (BM, BN, C), one BM×BN tile of
/// the output as rows of its last dim C per block ([`super::blocks::tile_2d`]).
pub(super) fn grid_of(
    k: &Kernel,
    n: u64,
    vector: u32,
) -> Result<(u32, Option<[u32; 3]>), NotLowered> {
    let s = &k.schedule;
    let (grid, tile) = if s.tile[2] == 0 {
        let cols = k.ty.shape.last().map_or(1, |&c| c as u64).max(1);
        let [bm, bn] = [u64::from(s.tile[0].max(1)), u64::from(s.tile[1].max(1))];
        let tile = [s.tile[0], s.tile[1], u32_of(k, cols as usize)?];
        (ceil(cols, bn) * ceil(n / cols, bm), Some(tile))
    } else {
        (ceil(n, u64::from((s.threads * vector.max(1)).max(1))), None)
    };
    let grid = u32::try_from(grid).map_err(|_| nl(k, "grid too large"))?;
    Ok((grid, tile))
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
    let (grid, tile) = grid_of(k, total, 1)?;
    tk.grid = [grid, 1, 1];
    tk.shape = Shape::Take {
        outer: outer as u32,
        n: n as u32,
        k: kk as u32,
        inner: inner as u32,
        scatter,
        tile,
    };
    Ok(())
}

/// The longest FFT line one block transforms: the line and its twiddles in 48 KiB of static
/// shared memory (c64: 4096; c128: 2048).
pub const FFT_MAX_LINE: [usize; 2] = [4096, 2048];

/// The longest line of a length that is not a power of two (transformed by the direct
/// `O(n²)` sum).
pub const FFT_MAX_DIRECT: usize = 1024;

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
