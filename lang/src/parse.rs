//! Parser: tokens → [`crate::ast::Module`].
//!
//! `lex` (logos) → `layout` (Newline/Indent/Dedent) → one chumsky parse per logical line
//! (`grammar.rs`) → blocks assembled from lines (`block.rs`). Parsing line by line is what makes
//! error recovery simple: a bad line is reported and skipped (with the block it opens), and the
//! next line starts afresh, so one run reports every bad line.

mod block;
mod errors;
mod fold;
mod grammar;
pub(crate) mod limits;
mod params;

pub use limits::{MAX_EXPR_DEPTH, MAX_NESTING};

use crate::ast::{Expr, Module};
use crate::diag::{Code, Diagnostic};
use crate::lex::{self, Tok};
use crate::span::{FileId, Span};
use block::{Builder, EndState};
use std::ops::Range;

/// Parses a whole file or REPL cell. On failure returns every syntax error found (error recovery).
pub fn parse_module(source: &str, file: FileId) -> Result<Module, Vec<Diagnostic>> {
    let mut parsed = parse_all(source, file);
    if parsed.diags.is_empty() && parsed.eof_diags.is_empty() {
        Ok(Module { body: parsed.body })
    } else {
        parsed.body.into_iter().for_each(limits::dismantle_stmt);
        parsed.diags.append(&mut parsed.eof_diags);
        Err(parsed.diags)
    }
}

/// Parses a single expression (REPL commands like `:graph f(x)`).
pub fn parse_expr(source: &str, file: FileId) -> Result<Expr, Vec<Diagnostic>> {
    parse_expr_in(source, 0..source.len(), file, 0)
}

/// Parses `source[range]` as one expression; spans are offsets into the whole `source` (a REPL
/// command's argument inside its cell).
pub fn parse_expr_at(
    source: &str,
    range: Range<usize>,
    file: FileId,
) -> Result<Expr, Vec<Diagnostic>> {
    parse_expr_in(source, range, file, 0)
}

struct Parsed {
    body: Vec<crate::ast::Stmt>,
    diags: Vec<Diagnostic>,
    /// errors only because the input ended early (also in `diags` for `parse_module`)
    eof_diags: Vec<Diagnostic>,
    end: EndState,
    open_bracket: bool,
    open_triple_quote: bool,
    trailing_continuation: bool,
}

fn parse_all(source: &str, file: FileId) -> Parsed {
    let lexed = lex::lex(source, 0..source.len(), file, fields(0));
    let mut diags = lexed.diags;
    let layout = lex::layout(source, file, lexed.toks, false);
    diags.extend(layout.diags);
    if layout.too_deep {
        // One error for the too-deep nesting: its blocks are not parsed (each would report
        // a missing indented block).
        return Parsed {
            body: Vec::new(),
            diags,
            eof_diags: Vec::new(),
            end: EndState::default(),
            open_bracket: layout.open_bracket,
            open_triple_quote: lexed.open_triple_quote,
            trailing_continuation: lexed.trailing_continuation,
        };
    }
    let mut builder = Builder::new(source, &layout.toks, file);
    let body = builder.module();
    diags.extend(builder.diags);
    misplaced_jumps(&body, &mut diags);
    global_params(&body, &mut diags);
    let eof_diags = builder.eof_diags;
    let end = builder.end;
    diags.sort_by_key(|d| d.span.map(|s| (s.lo, s.hi)).unwrap_or((u32::MAX, u32::MAX)));
    Parsed {
        body,
        diags,
        eof_diags,
        end,
        open_bracket: layout.open_bracket,
        open_triple_quote: lexed.open_triple_quote,
        trailing_continuation: lexed.trailing_continuation,
    }
}

