//! The tensor types and op kinds of Graph IR (dtypes and scalars are [`crate::dtype`]'s),
//! with their result-dtype rules; the runtime's eager ops use the same enums.

use std::fmt;

pub use crate::dtype::{DType, Scalar};

/// Shape and element type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl TensorType {
    pub fn new(shape: Vec<usize>, dtype: DType) -> TensorType {
        TensorType { shape, dtype }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Unary elementwise ops: one row each in [`UNARY_OPS`], which everything else reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Relu,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Gelu,
    Silu,
    Not,
    Erf,
    Sin,
    Cos,
    Floor,
    Ceil,
    Round,
    Sign,
    IsNan,
    IsFinite,
}

/// The result dtype rule of a unary op.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnaryResult {
    /// The input's dtype (bool gives int64): `neg abs relu`.
    Same,
    /// A float function: float inputs keep their dtype, others give fp32.
    Float,
    /// Bool: `logical_not`.
    Bool,
    /// A bool test of the value: `isnan isfinite` (ints: never NaN, always finite).
    Test,
}

/// The derivative of a unary op for reverse mode: given the graph, the op's input `x`, its
/// output `y` and the gradient `dy` of the output, adds the ops that compute the gradient of
/// the input and returns it (`graph.grad`, [`super::autodiff`]; the functions are in
/// `derivs`); an op without one (`vjp: None`) is not differentiable.
pub type UnaryVjp = fn(
    &mut super::Graph,
    super::ValueId,
    super::ValueId,
    super::ValueId,
) -> Result<super::ValueId, super::infer::TypeError>;

/// One row of the unary op table: how the op is named and bound, its dtype rule, whether a
/// matmul epilogue may apply it, and its derivative. The eager kernel is the runtime's
/// (`tessera_runtime::ops::elementwise`), the lowering `kernels::values`; the `op.`
/// bindings, tensor methods, the tracer, the Graph IR interpreter and sharded execution take
/// the op from here.
#[derive(Copy, Clone, Debug)]
pub struct UnaryRow {
    pub op: UnaryOp,
    /// `op.<name>` (and the tensor method) and the name Graph IR prints.
    pub name: &'static str,
    /// Bound as `op.<name>(x)`.
    pub function: bool,
    /// Also a tensor method `x.<name>()`.
    pub method: bool,
    pub result: UnaryResult,
    /// A matmul epilogue may apply it.
    pub activation: bool,
    /// `None`: no derivative yet.
    pub vjp: Option<UnaryVjp>,
}

const fn row(op: UnaryOp, name: &'static str, result: UnaryResult, activation: bool) -> UnaryRow {
    UnaryRow {
        op,
        name,
        function: true,
        method: true,
        result,
        activation,
        vjp: super::derivs::unary(op),
    }
}

/// The unary op table, in [`UnaryOp`] declaration order.
pub const UNARY_OPS: [UnaryRow; 21] = {
    use UnaryOp as U;
    use UnaryResult::{Float, Same};
    [
        UnaryRow {
            method: false,
            ..row(U::Neg, "neg", Same, false)
        },
        row(U::Abs, "abs", Same, false),
        row(U::Relu, "relu", Same, true),
        row(U::Exp, "exp", Float, false),
        row(U::Log, "log", Float, false),
        row(U::Sqrt, "sqrt", Float, false),
        row(U::Rsqrt, "rsqrt", Float, false),
        row(U::Tanh, "tanh", Float, true),
        row(U::Sigmoid, "sigmoid", Float, true),
        row(U::Gelu, "gelu", Float, true),
        row(U::Silu, "silu", Float, true),
        UnaryRow {
            method: false,
            ..row(U::Not, "logical_not", UnaryResult::Bool, false)
        },
        row(U::Erf, "erf", Float, false),
        row(U::Sin, "sin", Float, false),
        row(U::Cos, "cos", Float, false),
        row(U::Floor, "floor", Same, false),
        row(U::Ceil, "ceil", Same, false),
        row(U::Round, "round", Same, false),
        row(U::Sign, "sign", Same, false),
        row(U::IsNan, "isnan", UnaryResult::Test, false),
        row(U::IsFinite, "isfinite", UnaryResult::Test, false),
    ]
};

impl UnaryOp {
    /// This op's row of [`UNARY_OPS`].
    pub fn row(self) -> &'static UnaryRow {
        &UNARY_OPS[self as usize]
    }
    /// The op bound as `op.<name>` (or the tensor method), if any.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        UNARY_OPS.iter().find(|r| r.name == name).map(|r| r.op)
    }
    pub fn name(self) -> &'static str {
        self.row().name
    }
    /// An activation a matmul epilogue may apply.
    pub fn is_activation(self) -> bool {
        self.row().activation
    }
    /// The result dtype for an input of dtype `d`.
    pub fn result_dtype(self, d: DType) -> DType {
        match self.row().result {
            UnaryResult::Bool | UnaryResult::Test => DType::Bool,
            UnaryResult::Same if d == DType::Bool => DType::I64,
            // |z| of a complex number is real (NumPy's)
            UnaryResult::Same if self == UnaryOp::Abs => d.real_part(),
            UnaryResult::Same => d,
            UnaryResult::Float if d.is_float() || d.is_complex() => d,
            UnaryResult::Float => DType::F32,
        }
    }
}

