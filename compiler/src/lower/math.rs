//! Math functions as instruction sequences on f32 (and f64) registers: the one place that
//! knows how `exp`, `gelu`, `pow`, … become PTX (`ex2.approx`, polynomials, selects).

use crate::target::builder::{fimm, imm};
use crate::target::{BinOp, Cmp, KernelBuilder, Op as TOp, Operand, Reg, Rnd, Ty, UnOp};

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
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let t = b.mul(Ty::F64, x, Operand::f64(std::f64::consts::LOG2_E));
    let k = b.cvt(Ty::F64, Ty::F64, Some(Rnd::Rni), t);
    let k = b.bin(BinOp::Max, Ty::F64, k, Operand::f64(-1100.0));
    let k = b.bin(BinOp::Min, Ty::F64, k, Operand::f64(1100.0));
    let nk = b.unary(UnOp::Neg, Ty::F64, k);
    let r = b.fma(Ty::F64, nk, Operand::f64(LN2_HI), x);
    let r = b.fma(Ty::F64, nk, Operand::f64(LN2_LO), r);
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

/// The same 64 bits in a register of type `to` (`f64` ↔ `b64`).
fn reinterpret(b: &mut KernelBuilder, to: Ty, x: Reg) -> Reg {
    let r = b.reg(to);
    b.push(TOp::Mov {
        ty: Ty::B64,
        dst: r,
        src: x.into(),
    });
    r
}

/// `ln x` in fp64: subnormals scaled by 2^54; `x = 2^e · m` with `m` in [√½, √2) from the
/// bits; `ln m = 2·atanh(s)`, `s = (m − 1)/(m + 1)` (|s| ≤ 0.172), by its odd series to s^23
/// (truncation below 2^-55 relative); `e·ln 2` added with ln 2 split in two. 0 gives −inf, a
/// negative or NaN argument NaN, +inf +inf. Within about 2 ulp (`tests/golden/lower_f64_math_emu`).
pub(crate) fn log_f64(b: &mut KernelBuilder, x: Reg) -> Reg {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
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
    let f = b.sub(Ty::F64, m, Operand::f64(1.0));
    let d = b.add(Ty::F64, m, Operand::f64(1.0));
    let s = b.bin(BinOp::Div, Ty::F64, f, d);
    let z = b.mul(Ty::F64, s, s);
    let mut p = b.mov(Ty::F64, Operand::f64(1.0 / 23.0));
    for k in (0..11).rev() {
        p = b.fma(Ty::F64, p, z, Operand::f64(1.0 / (2 * k + 1) as f64));
    }
    let s2 = b.add(Ty::F64, s, s);
    let lm = b.mul(Ty::F64, s2, p);
    let lo = b.fma(Ty::F64, ef, Operand::f64(LN2_LO), lm);
    let r = b.fma(Ty::F64, ef, Operand::f64(LN2_HI), lo);
    let inf = b.setp(Cmp::Eq, Ty::F64, x, Operand::f64(f64::INFINITY));
    let r = b.selp(Ty::F64, Operand::f64(f64::INFINITY), r, inf);
    let zero = b.setp(Cmp::Eq, Ty::F64, x, Operand::f64(0.0));
    let r = b.selp(Ty::F64, Operand::f64(f64::NEG_INFINITY), r, zero);
    let neg = b.setp(Cmp::Lt, Ty::F64, x, Operand::f64(0.0));
    let nan = b.setp(Cmp::Nan, Ty::F64, x, x);
    let bad = b.bin(BinOp::Or, Ty::Pred, neg, nan);
    b.selp(Ty::F64, Operand::f64(f64::NAN), r, bad)
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

/// `x ** y` in f32 with NumPy's rules: 2^(y·log2|x|); a negative base gives NaN unless `y` is
/// an integer (then the sign of (−1)^y); `x ** 0` and `1 ** y` are 1; `0 ** y` is 0 for y > 0
/// and inf for y < 0. ex2/lg2 are the hardware's approximations (2^-22 relative error each),
/// so the result is within a few ulps of the correctly rounded power for moderate exponents.
pub(crate) fn pow_f32(b: &mut KernelBuilder, x: Reg, y: Reg) -> Reg {
    let ax = b.unary(UnOp::Abs, Ty::F32, x);
    let l = b.unary(UnOp::Lg2Approx, Ty::F32, ax);
    let t = b.mul(Ty::F32, y, l);
    let r = b.unary(UnOp::Ex2Approx, Ty::F32, t);
    let yi = b.cvt(Ty::F32, Ty::F32, Some(Rnd::Rni), y);
    let is_int = b.setp(Cmp::Eq, Ty::F32, yi, y);
    let half = b.mul(Ty::F32, y, fimm(0.5));
    let hi = b.cvt(Ty::F32, Ty::F32, Some(Rnd::Rni), half);
    let even = b.setp(Cmp::Eq, Ty::F32, hi, half);
    let nr = b.unary(UnOp::Neg, Ty::F32, r);
    let signed = b.selp(Ty::F32, r, nr, even);
    let neg_int = b.selp(Ty::F32, signed, fimm(f32::NAN), is_int);
    let neg = b.setp(Cmp::Lt, Ty::F32, x, fimm(0.0));
    let r = b.selp(Ty::F32, neg_int, r, neg);
    let y0 = b.setp(Cmp::Eq, Ty::F32, y, fimm(0.0));
    let x1 = b.setp(Cmp::Eq, Ty::F32, x, fimm(1.0));
    let one = b.bin(BinOp::Or, Ty::Pred, y0, x1);
    b.selp(Ty::F32, fimm(1.0), r, one)
}
