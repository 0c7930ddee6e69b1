//! The direct convolution on the cpu: depthwise groups directly, others as im2col + GEMM.

use super::ConvPlan;
use crate::storage::buffer;
use rayon::prelude::*;

/// The compute types: f32 and f64.
pub trait Acc: Copy + Default + Send + Sync + 'static {
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn add(self, b: Self) -> Self;
    /// `c[m×n] = a[m×k] · b[k×n]`, row-major.
    fn gemm(m: usize, n: usize, k: usize, a: &[Self], b: &[Self], c: &mut [Self], par: bool);
}

impl Acc for f32 {
    #[inline(always)]
    fn mul_add(self, a: f32, b: f32) -> f32 {
        self + a * b
    }
    fn add(self, b: f32) -> f32 {
        self + b
    }
    fn gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32], par: bool) {
        crate::ops::cpu_gemm::gemm(m, n, k, a, b, c, par);
    }
}

impl Acc for f64 {
    #[inline(always)]
    fn mul_add(self, a: f64, b: f64) -> f64 {
        self + a * b
    }
    fn add(self, b: f64) -> f64 {
        self + b
    }
    fn gemm(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64], par: bool) {
        crate::ops::cpu_gemm::gemm(m, n, k, a, b, c, par);
    }
}

/// The convolution of contiguous `x` and `w` values (and `bias`) as `[N, O, OH, OW]`.
pub fn run<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
    let [oh, ow] = p.size.output;
    let plane = oh * ow;
    let mut out = buffer::<T>(p.size.batch * p.size.cout * plane);
    if out.is_empty() {
        return out;
    }
    if p.size.cin / p.size.groups == 1 {
        depthwise(p, x, w, &mut out);
    } else {
        grouped_gemm(p, x, w, &mut out);
    }
    if let Some(b) = bias {
        out.par_chunks_mut(plane).enumerate().for_each(|(i, o)| {
            let bv = b[i % p.size.cout];
            o.iter_mut().for_each(|v| *v = v.add(bv));
        });
    }
    out
}

/// The range of output positions `o` whose input `o·stride + off` lies in `0..len`
/// (`off` = tap offset − padding).
fn valid(out: usize, len: usize, stride: usize, off: isize) -> std::ops::Range<usize> {
    // first o with o·s + off ≥ 0; last o with o·s + off ≤ len − 1
    let lo = if off >= 0 {
        0
    } else {
        ((-off) as usize).div_ceil(stride)
    };
    let hi_in = len as isize - 1 - off;
    let hi = if hi_in < 0 {
        0
    } else {
        (hi_in as usize / stride + 1).min(out)
    };
    lo.min(hi)..hi
}

/// One input channel per group: each output plane is a sum over its kernel taps of shifted,
/// strided input rows times the tap's weight. The plane's loops are compiled per ISA (the same
/// bits on every one).
fn depthwise<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], out: &mut [T]) {
    let [oh, ow] = p.size.output;
    let isa = crate::isa::current();
    out.par_chunks_mut(oh * ow)
        .enumerate()
        .for_each(|(plane, o)| depthwise_plane(isa, p, x, w, plane, o));
}

crate::isa_versions! {
    fn depthwise_plane<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], plane: usize, o: &mut [T])
        => depthwise_plane_impl
}

/// Output plane `plane` (image `n`, channel `oc`) of [`depthwise`].
#[inline(always)]
fn depthwise_plane_impl<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], plane: usize, o: &mut [T]) {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.size.input, p.size.kernel, p.size.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (p.stride, p.dilation, p.pad);
    let per_group = p.size.cout / p.size.groups;
    let (n, oc) = (plane / p.size.cout, plane % p.size.cout);
    let ic = oc / per_group;
    let xin = &x[(n * p.size.cin + ic) * ih * iw..][..ih * iw];
    let taps = &w[oc * kh * kw..][..kh * kw];
    for i in 0..kh {
        let rows = valid(oh, ih, sh, (i * dh) as isize - ph as isize);
        for j in 0..kw {
            let wv = taps[i * kw + j];
            let off = (j * dw) as isize - pw as isize;
            let cols = valid(ow, iw, sw, off);
            if cols.is_empty() {
                continue;
            }
            for r in rows.clone() {
                let src = &xin[(r * sh + i * dh - ph) * iw..][..iw];
                let dst = &mut o[r * ow..][..ow];
                if sw == 1 {
                    let s0 = (cols.start as isize + off) as usize;
                    let n = cols.len();
                    for (d, &s) in dst[cols.clone()].iter_mut().zip(&src[s0..s0 + n]) {
                        *d = d.mul_add(wv, s);
                    }
                } else {
                    for c in cols.clone() {
                        let s = src[(c as isize * sw as isize + off) as usize];
                        dst[c] = dst[c].mul_add(wv, s);
                    }
                }
            }
        }
    }
}

