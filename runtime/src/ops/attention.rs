//! The cpu's FlashAttention backward pieces (`graph.grad` of `op.flash_attention`): the
//! scores' row log-sum-exp and each operand's gradient given it. Like the GPU kernels they
//! recompute the probabilities from the log-sum-exp, never holding `sq × sk` scores: the
//! log-sum-exp and the gradients one query row at a time per head, heads in parallel
//! ([`lse_direct`], [`grad_direct`]). In fp32 (fp64 for fp64
//! operands), rounding once to the result dtype. Operands share their batch dims (the
//! derivative broadcasts them first); `[..., sq, dq]`, `[..., sk, dq]`, `[..., sk, dv]`.

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

/// `t` in the compute dtype as `[batch, rows, cols]` (`cols` 0: `[batch, rows]`).
fn as3(t: &Tensor, d: DType, b: usize, rows: usize, cols: usize) -> Result<Tensor> {
    let shape: Vec<i64> = if cols == 0 {
        vec![b as i64, rows as i64]
    } else {
        vec![b as i64, rows as i64, cols as i64]
    };
    t.cast(d)?.reshape(&shape)
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
    let n = Dims {
        sq,
        sk,
        d,
        dv: 0,
        causal,
        scale,
    };
    if dtype == DType::F64 {
        let l = lse_direct::<f64>(b, n, &q3.to_f64_vec()?, &k3.to_f64_vec()?);
        return Tensor::from_f64(&shape, l, dtype);
    }
    let l = lse_direct::<f32>(b, n, &q3.to_f32_vec()?, &k3.to_f32_vec()?);
    Tensor::from_f32(&shape, l, dtype)
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
    if b == 0 || sq == 0 || sk == 0 {
        return Tensor::from_f64(&shape, vec![0.0; shape.iter().product()], dtype);
    }
    let dims = Dims {
        sq,
        sk,
        d,
        dv,
        causal,
        scale,
    };
    if cd == DType::F64 {
        let data = [&q3, &k3, &v3, &o3, &l2, &d2].map(|t| t.to_f64_vec());
        let [q, k, v, o, l, dl] = data;
        let g = grad_direct::<f64>(wrt, b, dims, [&q?, &k?, &v?, &o?, &l?, &dl?]);
        return Tensor::from_f64(&shape, g, dtype);
    }
    let data = [&q3, &k3, &v3, &o3, &l2, &d2].map(|t| t.to_f32_vec());
    let [q, k, v, o, l, dl] = data;
    let g = grad_direct::<f32>(wrt, b, dims, [&q?, &k?, &v?, &o?, &l?, &dl?]);
    Tensor::from_f32(&shape, g, dtype)
}

/// The sizes of one attention head's backward.
#[derive(Copy, Clone)]
struct Dims {
    sq: usize,
    sk: usize,
    d: usize,
    dv: usize,
    causal: bool,
    scale: f64,
}

/// The compute dtypes of the direct backward.
trait Real:
    Copy
    + Send
    + Sync
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
{
    const ZERO: Self;
    const NEG_INF: Self;
    fn of(x: f64) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn max(self, other: Self) -> Self;
}

