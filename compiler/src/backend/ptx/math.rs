//! Math functions as instruction sequences on f32 (and f64) registers: the one place that
//! knows how `exp`, `gelu`, `pow`, … become PTX (`ex2.approx`, polynomials, selects).

use crate::backend::ptx::builder::{fimm, imm};
use crate::backend::ptx::{BinOp, Cmp, KernelBuilder, Op as TOp, Operand, Reg, Rnd, Ty, UnOp};

pub(crate) const LOG2E: f32 = std::f32::consts::LOG2_E;

pub(crate) fn exp(b: &mut KernelBuilder, x: Reg) -> Reg {
    let t = b.mul(Ty::F32, x, fimm(LOG2E));
    b.unary(UnOp::Ex2Approx, Ty::F32, t)
}

pub(crate) fn sigmoid(b: &mut KernelBuilder, x: Reg) -> Reg {
    let t = b.mul(Ty::F32, x, fimm(-LOG2E));
    let e = b.unary(UnOp::Ex2Approx, Ty::F32, t);
    let d = b.add(Ty::F32, e, fimm(1.0));
    b.unary(UnOp::Rcp, Ty::F32, d)
}

/// `0.5·x·(1 + erf(x/√2))` with erf by Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7).
pub(crate) fn gelu(b: &mut KernelBuilder, x: Reg) -> Reg {
    let ax = b.unary(UnOp::Abs, Ty::F32, x);
    let z = b.mul(Ty::F32, ax, fimm(std::f32::consts::FRAC_1_SQRT_2));
    let d = b.fma(Ty::F32, z, fimm(0.327_591_1), fimm(1.0));
    let t = b.unary(UnOp::Rcp, Ty::F32, d);
    let mut p = b.mov(Ty::F32, fimm(1.061_405_4));
    for c in [-1.453_152_1f32, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
        p = b.fma(Ty::F32, p, t, fimm(c));
    }
    p = b.mul(Ty::F32, p, t);
    let z2 = b.mul(Ty::F32, z, z);
    let ze = b.mul(Ty::F32, z2, fimm(-LOG2E));
    let e = b.unary(UnOp::Ex2Approx, Ty::F32, ze);
    let pe = b.mul(Ty::F32, p, e);
    let erf = b.sub(Ty::F32, fimm(1.0), pe);
    let nerf = b.unary(UnOp::Neg, Ty::F32, erf);
    let neg = b.setp(Cmp::Lt, Ty::F32, x, fimm(0.0));
    let s = b.selp(Ty::F32, nerf, erf, neg);
    let h = b.fma(Ty::F32, s, fimm(0.5), fimm(0.5));
    b.mul(Ty::F32, x, h)
}

/// `e^x` in fp64: `x = k·ln2 + r` (k = rint(x·log2 e), ln2 split in two for an exact reduction,
/// |r| ≤ ln2/2), `e^r` by its Taylor polynomial to degree 13 (truncation error below 2^-60
/// relative), scaled by 2^k as two powers of two built from their exponent bits (so that
/// results near the subnormal range are scaled in range). Overflow gives inf, underflow 0,
/// NaN stays NaN.
pub(crate) fn exp_f64(b: &mut KernelBuilder, x: Reg) -> Reg {
    exp_dd(b, x, None)
}

