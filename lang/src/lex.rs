//! Lexer (logos) and indentation layout.
//!
//! `lex` turns source text into [`Tok`]s with byte spans, decoding literals (escapes, f-strings);
//! [`layout`] then inserts `Newline`/`Indent`/`Dedent` the way Python's tokenizer does.

mod layout;
mod strings;

pub use layout::{layout, Layout};

use crate::ast::{BinOp, Expr, FStringPart};
use crate::diag::{Code, Diagnostic};
use crate::span::{FileId, Span};
use chumsky::span::SimpleSpan;
use logos::Logos;
use std::ops::Range;
use std::rc::Rc;

/// A token span: byte offsets into the whole file.
pub type TokSpan = SimpleSpan;

/// A token as the parser sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Name(Rc<str>),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    FStr(Rc<[FStringPart]>),
    // keywords
    Def,
    Return,
    If,
    Elif,
    Else,
    For,
    In,
    While,
    Break,
    Continue,
    Pass,
    Assert,
    Try,
    Except,
    Finally,
    Global,
    As,
    And,
    Or,
    Not,
    Is,
    /// `not in` (merged by the layout pass, as Python's tokenizer does)
    NotIn,
    /// `is not`
    IsNot,
    True,
    False,
    None,
    /// A Python keyword `.tsr` does not support (`class`, `import`, `lambda`, ...).
    Reserved(&'static str),
    // punctuation
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Dot,
    Semi,
    Arrow,
    At,
    Assign,
    Plus,
    Minus,
    Star,
    Slash,
    DSlash,
    Percent,
    DStar,
    Amp,
    Pipe,
    Tilde,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    /// `+=`, `-=`, ...
    AugAssign(BinOp),
    /// A Python operator `.tsr` does not support (`^`, `<<`, `:=`, ...).
    Unsupported(&'static str),
    /// `...`, the Ellipsis constant.
    Ellipsis,
    // layout
    Newline,
    Indent,
    Dedent,
    /// Something the lexer already reported; the line it is on is not parsed further.
    Error,
}

impl Tok {
    /// How a token is named in messages: "`)`", "identifier `x`", "end of line".
    pub fn describe(&self) -> String {
        match self {
            Tok::Name(n) => format!("identifier `{n}`"),
            Tok::Int(i) => format!("integer `{i}`"),
            Tok::Float(_) => "a float literal".to_string(),
            Tok::Str(_) => "a string literal".to_string(),
            Tok::FStr(_) => "an f-string".to_string(),
            Tok::Newline => "end of line".to_string(),
            Tok::Indent => "an indent".to_string(),
            Tok::Dedent => "a dedent".to_string(),
            Tok::Error => "an invalid token".to_string(),
            Tok::Reserved(k) => format!("keyword `{k}`"),
            other => match other.symbol() {
                Some(s) if other.is_keyword() => format!("keyword `{s}`"),
                Some(s) => format!("`{s}`"),
                Option::None => "a token".to_string(),
            },
        }
    }

    fn is_keyword(&self) -> bool {
        matches!(
            self,
            Tok::Def
                | Tok::Return
                | Tok::If
                | Tok::Elif
                | Tok::Else
                | Tok::For
                | Tok::In
                | Tok::While
                | Tok::Break
                | Tok::Continue
                | Tok::Pass
                | Tok::Assert
                | Tok::And
                | Tok::Or
                | Tok::Not
                | Tok::Is
                | Tok::NotIn
                | Tok::IsNot
                | Tok::True
                | Tok::False
                | Tok::None
        )
    }

    /// The source text of a fixed token.
    pub fn symbol(&self) -> Option<&'static str> {
        Some(match self {
            Tok::Ellipsis => "...",
            Tok::Def => "def",
            Tok::Return => "return",
            Tok::If => "if",
            Tok::Elif => "elif",
            Tok::Else => "else",
            Tok::For => "for",
            Tok::In => "in",
            Tok::While => "while",
            Tok::Break => "break",
            Tok::Continue => "continue",
            Tok::Pass => "pass",
            Tok::Assert => "assert",
            Tok::Try => "try",
            Tok::Except => "except",
            Tok::Finally => "finally",
            Tok::Global => "global",
            Tok::As => "as",
            Tok::And => "and",
            Tok::Or => "or",
            Tok::Not => "not",
            Tok::Is => "is",
            Tok::NotIn => "not in",
            Tok::IsNot => "is not",
            Tok::True => "True",
            Tok::False => "False",
            Tok::None => "None",
            Tok::Reserved(k) => k,
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Dot => ".",
            Tok::Semi => ";",
            Tok::Arrow => "->",
            Tok::At => "@",
            Tok::Assign => "=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::DSlash => "//",
            Tok::Percent => "%",
            Tok::DStar => "**",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::AugAssign(op) => match op {
                BinOp::Add => "+=",
                BinOp::Sub => "-=",
                BinOp::Mul => "*=",
                BinOp::Div => "/=",
                BinOp::FloorDiv => "//=",
                BinOp::Mod => "%=",
                BinOp::Pow => "**=",
                BinOp::MatMul => "@=",
                BinOp::BitAnd => "&=",
                BinOp::BitOr => "|=",
            },
            Tok::Amp => "&",
            Tok::Pipe => "|",
            Tok::Tilde => "~",
            Tok::Unsupported(s) => s,
            _ => return Option::None,
        })
    }
}

