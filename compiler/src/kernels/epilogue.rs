//! What the two matmul kinds share: their parameters (`a`, `b`, one view per epilogue
//! operand, `c`, `m`, `n`, `k`), the batch offsets of a batched matmul (grid z), the staged
//! shared tiles and the block's origin, the stage index of a k-tile, and the epilogue applied
//! to each accumulator before it is stored.

use super::blocks::{load_elem, round_tf32, store_elem};
use super::elementwise::{eval_body, load_val};
use super::prologue::NormPrologue;
use super::values::{conv, Val};
use super::Error;
use super::{no, R};
use crate::graph::{DType, Epilogue, EpilogueStep, Graph, Op, UnaryOp};
use crate::kernels::index::{float_binop as binop, index_of, Index};
use crate::scalar::{BinOp, Cmp, Dim, Pack, Rnd, SReg, ShflMode, Ty};
use crate::tile::build::{dimm, fimm, imm, Builder};
use crate::tile::ir::{Layout, ParamRole, SharedBuf, Swizzle, Type, Value};
use crate::tile::{MatmulBatch, TileKernel};

/// `log2(v)` of a power of two.
pub fn log2(v: u32) -> i64 {
    i64::from(v.trailing_zeros())
}

/// The dtypes of A and B and the epilogue of the matmul a kernel computes.
pub fn matmul_parts(g: &Graph, tk: &TileKernel) -> R<(DType, DType, Vec<EpilogueStep>)> {
    match g.op(tk.root) {
        // the epilogue proper: a norm prologue is `MatmulParams::norm`
        Some(Op::Matmul { a, b, epilogue, .. }) => Ok((
            g.ty(*a).map(|t| t.dtype).unwrap_or(DType::F32),
            g.ty(*b).map(|t| t.dtype).unwrap_or(DType::F32),
            crate::graph::split_steps(epilogue).1.to_vec(),
        )),
        _ => no("not a matmul"),
    }
}

/// The epilogue: its steps and one (view, dtype, index kind) per `Epilogue::Binary`.
pub struct Epi {
    /// The matmul's own result dtype (its `accum`, or its operands' promotion), which the
    /// accumulator is rounded to before the first step, as the cpu's matmul result is.
    base: DType,
    steps: Vec<EpilogueStep>,
    operands: Vec<(Value, DType, Index)>,
    /// Per `Epilogue::Body`, its inputs' views.
    bodies: Vec<Vec<(Value, DType, Index)>>,
}

/// A matmul's parameters and the views of this block's problem.
pub struct MatmulParams {
    /// A and B, moved to this block's problem of a batched matmul.
    pub a: Value,
    pub b: Value,
    pub c: Value,
    pub out_dtype: DType,
    pub m: Value,
    pub n: Value,
    pub k: Value,
    pub epi: Epi,
    /// The norm prologue of A, if any.
    pub norm: Option<NormPrologue>,
    /// The flat index of this block's first output element (batched only).
    pub cbase: Option<Value>,
}

