//! Structured control flow: `tile.for` and `tile.if` as blocks, and the parallel copy of a
//! `tile.yield` into the registers of the values it defines.

use super::{bug, Cx, Slot, R};
use crate::backend::ptx::builder::imm;
use crate::backend::ptx::{BinOp, Cmp, Dim, Operand as TOperand, Reg, SReg, Ty};
use crate::tile::ir::*;

impl Cx<'_> {
    /// Copies `srcs` into `dsts` as one parallel copy (a source may be a destination).
    pub(super) fn parallel_copy(&mut self, dsts: &[Reg], srcs: &[Operand]) -> R<()> {
        let vals: Vec<Vec<TOperand>> = srcs
            .iter()
            .map(|&s| match s {
                Operand::Value(v) => Ok(self.regs(v)?.into_iter().map(TOperand::Reg).collect()),
                other => Ok(vec![self.opnd(other)?]),
            })
            .collect::<R<_>>()?;
        let flat: Vec<TOperand> = vals.into_iter().flatten().collect();
        if flat.len() != dsts.len() {
            return bug(self.k, "tile.yield does not match the values it defines");
        }
        let clash = flat.iter().enumerate().any(|(i, s)| {
            matches!(s, TOperand::Reg(r) if dsts.iter().enumerate().any(|(j, d)| d == r && i != j))
        });
        let srcs: Vec<TOperand> = if clash {
            flat.iter()
                .zip(dsts)
                .map(|(s, d)| {
                    let ty = self.b_ty(*d);
                    TOperand::Reg(self.b.mov(ty, *s))
                })
                .collect()
        } else {
            flat
        };
        for (d, s) in dsts.iter().zip(srcs) {
            if s != TOperand::Reg(*d) {
                self.b.assign(*d, s);
            }
        }
        Ok(())
    }

    pub(super) fn for_loop(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let (Some(&lb), Some(&ub), Some(&step)) = (o.first(), o.get(1), o.get(2)) else {
            return bug(self.k, "tile.for takes lb, ub, step");
        };
        let Some(body) = op.regions.first() else {
            return bug(self.k, "tile.for without a body");
        };
        let (Some(&iv), carried) = (body.args.first(), body.args.get(1..).unwrap_or(&[])) else {
            return bug(self.k, "tile.for without an induction variable");
        };
        let lb = self.opnd(lb)?;
        let ub = self.opnd(ub)?;
        let step = self.opnd(step)?;
        let i = self.b.mov(Ty::U32, lb);
        let inits: Vec<Operand> = o.get(3..).unwrap_or(&[]).to_vec();
        // an init that dies here lends its registers to the carried value
        let mut regs = vec![];
        for (j, &c) in carried.iter().enumerate() {
            match inits.get(j).and_then(|x| x.value()) {
                Some(v) if self.consumable(v) => regs.extend(self.regs(v)?),
                _ => regs.extend(self.fresh(&[c])),
            }
        }
        self.own(carried);
        self.own(&op.results);
        self.parallel_copy(&regs, &inits)?;
        self.set(iv, Slot::Regs(vec![i]));
        self.bind(carried, &regs);
        let head = self.b.block("loop");
        if matches!(op.kind, OpKind::For { rolled: true, .. }) {
            self.b.nounroll(head);
        }
        let bodyb = self.b.block("body");
        self.b.br(head);
        self.b.switch_to(head);
        let more = self.b.setp(Cmp::Lt, Ty::U32, i, ub);
        self.b.switch_to(bodyb);
        self.region(body)?;
        let ys = self.yielded(body)?;
        self.b.at(op.span);
        self.parallel_copy(&regs, &ys)?;
        self.b.bin_to(i, BinOp::Add, Ty::U32, i, step);
        self.b.br(head);
        let exit = self.b.block("done");
        self.b.switch_to(head);
        self.b.cbr(more, bodyb, exit);
        self.b.switch_to(exit);
        self.bind(&op.results, &regs);
        Ok(())
    }

    /// `tile.warpgroup_role`: a branch around the region on `%tid.x / 128 - first < count`
    /// (unsigned: one comparison for both ends).
    pub(super) fn role(&mut self, op: &OpData, first: u32, count: u32) -> R<()> {
        let Some(body) = op.regions.first() else {
            return bug(self.k, "tile.warpgroup_role takes one region");
        };
        self.b.at(op.span);
        let tid = self.b.special(SReg::Tid(Dim::X));
        let wg = self.b.bin(BinOp::Shr, Ty::U32, tid, imm(7));
        let rel = self.b.sub(Ty::U32, wg, imm(i64::from(first)));
        let p = self.b.setp(Cmp::Lt, Ty::U32, rel, imm(i64::from(count)));
        let from = self.b.current();
        let bodyb = self.b.block("role");
        self.b.switch_to(bodyb);
        self.region(body)?;
        let end = self.b.current();
        let join = self.b.block("join");
        self.b.switch_to(end);
        self.b.br(join);
        self.b.switch_to(from);
        self.b.cbr(p, bodyb, join);
        self.b.switch_to(join);
        Ok(())
    }

    pub(super) fn if_op(&mut self, op: &OpData) -> R<()> {
        let Some(&c) = op.operands.first() else {
            return bug(self.k, "tile.if without a condition");
        };
        let p = self.reg_of(c, Ty::Pred)?;
        let (Some(then), Some(els)) = (op.regions.first(), op.regions.get(1)) else {
            return bug(self.k, "tile.if takes two regions");
        };
        let regs = self.fresh(&op.results);
        let from = self.b.current();
        let thenb = self.b.block("then");
        self.b.switch_to(thenb);
        self.region(then)?;
        let ys = self.yielded(then)?;
        self.b.at(op.span);
        self.parallel_copy(&regs, &ys)?;
        let then_end = self.b.current();
        let else_empty = els.ops.len() <= 1 && regs.is_empty();
        let elsb = if else_empty {
            None
        } else {
            let e = self.b.block("else");
            self.b.switch_to(e);
            self.region(els)?;
            let ys = self.yielded(els)?;
            self.b.at(op.span);
            self.parallel_copy(&regs, &ys)?;
            Some((e, self.b.current()))
        };
        let join = self.b.block("join");
        self.b.switch_to(then_end);
        self.b.br(join);
        if let Some((_, end)) = elsb {
            self.b.switch_to(end);
            self.b.br(join);
        }
        self.b.switch_to(from);
        self.b.cbr(p, thenb, elsb.map(|(e, _)| e).unwrap_or(join));
        self.b.switch_to(join);
        self.bind(&op.results, &regs);
        Ok(())
    }
}
