//! The elementwise complex ops ([`Op::Complex`]) as Tile IR: thread `t` computes elements
//! `t·v .. t·v+v` of the result, each guarded by `i < n`. A complex tensor is a view of its
//! parts' words (fp32 for c64, fp64 for c128), element `j` at words `2j, 2j + 1`; a real
//! operand is `x + 0j`; a `const` operand is an immediate; a broadcast operand's element
//! index comes from the output's as in the elementwise kernels.
//!
//! Arithmetic is in the result's part precision: fp64 when the result or an operand is
//! c128 or fp64, else fp32, as the cpu computes (`(a+bi)(c+di) = (ac − bd) + (ad + bc)i`).
//! `abs` of a c64 value is computed in fp64 and rounded once (the cpu's `hypot`, correctly
//! rounded here); of a c128 value as `m·√(1 + (s/m)²)` with `m` the larger part's magnitude
//! and `s` the smaller's (no overflow of the squares). `angle` is `atan2(im, re)` computed in
//! fp64 ([`atan2`]) and rounded once for c64.
//!
//! Parameters: one view per tensor operand (`in0`, `in1`), `out`, `n`.

use super::blocks::{fconst, global_thread, load_elem, store_int_or};
use super::elementwise::index_val;
use super::{no, R};
use crate::graph::{ComplexOp, DType, Graph, Op};
use crate::kernels::index::{index_of, Index};
use crate::scalar::{BinOp, Cmp, Rnd, Ty, UnOp};
use crate::tile::build::{dimm, imm, Builder};
use crate::tile::ir::{Kernel, Operand, ParamRole, Type, Value};
use crate::tile::TileKernel;

/// Where an operand's elements come from.
#[derive(Clone, Copy)]
enum Src {
    /// A Python scalar: `(value, 0)`.
    Const(f64),
    /// A view of `d` elements, indexed from the output's index by `Index`.
    View(Value, DType, Index),
}

/// The word dtype of a complex dtype's parts (the view a kernel declares for it).
fn word(d: DType) -> DType {
    if d == DType::C128 {
        DType::F64
    } else {
        DType::F32
    }
}

