"""S1, Triton's side: host time per call of an @triton.autotune vector add, called from Python.

The peer of benchmarks/bench_cuda_launch.cpp: the same out = x + y over the same number of floats,
the same 8 candidates (BLOCK 1024..8192 x 4 or 8 warps). After tuning, calls are made in batches; only
the host time of each batch's loop is measured, and the device is synchronized between batches. Two
paths: the autotuned call `kernel[grid](...)`, and the JIT function called directly with the winning
config (no autotuner in between).

    python3 benchmarks/compare/triton_launch.py [n] [rounds] [batch]    defaults: 65536 200 256

Prints a table and one line `FIGURE {json}`.
"""
import json
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block in (1024, 2048, 4096, 8192) for warps in (4, 8)]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def s1_vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    y = tl.load(y_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, x + y, mask=inside)


def quantile(values, q):
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 16
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    x = torch.arange(n, device="cuda", dtype=torch.float32) % 100
    y = torch.arange(n, device="cuda", dtype=torch.float32) % 7
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)

    s1_vector_add[grid](x, y, out, n)  # tunes
    torch.cuda.synchronize()
    assert torch.equal(out, x + y), "wrong output"
    best = s1_vector_add.best_config
    jit_fn = s1_vector_add.fn
    best_kwargs = best.all_kwargs()

    def autotuned():
        for _ in range(batch):
            s1_vector_add[grid](x, y, out, n)

    def direct():
        for _ in range(batch):
            jit_fn[grid](x, y, out, n, **best_kwargs)

    paths = [("autotuned call kernel[grid](...)", autotuned, []), ("JIT call, winner's config", direct, [])]
    for _, run, _ in paths:
        run()
        torch.cuda.synchronize()
    for r in range(rounds):
        for k in range(len(paths)):
            _, run, samples = paths[(k + r) % len(paths)]
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            samples.append((t1 - t0) / batch * 1e6)

    print(f"S1 Triton {triton.__version__} (torch {torch.__version__}) on {torch.cuda.get_device_name(0)}: "
          f"out = x + y over {n} floats, winner {best}")
    print(f"  {'path':<34} {'median us':>10} {'p10 us':>10} {'p90 us':>10}")
    for name, _, samples in paths:
        print(f"  {name:<34} {statistics.median(samples):10.3f} {quantile(samples, 0.1):10.3f} "
              f"{quantile(samples, 0.9):10.3f}")
    print("FIGURE " + json.dumps({
        "figure": "S1", "side": "triton", "triton": triton.__version__, "n": n, "rounds": rounds, "batch": batch,
        "autotuned_us": round(statistics.median(paths[0][2]), 4), "jit_us": round(statistics.median(paths[1][2]), 4),
        "winner": str(best)}), flush=True)


if __name__ == "__main__":
    main()
