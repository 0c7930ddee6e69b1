//! Ops along one axis that order or accumulate: `argmax argmin sort topk cumsum`, and `stack`
//! (NumPy's semantics; `topk` is PyTorch's). Every op reads the tensor once into f64 (floats)
//! or i64 (ints and bools) and works lane by lane: a lane is the elements along the axis with
//! the other indices fixed.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::shape::normalize_axis;
use crate::tensor::Tensor;
use std::cmp::Ordering;

/// The values of a tensor, in the domain its dtype orders in.
enum Vals {
    F(Vec<f64>),
    I(Vec<i64>),
}

fn read(x: &Tensor, op: &str) -> Result<Vals> {
    let st = x.storage(op)?;
    Ok(if x.dtype().is_float() {
        Vals::F(st.to_f64(x.dtype()).into_owned())
    } else {
        Vals::I(st.to_i64(x.dtype()).into_owned())
    })
}

/// `(outer, n, inner)` of `shape` around `axis`: element `k` of lane `(o, i)` is at
/// `(o·n + k)·inner + i`.
fn lanes(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// NumPy's order for floats: NaN after every number (so `sort` puts NaNs last and `argmax`
/// finds the first NaN).
fn cmp_f(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Index order of one lane of `v` (stable; `descending` reverses the key, keeping ties in
/// index order).
fn lane_order(v: &Vals, lane: &[usize], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..lane.len()).collect();
    let key = |a: usize, b: usize| -> Ordering {
        let o = match v {
            Vals::F(f) => cmp_f(f[lane[a]], f[lane[b]]),
            Vals::I(i) => i[lane[a]].cmp(&i[lane[b]]),
        };
        if descending {
            o.reverse()
        } else {
            o
        }
    };
    idx.sort_by(|&a, &b| key(a, b));
    idx
}

/// The element offsets of every lane of `shape` along `axis`. An empty shape has no lanes
/// and allocates nothing (its axis may still be huge: `(0, 10**10)` along axis 1).
fn each_lane(
    shape: &[usize],
    axis: usize,
    mut f: impl FnMut(&[usize]) -> Result<()>,
) -> Result<()> {
    if shape.contains(&0) {
        return Ok(());
    }
    let (outer, n, inner) = lanes(shape, axis);
    let mut lane = vec![0usize; n];
    for o in 0..outer {
        for i in 0..inner {
            for (k, slot) in lane.iter_mut().enumerate() {
                *slot = (o * n + k) * inner + i;
            }
            f(&lane)?;
        }
    }
    Ok(())
}

/// A tensor of `shape` and `dtype` from values in the domain `like` was read in.
fn build(shape: &[usize], like: &Vals, f: Vec<f64>, i: Vec<i64>, dtype: DType) -> Result<Tensor> {
    match like {
        Vals::F(_) => Tensor::from_f64(shape, f, dtype),
        Vals::I(_) => Tensor::from_i64(shape, i, dtype),
    }
}

/// `argmax`/`argmin(x, axis=None, keepdim=False)`: int64 indices of the first largest
/// (smallest) element; a NaN counts as the extreme (NumPy). `axis=None` indexes the flattened
/// tensor. An empty lane is E0200.
pub fn arg_extreme(
    x: &Tensor,
    axis: Option<isize>,
    keepdim: bool,
    largest: bool,
) -> Result<Tensor> {
    crate::ops::complex::real_only(if largest { "op.argmax" } else { "op.argmin" }, x.dtype())?;
    let op = if largest { "argmax" } else { "argmin" };
    let flat;
    let (x, axis) = match axis {
        None => {
            flat = x.reshape(&[x.numel() as i64])?;
            (&flat, 0usize)
        }
        Some(a) => (x, normalize_axis(a, x.ndim().max(1), op)?),
    };
    let mut shape: Vec<usize> = x.shape().to_vec();
    if shape.is_empty() {
        shape.push(1);
    }
    if shape[axis] == 0 {
        return Err(RuntimeError::shape(format!(
            "{op}: an empty axis has no extreme"
        )));
    }
    let mut out_shape = shape.clone();
    if keepdim {
        out_shape[axis] = 1;
    } else {
        out_shape.remove(axis);
    }
    if x.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, DType::I64);
    }
    let v = read(x, op)?;
    let mut out = Vec::new();
    each_lane(&shape, axis, |lane| {
        let better = |a: usize, b: usize| -> bool {
            match &v {
                Vals::F(f) => {
                    let (p, q) = (f[lane[a]], f[lane[b]]);
                    if q.is_nan() {
                        false
                    } else if p.is_nan() {
                        true
                    } else if largest {
                        p > q
                    } else {
                        p < q
                    }
                }
                Vals::I(i) => {
                    if largest {
                        i[lane[a]] > i[lane[b]]
                    } else {
                        i[lane[a]] < i[lane[b]]
                    }
                }
            }
        };
        let mut best = 0;
        for k in 1..lane.len() {
            if better(k, best) {
                best = k;
            }
        }
        out.push(best as i64);
        Ok(())
    })?;
    Tensor::from_i64(&out_shape, out, DType::I64)
}

