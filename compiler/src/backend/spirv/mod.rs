//! Tile IR → SPIR-V (Vulkan 1.3 compute), op by op, with `rspirv`. Like [`super::ptx::from_tile`]
//! it reads a Tile IR [`Kernel`] and nothing else. Tile IR's structured control flow maps onto
//! SPIR-V's: `tile.for` is a loop construct (header with `OpPhi`s for the induction variable and
//! the carried values, `OpLoopMerge`, the body, a continue block adding the step), `tile.if` a
//! selection construct whose results are `OpPhi`s in the merge block.
//!
//! The interface, which [`Spirv::bindings`] describes for the runtime:
//! - every global view and the status word is a storage buffer of 32-bit words, binding `i` of
//!   set 0 in parameter order; elements are addressed in bytes, as PTX does, and 8-/16-bit
//!   elements are bits of a word (a store of one is an atomic and + or on its word, so lanes
//!   writing neighbouring halves do not race), so no 8/16-bit storage features are needed;
//! - the `u32` sizes are push constants, in parameter order;
//! - shared memory is one workgroup array of words holding every shared buffer at the byte
//!   address PTX would give it (buffers laid out in declaration order at their alignment);
//! - a warp is a 32-lane subgroup: kernels that shuffle or reduce across lanes need the pipeline
//!   created with a required subgroup size of 32 ([`Spirv::subgroup`]).
//!
//! Register types: predicates are `bool`; 8-, 16- and 32-bit integer and bit types (and the
//! 16-bit floats, kept as their bits) are `u32`, 64-bit ones `u64`; `f32` and `f64` are floats.
//! What is not translated (tensor-core fragments, fp8 packing, fp64 transcendental functions)
//! is reported by [`unsupported`], the one place that says what this back end cannot do.

use crate::backend::Error;
use crate::scalar::{Dim, SReg, Ty};
use crate::tile::check::Checked;
use crate::tile::ir::*;
use rspirv::dr::{Builder, InsertPoint, Instruction, Operand as SOp};
use rspirv::spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel,
    FunctionControl, MemoryModel, Op, StorageClass, Word,
};
use std::collections::HashMap;

mod cast;
mod control;
mod mem;
mod scalar;
mod warps;

type R<T> = Result<T, Error>;

/// Every module's entry point. The kernel's own name is not in the module: the same kernel made
/// for two graphs (a copy, an elementwise chain of one shape) is then the same module, word for
/// word, and a driver's shader cache (lavapipe's, NVIDIA's) compiles it once.
pub const ENTRY: &str = "main";

/// A kernel as a SPIR-V module.
#[derive(Clone, Debug, PartialEq)]
pub struct Spirv {
    /// The module's words (SPIR-V 1.6).
    pub words: Vec<u32>,
    /// Storage buffers, binding `i` = the kernel's `i`-th pointer parameter.
    pub bindings: u32,
    /// Push-constant words (the `u32` sizes).
    pub push_words: u32,
    /// Whether the kernel uses subgroup operations (a warp = a 32-lane subgroup).
    pub subgroup: bool,
    /// For a kernel with warp operations: the same kernel with them done through workgroup
    /// memory ([`Lanes::Shared`]), for a device whose subgroups are not 32 lanes.
    pub shared_warps: Option<Vec<u32>>,
    /// Bytes of workgroup memory the module declares, and the [`Spirv::shared_warps`] form's
    /// (a device refuses a kernel over its `maxComputeSharedMemorySize`).
    pub shared_bytes: u32,
    pub shared_warps_bytes: u32,
}

/// How a warp's 32 lanes exchange values.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// A warp is a 32-lane subgroup: shuffles are subgroup shuffles.
    Subgroup,
    /// Lanes are invocations `32w .. 32w + 31` of the workgroup; a shuffle writes each lane's
    /// value to a per-warp slot of workgroup memory, one barrier, and reads the source lane's
    /// (two banks of slots alternate, consecutive shuffles share one barrier: [`warps`]); a
    /// warp reduction publishes every lane's value and folds the 32 in lane order. For a
    /// device whose subgroups are narrower than 32 lanes (lavapipe: 16). Tile IR keeps warp
    /// operations in warp-uniform control flow, but the barriers are then reached by the warps
    /// that execute the operation only, which Vulkan leaves undefined: lavapipe (which runs a
    /// workgroup's invocations as coroutines switching at barriers) runs it correctly, and
    /// the golden suite checks it there; a GPU with 32-lane subgroups never runs this form.
    Shared,
}

