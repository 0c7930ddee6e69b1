//! The derivatives of the FFT family and of the complex ops, with PyTorch's convention: the
//! cotangent of a complex value is `∂L/∂re + i·∂L/∂im` (the conjugate Wirtinger derivative
//! of the real loss, times 2), so a linear map `y = A·x` sends `ȳ` to `A^H·ȳ`, and the
//! cotangent of a real operand is the real part of what a complex one would get.
//!
//! The transforms' adjoints are transforms: `fft` with norm `N` is `ifft` with `N` swapped
//! (`backward` ↔ `forward`, `ortho` kept: the same factor on the other side); `rfft`'s is
//! the zero-padded half spectrum through `ifft` (the padding is the `fft` op's own, as NumPy's
//! `n=`), real part taken; `irfft`'s is `irfft_adjoint` (the real transform with the bins
//! counted twice by the Hermitian extension doubled). The input's placement in the line
//! (`n=` padding or truncation, and the spectral rewrite's embedding) is undone by a slice of
//! the positions the input occupied, zeros for the elements the line dropped.

use super::*;
use crate::graph::{ComplexOp, FftEmbed, FftKind, FftNorm, SliceItem};

/// `backward` ↔ `forward`: the norm whose factor on the opposite direction is the same.
fn swapped(n: FftNorm) -> FftNorm {
    match n {
        FftNorm::Backward => FftNorm::Forward,
        FftNorm::Forward => FftNorm::Backward,
        FftNorm::Ortho => FftNorm::Ortho,
    }
}

pub(crate) fn cplx(g: &mut Graph, op: ComplexOp, a: ValueId, b: Option<ValueId>) -> R<ValueId> {
    emit(g, Op::Complex { op, a, b })
}

/// `zeros` of `shape` and dtype `d`.
fn zeros(g: &mut Graph, d: crate::graph::DType, shape: &[usize]) -> R<ValueId> {
    let z = konst(g, 0.0, d)?;
    broadcast_to(g, z, shape)
}

/// The cotangent of an operand of dtype `d` from a complex one: itself, or its real part for a
/// real operand.
fn to_operand(g: &mut Graph, dz: ValueId, x: ValueId) -> R<ValueId> {
    if ty(g, x)?.dtype.is_complex() || !ty(g, dz)?.dtype.is_complex() {
        Ok(dz)
    } else {
        cplx(g, ComplexOp::Real, dz, None)
    }
}

/// The adjoint of placing `m` elements along `axis` in a line of `n` (element `j` at
/// `lo + j·step`, those past `n` dropped): `z`'s positions the elements occupied, zeros for
/// the dropped ones.
fn unembed(g: &mut Graph, z: ValueId, axis: usize, m: usize, e: FftEmbed) -> R<ValueId> {
    let tz = ty(g, z)?;
    let n = tz.shape[axis];
    let step = e.step.max(1);
    let kept = if e.lo >= n {
        0
    } else {
        m.min((n - e.lo - 1) / step + 1)
    };
    let mut shape = tz.shape.clone();
    shape[axis] = m;
    if kept == 0 {
        return zeros(g, tz.dtype, &shape);
    }
    let taken = if e.lo == 0 && step == 1 && kept == n {
        z
    } else {
        let mut items = vec![full(); axis + 1];
        items[axis] = SliceItem::Range {
            start: Some(e.lo as i64),
            stop: Some((e.lo + step * (kept - 1) + 1) as i64),
            step: (step > 1).then_some(step as i64),
        };
        emit(g, Op::Slice { x: z, items })?
    };
    if kept == m {
        return Ok(taken);
    }
    let mut zs = shape.clone();
    zs[axis] = m - kept;
    let pad = zeros(g, tz.dtype, &zs)?;
    emit(
        g,
        Op::Concat {
            xs: vec![taken, pad],
            axis,
        },
    )
}

fn full() -> SliceItem {
    SliceItem::Range {
        start: None,
        stop: None,
        step: None,
    }
}

