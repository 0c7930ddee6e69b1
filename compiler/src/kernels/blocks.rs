//! Building blocks shared by the Schedule → Tile builders of every kernel kind: element
//! loads and stores that convert between a tensor's dtype and the registers a kernel computes
//! in, the warp-per-row mapping and lane-strided loops.

use crate::graph::DType;
use crate::scalar::{BinOp, Cmp, Dim, Rnd, SReg, Ty, UnOp};
use crate::tile::build::{dimm, fimm, imm, Builder};
use crate::tile::ir::{OpKind, Operand, Value};

/// The register type a kernel computes `d` in: `f64` for fp64, else `f32`.
pub fn compute_ty(f64k: bool) -> Ty {
    if f64k {
        Ty::F64
    } else {
        Ty::F32
    }
}

/// An immediate of the compute type.
pub fn fconst(ty: Ty, v: f64) -> Operand {
    if ty == Ty::F64 {
        dimm(v)
    } else {
        fimm(v as f32)
    }
}

/// Element `idx` of a `d` tensor as a value of `ty` (`f32`: converted from bf16/fp16;
/// `f64`: loaded as is; integers and bool converted as the cpu does, to nearest). Masked
/// off, 0.
pub fn load_elem(
    b: &mut Builder,
    ty: Ty,
    d: DType,
    view: Value,
    idx: impl Into<Operand>,
    mask: Option<Value>,
) -> Value {
    let dflt = |t: Ty| {
        if mask.is_some() {
            vec![if t == Ty::F64 {
                dimm(0.0)
            } else if t == Ty::F32 {
                fimm(0.0)
            } else {
                imm(0)
            }]
        } else {
            vec![]
        }
    };
    match (ty, d) {
        (_, DType::I32 | DType::I64 | DType::I8 | DType::Bool) => {
            let (ity, v) = load_int(b, d, view, idx, mask);
            b.cast(ty, ity, Some(Rnd::Rn), v)
        }
        (Ty::F64, DType::F64) => b.load(Ty::F64, view, idx, mask, &dflt(Ty::F64))[0],
        (Ty::F64, _) => {
            let x = load_elem(b, Ty::F32, d, view, idx, mask);
            b.cast(Ty::F64, Ty::F32, None, x)
        }
        (_, DType::F8E4M3 | DType::F8E5M2) => {
            let byte = b.load(Ty::U8, view, idx, mask, &dflt(Ty::U8))[0];
            fp8_decode(b, d, byte)
        }
        (_, DType::F64) => {
            let x = b.load(Ty::F64, view, idx, mask, &dflt(Ty::F64))[0];
            b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), x)
        }
        (_, DType::BF16 | DType::F16) => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            let h = b.load(Ty::B16, view, idx, mask, &dflt(Ty::B16))[0];
            let hh = b.bitcast(t, h);
            b.cast(Ty::F32, t, None, hh)
        }
        _ => b.load(Ty::F32, view, idx, mask, &dflt(Ty::F32))[0],
    }
}

/// Stores `v` (of the compute type) as element `idx` of a `d` tensor, rounding to `d`.
pub fn store_elem(
    b: &mut Builder,
    d: DType,
    view: Value,
    idx: impl Into<Operand>,
    v: Value,
    mask: Option<Value>,
) {
    let (ty, val) = match d {
        DType::F64 => (Ty::F64, v),
        DType::BF16 | DType::F16 => {
            let t = if d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
            (Ty::B16, b.cast(t, Ty::F32, Some(Rnd::Rn), v))
        }
        DType::TF32 => (Ty::F32, round_tf32(b, v)),
        DType::F8E4M3 | DType::F8E5M2 => (Ty::U8, fp8_encode(b, d, v)),
        _ => (Ty::F32, v),
    };
    b.store(ty, view, idx, &[val.into()], mask);
}

/// The fp8 formats' parameters: (mantissa bits, exponent bias, largest finite code).
fn fp8_format(d: DType) -> (i64, i64, i64) {
    if d == DType::F8E5M2 {
        (2, 15, 0x7b)
    } else {
        (3, 7, 0x7e)
    }
}

