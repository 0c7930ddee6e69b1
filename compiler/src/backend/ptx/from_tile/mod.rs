//! Tile IR → Target IR, op by op. Takes a Tile IR [`Kernel`] and nothing else: no Graph IR,
//! no kernel kinds. Each Tile value becomes the Target registers that hold it (a scalar one,
//! a fragment 2 or 4, a global view its 64-bit address); structured ops become blocks:
//!
//! - `tile.for`: the carried values live in registers written before the loop; the header
//!   tests `iv < ub`; `tile.yield` copies the next values in (as a parallel copy) and the
//!   latch adds the step. The exit block is laid out after every block of the body, so lanes
//!   that leave early wait at the join (the emulator's reconvergence order).
//! - `tile.if`: then blocks, else blocks, then the join; results are registers written by
//!   each side's `tile.yield`.
//!
//! Kernel parameters are those of the Tile kernel in order: a global view is a pointer
//! (`ld.param` + `cvta.to.global`), a size a `u32`.

use super::Lowered;
use crate::backend::ptx::builder::imm;
use crate::backend::ptx::{
    Kernel as TKernel, KernelBuilder, Op as TOp, Operand as TOperand, ParamTy, Reg, SharedId,
    Space, Ty,
};
use crate::backend::Error;
use crate::tile::check::Checked;
use crate::tile::ir::*;
use crate::tile::math::{self, MathTarget};

mod control;
mod expand;
mod hopper;

type R<T> = Result<T, Error>;

fn bug<T>(k: &Kernel, what: impl std::fmt::Display) -> R<T> {
    Err(Error::NotLowered(format!(
        "Tile IR of kernel '{}' is not valid: {what}",
        k.name
    )))
}

/// What a Tile value is in Target IR.
#[derive(Clone, Debug)]
enum Slot {
    /// A scalar's register (no allocation: most values are scalars).
    Reg(Reg),
    Regs(Vec<Reg>),
    /// A global view: its address register and element size.
    View(Reg, i64),
    Shared(SharedId),
}

struct Cx<'k> {
    k: &'k Kernel,
    b: KernelBuilder,
    slots: Vec<Option<Slot>>,
    /// Uses of each value (as an operand of any op, yields included).
    uses: Vec<u32>,
    /// Values whose registers no other value shares (an `mma` result, a fragment made of
    /// constants, a loop's carried values): one used once can give its registers to the op
    /// that consumes it, so accumulator chains and loop-carried fragments need no copies.
    owned: Vec<bool>,
    /// `mbarrier.wait.parity` loops so far (each loop's label is its number).
    waits: u32,
}

