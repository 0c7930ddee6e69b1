//! The arithmetic of one lane: operands, unary and binary ops, comparisons, and the warp-wide
//! `mma.sync` with the hardware's fragment layouts.

use super::*;

pub(super) fn reg(w: &Warp, r: Reg, lane: u32) -> u64 {
    w.regs
        .get(r.0 as usize * 32 + lane as usize)
        .copied()
        .unwrap_or(0)
}

pub(super) fn opnd(w: &Warp, o: Operand, lane: u32) -> u64 {
    match o {
        Operand::Reg(r) => reg(w, r, lane),
        Operand::Imm(v) => v as u64,
        Operand::F32(b) => u64::from(b),
        Operand::F64(b) => b,
    }
}

/// Lanes that have not exited.
pub(super) fn present(w: &Warp) -> u32 {
    let mut m = 0;
    for (l, s) in w.state.iter().enumerate() {
        if *s != LaneState::Exited {
            m |= 1 << l;
        }
    }
    m
}

pub(super) fn unary(op: UnOp, ty: Ty, v: u64) -> u64 {
    match ty {
        Ty::F32 => {
            let x = f32::from_bits(v as u32);
            let approx = |f: fn(f64) -> f64| f(f64::from(x)) as f32;
            let r = match op {
                UnOp::Neg => -x,
                UnOp::Abs => x.abs(),
                UnOp::Rcp | UnOp::RcpApprox => 1.0 / x,
                UnOp::Sqrt | UnOp::SqrtApprox => x.sqrt(),
                UnOp::RsqrtApprox => approx(|y| 1.0 / y.sqrt()),
                UnOp::Ex2Approx => approx(f64::exp2),
                UnOp::Lg2Approx => approx(f64::log2),
                UnOp::TanhApprox => approx(f64::tanh),
                UnOp::Not => f32::from_bits(!(v as u32)),
            };
            u64::from(r.to_bits())
        }
        Ty::F64 => {
            let x = f64::from_bits(v);
            let r = match op {
                UnOp::Neg => -x,
                UnOp::Abs => x.abs(),
                UnOp::Rcp | UnOp::RcpApprox => 1.0 / x,
                UnOp::Sqrt | UnOp::SqrtApprox => x.sqrt(),
                UnOp::RsqrtApprox => 1.0 / x.sqrt(),
                UnOp::Ex2Approx => x.exp2(),
                UnOp::Lg2Approx => x.log2(),
                UnOp::TanhApprox => x.tanh(),
                UnOp::Not => f64::from_bits(!v),
            };
            r.to_bits()
        }
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F16
        | Ty::F16x2
        | Ty::BF16
        | Ty::BF16x2
        | Ty::U8 => {
            let i = int_of(ty, v);
            match op {
                UnOp::Neg => i.wrapping_neg() as u64,
                UnOp::Abs => i.wrapping_abs() as u64,
                UnOp::Not => !v,
                UnOp::Rcp
                | UnOp::RcpApprox
                | UnOp::Sqrt
                | UnOp::SqrtApprox
                | UnOp::RsqrtApprox
                | UnOp::Ex2Approx
                | UnOp::Lg2Approx
                | UnOp::TanhApprox => 0,
            }
        }
    }
}

pub(super) fn binary(op: BinOp, ty: Ty, a: u64, b: u64) -> Result<u64, EmuErrorKind> {
    match ty {
        Ty::F32 => {
            let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            // `min.NaN`/`max.NaN`: a NaN operand gives the canonical NaN.
            let canonical = f32::from_bits(0x7fff_ffff);
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Min | BinOp::Max if x.is_nan() || y.is_nan() => canonical,
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                BinOp::Div | BinOp::DivApprox => x / y,
                BinOp::MulHi
                | BinOp::Rem
                | BinOp::And
                | BinOp::Or
                | BinOp::Xor
                | BinOp::Shl
                | BinOp::Shr => 0.0,
            };
            return Ok(u64::from(r.to_bits()));
        }
        Ty::F64 => {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                BinOp::Div | BinOp::DivApprox => x / y,
                BinOp::MulHi
                | BinOp::Rem
                | BinOp::And
                | BinOp::Or
                | BinOp::Xor
                | BinOp::Shl
                | BinOp::Shr => 0.0,
            };
            return Ok(r.to_bits());
        }
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F16
        | Ty::F16x2
        | Ty::BF16
        | Ty::BF16x2
        | Ty::U8 => {}
    }
    let bits = ty.bits();
    let (x, y) = (int_of(ty, a), int_of(ty, b));
    let signed = ty.class() == TyClass::Signed;
    let r: i128 = match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::MulHi => {
            if signed {
                x.wrapping_mul(y) >> bits
            } else {
                ((x as u128).wrapping_mul(y as u128) >> bits) as i128
            }
        }
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        BinOp::Div | BinOp::DivApprox => {
            if y == 0 {
                return Err(EmuErrorKind::DivideByZero);
            }
            x.wrapping_div(y)
        }
        BinOp::Rem => {
            if y == 0 {
                return Err(EmuErrorKind::DivideByZero);
            }
            x.wrapping_rem(y)
        }
        BinOp::And => i128::from(a & b),
        BinOp::Or => i128::from(a | b),
        BinOp::Xor => i128::from(a ^ b),
        BinOp::Shl => {
            let s = b as u32;
            if s >= bits {
                0
            } else {
                i128::from(a << s)
            }
        }
        BinOp::Shr => {
            let s = (b as u32).min(bits);
            if signed {
                x >> s.min(bits - 1)
            } else if s >= bits {
                0
            } else {
                x >> s
            }
        }
    };
    Ok(mask(ty, r as u64))
}

