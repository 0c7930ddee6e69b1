//! Running a lowered kernel on a device: on `emu` the kernel's Target IR executes in the
//! runtime's emulator, on `cuda` its printed PTX runs on the GPU ([`tessera_runtime::cuda`]).
//! Both take the same byte buffers, made here from the input tensors ([`Buffers`]); the output
//! buffer is read back into a tensor of the kernel's result type.
//!
//! A launch that faults on the GPU is replayed in the emulator ([`replay`]), which names the
//! block (the tile's coordinates), the thread, the instruction and the element index that went
//! out of bounds.
//!
//! Element layout in the buffers (as on the GPU): fp32/tf32 4-byte IEEE floats, fp16/bf16
//! 2-byte, fp64 8-byte IEEE, int32/int64 little-endian two's complement, bool one byte (0 or 1).
//! A kernel with a status word ([`Lowered::status`]) gets one more 4-byte buffer after the
//! output, zeroed; a nonzero word after the launch means an element hit an error the cpu
//! reports, and [`run`] returns `None` (the caller evaluates the op on the cpu, which reports
//! it).

use crate::tensor::rt;
use half::{bf16, f16};
use tessera_compiler::graph::{DType, TensorType};
use tessera_compiler::lower::to_target::Lowered;
use tessera_compiler::target::{Space, Target};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::cuda::{CudaError, Device, Geometry, KernelImage, Runs};
use tessera_runtime::emu::{self, Arg, EmuError, EmuErrorKind, Launch};
use tessera_runtime::Tensor;

fn bytes_of(t: &Tensor) -> Result<Vec<u8>, Diagnostic> {
    let d = t.dtype();
    Ok(match d {
        DType::F32 | DType::TF32 => {
            let v = t.to_f32_vec().map_err(rt)?;
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        // The tensor holds bf16/fp16 values already: the conversions are exact.
        DType::BF16 => {
            let v = t.to_f32_vec().map_err(rt)?;
            v.iter()
                .flat_map(|x| bf16::from_f32(*x).to_bits().to_le_bytes())
                .collect()
        }
        DType::F16 => {
            let v = t.to_f32_vec().map_err(rt)?;
            v.iter()
                .flat_map(|x| f16::from_f32(*x).to_bits().to_le_bytes())
                .collect()
        }
        DType::F64 => {
            let v = t.to_f64_vec().map_err(rt)?;
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        DType::I32 => {
            let v = t.to_i64_vec().map_err(rt)?;
            v.iter().flat_map(|x| (*x as i32).to_le_bytes()).collect()
        }
        DType::I64 => {
            let v = t.to_i64_vec().map_err(rt)?;
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        DType::Bool => {
            let v = t.to_bool_vec().map_err(rt)?;
            v.iter().map(|&x| u8::from(x)).collect()
        }
        DType::I8 => {
            let v = t.to_i64_vec().map_err(rt)?;
            v.iter().map(|&x| x as i8 as u8).collect()
        }
        // fp8 values already: encoding them again is exact.
        DType::F8E4M3 | DType::F8E5M2 => {
            let v = t.to_f32_vec().map_err(rt)?;
            v.iter()
                .map(|&x| tessera_runtime::cast::f64_to_fp8(f64::from(x), d))
                .collect()
        }
    })
}

/// The 8-byte little-endian words of `raw`.
fn le8(raw: &[u8]) -> impl Iterator<Item = [u8; 8]> + '_ {
    raw.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        b
    })
}