/// `sort(x, axis=-1, descending=False)`: the values in order along the axis (stable; NaNs last,
/// first when descending).
pub fn sort(x: &Tensor, axis: isize, descending: bool) -> Result<Tensor> {
    crate::ops::complex::real_only("op.sort", x.dtype())?;
    let shape = x.shape().to_vec();
    if shape.is_empty() {
        return Ok(x.clone());
    }
    let axis = normalize_axis(axis, shape.len(), "sort")?;
    if x.is_abstract() {
        return Ok(x.clone());
    }
    let v = read(x, "sort")?;
    let n = x.numel();
    let (mut f, mut i) = (vec![0f64; n], vec![0i64; n]);
    each_lane(&shape, axis, |lane| {
        for (k, &j) in lane_order(&v, lane, descending).iter().enumerate() {
            match &v {
                Vals::F(src) => f[lane[k]] = src[lane[j]],
                Vals::I(src) => i[lane[k]] = src[lane[j]],
            }
        }
        Ok(())
    })?;
    build(&shape, &v, f, i, x.dtype())
}

/// `topk(x, k, axis=-1, largest=True)`: the `k` largest (smallest) values along the axis in
/// order, and their int64 indices (PyTorch's; ties keep index order, NaN counts as largest).
pub fn topk(x: &Tensor, k: usize, axis: isize, largest: bool) -> Result<(Tensor, Tensor)> {
    crate::ops::complex::real_only("op.topk", x.dtype())?;
    let shape = x.shape().to_vec();
    if shape.is_empty() {
        return Err(RuntimeError::shape("topk: needs at least one dimension"));
    }
    let axis = normalize_axis(axis, shape.len(), "topk")?;
    if k > shape[axis] {
        return Err(RuntimeError::shape(format!(
            "topk: k = {k} is more than the {} elements along axis {axis}",
            shape[axis]
        )));
    }
    let mut out_shape = shape.clone();
    out_shape[axis] = k;
    if x.is_abstract() {
        return Ok((
            Tensor::abstract_tensor(&out_shape, x.dtype())?,
            Tensor::abstract_tensor(&out_shape, DType::I64)?,
        ));
    }
    let v = read(x, "topk")?;
    let m = out_shape.iter().product::<usize>();
    memory::check_alloc(m, DType::I64)?;
    let (mut f, mut iv, mut idx) = (vec![0f64; m], vec![0i64; m], vec![0i64; m]);
    let (_, _, inner) = lanes(&shape, axis);
    let mut lane_no = 0usize;
    each_lane(&shape, axis, |lane| {
        let order = lane_order(&v, lane, largest);
        let (o, i) = (lane_no / inner, lane_no % inner);
        for (slot, &j) in order.iter().take(k).enumerate() {
            let at = (o * k + slot) * inner + i;
            match &v {
                Vals::F(src) => f[at] = src[lane[j]],
                Vals::I(src) => iv[at] = src[lane[j]],
            }
            idx[at] = j as i64;
        }
        lane_no += 1;
        Ok(())
    })?;
    Ok((
        build(&out_shape, &v, f, iv, x.dtype())?,
        Tensor::from_i64(&out_shape, idx, DType::I64)?,
    ))
}

