//! Tile IR → Target IR: instantiates the block program of a [`TileKernel`] with the
//! [`KernelBuilder`]. Every instruction carries the span of the Graph op it comes from
//! (the fused body's ops, the epilogue steps), so the PTX has `.loc` lines into the `.tsr`.
//!
//! Kernel parameters, in order: one pointer per input buffer (the tile kernel's `inputs`),
//! the output pointer, then the `u32` sizes listed in [`Lowered::scalars`].

use super::math::{exp, exp_f64, gelu, pow_f32, round_tf32, sigmoid, LOG2E};
use crate::graph::{BinaryOp, DType, Graph, Op, Scalar, UnaryOp, ValueId};
use crate::target::builder::{fimm, imm};
use crate::target::{
    BinOp, BlockId, Cmp, Dim, Kernel, KernelBuilder, Op as TOp, Operand, Pack, ParamTy, Reg, Rnd,
    SReg, ShflMode, Space, TargetError, Ty, UnOp,
};
use crate::tile::{AttnBatch, RowOp, Shape, TileKernel};
use tessera_lang::Span;

/// A lowered kernel and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    pub kernel: Kernel,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The trailing `u32` parameters.
    pub scalars: Vec<u32>,
    /// The kernel takes one more pointer after the output: a `u32` status word, zero before
    /// the launch, that a thread sets to 1 when an element hits an error the cpu reports
    /// (integer `//` or `%` by zero, a float → int cast of NaN or out of range). The result
    /// is then not valid: the caller reports the error (by evaluating the op on the cpu).
    pub status: bool,
}

/// Why Target IR could not be produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// Not supported yet (the caller falls back): the reason.
    NotLowered(String),
    /// The builder's verifier rejected the kernel (a compiler bug).
    Target(TargetError),
}

impl From<TargetError> for Error {
    fn from(e: TargetError) -> Error {
        Error::Target(e)
    }
}

type R<T> = Result<T, Error>;

fn no<T>(why: impl Into<String>) -> R<T> {
    Err(Error::NotLowered(why.into()))
}

fn ptr_param(b: &mut KernelBuilder, name: &str) -> Reg {
    let p = b.param(name, ParamTy::Ptr);
    let r = b.ld_param(p);
    b.cvta_global(r)
}

fn u32_param(b: &mut KernelBuilder, name: &str) -> Reg {
    let p = b.param(name, ParamTy::U32);
    b.ld_param(p)
}

fn dsize(d: DType) -> i64 {
    match d {
        DType::F16 | DType::BF16 => 2,
        DType::I64 | DType::F64 => 8,
        DType::Bool | DType::I8 | DType::F8E4M3 | DType::F8E5M2 => 1,
        _ => 4,
    }
}

/// Loads element `idx` of a `d` tensor at `base` as f32 (into `dst` when given, guarded by
/// `guard`).
fn load_f32(b: &mut KernelBuilder, d: DType, base: Reg, idx: Reg, guard: Option<Reg>) -> Reg {
    let addr = b.mad_wide(Ty::U32, idx, imm(dsize(d)), base);
    match d {
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            let h = b.mov(Ty::B16, imm(0));
            if let Some(g) = guard {
                b.when(g);
            }
            b.ld_to(Space::Global, Ty::B16, &[h], addr, 0);
            let hh = b.reg(t);
            b.push(TOp::Mov {
                ty: Ty::B16,
                dst: hh,
                src: h.into(),
            });
            b.cvt(Ty::F32, t, None, hh)
        }
        _ => {
            let v = b.mov(Ty::F32, fimm(0.0));
            if let Some(g) = guard {
                b.when(g);
            }
            b.ld_to(Space::Global, Ty::F32, &[v], addr, 0);
            v
        }
    }
}

/// Stores f32 `v` as element `idx` of a `d` tensor at `base`.
fn store_f32(b: &mut KernelBuilder, d: DType, base: Reg, idx: Reg, v: Reg, guard: Option<Reg>) {
    let addr = b.mad_wide(Ty::U32, idx, imm(dsize(d)), base);
    let val: Operand = match d {
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            b.cvt(t, Ty::F32, Some(Rnd::Rn), v).into()
        }
        DType::TF32 => round_tf32(b, v).into(),
        _ => v.into(),
    };
    let ty = match d {
        DType::BF16 | DType::F16 => Ty::B16,
        _ => Ty::F32,
    };
    if let Some(g) = guard {
        b.when(g);
    }
    b.st(Space::Global, ty, addr, 0, &[val]);
}

/// Rounds an f32 value to `d` (bf16/fp16: round to nearest even and back), as the CPU does
/// for an intermediate of that dtype.
fn round_to(b: &mut KernelBuilder, d: DType, v: Reg) -> R<Reg> {
    match d {
        DType::F32 => Ok(v),
        DType::TF32 => Ok(round_tf32(b, v)),
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            let h = b.cvt(t, Ty::F32, Some(Rnd::Rn), v);
            Ok(b.cvt(Ty::F32, t, None, h))
        }
        other => no(format!("{other} values")),
    }
}

fn unary(b: &mut KernelBuilder, u: UnaryOp, x: Reg) -> R<Reg> {
    Ok(match u {
        UnaryOp::Neg => b.unary(UnOp::Neg, Ty::F32, x),
        UnaryOp::Abs => b.unary(UnOp::Abs, Ty::F32, x),
        UnaryOp::Relu => b.bin(BinOp::Max, Ty::F32, x, fimm(0.0)),
        UnaryOp::Exp => exp(b, x),
        UnaryOp::Log => {
            let l = b.unary(UnOp::Lg2Approx, Ty::F32, x);
            b.mul(Ty::F32, l, fimm(std::f32::consts::LN_2))
        }
        UnaryOp::Sqrt => b.unary(UnOp::Sqrt, Ty::F32, x),
        UnaryOp::Rsqrt => b.unary(UnOp::RsqrtApprox, Ty::F32, x),
        UnaryOp::Tanh => b.unary(UnOp::TanhApprox, Ty::F32, x),
        UnaryOp::Sigmoid => sigmoid(b, x),
        UnaryOp::Silu => {
            let s = sigmoid(b, x);
            b.mul(Ty::F32, x, s)
        }
        UnaryOp::Gelu => gelu(b, x),
        UnaryOp::Not => return no("logical_not"),
    })
}

fn binary(b: &mut KernelBuilder, op: BinaryOp, x: Operand, y: Operand) -> R<Reg> {
    binary_ty(b, op, Ty::F32, x, y)
}

/// One float binary op in `ty` (`.f32` or `.f64`; `div` is the IEEE `div.rn`).
fn binary_ty(b: &mut KernelBuilder, op: BinaryOp, ty: Ty, x: Operand, y: Operand) -> R<Reg> {
    Ok(b.bin(float_binop(op, ty)?, ty, x, y))
}

/// The instruction of a float binary op in `ty` (`.f32` or `.f64`).
pub(crate) fn float_binop(op: BinaryOp, ty: Ty) -> R<BinOp> {
    Ok(match op {
        BinaryOp::Add => BinOp::Add,
        BinaryOp::Sub => BinOp::Sub,
        BinaryOp::Mul => BinOp::Mul,
        BinaryOp::Div => BinOp::Div,
        BinaryOp::Maximum => BinOp::Max,
        BinaryOp::Minimum => BinOp::Min,
        other if ty == Ty::F64 => return no(format!("fp64 {}", other.name())),
        other => return no(format!("the elementwise op {}", other.name())),
    })
}

/// One unary op in fp64 (those with an fp64 generator).
fn unary_f64(b: &mut KernelBuilder, u: UnaryOp, x: Reg) -> R<Reg> {
    let one = Operand::f64(1.0);
    let sigmoid = |b: &mut KernelBuilder, x: Reg| {
        let nx = b.unary(UnOp::Neg, Ty::F64, x);
        let e = exp_f64(b, nx);
        let d = b.add(Ty::F64, e, one);
        b.bin(BinOp::Div, Ty::F64, one, d)
    };
    Ok(match u {
        UnaryOp::Neg => b.unary(UnOp::Neg, Ty::F64, x),
        UnaryOp::Abs => b.unary(UnOp::Abs, Ty::F64, x),
        UnaryOp::Relu => b.bin(BinOp::Max, Ty::F64, x, Operand::f64(0.0)),
        UnaryOp::Exp => exp_f64(b, x),
        UnaryOp::Sqrt => b.unary(UnOp::Sqrt, Ty::F64, x),
        UnaryOp::Rsqrt => {
            let s = b.unary(UnOp::Sqrt, Ty::F64, x);
            b.bin(BinOp::Div, Ty::F64, one, s)
        }
        UnaryOp::Sigmoid => sigmoid(b, x),
        UnaryOp::Silu => {
            let nx = b.unary(UnOp::Neg, Ty::F64, x);
            let e = exp_f64(b, nx);
            let d = b.add(Ty::F64, e, one);
            b.bin(BinOp::Div, Ty::F64, x, d)
        }
        other => return no(format!("fp64 {}", other.name())),
    })
}

