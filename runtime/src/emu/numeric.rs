//! Bit-exact value semantics: registers hold raw bits (`u64`), interpreted by instruction type.

use crate::cast::{f64_to_fp8, fp8_to_f32};
use crate::DType;
use half::{bf16, f16};
use tessera_compiler::backend::ptx::{Rnd, Ty};

/// Masks `v` to the width of `ty` (a predicate keeps its low bit).
pub fn mask(ty: Ty, v: u64) -> u64 {
    match ty.bits() {
        1 => v & 1,
        8 => v & 0xff,
        16 => v & 0xffff,
        32 => v & 0xffff_ffff,
        _ => v,
    }
}

/// The value of a float-typed register as f64 (exact for every float type).
pub fn float_of(ty: Ty, v: u64) -> f64 {
    match ty {
        Ty::F16 => f16::from_bits(v as u16).to_f64(),
        Ty::BF16 => bf16::from_bits(v as u16).to_f64(),
        Ty::F32 => f64::from(f32::from_bits(v as u32)),
        Ty::F64 => f64::from_bits(v),
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F16x2
        | Ty::BF16x2
        | Ty::U8 => f64::NAN,
    }
}

/// The value of an integer-typed register, sign- or zero-extended.
pub fn int_of(ty: Ty, v: u64) -> i128 {
    match ty {
        Ty::S32 => i128::from(v as u32 as i32),
        Ty::S64 => i128::from(v as i64),
        Ty::U32 | Ty::B32 => i128::from(v as u32),
        Ty::B16 => i128::from(v as u16),
        Ty::Pred => i128::from(v & 1),
        Ty::U8 => i128::from(v as u8),
        Ty::U64 | Ty::B64 => i128::from(v),
        Ty::F16 | Ty::F16x2 | Ty::BF16 | Ty::BF16x2 | Ty::F32 | Ty::F64 => 0,
    }
}

/// Rounds `x` to nearest-even in `ty`, returning its bits.
fn round_rn(x: f64, ty: Ty) -> u64 {
    match ty {
        Ty::F16 => u64::from(f16::from_f64(x).to_bits()),
        Ty::BF16 => u64::from(bf16::from_f64(x).to_bits()),
        Ty::F32 => u64::from((x as f32).to_bits()),
        Ty::F64 => x.to_bits(),
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F16x2
        | Ty::BF16x2
        | Ty::U8 => 0,
    }
}

/// Rounds `x` (exact) to float type `ty` with a float rounding mode.
pub fn round_float(x: f64, ty: Ty, rnd: Rnd) -> u64 {
    let r = round_rn(x, ty);
    if x.is_nan() {
        return r;
    }
    let rv = float_of(ty, r);
    if rv == x {
        return r;
    }
    let sign = rv.is_sign_negative();
    // Step one ulp toward zero (magnitude - 1) or away (magnitude + 1), in sign-magnitude bits.
    let toward_zero = |b: u64| b - 1;
    let away = |b: u64| b + 1;
    let mag_too_big = rv.abs() > x.abs();
    match rnd {
        Rnd::Rz if mag_too_big => toward_zero(r),
        Rnd::Rm if rv > x => {
            if sign {
                away(r)
            } else {
                toward_zero(r)
            }
        }
        Rnd::Rp if rv < x => {
            if sign {
                toward_zero(r)
            } else {
                away(r)
            }
        }
        Rnd::Rn | Rnd::Rz | Rnd::Rm | Rnd::Rp | Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi => r,
    }
}

/// Rounds to an integral value with an integer rounding mode.
fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rni | Rnd::Rn => x.round_ties_even(),
        Rnd::Rzi | Rnd::Rz => x.trunc(),
        Rnd::Rmi | Rnd::Rm => x.floor(),
        Rnd::Rpi | Rnd::Rp => x.ceil(),
    }
}

fn int_range(ty: Ty) -> (i128, i128) {
    match ty {
        Ty::S32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        Ty::S64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
        Ty::U32 => (0, i128::from(u32::MAX)),
        Ty::U64 => (0, i128::from(u64::MAX)),
        Ty::U8 => (0, i128::from(u8::MAX)),
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::F16
        | Ty::F16x2
        | Ty::BF16
        | Ty::BF16x2
        | Ty::F32
        | Ty::F64 => (0, 0),
    }
}

