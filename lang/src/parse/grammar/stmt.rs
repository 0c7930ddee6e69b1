//! The statement grammar: simple statements, `def` parameters and the logical lines of a
//! block (headers and their bodies).

use super::*;

/// Simple statements separated by `;`: `pass break continue return global assert`, expression
/// statements and (augmented) assignments.
pub(super) fn simple_statements<'t, Er: GrammarError<'t>>(
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
pub(super) fn header_name<'t, Er: GrammarError<'t>>(
) -> impl Parser<'t, I<'t>, Ident, Ex<Er>> + Copy + 't {
    select! { Tok::Name(n) = e => Ident { name: n, span: sp!(e) } }
}

/// A `def`'s parameters from `(` to `)`, and the span of the `)`.
pub(super) fn params<'t, Er: GrammarError<'t>>(
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
pub(super) fn lines<'t, Er: GrammarError<'t>>(
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
pub(super) enum ListTail {
    Comp(((Expr, Expr), Vec<Expr>)),
    More(Vec<Expr>),
}

#[derive(Clone)]
pub(super) enum Postfix {
    Call(Vec<Arg>, Span),
    Attr(Ident),
    Index(Expr, Span),
}

pub(super) enum AssignTail {
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
