//! Performance counters of an emulated launch, computed from the addresses each warp
//! instruction's active lanes use (the emulator knows them exactly), so memory access patterns
//! can be judged without a GPU.
//!
//! # Shared memory: wavefronts and bank conflicts
//! Shared memory has 32 banks of 4-byte words; word `w` is in bank `w % 32`. A warp-level
//! access is split into phases: accesses of up to 4 bytes per lane are one phase of 32 lanes,
//! 8 bytes two phases of 16 lanes (lanes 0–15, 16–31), 16 bytes four phases of 8 lanes.
//! `ldmatrix .x4` is four phases, one per 8x8 matrix (lanes 8q..8q+7 give the addresses of
//! matrix q's 8 rows of 16 bytes). The shared side of `cp.async` is counted like a store of
//! its copy size. In each phase with at least one active lane, lanes that touch the same word
//! share it (broadcast), and the phase needs as many wavefronts as the largest number of
//! distinct words any one bank holds. `shared_wavefronts` sums them; `bank_conflicts` is
//! `shared_wavefronts` minus the phases (the conflict-free count).
//!
//! # Global memory: requests and sectors
//! Every warp-level global `ld`/`st` and the global side of `cp.async` with at least one
//! active lane is one request; its sectors are the distinct 32-byte aligned segments the
//! active lanes' bytes fall in (a lane's access is aligned to its size, at most 16 bytes, so
//! it lies in one sector; a `cp.async` reading 0 bytes touches none). Sectors per request is
//! Nsight Compute's `sectors/request`: a fully coalesced warp of 4-byte loads is 4, of 16-byte
//! loads 16; 32 lanes each in a different sector is 32. `atom`/`red` are not counted here
//! (they are in the instruction mix).
//!
//! # Instruction mix
//! Every warp instruction (a warp step, whether or not its guard leaves lanes active) falls in
//! one [`InstClass`]; the counts add up to [`super::Stats::warp_instructions`].

use tessera_compiler::backend::ptx::{Op, Operand, Reg, Space, Ty, UnOp};

/// What kind of unit a warp instruction occupies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InstClass {
    /// Integer and index arithmetic, moves, selects, special registers, parameters, addresses.
    Int,
    /// f32 arithmetic and comparisons (not the special functions).
    Fp32,
    /// f64 arithmetic, comparisons and functions.
    Fp64,
    /// f32 `ex2 lg2 rcp sqrt rsqrt tanh`.
    Special,
    /// `cvt`, including packs and unpacks.
    Convert,
    /// `ld.global`, `st.global`, `atom`, `red`.
    Global,
    /// `ld.shared`, `st.shared`.
    Shared,
    /// `cp.async`, its commit and wait.
    AsyncCopy,
    /// `mma`, `ldmatrix`.
    Tensor,
    /// `shfl.sync`.
    Shuffle,
    /// `bar.sync`.
    Barrier,
    /// Branches and `ret`.
    Control,
}

/// Warp instructions executed, by [`InstClass`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct InstMix {
    pub int: u64,
    pub fp32: u64,
    pub fp64: u64,
    pub special: u64,
    pub convert: u64,
    pub global: u64,
    pub shared: u64,
    pub async_copy: u64,
    pub tensor: u64,
    pub shuffle: u64,
    pub barrier: u64,
    pub control: u64,
}

impl InstMix {
    pub fn add_one(&mut self, c: InstClass) {
        let slot = match c {
            InstClass::Int => &mut self.int,
            InstClass::Fp32 => &mut self.fp32,
            InstClass::Fp64 => &mut self.fp64,
            InstClass::Special => &mut self.special,
            InstClass::Convert => &mut self.convert,
            InstClass::Global => &mut self.global,
            InstClass::Shared => &mut self.shared,
            InstClass::AsyncCopy => &mut self.async_copy,
            InstClass::Tensor => &mut self.tensor,
            InstClass::Shuffle => &mut self.shuffle,
            InstClass::Barrier => &mut self.barrier,
            InstClass::Control => &mut self.control,
        };
        *slot += 1;
    }

