//! `tessera explain CODE`: what each error code means, an example that produces it, and how to
//! fix it (SPEC "error codes"). `tests/explain.rs` runs every example and its fix: the example
//! must fail with its code, the fix must run.

/// One error code's explanation.
pub struct Explanation {
    pub code: &'static str,
    /// SPEC's one-line meaning.
    pub title: &'static str,
    /// What triggers it and what to look at.
    pub text: &'static str,
    /// A script that fails with this code.
    pub example: &'static str,
    /// The same script, fixed.
    pub fix: &'static str,
}

/// Every error code, in order.
pub const CODES: &[Explanation] = &[
    Explanation {
        code: "E0001",
        title: "unexpected token / invalid syntax",
        text: "The parser met a token where the grammar allows none: a missing colon after `def`, \
`if`, `for` or `while`, an operator with no operand, a keyword of Python that Tessera does not have \
(`class`, `lambda`, `try`, `with`, ...). The label points at the first token that cannot continue \
the statement.",
        example: "def f(x)\n    return x * 2\n",
        fix: "def f(x):\n    return x * 2\nprint(f(3))\n",
    },
    Explanation {
        code: "E0002",
        title: "unterminated string or bracket",
        text: "A string literal or a bracket `(`, `[`, `{` is still open at the end of the line (a \
string) or of the file (a bracket). The label points at where it was opened.",
        example: "x = op.ones((2, 3)\nprint(x)\n",
        fix: "x = op.ones((2, 3))\nprint(x)\n",
    },
    Explanation {
        code: "E0003",
        title: "bad indentation",
        text: "Blocks are made by indentation with spaces: a dedent must return to the indentation \
of an enclosing block, a block must be indented after a line ending in `:`, and a tab in the \
indentation is an error (mixing tabs and spaces is ambiguous).",
        example: "if True:\n        x = 1\n    y = 2\n",
        fix: "if True:\n    x = 1\n    y = 2\nprint(x + y)\n",
    },
    Explanation {
        code: "E0100",
        title: "undefined name or attribute",
        text: "A name that no assignment, `def` or import made, or an attribute that the object \
does not have. The message suggests the closest known name when there is one; `dir(x)` lists an \
object's attributes and `help(op)` the members of a module.",
        example: "x = op.ones((2, 2))\nprint(op.sofmax(x))\n",
        fix: "x = op.ones((2, 2))\nprint(op.softmax(x))\n",
    },
    Explanation {
        code: "E0101",
        title: "wrong arguments (count, unknown keyword, wrong type)",
        text: "A call with too many or too few arguments, a keyword the function does not take, or \
an argument of the wrong type. The message gives the function's signature; `help(op.NAME)` \
prints it too.",
        example: "x = op.ones((2, 2))\nprint(op.softmax(x, dim=0))\n",
        fix: "x = op.ones((2, 2))\nprint(op.softmax(x, axis=0))\n",
    },
    Explanation {
        code: "E0200",
        title: "shape mismatch (the two shapes and the op)",
        text: "The operands' shapes do not fit the operation: a matmul whose inner dimensions \
differ, an elementwise op whose shapes do not broadcast (NumPy's rule: aligned from the right, \
each pair equal or one of them 1), a reshape to a different number of elements. The message \
names both shapes and the op.",
        example: "a = op.ones((4, 8))\nb = op.ones((4, 8))\nprint(a @ b)\n",
        fix: "a = op.ones((4, 8))\nb = op.ones((4, 8))\nprint(a @ b.T)\n",
    },
    Explanation {
        code: "E0201",
        title: "dtype error / value-dependent control flow in a kernel",
        text: "An operation that the dtypes do not allow (a bitwise op on floats, a complex value \
where a real one is needed), or, inside an `@op.kernel`, Python control flow that depends on a \
tensor's values: a kernel is traced once per signature, so `if x.sum() > 0:` has no value to \
test. Use `op.where` for a value-dependent choice, or move the test outside the kernel.",
        example: "@op.kernel\ndef f(x):\n    if op.sum(x) > 0:\n        return x\n    return -x\n\nprint(f(op.ones((4,))))\n",
        fix: "@op.kernel\ndef f(x):\n    return op.where(op.sum(x) > 0, x, -x)\n\nprint(f(op.ones((4,))))\n",
    },
    Explanation {
        code: "E0300",
        title: "invalid schedule for the target",
        text: "A `schedule.*` directive that no kernel can have on the target: a tile whose shared \
memory or threads exceed the target's limits, sizes that are not powers of two where they must \
be, a vector width that is not 1, 2, 4, 8 or 16. The message names the limit and the target; \
`target.info()` shows the limits.",
        example: "@op.kernel\ndef f(a, b):\n    schedule.tile((4096, 4096, 64))\n    return a @ b\n\nx = op.ones((64, 64))\nprint(f(x, x).shape)\n",
        fix: "@op.kernel\ndef f(a, b):\n    schedule.tile((128, 128, 32))\n    return a @ b\n\nx = op.ones((64, 64))\nprint(f(x, x).shape)\n",
    },
    Explanation {
        code: "E0400",
        title: "sharding / mesh error",
        text: "A mesh or layout that does not fit: a mesh shape whose product is not the number of \
devices, an unknown mesh axis, one axis splitting two dimensions, a collective over an axis the \
tensor is already split over, a pipeline with a different number of stages than its axis has \
devices, or (on a named system) a shard larger than one GPU's memory. The message names the \
axis and the numbers.",
        example: "mesh = dist.Mesh(axes=[\"tp\", \"dp\"], shape=(2, 4), devices=range(6))\n",
        fix: "mesh = dist.Mesh(axes=[\"tp\", \"dp\"], shape=(2, 3), devices=range(6))\nprint(mesh.shape)\n",
    },
    Explanation {
        code: "E0500",
        title: "runtime error (index out of range, division by zero, ...)",
        text: "An operation that fails on the values it gets: an index past the end, an integer \
division by zero, a NaN or infinity cast to an integer, a file that cannot be read.",
        example: "x = op.arange(0, 4)\nprint(x[4])\n",
        fix: "x = op.arange(0, 4)\nprint(x[3])\n",
    },
    Explanation {
        code: "E0600",
        title: "assertion failed",
        text: "An `assert` whose condition is false; its message, when given, is printed. Golden \
tests and examples use asserts to check results.",
        example: "x = op.ones((3,))\nassert op.sum(x).item() == 4.0, \"three ones sum to three\"\n",
        fix: "x = op.ones((3,))\nassert op.sum(x).item() == 3.0, \"three ones sum to three\"\nprint(\"ok\")\n",
    },
    Explanation {
        code: "E0700",
        title: "resource limit (too large to materialise, abstract tensor read)",
        text: "A tensor too large to allocate on the host (over TESSERA_MAX_BYTES), or a read of \
the values of an abstract tensor (`dist.tensor`, or a shape-only tensor): abstract tensors exist \
to compile and profile shapes without data. Compile and profile them; make data only at sizes \
that fit.",
        example: "w = dist.tensor(shape=(1_000_000, 1_000_000), dtype=\"bf16\")\nprint(w.tolist())\n",
        fix: "w = dist.tensor(shape=(1_000_000, 1_000_000), dtype=\"bf16\")\nprint(w.shape, w.dtype)\n",
    },
    Explanation {
        code: "E0800",
        title: "device / driver error (no GPU, launch failed)",
        text: "The device asked for cannot run the kernel: `cuda` named on a machine without a \
usable GPU or driver, a failed module load or launch. Where a fallback exists (`auto` falls back \
to the cpu) it is taken and said so; a device named explicitly is an error. `target.device()` \
shows where kernels run; `--device emu` runs the generated PTX-level program on the emulator.",
        example: "target.set_device(\"cuda\")\n",
        fix: "target.set_device(\"auto\")\nprint(target.device() in [\"cpu\", \"cuda\"])\n",
    },
];

