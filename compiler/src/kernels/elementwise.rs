//! Elementwise kernels (one op, or a fused body) as Tile IR. Thread `t` computes elements
//! `t·v .. t·v+v`. Threads whose `v` elements are all in range take the vector path
//! (full-size operands and the result by 16-byte `v4.b32` accesses where their dtype allows
//! it); the one thread with a partial group takes the element-by-element tail, each element
//! guarded by `i < n`. Broadcast operands are read element by element (their index from the
//! output's). The body (Graph IR) is evaluated here on typed values ([`values`]).
//!
//! Parameters: one view per input (`in0`, …), `out` (and `out1`, … for each further result of
//! a multi-output fused body, all of the same shape), [`status`], `n`. The status word is
//! there when an op of the body can hit an error the cpu reports (integer `//` or `%` by
//! zero, an integer `**` with a negative exponent, a float → int cast of NaN or out of range): a thread whose element hits one stores
//! 1 into it.

use super::blocks::{global_thread, load_elem, load_int, round_tf32, store_elem, tile_2d};
use super::values::{
    binary_val, cast_to_int, conv, int_divmod, int_pair, int_pow, int_val, is_float, is_int,
    unary_val, wrap8, Val,
};
use super::Error;
use super::{no, R};
use crate::graph::{BinaryOp, DType, Graph, Op, ValueId};
use crate::kernels::index::{index_of, Index};
use crate::scalar::{BinOp, Cmp, Pack, Ty, UnOp};
use crate::tile::build::{dimm, fimm, imm, Builder};
use crate::tile::ir::{Kernel, Operand, ParamRole, Type, Value};
use crate::tile::TileKernel;

/// Whether a body has an op that can hit an error the cpu reports (so its kernel takes the
/// status word).
pub(super) fn needs_status(body: &Graph) -> bool {
    let dt = |v: ValueId| body.ty(v).map(|t| t.dtype).unwrap_or(DType::F32);
    body.ids().any(|id| match body.op(id) {
        Some(Op::Cast { x }) => is_int(dt(id)) && (is_float(dt(*x)) || dt(*x) == DType::F64),
        Some(Op::Binary { op, .. }) => {
            matches!(op, BinaryOp::FloorDiv | BinaryOp::Mod | BinaryOp::Pow) && is_int(dt(id))
        }
        _ => false,
    })
}

/// The body graph of an elementwise kernel: the fused body, or the one op with its tensor
/// operands as params.
fn body_of(g: &Graph, tk: &TileKernel) -> R<Graph> {
    let Some(op) = g.op(tk.root) else {
        return no("no op");
    };
    if let Op::FusedElementwise { body, .. } = op {
        return Ok((**body).clone());
    }
    let mut body = Graph::new("body");
    let mut map = std::collections::HashMap::new();
    for v in op.operands() {
        if map.contains_key(&v) {
            continue;
        }
        let Some(ty) = g.ty(v).cloned() else {
            return no("type");
        };
        let nv = match g.op(v) {
            Some(Op::Const { value }) => body.push(Op::Const { value: *value }, ty, g.span(v)),
            _ => body.add_param(ty, g.span(v)),
        };
        map.insert(v, nv);
    }
    let mut op2 = op.clone();
    op2.map_operands(&mut |v| map.get(&v).copied().unwrap_or(v));
    let Some(ty) = g.ty(tk.root).cloned() else {
        return no("type");
    };
    let r = body.push(op2, ty, g.span(tk.root));
    body.outputs = vec![r];
    Ok(body)
}

