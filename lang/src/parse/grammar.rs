//! The chumsky grammar of one logical line (SPEC §2, Python's precedence).
//!
//! A line is a simple statement list, a block header (`if x:`, `def f(a):`, ...) with an optional
//! body on the same line, or a decorator. Blocks are assembled from lines by `block.rs`.

use super::fold::{bin, concat_strings, fold_chain, mk, tuple_or_single, Op};
use crate::ast::{Arg, BinOp, CmpOp, Expr, ExprKind, Ident, Stmt, StmtKind, UnaryOp};
use crate::lex::Tok;
use crate::span::{FileId, Span};
use chumsky::input::{Input, MapExtra, MappedInput};
use chumsky::inspector::SimpleState;
use chumsky::label::LabelError;
use chumsky::prelude::*;
use chumsky::recursive::Direct;
use std::cell::OnceCell;

/// Parser extras: the error type, and the file id as state (spans carry it).
pub(crate) type Ex<Er> = extra::Full<Er, SimpleState<FileId>, ()>;

/// The input: one logical line's tokens.
pub(crate) type I<'t> = MappedInput<'t, Tok, SimpleSpan, &'t [(Tok, SimpleSpan)]>;

/// An error type the grammar can produce: `EmptyErr` for the fast first pass, `Rich` for the
/// messages when a line does not parse.
pub(crate) trait GrammarError<'t>:
    chumsky::error::Error<'t, I<'t>> + LabelError<'t, I<'t>, &'static str> + 't
{
    fn custom(span: SimpleSpan, msg: &'static str) -> Self;
}

impl<'t> GrammarError<'t> for EmptyErr {
    fn custom(_: SimpleSpan, _: &'static str) -> Self {
        EmptyErr::default()
    }
}

impl<'t> GrammarError<'t> for Rich<'t, Tok, SimpleSpan> {
    fn custom(span: SimpleSpan, msg: &'static str) -> Self {
        Rich::custom(span, msg)
    }
}

/// The span of what a `map_with` closure matched, with the file id from the parser state.
macro_rules! sp {
    ($e:expr) => {
        span_of::<Er>($e)
    };
}

fn span_of<'t, Er: GrammarError<'t>>(e: &mut MapExtra<'t, '_, I<'t>, Ex<Er>>) -> Span {
    let s: SimpleSpan = e.span();
    Span::new(e.state().0, s.start, s.end)
}

/// One parsed logical line.
#[derive(Debug)]
pub(crate) enum Line {
    Simple(Vec<Stmt>),
    /// `@expr`; the span is the `@`.
    Decorator(Expr, Span),
    /// A block header and the statements after its `:` on the same line, if any.
    Header(Header, Option<Vec<Stmt>>),
}

#[derive(Debug)]
pub(crate) struct Header {
    pub kind: HeaderKind,
    /// from the keyword to the `:`
    pub span: Span,
}

#[derive(Debug)]
pub(crate) enum HeaderKind {
    If(Expr),
    Elif(Expr),
    Else,
    For(Expr, Expr),
    While(Expr),
    /// name, raw parameters, span of `def name(...)`
    Def(Ident, Vec<RawParam>, Span),
    Try,
    /// `except [TYPE] [as NAME]`
    Except(Option<Expr>, Option<Ident>),
    Finally,
}

/// A parameter as written; checked by `block.rs` (order, kinds, duplicates).
#[derive(Debug)]
pub(crate) enum RawParam {
    Named(Ident, Option<Expr>),
    /// `*` or `*args`; the span is the `*`
    Star(Option<Ident>, Span),
    /// `**kwargs` (not supported)
    DoubleStar(Span),
    /// `/` (not supported)
    Slash(Span),
}

type Rec<'t, Er> = Recursive<Direct<'t, 't, I<'t>, Expr, Ex<Er>>>;

/// The parsers of the language (cheap to build: a few microseconds).
pub(crate) struct Grammar<'t, Er: GrammarError<'t>> {
    lines: Lines<'t, Er>,
    expr: Boxed<'t, 't, I<'t>, Expr, Ex<Er>>,
}

type LineParser<'t, Er> = Boxed<'t, 't, I<'t>, Line, Ex<Er>>;