/// `e^(x + lo)` for a double-double argument (`lo` tiny beside `x`): [`exp_f64`] with `lo`
/// added to the reduced argument, so that `pow` and `erf` keep the bits of `y·ln x` and `−z²`
/// that one f64 would round away.
fn exp_dd(b: &mut KernelBuilder, x: Reg, lo: Option<Reg>) -> Reg {
    let t = b.mul(Ty::F64, x, Operand::f64(std::f64::consts::LOG2_E));
    let k = b.cvt(Ty::F64, Ty::F64, Some(Rnd::Rni), t);
    let k = b.bin(BinOp::Max, Ty::F64, k, Operand::f64(-1100.0));
    let k = b.bin(BinOp::Min, Ty::F64, k, Operand::f64(1100.0));
    let nk = b.unary(UnOp::Neg, Ty::F64, k);
    let r = b.fma(Ty::F64, nk, Operand::f64(LN2_HI), x);
    let mut r = b.fma(Ty::F64, nk, Operand::f64(LN2_LO), r);
    if let Some(lo) = lo {
        r = b.add(Ty::F64, r, lo);
    }
    let mut fact = [1.0f64; 14];
    for i in 1..14 {
        fact[i] = fact[i - 1] * i as f64;
    }
    let mut p = b.mov(Ty::F64, Operand::f64(1.0 / fact[13]));
    for i in (0..13).rev() {
        p = b.fma(Ty::F64, p, r, Operand::f64(1.0 / fact[i]));
    }
    let half = b.mul(Ty::F64, k, Operand::f64(0.5));
    let k1 = b.cvt(Ty::F64, Ty::F64, Some(Rnd::Rmi), half);
    let k2 = b.sub(Ty::F64, k, k1);
    let mut res = p;
    for kk in [k1, k2] {
        let ki = b.cvt(Ty::S64, Ty::F64, Some(Rnd::Rzi), kk);
        let e = b.add(Ty::S64, ki, imm(1023));
        let bits = b.bin(BinOp::Shl, Ty::B64, e, imm(52));
        let s = b.reg(Ty::F64);
        b.push(TOp::Mov {
            ty: Ty::B64,
            dst: s,
            src: bits.into(),
        });
        res = b.mul(Ty::F64, res, s);
    }
    let big = b.setp(Cmp::Gt, Ty::F64, x, Operand::f64(709.8));
    let res = b.selp(Ty::F64, Operand::f64(f64::INFINITY), res, big);
    let small = b.setp(Cmp::Lt, Ty::F64, x, Operand::f64(-745.2));
    b.selp(Ty::F64, Operand::f64(0.0), res, small)
}

/// The float immediate `v` of type `ty` (f32 or f64).
fn fconst(ty: Ty, v: f64) -> Operand {
    if ty == Ty::F64 {
        Operand::f64(v)
    } else {
        fimm(v as f32)
    }
}

/// The same bits in a register of type `to` (`f64` ↔ `b64`, `f32` ↔ `b32`).
fn reinterpret(b: &mut KernelBuilder, to: Ty, x: Reg) -> Reg {
    let r = b.reg(to);
    b.push(TOp::Mov {
        ty: if to.bits() == 64 { Ty::B64 } else { Ty::B32 },
        dst: r,
        src: x.into(),
    });
    r
}

/// `Σ_{k=lo}^{11} z^(k−lo) / (2k + 1)` in fp64 by Horner: the series of `atanh(s)/s` in
/// `z = s²` (from its first term, `lo = 0`, or from its second, `lo = 1`).
fn atanh_series(b: &mut KernelBuilder, z: Reg, lo: u32) -> Reg {
    let mut p = b.mov(Ty::F64, Operand::f64(1.0 / 23.0));
    for k in (lo..11).rev() {
        p = b.fma(Ty::F64, p, z, Operand::f64(1.0 / f64::from(2 * k + 1)));
    }
    p
}

/// `ln x` in fp64: subnormals scaled by 2^54; `x = 2^e · m` with `m` in [√½, √2) from the
/// bits; `ln m = 2·atanh(s)`, `s = (m − 1)/(m + 1)` (|s| ≤ 0.172), by its odd series to s^23
/// (truncation below 2^-55 relative); `e·ln 2` added with ln 2 split in two. 0 gives −inf, a
/// negative or NaN argument NaN, +inf +inf. Within about 2 ulp (`tests/golden/lower_f64_math_emu`).
pub(crate) fn log_f64(b: &mut KernelBuilder, x: Reg) -> Reg {
    let (ef, m) = log_reduce(b, x);
    let f = b.sub(Ty::F64, m, Operand::f64(1.0));
    let d = b.add(Ty::F64, m, Operand::f64(1.0));
    let s = b.bin(BinOp::Div, Ty::F64, f, d);
    let z = b.mul(Ty::F64, s, s);
    let p = atanh_series(b, z, 0);
    let s2 = b.add(Ty::F64, s, s);
    let lm = b.mul(Ty::F64, s2, p);
    let lo = b.fma(Ty::F64, ef, Operand::f64(LN2_LO), lm);
    let r = b.fma(Ty::F64, ef, Operand::f64(LN2_HI), lo);
    log_specials(b, x, r)
}

