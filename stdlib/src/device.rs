//! Running a lowered kernel on the `emu` device: the kernel's Target IR executes in the
//! runtime's emulator on byte buffers made from the input tensors; the output buffer is read
//! back into a tensor of the kernel's result type.

use crate::tensor::rt;
use crate::trace::rdt;
use tessera_compiler::graph::{DType, TensorType};
use tessera_compiler::lower::to_target::Lowered;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::emu::{self, Arg, Launch};
use tessera_runtime::Tensor;

fn bf16_bits(x: f32) -> u16 {
    // The tensor holds bf16 values already: the upper half of the f32 bits is exact.
    (x.to_bits() >> 16) as u16
}

fn bytes_of(t: &Tensor) -> Result<Vec<u8>, Diagnostic> {
    let v = t.to_f32_vec().map_err(rt)?;
    let d = crate::trace::cdt(t.dtype());
    Ok(match d {
        DType::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::BF16 => v.iter().flat_map(|x| bf16_bits(*x).to_le_bytes()).collect(),
        DType::F16 => v.iter().flat_map(|x| f16_bits(*x).to_le_bytes()).collect(),
        other => {
            return Err(Diagnostic::new(
                Code::E0800,
                format!("the emu device cannot pass {other} tensors to a kernel yet"),
            ))
        }
    })
}

/// f32 → IEEE half bits (the value is an fp16 value already, so this is exact).
fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = (man | 0x80_0000) >> (14 - e);
        return sign | m as u16;
    }
    sign | ((e as u16) << 10) | (man >> 13) as u16
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            let v = man as f32 * 2f32.powi(-24);
            return if sign != 0 { -v } else { v };
        }
    } else if exp == 31 {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// Runs `l` with `inputs` (the kernel's input buffers, in order) and returns its result.
pub fn run(
    l: &Lowered,
    name: &str,
    inputs: &[Tensor],
    out: &TensorType,
) -> Result<Tensor, Diagnostic> {
    let mut buffers = Vec::new();
    for t in inputs {
        buffers.push(bytes_of(t)?);
    }
    let n: usize = out.shape.iter().product();
    let esize = match out.dtype {
        DType::F32 => 4,
        DType::BF16 | DType::F16 => 2,
        other => {
            return Err(Diagnostic::new(
                Code::E0800,
                format!("the emu device cannot return {other} tensors yet"),
            ))
        }
    };
    buffers.push(vec![0u8; n * esize]);
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
    let raw = buffers.pop().unwrap_or_default();
    let vals: Vec<f32> = match out.dtype {
        DType::F32 => raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        DType::BF16 => raw
            .chunks_exact(2)
            .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
            .collect(),
        _ => raw
            .chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
    };
    Tensor::from_f32(&out.shape, vals, rdt(out.dtype)).map_err(rt)
}