/// One parser per kind of line.
struct Lines<'t, Er: GrammarError<'t>> {
    if_: LineParser<'t, Er>,
    elif: LineParser<'t, Er>,
    else_: LineParser<'t, Er>,
    while_: LineParser<'t, Er>,
    for_: LineParser<'t, Er>,
    def: LineParser<'t, Er>,
    try_: LineParser<'t, Er>,
    except: LineParser<'t, Er>,
    finally: LineParser<'t, Er>,
    decorator: LineParser<'t, Er>,
    simple: LineParser<'t, Er>,
}

impl<'t, Er: GrammarError<'t>> Grammar<'t, Er> {
    /// The parser for a line starting with `first`.
    fn line_for(&self, first: Option<&Tok>) -> &LineParser<'t, Er> {
        let l = &self.lines;
        match first {
            Some(Tok::If) => &l.if_,
            Some(Tok::Elif) => &l.elif,
            Some(Tok::Else) => &l.else_,
            Some(Tok::While) => &l.while_,
            Some(Tok::For) => &l.for_,
            Some(Tok::Def) => &l.def,
            Some(Tok::Try) => &l.try_,
            Some(Tok::Except) => &l.except,
            Some(Tok::Finally) => &l.finally,
            Some(Tok::At) => &l.decorator,
            _ => &l.simple,
        }
    }
}

/// The parsers. The larger sub-parsers are `.boxed()`, which erases their types: without that
/// the expression parser's type nests every combinator in it, and rustc's borrow checker spent
/// 293 s of a 317 s `cargo check` of this crate on this function (6 s boxed; bench/RESULTS.md,
/// "CI build time").
pub(crate) fn grammar<'t, Er: GrammarError<'t>>() -> Grammar<'t, Er> {
    let (expr, arith) = expression::<Er>();
    let testlist = testlist(expr.clone());
    let simple = simple_statements(expr.clone(), testlist.clone());
    Grammar {
        lines: lines(expr.clone(), arith, testlist, simple),
        expr: expr.then_ignore(end()).boxed(),
    }
}

type ExprParser<'t, Er> = Boxed<'t, 't, I<'t>, Expr, Ex<Er>>;

/// The expression parser, and `arith`: the operands and arithmetic operators only (no
/// comparisons, `not`, `and`, `or` or `if`), for a `for` loop's target, which `in` ends.
fn expression<'t, Er: GrammarError<'t>>() -> (Rec<'t, Er>, ExprParser<'t, Er>) {
    let mut arith_out: Option<Rec<'t, Er>> = None;

    let expr: Rec<'t, Er> = recursive(|expr| {
        let atom = atom(expr.clone());
        let primary = primary(expr.clone(), atom);
        let factor = factor(primary);
        let chain = operator_chain(factor.clone());
        let arith = arith(factor);
        let arith_rec: Rec<'t, Er> = recursive(|_| arith);
        arith_out = Some(arith_rec);
        conditional(chain, expr)
    });
    let arith = match arith_out {
        Some(a) => a.boxed(),
        None => expr.clone().boxed(),
    };
    (expr, arith)
}

/// A name in an expression, with its span.
fn ident<'t, Er: GrammarError<'t>>() -> impl Parser<'t, I<'t>, Ident, Ex<Er>> + Copy + 't {
    let name = select! { Tok::Name(n) => n }.labelled("an identifier");
    name.map_with(move |n, e| Ident {
        name: n,
        span: sp!(e),
    })
}

/// `expr, expr, ...` with an optional trailing comma.
fn items<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
) -> impl Parser<'t, I<'t>, Vec<Expr>, Ex<Er>> + Clone + 't {
    expr.separated_by(just(Tok::Comma))
        .allow_trailing()
        .collect::<Vec<Expr>>()
}

