//! FlashAttention forward on the FMA units: a block of 4 warps per `bm` query rows, key tiles
//! of 32 keys (lane ↔ key for the scores, lane ↔ output columns for the accumulator) staged
//! through shared memory, online softmax (the running max, sum and accumulator are carried
//! through the key loop; the accumulator is rescaled when the max grows).
//! In fp32 (`ex2.approx`, scores in base-2 units), or in fp64 when an operand is fp64 (as the
//! cpu computes): fp64 tiles, the fp64 `e^x` and `ln x` sequences, scores in natural units.
//! Parameters: q, k, v, o, sq, sk; the batch is grid y.

use super::blocks::{fconst, load_elem, store_int_or};
use super::{no, ParamSet, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, Cmp, Dim, SReg, ShflMode, Ty, UnOp};
use crate::tile::build::{imm, Builder};
use crate::tile::ir::{Kernel, Layout, MathFn, Operand, ParamRole, SharedBuf, Type, Value};
use crate::tile::{AttnBatch, TileKernel};

const LOG2E: f64 = std::f64::consts::LOG2_E;

/// The bytes of one `ty` value.
pub(super) fn bytes(ty: Ty) -> u32 {
    ty.bits() / 8
}

/// A shared buffer of `rows × pitch` values of `ty`.
pub(super) fn fbuf(ty: Ty, rows: u32, pitch: u32) -> SharedBuf {
    SharedBuf {
        elem_bytes: bytes(ty),
        shape: vec![1, rows, pitch],
        layout: Layout {
            pitch: pitch * bytes(ty),
            swizzle: None,
        },
        align: 16,
    }
}

/// The compute type of an attention kernel whose operands and result have these dtypes:
/// fp64 when one is fp64, else fp32.
pub fn compute_ty(dtypes: &[DType]) -> Ty {
    if dtypes.contains(&DType::F64) {
        Ty::F64
    } else {
        Ty::F32
    }
}

/// How a kernel of compute type `ty` takes exponentials: fp32 in base 2 (`ex2.approx` of
/// scores pre-multiplied by log2 e), fp64 in base e (the fp64 `e^x` sequence).
#[derive(Copy, Clone)]
pub(super) struct Exp(pub Ty);

impl Exp {
    /// The factor taking natural-log units to this kernel's units.
    pub fn units(self) -> f64 {
        if self.0 == Ty::F64 {
            1.0
        } else {
            LOG2E
        }
    }
    /// The exponential in this kernel's units.
    pub fn exp(self, b: &mut Builder, x: Value) -> Value {
        if self.0 == Ty::F64 {
            b.math(MathFn::Exp, Ty::F64, &[x.into()])
        } else {
            b.unary(UnOp::Ex2Approx, Ty::F32, x)
        }
    }
    /// `ln x`, back in natural units, of a sum `x` in this kernel's units.
    pub fn ln(self, b: &mut Builder, m: Value, l: Value) -> Value {
        if self.0 == Ty::F64 {
            let lg = b.math(MathFn::Log, Ty::F64, &[l.into()]);
            b.add(Ty::F64, m, lg)
        } else {
            let lg = b.unary(UnOp::Lg2Approx, Ty::F32, l);
            let t = b.add(Ty::F32, m, lg);
            b.mul(Ty::F32, t, fconst(Ty::F32, std::f64::consts::LN_2))
        }
    }
}

