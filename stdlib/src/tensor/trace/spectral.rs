//! The traced forms of the FFT family and of the complex parts: Graph IR `fft ifft rfft
//! irfft` ops (a 2-D transform is two of them, in the eager form's order: the last axis
//! first, `irfft2`'s last axis last) and [`Op::Complex`] ops. The shape and dtype of each
//! result, and every error, come from the eager form run on abstract tensors.
//!
//! What the Graph IR ops leave to the tracer: an integer or bool operand is cast to fp64 first
//! (its transform is c128, as NumPy's); `irfft` of a real operand transforms `x + 0j`, and
//! its input line is cropped or zero-padded to `n/2 + 1` bins before the op (NumPy's `n=`).

use super::*;
use crate::tensor::op::eager::{fft1_args, fft1_on, fft2_args, fft2_on};
use crate::tensor::op::table::Call;
use tessera_compiler::graph::{ComplexOp, FftEmbed, FftKind, FftNorm, SliceItem};

type R = Result<Value, Diagnostic>;

/// A traced value: its id and abstract tensor.
type Sym = (ValueId, Tensor);

fn record_sym(ctx: &Rc<TraceCtx>, op: Op, aval: Tensor, span: Span) -> Sym {
    let id = ctx.graph.borrow_mut().push(op, ctype(&aval), span);
    (id, aval)
}

fn value(ctx: &Rc<TraceCtx>, (id, aval): Sym) -> Value {
    Value::host(SymTensor {
        ctx: ctx.clone(),
        id,
        aval,
    })
}

fn abstract_of(shape: &[usize], d: DType) -> Result<Tensor, Diagnostic> {
    Tensor::abstract_tensor(shape, d).map_err(rt)
}

/// A 0-d `const` of dtype `d`.
fn konst(ctx: &Rc<TraceCtx>, v: f64, d: DType, span: Span) -> R2 {
    Ok(record_sym(
        ctx,
        Op::Const {
            value: Scalar::Float(v),
        },
        abstract_of(&[], d)?,
        span,
    ))
}

/// Zeros of `shape` and dtype `d` (a `const` reshaped to ones and broadcast).
fn zeros(ctx: &Rc<TraceCtx>, shape: &[usize], d: DType, span: Span) -> Result<Sym, Diagnostic> {
    let (z, _) = konst(ctx, 0.0, d, span)?;
    let ones = vec![1; shape.len()];
    let r = record_sym(ctx, Op::Reshape { x: z }, abstract_of(&ones, d)?, span);
    if ones == shape {
        return Ok(r);
    }
    Ok(record_sym(
        ctx,
        Op::Broadcast { x: r.0 },
        abstract_of(shape, d)?,
        span,
    ))
}

fn complex_op(
    ctx: &Rc<TraceCtx>,
    op: ComplexOp,
    a: ValueId,
    b: Option<ValueId>,
    aval: Tensor,
    span: Span,
) -> Sym {
    record_sym(ctx, Op::Complex { op, a, b }, aval, span)
}

/// `x + 0j`.
fn to_complex(ctx: &Rc<TraceCtx>, (x, xa): Sym, span: Span) -> Result<Sym, Diagnostic> {
    let d = xa.dtype();
    let aval = rtm::complex(&xa, &xa).map_err(rt)?;
    let (z, _) = konst(ctx, 0.0, d, span)?;
    Ok(complex_op(ctx, ComplexOp::Make, x, Some(z), aval, span))
}

/// An integer or bool operand as fp64 (its transform is c128).
fn fft_operand(ctx: &Rc<TraceCtx>, (x, xa): Sym, span: Span) -> Result<Sym, Diagnostic> {
    if xa.dtype().is_float() || xa.dtype().is_complex() {
        return Ok((x, xa));
    }
    let aval = xa.cast(DType::F64).map_err(rt)?;
    Ok(record_sym(ctx, Op::Cast { x }, aval, span))
}