const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// The argument reduction of `ln x`: (`e` as f64, `m`) with `x = 2^e · m`, `m` in [√½, √2)
/// (subnormals scaled by 2^54 first). Special values are fixed by [`log_specials`].
fn log_reduce(b: &mut KernelBuilder, x: Reg) -> (Reg, Reg) {
    let sub = b.setp(Cmp::Lt, Ty::F64, x, Operand::f64(f64::MIN_POSITIVE));
    let scaled = b.mul(Ty::F64, x, Operand::f64(2f64.powi(54)));
    let xs = b.selp(Ty::F64, scaled, x, sub);
    let eadj = b.selp(Ty::F64, Operand::f64(-54.0), Operand::f64(0.0), sub);
    let bits = reinterpret(b, Ty::B64, xs);
    let e = b.bin(BinOp::Shr, Ty::U64, bits, imm(52));
    let e = b.bin(BinOp::And, Ty::B64, e, imm(0x7ff));
    let mb = b.bin(BinOp::And, Ty::B64, bits, imm(0x000f_ffff_ffff_ffff));
    let mb = b.bin(BinOp::Or, Ty::B64, mb, imm(0x3ff0_0000_0000_0000));
    let m = reinterpret(b, Ty::F64, mb);
    let big = b.setp(Cmp::Gt, Ty::F64, m, Operand::f64(std::f64::consts::SQRT_2));
    let half = b.mul(Ty::F64, m, Operand::f64(0.5));
    let m = b.selp(Ty::F64, half, m, big);
    let ei = b.sub(Ty::S64, e, imm(1023));
    let ef = b.cvt(Ty::F64, Ty::S64, Some(Rnd::Rn), ei);
    let inc = b.selp(Ty::F64, Operand::f64(1.0), Operand::f64(0.0), big);
    let ef = b.add(Ty::F64, ef, inc);
    let ef = b.add(Ty::F64, ef, eadj);
    (ef, m)
}

/// `ln`'s special values over `r`: +inf for +inf, −inf for 0, NaN for negatives and NaN.
fn log_specials(b: &mut KernelBuilder, x: Reg, r: Reg) -> Reg {
    let inf = b.setp(Cmp::Eq, Ty::F64, x, Operand::f64(f64::INFINITY));
    let r = b.selp(Ty::F64, Operand::f64(f64::INFINITY), r, inf);
    let zero = b.setp(Cmp::Eq, Ty::F64, x, Operand::f64(0.0));
    let r = b.selp(Ty::F64, Operand::f64(f64::NEG_INFINITY), r, zero);
    let neg = b.setp(Cmp::Lt, Ty::F64, x, Operand::f64(0.0));
    let nan = b.setp(Cmp::Nan, Ty::F64, x, x);
    let bad = b.bin(BinOp::Or, Ty::Pred, neg, nan);
    b.selp(Ty::F64, Operand::f64(f64::NAN), r, bad)
}