/// Cooperative copy of a `[tile_rows, dim]` tile of a row-major `[.., dim]` tensor (rows from
/// `row0`, at most `nrows` rows, element `base` first) into `ty` shared memory at `dst` (row
/// pitch `pitch` values), zero-filled past the edge. `threads` threads, `tid` this thread.
#[allow(clippy::too_many_arguments)]
pub fn tile_to_shared(
    b: &mut Builder,
    ty: Ty,
    d: DType,
    src: Value,
    base: Value,
    row0: Value,
    nrows: Value,
    tile_rows: u32,
    dim: u32,
    pitch: u32,
    dst: Value,
    tid: Value,
    threads: u32,
) {
    let total = tile_rows * dim;
    let one = |b: &mut Builder, idx: Value, tail: bool| {
        let r = b.bin(BinOp::Div, Ty::U32, idx, imm(i64::from(dim)));
        let c = b.bin(BinOp::Rem, Ty::U32, idx, imm(i64::from(dim)));
        let gr = b.add(Ty::U32, row0, r);
        let mut ok = b.cmp(Cmp::Lt, Ty::U32, gr, nrows);
        let tail = tail.then(|| b.cmp(Cmp::Lt, Ty::U32, idx, imm(i64::from(total))));
        if let Some(t) = tail {
            ok = b.bin(BinOp::And, Ty::Pred, ok, t);
        }
        let gi = b.fma(Ty::U32, gr, imm(i64::from(dim)), base);
        let gi = b.add(Ty::U32, gi, c);
        let v = load_elem(b, ty, d, src, gi, Some(ok));
        let so = b.fma(Ty::U32, r, imm(i64::from(pitch)), c);
        let addr = b.fma(Ty::U32, so, imm(i64::from(bytes(ty))), dst);
        b.store_shared(ty, addr, 0, &[v.into()], tail);
    };
    let n = total.div_ceil(threads);
    // Up to 16 elements per thread unrolled; more in a loop of 8 per step (ptxas would keep
    // every unrolled load in flight at once and run out of registers).
    let looped = if n > 16 { n / 8 * 8 } else { 0 };
    if looped > 0 {
        let tail = !total.is_multiple_of(threads);
        b.for_rolled(
            imm(0),
            imm(i64::from(looped * threads)),
            imm(i64::from(8 * threads)),
            &[],
            |b, i0, _| {
                let first = b.add(Ty::U32, tid, i0);
                for j in 0..8 {
                    let idx = b.add(Ty::U32, first, imm(i64::from(j * threads)));
                    one(b, idx, tail);
                }
                vec![]
            },
        );
    }
    for i in looped..n {
        let idx = b.add(Ty::U32, tid, imm(i64::from(i * threads)));
        one(b, idx, (i + 1) * threads > total);
    }
}

/// This block's batch problem: grid y, or `y + grid_y·z` when there are more problems than
/// grid y takes (65535); the extra blocks of the last z row redo the last problem (they write
/// the same values again).
pub fn block_batch(b: &mut Builder, tk: &TileKernel) -> Value {
    let y = b.special(SReg::Ctaid(Dim::Y));
    if tk.grid[2] <= 1 {
        return y;
    }
    let z = b.special(SReg::Ctaid(Dim::Z));
    let i = b.fma(Ty::U32, z, imm(i64::from(tk.grid[1])), y);
    let last = match tk.shape {
        crate::tile::Shape::FlashAttention { batch, .. } => batch.saturating_sub(1),
        _ => u32::MAX,
    };
    b.bin(BinOp::Min, Ty::U32, i, imm(i64::from(last)))
}

/// The first element of this block's batch in each operand: (q, k, v, o).
fn batch_bases(
    b: &mut Builder,
    bz: Value,
    sq: Value,
    sk: Value,
    dq: u32,
    dv: u32,
    bcast: Option<&AttnBatch>,
) -> [Value; 4] {
    let (qb, kb, vb) = match bcast {
        None => (bz, bz, bz),
        Some(m) => {
            // each operand's batch from the output batch's coordinates
            let mut c = vec![bz; m.dims.len()];
            let mut rest = bz;
            for d in (1..m.dims.len()).rev() {
                let dd = i64::from(m.dims[d].max(1));
                c[d] = b.bin(BinOp::Rem, Ty::U32, rest, imm(dd));
                rest = b.bin(BinOp::Div, Ty::U32, rest, imm(dd));
            }
            if let Some(c0) = c.first_mut() {
                *c0 = rest;
            }
            let batch_of = |b: &mut Builder, st: &[u32]| {
                let mut acc = b.mov(Ty::U32, imm(0));
                for (cd, &s) in c.iter().zip(st) {
                    if s != 0 {
                        acc = b.fma(Ty::U32, *cd, imm(i64::from(s)), acc);
                    }
                }
                acc
            };
            (batch_of(b, &m.q), batch_of(b, &m.k), batch_of(b, &m.v))
        }
    };
    let rows = [(qb, sq, dq), (kb, sk, dq), (vb, sk, dv), (bz, sq, dv)];
    rows.map(|(batch, len, dim)| {
        let first = b.mul(Ty::U32, batch, len);
        b.mul(Ty::U32, first, imm(i64::from(dim)))
    })
}

/// Where a block's key loop ends: `sk`, or for a causal attention the first key past the
/// block's last query row (`min(q0 + bm, sk)`).
pub fn key_end(b: &mut Builder, causal: bool, q0: Value, bm: u32, sk: Value) -> Value {
    if causal {
        let e = b.add(Ty::U32, q0, imm(i64::from(bm)));
        b.bin(BinOp::Min, Ty::U32, e, sk)
    } else {
        sk
    }
}

/// Head dimensions up to this have their score and `P·V` loops unrolled; larger ones loop
/// over chunks (a fully unrolled loop of 160+ columns runs ptxas out of registers).
const UNROLLED: u32 = 128;

