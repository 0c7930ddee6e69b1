//! Well-formed programs for the fuzz: token- and line-level mutations of the golden and example
//! scripts that keep them parsing, so that the evaluator, the tracer and the compiler see them.
//!
//! A mutation swaps a literal for an extreme value (`0`, `-1`, `2**62`, `1e308`, `nan`, empty
//! and huge shapes), an operator for another of its kind, the operands of a binary operator, a
//! module member for another member of the same module, a dtype name for another, a variable
//! for another the script assigns; it wraps a call in `op.kernel`/`graph.grad`, decorates a
//! function with `@op.kernel`, or drops, duplicates or swaps lines. Each program gets one to
//! three; the result is parsed and kept only when it parses (the fraction that does is the
//! generator's quality, which a test asserts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use super::Rng;
use std::collections::BTreeSet;
use tessera_lang::eval::{Interp, Value};
use tessera_lang::lex::{lex, Tok};
use tessera_lang::parse;
use tessera_lang::parse::fields;

const INTS: &[&str] = &[
    "0",
    "(-1)",
    "1",
    "2",
    "3",
    "(2**62)",
    "9223372036854775807",
    "(-9223372036854775807 - 1)",
    "(2**31)",
    "65537",
    "100000",
];

const FLOATS: &[&str] = &[
    "0.0",
    "(-0.0)",
    "1e308",
    "(-1e308)",
    "5e-324",
    "1e-7",
    "float(\"nan\")",
    "float(\"inf\")",
    "(-float(\"inf\"))",
    "0.5",
];

/// What goes between the brackets of a tuple or list of integers (a shape, an index list).
const SHAPES: &[&str] = &[
    "",
    "0,",
    "0, 0",
    "1,",
    "-1, 4",
    "3, 0, 2",
    "100000, 100000",
    "2**31, 2**31",
    "2**62,",
    "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1",
    "4, 4",
];

const ARITH: &[&str] = &["+", "-", "*", "/", "//", "%", "**", "@"];
const CMP: &[&str] = &["<", ">", "<=", ">=", "==", "!="];
const AUG: &[&str] = &["+=", "-=", "*=", "/=", "//=", "%=", "**=", "@="];
/// Wrappers for a call's callee: `f(x)` becomes `op.kernel(f)(x)`, ...
const WRAPS: &[&str] = &[
    "op.kernel({})",
    "graph.grad({})",
    "graph.value_and_grad({})",
    "op.kernel(graph.grad({}))",
    "graph.grad(op.kernel({}))",
];

/// The names a mutation may swap in: every builtin module's public members, the dtype names.
pub struct Vocab {
    modules: Vec<(String, Vec<String>)>,
    dtypes: Vec<&'static str>,
}

impl Vocab {
    pub fn new() -> Vocab {
        let mut interp = Interp::new();
        tessera_stdlib::install(&mut interp, &tessera_stdlib::Config::default())
            .expect("the builtin modules install");
        let mut modules = Vec::new();
        for name in [
            "op", "graph", "dist", "schedule", "target", "autotune", "optim", "plot",
        ] {
            let Some(Value::Module(m)) = interp.get_global(name) else {
                panic!("no builtin module `{name}`");
            };
            let members: Vec<String> = m
                .names()
                .iter()
                .filter(|n| !n.starts_with('_'))
                .map(|n| n.to_string())
                .collect();
            assert!(!members.is_empty(), "module `{name}` has no members");
            modules.push((name.to_string(), members));
        }
        let dtypes = tessera_runtime::ALL_DTYPES
            .iter()
            .map(|d| d.name())
            .collect();
        Vocab { modules, dtypes }
    }

    fn members(&self, module: &str) -> Option<&[String]> {
        self.modules
            .iter()
            .find(|(m, _)| m == module)
            .map(|(_, v)| v.as_slice())
    }
}

fn pick<'a>(rng: &mut Rng, xs: &'a [&'a str]) -> &'a str {
    xs[rng.below(xs.len())]
}

fn pick_other<'a>(rng: &mut Rng, xs: &'a [&'a str], not: &str) -> Option<&'a str> {
    let others: Vec<&str> = xs.iter().copied().filter(|x| *x != not).collect();
    (!others.is_empty()).then(|| others[rng.below(others.len())])
}

fn ends_atom(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Name(_)
            | Tok::Int(_)
            | Tok::Float(_)
            | Tok::Str(_)
            | Tok::FStr(_)
            | Tok::RParen
            | Tok::RBracket
            | Tok::True
            | Tok::False
            | Tok::None
    )
}

fn simple_atom(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Name(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_) | Tok::True | Tok::False
    )
}

/// One edit: replace `src[lo..hi]` with `text`.
fn splice(src: &str, lo: usize, hi: usize, text: &str) -> String {
    format!("{}{}{}", &src[..lo], text, &src[hi..])
}