/// Declares `a`, `b`, the prologue's weight and bias, the epilogue operands, `c`, `m`, `n`,
/// `k` (in this order) and moves A and B to this block's problem of a batched matmul.
#[allow(clippy::too_many_arguments)]
pub fn matmul_params(
    b: &mut Builder,
    g: &Graph,
    tk: &TileKernel,
    (ad, bd): (DType, DType),
    steps: &[EpilogueStep],
    dims: [u32; 3],
    batch: MatmulBatch,
) -> R<MatmulParams> {
    let a = b.param("a", Type::Global(ad), ParamRole::Input);
    let bp = b.param("b", Type::Global(bd), ParamRole::Input);
    let norm = super::prologue::declare(b, g, tk)?;
    let epi = epilogue_params(g, b, steps, &tk.ty.shape, tk.root)?;
    b.at(tk.span);
    let out_dtype = tk.ty.dtype;
    let c = b.param("c", Type::Global(out_dtype), ParamRole::Output);
    let [m, n, k] = ["m", "n", "k"]
        .iter()
        .zip(dims)
        .map(|(name, d)| b.param(*name, Type::Scalar(Ty::U32), ParamRole::Size(d)))
        .collect::<Vec<_>>()[..]
    else {
        return no("matmul sizes");
    };
    let (a, bp, cbase) = if batch.count <= 1 {
        (a, bp, None)
    } else if let Some(map) = batch.bcast {
        let z = b.special(SReg::Ctaid(Dim::Z));
        let (mut ai, mut bi) = (b.mov(Ty::U32, imm(0)), b.mov(Ty::U32, imm(0)));
        let mut rest = z;
        for d in (0..map.n).rev() {
            let size = i64::from(map.dims[d]);
            let c = b.bin(BinOp::Rem, Ty::U32, rest, imm(size));
            rest = b.bin(BinOp::Div, Ty::U32, rest, imm(size));
            if map.a[d] != 0 {
                ai = b.fma(Ty::U32, c, imm(i64::from(map.a[d])), ai);
            }
            if map.b[d] != 0 {
                bi = b.fma(Ty::U32, c, imm(i64::from(map.b[d])), bi);
            }
        }
        let mk = b.mul(Ty::U32, m, k);
        let kn = b.mul(Ty::U32, k, n);
        let ao = b.mul(Ty::U32, ai, mk);
        let bo = b.mul(Ty::U32, bi, kn);
        let a = b.advance(a, ao);
        let bp = b.advance(bp, bo);
        let mn = b.mul(Ty::U32, m, n);
        (a, bp, Some(b.mul(Ty::U32, z, mn)))
    } else {
        let z = b.special(SReg::Ctaid(Dim::Z));
        let a = if batch.a {
            let mk = b.mul(Ty::U32, m, k);
            let off = b.mul(Ty::U32, z, mk);
            b.advance(a, off)
        } else {
            a
        };
        let bp = if batch.b {
            let kn = b.mul(Ty::U32, k, n);
            let off = b.mul(Ty::U32, z, kn);
            b.advance(bp, off)
        } else {
            bp
        };
        let mn = b.mul(Ty::U32, m, n);
        (a, bp, Some(b.mul(Ty::U32, z, mn)))
    };
    Ok(MatmulParams {
        a,
        b: bp,
        c,
        out_dtype,
        m,
        n,
        k,
        epi,
        norm,
        cbase,
    })
}

fn epilogue_params(
    g: &Graph,
    b: &mut Builder,
    steps: &[EpilogueStep],
    out: &[usize],
    root: crate::graph::ValueId,
) -> R<Epi> {
    let mut operands = vec![];
    let mut bodies = vec![];
    for (i, s) in steps.iter().enumerate() {
        if let Epilogue::Body { inputs, body } = &s.step {
            if super::elementwise::needs_status(body) {
                return no("an epilogue body that can fail");
            }
            let mut views = vec![];
            for (j, x) in inputs.iter().enumerate() {
                let t = g
                    .ty(*x)
                    .cloned()
                    .ok_or_else(|| Error::NotLowered("type".into()))?;
                let ix = index_of(&t.shape, out)?;
                b.at(s.span);
                let v = b.param(
                    format!("epi{i}_{j}"),
                    Type::Global(t.dtype),
                    ParamRole::Input,
                );
                views.push((v, t.dtype, ix));
            }
            bodies.push(views);
        }
        if let Epilogue::Binary { operand, .. } = s.step {
            let t = g
                .ty(operand)
                .cloned()
                .ok_or_else(|| Error::NotLowered("type".into()))?;
            let float = matches!(t.dtype, DType::F32 | DType::TF32 | DType::BF16 | DType::F16);
            if !(float || t.dtype == DType::F64) {
                return no(format!("{} epilogue operands", t.dtype));
            }
            let ix = index_of(&t.shape, out)?;
            b.at(s.span);
            let v = b.param(format!("epi{i}"), Type::Global(t.dtype), ParamRole::Input);
            operands.push((v, t.dtype, ix));
        }
    }
    let base = match g.op(root) {
        Some(Op::Matmul { a, b, accum, .. }) => match (g.ty(*a), g.ty(*b)) {
            (Some(at), Some(bt)) => accum.unwrap_or(DType::promote(at.dtype, bt.dtype)),
            _ => DType::F32,
        },
        _ => DType::F32,
    };
    Ok(Epi {
        base,
        steps: steps.to_vec(),
        operands,
        bodies,
    })
}

/// The block's staged shared tiles and origin.
pub struct Tiles {
    pub tid: Value,
    /// First output row and column of the block.
    pub bm: Value,
    pub bn: Value,
    /// The buffers and their base addresses.
    pub sa: Value,
    pub sb: Value,
    pub sa0: Value,
    pub sb0: Value,
}

