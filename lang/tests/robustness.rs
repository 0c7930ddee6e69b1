//! Robustness: seeded random token soups and mutations of valid programs must never panic,
//! every diagnostic must point inside the source (on char boundaries), and parsing stays fast.
//! Plus a timing check on a 1,000-line file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

mod common;
use std::time::{Duration, Instant};
use tessera_lang::ast::{Expr, ExprKind, Stmt, StmtKind};
use tessera_lang::parse::{is_complete, parse_expr, parse_module};
use tessera_lang::{SourceMap, Span};

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const FRAGMENTS: &[&str] = &[
    "x",
    "y",
    "foo",
    "op",
    "π",
    "naïve",
    "_",
    "def",
    "return",
    "if",
    "elif",
    "else",
    "for",
    "in",
    "while",
    "break",
    "continue",
    "pass",
    "assert",
    "and",
    "or",
    "not",
    "is",
    "True",
    "False",
    "None",
    "lambda",
    "try",
    "except",
    "finally",
    "global",
    "as",
    "match",
    "import",
    "class",
    "0",
    "1",
    "42",
    "1_000",
    "0x1f",
    "0o7",
    "0b1",
    "1.5",
    ".5",
    "1e-3",
    "1.",
    "99999999999999999999",
    "012",
    "'s'",
    "\"s\"",
    "'''t'''",
    "\"\"\"t\"\"\"",
    "'",
    "\"",
    "'''",
    "f'",
    "f'{x}'",
    "f'{x:.3f}'",
    "f'{",
    "f'{x!r}'",
    "f'{x=}'",
    "r'\\n'",
    "b'x'",
    "'\\x4'",
    "'\\u00e9'",
    "\\",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "@",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "=",
    "+=",
    "-=",
    "*=",
    "/=",
    "//=",
    "%=",
    "**=",
    "@=",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    ";",
    "->",
    "|",
    "&",
    "^",
    "~",
    "<<",
    ">>",
    ":=",
    "...",
    "!",
    "$",
    "?",
    "#",
    "# comment",
    " ",
    "  ",
    "    ",
    "\t",
    "\n",
    "\n",
    "\n",
    "\r\n",
    "\r",
    "😀",
    "é",
    "\u{301}",
    "\u{feff}",
    "\0",
];

const PROGRAMS: &[&str] = &[
    "x = 1\ny = x + 2 * 3\nprint(x, y)\n",
    "def f(a, b=1, *args, c, d=2):\n    if a > b:\n        return a\n    elif a == b:\n        pass\n    else:\n        return [i * 2 for i in args if i]\n    return None\n",
    "@op.kernel\n@op.autotune(cache=\"x\")\ndef k(x, w):\n    y = x @ w\n    return op.relu(y[0:2, :] + 1)\n",
    "for i, j in zip(a, b):\n    s += i * j\nelse:\n    s = -s ** 2\nwhile s > 0:\n    s -= 1\n    if s % 7 == 0:\n        break\n",
    "msg = f'{name!r:>8} = {value:.3f} {{ok}}'\nassert x is not None and y not in z, msg\n",
    "a, b = (1, 2)\n(c, d) = [3, 4]\nt = 1,\ne = ()\nx[i] = o.attr = a if b else c\n",
    "s = '''multi\nline''' \"and\" 'more'\nx = (1 +\n     2)\ny = 1 + \\\n    2\n",
    "π = 3.14159\nnaïve = π * 2\nprint(f'{naïve:.2f}')\r\nz = x[::2][-1]\r\n",
    "def g():\n    global n\n    try:\n        n = 1 // 0\n    except Exception as e:\n        n = {e.code: set([1])}\n    else:\n        pass\n    finally:\n        return n\n",
];

fn soup(rng: &mut Rng) -> String {
    let n = 1 + rng.below(40);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(rng.pick(FRAGMENTS));
        if rng.below(3) == 0 {
            s.push(' ');
        }
    }
    s
}

