//! Tile IR as a program: one kernel's block program as a typed SSA function.
//!
//! ```text
//! Kernel { name, params: Vec<Param>, shared: Vec<SharedDecl>, grid, block,
//!          values: Vec<Type>            // the type of every SSA value, by id
//!          ops: Vec<OpData>             // arena; OpData { kind, operands, results, regions, span }
//!          body: Region }               // Region { args, ops: Vec<OpId> }
//! ```
//!
//! Values are defined exactly once: as a kernel parameter, a region argument (a loop's
//! induction variable and carried values) or an op result. Types ([`Type`]) are scalars (the
//! register types of PTX, reused from Target IR), MMA fragments with their layout
//! ([`Frag`]), global tensor views (a pointer with the tensor's dtype: ops address them by
//! element index) and shared-memory buffers with an explicit layout ([`SharedBuf`]).
//!
//! Control flow is structured: `tile.for` (a counted loop with carried values, the pipeline
//! depth it feeds as an attribute) and `tile.if` (with results), each region ending in
//! `tile.yield`. There are no branches and no blocks: Tile → Target creates them.
//!
//! Invariants (checked by [`super::verify`]):
//! - every value is defined once, before its uses, in an enclosing region (dominance);
//! - operand types match each op's signature (its row in [`super::ops`]);
//! - a region of `tile.for` has `1 + carried` arguments and ends in a `tile.yield` of the
//!   carried types; a region of `tile.if` ends in a `tile.yield` of the op's result types;
//! - constant shared-memory offsets lie inside their buffer;
//! - an async copy into a buffer is waited for (`tile.wait` then `tile.barrier`) before the
//!   buffer is read; shared writes and later reads by other threads are separated by a
//!   `tile.barrier`;
//! - every op has a real span (`Span::default()` is not one).

use crate::graph::DType;
use crate::scalar::{MmaKind, Ty};
use tessera_lang::Span;

/// An SSA value: an index into [`Kernel::values`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// An op: an index into [`Kernel::ops`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId(pub u32);

/// Which operand of an MMA a fragment holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The row-major `m×k` operand: 4 `b32` registers (8 `bf16`/`f16` or 4 `tf32`).
    A,
    /// The column-major `k×n` operand: 2 `b32` registers.
    B,
    /// The `m×n` accumulator: 4 `f32` registers.
    C,
}

/// A register fragment of `mma.sync` of `kind`, laid out as the PTX ISA's fragment layouts
/// for that shape say (lane `l` holds rows `l/4` and `l/4 + 8`, columns `2·(l%4)`, …).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frag {
    pub kind: MmaKind,
    pub role: Role,
}

impl Frag {
    /// The number of 32-bit registers that hold it.
    pub fn regs(self) -> usize {
        match self.role {
            Role::A | Role::C => 4,
            Role::B => 2,
        }
    }
    /// The register type of its elements.
    pub fn reg_ty(self) -> Ty {
        match self.role {
            Role::A | Role::B => Ty::B32,
            Role::C => Ty::F32,
        }
    }
}

/// How a shared buffer's elements are placed: row-major with a row pitch, and an XOR swizzle
/// of 16-byte chunks within a row (`chunk ^= (row >> shift) & mask`, the CUTLASS `Swizzle`
/// family), so that the eight 16-byte rows an `ldmatrix` reads fall in different banks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Bytes from one row to the next (≥ the row's bytes: padding avoids bank conflicts too).
    pub pitch: u32,
    /// XOR swizzle of the 16-byte chunk index: `None` is plain row-major.
    pub swizzle: Option<Swizzle>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Swizzle {
    /// The chunk index is XORed with `(row >> shift) & mask`.
    pub mask: u32,
    pub shift: u32,
}

/// A shared-memory buffer: `shape` elements of `elem_bytes` each, the last two dims laid out
/// by `layout` (leading dims are stages, each `rows · pitch` bytes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedBuf {
    pub elem_bytes: u32,
    pub shape: Vec<u32>,
    pub layout: Layout,
    pub align: u32,
}

impl SharedBuf {
    /// Bytes of one stage: rows × pitch.
    pub fn stage_bytes(&self) -> u64 {
        let rows = if self.shape.len() >= 2 {
            self.shape[self.shape.len() - 2]
        } else {
            1
        };
        u64::from(rows) * u64::from(self.layout.pitch)
    }
    /// Total bytes.
    pub fn bytes(&self) -> u64 {
        let lead: u64 = if self.shape.len() > 2 {
            self.shape[..self.shape.len() - 2]
                .iter()
                .map(|&d| u64::from(d))
                .product()
        } else {
            1
        };
        lead * self.stage_bytes()
    }
}