/// The explanation of `code` (case-insensitive, with or without the `E`).
pub fn find(code: &str) -> Option<&'static Explanation> {
    let c = code.trim().to_ascii_uppercase();
    let c = if c.starts_with('E') {
        c
    } else {
        format!("E{c}")
    };
    CODES.iter().find(|e| e.code == c)
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| match l.is_empty() {
            true => String::new(),
            false => format!("    {l}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text `tessera explain CODE` prints.
pub fn text(e: &Explanation) -> String {
    format!(
        "{}: {}\n\n{}\n\nThis script fails with {}:\n\n{}\n\nFixed:\n\n{}\n",
        e.code,
        e.title,
        tessera_stdlib::help::wrap(e.text, 88),
        e.code,
        indent(e.example.trim_end()),
        indent(e.fix.trim_end())
    )
}

/// `tessera explain [CODE]`: the explanation (0), the list of codes without one (0), or an
/// unknown code (2).
pub fn main(code: Option<&str>) -> i32 {
    match code {
        None => {
            crate::sayln!("Error codes (`tessera explain CODE` for one):");
            for e in CODES {
                crate::sayln!("  {}  {}", e.code, e.title);
            }
            0
        }
        Some(c) => match find(c) {
            Some(e) => {
                crate::say(&text(e));
                0
            }
            None => {
                let known: Vec<&str> = CODES.iter().map(|e| e.code).collect();
                eprintln!(
                    "error: unknown error code '{c}' (the codes are {})",
                    known.join(", ")
                );
                2
            }
        },
    }
}
