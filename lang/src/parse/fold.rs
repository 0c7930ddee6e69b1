//! Expression trees from what the grammar matched: operator chains folded with Python's
//! precedence, adjacent string literals joined, tuples from comma lists.

use crate::ast::{BinOp, BoolOp, CmpOp, Expr, ExprKind, FStringPart, UnaryOp};
use crate::lex::Tok;
use crate::span::Span;

pub(super) fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

pub(super) fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    let span = l.span.to(r.span);
    mk(
        ExprKind::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
        },
        span,
    )
}

/// Adjacent string literals: `"a" "b"`, `"a" f"{b}"`.
pub(super) fn concat_strings(pieces: Vec<Tok>) -> ExprKind {
    if pieces.iter().all(|t| matches!(t, Tok::Str(_))) {
        if let [Tok::Str(s)] = pieces.as_slice() {
            return ExprKind::Str(s.clone());
        }
        let mut out = String::new();
        for p in &pieces {
            if let Tok::Str(s) = p {
                out.push_str(s);
            }
        }
        return ExprKind::Str(out.into());
    }
    let mut parts: Vec<FStringPart> = Vec::new();
    let push_lit = |parts: &mut Vec<FStringPart>, s: &str| {
        if s.is_empty() {
            return;
        }
        if let Some(FStringPart::Literal(prev)) = parts.last_mut() {
            *prev = format!("{prev}{s}").into();
        } else {
            parts.push(FStringPart::Literal(s.into()));
        }
    };
    for p in pieces {
        match p {
            Tok::Str(s) => push_lit(&mut parts, &s),
            Tok::FStr(fs) => {
                for part in fs.iter() {
                    match part {
                        FStringPart::Literal(s) => push_lit(&mut parts, s),
                        other => parts.push(other.clone()),
                    }
                }
            }
            _ => {}
        }
    }
    ExprKind::FString(parts)
}

/// A comma-separated list: one item alone (no trailing comma) is itself, else a tuple.
pub(super) fn tuple_or_single(mut items: Vec<Expr>, trailing: bool, span: Span) -> Expr {
    if items.len() == 1 && !trailing {
        if let Some(e) = items.pop() {
            return e;
        }
    }
    mk(ExprKind::Tuple(items), span)
}

/// A binary operator of the flat chain.
#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
    Bin(BinOp),
    Cmp(CmpOp),
    And,
    Or,
}

/// Precedence: `or` < `and` < `not` < comparisons < `|` < `&` < `+ -` < `* / // % @`.
fn prec(op: Op) -> u8 {
    match op {
        Op::Or => 1,
        Op::And => 2,
        Op::Cmp(_) => 4,
        Op::Bin(BinOp::BitOr) => 5,
        Op::Bin(BinOp::BitAnd) => 6,
        Op::Bin(BinOp::Add | BinOp::Sub) => 7,
        Op::Bin(_) => 8,
    }
}
const NOT_PREC: u8 = 3;

enum Pending {
    Op(Op),
    Not(Span),
}

/// Folds `operand (op operand)*` (each operand with its leading `not`s) into a tree with
/// Python's precedence, left-associative, comparisons chained (`a < b <= c`); iterative.
pub(super) fn fold_chain(first: (Vec<Span>, Expr), rest: Vec<((Op, Vec<Span>), Expr)>) -> Expr {
    // operands, each with "is a comparison chain built here" (so `(a < b) < c` stays nested)
    let mut vals: Vec<(Expr, bool)> = Vec::with_capacity(rest.len() + 1);
    let mut ops: Vec<Pending> = Vec::new();
    let pending_prec = |p: &Pending| match p {
        Pending::Op(op) => prec(*op),
        Pending::Not(_) => NOT_PREC,
    };
    let reduce = |vals: &mut Vec<(Expr, bool)>, p: Pending| match p {
        Pending::Not(s) => {
            if let Some((operand, _)) = vals.pop() {
                let span = s.to(operand.span);
                vals.push((
                    mk(
                        ExprKind::Unary {
                            op: UnaryOp::Not,
                            operand: Box::new(operand),
                        },
                        span,
                    ),
                    false,
                ));
            }
        }
        Pending::Op(op) => {
            let (Some((r, _)), Some((l, chained))) = (vals.pop(), vals.pop()) else {
                return;
            };
            let span = l.span.to(r.span);
            let out = match op {
                Op::Cmp(c) => {
                    if chained {
                        if let Expr {
                            kind: ExprKind::Compare { left, mut ops },
                            ..
                        } = l
                        {
                            ops.push((c, r));
                            vals.push((mk(ExprKind::Compare { left, ops }, span), true));
                            return;
                        }
                    }
                    vals.push((
                        mk(
                            ExprKind::Compare {
                                left: Box::new(l),
                                ops: vec![(c, r)],
                            },
                            span,
                        ),
                        true,
                    ));
                    return;
                }
                Op::And | Op::Or => mk(
                    ExprKind::BoolOp {
                        op: if matches!(op, Op::And) {
                            BoolOp::And
                        } else {
                            BoolOp::Or
                        },
                        left: Box::new(l),
                        right: Box::new(r),
                    },
                    span,
                ),
                Op::Bin(b) => bin(b, l, r),
            };
            vals.push((out, false));
        }
    };
    let (nots, e) = first;
    ops.extend(nots.into_iter().map(Pending::Not));
    vals.push((e, false));
    for ((op, nots), e) in rest {
        let p = prec(op);
        while ops.last().map(|t| pending_prec(t) >= p).unwrap_or(false) {
            if let Some(t) = ops.pop() {
                reduce(&mut vals, t);
            }
        }
        ops.push(Pending::Op(op));
        ops.extend(nots.into_iter().map(Pending::Not));
        vals.push((e, false));
    }
    while let Some(t) = ops.pop() {
        reduce(&mut vals, t);
    }
    vals.pop()
        .map(|(e, _)| e)
        .unwrap_or_else(|| mk(ExprKind::Error, Span::default()))
}
