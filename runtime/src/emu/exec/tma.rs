//! The TMA: bulk tensor copies between a tensor in global memory (through a tensor map) and a
//! box in shared memory.
//!
//! A load is done when it is issued (one legal order): the box is read element by element,
//! coordinates outside the tensor reading zero, and written row-major from the destination
//! under the map's swizzle; then its bytes complete transactions on its mbarrier. Each byte
//! it wrote remembers the load, its barrier and the phase the load completes: a thread may
//! access the byte once it has seen that phase complete (its own wait, or a wait of another
//! thread before a `bar.sync` both passed). Anything else is a race: on the GPU the byte may
//! not have landed.
//!
//! A store reads its box through the async proxy when it is issued (the generic writes it
//! reads need their thread's `fence.proxy.async`), writes the elements inside the tensor, and
//! keeps the box's bytes read until the `cp.async.bulk.wait_group.read` that retires its
//! group: writing them before is a race.

use super::*;
use crate::tensor_map::TensorMap;

/// The emulated generic address of tensor-map parameter `i` is `MAP_TAG | i` (no buffer's).
const MAP_TAG: u64 = 0xFFFF << 48;

/// A TMA load's write: the mbarrier it completes, the phase it completes, where it was issued.
#[derive(Copy, Clone)]
pub(super) struct TmaWrite {
    mbar: u32,
    phase: u64,
    pc: Pc,
}

/// A thread's TMA stores (shared address and bytes of each box) since its last commit, and
/// its committed groups not yet retired.
#[derive(Default)]
pub(super) struct BulkQueue {
    open: Vec<(u32, u32)>,
    committed: VecDeque<Vec<(u32, u32)>>,
}

/// Thread `tid` has seen the mbarrier at `addr` complete the phases before its current one.
pub(super) fn saw(sm: &mut SharedMem, addr: u32, tid: u32) {
    let Some(phase) = sm.mbars.get(&addr).map(|m| m.phase) else {
        return;
    };
    // one entry per thread of the largest block
    let seen = sm.seen.entry(addr).or_insert_with(|| vec![0; 1024]);
    if let Some(s) = seen.get_mut(tid as usize) {
        *s = (*s).max(phase);
    }
}

/// A block-wide barrier: every thread has seen what any thread saw before it.
pub(super) fn share_seen(sm: &mut SharedMem) {
    for seen in sm.seen.values_mut() {
        let most = seen.iter().copied().max().unwrap_or(0);
        seen.iter_mut().for_each(|s| *s = most);
    }
}

/// The phases of the mbarrier at `addr` thread `tid` has seen complete.
fn seen_by(sm: &SharedMem, addr: u32, tid: u32) -> u64 {
    sm.seen
        .get(&addr)
        .and_then(|v| v.get(tid as usize))
        .copied()
        .unwrap_or(0)
}

/// The element offsets (in elements, innermost dimension first) of box element `i`.
fn box_index(m: &TensorMap, mut i: u32) -> [u32; 5] {
    let mut idx = [0u32; 5];
    for (d, x) in idx.iter_mut().enumerate().take(m.rank as usize) {
        let b = m.box_dims[d].max(1);
        *x = i % b;
        i /= b;
    }
    idx
}

/// The byte offset in the tensor of box element `idx` at `coords`, `None` outside it.
fn global_offset(m: &TensorMap, coords: &[i64], idx: &[u32; 5]) -> Option<u64> {
    let mut off = 0u64;
    for (d, &i) in idx.iter().enumerate().take(m.rank as usize) {
        let c = coords.get(d)? + i64::from(i);
        if c < 0 || c as u64 >= m.dims[d] {
            return None;
        }
        let stride = if d == 0 {
            u64::from(m.elem_bytes())
        } else {
            m.strides[d - 1]
        };
        off += c as u64 * stride;
    }
    Some(off)
}