fn scalar_f32(s: Scalar) -> Operand {
    fimm(s.as_f64() as f32)
}

/// How an operand's element is found from the output's flat index.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Index {
    Same,
    Scalar,
    /// `i % inner` (a trailing-dims vector like a bias).
    Mod(u32),
    /// `(i / inner) % outer`... not needed: rows of a `[M,1]` operand: `i / inner`.
    Div(u32),
}

pub(crate) fn index_of(shape: &[usize], out: &[usize]) -> R<Index> {
    let n: usize = shape.iter().product();
    let on: usize = out.iter().product();
    if shape == out
        || (n == on
            && n > 0
            && shape
                .iter()
                .filter(|&&d| d != 1)
                .eq(out.iter().filter(|&&d| d != 1)))
    {
        return Ok(Index::Same);
    }
    if n == 1 {
        return Ok(Index::Scalar);
    }
    let s: Vec<usize> = shape.iter().copied().skip_while(|&d| d == 1).collect();
    if s.len() <= out.len() && out[out.len() - s.len()..] == s[..] {
        return Ok(Index::Mod(
            u32::try_from(n).map_err(|_| Error::NotLowered("size".into()))?,
        ));
    }
    // [.., M, 1] against [.., M, N]: one value per row.
    if out.len() == 2 && s.len() == 2 && s[1] == 1 && s[0] == out[0] {
        return Ok(Index::Div(
            u32::try_from(out[1]).map_err(|_| Error::NotLowered("size".into()))?,
        ));
    }
    no(format!("broadcasting {shape:?} to {out:?}"))
}

fn index_reg(b: &mut KernelBuilder, ix: Index, i: Reg) -> Reg {
    match ix {
        Index::Same => i,
        Index::Scalar => b.mov(Ty::U32, imm(0)),
        Index::Mod(m) => b.bin(BinOp::Rem, Ty::U32, i, imm(i64::from(m))),
        Index::Div(m) => b.bin(BinOp::Div, Ty::U32, i, imm(i64::from(m))),
    }
}

/// A body value in registers: floats of every dtype up to fp32 as f32 (rounded to their
/// dtype), fp64 in `.f64`, int32 in `.s32`, int64 in `.s64`, bool as a predicate.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Val {
    F(Reg),
    D(Reg),
    I32(Reg),
    I64(Reg),
    B(Reg),
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::TF32 | DType::BF16 | DType::F16)
}

/// Converts `v` to the register form of dtype `d` (the CPU's casts: ints to float round to
/// nearest, bool is 0/1, a nonzero value is true; int64 → int32 keeps the low 32 bits).
fn conv(b: &mut KernelBuilder, v: Val, d: DType) -> R<Val> {
    if d == DType::F64 {
        return Ok(Val::D(match v {
            Val::D(x) => x,
            Val::F(x) => b.cvt(Ty::F64, Ty::F32, None, x),
            Val::I32(x) => b.cvt(Ty::F64, Ty::S32, Some(Rnd::Rn), x),
            Val::I64(x) => b.cvt(Ty::F64, Ty::S64, Some(Rnd::Rn), x),
            Val::B(p) => b.selp(Ty::F64, Operand::f64(1.0), Operand::f64(0.0), p),
        }));
    }
    if is_float(d) {
        let f = match v {
            Val::F(x) => x,
            Val::D(x) => b.cvt(Ty::F32, Ty::F64, Some(Rnd::Rn), x),
            Val::I32(x) => b.cvt(Ty::F32, Ty::S32, Some(Rnd::Rn), x),
            Val::I64(x) => b.cvt(Ty::F32, Ty::S64, Some(Rnd::Rn), x),
            Val::B(p) => b.selp(Ty::F32, fimm(1.0), fimm(0.0), p),
        };
        return Ok(Val::F(round_to(b, d, f)?));
    }
    Ok(match (v, d) {
        (Val::I32(x), DType::I32) => Val::I32(x),
        (Val::I64(x), DType::I64) => Val::I64(x),
        (Val::I32(x), DType::I64) => Val::I64(b.cvt(Ty::S64, Ty::S32, None, x)),
        (Val::I64(x), DType::I32) => {
            let lo = b.cvt(Ty::U32, Ty::U64, None, x);
            Val::I32(b.mov(Ty::S32, lo))
        }
        (Val::B(p), DType::I32) => Val::I32(b.selp(Ty::S32, imm(1), imm(0), p)),
        (Val::B(p), DType::I64) => Val::I64(b.selp(Ty::S64, imm(1), imm(0), p)),
        (Val::B(p), DType::Bool) => Val::B(p),
        (Val::F(x), DType::Bool) => Val::B(b.setp(Cmp::Ne, Ty::F32, x, fimm(0.0))),
        (Val::D(x), DType::Bool) => Val::B(b.setp(Cmp::Ne, Ty::F64, x, Operand::f64(0.0))),
        (Val::I32(x), DType::Bool) => Val::B(b.setp(Cmp::Ne, Ty::S32, x, imm(0))),
        (Val::I64(x), DType::Bool) => Val::B(b.setp(Cmp::Ne, Ty::S64, x, imm(0))),
        (Val::F(_) | Val::D(_), DType::I32 | DType::I64) => {
            return no("float to int conversions outside a cast")
        }
        (_, other) => return no(format!("{other} values")),
    })
}

