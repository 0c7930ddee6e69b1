//! Typed values of an elementwise body in Tile IR, and the cpu's semantics on them: the
//! conversions between dtypes ([`conv`]), the unary and binary ops ([`unary_val`],
//! [`binary_val`]), float → int casts and integer floor division with their error predicates
//! (what sets the status word).

use super::blocks::{fconst, round_tf32};
use super::{no, R};
use crate::graph::{BinaryOp, DType, UnaryOp};
use crate::scalar::{BinOp, Cmp, Rnd, Ty, UnOp};
use crate::tile::build::{dimm, fimm, imm, Builder};
use crate::tile::ir::{MathFn, Operand, Value};

/// A body value: floats of every dtype up to fp32 as f32 (rounded to their dtype), fp64 in
/// `f64`, int32 and int8 in `s32` (int8 sign-extended from its byte: [`wrap8`]), int64 in
/// `s64`, bool as a predicate.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Val {
    F(Value),
    D(Value),
    I32(Value),
    I64(Value),
    B(Value),
}

pub fn is_float(d: DType) -> bool {
    matches!(
        d,
        DType::F32 | DType::TF32 | DType::BF16 | DType::F16 | DType::F8E4M3 | DType::F8E5M2
    )
}

pub fn is_int(d: DType) -> bool {
    matches!(d, DType::I32 | DType::I64 | DType::I8)
}

/// The low byte of an `s32` value, sign-extended: int8's wrapping, as the cpu's int8 results.
pub fn wrap8(b: &mut Builder, x: Value) -> Value {
    let bits = b.bitcast(Ty::B32, x);
    let hi = b.bin(BinOp::Shl, Ty::B32, bits, imm(24));
    let s = b.bitcast(Ty::S32, hi);
    b.bin(BinOp::Shr, Ty::S32, s, imm(24))
}

/// Rounds an f32 value to `d` (bf16/fp16: round to nearest even and back), as the cpu does
/// for an intermediate of that dtype.
pub fn round_to(b: &mut Builder, d: DType, v: Value) -> R<Value> {
    match d {
        DType::F32 => Ok(v),
        DType::TF32 => {
            let r = round_tf32(b, v);
            Ok(b.bitcast(Ty::F32, r))
        }
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            let h = b.cast(t, Ty::F32, Some(Rnd::Rn), v);
            Ok(b.cast(Ty::F32, t, None, h))
        }
        DType::F8E4M3 | DType::F8E5M2 => {
            let code = super::blocks::fp8_encode(b, d, v);
            Ok(super::blocks::fp8_decode(b, d, code))
        }
        other => no(format!("{other} values")),
    }
}

