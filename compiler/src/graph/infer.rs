//! The type rules of Graph IR: the result shape and dtype of each op from its operands' types.
//! They mirror the eager ops (SPEC §4, docs/decisions.md); the verifier checks every op with
//! them and passes use them to type the ops they build.

pub use super::ops::copies::{slice_indices, slice_shape};
use super::ops::reduce::reduce_tensor_type;
use super::{AttnWrt, ComplexOp, ConvAttrs, DType, FftKind, Graph, Op, TensorType, ValueId};

mod steps;
pub use steps::epilogue_step;

/// Why an op's operands do not type: the facts (the verifier and the passes print them).
#[derive(Clone, Debug, PartialEq)]
pub enum TypeError {
    Undefined(ValueId),
    Broadcast {
        a: Vec<usize>,
        b: Vec<usize>,
        x: usize,
        y: usize,
    },
    MatmulRank,
    MatmulInner {
        ka: usize,
        kb: usize,
    },
    Accum {
        accum: DType,
        inputs: DType,
    },
    EpilogueShape {
        operand: TensorType,
        acc: Vec<usize>,
    },
    TooManyIndices(Vec<usize>),
    IndexOutOfRange {
        index: i64,
        axis: usize,
    },
    ZeroStep,
    ConstNot0d,
    AxisOutOfRange(usize),
    /// `op` (layernorm, rmsnorm) of a 0-d tensor.
    NormOf0d(&'static str),
    /// A layernorm/rmsnorm parameter (`what`) that is not `[d]`.
    NormParam {
        what: &'static str,
        d: usize,
    },
    NotPermutation(Vec<usize>),
    Reshape {
        from: usize,
        to: usize,
    },
    BroadcastTo {
        from: TensorType,
        to: Vec<usize>,
    },
    EmptyConcat,
    ConcatShapes,
    AttentionRank,
    AttentionShapes,
    /// A fused body that does not match its op (`why`).
    FusedBody(&'static str),
    /// `take`/`scatter_add`: a non-integer index, an axis out of range, or (scatter) a source
    /// whose shape is not the result's with the index's dims at the axis.
    Take,
    /// `conv1d`/`conv2d` operands whose shapes do not fit its attributes.
    Conv,
    /// An `fft` family op with an axis out of range, a zero length, an embedding past the
    /// line, or (`irfft`) a line that is not `n/2 + 1` long.
    Fft,
    /// A complex op whose operands do not fit it (see [`super::ComplexOp::result_dtype`]).
    Complex,
    /// `spectral_mul` operands that are not `[N, C, ...F]` and `[O, C/groups, ...F]` complex.
    SpectralMul,
}

impl std::fmt::Display for TypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeError::Undefined(v) => write!(f, "value %{} is not defined", v.index()),
            TypeError::Broadcast { a, b, x, y } => {
                write!(f, "shapes {a:?} and {b:?} cannot be broadcast ({x} vs {y})")
            }
            TypeError::MatmulRank => f.write_str("matmul needs at least 1-D operands"),
            TypeError::MatmulInner { ka, kb } => {
                write!(f, "matmul inner dimensions {ka} and {kb} differ")
            }
            TypeError::Accum { accum, inputs } => {
                write!(f, "accum dtype {accum} cannot accumulate {inputs} inputs")
            }
            TypeError::EpilogueShape { operand, acc } => write!(
                f,
                "epilogue operand {operand} would change the matmul shape {acc:?}"
            ),
            TypeError::TooManyIndices(shape) => write!(f, "too many indices for shape {shape:?}"),
            TypeError::IndexOutOfRange { index, axis } => {
                write!(f, "index {index} out of range for axis {axis}")
            }
            TypeError::ZeroStep => f.write_str("slice step cannot be zero"),
            TypeError::ConstNot0d => f.write_str("a const is 0-d"),
            TypeError::AxisOutOfRange(a) => write!(f, "axis {a} out of range"),
            TypeError::NormOf0d(op) => write!(f, "{op} of a 0-d tensor"),
            TypeError::NormParam { what, d } => write!(f, "{what} is not [{d}]"),
            TypeError::NotPermutation(p) => write!(f, "{p:?} is not a permutation"),
            TypeError::Reshape { from, to } => write!(f, "reshape of {from} elements into {to}"),
            TypeError::BroadcastTo { from, to } => write!(f, "cannot broadcast {from} to {to:?}"),
            TypeError::EmptyConcat => f.write_str("concat of nothing"),
            TypeError::ConcatShapes => f.write_str("concat shapes differ outside the axis"),
            TypeError::AttentionRank => {
                f.write_str("flash_attention operands must be at least 2-D")
            }
            TypeError::AttentionShapes => {
                f.write_str("flash_attention q/k head dims or k/v lengths differ")
            }
            TypeError::FusedBody(why) => f.write_str(why),
            TypeError::Conv => f.write_str(
                "conv: x [N, C, (H,) W], w [O, C/groups, (kH,) kW] and bias [O] do not fit",
            ),
            TypeError::Fft => f.write_str(
                "fft: the axis must be in range, n positive, and an irfft line n/2 + 1 long",
            ),
            TypeError::Complex => f.write_str(
                "complex op: real/imag/conj/angle/abs/neg take a complex operand, complex() two real ones, complex +, -, * one complex operand at least",
            ),
            TypeError::SpectralMul => f.write_str(
                "spectral_mul: x [N, C, ...F] and w [O, C/groups, ...F] must be complex of one dtype",
            ),
            TypeError::Take => f.write_str(
                "take/scatter_add: the index must be an integer tensor, the axis in range, and the source the result's shape with the index's dims at the axis",
            ),
        }
    }
}

