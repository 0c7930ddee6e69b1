//! Assembles statements and blocks from parsed logical lines (`Indent`/`Dedent` from the layout
//! pass). Each line is parsed on its own, so one run reports an error per bad line and goes on.

use super::errors::to_diagnostic;
use super::grammar::{Grammars, Header, HeaderKind, Line};
use super::limits::{dismantle_stmt, precheck, stmt_exprs, too_deep, MAX_EXPR_DEPTH};
use super::params::check_params;
use crate::ast::{Expr, ExprKind, FunctionDef, Handler, Stmt, StmtKind};
use crate::diag::{Code, Diagnostic};
use crate::lex::{Tok, TokSpan};
use crate::span::{FileId, Span};
use std::rc::Rc;

type Toks<'t> = &'t [(Tok, TokSpan)];

enum Item<'t> {
    Line(Toks<'t>),
    Indent,
    Dedent,
}

/// Facts about the end of the input, for `is_complete`.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct EndState {
    /// The last line is a block header (or decorator) still waiting for its body.
    pub awaiting_body: bool,
    /// The last top-level statement is compound (`if`, `for`, `while`, `def`).
    pub last_is_compound: bool,
}

pub(crate) struct Builder<'t> {
    toks: Toks<'t>,
    pos: usize,
    file: FileId,
    source: &'t str,
    grammars: Grammars<'t>,
    pub diags: Vec<Diagnostic>,
    /// Errors only because the input ended (a header or decorator without its body yet).
    pub eof_diags: Vec<Diagnostic>,
    pub end: EndState,
}