/// The largest power of two up to 32 dividing `d`: the columns of one score-loop step.
fn chunk(d: u32) -> u32 {
    1 << d.trailing_zeros().min(5)
}

/// `s[r] += Σ_c q[r][c] · k[lane][c]` over the columns `cols` (byte offsets from `qa` / `ka`;
/// `dq` values of `ty` per query row).
fn scores(
    b: &mut Builder,
    ty: Ty,
    qa: Value,
    ka: Value,
    dq: u32,
    cols: std::ops::Range<u32>,
    mut s: Vec<Value>,
) -> Vec<Value> {
    let eb = bytes(ty) as i32;
    for c in cols {
        let c = c as i32;
        let kv = b.load_shared(ty, ka, c * eb, 1)[0];
        for (r, sr) in s.iter_mut().enumerate() {
            let off = (r as i32 * dq as i32 + c) * eb;
            let qv = b.load_shared(ty, qa, off, 1)[0];
            *sr = b.fma(ty, qv, kv, *sr);
        }
    }
    s
}

/// `acc[r][t] += p_r[j0 + j] · v[j][lane + 32t]` for `j` in `keys` (row `j` of V at
/// `va + j·vpitch` values; `p_r` is lane `j0 + j`'s value of `pr[r]`).
#[allow(clippy::too_many_arguments)]
fn pv(
    b: &mut Builder,
    ty: Ty,
    pr: &[Value],
    va: Value,
    j0: Operand,
    vpitch: u32,
    dtv: usize,
    keys: std::ops::Range<u32>,
    mut acc: Vec<Value>,
) -> Vec<Value> {
    let eb = bytes(ty) as i32;
    for j in keys {
        let vv: Vec<Value> = (0..dtv as i32)
            .map(|t| {
                let off = (j as i32 * vpitch as i32 + t * 32) * eb;
                b.load_shared(ty, va, off, 1)[0]
            })
            .collect();
        let lane = match j0 {
            Operand::Imm(_) => imm(i64::from(j)),
            _ => b.add(Ty::U32, j0, imm(i64::from(j))).into(),
        };
        for (r, &prr) in pr.iter().enumerate() {
            let pj = b.shfl_typed(ShflMode::Idx, ty, prr, lane, imm(31));
            for (t, &v) in vv.iter().enumerate() {
                let x = &mut acc[r * dtv + t];
                *x = b.fma(ty, pj, v, *x);
            }
        }
    }
    acc
}

/// `s[r] = Σ_c a[r][c] · b[lane][c]` for the warp's `rows` rows: `a` row-major with `width`
/// values of `ty` per row from `ra`, this lane's row of `b` at `rb`. Unrolled up to
/// [`UNROLLED`] columns, a loop over column chunks past that.
pub(super) fn row_dots(
    b: &mut Builder,
    ty: Ty,
    ra: Value,
    rb: Value,
    width: u32,
    rows: usize,
) -> Vec<Value> {
    let zero: Vec<Value> = (0..rows).map(|_| b.mov(ty, fconst(ty, 0.0))).collect();
    let eb = i64::from(bytes(ty));
    if width <= UNROLLED {
        scores(b, ty, ra, rb, width, 0..width, zero)
    } else {
        // fully unrolled, ptxas runs out of registers
        let ch = chunk(width);
        b.for_rolled(
            imm(0),
            imm(i64::from(width) * eb),
            imm(i64::from(ch) * eb),
            &zero,
            |b, cb, s| {
                let qa = b.add(Ty::U32, ra, cb);
                let ka = b.add(Ty::U32, rb, cb);
                scores(b, ty, qa, ka, width, 0..ch, s.to_vec())
                    .into_iter()
                    .map(Operand::from)
                    .collect()
            },
        )
    }
}

/// `acc[r][t] += Σ_j w_r[j] · e[j][lane + 32t]` over the `bn` rows of a tile `e` in shared
/// memory (this lane's column at `ea`, `pitch` values of `ty` per row, `cols` ≤ 32·`per_row`
/// columns read); unrolled up to [`UNROLLED`] columns, a loop over groups of 8 rows past that.
#[allow(clippy::too_many_arguments)]
pub(super) fn weighted_rows(
    b: &mut Builder,
    ty: Ty,
    w: &[Value],
    ea: Value,
    pitch: u32,
    per_row: usize,
    cols: u32,
    bn: u32,
    acc: Vec<Value>,
) -> Vec<Value> {
    if cols <= UNROLLED {
        pv(b, ty, w, ea, imm(0), pitch, per_row, 0..bn, acc)
    } else {
        let keys = 8;
        b.for_rolled(
            imm(0),
            imm(i64::from(bn)),
            imm(i64::from(keys)),
            &acc,
            |b, j0, acc| {
                let va = b.fma(Ty::U32, j0, imm(i64::from(pitch * bytes(ty))), ea);
                pv(
                    b,
                    ty,
                    w,
                    va,
                    j0.into(),
                    pitch,
                    per_row,
                    0..keys,
                    acc.to_vec(),
                )
                .into_iter()
                .map(Operand::from)
                .collect()
            },
        )
    }
}