/// The raw tokens of logos; turned into [`Tok`]s by [`lex`].
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\x0C]+")]
#[logos(skip(r"#[^\r\n]*", allow_greedy = true))]
enum Raw {
    #[regex(r"\r\n|\r|\n")]
    Newline,
    #[regex(r"\\(\r\n|\r|\n)")]
    Continuation,
    #[regex(r"[\p{XID_Start}_]\p{XID_Continue}*")]
    Ident,
    /// An opening quote with its prefix; the callback scans to the closing quote.
    /// `true` when the string is terminated.
    #[regex(r#"[rRbBfFuU]{0,2}['"]"#, strings::scan_string)]
    Str(bool),
    #[regex(r"[0-9](_?[0-9])*")]
    Dec,
    #[regex(r"0[xX](_?[0-9a-fA-F])+")]
    Hex,
    #[regex(r"0[oO](_?[0-7])+")]
    Oct,
    #[regex(r"0[bB](_?[01])+")]
    Bin,
    #[regex(r"[0-9](_?[0-9])*\.([0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?")]
    #[regex(r"\.[0-9](_?[0-9])*([eE][+-]?[0-9](_?[0-9])*)?")]
    #[regex(r"[0-9](_?[0-9])*[eE][+-]?[0-9](_?[0-9])*")]
    Float,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token(";")]
    Semi,
    #[token("->")]
    Arrow,
    #[token("@")]
    At,
    #[token("=")]
    Assign,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("//")]
    DSlash,
    #[token("%")]
    Percent,
    #[token("**")]
    DStar,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("+=")]
    AddEq,
    #[token("-=")]
    SubEq,
    #[token("*=")]
    MulEq,
    #[token("/=")]
    DivEq,
    #[token("//=")]
    FloorDivEq,
    #[token("%=")]
    ModEq,
    #[token("**=")]
    PowEq,
    #[token("@=")]
    MatMulEq,
    #[token("&=")]
    AndEq,
    #[token("|=")]
    OrEq,
    #[token("|")]
    Pipe,
    #[token("&")]
    Amp,
    #[token("~")]
    Tilde,
    #[token("^")]
    #[token("<<")]
    #[token(">>")]
    #[token("^=")]
    #[token("<<=")]
    #[token(">>=")]
    #[token(":=")]
    #[token("<>")]
    Unsupported,
    #[token("...")]
    Ellipsis,
}

