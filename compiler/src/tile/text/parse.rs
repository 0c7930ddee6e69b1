//! The parser of the text form (grammar in [`super`]): recursive descent over the tokens of
//! [`super::lex`]. Values are created in textual order; `loc`s become spans into synthetic
//! source files (one per file name, lines of spaces) added to the caller's [`SourceMap`].

use super::lex::{lex, Tok, Token};
use super::names::*;
use crate::scalar::{Ty, NO_FILE};
use crate::tile::ir::*;
use std::collections::HashMap;
use std::fmt;
use tessera_lang::{SourceMap, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Regions nested deeper than this are an error (the parser recurses per region).
const MAX_DEPTH: usize = 128;
/// The largest line and column a `loc` may name.
const MAX_LINE: i64 = 1_000_000;
const MAX_COL: i64 = 100_000;
/// The most bytes of synthetic source text, over all files.
const MAX_TEXT: usize = 1 << 26;

pub(super) type R<T> = Result<T, ParseError>;

/// Parses the text of one kernel; adds one synthetic file per file name its `loc`s name to
/// `sources`.
pub fn parse(text: &str, sources: &mut SourceMap) -> R<Kernel> {
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        names: HashMap::new(),
        values: vec![],
        ops: vec![],
        files: vec![],
        text_bytes: 0,
    };
    let mut k = p.kernel()?;
    // Synthetic files: line `l` holds `cols[l] - 1` spaces, so column `c` of line `l` is a
    // byte offset in it.
    let mut ids = Vec::new();
    let mut starts = Vec::new();
    for f in &p.files {
        let mut text = String::with_capacity(f.cols.iter().map(|&c| c as usize).sum());
        let mut st = Vec::with_capacity(f.cols.len());
        for &c in &f.cols {
            st.push(text.len());
            text.extend(std::iter::repeat_n(' ', c as usize - 1));
            text.push('\n');
        }
        ids.push(sources.add(f.name.clone(), text));
        starts.push(st);
    }
    let fix = |s: Span| -> Span {
        if s.file == NO_FILE {
            return s;
        }
        let f = s.file as usize;
        let lo = starts[f][s.lo as usize - 1] + s.hi as usize - 1;
        Span::new(ids[f], lo, lo + 1)
    };
    k.span = fix(k.span);
    for op in &mut k.ops {
        op.span = fix(op.span);
    }
    Ok(k)
}

pub(super) struct FileAcc {
    name: String,
    /// The largest column named on each line (1 on lines none names).
    cols: Vec<u32>,
}

pub(super) struct Parser {
    pub(super) toks: Vec<Token>,
    pub(super) pos: usize,
    pub(super) names: HashMap<u32, Value>,
    pub(super) values: Vec<Type>,
    pub(super) ops: Vec<OpData>,
    pub(super) files: Vec<FileAcc>,
    pub(super) text_bytes: usize,
}

/// Whether a token starts an operand.
fn is_operand(t: &Tok) -> bool {
    matches!(t, Tok::Val(_) | Tok::Int(_) | Tok::F32(_) | Tok::F64(_))
}

