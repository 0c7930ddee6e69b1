//! The device layer: where a lowered kernel runs, behind one trait.
//!
//! A kernel call runs its optimised Graph IR with the interpreter ([`crate::interp`]); at each
//! kernel the interpreter asks the session's [`Device`] to launch the kernel's lowered code
//! ([`Device::launch`]). The cpu launches nothing (the interpreter evaluates the op with the
//! runtime's reference ops), the emulator ([`Emu`]) executes the kernel's Target IR, and a GPU
//! ([`crate::cuda::Device`]) runs its PTX. Every device takes the same byte buffers
//! ([`Buffers`]), so a result is read back the same way everywhere, and a launch that faults on
//! the GPU can be replayed in the emulator ([`replay`]).

mod buffers;
mod cpu;
mod cuda;
mod emu;
pub mod engine;
pub mod registry;
mod vulkan;

pub(crate) use buffers::{bytes_of, tensor_of};
pub use buffers::{emu_launch, replay, Buffers};
pub use cpu::Cpu;
pub use emu::Emu;
pub use engine::Engine;
pub use registry::{Code, Entry};

use crate::cuda::{CudaError, Geometry, KernelImage};
use crate::emu::{Counters, EmuError};
use crate::{RuntimeError, Tensor};
use tessera_compiler::backend::ptx::Lowered;
use tessera_compiler::backend::ptx::{Target, TargetError};
use tessera_compiler::backend::spirv::Spirv;
use tessera_compiler::graph::{Graph, TensorType, ValueId};

/// A kernel's PTX for one target and its module-cache key: printed once per compiled kernel,
/// not per launch.
#[derive(Debug)]
pub struct PtxImage {
    pub ptx: String,
    pub hash: u64,
}

impl PtxImage {
    /// Prints the PTX of `l` for `target` (`.loc` lines from `sources`), with its key.
    pub fn print(
        l: &Lowered,
        target: Target,
        sources: &tessera_lang::SourceMap,
    ) -> Result<PtxImage, TargetError> {
        let ptx =
            tessera_compiler::backend::ptx::print::print_verified(&l.kernel, target, sources)?;
        let key = format!("{}\n{ptx}", target.name());
        let hash = tessera_compiler::tune::cache::stable_hash(&key);
        // `stable_hash` is 16 hex digits: it always parses.
        let hash = u64::from_str_radix(&hash, 16).unwrap_or(0);
        Ok(PtxImage { ptx, hash })
    }
}

/// A kernel ready to launch: its lowered program, for a device that loads PTX
/// ([`Code::Ptx`]) its printed PTX, for the Vulkan device its SPIR-V, and the Graph
/// IR op it computes, which the cpu evaluates ([`Cpu`]).
#[derive(Clone, Copy)]
pub struct Executable<'a> {
    pub lowered: &'a Lowered,
    pub ptx: Option<&'a PtxImage>,
    pub spirv: Option<&'a Spirv>,
    pub op: Option<GraphOp<'a>>,
}

/// The Graph IR op a kernel computes: the op at `root` of `graph`, whose captured tensors are
/// `captures`.
#[derive(Clone, Copy)]
pub struct GraphOp<'a> {
    pub graph: &'a Graph,
    pub root: ValueId,
    pub captures: &'a [Tensor],
}

impl Executable<'_> {
    fn image(&self) -> Result<KernelImage<'_>, DeviceError> {
        let p = self.ptx.ok_or(DeviceError::NoPtx)?;
        Ok(KernelImage {
            name: &self.lowered.kernel.name,
            ptx: &p.ptx,
            hash: p.hash,
        })
    }

    /// The launch geometry on the GPU.
    pub fn geometry(&self) -> Geometry {
        let l = self.lowered;
        Geometry {
            grid: l.grid,
            block: l.block,
            dynamic_shared: l.kernel.dynamic_shared_bytes(),
        }
    }
}

/// What a launch gave: the results (one per [`Graph::result_types`] of the op) and, from the
/// emulator, what it counted.
#[derive(Debug)]
pub struct Launched {
    pub outs: Vec<Tensor>,
    pub counters: Option<Counters>,
}

/// Why a launch gave no result.
#[derive(Debug)]
pub enum DeviceError {
    /// The inputs cannot be passed to the kernel or the result read back.
    Marshal(RuntimeError),
    /// The emulator stopped (a fault, a trap, a step limit).
    Emu(EmuError),
    /// The driver failed (JIT, allocation, launch, fault, timeout).
    Cuda(CudaError),
    /// The Vulkan driver failed.
    Vulkan(crate::vulkan::VkError),
    /// The device runs SPIR-V and the kernel has none (it was compiled for a PTX target).
    NoSpirv,
    /// The device loads PTX and the executable has none.
    NoPtx,
    /// The cpu's evaluation of the op failed: the error the script sees.
    Op(RuntimeError),
    /// A cross-check found the two devices' results apart ([`CrossCheck`]): the comparison's
    /// verdict, with the kernel, the element and both values.
    Mismatch(Box<tessera_lang::diag::Diagnostic>),
}

