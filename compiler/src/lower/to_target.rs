//! Tile IR → Target IR: instantiates the block program of a [`TileKernel`] with the
//! [`KernelBuilder`]. Every instruction carries the span of the Graph op it comes from
//! (the fused body's ops, the epilogue steps), so the PTX has `.loc` lines into the `.tsr`.
//!
//! Kernel parameters, in order: one pointer per input buffer (the tile kernel's `inputs`),
//! the output pointer, then the `u32` sizes listed in [`Lowered::scalars`].

use super::math::{exp, exp_f64, gelu, pow_f32, round_tf32, sigmoid};
use crate::graph::{BinaryOp, DType, Epilogue, EpilogueStep, Graph, Op, Scalar, UnaryOp, ValueId};
use crate::target::builder::{fimm, imm};
use crate::target::{
    BinOp, CacheOp, Cmp, Dim, Kernel, KernelBuilder, MmaKind, Op as TOp, Operand, Pack, ParamTy,
    Reg, Rnd, SReg, Space, TargetError, Ty, UnOp,
};
use crate::tile::{MatmulBatch, Shape, TileKernel};
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
    let o = match op {
        BinaryOp::Add => BinOp::Add,
        BinaryOp::Sub => BinOp::Sub,
        BinaryOp::Mul => BinOp::Mul,
        BinaryOp::Div => BinOp::Div,
        BinaryOp::Maximum => BinOp::Max,
        BinaryOp::Minimum => BinOp::Min,
        other if ty == Ty::F64 => return no(format!("fp64 {}", other.name())),
        other => return no(format!("the elementwise op {}", other.name())),
    };
    Ok(b.bin(o, ty, x, y))
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
enum Index {
    Same,
    Scalar,
    /// `i % inner` (a trailing-dims vector like a bias).
    Mod(u32),
    /// `(i / inner) % outer`... not needed: rows of a `[M,1]` operand: `i / inner`.
    Div(u32),
}

