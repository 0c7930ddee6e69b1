//! The sm_90 instructions. mbarriers live beside shared memory, by address: the expected
//! arrivals per phase, the arrivals still pending, the transaction count, and the phases
//! completed. wgmma reads its operands from shared memory through the 64-bit matrix
//! descriptors and writes the warp's part of the warpgroup's fp32 accumulator.
//!
//! wgmma is asynchronous on the GPU: its operands are read and its accumulators written at
//! some point between `wgmma.mma_async` and the `wgmma.wait_group` that retires its group.
//! The emulator computes each one when the warp issues it (one legal order) and keeps it in
//! flight until then: another instruction touching its accumulator registers, or a write to
//! the shared bytes it reads, is a race (the result would depend on when the GPU did it). A
//! chain of wgmmas on the same accumulators accumulates in issue order as on the GPU.

use super::*;

/// One mbarrier's state.
#[derive(Copy, Clone, Debug)]
pub(super) struct Mbar {
    expected: u32,
    pending: u32,
    /// Bytes expected (`expect_tx`) less bytes completed (`complete_tx`); may be negative
    /// while a completion runs ahead of its expectation.
    pub(super) tx: i64,
    /// Phases completed since the init.
    pub(super) phase: u64,
}

impl Mbar {
    /// The current phase completes when its arrivals and transactions are all in.
    pub(super) fn settle(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
        }
    }

    /// Whether the phase of parity `parity & 1` completed: the current phase has the other
    /// parity.
    fn done(&self, parity: u32) -> bool {
        (self.phase & 1) != u64::from(parity & 1)
    }
}

/// A wgmma in flight: its accumulator registers, the shared bytes it read (2 per element)
/// and where it was issued.
pub(super) struct InFlight {
    regs: Vec<Reg>,
    smem: Vec<u32>,
    pc: Pc,
}

/// An accumulator register of an in-flight wgmma that `op` touches (wgmmas and their fence,
/// commit and wait excepted), and the wgmma's pc.
pub(super) fn in_flight_hazard(op: &Op, w: &Warp) -> Result<(), (Reg, Pc)> {
    if op.is_wgmma() {
        return Ok(());
    }
    let touched: Vec<Reg> = op.uses().into_iter().chain(op.defs()).collect();
    for f in w.wgmma_open.iter().chain(w.wgmma_groups.iter().flatten()) {
        if let Some(r) = touched.iter().find(|r| f.regs.contains(r)) {
            return Err((*r, f.pc));
        }
    }
    Ok(())
}

/// The barrier at `addr`, which must be initialised.
pub(super) fn mbar(sm: &mut SharedMem, addr: u32) -> Result<&mut Mbar, EmuErrorKind> {
    sm.mbars
        .get_mut(&addr)
        .ok_or(EmuErrorKind::MbarrierUninit { addr })
}

/// The shared address of element (`row`, `k`) (`elem` bytes each) of a K-major operand
/// under a wgmma descriptor: 8-row core matrices of 16-byte rows; without swizzle the core
/// matrices along K are `lbo` apart and the 8-row groups `sbo` apart; with a swizzle of `S`
/// bytes each row is `S` bytes, the 8-row groups `sbo` apart, and address bits 4–6 are XORed
/// with bits 7–9 (as many bits as `S / 16` has).
fn desc_addr(desc: u64, row: u32, k: u32, elem: u32) -> Result<u32, EmuErrorKind> {
    let field = |shift: u32| (((desc >> shift) & 0x3FFF) << 4) as u32;
    let (start, lbo, sbo) = (field(0), field(16), field(32));
    if (desc >> 49) & 7 != 0 {
        return Err(EmuErrorKind::WgmmaDescriptor {
            reason: "a base offset other than 0 is not emulated",
        });
    }
    let byte_k = k * elem;
    let width = match desc >> 62 {
        0 => {
            let at = start + (row % 8) * 16 + (row / 8) * sbo + (byte_k / 16) * lbo;
            return Ok(at + byte_k % 16);
        }
        1 => 128,
        2 => 64,
        _ => 32,
    };
    let at = start + (row % 8) * width + (row / 8) * sbo + byte_k;
    Ok(at ^ (((at >> 7) & (width / 16 - 1)) << 4))
}