/// Why a kernel is not translated: the one list of what SPIR-V does not cover yet.
pub fn unsupported<T>(what: impl std::fmt::Display) -> R<T> {
    Err(Error::NotLowered(format!(
        "the spirv target has no {what} yet"
    )))
}

fn bug<T>(k: &Kernel, what: impl std::fmt::Display) -> R<T> {
    Err(Error::NotLowered(format!(
        "Tile IR of kernel '{}' is not valid: {what}",
        k.name
    )))
}

fn build_err(e: rspirv::dr::Error) -> Error {
    Error::NotLowered(format!("SPIR-V builder: {e}"))
}

/// What a Tile value is in SPIR-V.
#[derive(Copy, Clone, Debug)]
enum Val {
    /// A scalar: its id and its Tile type.
    Id(Word, Ty),
    /// A global view: its binding, its first element (a `u32` id, or none: 0), element bytes.
    View {
        binding: u32,
        first: Option<Word>,
        esize: u32,
    },
    /// A shared buffer: its byte address in the window.
    Shared(u32),
}

/// The SPIR-V types in use.
#[derive(Copy, Clone)]
struct Types {
    void: Word,
    bool_: Word,
    u32_: Word,
    u64_: Word,
    /// `s32`/`s64` registers are signed integers (drivers read some ops' signedness from the
    /// type: lavapipe 22.3 computes a 64-bit `OpSRem` on an unsigned type as unsigned).
    i32_: Word,
    i64_: Word,
    f32_: Word,
    f64_: Word,
    v2u32: Word,
    v3u32: Word,
}

struct Cx<'k> {
    k: &'k Kernel,
    b: Builder,
    t: Types,
    glsl: Word,
    vals: Vec<Option<Val>>,
    /// The current block's label.
    cur: Word,
    consts: HashMap<(Word, u64), Word>,
    /// Storage-buffer variables by binding.
    bufs: Vec<Word>,
    push: Option<Word>,
    shared: Option<Word>,
    inputs: HashMap<BuiltIn, Word>,
    interface: Vec<Word>,
    f64_used: bool,
    i64_used: bool,
    subgroup: bool,
    atomic_float: bool,
    lanes: Lanes,
    uses_warps: bool,
    /// [`Lanes::Shared`]: the lane's `u32` function variable naming the slot bank in use.
    bank: Option<Word>,
    /// [`Lanes::Shared`]: words of slots per lane and bank ([`warps::slot_words`]).
    slot_words: u32,
    /// [`Lanes::Shared`]: each batched shuffle's bank offset and slot word.
    batch: HashMap<OpId, (Word, u32)>,
    /// The op being translated.
    current: OpId,
}

/// Translates a Tile IR kernel to a SPIR-V compute module (and, when it has warp operations,
/// its [`Lanes::Shared`] form too).
pub fn translate(k: Checked<'_>) -> R<Spirv> {
    let expanded = crate::tile::math::expand(&k, crate::tile::math::MathTarget::Spirv);
    let mut s = translate_expanded(&expanded, Lanes::Subgroup)?;
    if s.subgroup {
        let w = translate_expanded(&expanded, Lanes::Shared)?;
        s.shared_warps = Some(w.words);
        s.shared_warps_bytes = w.shared_bytes;
    }
    Ok(s)
}