/// Evaluates a fused body (or one elementwise op) on values holding its params: its outputs.
/// `err` collects the predicate "an op of this element hit an error the cpu reports".
pub(super) fn eval_body(
    b: &mut Builder,
    body: &Graph,
    params: &[Val],
    err: &mut Option<Value>,
) -> R<Vec<Val>> {
    let mut flag = |b: &mut Builder, bad: Value| {
        *err = Some(match *err {
            Some(e) => b.bin(BinOp::Or, Ty::Pred, e, bad),
            None => bad,
        });
    };
    let mut vals: Vec<Option<Val>> = vec![None; body.len()];
    for id in body.ids() {
        let Some(op) = body.op(id) else { continue };
        let ty = body.ty(id).map(|t| t.dtype).unwrap_or(DType::F32);
        b.at(body.span(id));
        let get = |v: ValueId| -> R<(Val, DType)> {
            let val =
                vals.get(v.index()).copied().flatten().ok_or_else(|| {
                    Error::NotLowered("a value used before it is computed".into())
                })?;
            Ok((val, body.ty(v).map(|t| t.dtype).unwrap_or(DType::F32)))
        };
        let v: Val = match op {
            Op::Param { index } => match params.get(*index) {
                Some(&p) => p,
                None => return no("missing param"),
            },
            Op::Const { value } => match ty {
                DType::F64 => Val::D(b.mov(Ty::F64, dimm(value.as_f64()))),
                DType::I32 => Val::I32(b.mov(Ty::S32, imm(value.as_f64() as i64))),
                DType::I8 => Val::I32(b.mov(Ty::S32, imm(i64::from(value.as_f64() as i64 as i8)))),
                DType::I64 => Val::I64(b.mov(Ty::S64, imm(value.as_f64() as i64))),
                // A Python scalar takes part at fp32 precision whatever the narrower float
                // dtype it is typed as (the cpu computes such ops in fp32 with it unrounded).
                d if is_float(d) => Val::F(b.mov(Ty::F32, fimm(value.as_f64() as f32))),
                _ => {
                    let f = Val::F(b.mov(Ty::F32, fimm(value.as_f64() as f32)));
                    conv(b, f, ty)?
                }
            },
            Op::Unary { op, x } => {
                let (x, _) = get(*x)?;
                unary_val(b, *op, x, ty)?
            }
            Op::Binary { op, a, b: y }
                if matches!(op, BinaryOp::FloorDiv | BinaryOp::Mod) && is_int(ty) =>
            {
                let ((x, _), (y, _)) = (get(*a)?, get(*y)?);
                let (rt, x, y) = int_pair(b, x, y, ty)?;
                let (v, bad) = int_divmod(b, *op, rt, x, y);
                flag(b, bad);
                int_val(rt, v)
            }
            Op::Binary {
                op: BinaryOp::Pow,
                a,
                b: y,
            } if is_int(ty) => {
                let ((x, _), (y, _)) = (get(*a)?, get(*y)?);
                let (rt, x, y) = int_pair(b, x, y, ty)?;
                let (v, bad) = int_pow(b, rt, x, y);
                flag(b, bad);
                int_val(rt, v)
            }
            Op::Binary { op, a, b: y } => {
                let (x, y) = (get(*a)?, get(*y)?);
                binary_val(b, *op, x, y, ty)?
            }
            Op::Cast { x } => {
                let (x, _) = get(*x)?;
                if is_int(ty) && matches!(x, Val::F(_) | Val::D(_)) {
                    let (v, bad) = cast_to_int(b, x, ty)?;
                    flag(b, bad);
                    v
                } else {
                    conv(b, x, ty)?
                }
            }
            Op::Where { cond, a, b: y } => {
                let (c, _) = get(*cond)?;
                let Val::B(p) = conv(b, c, DType::Bool)? else {
                    return no("where of other values");
                };
                let ((x, _), (y, _)) = (get(*a)?, get(*y)?);
                match (conv(b, x, ty)?, conv(b, y, ty)?) {
                    (Val::F(x), Val::F(y)) => Val::F(b.select(Ty::F32, p, x, y)),
                    (Val::D(x), Val::D(y)) => Val::D(b.select(Ty::F64, p, x, y)),
                    (Val::I32(x), Val::I32(y)) => Val::I32(b.select(Ty::S32, p, x, y)),
                    (Val::I64(x), Val::I64(y)) => Val::I64(b.select(Ty::S64, p, x, y)),
                    (Val::B(x), Val::B(y)) => {
                        let t = b.bin(BinOp::And, Ty::Pred, p, x);
                        let np = b.unary(UnOp::Not, Ty::Pred, p);
                        let f = b.bin(BinOp::And, Ty::Pred, np, y);
                        Val::B(b.bin(BinOp::Or, Ty::Pred, t, f))
                    }
                    _ => return no("where of mixed values"),
                }
            }
            other => return no(format!("{} inside an elementwise kernel", other.name())),
        };
        // int8 results wrap to their byte (ops compute them in s32).
        let v = match v {
            Val::I32(x) if ty == DType::I8 => Val::I32(wrap8(b, x)),
            v => v,
        };
        if let Some(slot) = vals.get_mut(id.index()) {
            *slot = Some(v);
        }
    }
    if body.outputs.is_empty() {
        return no("a body without an output");
    }
    body.outputs
        .iter()
        .map(|o| match vals.get(o.index()).copied().flatten() {
            Some(v) => Ok(v),
            None => no("an output not computed"),
        })
        .collect()
}
/// Element `idx` of a `d` tensor (masked off: zero).
pub(super) fn load_val(
    b: &mut Builder,
    d: DType,
    view: Value,
    idx: Value,
    mask: Option<Value>,
) -> R<Val> {
    let dflt: Vec<Operand> = match (mask, d) {
        (None, _) => vec![],
        (Some(_), DType::F64) => vec![dimm(0.0)],
        (Some(_), _) => vec![imm(0)],
    };
    let dflt = dflt.as_slice();
    Ok(match d {
        DType::I32 => Val::I32(b.load(Ty::S32, view, idx, mask, dflt)[0]),
        DType::I64 => Val::I64(b.load(Ty::S64, view, idx, mask, dflt)[0]),
        DType::F64 => Val::D(b.load(Ty::F64, view, idx, mask, dflt)[0]),
        DType::Bool => {
            // One byte, zero-extended into a 32-bit register; true is any nonzero byte.
            let v = b.load(Ty::U8, view, idx, mask, dflt)[0];
            Val::B(b.cmp(Cmp::Ne, Ty::U32, v, imm(0)))
        }
        DType::I8 => Val::I32(load_int(b, d, view, idx, mask).1),
        _ if is_float(d) => Val::F(load_elem(b, Ty::F32, d, view, idx, mask)),
        other => return no(format!("{other} tensors in memory")),
    })
}

