//! Parser tests of rejected programs: codes, messages and positions, rendered diagnostics, and
//! error recovery (every bad line reported).

mod common;
use common::{errors, render};
use tessera_lang::parse::parse_module;

/// `(code, message, line:col)` of one error.
type Expected = (&'static str, &'static str, &'static str);

/// Each case: source, then every error, in order.
#[test]
fn rejected_programs() {
    let cases: &[(&str, &[Expected])] = &[
        ("x = )\n", &[("E0001", "unmatched `)`", "1:5")]),
        (
            "x = (1 + )\n",
            &[("E0001", "expected an expression, found `)`", "1:10")],
        ),
        (
            "x =\n",
            &[("E0001", "expected an expression, found end of line", "1:4")],
        ),
        (
            "if x\n    pass\n",
            &[(
                "E0001",
                "expected `:` after the `if` condition, found end of line",
                "1:5",
            )],
        ),
        (
            "if x = 1:\n    pass\n",
            &[(
                "E0001",
                "expected `:` after the `if` condition, found `=`",
                "1:6",
            )],
        ),
        (
            "while x y:\n    pass\n",
            &[(
                "E0001",
                "expected `:` after the `while` condition, found identifier `y`",
                "1:9",
            )],
        ),
        (
            "else:\n    pass\n",
            &[("E0001", "`else` without a matching `if`", "1:1")],
        ),
        (
            "f(1 2)\n",
            &[("E0001", "expected `,` or `)`, found integer `2`", "1:5")],
        ),
        (
            "x = 1 2\n",
            &[("E0001", "expected end of line, found integer `2`", "1:7")],
        ),
        ("1 = x\n", &[("E0001", "cannot assign to a literal", "1:1")]),
        (
            "return 1\n",
            &[("E0001", "'return' outside function", "1:1")],
        ),
        (
            "def f():\n    break\nwhile x:\n    f()\n",
            &[("E0001", "'break' outside loop", "2:5")],
        ),
        (
            "for i in x:\n    pass\nelse:\n    continue\n",
            &[("E0001", "'continue' not properly in loop", "4:5")],
        ),
        (
            "f() = 3\n",
            &[("E0001", "cannot assign to a function call", "1:1")],
        ),
        (
            "a + b = 3\n",
            &[("E0001", "cannot assign to an expression", "1:1")],
        ),
        (
            "a, 1 = t\n",
            &[("E0001", "cannot assign to a literal", "1:4")],
        ),
        (
            "(a, b) += 1\n",
            &[("E0001", "cannot use augmented assignment on a tuple", "1:1")],
        ),
        (
            "for f() in x:\n    pass\n",
            &[("E0001", "cannot assign to a function call", "1:5")],
        ),
        ("x = (1,\n", &[("E0002", "unclosed `(`", "1:5")]),
        ("foo(\nx = 1\ny = 2\n", &[("E0002", "unclosed `(`", "1:4")]),
        ("x = [1, 2\n", &[("E0002", "unclosed `[`", "1:5")]),
        (
            "s = 'abc\n",
            &[("E0002", "unterminated string literal", "1:5")],
        ),
        (
            "s = \"\"\"abc\n\n",
            &[("E0002", "unterminated triple-quoted string", "1:5")],
        ),
        (
            "z = (]\n",
            &[("E0001", "closing `]` does not match the opening `(`", "1:6")],
        ),
        ("if x:\n\tpass\n", &[("E0003", "tab in indentation", "2:1")]),
        (
            "if x:\n    a\n  b\n",
            &[(
                "E0003",
                "unindent does not match any outer indentation level",
                "3:3",
            )],
        ),
        ("  x = 1\n", &[("E0003", "unexpected indent", "1:3")]),
        (
            "x = 1\n    y = 2\n",
            &[("E0003", "unexpected indent", "2:5")],
        ),
        (
            "if x:\ny = 1\n",
            &[(
                "E0003",
                "expected an indented block after the `if` statement on line 1",
                "2:1",
            )],
        ),
        (
            "def f():\n",
            &[(
                "E0003",
                "expected an indented block after the function definition on line 1",
                "1:9",
            )],
        ),
        (
            "def (x):\n    pass\n",
            &[("E0001", "expected a function name, found `(`", "1:5")],
        ),
        (
            "def f(1): pass\n",
            &[(
                "E0001",
                "expected a parameter or `)`, found integer `1`",
                "1:7",
            )],
        ),
        (
            "def f(a=1, b): pass\n",
            &[(
                "E0001",
                "a parameter without a default follows a parameter with a default",
                "1:12",
            )],
        ),
        (
            "def f(a, a): pass\n",
            &[("E0001", "duplicate parameter `a`", "1:10")],
        ),
        (
            "def f(*): pass\n",
            &[(
                "E0001",
                "a bare `*` must be followed by keyword-only parameters",
                "1:7",
            )],
        ),
        (
            "def f(**kw): pass\n",
            &[(
                "E0001",
                "`**kwargs` parameters are not supported in Tessera",
                "1:7",
            )],
        ),
        (
            "@dec\nx = 1\n",
            &[(
                "E0001",
                "a decorator must be followed by a function definition",
                "1:1",
            )],
        ),
        (
            "f(a=1, 2)\n",
            &[(
                "E0001",
                "positional argument follows keyword argument",
                "1:8",
            )],
        ),
        (
            "f(**k)\n",
            &[("E0001", "`**` unpacking is not supported in Tessera", "1:3")],
        ),
        (
            "x = [i for i in a for j in b]\n",
            &[(
                "E0001",
                "only one `for` clause in a list comprehension is supported in Tessera",
                "1:19",
            )],
        ),
        (
            "x = a if b\n",
            &[("E0001", "expected `else`, found end of line", "1:11")],
        ),
        (
            "x = [1 for]\n",
            &[("E0001", "expected a loop variable, found `]`", "1:11")],
        ),
        (
            "for x y in z:\n  pass\n",
            &[("E0001", "expected `in`, found identifier `y`", "1:7")],
        ),
        (
            "import os\n",
            &[("E0001", "`import` is not supported in Tessera", "1:1")],
        ),
        (
            "class A:\n    pass\n",
            &[("E0001", "classes are not supported in Tessera", "1:1")],
        ),
        (
            "x = lambda: 1\n",
            &[("E0001", "`lambda` is not supported in Tessera", "1:5")],
        ),
        (
            "x = a ^ b\n",
            &[(
                "E0001",
                "the `^` operator is not supported in Tessera",
                "1:7",
            )],
        ),
        (
            "x = a << 2\n",
            &[(
                "E0001",
                "the `<<` operator is not supported in Tessera",
                "1:7",
            )],
        ),
        (
            "x = b'abc'\n",
            &[(
                "E0001",
                "bytes literals are not supported in Tessera",
                "1:5",
            )],
        ),
        (
            "x = 10000000000000000000\n",
            &[("E0001", "integer literal is too large", "1:5")],
        ),
        (
            "x = 012\n",
            &[(
                "E0001",
                "leading zeros in decimal integer literals are not permitted",
                "1:5",
            )],
        ),
        (
            "x = $\n",
            &[("E0001", "invalid character `$` in the source", "1:5")],
        ),
        (
            "x = 1 \\ 2\n",
            &[(
                "E0001",
                "a line continuation `\\` must be the last character on its line",
                "1:7",
            )],
        ),
        ("x = '\\x4'\n", &[("E0001", "invalid `\\x` escape", "1:6")]),
        (
            "x = f'{}'\n",
            &[("E0001", "f-string: empty expression not allowed", "1:7")],
        ),
        (
            "x = f'{x'\n",
            &[("E0001", "f-string: expecting `}`", "1:7")],
        ),
        (
            "x = f'}'\n",
            &[("E0001", "f-string: single `}` is not allowed", "1:7")],
        ),
        (
            "x = f'{x!z}'\n",
            &[("E0001", "f-string: invalid conversion character", "1:9")],
        ),
        (
            "x = f'{a +}'\n",
            &[("E0001", "expected an expression, found end of line", "1:11")],
        ),
        (
            "x = f'{a b}'\n",
            &[(
                "E0001",
                "expected end of line, found identifier `b`",
                "1:10",
            )],
        ),
    ];
    for (src, want) in cases {
        let got = errors(src);
        let got: Vec<(&str, &str, &str)> = got
            .iter()
            .map(|(c, m, a)| (c.as_str(), m.as_str(), a.as_str()))
            .collect();
        assert_eq!(&got, want, "{src:?}");
    }
}

#[test]
fn rendered_diagnostics() {
    let src = "x = 1\nif x = 1:\n    pass\n";
    let ds = parse_module(src, 0).expect_err("does not parse");
    let text = render(src, &ds);
    let want = "\
error[E0001]: expected `:` after the `if` condition, found `=`
   ╭─[ t.tsr:2:6 ]
   │
 2 │ if x = 1:
   │      ┬  
   │      ╰── expected `:`
   │ 
   │ Help: did you mean `==`? (to compare two values, use `==`)
───╯
";
    assert_eq!(text, want);

    let src = "y = foo(1,\n  2\n";
    let text = render(src, &parse_module(src, 0).expect_err("does not parse"));
    assert!(text.starts_with("error[E0002]: unclosed `(`\n"), "{text}");
    assert!(text.contains("t.tsr:1:8"), "{text}");
    assert!(text.contains("this `(` is never closed"), "{text}");
    assert!(!text.contains('\x1b'), "no colour: {text:?}");

    let src = "x = (1 + )\n";
    let text = render(src, &parse_module(src, 0).expect_err("does not parse"));
    assert!(
        text.starts_with("error[E0001]: expected an expression, found `)`\n"),
        "{text}"
    );
}

#[test]
fn recovery_reports_every_bad_line() {
    let src = "x = 1 +\ny = )\nz = (]\nok = 1\nif a\n    b = 2\nw = 3 3\n";
    let got = errors(src);
    let at: Vec<&str> = got.iter().map(|(_, _, a)| a.as_str()).collect();
    assert_eq!(at, ["1:8", "2:5", "3:6", "5:5", "7:7"], "{got:?}");

    // errors inside the block of a bad header are still found
    let src = "def f(1):\n    x = )\n    y = 1 +\n";
    assert_eq!(errors(src).len(), 3, "{:?}", errors(src));

    // one error per line, every line of a block
    let src = "if x:\n    a = \n    b = )\n    c = (1,]\nelse:\n    d = 1 1\n";
    assert_eq!(errors(src).len(), 4, "{:?}", errors(src));

    // a bad `elif` does not hide the `else` after it
    let src = "if a:\n    pass\nelif b c:\n    pass\nelse:\n    x = )\n";
    let got = errors(src);
    assert_eq!(got.len(), 2, "{got:?}");

    // an unterminated string stops at its line
    let src = "s = 'abc\nt = 'ok'\nu = )\n";
    let got = errors(src);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "E0002");
}
