//! Python layout: `Newline`, `Indent` and `Dedent` tokens from an indentation stack
//! (as ruff's `lexer/indentation.rs` and CPython's tokenizer do).
//!
//! - no `Newline` inside brackets, none for blank or comment-only lines;
//! - a tab in indentation is E0003; so is a dedent to a width not on the stack;
//! - an unclosed bracket at the end is E0002, a stray or mismatched closer E0001;
//! - more than [`MAX_NESTING`] open brackets is E0001 (the token is replaced by `Tok::Error`,
//!   so the parser never sees the deep line).

use super::{Tok, TokSpan};
use crate::diag::{Code, Diagnostic};
use crate::span::{FileId, Span};

/// Most brackets open at once (CPython: "too many nested parentheses" at 200).
pub const MAX_NESTING: usize = 200;
/// Most indentation levels (CPython: 100).
pub const MAX_INDENT_LEVELS: usize = 100;

/// The token stream with layout tokens.
#[derive(Debug, Default)]
pub struct Layout {
    pub toks: Vec<(Tok, TokSpan)>,
    pub diags: Vec<Diagnostic>,
    /// The input ends with brackets still open.
    pub open_bracket: bool,
    /// Indentation went past [`MAX_INDENT_LEVELS`] (reported once): the blocks below are not
    /// parsed, so nothing more is reported about them.
    pub too_deep: bool,
}

struct Level {
    width: usize,
    /// whether an `Indent` was emitted for it (a level pushed by error recovery has none)
    indent: bool,
}

/// Inserts layout tokens into `toks` (from [`super::lex`] over the whole `source`).
/// With `expr_only`, line breaks are dropped and indentation is ignored (f-string fields,
/// `parse_expr`).
pub fn layout(source: &str, file: FileId, toks: Vec<(Tok, TokSpan)>, expr_only: bool) -> Layout {
    let mut out: Vec<(Tok, TokSpan)> = Vec::with_capacity(toks.len() + 16);
    let mut diags = Vec::new();
    let mut stack = vec![Level {
        width: 0,
        indent: false,
    }];
    // open brackets: the token and its index in `out`
    let mut brackets: Vec<(Tok, TokSpan)> = Vec::new();
    let mut at_line_start = true;
    let mut nesting_reported = false;
    let mut too_deep = false;
    let sp = |s: TokSpan| Span::new(file, s.start, s.end);

    for (tok, span) in toks {
        if tok == Tok::Newline {
            if brackets.is_empty() && !at_line_start && !expr_only {
                out.push((Tok::Newline, span));
                at_line_start = true;
                nesting_reported = false;
            }
            continue;
        }
        if at_line_start && !expr_only {
            at_line_start = false;
            let lines = Lines {
                stack: &mut stack,
                out: &mut out,
                diags: &mut diags,
                too_deep: &mut too_deep,
            };
            indentation(source, file, span, lines);
        }
        let tok = match tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                if brackets.len() >= MAX_NESTING {
                    if !nesting_reported {
                        nesting_reported = true;
                        diags.push(
                            Diagnostic::new(Code::E0001, "too many nested parentheses")
                                .at(sp(span))
                                .with_label(format!(
                                    "more than {MAX_NESTING} brackets are open here"
                                )),
                        );
                    }
                    brackets.push((tok, span));
                    Tok::Error
                } else {
                    brackets.push((tok.clone(), span));
                    tok
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => match brackets.pop() {
                None => {
                    diags.push(
                        Diagnostic::new(Code::E0001, format!("unmatched {}", tok.describe()))
                            .at(sp(span))
                            .with_label("no bracket is open here"),
                    );
                    Tok::Error
                }
                Some((open, ospan)) if !closes(&open, &tok) => {
                    diags.push(
                        Diagnostic::new(
                            Code::E0001,
                            format!(
                                "closing {} does not match the opening {}",
                                tok.describe(),
                                open.describe()
                            ),
                        )
                        .at(sp(span))
                        .with_label("mismatched closing bracket")
                        .with_secondary(sp(ospan), format!("this {} is open", open.describe())),
                    );
                    Tok::Error
                }
                Some(_) => tok,
            },
            other => other,
        };
        // `not in` and `is not` are single operators
        if let Some((prev, pspan)) = out.last_mut() {
            let merged = match (&*prev, &tok) {
                (Tok::Not, Tok::In) => Some(Tok::NotIn),
                (Tok::Is, Tok::Not) => Some(Tok::IsNot),
                _ => None,
            };
            if let Some(m) = merged {
                *prev = m;
                *pspan = TokSpan::from(pspan.start..span.end);
                continue;
            }
        }
        out.push((tok, span));
    }
    let end = source.len();
    let eof = TokSpan::from(end..end);
    let open_bracket = !brackets.is_empty();
    if let Some((open, ospan)) = brackets.last() {
        let mut d = Diagnostic::new(Code::E0002, format!("unclosed {}", open.describe()))
            .at(sp(*ospan))
            .with_label(format!("this {} is never closed", open.describe()));
        if let Some((first, fspan)) = brackets.first().filter(|_| brackets.len() > 1) {
            d = d.with_secondary(
                sp(*fspan),
                format!(
                    "{} more open brackets, from this {}",
                    brackets.len() - 1,
                    first.describe()
                ),
            );
        }
        diags.push(d);
        // the line runs to the end; mark it so the parser does not report it again
        if let Some(last) = out.last_mut() {
            if last.0 != Tok::Error {
                out.push((Tok::Error, eof));
            }
        }
    }
    if !at_line_start && !expr_only {
        out.push((Tok::Newline, eof));
    }
    for level in stack.drain(1..).rev() {
        if level.indent {
            out.push((Tok::Dedent, eof));
        }
    }
    Layout {
        toks: out,
        diags,
        open_bracket,
        too_deep,
    }
}

