//! The element types, scalars and op kinds of Graph IR, with the promotion rules of
//! docs/decisions.md ("Dtypes and promotion"). The compiler does not depend on the runtime:
//! `tessera-stdlib` converts between these and the runtime's types.

use std::fmt;

/// Element types (SPEC §4), canonical names as printed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F64,
    F32,
    TF32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    I64,
    I32,
    I8,
    Bool,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "fp64",
            DType::F32 => "fp32",
            DType::TF32 => "tf32",
            DType::F16 => "fp16",
            DType::BF16 => "bf16",
            DType::F8E4M3 => "fp8_e4m3",
            DType::F8E5M2 => "fp8_e5m2",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::I8 => "int8",
            DType::Bool => "bool",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F64
                | DType::F32
                | DType::TF32
                | DType::F16
                | DType::BF16
                | DType::F8E4M3
                | DType::F8E5M2
        )
    }

    fn float_rank(self) -> u8 {
        match self {
            DType::F8E4M3 | DType::F8E5M2 => 0,
            DType::F16 | DType::BF16 => 1,
            DType::TF32 => 2,
            DType::F32 => 3,
            DType::F64 => 4,
            DType::I64 | DType::I32 | DType::I8 | DType::Bool => 0,
        }
    }

    fn int_rank(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I8 => 1,
            DType::I32 => 2,
            DType::I64
            | DType::F64
            | DType::F32
            | DType::TF32
            | DType::F16
            | DType::BF16
            | DType::F8E4M3
            | DType::F8E5M2 => 3,
        }
    }

    /// The promoted dtype of two tensor operands.
    pub fn promote(a: DType, b: DType) -> DType {
        if a == b {
            return a;
        }
        match (a.is_float(), b.is_float()) {
            (true, false) => a,
            (false, true) => b,
            (false, false) => {
                if a.int_rank() >= b.int_rank() {
                    a
                } else {
                    b
                }
            }
            (true, true) => {
                let (ra, rb) = (a.float_rank(), b.float_rank());
                if ra != rb {
                    return if ra > rb { a } else { b };
                }
                if ra == 0 {
                    DType::F16
                } else {
                    DType::F32
                }
            }
        }
    }

    /// The dtype a Python scalar of `kind` takes next to a tensor of dtype `t`: a scalar never
    /// widens a tensor of its own kind. This is the dtype a `const` op is given.
    pub fn promote_scalar(t: DType, s: &Scalar) -> DType {
        match s {
            Scalar::Float(_) => {
                if t.is_float() {
                    t
                } else {
                    DType::F32
                }
            }
            Scalar::Int(_) => {
                if t == DType::Bool {
                    DType::I64
                } else {
                    t
                }
            }
            Scalar::Bool(_) => t,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Python scalar recorded as a constant: kept exact, applied like the eager op applies a
/// scalar operand (it never widens a tensor).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

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

/// Unary elementwise ops.
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
}

impl UnaryOp {
    pub const ALL: [UnaryOp; 12] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Gelu,
        UnaryOp::Silu,
        UnaryOp::Not,
    ];
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Relu => "relu",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Silu => "silu",
            UnaryOp::Not => "logical_not",
        }
    }
    /// An activation a matmul epilogue may apply.
    pub fn is_activation(self) -> bool {
        matches!(
            self,
            UnaryOp::Relu | UnaryOp::Gelu | UnaryOp::Silu | UnaryOp::Sigmoid | UnaryOp::Tanh
        )
    }
    /// The result dtype for an input of dtype `d`.
    pub fn result_dtype(self, d: DType) -> DType {
        match self {
            UnaryOp::Not => DType::Bool,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu => {
                if d == DType::Bool {
                    DType::I64
                } else {
                    d
                }
            }
            UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Gelu
            | UnaryOp::Silu => {
                if d.is_float() {
                    d
                } else {
                    DType::F32
                }
            }
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
        let p = DType::promote(a, b);
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
