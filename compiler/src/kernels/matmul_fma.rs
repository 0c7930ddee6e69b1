//! Tiled matmul on the FMA units (fp32, fp64, integer and bool, fp8 and mixed operand
//! dtypes): BM×BN block tile, k-step BK, `BM·BN/(RM·RN)` threads each computing RM×RN outputs
//! strided by (BM/RM, BN/RN): 4×4 outputs, fewer on a tile too small to give every thread of
//! one warp 16 ([`fma_thread_tile`]); tiles stream into shared memory with one-element `cp.async.ca`
//! copies (zero-filled past the edges via src-size; operands cp.async cannot move as they are
//! are loaded and stored by each thread) through `stages` buffers (`commit`/`wait stages-1`, `barrier`). Any M, N, K. The RM·RN
//! accumulators are values carried through the k loop.
//!
//! A norm prologue ([`super::prologue`]) as in `matmul_mma`: statistics before the k loop,
//! each A tile normalised in shared memory once it has landed.
//!
//! Parameters: a, b, [norm_w, norm_b], epi…, c, m, n, k.

use super::blocks::{load_elem, load_int, select_view};
use super::epilogue::{block_tiles, log2, matmul_params, matmul_parts, stage_of, store_acc};
use super::{no, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, CacheOp, Cmp, Ty};
use crate::schedule::fit::fma_thread_tile;
use crate::tile::build::{dimm, fimm, imm, Builder};
use crate::tile::ir::{Kernel, Operand, Value};
use crate::tile::{MatmulBatch, TileKernel};

/// One operand's copy sources: per copy slot a view at its element of k-tile 0 (and for A
/// the row's in-range test), or, in a lean kernel, the first slot's and the stride (elements)
/// between slots.
struct Sources {
    src: Vec<Value>,
    /// A: per slot `row < m` (lean: the first slot's row); B: per slot its tile row.
    rows: Vec<Value>,
    stride: Option<Value>,
}

