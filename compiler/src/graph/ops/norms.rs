//! The norms: `layernorm(x, weight, bias, eps)` and `rmsnorm(x, weight, eps)` over the last
//! axis. Here: the shape and dtype rule, the attributes, the derivative (the normalised input
//! and 1/σ recomputed in the cotangent dtype), the kernel kind, the cost and the sharding rule.
//! The eager kernels are the runtime's (`tessera_runtime::ops::nn`), the kernel template
//! `kernels::rows`; a norm feeding a matmul becomes its prologue (`graph::prologue`).

use super::{AttrPrinter, OpDef, ShardRule};
use crate::graph::autodiff::build::{bin, bin_c, cast, cot_dtype, emit, sum_to, ty, un};
use crate::graph::autodiff::R;
use crate::graph::infer::TypeError;
use crate::graph::Kind;
use crate::graph::{BinaryOp, Graph, Op, ReduceOp, TensorType, UnaryOp, ValueId};

/// The family's [`OpDef`].
pub struct NormFamily;

impl OpDef for NormFamily {
    fn name(&self, op: &Op) -> &'static str {
        match op {
            Op::RmsNorm { .. } => "rmsnorm",
            _ => "layernorm",
        }
    }

    fn infer(&self, g: &Graph, op: &Op, _declared: &TensorType) -> Result<TensorType, TypeError> {
        let (x, params, what): (_, Vec<ValueId>, _) = match op {
            Op::LayerNorm {
                x, weight, bias, ..
            } => (
                *x,
                [weight, bias].into_iter().flatten().copied().collect(),
                "layernorm parameter",
            ),
            Op::RmsNorm { x, weight, .. } => {
                (*x, weight.iter().copied().collect(), "rmsnorm weight")
            }
            _ => return Err(TypeError::Undefined(ValueId(0))),
        };
        let t = ty(g, x)?;
        let d = *t.shape.last().ok_or(TypeError::NormOf0d(self.name(op)))?;
        for p in params {
            if ty(g, p)?.shape != [d] {
                return Err(TypeError::NormParam { what, d });
            }
        }
        let dt = if t.dtype.is_float() {
            t.dtype
        } else {
            crate::graph::DType::F32
        };
        Ok(TensorType::new(t.shape, dt))
    }

    fn attrs(&self, _g: &Graph, op: &Op, _p: &mut dyn AttrPrinter) -> Vec<String> {
        match op {
            Op::LayerNorm { eps, .. } | Op::RmsNorm { eps, .. } => vec![format!("eps = {eps:?}")],
            _ => vec![],
        }
    }

    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        _y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
        match op {
            Op::LayerNorm {
                x,
                weight,
                bias,
                eps,
            } => {
                let (xhat, r) = normalized(g, *x, *eps, true)?;
                let n = norm_rest(g, xhat, r, *weight, dy, true)?;
                let db = match bias {
                    Some(_) => Some(sum_leading(g, dy)?),
                    None => None,
                };
                let mut v = vec![Some(n.dx)];
                if weight.is_some() {
                    v.push(n.dw);
                }
                if bias.is_some() {
                    v.push(db);
                }
                Ok(v)
            }
            Op::RmsNorm { x, weight, eps } => {
                let (xhat, r) = normalized(g, *x, *eps, false)?;
                let n = norm_rest(g, xhat, r, *weight, dy, false)?;
                let mut v = vec![Some(n.dx)];
                if weight.is_some() {
                    v.push(n.dw);
                }
                Ok(v)
            }
            _ => Err(None),
        }
    }

    fn kernel_kind(&self, op: &Op) -> Option<Kind> {
        Some(match op {
            Op::RmsNorm { .. } => Kind::RmsNorm,
            _ => Kind::LayerNorm,
        })
    }

    fn flops_per_elem(&self, op: &Op) -> f64 {
        match op {
            Op::RmsNorm { .. } => 4.0,
            _ => 8.0,
        }
    }

    fn shard_rule(&self, op: &Op) -> ShardRule {
        let _ = op;
        ShardRule::WholeLast
    }

    fn reduced_len(&self, g: &Graph, op: &Op) -> u64 {
        match op {
            Op::LayerNorm { x, .. } | Op::RmsNorm { x, .. } => g
                .ty(*x)
                .and_then(|t| t.shape.last().copied())
                .map_or(1, |d| d as u64),
            _ => 1,
        }
    }
}

/// `x` summed over every axis but the last (a norm parameter's gradient).
fn sum_leading(g: &mut Graph, x: ValueId) -> R<ValueId> {
    let s = ty(g, x)?.shape;
    let last = s.last().copied().unwrap_or(1);
    sum_to(g, x, &[last])
}

/// `mean(v, axis=-1, keepdim=True)`.
fn mean_last(g: &mut Graph, v: ValueId) -> R<ValueId> {
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
fn normalized(g: &mut Graph, x: ValueId, eps: f64, centred: bool) -> R<(ValueId, ValueId)> {
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
struct NormGrads {
    dx: ValueId,
    dw: Option<ValueId>,
}

/// With `g = dy·w`: layernorm `dx = r·(g − mean(g) − x̂·mean(g·x̂))`, rmsnorm
/// `dx = r·(g − x̂·mean(g·x̂))`; `dw = Σ dy·x̂` over the leading axes.
fn norm_rest(
    g: &mut Graph,
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