/// `break` and `continue` outside a loop, and `return` outside a function, are syntax errors
/// as in Python (found before anything runs, not when the statement is reached). A loop's
/// `else` block is outside that loop; a `def` starts afresh (a loop around it does not count).
fn misplaced_jumps(body: &[crate::ast::Stmt], diags: &mut Vec<Diagnostic>) {
    use crate::ast::StmtKind;
    // (statements, inside a loop, inside a function); a stack rather than recursion.
    let mut todo: Vec<(&[crate::ast::Stmt], bool, bool)> = vec![(body, false, false)];
    while let Some((stmts, in_loop, in_def)) = todo.pop() {
        for st in stmts {
            let bad = match &st.kind {
                StmtKind::Break if !in_loop => Some(("'break' outside loop", "not in a loop")),
                StmtKind::Continue if !in_loop => {
                    Some(("'continue' not properly in loop", "not in a loop"))
                }
                StmtKind::Return(_) if !in_def => {
                    Some(("'return' outside function", "not in a function"))
                }
                StmtKind::If { body, orelse, .. } => {
                    todo.push((body, in_loop, in_def));
                    todo.push((orelse, in_loop, in_def));
                    None
                }
                StmtKind::For { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
                    todo.push((body, true, in_def));
                    todo.push((orelse, in_loop, in_def));
                    None
                }
                StmtKind::FunctionDef(f) => {
                    todo.push((&f.body, false, true));
                    None
                }
                StmtKind::Try {
                    body,
                    handlers,
                    orelse,
                    finalbody,
                } => {
                    todo.push((body, in_loop, in_def));
                    todo.push((orelse, in_loop, in_def));
                    todo.push((finalbody, in_loop, in_def));
                    for h in handlers {
                        todo.push((&h.body, in_loop, in_def));
                    }
                    None
                }
                _ => None,
            };
            if let Some((msg, label)) = bad {
                diags.push(
                    Diagnostic::new(Code::E0001, msg)
                        .at(st.span)
                        .with_label(label),
                );
            }
        }
    }
}

/// `global x` in a function whose parameter is `x` is E0001, as Python's SyntaxError ("name 'x'
/// is parameter and global").
fn global_params(body: &[crate::ast::Stmt], diags: &mut Vec<Diagnostic>) {
    use crate::ast::StmtKind;
    // (statements, the parameters of the function they are in)
    let mut todo: Vec<(&[crate::ast::Stmt], Vec<&str>)> = vec![(body, Vec::new())];
    while let Some((stmts, params)) = todo.pop() {
        for st in stmts {
            match &st.kind {
                StmtKind::Global(names) => {
                    for n in names.iter().filter(|n| params.contains(&&*n.name)) {
                        diags.push(
                            Diagnostic::new(
                                Code::E0001,
                                format!("name '{}' is parameter and global", n.name),
                            )
                            .at(n.span)
                            .with_label("a parameter of this function"),
                        );
                    }
                }
                StmtKind::FunctionDef(f) => {
                    let ps = f.params.iter().map(|p| &*p.name.name).collect();
                    todo.push((&f.body, ps));
                }
                StmtKind::If { body, orelse, .. }
                | StmtKind::For { body, orelse, .. }
                | StmtKind::While { body, orelse, .. } => {
                    todo.push((body, params.clone()));
                    todo.push((orelse, params.clone()));
                }
                StmtKind::Try {
                    body,
                    handlers,
                    orelse,
                    finalbody,
                } => {
                    todo.push((body, params.clone()));
                    todo.push((orelse, params.clone()));
                    todo.push((finalbody, params.clone()));
                    for h in handlers {
                        todo.push((&h.body, params.clone()));
                    }
                }
                _ => {}
            }
        }
    }
}

/// Parses `source[range]` as one expression (also the fields of f-strings, at `fdepth`).
/// The lexer's f-string field parser, [`parse_expr_in`], at `depth` fields deep (0: the
/// top of a file, for a caller of [`lex::lex`]).
pub fn fields(depth: u32) -> lex::Fields {
    lex::Fields {
        parse: parse_expr_in,
        depth,
    }
}

pub(crate) fn parse_expr_in(
    source: &str,
    range: Range<usize>,
    file: FileId,
    fdepth: u32,
) -> Result<Expr, Vec<Diagnostic>> {
    let lexed = lex::lex(source, range.clone(), file, fields(fdepth));
    let mut diags = lexed.diags;
    let layout = lex::layout(source, file, lexed.toks, true);
    diags.extend(layout.diags);
    let toks = layout.toks;
    if !diags.is_empty() {
        return Err(diags);
    }
    let Some(first) = toks.first() else {
        let at = range.end;
        return Err(vec![Diagnostic::new(Code::E0001, "expected an expression")
            .at(Span::new(file, range.start, at))]);
    };
    let first_tok = first.0.clone();
    if let Err(d) = limits::precheck(&toks, file) {
        return Err(d.into_iter().map(|d| *d).collect());
    }
    let expr = match grammar::Grammars::new().expr(&toks, file) {
        Ok(e) => e,
        Err(e) => return Err(vec![errors::to_diagnostic(&e, Some(&first_tok), file)]),
    };
    if let Some(s) = limits::too_deep(&expr, MAX_EXPR_DEPTH) {
        limits::dismantle(expr);
        return Err(vec![Diagnostic::new(
            Code::E0001,
            "expression is too complex",
        )
        .at(s)
        .with_label(format!("nested more than {MAX_EXPR_DEPTH} levels deep"))]);
    }
    Ok(expr)
}

