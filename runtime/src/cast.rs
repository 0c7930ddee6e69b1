//! Rounding to every float format: round to nearest, ties to even; fp8 saturates; NaN stays NaN.
//!
//! [`round_to`] is the one exact definition (it works on f64, whose range and precision cover every
//! narrower format, so rounding an f64 value is a single rounding). The fast paths used by the
//! kernels ([`f32_to_tf32`], `half`'s `from_f32`) are tested against it.

use crate::dtype::DType;
use half::{bf16, f16};

/// Parameters of a binary float format.
#[derive(Copy, Clone, Debug)]
struct Format {
    /// Significand precision, implicit bit included.
    p: i32,
    /// Smallest normal exponent.
    emin: i32,
    /// Largest finite value.
    max: f64,
    /// Overflow saturates to ±max (fp8) instead of going to ±inf.
    saturate: bool,
}

fn format_of(d: DType) -> Option<Format> {
    let f = |p: i32, emin: i32, max: f64, saturate: bool| Format {
        p,
        emin,
        max,
        saturate,
    };
    Some(match d {
        DType::F64 => return None,
        DType::F32 => f(24, -126, f64::from(f32::MAX), false),
        DType::TF32 => f(11, -126, (2.0 - pow2(-10)) * pow2(127), false),
        DType::F16 => f(11, -14, 65504.0, false),
        DType::BF16 => f(8, -126, (2.0 - pow2(-7)) * pow2(127), false),
        DType::F8E4M3 => f(4, -6, 448.0, true),
        DType::F8E5M2 => f(3, -14, 57344.0, true),
        DType::I64 | DType::I32 | DType::I8 | DType::Bool | DType::C64 | DType::C128 => {
            return None
        }
    })
}

/// 2^k exactly, for -1022 <= k <= 1023 (clamped outside).
pub(crate) fn pow2(k: i32) -> f64 {
    let k = k.clamp(-1022, 1023);
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// Rounds `x` to the nearest value of float dtype `d` (ties to even) and returns it as f64.
/// fp8 types saturate (±inf included) to ±448 / ±57344; NaN stays NaN. For fp64 and non-float
/// dtypes `x` is returned unchanged.
pub fn round_to(x: f64, d: DType) -> f64 {
    let Some(fmt) = format_of(d) else { return x };
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a.is_infinite() {
        a
    } else if a == 0.0 {
        0.0
    } else {
        let bits = a.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        // f64 subnormals are far below every format's smallest subnormal: they round to 0.
        let e = if biased == 0 { -1100 } else { biased - 1023 };
        let q = e.max(fmt.emin) - (fmt.p - 1);
        if q < -1022 {
            0.0
        } else {
            // a / 2^q is exact (power-of-two scaling, within range), as is the product back.
            let scaled = a * pow2(-q);
            scaled.round_ties_even() * pow2(q)
        }
    };
    let r = if r > fmt.max {
        if fmt.saturate {
            fmt.max
        } else {
            f64::INFINITY
        }
    } else {
        r
    };
    if x.is_sign_negative() {
        -r
    } else {
        r
    }
}

/// Rounds an fp32 value's mantissa to 10 bits (ties to even): the tf32 value, stored as f32.
#[inline]
pub fn f32_to_tf32(x: f32) -> f32 {
    let u = x.to_bits();
    if (u & 0x7fff_ffff) >= 0x7f80_0000 {
        return x; // inf or NaN
    }
    let lsb = (u >> 13) & 1;
    let r = u.wrapping_add(0x0fff + lsb) & !0x1fff;
    f32::from_bits(r)
}

/// Encodes a value (already any float) to an fp8 byte, rounding to nearest even and saturating.
pub fn f64_to_fp8(x: f64, d: DType) -> u8 {
    let (p, emin, bias, nan) = match d {
        DType::F8E5M2 => (3, -14, 15, 0x7f_u8),
        _ => (4, -6, 7, 0x7f_u8),
    };
    if x.is_nan() {
        return nan;
    }
    let r = round_to(x, if d == DType::F8E5M2 { d } else { DType::F8E4M3 });
    let sign: u8 = if r.is_sign_negative() { 0x80 } else { 0 };
    let a = r.abs();
    if a == 0.0 {
        return sign;
    }
    let mbits = p - 1;
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let code = if e < emin {
        // Subnormal: a = m * 2^(emin - mbits).
        (a * pow2(mbits - emin)) as u8
    } else {
        let m = ((a * pow2(-e) - 1.0) * pow2(mbits)) as u8;
        (((e + bias) as u8) << mbits) | m
    };
    sign | code
}

fn fp8_decode_slow(b: u8, d: DType) -> f32 {
    let (mbits, bias, ieee) = match d {
        DType::F8E5M2 => (2, 15, true),
        _ => (3, 7, false),
    };
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b & 0x7f) >> mbits);
    let m = i32::from(b & ((1 << mbits) - 1));
    let emax_field = (1 << (7 - mbits)) - 1;
    let v = if ieee && e == emax_field {
        if m == 0 {
            f64::INFINITY
        } else {
            f64::NAN
        }
    } else if !ieee && e == emax_field && m == (1 << mbits) - 1 {
        f64::NAN
    } else if e == 0 {
        f64::from(m) * pow2(1 - bias - mbits)
    } else {
        (1.0 + f64::from(m) * pow2(-mbits)) * pow2(e - bias)
    };
    (sign * v) as f32
}

