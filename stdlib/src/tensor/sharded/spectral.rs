//! The FFT family and the complex parts on sharded tensors.
//!
//! A transform along a dimension that is not split runs on each device's shard, with no
//! communication. Along a split dimension it is the transpose algorithm of distributed FFTs:
//! an `all_to_all` moves the split to another dimension (the largest one not split), each
//! device transforms its now whole lines, and a second `all_to_all` moves the split back, so
//! the result has the operand's layout (shards cut as `torch.chunk` cuts them, so an uneven
//! split is one too; when no other dimension has at least as many lines as the axis has
//! devices, the transformed dimension is gathered instead: `all_gather`, each device keeping
//! its slice of the result). A 2-D transform is two of these in the eager form's
//! order, so for rows split over an axis it is local transforms of the rows, an `all_to_all`,
//! local transforms of the columns and an `all_to_all` back. Each line is transformed exactly as the
//! unsharded op transforms it, so the result is bit-identical to the unsharded one.

use super::*;
use crate::tensor::op::eager::{fft1_args, fft1_on, fft2_args, fft2_on};
use crate::tensor::op::table::Call;

type R = Result<Value, Diagnostic>;
type Transform = fn(&Tensor, Option<i64>, isize, rtm::FftNorm) -> rtm::Result<Tensor>;

fn transform_of(name: &str) -> Transform {
    match name {
        "fft" => rtm::fft,
        "ifft" => rtm::ifft,
        "rfft" => rtm::rfft,
        _ => rtm::irfft,
    }
}

/// The 1-D transform `name` of `x` along `axis` (see the module docs for the collectives).
fn along(
    x: &Sv,
    name: &str,
    n: Option<i64>,
    axis: usize,
    norm: rtm::FftNorm,
    span: Span,
) -> Result<Sv, Diagnostic> {
    let x = settle(x)?;
    let keep = x.s.layout.clone();
    let shape = x.s.shape.clone();
    let f = transform_of(name);
    let ax = axis as isize;
    let mut work = keep.clone();
    // the result has the operand's layout
    let back = keep.clone();
    if let Some(a) = keep.dims[axis] {
        work.dims[axis] = None;
        // the split moves to the largest other dimension with a line for every device
        let k = x.s.mesh.shape.shape[a].max(1);
        let other = (0..shape.len())
            .filter(|&d| d != axis && keep.dims[d].is_none() && shape[d] >= k)
            .max_by_key(|&d| (shape[d], d));
        if let Some(d) = other {
            work.dims[d] = Some(a);
        }
    }
    let x = bring(&x, &work).map_err(|d| d.or_at(span))?;
    let probe = Tensor::abstract_tensor(&x.s.local_shape(), x.s.dtype)
        .and_then(|t| f(&t, n, ax, norm))
        .map_err(|e| rt_at(e, span))?;
    let len = probe.shape().get(axis).copied().unwrap_or(1).max(2) as f64;
    let r = kernel(
        name,
        &[x],
        work,
        probe.dtype(),
        5.0 * len.log2(),
        0.0,
        |t| f(&t[0], n, ax, norm),
    )
    .map_err(|d| d.or_at(span))?;
    bring(&r, &back).map_err(|d| d.or_at(span))
}

fn sharded_x(c: &Call) -> Result<Sv, Diagnostic> {
    let x = need(&c.a, 0, c.span)?;
    sv_of(&x.value)
        .ok_or_else(|| Diagnostic::new(Code::E0101, "expected a sharded tensor").at(x.span))
}

fn abstract_full(x: &Sv, span: Span) -> Result<Tensor, Diagnostic> {
    Tensor::abstract_tensor(&x.s.shape, x.s.dtype).map_err(|e| rt_at(e, span))
}

/// `fft ifft rfft irfft` of a sharded tensor.
pub fn m_fft1(_: &mut Interp, c: &Call) -> R {
    let a = fft1_args(c)?;
    let x = sharded_x(c)?;
    // the eager form on the whole shape: the result's type and every error
    fft1_on(&abstract_full(&x, c.span)?, c, &a)?;
    let axis = norm_axis(a.axis as i64, x.s.shape.len(), c.span)?;
    along(&x, c.row.name, a.n, axis, a.norm, c.span).map(value_of)
}

/// `fft2 ifft2 rfft2 irfft2` of a sharded tensor: two 1-D transforms.
pub fn m_fft2(_: &mut Interp, c: &Call) -> R {
    let (s, norm) = fft2_args(c)?;
    let x = sharded_x(c)?;
    fft2_on(&abstract_full(&x, c.span)?, c, s, norm)?;
    let nd = x.s.shape.len();
    let (s0, s1) = match s {
        Some([a, b]) => (Some(a), Some(b)),
        None => (None, None),
    };
    let steps = match c.row.name {
        "fft2" => [("fft", s1, nd - 1), ("fft", s0, nd - 2)],
        "ifft2" => [("ifft", s1, nd - 1), ("ifft", s0, nd - 2)],
        "rfft2" => [("rfft", s1, nd - 1), ("fft", s0, nd - 2)],
        _ => {
            let m = x.s.shape[nd - 1] as i64;
            [
                ("ifft", s0, nd - 2),
                ("irfft", Some(s1.unwrap_or(2 * (m - 1))), nd - 1),
            ]
        }
    };
    let mut v = x;
    for (name, n, axis) in steps {
        v = along(&v, name, n, axis, norm, c.span)?;
    }
    Ok(value_of(v))
}

/// `real imag conj angle` of a sharded tensor: elementwise, per device.
pub fn m_part(_: &mut Interp, c: &Call) -> R {
    let x = need(&c.a, 0, c.span)?;
    let f: fn(&Tensor) -> rtm::Result<Tensor> = match c.row.name {
        "real" => rtm::real,
        "imag" => rtm::imag,
        "conj" => rtm::conj,
        _ => rtm::angle,
    };
    map_unary(c.row.name, &x.value, c.span, f)
}
