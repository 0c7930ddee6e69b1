//! Scalar ops, conversions, the native math functions and warp operations in SPIR-V.

use super::{bug, unsupported, Cx, Lanes, Val, R};
use crate::scalar::{BinOp, Cmp, Pack, ShflMode, Ty, UnOp};
use crate::tile::ir::*;
use rspirv::spirv::{GlslStd450Op, Op, Word};

const SCOPE_SUBGROUP: u32 = 3;

fn is_float(ty: Ty) -> bool {
    matches!(ty, Ty::F32 | Ty::F64)
}

pub(super) fn signed(ty: Ty) -> bool {
    matches!(ty, Ty::S32 | Ty::S64)
}

pub(super) fn wide(ty: Ty) -> bool {
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
                let r = self.math(*f, *ty, x)?;
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
                let one = self.const_float(ty, 1.0);
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
            BinOp::Div | BinOp::DivApprox | BinOp::Rem if s => {
                self.sdivrem(wide(ty), a, b, op == BinOp::Rem)
            }
            BinOp::Div | BinOp::DivApprox => self.ins(Op::UDiv, st, &[a, b]),
            BinOp::Rem if f => self.ins(Op::FRem, st, &[a, b]),
            BinOp::Rem => self.ins(Op::UMod, st, &[a, b]),
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

    /// Signed `a / b` (truncated) or `a % b` (the sign of `a`), 32- or 64-bit, through unsigned
    /// division of the magnitudes: Vulkan leaves `OpSRem`/`OpSMod` undefined when an operand
    /// is negative (NVIDIA's driver gives other results than the cpu's), and lavapipe 22.3
    /// miscompiles a 64-bit `OpSDiv`/`OpSRem` of a sign-extended value by a constant.
    /// `MIN / -1` wraps to `MIN`, as in PTX.
    fn sdivrem(&mut self, wide: bool, a: Word, b: Word, rem: bool) -> Word {
        let (i, u) = if wide {
            (self.t.i64_, self.t.u64_)
        } else {
            (self.t.i32_, self.t.u32_)
        };
        let bt = self.t.bool_;
        // the sign bits (lavapipe 22.3 also misorders 64-bit `OpSLessThan`)
        let (ua0, ub0) = (
            self.ins(Op::Bitcast, u, &[a]),
            self.ins(Op::Bitcast, u, &[b]),
        );
        let top = self.constant(u, if wide { 1 << 63 } else { 1 << 31 });
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

    fn shfl(&mut self, mode: ShflMode, src: Operand, lane: Operand, clamp: Operand) -> R<Word> {
        self.subgroup = self.lanes == Lanes::Subgroup;
        let u = self.t.u32_;
        let bt = self.t.bool_;
        let v = self.opnd(src, Ty::B32)?;
        let b = self.opnd(lane, Ty::U32)?;
        let c = self.opnd(clamp, Ty::U32)?;
        let i = self.special(crate::scalar::SReg::LaneId);
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
            // every lane publishes its value, then folds lanes 0..31 in order in a loop (a
            // short loop, not 32 unrolled reads: lavapipe's compile time is the cost here);
            // every lane folds the same values in the same order, so all end equal
            let (bank, words) = self.publish(v, ty)?;
            let zero = self.const_u32(0);
            let first = self.lane_value(zero, bank, words, ty)?;
            let acc = self.counted_loop(1, 32, &[(first, ty)], |cx, j, acc| {
                let x = cx.lane_value(j, bank, words, ty)?;
                Ok(vec![cx.bin(op, ty, acc[0], x, Operand::Imm(0))?])
            })?;
            return Ok(acc[0]);
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
        let tid = self.special(crate::scalar::SReg::Tid(crate::scalar::Dim::X));
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

    /// The math functions [`crate::tile::math::form`] leaves to the back end: GLSL.std.450's
    /// f32 `Exp`, `Log` and `Tanh` (every other one arrives expanded).
    fn math(&mut self, f: MathFn, ty: Ty, x: Word) -> R<Word> {
        let g = match (f, ty) {
            (MathFn::Exp, Ty::F32) => GlslStd450Op::Exp,
            (MathFn::Log, Ty::F32) => GlslStd450Op::Log,
            (MathFn::Tanh, Ty::F32) => GlslStd450Op::Tanh,
            _ => {
                let name = crate::tile::math::fn_name(f);
                return unsupported(format!("{name} in {}", ty.name()));
            }
        };
        let ft = self.t.f32_;
        Ok(self.glsl(g, ft, &[x]))
    }
}
