//! Global and shared memory in SPIR-V: storage buffers and the shared window are arrays of
//! 32-bit words addressed in bytes; narrower elements are bits of a word, wider ones two words.

use super::{bug, unsupported, Cx, Val, R};
use crate::scalar::Ty;
use crate::tile::ir::*;
use rspirv::dr::Operand as SOp;
use rspirv::spirv::{MemorySemantics, Op, Scope, StorageClass, Word};

/// Where a word lives.
#[derive(Copy, Clone)]
enum Space {
    /// Storage buffer `binding`.
    Global(u32),
    Shared,
}

fn bytes_of(ty: Ty) -> u32 {
    (ty.bits() / 8).max(1)
}

impl Cx<'_> {
    /// A pointer to word `w` (a `u32` id) of `space`.
    fn word_ptr(&mut self, space: Space, w: Word) -> R<Word> {
        let u = self.t.u32_;
        Ok(match space {
            Space::Global(b) => {
                let Some(&var) = self.bufs.get(b as usize) else {
                    return bug(self.k, format!("binding {b} out of range"));
                };
                let ptr = self.b.type_pointer(None, StorageClass::StorageBuffer, u);
                let z = self.const_u32(0);
                self.ins(Op::AccessChain, ptr, &[var, z, w])
            }
            Space::Shared => {
                let Some(var) = self.shared else {
                    return bug(self.k, "a shared access in a kernel without shared memory");
                };
                let ptr = self.b.type_pointer(None, StorageClass::Workgroup, u);
                self.ins(Op::AccessChain, ptr, &[var, w])
            }
        })
    }

    fn word_at(&mut self, space: Space, byte: Word, plus: u32) -> R<Word> {
        let u = self.t.u32_;
        let two = self.const_u32(2);
        let w = self.ins(Op::ShiftRightLogical, u, &[byte, two]);
        let w = if plus > 0 {
            let p = self.const_u32(plus);
            self.ins(Op::IAdd, u, &[w, p])
        } else {
            w
        };
        self.word_ptr(space, w)
    }

    /// The value of type `ty` at byte address `byte`.
    fn load_at(&mut self, space: Space, byte: Word, ty: Ty) -> R<Word> {
        let u = self.t.u32_;
        let st = self.sty(ty);
        match ty.bits() {
            64 => {
                let lo_p = self.word_at(space, byte, 0)?;
                let hi_p = self.word_at(space, byte, 1)?;
                let lo = self.ins(Op::Load, u, &[lo_p]);
                let hi = self.ins(Op::Load, u, &[hi_p]);
                let v2 = self.ins(Op::CompositeConstruct, self.t.v2u32, &[lo, hi]);
                Ok(self.ins(Op::Bitcast, st, &[v2]))
            }
            32 => {
                let p = self.word_at(space, byte, 0)?;
                let w = self.ins(Op::Load, u, &[p]);
                Ok(if st == u {
                    w
                } else {
                    self.ins(Op::Bitcast, st, &[w])
                })
            }
            bits @ (8 | 16) => {
                let p = self.word_at(space, byte, 0)?;
                let w = self.ins(Op::Load, u, &[p]);
                let sh = self.sub_shift(byte, bits)?;
                let v = self.ins(Op::ShiftRightLogical, u, &[w, sh]);
                let m = self.const_u32(((1u64 << bits) - 1) as u32);
                Ok(self.ins(Op::BitwiseAnd, u, &[v, m]))
            }
            _ => unsupported(format!("loads of {ty:?}")),
        }
    }

    /// The bit offset of a sub-word element in its word.
    fn sub_shift(&mut self, byte: Word, bits: u32) -> R<Word> {
        let u = self.t.u32_;
        let low = self.const_u32(if bits == 16 { 2 } else { 3 });
        let lo = self.ins(Op::BitwiseAnd, u, &[byte, low]);
        let eight = self.const_u32(8);
        Ok(self.ins(Op::IMul, u, &[lo, eight]))
    }

    /// Stores `v` (of type `ty`) at byte address `byte`.
    fn store_at(&mut self, space: Space, byte: Word, ty: Ty, v: Word) -> R<()> {
        let u = self.t.u32_;
        match ty.bits() {
            64 => {
                let st = self.sty(ty);
                let v =
                    self.convert_bits(v, ty, if st == self.t.f64_ { Ty::F64 } else { Ty::U64 })?;
                let v2 = self.ins(Op::Bitcast, self.t.v2u32, &[v]);
                let lo = self.extract(u, v2, 0);
                let hi = self.extract(u, v2, 1);
                let lo_p = self.word_at(space, byte, 0)?;
                let hi_p = self.word_at(space, byte, 1)?;
                self.ins_void(Op::Store, vec![SOp::IdRef(lo_p), SOp::IdRef(lo)]);
                self.ins_void(Op::Store, vec![SOp::IdRef(hi_p), SOp::IdRef(hi)]);
            }
            32 => {
                let w = self.convert_bits(v, ty, Ty::U32)?;
                let p = self.word_at(space, byte, 0)?;
                self.ins_void(Op::Store, vec![SOp::IdRef(p), SOp::IdRef(w)]);
            }
            bits @ (8 | 16) => {
                // clear, then set, the element's bits: two atomics, as neighbouring lanes
                // may write the other bits of the word at the same time
                let p = self.word_at(space, byte, 0)?;
                let sh = self.sub_shift(byte, bits)?;
                let m = self.const_u32(((1u64 << bits) - 1) as u32);
                let w = self.convert_bits(v, ty, Ty::U32)?;
                let w = self.ins(Op::BitwiseAnd, u, &[w, m]);
                let w = self.ins(Op::ShiftLeftLogical, u, &[w, sh]);
                let ms = self.ins(Op::ShiftLeftLogical, u, &[m, sh]);
                let clear = self.ins(Op::Not, u, &[ms]);
                let scope = self.const_u32(match space {
                    Space::Global(_) => Scope::Device as u32,
                    Space::Shared => Scope::Workgroup as u32,
                });
                let sem = self.const_u32(MemorySemantics::RELAXED.bits());
                self.ins(Op::AtomicAnd, u, &[p, scope, sem, clear]);
                self.ins(Op::AtomicOr, u, &[p, scope, sem, w]);
            }
            _ => return unsupported(format!("stores of {ty:?}")),
        }
        Ok(())
    }

    pub(super) fn load_shared_at(&mut self, byte: Word, ty: Ty) -> R<Word> {
        self.load_at(Space::Shared, byte, ty)
    }

    pub(super) fn store_shared_at(&mut self, byte: Word, ty: Ty, v: Word) -> R<()> {
        self.store_at(Space::Shared, byte, ty, v)
    }

    pub(super) fn barrier(&mut self) {
        let wg = self.const_u32(Scope::Workgroup as u32);
        let sem = MemorySemantics::ACQUIRE_RELEASE
            | MemorySemantics::WORKGROUP_MEMORY
            | MemorySemantics::UNIFORM_MEMORY;
        let sem = self.const_u32(sem.bits());
        self.ins_void(
            Op::ControlBarrier,
            vec![SOp::IdRef(wg), SOp::IdRef(wg), SOp::IdRef(sem)],
        );
    }

    /// A view operand: binding, first element, element bytes.
    fn view(&self, o: Operand) -> R<(u32, Option<Word>, u32)> {
        match o.value().map(|v| self.val(v)) {
            Some(Ok(Val::View {
                binding,
                first,
                esize,
            })) => Ok((binding, first, esize)),
            _ => bug(self.k, "expected a global view"),
        }
    }

    /// The byte address of element `idx` of a view.
    fn elem_byte(&mut self, first: Option<Word>, idx: Word, esize: u32) -> Word {
        let u = self.t.u32_;
        let e = match first {
            Some(f) => self.ins(Op::IAdd, u, &[f, idx]),
            None => idx,
        };
        let s = self.const_u32(esize);
        self.ins(Op::IMul, u, &[e, s])
    }

    fn plus(&mut self, byte: Word, k: u32) -> Word {
        if k == 0 {
            return byte;
        }
        let c = self.const_u32(k);
        self.ins(Op::IAdd, self.t.u32_, &[byte, c])
    }

    /// `n` values of type `ty` from `byte` on, each as its result's type; masked off, the
    /// defaults (or zero).
    fn load_n(
        &mut self,
        op: &OpData,
        space: Space,
        byte: Word,
        ty: Ty,
        mask: Option<Operand>,
        defaults: &[Operand],
    ) -> R<()> {
        let tys: Vec<Ty> = op.results.iter().map(|&v| self.ty_of(v)).collect();
        let eb = bytes_of(ty);
        let load = |cx: &mut Cx| -> R<Vec<Word>> {
            let mut out = vec![];
            for (i, &rt) in tys.iter().enumerate() {
                let a = cx.plus(byte, i as u32 * eb);
                let v = cx.load_at(space, a, ty)?;
                out.push(cx.convert_bits(v, ty, rt)?);
            }
            Ok(out)
        };
        let vals = match mask {
            None => load(self)?,
            Some(m) => {
                let c = self.opnd(m, Ty::Pred)?;
                let mut ds = vec![];
                let mut sts = vec![];
                for (i, &rt) in tys.iter().enumerate() {
                    let d = defaults.get(i).copied().unwrap_or(Operand::Imm(0));
                    ds.push(self.opnd(d, rt)?);
                    sts.push(self.sty(rt));
                }
                self.guarded(c, &sts, &ds, load)?
            }
        };
        for ((&r, &v), &t) in op.results.iter().zip(&vals).zip(&tys) {
            self.set(r, Val::Id(v, t));
        }
        Ok(())
    }

    fn store_n(
        &mut self,
        space: Space,
        byte: Word,
        ty: Ty,
        vals: &[Operand],
        mask: Option<Operand>,
    ) -> R<()> {
        let mut ws = vec![];
        for &v in vals {
            ws.push(self.opnd(v, ty)?);
        }
        let eb = bytes_of(ty);
        let store = |cx: &mut Cx| -> R<Vec<Word>> {
            for (i, &w) in ws.iter().enumerate() {
                let a = cx.plus(byte, i as u32 * eb);
                cx.store_at(space, a, ty, w)?;
            }
            Ok(vec![])
        };
        match mask {
            None => {
                store(self)?;
            }
            Some(m) => {
                let c = self.opnd(m, Ty::Pred)?;
                self.guarded(c, &[], &[], store)?;
            }
        }
        Ok(())
    }

    pub(super) fn mem_op(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let get = |i: usize| -> R<Operand> {
            o.get(i).copied().ok_or_else(|| {
                super::Error::NotLowered(format!("Tile IR: {:?} lacks operand {i}", op.kind))
            })
        };
        let u = self.t.u32_;
        match &op.kind {
            OpKind::Load { ty, .. } => {
                let (b, first, esize) = self.view(get(0)?)?;
                let idx = self.opnd(get(1)?, Ty::U32)?;
                let (mask, defaults) = match o.get(2) {
                    Some(&m) if self.is_pred(m) => (Some(m), o.get(3..).unwrap_or(&[])),
                    _ => (None, o.get(2..).unwrap_or(&[])),
                };
                let byte = self.elem_byte(first, idx, esize);
                self.load_n(op, Space::Global(b), byte, *ty, mask, defaults)?;
            }
            OpKind::Store { ty, n } => {
                let (b, first, esize) = self.view(get(0)?)?;
                let idx = self.opnd(get(1)?, Ty::U32)?;
                let n = usize::from(*n);
                let vals: Vec<Operand> = (0..n).map(|i| get(2 + i)).collect::<R<_>>()?;
                let mask = o.get(2 + n).copied();
                let byte = self.elem_byte(first, idx, esize);
                self.store_n(Space::Global(b), byte, *ty, &vals, mask)?;
            }
            OpKind::Advance => {
                let (binding, first, esize) = self.view(get(0)?)?;
                let c = self.opnd(get(1)?, Ty::U32)?;
                let f = match first {
                    Some(f) => self.ins(Op::IAdd, u, &[f, c]),
                    None => c,
                };
                if let Some(&r) = op.results.first() {
                    self.set(
                        r,
                        Val::View {
                            binding,
                            first: Some(f),
                            esize,
                        },
                    );
                }
            }
            OpKind::RedAdd | OpKind::AtomAdd => {
                let (b, first, esize) = self.view(get(0)?)?;
                let idx = self.opnd(get(1)?, Ty::U32)?;
                let v = self.opnd(get(2)?, Ty::F32)?;
                let byte = self.elem_byte(first, idx, esize);
                let old = self.atomic_add_f32(b, byte, v)?;
                if let Some(&r) = op.results.first() {
                    self.set(r, Val::Id(old, Ty::F32));
                }
            }
            OpKind::SharedAddr => {
                let a = match get(0)?.value().map(|v| self.val(v)) {
                    Some(Ok(Val::Shared(a))) => a,
                    _ => return bug(self.k, "tile.shared_addr of a non-buffer"),
                };
                let c = self.const_u32(a);
                if let Some(&r) = op.results.first() {
                    self.set(r, Val::Id(c, Ty::U32));
                }
            }
            OpKind::Offset => {
                let r = self.offset(o)?;
                if let Some(&v) = op.results.first() {
                    self.set(v, Val::Id(r, Ty::U32));
                }
            }
            OpKind::LoadShared { ty, offset, .. } => {
                let addr = self.opnd(get(0)?, Ty::U32)?;
                let (mask, defaults) = match o.get(1) {
                    Some(&m) if self.is_pred(m) => (Some(m), o.get(2..).unwrap_or(&[])),
                    _ => (None, o.get(1..).unwrap_or(&[])),
                };
                let byte = self.plus_signed(addr, *offset);
                self.load_n(op, Space::Shared, byte, *ty, mask, defaults)?;
            }
            OpKind::StoreShared { ty, n, offset } => {
                let addr = self.opnd(get(0)?, Ty::U32)?;
                let n = usize::from(*n);
                let vals: Vec<Operand> = (0..n).map(|i| get(1 + i)).collect::<R<_>>()?;
                let mask = o.get(1 + n).copied();
                let byte = self.plus_signed(addr, *offset);
                self.store_n(Space::Shared, byte, *ty, &vals, mask)?;
            }
            OpKind::CopyAsync { bytes, .. } => self.copy(o, *bytes)?,
            // copies are synchronous here: nothing is pending
            OpKind::Commit | OpKind::Wait { .. } => {}
            OpKind::Barrier => self.barrier(),
            // Vulkan has no async proxy (TMA, wgmma) for the fence to order
            OpKind::FenceProxyAsync => return unsupported("fence.proxy.async (sm_90+)"),
            // Vulkan has no mbarrier (transaction-counted phases) nor warpgroup MMA
            OpKind::MbarrierInit
            | OpKind::MbarrierArrive
            | OpKind::MbarrierArriveExpectTx
            | OpKind::MbarrierCompleteTx
            | OpKind::MbarrierTryWait
            | OpKind::MbarrierWait => return unsupported("mbarrier (sm_90+)"),
            OpKind::WgmmaDesc { .. }
            | OpKind::WgmmaFence
            | OpKind::WgmmaCommit
            | OpKind::WgmmaWait { .. }
            | OpKind::WgmmaMmaAsync { .. } => return unsupported("wgmma (sm_90a only)"),
            // warp specialisation is written for Hopper's warpgroups (TMA producers, wgmma
            // consumers)
            OpKind::WarpgroupRole { .. } => return unsupported("warpgroup roles (PTX only)"),
            // Vulkan has no per-warp register budget to move
            OpKind::SetmaxnregInc { .. } | OpKind::SetmaxnregDec { .. } => {
                return unsupported("setmaxnreg (sm_90a only)")
            }
            OpKind::TmaLoad | OpKind::TmaStore | OpKind::TmaCommit | OpKind::TmaWaitRead { .. } => {
                return unsupported("TMA bulk tensor copies (cp.async.bulk.tensor, sm_90+)")
            }
            other => return unsupported(format!("the Tile op {other:?}")),
        }
        Ok(())
    }

    fn plus_signed(&mut self, a: Word, off: i32) -> Word {
        if off == 0 {
            return a;
        }
        let c = self.const_u32(off as u32);
        self.ins(Op::IAdd, self.t.u32_, &[a, c])
    }

    /// `tile.cp.async`, done at once: `bytes` bytes from the view's element to the shared
    /// address, the bytes past `src_bytes` zero; nothing where the mask is off.
    fn copy(&mut self, o: &[Operand], bytes: u32) -> R<()> {
        let u = self.t.u32_;
        let Some(&dst) = o.first() else {
            return bug(self.k, "tile.cp.async without a destination");
        };
        let dst = self.opnd(dst, Ty::U32)?;
        let (b, first, esize) = self.view(o.get(1).copied().unwrap_or(Operand::Imm(0)))?;
        let idx = self.opnd(o.get(2).copied().unwrap_or(Operand::Imm(0)), Ty::U32)?;
        let mut src_bytes = None;
        let mut mask = None;
        for &extra in o.iter().skip(3) {
            if self.is_pred(extra) {
                mask = Some(extra);
            } else {
                src_bytes = Some(self.opnd(extra, Ty::U32)?);
            }
        }
        let src = self.elem_byte(first, idx, esize);
        let body = move |cx: &mut Cx| -> R<Vec<Word>> {
            for w in 0..bytes.div_ceil(4) {
                let s = cx.plus(src, 4 * w);
                let d = cx.plus(dst, 4 * w);
                let val = match src_bytes {
                    None => cx.load_at(Space::Global(b), s, Ty::B32)?,
                    Some(n) => {
                        // valid bytes of this word: clamp(n − 4w, 0, 4)
                        let four = cx.const_u32(4);
                        let zero = cx.const_u32(0);
                        let off = cx.const_u32(4 * w);
                        let gt = cx.ins(Op::UGreaterThan, cx.t.bool_, &[n, off]);
                        let rest = cx.ins(Op::ISub, u, &[n, off]);
                        let rest = cx.ins(Op::Select, u, &[gt, rest, zero]);
                        let valid = cx.glsl(rspirv::spirv::GlslStd450Op::UMin, u, &[rest, four]);
                        let any = cx.ins(Op::UGreaterThan, cx.t.bool_, &[valid, zero]);
                        let loaded = cx.guarded(any, &[u], &[zero], |cx| {
                            Ok(vec![cx.load_at(Space::Global(b), s, Ty::B32)?])
                        })?[0];
                        // keep the low `valid` bytes
                        let eight = cx.const_u32(8);
                        let bits = cx.ins(Op::IMul, u, &[valid, eight]);
                        let all = cx.const_u32(u32::MAX);
                        let s32 = cx.const_u32(32);
                        let sh = cx.ins(Op::ISub, u, &[s32, bits]);
                        let c31 = cx.const_u32(31);
                        let sh31 = cx.glsl(rspirv::spirv::GlslStd450Op::UMin, u, &[sh, c31]);
                        let m = cx.ins(Op::ShiftRightLogical, u, &[all, sh31]);
                        let full = cx.ins(Op::IEqual, cx.t.bool_, &[valid, four]);
                        let m = cx.ins(Op::Select, u, &[full, all, m]);
                        let m = cx.ins(Op::Select, u, &[any, m, zero]);
                        cx.ins(Op::BitwiseAnd, u, &[loaded, m])
                    }
                };
                cx.store_at(Space::Shared, d, Ty::B32, val)?;
            }
            Ok(vec![])
        };
        match mask {
            None => {
                body(self)?;
            }
            Some(m) => {
                let c = self.opnd(m, Ty::Pred)?;
                self.guarded(c, &[], &[], body)?;
            }
        }
        Ok(())
    }

    /// `tile.offset`: the byte address of `[stage, row, col]` under the buffer's layout.
    fn offset(&mut self, o: &[Operand]) -> R<Word> {
        let u = self.t.u32_;
        let (Some(buf), Some(&stage), Some(&row), Some(&col)) = (
            o.first().and_then(|b| b.value()),
            o.get(1),
            o.get(2),
            o.get(3),
        ) else {
            return bug(
                self.k,
                "tile.offset takes a buffer, a stage, a row and a column",
            );
        };
        let (Ok(Val::Shared(base)), Some(sb)) = (self.val(buf), self.k.shared_buf(buf).cloned())
        else {
            return bug(self.k, "tile.offset of a non-buffer");
        };
        let stage_b = u32::try_from(sb.stage_bytes()).unwrap_or(u32::MAX);
        let (stage, row, col) = (
            self.opnd(stage, Ty::U32)?,
            self.opnd(row, Ty::U32)?,
            self.opnd(col, Ty::U32)?,
        );
        let c = |cx: &mut Cx, v: u32| cx.const_u32(v);
        let sbc = c(self, stage_b);
        let pitch = c(self, sb.layout.pitch);
        let eb = c(self, sb.elem_bytes);
        let basec = c(self, base);
        let s = self.ins(Op::IMul, u, &[stage, sbc]);
        let acc = self.ins(Op::IAdd, u, &[basec, s]);
        let r = self.ins(Op::IMul, u, &[row, pitch]);
        let acc = self.ins(Op::IAdd, u, &[acc, r]);
        let cb = self.ins(Op::IMul, u, &[col, eb]);
        let cb = match sb.layout.swizzle {
            None => cb,
            Some(sw) => {
                let (sh, m, four) = (c(self, sw.shift), c(self, sw.mask), c(self, 4));
                let x = self.ins(Op::ShiftRightLogical, u, &[row, sh]);
                let x = self.ins(Op::BitwiseAnd, u, &[x, m]);
                let x = self.ins(Op::ShiftLeftLogical, u, &[x, four]);
                self.ins(Op::BitwiseXor, u, &[cb, x])
            }
        };
        Ok(self.ins(Op::IAdd, u, &[acc, cb]))
    }

    /// `atom.global.add.f32` as a compare-and-swap loop on the element's word; the old value.
    fn atomic_add_f32(&mut self, binding: u32, byte: Word, v: Word) -> R<Word> {
        let (u, f, bt) = (self.t.u32_, self.t.f32_, self.t.bool_);
        let (header, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.branch(header, Some(header))?;
        self.b
            .loop_merge(merge, cont, rspirv::spirv::LoopControl::NONE, [])
            .map_err(super::build_err)?;
        self.branch(body, Some(body))?;
        let p = self.word_at(Space::Global(binding), byte, 0)?;
        let old = self.ins(Op::Load, u, &[p]);
        let of = self.ins(Op::Bitcast, f, &[old]);
        let sum = self.ins(Op::FAdd, f, &[of, v]);
        let new = self.ins(Op::Bitcast, u, &[sum]);
        let scope = self.const_u32(Scope::Device as u32);
        let sem = self.const_u32(MemorySemantics::RELAXED.bits());
        let got = self.ins(
            Op::AtomicCompareExchange,
            u,
            &[p, scope, sem, sem, new, old],
        );
        let done = self.ins(Op::IEqual, bt, &[got, old]);
        self.branch(cont, Some(cont))?;
        self.b
            .branch_conditional(done, merge, header, [])
            .map_err(super::build_err)?;
        self.cur = self.b.begin_block(Some(merge)).map_err(super::build_err)?;
        Ok(self.ins(Op::Bitcast, f, &[got]))
    }
}
