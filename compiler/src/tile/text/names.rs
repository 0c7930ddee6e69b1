//! The spellings of the enums the text form uses, and their inverses. Every `*_name` is an
//! exhaustive match; every `parse_*` searches the list of all variants by name, so the two
//! agree by construction.

use crate::graph::DType;
use crate::scalar::{
    BinOp, CacheOp, Cmp, Dim, MmaKind, Pack, Rnd, SReg, ShflMode, Ty, UnOp, Unpack, ALL_TYS,
};
use crate::tile::ir::{MathFn, Role};

fn find<T: Copy, S: AsRef<str>>(all: &[T], name: impl Fn(T) -> S, s: &str) -> Option<T> {
    all.iter().copied().find(|&x| name(x).as_ref() == s)
}

pub fn parse_ty(s: &str) -> Option<Ty> {
    if s == "u8" {
        return Some(Ty::U8);
    }
    find(&ALL_TYS, |t| t.name(), s)
}

/// Every dtype (the text form spells each).
pub(crate) const ALL_DTYPES: [DType; 13] = [
    DType::F64,
    DType::F32,
    DType::TF32,
    DType::F16,
    DType::BF16,
    DType::F8E4M3,
    DType::F8E5M2,
    DType::I64,
    DType::I32,
    DType::I8,
    DType::Bool,
    DType::C64,
    DType::C128,
];

pub fn parse_dtype(s: &str) -> Option<DType> {
    find(&ALL_DTYPES, |d| d.name(), s)
}

fn dim_name(d: Dim) -> &'static str {
    match d {
        Dim::X => "x",
        Dim::Y => "y",
        Dim::Z => "z",
    }
}

/// `tid.x`, `laneid`, … (printed after `%`).
pub fn sreg_name(s: SReg) -> String {
    match s {
        SReg::Tid(d) => format!("tid.{}", dim_name(d)),
        SReg::Ntid(d) => format!("ntid.{}", dim_name(d)),
        SReg::Ctaid(d) => format!("ctaid.{}", dim_name(d)),
        SReg::Nctaid(d) => format!("nctaid.{}", dim_name(d)),
        SReg::LaneId => "laneid".to_string(),
        SReg::WarpId => "warpid".to_string(),
    }
}

pub fn parse_sreg(s: &str) -> Option<SReg> {
    let mut all = vec![SReg::LaneId, SReg::WarpId];
    for d in [Dim::X, Dim::Y, Dim::Z] {
        all.extend([SReg::Tid(d), SReg::Ntid(d), SReg::Ctaid(d), SReg::Nctaid(d)]);
    }
    find(&all, sreg_name, s)
}

pub fn unop_name(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Abs => "abs",
        UnOp::Not => "not",
        UnOp::Rcp => "rcp",
        UnOp::RcpApprox => "rcp.approx",
        UnOp::Sqrt => "sqrt",
        UnOp::SqrtApprox => "sqrt.approx",
        UnOp::RsqrtApprox => "rsqrt.approx",
        UnOp::Ex2Approx => "ex2.approx",
        UnOp::Lg2Approx => "lg2.approx",
        UnOp::TanhApprox => "tanh.approx",
    }
}

pub const ALL_UNOPS: [UnOp; 11] = [
    UnOp::Neg,
    UnOp::Abs,
    UnOp::Not,
    UnOp::Rcp,
    UnOp::RcpApprox,
    UnOp::Sqrt,
    UnOp::SqrtApprox,
    UnOp::RsqrtApprox,
    UnOp::Ex2Approx,
    UnOp::Lg2Approx,
    UnOp::TanhApprox,
];

pub fn parse_unop(s: &str) -> Option<UnOp> {
    find(&ALL_UNOPS, unop_name, s)
}

pub fn binop_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::MulHi => "mul.hi",
        BinOp::Min => "min",
        BinOp::Max => "max",
        BinOp::Div => "div",
        BinOp::DivApprox => "div.approx",
        BinOp::Rem => "rem",
        BinOp::And => "and",
        BinOp::Or => "or",
        BinOp::Xor => "xor",
        BinOp::Shl => "shl",
        BinOp::Shr => "shr",
    }
}

pub const ALL_BINOPS: [BinOp; 14] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::MulHi,
    BinOp::Min,
    BinOp::Max,
    BinOp::Div,
    BinOp::DivApprox,
    BinOp::Rem,
    BinOp::And,
    BinOp::Or,
    BinOp::Xor,
    BinOp::Shl,
    BinOp::Shr,
];

pub fn parse_binop(s: &str) -> Option<BinOp> {
    find(&ALL_BINOPS, binop_name, s)
}

pub fn cmp_name(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "eq",
        Cmp::Ne => "ne",
        Cmp::Lt => "lt",
        Cmp::Le => "le",
        Cmp::Gt => "gt",
        Cmp::Ge => "ge",
        Cmp::Nan => "nan",
    }
}

