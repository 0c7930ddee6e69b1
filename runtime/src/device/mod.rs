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

pub(crate) use buffers::{bytes_of, tensor_of};
pub use buffers::{emu_launch, replay, Buffers};

use crate::cuda::{self, CudaError, Geometry, KernelImage, Runs};
use crate::emu::{Counters, EmuError};
use crate::{RuntimeError, Tensor};
use tessera_compiler::backend::ptx::Lowered;
use tessera_compiler::backend::ptx::{Target, TargetError};
use tessera_compiler::backend::spirv::Spirv;
use tessera_compiler::graph::{Graph, TensorType, ValueId};

/// Where kernels run: the CPU executor, the emulator of the generated Target IR, or the GPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Cpu,
    Emu,
    Cuda,
    /// The SPIR-V kernels through the system's Vulkan driver ([`crate::vulkan`]).
    Vulkan,
}

impl DeviceKind {
    pub const ALL: [DeviceKind; 4] = [
        DeviceKind::Cpu,
        DeviceKind::Emu,
        DeviceKind::Cuda,
        DeviceKind::Vulkan,
    ];
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Emu => "emu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Vulkan => "vulkan",
        }
    }
    pub fn parse(s: &str) -> Option<DeviceKind> {
        DeviceKind::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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
/// ([`Device::needs_ptx`]) its printed PTX, for the Vulkan device its SPIR-V, and the Graph
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

/// A device kernels run on.
pub trait Device {
    fn kind(&self) -> DeviceKind;

    /// Whether a launch needs the kernel's PTX ([`Executable::ptx`]).
    fn needs_ptx(&self) -> bool {
        false
    }

    /// Whether a launch needs the kernel's SPIR-V ([`Executable::spirv`]).
    fn needs_spirv(&self) -> bool {
        false
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

/// The cpu: evaluates the kernel's Graph IR op with the runtime's reference ops
/// ([`crate::interp::eval_at`]); an executable without its op is left to the interpreter
/// (`Ok(None)`), which evaluates it the same way.
pub struct Cpu;

impl Device for Cpu {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        _: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let Some(op) = k.op else { return Ok(None) };
        let outs = crate::interp::eval_at(op.graph, op.root, inputs, op.captures)
            .map_err(DeviceError::Op)?;
        Ok(Some(Launched {
            outs,
            counters: None,
        }))
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
    fn kind(&self) -> DeviceKind {
        self.checked.kind()
    }
    fn needs_ptx(&self) -> bool {
        self.reference.needs_ptx() || self.checked.needs_ptx()
    }
    fn needs_spirv(&self) -> bool {
        self.reference.needs_spirv() || self.checked.needs_spirv()
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

/// The emulator: executes the kernel's Target IR ([`crate::emu`]) and counts what it did.
pub struct Emu;

impl Device for Emu {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Emu
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let mut b = Buffers::new(k.lowered, inputs, outs).map_err(DeviceError::Marshal)?;
        let stats = emu_launch(k.lowered, &mut b).map_err(DeviceError::Emu)?;
        let r = b.result(outs).map_err(DeviceError::Marshal)?;
        Ok(r.map(|outs| Launched {
            outs,
            counters: Some(stats.counters),
        }))
    }
}

impl Device for cuda::Device {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }
    fn needs_ptx(&self) -> bool {
        true
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let l = k.lowered;
        let mut b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let written = b.written();
        let status = b.status_index();
        self.run(
            &k.image()?,
            k.geometry(),
            &mut b.data,
            &l.scalars,
            cuda::Written {
                outputs: &written,
                status,
            },
        )
        .map_err(DeviceError::Cuda)?;
        let r = b.result(outs).map_err(DeviceError::Marshal)?;
        Ok(r.map(|outs| Launched {
            outs,
            counters: None,
        }))
    }
    fn reset(&mut self) -> Result<(), DeviceError> {
        self.rebuild().map_err(DeviceError::Cuda)
    }
    fn time(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
        reps: u32,
    ) -> Result<Option<f64>, DeviceError> {
        let l = k.lowered;
        let b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let runs = Runs {
            warmup: 1,
            reps: reps.max(1),
        };
        let mut t = cuda::Device::time(
            self,
            &k.image()?,
            k.geometry(),
            &b.data,
            &l.scalars,
            cuda::Written {
                outputs: &b.written(),
                status: b.status_index(),
            },
            runs,
        )
        .map_err(DeviceError::Cuda)?;
        t.sort_by(f64::total_cmp);
        Ok(t.get(t.len() / 2).copied())
    }
}

/// Opens a device of `kind`: the cpu and the emulator always open; `cuda` opens GPU 0 when a
/// driver and a GPU are present, `vulkan` the Vulkan device [`crate::vulkan::Device::open`]
/// picks.
pub fn open(kind: DeviceKind) -> Result<Box<dyn Device>, String> {
    Ok(match kind {
        DeviceKind::Cpu => Box::new(Cpu),
        DeviceKind::Emu => Box::new(Emu),
        DeviceKind::Cuda => Box::new(cuda::Device::open(0).map_err(|e| e.to_string())?),
        DeviceKind::Vulkan => Box::new(crate::vulkan::Device::open().map_err(|e| e.message)?),
    })
}

/// The Vulkan module of an executable for device `d`: a kernel with warp operations runs its
/// subgroup form where `d` has 32-lane subgroups, else its form with the lanes' values in
/// workgroup memory ([`tessera_compiler::backend::spirv::Lanes`]). The pipeline cache's key
/// is a hash of the words.
fn vk_module<'a>(
    d: &crate::vulkan::Device,
    k: &'a Executable,
) -> Result<crate::vulkan::Module<'a>, DeviceError> {
    let s = k.spirv.ok_or(DeviceError::NoSpirv)?;
    let (words, subgroup_size, shared_bytes) = match &s.shared_warps {
        Some(w) if s.subgroup && !d.runs_subgroup(32) => (w, None, s.shared_warps_bytes),
        _ => (&s.words, s.subgroup.then_some(32), s.shared_bytes),
    };
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    words.hash(&mut h);
    Ok(crate::vulkan::Module {
        words,
        entry: tessera_compiler::backend::spirv::ENTRY,
        hash: h.finish(),
        subgroup_size,
        shared_bytes,
    })
}

impl Device for crate::vulkan::Device {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Vulkan
    }
    fn needs_spirv(&self) -> bool {
        true
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let l = k.lowered;
        let m = vk_module(self, k)?;
        let mut b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let mut readback = vec![false; b.data.len()];
        for i in b.written() {
            if let Some(r) = readback.get_mut(i) {
                *r = true;
            }
        }
        let launch = crate::vulkan::Launch {
            grid: l.grid,
            push: &l.scalars,
        };
        self.run(&m, &mut b.data, &readback, &launch)
            .map_err(DeviceError::Vulkan)?;
        let r = b.result(outs).map_err(DeviceError::Marshal)?;
        Ok(r.map(|outs| Launched {
            outs,
            counters: None,
        }))
    }
    fn time(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
        reps: u32,
    ) -> Result<Option<f64>, DeviceError> {
        let l = k.lowered;
        let m = vk_module(self, k)?;
        let b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let launch = crate::vulkan::Launch {
            grid: l.grid,
            push: &l.scalars,
        };
        let mut t = crate::vulkan::Device::time(self, &m, &b.data, &launch, 1, reps.max(1))
            .map_err(DeviceError::Vulkan)?;
        t.sort_by(f64::total_cmp);
        Ok(t.get(t.len() / 2).copied())
    }
}