/// The FlashAttention kernel of `[batch, sq, dq] · [batch, sk, dq]ᵀ · [batch, sk, dv]`.
#[allow(clippy::too_many_arguments)]
pub fn build(
    g: &Graph,
    tk: &TileKernel,
    sq: u32,
    sk: u32,
    dq: u32,
    dv: u32,
    causal: bool,
    scale: f64,
    bm: u32,
    bn: u32,
    bcast: Option<&AttnBatch>,
    lse: bool,
) -> R<Kernel> {
    if lse && bcast.is_some() {
        return no("a log-sum-exp kernel of broadcast operands");
    }
    if bn != 32 || !bm.is_multiple_of(4) || bm == 0 {
        return no("flash attention tiles other than 4k×32");
    }
    let threads = 128u32;
    let rpw = (bm / 4) as usize;
    // the log-sum-exp kernel has no v: no accumulator
    let dv = if lse { 0 } else { dv };
    let dtv = dv.div_ceil(32) as usize;
    let vpitch = dv.next_multiple_of(32);
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, [threads, 1, 1]);
    let p = if lse {
        ParamSet::new(&mut b, g, tk, &["q", "k"], "lse")?
    } else {
        ParamSet::new(&mut b, g, tk, &["q", "k", "v"], "o")?
    };
    let (qp, kp, op) = (p.inputs[0], p.inputs[1], p.out);
    let (qd, kd) = (p.dtypes[0], p.dtypes[1]);
    let (vp, vd) = (p.inputs.get(2).copied(), p.dtypes.get(2).copied());
    let mut dts = p.dtypes.clone();
    dts.push(tk.ty.dtype);
    let ty = compute_ty(&dts);
    let ex = Exp(ty);
    let eb = i64::from(bytes(ty));
    let sq_v = b.param("sq", Type::Scalar(Ty::U32), ParamRole::Size(sq));
    let sk_v = b.param("sk", Type::Scalar(Ty::U32), ParamRole::Size(sk));
    let sqs = b.shared("smem_q", fbuf(ty, bm, dq));
    let sks = b.shared("smem_k", fbuf(ty, bn, dq + 1));
    let svs = (!lse).then(|| b.shared("smem_v", fbuf(ty, bn + 1, vpitch)));
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let bz = block_batch(&mut b, tk);
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let q0 = b.mul(Ty::U32, bx, imm(i64::from(bm)));
    let [qrow0, krow0, vrow0, orow0] = batch_bases(&mut b, bz, sq_v, sk_v, dq, dv, bcast);
    let sq0 = b.shared_addr(sqs);
    let sk0 = b.shared_addr(sks);
    let sv0 = svs.map(|s| b.shared_addr(s));
    tile_to_shared(
        &mut b, ty, qd, qp, qrow0, q0, sq_v, bm, dq, dq, sq0, tid, threads,
    );
    // this warp's query rows
    let wrow = b.mul(Ty::U32, warp, imm(rpw as i64));
    let qi: Vec<Value> = (0..rpw)
        .map(|r| {
            let t = b.add(Ty::U32, q0, wrow);
            b.add(Ty::U32, t, imm(r as i64))
        })
        .collect();
    let qrd = b.fma(Ty::U32, wrow, imm(i64::from(dq) * eb), sq0);
    let krd = b.fma(Ty::U32, lane, imm(i64::from(dq + 1) * eb), sk0);
    let vrd = sv0.map(|sv0| b.fma(Ty::U32, lane, imm(eb), sv0));
    // carried: m[rpw], l[rpw], acc[rpw][dtv]
    let (ninf, zero) = (fconst(ty, f64::NEG_INFINITY), fconst(ty, 0.0));
    let mut init = vec![];
    for _ in 0..rpw {
        init.push(b.mov(ty, ninf));
    }
    for _ in 0..rpw * (1 + dtv) {
        init.push(b.mov(ty, zero));
    }
    let kend = key_end(&mut b, causal, q0, bm, sk_v);
    let c2 = fconst(ty, scale * ex.units());
    let fin = b.for_(
        imm(0),
        kend,
        imm(i64::from(bn)),
        &init,
        None,
        |b, k0, cv| {
            let (m, rest) = cv.split_at(rpw);
            let (l, acc) = rest.split_at(rpw);
            tile_to_shared(
                b,
                ty,
                kd,
                kp,
                krow0,
                k0,
                sk_v,
                bn,
                dq,
                dq + 1,
                sk0,
                tid,
                threads,
            );
            if let (Some(vd), Some(vp), Some(sv0)) = (vd, vp, sv0) {
                tile_to_shared(
                    b, ty, vd, vp, vrow0, k0, sk_v, bn, dv, vpitch, sv0, tid, threads,
                );
            }
            b.barrier();
            // scores: lane j holds s[r] = q_r · k_j
            let s = row_dots(b, ty, qrd, krd, dq, rpw);
            let key = b.add(Ty::U32, k0, lane);
            let key_ok = b.cmp(Cmp::Lt, Ty::U32, key, sk_v);
            let mut next_m = vec![];
            let mut next_l = vec![];
            let mut next_acc: Vec<Value> = vec![];
            let mut pr = vec![];
            for r in 0..rpw {
                let mut ok = key_ok;
                if causal {
                    let c = b.cmp(Cmp::Le, Ty::U32, key, qi[r]);
                    ok = b.bin(BinOp::And, Ty::Pred, ok, c);
                }
                let t = b.mul(ty, s[r], c2);
                let t = b.select(ty, ok, t, ninf);
                let mx = b.reduce_warp(BinOp::Max, ty, t);
                let mnew = b.bin(BinOp::Max, ty, m[r], mx);
                let none = b.cmp(Cmp::Eq, ty, mnew, ninf);
                let muse = b.select(ty, none, zero, mnew);
                let e = b.sub(ty, t, muse);
                let pj = ex.exp(b, e);
                let a = b.sub(ty, m[r], muse);
                let alpha = ex.exp(b, a);
                let ps = b.reduce_warp(BinOp::Add, ty, pj);
                next_l.push(b.fma(ty, l[r], alpha, ps));
                next_m.push(mnew);
                for x in &acc[r * dtv..(r + 1) * dtv] {
                    next_acc.push(b.mul(ty, *x, alpha));
                }
                pr.push(pj);
            }
            // acc[r][t] += Σ_j p_r[j] · v[j][lane + 32t]
            let next_acc = match vrd {
                Some(vrd) => weighted_rows(b, ty, &pr, vrd, vpitch, dtv, dv, bn, next_acc),
                None => next_acc,
            };
            b.barrier();
            next_m
                .into_iter()
                .chain(next_l)
                .chain(next_acc)
                .map(Operand::from)
                .collect()
        },
    );
    let (l, acc) = fin[rpw..].split_at(rpw);
    if lse {
        // lse = ln Σ_j e^{scale·s_j}: m + ln l (fp32: (m + log2 l)·ln 2, m and l in base-2
        // units); lane 0 writes
        let lane0 = b.cmp(Cmp::Eq, Ty::U32, lane, imm(0));
        let base = b.mul(Ty::U32, bz, sq_v);
        for r in 0..rpw {
            let row_ok = b.cmp(Cmp::Lt, Ty::U32, qi[r], sq_v);
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, lane0);
            let v = ex.ln(&mut b, fin[r], l[r]);
            let idx = b.add(Ty::U32, base, qi[r]);
            store_int_or(&mut b, ty, tk.ty.dtype, op, idx, v, Some(ok));
        }
        return Ok(b.finish());
    }
    for r in 0..rpw {
        let row_ok = b.cmp(Cmp::Lt, Ty::U32, qi[r], sq_v);
        let pos = b.cmp(Cmp::Gt, ty, l[r], zero);
        let inv = if ty == Ty::F64 {
            b.bin(BinOp::Div, ty, fconst(ty, 1.0), l[r])
        } else {
            b.unary(UnOp::Rcp, ty, l[r])
        };
        let inv = b.select(ty, pos, inv, zero);
        let obase = b.fma(Ty::U32, qi[r], imm(i64::from(dv)), orow0);
        for (t, x) in acc[r * dtv..(r + 1) * dtv].iter().enumerate() {
            let col = b.add(Ty::U32, lane, imm(32 * t as i64));
            let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, imm(i64::from(dv)));
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let idx = b.add(Ty::U32, obase, col);
            let v = b.mul(ty, *x, inv);
            store_int_or(&mut b, ty, tk.ty.dtype, op, idx, v, Some(ok));
        }
    }
    Ok(b.finish())
}
