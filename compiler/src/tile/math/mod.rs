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
//! kernel without math is returned as it is. The functions themselves are in `funcs.rs`.

mod funcs;

use super::build::{dimm, fimm};
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
        let math = match op.kind {
            OpKind::Math { f, ty } if form(f, ty, target) == Form::Expanded => Some((f, ty)),
            _ => None,
        };
        if !op.regions.is_empty() {
            let inner = std::mem::take(&mut op.regions);
            let inner: Vec<Region> = inner.into_iter().map(|r| region(k, target, r)).collect();
            if let Some(op) = k.ops.get_mut(id.0 as usize) {
                op.regions = inner;
            }
        }
        match math {
            Some((f, ty)) => expand_op(k, target, id, f, ty, &mut ops),
            None => ops.push(id),
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
}

#[cfg(test)]
mod tests;
