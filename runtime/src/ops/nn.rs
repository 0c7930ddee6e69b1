//! The row functions (`softmax`, `logsumexp`), `layernorm`, `rmsnorm` over an axis (computed
//! in fp32, fp64 for fp64, and rounded once to the input dtype) and the `flash_attention`
//! reference.

use rayon::prelude::*;

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::fastmath;
use crate::shape::fmt_shape;
use crate::storage::{buffer, Storage};
use crate::tensor::Tensor;
use tessera_compiler::graph::ops::rows::{self, RowError};
use tessera_compiler::graph::{RowFn, RowOut};

/// Rows per rayon task: enough work per task (~16K elements) to pay for the split.
fn min_rows(d: usize) -> usize {
    (16384 / d.max(1)).max(1)
}

/// `softmax(x, axis)`: [`row_fn`] of the compiler's softmax.
pub fn softmax(x: &Tensor, axis: isize) -> Result<Tensor> {
    row_fn(x, RowFn::Softmax, axis, false)
}

/// `f(x, axis, keepdim)` of a row function (`softmax`, `logsumexp`): the compiler's shape and
/// dtype rule ([`rows::row_type`]), then one pass per slice along `axis`, slices in parallel.
/// A normalising function of fp32 and narrower runs the vectorised f32 pass; every other one
/// runs the compiler's f64 definition ([`rows::eval_f64`]) and rounds once.
pub fn row_fn(x: &Tensor, f: RowFn, axis: isize, keepdim: bool) -> Result<Tensor> {
    crate::ops::complex::real_only(&format!("op.{}", f.name()), x.dtype())?;
    let (ax, oshape, dtype) =
        rows::row_type(f, x.shape(), x.dtype(), axis, keepdim).map_err(|e| match e {
            RowError::ZeroD(_) => RuntimeError::shape(e.to_string()),
            RowError::Axis { .. } => RuntimeError::runtime(e.to_string()),
        })?;
    if x.is_abstract() {
        return Tensor::abstract_tensor(&oshape, dtype);
    }
    let nd = x.ndim();
    let per_row = f.out() == RowOut::Normalized;
    if ax != nd - 1 {
        let mut perm: Vec<usize> = (0..nd).collect();
        perm.swap(ax, nd - 1);
        let moved = x.transpose(Some(&perm))?;
        let r = row_fn(&moved, f, -1, true)?.transpose(Some(&perm))?;
        if per_row || keepdim {
            return Ok(r);
        }
        let shape: Vec<i64> = oshape.iter().map(|&d| d as i64).collect();
        return r.reshape(&shape);
    }
    let n = memory::check_shape_alloc(&oshape, dtype)?;
    let d = x.shape().last().copied().unwrap_or(1);
    let st = x.storage(f.name())?;
    let storage = if per_row && dtype != DType::F64 {
        memory::check_alloc(n, DType::F32)?;
        let v = st.to_f32(x.dtype());
        let mut out = buffer::<f32>(n);
        if d > 0 {
            let rows = min_rows(d);
            let isa = crate::isa::current();
            out.par_chunks_mut(d * rows)
                .zip(v.par_chunks(d * rows))
                .for_each(|(o, xr)| fastmath::softmax_rows(isa, xr, o, d));
        }
        Storage::from_f32(out, dtype)
    } else {
        memory::check_alloc(n, DType::F64)?;
        let v = st.to_f64(x.dtype());
        let mut out = buffer::<f64>(n);
        let od = if per_row { d } else { 1 };
        if n > 0 && d > 0 {
            out.par_chunks_mut(od)
                .with_min_len(min_rows(d))
                .zip(v.par_chunks(d))
                .for_each(|(o, xr)| rows::eval_f64(f, xr, o));
        } else if n > 0 {
            // slices of length 0
            out.par_chunks_mut(od)
                .for_each(|o| rows::eval_f64(f, &[], o));
        }
        if dtype == DType::F64 {
            Storage::F64(out)
        } else {
            Storage::from_f32(out.iter().map(|&v| v as f32).collect(), dtype)
        }
    };
    Ok(Tensor::from_storage(oshape, dtype, storage))
}

/// Checks an optional per-feature parameter (shape `[d]`) and reads it as f64.
fn param(
    p: Option<&Tensor>,
    d: usize,
    what: &str,
    op: &str,
    x: &Tensor,
) -> Result<Option<Vec<f64>>> {
    let Some(p) = p else { return Ok(None) };
    if p.shape() != [d] {
        return Err(RuntimeError::shape(format!(
            "{op}: {what} has shape {} but the input {} needs [{d}] (its last dimension)",
            fmt_shape(p.shape()),
            fmt_shape(x.shape())
        )));
    }
    Ok(Some(p.storage(op)?.to_f64(p.dtype()).into_owned()))
}

enum Norm {
    Layer,
    Rms,
}

