#!/usr/bin/env python3
"""Coefficients of the erf/erfc sequences in compiler/src/tile/math.rs (needs mpmath).

For z >= 1, erfc(z) = exp(-z^2) * P(u) with t = 3/(3+z), u = (t - tm)/th mapping z in
[1, 6] onto u in [-1, 1], and P the Chebyshev interpolant of erfcx(z) = exp(z^2) erfc(z)
(entire, slowly varying) converted to monomials in u. Prints the coefficients for f64 and
f32 (highest degree first, for Horner) and the worst relative error of P on a dense grid.
"""
import struct

import mpmath as mp

mp.mp.dps = 50
T0, T1 = mp.mpf(3) / 9, mp.mpf(3) / 4  # t at z = 6 and z = 1
TM, TH = (T0 + T1) / 2, (T1 - T0) / 2


def erfcx(z):
    return mp.exp(z * z) * mp.erfc(z)


def g(u):
    t = TM + TH * u
    return erfcx(3 / t - 3)


def cheb(n, m=200):
    c = []
    for k in range(n):
        s = 0
        for j in range(m):
            th = mp.pi * (j + mp.mpf(1) / 2) / m
            s += g(mp.cos(th)) * mp.cos(k * th)
        c.append(2 * s / m)
    c[0] /= 2
    return c


def monomial(c):
    # T_0 = 1, T_1 = u, T_{k+1} = 2u T_k - T_{k-1}
    n = len(c)
    tk = [[mp.mpf(1)] + [0] * (n - 1), [0, mp.mpf(1)] + [0] * (n - 2)]
    for k in range(2, n):
        nxt = [0] * n
        for i in range(n - 1):
            nxt[i + 1] += 2 * tk[k - 1][i]
        for i in range(n):
            nxt[i] -= tk[k - 2][i]
        tk.append(nxt)
    return [sum(c[k] * tk[k][i] for k in range(n)) for i in range(n)]


def worst(p, rnd):
    w = 0
    for j in range(2001):
        u = -1 + mp.mpf(j) / 1000
        acc = mp.mpf(0)
        for a in reversed(p):
            acc = rnd(acc * u + rnd(a))
        w = max(w, abs(acc / g(u) - 1))
    return w


def f32(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


for name, n, rnd in [("f64", 16, lambda x: mp.mpf(float(x))), ("f32", 9, lambda x: mp.mpf(f32(x)))]:
    p = monomial(cheb(n))
    print(f"{name}: t = 3/(3+z), u = (t - {float(TM)!r}) / {float(TH)!r}")
    show = f32 if name == "f32" else float
    print("  P (highest degree first):", ", ".join(repr(show(a)) for a in reversed(p)))
    print("  worst relative error of P on [-1, 1]:", mp.nstr(worst(p, rnd), 3))