/// `ln x` as a double-double `(hi, lo)`, about 2^-100 relative apart from the special
/// values (which are `hi`, with `lo` finite): `s` carries the rounding error of its division
/// (`m + 1` split exactly, the residual by `fma`), `2s` and `e·ln2_hi` (exact products) are
/// summed without rounding away the low bits, and the series tail (under 1% of `2s`) is added
/// to the low part. Used by `pow`, where `y·ln x` needs the low bits (plain `ln` keeps the
/// shorter [`log_f64`]: fewer registers).
fn log_dd(b: &mut KernelBuilder, x: Reg) -> (Reg, Reg) {
    let (ef, m) = log_reduce(b, x);
    // f = m − 1 is exact (Sterbenz); d + dl = m + 1 exactly.
    let f = b.sub(Ty::F64, m, Operand::f64(1.0));
    let d = b.add(Ty::F64, m, Operand::f64(1.0));
    let d1 = b.sub(Ty::F64, d, Operand::f64(1.0));
    let dl = b.sub(Ty::F64, m, d1);
    let s = b.bin(BinOp::Div, Ty::F64, f, d);
    let ns = b.unary(UnOp::Neg, Ty::F64, s);
    let res = b.fma(Ty::F64, ns, d, f);
    let res = b.fma(Ty::F64, ns, dl, res);
    let sl = b.bin(BinOp::Div, Ty::F64, res, d);
    let z = b.mul(Ty::F64, s, s);
    let q = atanh_series(b, z, 1);
    let s2 = b.add(Ty::F64, s, s);
    let s2z = b.mul(Ty::F64, s2, z);
    let tail = b.mul(Ty::F64, s2z, q);
    let hi0 = b.mul(Ty::F64, ef, Operand::f64(LN2_HI));
    let h = b.add(Ty::F64, hi0, s2);
    let back = b.sub(Ty::F64, h, hi0);
    let e1 = b.sub(Ty::F64, s2, back);
    let lo = b.fma(Ty::F64, ef, Operand::f64(LN2_LO), tail);
    let lo = b.fma(Ty::F64, sl, Operand::f64(2.0), lo);
    let lo = b.add(Ty::F64, lo, e1);
    let hi = b.add(Ty::F64, h, lo);
    let back = b.sub(Ty::F64, hi, h);
    let lo = b.sub(Ty::F64, lo, back);
    (log_specials(b, x, hi), lo)
}

/// `x ** y` in fp64 with C's `pow` rules: `e^(y·ln|x|)` with `ln|x|` a double-double
/// ([`log_dd`]), the product kept exact to about 2^-100 by `fma`, and [`exp_dd`] of both
/// parts, so the result is within a few ulps even where `y·ln|x|` is near ±700; the special
/// cases are [`pow_rules`].
pub(crate) fn pow_f64(b: &mut KernelBuilder, x: Reg, y: Reg) -> Reg {
    let ax = b.unary(UnOp::Abs, Ty::F64, x);
    let (h, l) = log_dd(b, ax);
    let ph = b.mul(Ty::F64, y, h);
    let nph = b.unary(UnOp::Neg, Ty::F64, ph);
    let pl = b.fma(Ty::F64, y, h, nph);
    let pl = b.fma(Ty::F64, y, l, pl);
    let r = exp_dd(b, ph, Some(pl));
    pow_rules(b, Ty::F64, x, y, r)
}

/// erfc(z)·e^(z²) for z in [1, 6] as a polynomial in `u = (3/(3+z) − 13/24)·24/5` (u in
/// [−1, 1]), highest degree first: the Chebyshev interpolant converted to monomials by
/// `scripts/erf-coeffs.py` (worst relative error 3.9e-16 with f64 Horner steps).
pub(crate) const ERFCX_F64: [f64; 16] = [
    -4.505_934_410_103_922_4e-15,
    6.044_068_318_449_643e-12,
    -6.029_960_764_165_142e-12,
    -2.570_050_424_648_292_3e-10,
    2.637_879_608_826_793_5e-10,
    1.133_933_706_128_055_7e-8,
    4.526_722_358_033_927e-9,
    -5.541_273_107_090_44e-7,
    -2.425_557_481_167_593_5e-6,
    1.956_358_319_809_952_6e-5,
    3.316_029_605_784_682e-4,
    2.479_314_697_086_200_2e-3,
    1.271_314_769_569_199_5e-2,
    4.969_844_540_339_414e-2,
    1.543_611_742_943_691_9e-1,
    2.079_832_913_334_288_5e-1,
];

/// The same for f32 (9 terms, worst relative error 1.2e-7 with f32 Horner steps).
const ERFCX_F32: [f32; 9] = [
    -5.268_047_4e-7,
    -2.414_492_7e-6,
    1.953_997e-5,
    3.315_944_3e-4,
    2.479_323_2e-3,
    1.271_315e-2,
    4.969_844_6e-2,
    1.543_611_7e-1,
    2.079_832_9e-1,
];

