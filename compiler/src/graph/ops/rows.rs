//! The row functions: ops that read a whole slice of their input along one axis and write a
//! function of it, `softmax` (the shape of the input) and `logsumexp` (one value per slice).
//! Everything about them is here: the table ([`ROW_FNS`]: names, signatures, help, what the
//! kernel writes, cost), the shape and dtype rule ([`row_type`], run by the verifier, the
//! eager op and the tracer alike), the CPU evaluation of one slice ([`eval_f64`], which the
//! runtime's row driver maps over the slices), the derivative and the sharding rule.
//!
//! The kernels are the templates of `kernels::rows` (the last axis) and `kernels::axis` (a
//! middle axis), which read [`RowOut`]: the max, then the sum of `e^(x − max)`, then either
//! each element normalised by the sum or one `log(sum) + max` per slice.

use super::{AttrPrinter, OpDef, ShardRule};
use crate::graph::autodiff::build::{bin, reshape, sum_axis, un};
use crate::graph::infer::TypeError;
use crate::graph::Kind;
use crate::graph::{BinaryOp, DType, Graph, Op, TensorType, UnaryOp, ValueId};
use std::fmt;

/// A row function.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RowFn {
    Softmax,
    LogSumExp,
}

/// What a row function writes; it picks the last pass of the kernel templates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RowOut {
    /// `e^(x − m) / Σ e^(x − m)` for each element, `m` the slice's max (NaN where `m` is not
    /// finite).
    Normalized,
    /// `log Σ e^(x − m) + m` for each slice, with `m` the max, or 0 where the max is ±inf (so
    /// all -inf gives -inf and a +inf gives +inf, as SciPy and PyTorch; NaN stays NaN).
    LogSum,
}

/// One row of the row-function table.
#[derive(Copy, Clone, Debug)]
pub struct RowFnRow {
    pub f: RowFn,
    /// `op.<name>`, the tensor method, and the name Graph IR and Schedule IR print.
    pub name: &'static str,
    /// `op.<signature>` as `help` shows it; its parameters are bound as written.
    pub signature: &'static str,
    /// The `help` text.
    pub help: &'static str,
    pub out: RowOut,
    /// Arithmetic per input element (the cost model).
    pub flops: f64,
    /// `keepdim` is a parameter (the result drops the axis unless it is kept).
    pub reduces: bool,
}

/// The row functions, in [`RowFn`] declaration order.
pub const ROW_FNS: [RowFnRow; 2] = [
    RowFnRow {
        f: RowFn::Softmax,
        name: "softmax",
        signature: "softmax(x, axis=-1)",
        help: "Softmax along `axis` (default the last): `exp(x - max) / sum(exp(x - max))`. \
            Computed in fp32 (fp64 for fp64) and rounded once; float dtypes are kept, ints give \
            fp32. A row whose maximum is not finite (all -inf, or a +inf or NaN) gives NaN; a \
            0-d tensor is E0200. In a kernel `softmax(Q @ K.T * s) @ V` becomes one \
            `flash_attention`.",
        out: RowOut::Normalized,
        flops: 5.0,
        reduces: false,
    },
    RowFnRow {
        f: RowFn::LogSumExp,
        name: "logsumexp",
        signature: "logsumexp(x, axis=-1, keepdim=False)",
        help: "`log(sum(exp(x)))` along `axis` (default the last), computed stably as \
            `log(sum(exp(x - max))) + max`; the axis is dropped unless `keepdim=True`. \
            Computed in fp64 on the cpu (fp32 in a kernel, fp64 for fp64) and rounded once; \
            float dtypes are kept, ints give fp32. A slice of all -inf gives -inf, one holding \
            +inf gives +inf, NaN gives NaN (as SciPy and PyTorch); a 0-d tensor is E0200. Its \
            derivative is `softmax(x)` times the cotangent; in a kernel it is one fused row \
            kernel, and on a mesh it runs locally when sharded along another axis.",
        out: RowOut::LogSum,
        flops: 4.0,
        reduces: true,
    },
];

impl RowFn {
    /// This function's row of [`ROW_FNS`].
    pub fn row(self) -> &'static RowFnRow {
        &ROW_FNS[self as usize]
    }
    pub fn name(self) -> &'static str {
        self.row().name
    }
    pub fn out(self) -> RowOut {
        self.row().out
    }
    /// The function bound as `op.<name>`.
    pub fn from_name(name: &str) -> Option<RowFn> {
        ROW_FNS.iter().find(|r| r.name == name).map(|r| r.f)
    }
}

/// Why [`row_type`] refuses an operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowError {
    /// A 0-d operand (a shape error, E0200).
    ZeroD(&'static str),
    /// `axis` out of range for `ndim` dimensions.
    Axis {
        name: &'static str,
        axis: isize,
        ndim: usize,
    },
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowError::ZeroD(n) => write!(
                f,
                "{n}: needs a tensor with at least 1 dimension, got a 0-d tensor"
            ),
            RowError::Axis { name, axis, ndim } => write!(
                f,
                "{name}: axis {axis} is out of range for a tensor with {ndim} dimension{}",
                if *ndim == 1 { "" } else { "s" }
            ),
        }
    }
}

