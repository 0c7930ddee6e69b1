//! The printer of the text form (grammar in [`super`]).

use super::names::*;
use crate::tile::ir::*;
use crate::tile::opdef::{Part, Row, Syntax};
use std::collections::HashMap;
use std::fmt::Write as _;
use tessera_lang::{SourceMap, Span};

/// Deeper nesting than this prints `tile.too_deep` (a region that contains its own op).
const MAX_DEPTH: usize = 256;

/// The text of `k`, values renumbered in print order, every op line ending with its `loc`.
pub fn print(k: &Kernel, sources: &SourceMap) -> String {
    let mut p = Printer {
        k,
        sources,
        names: HashMap::new(),
        next: 0,
        out: String::new(),
    };
    p.kernel();
    p.out
}

/// `loc("file":line:col)` of a span (the file's last path component), or `loc(unknown)`.
pub fn loc(sources: &SourceMap, span: Span) -> String {
    match sources.get(span.file) {
        Some(f) => {
            let (l, c) = f.line_col(span.lo as usize);
            let name = f.name.rsplit('/').next().unwrap_or(&f.name);
            format!("loc(\"{}\":{l}:{c})", name.escape_default())
        }
        None => "loc(unknown)".to_string(),
    }
}

/// An operand as text: `%N`, a decimal integer, `0fXXXXXXXX` or `0dXXXXXXXXXXXXXXXX`.
fn imm_text(o: Operand) -> Option<String> {
    match o {
        Operand::Value(_) => None,
        Operand::Imm(i) => Some(i.to_string()),
        Operand::F32(b) => Some(format!("0f{b:08X}")),
        Operand::F64(b) => Some(format!("0d{b:016X}")),
    }
}

pub fn type_text(t: &Type) -> String {
    match t {
        Type::Scalar(ty) => ty.name().to_string(),
        Type::Frag(f) => format!("!tile.frag<{}, {}>", role_name(f.role), mma_name(f.kind)),
        Type::Global(d) => format!("!tile.global<{}>", d.name()),
        Type::TensorMap(m) => {
            let dims: Vec<String> = m.box_dims.iter().map(|d| d.to_string()).collect();
            let mut s = format!("!tile.tensormap<{}, [{}]", m.dtype.name(), dims.join(", "));
            if m.swizzle != 0 {
                let _ = write!(s, ", swizzle = {}", m.swizzle);
            }
            s.push('>');
            s
        }
        Type::Shared(b) => {
            let dims: Vec<String> = b.shape.iter().map(|d| d.to_string()).collect();
            let mut s = format!(
                "!tile.shared<[{}] x {}, pitch = {}",
                dims.join(", "),
                b.elem_bytes,
                b.layout.pitch
            );
            if let Some(sw) = b.layout.swizzle {
                let _ = write!(s, ", swizzle = ({}, {})", sw.mask, sw.shift);
            }
            let _ = write!(s, ", align = {}>", b.align);
            s
        }
    }
}

/// The types of an op's results: one type when all are equal, else each.
fn types_text(tys: &[Type]) -> String {
    if tys.len() > 1 && tys.iter().all(|t| *t == tys[0]) {
        return type_text(&tys[0]);
    }
    let v: Vec<String> = tys.iter().map(type_text).collect();
    v.join(", ")
}

struct Printer<'a> {
    k: &'a Kernel,
    sources: &'a SourceMap,
    names: HashMap<Value, usize>,
    next: usize,
    out: String,
}

