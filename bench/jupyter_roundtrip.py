#!/usr/bin/env python3
"""Round trip of a cell `1 + 1` through Jupyter, measured with jupyter_client: from sending the
execute_request to having both the execute_reply (shell) and the idle status (iopub), with the
execute_result `2` checked. Median of N runs after warm-ups; also kernel start time.

The kernelspec is installed into a temporary prefix (JUPYTER_PATH), never the user's.

usage: .venv/bin/python bench/jupyter_roundtrip.py [--runs 50] [--exe target/release/tessera]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--warmup", type=int, default=5)
ap.add_argument("--exe", default="target/release/tessera")
a = ap.parse_args()

with tempfile.TemporaryDirectory() as prefix:
    subprocess.run([a.exe, "jupyter", "install", "--prefix", prefix], check=True,
                   capture_output=True)
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
    from jupyter_client.manager import start_new_kernel

    t = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="tessera")
    start_ms = (time.perf_counter() - t) * 1000
    try:
        times = []
        for i in range(a.warmup + a.runs):
            t = time.perf_counter()
            msg_id = kc.execute("1 + 1")
            reply = result = idle = None
            while reply is None:
                m = kc.get_shell_msg(timeout=10)
                if m["parent_header"].get("msg_id") == msg_id:
                    reply = m
            while idle is None:
                m = kc.get_iopub_msg(timeout=10)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                if m["msg_type"] == "execute_result":
                    result = m["content"]["data"]["text/plain"]
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    idle = m
            dt = (time.perf_counter() - t) * 1000
            assert reply["content"]["status"] == "ok" and result == "2", (reply, result)
            if i >= a.warmup:
                times.append(dt)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

times.sort()
print(f"kernel start (start_new_kernel, until ready): {start_ms:.0f} ms")
print(f"`1 + 1` round trip: median {statistics.median(times):.2f} ms  "
      f"min {times[0]:.2f}  p90 {times[int(0.9 * len(times)) - 1]:.2f}  max {times[-1]:.2f}  "
      f"(n={len(times)})")