fn f_of(v: Val) -> R<Reg> {
    match v {
        Val::F(r) => Ok(r),
        _ => no("a non-float value where a float is needed"),
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

fn d_of(v: Val) -> R<Reg> {
    match v {
        Val::D(r) => Ok(r),
        _ => no("a non-fp64 value where an fp64 one is needed"),
    }
}

/// The dtype two operands are compared in (the CPU's promotion; bool compares as int32).
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

fn int_pair(b: &mut KernelBuilder, x: Val, y: Val, d: DType) -> R<(Ty, Reg, Reg)> {
    match (conv(b, x, d)?, conv(b, y, d)?) {
        (Val::I32(x), Val::I32(y)) => Ok((Ty::S32, x, y)),
        (Val::I64(x), Val::I64(y)) => Ok((Ty::S64, x, y)),
        _ => no("an integer op on other values"),
    }
}

/// One binary op on typed values of dtypes `dx`, `dy`; `out` is the result dtype.
fn binary_val(
    b: &mut KernelBuilder,
    op: BinaryOp,
    (x, dx): (Val, DType),
    (y, dy): (Val, DType),
    out: DType,
) -> R<Val> {
    if let Some(c) = cmp_of(op) {
        let d = common(dx, dy);
        let p = if d == DType::F64 {
            let (x, y) = (d_of(conv(b, x, d)?)?, d_of(conv(b, y, d)?)?);
            if c == Cmp::Ne {
                let eq = b.setp(Cmp::Eq, Ty::F64, x, y);
                b.unary(UnOp::Not, Ty::Pred, eq)
            } else {
                b.setp(c, Ty::F64, x, y)
            }
        } else if d == DType::F32 {
            let (x, y) = (f_of(conv(b, x, d)?)?, f_of(conv(b, y, d)?)?);
            if c == Cmp::Ne {
                // NaN != anything is true: the negation of the ordered ==.
                let eq = b.setp(Cmp::Eq, Ty::F32, x, y);
                b.unary(UnOp::Not, Ty::Pred, eq)
            } else {
                b.setp(c, Ty::F32, x, y)
            }
        } else {
            let (ty, x, y) = int_pair(b, x, y, d)?;
            b.setp(c, ty, x, y)
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
        return Ok(Val::D(binary_ty(b, op, Ty::F64, x.into(), y.into())?));
    }
    if is_float(out) {
        let x = f_of(conv(b, x, DType::F32)?)?;
        let y = f_of(conv(b, y, DType::F32)?)?;
        let r = if op == BinaryOp::Pow {
            pow_f32(b, x, y)
        } else {
            binary(b, op, x.into(), y.into())?
        };
        return Ok(Val::F(round_to(b, out, r)?));
    }
    if matches!(out, DType::I32 | DType::I64) {
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
        return Ok(if ty == Ty::S32 {
            Val::I32(r)
        } else {
            Val::I64(r)
        });
    }
    no(format!("{out} results of {}", op.name()))
}

fn unary_val(b: &mut KernelBuilder, u: UnaryOp, x: Val, out: DType) -> R<Val> {
    if u == UnaryOp::Not {
        let Val::B(p) = conv(b, x, DType::Bool)? else {
            return no("logical_not of other values");
        };
        let r = b.unary(UnOp::Not, Ty::Pred, p);
        return conv(b, Val::B(r), out);
    }
    if out == DType::F64 {
        let x = d_of(conv(b, x, out)?)?;
        return Ok(Val::D(unary_f64(b, u, x)?));
    }
    if matches!(out, DType::I32 | DType::I64)
        && matches!(u, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu)
    {
        let (ty, r) = match conv(b, x, out)? {
            Val::I32(r) => (Ty::S32, r),
            Val::I64(r) => (Ty::S64, r),
            _ => return no("an integer op on other values"),
        };
        let r = match u {
            UnaryOp::Neg => b.unary(UnOp::Neg, ty, r),
            UnaryOp::Abs => b.unary(UnOp::Abs, ty, r),
            _ => b.bin(BinOp::Max, ty, r, imm(0)),
        };
        return Ok(if ty == Ty::S32 {
            Val::I32(r)
        } else {
            Val::I64(r)
        });
    }
    let x = f_of(conv(b, x, DType::F32)?)?;
    let r = unary(b, u, x)?;
    conv(b, Val::F(r), out)
}

/// A float → int32/int64 cast, truncating toward zero (`cvt.rzi`), and the predicate "this
/// element is NaN or out of the dtype's range" (the cpu's E0500; the converted value is then
/// not used). The bounds are those of `float_to_int` on the cpu: `lo < x < hi` after truncation,
/// written for each source precision so that the comparison is exact.
fn cast_to_int(b: &mut KernelBuilder, x: Val, d: DType) -> R<(Val, Reg)> {
    let (sty, xr) = match x {
        Val::F(r) => (Ty::F32, r),
        Val::D(r) => (Ty::F64, r),
        _ => return no("an int cast of a non-float value"),
    };
    let (dty, bits) = match d {
        DType::I32 => (Ty::S32, 31),
        DType::I64 => (Ty::S64, 63),
        other => return no(format!("casts to {other}")),
    };
    let p2 = 2f64.powi(bits);
    let imm_of = |v: f64| {
        if sty == Ty::F32 {
            fimm(v as f32)
        } else {
            Operand::f64(v)
        }
    };
    // Every value above -2^bits - 1 truncates into range; in f32 (and for int64 in f64) the
    // next value below -2^bits is already below -2^bits - 1.
    let lo_ok = if sty == Ty::F64 && d == DType::I32 {
        b.setp(Cmp::Gt, sty, xr, imm_of(-p2 - 1.0))
    } else {
        b.setp(Cmp::Ge, sty, xr, imm_of(-p2))
    };
    let hi_ok = b.setp(Cmp::Lt, sty, xr, imm_of(p2));
    let ok = b.bin(BinOp::And, Ty::Pred, lo_ok, hi_ok);
    let bad = b.unary(UnOp::Not, Ty::Pred, ok);
    let v = b.cvt(dty, sty, Some(Rnd::Rzi), xr);
    Ok((
        if dty == Ty::S32 {
            Val::I32(v)
        } else {
            Val::I64(v)
        },
        bad,
    ))
}

/// Python's integer `//` or `%` (floor division: the remainder has the divisor's sign) in
/// `ty` (`.s32`/`.s64`, wrapping like the cpu), and the predicate "the divisor is 0" (the
/// cpu's E0500; the division then runs by 1 and its value is not used).
fn int_divmod(b: &mut KernelBuilder, op: BinaryOp, ty: Ty, x: Reg, y: Reg) -> (Reg, Reg) {
    let bits = if ty == Ty::S32 { Ty::B32 } else { Ty::B64 };
    let zero = b.setp(Cmp::Eq, ty, y, imm(0));
    let ys = b.selp(ty, imm(1), y, zero);
    let q = b.bin(BinOp::Div, ty, x, ys);
    let r = b.bin(BinOp::Rem, ty, x, ys);
    let nz = b.setp(Cmp::Ne, ty, r, imm(0));
    let sx = b.bin(BinOp::Xor, bits, r, ys);
    let opposite = b.setp(Cmp::Lt, ty, sx, imm(0));
    let fix = b.bin(BinOp::And, Ty::Pred, nz, opposite);
    let v = if op == BinaryOp::FloorDiv {
        let q1 = b.sub(ty, q, imm(1));
        b.selp(ty, q1, q, fix)
    } else {
        let r1 = b.add(ty, r, ys);
        b.selp(ty, r1, r, fix)
    };
    (v, zero)
}

fn is_int(d: DType) -> bool {
    matches!(d, DType::I32 | DType::I64)
}

/// Whether a body has an op that can hit an error the cpu reports (so its kernel takes the
/// status word, [`Lowered::status`]).
fn needs_status(body: &Graph) -> bool {
    let dt = |v: ValueId| body.ty(v).map(|t| t.dtype).unwrap_or(DType::F32);
    body.ids().any(|id| match body.op(id) {
        Some(Op::Cast { x }) => is_int(dt(id)) && (is_float(dt(*x)) || dt(*x) == DType::F64),
        Some(Op::Binary { op, .. }) => {
            matches!(op, BinaryOp::FloorDiv | BinaryOp::Mod) && is_int(dt(id))
        }
        _ => false,
    })
}

/// Evaluates a fused body (or one elementwise op) on typed registers holding its params.
/// `err` collects the predicate "an op of this element hit an error the cpu reports".
fn eval_body(b: &mut KernelBuilder, body: &Graph, params: &[Val], err: &mut Option<Reg>) -> R<Val> {
    let mut flag = |b: &mut KernelBuilder, bad: Reg| {
        *err = Some(match *err {
            Some(e) => b.bin(BinOp::Or, Ty::Pred, e, bad),
            None => bad,
        });
    };
    let mut vals: Vec<Option<Val>> = vec![None; body.len()];
    for id in body.ids() {
        let Some(op) = body.op(id) else { continue };
        let ty = body.ty(id).map(|t| t.dtype).unwrap_or(DType::F32);
        b.at(body.span(id));
        let get = |v: ValueId| -> R<(Val, DType)> {
            let val =
                vals.get(v.index()).copied().flatten().ok_or_else(|| {
                    Error::NotLowered("a value used before it is computed".into())
                })?;
            Ok((val, body.ty(v).map(|t| t.dtype).unwrap_or(DType::F32)))
        };
        let v: Val = match op {
            Op::Param { index } => params
                .get(*index)
                .copied()
                .ok_or_else(|| Error::NotLowered("missing param".into()))?,
            Op::Const { value } => {
                let f = Val::F(b.mov(Ty::F32, scalar_f32(*value)));
                match ty {
                    DType::F64 => Val::D(b.mov(Ty::F64, Operand::f64(value.as_f64()))),
                    DType::I32 => Val::I32(b.mov(Ty::S32, imm(value.as_f64() as i64))),
                    DType::I64 => Val::I64(b.mov(Ty::S64, imm(value.as_f64() as i64))),
                    _ => conv(b, f, ty)?,
                }
            }
            Op::Unary { op, x } => {
                let (x, _) = get(*x)?;
                unary_val(b, *op, x, ty)?
            }
            Op::Binary { op, a, b: y }
                if matches!(op, BinaryOp::FloorDiv | BinaryOp::Mod) && is_int(ty) =>
            {
                let ((x, _), (y, _)) = (get(*a)?, get(*y)?);
                let (rt, x, y) = int_pair(b, x, y, ty)?;
                let (v, bad) = int_divmod(b, *op, rt, x, y);
                flag(b, bad);
                if rt == Ty::S32 {
                    Val::I32(v)
                } else {
                    Val::I64(v)
                }
            }
            Op::Binary { op, a, b: y } => {
                let (x, y) = (get(*a)?, get(*y)?);
                binary_val(b, *op, x, y, ty)?
            }
            Op::Cast { x } => {
                let (x, _) = get(*x)?;
                if is_int(ty) && matches!(x, Val::F(_) | Val::D(_)) {
                    let (v, bad) = cast_to_int(b, x, ty)?;
                    flag(b, bad);
                    v
                } else {
                    conv(b, x, ty)?
                }
            }
            Op::Where { cond, a, b: y } => {
                let (c, _) = get(*cond)?;
                let Val::B(p) = conv(b, c, DType::Bool)? else {
                    return no("where of other values");
                };
                let ((x, _), (y, _)) = (get(*a)?, get(*y)?);
                match (conv(b, x, ty)?, conv(b, y, ty)?) {
                    (Val::F(x), Val::F(y)) => Val::F(b.selp(Ty::F32, x, y, p)),
                    (Val::D(x), Val::D(y)) => Val::D(b.selp(Ty::F64, x, y, p)),
                    (Val::I32(x), Val::I32(y)) => Val::I32(b.selp(Ty::S32, x, y, p)),
                    (Val::I64(x), Val::I64(y)) => Val::I64(b.selp(Ty::S64, x, y, p)),
                    (Val::B(x), Val::B(y)) => {
                        let t = b.bin(BinOp::And, Ty::Pred, p, x);
                        let np = b.unary(UnOp::Not, Ty::Pred, p);
                        let f = b.bin(BinOp::And, Ty::Pred, np, y);
                        Val::B(b.bin(BinOp::Or, Ty::Pred, t, f))
                    }
                    _ => return no("where of mixed values"),
                }
            }
            other => return no(format!("{} inside an elementwise kernel", other.name())),
        };
        if let Some(slot) = vals.get_mut(id.index()) {
            *slot = Some(v);
        }
    }
    body.outputs
        .first()
        .and_then(|o| vals.get(o.index()).copied().flatten())
        .ok_or_else(|| Error::NotLowered("a body without an output".into()))
}

/// Loads element `idx` of a `d` tensor (guarded by `guard`; zero when the guard is off).
fn load_val(b: &mut KernelBuilder, d: DType, base: Reg, idx: Reg, guard: Option<Reg>) -> R<Val> {
    let ty = match d {
        DType::I32 => Ty::S32,
        DType::I64 => Ty::S64,
        DType::F64 => Ty::F64,
        DType::Bool => {
            // One byte, zero-extended into a 32-bit register; true is any nonzero byte.
            let addr = b.mad_wide(Ty::U32, idx, imm(1), base);
            let v = b.mov(Ty::U32, imm(0));
            if let Some(g) = guard {
                b.when(g);
            }
            b.ld_to(Space::Global, Ty::U8, &[v], addr, 0);
            return Ok(Val::B(b.setp(Cmp::Ne, Ty::U32, v, imm(0))));
        }
        _ if is_float(d) => return Ok(Val::F(load_f32(b, d, base, idx, guard))),
        other => return no(format!("{other} tensors in memory")),
    };
    let addr = b.mad_wide(Ty::U32, idx, imm(dsize(d)), base);
    let zero = if ty == Ty::F64 {
        Operand::f64(0.0)
    } else {
        imm(0)
    };
    let v = b.mov(ty, zero);
    if let Some(g) = guard {
        b.when(g);
    }
    b.ld_to(Space::Global, ty, &[v], addr, 0);
    Ok(match ty {
        Ty::S32 => Val::I32(v),
        Ty::F64 => Val::D(v),
        _ => Val::I64(v),
    })
}

/// Stores `v` converted to `d` as element `idx` of a `d` tensor.
fn store_val(
    b: &mut KernelBuilder,
    d: DType,
    base: Reg,
    idx: Reg,
    v: Val,
    guard: Option<Reg>,
) -> R<()> {
    let (ty, x) = match conv(b, v, d)? {
        Val::F(x) => {
            store_f32(b, d, base, idx, x, guard);
            return Ok(());
        }
        Val::D(x) => (Ty::F64, x),
        Val::I32(x) => (Ty::S32, x),
        Val::I64(x) => (Ty::S64, x),
        Val::B(p) => (Ty::U8, b.selp(Ty::U32, imm(1), imm(0), p)),
    };
    let addr = b.mad_wide(Ty::U32, idx, imm(dsize(d)), base);
    if let Some(g) = guard {
        b.when(g);
    }
    b.st(Space::Global, ty, addr, 0, &[x.into()]);
    Ok(())
}

/// The body graph of an elementwise kernel: the fused body, or the one op with its tensor
/// operands as params.
fn body_of(g: &Graph, tk: &TileKernel) -> R<Graph> {
    let op = g
        .op(tk.root)
        .ok_or_else(|| Error::NotLowered("no op".into()))?;
    if let Op::FusedElementwise { body, .. } = op {
        return Ok((**body).clone());
    }
    let mut body = Graph::new("body");
    let mut map = std::collections::HashMap::new();
    for v in op.operands() {
        if map.contains_key(&v) {
            continue;
        }
        let ty = g
            .ty(v)
            .cloned()
            .ok_or_else(|| Error::NotLowered("type".into()))?;
        let nv = match g.op(v) {
            Some(Op::Const { value }) => body.push(Op::Const { value: *value }, ty, g.span(v)),
            _ => body.add_param(ty, g.span(v)),
        };
        map.insert(v, nv);
    }
    let mut op2 = op.clone();
    op2.map_operands(&mut |v| map.get(&v).copied().unwrap_or(v));
    let ty = g
        .ty(tk.root)
        .cloned()
        .ok_or_else(|| Error::NotLowered("type".into()))?;
    let r = body.push(op2, ty, g.span(tk.root));
    body.outputs = vec![r];
    Ok(body)
}

/// Whether `v` elements of `d` at an element index that is a multiple of `v` can be read or
/// written with vector accesses (4-byte words, at most 16 bytes per access).
fn vectorizable(d: DType, v: u32) -> bool {
    let bytes = dsize(d) * i64::from(v);
    v.is_power_of_two()
        && bytes >= 4
        && matches!(d, DType::F32 | DType::TF32 | DType::BF16 | DType::F16)
}

/// Loads elements `i0 .. i0+v` of a `d` tensor at `base` as f32 with `ld.global.v{1,2,4}.b32`
/// accesses of at most 16 bytes (`i0` a multiple of `v`, the tensor 16-byte aligned).
fn load_vec_f32(b: &mut KernelBuilder, d: DType, base: Reg, i0: Reg, v: u32) -> Vec<Reg> {
    let addr = b.mad_wide(Ty::U32, i0, imm(dsize(d)), base);
    let words = (dsize(d) * i64::from(v) / 4) as usize;
    let mut w = vec![];
    let mut off = 0;
    while w.len() < words {
        let cnt = (words - w.len()).min(4);
        w.extend(b.ld(Space::Global, Ty::B32, addr, off, cnt));
        off += (cnt * 4) as i32;
    }
    match d {
        DType::BF16 => w
            .iter()
            .flat_map(|&x| {
                let lo = b.bin(BinOp::Shl, Ty::B32, x, imm(16));
                let hi = b.bin(BinOp::And, Ty::B32, x, imm(0xffff_0000));
                [lo, hi]
            })
            .collect(),
        DType::F16 => w
            .iter()
            .flat_map(|&x| {
                let lo = b.cvt(Ty::F32, Ty::F16, None, x);
                let h = b.bin(BinOp::Shr, Ty::B32, x, imm(16));
                let hi = b.cvt(Ty::F32, Ty::F16, None, h);
                [lo, hi]
            })
            .collect(),
        _ => w,
    }
}

/// Stores f32 values `vals` as elements `i0 ..` of a `d` tensor at `base` (rounded to `d`),
/// with `st.global.v{1,2,4}.b32` accesses of at most 16 bytes.
fn store_vec_f32(b: &mut KernelBuilder, d: DType, base: Reg, i0: Reg, vals: &[Reg]) {
    let addr = b.mad_wide(Ty::U32, i0, imm(dsize(d)), base);
    let words: Vec<Operand> = match d {
        DType::BF16 | DType::F16 => {
            let pack = if d == DType::BF16 {
                Pack::BF16x2
            } else {
                Pack::F16x2
            };
            let ty = if d == DType::BF16 {
                Ty::BF16x2
            } else {
                Ty::F16x2
            };
            vals.chunks(2)
                .map(|p| {
                    let dst = b.reg(ty);
                    let (lo, hi) = (p[0], p.get(1).copied().unwrap_or(p[0]));
                    b.push(TOp::CvtPack { pack, dst, hi, lo });
                    dst.into()
                })
                .collect()
        }
        DType::TF32 => vals.iter().map(|&x| round_tf32(b, x).into()).collect(),
        _ => vals.iter().map(|&x| x.into()).collect(),
    };
    for (k, c) in words.chunks(4).enumerate() {
        b.st(Space::Global, Ty::B32, addr, (k * 16) as i32, c);
    }
}

/// An elementwise kernel: thread `t` computes elements `t·v .. t·v+v`. Threads whose `v`
/// elements are all in range take the vector path (full-size operands and the result by
/// 16-byte `ld/st.global.v4.b32` accesses where their dtype allows it); the one thread with a
/// partial group takes the element-by-element tail, each element guarded by `i < n`.
/// Broadcast operands are read element by element (their index from the output's).
fn elementwise(g: &Graph, tk: &TileKernel, n: u64, vector: u32) -> R<Lowered> {
    let body = body_of(g, tk)?;
    let out_ty = tk.ty.clone();
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(tk.block[0]);
    let mut ins = vec![];
    for (i, v) in tk.inputs.iter().enumerate() {
        let t = g
            .ty(*v)
            .cloned()
            .ok_or_else(|| Error::NotLowered("type".into()))?;
        let ix = index_of(&t.shape, &out_ty.shape)?;
        b.at(g.span(*v));
        ins.push((ptr_param(&mut b, &format!("in{i}")), t.dtype, ix));
    }
    b.at(tk.span);
    let y = ptr_param(&mut b, "out");
    let status = needs_status(&body).then(|| ptr_param(&mut b, "status"));
    let nr = u32_param(&mut b, "n");
    // Sets the status word when `err` (an element's error predicate) holds.
    let report = |b: &mut KernelBuilder, err: Option<Reg>, ok: Option<Reg>| {
        if let (Some(s), Some(e)) = (status, err) {
            b.at(tk.span);
            let e = match ok {
                Some(ok) => b.bin(BinOp::And, Ty::Pred, e, ok),
                None => e,
            };
            b.when(e);
            b.st(Space::Global, Ty::U32, s, 0, &[imm(1)]);
        }
    };
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let gid = b.fma(Ty::U32, ctaid, ntid, tid);
    let v = vector.max(1);
    let base = b.mul(Ty::U32, gid, imm(i64::from(v)));
    let done = if v > 1 {
        let vec_b = b.block("vector");
        let tail_b = b.block("tail");
        let done = b.block("done");
        let end = b.add(Ty::U32, base, imm(i64::from(v)));
        let full = b.setp(Cmp::Le, Ty::U32, end, nr);
        b.cbr(full, vec_b, tail_b);
        b.switch_to(vec_b);
        let mut cols: Vec<Vec<Val>> = vec![vec![]; v as usize];
        for (p, d, ix) in &ins {
            b.at(tk.span);
            if *ix == Index::Same && vectorizable(*d, v) {
                for (e, x) in load_vec_f32(&mut b, *d, *p, base, v)
                    .into_iter()
                    .enumerate()
                {
                    cols[e].push(Val::F(x));
                }
            } else if *ix == Index::Scalar {
                let j = index_reg(&mut b, *ix, base);
                let x = load_val(&mut b, *d, *p, j, None)?;
                for c in cols.iter_mut() {
                    c.push(x);
                }
            } else {
                for (e, c) in cols.iter_mut().enumerate() {
                    let i = add_imm(&mut b, base, e as i64);
                    let j = index_reg(&mut b, *ix, i);
                    c.push(load_val(&mut b, *d, *p, j, None)?);
                }
            }
        }
        let mut res = vec![];
        for params in &cols {
            let mut err = None;
            res.push(eval_body(&mut b, &body, params, &mut err)?);
            report(&mut b, err, None);
        }
        b.at(tk.span);
        let floats: Option<Vec<Reg>> = res
            .iter()
            .map(|r| match r {
                Val::F(x) => Some(*x),
                _ => None,
            })
            .collect();
        match floats {
            Some(f) if vectorizable(out_ty.dtype, v) => {
                store_vec_f32(&mut b, out_ty.dtype, y, base, &f)
            }
            _ => {
                for (e, r) in res.iter().enumerate() {
                    let i = add_imm(&mut b, base, e as i64);
                    store_val(&mut b, out_ty.dtype, y, i, *r, None)?;
                }
            }
        }
        b.br(done);
        b.switch_to(tail_b);
        Some(done)
    } else {
        None
    };
    for e in 0..i64::from(v) {
        b.at(tk.span);
        let i = add_imm(&mut b, base, e);
        let ok = b.setp(Cmp::Lt, Ty::U32, i, nr);
        let mut params = vec![];
        for (p, d, ix) in &ins {
            let j = index_reg(&mut b, *ix, i);
            params.push(load_val(&mut b, *d, *p, j, Some(ok))?);
        }
        let mut err = None;
        let r = eval_body(&mut b, &body, &params, &mut err)?;
        report(&mut b, err, Some(ok));
        b.at(tk.span);
        store_val(&mut b, out_ty.dtype, y, i, r, Some(ok))?;
    }
    if let Some(done) = done {
        b.at(tk.span);
        b.br(done);
        b.switch_to(done);
    }
    b.ret();
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: tk.block,
        scalars: vec![u32::try_from(n).map_err(|_| Error::NotLowered("size".into()))?],
        status: status.is_some(),
    })
}

/// A strided loop `for j = lane; j < cols; j += 32 { body(j) }`; returns the block after it.
fn lane_loop(
    b: &mut KernelBuilder,
    name: &str,
    lane: Reg,
    cols: Reg,
    body: &mut dyn FnMut(&mut KernelBuilder, Reg),
) -> BlockId {
    let j = b.mov(Ty::U32, lane);
    let head = b.block(&format!("{name}_head"));
    let bodyb = b.block(&format!("{name}_body"));
    let after = b.block(&format!("{name}_done"));
    b.br(head);
    b.switch_to(head);
    let p = b.setp(Cmp::Lt, Ty::U32, j, cols);
    b.cbr(p, bodyb, after);
    b.switch_to(bodyb);
    body(b, j);
    b.bin_to(j, BinOp::Add, Ty::U32, j, imm(32));
    b.br(head);
    b.switch_to(after);
    after
}

fn warp_allreduce(b: &mut KernelBuilder, v: Reg, op: BinOp) {
    for s in [16, 8, 4, 2, 1] {
        let t = b.reg(Ty::F32);
        b.push(TOp::Shfl {
            mode: ShflMode::Bfly,
            dst: t,
            src: v.into(),
            lane: imm(s),
            clamp: imm(31),
            mask: 0xffff_ffff,
        });
        b.bin_to(v, op, Ty::F32, v, t);
    }
}

/// Whether a row kernel over these dtypes runs in fp64 (all fp64) or fp32 (all fp32 or
/// narrower floats); a mix is not lowered.
fn row_f64(ds: &[DType]) -> R<bool> {
    if ds.iter().all(|&d| d == DType::F64) {
        Ok(true)
    } else if ds.iter().all(|&d| is_float(d)) {
        Ok(false)
    } else {
        no("row kernels mixing fp64 with other dtypes")
    }
}

type Ld = fn(&mut KernelBuilder, DType, Reg, Reg) -> Reg;
type St = fn(&mut KernelBuilder, DType, Reg, Reg, Reg, Option<Reg>);

/// Loads element `idx` of an fp64 tensor.
fn load_f64(b: &mut KernelBuilder, base: Reg, idx: Reg) -> Reg {
    let addr = b.mad_wide(Ty::U32, idx, imm(8), base);
    b.ld(Space::Global, Ty::F64, addr, 0, 1)[0]
}

/// Stores `v` as element `idx` of an fp64 tensor.
fn store_f64(b: &mut KernelBuilder, base: Reg, idx: Reg, v: Reg, guard: Option<Reg>) {
    let addr = b.mad_wide(Ty::U32, idx, imm(8), base);
    if let Some(g) = guard {
        b.when(g);
    }
    b.st(Space::Global, Ty::F64, addr, 0, &[v.into()]);
}

/// A row kernel's value type, immediates, element load and store: `.f64` for fp64 kernels,
/// else `.f32` (elements converted from and rounded to their dtype).
fn row_fns(f64k: bool) -> (Ty, fn(f32) -> Operand, Ld, St) {
    if f64k {
        (
            Ty::F64,
            |v| Operand::f64(f64::from(v)),
            |b, _, p, i| load_f64(b, p, i),
            |b, _, p, i, v, g| store_f64(b, p, i, v, g),
        )
    } else {
        (
            Ty::F32,
            fimm,
            |b, d, p, i| load_f32(b, d, p, i, None),
            store_f32,
        )
    }
}

/// `e^(v − m)`: in fp32 `ex2.approx(v·log2 e + mb)` with `mb = −m·log2 e`; in fp64 [`exp_f64`].
fn exp_shifted(b: &mut KernelBuilder, f64k: bool, v: Reg, m: Reg, mb: Reg) -> Reg {
    if f64k {
        let d = b.sub(Ty::F64, v, m);
        exp_f64(b, d)
    } else {
        let t = b.fma(Ty::F32, v, fimm(LOG2E), mb);
        b.unary(UnOp::Ex2Approx, Ty::F32, t)
    }
}

/// [`warp_allreduce`] in `ty`: fp64 values move as two 32-bit halves per shuffle.
fn warp_allreduce_ty(b: &mut KernelBuilder, ty: Ty, v: Reg, op: BinOp) {
    if ty != Ty::F64 {
        return warp_allreduce(b, v, op);
    }
    for s in [16, 8, 4, 2, 1] {
        let bits = b.reg(Ty::B64);
        b.push(TOp::Mov {
            ty: Ty::B64,
            dst: bits,
            src: v.into(),
        });
        let lo = b.cvt(Ty::U32, Ty::U64, None, bits);
        let hi64 = b.bin(BinOp::Shr, Ty::U64, bits, imm(32));
        let hi = b.cvt(Ty::U32, Ty::U64, None, hi64);
        let mut halves = [lo, hi].map(|h| {
            let t = b.reg(Ty::B32);
            b.push(TOp::Shfl {
                mode: ShflMode::Bfly,
                dst: t,
                src: h.into(),
                lane: imm(s),
                clamp: imm(31),
                mask: 0xffff_ffff,
            });
            b.cvt(Ty::U64, Ty::U32, None, t)
        });
        halves[1] = b.bin(BinOp::Shl, Ty::B64, halves[1], imm(32));
        let joined = b.bin(BinOp::Or, Ty::B64, halves[0], halves[1]);
        let t = b.reg(Ty::F64);
        b.push(TOp::Mov {
            ty: Ty::B64,
            dst: t,
            src: joined.into(),
        });
        b.bin_to(v, op, Ty::F64, v, t);
    }
}

fn softmax(g: &Graph, tk: &TileKernel, rows: u32, cols: u32) -> R<Lowered> {
    let xin = *tk
        .inputs
        .first()
        .ok_or_else(|| Error::NotLowered("input".into()))?;
    let xd = g.ty(xin).map(|t| t.dtype).unwrap_or(DType::F32);
    let yd = tk.ty.dtype;
    let f64k = row_f64(&[xd, yd])?;
    let (fty, fk, ldf, stf) = row_fns(f64k);
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(tk.block[0]);
    let x = ptr_param(&mut b, "x");
    let y = ptr_param(&mut b, "y");
    let rows_r = u32_param(&mut b, "rows");
    let cols_r = u32_param(&mut b, "cols");
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let wpb = b.bin(BinOp::Shr, Ty::U32, ntid, imm(5));
    let row = b.fma(Ty::U32, ctaid, wpb, warp);
    let out = b.setp(Cmp::Ge, Ty::U32, row, rows_r);
    let init = b.block("row");
    b.cbr(out, BlockId(u32::MAX), init);
    let entry = b.current();
    b.switch_to(init);
    let rowbase = b.mul(Ty::U32, row, cols_r);
    let m = b.mov(fty, fk(f32::NEG_INFINITY));
    lane_loop(&mut b, "max", lane, cols_r, &mut |b, j| {
        let i = b.add(Ty::U32, rowbase, j);
        let v = ldf(b, xd, x, i);
        b.bin_to(m, BinOp::Max, fty, m, v);
    });
    warp_allreduce_ty(&mut b, fty, m, BinOp::Max);
    let mb = b.mul(fty, m, fk(-LOG2E));
    let s = b.mov(fty, fk(0.0));
    lane_loop(&mut b, "sum", lane, cols_r, &mut |b, j| {
        let i = b.add(Ty::U32, rowbase, j);
        let v = ldf(b, xd, x, i);
        let e = exp_shifted(b, f64k, v, m, mb);
        b.bin_to(s, BinOp::Add, fty, s, e);
    });
    warp_allreduce_ty(&mut b, fty, s, BinOp::Add);
    let inv = b.unary(UnOp::Rcp, fty, s);
    let done = lane_loop(&mut b, "out", lane, cols_r, &mut |b, j| {
        let i = b.add(Ty::U32, rowbase, j);
        let v = ldf(b, xd, x, i);
        let e = exp_shifted(b, f64k, v, m, mb);
        let r = b.mul(fty, e, inv);
        stf(b, yd, y, i, r, None);
    });
    b.switch_to(done);
    b.ret();
    b.switch_to(entry);
    b.cbr(out, done, init);
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: tk.block,
        scalars: vec![rows, cols],
        status: false,
    })
}

