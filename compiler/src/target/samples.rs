//! Hand-built kernels, written with the same [`KernelBuilder`] that lowering from Tile IR uses.
//! Each is tested against an fp64 CPU reference in the emulator and assembled by ptxas for
//! sm_80 and sm_90 with no spills.
//!
//! Their spans point into [`SOURCE`], a small `.tsr` file that stands for the user code each
//! kernel comes from (add it to a `SourceMap` and pass its id).

use super::builder::{fimm, imm};
use super::{
    BinOp, BlockId, CacheOp, Cmp, Dim, KernelBuilder, MmaKind, Op, Operand, ParamTy, Reg, SReg,
    ShflMode, Space, TargetError, Ty, UnOp,
};
use super::{Kernel, Pack};
use tessera_lang::span::FileId;
use tessera_lang::Span;

/// The source the sample kernels' spans point into.
pub const SOURCE: &str = "\
# samples.tsr: where the hand-built kernels come from
def gelu_affine(x, a, b):
    v = x * a + b
    return op.gelu(v)

def softmax_rows(x):
    m = x.max(axis=-1)
    e = (x - m).exp()
    return e / e.sum(axis=-1)

def matmul_f32(a, b):
    return a @ b

def matmul_bf16(a, b):
    return op.matmul(a, b, accum=fp32)

def mma_tile(a, b):
    return op.mma(a, b)
";

/// The span of the first occurrence of `needle` in [`SOURCE`] (a real span: never default).
pub fn span_of(file: FileId, needle: &str) -> Span {
    let lo = SOURCE.find(needle).unwrap_or(0);
    Span::new(file, lo, lo + needle.len().max(1))
}

/// Reads a `.u32`/`.f32`/`.u64` parameter; pointers go through `cvta.to.global`.
fn param(b: &mut KernelBuilder, name: &str, ty: ParamTy) -> Reg {
    let p = b.param(name, ty);
    let r = b.ld_param(p);
    match ty {
        ParamTy::Ptr => b.cvta_global(r),
        ParamTy::U32 | ParamTy::U64 | ParamTy::F32 => r,
    }
}

/// `%ctaid.x * %ntid.x + %tid.x`
fn global_id(b: &mut KernelBuilder) -> Reg {
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    b.fma(Ty::U32, ctaid, ntid, tid)
}

/// gelu (tanh form): 0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³))).
fn gelu(b: &mut KernelBuilder, v: Reg) -> Reg {
    let v2 = b.mul(Ty::F32, v, v);
    let t = b.fma(Ty::F32, v2, fimm(0.044715), fimm(1.0));
    let u = b.mul(Ty::F32, v, t);
    let u = b.mul(Ty::F32, u, fimm(0.797_884_6));
    let th = b.unary(UnOp::TanhApprox, Ty::F32, u);
    let h = b.fma(Ty::F32, th, fimm(0.5), fimm(0.5));
    b.mul(Ty::F32, v, h)
}

/// (a) `y[i] = gelu(x[i]·a + b)` for `i < n`: each thread takes 4 elements with one 16-byte
/// `ld.global.v4.f32`; the thread holding the ragged end (n not a multiple of 4) runs a scalar
/// tail loop. `x` and `y` must be 16-byte aligned. Launch: 1-D, `ceil(n/4)` threads.
pub fn gelu_affine(file: FileId) -> Result<Kernel, TargetError> {
    let mut b = KernelBuilder::new("gelu_affine", span_of(file, "def gelu_affine"));
    b.max_threads(256);
    let x = param(&mut b, "x", ParamTy::Ptr);
    let y = param(&mut b, "y", ParamTy::Ptr);
    let a = param(&mut b, "a", ParamTy::F32);
    let c = param(&mut b, "b", ParamTy::F32);
    let n = param(&mut b, "n", ParamTy::U32);
    let gid = global_id(&mut b);
    let base = b.bin(BinOp::Shl, Ty::B32, gid, imm(2));
    let end = b.add(Ty::U32, base, imm(4));
    let full = b.setp(Cmp::Le, Ty::U32, end, n);
    let vec = b.block("vec");
    let tail = b.block("tail");
    let head = b.block("tail_head");
    let body = b.block("tail_body");
    let exit = b.block("exit");
    b.cbr(full, vec, tail);

    b.switch_to(vec);
    b.at(span_of(file, "x * a + b"));
    let xa = b.mad_wide(Ty::U32, base, imm(4), x);
    let xs = b.ld(Space::Global, Ty::F32, xa, 0, 4);
    let mut ys = vec![];
    for xi in xs {
        b.at(span_of(file, "x * a + b"));
        let v = b.fma(Ty::F32, xi, a, c);
        b.at(span_of(file, "op.gelu(v)"));
        ys.push(Operand::from(gelu(&mut b, v)));
    }
    let ya = b.mad_wide(Ty::U32, base, imm(4), y);
    b.st(Space::Global, Ty::F32, ya, 0, &ys);
    b.ret();

    b.switch_to(tail);
    b.at(span_of(file, "def gelu_affine"));
    let i = b.mov(Ty::U32, base);
    b.br(head);
    b.switch_to(head);
    let more = b.setp(Cmp::Lt, Ty::U32, i, n);
    b.cbr(more, body, exit);
    b.switch_to(body);
    b.at(span_of(file, "x * a + b"));
    let xa = b.mad_wide(Ty::U32, i, imm(4), x);
    let xi = b.ld(Space::Global, Ty::F32, xa, 0, 1);
    let v = b.fma(Ty::F32, xi[0], a, c);
    b.at(span_of(file, "op.gelu(v)"));
    let yv = gelu(&mut b, v);
    let ya = b.mad_wide(Ty::U32, i, imm(4), y);
    b.st(Space::Global, Ty::F32, ya, 0, &[yv.into()]);
    b.bin_to(i, BinOp::Add, Ty::U32, i, imm(1));
    b.br(head);
    b.switch_to(exit);
    b.at(span_of(file, "def gelu_affine"));
    b.ret();
    b.finish()
}