/// Converts `v` to the form of dtype `d` (the cpu's casts: ints to float round to nearest,
/// bool is 0/1, a nonzero value is true; int64 → int32 keeps the low 32 bits).
pub fn conv(b: &mut Builder, v: Val, d: DType) -> R<Val> {
    if d == DType::F64 {
        return Ok(Val::D(match v {
            Val::D(x) => x,
            Val::F(x) => b.cast(Ty::F64, Ty::F32, None, x),
            Val::I32(x) => b.cast(Ty::F64, Ty::S32, Some(Rnd::Rn), x),
            Val::I64(x) => b.cast(Ty::F64, Ty::S64, Some(Rnd::Rn), x),
            Val::B(p) => b.select(Ty::F64, p, dimm(1.0), dimm(0.0)),
        }));
    }
    if is_float(d) {
        let f = match v {
            Val::F(x) => x,
            Val::D(x) => b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), x),
            Val::I32(x) => b.cast(Ty::F32, Ty::S32, Some(Rnd::Rn), x),
            Val::I64(x) => b.cast(Ty::F32, Ty::S64, Some(Rnd::Rn), x),
            Val::B(p) => b.select(Ty::F32, p, fimm(1.0), fimm(0.0)),
        };
        return Ok(Val::F(round_to(b, d, f)?));
    }
    Ok(match (v, d) {
        (Val::I32(x), DType::I32) => Val::I32(x),
        (Val::I64(x), DType::I64) => Val::I64(x),
        (Val::I32(x), DType::I64) => Val::I64(b.cast(Ty::S64, Ty::S32, None, x)),
        (Val::I64(x), DType::I32) => {
            let lo = b.cast(Ty::U32, Ty::U64, None, x);
            Val::I32(b.mov(Ty::S32, lo))
        }
        (Val::B(p), DType::I32) => Val::I32(b.select(Ty::S32, p, imm(1), imm(0))),
        (Val::B(p), DType::I64) => Val::I64(b.select(Ty::S64, p, imm(1), imm(0))),
        (Val::B(p), DType::Bool) => Val::B(p),
        (Val::F(x), DType::Bool) => Val::B(b.cmp(Cmp::Ne, Ty::F32, x, fimm(0.0))),
        (Val::D(x), DType::Bool) => Val::B(b.cmp(Cmp::Ne, Ty::F64, x, dimm(0.0))),
        (Val::I32(x), DType::Bool) => Val::B(b.cmp(Cmp::Ne, Ty::S32, x, imm(0))),
        (Val::I64(x), DType::Bool) => Val::B(b.cmp(Cmp::Ne, Ty::S64, x, imm(0))),
        (Val::I32(x), DType::I8) => Val::I32(wrap8(b, x)),
        (Val::I64(x), DType::I8) => {
            let lo = b.cast(Ty::U32, Ty::U64, None, x);
            let lo = b.mov(Ty::S32, lo);
            Val::I32(wrap8(b, lo))
        }
        (Val::B(p), DType::I8) => Val::I32(b.select(Ty::S32, p, imm(1), imm(0))),
        (Val::F(_) | Val::D(_), DType::I32 | DType::I64 | DType::I8) => {
            return no("float to int conversions outside a cast")
        }
        (_, other) => return no(format!("{other} values")),
    })
}

fn f_of(v: Val) -> R<Value> {
    match v {
        Val::F(r) => Ok(r),
        _ => no("a non-float value where a float is needed"),
    }
}

fn d_of(v: Val) -> R<Value> {
    match v {
        Val::D(r) => Ok(r),
        _ => no("a non-fp64 value where an fp64 one is needed"),
    }
}

fn cmp_of(op: BinaryOp) -> Option<Cmp> {
    Some(match op {
        BinaryOp::Eq => Cmp::Eq,
        BinaryOp::Ne => Cmp::Ne,
        BinaryOp::Lt => Cmp::Lt,
        BinaryOp::Le => Cmp::Le,
        BinaryOp::Gt => Cmp::Gt,
        BinaryOp::Ge => Cmp::Ge,
        _ => return None,
    })
}

/// The dtype two operands are compared in (the cpu's promotion; bool compares as int32).
fn common(a: DType, b: DType) -> DType {
    if a == DType::F64 || b == DType::F64 {
        DType::F64
    } else if is_float(a) || is_float(b) {
        DType::F32
    } else if a == DType::I64 || b == DType::I64 {
        DType::I64
    } else {
        DType::I32
    }
}

/// Both operands as integers of `d`: (`s32`|`s64`, x, y).
pub fn int_pair(b: &mut Builder, x: Val, y: Val, d: DType) -> R<(Ty, Value, Value)> {
    match (conv(b, x, d)?, conv(b, y, d)?) {
        (Val::I32(x), Val::I32(y)) => Ok((Ty::S32, x, y)),
        (Val::I64(x), Val::I64(y)) => Ok((Ty::S64, x, y)),
        _ => no("an integer op on other values"),
    }
}

/// One float binary op in `ty` (`f32` or `f64`; `div` is the IEEE `div.rn`).
fn binary_float(b: &mut Builder, op: BinaryOp, ty: Ty, x: Value, y: Value) -> R<Value> {
    if op == BinaryOp::Pow {
        return Ok(b.math(MathFn::Pow, ty, &[x.into(), y.into()]));
    }
    if matches!(op, BinaryOp::FloorDiv | BinaryOp::Mod) {
        return Ok(float_divmod(b, op, ty, x, y));
    }
    let o = crate::kernels::index::float_binop(op, ty)?;
    Ok(b.bin(o, ty, x, y))
}

