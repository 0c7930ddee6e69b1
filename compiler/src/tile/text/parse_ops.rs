//! The parser of a non-structured op's mnemonic, operands and attributes.

use super::lex::Tok;
use super::names::*;
use super::parse::{ParseError, Parser, R};
use crate::scalar::Ty;
use crate::tile::ir::*;

/// `vN` as a vector width.
fn vec_width(s: &str) -> Option<u8> {
    let n: u8 = s.strip_prefix('v')?.parse().ok()?;
    (n > 1 && s == format!("v{n}")).then_some(n)
}

/// `[vN.]ty`: the width (1 without `vN`) and the type.
fn vec_ty(parts: &[&str]) -> Option<(u8, Ty)> {
    match parts {
        [t] => Some((1, parse_ty(t)?)),
        [v, t] => Some((vec_width(v)?, parse_ty(t)?)),
        _ => None,
    }
}

impl Parser {
    /// The kind and operands of the op whose mnemonic (after `tile.`) is `m`, just read.
    pub(super) fn body(&mut self, m: &str) -> R<(OpKind, Vec<Operand>)> {
        let at = self.pos.saturating_sub(1);
        let bad = |p: &Parser| -> R<(OpKind, Vec<Operand>)> {
            let t = &p.toks[at];
            Err(ParseError {
                line: t.line,
                col: t.col,
                message: format!("unknown op `tile.{m}`"),
            })
        };
        let parts: Vec<&str> = m.split('.').collect();
        let ty1 = |s: &str| parse_ty(s);
        let (kind, operands) = match parts.as_slice() {
            ["special"] => {
                let s = match self.tok().clone() {
                    Tok::Reg(s) => s,
                    _ => return self.expected("a special register `%tid.x`"),
                };
                match parse_sreg(&s) {
                    Some(r) => {
                        self.next();
                        (OpKind::Special(r), vec![])
                    }
                    None => return self.err(format!("unknown special register `%{s}`")),
                }
            }
            ["tf32"] => (OpKind::Tf32, self.operands()?),
            ["advance"] => (OpKind::Advance, self.operands()?),
            ["shared_addr"] => (OpKind::SharedAddr, self.operands()?),
            ["commit"] => (OpKind::Commit, self.operands()?),
            ["barrier"] => (OpKind::Barrier, self.operands()?),
            ["frag_make"] => (OpKind::FragMake, self.operands()?),
            ["yield"] => (OpKind::Yield, self.operands()?),
            ["offset"] => (OpKind::Offset, self.indexed()?),
            ["wait"] => {
                let o = self.operands()?;
                let a = self.attrs(&["n"])?;
                let n = self.attr(&a, "n", None)?;
                (OpKind::Wait { n }, o)
            }
            ["frag_get"] => {
                let o = self.operands()?;
                let a = self.attrs(&["index"])?;
                let index = self.attr(&a, "index", None)?;
                (OpKind::FragGet { index }, o)
            }
            ["red" | "atom", "add", "f32"] => {
                let mut o = self.indexed()?;
                self.punct(',')?;
                o.extend(self.operands()?);
                let k = if parts[0] == "red" {
                    OpKind::RedAdd
                } else {
                    OpKind::AtomAdd
                };
                (k, o)
            }
            ["mov", t] if ty1(t).is_some() => (
                OpKind::Mov {
                    ty: parse_ty(t).unwrap_or(Ty::U32),
                },
                self.operands()?,
            ),
            ["bitcast", t] if ty1(t).is_some() => (
                OpKind::Bitcast {
                    to: parse_ty(t).unwrap_or(Ty::U32),
                },
                self.operands()?,
            ),
            ["fma", t] if ty1(t).is_some() => (
                OpKind::Fma {
                    ty: parse_ty(t).unwrap_or(Ty::U32),
                },
                self.operands()?,
            ),
            ["selp", t] if ty1(t).is_some() => (
                OpKind::Select {
                    ty: parse_ty(t).unwrap_or(Ty::U32),
                },
                self.operands()?,
            ),
            ["mul", "wide", t] if ty1(t).is_some() => (
                OpKind::MulWide {
                    ty: parse_ty(t).unwrap_or(Ty::U32),
                },
                self.operands()?,
            ),
            ["mad", "wide", t] if ty1(t).is_some() => (
                OpKind::MadWide {
                    ty: parse_ty(t).unwrap_or(Ty::U32),
                },
                self.operands()?,
            ),
            ["setp", c, t] => match (parse_cmp(c), parse_ty(t)) {
                (Some(cmp), Some(ty)) => (OpKind::Cmp { cmp, ty }, self.operands()?),
                _ => return bad(self),
            },
            ["cvt", mid @ .., to, from] => {
                let (rnd, sat) = match mid {
                    [] => (None, false),
                    ["sat"] => (None, true),
                    [r] => match parse_rnd(r) {
                        Some(r) => (Some(r), false),
                        None => return bad(self),
                    },
                    [r, "sat"] => match parse_rnd(r) {
                        Some(r) => (Some(r), true),
                        None => return bad(self),
                    },
                    _ => return bad(self),
                };
                match (parse_ty(to), parse_ty(from)) {
                    (Some(to), Some(from)) => {
                        (OpKind::Cast { to, from, rnd, sat }, self.operands()?)
                    }
                    _ => return bad(self),
                }
            }
            ["pack", p] => match parse_pack(p) {
                Some(p) => (OpKind::Pack(p), self.operands()?),
                None => return bad(self),
            },
            ["unpack", u] => match parse_unpack(u) {
                Some(u) => (OpKind::Unpack(u), self.operands()?),
                None => return bad(self),
            },
            ["math", f, t] => match (parse_math(f), parse_ty(t)) {
                (Some(f), Some(ty)) => (OpKind::Math { f, ty }, self.operands()?),
                _ => return bad(self),
            },
            ["load", rest @ ..] => match vec_ty(rest) {
                Some((n, ty)) => {
                    let mut o = self.indexed()?;
                    self.load_tail(&mut o)?;
                    (OpKind::Load { ty, n }, o)
                }
                None => return bad(self),
            },
            ["store", rest @ ..] => match vec_ty(rest) {
                Some((n, ty)) => {
                    let mut o = self.indexed()?;
                    self.store_tail(&mut o)?;
                    (OpKind::Store { ty, n }, o)
                }
                None => return bad(self),
            },
            ["ld", "shared", rest @ ..] => match vec_ty(rest) {
                Some((n, ty)) => {
                    let mut o = vec![self.operand()?];
                    self.load_tail(&mut o)?;
                    let a = self.attrs(&["offset"])?;
                    let offset = self.attr(&a, "offset", Some(0))?;
                    (OpKind::LoadShared { ty, n, offset }, o)
                }
                None => return bad(self),
            },
            ["st", "shared", rest @ ..] => match vec_ty(rest) {
                Some((n, ty)) => {
                    let mut o = vec![self.operand()?];
                    self.store_tail(&mut o)?;
                    let a = self.attrs(&["offset"])?;
                    let offset = self.attr(&a, "offset", Some(0))?;
                    (OpKind::StoreShared { ty, n, offset }, o)
                }
                None => return bad(self),
            },
            ["cp", "async", c] => match parse_cache(c) {
                Some(cache) => {
                    let mut o = vec![self.operand()?];
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
                    let a = self.attrs(&["bytes"])?;
                    let bytes = self.attr(&a, "bytes", None)?;
                    (OpKind::CopyAsync { cache, bytes }, o)
                }
                None => return bad(self),
            },
            ["ldmatrix", "x4"] => (OpKind::Ldmatrix { trans: false }, self.operands()?),
            ["ldmatrix", "x4", "trans"] => (OpKind::Ldmatrix { trans: true }, self.operands()?),
            ["mma", ..] => match m.strip_prefix("mma.").and_then(parse_mma) {
                Some(kind) => (OpKind::Mma { kind }, self.operands()?),
                None => return bad(self),
            },
            ["shfl", md] => match parse_shfl(md) {
                Some(mode) => {
                    let o = self.operands()?;
                    let a = self.attrs(&["mask"])?;
                    let mask = self.attr(&a, "mask", None)?;
                    (OpKind::Shfl { mode, mask }, o)
                }
                None => return bad(self),
            },
            ["reduce_warp", op @ .., t] => match (parse_binop(&op.join(".")), parse_ty(t)) {
                (Some(op), Some(ty)) => (OpKind::ReduceWarp { op, ty }, self.operands()?),
                _ => return bad(self),
            },
            ["reduce_block", op @ .., t] => match (parse_binop(&op.join(".")), parse_ty(t)) {
                (Some(op), Some(ty)) => (OpKind::ReduceBlock { op, ty }, self.operands()?),
                _ => return bad(self),
            },
            [op @ .., t] => {
                let name = op.join(".");
                match (parse_unop(&name), parse_binop(&name), parse_ty(t)) {
                    (Some(op), _, Some(ty)) => (OpKind::Unary { op, ty }, self.operands()?),
                    (_, Some(op), Some(ty)) => (OpKind::Binary { op, ty }, self.operands()?),
                    _ => return bad(self),
                }
            }
            [] => return bad(self),
        };
        Ok((kind, operands))
    }
}
