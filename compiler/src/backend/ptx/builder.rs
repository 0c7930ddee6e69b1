//! The one way to build Target IR: a cursor over a kernel that carries the current span
//! (`b.at(span)`) and block, so every instruction gets a span (hand-built kernels and lowering
//! from Tile IR use the same API).
//!
//! ```ignore
//! let mut b = KernelBuilder::new("axpy", span);
//! let x = b.param("x", ParamTy::Ptr);
//! let tid = b.special(SReg::Tid(Dim::X));
//! let p = b.setp(Cmp::Lt, Ty::U32, tid, n);
//! b.when(p).st(Space::Global, Ty::F32, addr, 0, &[v.into()]);   // @p st.global.f32
//! b.ret();
//! let kernel = b.finish()?;                                      // verified
//! ```

use super::verify::verify;
use super::TargetError;
use super::{
    BinOp, Block, BlockId, Cmp, Guard, Instr, Kernel, Op, Operand, Param, ParamId, ParamTy, Reg,
    Rnd, SReg, Shared, SharedId, Space, Terminator, Ty, UnOp,
};
use tessera_lang::Span;

/// An integer immediate operand.
pub fn imm(v: i64) -> Operand {
    Operand::Imm(v)
}

/// An f32 immediate operand.
pub fn fimm(v: f32) -> Operand {
    Operand::f32(v)
}

pub struct KernelBuilder {
    k: Kernel,
    cur: BlockId,
    span: Span,
    guard: Option<Guard>,
}

impl KernelBuilder {
    /// A kernel with an empty entry block; `span` is the span of what is being lowered.
    pub fn new(name: impl Into<String>, span: Span) -> KernelBuilder {
        let mut b = KernelBuilder {
            k: Kernel {
                name: super::ptx_name(&name.into()).into_owned(),
                params: vec![],
                shared: vec![],
                regs: vec![],
                blocks: vec![],
                max_threads: None,
                min_blocks: None,
            },
            cur: BlockId(0),
            span,
            guard: None,
        };
        b.cur = b.block("entry");
        b
    }

    /// Sets the span given to the instructions pushed from now on.
    pub fn at(&mut self, span: Span) -> &mut Self {
        self.span = span;
        self
    }
    pub fn span(&self) -> Span {
        self.span
    }
    /// `.maxntid N, 1, 1`.
    pub fn max_threads(&mut self, n: u32) {
        self.k.max_threads = Some(n);
    }
    /// `.minnctapersm N` (printed after `.maxntid`, which it needs).
    pub fn min_blocks(&mut self, n: u32) {
        self.k.min_blocks = Some(n);
    }

    pub fn param(&mut self, name: impl Into<String>, ty: ParamTy) -> ParamId {
        self.k.params.push(Param {
            name: super::ptx_name(&name.into()).into_owned(),
            ty,
        });
        ParamId(self.k.params.len() as u32 - 1)
    }
    pub fn shared(&mut self, name: impl Into<String>, size: u32, align: u32) -> SharedId {
        self.k.shared.push(Shared {
            name: super::ptx_name(&name.into()).into_owned(),
            size,
            align,
        });
        SharedId(self.k.shared.len() as u32 - 1)
    }
    /// The type of a register made so far.
    pub fn reg_ty(&self, r: Reg) -> Option<Ty> {
        self.k.reg_ty(r)
    }
    /// A fresh virtual register.
    pub fn reg(&mut self, ty: Ty) -> Reg {
        self.k.regs.push(ty);
        Reg(self.k.regs.len() as u32 - 1)
    }

    /// A new empty block (label `name_N`), ending in `ret` until a terminator is set.
    pub fn block(&mut self, name: &str) -> BlockId {
        let id = self.k.blocks.len() as u32;
        self.k.blocks.push(Block {
            label: format!("{name}_{id}"),
            insts: vec![],
            spans: vec![],
            term: Terminator::Ret,
            term_span: self.span,
            nounroll: false,
        });
        BlockId(id)
    }
    /// Marks `b` as the header of a loop the assembler keeps rolled.
    pub fn nounroll(&mut self, b: BlockId) {
        if let Some(x) = self.k.blocks.get_mut(b.0 as usize) {
            x.nounroll = true;
        }
    }
    pub fn switch_to(&mut self, b: BlockId) {
        self.cur = b;
    }
    pub fn current(&self) -> BlockId {
        self.cur
    }

