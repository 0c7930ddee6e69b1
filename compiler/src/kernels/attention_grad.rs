//! FlashAttention backward on the FMA units (fp32, or fp64 when an operand is fp64, as the
//! forward kernel): one kernel per operand gradient, each recomputing
//! the attention probabilities tile by tile from the saved row log-sum-exp, so no `sq × sk`
//! matrix exists anywhere (FlashAttention-2's backward, split by output).
//!
//! With `P = exp(scale·Q·Kᵀ − lse)`, `dP = dO·Vᵀ` and `dS = P ∘ (dP − delta)`
//! (`delta_i = Σ_c dO_ic·O_ic`): `dQ = scale·dS·K`, `dK = scale·dSᵀ·Q`, `dV = Pᵀ·dO`.
//! A block of 4 warps takes `bm` rows of the differentiated operand (query rows for `dq`, key
//! rows for `dk`/`dv`; `bm / 4` per warp) and walks the other side in tiles of 32 (lane ↔
//! column) staged through shared memory, as the forward kernel walks keys:
//!
//! | kernel | rows | columns | scores `a·b` | `dp` = `c·d` | accumulates `w·e`  |
//! |--------|------|---------|--------------|--------------|--------------------|
//! | `dq`   | Q    | K       | Q·K          | dO·V         | dS·K               |
//! | `dk`   | K    | Q       | K·Q          | V·dO         | dSᵀ·Q              |
//! | `dv`   | K    | Q       | K·Q          | —            | Pᵀ·dO              |
//!
//! For a causal attention (key `j` seen by query `i ≤ j`… i.e. `j ≤ i`) the `dq` walk stops at
//! the block's last query and the `dk`/`dv` walk starts at the block's first key.
//! Parameters: q, k, v, dout, lse, delta, grad, sq, sk; the batch is grid y.

use super::attention::{
    block_batch, bytes, compute_ty, fbuf, key_end, row_dots, tile_to_shared, weighted_rows, Exp,
};
use super::blocks::{fconst, load_elem, store_int_or};
use super::{no, ParamSet, R};
use crate::graph::{AttnWrt, Graph};
use crate::scalar::{BinOp, Cmp, Dim, SReg, Ty};
use crate::schedule::fit::attention_grad_col_rows;
use crate::tile::build::{imm, Builder};
use crate::tile::ir::{Kernel, Operand, ParamRole, Type, Value};
use crate::tile::TileKernel;

