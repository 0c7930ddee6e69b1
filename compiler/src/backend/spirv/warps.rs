//! Warps whose lanes exchange values through workgroup memory ([`Lanes::Shared`]).
//!
//! Each lane has `S` words of slots per bank (two banks alternate; the lane's `bank` variable
//! flips at each exchange), so an exchange is: write, one barrier, read. A lane writes a bank
//! again only after the next exchange's barrier, which every lane reaches after reading this
//! one. Consecutive shuffles are batched: at a `tile.shfl` the run of shuffles that follows in
//! the same region (up to a loop, an if, a barrier, a warp reduction or a shuffle of a value
//! not yet computed) publishes all its distinct source values at once, one word each, behind
//! one barrier; each shuffle then reads its source lane's word where it stands. FlashAttention's
//! broadcasts (four values from each of the 32 lanes) take one barrier instead of 128.

use super::{bug, Cx, Lanes, R};
use crate::scalar::{SReg, Ty};
use crate::tile::ir::*;
use rspirv::dr::Operand as SOp;
use rspirv::spirv::{Op, Word};

/// Whether an op ends a batch of shuffles.
fn stops(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::For { .. }
            | OpKind::If
            | OpKind::Yield
            | OpKind::Barrier
            | OpKind::ReduceWarp { .. }
            | OpKind::ReduceBlock { .. }
    )
}

/// Words of slots a lane needs per bank: the most distinct shuffle sources of a run of
/// shuffles (an upper bound of any batch), and 2 for a 64-bit warp reduction.
pub(super) fn slot_words(k: &Kernel) -> u32 {
    let mut most = 1usize;
    let mut visit = |r: &Region| {
        let mut run: Vec<Operand> = vec![];
        for &id in &r.ops {
            let Some(op) = k.op(id) else { continue };
            match &op.kind {
                OpKind::Shfl { .. } => {
                    if let Some(&src) = op.operands.first() {
                        if !run.contains(&src) {
                            run.push(src);
                        }
                    }
                }
                OpKind::ReduceWarp { ty, .. } | OpKind::ReduceBlock { ty, .. }
                    if ty.bits() == 64 =>
                {
                    most = most.max(2);
                    run.clear();
                }
                kind if stops(kind) => run.clear(),
                _ => {}
            }
            most = most.max(run.len());
        }
    };
    fn walk(k: &Kernel, r: &Region, f: &mut dyn FnMut(&Region)) {
        f(r);
        for &id in &r.ops {
            if let Some(op) = k.op(id) {
                for sub in &op.regions {
                    walk(k, sub, f);
                }
            }
        }
    }
    walk(k, &k.body, &mut visit);
    most as u32
}

