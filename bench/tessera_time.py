"""What the bench scripts share: the wall time of `tessera run` on a generated script, and
the time per call from whole-process runs of 1 and 1+n calls (start-up and the compile of the
first call cancel out)."""
import os
import statistics
import subprocess
import tempfile
import time


def run_seconds(exe, src):
    """Wall time of `exe run` on the script text `src` (the script must succeed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".tsr", delete=False) as f:
        f.write(src)
        path = f.name
    try:
        t0 = time.perf_counter()
        subprocess.run([exe, "run", path], check=True, capture_output=True)
        return time.perf_counter() - t0
    finally:
        os.unlink(path)


def per_call_ms(exe, source_for, n, runs):
    """Median over `runs` of (time of 1+n calls − time of 1 call) / n, in ms; `source_for(k)`
    is the script making k calls."""
    diffs = [(run_seconds(exe, source_for(1 + n)) - run_seconds(exe, source_for(1))) / n
             for _ in range(runs)]
    return statistics.median(diffs) * 1e3