/// One mutation of `src`, or `None` when the kind picked does not apply to it.
fn mutate_once(src: &str, vocab: &Vocab, rng: &mut Rng) -> Option<String> {
    let toks: Vec<(Tok, std::ops::Range<usize>)> = lex(src, 0..src.len(), 0, fields(0))
        .toks
        .into_iter()
        .map(|(t, s)| (t, s.start..s.end))
        .collect();
    let n = toks.len();
    let tok = |i: usize| toks.get(i).map(|(t, _)| t);
    let text = |i: usize| &src[toks[i].1.clone()];
    // the indices of the tokens that satisfy `f`, and one of them at random
    let choose = |rng: &mut Rng, f: &dyn Fn(usize) -> bool| -> Option<usize> {
        let idx: Vec<usize> = (0..n).filter(|&i| f(i)).collect();
        (!idx.is_empty()).then(|| idx[rng.below(idx.len())])
    };
    let after_dot = |i: usize| i > 0 && tok(i - 1) == Some(&Tok::Dot);
    // Sizes on a `dist.Mesh` line stay as they are: an op on a mesh of 10^5 devices allocates
    // each device's buffer, each under the memory limit but not their sum (a known gap), which
    // would abort the test process.
    let on_mesh_line = |i: usize| {
        let at = toks[i].1.start;
        let lo = src[..at].rfind('\n').map_or(0, |p| p + 1);
        let hi = src[at..].find('\n').map_or(src.len(), |p| at + p);
        src[lo..hi].contains("Mesh(")
    };
    match rng.below(12) {
        // an integer literal becomes an extreme one
        0 => {
            let i = choose(rng, &|i| {
                matches!(toks[i].0, Tok::Int(_)) && !on_mesh_line(i)
            })?;
            Some(splice(src, toks[i].1.start, toks[i].1.end, pick(rng, INTS)))
        }
        // a float literal becomes an extreme one
        1 => {
            let i = choose(rng, &|i| matches!(toks[i].0, Tok::Float(_)))?;
            Some(splice(
                src,
                toks[i].1.start,
                toks[i].1.end,
                pick(rng, FLOATS),
            ))
        }
        // a binary, comparison or augmented operator becomes another of its kind
        2 => {
            let i = choose(rng, &|i| {
                let s = toks[i].0.symbol().unwrap_or("");
                let binary = i > 0 && ends_atom(&toks[i - 1].0);
                (binary && (ARITH.contains(&s) || CMP.contains(&s)))
                    || matches!(toks[i].0, Tok::AugAssign(_))
            })?;
            let cur = text(i);
            let set = if ARITH.contains(&cur) {
                ARITH
            } else if CMP.contains(&cur) {
                CMP
            } else {
                AUG
            };
            let new = pick_other(rng, set, cur)?;
            Some(splice(src, toks[i].1.start, toks[i].1.end, new))
        }
        // the operands of a binary operator (two simple atoms) change places
        3 => {
            let i = choose(rng, &|i| {
                let s = toks[i].0.symbol().unwrap_or("");
                i >= 1
                    && i + 1 < n
                    && (ARITH.contains(&s) || CMP.contains(&s))
                    && simple_atom(&toks[i - 1].0)
                    && simple_atom(&toks[i + 1].0)
                    && !after_dot(i - 1)
                    && !matches!(
                        tok(i + 2),
                        Some(Tok::Dot | Tok::LParen | Tok::LBracket | Tok::DStar)
                    )
                    && !matches!(i.checked_sub(2).and_then(tok), Some(Tok::DStar))
            })?;
            let (a, b) = (toks[i - 1].1.clone(), toks[i + 1].1.clone());
            Some(format!(
                "{}{}{}{}{}",
                &src[..a.start],
                &src[b.clone()],
                &src[a.end..b.start],
                &src[a.clone()],
                &src[b.end..]
            ))
        }
        // a module member becomes another member of the same module
        4 => {
            let i = choose(rng, &|i| {
                i >= 2
                    && matches!(toks[i].0, Tok::Name(_))
                    && toks[i - 1].0 == Tok::Dot
                    && !after_dot(i - 2)
                    && matches!(&toks[i - 2].0, Tok::Name(m) if vocab.members(m).is_some())
            })?;
            let members = vocab.members(text(i - 2))?;
            let new = &members[rng.below(members.len())];
            Some(splice(src, toks[i].1.start, toks[i].1.end, new))
        }
        // a dtype name in a string becomes another dtype name
        5 => {
            let i = choose(
                rng,
                &|i| matches!(&toks[i].0, Tok::Str(s) if tessera_runtime::DType::parse(s).is_some()),
            )?;
            let new = format!("\"{}\"", pick(rng, &vocab.dtypes));
            Some(splice(src, toks[i].1.start, toks[i].1.end, &new))
        }
        // a tuple or list of integers (a shape) becomes an empty, zero-sized or huge one
        6 => {
            let i = choose(rng, &|i| {
                if on_mesh_line(i) {
                    return false;
                }
                let close = match toks[i].0 {
                    Tok::LParen => Tok::RParen,
                    Tok::LBracket => Tok::RBracket,
                    _ => return false,
                };
                let mut j = i + 1;
                while j < n && matches!(toks[j].0, Tok::Int(_) | Tok::Comma | Tok::Minus) {
                    j += 1;
                }
                j > i + 1 && j < n && toks[j].0 == close
            })?;
            let mut j = i + 1;
            while !matches!(toks[j].0, Tok::RParen | Tok::RBracket) {
                j += 1;
            }
            Some(splice(
                src,
                toks[i].1.end,
                toks[j].1.start,
                pick(rng, SHAPES),
            ))
        }
        // a call of a function the script defines is wrapped in op.kernel / graph.grad
        7 => {
            let defined: Vec<&str> = (1..n)
                .filter(|&i| toks[i - 1].0 == Tok::Def && matches!(toks[i].0, Tok::Name(_)))
                .map(text)
                .collect();
            let i = choose(rng, &|i| {
                matches!(toks[i].0, Tok::Name(_))
                    && defined.contains(&text(i))
                    && !after_dot(i)
                    && tok(i.wrapping_sub(1)) != Some(&Tok::Def)
                    && tok(i + 1) == Some(&Tok::LParen)
            })?;
            let new = pick(rng, WRAPS).replace("{}", text(i));
            Some(splice(src, toks[i].1.start, toks[i].1.end, &new))
        }
        // a function defined at the top level gets `@op.kernel`
        8 => {
            let i = choose(rng, &|i| {
                toks[i].0 == Tok::Def && (i == 0 || toks[i - 1].0 == Tok::Newline)
            })?;
            let lo = toks[i].1.start;
            let line_start = src[..lo].rfind('\n').map_or(0, |p| p + 1);
            (line_start == lo).then(|| splice(src, lo, lo, "@op.kernel\n"))
        }
        // a variable becomes another variable the script assigns
        9 => {
            let assigned: BTreeSet<&str> = (0..n)
                .filter(|&i| {
                    matches!(toks[i].0, Tok::Name(_))
                        && tok(i + 1) == Some(&Tok::Assign)
                        && (i == 0 || toks[i - 1].0 == Tok::Newline)
                })
                .map(text)
                .collect();
            let assigned: Vec<&str> = assigned.into_iter().collect();
            let i = choose(rng, &|i| {
                matches!(toks[i].0, Tok::Name(_))
                    && assigned.contains(&text(i))
                    && !after_dot(i)
                    && tok(i + 1) != Some(&Tok::Assign)
            })?;
            let new = pick_other(rng, &assigned, text(i))?;
            Some(splice(src, toks[i].1.start, toks[i].1.end, new))
        }
        // a line is dropped, duplicated or swapped with the next one
        _ => {
            let lines: Vec<&str> = src.split_inclusive('\n').collect();
            let code: Vec<usize> = (0..lines.len())
                .filter(|&l| {
                    let t = lines[l].trim();
                    !t.is_empty() && !t.starts_with('#')
                })
                .collect();
            if code.is_empty() {
                return None;
            }
            let l = code[rng.below(code.len())];
            let mut out: Vec<&str> = lines.clone();
            match rng.below(3) {
                0 => {
                    out.remove(l);
                }
                1 => out.insert(l, lines[l]),
                _ if l + 1 < lines.len() => out.swap(l, l + 1),
                _ => return None,
            }
            let mut s: String = out.concat();
            if !s.ends_with('\n') {
                s.push('\n');
            }
            Some(s)
        }
    }
}