    /// Guards the next pushed instruction with `@p`.
    pub fn when(&mut self, p: Reg) -> &mut Self {
        self.guard = Some(Guard {
            pred: p,
            negate: false,
        });
        self
    }
    /// Guards the next pushed instruction with `@!p`.
    pub fn unless(&mut self, p: Reg) -> &mut Self {
        self.guard = Some(Guard {
            pred: p,
            negate: true,
        });
        self
    }

    /// Appends an instruction (taking a pending `when`/`unless` guard).
    pub fn push(&mut self, op: Op) {
        let guard = self.guard.take();
        let span = self.span;
        if let Some(b) = self.k.blocks.get_mut(self.cur.0 as usize) {
            b.insts.push(Instr { guard, op });
            b.spans.push(span);
        }
    }

    fn term(&mut self, t: Terminator) {
        let span = self.span;
        if let Some(b) = self.k.blocks.get_mut(self.cur.0 as usize) {
            b.term = t;
            b.term_span = span;
        }
    }
    pub fn br(&mut self, target: BlockId) {
        self.term(Terminator::Bra(target));
    }
    /// `@p bra then; bra.uni els;`
    pub fn cbr(&mut self, pred: Reg, then: BlockId, els: BlockId) {
        self.term(Terminator::CondBra {
            pred,
            negate: false,
            then,
            els,
        });
    }
    /// The head of a `while i < end` loop on unsigned 32-bit values: makes the blocks named
    /// `names` (head, body, exit) in that order, branches to the head, tests `i < end` there and
    /// leaves the builder in the body. Returns (head, exit): the body ends with `br(head)` and
    /// the code after the loop goes into the exit block.
    pub fn while_lt(
        &mut self,
        i: Reg,
        end: impl Into<Operand>,
        names: [&str; 3],
    ) -> (BlockId, BlockId) {
        let head = self.block(names[0]);
        let body = self.block(names[1]);
        let exit = self.block(names[2]);
        self.br(head);
        self.switch_to(head);
        let more = self.setp(Cmp::Lt, Ty::U32, i, end);
        self.cbr(more, body, exit);
        self.switch_to(body);
        (head, exit)
    }
    pub fn ret(&mut self) {
        self.term(Terminator::Ret);
    }

    /// Verifies and returns the kernel.
    pub fn finish(self) -> Result<Kernel, TargetError> {
        verify(&self.k)?;
        Ok(self.k)
    }
    /// The kernel as built, unverified (for tests of the verifier).
    pub fn into_unverified(self) -> Kernel {
        self.k
    }

    // ---- one helper per instruction, returning the fresh destination ----