/// `erf x`: for |x| < 1 the Maclaurin series `(2/√π)·x·Σ (−x²)^n / (n!·(2n+1))` (to n = 18 in
/// f64, 10 in f32: below the unit roundoff, so small arguments keep their relative accuracy
/// and −0 stays −0); for |x| ≥ 1 `±(1 − e^(−z²)·P(u))` with [`ERFCX_F64`]/[`ERFCX_F32`],
/// `z = min(|x|, 6)` (erf is 1 in both types beyond) and `e^(−z²)` of the exact square (f64:
/// a double-double through [`exp_dd`]; f32: `ex2.approx`). NaN stays NaN. f64 within a few
/// ulps of 1 in absolute terms (`tests/golden/lower_f64_math_emu`).
pub(crate) fn erf(b: &mut KernelBuilder, ty: Ty, x: Reg) -> Reg {
    let f64_ = ty == Ty::F64;
    let c = |v: f64| fconst(ty, v);
    let z = b.unary(UnOp::Abs, ty, x);
    let w = b.mul(ty, z, z);
    let terms = if f64_ { 18 } else { 10 };
    let coef = |n: usize| {
        let fact: f64 = (1..=n).map(|i| i as f64).product();
        let s = if n.is_multiple_of(2) { 1.0 } else { -1.0 };
        s / (fact * (2 * n + 1) as f64)
    };
    let mut p = b.mov(ty, c(coef(terms)));
    for n in (0..terms).rev() {
        p = b.fma(ty, p, w, c(coef(n)));
    }
    let p = b.mul(ty, p, c(std::f64::consts::FRAC_2_SQRT_PI));
    let small = b.mul(ty, x, p);
    let zc = b.bin(BinOp::Min, ty, z, c(6.0));
    let d = b.add(ty, zc, c(3.0));
    let t = b.bin(BinOp::Div, ty, c(3.0), d);
    let u = b.fma(ty, t, c(4.8), c(-2.6));
    let coeffs: Vec<f64> = if f64_ {
        ERFCX_F64.to_vec()
    } else {
        ERFCX_F32.iter().map(|&v| f64::from(v)).collect()
    };
    let mut q = b.mov(ty, c(coeffs[0]));
    for &k in &coeffs[1..] {
        q = b.fma(ty, q, u, c(k));
    }
    let e = if f64_ {
        let hz = b.mul(ty, zc, zc);
        let nhz = b.unary(UnOp::Neg, ty, hz);
        let nz = b.unary(UnOp::Neg, ty, zc);
        let nlz = b.fma(ty, nz, zc, hz);
        exp_dd(b, nhz, Some(nlz))
    } else {
        let w2 = b.mul(ty, zc, zc);
        let a = b.mul(ty, w2, fimm(-LOG2E));
        b.unary(UnOp::Ex2Approx, ty, a)
    };
    let erfc = b.mul(ty, e, q);
    let large = b.sub(ty, c(1.0), erfc);
    let nlarge = b.unary(UnOp::Neg, ty, large);
    let neg = b.setp(Cmp::Lt, ty, x, c(0.0));
    let large = b.selp(ty, nlarge, large, neg);
    let is_small = b.setp(Cmp::Lt, ty, z, c(1.0));
    let r = b.selp(ty, small, large, is_small);
    let nan = b.setp(Cmp::Nan, ty, x, x);
    b.selp(ty, x, r, nan)
}

/// `tanh x` in fp64: for |x| < 0.625, `sinh|x|` by its series to |x|^17 (below 2^-58
/// relative) and `sinh / √(1 + sinh²)`, with no cancellation near 0; beyond,
/// `1 − 2/(e^2|x| + 1)` ([`exp_f64`]; 1 once e^2|x| overflows). The sign is x's; NaN stays NaN.
pub(crate) fn tanh_f64(b: &mut KernelBuilder, x: Reg) -> Reg {
    let ax = b.unary(UnOp::Abs, Ty::F64, x);
    let z = b.mul(Ty::F64, ax, ax);
    let mut fact = [1.0f64; 18];
    for i in 1..18 {
        fact[i] = fact[i - 1] * i as f64;
    }
    let mut p = b.mov(Ty::F64, Operand::f64(1.0 / fact[17]));
    for k in (0..8).rev() {
        p = b.fma(Ty::F64, p, z, Operand::f64(1.0 / fact[2 * k + 1]));
    }
    let sh = b.mul(Ty::F64, ax, p);
    let c2 = b.fma(Ty::F64, sh, sh, Operand::f64(1.0));
    let ch = b.unary(UnOp::Sqrt, Ty::F64, c2);
    let small = b.bin(BinOp::Div, Ty::F64, sh, ch);
    let two = b.add(Ty::F64, ax, ax);
    let t = exp_f64(b, two);
    let t1 = b.add(Ty::F64, t, Operand::f64(1.0));
    let q = b.bin(BinOp::Div, Ty::F64, Operand::f64(2.0), t1);
    let large = b.sub(Ty::F64, Operand::f64(1.0), q);
    let is_small = b.setp(Cmp::Lt, Ty::F64, ax, Operand::f64(0.625));
    let r = b.selp(Ty::F64, small, large, is_small);
    let nr = b.unary(UnOp::Neg, Ty::F64, r);
    let neg = b.setp(Cmp::Lt, Ty::F64, x, Operand::f64(0.0));
    b.selp(Ty::F64, nr, r, neg)
}

