#!/usr/bin/env python3
"""NumPy and the `safetensors` package read what `op.save` writes: for every dtype NumPy has,
a tensor saved by `target/debug/tessera` as `.npy` loads with `numpy.load` with the same
dtype, shape and values (the values as `tolist()` prints them); for every Tessera dtype, a
`.safetensors` file loads with the `safetensors` package (bf16 and fp8 through ml_dtypes) with
the same names, dtypes, shapes and values. Exit status 1 on any difference."""

import json
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# $CARGO_TARGET_DIR when set (a build outside the tree), as cargo itself reads it
EXE = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "debug", "tessera")
DTYPES = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "int8": np.int8,
          "int32": np.int32, "int64": np.int64, "bool": np.bool_}
CDTYPES = {"c64": np.complex64, "c128": np.complex128}


def run(d, name, lines):
    """Runs the script of `lines` with tessera; its stdout."""
    script = os.path.join(d, name)
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    return subprocess.run([EXE, "run", script], capture_output=True, text=True, check=True).stdout


def printed(stdout):
    """The `name values` lines a script printed, as (name, values read as JSON)."""
    for line in stdout.splitlines():
        name, values = line.split(" ", 1)
        yield name, json.loads(values.replace("True", "true").replace("False", "false"))


def main():
    with tempfile.TemporaryDirectory() as d:
        lines = [f"d = {d!r}"]
        for name in DTYPES:
            lines.append(f"x = (op.randn((3, 4), seed=2) * 40).to({name!r})")
            lines.append(f"op.save(d + '/{name}.npy', x)")
            lines.append(f"print({name!r}, x.tolist())")
        failures = 0
        for name, want in printed(run(d, "save.tsr", lines)):
            a = np.load(os.path.join(d, f"{name}.npy"))
            if a.dtype != DTYPES[name] or a.shape != (3, 4) or a.tolist() != want:
                print(f"npy {name}: numpy read {a.dtype} {a.shape} {a.tolist()}, want {want}")
                failures += 1
        # complex: the parts printed, the file read by numpy as complex64/complex128
        lines = [f"d = {d!r}"]
        for name in CDTYPES:
            lines.append(f"x = op.complex(op.randn((3, 4), seed=2), op.randn((3, 4), seed=3)).to({name!r})")
            lines.append(f"op.save(d + '/{name}.npy', x)")
            lines.append(f"print({name!r}, [op.real(x).tolist(), op.imag(x).tolist()])")
        for name, want in printed(run(d, "save_c.tsr", lines)):
            a = np.load(os.path.join(d, f"{name}.npy"))
            got = [a.real.astype(np.float64).tolist(), a.imag.astype(np.float64).tolist()]
            if a.dtype != CDTYPES[name] or a.shape != (3, 4) or got != want:
                print(f"npy {name}: numpy read {a.dtype} {a.shape} {got}, want {want}")
                failures += 1
        total = len(DTYPES) + len(CDTYPES)
        print(f"npy: {total - failures} dtypes read by numpy, {failures} failed")
        return 1 if failures or check_safetensors(d) else 0


# Tessera dtype -> (safetensors dtype, numpy dtype to read the bytes as)
ST_DTYPES = {"fp64": ("F64", np.float64), "fp32": ("F32", np.float32), "tf32": ("F32", np.float32),
             "fp16": ("F16", np.float16), "bf16": ("BF16", ml_dtypes.bfloat16),
             "fp8_e4m3": ("F8_E4M3", ml_dtypes.float8_e4m3fn),
             "fp8_e5m2": ("F8_E5M2", ml_dtypes.float8_e5m2), "int64": ("I64", np.int64),
             "int32": ("I32", np.int32), "int8": ("I8", np.int8), "bool": ("BOOL", np.bool_)}


def check_safetensors(d):
    path = os.path.join(d, "all.safetensors")
    lines = ["items = []"]
    for name in ST_DTYPES:
        lines.append(f"x = (op.clip(op.randn((2, 3), seed=5), -3, 3) * 40).to({name!r})")
        lines.append(f"items.append(({name!r}, x))")
        lines.append(f"print({name!r}, x.tolist())")
    lines.append(f"op.save({path!r}, items)")
    out = run(d, "save_st.tsr", lines)
    with open(path, "rb") as f:
        entries = dict(safetensors.deserialize(f.read()))
    failures = 0
    if sorted(entries) != sorted(ST_DTYPES):
        print(f"safetensors: names {sorted(entries)}, want {sorted(ST_DTYPES)}")
        failures += 1
    for name, want in printed(out):
        e = entries.get(name)
        st, npd = ST_DTYPES[name]
        if e is None:
            continue
        a = np.frombuffer(bytes(e["data"]), dtype=npd).reshape(e["shape"])
        got = a.astype(np.float64).tolist() if npd not in (np.bool_, np.int8, np.int32, np.int64) else a.tolist()
        if e["dtype"] != st or list(e["shape"]) != [2, 3] or got != want:
            print(f"safetensors {name}: read {e['dtype']} {e['shape']} {got}, want {st} [2, 3] {want}")
            failures += 1
    print(f"safetensors: {len(ST_DTYPES) - failures} dtypes read by the safetensors package, {failures} failed")
    return failures


if __name__ == "__main__":
    sys.exit(main())