/// `cvt{.rnd}{.sat}.dty.sty` of the bits `v` (the verifier has checked the rounding rule).
pub fn cvt(dty: Ty, sty: Ty, rnd: Option<Rnd>, sat: bool, v: u64) -> u64 {
    let dfloat = matches!(dty, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64);
    let sfloat = matches!(sty, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64);
    let rnd_f = rnd.unwrap_or(Rnd::Rn);
    let out = match (dfloat, sfloat) {
        (true, true) => {
            let x = float_of(sty, v);
            if dty == sty {
                round_rn(round_int(x, rnd_f), dty)
            } else {
                round_float(x, dty, rnd_f)
            }
        }
        (true, false) => {
            let i = int_of(sty, v);
            // Exact in f64 when |i| < 2^53; larger 64-bit values round once through f32/f64's
            // own conversion for `.rn` (Rust's `as` rounds to nearest).
            if i.unsigned_abs() < (1u128 << 53) {
                round_float(i as f64, dty, rnd_f)
            } else {
                if dty == Ty::F32 && rnd_f == Rnd::Rn {
                    u64::from((i as f32).to_bits())
                } else {
                    round_float(i as f64, dty, rnd_f)
                }
            }
        }
        (false, true) => {
            let x = float_of(sty, v);
            if x.is_nan() {
                0
            } else {
                let r = round_int(x, rnd_f);
                let (lo, hi) = int_range(dty);
                let r = if r < lo as f64 {
                    lo
                } else if r > hi as f64 {
                    hi
                } else {
                    r as i128
                };
                r as u64
            }
        }
        (false, false) => {
            let i = int_of(sty, v);
            if sat {
                let (lo, hi) = int_range(dty);
                i.clamp(lo, hi) as u64
            } else {
                i as u64
            }
        }
    };
    let out = if sat && dfloat {
        let x = float_of(dty, out);
        if x.is_nan() {
            0
        } else if x < 0.0 {
            round_rn(0.0, dty)
        } else if x > 1.0 {
            round_rn(1.0, dty)
        } else {
            out
        }
    } else {
        out
    };
    mask(dty, out)
}

/// `cvt.rna.tf32.f32`: round to 10 mantissa bits, ties away from zero.
pub fn tf32_rna(v: u32) -> u32 {
    if (v & 0x7fff_ffff) >= 0x7f80_0000 {
        return v;
    }
    v.wrapping_add(0x1000) & !0x1fff
}

pub fn pack_f16x2(hi: f32, lo: f32) -> u64 {
    u64::from(f16::from_f32(hi).to_bits()) << 16 | u64::from(f16::from_f32(lo).to_bits())
}

pub fn pack_bf16x2(hi: f32, lo: f32) -> u64 {
    u64::from(bf16::from_f32(hi).to_bits()) << 16 | u64::from(bf16::from_f32(lo).to_bits())
}

/// `cvt.rn.satfinite.e4m3x2.f32` / `e5m2x2`.
pub fn pack_fp8x2(hi: f32, lo: f32, d: DType) -> u64 {
    u64::from(f64_to_fp8(f64::from(hi), d)) << 8 | u64::from(f64_to_fp8(f64::from(lo), d))
}

/// `cvt.rn.f16x2.e4m3x2` / `e5m2x2` (exact).
pub fn unpack_fp8x2(v: u64, d: DType) -> u64 {
    let one = |b: u8| u64::from(f16::from_f32(fp8_to_f32(b, d)).to_bits());
    one((v >> 8) as u8) << 16 | one(v as u8)
}

/// A 16-bit mma operand element as f32.
pub fn half_elem(bits: u16, bf: bool) -> f32 {
    if bf {
        bf16::from_bits(bits).to_f32()
    } else {
        f16::from_bits(bits).to_f32()
    }
}

/// A tf32 mma operand: the f32 bits with the low 13 mantissa bits ignored.
pub fn tf32_elem(bits: u32) -> f32 {
    f32::from_bits(bits & !0x1fff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directed_rounding() {
        let x = 1.0 + f64::powi(2.0, -30);
        assert_eq!(f32::from_bits(round_float(x, Ty::F32, Rnd::Rn) as u32), 1.0);
        assert!(f32::from_bits(round_float(x, Ty::F32, Rnd::Rp) as u32) > 1.0);
        assert_eq!(
            f32::from_bits(round_float(-x, Ty::F32, Rnd::Rz) as u32),
            -1.0
        );
        assert!(f32::from_bits(round_float(-x, Ty::F32, Rnd::Rm) as u32) < -1.0);
        // rz of an overflow is the largest finite value.
        assert_eq!(
            f32::from_bits(round_float(1e300, Ty::F32, Rnd::Rz) as u32),
            f32::MAX
        );
        assert_eq!(
            bf16::from_bits(round_float(1.00390625, Ty::BF16, Rnd::Rn) as u16).to_f32(),
            1.0
        );
    }

    #[test]
    fn float_to_int_saturates() {
        let v = u64::from(3.0e10f32.to_bits());
        assert_eq!(
            cvt(Ty::S32, Ty::F32, Some(Rnd::Rzi), false, v) as u32 as i32,
            i32::MAX
        );
        let v = u64::from(f32::NAN.to_bits());
        assert_eq!(cvt(Ty::S32, Ty::F32, Some(Rnd::Rni), false, v), 0);
        let v = u64::from((-2.5f32).to_bits());
        assert_eq!(
            cvt(Ty::S32, Ty::F32, Some(Rnd::Rni), false, v) as u32 as i32,
            -2
        );
        assert_eq!(cvt(Ty::U32, Ty::F32, Some(Rnd::Rni), false, v), 0);
    }

    #[test]
    fn tf32_ties_away() {
        let one_and_half_ulp = 1.0f32.to_bits() | 0x1000;
        assert_eq!(tf32_rna(one_and_half_ulp), 1.0f32.to_bits() + 0x2000);
    }
}