/// An fp8 byte (in a `u32`) as f32, exactly, in integer arithmetic (no sm_89 conversion):
/// normal codes move their exponent and mantissa into f32 bits with the bias changed,
/// subnormal ones are `m · 2^(1−bias−mbits)`; e4m3's 0x7f/0xff are NaN, e5m2's exponent 31
/// is inf/NaN as in fp16.
pub fn fp8_decode(b: &mut Builder, d: DType, byte: Value) -> Value {
    let (mbits, bias, _) = fp8_format(d);
    let mag = b.bin(BinOp::And, Ty::B32, byte, imm(0x7f));
    let sh = b.bin(BinOp::Shl, Ty::B32, mag, imm(23 - mbits));
    let nbits = b.add(Ty::U32, sh, imm((127 - bias) << 23));
    let normal = b.bitcast(Ty::F32, nbits);
    let m = b.cast(Ty::F32, Ty::U32, Some(Rnd::Rn), mag);
    let sub = b.mul(Ty::F32, m, fimm(2f32.powi((1 - bias - mbits) as i32)));
    let is_sub = b.cmp(Cmp::Lt, Ty::U32, mag, imm(1 << mbits));
    let mut v = b.select(Ty::F32, is_sub, sub, normal);
    if d == DType::F8E5M2 {
        let inf = b.cmp(Cmp::Eq, Ty::U32, mag, imm(0x7c));
        v = b.select(Ty::F32, inf, fimm(f32::INFINITY), v);
        let nan = b.cmp(Cmp::Gt, Ty::U32, mag, imm(0x7c));
        v = b.select(Ty::F32, nan, fimm(f32::NAN), v);
    } else {
        let nan = b.cmp(Cmp::Eq, Ty::U32, mag, imm(0x7f));
        v = b.select(Ty::F32, nan, fimm(f32::NAN), v);
    }
    let neg = b.cmp(Cmp::Ge, Ty::U32, byte, imm(0x80));
    let nv = b.unary(UnOp::Neg, Ty::F32, v);
    b.select(Ty::F32, neg, nv, v)
}

/// f32 `x` as an fp8 byte (in a `u32`) as the cpu encodes it: round to nearest even, values
/// beyond the largest finite one (±inf too) saturate to it, NaN is 0x7f, −0 keeps its sign.
/// Normal results round the f32 bits (dropping 23 − mbits bits, the carry moving into the
/// exponent); subnormal ones are `rint(|x| · 2^(bias+mbits−1))`, which reaches the smallest
/// normal code exactly where the normal range starts.
pub fn fp8_encode(b: &mut Builder, d: DType, x: Value) -> Value {
    let (mbits, bias, max) = fp8_format(d);
    let bits = b.bitcast(Ty::B32, x);
    let a = b.bin(BinOp::And, Ty::B32, bits, imm(0x7fff_ffff));
    let drop = 23 - mbits;
    let lsb = b.bin(BinOp::Shr, Ty::U32, a, imm(drop));
    let lsb = b.bin(BinOp::And, Ty::B32, lsb, imm(1));
    let r = b.add(Ty::U32, a, imm((1 << (drop - 1)) - 1));
    let r = b.add(Ty::U32, r, lsb);
    let r = b.bin(BinOp::Shr, Ty::U32, r, imm(drop));
    let normal = b.sub(Ty::U32, r, imm((127 - bias) << mbits));
    let ax = b.bitcast(Ty::F32, a);
    let scaled = b.mul(Ty::F32, ax, fimm(2f32.powi((bias + mbits - 1) as i32)));
    let sub = b.cast(Ty::U32, Ty::F32, Some(Rnd::Rni), scaled);
    let min_normal = (127 - bias + 1) << 23;
    let is_sub = b.cmp(Cmp::Lt, Ty::U32, a, imm(min_normal));
    let code = b.select(Ty::U32, is_sub, sub, normal);
    let code = b.bin(BinOp::Min, Ty::U32, code, imm(max));
    let sign = b.bin(BinOp::Shr, Ty::U32, bits, imm(24));
    let sign = b.bin(BinOp::And, Ty::B32, sign, imm(0x80));
    let code = b.bin(BinOp::Or, Ty::B32, code, sign);
    let nan = b.cmp(Cmp::Gt, Ty::U32, a, imm(0x7f80_0000));
    b.select(Ty::U32, nan, imm(0x7f), code)
}

