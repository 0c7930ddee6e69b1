//! The derivatives of layernorm and rmsnorm: the normalised input and 1/σ recomputed in the
//! cotangent dtype.

use super::*;
use crate::graph::{ReduceOp, UnaryOp};

/// `x` summed over every axis but the last (a norm parameter's gradient).
pub(super) fn sum_leading(g: &mut Graph, x: ValueId) -> R<ValueId> {
    let s = ty(g, x)?.shape;
    let last = s.last().copied().unwrap_or(1);
    sum_to(g, x, &[last])
}

/// `mean(v, axis=-1, keepdim=True)`.
pub(super) fn mean_last(g: &mut Graph, v: ValueId) -> R<ValueId> {
    let n = ty(g, v)?.shape.len();
    emit(
        g,
        Op::Reduce {
            op: ReduceOp::Mean,
            x: v,
            axis: Some(n.saturating_sub(1)),
            keepdim: true,
        },
    )
}

/// The normalised input of a layernorm (`centred`) or rmsnorm and `r = 1/σ` (keepdim on the
/// last axis), recomputed from `x` in the cotangent dtype.
pub(super) fn normalized(
    g: &mut Graph,
    x: ValueId,
    eps: f64,
    centred: bool,
) -> R<(ValueId, ValueId)> {
    let d = cot_dtype(ty(g, x)?.dtype);
    let xc = cast(g, x, d)?;
    let c = if centred {
        let m = mean_last(g, xc)?;
        bin(g, BinaryOp::Sub, xc, m)?
    } else {
        xc
    };
    let sq = bin(g, BinaryOp::Mul, c, c)?;
    let var = mean_last(g, sq)?;
    let ve = bin_c(g, BinaryOp::Add, var, eps)?;
    let r = un(g, UnaryOp::Rsqrt, ve)?;
    let xhat = bin(g, BinaryOp::Mul, c, r)?;
    Ok((xhat, r))
}

/// A norm's cotangents: of its input, and of its weight when it has one.
pub(super) struct NormGrads {
    pub(super) dx: ValueId,
    pub(super) dw: Option<ValueId>,
}

/// With `g = dy·w`: layernorm `dx = r·(g − mean(g) − x̂·mean(g·x̂))`, rmsnorm
/// `dx = r·(g − x̂·mean(g·x̂))`; `dw = Σ dy·x̂` over the leading axes.
pub(super) fn norm_rest(
    g: &mut Graph,
    _x: ValueId,
    xhat: ValueId,
    r: ValueId,
    weight: Option<ValueId>,
    dy: ValueId,
    centred: bool,
) -> R<NormGrads> {
    let gy = match weight {
        Some(w) => bin(g, BinaryOp::Mul, dy, w)?,
        None => dy,
    };
    let gx = bin(g, BinaryOp::Mul, gy, xhat)?;
    let m2 = mean_last(g, gx)?;
    let t = bin(g, BinaryOp::Mul, xhat, m2)?;
    let mut inner = bin(g, BinaryOp::Sub, gy, t)?;
    if centred {
        let m1 = mean_last(g, gy)?;
        inner = bin(g, BinaryOp::Sub, inner, m1)?;
    }
    let dx = bin(g, BinaryOp::Mul, inner, r)?;
    let dw = match weight {
        Some(_) => {
            let p = bin(g, BinaryOp::Mul, dy, xhat)?;
            Some(sum_leading(g, p)?)
        }
        None => None,
    };
    Ok(NormGrads { dx, dw })
}