/// The shape and dtype rule of `f(x, axis, keepdim)` on an operand of `shape` and `dtype`:
/// the axis (counted from the front), the result shape and the result dtype (float dtypes
/// are kept, others give fp32).
pub fn row_type(
    f: RowFn,
    shape: &[usize],
    dtype: DType,
    axis: isize,
    keepdim: bool,
) -> Result<(usize, Vec<usize>, DType), RowError> {
    let name = f.name();
    let nd = shape.len();
    if nd == 0 {
        return Err(RowError::ZeroD(name));
    }
    let a = if axis < 0 { axis + nd as isize } else { axis };
    if a < 0 || a >= nd as isize {
        return Err(RowError::Axis {
            name,
            axis,
            ndim: nd,
        });
    }
    let a = a as usize;
    let mut out = shape.to_vec();
    if f.out() == RowOut::LogSum {
        if keepdim {
            out[a] = 1;
        } else {
            out.remove(a);
        }
    }
    let d = if dtype.is_float() { dtype } else { DType::F32 };
    Ok((a, out, d))
}

/// `f` of one slice `x` in f64: `out` has `x`'s length ([`RowOut::Normalized`]) or 1.
pub fn eval_f64(f: RowFn, x: &[f64], out: &mut [f64]) {
    let m = x.iter().fold(
        f64::NEG_INFINITY,
        |m, &v| if v > m || v.is_nan() { v } else { m },
    );
    match f.out() {
        RowOut::Normalized => {
            if !m.is_finite() {
                out.fill(f64::NAN);
                return;
            }
            let mut s = 0.0;
            for (o, &v) in out.iter_mut().zip(x) {
                *o = (v - m).exp();
                s += *o;
            }
            let inv = 1.0 / s;
            for o in out.iter_mut() {
                *o *= inv;
            }
        }
        RowOut::LogSum => {
            let m = if m.is_infinite() { 0.0 } else { m };
            let s: f64 = x.iter().map(|&v| (v - m).exp()).sum();
            if let Some(o) = out.first_mut() {
                *o = s.ln() + m;
            }
        }
    }
}

/// The family's [`OpDef`].
pub struct RowFamily;

fn parts(op: &Op) -> Result<(RowFn, ValueId, usize, bool), TypeError> {
    match op {
        Op::Row {
            f,
            x,
            axis,
            keepdim,
        } => Ok((*f, *x, *axis, *keepdim)),
        _ => Err(TypeError::Undefined(ValueId(0))),
    }
}

impl OpDef for RowFamily {
    fn name(&self, op: &Op) -> &'static str {
        parts(op).map_or("row", |p| p.0.name())
    }

    fn infer(&self, g: &Graph, op: &Op, _declared: &TensorType) -> Result<TensorType, TypeError> {
        let (f, x, axis, keepdim) = parts(op)?;
        let t = g.ty(x).ok_or(TypeError::Undefined(x))?;
        match row_type(f, &t.shape, t.dtype, axis as isize, keepdim) {
            Ok((_, shape, d)) => Ok(TensorType::new(shape, d)),
            Err(_) => Err(TypeError::AxisOutOfRange(axis)),
        }
    }

    fn attrs(&self, _g: &Graph, op: &Op, _p: &mut dyn AttrPrinter) -> Vec<String> {
        let Ok((f, _, axis, keepdim)) = parts(op) else {
            return Vec::new();
        };
        let mut v = vec![format!("axis = {axis}")];
        if f.row().reduces {
            v.push(format!("keepdim = {keepdim}"));
        }
        v
    }

    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>> {
        let (f, x, axis, keepdim) = parts(op)?;
        let dx = match f.out() {
            RowOut::Normalized => {
                // dx = y·(dy − Σ dy·y)
                let p = bin(g, BinaryOp::Mul, dy, y)?;
                let s = sum_axis(g, p, axis, true)?;
                let d = bin(g, BinaryOp::Sub, dy, s)?;
                bin(g, BinaryOp::Mul, d, y)?
            }
            RowOut::LogSum => {
                // dx = e^(x − y)·dy = softmax(x)·dy, y and dy with the axis kept
                let (y, dy) = if keepdim {
                    (y, dy)
                } else {
                    let mut s = g.ty(y).ok_or(TypeError::Undefined(y))?.shape.clone();
                    s.insert(axis.min(s.len()), 1);
                    (reshape(g, y, &s)?, reshape(g, dy, &s)?)
                };
                let d = bin(g, BinaryOp::Sub, x, y)?;
                let p = un(g, UnaryOp::Exp, d)?;
                bin(g, BinaryOp::Mul, p, dy)?
            }
        };
        Ok(vec![Some(dx)])
    }

    fn kernel_kind(&self, op: &Op) -> Option<Kind> {
        Some(Kind::Row(parts(op).map_or(RowFn::Softmax, |p| p.0)))
    }

    fn flops_per_elem(&self, op: &Op) -> f64 {
        parts(op).map_or(1.0, |p| p.0.row().flops)
    }

    fn shard_rule(&self, op: &Op) -> ShardRule {
        ShardRule::WholeAxis(parts(op).map_or(0, |p| p.2))
    }

    fn reduced_len(&self, g: &Graph, op: &Op) -> u64 {
        parts(op)
            .ok()
            .and_then(|(_, x, axis, _)| g.ty(x)?.shape.get(axis).copied())
            .map_or(1, |d| d as u64)
    }
}

/// `Some((x, axis))` when `op` is a softmax (what the attention rewrite looks for).
pub fn softmax_of(op: &Op) -> Option<(ValueId, usize)> {
    match op {
        Op::Row {
            f: RowFn::Softmax,
            x,
            axis,
            ..
        } => Some((*x, *axis)),
        _ => None,
    }
}