/// im2col of one image's group: `col[(c·kH + i)·kW + j][r·OW + q]` = the input at
/// `(r·sh − ph + i·dh, q·sw − pw + j·dw)` of channel `c`, or 0 in the padding.
fn im2col<T: Acc>(p: &ConvPlan, xg: &[T], col: &mut [T], par: bool) {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.size.input, p.size.kernel, p.size.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (p.stride, p.dilation, p.pad);
    let fill = |(row, dst): (usize, &mut [T])| {
        let (c, t) = (row / (kh * kw), row % (kh * kw));
        let (i, j) = (t / kw, t % kw);
        let xin = &xg[c * ih * iw..][..ih * iw];
        let rows = valid(oh, ih, sh, (i * dh) as isize - ph as isize);
        let off = (j * dw) as isize - pw as isize;
        let cols = valid(ow, iw, sw, off);
        dst.fill(T::default());
        if cols.is_empty() {
            return;
        }
        for r in rows {
            let src = &xin[(r * sh + i * dh - ph) * iw..][..iw];
            let d = &mut dst[r * ow..][..ow];
            if sw == 1 {
                let s0 = (cols.start as isize + off) as usize;
                d[cols.clone()].copy_from_slice(&src[s0..s0 + cols.len()]);
            } else {
                for q in cols.clone() {
                    d[q] = src[(q as isize * sw as isize + off) as usize];
                }
            }
        }
    };
    if par {
        col.par_chunks_mut(oh * ow).enumerate().for_each(fill);
    } else {
        col.chunks_mut(oh * ow).enumerate().for_each(fill);
    }
}

/// The values of the im2col matrix [`run`] builds (one group of one image at a time): 0 for a
/// depthwise convolution and for a 1×1 kernel that reads its input as it is; `None` when the
/// count overflows.
pub fn im2col_len(p: &ConvPlan) -> Option<usize> {
    let ([kh, kw], [oh, ow]) = (p.size.kernel, p.size.output);
    let direct = p.size.kernel == [1, 1]
        && p.stride == [1, 1]
        && p.pad == [0, 0]
        && p.size.output == p.size.input;
    if p.size.cin / p.size.groups == 1 || direct {
        return Some(0);
    }
    [kh, kw, oh, ow]
        .into_iter()
        .try_fold(p.size.cin / p.size.groups, usize::checked_mul)
}

/// A GEMM per (image, group) of the group's weights and its im2col matrix.
fn grouped_gemm<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], out: &mut [T]) {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.size.input, p.size.kernel, p.size.output);
    let (cin_g, cout_g) = (p.size.cin / p.size.groups, p.size.cout / p.size.groups);
    let k = cin_g * kh * kw;
    let plane = oh * ow;
    // a 1×1 kernel at stride 1 without padding reads the input as it is
    let direct = p.size.kernel == [1, 1]
        && p.stride == [1, 1]
        && p.pad == [0, 0]
        && p.size.output == p.size.input;
    let one = |idx: usize, o: &mut [T], col: &mut Vec<T>, par: bool| {
        let (n, g) = (idx / p.size.groups, idx % p.size.groups);
        let xg = &x[(n * p.size.cin + g * cin_g) * ih * iw..][..cin_g * ih * iw];
        let wg = &w[g * cout_g * k..][..cout_g * k];
        let b: &[T] = if direct {
            xg
        } else {
            col.resize(k * plane, T::default());
            im2col(p, xg, col, par);
            col
        };
        T::gemm(cout_g, plane, k, wg, b, o, par);
    };
    let jobs = p.size.batch * p.size.groups;
    let macs = cout_g * plane * k;
    let chunk = cout_g * plane;
    if jobs > 1 && macs < (1 << 21) {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each_init(Vec::new, |col, (i, o)| one(i, o, col, false));
    } else {
        let mut col = Vec::new();
        for (i, o) in out.chunks_mut(chunk).enumerate() {
            one(i, o, &mut col, macs >= (1 << 15));
        }
    }
}