impl Real for f32 {
    const ZERO: Self = 0.0;
    const NEG_INF: Self = f32::NEG_INFINITY;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn ln(self) -> Self {
        f32::ln(self)
    }
    fn max(self, other: Self) -> Self {
        f32::max(self, other)
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const NEG_INF: Self = f64::NEG_INFINITY;
    fn of(x: f64) -> Self {
        x
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn max(self, other: Self) -> Self {
        f64::max(self, other)
    }
}

/// `y += a·x`, the loop every product below is made of (it vectorises).
#[inline]
fn axpy<T: Real>(y: &mut [T], a: T, x: &[T]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * *x;
    }
}

/// `kᵀ` of one head's `[s, d]` rows: a query row's scores are then `axpy`s over the keys.
fn transposed<T: Real>(k: &[T], s: usize, d: usize) -> Vec<T> {
    let mut kt = vec![T::ZERO; d * s];
    for j in 0..s {
        for c in 0..d {
            kt[c * s + j] = k[j * d + c];
        }
    }
    kt
}

/// `scale·q_i·kⱼ` for the keys query row `i` sees, into `p` (`kt`: the head's `kᵀ`).
fn row_scores<T: Real>(p: &mut [T], qi: &[T], kt: &[T], sk: usize, scale: T) {
    p.fill(T::ZERO);
    for (c, &x) in qi.iter().enumerate() {
        axpy(p, x, &kt[c * sk..][..p.len()]);
    }
    for x in p.iter_mut() {
        *x = *x * scale;
    }
}

/// The row log-sum-exp of every head's scores (`[b, s, d]` data), one head per task.
fn lse_direct<T: Real>(b: usize, n: Dims, q: &[T], k: &[T]) -> Vec<T> {
    use rayon::prelude::*;
    let Dims {
        sq, sk, d, causal, ..
    } = n;
    let scale = T::of(n.scale);
    let mut out = vec![T::ZERO; b * sq];
    out.par_chunks_mut(sq.max(1))
        .enumerate()
        .for_each(|(h, l)| {
            let (q, k) = (&q[h * sq * d..][..sq * d], &k[h * sk * d..][..sk * d]);
            let kt = transposed(k, sk, d);
            let mut p = vec![T::ZERO; sk];
            for (i, li) in l.iter_mut().enumerate() {
                let keys = if causal { (i + 1).min(sk) } else { sk };
                let p = &mut p[..keys];
                row_scores(p, &q[i * d..][..d], &kt, sk, scale);
                let m = p.iter().copied().fold(T::NEG_INF, T::max);
                let mut z = T::ZERO;
                for &x in p.iter() {
                    z += (x - m).exp();
                }
                *li = z.ln() + m;
            }
        });
    out
}

/// The gradient with respect to `wrt` of every head (`[q, k, v, dout, lse, delta]` as
/// `[b, s, ·]` row-major data), one head per task, in the compute dtype `T`: for each query row
/// its scores `scale·q_i·kⱼ` (keys past it −∞ when causal), `P = exp(S − lse)`, and for dq/dk
/// `dS = P·(dO·vⱼ − delta_i)`. Each product is a sum of `axpy`s over contiguous rows; a head's
/// rows are summed in order, so the result does not depend on the number of threads.
fn grad_direct<T: Real>(wrt: AttnWrt, b: usize, n: Dims, x: [&[T]; 6]) -> Vec<T> {
    use rayon::prelude::*;
    let Dims {
        sq,
        sk,
        d,
        dv,
        causal,
        scale,
    } = n;
    let [q, k, v, o, lse, delta] = x;
    let rows = if wrt == AttnWrt::Q { sq } else { sk };
    let width = if wrt == AttnWrt::V { dv } else { d };
    let mut out = vec![T::ZERO; b * rows * width];
    let scale = T::of(scale);
    out.par_chunks_mut((rows * width).max(1))
        .enumerate()
        .for_each(|(h, g)| {
            let (q, k) = (&q[h * sq * d..][..sq * d], &k[h * sk * d..][..sk * d]);
            let (v, o) = (&v[h * sk * dv..][..sk * dv], &o[h * sq * dv..][..sq * dv]);
            let (lse, delta) = (&lse[h * sq..][..sq], &delta[h * sq..][..sq]);
            // kᵀ and vᵀ: a query row's scores and dO·vⱼ are axpys over the keys
            let (kt, vt) = (transposed(k, sk, d), transposed(v, sk, dv));
            let mut p = vec![T::ZERO; sk];
            let mut dp = vec![T::ZERO; sk];
            for i in 0..sq {
                let keys = if causal { (i + 1).min(sk) } else { sk };
                let p = &mut p[..keys];
                row_scores(p, &q[i * d..][..d], &kt, sk, scale);
                let l = lse[i];
                for x in p.iter_mut() {
                    *x = (*x - l).exp();
                }
                let oi = &o[i * dv..][..dv];
                if wrt == AttnWrt::V {
                    for (j, &pj) in p.iter().enumerate() {
                        axpy(&mut g[j * dv..][..dv], pj, oi);
                    }
                    continue;
                }
                let dp = &mut dp[..keys];
                dp.fill(T::ZERO);
                for c in 0..dv {
                    axpy(dp, oi[c], &vt[c * sk..][..keys]);
                }
                let di = delta[i];
                for (x, &pj) in dp.iter_mut().zip(p.iter()) {
                    *x = pj * (*x - di) * scale;
                }
                if wrt == AttnWrt::Q {
                    let gi = &mut g[i * d..][..d];
                    for (j, &ds) in dp.iter().enumerate() {
                        axpy(gi, ds, &k[j * d..][..d]);
                    }
                } else {
                    let qi = &q[i * d..][..d];
                    for (j, &ds) in dp.iter().enumerate() {
                        axpy(&mut g[j * d..][..d], ds, qi);
                    }
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::{binary, BinaryOp};
    use crate::ops::reduce::{reduce, ReduceOp};

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
    fn backward_equals_the_definition() {
        let (sq, sk, d) = (300, 280, 4);
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
