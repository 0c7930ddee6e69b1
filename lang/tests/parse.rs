//! Parser tests: accepted programs (AST shape as S-expressions), rejected programs (codes,
//! messages, positions, rendered output), error recovery, and `is_complete`.

mod common;
use common::{errors, expr, module};
use tessera_lang::parse::{is_complete, parse_expr, parse_module, Completeness};

#[test]
fn precedence() {
    let cases = [
        ("-2**2", "(neg (pow 2 2))"),
        ("2**-1", "(pow 2 (neg 1))"),
        ("2**3**2", "(pow 2 (pow 3 2))"),
        ("-x ** -y", "(neg (pow x (neg y)))"),
        ("a + b * c", "(add a (mul b c))"),
        ("a * b + c", "(add (mul a b) c)"),
        ("a - b - c", "(sub (sub a b) c)"),
        (
            "a / b // c % d @ e",
            "(matmul (mod (floordiv (div a b) c) d) e)",
        ),
        ("-a * b", "(mul (neg a) b)"),
        ("+a - -b", "(sub (pos a) (neg b))"),
        ("a + b < c * d", "(< (add a b) (mul c d))"),
        ("a < b <= c", "(cmp a < b <= c)"),
        ("a == b != c", "(cmp a == b != c)"),
        ("a in b", "(in a b)"),
        ("a not in b", "(not in a b)"),
        ("a is b", "(is a b)"),
        ("a is not None", "(is not a None)"),
        ("not a == b", "(not (== a b))"),
        ("not not a", "(not (not a))"),
        ("a and b or c and d", "(or (and a b) (and c d))"),
        ("a or b or c", "(or (or a b) c)"),
        ("not a and b", "(and (not a) b)"),
        ("a if b else c", "(ifexp b a c)"),
        ("a if b else c if d else e", "(ifexp b a (ifexp d c e))"),
        ("a or b if c and d else e", "(ifexp (and c d) (or a b) e)"),
        ("f(x)(y)", "(call (call f x) y)"),
        ("a.b.c", "(. (. a b) c)"),
        ("a.b(c)[d]", "(index (call (. a b) c) d)"),
        ("-a.b", "(neg (. a b))"),
        ("-a[0] ** 2", "(neg (pow (index a 0) 2))"),
        ("(a + b) * c", "(mul (add a b) c)"),
        ("x @ w + b", "(add (matmul x w) b)"),
        ("1 - - 1", "(sub 1 (neg 1))"),
        ("a | b & c", "(bor a (band b c))"),
        ("a & b | c", "(bor (band a b) c)"),
        ("a + b & c", "(band (add a b) c)"),
        ("a < b | c", "(< a (bor b c))"),
        ("~a * b", "(mul (invert a) b)"),
        ("~a ** 2", "(invert (pow a 2))"),
        ("-~a", "(neg (invert a))"),
        ("not a & b", "(not (band a b))"),
        ("a & b and c | d", "(and (band a b) (bor c d))"),
        ("(x > 0) & ~(x > 1)", "(band (> x 0) (invert (> x 1)))"),
        ("{}", "(dict)"),
        ("{'a': 1, 2: b + 1,}", "(dict (\"a\" 1) (2 (add b 1)))"),
        ("{k: {1: 2}}[k]", "(index (dict (k (dict (1 2)))) k)"),
    ];
    for (src, want) in cases {
        assert_eq!(expr(src), want, "{src}");
    }
}