pub fn matmul_fma(
    g: &Graph,
    tk: &TileKernel,
    dims: [u32; 3],
    tile: [u32; 3],
    stages: u32,
    async_copy: bool,
    batch: MatmulBatch,
) -> R<Kernel> {
    let (ad, bd, steps) = matmul_parts(g, tk)?;
    // Float operands accumulate in fp64 when either is fp64 (the cpu promotes), else fp32.
    let floats = ad.is_float() && bd.is_float();
    let f64_mm = floats && (ad == DType::F64 || bd == DType::F64);
    // Integer and bool matmuls accumulate in the result's width with `mad.lo` (wrapping, as
    // the cpu's int64 accumulation truncated to the result's width).
    let intlike = |d: DType| matches!(d, DType::I8 | DType::I32 | DType::I64 | DType::Bool);
    let int_ty = match tk.ty.dtype {
        DType::I8 | DType::I32 if intlike(ad) && intlike(bd) => Some(Ty::S32),
        DType::I64 if intlike(ad) && intlike(bd) => Some(Ty::S64),
        _ => None,
    };
    // Operands cp.async cannot stage as they are (1-byte int8/bool/fp8: it copies 4, 8 or 16
    // bytes; integers of another width than the accumulator's): each thread loads its element,
    // converts it to the compute type and stores that to shared memory (synchronously: the
    // stage it writes was last read before the previous barrier).
    let same_width = |d: DType| match int_ty {
        Some(Ty::S64) => d == DType::I64,
        _ => d == DType::I32,
    };
    let float_staged = floats && !(ad == bd && matches!(ad, DType::F32 | DType::F64));
    let byte_in = float_staged || int_ty.is_some() && !(same_width(ad) && same_width(bd));
    if int_ty.is_some() && !steps.is_empty() {
        return no("integer matmul epilogues");
    }
    if int_ty.is_none() && !floats {
        return no("FMA matmul of integer and float operands");
    }
    // fp64 keeps every value in `.f64` (8-byte copies, `fma.rn.f64`).
    let fty = int_ty.unwrap_or(if f64_mm { Ty::F64 } else { Ty::F32 });
    let esize: i64 = if f64_mm || fty == Ty::S64 { 8 } else { 4 };
    let [bm_, bn_, bk_] = tile;
    let (bmi, bni, bki) = (i64::from(bm_), i64::from(bn_), i64::from(bk_));
    let [rm, rn] = fma_thread_tile(bm_, bn_);
    let threads = bm_ * bn_ / (rm * rn);
    let ti = i64::from(threads);
    let (rmi, rni) = (i64::from(rm), i64::from(rn));
    let si = i64::from(stages);
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let p = matmul_params(&mut b, g, tk, (ad, bd), &steps, dims, batch)?;
    let (a, bp, m, n, k) = (p.a, p.b, p.m, p.n, p.k);
    let super::epilogue::Tiles {
        tid,
        bm,
        bn,
        sa,
        sa0,
        sb0,
        ..
    } = block_tiles(&mut b, tile, esize as u32, stages, [false, false]);
    // Loaders: A (r, c) = (tid/BK + (T/BK)·i, tid%BK); B (r, c) = (tid/BN + (T/BN)·i, tid%BN).
    let a_step = ti / bki;
    let b_step = ti / bni;
    let a_cnt = (bmi * bki / ti) as usize;
    let b_cnt = (bki * bni / ti) as usize;
    let ac = b.bin(BinOp::And, Ty::B32, tid, imm(bki - 1));
    let ar0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(log2(bk_)));
    let bc = b.bin(BinOp::And, Ty::B32, tid, imm(bni - 1));
    let br0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(log2(bn_)));
    // Each thread's copy sources: kept for every copy of a tile when registers allow, or (more
    // than 256 threads: at most 64 registers each) the first one and a stride, the others
    // recomputed at each issue so that a 1024-thread tile does not spill.
    let lean = threads > 256;
    let (asrc, bsrc) = if lean {
        let gr = b.add(Ty::U32, bm, ar0);
        let ai = b.fma(Ty::U32, gr, k, ac);
        let ai = b.advance(a, ai);
        let bi = b.fma(Ty::U32, br0, n, bn);
        let bi = b.add(Ty::U32, bi, bc);
        let bi = b.advance(bp, bi);
        let sa = b.mul(Ty::U32, k, imm(a_step));
        let sb = b.mul(Ty::U32, n, imm(b_step));
        (
            Sources {
                src: vec![ai],
                rows: vec![gr],
                stride: Some(sa),
            },
            Sources {
                src: vec![bi],
                rows: vec![br0],
                stride: Some(sb),
            },
        )
    } else {
        let mut a_src = Sources {
            src: vec![],
            rows: vec![],
            stride: None,
        };
        for i in 0..a_cnt {
            let gr = b.add(Ty::U32, bm, ar0);
            let gr = b.add(Ty::U32, gr, imm(a_step * i as i64));
            a_src.rows.push(b.cmp(Cmp::Lt, Ty::U32, gr, m));
            let idx = b.fma(Ty::U32, gr, k, ac);
            a_src.src.push(b.advance(a, idx));
        }
        let mut b_src = Sources {
            src: vec![],
            rows: vec![],
            stride: None,
        };
        for i in 0..b_cnt {
            let r = b.add(Ty::U32, br0, imm(b_step * i as i64));
            b_src.rows.push(r);
            let idx = b.fma(Ty::U32, r, n, bn);
            let idx = b.add(Ty::U32, idx, bc);
            b_src.src.push(b.advance(bp, idx));
        }
        (a_src, b_src)
    };
    let gc = b.add(Ty::U32, bn, bc);
    let b_col_ok = b.cmp(Cmp::Lt, Ty::U32, gc, n);
    let a_dst = b.fma(Ty::U32, ar0, imm(bki * esize), sa0);
    let a_dst = b.fma(Ty::U32, ac, imm(esize), a_dst);
    let b_dst = b.fma(Ty::U32, br0, imm(bni * esize), sb0);
    let b_dst = b.fma(Ty::U32, bc, imm(esize), b_dst);
    // One element copy: `src` to `dst`, zero-filled (from the operand's base) unless `ok`.
    let copy =
        |b: &mut Builder, base: Value, src: Value, ok: Value, dst: Value, g: Option<Value>| {
            if byte_in {
                let d = if base == a { ad } else { bd };
                let v = if floats {
                    load_elem(b, fty, d, src, imm(0), Some(ok))
                } else {
                    let (ity, v) = load_int(b, d, src, imm(0), Some(ok));
                    if ity == fty {
                        v
                    } else {
                        b.cast(fty, ity, None, v)
                    }
                };
                b.store_shared(fty, dst, 0, &[v.into()], None);
                return;
            }
            if !async_copy {
                // `schedule.async_copy(False)`: a load (0 past the edges) and a shared store
                let bits = if esize == 8 { Ty::B64 } else { Ty::B32 };
                let v = b.load(bits, src, imm(0), Some(ok), &[imm(0)])[0];
                b.store_shared(bits, dst, 0, &[v.into()], g);
                return;
            }
            let src = select_view(b, ok, src, base);
            let size = b.select(Ty::U32, ok, imm(esize), imm(0));
            b.copy_async(
                CacheOp::Ca,
                esize as u32,
                dst,
                src,
                imm(0),
                Some(size.into()),
                g,
            );
        };
    let issue = |b: &mut Builder, kt: Value, guard: Option<Value>| {
        let k0 = b.mul(Ty::U32, kt, imm(bki));
        let st = stage_of(b, stages, kt);
        let a_off = b.mul(Ty::U32, st, imm(bmi * bki * esize));
        let b_off = b.mul(Ty::U32, st, imm(bki * bni * esize));
        let col = b.add(Ty::U32, k0, ac);
        let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, k);
        let kn = b.mul(Ty::U32, k0, n);
        let mut a_cur: Option<Value> = None;
        for i in 0..a_cnt {
            let (row_ok, base) = match asrc.stride {
                Some(sa) => {
                    let gr = b.add(Ty::U32, asrc.rows[0], imm(a_step * i as i64));
                    let base = match a_cur {
                        None => asrc.src[0],
                        Some(prev) => b.advance(prev, sa),
                    };
                    a_cur = Some(base);
                    (b.cmp(Cmp::Lt, Ty::U32, gr, m), base)
                }
                None => (asrc.rows[i], asrc.src[i]),
            };
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let src = b.advance(base, k0);
            let dst = b.add(Ty::U32, a_dst, a_off);
            let dst = b.add(Ty::U32, dst, imm(i as i64 * a_step * bki * esize));
            copy(b, a, src, ok, dst, guard);
        }
        let mut b_cur: Option<Value> = None;
        for i in 0..b_cnt {
            let (row, base) = match bsrc.stride {
                Some(sb) => {
                    let row = b.add(Ty::U32, bsrc.rows[0], imm(b_step * i as i64));
                    let base = match b_cur {
                        None => bsrc.src[0],
                        Some(prev) => b.advance(prev, sb),
                    };
                    b_cur = Some(base);
                    (row, base)
                }
                None => (bsrc.rows[i], bsrc.src[i]),
            };
            let r = b.add(Ty::U32, k0, row);
            let r_ok = b.cmp(Cmp::Lt, Ty::U32, r, k);
            let ok = b.bin(BinOp::And, Ty::Pred, r_ok, b_col_ok);
            let src = b.advance(base, kn);
            let dst = b.add(Ty::U32, b_dst, b_off);
            let dst = b.add(Ty::U32, dst, imm(i as i64 * b_step * bni * esize));
            copy(b, bp, src, ok, dst, guard);
        }
    };
    for st in 0..si - 1 {
        let kt = b.mov(Ty::U32, imm(st));
        issue(&mut b, kt, None);
        if async_copy {
            b.commit();
        }
    }
    // a norm prologue: the rows' statistics while the first tiles load
    let stats = p
        .norm
        .as_ref()
        .map(|nm| nm.stats(&mut b, a, [m, k], bm, tid, ti, bmi));
    let nk = b.add(Ty::U32, k, imm(bki - 1));
    let nk = b.bin(BinOp::Shr, Ty::U32, nk, imm(log2(bk_)));
    let zero: Operand = match fty {
        Ty::F64 => dimm(0.0),
        Ty::F32 => fimm(0.0),
        _ => imm(0),
    };
    let acc0: Vec<Value> = (0..rmi * rni).map(|_| b.mov(fty, zero)).collect();
    let (sm, sn) = (bmi / rmi, bni / rni);
    let tx = b.bin(BinOp::And, Ty::B32, tid, imm(sn - 1));
    let ty = b.bin(BinOp::Shr, Ty::U32, tid, imm(log2(bn_ / rn)));
    let a_rd = b.fma(Ty::U32, ty, imm(bki * esize), sa0);
    let b_rd = b.fma(Ty::U32, tx, imm(esize), sb0);
    let mut norm_err = None;
    let acc = b.for_(imm(0), nk, imm(1), &acc0, Some(stages), |b, kt, acc| {
        let next = b.add(Ty::U32, kt, imm(si - 1));
        let has_next = b.cmp(Cmp::Lt, Ty::U32, next, nk);
        issue(b, next, Some(has_next));
        if async_copy {
            b.commit();
            b.wait(stages - 1);
        }
        b.barrier();
        let st = stage_of(b, stages, kt);
        if let (Some(nm), Some(stats)) = (&p.norm, &stats) {
            let tile = (sa, fty);
            if let Err(e) = nm.normalize(b, stats, tile, st, kt, k, ti, [bmi, bki], false) {
                norm_err = Some(e);
            }
        }
        let a_off = b.mul(Ty::U32, st, imm(bmi * bki * esize));
        let b_off = b.mul(Ty::U32, st, imm(bki * bni * esize));
        let a_base = b.add(Ty::U32, a_rd, a_off);
        let b_base = b.add(Ty::U32, b_rd, b_off);
        let mut acc = acc.to_vec();
        for kk in 0..bki {
            let av: Vec<Value> = (0..rmi)
                .map(|i| {
                    let off = (i * sm * bki * esize + kk * esize) as i32;
                    b.load_shared(fty, a_base, off, 1)[0]
                })
                .collect();
            let bv: Vec<Value> = (0..rni)
                .map(|j| {
                    let off = (kk * bni * esize + j * sn * esize) as i32;
                    b.load_shared(fty, b_base, off, 1)[0]
                })
                .collect();
            for (i, &ai) in av.iter().enumerate() {
                for (j, &bj) in bv.iter().enumerate() {
                    let x = &mut acc[i * bv.len() + j];
                    *x = b.fma(fty, ai, bj, *x);
                }
            }
        }
        b.barrier();
        acc.into_iter().map(Operand::from).collect()
    });
    if let Some(e) = norm_err {
        return Err(e);
    }
    for i in 0..rmi {
        let row = b.add(Ty::U32, bm, ty);
        let row = b.add(Ty::U32, row, imm(sm * i));
        let row_ok = b.cmp(Cmp::Lt, Ty::U32, row, m);
        for j in 0..rni {
            b.at(tk.span);
            let col = b.add(Ty::U32, bn, tx);
            let col = b.add(Ty::U32, col, imm(sn * j));
            if int_ty.is_some() {
                let idx = b.fma(Ty::U32, row, p.n, col);
                let idx = match p.cbase {
                    Some(cb) => b.add(Ty::U32, idx, cb),
                    None => idx,
                };
                let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, p.n);
                let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
                let v = acc[(i * rni + j) as usize];
                if tk.ty.dtype == DType::I8 {
                    let u = b.bitcast(Ty::U32, v);
                    b.store(Ty::U8, p.c, idx, &[u.into()], Some(ok));
                } else {
                    b.store(fty, p.c, idx, &[v.into()], Some(ok));
                }
                continue;
            }
            store_acc(
                &mut b,
                &p,
                tk,
                fty,
                acc[(i * rni + j) as usize],
                row,
                row_ok,
                col,
            )?;
        }
    }
    Ok(b.finish())
}
