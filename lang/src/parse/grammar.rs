//! The chumsky grammar of one logical line (SPEC §2, Python's precedence).
//!
//! A line is a simple statement list, a block header (`if x:`, `def f(a):`, ...) with an optional
//! body on the same line, or a decorator. Blocks are assembled from lines by `block.rs`.

use crate::ast::{
    Arg, BinOp, BoolOp, CmpOp, Expr, ExprKind, FStringPart, Ident, Param, ParamKind, Stmt,
    StmtKind, UnaryOp,
};
use crate::lex::Tok;
use crate::span::{FileId, Span};
use chumsky::input::ValueInput;
use chumsky::prelude::*;
use chumsky::recursive::Direct;

pub(crate) type Extra<'t> = extra::Err<Rich<'t, Tok, SimpleSpan>>;

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

type Rec<'t, I> = Recursive<Direct<'t, 't, I, Expr, Extra<'t>>>;

/// The parsers of the language, built once per parse.
pub(crate) struct Grammar<'t, I: ValueInput<'t, Token = Tok, Span = SimpleSpan>> {
    pub line: Boxed<'t, 't, I, Line, Extra<'t>>,
    pub expr: Boxed<'t, 't, I, Expr, Extra<'t>>,
}

fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
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
fn concat_strings(pieces: Vec<Tok>) -> ExprKind {
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
fn tuple_or_single(mut items: Vec<Expr>, trailing: bool, span: Span) -> Expr {
    if items.len() == 1 && !trailing {
        if let Some(e) = items.pop() {
            return e;
        }
    }
    mk(ExprKind::Tuple(items), span)
}

pub(crate) fn grammar<'t, I>(file: FileId) -> Grammar<'t, I>
where
    I: ValueInput<'t, Token = Tok, Span = SimpleSpan>,
{
    let sp = move |s: SimpleSpan| Span::new(file, s.start, s.end);
    let mut arith_out: Option<Rec<'t, I>> = None;

    let expr: Rec<'t, I> = recursive(|expr| {
        let name = select! { Tok::Name(n) => n }.labelled("an identifier");
        let ident = name.map_with(move |n, e| Ident {
            name: n,
            span: sp(e.span()),
        });

        // comprehension targets: names and (nested) tuples/lists of names
        let comp_target = recursive(|target| {
            let seq = target
                .clone()
                .separated_by(just(Tok::Comma))
                .allow_trailing()
                .collect::<Vec<Expr>>();
            choice((
                ident.map(|i: Ident| mk(ExprKind::Name(i.name), i.span)),
                seq.clone()
                    .delimited_by(just(Tok::LParen), just(Tok::RParen))
                    .map_with(move |v, e| mk(ExprKind::Tuple(v), sp(e.span()))),
                seq.delimited_by(just(Tok::LBracket), just(Tok::RBracket))
                    .map_with(move |v, e| mk(ExprKind::List(v), sp(e.span()))),
            ))
            .labelled("a loop variable")
        });
        let comp_targets = comp_target
            .clone()
            .separated_by(just(Tok::Comma))
            .at_least(1)
            .collect::<Vec<Expr>>()
            .then(just(Tok::Comma).or_not())
            .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp(e.span())));

        let items = expr
            .clone()
            .separated_by(just(Tok::Comma))
            .allow_trailing()
            .collect::<Vec<Expr>>();

        let literal = select! {
            Tok::Int(i) => ExprKind::Int(i),
            Tok::Float(f) => ExprKind::Float(f),
            Tok::True => ExprKind::Bool(true),
            Tok::False => ExprKind::Bool(false),
            Tok::None => ExprKind::None,
            Tok::Name(n) => ExprKind::Name(n),
        }
        .map_with(move |k, e| mk(k, sp(e.span())));

        let strings = select! { t @ (Tok::Str(_) | Tok::FStr(_)) => t }
            .repeated()
            .at_least(1)
            .collect::<Vec<Tok>>()
            .map_with(move |v, e| mk(concat_strings(v), sp(e.span())));

        // `(`: `()`, `(e)`, `(e,)`, `(e, f, ...)`
        let paren = expr
            .clone()
            .then(just(Tok::Comma).ignore_then(items.clone()).or_not())
            .or_not()
            .delimited_by(just(Tok::LParen), just(Tok::RParen))
            .map_with(move |inner, e| match inner {
                None => mk(ExprKind::Tuple(Vec::new()), sp(e.span())),
                Some((first, None)) => first,
                Some((first, Some(rest))) => {
                    let mut v = Vec::with_capacity(rest.len() + 1);
                    v.push(first);
                    v.extend(rest);
                    mk(ExprKind::Tuple(v), sp(e.span()))
                }
            });

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
        let list = expr
            .clone()
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
                let span = sp(e.span());
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
            });

        let atom = choice((literal, strings, paren, list)).labelled("an expression");

        // call arguments
        let arg = choice((
            just(Tok::Star).ignore_then(expr.clone()).map(Arg::Star),
            ident
                .then_ignore(just(Tok::Assign))
                .then(expr.clone())
                .map(|(k, v)| Arg::Keyword(k, v)),
            expr.clone().map(Arg::Positional),
        ));
        let args = arg
            .separated_by(just(Tok::Comma))
            .allow_trailing()
            .collect::<Vec<Arg>>()
            .try_map(|args: Vec<Arg>, span| {
                let mut seen_kw = false;
                for a in &args {
                    match a {
                        Arg::Keyword(..) => seen_kw = true,
                        Arg::Positional(e) if seen_kw => {
                            let _ = span;
                            return Err(Rich::custom(
                                SimpleSpan::from(e.span.range()),
                                "positional argument follows keyword argument",
                            ));
                        }
                        _ => {}
                    }
                }
                Ok(args)
            })
            .delimited_by(just(Tok::LParen), just(Tok::RParen));

        // subscripts: `x[i]`, `x[a:b:c]`, `x[0:2, :]`
        let slice_tail = just(Tok::Colon)
            .ignore_then(expr.clone().or_not())
            .then(just(Tok::Colon).ignore_then(expr.clone().or_not()).or_not());
        let sub_item = choice((
            expr.clone().then(slice_tail.clone().or_not()).map_with(
                move |(lo, tail), e| match tail {
                    None => lo,
                    Some((hi, step)) => mk(
                        ExprKind::Slice {
                            lo: Some(Box::new(lo)),
                            hi: hi.map(Box::new),
                            step: step.flatten().map(Box::new),
                        },
                        sp(e.span()),
                    ),
                },
            ),
            slice_tail.map_with(move |(hi, step), e| {
                mk(
                    ExprKind::Slice {
                        lo: None,
                        hi: hi.map(Box::new),
                        step: step.flatten().map(Box::new),
                    },
                    sp(e.span()),
                )
            }),
        ));
        let subscript = sub_item
            .separated_by(just(Tok::Comma))
            .at_least(1)
            .collect::<Vec<Expr>>()
            .then(just(Tok::Comma).or_not())
            .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp(e.span())))
            .delimited_by(just(Tok::LBracket), just(Tok::RBracket));

        let postfix = choice((
            args.map_with(move |a, e| Postfix::Call(a, sp(e.span()))),
            just(Tok::Dot)
                .ignore_then(ident.labelled("an attribute name"))
                .map(Postfix::Attr),
            subscript.map_with(move |i, e| Postfix::Index(i, sp(e.span()))),
        ));
        let primary = atom.foldl(postfix.repeated(), |value, p| match p {
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
        });

        // factor: ('-' | '+')* power;  power: primary ['**' factor]
        let factor = recursive(|factor| {
            let power = primary
                .clone()
                .then(just(Tok::DStar).ignore_then(factor).or_not())
                .map(|(base, exp)| match exp {
                    None => base,
                    Some(exp) => bin(BinOp::Pow, base, exp),
                });
            let unary = select! {
                Tok::Minus = e => (UnaryOp::Neg, sp(e.span())),
                Tok::Plus = e => (UnaryOp::Pos, sp(e.span())),
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
        });

        let term_op = select! {
            Tok::Star => BinOp::Mul,
            Tok::Slash => BinOp::Div,
            Tok::DSlash => BinOp::FloorDiv,
            Tok::Percent => BinOp::Mod,
            Tok::At => BinOp::MatMul,
        };
        let arith_op = select! { Tok::Plus => BinOp::Add, Tok::Minus => BinOp::Sub };
        let term = factor
            .clone()
            .foldl(term_op.then(factor).repeated(), |l, (op, r)| bin(op, l, r));
        let arith = term
            .clone()
            .foldl(arith_op.then(term).repeated(), |l, (op, r)| bin(op, l, r));
        let arith_rec: Rec<'t, I> = recursive(|_| arith);
        arith_out = Some(arith_rec.clone());

        let cmp_op = choice((
            select! {
                Tok::EqEq => CmpOp::Eq,
                Tok::NotEq => CmpOp::Ne,
                Tok::Lt => CmpOp::Lt,
                Tok::Le => CmpOp::Le,
                Tok::Gt => CmpOp::Gt,
                Tok::Ge => CmpOp::Ge,
                Tok::In => CmpOp::In,
            },
            just(Tok::Not).then(just(Tok::In)).to(CmpOp::NotIn),
            just(Tok::Is).ignore_then(just(Tok::Not).or_not()).map(|n| {
                if n.is_some() {
                    CmpOp::IsNot
                } else {
                    CmpOp::Is
                }
            }),
        ));
        let comparison = arith_rec
            .clone()
            .then(
                cmp_op
                    .then(arith_rec.clone())
                    .repeated()
                    .collect::<Vec<_>>(),
            )
            .map(|(left, ops): (Expr, Vec<(CmpOp, Expr)>)| {
                if ops.is_empty() {
                    return left;
                }
                let span = ops
                    .last()
                    .map(|(_, e)| left.span.to(e.span))
                    .unwrap_or(left.span);
                mk(
                    ExprKind::Compare {
                        left: Box::new(left),
                        ops,
                    },
                    span,
                )
            });
        let not_test = select! { Tok::Not = e => sp(e.span()) }
            .repeated()
            .foldr(comparison, |s: Span, operand: Expr| {
                let span = s.to(operand.span);
                mk(
                    ExprKind::Unary {
                        op: UnaryOp::Not,
                        operand: Box::new(operand),
                    },
                    span,
                )
            })
            .labelled("an expression");
        let boolop = |l: Expr, op: BoolOp, r: Expr| {
            let span = l.span.to(r.span);
            mk(
                ExprKind::BoolOp {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                },
                span,
            )
        };
        let and_test = not_test.clone().foldl(
            just(Tok::And).ignore_then(not_test).repeated(),
            move |l, r| boolop(l, BoolOp::And, r),
        );
        let or_test = and_test.clone().foldl(
            just(Tok::Or).ignore_then(and_test).repeated(),
            move |l, r| boolop(l, BoolOp::Or, r),
        );
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
    });
    let arith = match arith_out {
        Some(a) => a.boxed(),
        None => expr.clone().boxed(),
    };

    // ---- statements ----
    let testlist = expr
        .clone()
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp(e.span())));

    let augop = select! { Tok::AugAssign(op) => op };
    let stmt_at = move |kind: StmtKind, s: SimpleSpan| Stmt { kind, span: sp(s) };
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
            stmt_at(kind, e.span())
        });
    let small = choice((
        just(Tok::Pass).map_with(move |_, e| stmt_at(StmtKind::Pass, e.span())),
        just(Tok::Break).map_with(move |_, e| stmt_at(StmtKind::Break, e.span())),
        just(Tok::Continue).map_with(move |_, e| stmt_at(StmtKind::Continue, e.span())),
        just(Tok::Return)
            .ignore_then(testlist.clone().or_not())
            .map_with(move |v, e| stmt_at(StmtKind::Return(v), e.span())),
        just(Tok::Assert)
            .ignore_then(expr.clone())
            .then(just(Tok::Comma).ignore_then(expr.clone()).or_not())
            .map_with(move |(test, msg), e| stmt_at(StmtKind::Assert { test, msg }, e.span())),
        expr_stmt,
    ));
    let simple = small
        .separated_by(just(Tok::Semi))
        .at_least(1)
        .collect::<Vec<Stmt>>()
        .then_ignore(just(Tok::Semi).or_not());

    let colon = just(Tok::Colon).map_with(|_, e| e.span());
    let kw = |t: Tok| just(t).map_with(|_, e| e.span());
    let header = |p: Boxed<'t, 't, I, (SimpleSpan, HeaderKind), Extra<'t>>| {
        p.then(colon.clone()).then(simple.clone().or_not()).map(
            move |(((start, kind), end), body)| {
                Line::Header(
                    Header {
                        kind,
                        span: sp(start).to(sp(end)),
                    },
                    body,
                )
            },
        )
    };
    let name = select! { Tok::Name(n) = e => Ident { name: n, span: sp(e.span()) } };
    let annotation = just(Tok::Colon)
        .ignore_then(expr.clone())
        .or_not()
        .ignored();
    let param = choice((
        just(Tok::DStar)
            .map_with(move |_, e| sp(e.span()))
            .then_ignore(name.then_ignore(annotation.clone()).or_not())
            .map(RawParam::DoubleStar),
        just(Tok::Star)
            .map_with(move |_, e| sp(e.span()))
            .then(name.then_ignore(annotation.clone()).or_not())
            .map(|(s, n)| RawParam::Star(n, s)),
        just(Tok::Slash).map_with(move |_, e| RawParam::Slash(sp(e.span()))),
        name.then_ignore(annotation)
            .then(just(Tok::Assign).ignore_then(expr.clone()).or_not())
            .map(|(n, d)| RawParam::Named(n, d)),
    ))
    .labelled("a parameter");
    let params = param
        .separated_by(just(Tok::Comma))
        .allow_trailing()
        .collect::<Vec<RawParam>>()
        .then(just(Tok::RParen).map_with(|_, e| e.span()));
    let params = just(Tok::LParen).ignore_then(params);
    let target_list = arith
        .clone()
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<Expr>>()
        .then(just(Tok::Comma).or_not())
        .map_with(move |(v, t), e| tuple_or_single(v, t.is_some(), sp(e.span())));

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
            let span = sp(start).to(sp(close));
            (start, HeaderKind::Def(n, ps, span))
        })
        .boxed();
    let decorator = kw(Tok::At)
        .then(expr.clone())
        .map(move |(s, e)| Line::Decorator(e, sp(s)));

    let line = choice((
        header(if_h),
        header(elif_h),
        header(else_h),
        header(while_h),
        header(for_h),
        header(def_h),
        decorator,
        simple.map(Line::Simple),
    ))
    .then_ignore(end())
    .boxed();

    Grammar {
        line,
        expr: expr.then_ignore(end()).boxed(),
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

/// Parameters as the AST wants them, or the first problem with them.
pub(crate) fn check_params(
    raw: Vec<RawParam>,
) -> Result<Vec<Param>, (Span, String, Option<&'static str>)> {
    let mut out: Vec<Param> = Vec::with_capacity(raw.len());
    let mut kw_only = false;
    let mut seen_default = false;
    let mut bare_star: Option<Span> = None;
    for p in raw {
        match p {
            RawParam::DoubleStar(s) => {
                return Err((s, "`**kwargs` parameters are not supported".into(), None))
            }
            RawParam::Slash(s) => {
                return Err((
                    s,
                    "positional-only parameters (`/`) are not supported".into(),
                    None,
                ))
            }
            RawParam::Star(name, s) => {
                if kw_only {
                    return Err((
                        s,
                        "`*` can appear only once in a parameter list".into(),
                        None,
                    ));
                }
                kw_only = true;
                match name {
                    Some(name) => out.push(Param {
                        name,
                        default: None,
                        kind: ParamKind::VarArgs,
                    }),
                    None => bare_star = Some(s),
                }
            }
            RawParam::Named(name, default) => {
                if out.iter().any(|q| q.name.name == name.name) {
                    return Err((
                        name.span,
                        format!("duplicate parameter `{}`", name.name),
                        None,
                    ));
                }
                if kw_only {
                    bare_star = None;
                    out.push(Param {
                        name,
                        default,
                        kind: ParamKind::KeywordOnly,
                    });
                } else {
                    if default.is_some() {
                        seen_default = true;
                    } else if seen_default {
                        return Err((
                            name.span,
                            "a parameter without a default follows a parameter with a default"
                                .into(),
                            Some(
                                "give this parameter a default too, or move it before the defaults",
                            ),
                        ));
                    }
                    out.push(Param {
                        name,
                        default,
                        kind: ParamKind::Normal,
                    });
                }
            }
        }
    }
    if let Some(s) = bare_star {
        return Err((
            s,
            "a bare `*` must be followed by keyword-only parameters".into(),
            None,
        ));
    }
    // names also clash with `*args`
    Ok(out)
}
