//! The Target IR verifier: ids in range first, then spans, then defined-before-use (block
//! order), then per-instruction type rules (PTX's operand type checking).

use super::error::At;
use super::{
    BinOp, CacheOp, Cmp, Kernel, Op, Operand, Pack, Reg, Rnd, Space, Terminator, Ty, TyClass, UnOp,
    Unpack,
};
use super::{MmaKind, Param, ParamId, ParamTy, ShflMode, TargetError};
use std::collections::HashSet;
use tessera_lang::Span;

/// Checks every invariant documented on [`Kernel`].
pub fn verify(k: &Kernel) -> Result<(), TargetError> {
    check_name(&k.name)?;
    let mut names = HashSet::new();
    for n in k
        .params
        .iter()
        .map(|p| &p.name)
        .chain(k.shared.iter().map(|s| &s.name))
        .chain(k.blocks.iter().map(|b| &b.label))
    {
        check_name(n)?;
        if !names.insert(n.as_str()) || n == &k.name {
            return Err(TargetError::DuplicateName { name: n.clone() });
        }
    }
    for s in &k.shared {
        if s.align == 0 || !s.align.is_power_of_two() || s.size == 0 {
            return Err(TargetError::BadName {
                name: s.name.clone(),
            });
        }
    }
    if k.blocks.is_empty() {
        return Err(TargetError::NoBlocks);
    }
    let mut c = Checker {
        k,
        defined: vec![false; k.regs.len()],
        at: At {
            block: 0,
            inst: None,
        },
        span: Span::default(),
    };
    for (bi, b) in k.blocks.iter().enumerate() {
        if b.spans.len() != b.insts.len() {
            return Err(TargetError::SpanTable { block: bi as u32 });
        }
        for (ii, (inst, span)) in b.insts.iter().zip(&b.spans).enumerate() {
            c.at = At {
                block: bi as u32,
                inst: Some(ii as u32),
            };
            c.span = *span;
            if *span == Span::default() {
                return Err(TargetError::MissingSpan { at: c.at });
            }
            if let Some(g) = inst.guard {
                c.use_reg(g.pred, Ty::Pred)?;
            }
            c.op(&inst.op)?;
            for d in inst.op.defs() {
                if let Some(slot) = c.defined.get_mut(d.0 as usize) {
                    *slot = true;
                }
            }
        }
        c.at = At {
            block: bi as u32,
            inst: None,
        };
        c.span = b.term_span;
        if b.term_span == Span::default() {
            return Err(TargetError::MissingSpan { at: c.at });
        }
        match b.term {
            Terminator::Bra(t) => c.block(t.0)?,
            Terminator::CondBra {
                pred, then, els, ..
            } => {
                c.use_reg(pred, Ty::Pred)?;
                c.block(then.0)?;
                c.block(els.0)?;
            }
            Terminator::Ret => {}
        }
    }
    Ok(())
}

/// A PTX identifier: `[A-Za-z_$][A-Za-z0-9_$]*`, or `[_$%]` followed by at least one of those.
fn check_name(n: &str) -> Result<(), TargetError> {
    let ok_first = |c: char| c.is_ascii_alphabetic() || c == '_' || c == '$';
    let ok_rest = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut chars = n.chars();
    let good = match chars.next() {
        Some(c) => ok_first(c) && chars.all(ok_rest) && n != "_" && n != "$",
        None => false,
    };
    if good {
        Ok(())
    } else {
        Err(TargetError::BadName {
            name: n.to_string(),
        })
    }
}

struct Checker<'a> {
    k: &'a Kernel,
    defined: Vec<bool>,
    at: At,
    span: Span,
}

const INTS: &[Ty] = &[Ty::U32, Ty::U64, Ty::S32, Ty::S64];
/// The register type of an `ld`/`st` value: `.u8` moves through a 32-bit integer register.
fn widened(ty: Ty) -> Ty {
    if ty == Ty::U8 {
        Ty::U32
    } else {
        ty
    }
}

const FLOATS: &[Ty] = &[Ty::F32, Ty::F64];
const BITS: &[Ty] = &[Ty::Pred, Ty::B16, Ty::B32, Ty::B64];

