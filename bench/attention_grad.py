#!/usr/bin/env python3
"""The gradient of attention with respect to q, k and v on the CPU: `graph.grad` of
`op.flash_attention` (row log-sum-exp + one recomputing kernel per operand) against
`graph.grad` of the written-out `softmax(scale·q·kᵀ)·v` (materialises [sq, sk]), and against
NumPy computing the same backward by hand (S, P, dV = Pᵀ·dO, dP = dO·Vᵀ, dS, dQ, dK), in one
run. Tessera: whole-process runs of N and 1+N calls, the difference over N calls, median of
`--runs` (start-up and tracing cancel). NumPy: median of timed calls after a warm-up.

Usage (from the repository root, NumPy in .venv):
    .venv/bin/python bench/attention_grad.py --tessera /path/to/release/tessera --runs 5
"""
import argparse
import statistics
import time

from tessera_time import per_call_ms

import numpy as np

SIZES = [(4, 256, 64, False), (4, 256, 64, True), (1, 1024, 64, True)]
SCRIPT = """
b, s, d = {b}, {s}, {d}
q = op.randn((b, s, d), seed=1)
k = op.randn((b, s, d), seed=2)
v = op.randn((b, s, d), seed=3)
w = op.randn((b, s, d), seed=4)
scale = 1.0 / d ** 0.5
def flash(q, k, v):
    return op.sum(op.flash_attention(q, k, v, causal={causal}, scale=scale) * w)
def written(q, k, v):
    sc = (q @ op.transpose(k, (0, 2, 1))) * scale
    if {causal}:
        r = op.reshape(op.arange(s), (s, 1))
        c = op.reshape(op.arange(s), (1, s))
        sc = op.where(c <= r, sc, -1e30)
    return op.sum((op.softmax(sc, axis=-1) @ v) * w)
g = graph.grad({which}, argnums=(0, 1, 2))
for i in range({n}):
    r = g(q, k, v)
print(r[0].shape)
"""


def tessera_ms(exe, which, b, s, d, causal, n, runs):
    return per_call_ms(
        exe,
        lambda calls: SCRIPT.format(b=b, s=s, d=d, causal=causal, which=which, n=calls),
        n,
        runs,
    )


def numpy_ms(b, s, d, causal, runs):
    rng = np.random.default_rng(0)
    q, k, v, w = (rng.standard_normal((b, s, d), dtype=np.float32) for _ in range(4))
    scale = np.float32(1.0 / d ** 0.5)
    mask = np.tril(np.ones((s, s), dtype=bool))

    def grad():
        sc = q @ k.transpose(0, 2, 1) * scale
        if causal:
            sc = np.where(mask, sc, np.float32(-1e30))
        sc = sc - sc.max(-1, keepdims=True)
        p = np.exp(sc)
        p /= p.sum(-1, keepdims=True)
        do = w
        dv = p.transpose(0, 2, 1) @ do
        dp = do @ v.transpose(0, 2, 1)
        ds = p * (dp - (dp * p).sum(-1, keepdims=True))
        dq = ds @ k * scale
        dk = ds.transpose(0, 2, 1) @ q * scale
        return dq, dk, dv

    grad()
    ts = []
    for _ in range(max(runs, 5)):
        t0 = time.perf_counter()
        grad()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5)
    a = ap.parse_args()
    print("| b×s×d, causal | flash grad (ms) | written-out grad (ms) | NumPy by hand (ms) | flash / NumPy |")
    print("|---|---|---|---|---|")
    for b, s, d, causal in SIZES:
        f = tessera_ms(a.tessera, "flash", b, s, d, causal, a.calls, a.runs)
        wr = tessera_ms(a.tessera, "written", b, s, d, causal, a.calls, a.runs)
        n = numpy_ms(b, s, d, causal, a.runs)
        print(f"| {b}×{s}×{d}, {causal} | {f:.2f} | {wr:.2f} | {n:.2f} | {f / n:.2f}x |")


if __name__ == "__main__":
    main()
