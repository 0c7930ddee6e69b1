//! Ops of Tile → Target that expand to instruction sequences: `tile.offset` (an address
//! under a buffer's layout), `tile.reduce_warp` (butterfly shuffles), `tile.reduce_block`
//! (through shared memory).

use super::{bug, Cx, R};
use crate::backend::ptx::builder::imm;
use crate::backend::ptx::{
    BinOp, Cmp, Dim, Op as TOp, Operand as TOperand, Reg, SReg, SharedId, ShflMode, Space, Ty,
};
use crate::tile::ir::Operand;

impl Cx<'_> {
    /// `base + stage·stage_bytes + row·pitch + swizzled(col·elem_bytes)`.
    pub(super) fn offset(&mut self, o: &[Operand]) -> R<Reg> {
        let Some(&buf) = o.first() else {
            return bug(self.k, "tile.offset without a buffer");
        };
        let (id, sb) = self.shared(buf)?;
        let base = self.b.shared_addr(id);
        let parts = [o.get(1), o.get(2), o.get(3)];
        let [Some(&stage), Some(&row), Some(&col)] = parts else {
            return bug(self.k, "tile.offset takes a stage, a row and a column");
        };
        let stage_b = i64::try_from(sb.stage_bytes()).unwrap_or(i64::MAX);
        let pitch = i64::from(sb.layout.pitch);
        let eb = i64::from(sb.elem_bytes);
        let mut acc: TOperand = TOperand::Reg(base);
        let term = |cx: &mut Cx, x: Operand, scale: i64, acc: TOperand| -> R<TOperand> {
            let x = cx.opnd(x)?;
            Ok(match (x, acc) {
                (TOperand::Imm(0), a) => a,
                (TOperand::Imm(i), a) => TOperand::Reg(cx.b.add(Ty::U32, a, imm(i * scale))),
                (xr, a) => TOperand::Reg(cx.b.fma(Ty::U32, xr, imm(scale), a)),
            })
        };
        acc = term(self, stage, stage_b, acc)?;
        match sb.layout.swizzle {
            None => {
                acc = term(self, row, pitch, acc)?;
                acc = term(self, col, eb, acc)?;
            }
            Some(sw) => {
                acc = term(self, row, pitch, acc)?;
                // byte column, its 16-byte chunk XOR (row >> shift) & mask
                let cb = self.opnd(col)?;
                let cbytes = self.b.mul(Ty::U32, cb, imm(eb));
                let r = self.opnd(row)?;
                let sh = self.b.bin(BinOp::Shr, Ty::U32, r, imm(i64::from(sw.shift)));
                let m = self.b.bin(BinOp::And, Ty::B32, sh, imm(i64::from(sw.mask)));
                let m4 = self.b.bin(BinOp::Shl, Ty::B32, m, imm(4));
                let x = self.b.bin(BinOp::Xor, Ty::B32, cbytes, m4);
                acc = TOperand::Reg(self.b.add(Ty::U32, acc, x));
            }
        }
        Ok(match acc {
            TOperand::Reg(r) => r,
            other => self.b.mov(Ty::U32, other),
        })
    }

    pub(super) fn reduce_warp(&mut self, v: Reg, op: BinOp, ty: Ty) {
        let b = &mut self.b;
        for s in [16, 8, 4, 2, 1] {
            if ty.bits() != 64 {
                let t = b.reg(ty);
                b.push(TOp::Shfl {
                    mode: ShflMode::Bfly,
                    dst: t,
                    src: v.into(),
                    lane: imm(s),
                    clamp: imm(31),
                    mask: 0xffff_ffff,
                });
                b.bin_to(v, op, ty, v, t);
                continue;
            }
            // a 64-bit value (f64, s64) moves as two 32-bit halves
            let bits = b.reg(Ty::B64);
            b.push(TOp::Mov {
                ty: Ty::B64,
                dst: bits,
                src: v.into(),
            });
            let lo = b.cvt(Ty::U32, Ty::U64, None, bits);
            let hi64 = b.bin(BinOp::Shr, Ty::U64, bits, imm(32));
            let hi = b.cvt(Ty::U32, Ty::U64, None, hi64);
            let mut halves = [lo, hi].map(|h| {
                let t = b.reg(Ty::B32);
                b.push(TOp::Shfl {
                    mode: ShflMode::Bfly,
                    dst: t,
                    src: h.into(),
                    lane: imm(s),
                    clamp: imm(31),
                    mask: 0xffff_ffff,
                });
                b.cvt(Ty::U64, Ty::U32, None, t)
            });
            halves[1] = b.bin(BinOp::Shl, Ty::B64, halves[1], imm(32));
            let joined = b.bin(BinOp::Or, Ty::B64, halves[0], halves[1]);
            let t = b.reg(ty);
            b.push(TOp::Mov {
                ty: Ty::B64,
                dst: t,
                src: joined.into(),
            });
            b.bin_to(v, op, ty, v, t);
        }
    }

    /// `tile.reduce_block`: warp all-reduces, one partial per warp through `scratch`, every
    /// thread folding the partials in warp order; barriers before and after the reads.
    pub(super) fn reduce_block(&mut self, v: Reg, op: BinOp, ty: Ty, scratch: SharedId) -> Reg {
        self.reduce_warp(v, op, ty);
        let warps = self.k.threads().div_ceil(32).max(1) as i64;
        let eb = i64::from(ty.bits() / 8);
        let b = &mut self.b;
        let base = b.shared_addr(scratch);
        let tid = b.special(SReg::Tid(Dim::X));
        let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
        let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
        let first = b.setp(Cmp::Eq, Ty::U32, lane, imm(0));
        let at = b.fma(Ty::U32, warp, imm(eb), base);
        b.when(first).st(Space::Shared, ty, at, 0, &[v.into()]);
        b.bar_sync();
        let acc = b.ld(Space::Shared, ty, base, 0, 1)[0];
        for w in 1..warps {
            let x = b.ld(Space::Shared, ty, base, (w * eb) as i32, 1)[0];
            b.bin_to(acc, op, ty, acc, x);
        }
        b.bar_sync();
        acc
    }
}
