//! Graph IR passes, one file each. A pass is `fn run(&mut Graph, &PassCx) -> Fired`: it
//! rewrites in place and reports the rules that fired and the near misses; the driver in
//! [`super::pipeline`] verifies after each.

pub mod dce;
pub mod flash_attention;
pub mod fuse_elementwise;
pub mod fuse_epilogue;
pub mod fuse_epilogue_body;
pub mod fuse_multi_output;
pub mod fuse_prologue;
pub mod fuse_reduce;
pub mod spectral_conv;
#[cfg(test)]
mod test_util;

use super::{Graph, Op, Scalar, ValueId};
use std::collections::HashMap;

/// What a pass may consult.
#[derive(Clone, Debug, Default)]
pub struct PassCx {
    /// The most elementwise ops one fused group may hold (`None`: no limit).
    pub max_fused_ops: Option<usize>,
    /// The target the graph is compiled for (the spectral rewrite's cost model).
    pub target: crate::arch::Target,
}

/// What a rewrite rule does, in a line (`graph.fusions(..., explain=True)` for a rule that
/// fired without a statement of its own).
pub fn summary(rule: &str) -> &'static str {
    match rule {
        "flash_attention" => "softmax(Q @ K^T * s) @ V as one flash_attention kernel",
        "epilogue_bias" => "the bias added in the matmul's epilogue",
        "epilogue_scale" => "the scale applied in the matmul's epilogue",
        "epilogue_residual" => "the residual added in the matmul's epilogue",
        "epilogue_activation" => "the activation applied in the matmul's epilogue",
        "epilogue_cast" => "the cast done in the matmul's epilogue",
        "elementwise_chain" => "the elementwise chain computed in one kernel",
        "epilogue_elementwise" => "the elementwise ops after the matmul computed in its epilogue",
        "elementwise_multi_output" => {
            "elementwise kernels with shared operands merged into one with several results"
        }
        "reduction_prologue" => "the reduction's operand computed in the reduction kernel",
        "spectral_conv" => "the convolution computed through the FFT",
        "prologue_layernorm" => {
            "the layernorm of the matmul's A computed in its kernel (row statistics, then each A tile normalised in shared memory)"
        }
        "prologue_rmsnorm" => {
            "the rmsnorm of the matmul's A computed in its kernel (row statistics, then each A tile normalised in shared memory)"
        }
        _ => "",
    }
}

/// The scalar a value holds when it is a `const` of a number.
pub(crate) fn const_number(g: &Graph, v: ValueId) -> Option<f64> {
    match g.op(v) {
        Some(Op::Const {
            value: value @ (Scalar::Int(_) | Scalar::Float(_)),
        }) => Some(value.as_f64()),
        _ => None,
    }
}

/// An elementwise op as a fused op's inputs and body: a fused op's own, or the one op with its
/// tensor operands as params (in order of first use) and its consts copied in. `None` for an
/// op that is not elementwise.
pub(crate) fn as_body(g: &Graph, v: ValueId) -> Option<(Vec<ValueId>, Graph)> {
    let op = g.op(v)?;
    if let Op::FusedElementwise { inputs, body } = op {
        return Some((inputs.clone(), (**body).clone()));
    }
    if !op.is_elementwise() {
        return None;
    }
    let mut body = Graph::new(format!("{}_body", g.name));
    let mut map = HashMap::new();
    let mut inputs = Vec::new();
    for x in op.operands() {
        if map.contains_key(&x) {
            continue;
        }
        let t = g.ty(x)?.clone();
        let nx = match g.op(x) {
            Some(Op::Const { value }) => body.push(Op::Const { value: *value }, t, g.span(x)),
            _ => {
                inputs.push(x);
                body.add_param(t, g.span(x))
            }
        };
        map.insert(x, nx);
    }
    let mut op = op.clone();
    op.map_operands(&mut |x| map.get(&x).copied().unwrap_or(x));
    let r = body.push(op, g.ty(v)?.clone(), g.span(v));
    body.outputs = vec![r];
    Some((inputs, body))
}

/// Copies op `id` of `g` to the end of `ng` (a graph being rebuilt), its operands renumbered
/// through `map` (old value → new); records its new number. `None` when an operand has none.
pub(crate) fn copy_op(
    g: &Graph,
    ng: &mut Graph,
    map: &mut [Option<ValueId>],
    id: ValueId,
) -> Option<()> {
    let mut op = g.op(id)?.clone();
    let mut ok = true;
    op.map_operands(&mut |x| {
        map.get(x.index()).copied().flatten().unwrap_or_else(|| {
            ok = false;
            x
        })
    });
    if !ok {
        return None;
    }
    let v = ng.push(op, g.ty(id)?.clone(), g.span(id));
    *map.get_mut(id.index())? = Some(v);
    Some(())
}

/// Gives the rebuilt `ng` the params and outputs of `g`, renumbered through `map`.
pub(crate) fn finish_rebuild(g: &Graph, ng: &mut Graph, map: &[Option<ValueId>]) -> Option<()> {
    let get = |v: &ValueId| map.get(v.index()).copied().flatten();
    ng.params = g.params.iter().map(get).collect::<Option<_>>()?;
    ng.outputs = g.outputs.iter().map(get).collect::<Option<_>>()?;
    Some(())
}

/// Copies `src`'s non-param ops into `dst`, params read through `param`; returns the outputs.
pub(crate) fn copy_body(
    dst: &mut Graph,
    src: &Graph,
    param: &dyn Fn(usize) -> Option<ValueId>,
) -> Option<Vec<ValueId>> {
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for id in src.ids() {
        let op = src.op(id)?;
        let nv = match op {
            Op::Param { index } => param(*index)?,
            _ => {
                let mut op = op.clone();
                op.map_operands(&mut |x| map.get(&x).copied().unwrap_or(x));
                dst.push(op, src.ty(id)?.clone(), src.span(id))
            }
        };
        map.insert(id, nv);
    }
    src.outputs.iter().map(|o| map.get(o).copied()).collect()
}