impl Machine<'_> {
    pub(super) fn exec_tma(
        &mut self,
        op: &Op,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        pc: Pc,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        match op {
            Op::TensorMapAddr { dst, param } => {
                for l in lanes(eff) {
                    self.set(w, *dst, l, MAP_TAG | u64::from(param.0));
                }
            }
            Op::TmaLoad {
                dst,
                map,
                coords,
                mbar,
            } => {
                for l in lanes(eff) {
                    let m = self
                        .map_at(reg(w, *map, l), coords.len())
                        .map_err(|e| (e, l))?;
                    let cs: Vec<i64> = coords
                        .iter()
                        .map(|c| reg(w, *c, l) as u32 as i32 as i64)
                        .collect();
                    let (d, b) = (reg(w, *dst, l) as u32, reg(w, *mbar, l) as u32);
                    self.tma_load(sm, &m, d, &cs, b, pc).map_err(|e| (e, l))?;
                }
            }
            Op::TmaStore { map, coords, src } => {
                for l in lanes(eff) {
                    let m = self
                        .map_at(reg(w, *map, l), coords.len())
                        .map_err(|e| (e, l))?;
                    let cs: Vec<i64> = coords
                        .iter()
                        .map(|c| reg(w, *c, l) as u32 as i32 as i64)
                        .collect();
                    let s = reg(w, *src, l) as u32;
                    self.tma_store(sm, &m, s, &cs, tid0 + l, pc)
                        .map_err(|e| (e, l))?;
                }
            }
            Op::BulkCommit => {
                for l in lanes(eff) {
                    let q = sm.bulk.entry(tid0 + l).or_default();
                    let group = std::mem::take(&mut q.open);
                    q.committed.push_back(group);
                }
            }
            Op::BulkWaitRead { n } => {
                for l in lanes(eff) {
                    let Some(q) = sm.bulk.get_mut(&(tid0 + l)) else {
                        continue;
                    };
                    let mut done = vec![];
                    while q.committed.len() > *n as usize {
                        done.extend(q.committed.pop_front().into_iter().flatten());
                    }
                    for (a, len) in done {
                        for b in a..a + len {
                            if let Some(c) = sm.bulk_reads.get_mut(b as usize) {
                                *c = c.saturating_sub(1);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The tensor map an operand addresses, for a copy with `n` coordinates.
    fn map_at(&self, v: u64, n: usize) -> Result<TensorMap, EmuErrorKind> {
        let m = (v & MAP_TAG == MAP_TAG)
            .then(|| self.maps.get((v & 0xFFFF) as usize).copied().flatten())
            .flatten()
            .ok_or_else(|| EmuErrorKind::TmaMap {
                reason: "the tensor-map operand is not the address of a tensor-map parameter"
                    .into(),
            })?;
        if m.rank as usize != n {
            return Err(EmuErrorKind::TmaMap {
                reason: format!(
                    "the copy has {n} coordinates, its tensor map rank {}",
                    m.rank
                ),
            });
        }
        m.check()
            .map_err(|reason| EmuErrorKind::TmaMap { reason })?;
        Ok(m)
    }

    /// The box's shared base: 128-byte aligned, and on the swizzle pattern's period (8 rows
    /// of its span) with a swizzle; the whole box inside shared memory.
    fn box_base(&self, sm: &SharedMem, m: &TensorMap, at: u32) -> Result<(), EmuErrorKind> {
        let align = (8 * m.swizzle.bytes()).max(128);
        self.shared_check(sm, at, m.box_bytes(), align)
    }

    fn tma_load(
        &self,
        sm: &mut SharedMem,
        m: &TensorMap,
        dst: u32,
        coords: &[i64],
        mbar_at: u32,
        pc: Pc,
    ) -> Result<(), EmuErrorKind> {
        self.box_base(sm, m, dst)?;
        self.shared_check(sm, mbar_at, 8, 8)?;
        let phase = hopper::mbar(sm, mbar_at)?.phase;
        sm.tma_writes.push(TmaWrite {
            mbar: mbar_at,
            phase,
            pc,
        });
        let guard = sm.tma_writes.len() as u32;
        let esize = m.elem_bytes();
        let count = m.box_bytes() / esize;
        for i in 0..count {
            let idx = box_index(m, i);
            let v = match global_offset(m, coords, &idx) {
                Some(off) => self.read_global(m.address + off, esize, esize)?,
                None => 0,
            };
            for k in 0..esize {
                let a = m.swizzle.apply(dst + i * esize + k);
                let u = a as usize;
                if sm.pending.get(u).is_some_and(|&p| p != 0) {
                    let issuer = sm.pending[u] - 1;
                    return Err(EmuErrorKind::AsyncPending { addr: a, issuer });
                }
                if sm.wgmma_reads.get(u).is_some_and(|&n| n > 0) {
                    return Err(EmuErrorKind::WgmmaPendingShared { addr: a });
                }
                if sm.bulk_reads.get(u).is_some_and(|&n| n > 0) {
                    return Err(EmuErrorKind::BulkPendingShared { addr: a });
                }
                if let Some(b) = sm.bytes.get_mut(u) {
                    *b = (v >> (8 * k)) as u8;
                }
                // the async proxy's write: no generic writer or reader, nothing to fence
                if let Some(s) = sm.shadow.get_mut(u) {
                    *s = Shadow {
                        epoch: sm.epoch,
                        ..Shadow::default()
                    };
                }
                if let Some(f) = sm.unfenced.get_mut(u) {
                    *f = 0;
                }
                if let Some(g) = sm.tma_guard.get_mut(u) {
                    *g = guard;
                }
            }
        }
        let mb = hopper::mbar(sm, mbar_at)?;
        mb.tx -= i64::from(m.box_bytes());
        mb.settle();
        Ok(())
    }

    fn tma_store(
        &mut self,
        sm: &mut SharedMem,
        m: &TensorMap,
        src: u32,
        coords: &[i64],
        tid: u32,
        pc: Pc,
    ) -> Result<(), EmuErrorKind> {
        self.box_base(sm, m, src)?;
        let esize = m.elem_bytes();
        let count = m.box_bytes() / esize;
        for i in 0..count {
            let mut v = 0u64;
            for k in 0..esize {
                let a = m.swizzle.apply(src + i * esize + k);
                if let Some(&u) = sm.unfenced.get(a as usize).filter(|&&u| u != 0) {
                    return Err(EmuErrorKind::TmaUnfenced {
                        addr: a,
                        writer: u - 1,
                    });
                }
                v |= self.read_shared(sm, a, 1, 1, tid, pc)? << (8 * k);
            }
            if let Some(off) = global_offset(m, coords, &box_index(m, i)) {
                self.global(m.address + off, esize, esize)?;
                self.store_global(m.address + off, esize, v)?;
            }
        }
        for b in src..src + m.box_bytes() {
            if let Some(c) = sm.bulk_reads.get_mut(b as usize) {
                *c = c.saturating_add(1);
            }
        }
        sm.bulk
            .entry(tid)
            .or_default()
            .open
            .push((src, m.box_bytes()));
        Ok(())
    }

    /// A TMA-written byte accessed by thread `tid`: it must have seen the load's phase
    /// complete.
    pub(super) fn tma_seen(
        &self,
        sm: &SharedMem,
        addr: u32,
        guard: u32,
        tid: u32,
    ) -> Result<(), EmuErrorKind> {
        let Some(t) = sm.tma_writes.get(guard as usize - 1) else {
            return Ok(());
        };
        if seen_by(sm, t.mbar, tid) > t.phase {
            return Ok(());
        }
        Err(EmuErrorKind::TmaUnwaited {
            addr,
            mbar: t.mbar,
            parity: (t.phase & 1) as u32,
            copy: self.text(t.pc),
        })
    }
}