/// The atoms: literals, strings, parentheses, list displays and comprehensions, dict displays.
fn atom<'t, Er: GrammarError<'t>>(expr: Rec<'t, Er>) -> ExprParser<'t, Er> {
    let items = items(expr.clone());

    let literal = select! {
        Tok::Int(i) => ExprKind::Int(i),
        Tok::Float(f) => ExprKind::Float(f),
        Tok::True => ExprKind::Bool(true),
        Tok::False => ExprKind::Bool(false),
        Tok::None => ExprKind::None,
        Tok::Name(n) => ExprKind::Name(n),
        // the Ellipsis constant: the builtin `...`, a name no script can bind
        Tok::Ellipsis => ExprKind::Name("...".into()),
    }
    .map_with(move |k, e| mk(k, sp!(e)));

    let strings = select! { t @ (Tok::Str(_) | Tok::FStr(_)) => t }
        .repeated()
        .at_least(1)
        .collect::<Vec<Tok>>()
        .map_with(move |v, e| mk(concat_strings(v), sp!(e)));

    // `(`: `()`, `(e)`, `(e,)`, `(e, f, ...)`
    let paren = expr
        .clone()
        .then(just(Tok::Comma).ignore_then(items.clone()).or_not())
        .or_not()
        .delimited_by(just(Tok::LParen), just(Tok::RParen))
        .map_with(move |inner, e| match inner {
            None => mk(ExprKind::Tuple(Vec::new()), sp!(e)),
            Some((first, None)) => first,
            Some((first, Some(rest))) => {
                let mut v = Vec::with_capacity(rest.len() + 1);
                v.push(first);
                v.extend(rest);
                mk(ExprKind::Tuple(v), sp!(e))
            }
        })
        .boxed();

    let list = list_display(expr.clone(), items);

    // `{k: v, ...}`: a dict display
    let dict = expr
        .clone()
        .then_ignore(just(Tok::Colon))
        .then(expr.clone())
        .separated_by(just(Tok::Comma))
        .allow_trailing()
        .collect::<Vec<(Expr, Expr)>>()
        .delimited_by(just(Tok::LBrace), just(Tok::RBrace))
        .map_with(move |v, e| mk(ExprKind::Dict(v), sp!(e)))
        .boxed();

    choice((literal, strings, paren, list, dict))
        .labelled("an expression")
        .boxed()
}

/// `[a, b, ...]` and `[elt for t in iter if c]`.
fn list_display<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
    items: impl Parser<'t, I<'t>, Vec<Expr>, Ex<Er>> + Clone + 't,
) -> ExprParser<'t, Er> {
    // comprehension targets: names and (nested) tuples/lists of names
    let comp_target = recursive(|target| {
        let seq = target
            .clone()
            .separated_by(just(Tok::Comma))
            .allow_trailing()
            .collect::<Vec<Expr>>();
        choice((
            ident::<Er>().map(|i: Ident| mk(ExprKind::Name(i.name), i.span)),
            seq.clone()
                .delimited_by(just(Tok::LParen), just(Tok::RParen))
                .map_with(move |v, e| mk(ExprKind::Tuple(v), sp!(e))),
            seq.delimited_by(just(Tok::LBracket), just(Tok::RBracket))
                .map_with(move |v, e| mk(ExprKind::List(v), sp!(e))),
        ))
        .labelled("a loop variable")
    });
    let comp_targets = comp_target
        .clone()
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp!(e)));

    // `for t in iter if c`: a conditional expression `a if b` without `else` backtracks,
    // leaving the `if` to the comprehension
    let comp_for = just(Tok::For)
        .ignore_then(comp_targets)
        .then_ignore(just(Tok::In))
        .then(expr.clone())
        .then(
            just(Tok::If)
                .ignore_then(expr.clone())
                .repeated()
                .collect::<Vec<Expr>>(),
        );
    expr.clone()
        .then(
            choice((
                comp_for.map(ListTail::Comp),
                just(Tok::Comma)
                    .ignore_then(items.clone())
                    .map(ListTail::More),
            ))
            .or_not(),
        )
        .or_not()
        .delimited_by(just(Tok::LBracket), just(Tok::RBracket))
        .map_with(move |inner, e| {
            let span = sp!(e);
            match inner {
                None => mk(ExprKind::List(Vec::new()), span),
                Some((first, None)) => mk(ExprKind::List(vec![first]), span),
                Some((first, Some(ListTail::More(rest)))) => {
                    let mut v = Vec::with_capacity(rest.len() + 1);
                    v.push(first);
                    v.extend(rest);
                    mk(ExprKind::List(v), span)
                }
                Some((elt, Some(ListTail::Comp(((target, iter), conds))))) => mk(
                    ExprKind::ListComp {
                        elt: Box::new(elt),
                        target: Box::new(target),
                        iter: Box::new(iter),
                        conds,
                    },
                    span,
                ),
            }
        })
        .boxed()
}

