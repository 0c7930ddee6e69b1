//! `sum mean max min` over an axis that is not the last: the input is `[outer, len, inner]`
//! (`inner` > 1) and the output `[outer, inner]`.
//!
//! A block of 256 threads takes 32 consecutive columns of one `outer` index: lane ↔ column
//! (a warp's loads are 32 consecutive elements: coalesced), warp `w` of 8 folds rows
//! `w, w + 8, w + 16, …` in fp32, then warp 0 folds the 8 partials from shared memory in
//! warp order. The order is fixed, so results are deterministic. Grid: `outer ·
//! ceil(inner / 32)` blocks along x.

use super::emit::{self, ptr_param, u32_param};
use super::to_target::{Error, Lowered};
use crate::graph::{DType, Graph};
use crate::schedule::Kernel;
use crate::target::builder::{fimm, imm};
use crate::target::{BinOp, Cmp, Dim, KernelBuilder, Rnd, SReg, Space, Ty};
use crate::tile::{RowOp, Shape, Smem, TileKernel, TileOp};

/// Columns per block (one per lane).
pub const COLS: u32 = 32;
/// Row slices per block (one per warp).
pub const SLICES: u32 = 8;

/// Fills in the Tile IR of a reduction of `[outer, len, inner]` over the middle axis.
pub fn tile(
    k: &Kernel,
    op: RowOp,
    outer: u64,
    len: u64,
    inner: u64,
    tk: &mut TileKernel,
) -> Result<(), String> {
    let sp = k.span;
    let u = |v: u64| u32::try_from(v).map_err(|_| "a dimension over 2^32".to_string());
    let tiles = inner.div_ceil(u64::from(COLS));
    let blocks = outer * tiles;
    let (outer, len, inner) = (u(outer)?, u(len)?, u(inner)?);
    tk.grid = [
        u32::try_from(blocks).map_err(|_| "grid too large".to_string())?,
        1,
        1,
    ];
    tk.block = [COLS * SLICES, 1, 1];
    tk.smem = vec![Smem {
        name: "smem_part".into(),
        elem_bytes: 4,
        shape: vec![1, SLICES, COLS],
    }];
    let (acc, red) = match op {
        RowOp::Max => ("max", "max"),
        RowOp::Min => ("min", "min"),
        _ => ("sum", "add"),
    };
    let x = k.inputs.first().map(|v| v.0).unwrap_or(0);
    tk.body = vec![
        (
            TileOp::Map(format!(
                "block.x -> (outer, {COLS} columns), lane -> column, warp -> rows r ≡ warp (mod {SLICES})"
            )),
            sp,
        ),
        (
            TileOp::For {
                var: "%r".into(),
                extent: format!("{len} step {SLICES}"),
                body: vec![
                    (
                        TileOp::Load {
                            src: format!("%{x}[outer, %r, column]"),
                            vector: 1,
                            masked: true,
                        },
                        sp,
                    ),
                    (TileOp::Compute(format!("fp32 {acc}")), sp),
                ],
            },
            sp,
        ),
        (
            TileOp::Copy {
                src: "partial".into(),
                dst: "%smem_part[warp, lane]".into(),
                bytes: 4,
                is_async: false,
            },
            sp,
        ),
        (TileOp::Barrier, sp),
        (
            TileOp::Compute(format!(
                "warp 0: {red} of %smem_part[0..{SLICES}, lane] in order{}",
                if op == RowOp::Mean {
                    format!(", / {len}")
                } else {
                    String::new()
                }
            )),
            sp,
        ),
        (
            TileOp::Store {
                dst: format!("%{}[outer, column]", k.root.0),
                vector: 1,
                masked: true,
            },
            sp,
        ),
    ];
    tk.shape = Shape::ReduceAxis {
        op,
        outer,
        len,
        inner,
    };
    Ok(())
}

/// Target IR of a [`Shape::ReduceAxis`] kernel. Parameters: x, y, len, inner.
pub fn target(
    g: &Graph,
    tk: &TileKernel,
    op: RowOp,
    len: u32,
    inner: u32,
) -> Result<Lowered, Error> {
    let xin = *tk
        .inputs
        .first()
        .ok_or_else(|| Error::NotLowered("input".into()))?;
    let xd = g.ty(xin).map(|t| t.dtype).unwrap_or(DType::F32);
    let yd = tk.ty.dtype;
    let (init, fold) = match op {
        RowOp::Max => (f32::NEG_INFINITY, BinOp::Max),
        RowOp::Min => (f32::INFINITY, BinOp::Min),
        RowOp::Sum | RowOp::Mean => (0.0, BinOp::Add),
        _ => return Err(Error::NotLowered(format!("{} over an axis", op.name()))),
    };
    let threads = COLS * SLICES;
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(threads);
    let x = ptr_param(&mut b, "x");
    let y = ptr_param(&mut b, "y");
    let len_r = u32_param(&mut b, "len");
    let inner_r = u32_param(&mut b, "inner");
    let part = b.shared("smem_part", SLICES * COLS * 4, 16);
    let tid = b.special(SReg::Tid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let (o, t) = emit::divmod(&mut b, ctaid, inner.div_ceil(COLS));
    let col = b.fma(Ty::U32, t, imm(i64::from(COLS)), lane);
    let col_ok = b.setp(Cmp::Lt, Ty::U32, col, inner_r);
    // Element (o, r, col) is at (o·len + r)·inner + col.
    let orow = b.mul(Ty::U32, o, len_r);
    let acc = b.mov(Ty::F32, fimm(init));
    let r = b.mov(Ty::U32, warp);
    let (head, done) = b.while_lt(r, len_r, ["rows_head", "rows_body", "rows_done"]);
    let row = b.add(Ty::U32, orow, r);
    let idx = b.fma(Ty::U32, row, inner_r, col);
    let v = emit::load_f32(&mut b, xd, x, idx, Some(col_ok));
    b.bin_to(acc, fold, Ty::F32, acc, v);
    b.bin_to(r, BinOp::Add, Ty::U32, r, imm(i64::from(SLICES)));
    b.br(head);
    b.switch_to(done);
    let base = b.shared_addr(part);
    let slot = b.fma(Ty::U32, tid, imm(4), base);
    b.st(Space::Shared, Ty::F32, slot, 0, &[acc.into()]);
    b.bar_sync();
    let first = b.setp(Cmp::Eq, Ty::U32, warp, imm(0));
    let fin = b.block("fold");
    let exit = b.block("exit");
    b.cbr(first, fin, exit);
    b.switch_to(fin);
    let lslot = b.fma(Ty::U32, lane, imm(4), base);
    let total = b.ld(Space::Shared, Ty::F32, lslot, 0, 1)[0];
    for w in 1..SLICES as i32 {
        let p = b.ld(Space::Shared, Ty::F32, lslot, w * COLS as i32 * 4, 1)[0];
        b.bin_to(total, fold, Ty::F32, total, p);
    }
    let res = if op == RowOp::Mean {
        let n = b.cvt(Ty::F32, Ty::U32, Some(Rnd::Rn), len_r);
        b.bin(BinOp::Div, Ty::F32, total, n)
    } else {
        total
    };
    let out = b.fma(Ty::U32, o, inner_r, col);
    emit::store_f32(&mut b, yd, y, out, res, Some(col_ok));
    b.br(exit);
    b.switch_to(exit);
    b.ret();
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: [threads, 1, 1],
        scalars: vec![len, inner],
        status: false,
    })
}
