//! The derivatives in the op tables' `vjp` slots (reverse mode, [`super::autodiff`]): for each
//! differentiable unary, binary and reduction op, the Graph IR ops that compute its operands'
//! cotangents from the result's cotangent `dy`. Binary derivatives return cotangents in the
//! result's (broadcast) shape; the pass sums them down to each operand's shape.

use super::autodiff::{bin, bin_c, broadcast_to, keep_where, konst, reshape, route, ty, un};
use super::infer::TypeError;
use super::{
    BinaryOp as B, BinaryVjp, Graph, ReduceOp, ReduceVjp, UnaryOp as U, UnaryVjp, ValueId,
};

type R<T> = Result<T, TypeError>;

/// The derivative of unary op `op`, if it has one (comparisons and tests have none).
pub(super) const fn unary(op: U) -> Option<UnaryVjp> {
    Some(match op {
        U::Neg => neg,
        U::Abs => abs,
        U::Relu => relu,
        U::Exp => exp,
        U::Log => log,
        U::Sqrt => sqrt,
        U::Rsqrt => rsqrt,
        U::Tanh => tanh,
        U::Sigmoid => sigmoid,
        U::Gelu => gelu,
        U::Silu => silu,
        U::Erf => erf,
        U::Sin => sin,
        U::Cos => cos,
        U::Floor | U::Ceil | U::Round | U::Sign => zero,
        U::Not | U::IsNan | U::IsFinite => return None,
    })
}

/// The derivative of binary op `op`, if it has one.
pub(super) const fn binary(op: B) -> Option<BinaryVjp> {
    Some(match op {
        B::Add => add,
        B::Sub => sub,
        B::Mul => mul,
        B::Div => div,
        B::Pow => pow,
        B::Maximum => maximum,
        B::Minimum => minimum,
        B::Mod => modulo,
        B::FloorDiv => floor_div,
        _ => return None,
    })
}

/// The derivative of reduction `op`.
pub(super) const fn reduce(op: ReduceOp) -> Option<ReduceVjp> {
    Some(match op {
        ReduceOp::Sum => sum,
        ReduceOp::Mean => mean,
        ReduceOp::Max | ReduceOp::Min => extremum,
    })
}

// ----- unary: dx from x, y = f(x), dy --------------------------------------------------------

fn neg(g: &mut Graph, _x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    un(g, U::Neg, dy)
}

fn abs(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    let s = un(g, U::Sign, x)?;
    bin(g, B::Mul, dy, s)
}

fn relu(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    let pos = bin_c(g, B::Gt, x, 0.0)?;
    keep_where(g, pos, dy)
}

fn exp(g: &mut Graph, _x: ValueId, y: ValueId, dy: ValueId) -> R<ValueId> {
    bin(g, B::Mul, dy, y)
}

fn log(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    bin(g, B::Div, dy, x)
}

fn sqrt(g: &mut Graph, _x: ValueId, y: ValueId, dy: ValueId) -> R<ValueId> {
    // dy / (2·√x)
    let two_y = bin_c(g, B::Mul, y, 2.0)?;
    bin(g, B::Div, dy, two_y)
}

fn rsqrt(g: &mut Graph, x: ValueId, y: ValueId, dy: ValueId) -> R<ValueId> {
    // d x^(-1/2) = −½·x^(-3/2) = −½·y/x
    let q = bin(g, B::Div, y, x)?;
    let h = bin_c(g, B::Mul, q, -0.5)?;
    bin(g, B::Mul, dy, h)
}

fn tanh(g: &mut Graph, _x: ValueId, y: ValueId, dy: ValueId) -> R<ValueId> {
    // 1 − y²
    let yy = bin(g, B::Mul, y, y)?;
    let one = konst(g, 1.0, ty(g, yy)?.dtype)?;
    let d = bin(g, B::Sub, one, yy)?;
    bin(g, B::Mul, dy, d)
}

fn sigmoid(g: &mut Graph, _x: ValueId, y: ValueId, dy: ValueId) -> R<ValueId> {
    // y·(1 − y)
    let one = konst(g, 1.0, ty(g, y)?.dtype)?;
    let c = bin(g, B::Sub, one, y)?;
    let d = bin(g, B::Mul, y, c)?;
    bin(g, B::Mul, dy, d)
}

