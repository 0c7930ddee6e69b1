//! `allclose` and `max_abs_diff`, in f64 with broadcasting (complex128 and the modulus of the
//! difference when an operand is complex).

use num_complex::Complex64;

use crate::error::Result;
use crate::ops::kernel::zip2;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

fn read(t: &Tensor, op: &str) -> Result<Vec<f64>> {
    Ok(t.storage(op)?.to_f64(t.dtype()).into_owned())
}

/// The values as complex128, when either operand is complex (`|a - b|` is then the modulus,
/// as NumPy's `abs`).
fn read_complex(
    a: &Tensor,
    b: &Tensor,
    op: &str,
) -> Result<Option<(Vec<Complex64>, Vec<Complex64>)>> {
    if !a.dtype().is_complex() && !b.dtype().is_complex() {
        return Ok(None);
    }
    Ok(Some((
        a.storage(op)?.to_c128(a.dtype()).into_owned(),
        b.storage(op)?.to_c128(b.dtype()).into_owned(),
    )))
}

fn finite(z: Complex64) -> bool {
    z.re.is_finite() && z.im.is_finite()
}

/// NumPy's `allclose`: `|a - b| <= atol + rtol·|b|` everywhere (NaN is never close; equal
/// infinities are).
pub fn allclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64) -> Result<bool> {
    let shape = broadcast_shapes(a.shape(), b.shape(), "allclose")?;
    if let Some((x, y)) = read_complex(a, b, "allclose")? {
        let close = zip2(&shape, &x, a.shape(), &y, b.shape(), |x, y| {
            x == y || (finite(x) && finite(y) && (x - y).norm() <= atol + rtol * y.norm())
        });
        return Ok(close.iter().all(|&c| c));
    }
    let (x, y) = (read(a, "allclose")?, read(b, "allclose")?);
    let close = zip2(&shape, &x, a.shape(), &y, b.shape(), |x: f64, y: f64| {
        x == y || (x.is_finite() && y.is_finite() && (x - y).abs() <= atol + rtol * y.abs())
    });
    Ok(close.iter().all(|&c| c))
}

/// The largest `|a - b|` (NaN if any difference is NaN; 0 for empty tensors).
pub fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let shape = broadcast_shapes(a.shape(), b.shape(), "max_abs_diff")?;
    let d = if let Some((x, y)) = read_complex(a, b, "max_abs_diff")? {
        zip2(&shape, &x, a.shape(), &y, b.shape(), |x, y| {
            if x == y {
                0.0
            } else {
                (x - y).norm()
            }
        })
    } else {
        let (x, y) = (read(a, "max_abs_diff")?, read(b, "max_abs_diff")?);
        zip2(&shape, &x, a.shape(), &y, b.shape(), |x: f64, y: f64| {
            if x == y {
                0.0
            } else {
                (x - y).abs()
            }
        })
    };
    Ok(d.iter().fold(0.0f64, |m, &v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    }))
}
