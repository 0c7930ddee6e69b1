//! Broadcasting loops shared by the elementwise ops: each output element is computed once, in
//! parallel chunks for large outputs.

use rayon::prelude::*;

use crate::shape::{broadcast_strides, Layout};
use std::mem::MaybeUninit;

use crate::storage::{advise_huge, buffer, PAR_CHUNK, PAR_MIN};

/// Runs `work(start, chunk)` over `out`, in parallel chunks when large. `work` is a trait object
/// so that the parallel driver is compiled once per output type, not once per elementwise
/// function.
fn run_chunks<O: Send>(out: &mut [O], work: &(dyn Fn(usize, &mut [O]) + Sync)) {
    if out.len() >= PAR_MIN {
        out.par_chunks_mut(PAR_CHUNK)
            .enumerate()
            .for_each(|(c, ch)| work(c * PAR_CHUNK, ch));
    } else {
        work(0, out);
    }
}

/// A vector of `n` elements written chunk by chunk (in parallel when large) by
/// `fill(start, chunk)`, without zeroing them first (the elementwise ops are memory-bound and a
/// zeroing pass is a third of their traffic). `fill` returns whether it wrote every element of
/// its chunk; where it says no, the chunk is filled with `O::default()`, so no element is ever
/// read unwritten.
pub(crate) fn filled<O: Copy + Send + Default>(
    n: usize,
    fill: &(dyn Fn(usize, &mut [MaybeUninit<O>]) -> bool + Sync),
) -> Vec<O> {
    let mut out: Vec<O> = Vec::with_capacity(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    advise_huge(spare.as_ptr(), n);
    run_chunks(spare, &|start, chunk| {
        if !fill(start, chunk) {
            for o in chunk.iter_mut() {
                o.write(O::default());
            }
        }
    });
    // SAFETY: the chunks cover `spare`'s n slots, and each chunk was either written entirely
    // by `fill` (it returned true) or filled with defaults just above; `out` has capacity n. A
    // panic leaves the length 0, so nothing unwritten is ever read or dropped.
    unsafe { out.set_len(n) };
    out
}

/// Walks [`Layout::runs`] over one chunk of the output starting at flat index `start`:
/// `run(o, input_offsets)` must write all of `o`. Returns whether the runs covered the chunk
/// exactly, one after another (what [`filled`] asks of its `fill`).
fn cover_chunk<O, const N: usize>(
    layout: &Layout<N>,
    start: usize,
    chunk: &mut [MaybeUninit<O>],
    mut run: impl FnMut(&mut [MaybeUninit<O>], [usize; N]),
) -> bool {
    let mut done = 0;
    let mut ok = true;
    layout.runs(start, start + chunk.len(), |pos, offs, len| {
        let at = pos - start;
        match chunk.get_mut(at..at + len) {
            Some(o) if ok && at == done => {
                run(o, offs);
                done += len;
            }
            _ => ok = false,
        }
    });
    ok && done == chunk.len()
}

/// One run of [`zip2`]: `o[j] = f(a[j·ia], b[j·ib])` (`a` and `b` start at the run's first
/// elements), with the unit and zero strides (the common cases) as loops of their own so that
/// they vectorise. Writes every element of `o` (the default where an input is out of range,
/// which the callers never let happen).
#[inline(always)]
fn zip_run_impl<A: Copy, B: Copy, O: Default, F: Fn(A, B) -> O>(
    o: &mut [MaybeUninit<O>],
    a: &[A],
    ia: usize,
    b: &[B],
    ib: usize,
    f: &F,
) {
    let len = o.len();
    match (ia, ib, a.get(..len), b.get(..len)) {
        (1, 1, Some(xa), Some(xb)) => {
            for ((o, &x), &y) in o.iter_mut().zip(xa).zip(xb) {
                o.write(f(x, y));
            }
            return;
        }
        (1, 0, Some(xa), _) => {
            if let Some(&y) = b.first() {
                for (o, &x) in o.iter_mut().zip(xa) {
                    o.write(f(x, y));
                }
                return;
            }
        }
        (0, 1, _, Some(xb)) => {
            if let Some(&x) = a.first() {
                for (o, &y) in o.iter_mut().zip(xb) {
                    o.write(f(x, y));
                }
                return;
            }
        }
        _ => {}
    }
    for (j, o) in o.iter_mut().enumerate() {
        o.write(match (a.get(j * ia), b.get(j * ib)) {
            (Some(&x), Some(&y)) => f(x, y),
            _ => O::default(),
        });
    }
}

crate::isa_versions! {
    fn zip_run<A: Copy, B: Copy, O: Default, F: Fn(A, B) -> O>(
        o: &mut [MaybeUninit<O>], a: &[A], ia: usize, b: &[B], ib: usize, f: &F
    ) => zip_run_impl
}

/// `out[i] = f(a[..], b[..])` with NumPy broadcasting of `a_shape` and `b_shape` to `out_shape`.
/// `a` and `b` are contiguous and hold exactly their shapes' element counts. The loops are
/// compiled per ISA (`isa_versions!`): the same bits on every one.
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
    let isa = crate::isa::current();
    filled(n, &|start, chunk| {
        cover_chunk(&layout, start, chunk, |o, [oa, ob]| {
            let (xa, xb) = (a.get(oa..).unwrap_or(&[]), b.get(ob..).unwrap_or(&[]));
            zip_run(isa, o, xa, ia, xb, ib, &f);
        })
    })
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
    let isa = crate::isa::current();
    filled(n, &|start, chunk| {
        cover_chunk(&layout, start, chunk, |o, [oa, ob, oc]| {
            let xa = a.get(oa..).unwrap_or(&[]);
            let (xb, xc) = (b.get(ob..).unwrap_or(&[]), c.get(oc..).unwrap_or(&[]));
            zip3_run(isa, o, (xa, ia), (xb, ib), (xc, ic), &f);
        })
    })
}