impl Cx<'_> {
    /// At a shuffle not in a batch yet: publishes the batch that starts at `ops[0]`.
    pub(super) fn batch_at(&mut self, ops: &[OpId]) -> R<()> {
        if self.lanes != Lanes::Shared {
            return Ok(());
        }
        let mut members = vec![];
        let mut sources: Vec<Operand> = vec![];
        for &id in ops {
            let Some(op) = self.k.op(id) else { break };
            match &op.kind {
                OpKind::Shfl { .. } => {
                    let Some(&src) = op.operands.first() else {
                        break;
                    };
                    let ready = match src {
                        Operand::Value(v) => {
                            self.vals.get(v.0 as usize).is_some_and(|x| x.is_some())
                        }
                        _ => true,
                    };
                    if !ready {
                        break;
                    }
                    let slot = match sources.iter().position(|&s| s == src) {
                        Some(i) => i,
                        None => {
                            sources.push(src);
                            sources.len() - 1
                        }
                    };
                    members.push((id, slot as u32));
                }
                kind if stops(kind) => break,
                _ => {}
            }
        }
        let words: Vec<Word> = sources
            .iter()
            .map(|&s| self.opnd(s, Ty::B32))
            .collect::<R<_>>()?;
        let bank = self.exchange(&words)?;
        for (id, slot) in members {
            self.batch.insert(id, (bank, slot));
        }
        Ok(())
    }

    /// Writes `words` to this lane's slots of the current bank, a barrier, flips the bank;
    /// the bank's byte offset.
    pub(super) fn exchange(&mut self, words: &[Word]) -> R<Word> {
        let u = self.t.u32_;
        let Some(var) = self.bank else {
            return bug(self.k, "a warp exchange without its bank variable");
        };
        let bank = self.ins(Op::Load, u, &[var]);
        let size = self.const_u32(self.bank_bytes());
        let off = self.ins(Op::IMul, u, &[bank, size]);
        let lane = self.special(SReg::LaneId);
        for (i, &w) in words.iter().enumerate() {
            let at = self.slot_addr(lane, off, i as u32);
            self.store_shared_at(at, Ty::B32, w)?;
        }
        self.barrier();
        let one = self.const_u32(1);
        let flipped = self.ins(Op::BitwiseXor, u, &[bank, one]);
        self.ins_void(Op::Store, vec![SOp::IdRef(var), SOp::IdRef(flipped)]);
        Ok(off)
    }

    /// The byte address of word `word` of lane `lane`'s slots (this warp, the bank at `bank`).
    pub(super) fn slot_addr(&mut self, lane: Word, bank: Word, word: u32) -> Word {
        let u = self.t.u32_;
        let warp = self.special(SReg::WarpId);
        let s = self.slot_words;
        let (c32, per_lane) = (self.const_u32(32), self.const_u32(4 * s));
        let base = self.const_u32(self.slots_base() + 4 * word);
        let wl = self.ins(Op::IMul, u, &[warp, c32]);
        let wl = self.ins(Op::IAdd, u, &[wl, lane]);
        let a = self.ins(Op::IMul, u, &[wl, per_lane]);
        let a = self.ins(Op::IAdd, u, &[a, base]);
        self.ins(Op::IAdd, u, &[a, bank])
    }

    /// Publishes this lane's `v` (32 or 64 bits) to the warp: the bank's offset and the
    /// number of words, for [`Cx::lane_value`].
    pub(super) fn publish(&mut self, v: Word, ty: Ty) -> R<(Word, u32)> {
        let u = self.t.u32_;
        let words = if ty.bits() == 64 {
            let w = self.convert_bits(v, ty, Ty::U64)?;
            let v2 = self.ins(Op::Bitcast, self.t.v2u32, &[w]);
            vec![self.extract(u, v2, 0), self.extract(u, v2, 1)]
        } else {
            vec![self.convert_bits(v, ty, Ty::U32)?]
        };
        Ok((self.exchange(&words)?, words.len() as u32))
    }

    /// The value lane `lane` published ([`Cx::publish`]).
    pub(super) fn lane_value(&mut self, lane: Word, bank: Word, words: u32, ty: Ty) -> R<Word> {
        let mut parts = vec![];
        for i in 0..words {
            let at = self.slot_addr(lane, bank, i);
            parts.push(self.load_shared_at(at, Ty::B32)?);
        }
        if let [lo, hi] = parts[..] {
            let v2 = self.ins(Op::CompositeConstruct, self.t.v2u32, &[lo, hi]);
            let w = self.ins(Op::Bitcast, self.t.u64_, &[v2]);
            self.convert_bits(w, Ty::U64, ty)
        } else {
            self.convert_bits(parts[0], Ty::U32, ty)
        }
    }

    /// The shuffled value of the batch member `id`, read from source lane `j`.
    pub(super) fn batch_read(&mut self, id: OpId, j: Word) -> R<Word> {
        let Some(&(bank, slot)) = self.batch.get(&id) else {
            return bug(self.k, "a shuffle outside its batch");
        };
        let at = self.slot_addr(j, bank, slot);
        self.load_shared_at(at, Ty::B32)
    }
}
