//! The scalar vocabulary every code level shares: value types, the unary and binary
//! operations, comparisons, rounding modes, packings, special registers and matrix-multiply
//! shapes. Tile IR and both back ends (Target IR for PTX, SPIR-V) speak it; the spellings are
//! PTX's (`f32`, `bf16x2`, `ex2.approx`) because Tile IR's text uses them.

mod names;

pub use names::ptx_name;

/// The file of a span with no source: `loc(unknown)` in Tile IR text (hand-written kernels).
/// Such a span is a real span to the verifiers (unlike `Span::default()`, an op nobody gave
/// one); the printers give it no location (`loc(unknown)`, no PTX `.loc`) and diagnostics no
/// label.
pub const NO_FILE: u32 = u32::MAX;

/// A register type, as PTX declares it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ty {
    Pred,
    B16,
    B32,
    B64,
    U32,
    U64,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    F32,
    F64,
    /// An 8-bit unsigned memory type: only the instruction type of `ld`/`st` (PTX has no 8-bit
    /// arithmetic); the register is a 32-bit integer one (PTX lets `ld`/`st` take wider
    /// registers: a load zero-extends, a store keeps the low byte). No register has this type.
    U8,
}

/// All register types, in declaration order.
pub const ALL_TYS: [Ty; 14] = [
    Ty::Pred,
    Ty::B16,
    Ty::B32,
    Ty::B64,
    Ty::U32,
    Ty::U64,
    Ty::S32,
    Ty::S64,
    Ty::F16,
    Ty::F16x2,
    Ty::BF16,
    Ty::BF16x2,
    Ty::F32,
    Ty::F64,
];

/// What kind of value a type holds (for the compatibility rule).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TyClass {
    Pred,
    Bits,
    Unsigned,
    Signed,
    Float,
}

impl Ty {
    /// Size in bits (a predicate counts as 1).
    pub fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::U8 => 8,
            Ty::B16 | Ty::F16 | Ty::BF16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F16x2 | Ty::BF16x2 | Ty::F32 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
        }
    }
    pub fn class(self) -> TyClass {
        match self {
            Ty::Pred => TyClass::Pred,
            Ty::B16 | Ty::B32 | Ty::B64 => TyClass::Bits,
            Ty::U8 | Ty::U32 | Ty::U64 => TyClass::Unsigned,
            Ty::S32 | Ty::S64 => TyClass::Signed,
            Ty::F16 | Ty::F16x2 | Ty::BF16 | Ty::BF16x2 | Ty::F32 | Ty::F64 => TyClass::Float,
        }
    }
    /// The PTX type suffix (`f32`, `bf16x2`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Ty::Pred => "pred",
            Ty::B16 => "b16",
            Ty::B32 => "b32",
            Ty::B64 => "b64",
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::S32 => "s32",
            Ty::S64 => "s64",
            Ty::F16 => "f16",
            Ty::F16x2 => "f16x2",
            Ty::BF16 => "bf16",
            Ty::BF16x2 => "bf16x2",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::U8 => "u8",
        }
    }
    /// Whether a register of type `reg` may be an operand of an instruction of type `self`
    /// (PTX ISA "Operand type checking": bit-size types are compatible with any type of that size).
    pub fn accepts(self, reg: Ty) -> bool {
        if self == reg {
            return true;
        }
        match (self.class(), reg.class()) {
            (TyClass::Pred, _) | (_, TyClass::Pred) => false,
            (TyClass::Bits, _) => self.bits() == reg.bits(),
            (
                TyClass::Unsigned | TyClass::Signed,
                TyClass::Bits | TyClass::Unsigned | TyClass::Signed,
            ) => self.bits() == reg.bits(),
            (TyClass::Unsigned | TyClass::Signed, TyClass::Float) => false,
            (TyClass::Float, TyClass::Bits) => self.bits() == reg.bits(),
            (TyClass::Float, TyClass::Unsigned | TyClass::Signed | TyClass::Float) => false,
        }
    }
    pub fn is_int(self) -> bool {
        matches!(
            self.class(),
            TyClass::Unsigned | TyClass::Signed | TyClass::Bits
        )
    }
}

