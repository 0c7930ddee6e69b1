//! Math functions written once: a Tile → Tile pass that rewrites every `tile.math` op a
//! back end does not compute natively into scalar Tile ops (`mul`, `fma`, `cmp`, `select`,
//! `cast`, `bitcast`, `ex2.approx`, …), the same expansion for PTX and SPIR-V.
//!
//! [`form`] is the one place that decides, per (function, type, target), whether a back end
//! gets the `tile.math` op itself (its native instruction) or its expansion:
//!
//! | function | f32 on PTX | f32 on SPIR-V | f64 (both) |
//! | --- | --- | --- | --- |
//! | exp | `ex2.approx(x·log2 e)` | native `Exp` | range reduction, degree-13 Taylor, 2^k from bits |
//! | log | `lg2.approx(x)·ln 2` | native `Log` | exponent from bits, atanh series to s^23 |
//! | tanh | `tanh.approx` | native `Tanh` | sinh series below 0.625, else `1 − 2/(e^2|x| + 1)` |
//! | sigmoid, silu | `rcp(1 + ex2(−x·log2 e))` | same | `1/(1 + e^−x)` |
//! | gelu | A&S 7.1.26 erf | same | `(0.5·x)·(1 + erf(x/√2))` |
//! | erf | Maclaurin below 1, erfcx interpolant above | same | same, with a double-double e^(−z²) |
//! | pow | `ex2(y·lg2|x|)` and C's rules | same | double-double `ln`, `y·ln` exact, `e^` of both parts |
//! | sin, cos | computed in f64 | same | k = rint(x·2/π), exact reduction, Taylor, quadrant |
//!
//! fp16 and bf16 arguments are widened to f32, expanded, and rounded back once. Expansions
//! that need an exact product use `fma` where it rounds once (PTX's `fma.rn`); Vulkan lets
//! `Fma` round twice (lavapipe's does), so there the product is split (Dekker) and the
//! reduction by π/2 uses parts whose products are exact.
//!
//! The pass visits each op once (the expansion of one op is bounded), so it is linear in the
//! kernel. The expanded op keeps its id and result value (its last op takes them), so a
//! kernel without math is returned as it is.

use super::build::{dimm, fimm, imm};
use super::ir::{Kernel, MathFn, OpData, OpId, OpKind, Operand, Region, Type, Value};
use crate::scalar::{BinOp, Cmp, Rnd, Ty, UnOp};
use std::borrow::Cow;
use tessera_lang::Span;

/// The back end a kernel is expanded for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MathTarget {
    Ptx,
    Spirv,
}

impl MathTarget {
    /// Whether `fma` rounds once.
    fn fused_fma(self) -> bool {
        self == MathTarget::Ptx
    }
}

/// How a back end computes one math function.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// The back end translates `tile.math` itself, to one native instruction.
    Native,
    /// The pass rewrites it into scalar Tile ops.
    Expanded,
}

/// Native or expanded, per (function, type, target): the one place that decides. SPIR-V's
/// GLSL.std.450 `Exp`, `Log` and `Tanh` are used in f32 (Vulkan bounds them within a few
/// ulps, as `ex2.approx`/`lg2.approx` are on PTX); GLSL.std.450 has no fp64 transcendentals,
/// and its f32 `Sin`/`Cos` are only accurate in [−π, π]. Everything else is expanded.
pub fn form(f: MathFn, ty: Ty, target: MathTarget) -> Form {
    match (target, f, ty) {
        (MathTarget::Spirv, MathFn::Exp | MathFn::Log | MathFn::Tanh, Ty::F32) => Form::Native,
        _ => Form::Expanded,
    }
}

/// A math function's name, as Tile IR text spells it (`exp`, `pow`).
pub fn fn_name(f: MathFn) -> String {
    format!("{f:?}").to_lowercase()
}

/// `k` with every math op that [`form`] expands for `target` rewritten into scalar ops
/// (borrowed when there is none).
pub fn expand(k: &Kernel, target: MathTarget) -> Cow<'_, Kernel> {
    let needed = k.ops.iter().any(|o| match o.kind {
        OpKind::Math { f, ty } => form(f, ty, target) == Form::Expanded,
        _ => false,
    });
    if !needed {
        return Cow::Borrowed(k);
    }
    let mut k = k.clone();
    let body = std::mem::take(&mut k.body);
    let body = region(&mut k, target, body);
    k.body = body;
    Cow::Owned(k)
}

