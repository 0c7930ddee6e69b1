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
//! Modules: [`builder`] (the one way to build a kernel), [`verify`], [`ptx`] (the printer),
//! [`arch`] (targets and limits), [`ptxas`] (runs NVIDIA's assembler). The sample kernels the
//! emulator, ptxas and PTX snapshot tests run are Tile IR text (`compiler/tests/data/*.tile`),
//! lowered through `tile_target::translate`.

pub mod arch;
pub mod builder;
pub mod error;
pub mod ptx;
pub mod ptxas;
pub mod verify;

pub use arch::Target;
pub use builder::KernelBuilder;
pub use error::TargetError;
use tessera_lang::Span;

/// `name` as a PTX identifier (`[A-Za-z_$][A-Za-z0-9_$]*`): a name that already is one (every
/// ASCII Python identifier but `_`) is returned unchanged; any other is mangled, each run of
/// characters outside `[A-Za-z0-9_]` written as `$` + `u<hex code point>` per character + `$`
/// (`核函数_0` → `$u6838u51fdu6570$_0`), with a leading `$$` when the result would start with
/// a digit, be `_` or be empty. The mangled form always holds a `$`, which no Python
/// identifier does, and decodes back to the name, so names of scripts never collide; it is
/// also a portable file name. Applying it twice changes nothing.
pub fn ptx_name(name: &str) -> std::borrow::Cow<'_, str> {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let valid = match name.chars().next() {
        Some(c) => {
            (c.is_ascii_alphabetic() || c == '_' || c == '$')
                && name.chars().all(|c| keep(c) || c == '$')
                && name != "_"
                && name != "$"
        }
        None => false,
    };
    if valid {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::new();
    let mut in_run = false;
    for c in name.chars() {
        if keep(c) {
            if in_run {
                out.push('$');
                in_run = false;
            }
            out.push(c);
        } else {
            if !in_run {
                out.push('$');
                in_run = true;
            }
            out.push_str(&format!("u{:x}", u32::from(c)));
        }
    }
    if in_run {
        out.push('$');
    }
    if out.is_empty() || out == "_" || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "$$");
    }
    std::borrow::Cow::Owned(out)
}

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