type R<T> = Result<T, TypeError>;

/// An attention operand's `(batch dims, sequence length, head dim)`.
fn attn_split(t: &TensorType) -> R<(Vec<usize>, usize, usize)> {
    match t.shape.as_slice() {
        [b @ .., s, d] => Ok((b.to_vec(), *s, *d)),
        _ => Err(TypeError::AttentionRank),
    }
}

fn ty(g: &Graph, v: ValueId) -> R<&TensorType> {
    g.ty(v).ok_or(TypeError::Undefined(v))
}

/// NumPy broadcasting of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> R<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0usize; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = (i + a.len()).checked_sub(n).and_then(|j| a.get(j)).copied();
        let db = (i + b.len()).checked_sub(n).and_then(|j| b.get(j)).copied();
        *o = match (da, db) {
            (Some(x), Some(y)) if x == y => x,
            (Some(1), Some(y)) => y,
            (Some(x), Some(1)) => x,
            (Some(x), None) => x,
            (None, Some(y)) => y,
            (None, None) => 1,
            (Some(x), Some(y)) => {
                return Err(TypeError::Broadcast {
                    a: a.to_vec(),
                    b: b.to_vec(),
                    x,
                    y,
                })
            }
        };
    }
    Ok(out)
}

/// The type of a fused body's first output, checking that its params have the types of
/// `inputs` and that its outputs share one shape.
fn fused_type(g: &Graph, inputs: &[ValueId], body: &Graph) -> R<TensorType> {
    if inputs.len() != body.params.len() {
        return Err(TypeError::FusedBody(
            "fused body params do not match the inputs",
        ));
    }
    for (i, p) in inputs.iter().zip(&body.params) {
        if ty(g, *i)? != ty(body, *p)? {
            return Err(TypeError::FusedBody(
                "fused body param type differs from its input",
            ));
        }
    }
    let Some(first) = body.outputs.first() else {
        return Err(TypeError::FusedBody("a fused body has no output"));
    };
    let t = ty(body, *first)?;
    for o in &body.outputs {
        if ty(body, *o)?.shape != t.shape {
            return Err(TypeError::FusedBody(
                "a fused body's outputs differ in shape",
            ));
        }
    }
    Ok(t.clone())
}

fn float_or_f32(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        DType::F32
    }
}

/// The type op `op` of graph `g` must have, or why it is ill-typed. `declared` is the type the
/// op carries (for ops whose attributes live in the type: param, capture, const, cast,
/// reshape, broadcast).
pub fn infer(g: &Graph, op: &Op, declared: &TensorType) -> R<TensorType> {
    if let Some(d) = super::ops::def(op) {
        return d.infer(g, op, declared);
    }
    match op {
        Op::Param { .. } | Op::Capture { .. } => Ok(declared.clone()),
        Op::Const { .. } => {
            if !declared.shape.is_empty() {
                return Err(TypeError::ConstNot0d);
            }
            Ok(declared.clone())
        }
        Op::Complex { op, a, b } => complex_type(g, *op, *a, *b),
        // the ops of a definition in `ops` (answered above)
        crate::graph::ops::defined_ops!() => Err(TypeError::Undefined(ValueId(0))),
        Op::FlashAttention { q, k, v, .. } => attention_type(g, *q, *k, *v),
        Op::AttentionLse { q, k, .. } => attention_lse_type(g, *q, *k),
        Op::AttentionGrad {
            wrt,
            q,
            k,
            v,
            dout,
            lse,
            delta,
            ..
        } => attention_grad_type(g, *wrt, [*q, *k, *v, *dout], [*lse, *delta]),
        Op::FusedElementwise { inputs, body } => fused_type(g, inputs, body),
        Op::Conv { x, w, bias, attrs } => conv_type(g, *x, *w, *bias, attrs),
        Op::Fft {
            x,
            kind,
            axis,
            n,
            embed,
            ..
        } => fft_type(ty(g, *x)?, *kind, *axis, *n, embed.step),
        Op::SpectralMul { x, w, groups } => spectral_mul_type(ty(g, *x)?, ty(g, *w)?, *groups),
        Op::FusedReduce {
            inputs,
            body,
            op,
            axis,
            keepdim,
        } => reduce_tensor_type(&fused_type(g, inputs, body)?, *op, Some(*axis), *keepdim),
        Op::Result { of, index } => result_type(g, *of, *index),
    }
}

