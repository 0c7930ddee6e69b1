//! Target IR's values: register types, registers, operands, parameters and special registers.

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

/// A virtual register: an index into [`Kernel::regs`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u32);

/// A basic block: an index into [`Kernel::blocks`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

/// A kernel parameter: an index into [`Kernel::params`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamId(pub u32);

/// A shared-memory declaration: an index into [`Kernel::shared`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedId(pub u32);

/// An instruction source: a register or an immediate. Float immediates are stored as bits so
/// the IR stays `Eq + Hash`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Reg(Reg),
    /// An integer immediate (also used for `.bN` operands).
    Imm(i64),
    /// An f32 immediate, as bits (`0f3F800000`).
    F32(u32),
    /// An f64 immediate, as bits (`0d3FF0000000000000`).
    F64(u64),
}

impl Operand {
    pub fn f32(v: f32) -> Operand {
        Operand::F32(v.to_bits())
    }
    pub fn f64(v: f64) -> Operand {
        Operand::F64(v.to_bits())
    }
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Operand {
        Operand::Reg(r)
    }
}

/// A kernel parameter's type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamTy {
    /// A global pointer, passed as `.u64`.
    Ptr,
    U32,
    U64,
    F32,
}

impl ParamTy {
    /// The PTX type of the parameter and of the register `ld.param` writes.
    pub fn ty(self) -> Ty {
        match self {
            ParamTy::Ptr | ParamTy::U64 => Ty::U64,
            ParamTy::U32 => Ty::U32,
            ParamTy::F32 => Ty::F32,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    pub name: String,
    pub ty: ParamTy,
}

/// A static `.shared` array: `.shared .align A .b8 name[size];`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shared {
    pub name: String,
    pub size: u32,
    pub align: u32,
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
