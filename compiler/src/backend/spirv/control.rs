//! Structured control flow: `tile.for` as a SPIR-V loop construct (header `OpPhi`s for the
//! induction variable and carried values, a continue block adding the step), `tile.if` as a
//! selection construct with `OpPhi` results, and guarded code (a masked load or store).

use super::{bug, build_err, Cx, Val, R};
use crate::scalar::Ty;
use crate::tile::ir::*;
use rspirv::dr::InsertPoint;
use rspirv::spirv::{LoopControl, Op, SelectionControl, Word};

impl Cx<'_> {
    /// Ends the current block with a branch to `to` and starts block `next` (when given).
    pub(super) fn branch(&mut self, to: Word, next: Option<Word>) -> R<()> {
        self.b.branch(to).map_err(build_err)?;
        if let Some(n) = next {
            self.cur = self.b.begin_block(Some(n)).map_err(build_err)?;
        }
        Ok(())
    }

    pub(super) fn block_index(&self) -> Option<usize> {
        self.b.selected_block()
    }

    pub(super) fn for_loop(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let Some(body) = op.regions.first() else {
            return bug(self.k, "tile.for without a body");
        };
        let (lb, ub, step) = match o.as_slice() {
            [lb, ub, step, ..] => (
                self.opnd(*lb, Ty::U32)?,
                self.opnd(*ub, Ty::U32)?,
                self.opnd(*step, Ty::U32)?,
            ),
            _ => return bug(self.k, "tile.for lacks its bounds"),
        };
        let carried_tys: Vec<Ty> = op.results.iter().map(|&v| self.ty_of(v)).collect();
        let carried: Vec<(Word, Ty)> = o[3..]
            .iter()
            .zip(&carried_tys)
            .map(|(&x, &t)| Ok((self.opnd(x, t)?, t)))
            .collect::<R<_>>()?;
        let control = if matches!(op.kind, OpKind::For { rolled: true, .. }) {
            LoopControl::DONT_UNROLL
        } else {
            LoopControl::NONE
        };
        let results = self.loop_construct([lb, ub, step], control, &carried, |cx, iv, phis| {
            if let Some(&a) = body.args.first() {
                cx.set(a, Val::Id(iv, Ty::U32));
            }
            for ((&a, &p), &t) in body.args.iter().skip(1).zip(phis).zip(&carried_tys) {
                cx.set(a, Val::Id(p, t));
            }
            cx.region(body)?;
            let ys = cx.yielded(body)?;
            ys.iter()
                .zip(&carried_tys)
                .map(|(&y, &t)| cx.opnd(y, t))
                .collect::<R<_>>()
        })?;
        for ((&r, &p), &t) in op.results.iter().zip(&results).zip(&carried_tys) {
            self.set(r, Val::Id(p, t));
        }
        Ok(())
    }

    /// A loop the translator makes itself: `for j in lo..hi` (not unrolled), `carried` values
    /// (with their types) updated by `body(cx, j, carried)`; their final values.
    pub(super) fn counted_loop(
        &mut self,
        lo: u32,
        hi: u32,
        carried: &[(Word, Ty)],
        body: impl FnMut(&mut Self, Word, &[Word]) -> R<Vec<Word>>,
    ) -> R<Vec<Word>> {
        let bounds = [self.const_u32(lo), self.const_u32(hi), self.const_u32(1)];
        self.loop_construct(bounds, LoopControl::DONT_UNROLL, carried, body)
    }

    /// A SPIR-V loop construct `for iv in lb..ub step s` (`[lb, ub, s]`, u32): the header's
    /// `OpPhi`s for the induction variable and the `carried` values (initial value, type),
    /// `body(cx, iv, phis)` giving their next values, a continue block adding the step; the
    /// phis, which hold the final values after the loop.
    fn loop_construct(
        &mut self,
        [lb, ub, step]: [Word; 3],
        control: LoopControl,
        carried: &[(Word, Ty)],
        mut body: impl FnMut(&mut Self, Word, &[Word]) -> R<Vec<Word>>,
    ) -> R<Vec<Word>> {
        let pre = self.cur;
        let (header, body_l, latch, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.branch(header, Some(header))?;
        let header_idx = self.block_index();
        let iv = self.b.id();
        let phis: Vec<Word> = carried.iter().map(|_| self.b.id()).collect();
        let cond = self.ins(Op::ULessThan, self.t.bool_, &[iv, ub]);
        self.b
            .loop_merge(merge, latch, control, [])
            .map_err(build_err)?;
        self.b
            .branch_conditional(cond, body_l, merge, [])
            .map_err(build_err)?;
        self.cur = self.b.begin_block(Some(body_l)).map_err(build_err)?;
        let next = body(self, iv, &phis)?;
        if next.len() != carried.len() {
            return bug(self.k, "a loop's body yields the wrong number of values");
        }
        self.branch(latch, Some(latch))?;
        let iv_next = self.ins(Op::IAdd, self.t.u32_, &[iv, step]);
        self.branch(header, None)?;
        // the header's phis, now that the latch's values exist
        let after = self.b.selected_block();
        self.b.select_block(header_idx).map_err(build_err)?;
        self.b
            .insert_phi(
                InsertPoint::Begin,
                self.t.u32_,
                Some(iv),
                [(lb, pre), (iv_next, latch)],
            )
            .map_err(build_err)?;
        for (&p, (&(init, t), &n)) in phis.iter().zip(carried.iter().zip(&next)) {
            let st = self.sty(t);
            self.b
                .insert_phi(InsertPoint::Begin, st, Some(p), [(init, pre), (n, latch)])
                .map_err(build_err)?;
        }
        self.b.select_block(after).map_err(build_err)?;
        self.cur = self.b.begin_block(Some(merge)).map_err(build_err)?;
        Ok(phis)
    }

    pub(super) fn if_op(&mut self, op: &OpData) -> R<()> {
        let Some(&c) = op.operands.first() else {
            return bug(self.k, "tile.if without a condition");
        };
        let cond = self.opnd(c, Ty::Pred)?;
        let tys: Vec<Ty> = op.results.iter().map(|&v| self.ty_of(v)).collect();
        let (then_l, else_l, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b
            .selection_merge(merge, SelectionControl::NONE)
            .map_err(build_err)?;
        self.b
            .branch_conditional(cond, then_l, else_l, [])
            .map_err(build_err)?;
        let mut sides = vec![];
        for (label, region) in [then_l, else_l].into_iter().zip(&op.regions) {
            self.cur = self.b.begin_block(Some(label)).map_err(build_err)?;
            self.region(region)?;
            let ys = self.yielded(region)?;
            let vals: Vec<Word> = ys
                .iter()
                .zip(&tys)
                .map(|(&y, &t)| self.opnd(y, t))
                .collect::<R<_>>()?;
            sides.push((vals, self.cur));
            self.branch(merge, None)?;
        }
        if sides.len() == 1 {
            // no else region: an empty else block
            self.cur = self.b.begin_block(Some(else_l)).map_err(build_err)?;
            self.branch(merge, None)?;
        }
        self.cur = self.b.begin_block(Some(merge)).map_err(build_err)?;
        for (i, (&r, &t)) in op.results.iter().zip(&tys).enumerate() {
            let st = self.sty(t);
            let pairs: Vec<(Word, Word)> = sides.iter().map(|(v, l)| (v[i], *l)).collect();
            if pairs.len() != 2 {
                return bug(self.k, "tile.if with results lacks an else region");
            }
            let id = self.b.phi(st, None, pairs).map_err(build_err)?;
            self.set(r, Val::Id(id, t));
        }
        Ok(())
    }

    /// `cond ? (the values `then` computes) : defaults`, as a selection construct (so that
    /// what `then` does — a load past the end — happens only where `cond` holds).
    pub(super) fn guarded(
        &mut self,
        cond: Word,
        tys: &[Word],
        defaults: &[Word],
        then: impl FnOnce(&mut Self) -> R<Vec<Word>>,
    ) -> R<Vec<Word>> {
        let (then_l, merge) = (self.b.id(), self.b.id());
        let from = self.cur;
        self.b
            .selection_merge(merge, SelectionControl::NONE)
            .map_err(build_err)?;
        self.b
            .branch_conditional(cond, then_l, merge, [])
            .map_err(build_err)?;
        self.cur = self.b.begin_block(Some(then_l)).map_err(build_err)?;
        let vals = then(self)?;
        let then_end = self.cur;
        self.branch(merge, Some(merge))?;
        let mut out = vec![];
        for ((&t, &v), &d) in tys.iter().zip(&vals).zip(defaults) {
            out.push(
                self.b
                    .phi(t, None, [(v, then_end), (d, from)])
                    .map_err(build_err)?,
            );
        }
        Ok(out)
    }
}