/// A call's arguments in parentheses; no positional argument after a keyword one.
fn call_args<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
) -> Boxed<'t, 't, I<'t>, Vec<Arg>, Ex<Er>> {
    let arg = choice((
        just(Tok::Star).ignore_then(expr.clone()).map(Arg::Star),
        ident::<Er>()
            .then_ignore(just(Tok::Assign))
            .then(expr.clone())
            .map(|(k, v)| Arg::Keyword(k, v)),
        expr.clone().map(Arg::Positional),
    ));
    arg.separated_by(just(Tok::Comma))
        .allow_trailing()
        .collect::<Vec<Arg>>()
        .try_map(|args: Vec<Arg>, span| {
            let mut seen_kw = false;
            for a in &args {
                match a {
                    Arg::Keyword(..) => seen_kw = true,
                    Arg::Positional(e) if seen_kw => {
                        let _ = span;
                        return Err(Er::custom(
                            SimpleSpan::from(e.span.range()),
                            "positional argument follows keyword argument",
                        ));
                    }
                    _ => {}
                }
            }
            Ok(args)
        })
        .delimited_by(just(Tok::LParen), just(Tok::RParen))
        .boxed()
}

/// A subscript in brackets: `x[i]`, `x[a:b:c]`, `x[0:2, :]`.
fn subscript<'t, Er: GrammarError<'t>>(expr: Rec<'t, Er>) -> ExprParser<'t, Er> {
    let slice_tail = just(Tok::Colon)
        .ignore_then(expr.clone().or_not())
        .then(just(Tok::Colon).ignore_then(expr.clone().or_not()).or_not());
    let sub_item = choice((
        expr.clone()
            .then(slice_tail.clone().or_not())
            .map_with(move |(lo, tail), e| match tail {
                None => lo,
                Some((hi, step)) => mk(
                    ExprKind::Slice {
                        lo: Some(Box::new(lo)),
                        hi: hi.map(Box::new),
                        step: step.flatten().map(Box::new),
                    },
                    sp!(e),
                ),
            }),
        slice_tail.map_with(move |(hi, step), e| {
            mk(
                ExprKind::Slice {
                    lo: None,
                    hi: hi.map(Box::new),
                    step: step.flatten().map(Box::new),
                },
                sp!(e),
            )
        }),
    ));
    sub_item
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp!(e)))
        .delimited_by(just(Tok::LBracket), just(Tok::RBracket))
        .boxed()
}

/// An atom followed by calls, attributes and subscripts.
fn primary<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
    atom: ExprParser<'t, Er>,
) -> ExprParser<'t, Er> {
    let args = call_args(expr.clone());
    let subscript = subscript(expr);
    let postfix = choice((
        args.map_with(move |a, e| Postfix::Call(a, sp!(e))),
        just(Tok::Dot)
            .ignore_then(ident::<Er>().labelled("an attribute name"))
            .map(Postfix::Attr),
        subscript.map_with(move |i, e| Postfix::Index(i, sp!(e))),
    ))
    .boxed();
    atom.foldl(postfix.repeated(), |value, p| match p {
        Postfix::Call(args, s) => {
            let span = value.span.to(s);
            mk(
                ExprKind::Call {
                    func: Box::new(value),
                    args,
                },
                span,
            )
        }
        Postfix::Attr(attr) => {
            let span = value.span.to(attr.span);
            mk(
                ExprKind::Attribute {
                    value: Box::new(value),
                    attr,
                },
                span,
            )
        }
        Postfix::Index(index, s) => {
            let span = value.span.to(s);
            mk(
                ExprKind::Subscript {
                    value: Box::new(value),
                    index: Box::new(index),
                },
                span,
            )
        }
    })
    .boxed()
}

