//! The cpu's FlashAttention backward pieces (`graph.grad` of `op.flash_attention`): the
//! scores' row log-sum-exp and each operand's gradient given it. Like the GPU kernels they
//! recompute the probabilities from the log-sum-exp, here in blocks of [`BLOCK`] query rows
//! with the fast matmul (a block's `[BLOCK, sk]` scores at a time, never `sq × sk`), in fp32
//! (fp64 for fp64 operands), rounding once to the result dtype. Operands share their batch
//! dims (the derivative broadcasts them first); `[..., sq, dq]`, `[..., sk, dq]`, `[..., sk, dv]`.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::elementwise::{binary, unary, where_, BinaryOp, UnaryOp};
use crate::ops::matmul::matmul;
use crate::ops::reduce::{reduce, ReduceOp};
use crate::ops::shape_ops::{concat, IndexItem};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// Which operand [`attention_grad`] differentiates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttnWrt {
    Q,
    K,
    V,
}

/// Query rows per block.
const BLOCK: usize = 256;

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

/// `t` in the compute dtype as `[batch, rows, cols]` (`cols` 0: `[batch, rows]`).
fn as3(t: &Tensor, d: DType, b: usize, rows: usize, cols: usize) -> Result<Tensor> {
    let shape: Vec<i64> = if cols == 0 {
        vec![b as i64, rows as i64]
    } else {
        vec![b as i64, rows as i64, cols as i64]
    };
    t.cast(d)?.reshape(&shape)
}

fn rows(t: &Tensor, r0: usize, r1: usize) -> Result<Tensor> {
    t.index(&[IndexItem::Slice {
        start: Some(r0 as i64),
        stop: Some(r1 as i64),
        step: None,
    }])
}

fn transpose2(t: &Tensor) -> Result<Tensor> {
    t.transpose(Some(&[1, 0]))
}

/// `scale·q[r0..r1]·kᵀ` with keys past each query masked to −∞ when causal (`kt` is `kᵀ`).
fn scores(
    q: &Tensor,
    kt: &Tensor,
    r0: usize,
    r1: usize,
    causal: bool,
    scale: f64,
) -> Result<Tensor> {
    let s = matmul(&rows(q, r0, r1)?, kt, None)?;
    let s = binary(BinaryOp::Mul, &s, scale)?;
    if !causal {
        return Ok(s);
    }
    let sk = kt.shape()[1];
    let mask: Vec<bool> = (r0..r1).flat_map(|i| (0..sk).map(move |j| j > i)).collect();
    where_(
        &Tensor::from_bool(&[r1 - r0, sk], mask)?,
        f64::NEG_INFINITY,
        &s,
    )
}

fn compute_dtype(ts: &[&Tensor]) -> DType {
    if ts.iter().any(|t| t.dtype() == DType::F64) {
        DType::F64
    } else {
        DType::F32
    }
}

