//! Tensor-core matmul, fp32 accumulators: BM×BN block tile, k-step BK, warps of WM×WN
//! (`m16n8k16` bf16/fp16 or `m16n8k8` tf32 tiles), `stages` shared buffers per operand.
//!
//! Pipeline (stages S ≥ 2): the prologue issues k-tiles 0..S−2 (one `commit` each);
//! iteration kt waits for its tile (`wait S−2`), `barrier` (every thread's copies of tile kt
//! are visible and every thread is done reading tile kt−1), issues tile kt+S−1 into the
//! buffer tile kt−1 used, commits, then runs the MMAs on buffer kt mod S while the later
//! tiles load. With S = 1: copy, wait 0, barrier, compute, barrier.
//! Fragments: A by `ldmatrix.x4`, B by `ldmatrix.x4.trans` (16-bit) or two `ld.shared.b32`
//! (tf32); the accumulators are C fragments carried through the k loop. Tiles are
//! zero-filled past the matrix edges, so any M, N, K works.
//!
//! A norm prologue ([`super::prologue`]): the block's row statistics after the first copies
//! are issued, and each A tile normalised in shared memory after the iteration's `barrier`
//! (then a `barrier`), before the fragments are loaded.
//!
//! Parameters: a, b, [norm_w, norm_b], epi…, c, m, n, k.

use super::blocks::{add_imm, round_tf32, select_view};
use super::epilogue::{
    block_tiles, ldmatrix_swizzle, log2, matmul_params, matmul_parts, stage_of, store_acc,
    store_row_vec, VecStore,
};
use super::{no, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, CacheOp, Cmp, MmaKind, Ty};
use crate::tile::build::{fimm, frag, imm, Builder};
use crate::tile::ir::{Frag, Kernel, Operand, Role, Value};
use crate::tile::{MatmulBatch, TileKernel};

/// One operand's tile copy (global → one stage of shared memory).
///
/// The tile is `rows × cols` elements of a row-major global matrix with `pitch` elements per
/// row; k-tile `kt` starts at (`row0 + kt·drow`, `col0 + kt·dcol`) (A moves along columns, B
/// along rows). Threads copy chunks of `ve` elements (`ve·esize` bytes: 16, 8 or 4 with
/// `cp.async`, or one element by a global load and a shared store when rows are not 4-byte
/// aligned); chunk `tid + i·T` is row `(c / cpr)`, column `(c % cpr)·ve` with
/// `cpr = cols / ve`. A chunk is either wholly inside the matrix or wholly outside (the chunk
/// size divides the pitch, which is the column bound), so the mask is per chunk: copies
/// outside are zero-filled (`src-size` 0) or, for element copies, store zero.
struct MmaCopy {
    rows: i64,
    cols: i64,
    ve: i64,
    esize: i64,
    /// A view at this thread's first chunk of k-tile 0.
    ptr0: Value,
    /// The operand's view (the valid source of a zero-fill copy).
    any: Value,
    /// Row (elements) of this thread's first chunk inside the tile.
    r0: Value,
    /// Shared address of this thread's first chunk in stage 0.
    dst0: Value,
    /// Row pitch in elements and the global bounds (rows, cols).
    pitch: Value,
    /// Elements from one k-tile to the next when the tile moves along rows (`drow·pitch`).
    kstride: Option<Value>,
    bound_rows: Value,
    bound_cols: Value,
    /// The matrix row and column of this thread's first chunk of k-tile 0, and the tile's
    /// move per k-tile (elements).
    grow: Value,
    gcol: Value,
    drow: i64,
    dcol: i64,
    /// Chunk slots per thread and their (row, column-chunk) deltas from the first.
    slots: Vec<(i64, i64)>,
    /// Elements from one slot's source to the next when every step is `slots[1]` (one
    /// register, and each source one add from the previous, whatever the number of slots).
    slot_step: Option<Value>,
    /// Whether slot 0 may lie past the tile (fewer chunks than threads).
    partial: bool,
    /// Chunks of 4 bytes or more move with `cp.async` (else a load and a shared store).
    async_copy: bool,
}

