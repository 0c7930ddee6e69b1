//! `conv1d` and `conv2d` on the cpu (SPEC §4): cross-correlation of `[N, C, (H,) W]` inputs
//! with `[O, C/groups, (kH,) kW]` weights, PyTorch's layout and arithmetic. A 1-d convolution is
//! the 2-d one with a height of 1.
//!
//! Computed in fp32 (fp64 when an operand is fp64) and rounded once to the result dtype:
//! - a group with one input channel (a depthwise convolution) directly: per output plane, per
//!   kernel tap, a run of multiply-adds over the output row, output planes in parallel;
//! - otherwise as a GEMM per (image, group): the weights `[O/g, C/g·kH·kW]` times the
//!   im2col matrix `[C/g·kH·kW, OH·OW]` (the input itself for a 1×1, stride-1, unpadded
//!   kernel), with the same fp32 GEMM as `matmul`. Each output element is accumulated in a
//!   fixed order whatever the thread count.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::shape::fmt_shape;
use crate::storage::{buffer, Storage};
use crate::tensor::Tensor;
use rayon::prelude::*;

/// The padding of a convolution.
#[derive(Clone, Debug, PartialEq)]
pub enum ConvPadding {
    /// `(before, after)` zeros per spatial dim (outermost first).
    Explicit(Vec<(usize, usize)>),
    /// `"same"`: the output as large as the input (stride 1); the odd zero goes after, as
    /// PyTorch pads.
    Same,
}

/// The parameters of a convolution over `dims` spatial dims (1 or 2), each given per dim.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvSpec {
    pub dims: usize,
    pub stride: Vec<usize>,
    pub padding: ConvPadding,
    pub dilation: Vec<usize>,
    pub groups: usize,
}

impl ConvSpec {
    /// The spec of Graph IR convolution attributes (their padding explicit).
    pub fn of_attrs(a: &tessera_compiler::graph::ConvAttrs) -> ConvSpec {
        let d = usize::from(a.dims.clamp(1, 2));
        let from = 2 - d;
        ConvSpec {
            dims: d,
            stride: a.stride[from..].to_vec(),
            padding: ConvPadding::Explicit(a.pad[from..].to_vec()),
            dilation: a.dilation[from..].to_vec(),
            groups: a.groups,
        }
    }

    /// The Graph IR attributes of this spec for an input of spatial sizes `input` and a
    /// kernel of `kernel` (which `"same"` padding depends on); `None` for a bad spec.
    pub fn attrs(&self, kernel: &[usize]) -> Option<tessera_compiler::graph::ConvAttrs> {
        let d = self.dims;
        if !(d == 1 || d == 2) || self.stride.len() != d || self.dilation.len() != d {
            return None;
        }
        let lift = |v: &[usize], one: usize| -> [usize; 2] {
            if d == 1 {
                [one, v[0]]
            } else {
                [v[0], v[1]]
            }
        };
        let (dil, k) = (lift(&self.dilation, 1), lift(kernel, 1));
        let pad = match &self.padding {
            ConvPadding::Explicit(p) if p.len() == d => {
                if d == 1 {
                    [(0, 0), p[0]]
                } else {
                    [p[0], p[1]]
                }
            }
            ConvPadding::Explicit(_) => return None,
            ConvPadding::Same => [0, 1].map(|i| {
                let t = dil[i] * k[i].saturating_sub(1);
                (t / 2, t - t / 2)
            }),
        };
        Some(tessera_compiler::graph::ConvAttrs {
            dims: d as u8,
            stride: lift(&self.stride, 1),
            pad,
            dilation: dil,
            groups: self.groups,
        })
    }
}

/// A convolution's sizes, 1-d ones as 2-d with height 1.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvPlan {
    pub batch: usize,
    pub cin: usize,
    pub cout: usize,
    pub groups: usize,
    /// input (H, W), kernel (kH, kW), output (OH, OW)
    pub input: [usize; 2],
    pub kernel: [usize; 2],
    pub output: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// zeros before the first row and column
    pub pad: [usize; 2],
    /// The result's shape (without the batch dim when the input had none).
    pub out_shape: Vec<usize>,
}