/// A normalisation or reduction over the last axis: one warp per row, lane-strided loops,
/// fp32 accumulation, butterfly all-reduces. Parameters: x, [weight], [bias], y, rows, cols.
fn rows_kernel(g: &Graph, tk: &TileKernel, op: RowOp, rows: u32, cols: u32) -> R<Lowered> {
    let dt = |v: ValueId| g.ty(v).map(|t| t.dtype).unwrap_or(DType::F32);
    let xin = *tk
        .inputs
        .first()
        .ok_or_else(|| Error::NotLowered("input".into()))?;
    let xd = dt(xin);
    let yd = tk.ty.dtype;
    let mut all: Vec<DType> = tk.inputs.iter().map(|&v| dt(v)).collect();
    all.push(yd);
    let f64k = row_f64(&all)?;
    let (fty, fk, ldf, stf) = row_fns(f64k);
    let (has_w, has_b) = match op {
        RowOp::LayerNorm { weight, bias, .. } => (weight, bias),
        RowOp::RmsNorm { weight, .. } => (weight, false),
        _ => (false, false),
    };
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(tk.block[0]);
    let x = ptr_param(&mut b, "x");
    let mut next = 1;
    let mut extra = |b: &mut KernelBuilder, name: &str, on: bool| -> R<Option<(Reg, DType)>> {
        if !on {
            return Ok(None);
        }
        let v = *tk
            .inputs
            .get(next)
            .ok_or_else(|| Error::NotLowered("missing input".into()))?;
        next += 1;
        Ok(Some((ptr_param(b, name), dt(v))))
    };
    let w = extra(&mut b, "weight", has_w)?;
    let bias = extra(&mut b, "bias", has_b)?;
    let y = ptr_param(&mut b, "y");
    let rows_r = u32_param(&mut b, "rows");
    let cols_r = u32_param(&mut b, "cols");
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let wpb = b.bin(BinOp::Shr, Ty::U32, ntid, imm(5));
    let row = b.fma(Ty::U32, ctaid, wpb, warp);
    let out = b.setp(Cmp::Ge, Ty::U32, row, rows_r);
    let init = b.block("row");
    b.cbr(out, BlockId(u32::MAX), init);
    let entry = b.current();
    b.switch_to(init);
    let rowbase = b.mul(Ty::U32, row, cols_r);
    let colsf = b.cvt(fty, Ty::U32, Some(Rnd::Rn), cols_r);
    let (init_v, fold) = match op {
        RowOp::Max => (f32::NEG_INFINITY, BinOp::Max),
        RowOp::Min => (f32::INFINITY, BinOp::Min),
        _ => (0.0, BinOp::Add),
    };
    let acc = b.mov(fty, fk(init_v));
    let square = matches!(op, RowOp::RmsNorm { .. });
    lane_loop(&mut b, "acc", lane, cols_r, &mut |b, j| {
        let i = b.add(Ty::U32, rowbase, j);
        let v = ldf(b, xd, x, i);
        if square {
            b.fma_to(acc, fty, v, v, acc);
        } else {
            b.bin_to(acc, fold, fty, acc, v);
        }
    });
    warp_allreduce_ty(&mut b, fty, acc, fold);
    let done = match op {
        RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => {
            let r = if op == RowOp::Mean {
                b.bin(BinOp::Div, fty, acc, colsf)
            } else {
                acc
            };
            let first = b.setp(Cmp::Eq, Ty::U32, lane, imm(0));
            stf(&mut b, yd, y, row, r, Some(first));
            b.current()
        }
        RowOp::LayerNorm { eps, .. } | RowOp::RmsNorm { eps, .. } => {
            let (mean, ms) = if let RowOp::LayerNorm { .. } = op {
                let mean = b.bin(BinOp::Div, fty, acc, colsf);
                let var = b.mov(fty, fk(0.0));
                lane_loop(&mut b, "var", lane, cols_r, &mut |b, j| {
                    let i = b.add(Ty::U32, rowbase, j);
                    let v = ldf(b, xd, x, i);
                    let d = b.sub(fty, v, mean);
                    b.fma_to(var, fty, d, d, var);
                });
                warp_allreduce_ty(&mut b, fty, var, BinOp::Add);
                (Some(mean), var)
            } else {
                (None, acc)
            };
            let ms = b.bin(BinOp::Div, fty, ms, colsf);
            let ms = b.add(
                fty,
                ms,
                if f64k {
                    Operand::f64(eps)
                } else {
                    fimm(eps as f32)
                },
            );
            let sd = b.unary(UnOp::Sqrt, fty, ms);
            let rstd = b.unary(UnOp::Rcp, fty, sd);
            lane_loop(&mut b, "out", lane, cols_r, &mut |b, j| {
                let i = b.add(Ty::U32, rowbase, j);
                let v = ldf(b, xd, x, i);
                let c = match mean {
                    Some(m) => b.sub(fty, v, m),
                    None => v,
                };
                let mut r = b.mul(fty, c, rstd);
                if let Some((wp, wd)) = w {
                    let wv = ldf(b, wd, wp, j);
                    r = b.mul(fty, r, wv);
                }
                if let Some((bp, bd)) = bias {
                    let bv = ldf(b, bd, bp, j);
                    r = b.add(fty, r, bv);
                }
                stf(b, yd, y, i, r, None);
            })
        }
    };
    let fin = b.block("fin");
    b.switch_to(done);
    b.br(fin);
    b.switch_to(fin);
    b.ret();
    b.switch_to(entry);
    b.cbr(out, fin, init);
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: tk.block,
        scalars: vec![rows, cols],
        status: false,
    })
}

