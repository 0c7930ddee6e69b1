//! One instruction of a warp: what each Target IR op does to the active lanes' registers,
//! memory and async-copy queues.

use super::*;

impl Machine<'_> {
    pub(super) fn exec(
        &mut self,
        op: &Op,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        queues: &mut [AsyncQueue],
        pc: Pc,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        match op {
            Op::Special { dst, sreg } => {
                for l in lanes(eff) {
                    let v = self.sreg(*sreg, w, l);
                    self.set(w, *dst, l, v);
                }
            }
            Op::LdParam { dst, param } => {
                let v = self.params.get(param.0 as usize).copied().unwrap_or(0);
                for l in lanes(eff) {
                    self.set(w, *dst, l, v);
                }
            }
            Op::SharedAddr { dst, shared } => {
                let v = self
                    .shared_offsets
                    .get(shared.0 as usize)
                    .copied()
                    .unwrap_or(0);
                for l in lanes(eff) {
                    self.set(w, *dst, l, u64::from(v));
                }
            }
            Op::Mov { ty, dst, src } => {
                self.map_lanes(w, eff, *dst, |w, l| mask(*ty, opnd(w, *src, l)))
            }
            Op::Unary { op, ty, dst, src } => {
                self.map_lanes(w, eff, *dst, |w, l| unary(*op, *ty, opnd(w, *src, l)))
            }
            Op::Binary { op, ty, dst, a, b } => {
                for l in lanes(eff) {
                    let v = binary(*op, *ty, opnd(w, *a, l), opnd(w, *b, l)).map_err(|e| (e, l))?;
                    self.set(w, *dst, l, v);
                }
            }
            Op::Fma { ty, dst, a, b, c } => {
                for l in lanes(eff) {
                    let (x, y, z) = (opnd(w, *a, l), opnd(w, *b, l), opnd(w, *c, l));
                    self.set(w, *dst, l, fma(*ty, x, y, z));
                }
            }
            Op::MulWide { ty, dst, a, b } => {
                for l in lanes(eff) {
                    let v = int_of(*ty, opnd(w, *a, l)) * int_of(*ty, opnd(w, *b, l));
                    self.set(w, *dst, l, v as u64);
                }
            }
            Op::MadWide { ty, dst, a, b, c } => {
                let wide = if *ty == Ty::S32 { Ty::S64 } else { Ty::U64 };
                for l in lanes(eff) {
                    let v = int_of(*ty, opnd(w, *a, l)) * int_of(*ty, opnd(w, *b, l));
                    let v = v.wrapping_add(int_of(wide, opnd(w, *c, l)));
                    self.set(w, *dst, l, v as u64);
                }
            }
            Op::Setp { cmp, ty, dst, a, b } => {
                for l in lanes(eff) {
                    let v = setp(*cmp, *ty, opnd(w, *a, l), opnd(w, *b, l));
                    self.set(w, *dst, l, u64::from(v));
                }
            }
            Op::Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => {
                for l in lanes(eff) {
                    let v = if reg(w, *pred, l) & 1 == 1 {
                        opnd(w, *a, l)
                    } else {
                        opnd(w, *b, l)
                    };
                    self.set(w, *dst, l, mask(*ty, v));
                }
            }
            Op::Cvt { .. } | Op::CvtTf32 { .. } | Op::CvtPack { .. } | Op::CvtUnpack { .. } => {
                self.exec_convert(op, w, eff)
            }
            Op::CvtaGlobal { dst, src } => self.map_lanes(w, eff, *dst, |w, l| reg(w, *src, l)),
            Op::Ld {
                space,
                ty,
                dsts,
                addr,
                offset,
            } => self.ld(w, eff, sm, pc, *space, *ty, dsts, *addr, *offset)?,
            Op::St {
                space,
                ty,
                srcs,
                addr,
                offset,
            } => self.st(w, eff, sm, pc, *space, *ty, srcs, *addr, *offset)?,
            Op::CpAsync {
                cache: _,
                dst,
                src,
                bytes,
                src_size,
            } => self.cp_async(w, eff, sm, queues, pc, *dst, *src, *bytes, *src_size)?,
            Op::CpAsyncCommit => {
                for l in lanes(eff) {
                    if let Some(q) = queues.get_mut((tid0 + l) as usize) {
                        let group = std::mem::take(&mut q.open);
                        q.committed.push_back(group);
                    }
                }
            }
            Op::CpAsyncWait { n } => self.cp_async_wait(w, eff, sm, queues, *n)?,
            // orders this thread's generic-proxy shared writes before async-proxy reads
            // (wgmma): the writes it covers are no longer unfenced
            Op::FenceProxyAsync => {
                for l in lanes(eff) {
                    let me = tid0 + l + 1;
                    for a in sm.unfenced_by.remove(&me).unwrap_or_default() {
                        if let Some(u) = sm.unfenced.get_mut(a as usize) {
                            if *u == me {
                                *u = 0;
                            }
                        }
                    }
                }
            }
            Op::BarSync => {
                for l in lanes(eff) {
                    w.state[l as usize] = LaneState::Barrier;
                }
            }
            Op::Shfl {
                mode,
                dst,
                src,
                lane,
                clamp,
                mask: member,
            } => self.shfl(w, eff, *mode, *dst, *src, *lane, *clamp, *member)?,
            Op::Ldmatrix { trans, dsts, addr } => {
                self.ldmatrix(w, eff, sm, pc, *trans, dsts, *addr)?
            }
            Op::Mma { kind, d, a, b, c } => self.mma_sync(w, eff, *kind, d, a, b, c)?,
            Op::MbarrierInit { .. }
            | Op::MbarrierArrive { .. }
            | Op::MbarrierCompleteTx { .. }
            | Op::MbarrierTryWait { .. }
            | Op::MbarrierWait { .. }
            | Op::WgmmaFence
            | Op::WgmmaCommit
            | Op::WgmmaWait { .. }
            | Op::WgmmaMmaAsync { .. } => self.exec_hopper(op, w, eff, sm, pc)?,
            Op::TensorMapAddr { .. }
            | Op::TmaLoad { .. }
            | Op::TmaStore { .. }
            | Op::BulkCommit
            | Op::BulkWaitRead { .. } => self.exec_tma(op, w, eff, sm, pc)?,
            Op::SetMaxNReg { inc, n } => {
                let threads = self.launch.block.iter().product::<u32>();
                setmaxnreg::setmaxnreg(w, eff, &mut self.pool, (*inc, *n), pc, threads)?
            }
            Op::AtomAddF32 { dst, addr, src } => self.add_f32(w, eff, Some(*dst), *addr, *src)?,
            Op::RedAddF32 { addr, src } => self.add_f32(w, eff, None, *addr, *src)?,
        }
        Ok(())
    }

    /// The conversions: `cvt`, `cvt.rna.tf32.f32` and the packed `cvt`s to and from
    /// f16/bf16/fp8 pairs.
    fn exec_convert(&mut self, op: &Op, w: &mut Warp, eff: u32) {
        match op {
            Op::Cvt {
                dty,
                sty,
                rnd,
                sat,
                dst,
                src,
            } => self.map_lanes(w, eff, *dst, |w, l| {
                cvt(*dty, *sty, *rnd, *sat, reg(w, *src, l))
            }),
            Op::CvtTf32 { dst, src } => {
                for l in lanes(eff) {
                    let v = tf32_rna(reg(w, *src, l) as u32);
                    self.set(w, *dst, l, u64::from(v));
                }
            }
            Op::CvtPack { pack, dst, hi, lo } => {
                for l in lanes(eff) {
                    let h = f32::from_bits(reg(w, *hi, l) as u32);
                    let o = f32::from_bits(reg(w, *lo, l) as u32);
                    let v = match pack {
                        Pack::F16x2 => pack_f16x2(h, o),
                        Pack::BF16x2 => pack_bf16x2(h, o),
                        Pack::E4m3x2 => pack_fp8x2(h, o, DType::F8E4M3),
                        Pack::E5m2x2 => pack_fp8x2(h, o, DType::F8E5M2),
                    };
                    self.set(w, *dst, l, v);
                }
            }
            Op::CvtUnpack { unpack, dst, src } => {
                let d = match unpack {
                    Unpack::E4m3x2 => DType::F8E4M3,
                    Unpack::E5m2x2 => DType::F8E5M2,
                };
                for l in lanes(eff) {
                    let v = unpack_fp8x2(reg(w, *src, l), d);
                    self.set(w, *dst, l, v);
                }
            }
            _ => {}
        }
    }

    /// `atom.global.add.f32` (the old value into `dst`) and `red.global.add.f32` (`dst` none).
    fn add_f32(
        &mut self,
        w: &mut Warp,
        eff: u32,
        dst: Option<Reg>,
        addr: Reg,
        src: Operand,
    ) -> Result<(), Fault> {
        for l in lanes(eff) {
            let a = reg(w, addr, l);
            let old = self.read_global(a, 4, 4).map_err(|e| (e, l))?;
            let v = f32::from_bits(old as u32) + f32::from_bits(opnd(w, src, l) as u32);
            self.write_global(a, 4, 4, u64::from(v.to_bits()))
                .map_err(|e| (e, l))?;
            if let Some(d) = dst {
                self.set(w, d, l, old);
            }
        }
        Ok(())
    }

    /// Sets `dst` of each active lane to `f` of the warp and the lane.
    #[inline]
    fn map_lanes(&mut self, w: &mut Warp, eff: u32, dst: Reg, f: impl Fn(&Warp, u32) -> u64) {
        for l in lanes(eff) {
            let v = f(w, l);
            self.set(w, dst, l, v);
        }
    }

    /// `cp.async.wait_group n`: each lane's committed groups beyond the newest `n` complete.
    fn cp_async_wait(
        &mut self,
        w: &Warp,
        eff: u32,
        sm: &mut SharedMem,
        queues: &mut [AsyncQueue],
        n: u32,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        for l in lanes(eff) {
            let tid = tid0 + l;
            let Some(q) = queues.get_mut(tid as usize) else {
                continue;
            };
            let mut done = vec![];
            while q.committed.len() > n as usize {
                if let Some(g) = q.committed.pop_front() {
                    done.extend(g);
                }
            }
            for c in &done {
                self.complete(sm, c, tid).map_err(|e| (e, l))?;
            }
        }
        Ok(())
    }

    /// `mma.sync.aligned`: every lane active.
    #[allow(clippy::too_many_arguments)]
    fn mma_sync(
        &mut self,
        w: &mut Warp,
        eff: u32,
        kind: MmaKind,
        d: &[Reg; 4],
        a: &[Reg; 4],
        b: &[Reg; 2],
        c: &[Reg; 4],
    ) -> Result<(), Fault> {
        if eff != FULL {
            return Err((
                EmuErrorKind::Divergent {
                    active: eff,
                    required: FULL,
                },
                (!eff).trailing_zeros(),
            ));
        }
        let out = mma(kind, w, a, b, c);
        for t in 0..32u32 {
            for (i, r) in d.iter().enumerate() {
                self.set(w, *r, t, u64::from(out[t as usize][i].to_bits()));
            }
        }
        Ok(())
    }

    /// `ld.global` / `ld.shared` of `dsts.len()` consecutive `ty` values per lane.
    #[allow(clippy::too_many_arguments)]
    fn ld(
        &mut self,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        pc: Pc,
        space: Space,
        ty: Ty,
        dsts: &[Reg],
        addr: Reg,
        offset: i32,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        let size = ty.bits() / 8;
        let total = size * dsts.len() as u32;
        for l in lanes(eff) {
            let a = reg(w, addr, l);
            for (i, d) in dsts.iter().enumerate() {
                let v = match space {
                    Space::Global => {
                        let at = a.wrapping_add(offset as i64 as u64);
                        self.global(at, total, total).map_err(|e| (e, l))?;
                        self.read_global(at + u64::from(size) * i as u64, size, size)
                    }
                    Space::Shared => {
                        let at = (a as u32).wrapping_add(offset as u32);
                        self.shared_check(sm, at, total, total)
                            .map_err(|e| (e, l))?;
                        let at = at + size * i as u32;
                        self.read_shared(sm, at, size, size, tid0 + l, pc)
                    }
                }
                .map_err(|e| (e, l))?;
                self.set(w, *d, l, v);
            }
        }
        Ok(())
    }

    /// `st.global` / `st.shared` of `srcs.len()` consecutive `ty` values per lane.
    #[allow(clippy::too_many_arguments)]
    fn st(
        &mut self,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        pc: Pc,
        space: Space,
        ty: Ty,
        srcs: &[Operand],
        addr: Reg,
        offset: i32,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        let size = ty.bits() / 8;
        let total = size * srcs.len() as u32;
        for l in lanes(eff) {
            let a = reg(w, addr, l);
            for (i, s) in srcs.iter().enumerate() {
                let v = opnd(w, *s, l);
                match space {
                    Space::Global => {
                        let at = a.wrapping_add(offset as i64 as u64);
                        self.global(at, total, total).map_err(|e| (e, l))?;
                        self.store_global(at + u64::from(size) * i as u64, size, v)
                    }
                    Space::Shared => {
                        let at = (a as u32).wrapping_add(offset as u32);
                        self.shared_check(sm, at, total, total)
                            .map_err(|e| (e, l))?;
                        let at = at + size * i as u32;
                        self.write_shared(sm, at, size, size, tid0 + l, pc, v)
                    }
                }
                .map_err(|e| (e, l))?;
            }
        }
        Ok(())
    }

    /// `cp.async`: each lane's copy joins its open group (checked now, done at the wait).
    #[allow(clippy::too_many_arguments)]
    fn cp_async(
        &mut self,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        queues: &mut [AsyncQueue],
        pc: Pc,
        dst: Reg,
        src: Reg,
        bytes: u32,
        src_size: Option<Operand>,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        for l in lanes(eff) {
            let d = reg(w, dst, l) as u32;
            let s = reg(w, src, l);
            let size = match src_size {
                Some(o) => opnd(w, o, l) & 0xffff_ffff,
                None => u64::from(bytes),
            };
            if size > u64::from(bytes) {
                return Err((
                    EmuErrorKind::BadSrcSize {
                        src_size: size,
                        bytes,
                    },
                    l,
                ));
            }
            self.shared_check(sm, d, bytes, bytes).map_err(|e| (e, l))?;
            if size > 0 {
                self.global(s, size as u32, 1).map_err(|e| (e, l))?;
            }
            if !s.is_multiple_of(u64::from(bytes)) {
                let e = EmuErrorKind::Misaligned {
                    space: Space::Global,
                    addr: s,
                    align: bytes,
                };
                return Err((e, l));
            }
            let tid = tid0 + l;
            self.touch(sm, d, bytes, true, tid, pc)
                .map_err(|e| (e, l))?;
            for a in d..d + bytes {
                if let Some(p) = sm.pending.get_mut(a as usize) {
                    *p = tid + 1;
                }
            }
            if let Some(q) = queues.get_mut(tid as usize) {
                q.open.push(Copy {
                    dst: d,
                    src: s,
                    bytes,
                    src_size: size as u32,
                    pc,
                });
            }
        }
        Ok(())
    }

    /// `shfl.sync`: the lanes of `member` exchange `src` (all of them must be active).
    #[allow(clippy::too_many_arguments)]
    fn shfl(
        &mut self,
        w: &mut Warp,
        eff: u32,
        mode: ShflMode,
        dst: Reg,
        src: Operand,
        lane: Operand,
        clamp: Operand,
        member: u32,
    ) -> Result<(), Fault> {
        let present = present(w);
        let required = member & present;
        if eff & !member != 0 || required & !eff != 0 {
            let culprit = (eff ^ required).trailing_zeros().min(31);
            return Err((
                EmuErrorKind::Divergent {
                    active: eff,
                    required,
                },
                culprit,
            ));
        }
        let vals: Vec<u64> = (0..32).map(|l| opnd(w, src, l) & 0xffff_ffff).collect();
        let mut out = [0u64; 32];
        for i in lanes(eff) {
            let b = (opnd(w, lane, i) & 0xffff_ffff) as u32;
            let c = (opnd(w, clamp, i) & 0xffff_ffff) as u32;
            let cval = c & 0x1f;
            let seg = (c >> 8) & 0x1f;
            let max_lane = ((i & seg) | (cval & !seg)) as i64;
            let min_lane = (i & seg) as i64;
            let (j, ok) = match mode {
                ShflMode::Up => {
                    let j = i as i64 - i64::from(b);
                    (j, j >= max_lane)
                }
                ShflMode::Down => {
                    let j = i as i64 + i64::from(b);
                    (j, j <= max_lane)
                }
                ShflMode::Bfly => {
                    let j = i64::from(i ^ b);
                    (j, j <= max_lane)
                }
                ShflMode::Idx => {
                    let j = min_lane | i64::from(b & !seg);
                    (j, j <= max_lane)
                }
            };
            let j = if ok { j as u32 } else { i };
            if j > 31 || eff & (1 << j) == 0 {
                return Err((EmuErrorKind::ShflInactiveLane { lane: i, source: j }, i));
            }
            out[i as usize] = vals[j as usize];
        }
        for i in lanes(eff) {
            self.set(w, dst, i, out[i as usize]);
        }
        Ok(())
    }

    /// `ldmatrix.sync.x4`: four 8×8 b16 matrices from shared memory, every lane active.
    #[allow(clippy::too_many_arguments)]
    fn ldmatrix(
        &mut self,
        w: &mut Warp,
        eff: u32,
        sm: &mut SharedMem,
        pc: Pc,
        trans: bool,
        dsts: &[Reg],
        addr: Reg,
    ) -> Result<(), Fault> {
        let tid0 = w.index * 32;
        if eff != FULL {
            return Err((
                EmuErrorKind::Divergent {
                    active: eff,
                    required: FULL,
                },
                (!eff).trailing_zeros(),
            ));
        }
        // m[q][r][c]: matrix q, row r (address from lane 8q + r), column c.
        let mut m = [[[0u16; 8]; 8]; 4];
        for (q, mat) in m.iter_mut().enumerate() {
            for (r, row) in mat.iter_mut().enumerate() {
                let l = (q * 8 + r) as u32;
                let a = reg(w, addr, l) as u32;
                let lo = self
                    .read_shared(sm, a, 8, 16, tid0 + l, pc)
                    .map_err(|e| (e, l))?;
                self.shared_check(sm, a, 16, 16).map_err(|e| (e, l))?;
                let hi = self
                    .read_shared(sm, a + 8, 8, 8, tid0 + l, pc)
                    .map_err(|e| (e, l))?;
                for (c, x) in row.iter_mut().enumerate() {
                    let v = if c < 4 {
                        lo >> (16 * c)
                    } else {
                        hi >> (16 * (c - 4))
                    };
                    *x = v as u16;
                }
            }
        }
        for t in 0..32u32 {
            let (g, i) = ((t / 4) as usize, (2 * (t % 4)) as usize);
            for (q, d) in dsts.iter().enumerate() {
                let (e0, e1) = if trans {
                    (m[q][i][g], m[q][i + 1][g])
                } else {
                    (m[q][g][i], m[q][g][i + 1])
                };
                self.set(w, *d, t, u64::from(e0) | u64::from(e1) << 16);
            }
        }
        Ok(())
    }
}

/// `fma.rn` (floats, one rounding) or `mad.lo` (integers, wrapping) of one lane.
fn fma(ty: Ty, x: u64, y: u64, z: u64) -> u64 {
    match ty {
        Ty::F32 => {
            let f = |v: u64| f32::from_bits(v as u32);
            u64::from(f(x).mul_add(f(y), f(z)).to_bits())
        }
        Ty::F64 => f64::from_bits(x)
            .mul_add(f64::from_bits(y), f64::from_bits(z))
            .to_bits(),
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F16
        | Ty::F16x2
        | Ty::BF16
        | Ty::BF16x2
        | Ty::U8 => {
            (int_of(ty, x)
                .wrapping_mul(int_of(ty, y))
                .wrapping_add(int_of(ty, z))) as u64
        }
    }
}