impl<'t> Builder<'t> {
    pub fn new(source: &'t str, toks: Toks<'t>, file: FileId) -> Builder<'t> {
        Builder {
            toks,
            pos: 0,
            file,
            source,
            grammars: Grammars::new(),
            diags: Vec::new(),
            eof_diags: Vec::new(),
            end: EndState::default(),
        }
    }

    fn sp(&self, s: TokSpan) -> Span {
        Span::new(self.file, s.start, s.end)
    }

    fn line_of(&self, offset: usize) -> usize {
        self.source
            .get(..offset)
            .map(|s| s.bytes().filter(|b| *b == b'\n').count() + 1)
            .unwrap_or(1)
    }

    fn peek(&self) -> Option<(Item<'t>, usize)> {
        let (tok, _) = self.toks.get(self.pos)?;
        Some(match tok {
            Tok::Indent => (Item::Indent, self.pos + 1),
            Tok::Dedent => (Item::Dedent, self.pos + 1),
            _ => {
                let rest = self.toks.get(self.pos..).unwrap_or(&[]);
                let len = rest
                    .iter()
                    .position(|(t, _)| *t == Tok::Newline)
                    .unwrap_or(rest.len());
                (
                    Item::Line(rest.get(..len).unwrap_or(&[])),
                    self.pos + len + 1,
                )
            }
        })
    }

    fn next(&mut self) -> Option<Item<'t>> {
        let (item, next) = self.peek()?;
        self.pos = next;
        Some(item)
    }

    /// The span of the first token at the current position (after layout tokens).
    fn next_token_span(&self) -> Option<TokSpan> {
        self.toks
            .get(self.pos..)?
            .iter()
            .find(|(t, _)| !matches!(t, Tok::Indent | Tok::Dedent | Tok::Newline))
            .map(|(_, s)| *s)
    }

    /// The whole input.
    pub fn module(&mut self) -> Vec<Stmt> {
        self.block(0)
    }

    fn block(&mut self, depth: usize) -> Vec<Stmt> {
        let mut body = Vec::new();
        let mut decorators: Vec<(Expr, Span)> = Vec::new();
        while let Some(item) = self.next() {
            match item {
                Item::Dedent if depth > 0 => break,
                Item::Dedent => {}
                Item::Indent => {
                    self.stray_decorators(&mut decorators);
                    if let Some(s) = self.next_token_span() {
                        self.diags.push(
                            Diagnostic::new(Code::E0003, "unexpected indent")
                                .at(self.sp(s))
                                .with_label("this line is indented more than the one before")
                                .with_help("only the lines of a block (after a line ending in `:`) are indented"),
                        );
                    }
                    let inner = self.block(depth + 1);
                    inner.into_iter().for_each(dismantle_stmt);
                }
                Item::Line(line) => self.line(line, &mut body, &mut decorators, depth),
            }
        }
        if depth == 0 {
            self.end.awaiting_body |= !decorators.is_empty();
            self.end.last_is_compound = matches!(
                body.last(),
                Some(Stmt {
                    kind: StmtKind::If { .. }
                        | StmtKind::For { .. }
                        | StmtKind::While { .. }
                        | StmtKind::Try { .. }
                        | StmtKind::FunctionDef(_),
                    ..
                })
            );
        }
        self.stray_decorators(&mut decorators);
        body
    }

    fn stray_decorators(&mut self, decorators: &mut Vec<(Expr, Span)>) {
        if let Some((_, s)) = decorators.first() {
            let at_end = self.peek().is_none();
            let diags = if at_end {
                &mut self.eof_diags
            } else {
                &mut self.diags
            };
            diags.push(
                Diagnostic::new(
                    Code::E0001,
                    "a decorator must be followed by a function definition",
                )
                .at(*s)
                .with_label("this decorator decorates nothing"),
            );
        }
        decorators.clear();
    }

    /// Parses one logical line; reports and returns `None` on error.
    fn parse_line(&mut self, line: Toks<'t>) -> Option<Line> {
        let first = line.first().map(|(t, _)| t);
        if let Err(d) = precheck(line, self.file) {
            self.diags.extend(d.map(|d| *d));
            return None;
        }
        let line = match self.grammars.line(line, self.file) {
            Ok(line) => line,
            Err(e) => {
                self.diags.push(to_diagnostic(&e, first, self.file));
                return None;
            }
        };
        let exprs: Vec<&Expr> = match &line {
            Line::Simple(stmts) => stmts.iter().flat_map(stmt_exprs).collect(),
            Line::Decorator(e, _) => vec![e],
            Line::Header(h, inline) => {
                let mut v: Vec<&Expr> = match &h.kind {
                    HeaderKind::If(e) | HeaderKind::Elif(e) | HeaderKind::While(e) => vec![e],
                    HeaderKind::For(t, i) => vec![t, i],
                    HeaderKind::Except(Some(e), _) => vec![e],
                    HeaderKind::Else
                    | HeaderKind::Def(..)
                    | HeaderKind::Try
                    | HeaderKind::Except(None, _)
                    | HeaderKind::Finally => Vec::new(),
                };
                v.extend(inline.iter().flatten().flat_map(stmt_exprs));
                v
            }
        };
        if let Some(s) = exprs.iter().find_map(|e| too_deep(e, MAX_EXPR_DEPTH)) {
            self.diags.push(
                Diagnostic::new(Code::E0001, "expression is too complex")
                    .at(s)
                    .with_label(format!("nested more than {MAX_EXPR_DEPTH} levels deep"))
                    .with_help("split the expression into several statements"),
            );
            drop(exprs);
            dismantle_line(line);
            return None;
        }
        drop(exprs);
        let mut ok = true;
        match &line {
            Line::Simple(stmts) => stmts.iter().for_each(|s| ok &= self.check_stmt(s)),
            Line::Header(h, inline) => {
                if let HeaderKind::For(t, _) = &h.kind {
                    ok &= self.check_target(t, false);
                }
                inline
                    .iter()
                    .flatten()
                    .for_each(|s| ok &= self.check_stmt(s));
            }
            Line::Decorator(..) => {}
        }
        if !ok {
            dismantle_line(line);
            return None;
        }
        Some(line)
    }

    fn check_stmt(&mut self, s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().all(|t| self.check_target(t, false)),
            StmtKind::AugAssign { target, .. } => self.check_target(target, true),
            _ => true,
        }
    }

    /// Reports an expression that cannot be assigned to.
    fn check_target(&mut self, t: &Expr, augmented: bool) -> bool {
        let what = match &t.kind {
            ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => {
                return true
            }
            ExprKind::Tuple(items) | ExprKind::List(items) if !augmented => {
                return items.iter().all(|i| self.check_target(i, false))
            }
            ExprKind::Tuple(_) => "a tuple",
            ExprKind::List(_) => "a list",
            ExprKind::Call { .. } => "a function call",
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::FString(_)
            | ExprKind::Bool(_)
            | ExprKind::None => "a literal",
            ExprKind::Compare { .. } => "a comparison",
            ExprKind::IfExp { .. } => "a conditional expression",
            ExprKind::ListComp { .. } => "a list comprehension",
            ExprKind::Error => return false,
            _ => "an expression",
        };
        let msg = if augmented {
            format!("cannot use augmented assignment on {what}")
        } else {
            format!("cannot assign to {what}")
        };
        let mut d = Diagnostic::new(Code::E0001, msg)
            .at(t.span)
            .with_label("cannot be assigned to");
        if !augmented && what != "a function call" && what != "a tuple" && what != "a list" {
            d = d.with_help("to compare two values, use `==`");
        }
        self.diags.push(d);
        false
    }

    fn line(
        &mut self,
        line: Toks<'t>,
        body: &mut Vec<Stmt>,
        decorators: &mut Vec<(Expr, Span)>,
        depth: usize,
    ) {
        let parsed = self.parse_line(line);
        let Some(parsed) = parsed else {
            decorators.clear();
            if matches!(line.first(), Some((Tok::Name(n), _)) if &**n == "match") {
                // the `case` clauses of an unsupported `match`: one error is enough
                let (n, m) = (self.diags.len(), self.eof_diags.len());
                self.skip_block(depth);
                self.diags.truncate(n);
                self.eof_diags.truncate(m);
                return;
            }
            self.skip_block(depth);
            return;
        };
        match parsed {
            Line::Simple(stmts) => {
                self.stray_decorators(decorators);
                body.extend(stmts);
            }
            Line::Decorator(e, s) => {
                decorators.push((e, s));
                if self.peek().is_none() {
                    self.end.awaiting_body = true;
                }
            }
            Line::Header(h, inline) => {
                let decos = std::mem::take(decorators);
                if let Some(s) = self.compound(h, inline, decos, depth) {
                    body.push(s);
                }
            }
        }
    }

    /// After a line that failed: parse (and drop) the indented block that follows, if any.
    fn skip_block(&mut self, depth: usize) {
        if let Some((Item::Indent, _)) = self.peek() {
            self.next();
            self.block(depth + 1).into_iter().for_each(dismantle_stmt);
        }
    }

    /// The body of a block header: statements on the same line or an indented block.
    fn suite(&mut self, h: &Header, inline: Option<Vec<Stmt>>, depth: usize) -> Vec<Stmt> {
        let what = match h.kind {
            HeaderKind::If(_) => "the `if` statement",
            HeaderKind::Elif(_) => "the `elif` clause",
            HeaderKind::Else => "the `else` clause",
            HeaderKind::For(..) => "the `for` statement",
            HeaderKind::While(_) => "the `while` statement",
            HeaderKind::Def(..) => "the function definition",
            HeaderKind::Try => "the `try` statement",
            HeaderKind::Except(..) => "the `except` clause",
            HeaderKind::Finally => "the `finally` clause",
        };
        self.suite_of(what, h.span, inline, depth)
    }

    fn suite_of(
        &mut self,
        what: &str,
        hspan: Span,
        inline: Option<Vec<Stmt>>,
        depth: usize,
    ) -> Vec<Stmt> {
        if let Some(stmts) = inline {
            return stmts;
        }
        if let Some((Item::Indent, _)) = self.peek() {
            self.next();
            return self.block(depth + 1);
        }
        let (at, at_end) = match self.next_token_span() {
            Some(s) => (self.sp(s), false),
            None => {
                self.end.awaiting_body = true;
                (
                    Span::new(self.file, hspan.hi as usize, hspan.hi as usize),
                    true,
                )
            }
        };
        let line = self.line_of(hspan.lo as usize);
        let diags = if at_end {
            &mut self.eof_diags
        } else {
            &mut self.diags
        };
        diags.push(
            Diagnostic::new(
                Code::E0003,
                format!("expected an indented block after {what} on line {line}"),
            )
            .at(at)
            .with_secondary(hspan, "the block starts here")
            .with_help("indent the lines of the block, or write `pass` for an empty one"),
        );
        Vec::new()
    }

    /// The first token of the next line if it is `kind` (`elif`, `else`).
    fn next_line_starts_with(&self, kind: &Tok) -> bool {
        matches!(self.peek(), Some((Item::Line(l), _)) if l.first().map(|(t, _)| t) == Some(kind))
    }

    /// `else:` after a loop, if there is one.
    fn else_clause(&mut self, depth: usize) -> Vec<Stmt> {
        if !self.next_line_starts_with(&Tok::Else) {
            return Vec::new();
        }
        let Some(Item::Line(line)) = self.next() else {
            return Vec::new();
        };
        match self.parse_line(line) {
            Some(Line::Header(h, inline)) => self.suite(&h, inline, depth),
            _ => {
                self.skip_block(depth);
                Vec::new()
            }
        }
    }

    fn end_of(&self, start: Span, body: &[Stmt]) -> Span {
        body.last().map(|s| start.to(s.span)).unwrap_or(start)
    }

    fn compound(
        &mut self,
        h: Header,
        inline: Option<Vec<Stmt>>,
        decorators: Vec<(Expr, Span)>,
        depth: usize,
    ) -> Option<Stmt> {
        let mut decorators = decorators;
        if !matches!(h.kind, HeaderKind::Def(..)) {
            self.stray_decorators(&mut decorators);
        }
        match h.kind {
            HeaderKind::If(_) => {
                // collect `if`, `elif`s and `else`, then nest them from the end
                let mut clauses: Vec<(Expr, Vec<Stmt>, Span)> = Vec::new();
                let mut orelse = Vec::new();
                let mut current = Some((h, inline));
                while let Some((h, inline)) = current.take() {
                    let body = self.suite(&h, inline, depth);
                    if let HeaderKind::If(test) | HeaderKind::Elif(test) = h.kind {
                        clauses.push((test, body, h.span));
                    }
                    loop {
                        if self.next_line_starts_with(&Tok::Elif) {
                            let Some(Item::Line(line)) = self.next() else {
                                break;
                            };
                            match self.parse_line(line) {
                                Some(Line::Header(h, inline)) => {
                                    current = Some((h, inline));
                                    break;
                                }
                                // a bad `elif`: its error is reported; the chain goes on
                                _ => self.skip_block(depth),
                            }
                        } else {
                            if self.next_line_starts_with(&Tok::Else) {
                                orelse = self.else_clause(depth);
                            }
                            break;
                        }
                    }
                }
                let mut stmt: Option<Stmt> = None;
                for (test, body, hspan) in clauses.into_iter().rev() {
                    let orelse_now = match stmt.take() {
                        Some(s) => vec![s],
                        None => std::mem::take(&mut orelse),
                    };
                    let span = self.end_of(self.end_of(hspan, &body), &orelse_now);
                    stmt = Some(Stmt {
                        kind: StmtKind::If {
                            test,
                            body,
                            orelse: orelse_now,
                        },
                        span,
                    });
                }
                stmt
            }
            HeaderKind::Elif(_) | HeaderKind::Else => {
                let kw = if matches!(h.kind, HeaderKind::Else) {
                    "else"
                } else {
                    "elif"
                };
                self.diags.push(
                    Diagnostic::new(Code::E0001, format!("`{kw}` without a matching `if`"))
                        .at(h.span)
                        .with_label(format!(
                            "this `{kw}` follows no `if` block at the same indentation"
                        )),
                );
                let body = self.suite(&h, inline, depth);
                body.into_iter().for_each(dismantle_stmt);
                None
            }
            HeaderKind::Try => Some(self.try_stmt(h, inline, depth)),
            HeaderKind::Except(..) | HeaderKind::Finally => {
                let kw = if matches!(h.kind, HeaderKind::Finally) {
                    "finally"
                } else {
                    "except"
                };
                self.diags.push(
                    Diagnostic::new(Code::E0001, format!("`{kw}` without a matching `try`"))
                        .at(h.span)
                        .with_label(format!(
                            "this `{kw}` follows no `try` block at the same indentation"
                        )),
                );
                let body = self.suite(&h, inline, depth);
                body.into_iter().for_each(dismantle_stmt);
                if let HeaderKind::Except(Some(e), _) = h.kind {
                    super::limits::dismantle(e);
                }
                None
            }
            HeaderKind::While(_) | HeaderKind::For(..) => {
                let body = self.suite(&h, inline, depth);
                let orelse = self.else_clause(depth);
                let span = self.end_of(self.end_of(h.span, &body), &orelse);
                let kind = match h.kind {
                    HeaderKind::For(target, iter) => StmtKind::For {
                        target,
                        iter,
                        body,
                        orelse,
                    },
                    HeaderKind::While(test) => StmtKind::While { test, body, orelse },
                    _ => return None,
                };
                Some(Stmt { kind, span })
            }
            HeaderKind::Def(name, raw, sig_span) => {
                let params = match check_params(raw) {
                    Ok(p) => Some(p),
                    Err((s, msg, help)) => {
                        let mut d = Diagnostic::new(Code::E0001, msg)
                            .at(s)
                            .with_label("this parameter");
                        if let Some(help) = help {
                            d = d.with_help(help);
                        }
                        self.diags.push(d);
                        None
                    }
                };
                let body = self.suite_of("the function definition", h.span, inline, depth);
                let Some(params) = params else {
                    body.into_iter().for_each(dismantle_stmt);
                    return None;
                };
                let start = decorators.first().map(|(_, s)| *s).unwrap_or(h.span);
                let span = self.end_of(start.to(h.span), &body);
                Some(Stmt {
                    kind: StmtKind::FunctionDef(Rc::new(FunctionDef {
                        name,
                        params,
                        decorators: decorators.into_iter().map(|(e, _)| e).collect(),
                        body,
                        span: sig_span,
                    })),
                    span,
                })
            }
        }
    }
}

