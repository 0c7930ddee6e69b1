"""Runs each kernel kind on the GPU on fresh random inputs and checks it against the cpu.

Used by scripts/gpu-check on a machine with a GPU (CI never runs it). Each case is a small
.tsr script with a random seed; it runs with `--device cuda`, TESSERA_CROSSCHECK=cuda (every
launch also runs on the cpu; norm-wise relative error within the dtype's bound) and
TESSERA_CUDA_POISON=1 (outputs NaN-filled before each launch). Needs only the standard library.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

CASES = {
    "elementwise_bf16": """
@op.kernel
def f(x, b):
    return op.gelu(x * 0.5 + b)
x = op.randn((1000, 777), dtype="bf16", seed={s})
b = op.randn((777,), dtype="bf16", seed={s2})
y = f(x, b)
""",
    "matmul_bf16": """
@op.kernel
def f(a, b):
    return a @ b
y = f(op.randn((384, 320), dtype="bf16", seed={s}), op.randn((320, 272), dtype="bf16", seed={s2}))
""",
    "matmul_odd_fp32": """
@op.kernel
def f(a, b, c):
    return op.relu(a @ b + c)
y = f(op.randn((129, 67), seed={s}), op.randn((67, 95), seed={s2}), op.randn((95,), seed={s}))
""",
    "softmax_fp32": """
@op.kernel
def f(x):
    return op.softmax(x * 3.0, axis=-1)
y = f(op.randn((517, 1031), seed={s}))
""",
    "layernorm_bf16": """
@op.kernel
def f(x, w, b):
    return op.layernorm(x, weight=w, bias=b)
y = f(op.randn((300, 1024), dtype="bf16", seed={s}), op.rand((1024,), dtype="bf16", seed={s2}), op.randn((1024,), dtype="bf16", seed={s}))
""",
    "reduce_sum_fp32": """
@op.kernel
def f(x):
    return op.sum(x, axis=1)
y = f(op.randn((333, 4097), seed={s}))
""",
    "conv2d_fp32": """
@op.kernel
def f(x, w, b):
    return op.relu(op.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2)))
y = f(op.randn((3, 10, 37, 29), seed={s}), op.randn((12, 10, 3, 5), seed={s2}), op.randn((12,), seed={s}))
""",
    "conv2d_grouped_bf16": """
@op.kernel
def f(x, w):
    return op.conv2d(x, w, padding="same", groups=4)
y = f(op.randn((2, 16, 45, 61), dtype="bf16", seed={s}), op.randn((8, 4, 5, 5), dtype="bf16", seed={s2}))
""",
    "conv2d_spectral_fp32": """
@op.kernel
def f(x, w, b):
    return op.conv2d(x, w, b, stride=(2, 1), padding=(7, 4), dilation=(1, 2), groups=2, algorithm="fft")
y = f(op.randn((3, 6, 61, 47), seed={s}), op.randn((4, 3, 15, 9), seed={s2}), op.randn((4,), seed={s}))
""",
    "conv1d_spectral_fp64": """
@op.kernel
def f(x, w):
    return op.conv1d(x, w, padding="same", algorithm="fft")
y = f(op.randn((5, 3, 1000), dtype="fp64", seed={s}), op.randn((7, 3, 129), dtype="fp64", seed={s2}))
""",
    "grad_mlp_fp32": """
@op.kernel
def loss(w, x):
    return op.sum(op.gelu(x @ w) * 0.5)
y = graph.grad(loss)(op.randn((96, 80), seed={s}), op.randn((130, 96), seed={s2}))
""",
    "attention_bf16": """
@op.kernel
def f(q, k, v):
    return op.flash_attention(q, k, v, causal={causal})
q = op.randn((2, 4, 200, 64), dtype="bf16", seed={s})
k = op.randn((2, 4, 200, 64), dtype="bf16", seed={s2})
v = op.randn((2, 4, 200, 64), dtype="bf16", seed={s})
y = f(q, k, v)
""",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    env = dict(os.environ, TESSERA_CROSSCHECK="cuda", TESSERA_CUDA_POISON="1", NO_COLOR="1")
    rng = random.SystemRandom()
    passed = failed = 0
    log = open(os.path.join(a.out, "fresh_inputs.log"), "w")
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            for name, src in CASES.items():
                s, s2 = rng.randrange(1, 2**31), rng.randrange(1, 2**31)
                text = src.format(s=s, s2=s2, causal=bool(r % 2))
                path = os.path.join(d, f"{name}.tsr")
                with open(path, "w") as f:
                    f.write(text)
                p = subprocess.run([a.bin, "run", "--device", "cuda", path], env=env,
                                   capture_output=True, text=True, timeout=600)
                ok = p.returncode == 0
                passed += ok
                failed += not ok
                line = f"{'ok  ' if ok else 'FAIL'} {name} seeds {s} {s2}"
                print(line, file=log)
                if not ok:
                    print(line)
                    print(p.stderr, file=log)
                    print(p.stderr[-2000:])
    print(f"fresh random inputs on cuda: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
