//! The `cuda` device of a session (docs/decisions.md, "The CUDA device").
//!
//! - Choosing: `auto` is `cuda` when [`Device::open`] succeeds, else `cpu`, quietly; `cuda`
//!   asked for explicitly (`--device cuda`, `target.set_device("cuda")`, `:device cuda`) without
//!   a usable GPU is E0800 naming the reason ([`unavailable`]).
//! - A launch that fails on the GPU is E0800 at the kernel's `.tsr` line: an error when `cuda`
//!   was asked for, else a warning and the launch runs on the cpu. A fault (illegal address,
//!   trap, timeout) also rebuilds the context and replays the launch in the emulator, which
//!   names the tile, thread and index ([`tessera_runtime::device::replay`]). Tensors live on the host, so
//!   the session loses no value.
//! - [`CudaTimer`] times kernels with CUDA events for the autotuner.

use crate::device::{DeviceTimer, TimeError};
use std::cell::RefCell;
use std::rc::Rc;
use tessera_compiler::graph::DType;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::cuda::{CudaError, Device};
use tessera_runtime::device::{DeviceError, Executable, PtxImage};
use tessera_runtime::Tensor;

/// The session's GPU, shared with its timer.
pub type Slot = Rc<RefCell<Option<Device>>>;

/// The GPU ordinal to open: `TESSERA_CUDA_DEVICE` (default 0).
pub fn ordinal() -> usize {
    std::env::var("TESSERA_CUDA_DEVICE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Opens the session's GPU.
pub fn open() -> Result<Device, tessera_runtime::cuda::OpenError> {
    Device::open(ordinal())
}

/// E0800 for `cuda` asked for where none can be used.
pub fn unavailable(how: &str, why: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::new(Code::E0800, format!("{how}: no usable CUDA device: {why}")).with_help(
        "use the device `auto` to run on the GPU when there is one and on the cpu otherwise",
    )
}

/// Times kernels on the session's GPU with CUDA events (the autotuner's measurements).
pub struct CudaTimer {
    pub slot: Slot,
    /// The session's sources as of the kernel being tuned (the PTX printer names them).
    pub sources: Rc<RefCell<tessera_lang::SourceMap>>,
}

fn sample_input(shape: &[usize], d: DType, seed: i64) -> Result<Tensor, TimeError> {
    let t = if d.is_float() {
        Tensor::rand(shape, d, seed)
    } else {
        Tensor::zeros(shape, d)
    };
    t.map_err(TimeError::Input)
}

impl DeviceTimer for CudaTimer {
    fn device(&self) -> String {
        match &*self.slot.borrow() {
            Some(d) => format!("cuda:{} ({})", d.info().ordinal, d.info().name),
            None => "cuda".to_string(),
        }
    }
    fn time_us(
        &self,
        l: &tessera_compiler::pipeline::Lowered,
        index: usize,
    ) -> Result<f64, TimeError> {
        let k = l
            .program
            .kernels
            .get(index)
            .ok_or(TimeError::NoKernel(index))?;
        let t = l
            .kernels
            .get(index)
            .and_then(|c| c.target.as_ref())
            .ok_or_else(|| TimeError::NotLowered(k.name.clone()))?;
        let mut inputs = Vec::new();
        for (i, v) in k.inputs.iter().enumerate() {
            let ty = l.program.graph.ty(*v).ok_or_else(|| TimeError::Untyped {
                kernel: k.name.clone(),
                index: i,
            })?;
            inputs.push(sample_input(&ty.shape, ty.dtype, 1 + i as i64)?);
        }
        let mut slot = self.slot.borrow_mut();
        let dev = slot.as_mut().ok_or(TimeError::Closed)?;
        let sources = self.sources.borrow();
        let ptx = PtxImage::print(t, l.program.target, &sources)
            .map_err(|e| TimeError::Kernel(e.to_diagnostic()))?;
        let x = Executable {
            lowered: t,
            ptx: Some(&ptx),
            spirv: None,
            op: None,
        };
        let types = l.program.graph.result_types(k.root);
        match tessera_runtime::device::Device::time(dev, &x, &inputs, &types, 10) {
            Ok(Some(us)) => Ok(us),
            Ok(None) => Err(TimeError::Driver(CudaError {
                what: format!("timing kernel '{}'", k.name),
                name: "no launch was timed".into(),
                detail: String::new(),
                fault: false,
            })),
            Err(DeviceError::Cuda(e)) => {
                // A fault leaves the context unusable (every later call fails): start afresh
                // so that the next launch, timed or not, is not charged with it.
                if e.fault {
                    let _ = dev.rebuild();
                }
                Err(TimeError::Driver(e))
            }
            Err(e) => Err(TimeError::Kernel(Diagnostic::new(
                Code::E0800,
                e.to_string(),
            ))),
        }
    }
}
