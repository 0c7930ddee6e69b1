//! Target IR's values: registers, operands, parameters and shared arrays.

use super::*;

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
    /// A TMA tensor map: the 128-byte `CUtensorMap` by value (`.param .align 64 .b8
    /// name[128]`), read through its generic address ([`Op::TensorMapAddr`]).
    TensorMap,
}

impl ParamTy {
    /// The PTX type of the parameter and of the register `ld.param` writes.
    pub fn ty(self) -> Ty {
        match self {
            ParamTy::Ptr | ParamTy::U64 | ParamTy::TensorMap => Ty::U64,
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
