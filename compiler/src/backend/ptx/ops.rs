//! Target IR's instructions: the op vocabulary and what each op reads and writes.

use super::*;

/// An instruction. Every variant is matched without a catch-all by the verifier, the printer
/// and the emulator, so adding one fails to compile until each decides.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `mov.u32 d, %tid.x` (d: 32-bit integer)
    Special {
        dst: Reg,
        sreg: SReg,
    },
    /// `ld.param.T d, [name]`
    LdParam {
        dst: Reg,
        param: ParamId,
    },
    /// `mov.u32 d, smem` — the shared-window address of a `.shared` array (d: 32-bit integer)
    SharedAddr {
        dst: Reg,
        shared: SharedId,
    },
    /// `mov.T d, a`
    Mov {
        ty: Ty,
        dst: Reg,
        src: Operand,
    },
    Unary {
        op: UnOp,
        ty: Ty,
        dst: Reg,
        src: Operand,
    },
    Binary {
        op: BinOp,
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
    },
    /// `fma.rn.f32 d, a, b, c` (floats) / `mad.lo.s32 d, a, b, c` (integers)
    Fma {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    /// `mul.wide.u32 d(64), a(32), b(32)`; ty is `U32` or `S32`
    MulWide {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
    },
    /// `mad.wide.u32 d(64), a(32), b(32), c(64)`; ty is `U32` or `S32`
    MadWide {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    /// `setp.cmp.ty p, a, b`
    Setp {
        cmp: Cmp,
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
    },
    /// `selp.ty d, a, b, p` — d = p ? a : b
    Selp {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
        pred: Reg,
    },
    /// `cvt{.rnd}{.sat}.dty.sty d, a`; the verifier checks the rounding PTX requires
    Cvt {
        dty: Ty,
        sty: Ty,
        rnd: Option<Rnd>,
        sat: bool,
        dst: Reg,
        src: Reg,
    },
    /// `cvt.rna.tf32.f32 d(b32), a(f32)`
    CvtTf32 {
        dst: Reg,
        src: Reg,
    },
    CvtPack {
        pack: Pack,
        dst: Reg,
        hi: Reg,
        lo: Reg,
    },
    CvtUnpack {
        unpack: Unpack,
        dst: Reg,
        src: Reg,
    },
    /// `cvta.to.global.u64 d, a`
    CvtaGlobal {
        dst: Reg,
        src: Reg,
    },
    /// `ld.space{.v2|.v4}.ty {d..}, [addr+offset]` — 1, 2 or 4 destinations
    Ld {
        space: Space,
        ty: Ty,
        dsts: Vec<Reg>,
        addr: Reg,
        offset: i32,
    },
    /// `st.space{.v2|.v4}.ty [addr+offset], {a..}` — 1, 2 or 4 sources
    St {
        space: Space,
        ty: Ty,
        srcs: Vec<Operand>,
        addr: Reg,
        offset: i32,
    },
    /// `cp.async.ca.shared.global [dst], [src], bytes{, src_size}`; bytes past `src_size`
    /// are zero-filled (the edge mask)
    CpAsync {
        cache: CacheOp,
        dst: Reg,
        src: Reg,
        bytes: u32,
        src_size: Option<Operand>,
    },
    /// `cp.async.commit_group`
    CpAsyncCommit,
    /// `cp.async.wait_group n`: all but the n most recent committed groups are complete
    CpAsyncWait {
        n: u32,
    },
    /// `bar.sync 0`
    BarSync,
    /// `fence.proxy.async.shared::cta` (sm_90+)
    FenceProxyAsync,
    /// `mbarrier.init.shared::cta.b64 [addr], count` (sm_90+ here)
    MbarrierInit {
        addr: Reg,
        count: Operand,
    },
    /// `mbarrier.arrive{.expect_tx}.shared::cta.b64 state, [addr]{, tx}`: `state` (b64) is
    /// the token of the phase arrived at
    MbarrierArrive {
        dst: Reg,
        addr: Reg,
        tx: Option<Operand>,
    },
    /// `mbarrier.complete_tx.shared::cta.b64 [addr], tx`
    MbarrierCompleteTx {
        addr: Reg,
        tx: Operand,
    },
    /// `mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity`
    MbarrierTryWait {
        dst: Reg,
        addr: Reg,
        parity: Operand,
    },
    /// A `try_wait.parity` loop: `$Lmbar_wait_{label}: mbarrier.try_wait.parity... p, [addr],
    /// parity; @!p bra $Lmbar_wait_{label}` (`p` a scratch predicate; `label` unique in the
    /// kernel)
    MbarrierWait {
        pred: Reg,
        addr: Reg,
        parity: Operand,
        label: u32,
    },
    /// `wgmma.fence.sync.aligned`
    WgmmaFence,
    /// `setmaxnreg.{inc|dec}.sync.aligned.u32 n` (sm_90a): this warp's per-thread register
    /// limit becomes `n`
    SetMaxNReg {
        inc: bool,
        n: u32,
    },
    /// `wgmma.commit_group.sync.aligned`
    WgmmaCommit,
    /// `wgmma.wait_group.sync.aligned n`
    WgmmaWait {
        n: u32,
    },
    /// `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {d..}, a_desc, b_desc, scale_d,
    /// 1, 1, 0, 0`: d (n/2 f32, read when `scale_d`) = A·B (+ d); A and B K-major in shared
    /// memory through 64-bit descriptors
    WgmmaMmaAsync {
        n: u32,
        ab: Ty,
        d: Vec<Reg>,
        a_desc: Reg,
        b_desc: Reg,
        scale_d: bool,
    },
    /// `cvta.param.u64 d, name`: the generic address of tensor-map parameter `param`, which
    /// the bulk tensor copies take (d: 64 bits)
    TensorMapAddr {
        dst: Reg,
        param: ParamId,
    },
    /// `cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier::complete_tx::bytes [dst],
    /// [map, {coords}], [mbar]`: the box of tensor map `map` at `coords` (innermost first, n
    /// of them, signed 32-bit) to shared address `dst`; its bytes complete transactions of
    /// the mbarrier at `mbar`
    TmaLoad {
        dst: Reg,
        map: Reg,
        coords: Vec<Reg>,
        mbar: Reg,
    },
    /// `cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group [map, {coords}], [src]`
    TmaStore {
        map: Reg,
        coords: Vec<Reg>,
        src: Reg,
    },
    /// `cp.async.bulk.commit_group`
    BulkCommit,
    /// `cp.async.bulk.wait_group.read n`: all but the n most recent committed bulk groups
    /// have read their shared memory
    BulkWaitRead {
        n: u32,
    },
    /// `shfl.sync.mode.b32 d, a, b, c, mask`
    Shfl {
        mode: ShflMode,
        dst: Reg,
        src: Operand,
        lane: Operand,
        clamp: Operand,
        mask: u32,
    },
    /// `ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16 {d0..d3}, [addr]`
    Ldmatrix {
        trans: bool,
        dsts: [Reg; 4],
        addr: Reg,
    },
    /// `mma.sync.aligned...` d = a·b + c
    Mma {
        kind: MmaKind,
        d: [Reg; 4],
        a: [Reg; 4],
        b: [Reg; 2],
        c: [Reg; 4],
    },
    /// `atom.global.add.f32 d, [addr], a`
    AtomAddF32 {
        dst: Reg,
        addr: Reg,
        src: Operand,
    },
    /// `red.global.add.f32 [addr], a`
    RedAddF32 {
        addr: Reg,
        src: Operand,
    },
}

impl Op {
    /// Registers this op writes.
    pub fn defs(&self) -> Vec<Reg> {
        match self {
            Op::Special { dst, .. }
            | Op::LdParam { dst, .. }
            | Op::SharedAddr { dst, .. }
            | Op::Mov { dst, .. }
            | Op::Unary { dst, .. }
            | Op::Binary { dst, .. }
            | Op::Fma { dst, .. }
            | Op::MulWide { dst, .. }
            | Op::MadWide { dst, .. }
            | Op::Setp { dst, .. }
            | Op::Selp { dst, .. }
            | Op::Cvt { dst, .. }
            | Op::CvtTf32 { dst, .. }
            | Op::CvtPack { dst, .. }
            | Op::CvtUnpack { dst, .. }
            | Op::CvtaGlobal { dst, .. }
            | Op::Shfl { dst, .. }
            | Op::MbarrierArrive { dst, .. }
            | Op::MbarrierTryWait { dst, .. }
            | Op::AtomAddF32 { dst, .. }
            | Op::TensorMapAddr { dst, .. } => vec![*dst],
            Op::MbarrierWait { pred, .. } => vec![*pred],
            Op::WgmmaMmaAsync { d, .. } => d.clone(),
            Op::Ld { dsts, .. } => dsts.clone(),
            Op::Ldmatrix { dsts, .. } => dsts.to_vec(),
            Op::Mma { d, .. } => d.to_vec(),
            Op::St { .. }
            | Op::CpAsync { .. }
            | Op::CpAsyncCommit
            | Op::CpAsyncWait { .. }
            | Op::BarSync
            | Op::FenceProxyAsync
            | Op::MbarrierInit { .. }
            | Op::MbarrierCompleteTx { .. }
            | Op::SetMaxNReg { .. }
            | Op::WgmmaFence
            | Op::WgmmaCommit
            | Op::WgmmaWait { .. }
            | Op::TmaLoad { .. }
            | Op::TmaStore { .. }
            | Op::BulkCommit
            | Op::BulkWaitRead { .. }
            | Op::RedAddF32 { .. } => vec![],
        }
    }

    /// Registers this op reads (not counting a guard).
    pub fn uses(&self) -> Vec<Reg> {
        fn regs(ops: &[Operand]) -> Vec<Reg> {
            ops.iter()
                .filter_map(|o| match o {
                    Operand::Reg(r) => Some(*r),
                    Operand::Imm(_) | Operand::F32(_) | Operand::F64(_) => None,
                })
                .collect()
        }
        match self {
            Op::Special { .. }
            | Op::LdParam { .. }
            | Op::SharedAddr { .. }
            | Op::CpAsyncCommit
            | Op::CpAsyncWait { .. }
            | Op::BarSync
            | Op::FenceProxyAsync
            | Op::SetMaxNReg { .. }
            | Op::WgmmaFence
            | Op::WgmmaCommit
            | Op::WgmmaWait { .. }
            | Op::TensorMapAddr { .. }
            | Op::BulkCommit
            | Op::BulkWaitRead { .. } => vec![],
            Op::TmaLoad {
                dst,
                map,
                coords,
                mbar,
            } => [*dst, *map, *mbar]
                .into_iter()
                .chain(coords.iter().copied())
                .collect(),
            Op::TmaStore { map, coords, src } => [*map, *src]
                .into_iter()
                .chain(coords.iter().copied())
                .collect(),
            Op::MbarrierInit { addr, count: o }
            | Op::MbarrierCompleteTx { addr, tx: o }
            | Op::MbarrierTryWait {
                addr, parity: o, ..
            }
            | Op::MbarrierWait {
                addr, parity: o, ..
            } => {
                let mut v = regs(&[*o]);
                v.push(*addr);
                v
            }
            Op::MbarrierArrive { addr, tx, .. } => {
                let mut v = regs(&tx.iter().copied().collect::<Vec<_>>());
                v.push(*addr);
                v
            }
            Op::WgmmaMmaAsync {
                d,
                a_desc,
                b_desc,
                scale_d,
                ..
            } => {
                let mut v = vec![*a_desc, *b_desc];
                if *scale_d {
                    v.extend(d.iter().copied());
                }
                v
            }
            Op::Mov { src, .. } | Op::Unary { src, .. } => regs(&[*src]),
            Op::Binary { a, b, .. } | Op::MulWide { a, b, .. } | Op::Setp { a, b, .. } => {
                regs(&[*a, *b])
            }
            Op::Fma { a, b, c, .. } | Op::MadWide { a, b, c, .. } => regs(&[*a, *b, *c]),
            Op::Selp { a, b, pred, .. } => {
                let mut v = regs(&[*a, *b]);
                v.push(*pred);
                v
            }
            Op::Cvt { src, .. }
            | Op::CvtTf32 { src, .. }
            | Op::CvtUnpack { src, .. }
            | Op::CvtaGlobal { src, .. } => vec![*src],
            Op::CvtPack { hi, lo, .. } => vec![*hi, *lo],
            Op::Ld { addr, .. } | Op::Ldmatrix { addr, .. } => vec![*addr],
            Op::St { srcs, addr, .. } => {
                let mut v = regs(srcs);
                v.push(*addr);
                v
            }
            Op::CpAsync {
                dst, src, src_size, ..
            } => {
                let mut v = vec![*dst, *src];
                if let Some(s) = src_size {
                    v.extend(regs(&[*s]));
                }
                v
            }
            Op::Shfl {
                src, lane, clamp, ..
            } => regs(&[*src, *lane, *clamp]),
            Op::Mma { a, b, c, .. } => a.iter().chain(b.iter()).chain(c.iter()).copied().collect(),
            Op::AtomAddF32 { addr, src, .. } | Op::RedAddF32 { addr, src } => {
                let mut v = regs(&[*src]);
                v.push(*addr);
                v
            }
        }
    }
}

/// The sm_90 instruction families, and the targets that have each: the one list the printer's
/// target gate and the emulator's async-proxy tracking read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hopper {
    /// `fence.proxy.async` (sm_90+).
    ProxyFence,
    /// `mbarrier.*` (sm_90+ here).
    Mbarrier,
    /// `wgmma.*` (sm_90a only: sm_100 has no wgmma).
    Wgmma,
    /// The TMA: `cp.async.bulk.tensor`, its bulk groups and tensor-map parameters (sm_90+).
    Tma,
    /// `setmaxnreg` (sm_90a only here: sm_100 has it as sm_100a, a target Tessera lacks).
    SetMaxNReg,
}