fn index_of(shape: &[usize], out: &[usize]) -> R<Index> {
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

/// The epilogue operands: (pointer, dtype, index kind) per `Epilogue::Binary`, in order.
struct Epi {
    steps: Vec<EpilogueStep>,
    operands: Vec<(Reg, DType, Index)>,
}

fn epilogue_params(
    g: &Graph,
    b: &mut KernelBuilder,
    steps: &[EpilogueStep],
    out: &[usize],
    f64_ok: bool,
) -> R<Epi> {
    let mut operands = vec![];
    for (i, s) in steps.iter().enumerate() {
        if let Epilogue::Binary { operand, .. } = s.step {
            let t = g
                .ty(operand)
                .cloned()
                .ok_or_else(|| Error::NotLowered("type".into()))?;
            if !(is_float(t.dtype) || f64_ok && t.dtype == DType::F64) {
                return no(format!("{} epilogue operands", t.dtype));
            }
            let ix = index_of(&t.shape, out)?;
            b.at(s.span);
            operands.push((ptr_param(b, &format!("epi{i}")), t.dtype, ix));
        }
    }
    Ok(Epi {
        steps: steps.to_vec(),
        operands,
    })
}

/// Applies the epilogue to accumulator `v` of output flat index `i` (guarded loads by `ok`).
fn apply_epilogue(b: &mut KernelBuilder, e: &Epi, v: Reg, i: Reg, ok: Reg) -> R<Reg> {
    let mut v = v;
    let mut k = 0;
    for s in &e.steps {
        b.at(s.span);
        v = match &s.step {
            Epilogue::Binary { op, .. } => {
                let (p, d, ix) = e.operands[k];
                k += 1;
                let j = index_reg(b, ix, i);
                let x = load_f32(b, d, p, j, Some(ok));
                binary(b, *op, v.into(), x.into())?
            }
            Epilogue::Scalar { op, value } => binary(b, *op, v.into(), scalar_f32(*value))?,
            Epilogue::Unary(u) => unary(b, *u, v)?,
            Epilogue::Cast(d) => round_to(b, *d, v)?,
        };
    }
    Ok(v)
}

/// [`apply_epilogue`] for an fp64 accumulator: every step in fp64 (operands converted to
/// fp64, as the cpu promotes them), casts only to fp64.
fn apply_epilogue_f64(b: &mut KernelBuilder, e: &Epi, v: Reg, i: Reg, ok: Reg) -> R<Reg> {
    let mut v = v;
    let mut k = 0;
    for s in &e.steps {
        b.at(s.span);
        v = match &s.step {
            Epilogue::Binary { op, .. } => {
                let (p, d, ix) = e.operands[k];
                k += 1;
                let j = index_reg(b, ix, i);
                let x = load_val(b, d, p, j, Some(ok))?;
                let x = d_of(conv(b, x, DType::F64)?)?;
                binary_ty(b, *op, Ty::F64, v.into(), x.into())?
            }
            Epilogue::Scalar { op, value } => {
                binary_ty(b, *op, Ty::F64, v.into(), Operand::f64(value.as_f64()))?
            }
            Epilogue::Unary(u) => unary_f64(b, *u, v)?,
            Epilogue::Cast(DType::F64) => v,
            Epilogue::Cast(d) => return no(format!("fp64 matmul epilogues that cast to {d}")),
        };
    }
    Ok(v)
}

fn log2(v: u32) -> i64 {
    i64::from(v.trailing_zeros())
}

fn matmul_parts(g: &Graph, tk: &TileKernel) -> R<(DType, DType, Vec<EpilogueStep>)> {
    match g.op(tk.root) {
        Some(Op::Matmul { a, b, epilogue, .. }) => Ok((
            g.ty(*a).map(|t| t.dtype).unwrap_or(DType::F32),
            g.ty(*b).map(|t| t.dtype).unwrap_or(DType::F32),
            epilogue.clone(),
        )),
        _ => no("not a matmul"),
    }
}

/// The operand pointers of this block's problem of a batched matmul (grid z) and the flat
/// index of its first output element; unchanged (and `None`) when not batched.
fn batch_offsets(
    b: &mut KernelBuilder,
    batch: MatmulBatch,
    a: Reg,
    bp: Reg,
    [m, n, k]: [Reg; 3],
    esize: i64,
) -> (Reg, Reg, Option<Reg>) {
    if batch.count <= 1 {
        return (a, bp, None);
    }
    let z = b.special(SReg::Ctaid(Dim::Z));
    let a = if batch.a {
        let mk = b.mul(Ty::U32, m, k);
        let off = b.mul(Ty::U32, z, mk);
        b.mad_wide(Ty::U32, off, imm(esize), a)
    } else {
        a
    };
    let bp = if batch.b {
        let kn = b.mul(Ty::U32, k, n);
        let off = b.mul(Ty::U32, z, kn);
        b.mad_wide(Ty::U32, off, imm(esize), bp)
    } else {
        bp
    };
    let mn = b.mul(Ty::U32, m, n);
    (a, bp, Some(b.mul(Ty::U32, z, mn)))
}

/// fp32 tiled matmul: BM×BN block tile, k-step BK, `BM·BN/16` threads each computing 4×4
/// outputs strided by (BM/4, BN/4); tiles stream into shared memory with 4-byte `cp.async.ca`
/// (zero-filled past the edges via src-size) through `stages` buffers
/// (`commit_group`/`wait_group stages-1`, `bar.sync`). Any M, N, K.
#[allow(clippy::too_many_arguments)]
fn matmul_fma(
    g: &Graph,
    tk: &TileKernel,
    dims: [u32; 3],
    tile: [u32; 3],
    stages: u32,
    batch: MatmulBatch,
) -> R<Lowered> {
    let (ad, bd, steps) = matmul_parts(g, tk)?;
    let f64_mm = ad == DType::F64 && bd == DType::F64 && tk.ty.dtype == DType::F64;
    if !f64_mm && (ad != DType::F32 || bd != DType::F32) {
        return no("FMA matmul of operands other than fp32 or fp64 pairs");
    }
    // fp64 keeps every value in `.f64` (8-byte copies, `fma.rn.f64`).
    let fty = if f64_mm { Ty::F64 } else { Ty::F32 };
    let esize: i64 = if f64_mm { 8 } else { 4 };
    let [bm_, bn_, bk_] = tile;
    let (bmi, bni, bki) = (i64::from(bm_), i64::from(bn_), i64::from(bk_));
    let threads = bm_ * bn_ / 16;
    let ti = i64::from(threads);
    let si = i64::from(stages);
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(threads);
    let a = ptr_param(&mut b, "a");
    let bp = ptr_param(&mut b, "b");
    let epi = epilogue_params(g, &mut b, &steps, &tk.ty.shape, f64_mm)?;
    b.at(tk.span);
    let c = ptr_param(&mut b, "c");
    let m = u32_param(&mut b, "m");
    let n = u32_param(&mut b, "n");
    let k = u32_param(&mut b, "k");
    let (a, bp, cbase) = batch_offsets(&mut b, batch, a, bp, [m, n, k], esize);
    let sa = b.shared("smem_a", (si * bmi * bki * esize) as u32, 16);
    let sb = b.shared("smem_b", (si * bki * bni * esize) as u32, 16);
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let by = b.special(SReg::Ctaid(Dim::Y));
    let bm = b.mul(Ty::U32, by, imm(bmi));
    let bn = b.mul(Ty::U32, bx, imm(bni));
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);
    // Loaders: A (r, c) = (tid/BK + (T/BK)·i, tid%BK); B (r, c) = (tid/BN + (T/BN)·i, tid%BN).
    let a_step = ti / bki;
    let b_step = ti / bni;
    let a_cnt = (bmi * bki / ti) as usize;
    let b_cnt = (bki * bni / ti) as usize;
    let ac = b.bin(BinOp::And, Ty::B32, tid, imm(bki - 1));
    let ar0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(log2(bk_)));
    let bc = b.bin(BinOp::And, Ty::B32, tid, imm(bni - 1));
    let br0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(log2(bn_)));
    // Each thread's copy sources: kept for every copy of a tile when registers allow, or (more
    // than 256 threads: at most 64 registers each) the first one and a stride, the others
    // recomputed at each issue so that a 1024-thread tile does not spill.
    let lean = threads > 256;
    let mut a_src = vec![];
    let mut a_row_ok = vec![];
    let mut b_src = vec![];
    let mut b_row = vec![];
    let mut strides = None;
    if lean {
        let gr = b.add(Ty::U32, bm, ar0);
        a_row_ok.push(gr);
        let idx = b.fma(Ty::U32, gr, k, ac);
        a_src.push(b.mad_wide(Ty::U32, idx, imm(esize), a));
        b_row.push(br0);
        let idx = b.fma(Ty::U32, br0, n, bn);
        let idx = b.add(Ty::U32, idx, bc);
        b_src.push(b.mad_wide(Ty::U32, idx, imm(esize), bp));
        let sa = b.mul_wide(Ty::U32, k, imm(a_step * esize));
        let sb = b.mul_wide(Ty::U32, n, imm(b_step * esize));
        strides = Some((sa, sb));
    } else {
        for i in 0..a_cnt {
            let gr = b.add(Ty::U32, bm, ar0);
            let gr = b.add(Ty::U32, gr, imm(a_step * i as i64));
            a_row_ok.push(b.setp(Cmp::Lt, Ty::U32, gr, m));
            let idx = b.fma(Ty::U32, gr, k, ac);
            a_src.push(b.mad_wide(Ty::U32, idx, imm(esize), a));
        }
        for i in 0..b_cnt {
            let r = b.add(Ty::U32, br0, imm(b_step * i as i64));
            b_row.push(r);
            let idx = b.fma(Ty::U32, r, n, bn);
            let idx = b.add(Ty::U32, idx, bc);
            b_src.push(b.mad_wide(Ty::U32, idx, imm(esize), bp));
        }
    }
    let gc = b.add(Ty::U32, bn, bc);
    let b_col_ok = b.setp(Cmp::Lt, Ty::U32, gc, n);
    let a_dst = b.fma(Ty::U32, ar0, imm(bki * esize), sa0);
    let a_dst = b.fma(Ty::U32, ac, imm(esize), a_dst);
    let b_dst = b.fma(Ty::U32, br0, imm(bni * esize), sb0);
    let b_dst = b.fma(Ty::U32, bc, imm(esize), b_dst);
    let n4 = b.mul(Ty::U32, n, imm(esize));
    let buf_of = |b: &mut KernelBuilder, kt: Reg| {
        if stages.is_power_of_two() {
            b.bin(BinOp::And, Ty::B32, kt, imm(si - 1))
        } else {
            b.bin(BinOp::Rem, Ty::U32, kt, imm(si))
        }
    };
    let issue = |b: &mut KernelBuilder, kt: Reg, guard: Option<Reg>| {
        let k0 = b.mul(Ty::U32, kt, imm(bki));
        let buf = buf_of(b, kt);
        let a_off = b.mul(Ty::U32, buf, imm(bmi * bki * esize));
        let b_off = b.mul(Ty::U32, buf, imm(bki * bni * esize));
        let col = b.add(Ty::U32, k0, ac);
        let col_ok = b.setp(Cmp::Lt, Ty::U32, col, k);
        let koff = b.mul_wide(Ty::U32, k0, imm(esize));
        let kboff = b.mul_wide(Ty::U32, k0, n4);
        let mut a_cur = None;
        for i in 0..a_cnt {
            let (row_ok, base) = match strides {
                Some((sa, _)) => {
                    let gr = b.add(Ty::U32, a_row_ok[0], imm(a_step * i as i64));
                    let base = match a_cur {
                        None => a_src[0],
                        Some(prev) => b.add(Ty::U64, prev, sa),
                    };
                    a_cur = Some(base);
                    (b.setp(Cmp::Lt, Ty::U32, gr, m), base)
                }
                None => (a_row_ok[i], a_src[i]),
            };
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let src = b.add(Ty::U64, base, koff);
            let src = b.selp(Ty::U64, src, a, ok);
            let size = b.selp(Ty::U32, imm(esize), imm(0), ok);
            let dst = b.add(Ty::U32, a_dst, a_off);
            let dst = b.add(Ty::U32, dst, imm(i as i64 * a_step * bki * esize));
            if let Some(g) = guard {
                b.when(g);
            }
            b.push(TOp::CpAsync {
                cache: CacheOp::Ca,
                dst,
                src,
                bytes: esize as u32,
                src_size: Some(size.into()),
            });
        }
        let mut b_cur = None;
        for i in 0..b_cnt {
            let (row, base) = match strides {
                Some((_, sb)) => {
                    let row = b.add(Ty::U32, b_row[0], imm(b_step * i as i64));
                    let base = match b_cur {
                        None => b_src[0],
                        Some(prev) => b.add(Ty::U64, prev, sb),
                    };
                    b_cur = Some(base);
                    (row, base)
                }
                None => (b_row[i], b_src[i]),
            };
            let r = b.add(Ty::U32, k0, row);
            let r_ok = b.setp(Cmp::Lt, Ty::U32, r, k);
            let ok = b.bin(BinOp::And, Ty::Pred, r_ok, b_col_ok);
            let src = b.add(Ty::U64, base, kboff);
            let src = b.selp(Ty::U64, src, bp, ok);
            let size = b.selp(Ty::U32, imm(esize), imm(0), ok);
            let dst = b.add(Ty::U32, b_dst, b_off);
            let dst = b.add(Ty::U32, dst, imm(i as i64 * b_step * bni * esize));
            if let Some(g) = guard {
                b.when(g);
            }
            b.push(TOp::CpAsync {
                cache: CacheOp::Ca,
                dst,
                src,
                bytes: esize as u32,
                src_size: Some(size.into()),
            });
        }
    };
    for st in 0..si - 1 {
        let kt = b.mov(Ty::U32, imm(st));
        issue(&mut b, kt, None);
        b.push(TOp::CpAsyncCommit);
    }
    let kt = b.mov(Ty::U32, imm(0));
    let nk = b.add(Ty::U32, k, imm(bki - 1));
    let nk = b.bin(BinOp::Shr, Ty::U32, nk, imm(log2(bk_)));
    let zero = if f64_mm { Operand::f64(0.0) } else { fimm(0.0) };
    let acc: Vec<Reg> = (0..16).map(|_| b.mov(fty, zero)).collect();
    let (sm, sn) = (bmi / 4, bni / 4);
    let tx = b.bin(BinOp::And, Ty::B32, tid, imm(sn - 1));
    let ty = b.bin(BinOp::Shr, Ty::U32, tid, imm(log2(bn_ / 4)));
    let a_rd = b.fma(Ty::U32, ty, imm(bki * esize), sa0);
    let b_rd = b.fma(Ty::U32, tx, imm(esize), sb0);
    let (head, epib) = b.while_lt(kt, nk, ["k_head", "k_body", "epilogue"]);
    let next = b.add(Ty::U32, kt, imm(si - 1));
    let has_next = b.setp(Cmp::Lt, Ty::U32, next, nk);
    issue(&mut b, next, Some(has_next));
    b.push(TOp::CpAsyncCommit);
    b.push(TOp::CpAsyncWait { n: stages - 1 });
    b.bar_sync();
    let buf = buf_of(&mut b, kt);
    let a_off = b.mul(Ty::U32, buf, imm(bmi * bki * esize));
    let b_off = b.mul(Ty::U32, buf, imm(bki * bni * esize));
    let a_base = b.add(Ty::U32, a_rd, a_off);
    let b_base = b.add(Ty::U32, b_rd, b_off);
    for kk in 0..bki {
        let av: Vec<Reg> = (0..4)
            .map(|i| {
                b.ld(
                    Space::Shared,
                    fty,
                    a_base,
                    (i * sm * bki * esize + kk * esize) as i32,
                    1,
                )[0]
            })
            .collect();
        let bv: Vec<Reg> = (0..4)
            .map(|j| {
                b.ld(
                    Space::Shared,
                    fty,
                    b_base,
                    (kk * bni * esize + j * sn * esize) as i32,
                    1,
                )[0]
            })
            .collect();
        for i in 0..4 {
            for j in 0..4 {
                let x = acc[i * 4 + j];
                b.fma_to(x, fty, av[i], bv[j], x);
            }
        }
    }
    b.bar_sync();
    b.bin_to(kt, BinOp::Add, Ty::U32, kt, imm(1));
    b.br(head);
    b.switch_to(epib);
    for i in 0..4i64 {
        let row = b.add(Ty::U32, bm, ty);
        let row = b.add(Ty::U32, row, imm(sm * i));
        let row_ok = b.setp(Cmp::Lt, Ty::U32, row, m);
        for j in 0..4i64 {
            b.at(tk.span);
            let col = b.add(Ty::U32, bn, tx);
            let col = b.add(Ty::U32, col, imm(sn * j));
            let col_ok = b.setp(Cmp::Lt, Ty::U32, col, n);
            let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
            let idx = b.fma(Ty::U32, row, n, col);
            let idx = match cbase {
                Some(cb) => b.add(Ty::U32, idx, cb),
                None => idx,
            };
            let r = acc[(i * 4 + j) as usize];
            if f64_mm {
                let v = apply_epilogue_f64(&mut b, &epi, r, idx, ok)?;
                b.at(tk.span);
                store_val(&mut b, tk.ty.dtype, c, idx, Val::D(v), Some(ok))?;
            } else {
                let v = apply_epilogue(&mut b, &epi, r, idx, ok)?;
                b.at(tk.span);
                store_f32(&mut b, tk.ty.dtype, c, idx, v, Some(ok));
            }
        }
    }
    b.ret();
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: tk.block,
        scalars: dims.to_vec(),
        status: false,
    })
}