/// The output of [`lex`].
#[derive(Debug, Default)]
pub struct Lexed {
    /// Tokens including one `Newline` per physical line break (the layout pass filters them).
    pub toks: Vec<(Tok, TokSpan)>,
    pub diags: Vec<Diagnostic>,
    /// The text ends inside a triple-quoted string.
    pub open_triple_quote: bool,
    /// The text ends with a `\` line continuation.
    pub trailing_continuation: bool,
}

/// Most f-strings nested inside f-string replacement fields.
const MAX_FSTRING_DEPTH: u32 = 4;

/// Lexes `source[range]`; spans are offsets into the whole `source`.
/// How the lexer parses the expression of an f-string's replacement field: the parser's
/// expression entry, passed in so that the lexer sits below the parser. It takes the source, the
/// field's byte range, the file and the depth of fields inside the expression.
pub type FieldParser = fn(&str, Range<usize>, FileId, u32) -> Result<Expr, Vec<Diagnostic>>;

/// What the lexer needs for f-strings: the field parser and how many fields deep it is.
#[derive(Copy, Clone)]
pub struct Fields {
    pub parse: FieldParser,
    pub depth: u32,
}

/// `fields` parses the expressions of f-string replacement fields and counts the fields we are
/// inside of.
pub fn lex(source: &str, range: Range<usize>, file: FileId, fields: Fields) -> Lexed {
    let base = range.start;
    let text = source.get(range).unwrap_or("");
    let mut out = Lexed::default();
    // a UTF-8 byte order mark at the start of a file is not part of the program
    let (base, text) = match text.strip_prefix('\u{feff}') {
        Some(rest) if base == 0 => (base + '\u{feff}'.len_utf8(), rest),
        _ => (base, text),
    };
    let mut lexer = Raw::lexer(text);
    while let Some(raw) = lexer.next() {
        let r = lexer.span();
        let slice = lexer.slice();
        let span = SimpleSpan::from(base + r.start..base + r.end);
        let dspan = Span::new(file, base + r.start, base + r.end);
        out.trailing_continuation = false;
        // `2j`, `1.5J`: Python's imaginary literals, which the language does not have
        if matches!(raw, Ok(Raw::Dec | Raw::Float)) {
            let rest = lexer.remainder();
            let mut chars = rest.chars();
            let imaginary = matches!(chars.next(), Some('j' | 'J'))
                && !chars
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_');
            if imaginary {
                lexer.bump(1);
                out.diags.push(
                    Diagnostic::new(Code::E0001, "imaginary literals are not supported in Tessera")
                        .at(Span::new(file, base + r.start, base + r.end + 1))
                        .with_label("an imaginary literal")
                        .with_help("make complex tensors with op.complex(re, im), e.g. op.complex(0.0, 2.0) for 2j"),
                );
                out.toks.push((
                    Tok::Error,
                    SimpleSpan::from(base + r.start..base + r.end + 1),
                ));
                continue;
            }
        }
        let tok = match raw {
            Err(()) => {
                if slice == "\\" {
                    out.trailing_continuation = lexer.remainder().trim().is_empty();
                    let msg = if out.trailing_continuation {
                        "unexpected end of file after a line continuation `\\`"
                    } else {
                        "a line continuation `\\` must be the last character on its line"
                    };
                    out.diags.push(
                        Diagnostic::new(Code::E0001, msg)
                            .at(dspan)
                            .with_label("here"),
                    );
                } else {
                    let c = slice.chars().next().unwrap_or('?');
                    let mut d = Diagnostic::new(
                        Code::E0001,
                        format!("invalid character `{}` in the source", c.escape_debug()),
                    )
                    .at(dspan)
                    .with_label("not valid here");
                    if c == '!' {
                        d = d.with_help("use `not` for negation, `!=` for inequality");
                    } else if c == '$' || c == '?' || c == '`' {
                        d = d.with_help("this character has no meaning in Tessera (Python) code");
                    }
                    out.diags.push(d);
                }
                Tok::Error
            }
            Ok(Raw::Continuation) => {
                out.trailing_continuation = lexer.remainder().is_empty();
                continue;
            }
            Ok(Raw::Newline) => Tok::Newline,
            Ok(Raw::Ident) => keyword(slice),
            Ok(Raw::Str(terminated)) => {
                let start = base + r.start;
                if !terminated {
                    let (triple, qspan) = strings::opening(slice, start);
                    if triple {
                        out.open_triple_quote = true;
                    }
                    out.diags.push(
                        Diagnostic::new(
                            Code::E0002,
                            if triple {
                                "unterminated triple-quoted string"
                            } else {
                                "unterminated string literal"
                            },
                        )
                        .at(Span::new(file, qspan.start, qspan.end))
                        .with_label("this string is never closed")
                        .with_help(if triple {
                            "close the string with the same three quotes that open it"
                        } else {
                            "close the string on the same line, or use a triple-quoted string for text spanning lines"
                        }),
                    );
                    Tok::Error
                } else {
                    strings::decode(source, start..base + r.end, file, fields, &mut out.diags)
                }
            }
            Ok(Raw::Dec) => {
                let digits: String = slice.chars().filter(|c| *c != '_').collect();
                if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0')
                {
                    out.diags.push(
                        Diagnostic::new(
                            Code::E0001,
                            "leading zeros in decimal integer literals are not permitted",
                        )
                        .at(dspan)
                        .with_help("use an `0o` prefix for octal integers"),
                    );
                    Tok::Error
                } else {
                    int_token(digits.parse::<i64>().ok(), dspan, &mut out.diags)
                }
            }
            Ok(Raw::Hex) | Ok(Raw::Oct) | Ok(Raw::Bin) => {
                let radix = match raw {
                    Ok(Raw::Hex) => 16,
                    Ok(Raw::Oct) => 8,
                    _ => 2,
                };
                let digits: String = slice.chars().skip(2).filter(|c| *c != '_').collect();
                int_token(
                    i64::from_str_radix(&digits, radix).ok(),
                    dspan,
                    &mut out.diags,
                )
            }
            Ok(Raw::Float) => {
                let digits: String = slice.chars().filter(|c| *c != '_').collect();
                match digits.parse::<f64>() {
                    Ok(v) => Tok::Float(v),
                    Err(_) => {
                        out.diags
                            .push(Diagnostic::new(Code::E0001, "invalid float literal").at(dspan));
                        Tok::Error
                    }
                }
            }
            Ok(Raw::LParen) => Tok::LParen,
            Ok(Raw::RParen) => Tok::RParen,
            Ok(Raw::LBracket) => Tok::LBracket,
            Ok(Raw::RBracket) => Tok::RBracket,
            Ok(Raw::LBrace) => Tok::LBrace,
            Ok(Raw::RBrace) => Tok::RBrace,
            Ok(Raw::Comma) => Tok::Comma,
            Ok(Raw::Colon) => Tok::Colon,
            Ok(Raw::Dot) => Tok::Dot,
            Ok(Raw::Semi) => Tok::Semi,
            Ok(Raw::Arrow) => Tok::Arrow,
            Ok(Raw::At) => Tok::At,
            Ok(Raw::Assign) => Tok::Assign,
            Ok(Raw::Plus) => Tok::Plus,
            Ok(Raw::Minus) => Tok::Minus,
            Ok(Raw::Star) => Tok::Star,
            Ok(Raw::Slash) => Tok::Slash,
            Ok(Raw::DSlash) => Tok::DSlash,
            Ok(Raw::Percent) => Tok::Percent,
            Ok(Raw::DStar) => Tok::DStar,
            Ok(Raw::EqEq) => Tok::EqEq,
            Ok(Raw::NotEq) => Tok::NotEq,
            Ok(Raw::Lt) => Tok::Lt,
            Ok(Raw::Le) => Tok::Le,
            Ok(Raw::Gt) => Tok::Gt,
            Ok(Raw::Ge) => Tok::Ge,
            Ok(Raw::AddEq) => Tok::AugAssign(BinOp::Add),
            Ok(Raw::SubEq) => Tok::AugAssign(BinOp::Sub),
            Ok(Raw::MulEq) => Tok::AugAssign(BinOp::Mul),
            Ok(Raw::DivEq) => Tok::AugAssign(BinOp::Div),
            Ok(Raw::FloorDivEq) => Tok::AugAssign(BinOp::FloorDiv),
            Ok(Raw::ModEq) => Tok::AugAssign(BinOp::Mod),
            Ok(Raw::PowEq) => Tok::AugAssign(BinOp::Pow),
            Ok(Raw::MatMulEq) => Tok::AugAssign(BinOp::MatMul),
            Ok(Raw::AndEq) => Tok::AugAssign(BinOp::BitAnd),
            Ok(Raw::OrEq) => Tok::AugAssign(BinOp::BitOr),
            Ok(Raw::Amp) => Tok::Amp,
            Ok(Raw::Pipe) => Tok::Pipe,
            Ok(Raw::Tilde) => Tok::Tilde,
            Ok(Raw::Unsupported) => Tok::Unsupported(unsupported_symbol(slice)),
            Ok(Raw::Ellipsis) => Tok::Ellipsis,
        };
        out.toks.push((tok, span));
    }
    out
}