/// The XOR swizzle that makes the eight 16-byte row pieces an `ldmatrix` reads (eight
/// consecutive rows, one 16-byte column) fall in eight different bank groups, for rows of
/// `pitch` bytes: the 16-byte chunk index XOR `row mod 8` for rows of 8 or more chunks; for
/// rows of 2 or 4 chunks (8 rows span 2 or 4 128-byte lines) the chunk XOR the row's line
/// index. `None` for rows under 32 bytes or not a power of two (a swizzled buffer is
/// aligned to its pitch, so that a chunk's index is the address bits 4..: see `matmul_mma`).
pub fn ldmatrix_swizzle(pitch: u32) -> Option<Swizzle> {
    if !pitch.is_power_of_two() {
        return None;
    }
    match pitch / 16 {
        0 | 1 => None,
        c if c >= 8 => Some(Swizzle { mask: 7, shift: 0 }),
        c => Some(Swizzle {
            mask: c - 1,
            shift: (8 / c).trailing_zeros(),
        }),
    }
}

/// Declares the block's staged shared tiles (`smem_a`: `stages × BM × BK`, `smem_b`:
/// `stages × BK × BN`, row-major, elements of `esize` bytes, each swizzled by
/// [`ldmatrix_swizzle`] when `swizzle` says so).
pub fn block_tiles(
    b: &mut Builder,
    [bm_, bn_, bk_]: [u32; 3],
    esize: u32,
    stages: u32,
    swizzle: [bool; 2],
) -> Tiles {
    let buf = |rows: u32, cols: u32, swz: bool| {
        let pitch = cols * esize;
        let swizzle = if swz { ldmatrix_swizzle(pitch) } else { None };
        SharedBuf {
            elem_bytes: esize,
            shape: vec![stages, rows, cols],
            layout: Layout { pitch, swizzle },
            align: if swizzle.is_some() { pitch.max(16) } else { 16 },
        }
    };
    let sa = b.shared("smem_a", buf(bm_, bk_, swizzle[0]));
    let sb = b.shared("smem_b", buf(bk_, bn_, swizzle[1]));
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let by = b.special(SReg::Ctaid(Dim::Y));
    let bm = b.mul(Ty::U32, by, imm(i64::from(bm_)));
    let bn = b.mul(Ty::U32, bx, imm(i64::from(bn_)));
    let sa0 = b.shared_addr(sa);
    let sb0 = b.shared_addr(sb);
    Tiles {
        tid,
        bm,
        bn,
        sa,
        sb,
        sa0,
        sb0,
    }
}

/// The stage (shared buffer) k-tile `kt` goes to.
pub fn stage_of(b: &mut Builder, stages: u32, kt: Value) -> Value {
    let si = i64::from(stages);
    if stages.is_power_of_two() {
        b.bin(BinOp::And, Ty::B32, kt, imm(si - 1))
    } else {
        b.bin(BinOp::Rem, Ty::U32, kt, imm(si))
    }
}

fn index(b: &mut Builder, ix: Index, i: Value) -> Value {
    match ix {
        Index::Same => i,
        Index::Scalar => b.mov(Ty::U32, imm(0)),
        Index::Mod(m) => b.bin(BinOp::Rem, Ty::U32, i, imm(i64::from(m))),
        Index::Div(m) => b.bin(BinOp::Div, Ty::U32, i, imm(i64::from(m))),
        Index::DivMod(m, r) => {
            let q = b.bin(BinOp::Div, Ty::U32, i, imm(i64::from(m)));
            b.bin(BinOp::Rem, Ty::U32, q, imm(i64::from(r)))
        }
    }
}

/// An epilogue activation in `ty` (`f32`/`f64`): the elementwise kernels' sequences.
fn unary(b: &mut Builder, u: UnaryOp, ty: Ty, x: Value) -> R<Value> {
    if ty == Ty::F64 {
        super::values::unary_f64(b, u, x)
    } else {
        super::values::unary_f32(b, u, x)
    }
}

