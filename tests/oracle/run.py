#!/usr/bin/env python3
"""Run a Tessera .tsr script under CPython with the NumPy oracle `op` injected.

usage: run.py FILE.tsr
Exit status 0 on success; 1 with the exception on stderr otherwise (2 for a syntax error,
as `tessera run` does when a file does not parse).
"""

import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tessera_np  # noqa: E402


class _Unavailable:
    """Stand-in for the modules the oracle does not model (dist, schedule, ...)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise tessera_np.TesseraError(
            "E0100", f"'{self._name}.{attr}' is not available in the NumPy oracle")

    def __repr__(self):
        return f"<module {self._name}>"


class _Target:
    """`target`: the device choice does not change results (every device equals the cpu)."""

    def __init__(self):
        self._device = "cpu"

    def set_device(self, name):
        self._device = name

    def device(self):
        return self._device

    def __getattr__(self, attr):
        raise tessera_np.TesseraError(
            "E0100", f"'target.{attr}' is not available in the NumPy oracle")


def main(argv):
    if len(argv) != 2:
        print("usage: run.py FILE.tsr", file=sys.stderr)
        return 2
    path = argv[1]
    with open(path, encoding="utf-8") as f:
        src = f.read()
    try:
        code = compile(src, path, "exec")
    except SyntaxError:
        traceback.print_exc(limit=0)
        return 2
    # as a golden run: in the script's directory, so relative paths (open) mean the same
    here = os.path.dirname(os.path.abspath(path))
    os.chdir(here)
    path = os.path.basename(path)
    g = {"__name__": "__main__", "__file__": path, "op": tessera_np.op}
    for m in ("dist", "schedule", "graph", "autotune"):
        g[m] = _Unavailable(m)
    g["target"] = _Target()
    # `time` is a builtin module in Tessera (no `import`)
    g["time"] = time
    try:
        exec(code, g)
    except SystemExit:
        raise
    except BaseException:
        sys.stdout.flush()
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
