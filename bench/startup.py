#!/usr/bin/env python3
"""Start-up latency of `tessera`: wall time of `tessera run print1.tsr` and of a piped
`print(1)` through stdin, from process start to exit, median of N runs after 3 warm-ups.

usage: python3 bench/startup.py [--runs N] [--exe target/release/tessera]
"""
import argparse, os, statistics, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=10)
ap.add_argument("--exe", default="target/release/tessera")
a = ap.parse_args()

with tempfile.TemporaryDirectory() as d:
    script = os.path.join(d, "print1.tsr")
    with open(script, "w") as f:
        f.write("print(1)\n")
    cases = {
        "tessera run print1.tsr": ([a.exe, "run", script], None),
        "echo 'print(1)' | tessera": ([a.exe], b"print(1)\n"),
    }
    for name, (cmd, stdin) in cases.items():
        times = []
        for i in range(3 + a.runs):
            t = time.perf_counter()
            out = subprocess.run(cmd, input=stdin, capture_output=True, check=True)
            dt = time.perf_counter() - t
            assert out.stdout == b"1\n", out
            if i >= 3:
                times.append(dt * 1000)
        print(f"{name:28s} median {statistics.median(times):6.2f} ms  "
              f"min {min(times):6.2f}  max {max(times):6.2f}  (n={a.runs})")