/// `cumsum(x, axis=None)`: running sums along the axis (`None`: of the flattened tensor).
/// Floats keep their dtype (each sum in f64, rounded once); ints and bools give int64 (NumPy's
/// platform int), wrapping on overflow.
pub fn cumsum(x: &Tensor, axis: Option<isize>) -> Result<Tensor> {
    crate::ops::complex::real_only("op.cumsum", x.dtype())?;
    let flat;
    let (x, axis) = match axis {
        None => {
            flat = x.reshape(&[x.numel() as i64])?;
            (&flat, 0usize)
        }
        Some(a) => (x, normalize_axis(a, x.ndim().max(1), "cumsum")?),
    };
    let shape: Vec<usize> = if x.ndim() == 0 {
        vec![1]
    } else {
        x.shape().to_vec()
    };
    let dtype = if x.dtype().is_float() {
        x.dtype()
    } else {
        DType::I64
    };
    if x.is_abstract() {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    let v = read(x, "cumsum")?;
    let n = x.numel();
    let (mut f, mut i) = (vec![0f64; n], vec![0i64; n]);
    each_lane(&shape, axis, |lane| {
        let (mut sf, mut si) = (0f64, 0i64);
        for &at in lane {
            match &v {
                Vals::F(src) => {
                    sf += src[at];
                    f[at] = sf;
                }
                Vals::I(src) => {
                    si = si.wrapping_add(src[at]);
                    i[at] = si;
                }
            }
        }
        Ok(())
    })?;
    build(&shape, &v, f, i, dtype)
}

/// `stack(xs, axis=0)`: tensors of one shape joined along a new axis.
pub fn stack(xs: &[Tensor], axis: isize) -> Result<Tensor> {
    let Some(first) = xs.first() else {
        return Err(RuntimeError::args("stack: needs at least one tensor"));
    };
    let shape = first.shape().to_vec();
    if let Some(bad) = xs.iter().find(|t| t.shape() != shape.as_slice()) {
        return Err(RuntimeError::shape(format!(
            "stack: every tensor must have the same shape, got {} and {}",
            crate::shape::fmt_shape(&shape),
            crate::shape::fmt_shape(bad.shape())
        )));
    }
    let ax = normalize_axis(axis, shape.len() + 1, "stack")?;
    let mut with_axis: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    with_axis.insert(ax, 1);
    let parts = xs
        .iter()
        .map(|t| t.reshape(&with_axis))
        .collect::<Result<Vec<_>>>()?;
    crate::ops::shape_ops::concat(&parts, ax as isize)
}

/// `x` gathered along `axis` at `idx` (negative indices count from the end): the axis gets
/// `idx.len()` entries, `x[..., idx[j], ...]` in turn. An index out of range is E0500.
pub fn take(x: &Tensor, idx: &[i64], axis: usize) -> Result<Tensor> {
    if x.dtype().is_complex() && !x.is_abstract() {
        return crate::ops::complex::take_parts(x, |p| take(p, idx, axis));
    }
    let shape = x.shape().to_vec();
    let Some(&n) = shape.get(axis) else {
        return Err(RuntimeError::shape(format!(
            "index: axis {axis} is out of range for a tensor with {} dimensions",
            shape.len()
        )));
    };
    let mut resolved = Vec::with_capacity(idx.len());
    for &i in idx {
        let j = if i < 0 { i + n as i64 } else { i };
        if j < 0 || j >= n as i64 {
            return Err(RuntimeError::runtime(format!(
                "index {i} is out of range for dimension {axis} of size {n}"
            )));
        }
        resolved.push(j as usize);
    }
    let mut out_shape = shape.clone();
    out_shape[axis] = resolved.len();
    if x.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, x.dtype());
    }
    let m = memory::check_shape_alloc(&out_shape, x.dtype())?;
    memory::check_alloc(m, DType::F64)?;
    if m == 0 {
        return Tensor::zeros(&out_shape, x.dtype());
    }
    let (outer, _, inner) = lanes(&shape, axis);
    let k = resolved.len();
    let at = |o: usize, j: usize, i: usize| (o * k + j) * inner + i;
    let from = |o: usize, j: usize, i: usize| (o * n + resolved[j]) * inner + i;
    let v = read(x, "index")?;
    let (mut f, mut iv) = (Vec::new(), Vec::new());
    match &v {
        Vals::F(_) => f = vec![0f64; m],
        Vals::I(_) => iv = vec![0i64; m],
    }
    for o in 0..outer {
        for j in 0..k {
            for i in 0..inner {
                match &v {
                    Vals::F(src) => f[at(o, j, i)] = src[from(o, j, i)],
                    Vals::I(src) => iv[at(o, j, i)] = src[from(o, j, i)],
                }
            }
        }
    }
    build(&out_shape, &v, f, iv, x.dtype())
}