/// One operand's tile copy (global → one stage of shared memory) in a tensor-core matmul.
///
/// The tile is `rows × cols` elements of a row-major global matrix with `pitch` elements per
/// row; k-tile `kt` starts at (`row0 + kt·drow`, `col0 + kt·dcol`) (A moves along columns, B
/// along rows). Threads copy chunks of `ve` elements (`ve·esize` bytes: 16, 8 or 4 with
/// `cp.async`, or one element by `ld.global` + `st.shared` when rows are not 4-byte aligned);
/// chunk `tid + i·T` is row `(c / cpr)`, column `(c % cpr)·ve` with `cpr = cols / ve`.
/// A chunk is either wholly inside the matrix or wholly outside (the chunk size divides the
/// pitch, which is the column bound), so the mask is per chunk: copies outside are zero-filled
/// (`src-size` 0) or, for element copies, store zero.
struct MmaCopy {
    rows: i64,
    cols: i64,
    ve: i64,
    esize: i64,
    /// The global pointer of this thread's first chunk of k-tile 0.
    ptr0: Reg,
    /// Any valid, aligned global pointer (the source of a zero-fill copy).
    any: Reg,
    /// Row (elements) of this thread's first chunk inside the tile.
    r0: Reg,
    /// Shared address of this thread's first chunk in stage 0.
    dst0: Reg,
    /// Row pitch in bytes (register) and the global bounds (rows, cols).
    pitch_bytes: Reg,
    bound_rows: Reg,
    bound_cols: Reg,
    /// The matrix row and column of this thread's first chunk of k-tile 0, and the tile's
    /// move per k-tile (elements).
    grow: Reg,
    gcol: Reg,
    drow: i64,
    dcol: i64,
    /// Chunk slots per thread and their (row, column-chunk) deltas from the first.
    slots: Vec<(i64, i64)>,
    /// Whether slot 0 may lie past the tile (fewer chunks than threads).
    partial: bool,
}

