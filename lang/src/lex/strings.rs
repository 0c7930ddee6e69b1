//! String literals: scanning (a logos callback), escapes, and f-strings.

use super::{Raw, Tok};
use crate::ast::FStringPart;
use crate::diag::{Code, Diagnostic};
use crate::span::{FileId, Span};
use std::ops::Range;
use std::rc::Rc;

/// logos callback after `prefix` + quote: scans to the closing quote. `false` when unterminated
/// (a one-line string stops before the line break, a triple-quoted one at the end of input).
pub(super) fn scan_string(lex: &mut logos::Lexer<Raw>) -> bool {
    let q = match lex.slice().as_bytes().last() {
        Some(q) => *q,
        None => return false,
    };
    let triple = lex.remainder().as_bytes().starts_with(&[q, q]);
    if triple {
        lex.bump(2);
    }
    let bytes = lex.remainder().as_bytes();
    let mut i = 0;
    // Every stop is at an ASCII byte or at the end, so `bump` lands on a char boundary.
    loop {
        match bytes.get(i) {
            None => {
                lex.bump(bytes.len());
                return false;
            }
            Some(b'\\') => {
                i += match (bytes.get(i + 1), bytes.get(i + 2)) {
                    (Some(b'\r'), Some(b'\n')) => 3,
                    (None, _) => 1,
                    _ => 2,
                };
            }
            Some(&c) if c == q => {
                if !triple {
                    lex.bump(i + 1);
                    return true;
                }
                if bytes.get(i + 1) == Some(&q) && bytes.get(i + 2) == Some(&q) {
                    lex.bump(i + 3);
                    return true;
                }
                i += 1;
            }
            Some(b'\n' | b'\r') if !triple => {
                lex.bump(i);
                return false;
            }
            Some(_) => i += 1,
        }
    }
}

/// The parts of a string token's text.
struct Shape {
    raw: bool,
    fstr: bool,
    bytes: bool,
    prefix_ok: bool,
    /// length of prefix + opening quote(s)
    open_len: usize,
    triple: bool,
}

fn shape(text: &str) -> Shape {
    let prefix_len = text
        .bytes()
        .take_while(|b| *b != b'\'' && *b != b'"')
        .count();
    let prefix = text.get(..prefix_len).unwrap_or("").to_ascii_lowercase();
    let q = text.as_bytes().get(prefix_len).copied().unwrap_or(b'"');
    let rest = text.as_bytes().get(prefix_len + 1..).unwrap_or(&[]);
    let triple = rest.starts_with(&[q, q]);
    let prefix_ok = matches!(
        prefix.as_str(),
        "" | "r" | "u" | "f" | "b" | "rf" | "fr" | "rb" | "br"
    );
    Shape {
        raw: prefix.contains('r'),
        fstr: prefix.contains('f'),
        bytes: prefix.contains('b'),
        prefix_ok,
        open_len: prefix_len + if triple { 3 } else { 1 },
        triple,
    }
}

/// Whether the string opening at `start` is triple-quoted, and the span of its opening quote(s)
/// (with the prefix).
pub(super) fn opening(text: &str, start: usize) -> (bool, Range<usize>) {
    let s = shape(text);
    (s.triple, start..start + s.open_len)
}

/// Decodes a terminated string token `source[range]` into `Tok::Str` or `Tok::FStr`.
pub(super) fn decode(
    source: &str,
    range: Range<usize>,
    file: FileId,
    fields: super::Fields,
    diags: &mut Vec<Diagnostic>,
) -> Tok {
    let text = source.get(range.clone()).unwrap_or("");
    let s = shape(text);
    let span = Span::new(file, range.start, range.end);
    if !s.prefix_ok {
        diags.push(
            Diagnostic::new(Code::E0001, "invalid string prefix")
                .at(Span::new(file, range.start, range.start + s.open_len))
                .with_help("the prefixes are `r`, `f`, `rf` and `u`"),
        );
        return Tok::Error;
    }
    if s.bytes {
        diags.push(
            Diagnostic::new(Code::E0001, "bytes literals are not supported in Tessera")
                .at(span)
                .with_help("use a `str` literal"),
        );
        return Tok::Error;
    }
    let close_len = if s.triple { 3 } else { 1 };
    let body_start = range.start + s.open_len;
    let body_end = range.end.saturating_sub(close_len).max(body_start);
    let before = diags.len();
    let tok = if s.fstr {
        let parts = fstring(source, body_start..body_end, s.raw, file, fields, diags);
        Tok::FStr(parts.into())
    } else {
        let body = source.get(body_start..body_end).unwrap_or("");
        Tok::Str(unescape(body, body_start, s.raw, file, diags).into())
    };
    if diags.len() > before {
        Tok::Error
    } else {
        tok
    }
}