impl ConvPlan {
    /// Multiply-adds of the convolution.
    pub fn macs(&self) -> u64 {
        let [oh, ow] = self.output;
        let [kh, kw] = self.kernel;
        (self.batch * self.cout * oh * ow) as u64 * (self.cin / self.groups.max(1) * kh * kw) as u64
    }
}

fn name(dims: usize) -> &'static str {
    if dims == 1 {
        "conv1d"
    } else {
        "conv2d"
    }
}

/// The sizes of a `dims`-d convolution of these shapes, or the error a user sees.
pub fn plan(x: &[usize], w: &[usize], bias: Option<&[usize]>, spec: &ConvSpec) -> Result<ConvPlan> {
    let d = spec.dims;
    let op = name(d);
    let layout = if d == 1 {
        "x [N, C, L] or [C, L], weight [O, C/groups, kL]"
    } else {
        "x [N, C, H, W] or [C, H, W], weight [O, C/groups, kH, kW]"
    };
    let bad = |why: String| {
        RuntimeError::shape(format!(
            "{op}: x {}, weight {}: {why}",
            fmt_shape(x),
            fmt_shape(w)
        ))
    };
    if !(x.len() == d + 1 || x.len() == d + 2) || w.len() != d + 2 {
        return Err(bad(format!("expected {layout}")));
    }
    let batched = x.len() == d + 2;
    let (batch, xs) = if batched { (x[0], &x[1..]) } else { (1, x) };
    let (cin, cout, groups) = (xs[0], w[0], spec.groups);
    if groups == 0 {
        return Err(RuntimeError::args(format!("{op}: groups must be positive")));
    }
    if cin % groups != 0 || cout % groups != 0 {
        return Err(bad(format!(
            "groups={groups} must divide the input channels ({cin}) and the output channels ({cout})"
        )));
    }
    if w[1] * groups != cin {
        return Err(bad(format!(
            "the weight has {} input channels per group; x has {cin} channels in {groups} group(s), {} per group",
            w[1],
            cin / groups
        )));
    }
    if let Some(b) = bias {
        if b != [cout] {
            return Err(RuntimeError::shape(format!(
                "{op}: bias {} must be [{cout}], one per output channel",
                fmt_shape(b)
            )));
        }
    }
    for (what, v) in [("stride", &spec.stride), ("dilation", &spec.dilation)] {
        if v.len() != d || v.contains(&0) {
            return Err(RuntimeError::args(format!(
                "{op}: {what} must be {} positive int(s)",
                d
            )));
        }
    }
    // as 2-d: height 1 for 1-d
    let lift = |v: &[usize], one: usize| -> [usize; 2] {
        if d == 1 {
            [one, v[0]]
        } else {
            [v[0], v[1]]
        }
    };
    let input = lift(&xs[1..], 1);
    let kernel = lift(&w[2..], 1);
    let stride = lift(&spec.stride, 1);
    let dilation = lift(&spec.dilation, 1);
    let pads: [(usize, usize); 2] = match &spec.padding {
        ConvPadding::Explicit(p) => {
            if p.len() != d {
                return Err(RuntimeError::args(format!(
                    "{op}: padding must be {d} non-negative int(s)"
                )));
            }
            if d == 1 {
                [(0, 0), p[0]]
            } else {
                [p[0], p[1]]
            }
        }
        ConvPadding::Same => {
            if stride != [1, 1] {
                return Err(RuntimeError::args(format!(
                    "{op}: padding=\"same\" needs stride 1 (got stride {})",
                    fmt_stride(&spec.stride)
                )));
            }
            let same = |i: usize| {
                let total = dilation[i].saturating_mul(kernel[i].saturating_sub(1));
                (total / 2, total - total / 2)
            };
            [same(0), same(1)]
        }
    };
    let mut output = [0; 2];
    for i in 0..2 {
        if kernel[i] == 0 {
            return Err(bad("the weight has an empty kernel dim".into()));
        }
        // saturating: sizes from a script can be anything
        let span = dilation[i].saturating_mul(kernel[i] - 1).saturating_add(1);
        let padded = input[i].saturating_add(pads[i].0).saturating_add(pads[i].1);
        // far past any tensor this can hold; keeps the index arithmetic in range
        const LIMIT: usize = 1 << 40;
        if span > LIMIT || padded > LIMIT {
            return Err(RuntimeError::resource(format!(
                "{op}: a kernel span of {span} (with dilation) over a padded length of {padded} is past 2^40"
            )));
        }
        if padded < span {
            return Err(bad(format!(
                "the kernel spans {span} (with dilation) but the padded input is {padded} long"
            )));
        }
        output[i] = (padded - span) / stride[i] + 1;
    }
    let mut out_shape = Vec::with_capacity(x.len());
    if batched {
        out_shape.push(batch);
    }
    out_shape.push(cout);
    if d == 2 {
        out_shape.push(output[0]);
    }
    out_shape.push(output[1]);
    Ok(ConvPlan {
        batch,
        cin,
        cout,
        groups,
        input,
        kernel,
        output,
        stride,
        dilation,
        pad: [pads[0].0, pads[1].0],
        out_shape,
    })
}

