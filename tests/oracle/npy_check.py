#!/usr/bin/env python3
"""NumPy reads what `op.save` writes: for every dtype NumPy has, a tensor saved by
`target/debug/tessera` loads with `numpy.load` with the same dtype, shape and values (the
values as `tolist()` prints them). Exit status 1 on any difference."""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXE = os.path.join(ROOT, "target", "debug", "tessera")
DTYPES = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "int8": np.int8,
          "int32": np.int32, "int64": np.int64, "bool": np.bool_}


def main():
    with tempfile.TemporaryDirectory() as d:
        lines = [f"d = {d!r}"]
        for name in DTYPES:
            lines.append(f"x = (op.randn((3, 4), seed=2) * 40).to({name!r})")
            lines.append(f"op.save(d + '/{name}.npy', x)")
            lines.append(f"print({name!r}, x.tolist())")
        script = os.path.join(d, "save.tsr")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        out = subprocess.run([EXE, "run", script], capture_output=True, text=True, check=True)
        failures = 0
        for line in out.stdout.splitlines():
            name, values = line.split(" ", 1)
            want = json.loads(values.replace("True", "true").replace("False", "false"))
            a = np.load(os.path.join(d, f"{name}.npy"))
            if a.dtype != DTYPES[name] or a.shape != (3, 4) or a.tolist() != want:
                print(f"npy {name}: numpy read {a.dtype} {a.shape} {a.tolist()}, want {want}")
                failures += 1
        print(f"npy: {len(DTYPES) - failures} dtypes read by numpy, {failures} failed")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
