//! Guards that keep the parser and every later pass safe on hostile input: tokens `.tsr` does not
//! support, nesting limits (checked on tokens, before any recursion), and a depth limit on the
//! finished expression trees (checked and dismantled without recursion).

use crate::ast::{Arg, Expr, ExprKind, FStringPart, Stmt, StmtKind};
use crate::diag::{Code, Diagnostic};
use crate::lex::{Tok, TokSpan};
use crate::span::{FileId, Span};

/// Most recursion-inducing constructs open at once on one line: brackets, `**` right operands,
/// `else` branches of conditional expressions, prefix operators (CPython's limit is 200 brackets).
pub const MAX_NESTING: usize = 200;
/// Deepest expression tree accepted (left-nested chains like `a + b + ... + z` included), so that
/// evaluators and printers that recurse over the tree stay within their stack.
pub const MAX_EXPR_DEPTH: usize = 1000;

/// Set displays and dict or set comprehensions (`{1, 2}`, `{k: v for ...}`, `{x for ...}`):
/// the first `{` whose contents, at their own bracket level, hold no `:`, or a `for`.
fn unsupported_brace(toks: &[(Tok, TokSpan)], file: FileId) -> Option<Diagnostic> {
    for (i, (tok, open)) in toks.iter().enumerate() {
        if *tok != Tok::LBrace {
            continue;
        }
        let (mut depth, mut colon, mut items) = (0usize, false, false);
        let mut close = open.end;
        let mut comp = false;
        for (t, s) in toks.get(i + 1..).unwrap_or(&[]) {
            close = s.end;
            match t {
                Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
                Tok::RParen | Tok::RBracket | Tok::RBrace if depth == 0 => break,
                Tok::RParen | Tok::RBracket | Tok::RBrace => depth -= 1,
                Tok::Colon if depth == 0 => colon = true,
                Tok::For if depth == 0 => comp = true,
                _ => {}
            }
            items = true;
        }
        let (msg, help) = match (comp, colon) {
            (true, true) => (
                "dict comprehensions are not supported in Tessera",
                "build the dict in a `for` loop, or with `dict([(k, v) for ...])`",
            ),
            (true, false) => (
                "set comprehensions are not supported in Tessera",
                "use `set([x for ...])`",
            ),
            (false, false) if items => (
                "set literals are not supported in Tessera",
                "use `set([...])`",
            ),
            _ => continue,
        };
        return Some(
            Diagnostic::new(Code::E0001, msg)
                .at(Span::new(file, open.start, close))
                .with_label("not supported")
                .with_help(help),
        );
    }
    None
}