/// The cotangent of an [`Op::Fft`]'s operand; `None` for `irfft_adjoint` (the derivatives'
/// own op, not differentiated again).
pub(super) fn fft(g: &mut Graph, op: &Op, dy: ValueId) -> R<Option<ValueId>> {
    let &Op::Fft {
        x,
        kind,
        axis,
        n,
        norm,
        embed,
    } = op
    else {
        return Ok(None);
    };
    let m = ty(g, x)?.shape[axis];
    let back = |g: &mut Graph, kind: FftKind, v: ValueId| {
        emit(
            g,
            Op::Fft {
                x: v,
                kind,
                axis,
                n,
                norm: swapped(norm),
                embed: FftEmbed::default(),
            },
        )
    };
    Ok(Some(match kind {
        FftKind::Forward | FftKind::Inverse | FftKind::RealForward => {
            // fft's adjoint is the inverse direction, ifft's the forward one; rfft's the
            // inverse of the half spectrum zero-padded to n
            let dir = if kind == FftKind::Inverse {
                FftKind::Forward
            } else {
                FftKind::Inverse
            };
            let z = back(g, dir, dy)?;
            let z = to_operand(g, z, x)?;
            unembed(g, z, axis, m, embed)?
        }
        FftKind::RealInverse => back(g, FftKind::RealInverseAdjoint, dy)?,
        FftKind::RealInverseAdjoint => return Ok(None),
    }))
}

/// The cotangents of an [`Op::Complex`]'s operands given the result `y` and its cotangent.
pub(super) fn complex(
    g: &mut Graph,
    op: ComplexOp,
    a: ValueId,
    b: Option<ValueId>,
    y: ValueId,
    dy: ValueId,
) -> R<Vec<Option<ValueId>>> {
    let d = ty(g, dy)?.dtype;
    let sa = ty(g, a)?.shape;
    let is_const = |g: &Graph, v: ValueId| matches!(g.op(v), Some(Op::Const { .. }));
    Ok(match op {
        // the zero part a `const` (the complex kernel reads it as an immediate)
        ComplexOp::Real => {
            let z = konst(g, 0.0, d)?;
            vec![Some(cplx(g, ComplexOp::Make, dy, Some(z))?)]
        }
        ComplexOp::Imag => {
            let z = konst(g, 0.0, d)?;
            vec![Some(cplx(g, ComplexOp::Make, z, Some(dy))?)]
        }
        ComplexOp::Conj | ComplexOp::Neg => vec![Some(cplx(g, op, dy, None)?)],
        ComplexOp::Abs | ComplexOp::Angle => {
            // abs: ȳ·z/|z|; angle: ȳ·i·z/|z|² (0 where z = 0, as PyTorch)
            let r = if op == ComplexOp::Abs {
                y
            } else {
                let m = cplx(g, ComplexOp::Abs, a, None)?;
                bin(g, BinaryOp::Mul, m, m)?
            };
            let zero = konst(g, 0.0, d)?;
            let at0 = bin(g, BinaryOp::Eq, r, zero)?;
            let q = bin(g, BinaryOp::Div, dy, r)?;
            let f = select(g, at0, zero, q)?;
            let f = if op == ComplexOp::Abs {
                f
            } else {
                let z = konst(g, 0.0, d)?;
                cplx(g, ComplexOp::Make, z, Some(f))?
            };
            vec![Some(cplx(g, ComplexOp::Mul, a, Some(f))?)]
        }
        ComplexOp::Make => {
            let Some(b) = b else { return Ok(vec![None]) };
            let sb = ty(g, b)?.shape;
            let re = cplx(g, ComplexOp::Real, dy, None)?;
            let im = cplx(g, ComplexOp::Imag, dy, None)?;
            vec![Some(sum_to(g, re, &sa)?), Some(sum_to(g, im, &sb)?)]
        }
        ComplexOp::Add | ComplexOp::Sub | ComplexOp::Mul => {
            let Some(b) = b else { return Ok(vec![None]) };
            let sb = ty(g, b)?.shape;
            // the other operand, conjugated (a Python scalar is real)
            let conj_of = |g: &mut Graph, v: ValueId| -> R<ValueId> {
                if !is_const(g, v) && ty(g, v)?.dtype.is_complex() {
                    cplx(g, ComplexOp::Conj, v, None)
                } else {
                    Ok(v)
                }
            };
            let (da, db) = match op {
                ComplexOp::Add => (dy, dy),
                ComplexOp::Sub => (dy, cplx(g, ComplexOp::Neg, dy, None)?),
                _ => {
                    let cb = conj_of(g, b)?;
                    let ca = conj_of(g, a)?;
                    (
                        cplx(g, ComplexOp::Mul, dy, Some(cb))?,
                        cplx(g, ComplexOp::Mul, dy, Some(ca))?,
                    )
                }
            };
            let da = to_operand(g, da, a)?;
            let db = to_operand(g, db, b)?;
            vec![Some(sum_to(g, da, &sa)?), Some(sum_to(g, db, &sb)?)]
        }
    })
}