/// factor: ('-' | '+' | '~')* power;  power: primary ['**' factor]
fn factor<'t, Er: GrammarError<'t>>(primary: ExprParser<'t, Er>) -> Rec<'t, Er> {
    recursive(|factor| {
        let power = primary
            .clone()
            .then(just(Tok::DStar).ignore_then(factor).or_not())
            .map(|(base, exp)| match exp {
                None => base,
                Some(exp) => bin(BinOp::Pow, base, exp),
            });
        let unary = select! {
            Tok::Minus = e => (UnaryOp::Neg, sp!(e)),
            Tok::Plus = e => (UnaryOp::Pos, sp!(e)),
            Tok::Tilde = e => (UnaryOp::Invert, sp!(e)),
        };
        unary
            .repeated()
            .foldr(power, |(op, s): (UnaryOp, Span), operand: Expr| {
                let span = s.to(operand.span);
                mk(
                    ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    span,
                )
            })
            .labelled("an expression")
    })
}

/// Binary operators below `**`, `not` and comparisons: one flat chain
/// `operand (op operand)*`, folded by precedence without recursion (`fold_chain`).
fn operator_chain<'t, Er: GrammarError<'t>>(factor: Rec<'t, Er>) -> ExprParser<'t, Er> {
    let single_op = select! {
        Tok::Star => Op::Bin(BinOp::Mul),
        Tok::Slash => Op::Bin(BinOp::Div),
        Tok::DSlash => Op::Bin(BinOp::FloorDiv),
        Tok::Percent => Op::Bin(BinOp::Mod),
        Tok::At => Op::Bin(BinOp::MatMul),
        Tok::Plus => Op::Bin(BinOp::Add),
        Tok::Minus => Op::Bin(BinOp::Sub),
        Tok::Amp => Op::Bin(BinOp::BitAnd),
        Tok::Pipe => Op::Bin(BinOp::BitOr),
        Tok::EqEq => Op::Cmp(CmpOp::Eq),
        Tok::NotEq => Op::Cmp(CmpOp::Ne),
        Tok::Lt => Op::Cmp(CmpOp::Lt),
        Tok::Le => Op::Cmp(CmpOp::Le),
        Tok::Gt => Op::Cmp(CmpOp::Gt),
        Tok::Ge => Op::Cmp(CmpOp::Ge),
        Tok::In => Op::Cmp(CmpOp::In),
        Tok::NotIn => Op::Cmp(CmpOp::NotIn),
        Tok::Is => Op::Cmp(CmpOp::Is),
        Tok::IsNot => Op::Cmp(CmpOp::IsNot),
        Tok::And => Op::And,
        Tok::Or => Op::Or,
    };
    let nots = select! { Tok::Not = e => sp!(e) }
        .repeated()
        .collect::<Vec<Span>>();
    nots.then(factor.clone())
        .then(
            single_op
                .then(nots)
                .then(factor.clone())
                .validate(|((op, nots), e): ((Op, Vec<Span>), Expr), x, emitter| {
                    if !nots.is_empty() && !matches!(op, Op::And | Op::Or) {
                        emitter.emit(Er::custom(
                            x.span(),
                            "`not` cannot follow an operator here; put the operand in parentheses",
                        ));
                    }
                    ((op, nots), e)
                })
                .repeated()
                .collect::<Vec<((Op, Vec<Span>), Expr)>>(),
        )
        .map(|(first, rest)| fold_chain(first, rest))
        .labelled("an expression")
        .boxed()
}

/// Factors joined by the arithmetic and bitwise operators only.
fn arith<'t, Er: GrammarError<'t>>(
    factor: Rec<'t, Er>,
) -> impl Parser<'t, I<'t>, Expr, Ex<Er>> + Clone + 't {
    let arith_op = select! {
        Tok::Star => Op::Bin(BinOp::Mul),
        Tok::Slash => Op::Bin(BinOp::Div),
        Tok::DSlash => Op::Bin(BinOp::FloorDiv),
        Tok::Percent => Op::Bin(BinOp::Mod),
        Tok::At => Op::Bin(BinOp::MatMul),
        Tok::Plus => Op::Bin(BinOp::Add),
        Tok::Minus => Op::Bin(BinOp::Sub),
        Tok::Amp => Op::Bin(BinOp::BitAnd),
        Tok::Pipe => Op::Bin(BinOp::BitOr),
    };
    factor
        .clone()
        .then(
            arith_op
                .then(factor)
                .map(|(op, e)| ((op, Vec::new()), e))
                .repeated()
                .collect::<Vec<((Op, Vec<Span>), Expr)>>(),
        )
        .map(|(first, rest)| fold_chain((Vec::new(), first), rest))
}

/// `body if test else orelse` over the operator chain.
fn conditional<'t, Er: GrammarError<'t>>(
    chain: ExprParser<'t, Er>,
    expr: Rec<'t, Er>,
) -> impl Parser<'t, I<'t>, Expr, Ex<Er>> + Clone + 't {
    let or_test = chain;
    or_test
        .clone()
        .then(
            just(Tok::If)
                .ignore_then(or_test)
                .then_ignore(just(Tok::Else))
                .then(expr.clone())
                .or_not(),
        )
        .map(|(body, cond)| match cond {
            None => body,
            Some((test, orelse)) => {
                let span = body.span.to(orelse.span);
                mk(
                    ExprKind::IfExp {
                        test: Box::new(test),
                        body: Box::new(body),
                        orelse: Box::new(orelse),
                    },
                    span,
                )
            }
        })
        .labelled("an expression")
}