impl MmaCopy {
    #[allow(clippy::too_many_arguments)]
    fn new(
        b: &mut KernelBuilder,
        tid: Reg,
        threads: i64,
        [rows, cols]: [i64; 2],
        ve: i64,
        esize: i64,
        base: Reg,
        [pitch, bound_rows, bound_cols]: [Reg; 3],
        [orow, ocol]: [Option<Reg>; 2],
        [drow, dcol]: [i64; 2],
        smem: Reg,
    ) -> MmaCopy {
        let cpr = cols / ve;
        let total = rows * cpr;
        let r0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(cpr.trailing_zeros() as i64));
        let cc = b.bin(BinOp::And, Ty::B32, tid, imm(cpr - 1));
        let c0 = b.mul(Ty::U32, cc, imm(ve));
        let slots: Vec<(i64, i64)> = (0..((total + threads - 1) / threads).max(1))
            .map(|i| {
                let c = i * threads;
                (c / cpr, c % cpr)
            })
            .collect();
        let pitch_bytes = b.mul(Ty::U32, pitch, imm(esize));
        let gr = match orow {
            Some(o) => b.add(Ty::U32, o, r0),
            None => r0,
        };
        let gc = match ocol {
            Some(o) => b.add(Ty::U32, o, c0),
            None => c0,
        };
        let idx = b.fma(Ty::U32, gr, pitch, gc);
        let ptr0 = b.mad_wide(Ty::U32, idx, imm(esize), base);
        let so = b.fma(Ty::U32, r0, imm(cols), c0);
        let dst0 = b.fma(Ty::U32, so, imm(esize), smem);
        MmaCopy {
            rows,
            cols,
            ve,
            esize,
            ptr0,
            any: base,
            r0,
            dst0,
            pitch_bytes,
            bound_rows,
            bound_cols,
            grow: gr,
            gcol: gc,
            drow,
            dcol,
            slots,
            partial: total < threads,
        }
    }

    /// Copies k-tile `kt` into the stage at byte offset `stage_off` (only when `has`).
    fn issue(&self, b: &mut KernelBuilder, kt: Reg, stage_off: Reg, has: Option<Reg>) {
        let dst = b.add(Ty::U32, self.dst0, stage_off);
        // The chunk's row and column in the matrix, and the byte offset of k-tile kt from
        // k-tile 0: kt·(drow·pitch + dcol)·esize (one of drow, dcol is 0).
        let (row, col) = (self.grow, self.gcol);
        let (row, col, koff) = if self.drow != 0 {
            let kr = b.mul(Ty::U32, kt, imm(self.drow));
            let row = b.add(Ty::U32, row, kr);
            (row, col, b.mul(Ty::U32, kr, self.pitch_bytes))
        } else {
            let kc = b.mul(Ty::U32, kt, imm(self.dcol));
            let col = b.add(Ty::U32, col, kc);
            (row, col, b.mul(Ty::U32, kc, imm(self.esize)))
        };
        let src0 = b.mad_wide(Ty::U32, koff, imm(1), self.ptr0);
        let vb = self.ve * self.esize;
        for &(dr, dc) in &self.slots {
            let r = add_imm(b, row, dr);
            let c = add_imm(b, col, dc * self.ve);
            let r_ok = b.setp(Cmp::Lt, Ty::U32, r, self.bound_rows);
            let c_ok = b.setp(Cmp::Lt, Ty::U32, c, self.bound_cols);
            let ok = b.bin(BinOp::And, Ty::Pred, r_ok, c_ok);
            let mut guard = has;
            if self.partial {
                let tr = add_imm(b, self.r0, dr);
                let in_tile = b.setp(Cmp::Lt, Ty::U32, tr, imm(self.rows));
                guard = Some(match guard {
                    Some(g) => b.bin(BinOp::And, Ty::Pred, g, in_tile),
                    None => in_tile,
                });
            }
            let src = if dr == 0 && dc == 0 {
                src0
            } else {
                let goff = b.fma(Ty::U32, self.pitch_bytes, imm(dr), imm(dc * vb));
                b.mad_wide(Ty::U32, goff, imm(1), src0)
            };
            let soff = (dr * self.cols + dc * self.ve) * self.esize;
            if vb >= 4 {
                let src = b.selp(Ty::U64, src, self.any, ok);
                let size = b.selp(Ty::U32, imm(vb), imm(0), ok);
                let d = add_imm(b, dst, soff);
                if let Some(g) = guard {
                    b.when(g);
                }
                b.push(TOp::CpAsync {
                    cache: if vb == 16 { CacheOp::Cg } else { CacheOp::Ca },
                    dst: d,
                    src,
                    bytes: vb as u32,
                    src_size: Some(size.into()),
                });
            } else {
                let ty = if self.esize == 2 { Ty::B16 } else { Ty::B32 };
                let v = b.mov(ty, imm(0));
                let ld_ok = match guard {
                    Some(g) => b.bin(BinOp::And, Ty::Pred, g, ok),
                    None => ok,
                };
                b.when(ld_ok);
                b.ld_to(Space::Global, ty, &[v], src, 0);
                if let Some(g) = guard {
                    b.when(g);
                }
                b.st(Space::Shared, ty, dst, soff as i32, &[v.into()]);
            }
        }
    }
}