/// A float comparison; `!=` is the negation of the ordered `==` (NaN != anything).
fn float_cmp(b: &mut Builder, c: Cmp, ty: Ty, x: Value, y: Value) -> Value {
    if c == Cmp::Ne {
        let eq = b.cmp(Cmp::Eq, ty, x, y);
        b.unary(UnOp::Not, Ty::Pred, eq)
    } else {
        b.cmp(c, ty, x, y)
    }
}

/// One binary op on values of dtypes `dx`, `dy`; `out` is the result dtype.
pub fn binary_val(
    b: &mut Builder,
    op: BinaryOp,
    (x, dx): (Val, DType),
    (y, dy): (Val, DType),
    out: DType,
) -> R<Val> {
    if let Some(c) = cmp_of(op) {
        let d = common(dx, dy);
        let p = if d == DType::F64 {
            let (x, y) = (d_of(conv(b, x, d)?)?, d_of(conv(b, y, d)?)?);
            float_cmp(b, c, Ty::F64, x, y)
        } else if d == DType::F32 {
            let (x, y) = (f_of(conv(b, x, d)?)?, f_of(conv(b, y, d)?)?);
            float_cmp(b, c, Ty::F32, x, y)
        } else {
            let (ty, x, y) = int_pair(b, x, y, d)?;
            b.cmp(c, ty, x, y)
        };
        return conv(b, Val::B(p), out);
    }
    if matches!(op, BinaryOp::LogicalAnd | BinaryOp::LogicalOr) {
        let (Val::B(x), Val::B(y)) = (conv(b, x, DType::Bool)?, conv(b, y, DType::Bool)?) else {
            return no("a logical op on other values");
        };
        let o = if op == BinaryOp::LogicalAnd {
            BinOp::And
        } else {
            BinOp::Or
        };
        let r = b.bin(o, Ty::Pred, x, y);
        return conv(b, Val::B(r), out);
    }
    if out == DType::F64 {
        let x = d_of(conv(b, x, out)?)?;
        let y = d_of(conv(b, y, out)?)?;
        return Ok(Val::D(binary_float(b, op, Ty::F64, x, y)?));
    }
    if is_float(out) {
        let x = f_of(conv(b, x, DType::F32)?)?;
        let y = f_of(conv(b, y, DType::F32)?)?;
        let r = binary_float(b, op, Ty::F32, x, y)?;
        return Ok(Val::F(round_to(b, out, r)?));
    }
    if is_int(out) {
        let (ty, x, y) = int_pair(b, x, y, out)?;
        let o = match op {
            BinaryOp::Add => BinOp::Add,
            BinaryOp::Sub => BinOp::Sub,
            BinaryOp::Mul => BinOp::Mul,
            BinaryOp::Maximum => BinOp::Max,
            BinaryOp::Minimum => BinOp::Min,
            other => return no(format!("the integer op {}", other.name())),
        };
        let r = b.bin(o, ty, x, y);
        return Ok(int_val(ty, r));
    }
    no(format!("{out} results of {}", op.name()))
}

/// An `s32`/`s64` value.
pub fn int_val(ty: Ty, r: Value) -> Val {
    if ty == Ty::S32 {
        Val::I32(r)
    } else {
        Val::I64(r)
    }
}