/// The Tile IR of a complex elementwise kernel over `n` elements, `vector` per thread.
pub fn build(g: &Graph, tk: &TileKernel, n: u64, vector: u32) -> R<Kernel> {
    let Some(&Op::Complex { op, a, b: second }) = g.op(tk.root) else {
        return no("not a complex op");
    };
    let operands: Vec<_> = std::iter::once(a).chain(second).collect();
    let od = tk.ty.dtype;
    let wide_d = |d: DType| matches!(d, DType::C128 | DType::F64);
    let mut wide = wide_d(od);
    for v in &operands {
        wide |= g.ty(*v).is_some_and(|t| wide_d(t.dtype));
    }
    let ty = if wide { Ty::F64 } else { Ty::F32 };
    let mut bld = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let b = &mut bld;
    let mut srcs = vec![];
    let mut next = 0;
    for v in &operands {
        let Some(t) = g.ty(*v) else {
            return no("an untyped operand");
        };
        if let Some(Op::Const { value }) = g.op(*v) {
            srcs.push(Src::Const(value.as_f64()));
            continue;
        }
        let ix = index_of(&t.shape, &tk.ty.shape)?;
        b.at(g.span(*v));
        let view_d = if t.dtype.is_complex() {
            word(t.dtype)
        } else {
            t.dtype
        };
        let p = b.param(format!("in{next}"), Type::Global(view_d), ParamRole::Input);
        next += 1;
        srcs.push(Src::View(p, t.dtype, ix));
    }
    if next != tk.inputs.len() {
        return no("operands that are not the kernel's inputs");
    }
    b.at(tk.span);
    let out_view = if od.is_complex() { word(od) } else { od };
    let out = b.param("out", Type::Global(out_view), ParamRole::Output);
    let Ok(n32) = u32::try_from(n) else {
        return no("size");
    };
    let nr = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(n32));
    let gid = global_thread(b);
    let v = vector.max(1);
    let base = b.mul(Ty::U32, gid, imm(i64::from(v)));
    let zero = fconst(ty, 0.0);
    for e in 0..v {
        let i = if e == 0 {
            base
        } else {
            b.add(Ty::U32, base, imm(i64::from(e)))
        };
        let ok = b.cmp(Cmp::Lt, Ty::U32, i, nr);
        // each operand as (re, im) of the compute type
        let mut xs: Vec<(Operand, Operand)> = vec![];
        for s in &srcs {
            xs.push(match *s {
                Src::Const(c) => (fconst(ty, c), zero),
                Src::View(p, d, ix) => {
                    let j = index_val(b, ix, i);
                    if d.is_complex() {
                        let pty = if d == DType::C128 { Ty::F64 } else { Ty::F32 };
                        let j2 = b.mul(Ty::U32, j, imm(2));
                        let pz = fconst(pty, 0.0);
                        let w = b.load(pty, p, j2, Some(ok), &[pz, pz]);
                        let widen = |b: &mut Builder, x: Value| -> Operand {
                            if pty == ty {
                                x.into()
                            } else {
                                b.cast(Ty::F64, Ty::F32, None, x).into()
                            }
                        };
                        (widen(b, w[0]), widen(b, w[1]))
                    } else {
                        (load_elem(b, ty, d, p, j, Some(ok)).into(), zero)
                    }
                }
            });
        }
        let (x, y) = (xs[0], xs.get(1).copied().unwrap_or((zero, zero)));
        let mv = |b: &mut Builder, o: Operand| -> Value {
            match o {
                Operand::Value(v) => v,
                other => b.mov(ty, other),
            }
        };
        let result: Result<(Value, Value), Value> = match op {
            ComplexOp::Real => Err(mv(b, x.0)),
            ComplexOp::Imag => Err(mv(b, x.1)),
            ComplexOp::Abs => Err(modulus(b, ty, x, od)),
            ComplexOp::Conj => Ok((mv(b, x.0), b.unary(UnOp::Neg, ty, x.1))),
            ComplexOp::Neg => Ok((b.unary(UnOp::Neg, ty, x.0), b.unary(UnOp::Neg, ty, x.1))),
            ComplexOp::Make => Ok((mv(b, x.0), mv(b, y.0))),
            ComplexOp::Add => Ok((b.add(ty, x.0, y.0), b.add(ty, x.1, y.1))),
            ComplexOp::Sub => Ok((b.sub(ty, x.0, y.0), b.sub(ty, x.1, y.1))),
            ComplexOp::Mul => {
                // (ac − bd) + (ad + bc)i, each product rounded as the cpu rounds it
                let ac = b.mul(ty, x.0, y.0);
                let bd = b.mul(ty, x.1, y.1);
                let ad = b.mul(ty, x.0, y.1);
                let bc = b.mul(ty, x.1, y.0);
                Ok((b.sub(ty, ac, bd), b.add(ty, ad, bc)))
            }
            ComplexOp::Angle => {
                let wide = |b: &mut Builder, o: Operand| -> Value {
                    if ty == Ty::F64 {
                        mv(b, o)
                    } else {
                        b.cast(Ty::F64, Ty::F32, None, o)
                    }
                };
                let (re, im) = (wide(b, x.0), wide(b, x.1));
                let a = atan2(b, im, re);
                Err(if ty == Ty::F64 {
                    a
                } else {
                    b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), a)
                })
            }
        };
        match result {
            Ok((re, im)) => {
                let i2 = b.mul(Ty::U32, i, imm(2));
                // a c64 result of fp64 arithmetic (an fp64 operand gives c128: never here)
                b.store(ty, out, i2, &[re.into(), im.into()], Some(ok));
            }
            Err(r) => store_int_or(b, ty, od, out, i, r, Some(ok)),
        }
    }
    Ok(bld.finish())
}