/// Translates a checked Tile IR kernel (its math functions expanded first: [`crate::tile::math`]).
pub fn translate(k: Checked<'_>) -> R<Lowered> {
    let k: &Kernel = &k;
    // f64 registers ask for one block per SM; an f32 `sin` computed in f64 does not
    let f64_values = k.values.iter().any(|t| matches!(t, Type::Scalar(Ty::F64)));
    let expanded = math::expand(k, MathTarget::Ptx);
    let k: &Kernel = &expanded;
    let mut uses = vec![0u32; k.values.len()];
    for op in &k.ops {
        for v in op.operands.iter().filter_map(|o| o.value()) {
            if let Some(u) = uses.get_mut(v.0 as usize) {
                *u += 1;
            }
        }
    }
    let mut cx = Cx {
        k,
        b: KernelBuilder::new(&k.name, k.span),
        slots: vec![None; k.values.len()],
        uses,
        owned: vec![false; k.values.len()],
        waits: 0,
    };
    let threads = k.threads();
    cx.b.max_threads(threads.min(u64::from(u32::MAX)) as u32);
    // setmaxnreg needs the register count at entry fixed: one block per SM at most
    let setmaxnreg = k.ops.iter().any(|o| {
        matches!(
            o.kind,
            OpKind::SetmaxnregInc { .. } | OpKind::SetmaxnregDec { .. }
        )
    });
    if f64_values || setmaxnreg {
        cx.b.min_blocks(1);
    }
    for p in &k.params {
        let slot = match (&p.role, k.ty(p.value)) {
            (ParamRole::Size(_), _) => {
                let id = cx.b.param(&p.name, ParamTy::U32);
                Slot::Regs(vec![cx.b.ld_param(id)])
            }
            (_, Some(Type::Global(d))) => {
                let id = cx.b.param(&p.name, ParamTy::Ptr);
                let r = cx.b.ld_param(id);
                Slot::View(cx.b.cvta_global(r), d.size_bytes() as i64)
            }
            (_, Some(Type::TensorMap(_))) => {
                let param = cx.b.param(&p.name, ParamTy::TensorMap);
                let dst = cx.b.reg(Ty::U64);
                cx.b.push(TOp::TensorMapAddr { dst, param });
                Slot::Reg(dst)
            }
            (ParamRole::Status, _) => {
                let id = cx.b.param(&p.name, ParamTy::Ptr);
                let r = cx.b.ld_param(id);
                Slot::View(cx.b.cvta_global(r), 4)
            }
            (_, other) => return bug(k, format!("parameter {} of type {other:?}", p.name)),
        };
        cx.set(p.value, slot);
    }
    for s in &k.shared {
        let Some(buf) = k.shared_buf(s.value) else {
            return bug(k, format!("shared {} is not a buffer", s.name));
        };
        let size = u32::try_from(buf.bytes()).unwrap_or(u32::MAX);
        let id = cx.b.shared(&s.name, size, buf.align.max(4));
        cx.set(s.value, Slot::Shared(id));
    }
    cx.region(&k.body)?;
    cx.b.ret();
    let kernel: TKernel = cx.b.finish()?;
    Ok(Lowered {
        kernel,
        grid: k.grid,
        block: k.block,
        scalars: k.scalars(),
        status: k.has_status(),
    })
}
impl Cx<'_> {
    fn set(&mut self, v: Value, s: Slot) {
        if let Some(x) = self.slots.get_mut(v.0 as usize) {
            *x = Some(s);
        }
    }

    fn slot(&self, v: Value) -> R<&Slot> {
        match self.slots.get(v.0 as usize) {
            Some(Some(s)) => Ok(s),
            _ => bug(self.k, format!("%{} is used before it is defined", v.0)),
        }
    }

    fn regs(&self, v: Value) -> R<Vec<Reg>> {
        match self.slot(v)? {
            Slot::Regs(r) => Ok(r.clone()),
            Slot::Reg(r) | Slot::View(r, _) => Ok(vec![*r]),
            Slot::Shared(_) => bug(self.k, format!("%{} is a shared buffer", v.0)),
        }
    }

    fn reg(&self, v: Value) -> R<Reg> {
        match self.slot(v)? {
            Slot::Regs(r) if r.len() == 1 => Ok(r[0]),
            Slot::Reg(r) | Slot::View(r, _) => Ok(*r),
            _ => bug(self.k, format!("%{} is not a scalar", v.0)),
        }
    }

    /// A scalar operand.
    fn opnd(&self, o: Operand) -> R<TOperand> {
        Ok(match o {
            Operand::Value(v) => TOperand::Reg(self.reg(v)?),
            Operand::Imm(i) => TOperand::Imm(i),
            Operand::F32(b) => TOperand::F32(b),
            Operand::F64(b) => TOperand::F64(b),
        })
    }

    /// An operand that must be a register (instructions without immediate forms).
    fn reg_of(&mut self, o: Operand, ty: Ty) -> R<Reg> {
        match o {
            Operand::Value(v) => self.reg(v),
            other => {
                let x = self.opnd(other)?;
                Ok(self.b.mov(ty, x))
            }
        }
    }

    fn view(&self, o: Operand) -> R<(Reg, i64)> {
        match o.value().map(|v| self.slot(v)) {
            Some(Ok(Slot::View(r, size))) => Ok((*r, *size)),
            _ => bug(self.k, "expected a global view"),
        }
    }

    fn shared(&self, o: Operand) -> R<(SharedId, SharedBuf)> {
        let v = o.value();
        match (
            v.map(|v| self.slot(v)),
            v.and_then(|v| self.k.shared_buf(v)),
        ) {
            (Some(Ok(Slot::Shared(id))), Some(buf)) => Ok((*id, buf.clone())),
            _ => bug(self.k, "expected a shared buffer"),
        }
    }

    fn is_pred(&self, o: Operand) -> bool {
        o.value()
            .and_then(|v| self.k.ty(v))
            .is_some_and(|t| *t == Type::Scalar(Ty::Pred))
    }

    fn result_ty(&self, v: Value) -> Ty {
        match self.k.ty(v) {
            Some(Type::Scalar(t)) => *t,
            Some(Type::Frag(f)) => f.reg_ty(),
            _ => Ty::B32,
        }
    }

    fn region(&mut self, r: &Region) -> R<()> {
        for &id in &r.ops {
            let Some(op) = self.k.op(id) else {
                return bug(self.k, format!("op {} out of range", id.0));
            };
            if op.kind == OpKind::Yield {
                continue;
            }
            self.b.at(op.span);
            self.op(op)?;
        }
        Ok(())
    }

    /// The operands of the `tile.yield` ending a region.
    fn yielded(&self, r: &Region) -> R<Vec<Operand>> {
        match r.ops.last().and_then(|&id| self.k.op(id)) {
            Some(op) if op.kind == OpKind::Yield => Ok(op.operands.clone()),
            _ => bug(self.k, "a region does not end in tile.yield"),
        }
    }

    fn b_ty(&self, r: Reg) -> Ty {
        self.b.reg_ty(r).unwrap_or(Ty::B32)
    }

    /// Whether `v`'s registers may be rewritten by the op that uses it: it is used once and
    /// owns them.
    fn consumable(&self, v: Value) -> bool {
        let i = v.0 as usize;
        self.uses.get(i) == Some(&1) && self.owned.get(i) == Some(&true)
    }

    fn own(&mut self, vals: &[Value]) {
        for v in vals {
            if let Some(o) = self.owned.get_mut(v.0 as usize) {
                *o = true;
            }
        }
    }

    fn fresh(&mut self, vals: &[Value]) -> Vec<Reg> {
        let mut out = vec![];
        for &v in vals {
            let n = match self.k.ty(v) {
                Some(Type::Frag(f)) => f.regs(),
                _ => 1,
            };
            let ty = self.result_ty(v);
            for _ in 0..n {
                out.push(self.b.reg(ty));
            }
        }
        out
    }

    /// Assigns consecutive registers of `regs` to `vals`.
    fn bind(&mut self, vals: &[Value], regs: &[Reg]) {
        let mut i = 0;
        for &v in vals {
            let n = match self.k.ty(v) {
                Some(Type::Frag(f)) => f.regs(),
                _ => 1,
            };
            let rs = regs.get(i..i + n).map(|s| s.to_vec()).unwrap_or_default();
            self.set(v, Slot::Regs(rs));
            i += n;
        }
    }

    fn op(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        match &op.kind {
            OpKind::Special(s) => {
                let r = self.b.special(*s);
                self.single(op, r);
            }
            OpKind::Mov { ty } => {
                let a = self.opnd(get(op, 0)?)?;
                let r = self.b.mov(*ty, a);
                self.single(op, r);
            }
            OpKind::Bitcast { .. } => self.op_bitcast(op)?,
            OpKind::Unary { op: u, ty } => {
                let a = self.opnd(get(op, 0)?)?;
                let r = self.b.unary(*u, *ty, a);
                self.single(op, r);
            }
            OpKind::Binary { op: bo, ty } => {
                let (a, c) = (self.opnd(get(op, 0)?)?, self.opnd(get(op, 1)?)?);
                let r = self.b.bin(*bo, *ty, a, c);
                self.single(op, r);
            }
            OpKind::Fma { ty } => {
                let (a, c, d) = (
                    self.opnd(get(op, 0)?)?,
                    self.opnd(get(op, 1)?)?,
                    self.opnd(get(op, 2)?)?,
                );
                let r = self.b.fma(*ty, a, c, d);
                self.single(op, r);
            }
            OpKind::MulWide { ty } => {
                let (a, c) = (self.opnd(get(op, 0)?)?, self.opnd(get(op, 1)?)?);
                let r = self.b.mul_wide(*ty, a, c);
                self.single(op, r);
            }
            OpKind::MadWide { ty } => {
                let (a, c, d) = (
                    self.opnd(get(op, 0)?)?,
                    self.opnd(get(op, 1)?)?,
                    self.opnd(get(op, 2)?)?,
                );
                let r = self.b.mad_wide(*ty, a, c, d);
                self.single(op, r);
            }
            OpKind::Cmp { cmp, ty } => {
                let (a, c) = (self.opnd(get(op, 0)?)?, self.opnd(get(op, 1)?)?);
                let r = self.b.setp(*cmp, *ty, a, c);
                self.single(op, r);
            }
            OpKind::Select { .. } => self.op_select(op)?,
            OpKind::Cast { to, from, rnd, sat } => {
                let a = self.reg_of(get(op, 0)?, *from)?;
                let dst = self.b.reg(*to);
                self.b.push(TOp::Cvt {
                    dty: *to,
                    sty: *from,
                    rnd: *rnd,
                    sat: *sat,
                    dst,
                    src: a,
                });
                self.single(op, dst);
            }
            OpKind::Tf32 => {
                let a = self.reg_of(get(op, 0)?, Ty::F32)?;
                let dst = self.b.reg(Ty::B32);
                self.b.push(TOp::CvtTf32 { dst, src: a });
                self.single(op, dst);
            }
            OpKind::Pack(p) => {
                let hi = self.reg_of(get(op, 0)?, Ty::F32)?;
                let lo = self.reg_of(get(op, 1)?, Ty::F32)?;
                let ty = op.results.first().map(|&v| self.result_ty(v));
                let dst = self.b.reg(ty.unwrap_or(Ty::B32));
                self.b.push(TOp::CvtPack {
                    pack: *p,
                    dst,
                    hi,
                    lo,
                });
                self.single(op, dst);
            }
            OpKind::Unpack(u) => {
                let a = self.reg_of(get(op, 0)?, Ty::B16)?;
                let dst = self.b.reg(Ty::F16x2);
                self.b.push(TOp::CvtUnpack {
                    unpack: *u,
                    dst,
                    src: a,
                });
                self.single(op, dst);
            }
            OpKind::Math { f, ty } => {
                return Err(Error::NotLowered(format!(
                    "{} in {}",
                    math::fn_name(*f),
                    ty.name()
                )))
            }
            OpKind::Load { ty, n } => self.load(op, *ty, *n)?,
            OpKind::Store { .. } => self.op_store(op)?,
            OpKind::Advance => {
                let (base, size) = self.view(get(op, 0)?)?;
                let c = self.opnd(get(op, 1)?)?;
                let r = self.b.mad_wide(Ty::U32, c, imm(size), base);
                if let Some(v) = res(op, 0) {
                    self.set(v, Slot::View(r, size));
                }
            }
            OpKind::RedAdd | OpKind::AtomAdd => self.op_red_add(op)?,
            OpKind::SharedAddr => {
                let (id, _) = self.shared(get(op, 0)?)?;
                let r = self.b.shared_addr(id);
                self.single(op, r);
            }
            OpKind::Offset => {
                let r = self.offset(o)?;
                self.single(op, r);
            }
            OpKind::LoadShared { ty, offset, .. } => self.load_shared(op, *ty, *offset)?,
            OpKind::StoreShared { ty, n, offset } => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let n = usize::from(*n);
                let vals: Vec<TOperand> = (0..n)
                    .map(|i| self.opnd(get(op, 1 + i)?))
                    .collect::<R<_>>()?;
                let mask = match o.get(1 + n) {
                    Some(&m) => Some(self.reg_of(m, Ty::Pred)?),
                    None => None,
                };
                if let Some(m) = mask {
                    self.b.when(m);
                }
                self.b.st(Space::Shared, *ty, addr, *offset, &vals);
            }
            OpKind::CopyAsync { .. } => self.op_copy_async(op)?,
            OpKind::Commit => self.b.push(TOp::CpAsyncCommit),
            OpKind::Wait { n } => self.b.push(TOp::CpAsyncWait { n: *n }),
            OpKind::Barrier => self.b.bar_sync(),
            OpKind::FenceProxyAsync => self.b.push(TOp::FenceProxyAsync),
            OpKind::MbarrierInit
            | OpKind::MbarrierArrive
            | OpKind::MbarrierArriveExpectTx
            | OpKind::MbarrierCompleteTx
            | OpKind::MbarrierTryWait
            | OpKind::MbarrierWait
            | OpKind::WgmmaDesc { .. }
            | OpKind::WgmmaFence
            | OpKind::WgmmaCommit
            | OpKind::WgmmaWait { .. }
            | OpKind::WgmmaMmaAsync { .. }
            | OpKind::SetmaxnregInc { .. }
            | OpKind::SetmaxnregDec { .. }
            | OpKind::TmaLoad
            | OpKind::TmaStore
            | OpKind::TmaCommit
            | OpKind::TmaWaitRead { .. } => self.op_hopper(op)?,
            OpKind::Ldmatrix { trans } => {
                let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
                let dsts = [0; 4].map(|_| self.b.reg(Ty::B32));
                self.b.push(TOp::Ldmatrix {
                    trans: *trans,
                    dsts,
                    addr,
                });
                self.bind(&op.results, &dsts);
            }
            OpKind::Mma { .. } => self.op_mma(op)?,
            OpKind::FragGet { index } => {
                let f = self.regs(get(op, 0)?.value().unwrap_or(Value(u32::MAX)))?;
                let Some(&r) = f.get(usize::from(*index)) else {
                    return bug(self.k, "tile.frag_get index out of range");
                };
                self.single(op, r);
            }
            OpKind::FragMake => self.op_frag_make(op)?,
            OpKind::Shfl { .. } => self.op_shfl(op)?,
            OpKind::ReduceWarp { op: bo, ty } => {
                let v = self.opnd(get(op, 0)?)?;
                let r = self.b.mov(*ty, v);
                self.reduce_warp(r, *bo, *ty);
                self.single(op, r);
            }
            OpKind::ReduceBlock { op: bo, ty } => {
                let v = self.opnd(get(op, 0)?)?;
                let (id, _) = self.shared(get(op, 1)?)?;
                let r = self.b.mov(*ty, v);
                let r = self.reduce_block(r, *bo, *ty, id);
                self.single(op, r);
            }
            OpKind::For { .. } => self.for_loop(op)?,
            OpKind::If => self.if_op(op)?,
            OpKind::WarpgroupRole { first, count } => self.role(op, *first, *count)?,
            OpKind::Yield => {}
        }
        Ok(())
    }

    /// `ld.shared` of the op's results at `addr + offset`, masked or not.
    fn load_shared(&mut self, op: &OpData, ty: Ty, offset: i32) -> R<()> {
        let o = &op.operands;
        let addr = self.reg_of(get(op, 0)?, Ty::U32)?;
        let (mask, defaults) = match o.get(1) {
            Some(&m) if self.is_pred(m) => (Some(self.reg_of(m, Ty::Pred)?), &o[2..]),
            _ => (None, &o[1..]),
        };
        let dsts = self.defaults(&op.results, mask.is_some(), defaults)?;
        if let Some(m) = mask {
            self.b.when(m);
        }
        self.b.ld_to(Space::Shared, ty, &dsts, addr, offset);
        self.bind(&op.results, &dsts);
        Ok(())
    }

    /// Sets the op's first result to the register `r`.
    fn single(&mut self, op: &OpData, r: Reg) {
        if let Some(v) = res(op, 0) {
            self.set(v, Slot::Reg(r));
        }
    }

    fn op_bitcast(&mut self, op: &OpData) -> R<()> {
        let OpKind::Bitcast { to } = &op.kind else {
            return Err(Error::NotLowered(format!(
                "Tile IR: {:?} is not Bitcast",
                op.kind
            )));
        };
        let a = self.opnd(get(op, 0)?)?;
        let bits = match to.bits() {
            16 => Ty::B16,
            64 => Ty::B64,
            _ => Ty::B32,
        };
        let r = self.b.reg(*to);
        self.b.push(TOp::Mov {
            ty: bits,
            dst: r,
            src: a,
        });
        self.single(op, r);
        Ok(())
    }

    fn op_select(&mut self, op: &OpData) -> R<()> {
        let OpKind::Select { ty } = &op.kind else {
            return Err(Error::NotLowered(format!(
                "Tile IR: {:?} is not Select",
                op.kind
            )));
        };
        let p = self.reg_of(get(op, 0)?, Ty::Pred)?;
        let (a, c) = (self.opnd(get(op, 1)?)?, self.opnd(get(op, 2)?)?);
        let r = self.b.selp(*ty, a, c, p);
        // a select of two global views (`u64`) is a view
        match res(op, 0).and_then(|v| self.k.ty(v)) {
            Some(Type::Global(d)) => {
                let size = d.size_bytes() as i64;
                if let Some(v) = res(op, 0) {
                    self.set(v, Slot::View(r, size));
                }
            }
            _ => self.single(op, r),
        }
        Ok(())
    }

    fn op_store(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let OpKind::Store { ty, n } = &op.kind else {
            return Err(Error::NotLowered(format!(
                "Tile IR: {:?} is not Store",
                op.kind
            )));
        };
        let (base, size) = self.view(get(op, 0)?)?;
        let idx = self.opnd(get(op, 1)?)?;
        let n = usize::from(*n);
        let vals: Vec<TOperand> = (0..n)
            .map(|i| self.opnd(get(op, 2 + i)?))
            .collect::<R<_>>()?;
        let mask = match o.get(2 + n) {
            Some(&m) => Some(self.reg_of(m, Ty::Pred)?),
            None => None,
        };
        let addr = self.b.mad_wide(Ty::U32, idx, imm(size), base);
        if let Some(m) = mask {
            self.b.when(m);
        }
        self.b.st(Space::Global, *ty, addr, 0, &vals);
        Ok(())
    }

    fn op_red_add(&mut self, op: &OpData) -> R<()> {
        let (base, size) = self.view(get(op, 0)?)?;
        let idx = self.opnd(get(op, 1)?)?;
        let val = self.opnd(get(op, 2)?)?;
        let addr = self.b.mad_wide(Ty::U32, idx, imm(size), base);
        if op.kind == OpKind::RedAdd {
            self.b.push(TOp::RedAddF32 { addr, src: val });
        } else {
            let dst = self.b.reg(Ty::F32);
            self.b.push(TOp::AtomAddF32 {
                dst,
                addr,
                src: val,
            });
            self.single(op, dst);
        }
        Ok(())
    }

    fn op_copy_async(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let OpKind::CopyAsync { cache, bytes } = &op.kind else {
            return Err(Error::NotLowered(format!(
                "Tile IR: {:?} is not CopyAsync",
                op.kind
            )));
        };
        let dst = self.reg_of(get(op, 0)?, Ty::U32)?;
        let (base, size) = self.view(get(op, 1)?)?;
        let idx = self.opnd(get(op, 2)?)?;
        let mut src_size = None;
        let mut mask = None;
        for &extra in o.iter().skip(3) {
            if self.is_pred(extra) {
                mask = Some(self.reg_of(extra, Ty::Pred)?);
            } else {
                src_size = Some(self.opnd(extra)?);
            }
        }
        let src = match idx {
            TOperand::Imm(0) => base,
            idx => self.b.mad_wide(Ty::U32, idx, imm(size), base),
        };
        if let Some(m) = mask {
            self.b.when(m);
        }
        self.b.push(TOp::CpAsync {
            cache: *cache,
            dst,
            src,
            bytes: *bytes,
            src_size,
        });
        Ok(())
    }

    fn op_mma(&mut self, op: &OpData) -> R<()> {
        let OpKind::Mma { kind } = &op.kind else {
            return Err(Error::NotLowered(format!(
                "Tile IR: {:?} is not Mma",
                op.kind
            )));
        };
        let a = self.regs(get(op, 0)?.value().unwrap_or(Value(u32::MAX)))?;
        let bb = self.regs(get(op, 1)?.value().unwrap_or(Value(u32::MAX)))?;
        let c = self.regs(get(op, 2)?.value().unwrap_or(Value(u32::MAX)))?;
        let (Ok(a), Ok(bb), Ok(c)) = (
            <[Reg; 4]>::try_from(a),
            <[Reg; 2]>::try_from(bb),
            <[Reg; 4]>::try_from(c),
        ) else {
            return bug(self.k, "mma operands are not fragments");
        };
        // accumulate in place when the accumulator dies here
        let d = match get(op, 2)?.value() {
            Some(cv) if self.consumable(cv) => c,
            _ => [0; 4].map(|_| self.b.reg(Ty::F32)),
        };
        self.own(&op.results);
        self.b.push(TOp::Mma {
            kind: *kind,
            d,
            a,
            b: bb,
            c,
        });
        self.bind(&op.results, &d);
        Ok(())
    }

    fn op_frag_make(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let ty = op
            .results
            .first()
            .map(|&v| self.result_ty(v))
            .unwrap_or(Ty::B32);
        // values are never rewritten while live: a fragment of registers shares them
        if o.iter().all(|x| x.value().is_none()) {
            self.own(&op.results);
        }
        let regs: Vec<Reg> = o
            .iter()
            .map(|&x| match x {
                Operand::Value(v) if self.result_ty(v) == ty => self.reg(v),
                other => {
                    let x = self.opnd(other)?;
                    Ok(self.b.mov(ty, x))
                }
            })
            .collect::<R<_>>()?;
        self.bind(&op.results, &regs);
        Ok(())
    }

    fn op_shfl(&mut self, op: &OpData) -> R<()> {
        let OpKind::Shfl { mode, mask } = &op.kind else {
            return Err(Error::NotLowered(format!(
                "Tile IR: {:?} is not Shfl",
                op.kind
            )));
        };
        let (s, l, c) = (
            self.opnd(get(op, 0)?)?,
            self.opnd(get(op, 1)?)?,
            self.opnd(get(op, 2)?)?,
        );
        let dst = self.b.reg(Ty::B32);
        self.b.push(TOp::Shfl {
            mode: *mode,
            dst,
            src: s,
            lane: l,
            clamp: c,
            mask: *mask,
        });
        self.single(op, dst);
        Ok(())
    }

    /// Destination registers of a load: fresh, holding the defaults (or 0) when masked.
    fn defaults(&mut self, results: &[Value], masked: bool, defaults: &[Operand]) -> R<Vec<Reg>> {
        let mut out = vec![];
        for (i, &v) in results.iter().enumerate() {
            let ty = self.result_ty(v);
            if masked {
                let d = match defaults.get(i) {
                    Some(&d) => self.opnd(d)?,
                    None if ty == Ty::F32 => TOperand::F32(0),
                    None if ty == Ty::F64 => TOperand::F64(0),
                    None => TOperand::Imm(0),
                };
                out.push(self.b.mov(ty, d));
            } else {
                out.push(self.b.reg(ty));
            }
        }
        Ok(out)
    }

    fn load(&mut self, op: &OpData, ty: Ty, _n: u8) -> R<()> {
        let o = &op.operands;
        let Some(&view) = o.first() else {
            return bug(self.k, "tile.load without a view");
        };
        let (base, size) = self.view(view)?;
        let idx = match o.get(1) {
            Some(&i) => self.opnd(i)?,
            None => return bug(self.k, "tile.load without an index"),
        };
        let (mask, defaults) = match o.get(2) {
            Some(&m) if self.is_pred(m) => (Some(self.reg_of(m, Ty::Pred)?), &o[3..]),
            _ => (None, o.get(2..).unwrap_or(&[])),
        };
        let addr = match idx {
            TOperand::Imm(0) => base,
            idx => self.b.mad_wide(Ty::U32, idx, imm(size), base),
        };
        let dsts = self.defaults(&op.results, mask.is_some(), defaults)?;
        if let Some(m) = mask {
            self.b.when(m);
        }
        self.b.ld_to(Space::Global, ty, &dsts, addr, 0);
        self.bind(&op.results, &dsts);
        Ok(())
    }
}

/// The op's `i`th operand.
fn get(op: &OpData, i: usize) -> R<Operand> {
    op.operands
        .get(i)
        .copied()
        .ok_or_else(|| Error::NotLowered(format!("Tile IR: {:?} lacks operand {i}", op.kind)))
}

/// The op's `i`th result.
fn res(op: &OpData, i: usize) -> Option<Value> {
    op.results.get(i).copied()
}
