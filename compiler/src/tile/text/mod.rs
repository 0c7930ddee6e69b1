//! The text form of Tile IR ([`super::ir`]): [`print`] and [`parse`], which round-trip exactly
//! (`print(parse(print(k)))` is `print(k)`).
//!
//! Values are renumbered `%0, %1, …` in print order: parameters, shared buffers, then in
//! textual order an op's results, a `tile.for`'s induction variable and its carried region
//! arguments. The parser creates values in that order, so a parsed kernel's value ids are
//! the printed numbers. Every op line (and the kernel line) ends with three spaces and the
//! `loc` of its span; `tile.shared` lines have none.
//!
//! ```text
//! kernel   := "tile.kernel" name "(" [param {"," param}] ")" "grid" "=" dims "block" "=" dims
//!             "{" loc {shared} {op} "}"
//! param    := %N name ":" type ("in" | "out" | "status" | "=" INT)
//! shared   := %N "=" "tile.shared" name ":" type
//! name     := "@" [A-Za-z0-9_.]+ | "@" STRING            (STRING: `str::escape_default` escapes)
//! dims     := "[" INT "," INT "," INT "]"
//! loc      := "loc(" STRING ":" LINE ":" COL ")" | "loc(unknown)"
//! type     := scalar                                      (`Ty::name()`: u32 f32 pred bf16x2 u8 …)
//!           | "!tile.frag<" ("a"|"b"|"c") "," mma ">"     (mma: m16n8k16.bf16 m16n8k16.f16 m16n8k8.tf32)
//!           | "!tile.global<" dtype ">"                   (`DType::name()`: fp32 bf16 int64 bool …)
//!           | "!tile.shared<[" dims… "] x" ELEM_BYTES ", pitch =" INT [", swizzle = (" MASK "," SHIFT ")"]
//!             ", align =" INT ">"
//! operand  := %N | INT (decimal) | 0fXXXXXXXX (f32 bits) | 0dXXXXXXXXXXXXXXXX (f64 bits)
//! list     := [operand {"," operand}]
//! op       := [%N {"," %N} "="] mnemonic form [attrs] [":" types] loc
//!           | [results "="] "tile.for" %IV "=" operand "to" operand "step" operand
//!               ["iter_args(" %A "=" operand {"," %A "=" operand} ")"] ["{pipeline =" INT "}"]
//!               [":" types] "{" loc {op} "}"
//!           | [results "="] "tile.if" operand [":" types] "{" loc {op} "}" {"else" "{" {op} "}"}
//! attrs    := "{" KEY "=" INT {"," KEY "=" INT} "}"
//! types    := type {"," type}          (one type for all results when they are all equal)
//! ```
//!
//! `tile.if` prints one `else` part per region after the first (a verified kernel has two).
//! The induction variable of `tile.for` is `u32`; its carried arguments have the types of
//! its results. Mnemonics and their operand forms (`[.vN]`: the vector width, absent for 1):
//!
//! ```text
//! tile.special %tid.x | %ntid.y | %ctaid.z | %nctaid.x | %laneid | %warpid
//! tile.mov.T list          tile.bitcast.T list      tile.UNOP.T list     tile.BINOP.T list
//! tile.fma.T list          tile.mul.wide.T list     tile.mad.wide.T list tile.setp.CMP.T list
//! tile.selp.T list         tile.cvt[.RND][.sat].TO.FROM list         tile.tf32 list
//! tile.pack.P list         tile.unpack.U list       tile.math.F.T list
//! tile.load[.vN].T v[i] [mask %p] [else (list)]    tile.store[.vN].T v[i], (list) [mask list]
//! tile.advance list        tile.red.add.f32 v[i], list                 tile.atom.add.f32 v[i], list
//! tile.shared_addr list    tile.offset b[list]
//! tile.ld.shared[.vN].T a [mask %p] [else (list)] [{offset = K}]
//! tile.st.shared[.vN].T a, (list) [mask list] [{offset = K}]
//! tile.cp.async.(ca|cg) d, v[i] [src_bytes operand] [mask list] {bytes = K}
//! tile.commit              tile.wait {n = K}        tile.barrier         tile.ldmatrix.x4[.trans] list
//! tile.mma.MMA list        tile.frag_get list {index = K}               tile.frag_make list
//! tile.shfl.(up|down|bfly|idx) list {mask = K}      tile.reduce_warp.BINOP.T list
//! tile.reduce_block.BINOP.T v, scratch
//! tile.yield list
//! ```
//!
//! UNOP: neg abs not rcp rcp.approx sqrt sqrt.approx rsqrt.approx ex2.approx lg2.approx
//! tanh.approx. BINOP: add sub mul mul.hi min max div div.approx rem and or xor shl shr.
//! CMP: eq ne lt le gt ge nan. RND: rn rz rm rp rni rzi rmi rpi. P: f16x2 bf16x2 e4m3x2
//! e5m2x2. U: e4m3x2 e5m2x2. F: exp log sigmoid silu gelu pow.
//!
//! A load's operand after the index (or the address) prints as `mask` when it is a `pred`
//! value; the operands of every form are the concatenation of its parts in order, so any
//! operand list round-trips.
//!
//! The parser gives each `loc("f":L:C)` a span into a synthetic file named `f` (one per name,
//! in order of first appearance, lines of spaces) at line `L`, column `C`; `loc(unknown)` is
//! a span whose file is [`crate::scalar::NO_FILE`] (`u32::MAX`). Malformed text is a [`ParseError`], never a panic.

mod field;
mod lex;
mod names;
mod parse;
mod parse_ops;
mod print;
#[cfg(test)]
mod tests;

pub use names::{parse_dtype, parse_ty};

/// The text with each line's trailing `loc(...)` replaced by `loc("FILE":LINE:COL)`, the
/// line's own position (its 1-based line, the column of its first non-blank character), and
/// per line the original `loc`'s contents. Parsed, its ops' spans name their lines of the
/// text: how an error found in the IR is shown at the text's line.
pub fn relocate(text: &str, file: &str) -> (String, Vec<Option<String>>) {
    let mut out = String::with_capacity(text.len());
    let mut locs = Vec::new();
    for (i, l) in text.split_inclusive('\n').enumerate() {
        let body = l.trim_end();
        match body.rfind("loc(") {
            Some(p) if body.ends_with(')') => {
                let col = l.chars().take_while(|c| c.is_whitespace()).count() + 1;
                out.push_str(&body[..p]);
                out.push_str(&format!("loc({file:?}:{}:{col})", i + 1));
                out.push_str(&l[body.len()..]);
                locs.push(Some(body[p + 4..body.len() - 1].to_string()));
            }
            _ => {
                out.push_str(l);
                locs.push(None);
            }
        }
    }
    (out, locs)
}
pub use parse::{parse, ParseError};
pub use print::{loc, print, type_text};
