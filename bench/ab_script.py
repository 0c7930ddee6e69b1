#!/usr/bin/env python3
"""Whole-process A/B of two `tessera` binaries on one script, alternating (base, ours, base, …).

Usage (from the repository root):
    python3 bench/ab_script.py --base BASE_BIN --ours target/release/tessera \
        --script bench/op_dispatch.tsr [--runs 15]

Prints the median wall time of each binary and ours/base. Both see the same machine load,
since the runs alternate.
"""
import argparse
import statistics
import subprocess
import time


def once(exe, script):
    t = time.perf_counter()
    subprocess.run([exe, "run", script], check=True, stdout=subprocess.DEVNULL,
                   env={"TESSERA_CUDA": "off", "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    once(a.base, a.script)
    once(a.ours, a.script)
    base, ours = [], []
    for _ in range(a.runs):
        base.append(once(a.base, a.script))
        ours.append(once(a.ours, a.script))
    mb, mo = statistics.median(base), statistics.median(ours)
    print(f"{a.script}: base {mb * 1e3:.1f} ms, ours {mo * 1e3:.1f} ms (medians of {a.runs}), "
          f"ours/base = {mo / mb:.3f}")


if __name__ == "__main__":
    main()
