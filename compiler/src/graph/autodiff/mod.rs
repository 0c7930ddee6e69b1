//! Reverse-mode differentiation of Graph IR (SPEC §8): [`grad`] turns a traced graph with one
//! scalar output into a graph that computes that output's gradient with respect to some of its
//! parameters (and, for `value_and_grad`, the output too). The backward graph is ordinary Graph
//! IR: the pipeline optimises, fuses and lowers it like any traced kernel.
//!
//! Each op's derivative is its row's `vjp` in the op tables (unary, binary, reduction); the ops
//! without a table have theirs in [`ops`] (matmul, softmax, shape ops, where, cast), [`norms`],
//! [`slices`] and [`attention`]. The helpers of [`build`] ([`emit`], [`sum_to`], …) are what
//! those derivatives build with. Cotangents are
//! carried in fp32 (fp64 for fp64 values), so bf16/fp16 gradients accumulate in fp32; a
//! parameter's gradient is cast to the parameter's dtype at the end (as JAX returns it).
//! Complex values (inside the function: parameters are real) carry complex cotangents with
//! PyTorch's convention ([`spectral`]).

mod attention;
pub(crate) mod build;
mod conv;
mod ops;
pub(crate) mod slices;
mod spectral;

pub(crate) use build::*;

use super::infer::TypeError;
use super::{BinaryOp, Graph, Op, ValueId};
use ops::op_vjp;
use tessera_lang::{Code, Diagnostic, Span};

pub(crate) type R<T> = Result<T, TypeError>;

/// Why a graph cannot be differentiated: a user-facing diagnostic at `span`.
#[derive(Clone, Debug, PartialEq)]
pub struct GradError {
    pub code: Code,
    pub message: String,
    pub span: Option<Span>,
    pub label: Option<String>,
    pub help: Option<String>,
}