/// Applies the epilogue to accumulator `v` (of `ty`: `f32` or `f64`) of output flat index `i`
/// and returns the value to store as `out` (in `f64` for an fp64 output, else `f32`); operand
/// loads are masked by `ok`. Steps run in the type the cpu computes them in: an fp32
/// accumulator moves to fp64 at an fp64 operand or a cast to fp64, and an fp64 value cast to a
/// narrower float is rounded to it after every later step (until an fp64 operand promotes it
/// back).
fn apply(b: &mut Builder, e: &Epi, ty: Ty, v: Value, i: Value, ok: Value, out: DType) -> R<Value> {
    let mut v = v;
    let mut ty = ty;
    let mut k = 0;
    let mut kb = 0;
    let mut narrow: Option<Ty> = None;
    if ty == Ty::F32
        && !e.steps.is_empty()
        && matches!(
            e.base,
            DType::BF16 | DType::F16 | DType::TF32 | DType::F8E4M3 | DType::F8E5M2
        )
    {
        v = super::values::round_to(b, e.base, v)?;
    }
    let widen = |b: &mut Builder, ty: &mut Ty, v: Value| {
        if *ty == Ty::F64 {
            v
        } else {
            *ty = Ty::F64;
            b.cast(Ty::F64, Ty::F32, None, v)
        }
    };
    for s in &e.steps {
        b.at(s.span);
        v = match &s.step {
            Epilogue::Binary { op, .. } => {
                let (p, d, ix) = e.operands[k];
                k += 1;
                let j = index(b, ix, i);
                let x = if d == DType::F64 {
                    v = widen(b, &mut ty, v);
                    narrow = None;
                    b.load(Ty::F64, p, j, Some(ok), &[dimm(0.0)])[0]
                } else {
                    let x = load_elem(b, Ty::F32, d, p, j, Some(ok));
                    if ty == Ty::F64 {
                        b.cast(Ty::F64, Ty::F32, None, x)
                    } else {
                        x
                    }
                };
                let o = binop(*op, ty)?;
                b.bin(o, ty, v, x)
            }
            Epilogue::Scalar { op, value } => {
                let o = binop(*op, ty)?;
                if ty == Ty::F64 {
                    b.bin(o, ty, v, dimm(value.as_f64()))
                } else {
                    b.bin(o, ty, v, fimm(value.as_f64() as f32))
                }
            }
            Epilogue::Unary(u) => unary(b, *u, ty, v)?,
            Epilogue::Cast(DType::F64) => {
                narrow = None;
                widen(b, &mut ty, v)
            }
            Epilogue::Cast(d) if ty == Ty::F64 => {
                narrow = narrow_ty(*d)?;
                v
            }
            Epilogue::Cast(DType::F32) => v,
            Epilogue::Cast(DType::TF32) => round_tf32(b, v),
            Epilogue::Cast(d @ (DType::BF16 | DType::F16)) => {
                let t = if *d == DType::BF16 { Ty::BF16 } else { Ty::F16 };
                let h = b.cast(t, Ty::F32, Some(Rnd::Rn), v);
                b.cast(Ty::F32, t, None, h)
            }
            Epilogue::Cast(d @ (DType::F8E4M3 | DType::F8E5M2)) if ty == Ty::F32 => {
                super::values::round_to(b, *d, v)?
            }
            Epilogue::Cast(other) => return no(format!("{other} values")),
            Epilogue::Prologue(_) => return no("a norm prologue after the first step"),
            Epilogue::Body { body, .. } => {
                let Some(ins) = e.bodies.get(kb) else {
                    return no("an epilogue body without its inputs");
                };
                kb += 1;
                let dt = |o: Option<&crate::graph::ValueId>| {
                    o.and_then(|o| body.ty(*o)).map(|t| t.dtype)
                };
                let (Some(accd), Some(od)) = (dt(body.params.first()), dt(body.outputs.first()))
                else {
                    return no("an epilogue body without params or output");
                };
                let acc = if ty == Ty::F64 { Val::D(v) } else { Val::F(v) };
                let mut params = vec![conv(b, acc, accd)?];
                for &(p, d, ix) in ins {
                    let j = index(b, ix, i);
                    params.push(load_val(b, d, p, j, Some(ok))?);
                }
                let mut err = None;
                let r = eval_body(b, body, &params, &mut err)?;
                if err.is_some() {
                    return no("an epilogue body that can fail");
                }
                let Some(&r) = r.first() else {
                    return no("an epilogue body without an output");
                };
                narrow = None;
                match conv(b, r, od)? {
                    Val::D(x) => {
                        ty = Ty::F64;
                        x
                    }
                    Val::F(x) => {
                        ty = Ty::F32;
                        x
                    }
                    _ => return no(format!("{od} epilogue bodies")),
                }
            }
        };
        if let Some(t) = narrow {
            v = round_f64(b, t, v);
        }
    }
    Ok(match (out == DType::F64, ty == Ty::F64) {
        (true, false) => b.cast(Ty::F64, Ty::F32, None, v),
        // Rounded to the narrower output type already: exact.
        (false, true) => b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), v),
        _ => v,
    })
}

