//! The abstract syntax tree of a `.tsr` module (a subset of Python 3, SPEC §2).
//! Every node carries the [`Span`] of the source text it came from.

use crate::span::Span;
use std::rc::Rc;

/// A parsed file or REPL cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// An identifier with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: Rc<str>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// An expression statement.
    Expr(Expr),
    /// `a = b = value`: one or more targets (Name, Tuple, List, Subscript, Attribute).
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target op= value` (target is Name, Subscript or Attribute).
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    FunctionDef(Rc<FunctionDef>),
    Return(Option<Expr>),
    /// `if/elif/else`: an `elif` is an `If` nested alone in `orelse`.
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    While {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    Break,
    Continue,
    Pass,
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `try:` with its `except` clauses, `else` and `finally` blocks (at least one `except`
    /// or a `finally`).
    Try {
        body: Vec<Stmt>,
        handlers: Vec<Handler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    /// `global a, b`
    Global(Vec<Ident>),
}

/// One `except [TYPE] [as NAME]:` clause.
#[derive(Clone, Debug, PartialEq)]
pub struct Handler {
    pub typ: Option<Expr>,
    pub name: Option<Ident>,
    pub body: Vec<Stmt>,
    /// the `except ...:` line
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    pub name: Ident,
    pub params: Vec<Param>,
    pub decorators: Vec<Expr>,
    pub body: Vec<Stmt>,
    /// Span of the whole `def` header line (`def name(...)`).
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub default: Option<Expr>,
    pub kind: ParamKind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// an ordinary parameter (positional or keyword)
    Normal,
    /// `*args`
    VarArgs,
    /// a parameter after `*` or `*args`: keyword only
    KeywordOnly,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// Calls `f` on each direct sub-expression, in source order.
    pub fn for_each_child<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        match &self.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Name(_)
            | ExprKind::Error => {}
            ExprKind::FString(parts) => {
                for p in parts {
                    if let FStringPart::Expr { expr, .. } = p {
                        f(expr);
                    }
                }
            }
            ExprKind::List(v) | ExprKind::Tuple(v) => v.iter().for_each(f),
            ExprKind::Dict(v) => v.iter().for_each(|(k, x)| {
                f(k);
                f(x);
            }),
            ExprKind::Unary { operand, .. } => f(operand),
            ExprKind::Binary { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
                f(left);
                f(right);
            }
            ExprKind::Compare { left, ops } => {
                f(left);
                for (_, e) in ops {
                    f(e);
                }
            }
            ExprKind::IfExp { test, body, orelse } => {
                f(test);
                f(body);
                f(orelse);
            }
            ExprKind::Call { func, args } => {
                f(func);
                for a in args {
                    match a {
                        Arg::Positional(e) | Arg::Keyword(_, e) | Arg::Star(e) => f(e),
                    }
                }
            }
            ExprKind::Attribute { value, .. } => f(value),
            ExprKind::Subscript { value, index } => {
                f(value);
                f(index);
            }
            ExprKind::Slice { lo, hi, step } => {
                for e in [lo, hi, step].into_iter().flatten() {
                    f(e);
                }
            }
            ExprKind::ListComp {
                elt,
                target,
                iter,
                conds,
            } => {
                f(elt);
                f(target);
                f(iter);
                conds.iter().for_each(f);
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    FString(Vec<FStringPart>),
    Bool(bool),
    None,
    Name(Rc<str>),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `{k: v, ...}`, in order.
    Dict(Vec<(Expr, Expr)>),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `a < b <= c`: chained comparisons.
    Compare {
        left: Box<Expr>,
        ops: Vec<(CmpOp, Expr)>,
    },
    /// `a and b`, `a or b` (short-circuit).
    BoolOp {
        op: BoolOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `body if test else orelse`
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    /// `value[index]`; several indices `x[0:2, :]` give a `Tuple` index.
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `lo:hi:step`, only inside a subscript.
    Slice {
        lo: Option<Box<Expr>>,
        hi: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    /// `[elt for target in iter if cond]`
    ListComp {
        elt: Box<Expr>,
        target: Box<Expr>,
        iter: Box<Expr>,
        conds: Vec<Expr>,
    },
    /// Placeholder left by error recovery; never evaluated (the module did not parse).
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Positional(Expr),
    Keyword(Ident, Expr),
    /// `*expr` in a call
    Star(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub enum FStringPart {
    Literal(Rc<str>),
    Expr {
        expr: Expr,
        /// `!r`, `!s`
        conversion: Option<char>,
        /// the text after `:`, e.g. `.3f`, `>8`, `d`
        format_spec: Option<Rc<str>>,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    /// `~`: bitwise not of an int, logical not of a bool tensor.
    Invert,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    /// `&`: bitwise and of ints, logical and of bools and bool tensors.
    BitAnd,
    /// `|`: bitwise or of ints, logical or of bools and bool tensors.
    BitOr,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Is,
    IsNot,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BoolOp {
    And,
    Or,
}
