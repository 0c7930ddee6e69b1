"""Times the benchmark kernels on the GPU against torch on the same device, in one run.

Used by scripts/gpu-check (CI never runs it). Tessera's time per kernel is the CUDA-event
median of `graph.profile` (its `measured` cuda rows); torch's is the median of CUDA-event
timed launches after warm-up (cuBLAS for matmul, scaled_dot_product_attention with the flash
backend, torch.softmax, torch.nn.functional.layer_norm). Inputs are random (never zeros).
Prints a table last and writes bench.md (rows for bench/RESULTS.md) under --out.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile

UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def tessera_time(bin_, src, env):
    """Runs a script that prints `ROW name latency` lines; returns the summed seconds."""
    with tempfile.NamedTemporaryFile("w", suffix=".tsr", delete=False) as f:
        f.write(src)
        path = f.name
    p = subprocess.run([bin_, "run", "--device", "cuda", path], env=env, capture_output=True,
                       text=True, timeout=600)
    os.unlink(path)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-3000:])
    total, rows = 0.0, 0
    for line in p.stdout.splitlines():
        m = re.match(r"ROW (\S+) +([0-9.]+) (ns|µs|ms|s)", line)
        if m:
            total += float(m.group(2)) * UNITS[m.group(3)]
            rows += 1
    if rows == 0:
        raise RuntimeError("no measured cuda row:\n" + p.stdout[-3000:] + p.stderr[-2000:])
    other = [l for l in p.stdout.splitlines() if l.startswith("OTHER")]
    if other:
        # a kernel that did not run on the GPU would make the sum too small
        raise RuntimeError("kernels not timed on cuda: " + "; ".join(other))
    return total


PROFILE_TAIL = """
t = graph.profile(f, {args}, repeats=20, ptxas=False)
for r in t.rows:
    if r[2] == "cuda" and r[8] == "measured":
        print("ROW", r[0], r[3].strip())
    elif r[8] == "measured":
        print("OTHER", r[0], r[2], r[8])
"""


def torch_time(fn, reps=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e-3)
    times.sort()
    return times[len(times) // 2]


def cases():
    import torch
    import torch.nn.functional as F
    dev = "cuda"
    bf = torch.bfloat16
    out = []
    for n in (4096, 8192):
        a = torch.randn(n, n, device=dev, dtype=bf)
        b = torch.randn(n, n, device=dev, dtype=bf)
        src = f"""
@op.kernel
def f(a, b):
    return a @ b
a = op.randn(({n}, {n}), dtype="bf16", seed=1)
b = op.randn(({n}, {n}), dtype="bf16", seed=2)
""" + PROFILE_TAIL.format(args="a, b")
        out.append((f"matmul bf16 {n}³", "TFLOP/s", 2 * n**3, src, lambda a=a, b=b: a @ b))
    B, H, S, D = 4, 16, 4096, 128
    q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=bf) for _ in range(3))
    for causal in (False, True):
        flops = 4 * B * H * S * S * D // (2 if causal else 1)

        def sdpa(q=q, k=k, v=v, causal=causal):
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        src = f"""
@op.kernel
def f(q, k, v):
    return op.flash_attention(q, k, v, causal={causal})
q = op.randn(({B}, {H}, {S}, {D}), dtype="bf16", seed=1)
k = op.randn(({B}, {H}, {S}, {D}), dtype="bf16", seed=2)
v = op.randn(({B}, {H}, {S}, {D}), dtype="bf16", seed=3)
""" + PROFILE_TAIL.format(args="q, k, v")
        out.append((f"flash attention bf16 b{B} h{H} s{S} d{D} causal={causal}", "TFLOP/s",
                    flops, src, sdpa))
    n = 8192
    x = torch.randn(n, n, device=dev, dtype=bf)
    w = torch.rand(n, device=dev, dtype=bf)
    bb = torch.randn(n, device=dev, dtype=bf)
    nbytes = 2 * n * n * 2
    src = f"""
@op.kernel
def f(x):
    return op.softmax(x, axis=-1)