pub(super) fn setp(c: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    if matches!(ty, Ty::F32 | Ty::F64) {
        let (x, y) = (float_of(ty, a), float_of(ty, b));
        if x.is_nan() || y.is_nan() {
            return c == Cmp::Nan;
        }
        return match c {
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Nan => false,
        };
    }
    let (x, y) = (int_of(ty, a), int_of(ty, b));
    match c {
        Cmp::Eq => x == y,
        Cmp::Ne => x != y,
        Cmp::Lt => x < y,
        Cmp::Le => x <= y,
        Cmp::Gt => x > y,
        Cmp::Ge => x >= y,
        Cmp::Nan => false,
    }
}

/// `mma.sync` over a warp, with the PTX ISA fragment layouts (g = lane/4, t = lane%4):
/// - m16n8k16 (bf16/f16): a_i = A[g + 8·(i%2)][2t + 8·(i/2) + {0,1}] (low half first),
///   b_i = B[2t + 8i + {0,1}][g];
/// - m16n8k8 (tf32): a_i = A[g + 8·(i%2)][t + 4·(i/2)], b_i = B[t + 4i][g];
/// - c_i/d_i = C[g + 8·(i/2)][2t + i%2].
pub(super) fn mma(
    kind: MmaKind,
    w: &Warp,
    a: &[Reg; 4],
    b: &[Reg; 2],
    c: &[Reg; 4],
) -> [[f32; 4]; 32] {
    let kdim = match kind {
        MmaKind::M16n8k16Bf16 | MmaKind::M16n8k16F16 => 16,
        MmaKind::M16n8k8Tf32 => 8,
    };
    let mut am = [[0f32; 16]; 16];
    let mut bm = [[0f32; 8]; 16];
    let mut cm = [[0f32; 8]; 16];
    for lane in 0..32u32 {
        let (g, t) = ((lane / 4) as usize, (lane % 4) as usize);
        match kind {
            MmaKind::M16n8k16Bf16 | MmaKind::M16n8k16F16 => {
                let bf = kind == MmaKind::M16n8k16Bf16;
                for (i, r) in a.iter().enumerate() {
                    let v = reg(w, *r, lane);
                    let (row, col) = (g + 8 * (i % 2), 2 * t + 8 * (i / 2));
                    am[row][col] = half_elem(v as u16, bf);
                    am[row][col + 1] = half_elem((v >> 16) as u16, bf);
                }
                for (i, r) in b.iter().enumerate() {
                    let v = reg(w, *r, lane);
                    let k = 2 * t + 8 * i;
                    bm[k][g] = half_elem(v as u16, bf);
                    bm[k + 1][g] = half_elem((v >> 16) as u16, bf);
                }
            }
            MmaKind::M16n8k8Tf32 => {
                for (i, r) in a.iter().enumerate() {
                    am[g + 8 * (i % 2)][t + 4 * (i / 2)] = tf32_elem(reg(w, *r, lane) as u32);
                }
                for (i, r) in b.iter().enumerate() {
                    bm[t + 4 * i][g] = tf32_elem(reg(w, *r, lane) as u32);
                }
            }
        }
        for (i, r) in c.iter().enumerate() {
            cm[g + 8 * (i / 2)][2 * t + i % 2] = f32::from_bits(reg(w, *r, lane) as u32);
        }
    }
    let mut out = [[0f32; 4]; 32];
    for (lane, o) in out.iter_mut().enumerate() {
        let (g, t) = (lane / 4, lane % 4);
        for (i, x) in o.iter_mut().enumerate() {
            let (row, col) = (g + 8 * (i / 2), 2 * t + i % 2);
            let mut acc = cm[row][col];
            for k in 0..kdim {
                acc += am[row][k] * bm[k][col];
            }
            *x = acc;
        }
    }
    out
}
