//! `allclose` and `max_abs_diff`, in f64 with broadcasting.

use crate::error::Result;
use crate::ops::kernel::zip2;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

fn read(t: &Tensor, op: &str) -> Result<Vec<f64>> {
    crate::ops::complex::real_only(&format!("op.{op}"), t.dtype())?;
    Ok(t.storage(op)?.to_f64(t.dtype()).into_owned())
}

/// NumPy's `allclose`: `|a - b| <= atol + rtol·|b|` everywhere (NaN is never close; equal
/// infinities are).
pub fn allclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64) -> Result<bool> {
    let shape = broadcast_shapes(a.shape(), b.shape(), "allclose")?;
    let (x, y) = (read(a, "allclose")?, read(b, "allclose")?);
    let close = zip2(&shape, &x, a.shape(), &y, b.shape(), |x: f64, y: f64| {
        x == y || (x.is_finite() && y.is_finite() && (x - y).abs() <= atol + rtol * y.abs())
    });
    Ok(close.iter().all(|&c| c))
}

/// The largest `|a - b|` (NaN if any difference is NaN; 0 for empty tensors).
pub fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let shape = broadcast_shapes(a.shape(), b.shape(), "max_abs_diff")?;
    let (x, y) = (read(a, "max_abs_diff")?, read(b, "max_abs_diff")?);
    let d = zip2(&shape, &x, a.shape(), &y, b.shape(), |x: f64, y: f64| {
        if x == y {
            0.0
        } else {
            (x - y).abs()
        }
    });
    Ok(d.iter().fold(0.0f64, |m, &v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    }))
}
