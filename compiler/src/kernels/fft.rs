//! The spectral rewrite's kernels as Tile IR: an FFT along an axis ([`fft`]) and the
//! frequency-domain product of a convolution ([`spectral_mul`]).
//!
//! **FFT** ([`crate::tile::Shape::Fft`]): one block per `L` adjacent lines of `n` (a power of
//! two; 4096 at most in c64, 2048 in c128; `L` a power of two, 1 along the last axis, up to
//! 32 along another so that a warp's loads and stores of one position touch adjacent words),
//! the Stockham radix-2 autosort algorithm in one shared buffer of `L·n` complex values
//! (position `p` of line `ℓ` at `p·L + ℓ`):
//! 1. the twiddles `e^{-2πi t/n}`, `t < n/2`, into a shared table (sine and cosine computed in
//!    fp64 and rounded once);
//! 2. the line into the buffer: element `j` of the input at `lo + j·step`, zeros elsewhere; a
//!    real input with zero imaginary parts; for `irfft`, the `n/2 + 1` frequencies extended by
//!    Hermitian symmetry (`X[n−p] = conj X[p]`, the imaginary parts of the zero and Nyquist
//!    frequencies dropped, as NumPy does);
//! 3. `log2 n` passes; in pass `s` (`Ns = 2^s`) butterfly `j < n/2` reads `a = v[j]` and
//!    `b = v[j + n/2]`, every thread reads all of its butterflies before a barrier, then writes
//!    `a ± b·w` to `2·j − k` and `2·j − k + Ns` (`k = j mod Ns`, `w` the twiddle
//!    `e^{∓2πi k/(2·Ns)}`) and a barrier ends the pass: the result is in natural order;
//! 4. the outputs (`n`, or `n/2 + 1` for `rfft` and the adjoint of `irfft`, the real parts
//!    for `irfft`) times the normalisation (doubled for the adjoint of `irfft` strictly
//!    between the zero and Nyquist bins), to global memory.
//!
//! A length that is not a power of two (up to 1024) replaces step 3 by the direct sum: each
//! output `Σ_j v[j]·w[(j·p) mod n]` over the line in shared memory, from a table of all `n`
//! twiddles (`O(n²)` per line; the cpu's mixed-radix and Bluestein transforms are faster for
//! long prime lengths).
//!
//! Element `p` of line `(o, i)` of a `[outer, len, inner]` tensor is at `(o·len + p)·inner +
//! i`; complex tensors are pairs of fp32 (fp64) words. In fp32 arithmetic for c64, fp64 for
//! c128. Parameters: x, out.
//!
//! **Product** ([`crate::tile::Shape::SpectralMul`]): one thread per output `(n, o, f)` of
//! `[N, O, F]`, `Σ_c x[n, g·C/G + c, f] · conj(w[o, c, f])` over the group's channels in
//! order. Parameters: x, w, out.

use super::blocks::{fconst, load_elem, store_int_or};
use super::R;
use crate::graph::{DType, FftKind, Graph};
use crate::scalar::{BinOp, Cmp, Dim, Rnd, SReg, Ty, UnOp};
use crate::tile::build::{dimm, imm, Builder};
use crate::tile::ir::{Kernel, Layout, MathFn, ParamRole, SharedBuf, Type, Value};
use crate::tile::{FftDims, TileKernel};

fn u(v: u32) -> crate::tile::ir::Operand {
    imm(i64::from(v))
}

/// `(re, im)` times `(wr, wi)`.
fn cmul(
    b: &mut Builder,
    ty: Ty,
    (re, im): (Value, Value),
    (wr, wi): (Value, Value),
) -> (Value, Value) {
    let t = b.mul(ty, im, wi);
    let nt = b.unary(UnOp::Neg, ty, t);
    let rr = b.fma(ty, re, wr, nt);
    let t2 = b.mul(ty, im, wr);
    let ii = b.fma(ty, re, wi, t2);
    (rr, ii)
}

/// Two consecutive words (a complex value) of `view` from word `idx`; masked off, zeros.
fn pair(b: &mut Builder, ty: Ty, view: Value, idx: Value, mask: Option<Value>) -> Vec<Value> {
    match mask {
        Some(m) => {
            let z = fconst(ty, 0.0);
            b.load(ty, view, idx, Some(m), &[z, z])
        }
        None => b.load_n(ty, ty, 2, view, idx, None, &[]),
    }
}