fn norm(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    kind: Norm,
) -> Result<Tensor> {
    let op = match kind {
        Norm::Layer => "layernorm",
        Norm::Rms => "rmsnorm",
    };
    let Some(&d) = x.shape().last() else {
        return Err(RuntimeError::shape(format!(
            "{op}: needs a tensor with at least 1 dimension, got a 0-d tensor"
        )));
    };
    let dtype = if x.dtype().is_float() {
        x.dtype()
    } else {
        DType::F32
    };
    for (p, what) in [(weight, "weight"), (bias, "bias")] {
        if let Some(p) = p {
            if p.shape() != [d] {
                param(Some(p), d, what, op, x)?;
            }
        }
    }
    if x.is_abstract()
        || weight.is_some_and(Tensor::is_abstract)
        || bias.is_some_and(Tensor::is_abstract)
    {
        return Tensor::abstract_tensor(x.shape(), dtype);
    }
    let n = memory::check_shape_alloc(x.shape(), dtype)?;
    let w = param(weight, d, "weight", op, x)?;
    let b = param(bias, d, "bias", op, x)?;
    let st = x.storage(op)?;
    let layer = matches!(kind, Norm::Layer);
    // Statistics accumulate in f64; the normalisation itself runs in the compute type.
    let storage = if dtype == DType::F64 {
        memory::check_alloc(n, DType::F64)?;
        let v = st.to_f64(x.dtype());
        let mut out = buffer::<f64>(n);
        let isa = crate::isa::current();
        if d > 0 {
            out.par_chunks_mut(d)
                .with_min_len(min_rows(d))
                .zip(v.par_chunks(d))
                .for_each(|(o, xr)| {
                    let (w, b) = (w.as_deref(), b.as_deref());
                    norm_row(isa, xr, o, w, b, eps, layer)
                });
        }
        Storage::F64(out)
    } else {
        memory::check_alloc(n, DType::F32)?;
        let v = st.to_f32(x.dtype());
        let w: Option<Vec<f32>> = w.map(|w| w.iter().map(|&x| x as f32).collect());
        let b: Option<Vec<f32>> = b.map(|b| b.iter().map(|&x| x as f32).collect());
        let mut out = buffer::<f32>(n);
        let isa = crate::isa::current();
        if d > 0 {
            out.par_chunks_mut(d)
                .with_min_len(min_rows(d))
                .zip(v.par_chunks(d))
                .for_each(|(o, xr)| {
                    let (w, b) = (w.as_deref(), b.as_deref());
                    norm_row(isa, xr, o, w, b, eps, layer)
                });
        }
        Storage::from_f32(out, dtype)
    };
    Ok(Tensor::from_storage(x.shape().to_vec(), dtype, storage))
}

/// Independent partial sums of a row's statistics: enough to hide the add latency on AVX2
/// (4 vectors of 4 f64) and fill AVX-512's. Fixed, because it is part of the summation order.
const STAT_LANES: usize = 16;

/// `Σ f(x)` over `xs` in f64: lane i sums elements i, i+16, …, the lanes are added in a fixed
/// pairwise tree, then the tail. The same bits on every ISA (the order is the source's).
#[inline(always)]
fn lane_sum<T: Copy>(xs: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut lanes = [0.0f64; STAT_LANES];
    let mut chunks = xs.chunks_exact(STAT_LANES);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l += f(x);
        }
    }
    let mut tail = 0.0;
    for &x in chunks.remainder() {
        tail += f(x);
    }
    let mut width = STAT_LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            lanes[i] += lanes[i + width];
        }
    }
    lanes[0] + tail
}

/// (mean, 1/sqrt(var + eps)) for layernorm; (0, 1/sqrt(mean(x²) + eps)) for rmsnorm; in f64.
#[inline(always)]
fn stats<T: Copy + Into<f64>>(xs: &[T], eps: f64, layer: bool) -> (f64, f64) {
    let c = xs.len() as f64;
    if layer {
        let mean = lane_sum(xs, |v| v.into()) / c;
        let var = lane_sum(xs, |v| {
            let d = v.into() - mean;
            d * d
        }) / c;
        (mean, 1.0 / (var + eps).sqrt())
    } else {
        let ms = lane_sum(xs, |v| {
            let v: f64 = v.into();
            v * v
        }) / c;
        (0.0, 1.0 / (ms + eps).sqrt())
    }
}

/// An element type a norm row computes in (f32, f64).
trait NormElem: crate::ops::real::Real + Into<f64> {}
impl<T: crate::ops::real::Real + Into<f64>> NormElem for T {}

