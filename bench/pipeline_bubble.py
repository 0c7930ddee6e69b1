#!/usr/bin/env python3
"""The measured bubble of `dist.pipeline` (SPEC §7) against (p-1)/(m+p-1): p balanced stages
(each a 1024x1024 fp32 matmul and a relu per micro-batch) over m micro-batches on a local
mesh, 1F1B, called `--calls` times in one process; the median of the measured bubbles and of
the step times, with the machine's core count (the stages run on p threads: with fewer cores
than stages they share them). Also reports the sequential composition's time per call.

Usage (from the repository root):
    python3 bench/pipeline_bubble.py --tessera target/release/tessera --stages 4 --micro 8
"""
import argparse
import os
import statistics
import subprocess
import tempfile

SCRIPT = """
p, m, rows, width = {p}, {m}, {rows}, {width}
W = op.randn((width, width), seed=1) * 0.03
def stage(x):
    return op.relu(x @ W)
stages = []
for i in range(p):
    stages.append(stage)
pipe = dist.pipeline(stages, microbatches=m, schedule="{schedule}")
X = op.randn((rows, width), seed=2)
ref = X
for i in range(p):
    ref = stage(ref)
Y = pipe(X)
print("equal", op.max_abs_diff(Y, ref) < 1e-4)
for i in range({calls}):
    Y = pipe(X)
    print("bubble", pipe.bubble, "step", pipe.step_time, "model", pipe.model_bubble)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--schedule", default="1f1b")
    a = ap.parse_args()
    src = SCRIPT.format(p=a.stages, m=a.micro, rows=a.rows, width=a.width, calls=a.calls,
                        schedule=a.schedule)
    with tempfile.NamedTemporaryFile("w", suffix=".tsr", delete=False) as f:
        f.write(src)
        path = f.name
    try:
        out = subprocess.run([a.tessera, "run", path], check=True, capture_output=True,
                             text=True).stdout
    finally:
        os.unlink(path)
    bubbles, steps, model, equal = [], [], None, None
    for line in out.splitlines():
        w = line.split()
        if w[0] == "equal":
            equal = w[1]
        elif w[0] == "bubble":
            bubbles.append(float(w[1]))
            steps.append(float(w[3]))
            model = float(w[5])
    b = statistics.median(bubbles)
    print(f"{a.stages} stages x {a.micro} micro-batches ({a.schedule}), {a.rows}x{a.width} fp32, "
          f"{os.cpu_count()} cores: equal to the sequential composition: {equal}")
    print(f"measured bubble (median of {len(bubbles)}): {b:.3f}; (p-1)/(m+p-1) = {model:.3f}; "
          f"difference {100 * (b - model):+.1f} points; step {1e3 * statistics.median(steps):.1f} ms")


if __name__ == "__main__":
    main()
