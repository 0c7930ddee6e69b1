//! The reference of FlashAttention's backward pieces (`graph.grad` of `op.flash_attention`):
//! the scores' row log-sum-exp and each operand's gradient given it. Like the GPU kernels they
//! recompute the probabilities row by row and hold no `sq × sk` matrix; they compute in fp64
//! and round once to the result dtype. Operands share their batch dims (the derivative
//! broadcasts them first); `[..., sq, dq]`, `[..., sk, dq]`, `[..., sk, dv]`.

use rayon::prelude::*;

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// Which operand [`attention_grad`] differentiates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttnWrt {
    Q,
    K,
    V,
}

/// `[batch, s, d]` of an attention operand of shape `[..., s, d]`.
fn dims(t: &Tensor, what: &str) -> Result<(usize, usize, usize)> {
    match t.shape() {
        [b @ .., s, d] => Ok((b.iter().product(), *s, *d)),
        _ => Err(RuntimeError::shape(format!(
            "flash_attention backward: {what} of shape {} is not [..., seq, d]",
            fmt_shape(t.shape())
        ))),
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `log Σ_j exp(scale·q_i·k_j)` over the keys row `i` sees (`j ≤ i` when causal): `[..., sq]`,
/// fp32 (fp64 for fp64 operands).
pub fn attention_lse(q: &Tensor, k: &Tensor, causal: bool, scale: f64) -> Result<Tensor> {
    let (b, sq, d) = dims(q, "q")?;
    let (bk, sk, dk) = dims(k, "k")?;
    if bk != b || dk != d || q.shape()[..q.ndim() - 2] != k.shape()[..k.ndim() - 2] {
        return Err(RuntimeError::shape(format!(
            "flash_attention backward: q {} and k {} differ",
            fmt_shape(q.shape()),
            fmt_shape(k.shape())
        )));
    }
    let dtype = if DType::promote(q.dtype(), k.dtype()) == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let shape = q.shape()[..q.ndim() - 1].to_vec();
    if q.is_abstract() || k.is_abstract() {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    memory::check_shape_alloc(&shape, dtype)?;
    let (qv, kv) = (q.to_f64_vec()?, k.to_f64_vec()?);
    let out: Vec<f64> = (0..b * sq)
        .into_par_iter()
        .map(|bi| {
            let (bb, i) = (bi / sq, bi % sq);
            let qi = &qv[bi * d..(bi + 1) * d];
            let keys = if causal { (i + 1).min(sk) } else { sk };
            let s: Vec<f64> = (0..keys)
                .map(|j| {
                    let kj = &kv[(bb * sk + j) * d..(bb * sk + j + 1) * d];
                    scale * dot(qi, kj)
                })
                .collect();
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if m == f64::NEG_INFINITY {
                return m;
            }
            m + s.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
        })
        .collect();
    Tensor::from_f64(&shape, out, dtype)
}

/// The gradient of `flash_attention(q, k, v)` with respect to `wrt`, given the output's
/// cotangent `dout`, the scores' row log-sum-exp `lse` and `delta = Σ_c dout·out` per query
/// row; the result has `wrt`'s shape and `dout`'s dtype.
#[allow(clippy::too_many_arguments)]
pub fn attention_grad(
    wrt: AttnWrt,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    dout: &Tensor,
    lse: &Tensor,
    delta: &Tensor,
    causal: bool,
    scale: f64,
) -> Result<Tensor> {
    let (b, sq, d) = dims(q, "q")?;
    let (bk, sk, dk) = dims(k, "k")?;
    let (bv, sv, dv) = dims(v, "v")?;
    let (bo, so, dov) = dims(dout, "dout")?;
    let rows: Vec<usize> = q.shape()[..q.ndim() - 1].to_vec();
    if (bk, bv, bo) != (b, b, b)
        || dk != d
        || sv != sk
        || (so, dov) != (sq, dv)
        || lse.shape() != rows.as_slice()
        || delta.shape() != rows.as_slice()
    {
        return Err(RuntimeError::shape(format!(
            "flash_attention backward: q {}, k {}, v {}, dout {}, lse {}, delta {} do not match",
            fmt_shape(q.shape()),
            fmt_shape(k.shape()),
            fmt_shape(v.shape()),
            fmt_shape(dout.shape()),
            fmt_shape(lse.shape()),
            fmt_shape(delta.shape())
        )));
    }
    let dtype = dout.dtype();
    let shape = match wrt {
        AttnWrt::Q => q.shape(),
        AttnWrt::K => k.shape(),
        AttnWrt::V => v.shape(),
    }
    .to_vec();
    if [q, k, v, dout, lse, delta].iter().any(|t| t.is_abstract()) {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    memory::check_shape_alloc(&shape, dtype)?;
    let [qv, kv, vv, ov, lv, dl] = [q, k, v, dout, lse, delta].map(|t| t.to_f64_vec());
    let (qv, kv, vv, ov, lv, dl) = (qv?, kv?, vv?, ov?, lv?, dl?);
    // the elements of row i of batch bb of a [batch, len, w] operand
    let row = |w: usize, bb: usize, len: usize, i: usize| -> std::ops::Range<usize> {
        let s = (bb * len + i) * w;
        s..s + w
    };
    // P_ij and dS_ij of batch bb
    let p_ds = |bb: usize, i: usize, j: usize| -> (f64, f64) {
        let qi = &qv[row(d, bb, sq, i)];
        let kj = &kv[row(d, bb, sk, j)];
        let p = (scale * dot(qi, kj) - lv[bb * sq + i]).exp();
        let dp = dot(&ov[row(dv, bb, sq, i)], &vv[row(dv, bb, sk, j)]);
        (p, p * (dp - dl[bb * sq + i]))
    };
    let (nrows, width) = match wrt {
        AttnWrt::Q => (sq, d),
        AttnWrt::K => (sk, d),
        AttnWrt::V => (sk, dv),
    };
    let out: Vec<f64> = (0..b * nrows)
        .into_par_iter()
        .flat_map_iter(|br| {
            let (bb, r) = (br / nrows, br % nrows);
            let mut acc = vec![0.0f64; width];
            match wrt {
                AttnWrt::Q => {
                    let keys = if causal { (r + 1).min(sk) } else { sk };
                    for j in 0..keys {
                        let (_, ds) = p_ds(bb, r, j);
                        for (a, x) in acc.iter_mut().zip(&kv[row(d, bb, sk, j)]) {
                            *a += ds * x;
                        }
                    }
                    acc.iter_mut().for_each(|a| *a *= scale);
                }
                AttnWrt::K | AttnWrt::V => {
                    let first = if causal { r } else { 0 };
                    for i in first..sq {
                        let (p, ds) = p_ds(bb, i, r);
                        let (w, src) = if wrt == AttnWrt::K {
                            (ds * scale, &qv[row(d, bb, sq, i)])
                        } else {
                            (p, &ov[row(dv, bb, sq, i)])
                        };
                        for (a, x) in acc.iter_mut().zip(src) {
                            *a += w * x;
                        }
                    }
                }
            }
            acc
        })
        .collect();
    Tensor::from_f64(&shape, out, dtype)
}