// ---- statements ----

/// `e, e, ...`: one expression, or a tuple when there is a comma.
fn testlist<'t, Er: GrammarError<'t>>(expr: Rec<'t, Er>) -> ExprParser<'t, Er> {
    expr.clone()
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp!(e)))
        .boxed()
}

/// Simple statements separated by `;`: `pass break continue return global assert`, expression
/// statements and (augmented) assignments.
fn simple_statements<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
    testlist: ExprParser<'t, Er>,
) -> Boxed<'t, 't, I<'t>, Vec<Stmt>, Ex<Er>> {
    let augop = select! { Tok::AugAssign(op) => op };
    let stmt_at = |kind: StmtKind, span: Span| Stmt { kind, span };
    let expr_stmt = testlist
        .clone()
        .then(
            choice((
                just(Tok::Assign)
                    .ignore_then(testlist.clone())
                    .repeated()
                    .at_least(1)
                    .collect::<Vec<Expr>>()
                    .map(AssignTail::Assign),
                augop
                    .then(testlist.clone())
                    .map(|(o, v)| AssignTail::Aug(o, v)),
            ))
            .or_not(),
        )
        .map_with(move |(first, tail), e| {
            let kind = match tail {
                None => StmtKind::Expr(first),
                Some(AssignTail::Assign(mut rest)) => {
                    let value = rest
                        .pop()
                        .unwrap_or_else(|| mk(ExprKind::Error, first.span));
                    let mut targets = Vec::with_capacity(rest.len() + 1);
                    targets.push(first);
                    targets.extend(rest);
                    StmtKind::Assign { targets, value }
                }
                Some(AssignTail::Aug(op, value)) => StmtKind::AugAssign {
                    target: first,
                    op,
                    value,
                },
            };
            stmt_at(kind, sp!(e))
        });
    let small = choice((
        select! {
            Tok::Pass = e => stmt_at(StmtKind::Pass, sp!(e)),
            Tok::Break = e => stmt_at(StmtKind::Break, sp!(e)),
            Tok::Continue = e => stmt_at(StmtKind::Continue, sp!(e)),
        },
        just(Tok::Return)
            .ignore_then(testlist.clone().or_not())
            .map_with(move |v, e| stmt_at(StmtKind::Return(v), sp!(e))),
        just(Tok::Global)
            .ignore_then(
                select! { Tok::Name(n) = e => Ident { name: n, span: sp!(e) } }
                    .labelled("a name")
                    .separated_by(just(Tok::Comma))
                    .at_least(1)
                    .collect::<Vec<Ident>>(),
            )
            .map_with(move |names, e| stmt_at(StmtKind::Global(names), sp!(e))),
        just(Tok::Assert)
            .ignore_then(expr.clone())
            .then(just(Tok::Comma).ignore_then(expr.clone()).or_not())
            .map_with(move |(test, msg), e| stmt_at(StmtKind::Assert { test, msg }, sp!(e))),
        expr_stmt,
    ));
    small
        .separated_by(just(Tok::Semi))
        .at_least(1)
        .collect::<Vec<Stmt>>()
        .then_ignore(just(Tok::Semi).or_not())
        .boxed()
}

