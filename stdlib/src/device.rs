//! The diagnostics of kernel launches on a device ([`tessera_runtime::device`]): a launch that
//! failed on the GPU is E0800 at the kernel's `.tsr` line, and a fault carries the emulator's
//! replay of the launch ([`replay`]), which names the block (the tile's coordinates), the
//! thread, the instruction and the element index that went out of bounds. [`DeviceTimer`] is
//! the interface that times kernels on a GPU (the profiler's and the autotuner's measurements).

use std::cell::RefCell;
use std::rc::Rc;
use tessera_compiler::backend::ptx::Lowered;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::cuda::CudaError;
use tessera_runtime::device::registry::Code as DeviceCode;
use tessera_runtime::device::{replay, DeviceError, Engine, Executable, PtxImage};
use tessera_runtime::Tensor;

/// E0800 at kernel `k`'s `.tsr` line for a launch of `l` on `inputs` (for results of types
/// `outs`) that failed on the GPU with `e`; a fault also carries the emulator's replay of the
/// launch ([`replay`]).
pub fn failure_diagnostic(
    k: &tessera_compiler::schedule::Kernel,
    l: &Lowered,
    inputs: &[Tensor],
    outs: &[tessera_compiler::graph::TensorType],
    e: &CudaError,
) -> Diagnostic {
    let d = Diagnostic::new(
        Code::E0800,
        format!(
            "kernel '{}' ({}) failed on cuda: {e}",
            k.name,
            k.kind.name()
        ),
    )
    .at(k.span)
    .with_label("this kernel");
    if e.fault {
        d.with_note(replay(l, inputs, outs))
    } else {
        d
    }
}

/// Times kernels on a GPU with device events: the interface [`EngineTimer`] implements. `time_us` launches kernel `index` of `l` on inputs of its
/// operand types (the timer makes them) and returns the median time of repeated launches, µs.
pub trait DeviceTimer {
    fn device(&self) -> String;
    fn time_us(
        &self,
        l: &tessera_compiler::pipeline::Lowered,
        index: usize,
    ) -> Result<f64, TimeError>;
}

/// Why a kernel could not be timed on a device.
#[derive(Debug)]
pub enum TimeError {
    /// The program has no kernel of that index.
    NoKernel(usize),
    /// The kernel (named) has no Target IR.
    NotLowered(String),
    /// Operand `index` of kernel `kernel` has no type.
    Untyped { kernel: String, index: usize },
    /// The sample inputs could not be made.
    Input(tessera_runtime::RuntimeError),
    /// The device was closed (after a failed rebuild).
    Closed,
    /// The PTX could not be printed, or the inputs passed.
    Kernel(Diagnostic),
    /// The driver failed.
    Driver(tessera_runtime::cuda::CudaError),
}

impl std::fmt::Display for TimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeError::NoKernel(i) => write!(f, "no kernel {i}"),
            TimeError::NotLowered(k) => write!(f, "kernel '{k}' has no Target IR"),
            TimeError::Untyped { kernel, index } => {
                write!(f, "kernel '{kernel}': operand {index} has no type")
            }
            TimeError::Input(e) => f.write_str(&e.message),
            TimeError::Closed => f.write_str("the device is closed"),
            TimeError::Kernel(d) => f.write_str(&d.message),
            TimeError::Driver(e) => e.fmt(f),
        }
    }
}

/// Times kernels on the session's current device ([`Engine`]; installed while it is one the
/// registry marks for tuning, the GPU) for the autotuner. A fault leaves the device's context
/// unusable, so the timer resets it before reporting.
pub struct EngineTimer {
    pub engine: Rc<Engine>,
    /// The session's sources as of the kernel being tuned (the PTX printer names them).
    pub sources: Rc<RefCell<tessera_lang::SourceMap>>,
}

fn sample_input(
    shape: &[usize],
    d: tessera_compiler::graph::DType,
    seed: i64,
) -> Result<Tensor, TimeError> {
    let t = if d.is_float() {
        Tensor::rand(shape, d, seed)
    } else {
        Tensor::zeros(shape, d)
    };
    t.map_err(TimeError::Input)
}