/// One float unary op in f32 (math functions as `tile.math`).
pub fn unary_f32(b: &mut Builder, u: UnaryOp, x: Value) -> R<Value> {
    let math = |b: &mut Builder, f: MathFn| b.math(f, Ty::F32, &[x.into()]);
    Ok(match u {
        UnaryOp::Neg => b.unary(UnOp::Neg, Ty::F32, x),
        UnaryOp::Abs => b.unary(UnOp::Abs, Ty::F32, x),
        UnaryOp::Relu => b.bin(BinOp::Max, Ty::F32, x, fimm(0.0)),
        UnaryOp::Exp => math(b, MathFn::Exp),
        UnaryOp::Log => math(b, MathFn::Log),
        UnaryOp::Sqrt => b.unary(UnOp::Sqrt, Ty::F32, x),
        UnaryOp::Rsqrt => b.unary(UnOp::RsqrtApprox, Ty::F32, x),
        UnaryOp::Tanh => b.unary(UnOp::TanhApprox, Ty::F32, x),
        UnaryOp::Sigmoid => math(b, MathFn::Sigmoid),
        UnaryOp::Silu => math(b, MathFn::Silu),
        UnaryOp::Gelu => math(b, MathFn::Gelu),
        UnaryOp::Erf => math(b, MathFn::Erf),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign => {
            rounding(b, u, Ty::F32, x, fimm(0.0), fimm(1.0))
        }
        UnaryOp::Sin => math(b, MathFn::Sin),
        UnaryOp::Cos => math(b, MathFn::Cos),
        UnaryOp::Not | UnaryOp::IsNan | UnaryOp::IsFinite => return no(u.name()),
    })
}

/// `floor ceil round` (`cvt.rmi/.rpi/.rni` to the same float type) and `sign` (NumPy's:
/// ±1, +0 for ±0, NaN for NaN) of `x` in float type `ty`, whose 0 and 1 are `zero` and `one`.
fn rounding(b: &mut Builder, u: UnaryOp, ty: Ty, x: Value, zero: Operand, one: Operand) -> Value {
    let rnd = match u {
        UnaryOp::Floor => Rnd::Rmi,
        UnaryOp::Ceil => Rnd::Rpi,
        UnaryOp::Round => Rnd::Rni,
        _ => {
            let pos = b.cmp(Cmp::Gt, ty, x, zero);
            let neg = b.cmp(Cmp::Lt, ty, x, zero);
            let nan = b.cmp(Cmp::Nan, ty, x, x);
            let r0 = b.select(ty, nan, x, zero);
            let minus_one = b.unary(UnOp::Neg, ty, one);
            let r1 = b.select(ty, neg, minus_one, r0);
            return b.select(ty, pos, one, r1);
        }
    };
    b.cast(ty, ty, Some(rnd), x)
}

/// `isnan` / `isfinite` of a float value, as a predicate.
fn float_test(b: &mut Builder, u: UnaryOp, x: Val) -> R<Value> {
    let (ty, r, inf) = match x {
        Val::F(r) => (Ty::F32, r, fimm(f32::INFINITY)),
        Val::D(r) => (Ty::F64, r, dimm(f64::INFINITY)),
        _ => return no(format!("{} of integer values", u.name())),
    };
    Ok(if u == UnaryOp::IsNan {
        b.cmp(Cmp::Nan, ty, r, r)
    } else {
        // |x| < inf is false for ±inf and for NaN (an ordered comparison)
        let a = b.unary(UnOp::Abs, ty, r);
        b.cmp(Cmp::Lt, ty, a, inf)
    })
}

/// One unary op in fp64 (those with an fp64 sequence).
pub fn unary_f64(b: &mut Builder, u: UnaryOp, x: Value) -> R<Value> {
    let math = |b: &mut Builder, f: MathFn| b.math(f, Ty::F64, &[x.into()]);
    Ok(match u {
        UnaryOp::Neg => b.unary(UnOp::Neg, Ty::F64, x),
        UnaryOp::Abs => b.unary(UnOp::Abs, Ty::F64, x),
        UnaryOp::Relu => b.bin(BinOp::Max, Ty::F64, x, dimm(0.0)),
        UnaryOp::Exp => math(b, MathFn::Exp),
        UnaryOp::Sqrt => b.unary(UnOp::Sqrt, Ty::F64, x),
        UnaryOp::Rsqrt => {
            let s = b.unary(UnOp::Sqrt, Ty::F64, x);
            b.bin(BinOp::Div, Ty::F64, dimm(1.0), s)
        }
        UnaryOp::Sigmoid => math(b, MathFn::Sigmoid),
        UnaryOp::Silu => math(b, MathFn::Silu),
        UnaryOp::Log => math(b, MathFn::Log),
        UnaryOp::Tanh => math(b, MathFn::Tanh),
        UnaryOp::Gelu => math(b, MathFn::Gelu),
        UnaryOp::Erf => math(b, MathFn::Erf),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign => {
            rounding(b, u, Ty::F64, x, dimm(0.0), dimm(1.0))
        }
        UnaryOp::Sin => math(b, MathFn::Sin),
        UnaryOp::Cos => math(b, MathFn::Cos),
        UnaryOp::Not | UnaryOp::IsNan | UnaryOp::IsFinite => return no(u.name()),
    })
}