/// One row of a norm in `T`: `((x − mean)·rstd)·w + b`, each step rounded (the weight and bias
/// optional, of the row's length), statistics from [`stats`].
#[inline(always)]
fn norm_row_impl<T: NormElem>(
    xr: &[T],
    o: &mut [T],
    w: Option<&[T]>,
    b: Option<&[T]>,
    eps: f64,
    layer: bool,
) {
    let (mean, rstd) = stats(xr, eps, layer);
    let (mean, rstd) = (T::from_f64(mean), T::from_f64(rstd));
    for (o, &x) in o.iter_mut().zip(xr) {
        *o = (x - mean) * rstd;
    }
    if let Some(w) = w {
        for (o, &w) in o.iter_mut().zip(w) {
            *o = *o * w;
        }
    }
    if let Some(b) = b {
        for (o, &b) in o.iter_mut().zip(b) {
            *o = *o + b;
        }
    }
}

crate::isa_versions! {
    fn norm_row<T: NormElem>(
        xr: &[T],
        o: &mut [T],
        w: Option<&[T]>,
        b: Option<&[T]>,
        eps: f64,
        layer: bool
    ) => norm_row_impl
}

/// `layernorm(x, weight, bias, eps)` over the last axis (biased variance, like PyTorch).
pub fn layernorm(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    crate::ops::complex::real_only("op.layernorm", x.dtype())?;
    norm(x, weight, bias, eps, Norm::Layer)
}

/// `rmsnorm(x, weight, eps)` over the last axis: `x / sqrt(mean(x²) + eps) · weight`.
pub fn rmsnorm(x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Tensor> {
    crate::ops::complex::real_only("op.rmsnorm", x.dtype())?;
    norm(x, weight, None, eps, Norm::Rms)
}

/// `flash_attention(q, k, v, causal, scale)`: `softmax(q @ kᵀ · scale) @ v` over `[..., seq, d]`
/// with `scale = 1/sqrt(d)` by default; causal masks key `j > i` for query `i` (top-left).
/// Computed in fp32 (fp64 for fp64), rounded once to the promoted dtype of q, k, v.
pub fn flash_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    for t in [q, k, v] {
        crate::ops::complex::real_only("op.flash_attention", t.dtype())?;
    }
    let bad = |why: String| {
        RuntimeError::shape(format!(
            "flash_attention: q {}, k {}, v {}: {why}",
            fmt_shape(q.shape()),
            fmt_shape(k.shape()),
            fmt_shape(v.shape())
        ))
    };
    let (Some((&dq, qb)), Some((&dk, kb)), Some((&dv, vb))) = (
        q.shape().split_last(),
        k.shape().split_last(),
        v.shape().split_last(),
    ) else {
        return Err(bad("q, k and v must be at least 2-D ([..., seq, d])".into()));
    };
    let (Some((&sq, qbatch)), Some((&sk, kbatch)), Some((&sv, vbatch))) =
        (qb.split_last(), kb.split_last(), vb.split_last())
    else {
        return Err(bad("q, k and v must be at least 2-D ([..., seq, d])".into()));
    };
    if dq != dk {
        return Err(bad(format!("q and k head dims differ ({dq} and {dk})")));
    }
    if sk != sv {
        return Err(bad(format!(
            "k and v sequence lengths differ ({sk} and {sv})"
        )));
    }
    let batch = crate::shape::broadcast_shapes(qbatch, kbatch, "flash_attention")
        .and_then(|b| crate::shape::broadcast_shapes(&b, vbatch, "flash_attention"))
        .map_err(|_| bad("batch dimensions cannot be broadcast together".into()))?;
    let dtype = DType::promote(DType::promote(q.dtype(), k.dtype()), v.dtype());
    let dtype = if dtype.is_float() { dtype } else { DType::F32 };
    let mut out_shape = batch;
    out_shape.extend([sq, dv]);
    if q.is_abstract() || k.is_abstract() || v.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, dtype);
    }
    if memory::check_shape_alloc(&out_shape, dtype)? == 0 {
        // no output: the scores (`[..., sq, sk]`, possibly huge) are never needed
        return Tensor::zeros(&out_shape, dtype);
    }
    let compute = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let scale = scale.unwrap_or(1.0 / (dq as f64).sqrt());
    let nd = k.ndim();
    let mut perm: Vec<usize> = (0..nd).collect();
    perm.swap(nd - 1, nd - 2);
    let kt = k.cast(compute)?.transpose(Some(&perm))?;
    let s = crate::ops::matmul::matmul(&q.cast(compute)?, &kt, Some(compute))?;
    let s = s.mul(scale)?;
    let s = if causal {
        // mask[i, j] = j > i.
        let mask: Vec<bool> = (0..sq).flat_map(|i| (0..sk).map(move |j| j > i)).collect();
        let mask = Tensor::from_bool(&[sq, sk], mask)?;
        crate::ops::elementwise::where_(&mask, f64::NEG_INFINITY, &s)?
    } else {
        s
    };
    let p = softmax(&s, -1)?;
    // A row with every key masked (only when sk == 0) has no weights: its output is 0.
    let o = crate::ops::matmul::matmul(&p, &v.cast(compute)?, Some(compute))?;
    o.cast(dtype)
}

impl Tensor {
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        softmax(self, axis)
    }
}