#[test]
fn atoms_and_literals() {
    let cases = [
        ("1_000_000", "1000000"),
        ("0xff", "255"),
        ("0o17", "15"),
        ("0b1_01", "5"),
        ("0", "0"),
        ("00", "0"),
        ("9223372036854775807", "9223372036854775807"),
        ("1e-3", "0.001"),
        (".5", "0.5"),
        ("1.", "1.0"),
        ("1_000.5", "1000.5"),
        ("2.5e+2", "250.0"),
        ("True", "True"),
        ("False", "False"),
        ("None", "None"),
        ("'a'", "\"a\""),
        ("\"a\" 'b' \"c\"", "\"abc\""),
        (r#"'\n\t\\\'\"\x41\u00e9\101'"#, "\"\\n\\t\\\\'\\\"AéA\""),
        (r"r'\n\d'", "\"\\\\n\\\\d\""),
        ("'''a\nb'''", "\"a\\nb\""),
        ("\"\"\"x\"y\"\"\"", "\"x\\\"y\""),
        ("'\\q'", "\"\\\\q\""),
        ("u'x'", "\"x\""),
        ("()", "(tuple)"),
        ("(1,)", "(tuple 1)"),
        ("(1, 2,)", "(tuple 1 2)"),
        ("(1)", "1"),
        ("[]", "(list)"),
        ("[1]", "(list 1)"),
        ("[1, 2,]", "(list 1 2)"),
        ("[[1], [2, 3]]", "(list (list 1) (list 2 3))"),
        ("[x * 2 for x in xs]", "(listcomp (mul x 2) x xs)"),
        ("[x for x in xs if x if y]", "(listcomp x x xs x y)"),
        ("[a for a, b in ps]", "(listcomp a (tuple a b) ps)"),
        ("[a for (a, b) in ps]", "(listcomp a (tuple a b) ps)"),
        (
            "[a if c else b for a in xs]",
            "(listcomp (ifexp c a b) a xs)",
        ),
        ("naïve + π", "(add naïve π)"),
        ("f()", "(call f)"),
        ("f(1, *xs, k=2)", "(call f 1 (star xs) (kw k 2))"),
        (
            "print(*args, sep=' ', end='\\n')",
            "(call print (star args) (kw sep \" \") (kw end \"\\n\"))",
        ),
        ("f(a,)", "(call f a)"),
        ("x[-1]", "(index x (neg 1))"),
        ("x[0:2, :]", "(index x (tuple (slice 0 2 _) (slice _ _ _)))"),
        ("x[::2]", "(index x (slice _ _ 2))"),
        ("x[1:]", "(index x (slice 1 _ _))"),
        ("x[:n]", "(index x (slice _ n _))"),
        ("x[a:b:c]", "(index x (slice a b c))"),
        ("x[1, 2]", "(index x (tuple 1 2))"),
        ("x[1,]", "(index x (tuple 1))"),
        ("x[i][j]", "(index (index x i) j)"),
    ];
    for (src, want) in cases {
        assert_eq!(expr(src), want, "{src}");
    }
}

#[test]
fn fstrings() {
    let cases = [
        ("f'a{x}b'", "(f \"a\" (fmt x) \"b\")"),
        ("f'{x:.3f}'", "(f (fmt x :\".3f\"))"),
        (
            "f'{n:d} {s:>8}'",
            "(f (fmt n :\"d\") \" \" (fmt s :\">8\"))",
        ),
        ("f'{x!r}{y!s}'", "(f (fmt x !r) (fmt y !s))"),
        ("f'{{}}{x}'", "(f \"{}\" (fmt x))"),
        ("f'{x=}'", "(f \"x=\" (fmt x !r))"),
        ("f'{x = :.2f}'", "(f \"x = \" (fmt x :\".2f\"))"),
        ("f'{a + b * 2}'", "(f (fmt (add a (mul b 2))))"),
        ("f'{d[\"k\"]}'", "(f (fmt (index d \"k\")))"),
        (
            "f\"{', '.join(xs)}\"",
            "(f (fmt (call (. \", \" join) xs)))",
        ),
        ("f'{x[1:2]}'", "(f (fmt (index x (slice 1 2 _))))"),
        ("f'{a != b}'", "(f (fmt (!= a b)))"),
        ("'a' f'{b}' 'c'", "(f \"a\" (fmt b) \"c\")"),
        ("f'\\n{x}\\t'", "(f \"\\n\" (fmt x) \"\\t\")"),
        ("rf'\\n{x}'", "(f \"\\\\n\" (fmt x))"),
        ("f'''{x}\n{y}'''", "(f (fmt x) \"\\n\" (fmt y))"),
        ("f'plain'", "(f \"plain\")"),
    ];
    for (src, want) in cases {
        assert_eq!(expr(src), want, "{src}");
    }
}

#[test]
fn fstring_spans_point_into_the_source() {
    let src = "x = f'{aa + bb:.3f}'\n";
    let m = parse_module(src, 3).expect("parses");
    let tessera_lang::ast::StmtKind::Assign { value, .. } = &m.body[0].kind else {
        panic!("not an assignment")
    };
    assert_eq!(value.span.range(), 4..20);
    assert_eq!(value.span.file, 3);
    let tessera_lang::ast::ExprKind::FString(parts) = &value.kind else {
        panic!("not an f-string")
    };
    let tessera_lang::ast::FStringPart::Expr { expr, .. } = &parts[0] else {
        panic!("not a field")
    };
    assert_eq!(&src[expr.span.range()], "aa + bb");
    assert_eq!(expr.span.file, 3);
}

#[test]
fn statements() {
    let cases = [
        ("x = 1\n", "(= x 1)"),
        ("x = 1", "(= x 1)"),
        ("a = b = 1\n", "(= a b 1)"),
        ("a, b = f()\n", "(= (tuple a b) (call f))"),
        ("(a, b) = 1, 2\n", "(= (tuple a b) (tuple 1 2))"),
        ("[a, b] = t\n", "(= (list a b) t)"),
        ("a, (b, c) = t\n", "(= (tuple a (tuple b c)) t)"),
        ("x[i] = o.attr = 3\n", "(= (index x i) (. o attr) 3)"),
        (
            "x[0:2, :] = y\n",
            "(= (index x (tuple (slice 0 2 _) (slice _ _ _))) y)",
        ),
        ("z = 1,\n", "(= z (tuple 1))"),
        ("x += 1\n", "(+= x 1)"),
        ("x -= 1; y *= 2; z /= 3\n", "(-= x 1)\n(*= y 2)\n(/= z 3)"),
        (
            "a //= 1; b %= 2; c **= 3; d @= e\n",
            "(//= a 1)\n(%= b 2)\n(**= c 3)\n(@= d e)",
        ),
        ("o.n += 1\n", "(+= (. o n) 1)"),
        ("x[i] -= 1\n", "(-= (index x i) 1)"),
        ("f(x)\n", "(call f x)"),
        ("1, 2\n", "(tuple 1 2)"),
        ("pass\n", "pass"),
        ("x = 1;\n", "(= x 1)"),
        (
            "def f():\n    return\n",
            "(def f (params) (block (return)))",
        ),
        (
            "def f():\n    return 1, 2\n",
            "(def f (params) (block (return (tuple 1 2))))",
        ),
        ("assert x\n", "(assert x)"),
        ("assert x == 1, 'msg'\n", "(assert (== x 1) \"msg\")"),
        ("print('hi')  # comment\n", "(call print \"hi\")"),
        ("x = (1 +\n     2)\n", "(= x (add 1 2))"),
        ("x = [1,\n  2,\n# comment\n\n  3]\n", "(= x (list 1 2 3))"),
        ("x = 1 + \\\n    2\n", "(= x (add 1 2))"),
        ("x = 1\r\ny = 2\r\n", "(= x 1)\n(= y 2)"),
        ("x = 1\ry = 2\r", "(= x 1)\n(= y 2)"),
        ("\n\n# only comments\n   \n", ""),
        ("\u{feff}x = 1\n", "(= x 1)"),
        (
            "x = a not in b is not c\n",
            "(= x (cmp a not in b is not c))",
        ),
        ("x = not a in b\n", "(= x (not (in a b)))"),
        ("", ""),
    ];
    for (src, want) in cases {
        assert_eq!(module(src), want, "{src:?}");
    }
}

#[test]
fn compound_statements() {
    let cases = [
        (
            "if x:\n    y = 1\nelif z:\n    pass\nelse:\n    w = 2\n",
            "(if x (block (= y 1)) (block (if z (block pass) (block (= w 2)))))",
        ),
        ("if a: b = 1; c = 2\n", "(if a (block (= b 1) (= c 2)))"),
        (
            "if a:\n    if b:\n        c\n    d\ne\n",
            "(if a (block (if b (block c)) d))\ne",
        ),
        (
            "if a:\n  x\nelif b:\n  y\nelif c:\n  z\n",
            "(if a (block x) (block (if b (block y) (block (if c (block z))))))",
        ),
        (
            "for i in range(3):\n    print(i)\nelse:\n    pass\n",
            "(for i (call range 3) (block (call print i)) (block pass))",
        ),
        ("for i, j in pairs: s += i\n", "(for (tuple i j) pairs (block (+= s i)))"),
        ("for (i, j) in pairs: pass\n", "(for (tuple i j) pairs (block pass))"),
        ("for x in 1, 2: pass\n", "(for x (tuple 1 2) (block pass))"),
        (
            "while n > 0:\n    n -= 1\n    if n == 3:\n        break\n    continue\n",
            "(while (> n 0) (block (-= n 1) (if (== n 3) (block break)) continue))",
        ),
        (
            "def f(a, b=1, *args, c, d=2):\n    return a + b\n",
            "(def f (params a b=1 *args kw:c kw:d=2) (block (return (add a b))))",
        ),
        ("def f(*, a, b=2): pass\n", "(def f (params kw:a kw:b=2) (block pass))"),
        ("def f(): pass\n", "(def f (params) (block pass))"),
        ("def f(a,): pass\n", "(def f (params a) (block pass))"),
        (
            "def f(x: int, y: 'T' = 1.0) -> int:\n    return x\n",
            "(def f (params x y=1.0) (block (return x)))",
        ),
        (
            "@op.kernel\n@op.autotune(cache=\"x\")\ndef k(x):\n    pass\n",
            "(def k (params x) (decorators (. op kernel) (call (. op autotune) (kw cache \"x\"))) (block pass))",
        ),
        (
            "def outer():\n    def inner(x):\n        return x\n    return inner\n",
            "(def outer (params) (block (def inner (params x) (block (return x))) (return inner)))",
        ),
        (
            "if x:\n\n    # comment\n    y\n\n\nz\n",
            "(if x (block y))\nz",
        ),
        ("if x:\r\n    y = 2\r\n", "(if x (block (= y 2)))"),
        ("if x:\n    y", "(if x (block y))"),
        (
            "try:\n    a\nexcept Exception as e:\n    b\nexcept:\n    c\nelse:\n    d\nfinally:\n    f\n",
            "(try (block a) (except Exception as e (block b)) (except (block c)) (else (block d)) (finally (block f)))",
        ),
        ("try: a\nfinally: b\n", "(try (block a) (finally (block b)))"),
        (
            "try:\n    a\nexcept (Exception,):\n    pass\n",
            "(try (block a) (except (tuple Exception) (block pass)))",
        ),
        (
            "def f():\n    global a, b\n    a = 1\n",
            "(def f (params) (block (global a b) (= a 1)))",
        ),
        ("match = 1\n", "(= match 1)"),
        ("match(x)\n", "(call match x)"),
        ("d = {1: 2}\n", "(= d (dict (1 2)))"),
    ];
    for (src, want) in cases {
        assert_eq!(module(src), want, "{src:?}");
    }
}

#[test]
fn outside_the_subset_is_not_supported_in_tessera() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "import time\n",
            "`import` is not supported in Tessera",
            "1:1",
        ),
        (
            "with f as g:\n    pass\n",
            "`with` statements are not supported in Tessera",
            "1:1",
        ),
        (
            "d = {k: 1 for k in x}\n",
            "dict comprehensions are not supported in Tessera",
            "1:5",
        ),
        (
            "s = {k for k in x}\n",
            "set comprehensions are not supported in Tessera",
            "1:5",
        ),
        (
            "s = {1, 2}\n",
            "set literals are not supported in Tessera",
            "1:5",
        ),
        (
            "f({1})\n",
            "set literals are not supported in Tessera",
            "1:3",
        ),
        (
            "match x:\n    case 1:\n        pass\n",
            "`match` statements are not supported in Tessera",
            "1:1",
        ),
        (
            "raise x\n",
            "`raise` statements are not supported in Tessera",
            "1:1",
        ),
        (
            "try:\n    pass\nx = 1\n",
            "expected `except` or `finally` block after `try`",
            "3:1",
        ),
        (
            "except:\n    pass\n",
            "`except` without a matching `try`",
            "1:1",
        ),
        (
            "finally:\n    pass\n",
            "`finally` without a matching `try`",
            "1:1",
        ),
        (
            "try:\n    pass\nexcept:\n    pass\nexcept Exception:\n    pass\n",
            "default 'except:' must be last",
            "3:1",
        ),
        (
            "for i in x:\n    try:\n        pass\n    finally:\n        break\nbreak\n",
            "'break' outside loop",
            "6:1",
        ),
    ];
    for (src, msg, at) in cases {
        let errs = errors(src);
        assert_eq!(errs.len(), 1, "{src:?}: {errs:?}");
        assert_eq!(
            errs[0],
            ("E0001".to_string(), msg.to_string(), at.to_string()),
            "{src:?}"
        );
    }
}