/// Cooperative copy of a `[tile_rows, d]` tile of a row-major `[.., d]` tensor (rows from
/// `row0`, at most `nrows` rows) into shared memory at `dst` (row pitch `pitch` floats),
/// zero-filled past the edge. `threads` threads, `tid` this thread.
#[allow(clippy::too_many_arguments)]
fn tile_to_shared(
    b: &mut KernelBuilder,
    d: DType,
    src: Reg,
    base: Reg,
    row0: Reg,
    nrows: Reg,
    tile_rows: u32,
    dim: u32,
    pitch: u32,
    dst: Reg,
    tid: Reg,
    threads: u32,
) {
    let total = tile_rows * dim;
    for i in 0..total.div_ceil(threads) {
        let idx = b.add(Ty::U32, tid, imm(i64::from(i * threads)));
        let r = b.bin(BinOp::Div, Ty::U32, idx, imm(i64::from(dim)));
        let c = b.bin(BinOp::Rem, Ty::U32, idx, imm(i64::from(dim)));
        let gr = b.add(Ty::U32, row0, r);
        let mut ok = b.setp(Cmp::Lt, Ty::U32, gr, nrows);
        let in_tile = (i + 1) * threads > total;
        if in_tile {
            let t = b.setp(Cmp::Lt, Ty::U32, idx, imm(i64::from(total)));
            ok = b.bin(BinOp::And, Ty::Pred, ok, t);
        }
        let gi = b.fma(Ty::U32, gr, imm(i64::from(dim)), base);
        let gi = b.add(Ty::U32, gi, c);
        let v = load_f32(b, d, src, gi, Some(ok));
        let so = b.fma(Ty::U32, r, imm(i64::from(pitch)), c);
        let addr = b.fma(Ty::U32, so, imm(4), dst);
        if in_tile {
            let t = b.setp(Cmp::Lt, Ty::U32, idx, imm(i64::from(total)));
            b.when(t);
        }
        b.st(Space::Shared, Ty::F32, addr, 0, &[v.into()]);
    }
}

