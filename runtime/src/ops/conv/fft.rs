//! `conv1d`/`conv2d` through the FFT (`algorithm="fft"`).

use super::{name, no_complex, plan, result_dtype, ConvSpec};
use crate::dtype::DType;
use crate::error::Result;
use crate::memory;
use crate::tensor::Tensor;

/// [`conv`] through the FFT: the padded input and the dilated kernel transformed over a plane
/// just large enough for the stride-1 result (`(OH−1)·sh + dh·(kh−1) + 1` rows, likewise
/// columns: the circular correlation then never wraps), multiplied with the kernel's conjugate
/// spectrum and summed over each group's channels in the frequency domain, transformed back,
/// strided. In c64 (c128 for fp64 results), so the error is the FFT's:
/// `|y_fft − y| ≲ 6·u·log2(P)·Σ_c ‖x_c‖₂·‖w_c‖₂` per output (`u` the unit roundoff, `P` the
/// plane's size, the sum over the channels of a window) rather than the direct sum's.
pub fn conv_fft(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, spec: &ConvSpec) -> Result<Tensor> {
    use crate::ops::elementwise::{binary, BinaryOp};
    use crate::ops::fft::{fft2d, Kind2, Norm};
    use crate::ops::reduce::{reduce, ReduceOp};
    use crate::ops::shape_ops::{concat, IndexItem};
    let p = plan(x.shape(), w.shape(), bias.map(|b| b.shape()), spec)?;
    no_complex(x, w, bias, spec)?;
    let dtype = result_dtype(x.dtype(), w.dtype(), bias.map(|b| b.dtype()));
    if x.is_abstract() || w.is_abstract() || bias.is_some_and(|b| b.is_abstract()) {
        return Tensor::abstract_tensor(&p.out_shape, dtype);
    }
    memory::check_shape_alloc(&p.out_shape, dtype)?;
    let cd = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.size.input, p.size.kernel, p.size.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (p.stride, p.dilation, p.pad);
    let (n, c, o, g) = (p.size.batch, p.size.cin, p.size.cout, p.size.groups);
    let (cg, og) = (c / g, o / g);
    // the plane: the stride-1 rows the result samples plus the kernel's span
    let (hp, wp) = (
        (oh - 1) * sh + dh * (kh - 1) + 1,
        (ow - 1) * sw + dw * (kw - 1) + 1,
    );
    memory::check_shape_alloc(&[n.max(o), c.max(cg), hp, wp], DType::C128)?;
    let op = name(spec.dims);
    let xv = x.storage(op)?.to_f64(x.dtype());
    let wv = w.storage(op)?.to_f64(w.dtype());
    // the input, padded, cut to the plane
    let mut xpad = vec![0.0f64; n * c * hp * wp];
    for img in 0..n * c {
        for r in 0..hp {
            let Some(sr) = r.checked_sub(ph).filter(|&v| v < ih) else {
                continue;
            };
            for q in 0..wp {
                if let Some(sq) = q.checked_sub(pw).filter(|&v| v < iw) {
                    xpad[(img * hp + r) * wp + q] = xv[(img * ih + sr) * iw + sq];
                }
            }
        }
    }
    // the kernel, dilated, in the corner of the plane
    let mut wpad = vec![0.0f64; o * cg * hp * wp];
    for kk in 0..o * cg {
        for i in 0..kh {
            for j in 0..kw {
                wpad[(kk * hp + i * dh) * wp + j * dw] = wv[(kk * kh + i) * kw + j];
            }
        }
    }
    let xs = Tensor::from_f64(&[n, c, hp, wp], xpad, cd)?;
    let ws = Tensor::from_f64(&[o, cg, hp, wp], wpad, cd)?;
    let plane = Some([hp as i64, wp as i64]);
    let xf = fft2d(&xs, Kind2::Rfft2, plane, Norm::Backward)?;
    let wf = crate::ops::complex::conj(&fft2d(&ws, Kind2::Rfft2, plane, Norm::Backward)?)?;
    let wf_cols = xf.shape()[3];
    let range = |a: usize, b: usize| IndexItem::Slice {
        start: Some(a as i64),
        stop: Some(b as i64),
        step: None,
    };
    let all = || IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let mut parts = Vec::with_capacity(g);
    for gi in 0..g {
        let xg = xf
            .index(&[all(), range(gi * cg, (gi + 1) * cg)])?
            .reshape(&[n as i64, 1, cg as i64, hp as i64, wf_cols as i64])?;
        let wg = wf.index(&[range(gi * og, (gi + 1) * og)])?.reshape(&[
            1,
            og as i64,
            cg as i64,
            hp as i64,
            wf_cols as i64,
        ])?;
        let prod = binary(BinaryOp::Mul, &xg, &wg)?;
        parts.push(reduce(&prod, ReduceOp::Sum, Some(2), false)?);
    }
    let yf = if parts.len() == 1 {
        parts.remove(0)
    } else {
        concat(&parts, 1)?
    };
    let y = fft2d(&yf, Kind2::Irfft2, plane, Norm::Backward)?;
    let step = |s: usize, count: usize| IndexItem::Slice {
        start: Some(0),
        stop: Some(((count - 1) * s + 1) as i64),
        step: Some(s as i64),
    };
    let mut y = y.index(&[all(), all(), step(sh, oh), step(sw, ow)])?;
    if let Some(b) = bias {
        let b = b.cast(cd)?.reshape(&[1, o as i64, 1, 1])?;
        y = binary(BinaryOp::Add, &y, &b)?;
    }
    let shape: Vec<i64> = p.out_shape.iter().map(|&d| d as i64).collect();
    y.cast(dtype)?.reshape(&shape)
}