fn silu(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    // s + x·s·(1 − s), s = sigmoid(x)
    let s = un(g, U::Sigmoid, x)?;
    let one = konst(g, 1.0, ty(g, s)?.dtype)?;
    let c = bin(g, B::Sub, one, s)?;
    let xs = bin(g, B::Mul, x, s)?;
    let t = bin(g, B::Mul, xs, c)?;
    let d = bin(g, B::Add, s, t)?;
    bin(g, B::Mul, dy, d)
}

/// `e^(−x²/2)` or (`half = false`) `e^(−x²)`.
fn gauss(g: &mut Graph, x: ValueId, half: bool) -> R<ValueId> {
    let xx = bin(g, B::Mul, x, x)?;
    let e = bin_c(g, B::Mul, xx, if half { -0.5 } else { -1.0 })?;
    un(g, U::Exp, e)
}

fn gelu(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    // Φ(x) + x·φ(x) = ½(1 + erf(x/√2)) + x·e^(−x²/2)/√(2π)
    let xs = bin_c(g, B::Mul, x, std::f64::consts::FRAC_1_SQRT_2)?;
    let e = un(g, U::Erf, xs)?;
    let e1 = bin_c(g, B::Add, e, 1.0)?;
    let cdf = bin_c(g, B::Mul, e1, 0.5)?;
    let phi = gauss(g, x, true)?;
    let inv_sqrt_2pi = 0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2;
    let pdf = bin_c(g, B::Mul, phi, inv_sqrt_2pi)?;
    let xp = bin(g, B::Mul, x, pdf)?;
    let d = bin(g, B::Add, cdf, xp)?;
    bin(g, B::Mul, dy, d)
}

fn erf(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    // 2/√π · e^(−x²)
    let e = gauss(g, x, false)?;
    let d = bin_c(g, B::Mul, e, std::f64::consts::FRAC_2_SQRT_PI)?;
    bin(g, B::Mul, dy, d)
}

fn sin(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    let c = un(g, U::Cos, x)?;
    bin(g, B::Mul, dy, c)
}

fn cos(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    let s = un(g, U::Sin, x)?;
    let ns = un(g, U::Neg, s)?;
    bin(g, B::Mul, dy, ns)
}

/// Piecewise-constant functions (`floor ceil round sign`): zero almost everywhere.
fn zero(g: &mut Graph, x: ValueId, _y: ValueId, dy: ValueId) -> R<ValueId> {
    let z = konst(g, 0.0, ty(g, dy)?.dtype)?;
    let s = ty(g, x)?.shape;
    broadcast_to(g, z, &s)
}

// ----- binary: (da, db) in the result's shape ------------------------------------------------

fn add(
    _g: &mut Graph,
    _a: ValueId,
    _b: ValueId,
    _y: ValueId,
    dy: ValueId,
) -> R<(ValueId, ValueId)> {
    Ok((dy, dy))
}

fn sub(g: &mut Graph, _a: ValueId, _b: ValueId, _y: ValueId, dy: ValueId) -> R<(ValueId, ValueId)> {
    Ok((dy, un(g, U::Neg, dy)?))
}

fn mul(g: &mut Graph, a: ValueId, b: ValueId, _y: ValueId, dy: ValueId) -> R<(ValueId, ValueId)> {
    Ok((bin(g, B::Mul, dy, b)?, bin(g, B::Mul, dy, a)?))
}

fn div(g: &mut Graph, _a: ValueId, b: ValueId, y: ValueId, dy: ValueId) -> R<(ValueId, ValueId)> {
    // d(a/b) = da/b − dy·y/b
    let da = bin(g, B::Div, dy, b)?;
    let t = bin(g, B::Mul, da, y)?;
    Ok((da, un(g, U::Neg, t)?))
}

fn pow(g: &mut Graph, a: ValueId, b: ValueId, y: ValueId, dy: ValueId) -> R<(ValueId, ValueId)> {
    // d a^b = b·a^(b−1) da + a^b·ln a db
    let bm1 = bin_c(g, B::Sub, b, 1.0)?;
    let p = bin(g, B::Pow, a, bm1)?;
    let bp = bin(g, B::Mul, b, p)?;
    let da = bin(g, B::Mul, dy, bp)?;
    let la = un(g, U::Log, a)?;
    let yl = bin(g, B::Mul, y, la)?;
    let db = bin(g, B::Mul, dy, yl)?;
    Ok((da, db))
}