    /// The classes with their short names, in a fixed order.
    pub fn entries(&self) -> [(&'static str, u64); 12] {
        [
            ("int", self.int),
            ("fp32", self.fp32),
            ("fp64", self.fp64),
            ("sfu", self.special),
            ("cvt", self.convert),
            ("global", self.global),
            ("shared", self.shared),
            ("async", self.async_copy),
            ("tensor", self.tensor),
            ("shfl", self.shuffle),
            ("bar", self.barrier),
            ("ctrl", self.control),
        ]
    }

    pub fn total(&self) -> u64 {
        self.entries().iter().map(|e| e.1).sum()
    }

    pub fn add(&mut self, o: &InstMix) {
        self.int += o.int;
        self.fp32 += o.fp32;
        self.fp64 += o.fp64;
        self.special += o.special;
        self.convert += o.convert;
        self.global += o.global;
        self.shared += o.shared;
        self.async_copy += o.async_copy;
        self.tensor += o.tensor;
        self.shuffle += o.shuffle;
        self.barrier += o.barrier;
        self.control += o.control;
    }
}

/// Memory counters and the instruction mix of a run (module docs give the definitions).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Warp-level shared accesses: `ld/st.shared`, `ldmatrix`, the shared side of `cp.async`.
    pub shared_requests: u64,
    /// Wavefronts those accesses need.
    pub shared_wavefronts: u64,
    /// Wavefronts beyond the conflict-free count (one per phase).
    pub bank_conflicts: u64,
    /// Of the above, the part due to `ldmatrix`.
    pub ldmatrix_wavefronts: u64,
    pub ldmatrix_conflicts: u64,
    /// Warp-level global loads (`ld.global`, the global side of `cp.async`) and their sectors.
    pub global_load_requests: u64,
    pub global_load_sectors: u64,
    /// Warp-level global stores (`st.global`) and their sectors.
    pub global_store_requests: u64,
    pub global_store_sectors: u64,
    pub mix: InstMix,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

impl Counters {
    /// Sectors per request of the global loads (NaN when there were none).
    pub fn load_sectors_per_request(&self) -> f64 {
        ratio(self.global_load_sectors, self.global_load_requests)
    }
    /// Sectors per request of the global stores (NaN when there were none).
    pub fn store_sectors_per_request(&self) -> f64 {
        ratio(self.global_store_sectors, self.global_store_requests)
    }
    /// Sectors per request of all global requests (NaN when there were none).
    pub fn sectors_per_request(&self) -> f64 {
        ratio(
            self.global_load_sectors + self.global_store_sectors,
            self.global_load_requests + self.global_store_requests,
        )
    }

    pub fn add(&mut self, o: &Counters) {
        self.shared_requests += o.shared_requests;
        self.shared_wavefronts += o.shared_wavefronts;
        self.bank_conflicts += o.bank_conflicts;
        self.ldmatrix_wavefronts += o.ldmatrix_wavefronts;
        self.ldmatrix_conflicts += o.ldmatrix_conflicts;
        self.global_load_requests += o.global_load_requests;
        self.global_load_sectors += o.global_load_sectors;
        self.global_store_requests += o.global_store_requests;
        self.global_store_sectors += o.global_store_sectors;
        self.mix.add(&o.mix);
    }

    /// Counts one shared access of `bytes` per lane at `addr[lane]` for the lanes in `eff`;
    /// returns (wavefronts, conflicts).
    pub fn shared_access(&mut self, addr: &[u32; 32], eff: u32, bytes: u32) -> (u64, u64) {
        let (wf, phases) = shared_wavefronts(addr, eff, bytes);
        self.shared_requests += 1;
        self.shared_wavefronts += wf;
        self.bank_conflicts += wf - phases;
        (wf, wf - phases)
    }

    /// Counts one global request by the lanes in `eff`, each touching the sector of `addr[lane]`.
    fn global_access(&mut self, addr: &[u64; 32], eff: u32, store: bool) {
        let sectors = distinct_sectors(addr, eff);
        if store {
            self.global_store_requests += 1;
            self.global_store_sectors += sectors;
        } else {
            self.global_load_requests += 1;
            self.global_load_sectors += sectors;
        }
    }

