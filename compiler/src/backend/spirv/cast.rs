//! Conversions in SPIR-V: between the float types (bf16/f16 as bits, directed rounding of
//! f64 → f32 by a one-ulp step), float → int with PTX's saturation, and between integer widths.

use super::scalar::{signed, wide};
use super::{unsupported, Cx, R};
use crate::scalar::{Rnd, Ty};
use crate::tile::ir::*;
use rspirv::spirv::{GlslStd450Op, Op, Word};

impl Cx<'_> {
    /// f32 → bf16 bits, round to nearest even (NaN stays a quiet NaN).
    pub(super) fn bf16_of(&mut self, x: Word) -> Word {
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
    pub(super) fn widen_float(&mut self, from: Ty, a: Word) -> R<Word> {
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

    pub(super) fn cast(
        &mut self,
        to: Ty,
        from: Ty,
        rnd: Option<Rnd>,
        sat: bool,
        a: Word,
    ) -> R<Word> {
        let fl = |t: Ty| matches!(t, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64);
        let r = match (fl(to), fl(from)) {
            (true, true) if to == from => {
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
                    (Some(g), Ty::F32 | Ty::F64) => self.round_float(g, to, x),
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
    pub(super) fn narrow_float(&mut self, to: Ty, from: Ty, x: Word, rnd: Option<Rnd>) -> R<Word> {
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

    /// `x` (f32 or f64) rounded to an integral value by `g` (`Floor`, `Ceil`, `Trunc` or
    /// `RoundEven`), as PTX's `cvt.rXi`: ties to even, and the sign of a zero result is the
    /// sign of `x`. Lavapipe (22.3) rounds ties of `RoundEven` away from zero (fp32) or
    /// toward zero (fp64) and returns +0 for `Floor(-0)` and `Ceil(-0.5)`, so ties are settled
    /// here from `Floor` and the sign bit is copied from `x`.
    pub(super) fn round_float(&mut self, g: GlslStd450Op, ty: Ty, x: Word) -> Word {
        let st = self.sty(ty);
        let bt = self.t.bool_;
        let r = if g == GlslStd450Op::RoundEven {
            let half = self.const_float(ty, 0.5);
            let one = self.const_float(ty, 1.0);
            let zero = self.const_float(ty, 0.0);
            let f = self.glsl(GlslStd450Op::Floor, st, &[x]);
            // exact: |x| < 2^23 (2^52) has a fraction of at most the ulp's bits; beyond, d = 0
            let d = self.ins(Op::FSub, st, &[x, f]);
            let gt = self.ins(Op::FOrdGreaterThan, bt, &[d, half]);
            let tie = self.ins(Op::FOrdEqual, bt, &[d, half]);
            let f2 = self.ins(Op::FMul, st, &[f, half]);
            let f2f = self.glsl(GlslStd450Op::Floor, st, &[f2]);
            let odd = self.ins(Op::FOrdNotEqual, bt, &[f2, f2f]);
            let tie_up = self.ins(Op::LogicalAnd, bt, &[tie, odd]);
            let up = self.ins(Op::LogicalOr, bt, &[gt, tie_up]);
            let step = self.ins(Op::Select, st, &[up, one, zero]);
            self.ins(Op::FAdd, st, &[f, step])
        } else {
            self.glsl(g, st, &[x])
        };
        // an integral result has the sign of x (or is NaN): copy x's sign bit into it
        let u = self.t.u32_;
        if ty == Ty::F64 {
            let v2 = self.b.type_vector(u, 2);
            let rv = self.glsl(GlslStd450Op::UnpackDouble2x32, v2, &[r]);
            let xv = self.glsl(GlslStd450Op::UnpackDouble2x32, v2, &[x]);
            let rh = self.extract(u, rv, 1);
            let xh = self.extract(u, xv, 1);
            let sign = self.const_u32(0x8000_0000);
            let xs = self.ins(Op::BitwiseAnd, u, &[xh, sign]);
            let h = self.ins(Op::BitwiseOr, u, &[rh, xs]);
            let rl = self.extract(u, rv, 0);
            let v = self.ins(Op::CompositeConstruct, v2, &[rl, h]);
            self.glsl(GlslStd450Op::PackDouble2x32, st, &[v])
        } else {
            let rb = self.ins(Op::Bitcast, u, &[r]);
            let xb = self.ins(Op::Bitcast, u, &[x]);
            let sign = self.const_u32(0x8000_0000);
            let xs = self.ins(Op::BitwiseAnd, u, &[xb, sign]);
            let b = self.ins(Op::BitwiseOr, u, &[rb, xs]);
            self.ins(Op::Bitcast, st, &[b])
        }
    }

    /// A float (f32 or f64) to an integer type: rounded by `rnd`, NaN → 0, saturated at the
    /// type's range (PTX's `cvt.rXi`).
    pub(super) fn float_to_int(&mut self, to: Ty, from: Ty, x: Word, rnd: Option<Rnd>) -> R<Word> {
        let ft = self.sty(from);
        let g = match rnd {
            Some(Rnd::Rni) | Some(Rnd::Rn) | None => GlslStd450Op::RoundEven,
            Some(Rnd::Rzi) | Some(Rnd::Rz) => GlslStd450Op::Trunc,
            Some(Rnd::Rmi) | Some(Rnd::Rm) => GlslStd450Op::Floor,
            Some(Rnd::Rpi) | Some(Rnd::Rp) => GlslStd450Op::Ceil,
        };
        let r = self.round_float(g, from, x);
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
        let lo_c = self.const_float(from, lo);
        let hi_c = self.const_float(from, hi_excl);
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

    pub(super) fn int_to_int(&mut self, to: Ty, from: Ty, sat: bool, a: Word) -> R<Word> {
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
}