impl Printer<'_> {
    /// Gives `v` the next number.
    fn def(&mut self, v: Value) -> String {
        let n = self.next;
        self.next += 1;
        self.names.insert(v, n);
        format!("%{n}")
    }

    fn val(&mut self, v: Value) -> String {
        match self.names.get(&v) {
            Some(n) => format!("%{n}"),
            None => self.def(v),
        }
    }

    fn opnd(&mut self, o: Option<&Operand>) -> String {
        match o {
            Some(Operand::Value(v)) => self.val(*v),
            Some(o) => imm_text(*o).unwrap_or_default(),
            None => "?".to_string(),
        }
    }

    fn list(&mut self, os: &[Operand]) -> String {
        let v: Vec<String> = os.iter().map(|o| self.opnd(Some(o))).collect();
        v.join(", ")
    }

    fn ty(&self, v: Value) -> Type {
        self.k
            .ty(v)
            .cloned()
            .unwrap_or(Type::Scalar(crate::scalar::Ty::U32))
    }

    fn is_mask(&self, o: Option<&Operand>) -> bool {
        match o {
            Some(Operand::Value(v)) => {
                self.k.ty(*v) == Some(&Type::Scalar(crate::scalar::Ty::Pred))
            }
            _ => false,
        }
    }

    fn kernel(&mut self) {
        let k = self.k;
        let mut params = Vec::new();
        for p in &k.params {
            let v = self.def(p.value);
            let role = match p.role {
                ParamRole::Input => "in".to_string(),
                ParamRole::Output => "out".to_string(),
                ParamRole::Size(n) => format!("= {n}"),
                ParamRole::Status => "status".to_string(),
            };
            params.push(format!(
                "{v} {}: {} {role}",
                at_name(&p.name),
                type_text(&self.ty(p.value))
            ));
        }
        let [g0, g1, g2] = k.grid;
        let [b0, b1, b2] = k.block;
        let _ = writeln!(
            self.out,
            "tile.kernel {}({}) grid = [{g0}, {g1}, {g2}] block = [{b0}, {b1}, {b2}] {{   {}",
            at_name(&k.name),
            params.join(", "),
            loc(self.sources, k.span)
        );
        for s in &k.shared {
            let v = self.def(s.value);
            let t = type_text(&self.ty(s.value));
            let _ = writeln!(self.out, "  {v} = tile.shared {} : {t}", at_name(&s.name));
        }
        self.region_ops(&k.body, 1);
        self.out.push_str("}\n");
    }

    fn region_ops(&mut self, r: &Region, depth: usize) {
        for &id in &r.ops {
            self.op(id, depth);
        }
    }

    fn op(&mut self, id: OpId, depth: usize) {
        let pad = "  ".repeat(depth.min(MAX_DEPTH));
        let k = self.k;
        let Some(op) = k.op(id).filter(|_| depth < MAX_DEPTH) else {
            let _ = writeln!(self.out, "{pad}tile.too_deep");
            return;
        };
        let mut line = pad.clone();
        if !op.results.is_empty() {
            let rs: Vec<String> = op.results.iter().map(|&v| self.def(v)).collect();
            let _ = write!(line, "{} = ", rs.join(", "));
        }
        let tys: Vec<Type> = op.results.iter().map(|&v| self.ty(v)).collect();
        let loc = loc(self.sources, op.span);
        match &op.kind {
            OpKind::For { pipeline, rolled } => {
                let region = op.regions.first().cloned().unwrap_or_default();
                let iv = match region.args.first() {
                    Some(&v) => self.def(v),
                    None => "?".to_string(),
                };
                let o = &op.operands;
                let (lb, ub, st) = (
                    self.opnd(o.first()),
                    self.opnd(o.get(1)),
                    self.opnd(o.get(2)),
                );
                let _ = write!(line, "tile.for {iv} = {lb} to {ub} step {st}");
                let carried = region.args.get(1..).unwrap_or(&[]);
                let inits = o.get(3..).unwrap_or(&[]);
                if !carried.is_empty() || !inits.is_empty() {
                    let mut pairs = Vec::new();
                    for i in 0..carried.len().max(inits.len()) {
                        let a = match carried.get(i) {
                            Some(&v) => self.def(v),
                            None => "?".to_string(),
                        };
                        let x = self.opnd(inits.get(i));
                        pairs.push(format!("{a} = {x}"));
                    }
                    let _ = write!(line, " iter_args({})", pairs.join(", "));
                }
                match (pipeline, rolled) {
                    (Some(n), true) => {
                        let _ = write!(line, " {{pipeline = {n}, unroll = 1}}");
                    }
                    (Some(n), false) => {
                        let _ = write!(line, " {{pipeline = {n}}}");
                    }
                    (None, true) => line.push_str(" {unroll = 1}"),
                    (None, false) => {}
                }
                self.open(line, &tys, &loc);
                self.region_ops(&region, depth + 1);
                let _ = writeln!(self.out, "{pad}}}");
            }
            OpKind::WarpgroupRole { first, count } => {
                let _ = write!(line, "tile.warpgroup_role {{first = {first}");
                if *count != 1 {
                    let _ = write!(line, ", count = {count}");
                }
                line.push('}');
                self.open(line, &tys, &loc);
                for r in &op.regions {
                    self.region_ops(r, depth + 1);
                }
                let _ = writeln!(self.out, "{pad}}}");
            }
            OpKind::If => {
                let c = self.list(&op.operands);
                let _ = write!(line, "tile.if {c}");
                self.open(line, &tys, &loc);
                for (i, r) in op.regions.iter().enumerate() {
                    if i > 0 {
                        let _ = writeln!(self.out, "{pad}}} else {{");
                    }
                    self.region_ops(r, depth + 1);
                }
                let _ = writeln!(self.out, "{pad}}}");
            }
            kind => {
                line.push_str(&self.body(kind, &op.operands));
                if !tys.is_empty() {
                    let _ = write!(line, " : {}", types_text(&tys));
                }
                let _ = writeln!(self.out, "{line}   {loc}");
            }
        }
    }

    /// Ends the header line of a `tile.for`/`tile.if`: ` : types {   loc`.
    fn open(&mut self, mut line: String, tys: &[Type], loc: &str) {
        if !tys.is_empty() {
            let _ = write!(line, " : {}", types_text(tys));
        }
        let _ = writeln!(self.out, "{line} {{   {loc}");
    }

    /// `view[index]`.
    fn indexed(&mut self, o: &[Operand]) -> String {
        let v = self.opnd(o.first());
        let i = self.opnd(o.get(1));
        format!("{v}[{i}]")
    }

    /// ` mask %p else (d…)` of a load whose optional operands start at `o[0]`.
    fn load_tail(&mut self, o: &[Operand]) -> String {
        let mut s = String::new();
        let mut rest = o;
        if self.is_mask(o.first()) {
            let m = self.opnd(o.first());
            let _ = write!(s, " mask {m}");
            rest = &o[1..];
        }
        if !rest.is_empty() {
            let _ = write!(s, " else ({})", self.list(rest));
        }
        s
    }

    /// `, (v…) mask m…` of a store whose values start at `o[0]`.
    fn store_tail(&mut self, o: &[Operand], n: u8) -> String {
        let n = usize::from(n).min(o.len());
        let mut s = format!(", ({})", self.list(&o[..n]));
        if o.len() > n {
            let _ = write!(s, " mask {}", self.list(&o[n..]));
        }
        s
    }

    /// The mnemonic, operands and attributes of a non-structured op, as its row in the op
    /// table says.
    fn body(&mut self, kind: &OpKind, o: &[Operand]) -> String {
        let row = kind.row();
        let tail = |i: usize| o.get(i..).unwrap_or(&[]);
        let operands = match row.syntax {
            Syntax::List | Syntax::Structured => self.list(o),
            Syntax::Reg => {
                let field = row.fields.first().map_or("", |f| f.name);
                format!("%{}", kind.field_word(field).unwrap_or_default())
            }
            Syntax::LoadGlobal => {
                let head = self.indexed(o);
                format!("{head}{}", self.load_tail(tail(2)))
            }
            Syntax::StoreGlobal => {
                let head = self.indexed(o);
                format!("{head}{}", self.store_tail(tail(2), stored(kind)))
            }
            Syntax::LoadAt => {
                let a = self.opnd(o.first());
                format!("{a}{}", self.load_tail(tail(1)))
            }
            Syntax::StoreAt => {
                let a = self.opnd(o.first());
                format!("{a}{}", self.store_tail(tail(1), stored(kind)))
            }
            Syntax::IndexedList => {
                let head = self.indexed(o);
                format!("{head}, {}", self.list(tail(2)))
            }
            Syntax::Subscript => {
                let b = self.opnd(o.first());
                format!("{b}[{}]", self.list(tail(1)))
            }
            Syntax::CopyAsync => self.copy_operands(o),
        };
        let mut s = format!("tile.{} {operands}", mnemonic(kind, row));
        let attrs: Vec<String> = row
            .attrs()
            .filter_map(|f| {
                let v = kind.field_int(f.name)?;
                (Some(v) != f.default).then(|| format!("{} = {v}", f.name))
            })
            .collect();
        if !attrs.is_empty() {
            let _ = write!(s, " {{{}}}", attrs.join(", "));
        }
        s.trim_end().replace("  {", " {")
    }

    /// `dst, view[index] [src_bytes s] [mask m…]` of `tile.cp.async`.
    fn copy_operands(&mut self, o: &[Operand]) -> String {
        let dst = self.opnd(o.first());
        let src = self.indexed(o.get(1..).unwrap_or(&[]));
        let mut s = format!("{dst}, {src}");
        let rest = o.get(3..).unwrap_or(&[]);
        let mask_at = if rest.len() == 1 && self.is_mask(rest.first()) {
            0
        } else {
            1
        };
        if mask_at == 1 && !rest.is_empty() {
            let sb = self.opnd(rest.first());
            let _ = write!(s, " src_bytes {sb}");
        }
        if rest.len() > mask_at {
            let _ = write!(s, " mask {}", self.list(&rest[mask_at..]));
        }
        s
    }
}

/// The mnemonic of `kind` after `tile.`: its row's words with the fields spelled, empty ones
/// left out.
fn mnemonic(kind: &OpKind, row: &Row) -> String {
    let words: Vec<String> = row
        .parts()
        .map(|p| match p {
            Part::Lit(l) => l.to_string(),
            Part::Field(f) => kind.field_word(f).unwrap_or_default(),
        })
        .filter(|w| !w.is_empty())
        .collect();
    words.join(".")
}

/// The number of values a store writes (its `n`).
fn stored(kind: &OpKind) -> u8 {
    kind.field_int("n")
        .and_then(|n| u8::try_from(n).ok())
        .unwrap_or(1)
}
