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
}

/// The derivative of a unary op for reverse mode: given the graph, the op's input `x`, its
/// output `y` and the gradient `dy` of the output, adds the ops that compute the gradient of
/// the input and returns it. Filled in by the derivatives work (`graph.grad`); an op without
/// one (`vjp: None`) is not differentiable.
pub type UnaryVjp =
    fn(&mut super::Graph, super::ValueId, super::ValueId, super::ValueId) -> super::ValueId;

/// One row of the unary op table: how the op is named and bound, its dtype rule, whether a
/// matmul epilogue may apply it, and its derivative. The eager kernel is the runtime's
/// (`tessera_runtime::ops::elementwise`), the lowering `lower::kernels::values`; the `op.`
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
        vjp: None,
    }
}

/// The unary op table, in [`UnaryOp`] declaration order.
pub const UNARY_OPS: [UnaryRow; 13] = {
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
            function: false,
            method: false,
            ..row(U::Not, "logical_not", UnaryResult::Bool, false)
        },
        row(U::Erf, "erf", Float, false),
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
            UnaryResult::Bool => DType::Bool,
            UnaryResult::Same if d == DType::Bool => DType::I64,
            UnaryResult::Same => d,
            UnaryResult::Float if d.is_float() => d,
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

impl BinaryOp {
    /// The elementwise op of a `.tsr` arithmetic operator (`@` is a matmul: `None`).
    pub fn of_operator(op: tessera_lang::ast::BinOp) -> Option<BinaryOp> {
        use tessera_lang::ast::BinOp as B;
        Some(match op {
            B::Add => BinaryOp::Add,
            B::Sub => BinaryOp::Sub,
            B::Mul => BinaryOp::Mul,
            B::Div => BinaryOp::Div,
            B::FloorDiv => BinaryOp::FloorDiv,
            B::Mod => BinaryOp::Mod,
            B::Pow => BinaryOp::Pow,
            B::MatMul => return None,
        })
    }

    /// The elementwise op of a `.tsr` comparison (`in` and `is` are not elementwise: `None`).
    pub fn of_comparison(op: tessera_lang::ast::CmpOp) -> Option<BinaryOp> {
        use tessera_lang::ast::CmpOp as C;
        Some(match op {
            C::Eq => BinaryOp::Eq,
            C::Ne => BinaryOp::Ne,
            C::Lt => BinaryOp::Lt,
            C::Le => BinaryOp::Le,
            C::Gt => BinaryOp::Gt,
            C::Ge => BinaryOp::Ge,
            C::In | C::NotIn | C::Is | C::IsNot => return None,
        })
    }

    pub const ALL: [BinaryOp; 17] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::LogicalAnd,
        BinaryOp::LogicalOr,
    ];
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::FloorDiv => "floordiv",
            BinaryOp::Mod => "mod",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::LogicalAnd => "logical_and",
            BinaryOp::LogicalOr => "logical_or",
        }
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
        if self.is_comparison() {
            return DType::Bool;
        }
        match self {
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr => DType::Bool,
            BinaryOp::Div => {
                if p.is_float() {
                    p
                } else {
                    DType::F32
                }
            }
            BinaryOp::Maximum | BinaryOp::Minimum => p,
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::FloorDiv
            | BinaryOp::Mod
            | BinaryOp::Pow
            | BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => {
                if p == DType::Bool {
                    DType::I64
                } else {
                    p
                }
            }
        }
    }
}

/// Reductions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
    pub fn result_dtype(self, d: DType) -> DType {
        match self {
            ReduceOp::Sum if !d.is_float() => DType::I64,
            ReduceOp::Mean if !d.is_float() => DType::F32,
            ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min => d,
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