fn closes(open: &Tok, close: &Tok) -> bool {
    matches!(
        (open, close),
        (Tok::LParen, Tok::RParen) | (Tok::LBracket, Tok::RBracket) | (Tok::LBrace, Tok::RBrace)
    )
}

/// Handles the indentation in front of the first token of a logical line.
/// The layout state `indentation` updates.
struct Lines<'a> {
    stack: &'a mut Vec<Level>,
    out: &'a mut Vec<(Tok, TokSpan)>,
    diags: &'a mut Vec<Diagnostic>,
    too_deep: &'a mut bool,
}

fn indentation(source: &str, file: FileId, first: TokSpan, lines: Lines) {
    let Lines {
        stack,
        out,
        diags,
        too_deep,
    } = lines;
    let before = source.get(..first.start).unwrap_or("");
    let line_start = before.rfind(['\n', '\r']).map(|i| i + 1).unwrap_or(0);
    let indent = source.get(line_start..first.start).unwrap_or("");
    let mut width = 0usize;
    let mut tab_reported = false;
    for (i, c) in indent.char_indices() {
        match c {
            ' ' => width += 1,
            '\t' => {
                if !tab_reported {
                    tab_reported = true;
                    diags.push(
                        Diagnostic::new(Code::E0003, "tab in indentation")
                            .at(Span::new(file, line_start + i, line_start + i + 1))
                            .with_label("this is a tab")
                            .with_help("indent with spaces only"),
                    );
                }
                width = (width / 8 + 1) * 8;
            }
            '\x0c' => width = 0,
            '\u{feff}' => {}
            _ => width += 1,
        }
    }
    let ispan = TokSpan::from(line_start..first.start);
    let top = stack.last().map(|l| l.width).unwrap_or(0);
    if width > top {
        if stack.len() > MAX_INDENT_LEVELS {
            if !*too_deep {
                *too_deep = true;
                diags.push(
                    Diagnostic::new(Code::E0003, "too many levels of indentation")
                        .at(Span::new(file, first.start, first.end))
                        .with_label(format!("more than {MAX_INDENT_LEVELS} levels deep")),
                );
            }
            stack.push(Level {
                width,
                indent: false,
            });
            return;
        }
        stack.push(Level {
            width,
            indent: true,
        });
        out.push((Tok::Indent, ispan));
        return;
    }
    while stack.len() > 1 && stack.last().map(|l| l.width > width).unwrap_or(false) {
        if let Some(level) = stack.pop() {
            if level.indent {
                out.push((Tok::Dedent, ispan));
            }
        }
    }
    let top = stack.last().map(|l| l.width).unwrap_or(0);
    if top != width {
        diags.push(
            Diagnostic::new(
                Code::E0003,
                "unindent does not match any outer indentation level",
            )
            .at(Span::new(file, first.start, first.end))
            .with_label("this line's indentation matches no enclosing block"),
        );
        stack.push(Level {
            width,
            indent: false,
        });
    }
}
