//! Shape helpers: printing, broadcasting, axes, strides and the run iterator the kernels use.

use crate::error::{Result, RuntimeError};

/// `[2, 3]` (a 0-d shape prints `[]`).
pub fn fmt_shape(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// NumPy broadcasting of two shapes (the compiler's rule, `graph::infer::broadcast`); E0200
/// naming both shapes and the op.
pub fn broadcast_shapes(a: &[usize], b: &[usize], op: &str) -> Result<Vec<usize>> {
    tessera_compiler::graph::infer::broadcast(a, b).map_err(|e| shape_error(e, op))
}

/// A shape rule's refusal as E0200 naming the op (two shapes that do not broadcast name both).
pub fn shape_error(e: tessera_compiler::graph::infer::TypeError, op: &str) -> RuntimeError {
    use tessera_compiler::graph::infer::TypeError;
    match e {
        TypeError::Broadcast { a, b, .. } => RuntimeError::shape(format!(
            "{op}: shapes {} and {} cannot be broadcast together",
            fmt_shape(&a),
            fmt_shape(&b)
        )),
        e => RuntimeError::shape(format!("{op}: {e}")),
    }
}

/// Normalises a possibly negative axis for `ndim` dimensions (E0500 when out of range).
pub fn normalize_axis(axis: isize, ndim: usize, op: &str) -> Result<usize> {
    let n = ndim as isize;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(RuntimeError::runtime(format!(
            "{op}: axis {axis} is out of range for a tensor with {ndim} dimension{}",
            if ndim == 1 { "" } else { "s" }
        )));
    }
    Ok(a as usize)
}

/// Row-major strides (in elements).
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![0usize; shape.len()];
    let mut acc = 1usize;
    for (st, &d) in s.iter_mut().zip(shape).rev() {
        *st = acc;
        acc = acc.saturating_mul(d);
    }
    s
}

/// Strides of a contiguous tensor of shape `src` broadcast to `out` (0 on broadcast dims).
pub fn broadcast_strides(src: &[usize], out: &[usize]) -> Vec<usize> {
    let cs = contiguous_strides(src);
    let off = out.len() - src.len();
    (0..out.len())
        .map(|i| {
            if i < off {
                0
            } else {
                let d = src[i - off];
                if d == 1 {
                    0
                } else {
                    cs[i - off]
                }
            }
        })
        .collect()
}

/// A coalesced iteration space over an output shape with `N` strided inputs.
/// Adjacent dimensions merge when every input's strides allow it; always at least 1 dim.
#[derive(Clone, Debug)]
pub struct Layout<const N: usize> {
    pub shape: Vec<usize>,
    pub strides: Vec<[usize; N]>,
}

impl<const N: usize> Layout<N> {
    /// `strides[k]` are input k's strides over `shape`.
    pub fn new(shape: &[usize], strides: [&[usize]; N]) -> Layout<N> {
        let mut out_shape: Vec<usize> = Vec::new();
        let mut out_strides: Vec<[usize; N]> = Vec::new();
        for (i, &d) in shape.iter().enumerate() {
            if d == 1 {
                continue;
            }
            let st: [usize; N] = std::array::from_fn(|k| strides[k][i]);
            if let (Some(ld), Some(ls)) = (out_shape.last_mut(), out_strides.last_mut()) {
                if (0..N).all(|k| ls[k] == st[k] * d) {
                    *ld *= d;
                    *ls = st;
                    continue;
                }
            }
            out_shape.push(d);
            out_strides.push(st);
        }
        if out_shape.is_empty() {
            out_shape.push(1);
            out_strides.push([0; N]);
        }
        Layout {
            shape: out_shape,
            strides: out_strides,
        }
    }