#[test]
fn spans() {
    let src = "def f(a):\n    return a + 1\nx = f(2)\n";
    let m = parse_module(src, 0).expect("parses");
    assert_eq!(&src[m.body[0].span.range()], "def f(a):\n    return a + 1");
    let tessera_lang::ast::StmtKind::FunctionDef(f) = &m.body[0].kind else {
        panic!()
    };
    assert_eq!(&src[f.span.range()], "def f(a)");
    assert_eq!(&src[f.name.span.range()], "f");
    assert_eq!(&src[f.body[0].span.range()], "return a + 1");
    assert_eq!(&src[m.body[1].span.range()], "x = f(2)");
    let e = parse_expr("foo.bar(1, x[2:3])", 0).expect("parses");
    assert_eq!(e.span.range(), 0..18);
    let src = "π = 'é' + naïve\n";
    let m = parse_module(src, 0).expect("parses");
    assert_eq!(&src[m.body[0].span.range()], "π = 'é' + naïve");
}
#[test]
fn nesting_limits() {
    let deep =
        |open: &str, close: &str, n: usize| format!("x = {}1{}\n", open.repeat(n), close.repeat(n));
    // at the limit: fine
    assert!(parse_module(&deep("(", ")", 190), 0).is_ok());
    assert!(parse_module(&deep("[", "]", 190), 0).is_ok());
    for src in [
        "(".repeat(5000),
        "[".repeat(5000),
        deep("(", ")", 5000),
        deep("[", "]", 5000),
        deep("f(", ")", 5000),
        format!("x = {}1\n", "- ".repeat(5000)),
        format!("x = {}1\n", "-".repeat(5000)),
        format!("x = {}1\n", "not ".repeat(5000)),
        format!("x = 1{}\n", " ** 2".repeat(5000)),
        format!("x = 1{}\n", " if 1 else 1".repeat(5000)),
        format!("x = 1{}\n", " + 1".repeat(5000)),
        format!("x = a{}\n", ".b".repeat(5000)),
        format!("x = a{}\n", "[0]".repeat(5000)),
        format!("x = {}\n", "f'{".repeat(50) + &"'}".repeat(50)),
    ] {
        let ds = parse_module(&src, 0).expect_err("too deep");
        assert!(ds.iter().any(|d| d.code.as_str() == "E0001"), "{ds:?}");
        for d in &ds {
            let s = d.span.expect("has a span");
            assert!(s.hi as usize <= src.len());
        }
    }
    // nested blocks
    let mut src = String::new();
    for i in 0..150 {
        src.push_str(&" ".repeat(i));
        src.push_str("if x:\n");
    }
    src.push_str(&" ".repeat(150));
    src.push_str("pass\n");
    let ds = parse_module(&src, 0).expect_err("too deep");
    assert!(ds
        .iter()
        .any(|d| d.message.contains("too many levels of indentation")));
}

