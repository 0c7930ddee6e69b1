#!/usr/bin/env python3
"""CPU op benchmark: tessera-runtime (Rust) against NumPy, interleaved in one run.

Usage (from the repository root):
    cargo build --release -p tessera-runtime --example bench_ops
    .venv/bin/python bench/cpu_ops.py [--runs 15] [--warmup 3] [--bin target/release/examples/bench_ops]
        [--isa avx2|avx512|avx512bf16|neon|scalar] [--base OTHER_BENCH_OPS_BINARY] [--only OP[,OP...]]

`--isa` sets TESSERA_CPU_ISA for the Rust process (the kernels it runs); `--base` times a second
bench_ops binary (an older build, or the same one with `--base-isa`) interleaved in the same run
and adds its column and ours/base, so a change is measured as a ratio on one machine state.

The Rust side is `bench_ops --serve`: it keeps its inputs and runs one timed op per request, so
each repetition times NumPy then Rust back to back and both see the same machine load. Reported:
median of `--runs` timed repetitions after `--warmup` untimed ones.

NumPy side:
- matmul_f32: `a @ b` on float32 (OpenBLAS, all cores).
- matmul_f64: `a @ b` on float64.
- matmul_bf16: NumPy has no bf16 BLAS, so the bf16 case is timed as a NumPy user runs it:
  `(a.astype(float32) @ b.astype(float32)).astype(bfloat16)` on ml_dtypes bfloat16 inputs
  (fp32 matmul of the bf16 values, rounded to bf16: the same math as ours, conversions included).
- softmax_f32: `e = np.exp(x - x.max(-1, keepdims=True)); e / e.sum(-1, keepdims=True)`.
- layernorm_f32 (with weight and bias, eps 1e-5, biased variance): `m = x.mean(-1, keepdims=True);
  c = x - m; c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * w + b`.
- sum_f32: `x.sum()` (NumPy: pairwise fp32; ours: fp64 accumulation, deterministic).
- sum_rows_f32 / sum_cols_f32 / max_rows_f32: `x.sum(-1)`, `x.sum(0)`, `x.max(-1)` of N×N
  (ours accumulate in fp64). add_f32: `x + y`, both N×N; mul_bcast_f32: `x * y`, y of shape
  [N]; relu_f32: `np.maximum(x, 0)`; exp_f32 / tanh_f32: `np.exp(x)`, `np.tanh(x)`; gelu_f32:
  `0.5 * x * (1 + scipy.special.erf(x / sqrt(2)))` (NumPy has no erf; scipy's float32 erf). GB/s for these counts 8 bytes per element of x (one read,
  one write), whatever the op reads besides.
- conv2d_f32 (batch N, 64→64 channels, 56×56, 3×3, padding 1): NumPy has no convolution, so
  the NumPy side is im2col as a NumPy user writes it: pad, `sliding_window_view`, the windows
  copied to a `[N·56·56, 64·9]` matrix, one `@` with the `[64·9, 64]` weights (OpenBLAS), the
  result transposed back to NCHW (a copy).
- conv2d_dw_f32 (depthwise, 64 channels): NumPy: the 9 shifted, padded planes times their
  weights, summed (`x[..., i:i+56, j:j+56] * w[:, i, j]`), the usual vectorised form.
- fft_c64 / fft_c128: `np.fft.fft(x)` of one complex64 / complex128 vector of N = 2^20
  elements (pocketfft, one thread; NumPy 2 keeps complex64 in complex64). Both sides transform
  the same values (`fft_input`, made identically in bench_ops). GFLOP/s counts 5·N·log2(N).
"""
import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

CASES = [
    ("matmul_f32", 1024, "flop", 2 * 1024**3),
    ("matmul_f32", 2048, "flop", 2 * 2048**3),
    ("matmul_bf16", 1024, "flop", 2 * 1024**3),
    ("matmul_f64", 1024, "flop", 2 * 1024**3),
    ("matmul_n16_f32", 1024, "flop", 2 * 1024**2 * 16),
    ("matmul_n64_f32", 1024, "flop", 2 * 1024**2 * 64),
    ("matmul_k16_f32", 1024, "flop", 2 * 1024**2 * 16),
    ("softmax_f32", 4096, "bytes", 2 * 4 * 4096 * 4096),
    ("layernorm_f32", 4096, "bytes", 2 * 4 * 4096 * 4096),
    ("sum_f32", 4096, "bytes", 4 * 4096 * 4096),
    *[(op, n, "bytes", 2 * 4 * n * n)
      for op in ("sum_rows_f32", "sum_cols_f32", "max_rows_f32", "add_f32", "mul_bcast_f32", "relu_f32")
      for n in (1024, 4096)],
    *[(op, 1024, "bytes", 2 * 4 * 1024 * 1024) for op in ("exp_f32", "tanh_f32", "gelu_f32")],
    ("conv2d_f32", 8, "flop", 2 * 8 * 64 * 56 * 56 * 64 * 9),
    ("conv2d_dw_f32", 8, "flop", 2 * 8 * 64 * 56 * 56 * 9),
    ("fft_c64", 1 << 20, "flop", 5 * 20 * (1 << 20)),
    ("fft_c128", 1 << 20, "flop", 5 * 20 * (1 << 20)),
]