/// Translates a Tile IR kernel with its warps' lanes exchanging values as `lanes` says.
/// Translates a kernel whose math functions are expanded already, its warps' lanes exchanging
/// values as `lanes` says.
fn translate_expanded(k: &Kernel, lanes: Lanes) -> R<Spirv> {
    let mut b = Builder::new();
    b.set_version(1, 6);
    b.capability(Capability::Shader);
    b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    let glsl = b.ext_inst_import("GLSL.std.450");
    let u32_ = b.type_int(32, 0);
    let t = Types {
        void: b.type_void(),
        bool_: b.type_bool(),
        u32_,
        u64_: b.type_int(64, 0),
        i32_: b.type_int(32, 1),
        i64_: b.type_int(64, 1),
        f32_: b.type_float(32, None),
        f64_: b.type_float(64, None),
        v2u32: b.type_vector(u32_, 2),
        v3u32: b.type_vector(u32_, 3),
    };
    let mut cx = Cx {
        k,
        b,
        t,
        glsl,
        vals: vec![None; k.values.len()],
        cur: 0,
        consts: HashMap::new(),
        bufs: vec![],
        push: None,
        shared: None,
        inputs: HashMap::new(),
        interface: vec![],
        f64_used: false,
        i64_used: false,
        subgroup: false,
        atomic_float: false,
        lanes,
        uses_warps: uses_warps(k),
        bank: None,
        slot_words: warps::slot_words(k),
        batch: HashMap::new(),
        current: OpId(0),
    };
    cx.globals()?;
    let fn_ty = cx.b.type_function(cx.t.void, vec![]);
    let main =
        cx.b.begin_function(cx.t.void, None, FunctionControl::NONE, fn_ty)
            .map_err(build_err)?;
    cx.cur = cx.b.begin_block(None).map_err(build_err)?;
    if lanes == Lanes::Shared && cx.uses_warps {
        let ptr = cx.b.type_pointer(None, StorageClass::Function, cx.t.u32_);
        let zero = cx.const_u32(0);
        cx.bank = Some(cx.b.variable(ptr, None, StorageClass::Function, Some(zero)));
    }
    cx.bind_params()?;
    cx.region(&k.body)?;
    cx.b.ret().map_err(build_err)?;
    cx.b.end_function().map_err(build_err)?;
    if cx.f64_used {
        cx.b.capability(Capability::Float64);
    }
    if cx.i64_used {
        cx.b.capability(Capability::Int64);
    }
    if cx.subgroup && lanes == Lanes::Subgroup {
        cx.b.capability(Capability::GroupNonUniform);
        cx.b.capability(Capability::GroupNonUniformShuffle);
    }
    if cx.atomic_float {
        cx.b.capability(Capability::AtomicFloat32AddEXT);
        cx.b.extension("SPV_EXT_shader_atomic_float_add");
    }
    let interface = cx.interface.clone();
    cx.b.entry_point(ExecutionModel::GLCompute, main, ENTRY, interface);
    cx.b.execution_mode(main, ExecutionMode::LocalSize, k.block);
    // IEEE behaviour as on the cpu and in PTX: subnormals kept (not flushed to zero), and
    // signed zeros, infinities and NaNs preserved (a driver may otherwise assume there are
    // none). A device without these float controls runs the module without them (the
    // runtime drops the modes it does not support).
    cx.b.capability(Capability::DenormPreserve);
    cx.b.capability(Capability::SignedZeroInfNanPreserve);
    let widths: &[u32] = if cx.f64_used { &[32, 64] } else { &[32] };
    for &w in widths {
        cx.b.execution_mode(main, ExecutionMode::DenormPreserve, [w]);
        cx.b.execution_mode(main, ExecutionMode::SignedZeroInfNanPreserve, [w]);
    }
    let shared_bytes = (cx.slots_base() + cx.slot_bytes()).div_ceil(4) * 4;
    let bindings = cx.bufs.len() as u32;
    let push_words = k.scalars().len() as u32;
    let subgroup = cx.subgroup && lanes == Lanes::Subgroup;
    let mut module = cx.b.module();
    // the 64-bit types are declared up front; a module that does not use them drops them
    // (their capabilities are optional device features)
    let unused: Vec<Word> = [
        (cx.t.u64_, cx.i64_used),
        (cx.t.i64_, cx.i64_used),
        (cx.t.f64_, cx.f64_used),
    ]
    .into_iter()
    .filter(|&(_, used)| !used)
    .map(|(t, _)| t)
    .collect();
    module
        .types_global_values
        .retain(|i| !i.result_id.is_some_and(|r| unused.contains(&r)));
    use rspirv::binary::Assemble;
    Ok(Spirv {
        words: module.assemble(),
        bindings,
        push_words,
        subgroup,
        shared_warps: None,
        shared_bytes,
        shared_warps_bytes: 0,
    })
}

/// Whether a kernel has warp-level operations (shuffles, warp and block reductions, lane ids).
fn uses_warps(k: &Kernel) -> bool {
    k.ops.iter().any(|op| {
        matches!(
            op.kind,
            OpKind::Shfl { .. }
                | OpKind::ReduceWarp { .. }
                | OpKind::ReduceBlock { .. }
                | OpKind::Special(SReg::LaneId | SReg::WarpId)
        )
    })
}

