//! The parser of a non-structured op: its mnemonic is matched against the rows of the op
//! table ([`crate::tile::ops`]), then its operands are read by the row's [`Syntax`] and its
//! attributes by the row's fields.

use super::lex::Tok;
use super::parse::{ParseError, Parser, R};
use crate::tile::ir::*;
use crate::tile::opdef::{FieldDecl, Given, Part, Row, Syntax};
use std::collections::HashMap;
use std::sync::OnceLock;

/// A row with its mnemonic split and its attributes listed, once.
struct Entry {
    row: &'static Row,
    parts: Vec<Part>,
    attrs: Vec<&'static FieldDecl>,
}

/// The rows by the first word of their mnemonic; `open`: those that start with a field.
struct Table {
    fixed: HashMap<&'static str, Vec<Entry>>,
    open: Vec<Entry>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table {
            fixed: HashMap::new(),
            open: Vec::new(),
        };
        for row in ROWS.iter().filter(|r| r.syntax != Syntax::Structured) {
            let e = Entry {
                row,
                parts: row.parts().collect(),
                attrs: row.attrs().collect(),
            };
            match e.parts.first() {
                Some(Part::Lit(l)) => t.fixed.entry(*l).or_default().push(e),
                _ => t.open.push(e),
            }
        }
        t
    })
}

/// The row whose mnemonic spells `m` (the words after `tile.`), with the words of its
/// fields. Rows that start with a fixed word are tried before those that start with a field
/// (`tile.fma.f32` is `fma`, not a binary op).
fn find_row(m: &str) -> Option<(&'static Entry, Vec<(&'static str, String)>)> {
    let words: Vec<&str> = m.split('.').collect();
    let t = table();
    let fixed = words.first().and_then(|w| t.fixed.get(*w));
    for e in fixed.into_iter().flatten().chain(&t.open) {
        let mut found = Vec::new();
        if matches(e.row, &e.parts, &words, &mut found) {
            return Some((e, found));
        }
    }
    None
}

/// Whether `words` spell `parts` of `row`; a field takes zero or more words (it is left out
/// when empty), tried shortest first; the last takes the rest.
fn matches(
    row: &Row,
    parts: &[Part],
    words: &[&str],
    found: &mut Vec<(&'static str, String)>,
) -> bool {
    match parts.split_first() {
        None => words.is_empty(),
        Some((Part::Lit(l), rest)) => {
            words.first() == Some(l) && matches(row, rest, &words[1..], found)
        }
        Some((Part::Field(f), rest)) => {
            // the last field takes every word left
            let from = if rest.is_empty() { words.len() } else { 0 };
            for n in from..=words.len() {
                let w = words[..n].join(".");
                if OpKind::word_ok(row.variant, f, &w) {
                    found.push((f, w));
                    if matches(row, rest, &words[n..], found) {
                        return true;
                    }
                    found.pop();
                }
            }
            false
        }
    }
}

impl Parser {
    /// The kind and operands of the op whose mnemonic (after `tile.`) is `m`, just read.
    pub(super) fn body(&mut self, m: &str) -> R<(OpKind, Vec<Operand>)> {
        let at = self.pos.saturating_sub(1);
        let Some((entry, mut words)) = find_row(m) else {
            let t = &self.toks[at];
            return Err(ParseError {
                line: t.line,
                col: t.col,
                message: format!("unknown op `tile.{m}`"),
            });
        };
        let row = entry.row;
        let operands = self.syntax(row, &mut words)?;
        let names: Vec<&str> = entry.attrs.iter().map(|f| f.name).collect();
        let attrs = if names.is_empty() {
            HashMap::new()
        } else {
            self.attrs(&names)?
        };
        for f in &entry.attrs {
            if !attrs.contains_key(f.name) && f.default.is_none() {
                return self.err(format!("missing attribute `{}`", f.name));
            }
        }
        let given = |name: &str| -> Option<Given> {
            if let Some((_, w)) = words.iter().find(|(f, _)| *f == name) {
                return Some(Given::Word(w.clone()));
            }
            let decl = row.fields.iter().find(|f| f.name == name)?;
            attrs.get(name).copied().or(decl.default).map(Given::Int)
        };
        match OpKind::build(row.variant, &mut |f| given(f)) {
            Ok(kind) => Ok((kind, operands)),
            Err(f) => {
                let v = attrs.get(f).copied().unwrap_or_default();
                self.err(format!("`{f} = {v}` is out of range"))
            }
        }
    }

    /// The operands of an op of `row`, written as its syntax says (a special register goes
    /// to `words`).
    fn syntax(&mut self, row: &Row, words: &mut Vec<(&'static str, String)>) -> R<Vec<Operand>> {
        let mut o = Vec::new();
        match row.syntax {
            Syntax::List | Syntax::Structured => o = self.operands()?,
            Syntax::Reg => {
                let s = match self.tok().clone() {
                    Tok::Reg(s) => s,
                    _ => return self.expected("a special register `%tid.x`"),
                };
                let field = row.fields.first().map_or("", |f| f.name);
                if !OpKind::word_ok(row.variant, field, &s) {
                    return self.err(format!("unknown special register `%{s}`"));
                }
                self.next();
                words.push((field, s));
            }
            Syntax::LoadGlobal => {
                o = self.indexed()?;
                self.load_tail(&mut o)?;
            }
            Syntax::StoreGlobal => {
                o = self.indexed()?;
                self.store_tail(&mut o)?;
            }
            Syntax::LoadAt => {
                o.push(self.operand()?);
                self.load_tail(&mut o)?;
            }
            Syntax::StoreAt => {
                o.push(self.operand()?);
                self.store_tail(&mut o)?;
            }
            Syntax::IndexedList => {
                o = self.indexed()?;
                self.punct(',')?;
                o.extend(self.operands()?);
            }
            Syntax::Subscript => o = self.indexed()?,
            Syntax::CopyAsync => {
                o.push(self.operand()?);
                self.punct(',')?;
                o.extend(self.indexed()?);
                if self.eat_word("src_bytes") {
                    o.push(self.operand()?);
                }
                if self.eat_word("mask") {
                    let m = self.operands()?;
                    if m.is_empty() {
                        return self.expected("an operand");
                    }
                    o.extend(m);
                }
            }
        }
        Ok(o)
    }
}