x = op.randn(({n}, {n}), dtype="bf16", seed=1)
""" + PROFILE_TAIL.format(args="x")
    out.append((f"softmax bf16 {n}x{n}", "GB/s", nbytes, src, lambda: torch.softmax(x, -1)))
    src = f"""
@op.kernel
def f(x, w, b):
    return op.layernorm(x, weight=w, bias=b)
x = op.randn(({n}, {n}), dtype="bf16", seed=1)
w = op.rand(({n},), dtype="bf16", seed=2)
b = op.randn(({n},), dtype="bf16", seed=3)
""" + PROFILE_TAIL.format(args="x, w, b")
    out.append((f"layernorm bf16 {n}x{n}", "GB/s", nbytes + 4 * n, src,
                lambda: F.layer_norm(x, (n,), w, bb)))
    N, C, K, HW = 32, 128, 128, 56
    xc = torch.randn(N, C, HW, HW, device=dev, dtype=bf)
    wc = torch.randn(K, C, 3, 3, device=dev, dtype=bf)
    src = f"""
@op.kernel
def f(x, w):
    return op.conv2d(x, w, padding=1)
x = op.randn(({N}, {C}, {HW}, {HW}), dtype="bf16", seed=1)
w = op.randn(({K}, {C}, 3, 3), dtype="bf16", seed=2)
""" + PROFILE_TAIL.format(args="x, w")
    out.append((f"conv2d bf16 n{N} c{C} k{K} {HW}x{HW} 3x3", "TFLOP/s",
                2 * N * K * C * 9 * HW * HW, src,
                lambda: F.conv2d(xc, wc, padding=1)))
    # the spectral rewrite's size: 8 images of 16 channels, 64x64, a 31x31 kernel, "same"
    N, C, HW, K = 8, 16, 64, 31
    xs = torch.randn(N, C, HW, HW, device=dev)
    ws = torch.randn(C, C, K, K, device=dev)
    for alg in ("fft", "direct"):
        src = f"""
@op.kernel
def f(x, w):
    return op.conv2d(x, w, padding="same", algorithm="{alg}")
x = op.randn(({N}, {C}, {HW}, {HW}), seed=1)
w = op.randn(({C}, {C}, {K}, {K}), seed=2)
""" + PROFILE_TAIL.format(args="x, w")
        out.append((f"conv2d fp32 n{N} c{C} k{C} {HW}x{HW} {K}x{K} algorithm={alg}", "TFLOP/s",
                    2 * N * C * C * K * K * HW * HW, src,
                    lambda: F.conv2d(xs, ws, padding=K // 2)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    import torch
    gpu = torch.cuda.get_device_name(0)
    env = dict(os.environ, NO_COLOR="1")
    rows = []
    status = 0
    for name, unit, work, src, fn in cases():
        tt = torch_time(fn)
        try:
            ts = tessera_time(a.bin, src, env)
            err = ""
        except Exception as e:  # a failure is reported, the other benchmarks still run
            ts, err = float("nan"), str(e).strip().splitlines()[-1] if str(e).strip() else "failed"
            status = 1
        scale = 1e-12 if unit == "TFLOP/s" else 1e-9
        rows.append((name, unit, ts, work / ts * scale if ts == ts else float("nan"),
                     tt, work / tt * scale, err))
    date = datetime.date.today().isoformat()
    with open(os.path.join(a.out, "bench.md"), "w") as f:
        f.write(f"Device: {gpu}; date {date}; command `scripts/gpu-check --bench-only`\n\n")
        f.write("| benchmark | tessera | torch | unit | tessera / torch |\n|---|---|---|---|---|\n")
        for n, u, ts, rs, tt, rt, err in rows:
            f.write(f"| {n} | {ts*1e3:.3f} ms ({rs:.1f}) | {tt*1e3:.3f} ms ({rt:.1f}) | {u} | "
                    f"{rs/rt:.2f} {err} |\n")
    print(f"{'benchmark':58} {'tessera':>12} {'torch':>12} unit")
    for n, u, ts, rs, tt, rt, err in rows:
        print(f"{n:58} {rs:12.1f} {rt:12.1f} {u} {err}")
    return status


if __name__ == "__main__":
    sys.exit(main())