/// Element `idx` of an integer or bool tensor (masked off: 0) as (`s32`|`s64`, value): int8
/// sign-extended from its byte, bool 0 or 1.
pub fn load_int(
    b: &mut Builder,
    d: DType,
    view: Value,
    idx: impl Into<Operand>,
    mask: Option<Value>,
) -> (Ty, Value) {
    let dflt = if mask.is_some() { vec![imm(0)] } else { vec![] };
    match d {
        DType::I64 => (Ty::S64, b.load(Ty::S64, view, idx, mask, &dflt)[0]),
        DType::I8 => {
            let v = b.load(Ty::U8, view, idx, mask, &dflt)[0];
            let v = b.bitcast(Ty::S32, v);
            (Ty::S32, super::values::wrap8(b, v))
        }
        DType::Bool => {
            let v = b.load(Ty::U8, view, idx, mask, &dflt)[0];
            let nz = b.cmp(Cmp::Ne, Ty::U32, v, imm(0));
            (Ty::S32, b.select(Ty::S32, nz, imm(1), imm(0)))
        }
        _ => (Ty::S32, b.load(Ty::S32, view, idx, mask, &dflt)[0]),
    }
}

/// Element `idx` of a `d` tensor as `ty` (masked off: zero): an integer or bool converted to
/// `s64` or `f64`, a float as [`load_elem`].
pub fn load_as(
    b: &mut Builder,
    ty: Ty,
    d: DType,
    view: Value,
    idx: Value,
    ok: Option<Value>,
) -> Value {
    if !matches!(d, DType::I32 | DType::I64 | DType::I8 | DType::Bool) {
        return load_elem(b, ty, d, view, idx, ok);
    }
    let (ity, v) = load_int(b, d, view, idx, ok);
    match ty {
        Ty::F64 => b.cast(Ty::F64, ity, Some(Rnd::Rn), v),
        _ if ity == ty => v,
        _ => b.cast(ty, ity, None, v),
    }
}

/// Stores result `v` (of the compute type `ty`) as element `idx` of a `d` tensor: an `s64`
/// into int64, int32 or int8 (truncated) or bool (nonzero), an `f64` into fp32 (rounded) or
/// fp64, an `f32` into fp64 (exactly), others as [`store_elem`].
pub fn store_int_or(
    b: &mut Builder,
    ty: Ty,
    d: DType,
    view: Value,
    idx: Value,
    v: Value,
    mask: Option<Value>,
) {
    match (ty, d) {
        (Ty::S64, DType::I64) => b.store(Ty::S64, view, idx, &[v.into()], mask),
        (Ty::S64, DType::Bool) => {
            let nz = b.cmp(Cmp::Ne, Ty::S64, v, imm(0));
            let r = b.select(Ty::U32, nz, imm(1), imm(0));
            b.store(Ty::U8, view, idx, &[r.into()], mask)
        }
        (Ty::S64, DType::I8) => {
            let r = b.cast(Ty::U32, Ty::U64, None, v);
            b.store(Ty::U8, view, idx, &[r.into()], mask)
        }
        (Ty::S64, _) => {
            let r = b.cast(Ty::S32, Ty::S64, None, v);
            b.store(Ty::S32, view, idx, &[r.into()], mask)
        }
        (Ty::F64, DType::F64) => store_elem(b, d, view, idx, v, mask),
        (Ty::F64, _) => {
            let r = b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), v);
            store_elem(b, d, view, idx, r, mask)
        }
        (Ty::F32, DType::F64) => {
            let r = b.cast(Ty::F64, Ty::F32, None, v);
            store_elem(b, d, view, idx, r, mask)
        }
        _ => store_elem(b, d, view, idx, v, mask),
    }
}

/// Rounds an f32 to tf32 (nearest, ties to even; inf and NaN kept), in a `b32`, as the
/// cpu's `f32 → tf32` cast does.
pub fn round_tf32(b: &mut Builder, x: Value) -> Value {
    let x = b.bitcast(Ty::B32, x);
    let lsb = b.bin(BinOp::Shr, Ty::U32, x, imm(13));
    let lsb = b.bin(BinOp::And, Ty::B32, lsb, imm(1));
    let bias = b.add(Ty::U32, lsb, imm(0xfff));
    let r = b.add(Ty::U32, x, bias);
    let r = b.bin(BinOp::And, Ty::B32, r, imm(0xffff_e000));
    let mag = b.bin(BinOp::And, Ty::B32, x, imm(0x7fff_ffff));
    let special = b.cmp(Cmp::Ge, Ty::U32, mag, imm(0x7f80_0000));
    b.select(Ty::B32, special, x, r)
}

