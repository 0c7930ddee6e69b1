//! Copy kernels (transpose/permute, broadcast, slice, concat) as Tile IR: every copy is a
//! gather ([`Shape::Gather`], described by [`crate::kernels::copy_map::tile`]). Output element `i`
//! (row-major coordinates `c` over `dims`) reads element `base + Σ c[d]·stride[d]` of the
//! source whose select range holds `c[axis]`. Thread `t` takes elements `t·v .. t·v+v`, each
//! guarded by `i < n`; integer arithmetic is `u32`, wrapping (every final offset lies inside
//! its buffer).
//!
//! Parameters: one view per input (`in0`, …), `out`, `n`.

use super::blocks::{divmod, global_thread, load_elem, store_elem, tile_2d};
use super::{no, R};
use crate::graph::{DType, Graph};
use crate::scalar::{BinOp, Cmp, Ty};
use crate::tile::build::{fimm, imm, Builder};
use crate::tile::ir::{Kernel, Operand, ParamRole, Type, Value};
use crate::tile::{GatherSrc, TileKernel};

/// The register type that holds one element's bits (`u8` moves a byte through a 32-bit
/// register).
fn bits_ty(d: DType) -> Ty {
    match d {
        DType::F16 | DType::BF16 => Ty::B16,
        DType::F64 | DType::I64 => Ty::B64,
        DType::I32 => Ty::B32,
        DType::Bool | DType::I8 | DType::F8E4M3 | DType::F8E5M2 => Ty::U8,
        DType::F32 | DType::TF32 => Ty::F32,
        // a complex element: one (c64) or two (c128) 64-bit words, moved as bits
        DType::C64 | DType::C128 => Ty::B64,
    }
}

/// The Tile IR of a [`Shape::Gather`](crate::tile::Shape::Gather) kernel.
pub fn gather(
    g: &Graph,
    tk: &TileKernel,
    n: u64,
    vector: u32,
    dims: &[u32],
    sources: &[GatherSrc],
    tile: Option<[u32; 3]>,
) -> R<Kernel> {
    let od = tk.ty.dtype;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let mut ins = vec![];
    for (i, v) in tk.inputs.iter().enumerate() {
        let Some(t) = g.ty(*v) else {
            return no("an untyped input");
        };
        b.at(g.span(*v));
        let p = b.param(format!("in{i}"), Type::Global(t.dtype), ParamRole::Input);
        ins.push((p, t.dtype));
    }
    b.at(tk.span);
    let y = b.param("out", Type::Global(od), ParamRole::Output);
    let Ok(n32) = u32::try_from(n) else {
        return no("size");
    };
    let nr = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(n32));
    let v = i64::from(vector.max(1));
    // the first element of this thread and the end of its run (n, or its row's end)
    let (first, nr) = match tile {
        None => {
            let gid = global_thread(&mut b);
            (b.mul(Ty::U32, gid, imm(v)), nr)
        }
        Some(t) => tile_2d(&mut b, t, n, vector.max(1)),
    };
    // Every source has the output's dtype: move the bits (no conversion).
    let raw = sources
        .iter()
        .all(|s| ins.get(s.input).is_some_and(|(_, d)| *d == od));
    if od.is_complex() && !raw {
        return no("a copy that converts to a complex dtype");
    }
    // 64-bit words per element
    let words = if od == DType::C128 { 2 } else { 1 };
    for e in 0..v {
        let i = b.add(Ty::U32, first, imm(e));
        let ok = b.cmp(Cmp::Lt, Ty::U32, i, nr);
        // Coordinates, last dim first.
        let mut c: Vec<Value> = vec![i; dims.len()];
        let mut rest = i;
        for d in (0..dims.len()).rev() {
            if d == 0 {
                c[0] = rest;
            } else {
                let (q, r) = divmod(&mut b, rest, dims[d]);
                c[d] = r;
                rest = q;
            }
        }
        let zero = match bits_ty(od) {
            Ty::F32 => fimm(0.0),
            _ => imm(0),
        };
        // An element no source selects (none: the sources cover the output) reads as zero.
        let mut val: Vec<Operand> = vec![zero; words];
        let mut picked: Option<Value> = None;
        for s in sources {
            let Some(&(p, sd)) = ins.get(s.input) else {
                return no("a missing input");
            };
            b.at(g.span(tk.inputs[s.input]));
            let mut off = b.mov(Ty::U32, imm(s.base));
            for (d, &st) in s.strides.iter().enumerate() {
                if st != 0 {
                    off = b.fma(Ty::U32, c[d], imm(st), off);
                }
            }
            let mut guard = ok;
            if let Some((a, lo, hi)) = s.select {
                if lo > 0 {
                    let ge = b.cmp(Cmp::Ge, Ty::U32, c[a], imm(i64::from(lo)));
                    guard = b.bin(BinOp::And, Ty::Pred, guard, ge);
                }
                let lt = b.cmp(Cmp::Lt, Ty::U32, c[a], imm(i64::from(hi)));
                guard = b.bin(BinOp::And, Ty::Pred, guard, lt);
            }
            if raw {
                // Selected: this source's bits; else the value so far.
                val = b
                    .load(bits_ty(sd), p, off, Some(guard), &val)
                    .into_iter()
                    .map(Operand::from)
                    .collect();
            } else {
                let x = load_elem(&mut b, Ty::F32, sd, p, off, Some(guard));
                picked = Some(match picked {
                    None => x,
                    Some(prev) => b.select(Ty::F32, guard, x, prev),
                });
            }
        }
        b.at(tk.span);
        match picked {
            Some(x) => store_elem(&mut b, od, y, i, x, Some(ok)),
            None => {
                let bits: Vec<Operand> = val
                    .iter()
                    .map(|v| match *v {
                        Operand::Value(x) => x.into(),
                        other => b.mov(bits_ty(od), other).into(),
                    })
                    .collect();
                b.store(bits_ty(od), y, i, &bits, Some(ok));
            }
        }
    }
    Ok(b.finish())
}