fn region(k: &mut Kernel, target: MathTarget, mut r: Region) -> Region {
    let mut ops = Vec::with_capacity(r.ops.len());
    for id in std::mem::take(&mut r.ops) {
        let Some(op) = k.ops.get_mut(id.0 as usize) else {
            ops.push(id);
            continue;
        };
        let inner = std::mem::take(&mut op.regions);
        let kind = op.kind.clone();
        let inner: Vec<Region> = inner.into_iter().map(|r| region(k, target, r)).collect();
        if let Some(op) = k.ops.get_mut(id.0 as usize) {
            op.regions = inner;
        }
        match kind {
            OpKind::Math { f, ty } if form(f, ty, target) == Form::Expanded => {
                expand_op(k, target, id, f, ty, &mut ops)
            }
            _ => ops.push(id),
        }
    }
    r.ops = ops;
    r
}

/// Replaces op `id` by its expansion, appending the op ids to `ops` in order (the last one is
/// `id`, which keeps the result value). An op the pass cannot expand (an operand missing, a
/// type with no float arithmetic) is kept for the back end to refuse.
fn expand_op(k: &mut Kernel, target: MathTarget, id: OpId, f: MathFn, ty: Ty, ops: &mut Vec<OpId>) {
    let Some(op) = k.ops.get(id.0 as usize) else {
        ops.push(id);
        return;
    };
    let (operands, span) = (op.operands.clone(), op.span);
    let Some(&res) = op.results.first() else {
        ops.push(id);
        return;
    };
    let arity = if f == MathFn::Pow { 2 } else { 1 };
    let wide = match ty {
        Ty::F32 | Ty::F64 => ty,
        Ty::F16 | Ty::BF16 => Ty::F32,
        _ => {
            ops.push(id);
            return;
        }
    };
    if operands.len() < arity {
        ops.push(id);
        return;
    }
    let mut e = Em {
        k,
        out: vec![],
        span,
        fused: target.fused_fma(),
    };
    let args: Vec<Value> = operands[..arity]
        .iter()
        .map(|&o| match o {
            // an immediate of a narrow op is an f32 one
            Operand::Value(v) if wide != ty => e.cvt(wide, ty, None, v),
            o => e.arg(o, wide),
        })
        .collect();
    let (x, y) = (args[0], args.get(1).copied().unwrap_or(args[0]));
    let mut r = e.func(f, wide, x, y);
    if wide != ty {
        r = e.cvt(ty, wide, Some(Rnd::Rn), r);
    }
    let Em { k, mut out, .. } = e;
    // the last op computes `r`: it takes over `id` and the result value
    let last_is_r = out.last().is_some_and(|&l| {
        l.0 as usize + 1 == k.ops.len()
            && r.0 as usize + 1 == k.values.len()
            && k.op(l).is_some_and(|o| o.results == [r])
    });
    let data = if last_is_r {
        out.pop();
        k.values.pop();
        k.ops.pop().map(|mut d| {
            d.results = vec![res];
            d
        })
    } else {
        Some(OpData {
            kind: OpKind::Mov { ty },
            operands: vec![r.into()],
            results: vec![res],
            regions: vec![],
            span,
        })
    };
    if let (Some(d), Some(slot)) = (data, k.ops.get_mut(id.0 as usize)) {
        *slot = d;
    }
    ops.extend(out);
    ops.push(id);
}

/// Appends scalar ops to a kernel, recording their ids (the builder's vocabulary, PTX's
/// argument order for `sel`).
struct Em<'k> {
    k: &'k mut Kernel,
    out: Vec<OpId>,
    span: Span,
    fused: bool,
}