impl DeviceError {
    /// Whether the launch faulted (an illegal address, a trap, a timeout on the GPU): the
    /// device needs [`Device::reset`].
    pub fn is_fault(&self) -> bool {
        matches!(self, DeviceError::Cuda(e) if e.fault)
            || matches!(self, DeviceError::Vulkan(e) if e.fault)
    }
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceError::Marshal(e) => f.write_str(&e.message),
            DeviceError::Emu(e) => write!(f, "{e}"),
            DeviceError::Cuda(e) => write!(f, "{e}"),
            DeviceError::NoPtx => f.write_str("the kernel's PTX was not printed"),
            DeviceError::Vulkan(e) => write!(f, "{e}"),
            DeviceError::NoSpirv => f.write_str(
                "the kernel has no SPIR-V: the vulkan device runs kernels compiled for the spirv target",
            ),
            DeviceError::Op(e) => f.write_str(&e.message),
            DeviceError::Mismatch(d) => f.write_str(&d.message),
        }
    }
}

/// A device kernels run on. Each device implements it in its own file of this folder and has
/// one line in the [`registry`].
pub trait Device {
    /// Its registry line: its name, the code it takes, how it opens.
    fn entry(&self) -> &'static Entry;

    /// Its name (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str {
        self.entry().name
    }

    /// The code a launch needs ([`Executable::ptx`], [`Executable::spirv`]).
    fn code(&self) -> Code {
        self.entry().code
    }

    /// The device as a profile or a tuning report names it (`"cuda:0 (NVIDIA H100)"`).
    fn label(&self) -> String {
        self.name().to_string()
    }

    /// The compilation target its own hardware wants (`"sm_90"`, `"spirv"`), if any.
    fn native_target(&self) -> Option<&'static str> {
        None
    }

    /// Runs kernel `k` on `inputs` (its tensor operands, in order) for results of types `outs`
    /// (one, or a multi-output kernel's several).
    /// `Ok(None)`: the cpu evaluates the op instead (the device is the cpu, or the kernel's
    /// status word reports an error the cpu raises for these inputs).
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError>;

    /// After a launch that faulted ([`DeviceError::is_fault`]): a fresh context, so later
    /// launches can run. An error: the device cannot go on.
    fn reset(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }

    /// The median time of `reps` launches after one warm-up, µs; `None` where the device has
    /// no clock of its own for kernels (the cpu's ops are timed by the interpreter).
    fn time(
        &mut self,
        _k: &Executable,
        _inputs: &[Tensor],
        _outs: &[TensorType],
        _reps: u32,
    ) -> Result<Option<f64>, DeviceError> {
        Ok(None)
    }
}

/// Which result a [`CrossCheck`] launch returns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    Reference,
    Checked,
}

/// Compares a cross-checked launch: the executable, the reference's results and the checked
/// device's (`None`: its status word reported an error the reference did not raise).
pub type Compare<'a> =
    dyn FnMut(&Executable, &[Tensor], Option<&Launched>) -> Result<(), DeviceError> + 'a;

/// The cross-check: a device that wraps two, the reference (the cpu) and the checked device,
/// launches every kernel on both and compares the results; the launch returns the result of
/// the side `keep` names, with the checked device's counters.
pub struct CrossCheck<'a> {
    pub reference: &'a mut dyn Device,
    pub checked: &'a mut dyn Device,
    pub compare: &'a mut Compare<'a>,
    pub keep: Keep,
}

impl Device for CrossCheck<'_> {
    fn entry(&self) -> &'static Entry {
        self.checked.entry()
    }
    fn label(&self) -> String {
        self.checked.label()
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        // The reference first: an error it raises is the script's error, as without the check.
        let Some(reference) = self.reference.launch(k, inputs, outs)? else {
            return Ok(None);
        };
        let checked = self.checked.launch(k, inputs, outs)?;
        (self.compare)(k, &reference.outs, checked.as_ref())?;
        let counters = checked.as_ref().and_then(|c| c.counters);
        Ok(Some(match (self.keep, checked) {
            (Keep::Checked, Some(c)) => c,
            _ => Launched {
                outs: reference.outs,
                counters,
            },
        }))
    }
    fn reset(&mut self) -> Result<(), DeviceError> {
        self.checked.reset()
    }
}

/// Opens the device named `name` (a [`registry`] name): `Err` says why it cannot be used here,
/// or that no device has the name.
pub fn open(name: &str) -> Result<Box<dyn Device>, String> {
    match registry::find(name) {
        Some(e) => (e.open)(),
        None => Err(format!("unknown device '{name}'")),
    }
}