/// A strided loop `for j = lane; j < cols; j += 32 { body(j) }` from the current block; returns
/// the block after the loop (current on return).
fn lane_loop(
    b: &mut KernelBuilder,
    name: &str,
    lane: Reg,
    cols: Reg,
    body: &mut dyn FnMut(&mut KernelBuilder, Reg),
) -> BlockId {
    let j = b.mov(Ty::U32, lane);
    let head = b.block(&format!("{name}_head"));
    let bodyb = b.block(&format!("{name}_body"));
    let after = b.block(&format!("{name}_done"));
    b.br(head);
    b.switch_to(head);
    let p = b.setp(Cmp::Lt, Ty::U32, j, cols);
    b.cbr(p, bodyb, after);
    b.switch_to(bodyb);
    body(b, j);
    b.bin_to(j, BinOp::Add, Ty::U32, j, imm(32));
    b.br(head);
    b.switch_to(after);
    after
}

/// Butterfly all-reduce over a warp with `shfl.sync.bfly`.
fn warp_allreduce(b: &mut KernelBuilder, v: Reg, op: BinOp) {
    for s in [16, 8, 4, 2, 1] {
        let t = b.reg(Ty::F32);
        b.push(Op::Shfl {
            mode: ShflMode::Bfly,
            dst: t,
            src: v.into(),
            lane: imm(s),
            clamp: imm(31),
            mask: 0xffff_ffff,
        });
        b.bin_to(v, op, Ty::F32, v, t);
    }
}