/// `Err(None)`: the line has a token already reported by the lexer or layout pass.
/// `Err(Some(d))`: a construct we reject before parsing.
pub(crate) fn precheck(
    toks: &[(Tok, TokSpan)],
    file: FileId,
) -> Result<(), Option<Box<Diagnostic>>> {
    let sp = |s: &TokSpan| Span::new(file, s.start, s.end);
    // unsupported things first: they explain the line better than a nesting error
    for (tok, span) in toks {
        let msg: Option<(String, Option<&str>)> = match tok {
            Tok::Error => return Err(None),
            Tok::Reserved(k) => Some((
                match *k {
                    "lambda" => "`lambda` is not supported in Tessera".to_string(),
                    "class" => "classes are not supported in Tessera".to_string(),
                    "import" | "from" => "`import` is not supported in Tessera".to_string(),
                    "yield" | "await" | "async" => format!("`{k}` is not supported in Tessera"),
                    _ => format!("`{k}` statements are not supported in Tessera"),
                },
                match *k {
                    "lambda" => Some("define a function with `def`"),
                    "import" | "from" => Some(
                        "the modules `op`, `dist`, `schedule`, `graph`, `autotune`, `target` and `time` are always available",
                    ),
                    "class" => Some("use a dict, or functions that take and return values"),
                    "with" => Some("call `.close()` on the file when done"),
                    _ => None,
                },
            )),
            Tok::Unsupported(op) => Some(match *op {
                ":=" => ("assignment expressions (`:=`) are not supported in Tessera".to_string(), None),
                "<>" => ("`<>` is not an operator".to_string(), Some("use `!=`")),
                op if op.ends_with('=') => (
                    format!("the `{op}` augmented assignment is not supported in Tessera"),
                    None,
                ),
                op => (format!("the `{op}` operator is not supported in Tessera"), Some(match op {
                    "^" => "for powers, use `**`; `&`, `|` and `~` are supported",
                    _ => "shifts and `^` are not supported: multiply or floor-divide by a power of two",
                })),
            }),
            _ => None,
        };
        if let Some((msg, help)) = msg {
            let mut d = Diagnostic::new(Code::E0001, msg)
                .at(sp(span))
                .with_label("not supported");
            if let Some(h) = help {
                d = d.with_help(h);
            }
            return Err(Some(Box::new(d)));
        }
    }
    // `match x:` (a soft keyword: `match` is an ordinary name elsewhere)
    if let [(Tok::Name(n), at), second, .., (Tok::Colon, _)] = toks {
        if &**n == "match"
            && !matches!(
                second.0,
                Tok::Colon | Tok::Assign | Tok::AugAssign(_) | Tok::Dot | Tok::Comma
            )
        {
            return Err(Some(Box::new(
                Diagnostic::new(
                    Code::E0001,
                    "`match` statements are not supported in Tessera",
                )
                .at(sp(at))
                .with_label("not supported")
                .with_help("use `if`/`elif`/`else`"),
            )));
        }
    }
    if let Some(d) = unsupported_brace(toks, file) {
        return Err(Some(Box::new(d)));
    }
    // `x: int = 3`: a variable annotation (a statement starting `name :`)
    if let [(Tok::Name(n), _), (Tok::Colon, colon), ..] = toks {
        return Err(Some(Box::new(
            Diagnostic::new(
                Code::E0001,
                "variable annotations (`name: type`) are not supported in Tessera",
            )
            .at(sp(colon))
            .with_label("an annotation")
            .with_help(format!("leave the type out: `{n} = ...`")),
        )));
    }
    // nesting: per open bracket, a counter of recursion-inducing tokens since the last `,`
    let mut counters: Vec<usize> = vec![0];
    let mut total = 0usize;
    let mut prev: Option<&Tok> = None;
    // consecutive prefix operators: `- - - x`, `not not x`
    let mut run = 0usize;
    for (tok, span) in toks {
        let prefix = match tok {
            Tok::Not => true,
            Tok::Minus | Tok::Plus => prefix_position(prev),
            _ => false,
        };
        run = if prefix { run + 1 } else { 0 };
        let deeper = match tok {
            Tok::LParen | Tok::LBracket => {
                counters.push(0);
                total += 1;
                true
            }
            Tok::RParen | Tok::RBracket => {
                let c = counters.pop().unwrap_or(0);
                total = total.saturating_sub(c + 1);
                if counters.is_empty() {
                    counters.push(0);
                }
                false
            }
            Tok::Comma | Tok::Colon | Tok::Semi | Tok::Assign | Tok::AugAssign(_) => {
                if let Some(c) = counters.last_mut() {
                    total = total.saturating_sub(*c);
                    *c = 0;
                }
                false
            }
            Tok::DStar | Tok::Else => bump(&mut counters, &mut total),
            _ => false,
        };
        if (deeper && total > MAX_NESTING) || run > MAX_NESTING {
            return Err(Some(Box::new(
                Diagnostic::new(Code::E0001, "expression is nested too deeply")
                    .at(sp(span))
                    .with_label(format!("more than {MAX_NESTING} levels of nesting here"))
                    .with_help("split the expression into several statements"),
            )));
        }
        prev = Some(tok);
    }
    Ok(())
}

fn bump(counters: &mut [usize], total: &mut usize) -> bool {
    if let Some(c) = counters.last_mut() {
        *c += 1;
    }
    *total += 1;
    true
}

/// Whether a `-`/`+` after `prev` is a prefix (unary) operator.
fn prefix_position(prev: Option<&Tok>) -> bool {
    !matches!(
        prev,
        Some(
            Tok::Name(_)
                | Tok::Int(_)
                | Tok::Float(_)
                | Tok::Str(_)
                | Tok::FStr(_)
                | Tok::True
                | Tok::False
                | Tok::None
                | Tok::RParen
                | Tok::RBracket
                | Tok::RBrace
        )
    )
}

/// The span of a node deeper than `limit`, if any (iterative).
pub(crate) fn too_deep(e: &Expr, limit: usize) -> Option<Span> {
    let mut stack: Vec<(&Expr, usize)> = vec![(e, 1)];
    while let Some((e, d)) = stack.pop() {
        if d > limit {
            return Some(e.span);
        }
        e.for_each_child(&mut |c| stack.push((c, d + 1)));
    }
    None
}