/// One thread per element: this thread's index `ctaid·ntid + tid`.
pub fn global_thread(b: &mut Builder) -> Value {
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    b.fma(Ty::U32, ctaid, ntid, tid)
}

/// One warp per row: `(lane, row)` of this thread (`row = ctaid·warps_per_block + warp`).
pub fn warp_row(b: &mut Builder) -> (Value, Value) {
    let tid = b.special(SReg::Tid(Dim::X));
    let ntid = b.special(SReg::Ntid(Dim::X));
    let ctaid = b.special(SReg::Ctaid(Dim::X));
    let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
    let wpb = b.bin(BinOp::Shr, Ty::U32, ntid, imm(5));
    let row = b.fma(Ty::U32, ctaid, wpb, warp);
    (lane, row)
}

/// `for j = lane; j < n; j += 32` carrying `init`: `body(b, j, carried) -> next`.
pub fn lane_loop(
    b: &mut Builder,
    lane: Value,
    n: impl Into<Operand>,
    init: &[Value],
    body: impl FnOnce(&mut Builder, Value, &[Value]) -> Vec<Operand>,
) -> Vec<Value> {
    b.for_(lane, n, imm(32), init, None, body)
}

/// `x / d` and `x % d` for an immediate `d` > 0 (shifts and masks for powers of two).
pub fn divmod(b: &mut Builder, x: Value, d: u32) -> (Value, Value) {
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

/// `p ? x : y` of two global views of the same dtype (a `selp.u64` of their addresses): a
/// copy's source that falls back to a valid address when masked off.
pub fn select_view(b: &mut Builder, p: Value, x: Value, y: Value) -> Value {
    let ty = b.ty(x);
    b.op(
        OpKind::Select { ty: Ty::U64 },
        vec![p.into(), x.into(), y.into()],
        vec![ty],
    )[0]
}

/// `r + v` (u32), or `r` itself when `v` is 0.
pub fn add_imm(b: &mut Builder, r: Value, v: i64) -> Value {
    if v == 0 {
        r
    } else {
        b.add(Ty::U32, r, imm(v))
    }
}

/// A 2-D tile's element mapping: block `c` takes tile (`c / ⌈C/BN⌉`, `c % ⌈C/BN⌉`) of the
/// output viewed as `n / C` rows of `C`; thread `t` the `v` elements at row `t / (BN/v)`,
/// column `(t % (BN/v))·v` of it. Returns the thread's first element and the end of its row
/// (0 past the last row), so that the tail's `i < limit` keeps each element in its row.
pub fn tile_2d(b: &mut Builder, [bm, bn, cols]: [u32; 3], n: u64, v: u32) -> (Value, Value) {
    let (bm, bn, cols, v) = (
        i64::from(bm),
        i64::from(bn),
        i64::from(cols.max(1)),
        i64::from(v),
    );
    let rows = (n as i64) / cols;
    let tid = b.special(SReg::Tid(Dim::X));
    let cta = b.special(SReg::Ctaid(Dim::X));
    let col_tiles = (cols + bn - 1) / bn;
    let bx = b.bin(BinOp::Rem, Ty::U32, cta, imm(col_tiles));
    let by = b.bin(BinOp::Div, Ty::U32, cta, imm(col_tiles));
    let per_row = (bn / v).max(1);
    let r = b.bin(BinOp::Div, Ty::U32, tid, imm(per_row));
    let c = b.bin(BinOp::Rem, Ty::U32, tid, imm(per_row));
    let row = b.fma(Ty::U32, by, imm(bm), r);
    let c = b.mul(Ty::U32, c, imm(v));
    let col = b.fma(Ty::U32, bx, imm(bn), c);
    let base = b.fma(Ty::U32, row, imm(cols), col);
    let row_end = b.fma(Ty::U32, row, imm(cols), imm(cols));
    let in_rows = b.cmp(Cmp::Lt, Ty::U32, row, imm(rows));
    let limit = b.select(Ty::U32, in_rows, row_end, imm(0));
    (base, limit)
}