/// The type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// One register of a PTX type (`u32`, `f32`, `pred`, `bf16x2`, …).
    Scalar(Ty),
    Frag(Frag),
    /// A global tensor of `dtype` elements (a pointer parameter; ops take element indices).
    Global(DType),
    /// A shared-memory buffer (declared by the kernel; [`Kernel::shared`]).
    Shared(SharedBuf),
    /// A TMA tensor map (a parameter: the 128-byte `CUtensorMap` passed by value).
    TensorMap(TensorMapTy),
}

/// What a tensor-map parameter's type fixes: the element type, the box one bulk copy moves
/// (outermost dimension first, 1 to 5 dimensions) and the swizzle of the box in shared
/// memory (0, 32, 64 or 128 bytes). The tensor's dims and strides are the tensor's bound at
/// launch, its out-of-range elements read as zero.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMapTy {
    pub dtype: DType,
    pub box_dims: Vec<u32>,
    pub swizzle: u32,
}

impl TensorMapTy {
    /// The bytes of one box.
    pub fn box_bytes(&self) -> u64 {
        self.box_dims.iter().map(|&d| u64::from(d)).product::<u64>()
            * self.dtype.size_bytes() as u64
    }
}

impl Type {
    pub fn scalar(&self) -> Option<Ty> {
        match self {
            Type::Scalar(t) => Some(*t),
            _ => None,
        }
    }
}

/// An operand: a value or an immediate (float immediates stored as bits, so ops are `Eq`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Value(Value),
    Imm(i64),
    F32(u32),
    F64(u64),
}

impl From<Value> for Operand {
    fn from(v: Value) -> Operand {
        Operand::Value(v)
    }
}

impl Operand {
    pub fn value(self) -> Option<Value> {
        match self {
            Operand::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// Math functions, expanded into scalar ops before the back ends ([`super::math`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `e^x` (`ex2.approx` of `x·log2 e` in f32; a range-reduced polynomial in f64).
    Exp,
    /// `ln x` (`lg2.approx · ln 2` in f32; exponent split and an atanh series in f64).
    Log,
    /// `tanh x` (`tanh.approx` in f32; a sinh series or `1 − 2/(e^2|x| + 1)` in f64).
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `x · sigmoid(x)`.
    Silu,
    /// `0.5·x·(1 + erf(x/√2))`.
    Gelu,
    /// `x^y` (f32: `ex2(y·lg2 |x|)`; f64: a double-double `ln`; with the sign and zero cases
    /// of `pow`).
    Pow,
    /// The error function (a Maclaurin series below 1, `1 − e^(−x²)·P` above).
    Erf,
    Sin,
    Cos,
}

pub use super::ops::{OpKind, ROWS};

/// A region: arguments (defined by the op that owns it) and a list of ops.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Region {
    pub args: Vec<Value>,
    pub ops: Vec<OpId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpData {
    pub kind: OpKind,
    pub operands: Vec<Operand>,
    pub results: Vec<Value>,
    pub regions: Vec<Region>,
    pub span: Span,
}

/// What a kernel parameter is at launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamRole {
    /// An input buffer (the kernel's inputs, in order).
    Input,
    /// The output buffer.
    Output,
    /// A `u32` size passed by value.
    Size(u32),
    /// The status word: a `u32` buffer, zero before the launch, set to 1 by a thread whose
    /// element hits an error the cpu reports (integer division by zero, NaN cast to int).
    Status,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    pub name: String,
    pub value: Value,
    pub role: ParamRole,
}

/// A shared buffer the kernel declares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedDecl {
    pub name: String,
    pub value: Value,
}

/// One kernel's block program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub shared: Vec<SharedDecl>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub values: Vec<Type>,
    pub ops: Vec<OpData>,
    pub body: Region,
    pub span: Span,
}

impl Kernel {
    pub fn ty(&self, v: Value) -> Option<&Type> {
        self.values.get(v.0 as usize)
    }
    pub fn op(&self, id: OpId) -> Option<&OpData> {
        self.ops.get(id.0 as usize)
    }
    pub fn threads(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }
    /// The `u32` sizes passed by value, in parameter order.
    pub fn scalars(&self) -> Vec<u32> {
        self.params
            .iter()
            .filter_map(|p| match p.role {
                ParamRole::Size(n) => Some(n),
                _ => None,
            })
            .collect()
    }
    /// Whether the kernel takes a status word.
    pub fn has_status(&self) -> bool {
        self.params.iter().any(|p| p.role == ParamRole::Status)
    }
    /// The shared buffer a value names.
    pub fn shared_buf(&self, v: Value) -> Option<&SharedBuf> {
        match self.ty(v) {
            Some(Type::Shared(b)) => Some(b),
            _ => None,
        }
    }
}