fn char_boundaries(s: &str) -> Vec<usize> {
    s.char_indices().map(|(i, _)| i).chain([s.len()]).collect()
}

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut s = src.to_string();
    for _ in 0..1 + rng.below(4) {
        let b = char_boundaries(&s);
        let i = b[rng.below(b.len())];
        match rng.below(6) {
            // delete a range
            0 | 1 => {
                let j = b[rng.below(b.len())];
                let (lo, hi) = (i.min(j), i.max(j).min(i.min(j) + 12));
                let hi = *b.iter().find(|&&x| x >= hi).unwrap_or(&s.len());
                s.replace_range(lo..hi, "");
            }
            // insert a fragment
            2 | 3 => s.insert_str(i, rng.pick(FRAGMENTS)),
            // insert structure breakers
            4 => s.insert_str(
                i,
                rng.pick(&[
                    "(", "[", "'", "\"", "\t", ":", "\n    ", "\n  ", "'''", ")", "]",
                ]),
            ),
            // duplicate a line
            _ => {
                let lines: Vec<&str> = s.split_inclusive('\n').collect();
                let l = lines[rng.below(lines.len())].to_string();
                s.insert_str(i, &l);
            }
        }
    }
    s
}

fn check_span(src: &str, s: Span, what: &str) {
    let (lo, hi) = (s.lo as usize, s.hi as usize);
    assert!(
        lo <= hi && hi <= src.len(),
        "{what} span {lo}..{hi} out of bounds in {src:?}"
    );
    assert!(
        src.is_char_boundary(lo) && src.is_char_boundary(hi),
        "{what} span {lo}..{hi} splits a char in {src:?}"
    );
}

fn walk_expr(src: &str, e: &Expr) {
    check_span(src, e.span, "expr");
    if let ExprKind::Attribute { attr, .. } = &e.kind {
        check_span(src, attr.span, "attr");
    }
    e.for_each_child(&mut |x| walk_expr(src, x));
}