    /// Counts one warp instruction `op` executed by the lanes in `eff` (guard applied);
    /// `val(operand, lane)` reads a lane's operand.
    pub fn count(&mut self, op: &Op, eff: u32, val: &dyn Fn(Operand, u32) -> u64) {
        self.mix.add_one(class_of(op));
        if eff == 0 {
            return;
        }
        let gather = |r: Reg, off: i64| {
            let mut a = [0u64; 32];
            for (l, x) in a.iter_mut().enumerate() {
                if eff & (1 << l) != 0 {
                    *x = val(Operand::Reg(r), l as u32).wrapping_add(off as u64);
                }
            }
            a
        };
        let low = |a: [u64; 32]| a.map(|x| x as u32);
        match op {
            Op::Ld {
                space,
                ty,
                dsts,
                addr,
                offset,
            } => {
                let bytes = ty.bits() / 8 * dsts.len() as u32;
                let a = gather(*addr, i64::from(*offset));
                match space {
                    Space::Global => self.global_access(&a, eff, false),
                    Space::Shared => {
                        self.shared_access(&low(a), eff, bytes);
                    }
                }
            }
            Op::St {
                space,
                ty,
                srcs,
                addr,
                offset,
            } => {
                let bytes = ty.bits() / 8 * srcs.len() as u32;
                let a = gather(*addr, i64::from(*offset));
                match space {
                    Space::Global => self.global_access(&a, eff, true),
                    Space::Shared => {
                        self.shared_access(&low(a), eff, bytes);
                    }
                }
            }
            Op::CpAsync {
                dst,
                src,
                bytes,
                src_size,
                ..
            } => {
                self.shared_access(&low(gather(*dst, 0)), eff, *bytes);
                let mut reading = eff;
                if let Some(o) = src_size {
                    for l in 0..32u32 {
                        if eff & (1 << l) != 0 && val(*o, l) & 0xffff_ffff == 0 {
                            reading &= !(1 << l);
                        }
                    }
                }
                let a = gather(*src, 0);
                self.global_load_requests += 1;
                self.global_load_sectors += distinct_sectors(&a, reading);
            }
            Op::Ldmatrix { addr, .. } => {
                let (wf, conflicts) = self.shared_access(&low(gather(*addr, 0)), eff, 16);
                self.ldmatrix_wavefronts += wf;
                self.ldmatrix_conflicts += conflicts;
            }
            _ => {}
        }
    }
}

/// The class of `op`.
pub fn class_of(op: &Op) -> InstClass {
    let arith = |ty: &Ty| match ty {
        Ty::F32 => InstClass::Fp32,
        Ty::F64 => InstClass::Fp64,
        _ => InstClass::Int,
    };
    match op {
        Op::Special { .. }
        | Op::LdParam { .. }
        | Op::SharedAddr { .. }
        | Op::Mov { .. }
        | Op::Selp { .. }
        | Op::MulWide { .. }
        | Op::MadWide { .. }
        | Op::CvtaGlobal { .. }
        | Op::TensorMapAddr { .. } => InstClass::Int,
        Op::Unary { op, ty, .. } => match (op, ty) {
            (UnOp::Neg | UnOp::Abs | UnOp::Not, t) => arith(t),
            (_, Ty::F32) => InstClass::Special,
            (_, t) => arith(t),
        },
        Op::Binary { ty, .. } | Op::Fma { ty, .. } | Op::Setp { ty, .. } => arith(ty),
        Op::Cvt { .. } | Op::CvtTf32 { .. } | Op::CvtPack { .. } | Op::CvtUnpack { .. } => {
            InstClass::Convert
        }
        Op::Ld { space, .. } | Op::St { space, .. } => match space {
            Space::Global => InstClass::Global,
            Space::Shared => InstClass::Shared,
        },
        Op::AtomAddF32 { .. } | Op::RedAddF32 { .. } => InstClass::Global,
        Op::CpAsync { .. }
        | Op::CpAsyncCommit
        | Op::CpAsyncWait { .. }
        | Op::TmaLoad { .. }
        | Op::TmaStore { .. }
        | Op::BulkCommit
        | Op::BulkWaitRead { .. } => InstClass::AsyncCopy,
        Op::BarSync
        | Op::FenceProxyAsync
        | Op::MbarrierInit { .. }
        | Op::MbarrierArrive { .. }
        | Op::MbarrierCompleteTx { .. }
        | Op::MbarrierTryWait { .. }
        | Op::MbarrierWait { .. }
        | Op::SetMaxNReg { .. } => InstClass::Barrier,
        Op::Shfl { .. } => InstClass::Shuffle,
        Op::Ldmatrix { .. }
        | Op::Mma { .. }
        | Op::WgmmaFence
        | Op::WgmmaCommit
        | Op::WgmmaWait { .. }
        | Op::WgmmaMmaAsync { .. } => InstClass::Tensor,
    }
}

/// Distinct 32-byte sectors of the addresses of the lanes in `eff`.
fn distinct_sectors(addr: &[u64; 32], eff: u32) -> u64 {
    let mut s = [0u64; 32];
    let mut n = 0;
    for (l, a) in addr.iter().enumerate() {
        if eff & (1 << l) != 0 {
            s[n] = a >> 5;
            n += 1;
        }
    }
    let s = &mut s[..n];
    s.sort_unstable();
    let mut count = 0;
    for i in 0..s.len() {
        if i == 0 || s[i] != s[i - 1] {
            count += 1;
        }
    }
    count
}

/// (wavefronts, phases with an active lane) of a shared access of `bytes` per lane.
pub fn shared_wavefronts(addr: &[u32; 32], eff: u32, bytes: u32) -> (u64, u64) {
    let words_per_lane = (bytes / 4).clamp(1, 4);
    let lanes_per_phase = 32 / words_per_lane;
    let (mut wavefronts, mut phases) = (0u64, 0u64);
    for p in 0..words_per_lane {
        let mut words = [0u32; 32];
        let mut n = 0;
        for l in p * lanes_per_phase..(p + 1) * lanes_per_phase {
            if eff & (1 << l) == 0 {
                continue;
            }
            let first = addr[l as usize] / 4;
            for w in first..first + words_per_lane {
                words[n] = w;
                n += 1;
            }
        }
        if n == 0 {
            continue;
        }
        let words = &mut words[..n];
        words.sort_unstable();
        let mut per_bank = [0u8; 32];
        for i in 0..words.len() {
            if i == 0 || words[i] != words[i - 1] {
                per_bank[(words[i] % 32) as usize] += 1;
            }
        }
        phases += 1;
        wavefronts += u64::from(per_bank.iter().copied().max().unwrap_or(1));
    }
    (wavefronts, phases)
}

#[cfg(test)]
mod tests {
    use super::Counters;
    use crate::emu::{run, Arg, Launch, Stats};
    use tessera_compiler::backend::ptx::builder::imm;
    use tessera_compiler::backend::ptx::{
        Dim, Kernel, KernelBuilder, Op, ParamTy, SReg, Space, Ty,
    };
    use tessera_lang::Span;