struct Fp8Tables {
    e4m3: [f32; 256],
    e5m2: [f32; 256],
}

fn fp8_tables() -> &'static Fp8Tables {
    static T: std::sync::OnceLock<Fp8Tables> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = Fp8Tables {
            e4m3: [0.0; 256],
            e5m2: [0.0; 256],
        };
        for (i, (a, b)) in t.e4m3.iter_mut().zip(t.e5m2.iter_mut()).enumerate() {
            *a = fp8_decode_slow(i as u8, DType::F8E4M3);
            *b = fp8_decode_slow(i as u8, DType::F8E5M2);
        }
        t
    })
}

/// The 256 values of an fp8 dtype as f32 (exact), indexed by byte.
pub fn fp8_table(d: DType) -> &'static [f32; 256] {
    let t = fp8_tables();
    if d == DType::F8E5M2 {
        &t.e5m2
    } else {
        &t.e4m3
    }
}

/// Decodes an fp8 byte.
#[inline]
pub fn fp8_to_f32(b: u8, d: DType) -> f32 {
    fp8_table(d)[usize::from(b)]
}

/// Converts an i64 to f64 rounding to odd when it is not exact, so that a second rounding to any
/// format of at most 51 bits of precision equals a single correct rounding.
pub fn i64_to_f64_odd(x: i64) -> f64 {
    let u = x.unsigned_abs();
    if u <= (1u64 << 53) {
        return x as f64;
    }
    let s = 64 - u.leading_zeros() as i32 - 53;
    let mut m = u >> s;
    if u & ((1u64 << s) - 1) != 0 {
        m |= 1;
    }
    let v = m as f64 * pow2(s);
    if x < 0 {
        -v
    } else {
        v
    }
}

/// Rounds an f32 to an f16 (ties to even).
#[inline]
pub fn f32_to_f16(x: f32) -> f16 {
    f16::from_f32(x)
}

/// Rounds an f32 to a bf16 (ties to even).
#[inline]
pub fn f32_to_bf16(x: f32) -> bf16 {
    bf16::from_f32(x)
}

/// Rounds an f64 to an f16 in one step.
#[inline]
pub fn f64_to_f16(x: f64) -> f16 {
    f16::from_f64(round_to(x, DType::F16))
}

