//! Row kernels over the last axis: softmax and logsumexp, layernorm, rmsnorm and the
//! sum/mean/max/min reductions. One warp per row (lane-strided loops, butterfly all-reduces
//! across the warp), or for few long rows one block per row (thread-strided loops,
//! `tile.reduce_block`; see `tile::row_block`); loads are coalesced either way. fp32
//! accumulation, or fp64 when every tensor is fp64.
//!
//! Parameters: x, [weight], [bias], y, rows, cols.

use super::blocks::{
    compute_ty, fconst, lane_loop, load_as, load_elem, store_elem, store_int_or, warp_row,
};
use super::{no, ParamSet, R};
use crate::graph::{DType, Graph, RowOut};
use crate::scalar::{BinOp, Cmp, Dim, Rnd, SReg, Ty, UnOp};
use crate::tile::build::{fimm, imm, Builder};
use crate::tile::ir::{Kernel, Layout, MathFn, Operand, ParamRole, SharedBuf, Type, Value};
use crate::tile::{RowOp, TileKernel};

const LOG2E: f64 = std::f64::consts::LOG2_E;

/// Whether a row kernel runs in fp64: when its input `x` is fp64, as the cpu computes in x's
/// dtype (fp32 for narrower floats, integers and bool); the other operands (weight, bias) are
/// converted to it, whatever dtype they have.
fn row_f64(x: DType, out: DType, ds: &[DType]) -> R<bool> {
    let float = |d: DType| {
        matches!(
            d,
            DType::F64
                | DType::F32
                | DType::TF32
                | DType::BF16
                | DType::F16
                | DType::F8E4M3
                | DType::F8E5M2
                | DType::I32
                | DType::I64
                | DType::I8
                | DType::Bool
        )
    };
    if ds.iter().all(|&d| float(d)) && (x == DType::F64) == (out == DType::F64) {
        Ok(x == DType::F64)
    } else {
        no("row kernels of non-float tensors")
    }
}

/// `e^(v − m)`: in f32 `ex2.approx(v·log2 e + mb)` with `mb = −m·log2 e`; in f64 `exp(v − m)`.
fn exp_shifted(b: &mut Builder, ty: Ty, v: Value, m: Value, mb: Value) -> Value {
    if ty == Ty::F64 {
        let d = b.sub(Ty::F64, v, m);
        b.math(MathFn::Exp, Ty::F64, &[d.into()])
    } else {
        let t = b.fma(Ty::F32, v, fimm(LOG2E as f32), mb);
        b.unary(UnOp::Ex2Approx, Ty::F32, t)
    }
}

/// The rows kernel's setup: parameters, the thread's row and the in-range test.
struct Rows {
    b: Builder,
    p: ParamSet,
    rows: Value,
    cols: Value,
    /// The thread's place in its row's threads, the row, and how the row's threads share it.
    lane: Value,
    row: Value,
    map: RowMap,
    ty: Ty,
}

/// How a row's columns are shared: by the 32 lanes of a warp, or (`scratch`: the
/// `tile.reduce_block` buffer) by every thread of a block.
#[derive(Copy, Clone)]
struct RowMap {
    stride: i64,
    scratch: Option<Value>,
}

impl RowMap {
    /// `for j = lane; j < n; j += stride` carrying `init`.
    fn each(
        self,
        b: &mut Builder,
        lane: Value,
        n: Value,
        init: &[Value],
        body: impl FnOnce(&mut Builder, Value, &[Value]) -> Vec<Operand>,
    ) -> Vec<Value> {
        if self.stride == 32 {
            lane_loop(b, lane, n, init, body)
        } else {
            b.for_(lane, n, imm(self.stride), init, None, body)
        }
    }
    /// The all-reduce of `v` over the row's threads.
    fn reduce(self, b: &mut Builder, op: BinOp, ty: Ty, v: Value) -> Value {
        match self.scratch {
            Some(s) => b.reduce_block(op, ty, v, s),
            None => b.reduce_warp(op, ty, v),
        }
    }
}