/// FlashAttention forward with fp32 FMA: a block of 4 warps per `bm` query rows, key tiles of
/// 32 keys (lane ↔ key for the scores, lane ↔ output columns for the accumulator) staged
/// through shared memory, online softmax (running max and sum, the accumulator rescaled).
/// Parameters: q, k, v, o, sq, sk; the batch is grid y.
#[allow(clippy::too_many_arguments)]
fn flash_attention(
    g: &Graph,
    tk: &TileKernel,
    sq: u32,
    sk: u32,
    dq: u32,
    dv: u32,
    causal: bool,
    scale: f64,
    bm: u32,
    bn: u32,
    bcast: Option<&AttnBatch>,
) -> R<Lowered> {
    if bn != 32 || !bm.is_multiple_of(4) || bm == 0 {
        return no("flash attention tiles other than 4k×32");
    }
    let dt = |i: usize| -> R<DType> {
        tk.inputs
            .get(i)
            .and_then(|v| g.ty(*v))
            .map(|t| t.dtype)
            .ok_or_else(|| Error::NotLowered("input".into()))
    };
    let (qd, kd, vd) = (dt(0)?, dt(1)?, dt(2)?);
    let threads = 128u32;
    let rpw = (bm / 4) as usize;
    let dtv = dv.div_ceil(32) as usize;
    let vpitch = dv.next_multiple_of(32);
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(threads);
    let qp = ptr_param(&mut b, "q");
    let kp = ptr_param(&mut b, "k");
    let vp = ptr_param(&mut b, "v");
    let op = ptr_param(&mut b, "o");
    let sq_r = u32_param(&mut b, "sq");
    let sk_r = u32_param(&mut b, "sk");
    let sqs = b.shared("smem_q", bm * dq * 4, 16);
    let sks = b.shared("smem_k", bn * (dq + 1) * 4, 16);
    let svs = b.shared("smem_v", (bn + 1) * vpitch * 4, 16);
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let bz = b.special(SReg::Ctaid(Dim::Y));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let q0 = b.mul(Ty::U32, bx, imm(i64::from(bm)));
    let (qrow0, krow0, vrow0, orow0) = match bcast {
        None => {
            let qbase = b.mul(Ty::U32, bz, sq_r);
            let kbase = b.mul(Ty::U32, bz, sk_r);
            let qrow0 = b.mul(Ty::U32, qbase, imm(i64::from(dq)));
            let krow0 = b.mul(Ty::U32, kbase, imm(i64::from(dq)));
            let vrow0 = b.mul(Ty::U32, kbase, imm(i64::from(dv)));
            let orow0 = b.mul(Ty::U32, qbase, imm(i64::from(dv)));
            (qrow0, krow0, vrow0, orow0)
        }
        Some(m) => {
            // Each operand's batch from the output batch's coordinates.
            let mut c = vec![bz; m.dims.len()];
            let mut rest = bz;
            for d in (1..m.dims.len()).rev() {
                let dd = i64::from(m.dims[d].max(1));
                c[d] = b.bin(BinOp::Rem, Ty::U32, rest, imm(dd));
                rest = b.bin(BinOp::Div, Ty::U32, rest, imm(dd));
            }
            if let Some(c0) = c.first_mut() {
                *c0 = rest;
            }
            let batch_of = |b: &mut KernelBuilder, st: &[u32]| {
                let mut acc = b.mov(Ty::U32, imm(0));
                for (cd, &s) in c.iter().zip(st) {
                    if s != 0 {
                        acc = b.fma(Ty::U32, *cd, imm(i64::from(s)), acc);
                    }
                }
                acc
            };
            let qb = batch_of(&mut b, &m.q);
            let kb = batch_of(&mut b, &m.k);
            let vb = batch_of(&mut b, &m.v);
            let qbase = b.mul(Ty::U32, qb, sq_r);
            let kbase = b.mul(Ty::U32, kb, sk_r);
            let vbase = b.mul(Ty::U32, vb, sk_r);
            let obase = b.mul(Ty::U32, bz, sq_r);
            (
                b.mul(Ty::U32, qbase, imm(i64::from(dq))),
                b.mul(Ty::U32, kbase, imm(i64::from(dq))),
                b.mul(Ty::U32, vbase, imm(i64::from(dv))),
                b.mul(Ty::U32, obase, imm(i64::from(dv))),
            )
        }
    };
    let sq0 = b.shared_addr(sqs);
    let sk0 = b.shared_addr(sks);
    let sv0 = b.shared_addr(svs);
    tile_to_shared(
        &mut b, qd, qp, qrow0, q0, sq_r, bm, dq, dq, sq0, tid, threads,
    );
    // This warp's query rows and their state.
    let wrow = b.mul(Ty::U32, warp, imm(rpw as i64));
    let qi: Vec<Reg> = (0..rpw)
        .map(|r| {
            let t = b.add(Ty::U32, q0, wrow);
            b.add(Ty::U32, t, imm(r as i64))
        })
        .collect();
    let qrd = b.fma(Ty::U32, wrow, imm(i64::from(dq) * 4), sq0);
    let krd = b.fma(Ty::U32, lane, imm(i64::from(dq + 1) * 4), sk0);
    let vrd = b.fma(Ty::U32, lane, imm(4), sv0);
    let m: Vec<Reg> = (0..rpw)
        .map(|_| b.mov(Ty::F32, fimm(f32::NEG_INFINITY)))
        .collect();
    let l: Vec<Reg> = (0..rpw).map(|_| b.mov(Ty::F32, fimm(0.0))).collect();
    let acc: Vec<Vec<Reg>> = (0..rpw)
        .map(|_| (0..dtv).map(|_| b.mov(Ty::F32, fimm(0.0))).collect())
        .collect();
    let kend = if causal {
        let e = b.add(Ty::U32, q0, imm(i64::from(bm)));
        b.bin(BinOp::Min, Ty::U32, e, sk_r)
    } else {
        sk_r
    };
    let k0 = b.mov(Ty::U32, imm(0));
    let (head, epib) = b.while_lt(k0, kend, ["kv_head", "kv_body", "epilogue"]);
    tile_to_shared(
        &mut b,
        kd,
        kp,
        krow0,
        k0,
        sk_r,
        bn,
        dq,
        dq + 1,
        sk0,
        tid,
        threads,
    );
    tile_to_shared(
        &mut b, vd, vp, vrow0, k0, sk_r, bn, dv, vpitch, sv0, tid, threads,
    );
    b.bar_sync();
    // Scores: lane j holds s[r] = q_r · k_j.
    let s: Vec<Reg> = (0..rpw).map(|_| b.mov(Ty::F32, fimm(0.0))).collect();
    for c in 0..dq as i32 {
        let kv = b.ld(Space::Shared, Ty::F32, krd, c * 4, 1)[0];
        for (r, sr) in s.iter().enumerate() {
            let qv = b.ld(
                Space::Shared,
                Ty::F32,
                qrd,
                (r as i32 * dq as i32 + c) * 4,
                1,
            )[0];
            b.fma_to(*sr, Ty::F32, qv, kv, *sr);
        }
    }
    let key = b.add(Ty::U32, k0, lane);
    let key_ok = b.setp(Cmp::Lt, Ty::U32, key, sk_r);
    let c2 = (scale * f64::from(LOG2E)) as f32;
    let mut p = vec![];
    for r in 0..rpw {
        let mut ok = key_ok;
        if causal {
            let c = b.setp(Cmp::Le, Ty::U32, key, qi[r]);
            ok = b.bin(BinOp::And, Ty::Pred, ok, c);
        }
        let t = b.mul(Ty::F32, s[r], fimm(c2));
        let t = b.selp(Ty::F32, t, fimm(f32::NEG_INFINITY), ok);
        let mx = b.mov(Ty::F32, t);
        warp_allreduce(&mut b, mx, BinOp::Max);
        let mnew = b.bin(BinOp::Max, Ty::F32, m[r], mx);
        let none = b.setp(Cmp::Eq, Ty::F32, mnew, fimm(f32::NEG_INFINITY));
        let muse = b.selp(Ty::F32, fimm(0.0), mnew, none);
        let e = b.sub(Ty::F32, t, muse);
        let pr = b.unary(UnOp::Ex2Approx, Ty::F32, e);
        let a = b.sub(Ty::F32, m[r], muse);
        let alpha = b.unary(UnOp::Ex2Approx, Ty::F32, a);
        let ps = b.mov(Ty::F32, pr);
        warp_allreduce(&mut b, ps, BinOp::Add);
        b.fma_to(l[r], Ty::F32, l[r], alpha, ps);
        b.assign(m[r], mnew);
        for x in &acc[r] {
            b.bin_to(*x, BinOp::Mul, Ty::F32, *x, alpha);
        }
        p.push(pr);
    }
    // acc[r][t] += Σ_j p_r[j] · v[j][lane + 32t].
    for j in 0..bn as i32 {
        let vv: Vec<Reg> = (0..dtv as i32)
            .map(|t| {
                b.ld(
                    Space::Shared,
                    Ty::F32,
                    vrd,
                    (j * vpitch as i32 + t * 32) * 4,
                    1,
                )[0]
            })
            .collect();
        for r in 0..rpw {
            let pj = b.reg(Ty::F32);
            b.push(TOp::Shfl {
                mode: ShflMode::Idx,
                dst: pj,
                src: p[r].into(),
                lane: imm(i64::from(j)),
                clamp: imm(31),
                mask: 0xffff_ffff,
            });
            for (t, x) in acc[r].iter().enumerate() {
                b.fma_to(*x, Ty::F32, pj, vv[t], *x);
            }
        }
    }
    b.bar_sync();
    b.bin_to(k0, BinOp::Add, Ty::U32, k0, imm(i64::from(bn)));
    b.br(head);
    b.switch_to(epib);
    for r in 0..rpw {
        let row_ok = b.setp(Cmp::Lt, Ty::U32, qi[r], sq_r);
        let pos = b.setp(Cmp::Gt, Ty::F32, l[r], fimm(0.0));
        let inv = b.unary(UnOp::Rcp, Ty::F32, l[r]);
        let inv = b.selp(Ty::F32, inv, fimm(0.0), pos);
        let obase = b.fma(Ty::U32, qi[r], imm(i64::from(dv)), orow0);
        for (t, x) in acc[r].iter().enumerate() {
            let col = b.add(Ty::U32, lane, imm(32 * t as i64));
            let col_ok = b.setp(Cmp::Lt, Ty::U32, col, imm(i64::from(dv)));
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let idx = b.add(Ty::U32, obase, col);
            let v = b.mul(Ty::F32, *x, inv);
            store_f32(&mut b, tk.ty.dtype, op, idx, v, Some(ok));
        }
    }
    b.ret();
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: [threads, 1, 1],
        scalars: vec![sq, sk],
        status: false,
    })
}