/// `v` (f64) rounded once to float type `t` and widened back. bf16/f16 go through f32 rounded
/// to odd (truncate, then set the last bit when inexact), which makes the second rounding
/// exact, as the cpu's one-step rounding.
fn round_f64(b: &mut Builder, t: Ty, v: Value) -> Value {
    if t == Ty::F32 {
        let r = b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), v);
        return b.cast(Ty::F64, Ty::F32, None, r);
    }
    let z = b.cast(Ty::F32, Ty::F64, Some(Rnd::Rz), v);
    let back = b.cast(Ty::F64, Ty::F32, None, z);
    let inexact = b.cmp(Cmp::Ne, Ty::F64, back, v);
    let bits = b.bitcast(Ty::B32, z);
    let odd = b.bin(BinOp::Or, Ty::B32, bits, imm(1));
    let bits = b.select(Ty::B32, inexact, odd, bits);
    let o = b.bitcast(Ty::F32, bits);
    let h = b.cast(t, Ty::F32, Some(Rnd::Rn), o);
    let f = b.cast(Ty::F32, t, None, h);
    b.cast(Ty::F64, Ty::F32, None, f)
}

/// The register type an fp64 epilogue value cast to `d` is rounded through (`None`: stays
/// fp64); tf32 is fp32 here, as in the cpu's fp64 → tf32 cast.
fn narrow_ty(d: DType) -> R<Option<Ty>> {
    Ok(match d {
        DType::F64 => None,
        DType::F32 | DType::TF32 => Some(Ty::F32),
        DType::BF16 => Some(Ty::BF16),
        DType::F16 => Some(Ty::F16),
        other => return no(format!("fp64 matmul epilogues that cast to {other}")),
    })
}

/// Stores accumulator `v` (of `ty`) as output element (`row`, `col`) through the epilogue,
/// masked by `row_ok` and the column bound.
#[allow(clippy::too_many_arguments)]
pub fn store_acc(
    b: &mut Builder,
    p: &MatmulParams,
    tk: &TileKernel,
    ty: Ty,
    v: Value,
    row: Value,
    row_ok: Value,
    col: Value,
) -> R<()> {
    let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, p.n);
    let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
    let idx = b.fma(Ty::U32, row, p.n, col);
    let idx = match p.cbase {
        Some(cb) => b.add(Ty::U32, idx, cb),
        None => idx,
    };
    let v = apply(b, &p.epi, ty, v, idx, ok, p.out_dtype)?;
    b.at(tk.span);
    store_elem(b, p.out_dtype, p.c, idx, v, Some(ok));
    Ok(())
}

/// How an MMA tile's rows are stored with 16-byte vector stores: quads of lanes hold one row's
/// eight columns of each n-tile in pairs, so groups of `lanes` lanes of a quad exchange
/// `lanes` n-tiles (a transpose by butterfly shuffles) until each lane holds 16 contiguous
/// bytes. `lanes` is 4 for 16-bit outputs (one packed word per pair), 2 for 32-bit ones.
pub struct VecStore {
    /// Lanes per transpose group.
    lanes: u32,
    /// Elements per 16-byte store.
    elems: u32,
}

impl VecStore {
    /// `None` when the output's rows are not whole 16-byte vectors (`n` not a multiple of
    /// them), the dtype is not a 16/32-bit float, or the warp's n-tiles are not whole groups.
    pub fn new(out: DType, n: u32, n_tiles: usize) -> Option<VecStore> {
        let esize = match out {
            DType::BF16 | DType::F16 => 2,
            DType::F32 | DType::TF32 => 4,
            _ => return None,
        };
        let (lanes, elems) = (8 / esize, 16 / esize);
        (n.is_multiple_of(elems) && n_tiles.is_multiple_of(lanes as usize))
            .then_some(VecStore { lanes, elems })
    }
}

