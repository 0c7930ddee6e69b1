//! The Tile IR ops, one row each: the variant and its fields, the mnemonic of the text form,
//! how its operands are written and its signature (operand and result types). The text
//! parser and printer and the checker derive from these rows ([`super::opdef`] says how);
//! the back ends give each op its meaning (`backend/ptx/from_tile`, `backend/spirv`).
//!
//! Adding an op: a row here and nothing else in Tile IR; then its translation in each back end
//! (a new Target IR instruction also needs its verifier, printer and emulator arms there).

use super::check::types::{packed, wide, Ctx};
use super::check::CheckError;
use super::ir::MathFn;
use super::opdef::{field_from, tile_ops, Field, FieldDecl, Given, Row, Syntax};
use crate::scalar::{BinOp, CacheOp, Cmp, MmaKind, Pack, Rnd, SReg, ShflMode, Ty, UnOp, Unpack};

tile_ops! {
    // ---- index space and scalar arithmetic (scalars of type `ty`) ----
    /// `() -> u32`: a thread/block coordinate, the lane or warp id.
    Special(s: SReg) = "special", Reg, |c| c.sig(&[], &[Ty::U32]);
    /// `(a) -> ty`: a copy or a constant (`tile.mov 0f3F800000 : f32`).
    Mov { ty: Ty } = "mov.{ty}", List, |c| c.same(&[*ty], *ty);
    /// `(a) -> to`: reinterpret the bits of a value of the same size (`b16` ↔ `bf16`).
    Bitcast { to: Ty } = "bitcast.{to}", List, |c| c.bitcast(*to);
    Unary { op: UnOp, ty: Ty } = "{op}.{ty}", List, |c| c.same(&[*ty], *ty);
    Binary { op: BinOp, ty: Ty } = "{op}.{ty}", List, |c| c.binary(*op, *ty);
    /// `(a, b, c) -> ty`: `a·b + c` (`fma.rn` on floats, `mad.lo` on integers).
    Fma { ty: Ty } = "fma.{ty}", List, |c| c.same(&[*ty; 3], *ty);
    /// `(a, b) -> u64|s64`: the 64-bit product of two 32-bit values (`ty` is `u32`/`s32`).
    MulWide { ty: Ty } = "mul.wide.{ty}", List, |c| c.same(&[*ty; 2], wide(*ty));
    /// `(a, b, c64) -> u64|s64`: `a·b + c` in 64 bits.
    MadWide { ty: Ty } = "mad.wide.{ty}", List, |c| c.same(&[*ty, *ty, wide(*ty)], wide(*ty));
    /// `(a, b) -> pred`.
    Cmp { cmp: Cmp, ty: Ty } = "setp.{cmp}.{ty}", List, |c| c.same(&[*ty; 2], Ty::Pred);
    /// `(p, a, b) -> ty`: `p ? a : b`.
    Select { ty: Ty } = "selp.{ty}", List, |c| c.select(*ty);
    /// `(a) -> to`: a conversion from `from` with rounding `rnd` (`sat`: saturate).
    Cast { to: Ty, from: Ty, rnd: Option<Rnd>, sat: bool }
        = "cvt.{rnd}.{sat}.{to}.{from}", List, |c| c.cast(*to, *from);
    /// `(a: f32) -> b32`: round to tf32 (`cvt.rna.tf32.f32`).
    Tf32 = "tf32", List, |c| c.same(&[Ty::F32], Ty::B32);
    /// `(hi: f32, lo: f32) -> packed`.
    Pack(p: Pack) = "pack.{p}", List, |c| c.same(&[Ty::F32; 2], packed(*p));
    /// `(a: b16) -> f16x2`.
    Unpack(u: Unpack) = "unpack.{u}", List, |c| c.same(&[Ty::B16], Ty::F16x2);
    /// `(x[, y]) -> ty`: a math function ([`MathFn`]).
    Math { f: MathFn, ty: Ty } = "math.{f}.{ty}", List, |c| c.math(*f, *ty);

    // ---- global memory (tensor views, element indices) ----
    /// `(view, index: u32[, mask][, defaults…]) -> n × result`: `n` consecutive elements from
    /// element `index`, with instruction type `ty` (`u8` loads into `u32` registers). Masked
    /// off, the results are the defaults (or 0).
    Load { ty: Ty, n: u8 } = "load.{n}.{ty}", LoadGlobal, |c| c.load(*ty, *n);
    /// `(view, index: u32, values…[, mask])`.
    Store { ty: Ty, n: u8 } = "store.{n}.{ty}", StoreGlobal, |c| c.store(*ty, *n);
    /// `(view, count: u32) -> view`: the view starting `count` elements further.
    Advance = "advance", List, |c| c.advance();
    /// `(view, index: u32, value: f32)`: `red.global.add.f32`.
    RedAdd = "red.add.f32", IndexedList, |c| c.red_add(&[]);
    /// `(view, index: u32, value: f32) -> f32`: `atom.global.add.f32`, the old value.
    AtomAdd = "atom.add.f32", IndexedList, |c| c.red_add(&[Ty::F32]);

    // ---- shared memory (byte addresses in the shared window, u32) ----
    /// `(buffer) -> u32`: the buffer's base address.
    SharedAddr = "shared_addr", List, |c| c.shared_addr();
    /// `(buffer, stage: u32, row: u32, col: u32) -> u32`: the address of element
    /// `[stage, row, col]` under the buffer's layout (pitch and swizzle).
    Offset = "offset", Subscript, |c| c.offset();
    /// `(addr: u32[, mask][, defaults…]) -> n × result`: `ld.shared`, at `addr + offset`.
    LoadShared { ty: Ty, n: u8, offset: i32 = 0 }
        = "ld.shared.{n}.{ty}", LoadAt, |c| c.load_shared(*ty, *n);
    /// `(addr: u32, values…[, mask])`: `st.shared`, at `addr + offset`.
    StoreShared { ty: Ty, n: u8, offset: i32 = 0 }
        = "st.shared.{n}.{ty}", StoreAt, |c| c.store_shared(*ty, *n);
    /// `(dst: u32, view, index: u32[, src_bytes: u32][, mask])`: `cp.async` of `bytes` from
    /// element `index` of the view to shared address `dst`; bytes past `src_bytes` are zero.
    CopyAsync { cache: CacheOp, bytes: u32 }
        = "cp.async.{cache}", CopyAsync, |c| c.copy_async(*cache, *bytes);
    /// `()`: closes the group of async copies issued since the last commit.
    Commit = "commit", List, |c| c.sig(&[], &[]);
    /// `()`: waits until at most `n` committed groups are pending.
    Wait { n: u32 } = "wait", List, |c| c.sig(&[], &[]);
    /// `()`: block-wide barrier.
    Barrier = "barrier", List, |c| c.sig(&[], &[]);
    /// `(addr: u32) -> fragments`: `ldmatrix.x4{.trans}`; the results are one A fragment,
    /// two B fragments or four `b32` scalars.
    Ldmatrix { trans: bool } = "ldmatrix.x4.{trans}", List, |c| c.ldmatrix();

    // ---- warps and tensor cores ----
    /// `(a: frag A, b: frag B, c: frag C) -> frag C`: `d = a·b + c`.
    Mma { kind: MmaKind } = "mma.{kind}", List, |c| c.mma(*kind);
    /// `(frag) -> scalar`: register `index` of a fragment.
    FragGet { index: u8 } = "frag_get", List, |c| c.frag_get(*index);
    /// `(scalars…) -> frag`: a fragment from its registers.
    FragMake = "frag_make", List, |c| c.frag_make();
    /// `(src: b32, lane, clamp) -> b32`: `shfl.sync`.
    Shfl { mode: ShflMode, mask: u32 }
        = "shfl.{mode}", List, |c| c.same(&[Ty::B32, Ty::U32, Ty::U32], Ty::B32);
    /// `(v) -> ty`: the butterfly all-reduce of `v` across the 32 lanes (`shfl.bfly` 16, 8,
    /// 4, 2, 1; an `f64` moves as two halves).
    ReduceWarp { op: BinOp, ty: Ty } = "reduce_warp.{op}.{ty}", List, |c| c.same(&[*ty], *ty);
    /// `(v, scratch) -> ty`: the all-reduce of `v` across the block: each warp's butterfly
    /// all-reduce, lane 0 of warp `w` writes it to word `w` of `scratch` (a shared buffer of
    /// at least one `ty` per warp), a barrier, every thread folds the partials in warp order
    /// (the same result everywhere, deterministic), a barrier (the scratch may be reused).
    /// Every thread of the block must reach it.
    ReduceBlock { op: BinOp, ty: Ty } = "reduce_block.{op}.{ty}", List, |c| c.reduce_block(*ty);

    // ---- Hopper (sm_90) ----
    /// `()`: `fence.proxy.async.shared::cta`: makes this thread's generic-proxy writes to
    /// shared memory visible to later async-proxy operations (TMA, wgmma). sm_90 and later
    /// only: refused on sm_80 and SPIR-V targets.
    FenceProxyAsync = "fence.proxy.async", List, |c| c.sig(&[], &[]);
    /// `(addr: u32, count: u32)`: `mbarrier.init.shared::cta.b64`: the 64-bit barrier at
    /// shared address `addr` (8-byte aligned) expects `count` arrivals per phase; its phase is
    /// 0 and its transaction count 0.
    MbarrierInit = "mbarrier.init", List, |c| c.sig(&[Ty::U32, Ty::U32], &[]);
    /// `(addr: u32) -> b64`: one arrival; the result is the state token (the phase arrived
    /// at). The phase completes when the pending arrivals and the transaction count are both 0.
    MbarrierArrive = "mbarrier.arrive", List, |c| c.sig(&[Ty::U32], &[Ty::B64]);
    /// `(addr: u32, tx: u32) -> b64`: adds `tx` bytes to the transaction count, then arrives.
    MbarrierArriveExpectTx = "mbarrier.arrive.expect_tx", List,
        |c| c.sig(&[Ty::U32, Ty::U32], &[Ty::B64]);
    /// `(addr: u32, tx: u32)`: `tx` bytes of the expected transactions completed (what a bulk
    /// copy signals when it lands).
    MbarrierCompleteTx = "mbarrier.complete_tx", List, |c| c.sig(&[Ty::U32, Ty::U32], &[]);
    /// `(addr: u32, parity: u32) -> pred`: whether the phase of parity `parity & 1` completed
    /// (the barrier's current phase has the other parity).
    MbarrierTryWait = "mbarrier.try_wait.parity", List, |c| c.sig(&[Ty::U32, Ty::U32], &[Ty::Pred]);
    /// `(addr: u32, parity: u32)`: waits until the phase of parity `parity & 1` completed (a
    /// `try_wait.parity` loop).
    MbarrierWait = "mbarrier.wait.parity", List, |c| c.sig(&[Ty::U32, Ty::U32], &[]);
    /// `(addr: u32, lbo: u32, sbo: u32) -> u64`: a wgmma shared-memory matrix descriptor:
    /// start address, leading and stride byte offsets (each a multiple of 16 below 256 KiB)
    /// and the swizzle (`swizzle` bytes: 0, 32, 64 or 128), base offset 0.
    WgmmaDesc { swizzle: u32 = 0 } = "wgmma.desc", List, |c| c.wgmma_desc(*swizzle);
    /// `()`: `wgmma.fence.sync.aligned`: orders this warpgroup's register accesses before the
    /// next `wgmma.mma_async`.
    WgmmaFence = "wgmma.fence", List, |c| c.sig(&[], &[]);
    /// `()`: closes the group of `wgmma.mma_async` issued since the last commit.
    WgmmaCommit = "wgmma.commit_group", List, |c| c.sig(&[], &[]);
    /// `()`: waits until at most `n` committed wgmma groups are pending.
    WgmmaWait { n: u32 } = "wgmma.wait_group", List, |c| c.sig(&[], &[]);
    /// `(desc_a: u64, desc_b: u64[, acc: n/2 × f32]) -> n/2 × f32`:
    /// `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab}` by one warpgroup (128
    /// threads): D (64×n, f32) = A (64×16, K-major) · B (16×n, K-major: n rows of 16) + acc,
    /// or without `acc` A · B alone. Each thread holds n/2 values of D in the PTX ISA's
    /// fragment layout: value i of lane l in warp w (of the group) is D[16w + l/4 +
    /// 8·(i/2 % 2)][8·(i/4) + 2·(l % 4) + i % 2]. sm_90a only.
    WgmmaMmaAsync { n: u32, ab: Ty } = "wgmma.mma_async.{ab}", List, |c| c.wgmma(*n, *ab);

    /// `()`: `setmaxnreg.inc.sync.aligned.u32 n`: raises this warp's per-thread register
    /// limit to `n` (a multiple of 8 from 24 to 256, at least the current limit), taking
    /// registers from the block's pool, waiting until the pool has them. Every warp of the
    /// warpgroup executes the same one. sm_90a only.
    SetmaxnregInc { n: u32 } = "setmaxnreg.inc", List, |c| c.setmaxnreg(*n);
    /// `()`: `setmaxnreg.dec.sync.aligned.u32 n`: lowers this warp's per-thread register limit
    /// to `n` (at most the current limit), returning the rest to the block's pool.
    SetmaxnregDec { n: u32 } = "setmaxnreg.dec", List, |c| c.setmaxnreg(*n);

    // ---- TMA (sm_90) ----
    /// `(dst: u32, map: tensormap, mbar: u32, coords: s32 × rank)`:
    /// `cp.async.bulk.tensor` of the map's box at element coordinates `coords` (outermost
    /// first, signed: elements outside the tensor read as zero) from global to shared address
    /// `dst` (128-byte aligned; 1024 with a swizzle), row-major under the map's swizzle. When
    /// the box has landed it completes its bytes of transactions on the mbarrier at `mbar`;
    /// reading the box is ordered by waiting on that barrier's phase. Every thread that
    /// executes it issues one copy (one elected thread, usually).
    TmaLoad = "tma.load", List, |c| c.tma(true);
    /// `(map: tensormap, src: u32, coords: s32 × rank)`: `cp.async.bulk.tensor` of one box
    /// from shared address `src` to the tensor at `coords` (the elements outside the tensor
    /// are not written), in this thread's open bulk group. It reads shared memory through the
    /// async proxy: the generic writes it reads need their `fence.proxy.async`.
    TmaStore = "tma.store", List, |c| c.tma(false);
    /// `()`: `cp.async.bulk.commit_group`: closes this thread's group of TMA stores.
    TmaCommit = "tma.commit_group", List, |c| c.sig(&[], &[]);
    /// `()`: `cp.async.bulk.wait_group.read n`: waits until at most `n` of this thread's
    /// committed groups still read their shared memory (which may then be rewritten).
    TmaWaitRead { n: u32 } = "tma.wait_group.read", List, |c| c.sig(&[], &[]);

    // ---- structure ----
    /// `(lb: u32, ub: u32, step: u32, inits…) -> carried…`; one region whose arguments are
    /// the induction variable and the carried values; `pipeline`: the number of stages of
    /// the async-copy pipeline this loop feeds (printed, checked, not interpreted);
    /// `rolled` (`{unroll = 1}`): the loop stays a loop in the assembler (PTX
    /// `.pragma "nounroll"`); ptxas otherwise unrolls short constant-trip loops, keeping
    /// every iteration's loads in flight at once.
    For { pipeline: Option<u32>, rolled: bool } = "for", Structured, |c| c.for_();
    /// `(cond: pred) -> results…`; two regions (then, else), each ending in `tile.yield`.
    If = "if", Structured, |c| c.if_();
    /// `()`: one region run by the warpgroups `first .. first + count` (warpgroup `w` holds
    /// threads `128·w .. 128·w + 127` of the block, `%tid.x / 128` in a one-dimensional
    /// block) and skipped by the others: one role of a warp-specialised kernel (a TMA
    /// producer, the wgmma consumers). Its region yields nothing. A block-wide barrier
    /// (`tile.barrier`, `tile.reduce_block`) inside a role that not every warpgroup runs is
    /// refused: the others never reach it.
    WarpgroupRole { first: u32, count: u32 = 1 } = "warpgroup_role", Structured, |c| c.role(*first, *count);
    /// `(values…)`: ends a region of `tile.for`/`tile.if`/`tile.warpgroup_role`.
    Yield = "yield", List, |c| Ok(());
}
