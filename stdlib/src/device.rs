//! Running a lowered kernel on the `emu` device: the kernel's Target IR executes in the
//! runtime's emulator on byte buffers made from the input tensors; the output buffer is read
//! back into a tensor of the kernel's result type.
//!
//! Element layout in the buffers (as on the GPU): fp32/tf32 4-byte IEEE floats, fp16/bf16
//! 2-byte, fp64 8-byte IEEE, int32/int64 little-endian two's complement, bool one byte (0 or 1).
//! A kernel with a status word ([`Lowered::status`]) gets one more 4-byte buffer after the
//! output, zeroed; a nonzero word after the launch means an element hit an error the cpu
//! reports, and [`run`] returns `None` (the caller evaluates the op on the cpu, which reports
//! it).

use crate::tensor::rt;
use crate::trace::rdt;
use half::{bf16, f16};
use tessera_compiler::graph::{DType, TensorType};
use tessera_compiler::lower::to_target::Lowered;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::emu::{self, Arg, Launch};
use tessera_runtime::Tensor;

fn unsupported(what: &str, d: DType) -> Diagnostic {
    Diagnostic::new(
        Code::E0800,
        format!("the emu device cannot {what} {d} tensors yet"),
    )
}

/// Bytes per element of `d` in a kernel buffer (`None`: not passed to kernels).
fn elem_bytes(d: DType) -> Option<usize> {
    match d {
        DType::F32 | DType::TF32 | DType::I32 => Some(4),
        DType::I64 | DType::F64 => Some(8),
        DType::F16 | DType::BF16 => Some(2),
        DType::Bool => Some(1),
        _ => None,
    }
}

fn bytes_of(t: &Tensor) -> Result<Vec<u8>, Diagnostic> {
    let d = crate::trace::cdt(t.dtype());
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
        other => return Err(unsupported("pass", other)),
    })
}

fn tensor_of(raw: &[u8], out: &TensorType) -> Result<Tensor, Diagnostic> {
    let shape = &out.shape;
    let dt = rdt(out.dtype);
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
            let v = raw
                .chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    f64::from_le_bytes(b)
                })
                .collect();
            Tensor::from_f64(shape, v, dt)
        }
        DType::I64 => {
            let v = raw
                .chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    i64::from_le_bytes(b)
                })
                .collect();
            Tensor::from_i64(shape, v, dt)
        }
        DType::Bool => Tensor::from_bool(shape, raw.iter().map(|&b| b != 0).collect()),
        other => return Err(unsupported("return", other)),
    }
    .map_err(rt)
}

/// Runs `l` with `inputs` (the kernel's input buffers, in order) and returns its result, or
/// `None` when the kernel's status word reports an error the cpu raises for these inputs.
pub fn run(
    l: &Lowered,
    name: &str,
    inputs: &[Tensor],
    out: &TensorType,
) -> Result<Option<Tensor>, Diagnostic> {
    let mut buffers = Vec::new();
    for t in inputs {
        buffers.push(bytes_of(t)?);
    }
    let n: usize = out.shape.iter().product();
    let esize = elem_bytes(out.dtype).ok_or_else(|| unsupported("return", out.dtype))?;
    buffers.push(vec![0u8; n * esize]);
    let out_buffer = buffers.len() - 1;
    if l.status {
        buffers.push(vec![0u8; 4]);
    }
    let mut args: Vec<Arg> = (0..buffers.len())
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
    emu::run(&l.kernel, launch, &args, &mut buffers).map_err(|e| {
        Diagnostic::new(
            Code::E0800,
            format!("kernel '{name}' failed in the emulator: {e}"),
        )
    })?;
    if l.status && buffers.last().is_some_and(|s| s.iter().any(|&x| x != 0)) {
        return Ok(None);
    }
    let raw = buffers.swap_remove(out_buffer);
    tensor_of(&raw, out).map(Some)
}