/// Whether a REPL/Jupyter cell is complete (SPEC §8, `is_complete`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Completeness {
    /// Parses (or fails for a reason more input cannot fix).
    Complete,
    /// More lines are needed: an open bracket, a trailing `:` block header, an unterminated
    /// triple-quoted string, a line continuation.
    Incomplete,
    /// A syntax error that more input cannot fix.
    Invalid,
}

/// Classifies a cell for the REPL's multi-line input and Jupyter's `is_complete_request`,
/// following Python's interactive rules (`codeop`):
/// - `Incomplete` when the text ends inside brackets or a triple-quoted string, after a `\`
///   continuation, or after a block header (or decorator) whose body has not started; and when
///   its last statement is compound (`if`, `for`, `while`, `def`) and no blank line ends it yet;
/// - `Invalid` for any other syntax error (one more input cannot fix);
/// - `Complete` otherwise (an empty or comment-only cell included).
///
/// "A blank line ends it": after the last non-blank line there is a line break, then a line
/// with only spaces, then another line break (`"...pass\n\n"`).
pub fn is_complete(source: &str) -> Completeness {
    let parsed = parse_all(source, 0);
    let diags = parsed.diags;
    parsed.body.into_iter().for_each(limits::dismantle_stmt);
    // errors that more input could fix all sit on the last logical line; anything before it is
    // final
    let last_line_start = last_logical_line_start(source);
    let fixable_only = diags.iter().all(|d| {
        d.span
            .map(|s| s.lo as usize >= last_line_start)
            .unwrap_or(false)
    });
    let eof_open = parsed.open_bracket || parsed.open_triple_quote || parsed.trailing_continuation;
    if eof_open {
        return if fixable_only {
            Completeness::Incomplete
        } else {
            Completeness::Invalid
        };
    }
    if parsed.end.awaiting_body {
        return if diags.is_empty() {
            Completeness::Incomplete
        } else {
            Completeness::Invalid
        };
    }
    if !diags.is_empty() {
        return Completeness::Invalid;
    }
    if parsed.end.last_is_compound && !ends_with_blank_line(source) {
        return Completeness::Incomplete;
    }
    Completeness::Complete
}

/// Byte offset where the last non-blank line starts (following `\` continuations and open
/// brackets is not needed: those cases only add errors on the last line or later).
fn last_logical_line_start(source: &str) -> usize {
    let trimmed = source.trim_end();
    let mut start = trimmed.rfind(['\n', '\r']).map(|i| i + 1).unwrap_or(0);
    // walk back over lines inside an open bracket or string: take the start of the line
    // holding the first token of the last logical line
    let lexed = lex::lex(source, 0..source.len(), 0, fields(0));
    let layout = lex::layout(source, 0, lexed.toks, false);
    let toks = layout.toks;
    // the last `Newline` before the final one ends the previous logical line
    let mut newlines = toks
        .iter()
        .enumerate()
        .filter(|(_, (t, _))| *t == Tok::Newline)
        .map(|(i, _)| i)
        .rev();
    let _last = newlines.next();
    let prev = newlines.next();
    let first_of_last = match prev {
        Some(i) => toks.get(i + 1..),
        None => toks.get(..),
    };
    if let Some((_, s)) = first_of_last.and_then(|t| {
        t.iter()
            .find(|(t, _)| !matches!(t, Tok::Indent | Tok::Dedent))
    }) {
        start = start.min(s.start);
    }
    start
}

fn ends_with_blank_line(source: &str) -> bool {
    let trimmed_len = source.trim_end().len();
    let tail = source.get(trimmed_len..).unwrap_or("");
    let breaks =
        tail.matches('\n').count() + tail.matches('\r').count() - tail.matches("\r\n").count();
    breaks >= 2
}
