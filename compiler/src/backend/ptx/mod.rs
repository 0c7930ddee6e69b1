//! The PTX back end. Tile IR becomes Target IR ([`from_tile`], after the math functions are
//! expanded into scalar ops by [`crate::tile::math`]), which is printed as PTX ([`print`]) and assembled by ptxas
//! ([`ptxas`]) where a test asks for it.
//!
//! Target IR: one PTX function as data — typed virtual registers, basic blocks, predicates.
//!
//! ```text
//! Kernel { name, params, shared, regs: Vec<Ty>, blocks: Vec<Block> }
//! Block  { label, insts: Vec<Instr>, spans: Vec<Span> (side table), term, term_span }
//! Instr  { guard: Option<Guard>, op: Op }          // `@%p op` / `@!%p op`
//! ```
//!
//! Invariants (checked by [`verify::verify`], relied on by the printer and the emulator):
//! - every [`Reg`], [`BlockId`], [`ParamId`] and [`SharedId`] is in range;
//! - every register is written before it is read, in block (layout) order: a register read in
//!   block `b` is written earlier in `b` or in a block laid out before `b` (loops carry values in
//!   registers written before the loop header);
//! - each operand's register type is compatible with the instruction type (PTX's rule: a `.bN`
//!   instruction type takes any register of N bits; `.uN`/`.sN` take `.bN .uN .sN`; `.fN` takes
//!   `.fN` or `.bN`; and, as PTX's relaxed rule for wider source registers allows, a `cvt`
//!   from `.f16`/`.bf16` may read a `.b32` register, whose low 16 bits it converts);
//! - every instruction and terminator has a real span (not `Span::default()`);
//! - block 0 is the entry; layout order matters to the emulator's reconvergence (lanes at the
//!   lowest block run first), so lowering lays out join blocks after the blocks that reach them.
//!
//! Modules: the IR itself in `types` (registers, operands) and `ops` (instructions), over the
//! shared scalar vocabulary ([`crate::scalar`]: value types, operations, special registers);
//! [`builder`] (the one way to build a kernel), [`verify`], [`print`] (the printer),
//! [`ptxas`] (runs NVIDIA's assembler). Targets and their limits are [`crate::arch`]. The sample kernels the
//! emulator, ptxas and PTX snapshot tests run are Tile IR text (`compiler/tests/data/*.tile`),
//! lowered through `from_tile::translate`.

pub mod builder;
pub mod error;
pub mod from_tile;
mod ops;
pub mod print;
pub mod ptxas;
mod types;
pub mod verify;

pub use crate::arch::{self, Target};
pub use crate::scalar::*;
pub use builder::KernelBuilder;
pub use error::TargetError;
pub use ops::*;
use tessera_lang::Span;
pub use types::*;

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

/// `@p` / `@!p` on an instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    pub pred: Reg,
    pub negate: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instr {
    pub guard: Option<Guard>,
    pub op: Op,
}

/// How a block ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Terminator {
    Bra(BlockId),
    /// `@p bra then; bra.uni else;` (`negate` branches on `!p`)
    CondBra {
        pred: Reg,
        negate: bool,
        then: BlockId,
        els: BlockId,
    },
    Ret,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    pub label: String,
    pub insts: Vec<Instr>,
    /// One span per instruction (side table: IR equality ignores positions only through this).
    pub spans: Vec<Span>,
    pub term: Terminator,
    pub term_span: Span,
    /// The header of a loop the assembler keeps rolled (`.pragma "nounroll";` after the label).
    pub nounroll: bool,
}

/// One PTX `.entry` function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub shared: Vec<Shared>,
    /// The type of each virtual register.
    pub regs: Vec<Ty>,
    pub blocks: Vec<Block>,
    /// `.maxntid N, 1, 1` when known (launch bound: ptxas budgets registers for it).
    pub max_threads: Option<u32>,
    /// `.minnctapersm N`: at least N blocks per SM. Set on fp64 kernels at 1 (any register
    /// budget up to 255): without an occupancy bound ptxas caps some fp64 kernels at 56-72
    /// registers and spills a 64-bit register pair.
    pub min_blocks: Option<u32>,
}

impl Kernel {
    pub fn reg_ty(&self, r: Reg) -> Option<Ty> {
        self.regs.get(r.0 as usize).copied()
    }
    /// Total static shared memory in bytes, each array aligned as declared (the emulator's and
    /// ptxas' layout: arrays in declaration order).
    pub fn shared_layout(&self) -> (Vec<u32>, u32) {
        let mut offsets = Vec::with_capacity(self.shared.len());
        let mut end: u64 = 0;
        for s in &self.shared {
            let a = u64::from(s.align.max(1));
            let off = end.div_ceil(a) * a;
            offsets.push(off.min(u64::from(u32::MAX)) as u32);
            end = off + u64::from(s.size);
        }
        (offsets, end.min(u64::from(u32::MAX)) as u32)
    }

    /// Dynamic shared memory the launch must request, in bytes: 0 when the arrays fit the
    /// 48 KiB of static `.shared` (declared one by one); otherwise the whole layout, which the
    /// PTX declares as one `.extern .shared` array ([`DYNAMIC_SHARED`]) with each array at its
    /// offset, and which a launch beyond 48 KiB must opt in to
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub fn dynamic_shared_bytes(&self) -> u32 {
        let (_, bytes) = self.shared_layout();
        if bytes > STATIC_SHARED_LIMIT {
            bytes
        } else {
            0
        }
    }
}

/// Static `.shared` per block on every target (larger layouts are dynamic).
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// The name of the one `.extern .shared` array of a kernel with dynamic shared memory.
pub const DYNAMIC_SHARED: &str = "tessera_dyn_smem";

#[cfg(test)]
mod tests;