/// C's `pow` rules on `r = |x| ** y` (f32 or f64): a negative finite base gives NaN unless
/// `y` is an integer; a base with its sign bit set (−0 and −inf too) and an odd integer `y`
/// negates; `x ** 0`, `1 ** y` and `(±1) ** ±inf` are 1 (`0 ** y` is already 0 or inf).
fn pow_rules(b: &mut KernelBuilder, ty: Ty, x: Reg, y: Reg, r: Reg) -> Reg {
    let c = |v: f64| fconst(ty, v);
    let (bits_ty, sty) = if ty == Ty::F64 {
        (Ty::B64, Ty::S64)
    } else {
        (Ty::B32, Ty::S32)
    };
    let yi = b.cvt(ty, ty, Some(Rnd::Rni), y);
    let is_int = b.setp(Cmp::Eq, ty, yi, y);
    let half = b.mul(ty, y, c(0.5));
    let hi = b.cvt(ty, ty, Some(Rnd::Rni), half);
    let even = b.setp(Cmp::Eq, ty, hi, half);
    let nr = b.unary(UnOp::Neg, ty, r);
    let bits = reinterpret(b, bits_ty, x);
    let sign = b.setp(Cmp::Lt, sty, bits, imm(0));
    let odd = b.unary(UnOp::Not, Ty::Pred, even);
    let odd = b.bin(BinOp::And, Ty::Pred, odd, is_int);
    let flip = b.bin(BinOp::And, Ty::Pred, sign, odd);
    let r = b.selp(ty, nr, r, flip);
    let neg = b.setp(Cmp::Lt, ty, x, c(0.0));
    let fin = b.setp(Cmp::Gt, ty, x, c(f64::NEG_INFINITY));
    let neg = b.bin(BinOp::And, Ty::Pred, neg, fin);
    let not_int = b.unary(UnOp::Not, Ty::Pred, is_int);
    let bad = b.bin(BinOp::And, Ty::Pred, neg, not_int);
    let r = b.selp(ty, c(f64::NAN), r, bad);
    let y0 = b.setp(Cmp::Eq, ty, y, c(0.0));
    let x1 = b.setp(Cmp::Eq, ty, x, c(1.0));
    let ay = b.unary(UnOp::Abs, ty, y);
    let yinf = b.setp(Cmp::Eq, ty, ay, c(f64::INFINITY));
    let ax = b.unary(UnOp::Abs, ty, x);
    let ax1 = b.setp(Cmp::Eq, ty, ax, c(1.0));
    let unit = b.bin(BinOp::And, Ty::Pred, yinf, ax1);
    let one = b.bin(BinOp::Or, Ty::Pred, y0, x1);
    let one = b.bin(BinOp::Or, Ty::Pred, one, unit);
    b.selp(ty, c(1.0), r, one)
}

/// `x ** y` in f32 with C's `pow` rules ([`pow_rules`]): 2^(y·log2|x|). ex2/lg2 are the
/// hardware's approximations (2^-22 relative error each), so the result is within a few ulps
/// of the correctly rounded power for moderate exponents.
pub(crate) fn pow_f32(b: &mut KernelBuilder, x: Reg, y: Reg) -> Reg {
    let ax = b.unary(UnOp::Abs, Ty::F32, x);
    let l = b.unary(UnOp::Lg2Approx, Ty::F32, ax);
    let t = b.mul(Ty::F32, y, l);
    let r = b.unary(UnOp::Ex2Approx, Ty::F32, t);
    pow_rules(b, Ty::F32, x, y, r)
}