/// Scripts that take seconds in a debug build whatever is mutated (FFT convolutions, a mesh of
/// 100,000 devices): left out of the bases to keep the test quick.
const SLOW: &[&str] = &[
    "conv_fft.tsr",
    "conv_spectral.tsr",
    "dist_mesh_100k_devices.tsr",
];

/// The bases of the well-formed programs: the scripts of the corpus that parse, less [`SLOW`]
/// and those that run kernels in the PTX emulator (seconds each in a debug build, too slow for
/// hundreds of runs).
pub fn bases(corpus: &[(String, String)]) -> Vec<&String> {
    corpus
        .iter()
        .filter(|(name, s)| {
            !name.ends_with("_emu.tsr")
                && !s.contains("\"emu\"")
                && !SLOW.contains(&name.as_str())
                && parse::parse_module(s, 0).is_ok()
        })
        .map(|(_, s)| s)
        .collect()
}

/// `count` programs, each one to three mutations of a script of `bases`, kept when it parses.
/// Returns them and the number generated in all (the ones that did not parse included).
pub fn generate(bases: &[&String], vocab: &Vocab, seed: u64, count: usize) -> (Vec<String>, usize) {
    assert!(!bases.is_empty());
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(count);
    let mut tried = 0;
    while out.len() < count {
        let mut src = bases[rng.below(bases.len())].clone();
        let mut changed = 0;
        let want = 1 + rng.below(3);
        for _ in 0..want * 8 {
            if changed == want {
                break;
            }
            if let Some(s) = mutate_once(&src, vocab, &mut rng) {
                src = s;
                changed += 1;
            }
        }
        if changed == 0 {
            continue;
        }
        tried += 1;
        if parse::parse_module(&src, 0).is_ok() {
            out.push(src);
        }
    }
    (out, tried)
}