impl MmaCopy {
    #[allow(clippy::too_many_arguments)]
    fn new(
        b: &mut Builder,
        tid: Value,
        threads: i64,
        [rows, cols]: [i64; 2],
        ve: i64,
        esize: i64,
        base: Value,
        [pitch, bound_rows, bound_cols]: [Value; 3],
        [orow, ocol]: [Option<Value>; 2],
        [drow, dcol]: [i64; 2],
        smem: Value,
        swizzled: Option<Value>,
    ) -> MmaCopy {
        let cpr = cols / ve;
        let total = rows * cpr;
        let r0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(cpr.trailing_zeros() as i64));
        let cc = b.bin(BinOp::And, Ty::B32, tid, imm(cpr - 1));
        let c0 = b.mul(Ty::U32, cc, imm(ve));
        let slots = copy_slots(rows, cols, ve, threads);
        let uniform = slots.len() > 1
            && slots
                .windows(2)
                .all(|w| (w[1].0 - w[0].0, w[1].1 - w[0].1) == slots[1]);
        let slot_step =
            uniform.then(|| b.fma(Ty::U32, pitch, imm(slots[1].0), imm(slots[1].1 * ve)));
        let gr = match orow {
            Some(o) => b.add(Ty::U32, o, r0),
            None => r0,
        };
        let gc = match ocol {
            Some(o) => b.add(Ty::U32, o, c0),
            None => c0,
        };
        let idx = b.fma(Ty::U32, gr, pitch, gc);
        let ptr0 = b.advance(base, idx);
        let kstride = (drow != 0).then(|| b.mul(Ty::U32, pitch, imm(drow)));
        // swizzled, every slot keeps the first one's pattern ([`swizzle_copies`])
        let dst0 = match swizzled {
            None => {
                let so = b.fma(Ty::U32, r0, imm(cols), c0);
                b.fma(Ty::U32, so, imm(esize), smem)
            }
            Some(buf) => b.offset(buf, imm(0), r0, c0),
        };
        MmaCopy {
            rows,
            cols,
            ve,
            esize,
            ptr0,
            any: base,
            r0,
            dst0,
            pitch,
            kstride,
            bound_rows,
            bound_cols,
            grow: gr,
            gcol: gc,
            drow,
            dcol,
            slots,
            slot_step,
            partial: total < threads,
            async_copy: true,
        }
    }

    /// Copies k-tile `kt` into the stage at byte offset `stage_off` (only when `has`).
    fn issue(&self, b: &mut Builder, kt: Value, stage_off: Value, has: Option<Value>) {
        let dst = b.add(Ty::U32, self.dst0, stage_off);
        // The chunk's row and column in the matrix, and the offset (elements) of k-tile kt
        // from k-tile 0: kt·kstride or kt·dcol (one of drow, dcol is 0).
        let (row, col) = (self.grow, self.gcol);
        let (row, col, koff) = if let Some(ks) = self.kstride {
            let kr = b.mul(Ty::U32, kt, imm(self.drow));
            let row = b.add(Ty::U32, row, kr);
            (row, col, b.mul(Ty::U32, kt, ks))
        } else {
            let kc = b.mul(Ty::U32, kt, imm(self.dcol));
            let col = b.add(Ty::U32, col, kc);
            (row, col, kc)
        };
        let src0 = b.advance(self.ptr0, koff);
        let vb = self.ve * self.esize;
        let mut prev: Option<Value> = None;
        for &(dr, dc) in &self.slots {
            let r = add_imm(b, row, dr);
            let c = add_imm(b, col, dc * self.ve);
            let r_ok = b.cmp(Cmp::Lt, Ty::U32, r, self.bound_rows);
            let c_ok = b.cmp(Cmp::Lt, Ty::U32, c, self.bound_cols);
            let ok = b.bin(BinOp::And, Ty::Pred, r_ok, c_ok);
            let mut guard = has;
            if self.partial {
                let tr = add_imm(b, self.r0, dr);
                let in_tile = b.cmp(Cmp::Lt, Ty::U32, tr, imm(self.rows));
                guard = Some(match guard {
                    Some(g) => b.bin(BinOp::And, Ty::Pred, g, in_tile),
                    None => in_tile,
                });
            }
            let src = match (self.slot_step, prev) {
                _ if dr == 0 && dc == 0 => src0,
                (Some(step), Some(p)) => b.advance(p, step),
                _ => {
                    let goff = b.fma(Ty::U32, self.pitch, imm(dr), imm(dc * self.ve));
                    b.advance(src0, goff)
                }
            };
            prev = Some(src);
            let soff = (dr * self.cols + dc * self.ve) * self.esize;
            if vb >= 4 && !self.async_copy {
                // `schedule.async_copy(False)`: a vector load (0 past the edges) and a shared
                // store of the chunk's 32-bit words
                let zeros = vec![imm(0); (vb / 4) as usize];
                let ld_ok = match guard {
                    Some(g) => b.bin(BinOp::And, Ty::Pred, g, ok),
                    None => ok,
                };
                let v = b.load(Ty::B32, src, imm(0), Some(ld_ok), &zeros);
                let v: Vec<Operand> = v.into_iter().map(Operand::from).collect();
                let d = add_imm(b, dst, soff);
                b.store_shared(Ty::B32, d, 0, &v, guard);
            } else if vb >= 4 {
                let src = select_view(b, ok, src, self.any);
                let size = b.select(Ty::U32, ok, imm(vb), imm(0));
                let d = add_imm(b, dst, soff);
                let cache = if vb == 16 { CacheOp::Cg } else { CacheOp::Ca };
                b.copy_async(cache, vb as u32, d, src, imm(0), Some(size.into()), guard);
            } else {
                let ty = if self.esize == 2 { Ty::B16 } else { Ty::B32 };
                let ld_ok = match guard {
                    Some(g) => b.bin(BinOp::And, Ty::Pred, g, ok),
                    None => ok,
                };
                let v = b.load(ty, src, imm(0), Some(ld_ok), &[imm(0)])[0];
                b.store_shared(ty, dst, soff as i32, &[v.into()], guard);
            }
        }
    }
}