#[test]
fn parse_expr_entry_point() {
    assert_eq!(expr("f(x, 2)"), "(call f x 2)");
    assert_eq!(expr("  a + b  "), "(add a b)");
    assert_eq!(expr("(a +\n b)"), "(add a b)");
    assert!(parse_expr("", 0).is_err());
    assert!(parse_expr("x = 1", 0).is_err());
    assert!(parse_expr("f(", 0).is_err());
    assert!(parse_expr("a b", 0).is_err());
}

#[test]
fn completeness() {
    use Completeness::*;
    let cases = [
        ("", Complete),
        ("# just a comment\n", Complete),
        ("x = 1", Complete),
        ("x = 1\n", Complete),
        ("print(1)", Complete),
        ("x = (1,", Incomplete),
        ("x = [1,\n 2", Incomplete),
        ("x = (1 +\n  2)", Complete),
        ("f(a,\n", Incomplete),
        ("s = '''abc", Incomplete),
        ("s = '''abc\n\ndef", Incomplete),
        ("s = '''abc'''", Complete),
        ("x = 1 + \\", Incomplete),
        ("x = 1 + \\\n", Incomplete),
        ("if x:", Incomplete),
        ("if x:\n", Incomplete),
        ("if x:\n    pass", Incomplete),
        ("if x:\n    pass\n", Incomplete),
        ("if x:\n    pass\n\n", Complete),
        ("if x:\n    pass\n    \n", Complete),
        ("if x:\n    pass\nelse:", Incomplete),
        ("if x:\n    pass\nelse:\n    y\n\n", Complete),
        ("def f():\n    return (1 +\n", Incomplete),
        ("def f():\n    return 1\n\n", Complete),
        ("for i in range(3): print(i)", Incomplete),
        ("for i in range(3): print(i)\n\n", Complete),
        ("@dec", Incomplete),
        ("@dec\n", Incomplete),
        ("if x:\n  pass\nx = 1\n", Complete),
        ("try:\n    x\n", Incomplete),
        ("try:\n    x\nexcept Exception as e:\n    y\n", Incomplete),
        ("try:\n    x\nexcept Exception as e:\n    y\n\n", Complete),
        ("x = 1 +", Invalid),
        ("x = )", Invalid),
        ("x = 'abc", Invalid),
        ("if x", Invalid),
        ("y = )\nx = (", Invalid),
        ("  x = 1", Invalid),
        ("if x:\n    y = (\n", Incomplete),
        ("x = 1\r\nif y:\r\n    z\r\n\r\n", Complete),
    ];
    for (src, want) in cases {
        assert_eq!(is_complete(src), want, "{src:?}");
    }
}