impl Hopper {
    /// Whether `target` has the family.
    pub fn supported(self, target: Target) -> bool {
        match self {
            Hopper::ProxyFence | Hopper::Mbarrier | Hopper::Tma => {
                !target.is_spirv() && target.sm() >= 90
            }
            Hopper::Wgmma | Hopper::SetMaxNReg => target == Target::Sm90a,
        }
    }

    /// The family as an error names it.
    pub fn what(self) -> &'static str {
        match self {
            Hopper::ProxyFence => "fence.proxy.async (sm_90+)",
            Hopper::Mbarrier => "mbarrier (sm_90+)",
            Hopper::Wgmma => "wgmma (sm_90a only)",
            Hopper::Tma => "TMA bulk tensor copies (cp.async.bulk.tensor, sm_90+)",
            Hopper::SetMaxNReg => "setmaxnreg (sm_90a only)",
        }
    }
}

impl Op {
    /// The sm_90 family of the instruction (`None`: every PTX target has it).
    pub fn hopper(&self) -> Option<Hopper> {
        match self {
            Op::FenceProxyAsync => Some(Hopper::ProxyFence),
            Op::SetMaxNReg { .. } => Some(Hopper::SetMaxNReg),
            Op::MbarrierInit { .. }
            | Op::MbarrierArrive { .. }
            | Op::MbarrierCompleteTx { .. }
            | Op::MbarrierTryWait { .. }
            | Op::MbarrierWait { .. } => Some(Hopper::Mbarrier),
            Op::WgmmaFence | Op::WgmmaCommit | Op::WgmmaWait { .. } | Op::WgmmaMmaAsync { .. } => {
                Some(Hopper::Wgmma)
            }
            Op::TensorMapAddr { .. }
            | Op::TmaLoad { .. }
            | Op::TmaStore { .. }
            | Op::BulkCommit
            | Op::BulkWaitRead { .. } => Some(Hopper::Tma),
            Op::Special { .. }
            | Op::LdParam { .. }
            | Op::SharedAddr { .. }
            | Op::Mov { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Fma { .. }
            | Op::MulWide { .. }
            | Op::MadWide { .. }
            | Op::Setp { .. }
            | Op::Selp { .. }
            | Op::Cvt { .. }
            | Op::CvtTf32 { .. }
            | Op::CvtPack { .. }
            | Op::CvtUnpack { .. }
            | Op::CvtaGlobal { .. }
            | Op::Ld { .. }
            | Op::St { .. }
            | Op::CpAsync { .. }
            | Op::CpAsyncCommit
            | Op::CpAsyncWait { .. }
            | Op::BarSync
            | Op::Shfl { .. }
            | Op::Ldmatrix { .. }
            | Op::Mma { .. }
            | Op::AtomAddF32 { .. }
            | Op::RedAddF32 { .. } => None,
        }
    }

    /// Whether the instruction reads shared memory through the async proxy: a generic-proxy
    /// write must reach it through the writer's `fence.proxy.async`.
    pub fn reads_shared_async(&self) -> bool {
        matches!(self, Op::WgmmaMmaAsync { .. } | Op::TmaStore { .. })
    }

    /// Whether the instruction is one of the asynchronous matrix products or their fence,
    /// commit and wait (which may touch an in-flight product's accumulators).
    pub fn is_wgmma(&self) -> bool {
        self.hopper() == Some(Hopper::Wgmma)
    }
}