/// `r + v` (u32), or `r` itself when `v` is 0.
fn add_imm(b: &mut KernelBuilder, r: Reg, v: i64) -> Reg {
    if v == 0 {
        r
    } else {
        b.add(Ty::U32, r, imm(v))
    }
}

/// The widest copy (elements) that keeps every chunk of a row aligned: 16, 8 or 4 bytes when
/// the row length allows it, else one element (synchronous copies).
fn mma_chunk(pitch: u32, esize: i64, cols: i64) -> i64 {
    for bytes in [16, 8, 4] {
        let ve = bytes / esize;
        if ve >= 1 && i64::from(pitch) % ve == 0 && cols % ve == 0 {
            return ve;
        }
    }
    1
}

/// Tensor-core matmul, fp32 accumulators: BM×BN block tile, k-step BK, warps of WM×WN
/// (`m16n8k16` bf16/fp16 or `m16n8k8` tf32 tiles), `stages` shared buffers per operand.
///
/// Pipeline (stages S ≥ 2): the prologue issues k-tiles 0..S−2 (one `cp.async.commit_group`
/// each); iteration kt waits for its tile (`cp.async.wait_group S−2`), `bar.sync` (every
/// thread's copies of tile kt are visible and every thread is done reading tile kt−1), issues
/// tile kt+S−1 into the buffer tile kt−1 used, commits, then runs the MMAs on buffer kt mod S
/// while the later tiles load. With S = 1: copy, wait 0, barrier, compute, barrier.
/// Fragments: A by `ldmatrix.x4`, B by `ldmatrix.x4.trans` (16-bit) or `ld.shared.b32` (tf32).
/// Tiles are zero-filled past the matrix edges, so any M, N, K works.
#[allow(clippy::too_many_arguments)]
fn matmul_mma(
    g: &Graph,
    tk: &TileKernel,
    dims: [u32; 3],
    tile: [u32; 3],
    warp: [u32; 2],
    stages: u32,
    kind: MmaKind,
    batch: MatmulBatch,
) -> R<Lowered> {
    let (ad, bd, steps) = matmul_parts(g, tk)?;
    let tf32 = kind == MmaKind::M16n8k8Tf32;
    let esize: i64 = if tf32 { 4 } else { 2 };
    let kstep: i64 = if tf32 { 8 } else { 16 };
    let [bm_, bn_, bk_] = tile;
    let [wm_, wn_] = warp;
    if wn_ % 16 != 0 || wm_ % 16 != 0 || bk_ % 16 != 0 || stages == 0 {
        return no("warp tiles that are not multiples of 16");
    }
    let (bmi, bni, bki) = (i64::from(bm_), i64::from(bn_), i64::from(bk_));
    let (wmi, wni) = (i64::from(wm_), i64::from(wn_));
    let si = i64::from(stages);
    let warps_n = bni / wni;
    let threads = ((bmi / wmi) * warps_n * 32) as u32;
    let ti = i64::from(threads);
    let a_stage = bmi * bki * esize;
    let b_stage = bki * bni * esize;
    let mut b = KernelBuilder::new(&tk.name, tk.span);
    b.max_threads(threads);
    let a = ptr_param(&mut b, "a");
    let bp = ptr_param(&mut b, "b");
    let epi = epilogue_params(g, &mut b, &steps, &tk.ty.shape, false)?;
    b.at(tk.span);
    let c = ptr_param(&mut b, "c");
    let m = u32_param(&mut b, "m");
    let n = u32_param(&mut b, "n");
    let k = u32_param(&mut b, "k");
    let (a, bp, cbase) = batch_offsets(&mut b, batch, a, bp, [m, n, k], esize);
    let sa = b.shared("smem_a", (si * a_stage) as u32, 16);
    let sb = b.shared("smem_b", (si * b_stage) as u32, 16);
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let by = b.special(SReg::Ctaid(Dim::Y));
    let bm = b.mul(Ty::U32, by, imm(bmi));
    let bn = b.mul(Ty::U32, bx, imm(bni));
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);
    let [_, dn, dk] = dims;
    let a_copy = MmaCopy::new(
        &mut b,
        tid,
        ti,
        [bmi, bki],
        mma_chunk(dk, esize, bki),
        esize,
        a,
        [k, m, k],
        [Some(bm), None],
        [0, bki],
        sa0,
    );
    let b_copy = MmaCopy::new(
        &mut b,
        tid,
        ti,
        [bki, bni],
        mma_chunk(dn, esize, bni),
        esize,
        bp,
        [n, k, n],
        [None, Some(bn)],
        [bki, 0],
        sb0,
    );
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let warp_id = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let wm = b.bin(BinOp::Div, Ty::U32, warp_id, imm(warps_n));
    let wn = b.bin(BinOp::Rem, Ty::U32, warp_id, imm(warps_n));
    // ldmatrix row addresses: A lane l → row l%16 of the warp's m-tile, 16-byte column l/16.
    let l16 = b.bin(BinOp::And, Ty::B32, lane, imm(15));
    let lhi = b.bin(BinOp::Shr, Ty::U32, lane, imm(4));
    let arow = b.fma(Ty::U32, wm, imm(wmi), l16);
    let a_ld = b.fma(Ty::U32, arow, imm(bki * esize), sa0);
    let a_ld = b.fma(Ty::U32, lhi, imm(16), a_ld);
    let b_ld = if tf32 {
        // b0 = B[k = l%4][n = l/4], b1 = B[k = l%4 + 4][n = l/4] of each 8×8 (k×n) tile.
        let gq = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
        let t4 = b.bin(BinOp::And, Ty::B32, lane, imm(3));
        let col = b.fma(Ty::U32, wn, imm(wni), gq);
        let off = b.fma(Ty::U32, t4, imm(bni), col);
        b.fma(Ty::U32, off, imm(4), sb0)
    } else {
        let l8 = b.bin(BinOp::And, Ty::B32, lane, imm(7));
        let l8hi = b.bin(BinOp::Shr, Ty::U32, lane, imm(3));
        let l8hi = b.bin(BinOp::And, Ty::B32, l8hi, imm(1));
        let brow = b.fma(Ty::U32, l8hi, imm(8), l8);
        let b_ld = b.fma(Ty::U32, brow, imm(bni * 2), sb0);
        let bcol = b.mul(Ty::U32, wn, imm(wni));
        let bcol = b.fma(Ty::U32, lhi, imm(8), bcol);
        b.fma(Ty::U32, bcol, imm(2), b_ld)
    };
    let (mt_n, nt_n) = ((wmi / 16) as usize, (wni / 8) as usize);
    let acc: Vec<Reg> = (0..mt_n * nt_n * 4)
        .map(|_| b.mov(Ty::F32, fimm(0.0)))
        .collect();
    let nk = b.add(Ty::U32, k, imm(bki - 1));
    let nk = b.bin(BinOp::Shr, Ty::U32, nk, imm(log2(bk_)));
    let stage_of = |b: &mut KernelBuilder, kt: Reg| -> Reg {
        if stages.is_power_of_two() {
            b.bin(BinOp::And, Ty::B32, kt, imm(si - 1))
        } else {
            b.bin(BinOp::Rem, Ty::U32, kt, imm(si))
        }
    };
    let issue = |b: &mut KernelBuilder, kt: Reg, has: Option<Reg>| {
        let st = stage_of(b, kt);
        let aoff = b.mul(Ty::U32, st, imm(a_stage));
        let boff = b.mul(Ty::U32, st, imm(b_stage));
        a_copy.issue(b, kt, aoff, has);
        b_copy.issue(b, kt, boff, has);
        b.push(TOp::CpAsyncCommit);
    };
    for s in 0..si - 1 {
        let kt = b.mov(Ty::U32, imm(s));
        let has = b.setp(Cmp::Lt, Ty::U32, kt, nk);
        issue(&mut b, kt, Some(has));
    }
    let kt = b.mov(Ty::U32, imm(0));
    let (head, epib) = b.while_lt(kt, nk, ["k_head", "k_body", "epilogue"]);
    if stages >= 2 {
        b.push(TOp::CpAsyncWait { n: stages - 2 });
        b.bar_sync();
        let next = b.add(Ty::U32, kt, imm(si - 1));
        let has = b.setp(Cmp::Lt, Ty::U32, next, nk);
        issue(&mut b, next, Some(has));
    } else {
        issue(&mut b, kt, None);
        b.push(TOp::CpAsyncWait { n: 0 });
        b.bar_sync();
    }
    let st = stage_of(&mut b, kt);
    let a_base = b.fma(Ty::U32, st, imm(a_stage), a_ld);
    let b_base = b.fma(Ty::U32, st, imm(b_stage), b_ld);
    for ks in 0..bki / kstep {
        let mut af = vec![];
        for mt in 0..mt_n as i64 {
            let addr = add_imm(&mut b, a_base, mt * 16 * bki * esize + ks * 32);
            let mut d = [
                b.reg(Ty::B32),
                b.reg(Ty::B32),
                b.reg(Ty::B32),
                b.reg(Ty::B32),
            ];
            b.push(TOp::Ldmatrix {
                trans: false,
                dsts: d,
                addr,
            });
            if tf32 && ad == DType::F32 {
                d = d.map(|x| round_tf32(&mut b, x));
            }
            af.push(d);
        }
        let mut bf = vec![];
        if tf32 {
            for nt in 0..nt_n as i64 {
                let off = (ks * 8 * bni + nt * 8) * 4;
                let lo = b.ld(Space::Shared, Ty::B32, b_base, off as i32, 1)[0];
                let hi = b.ld(
                    Space::Shared,
                    Ty::B32,
                    b_base,
                    (off + 4 * bni * 4) as i32,
                    1,
                )[0];
                let mut f = [lo, hi];
                if bd == DType::F32 {
                    f = f.map(|x| round_tf32(&mut b, x));
                }
                bf.push(f);
            }
        } else {
            for np in 0..(wni / 16) {
                let addr = add_imm(&mut b, b_base, ks * 16 * bni * 2 + np * 16 * 2);
                let d = [
                    b.reg(Ty::B32),
                    b.reg(Ty::B32),
                    b.reg(Ty::B32),
                    b.reg(Ty::B32),
                ];
                b.push(TOp::Ldmatrix {
                    trans: true,
                    dsts: d,
                    addr,
                });
                bf.push([d[0], d[1]]);
                bf.push([d[2], d[3]]);
            }
        }
        for (mt, a_frag) in af.iter().enumerate() {
            for (nt, b_frag) in bf.iter().enumerate() {
                let base = (mt * nt_n + nt) * 4;
                let d = [acc[base], acc[base + 1], acc[base + 2], acc[base + 3]];
                b.push(TOp::Mma {
                    kind,
                    d,
                    a: *a_frag,
                    b: *b_frag,
                    c: d,
                });
            }
        }
    }
    if stages < 2 {
        b.bar_sync();
    }
    b.bin_to(kt, BinOp::Add, Ty::U32, kt, imm(1));
    b.br(head);
    b.switch_to(epib);
    let gq = b.bin(BinOp::Shr, Ty::U32, lane, imm(2));
    let t = b.bin(BinOp::And, Ty::B32, lane, imm(3));
    let row0 = b.fma(Ty::U32, wm, imm(wmi), bm);
    let row0 = b.add(Ty::U32, row0, gq);
    let col0 = b.fma(Ty::U32, wn, imm(wni), bn);
    let col0 = b.fma(Ty::U32, t, imm(2), col0);
    for mt in 0..mt_n as i64 {
        for half in 0..2i64 {
            b.at(tk.span);
            let row = b.add(Ty::U32, row0, imm(mt * 16 + half * 8));
            let row_ok = b.setp(Cmp::Lt, Ty::U32, row, m);
            for nt in 0..nt_n as i64 {
                for e in 0..2i64 {
                    b.at(tk.span);
                    let col = b.add(Ty::U32, col0, imm(nt * 8 + e));
                    let col_ok = b.setp(Cmp::Lt, Ty::U32, col, n);
                    let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
                    let idx = b.fma(Ty::U32, row, n, col);
                    let idx = match cbase {
                        Some(cb) => b.add(Ty::U32, idx, cb),
                        None => idx,
                    };
                    let r = acc[((mt * nt_n as i64 + nt) * 4 + half * 2 + e) as usize];
                    let v = apply_epilogue(&mut b, &epi, r, idx, ok)?;
                    b.at(tk.span);
                    store_f32(&mut b, tk.ty.dtype, c, idx, v, Some(ok));
                }
            }
        }
    }
    b.ret();
    Ok(Lowered {
        kernel: b.finish()?,
        grid: tk.grid,
        block: [threads, 1, 1],
        scalars: dims.to_vec(),
        status: false,
    })
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
        Shape::ReduceAxis { .. }
        | Shape::SoftmaxAxis { .. }
        | Shape::RowSoftmax { .. }
        | Shape::Rows { .. }
        | Shape::FlashAttention { .. } => no("a kind built as Tile IR (lower::kernels)"),
        Shape::MatmulFma {
            m,
            n,
            k,
            tile,
            stages,
            batch,
        } => matmul_fma(g, tk, [*m, *n, *k], *tile, *stages, *batch),
        Shape::MatmulMma {
            m,
            n,
            k,
            tile,
            warp,
            stages,
            kind,
            batch,
        } => matmul_mma(g, tk, [*m, *n, *k], *tile, *warp, *stages, *kind, *batch),
    }
}
