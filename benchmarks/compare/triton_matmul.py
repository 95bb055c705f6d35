"""S2 and S3, Triton's side: autotuning 16 configs of a tiled matmul (fp16 in, fp32 accumulate and out).

The peer of benchmarks/bench_cuda_tuning.cpp: the same problem (M = N = K = size), the same 16
(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) choices as examples/04_tune_cuda_gemm.cpp, and
Triton's default benchmark budgets (25 ms warm-up, 100 ms of runs), as cotune's knobs.

    python3 benchmarks/compare/triton_matmul.py cold TAG WORKDIR [size]   S2: first call tunes all 16
    python3 benchmarks/compare/triton_matmul.py warm TAG WORKDIR [size]   S3: a new process, results and
                                                                          kernels in Triton's disk caches

The kernel is written to WORKDIR as a module with a name of its own (matmul_TAG), so that no cache of
an earlier run can serve it; point TRITON_CACHE_DIR at an empty directory for `cold` and at the same
one for `warm`. The autotuner stores its result on disk (cache_results=True, like
TRITON_CACHE_AUTOTUNING=1). `cold` first compiles and runs an unrelated small kernel, so that Triton's
driver and launcher set-up is not counted (the cotune side warms up the same way). Prints lines
`FIGURE {json}`.
"""
import importlib
import json
import os
import sys
import time

T_START = time.perf_counter()

import torch
import triton
import triton.language as tl

KERNEL_MODULE = '''
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=warps, num_stages=stages)
    for bm in (64, 128) for bn in (64, 128) for (bk, warps, stages) in ((32, 4, 3), (32, 8, 4), (64, 4, 2), (64, 8, 3))
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"], cache_results=True)
@triton.jit
def KERNEL_NAME(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Programs walk the output in groups of GROUP_M tile rows, so that neighbours share tiles of B in L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group_first_m = (pid // per_group) * GROUP_M
    group_rows = min(tiles_m - group_first_m, GROUP_M)
    tile_m = group_first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=ks[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_tile = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    tl.store(c_tile, acc, mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))
'''


@triton.jit
def warm_up_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1.0, mask=offsets < n)


def load_kernel(tag, workdir):
    name = f"matmul_{tag}"
    module_name = f"triton_matmul_{tag}"
    path = os.path.join(workdir, module_name + ".py")
    if not os.path.exists(path):
        os.makedirs(workdir, exist_ok=True)
        with open(path, "w") as f:
            f.write(KERNEL_MODULE.replace("KERNEL_NAME", name))
    sys.path.insert(0, workdir)
    return getattr(importlib.import_module(module_name), name)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("cold", "warm"):
        sys.exit("usage: triton_matmul.py cold|warm TAG WORKDIR [size]")
    mode, tag, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
    torch.manual_seed(0)
    a = torch.rand((size, size), device="cuda", dtype=torch.float16) * 2 - 1
    b = torch.rand((size, size), device="cuda", dtype=torch.float16) * 2 - 1
    c = torch.empty((size, size), device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    if mode == "cold":
        x = torch.zeros(1024, device="cuda")
        warm_up_kernel[(1,)](x, 1024, BLOCK=1024)
        torch.cuda.synchronize()
    kernel = load_kernel(tag, workdir)
    grid = lambda meta: (triton.cdiv(size, meta["BLOCK_M"]) * triton.cdiv(size, meta["BLOCK_N"]),)

    # Context ready, data on the device (and, cold, Triton warmed up): from here to the first launch.
    t0 = time.perf_counter()
    kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                 c.stride(1))
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()

    ref = a.float() @ b.float()
    rel = ((c - ref).abs().max() / ref.abs().max()).item()
    best = kernel.best_config
    timings = getattr(kernel, "configs_timings", None) or {}
    rows = sorted(timings.items(), key=lambda kv: kv[1])
    if mode == "cold":
        print(f"S2 Triton {triton.__version__}: cold autotuning of a {size}^3 fp16 matmul, {len(kernel.configs)} "
              f"configs: first call {1e3 * (t1 - t0):.1f} ms (benchmarking {getattr(kernel, 'bench_time', 0):.2f} s); "
              f"winner {best}; max rel error {rel:.2e}")
        for cfg, t in rows:
            print(f"  {str(cfg):<90} {t[0] if isinstance(t, (list, tuple)) else t:10.4f} ms")
    else:
        print(f"S3 Triton {triton.__version__}: warm start of a {size}^3 fp16 matmul in a new process: first call "
              f"{1e3 * (t1 - t0):.1f} ms after the context was ready ({1e3 * (t2 - t0):.1f} ms with the kernel done); "
              f"process start to first call {1e3 * (t1 - T_START):.0f} ms; winner {best}; max rel error {rel:.2e}")
    winner_ms = None
    if best in timings:
        t = timings[best]
        winner_ms = t[0] if isinstance(t, (list, tuple)) else t
    print("FIGURE " + json.dumps({
        "figure": "S2" if mode == "cold" else "S3", "side": "triton", "mode": mode, "triton": triton.__version__,
        "size": size, "candidates": len(kernel.configs), "first_call_ms": round(1e3 * (t1 - t0), 3),
        "first_done_ms": round(1e3 * (t2 - t0), 3), "bench_s": getattr(kernel, "bench_time", None),
        "winner": str(best), "winner_ms": winner_ms, "max_rel_error": rel, "correct": rel < 1e-2}), flush=True)


if __name__ == "__main__":
    main()