/// `x` along `axis` cropped or zero-padded to `len`.
fn fit(ctx: &Rc<TraceCtx>, (x, xa): Sym, axis: usize, len: usize, span: Span) -> R2 {
    let m = xa.shape()[axis];
    let mut shape = xa.shape().to_vec();
    shape[axis] = len;
    let d = xa.dtype();
    if m == len {
        return Ok((x, xa));
    }
    if m > len {
        let mut items = vec![
            SliceItem::Range {
                start: None,
                stop: None,
                step: None,
            };
            axis + 1
        ];
        items[axis] = SliceItem::Range {
            start: None,
            stop: Some(len as i64),
            step: None,
        };
        return Ok(record_sym(
            ctx,
            Op::Slice { x, items },
            abstract_of(&shape, d)?,
            span,
        ));
    }
    let mut zs = xa.shape().to_vec();
    zs[axis] = len - m;
    let (z, _) = zeros(ctx, &zs, d, span)?;
    Ok(record_sym(
        ctx,
        Op::Concat {
            xs: vec![x, z],
            axis,
        },
        abstract_of(&shape, d)?,
        span,
    ))
}

type R2 = Result<Sym, Diagnostic>;

fn graph_norm(n: rtm::FftNorm) -> FftNorm {
    match n {
        rtm::FftNorm::Backward => FftNorm::Backward,
        rtm::FftNorm::Ortho => FftNorm::Ortho,
        rtm::FftNorm::Forward => FftNorm::Forward,
    }
}

/// One 1-D transform of `x` along `axis` with `n=` (checked by the eager form) whose result
/// is `out` (the eager form's abstract result).
#[allow(clippy::too_many_arguments)]
fn transform(
    ctx: &Rc<TraceCtx>,
    x: Sym,
    kind: FftKind,
    axis: isize,
    n: Option<i64>,
    norm: rtm::FftNorm,
    out: Tensor,
    span: Span,
) -> R2 {
    let nd = out.ndim();
    let ax = if axis < 0 { axis + nd as isize } else { axis } as usize;
    let x = fft_operand(ctx, x, span)?;
    // the line's length: rfft's result has n/2 + 1 bins, the others n
    let n = match (kind, n) {
        (FftKind::RealForward, Some(n)) => n.max(1) as usize,
        (FftKind::RealForward, None) => x.1.shape()[ax],
        _ => out.shape()[ax],
    };
    let x = if kind == FftKind::RealInverse {
        let x = if x.1.dtype().is_complex() {
            x
        } else {
            to_complex(ctx, x, span)?
        };
        fit(ctx, x, ax, n / 2 + 1, span)?
    } else {
        x
    };
    Ok(record_sym(
        ctx,
        Op::Fft {
            x: x.0,
            kind,
            axis: ax,
            n,
            norm: graph_norm(norm),
            embed: FftEmbed::default(),
        },
        out,
        span,
    ))
}

fn kind1(name: &str) -> FftKind {
    match name {
        "fft" => FftKind::Forward,
        "ifft" => FftKind::Inverse,
        "rfft" => FftKind::RealForward,
        _ => FftKind::RealInverse,
    }
}

fn rt_fn(kind: FftKind) -> fn(&Tensor, Option<i64>, isize, rtm::FftNorm) -> rtm::Result<Tensor> {
    match kind {
        FftKind::Forward => rtm::fft,
        FftKind::Inverse => rtm::ifft,
        FftKind::RealForward => rtm::rfft,
        _ => rtm::irfft,
    }
}

fn sym_at(ctx: &Rc<TraceCtx>, c: &Call, i: usize) -> R2 {
    let x = super::tensor_at(ctx, &c.a, i)?;
    let xa = x.need_tensor()?.clone();
    let d = xa.dtype();
    Ok((ctx.id_of(&x, d, c.span), xa))
}

/// `fft ifft rfft irfft(x, n=None, axis=-1, norm='backward')` in a kernel.
pub fn t_fft1(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let a = fft1_args(c)?;
    let x = sym_at(ctx, c, 0)?;
    let out = fft1_on(&x.1, c, &a)?;
    let kind = kind1(c.row.name);
    Ok(value(
        ctx,
        transform(ctx, x, kind, a.axis, a.n, a.norm, out, c.span)?,
    ))
}