/// Stores `v` converted to `d` as element `idx` of a `d` tensor.
pub(super) fn store_val(
    b: &mut Builder,
    d: DType,
    view: Value,
    idx: Value,
    v: Val,
    mask: Option<Value>,
) -> R<()> {
    let (ty, x) = match conv(b, v, d)? {
        Val::F(x) => {
            store_elem(b, d, view, idx, x, mask);
            return Ok(());
        }
        Val::D(x) => (Ty::F64, x),
        Val::I32(x) => (Ty::S32, x),
        Val::I64(x) => (Ty::S64, x),
        Val::B(p) => (Ty::U8, b.select(Ty::U32, p, imm(1), imm(0))),
    };
    // int8: the low byte of the s32 value.
    let (ty, x) = if d == DType::I8 {
        (Ty::U8, b.bitcast(Ty::U32, x))
    } else {
        (ty, x)
    };
    b.store(ty, view, idx, &[x.into()], mask);
    Ok(())
}

/// Whether `v` elements of `d` at an element index that is a multiple of `v` can be read or
/// written with vector accesses (4-byte words, at most 16 bytes per access).
fn vectorizable(d: DType, v: u32) -> bool {
    v.is_power_of_two()
        && (d.size_bytes() as u32) * v >= 4
        && matches!(d, DType::F32 | DType::TF32 | DType::BF16 | DType::F16)
}

/// `r + v` (u32), or `r` itself when `v` is 0.
fn add_imm(b: &mut Builder, r: Value, v: u32) -> Value {
    if v == 0 {
        r
    } else {
        b.add(Ty::U32, r, imm(i64::from(v)))
    }
}

