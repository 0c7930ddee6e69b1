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

// after `sp!`: the submodules use it (macros are in scope below their definition)
mod expr;
mod stmt;

use expr::*;
pub(crate) use stmt::*;

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
