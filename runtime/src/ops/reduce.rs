//! Reductions `sum mean max min`. Deterministic: every output is combined in a fixed blocked order
//! that does not depend on the thread count, accumulating fp32 and narrower in fp64.

use rayon::prelude::*;

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::real::Real;
use crate::shape::{fmt_shape, normalize_axis};
use crate::storage::Storage;
use crate::tensor::Tensor;

pub use tessera_compiler::graph::ReduceOp;

/// Elements per block along the reduced axis. Fixed: it defines the summation order.
const BLOCK: usize = 4096;
/// Columns per task when the reduced axis is not innermost.
const COLS: usize = 1024;

/// Result shape and dtype of a reduction without computing it (the compiler's rule,
/// `graph::ops::reduce::reduce_type`, which the Graph IR verifier runs too); an axis out of
/// range is E0500.
pub fn infer_reduce(
    op: ReduceOp,
    shape: &[usize],
    dtype: DType,
    axis: Option<isize>,
    keepdim: bool,
) -> Result<(Vec<usize>, DType)> {
    tessera_compiler::graph::ops::reduce::reduce_type(op, shape, dtype, axis, keepdim)
        .map_err(|e| RuntimeError::runtime(format!("{}: {e}", op.name())))
}

/// A fold with its identity; `combine` merges two partial results (same order every run).
trait Fold<T>: Sync {
    type A: Copy + Send + Sync + Default;
    fn init(&self) -> Self::A;
    fn fold(&self, a: Self::A, x: T) -> Self::A;
    fn combine(&self, a: Self::A, b: Self::A) -> Self::A;
}