/// The kernel of `wrt`'s gradient of a `[batch, sq, dq]·[batch, sk, dq]ᵀ·[batch, sk, dv]`
/// attention.
#[allow(clippy::too_many_arguments)]
pub fn build(
    g: &Graph,
    tk: &TileKernel,
    wrt: AttnWrt,
    sq: u32,
    sk: u32,
    dq: u32,
    dv: u32,
    causal: bool,
    scale: f64,
    bm: u32,
    bn: u32,
) -> R<Kernel> {
    if bn != 32 || !bm.is_multiple_of(4) || bm == 0 || bm > 32 {
        return no("attention gradient tiles other than 4k×32");
    }
    let threads = 128u32;
    let rpw = (bm / 4) as usize;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, [threads, 1, 1]);
    let p = ParamSet::new(
        &mut b,
        g,
        tk,
        &["q", "k", "v", "dout", "lse", "delta"],
        "grad",
    )?;
    let [qp, kp, vp, dop, lsep, dlp] = [0, 1, 2, 3, 4, 5].map(|i| p.inputs[i]);
    let [qd, kd, vd, dod, lsed, dld] = [0, 1, 2, 3, 4, 5].map(|i| p.dtypes[i]);
    let ty = compute_ty(&[qd, kd, vd, dod]);
    let ex = Exp(ty);
    let eb = i64::from(bytes(ty));
    let sq_v = b.param("sq", Type::Scalar(Ty::U32), ParamRole::Size(sq));
    let sk_v = b.param("sk", Type::Scalar(Ty::U32), ParamRole::Size(sk));
    let by_row = wrt == AttnWrt::Q;
    // (tensor, dtype, width, batch length) of the row-side a, c and column-side b, d operands
    let (a, bb, c, d) = if by_row {
        (
            (qp, qd, dq, sq_v),
            (kp, kd, dq, sk_v),
            (dop, dod, dv, sq_v),
            (vp, vd, dv, sk_v),
        )
    } else {
        (
            (kp, kd, dq, sk_v),
            (qp, qd, dq, sq_v),
            (vp, vd, dv, sk_v),
            (dop, dod, dv, sq_v),
        )
    };
    let with_dp = wrt != AttnWrt::V;
    let (nrows, ncols) = (a.3, bb.3);
    let out_w = if wrt == AttnWrt::V { dv } else { dq };
    let sa = b.shared("smem_a", fbuf(ty, bm, dq));
    let sb = b.shared("smem_b", fbuf(ty, attention_grad_col_rows(bn, dq), dq + 1));
    let sc = with_dp.then(|| b.shared("smem_c", fbuf(ty, bm, dv)));
    let sd = b.shared("smem_d", fbuf(ty, attention_grad_col_rows(bn, dv), dv + 1));
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let bz = block_batch(&mut b, tk);
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let r0 = b.mul(Ty::U32, bx, imm(i64::from(bm)));
    // each operand's first element of this batch problem
    let base = |b: &mut Builder, len: Value, w: u32| {
        let t = b.mul(Ty::U32, bz, len);
        b.mul(Ty::U32, t, imm(i64::from(w)))
    };
    let (abase, bbase) = (base(&mut b, a.3, dq), base(&mut b, bb.3, dq));
    let (cbase, dbase) = (base(&mut b, c.3, dv), base(&mut b, d.3, dv));
    let lbase = base(&mut b, sq_v, 1);
    let obase = base(&mut b, nrows, out_w);
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);
    let sc0 = sc.map(|s| b.shared_addr(s));
    let sd0 = b.shared_addr(sd);
    tile_to_shared(
        &mut b, ty, a.1, a.0, abase, r0, nrows, bm, dq, dq, sa0, tid, threads,
    );
    if let Some(sc0) = sc0 {
        tile_to_shared(
            &mut b, ty, c.1, c.0, cbase, r0, nrows, bm, dv, dv, sc0, tid, threads,
        );
    }
    // this warp's rows
    let wrow = b.mul(Ty::U32, warp, imm(rpw as i64));
    let ri: Vec<Value> = (0..rpw)
        .map(|r| {
            let t = b.add(Ty::U32, r0, wrow);
            b.add(Ty::U32, t, imm(r as i64))
        })
        .collect();
    let ard = b.fma(Ty::U32, wrow, imm(i64::from(dq) * eb), sa0);
    let crd = sc0.map(|sc0| b.fma(Ty::U32, wrow, imm(i64::from(dv) * eb), sc0));
    let brd = b.fma(Ty::U32, lane, imm(i64::from(dq + 1) * eb), sb0);
    let drd = b.fma(Ty::U32, lane, imm(i64::from(dv + 1) * eb), sd0);
    // the accumulated operand: k (dq) or q (dk) in smem_b, dout (dv) in smem_d
    let (erd, epitch) = if wrt == AttnWrt::V {
        (b.fma(Ty::U32, lane, imm(eb), sd0), dv + 1)
    } else {
        (b.fma(Ty::U32, lane, imm(eb), sb0), dq + 1)
    };
    let per_row = out_w.div_ceil(32) as usize;
    // a query row's log-sum-exp (in the kernel's units) and delta: per row for dq, per lane
    // otherwise
    let row_stats = |b: &mut Builder, q: Value| {
        let ok = b.cmp(Cmp::Lt, Ty::U32, q, sq_v);
        let i = b.add(Ty::U32, lbase, q);
        let l = load_elem(b, ty, lsed, lsep, i, Some(ok));
        let l = b.mul(ty, l, fconst(ty, ex.units()));
        let dl = load_elem(b, ty, dld, dlp, i, Some(ok));
        (l, dl)
    };
    let stats: Vec<(Value, Value)> = if by_row {
        ri.iter().map(|&q| row_stats(&mut b, q)).collect()
    } else {
        vec![]
    };
    let init: Vec<Value> = (0..rpw * per_row)
        .map(|_| b.mov(ty, fconst(ty, 0.0)))
        .collect();
    let (lo, hi): (Operand, Value) = if by_row {
        (imm(0), key_end(&mut b, causal, r0, bm, sk_v))
    } else if causal {
        (r0.into(), sq_v)
    } else {
        (imm(0), sq_v)
    };
    let c2 = fconst(ty, scale * ex.units());
    let fin = b.for_(lo, hi, imm(i64::from(bn)), &init, None, |b, c0, acc| {
        tile_to_shared(
            b,
            ty,
            bb.1,
            bb.0,
            bbase,
            c0,
            ncols,
            bn,
            dq,
            dq + 1,
            sb0,
            tid,
            threads,
        );
        tile_to_shared(
            b,
            ty,
            d.1,
            d.0,
            dbase,
            c0,
            ncols,
            bn,
            dv,
            dv + 1,
            sd0,
            tid,
            threads,
        );
        b.barrier();
        let s = row_dots(b, ty, ard, brd, dq, rpw);
        let dp = crd.map(|crd| row_dots(b, ty, crd, drd, dv, rpw));
        let col = b.add(Ty::U32, c0, lane);
        let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, ncols);
        let lane_stats = (!by_row).then(|| row_stats(b, col));
        let mut w = Vec::with_capacity(rpw);
        for r in 0..rpw {
            let mut ok = col_ok;
            if causal {
                // key ≤ query
                let m = if by_row {
                    b.cmp(Cmp::Le, Ty::U32, col, ri[r])
                } else {
                    b.cmp(Cmp::Le, Ty::U32, ri[r], col)
                };
                ok = b.bin(BinOp::And, Ty::Pred, ok, m);
            }
            let (l2, delta) = lane_stats.unwrap_or_else(|| stats[r]);
            let t = b.mul(ty, s[r], c2);
            let t = b.sub(ty, t, l2);
            let e = ex.exp(b, t);
            let pj = b.select(ty, ok, e, fconst(ty, 0.0));
            w.push(match &dp {
                Some(dp) => {
                    let t = b.sub(ty, dp[r], delta);
                    b.mul(ty, pj, t)
                }
                None => pj,
            });
        }
        let acc = weighted_rows(b, ty, &w, erd, epitch, per_row, out_w, bn, acc.to_vec());
        b.barrier();
        acc.into_iter().map(Operand::from).collect()
    });
    let out_scale = fconst(ty, if wrt == AttnWrt::V { 1.0 } else { scale });
    for r in 0..rpw {
        let row_ok = b.cmp(Cmp::Lt, Ty::U32, ri[r], nrows);
        let rbase = b.fma(Ty::U32, ri[r], imm(i64::from(out_w)), obase);
        for (t, x) in fin[r * per_row..(r + 1) * per_row].iter().enumerate() {
            let col = b.add(Ty::U32, lane, imm(32 * t as i64));
            let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, imm(i64::from(out_w)));
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let idx = b.add(Ty::U32, rbase, col);
            let v = b.mul(ty, *x, out_scale);
            store_int_or(&mut b, ty, tk.ty.dtype, p.out, idx, v, Some(ok));
        }
    }
    Ok(b.finish())
}
