//! Kernels over an axis that is not the last: the input is `[outer, len, inner]` and the
//! reduction or row function (softmax, logsumexp) runs along `len`.
//!
//! A block of 256 threads takes 32 consecutive columns of one `outer` index: lane ↔ column
//! (a warp's loads are 32 consecutive elements: coalesced), warp `w` of 8 folds rows
//! `w, w + 8, w + 16, …`, then the 8 partials are folded from shared memory in warp order.
//! The order is fixed, so results are deterministic. Grid: `outer · ceil(inner / 32)` blocks.
//!
//! - `sum mean max min` (`[outer, inner]` out): warp 0 folds the partials and stores.
//! - `softmax` (same shape out): every thread folds the partials of the column max, then of
//!   the sum of `e^(x − max)`, and writes its rows of `e^(x − max) / sum`; `logsumexp`
//!   (`[outer, inner]` out) folds the same and warp 0 stores `log(sum) + max`.
//!
//! Accumulation in fp32, or fp64 when input and output are fp64. Integer inputs (reductions
//! only), as the cpu: `sum` in int64 (wrapping), `max`/`min` in int64 stored in the input's
//! dtype, `mean` as an fp64 sum divided in fp64 and rounded to fp32. Parameters: x, y, len,
//! inner.
//!
//! A fused reduction (`fused_reduce`) folds an elementwise body evaluated per element on its
//! inputs (each read at the element's index, broadcast ones through their index map) and
//! writes the body's further outputs at that element as it goes; parameters: in0, …, y,
//! out1, …, len, inner.

use super::blocks::{compute_ty, divmod, fconst, load_as, load_elem, store_elem, store_int_or};
use super::elementwise::{eval_body, index_val, load_val, needs_status, store_val};
use super::values::{conv, Val};
use super::{no, ParamSet, R};
use crate::graph::{DType, Graph, Op, RowOut};
use crate::kernels::index::{index_of, Index};
use crate::kernels::reduce_axis::{COLS, SLICES};
use crate::scalar::{BinOp, Cmp, Dim, Rnd, SReg, Ty, UnOp};
use crate::tile::build::{imm, Builder};
use crate::tile::ir::{Kernel, Layout, MathFn, ParamRole, SharedBuf, Type, Value};
use crate::tile::{RowOp, TileKernel};

/// What runs along the axis.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum AxisOp {
    Reduce(RowOp),
    /// A row function: the max and the sum of `e^(x − max)`, then what [`RowOut`] says.
    Exp(RowOut),
}

/// Where the folded values come from: the input tensor, or (a fused reduction) an elementwise
/// body evaluated per element on its inputs, its further outputs written out as it goes.
enum Src<'a> {
    View,
    Body {
        body: &'a Graph,
        ins: Vec<(Value, DType, Index)>,
        outs: Vec<(Value, DType)>,
    },
}

struct Cx<'a> {
    src: Src<'a>,
    x: Value,
    xd: DType,
    ty: Ty,
    eb: i64,
    warp: Value,
    lane: Value,
    tid: Value,
    base: Value,
    orow: Value,
    col: Value,
    col_ok: Value,
    len: Value,
    inner: Value,
}

impl Cx<'_> {
    /// Element `idx` (masked by `col_ok`) as a value of the computation type.
    fn element(&self, b: &mut Builder, idx: Value) -> R<Value> {
        let Src::Body { body, ins, outs } = &self.src else {
            return Ok(load_as(b, self.ty, self.xd, self.x, idx, Some(self.col_ok)));
        };
        let mut params = vec![];
        for &(p, d, ix) in ins {
            let j = index_val(b, ix, idx);
            params.push(load_val(b, d, p, j, Some(self.col_ok))?);
        }
        let mut err = None;
        let vals = eval_body(b, body, &params, &mut err)?;
        if err.is_some() {
            return no("a fused body that can fail");
        }
        for (&(view, d), v) in outs.iter().zip(vals.iter().skip(1)) {
            store_val(b, d, view, idx, *v, Some(self.col_ok))?;
        }
        let want = if self.ty == Ty::F64 {
            DType::F64
        } else {
            DType::F32
        };
        match vals.first().map(|v| conv(b, *v, want)).transpose()? {
            Some(Val::F(x) | Val::D(x)) => Ok(x),
            _ => no("a fused body of non-float values"),
        }
    }

    /// Folds `f(x)` over this warp's rows of the column with `fold`, from `init`.
    fn rows(
        &self,
        b: &mut Builder,
        init: crate::tile::ir::Operand,
        fold: BinOp,
        f: impl Fn(&mut Builder, Value) -> Value,
    ) -> R<Value> {
        let a0 = b.mov(self.ty, init);
        let mut res = Ok(());
        let v = b.for_(
            self.warp,
            self.len,
            imm(i64::from(SLICES)),
            &[a0],
            None,
            |b, r, c| {
                let row = b.add(Ty::U32, self.orow, r);
                let idx = b.fma(Ty::U32, row, self.inner, self.col);
                let v = match self.element(b, idx) {
                    Ok(v) => v,
                    Err(e) => {
                        res = Err(e);
                        return vec![c[0].into()];
                    }
                };
                let v = f(b, v);
                vec![b.bin(fold, self.ty, c[0], v).into()]
            },
        )[0];
        res.map(|()| v)
    }

    /// Stores this thread's partial, waits for the block, and folds the column's 8 partials
    /// in warp order (from the lane's slot).
    fn combine(&self, b: &mut Builder, part: Value, fold: BinOp) -> Value {
        let slot = b.fma(Ty::U32, self.tid, imm(self.eb), self.base);
        b.store_shared(self.ty, slot, 0, &[part.into()], None);
        b.barrier();
        let lslot = b.fma(Ty::U32, self.lane, imm(self.eb), self.base);
        let mut total = b.load_shared(self.ty, lslot, 0, 1)[0];
        for w in 1..SLICES as i32 {
            let off = w * COLS as i32 * self.eb as i32;
            let p = b.load_shared(self.ty, lslot, off, 1)[0];
            total = b.bin(fold, self.ty, total, p);
        }
        total
    }
}