struct SumF;
impl<T: Copy + Into<f64>> Fold<T> for SumF {
    type A = f64;
    #[inline]
    fn init(&self) -> f64 {
        -0.0
    }
    #[inline]
    fn fold(&self, a: f64, x: T) -> f64 {
        a + x.into()
    }
    #[inline]
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

struct SumI;
impl Fold<i64> for SumI {
    type A = i64;
    fn init(&self) -> i64 {
        0
    }
    #[inline]
    fn fold(&self, a: i64, x: i64) -> i64 {
        a.wrapping_add(x)
    }
    fn combine(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
}

/// max (true) or min of floats, NaN propagating, accumulated in `A`: fp64 for fp64 values,
/// fp32 for fp32 and narrower (choosing a value is exact, so the result is the one fp64 would
/// give, with twice the lanes per vector).
struct MaxF<A>(bool, std::marker::PhantomData<A>);
impl<A: Real> MaxF<A> {
    fn new(max: bool) -> Self {
        MaxF(max, std::marker::PhantomData)
    }
    #[inline]
    fn pick(&self, a: A, x: A) -> A {
        if a.is_nan() || x.is_nan() {
            A::NAN
        } else if (self.0 && x > a) || (!self.0 && x < a) {
            x
        } else {
            a
        }
    }
}
impl<T: Copy + Into<A>, A: Real> Fold<T> for MaxF<A> {
    type A = A;
    fn init(&self) -> A {
        A::from_f64(if self.0 {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    }
    #[inline]
    fn fold(&self, a: A, x: T) -> A {
        self.pick(a, x.into())
    }
    #[inline]
    fn combine(&self, a: A, x: A) -> A {
        self.pick(a, x)
    }
}

struct MaxI(bool);
impl Fold<i64> for MaxI {
    type A = i64;
    fn init(&self) -> i64 {
        if self.0 {
            i64::MIN
        } else {
            i64::MAX
        }
    }
    #[inline]
    fn fold(&self, a: i64, x: i64) -> i64 {
        self.combine(a, x)
    }
    #[inline]
    fn combine(&self, a: i64, b: i64) -> i64 {
        if self.0 {
            a.max(b)
        } else {
            a.min(b)
        }
    }
}

/// Independent accumulators in [`fold_run`]: enough to hide the add latency (8 AVX registers of
/// f64). Fixed, because it is part of the summation order.
const LANES: usize = 32;

/// Folds a contiguous run with `LANES` independent lanes, combined in a fixed pairwise tree.
#[inline(always)]
fn fold_run_impl<T: Copy, F: Fold<T>>(f: &F, xs: &[T]) -> F::A {
    let mut lanes = [f.init(); LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = f.fold(*l, x);
        }
    }
    let mut tail = f.init();
    for &x in chunks.remainder() {
        tail = f.fold(tail, x);
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            lanes[i] = f.combine(lanes[i], lanes[i + width]);
        }
    }
    f.combine(lanes[0], tail)
}

/// Folds `rows` rows of `x`, `stride` apart from `start`, into the columns `dst` (one
/// accumulator per column, rows in order).
#[inline(always)]
fn fold_cols_impl<T: Copy, F: Fold<T>>(
    f: &F,
    dst: &mut [F::A],
    x: &[T],
    start: usize,
    stride: usize,
    rows: usize,
) {
    let n = dst.len();
    let row = |rr: usize| x.get(start + rr * stride..start + rr * stride + n);
    // Four rows per pass: each accumulator takes them in order while it is in a register.
    let mut rr = 0;
    while rr + 4 <= rows {
        if let (Some(x0), Some(x1), Some(x2), Some(x3)) =
            (row(rr), row(rr + 1), row(rr + 2), row(rr + 3))
        {
            for ((((d, &a), &b), &c), &e) in dst.iter_mut().zip(x0).zip(x1).zip(x2).zip(x3) {
                *d = f.fold(f.fold(f.fold(f.fold(*d, a), b), c), e);
            }
        }
        rr += 4;
    }
    for rr in rr..rows {
        if let Some(xr) = row(rr) {
            for (d, &v) in dst.iter_mut().zip(xr) {
                *d = f.fold(*d, v);
            }
        }
    }
}

// Compiled per ISA: the same operations in the same order, so the same bits on every one.
crate::isa_versions! {
    fn fold_run<T: Copy, F: Fold<T>>(f: &F, xs: &[T]) -> F::A => fold_run_impl
}
crate::isa_versions! {
    fn fold_cols<T: Copy, F: Fold<T>>(
        f: &F, dst: &mut [F::A], x: &[T], start: usize, stride: usize, rows: usize
    ) => fold_cols_impl
}

/// Reduces `x` viewed as `[outer, r, inner]` over the middle axis: `outer·inner` results.
fn reduce3<T: Copy + Sync, F: Fold<T>>(
    f: &F,
    x: &[T],
    outer: usize,
    r: usize,
    inner: usize,
) -> Vec<F::A> {
    let nb = r.div_ceil(BLOCK).max(1);
    // partials[(o·nb + b)·inner + i] = fold over block b of x[o, ·, i].
    let mut partials = vec![f.init(); outer * nb * inner];
    let isa = crate::isa::current();
    let work = |ob: usize, ic: usize, dst: &mut [F::A]| {
        let (o, b) = (ob / nb, ob % nb);
        let (r0, r1) = (b * BLOCK, ((b + 1) * BLOCK).min(r));
        if inner == 1 {
            if let (Some(d), Some(xs)) = (dst.first_mut(), x.get(o * r + r0..o * r + r1)) {
                *d = fold_run(isa, f, xs);
            }
            return;
        }
        let start = (o * r + r0) * inner + ic * COLS;
        fold_cols(isa, f, dst, x, start, inner, r1 - r0);
    };
    let total = x.len();
    let inner_chunk = if inner == 1 { 1 } else { COLS };
    if total >= crate::storage::PAR_MIN {
        partials
            .par_chunks_mut(inner.max(1))
            .enumerate()
            .flat_map_iter(|(ob, row)| {
                row.chunks_mut(inner_chunk)
                    .enumerate()
                    .map(move |(ic, d)| (ob, ic, d))
            })
            .for_each(|(ob, ic, d)| work(ob, ic, d));
    } else {
        for (ob, row) in partials.chunks_mut(inner.max(1)).enumerate() {
            for (ic, d) in row.chunks_mut(inner_chunk).enumerate() {
                work(ob, ic, d);
            }
        }
    }
    if nb == 1 {
        return partials;
    }
    // Combine the blocks of each output in block order.
    let mut out = vec![f.init(); outer * inner];
    for (o, orow) in out.chunks_mut(inner.max(1)).enumerate() {
        for (i, v) in orow.iter_mut().enumerate() {
            let mut acc = f.init();
            for b in 0..nb {
                if let Some(&p) = partials.get((o * nb + b) * inner + i) {
                    acc = f.combine(acc, p);
                }
            }
            *v = acc;
        }
    }
    out
}

/// `x` as `[outer, r, inner]` around the reduced axis (`None`: every element, `[1, n, 1]`).
pub(crate) fn around_axis(
    x: &Tensor,
    axis: Option<isize>,
    op: ReduceOp,
) -> Result<(usize, usize, usize)> {
    let shape = x.shape();
    Ok(match axis {
        None => (1, x.numel(), 1),
        Some(ax) => {
            let ax = normalize_axis(ax, shape.len(), op.name())?;
            (
                shape[..ax].iter().product(),
                shape[ax],
                shape[ax + 1..].iter().product(),
            )
        }
    })
}

/// `sum/mean/max/min(x, axis, keepdim)`. Sum of ints and bools is int64; mean of them is fp32.
/// max/min propagate NaN; max/min of an empty axis is E0500; mean of an empty axis is NaN.
pub fn reduce(x: &Tensor, op: ReduceOp, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
    let (out_shape, dtype) = infer_reduce(op, x.shape(), x.dtype(), axis, keepdim)?;
    if x.dtype().is_complex() {
        return super::complex::reduce(x, op, axis, out_shape, dtype);
    }
    if x.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, dtype);
    }
    let shape = x.shape();
    let (outer, r, inner) = around_axis(x, axis, op)?;
    let n_out = memory::check_shape_alloc(&out_shape, dtype)?;
    if r == 0 && n_out > 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        return Err(RuntimeError::runtime(format!(
            "{}: cannot reduce an empty axis (tensor of shape {}) — there is no identity",
            op.name(),
            fmt_shape(shape)
        )));
    }
    if r == 0 || n_out == 0 {
        // nothing to read: an empty sum is +0, an empty mean NaN (max/min refused above)
        let fill = if op == ReduceOp::Mean {
            crate::dtype::Scalar::Float(f64::NAN)
        } else {
            crate::dtype::Scalar::Int(0)
        };
        return Tensor::full(&out_shape, fill, dtype);
    }
    memory::check_alloc(
        outer
            .saturating_mul(r.div_ceil(BLOCK).max(1))
            .saturating_mul(inner),
        DType::F64,
    )?;
    let st = x.storage(op.name())?;
    let src = x.dtype();
    let is_max = op == ReduceOp::Max;
    let storage = if src.is_float() {
        let vals: Vec<f64> = if src == DType::F64 {
            let v = st.to_f64(src);
            match op {
                ReduceOp::Sum | ReduceOp::Mean => reduce3(&SumF, &v, outer, r, inner),
                _ => reduce3(&MaxF::<f64>::new(is_max), &v, outer, r, inner),
            }
        } else {
            let v = st.to_f32(src);
            match op {
                ReduceOp::Sum | ReduceOp::Mean => reduce3(&SumF, &v, outer, r, inner),
                _ => reduce3(&MaxF::<f32>::new(is_max), &v, outer, r, inner)
                    .into_iter()
                    .map(f64::from)
                    .collect(),
            }
        };
        let vals = if r == 0 {
            // An empty sum is +0.0 (the lanes start at -0.0, the identity that keeps -0.0 sums).
            vals.into_iter()
                .map(|s| if s == 0.0 { 0.0 } else { s })
                .collect()
        } else {
            vals
        };
        let vals = if op == ReduceOp::Mean {
            let c = r as f64;
            vals.into_iter().map(|s| s / c).collect()
        } else {
            vals
        };
        Storage::from_f64(vals, dtype)
    } else if op == ReduceOp::Mean {
        let v = st.to_f64(src);
        let c = r as f64;
        let vals: Vec<f64> = reduce3(&SumF, &v, outer, r, inner)
            .into_iter()
            .map(|s| s / c)
            .collect();
        Storage::from_f64(vals, dtype)
    } else {
        let v = st.to_i64(src);
        let vals = match op {
            ReduceOp::Sum => reduce3(&SumI, &v, outer, r, inner),
            _ => reduce3(&MaxI(is_max), &v, outer, r, inner),
        };
        Storage::from_i64(vals, dtype)
    };
    Ok(Tensor::from_storage(out_shape, dtype, storage))
}

impl Tensor {
    pub fn sum(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Sum, axis, keepdim)
    }
    pub fn mean(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Mean, axis, keepdim)
    }
    pub fn max(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Max, axis, keepdim)
    }
    pub fn min(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Min, axis, keepdim)
    }
}