/// (b) Row softmax of a row-major `[rows, cols]` f32 matrix, one warp per row (any `cols`):
/// max and sum by `shfl.sync.bfly`, `exp` as `ex2.approx(x·log2 e − m·log2 e)`.
/// Launch: blocks of `32·w` threads, `ceil(rows / w)` blocks.
pub fn softmax_rows(file: FileId) -> Result<Kernel, TargetError> {
    let mut b = KernelBuilder::new("softmax_rows", span_of(file, "def softmax_rows"));
    b.max_threads(1024);
    let x = param(&mut b, "x", ParamTy::Ptr);
    let y = param(&mut b, "y", ParamTy::Ptr);
    let rows = param(&mut b, "rows", ParamTy::U32);
    let cols = param(&mut b, "cols", ParamTy::U32);
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let wpb = b.bin(BinOp::Shr, Ty::U32, ntid, imm(5));
    let row = b.fma(Ty::U32, ctaid, wpb, warp);
    let out = b.setp(Cmp::Ge, Ty::U32, row, rows);
    let init = b.block("row");
    // The exit block is created last so it is laid out after every loop.
    b.cbr(out, BlockId(u32::MAX), init);
    let entry = b.current();

    b.switch_to(init);
    let off = b.mul_wide(Ty::U32, row, cols);
    let off = b.bin(BinOp::Shl, Ty::B64, off, imm(2));
    let xrow = b.add(Ty::U64, x, off);
    let yrow = b.add(Ty::U64, y, off);
    b.at(span_of(file, "x.max(axis=-1)"));
    let m = b.mov(Ty::F32, fimm(f32::NEG_INFINITY));
    lane_loop(&mut b, "max", lane, cols, &mut |b, j| {
        let a = b.mad_wide(Ty::U32, j, imm(4), xrow);
        let v = b.ld(Space::Global, Ty::F32, a, 0, 1);
        b.bin_to(m, BinOp::Max, Ty::F32, m, v[0]);
    });
    warp_allreduce(&mut b, m, BinOp::Max);
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    let mb = b.mul(Ty::F32, m, fimm(-LOG2E));
    b.at(span_of(file, "e.sum(axis=-1)"));
    let s = b.mov(Ty::F32, fimm(0.0));
    lane_loop(&mut b, "sum", lane, cols, &mut |b, j| {
        let a = b.mad_wide(Ty::U32, j, imm(4), xrow);
        let v = b.ld(Space::Global, Ty::F32, a, 0, 1);
        b.at(span_of(file, "(x - m).exp()"));
        let t = b.fma(Ty::F32, v[0], fimm(LOG2E), mb);
        let e = b.unary(UnOp::Ex2Approx, Ty::F32, t);
        b.at(span_of(file, "e.sum(axis=-1)"));
        b.bin_to(s, BinOp::Add, Ty::F32, s, e);
    });
    warp_allreduce(&mut b, s, BinOp::Add);
    b.at(span_of(file, "e / e.sum(axis=-1)"));
    let inv = b.unary(UnOp::Rcp, Ty::F32, s);
    let done = lane_loop(&mut b, "out", lane, cols, &mut |b, j| {
        let a = b.mad_wide(Ty::U32, j, imm(4), xrow);
        let v = b.ld(Space::Global, Ty::F32, a, 0, 1);
        let t = b.fma(Ty::F32, v[0], fimm(LOG2E), mb);
        let e = b.unary(UnOp::Ex2Approx, Ty::F32, t);
        let r = b.mul(Ty::F32, e, inv);
        let ya = b.mad_wide(Ty::U32, j, imm(4), yrow);
        b.st(Space::Global, Ty::F32, ya, 0, &[r.into()]);
    });
    b.switch_to(done);
    b.at(span_of(file, "def softmax_rows"));
    b.ret();
    b.switch_to(entry);
    b.cbr(out, done, init);
    b.finish()
}