def fft_input(n, dtype):
    """The FFT input of bench_ops' `fft_input`: the same values, computed in float64."""
    i = np.arange(n, dtype=np.int64)
    re = (i * 7919 % 1000) / 1000.0 - 0.5
    im = (i * 104729 % 997) / 997.0 - 0.5
    x = np.empty(n, dtype=dtype)
    x.real, x.imag = re, im
    return x


def numpy_case(op, n):
    rng = np.random.default_rng(0)
    if op == "matmul_f32":
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        return lambda: a @ b
    if op in ("matmul_n16_f32", "matmul_n64_f32"):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, 16 if op == "matmul_n16_f32" else 64), dtype=np.float32)
        return lambda: a @ b
    if op == "matmul_k16_f32":
        a = rng.standard_normal((n, 16), dtype=np.float32)
        b = rng.standard_normal((16, n), dtype=np.float32)
        return lambda: a @ b
    if op == "matmul_f64":
        a = rng.standard_normal((n, n))
        b = rng.standard_normal((n, n))
        return lambda: a @ b
    if op == "matmul_bf16":
        bf16 = ml_dtypes.bfloat16
        a = rng.standard_normal((n, n), dtype=np.float32).astype(bf16)
        b = rng.standard_normal((n, n), dtype=np.float32).astype(bf16)
        return lambda: (a.astype(np.float32) @ b.astype(np.float32)).astype(bf16)
    if op == "softmax_f32":
        x = rng.standard_normal((n, n), dtype=np.float32)

        def softmax():
            e = np.exp(x - x.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

        return softmax
    if op == "layernorm_f32":
        x = rng.standard_normal((n, n), dtype=np.float32)
        w = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)

        def layernorm():
            m = x.mean(-1, keepdims=True)
            c = x - m
            return c / np.sqrt((c * c).mean(-1, keepdims=True) + np.float32(1e-5)) * w + b

        return layernorm
    if op == "sum_f32":
        x = rng.standard_normal((n, n), dtype=np.float32)
        return lambda: x.sum()
    if op in ("sum_rows_f32", "sum_cols_f32", "max_rows_f32", "relu_f32"):
        x = rng.standard_normal((n, n), dtype=np.float32)
        return {
            "sum_rows_f32": lambda: x.sum(-1),
            "sum_cols_f32": lambda: x.sum(0),
            "max_rows_f32": lambda: x.max(-1),
            "relu_f32": lambda: np.maximum(x, np.float32(0)),
        }[op]
    if op in ("exp_f32", "tanh_f32", "gelu_f32"):
        x = rng.standard_normal((n, n), dtype=np.float32)
        if op == "gelu_f32":
            from scipy.special import erf

            r = np.float32(1 / np.sqrt(2))
            return lambda: np.float32(0.5) * x * (np.float32(1) + erf(x * r))
        return {"exp_f32": lambda: np.exp(x), "tanh_f32": lambda: np.tanh(x)}[op]
    if op in ("add_f32", "mul_bcast_f32"):
        x = rng.standard_normal((n, n), dtype=np.float32)
        if op == "add_f32":
            y = rng.standard_normal((n, n), dtype=np.float32)
            return lambda: x + y
        y = rng.standard_normal(n, dtype=np.float32)
        return lambda: x * y
    if op == "conv2d_f32":
        x = rng.standard_normal((n, 64, 56, 56), dtype=np.float32)
        w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
        wm = np.ascontiguousarray(w.reshape(64, 64 * 9).T)

        def conv():
            xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
            win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
            cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * 56 * 56, 64 * 9)
            out = cols @ wm
            return np.ascontiguousarray(out.reshape(n, 56, 56, 64).transpose(0, 3, 1, 2))

        return conv
    if op == "conv2d_dw_f32":
        x = rng.standard_normal((n, 64, 56, 56), dtype=np.float32)
        w = rng.standard_normal((64, 3, 3), dtype=np.float32)

        def dw():
            xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
            out = np.zeros((n, 64, 56, 56), dtype=np.float32)
            for i in range(3):
                for j in range(3):
                    out += xp[:, :, i:i + 56, j:j + 56] * w[None, :, i, j, None, None]
            return out

        return dw
    if op in ("fft_c64", "fft_c128"):
        x = fft_input(n, np.complex64 if op == "fft_c64" else np.complex128)
        return lambda: np.fft.fft(x)
    raise ValueError(op)


