#!/usr/bin/env python3
"""One training step (forward + backward + Adam update) of the 2-layer MLP of
examples/train.tsr: Tessera (whole-process runs of N and 1+N steps, the difference over N
steps, median of `--runs`) against JAX on the CPU (jit of value_and_grad plus a jitted Adam
update, median over timed steps after a warm-up), in the same run, for two sizes.

Usage (from the repository root; JAX in any venv):
    python3 bench/train_step.py --tessera /path/to/release/tessera --runs 5
        [--baseline /path/to/an/earlier/tessera]
`--baseline` times a second Tessera build the same way in the same run (before/after);
`--no-jax` leaves JAX out (Tessera builds against each other on a machine without it).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = [(64, 8, 32, 4), (1024, 256, 512, 16)]
MODEL = """
n, d_in, d_hidden, classes = {n}, {d_in}, {h}, {c}
X = op.randn((n, d_in), seed=0)
teacher = op.randn((d_in, classes), seed=1)
Z = X @ teacher
Y = (Z == op.max(Z, axis=-1, keepdim=True)).to("fp32")

def loss_fn(w1, b1, w2, b2, x, y):
    h = op.gelu(op.layernorm(x) @ w1 + b1)
    p = op.softmax(h @ w2 + b2, axis=-1)
    return -op.mean(op.sum(y * op.log(p + 1e-7), axis=-1))

params = [op.randn((d_in, d_hidden), seed=2) * (1.0 / d_in ** 0.5), op.zeros((d_hidden,)),
          op.randn((d_hidden, classes), seed=3) * (1.0 / d_hidden ** 0.5), op.zeros((classes,))]
opt = optim.adam(0.02)
step = graph.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))
for i in range({steps}):
    loss, grads = step(params[0], params[1], params[2], params[3], X, Y)
    params = opt.update(params, grads)
print(loss.item())
"""


def tessera_step(exe, size, steps, runs, d):
    times = {}
    for k in (1, 1 + steps):
        path = os.path.join(d, f"train_{size[0]}_{k}.tsr")
        with open(path, "w") as f:
            f.write(MODEL.format(n=size[0], d_in=size[1], h=size[2], c=size[3], steps=k))
        ts = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([exe, "run", path], check=True, stdout=subprocess.DEVNULL,
                           env={"TESSERA_CUDA": "off", "PATH": "/usr/bin:/bin"})
            ts.append(time.perf_counter() - t)
        times[k] = statistics.median(ts)
    return (times[1 + steps] - times[1]) / steps


def jax_step(size, steps):
    import jax
    import jax.numpy as jnp
    n, d_in, h, c = size
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    X = jax.random.normal(k[0], (n, d_in))
    Z = X @ jax.random.normal(k[1], (d_in, c))
    Y = (Z == Z.max(axis=-1, keepdims=True)).astype(jnp.float32)
    params = [jax.random.normal(k[2], (d_in, h)) / d_in ** 0.5, jnp.zeros((h,)),
              jax.random.normal(k[3], (h, c)) / h ** 0.5, jnp.zeros((c,))]

    def layernorm(x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5)

    def loss_fn(p, x, y):
        hdn = jax.nn.gelu(layernorm(x) @ p[0] + p[1], approximate=False)
        pr = jax.nn.softmax(hdn @ p[2] + p[3], axis=-1)
        return -jnp.mean(jnp.sum(y * jnp.log(pr + 1e-7), axis=-1))

    @jax.jit
    def train(p, m, v, t, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        m = [0.9 * a + 0.1 * b for a, b in zip(m, g)]
        v = [0.999 * a + 0.001 * b * b for a, b in zip(v, g)]
        mh = [a / (1 - 0.9 ** t) for a in m]
        vh = [a / (1 - 0.999 ** t) for a in v]
        p = [a - 0.02 * b / (jnp.sqrt(c) + 1e-8) for a, b, c in zip(p, mh, vh)]
        return loss, p, m, v

    m = [jnp.zeros_like(a) for a in params]
    v = [jnp.zeros_like(a) for a in params]
    loss, params, m, v = train(params, m, v, 1.0, X, Y)
    loss.block_until_ready()
    ts = []
    for i in range(steps):
        t = time.perf_counter()
        loss, params, m, v = train(params, m, v, float(i + 2), X, Y)
        loss.block_until_ready()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--baseline", help="a second tessera binary, timed the same way")
    ap.add_argument("--no-jax", action="store_true", help="time the Tessera builds only")
    a = ap.parse_args()
    if not a.no_jax:
        import jax
        print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    with tempfile.TemporaryDirectory() as d:
        for size in SIZES:
            ours = tessera_step(a.tessera, size, a.steps, a.runs, d)
            line = (f"MLP n={size[0]} d_in={size[1]} hidden={size[2]} classes={size[3]}: "
                    f"tessera {ours * 1e3:.3f} ms/step")
            theirs = None if a.no_jax else jax_step(size, a.steps)
            if theirs is not None:
                line += f", jax {theirs * 1e3:.3f} ms/step, tessera/jax = {ours / theirs:.2f}"
            if a.baseline:
                base = tessera_step(a.baseline, size, a.steps, a.runs, d)
                line += f"; baseline {base * 1e3:.3f} ms/step (tessera/baseline = {ours / base:.2f}"
                line += ")" if theirs is None else f", baseline/jax = {base / theirs:.2f})"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