fn fmt_stride(s: &[usize]) -> String {
    if s.len() == 1 {
        s[0].to_string()
    } else {
        format!("{s:?}")
    }
}

/// The result dtype of a convolution of these operands: their promoted dtype, fp32 for
/// integers and bool.
pub fn result_dtype(x: DType, w: DType, bias: Option<DType>) -> DType {
    let mut d = DType::promote(x, w);
    if let Some(b) = bias {
        d = DType::promote(d, b);
    }
    if d.is_float() {
        d
    } else {
        DType::F32
    }
}

/// How a convolution is computed (`algorithm=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvAlgorithm {
    /// The direct (im2col GEMM or depthwise) computation on the cpu; the compiler's choice in
    /// a kernel.
    Auto,
    Direct,
    /// Through the FFT: `irfft2(rfft2(x) · conj(rfft2(w)))` over the padded plane.
    Fft,
}

/// [`conv`] by `alg`.
pub fn conv_with(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    spec: &ConvSpec,
    alg: ConvAlgorithm,
) -> Result<Tensor> {
    match alg {
        ConvAlgorithm::Auto | ConvAlgorithm::Direct => conv(x, w, bias, spec),
        ConvAlgorithm::Fft => conv_fft(x, w, bias, spec),
    }
}

/// `conv1d` / `conv2d` (by `spec.dims`) of `x` with `w` plus `bias`.
pub fn conv(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, spec: &ConvSpec) -> Result<Tensor> {
    let p = plan(x.shape(), w.shape(), bias.map(|b| b.shape()), spec)?;
    no_complex(x, w, bias, spec)?;
    let dtype = result_dtype(x.dtype(), w.dtype(), bias.map(|b| b.dtype()));
    if x.is_abstract() || w.is_abstract() || bias.is_some_and(|b| b.is_abstract()) {
        return Tensor::abstract_tensor(&p.out_shape, dtype);
    }
    memory::check_shape_alloc(&p.out_shape, dtype)?;
    let op = name(spec.dims);
    let (sx, sw) = (x.storage(op)?, w.storage(op)?);
    let sb = bias.map(|b| b.storage(op)).transpose()?;
    let st = if dtype == DType::F64 {
        let (xv, wv) = (sx.to_f64(x.dtype()), sw.to_f64(w.dtype()));
        let bv = sb.zip(bias).map(|(s, b)| s.to_f64(b.dtype()));
        Storage::from_f64(run(&p, &xv, &wv, bv.as_deref()), dtype)
    } else {
        let (xv, wv) = (sx.to_f32(x.dtype()), sw.to_f32(w.dtype()));
        let bv = sb.zip(bias).map(|(s, b)| s.to_f32(b.dtype()));
        Storage::from_f32(run(&p, &xv, &wv, bv.as_deref()), dtype)
    };
    Ok(Tensor::from_storage(p.out_shape.clone(), dtype, st))
}