/// `fft2 ifft2 rfft2 irfft2(x, s=None, norm='backward')` in a kernel: two 1-D transforms.
pub fn t_fft2(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let (s, norm) = fft2_args(c)?;
    let x = sym_at(ctx, c, 0)?;
    // the eager form: the shape and dtype rule and every error
    fft2_on(&x.1, c, s, norm)?;
    let (s0, s1) = match s {
        Some([a, b]) => (Some(a), Some(b)),
        None => (None, None),
    };
    let (first, second) = match c.row.name {
        "fft2" => (FftKind::Forward, FftKind::Forward),
        "ifft2" => (FftKind::Inverse, FftKind::Inverse),
        "rfft2" => (FftKind::RealForward, FftKind::Forward),
        _ => (FftKind::Inverse, FftKind::RealInverse),
    };
    let irfft2 = c.row.name == "irfft2";
    let (ax1, n1, ax2, n2) = if irfft2 {
        let m = x.1.shape()[x.1.ndim() - 1] as i64;
        (-2, s0, -1, Some(s1.unwrap_or(2 * (m - 1))))
    } else {
        (-1, s1, -2, s0)
    };
    let mut v = x;
    for (kind, ax, n) in [(first, ax1, n1), (second, ax2, n2)] {
        let out = rt_fn(kind)(&v.1, n, ax, norm).map_err(|e| rt(e).at(c.span))?;
        v = transform(ctx, v, kind, ax, n, norm, out, c.span)?;
    }
    Ok(value(ctx, v))
}

/// `real imag conj angle` in a kernel. Of a real tensor, `real` and `conj` are the tensor,
/// `imag` zeros of its dtype, `angle` the angle of `x + 0j` (as the eager forms).
pub fn t_part(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let x = sym_at(ctx, c, 0)?;
    let xa = x.1.clone();
    let out = match c.row.name {
        "real" => rtm::real(&xa),
        "imag" => rtm::imag(&xa),
        "conj" => rtm::conj(&xa),
        _ => rtm::angle(&xa),
    }
    .map_err(|e| rt(e).at(c.span))?;
    let op = match c.row.name {
        "real" => ComplexOp::Real,
        "imag" => ComplexOp::Imag,
        "conj" => ComplexOp::Conj,
        _ => ComplexOp::Angle,
    };
    if xa.dtype().is_complex() {
        return Ok(value(ctx, complex_op(ctx, op, x.0, None, out, c.span)));
    }
    Ok(value(
        ctx,
        match op {
            ComplexOp::Real | ComplexOp::Conj => x,
            ComplexOp::Imag => zeros(ctx, xa.shape(), xa.dtype(), c.span)?,
            _ => {
                let z = to_complex(ctx, x, c.span)?;
                complex_op(ctx, op, z.0, None, out, c.span)
            }
        },
    ))
}

/// `complex(re, im)` in a kernel.
pub fn t_complex(_: &mut Interp, ctx: &Rc<TraceCtx>, c: &Call) -> R {
    let re = super::operand_at(ctx, &c.a, 0)?;
    let im = super::operand_at(ctx, &c.a, 1)?;
    let out = rtm::complex(re.aval(), im.aval()).map_err(|e| rt(e).at(c.span))?;
    let part = out.dtype().real_part();
    let a = ctx.id_of(&re, part, c.span);
    let b = ctx.id_of(&im, part, c.span);
    Ok(value(
        ctx,
        complex_op(ctx, ComplexOp::Make, a, Some(b), out, c.span),
    ))
}

/// The [`ComplexOp`] of an elementwise op with a complex operand or result, where one is
/// lowered (`abs` and negation, `+ - *`); others stay [`Op::Unary`]/[`Op::Binary`] (the cpu
/// computes them).
pub fn complex_unary(u: UnaryOp, x: DType) -> Option<ComplexOp> {
    match u {
        UnaryOp::Abs if x.is_complex() => Some(ComplexOp::Abs),
        UnaryOp::Neg if x.is_complex() => Some(ComplexOp::Neg),
        _ => None,
    }
}

pub fn complex_binary(op: BinaryOp, result: DType) -> Option<ComplexOp> {
    if !result.is_complex() {
        return None;
    }
    match op {
        BinaryOp::Add => Some(ComplexOp::Add),
        BinaryOp::Sub => Some(ComplexOp::Sub),
        BinaryOp::Mul => Some(ComplexOp::Mul),
        _ => None,
    }
}
