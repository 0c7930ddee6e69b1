//! The sm_90 ops of Tile → Target: mbarrier, the wgmma descriptor (an instruction sequence),
//! wgmma itself and the TMA's bulk tensor copies.

use super::{bug, get, Cx, R};
use crate::backend::ptx::builder::imm;
use crate::backend::ptx::{BinOp, Op as TOp, Operand as TOperand, Reg, Ty};
use crate::tile::ir::*;

impl Cx<'_> {
    pub(super) fn op_hopper(&mut self, op: &OpData) -> R<()> {
        match &op.kind {
            OpKind::MbarrierInit => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let count = self.opnd(get(op, 1)?)?;
                self.b.push(TOp::MbarrierInit { addr, count });
            }
            OpKind::MbarrierArrive | OpKind::MbarrierArriveExpectTx => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let tx = match op.kind {
                    OpKind::MbarrierArriveExpectTx => Some(self.opnd(get(op, 1)?)?),
                    _ => None,
                };
                let dst = self.b.reg(Ty::B64);
                self.b.push(TOp::MbarrierArrive { dst, addr, tx });
                self.single(op, dst);
            }
            OpKind::MbarrierCompleteTx => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let tx = self.opnd(get(op, 1)?)?;
                self.b.push(TOp::MbarrierCompleteTx { addr, tx });
            }
            OpKind::MbarrierTryWait => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let parity = self.opnd(get(op, 1)?)?;
                let dst = self.b.reg(Ty::Pred);
                self.b.push(TOp::MbarrierTryWait { dst, addr, parity });
                self.single(op, dst);
            }
            OpKind::MbarrierWait => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let parity = self.opnd(get(op, 1)?)?;
                let pred = self.b.reg(Ty::Pred);
                let label = self.waits;
                self.waits += 1;
                self.b.push(TOp::MbarrierWait {
                    pred,
                    addr,
                    parity,
                    label,
                });
            }
            OpKind::WgmmaDesc { swizzle } => {
                let r = self.wgmma_desc(op, *swizzle)?;
                self.single(op, r);
            }
            OpKind::WgmmaFence => self.b.push(TOp::WgmmaFence),
            OpKind::SetmaxnregInc { n } => self.b.push(TOp::SetMaxNReg { inc: true, n: *n }),
            OpKind::SetmaxnregDec { n } => self.b.push(TOp::SetMaxNReg { inc: false, n: *n }),
            OpKind::WgmmaCommit => self.b.push(TOp::WgmmaCommit),
            OpKind::WgmmaWait { n } => self.b.push(TOp::WgmmaWait { n: *n }),
            OpKind::WgmmaMmaAsync { n, ab } => self.wgmma(op, *n, *ab)?,
            OpKind::TmaLoad => {
                let dst = self.reg_of(get(op, 0)?, Ty::U32)?;
                let map = self.reg_of(get(op, 1)?, Ty::U64)?;
                let mbar = self.reg_of(get(op, 2)?, Ty::U32)?;
                let coords = self.coords(op, 3)?;
                self.b.push(TOp::TmaLoad {
                    dst,
                    map,
                    coords,
                    mbar,
                });
            }
            OpKind::TmaStore => {
                let map = self.reg_of(get(op, 0)?, Ty::U64)?;
                let src = self.reg_of(get(op, 1)?, Ty::U32)?;
                let coords = self.coords(op, 2)?;
                self.b.push(TOp::TmaStore { map, coords, src });
            }
            OpKind::TmaCommit => self.b.push(TOp::BulkCommit),
            OpKind::TmaWaitRead { n } => self.b.push(TOp::BulkWaitRead { n: *n }),
            other => return bug(self.k, format!("{other:?} is not an sm_90 op")),
        }
        Ok(())
    }

    /// A bulk copy's coordinates (operands `from`…, outermost first) in PTX's order,
    /// innermost first.
    fn coords(&mut self, op: &OpData, from: usize) -> R<Vec<Reg>> {
        let mut regs = vec![];
        for &o in op.operands.get(from..).unwrap_or(&[]).iter().rev() {
            regs.push(self.reg_of(o, Ty::S32)?);
        }
        Ok(regs)
    }

    /// The 64-bit descriptor: bits 0–13 the start address >> 4, 16–29 the leading byte
    /// offset >> 4, 32–45 the stride byte offset >> 4, 49–51 the base offset (0), 62–63 the
    /// swizzle (0 none, 1 128 bytes, 2 64 bytes, 3 32 bytes).
    fn wgmma_desc(&mut self, op: &OpData, swizzle: u32) -> R<Reg> {
        let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
        let lbo = self.reg_of(get(op, 1)?, Ty::U32)?;
        let sbo = self.reg_of(get(op, 2)?, Ty::U32)?;
        let code: i64 = match swizzle {
            0 => 0,
            128 => 1,
            64 => 2,
            32 => 3,
            other => return bug(self.k, format!("wgmma descriptor swizzle {other}")),
        };
        let b = &mut self.b;
        let lo = b.bin(BinOp::And, Ty::B32, addr, imm(0x3FFFF));
        let lo = b.bin(BinOp::Shr, Ty::B32, lo, imm(4));
        let l = b.bin(BinOp::Shr, Ty::B32, lbo, imm(4));
        let l = b.bin(BinOp::And, Ty::B32, l, imm(0x3FFF));
        let l = b.bin(BinOp::Shl, Ty::B32, l, imm(16));
        let lo = b.bin(BinOp::Or, Ty::B32, lo, l);
        let hi = b.bin(BinOp::Shr, Ty::B32, sbo, imm(4));
        let hi = b.bin(BinOp::And, Ty::B32, hi, imm(0x3FFF));
        let hi = match code {
            0 => hi,
            c => b.bin(BinOp::Or, Ty::B32, hi, imm(c << 30)),
        };
        let lo64 = b.cvt(Ty::U64, Ty::U32, None, lo);
        let hi64 = b.cvt(Ty::U64, Ty::U32, None, hi);
        let hi64 = b.bin(BinOp::Shl, Ty::B64, hi64, imm(32));
        Ok(b.bin(BinOp::Or, Ty::B64, lo64, hi64))
    }

    /// `wgmma.mma_async`: the accumulators (operands 2…) are rewritten in place when they die
    /// here and own their registers (a chain of wgmmas), else copied to fresh registers.
    fn wgmma(&mut self, op: &OpData, n: u32, ab: Ty) -> R<()> {
        let a_desc = self.reg_of(get(op, 0)?, Ty::U64)?;
        let b_desc = self.reg_of(get(op, 1)?, Ty::U64)?;
        let accs = op.operands.get(2..).unwrap_or(&[]);
        let scale_d = !accs.is_empty();
        let mut d = vec![];
        if scale_d {
            for &o in accs {
                let r = match o {
                    Operand::Value(v) if self.consumable(v) => self.reg(v)?,
                    other => {
                        let x: TOperand = self.opnd(other)?;
                        self.b.mov(Ty::F32, x)
                    }
                };
                d.push(r);
            }
        } else {
            d = (0..n / 2).map(|_| self.b.reg(Ty::F32)).collect();
        }
        self.own(&op.results);
        self.b.push(TOp::WgmmaMmaAsync {
            n,
            ab,
            d: d.clone(),
            a_desc,
            b_desc,
            scale_d,
        });
        self.bind(&op.results, &d);
        Ok(())
    }
}