/// Special registers, read with `mov.u32`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SReg {
    Tid(Dim),
    Ntid(Dim),
    Ctaid(Dim),
    Nctaid(Dim),
    LaneId,
    WarpId,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    X,
    Y,
    Z,
}

/// Rounding modifiers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rnd {
    /// to nearest even (float result)
    Rn,
    /// toward zero (float result)
    Rz,
    /// toward -inf (float result)
    Rm,
    /// toward +inf (float result)
    Rp,
    /// integer result: nearest even / toward zero / down / up
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// One-source operations: `op.ty d, a`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Abs,
    /// bitwise / logical not (`.pred .b16 .b32 .b64`)
    Not,
    /// `rcp.rn.f32` (IEEE) — `RcpApprox` is `rcp.approx.f32`
    Rcp,
    RcpApprox,
    /// `sqrt.rn.f32`
    Sqrt,
    SqrtApprox,
    RsqrtApprox,
    /// `ex2.approx.f32`: 2^x, max relative error 2^-22 (PTX ISA); the emulator computes it exactly
    Ex2Approx,
    /// `lg2.approx.f32`: log2 x, max absolute error 2^-22 (emulated exactly)
    Lg2Approx,
    /// `tanh.approx.f32` (sm_75+): max relative error 2^-11 (emulated exactly)
    TanhApprox,
}

/// Two-source operations: `op.ty d, a, b`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `add.s32` / `add.rn.f32`
    Add,
    Sub,
    /// `mul.lo.s32` / `mul.rn.f32`
    Mul,
    /// `mul.hi.u32`
    MulHi,
    /// `min`/`max`: `.f32` prints as `min.NaN.f32` (a NaN operand gives NaN, as NumPy's
    /// `minimum`/`maximum`; sm_80+); `.f64` has no `.NaN` form and returns the other operand
    /// (the builder's `bin` makes fp64 min/max propagate NaN with `setp.nan` + `selp`).
    Min,
    Max,
    /// `div.s32` / `div.rn.f32`
    Div,
    /// `div.approx.f32`
    DivApprox,
    Rem,
    And,
    Or,
    Xor,
    /// `shl.bN` (shift amount is a u32)
    Shl,
    /// `shr.uN` logical / `shr.sN` arithmetic (shift amount is a u32)
    Shr,
}

/// Comparisons for `setp` (floats: ordered — false when either side is NaN — except `Nan`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `setp.nan`: true when either float operand is NaN (floats only).
    Nan,
}

/// Memory state spaces for `ld`/`st`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// global: address in a 64-bit register
    Global,
    /// shared: address in a 32-bit register (a shared-window offset)
    Shared,
}

/// Packing conversions: two f32 → one packed register (`cvt.rn.bf16x2.f32 d, hi, lo`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pack {
    /// `cvt.rn.f16x2.f32 d(f16x2), hi, lo`
    F16x2,
    /// `cvt.rn.bf16x2.f32 d(bf16x2), hi, lo`
    BF16x2,
    /// `cvt.rn.satfinite.e4m3x2.f32 d(b16), hi, lo` (sm_89+)
    E4m3x2,
    /// `cvt.rn.satfinite.e5m2x2.f32 d(b16), hi, lo` (sm_89+)
    E5m2x2,
}

/// Unpacking fp8 pairs: `cvt.rn.f16x2.e4m3x2 d(f16x2), a(b16)` (sm_89+).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unpack {
    E4m3x2,
    E5m2x2,
}

/// `cp.async` cache policy: `.ca` (4, 8 or 16 bytes) or `.cg` (16 bytes only).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CacheOp {
    Ca,
    Cg,
}

/// `shfl.sync` modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `mma.sync.aligned` shapes and types (all row.col, fp32 accumulators: a 4 regs, b 2, c/d 4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MmaKind {
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`
    M16n8k16Bf16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`
    M16n8k16F16,
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`
    M16n8k8Tf32,
}