    pub fn special(&mut self, sreg: SReg) -> Reg {
        let dst = self.reg(Ty::U32);
        self.push(Op::Special { dst, sreg });
        dst
    }
    pub fn ld_param(&mut self, param: ParamId) -> Reg {
        let ty = self
            .k
            .params
            .get(param.0 as usize)
            .map(|p| p.ty.ty())
            .unwrap_or(Ty::U64);
        let dst = self.reg(ty);
        self.push(Op::LdParam { dst, param });
        dst
    }
    pub fn shared_addr(&mut self, shared: SharedId) -> Reg {
        let dst = self.reg(Ty::U32);
        self.push(Op::SharedAddr { dst, shared });
        dst
    }
    pub fn mov(&mut self, ty: Ty, src: impl Into<Operand>) -> Reg {
        let dst = self.reg(ty);
        self.push(Op::Mov {
            ty,
            dst,
            src: src.into(),
        });
        dst
    }
    /// `mov` into an existing register (loop-carried values).
    pub fn assign(&mut self, dst: Reg, src: impl Into<Operand>) {
        let ty = self.k.reg_ty(dst).unwrap_or(Ty::B32);
        self.push(Op::Mov {
            ty,
            dst,
            src: src.into(),
        });
    }
    pub fn unary(&mut self, op: UnOp, ty: Ty, src: impl Into<Operand>) -> Reg {
        let dst = self.reg(ty);
        self.push(Op::Unary {
            op,
            ty,
            dst,
            src: src.into(),
        });
        dst
    }
    pub fn bin(&mut self, op: BinOp, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        let dst = self.reg(ty);
        self.bin_to(dst, op, ty, a, b);
        dst
    }
    /// `op` into an existing register (`dst = dst op b` style updates).
    pub fn bin_to(
        &mut self,
        dst: Reg,
        op: BinOp,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) {
        let (a, b) = (a.into(), b.into());
        if ty == Ty::F64 && matches!(op, BinOp::Min | BinOp::Max) {
            // `min/max.f64` returns the other operand for one NaN: a NaN operand gives NaN here
            // (NumPy's `minimum`/`maximum`), by `selp` of `a + b` when `setp.nan` says so.
            let guard = self.guard.take();
            let m = self.reg(ty);
            let nan = self.reg(Ty::Pred);
            let sum = self.reg(ty);
            self.push(Op::Binary {
                op,
                ty,
                dst: m,
                a,
                b,
            });
            self.push(Op::Setp {
                cmp: Cmp::Nan,
                ty,
                dst: nan,
                a,
                b,
            });
            self.push(Op::Binary {
                op: BinOp::Add,
                ty,
                dst: sum,
                a,
                b,
            });
            self.guard = guard;
            self.push(Op::Selp {
                ty,
                dst,
                a: sum.into(),
                b: m.into(),
                pred: nan,
            });
            return;
        }
        self.push(Op::Binary { op, ty, dst, a, b });
    }
    pub fn add(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.bin(BinOp::Add, ty, a, b)
    }
    pub fn sub(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.bin(BinOp::Sub, ty, a, b)
    }
    pub fn mul(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.bin(BinOp::Mul, ty, a, b)
    }
    pub fn fma(
        &mut self,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Reg {
        let dst = self.reg(ty);
        self.push(Op::Fma {
            ty,
            dst,
            a: a.into(),
            b: b.into(),
            c: c.into(),
        });
        dst
    }
    /// `fma` into an existing register (accumulators).
    pub fn fma_to(
        &mut self,
        dst: Reg,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) {
        self.push(Op::Fma {
            ty,
            dst,
            a: a.into(),
            b: b.into(),
            c: c.into(),
        });
    }
    /// `mul.wide.u32` (ty `U32`) / `.s32`: a 64-bit product.
    pub fn mul_wide(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        let dst = self.reg(if ty == Ty::S32 { Ty::S64 } else { Ty::U64 });
        self.push(Op::MulWide {
            ty,
            dst,
            a: a.into(),
            b: b.into(),
        });
        dst
    }
    /// `mad.wide.u32 d, a, b, c` — the usual `base + i * size` address.
    pub fn mad_wide(
        &mut self,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Reg {
        let dst = self.reg(if ty == Ty::S32 { Ty::S64 } else { Ty::U64 });
        self.push(Op::MadWide {
            ty,
            dst,
            a: a.into(),
            b: b.into(),
            c: c.into(),
        });
        dst
    }
    pub fn setp(&mut self, cmp: Cmp, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        let dst = self.reg(Ty::Pred);
        self.push(Op::Setp {
            cmp,
            ty,
            dst,
            a: a.into(),
            b: b.into(),
        });
        dst
    }
    pub fn selp(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>, pred: Reg) -> Reg {
        let dst = self.reg(ty);
        self.push(Op::Selp {
            ty,
            dst,
            a: a.into(),
            b: b.into(),
            pred,
        });
        dst
    }
    pub fn cvt(&mut self, dty: Ty, sty: Ty, rnd: Option<Rnd>, src: Reg) -> Reg {
        let dst = self.reg(dty);
        self.push(Op::Cvt {
            dty,
            sty,
            rnd,
            sat: false,
            dst,
            src,
        });
        dst
    }
    pub fn cvta_global(&mut self, src: Reg) -> Reg {
        let dst = self.reg(Ty::U64);
        self.push(Op::CvtaGlobal { dst, src });
        dst
    }
    /// `ld.space{.vN}.ty` of `n` values at `[addr+offset]`.
    pub fn ld(&mut self, space: Space, ty: Ty, addr: Reg, offset: i32, n: usize) -> Vec<Reg> {
        let dsts: Vec<Reg> = (0..n).map(|_| self.reg(ty)).collect();
        self.push(Op::Ld {
            space,
            ty,
            dsts: dsts.clone(),
            addr,
            offset,
        });
        dsts
    }
    /// `ld` into existing registers (guarded loads that keep a default).
    pub fn ld_to(&mut self, space: Space, ty: Ty, dsts: &[Reg], addr: Reg, offset: i32) {
        self.push(Op::Ld {
            space,
            ty,
            dsts: dsts.to_vec(),
            addr,
            offset,
        });
    }
    pub fn st(&mut self, space: Space, ty: Ty, addr: Reg, offset: i32, srcs: &[Operand]) {
        self.push(Op::St {
            space,
            ty,
            srcs: srcs.to_vec(),
            addr,
            offset,
        });
    }
    pub fn bar_sync(&mut self) {
        self.push(Op::BarSync);
    }
}