fn modulo(
    g: &mut Graph,
    a: ValueId,
    b: ValueId,
    _y: ValueId,
    dy: ValueId,
) -> R<(ValueId, ValueId)> {
    // a mod b = a − floor(a/b)·b: d = da − floor(a/b)·db (almost everywhere)
    let q = bin(g, B::FloorDiv, a, b)?;
    let t = bin(g, B::Mul, dy, q)?;
    Ok((dy, un(g, U::Neg, t)?))
}

/// `floor(a/b)`: piecewise constant, zero almost everywhere.
fn floor_div(
    g: &mut Graph,
    _a: ValueId,
    _b: ValueId,
    y: ValueId,
    dy: ValueId,
) -> R<(ValueId, ValueId)> {
    let z = konst(g, 0.0, ty(g, dy)?.dtype)?;
    let s = ty(g, y)?.shape;
    let z = broadcast_to(g, z, &s)?;
    Ok((z, z))
}

/// `maximum`/`minimum`: the cotangent goes to the operand chosen (`a` on a tie, as the eager
/// op returns `a` then).
fn pick(g: &mut Graph, a: ValueId, b: ValueId, dy: ValueId, cmp: B) -> R<(ValueId, ValueId)> {
    let first = bin(g, cmp, a, b)?;
    route(g, first, dy)
}

fn maximum(
    g: &mut Graph,
    a: ValueId,
    b: ValueId,
    _y: ValueId,
    dy: ValueId,
) -> R<(ValueId, ValueId)> {
    pick(g, a, b, dy, B::Ge)
}

fn minimum(
    g: &mut Graph,
    a: ValueId,
    b: ValueId,
    _y: ValueId,
    dy: ValueId,
) -> R<(ValueId, ValueId)> {
    pick(g, a, b, dy, B::Le)
}

// ----- reductions: dx of x's shape -----------------------------------------------------------

/// `dy` (the reduction's result) with the reduced axis (or every axis) kept as size 1, then
/// broadcast to `x`'s shape.
fn spread(
    g: &mut Graph,
    x: ValueId,
    dy: ValueId,
    axis: Option<usize>,
    keepdim: bool,
) -> R<ValueId> {
    let xs = ty(g, x)?.shape;
    let kept: Vec<usize> = match axis {
        _ if keepdim => ty(g, dy)?.shape,
        None => vec![1; xs.len()],
        Some(ax) => {
            let mut s = xs.clone();
            if let Some(d) = s.get_mut(ax) {
                *d = 1;
            }
            s
        }
    };
    let k = reshape(g, dy, &kept)?;
    broadcast_to(g, k, &xs)
}

fn sum(
    g: &mut Graph,
    x: ValueId,
    _y: ValueId,
    dy: ValueId,
    axis: Option<usize>,
    keepdim: bool,
) -> R<ValueId> {
    spread(g, x, dy, axis, keepdim)
}

fn mean(
    g: &mut Graph,
    x: ValueId,
    _y: ValueId,
    dy: ValueId,
    axis: Option<usize>,
    keepdim: bool,
) -> R<ValueId> {
    let xs = ty(g, x)?.shape;
    let n = match axis {
        Some(ax) => xs.get(ax).copied().unwrap_or(1),
        None => xs.iter().product(),
    };
    let d = spread(g, x, dy, axis, keepdim)?;
    bin_c(g, B::Div, d, n.max(1) as f64)
}

/// `max`/`min`: the cotangent shared equally among the elements equal to the result (as JAX
/// and PyTorch do).
fn extremum(
    g: &mut Graph,
    x: ValueId,
    y: ValueId,
    dy: ValueId,
    axis: Option<usize>,
    keepdim: bool,
) -> R<ValueId> {
    let yb = spread(g, x, y, axis, keepdim)?;
    let hit = bin(g, B::Eq, x, yb)?;
    let one = konst(g, 1.0, ty(g, dy)?.dtype)?;
    let ones = keep_where(g, hit, one)?;
    let count = super::autodiff::sum_reduce(g, ones, axis, true)?;
    let count_b = broadcast_to(g, count, &ty(g, x)?.shape)?;
    let d = spread(g, x, dy, axis, keepdim)?;
    let share = bin(g, B::Div, d, count_b)?;
    keep_where(g, hit, share)
}
