"""Triton's cold compile latency to PTX for sm_90, without a GPU (bench/RESULTS.md).

    python bench/triton_compile.py --one KERNEL [--emit DIR]

compiles one kernel with `triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))` in
this process and prints `KERNEL ms ptx_bytes`. The timed span is the `triton.compile` call alone
(`import triton` excluded); run it in a fresh process with an empty `TRITON_CACHE_DIR` for a cold
compile (bench/compile_latency.py does). Triton always runs its whole pipeline, ptxas included.
`--emit DIR` writes `DIR/KERNEL.ptx`.

Kernels (the equivalents of examples/compile_latency.rs):
- `matmul_bias_relu`: the tutorial matmul (03-matrix-multiplication) with a bias + relu epilogue,
  bf16 inputs, fp32 accumulation, bf16 output, BLOCK 128x128x64, GROUP_M 8, 8 warps, 3 stages;
- `softmax`: the tutorial row softmax (02-fused-softmax), fp32, BLOCK_SIZE 4096 (one row of a
  4096-wide matrix per program), 8 warps;
- `attention`: a flash-attention forward (the tutorial 06's inner loop: online softmax,
  BLOCK_M 128, BLOCK_N 64, HEAD_DIM 64, bf16, 8 warps, 3 stages) written without tensor
  descriptors / warp specialisation, non-causal.
"""

import argparse
import os
import sys
import time

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def matmul_bias_relu(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(bias_ptr + offs_cn, mask=offs_cn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    c = acc.to(tl.bfloat16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y, mask=offs < n_cols)


@triton.jit
def attention(Q, K, V, Out, sm_scale, stride_qh, stride_qm, stride_kh, stride_kn,
              stride_vh, stride_vn, stride_oh, stride_om, N_CTX,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        kt = tl.load(K + off_h * stride_kh + (start_n + offs_n)[None, :] * stride_kn
                     + offs_d[:, None])
        qk = tl.dot(q, kt)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + off_h * stride_vh + (start_n + offs_n)[:, None] * stride_vn
                    + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
             acc.to(tl.bfloat16))


def spec(name):
    """(fn, signature, constexprs, options) of one kernel."""
    if name == "matmul_bias_relu":
        sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "bias_ptr": "*fp32", "c_ptr": "*bf16"}
        for p in ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                  "stride_cm", "stride_cn"]:
            sig[p] = "i32"
        consts = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
        return matmul_bias_relu, sig, consts, {"num_warps": 8, "num_stages": 3}
    if name == "softmax":
        sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
               "n_rows": "i32", "n_cols": "i32"}
        return softmax, sig, {"BLOCK_SIZE": 4096}, {"num_warps": 8, "num_stages": 1}
    if name == "attention":
        sig = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "Out": "*bf16", "sm_scale": "fp32"}
        for p in ["stride_qh", "stride_qm", "stride_kh", "stride_kn", "stride_vh", "stride_vn",
                  "stride_oh", "stride_om", "N_CTX"]:
            sig[p] = "i32"
        consts = {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 64}
        return attention, sig, consts, {"num_warps": 8, "num_stages": 3}
    raise SystemExit(f"unknown kernel {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", required=True)
    ap.add_argument("--emit")
    a = ap.parse_args()
    fn, sig, consts, opts = spec(a.one)
    for c in consts:
        sig[c] = "constexpr"
    src = ASTSource(fn=fn, signature=sig, constexprs=consts)
    t0 = time.perf_counter()
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
    ptx = k.asm["ptx"]
    ms = (time.perf_counter() - t0) * 1e3
    if a.emit:
        os.makedirs(a.emit, exist_ok=True)
        with open(os.path.join(a.emit, f"{a.one}.ptx"), "w") as f:
            f.write(ptx)
    print(f"{a.one} {ms:.3f} {len(ptx)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