impl DeviceTimer for EngineTimer {
    fn device(&self) -> String {
        self.engine.label()
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
        let compiled = l.kernels.get(index);
        let t = compiled
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
        let mut dev = self
            .engine
            .borrow(self.engine.current())
            .ok_or(TimeError::Closed)?;
        let ptx = match dev.code() {
            DeviceCode::Ptx => {
                let sources = self.sources.borrow();
                Some(
                    PtxImage::print(t, l.program.target, &sources)
                        .map_err(|e| TimeError::Kernel(e.to_diagnostic()))?,
                )
            }
            _ => None,
        };
        let x = Executable {
            lowered: t,
            ptx: ptx.as_ref(),
            spirv: compiled
                .and_then(|c| c.spirv.as_ref())
                .filter(|_| dev.code() == DeviceCode::Spirv),
            op: None,
        };
        let types = l.program.graph.result_types(k.root);
        match dev.time(&x, &inputs, &types, 10) {
            Ok(Some(us)) => Ok(us),
            Ok(None) => Err(TimeError::Kernel(Diagnostic::new(
                Code::E0800,
                format!("timing kernel '{}': no launch was timed", k.name),
            ))),
            Err(e) => {
                if e.is_fault() {
                    let _ = dev.reset();
                }
                match e {
                    DeviceError::Cuda(e) => Err(TimeError::Driver(e)),
                    e => Err(TimeError::Kernel(Diagnostic::new(
                        Code::E0800,
                        e.to_string(),
                    ))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_compiler::backend::ptx::Target;
    use tessera_compiler::graph::{DType, Graph, Op, TensorType};
    use tessera_compiler::pipeline::{lower, Lowered as Pipeline};
    use tessera_compiler::schedule::Directives;
    use tessera_lang::Span;
    use tessera_runtime::DType as RDType;

    /// A broadcast of a [3, 1, 5] bf16 input to [2, 3, 70, 5], lowered for sm_90.
    fn broadcast() -> Pipeline {
        broadcast_with_sources().0
    }

    fn broadcast_with_sources() -> (Pipeline, tessera_lang::SourceMap) {
        let mut g = Graph::new("f");
        let mut sm = tessera_lang::SourceMap::new();
        let f = sm.add("t.tsr", "y = f(x)\n");
        let span = Span::new(f, 0, 8);
        let x = g.add_param(TensorType::new(vec![3, 1, 5], DType::BF16), span);
        let out_ty = TensorType::new(vec![2, 3, 70, 5], DType::BF16);
        let y = g.push(Op::Broadcast { x }, out_ty, span);
        g.outputs = vec![y];
        let l = lower(&g, &Directives::default(), Target::Sm90).unwrap();
        (l, sm)
    }

    fn illegal_address() -> CudaError {
        CudaError {
            what: "running kernel 'f_copy_0'".into(),
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            detail: "an illegal memory access was encountered".into(),
            fault: true,
        }
    }

    /// The number after `label` in `s`.
    fn number_after(s: &str, label: &str) -> u64 {
        let at = s
            .find(label)
            .unwrap_or_else(|| panic!("no {label:?} in {s}"))
            + label.len();
        s[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or_else(|_| panic!("no number after {label:?} in {s}"))
    }

    #[test]
    fn a_faulting_launch_is_replayed_and_names_tile_thread_and_index() {
        let l = broadcast();
        let t = l.kernels[0].target.as_ref().unwrap();
        let k = &l.program.kernels[0];
        // The launch that "faulted": its input holds 5 elements where the kernel reads 15
        // (the kind of mismatch a wrong index computation makes on the GPU).
        let short = Tensor::randn(&[1, 1, 5], RDType::BF16, 3).unwrap();
        let d = failure_diagnostic(
            k,
            t,
            std::slice::from_ref(&short),
            std::slice::from_ref(&k.ty),
            &illegal_address(),
        );
        assert_eq!(d.code, Code::E0800);
        assert_eq!(d.span, Some(k.span));
        assert!(
            d.message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
            "{}",
            d.message
        );
        assert!(
            d.message.contains(&format!("kernel '{}'", k.name)),
            "{}",
            d.message
        );
        let note = d.notes.first().expect("a fault carries the replay");
        let param = &t.kernel.params[0].name;
        assert!(
            note.contains(&format!("of `{param}` (5 elements)")),
            "{note}"
        );
        let index = number_after(note, "element index ");
        assert!((5..15).contains(&index), "{note}");
        // The tile and thread that read it: the output element that thread computes reads
        // input element `index`, so its block lies inside the grid and its thread inside the
        // block.
        let bx = number_after(note, "tile (block) (");
        let tx = number_after(note, "thread (");
        assert!(bx < u64::from(t.grid[0]), "{note}");
        assert!(tx < u64::from(t.block[0]), "{note}");
        assert!(note.contains("ld.global"), "{note}");
    }

    #[test]
    fn a_launch_the_emulator_runs_cleanly_is_said_to_be_unreproducible() {
        let l = broadcast();
        let t = l.kernels[0].target.as_ref().unwrap();
        let k = &l.program.kernels[0];
        let good = Tensor::randn(&[3, 1, 5], RDType::BF16, 3).unwrap();
        let d = failure_diagnostic(
            k,
            t,
            std::slice::from_ref(&good),
            std::slice::from_ref(&k.ty),
            &illegal_address(),
        );
        let note = d.notes.first().unwrap();
        assert!(note.contains("ran to the end without a fault"), "{note}");
    }

    #[test]
    fn a_failure_that_is_not_a_fault_has_no_replay() {
        let l = broadcast();
        let t = l.kernels[0].target.as_ref().unwrap();
        let k = &l.program.kernels[0];
        let good = Tensor::randn(&[3, 1, 5], RDType::BF16, 3).unwrap();
        let e = CudaError {
            what: "compiling the PTX of 'f_copy_0'".into(),
            name: "CUDA_ERROR_INVALID_PTX".into(),
            detail: "a PTX JIT compilation failed".into(),
            fault: false,
        };
        let d = failure_diagnostic(
            k,
            t,
            std::slice::from_ref(&good),
            std::slice::from_ref(&k.ty),
            &e,
        );
        assert!(d.notes.is_empty());
        assert!(
            d.message.contains("CUDA_ERROR_INVALID_PTX"),
            "{}",
            d.message
        );
    }

    #[test]
    fn the_module_key_changes_with_the_ptx_and_the_target() {
        let (l, src) = broadcast_with_sources();
        let t = l.kernels[0].target.as_ref().unwrap();
        let a = PtxImage::print(t, Target::Sm90, &src).unwrap().hash;
        let b = PtxImage::print(t, Target::Sm90, &src).unwrap().hash;
        let c = PtxImage::print(t, Target::Sm80, &src).unwrap().hash;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