impl Checker<'_> {
    fn invalid(&self, reason: &'static str) -> TargetError {
        TargetError::Invalid {
            at: self.at,
            reason,
            span: self.span,
        }
    }
    fn ensure(&self, cond: bool, reason: &'static str) -> Result<(), TargetError> {
        if cond {
            Ok(())
        } else {
            Err(self.invalid(reason))
        }
    }
    fn reg_ty(&self, r: Reg) -> Result<Ty, TargetError> {
        self.k.reg_ty(r).ok_or(TargetError::OutOfRange {
            at: self.at,
            what: "register",
            index: r.0,
            span: self.span,
        })
    }
    fn block(&self, b: u32) -> Result<(), TargetError> {
        if (b as usize) < self.k.blocks.len() {
            Ok(())
        } else {
            Err(TargetError::OutOfRange {
                at: self.at,
                what: "block",
                index: b,
                span: self.span,
            })
        }
    }
    fn fits(&self, r: Reg, ty: Ty) -> Result<(), TargetError> {
        let found = self.reg_ty(r)?;
        self.ensure(
            found != Ty::U8,
            "no register has type .u8 (it is a memory type of ld/st)",
        )?;
        if ty.accepts(found) {
            Ok(())
        } else {
            Err(TargetError::TypeMismatch {
                at: self.at,
                reg: r.0,
                expected: ty,
                found,
                span: self.span,
            })
        }
    }
    /// A register written by the instruction.
    fn def(&self, r: Reg, ty: Ty) -> Result<(), TargetError> {
        self.fits(r, ty)
    }
    /// A register read by the instruction: in range, written before, of a fitting type.
    fn use_reg(&self, r: Reg, ty: Ty) -> Result<(), TargetError> {
        self.fits(r, ty)?;
        if self.defined.get(r.0 as usize).copied().unwrap_or(false) {
            Ok(())
        } else {
            Err(TargetError::Undefined {
                at: self.at,
                reg: r.0,
                span: self.span,
            })
        }
    }
    fn operand(&self, o: Operand, ty: Ty) -> Result<(), TargetError> {
        let bad = TargetError::BadImmediate {
            at: self.at,
            expected: ty,
            span: self.span,
        };
        match o {
            Operand::Reg(r) => self.use_reg(r, ty),
            Operand::Imm(v) => {
                let fits = match ty.class() {
                    TyClass::Pred | TyClass::Float => false,
                    TyClass::Bits | TyClass::Unsigned | TyClass::Signed => match ty.bits() {
                        16 => (-(1 << 15)..(1 << 16)).contains(&v),
                        32 => (-(1i64 << 31)..(1i64 << 32)).contains(&v),
                        _ => true,
                    },
                };
                if fits {
                    Ok(())
                } else {
                    Err(bad)
                }
            }
            Operand::F32(_) => {
                if ty == Ty::F32 {
                    Ok(())
                } else {
                    Err(bad)
                }
            }
            Operand::F64(_) => {
                if ty == Ty::F64 {
                    Ok(())
                } else {
                    Err(bad)
                }
            }
        }
    }
    fn one_of(&self, ty: Ty, allowed: &[&[Ty]], reason: &'static str) -> Result<(), TargetError> {
        self.ensure(allowed.iter().any(|s| s.contains(&ty)), reason)
    }

    /// Parameter `p` of the kernel.
    fn param(&self, p: ParamId) -> Result<&Param, TargetError> {
        self.k
            .params
            .get(p.0 as usize)
            .ok_or(TargetError::OutOfRange {
                at: self.at,
                what: "parameter",
                index: p.0,
                span: self.span,
            })
    }

    fn op(&self, op: &Op) -> Result<(), TargetError> {
        match op {
            Op::Special { dst, .. } => self.def(*dst, Ty::U32),
            Op::LdParam { dst, param } => self.def(*dst, self.param(*param)?.ty.ty()),
            Op::SharedAddr { dst, shared } => {
                if self.k.shared.get(shared.0 as usize).is_none() {
                    return Err(TargetError::OutOfRange {
                        at: self.at,
                        what: "shared array",
                        index: shared.0,
                        span: self.span,
                    });
                }
                self.def(*dst, Ty::U32)
            }
            Op::Mov { ty, dst, src } => {
                self.operand(*src, *ty)?;
                self.def(*dst, *ty)
            }
            Op::Unary { op, ty, dst, src } => self.check_unary(op, ty, dst, src),
            Op::Binary { op, ty, dst, a, b } => self.check_binary(op, ty, dst, a, b),
            Op::Fma { ty, dst, a, b, c } => {
                self.one_of(
                    *ty,
                    &[INTS, FLOATS],
                    "fma/mad take .u32 .u64 .s32 .s64 .f32 .f64",
                )?;
                self.operand(*a, *ty)?;
                self.operand(*b, *ty)?;
                self.operand(*c, *ty)?;
                self.def(*dst, *ty)
            }
            Op::MulWide { ty, dst, a, b } => {
                let wide = self.wide(*ty)?;
                self.operand(*a, *ty)?;
                self.operand(*b, *ty)?;
                self.def(*dst, wide)
            }
            Op::MadWide { ty, dst, a, b, c } => {
                let wide = self.wide(*ty)?;
                self.operand(*a, *ty)?;
                self.operand(*b, *ty)?;
                self.operand(*c, wide)?;
                self.def(*dst, wide)
            }
            Op::Setp { cmp, ty, dst, a, b } => self.check_setp(cmp, ty, dst, a, b),
            Op::Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => {
                self.ensure(
                    *ty != Ty::Pred && !matches!(ty, Ty::F16x2 | Ty::BF16x2 | Ty::BF16 | Ty::F16),
                    "selp takes .bN .uN .sN .f32 .f64",
                )?;
                self.operand(*a, *ty)?;
                self.operand(*b, *ty)?;
                self.use_reg(*pred, Ty::Pred)?;
                self.def(*dst, *ty)
            }
            Op::Cvt {
                dty,
                sty,
                rnd,
                sat: _,
                dst,
                src,
            } => {
                self.cvt_rule(*dty, *sty, *rnd)?;
                // PTX's relaxed rule for a wider source register: a 16-bit float conversion
                // may read the low half of a .b32 register.
                let wide16 =
                    matches!(sty, Ty::F16 | Ty::BF16) && self.k.reg_ty(*src) == Some(Ty::B32);
                self.use_reg(*src, if wide16 { Ty::B32 } else { *sty })?;
                self.def(*dst, *dty)
            }
            Op::CvtTf32 { dst, src } => {
                self.use_reg(*src, Ty::F32)?;
                self.def(*dst, Ty::B32)
            }
            Op::CvtPack { pack, dst, hi, lo } => {
                self.use_reg(*hi, Ty::F32)?;
                self.use_reg(*lo, Ty::F32)?;
                let dty = match pack {
                    Pack::F16x2 => Ty::F16x2,
                    Pack::BF16x2 => Ty::BF16x2,
                    Pack::E4m3x2 | Pack::E5m2x2 => Ty::B16,
                };
                self.def(*dst, dty)
            }
            Op::CvtUnpack { unpack, dst, src } => {
                match unpack {
                    Unpack::E4m3x2 | Unpack::E5m2x2 => {}
                }
                self.use_reg(*src, Ty::B16)?;
                self.def(*dst, Ty::F16x2)
            }
            Op::CvtaGlobal { dst, src } => {
                self.use_reg(*src, Ty::U64)?;
                self.def(*dst, Ty::U64)
            }
            Op::Ld {
                space,
                ty,
                dsts,
                addr,
                offset: _,
            } => {
                self.mem_ty(*ty, dsts.len())?;
                self.addr(*space, *addr)?;
                for d in dsts {
                    self.def(*d, widened(*ty))?;
                }
                Ok(())
            }
            Op::St {
                space,
                ty,
                srcs,
                addr,
                offset: _,
            } => {
                self.mem_ty(*ty, srcs.len())?;
                self.addr(*space, *addr)?;
                for s in srcs {
                    self.operand(*s, widened(*ty))?;
                }
                Ok(())
            }
            Op::CpAsync {
                cache,
                dst,
                src,
                bytes,
                src_size,
            } => self.check_cp_async(cache, dst, src, bytes, src_size),
            Op::CpAsyncCommit | Op::BarSync | Op::FenceProxyAsync => Ok(()),
            Op::CpAsyncWait { n } => self.ensure(*n < 64, "cp.async.wait_group takes a small n"),
            Op::Shfl {
                mode,
                dst,
                src,
                lane,
                clamp,
                mask: _,
            } => {
                match mode {
                    ShflMode::Up | ShflMode::Down | ShflMode::Bfly | ShflMode::Idx => {}
                }
                self.operand(*src, Ty::B32)?;
                self.operand(*lane, Ty::B32)?;
                self.operand(*clamp, Ty::B32)?;
                self.def(*dst, Ty::B32)
            }
            Op::Ldmatrix {
                trans: _,
                dsts,
                addr,
            } => {
                self.addr(Space::Shared, *addr)?;
                for d in dsts {
                    self.def(*d, Ty::B32)?;
                }
                Ok(())
            }
            Op::Mma { kind, d, a, b, c } => self.check_mma(kind, d, a, b, c),
            Op::MbarrierInit { .. }
            | Op::MbarrierArrive { .. }
            | Op::MbarrierCompleteTx { .. }
            | Op::MbarrierTryWait { .. }
            | Op::MbarrierWait { .. }
            | Op::WgmmaFence
            | Op::WgmmaCommit
            | Op::WgmmaWait { .. }
            | Op::WgmmaMmaAsync { .. }
            | Op::SetMaxNReg { .. } => self.check_hopper(op),
            Op::TensorMapAddr { .. }
            | Op::TmaLoad { .. }
            | Op::TmaStore { .. }
            | Op::BulkCommit
            | Op::BulkWaitRead { .. } => self.check_tma(op),
            Op::AtomAddF32 { dst, addr, src } => {
                self.addr(Space::Global, *addr)?;
                self.operand(*src, Ty::F32)?;
                self.def(*dst, Ty::F32)
            }
            Op::RedAddF32 { addr, src } => {
                self.addr(Space::Global, *addr)?;
                self.operand(*src, Ty::F32)
            }
        }
    }

    fn check_unary(&self, op: &UnOp, ty: &Ty, dst: &Reg, src: &Operand) -> Result<(), TargetError> {
        let (allowed, reason): (&[&[Ty]], _) = match op {
            UnOp::Neg | UnOp::Abs => (
                &[&[Ty::S32, Ty::S64], FLOATS],
                "neg/abs take .s32 .s64 .f32 .f64",
            ),
            UnOp::Not => (&[BITS], "not takes .pred .b16 .b32 .b64"),
            UnOp::Rcp | UnOp::Sqrt => (&[FLOATS], "rcp.rn/sqrt.rn take .f32 .f64"),
            UnOp::RcpApprox
            | UnOp::SqrtApprox
            | UnOp::RsqrtApprox
            | UnOp::Ex2Approx
            | UnOp::Lg2Approx
            | UnOp::TanhApprox => (&[&[Ty::F32]], "approximate math takes .f32"),
        };
        self.one_of(*ty, allowed, reason)?;
        self.operand(*src, *ty)?;
        self.def(*dst, *ty)
    }

    fn check_binary(
        &self,
        op: &BinOp,
        ty: &Ty,
        dst: &Reg,
        a: &Operand,
        b: &Operand,
    ) -> Result<(), TargetError> {
        let (allowed, reason): (&[&[Ty]], _) = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Min | BinOp::Max | BinOp::Div => (
                &[INTS, FLOATS],
                "arithmetic takes .u32 .u64 .s32 .s64 .f32 .f64",
            ),
            BinOp::MulHi | BinOp::Rem => (&[INTS], "mul.hi/rem take integers"),
            BinOp::DivApprox => (&[&[Ty::F32]], "div.approx takes .f32"),
            BinOp::And | BinOp::Or | BinOp::Xor => (&[BITS], "logic takes .pred .b16 .b32 .b64"),
            BinOp::Shl => (&[&[Ty::B16, Ty::B32, Ty::B64]], "shl takes .b16 .b32 .b64"),
            BinOp::Shr => (
                &[INTS, &[Ty::B16, Ty::B32, Ty::B64]],
                "shr takes .bN .uN .sN",
            ),
        };
        self.one_of(*ty, allowed, reason)?;
        self.operand(*a, *ty)?;
        match op {
            BinOp::Shl | BinOp::Shr => self.operand(*b, Ty::U32)?,
            BinOp::Add
            | BinOp::Sub
            | BinOp::Mul
            | BinOp::MulHi
            | BinOp::Min
            | BinOp::Max
            | BinOp::Div
            | BinOp::DivApprox
            | BinOp::Rem
            | BinOp::And
            | BinOp::Or
            | BinOp::Xor => self.operand(*b, *ty)?,
        }
        self.def(*dst, *ty)
    }

    fn check_setp(
        &self,
        cmp: &Cmp,
        ty: &Ty,
        dst: &Reg,
        a: &Operand,
        b: &Operand,
    ) -> Result<(), TargetError> {
        self.one_of(
            *ty,
            &[INTS, FLOATS, &[Ty::B16, Ty::B32, Ty::B64]],
            "setp takes integer, .f32 .f64 or .bN operands",
        )?;
        if ty.class() == TyClass::Bits {
            self.ensure(
                matches!(cmp, Cmp::Eq | Cmp::Ne),
                "setp on .bN types compares only eq/ne",
            )?;
        }
        if *cmp == Cmp::Nan {
            self.ensure(
                matches!(ty, Ty::F32 | Ty::F64),
                "setp.nan takes .f32 or .f64 operands",
            )?;
        }
        self.operand(*a, *ty)?;
        self.operand(*b, *ty)?;
        self.def(*dst, Ty::Pred)
    }

    fn check_cp_async(
        &self,
        cache: &CacheOp,
        dst: &Reg,
        src: &Reg,
        bytes: &u32,
        src_size: &Option<Operand>,
    ) -> Result<(), TargetError> {
        match cache {
            CacheOp::Ca => self.ensure(
                matches!(bytes, 4 | 8 | 16),
                "cp.async.ca copies 4, 8 or 16 bytes",
            )?,
            CacheOp::Cg => self.ensure(*bytes == 16, "cp.async.cg copies 16 bytes")?,
        }
        self.addr(Space::Shared, *dst)?;
        self.addr(Space::Global, *src)?;
        if let Some(s) = src_size {
            self.operand(*s, Ty::U32)?;
        }
        Ok(())
    }

    /// mbarrier: a 32-bit shared address, 32-bit count/tx/parity operands, a b64 token, a
    /// pred; wgmma: n/2 f32 accumulators (read when `scale_d`), 64-bit descriptors.
    fn check_hopper(&self, op: &Op) -> Result<(), TargetError> {
        match op {
            Op::MbarrierInit { addr, count: o } | Op::MbarrierCompleteTx { addr, tx: o } => {
                self.addr(Space::Shared, *addr)?;
                self.operand(*o, Ty::B32)
            }
            Op::MbarrierArrive { dst, addr, tx } => {
                self.addr(Space::Shared, *addr)?;
                if let Some(t) = tx {
                    self.operand(*t, Ty::B32)?;
                }
                self.def(*dst, Ty::B64)
            }
            Op::MbarrierTryWait { dst, addr, parity }
            | Op::MbarrierWait {
                pred: dst,
                addr,
                parity,
                ..
            } => {
                self.addr(Space::Shared, *addr)?;
                self.operand(*parity, Ty::B32)?;
                self.def(*dst, Ty::Pred)
            }
            Op::WgmmaWait { n } => self.ensure(*n < 8, "wgmma.wait_group takes n from 0 to 7"),
            // ptxas ignores setmaxnreg (C7508) unless the launch bounds fix the register count
            // at entry: `.maxntid` and `.minnctapersm`
            Op::SetMaxNReg { n, .. } => {
                self.ensure(
                    n.is_multiple_of(8) && (24..=256).contains(n),
                    "setmaxnreg takes a multiple of 8 from 24 to 256",
                )?;
                self.ensure(
                    self.k.max_threads.is_some() && self.k.min_blocks.is_some(),
                    "setmaxnreg needs .maxntid and .minnctapersm (the register count at entry)",
                )
            }
            Op::WgmmaMmaAsync {
                n,
                ab,
                d,
                a_desc,
                b_desc,
                scale_d,
            } => {
                self.ensure(
                    n.is_multiple_of(8) && (8..=256).contains(n),
                    "wgmma m64nNk16 takes N a multiple of 8 from 8 to 256",
                )?;
                self.one_of(*ab, &[&[Ty::BF16, Ty::F16]], "wgmma takes bf16 or f16")?;
                self.ensure(
                    d.len() == (*n / 2) as usize,
                    "wgmma m64nNk16 has N/2 f32 accumulators per thread",
                )?;
                self.use_reg(*a_desc, Ty::B64)?;
                self.use_reg(*b_desc, Ty::B64)?;
                for r in d {
                    if *scale_d {
                        self.use_reg(*r, Ty::F32)?;
                    } else {
                        self.def(*r, Ty::F32)?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The TMA: a tensor map's generic address (64 bits) from a tensor-map parameter; bulk
    /// tensor copies of 1 to 5 dimensions with 32-bit coordinates, 32-bit shared addresses.
    fn check_tma(&self, op: &Op) -> Result<(), TargetError> {
        let dims = |coords: &[Reg]| -> Result<(), TargetError> {
            self.ensure(
                (1..=5).contains(&coords.len()),
                "cp.async.bulk.tensor takes 1 to 5 coordinates",
            )?;
            for c in coords {
                self.use_reg(*c, Ty::B32)?;
            }
            Ok(())
        };
        match op {
            Op::TensorMapAddr { dst, param } => {
                self.ensure(
                    self.param(*param)?.ty == ParamTy::TensorMap,
                    "cvta.param takes a tensor-map parameter",
                )?;
                self.def(*dst, Ty::U64)
            }
            Op::TmaLoad {
                dst,
                map,
                coords,
                mbar,
            } => {
                self.addr(Space::Shared, *dst)?;
                self.use_reg(*map, Ty::U64)?;
                self.addr(Space::Shared, *mbar)?;
                dims(coords)
            }
            Op::TmaStore { map, coords, src } => {
                self.use_reg(*map, Ty::U64)?;
                self.addr(Space::Shared, *src)?;
                dims(coords)
            }
            Op::BulkWaitRead { n } => {
                self.ensure(*n < 64, "cp.async.bulk.wait_group takes a small n")
            }
            _ => Ok(()),
        }
    }

    fn check_mma(
        &self,
        kind: &MmaKind,
        d: &[Reg; 4],
        a: &[Reg; 4],
        b: &[Reg; 2],
        c: &[Reg; 4],
    ) -> Result<(), TargetError> {
        match kind {
            MmaKind::M16n8k16Bf16 | MmaKind::M16n8k16F16 | MmaKind::M16n8k8Tf32 => {}
        }
        for r in a.iter().chain(b.iter()) {
            self.use_reg(*r, Ty::B32)?;
        }
        for r in c {
            self.use_reg(*r, Ty::F32)?;
        }
        for r in d {
            self.def(*r, Ty::F32)?;
        }
        Ok(())
    }

    fn wide(&self, ty: Ty) -> Result<Ty, TargetError> {
        match ty {
            Ty::U32 => Ok(Ty::U64),
            Ty::S32 => Ok(Ty::S64),
            Ty::Pred
            | Ty::B16
            | Ty::B32
            | Ty::B64
            | Ty::U64
            | Ty::S64
            | Ty::F16
            | Ty::F16x2
            | Ty::BF16
            | Ty::BF16x2
            | Ty::F32
            | Ty::F64
            | Ty::U8 => Err(self.invalid("mul.wide/mad.wide take .u32 or .s32")),
        }
    }

    fn mem_ty(&self, ty: Ty, n: usize) -> Result<(), TargetError> {
        self.ensure(ty != Ty::Pred, "ld/st cannot move predicates")?;
        self.ensure(
            matches!(n, 1 | 2 | 4),
            "ld/st move 1, 2 or 4 values (.v2, .v4)",
        )?;
        self.ensure(
            ty.bits() as usize / 8 * n <= 16,
            "a vector ld/st moves at most 16 bytes",
        )
    }

    fn addr(&self, space: Space, r: Reg) -> Result<(), TargetError> {
        match space {
            Space::Global => self.use_reg(r, Ty::U64),
            Space::Shared => self.use_reg(r, Ty::U32),
        }
    }

    /// PTX's rounding rules for `cvt`.
    fn cvt_rule(&self, dty: Ty, sty: Ty, rnd: Option<Rnd>) -> Result<(), TargetError> {
        let plain = |t: Ty| {
            !matches!(
                t,
                Ty::Pred | Ty::B16 | Ty::B32 | Ty::B64 | Ty::F16x2 | Ty::BF16x2
            )
        };
        self.ensure(
            plain(dty) && plain(sty),
            "cvt converts between .uN .sN .f16 .bf16 .f32 .f64",
        )?;
        let float = |t: Ty| t.class() == TyClass::Float;
        let float_rnd = matches!(rnd, Some(Rnd::Rn | Rnd::Rz | Rnd::Rm | Rnd::Rp));
        let int_rnd = matches!(rnd, Some(Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi));
        match (float(dty), float(sty)) {
            (true, true) if dty == sty => self.ensure(
                int_rnd,
                "cvt between the same float type rounds to an integer (.rni .rzi .rmi .rpi)",
            ),
            (true, true) if dty.bits() < sty.bits() || dty.bits() == sty.bits() => {
                self.ensure(float_rnd, "a narrowing float cvt needs .rn .rz .rm or .rp")
            }
            (true, true) => self.ensure(rnd.is_none(), "a widening float cvt takes no rounding"),
            (true, false) => self.ensure(float_rnd, "an int-to-float cvt needs .rn .rz .rm or .rp"),
            (false, true) => {
                self.ensure(int_rnd, "a float-to-int cvt needs .rni .rzi .rmi or .rpi")
            }
            (false, false) => self.ensure(rnd.is_none(), "an int-to-int cvt takes no rounding"),
        }
    }
}