    fn at() -> Span {
        Span::new(0, 0, 1)
    }

    fn launch(k: &Kernel, bufs: &mut [Vec<u8>]) -> Stats {
        let args: Vec<Arg> = (0..bufs.len())
            .map(|buffer| Arg::Ptr { buffer, offset: 0 })
            .collect();
        let s = run(k, Launch::linear(1, 32), &args, bufs).unwrap();
        assert_eq!(s.counters.mix.total(), s.warp_instructions);
        s
    }

    /// Lane i reads `ld.shared.f32` word `stride·i` and writes it to `y[i]`.
    fn shared_read(stride: i64) -> Counters {
        let mut b = KernelBuilder::new("smem", at());
        let y = b.param("y", ParamTy::Ptr);
        let smem = b.shared("s", 4 * 32 * 32, 16);
        let yp = b.ld_param(y);
        let tid = b.special(SReg::Tid(Dim::X));
        let base = b.shared_addr(smem);
        let a = b.fma(Ty::U32, tid, imm(4 * stride), base);
        let v = b.ld(Space::Shared, Ty::F32, a, 0, 1)[0];
        let out = b.mad_wide(Ty::U32, tid, imm(4), yp);
        b.st(Space::Global, Ty::F32, out, 0, &[v.into()]);
        b.ret();
        let k = b.finish().unwrap();
        launch(&k, &mut [vec![0u8; 128]]).counters
    }

