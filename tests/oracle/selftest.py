#!/usr/bin/env python3
"""Self-test of the oracle's own rounding and RNG against independent references.

- _round_float64 (our RNE rounding) vs numpy/ml_dtypes casts from float32, which are a single
  correctly rounded step (fp8 values are clipped first, since ml_dtypes does not saturate);
- tf32 bit manipulation vs the generic rounding with 10 mantissa bits;
- the vectorised splitmix64 vs the Python-int version.
Prints `N passed, N failed`.
"""

import os
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tessera_np as T  # noqa: E402


def samples(n=200000, seed=0):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    # values near 1, ties and near-ties for every format
    k = rng.integers(0, 2 ** 16, size=n)
    near = (1.0 + k * 2.0 ** -16).astype(np.float32) * rng.choice([-1, 1], size=n).astype(np.float32)
    small = (rng.standard_normal(n) * rng.choice([1e-6, 1e-3, 1.0, 100.0, 1e4, 1e5], size=n)).astype(np.float32)
    return np.concatenate([x, near, small]).astype(np.float64)


def same(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.all((a == b) & (np.signbit(a) == np.signbit(b)) | (np.isnan(a) & np.isnan(b)))


def main():
    ok = bad = 0
    x = samples()
    x32 = x.astype(np.float32)
    checks = [
        ("bf16", T.bf16, lambda: x32.astype(ml_dtypes.bfloat16)),
        ("fp16", T.fp16, lambda: x32.astype(np.float16)),
        ("fp8_e4m3", T.fp8_e4m3, lambda: np.clip(x32, -448, 448).astype(ml_dtypes.float8_e4m3fn)),
        ("fp8_e5m2", T.fp8_e5m2, lambda: np.clip(x32, -57344, 57344).astype(ml_dtypes.float8_e5m2)),
        ("fp32", T.fp32, lambda: x32),
    ]
    for name, d, ref in checks:
        got = T._round_float64(x, d)
        if same(got, ref()):
            ok += 1
        else:
            bad += 1
            r = np.asarray(ref(), dtype=np.float64)
            i = np.nonzero(~((got == r) | (np.isnan(got) & np.isnan(r))))[0][:5]
            print(f"FAIL rounding to {name}: {x[i].tolist()} -> {got[i].tolist()} vs {r[i].tolist()}")
    tf_generic = T.DType("tf32g", "float", np.dtype(np.float32), 10, -126, T._maxf(10, 127))
    xf = x32.astype(np.float64)
    if same(T._tf32_round(xf), T._round_float64(xf, tf_generic)):
        ok += 1
    else:
        bad += 1
        print("FAIL tf32 bit manipulation vs generic rounding")
    for seed in (0, 1, 7, -1, 2 ** 40 + 3):
        v = T._bits_vec(seed, np.arange(64, dtype=np.uint64))
        if [int(t) for t in v] == [T._bits_int(seed, i) for i in range(64)]:
            ok += 1
        else:
            bad += 1
            print(f"FAIL splitmix64 seed {seed}")
    print(f"{ok} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
