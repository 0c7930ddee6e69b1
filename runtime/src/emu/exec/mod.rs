//! The interpreter: blocks in order, warps of 32 lanes with per-lane pcs (lowest pc first),
//! shared memory with a per-byte race shadow, `cp.async` queues per thread.

use super::counters::InstClass;
use super::numeric::{
    cvt, float_of, half_elem, int_of, mask, pack_bf16x2, pack_f16x2, pack_fp8x2, tf32_elem,
    tf32_rna, unpack_fp8x2,
};
use super::{Arg, EmuError, EmuErrorKind, Launch, Options, Stats};
use crate::DType;
use std::collections::{BTreeMap, VecDeque};
use tessera_compiler::backend::ptx::print::{instr_text, RegNames};
use tessera_compiler::backend::ptx::verify::verify;
use tessera_compiler::backend::ptx::{
    BinOp, Cmp, Dim, Instr, Kernel, MmaKind, Op, Operand, Pack, ParamTy, Reg, SReg, ShflMode,
    Space, Terminator, Ty, TyClass, UnOp, Unpack,
};

const FULL: u32 = u32::MAX;
type Pc = (u32, u32);
/// An error and the lane that raised it.
type Fault = (EmuErrorKind, u32);

mod alu;
mod hopper;
mod instr;
mod memory;
mod setmaxnreg;
mod tma;

use hopper::{InFlight, Mbar};
use setmaxnreg::RegPool;
use tma::{BulkQueue, TmaWrite};

use alu::{binary, mma, opnd, present, reg, setp, unary};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum LaneState {
    Running,
    Barrier,
    /// In an `mbarrier.wait.parity` loop until the phase of that parity of the barrier at
    /// `addr` completes.
    MbarrierWait {
        addr: u32,
        parity: u32,
    },
    /// In `setmaxnreg.inc` until the block's pool has the registers for `n` per thread.
    RegWait {
        n: u32,
    },
    Exited,
}

struct Warp {
    index: u32,
    regs: Vec<u64>,
    pc: [Pc; 32],
    state: [LaneState; 32],
    /// wgmmas issued since the last `wgmma.commit_group`, and the committed groups not yet
    /// retired by a `wgmma.wait_group`.
    wgmma_open: Vec<InFlight>,
    wgmma_groups: VecDeque<Vec<InFlight>>,
    /// The per-thread register limit (`setmaxnreg`), and the `setmaxnreg`s executed (pc and
    /// count) in order.
    nreg: u32,
    setmaxnreg: Vec<(Pc, u32)>,
}

struct Copy {
    dst: u32,
    src: u64,
    bytes: u32,
    src_size: u32,
    pc: Pc,
}

#[derive(Default)]
struct AsyncQueue {
    open: Vec<Copy>,
    committed: VecDeque<Vec<Copy>>,
}

/// Who touched a shared byte since the last barrier (thread ids + 1; 0 = nobody).
#[derive(Copy, Clone, Default)]
struct Shadow {
    epoch: u32,
    writer: u32,
    w_pc: Pc,
    reader: u32,
    r_pc: Pc,
    reader2: u32,
    r2_pc: Pc,
}

struct SharedMem {
    bytes: Vec<u8>,
    shadow: Vec<Shadow>,
    /// Thread id + 1 of a pending cp.async to each byte.
    pending: Vec<u32>,
    epoch: u32,
    /// The mbarriers initialised in this block, by shared address.
    mbars: BTreeMap<u32, Mbar>,
    /// In-flight wgmmas reading each byte (a write to it is a race).
    wgmma_reads: Vec<u16>,
    /// The thread (id + 1) whose generic-proxy write to each byte its `fence.proxy.async`
    /// has not yet ordered before async-proxy reads, and each thread's such bytes.
    unfenced: Vec<u32>,
    unfenced_by: BTreeMap<u32, Vec<u32>>,
    /// Per byte, the TMA load that wrote it (index + 1 into `tma_writes`; 0 = none).
    tma_guard: Vec<u32>,
    tma_writes: Vec<TmaWrite>,
    /// Per mbarrier, per thread: the phases that thread has seen complete (by a wait, or
    /// another thread's wait before a barrier both passed).
    seen: BTreeMap<u32, Vec<u64>>,
    /// In-flight TMA stores reading each byte (a write to it is a race), and each thread's
    /// bulk groups.
    bulk_reads: Vec<u16>,
    bulk: BTreeMap<u32, BulkQueue>,
}