/// An elementwise complex op: unary (`real`, `conj`, …) or binary (`complex(re, im)`).
fn complex_type(g: &Graph, op: ComplexOp, a: ValueId, b: Option<ValueId>) -> R<TensorType> {
    let ta = ty(g, a)?;
    let tb = match b {
        Some(b) => Some(ty(g, b)?),
        None => None,
    };
    if op.binary() != tb.is_some() {
        return Err(TypeError::Complex);
    }
    let d = op
        .result_dtype(ta.dtype, tb.as_ref().map(|t| t.dtype))
        .ok_or(TypeError::Complex)?;
    let shape = match tb {
        Some(tb) => broadcast(&ta.shape, &tb.shape)?,
        None => ta.shape.clone(),
    };
    Ok(TensorType::new(shape, d))
}

/// `flash_attention(q, k, v)`: batch dims broadcast, result `[.., sq, dv]`.
fn attention_type(g: &Graph, q: ValueId, k: ValueId, v: ValueId) -> R<TensorType> {
    let (tq, tk, tv) = (ty(g, q)?, ty(g, k)?, ty(g, v)?);
    let split = |t: &TensorType| -> R<(Vec<usize>, usize, usize)> {
        match t.shape.as_slice() {
            [b @ .., s, d] => Ok((b.to_vec(), *s, *d)),
            _ => Err(TypeError::AttentionRank),
        }
    };
    let ((qb, sq, dq), (kb, sk, dk), (vb, sv, dv)) = (split(tq)?, split(tk)?, split(tv)?);
    if dq != dk || sk != sv {
        return Err(TypeError::AttentionShapes);
    }
    let mut shape = broadcast(&broadcast(&qb, &kb)?, &vb)?;
    shape.extend([sq, dv]);
    let d = DType::promote(DType::promote(tq.dtype, tk.dtype), tv.dtype);
    Ok(TensorType::new(shape, float_or_f32(d)))
}

/// The row log-sum-exp a flash attention forward keeps for its backward.
fn attention_lse_type(g: &Graph, q: ValueId, k: ValueId) -> R<TensorType> {
    let (tq, tk) = (ty(g, q)?, ty(g, k)?);
    let ((qb, _, dq), (kb, _, dk)) = (attn_split(tq)?, attn_split(tk)?);
    if dq != dk || qb != kb {
        return Err(TypeError::AttentionShapes);
    }
    let d = DType::promote(tq.dtype, tk.dtype);
    let mut shape = qb;
    shape.push(tq.shape[tq.shape.len() - 2]);
    Ok(TensorType::new(
        shape,
        if d == DType::F64 { d } else { DType::F32 },
    ))
}

/// One of the flash attention backward's gradients; `qkvo` are `q, k, v, dout` and `rows` the
/// forward's `lse` and `delta`.
fn attention_grad_type(
    g: &Graph,
    wrt: AttnWrt,
    qkvo: [ValueId; 4],
    rows: [ValueId; 2],
) -> R<TensorType> {
    let [q, k, v, dout] = qkvo;
    let [lse, delta] = rows;
    let (tq, tk, tv, to) = (ty(g, q)?, ty(g, k)?, ty(g, v)?, ty(g, dout)?);
    let (qb, sq, dq) = attn_split(tq)?;
    let (kb, sk, dk) = attn_split(tk)?;
    let (vb, sv, dv) = attn_split(tv)?;
    let (ob, so, dov) = attn_split(to)?;
    if qb != kb || qb != vb || qb != ob || dq != dk || sk != sv || so != sq || dov != dv {
        return Err(TypeError::AttentionShapes);
    }
    let mut rows = qb;
    rows.push(sq);
    for t in [ty(g, lse)?, ty(g, delta)?] {
        if t.shape != rows || !t.dtype.is_float() {
            return Err(TypeError::AttentionShapes);
        }
    }
    if !to.dtype.is_float() {
        return Err(TypeError::AttentionShapes);
    }
    let of = match wrt {
        AttnWrt::Q => tq,
        AttnWrt::K => tk,
        AttnWrt::V => tv,
    };
    Ok(TensorType::new(of.shape.clone(), to.dtype))
}