/// The kernel of `op` along the middle axis of `[outer, len, inner]`.
pub fn build(g: &Graph, tk: &TileKernel, op: AxisOp, len: u32, inner: u32) -> R<Kernel> {
    let (init, fold) = match op {
        AxisOp::Reduce(RowOp::Max) => (f64::NEG_INFINITY, BinOp::Max),
        AxisOp::Reduce(RowOp::Min) => (f64::INFINITY, BinOp::Min),
        AxisOp::Reduce(RowOp::Sum | RowOp::Mean) => (0.0, BinOp::Add),
        AxisOp::Exp(_) => (f64::NEG_INFINITY, BinOp::Max),
        AxisOp::Reduce(other) => return no(format!("{} over an axis", other.name())),
    };
    let threads = COLS * SLICES;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, [threads, 1, 1]);
    let fused = match g.op(tk.root) {
        Some(Op::FusedReduce { body, .. }) => Some(&**body),
        _ => None,
    };
    let (src, x, xd, y, yd) = match fused {
        None => {
            let p = ParamSet::new(&mut b, g, tk, &["x"], "y")?;
            (Src::View, p.inputs[0], p.dtypes[0], p.out, p.out_dtype)
        }
        Some(body) => {
            if needs_status(body) || !matches!(op, AxisOp::Reduce(_)) {
                return no("a fused reduction whose body can fail");
            }
            let Some(xt) = body.outputs.first().and_then(|o| body.ty(*o)) else {
                return no("a fused body without an output");
            };
            let mut ins = vec![];
            for (i, v) in tk.inputs.iter().enumerate() {
                let Some(t) = g.ty(*v) else {
                    return no("type");
                };
                let ix = index_of(&t.shape, &xt.shape)?;
                b.at(g.span(*v));
                let p = b.param(format!("in{i}"), Type::Global(t.dtype), ParamRole::Input);
                ins.push((p, t.dtype, ix));
            }
            b.at(tk.span);
            let y = b.param("y", Type::Global(tk.ty.dtype), ParamRole::Output);
            let mut outs = vec![];
            for (i, o) in body.outputs.iter().enumerate().skip(1) {
                let Some(t) = body.ty(*o) else {
                    return no("type");
                };
                outs.push((
                    b.param(format!("out{i}"), Type::Global(t.dtype), ParamRole::Output),
                    t.dtype,
                ));
            }
            let x = ins.first().map_or(y, |i| i.0);
            (Src::Body { body, ins, outs }, x, xt.dtype, y, tk.ty.dtype)
        }
    };
    let int = matches!(xd, DType::I32 | DType::I64 | DType::I8 | DType::Bool);
    let ty = match (xd, yd, op) {
        (DType::F64, DType::F64, _) => Ty::F64,
        (a, c, _) if a.is_float() && c.is_float() && a != DType::F64 && c != DType::F64 => {
            compute_ty(false)
        }
        (_, DType::F32, AxisOp::Reduce(RowOp::Mean)) if int => Ty::F64,
        (_, DType::I32 | DType::I64 | DType::I8 | DType::Bool, AxisOp::Reduce(_)) if int => Ty::S64,
        (a, c, _) => return no(format!("{a} → {c} reductions over an axis")),
    };
    let eb: i64 = if matches!(ty, Ty::F64 | Ty::S64) {
        8
    } else {
        4
    };
    let init_of = |v: f64| -> crate::tile::ir::Operand {
        if ty == Ty::S64 {
            imm(if v == f64::NEG_INFINITY {
                i64::MIN
            } else if v == f64::INFINITY {
                i64::MAX
            } else {
                0
            })
        } else {
            fconst(ty, v)
        }
    };
    let len_v = b.param("len", Type::Scalar(Ty::U32), ParamRole::Size(len));
    let inner_v = b.param("inner", Type::Scalar(Ty::U32), ParamRole::Size(inner));
    let smem = b.shared(
        "smem_part",
        SharedBuf {
            elem_bytes: eb as u32,
            shape: vec![1, SLICES, COLS],
            layout: Layout {
                pitch: COLS * eb as u32,
                swizzle: None,
            },
            align: 16,
        },
    );
    let tid = b.special(SReg::Tid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let (o, t) = divmod(&mut b, ctaid, inner.div_ceil(COLS));
    let col = b.fma(Ty::U32, t, imm(i64::from(COLS)), lane);
    let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, inner_v);
    // element (o, r, col) is at (o·len + r)·inner + col
    let orow = b.mul(Ty::U32, o, len_v);
    let base = b.shared_addr(smem);
    let cx = Cx {
        src,
        x,
        xd,
        ty,
        eb,
        warp,
        lane,
        tid,
        base,
        orow,
        col,
        col_ok,
        len: len_v,
        inner: inner_v,
    };
    match op {
        AxisOp::Reduce(r) => {
            let part = cx.rows(&mut b, init_of(init), fold, |_, v| v)?;
            let slot = b.fma(Ty::U32, tid, imm(eb), base);
            b.store_shared(ty, slot, 0, &[part.into()], None);
            b.barrier();
            let first = b.cmp(Cmp::Eq, Ty::U32, warp, imm(0));
            b.when(first, |b| {
                let lslot = b.fma(Ty::U32, lane, imm(eb), base);
                let mut total = b.load_shared(ty, lslot, 0, 1)[0];
                for w in 1..SLICES as i32 {
                    let p = b.load_shared(ty, lslot, w * COLS as i32 * eb as i32, 1)[0];
                    total = b.bin(fold, ty, total, p);
                }
                let res = if r == RowOp::Mean {
                    let n = b.cast(ty, Ty::U32, Some(Rnd::Rn), len_v);
                    b.bin(BinOp::Div, ty, total, n)
                } else {
                    total
                };
                let out = b.fma(Ty::U32, o, inner_v, col);
                store_int_or(b, ty, yd, y, out, res, Some(col_ok));
            });
        }
        AxisOp::Exp(out) => {
            let part = cx.rows(&mut b, init_of(init), fold, |_, v| v)?;
            let m = cx.combine(&mut b, part, BinOp::Max);
            let m = match out {
                RowOut::Normalized => m,
                // logsumexp: a max of ±inf is taken as 0 (all -inf gives -inf, +inf gives +inf)
                RowOut::LogSum => {
                    let a = b.unary(UnOp::Abs, ty, m);
                    let inf = b.cmp(Cmp::Eq, ty, a, fconst(ty, f64::INFINITY));
                    b.select(ty, inf, fconst(ty, 0.0), m)
                }
            };
            // every thread has read the partials before they are overwritten
            b.barrier();
            let exp = |b: &mut Builder, v: Value| {
                let d = b.sub(ty, v, m);
                b.math(MathFn::Exp, ty, &[d.into()])
            };
            let part = cx.rows(&mut b, init_of(0.0), BinOp::Add, exp)?;
            let s = cx.combine(&mut b, part, BinOp::Add);
            match out {
                RowOut::Normalized => {
                    let inv = b.unary(UnOp::Rcp, ty, s);
                    b.for_(warp, len_v, imm(i64::from(SLICES)), &[], None, |b, r, _| {
                        let row = b.add(Ty::U32, orow, r);
                        let idx = b.fma(Ty::U32, row, inner_v, col);
                        let v = load_elem(b, ty, xd, x, idx, Some(col_ok));
                        let e = exp(b, v);
                        let out = b.mul(ty, e, inv);
                        store_elem(b, yd, y, idx, out, Some(col_ok));
                        vec![]
                    });
                }
                RowOut::LogSum => {
                    let l = b.math(MathFn::Log, ty, &[s.into()]);
                    let r = b.add(ty, l, m);
                    let first = b.cmp(Cmp::Eq, Ty::U32, warp, imm(0));
                    b.when(first, |b| {
                        let idx = b.fma(Ty::U32, o, inner_v, col);
                        store_elem(b, yd, y, idx, r, Some(col_ok));
                    });
                }
            }
        }
    }
    Ok(b.finish())
}