struct Machine<'a> {
    k: &'a Kernel,
    names: RegNames,
    launch: Launch,
    params: Vec<u64>,
    shared_offsets: Vec<u32>,
    buffers: &'a mut [Vec<u8>],
    stats: Stats,
    max_steps: u64,
    ctaid: [u32; 3],
    /// Per buffer, the block (linear index + 1) that first stored to each byte in this launch;
    /// allocated at a buffer's first store, and only for launches of more than one block.
    writers: Vec<Option<Vec<u32>>>,
    /// Whether stores are checked for races between blocks (more than one block).
    track_writes: bool,
    /// The running block's linear index + 1.
    block_no: u32,
    /// Whether the kernel has async-proxy readers of shared memory (wgmma, TMA stores):
    /// generic writes are then tracked until their thread's `fence.proxy.async`.
    track_proxy: bool,
    /// The tensor map of each tensor-map parameter, by parameter index.
    maps: Vec<Option<crate::tensor_map::TensorMap>>,
    /// The block's register pool (`setmaxnreg`).
    pool: RegPool,
}

fn lanes(m: u32) -> impl Iterator<Item = u32> {
    (0..32u32).filter(move |l| m & (1 << l) != 0)
}

pub(super) fn run(
    k: &Kernel,
    launch: Launch,
    args: &[Arg],
    buffers: &mut [Vec<u8>],
    opts: &Options,
) -> Result<Stats, EmuError> {
    verify(k).map_err(|e| EmuError::new(EmuErrorKind::InvalidKernel(e)))?;
    let threads: u64 = launch.block.iter().map(|d| u64::from(*d)).product();
    if launch.block.contains(&0) || launch.grid.contains(&0) {
        return Err(EmuError::new(EmuErrorKind::BadLaunch {
            reason: "a grid or block dimension is 0",
        }));
    }
    if threads > 1024 {
        return Err(EmuError::new(EmuErrorKind::BadLaunch {
            reason: "more than 1024 threads per block",
        }));
    }
    if launch.block[2] > 64 || launch.grid[1] > 65535 || launch.grid[2] > 65535 {
        return Err(EmuError::new(EmuErrorKind::BadLaunch {
            reason: "block z > 64 or grid y/z > 65535",
        }));
    }
    if k.max_threads.is_some_and(|m| u64::from(m) < threads) {
        return Err(EmuError::new(EmuErrorKind::BadLaunch {
            reason: "more threads than the kernel's .maxntid",
        }));
    }
    if args.len() != k.params.len() {
        return Err(EmuError::new(EmuErrorKind::ArgCount {
            expected: k.params.len(),
            got: args.len(),
        }));
    }
    let mut params = vec![];
    let mut maps = vec![None; args.len()];
    for (i, (a, p)) in args.iter().zip(&k.params).enumerate() {
        let v = match (a, p.ty) {
            (Arg::TensorMap(m), ParamTy::TensorMap) => {
                maps[i] = Some(*m);
                0
            }
            (Arg::Ptr { buffer, offset }, ParamTy::Ptr | ParamTy::U64) => {
                if *buffer >= buffers.len() {
                    return Err(EmuError::new(EmuErrorKind::NoBuffer {
                        index: i,
                        buffer: *buffer,
                    }));
                }
                super::ptr(*buffer, *offset)
            }
            (Arg::U64(v), ParamTy::Ptr | ParamTy::U64) => *v,
            (Arg::U32(v), ParamTy::U32) => u64::from(*v),
            (Arg::F32(v), ParamTy::F32) => u64::from(v.to_bits()),
            (Arg::Ptr { .. } | Arg::U64(_) | Arg::U32(_) | Arg::F32(_) | Arg::TensorMap(_), _) => {
                return Err(EmuError::new(EmuErrorKind::ArgType {
                    index: i,
                    param: p.name.clone(),
                }))
            }
        };
        params.push(v);
    }
    let (shared_offsets, shared_size) = k.shared_layout();
    let nblocks: u64 = launch.grid.iter().map(|d| u64::from(*d)).product();
    let nbuffers = buffers.len();
    let mut m = Machine {
        k,
        names: RegNames::new(k),
        launch,
        params,
        shared_offsets,
        buffers,
        stats: Stats::default(),
        max_steps: opts.max_steps,
        ctaid: [0; 3],
        writers: vec![None; nbuffers],
        track_writes: nblocks > 1,
        track_proxy: k
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .any(|i| i.op.reads_shared_async()),
        block_no: 0,
        maps,
        pool: RegPool::new(k.max_threads, threads as u32),
    };
    let mut smem = SharedMem {
        bytes: vec![0; shared_size as usize],
        shadow: vec![Shadow::default(); shared_size as usize],
        pending: vec![0; shared_size as usize],
        epoch: 0,
        mbars: BTreeMap::new(),
        wgmma_reads: vec![0; shared_size as usize],
        unfenced: vec![0; shared_size as usize],
        unfenced_by: BTreeMap::new(),
        tma_guard: vec![0; shared_size as usize],
        tma_writes: vec![],
        seen: BTreeMap::new(),
        bulk_reads: vec![0; shared_size as usize],
        bulk: BTreeMap::new(),
    };
    for z in 0..launch.grid[2] {
        for y in 0..launch.grid[1] {
            for x in 0..launch.grid[0] {
                m.ctaid = [x, y, z];
                m.block_no = m.block_no.wrapping_add(1);
                m.pool = RegPool::new(k.max_threads, threads as u32);
                smem.bytes.fill(0);
                smem.shadow.fill(Shadow::default());
                smem.pending.fill(0);
                smem.mbars.clear();
                smem.wgmma_reads.fill(0);
                smem.unfenced.fill(0);
                smem.unfenced_by.clear();
                smem.tma_guard.fill(0);
                smem.tma_writes.clear();
                smem.seen.clear();
                smem.bulk_reads.fill(0);
                smem.bulk.clear();
                smem.epoch = 1;
                m.run_block(threads as u32, &mut smem)?;
            }
        }
    }
    Ok(m.stats)
}