/// One unary op on a value; `out` is the result dtype.
pub fn unary_val(b: &mut Builder, u: UnaryOp, x: Val, out: DType) -> R<Val> {
    if u == UnaryOp::Not {
        let Val::B(p) = conv(b, x, DType::Bool)? else {
            return no("logical_not of other values");
        };
        let r = b.unary(UnOp::Not, Ty::Pred, p);
        return conv(b, Val::B(r), out);
    }
    if matches!(u, UnaryOp::IsNan | UnaryOp::IsFinite) {
        let p = float_test(b, u, x)?;
        return conv(b, Val::B(p), out);
    }
    if out == DType::F64 {
        let x = d_of(conv(b, x, out)?)?;
        return Ok(Val::D(unary_f64(b, u, x)?));
    }
    if is_int(out) && matches!(u, UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round) {
        // integers are already integral
        return conv(b, x, out);
    }
    if is_int(out)
        && matches!(
            u,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Sign
        )
    {
        let (ty, r) = match conv(b, x, out)? {
            Val::I32(r) => (Ty::S32, r),
            Val::I64(r) => (Ty::S64, r),
            _ => return no("an integer op on other values"),
        };
        let r = match u {
            UnaryOp::Neg => b.unary(UnOp::Neg, ty, r),
            UnaryOp::Abs => b.unary(UnOp::Abs, ty, r),
            UnaryOp::Sign => {
                // (x > 0) - (x < 0)
                let pos = b.cmp(Cmp::Gt, ty, r, imm(0));
                let neg = b.cmp(Cmp::Lt, ty, r, imm(0));
                let p = b.select(ty, pos, imm(1), imm(0));
                let n = b.select(ty, neg, imm(1), imm(0));
                b.bin(BinOp::Sub, ty, p, n)
            }
            _ => b.bin(BinOp::Max, ty, r, imm(0)),
        };
        return Ok(int_val(ty, r));
    }
    let x = f_of(conv(b, x, DType::F32)?)?;
    let r = unary_f32(b, u, x)?;
    conv(b, Val::F(r), out)
}

/// A float → int32/int64 cast, truncating toward zero (`cvt.rzi`), and the predicate "this
/// element is NaN or out of the dtype's range" (the cpu's E0500; the converted value is then
/// not used). The bounds are those of `float_to_int` on the cpu: `lo < x < hi` after
/// truncation, written for each source precision so that the comparison is exact.
pub fn cast_to_int(b: &mut Builder, x: Val, d: DType) -> R<(Val, Value)> {
    let (sty, xr) = match x {
        Val::F(r) => (Ty::F32, r),
        Val::D(r) => (Ty::F64, r),
        _ => return no("an int cast of a non-float value"),
    };
    let (dty, bits) = match d {
        DType::I8 => (Ty::S32, 7),
        DType::I32 => (Ty::S32, 31),
        DType::I64 => (Ty::S64, 63),
        other => return no(format!("casts to {other}")),
    };
    let p2 = 2f64.powi(bits);
    let imm_of = |v: f64| -> Operand {
        if sty == Ty::F32 {
            fimm(v as f32)
        } else {
            dimm(v)
        }
    };
    // Every value above -2^bits - 1 truncates into range; in f32 (and for int64 in f64) the
    // next value below -2^bits is already below -2^bits - 1.
    let lo_ok = if sty == Ty::F64 && d == DType::I32 || d == DType::I8 {
        b.cmp(Cmp::Gt, sty, xr, imm_of(-p2 - 1.0))
    } else {
        b.cmp(Cmp::Ge, sty, xr, imm_of(-p2))
    };
    let hi_ok = b.cmp(Cmp::Lt, sty, xr, imm_of(p2));
    let ok = b.bin(BinOp::And, Ty::Pred, lo_ok, hi_ok);
    let bad = b.unary(UnOp::Not, Ty::Pred, ok);
    let v = b.cast(dty, sty, Some(Rnd::Rzi), xr);
    Ok((int_val(dty, v), bad))
}

