"""Compile latency, source to PTX for sm_90: Tessera vs Triton, cold, alternated (bench/RESULTS.md).

    cargo build --release --example compile_latency
    .venv/bin/python bench/compile_latency.py [--ours 21] [--triton 7] [--ptxas PATH] [--base BIN]

For each kernel, repeats: one fresh process of ours
(`target/release/examples/compile_latency --one KERNEL`, giving cold and cached ms), then, for the
first `--triton` repetitions, one fresh process of `bench/triton_compile.py --one KERNEL` with a new,
empty `TRITON_CACHE_DIR` (import excluded). Prints the median of each and the ratio Triton/ours
(above 1: we compile faster). With `--ptxas`, also writes both PTX files to `--out` and prints
`ptxas -v` registers / spills / shared memory of each.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = os.path.join(ROOT, "target", "release", "examples", "compile_latency")
TRITON = os.path.join(ROOT, "bench", "triton_compile.py")
KERNELS = ["matmul_bias_relu", "softmax", "attention"]


def ours(kernel, emit=None, exe=OURS):
    cmd = [exe, "--one", kernel] + (["--emit", emit] if emit else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return float(out[1]), float(out[2]), float(out[3]), out[5] == "1"


def triton(kernel, env, emit=None):
    with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
        e = dict(env, TRITON_CACHE_DIR=cache)
        cmd = [sys.executable, TRITON, "--one", kernel] + (["--emit", emit] if emit else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=e)
        if r.returncode != 0:
            raise RuntimeError(f"triton {kernel} failed:\n{r.stderr[-3000:]}")
        return float(r.stdout.split()[1])


def ptxas_v(ptxas, path, arch):
    with open(path) as f:
        text = f.read()
    if ".entry" not in text:
        return "no PTX (" + text.strip().splitlines()[0].split(": ", 1)[-1] + ")"
    r = subprocess.run([ptxas, "-v", f"-arch={arch}", path, "-o", os.devnull],
                       capture_output=True, text=True)
    text = r.stdout + r.stderr
    if r.returncode != 0:
        return f"ptxas failed: {text.strip().splitlines()[-1] if text.strip() else r.returncode}"
    regs = re.findall(r"Used (\d+) registers", text)
    spill = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    smem = re.findall(r"(\d+) bytes smem", text)
    parts = []
    if regs:
        parts.append("regs " + "/".join(regs))
    if spill:
        parts.append("spill st/ld " + " ".join(f"{s}/{l}" for s, l in spill))
    if smem:
        parts.append("static smem " + "/".join(smem))
    return ", ".join(parts) or text.strip()


def target_of(path):
    with open(path) as f:
        m = re.search(r"^\.target\s+(\w+)", f.read(), re.M)
    return m.group(1) if m else "sm_90"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", type=int, default=21, help="samples of ours per kernel")
    ap.add_argument("--triton", type=int, default=7, help="samples of Triton per kernel")
    ap.add_argument("--kernels", nargs="*", default=KERNELS)
    ap.add_argument("--ptxas", help="ptxas for -v register counts")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "tessera-ptx"))
    ap.add_argument("--base", help="a compile_latency binary of an earlier commit: its cold "
                    "compile runs alternately with ours, and the table gains ours/base")
    a = ap.parse_args()
    env = dict(os.environ)
    if a.ptxas:
        # Per bench notes: a CUDA 12.9 ptxas makes Triton emit PTX ISA 8.8 that it accepts.
        env.setdefault("TRITON_PTXAS_PATH", a.ptxas)
        env.setdefault("TRITON_PTXAS_BLACKWELL_PATH", a.ptxas)
    rows = []
    for k in a.kernels:
        cold, cached, hit, tri, base = [], [], [], [], []
        entry = True
        for i in range(max(a.ours, a.triton)):
            if i < a.ours:
                if a.base:
                    base.append(ours(k, exe=a.base)[0])
                c, p, h, entry = ours(k)
                cold.append(c)
                cached.append(p)
                hit.append(h)
            if i < a.triton:
                tri.append(triton(k, env))
        mc, mp, mh = (statistics.median(x) for x in (cold, cached, hit))
        # `--triton 0` (no Triton here): the Triton columns read n/a
        mt = statistics.median(tri) if tri else float("nan")
        mb = statistics.median(base) if base else None
        rows.append((k, mc, mp, mh, mt, entry, mb))
        print(f"{k}: ours cold {mc:.2f} ms, cached {mp:.3f}/{mh:.3f} ms; triton cold {mt:.1f} ms",
              file=sys.stderr)
    extra = f" | base cold ms (n={a.ours}) | ours/base (cold) |" if a.base else " |"
    print(f"| kernel | ours cold ms (n={a.ours}) | ours cached, PTX re-printed ms"
          f" | ours cached, hit only ms | Triton cold ms (n={a.triton}) | Triton/ours (cold)"
          + extra)
    print("| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if a.base else ""))
    for k, mc, mp, mh, mt, entry, mb in rows:
        if mt != mt:
            ratio = "n/a"
        elif entry:
            ratio = f"{mt / mc:.0f}x"
        else:
            ratio = f"n/a ({mt / mc:.0f}x, ours stops before PTX)"
        tail = f" | {mb:.2f} | {mc / mb:.2f}x |" if mb else " |"
        print(f"| {k} | {mc:.2f} | {mp:.3f} | {mh:.3f} | {mt:.1f} | {ratio}" + tail)
    if a.ptxas:
        os.makedirs(os.path.join(a.out, "ours"), exist_ok=True)
        os.makedirs(os.path.join(a.out, "triton"), exist_ok=True)
        print()
        print("| kernel | ours ptxas -v | Triton ptxas -v |")
        print("| --- | --- | --- |")
        for k in a.kernels:
            ours(k, emit=os.path.join(a.out, "ours"))
            triton(k, env, emit=os.path.join(a.out, "triton"))
            po = os.path.join(a.out, "ours", f"{k}.ptx")
            pt = os.path.join(a.out, "triton", f"{k}.ptx")
            print(f"| {k} | {target_of(po)}: {ptxas_v(a.ptxas, po, target_of(po))} "
                  f"| {target_of(pt)}: {ptxas_v(a.ptxas, pt, target_of(pt))} |")


if __name__ == "__main__":
    main()