impl Machine<'_> {
    fn thread_xyz(&self, tid: u32) -> [u32; 3] {
        let [bx, by, _] = self.launch.block;
        [tid % bx, (tid / bx) % by, tid / (bx * by)]
    }

    fn instr(&self, pc: Pc) -> Option<(&Instr, tessera_lang::Span)> {
        let b = self.k.blocks.get(pc.0 as usize)?;
        Some((b.insts.get(pc.1 as usize)?, *b.spans.get(pc.1 as usize)?))
    }

    fn text(&self, pc: Pc) -> String {
        match self.instr(pc) {
            Some((i, _)) => instr_text(self.k, &self.names, i),
            None => match self.k.blocks.get(pc.0 as usize).map(|b| b.term) {
                Some(Terminator::Ret) => "ret;".into(),
                Some(Terminator::Bra(_) | Terminator::CondBra { .. }) => "bra;".into(),
                None => "?".into(),
            },
        }
    }

    fn error(&self, kind: EmuErrorKind, pc: Pc, tid: u32) -> EmuError {
        let span = match self.instr(pc) {
            Some((_, s)) => Some(s),
            None => self.k.blocks.get(pc.0 as usize).map(|b| b.term_span),
        };
        EmuError {
            kind,
            inst: Some(self.text(pc)),
            span,
            block: Some(self.ctaid),
            thread: Some(self.thread_xyz(tid)),
        }
    }

    fn run_block(&mut self, threads: u32, smem: &mut SharedMem) -> Result<(), EmuError> {
        let nregs = self.k.regs.len();
        let nwarps = threads.div_ceil(32);
        let mut warps: Vec<Warp> = (0..nwarps)
            .map(|w| {
                let mut state = [LaneState::Exited; 32];
                for (l, s) in state.iter_mut().enumerate() {
                    if w * 32 + (l as u32) < threads {
                        *s = LaneState::Running;
                    }
                }
                Warp {
                    index: w,
                    regs: vec![0; nregs * 32],
                    pc: [(0, 0); 32],
                    state,
                    wgmma_open: vec![],
                    wgmma_groups: VecDeque::new(),
                    nreg: self.pool.entry,
                    setmaxnreg: vec![],
                }
            })
            .collect();
        let mut queues: Vec<AsyncQueue> = (0..threads).map(|_| AsyncQueue::default()).collect();
        loop {
            for w in warps.iter_mut() {
                self.run_warp(w, smem, &mut queues)?;
            }
            if Self::wake_setmaxnreg(&mut warps, &mut self.pool) {
                continue;
            }
            if self.wake_mbarrier_waits(&mut warps, smem)? {
                continue;
            }
            self.setmaxnreg_stuck(&warps, &self.pool)?;
            self.check_barrier(&warps, threads)?;
            let mut waiting = false;
            for w in warps.iter_mut() {
                for s in w.state.iter_mut() {
                    if *s == LaneState::Barrier {
                        *s = LaneState::Running;
                        waiting = true;
                    }
                }
            }
            if !waiting {
                return self.setmaxnreg_warpgroups(&warps);
            }
            tma::share_seen(smem);
            smem.epoch += 1;
            self.stats.barriers += 1;
        }
    }

    /// With every thread of the block waiting at a barrier or finished: an error unless all
    /// that wait, wait at the same `bar.sync`, and none has finished (when any waits). The
    /// error is at the barrier first in layout order (the one inside the branch, for a
    /// barrier in one arm of an `if`).
    fn check_barrier(&self, warps: &[Warp], threads: u32) -> Result<(), EmuError> {
        // the barrier (first in layout order) and a thread waiting there
        let mut first: Option<(Pc, u32)> = None;
        let mut count = 0u32;
        let mut other: Option<(u32, Option<Pc>)> = None;
        for w in warps {
            for l in 0..32u32 {
                let tid = w.index * 32 + l;
                if tid >= threads {
                    break;
                }
                match w.state[l as usize] {
                    LaneState::Barrier => {
                        let p = w.pc[l as usize];
                        let at = (p.0, p.1.saturating_sub(1));
                        match first {
                            Some((f, _)) if f == at => count += 1,
                            Some((f, t)) if at < f => {
                                other = Some((t, Some(f)));
                                first = Some((at, tid));
                                count = 1;
                            }
                            Some(_) => other = other.or(Some((tid, Some(at)))),
                            None => {
                                first = Some((at, tid));
                                count = 1;
                            }
                        }
                    }
                    LaneState::Exited => {
                        if other.is_none() {
                            other = Some((tid, None));
                        }
                    }
                    LaneState::Running
                    | LaneState::MbarrierWait { .. }
                    | LaneState::RegWait { .. } => {}
                }
            }
        }
        let (Some((at, tid)), Some((other_thread, other_pc))) = (first, other) else {
            return Ok(());
        };
        let kind = EmuErrorKind::DivergentBarrier {
            waiting: count,
            threads,
            other_thread,
            other_inst: other_pc.map(|p| self.text(p)),
        };
        Err(self.error(kind, at, tid))
    }

    fn run_warp(
        &mut self,
        w: &mut Warp,
        smem: &mut SharedMem,
        queues: &mut [AsyncQueue],
    ) -> Result<(), EmuError> {
        loop {
            let mut pc: Option<Pc> = None;
            for l in 0..32 {
                if w.state[l] == LaneState::Running && pc.is_none_or(|p| w.pc[l] < p) {
                    pc = Some(w.pc[l]);
                }
            }
            let Some(pc) = pc else { return Ok(()) };
            let mut act = 0u32;
            for l in 0..32 {
                if w.state[l] == LaneState::Running && w.pc[l] == pc {
                    act |= 1 << l;
                }
            }
            self.stats.warp_instructions += 1;
            if self.stats.warp_instructions > self.max_steps {
                let kind = EmuErrorKind::StepLimit {
                    steps: self.max_steps,
                };
                return Err(self.error(kind, pc, w.index * 32 + act.trailing_zeros()));
            }
            let Some(block) = self.k.blocks.get(pc.0 as usize) else {
                return Ok(());
            };
            if let Some(instr) = block.insts.get(pc.1 as usize) {
                let mut eff = act;
                if let Some(g) = instr.guard {
                    eff = 0;
                    for l in lanes(act) {
                        if (reg(w, g.pred, l) & 1 == 1) != g.negate {
                            eff |= 1 << l;
                        }
                    }
                }
                self.stats.thread_instructions += u64::from(eff.count_ones());
                self.stats
                    .counters
                    .count(&instr.op, eff, &|o, l| opnd(w, o, l));
                if eff != 0 && !(w.wgmma_open.is_empty() && w.wgmma_groups.is_empty()) {
                    hopper::in_flight_hazard(&instr.op, w).map_err(|r| {
                        self.wgmma_hazard(r, pc, w.index * 32 + eff.trailing_zeros())
                    })?;
                }
                if eff != 0 {
                    self.exec(&instr.op, w, eff, smem, queues, pc)
                        .map_err(|(kind, lane)| self.error(kind, pc, w.index * 32 + lane))?;
                }
                for l in lanes(act) {
                    w.pc[l as usize].1 += 1;
                }
            } else {
                self.stats.counters.mix.add_one(InstClass::Control);
                match block.term {
                    Terminator::Bra(t) => {
                        for l in lanes(act) {
                            w.pc[l as usize] = (t.0, 0);
                        }
                    }
                    Terminator::CondBra {
                        pred,
                        negate,
                        then,
                        els,
                    } => {
                        for l in lanes(act) {
                            let taken = (reg(w, pred, l) & 1 == 1) != negate;
                            w.pc[l as usize] = (if taken { then.0 } else { els.0 }, 0);
                        }
                    }
                    Terminator::Ret => {
                        for l in lanes(act) {
                            w.state[l as usize] = LaneState::Exited;
                        }
                    }
                }
            }
        }
    }
}