/// Expressions directly inside a statement (not in nested blocks).
pub(crate) fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Expr(e) => vec![e],
        StmtKind::Assign { targets, value } => targets.iter().chain([value]).collect(),
        StmtKind::AugAssign { target, value, .. } => vec![target, value],
        StmtKind::Return(e) => e.iter().collect(),
        StmtKind::Assert { test, msg } => [test].into_iter().chain(msg).collect(),
        StmtKind::If { test, .. } | StmtKind::While { test, .. } => vec![test],
        StmtKind::For { target, iter, .. } => vec![target, iter],
        StmtKind::FunctionDef(f) => f
            .decorators
            .iter()
            .chain(f.params.iter().filter_map(|p| p.default.as_ref()))
            .collect(),
        StmtKind::Try { handlers, .. } => handlers.iter().filter_map(|h| h.typ.as_ref()).collect(),
        StmtKind::Break | StmtKind::Continue | StmtKind::Pass | StmtKind::Global(_) => Vec::new(),
    }
}

/// Drops an expression tree of any depth without recursion.
pub(crate) fn dismantle(e: Expr) {
    let mut stack = vec![e];
    while let Some(mut e) = stack.pop() {
        take_children(&mut e, &mut stack);
    }
}

fn take_box(b: &mut Box<Expr>, out: &mut Vec<Expr>) {
    let placeholder = Expr {
        kind: ExprKind::Error,
        span: b.span,
    };
    out.push(std::mem::replace(&mut **b, placeholder));
}

fn take_children(e: &mut Expr, out: &mut Vec<Expr>) {
    match &mut e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Name(_)
        | ExprKind::Error => {}
        ExprKind::FString(parts) => {
            for p in parts.drain(..) {
                if let FStringPart::Expr { expr, .. } = p {
                    out.push(expr);
                }
            }
        }
        ExprKind::List(v) | ExprKind::Tuple(v) => out.append(v),
        ExprKind::Dict(v) => {
            for (k, x) in v.drain(..) {
                out.push(k);
                out.push(x);
            }
        }
        ExprKind::Unary { operand, .. } => take_box(operand, out),
        ExprKind::Binary { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
            take_box(left, out);
            take_box(right, out);
        }
        ExprKind::Compare { left, ops } => {
            take_box(left, out);
            out.extend(ops.drain(..).map(|(_, e)| e));
        }
        ExprKind::IfExp { test, body, orelse } => {
            take_box(test, out);
            take_box(body, out);
            take_box(orelse, out);
        }
        ExprKind::Call { func, args } => {
            take_box(func, out);
            out.extend(args.drain(..).map(|a| match a {
                Arg::Positional(e) | Arg::Keyword(_, e) | Arg::Star(e) => e,
            }));
        }
        ExprKind::Attribute { value, .. } => take_box(value, out),
        ExprKind::Subscript { value, index } => {
            take_box(value, out);
            take_box(index, out);
        }
        ExprKind::Slice { lo, hi, step } => {
            for b in [lo, hi, step].into_iter().flatten() {
                take_box(b, out);
            }
        }
        ExprKind::ListComp {
            elt,
            target,
            iter,
            conds,
        } => {
            take_box(elt, out);
            take_box(target, out);
            take_box(iter, out);
            out.append(conds);
        }
    }
}

/// Drops statements (from a line that failed a check) without deep recursion.
pub(crate) fn dismantle_stmt(s: Stmt) {
    match s.kind {
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => dismantle(e),
        StmtKind::Assign { targets, value } => {
            targets.into_iter().for_each(dismantle);
            dismantle(value);
        }
        StmtKind::AugAssign { target, value, .. } => {
            dismantle(target);
            dismantle(value);
        }
        StmtKind::Assert { test, msg } => {
            dismantle(test);
            msg.into_iter().for_each(dismantle);
        }
        StmtKind::If { test, body, orelse } | StmtKind::While { test, body, orelse } => {
            dismantle(test);
            body.into_iter().chain(orelse).for_each(dismantle_stmt);
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => {
            dismantle(target);
            dismantle(iter);
            body.into_iter().chain(orelse).for_each(dismantle_stmt);
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            for h in handlers {
                h.typ.into_iter().for_each(dismantle);
                h.body.into_iter().for_each(dismantle_stmt);
            }
            body.into_iter()
                .chain(orelse)
                .chain(finalbody)
                .for_each(dismantle_stmt);
        }
        StmtKind::FunctionDef(_)
        | StmtKind::Global(_)
        | StmtKind::Return(None)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Pass => {}
    }
}