/// The float immediate `v` of type `ty` (f32 or f64).
fn fc(ty: Ty, v: f64) -> Operand {
    if ty == Ty::F64 {
        dimm(v)
    } else {
        fimm(v as f32)
    }
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

impl Em<'_> {
    fn one(&mut self, kind: OpKind, operands: Vec<Operand>, ty: Ty) -> Value {
        self.k.values.push(Type::Scalar(ty));
        let v = Value(self.k.values.len() as u32 - 1);
        self.out.push(OpId(self.k.ops.len() as u32));
        self.k.ops.push(OpData {
            kind,
            operands,
            results: vec![v],
            regions: vec![],
            span: self.span,
        });
        v
    }
    /// An argument in a register (an immediate is moved into one first).
    fn arg(&mut self, o: Operand, ty: Ty) -> Value {
        match o {
            Operand::Value(v) => v,
            other => self.mov(ty, other),
        }
    }
    fn mov(&mut self, ty: Ty, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Mov { ty }, vec![a.into()], ty)
    }
    fn un(&mut self, op: UnOp, ty: Ty, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Unary { op, ty }, vec![a.into()], ty)
    }
    fn bin(&mut self, op: BinOp, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.one(OpKind::Binary { op, ty }, vec![a.into(), b.into()], ty)
    }
    fn add(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Add, ty, a, b)
    }
    fn sub(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Sub, ty, a, b)
    }
    fn mul(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Mul, ty, a, b)
    }
    fn div(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Div, ty, a, b)
    }
    fn fma(
        &mut self,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Value {
        self.one(OpKind::Fma { ty }, vec![a.into(), b.into(), c.into()], ty)
    }
    fn cmp(&mut self, c: Cmp, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.one(
            OpKind::Cmp { cmp: c, ty },
            vec![a.into(), b.into()],
            Ty::Pred,
        )
    }
    /// `p ? a : b`.
    fn sel(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>, p: Value) -> Value {
        self.one(
            OpKind::Select { ty },
            vec![p.into(), a.into(), b.into()],
            ty,
        )
    }
    fn cvt(&mut self, to: Ty, from: Ty, rnd: Option<Rnd>, a: Value) -> Value {
        let kind = OpKind::Cast {
            to,
            from,
            rnd,
            sat: false,
        };
        self.one(kind, vec![a.into()], to)
    }
    /// The same bits as `to` (`f64` ↔ `b64`, `f32` ↔ `b32`).
    fn bits(&mut self, to: Ty, a: Value) -> Value {
        self.one(OpKind::Bitcast { to }, vec![a.into()], to)
    }

    /// `p·c` and `p_lo = (a·b − p)` exactly, `p = a·b` rounded (`p` given): one `fma` where it
    /// rounds once; else Dekker's product of Veltkamp halves (0 where a split overflows, as
    /// for |a| > 2^996, where the caller's result does not need it).
    fn two_prod_err(&mut self, ty: Ty, a: Value, b: Value, p: Value) -> Value {
        if self.fused {
            let np = self.un(UnOp::Neg, ty, p);
            return self.fma(ty, a, b, np);
        }
        let split = |e: &mut Self, x: Value| {
            let t = e.mul(ty, x, dimm(134_217_729.0));
            let d = e.sub(ty, t, x);
            let hi = e.sub(ty, t, d);
            let lo = e.sub(ty, x, hi);
            (hi, lo)
        };
        let (ah, al) = split(self, a);
        let (bh, bl) = split(self, b);
        let t = self.mul(ty, ah, bh);
        let err = self.sub(ty, t, p);
        let t = self.mul(ty, ah, bl);
        let err = self.add(ty, err, t);
        let t = self.mul(ty, al, bh);
        let err = self.add(ty, err, t);
        let t = self.mul(ty, al, bl);
        let err = self.add(ty, err, t);
        let nan = self.cmp(Cmp::Nan, ty, err, err);
        self.sel(ty, dimm(0.0), err, nan)
    }

    fn func(&mut self, f: MathFn, ty: Ty, x: Value, y: Value) -> Value {
        let d = dimm;
        match (f, ty) {
            (MathFn::Exp, Ty::F64) => self.exp_dd(x, None),
            (MathFn::Log, Ty::F64) => self.log_f64(x),
            (MathFn::Tanh, Ty::F64) => self.tanh_f64(x),
            (MathFn::Erf, _) => self.erf(ty, x),
            (MathFn::Sin, _) => self.sin_cos(ty, x, false),
            (MathFn::Cos, _) => self.sin_cos(ty, x, true),
            (MathFn::Gelu, Ty::F64) => {
                // the cpu's order: (0.5·x)·(1 + erf(x·(1/√2)))
                let xs = self.mul(ty, x, d(std::f64::consts::FRAC_1_SQRT_2));
                let e = self.erf(ty, xs);
                let h = self.mul(ty, x, d(0.5));
                let o = self.add(ty, e, d(1.0));
                self.mul(ty, h, o)
            }
            (MathFn::Sigmoid, Ty::F64) => {
                let nx = self.un(UnOp::Neg, ty, x);
                let e = self.exp_dd(nx, None);
                let dn = self.add(ty, e, d(1.0));
                self.div(ty, d(1.0), dn)
            }
            (MathFn::Silu, Ty::F64) => {
                let nx = self.un(UnOp::Neg, ty, x);
                let e = self.exp_dd(nx, None);
                let dn = self.add(ty, e, d(1.0));
                self.div(ty, x, dn)
            }
            (MathFn::Pow, Ty::F64) => self.pow_f64(x, y),
            (MathFn::Exp, _) => {
                let t = self.mul(Ty::F32, x, fimm(LOG2E));
                self.un(UnOp::Ex2Approx, Ty::F32, t)
            }
            (MathFn::Log, _) => {
                let l = self.un(UnOp::Lg2Approx, Ty::F32, x);
                self.mul(Ty::F32, l, fimm(std::f32::consts::LN_2))
            }
            (MathFn::Tanh, _) => self.un(UnOp::TanhApprox, Ty::F32, x),
            (MathFn::Sigmoid, _) => self.sigmoid_f32(x),
            (MathFn::Silu, _) => {
                let s = self.sigmoid_f32(x);
                self.mul(Ty::F32, x, s)
            }
            (MathFn::Gelu, _) => self.gelu_f32(x),
            (MathFn::Pow, _) => {
                let ax = self.un(UnOp::Abs, Ty::F32, x);
                let l = self.un(UnOp::Lg2Approx, Ty::F32, ax);
                let t = self.mul(Ty::F32, y, l);
                let r = self.un(UnOp::Ex2Approx, Ty::F32, t);
                self.pow_rules(Ty::F32, x, y, r)
            }
        }
    }

    fn sigmoid_f32(&mut self, x: Value) -> Value {
        let t = self.mul(Ty::F32, x, fimm(-LOG2E));
        let e = self.un(UnOp::Ex2Approx, Ty::F32, t);
        let d = self.add(Ty::F32, e, fimm(1.0));
        self.un(UnOp::Rcp, Ty::F32, d)
    }

    /// `0.5·x·(1 + erf(x/√2))` with erf by Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7).
    fn gelu_f32(&mut self, x: Value) -> Value {
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
    fn exp_dd(&mut self, x: Value, lo: Option<Value>) -> Value {
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
    fn atanh_series(&mut self, z: Value, lo: u32) -> Value {
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
    fn log_f64(&mut self, x: Value) -> Value {
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
    fn log_reduce(&mut self, x: Value) -> (Value, Value) {
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
    fn log_specials(&mut self, x: Value, r: Value) -> Value {
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
    fn log_dd(&mut self, x: Value) -> (Value, Value) {
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
    fn pow_f64(&mut self, x: Value, y: Value) -> Value {
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
    fn pow_rules(&mut self, ty: Ty, x: Value, y: Value, r: Value) -> Value {
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
    fn erf(&mut self, ty: Ty, x: Value) -> Value {
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
    fn tanh_f64(&mut self, x: Value) -> Value {
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
    fn sin_cos(&mut self, ty: Ty, x: Value, cos: bool) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DType;
    use crate::tile::build::Builder;
    use crate::tile::ir::ParamRole;
    use tessera_lang::SourceMap;

    const MATH_FNS: [MathFn; 10] = [
        MathFn::Exp,
        MathFn::Log,
        MathFn::Tanh,
        MathFn::Sigmoid,
        MathFn::Silu,
        MathFn::Gelu,
        MathFn::Pow,
        MathFn::Erf,
        MathFn::Sin,
        MathFn::Cos,
    ];

    /// A kernel applying every math function, in `ty`, `chain` times over, inside a `tile.if`
    /// (so that nested regions are expanded too).
    fn kernel(ty: Ty, dt: DType, chain: usize) -> Kernel {
        let mut sm = SourceMap::new();
        let span = Span::new(sm.add("t.tsr", "x\n"), 0, 1);
        let mut b = Builder::new("m", span, [1, 1, 1], [32, 1, 1]);
        let x = b.param("x", Type::Global(dt), ParamRole::Input);
        let y = b.param("y", Type::Global(dt), ParamRole::Output);
        let t = b.tid_x();
        let v = b.load(ty, x, t, None, &[])[0];
        let ok = b.cmp(Cmp::Lt, Ty::U32, t, imm(16));
        let r = b.if_(
            ok,
            &[Type::Scalar(ty)],
            |b| {
                let mut a = v;
                for _ in 0..chain {
                    for f in MATH_FNS {
                        let args: Vec<Operand> = if f == MathFn::Pow {
                            vec![a.into(), fc(ty, 0.5)]
                        } else {
                            vec![a.into()]
                        };
                        a = b.math(f, ty, &args);
                    }
                }
                vec![a.into()]
            },
            |_| vec![v.into()],
        );
        b.store(ty, y, t, &[r[0].into()], None);
        b.finish()
    }

    fn math_ops(k: &Kernel, r: &Region) -> usize {
        r.ops
            .iter()
            .filter_map(|&id| k.op(id))
            .map(|o| {
                let own = usize::from(matches!(o.kind, OpKind::Math { .. }));
                own + o.regions.iter().map(|r| math_ops(k, r)).sum::<usize>()
            })
            .sum()
    }

    fn reachable(k: &Kernel, r: &Region) -> usize {
        r.ops
            .iter()
            .filter_map(|&id| k.op(id))
            .map(|o| 1 + o.regions.iter().map(|r| reachable(k, r)).sum::<usize>())
            .sum()
    }

    #[test]
    fn only_spirv_f32_exp_log_tanh_are_native() {
        for f in MATH_FNS {
            for ty in [Ty::F16, Ty::BF16, Ty::F32, Ty::F64] {
                assert_eq!(form(f, ty, MathTarget::Ptx), Form::Expanded, "{f:?} {ty:?}");
                let native = ty == Ty::F32 && matches!(f, MathFn::Exp | MathFn::Log | MathFn::Tanh);
                let want = if native { Form::Native } else { Form::Expanded };
                assert_eq!(form(f, ty, MathTarget::Spirv), want, "{f:?} {ty:?}");
            }
        }
    }

    #[test]
    fn expanded_kernels_are_valid_tile_ir_with_only_native_math_left() {
        for (ty, dt) in [
            (Ty::F32, DType::F32),
            (Ty::F64, DType::F64),
            (Ty::F16, DType::F16),
            (Ty::BF16, DType::BF16),
        ] {
            let k = kernel(ty, dt, 1);
            for target in [MathTarget::Ptx, MathTarget::Spirv] {
                let e = expand(&k, target);
                assert!(matches!(e, Cow::Owned(_)));
                crate::tile::check::check(&e)
                    .unwrap_or_else(|err| panic!("{ty:?} {target:?}: {err}"));
                // every op is reachable once: none left dead in the arena
                assert_eq!(reachable(&e, &e.body), e.ops.len(), "{ty:?} {target:?}");
                let left = math_ops(&e, &e.body);
                let native = if target == MathTarget::Spirv && ty == Ty::F32 {
                    3
                } else {
                    0
                };
                assert_eq!(left, native, "{ty:?} {target:?}");
            }
        }
    }

    #[test]
    fn a_kernel_without_expanded_math_is_borrowed() {
        let mut k = kernel(Ty::F32, DType::F32, 1);
        for op in &mut k.ops {
            if let OpKind::Math { f, .. } = op.kind {
                if !matches!(f, MathFn::Exp | MathFn::Log | MathFn::Tanh) {
                    op.kind = OpKind::Math {
                        f: MathFn::Exp,
                        ty: Ty::F32,
                    };
                    op.operands.truncate(1);
                }
            }
        }
        assert!(matches!(expand(&k, MathTarget::Spirv), Cow::Borrowed(_)));
        assert!(matches!(expand(&k, MathTarget::Ptx), Cow::Owned(_)));
    }

    #[test]
    fn the_expansion_grows_linearly() {
        let one = expand(&kernel(Ty::F64, DType::F64, 1), MathTarget::Spirv)
            .ops
            .len();
        let eight = expand(&kernel(Ty::F64, DType::F64, 8), MathTarget::Spirv)
            .ops
            .len();
        let base = kernel(Ty::F64, DType::F64, 0).ops.len();
        assert_eq!(eight - base, 8 * (one - base));
    }
}