/// `log Σ_j exp(scale·q_i·k_j)` over the keys row `i` sees (`j ≤ i` when causal): `[..., sq]`,
/// fp32 (fp64 for fp64 operands).
pub fn attention_lse(q: &Tensor, k: &Tensor, causal: bool, scale: f64) -> Result<Tensor> {
    crate::ops::complex::real_only("flash_attention", q.dtype())?;
    let (b, sq, d) = dims(q, "q")?;
    let (bk, sk, dk) = dims(k, "k")?;
    if bk != b || dk != d || q.shape()[..q.ndim() - 2] != k.shape()[..k.ndim() - 2] {
        return Err(RuntimeError::shape(format!(
            "flash_attention backward: q {} and k {} differ",
            fmt_shape(q.shape()),
            fmt_shape(k.shape())
        )));
    }
    let dtype = compute_dtype(&[q, k]);
    let shape = q.shape()[..q.ndim() - 1].to_vec();
    if q.is_abstract() || k.is_abstract() {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    memory::check_shape_alloc(&shape, dtype)?;
    if b == 0 || sq == 0 || sk == 0 {
        return Tensor::from_f64(&shape, vec![f64::NEG_INFINITY; b * sq], dtype);
    }
    let (q3, k3) = (as3(q, dtype, b, sq, d)?, as3(k, dtype, b, sk, d)?);
    let mut out = Vec::with_capacity(b);
    for bi in 0..b {
        let qb = q3.index(&[IndexItem::Int(bi as i64)])?;
        let kt = transpose2(&k3.index(&[IndexItem::Int(bi as i64)])?)?;
        let mut parts = Vec::new();
        for r0 in (0..sq).step_by(BLOCK) {
            let r1 = (r0 + BLOCK).min(sq);
            let s = scores(&qb, &kt, r0, r1, causal, scale)?;
            let m = reduce(&s, ReduceOp::Max, Some(-1), true)?;
            let e = unary(UnaryOp::Exp, &binary(BinaryOp::Sub, &s, &m)?)?;
            let l = unary(UnaryOp::Log, &reduce(&e, ReduceOp::Sum, Some(-1), true)?)?;
            parts.push(binary(BinaryOp::Add, &l, &m)?.reshape(&[(r1 - r0) as i64])?);
        }
        out.push(concat(&parts, 0)?);
    }
    let shape_i: Vec<i64> = shape.iter().map(|&x| x as i64).collect();
    concat(&out, 0)?.reshape(&shape_i)
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
    let row_shape: Vec<usize> = q.shape()[..q.ndim() - 1].to_vec();
    if (bk, bv, bo) != (b, b, b)
        || dk != d
        || sv != sk
        || (so, dov) != (sq, dv)
        || lse.shape() != row_shape.as_slice()
        || delta.shape() != row_shape.as_slice()
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
    let cd = compute_dtype(&[q, k, v, dout]);
    let (q3, k3, v3) = (
        as3(q, cd, b, sq, d)?,
        as3(k, cd, b, sk, d)?,
        as3(v, cd, b, sk, dv)?,
    );
    let (o3, l2, d2) = (
        as3(dout, cd, b, sq, dv)?,
        as3(lse, cd, b, sq, 0)?,
        as3(delta, cd, b, sq, 0)?,
    );
    let shape_i: Vec<i64> = shape.iter().map(|&x| x as i64).collect();
    if b == 0 || sq == 0 || sk == 0 {
        return Tensor::from_f64(&shape, vec![0.0; shape.iter().product()], dtype);
    }
    let mut out = Vec::with_capacity(b);
    for bi in 0..b {
        let at = |t: &Tensor| t.index(&[IndexItem::Int(bi as i64)]);
        let (qb, kb, vb, ob, lb, db) = (at(&q3)?, at(&k3)?, at(&v3)?, at(&o3)?, at(&l2)?, at(&d2)?);
        let kt = transpose2(&kb)?;
        let vt = transpose2(&vb)?;
        let mut dq_parts = Vec::new();
        let mut acc: Option<Tensor> = None;
        for r0 in (0..sq).step_by(BLOCK) {
            let r1 = (r0 + BLOCK).min(sq);
            let n = (r1 - r0) as i64;
            let s = scores(&qb, &kt, r0, r1, causal, scale)?;
            let l = rows(&lb, r0, r1)?.reshape(&[n, 1])?;
            // P = exp(S − lse); masked scores are −∞, so their P is 0
            let p = unary(UnaryOp::Exp, &binary(BinaryOp::Sub, &s, &l)?)?;
            let o_blk = rows(&ob, r0, r1)?;
            let term = if wrt == AttnWrt::V {
                // dv += Pᵀ·dO
                matmul(&transpose2(&p)?, &o_blk, None)?
            } else {
                let dp = matmul(&o_blk, &vt, None)?;
                let dl = rows(&db, r0, r1)?.reshape(&[n, 1])?;
                let ds = binary(BinaryOp::Mul, &p, &binary(BinaryOp::Sub, &dp, &dl)?)?;
                if wrt == AttnWrt::Q {
                    // dq = scale·dS·k, block by block
                    dq_parts.push(binary(BinaryOp::Mul, &matmul(&ds, &kb, None)?, scale)?);
                    continue;
                }
                // dk += scale·dSᵀ·q
                let t = matmul(&transpose2(&ds)?, &rows(&qb, r0, r1)?, None)?;
                binary(BinaryOp::Mul, &t, scale)?
            };
            acc = Some(match acc {
                Some(a) => binary(BinaryOp::Add, &a, &term)?,
                None => term,
            });
        }
        out.push(match wrt {
            AttnWrt::Q => concat(&dq_parts, 0)?,
            _ => acc.ok_or_else(|| RuntimeError::shape("flash_attention backward: no rows"))?,
        });
    }
    concat(&out, 0)?.reshape(&shape_i)?.cast(dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backward by its definition, in fp64, one (query, key) pair at a time.
    fn naive(
        q: &[f64],
        k: &[f64],
        v: &[f64],
        o: &[f64],
        (sq, sk, d): (usize, usize, usize),
        causal: bool,
        scale: f64,
    ) -> [Vec<f64>; 3] {
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        let row = |x: &[f64], i: usize| x[i * d..(i + 1) * d].to_vec();
        let (mut dq, mut dk, mut dv) = (vec![0.0; sq * d], vec![0.0; sk * d], vec![0.0; sk * d]);
        for i in 0..sq {
            let keys = if causal { (i + 1).min(sk) } else { sk };
            let s: Vec<f64> = (0..keys)
                .map(|j| scale * dot(&row(q, i), &row(k, j)))
                .collect();
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
            let p: Vec<f64> = s.iter().map(|x| (x - m).exp() / z).collect();
            let dp: Vec<f64> = (0..keys).map(|j| dot(&row(o, i), &row(v, j))).collect();
            let delta: f64 = (0..keys).map(|j| p[j] * dp[j]).sum();
            for j in 0..keys {
                let ds = p[j] * (dp[j] - delta);
                for c in 0..d {
                    dq[i * d + c] += scale * ds * k[j * d + c];
                    dk[j * d + c] += scale * ds * q[i * d + c];
                    dv[j * d + c] += p[j] * o[i * d + c];
                }
            }
        }
        [dq, dk, dv]
    }

    #[test]
    fn blocked_backward_equals_the_definition_across_blocks() {
        let (sq, sk, d) = (BLOCK + 44, BLOCK + 24, 4);
        let gen = |n: usize, seed: u64| -> Vec<f64> {
            (0..n)
                .map(|i| (((i as u64 * 2654435761 + seed * 40503) % 1000) as f64 / 500.0) - 1.0)
                .collect()
        };
        let (q, k, v, o) = (
            gen(sq * d, 1),
            gen(sk * d, 2),
            gen(sk * d, 3),
            gen(sq * d, 4),
        );
        let t = |x: &[f64], r: usize| Tensor::from_f64(&[r, d], x.to_vec(), DType::F64).unwrap();
        let (qt, kt, vt, ot) = (t(&q, sq), t(&k, sk), t(&v, sk), t(&o, sq));
        for causal in [false, true] {
            let scale = 0.7;
            let lse = attention_lse(&qt, &kt, causal, scale).unwrap();
            // delta = Σ_c dout·out with out = P·v, from the definition
            let want = naive(&q, &k, &v, &o, (sq, sk, d), causal, scale);
            let p_out = crate::flash_attention(&qt, &kt, &vt, causal, Some(scale)).unwrap();
            let delta = binary(BinaryOp::Mul, &ot, &p_out)
                .and_then(|x| reduce(&x, ReduceOp::Sum, Some(-1), false))
                .unwrap();
            for (w, wrt) in [AttnWrt::Q, AttnWrt::K, AttnWrt::V].into_iter().enumerate() {
                let got = attention_grad(wrt, &qt, &kt, &vt, &ot, &lse, &delta, causal, scale)
                    .unwrap()
                    .to_f64_vec()
                    .unwrap();
                let worst = got
                    .iter()
                    .zip(&want[w])
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                assert!(worst < 1e-9, "{wrt:?} causal {causal}: {worst}");
            }
        }
    }
}