/// The module as text (`--dump spirv`), as `spirv-dis` would print it.
pub fn disassemble(words: &[u32]) -> String {
    use rspirv::binary::Disassemble;
    let mut loader = rspirv::dr::Loader::new();
    match rspirv::binary::parse_words(words, &mut loader) {
        Ok(()) => loader.module().disassemble(),
        Err(e) => format!("; not a SPIR-V module: {e}"),
    }
}

impl Cx<'_> {
    /// Storage buffers, push constants and the shared window.
    fn globals(&mut self) -> R<()> {
        let t = self.t;
        let arr = self.b.type_runtime_array(t.u32_);
        self.b
            .decorate(arr, Decoration::ArrayStride, [SOp::LiteralBit32(4)]);
        let st = self.b.type_struct([arr]);
        self.b.decorate(st, Decoration::Block, []);
        self.b
            .member_decorate(st, 0, Decoration::Offset, [SOp::LiteralBit32(0)]);
        let ptr = self.b.type_pointer(None, StorageClass::StorageBuffer, st);
        let mut binding = 0u32;
        for p in &self.k.params {
            let is_buf = matches!(p.role, ParamRole::Status)
                || matches!(self.k.ty(p.value), Some(Type::Global(_)));
            if matches!(p.role, ParamRole::Size(_)) || !is_buf {
                continue;
            }
            let v = self
                .b
                .variable(ptr, None, StorageClass::StorageBuffer, None);
            self.b
                .decorate(v, Decoration::DescriptorSet, [SOp::LiteralBit32(0)]);
            self.b
                .decorate(v, Decoration::Binding, [SOp::LiteralBit32(binding)]);
            self.b.name(v, p.name.clone());
            self.bufs.push(v);
            self.interface.push(v);
            binding += 1;
        }
        let n = self.k.scalars().len() as u32;
        if n > 0 {
            let len = self.const_u32(n);
            let arr = self.b.type_array(t.u32_, len);
            self.b
                .decorate(arr, Decoration::ArrayStride, [SOp::LiteralBit32(4)]);
            let st = self.b.type_struct([arr]);
            self.b.decorate(st, Decoration::Block, []);
            self.b
                .member_decorate(st, 0, Decoration::Offset, [SOp::LiteralBit32(0)]);
            let ptr = self.b.type_pointer(None, StorageClass::PushConstant, st);
            let v = self.b.variable(ptr, None, StorageClass::PushConstant, None);
            self.push = Some(v);
            self.interface.push(v);
        }
        let words = (self.slots_base() + self.slot_bytes()).div_ceil(4);
        if words > 0 {
            let len = self.const_u32(words);
            let arr = self.b.type_array(t.u32_, len);
            let ptr = self.b.type_pointer(None, StorageClass::Workgroup, arr);
            let v = self.b.variable(ptr, None, StorageClass::Workgroup, None);
            self.b.name(v, "shared");
            self.shared = Some(v);
            self.interface.push(v);
        }
        Ok(())
    }

    /// The workgroup memory of the warps' lane slots ([`Lanes::Shared`]), after the buffers.
    fn slot_bytes(&self) -> u32 {
        if self.lanes == Lanes::Shared && self.uses_warps {
            self.bank_bytes().saturating_mul(2)
        } else {
            0
        }
    }

    /// One bank of lane slots: every warp's.
    pub(super) fn bank_bytes(&self) -> u32 {
        (self.k.threads().div_ceil(32) as u32).saturating_mul(32 * 4 * self.slot_words)
    }

    /// The byte address of the lane slots: the window's end, 8-aligned.
    pub(super) fn slots_base(&self) -> u32 {
        self.shared_layout().1.div_ceil(8) * 8
    }

    /// Each shared buffer's byte address in the window, and the window's size.
    fn shared_layout(&self) -> (Vec<u32>, u32) {
        let mut at = 0u64;
        let mut out = vec![];
        for s in &self.k.shared {
            let Some(buf) = self.k.shared_buf(s.value) else {
                out.push(0);
                continue;
            };
            let align = u64::from(buf.align.max(4));
            at = at.div_ceil(align) * align;
            out.push(u32::try_from(at).unwrap_or(u32::MAX));
            at += buf.bytes();
        }
        (out, u32::try_from(at).unwrap_or(u32::MAX))
    }

    fn bind_params(&mut self) -> R<()> {
        let mut binding = 0u32;
        let mut push = 0u32;
        for p in &self.k.params {
            let val = match (&p.role, self.k.ty(p.value)) {
                (ParamRole::Size(_), _) => {
                    let pc = self.push.unwrap_or(0);
                    let ptr = self
                        .b
                        .type_pointer(None, StorageClass::PushConstant, self.t.u32_);
                    let (z, i) = (self.const_u32(0), self.const_u32(push));
                    let at = self.ins(Op::AccessChain, ptr, &[pc, z, i]);
                    push += 1;
                    Val::Id(self.ins(Op::Load, self.t.u32_, &[at]), Ty::U32)
                }
                (ParamRole::Status, _) => {
                    binding += 1;
                    Val::View {
                        binding: binding - 1,
                        first: None,
                        esize: 4,
                    }
                }
                (_, Some(Type::TensorMap(_))) => {
                    return unsupported("tensor maps (TMA bulk tensor copies, sm_90+)")
                }
                (_, Some(Type::Global(d))) => {
                    binding += 1;
                    Val::View {
                        binding: binding - 1,
                        first: None,
                        esize: d.size_bytes() as u32,
                    }
                }
                (_, other) => {
                    return bug(self.k, format!("parameter {} of type {other:?}", p.name))
                }
            };
            self.set(p.value, val);
        }
        let (at, _) = self.shared_layout();
        for (s, a) in self.k.shared.iter().zip(at) {
            self.set(s.value, Val::Shared(a));
        }
        Ok(())
    }

    // ---- values ----

    fn set(&mut self, v: Value, x: Val) {
        if let Some(s) = self.vals.get_mut(v.0 as usize) {
            *s = Some(x);
        }
    }

    fn val(&self, v: Value) -> R<Val> {
        match self.vals.get(v.0 as usize) {
            Some(Some(x)) => Ok(*x),
            _ => bug(self.k, format!("%{} is used before it is defined", v.0)),
        }
    }

    /// The SPIR-V type of a Tile register type.
    fn sty(&mut self, ty: Ty) -> Word {
        match ty {
            Ty::Pred => self.t.bool_,
            Ty::F32 => self.t.f32_,
            Ty::F64 => {
                self.f64_used = true;
                self.t.f64_
            }
            Ty::B64 | Ty::U64 => {
                self.i64_used = true;
                self.t.u64_
            }
            Ty::S64 => {
                self.i64_used = true;
                self.t.i64_
            }
            Ty::S32 => self.t.i32_,
            _ => self.t.u32_,
        }
    }

    fn constant(&mut self, ty: Word, bits: u64) -> Word {
        if let Some(&c) = self.consts.get(&(ty, bits)) {
            return c;
        }
        let c = if ty == self.t.bool_ {
            if bits != 0 {
                self.b.constant_true(ty)
            } else {
                self.b.constant_false(ty)
            }
        } else if self.is_wide(ty) {
            self.b.constant_bit64(ty, bits)
        } else {
            self.b.constant_bit32(ty, bits as u32)
        };
        self.consts.insert((ty, bits), c);
        c
    }

    fn const_u32(&mut self, v: u32) -> Word {
        self.constant(self.t.u32_, u64::from(v))
    }

    fn const_f32(&mut self, v: f32) -> Word {
        self.constant(self.t.f32_, u64::from(v.to_bits()))
    }

    /// The float constant `v` of type `ty` (f32 or f64).
    fn const_float(&mut self, ty: Ty, v: f64) -> Word {
        self.imm(Operand::F64(v.to_bits()), ty)
    }

    /// A constant of Tile type `ty` from an immediate.
    fn imm(&mut self, o: Operand, ty: Ty) -> Word {
        let st = self.sty(ty);
        let bits = match (o, ty) {
            (Operand::Imm(i), Ty::F32) => u64::from((i as f32).to_bits()),
            (Operand::Imm(i), Ty::F64) => (i as f64).to_bits(),
            (Operand::Imm(i), Ty::Pred) => u64::from(i != 0),
            (Operand::Imm(i), _) if ty.bits() <= 32 => u64::from(i as u32),
            (Operand::Imm(i), _) => i as u64,
            (Operand::F32(b), Ty::F64) => f64::from(f32::from_bits(b)).to_bits(),
            (Operand::F32(b), _) => u64::from(b),
            (Operand::F64(b), Ty::F32) => u64::from((f64::from_bits(b) as f32).to_bits()),
            (Operand::F64(b), _) if ty.bits() <= 32 => b & 0xffff_ffff,
            (Operand::F64(b), _) => b,
            (Operand::Value(_), _) => 0,
        };
        self.constant(st, bits)
    }

    /// A scalar operand as a value of Tile type `ty` (bit-cast when the value's own type
    /// differs in SPIR-V but not in size).
    fn opnd(&mut self, o: Operand, ty: Ty) -> R<Word> {
        let Operand::Value(v) = o else {
            return Ok(self.imm(o, ty));
        };
        match self.val(v)? {
            Val::Id(id, vt) => self.convert_bits(id, vt, ty),
            _ => bug(self.k, format!("%{} is not a scalar", v.0)),
        }
    }

    /// The same bits as type `to` (sizes: both ≤ 32 bits, or both 64).
    fn convert_bits(&mut self, id: Word, from: Ty, to: Ty) -> R<Word> {
        let (fs, ts) = (self.sty(from), self.sty(to));
        if fs == ts {
            return Ok(id);
        }
        if fs == self.t.bool_ || ts == self.t.bool_ {
            return bug(self.k, format!("a {from:?} value used as {to:?}"));
        }
        let fw = if self.is_wide(fs) { 64 } else { 32 };
        let tw = if self.is_wide(ts) { 64 } else { 32 };
        if fw != tw {
            // a narrow integer read as a wide one, or the low word of a wide one
            return Ok(if fw == 32 {
                let w = self.convert_bits(id, from, Ty::U32)?;
                let u = self.ins(Op::UConvert, self.t.u64_, &[w]);
                self.convert_bits(u, Ty::U64, to)?
            } else {
                let u = self.convert_bits(id, from, Ty::U64)?;
                let w = self.ins(Op::UConvert, self.t.u32_, &[u]);
                self.convert_bits(w, Ty::U32, to)?
            });
        }
        Ok(self.ins(Op::Bitcast, ts, &[id]))
    }

    /// Whether a SPIR-V type is one of the 64-bit ones.
    fn is_wide(&self, t: Word) -> bool {
        t == self.t.u64_ || t == self.t.i64_ || t == self.t.f64_
    }

    /// The Tile type of a value.
    fn ty_of(&self, v: Value) -> Ty {
        match self.k.ty(v) {
            Some(Type::Scalar(t)) => *t,
            _ => Ty::B32,
        }
    }

    fn is_pred(&self, o: Operand) -> bool {
        o.value().is_some_and(|v| self.ty_of(v) == Ty::Pred)
    }

    // ---- instructions ----

    /// Appends `op` with id operands to the current block; its result id.
    fn ins(&mut self, op: Op, ty: Word, args: &[Word]) -> Word {
        let id = self.b.id();
        let inst = Instruction::new(
            op,
            Some(ty),
            Some(id),
            args.iter().map(|&a| SOp::IdRef(a)).collect(),
        );
        // a block is always selected while the function body is built
        let _ = self.b.insert_into_block(InsertPoint::End, inst);
        // Each float operation is rounded on its own, as PTX's `.rn` forms are: a driver may
        // otherwise fuse a multiply and an add or reorder them (NVIDIA's does), and the exact
        // argument reductions and the cpu's bits depend on the order written.
        if matches!(
            op,
            Op::FAdd | Op::FSub | Op::FMul | Op::FDiv | Op::FRem | Op::FMod
        ) {
            self.b.decorate(id, Decoration::NoContraction, []);
        }
        id
    }

    /// Appends an instruction with no result.
    fn ins_void(&mut self, op: Op, args: Vec<SOp>) {
        let inst = Instruction::new(op, None, None, args);
        let _ = self.b.insert_into_block(InsertPoint::End, inst);
    }

    /// A GLSL.std.450 instruction.
    fn glsl(&mut self, f: rspirv::spirv::GlslStd450Op, ty: Word, args: &[Word]) -> Word {
        let id = self.b.id();
        let mut ops = vec![SOp::IdRef(self.glsl), SOp::LiteralExtInstInteger(f as u32)];
        ops.extend(args.iter().map(|&a| SOp::IdRef(a)));
        let inst = Instruction::new(Op::ExtInst, Some(ty), Some(id), ops);
        let _ = self.b.insert_into_block(InsertPoint::End, inst);
        id
    }

    /// A built-in input (`v3u32` or `u32`), loaded.
    fn builtin(&mut self, which: BuiltIn, vector: bool) -> Word {
        let ty = if vector { self.t.v3u32 } else { self.t.u32_ };
        let var = match self.inputs.get(&which) {
            Some(&v) => v,
            None => {
                let ptr = self.b.type_pointer(None, StorageClass::Input, ty);
                // a global variable, though a block is being built
                let v = self.b.id();
                self.b
                    .module_mut()
                    .types_global_values
                    .push(Instruction::new(
                        Op::Variable,
                        Some(ptr),
                        Some(v),
                        vec![SOp::StorageClass(StorageClass::Input)],
                    ));
                self.b
                    .decorate(v, Decoration::BuiltIn, [SOp::BuiltIn(which)]);
                self.inputs.insert(which, v);
                self.interface.push(v);
                v
            }
        };
        self.ins(Op::Load, ty, &[var])
    }

    fn special(&mut self, s: SReg) -> Word {
        let comp = |d: Dim| match d {
            Dim::X => 0u32,
            Dim::Y => 1,
            Dim::Z => 2,
        };
        let (which, d) = match s {
            SReg::Tid(d) => (BuiltIn::LocalInvocationId, d),
            SReg::Ctaid(d) => (BuiltIn::WorkgroupId, d),
            SReg::Nctaid(d) => (BuiltIn::NumWorkgroups, d),
            SReg::Ntid(d) => {
                let n = self.k.block[comp(d) as usize];
                return self.const_u32(n);
            }
            SReg::LaneId if self.lanes == Lanes::Shared => {
                let i = self.builtin(BuiltIn::LocalInvocationIndex, false);
                let m = self.const_u32(31);
                return self.ins(Op::BitwiseAnd, self.t.u32_, &[i, m]);
            }
            SReg::WarpId if self.lanes == Lanes::Shared => {
                let i = self.builtin(BuiltIn::LocalInvocationIndex, false);
                let five = self.const_u32(5);
                return self.ins(Op::ShiftRightLogical, self.t.u32_, &[i, five]);
            }
            SReg::LaneId => {
                self.subgroup = true;
                return self.builtin(BuiltIn::SubgroupLocalInvocationId, false);
            }
            SReg::WarpId => {
                self.subgroup = true;
                return self.builtin(BuiltIn::SubgroupId, false);
            }
        };
        let v = self.builtin(which, true);
        let id = self.b.id();
        let inst = Instruction::new(
            Op::CompositeExtract,
            Some(self.t.u32_),
            Some(id),
            vec![SOp::IdRef(v), SOp::LiteralBit32(comp(d))],
        );
        let _ = self.b.insert_into_block(InsertPoint::End, inst);
        id
    }

    // ---- structure ----

    fn region(&mut self, r: &Region) -> R<()> {
        for (i, &id) in r.ops.iter().enumerate() {
            let Some(op) = self.k.op(id) else {
                return bug(self.k, format!("op {} out of range", id.0));
            };
            if op.kind == OpKind::Yield {
                continue;
            }
            self.current = id;
            if matches!(op.kind, OpKind::Shfl { .. }) && !self.batch.contains_key(&id) {
                self.batch_at(&r.ops[i..])?;
            }
            match &op.kind {
                OpKind::For { .. } => self.for_loop(op)?,
                OpKind::If => self.if_op(op)?,
                _ => self.op(op)?,
            }
        }
        Ok(())
    }

    /// The operands of the `tile.yield` that ends a region.
    fn yielded(&self, r: &Region) -> R<Vec<Operand>> {
        match r.ops.last().and_then(|&id| self.k.op(id)) {
            Some(op) if op.kind == OpKind::Yield => Ok(op.operands.clone()),
            _ => bug(self.k, "a region does not end in tile.yield"),
        }
    }
}