/// Python's integer `//` or `%` (floor division: the remainder has the divisor's sign) in
/// `ty` (`s32`/`s64`, wrapping like the cpu), and the predicate "the divisor is 0" (the
/// cpu's E0500; the division then runs by 1 and its value is not used).
pub fn int_divmod(b: &mut Builder, op: BinaryOp, ty: Ty, x: Value, y: Value) -> (Value, Value) {
    let bits = if ty == Ty::S32 { Ty::B32 } else { Ty::B64 };
    let zero = b.cmp(Cmp::Eq, ty, y, imm(0));
    let ys = b.select(ty, zero, imm(1), y);
    let q = b.bin(BinOp::Div, ty, x, ys);
    let r = b.bin(BinOp::Rem, ty, x, ys);
    let nz = b.cmp(Cmp::Ne, ty, r, imm(0));
    let sx = b.bin(BinOp::Xor, bits, r, ys);
    let opposite = b.cmp(Cmp::Lt, ty, sx, imm(0));
    let fix = b.bin(BinOp::And, Ty::Pred, nz, opposite);
    let v = if op == BinaryOp::FloorDiv {
        let q1 = b.sub(ty, q, imm(1));
        b.select(ty, fix, q1, q)
    } else {
        let r1 = b.add(ty, r, ys);
        b.select(ty, fix, r1, r)
    };
    (v, zero)
}

/// Integer `x ** y` (wrapping, as the cpu's `int_pow`): square-and-multiply over the
/// exponent's bits (31 or 63 steps, a fixed count), and the predicate "the exponent is
/// negative" (the cpu's error; the value is then not used).
pub fn int_pow(b: &mut Builder, ty: Ty, x: Value, y: Value) -> (Value, Value) {
    let (bits, steps) = if ty == Ty::S32 {
        (Ty::B32, 31)
    } else {
        (Ty::B64, 63)
    };
    let neg = b.cmp(Cmp::Lt, ty, y, imm(0));
    let one = b.mov(ty, imm(1));
    let r = b.for_(imm(0), imm(steps), imm(1), &[one, x, y], None, |b, _, c| {
        let (acc, base, e) = (c[0], c[1], c[2]);
        let bit = b.bin(BinOp::And, bits, e, imm(1));
        let odd = b.cmp(Cmp::Ne, ty, bit, imm(0));
        let times = b.mul(ty, acc, base);
        let acc = b.select(ty, odd, times, acc);
        let base = b.mul(ty, base, base);
        let e = b.bin(BinOp::Shr, ty, e, imm(1));
        vec![acc.into(), base.into(), e.into()]
    });
    (r[0], neg)
}

/// `x` with the sign bit of `s` (both of `ty`, `f32` or `f64`).
pub(super) fn copysign(b: &mut Builder, ty: Ty, x: Value, s: Value) -> Value {
    let (bits, sign) = if ty == Ty::F64 {
        (Ty::B64, i64::MIN)
    } else {
        (Ty::B32, i64::from(i32::MIN))
    };
    let xb = b.bitcast(bits, x);
    let sb = b.bitcast(bits, s);
    let mag = b.bin(BinOp::And, bits, xb, imm(!sign));
    let sg = b.bin(BinOp::And, bits, sb, imm(sign));
    let r = b.bin(BinOp::Or, bits, mag, sg);
    b.bitcast(ty, r)
}

