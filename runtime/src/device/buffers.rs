//! A launch's buffers, made from the input tensors and read back into the result: the same
//! bytes for the emulator and the GPU.
//!
//! Element layout (as on the GPU): fp32/tf32 4-byte IEEE floats, fp16/bf16 2-byte, fp64
//! 8-byte IEEE, int32/int64 little-endian two's complement, int8 one byte, bool one byte (0 or
//! 1), fp8 one byte of its format, c64/c128 (real, imaginary) pairs of fp32/fp64 (NumPy's
//! layout; no kernel takes them yet, but `.npy` and `.safetensors` files do). A kernel with a status word ([`Lowered::status`]) gets one
//! more 4-byte buffer after the outputs, zeroed; a nonzero word after the launch means an
//! element hit an error the cpu reports.

use crate::emu::{self, Arg, EmuError, EmuErrorKind, Launch};
use crate::{DType, Tensor};
use half::{bf16, f16};
use tessera_compiler::backend::ptx::Lowered;
use tessera_compiler::backend::ptx::Space;
use tessera_compiler::graph::TensorType;

pub(crate) fn bytes_of(t: &Tensor) -> crate::Result<Vec<u8>> {
    let d = t.dtype();
    Ok(match d {
        DType::F32 | DType::TF32 => {
            let v = t.to_f32_vec()?;
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        // The tensor holds bf16/fp16 values already: the conversions are exact.
        DType::BF16 => {
            let v = t.to_f32_vec()?;
            v.iter()
                .flat_map(|x| bf16::from_f32(*x).to_bits().to_le_bytes())
                .collect()
        }
        DType::F16 => {
            let v = t.to_f32_vec()?;
            v.iter()
                .flat_map(|x| f16::from_f32(*x).to_bits().to_le_bytes())
                .collect()
        }
        DType::F64 => {
            let v = t.to_f64_vec()?;
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        DType::I32 => {
            let v = t.to_i64_vec()?;
            v.iter().flat_map(|x| (*x as i32).to_le_bytes()).collect()
        }
        DType::I64 => {
            let v = t.to_i64_vec()?;
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        DType::Bool => {
            let v = t.to_bool_vec()?;
            v.iter().map(|&x| u8::from(x)).collect()
        }
        DType::I8 => {
            let v = t.to_i64_vec()?;
            v.iter().map(|&x| x as i8 as u8).collect()
        }
        // fp8 values already: encoding them again is exact.
        DType::F8E4M3 | DType::F8E5M2 => {
            let v = t.to_f32_vec()?;
            v.iter()
                .map(|&x| crate::cast::f64_to_fp8(f64::from(x), d))
                .collect()
        }
        DType::C64 => {
            let v = t.to_c64_vec()?;
            v.iter()
                .flat_map(|x| [x.re.to_le_bytes(), x.im.to_le_bytes()])
                .flatten()
                .collect()
        }
        DType::C128 => {
            let v = t.to_c128_vec()?;
            v.iter()
                .flat_map(|x| [x.re.to_le_bytes(), x.im.to_le_bytes()])
                .flatten()
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

pub(crate) fn tensor_of(raw: &[u8], out: &TensorType) -> crate::Result<Tensor> {
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
                .map(|&b| crate::cast::fp8_to_f32(b, dt))
                .collect();
            Tensor::from_f32(shape, v, dt)
        }
        DType::C64 => {
            let v = f32s(raw)
                .chunks_exact(2)
                .map(|p| num_complex::Complex32::new(p[0], p[1]))
                .collect();
            Tensor::from_c64(shape, v)
        }
        DType::C128 => {
            let v: Vec<f64> = le8(raw).map(f64::from_le_bytes).collect();
            let v = v
                .chunks_exact(2)
                .map(|p| num_complex::Complex64::new(p[0], p[1]))
                .collect();
            Tensor::from_c128(shape, v)
        }
    }
}

/// A launch's buffers: one per input tensor, in order, then one per output (zeroed; a
/// multi-output kernel has several), then the kernel's status word when it has one
/// ([`Lowered::status`], zeroed).
pub struct Buffers {
    pub data: Vec<Vec<u8>>,
    /// Bytes per element of each buffer.
    pub elem: Vec<usize>,
    /// The first output buffer.
    out: usize,
    outs: usize,
    status: bool,
}

impl Buffers {
    /// The buffers of a launch of `l` with result types `outs` on `inputs`.
    pub fn new(l: &Lowered, inputs: &[Tensor], outs: &[TensorType]) -> crate::Result<Buffers> {
        let mut data = Vec::new();
        let mut elem = Vec::new();
        for t in inputs {
            let d = t.dtype();
            elem.push(d.size_bytes());
            data.push(bytes_of(t)?);
        }
        let out = data.len();
        for o in outs {
            let n: usize = o.shape.iter().product();
            let esize = o.dtype.size_bytes();
            data.push(vec![0u8; n * esize]);
            elem.push(esize);
        }
        if l.status {
            data.push(vec![0u8; 4]);
            elem.push(4);
        }
        Ok(Buffers {
            data,
            elem,
            out,
            outs: outs.len(),
            status: l.status,
        })
    }
    /// The index of the first output buffer.
    pub fn output(&self) -> usize {
        self.out
    }
    /// The buffers a launch writes: the outputs and the status word.
    pub fn written(&self) -> Vec<usize> {
        (self.out..self.out + self.outs + usize::from(self.status)).collect()
    }
    /// The index of the status word's buffer, when the kernel has one.
    pub fn status_index(&self) -> Option<usize> {
        self.status.then_some(self.out + self.outs)
    }
    /// Whether the status word reports an error the cpu raises for these inputs.
    pub fn failed(&self) -> bool {
        self.status
            && self
                .data
                .get(self.out + self.outs)
                .is_some_and(|s| s.iter().any(|&x| x != 0))
    }
    /// The result tensors from the output buffers, or `None` when the status word is set (the
    /// caller evaluates the op on the cpu, which reports the error).
    pub fn result(mut self, outs: &[TensorType]) -> crate::Result<Option<Vec<Tensor>>> {
        if self.failed() {
            return Ok(None);
        }
        let raws: Vec<Vec<u8>> = self.data.drain(self.out..self.out + self.outs).collect();
        raws.iter()
            .zip(outs)
            .map(|(raw, t)| tensor_of(raw, t))
            .collect::<crate::Result<Vec<_>>>()
            .map(Some)
    }
}

/// Runs `l` in the emulator on the buffers `b`.
pub fn emu_launch(l: &Lowered, b: &mut Buffers) -> Result<emu::Stats, EmuError> {
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

/// The largest launch (threads) [`replay`] runs in the emulator: a bigger one would take
/// minutes there.
pub const REPLAY_THREADS: u64 = 1 << 20;

/// Replays a launch of `l` on `inputs` in the emulator after it failed on the GPU, and says
/// what the emulator found: the block (tile coordinates), thread, instruction and, for an
/// out-of-bounds access, the parameter and element index. Launches over [`REPLAY_THREADS`]
/// threads are not replayed.
pub fn replay(l: &Lowered, inputs: &[Tensor], outs: &[TensorType]) -> String {
    let threads: u64 = l
        .grid
        .iter()
        .chain(&l.block)
        .map(|&d| u64::from(d))
        .product();
    if threads > REPLAY_THREADS {
        return format!(
            "not replayed in the emulator: the launch has {threads} threads (the replay runs \
             launches of at most {REPLAY_THREADS})"
        );
    }
    let mut b = match Buffers::new(l, inputs, outs) {
        Ok(b) => b,
        Err(e) => {
            return format!(
                "the launch could not be replayed in the emulator: {}",
                e.message
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