class Rust:
    def __init__(self, path, isa=None):
        env = dict(os.environ)
        if isa:
            env["TESSERA_CPU_ISA"] = isa
        self.p = subprocess.Popen([path, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def run(self, op, n, missing_ok=False):
        self.p.stdin.write(f"{op} {n}\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().strip()
        if missing_ok and line.startswith("error") and "unknown op" in line:
            return None
        if not line or line.startswith("error"):
            raise RuntimeError(f"bench_ops: {line!r}")
        return float(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    """The vector features that decide which kernels run (from /proc/cpuinfo)."""
    want = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "asimd", "bf16", "sve"]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return " ".join(w for w in want if w in have)
    except OSError:
        pass
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join("target", "release", "examples", "bench_ops"))
    ap.add_argument("--only", default=None, help="run only these ops (comma-separated)")
    ap.add_argument("--isa", default=None, help="TESSERA_CPU_ISA for --bin")
    ap.add_argument("--base", default=None, help="a second bench_ops binary, timed interleaved")
    ap.add_argument("--base-isa", default=None, help="TESSERA_CPU_ISA for --base")
    args = ap.parse_args()

    print(f"# machine: {os.cpu_count()} logical CPUs, {cpu_model()}; flags: {cpu_flags()}")
    print(f"# ours: {args.bin} (TESSERA_CPU_ISA={args.isa or 'unset'})"
          + (f"; base: {args.base} (TESSERA_CPU_ISA={args.base_isa or 'unset'})" if args.base else ""))
    print(f"# numpy {np.__version__}, ml_dtypes {getattr(ml_dtypes, '__version__', 'missing')}, python {sys.version.split()[0]}")
    print(f"# median of {args.runs} runs after {args.warmup} warm-up runs, NumPy and Rust interleaved")
    extra = f" {'base ms':>9} {'ours/base':>9}" if args.base else ""
    print(f"{'op':12} {'size':>7}  {'numpy ms':>9} {'ours ms':>9}  {'numpy':>10} {'ours':>10}  {'ours/numpy':>10}{extra}")
    rust = Rust(args.bin, args.isa)
    base = Rust(args.base, args.base_isa) if args.base else None
    try:
        for op, n, kind, amount in CASES:
            if args.only and op not in args.only.split(","):
                continue
            f = numpy_case(op, n)
            base_ok = base is not None
            for _ in range(args.warmup):
                f()
                rust.run(op, n)
                if base and base.run(op, n, missing_ok=True) is None:
                    base_ok = False
            tn, tr, tb = [], [], []
            for rep in range(args.runs):
                t = time.perf_counter()
                f()
                tn.append(time.perf_counter() - t)
                # OpenBLAS's threads spin for a while after NumPy's call: whichever binary runs
                # right after it shares the cores with them, so ours and base take turns.
                if base_ok and rep % 2:
                    tb.append(base.run(op, n))
                    tr.append(rust.run(op, n))
                else:
                    tr.append(rust.run(op, n))
                    if base_ok:
                        tb.append(base.run(op, n))
            mn, mr = median(tn), median(tr)
            extra = f" {median(tb)*1e3:9.2f} {median(tb)/mr:8.2f}x" if tb else (f" {'-':>9} {'-':>9}" if base else "")
            unit = "GFLOP/s" if kind == "flop" else "GB/s"
            rn, rr = amount / mn / 1e9, amount / mr / 1e9
            print(f"{op:12} {n:7}  {mn*1e3:9.2f} {mr*1e3:9.2f}  {rn:7.1f} {unit:<7} {rr:7.1f} {unit:<7}  {mn/mr:9.2f}x{extra}", flush=True)
    finally:
        rust.close()
        if base:
            base.close()


if __name__ == "__main__":
    main()
