//! `take` (integer-array indexing) and `scatter_add` (its adjoint) as Tile IR. One thread per
//! output element, its row-major coordinates `(o, p, r)` over `[outer, rows, inner]`:
//!
//! - `take`: reads `index[p]` (a negative one plus `n`) and copies `x[o, index[p], r]`;
//! - `scatter_add`: walks `j = 0, 1, …, k−1` and adds `src[o, j, r]` where `index[j]` names
//!   row `p` — every element in the same order as the cpu, so the sums are the cpu's bit for
//!   bit (fp32 for fp32/bf16/fp16, fp64, int64 wrapping for ints). The walk costs `k` index
//!   reads per element: right for embedding gradients of a few thousand tokens, not for
//!   millions (that needs sorted indices or atomics).
//!
//! An index out of range sets the status word (the cpu then reports the error). Parameters:
//! the operands in their order (`take`: x, index; `scatter_add`: index, src), `out`,
//! [`status`], `n` (the output's element count).

use super::blocks::{global_thread, tile_2d};
use super::elementwise::{load_val, store_val};
use super::values::{conv, Val};
use super::{no, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, Cmp, Ty, UnOp};
use crate::tile::build::{dimm, fimm, imm, Builder};
use crate::tile::ir::{Kernel, ParamRole, Type, Value};
use crate::tile::TileKernel;

/// Index entry `j` as a row of `0..n` (`u32`; a negative entry plus `n`) and whether it is in
/// range.
fn row_of(b: &mut Builder, view: Value, d: DType, j: Value, n: u32) -> R<(Value, Value)> {
    let v = match load_val(b, d, view, j, None)? {
        Val::I64(x) => x,
        Val::I32(x) => b.cast(Ty::S64, Ty::S32, None, x),
        _ => return no("a non-integer index"),
    };
    let neg = b.cmp(Cmp::Lt, Ty::S64, v, imm(0));
    let wrapped = b.add(Ty::S64, v, imm(i64::from(n)));
    let row = b.select(Ty::S64, neg, wrapped, v);
    let ge = b.cmp(Cmp::Ge, Ty::S64, row, imm(0));
    let lt = b.cmp(Cmp::Lt, Ty::S64, row, imm(i64::from(n)));
    let ok = b.bin(BinOp::And, Ty::Pred, ge, lt);
    let row32 = b.cast(Ty::U32, Ty::S64, None, row);
    Ok((row32, ok))
}

/// Stores 1 into the status word where `ok` does not hold.
fn flag(b: &mut Builder, status: Value, ok: Value) {
    let bad = b.unary(UnOp::Not, Ty::Pred, ok);
    let zero = b.mov(Ty::U32, imm(0));
    b.store(Ty::U32, status, zero, &[imm(1)], Some(bad));
}

/// The Tile IR of a [`Shape::Take`](crate::tile::Shape::Take) kernel.
pub fn build(
    g: &Graph,
    tk: &TileKernel,
    dims: [u32; 4],
    scatter: bool,
    tile: Option<[u32; 3]>,
) -> R<Kernel> {
    let [outer, n, k, inner] = dims;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let mut views = vec![];
    for (i, v) in tk.inputs.iter().enumerate() {
        let Some(t) = g.ty(*v) else {
            return no("type");
        };
        b.at(g.span(*v));
        let p = b.param(format!("in{i}"), Type::Global(t.dtype), ParamRole::Input);
        views.push((p, t.dtype));
    }
    let [first, second] = views[..] else {
        return no("a take of other than two operands");
    };
    let ((data, dd), (index, id)) = if scatter {
        (second, first)
    } else {
        (first, second)
    };
    b.at(tk.span);
    let od = tk.ty.dtype;
    let out = b.param("out", Type::Global(od), ParamRole::Output);
    let status = b.param("status", Type::Global(DType::I32), ParamRole::Status);
    let rows = if scatter { n } else { k };
    let Some(total) = outer.checked_mul(rows).and_then(|x| x.checked_mul(inner)) else {
        return no("size");
    };
    let nr = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(total));
    // this thread's element, and the end of its run (n, or its row's end)
    let (gid, nr) = match tile {
        None => (global_thread(&mut b), nr),
        Some(t) => tile_2d(&mut b, t, u64::from(total), 1),
    };
    let live = b.cmp(Cmp::Lt, Ty::U32, gid, nr);
    let mut res: R<()> = Ok(());
    b.when(live, |b| {
        res = (|| {
            let plane = i64::from(rows) * i64::from(inner);
            let o = b.bin(BinOp::Div, Ty::U32, gid, imm(plane));
            let rem = b.bin(BinOp::Rem, Ty::U32, gid, imm(plane));
            let p = b.bin(BinOp::Div, Ty::U32, rem, imm(i64::from(inner)));
            let r = b.bin(BinOp::Rem, Ty::U32, rem, imm(i64::from(inner)));
            if !scatter {
                let (row, ok) = row_of(b, index, id, p, n)?;
                flag(b, status, ok);
                // x[o, row, r]
                let base = b.mul(Ty::U32, o, imm(i64::from(n)));
                let at = b.add(Ty::U32, base, row);
                let at = b.fma(Ty::U32, at, imm(i64::from(inner)), r);
                let v = load_val(b, dd, data, at, Some(ok))?;
                return store_val(b, od, out, gid, v, None);
            }
            let (ty, zero) = match od {
                DType::F64 => (Ty::F64, dimm(0.0)),
                DType::I32 | DType::I64 => (Ty::S64, imm(0)),
                _ => (Ty::F32, fimm(0.0)),
            };
            let acc0 = b.mov(ty, zero);
            let mut inner_res: R<()> = Ok(());
            let acc = b.for_rolled(imm(0), imm(i64::from(k)), imm(1), &[acc0], |b, j, c| {
                let acc = c[0];
                let step = (|| {
                    let (row, ok) = row_of(b, index, id, j, n)?;
                    flag(b, status, ok);
                    let same = b.cmp(Cmp::Eq, Ty::U32, row, p);
                    let hit = b.bin(BinOp::And, Ty::Pred, same, ok);
                    // src[o, j, r]
                    let base = b.mul(Ty::U32, o, imm(i64::from(k)));
                    let at = b.add(Ty::U32, base, j);
                    let at = b.fma(Ty::U32, at, imm(i64::from(inner)), r);
                    let v = load_val(b, dd, data, at, None)?;
                    let x = match (ty, v) {
                        (Ty::F64, v) => match conv(b, v, DType::F64)? {
                            Val::D(x) => x,
                            _ => return no("fp64 value"),
                        },
                        (Ty::S64, v) => match conv(b, v, DType::I64)? {
                            Val::I64(x) => x,
                            _ => return no("int64 value"),
                        },
                        (_, Val::F(x)) => x,
                        _ => return no("a value of another dtype"),
                    };
                    let sum = b.add(ty, acc, x);
                    Ok(b.select(ty, hit, sum, acc))
                })();
                match step {
                    Ok(v) => vec![v.into()],
                    Err(e) => {
                        inner_res = Err(e);
                        vec![acc.into()]
                    }
                }
            });
            inner_res?;
            let v = match ty {
                Ty::F64 => Val::D(acc[0]),
                Ty::S64 => Val::I64(acc[0]),
                _ => Val::F(acc[0]),
            };
            store_val(b, od, out, gid, v, None)
        })();
    });
    res?;
    Ok(b.finish())
}
