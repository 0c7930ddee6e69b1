//! Broadcasting loops shared by the elementwise ops: each output element is computed once, in
//! parallel chunks for large outputs.

use rayon::prelude::*;

use crate::shape::{broadcast_strides, Layout};
use crate::storage::{buffer, PAR_CHUNK, PAR_MIN};

fn run_chunks<O: Send>(out: &mut [O], work: impl Fn(usize, &mut [O]) + Sync) {
    if out.len() >= PAR_MIN {
        out.par_chunks_mut(PAR_CHUNK)
            .enumerate()
            .for_each(|(c, ch)| work(c * PAR_CHUNK, ch));
    } else {
        work(0, out);
    }
}

/// `out[i] = f(a[..], b[..])` with NumPy broadcasting of `a_shape` and `b_shape` to `out_shape`.
/// `a` and `b` are contiguous and hold exactly their shapes' element counts.
pub fn zip2<A, B, O>(
    out_shape: &[usize],
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    f: impl Fn(A, B) -> O + Sync + Send,
) -> Vec<O>
where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Copy + Send + Default,
{
    let n: usize = out_shape.iter().product();
    let sa = broadcast_strides(a_shape, out_shape);
    let sb = broadcast_strides(b_shape, out_shape);
    let layout = Layout::new(out_shape, [&sa, &sb]);
    let [ia, ib] = layout.inner_strides();
    let mut out = buffer::<O>(n);
    run_chunks(&mut out, |start, chunk| {
        layout.runs(start, start + chunk.len(), |pos, [oa, ob], len| {
            let Some(o) = chunk.get_mut(pos - start..pos - start + len) else {
                return;
            };
            match (ia, ib) {
                (1, 1) => {
                    let (Some(xa), Some(xb)) = (a.get(oa..oa + len), b.get(ob..ob + len)) else {
                        return;
                    };
                    for ((o, &x), &y) in o.iter_mut().zip(xa).zip(xb) {
                        *o = f(x, y);
                    }
                }
                (1, 0) => {
                    let (Some(xa), Some(&y)) = (a.get(oa..oa + len), b.get(ob)) else {
                        return;
                    };
                    for (o, &x) in o.iter_mut().zip(xa) {
                        *o = f(x, y);
                    }
                }
                (0, 1) => {
                    let (Some(&x), Some(xb)) = (a.get(oa), b.get(ob..ob + len)) else {
                        return;
                    };
                    for (o, &y) in o.iter_mut().zip(xb) {
                        *o = f(x, y);
                    }
                }
                _ => {
                    for (j, o) in o.iter_mut().enumerate() {
                        if let (Some(&x), Some(&y)) = (a.get(oa + j * ia), b.get(ob + j * ib)) {
                            *o = f(x, y);
                        }
                    }
                }
            }
        });
    });
    out
}

/// Three-input broadcasting loop (for `where`).
pub fn zip3<A, B, C, O>(
    out_shape: &[usize],
    (a, a_shape): (&[A], &[usize]),
    (b, b_shape): (&[B], &[usize]),
    (c, c_shape): (&[C], &[usize]),
    f: impl Fn(A, B, C) -> O + Sync + Send,
) -> Vec<O>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Sync,
    O: Copy + Send + Default,
{
    let n: usize = out_shape.iter().product();
    let sa = broadcast_strides(a_shape, out_shape);
    let sb = broadcast_strides(b_shape, out_shape);
    let sc = broadcast_strides(c_shape, out_shape);
    let layout = Layout::new(out_shape, [&sa, &sb, &sc]);
    let [ia, ib, ic] = layout.inner_strides();
    let mut out = buffer::<O>(n);
    run_chunks(&mut out, |start, chunk| {
        layout.runs(start, start + chunk.len(), |pos, [oa, ob, oc], len| {
            let Some(o) = chunk.get_mut(pos - start..pos - start + len) else {
                return;
            };
            for (j, o) in o.iter_mut().enumerate() {
                if let (Some(&x), Some(&y), Some(&z)) =
                    (a.get(oa + j * ia), b.get(ob + j * ib), c.get(oc + j * ic))
                {
                    *o = f(x, y, z);
                }
            }
        });
    });
    out
}

/// `out[i] = f(a[i])` over a contiguous slice, in parallel when large.
pub fn map1<A: Copy + Sync, O: Copy + Send + Default>(
    a: &[A],
    f: impl Fn(A) -> O + Sync + Send,
) -> Vec<O> {
    let mut out = buffer::<O>(a.len());
    run_chunks(&mut out, |start, chunk| {
        if let Some(src) = a.get(start..start + chunk.len()) {
            for (o, &x) in chunk.iter_mut().zip(src) {
                *o = f(x);
            }
        }
    });
    out
}

/// Gathers a strided view (`offset` plus signed `strides` over `shape`) into a contiguous vector.
pub fn gather<T: Copy + Send + Sync + Default>(
    src: &[T],
    offset: usize,
    shape: &[usize],
    strides: &[isize],
) -> Vec<T> {
    let n: usize = shape.iter().product();
    let nd = shape.len();
    let mut out = buffer::<T>(n);
    if n == 0 {
        return out;
    }
    let inner = shape.last().copied().unwrap_or(1);
    let inner_stride = strides.last().copied().unwrap_or(0);
    run_chunks(&mut out, |start, chunk| {
        // Unravel `start`, then walk with an odometer over the outer dims.
        let mut idx = vec![0usize; nd];
        let mut rem = start;
        for i in (0..nd).rev() {
            idx[i] = rem % shape[i];
            rem /= shape[i];
        }
        let mut pos = 0usize;
        while pos < chunk.len() {
            let mut off = offset as isize;
            for (&i, &s) in idx.iter().zip(strides) {
                off += i as isize * s;
            }
            let col = idx.last().copied().unwrap_or(0);
            let len = (inner - col).min(chunk.len() - pos);
            for j in 0..len {
                let at = off + j as isize * inner_stride;
                if let (Some(o), Some(&v)) = (chunk.get_mut(pos + j), src.get(at as usize)) {
                    *o = v;
                }
            }
            pos += len;
            if nd == 0 {
                break;
            }
            idx[nd - 1] += len;
            let mut d = nd - 1;
            while d > 0 && idx[d] >= shape[d] {
                idx[d] = 0;
                d -= 1;
                idx[d] += 1;
            }
        }
    });
    out
}