/// The (row, column-chunk) deltas of a thread's chunk slots from its first: chunk `tid + i·T`
/// of a `rows × cols` tile copied in chunks of `ve` elements.
fn copy_slots(rows: i64, cols: i64, ve: i64, threads: i64) -> Vec<(i64, i64)> {
    let cpr = cols / ve;
    let total = rows * cpr;
    (0..((total + threads - 1) / threads).max(1))
        .map(|i| {
            let c = i * threads;
            (c / cpr, c % cpr)
        })
        .collect()
}

/// Whether a tile's copies can write its swizzled layout at no cost: 16-byte chunks (a
/// chunk is one swizzle unit) and every slot a whole number of swizzle periods (8 rows, 8
/// chunks) from the first, so one address per thread serves them all at constant offsets.
/// Otherwise the buffer stays unswizzled (each slot would hold its own address register).
fn swizzle_copies(rows: i64, cols: i64, ve: i64, esize: i64, threads: i64) -> bool {
    ve * esize == 16
        && copy_slots(rows, cols, ve, threads)
            .iter()
            .all(|&(dr, dc)| dr % 8 == 0 && dc % 8 == 0)
}

/// The widest copy (elements) that keeps every chunk of a row aligned: 16, 8 or 4 bytes when
/// the row length allows it, else one element (synchronous copies).
fn mma_chunk(pitch: u32, esize: i64, cols: i64) -> i64 {
    for bytes in [16, 8, 4] {
        let ve = bytes / esize;
        if ve >= 1 && i64::from(pitch) % ve == 0 && cols % ve == 0 {
            return ve;
        }
    }
    1
}

