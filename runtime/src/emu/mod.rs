//! The Target IR emulator: runs a [`Kernel`] on the CPU with the GPU's semantics, so a bug in
//! what the PTX printer would emit shows up on a machine without a GPU.
//!
//! # Model
//! - **Memory.** Global memory is the caller's byte buffers; a pointer argument
//!   [`Arg::Ptr`]`{ buffer, offset }` reaches the kernel as [`ptr`]`(buffer, offset)`
//!   (`(buffer + 1) << 40 | offset`), so every global access is checked against its own buffer.
//!   Shared memory is one zeroed byte array per block; `.shared` arrays are laid out in
//!   declaration order ([`Kernel::shared_layout`]) from window address 0.
//! - **Execution.** Blocks run one after another (deterministic: same inputs, same bits). A
//!   block's threads are warps of 32 lanes in lockstep. Each lane has its own pc; a warp steps
//!   the lanes whose pc is the lowest in layout order (block index, then instruction), so lanes
//!   that diverge on a branch reconverge where the paths join, as long as join blocks are laid
//!   out after the blocks that reach them (our lowering's layout; the verifier documents it).
//!   Results never depend on that order; only warp-collective instructions do, and those check
//!   that the lanes they need are converged.
//! - **Barriers.** A warp runs until all its lanes wait at `bar.sync` or have exited; when every
//!   warp of the block is there, the barrier opens (see divergent barriers below).
//! - **`cp.async`.** A copy is issued at `cp.async` (bounds checked there), kept pending in the
//!   thread's open group, grouped by `commit_group`, and performed (global read, shared write,
//!   zero fill past `src_size`) at the `wait_group` that retires its group. Any access to a
//!   shared byte with a pending copy is an error (a read before the wait is a race).
//! - **Races.** Between two barriers, two different threads touching the same shared byte, one
//!   of them writing, is an error naming both instructions. In global memory, a store by one
//!   block of a value different from what an earlier block of the same launch stored at that
//!   byte is an error (the result would depend on the order blocks run in); stores of the same
//!   value, atomics and reads are not checked. A launch of one block keeps no global shadow.
//! - **Divergent barriers.** When a barrier opens, every thread of the block that has not
//!   finished must wait at the same `bar.sync`, and none may have finished: a barrier that only
//!   some threads reach (one inside a branch, or in a loop whose trip count differs between
//!   threads) is an error at that barrier.
//! - **Warp collectives.** `shfl.sync`: every lane named in the mask must execute it together
//!   (and only those), the PTX ISA's clamp/segment rules, reading an inactive lane is an error.
//!   `ldmatrix`/`mma.sync.aligned`: all 32 lanes converged, fragment layouts of the PTX ISA
//!   ("Matrix Fragments for mma.m16n8k16 / m16n8k8", "ldmatrix").
//!
//! # Numerics
//! - f32/f64 `add sub mul div.rn sqrt.rn rcp.rn` are IEEE round-to-nearest (Rust's operators);
//!   `fma` is fused (`f32::mul_add`); subnormals are kept (no `.ftz` in our PTX).
//! - `ex2.approx`, `lg2.approx`, `tanh.approx`, `rsqrt.approx`, `rcp/sqrt/div.approx` are
//!   computed exactly (in f64, rounded once to f32). The hardware is within the documented
//!   error of that (ex2: 2^-22 relative; tanh: 2^-11 relative), so tests compare with a
//!   tolerance at least as wide.
//! - `mma`: operands are taken at their input type (bf16/f16 exactly; tf32 as the f32 bits
//!   with the low 13 mantissa bits ignored, as the tensor cores do); each product is exact in
//!   f32; the sum is `c` plus the products for k = 0, 1, …, K−1, added one at a time in f32
//!   (round to nearest). The hardware adds in a different order with wider intermediates, so
//!   results may differ from it in the last bits (compare with a K-proportional tolerance).
//! - `cvt` follows the rounding modifier exactly (`.rn .rz .rm .rp`, `.rni …`, `.rna` for tf32,
//!   `.satfinite` for fp8); float-to-int saturates and maps NaN to 0, like the hardware.
//! - Integer division or remainder by zero is an error (PTX leaves the value unspecified).
//!
//! # Counters
//! A run also counts shared-memory wavefronts and bank conflicts, global requests and their
//! 32-byte sectors, and warp instructions by class ([`Stats::counters`]; definitions in
//! [`counters`]). They depend only on the addresses and the instruction stream, not on the
//! order warps run in.

