//! fp64 math functions in SPIR-V (GLSL.std.450 has `exp`, `log`, `sin`, … in 16/32 bits only):
//! range reductions and polynomials built from fp64 arithmetic, `Fma`, `Frexp` and `Ldexp`.
//! Accuracy: a few ulps for `exp`, `log`, `tanh`, `erf`; `pow` as `e^(y·ln|x|)` in one fp64
//! (relative error about |y·ln x|·2^-53); `sin`/`cos` reduce by π/2 in five parts without
//! relying on a fused `Fma`, exact enough up to about 10^15 in magnitude.

use super::{Cx, R};
use crate::scalar::Ty;
use crate::tile::ir::MathFn;
use rspirv::spirv::{GlslStd450Op as G, Op, Word};

impl Cx<'_> {
    fn c64(&mut self, v: f64) -> Word {
        let t = self.sty(Ty::F64);
        self.constant(t, v.to_bits())
    }
    fn f2(&mut self, op: Op, a: Word, b: Word) -> Word {
        let t = self.sty(Ty::F64);
        self.ins(op, t, &[a, b])
    }
    fn fma64(&mut self, a: Word, b: Word, c: Word) -> Word {
        let t = self.sty(Ty::F64);
        self.glsl(G::Fma, t, &[a, b, c])
    }
    fn g64(&mut self, g: G, a: Word) -> Word {
        let t = self.sty(Ty::F64);
        self.glsl(g, t, &[a])
    }
    fn sel64(&mut self, c: Word, a: Word, b: Word) -> Word {
        let t = self.sty(Ty::F64);
        self.ins(Op::Select, t, &[c, a, b])
    }
    fn cmp64(&mut self, op: Op, a: Word, b: Word) -> Word {
        self.ins(op, self.t.bool_, &[a, b])
    }
    /// Horner: `Σ coef[i]·x^(n−1−i)`, highest degree first.
    fn horner(&mut self, coef: &[f64], x: Word) -> Word {
        let mut acc = self.c64(coef[0]);
        for &c in &coef[1..] {
            let cc = self.c64(c);
            acc = self.fma64(acc, x, cc);
        }
        acc
    }

    pub(super) fn math64(&mut self, f: MathFn, x: Word, y: Option<Word>) -> R<Word> {
        let one = self.c64(1.0);
        Ok(match f {
            MathFn::Exp => self.exp64(x),
            MathFn::Log => self.log64(x),
            MathFn::Tanh => self.tanh64(x),
            MathFn::Sigmoid => {
                let nx = self.g64_neg(x);
                let e = self.exp64(nx);
                let d = self.f2(Op::FAdd, e, one);
                self.f2(Op::FDiv, one, d)
            }
            MathFn::Silu => {
                let nx = self.g64_neg(x);
                let e = self.exp64(nx);
                let d = self.f2(Op::FAdd, e, one);
                let s = self.f2(Op::FDiv, one, d);
                self.f2(Op::FMul, x, s)
            }
            MathFn::Erf => self.erf64(x),
            MathFn::Gelu => {
                // the cpu's order: (0.5·x)·(1 + erf(x·(1/√2)))
                let r2 = self.c64(std::f64::consts::FRAC_1_SQRT_2);
                let xs = self.f2(Op::FMul, x, r2);
                let e = self.erf64(xs);
                let half = self.c64(0.5);
                let h = self.f2(Op::FMul, x, half);
                let o = self.f2(Op::FAdd, e, one);
                self.f2(Op::FMul, h, o)
            }
            MathFn::Sin => self.sin_cos64(x, false),
            MathFn::Cos => self.sin_cos64(x, true),
            MathFn::Pow => {
                let Some(y) = y else {
                    return super::bug(self.k, "pow takes two operands");
                };
                self.pow64(x, y)
            }
        })
    }

    fn g64_neg(&mut self, x: Word) -> Word {
        let t = self.sty(Ty::F64);
        self.ins(Op::FNegate, t, &[x])
    }

    /// `e^x`: `x = k·ln2 + r`, |r| ≤ ln2/2, `e^r` by Taylor to degree 13, scaled by `ldexp`.
    pub(super) fn exp64(&mut self, x: Word) -> Word {
        // Ldexp's exponent is a signed integer
        let i32t = self.b.type_int(32, 1);
        let log2e = self.c64(std::f64::consts::LOG2_E);
        let t = self.f2(Op::FMul, x, log2e);
        let k = self.round_float(G::RoundEven, Ty::F64, t);
        let ln2_hi = self.c64(f64::from_bits(0x3fe6_2e42_fee0_0000));
        let ln2_lo = self.c64(f64::from_bits(0x3dea_39ef_3579_3c76));
        let nk = self.g64_neg(k);
        let r = self.fma64(nk, ln2_hi, x);
        let r = self.fma64(nk, ln2_lo, r);
        let mut coef = vec![];
        let mut fact = 1f64;
        for n in 0..=13u32 {
            if n > 0 {
                fact *= f64::from(n);
            }
            coef.push(1.0 / fact);
        }
        coef.reverse();
        let p = self.horner(&coef, r);
        // k in two halves so that 2^k spans the subnormal range too
        let lim = self.c64(2000.0);
        let nlim = self.c64(-2000.0);
        let f64t = self.sty(Ty::F64);
        let kc = self.glsl(G::FClamp, f64t, &[k, nlim, lim]);
        let ki = self.ins(Op::ConvertFToS, i32t, &[kc]);
        let two = self.constant(i32t, 2);
        let k1 = self.ins(Op::SDiv, i32t, &[ki, two]);
        let k2 = self.ins(Op::ISub, i32t, &[ki, k1]);
        let s = self.glsl(G::Ldexp, f64t, &[p, k1]);
        let s = self.glsl(G::Ldexp, f64t, &[s, k2]);
        // overflow, underflow and NaN
        let big = self.c64(709.8);
        let small = self.c64(-745.2);
        let inf = self.c64(f64::INFINITY);
        let zero = self.c64(0.0);
        let over = self.cmp64(Op::FOrdGreaterThan, x, big);
        let under = self.cmp64(Op::FOrdLessThan, x, small);
        let s = self.sel64(over, inf, s);
        let s = self.sel64(under, zero, s);
        let nan = self.ins(Op::IsNan, self.t.bool_, &[x]);
        self.sel64(nan, x, s)
    }

    /// `ln x`: `x = 2^e·m`, m in [√½, √2), `ln m = 2·atanh(s)`, s = (m−1)/(m+1), by its odd
    /// series to s^23; 0 → −inf, negatives and NaN → NaN, +inf → +inf.
    pub(super) fn log64(&mut self, x: Word) -> Word {
        let (f64t, i32t) = (self.sty(Ty::F64), self.b.type_int(32, 1));
        // subnormals scaled by 2^54 first (Frexp of a subnormal is not exact everywhere)
        let ax = self.g64(G::FAbs, x);
        let tiny = self.c64(f64::MIN_POSITIVE);
        let sub = self.cmp64(Op::FOrdLessThan, ax, tiny);
        let scale = self.c64(2f64.powi(54));
        let xs = self.f2(Op::FMul, x, scale);
        let xs = self.sel64(sub, xs, x);
        let st = self.b.type_struct([f64t, i32t]);
        let fr = self.glsl(G::FrexpStruct, st, &[xs]);
        let m = self.extract(f64t, fr, 0);
        let e = self.extract(i32t, fr, 1);
        let ef = self.ins(Op::ConvertSToF, f64t, &[e]);
        let (c54, zero) = (self.c64(54.0), self.c64(0.0));
        let adj = self.sel64(sub, c54, zero);
        let ef = self.f2(Op::FSub, ef, adj);
        let rt = self.c64(std::f64::consts::FRAC_1_SQRT_2);
        let low = self.cmp64(Op::FOrdLessThan, m, rt);
        let two = self.c64(2.0);
        let m2 = self.f2(Op::FMul, m, two);
        let m = self.sel64(low, m2, m);
        let one = self.c64(1.0);
        let e1 = self.f2(Op::FSub, ef, one);
        let ef = self.sel64(low, e1, ef);
        let num = self.f2(Op::FSub, m, one);
        let den = self.f2(Op::FAdd, m, one);
        let s = self.f2(Op::FDiv, num, den);
        let z = self.f2(Op::FMul, s, s);
        let coef: Vec<f64> = (0..=11).rev().map(|k| 1.0 / f64::from(2 * k + 1)).collect();
        let p = self.horner(&coef, z);
        let s2 = self.f2(Op::FMul, s, two);
        let lnm = self.f2(Op::FMul, s2, p);
        let ln2_hi = self.c64(f64::from_bits(0x3fe6_2e42_fee0_0000));
        let ln2_lo = self.c64(f64::from_bits(0x3dea_39ef_3579_3c76));
        let r = self.fma64(ef, ln2_lo, lnm);
        let r = self.fma64(ef, ln2_hi, r);
        // specials
        let zero = self.c64(0.0);
        let ninf = self.c64(f64::NEG_INFINITY);
        let inf = self.c64(f64::INFINITY);
        let nan = self.c64(f64::NAN);
        let is0 = self.cmp64(Op::FOrdEqual, x, zero);
        let neg = self.cmp64(Op::FOrdLessThan, x, zero);
        let isinf = self.cmp64(Op::FOrdEqual, x, inf);
        let r = self.sel64(isinf, inf, r);
        let r = self.sel64(is0, ninf, r);
        let r = self.sel64(neg, nan, r);
        let isnan = self.ins(Op::IsNan, self.t.bool_, &[x]);
        self.sel64(isnan, x, r)
    }

    /// `tanh x`: below 0.625 in magnitude `sinh / √(1 + sinh²)` with sinh by its series to
    /// x^17; beyond, `1 − 2/(e^2|x| + 1)`; the sign is x's.
    fn tanh64(&mut self, x: Word) -> Word {
        let ax = self.g64(G::FAbs, x);
        let z = self.f2(Op::FMul, ax, ax);
        let mut coef = vec![];
        let mut fact = 1f64;
        for n in 0..=8u32 {
            if n > 0 {
                fact *= f64::from(2 * n) * f64::from(2 * n + 1);
            }
            coef.push(1.0 / fact);
        }
        coef.reverse();
        let p = self.horner(&coef, z);
        let sh = self.f2(Op::FMul, ax, p);
        let one = self.c64(1.0);
        let sh2 = self.fma64(sh, sh, one);
        let root = self.g64(G::Sqrt, sh2);
        let small = self.f2(Op::FDiv, sh, root);
        let two = self.c64(2.0);
        let ax2 = self.f2(Op::FMul, ax, two);
        let e = self.exp64(ax2);
        let d = self.f2(Op::FAdd, e, one);
        let q = self.f2(Op::FDiv, two, d);
        let big = self.f2(Op::FSub, one, q);
        let lim = self.c64(0.625);
        let lt = self.cmp64(Op::FOrdLessThan, ax, lim);
        let r = self.sel64(lt, small, big);
        let neg = self.g64_neg(r);
        let zero = self.c64(0.0);
        let xneg = self.cmp64(Op::FOrdLessThan, x, zero);
        let r = self.sel64(xneg, neg, r);
        let isnan = self.ins(Op::IsNan, self.t.bool_, &[x]);
        let r = self.sel64(isnan, x, r);
        // ±0 keeps its sign
        let is0 = self.cmp64(Op::FOrdEqual, x, zero);
        self.sel64(is0, x, r)
    }

    /// `erf x`: the Maclaurin series to n = 18 below 1 in magnitude; beyond,
    /// `±(1 − e^(−z²)·P(u))` with the erfcx interpolant of Tile → Target (z = min(|x|, 6)).
    fn erf64(&mut self, x: Word) -> Word {
        let x2 = self.f2(Op::FMul, x, x);
        let mut coef = vec![];
        let mut fact = 1f64;
        for n in 0..=18u32 {
            if n > 0 {
                fact *= f64::from(n);
            }
            let s = if n % 2 == 0 { 1.0 } else { -1.0 };
            coef.push(s / (fact * f64::from(2 * n + 1)));
        }
        coef.reverse();
        let p = self.horner(&coef, x2);
        let k = self.c64(2.0 / std::f64::consts::PI.sqrt());
        let kx = self.f2(Op::FMul, x, k);
        let small = self.f2(Op::FMul, kx, p);
        let ax = self.g64(G::FAbs, x);
        let six = self.c64(6.0);
        let f64t = self.sty(Ty::F64);
        let z = self.glsl(G::FMin, f64t, &[ax, six]);
        // u = (3/(3+z) − 13/24)·24/5
        let three = self.c64(3.0);
        let d = self.f2(Op::FAdd, three, z);
        let q = self.f2(Op::FDiv, three, d);
        let c1 = self.c64(13.0 / 24.0);
        let q = self.f2(Op::FSub, q, c1);
        let c2 = self.c64(24.0 / 5.0);
        let u = self.f2(Op::FMul, q, c2);
        let pe = self.horner(&crate::backend::ptx::math::ERFCX_F64, u);
        let z2 = self.f2(Op::FMul, z, z);
        let nz2 = self.g64_neg(z2);
        let e = self.exp64(nz2);
        let t = self.f2(Op::FMul, e, pe);
        let one = self.c64(1.0);
        let mag = self.f2(Op::FSub, one, t);
        let nmag = self.g64_neg(mag);
        let zero = self.c64(0.0);
        let xneg = self.cmp64(Op::FOrdLessThan, x, zero);
        let big = self.sel64(xneg, nmag, mag);
        let lt1 = self.cmp64(Op::FOrdLessThan, ax, one);
        let r = self.sel64(lt1, small, big);
        let isnan = self.ins(Op::IsNan, self.t.bool_, &[x]);
        self.sel64(isnan, x, r)
    }

    /// `x ** y`: `e^(y·ln|x|)` with C's rules (`pow_rules`).
    fn pow64(&mut self, x: Word, y: Word) -> Word {
        let ax = self.g64(G::FAbs, x);
        let l = self.log64(ax);
        let p = self.f2(Op::FMul, y, l);
        let r = self.exp64(p);
        self.pow_rules(Ty::F64, x, y, r)
    }

    /// `sin x` / `cos x`: k = rint(x·2/π), r = x − k·π/2, the Taylor polynomials of sin and
    /// cos on r to degree 21/20, the quadrant's choice and sign. `Fma` need not be fused in
    /// Vulkan (lavapipe's is not), so the reduction is exact without it: k is split at 2^26
    /// into two parts of at most 27 bits and π/2 into four parts of 26 bits and a remainder,
    /// so each product k_i·p_j is exact and the leading differences cancel exactly (k up to
    /// 2^53: |x| up to about 10^15, as far as the quadrant is kept).
    fn sin_cos64(&mut self, x: Word, cos: bool) -> Word {
        let (u, bt) = (self.t.u32_, self.t.bool_);
        let two_pi = self.c64(std::f64::consts::FRAC_2_PI);
        let t = self.f2(Op::FMul, x, two_pi);
        let k = self.round_float(G::RoundEven, Ty::F64, t);
        let split = self.c64(67_108_864.0);
        let inv_split = self.c64(1.0 / 67_108_864.0);
        // toward zero: k_h is 0 below 2^26 and k_l has k's sign (a floor would make k_h
        // −2^26 for k = −1, and x − k_h·p1 would not be exact)
        let kq = self.f2(Op::FMul, k, inv_split);
        let kq = self.round_float(G::Trunc, Ty::F64, kq);
        let kh = self.f2(Op::FMul, kq, split);
        let kl = self.f2(Op::FSub, k, kh);
        let mut r = x;
        for p in [
            1.570_796_310_901_641_8,
            1.589_325_471_229_585_7e-8,
            6.123_233_932_053_594e-17,
            6.368_317_055_225_283e-25,
            1.082_856_673_921_914e-32,
        ] {
            let pc = self.c64(p);
            for kp in [kh, kl] {
                let prod = self.f2(Op::FMul, kp, pc);
                r = self.f2(Op::FSub, r, prod);
            }
        }
        let z = self.f2(Op::FMul, r, r);
        let (mut sc, mut cc) = (vec![], vec![]);
        let mut fact = 1f64;
        for n in 1..=21u32 {
            fact *= f64::from(n);
            let sign = if (n / 2) % 2 == 0 { 1.0 } else { -1.0 };
            if n % 2 == 1 {
                sc.push(sign / fact);
            } else {
                cc.push(sign / fact);
            }
        }
        sc.reverse();
        let mut cc2 = vec![1.0];
        cc2.extend(cc);
        cc2.reverse();
        let sp = self.horner(&sc, z);
        let s = self.f2(Op::FMul, r, sp);
        let c = self.horner(&cc2, z);
        // quadrant q = k mod 4 (+1 for cos)
        let kl = self.c64(1.0e15);
        let nkl = self.c64(-1.0e15);
        let f64t = self.sty(Ty::F64);
        let kc = self.glsl(G::FClamp, f64t, &[k, nkl, kl]);
        let u64t = self.sty(Ty::S64);
        let ki = self.ins(Op::ConvertFToS, u64t, &[kc]);
        let kw = self.ins(Op::UConvert, u, &[ki]);
        let kw = if cos {
            let one = self.const_u32(1);
            self.ins(Op::IAdd, u, &[kw, one])
        } else {
            kw
        };
        let three = self.const_u32(3);
        let q = self.ins(Op::BitwiseAnd, u, &[kw, three]);
        let one = self.const_u32(1);
        let two = self.const_u32(2);
        let odd = self.ins(Op::BitwiseAnd, u, &[q, one]);
        let zero = self.const_u32(0);
        let use_cos = self.ins(Op::INotEqual, bt, &[odd, zero]);
        let v = self.sel64(use_cos, c, s);
        let hi = self.ins(Op::BitwiseAnd, u, &[q, two]);
        let flip = self.ins(Op::INotEqual, bt, &[hi, zero]);
        let nv = self.g64_neg(v);
        let r = self.sel64(flip, nv, v);
        let inf = self.c64(f64::INFINITY);
        let ax = self.g64(G::FAbs, x);
        let isinf = self.cmp64(Op::FOrdEqual, ax, inf);
        let nan = self.c64(f64::NAN);
        self.sel64(isinf, nan, r)
    }

    /// C's `pow(x, y)` from `r = |x| ** y` (f32 or f64): the sign of (−1)^y for a negative
    /// base and an integer y (else NaN; −inf gives +inf or +0), `x ** 0` and `1 ** y` are 1,
    /// `(−1) ** ±inf` is 1, `±0 ** y` is 0 for y > 0 and inf for y < 0, signed for odd y.
    pub(super) fn pow_rules(&mut self, ty: Ty, x: Word, y: Word, r: Word) -> Word {
        let (ft, bt) = (self.sty(ty), self.t.bool_);
        let c = |s: &mut Self, v: f64| s.const_float(ty, v);
        let sel = |s: &mut Self, c: Word, a: Word, b: Word| s.ins(Op::Select, ft, &[c, a, b]);
        let cmp = |s: &mut Self, op: Op, a: Word, b: Word| s.ins(op, bt, &[a, b]);
        let ty_ = self.glsl(G::Trunc, ft, &[y]);
        let yint = cmp(self, Op::FOrdEqual, ty_, y);
        let half = c(self, 0.5);
        let yh = self.ins(Op::FMul, ft, &[y, half]);
        let th = self.glsl(G::Trunc, ft, &[yh]);
        let odd = cmp(self, Op::FOrdNotEqual, th, yh);
        let nr = self.ins(Op::FNegate, ft, &[r]);
        let sr = sel(self, odd, nr, r);
        let nan = c(self, f64::NAN);
        let ninf = c(self, f64::NEG_INFINITY);
        let xninf = cmp(self, Op::FOrdEqual, x, ninf);
        let other = sel(self, xninf, r, nan);
        let negr = sel(self, yint, sr, other);
        let zero = c(self, 0.0);
        let neg = cmp(self, Op::FOrdLessThan, x, zero);
        let r = sel(self, neg, negr, r);
        let inf = c(self, f64::INFINITY);
        let ypos = cmp(self, Op::FOrdGreaterThan, y, zero);
        let z = sel(self, ypos, zero, inf);
        // (−0) ** odd y keeps the sign: −0 or −inf
        let negzero = if ty == Ty::F64 {
            let u64t = self.sty(Ty::U64);
            let xbits = self.ins(Op::Bitcast, u64t, &[x]);
            let top = self.constant(u64t, 1 << 63);
            self.ins(Op::IEqual, bt, &[xbits, top])
        } else {
            let xbits = self.ins(Op::Bitcast, self.t.u32_, &[x]);
            let top = self.const_u32(0x8000_0000);
            self.ins(Op::IEqual, bt, &[xbits, top])
        };
        let odd_int = self.ins(Op::LogicalAnd, bt, &[odd, yint]);
        let sign_odd = self.ins(Op::LogicalAnd, bt, &[negzero, odd_int]);
        let nz = self.ins(Op::FNegate, ft, &[z]);
        let z = sel(self, sign_odd, nz, z);
        let x0 = cmp(self, Op::FOrdEqual, x, zero);
        let r = sel(self, x0, z, r);
        let one = c(self, 1.0);
        let y0 = cmp(self, Op::FOrdEqual, y, zero);
        let x1 = cmp(self, Op::FOrdEqual, x, one);
        let unit = self.ins(Op::LogicalOr, bt, &[y0, x1]);
        let m1 = c(self, -1.0);
        let xm1 = cmp(self, Op::FOrdEqual, x, m1);
        let ay = self.glsl(G::FAbs, ft, &[y]);
        let yinf = cmp(self, Op::FOrdEqual, ay, inf);
        let m1inf = self.ins(Op::LogicalAnd, bt, &[xm1, yinf]);
        let unit = self.ins(Op::LogicalOr, bt, &[unit, m1inf]);
        sel(self, unit, one, r)
    }
}