/// (c) fp32 tiled matmul `c[M,N] = a[M,K] · b[K,N]` (row-major): 64×64 block tile, k-step 16,
/// 256 threads each computing 4×4 outputs; tiles stream into shared memory with 4-byte
/// `cp.async.ca` (zero-filled past the edges via src-size), double-buffered with
/// `cp.async.commit_group`/`wait_group 1` and `bar.sync`. Any M, N, K.
/// Launch: block (256,1,1), grid (ceil(N/64), ceil(M/64), 1).
pub fn matmul_f32(file: FileId) -> Result<Kernel, TargetError> {
    const BM: i64 = 64;
    const BN: i64 = 64;
    const BK: i64 = 16;
    let mut b = KernelBuilder::new("matmul_f32", span_of(file, "def matmul_f32"));
    b.max_threads(256);
    let a = param(&mut b, "a", ParamTy::Ptr);
    let bp = param(&mut b, "b", ParamTy::Ptr);
    let c = param(&mut b, "c", ParamTy::Ptr);
    let m = param(&mut b, "m", ParamTy::U32);
    let n = param(&mut b, "n", ParamTy::U32);
    let k = param(&mut b, "k", ParamTy::U32);
    let sa = b.shared("smem_a", (2 * BM * BK * 4) as u32, 16);
    let sb = b.shared("smem_b", (2 * BK * BN * 4) as u32, 16);
    b.at(span_of(file, "a @ b"));
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let by = b.special(SReg::Ctaid(Dim::Y));
    let bm = b.mul(Ty::U32, by, imm(BM));
    let bn = b.mul(Ty::U32, bx, imm(BN));
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);

    // Loader mapping: A element (ar, ac) = (tid/16 + 16i, tid%16); B (br, bc) = (tid/64 + 4i, tid%64).
    let ac = b.bin(BinOp::And, Ty::B32, tid, imm(15));
    let ar0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(4));
    let bc = b.bin(BinOp::And, Ty::B32, tid, imm(63));
    let br0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(6));
    let mut a_src = vec![];
    let mut a_row_ok = vec![];
    let mut b_src = vec![];
    let mut b_row = vec![];
    for i in 0..4 {
        let gr = b.add(Ty::U32, bm, ar0);
        let gr = b.add(Ty::U32, gr, imm(16 * i));
        a_row_ok.push(b.setp(Cmp::Lt, Ty::U32, gr, m));
        let idx = b.fma(Ty::U32, gr, k, ac);
        a_src.push(b.mad_wide(Ty::U32, idx, imm(4), a));
        let r = b.add(Ty::U32, br0, imm(4 * i));
        b_row.push(r);
        let idx = b.fma(Ty::U32, r, n, bn);
        let idx = b.add(Ty::U32, idx, bc);
        b_src.push(b.mad_wide(Ty::U32, idx, imm(4), bp));
    }
    let gc = b.add(Ty::U32, bn, bc);
    let b_col_ok = b.setp(Cmp::Lt, Ty::U32, gc, n);
    let a_dst = b.fma(Ty::U32, ar0, imm(BK * 4), sa0);
    let a_dst = b.fma(Ty::U32, ac, imm(4), a_dst);
    let b_dst = b.fma(Ty::U32, br0, imm(BN * 4), sb0);
    let b_dst = b.fma(Ty::U32, bc, imm(4), b_dst);
    let n4 = b.mul(Ty::U32, n, imm(4));

    // Issues the cp.async copies of k-tile `kt` into buffer `kt & 1` (guarded by `guard`).
    let issue = |b: &mut KernelBuilder, kt: Reg, guard: Option<Reg>| {
        let k0 = b.mul(Ty::U32, kt, imm(BK));
        let buf = b.bin(BinOp::And, Ty::B32, kt, imm(1));
        let boff = b.mul(Ty::U32, buf, imm(BM * BK * 4));
        let col = b.add(Ty::U32, k0, ac);
        let col_ok = b.setp(Cmp::Lt, Ty::U32, col, k);
        let koff = b.mul_wide(Ty::U32, k0, imm(4));
        let kboff = b.mul_wide(Ty::U32, k0, n4);
        for i in 0..4usize {
            // A
            let ok = b.bin(BinOp::And, Ty::Pred, a_row_ok[i], col_ok);
            let src = b.add(Ty::U64, a_src[i], koff);
            let src = b.selp(Ty::U64, src, a, ok);
            let size = b.selp(Ty::U32, imm(4), imm(0), ok);
            let dst = b.add(Ty::U32, a_dst, boff);
            let dst = b.add(Ty::U32, dst, imm(i as i64 * 16 * BK * 4));
            if let Some(g) = guard {
                b.when(g);
            }
            b.push(Op::CpAsync {
                cache: CacheOp::Ca,
                dst,
                src,
                bytes: 4,
                src_size: Some(size.into()),
            });
            // B
            let r = b.add(Ty::U32, k0, b_row[i]);
            let r_ok = b.setp(Cmp::Lt, Ty::U32, r, k);
            let ok = b.bin(BinOp::And, Ty::Pred, r_ok, b_col_ok);
            let src = b.add(Ty::U64, b_src[i], kboff);
            let src = b.selp(Ty::U64, src, bp, ok);
            let size = b.selp(Ty::U32, imm(4), imm(0), ok);
            let dst = b.add(Ty::U32, b_dst, boff);
            let dst = b.add(Ty::U32, dst, imm(i as i64 * 4 * BN * 4));
            if let Some(g) = guard {
                b.when(g);
            }
            b.push(Op::CpAsync {
                cache: CacheOp::Ca,
                dst,
                src,
                bytes: 4,
                src_size: Some(size.into()),
            });
        }
    };

    let kt = b.mov(Ty::U32, imm(0));
    issue(&mut b, kt, None);
    b.push(Op::CpAsyncCommit);
    let nk = b.add(Ty::U32, k, imm(BK - 1));
    let nk = b.bin(BinOp::Shr, Ty::U32, nk, imm(4));
    let acc: Vec<Reg> = (0..16).map(|_| b.mov(Ty::F32, fimm(0.0))).collect();
    // Compute mapping: outputs (ty + 16i, tx + 16j).
    let tx = b.bin(BinOp::And, Ty::B32, tid, imm(15));
    let ty = b.bin(BinOp::Shr, Ty::U32, tid, imm(4));
    let a_rd = b.fma(Ty::U32, ty, imm(BK * 4), sa0);
    let b_rd = b.fma(Ty::U32, tx, imm(4), sb0);

    let (head, epi) = b.while_lt(kt, nk, ["k_head", "k_body", "epilogue"]);
    let next = b.add(Ty::U32, kt, imm(1));
    let has_next = b.setp(Cmp::Lt, Ty::U32, next, nk);
    issue(&mut b, next, Some(has_next));
    b.push(Op::CpAsyncCommit);
    b.push(Op::CpAsyncWait { n: 1 });
    b.bar_sync();
    let buf = b.bin(BinOp::And, Ty::B32, kt, imm(1));
    let boff = b.mul(Ty::U32, buf, imm(BM * BK * 4));
    let a_base = b.add(Ty::U32, a_rd, boff);
    let b_base = b.add(Ty::U32, b_rd, boff);
    for kk in 0..BK {
        let av: Vec<Reg> = (0..4)
            .map(|i| {
                b.ld(
                    Space::Shared,
                    Ty::F32,
                    a_base,
                    (i * 16 * BK * 4 + kk * 4) as i32,
                    1,
                )[0]
            })
            .collect();
        let bv: Vec<Reg> = (0..4)
            .map(|j| {
                b.ld(
                    Space::Shared,
                    Ty::F32,
                    b_base,
                    (kk * BN * 4 + j * 16 * 4) as i32,
                    1,
                )[0]
            })
            .collect();
        for i in 0..4 {
            for j in 0..4 {
                let acc_ij = acc[i * 4 + j];
                b.fma_to(acc_ij, Ty::F32, av[i], bv[j], acc_ij);
            }
        }
    }
    b.bar_sync();
    b.assign(kt, next);
    b.br(head);

    b.switch_to(epi);
    for i in 0..4 {
        let row = b.add(Ty::U32, bm, ty);
        let row = b.add(Ty::U32, row, imm(16 * i));
        let row_ok = b.setp(Cmp::Lt, Ty::U32, row, m);
        for j in 0..4 {
            let col = b.add(Ty::U32, bn, tx);
            let col = b.add(Ty::U32, col, imm(16 * j));
            let col_ok = b.setp(Cmp::Lt, Ty::U32, col, n);
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let idx = b.fma(Ty::U32, row, n, col);
            let addr = b.mad_wide(Ty::U32, idx, imm(4), c);
            b.when(ok);
            b.st(
                Space::Global,
                Ty::F32,
                addr,
                0,
                &[acc[(i * 4 + j) as usize].into()],
            );
        }
    }
    b.ret();
    b.finish()
}