/// Rounds an f64 to a bf16 in one step.
#[inline]
pub fn f64_to_bf16(x: f64) -> bf16 {
    bf16::from_f64(round_to(x, DType::BF16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    /// A small deterministic generator for the randomized checks.
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state ^ (*state >> 29)
    }

    #[test]
    fn bf16_ties_and_overflow() {
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even gives 1.
        assert_eq!(round_to(1.0 + pow2(-8), BF16), 1.0);
        // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even).
        assert_eq!(round_to(1.0 + 3.0 * pow2(-8), BF16), 1.0 + pow2(-6));
        // Just above the tie rounds up.
        assert_eq!(round_to(1.0 + pow2(-8) + pow2(-30), BF16), 1.0 + pow2(-7));
        let max = (2.0 - pow2(-7)) * pow2(127);
        assert_eq!(round_to(max, BF16), max);
        // max + half ulp is a tie whose even neighbour is 2^128: overflow to inf.
        assert_eq!(round_to(max + pow2(127 - 8), BF16), f64::INFINITY);
        assert_eq!(round_to(max + pow2(127 - 9), BF16), max);
        assert_eq!(round_to(-1e39, BF16), f64::NEG_INFINITY);
        assert!(round_to(f64::NAN, BF16).is_nan());
        // Smallest bf16 subnormal is 2^-133; half of it ties to 0, a bit more rounds up.
        assert_eq!(round_to(pow2(-134), BF16), 0.0);
        assert_eq!(round_to(pow2(-134) * 1.5, BF16), pow2(-133));
        assert_eq!(round_to(3.0 * pow2(-134), BF16), 2.0 * pow2(-133));
        assert!(round_to(-pow2(-140), BF16).is_sign_negative());
    }

    #[test]
    fn f16_edges() {
        assert_eq!(round_to(65504.0, F16), 65504.0);
        assert_eq!(round_to(65519.99, F16), 65504.0);
        assert_eq!(round_to(65520.0, F16), f64::INFINITY);
        assert_eq!(round_to(pow2(-24), F16), pow2(-24));
        assert_eq!(round_to(pow2(-25), F16), 0.0);
        assert_eq!(round_to(pow2(-25) * 1.0001, F16), pow2(-24));
        assert_eq!(round_to(1.0 + pow2(-11), F16), 1.0);
        assert_eq!(round_to(1.0 + 3.0 * pow2(-11), F16), 1.0 + pow2(-9));
        assert_eq!(round_to(0.1, F16), f64::from(f16::from_f64(0.1).to_f32()));
    }

    #[test]
    fn fp8_saturation_and_nan() {
        assert_eq!(round_to(448.0, F8E4M3), 448.0);
        assert_eq!(round_to(464.0, F8E4M3), 448.0);
        assert_eq!(round_to(1e9, F8E4M3), 448.0);
        assert_eq!(round_to(f64::INFINITY, F8E4M3), 448.0);
        assert_eq!(round_to(f64::NEG_INFINITY, F8E4M3), -448.0);
        assert_eq!(round_to(-1e9, F8E5M2), -57344.0);
        assert_eq!(round_to(61440.0, F8E5M2), 57344.0);
        assert!(round_to(f64::NAN, F8E4M3).is_nan());
        // e4m3: 1.0625 is the tie between 1.0 and 1.125 -> 1.0; 1.1875 -> 1.25.
        assert_eq!(round_to(1.0625, F8E4M3), 1.0);
        assert_eq!(round_to(1.1875, F8E4M3), 1.25);
        // e4m3 subnormals: quantum 2^-9.
        assert_eq!(round_to(pow2(-9), F8E4M3), pow2(-9));
        assert_eq!(round_to(pow2(-10), F8E4M3), 0.0);
        assert_eq!(round_to(3.0 * pow2(-10), F8E4M3), 2.0 * pow2(-9));
        // e5m2: 1.125 ties to 1.0, 1.375 ties to 1.5.
        assert_eq!(round_to(1.125, F8E5M2), 1.0);
        assert_eq!(round_to(1.375, F8E5M2), 1.5);
        assert_eq!(round_to(pow2(-16), F8E5M2), pow2(-16));
        assert_eq!(round_to(pow2(-17), F8E5M2), 0.0);
    }

    #[test]
    fn fp8_encode_decode_roundtrip() {
        for d in [F8E4M3, F8E5M2] {
            let table = fp8_table(d);
            let mut finite = 0;
            for b in 0..=255u8 {
                let v = table[usize::from(b)];
                if v.is_nan() {
                    continue;
                }
                if v.is_infinite() {
                    // e5m2 inf saturates on encode.
                    assert_eq!(d, F8E5M2);
                    continue;
                }
                finite += 1;
                let back = f64_to_fp8(f64::from(v), d);
                assert_eq!(back, b, "{d} byte {b:#x} value {v}");
                assert_eq!(round_to(f64::from(v), d), f64::from(v));
            }
            // e4m3fn: 254 finite codes (2 NaN); e5m2: 256 - 2 inf - 6 NaN.
            assert_eq!(finite, if d == F8E4M3 { 254 } else { 248 });
        }
        assert_eq!(fp8_to_f32(0x7e, F8E4M3), 448.0);
        assert!(fp8_to_f32(0x7f, F8E4M3).is_nan());
        assert!(fp8_to_f32(0xff, F8E4M3).is_nan());
        assert_eq!(fp8_to_f32(0x7b, F8E5M2), 57344.0);
        assert_eq!(fp8_to_f32(0x7c, F8E5M2), f32::INFINITY);
        assert_eq!(fp8_to_f32(0x01, F8E4M3), 2f32.powi(-9));
        assert_eq!(fp8_to_f32(0x01, F8E5M2), 2f32.powi(-16));
        assert_eq!(f64_to_fp8(f64::NAN, F8E4M3), 0x7f);
        assert_eq!(f64_to_fp8(1e6, F8E4M3), 0x7e);
        assert_eq!(f64_to_fp8(-1e6, F8E5M2), 0xfb);
        assert_eq!(f64_to_fp8(-0.0, F8E5M2), 0x80);
    }

    #[test]
    fn tf32_fast_path_matches_definition() {
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-45,
            f32::INFINITY,
            1.0 + 2f32.powi(-11),
            1.0 + 3.0 * 2f32.powi(-11),
        ];
        let mut s = 1u64;
        let randoms = (0..200_000).map(|_| f32::from_bits(lcg(&mut s) as u32));
        for x in specials.into_iter().chain(randoms) {
            let fast = f32_to_tf32(x);
            let exact = round_to(f64::from(x), TF32);
            if x.is_nan() {
                assert!(fast.is_nan());
            } else {
                assert_eq!(f64::from(fast), exact, "{x:e}");
            }
        }
        assert_eq!(f32_to_tf32(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(f32_to_tf32(f32::MAX), f32::INFINITY);
    }

    #[test]
    fn half_fast_paths_match_definition() {
        let mut s = 7u64;
        for _ in 0..200_000 {
            let x = f32::from_bits(lcg(&mut s) as u32);
            let b = f32_to_bf16(x).to_f64();
            let h = f32_to_f16(x).to_f64();
            if x.is_nan() {
                assert!(b.is_nan() && h.is_nan());
                continue;
            }
            assert_eq!(b, round_to(f64::from(x), BF16), "bf16 {x:e}");
            assert_eq!(h, round_to(f64::from(x), F16), "f16 {x:e}");
        }
        // Direct f64 rounding avoids double rounding through f32: 1 + 2^-8 + 2^-40 must round up
        // in bf16, but rounds to exactly the tie 1 + 2^-8 in f32 first.
        let x = 1.0 + pow2(-8) + pow2(-40);
        assert_eq!(f64_to_bf16(x).to_f64(), 1.0 + pow2(-7));
        assert_eq!(f32_to_bf16(x as f32).to_f64(), 1.0);
    }

    #[test]
    fn f32_rounding_is_rust_as() {
        let mut s = 3u64;
        for _ in 0..100_000 {
            let x = f64::from_bits(lcg(&mut s));
            if x.is_nan() {
                continue;
            }
            assert_eq!(round_to(x, F32), f64::from(x as f32), "{x:e}");
        }
    }

    #[test]
    fn int_to_float_single_rounding() {
        assert_eq!(i64_to_f64_odd(5), 5.0);
        assert_eq!(i64_to_f64_odd(-(1 << 53)), -(pow2(53)));
        // 2^60 + 2^52 + 1: exact tie for bf16 would be wrong; rounding to odd keeps the sticky bit.
        let x: i64 = (1 << 60) + (1 << 52) + 1;
        assert_eq!(round_to(i64_to_f64_odd(x), BF16), pow2(60) + pow2(53));
        assert_eq!(round_to(i64_to_f64_odd(i64::MIN), BF16), -pow2(63));
        assert_eq!(round_to(i64_to_f64_odd(i64::MAX), F32), pow2(63));
    }
}
