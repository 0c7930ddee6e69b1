//! Small Target IR helpers of the axis-reduction generator: parameters,
//! element loads and stores of fp32/bf16/fp16 tensors, index arithmetic with immediates.

use crate::graph::DType;
use crate::target::builder::{fimm, imm};
use crate::target::{BinOp, KernelBuilder, Op as TOp, Operand, ParamTy, Reg, Rnd, Space, Ty};

/// A global pointer parameter, converted to a global address.
pub fn ptr_param(b: &mut KernelBuilder, name: &str) -> Reg {
    let p = b.param(name, ParamTy::Ptr);
    let r = b.ld_param(p);
    b.cvta_global(r)
}

/// A `u32` parameter.
pub fn u32_param(b: &mut KernelBuilder, name: &str) -> Reg {
    let p = b.param(name, ParamTy::U32);
    b.ld_param(p)
}

/// Element size in bytes of the dtypes the generators move (fp32, bf16, fp16).
pub fn dsize(d: DType) -> i64 {
    match d {
        DType::F16 | DType::BF16 => 2,
        _ => 4,
    }
}

/// The register type that holds one element's bits (`b16` or `f32`).
pub fn bits_ty(d: DType) -> Ty {
    match d {
        DType::F16 | DType::BF16 => Ty::B16,
        _ => Ty::F32,
    }
}

/// The address of element `idx` of a `d` tensor at `base`.
pub fn addr(b: &mut KernelBuilder, d: DType, base: Reg, idx: Reg) -> Reg {
    b.mad_wide(Ty::U32, idx, imm(dsize(d)), base)
}

/// Loads the bits of element `idx` into `dst` (a [`bits_ty`] register), under `guard`.
pub fn load_bits_to(
    b: &mut KernelBuilder,
    d: DType,
    dst: Reg,
    base: Reg,
    idx: Reg,
    guard: Option<Reg>,
) {
    let a = addr(b, d, base, idx);
    if let Some(g) = guard {
        b.when(g);
    }
    b.ld_to(Space::Global, bits_ty(d), &[dst], a, 0);
}

/// Stores the bits in `v` (a [`bits_ty`] register) as element `idx`, under `guard`.
pub fn store_bits(
    b: &mut KernelBuilder,
    d: DType,
    base: Reg,
    idx: Reg,
    v: Reg,
    guard: Option<Reg>,
) {
    let a = addr(b, d, base, idx);
    if let Some(g) = guard {
        b.when(g);
    }
    b.st(Space::Global, bits_ty(d), a, 0, &[v.into()]);
}

/// Element bits (a [`bits_ty`] register) as f32.
pub fn bits_to_f32(b: &mut KernelBuilder, d: DType, v: Reg) -> Reg {
    match d {
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            let h = b.reg(t);
            b.push(TOp::Mov {
                ty: Ty::B16,
                dst: h,
                src: v.into(),
            });
            b.cvt(Ty::F32, t, None, h)
        }
        _ => v,
    }
}

/// f32 rounded (to nearest even) to `d`, as element bits (a [`bits_ty`] register).
pub fn f32_to_bits(b: &mut KernelBuilder, d: DType, v: Reg) -> Reg {
    match d {
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            let h = b.cvt(t, Ty::F32, Some(Rnd::Rn), v);
            let r = b.reg(Ty::B16);
            b.push(TOp::Mov {
                ty: Ty::B16,
                dst: r,
                src: h.into(),
            });
            r
        }
        _ => v,
    }
}

/// Loads element `idx` as f32 (0 where `guard` is false).
pub fn load_f32(b: &mut KernelBuilder, d: DType, base: Reg, idx: Reg, guard: Option<Reg>) -> Reg {
    let zero: Operand = match d {
        DType::BF16 | DType::F16 => imm(0),
        _ => fimm(0.0),
    };
    let v = b.mov(bits_ty(d), zero);
    load_bits_to(b, d, v, base, idx, guard);
    bits_to_f32(b, d, v)
}

/// Stores f32 `v` rounded to `d` as element `idx`, under `guard`.
pub fn store_f32(b: &mut KernelBuilder, d: DType, base: Reg, idx: Reg, v: Reg, guard: Option<Reg>) {
    let bits = f32_to_bits(b, d, v);
    store_bits(b, d, base, idx, bits, guard);
}

/// `x / d` and `x % d` for an immediate `d` > 0 (shifts and masks for powers of two).
pub fn divmod(b: &mut KernelBuilder, x: Reg, d: u32) -> (Reg, Reg) {
    if d.is_power_of_two() {
        let q = b.bin(BinOp::Shr, Ty::U32, x, imm(i64::from(d.trailing_zeros())));
        let r = b.bin(BinOp::And, Ty::B32, x, imm(i64::from(d - 1)));
        (q, r)
    } else {
        let q = b.bin(BinOp::Div, Ty::U32, x, imm(i64::from(d)));
        let r = b.bin(BinOp::Rem, Ty::U32, x, imm(i64::from(d)));
        (q, r)
    }
}
