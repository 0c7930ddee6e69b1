//! A convolution as an implicit GEMM on tensor cores (bf16/fp16 operands, fp32 accumulators).
//!
//! Per group, `out[oc, p] = Σ_k w[oc, k]·col[k, p]`: M the group's output channels, N the
//! output pixels of every image (`p = n·OH·OW + oy·OW + ox`), K the kernel taps × the group's
//! input channels, tap-major, each tap's channels in chunks of BK (the last chunk of a tap
//! zero-filled past the channels). A block computes a BM × BN tile of one group (grid x:
//! pixel tiles, y: channel tiles, z: groups) with warps of 32 × 32 (2 × 4 `m16n8k16` tiles).
//!
//! Nothing of the im2col matrix is stored: k-tile `kt` is tap `kt / chunks`, channel chunk
//! `kt mod chunks`, so a thread's pixel (fixed for the whole loop) reads one input position
//! per k-tile, masked by the padding, and its BK/… channels at a constant stride. Each thread
//! gathers its share of the A (weights) and B (input) tiles into registers, stores them to one
//! of two shared buffers, and loads the next k-tile's registers while the warps run the MMAs
//! on this one (one barrier per k-tile: a buffer is rewritten two k-tiles later, after every
//! warp has passed the barrier that follows its last read). Shared rows are padded by 8
//! elements, so the 8 rows an `ldmatrix` reads fall in different banks.
//!
//! Parameters: x, w, (bias), out — those of the direct kernel ([`super::conv`]).

use super::blocks::{load_elem, store_int_or};
use super::{no, ParamSet, R};
use crate::graph::Graph;
use crate::scalar::{BinOp, Cmp, Dim, SReg, Ty};
use crate::schedule::fit::conv_mma_tile_ok;
use crate::tile::build::{fimm, frag, imm, Builder};
use crate::tile::ir::{Frag, Kernel, Layout, Operand, Role, SharedBuf, Value};
use crate::tile::{ConvDims, ConvMma, TileKernel};

/// Elements of padding after each shared row.
const PAD: u32 = 8;

/// `r + v` (u32), or `r` itself when `v` is 0.
fn add_imm(b: &mut Builder, r: Value, v: i64) -> Value {
    if v == 0 {
        r
    } else {
        b.add(Ty::U32, r, imm(v))
    }
}

fn and(b: &mut Builder, a: Option<Value>, c: Value) -> Value {
    match a {
        Some(a) => b.bin(BinOp::And, Ty::Pred, a, c),
        None => c,
    }
}

