//! A direct convolution (`conv1d`/`conv2d`, any groups; a depthwise one is its common case)
//! as Tile IR: a block per `(BM, BN)` tile of one output plane (grid x: the plane's tiles, grid
//! y (then z): image × output channel), each thread `vector` adjacent outputs of one row. Each
//! output is summed over its group's input channels (a loop), the kernel rows (a loop) and the
//! kernel columns (unrolled up to 8), reading the input from global memory with the padding
//! masked to zero and the tap's weight once per step for all of the thread's outputs.
//! In fp32 (fp64 when an operand or the result is fp64). 1-d convolutions run as 2-d with
//! height 1. Parameters: x, w, (bias), out.

use super::blocks::{fconst, load_elem, store_int_or};
use super::{ParamSet, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, Cmp, Dim, SReg, Ty};
use crate::tile::build::{imm, Builder};
use crate::tile::ir::{Kernel, Operand, Value};
use crate::tile::{ConvDims, TileKernel};

/// Kernel columns up to this are unrolled.
const UNROLL_COLS: u32 = 8;

/// The Tile IR of a [`crate::tile::Shape::Conv`] kernel.
pub fn build(g: &Graph, tk: &TileKernel, d: &ConvDims) -> R<Kernel> {
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let names: &[&str] = if d.bias {
        &["x", "w", "bias"]
    } else {
        &["x", "w"]
    };
    let p = ParamSet::new(&mut b, g, tk, names, "out")?;
    let mut dts = p.dtypes.clone();
    dts.push(p.out_dtype);
    let ty = if dts.contains(&DType::F64) {
        Ty::F64
    } else {
        Ty::F32
    };
    let ([ih, iw], [kh, kw], [oh, ow]) = (d.input, d.kernel, d.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (d.stride, d.dilation, d.pad);
    let ([bm, bn], vec) = (d.tile, d.vector.max(1));
    let (cin_g, cout_g) = (d.cin / d.groups.max(1), d.cout / d.groups.max(1));
    let i64_ = |v: u32| imm(i64::from(v));

    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    // this block's plane: grid y, continued on z; the last z row's extra blocks redo the last
    let y = b.special(SReg::Ctaid(Dim::Y));
    let plane = if tk.grid[2] > 1 {
        let z = b.special(SReg::Ctaid(Dim::Z));
        let pl = b.fma(Ty::U32, z, i64_(tk.grid[1]), y);
        b.bin(BinOp::Min, Ty::U32, pl, i64_(d.planes.saturating_sub(1)))
    } else {
        y
    };
    let n = b.bin(BinOp::Div, Ty::U32, plane, i64_(d.cout));
    let oc = b.bin(BinOp::Rem, Ty::U32, plane, i64_(d.cout));
    let grp = b.bin(BinOp::Div, Ty::U32, oc, i64_(cout_g.max(1)));
    // the tile and this thread's outputs in it
    let tiles_w = ow.div_ceil(bn);
    let th = b.bin(BinOp::Div, Ty::U32, bx, i64_(tiles_w));
    let tw = b.bin(BinOp::Rem, Ty::U32, bx, i64_(tiles_w));
    let per_row = bn / vec;
    let r = b.bin(BinOp::Div, Ty::U32, tid, i64_(per_row));
    let q = b.bin(BinOp::Rem, Ty::U32, tid, i64_(per_row));
    let orow = b.fma(Ty::U32, th, i64_(bm), r);
    let q0 = b.mul(Ty::U32, q, i64_(vec));
    let ocol0 = b.fma(Ty::U32, tw, i64_(bn), q0);
    // threads past the tile (a block is whole warps) compute nothing
    let row_ok = b.cmp(Cmp::Lt, Ty::U32, orow, i64_(oh));
    let in_tile = b.cmp(Cmp::Lt, Ty::U32, tid, i64_(bm * per_row));
    let row_ok = b.bin(BinOp::And, Ty::Pred, row_ok, in_tile);
    let cols: Vec<Value> = (0..vec).map(|v| b.add(Ty::U32, ocol0, i64_(v))).collect();
    let col_ok: Vec<Value> = cols
        .iter()
        .map(|&c| b.cmp(Cmp::Lt, Ty::U32, c, i64_(ow)))
        .collect();
    // the input column each output reads at kernel column 0: ow·sw − pw (wrapping; masked)
    let col_in0: Vec<Value> = cols
        .iter()
        .map(|&c| {
            let t = b.mul(Ty::U32, c, i64_(sw));
            b.sub(Ty::U32, t, i64_(pw))
        })
        .collect();
    let row_in0 = {
        let t = b.mul(Ty::U32, orow, i64_(sh));
        b.sub(Ty::U32, t, i64_(ph))
    };
    // first input element of this image's group, first weight of this output channel
    let xfirst = {
        let t = b.mul(Ty::U32, n, i64_(d.cin));
        let t = b.fma(Ty::U32, grp, i64_(cin_g), t);
        b.mul(Ty::U32, t, i64_(ih * iw))
    };
    let wfirst = b.mul(Ty::U32, oc, i64_(cin_g * kh * kw));
    let (xp, wp) = (p.inputs[0], p.inputs[1]);
    let (xd, wd) = (p.dtypes[0], p.dtypes[1]);
    let zero: Vec<Value> = (0..vec).map(|_| b.mov(ty, fconst(ty, 0.0))).collect();
    let acc = b.for_rolled(imm(0), i64_(cin_g), imm(1), &zero, |b, c, acc| {
        let xc = b.fma(Ty::U32, c, i64_(ih * iw), xfirst);
        let wc = b.fma(Ty::U32, c, i64_(kh * kw), wfirst);
        b.for_(imm(0), i64_(kh), imm(1), acc, None, |b, i, acc| {
            let irow = b.fma(Ty::U32, i, i64_(dh), row_in0);
            let in_row = b.cmp(Cmp::Lt, Ty::U32, irow, i64_(ih));
            let in_row = b.bin(BinOp::And, Ty::Pred, in_row, row_ok);
            let xrow = b.fma(Ty::U32, irow, i64_(iw), xc);
            let wrow = b.fma(Ty::U32, i, i64_(kw), wc);
            // one kernel column: the tap's weight times each output's input
            let tap = |b: &mut Builder, j: Operand, acc: &[Value]| -> Vec<Value> {
                let wi = b.add(Ty::U32, wrow, j);
                let wv = load_elem(b, ty, wd, wp, wi, None);
                let joff = b.mul(Ty::U32, j, i64_(dw));
                (0..vec as usize)
                    .map(|v| {
                        let icol = b.add(Ty::U32, col_in0[v], joff);
                        let ok = b.cmp(Cmp::Lt, Ty::U32, icol, i64_(iw));
                        let ok = b.bin(BinOp::And, Ty::Pred, ok, in_row);
                        let ok = b.bin(BinOp::And, Ty::Pred, ok, col_ok[v]);
                        let xi = b.add(Ty::U32, xrow, icol);
                        let xv = load_elem(b, ty, xd, xp, xi, Some(ok));
                        b.fma(ty, xv, wv, acc[v])
                    })
                    .collect()
            };
            let out = if kw <= UNROLL_COLS {
                let mut acc = acc.to_vec();
                for j in 0..kw {
                    acc = tap(b, i64_(j), &acc);
                }
                acc
            } else {
                b.for_(imm(0), i64_(kw), imm(1), acc, None, |b, j, acc| {
                    tap(b, j.into(), acc)
                        .into_iter()
                        .map(Operand::from)
                        .collect()
                })
            };
            out.into_iter().map(Operand::from).collect()
        })
        .into_iter()
        .map(Operand::from)
        .collect()
    });
    let bias = if d.bias {
        let bv = load_elem(&mut b, ty, p.dtypes[2], p.inputs[2], oc, None);
        Some(bv)
    } else {
        None
    };
    let obase = {
        let t = b.mul(Ty::U32, plane, i64_(oh * ow));
        b.fma(Ty::U32, orow, i64_(ow), t)
    };
    for v in 0..vec as usize {
        let val = match bias {
            Some(bv) => b.add(ty, acc[v], bv),
            None => acc[v],
        };
        let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok[v]);
        let idx = b.add(Ty::U32, obase, cols[v]);
        store_int_or(&mut b, ty, p.out_dtype, p.out, idx, val, Some(ok));
    }
    Ok(b.finish())
}
