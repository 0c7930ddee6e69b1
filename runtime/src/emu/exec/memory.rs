//! The machine's registers and memories as the instructions see them: register writes and
//! special registers, global accesses (bounds and alignment), shared accesses (bounds, the
//! race shadow, bank counting) and the completion of async copies.

use super::*;

impl Machine<'_> {
    pub(super) fn reg_ty(&self, r: Reg) -> Ty {
        self.k.reg_ty(r).unwrap_or(Ty::B64)
    }

    pub(super) fn set(&self, w: &mut Warp, r: Reg, lane: u32, v: u64) {
        let ty = self.reg_ty(r);
        if let Some(slot) = w.regs.get_mut(r.0 as usize * 32 + lane as usize) {
            *slot = mask(ty, v);
        }
    }

    pub(super) fn sreg(&self, s: SReg, w: &Warp, lane: u32) -> u64 {
        let tid = self.thread_xyz(w.index * 32 + lane);
        let d = |d: Dim| match d {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        };
        u64::from(match s {
            SReg::Tid(x) => tid[d(x)],
            SReg::Ntid(x) => self.launch.block[d(x)],
            SReg::Ctaid(x) => self.ctaid[d(x)],
            SReg::Nctaid(x) => self.launch.grid[d(x)],
            SReg::LaneId => lane,
            SReg::WarpId => w.index,
        })
    }

    /// Checks a global access; returns (buffer, offset).
    pub(super) fn global(
        &self,
        addr: u64,
        n: u32,
        align: u32,
    ) -> Result<(usize, usize), EmuErrorKind> {
        let buf = (addr >> 40).wrapping_sub(1) as usize;
        let off = addr & ((1 << 40) - 1);
        let limit = self.buffers.get(buf).map(|b| b.len() as u64);
        match limit {
            Some(len) if off + u64::from(n) <= len => {}
            Some(_) | None => {
                return Err(EmuErrorKind::OutOfBounds {
                    space: Space::Global,
                    addr,
                    bytes: n,
                    limit: limit.unwrap_or(0),
                })
            }
        }
        if !off.is_multiple_of(u64::from(align.max(1))) {
            return Err(EmuErrorKind::Misaligned {
                space: Space::Global,
                addr,
                align,
            });
        }
        Ok((buf, off as usize))
    }

    pub(super) fn read_global(&self, addr: u64, n: u32, align: u32) -> Result<u64, EmuErrorKind> {
        let (b, o) = self.global(addr, n, align)?;
        let mut v = 0u64;
        if let Some(bytes) = self.buffers.get(b).and_then(|b| b.get(o..o + n as usize)) {
            for (i, x) in bytes.iter().enumerate() {
                v |= u64::from(*x) << (8 * i);
            }
        }
        Ok(v)
    }

    pub(super) fn write_global(
        &mut self,
        addr: u64,
        n: u32,
        align: u32,
        v: u64,
    ) -> Result<(), EmuErrorKind> {
        let (b, o) = self.global(addr, n, align)?;
        if let Some(bytes) = self
            .buffers
            .get_mut(b)
            .and_then(|b| b.get_mut(o..o + n as usize))
        {
            for (i, x) in bytes.iter_mut().enumerate() {
                *x = (v >> (8 * i)) as u8;
            }
        }
        Ok(())
    }

    /// A `st.global` of `n` bytes (bounds already checked): in a launch of several blocks,
    /// first the race check against the stores of earlier blocks (see the module doc).
    pub(super) fn store_global(&mut self, addr: u64, n: u32, v: u64) -> Result<(), EmuErrorKind> {
        if self.track_writes {
            let (b, o) = self.global(addr, n, n)?;
            let me = self.block_no;
            let (Some(buf), Some(slot)) = (self.buffers.get(b), self.writers.get_mut(b)) else {
                return self.write_global(addr, n, n, v);
            };
            let shadow = slot.get_or_insert_with(|| vec![0; buf.len()]);
            for i in 0..n as usize {
                let (Some(w), Some(&old)) = (shadow.get_mut(o + i), buf.get(o + i)) else {
                    continue;
                };
                if *w == 0 {
                    *w = me;
                } else if *w != me && old != (v >> (8 * i)) as u8 {
                    let first = *w - 1;
                    let [gx, gy, _] = self.launch.grid;
                    let other_block = [first % gx, (first / gx) % gy, first / (gx * gy)];
                    return Err(EmuErrorKind::GlobalRace { addr, other_block });
                }
            }
        }
        self.write_global(addr, n, n, v)
    }

    pub(super) fn shared_check(
        &self,
        sm: &SharedMem,
        addr: u32,
        n: u32,
        align: u32,
    ) -> Result<(), EmuErrorKind> {
        if u64::from(addr) + u64::from(n) > sm.bytes.len() as u64 {
            return Err(EmuErrorKind::OutOfBounds {
                space: Space::Shared,
                addr: u64::from(addr),
                bytes: n,
                limit: sm.bytes.len() as u64,
            });
        }
        if !addr.is_multiple_of(align.max(1)) {
            return Err(EmuErrorKind::Misaligned {
                space: Space::Shared,
                addr: u64::from(addr),
                align,
            });
        }
        Ok(())
    }

    /// Records an access to shared bytes `addr..addr+n` by thread `tid` and reports a race.
    pub(super) fn touch(
        &self,
        sm: &mut SharedMem,
        addr: u32,
        n: u32,
        write: bool,
        tid: u32,
        pc: Pc,
    ) -> Result<(), EmuErrorKind> {
        let me = tid + 1;
        let epoch = sm.epoch;
        for a in addr..addr + n {
            let a = a as usize;
            if let Some(&p) = sm.pending.get(a) {
                if p != 0 {
                    return Err(EmuErrorKind::AsyncPending {
                        addr: a as u32,
                        issuer: p - 1,
                    });
                }
            }
            if write && sm.wgmma_reads.get(a).is_some_and(|&n| n > 0) {
                return Err(EmuErrorKind::WgmmaPendingShared { addr: a as u32 });
            }
            if write && sm.bulk_reads.get(a).is_some_and(|&n| n > 0) {
                return Err(EmuErrorKind::BulkPendingShared { addr: a as u32 });
            }
            if let Some(&g) = sm.tma_guard.get(a).filter(|&&g| g != 0) {
                self.tma_seen(sm, a as u32, g, tid)?;
            }
            if write && self.track_proxy {
                if let Some(u) = sm.unfenced.get_mut(a) {
                    *u = me;
                    sm.unfenced_by.entry(me).or_default().push(a as u32);
                }
            }
            let Some(s) = sm.shadow.get_mut(a) else {
                continue;
            };
            if s.epoch != epoch {
                *s = Shadow {
                    epoch,
                    ..Shadow::default()
                };
            }
            let race = |other: u32, other_write: bool, other_pc: Pc| EmuErrorKind::SharedRace {
                addr: a as u32,
                write,
                other_thread: other - 1,
                other_write,
                other_inst: self.text(other_pc),
            };
            if s.writer != 0 && s.writer != me {
                return Err(race(s.writer, true, s.w_pc));
            }
            if write {
                if s.reader != 0 && s.reader != me {
                    return Err(race(s.reader, false, s.r_pc));
                }
                if s.reader2 != 0 && s.reader2 != me {
                    return Err(race(s.reader2, false, s.r2_pc));
                }
                s.writer = me;
                s.w_pc = pc;
            } else if s.reader == 0 {
                s.reader = me;
                s.r_pc = pc;
            } else if s.reader != me && s.reader2 == 0 {
                s.reader2 = me;
                s.r2_pc = pc;
            }
        }
        Ok(())
    }

    pub(super) fn read_shared(
        &self,
        sm: &mut SharedMem,
        addr: u32,
        n: u32,
        align: u32,
        tid: u32,
        pc: Pc,
    ) -> Result<u64, EmuErrorKind> {
        self.shared_check(sm, addr, n, align)?;
        self.touch(sm, addr, n, false, tid, pc)?;
        let mut v = 0u64;
        for i in 0..n {
            v |= u64::from(sm.bytes.get((addr + i) as usize).copied().unwrap_or(0)) << (8 * i);
        }
        Ok(v)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_shared(
        &self,
        sm: &mut SharedMem,
        addr: u32,
        n: u32,
        align: u32,
        tid: u32,
        pc: Pc,
        v: u64,
    ) -> Result<(), EmuErrorKind> {
        self.shared_check(sm, addr, n, align)?;
        self.touch(sm, addr, n, true, tid, pc)?;
        for i in 0..n {
            if let Some(b) = sm.bytes.get_mut((addr + i) as usize) {
                *b = (v >> (8 * i)) as u8;
            }
        }
        Ok(())
    }

    /// Performs one completed cp.async.
    pub(super) fn complete(
        &self,
        sm: &mut SharedMem,
        c: &Copy,
        tid: u32,
    ) -> Result<(), EmuErrorKind> {
        for a in c.dst..c.dst + c.bytes {
            if let Some(p) = sm.pending.get_mut(a as usize) {
                *p = 0;
            }
        }
        self.touch(sm, c.dst, c.bytes, true, tid, c.pc)?;
        for i in 0..c.bytes {
            let v = if i < c.src_size {
                self.read_global(c.src + u64::from(i), 1, 1)? as u8
            } else {
                0
            };
            if let Some(b) = sm.bytes.get_mut((c.dst + i) as usize) {
                *b = v;
            }
        }
        Ok(())
    }
}