/// The Tile IR of an FFT kernel.
pub fn fft(g: &Graph, tk: &TileKernel, d: &FftDims) -> R<Kernel> {
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let (ty, word) = if d.wide {
        (Ty::F64, DType::F64)
    } else {
        (Ty::F32, DType::F32)
    };
    let eb: u32 = if d.wide { 8 } else { 4 };
    let in_dtype = match g.ty(tk.inputs[0]) {
        Some(t) => t.dtype,
        None => return super::no("an input without a type"),
    };
    let complex_in = in_dtype.is_complex();
    let x = b.param(
        "x",
        Type::Global(if complex_in { word } else { in_dtype }),
        ParamRole::Input,
    );
    let out = b.param("out", Type::Global(word), ParamRole::Output);
    let n = d.n;
    let half = n / 2;
    let threads = tk.block[0];
    let buf = |b: &mut Builder, name: &str, words: u32| {
        b.shared(
            name,
            SharedBuf {
                elem_bytes: eb,
                shape: vec![1, 1, words],
                layout: Layout {
                    pitch: words * eb,
                    swizzle: None,
                },
                align: 16,
            },
        )
    };
    let lines = d.lines.max(1);
    let lg = lines.trailing_zeros();
    // a length that is not a power of two: the direct sum (see the module docs)
    let direct = !n.is_power_of_two() || n < 2;
    let data = buf(&mut b, "lines", 2 * n * lines);
    let twid = buf(&mut b, "twiddles", if direct { 2 * n } else { n });
    let tid = b.special(SReg::Tid(Dim::X));
    let block = b.special(SReg::Ctaid(Dim::X));
    let per_outer = d.inner.div_ceil(lines);
    let o = b.bin(BinOp::Div, Ty::U32, block, u(per_outer));
    let first = {
        let t = b.bin(BinOp::Rem, Ty::U32, block, u(per_outer));
        b.mul(Ty::U32, t, u(lines))
    };
    // element p of line (o, i): (o·len + p)·inner + i
    let in_row = b.mul(Ty::U32, o, u(d.len_in * d.inner));
    let out_row = b.mul(Ty::U32, o, u(d.len_out * d.inner));
    let dbase = b.shared_addr(data);
    let tbase = b.shared_addr(twid);
    let slot = |b: &mut Builder, base: Value, p: Value| b.fma(Ty::U32, p, u(2 * eb), base);
    // index q of a block-wide loop as (line ℓ, position p); the line's `i`, whether it exists,
    // and the shared slot of (ℓ, p)
    let split = |b: &mut Builder, q: Value| -> (Value, Value, Value, Option<Value>, Value) {
        let (l, p) = if lines == 1 {
            (b.mov(Ty::U32, imm(0)), q)
        } else {
            (
                b.bin(BinOp::And, Ty::B32, q, u(lines - 1)),
                b.bin(BinOp::Shr, Ty::U32, q, u(lg)),
            )
        };
        let i = b.add(Ty::U32, first, l);
        let ok = (!d.inner.is_multiple_of(lines)).then(|| b.cmp(Cmp::Lt, Ty::U32, i, u(d.inner)));
        let at = b.fma(Ty::U32, p, u(lines), l);
        let sl = slot(b, dbase, at);
        (l, p, i, ok, sl)
    };
    let and = |b: &mut Builder, a: Option<Value>, c: Option<Value>| match (a, c) {
        (Some(a), Some(c)) => Some(b.bin(BinOp::And, Ty::Pred, a, c)),
        (a, None) => a,
        (None, c) => c,
    };
    // positions tid, tid + T, ... below `count`, with their masks (none when T divides it)
    let strided = |b: &mut Builder, count: u32| -> Vec<(Value, Option<Value>)> {
        (0..count.div_ceil(threads))
            .map(|r| {
                let p = b.add(Ty::U32, tid, u(r * threads));
                let m = (!count.is_multiple_of(threads) && (r + 1) * threads > count)
                    .then(|| b.cmp(Cmp::Lt, Ty::U32, p, u(count)));
                (p, m)
            })
            .collect()
    };
    let guarded = |b: &mut Builder, m: Option<Value>, f: &dyn Fn(&mut Builder)| match m {
        Some(m) => b.when(m, |b| f(b)),
        None => f(b),
    };

    // 1. twiddles: e^{-2πi t/n}
    for (t, m) in strided(&mut b, if direct { n } else { half }) {
        guarded(&mut b, m, &|b| {
            let tf = b.cast(Ty::F64, Ty::U32, Some(Rnd::Rn), t);
            let ang = b.mul(
                Ty::F64,
                tf,
                dimm(-2.0 * std::f64::consts::PI / f64::from(n)),
            );
            let c = b.math(MathFn::Cos, Ty::F64, &[ang.into()]);
            let s = b.math(MathFn::Sin, Ty::F64, &[ang.into()]);
            let (c, s) = if d.wide {
                (c, s)
            } else {
                (
                    b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), c),
                    b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), s),
                )
            };
            let a = slot(b, tbase, t);
            b.store_shared(ty, a, 0, &[c.into(), s.into()], None);
        });
    }

    // 2. the line
    let zero = fconst(ty, 0.0);
    for (q, m) in strided(&mut b, n * lines) {
        guarded(&mut b, m, &|b| {
            let (_, p, i, line_ok, sl) = split(b, q);
            let in_base = b.add(Ty::U32, in_row, i);
            let (re, im) = if d.kind == FftKind::RealInverse {
                // p ≤ n/2: X[p]; past it: conj X[n − p]
                let low = b.cmp(Cmp::Le, Ty::U32, p, u(half));
                let mirror = b.sub(Ty::U32, u(n), p);
                let src = b.select(Ty::U32, low, p, mirror);
                let at = b.fma(Ty::U32, src, u(d.inner), in_base);
                let at2 = b.mul(Ty::U32, at, imm(2));
                let v = pair(b, ty, x, at2, line_ok);
                let neg = b.unary(UnOp::Neg, ty, v[1]);
                let im = b.select(ty, low, v[1], neg);
                // the zero and (n even) Nyquist frequencies are real
                let edge0 = b.cmp(Cmp::Eq, Ty::U32, p, imm(0));
                let edge = if n.is_multiple_of(2) {
                    let edge1 = b.cmp(Cmp::Eq, Ty::U32, p, u(half));
                    b.bin(BinOp::Or, Ty::Pred, edge0, edge1)
                } else {
                    edge0
                };
                let im = b.select(ty, edge, zero, im);
                (v[0], im)
            } else {
                // element j = (p − lo)/step when that lands on the input
                let q = b.sub(Ty::U32, p, u(d.lo));
                let past = b.cmp(Cmp::Ge, Ty::U32, p, u(d.lo));
                let (j, ok) = if d.step == 1 {
                    (q, past)
                } else {
                    let j = b.bin(BinOp::Div, Ty::U32, q, u(d.step));
                    let r = b.bin(BinOp::Rem, Ty::U32, q, u(d.step));
                    let on = b.cmp(Cmp::Eq, Ty::U32, r, imm(0));
                    (j, b.bin(BinOp::And, Ty::Pred, past, on))
                };
                let inside = b.cmp(Cmp::Lt, Ty::U32, j, u(d.len_in));
                let ok = b.bin(BinOp::And, Ty::Pred, ok, inside);
                let ok = and(b, Some(ok), line_ok).unwrap_or(ok);
                let at = b.fma(Ty::U32, j, u(d.inner), in_base);
                if complex_in {
                    let at2 = b.mul(Ty::U32, at, imm(2));
                    let v = pair(b, ty, x, at2, Some(ok));
                    (v[0], v[1])
                } else {
                    let re = load_elem(b, ty, in_dtype, x, at, Some(ok));
                    (re, b.mov(ty, zero))
                }
            };
            b.store_shared(ty, sl, 0, &[re.into(), im.into()], None);
        });
    }
    b.barrier();

    // 3. the passes
    let inverse = d.kind.inverse();
    if direct {
        let outs = strided(&mut b, n * lines);
        direct_sums(&mut b, ty, d, dbase, tbase, &outs, &split);
    }
    let bfly = strided(&mut b, half * lines);
    let log_n = if direct { 0 } else { n.trailing_zeros() };
    for s in 0..log_n {
        let ns = 1u32 << s;
        // every butterfly's operands read before any is overwritten
        let reads: Vec<[Value; 4]> = bfly
            .iter()
            .map(|&(q, m)| {
                // masked-off lanes read slot 0 (in range) and write nothing
                let q = match m {
                    Some(m) => b.select(Ty::U32, m, q, imm(0)),
                    None => q,
                };
                let (_, _, _, _, a) = split(&mut b, q);
                let va = b.load_shared(ty, a, 0, 2);
                let vb = b.load_shared(ty, a, (half * lines * 2 * eb) as i32, 2);
                [va[0], va[1], vb[0], vb[1]]
            })
            .collect();
        b.barrier();
        for (&(q, m), v) in bfly.iter().zip(&reads) {
            guarded(&mut b, m, &|b| {
                let (l, j, _, _, _) = split(b, q);
                let k = b.bin(BinOp::And, Ty::B32, j, u(ns - 1));
                let (br, bi) = if s == 0 {
                    (v[2], v[3])
                } else {
                    let ti = b.bin(BinOp::Shl, Ty::B32, k, u(log_n - 1 - s));
                    let ta = slot(b, tbase, ti);
                    let w = b.load_shared(ty, ta, 0, 2);
                    let wi = if inverse {
                        b.unary(UnOp::Neg, ty, w[1])
                    } else {
                        w[1]
                    };
                    cmul(b, ty, (v[2], v[3]), (w[0], wi))
                };
                let (ar, ai) = (v[0], v[1]);
                let r0 = b.add(ty, ar, br);
                let i0 = b.add(ty, ai, bi);
                let r1 = b.sub(ty, ar, br);
                let i1 = b.sub(ty, ai, bi);
                // 2·j − k, then Ns further
                let j2 = b.add(Ty::U32, j, j);
                let dst = b.sub(Ty::U32, j2, k);
                let at = b.fma(Ty::U32, dst, u(lines), l);
                let a = slot(b, dbase, at);
                b.store_shared(ty, a, 0, &[r0.into(), i0.into()], None);
                let far = (ns * lines * 2 * eb) as i32;
                b.store_shared(ty, a, far, &[r1.into(), i1.into()], None);
            });
        }
        b.barrier();
    }

    // 4. the outputs
    let scale = fconst(ty, d.scale);
    for (q, m) in strided(&mut b, d.len_out * lines) {
        guarded(&mut b, m, &|b| {
            let (_, p, i, line_ok, a) = split(b, q);
            let v = b.load_shared(ty, a, 0, 2);
            let out_base = b.add(Ty::U32, out_row, i);
            let at = b.fma(Ty::U32, p, u(d.inner), out_base);
            if d.kind == FftKind::RealInverse {
                let re = b.mul(ty, v[0], scale);
                store_int_or(b, ty, word, out, at, re, line_ok);
            } else {
                // the adjoint of irfft: the bins strictly between 0 and n/2 doubled
                let scale = if d.kind == FftKind::RealInverseAdjoint {
                    let pm = b.sub(Ty::U32, p, imm(1));
                    let interior = b.cmp(Cmp::Lt, Ty::U32, pm, u(n.div_ceil(2) - 1));
                    let twice = fconst(ty, 2.0 * d.scale);
                    b.select(ty, interior, twice, scale).into()
                } else {
                    scale
                };
                let re = b.mul(ty, v[0], scale);
                let im = b.mul(ty, v[1], scale);
                let at2 = b.mul(Ty::U32, at, imm(2));
                b.store(ty, out, at2, &[re.into(), im.into()], line_ok);
            }
        });
    }
    Ok(b.finish())
}