fn walk_stmt(src: &str, s: &Stmt) {
    check_span(src, s.span, "stmt");
    match &s.kind {
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => walk_expr(src, e),
        StmtKind::Assign { targets, value } => {
            targets.iter().for_each(|t| walk_expr(src, t));
            walk_expr(src, value);
        }
        StmtKind::AugAssign { target, value, .. } => {
            walk_expr(src, target);
            walk_expr(src, value);
        }
        StmtKind::FunctionDef(f) => {
            check_span(src, f.span, "def");
            f.decorators.iter().for_each(|d| walk_expr(src, d));
            f.params
                .iter()
                .filter_map(|p| p.default.as_ref())
                .for_each(|d| walk_expr(src, d));
            f.body.iter().for_each(|s| walk_stmt(src, s));
        }
        StmtKind::If { test, body, orelse } | StmtKind::While { test, body, orelse } => {
            walk_expr(src, test);
            body.iter().chain(orelse).for_each(|s| walk_stmt(src, s));
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => {
            walk_expr(src, target);
            walk_expr(src, iter);
            body.iter().chain(orelse).for_each(|s| walk_stmt(src, s));
        }
        StmtKind::Assert { test, msg } => {
            walk_expr(src, test);
            msg.iter().for_each(|m| walk_expr(src, m));
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            for h in handlers {
                check_span(src, h.span, "except");
                h.typ.iter().for_each(|t| walk_expr(src, t));
                h.body.iter().for_each(|s| walk_stmt(src, s));
            }
            body.iter()
                .chain(orelse)
                .chain(finalbody)
                .for_each(|s| walk_stmt(src, s));
        }
        StmtKind::Global(names) => names.iter().for_each(|n| check_span(src, n.span, "global")),
        StmtKind::Return(None) | StmtKind::Break | StmtKind::Continue | StmtKind::Pass => {}
    }
}

/// Parses `src` every way and checks the results; returns the time the module parse took.
fn check(src: &str, render: bool) -> Duration {
    let t = Instant::now();
    let r = parse_module(src, 0);
    let took = t.elapsed();
    match &r {
        Ok(m) => m.body.iter().for_each(|s| walk_stmt(src, s)),
        Err(ds) => {
            assert!(!ds.is_empty());
            let mut sm = SourceMap::new();
            sm.add("fuzz.tsr", src);
            for d in ds {
                assert!(d.code.is_syntax(), "{d:?}");
                check_span(
                    src,
                    d.span.expect("every syntax error has a span"),
                    "diagnostic",
                );
                for l in &d.secondary {
                    check_span(src, l.span, "label");
                }
                if render {
                    let text = d.render(&sm, false);
                    assert!(text.starts_with("error[E000"), "{text}");
                }
            }
        }
    }
    let _ = is_complete(src);
    match parse_expr(src, 0) {
        Ok(e) => walk_expr(src, &e),
        Err(ds) => ds
            .iter()
            .for_each(|d| check_span(src, d.span.expect("span"), "expr diagnostic")),
    }
    took
}

#[test]
fn random_inputs_never_panic() {
    let mut rng = Rng(0x7e55e7a);
    let mut worst = (Duration::ZERO, String::new());
    let mut failed = 0usize;
    let n = 12_000;
    for i in 0..n {
        let src = if i % 2 == 0 {
            soup(&mut rng)
        } else {
            let base = PROGRAMS[rng.below(PROGRAMS.len())];
            mutate(&mut rng, base)
        };
        let took = check(&src, i % 8 == 0);
        if parse_module(&src, 0).is_err() {
            failed += 1;
        }
        if took > worst.0 {
            worst = (took, src);
        }
    }
    // the valid programs themselves parse
    for p in PROGRAMS {
        assert!(parse_module(p, 0).is_ok(), "{p:?}");
    }
    assert!(
        failed > n / 4,
        "mutations should mostly break programs: {failed}"
    );
    let limit = if cfg!(debug_assertions) {
        Duration::from_millis(500)
    } else {
        Duration::from_millis(20)
    };
    assert!(
        worst.0 < limit,
        "slowest input took {:?}: {:?}",
        worst.0,
        worst.1
    );
}

fn thousand_lines() -> String {
    let block = "\
@op.kernel
def layer_{i}(x, w, b=None, *, act='relu'):
    # a comment
    y = x @ w
    if b is not None:
        y = y + b[None, :]
    for i, (lo, hi) in enumerate(zip(los, his)):
        y[lo:hi, ::2] += -scale ** 2 * f'{i:>4}'.count('x')
    while n > 0 and not done:
        n -= 1
    assert y.shape == (64, 4096), f\"bad shape {y.shape!r}\"
    return [v * 2 for v in y if v > 0.5e-3] if act == 'relu' else (y, 1_000)

";
    let mut src = String::new();
    let mut i = 0;
    while src.lines().count() < 1000 {
        src.push_str(&block.replace("{i}", &i.to_string()));
        i += 1;
    }
    src
}

#[test]
fn thousand_line_file_is_fast() {
    let src = thousand_lines();
    assert!(parse_module(&src, 0).is_ok());
    // best of several runs: the machine may be shared
    let mut per = Duration::MAX;
    for _ in 0..7 {
        let t = Instant::now();
        let m = parse_module(&src, 0).expect("parses");
        per = per.min(t.elapsed());
        assert!(m.body.len() > 50);
    }
    eprintln!(
        "1,000-line file: {per:?} per parse ({} lines)",
        src.lines().count()
    );
    let limit = if cfg!(debug_assertions) {
        Duration::from_millis(2000)
    } else {
        Duration::from_millis(10)
    };
    assert!(per < limit, "{per:?}");
}

#[test]
fn deep_nesting_is_safe_on_a_small_stack() {
    // 1 MiB: smaller than any thread the parser will run on
    let h = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            for n in [150, 199, 250, 5000] {
                for (o, c) in [("(", ")"), ("[", "]"), ("f(", ")"), ("x[", "]")] {
                    let src = format!("y = {}1{}\n", o.repeat(n), c.repeat(n));
                    let r = parse_module(&src, 0);
                    assert_eq!(r.is_ok(), n < 200, "{n} {o}");
                }
            }
            let src = format!("y = {}1\n", "- + ".repeat(3000));
            assert!(parse_module(&src, 0).is_err());
        })
        .expect("spawn");
    h.join().expect("no overflow");
}