/// (d) bf16 tensor-core matmul `c[M,N] (f32) = a[M,K] · b[K,N]` (bf16, row-major): 64×64
/// block tile, k-step 32, 4 warps each owning a 32×32 warp tile (2×4 `mma.m16n8k16` tiles);
/// tiles are staged through shared memory by masked `ld.global.b16` (zero past the edges), A
/// fragments by `ldmatrix.x4`, B fragments by `ldmatrix.x4.trans`, fp32 accumulators.
/// Any M, N, K. Launch: block (128,1,1), grid (ceil(N/64), ceil(M/64), 1).
pub fn matmul_bf16(file: FileId) -> Result<Kernel, TargetError> {
    const BM: i64 = 64;
    const BN: i64 = 64;
    const BK: i64 = 32;
    let mut b = KernelBuilder::new("matmul_bf16", span_of(file, "def matmul_bf16"));
    b.max_threads(128);
    let a = param(&mut b, "a", ParamTy::Ptr);
    let bp = param(&mut b, "b", ParamTy::Ptr);
    let c = param(&mut b, "c", ParamTy::Ptr);
    let m = param(&mut b, "m", ParamTy::U32);
    let n = param(&mut b, "n", ParamTy::U32);
    let k = param(&mut b, "k", ParamTy::U32);
    let sa = b.shared("smem_a", (BM * BK * 2) as u32, 16);
    let sb = b.shared("smem_b", (BK * BN * 2) as u32, 16);
    b.at(span_of(file, "op.matmul(a, b, accum=fp32)"));
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let by = b.special(SReg::Ctaid(Dim::Y));
    let bm = b.mul(Ty::U32, by, imm(BM));
    let bn = b.mul(Ty::U32, bx, imm(BN));
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let wm = b.bin(BinOp::Shr, Ty::U32, warp, imm(1));
    let wn = b.bin(BinOp::And, Ty::B32, warp, imm(1));

    // Loader mapping: A (r, c) = (tid/32 + 4i, tid%32); B (r, c) = (tid/64 + 2i, tid%64).
    let a_c = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let a_r = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let b_c = b.bin(BinOp::And, Ty::B32, tid, imm(63));
    let b_r = b.bin(BinOp::Shr, Ty::U32, tid, imm(6));
    let a_st = b.fma(Ty::U32, a_r, imm(BK * 2), sa0);
    let a_st = b.fma(Ty::U32, a_c, imm(2), a_st);
    let b_st = b.fma(Ty::U32, b_r, imm(BN * 2), sb0);
    let b_st = b.fma(Ty::U32, b_c, imm(2), b_st);
    let a_grow = b.add(Ty::U32, bm, a_r);
    let b_gcol = b.add(Ty::U32, bn, b_c);
    let b_col_ok = b.setp(Cmp::Lt, Ty::U32, b_gcol, n);

    // ldmatrix addresses: A rows wm*32 + (lane%16), col (lane/16)*8;
    // B (trans) rows (lane%8) + 8*((lane/8)%2), cols wn*32 + (lane/16)*8.
    let l16 = b.bin(BinOp::And, Ty::B32, lane, imm(15));
    let lhi = b.bin(BinOp::Shr, Ty::U32, lane, imm(4));
    let arow = b.fma(Ty::U32, wm, imm(32), l16);
    let a_ld = b.fma(Ty::U32, arow, imm(BK * 2), sa0);
    let a_ld = b.fma(Ty::U32, lhi, imm(16), a_ld);
    let l8 = b.bin(BinOp::And, Ty::B32, lane, imm(7));
    let l8hi = b.bin(BinOp::Shr, Ty::U32, lane, imm(3));
    let l8hi = b.bin(BinOp::And, Ty::B32, l8hi, imm(1));
    let brow = b.fma(Ty::U32, l8hi, imm(8), l8);
    let b_ld = b.fma(Ty::U32, brow, imm(BN * 2), sb0);
    let bcol = b.mul(Ty::U32, wn, imm(32));
    let bcol = b.fma(Ty::U32, lhi, imm(8), bcol);
    let b_ld = b.fma(Ty::U32, bcol, imm(2), b_ld);

    let acc: Vec<Reg> = (0..32).map(|_| b.mov(Ty::F32, fimm(0.0))).collect();
    let kt = b.mov(Ty::U32, imm(0));
    let nk = b.add(Ty::U32, k, imm(BK - 1));
    let nk = b.bin(BinOp::Shr, Ty::U32, nk, imm(5));
    let zero = b.mov(Ty::B16, imm(0));
    let k2 = b.mul(Ty::U32, k, imm(2));
    let n2 = b.mul(Ty::U32, n, imm(2));

    let (head, epi) = b.while_lt(kt, nk, ["k_head", "k_body", "epilogue"]);
    let k0 = b.mul(Ty::U32, kt, imm(BK));
    // A tile: 16 elements per thread, rows a_grow + 4i, column k0 + a_c.
    let acol = b.add(Ty::U32, k0, a_c);
    let acol_ok = b.setp(Cmp::Lt, Ty::U32, acol, k);
    let aidx = b.fma(Ty::U32, a_grow, k, acol);
    let aptr = b.mad_wide(Ty::U32, aidx, imm(2), a);
    let astep = b.mul_wide(Ty::U32, k2, imm(4));
    for i in 0..16i64 {
        let r = b.add(Ty::U32, a_grow, imm(4 * i));
        let r_ok = b.setp(Cmp::Lt, Ty::U32, r, m);
        let ok = b.bin(BinOp::And, Ty::Pred, r_ok, acol_ok);
        let v = b.mov(Ty::B16, zero);
        b.when(ok);
        b.ld_to(Space::Global, Ty::B16, &[v], aptr, 0);
        b.st(
            Space::Shared,
            Ty::B16,
            a_st,
            (i * 4 * BK * 2) as i32,
            &[v.into()],
        );
        if i < 15 {
            b.bin_to(aptr, BinOp::Add, Ty::U64, aptr, astep);
        }
    }
    // B tile: 16 elements per thread, rows k0 + b_r + 2i, column bn + b_c.
    let brow0 = b.add(Ty::U32, k0, b_r);
    let bidx = b.fma(Ty::U32, brow0, n, b_gcol);
    let bptr = b.mad_wide(Ty::U32, bidx, imm(2), bp);
    let bstep = b.mul_wide(Ty::U32, n2, imm(2));
    for i in 0..16i64 {
        let r = b.add(Ty::U32, brow0, imm(2 * i));
        let r_ok = b.setp(Cmp::Lt, Ty::U32, r, k);
        let ok = b.bin(BinOp::And, Ty::Pred, r_ok, b_col_ok);
        let v = b.mov(Ty::B16, zero);
        b.when(ok);
        b.ld_to(Space::Global, Ty::B16, &[v], bptr, 0);
        b.st(
            Space::Shared,
            Ty::B16,
            b_st,
            (i * 2 * BN * 2) as i32,
            &[v.into()],
        );
        if i < 15 {
            b.bin_to(bptr, BinOp::Add, Ty::U64, bptr, bstep);
        }
    }
    b.bar_sync();
    for ks in 0..2i64 {
        let mut af = vec![];
        for mt in 0..2i64 {
            let addr = b.add(Ty::U32, a_ld, imm(mt * 16 * BK * 2 + ks * 16 * 2));
            let d = [
                b.reg(Ty::B32),
                b.reg(Ty::B32),
                b.reg(Ty::B32),
                b.reg(Ty::B32),
            ];
            b.push(Op::Ldmatrix {
                trans: false,
                dsts: d,
                addr,
            });
            af.push(d);
        }
        let mut bf = vec![];
        for np in 0..2i64 {
            let addr = b.add(Ty::U32, b_ld, imm(ks * 16 * BN * 2 + np * 16 * 2));
            let d = [
                b.reg(Ty::B32),
                b.reg(Ty::B32),
                b.reg(Ty::B32),
                b.reg(Ty::B32),
            ];
            b.push(Op::Ldmatrix {
                trans: true,
                dsts: d,
                addr,
            });
            bf.push([d[0], d[1]]);
            bf.push([d[2], d[3]]);
        }
        for (mt, a_frag) in af.iter().enumerate() {
            for (nt, b_frag) in bf.iter().enumerate() {
                let base = (mt * 4 + nt) * 4;
                let d = [acc[base], acc[base + 1], acc[base + 2], acc[base + 3]];
                b.push(Op::Mma {
                    kind: MmaKind::M16n8k16Bf16,
                    d,
                    a: *a_frag,
                    b: *b_frag,
                    c: d,
                });
            }
        }
    }
    b.bar_sync();
    b.bin_to(kt, BinOp::Add, Ty::U32, kt, imm(1));
    b.br(head);

    // Epilogue: accumulator i of tile (mt, nt) is row g + 8·(i/2), column 2·t + i%2.
    b.switch_to(epi);
    let g = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
    let t = b.bin(BinOp::And, Ty::B32, lane, imm(3));
    let row0 = b.fma(Ty::U32, wm, imm(32), bm);
    let row0 = b.add(Ty::U32, row0, g);
    let col0 = b.fma(Ty::U32, wn, imm(32), bn);
    let col0 = b.fma(Ty::U32, t, imm(2), col0);
    for mt in 0..2i64 {
        for half in 0..2i64 {
            let row = b.add(Ty::U32, row0, imm(mt * 16 + half * 8));
            let row_ok = b.setp(Cmp::Lt, Ty::U32, row, m);
            for nt in 0..4i64 {
                for e in 0..2i64 {
                    let col = b.add(Ty::U32, col0, imm(nt * 8 + e));
                    let col_ok = b.setp(Cmp::Lt, Ty::U32, col, n);
                    let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
                    let idx = b.fma(Ty::U32, row, n, col);
                    let addr = b.mad_wide(Ty::U32, idx, imm(4), c);
                    let r = acc[((mt * 4 + nt) * 4 + half * 2 + e) as usize];
                    b.when(ok);
                    b.st(Space::Global, Ty::F32, addr, 0, &[r.into()]);
                }
            }
        }
    }
    b.ret();
    b.finish()
}