/// A name in a block header, with its span.
fn header_name<'t, Er: GrammarError<'t>>() -> impl Parser<'t, I<'t>, Ident, Ex<Er>> + Copy + 't {
    select! { Tok::Name(n) = e => Ident { name: n, span: sp!(e) } }
}

/// A `def`'s parameters from `(` to `)`, and the span of the `)`.
fn params<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
) -> impl Parser<'t, I<'t>, (Vec<RawParam>, Span), Ex<Er>> + Clone + 't {
    let name = header_name::<Er>();
    let annotation = just(Tok::Colon)
        .ignore_then(expr.clone())
        .or_not()
        .ignored();
    let param = choice((
        just(Tok::DStar)
            .map_with(move |_, e| sp!(e))
            .then_ignore(name.then_ignore(annotation.clone()).or_not())
            .map(RawParam::DoubleStar),
        just(Tok::Star)
            .map_with(move |_, e| sp!(e))
            .then(name.then_ignore(annotation.clone()).or_not())
            .map(|(s, n)| RawParam::Star(n, s)),
        just(Tok::Slash).map_with(move |_, e| RawParam::Slash(sp!(e))),
        name.then_ignore(annotation)
            .then(just(Tok::Assign).ignore_then(expr.clone()).or_not())
            .map(|(n, d)| RawParam::Named(n, d)),
    ))
    .labelled("a parameter");
    let params = param
        .separated_by(just(Tok::Comma))
        .allow_trailing()
        .collect::<Vec<RawParam>>()
        .then(just(Tok::RParen).map_with(|_, e| sp!(e)));
    just(Tok::LParen).ignore_then(params)
}

/// One parser per kind of line: the block headers, decorators and simple statements.
fn lines<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
    arith: ExprParser<'t, Er>,
    testlist: ExprParser<'t, Er>,
    simple: Boxed<'t, 't, I<'t>, Vec<Stmt>, Ex<Er>>,
) -> Lines<'t, Er> {
    let colon = just(Tok::Colon).map_with(|_, e| sp!(e));
    let kw = |t: Tok| just(t).map_with(|_, e| sp!(e));
    let header = |p: Boxed<'t, 't, I<'t>, (Span, HeaderKind), Ex<Er>>| {
        p.then(colon.clone()).then(simple.clone().or_not()).map(
            move |(((start, kind), end), body)| {
                Line::Header(
                    Header {
                        kind,
                        span: start.to(end),
                    },
                    body,
                )
            },
        )
    };
    let name = header_name::<Er>();
    let params = params(expr.clone());
    let target_list = arith
        .clone()
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp!(e)));

    let if_h = kw(Tok::If).then(expr.clone().map(HeaderKind::If)).boxed();
    let elif_h = kw(Tok::Elif)
        .then(expr.clone().map(HeaderKind::Elif))
        .boxed();
    let else_h = kw(Tok::Else).map(|s| (s, HeaderKind::Else)).boxed();
    let while_h = kw(Tok::While)
        .then(expr.clone().map(HeaderKind::While))
        .boxed();
    let for_h = kw(Tok::For)
        .then(
            target_list
                .then_ignore(just(Tok::In))
                .then(testlist.clone())
                .map(|(t, i)| HeaderKind::For(t, i)),
        )
        .boxed();
    let def_h = kw(Tok::Def)
        .then(name.labelled("a function name"))
        .then(params)
        .then_ignore(just(Tok::Arrow).ignore_then(expr.clone()).or_not())
        .map(move |((start, n), (ps, close))| {
            let span = start.to(close);
            (start, HeaderKind::Def(n, ps, span))
        })
        .boxed();
    let try_h = kw(Tok::Try).map(|s| (s, HeaderKind::Try)).boxed();
    let finally_h = kw(Tok::Finally).map(|s| (s, HeaderKind::Finally)).boxed();
    let except_h = kw(Tok::Except)
        .then(
            expr.clone()
                .then(just(Tok::As).ignore_then(name.labelled("a name")).or_not())
                .or_not(),
        )
        .map(|(s, t)| {
            let kind = match t {
                None => HeaderKind::Except(None, None),
                Some((typ, n)) => HeaderKind::Except(Some(typ), n),
            };
            (s, kind)
        })
        .boxed();
    let decorator = kw(Tok::At)
        .then(expr.clone())
        .map(|(s, e)| Line::Decorator(e, s));

    // dispatched on the line's first token (see `Grammar::line_for`)
    Lines {
        if_: header(if_h).then_ignore(end()).boxed(),
        elif: header(elif_h).then_ignore(end()).boxed(),
        else_: header(else_h).then_ignore(end()).boxed(),
        while_: header(while_h).then_ignore(end()).boxed(),
        for_: header(for_h).then_ignore(end()).boxed(),
        def: header(def_h).then_ignore(end()).boxed(),
        try_: header(try_h).then_ignore(end()).boxed(),
        except: header(except_h).then_ignore(end()).boxed(),
        finally: header(finally_h).then_ignore(end()).boxed(),
        decorator: decorator.then_ignore(end()).boxed(),
        simple: simple.map(Line::Simple).then_ignore(end()).boxed(),
    }
}

