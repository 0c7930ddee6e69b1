//! FlashAttention forward on tensor cores (bf16 or fp16 operands, fp32 accumulation):
//! a block of 4 warps per 64 query rows (16 per warp), key tiles of 64.
//!
//! Per key tile: Q, K and V tiles are staged in shared memory (16-byte copies, rows padded
//! by 16 bytes so the 8 rows an `ldmatrix` reads fall in distinct banks); `S = Q·Kᵀ` by
//! `mma.sync.m16n8k16` (Q fragments by `ldmatrix`, loaded once; K fragments by `ldmatrix`);
//! the online softmax runs on the accumulator fragments in registers (a row's max and sum
//! across the 4 lanes that hold it by two butterfly shuffles); `P` becomes the A fragments of
//! `P·V` by packing pairs of accumulators to bf16x2/f16x2 (the C layout of `S` is the A
//! layout of `P`); V fragments by `ldmatrix.trans`. Running max, sum and the output
//! fragments are carried through the key loop.
//! Parameters: q, k, v, o, sq, sk; the batch is grid y. Requires dq = dv, a multiple of 16.

use super::{no, ParamSet, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, Cmp, Dim, MmaKind, Pack, SReg, ShflMode, Ty, UnOp};
use crate::tile::build::{fimm, frag, imm, Builder};
use crate::tile::ir::{Frag, Kernel, Layout, Operand, ParamRole, Role, SharedBuf, Type, Value};
use crate::tile::TileKernel;

/// Query rows per block and key rows per tile.
pub const BM: u32 = 64;
pub const BN: u32 = 64;
const THREADS: u32 = 128;
const LOG2E: f64 = std::f64::consts::LOG2_E;

/// A `[rows, d]` 16-bit tile, rows padded by 16 bytes.
fn buf(rows: u32, d: u32) -> SharedBuf {
    SharedBuf {
        elem_bytes: 2,
        shape: vec![1, rows, d],
        layout: Layout {
            pitch: d * 2 + 16,
            swizzle: None,
        },
        align: 16,
    }
}

/// Copies rows `row0..row0 + rows` (of at most `nrows`) of a `[.., d]` 16-bit tensor, from
/// element `base`, into `dst`: 16 bytes per thread and step, zero past the last row.
#[allow(clippy::too_many_arguments)]
fn stage(
    b: &mut Builder,
    src: Value,
    base: Value,
    row0: Value,
    nrows: Value,
    rows: u32,
    d: u32,
    dst: Value,
    tid: Value,
) {
    let chunks = d / 8;
    let total = rows * chunks;
    for it in 0..total.div_ceil(THREADS) {
        let idx = b.add(Ty::U32, tid, imm(i64::from(it * THREADS)));
        let r = b.bin(BinOp::Div, Ty::U32, idx, imm(i64::from(chunks)));
        let c = b.bin(BinOp::Rem, Ty::U32, idx, imm(i64::from(chunks)));
        let gr = b.add(Ty::U32, row0, r);
        let mut ok = b.cmp(Cmp::Lt, Ty::U32, gr, nrows);
        let tail = ((it + 1) * THREADS > total)
            .then(|| b.cmp(Cmp::Lt, Ty::U32, idx, imm(i64::from(total))));
        if let Some(t) = tail {
            ok = b.bin(BinOp::And, Ty::Pred, ok, t);
        }
        let gi = b.fma(Ty::U32, gr, imm(i64::from(d)), base);
        let c8 = b.mul(Ty::U32, c, imm(8));
        let gi = b.add(Ty::U32, gi, c8);
        let zero = [imm(0), imm(0), imm(0), imm(0)];
        let v = b.load_n(Ty::B32, Ty::B32, 4, src, gi, Some(ok), &zero);
        let addr = b.offset(dst, imm(0), r, c8);
        let vals: Vec<Operand> = v.into_iter().map(Operand::from).collect();
        b.store_shared(Ty::B32, addr, 0, &vals, tail);
    }
}

/// The max (or sum) of `v` over the 4 lanes of a quad (the lanes that hold one row).
fn quad(b: &mut Builder, op: BinOp, v: Value) -> Value {
    let mut v = v;
    for s in [1, 2] {
        let t = b.shfl(ShflMode::Bfly, v, imm(s), imm(31));
        let t = b.bitcast(Ty::F32, t);
        v = b.bin(op, Ty::F32, v, t);
    }
    v
}

