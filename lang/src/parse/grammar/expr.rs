//! The expression grammar: atoms and displays, calls and subscripts, the operators by
//! precedence, conditional expressions and tuples.

use super::*;

/// A name in an expression, with its span.
pub(super) fn ident<'t, Er: GrammarError<'t>>() -> impl Parser<'t, I<'t>, Ident, Ex<Er>> + Copy + 't
{
    let name = select! { Tok::Name(n) => n }.labelled("an identifier");
    name.map_with(move |n, e| Ident {
        name: n,
        span: sp!(e),
    })
}

/// `expr, expr, ...` with an optional trailing comma.
pub(super) fn items<'t, Er: GrammarError<'t>>(
    expr: Rec<'t, Er>,
) -> impl Parser<'t, I<'t>, Vec<Expr>, Ex<Er>> + Clone + 't {
    expr.separated_by(just(Tok::Comma))
        .allow_trailing()
        .collect::<Vec<Expr>>()
}

/// The atoms: literals, strings, parentheses, list displays and comprehensions, dict displays.
pub(super) fn atom<'t, Er: GrammarError<'t>>(expr: Rec<'t, Er>) -> ExprParser<'t, Er> {
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
pub(super) fn list_display<'t, Er: GrammarError<'t>>(
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
pub(super) fn call_args<'t, Er: GrammarError<'t>>(
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
pub(super) fn subscript<'t, Er: GrammarError<'t>>(expr: Rec<'t, Er>) -> ExprParser<'t, Er> {
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
pub(super) fn primary<'t, Er: GrammarError<'t>>(
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
pub(super) fn factor<'t, Er: GrammarError<'t>>(primary: ExprParser<'t, Er>) -> Rec<'t, Er> {
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
pub(super) fn operator_chain<'t, Er: GrammarError<'t>>(factor: Rec<'t, Er>) -> ExprParser<'t, Er> {
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
pub(super) fn arith<'t, Er: GrammarError<'t>>(
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
pub(super) fn conditional<'t, Er: GrammarError<'t>>(
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
pub(super) fn testlist<'t, Er: GrammarError<'t>>(expr: Rec<'t, Er>) -> ExprParser<'t, Er> {
    expr.clone()
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp!(e)))
        .boxed()
}