#[derive(Clone)]
enum ListTail {
    Comp(((Expr, Expr), Vec<Expr>)),
    More(Vec<Expr>),
}

#[derive(Clone)]
enum Postfix {
    Call(Vec<Arg>, Span),
    Attr(Ident),
    Index(Expr, Span),
}

enum AssignTail {
    Assign(Vec<Expr>),
    Aug(BinOp, Expr),
}

/// The grammar with both error types.
pub(crate) struct Grammars<'t> {
    fast: Grammar<'t, EmptyErr>,
    /// built on the first error
    rich: OnceCell<Grammar<'t, Rich<'t, Tok, SimpleSpan>>>,
}

pub(crate) type ParseError<'t> = Rich<'t, Tok, SimpleSpan>;

impl<'t> Grammars<'t> {
    pub(crate) fn new() -> Grammars<'t> {
        Grammars {
            fast: grammar(),
            rich: OnceCell::new(),
        }
    }

    /// Parses a line: first without error bookkeeping (fast), then, if it fails, again with
    /// `Rich` errors to explain why. The error is the earliest one.
    pub(crate) fn line(
        &self,
        toks: &'t [(Tok, SimpleSpan)],
        file: FileId,
    ) -> Result<Line, ParseError<'t>> {
        let first = toks.first().map(|(t, _)| t);
        run(
            self.fast.line_for(first),
            || self.rich.get_or_init(grammar).line_for(first),
            toks,
            file,
        )
    }

    pub(crate) fn expr(
        &self,
        toks: &'t [(Tok, SimpleSpan)],
        file: FileId,
    ) -> Result<Expr, ParseError<'t>> {
        run(
            &self.fast.expr,
            || &self.rich.get_or_init(grammar).expr,
            toks,
            file,
        )
    }
}

fn run<'a, 't: 'a, O: 'a>(
    fast: &Boxed<'t, 't, I<'t>, O, Ex<EmptyErr>>,
    rich: impl FnOnce() -> &'a Boxed<'t, 't, I<'t>, O, Ex<ParseError<'t>>>,
    toks: &'t [(Tok, SimpleSpan)],
    file: FileId,
) -> Result<O, ParseError<'t>> {
    let end = toks.last().map(|(_, s)| s.end).unwrap_or(0);
    let eoi = SimpleSpan::from(end..end);
    let mut state = SimpleState(file);
    if let Ok(out) = fast
        .parse_with_state(toks.split_token_span(eoi), &mut state)
        .into_result()
    {
        return Ok(out);
    }
    let (out, errs) = rich()
        .parse_with_state(toks.split_token_span(eoi), &mut state)
        .into_output_errors();
    match (errs.into_iter().min_by_key(|e| e.span().start), out) {
        (Some(e), _) => Err(e),
        (None, Some(out)) => Ok(out),
        (None, None) => Err(Rich::custom(eoi, "invalid syntax")),
    }
}