/// A 1-d or 2-d convolution, batched or not, with optional bias.
fn conv_type(
    g: &Graph,
    x: ValueId,
    w: ValueId,
    bias: Option<ValueId>,
    attrs: &ConvAttrs,
) -> R<TensorType> {
    let (tx, tw) = (ty(g, x)?, ty(g, w)?);
    let d = usize::from(attrs.dims);
    if !(d == 1 || d == 2) || tw.shape.len() != d + 2 {
        return Err(TypeError::Conv);
    }
    let batched = match tx.shape.len() {
        n if n == d + 2 => true,
        n if n == d + 1 => false,
        _ => return Err(TypeError::Conv),
    };
    let xs = &tx.shape[usize::from(batched)..];
    let (cin, cout, g_) = (xs[0], tw.shape[0], attrs.groups);
    if g_ == 0 || cin % g_ != 0 || cout % g_ != 0 || tw.shape[1] * g_ != cin {
        return Err(TypeError::Conv);
    }
    let mut dtype = DType::promote(tx.dtype, tw.dtype);
    if let Some(b) = bias {
        let tb = ty(g, b)?;
        if tb.shape != [cout] {
            return Err(TypeError::Conv);
        }
        dtype = DType::promote(dtype, tb.dtype);
    }
    let mut shape = tx.shape[..usize::from(batched)].to_vec();
    shape.push(cout);
    for i in 0..d {
        let sp = 2 - d + i;
        let o = attrs
            .out_len(sp, xs[1 + i], tw.shape[2 + i])
            .ok_or(TypeError::Conv)?;
        shape.push(o);
    }
    Ok(TensorType::new(shape, float_or_f32(dtype)))
}

/// A length-`n` FFT of `tx` along `axis` (`step`: the input embedding's stride).
fn fft_type(tx: &TensorType, kind: FftKind, axis: usize, n: usize, step: usize) -> R<TensorType> {
    if axis >= tx.shape.len() || n == 0 || step == 0 {
        return Err(TypeError::Fft);
    }
    let mut shape = tx.shape.clone();
    let dtype = match kind {
        FftKind::Forward
        | FftKind::Inverse
        | FftKind::RealForward
        | FftKind::RealInverseAdjoint => {
            let real_in = matches!(kind, FftKind::RealForward | FftKind::RealInverseAdjoint);
            if real_in && tx.dtype.is_complex() {
                return Err(TypeError::Fft);
            }
            shape[axis] = if real_in { n / 2 + 1 } else { n };
            tx.dtype.to_complex()
        }
        FftKind::RealInverse => {
            if !tx.dtype.is_complex() || tx.shape[axis] != n / 2 + 1 {
                return Err(TypeError::Fft);
            }
            shape[axis] = n;
            tx.dtype.real_part()
        }
    };
    Ok(TensorType::new(shape, dtype))
}

/// The per-frequency grouped channel mix of a spectral convolution.
fn spectral_mul_type(tx: &TensorType, tw: &TensorType, groups: usize) -> R<TensorType> {
    let r = tx.shape.len();
    let fits = r >= 3
        && tw.shape.len() == r
        && tx.dtype.is_complex()
        && tx.dtype == tw.dtype
        && groups > 0
        && tx.shape[1].is_multiple_of(groups)
        && tw.shape[0].is_multiple_of(groups)
        && tw.shape[1] * groups == tx.shape[1]
        && tx.shape[2..] == tw.shape[2..];
    if !fits {
        return Err(TypeError::SpectralMul);
    }
    let mut shape = tx.shape.clone();
    shape[1] = tw.shape[0];
    Ok(TensorType::new(shape, tx.dtype))
}

/// Result `index` (≥ 1) of a multi-output fused op `of`.
fn result_type(g: &Graph, of: ValueId, index: usize) -> R<TensorType> {
    match g.op(of) {
        Some(Op::FusedElementwise { body, .. } | Op::FusedReduce { body, .. }) if index >= 1 => {
            match body.outputs.get(index) {
                Some(o) => Ok(ty(body, *o)?.clone()),
                None => Err(TypeError::FusedBody(
                    "a result past the fused body's outputs",
                )),
            }
        }
        _ => Err(TypeError::FusedBody(
            "a result (index ≥ 1) of an op that is not a multi-output fused op",
        )),
    }
}