impl Machine<'_> {
    pub(super) fn exec_hopper(
        &mut self,
        op: &Op,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        pc: Pc,
    ) -> Result<(), Fault> {
        let at = |w: &Warp, addr: Reg, l: u32, sm: &SharedMem| -> Result<u32, Fault> {
            let a = reg(w, addr, l) as u32;
            self.shared_check(sm, a, 8, 8).map_err(|e| (e, l))?;
            Ok(a)
        };
        match op {
            Op::MbarrierInit { addr, count } => {
                for l in lanes(eff) {
                    let a = at(w, *addr, l, sm)?;
                    let c = opnd(w, *count, l) & 0xffff_ffff;
                    if c == 0 || c >= 1 << 20 {
                        return Err((EmuErrorKind::MbarrierCount { count: c }, l));
                    }
                    let c = c as u32;
                    let m = Mbar {
                        expected: c,
                        pending: c,
                        tx: 0,
                        phase: 0,
                    };
                    sm.mbars.insert(a, m);
                }
            }
            Op::MbarrierArrive { dst, addr, tx } => {
                for l in lanes(eff) {
                    let a = at(w, *addr, l, sm)?;
                    let bytes = tx.map(|t| opnd(w, t, l) & 0xffff_ffff);
                    let m = mbar(sm, a).map_err(|e| (e, l))?;
                    if let Some(b) = bytes {
                        m.tx += b as i64;
                    }
                    if m.pending == 0 {
                        return Err((EmuErrorKind::MbarrierOverArrive { addr: a }, l));
                    }
                    let token = m.phase;
                    m.pending -= 1;
                    m.settle();
                    self.set(w, *dst, l, token);
                }
            }
            Op::MbarrierCompleteTx { addr, tx } => {
                for l in lanes(eff) {
                    let a = at(w, *addr, l, sm)?;
                    let bytes = opnd(w, *tx, l) & 0xffff_ffff;
                    let m = mbar(sm, a).map_err(|e| (e, l))?;
                    m.tx -= bytes as i64;
                    m.settle();
                }
            }
            Op::MbarrierTryWait { dst, addr, parity } => {
                for l in lanes(eff) {
                    let a = at(w, *addr, l, sm)?;
                    let p = opnd(w, *parity, l) as u32;
                    let done = mbar(sm, a).map_err(|e| (e, l))?.done(p);
                    if done {
                        tma::saw(sm, a, w.index * 32 + l);
                    }
                    self.set(w, *dst, l, u64::from(done));
                }
            }
            Op::MbarrierWait {
                pred, addr, parity, ..
            } => {
                for l in lanes(eff) {
                    let a = at(w, *addr, l, sm)?;
                    let p = opnd(w, *parity, l) as u32;
                    if mbar(sm, a).map_err(|e| (e, l))?.done(p) {
                        tma::saw(sm, a, w.index * 32 + l);
                    } else {
                        w.state[l as usize] = LaneState::MbarrierWait { addr: a, parity: p };
                    }
                    // the loop leaves with its predicate set
                    self.set(w, *pred, l, 1);
                }
            }
            Op::WgmmaFence => full(eff)?,
            Op::WgmmaCommit => {
                full(eff)?;
                let group = std::mem::take(&mut w.wgmma_open);
                w.wgmma_groups.push_back(group);
            }
            Op::WgmmaWait { n } => {
                full(eff)?;
                while w.wgmma_groups.len() > *n as usize {
                    for f in w.wgmma_groups.pop_front().into_iter().flatten() {
                        for b in f.smem.iter().flat_map(|&a| a..a + 2) {
                            if let Some(c) = sm.wgmma_reads.get_mut(b as usize) {
                                *c = c.saturating_sub(1);
                            }
                        }
                    }
                }
            }
            Op::WgmmaMmaAsync {
                n,
                ab,
                d,
                a_desc,
                b_desc,
                scale_d,
            } => self.wgmma(
                w,
                eff,
                sm,
                pc,
                *n,
                *ab == Ty::BF16,
                d,
                *a_desc,
                *b_desc,
                *scale_d,
            )?,
            _ => {}
        }
        Ok(())
    }

    /// This warp's 16 rows of the warpgroup's `wgmma.mma_async` m64nNk16: rows 16·(warp % 4)
    /// … of A, all of B, both K-major through their descriptors, products summed in f32 in
    /// k order after the accumulator (as `mma.sync` here).
    #[allow(clippy::too_many_arguments)]
    fn wgmma(
        &mut self,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        pc: Pc,
        n: u32,
        bf: bool,
        d: &[Reg],
        a_desc: Reg,
        b_desc: Reg,
        scale_d: bool,
    ) -> Result<(), Fault> {
        full(eff)?;
        let threads: u32 = self.launch.block.iter().product();
        if (w.index / 4 + 1) * 128 > threads {
            return Err((EmuErrorKind::WgmmaWarpgroup { threads }, 0));
        }
        let (da, db) = (reg(w, a_desc, 0), reg(w, b_desc, 0));
        for l in 1..32 {
            if reg(w, a_desc, l) != da || reg(w, b_desc, l) != db {
                let reason = "the descriptors differ across the warp";
                return Err((EmuErrorKind::WgmmaDescriptor { reason }, l));
            }
        }
        let tid = w.index * 32;
        let mut read = vec![];
        let mut elem = |desc: u64, row: u32, k: u32| -> Result<f32, Fault> {
            let a = desc_addr(desc, row, k, 2).map_err(|e| (e, 0))?;
            for b in [a, a + 1] {
                if let Some(&u) = sm.unfenced.get(b as usize).filter(|&&u| u != 0) {
                    let kind = EmuErrorKind::WgmmaUnfenced {
                        addr: b,
                        writer: u - 1,
                    };
                    return Err((kind, 0));
                }
            }
            let v = self.read_shared(sm, a, 2, 2, tid, pc).map_err(|e| (e, 0))?;
            read.push(a);
            Ok(half_elem(v as u16, bf))
        };
        let row0 = 16 * (w.index % 4);
        let mut am = [[0f32; 16]; 16];
        for (r, row) in am.iter_mut().enumerate() {
            for (k, x) in row.iter_mut().enumerate() {
                *x = elem(da, row0 + r as u32, k as u32)?;
            }
        }
        let mut bm = vec![[0f32; 16]; n as usize];
        for (c, col) in bm.iter_mut().enumerate() {
            for (k, x) in col.iter_mut().enumerate() {
                *x = elem(db, c as u32, k as u32)?;
            }
        }
        for l in 0..32u32 {
            for (i, r) in d.iter().enumerate() {
                let row = (l / 4) as usize + 8 * ((i >> 1) & 1);
                let col = 8 * (i >> 2) + 2 * (l % 4) as usize + (i & 1);
                let mut acc = if scale_d {
                    f32::from_bits(reg(w, *r, l) as u32)
                } else {
                    0.0
                };
                let (ar, bc) = (&am[row], &bm[col]);
                for k in 0..16 {
                    acc += ar[k] * bc[k];
                }
                self.set(w, *r, l, u64::from(acc.to_bits()));
            }
        }
        for b in read.iter().flat_map(|&a| a..a + 2) {
            if let Some(c) = sm.wgmma_reads.get_mut(b as usize) {
                *c = c.saturating_add(1);
            }
        }
        w.wgmma_open.push(InFlight {
            regs: d.to_vec(),
            smem: read,
            pc,
        });
        Ok(())
    }

    /// The race of an instruction touching register `r` of the wgmma at `at`.
    pub(super) fn wgmma_hazard(&self, (r, at): (Reg, Pc), pc: Pc, tid: u32) -> EmuError {
        let kind = EmuErrorKind::WgmmaPendingRegister {
            reg: self.names.get(r).to_string(),
            wgmma: self.text(at),
        };
        self.error(kind, pc, tid)
    }

    /// Wakes the threads whose mbarrier phase completed; `true` when any woke. With none
    /// woken, a thread still waiting can never be woken (every thread of the block waits or
    /// has finished): an error at its wait.
    pub(super) fn wake_mbarrier_waits(
        &self,
        warps: &mut [Warp],
        sm: &mut SharedMem,
    ) -> Result<bool, EmuError> {
        let mut woke = false;
        let mut stuck = None;
        for w in warps.iter_mut() {
            for l in 0..32usize {
                let LaneState::MbarrierWait { addr, parity } = w.state[l] else {
                    continue;
                };
                match sm.mbars.get(&addr).copied() {
                    Some(m) if m.done(parity) => {
                        w.state[l] = LaneState::Running;
                        woke = true;
                        tma::saw(sm, addr, w.index * 32 + l as u32);
                    }
                    m => {
                        if stuck.is_none() {
                            let p = w.pc[l];
                            let (pending, tx) = m.map_or((0, 0), |m| (m.pending, m.tx));
                            let kind = EmuErrorKind::MbarrierDeadlock {
                                addr,
                                parity,
                                pending,
                                tx,
                            };
                            let at = (p.0, p.1.saturating_sub(1));
                            stuck = Some((kind, at, w.index * 32 + l as u32));
                        }
                    }
                }
            }
        }
        match stuck {
            Some((kind, at, tid)) if !woke => Err(self.error(kind, at, tid)),
            _ => Ok(woke),
        }
    }
}

/// A `.sync.aligned` instruction: every lane of the warp executes it.
fn full(eff: u32) -> Result<(), Fault> {
    if eff == FULL {
        Ok(())
    } else {
        Err((
            EmuErrorKind::Divergent {
                active: eff,
                required: FULL,
            },
            (!eff).trailing_zeros(),
        ))
    }
}