/// Step 3 for a length `n` that is not a power of two: output `p` of line `ℓ` is
/// `Σ_j v[j]·w[(j·p) mod n]` over the line in shared memory (`w` the table of all `n`
/// twiddles, conjugated for an inverse transform), each thread's outputs in registers until
/// every thread has read the line, then written back in place.
#[allow(clippy::type_complexity)]
fn direct_sums(
    b: &mut Builder,
    ty: Ty,
    d: &FftDims,
    dbase: Value,
    tbase: Value,
    outs: &[(Value, Option<Value>)],
    split: &dyn Fn(&mut Builder, Value) -> (Value, Value, Value, Option<Value>, Value),
) {
    let n = d.n;
    let lines = d.lines.max(1);
    let eb: u32 = if d.wide { 8 } else { 4 };
    let inverse = d.kind.inverse();
    let mut sums = vec![];
    for &(q, m) in outs {
        // masked-off lanes sum line 0's position 0 (in range) and write nothing
        let q = match m {
            Some(m) => b.select(Ty::U32, m, q, imm(0)),
            None => q,
        };
        let (l, p, _, _, _) = split(b, q);
        let zero = fconst(ty, 0.0);
        let init = [b.mov(ty, zero), b.mov(ty, zero), b.mov(Ty::U32, imm(0))];
        let acc = b.for_rolled(imm(0), u(n), imm(1), &init, |b, j, acc| {
            // v[j] of line ℓ, and w[t] with t = j·p mod n carried
            let at = b.fma(Ty::U32, j, u(lines), l);
            let va = b.fma(Ty::U32, at, u(2 * eb), dbase);
            let v = b.load_shared(ty, va, 0, 2);
            let wa = b.fma(Ty::U32, acc[2], u(2 * eb), tbase);
            let w = b.load_shared(ty, wa, 0, 2);
            let wi = if inverse {
                b.unary(UnOp::Neg, ty, w[1])
            } else {
                w[1]
            };
            let (pr, pi) = cmul(b, ty, (v[0], v[1]), (w[0], wi));
            let re = b.add(ty, acc[0], pr);
            let im = b.add(ty, acc[1], pi);
            let t = b.add(Ty::U32, acc[2], p);
            let wrap = b.cmp(Cmp::Ge, Ty::U32, t, u(n));
            let tm = b.sub(Ty::U32, t, u(n));
            let t = b.select(Ty::U32, wrap, tm, t);
            vec![re.into(), im.into(), t.into()]
        });
        sums.push((q, m, acc[0], acc[1]));
    }
    b.barrier();
    for (q, m, re, im) in sums {
        let f = |b: &mut Builder| {
            let (_, _, _, _, sl) = split(b, q);
            b.store_shared(ty, sl, 0, &[re.into(), im.into()], None);
        };
        match m {
            Some(m) => b.when(m, f),
            None => f(b),
        }
    }
    b.barrier();
}