impl GradError {
    fn new(code: Code, message: impl Into<String>, span: Option<Span>) -> GradError {
        GradError {
            code,
            message: message.into(),
            span,
            label: None,
            help: None,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(self.code, self.message.clone());
        if let Some(s) = self.span {
            d = d.at(s);
        }
        if let Some(l) = &self.label {
            d = d.with_label(l.clone());
        }
        if let Some(h) = &self.help {
            d = d.with_help(h.clone());
        }
        d
    }
}

impl From<TypeError> for GradError {
    fn from(e: TypeError) -> GradError {
        GradError::new(
            Code::E0500,
            format!("internal compiler error: a derivative does not type: {e:?}"),
            None,
        )
    }
}

// ----- the pass ------------------------------------------------------------------------------

/// The gradient graph of `fwd` (one output, a one-element float tensor) with respect to the
/// params `wrt` (indices into `fwd.params`): its outputs are the output itself when
/// `with_value`, then one gradient per `wrt` entry, each of its param's shape and dtype.
/// Params `fwd` does not use get zeros. Ops on the path from a `wrt` param to the output
/// without a derivative are an error naming the op (E0201).
pub fn grad(fwd: &Graph, wrt: &[usize], with_value: bool) -> Result<Graph, GradError> {
    let [out] = fwd.outputs.as_slice() else {
        return Err(GradError::new(
            Code::E0101,
            format!(
                "graph.grad needs a function returning one tensor, not {}",
                fwd.outputs.len()
            ),
            None,
        ));
    };
    let out = *out;
    let tout = ty(fwd, out)?;
    if tout.shape.iter().product::<usize>() != 1 {
        let mut e = GradError::new(
            Code::E0200,
            format!(
                "graph.grad needs a scalar result, but the function returns a tensor of shape {:?}",
                tout.shape
            ),
            Some(fwd.span(out)),
        );
        e.label = Some("not a scalar".into());
        e.help = Some("reduce it first, e.g. `op.sum(loss)` or `op.mean(loss)`".into());
        return Err(e);
    }
    if !tout.dtype.is_float() {
        return Err(GradError::new(
            Code::E0201,
            format!("graph.grad needs a float result, not {}", tout.dtype),
            Some(fwd.span(out)),
        ));
    }
    let mut params = Vec::with_capacity(wrt.len());
    for &k in wrt {
        let Some(&p) = fwd.params.get(k) else {
            return Err(GradError::new(
                Code::E0101,
                format!(
                    "argnums names argument {k}, but the function has {} tensor arguments",
                    fwd.params.len()
                ),
                None,
            ));
        };
        let d = ty(fwd, p)?.dtype;
        if !d.is_float() {
            return Err(GradError::new(
                Code::E0201,
                format!("argument {k} is a {d} tensor: gradients are taken of float tensors"),
                Some(fwd.span(p)),
            ));
        }
        params.push(p);
    }

    let mut g = fwd.clone();
    let n = fwd.len();
    // which values depend on a differentiated param
    let mut needs = vec![false; n];
    for &p in &params {
        needs[p.index()] = true;
    }
    for id in fwd.ids() {
        if let Some(op) = fwd.op(id) {
            if op.operands().iter().any(|x| needs[x.index()]) {
                needs[id.index()] = true;
            }
        }
    }
    let mut cot: Vec<Option<ValueId>> = vec![None; n];
    if needs[out.index()] {
        let before = g.len();
        let one = konst(&mut g, 1.0, cot_dtype(tout.dtype))?;
        let seed = broadcast_to(&mut g, one, &tout.shape)?;
        mark(&mut g, before, fwd.span(out));
        cot[out.index()] = Some(seed);
    }
    for id in fwd.ids().collect::<Vec<_>>().into_iter().rev() {
        let Some(dy) = cot[id.index()] else { continue };
        let Some(op) = fwd.op(id) else { continue };
        if matches!(op, Op::Param { .. } | Op::Capture { .. } | Op::Const { .. }) {
            continue;
        }
        let operands = op.operands();
        if !operands.iter().any(|x| needs[x.index()]) {
            continue;
        }
        let before = g.len();
        let grads = match op_vjp(&mut g, op, id, dy) {
            Ok(v) => v,
            Err(Some(e)) => return Err(e.into()),
            Err(None) => {
                if let Some(user) = derivative_of(op) {
                    // an op a derivative made: name the op the user wrote, at its span
                    let mut e = GradError::new(
                        Code::E0201,
                        format!("the second derivative of `{user}` is not supported"),
                        Some(fwd.span(id)),
                    );
                    e.label = Some(format!("`{user}` differentiated twice"));
                    e.help = Some(match op {
                        Op::AttentionLse { .. } | Op::AttentionGrad { .. } => "the attention backward has no derivative yet: to differentiate attention twice, write it out (`op.softmax(q @ kᵀ · scale) @ v`)".into(),
                        _ => format!("the derivative of `{user}` has no derivative yet: take one derivative through it"),
                    });
                    return Err(e);
                }
                let mut e = GradError::new(
                    Code::E0201,
                    format!("`{}` has no derivative", op.name()),
                    Some(fwd.span(id)),
                );
                e.label = Some("no derivative".into());
                let on_complex = std::iter::once(id)
                    .chain(operands.iter().copied())
                    .any(|v| fwd.ty(v).is_some_and(|t| t.dtype.is_complex()));
                e.help = Some(match op {
                    Op::Binary { .. } | Op::Unary { .. } if on_complex => {
                        "its derivative on complex values is not written yet: complex +, -, *, negation, abs, angle, the complex parts and the fft family have one".into()
                    }
                    Op::Binary { .. } | Op::Unary { .. } => {
                        "keep this op off the path from the differentiated arguments to the result (`op.where` takes a mask without differentiating it)".into()
                    }
                    Op::AttentionLse { .. } | Op::AttentionGrad { .. } => {
                        "the attention backward has no derivative yet: to differentiate attention twice, write it out (`op.softmax(q @ kᵀ · scale) @ v`)".into()
                    }
                    _ => "derivatives of this op are not implemented yet".into(),
                });
                return Err(e);
            }
        };
        for (x, dx) in operands.iter().zip(grads) {
            let Some(dx) = dx else { continue };
            if !needs[x.index()] {
                continue;
            }
            let xd = ty(fwd, *x)?.dtype;
            if !(xd.is_float() || xd.is_complex()) {
                continue;
            }
            let dx = cast(&mut g, dx, cot_dtype(xd))?;
            cot[x.index()] = Some(match cot[x.index()] {
                Some(prev) if xd.is_complex() => {
                    spectral::cplx(&mut g, super::ComplexOp::Add, prev, Some(dx))?
                }
                Some(prev) => bin(&mut g, BinaryOp::Add, prev, dx)?,
                None => dx,
            });
        }
        mark(&mut g, before, fwd.span(id));
    }
    let mut outputs = Vec::new();
    if with_value {
        outputs.push(out);
    }
    for &p in &params {
        let tp = ty(fwd, p)?;
        let before = g.len();
        let d = match cot[p.index()] {
            Some(c) => cast(&mut g, c, tp.dtype)?,
            None => {
                let z = konst(&mut g, 0.0, tp.dtype)?;
                broadcast_to(&mut g, z, &tp.shape)?
            }
        };
        mark(&mut g, before, fwd.span(p));
        outputs.push(d);
    }
    g.outputs = outputs;
    g.name = format!("grad_{}", fwd.name);
    // derivatives build both operands' cotangents; drop the ones no gradient needs
    super::passes::dce::run(&mut g, &super::passes::PassCx::default());
    Ok(g)
}

/// Gives the ops appended since `before` the span of the forward op they differentiate.
fn mark(g: &mut Graph, before: usize, span: Span) {
    for i in before..g.len() {
        g.set_span(ValueId(i as u32), span);
    }
}

/// The op the user wrote that `op`, an op only a derivative makes, is the backward of; `None`
/// for the ops a user writes.
fn derivative_of(op: &Op) -> Option<&'static str> {
    match op {
        Op::AttentionLse { .. } | Op::AttentionGrad { .. } => Some("flash_attention"),
        Op::Fft {
            kind: crate::graph::FftKind::RealInverseAdjoint,
            ..
        } => Some("irfft"),
        _ => None,
    }
}