/// One warp, one `mma.sync` tile with fragments loaded straight from global memory by the
/// PTX ISA fragment layout (no ldmatrix): `d[16,8] = a[16,K]·b[K,8]` with `a` row-major
/// `[16][K]` and `b` row-major `[K][8]`, both given as f32 and converted in-kernel to the
/// operand type (bf16, f16 or tf32). Launch: one block of 32 threads.
pub fn mma_tile(file: FileId, kind: MmaKind) -> Result<Kernel, TargetError> {
    let name = match kind {
        MmaKind::M16n8k16Bf16 => "mma_tile_bf16",
        MmaKind::M16n8k16F16 => "mma_tile_f16",
        MmaKind::M16n8k8Tf32 => "mma_tile_tf32",
    };
    let mut b = KernelBuilder::new(name, span_of(file, "op.mma(a, b)"));
    b.max_threads(32);
    let a = param(&mut b, "a", ParamTy::Ptr);
    let bp = param(&mut b, "b", ParamTy::Ptr);
    let d = param(&mut b, "d", ParamTy::Ptr);
    let lane = b.special(SReg::Tid(Dim::X));
    let g = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
    let t = b.bin(BinOp::And, Ty::B32, lane, imm(3));
    let kdim: i64 = match kind {
        MmaKind::M16n8k16Bf16 | MmaKind::M16n8k16F16 => 16,
        MmaKind::M16n8k8Tf32 => 8,
    };
    // Loads a[row][col] (f32).
    let load = |b: &mut KernelBuilder, base: Reg, row: Reg, col: Reg, stride: i64| -> Reg {
        let idx = b.fma(Ty::U32, row, imm(stride), col);
        let addr = b.mad_wide(Ty::U32, idx, imm(4), base);
        b.ld(Space::Global, Ty::F32, addr, 0, 1)[0]
    };
    let plus = |b: &mut KernelBuilder, r: Reg, v: i64| b.add(Ty::U32, r, imm(v));
    let mut af = vec![];
    let mut bf = vec![];
    match kind {
        MmaKind::M16n8k16Bf16 | MmaKind::M16n8k16F16 => {
            let pack = if kind == MmaKind::M16n8k16Bf16 {
                Pack::BF16x2
            } else {
                Pack::F16x2
            };
            let pty = if kind == MmaKind::M16n8k16Bf16 {
                Ty::BF16x2
            } else {
                Ty::F16x2
            };
            let t2 = b.mul(Ty::U32, t, imm(2));
            // a_i holds (row g + 8·(i%2), cols 2t + 8·(i/2) + {0,1}); low half = first column.
            for i in 0..4i64 {
                let row = plus(&mut b, g, 8 * (i % 2));
                let c0 = plus(&mut b, t2, 8 * (i / 2));
                let c1 = plus(&mut b, c0, 1);
                let lo = load(&mut b, a, row, c0, kdim);
                let hi = load(&mut b, a, row, c1, kdim);
                let p = b.reg(pty);
                b.push(Op::CvtPack {
                    pack,
                    dst: p,
                    hi,
                    lo,
                });
                let r = b.mov(Ty::B32, p);
                af.push(r);
            }
            // b_i holds (rows 2t + 8i + {0,1}, col g).
            for i in 0..2i64 {
                let k0 = plus(&mut b, t2, 8 * i);
                let k1 = plus(&mut b, k0, 1);
                let lo = load(&mut b, bp, k0, g, 8);
                let hi = load(&mut b, bp, k1, g, 8);
                let p = b.reg(pty);
                b.push(Op::CvtPack {
                    pack,
                    dst: p,
                    hi,
                    lo,
                });
                let r = b.mov(Ty::B32, p);
                bf.push(r);
            }
        }
        MmaKind::M16n8k8Tf32 => {
            // a_i: (row g + 8·(i%2), col t + 4·(i/2)); b_i: (row t + 4i, col g).
            for i in 0..4i64 {
                let row = plus(&mut b, g, 8 * (i % 2));
                let col = plus(&mut b, t, 4 * (i / 2));
                let v = load(&mut b, a, row, col, kdim);
                let r = b.reg(Ty::B32);
                b.push(Op::CvtTf32 { dst: r, src: v });
                af.push(r);
            }
            for i in 0..2i64 {
                let row = plus(&mut b, t, 4 * i);
                let v = load(&mut b, bp, row, g, 8);
                let r = b.reg(Ty::B32);
                b.push(Op::CvtTf32 { dst: r, src: v });
                bf.push(r);
            }
        }
    }
    let cz: Vec<Reg> = (0..4).map(|_| b.mov(Ty::F32, fimm(0.0))).collect();
    let dr = [
        b.reg(Ty::F32),
        b.reg(Ty::F32),
        b.reg(Ty::F32),
        b.reg(Ty::F32),
    ];
    b.push(Op::Mma {
        kind,
        d: dr,
        a: [af[0], af[1], af[2], af[3]],
        b: [bf[0], bf[1]],
        c: [cz[0], cz[1], cz[2], cz[3]],
    });
    // d_i: (row g + 8·(i/2), col 2t + i%2).
    let t2 = b.mul(Ty::U32, t, imm(2));
    for (i, r) in dr.iter().enumerate() {
        let row = plus(&mut b, g, 8 * (i as i64 / 2));
        let col = plus(&mut b, t2, i as i64 % 2);
        let idx = b.fma(Ty::U32, row, imm(8), col);
        let addr = b.mad_wide(Ty::U32, idx, imm(4), d);
        b.st(Space::Global, Ty::F32, addr, 0, &[(*r).into()]);
    }
    b.ret();
    b.finish()
}
