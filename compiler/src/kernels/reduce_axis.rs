//! `sum mean max min` over an axis that is not the last: the input is `[outer, len, inner]`
//! (`inner` > 1) and the output `[outer, inner]`.
//!
//! A block of 256 threads takes 32 consecutive columns of one `outer` index: lane ↔ column
//! (a warp's loads are 32 consecutive elements: coalesced), warp `w` of 8 folds rows
//! `w, w + 8, w + 16, …` in fp32, then warp 0 folds the 8 partials from shared memory in
//! warp order. The order is fixed, so results are deterministic. Grid: `outer ·
//! ceil(inner / 32)` blocks along x.

use crate::kernels::lower::{nl, NotLowered};
use crate::schedule::Kernel;
use crate::tile::{RowOp, Shape, TileKernel};

/// Columns per block (one per lane).
pub const COLS: u32 = 32;
/// Row slices per block (one per warp).
pub const SLICES: u32 = 8;

/// Fills in the launch and [`Shape::ReduceAxis`] of a reduction (the program:
/// `kernels::axis`) of `[outer, len, inner]` over the middle axis.
pub fn tile(
    k: &Kernel,
    op: RowOp,
    outer: u64,
    len: u64,
    inner: u64,
    tk: &mut TileKernel,
) -> Result<(), NotLowered> {
    let u = |v: u64| u32::try_from(v).map_err(|_| nl(k, "a dimension over 2^32"));
    let tiles = inner.div_ceil(u64::from(COLS));
    let blocks = outer * tiles;
    let (outer, len, inner) = (u(outer)?, u(len)?, u(inner)?);
    tk.grid = [
        u32::try_from(blocks).map_err(|_| nl(k, "grid too large"))?,
        1,
        1,
    ];
    tk.block = [COLS * SLICES, 1, 1];
    tk.shape = Shape::ReduceAxis {
        op,
        outer,
        len,
        inner,
    };
    Ok(())
}