/// The attention `softmax(Q·Kᵀ·scale)·V` of `batch × [sq, d]` operands of dtype `dt`.
#[allow(clippy::too_many_arguments)]
pub fn build(
    g: &Graph,
    tk: &TileKernel,
    sq: u32,
    sk: u32,
    d: u32,
    causal: bool,
    scale: f64,
    kind: MmaKind,
) -> R<Kernel> {
    if !d.is_multiple_of(16) || d == 0 || d > 128 {
        return no("tensor-core attention with a head dimension that is not 16..128 by 16");
    }
    let pack = match kind {
        MmaKind::M16n8k16Bf16 => Pack::BF16x2,
        MmaKind::M16n8k16F16 => Pack::F16x2,
        MmaKind::M16n8k8Tf32 => return no("tf32 tensor-core attention"),
    };
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, [THREADS, 1, 1]);
    let p = ParamSet::new(&mut b, g, tk, &["q", "k", "v"], "o")?;
    let (qp, kp, vp, op) = (p.inputs[0], p.inputs[1], p.inputs[2], p.out);
    let sq_v = b.param("sq", Type::Scalar(Ty::U32), ParamRole::Size(sq));
    let sk_v = b.param("sk", Type::Scalar(Ty::U32), ParamRole::Size(sk));
    let sqs = b.shared("smem_q", buf(BM, d));
    let sks = b.shared("smem_k", buf(BN, d));
    let svs = b.shared("smem_v", buf(BN, d));
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let bz = super::attention::block_batch(&mut b, tk);
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let q0 = b.mul(Ty::U32, bx, imm(i64::from(BM)));
    let qb = b.mul(Ty::U32, bz, sq_v);
    let qbase = b.mul(Ty::U32, qb, imm(i64::from(d)));
    let kb = b.mul(Ty::U32, bz, sk_v);
    let kbase = b.mul(Ty::U32, kb, imm(i64::from(d)));
    stage(&mut b, qp, qbase, q0, sq_v, BM, d, sqs, tid);
    b.barrier();
    // lane roles in the fragments: g = lane / 4 (row), t = lane % 4 (column pair)
    let gq = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
    let tq = b.bin(BinOp::And, Ty::B32, lane, imm(3));
    let l8 = b.bin(BinOp::And, Ty::B32, lane, imm(7));
    let l16 = b.bin(BinOp::And, Ty::B32, lane, imm(15));
    let hi16 = b.bin(BinOp::Shr, Ty::U32, lane, imm(4));
    let mid = b.bin(BinOp::Shr, Ty::U32, lane, imm(3));
    let mid = b.bin(BinOp::And, Ty::B32, mid, imm(1));
    let wrow = b.mul(Ty::U32, warp, imm(16));
    // Q fragments of this warp's 16 rows, one per 16 columns
    let qrow = b.add(Ty::U32, wrow, l16);
    let qcol = b.mul(Ty::U32, hi16, imm(8));
    let afrag = frag(kind, Role::A);
    let bfrag = frag(kind, Role::B);
    let qf: Vec<Value> = (0..d / 16)
        .map(|kk| {
            let col = b.add(Ty::U32, qcol, imm(i64::from(kk * 16)));
            let addr = b.offset(sqs, imm(0), qrow, col);
            b.ldmatrix(false, addr, vec![afrag.clone()])[0]
        })
        .collect();
    // this thread's two query rows
    let r0 = b.add(Ty::U32, q0, wrow);
    let r0 = b.add(Ty::U32, r0, gq);
    let r1 = b.add(Ty::U32, r0, imm(8));
    // ldmatrix roles: K rows (keys) and V rows (keys) of a lane
    let krow = b.fma(Ty::U32, hi16, imm(8), l8);
    let kcol = b.mul(Ty::U32, mid, imm(8));
    let vrow = b.fma(Ty::U32, mid, imm(8), l8);
    let vcol = b.mul(Ty::U32, hi16, imm(8));
    let ninit = d / 8;
    let cfrag = Frag {
        kind,
        role: Role::C,
    };
    let mut init = vec![];
    for v in [f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0, 0.0] {
        init.push(b.mov(Ty::F32, fimm(v)));
    }
    let z = b.mov(Ty::F32, fimm(0.0));
    for _ in 0..ninit {
        init.push(b.frag_make(cfrag, &[z.into(), z.into(), z.into(), z.into()]));
    }
    let kend = super::attention::key_end(&mut b, causal, q0, BM, sk_v);
    let c2 = (scale * LOG2E) as f32;
    let fin = b.for_(
        imm(0),
        kend,
        imm(i64::from(BN)),
        &init,
        None,
        |b, k0, cv| {
            let (m, l, o) = ([cv[0], cv[1]], [cv[2], cv[3]], &cv[4..]);
            stage(b, kp, kbase, k0, sk_v, BN, d, sks, tid);
            stage(b, vp, kbase, k0, sk_v, BN, d, svs, tid);
            b.barrier();
            // S = Q·Kᵀ: BN / 8 accumulator fragments
            let mut s: Vec<Value> = (0..BN / 8)
                .map(|_| b.frag_make(cfrag, &[z.into(), z.into(), z.into(), z.into()]))
                .collect();
            for pair in 0..BN / 16 {
                for (kk, &qa) in qf.iter().enumerate() {
                    let row = b.add(Ty::U32, krow, imm(i64::from(pair * 16)));
                    let col = b.add(Ty::U32, kcol, imm(kk as i64 * 16));
                    let addr = b.offset(sks, imm(0), row, col);
                    let kf = b.ldmatrix(false, addr, vec![bfrag.clone(), bfrag.clone()]);
                    for h in 0..2 {
                        let i = (pair * 2 + h) as usize;
                        s[i] = b.mma(kind, qa, kf[h as usize], s[i]);
                    }
                }
            }
            // scaled, masked scores of rows r0 (elements 0, 1) and r1 (2, 3)
            let mut t: Vec<[Value; 4]> = vec![];
            for (j, &sf) in s.iter().enumerate() {
                let key = b.fma(Ty::U32, tq, imm(2), k0);
                let key = b.add(Ty::U32, key, imm(j as i64 * 8));
                let vals: [Value; 4] = std::array::from_fn(|e| {
                    let x = b.frag_get(sf, e as u8);
                    let x = b.mul(Ty::F32, x, fimm(c2));
                    let kj = b.add(Ty::U32, key, imm((e % 2) as i64));
                    let mut ok = b.cmp(Cmp::Lt, Ty::U32, kj, sk_v);
                    if causal {
                        let row = if e < 2 { r0 } else { r1 };
                        let c = b.cmp(Cmp::Le, Ty::U32, kj, row);
                        ok = b.bin(BinOp::And, Ty::Pred, ok, c);
                    }
                    b.select(Ty::F32, ok, x, fimm(f32::NEG_INFINITY))
                });
                t.push(vals);
            }
            let mut next = vec![];
            let mut alphas = [z; 2];
            let mut muses = [z; 2];
            let mut sums = [z; 2];
            for h in 0..2 {
                let mut mx = t[0][2 * h];
                for (j, v) in t.iter().enumerate() {
                    for e in [2 * h, 2 * h + 1] {
                        if j > 0 || e != 2 * h {
                            mx = b.bin(BinOp::Max, Ty::F32, mx, v[e]);
                        }
                    }
                }
                let mx = quad(b, BinOp::Max, mx);
                let mnew = b.bin(BinOp::Max, Ty::F32, m[h], mx);
                let none = b.cmp(Cmp::Eq, Ty::F32, mnew, fimm(f32::NEG_INFINITY));
                muses[h] = b.select(Ty::F32, none, fimm(0.0), mnew);
                let a = b.sub(Ty::F32, m[h], muses[h]);
                alphas[h] = b.unary(UnOp::Ex2Approx, Ty::F32, a);
                next.push(mnew);
            }
            // P = 2^(t − m), its row sums, and its A fragments (two key blocks of 8 per 16)
            let mut pv: Vec<[Value; 4]> = vec![];
            for v in &t {
                pv.push(std::array::from_fn(|e| {
                    let x = b.sub(Ty::F32, v[e], muses[e / 2]);
                    b.unary(UnOp::Ex2Approx, Ty::F32, x)
                }));
            }
            for h in 0..2 {
                let mut acc = pv[0][2 * h];
                for (j, v) in pv.iter().enumerate() {
                    for e in [2 * h, 2 * h + 1] {
                        if j > 0 || e != 2 * h {
                            acc = b.add(Ty::F32, acc, v[e]);
                        }
                    }
                }
                sums[h] = quad(b, BinOp::Add, acc);
            }
            for h in 0..2 {
                next.push(b.fma(Ty::F32, l[h], alphas[h], sums[h]));
            }
            let pa: Vec<Value> = (0..BN / 16)
                .map(|kc| {
                    let (lo, hi) = (&pv[2 * kc as usize], &pv[2 * kc as usize + 1]);
                    let regs = [
                        b.pack(pack, lo[1], lo[0]),
                        b.pack(pack, lo[3], lo[2]),
                        b.pack(pack, hi[1], hi[0]),
                        b.pack(pack, hi[3], hi[2]),
                    ];
                    let regs: Vec<Operand> = regs.into_iter().map(Operand::from).collect();
                    b.frag_make(
                        Frag {
                            kind,
                            role: Role::A,
                        },
                        &regs,
                    )
                })
                .collect();
            // O = O·alpha + P·V
            let mut on: Vec<Value> = o
                .iter()
                .map(|&f| {
                    let e: Vec<Operand> = (0..4)
                        .map(|i| {
                            let x = b.frag_get(f, i);
                            b.mul(Ty::F32, x, alphas[i as usize / 2]).into()
                        })
                        .collect();
                    b.frag_make(cfrag, &e)
                })
                .collect();
            for (kc, &a) in pa.iter().enumerate() {
                for pair in 0..d / 16 {
                    let row = b.add(Ty::U32, vrow, imm(kc as i64 * 16));
                    let col = b.add(Ty::U32, vcol, imm(i64::from(pair * 16)));
                    let addr = b.offset(svs, imm(0), row, col);
                    let vf = b.ldmatrix(true, addr, vec![bfrag.clone(), bfrag.clone()]);
                    for h in 0..2 {
                        let i = (pair * 2 + h) as usize;
                        on[i] = b.mma(kind, a, vf[h as usize], on[i]);
                    }
                }
            }
            b.barrier();
            next.into_iter().chain(on).map(Operand::from).collect()
        },
    );
    // O / l, stored as pairs of 16-bit values (or one by one in another dtype)
    let obase = b.mul(Ty::U32, qb, imm(i64::from(d)));
    let mut inv = [z; 2];
    for h in 0..2 {
        let l = fin[2 + h];
        let pos = b.cmp(Cmp::Gt, Ty::F32, l, fimm(0.0));
        let r = b.unary(UnOp::Rcp, Ty::F32, l);
        inv[h] = b.select(Ty::F32, pos, r, fimm(0.0));
    }
    let od = tk.ty.dtype;
    for (j, &f) in fin[4..].iter().enumerate() {
        let col = b.fma(Ty::U32, tq, imm(2), imm(j as i64 * 8));
        for (h, row) in [r0, r1].into_iter().enumerate() {
            let ok = b.cmp(Cmp::Lt, Ty::U32, row, sq_v);
            let idx = b.fma(Ty::U32, row, imm(i64::from(d)), obase);
            let idx = b.add(Ty::U32, idx, col);
            let x0 = b.frag_get(f, 2 * h as u8);
            let x1 = b.frag_get(f, 2 * h as u8 + 1);
            let y0 = b.mul(Ty::F32, x0, inv[h]);
            let y1 = b.mul(Ty::F32, x1, inv[h]);
            if matches!(od, DType::BF16 | DType::F16) {
                let pk = if od == DType::BF16 {
                    Pack::BF16x2
                } else {
                    Pack::F16x2
                };
                let v = b.pack(pk, y1, y0);
                b.store(Ty::B32, op, idx, &[v.into()], Some(ok));
            } else {
                super::blocks::store_elem(&mut b, od, op, idx, y0, Some(ok));
                let idx1 = b.add(Ty::U32, idx, imm(1));
                super::blocks::store_elem(&mut b, od, op, idx1, y1, Some(ok));
            }
        }
    }
    Ok(b.finish())
}