pub mod counters;
mod exec;
mod numeric;

pub use counters::{Counters, InstClass, InstMix};

use std::fmt;
use tessera_compiler::backend::ptx::{Kernel, Space, TargetError};
use tessera_lang::{Code, Diagnostic, SourceMap, Span};

use crate::RuntimeError;

/// Grid and block sizes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl Launch {
    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> Launch {
        Launch {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
        }
    }
}

/// A kernel argument, one per parameter in order.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Arg {
    /// A global pointer: byte `offset` into buffer number `buffer`.
    Ptr {
        buffer: usize,
        offset: u64,
    },
    U32(u32),
    U64(u64),
    F32(f32),
    /// A tensor map (for a `ParamTy::TensorMap` parameter); its address is an emulated
    /// pointer ([`ptr`]).
    TensorMap(crate::tensor_map::TensorMap),
}

/// The pointer value a kernel sees for byte `offset` of buffer `buffer`.
pub fn ptr(buffer: usize, offset: u64) -> u64 {
    ((buffer as u64 + 1) << 40) | (offset & ((1 << 40) - 1))
}

/// Limits of one run.
#[derive(Copy, Clone, Debug)]
pub struct Options {
    /// Warp instructions before giving up (a kernel that never ends).
    pub max_steps: u64,
}

/// The step limit of [`Options::default`]; see [`set_default_max_steps`].
static DEFAULT_MAX_STEPS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(2_000_000_000);

/// Sets the step limit of every later run with default options, process-wide (a harness that
/// runs many generated scripts bounds each kernel's emulation this way).
pub fn set_default_max_steps(steps: u64) {
    DEFAULT_MAX_STEPS.store(steps.max(1), std::sync::atomic::Ordering::Relaxed);
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_steps: DEFAULT_MAX_STEPS.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// What a run did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions issued per warp (a warp step).
    pub warp_instructions: u64,
    /// Instructions executed per thread (lanes active and not masked by a guard).
    pub thread_instructions: u64,
    /// Barriers opened.
    pub barriers: u64,
    /// Bank conflicts, global sectors and the instruction mix ([`counters`]).
    pub counters: Counters,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq)]