/// One run of [`zip3`]: `o[j] = f(a[j·ia], b[j·ib], c[j·ic])`, all-unit strides as a loop of
/// its own; writes every element of `o` (as [`zip_run_impl`]).
#[inline(always)]
fn zip3_run_impl<A: Copy, B: Copy, C: Copy, O: Default, F: Fn(A, B, C) -> O>(
    o: &mut [MaybeUninit<O>],
    (a, ia): (&[A], usize),
    (b, ib): (&[B], usize),
    (c, ic): (&[C], usize),
    f: &F,
) {
    let len = o.len();
    if let ((1, 1, 1), Some(a), Some(b), Some(c)) =
        ((ia, ib, ic), a.get(..len), b.get(..len), c.get(..len))
    {
        for (((o, &x), &y), &z) in o.iter_mut().zip(a).zip(b).zip(c) {
            o.write(f(x, y, z));
        }
        return;
    }
    for (j, o) in o.iter_mut().enumerate() {
        o.write(match (a.get(j * ia), b.get(j * ib), c.get(j * ic)) {
            (Some(&x), Some(&y), Some(&z)) => f(x, y, z),
            _ => O::default(),
        });
    }
}

crate::isa_versions! {
    fn zip3_run<A: Copy, B: Copy, C: Copy, O: Default, F: Fn(A, B, C) -> O>(
        o: &mut [MaybeUninit<O>], a: (&[A], usize), b: (&[B], usize), c: (&[C], usize), f: &F
    ) => zip3_run_impl
}

