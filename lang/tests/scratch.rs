mod common;
use common::*;

#[test]
fn scratch() {
    for src in [
        "x = 1\n",
        "-2**2",
        "a, b = f(1, *xs, k=2)\n",
        "def f(a, b=1, *args, c, d=2):\n    return a + b\n",
        "if x:\n    y = 1\nelif z:\n    pass\nelse:\n    w = [i*2 for i in range(3) if i]\n",
        "x[0:2, :] = y[::2] + z[-1]\n",
        "s = f\"a{x:.3f}b{y!r}{{}}\" 'c'\n",
        "@op.kernel\n@op.autotune(cache=\"x\")\ndef k(x):\n    pass\n",
        "for i, j in zip(a, b):\n    print(i)\nelse:\n    pass\n",
        "a = b = 1; c += 2\n",
        "assert x == 1, 'msg'\n",
        "x = a if b else c\n",
        "x = not a and b or c in d and e not in f and g is not None\n",
    ] {
        println!("{src:?}\n  => {}", module(src));
    }
    for src in [
        "x = )\n",
        "if x\n    pass\n",
        "if x = 1:\n    pass\n",
        "f(1 2)\n",
        "x = 1 2\n",
        "1 = x\n",
        "f() = 3\n",
        "x = (1,\n",
        "s = 'abc\n",
        "if x:\n\tpass\n",
        "if x:\n    a\n  b\n",
        "  x = 1\n",
        "def (x):\n",
        "x = 1 +\ny = )\nz = (]\n",
        "import os\n",
        "x = a | b\n",
        "if x:\n",
        "for x y in z:\n  pass\n",
        "x = {}\n",
        "def f(a=1, b):\n  pass\n",
        "x = [1 for]\n",
        "x = a if b\n",
    ] {
        match tessera_lang::parse::parse_module(src, 0) {
            Ok(m) => println!(
                "{src:?} OK?? {}",
                m.body.iter().map(stmt).collect::<Vec<_>>().join("; ")
            ),
            Err(ds) => println!("{src:?}\n{}", render(src, &ds)),
        }
    }
}
