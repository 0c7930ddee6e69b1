#!/usr/bin/env python3
"""REPL start-up latency: time from starting `tessera repl` on a pseudo-terminal to the first
`>>> ` prompt appearing on it, median of N runs (after 2 warm-ups). Each run then exits with
Ctrl-D. Two cases: an empty history file, and one with 1000 entries (the most the REPL keeps).

usage: python3 bench/repl_startup.py [--runs N] [--exe target/release/tessera]
"""
import argparse, os, pty, select, statistics, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=10)
ap.add_argument("--exe", default="target/release/tessera")
a = ap.parse_args()


def one(history):
    env = dict(os.environ, TESSERA_HISTORY=history, TERM="xterm")
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(a.exe, [a.exe, "repl"], env)
    seen = b""
    first = None
    deadline = t0 + 10
    while first is None:
        r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.perf_counter()))
        if not r:
            raise SystemExit(f"no prompt within 10 s; saw {seen!r}")
        chunk = os.read(fd, 4096)
        if b"\x1b[6n" in chunk:  # answer a cursor-position query as a terminal would
            os.write(fd, b"\x1b[1;1R")
        seen += chunk
        if b">>> " in seen:
            first = time.perf_counter() - t0
    os.write(fd, b"\x04")
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
    return first * 1000


with tempfile.TemporaryDirectory() as d:
    empty = os.path.join(d, "empty")
    full = os.path.join(d, "full")
    with open(full, "w") as f:
        f.write("#V2\n")
        for i in range(1000):
            f.write(f"x{i} = op.randn(({i % 64 + 1}, 16), seed={i})\n")
    for name, hist in [("empty history", empty), ("1000-entry history", full)]:
        times = []
        for i in range(2 + a.runs):
            if name == "empty history" and os.path.exists(empty):
                os.remove(empty)
            t = one(hist)
            if i >= 2:
                times.append(t)
        print(f"tessera repl, {name:20s} first prompt: median {statistics.median(times):6.2f} ms  "
              f"min {min(times):6.2f}  max {max(times):6.2f}  (n={a.runs})")