fn setup(
    g: &Graph,
    tk: &TileKernel,
    [rows, cols]: [u32; 2],
    row_block: bool,
    extra: &[&str],
) -> R<Rows> {
    setup_as(g, tk, [rows, cols], row_block, extra, None)
}

/// [`setup`] with the compute type given (`None`: from the dtypes).
fn setup_as(
    g: &Graph,
    tk: &TileKernel,
    [rows, cols]: [u32; 2],
    row_block: bool,
    extra: &[&str],
    ty: Option<Ty>,
) -> R<Rows> {
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let p = ParamSet::new(&mut b, g, tk, &[&["x"], extra].concat(), "y")?;
    let rows_v = b.param("rows", Type::Scalar(Ty::U32), ParamRole::Size(rows));
    let cols_v = b.param("cols", Type::Scalar(Ty::U32), ParamRole::Size(cols));
    let mut all = p.dtypes.clone();
    all.push(p.out_dtype);
    let ty = match ty {
        Some(t) => t,
        None => compute_ty(row_f64(p.dtypes[0], p.out_dtype, &all)?),
    };
    let (lane, row, map) = if row_block {
        let threads = tk.block[0];
        let warps = threads.div_ceil(32);
        let scratch = b.shared(
            "smem_red",
            SharedBuf {
                elem_bytes: ty.bits() / 8,
                shape: vec![1, 1, warps],
                layout: Layout {
                    pitch: warps * ty.bits() / 8,
                    swizzle: None,
                },
                align: 8,
            },
        );
        let tid = b.special(SReg::Tid(Dim::X));
        let row = b.special(SReg::Ctaid(Dim::X));
        let map = RowMap {
            stride: i64::from(threads),
            scratch: Some(scratch),
        };
        (tid, row, map)
    } else {
        let (lane, row) = warp_row(&mut b);
        let map = RowMap {
            stride: 32,
            scratch: None,
        };
        (lane, row, map)
    };
    Ok(Rows {
        b,
        p,
        rows: rows_v,
        cols: cols_v,
        lane,
        row,
        map,
        ty,
    })
}

/// A row function of `rows × cols` ([`RowOut`]): the row max `m`, the sum `s` of `e^(x − m)`,
/// then each `e^(x − m) / s` (softmax), or one `log s + m` per row (logsumexp, with `m` taken
/// as 0 where it is ±inf; the row's first thread stores it).
pub fn exp_rows(
    g: &Graph,
    tk: &TileKernel,
    out: RowOut,
    rows: u32,
    cols: u32,
    row_block: bool,
) -> R<Kernel> {
    let Rows {
        mut b,
        p,
        rows: rows_v,
        cols: cols_v,
        lane,
        row,
        map,
        ty,
    } = setup(g, tk, [rows, cols], row_block, &[])?;
    let (x, xd, y, yd) = (p.inputs[0], p.dtypes[0], p.out, p.out_dtype);
    let inr = b.cmp(Cmp::Lt, Ty::U32, row, rows_v);
    b.when(inr, |b| {
        let rowbase = b.mul(Ty::U32, row, cols_v);
        let m0 = b.mov(ty, fconst(ty, f64::NEG_INFINITY));
        let m = map.each(b, lane, cols_v, &[m0], |b, j, c| {
            let i = b.add(Ty::U32, rowbase, j);
            let v = load_elem(b, ty, xd, x, i, None);
            vec![b.bin(BinOp::Max, ty, c[0], v).into()]
        })[0];
        let m = map.reduce(b, BinOp::Max, ty, m);
        let m = match out {
            RowOut::Normalized => m,
            RowOut::LogSum => {
                let a = b.unary(UnOp::Abs, ty, m);
                let inf = b.cmp(Cmp::Eq, ty, a, fconst(ty, f64::INFINITY));
                b.select(ty, inf, fconst(ty, 0.0), m)
            }
        };
        let mb = b.mul(ty, m, fconst(ty, -LOG2E));
        let s0 = b.mov(ty, fconst(ty, 0.0));
        let s = map.each(b, lane, cols_v, &[s0], |b, j, c| {
            let i = b.add(Ty::U32, rowbase, j);
            let v = load_elem(b, ty, xd, x, i, None);
            let e = exp_shifted(b, ty, v, m, mb);
            vec![b.add(ty, c[0], e).into()]
        })[0];
        let s = map.reduce(b, BinOp::Add, ty, s);
        match out {
            RowOut::Normalized => {
                let inv = b.unary(UnOp::Rcp, ty, s);
                map.each(b, lane, cols_v, &[], |b, j, _| {
                    let i = b.add(Ty::U32, rowbase, j);
                    let v = load_elem(b, ty, xd, x, i, None);
                    let e = exp_shifted(b, ty, v, m, mb);
                    let r = b.mul(ty, e, inv);
                    store_elem(b, yd, y, i, r, None);
                    vec![]
                });
            }
            RowOut::LogSum => {
                let l = b.math(MathFn::Log, ty, &[s.into()]);
                let r = b.add(ty, l, m);
                let first = b.cmp(Cmp::Eq, Ty::U32, lane, imm(0));
                b.when(first, |b| store_elem(b, yd, y, row, r, None));
            }
        }
    });
    Ok(b.finish())
}