/// Elements `i0 .. i0+v` of a `d` tensor as f32, by `v{1,2,4}.b32` loads of at most 16
/// bytes (`i0` a multiple of `v`, the tensor 16-byte aligned).
fn load_vec_f32(b: &mut Builder, d: DType, view: Value, i0: Value, v: u32) -> Vec<Value> {
    let words = ((d.size_bytes() as u32) * v / 4) as usize;
    let per16 = 16 / (d.size_bytes() as u32);
    let wide = matches!(d, DType::F32 | DType::TF32);
    let rty = if wide { Ty::F32 } else { Ty::B32 };
    let mut w = vec![];
    let mut k = 0;
    while w.len() < words {
        let cnt = (words - w.len()).min(4);
        let idx = add_imm(b, i0, k * per16);
        w.extend(b.load_n(Ty::B32, rty, cnt, view, idx, None, &[]));
        k += 1;
    }
    match d {
        DType::BF16 => w
            .iter()
            .flat_map(|&x| {
                let lo = b.bin(BinOp::Shl, Ty::B32, x, imm(16));
                let hi = b.bin(BinOp::And, Ty::B32, x, imm(0xffff_0000));
                [b.bitcast(Ty::F32, lo), b.bitcast(Ty::F32, hi)]
            })
            .collect(),
        DType::F16 => w
            .iter()
            .flat_map(|&x| {
                let lo = b.cast(Ty::F32, Ty::F16, None, x);
                let h = b.bin(BinOp::Shr, Ty::B32, x, imm(16));
                let hi = b.cast(Ty::F32, Ty::F16, None, h);
                [lo, hi]
            })
            .collect(),
        _ => w,
    }
}

/// Stores f32 values `vals` as elements `i0 ..` of a `d` tensor (rounded to `d`), by
/// `v{1,2,4}.b32` stores of at most 16 bytes.
fn store_vec_f32(b: &mut Builder, d: DType, view: Value, i0: Value, vals: &[Value]) {
    let words: Vec<Operand> = match d {
        DType::BF16 | DType::F16 => {
            let pack = if d == DType::BF16 {
                Pack::BF16x2
            } else {
                Pack::F16x2
            };
            vals.chunks(2)
                .map(|p| {
                    let (lo, hi) = (p[0], p.get(1).copied().unwrap_or(p[0]));
                    b.pack(pack, hi, lo).into()
                })
                .collect()
        }
        DType::TF32 => vals.iter().map(|&x| round_tf32(b, x).into()).collect(),
        _ => vals.iter().map(|&x| x.into()).collect(),
    };
    let per16 = 16 / (d.size_bytes() as u32);
    for (k, c) in words.chunks(4).enumerate() {
        let idx = add_imm(b, i0, k as u32 * per16);
        b.store(Ty::B32, view, idx, c, None);
    }
}

/// The index of an operand's element from the output's flat index `i`.
pub(super) fn index_val(b: &mut Builder, ix: Index, i: Value) -> Value {
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

/// The kernel's parameters and the body it evaluates.
struct Ew<'a> {
    body: &'a Graph,
    tk: &'a TileKernel,
    ins: Vec<(Value, DType, Index)>,
    /// One view per result, with its dtype.
    outs: Vec<(Value, DType)>,
    status: Option<Value>,
}