/// `out[i] = f(a[i])` over a contiguous slice, in parallel when large, the loop compiled per
/// ISA (the same bits on every one).
pub fn map1<A: Copy + Sync, O: Copy + Send + Default>(
    a: &[A],
    f: impl Fn(A) -> O + Sync + Send,
) -> Vec<O> {
    crate::storage::par_map(a, |&x| f(x))
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
    if nd >= 2 && strides[nd - 2] == 1 && strides[nd - 1] != 1 && n >= TILE * TILE {
        gather_swapped(src, offset, shape, strides, &mut out);
        return out;
    }
    let inner = shape.last().copied().unwrap_or(1);
    let inner_stride = strides.last().copied().unwrap_or(0);
    run_chunks(&mut out, &|start, chunk| {
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

/// Side of the square tiles [`gather_swapped`] copies.
const TILE: usize = 32;

/// [`gather`] of a view whose last two axes are the source's in the other order (the
/// second-to-last is contiguous in the source: a matrix's `.T`, a batch of them): by
/// TILE×TILE tiles, each read a column run at a time and written into TILE output rows, instead
/// of reading the source a whole row stride apart for every element of an output row. Tasks are
/// TILE output rows of one batch matrix.
fn gather_swapped<T: Copy + Send + Sync + Default>(
    src: &[T],
    offset: usize,
    shape: &[usize],
    strides: &[isize],
    out: &mut [T],
) {
    let nd = shape.len();
    let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
    let col_stride = strides[nd - 1];
    let outer = &shape[..nd - 2];
    // The source offset of batch matrix `b`.
    let base = |b: usize| {
        let (mut rem, mut at) = (b, offset as isize);
        for d in (0..outer.len()).rev() {
            at += (rem % outer[d]) as isize * strides[d];
            rem /= outer[d];
        }
        at
    };
    let tile_rows = |base: isize, t: usize, dst: &mut [T]| {
        let r0 = t * TILE;
        let h = dst.len() / cols;
        // One tile, transposed through a buffer on the stack: column runs in, output rows out.
        let mut buf = [[T::default(); TILE]; TILE];
        for c0 in (0..cols).step_by(TILE) {
            let w = TILE.min(cols - c0);
            for (dc, col) in buf.iter_mut().enumerate().take(w) {
                let at = base + (c0 + dc) as isize * col_stride + r0 as isize;
                if let Some(run) = usize::try_from(at).ok().and_then(|at| src.get(at..at + h)) {
                    col[..h].copy_from_slice(run);
                }
            }
            for r in 0..h {
                let row = &mut dst[r * cols + c0..r * cols + c0 + w];
                for (o, col) in row.iter_mut().zip(&buf) {
                    *o = col[r];
                }
            }
        }
    };
    let matrix = |(b, m): (usize, &mut [T])| {
        let at = base(b);
        for (t, dst) in m.chunks_mut(TILE * cols).enumerate() {
            tile_rows(at, t, dst);
        }
    };
    if out.len() < PAR_MIN {
        out.chunks_mut(rows * cols).enumerate().for_each(matrix);
    } else if out.len() / (rows * cols) >= 4 * rayon::current_num_threads() {
        out.par_chunks_mut(rows * cols).enumerate().for_each(matrix);
    } else {
        // Few matrices: their row tiles in parallel.
        out.par_chunks_mut(rows * cols)
            .enumerate()
            .for_each(|(b, m)| {
                let at = base(b);
                m.par_chunks_mut(TILE * cols)
                    .enumerate()
                    .for_each(|(t, dst)| tile_rows(at, t, dst));
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element-by-element definition of a strided view.
    fn naive(src: &[u32], offset: usize, shape: &[usize], strides: &[isize]) -> Vec<u32> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|flat| {
                let (mut rem, mut at) = (flat, offset as isize);
                for d in (0..shape.len()).rev() {
                    at += (rem % shape[d]) as isize * strides[d];
                    rem /= shape[d];
                }
                src[at as usize]
            })
            .collect()
    }

    /// Transposes of the last two axes (the tiled path: ragged tiles, batches, an offset, a
    /// reversed column axis) and other permutations give the definition's elements.
    #[test]
    fn gather_matches_the_definition() {
        let src: Vec<u32> = (0..200_000).collect();
        // (shape, strides, offset) of views into `src`.
        let cases: [(&[usize], &[isize], usize); 6] = [
            (&[300, 200], &[1, 300], 0),
            (&[33, 65], &[1, 33], 7),
            (&[3, 70, 41], &[41 * 70, 1, 70], 0),
            (&[2, 3, 40, 50], &[3 * 2000, 2000, 1, 40], 5),
            (&[64, 40], &[1, -64], 64 * 39),
            (&[40, 30, 20], &[1, 40, 1200], 0),
        ];
        for (shape, strides, offset) in cases {
            let want = naive(&src, offset, shape, strides);
            assert!(
                gather(&src, offset, shape, strides) == want,
                "{shape:?} {strides:?} +{offset}"
            );
        }
    }

    /// The flat index into a tensor of `shape` that output element `flat` of `out` reads under
    /// NumPy broadcasting.
    fn source(flat: usize, out: &[usize], shape: &[usize]) -> usize {
        let (mut rem, mut at, mut stride) = (flat, 0, 1);
        for d in (0..out.len()).rev() {
            let i = rem % out[d];
            rem /= out[d];
            let Some(k) = (d + shape.len()).checked_sub(out.len()) else {
                continue;
            };
            if shape[k] != 1 {
                at += i * stride;
            }
            stride *= shape[k];
        }
        at
    }

    /// zip2, zip3 and map1 give the definition's elements: broadcasts of rows, columns, scalars
    /// and middle axes, outputs large enough to run in parallel chunks whose boundaries fall
    /// inside runs, and empty ones.
    #[test]
    fn broadcasting_loops_match_the_definition() {
        let shapes: [(&[usize], &[usize], &[usize]); 9] = [
            (&[9, 133], &[133], &[9, 1]),
            (&[9, 1], &[9, 133], &[133]),
            (&[], &[5, 40_000], &[5, 1]),
            (&[300, 301], &[300, 1], &[301]),
            (&[7, 1, 5], &[1, 6, 5], &[7, 6, 1]),
            (&[5, 40_000], &[], &[5, 40_000]),
            (&[3, 20_000, 2], &[3, 1, 2], &[20_000, 1]),
            (&[0, 4], &[4], &[1]),
            (&[], &[], &[]),
        ];
        let f = |x: u32, y: u32| x.wrapping_mul(31).wrapping_add(y);
        // values differ from case to case, so that an element left unwritten cannot hold an
        // earlier case's right answer
        for (case, (sa, sb, sc)) in (0u32..).zip(shapes) {
            let salt = case.wrapping_mul(1_000_003);
            let (na, nb, nc) = (
                sa.iter().product::<usize>(),
                sb.iter().product::<usize>(),
                sc.iter().product::<usize>(),
            );
            let a: Vec<u32> = (0..na as u32).map(|v| v ^ salt).collect();
            let b: Vec<u32> = (0..nb as u32).map(|v| (v * 7 + 1) ^ salt).collect();
            let c: Vec<bool> = (0..nc).map(|v| v % 3 == 0).collect();
            let out = crate::shape::broadcast_shapes(sa, sb, "t").unwrap();
            let out3 = crate::shape::broadcast_shapes(&out, sc, "t").unwrap();
            let n: usize = out.iter().product();
            let want: Vec<u32> = (0..n)
                .map(|i| f(a[source(i, &out, sa)], b[source(i, &out, sb)]))
                .collect();
            assert!(zip2(&out, &a, sa, &b, sb, f) == want, "zip2 {sa:?} {sb:?}");
            let n3: usize = out3.iter().product();
            let want3: Vec<u32> = (0..n3)
                .map(|i| {
                    let (x, y) = (a[source(i, &out3, sa)], b[source(i, &out3, sb)]);
                    if c[source(i, &out3, sc)] {
                        x
                    } else {
                        y
                    }
                })
                .collect();
            let got3 = zip3(
                &out3,
                (&c, sc),
                (&a, sa),
                (&b, sb),
                |c, x, y| {
                    if c {
                        x
                    } else {
                        y
                    }
                },
            );
            assert!(got3 == want3, "zip3 {sa:?} {sb:?} {sc:?}");
            let want1: Vec<u32> = a.iter().map(|&x| f(x, 3)).collect();
            assert!(map1(&a, |x| f(x, 3)) == want1, "map1 {sa:?}");
        }
    }

    /// A chunk its `fill` does not vouch for is all defaults, never unwritten memory.
    #[test]
    fn filled_falls_back_to_defaults() {
        let n = PAR_MIN + 3 * PAR_CHUNK + 5;
        let v: Vec<u64> = filled(n, &|start, chunk| {
            for (i, o) in chunk.iter_mut().enumerate() {
                o.write((start + i) as u64 + 1);
            }
            start != PAR_CHUNK
        });
        assert_eq!(v.len(), n);
        for (i, &x) in v.iter().enumerate() {
            let inside = (PAR_CHUNK..2 * PAR_CHUNK).contains(&i);
            assert_eq!(x, if inside { 0 } else { i as u64 + 1 }, "element {i}");
        }
    }
}