/// An instruction. Every variant is matched without a catch-all by the verifier, the printer
/// and the emulator, so adding one fails to compile until each decides.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `mov.u32 d, %tid.x` (d: 32-bit integer)
    Special {
        dst: Reg,
        sreg: SReg,
    },
    /// `ld.param.T d, [name]`
    LdParam {
        dst: Reg,
        param: ParamId,
    },
    /// `mov.u32 d, smem` — the shared-window address of a `.shared` array (d: 32-bit integer)
    SharedAddr {
        dst: Reg,
        shared: SharedId,
    },
    /// `mov.T d, a`
    Mov {
        ty: Ty,
        dst: Reg,
        src: Operand,
    },
    Unary {
        op: UnOp,
        ty: Ty,
        dst: Reg,
        src: Operand,
    },
    Binary {
        op: BinOp,
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
    },
    /// `fma.rn.f32 d, a, b, c` (floats) / `mad.lo.s32 d, a, b, c` (integers)
    Fma {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    /// `mul.wide.u32 d(64), a(32), b(32)`; ty is `U32` or `S32`
    MulWide {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
    },
    /// `mad.wide.u32 d(64), a(32), b(32), c(64)`; ty is `U32` or `S32`
    MadWide {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    /// `setp.cmp.ty p, a, b`
    Setp {
        cmp: Cmp,
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
    },
    /// `selp.ty d, a, b, p` — d = p ? a : b
    Selp {
        ty: Ty,
        dst: Reg,
        a: Operand,
        b: Operand,
        pred: Reg,
    },
    /// `cvt{.rnd}{.sat}.dty.sty d, a`; the verifier checks the rounding PTX requires
    Cvt {
        dty: Ty,
        sty: Ty,
        rnd: Option<Rnd>,
        sat: bool,
        dst: Reg,
        src: Reg,
    },
    /// `cvt.rna.tf32.f32 d(b32), a(f32)`
    CvtTf32 {
        dst: Reg,
        src: Reg,
    },
    CvtPack {
        pack: Pack,
        dst: Reg,
        hi: Reg,
        lo: Reg,
    },
    CvtUnpack {
        unpack: Unpack,
        dst: Reg,
        src: Reg,
    },
    /// `cvta.to.global.u64 d, a`
    CvtaGlobal {
        dst: Reg,
        src: Reg,
    },
    /// `ld.space{.v2|.v4}.ty {d..}, [addr+offset]` — 1, 2 or 4 destinations
    Ld {
        space: Space,
        ty: Ty,
        dsts: Vec<Reg>,
        addr: Reg,
        offset: i32,
    },
    /// `st.space{.v2|.v4}.ty [addr+offset], {a..}` — 1, 2 or 4 sources
    St {
        space: Space,
        ty: Ty,
        srcs: Vec<Operand>,
        addr: Reg,
        offset: i32,
    },
    /// `cp.async.ca.shared.global [dst], [src], bytes{, src_size}`; bytes past `src_size`
    /// are zero-filled (the edge mask)
    CpAsync {
        cache: CacheOp,
        dst: Reg,
        src: Reg,
        bytes: u32,
        src_size: Option<Operand>,
    },
    /// `cp.async.commit_group`
    CpAsyncCommit,
    /// `cp.async.wait_group n`: all but the n most recent committed groups are complete
    CpAsyncWait {
        n: u32,
    },
    /// `bar.sync 0`
    BarSync,
    /// `shfl.sync.mode.b32 d, a, b, c, mask`
    Shfl {
        mode: ShflMode,
        dst: Reg,
        src: Operand,
        lane: Operand,
        clamp: Operand,
        mask: u32,
    },
    /// `ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16 {d0..d3}, [addr]`
    Ldmatrix {
        trans: bool,
        dsts: [Reg; 4],
        addr: Reg,
    },
    /// `mma.sync.aligned...` d = a·b + c
    Mma {
        kind: MmaKind,
        d: [Reg; 4],
        a: [Reg; 4],
        b: [Reg; 2],
        c: [Reg; 4],
    },
    /// `atom.global.add.f32 d, [addr], a`
    AtomAddF32 {
        dst: Reg,
        addr: Reg,
        src: Operand,
    },
    /// `red.global.add.f32 [addr], a`
    RedAddF32 {
        addr: Reg,
        src: Operand,
    },
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

/// The file of a span with no source: `loc(unknown)` in Tile IR text (hand-written kernels).
/// Such a span is a real span to the verifiers (unlike `Span::default()`, an op nobody gave
/// one); the printers give it no location (`loc(unknown)`, no PTX `.loc`) and diagnostics no
/// label.
pub const NO_FILE: u32 = u32::MAX;

/// The name of the one `.extern .shared` array of a kernel with dynamic shared memory.
pub const DYNAMIC_SHARED: &str = "tessera_dyn_smem";

impl Op {
    /// Registers this op writes.
    pub fn defs(&self) -> Vec<Reg> {
        match self {
            Op::Special { dst, .. }
            | Op::LdParam { dst, .. }
            | Op::SharedAddr { dst, .. }
            | Op::Mov { dst, .. }
            | Op::Unary { dst, .. }
            | Op::Binary { dst, .. }
            | Op::Fma { dst, .. }
            | Op::MulWide { dst, .. }
            | Op::MadWide { dst, .. }
            | Op::Setp { dst, .. }
            | Op::Selp { dst, .. }
            | Op::Cvt { dst, .. }
            | Op::CvtTf32 { dst, .. }
            | Op::CvtPack { dst, .. }
            | Op::CvtUnpack { dst, .. }
            | Op::CvtaGlobal { dst, .. }
            | Op::Shfl { dst, .. }
            | Op::AtomAddF32 { dst, .. } => vec![*dst],
            Op::Ld { dsts, .. } => dsts.clone(),
            Op::Ldmatrix { dsts, .. } => dsts.to_vec(),
            Op::Mma { d, .. } => d.to_vec(),
            Op::St { .. }
            | Op::CpAsync { .. }
            | Op::CpAsyncCommit
            | Op::CpAsyncWait { .. }
            | Op::BarSync
            | Op::RedAddF32 { .. } => vec![],
        }
    }

    /// Registers this op reads (not counting a guard).
    pub fn uses(&self) -> Vec<Reg> {
        fn regs(ops: &[Operand]) -> Vec<Reg> {
            ops.iter()
                .filter_map(|o| match o {
                    Operand::Reg(r) => Some(*r),
                    Operand::Imm(_) | Operand::F32(_) | Operand::F64(_) => None,
                })
                .collect()
        }
        match self {
            Op::Special { .. }
            | Op::LdParam { .. }
            | Op::SharedAddr { .. }
            | Op::CpAsyncCommit
            | Op::CpAsyncWait { .. }
            | Op::BarSync => vec![],
            Op::Mov { src, .. } | Op::Unary { src, .. } => regs(&[*src]),
            Op::Binary { a, b, .. } | Op::MulWide { a, b, .. } | Op::Setp { a, b, .. } => {
                regs(&[*a, *b])
            }
            Op::Fma { a, b, c, .. } | Op::MadWide { a, b, c, .. } => regs(&[*a, *b, *c]),
            Op::Selp { a, b, pred, .. } => {
                let mut v = regs(&[*a, *b]);
                v.push(*pred);
                v
            }
            Op::Cvt { src, .. }
            | Op::CvtTf32 { src, .. }
            | Op::CvtUnpack { src, .. }
            | Op::CvtaGlobal { src, .. } => vec![*src],
            Op::CvtPack { hi, lo, .. } => vec![*hi, *lo],
            Op::Ld { addr, .. } | Op::Ldmatrix { addr, .. } => vec![*addr],
            Op::St { srcs, addr, .. } => {
                let mut v = regs(srcs);
                v.push(*addr);
                v
            }
            Op::CpAsync {
                dst, src, src_size, ..
            } => {
                let mut v = vec![*dst, *src];
                if let Some(s) = src_size {
                    v.extend(regs(&[*s]));
                }
                v
            }
            Op::Shfl {
                src, lane, clamp, ..
            } => regs(&[*src, *lane, *clamp]),
            Op::Mma { a, b, c, .. } => a.iter().chain(b.iter()).chain(c.iter()).copied().collect(),
            Op::AtomAddF32 { addr, src, .. } | Op::RedAddF32 { addr, src } => {
                let mut v = regs(&[*src]);
                v.push(*addr);
                v
            }
        }
    }
}

#[cfg(test)]
mod tests;
