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
//!
//! This file: the parameters, the shape rule and the entry points; `direct.rs` the direct
//! computation, `fft.rs` the one through the FFT (`algorithm="fft"`).

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::shape::fmt_shape;
use crate::storage::Storage;
use crate::tensor::Tensor;

mod direct;
mod fft;
#[cfg(test)]
mod tests;

pub use direct::{run, Acc};
pub use fft::conv_fft;

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
}

/// A convolution's sizes, 1-d ones as 2-d with height 1.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvPlan {
    pub size: tessera_compiler::graph::ConvSizes,
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// zeros before the first row and column
    pub pad: [usize; 2],
    /// zeros after the last row and column
    pub pad_after: [usize; 2],
    /// The result's shape (without the batch dim when the input had none).
    pub out_shape: Vec<usize>,
}

impl ConvPlan {
    /// The Graph IR attributes of this convolution of `dims` spatial dims (its padding
    /// resolved, `"same"` included), computed by `algorithm`.
    pub fn attrs(
        &self,
        dims: usize,
        algorithm: ConvAlgorithm,
    ) -> tessera_compiler::graph::ConvAttrs {
        tessera_compiler::graph::ConvAttrs {
            dims: dims as u8,
            stride: self.stride,
            pad: [0, 1].map(|i| (self.pad[i], self.pad_after[i])),
            dilation: self.dilation,
            groups: self.size.groups,
            algorithm,
        }
    }

    /// Multiply-adds of the convolution.
    pub fn macs(&self) -> u64 {
        let [oh, ow] = self.size.output;
        let [kh, kw] = self.size.kernel;
        (self.size.batch * self.size.cout * oh * ow) as u64
            * (self.size.cin / self.size.groups.max(1) * kh * kw) as u64
    }
}

pub(super) fn name(dims: usize) -> &'static str {
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
        size: tessera_compiler::graph::ConvSizes {
            batch,
            cin,
            cout,
            groups,
            input,
            kernel,
            output,
        },
        stride,
        dilation,
        pad: [pads[0].0, pads[1].0],
        pad_after: [pads[0].1, pads[1].1],
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

/// How a convolution is computed (`algorithm=`): on the cpu `Auto` is the direct (im2col GEMM
/// or depthwise) computation, and in a kernel the compiler's choice (the spectral rewrite);
/// `Fft` is `irfft2(rfft2(x) · conj(rfft2(w)))` over the padded plane.
pub use tessera_compiler::graph::ConvAlgorithm;

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
    let numel = memory::check_shape_alloc(&p.out_shape, dtype)?;
    let op = name(spec.dims);
    // the result is computed in fp32 (fp64) and the im2col matrix is as large as the input
    // times the kernel's taps: each is bounded like a tensor (E0700, not an abort)
    let acc = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    memory::check_alloc(numel, acc)?;
    let col = direct::im2col_len(&p).ok_or_else(|| im2col_error(op, None))?;
    let col_bytes = (col as u128) * (acc.size_bytes() as u128);
    if col_bytes > u128::from(memory::max_bytes()) {
        return Err(im2col_error(op, Some(col_bytes)));
    }
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

/// E0700 for an im2col matrix of `bytes` (`None`: too many to count) over the memory limit.
fn im2col_error(op: &str, bytes: Option<u128>) -> RuntimeError {
    let limit = memory::max_bytes();
    let size = bytes.map_or("more than can be counted".to_string(), |b| format!("{b}"));
    RuntimeError::resource(format!(
        "{op}: the im2col matrix of this convolution takes {size} bytes, over the limit of {limit} bytes"
    ))
    .with_help("use a smaller input or kernel, algorithm=\"fft\", or raise TESSERA_MAX_BYTES")
}

/// E0201 for a complex operand.
pub(super) fn no_complex(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    spec: &ConvSpec,
) -> Result<()> {
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