pub enum EmuErrorKind {
    /// The kernel did not verify.
    InvalidKernel(TargetError),
    /// Bad grid/block sizes.
    BadLaunch {
        reason: &'static str,
    },
    /// Wrong number of arguments.
    ArgCount {
        expected: usize,
        got: usize,
    },
    /// Argument `index` does not fit its parameter.
    ArgType {
        index: usize,
        param: String,
    },
    /// A pointer argument names a buffer that does not exist.
    NoBuffer {
        index: usize,
        buffer: usize,
    },
    /// An access outside its buffer (global) or outside the block's shared memory.
    OutOfBounds {
        space: Space,
        addr: u64,
        bytes: u32,
        limit: u64,
    },
    /// An access not aligned to its size.
    Misaligned {
        space: Space,
        addr: u64,
        align: u32,
    },
    /// Two threads touch a shared byte between barriers, one writing.
    SharedRace {
        addr: u32,
        write: bool,
        other_thread: u32,
        other_write: bool,
        other_inst: String,
    },
    /// A shared byte is accessed while a `cp.async` to it is still pending (before its wait).
    AsyncPending {
        addr: u32,
        issuer: u32,
    },
    /// A warp-collective instruction reached with the wrong set of lanes.
    Divergent {
        active: u32,
        required: u32,
    },
    /// `shfl.sync` reads a lane that did not execute it.
    ShflInactiveLane {
        lane: u32,
        source: u32,
    },
    DivideByZero,
    /// A `cp.async` src-size larger than the copy.
    BadSrcSize {
        src_size: u64,
        bytes: u32,
    },
    /// The run took more than [`Options::max_steps`] warp instructions.
    StepLimit {
        steps: u64,
    },
    /// A barrier that not every thread of the block reaches: `waiting` threads wait at this
    /// `bar.sync` while thread `other_thread` waits at another one (`other_inst`) or has
    /// finished the kernel (`other_inst` is `None`).
    DivergentBarrier {
        waiting: u32,
        threads: u32,
        other_thread: u32,
        other_inst: Option<String>,
    },
    /// Two blocks of one launch store different values to the same global bytes: this store
    /// (at `addr`), and an earlier one by block `other_block`.
    GlobalRace {
        addr: u64,
        other_block: [u32; 3],
    },
    /// An mbarrier op on a shared address no `mbarrier.init` set up in this block.
    MbarrierUninit {
        addr: u32,
    },
    /// `mbarrier.init` with a count outside 1 ..= 2^20 - 1.
    MbarrierCount {
        count: u64,
    },
    /// An arrival on a phase that expects no more (its arrivals are in, its transactions not).
    MbarrierOverArrive {
        addr: u32,
    },
    /// A thread waits for a phase that can never complete: every thread of the block waits
    /// (at an mbarrier or a `bar.sync`) or has finished.
    MbarrierDeadlock {
        addr: u32,
        parity: u32,
        pending: u32,
        tx: i64,
    },
    /// A wgmma shared-memory descriptor the emulator cannot decode, or descriptors that differ
    /// across the warp.
    WgmmaDescriptor {
        reason: &'static str,
    },
    /// A `setmaxnreg` the hardware would not run as written: a count against the warp's
    /// current one, an increase the block's pool can never grant, a warpgroup whose warps did
    /// not all execute it.
    SetMaxNReg {
        reason: String,
    },
    /// wgmma executed by a warp whose warpgroup (4 warps) the block does not have whole.
    WgmmaWarpgroup {
        threads: u32,
    },
    /// An instruction other than a wgmma touches an accumulator register of a wgmma still in
    /// flight (before the `wgmma.wait_group` that retires it).
    WgmmaPendingRegister {
        reg: String,
        wgmma: String,
    },
    /// A TMA copy whose tensor map or coordinates the hardware would refuse.
    TmaMap {
        reason: String,
    },
    /// A shared byte a TMA load wrote, accessed by a thread that has not seen the completion
    /// of the mbarrier phase the load completes (no wait on that phase, directly or before a
    /// barrier).
    TmaUnwaited {
        addr: u32,
        mbar: u32,
        parity: u32,
        copy: String,
    },
    /// A TMA store (the async proxy) reads a shared byte whose generic-proxy write by thread
    /// `writer` no `fence.proxy.async` of that thread has ordered.
    TmaUnfenced {
        addr: u32,
        writer: u32,
    },
    /// A shared byte written while a TMA store that reads it is in flight (before the
    /// `cp.async.bulk.wait_group.read` of its group).
    BulkPendingShared {
        addr: u32,
    },
    /// A shared byte written while an in-flight wgmma reads it.
    WgmmaPendingShared {
        addr: u32,
    },
    /// wgmma (the async proxy) reads a shared byte whose generic-proxy write by thread
    /// `writer` no `fence.proxy.async` of that thread has ordered.
    WgmmaUnfenced {
        addr: u32,
        writer: u32,
    },
}

/// An emulator error: what, and where (the instruction as printed PTX, its span, the block and
/// thread). Code E0500.
#[derive(Clone, Debug, PartialEq)]
pub struct EmuError {
    pub kind: EmuErrorKind,
    /// The instruction, as the PTX printer prints it.
    pub inst: Option<String>,
    pub span: Option<Span>,
    pub block: Option<[u32; 3]>,
    pub thread: Option<[u32; 3]>,
}

impl EmuError {
    pub(crate) fn new(kind: EmuErrorKind) -> EmuError {
        EmuError {
            kind,
            inst: None,
            span: None,
            block: None,
            thread: None,
        }
    }

    pub fn code(&self) -> Code {
        match self.kind {
            EmuErrorKind::ArgCount { .. }
            | EmuErrorKind::ArgType { .. }
            | EmuErrorKind::NoBuffer { .. }
            | EmuErrorKind::BadLaunch { .. } => Code::E0101,
            EmuErrorKind::InvalidKernel(_)
            | EmuErrorKind::OutOfBounds { .. }
            | EmuErrorKind::Misaligned { .. }
            | EmuErrorKind::SharedRace { .. }
            | EmuErrorKind::AsyncPending { .. }
            | EmuErrorKind::Divergent { .. }
            | EmuErrorKind::ShflInactiveLane { .. }
            | EmuErrorKind::DivideByZero
            | EmuErrorKind::BadSrcSize { .. }
            | EmuErrorKind::StepLimit { .. }
            | EmuErrorKind::DivergentBarrier { .. }
            | EmuErrorKind::GlobalRace { .. }
            | EmuErrorKind::MbarrierUninit { .. }
            | EmuErrorKind::MbarrierCount { .. }
            | EmuErrorKind::MbarrierOverArrive { .. }
            | EmuErrorKind::MbarrierDeadlock { .. }
            | EmuErrorKind::WgmmaDescriptor { .. }
            | EmuErrorKind::WgmmaWarpgroup { .. }
            | EmuErrorKind::SetMaxNReg { .. }
            | EmuErrorKind::WgmmaPendingRegister { .. }
            | EmuErrorKind::WgmmaPendingShared { .. }
            | EmuErrorKind::WgmmaUnfenced { .. }
            | EmuErrorKind::TmaMap { .. }
            | EmuErrorKind::TmaUnwaited { .. }
            | EmuErrorKind::TmaUnfenced { .. }
            | EmuErrorKind::BulkPendingShared { .. } => Code::E0500,
        }
    }

