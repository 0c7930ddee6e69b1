//! The one Graph IR verifier: ids first (in range, defined before use), then spans, then each
//! op's type against [`infer`]. Run after every pass in debug builds and tests.

use super::infer::infer;
use super::{Epilogue, Graph, Op, ValueId};
use tessera_lang::Span;

/// Why a graph is invalid, and at which op.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyError {
    pub value: Option<ValueId>,
    pub span: Option<Span>,
    pub message: String,
}

fn err(g: &Graph, v: Option<ValueId>, message: String) -> VerifyError {
    VerifyError {
        value: v,
        span: v.map(|v| g.span(v)).filter(|s| *s != Span::default()),
        message,
    }
}

/// Checks the invariants listed in the module docs of [`super`].
pub fn verify(g: &Graph) -> Result<(), VerifyError> {
    verify_inner(g, false)
}

fn verify_inner(g: &Graph, is_body: bool) -> Result<(), VerifyError> {
    // 1. ids: operands defined before use, params and outputs in range.
    for id in g.ids() {
        let Some(op) = g.op(id) else { continue };
        for x in op.operands() {
            if x >= id {
                return Err(err(
                    g,
                    Some(id),
                    format!("%{} uses %{} before it is defined", id.index(), x.index()),
                ));
            }
        }
    }
    for (k, p) in g.params.iter().enumerate() {
        match g.op(*p) {
            Some(Op::Param { index }) if *index == k => {}
            _ => return Err(err(g, None, format!("params[{k}] is not param {k}"))),
        }
    }
    let n_params = g
        .ids()
        .filter(|i| matches!(g.op(*i), Some(Op::Param { .. })))
        .count();
    if n_params != g.params.len() {
        return Err(err(g, None, "a param op is not listed in params".into()));
    }
    for o in &g.outputs {
        if o.index() >= g.len() {
            return Err(err(
                g,
                None,
                format!("output %{} is not defined", o.index()),
            ));
        }
    }
    if g.outputs.is_empty() {
        return Err(err(g, None, "the graph returns nothing".into()));
    }
    // 2. spans.
    for id in g.ids() {
        if g.span(id) == Span::default() {
            return Err(err(
                g,
                Some(id),
                format!(
                    "%{} ({}) has no source span",
                    id.index(),
                    g.op(id).map(|o| o.name()).unwrap_or("?")
                ),
            ));
        }
        if let Some(Op::Matmul { epilogue, .. }) = g.op(id) {
            if epilogue.iter().any(|s| s.span == Span::default()) {
                return Err(err(
                    g,
                    Some(id),
                    "an epilogue step has no source span".into(),
                ));
            }
        }
    }
    // 3. types.
    for id in g.ids() {
        let (Some(op), Some(declared)) = (g.op(id), g.ty(id)) else {
            continue;
        };
        if is_body && !(op.is_elementwise() || matches!(op, Op::Param { .. } | Op::Const { .. })) {
            return Err(err(
                g,
                Some(id),
                format!(
                    "{} is not elementwise but is inside a fused body",
                    op.name()
                ),
            ));
        }
        if let Op::Matmul { epilogue, .. } = op {
            for st in epilogue {
                if let Epilogue::Body { body, .. } = &st.step {
                    verify_inner(body, true).map_err(|e| VerifyError {
                        message: format!("in the epilogue body of %{}: {}", id.index(), e.message),
                        ..e
                    })?;
                }
            }
        }
        if let Op::FusedElementwise { body, .. } | Op::FusedReduce { body, .. } = op {
            verify_inner(body, true).map_err(|e| VerifyError {
                message: format!("in the body of %{}: {}", id.index(), e.message),
                ..e
            })?;
        }
        let want = infer(g, op, declared)
            .map_err(|m| err(g, Some(id), format!("%{} = {}: {m}", id.index(), op.name())))?;
        if &want != declared {
            return Err(err(
                g,
                Some(id),
                format!(
                    "%{} = {} has type {declared} but its operands give {want}",
                    id.index(),
                    op.name()
                ),
            ));
        }
    }
    Ok(())
}