/// Decodes escapes in `body` (which starts at byte `at` of the file).
fn unescape(body: &str, at: usize, raw: bool, file: FileId, diags: &mut Vec<Diagnostic>) -> String {
    if raw || !body.contains('\\') {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            '\n' => {}
            '\r' => {
                if let Some((_, '\n')) = chars.peek() {
                    chars.next();
                }
            }
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek() {
                        Some((_, d @ '0'..='7')) => {
                            v = v * 8 + d.to_digit(8).unwrap_or(0);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut got = 0;
                while got < n {
                    match chars.peek().and_then(|(_, d)| d.to_digit(16)) {
                        Some(d) => {
                            v = v.wrapping_mul(16).wrapping_add(d);
                            chars.next();
                            got += 1;
                        }
                        None => break,
                    }
                }
                let end = chars.peek().map(|(j, _)| *j).unwrap_or(body.len());
                let espan = Span::new(file, at + i, at + end);
                match char::from_u32(v) {
                    Some(ch) if got == n => out.push(ch),
                    _ if got < n => diags.push(
                        Diagnostic::new(Code::E0001, format!("invalid `\\{e}` escape"))
                            .at(espan)
                            .with_label(format!("`\\{e}` needs exactly {n} hex digits")),
                    ),
                    _ => diags.push(
                        Diagnostic::new(Code::E0001, "invalid Unicode escape")
                            .at(espan)
                            .with_label("not a Unicode scalar value"),
                    ),
                }
            }
            'N' => {
                let end = chars.peek().map(|(j, _)| *j).unwrap_or(body.len());
                diags.push(
                    Diagnostic::new(Code::E0001, "`\\N{...}` escapes are not supported")
                        .at(Span::new(file, at + i, at + end))
                        .with_help("use `\\u` with the code point"),
                );
            }
            other => {
                // Python keeps unknown escapes as they are.
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Splits an f-string body `source[range]` into literal text and replacement fields.
fn fstring(
    source: &str,
    range: Range<usize>,
    raw: bool,
    file: FileId,
    fields: super::Fields,
    diags: &mut Vec<Diagnostic>,
) -> Vec<FStringPart> {
    let body = source.get(range.clone()).unwrap_or("");
    let b = body.as_bytes();
    let at = range.start;
    let mut parts: Vec<FStringPart> = Vec::new();
    let mut lit_start = 0; // start of pending literal text (byte index into body)
    let mut lit = String::new();
    let mut i = 0;
    let flush_lit = |lit: &mut String, parts: &mut Vec<FStringPart>| {
        if !lit.is_empty() {
            parts.push(FStringPart::Literal(std::mem::take(lit).into()));
        }
    };
    while i < b.len() {
        match b.get(i) {
            Some(b'{') if b.get(i + 1) == Some(&b'{') => {
                lit.push_str(&unescape(
                    body.get(lit_start..i).unwrap_or(""),
                    at + lit_start,
                    raw,
                    file,
                    diags,
                ));
                lit.push('{');
                i += 2;
                lit_start = i;
            }
            Some(b'}') if b.get(i + 1) == Some(&b'}') => {
                lit.push_str(&unescape(
                    body.get(lit_start..i).unwrap_or(""),
                    at + lit_start,
                    raw,
                    file,
                    diags,
                ));
                lit.push('}');
                i += 2;
                lit_start = i;
            }
            Some(b'}') => {
                diags.push(
                    Diagnostic::new(Code::E0001, "f-string: single `}` is not allowed")
                        .at(Span::new(file, at + i, at + i + 1))
                        .with_help("write `}}` for a literal `}`"),
                );
                return parts;
            }
            Some(b'{') => {
                lit.push_str(&unescape(
                    body.get(lit_start..i).unwrap_or(""),
                    at + lit_start,
                    raw,
                    file,
                    diags,
                ));
                match field(source, at, body, i, file, fields, diags) {
                    Some((mut field_parts, next)) => {
                        // `{x=}` puts its own text in front
                        if let Some(FStringPart::Literal(t)) = field_parts.first() {
                            lit.push_str(t);
                            field_parts.remove(0);
                        }
                        flush_lit(&mut lit, &mut parts);
                        parts.extend(field_parts);
                        i = next;
                        lit_start = i;
                    }
                    None => return parts,
                }
            }
            Some(b'\\') if !raw && b.get(i + 1) != Some(&b'{') => i += 2,
            _ => i += 1,
        }
    }
    let tail = body.get(lit_start..).unwrap_or("");
    lit.push_str(&unescape(tail, at + lit_start, raw, file, diags));
    flush_lit(&mut lit, &mut parts);
    parts
}

/// Parses the replacement field starting at `body[open]` (a `{`). Returns its parts (an optional
/// literal for `{x=}`, then the expression) and the index after the closing `}`.
fn field(
    source: &str,
    at: usize,
    body: &str,
    open: usize,
    file: FileId,
    fields: super::Fields,
    diags: &mut Vec<Diagnostic>,
) -> Option<(Vec<FStringPart>, usize)> {
    let b = body.as_bytes();
    let open_span = Span::new(file, at + open, at + open + 1);
    let unclosed = |diags: &mut Vec<Diagnostic>| {
        diags.push(
            Diagnostic::new(Code::E0001, "f-string: expecting `}`")
                .at(open_span)
                .with_label("this `{` is never closed")
                .with_help("write `{{` for a literal `{`"),
        );
    };
    // Find the end of the expression: `}`, `!`, `:` or a `=` debug marker at bracket depth 0.
    let mut depth = 0usize;
    let mut i = open + 1;
    let mut quote: Option<u8> = None;
    let mut debug = false;
    let expr_end;
    loop {
        let Some(&c) = b.get(i) else {
            unclosed(diags);
            return None;
        };
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' => quote = Some(c),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' if depth > 0 => depth -= 1,
            b'}' if depth > 0 => depth -= 1,
            b'}' | b':' if depth == 0 => {
                expr_end = i;
                break;
            }
            b'!' if depth == 0 && b.get(i + 1) != Some(&b'=') => {
                expr_end = i;
                break;
            }
            b'=' if depth == 0
                && b.get(i + 1) != Some(&b'=')
                && !matches!(b.get(i.wrapping_sub(1)), Some(b'=' | b'!' | b'<' | b'>')) =>
            {
                debug = true;
                expr_end = i;
                i += 1;
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let expr_text = body.get(open + 1..expr_end).unwrap_or("");
    let expr_range = at + open + 1..at + expr_end;
    if expr_text.trim().is_empty() {
        diags.push(
            Diagnostic::new(Code::E0001, "f-string: empty expression not allowed").at(Span::new(
                file,
                at + open,
                at + expr_end + 1,
            )),
        );
        return None;
    }
    if fields.depth >= super::MAX_FSTRING_DEPTH {
        diags.push(
            Diagnostic::new(Code::E0001, "f-strings are nested too deeply").at(Span::new(
                file,
                expr_range.start,
                expr_range.end,
            )),
        );
        return None;
    }
    let expr = match (fields.parse)(source, expr_range, file, fields.depth + 1) {
        Ok(e) => e,
        Err(ds) => {
            diags.extend(ds);
            return None;
        }
    };
    let mut conversion = None;
    if debug {
        // skip spaces after `=`
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
    }
    let debug_end = i;
    if b.get(i) == Some(&b'!') {
        let c = b.get(i + 1).copied();
        match c {
            Some(c @ (b'r' | b's' | b'a')) => conversion = Some(c as char),
            _ => {
                diags.push(
                    Diagnostic::new(Code::E0001, "f-string: invalid conversion character")
                        .at(Span::new(file, at + i, at + i + 1))
                        .with_help("expected `!r`, `!s` or `!a`"),
                );
                return None;
            }
        }
        i += 2;
    }
    let mut format_spec = None;
    match b.get(i) {
        Some(b':') => {
            let spec_start = i + 1;
            let mut j = spec_start;
            loop {
                match b.get(j) {
                    None => {
                        unclosed(diags);
                        return None;
                    }
                    Some(b'}') => break,
                    Some(b'{') => {
                        diags.push(
                            Diagnostic::new(
                                Code::E0001,
                                "f-string: nested replacement fields in a format spec are not supported",
                            )
                            .at(Span::new(file, at + j, at + j + 1)),
                        );
                        return None;
                    }
                    Some(_) => j += 1,
                }
            }
            format_spec = Some(Rc::from(body.get(spec_start..j).unwrap_or("")));
            i = j;
        }
        Some(b'}') => {}
        _ => {
            unclosed(diags);
            return None;
        }
    }
    // b[i] == '}'
    let mut parts = Vec::new();
    if debug {
        let text = body.get(open + 1..debug_end).unwrap_or("");
        parts.push(FStringPart::Literal(Rc::from(text)));
        if conversion.is_none() && format_spec.is_none() {
            conversion = Some('r');
        }
    }
    parts.push(FStringPart::Expr {
        expr,
        conversion,
        format_spec,
    });
    Some((parts, i + 1))
}