/// A normalisation or reduction of `rows × cols` over the last axis.
pub fn rows(
    g: &Graph,
    tk: &TileKernel,
    op: RowOp,
    rows: u32,
    cols: u32,
    row_block: bool,
) -> R<Kernel> {
    let (has_w, has_b) = match op {
        RowOp::LayerNorm { weight, bias, .. } => (weight, bias),
        RowOp::RmsNorm { weight, .. } => (weight, false),
        _ => (false, false),
    };
    if let (RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min, Some(xt)) =
        (op, tk.inputs.first().and_then(|&v| g.ty(v)))
    {
        if matches!(xt.dtype, DType::I32 | DType::I64 | DType::I8 | DType::Bool) {
            return int_reduce(g, tk, op, [rows, cols], row_block);
        }
    }
    let mut extra = vec![];
    if has_w {
        extra.push("weight");
    }
    if has_b {
        extra.push("bias");
    }
    let Rows {
        mut b,
        p,
        rows: rows_v,
        cols: cols_v,
        lane,
        row,
        map,
        ty,
    } = setup(g, tk, [rows, cols], row_block, &extra)?;
    let (x, xd, y, yd) = (p.inputs[0], p.dtypes[0], p.out, p.out_dtype);
    let w = has_w.then(|| (p.inputs[1], p.dtypes[1]));
    let bias = has_b.then(|| {
        let i = if has_w { 2 } else { 1 };
        (p.inputs[i], p.dtypes[i])
    });
    let inr = b.cmp(Cmp::Lt, Ty::U32, row, rows_v);
    b.when(inr, |b| {
        let rowbase = b.mul(Ty::U32, row, cols_v);
        let colsf = b.cast(ty, Ty::U32, Some(Rnd::Rn), cols_v);
        let (init_v, fold) = match op {
            RowOp::Max => (f64::NEG_INFINITY, BinOp::Max),
            RowOp::Min => (f64::INFINITY, BinOp::Min),
            _ => (0.0, BinOp::Add),
        };
        let a0 = b.mov(ty, fconst(ty, init_v));
        let square = matches!(op, RowOp::RmsNorm { .. });
        let acc = map.each(b, lane, cols_v, &[a0], |b, j, c| {
            let i = b.add(Ty::U32, rowbase, j);
            let v = load_elem(b, ty, xd, x, i, None);
            let next = if square {
                b.fma(ty, v, v, c[0])
            } else {
                b.bin(fold, ty, c[0], v)
            };
            vec![next.into()]
        })[0];
        let acc = map.reduce(b, fold, ty, acc);
        match op {
            RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => {
                let r = if op == RowOp::Mean {
                    b.bin(BinOp::Div, ty, acc, colsf)
                } else {
                    acc
                };
                let first = b.cmp(Cmp::Eq, Ty::U32, lane, imm(0));
                store_elem(b, yd, y, row, r, Some(first));
            }
            RowOp::LayerNorm { eps, .. } | RowOp::RmsNorm { eps, .. } => {
                let (mean, ms) = if let RowOp::LayerNorm { .. } = op {
                    let mean = b.bin(BinOp::Div, ty, acc, colsf);
                    let v0 = b.mov(ty, fconst(ty, 0.0));
                    let var = map.each(b, lane, cols_v, &[v0], |b, j, c| {
                        let i = b.add(Ty::U32, rowbase, j);
                        let v = load_elem(b, ty, xd, x, i, None);
                        let d = b.sub(ty, v, mean);
                        vec![b.fma(ty, d, d, c[0]).into()]
                    })[0];
                    (Some(mean), map.reduce(b, BinOp::Add, ty, var))
                } else {
                    (None, acc)
                };
                let ms = b.bin(BinOp::Div, ty, ms, colsf);
                let ms = b.add(ty, ms, fconst(ty, eps));
                let sd = b.unary(UnOp::Sqrt, ty, ms);
                let rstd = b.unary(UnOp::Rcp, ty, sd);
                map.each(b, lane, cols_v, &[], |b, j, _| {
                    let i = b.add(Ty::U32, rowbase, j);
                    let v = load_elem(b, ty, xd, x, i, None);
                    let c = match mean {
                        Some(m) => b.sub(ty, v, m),
                        None => v,
                    };
                    let mut r = b.mul(ty, c, rstd);
                    if let Some((wp, wd)) = w {
                        let wv = load_elem(b, ty, wd, wp, j, None);
                        r = b.mul(ty, r, wv);
                    }
                    if let Some((bp, bd)) = bias {
                        let bv = load_elem(b, ty, bd, bp, j, None);
                        r = b.add(ty, r, bv);
                    }
                    store_elem(b, yd, y, i, r, None);
                    vec![]
                });
            }
        }
    });
    Ok(b.finish())
}