/// E0201 for a complex operand.
fn no_complex(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, spec: &ConvSpec) -> Result<()> {
    if let Some(t) = [Some(x), Some(w), bias]
        .into_iter()
        .flatten()
        .find(|t| t.dtype().is_complex())
    {
        return Err(RuntimeError::dtype(format!(
            "{} of a {} tensor: convolutions of complex tensors are not supported",
            name(spec.dims),
            t.dtype()
        ))
        .with_help("convolve the real and imaginary parts (op.real, op.imag) separately"));
    }
    Ok(())
}

/// [`conv`] through the FFT: the padded input and the dilated kernel transformed over a plane
/// just large enough for the stride-1 result (`(OH−1)·sh + dh·(kh−1) + 1` rows, likewise
/// columns: the circular correlation then never wraps), multiplied with the kernel's conjugate
/// spectrum and summed over each group's channels in the frequency domain, transformed back,
/// strided. In c64 (c128 for fp64 results), so the error is the FFT's:
/// `|y_fft − y| ≲ 6·u·log2(P)·Σ_c ‖x_c‖₂·‖w_c‖₂` per output (`u` the unit roundoff, `P` the
/// plane's size, the sum over the channels of a window) rather than the direct sum's.
pub fn conv_fft(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, spec: &ConvSpec) -> Result<Tensor> {
    use crate::ops::elementwise::{binary, BinaryOp};
    use crate::ops::fft::{fft2d, Kind2, Norm};
    use crate::ops::reduce::{reduce, ReduceOp};
    use crate::ops::shape_ops::{concat, IndexItem};
    let p = plan(x.shape(), w.shape(), bias.map(|b| b.shape()), spec)?;
    no_complex(x, w, bias, spec)?;
    let dtype = result_dtype(x.dtype(), w.dtype(), bias.map(|b| b.dtype()));
    if x.is_abstract() || w.is_abstract() || bias.is_some_and(|b| b.is_abstract()) {
        return Tensor::abstract_tensor(&p.out_shape, dtype);
    }
    memory::check_shape_alloc(&p.out_shape, dtype)?;
    let cd = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.input, p.kernel, p.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (p.stride, p.dilation, p.pad);
    let (n, c, o, g) = (p.batch, p.cin, p.cout, p.groups);
    let (cg, og) = (c / g, o / g);
    // the plane: the stride-1 rows the result samples plus the kernel's span
    let (hp, wp) = (
        (oh - 1) * sh + dh * (kh - 1) + 1,
        (ow - 1) * sw + dw * (kw - 1) + 1,
    );
    memory::check_shape_alloc(&[n.max(o), c.max(cg), hp, wp], DType::C128)?;
    let op = name(spec.dims);
    let xv = x.storage(op)?.to_f64(x.dtype());
    let wv = w.storage(op)?.to_f64(w.dtype());
    // the input, padded, cut to the plane
    let mut xpad = vec![0.0f64; n * c * hp * wp];
    for img in 0..n * c {
        for r in 0..hp {
            let Some(sr) = r.checked_sub(ph).filter(|&v| v < ih) else {
                continue;
            };
            for q in 0..wp {
                if let Some(sq) = q.checked_sub(pw).filter(|&v| v < iw) {
                    xpad[(img * hp + r) * wp + q] = xv[(img * ih + sr) * iw + sq];
                }
            }
        }
    }
    // the kernel, dilated, in the corner of the plane
    let mut wpad = vec![0.0f64; o * cg * hp * wp];
    for kk in 0..o * cg {
        for i in 0..kh {
            for j in 0..kw {
                wpad[(kk * hp + i * dh) * wp + j * dw] = wv[(kk * kh + i) * kw + j];
            }
        }
    }
    let xs = Tensor::from_f64(&[n, c, hp, wp], xpad, cd)?;
    let ws = Tensor::from_f64(&[o, cg, hp, wp], wpad, cd)?;
    let plane = Some([hp as i64, wp as i64]);
    let xf = fft2d(&xs, Kind2::Rfft2, plane, Norm::Backward)?;
    let wf = crate::ops::complex::conj(&fft2d(&ws, Kind2::Rfft2, plane, Norm::Backward)?)?;
    let wf_cols = xf.shape()[3];
    let range = |a: usize, b: usize| IndexItem::Slice {
        start: Some(a as i64),
        stop: Some(b as i64),
        step: None,
    };
    let all = || IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let mut parts = Vec::with_capacity(g);
    for gi in 0..g {
        let xg = xf
            .index(&[all(), range(gi * cg, (gi + 1) * cg)])?
            .reshape(&[n as i64, 1, cg as i64, hp as i64, wf_cols as i64])?;
        let wg = wf.index(&[range(gi * og, (gi + 1) * og)])?.reshape(&[
            1,
            og as i64,
            cg as i64,
            hp as i64,
            wf_cols as i64,
        ])?;
        let prod = binary(BinaryOp::Mul, &xg, &wg)?;
        parts.push(reduce(&prod, ReduceOp::Sum, Some(2), false)?);
    }
    let yf = if parts.len() == 1 {
        parts.remove(0)
    } else {
        concat(&parts, 1)?
    };
    let y = fft2d(&yf, Kind2::Irfft2, plane, Norm::Backward)?;
    let step = |s: usize, count: usize| IndexItem::Slice {
        start: Some(0),
        stop: Some(((count - 1) * s + 1) as i64),
        step: Some(s as i64),
    };
    let mut y = y.index(&[all(), all(), step(sh, oh), step(sw, ow)])?;
    if let Some(b) = bias {
        let b = b.cast(cd)?.reshape(&[1, o as i64, 1, 1])?;
        y = binary(BinaryOp::Add, &y, &b)?;
    }
    let shape: Vec<i64> = p.out_shape.iter().map(|&d| d as i64).collect();
    y.cast(dtype)?.reshape(&shape)
}