/// The Tile IR of a convolution on tensor cores.
pub fn build(g: &Graph, tk: &TileKernel, d: &ConvDims, m: &ConvMma) -> R<Kernel> {
    if !conv_mma_tile_ok(m.tile) {
        return no(format!(
            "an implicit-GEMM convolution tile of {:?} (BM and BN 32, 64 or 128; BK 16 or 32)",
            m.tile
        ));
    }
    let [bm_, bn_, bk_] = m.tile;
    let (bmi, bni, bki) = (i64::from(bm_), i64::from(bn_), i64::from(bk_));
    let warps_n = bni / 32;
    let ti = (bmi / 32) * warps_n * 32;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, [ti as u32, 1, 1]);
    let names: &[&str] = if d.bias {
        &["x", "w", "bias"]
    } else {
        &["x", "w"]
    };
    let p = ParamSet::new(&mut b, g, tk, names, "out")?;
    let ([ih, iw], [kh, kw], [oh, ow]) = (d.input, d.kernel, d.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (d.stride, d.dilation, d.pad);
    let groups = d.groups.max(1);
    let (cin_g, cout_g) = (d.cin / groups, d.cout / groups);
    let batch = d.planes / d.cout.max(1);
    let (ihw, ohw, khw) = (
        i64::from(ih) * i64::from(iw),
        i64::from(oh) * i64::from(ow),
        i64::from(kh) * i64::from(kw),
    );
    let pixels = i64::from(batch) * ohw;
    let chunks = i64::from(cin_g.div_ceil(bk_));
    let nk = khw * chunks;
    // whether the tiles can run past the channels (masks needed)
    let (c_edge, m_edge) = (i64::from(cin_g) % bki != 0, i64::from(cout_g) % bmi != 0);
    let u = |v: u32| imm(i64::from(v));

    // two shared buffers per operand: A `[BM][BK + PAD]`, B `[BK][BN + PAD]` (16-bit)
    let (pa, pb) = (bki + i64::from(PAD), bni + i64::from(PAD));
    let buf = |rows: u32, pitch: i64| SharedBuf {
        elem_bytes: 2,
        shape: vec![2, rows, pitch as u32],
        layout: Layout {
            pitch: (pitch * 2) as u32,
            swizzle: None,
        },
        align: 16,
    };
    let sa = b.shared("smem_a", buf(bm_, pa));
    let sb = b.shared("smem_b", buf(bk_, pb));
    let (a_stage, b_stage) = (bmi * pa * 2, bki * pb * 2);
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let by = b.special(SReg::Ctaid(Dim::Y));
    let grp = b.special(SReg::Ctaid(Dim::Z));
    let bn0 = b.mul(Ty::U32, bx, imm(bni));
    let bm0 = b.mul(Ty::U32, by, imm(bmi));
    let (xp, wp) = (p.inputs[0], p.inputs[1]);
    let (xd, wd) = (p.dtypes[0], p.dtypes[1]);
    if xd != wd || xd.size_bytes() != 2 {
        return no(format!("tensor cores with {xd} and {wd} operands"));
    }

    // B (the gathered input): thread → column `tid mod BN` (its pixel, fixed), rows
    // `tid / BN + s·(T/BN)` of the k-tile (input channels c0 + row of the tap)
    let (rpb, b_slots) = (ti / bni, bki * bni / ti);
    let bcol = b.bin(BinOp::Rem, Ty::U32, tid, imm(bni));
    let brow = b.bin(BinOp::Div, Ty::U32, tid, imm(bni));
    let pix_g = b.add(Ty::U32, bn0, bcol);
    let pix_ok = b.cmp(Cmp::Lt, Ty::U32, pix_g, imm(pixels));
    let img = b.bin(BinOp::Div, Ty::U32, pix_g, imm(ohw));
    let pix = b.bin(BinOp::Rem, Ty::U32, pix_g, imm(ohw));
    let oy = b.bin(BinOp::Div, Ty::U32, pix, u(ow));
    let ox = b.bin(BinOp::Rem, Ty::U32, pix, u(ow));
    // the input position of tap (0, 0): oy·sh − ph, ox·sw − pw (wrapping below 0; masked)
    let iy0 = b.mul(Ty::U32, oy, u(sh));
    let iy0 = b.sub(Ty::U32, iy0, u(ph));
    let ix0 = b.mul(Ty::U32, ox, u(sw));
    let ix0 = b.sub(Ty::U32, ix0, u(pw));
    // element of (image, first channel of the group + brow, 0, 0)
    let xb = {
        let t = b.mul(Ty::U32, img, u(d.cin));
        let t = b.fma(Ty::U32, grp, u(cin_g), t);
        let t = b.add(Ty::U32, t, brow);
        b.mul(Ty::U32, t, imm(ihw))
    };

    // A (the weights `[cout, cin_g, kh, kw]`): thread → column `tid mod BK` (channel c0 +
    // column), rows `tid / BK + s·(T/BK)` (output channels of the tile)
    let (rpa, a_slots) = (ti / bki, bmi * bki / ti);
    let acol = b.bin(BinOp::Rem, Ty::U32, tid, imm(bki));
    let arow = b.bin(BinOp::Div, Ty::U32, tid, imm(bki));
    let oc0 = b.add(Ty::U32, bm0, arow);
    let wb = {
        let t = b.fma(Ty::U32, grp, u(cout_g), oc0);
        let t = b.fma(Ty::U32, t, u(cin_g), acol);
        b.mul(Ty::U32, t, imm(khw))
    };
    let a_row_ok: Vec<Option<Value>> = (0..a_slots)
        .map(|s| {
            m_edge.then(|| {
                let r = add_imm(&mut b, oc0, s * rpa);
                b.cmp(Cmp::Lt, Ty::U32, r, u(cout_g))
            })
        })
        .collect();

    // Loads k-tile `kt` into registers: a_slots A values, then b_slots B values (16-bit).
    let load_tile = |b: &mut Builder, kt: Value, has: Option<Value>| -> Vec<Value> {
        let (tap, c0) = if chunks == 1 {
            (kt, None)
        } else {
            let tap = b.bin(BinOp::Div, Ty::U32, kt, imm(chunks));
            let cc = b.bin(BinOp::Rem, Ty::U32, kt, imm(chunks));
            (tap, Some(b.mul(Ty::U32, cc, imm(bki))))
        };
        let (i, j) = if kw == 1 {
            (tap, None)
        } else {
            let i = b.bin(BinOp::Div, Ty::U32, tap, u(kw));
            (i, Some(b.bin(BinOp::Rem, Ty::U32, tap, u(kw))))
        };
        // channels c0 + col of the tile past the group's (zero-filled)
        let c_ok = |b: &mut Builder, col: Value, extra: i64| -> Option<Value> {
            c_edge.then(|| {
                let c = add_imm(b, col, extra);
                let c = match c0 {
                    Some(c0) => b.add(Ty::U32, c, c0),
                    None => c,
                };
                b.cmp(Cmp::Lt, Ty::U32, c, u(cin_g))
            })
        };
        // A: w[oc, c0 + col, i, j] = element wb + c0·khw + tap, then + s·rpa·cin_g·khw
        let mut vals = Vec::new();
        let woff = match c0 {
            Some(c0) => b.fma(Ty::U32, c0, imm(khw), wb),
            None => wb,
        };
        let woff = b.add(Ty::U32, woff, tap);
        let wv = b.advance(wp, woff);
        let a_ok = match c_ok(b, acol, 0) {
            Some(c) => Some(and(b, has, c)),
            None => has,
        };
        for (s, row_ok) in a_row_ok.iter().enumerate() {
            let mask = match (a_ok, *row_ok) {
                (Some(a), Some(r)) => Some(b.bin(BinOp::And, Ty::Pred, a, r)),
                (a, r) => a.or(r),
            };
            let idx = imm(s as i64 * rpa * i64::from(cin_g) * khw);
            let v = b.load(Ty::B16, wv, idx, mask, &[imm(0)])[0];
            vals.push(v);
        }
        // B: x[img, grp·cin_g + c0 + brow + s·rpb, iy0 + i·dh, ix0 + j·dw]
        let iy = b.fma(Ty::U32, i, u(dh), iy0);
        let ix = match j {
            Some(j) => b.fma(Ty::U32, j, u(dw), ix0),
            None => ix0,
        };
        let y_ok = b.cmp(Cmp::Lt, Ty::U32, iy, u(ih));
        let x_ok = b.cmp(Cmp::Lt, Ty::U32, ix, u(iw));
        let ok = b.bin(BinOp::And, Ty::Pred, y_ok, x_ok);
        let ok = b.bin(BinOp::And, Ty::Pred, ok, pix_ok);
        let ok = and(b, has, ok);
        let xoff = b.fma(Ty::U32, iy, u(iw), xb);
        let xoff = b.add(Ty::U32, xoff, ix);
        let xoff = match c0 {
            Some(c0) => b.fma(Ty::U32, c0, imm(ihw), xoff),
            None => xoff,
        };
        let xv = b.advance(xp, xoff);
        for s in 0..b_slots {
            let mask = match c_ok(b, brow, s * rpb) {
                Some(c) => b.bin(BinOp::And, Ty::Pred, ok, c),
                None => ok,
            };
            let v = b.load(Ty::B16, xv, imm(s * rpb * ihw), Some(mask), &[imm(0)])[0];
            vals.push(v);
        }
        vals
    };
    // this thread's shared addresses (stage 0) of its first A and B elements
    let sa_st = {
        let t = b.fma(Ty::U32, arow, imm(pa), acol);
        b.fma(Ty::U32, t, imm(2), sa0)
    };
    let sb_st = {
        let t = b.fma(Ty::U32, brow, imm(pb), bcol);
        b.fma(Ty::U32, t, imm(2), sb0)
    };

    // ldmatrix addresses (stage 0, k-step 0), as in the tensor-core matmul
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp_id = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let wm = b.bin(BinOp::Div, Ty::U32, warp_id, imm(warps_n));
    let wn = b.bin(BinOp::Rem, Ty::U32, warp_id, imm(warps_n));
    let l16 = b.bin(BinOp::And, Ty::B32, lane, imm(15));
    let lhi = b.bin(BinOp::Shr, Ty::U32, lane, imm(4));
    let a_ld = {
        let r = b.fma(Ty::U32, wm, imm(32), l16);
        let t = b.fma(Ty::U32, r, imm(pa * 2), sa0);
        b.fma(Ty::U32, lhi, imm(16), t)
    };
    let b_ld = {
        let l8 = b.bin(BinOp::And, Ty::B32, lane, imm(7));
        let l8hi = b.bin(BinOp::Shr, Ty::U32, lane, imm(3));
        let l8hi = b.bin(BinOp::And, Ty::B32, l8hi, imm(1));
        let r = b.fma(Ty::U32, l8hi, imm(8), l8);
        let c = b.mul(Ty::U32, wn, imm(32));
        let c = b.fma(Ty::U32, lhi, imm(8), c);
        let t = b.fma(Ty::U32, r, imm(pb * 2), sb0);
        b.fma(Ty::U32, c, imm(2), t)
    };
    let kind = m.kind;
    let (mt_n, nt_n) = (2usize, 4usize);
    let cfrag = Frag {
        kind,
        role: Role::C,
    };
    let mut inits: Vec<Value> = (0..mt_n * nt_n)
        .map(|_| b.frag_make(cfrag, &[fimm(0.0); 4]))
        .collect();
    let kt0 = b.mov(Ty::U32, imm(0));
    inits.extend(load_tile(&mut b, kt0, None));
    let nacc = mt_n * nt_n;
    let fin = b.for_rolled(imm(0), imm(nk), imm(1), &inits, |b, kt, carried| {
        let (acc, regs) = carried.split_at(nacc);
        let st = b.bin(BinOp::And, Ty::B32, kt, imm(1));
        let sa_s = b.fma(Ty::U32, st, imm(a_stage), sa_st);
        let sb_s = b.fma(Ty::U32, st, imm(b_stage), sb_st);
        for s in 0..a_slots {
            let off = (s * rpa * pa * 2) as i32;
            b.store_shared(Ty::B16, sa_s, off, &[regs[s as usize].into()], None);
        }
        for s in 0..b_slots {
            let off = (s * rpb * pb * 2) as i32;
            let v = regs[(a_slots + s) as usize];
            b.store_shared(Ty::B16, sb_s, off, &[v.into()], None);
        }
        b.barrier();
        let next = b.add(Ty::U32, kt, imm(1));
        let has = b.cmp(Cmp::Lt, Ty::U32, next, imm(nk));
        let regs = load_tile(b, next, Some(has));
        let a_base = b.fma(Ty::U32, st, imm(a_stage), a_ld);
        let b_base = b.fma(Ty::U32, st, imm(b_stage), b_ld);
        let mut acc = acc.to_vec();
        for ks in 0..bki / 16 {
            let af: Vec<Value> = (0..mt_n as i64)
                .map(|mt| {
                    let addr = add_imm(b, a_base, mt * 16 * pa * 2 + ks * 32);
                    b.ldmatrix(false, addr, vec![frag(kind, Role::A)])[0]
                })
                .collect();
            let mut bf = Vec::new();
            for np in 0..(nt_n / 2) as i64 {
                let addr = add_imm(b, b_base, ks * 16 * pb * 2 + np * 32);
                let two = vec![frag(kind, Role::B), frag(kind, Role::B)];
                bf.extend(b.ldmatrix(true, addr, two));
            }
            for (mt, &a_frag) in af.iter().enumerate() {
                for (nt, &b_frag) in bf.iter().enumerate() {
                    let c = &mut acc[mt * nt_n + nt];
                    *c = b.mma(kind, a_frag, b_frag, *c);
                }
            }
        }
        acc.into_iter().chain(regs).map(Operand::from).collect()
    });
    let acc = &fin[..nacc];

    // the epilogue: accumulator (row gq (+8), columns 2t, 2t+1 of each 16×8 tile) + bias,
    // stored at out[img, grp·cout_g + m, pixel]
    b.at(tk.span);
    let gq = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
    let t4 = b.bin(BinOp::And, Ty::B32, lane, imm(3));
    let row0 = b.fma(Ty::U32, wm, imm(32), bm0);
    let row0 = b.add(Ty::U32, row0, gq);
    let col0 = b.fma(Ty::U32, wn, imm(32), bn0);
    let col0 = b.fma(Ty::U32, t4, imm(2), col0);
    // per column: its ok and the element of (image, channel 0, pixel)
    let cols: Vec<(Value, Value)> = (0..nt_n as i64 * 2)
        .map(|c| {
            let col = add_imm(&mut b, col0, (c / 2) * 8 + c % 2);
            let ok = b.cmp(Cmp::Lt, Ty::U32, col, imm(pixels));
            let img = b.bin(BinOp::Div, Ty::U32, col, imm(ohw));
            let pix = b.bin(BinOp::Rem, Ty::U32, col, imm(ohw));
            let e = b.mul(Ty::U32, img, imm(i64::from(d.cout) * ohw));
            (ok, b.add(Ty::U32, e, pix))
        })
        .collect();
    for mt in 0..mt_n as i64 {
        for half in 0..2i64 {
            let row = add_imm(&mut b, row0, mt * 16 + half * 8);
            let row_ok = b.cmp(Cmp::Lt, Ty::U32, row, u(cout_g));
            let oc = b.fma(Ty::U32, grp, u(cout_g), row);
            let bias = d
                .bias
                .then(|| load_elem(&mut b, Ty::F32, p.dtypes[2], p.inputs[2], oc, Some(row_ok)));
            let ocoff = b.mul(Ty::U32, oc, imm(ohw));
            for nt in 0..nt_n as i64 {
                for e in 0..2i64 {
                    let (col_ok, cbase) = cols[(nt * 2 + e) as usize];
                    let f = acc[(mt * nt_n as i64 + nt) as usize];
                    let r = b.frag_get(f, (half * 2 + e) as u8);
                    let v = match bias {
                        Some(bv) => b.add(Ty::F32, r, bv),
                        None => r,
                    };
                    let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
                    let idx = b.add(Ty::U32, cbase, ocoff);
                    store_int_or(&mut b, Ty::F32, p.out_dtype, p.out, idx, v, Some(ok));
                }
            }
        }
    }
    Ok(b.finish())
}