fn tensor_of(raw: &[u8], out: &TensorType) -> Result<Tensor, Diagnostic> {
    let shape = &out.shape;
    let dt = out.dtype;
    let f32s = |raw: &[u8]| -> Vec<f32> {
        raw.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let u16s = |raw: &[u8]| -> Vec<u16> {
        raw.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    match out.dtype {
        DType::F32 | DType::TF32 => Tensor::from_f32(shape, f32s(raw), dt),
        DType::BF16 => {
            let v = u16s(raw)
                .into_iter()
                .map(|h| bf16::from_bits(h).to_f32())
                .collect();
            Tensor::from_f32(shape, v, dt)
        }
        DType::F16 => {
            let v = u16s(raw)
                .into_iter()
                .map(|h| f16::from_bits(h).to_f32())
                .collect();
            Tensor::from_f32(shape, v, dt)
        }
        DType::I32 => {
            let v = raw
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect();
            Tensor::from_i64(shape, v, dt)
        }
        DType::F64 => {
            let v = le8(raw).map(f64::from_le_bytes).collect();
            Tensor::from_f64(shape, v, dt)
        }
        DType::I64 => {
            let v = le8(raw).map(i64::from_le_bytes).collect();
            Tensor::from_i64(shape, v, dt)
        }
        DType::Bool => Tensor::from_bool(shape, raw.iter().map(|&b| b != 0).collect()),
        DType::I8 => Tensor::from_i64(shape, raw.iter().map(|&b| i64::from(b as i8)).collect(), dt),
        DType::F8E4M3 | DType::F8E5M2 => {
            let v = raw
                .iter()
                .map(|&b| tessera_runtime::cast::fp8_to_f32(b, dt))
                .collect();
            Tensor::from_f32(shape, v, dt)
        }
    }
    .map_err(rt)
}

/// A launch's buffers: one per input tensor, in order, then the output (zeroed), then the
/// kernel's status word when it has one ([`Lowered::status`], zeroed).
pub struct Buffers {
    pub data: Vec<Vec<u8>>,
    /// Bytes per element of each buffer.
    pub elem: Vec<usize>,
    out: usize,
    status: bool,
}

impl Buffers {
    /// The buffers of a launch of `l` with result type `out` on `inputs`.
    pub fn new(l: &Lowered, inputs: &[Tensor], out: &TensorType) -> Result<Buffers, Diagnostic> {
        let mut data = Vec::new();
        let mut elem = Vec::new();
        for t in inputs {
            let d = t.dtype();
            elem.push(d.size_bytes());
            data.push(bytes_of(t)?);
        }
        let n: usize = out.shape.iter().product();
        let esize = out.dtype.size_bytes();
        data.push(vec![0u8; n * esize]);
        elem.push(esize);
        let out = data.len() - 1;
        if l.status {
            data.push(vec![0u8; 4]);
            elem.push(4);
        }
        Ok(Buffers {
            data,
            elem,
            out,
            status: l.status,
        })
    }
    /// The index of the output buffer.
    pub fn output(&self) -> usize {
        self.out
    }
    /// The buffers a launch writes: the output and the status word.
    pub fn written(&self) -> Vec<usize> {
        if self.status {
            vec![self.out, self.out + 1]
        } else {
            vec![self.out]
        }
    }
    /// Whether the status word reports an error the cpu raises for these inputs.
    pub fn failed(&self) -> bool {
        self.status
            && self
                .data
                .get(self.out + 1)
                .is_some_and(|s| s.iter().any(|&x| x != 0))
    }
    /// The result tensor from the output buffer, or `None` when the status word is set (the
    /// caller evaluates the op on the cpu, which reports the error).
    pub fn result(mut self, out: &TensorType) -> Result<Option<Tensor>, Diagnostic> {
        if self.failed() {
            return Ok(None);
        }
        let raw = self.data.swap_remove(self.out);
        tensor_of(&raw, out).map(Some)
    }
}

fn emu_launch(l: &Lowered, b: &mut Buffers) -> Result<emu::Stats, EmuError> {
    let mut args: Vec<Arg> = (0..b.data.len())
        .map(|i| Arg::Ptr {
            buffer: i,
            offset: 0,
        })
        .collect();
    args.extend(l.scalars.iter().map(|&s| Arg::U32(s)));
    let launch = Launch {
        grid: l.grid,
        block: l.block,
    };
    emu::run(&l.kernel, launch, &args, &mut b.data)
}

/// Runs `l` with `inputs` (the kernel's input buffers, in order) in the emulator and returns
/// its result, or `None` when the kernel's status word reports an error the cpu raises for
/// these inputs.
pub fn run(
    l: &Lowered,
    name: &str,
    inputs: &[Tensor],
    out: &TensorType,
) -> Result<Option<Tensor>, Diagnostic> {
    run_counted(l, name, inputs, out).map(|r| r.0)
}

/// [`run`], also returning what the emulator counted ([`emu::Stats`]).
pub fn run_counted(
    l: &Lowered,
    name: &str,
    inputs: &[Tensor],
    out: &TensorType,
) -> Result<(Option<Tensor>, emu::Stats), Diagnostic> {
    let mut b = Buffers::new(l, inputs, out)?;
    let stats = emu_launch(l, &mut b).map_err(|e| {
        Diagnostic::new(
            Code::E0800,
            format!("kernel '{name}' failed in the emulator: {e}"),
        )
    })?;
    Ok((b.result(out)?, stats))
}

/// A kernel's PTX for one target and its module-cache key: printed once per compiled kernel
/// ([`crate::kernel::Compiled::ptx_image`]), not per launch.
#[derive(Debug)]
pub struct PtxImage {
    pub ptx: String,
    pub hash: u64,
}

impl PtxImage {
    fn image<'a>(&'a self, l: &'a Lowered) -> KernelImage<'a> {
        KernelImage {
            name: &l.kernel.name,
            ptx: &self.ptx,
            hash: self.hash,
        }
    }
}

/// Prints the PTX of `l` for `target`, with its module-cache key.
pub fn ptx_of(
    l: &Lowered,
    target: Target,
    sources: &tessera_lang::SourceMap,
) -> Result<PtxImage, Diagnostic> {
    let ptx = tessera_compiler::target::ptx::print_verified(&l.kernel, target, sources)
        .map_err(|e| e.to_diagnostic())?;
    let hash = tessera_compiler::tune::cache::stable_hash(&format!("{}\n{ptx}", target.name()));
    // `stable_hash` is 16 hex digits: it always parses.
    let hash = u64::from_str_radix(&hash, 16).unwrap_or(0);
    Ok(PtxImage { ptx, hash })
}

/// The launch geometry of `l` on the GPU.
pub fn geometry(l: &Lowered) -> Geometry {
    Geometry {
        grid: l.grid,
        block: l.block,
        dynamic_shared: l.kernel.dynamic_shared_bytes(),
    }
}

/// Why a launch on the GPU did not give a result.
#[derive(Debug)]
pub enum CudaFailure {
    /// The inputs cannot be passed (a dtype the kernels do not take): E0800 as on `emu`.
    Marshal(Diagnostic),
    /// The driver failed (JIT, allocation, launch, fault, timeout).
    Driver(CudaError),
}

/// Runs `l` on the GPU with `inputs` and returns its result, or `None` when the kernel's status
/// word reports an error the cpu raises for these inputs.
pub fn run_cuda(
    dev: &mut Device,
    l: &Lowered,
    ptx: &PtxImage,
    inputs: &[Tensor],
    out: &TensorType,
) -> Result<Option<Tensor>, CudaFailure> {
    let mut b = Buffers::new(l, inputs, out).map_err(CudaFailure::Marshal)?;
    let written = b.written();
    dev.run(
        &ptx.image(l),
        geometry(l),
        &mut b.data,
        &l.scalars,
        &written,
    )
    .map_err(CudaFailure::Driver)?;
    b.result(out).map_err(CudaFailure::Marshal)
}

/// Times `l` on the GPU with `inputs`: the median of `reps` launches after one warm-up, µs.
pub fn time_cuda(
    dev: &mut Device,
    l: &Lowered,
    ptx: &PtxImage,
    inputs: &[Tensor],
    out: &TensorType,
    reps: u32,
) -> Result<f64, CudaFailure> {
    let b = Buffers::new(l, inputs, out).map_err(CudaFailure::Marshal)?;
    let mut t = dev
        .time(
            &ptx.image(l),
            geometry(l),
            &b.data,
            &l.scalars,
            &b.written(),
            Runs {
                warmup: 1,
                reps: reps.max(1),
            },
        )
        .map_err(CudaFailure::Driver)?;
    t.sort_by(f64::total_cmp);
    t.get(t.len() / 2).copied().ok_or_else(|| {
        CudaFailure::Driver(CudaError {
            what: format!("timing kernel '{}'", l.kernel.name),
            name: "no launch was timed".into(),
            detail: String::new(),
            fault: false,
        })
    })
}

/// E0800 at kernel `k`'s `.tsr` line for a launch of `l` on `inputs` that failed on the GPU
/// with `e`; a fault also carries the emulator's replay of the launch ([`replay`]).
pub fn failure_diagnostic(
    k: &tessera_compiler::schedule::Kernel,
    l: &Lowered,
    inputs: &[Tensor],
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
        d.with_note(replay(l, inputs, &k.ty))
    } else {
        d
    }
}

/// Replays a launch of `l` on `inputs` in the emulator after it failed on the GPU, and says
/// what the emulator found: the block (tile coordinates), thread, instruction and, for an
/// out-of-bounds access, the parameter and element index.
pub fn replay(l: &Lowered, inputs: &[Tensor], out: &TensorType) -> String {
    let mut b = match Buffers::new(l, inputs, out) {
        Ok(b) => b,
        Err(d) => {
            return format!(
                "the launch could not be replayed in the emulator: {}",
                d.message
            )
        }
    };
    match emu_launch(l, &mut b) {
        Ok(_) => "replayed in the emulator, the launch ran to the end without a fault (not \
                  reproducible there: a race, or a driver or hardware problem)"
            .to_string(),
        Err(e) => describe_fault(l, &b, &e),
    }
}

fn describe_fault(l: &Lowered, b: &Buffers, e: &EmuError) -> String {
    let mut s = String::from("replayed in the emulator: ");
    match &e.kind {
        EmuErrorKind::OutOfBounds {
            space: Space::Global,
            addr,
            bytes,
            limit,
        } => {
            let buffer = ((addr >> 40) as usize).wrapping_sub(1);
            let offset = addr & ((1 << 40) - 1);
            let param = l
                .kernel
                .params
                .get(buffer)
                .map_or_else(|| format!("buffer {buffer}"), |p| format!("`{}`", p.name));
            let esize = b.elem.get(buffer).copied().unwrap_or(1).max(1) as u64;
            s.push_str(&format!(
                "out-of-bounds global access of {bytes} bytes at element index {} of {param} \
                 ({} elements)",
                offset / esize,
                limit / esize
            ));
        }
        _ => s.push_str(&e.to_string()),
    }
    if let Some(blk) = e.block {
        s.push_str(&format!(
            ", tile (block) ({}, {}, {})",
            blk[0], blk[1], blk[2]
        ));
    }
    if let Some(t) = e.thread {
        s.push_str(&format!(", thread ({}, {}, {})", t[0], t[1], t[2]));
    }
    if let (EmuErrorKind::OutOfBounds { .. }, Some(i)) = (&e.kind, &e.inst) {
        s.push_str(&format!(", in `{i}`"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_compiler::graph::{Graph, Op};
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
        let d = failure_diagnostic(k, t, std::slice::from_ref(&short), &illegal_address());
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
        let d = failure_diagnostic(k, t, std::slice::from_ref(&good), &illegal_address());
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
        let d = failure_diagnostic(k, t, std::slice::from_ref(&good), &e);
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
        let a = ptx_of(t, Target::Sm90, &src).unwrap().hash;
        let b = ptx_of(t, Target::Sm90, &src).unwrap().hash;
        let c = ptx_of(t, Target::Sm80, &src).unwrap().hash;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