/// Binary elementwise ops (comparisons included; they give bool).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
}

/// The result dtype rule of a binary op, given the operands' promoted dtype.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinaryResult {
    /// The promoted dtype, bool giving int64: `+ - * // % **`.
    Arith,
    /// True division: float stays, others give fp32.
    Div,
    /// The promoted dtype as is (bool stays bool): `maximum minimum`.
    Promoted,
    /// Bool: comparisons and logical ops.
    Bool,
}

/// The derivative of a binary op (reverse mode): given the graph, the operands `a`, `b`, the
/// result and the cotangent of the result, adds the ops of the operands' cotangents and
/// returns them, in the result's (broadcast) shape: the pass sums them down to each operand's
/// shape. `None`: not differentiable.
pub type BinaryVjp = fn(
    &mut super::Graph,
    super::ValueId,
    super::ValueId,
    super::ValueId,
    super::ValueId,
) -> Result<(super::ValueId, super::ValueId), super::infer::TypeError>;

/// One row of the binary op table: its Graph IR name, how `.tsr` reaches it (`op.<name>(a, b)`
/// and/or an operator), its dtype rule and its derivative. The eager kernel is the runtime's
/// (`tessera_runtime::ops::elementwise`), the lowering `kernels::values`; the `op.`
/// bindings, the operators of every tensor kind, the tracer and the verifier take the op from
/// here.
#[derive(Copy, Clone, Debug)]
pub struct BinaryRow {
    pub op: BinaryOp,
    /// The name Graph IR prints (and `op.<name>` where `function`).
    pub name: &'static str,
    /// Bound as `op.<name>(a, b)`.
    pub function: bool,
    /// The `.tsr` operator that applies it elementwise (`+`, `<`, …).
    pub operator: Option<&'static str>,
    pub result: BinaryResult,
    /// `None`: no derivative yet.
    pub vjp: Option<BinaryVjp>,
}

const fn brow(
    op: BinaryOp,
    name: &'static str,
    function: bool,
    operator: Option<&'static str>,
    result: BinaryResult,
) -> BinaryRow {
    BinaryRow {
        op,
        name,
        function,
        operator,
        result,
        vjp: super::derivs::binary(op),
    }
}

/// The binary op table, in [`BinaryOp`] declaration order.
pub const BINARY_OPS: [BinaryRow; 17] = {
    use BinaryOp as B;
    use BinaryResult::{Arith, Bool, Div, Promoted};
    [
        brow(B::Add, "add", true, Some("+"), Arith),
        brow(B::Sub, "sub", true, Some("-"), Arith),
        brow(B::Mul, "mul", true, Some("*"), Arith),
        brow(B::Div, "div", true, Some("/"), Div),
        brow(B::FloorDiv, "floordiv", false, Some("//"), Arith),
        brow(B::Mod, "mod", false, Some("%"), Arith),
        brow(B::Pow, "pow", true, Some("**"), Arith),
        brow(B::Maximum, "maximum", true, None, Promoted),
        brow(B::Minimum, "minimum", true, None, Promoted),
        brow(B::Eq, "eq", false, Some("=="), Bool),
        brow(B::Ne, "ne", false, Some("!="), Bool),
        brow(B::Lt, "lt", false, Some("<"), Bool),
        brow(B::Le, "le", false, Some("<="), Bool),
        brow(B::Gt, "gt", false, Some(">"), Bool),
        brow(B::Ge, "ge", false, Some(">="), Bool),
        brow(B::LogicalAnd, "logical_and", true, Some("&"), Bool),
        brow(B::LogicalOr, "logical_or", true, Some("|"), Bool),
    ]
};

impl BinaryOp {
    /// This op's row of [`BINARY_OPS`].
    pub fn row(self) -> &'static BinaryRow {
        &BINARY_OPS[self as usize]
    }

    /// The op bound as `op.<name>(a, b)`, if any.
    pub fn function(name: &str) -> Option<BinaryOp> {
        BINARY_OPS
            .iter()
            .find(|r| r.function && r.name == name)
            .map(|r| r.op)
    }

    /// The elementwise op of a `.tsr` arithmetic operator (`@` is a matmul: `None`).
    pub fn of_operator(op: tessera_lang::ast::BinOp) -> Option<BinaryOp> {
        Self::of_symbol(op.symbol())
    }

    /// The elementwise op of a `.tsr` comparison (`in` and `is` are not elementwise: `None`).
    pub fn of_comparison(op: tessera_lang::ast::CmpOp) -> Option<BinaryOp> {
        Self::of_symbol(op.symbol())
    }

    fn of_symbol(sym: &str) -> Option<BinaryOp> {
        BINARY_OPS
            .iter()
            .find(|r| r.operator == Some(sym))
            .map(|r| r.op)
    }

    pub const ALL: [BinaryOp; 17] = {
        let mut all = [BinaryOp::Add; 17];
        let mut i = 0;
        while i < 17 {
            all[i] = BINARY_OPS[i].op;
            i += 1;
        }
        all
    };
    pub fn name(self) -> &'static str {
        self.row().name
    }
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
    /// The result dtype for operands of dtypes `a` and `b` (a `const` operand already carries
    /// its scalar-promoted dtype).
    pub fn result_dtype(self, a: DType, b: DType) -> DType {
        self.result_for(DType::promote(a, b))
    }

    /// The result dtype given the operands' promoted dtype `p` (tensor/tensor or
    /// tensor/scalar promotion): the one rule of eager ops, the tracer and the verifier.
    pub fn result_for(self, p: DType) -> DType {
        match self.row().result {
            BinaryResult::Bool => DType::Bool,
            BinaryResult::Div if p.is_float() || p.is_complex() => p,
            BinaryResult::Div => DType::F32,
            BinaryResult::Promoted => p,
            BinaryResult::Arith if p == DType::Bool => DType::I64,
            BinaryResult::Arith => p,
        }
    }
}