/// The compute types: f32 and f64.
pub trait Acc: Copy + Default + Send + Sync + 'static {
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn add(self, b: Self) -> Self;
    /// `c[m×n] = a[m×k] · b[k×n]`, row-major.
    fn gemm(m: usize, n: usize, k: usize, a: &[Self], b: &[Self], c: &mut [Self], par: bool);
}

impl Acc for f32 {
    fn mul_add(self, a: f32, b: f32) -> f32 {
        self + a * b
    }
    fn add(self, b: f32) -> f32 {
        self + b
    }
    fn gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32], par: bool) {
        if crate::ops::sgemm::available() {
            crate::ops::sgemm::sgemm(m, n, k, a, b, c, par);
        } else {
            crate::ops::matmul::gemm_into(c, a, b, m, k, n, par, 0.0, 1.0);
        }
    }
}

impl Acc for f64 {
    fn mul_add(self, a: f64, b: f64) -> f64 {
        self + a * b
    }
    fn add(self, b: f64) -> f64 {
        self + b
    }
    fn gemm(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64], par: bool) {
        crate::ops::matmul::gemm_into(c, a, b, m, k, n, par, 0.0, 1.0);
    }
}

/// The convolution of contiguous `x` and `w` values (and `bias`) as `[N, O, OH, OW]`.
pub fn run<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
    let [oh, ow] = p.output;
    let plane = oh * ow;
    let mut out = buffer::<T>(p.batch * p.cout * plane);
    if out.is_empty() {
        return out;
    }
    if p.cin / p.groups == 1 {
        depthwise(p, x, w, &mut out);
    } else {
        grouped_gemm(p, x, w, &mut out);
    }
    if let Some(b) = bias {
        out.par_chunks_mut(plane).enumerate().for_each(|(i, o)| {
            let bv = b[i % p.cout];
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
/// strided input rows times the tap's weight.
fn depthwise<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], out: &mut [T]) {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.input, p.kernel, p.output);
    let ([sh, sw], [dh, dw], [ph, pw]) = (p.stride, p.dilation, p.pad);
    let per_group = p.cout / p.groups;
    out.par_chunks_mut(oh * ow)
        .enumerate()
        .for_each(|(plane, o)| {
            let (n, oc) = (plane / p.cout, plane % p.cout);
            let ic = oc / per_group;
            let xin = &x[(n * p.cin + ic) * ih * iw..][..ih * iw];
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
        });
}