/// `r + v` (u32), or `r` itself when `v` is 0.
fn add_imm(b: &mut KernelBuilder, r: Reg, v: i64) -> Reg {
    if v == 0 {
        r
    } else {
        b.add(Ty::U32, r, imm(v))
    }
}

/// Lowers one tile kernel of graph `g`.
pub fn lower(g: &Graph, tk: &TileKernel) -> R<Lowered> {
    if tk.span == Span::default() {
        return no("a kernel without a span");
    }
    match &tk.shape {
        Shape::Elementwise { n, vector } => elementwise(g, tk, *n, *vector),
        Shape::Gather {
            n,
            vector,
            dims,
            sources,
        } => super::copy::target(g, tk, *n, *vector, dims, sources),
        Shape::ReduceAxis { op, len, inner, .. } => {
            super::reduce_axis::target(g, tk, *op, *len, *inner)
        }
        Shape::RowSoftmax { rows, cols, .. } => softmax(g, tk, *rows, *cols),
        Shape::Rows { op, rows, cols, .. } => rows_kernel(g, tk, *op, *rows, *cols),
        Shape::FlashAttention {
            sq,
            sk,
            dq,
            dv,
            causal,
            scale,
            bm,
            bn,
            bcast,
            ..
        } => flash_attention(
            g,
            tk,
            *sq,
            *sk,
            *dq,
            *dv,
            *causal,
            *scale,
            *bm,
            *bn,
            bcast.as_ref(),
        ),
        Shape::MatmulFma { .. } => no("FMA matmuls are built as Tile IR (kernels::matmul_fma)"),
        Shape::MatmulMma { .. } => no("MMA matmuls are built as Tile IR (kernels::matmul_mma)"),
    }
}
