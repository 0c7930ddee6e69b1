#!/usr/bin/env python3
"""Executed overlap of the data-parallel gradient all-reduce (SPEC §7): one gradient step of a
4-layer MLP (4 x 1024 x 1024 fp32 weights, 16 MiB of gradients) with the batch split over 4
local devices, with `schedule.overlap(True)` (each bucket's all-reduce on its own thread
while the backward pass goes on) and `schedule.overlap(False)` (each waited for when issued),
in one run. Time per step: whole-process runs of 1 and 1+n steps, the difference over n,
median of `--runs`. The hidden fraction is the profile's measured one.

Usage (from the repository root):
    python3 bench/overlap.py --tessera target/release/tessera --runs 5 --steps 5
"""
import argparse
import os
import re
import subprocess
import tempfile

from tessera_time import per_call_ms

SCRIPT = """
mesh = dist.Mesh(axes=["dp"], shape=({devices},))
rows = dist.ShardSpec(partition=("row",), mesh_axes=("dp",))
X = dist.shard(op.randn(({batch}, {width}), seed=0), rows, mesh)
w1 = op.randn(({width}, {width}), seed=1) * 0.03
w2 = op.randn(({width}, {width}), seed=2) * 0.03
w3 = op.randn(({width}, {width}), seed=3) * 0.03
w4 = op.randn(({width}, {width}), seed=4) * 0.03
def loss(w1, w2, w3, w4, x):
    schedule.grad_bucket({bucket})
    schedule.overlap({overlap})
    h = op.relu(x @ w1)
    h = op.relu(h @ w2)
    h = op.relu(h @ w3)
    y = h @ w4
    return op.mean(y * y)
step = graph.grad(loss, argnums=(0, 1, 2, 3))
{body}
"""

STEPS = """
for i in range({steps}):
    g = step(w1, w2, w3, w4, X)
print(g[0].shape)
"""

PROFILE = """
print(graph.profile(step, w1, w2, w3, w4, X))
"""


def script(a, overlap, body):
    return SCRIPT.format(devices=a.devices, batch=a.batch, width=a.width, bucket=a.bucket,
                         overlap=overlap, body=body)


def profile_note(exe, src):
    with tempfile.NamedTemporaryFile("w", suffix=".tsr", delete=False) as f:
        f.write(src)
        path = f.name
    try:
        out = subprocess.run([exe, "run", path], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    return next((line for line in out.splitlines() if line.startswith("gradients on the mesh")), "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--bucket", type=int, default=4 << 20)
    a = ap.parse_args()
    grad_mib = 4 * a.width * a.width * 4 / 2**20
    print(f"{a.devices} devices, batch {a.batch}, 4 layers of {a.width}x{a.width} fp32: "
          f"{grad_mib:.0f} MiB of gradients, buckets of {a.bucket / 2**20:.0f} MiB; "
          f"{os.cpu_count()} cores")
    res = {}
    for overlap in ["True", "False"]:
        ms = per_call_ms(a.tessera, lambda k, o=overlap: script(a, o, STEPS.format(steps=k)),
                         a.steps, a.runs)
        note = profile_note(a.tessera, script(a, overlap, PROFILE))
        m = re.search(r"(\d+)% of it while the backward pass computed", note)
        res[overlap] = ms
        print(f"overlap={overlap}: {ms:.1f} ms per step; hidden "
              f"{m.group(1) + '%' if m else '-'}; {note}")
    print(f"with overlap / without: {res['True'] / res['False']:.3f}")


if __name__ == "__main__":
    main()
