#!/usr/bin/env python3
"""One data-parallel training step (value_and_grad + Adam) of the MLP of examples/train.tsr
with the batch split over a local mesh of 1, 2 and 4 devices, against the same step without
a mesh, in one run. Whole-process runs of N and 1+N steps, the difference over N steps,
median of `--runs`. The local mesh runs one worker thread per device, so on a machine with
fewer cores than devices the devices share them.

Usage (from the repository root):
    python3 bench/dp_step.py --tessera /path/to/release/tessera --runs 5
"""
import argparse

from tessera_time import per_call_ms

SIZES = [(64, 8, 32, 4), (1024, 256, 512, 16)]
SCRIPT = """
n, d_in, d_hidden, classes = {n}, {d_in}, {h}, {c}
X = op.randn((n, d_in), seed=0)
Y = op.softmax(X @ op.randn((d_in, classes), seed=1), axis=-1)
def loss_fn(w1, b1, w2, b2, x, y):
    h = op.gelu(op.layernorm(x) @ w1 + b1)
    p = op.softmax(h @ w2 + b2, axis=-1)
    return -op.mean(op.sum(y * op.log(p + 1e-7), axis=-1))
params = [op.randn((d_in, d_hidden), seed=2) * 0.1, op.zeros((d_hidden,)),
          op.randn((d_hidden, classes), seed=3) * 0.1, op.zeros((classes,))]
if {devices} > 0:
    mesh = dist.Mesh(axes=["dp"], shape=({devices},))
    rows = dist.ShardSpec(partition=("row",), mesh_axes=("dp",))
    X = dist.shard(X, rows, mesh)
    Y = dist.shard(Y, rows, mesh)
opt = optim.adam(0.02)
step = graph.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))
for i in range({steps}):
    loss, grads = step(params[0], params[1], params[2], params[3], X, Y)
    whole = []
    for g in grads:
        if {devices} > 0:
            g = dist.gather(g)
        whole.append(g)
    params = opt.update(params, whole)
print(loss)
"""


def step_ms(exe, size, devices, n, runs):
    return per_call_ms(
        exe,
        lambda steps: SCRIPT.format(n=size[0], d_in=size[1], h=size[2], c=size[3],
                                    devices=devices, steps=steps),
        n,
        runs,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    print("| n×d_in×hidden×classes | no mesh (ms) | dp=1 | dp=2 | dp=4 |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        base = step_ms(a.tessera, size, 0, a.steps, a.runs)
        cells = [f"{base:.2f}"]
        for d in (1, 2, 4):
            t = step_ms(a.tessera, size, d, a.steps, a.runs)
            cells.append(f"{t:.2f} ({t / base:.2f}x)")
        print(f"| {'×'.join(map(str, size))} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