#[allow(clippy::too_many_arguments)]
pub fn matmul_mma(
    g: &Graph,
    tk: &TileKernel,
    dims: [u32; 3],
    tile: [u32; 3],
    warp: [u32; 2],
    stages: u32,
    kind: MmaKind,
    async_copy: bool,
    batch: MatmulBatch,
) -> R<Kernel> {
    let (ad, bd, steps) = matmul_parts(g, tk)?;
    let tf32 = kind == MmaKind::M16n8k8Tf32;
    let esize: i64 = if tf32 { 4 } else { 2 };
    let kstep: i64 = if tf32 { 8 } else { 16 };
    let [bm_, bn_, bk_] = tile;
    let [wm_, wn_] = warp;
    if wn_ % 16 != 0 || wm_ % 16 != 0 || bk_ % 16 != 0 || stages == 0 {
        return no("warp tiles that are not multiples of 16");
    }
    let (bmi, bni, bki) = (i64::from(bm_), i64::from(bn_), i64::from(bk_));
    let (wmi, wni) = (i64::from(wm_), i64::from(wn_));
    let si = i64::from(stages);
    let warps_n = bni / wni;
    let threads = ((bmi / wmi) * warps_n * 32) as u32;
    let ti = i64::from(threads);
    let a_stage = bmi * bki * esize;
    let b_stage = bki * bni * esize;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, [threads, 1, 1]);
    let p = matmul_params(&mut b, g, tk, (ad, bd), &steps, dims, batch)?;
    let (m, n, k) = (p.m, p.n, p.k);
    // A is read by ldmatrix (both kinds), B by ldmatrix.trans (16-bit) or by 32-bit loads
    // (tf32, left unswizzled)
    let [_, dn, dk] = dims;
    let (a_ve, b_ve) = (mma_chunk(dk, esize, bki), mma_chunk(dn, esize, bni));
    // Swizzled shared tiles (conflict-free ldmatrix) where the copies allow it; B's n-tile
    // pairs are XOR steps only when the warp's columns are a power of two.
    let a_swz = ldmatrix_swizzle((bki * esize) as u32).is_some()
        && swizzle_copies(bmi, bki, a_ve, esize, ti);
    let b_swz = !tf32
        && wn_.is_power_of_two()
        && ldmatrix_swizzle(bn_ * 2).is_some()
        && swizzle_copies(bki, bni, b_ve, esize, ti);
    let t = block_tiles(&mut b, tile, esize as u32, stages, [a_swz, b_swz]);
    let (tid, bm, bn, sa0, sb0) = (t.tid, t.bm, t.bn, t.sa0, t.sb0);
    let swz = |buf: Value, on: bool| on.then_some(buf);
    let mut a_copy = MmaCopy::new(
        &mut b,
        tid,
        ti,
        [bmi, bki],
        a_ve,
        esize,
        p.a,
        [k, m, k],
        [Some(bm), None],
        [0, bki],
        sa0,
        swz(t.sa, a_swz),
    );
    let mut b_copy = MmaCopy::new(
        &mut b,
        tid,
        ti,
        [bki, bni],
        b_ve,
        esize,
        p.b,
        [n, k, n],
        [None, Some(bn)],
        [bki, 0],
        sb0,
        swz(t.sb, b_swz),
    );
    a_copy.async_copy = async_copy;
    b_copy.async_copy = async_copy;
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp_id = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let wm = b.bin(BinOp::Div, Ty::U32, warp_id, imm(warps_n));
    let wn = b.bin(BinOp::Rem, Ty::U32, warp_id, imm(warps_n));
    // ldmatrix row addresses: A lane l → row l%16 of the warp's m-tile, 16-byte column l/16.
    let l16 = b.bin(BinOp::And, Ty::B32, lane, imm(15));
    let lhi = b.bin(BinOp::Shr, Ty::U32, lane, imm(4));
    let arow = b.fma(Ty::U32, wm, imm(wmi), l16);
    // A's ldmatrix address of k-step 0 in stage 0. Swizzled, the buffer is aligned to its
    // power-of-two pitch, so the 16-byte chunk is address bits 4.. and k-step ks (chunk
    // 2·ks further, whose bits this lane's chunk lacks) is the address XOR 32·ks; m-tiles
    // (16 rows) and stages are whole periods of the swizzle, plain offsets.
    let a_ld = if a_swz {
        let lcol = b.mul(Ty::U32, lhi, imm(16 / esize));
        b.offset(t.sa, imm(0), arow, lcol)
    } else {
        let a_ld = b.fma(Ty::U32, arow, imm(bki * esize), sa0);
        b.fma(Ty::U32, lhi, imm(16), a_ld)
    };
    let b_ld = if tf32 {
        // b0 = B[k = l%4][n = l/4], b1 = B[k = l%4 + 4][n = l/4] of each 8×8 (k×n) tile.
        let gq = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
        let t4 = b.bin(BinOp::And, Ty::B32, lane, imm(3));
        let col = b.fma(Ty::U32, wn, imm(wni), gq);
        let off = b.fma(Ty::U32, t4, imm(bni), col);
        b.fma(Ty::U32, off, imm(4), sb0)
    } else {
        let l8 = b.bin(BinOp::And, Ty::B32, lane, imm(7));
        let l8hi = b.bin(BinOp::Shr, Ty::U32, lane, imm(3));
        let l8hi = b.bin(BinOp::And, Ty::B32, l8hi, imm(1));
        let brow = b.fma(Ty::U32, l8hi, imm(8), l8);
        let bcol = b.mul(Ty::U32, wn, imm(wni));
        let bcol = b.fma(Ty::U32, lhi, imm(8), bcol);
        if b_swz {
            // as for A: n-tile pair np is the address XOR 32·np, k-steps are offsets
            b.offset(t.sb, imm(0), brow, bcol)
        } else {
            let b_ld = b.fma(Ty::U32, brow, imm(bni * 2), sb0);
            b.fma(Ty::U32, bcol, imm(2), b_ld)
        }
    };
    let (mt_n, nt_n) = ((wmi / 16) as usize, (wni / 8) as usize);
    let cfrag = Frag {
        kind,
        role: Role::C,
    };
    let zero_acc = |b: &mut Builder| -> Vec<Value> {
        (0..mt_n * nt_n)
            .map(|_| b.frag_make(cfrag, &[fimm(0.0); 4]))
            .collect()
    };
    let mut acc0 = match p.norm {
        None => zero_acc(&mut b),
        Some(_) => vec![],
    };
    let nk = b.add(Ty::U32, k, imm(bki - 1));
    let nk = b.bin(BinOp::Shr, Ty::U32, nk, imm(log2(bk_)));
    let issue = |b: &mut Builder, kt: Value, has: Option<Value>| {
        let st = stage_of(b, stages, kt);
        let aoff = b.mul(Ty::U32, st, imm(a_stage));
        let boff = b.mul(Ty::U32, st, imm(b_stage));
        a_copy.issue(b, kt, aoff, has);
        b_copy.issue(b, kt, boff, has);
        if async_copy {
            b.commit();
        }
    };
    for s in 0..si - 1 {
        let kt = b.mov(Ty::U32, imm(s));
        let has = b.cmp(Cmp::Lt, Ty::U32, kt, nk);
        issue(&mut b, kt, Some(has));
    }
    // a norm prologue: the rows' statistics while the first tiles load
    let stats = p
        .norm
        .as_ref()
        .map(|nm| nm.stats(&mut b, p.a, [m, k], bm, tid, ti, bmi));
    let a_elem = if tf32 { Ty::F32 } else { Ty::B16 };
    // with a prologue the accumulators are made after the statistics (not live across them)
    if p.norm.is_some() {
        acc0 = zero_acc(&mut b);
    }
    // Rounds the registers of a fragment loaded from fp32 data to tf32.
    let to_tf32 = |b: &mut Builder, f: Value, role: Role, n: u8| -> Value {
        let regs: Vec<Operand> = (0..n)
            .map(|i| {
                let x = b.frag_get(f, i);
                round_tf32(b, x).into()
            })
            .collect();
        b.frag_make(Frag { kind, role }, &regs)
    };
    let mut norm_err = None;
    let acc = b.for_(imm(0), nk, imm(1), &acc0, Some(stages), |b, kt, acc| {
        if stages >= 2 {
            if async_copy {
                b.wait(stages - 2);
            }
            b.barrier();
            let next = b.add(Ty::U32, kt, imm(si - 1));
            let has = b.cmp(Cmp::Lt, Ty::U32, next, nk);
            issue(b, next, Some(has));
        } else {
            issue(b, kt, None);
            if async_copy {
                b.wait(0);
            }
            b.barrier();
        }
        let st = stage_of(b, stages, kt);
        if let (Some(nm), Some(stats)) = (&p.norm, &stats) {
            let tile = (t.sa, a_elem);
            if let Err(e) = nm.normalize(b, stats, tile, st, kt, k, ti, [bmi, bki], stages < 2) {
                norm_err = Some(e);
            }
        }
        let a_base = b.fma(Ty::U32, st, imm(a_stage), a_ld);
        let b_base = b.fma(Ty::U32, st, imm(b_stage), b_ld);
        // B's address of each n-tile pair (16 columns), and the bytes still to add
        let b_np: Vec<(Value, i64)> = (0..wni / 16)
            .map(|np| match np {
                0 => (b_base, 0),
                _ if b_swz => (b.bin(BinOp::Xor, Ty::B32, b_base, imm(np * 32)), 0),
                _ => (b_base, np * 32),
            })
            .collect();
        let mut acc = acc.to_vec();
        for ks in 0..bki / kstep {
            let mut af = vec![];
            let (a_ks, a_off) = match ks {
                0 => (a_base, 0),
                _ if a_swz => (b.bin(BinOp::Xor, Ty::B32, a_base, imm(ks * 32)), 0),
                _ => (a_base, ks * 32),
            };
            for mt in 0..mt_n as i64 {
                let addr = add_imm(b, a_ks, mt * 16 * bki * esize + a_off);
                let f = b.ldmatrix(false, addr, vec![frag(kind, Role::A)])[0];
                af.push(if tf32 && ad == DType::F32 {
                    to_tf32(b, f, Role::A, 4)
                } else {
                    f
                });
            }
            let mut bf = vec![];
            if tf32 {
                for nt in 0..nt_n as i64 {
                    let off = (ks * 8 * bni + nt * 8) * 4;
                    let lo = b.load_shared(Ty::B32, b_base, off as i32, 1)[0];
                    let hi = b.load_shared(Ty::B32, b_base, (off + 4 * bni * 4) as i32, 1)[0];
                    let f = [lo, hi].map(|x| {
                        if bd == DType::F32 {
                            round_tf32(b, x).into()
                        } else {
                            Operand::from(x)
                        }
                    });
                    bf.push(b.frag_make(
                        Frag {
                            kind,
                            role: Role::B,
                        },
                        &f,
                    ));
                }
            } else {
                for &(b_at, b_off) in &b_np {
                    let addr = add_imm(b, b_at, ks * 16 * bni * 2 + b_off);
                    let two = vec![frag(kind, Role::B), frag(kind, Role::B)];
                    bf.extend(b.ldmatrix(true, addr, two));
                }
            }
            for (mt, &a_frag) in af.iter().enumerate() {
                for (nt, &b_frag) in bf.iter().enumerate() {
                    let c = &mut acc[mt * nt_n + nt];
                    *c = b.mma(kind, a_frag, b_frag, *c);
                }
            }
        }
        if stages < 2 {
            b.barrier();
        }
        acc.into_iter().map(Operand::from).collect()
    });
    if let Some(e) = norm_err {
        return Err(e);
    }
    let gq = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
    let t = b.bin(BinOp::And, Ty::B32, lane, imm(3));
    let row0 = b.fma(Ty::U32, wm, imm(wmi), bm);
    let row0 = b.add(Ty::U32, row0, gq);
    let col0 = b.fma(Ty::U32, wn, imm(wni), bn);
    if let Some(vs) = VecStore::new(p.out_dtype, dims[1], nt_n) {
        for mt in 0..mt_n {
            for half in 0..2u8 {
                b.at(tk.span);
                let row = b.add(Ty::U32, row0, imm(mt as i64 * 16 + i64::from(half) * 8));
                let row_ok = b.cmp(Cmp::Lt, Ty::U32, row, m);
                let tiles = &acc[mt * nt_n..(mt + 1) * nt_n];
                store_row_vec(&mut b, &p, tk, &vs, tiles, half, t, row, row_ok, col0)?;
            }
        }
        return Ok(b.finish());
    }
    let col0 = b.fma(Ty::U32, t, imm(2), col0);
    for mt in 0..mt_n as i64 {
        for half in 0..2i64 {
            b.at(tk.span);
            let row = b.add(Ty::U32, row0, imm(mt * 16 + half * 8));
            let row_ok = b.cmp(Cmp::Lt, Ty::U32, row, m);
            for nt in 0..nt_n as i64 {
                for e in 0..2i64 {
                    b.at(tk.span);
                    let col = b.add(Ty::U32, col0, imm(nt * 8 + e));
                    let f = acc[(mt * nt_n as i64 + nt) as usize];
                    let r = b.frag_get(f, (half * 2 + e) as u8);
                    store_acc(&mut b, &p, tk, Ty::F32, r, row, row_ok, col)?;
                }
            }
        }
    }
    Ok(b.finish())
}
