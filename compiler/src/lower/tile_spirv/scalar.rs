//! Scalar ops, conversions, math functions and warp operations in SPIR-V.

use super::{bug, unsupported, Cx, Lanes, Val, R};
use crate::target::{BinOp, Cmp, Pack, Rnd, ShflMode, Ty, UnOp};
use crate::tile::ir::*;
use rspirv::spirv::{GlslStd450Op, Op, Word};

const SCOPE_SUBGROUP: u32 = 3;

fn is_float(ty: Ty) -> bool {
    matches!(ty, Ty::F32 | Ty::F64)
}

fn signed(ty: Ty) -> bool {
    matches!(ty, Ty::S32 | Ty::S64)
}

fn wide(ty: Ty) -> bool {
    ty.bits() == 64
}

impl Cx<'_> {
    pub(super) fn op(&mut self, op: &OpData) -> R<()> {
        let o = &op.operands;
        let get = |i: usize| -> R<Operand> {
            o.get(i).copied().ok_or_else(|| {
                super::Error::NotLowered(format!("Tile IR: {:?} lacks operand {i}", op.kind))
            })
        };
        let result = |cx: &mut Cx, id: Word, ty: Ty| {
            if let Some(&v) = op.results.first() {
                cx.set(v, Val::Id(id, ty));
            }
        };
        match &op.kind {
            OpKind::Special(s) => {
                let r = self.special(*s);
                result(self, r, Ty::U32);
            }
            OpKind::Mov { ty } => {
                let r = self.opnd(get(0)?, *ty)?;
                result(self, r, *ty);
            }
            OpKind::Bitcast { to } => {
                let from = match get(0)? {
                    Operand::Value(v) => self.ty_of(v),
                    _ => *to,
                };
                let a = self.opnd(get(0)?, from)?;
                let r = self.convert_bits(a, from, *to)?;
                result(self, r, *to);
            }
            OpKind::Unary { op: u, ty } => {
                let a = self.opnd(get(0)?, *ty)?;
                let r = self.unary(*u, *ty, a)?;
                result(self, r, *ty);
            }
            OpKind::Binary { op: bo, ty } => {
                let a = self.opnd(get(0)?, *ty)?;
                // a shift amount is a u32 whatever the shifted type
                let rhs_ty = if matches!(bo, BinOp::Shl | BinOp::Shr) {
                    Ty::U32
                } else {
                    *ty
                };
                let c = self.opnd(get(1)?, rhs_ty)?;
                let r = self.bin(*bo, *ty, a, c, get(1)?)?;
                result(self, r, *ty);
            }
            OpKind::Fma { ty } => {
                let (a, c, d) = (
                    self.opnd(get(0)?, *ty)?,
                    self.opnd(get(1)?, *ty)?,
                    self.opnd(get(2)?, *ty)?,
                );
                let st = self.sty(*ty);
                let r = if is_float(*ty) {
                    self.glsl(GlslStd450Op::Fma, st, &[a, c, d])
                } else {
                    let m = self.ins(Op::IMul, st, &[a, c]);
                    self.ins(Op::IAdd, st, &[m, d])
                };
                result(self, r, *ty);
            }
            OpKind::MulWide { ty } | OpKind::MadWide { ty } => {
                let wt = if signed(*ty) { Ty::S64 } else { Ty::U64 };
                let a = self.opnd(get(0)?, *ty)?;
                let c = self.opnd(get(1)?, *ty)?;
                let w = self.sty(wt);
                let conv = if signed(*ty) {
                    Op::SConvert
                } else {
                    Op::UConvert
                };
                let (a, c) = (self.ins(conv, w, &[a]), self.ins(conv, w, &[c]));
                let mut r = self.ins(Op::IMul, w, &[a, c]);
                if matches!(op.kind, OpKind::MadWide { .. }) {
                    let d = self.opnd(get(2)?, wt)?;
                    r = self.ins(Op::IAdd, w, &[r, d]);
                }
                result(self, r, wt);
            }
            OpKind::Cmp { cmp, ty } => {
                let a = self.opnd(get(0)?, *ty)?;
                let c = self.opnd(get(1)?, *ty)?;
                let r = self.cmp(*cmp, *ty, a, c);
                result(self, r, Ty::Pred);
            }
            OpKind::Select { ty } => self.select(op, *ty)?,
            OpKind::Cast { to, from, rnd, sat } => {
                let a = self.opnd(get(0)?, *from)?;
                let r = self.cast(*to, *from, *rnd, *sat, a)?;
                result(self, r, *to);
            }
            OpKind::Pack(p) => {
                let hi = self.opnd(get(0)?, Ty::F32)?;
                let lo = self.opnd(get(1)?, Ty::F32)?;
                let u = self.t.u32_;
                let r = match p {
                    Pack::F16x2 => {
                        let v2 = self.b.type_vector(self.t.f32_, 2);
                        let v = self.ins(Op::CompositeConstruct, v2, &[lo, hi]);
                        self.glsl(GlslStd450Op::PackHalf2x16, u, &[v])
                    }
                    Pack::BF16x2 => {
                        let h = self.bf16_of(hi);
                        let l = self.bf16_of(lo);
                        let s16 = self.const_u32(16);
                        let h = self.ins(Op::ShiftLeftLogical, u, &[h, s16]);
                        self.ins(Op::BitwiseOr, u, &[h, l])
                    }
                    Pack::E4m3x2 | Pack::E5m2x2 => return unsupported("fp8 conversions"),
                };
                let ty = op
                    .results
                    .first()
                    .map(|&v| self.ty_of(v))
                    .unwrap_or(Ty::B32);
                result(self, r, ty);
            }
            OpKind::Unpack(_) => return unsupported("fp8 conversions"),
            OpKind::Tf32 => return unsupported("tf32 rounding (tensor cores)"),
            OpKind::Math { f, ty } => {
                let x = self.opnd(get(0)?, *ty)?;
                let y = match o.get(1) {
                    Some(&y) => Some(self.opnd(y, *ty)?),
                    None => None,
                };
                let r = self.math(*f, *ty, x, y)?;
                result(self, r, *ty);
            }
            OpKind::Mma { .. } | OpKind::FragGet { .. } | OpKind::FragMake => {
                return unsupported("tensor-core fragments (mma.sync); the FMA kernels run instead")
            }
            OpKind::Ldmatrix { .. } => return unsupported("ldmatrix (tensor cores)"),
            OpKind::Shfl { mode, .. } => {
                let r = self.shfl(*mode, get(0)?, get(1)?, get(2)?)?;
                result(self, r, Ty::B32);
            }
            OpKind::ReduceWarp { op: bo, ty } => {
                let v = self.opnd(get(0)?, *ty)?;
                let r = self.reduce_warp(v, *bo, *ty)?;
                result(self, r, *ty);
            }
            OpKind::ReduceBlock { op: bo, ty } => {
                let v = self.opnd(get(0)?, *ty)?;
                let scratch = match get(1)?.value().map(|v| self.val(v)) {
                    Some(Ok(Val::Shared(a))) => a,
                    _ => return bug(self.k, "tile.reduce_block without a shared scratch"),
                };
                let r = self.reduce_block(v, *bo, *ty, scratch)?;
                result(self, r, *ty);
            }
            OpKind::For { .. } | OpKind::If | OpKind::Yield => {}
            _ => self.mem_op(op)?,
        }
        Ok(())
    }

    fn select(&mut self, op: &OpData, ty: Ty) -> R<()> {
        let o = &op.operands;
        let [p, a, c] = [0, 1, 2].map(|i| o.get(i).copied());
        let (Some(p), Some(a), Some(c)) = (p, a, c) else {
            return bug(self.k, "tile.selp takes three operands");
        };
        let p = self.opnd(p, Ty::Pred)?;
        let Some(&res) = op.results.first() else {
            return Ok(());
        };
        if let Some(Type::Global(_)) = self.k.ty(res) {
            // a select of two views of one buffer: of their first elements
            let view = |cx: &Cx, x: Operand| match x.value().map(|v| cx.val(v)) {
                Some(Ok(Val::View {
                    binding,
                    first,
                    esize,
                })) => Ok((binding, first, esize)),
                _ => bug(cx.k, "tile.selp of views takes views"),
            };
            let (ba, fa, ea) = view(self, a)?;
            let (bc, fc, _) = view(self, c)?;
            if ba != bc {
                return unsupported("a select between two different tensors");
            }
            let zero = self.const_u32(0);
            let (fa, fc) = (fa.unwrap_or(zero), fc.unwrap_or(zero));
            let f = self.ins(Op::Select, self.t.u32_, &[p, fa, fc]);
            self.set(
                res,
                Val::View {
                    binding: ba,
                    first: Some(f),
                    esize: ea,
                },
            );
            return Ok(());
        }
        let (a, c) = (self.opnd(a, ty)?, self.opnd(c, ty)?);
        let st = self.sty(ty);
        let r = self.ins(Op::Select, st, &[p, a, c]);
        self.set(res, Val::Id(r, ty));
        Ok(())
    }

    fn unary(&mut self, u: UnOp, ty: Ty, a: Word) -> R<Word> {
        let st = self.sty(ty);
        let f32_only = |cx: &mut Cx, g: GlslStd450Op| -> R<Word> {
            if ty != Ty::F32 {
                return unsupported(format!("{u:?} on {ty:?}"));
            }
            Ok(cx.glsl(g, st, &[a]))
        };
        Ok(match u {
            UnOp::Neg if is_float(ty) => self.ins(Op::FNegate, st, &[a]),
            UnOp::Neg => self.ins(Op::SNegate, st, &[a]),
            UnOp::Abs if is_float(ty) => self.glsl(GlslStd450Op::FAbs, st, &[a]),
            UnOp::Abs => self.glsl(GlslStd450Op::SAbs, st, &[a]),
            UnOp::Not if ty == Ty::Pred => self.ins(Op::LogicalNot, st, &[a]),
            UnOp::Not => self.ins(Op::Not, st, &[a]),
            UnOp::Rcp | UnOp::RcpApprox => {
                let one = self.imm(Operand::F64(1f64.to_bits()), ty);
                self.ins(Op::FDiv, st, &[one, a])
            }
            UnOp::Sqrt | UnOp::SqrtApprox => self.glsl(GlslStd450Op::Sqrt, st, &[a]),
            UnOp::RsqrtApprox => self.glsl(GlslStd450Op::InverseSqrt, st, &[a]),
            UnOp::Ex2Approx => f32_only(self, GlslStd450Op::Exp2)?,
            UnOp::Lg2Approx => f32_only(self, GlslStd450Op::Log2)?,
            UnOp::TanhApprox => f32_only(self, GlslStd450Op::Tanh)?,
        })
    }

    /// `a op b` in `ty` (`rhs` is `b` as written, to see a constant shift).
    pub(super) fn bin(&mut self, op: BinOp, ty: Ty, a: Word, b: Word, rhs: Operand) -> R<Word> {
        let st = self.sty(ty);
        let f = is_float(ty);
        let s = signed(ty);
        if ty == Ty::Pred {
            return Ok(match op {
                BinOp::And => self.ins(Op::LogicalAnd, st, &[a, b]),
                BinOp::Or => self.ins(Op::LogicalOr, st, &[a, b]),
                BinOp::Xor => self.ins(Op::LogicalNotEqual, st, &[a, b]),
                _ => return unsupported(format!("{op:?} on predicates")),
            });
        }
        if matches!(ty, Ty::F16x2 | Ty::BF16x2 | Ty::F16 | Ty::BF16)
            && !matches!(op, BinOp::And | BinOp::Or | BinOp::Xor)
        {
            return unsupported(format!("{op:?} on {ty:?} registers"));
        }
        Ok(match op {
            BinOp::Add if f => self.ins(Op::FAdd, st, &[a, b]),
            BinOp::Add => self.ins(Op::IAdd, st, &[a, b]),
            BinOp::Sub if f => self.ins(Op::FSub, st, &[a, b]),
            BinOp::Sub => self.ins(Op::ISub, st, &[a, b]),
            BinOp::Mul if f => self.ins(Op::FMul, st, &[a, b]),
            BinOp::Mul => self.ins(Op::IMul, st, &[a, b]),
            BinOp::MulHi => {
                let pair = self.b.type_struct([st, st]);
                let m = self.ins(
                    if s {
                        Op::SMulExtended
                    } else {
                        Op::UMulExtended
                    },
                    pair,
                    &[a, b],
                );
                self.extract(st, m, 1)
            }
            BinOp::Min | BinOp::Max if f => {
                let g = if op == BinOp::Min {
                    GlslStd450Op::FMin
                } else {
                    GlslStd450Op::FMax
                };
                let m = self.glsl(g, st, &[a, b]);
                // NaN in, NaN out (NumPy's minimum/maximum): a + b is NaN exactly then
                let na = self.ins(Op::IsNan, self.t.bool_, &[a]);
                let nb = self.ins(Op::IsNan, self.t.bool_, &[b]);
                let n = self.ins(Op::LogicalOr, self.t.bool_, &[na, nb]);
                let sum = self.ins(Op::FAdd, st, &[a, b]);
                self.ins(Op::Select, st, &[n, sum, m])
            }
            BinOp::Min => self.glsl(
                if s {
                    GlslStd450Op::SMin
                } else {
                    GlslStd450Op::UMin
                },
                st,
                &[a, b],
            ),
            BinOp::Max => self.glsl(
                if s {
                    GlslStd450Op::SMax
                } else {
                    GlslStd450Op::UMax
                },
                st,
                &[a, b],
            ),
            BinOp::Div | BinOp::DivApprox if f => self.ins(Op::FDiv, st, &[a, b]),
            BinOp::Div | BinOp::DivApprox | BinOp::Rem if s && wide(ty) => {
                self.sdivrem64(a, b, op == BinOp::Rem)
            }
            BinOp::Div | BinOp::DivApprox => {
                self.ins(if s { Op::SDiv } else { Op::UDiv }, st, &[a, b])
            }
            BinOp::Rem if f => self.ins(Op::FRem, st, &[a, b]),
            BinOp::Rem => self.ins(if s { Op::SRem } else { Op::UMod }, st, &[a, b]),
            BinOp::And => self.ins(Op::BitwiseAnd, st, &[a, b]),
            BinOp::Or => self.ins(Op::BitwiseOr, st, &[a, b]),
            BinOp::Xor => self.ins(Op::BitwiseXor, st, &[a, b]),
            BinOp::Shl | BinOp::Shr => {
                let width = if wide(ty) { 64 } else { 32 };
                let arith = op == BinOp::Shr && s;
                let sop = match op {
                    BinOp::Shl => Op::ShiftLeftLogical,
                    _ if arith => Op::ShiftRightArithmetic,
                    _ => Op::ShiftRightLogical,
                };
                if matches!(rhs, Operand::Imm(i) if (0..width).contains(&i)) {
                    return Ok(self.ins(sop, st, &[a, b]));
                }
                // PTX clamps the shift: past the width, 0 (or the sign for `shr.s`)
                let bu = b;
                let lim = self.const_u32(width as u32 - 1);
                let cl = self.glsl(GlslStd450Op::UMin, self.t.u32_, &[bu, lim]);
                let r = self.ins(sop, st, &[a, cl]);
                if arith {
                    r
                } else {
                    let over = self.ins(Op::UGreaterThan, self.t.bool_, &[bu, lim]);
                    let z = self.constant(st, 0);
                    self.ins(Op::Select, st, &[over, z, r])
                }
            }
        })
    }

    /// 64-bit signed `a / b` (truncated) or `a % b` (the sign of `a`) through unsigned
    /// division of the magnitudes (lavapipe 22.3 miscompiles `OpSDiv`/`OpSRem` of a
    /// sign-extended value by a constant).
    fn sdivrem64(&mut self, a: Word, b: Word, rem: bool) -> Word {
        let (i, u, bt) = (self.t.i64_, self.t.u64_, self.t.bool_);
        // the sign bits (lavapipe 22.3 also misorders 64-bit `OpSLessThan`)
        let (ua0, ub0) = (
            self.ins(Op::Bitcast, u, &[a]),
            self.ins(Op::Bitcast, u, &[b]),
        );
        let top = self.constant(u, 1 << 63);
        let an = self.ins(Op::UGreaterThanEqual, bt, &[ua0, top]);
        let bn = self.ins(Op::UGreaterThanEqual, bt, &[ub0, top]);
        let na = self.ins(Op::SNegate, i, &[a]);
        let nb = self.ins(Op::SNegate, i, &[b]);
        let ma = self.ins(Op::Select, i, &[an, na, a]);
        let mb = self.ins(Op::Select, i, &[bn, nb, b]);
        let (ua, ub) = (
            self.ins(Op::Bitcast, u, &[ma]),
            self.ins(Op::Bitcast, u, &[mb]),
        );
        let (q, neg) = if rem {
            (self.ins(Op::UMod, u, &[ua, ub]), an)
        } else {
            (
                self.ins(Op::UDiv, u, &[ua, ub]),
                self.ins(Op::LogicalNotEqual, bt, &[an, bn]),
            )
        };
        let q = self.ins(Op::Bitcast, i, &[q]);
        let nq = self.ins(Op::SNegate, i, &[q]);
        self.ins(Op::Select, i, &[neg, nq, q])
    }

    pub(super) fn extract(&mut self, ty: Word, composite: Word, index: u32) -> Word {
        let id = self.b.id();
        let inst = rspirv::dr::Instruction::new(
            Op::CompositeExtract,
            Some(ty),
            Some(id),
            vec![
                rspirv::dr::Operand::IdRef(composite),
                rspirv::dr::Operand::LiteralBit32(index),
            ],
        );
        let _ = self.b.insert_into_block(rspirv::dr::InsertPoint::End, inst);
        id
    }

    fn cmp(&mut self, c: Cmp, ty: Ty, a: Word, b: Word) -> Word {
        let bt = self.t.bool_;
        if is_float(ty) {
            let op = match c {
                Cmp::Eq => Op::FOrdEqual,
                Cmp::Ne => Op::FOrdNotEqual,
                Cmp::Lt => Op::FOrdLessThan,
                Cmp::Le => Op::FOrdLessThanEqual,
                Cmp::Gt => Op::FOrdGreaterThan,
                Cmp::Ge => Op::FOrdGreaterThanEqual,
                Cmp::Nan => {
                    let na = self.ins(Op::IsNan, bt, &[a]);
                    let nb = self.ins(Op::IsNan, bt, &[b]);
                    return self.ins(Op::LogicalOr, bt, &[na, nb]);
                }
            };
            return self.ins(op, bt, &[a, b]);
        }
        if ty == Ty::Pred {
            let op = if c == Cmp::Eq {
                Op::LogicalEqual
            } else {
                Op::LogicalNotEqual
            };
            return self.ins(op, bt, &[a, b]);
        }
        let s = signed(ty);
        let (a, b, s) = if s && wide(ty) {
            // 64-bit signed order as the unsigned order of the sign-flipped values (lavapipe
            // 22.3 orders a sign-extended s64 as unsigned)
            let st = self.sty(ty);
            let flip = self.constant(st, 1 << 63);
            let fa = self.ins(Op::BitwiseXor, st, &[a, flip]);
            let fb = self.ins(Op::BitwiseXor, st, &[b, flip]);
            (fa, fb, false)
        } else {
            (a, b, s)
        };
        let op = match c {
            Cmp::Eq => Op::IEqual,
            Cmp::Ne | Cmp::Nan => Op::INotEqual,
            Cmp::Lt if s => Op::SLessThan,
            Cmp::Lt => Op::ULessThan,
            Cmp::Le if s => Op::SLessThanEqual,
            Cmp::Le => Op::ULessThanEqual,
            Cmp::Gt if s => Op::SGreaterThan,
            Cmp::Gt => Op::UGreaterThan,
            Cmp::Ge if s => Op::SGreaterThanEqual,
            Cmp::Ge => Op::UGreaterThanEqual,
        };
        self.ins(op, bt, &[a, b])
    }

    /// f32 → bf16 bits, round to nearest even (NaN stays a quiet NaN).
    fn bf16_of(&mut self, x: Word) -> Word {
        let u = self.t.u32_;
        let bits = self.ins(Op::Bitcast, u, &[x]);
        let s16 = self.const_u32(16);
        let hi = self.ins(Op::ShiftRightLogical, u, &[bits, s16]);
        let one = self.const_u32(1);
        let lsb = self.ins(Op::BitwiseAnd, u, &[hi, one]);
        let bias = self.const_u32(0x7fff);
        let t = self.ins(Op::IAdd, u, &[bits, bias]);
        let t = self.ins(Op::IAdd, u, &[t, lsb]);
        let rounded = self.ins(Op::ShiftRightLogical, u, &[t, s16]);
        let quiet = self.const_u32(0x40);
        let qn = self.ins(Op::BitwiseOr, u, &[hi, quiet]);
        let nan = self.ins(Op::IsNan, self.t.bool_, &[x]);
        self.ins(Op::Select, u, &[nan, qn, rounded])
    }

    /// A float of type `from` (bits for the 16-bit ones) as f32 (f64 stays f64).
    fn widen_float(&mut self, from: Ty, a: Word) -> R<Word> {
        let u = self.t.u32_;
        Ok(match from {
            Ty::F32 | Ty::F64 => a,
            Ty::BF16 => {
                let s16 = self.const_u32(16);
                let m = self.const_u32(0xffff);
                let a = self.ins(Op::BitwiseAnd, u, &[a, m]);
                let b = self.ins(Op::ShiftLeftLogical, u, &[a, s16]);
                self.ins(Op::Bitcast, self.t.f32_, &[b])
            }
            Ty::F16 => {
                let m = self.const_u32(0xffff);
                let a = self.ins(Op::BitwiseAnd, u, &[a, m]);
                let v2 = self.b.type_vector(self.t.f32_, 2);
                let v = self.glsl(GlslStd450Op::UnpackHalf2x16, v2, &[a]);
                self.extract(self.t.f32_, v, 0)
            }
            other => return unsupported(format!("conversions from {other:?}")),
        })
    }

    fn cast(&mut self, to: Ty, from: Ty, rnd: Option<Rnd>, sat: bool, a: Word) -> R<Word> {
        let fl = |t: Ty| matches!(t, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64);
        let r = match (fl(to), fl(from)) {
            (true, true) if to == from => {
                let st = self.sty(to);
                let x = self.widen_float(from, a)?;
                let g = match rnd {
                    Some(Rnd::Rni) => Some(GlslStd450Op::RoundEven),
                    Some(Rnd::Rzi) => Some(GlslStd450Op::Trunc),
                    Some(Rnd::Rmi) => Some(GlslStd450Op::Floor),
                    Some(Rnd::Rpi) => Some(GlslStd450Op::Ceil),
                    _ => None,
                };
                match (g, to) {
                    (None, _) => a,
                    (Some(g), Ty::F32 | Ty::F64) => self.glsl(g, st, &[x]),
                    (Some(_), _) => return unsupported(format!("integer rounding of {to:?}")),
                }
            }
            (true, true) => {
                let x = self.widen_float(from, a)?;
                self.narrow_float(to, if from == Ty::F64 { Ty::F64 } else { Ty::F32 }, x, rnd)?
            }
            (true, false) => {
                // through f64 (exact for 32-bit integers), then rounded once to `to`
                let op = if signed(from) {
                    Op::ConvertSToF
                } else {
                    Op::ConvertUToF
                };
                let wide_from = wide(from);
                let direct = matches!(rnd, None | Some(Rnd::Rn)) && to == Ty::F32;
                if direct {
                    self.ins(op, self.t.f32_, &[a])
                } else if to == Ty::F64 {
                    let f64t = self.sty(Ty::F64);
                    self.ins(op, f64t, &[a])
                } else if wide_from {
                    let x = self.ins(op, self.t.f32_, &[a]);
                    self.narrow_float(to, Ty::F32, x, rnd)?
                } else {
                    let f64t = self.sty(Ty::F64);
                    let x = self.ins(op, f64t, &[a]);
                    self.narrow_float(to, Ty::F64, x, rnd)?
                }
            }
            (false, true) => {
                let x = self.widen_float(from, a)?;
                self.float_to_int(to, if from == Ty::F64 { Ty::F64 } else { Ty::F32 }, x, rnd)?
            }
            (false, false) => self.int_to_int(to, from, sat, a)?,
        };
        if sat && fl(to) {
            if to != Ty::F32 && to != Ty::F64 {
                return unsupported("saturating conversions to 16-bit floats");
            }
            let st = self.sty(to);
            let zero = self.imm(Operand::Imm(0), to);
            let one = self.imm(Operand::Imm(1), to);
            let c = self.glsl(GlslStd450Op::FClamp, st, &[r, zero, one]);
            let nan = self.ins(Op::IsNan, self.t.bool_, &[r]);
            return Ok(self.ins(Op::Select, st, &[nan, zero, c]));
        }
        Ok(r)
    }

    /// `x` (f32 or f64, type `from`) rounded to the float type `to` with `rnd`.
    fn narrow_float(&mut self, to: Ty, from: Ty, x: Word, rnd: Option<Rnd>) -> R<Word> {
        let f32t = self.t.f32_;
        match to {
            Ty::F64 => {
                let f64t = self.sty(Ty::F64);
                return Ok(if from == Ty::F64 {
                    x
                } else {
                    self.ins(Op::FConvert, f64t, &[x])
                });
            }
            Ty::F32 if from == Ty::F32 => return Ok(x),
            Ty::F32 => {}
            Ty::BF16 | Ty::F16 => {
                let x = if from == Ty::F64 {
                    self.ins(Op::FConvert, f32t, &[x])
                } else {
                    x
                };
                return Ok(match (to, rnd) {
                    (Ty::BF16, None | Some(Rnd::Rn)) => self.bf16_of(x),
                    (Ty::BF16, Some(Rnd::Rz)) => {
                        let u = self.t.u32_;
                        let b = self.ins(Op::Bitcast, u, &[x]);
                        let s16 = self.const_u32(16);
                        self.ins(Op::ShiftRightLogical, u, &[b, s16])
                    }
                    (Ty::F16, None | Some(Rnd::Rn)) => {
                        let v2 = self.b.type_vector(f32t, 2);
                        let z = self.const_f32(0.0);
                        let v = self.ins(Op::CompositeConstruct, v2, &[x, z]);
                        self.glsl(GlslStd450Op::PackHalf2x16, self.t.u32_, &[v])
                    }
                    _ => return unsupported(format!("{rnd:?} rounding to {to:?}")),
                });
            }
            other => return unsupported(format!("conversions to {other:?}")),
        }
        // f64 → f32: round to nearest, then step one ulp where a directed mode needs it
        let r = self.ins(Op::FConvert, f32t, &[x]);
        let dir = match rnd {
            None | Some(Rnd::Rn) => return Ok(r),
            Some(d) => d,
        };
        let f64t = self.sty(Ty::F64);
        let (u, bt) = (self.t.u32_, self.t.bool_);
        let back = self.ins(Op::FConvert, f64t, &[r]);
        let bits = self.ins(Op::Bitcast, u, &[r]);
        let one = self.const_u32(1);
        let down = self.ins(Op::ISub, u, &[bits, one]);
        let up = self.ins(Op::IAdd, u, &[bits, one]);
        let zero = self.constant(f32t, 0);
        let (too_far, stepped) = match dir {
            Rnd::Rz | Rnd::Rzi => {
                let ab = self.glsl(GlslStd450Op::FAbs, f64t, &[back]);
                let ax = self.glsl(GlslStd450Op::FAbs, f64t, &[x]);
                (self.ins(Op::FOrdGreaterThan, bt, &[ab, ax]), down)
            }
            Rnd::Rm | Rnd::Rmi => {
                let pos = self.ins(Op::FOrdGreaterThan, bt, &[r, zero]);
                let is0 = self.ins(Op::FOrdEqual, bt, &[r, zero]);
                let negmin = self.const_u32(0x8000_0001);
                let t = self.ins(Op::Select, u, &[is0, negmin, up]);
                let s = self.ins(Op::Select, u, &[pos, down, t]);
                (self.ins(Op::FOrdGreaterThan, bt, &[back, x]), s)
            }
            Rnd::Rp | Rnd::Rpi => {
                let neg = self.ins(Op::FOrdLessThan, bt, &[r, zero]);
                let is0 = self.ins(Op::FOrdEqual, bt, &[r, zero]);
                let t = self.ins(Op::Select, u, &[is0, one, up]);
                let s = self.ins(Op::Select, u, &[neg, down, t]);
                (self.ins(Op::FOrdLessThan, bt, &[back, x]), s)
            }
            Rnd::Rn | Rnd::Rni => return Ok(r),
        };
        let sb = self.ins(Op::Select, u, &[too_far, stepped, bits]);
        Ok(self.ins(Op::Bitcast, f32t, &[sb]))
    }

    /// A float (f32 or f64) to an integer type: rounded by `rnd`, NaN → 0, saturated at the
    /// type's range (PTX's `cvt.rXi`).
    fn float_to_int(&mut self, to: Ty, from: Ty, x: Word, rnd: Option<Rnd>) -> R<Word> {
        let ft = self.sty(from);
        let g = match rnd {
            Some(Rnd::Rni) | Some(Rnd::Rn) | None => GlslStd450Op::RoundEven,
            Some(Rnd::Rzi) | Some(Rnd::Rz) => GlslStd450Op::Trunc,
            Some(Rnd::Rmi) | Some(Rnd::Rm) => GlslStd450Op::Floor,
            Some(Rnd::Rpi) | Some(Rnd::Rp) => GlslStd450Op::Ceil,
        };
        let r = self.glsl(g, ft, &[x]);
        let (lo, hi_excl, lo_bits, hi_bits): (f64, f64, u64, u64) = match to {
            Ty::S32 => (
                -2147483648.0,
                2147483648.0,
                i32::MIN as u32 as u64,
                i32::MAX as u64,
            ),
            Ty::U32 | Ty::B32 => (0.0, 4294967296.0, 0, u64::from(u32::MAX)),
            Ty::S64 => (
                -9.223372036854776e18,
                9.223372036854776e18,
                i64::MIN as u64,
                i64::MAX as u64,
            ),
            Ty::U64 | Ty::B64 => (0.0, 1.8446744073709552e19, 0, u64::MAX),
            Ty::U8 => (0.0, 256.0, 0, 255),
            other => return unsupported(format!("conversions to {other:?}")),
        };
        let it = self.sty(to);
        let bt = self.t.bool_;
        let lo_c = if from == Ty::F64 {
            self.imm(Operand::F64(lo.to_bits()), Ty::F64)
        } else {
            self.const_f32(lo as f32)
        };
        let hi_c = if from == Ty::F64 {
            self.imm(Operand::F64(hi_excl.to_bits()), Ty::F64)
        } else {
            self.const_f32(hi_excl as f32)
        };
        // clamp into range before converting (an out-of-range conversion is undefined)
        let cl = self.glsl(GlslStd450Op::FMax, ft, &[r, lo_c]);
        let conv = if signed(to) {
            Op::ConvertFToS
        } else {
            Op::ConvertFToU
        };
        let safe_hi = self.ins(Op::FOrdGreaterThanEqual, bt, &[cl, hi_c]);
        let cl2 = self.ins(Op::Select, ft, &[safe_hi, lo_c, cl]);
        let c = self.ins(conv, it, &[cl2]);
        let lo_i = self.constant(it, lo_bits);
        let hi_i = self.constant(it, hi_bits);
        let below = self.ins(Op::FOrdLessThanEqual, bt, &[r, lo_c]);
        let c = self.ins(Op::Select, it, &[below, lo_i, c]);
        let c = self.ins(Op::Select, it, &[safe_hi, hi_i, c]);
        let nan = self.ins(Op::IsNan, bt, &[x]);
        let zero = self.constant(it, 0);
        Ok(self.ins(Op::Select, it, &[nan, zero, c]))
    }

    fn int_to_int(&mut self, to: Ty, from: Ty, sat: bool, a: Word) -> R<Word> {
        let (ts, fs) = (self.sty(to), self.sty(from));
        let mut v = if ts == fs {
            a
        } else if wide(to) {
            if signed(from) {
                self.ins(Op::SConvert, ts, &[a])
            } else {
                // UConvert needs an unsigned result type
                let u = self.ins(Op::UConvert, self.t.u64_, &[a]);
                self.convert_bits(u, Ty::U64, to)?
            }
        } else {
            if sat {
                return unsupported("saturating 64 → 32-bit conversions");
            }
            // truncation; UConvert needs an unsigned result type
            self.ins(
                if signed(to) {
                    Op::SConvert
                } else {
                    Op::UConvert
                },
                ts,
                &[a],
            )
        };
        if sat && ts == fs && signed(from) != signed(to) {
            return unsupported("saturating signed/unsigned conversions");
        }
        let bits = to.bits();
        if bits < 32 && to != Ty::Pred {
            let m = self.const_u32(((1u64 << bits) - 1) as u32);
            if sat {
                let s = if signed(from) {
                    GlslStd450Op::SClamp
                } else {
                    GlslStd450Op::UMin
                };
                v = if s == GlslStd450Op::UMin {
                    self.glsl(GlslStd450Op::UMin, ts, &[v, m])
                } else {
                    let z = self.const_u32(0);
                    self.glsl(GlslStd450Op::SClamp, ts, &[v, z, m])
                };
            }
            v = self.ins(Op::BitwiseAnd, ts, &[v, m]);
        }
        Ok(v)
    }

    fn shfl(&mut self, mode: ShflMode, src: Operand, lane: Operand, clamp: Operand) -> R<Word> {
        self.subgroup = self.lanes == Lanes::Subgroup;
        let u = self.t.u32_;
        let bt = self.t.bool_;
        let v = self.opnd(src, Ty::B32)?;
        let b = self.opnd(lane, Ty::U32)?;
        let c = self.opnd(clamp, Ty::U32)?;
        let i = self.special(crate::target::SReg::LaneId);
        // the lane read, as PTX computes it from the clamp's segment mask and bound
        let m1f = self.const_u32(0x1f);
        let s8 = self.const_u32(8);
        let cval = self.ins(Op::BitwiseAnd, u, &[c, m1f]);
        let seg0 = self.ins(Op::ShiftRightLogical, u, &[c, s8]);
        let seg = self.ins(Op::BitwiseAnd, u, &[seg0, m1f]);
        let nseg = self.ins(Op::Not, u, &[seg]);
        let lo = self.ins(Op::BitwiseAnd, u, &[i, seg]);
        let cv = self.ins(Op::BitwiseAnd, u, &[cval, nseg]);
        let max_lane = self.ins(Op::BitwiseOr, u, &[lo, cv]);
        let (j, ok) = match mode {
            ShflMode::Up => {
                let j = self.ins(Op::ISub, u, &[i, b]);
                let under = self.ins(Op::UGreaterThan, bt, &[b, i]);
                let ge = self.ins(Op::UGreaterThanEqual, bt, &[j, max_lane]);
                let nu = self.ins(Op::LogicalNot, bt, &[under]);
                (j, self.ins(Op::LogicalAnd, bt, &[nu, ge]))
            }
            ShflMode::Down => {
                let j = self.ins(Op::IAdd, u, &[i, b]);
                (j, self.ins(Op::ULessThanEqual, bt, &[j, max_lane]))
            }
            ShflMode::Bfly => {
                let j = self.ins(Op::BitwiseXor, u, &[i, b]);
                (j, self.ins(Op::ULessThanEqual, bt, &[j, max_lane]))
            }
            ShflMode::Idx => {
                let bn = self.ins(Op::BitwiseAnd, u, &[b, nseg]);
                let j = self.ins(Op::BitwiseOr, u, &[lo, bn]);
                (j, self.ins(Op::ULessThanEqual, bt, &[j, max_lane]))
            }
        };
        let j = self.ins(Op::Select, u, &[ok, j, i]);
        if self.lanes == Lanes::Shared {
            return self.batch_read(self.current, j);
        }
        let scope = self.const_u32(SCOPE_SUBGROUP);
        Ok(self.ins(Op::GroupNonUniformShuffle, u, &[scope, v, j]))
    }

    fn reduce_warp(&mut self, mut v: Word, op: BinOp, ty: Ty) -> R<Word> {
        if self.lanes == Lanes::Shared {
            // every lane's value, then the butterfly's tree as lane 0 sees it: step `s`
            // combines lane j with lane j ^ s (the op commutes, so every lane ends equal)
            let mut vals = self.exchange_all(v, ty)?;
            for s in [16usize, 8, 4, 2, 1] {
                let mut next = vec![];
                for j in 0..s {
                    next.push(self.bin(op, ty, vals[j], vals[j ^ s], Operand::Imm(0))?);
                }
                vals = next;
            }
            return Ok(vals[0]);
        }
        self.subgroup = true;
        let st = self.sty(ty);
        let scope = self.const_u32(SCOPE_SUBGROUP);
        for s in [16u32, 8, 4, 2, 1] {
            let sc = self.const_u32(s);
            let t = self.ins(Op::GroupNonUniformShuffleXor, st, &[scope, v, sc]);
            v = self.bin(op, ty, v, t, Operand::Imm(0))?;
        }
        Ok(v)
    }

    /// Each warp's butterfly, lane 0 of warp `w` writes word `w` of the scratch, a barrier,
    /// every thread folds the partials in warp order, a barrier (as Tile → Target does).
    fn reduce_block(&mut self, v: Word, op: BinOp, ty: Ty, scratch: u32) -> R<Word> {
        let v = self.reduce_warp(v, op, ty)?;
        let warps = self.k.threads().div_ceil(32).max(1) as u32;
        let eb = ty.bits() / 8;
        let u = self.t.u32_;
        let tid = self.special(crate::target::SReg::Tid(crate::target::Dim::X));
        let (m31, s5) = (self.const_u32(31), self.const_u32(5));
        let lane = self.ins(Op::BitwiseAnd, u, &[tid, m31]);
        let warp = self.ins(Op::ShiftRightLogical, u, &[tid, s5]);
        let zero = self.const_u32(0);
        let first = self.ins(Op::IEqual, self.t.bool_, &[lane, zero]);
        let (ebc, base) = (self.const_u32(eb), self.const_u32(scratch));
        let off = self.ins(Op::IMul, u, &[warp, ebc]);
        let at = self.ins(Op::IAdd, u, &[off, base]);
        self.guarded(first, &[], &[], |cx| {
            cx.store_shared_at(at, ty, v)?;
            Ok(vec![])
        })?;
        self.barrier();
        let mut acc = self.load_shared_at(base, ty)?;
        for w in 1..warps {
            let a = self.const_u32(scratch + w * eb);
            let x = self.load_shared_at(a, ty)?;
            acc = self.bin(op, ty, acc, x, Operand::Imm(0))?;
        }
        self.barrier();
        Ok(acc)
    }

    fn math(&mut self, f: MathFn, ty: Ty, x: Word, y: Option<Word>) -> R<Word> {
        if ty == Ty::F64 {
            return self.math64(f, x, y);
        }
        if ty != Ty::F32 {
            return unsupported(format!("{f:?} in {ty:?}"));
        }
        let ft = self.t.f32_;
        let bt = self.t.bool_;
        let one = self.const_f32(1.0);
        Ok(match f {
            MathFn::Exp => self.glsl(GlslStd450Op::Exp, ft, &[x]),
            MathFn::Log => self.glsl(GlslStd450Op::Log, ft, &[x]),
            MathFn::Tanh => self.glsl(GlslStd450Op::Tanh, ft, &[x]),
            // through fp64: GLSL.std.450's fp32 sin/cos are only accurate in [−π, π]
            MathFn::Sin | MathFn::Cos => {
                let f64t = self.sty(Ty::F64);
                let xd = self.ins(Op::FConvert, f64t, &[x]);
                let r = self.math64(f, xd, None)?;
                self.ins(Op::FConvert, ft, &[r])
            }
            MathFn::Sigmoid => self.sigmoid(x),
            MathFn::Silu => {
                let s = self.sigmoid(x);
                self.ins(Op::FMul, ft, &[x, s])
            }
            MathFn::Erf => self.erf(x),
            MathFn::Gelu => {
                let c = self.const_f32(std::f32::consts::FRAC_1_SQRT_2);
                let xs = self.ins(Op::FMul, ft, &[x, c]);
                let e = self.erf(xs);
                let half = self.const_f32(0.5);
                let h = self.ins(Op::FMul, ft, &[x, half]);
                let o = self.ins(Op::FAdd, ft, &[e, one]);
                self.ins(Op::FMul, ft, &[h, o])
            }
            MathFn::Pow => {
                let Some(y) = y else {
                    return bug(self.k, "pow takes two operands");
                };
                let zero = self.const_f32(0.0);
                let ax = self.glsl(GlslStd450Op::FAbs, ft, &[x]);
                let l = self.glsl(GlslStd450Op::Log2, ft, &[ax]);
                let p = self.ins(Op::FMul, ft, &[y, l]);
                let r = self.glsl(GlslStd450Op::Exp2, ft, &[p]);
                let ty_ = self.glsl(GlslStd450Op::Trunc, ft, &[y]);
                let yint = self.ins(Op::FOrdEqual, bt, &[ty_, y]);
                let half = self.const_f32(0.5);
                let yh = self.ins(Op::FMul, ft, &[y, half]);
                let th = self.glsl(GlslStd450Op::Trunc, ft, &[yh]);
                let odd = self.ins(Op::FOrdNotEqual, bt, &[th, yh]);
                let nr = self.ins(Op::FNegate, ft, &[r]);
                let signed_r = self.ins(Op::Select, ft, &[odd, nr, r]);
                let nan = self.const_f32(f32::NAN);
                let negr = self.ins(Op::Select, ft, &[yint, signed_r, nan]);
                let neg = self.ins(Op::FOrdLessThan, bt, &[x, zero]);
                let r = self.ins(Op::Select, ft, &[neg, negr, r]);
                // 0 ** y: 0 for y > 0, inf for y < 0
                let inf = self.const_f32(f32::INFINITY);
                let ypos = self.ins(Op::FOrdGreaterThan, bt, &[y, zero]);
                let z = self.ins(Op::Select, ft, &[ypos, zero, inf]);
                // (−0) ** odd y keeps the sign: −0 or −inf
                let xbits = self.ins(Op::Bitcast, self.t.u32_, &[x]);
                let top = self.const_u32(0x8000_0000);
                let negzero = self.ins(Op::IEqual, bt, &[xbits, top]);
                let odd_int = self.ins(Op::LogicalAnd, bt, &[odd, yint]);
                let sign_odd = self.ins(Op::LogicalAnd, bt, &[negzero, odd_int]);
                let nz = self.ins(Op::FNegate, ft, &[z]);
                let z = self.ins(Op::Select, ft, &[sign_odd, nz, z]);
                let x0 = self.ins(Op::FOrdEqual, bt, &[x, zero]);
                let r = self.ins(Op::Select, ft, &[x0, z, r]);
                let y0 = self.ins(Op::FOrdEqual, bt, &[y, zero]);
                let x1 = self.ins(Op::FOrdEqual, bt, &[x, one]);
                let unit = self.ins(Op::LogicalOr, bt, &[y0, x1]);
                // (−1) ** ±inf is 1
                let m1 = self.const_f32(-1.0);
                let xm1 = self.ins(Op::FOrdEqual, bt, &[x, m1]);
                let ay = self.glsl(GlslStd450Op::FAbs, ft, &[y]);
                let yinf = self.ins(Op::FOrdEqual, bt, &[ay, inf]);
                let m1inf = self.ins(Op::LogicalAnd, bt, &[xm1, yinf]);
                let unit = self.ins(Op::LogicalOr, bt, &[unit, m1inf]);
                self.ins(Op::Select, ft, &[unit, one, r])
            }
        })
    }

    fn sigmoid(&mut self, x: Word) -> Word {
        let ft = self.t.f32_;
        let one = self.const_f32(1.0);
        let nx = self.ins(Op::FNegate, ft, &[x]);
        let e = self.glsl(GlslStd450Op::Exp, ft, &[nx]);
        let d = self.ins(Op::FAdd, ft, &[e, one]);
        self.ins(Op::FDiv, ft, &[one, d])
    }

    /// erf in f32: the Maclaurin series below 1 in magnitude (relative accuracy near 0),
    /// Abramowitz–Stegun 7.1.26 beyond (|error| < 1.5e-7); NaN stays NaN.
    fn erf(&mut self, x: Word) -> Word {
        let ft = self.t.f32_;
        let bt = self.t.bool_;
        let x2 = self.ins(Op::FMul, ft, &[x, x]);
        // Σ (−x²)^n / (n!·(2n+1)), Horner from n = 10 down
        let mut coef = vec![];
        let mut fact = 1f64;
        for n in 0..=10u32 {
            if n > 0 {
                fact *= f64::from(n);
            }
            let s = if n % 2 == 0 { 1.0 } else { -1.0 };
            coef.push(s / (fact * f64::from(2 * n + 1)));
        }
        let mut acc = self.const_f32(coef[10] as f32);
        for &c in coef[..10].iter().rev() {
            let cc = self.const_f32(c as f32);
            acc = self.glsl(GlslStd450Op::Fma, ft, &[acc, x2, cc]);
        }
        let k = self.const_f32((2.0 / std::f64::consts::PI.sqrt()) as f32);
        let kx = self.ins(Op::FMul, ft, &[x, k]);
        let small = self.ins(Op::FMul, ft, &[kx, acc]);
        // A&S 7.1.26 on |x|
        let ax = self.glsl(GlslStd450Op::FAbs, ft, &[x]);
        let p = self.const_f32(0.327_591_1);
        let one = self.const_f32(1.0);
        let d = self.glsl(GlslStd450Op::Fma, ft, &[p, ax, one]);
        let t = self.ins(Op::FDiv, ft, &[one, d]);
        let a = [
            0.254_829_6f32,
            -0.284_496_74,
            1.421_413_8,
            -1.453_152_1,
            1.061_405_4,
        ];
        let mut poly = self.const_f32(a[4]);
        for &c in a[..4].iter().rev() {
            let cc = self.const_f32(c);
            poly = self.glsl(GlslStd450Op::Fma, ft, &[poly, t, cc]);
        }
        poly = self.ins(Op::FMul, ft, &[poly, t]);
        let nx2 = self.ins(Op::FNegate, ft, &[x2]);
        let e = self.glsl(GlslStd450Op::Exp, ft, &[nx2]);
        let pe = self.ins(Op::FMul, ft, &[poly, e]);
        let mag = self.ins(Op::FSub, ft, &[one, pe]);
        let sign = self.glsl(GlslStd450Op::FSign, ft, &[x]);
        let signed_big = self.ins(Op::FMul, ft, &[sign, mag]);
        let lt1 = self.ins(Op::FOrdLessThan, bt, &[ax, one]);
        self.ins(Op::Select, ft, &[lt1, small, signed_big])
    }
}