/// `|x|` of `(re, im)` in `ty`: for an fp32 result, in fp64 and rounded by the store; for an
/// fp64 one, scaled by the larger part.
fn modulus(b: &mut Builder, ty: Ty, (re, im): (Operand, Operand), od: DType) -> Value {
    if od == DType::F64 {
        let ar = b.unary(UnOp::Abs, ty, re);
        let ai = b.unary(UnOp::Abs, ty, im);
        let m = b.bin(BinOp::Max, ty, ar, ai);
        let s = b.bin(BinOp::Min, ty, ar, ai);
        let r = b.bin(BinOp::Div, ty, s, m);
        let r2 = b.fma(ty, r, r, fconst(ty, 1.0));
        let q = b.unary(UnOp::Sqrt, ty, r2);
        let v = b.mul(ty, m, q);
        // 0/0: both parts zero
        let z = b.cmp(Cmp::Eq, ty, m, fconst(ty, 0.0));
        return b.select(ty, z, fconst(ty, 0.0), v);
    }
    let wide = |b: &mut Builder, x: Operand| -> Value {
        if ty == Ty::F64 {
            match x {
                Operand::Value(v) => v,
                other => b.mov(Ty::F64, other),
            }
        } else {
            b.cast(Ty::F64, Ty::F32, None, x)
        }
    };
    let (r, i) = (wide(b, re), wide(b, im));
    let rr = b.mul(Ty::F64, r, r);
    let s = b.fma(Ty::F64, i, i, rr);
    let m = b.unary(UnOp::Sqrt, Ty::F64, s);
    if ty == Ty::F64 {
        m
    } else {
        b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), m)
    }
}

/// `atan2(y, x)` in f64, as C's for finite, infinite and signed-zero operands (NaN in, NaN
/// out): `t` = the smaller magnitude over the larger, reduced twice by
/// `atan t = 2·atan(t / (1 + √(1 + t²)))` to `t ≤ tan(π/16)`, where 13 terms of the series
/// `Σ (−1)^k t^(2k+1)/(2k+1)` are below an ulp; then the octant (`π/2 − a` when `|y| > |x|`,
/// `π − a` for a negative `x`, the sign of `y`).
fn atan2(b: &mut Builder, y: Value, x: Value) -> Value {
    let f = Ty::F64;
    let ax = b.unary(UnOp::Abs, f, x);
    let ay = b.unary(UnOp::Abs, f, y);
    let mx = b.bin(BinOp::Max, f, ax, ay);
    let mn = b.bin(BinOp::Min, f, ax, ay);
    let t = b.bin(BinOp::Div, f, mn, mx);
    // 0/0: 0; ∞/∞: 1 (atan2(±∞, ±∞) is an odd multiple of π/4)
    let zero = b.cmp(Cmp::Eq, f, mx, dimm(0.0));
    let t = b.select(f, zero, dimm(0.0), t);
    let inf = b.cmp(Cmp::Eq, f, mn, dimm(f64::INFINITY));
    let mut u = b.select(f, inf, dimm(1.0), t);
    for _ in 0..2 {
        let s = b.fma(f, u, u, dimm(1.0));
        let r = b.unary(UnOp::Sqrt, f, s);
        let d = b.add(f, r, dimm(1.0));
        u = b.bin(BinOp::Div, f, u, d);
    }
    let u2 = b.mul(f, u, u);
    let coef = |k: i32| f64::from(if k % 2 == 0 { 1 } else { -1 }) / f64::from(2 * k + 1);
    let mut p = b.mov(f, dimm(coef(12)));
    for k in (0..12).rev() {
        p = b.fma(f, p, u2, dimm(coef(k)));
    }
    let a = b.mul(f, u, p);
    let a = b.mul(f, a, dimm(4.0));
    let swap = b.cmp(Cmp::Gt, f, ay, ax);
    let a2 = b.sub(f, dimm(std::f64::consts::FRAC_PI_2), a);
    let a = b.select(f, swap, a2, a);
    // a negative x, −0 included: its sign bit
    let xb = b.bitcast(Ty::B64, x);
    let neg = b.cmp(Cmp::Lt, Ty::S64, xb, imm(0));
    let a3 = b.sub(f, dimm(std::f64::consts::PI), a);
    let a = b.select(f, neg, a3, a);
    let a = super::values::copysign(b, f, a, y);
    let nan = b.cmp(Cmp::Nan, f, x, y);
    let sum = b.add(f, x, y);
    b.select(f, nan, sum, a)
}