impl Parser {
    pub(super) fn tok(&self) -> &Tok {
        &self.at(0).tok
    }
    pub(super) fn at(&self, ahead: usize) -> &Token {
        let i = (self.pos + ahead).min(self.toks.len() - 1);
        &self.toks[i]
    }
    pub(super) fn next(&mut self) -> Token {
        let t = self.at(0).clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    pub(super) fn err<T>(&self, message: impl Into<String>) -> R<T> {
        let t = self.at(0);
        Err(ParseError {
            line: t.line,
            col: t.col,
            message: message.into(),
        })
    }
    pub(super) fn describe(&self) -> String {
        match self.tok() {
            Tok::Val(n) => format!("`%{n}`"),
            Tok::Reg(s) => format!("`%{s}`"),
            Tok::At(s) => format!("`@{s}`"),
            Tok::Str(_) => "a string".to_string(),
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::F32(_) | Tok::F64(_) => "a float".to_string(),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Eof => "the end of the text".to_string(),
        }
    }
    pub(super) fn expected<T>(&self, what: &str) -> R<T> {
        let d = self.describe();
        self.err(format!("expected {what}, found {d}"))
    }
    pub(super) fn is_punct(&self, c: char) -> bool {
        *self.tok() == Tok::Punct(c)
    }
    pub(super) fn eat_punct(&mut self, c: char) -> bool {
        let yes = self.is_punct(c);
        if yes {
            self.next();
        }
        yes
    }
    pub(super) fn punct(&mut self, c: char) -> R<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.expected(&format!("`{c}`"))
        }
    }
    pub(super) fn is_word(&self, w: &str) -> bool {
        matches!(self.tok(), Tok::Ident(s) if s == w)
    }
    pub(super) fn eat_word(&mut self, w: &str) -> bool {
        let yes = self.is_word(w);
        if yes {
            self.next();
        }
        yes
    }
    pub(super) fn word(&mut self, w: &str) -> R<()> {
        if self.eat_word(w) {
            Ok(())
        } else {
            self.expected(&format!("`{w}`"))
        }
    }
    pub(super) fn ident(&mut self) -> R<String> {
        match self.tok().clone() {
            Tok::Ident(s) => {
                self.next();
                Ok(s)
            }
            _ => self.expected("a word"),
        }
    }
    pub(super) fn at_name(&mut self) -> R<String> {
        match self.tok().clone() {
            Tok::At(s) => {
                self.next();
                Ok(s)
            }
            _ => self.expected("`@name`"),
        }
    }
    pub(super) fn int(&mut self) -> R<i64> {
        match *self.tok() {
            Tok::Int(i) => {
                self.next();
                Ok(i)
            }
            _ => self.expected("an integer"),
        }
    }
    pub(super) fn u32(&mut self) -> R<u32> {
        let i = self.int()?;
        u32::try_from(i).or_else(|_| self.err(format!("{i} is out of range")))
    }

    /// Defines value number `n` with type `ty`.
    pub(super) fn define(&mut self, n: u32, ty: Type) -> R<Value> {
        if self.names.contains_key(&n) {
            return self.err(format!("value %{n} is defined twice"));
        }
        let v = Value(self.values.len() as u32);
        self.values.push(ty);
        self.names.insert(n, v);
        Ok(v)
    }
    pub(super) fn val_num(&mut self) -> R<u32> {
        match *self.tok() {
            Tok::Val(n) => {
                self.next();
                Ok(n)
            }
            _ => self.expected("a value `%N`"),
        }
    }

    /// A value number about to be defined (an error here when it already is).
    pub(super) fn def_num(&mut self) -> R<u32> {
        if let Tok::Val(n) = *self.tok() {
            if self.names.contains_key(&n) {
                return self.err(format!("value %{n} is defined twice"));
            }
        }
        self.val_num()
    }

    pub(super) fn operand(&mut self) -> R<Operand> {
        let o = match *self.tok() {
            Tok::Val(n) => match self.names.get(&n) {
                Some(&v) => Operand::Value(v),
                None => return self.err(format!("value %{n} is not defined")),
            },
            Tok::Int(i) => Operand::Imm(i),
            Tok::F32(b) => Operand::F32(b),
            Tok::F64(b) => Operand::F64(b),
            _ => return self.expected("an operand"),
        };
        self.next();
        Ok(o)
    }
    /// A possibly empty comma-separated list of operands.
    pub(super) fn operands(&mut self) -> R<Vec<Operand>> {
        let mut v = Vec::new();
        if !is_operand(self.tok()) {
            return Ok(v);
        }
        loop {
            v.push(self.operand()?);
            if !self.eat_punct(',') {
                return Ok(v);
            }
        }
    }
    /// `a[b, …]`
    pub(super) fn indexed(&mut self) -> R<Vec<Operand>> {
        let mut v = vec![self.operand()?];
        self.punct('[')?;
        v.extend(self.operands()?);
        self.punct(']')?;
        Ok(v)
    }
    /// `[mask %p] [else (d, …)]` of a load.
    pub(super) fn load_tail(&mut self, v: &mut Vec<Operand>) -> R<()> {
        if self.eat_word("mask") {
            v.push(self.operand()?);
        }
        if self.eat_word("else") {
            self.punct('(')?;
            v.extend(self.operands()?);
            self.punct(')')?;
        }
        Ok(())
    }
    /// `, (v, …) [mask m, …]` of a store.
    pub(super) fn store_tail(&mut self, v: &mut Vec<Operand>) -> R<()> {
        self.punct(',')?;
        self.punct('(')?;
        v.extend(self.operands()?);
        self.punct(')')?;
        if self.eat_word("mask") {
            let m = self.operands()?;
            if m.is_empty() {
                return self.expected("an operand");
            }
            v.extend(m);
        }
        Ok(())
    }

    pub(super) fn ty(&mut self) -> R<Type> {
        if !self.eat_punct('!') {
            let s = self.ident()?;
            return match parse_ty(&s) {
                Some(t) => Ok(Type::Scalar(t)),
                None => {
                    self.pos -= 1;
                    self.err(format!("unknown type `{s}`"))
                }
            };
        }
        let w = self.ident()?;
        self.punct('<')?;
        let t = match w.as_str() {
            "tile.frag" => {
                let r = self.ident()?;
                let role = parse_role(&r);
                self.punct(',')?;
                let m = self.ident()?;
                match (role, parse_mma(&m)) {
                    (Some(role), Some(kind)) => Type::Frag(Frag { kind, role }),
                    _ => return self.err(format!("bad fragment `{r}, {m}`")),
                }
            }
            "tile.global" => {
                let d = self.ident()?;
                match parse_dtype(&d) {
                    Some(d) => Type::Global(d),
                    None => return self.err(format!("unknown dtype `{d}`")),
                }
            }
            "tile.tensormap" => {
                let d = self.ident()?;
                let Some(dtype) = parse_dtype(&d) else {
                    return self.err(format!("unknown dtype `{d}`"));
                };
                self.punct(',')?;
                self.punct('[')?;
                let mut box_dims = Vec::new();
                while !self.eat_punct(']') {
                    if !box_dims.is_empty() {
                        self.punct(',')?;
                    }
                    box_dims.push(self.u32()?);
                }
                let mut swizzle = 0;
                if self.eat_punct(',') {
                    self.word("swizzle")?;
                    self.punct('=')?;
                    swizzle = self.u32()?;
                }
                Type::TensorMap(TensorMapTy {
                    dtype,
                    box_dims,
                    swizzle,
                })
            }
            "tile.shared" => {
                self.punct('[')?;
                let mut shape = Vec::new();
                while !self.eat_punct(']') {
                    if !shape.is_empty() {
                        self.punct(',')?;
                    }
                    shape.push(self.u32()?);
                }
                self.word("x")?;
                let elem_bytes = self.u32()?;
                self.punct(',')?;
                self.word("pitch")?;
                self.punct('=')?;
                let pitch = self.u32()?;
                self.punct(',')?;
                let mut swizzle = None;
                if self.eat_word("swizzle") {
                    self.punct('=')?;
                    self.punct('(')?;
                    let mask = self.u32()?;
                    self.punct(',')?;
                    let shift = self.u32()?;
                    self.punct(')')?;
                    self.punct(',')?;
                    swizzle = Some(Swizzle { mask, shift });
                }
                self.word("align")?;
                self.punct('=')?;
                let align = self.u32()?;
                Type::Shared(SharedBuf {
                    elem_bytes,
                    shape,
                    layout: Layout { pitch, swizzle },
                    align,
                })
            }
            _ => return self.err(format!("unknown type `!{w}`")),
        };
        self.punct('>')?;
        Ok(t)
    }

    /// `: t, …` for `n` results (one type stands for all).
    pub(super) fn result_types(&mut self, n: usize) -> R<Vec<Type>> {
        if n == 0 {
            return Ok(vec![]);
        }
        self.punct(':')?;
        let mut tys = vec![self.ty()?];
        while self.eat_punct(',') {
            tys.push(self.ty()?);
        }
        if tys.len() == n {
            Ok(tys)
        } else if tys.len() == 1 {
            Ok(vec![tys[0].clone(); n])
        } else {
            self.err(format!("{} types for {n} results", tys.len()))
        }
    }

    /// `loc("file":L:C)` or `loc(unknown)`, as a raw span (file index, line, column).
    pub(super) fn loc(&mut self) -> R<Span> {
        self.word("loc")?;
        self.punct('(')?;
        if self.eat_word("unknown") {
            self.punct(')')?;
            return Ok(Span {
                file: NO_FILE,
                lo: 0,
                hi: 0,
            });
        }
        let name = match self.tok().clone() {
            Tok::Str(s) => {
                self.next();
                s
            }
            _ => return self.expected("a file name"),
        };
        self.punct(':')?;
        let line = self.int()?;
        if !(1..=MAX_LINE).contains(&line) {
            self.pos -= 1;
            return self.err(format!("line {line} is out of range"));
        }
        self.punct(':')?;
        let col = self.int()?;
        if !(1..=MAX_COL).contains(&col) {
            self.pos -= 1;
            return self.err(format!("column {col} is out of range"));
        }
        let fi = match self.files.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.files.push(FileAcc { name, cols: vec![] });
                self.files.len() - 1
            }
        };
        let (l, c) = (line as usize, col as u32);
        let f = &mut self.files[fi];
        if f.cols.len() < l {
            self.text_bytes += l - f.cols.len();
            f.cols.resize(l, 1);
        }
        if f.cols[l - 1] < c {
            self.text_bytes += (c - f.cols[l - 1]) as usize;
            f.cols[l - 1] = c;
        }
        if self.text_bytes > MAX_TEXT {
            return self.err("the locations span too much source text");
        }
        self.punct(')')?;
        Ok(Span {
            file: fi as u32,
            lo: line as u32,
            hi: col as u32,
        })
    }

    pub(super) fn kernel(&mut self) -> R<Kernel> {
        self.word("tile.kernel")?;
        let name = self.at_name()?;
        self.punct('(')?;
        let mut params = Vec::new();
        while !self.eat_punct(')') {
            if !params.is_empty() {
                self.punct(',')?;
            }
            let n = self.def_num()?;
            let pname = self.at_name()?;
            self.punct(':')?;
            let ty = self.ty()?;
            let role = if self.eat_punct('=') {
                ParamRole::Size(self.u32()?)
            } else if self.eat_word("in") {
                ParamRole::Input
            } else if self.eat_word("out") {
                ParamRole::Output
            } else if self.eat_word("status") {
                ParamRole::Status
            } else {
                return self.expected("`in`, `out`, `status` or `= size`");
            };
            let value = self.define(n, ty)?;
            params.push(Param {
                name: pname,
                value,
                role,
            });
        }
        self.word("grid")?;
        self.punct('=')?;
        let grid = self.dims()?;
        self.word("block")?;
        self.punct('=')?;
        let block = self.dims()?;
        self.punct('{')?;
        let span = self.loc()?;
        let mut shared = Vec::new();
        let body = self.region(vec![], 0, &mut shared)?;
        if *self.tok() != Tok::Eof {
            return self.expected("the end of the text");
        }
        Ok(Kernel {
            name,
            params,
            shared,
            grid,
            block,
            values: std::mem::take(&mut self.values),
            ops: std::mem::take(&mut self.ops),
            body,
            span,
        })
    }

    pub(super) fn dims(&mut self) -> R<[u32; 3]> {
        self.punct('[')?;
        let a = self.u32()?;
        self.punct(',')?;
        let b = self.u32()?;
        self.punct(',')?;
        let c = self.u32()?;
        self.punct(']')?;
        Ok([a, b, c])
    }

    /// Ops up to and including the closing `}` (`tile.shared` only at depth 0).
    pub(super) fn region(
        &mut self,
        args: Vec<Value>,
        depth: usize,
        shared: &mut Vec<SharedDecl>,
    ) -> R<Region> {
        if depth > MAX_DEPTH {
            return self.err("regions nested too deeply");
        }
        let mut r = Region { args, ops: vec![] };
        while !self.eat_punct('}') {
            if let Some(id) = self.op(depth, shared)? {
                r.ops.push(id);
            }
        }
        Ok(r)
    }

    pub(super) fn push(&mut self, data: OpData) -> OpId {
        self.ops.push(data);
        OpId(self.ops.len() as u32 - 1)
    }

    pub(super) fn op(&mut self, depth: usize, shared: &mut Vec<SharedDecl>) -> R<Option<OpId>> {
        let mut results = Vec::new();
        if matches!(self.tok(), Tok::Val(_)) {
            loop {
                results.push(self.def_num()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
            self.punct('=')?;
        }
        let m = self.ident()?;
        let Some(m) = m.strip_prefix("tile.") else {
            self.pos -= 1;
            return self.expected("an op `tile.…`");
        };
        match m {
            "shared" => {
                if depth > 0 || results.len() != 1 {
                    self.pos -= 1;
                    return self.err("`tile.shared` declares one value at the top level");
                }
                let name = self.at_name()?;
                self.punct(':')?;
                let ty = self.ty()?;
                let value = self.define(results[0], ty)?;
                shared.push(SharedDecl { name, value });
                Ok(None)
            }
            "for" => self.for_(results, depth).map(Some),
            "if" => self.if_(results, depth).map(Some),
            "warpgroup_role" => self.role(results, depth).map(Some),
            _ => {
                let (kind, operands) = self.body(m)?;
                let tys = self.result_types(results.len())?;
                let span = self.loc()?;
                let mut rs = Vec::new();
                for (n, t) in results.into_iter().zip(tys) {
                    rs.push(self.define(n, t)?);
                }
                Ok(Some(self.push(OpData {
                    kind,
                    operands,
                    results: rs,
                    regions: vec![],
                    span,
                })))
            }
        }
    }

    /// Whether the next tokens are `{ name =` (an attribute dictionary).
    pub(super) fn at_attrs(&self) -> bool {
        self.is_punct('{')
            && matches!(self.at(1).tok, Tok::Ident(_))
            && self.at(2).tok == Tok::Punct('=')
    }

    /// `{k = int, …}` with keys from `allowed`, if present.
    pub(super) fn attrs(&mut self, allowed: &[&str]) -> R<HashMap<String, i64>> {
        let mut a = HashMap::new();
        if !self.at_attrs() {
            return Ok(a);
        }
        self.next();
        loop {
            let k = self.ident()?;
            if !allowed.contains(&k.as_str()) || a.contains_key(&k) {
                self.pos -= 1;
                return self.err(format!("unexpected attribute `{k}`"));
            }
            self.punct('=')?;
            let v = self.int()?;
            a.insert(k, v);
            if !self.eat_punct(',') {
                break;
            }
        }
        self.punct('}')?;
        Ok(a)
    }

    /// A required or defaulted integer attribute in `T`'s range.
    pub(super) fn attr<T: TryFrom<i64>>(
        &self,
        a: &HashMap<String, i64>,
        k: &str,
        def: Option<T>,
    ) -> R<T> {
        match a.get(k) {
            Some(&v) => {
                T::try_from(v).or_else(|_| self.err(format!("`{k} = {v}` is out of range")))
            }
            None => match def {
                Some(d) => Ok(d),
                None => self.err(format!("missing attribute `{k}`")),
            },
        }
    }

    pub(super) fn for_(&mut self, results: Vec<u32>, depth: usize) -> R<OpId> {
        let iv = self.def_num()?;
        self.punct('=')?;
        let mut operands = vec![self.operand()?];
        self.word("to")?;
        operands.push(self.operand()?);
        self.word("step")?;
        operands.push(self.operand()?);
        let mut carried = Vec::new();
        if self.eat_word("iter_args") {
            self.punct('(')?;
            loop {
                carried.push(self.def_num()?);
                self.punct('=')?;
                operands.push(self.operand()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
            self.punct(')')?;
        }
        if carried.len() != results.len() {
            return self.err(format!(
                "{} carried values for {} results",
                carried.len(),
                results.len()
            ));
        }
        let a = self.attrs(&["pipeline", "unroll"])?;
        let pipeline = match a.contains_key("pipeline") {
            true => Some(self.attr::<u32>(&a, "pipeline", None)?),
            false => None,
        };
        let rolled = match a.get("unroll") {
            None => false,
            Some(1) => true,
            Some(n) => {
                return self.err(format!(
                    "`unroll = {n}`: only `unroll = 1` (keep the loop) is supported"
                ))
            }
        };
        let tys = self.result_types(results.len())?;
        self.punct('{')?;
        let span = self.loc()?;
        let mut rs = Vec::new();
        for (&n, t) in results.iter().zip(&tys) {
            rs.push(self.define(n, t.clone())?);
        }
        let mut args = vec![self.define(iv, Type::Scalar(Ty::U32))?];
        for (&n, t) in carried.iter().zip(tys) {
            args.push(self.define(n, t)?);
        }
        let region = self.region(args, depth + 1, &mut vec![])?;
        Ok(self.push(OpData {
            kind: OpKind::For { pipeline, rolled },
            operands,
            results: rs,
            regions: vec![region],
            span,
        }))
    }

    pub(super) fn role(&mut self, results: Vec<u32>, depth: usize) -> R<OpId> {
        if !results.is_empty() {
            return self.err("`tile.warpgroup_role` has no results");
        }
        let a = self.attrs(&["first", "count"])?;
        let first = self.attr::<u32>(&a, "first", None)?;
        let count = self.attr::<u32>(&a, "count", Some(1))?;
        self.punct('{')?;
        let span = self.loc()?;
        let region = self.region(vec![], depth + 1, &mut vec![])?;
        Ok(self.push(OpData {
            kind: OpKind::WarpgroupRole { first, count },
            operands: vec![],
            results: vec![],
            regions: vec![region],
            span,
        }))
    }

    pub(super) fn if_(&mut self, results: Vec<u32>, depth: usize) -> R<OpId> {
        let operands = self.operands()?;
        let tys = self.result_types(results.len())?;
        self.punct('{')?;
        let span = self.loc()?;
        let mut rs = Vec::new();
        for (n, t) in results.into_iter().zip(tys) {
            rs.push(self.define(n, t)?);
        }
        let mut regions = vec![self.region(vec![], depth + 1, &mut vec![])?];
        while self.eat_word("else") {
            self.punct('{')?;
            regions.push(self.region(vec![], depth + 1, &mut vec![])?);
        }
        Ok(self.push(OpData {
            kind: OpKind::If,
            operands,
            results: rs,
            regions,
            span,
        }))
    }
}