/// The Tile IR of a frequency-domain product kernel: `[batch, cin, cout, groups, bins]`.
pub fn spectral_mul(tk: &TileKernel, dims: [u32; 5], wide: bool) -> R<Kernel> {
    let [batch, cin, cout, groups, bins] = dims;
    let mut b = Builder::new(&tk.name, tk.span, tk.grid, tk.block);
    let (ty, word) = if wide {
        (Ty::F64, DType::F64)
    } else {
        (Ty::F32, DType::F32)
    };
    let x = b.param("x", Type::Global(word), ParamRole::Input);
    let w = b.param("w", Type::Global(word), ParamRole::Input);
    let out = b.param("out", Type::Global(word), ParamRole::Output);
    let cg = cin / groups.max(1);
    let og = cout / groups.max(1);
    let total = batch * cout * bins;
    let tid = b.special(SReg::Tid(Dim::X));
    let bx = b.special(SReg::Ctaid(Dim::X));
    let idx = b.fma(Ty::U32, bx, u(tk.block[0]), tid);
    let ok = b.cmp(Cmp::Lt, Ty::U32, idx, u(total));
    b.when(ok, |b| {
        let f = b.bin(BinOp::Rem, Ty::U32, idx, u(bins));
        let no = b.bin(BinOp::Div, Ty::U32, idx, u(bins));
        let oc = b.bin(BinOp::Rem, Ty::U32, no, u(cout));
        let img = b.bin(BinOp::Div, Ty::U32, no, u(cout));
        let grp = b.bin(BinOp::Div, Ty::U32, oc, u(og.max(1)));
        // x[img, grp·cg + c, f] and w[oc, c, f]
        let xfirst = {
            let t = b.mul(Ty::U32, img, u(cin));
            let t = b.fma(Ty::U32, grp, u(cg), t);
            b.fma(Ty::U32, t, u(bins), f)
        };
        let wfirst = b.fma(Ty::U32, oc, u(cg * bins), f);
        let zero = fconst(ty, 0.0);
        let init = [b.mov(ty, zero), b.mov(ty, zero)];
        let acc = b.for_(imm(0), u(cg), imm(1), &init, None, |b, c, acc| {
            let xi = b.fma(Ty::U32, c, u(bins), xfirst);
            let wi = b.fma(Ty::U32, c, u(bins), wfirst);
            let xi2 = b.mul(Ty::U32, xi, imm(2));
            let wi2 = b.mul(Ty::U32, wi, imm(2));
            let xv = pair(b, ty, x, xi2, None);
            let wv = pair(b, ty, w, wi2, None);
            // (xr + i·xi)·(wr − i·wi) = (xr·wr + xi·wi) + i·(xi·wr − xr·wi)
            let re = b.fma(ty, xv[0], wv[0], acc[0]);
            let re = b.fma(ty, xv[1], wv[1], re);
            let im = b.fma(ty, xv[1], wv[0], acc[1]);
            let t = b.mul(ty, xv[0], wv[1]);
            let im = b.sub(ty, im, t);
            vec![re.into(), im.into()]
        });
        let o2 = b.mul(Ty::U32, idx, imm(2));
        b.store(ty, out, o2, &[acc[0].into(), acc[1].into()], None);
    });
    Ok(b.finish())
}