/// Reductions: one row each in [`REDUCE_OPS`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
}

/// The result dtype rule of a reduction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReduceResult {
    /// Floats keep their dtype, others give int64: `sum`.
    Sum,
    /// Floats keep their dtype, others give fp32: `mean`.
    Mean,
    /// The input's dtype: `max min`.
    Same,
}

/// The derivative of any other op (matmul, softmax, the norms, attention, shape ops) in
/// reverse mode: given the graph, the op, its result and the cotangent of the result, adds the
/// ops of its operands' cotangents and returns one per operand of [`super::Op::operands`]
/// (`None`: that operand gets none). The slot sits in the `op.` table's rows
/// (`tessera_stdlib::tensor::op::table`) but is not read yet: the derivatives of these ops are one
/// match in [`super::autodiff`] (the compiler cannot see the `op.` table).
pub type OpVjp = fn(
    &mut super::Graph,
    &super::Op,
    super::ValueId,
    super::ValueId,
) -> Vec<Option<super::ValueId>>;

/// The derivative of a reduction (reverse mode): given the graph, the input, the result and
/// the cotangent of the result, the axis and keepdim, adds the ops of the input's cotangent
/// and returns it. `None`: not differentiable.
pub type ReduceVjp = fn(
    &mut super::Graph,
    super::ValueId,
    super::ValueId,
    super::ValueId,
    Option<usize>,
    bool,
) -> Result<super::ValueId, super::infer::TypeError>;

/// One row of the reduction table: `op.<name>(x, axis=None, keepdim=False)` and the tensor
/// method of the same name, its dtype rule and its derivative. The eager kernel is the
/// runtime's (`tessera_runtime::ops::reduce`); the lowering the row and axis kernels
/// (`kernels::rows`, `axis`).
#[derive(Copy, Clone, Debug)]
pub struct ReduceRow {
    pub op: ReduceOp,
    pub name: &'static str,
    pub result: ReduceResult,
    /// `None`: no derivative yet.
    pub vjp: Option<ReduceVjp>,
}

/// The reduction table, in [`ReduceOp`] declaration order.
pub const REDUCE_OPS: [ReduceRow; 4] = {
    const fn row(op: ReduceOp, name: &'static str, result: ReduceResult) -> ReduceRow {
        ReduceRow {
            op,
            name,
            result,
            vjp: super::derivs::reduce(op),
        }
    }
    [
        row(ReduceOp::Sum, "sum", ReduceResult::Sum),
        row(ReduceOp::Mean, "mean", ReduceResult::Mean),
        row(ReduceOp::Max, "max", ReduceResult::Same),
        row(ReduceOp::Min, "min", ReduceResult::Same),
    ]
};

impl ReduceOp {
    /// This op's row of [`REDUCE_OPS`].
    pub fn row(self) -> &'static ReduceRow {
        &REDUCE_OPS[self as usize]
    }
    /// The reduction bound as `op.<name>` and `x.<name>()`.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        REDUCE_OPS.iter().find(|r| r.name == name).map(|r| r.op)
    }
    pub fn name(self) -> &'static str {
        self.row().name
    }
    pub fn result_dtype(self, d: DType) -> DType {
        match self.row().result {
            ReduceResult::Sum | ReduceResult::Mean if d.is_complex() => d,
            ReduceResult::Sum if !d.is_float() => DType::I64,
            ReduceResult::Mean if !d.is_float() => DType::F32,
            ReduceResult::Sum | ReduceResult::Mean | ReduceResult::Same => d,
        }
    }
}

/// One item of a basic index `x[...]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SliceItem {
    Index(i64),
    Range {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    NewAxis,
    Ellipsis,
}

impl fmt::Display for SliceItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = |v: &Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
        match self {
            SliceItem::Index(i) => write!(f, "{i}"),
            SliceItem::Range { start, stop, step } => {
                write!(f, "{}:{}", o(start), o(stop))?;
                if let Some(s) = step {
                    write!(f, ":{s}")?;
                }
                Ok(())
            }
            SliceItem::NewAxis => f.write_str("None"),
            SliceItem::Ellipsis => f.write_str("..."),
        }
    }
}