/// A reduction of integer rows, as the cpu: `sum` in int64 (wrapping), `max`/`min` in int64
/// stored in the input's dtype, `mean` as an fp64 sum divided in fp64 and rounded to fp32.
fn int_reduce(
    g: &Graph,
    tk: &TileKernel,
    op: RowOp,
    [rows, cols]: [u32; 2],
    row_block: bool,
) -> R<Kernel> {
    let ty = if op == RowOp::Mean { Ty::F64 } else { Ty::S64 };
    let Rows {
        mut b,
        p,
        rows: rows_v,
        cols: cols_v,
        lane,
        row,
        map,
        ..
    } = setup_as(g, tk, [rows, cols], row_block, &[], Some(ty))?;
    let (x, xd, y, yd) = (p.inputs[0], p.dtypes[0], p.out, p.out_dtype);
    let (init, fold) = match op {
        RowOp::Max => (i64::MIN, BinOp::Max),
        RowOp::Min => (i64::MAX, BinOp::Min),
        _ => (0, BinOp::Add),
    };
    let inr = b.cmp(Cmp::Lt, Ty::U32, row, rows_v);
    b.when(inr, |b| {
        let rowbase = b.mul(Ty::U32, row, cols_v);
        let a0 = if ty == Ty::F64 {
            b.mov(ty, fconst(ty, 0.0))
        } else {
            b.mov(ty, imm(init))
        };
        let acc = map.each(b, lane, cols_v, &[a0], |b, j, c| {
            let i = b.add(Ty::U32, rowbase, j);
            let v = load_as(b, ty, xd, x, i, None);
            vec![b.bin(fold, ty, c[0], v).into()]
        })[0];
        let acc = map.reduce(b, fold, ty, acc);
        let r = if op == RowOp::Mean {
            let n = b.cast(ty, Ty::U32, Some(Rnd::Rn), cols_v);
            b.bin(BinOp::Div, ty, acc, n)
        } else {
            acc
        };
        let first = b.cmp(Cmp::Eq, Ty::U32, lane, imm(0));
        store_int_or(b, ty, yd, y, row, r, Some(first));
    });
    Ok(b.finish())
}
