//! Turns chumsky's `Rich` errors into human diagnostics: one short expectation
//! ("expected an expression, found `)`"), not the list of every token that could follow.

use crate::diag::{Code, Diagnostic};
use crate::lex::Tok;
use crate::span::{FileId, Span};
use chumsky::error::{Rich, RichPattern, RichReason};
use chumsky::span::SimpleSpan;

/// What the line is, for messages like "expected `:` after the `if` condition".
fn header_context(first: Option<&Tok>) -> Option<&'static str> {
    Some(match first? {
        Tok::If => "after the `if` condition",
        Tok::Elif => "after the `elif` condition",
        Tok::Else => "after `else`",
        Tok::While => "after the `while` condition",
        Tok::For => "after the `for` loop header",
        Tok::Def => "after the function signature",
        Tok::Try => "after `try`",
        Tok::Except => "after the `except` clause",
        Tok::Finally => "after `finally`",
        _ => return None,
    })
}

/// Tokens that could merely continue what came before (an operator, a call, a tuple...);
/// they are left out of "expected ..." when anything more specific is there.
fn is_continuation(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Plus
            | Tok::Minus
            | Tok::Star
            | Tok::Slash
            | Tok::DSlash
            | Tok::Percent
            | Tok::DStar
            | Tok::At
            | Tok::EqEq
            | Tok::NotEq
            | Tok::Lt
            | Tok::Le
            | Tok::Gt
            | Tok::Ge
            | Tok::LParen
            | Tok::LBracket
            | Tok::Dot
            | Tok::If
            | Tok::Not
            | Tok::In
            | Tok::Is
            | Tok::NotIn
            | Tok::IsNot
            | Tok::And
            | Tok::Or
            | Tok::Assign
            | Tok::AugAssign(_)
            | Tok::Semi
            | Tok::For
            | Tok::Arrow
            | Tok::Comma
    )
}

fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} or {}", rest.join(", "), last),
    }
}

/// Converts one parse error on a line whose first token is `first`.
pub(crate) fn to_diagnostic(
    err: &Rich<'_, Tok, SimpleSpan>,
    first: Option<&Tok>,
    file: FileId,
) -> Diagnostic {
    let s = err.span();
    let span = Span::new(file, s.start, s.end);
    let (expected, found) = match err.reason() {
        RichReason::Custom(msg) => return Diagnostic::new(Code::E0001, msg.clone()).at(span),
        RichReason::ExpectedFound { expected, found } => (expected, found.as_deref()),
    };
    let found_text = found
        .map(Tok::describe)
        .unwrap_or_else(|| "end of line".to_string());

    let mut labels: Vec<String> = Vec::new();
    let mut toks: Vec<Tok> = Vec::new();
    let mut end_ok = false;
    for p in expected {
        match p {
            RichPattern::Label(l) => {
                let l = l.to_string();
                if !labels.contains(&l) {
                    labels.push(l);
                }
            }
            RichPattern::Token(t) => {
                let t: &Tok = t;
                if !toks.contains(t) {
                    toks.push(t.clone());
                }
            }
            RichPattern::EndOfInput => end_ok = true,
            _ => {}
        }
    }
    let closer_expected = toks
        .iter()
        .any(|t| matches!(t, Tok::RParen | Tok::RBracket | Tok::RBrace));
    let found_assign = matches!(found, Some(Tok::Assign));
    let compare_help = "to compare two values, use `==`";

    // `if x y:` / `if x` / `def f() x:` — the header's `:` is what is missing
    if toks.contains(&Tok::Colon) && !closer_expected && labels.iter().all(|l| l != "an expression")
    {
        if let Some(ctx) = header_context(first) {
            let mut d = Diagnostic::new(
                Code::E0001,
                format!("expected `:` {ctx}, found {found_text}"),
            )
            .at(span)
            .with_label("expected `:`");
            d = if found_assign {
                d.with_help(format!("did you mean `==`? ({compare_help})"))
            } else {
                d.with_help("a block header ends with `:`")
            };
            return d;
        }
    }

    // constructs of Python that `.tsr` leaves out
    let unsupported = match found {
        Some(Tok::For) if toks.contains(&Tok::RBracket) => {
            Some("only one `for` clause in a list comprehension is supported in Tessera")
        }
        Some(Tok::For) if toks.contains(&Tok::RParen) => {
            Some("generator expressions are not supported in Tessera")
        }
        Some(Tok::DStar) if labels.iter().any(|l| l == "an expression") => {
            Some("`**` unpacking is not supported in Tessera")
        }
        Some(Tok::Star) if labels.iter().any(|l| l == "an expression") => {
            Some("`*` unpacking is only supported in call arguments in Tessera")
        }
        _ => None,
    };
    if let Some(msg) = unsupported {
        return Diagnostic::new(Code::E0001, msg)
            .at(span)
            .with_label("not supported");
    }

    // the specific things that were possible here
    if labels.iter().any(|l| l == "an expression") {
        // an identifier is an expression too
        labels.retain(|l| l != "an identifier");
    }
    let mut wanted: Vec<String> = labels.clone();
    let significant: Vec<&Tok> = toks
        .iter()
        .filter(|t| !is_continuation(t) || (**t == Tok::Comma && closer_expected))
        .collect();
    wanted.extend(significant.iter().map(|t| match t.symbol() {
        Some(s) => format!("`{s}`"),
        None => t.describe(),
    }));
    if toks.contains(&Tok::In) && matches!(first, Some(Tok::For)) && labels.is_empty() {
        wanted.push("`in`".to_string());
    }

    let mut d = if wanted.is_empty() {
        // only operators could have continued: the statement should have ended here
        let mut d = Diagnostic::new(
            Code::E0001,
            if end_ok {
                format!("expected end of line, found {found_text}")
            } else {
                format!("unexpected {found_text}")
            },
        )
        .at(span)
        .with_label("unexpected here");
        if matches!(
            found,
            Some(Tok::Name(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_) | Tok::FStr(_))
        ) {
            d = d.with_help("did you forget an operator or a comma?");
        }
        d
    } else {
        let what = join_or(&wanted);
        Diagnostic::new(Code::E0001, format!("expected {what}, found {found_text}"))
            .at(span)
            .with_label(format!("expected {what}"))
    };
    if found_assign && matches!(first, Some(Tok::If | Tok::Elif | Tok::While | Tok::Assert)) {
        d = d.with_help(format!("did you mean `==`? ({compare_help})"));
    } else if found_assign && d.help.is_none() {
        d = d.with_help(compare_help);
    }
    d
}
