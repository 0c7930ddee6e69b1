//! The expansions: each math function as scalar Tile ops on f32 or f64 values (the dispatch
//! is `Em::func`; the one per-target step, an exact product, is `Em::two_prod_err`).

use super::{fc, Em, LN2_HI, LN2_LO, LOG2E};
use crate::scalar::{BinOp, Cmp, Rnd, Ty, UnOp};
use crate::tile::build::{dimm, fimm, imm};
use crate::tile::ir::Value;

impl Em<'_> {
    pub(super) fn sigmoid_f32(&mut self, x: Value) -> Value {
        let t = self.mul(Ty::F32, x, fimm(-LOG2E));
        let e = self.un(UnOp::Ex2Approx, Ty::F32, t);
        let d = self.add(Ty::F32, e, fimm(1.0));
        self.un(UnOp::Rcp, Ty::F32, d)
    }

    /// `0.5·x·(1 + erf(x/√2))` with erf by Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7).
    pub(super) fn gelu_f32(&mut self, x: Value) -> Value {
        let f = Ty::F32;
        let ax = self.un(UnOp::Abs, f, x);
        let z = self.mul(f, ax, fimm(std::f32::consts::FRAC_1_SQRT_2));
        let d = self.fma(f, z, fimm(0.327_591_1), fimm(1.0));
        let t = self.un(UnOp::Rcp, f, d);
        let mut p = self.mov(f, fimm(1.061_405_4));
        for c in [-1.453_152_1f32, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
            p = self.fma(f, p, t, fimm(c));
        }
        p = self.mul(f, p, t);
        let z2 = self.mul(f, z, z);
        let ze = self.mul(f, z2, fimm(-LOG2E));
        let e = self.un(UnOp::Ex2Approx, f, ze);
        let pe = self.mul(f, p, e);
        let erf = self.sub(f, fimm(1.0), pe);
        let nerf = self.un(UnOp::Neg, f, erf);
        let neg = self.cmp(Cmp::Lt, f, x, fimm(0.0));
        let s = self.sel(f, nerf, erf, neg);
        let h = self.fma(f, s, fimm(0.5), fimm(0.5));
        self.mul(f, x, h)
    }

    /// `e^(x + lo)` in fp64 (`lo` tiny beside `x`, so that `pow` and `erf` keep the bits of
    /// `y·ln x` and `−z²` one f64 would round away): `x = k·ln2 + r` (k = rint(x·log2 e), ln2
    /// split in two with `k·ln2_hi` exact, |r| ≤ ln2/2), `e^r` by its Taylor polynomial to
    /// degree 13 (truncation below 2^-60 relative), scaled by 2^k as two powers of two built
    /// from their exponent bits (so that results near the subnormal range are scaled in
    /// range). Overflow gives inf, underflow 0, NaN stays NaN.
    pub(super) fn exp_dd(&mut self, x: Value, lo: Option<Value>) -> Value {
        let f = Ty::F64;
        let t = self.mul(f, x, dimm(std::f64::consts::LOG2_E));
        let k = self.cvt(f, f, Some(Rnd::Rni), t);
        let k = self.bin(BinOp::Max, f, k, dimm(-1100.0));
        let k = self.bin(BinOp::Min, f, k, dimm(1100.0));
        let nk = self.un(UnOp::Neg, f, k);
        let r = self.fma(f, nk, dimm(LN2_HI), x);
        let mut r = self.fma(f, nk, dimm(LN2_LO), r);
        if let Some(lo) = lo {
            r = self.add(f, r, lo);
        }
        let mut fact = [1.0f64; 14];
        for i in 1..14 {
            fact[i] = fact[i - 1] * i as f64;
        }
        let mut p = self.mov(f, dimm(1.0 / fact[13]));
        for i in (0..13).rev() {
            p = self.fma(f, p, r, dimm(1.0 / fact[i]));
        }
        let half = self.mul(f, k, dimm(0.5));
        let k1 = self.cvt(f, f, Some(Rnd::Rmi), half);
        let k2 = self.sub(f, k, k1);
        let mut res = p;
        for kk in [k1, k2] {
            let ki = self.cvt(Ty::S64, f, Some(Rnd::Rzi), kk);
            let e = self.add(Ty::S64, ki, imm(1023));
            let bits = self.bin(BinOp::Shl, Ty::B64, e, imm(52));
            let s = self.bits(f, bits);
            res = self.mul(f, res, s);
        }
        let big = self.cmp(Cmp::Gt, f, x, dimm(709.8));
        let res = self.sel(f, dimm(f64::INFINITY), res, big);
        let small = self.cmp(Cmp::Lt, f, x, dimm(-745.2));
        self.sel(f, dimm(0.0), res, small)
    }

    /// `Σ_{k=lo}^{11} z^(k−lo) / (2k + 1)` by Horner: the series of `atanh(s)/s` in `z = s²`.
    pub(super) fn atanh_series(&mut self, z: Value, lo: u32) -> Value {
        let mut p = self.mov(Ty::F64, dimm(1.0 / 23.0));
        for k in (lo..11).rev() {
            p = self.fma(Ty::F64, p, z, dimm(1.0 / f64::from(2 * k + 1)));
        }
        p
    }

    /// `ln x` in fp64: subnormals scaled by 2^54; `x = 2^e · m` with `m` in [√½, √2) from the
    /// bits; `ln m = 2·atanh(s)`, `s = (m − 1)/(m + 1)` (|s| ≤ 0.172), by its odd series to
    /// s^23 (truncation below 2^-55 relative); `e·ln 2` added with ln 2 split in two. 0 gives
    /// −inf, a negative or NaN argument NaN, +inf +inf. Within about 2 ulp
    /// (`tests/golden/lower_f64_math_emu`).
    pub(super) fn log_f64(&mut self, x: Value) -> Value {
        let f = Ty::F64;
        let (ef, m) = self.log_reduce(x);
        let fm = self.sub(f, m, dimm(1.0));
        let d = self.add(f, m, dimm(1.0));
        let s = self.div(f, fm, d);
        let z = self.mul(f, s, s);
        let p = self.atanh_series(z, 0);
        let s2 = self.add(f, s, s);
        let lm = self.mul(f, s2, p);
        let lo = self.fma(f, ef, dimm(LN2_LO), lm);
        let r = self.fma(f, ef, dimm(LN2_HI), lo);
        self.log_specials(x, r)
    }

    /// The argument reduction of `ln x`: (`e` as f64, `m`) with `x = 2^e · m`, `m` in [√½, √2)
    /// (subnormals scaled by 2^54 first). Special values are fixed by `log_specials`.
    pub(super) fn log_reduce(&mut self, x: Value) -> (Value, Value) {
        let f = Ty::F64;
        let sub = self.cmp(Cmp::Lt, f, x, dimm(f64::MIN_POSITIVE));
        let scaled = self.mul(f, x, dimm(2f64.powi(54)));
        let xs = self.sel(f, scaled, x, sub);
        let eadj = self.sel(f, dimm(-54.0), dimm(0.0), sub);
        let bits = self.bits(Ty::B64, xs);
        let e = self.bin(BinOp::Shr, Ty::U64, bits, imm(52));
        let e = self.bin(BinOp::And, Ty::B64, e, imm(0x7ff));
        let mb = self.bin(BinOp::And, Ty::B64, bits, imm(0x000f_ffff_ffff_ffff));
        let mb = self.bin(BinOp::Or, Ty::B64, mb, imm(0x3ff0_0000_0000_0000));
        let m = self.bits(f, mb);
        let big = self.cmp(Cmp::Gt, f, m, dimm(std::f64::consts::SQRT_2));
        let half = self.mul(f, m, dimm(0.5));
        let m = self.sel(f, half, m, big);
        let ei = self.sub(Ty::S64, e, imm(1023));
        let ef = self.cvt(f, Ty::S64, Some(Rnd::Rn), ei);
        let inc = self.sel(f, dimm(1.0), dimm(0.0), big);
        let ef = self.add(f, ef, inc);
        let ef = self.add(f, ef, eadj);
        (ef, m)
    }

    /// `ln`'s special values over `r`: +inf for +inf, −inf for 0, NaN for negatives and NaN.
    pub(super) fn log_specials(&mut self, x: Value, r: Value) -> Value {
        let f = Ty::F64;
        let inf = self.cmp(Cmp::Eq, f, x, dimm(f64::INFINITY));
        let r = self.sel(f, dimm(f64::INFINITY), r, inf);
        let zero = self.cmp(Cmp::Eq, f, x, dimm(0.0));
        let r = self.sel(f, dimm(f64::NEG_INFINITY), r, zero);
        let neg = self.cmp(Cmp::Lt, f, x, dimm(0.0));
        let nan = self.cmp(Cmp::Nan, f, x, x);
        let bad = self.bin(BinOp::Or, Ty::Pred, neg, nan);
        self.sel(f, dimm(f64::NAN), r, bad)
    }

    /// `ln x` as a double-double `(hi, lo)`, about 2^-100 relative apart from the special
    /// values (which are `hi`, with `lo` finite): `s` carries the rounding error of its
    /// division (`m + 1` split exactly, the residual by an exact product), `2s` and
    /// `e·ln2_hi` (exact products) are summed without rounding away the low bits, and the
    /// series tail (under 1% of `2s`) is added to the low part. Used by `pow`, where `y·ln x`
    /// needs the low bits (plain `ln` keeps the shorter `log_f64`: fewer registers).
    pub(super) fn log_dd(&mut self, x: Value) -> (Value, Value) {
        let f = Ty::F64;
        let (ef, m) = self.log_reduce(x);
        // fm = m − 1 is exact (Sterbenz); d + dl = m + 1 exactly.
        let fm = self.sub(f, m, dimm(1.0));
        let d = self.add(f, m, dimm(1.0));
        let d1 = self.sub(f, d, dimm(1.0));
        let dl = self.sub(f, m, d1);
        let s = self.div(f, fm, d);
        let ns = self.un(UnOp::Neg, f, s);
        let res = if self.fused {
            self.fma(f, ns, d, fm)
        } else {
            // fm − s·d: s·d = p + e exactly, and fm − p is exact (p is within 2× of fm)
            let p = self.mul(f, s, d);
            let e = self.two_prod_err(f, s, d, p);
            let r = self.sub(f, fm, p);
            self.sub(f, r, e)
        };
        let res = self.fma(f, ns, dl, res);
        let sl = self.div(f, res, d);
        let z = self.mul(f, s, s);
        let q = self.atanh_series(z, 1);
        let s2 = self.add(f, s, s);
        let s2z = self.mul(f, s2, z);
        let tail = self.mul(f, s2z, q);
        let hi0 = self.mul(f, ef, dimm(LN2_HI));
        let h = self.add(f, hi0, s2);
        let back = self.sub(f, h, hi0);
        let e1 = self.sub(f, s2, back);
        let lo = self.fma(f, ef, dimm(LN2_LO), tail);
        let lo = self.fma(f, sl, dimm(2.0), lo);
        let lo = self.add(f, lo, e1);
        let hi = self.add(f, h, lo);
        let back = self.sub(f, hi, h);
        let lo = self.sub(f, lo, back);
        (self.log_specials(x, hi), lo)
    }

    /// `x ** y` in fp64 with C's `pow` rules: `e^(y·ln|x|)` with `ln|x|` a double-double
    /// (`log_dd`), the product kept exact to about 2^-100, and `exp_dd` of both parts, so
    /// the result is within a few ulps even where `y·ln|x|` is near ±700; the special cases
    /// are `pow_rules`.
    pub(super) fn pow_f64(&mut self, x: Value, y: Value) -> Value {
        let f = Ty::F64;
        let ax = self.un(UnOp::Abs, f, x);
        let (h, l) = self.log_dd(ax);
        let ph = self.mul(f, y, h);
        let pl = self.two_prod_err(f, y, h, ph);
        let pl = self.fma(f, y, l, pl);
        let r = self.exp_dd(ph, Some(pl));
        self.pow_rules(f, x, y, r)
    }

    /// C's `pow` rules on `r = |x| ** y` (f32 or f64): a negative finite base gives NaN
    /// unless `y` is an integer; a base with its sign bit set (−0 and −inf too) and an odd
    /// integer `y` negates; `x ** 0`, `1 ** y` and `(±1) ** ±inf` are 1 (`0 ** y` is already 0
    /// or inf: `ln 0` is −inf).
    pub(super) fn pow_rules(&mut self, ty: Ty, x: Value, y: Value, r: Value) -> Value {
        let c = |v: f64| fc(ty, v);
        let (bits_ty, sty) = if ty == Ty::F64 {
            (Ty::B64, Ty::S64)
        } else {
            (Ty::B32, Ty::S32)
        };
        let yi = self.cvt(ty, ty, Some(Rnd::Rni), y);
        let is_int = self.cmp(Cmp::Eq, ty, yi, y);
        let half = self.mul(ty, y, c(0.5));
        let hi = self.cvt(ty, ty, Some(Rnd::Rni), half);
        let even = self.cmp(Cmp::Eq, ty, hi, half);
        let nr = self.un(UnOp::Neg, ty, r);
        let bits = self.bits(bits_ty, x);
        let sign = self.cmp(Cmp::Lt, sty, bits, imm(0));
        let odd = self.un(UnOp::Not, Ty::Pred, even);
        let odd = self.bin(BinOp::And, Ty::Pred, odd, is_int);
        let flip = self.bin(BinOp::And, Ty::Pred, sign, odd);
        let r = self.sel(ty, nr, r, flip);
        let neg = self.cmp(Cmp::Lt, ty, x, c(0.0));
        let fin = self.cmp(Cmp::Gt, ty, x, c(f64::NEG_INFINITY));
        let neg = self.bin(BinOp::And, Ty::Pred, neg, fin);
        let not_int = self.un(UnOp::Not, Ty::Pred, is_int);
        let bad = self.bin(BinOp::And, Ty::Pred, neg, not_int);
        let r = self.sel(ty, c(f64::NAN), r, bad);
        let y0 = self.cmp(Cmp::Eq, ty, y, c(0.0));
        let x1 = self.cmp(Cmp::Eq, ty, x, c(1.0));
        let ay = self.un(UnOp::Abs, ty, y);
        let yinf = self.cmp(Cmp::Eq, ty, ay, c(f64::INFINITY));
        let ax = self.un(UnOp::Abs, ty, x);
        let ax1 = self.cmp(Cmp::Eq, ty, ax, c(1.0));
        let unit = self.bin(BinOp::And, Ty::Pred, yinf, ax1);
        let one = self.bin(BinOp::Or, Ty::Pred, y0, x1);
        let one = self.bin(BinOp::Or, Ty::Pred, one, unit);
        self.sel(ty, c(1.0), r, one)
    }

    /// `erf x`: for |x| < 1 the Maclaurin series `(2/√π)·x·Σ (−x²)^n / (n!·(2n+1))` (to n = 18
    /// in f64, 10 in f32: below the unit roundoff, so small arguments keep their relative
    /// accuracy and −0 stays −0); for |x| ≥ 1 `±(1 − e^(−z²)·P(u))` with [`ERFCX_F64`] /
    /// [`ERFCX_F32`], `z = min(|x|, 6)` (erf is 1 in both types beyond) and `e^(−z²)` of the
    /// exact square (f64: a double-double through `exp_dd`; f32: `ex2.approx`). NaN stays
    /// NaN. f64 within a few ulps of 1 in absolute terms (`tests/golden/lower_f64_math_emu`).
    pub(super) fn erf(&mut self, ty: Ty, x: Value) -> Value {
        let f64_ = ty == Ty::F64;
        let c = |v: f64| fc(ty, v);
        let z = self.un(UnOp::Abs, ty, x);
        let w = self.mul(ty, z, z);
        let terms = if f64_ { 18 } else { 10 };
        let coef = |n: usize| {
            let fact: f64 = (1..=n).map(|i| i as f64).product();
            let s = if n.is_multiple_of(2) { 1.0 } else { -1.0 };
            s / (fact * (2 * n + 1) as f64)
        };
        let mut p = self.mov(ty, c(coef(terms)));
        for n in (0..terms).rev() {
            p = self.fma(ty, p, w, c(coef(n)));
        }
        let p = self.mul(ty, p, c(std::f64::consts::FRAC_2_SQRT_PI));
        let small = self.mul(ty, x, p);
        let zc = self.bin(BinOp::Min, ty, z, c(6.0));
        let d = self.add(ty, zc, c(3.0));
        let t = self.div(ty, c(3.0), d);
        let u = self.fma(ty, t, c(4.8), c(-2.6));
        let coeffs: Vec<f64> = if f64_ {
            ERFCX_F64.to_vec()
        } else {
            ERFCX_F32.iter().map(|&v| f64::from(v)).collect()
        };
        let mut q = self.mov(ty, c(coeffs[0]));
        for &k in &coeffs[1..] {
            q = self.fma(ty, q, u, c(k));
        }
        let e = if f64_ {
            // −z² as hz + lo exactly
            let hz = self.mul(ty, zc, zc);
            let nhz = self.un(UnOp::Neg, ty, hz);
            let nlz = if self.fused {
                let nz = self.un(UnOp::Neg, ty, zc);
                self.fma(ty, nz, zc, hz)
            } else {
                let err = self.two_prod_err(ty, zc, zc, hz);
                self.un(UnOp::Neg, ty, err)
            };
            self.exp_dd(nhz, Some(nlz))
        } else {
            let w2 = self.mul(ty, zc, zc);
            let a = self.mul(ty, w2, fimm(-LOG2E));
            self.un(UnOp::Ex2Approx, ty, a)
        };
        let erfc = self.mul(ty, e, q);
        let large = self.sub(ty, c(1.0), erfc);
        let nlarge = self.un(UnOp::Neg, ty, large);
        let neg = self.cmp(Cmp::Lt, ty, x, c(0.0));
        let large = self.sel(ty, nlarge, large, neg);
        let is_small = self.cmp(Cmp::Lt, ty, z, c(1.0));
        let r = self.sel(ty, small, large, is_small);
        let nan = self.cmp(Cmp::Nan, ty, x, x);
        self.sel(ty, x, r, nan)
    }

    /// `tanh x` in fp64: for |x| < 0.625, `sinh|x|` by its series to |x|^17 (below 2^-58
    /// relative) and `sinh / √(1 + sinh²)`, with no cancellation near 0; beyond,
    /// `1 − 2/(e^2|x| + 1)` (1 once e^2|x| overflows). The sign is x's (±0 stays ±0); NaN
    /// stays NaN.
    pub(super) fn tanh_f64(&mut self, x: Value) -> Value {
        let f = Ty::F64;
        let ax = self.un(UnOp::Abs, f, x);
        let z = self.mul(f, ax, ax);
        let mut fact = [1.0f64; 18];
        for i in 1..18 {
            fact[i] = fact[i - 1] * i as f64;
        }
        let mut p = self.mov(f, dimm(1.0 / fact[17]));
        for k in (0..8).rev() {
            p = self.fma(f, p, z, dimm(1.0 / fact[2 * k + 1]));
        }
        let sh = self.mul(f, ax, p);
        let c2 = self.fma(f, sh, sh, dimm(1.0));
        let ch = self.un(UnOp::Sqrt, f, c2);
        let small = self.div(f, sh, ch);
        let two = self.add(f, ax, ax);
        let t = self.exp_dd(two, None);
        let t1 = self.add(f, t, dimm(1.0));
        let q = self.div(f, dimm(2.0), t1);
        let large = self.sub(f, dimm(1.0), q);
        let is_small = self.cmp(Cmp::Lt, f, ax, dimm(0.625));
        let r = self.sel(f, small, large, is_small);
        let nr = self.un(UnOp::Neg, f, r);
        let neg = self.cmp(Cmp::Lt, f, x, dimm(0.0));
        let r = self.sel(f, nr, r, neg);
        let zero = self.cmp(Cmp::Eq, f, x, dimm(0.0));
        self.sel(f, x, r, zero)
    }

    /// `sin x` or (`cos`) `cos x`, computed in f64 (an f32 argument is widened and the result
    /// rounded once): `x = k·π/2 + r` with `k = rint(x·2/π)` and `r` reduced exactly (absolute
    /// error near 2^-53 while |k| < 2^52): by three `fma`s against π/2 in three parts where
    /// `fma` rounds once, else with `k` split at 2^26 and π/2 in five parts of at most 26
    /// bits, so that every product is exact. Then the Taylor series of `sin r` (to r^17) and
    /// `cos r` (to r^18), below 2^-54 relative on that range, chosen and signed by `k mod 4`
    /// (`cos x = sin(x + π/2)`: quadrant `k + 1`). NaN and ±inf give NaN; −0 keeps its sign
    /// in `sin`. Beyond |x| ≈ 2^52·π/2 the reduction loses `k`'s low bits and the result is
    /// not the cpu's (libm reduces exactly at any size).
    pub(super) fn sin_cos(&mut self, ty: Ty, x: Value, cos: bool) -> Value {
        let (f, d) = (Ty::F64, dimm);
        let xd = if ty == f { x } else { self.cvt(f, ty, None, x) };
        let t = self.mul(f, xd, d(std::f64::consts::FRAC_2_PI));
        let k = self.cvt(f, f, Some(Rnd::Rni), t);
        let mut r = xd;
        if self.fused {
            let nk = self.un(UnOp::Neg, f, k);
            for p in PIO2 {
                r = self.fma(f, nk, d(p), r);
            }
        } else {
            // toward zero: kh is 0 below 2^26 and kl has k's sign
            let kq = self.mul(f, k, d(1.0 / 67_108_864.0));
            let kq = self.cvt(f, f, Some(Rnd::Rzi), kq);
            let kh = self.mul(f, kq, d(67_108_864.0));
            let kl = self.sub(f, k, kh);
            for p in PIO2_26 {
                for kp in [kh, kl] {
                    let prod = self.mul(f, kp, d(p));
                    r = self.sub(f, r, prod);
                }
            }
        }
        // k = 0 needs no reduction (and −0 − 0·π/2 would be +0)
        let k0 = self.cmp(Cmp::Eq, f, k, d(0.0));
        let r = self.sel(f, xd, r, k0);
        let z = self.mul(f, r, r);
        let fact = |n: u32| (1..=n).map(f64::from).product::<f64>();
        let sign = |n: u32| if n.is_multiple_of(2) { 1.0 } else { -1.0 };
        // sin r = r·Σ (−z)^n / (2n+1)!,  cos r = Σ (−z)^n / (2n)!
        let mut ps = self.mov(f, d(sign(8) / fact(17)));
        for n in (0..8).rev() {
            ps = self.fma(f, ps, z, d(sign(n) / fact(2 * n + 1)));
        }
        let s = self.mul(f, ps, r);
        let mut c = self.mov(f, d(sign(9) / fact(18)));
        for n in (0..9).rev() {
            c = self.fma(f, c, z, d(sign(n) / fact(2 * n)));
        }
        // the quadrant: odd → the other series; 2 or 3 → negated
        let ki = self.cvt(Ty::S64, f, Some(Rnd::Rzi), k);
        let q = if cos {
            self.add(Ty::S64, ki, imm(1))
        } else {
            ki
        };
        let q = self.bin(BinOp::And, Ty::B64, q, imm(3));
        let odd_bit = self.bin(BinOp::And, Ty::B64, q, imm(1));
        let odd = self.cmp(Cmp::Ne, Ty::S64, odd_bit, imm(0));
        let v = self.sel(f, c, s, odd);
        let neg = self.cmp(Cmp::Ge, Ty::S64, q, imm(2));
        let nv = self.un(UnOp::Neg, f, v);
        let res = self.sel(f, nv, v, neg);
        if ty == f {
            res
        } else {
            self.cvt(ty, f, Some(Rnd::Rn), res)
        }
    }
}

/// π/2 as the sum of three f64 (the second and third are the next 53 bits and the rest), for
/// the reduction `x − k·π/2` by `fma`s.
const PIO2: [f64; 3] = [
    std::f64::consts::FRAC_PI_2,
    6.123_233_995_736_766e-17,
    -1.497_384_904_859_169_8e-33,
];

/// π/2 in four parts of 26 bits and a remainder: `k_i·p_j` is exact for `k_i` of 27 bits.
const PIO2_26: [f64; 5] = [
    1.570_796_310_901_641_8,
    1.589_325_471_229_585_7e-8,
    6.123_233_932_053_594e-17,
    6.368_317_055_225_283e-25,
    1.082_856_673_921_914e-32,
];

/// erfc(z)·e^(z²) for z in [1, 6] as a polynomial in `u = (3/(3+z) − 13/24)·24/5` (u in
/// [−1, 1]), highest degree first: the Chebyshev interpolant converted to monomials by
/// `scripts/erf-coeffs.py` (worst relative error 3.9e-16 with f64 Horner steps).
const ERFCX_F64: [f64; 16] = [
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