/// im2col of one image's group: `col[(c·kH + i)·kW + j][r·OW + q]` = the input at
/// `(r·sh − ph + i·dh, q·sw − pw + j·dw)` of channel `c`, or 0 in the padding.
fn im2col<T: Acc>(p: &ConvPlan, xg: &[T], col: &mut [T], par: bool) {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.input, p.kernel, p.output);
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

/// A GEMM per (image, group) of the group's weights and its im2col matrix.
fn grouped_gemm<T: Acc>(p: &ConvPlan, x: &[T], w: &[T], out: &mut [T]) {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.input, p.kernel, p.output);
    let (cin_g, cout_g) = (p.cin / p.groups, p.cout / p.groups);
    let k = cin_g * kh * kw;
    let plane = oh * ow;
    // a 1×1 kernel at stride 1 without padding reads the input as it is
    let direct = p.kernel == [1, 1] && p.stride == [1, 1] && p.pad == [0, 0] && p.output == p.input;
    let one = |idx: usize, o: &mut [T], col: &mut Vec<T>, par: bool| {
        let (n, g) = (idx / p.groups, idx % p.groups);
        let xg = &x[(n * p.cin + g * cin_g) * ih * iw..][..cin_g * ih * iw];
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
    let jobs = p.batch * p.groups;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one output element at a time, in f64.
    fn naive(p: &ConvPlan, x: &[f64], w: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
        let ([ih, iw], [kh, kw], [oh, ow]) = (p.input, p.kernel, p.output);
        let (cin_g, cout_g) = (p.cin / p.groups, p.cout / p.groups);
        let mut out = vec![0.0; p.batch * p.cout * oh * ow];
        for n in 0..p.batch {
            for oc in 0..p.cout {
                let g = oc / cout_g;
                for r in 0..oh {
                    for q in 0..ow {
                        let mut s = bias.map_or(0.0, |b| b[oc]);
                        for c in 0..cin_g {
                            for i in 0..kh {
                                for j in 0..kw {
                                    let y = (r * p.stride[0] + i * p.dilation[0]) as isize
                                        - p.pad[0] as isize;
                                    let xx = (q * p.stride[1] + j * p.dilation[1]) as isize
                                        - p.pad[1] as isize;
                                    if y < 0 || xx < 0 || y >= ih as isize || xx >= iw as isize {
                                        continue;
                                    }
                                    let xi = ((n * p.cin + g * cin_g + c) * ih + y as usize) * iw
                                        + xx as usize;
                                    let wi = ((oc * cin_g + c) * kh + i) * kw + j;
                                    s += x[xi] * w[wi];
                                }
                            }
                        }
                        out[((n * p.cout + oc) * oh + r) * ow + q] = s;
                    }
                }
            }
        }
        out
    }

    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) as f64 / (1u64 << 31) as f64) - 0.5
            })
            .collect()
    }

    fn check(x: &[usize], w: &[usize], bias: bool, spec: ConvSpec) {
        let p = plan(x, w, bias.then_some(&w[..1]), &spec).expect("plan");
        let xv = values(x.iter().product(), 1);
        let wv = values(w.iter().product(), 2);
        let bv = values(w[0], 3);
        let want = naive(&p, &xv, &wv, bias.then_some(&bv[..]));
        let got = run(&p, &xv, &wv, bias.then_some(&bv[..]));
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((a - b).abs() < 1e-12, "{spec:?} element {i}: {a} vs {b}");
        }
        let x32: Vec<f32> = xv.iter().map(|&v| v as f32).collect();
        let w32: Vec<f32> = wv.iter().map(|&v| v as f32).collect();
        let b32: Vec<f32> = bv.iter().map(|&v| v as f32).collect();
        let got = run(&p, &x32, &w32, bias.then_some(&b32[..]));
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (f64::from(*a) - b).abs() < 1e-4,
                "{spec:?} fp32: {a} vs {b}"
            );
        }
    }

    fn spec2(s: [usize; 2], pad: ConvPadding, d: [usize; 2], groups: usize) -> ConvSpec {
        ConvSpec {
            dims: 2,
            stride: s.to_vec(),
            padding: pad,
            dilation: d.to_vec(),
            groups,
        }
    }

    #[test]
    fn matches_the_definition() {
        let e = |a: usize, b: usize| ConvPadding::Explicit(vec![(a, a), (b, b)]);
        check(
            &[2, 3, 7, 9],
            &[4, 3, 3, 3],
            true,
            spec2([1, 1], e(0, 0), [1, 1], 1),
        );
        check(
            &[2, 3, 7, 9],
            &[4, 3, 3, 2],
            false,
            spec2([2, 3], e(1, 2), [1, 1], 1),
        );
        check(
            &[1, 4, 11, 10],
            &[6, 2, 3, 3],
            true,
            spec2([1, 2], e(2, 1), [2, 1], 2),
        );
        check(
            &[2, 4, 8, 8],
            &[4, 1, 3, 3],
            true,
            spec2([1, 1], ConvPadding::Same, [1, 1], 4),
        );
        check(
            &[2, 4, 9, 8],
            &[8, 1, 5, 3],
            false,
            spec2([2, 2], e(2, 1), [1, 2], 4),
        );
        check(
            &[1, 3, 5, 5],
            &[5, 3, 1, 1],
            true,
            spec2([1, 1], e(0, 0), [1, 1], 1),
        );
        check(
            &[1, 2, 6, 6],
            &[3, 2, 4, 4],
            false,
            spec2([1, 1], ConvPadding::Same, [2, 1], 1),
        );
        // padding past the kernel: whole rows and columns of taps read only zeros
        check(
            &[1, 2, 5, 4],
            &[3, 2, 3, 2],
            true,
            spec2([2, 3], e(4, 3), [1, 1], 1),
        );
        check(
            &[1, 2, 5, 4],
            &[2, 1, 3, 2],
            true,
            spec2([2, 1], e(4, 3), [1, 2], 2),
        );
        let s1 = ConvSpec {
            dims: 1,
            stride: vec![2],
            padding: ConvPadding::Explicit(vec![(1, 1)]),
            dilation: vec![3],
            groups: 1,
        };
        check(&[3, 2, 17], &[4, 2, 3], true, s1);
    }

    #[test]
    fn shapes_and_errors() {
        let s = spec2([1, 1], ConvPadding::Same, [1, 1], 1);
        let p = plan(&[3, 8, 8], &[5, 3, 3, 3], None, &s).expect("unbatched");
        assert_eq!(p.out_shape, vec![5, 8, 8]);
        let p = plan(&[1, 3, 8, 9], &[5, 3, 4, 4], None, &s).expect("even same");
        assert_eq!(p.out_shape, vec![1, 5, 8, 9]);
        assert_eq!(p.pad, [1, 1]);
        let e = |x: &[usize], w: &[usize], s: &ConvSpec| plan(x, w, None, s).expect_err("error");
        assert!(e(&[1, 4, 8, 8], &[5, 3, 3, 3], &s)
            .message
            .contains("input channels"));
        let g = spec2([1, 1], ConvPadding::Same, [1, 1], 3);
        assert!(e(&[1, 4, 8, 8], &[6, 1, 3, 3], &g)
            .message
            .contains("groups=3"));
        let strided = spec2([2, 1], ConvPadding::Same, [1, 1], 1);
        assert!(e(&[1, 3, 8, 8], &[5, 3, 3, 3], &strided)
            .message
            .contains("stride 1"));
        let valid = spec2(
            [1, 1],
            ConvPadding::Explicit(vec![(0, 0), (0, 0)]),
            [1, 1],
            1,
        );
        assert!(e(&[1, 3, 2, 8], &[5, 3, 3, 3], &valid)
            .message
            .contains("spans 3"));
        assert!(e(&[8, 8], &[5, 3, 3, 3], &valid)
            .message
            .contains("expected"));
    }
}