/// `fmod(x, y)` of two f64 values, exactly (C's `fmod`: the sign of `x`; NaN for an infinite
/// `x`, a zero `y` or a NaN; `x` itself when `|x| < |y|`): the significands as integers,
/// `mx mod my` and then, for the exponent difference `d`, `r = (r << k) mod my` for chunks
/// `k ≤ 11` (r < 2^53, so the shift fits in 64 bits) in a loop of `⌈d/11⌉` steps (at most 191;
/// one or two for operands of similar size), scaled back by `2^(ey−1075)` (exact: the
/// remainder is a multiple of `y`'s ulp below `|y|`).
fn fmod_f64(b: &mut Builder, x: Value, y: Value) -> Value {
    const FRAC: i64 = (1 << 52) - 1;
    let ax = b.unary(UnOp::Abs, Ty::F64, x);
    let ay = b.unary(UnOp::Abs, Ty::F64, y);
    let parts = |b: &mut Builder, a: Value| {
        let bits = b.bitcast(Ty::B64, a);
        let field = b.bin(BinOp::Shr, Ty::B64, bits, imm(52));
        let field = b.bitcast(Ty::U64, field);
        let frac = b.bin(BinOp::And, Ty::B64, bits, imm(FRAC));
        let normal = b.cmp(Cmp::Ne, Ty::U64, field, imm(0));
        let implicit = b.select(Ty::B64, normal, imm(1 << 52), imm(0));
        let m = b.bin(BinOp::Or, Ty::B64, frac, implicit);
        let m = b.bitcast(Ty::U64, m);
        let e = b.cast(Ty::U32, Ty::U64, None, field);
        let e = b.bin(BinOp::Max, Ty::U32, e, imm(1));
        (m, e)
    };
    let (mx, ex) = parts(b, ax);
    let (my, ey) = parts(b, ay);
    // |x| ≥ |y| here (else the result is x): ex ≥ ey.
    let ge = b.cmp(Cmp::Ge, Ty::U32, ex, ey);
    let d = b.sub(Ty::U32, ex, ey);
    let d = b.select(Ty::U32, ge, d, imm(0));
    let my1 = b.bin(BinOp::Max, Ty::U64, my, imm(1));
    let r0 = b.bin(BinOp::Rem, Ty::U64, mx, my1);
    let steps = b.add(Ty::U32, d, imm(10));
    let steps = b.bin(BinOp::Div, Ty::U32, steps, imm(11));
    let out = b.for_(imm(0), steps, imm(1), &[r0, d], None, |b, _, c| {
        let (r, left) = (c[0], c[1]);
        let k = b.bin(BinOp::Min, Ty::U32, left, imm(11));
        let rb = b.bitcast(Ty::B64, r);
        let sh = b.bin(BinOp::Shl, Ty::B64, rb, k);
        let sh = b.bitcast(Ty::U64, sh);
        let r = b.bin(BinOp::Rem, Ty::U64, sh, my1);
        let left = b.sub(Ty::U32, left, k);
        vec![r.into(), left.into()]
    });
    let r = out[0];
    // 2^(ey − 1075): a normal power for ey ≥ 53, else the subnormal bit ey − 1.
    let big = b.cmp(Cmp::Ge, Ty::U32, ey, imm(53));
    let en = b.sub(Ty::U32, ey, imm(52));
    let es = b.sub(Ty::U32, ey, imm(1));
    let en = b.cast(Ty::U64, Ty::U32, None, en);
    let en = b.bitcast(Ty::B64, en);
    let pn = b.bin(BinOp::Shl, Ty::B64, en, imm(52));
    let one = b.mov(Ty::B64, imm(1));
    let ps = b.bin(BinOp::Shl, Ty::B64, one, es);
    let p = b.select(Ty::B64, big, pn, ps);
    let scale = b.bitcast(Ty::F64, p);
    let rf = b.cast(Ty::F64, Ty::U64, Some(Rnd::Rn), r);
    let v = b.mul(Ty::F64, rf, scale);
    let v = copysign(b, Ty::F64, v, x);
    // |x| < |y| (and y = ±inf with x finite): x; x inf or NaN, y zero or NaN: NaN.
    let lt = b.cmp(Cmp::Lt, Ty::F64, ax, ay);
    let v = b.select(Ty::F64, lt, x, v);
    let xinf = b.cmp(Cmp::Eq, Ty::F64, ax, dimm(f64::INFINITY));
    let y0 = b.cmp(Cmp::Eq, Ty::F64, ay, dimm(0.0));
    let bad = b.bin(BinOp::Or, Ty::Pred, xinf, y0);
    let xn = b.cmp(Cmp::Nan, Ty::F64, x, x);
    let yn = b.cmp(Cmp::Nan, Ty::F64, y, y);
    let nan = b.bin(BinOp::Or, Ty::Pred, xn, yn);
    let bad = b.bin(BinOp::Or, Ty::Pred, bad, nan);
    b.select(Ty::F64, bad, dimm(f64::NAN), v)
}