fn int_token(v: Option<i64>, span: Span, diags: &mut Vec<Diagnostic>) -> Tok {
    match v {
        Some(v) => Tok::Int(v),
        Option::None => {
            diags.push(
                Diagnostic::new(Code::E0001, "integer literal is too large")
                    .at(span)
                    .with_label("does not fit in 64 bits")
                    .with_note("Tessera integers are 64-bit: from -2**63 to 2**63 - 1"),
            );
            Tok::Error
        }
    }
}

fn unsupported_symbol(s: &str) -> &'static str {
    match s {
        "^" => "^",
        "<<" => "<<",
        ">>" => ">>",
        "^=" => "^=",
        "<<=" => "<<=",
        ">>=" => ">>=",
        ":=" => ":=",
        _ => "<>",
    }
}

fn keyword(s: &str) -> Tok {
    match s {
        "def" => Tok::Def,
        "return" => Tok::Return,
        "if" => Tok::If,
        "elif" => Tok::Elif,
        "else" => Tok::Else,
        "for" => Tok::For,
        "in" => Tok::In,
        "while" => Tok::While,
        "break" => Tok::Break,
        "continue" => Tok::Continue,
        "pass" => Tok::Pass,
        "assert" => Tok::Assert,
        "and" => Tok::And,
        "or" => Tok::Or,
        "not" => Tok::Not,
        "is" => Tok::Is,
        "True" => Tok::True,
        "False" => Tok::False,
        "None" => Tok::None,
        "class" => Tok::Reserved("class"),
        "import" => Tok::Reserved("import"),
        "from" => Tok::Reserved("from"),
        "as" => Tok::As,
        "with" => Tok::Reserved("with"),
        "try" => Tok::Try,
        "except" => Tok::Except,
        "finally" => Tok::Finally,
        "raise" => Tok::Reserved("raise"),
        "global" => Tok::Global,
        "nonlocal" => Tok::Reserved("nonlocal"),
        "yield" => Tok::Reserved("yield"),
        "del" => Tok::Reserved("del"),
        "async" => Tok::Reserved("async"),
        "await" => Tok::Reserved("await"),
        "lambda" => Tok::Reserved("lambda"),
        _ => Tok::Name(Rc::from(s)),
    }
}
