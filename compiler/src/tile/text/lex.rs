//! The lexer of the text form: tokens with their 1-based line and column (in characters).

use super::parse::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `%12`
    Val(u32),
    /// `%tid.x`
    Reg(String),
    /// `@name` or `@"quoted name"`
    At(String),
    /// `"text"`
    Str(String),
    /// `tile.load.v4.f32`, `in`, `x`, `fp32`, …
    Ident(String),
    /// A decimal integer, possibly negative.
    Int(i64),
    /// `0fXXXXXXXX`
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`
    F64(u64),
    /// One of `( ) [ ] { } < > , : = !`.
    Punct(char),
    Eof,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
    pub col: usize,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            line: self.line,
            col: self.col,
            message: message.into(),
        }
    }
    fn word(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|&c| is_ident(c)) {
            s.push(c);
            self.bump();
        }
        s
    }

    /// A string body after its opening quote, with the escapes of `str::escape_default`.
    fn string(&mut self) -> Result<String, ParseError> {
        let mut s = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(self.err("unterminated string")),
                Some('"') => return Ok(s),
                Some('\\') => match self.bump() {
                    Some('n') => s.push('\n'),
                    Some('r') => s.push('\r'),
                    Some('t') => s.push('\t'),
                    Some('0') => s.push('\0'),
                    Some(c @ ('\\' | '"' | '\'')) => s.push(c),
                    Some('u') => {
                        if self.bump() != Some('{') {
                            return Err(self.err("expected `{` in a \\u escape"));
                        }
                        let mut hex = String::new();
                        loop {
                            match self.bump() {
                                Some('}') => break,
                                Some(c) if c.is_ascii_hexdigit() && hex.len() < 6 => hex.push(c),
                                _ => return Err(self.err("bad \\u escape")),
                            }
                        }
                        let c = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| self.err("bad \\u escape"))?;
                        s.push(c);
                    }
                    _ => return Err(self.err("unknown escape")),
                },
                Some(c) => s.push(c),
            }
        }
    }
}

/// A number word: `0f` + 8 hex digits, `0d` + 16 hex digits, or a decimal integer.
fn number(w: &str) -> Option<Tok> {
    let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
    if let Some(h) = w.strip_prefix("0f").filter(|h| hex(h, 8)) {
        return u32::from_str_radix(h, 16).ok().map(Tok::F32);
    }
    if let Some(h) = w.strip_prefix("0d").filter(|h| hex(h, 16)) {
        return u64::from_str_radix(h, 16).ok().map(Tok::F64);
    }
    let digits = w.strip_prefix('-').unwrap_or(w);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    w.parse::<i64>().ok().map(Tok::Int)
}

pub fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
    };
    let mut out = Vec::new();
    loop {
        while lx.peek().is_some_and(char::is_whitespace) {
            lx.bump();
        }
        let (line, col) = (lx.line, lx.col);
        let Some(c) = lx.peek() else {
            out.push(Token {
                tok: Tok::Eof,
                line,
                col,
            });
            return Ok(out);
        };
        let tok = match c {
            '%' => {
                lx.bump();
                let w = lx.word();
                if w.is_empty() {
                    return Err(lx.err("expected a value number or register after `%`"));
                } else if w.chars().all(|c| c.is_ascii_digit()) {
                    Tok::Val(w.parse().map_err(|_| lx.err("value number too large"))?)
                } else {
                    Tok::Reg(w)
                }
            }
            '@' => {
                lx.bump();
                if lx.peek() == Some('"') {
                    lx.bump();
                    Tok::At(lx.string()?)
                } else {
                    let w = lx.word();
                    if w.is_empty() {
                        return Err(lx.err("expected a name after `@`"));
                    }
                    Tok::At(w)
                }
            }
            '"' => {
                lx.bump();
                Tok::Str(lx.string()?)
            }
            '-' | '0'..='9' => {
                let mut w = String::new();
                if c == '-' {
                    w.push('-');
                    lx.bump();
                }
                while let Some(d) = lx.peek().filter(|d| d.is_ascii_alphanumeric()) {
                    w.push(d);
                    lx.bump();
                }
                number(&w).ok_or_else(|| ParseError {
                    line,
                    col,
                    message: format!("bad number `{w}`"),
                })?
            }
            c if c.is_ascii_alphabetic() || c == '_' => Tok::Ident(lx.word()),
            '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ':' | '=' | '!' => {
                lx.bump();
                Tok::Punct(c)
            }
            c => return Err(lx.err(format!("unexpected character `{}`", c.escape_default()))),
        };
        out.push(Token { tok, line, col });
    }
}