    /// The runtime's error type; `sources` (when given) turns the span into `file:line:col`.
    pub fn to_runtime_error(&self, sources: Option<&SourceMap>) -> RuntimeError {
        let mut msg = self.to_string();
        if let (Some(s), Some(span)) = (sources, self.span) {
            msg.push_str(&format!(" at {}", s.describe(span)));
        }
        RuntimeError::new(self.code(), msg)
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(self.code(), self.to_string());
        if let Some(s) = self.span {
            d = d.at(s);
        }
        d
    }
}

impl From<EmuError> for RuntimeError {
    fn from(e: EmuError) -> RuntimeError {
        e.to_runtime_error(None)
    }
}

fn space_name(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
    }
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            EmuErrorKind::InvalidKernel(e) => write!(f, "invalid kernel: {e}")?,
            EmuErrorKind::BadLaunch { reason } => write!(f, "bad launch: {reason}")?,
            EmuErrorKind::ArgCount { expected, got } => {
                write!(f, "kernel takes {expected} arguments, got {got}")?
            }
            EmuErrorKind::ArgType { index, param } => {
                write!(f, "argument {index} does not fit parameter `{param}`")?
            }
            EmuErrorKind::NoBuffer { index, buffer } => {
                write!(f, "argument {index} points into buffer {buffer}, which does not exist")?
            }
            EmuErrorKind::OutOfBounds { space, addr, bytes, limit } => match space {
                Space::Global => write!(
                    f,
                    "out-of-bounds global access: {bytes} bytes at buffer {} offset {} (buffer size {limit})",
                    (addr >> 40).wrapping_sub(1),
                    addr & ((1 << 40) - 1)
                )?,
                Space::Shared => write!(
                    f,
                    "out-of-bounds shared access: {bytes} bytes at address {addr} (shared size {limit})"
                )?,
            },
            EmuErrorKind::Misaligned { space, addr, align } => write!(
                f,
                "misaligned {} access at {addr:#x} (needs {align}-byte alignment)",
                space_name(*space)
            )?,
            EmuErrorKind::SharedRace { addr, write, other_thread, other_write, other_inst } => {
                write!(
                    f,
                    "shared-memory race at address {addr}: this {} and a {} by thread {other_thread} (`{other_inst}`) with no bar.sync between",
                    if *write { "write" } else { "read" },
                    if *other_write { "write" } else { "read" }
                )?
            }
            EmuErrorKind::AsyncPending { addr, issuer } => write!(
                f,
                "shared-memory race at address {addr}: accessed while a cp.async by thread {issuer} to it is pending (before its cp.async.wait_group)"
            )?,
            EmuErrorKind::Divergent { active, required } => write!(
                f,
                "warp-collective instruction executed by lanes {active:#010x}, needs {required:#010x}"
            )?,
            EmuErrorKind::ShflInactiveLane { lane, source } => {
                write!(f, "shfl.sync: lane {lane} reads lane {source}, which did not execute it")?
            }
            EmuErrorKind::DivideByZero => write!(f, "integer division by zero")?,
            EmuErrorKind::BadSrcSize { src_size, bytes } => {
                write!(f, "cp.async src-size {src_size} exceeds the copy size {bytes}")?
            }
            EmuErrorKind::StepLimit { steps } => {
                write!(f, "kernel did not finish within {steps} warp instructions")?
            }
            EmuErrorKind::DivergentBarrier {
                waiting,
                threads,
                other_thread,
                other_inst,
            } => {
                write!(
                    f,
                    "divergent barrier: {waiting} of the block's {threads} threads wait at this bar.sync, while thread {other_thread} "
                )?;
                match other_inst {
                    Some(i) => write!(f, "waits at another barrier (`{i}`)")?,
                    None => write!(f, "has finished the kernel without reaching it")?,
                }
            }
            EmuErrorKind::GlobalRace { addr, other_block } => write!(
                f,
                "global-memory race between blocks at buffer {} offset {}: this store writes a different value than block ({},{},{}) stored there in the same launch",
                (addr >> 40).wrapping_sub(1),
                addr & ((1 << 40) - 1),
                other_block[0],
                other_block[1],
                other_block[2]
            )?,
            EmuErrorKind::MbarrierUninit { addr } => write!(
                f,
                "mbarrier at shared address {addr} is used before its mbarrier.init"
            )?,
            EmuErrorKind::MbarrierCount { count } => write!(
                f,
                "mbarrier.init with count {count}: the count is 1 to 1048575"
            )?,
            EmuErrorKind::MbarrierOverArrive { addr } => write!(
                f,
                "mbarrier at shared address {addr}: an arrival beyond the count of its current phase"
            )?,
            EmuErrorKind::MbarrierDeadlock {
                addr,
                parity,
                pending,
                tx,
            } => write!(
                f,
                "mbarrier wait that can never complete: the phase of parity {parity} of the mbarrier at shared address {addr} still waits for {pending} arrival(s) and {tx} transaction byte(s), and every thread of the block waits or has finished"
            )?,
            EmuErrorKind::WgmmaDescriptor { reason } => {
                write!(f, "wgmma matrix descriptor: {reason}")?
            }
            EmuErrorKind::SetMaxNReg { reason } => write!(f, "{reason}")?,
            EmuErrorKind::WgmmaWarpgroup { threads } => write!(
                f,
                "wgmma needs whole warpgroups of 128 threads; the block has {threads}"
            )?,
            EmuErrorKind::WgmmaPendingRegister { reg, wgmma } => write!(
                f,
                "wgmma race: register {reg} is an accumulator of `{wgmma}`, still in flight (no wgmma.wait_group has retired it)"
            )?,
            EmuErrorKind::WgmmaPendingShared { addr } => write!(
                f,
                "wgmma race: shared address {addr} is written while a wgmma.mma_async that reads it is in flight (before its wgmma.wait_group)"
            )?,
            EmuErrorKind::TmaMap { reason } => write!(f, "TMA copy: {reason}")?,
            EmuErrorKind::TmaUnwaited {
                addr,
                mbar,
                parity,
                copy,
            } => write!(
                f,
                "TMA race: shared address {addr} was written by `{copy}`, whose mbarrier at shared address {mbar} this thread has not seen complete the phase (parity {parity}) of that copy: wait on it (mbarrier.try_wait.parity) before reading the box"
            )?,
            EmuErrorKind::TmaUnfenced { addr, writer } => write!(
                f,
                "proxy race: a TMA store reads shared address {addr}, written by thread {writer} through the generic proxy with no fence.proxy.async of that thread after the write"
            )?,
            EmuErrorKind::BulkPendingShared { addr } => write!(
                f,
                "TMA race: shared address {addr} is written while a TMA store that reads it is in flight (before its cp.async.bulk.wait_group.read)"
            )?,
            EmuErrorKind::WgmmaUnfenced { addr, writer } => write!(
                f,
                "proxy race: wgmma reads shared address {addr}, written by thread {writer} through the generic proxy with no fence.proxy.async of that thread after the write"
            )?,
        }
        if let Some(i) = &self.inst {
            write!(f, " in `{i}`")?;
        }
        if let (Some(b), Some(t)) = (self.block, self.thread) {
            write!(
                f,
                " (block ({},{},{}), thread ({},{},{}))",
                b[0], b[1], b[2], t[0], t[1], t[2]
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for EmuError {}

/// Runs `kernel` over `launch` with `args`; pointer arguments index `buffers`, which the
/// kernel reads and writes in place.
pub fn run(
    kernel: &Kernel,
    launch: Launch,
    args: &[Arg],
    buffers: &mut [Vec<u8>],
) -> Result<Stats, EmuError> {
    run_with(kernel, launch, args, buffers, &Options::default())
}

/// [`run`] with explicit [`Options`].
pub fn run_with(
    kernel: &Kernel,
    launch: Launch,
    args: &[Arg],
    buffers: &mut [Vec<u8>],
    options: &Options,
) -> Result<Stats, EmuError> {
    exec::run(kernel, launch, args, buffers, options)
}