/// Every comparison, in the order the text form lists them.
pub const CMPS: [Cmp; 7] = [
    Cmp::Eq,
    Cmp::Ne,
    Cmp::Lt,
    Cmp::Le,
    Cmp::Gt,
    Cmp::Ge,
    Cmp::Nan,
];

pub fn parse_cmp(s: &str) -> Option<Cmp> {
    find(&CMPS, cmp_name, s)
}

pub fn rnd_name(r: Rnd) -> &'static str {
    match r {
        Rnd::Rn => "rn",
        Rnd::Rz => "rz",
        Rnd::Rm => "rm",
        Rnd::Rp => "rp",
        Rnd::Rni => "rni",
        Rnd::Rzi => "rzi",
        Rnd::Rmi => "rmi",
        Rnd::Rpi => "rpi",
    }
}

/// Every rounding mode.
pub const RNDS: [Rnd; 8] = [
    Rnd::Rn,
    Rnd::Rz,
    Rnd::Rm,
    Rnd::Rp,
    Rnd::Rni,
    Rnd::Rzi,
    Rnd::Rmi,
    Rnd::Rpi,
];

pub fn parse_rnd(s: &str) -> Option<Rnd> {
    find(&RNDS, rnd_name, s)
}

pub fn pack_name(p: Pack) -> &'static str {
    match p {
        Pack::F16x2 => "f16x2",
        Pack::BF16x2 => "bf16x2",
        Pack::E4m3x2 => "e4m3x2",
        Pack::E5m2x2 => "e5m2x2",
    }
}

pub fn parse_pack(s: &str) -> Option<Pack> {
    let all = [Pack::F16x2, Pack::BF16x2, Pack::E4m3x2, Pack::E5m2x2];
    find(&all, pack_name, s)
}

pub fn unpack_name(u: Unpack) -> &'static str {
    match u {
        Unpack::E4m3x2 => "e4m3x2",
        Unpack::E5m2x2 => "e5m2x2",
    }
}

pub fn parse_unpack(s: &str) -> Option<Unpack> {
    let all = [Unpack::E4m3x2, Unpack::E5m2x2];
    find(&all, unpack_name, s)
}

pub fn cache_name(c: CacheOp) -> &'static str {
    match c {
        CacheOp::Ca => "ca",
        CacheOp::Cg => "cg",
    }
}

pub fn parse_cache(s: &str) -> Option<CacheOp> {
    find(&[CacheOp::Ca, CacheOp::Cg], cache_name, s)
}

pub fn shfl_name(m: ShflMode) -> &'static str {
    match m {
        ShflMode::Up => "up",
        ShflMode::Down => "down",
        ShflMode::Bfly => "bfly",
        ShflMode::Idx => "idx",
    }
}

pub fn parse_shfl(s: &str) -> Option<ShflMode> {
    let all = [ShflMode::Up, ShflMode::Down, ShflMode::Bfly, ShflMode::Idx];
    find(&all, shfl_name, s)
}

/// `m16n8k16.bf16`, …
pub fn mma_name(k: MmaKind) -> &'static str {
    match k {
        MmaKind::M16n8k16Bf16 => "m16n8k16.bf16",
        MmaKind::M16n8k16F16 => "m16n8k16.f16",
        MmaKind::M16n8k8Tf32 => "m16n8k8.tf32",
    }
}

pub fn parse_mma(s: &str) -> Option<MmaKind> {
    let all = [
        MmaKind::M16n8k16Bf16,
        MmaKind::M16n8k16F16,
        MmaKind::M16n8k8Tf32,
    ];
    find(&all, mma_name, s)
}

pub fn math_name(f: MathFn) -> &'static str {
    match f {
        MathFn::Exp => "exp",
        MathFn::Log => "log",
        MathFn::Tanh => "tanh",
        MathFn::Sigmoid => "sigmoid",
        MathFn::Silu => "silu",
        MathFn::Gelu => "gelu",
        MathFn::Pow => "pow",
        MathFn::Erf => "erf",
        MathFn::Sin => "sin",
        MathFn::Cos => "cos",
    }
}

/// Every math function.
pub const MATH_FNS: [MathFn; 10] = [
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

pub fn parse_math(s: &str) -> Option<MathFn> {
    find(&MATH_FNS, math_name, s)
}

pub fn role_name(r: Role) -> &'static str {
    match r {
        Role::A => "a",
        Role::B => "b",
        Role::C => "c",
    }
}

pub fn parse_role(s: &str) -> Option<Role> {
    find(&[Role::A, Role::B, Role::C], role_name, s)
}

/// Whether a name prints bare after `@` (otherwise it is quoted).
pub fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// `@name` or `@"escaped name"`.
pub fn at_name(s: &str) -> String {
    if is_bare(s) {
        format!("@{s}")
    } else {
        format!("@\"{}\"", s.escape_default())
    }
}
