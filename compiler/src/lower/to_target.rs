//! Tile IR → Target IR: instantiates the block program of a [`TileKernel`] with the
//! [`KernelBuilder`]. Every instruction carries the span of the Graph op it comes from
//! (the fused body's ops, the epilogue steps), so the PTX has `.loc` lines into the `.tsr`.
//!
//! Kernel parameters, in order: one pointer per input buffer (the tile kernel's `inputs`),
//! the output pointer, then the `u32` sizes listed in [`Lowered::scalars`].

use super::math::{exp, exp_f64, gelu, round_tf32, sigmoid};
use crate::graph::{BinaryOp, DType, Epilogue, EpilogueStep, Graph, Op, Scalar, UnaryOp};
use crate::target::builder::{fimm, imm};
use crate::target::{
    BinOp, CacheOp, Cmp, Dim, Kernel, KernelBuilder, MmaKind, Op as TOp, Operand, ParamTy, Reg,
    Rnd, SReg, Space, TargetError, Ty, UnOp,
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
pub(super) enum Index {
    Same,
    Scalar,
    /// `i % inner` (a trailing-dims vector like a bias).
    Mod(u32),
    /// `(i / inner) % outer`... not needed: rows of a `[M,1]` operand: `i / inner`.
    Div(u32),
}

pub(super) fn index_of(shape: &[usize], out: &[usize]) -> R<Index> {
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

fn d_of(v: Val) -> R<Reg> {
    match v {
        Val::D(r) => Ok(r),
        _ => no("a non-fp64 value where an fp64 one is needed"),
    }
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
        Shape::Elementwise { .. }
        | Shape::Gather { .. }
        | Shape::ReduceAxis { .. }
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