/// Stores rows `row` of accumulator n-tiles `tiles` (the `half` of each C fragment: its
/// registers `2·half`, `2·half + 1`) through the epilogue with 16-byte stores (see
/// [`VecStore`]). `t` is the lane's index in its quad; `col0` the column of n-tile 0's first
/// element (the quad's, not the lane's); `row_ok` masks the row.
#[allow(clippy::too_many_arguments)]
pub fn store_row_vec(
    b: &mut Builder,
    p: &MatmulParams,
    tk: &TileKernel,
    vs: &VecStore,
    tiles: &[Value],
    half: u8,
    t: Value,
    row: Value,
    row_ok: Value,
    col0: Value,
) -> R<()> {
    let g = vs.lanes as usize;
    // this lane's pair columns, and the column of the vector it stores after the exchange:
    // n-tile `t mod g` of the group, 16 bytes at `(t / g)·elems` into it
    let pair_col = b.fma(Ty::U32, t, imm(2), col0);
    let q = b.bin(BinOp::And, Ty::B32, t, imm(i64::from(vs.lanes) - 1));
    let vcol = b.fma(Ty::U32, q, imm(8), col0);
    let vcol = if g == 4 {
        vcol
    } else {
        let h = b.bin(
            BinOp::Shr,
            Ty::U32,
            t,
            imm(i64::from(vs.lanes.trailing_zeros())),
        );
        b.fma(Ty::U32, h, imm(i64::from(vs.elems)), vcol)
    };
    // the predicates of the butterfly stages: bit s of the lane's place in its group
    let stages: Vec<(i64, Value)> = [1i64, 2]
        .into_iter()
        .filter(|&s| s < g as i64)
        .map(|s| {
            let bit = b.bin(BinOp::And, Ty::B32, t, imm(s));
            (s, b.cmp(Cmp::Ne, Ty::U32, bit, imm(0)))
        })
        .collect();
    for (gi, group) in tiles.chunks(g).enumerate() {
        b.at(tk.span);
        let base = (gi * g * 8) as i64;
        // each n-tile's pair through the epilogue, as output words
        let mut units: Vec<Vec<Value>> = vec![];
        for (j, &f) in group.iter().enumerate() {
            let vals: Vec<Value> = (0..2u8)
                .map(|e| {
                    b.at(tk.span);
                    let col = b.add(Ty::U32, pair_col, imm(base + j as i64 * 8 + i64::from(e)));
                    let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, p.n);
                    let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
                    let idx = out_index(b, p, row, col);
                    let v = b.frag_get(f, half * 2 + e);
                    apply(b, &p.epi, Ty::F32, v, idx, ok, p.out_dtype)
                })
                .collect::<R<_>>()?;
            b.at(tk.span);
            units.push(match p.out_dtype {
                DType::BF16 => vec![b.pack(Pack::BF16x2, vals[1], vals[0])],
                DType::F16 => vec![b.pack(Pack::F16x2, vals[1], vals[0])],
                DType::TF32 => vals.iter().map(|&x| round_tf32(b, x)).collect(),
                _ => vals,
            });
        }
        // transpose: after the stage of bit s, a lane whose bit is 0 holds the pairs of the
        // n-tiles whose bit is 0 from both lanes, the other those whose bit is 1
        for &(s, up) in &stages {
            for j in (0..g).filter(|j| j & s as usize == 0) {
                let k = j | s as usize;
                let (lo, hi) = units.split_at_mut(k);
                for (xj, xk) in lo[j].iter_mut().zip(hi[0].iter_mut()) {
                    let send = b.select(Ty::B32, up, *xj, *xk);
                    let recv = b.shfl(ShflMode::Bfly, send, imm(s), imm(31));
                    (*xj, *xk) = (
                        b.select(Ty::B32, up, recv, *xj),
                        b.select(Ty::B32, up, *xk, recv),
                    );
                }
            }
        }
        let words: Vec<crate::tile::ir::Operand> =
            units.iter().flatten().map(|&x| x.into()).collect();
        let col = b.add(Ty::U32, vcol, imm(base));
        let col_ok = b.cmp(Cmp::Lt, Ty::U32, col, p.n);
        let ok = b.bin(BinOp::And, Ty::Pred, row_ok, col_ok);
        let idx = out_index(b, p, row, col);
        b.store(Ty::B32, p.c, idx, &words, Some(ok));
    }
    Ok(())
}

/// The flat index of output element (`row`, `col`).
fn out_index(b: &mut Builder, p: &MatmulParams, row: Value, col: Value) -> Value {
    let idx = b.fma(Ty::U32, row, p.n, col);
    match p.cbase {
        Some(cb) => b.add(Ty::U32, idx, cb),
        None => idx,
    }
}