impl Builder<'_> {
    /// `try:` and the `except`, `else` and `finally` clauses on the lines after its block.
    fn try_stmt(&mut self, h: Header, inline: Option<Vec<Stmt>>, depth: usize) -> Stmt {
        let body = self.suite(&h, inline, depth);
        let mut span = self.end_of(h.span, &body);
        let mut handlers: Vec<Handler> = Vec::new();
        let mut bare: Option<Span> = None;
        while self.next_line_starts_with(&Tok::Except) {
            let Some(Item::Line(line)) = self.next() else {
                break;
            };
            let Some(Line::Header(eh, inline)) = self.parse_line(line) else {
                self.skip_block(depth);
                continue;
            };
            let hbody = self.suite(&eh, inline, depth);
            span = self.end_of(span.to(eh.span), &hbody);
            if let HeaderKind::Except(typ, name) = eh.kind {
                if let Some(b) = bare {
                    self.diags.push(
                        Diagnostic::new(Code::E0001, "default 'except:' must be last")
                            .at(b)
                            .with_label("this `except:` catches every error")
                            .with_secondary(eh.span, "so this clause is never reached"),
                    );
                }
                if typ.is_none() {
                    bare = Some(eh.span);
                }
                handlers.push(Handler {
                    typ,
                    name,
                    body: hbody,
                    span: eh.span,
                });
            }
        }
        let mut orelse = Vec::new();
        if self.next_line_starts_with(&Tok::Else) {
            if handlers.is_empty() {
                if let Some((Item::Line(l), _)) = self.peek() {
                    let at = l.first().map(|(_, s)| self.sp(*s)).unwrap_or(h.span);
                    self.diags.push(
                        Diagnostic::new(Code::E0001, "`else` after `try` needs an `except` clause")
                            .at(at)
                            .with_label("no `except` before this `else`"),
                    );
                }
            }
            orelse = self.else_clause(depth);
            span = self.end_of(span, &orelse);
        }
        let mut finalbody = Vec::new();
        let mut has_finally = false;
        if self.next_line_starts_with(&Tok::Finally) {
            if let Some(Item::Line(line)) = self.next() {
                match self.parse_line(line) {
                    Some(Line::Header(fh, inline)) => {
                        has_finally = true;
                        finalbody = self.suite(&fh, inline, depth);
                        span = self.end_of(span.to(fh.span), &finalbody);
                    }
                    _ => {
                        has_finally = true;
                        self.skip_block(depth);
                    }
                }
            }
        }
        if handlers.is_empty() && !has_finally {
            let at_end = self.peek().is_none();
            let (at, diags) = match self.next_token_span() {
                Some(s) => (self.sp(s), &mut self.diags),
                None => (span, &mut self.eof_diags),
            };
            diags.push(
                Diagnostic::new(
                    Code::E0001,
                    "expected `except` or `finally` block after `try`",
                )
                .at(at)
                .with_label("expected `except` or `finally` here")
                .with_secondary(h.span, "the `try` starts here"),
            );
            if at_end {
                self.end.awaiting_body = true;
            }
        }
        Stmt {
            kind: StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            },
            span,
        }
    }
}

fn dismantle_line(line: Line) {
    match line {
        Line::Simple(stmts) => stmts.into_iter().for_each(dismantle_stmt),
        Line::Decorator(e, _) => super::limits::dismantle(e),
        Line::Header(h, inline) => {
            match h.kind {
                HeaderKind::If(e) | HeaderKind::Elif(e) | HeaderKind::While(e) => {
                    super::limits::dismantle(e)
                }
                HeaderKind::For(t, i) => {
                    super::limits::dismantle(t);
                    super::limits::dismantle(i);
                }
                HeaderKind::Except(Some(e), _) => super::limits::dismantle(e),
                HeaderKind::Else
                | HeaderKind::Def(..)
                | HeaderKind::Try
                | HeaderKind::Except(None, _)
                | HeaderKind::Finally => {}
            }
            inline.into_iter().flatten().for_each(dismantle_stmt);
        }
    }
}