/// π/2 as the sum of three f64 (the second and third are the next 53 bits and the rest),
/// for the reduction `x − k·π/2` by FMAs.
const PIO2: [f64; 3] = [
    std::f64::consts::FRAC_PI_2,
    6.123_233_995_736_766e-17,
    -1.497_384_904_859_169_8e-33,
];

/// `sin x` or (`cos`) `cos x`, computed in f64 (an f32 argument is widened and the result
/// rounded once): `x = k·π/2 + r` with `k = rint(x·2/π)` and `r` reduced by three FMAs
/// against [`PIO2`] (|r| ≤ π/4 + ε, absolute error near 2^-53 while |k| < 2^52); then the
/// Taylor series of `sin r` (to r^17) and `cos r` (to r^18), below 2^-54 relative on that
/// range, chosen and signed by `k mod 4` (`cos x = sin(x + π/2)`: quadrant `k + 1`).
/// NaN and ±inf give NaN; −0 keeps its sign in `sin`. Beyond |x| ≈ 2^52·π/2 the reduction
/// loses `k`'s low bits and the result is not the cpu's (libm reduces exactly at any size).
pub(crate) fn sin_cos(b: &mut KernelBuilder, ty: Ty, x: Reg, cos: bool) -> Reg {
    let d = Operand::f64;
    let xd = if ty == Ty::F64 {
        x
    } else {
        b.cvt(Ty::F64, ty, None, x)
    };
    let t = b.mul(Ty::F64, xd, d(std::f64::consts::FRAC_2_PI));
    let k = b.cvt(Ty::F64, Ty::F64, Some(Rnd::Rni), t);
    let nk = b.unary(UnOp::Neg, Ty::F64, k);
    let mut r = xd;
    for p in PIO2 {
        r = b.fma(Ty::F64, nk, d(p), r);
    }
    // k = 0 needs no reduction (and −0 − 0·π/2 would be +0)
    let k0 = b.setp(Cmp::Eq, Ty::F64, k, d(0.0));
    let r = b.selp(Ty::F64, xd, r, k0);
    let z = b.mul(Ty::F64, r, r);
    let fact = |n: u32| (1..=n).map(f64::from).product::<f64>();
    let sign = |n: u32| if n.is_multiple_of(2) { 1.0 } else { -1.0 };
    // sin r = r·Σ (−z)^n / (2n+1)!,  cos r = Σ (−z)^n / (2n)!
    let mut ps = b.mov(Ty::F64, d(sign(8) / fact(17)));
    for n in (0..8).rev() {
        ps = b.fma(Ty::F64, ps, z, d(sign(n) / fact(2 * n + 1)));
    }
    let s = b.mul(Ty::F64, ps, r);
    let mut c = b.mov(Ty::F64, d(sign(9) / fact(18)));
    for n in (0..9).rev() {
        c = b.fma(Ty::F64, c, z, d(sign(n) / fact(2 * n)));
    }
    // the quadrant: odd → the other series; 2 or 3 → negated
    let ki = b.cvt(Ty::S64, Ty::F64, Some(Rnd::Rzi), k);
    let q = if cos { b.add(Ty::S64, ki, imm(1)) } else { ki };
    let q = b.bin(BinOp::And, Ty::B64, q, imm(3));
    let odd_bit = b.bin(BinOp::And, Ty::B64, q, imm(1));
    let odd = b.setp(Cmp::Ne, Ty::S64, odd_bit, imm(0));
    let v = b.selp(Ty::F64, c, s, odd);
    let neg = b.setp(Cmp::Ge, Ty::S64, q, imm(2));
    let nv = b.unary(UnOp::Neg, Ty::F64, v);
    let res = b.selp(Ty::F64, nv, v, neg);
    if ty == Ty::F64 {
        res
    } else {
        b.cvt(ty, Ty::F64, Some(Rnd::Rn), res)
    }
}