/// Python's float `//` or `%` in `ty` (`f32` or `f64`), as the cpu's `py_divmod`: the exact
/// `fmod` ([`fmod_f64`]; f32 operands are exact in f64 and so is their remainder), then
/// `div = (x − m) / y`, the remainder moved to the divisor's sign (`m + y`, `div − 1`), a
/// zero remainder given the divisor's sign, and the quotient `floor(div)` (+1 when
/// `div − floor(div) > ½`), a zero quotient with the sign of `x / y`; `y = 0` gives `x / y`
/// and a NaN remainder.
fn float_divmod(b: &mut Builder, op: BinaryOp, ty: Ty, x: Value, y: Value) -> Value {
    let fc = |v: f64| fconst(ty, v);
    let (xd, yd) = if ty == Ty::F64 {
        (x, y)
    } else {
        (
            b.cast(Ty::F64, Ty::F32, None, x),
            b.cast(Ty::F64, Ty::F32, None, y),
        )
    };
    let m = fmod_f64(b, xd, yd);
    let m = if ty == Ty::F64 {
        m
    } else {
        b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), m)
    };
    let zero = b.mov(ty, fc(0.0));
    let xm = b.sub(ty, x, m);
    let div = b.bin(BinOp::Div, ty, xm, y);
    let mz = float_cmp(b, Cmp::Ne, ty, m, zero);
    let yneg = b.cmp(Cmp::Lt, ty, y, fc(0.0));
    let mneg = b.cmp(Cmp::Lt, ty, m, fc(0.0));
    let differ = b.bin(BinOp::Xor, Ty::Pred, yneg, mneg);
    let adj = b.bin(BinOp::And, Ty::Pred, mz, differ);
    let my = b.add(ty, m, y);
    let m2 = b.select(ty, adj, my, m);
    let d1 = b.sub(ty, div, fc(1.0));
    let div = b.select(ty, adj, d1, div);
    if op == BinaryOp::Mod {
        let z = copysign(b, ty, zero, y);
        return b.select(ty, mz, m2, z);
    }
    let f = b.cast(ty, ty, Some(Rnd::Rmi), div);
    let frac = b.sub(ty, div, f);
    let up = b.cmp(Cmp::Gt, ty, frac, fc(0.5));
    let f1 = b.add(ty, f, fc(1.0));
    let f = b.select(ty, up, f1, f);
    let q = b.bin(BinOp::Div, ty, x, y);
    let z = copysign(b, ty, zero, q);
    let nz = float_cmp(b, Cmp::Ne, ty, div, zero);
    let fd = b.select(ty, nz, f, z);
    let y0 = b.cmp(Cmp::Eq, ty, y, fc(0.0));
    b.select(ty, y0, q, fd)
}