    /// Calls `f(out_index, input_offsets, len)` for each run of the innermost dimension that
    /// intersects flat output range `[start, end)`. Within a run, input k advances by
    /// `inner_strides()[k]` per element.
    pub fn runs(&self, start: usize, end: usize, mut f: impl FnMut(usize, [usize; N], usize)) {
        if start >= end {
            return;
        }
        let nd = self.shape.len();
        let inner = self.shape[nd - 1];
        // Unravel `start`.
        let mut idx = vec![0usize; nd];
        let mut rem = start;
        for i in (0..nd).rev() {
            idx[i] = rem % self.shape[i];
            rem /= self.shape[i];
        }
        let mut offs = [0usize; N];
        for (i, &ix) in idx.iter().enumerate() {
            for (k, o) in offs.iter_mut().enumerate() {
                *o += ix * self.strides[i][k];
            }
        }
        let mut pos = start;
        while pos < end {
            let len = (inner - idx[nd - 1]).min(end - pos);
            f(pos, offs, len);
            pos += len;
            if pos >= end {
                break;
            }
            // Advance the multi-index by `len` in the inner dim, carrying outward.
            idx[nd - 1] += len;
            for (k, o) in offs.iter_mut().enumerate() {
                *o += len * self.strides[nd - 1][k];
            }
            let mut d = nd - 1;
            while idx[d] == self.shape[d] && d > 0 {
                for (k, o) in offs.iter_mut().enumerate() {
                    *o -= idx[d] * self.strides[d][k];
                }
                idx[d] = 0;
                d -= 1;
                idx[d] += 1;
                for (k, o) in offs.iter_mut().enumerate() {
                    *o += self.strides[d][k];
                }
            }
        }
    }

    pub fn inner_strides(&self) -> [usize; N] {
        self.strides.last().copied().unwrap_or([0; N])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(
            broadcast_shapes(&[2, 1, 3], &[4, 1], "add").ok(),
            Some(vec![2, 4, 3])
        );
        assert_eq!(broadcast_shapes(&[], &[5], "add").ok(), Some(vec![5]));
        assert_eq!(broadcast_shapes(&[0], &[1], "add").ok(), Some(vec![0]));
        assert_eq!(
            broadcast_shapes(&[3, 0], &[3, 1], "add").ok(),
            Some(vec![3, 0])
        );
        let e = broadcast_shapes(&[2, 3], &[4], "mul").unwrap_err();
        assert_eq!(e.code, crate::Code::E0200);
        assert_eq!(
            e.message,
            "mul: shapes [2, 3] and [4] cannot be broadcast together"
        );
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axis(-1, 3, "sum").ok(), Some(2));
        assert_eq!(normalize_axis(0, 1, "sum").ok(), Some(0));
        assert!(normalize_axis(3, 3, "sum").is_err());
        assert!(normalize_axis(-4, 3, "sum").is_err());
        assert!(normalize_axis(0, 0, "sum").is_err());
    }

    #[test]
    fn runs_cover_every_element_once() {
        let out = [2usize, 3, 4];
        let a = broadcast_strides(&[3, 1], &out);
        let b = broadcast_strides(&[2, 1, 4], &out);
        let l = Layout::new(&out, [&a, &b]);
        for (s, e) in [(0, 24), (5, 17), (0, 1), (23, 24), (3, 3)] {
            let mut seen = Vec::new();
            l.runs(s, e, |pos, offs, len| {
                let st = l.inner_strides();
                for j in 0..len {
                    seen.push((pos + j, offs[0] + j * st[0], offs[1] + j * st[1]));
                }
            });
            assert_eq!(seen.len(), e - s);
            for (p, oa, ob) in seen {
                let (i, j, k) = (p / 12, (p / 4) % 3, p % 4);
                assert_eq!((oa, ob), (j, i * 4 + k), "pos {p}");
            }
        }
        // Same shapes coalesce into one dim.
        let c = contiguous_strides(&out);
        let l = Layout::new(&out, [&c, &c]);
        assert_eq!(l.shape, vec![24]);
    }
}