/// The shape of `take(x, index, axis)`: `x`'s with `index`'s dims at `axis`.
fn take_shape(x: &[usize], index: &[usize], axis: usize) -> Vec<usize> {
    let mut s = x[..axis].to_vec();
    s.extend(index);
    s.extend(&x[axis + 1..]);
    s
}

/// Graph IR's `take`: `x` gathered along `axis` at the entries of the integer tensor `index`
/// (negative ones count from the end); the result has `index`'s dims at the axis. An index out
/// of range is E0500.
pub fn take_at(x: &Tensor, index: &Tensor, axis: usize) -> Result<Tensor> {
    if axis >= x.ndim() || !index.dtype().is_int() {
        return Err(RuntimeError::args(
            "take: an integer index and an axis in range",
        ));
    }
    let out = take_shape(x.shape(), index.shape(), axis);
    if x.is_abstract() || index.is_abstract() {
        return Tensor::abstract_tensor(&out, x.dtype());
    }
    let picks = index.to_i64_vec()?;
    let r = take(x, &picks, axis)?;
    let dims: Vec<i64> = out.iter().map(|&d| d as i64).collect();
    r.reshape(&dims)
}

/// Graph IR's `scatter_add`: zeros of `shape` (the dtype of `src`) with `src`'s slices added
/// at the positions `index` names along `axis`, in index order (repeated indices add up). Float
/// sums are in the dtype's precision (fp32 for fp32/bf16/fp16, fp64 for fp64), the order the
/// generated kernel adds in. An index out of range is E0500.
pub fn scatter_add(index: &Tensor, src: &Tensor, axis: usize, shape: &[usize]) -> Result<Tensor> {
    crate::ops::complex::real_only("scatter_add", src.dtype())?;
    let want = if axis < shape.len() {
        Some(take_shape(shape, index.shape(), axis))
    } else {
        None
    };
    if !index.dtype().is_int() || want.as_deref() != Some(src.shape()) {
        return Err(RuntimeError::args(
            "scatter_add: an integer index, an axis in range, and a source of the result's shape with the index's dims at the axis",
        ));
    }
    if index.is_abstract() || src.is_abstract() {
        return Tensor::abstract_tensor(shape, src.dtype());
    }
    let n = shape[axis];
    let idx = index.to_i64_vec()?;
    let mut resolved = Vec::with_capacity(idx.len());
    for &i in &idx {
        let j = if i < 0 { i + n as i64 } else { i };
        if j < 0 || j >= n as i64 {
            return Err(RuntimeError::runtime(format!(
                "index {i} is out of range for dimension {axis} of size {n}"
            )));
        }
        resolved.push(j as usize);
    }
    let m = memory::check_shape_alloc(shape, src.dtype())?;
    memory::check_alloc(m, DType::F64)?;
    let (outer, _, inner) = lanes(shape, axis);
    let k = resolved.len();
    let to = |o: usize, t: usize, i: usize| (o * n + t) * inner + i;
    let from = |o: usize, j: usize, i: usize| (o * k + j) * inner + i;
    let d = src.dtype();
    match read(src, "scatter_add")? {
        Vals::F(v) if d == DType::F64 => {
            let mut out = vec![0f64; m];
            for o in 0..outer {
                for (j, &t) in resolved.iter().enumerate() {
                    for i in 0..inner {
                        out[to(o, t, i)] += v[from(o, j, i)];
                    }
                }
            }
            Tensor::from_f64(shape, out, d)
        }
        Vals::F(v) => {
            let mut out = vec![0f32; m];
            for o in 0..outer {
                for (j, &t) in resolved.iter().enumerate() {
                    for i in 0..inner {
                        out[to(o, t, i)] += v[from(o, j, i)] as f32;
                    }
                }
            }
            Tensor::from_f32(shape, out, d)
        }
        Vals::I(v) => {
            let mut out = vec![0i64; m];
            for o in 0..outer {
                for (j, &t) in resolved.iter().enumerate() {
                    for i in 0..inner {
                        let s = &mut out[to(o, t, i)];
                        *s = s.wrapping_add(v[from(o, j, i)]);
                    }
                }
            }
            Tensor::from_i64(shape, out, d)
        }
    }
}