    #[test]
    fn shared_f32_conflict_free_two_way_and_broadcast() {
        let c = shared_read(1);
        assert_eq!(
            (c.shared_requests, c.shared_wavefronts, c.bank_conflicts),
            (1, 1, 0)
        );
        let c = shared_read(2);
        assert_eq!(
            (c.shared_requests, c.shared_wavefronts, c.bank_conflicts),
            (1, 2, 1)
        );
        let c = shared_read(0);
        assert_eq!(
            (c.shared_requests, c.shared_wavefronts, c.bank_conflicts),
            (1, 1, 0)
        );
        // A stride of 32 words puts every lane in bank 0: 32 wavefronts.
        let c = shared_read(32);
        assert_eq!((c.shared_wavefronts, c.bank_conflicts), (32, 31));
        // The coalesced 4-byte store of the result: 4 sectors.
        assert_eq!((c.global_store_requests, c.global_store_sectors), (1, 4));
        assert_eq!(c.mix.shared, 1);
        assert_eq!(c.mix.global, 1);
        assert_eq!(c.mix.control, 1);
    }

    /// Lane i loads `n` f32s at byte `stride·i` of `x`.
    fn global_read(stride: i64, n: usize) -> Counters {
        let mut b = KernelBuilder::new("gmem", at());
        let x = b.param("x", ParamTy::Ptr);
        let xp = b.ld_param(x);
        let tid = b.special(SReg::Tid(Dim::X));
        let a = b.mad_wide(Ty::U32, tid, imm(stride), xp);
        b.ld(Space::Global, Ty::F32, a, 0, n);
        b.ret();
        let k = b.finish().unwrap();
        launch(&k, &mut [vec![0u8; 32 * 64]]).counters
    }

    #[test]
    fn global_sectors_per_request() {
        let c = global_read(4, 1);
        assert_eq!((c.global_load_requests, c.global_load_sectors), (1, 4));
        assert_eq!(c.load_sectors_per_request(), 4.0);
        let c = global_read(32, 1);
        assert_eq!(c.load_sectors_per_request(), 32.0);
        let c = global_read(16, 4);
        assert_eq!(c.load_sectors_per_request(), 16.0);
        let c = global_read(8, 2);
        assert_eq!(c.load_sectors_per_request(), 8.0);
        // All lanes on one word: one sector.
        let c = global_read(0, 1);
        assert_eq!(c.load_sectors_per_request(), 1.0);
        assert!(c.store_sectors_per_request().is_nan());
    }

    /// `ldmatrix.x4` where lane l gives the row address `row_bytes·l`.
    fn ldmatrix(row_bytes: i64) -> Counters {
        let mut b = KernelBuilder::new("ldm", at());
        let smem = b.shared("s", 32 * 64, 16);
        let tid = b.special(SReg::Tid(Dim::X));
        let base = b.shared_addr(smem);
        let a = b.fma(Ty::U32, tid, imm(row_bytes), base);
        let dsts = [
            b.reg(Ty::B32),
            b.reg(Ty::B32),
            b.reg(Ty::B32),
            b.reg(Ty::B32),
        ];
        b.push(Op::Ldmatrix {
            trans: false,
            dsts,
            addr: a,
        });
        b.ret();
        let k = b.finish().unwrap();
        launch(&k, &mut []).counters
    }

    #[test]
    fn ldmatrix_phases_per_matrix() {
        // Contiguous 16-byte rows: each matrix's 8 rows cover all 32 banks once.
        let c = ldmatrix(16);
        assert_eq!((c.ldmatrix_wavefronts, c.ldmatrix_conflicts), (4, 0));
        assert_eq!(c.mix.tensor, 1);
        // 64-byte row pitch: rows 0, 2, 4, 6 share banks 0-3 (4-way in every phase).
        let c = ldmatrix(64);
        assert_eq!((c.ldmatrix_wavefronts, c.ldmatrix_conflicts), (16, 12));
        assert_eq!((c.shared_wavefronts, c.bank_conflicts), (16, 12));
    }

    #[test]
    fn vector_shared_phases() {
        let mut a = [0u32; 32];
        for (l, x) in a.iter_mut().enumerate() {
            *x = 16 * l as u32;
        }
        // 16-byte accesses, consecutive: 4 phases, no conflict.
        assert_eq!(super::shared_wavefronts(&a, u32::MAX, 16), (4, 4));
        // 8-byte accesses 16 bytes apart: each half-warp spans 64 words, 2 per bank.
        assert_eq!(super::shared_wavefronts(&a, u32::MAX, 8), (4, 2));
        // Only lanes 0-7 active in a 16-byte access: one phase.
        assert_eq!(super::shared_wavefronts(&a, 0xff, 16), (1, 1));
    }
}