impl Ew<'_> {
    /// Sets the status word when `err` (an element's error predicate) holds (and `ok`).
    fn report(&self, b: &mut Builder, err: Option<Value>, ok: Option<Value>) {
        if let (Some(s), Some(e)) = (self.status, err) {
            b.at(self.tk.span);
            let e = match ok {
                Some(ok) => b.bin(BinOp::And, Ty::Pred, e, ok),
                None => e,
            };
            let zero = b.mov(Ty::U32, imm(0));
            b.store(Ty::U32, s, zero, &[imm(1)], Some(e));
        }
    }

    /// The `v` elements from `base`, all in range.
    fn vector(&self, b: &mut Builder, base: Value, v: u32) -> R<()> {
        let mut cols: Vec<Vec<Val>> = vec![vec![]; v as usize];
        for &(p, d, ix) in &self.ins {
            b.at(self.tk.span);
            if ix == Index::Same && vectorizable(d, v) {
                for (e, x) in load_vec_f32(b, d, p, base, v).into_iter().enumerate() {
                    cols[e].push(Val::F(x));
                }
            } else if ix == Index::Scalar {
                let j = index_val(b, ix, base);
                let x = load_val(b, d, p, j, None)?;
                for c in cols.iter_mut() {
                    c.push(x);
                }
            } else {
                for (e, c) in cols.iter_mut().enumerate() {
                    let i = add_imm(b, base, e as u32);
                    let j = index_val(b, ix, i);
                    c.push(load_val(b, d, p, j, None)?);
                }
            }
        }
        // res[e][o]: result o of element e
        let mut res = vec![];
        for params in &cols {
            let mut err = None;
            res.push(eval_body(b, self.body, params, &mut err)?);
            self.report(b, err, None);
        }
        b.at(self.tk.span);
        for (o, &(view, od)) in self.outs.iter().enumerate() {
            let vals: Vec<Val> = res.iter().filter_map(|r| r.get(o).copied()).collect();
            let floats: Option<Vec<Value>> = vals
                .iter()
                .map(|r| match r {
                    Val::F(x) => Some(*x),
                    _ => None,
                })
                .collect();
            match floats {
                Some(f) if vectorizable(od, v) => store_vec_f32(b, od, view, base, &f),
                _ => {
                    for (e, r) in vals.iter().enumerate() {
                        let i = add_imm(b, base, e as u32);
                        store_val(b, od, view, i, *r, None)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The `v` elements from `base`, each guarded by `i < n`.
    fn tail(&self, b: &mut Builder, base: Value, v: u32, n: Value) -> R<()> {
        for e in 0..v {
            b.at(self.tk.span);
            let i = add_imm(b, base, e);
            let ok = b.cmp(Cmp::Lt, Ty::U32, i, n);
            let mut params = vec![];
            for &(p, d, ix) in &self.ins {
                let j = index_val(b, ix, i);
                params.push(load_val(b, d, p, j, Some(ok))?);
            }
            let mut err = None;
            let r = eval_body(b, self.body, &params, &mut err)?;
            self.report(b, err, Some(ok));
            b.at(self.tk.span);
            for (&(view, od), r) in self.outs.iter().zip(r) {
                store_val(b, od, view, i, r, Some(ok))?;
            }
        }
        Ok(())
    }
}

/// The Tile IR of a [`Shape::Elementwise`](crate::tile::Shape::Elementwise) kernel.
pub fn elementwise(
    g: &Graph,
    tk: &TileKernel,
    n: u64,
    vector: u32,
    tile: Option<[u32; 3]>,
) -> R<Kernel> {
    let body = body_of(g, tk)?;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let mut ins = vec![];
    for (i, v) in tk.inputs.iter().enumerate() {
        let Some(t) = g.ty(*v) else {
            return no("type");
        };
        let ix = index_of(&t.shape, &tk.ty.shape)?;
        b.at(g.span(*v));
        let p = b.param(format!("in{i}"), Type::Global(t.dtype), ParamRole::Input);
        ins.push((p, t.dtype, ix));
    }
    b.at(tk.span);
    let mut outs = vec![];
    for (i, o) in body.outputs.iter().enumerate() {
        let Some(t) = body.ty(*o) else {
            return no("type");
        };
        if t.shape != tk.ty.shape {
            return no("results of different shapes");
        }
        let name = if i == 0 {
            "out".to_string()
        } else {
            format!("out{i}")
        };
        outs.push((
            b.param(name, Type::Global(t.dtype), ParamRole::Output),
            t.dtype,
        ));
    }
    let status =
        needs_status(&body).then(|| b.param("status", Type::Global(DType::I32), ParamRole::Status));
    let Ok(n32) = u32::try_from(n) else {
        return no("size");
    };
    let nr = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(n32));
    let ew = Ew {
        body: &body,
        tk,
        ins,
        outs,
        status,
    };
    let v = vector.max(1);
    // the first element of this thread and the end of its run (n, or its row's end)
    let (base, limit) = match tile {
        None => {
            let gid = global_thread(&mut b);
            (b.mul(Ty::U32, gid, imm(i64::from(v))), nr)
        }
        Some(t) => tile_2d(&mut b, t, n, v),
    };
    // a row of a 2-D tile starts on a multiple of v only when the rows are
    let aligned = tile.is_none_or(|[_, _, cols]| cols % v == 0);
    if v > 1 && aligned {
        let end = b.add(Ty::U32, base, imm(i64::from(v)));
        let full = b.cmp(Cmp::Le, Ty::U32, end, limit);
        let (mut rv, mut rt): (R<()>, R<()>) = (Ok(()), Ok(()));
        b.if_(
            full,
            &[],
            |b| {
                rv = ew.vector(b, base, v);
                b.at(tk.span);
                vec![]
            },
            |b| {
                rt = ew.tail(b, base, v, limit);
                b.at(tk.span);
                vec![]
            },
        );
        rv?;
        rt?;
    } else {
        ew.tail(&mut b, base, v, limit)?;
    }
    Ok(b.finish())
}
