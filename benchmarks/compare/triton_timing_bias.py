"""Issue 12, item 1, Triton's side: the bias of triton.testing.do_bench on kernels of about 1, 5, 20,
100 and 1000 us.

The peer of benchmarks/bench_cuda_timing_bias.cpp: out = x + y over n floats (a Triton kernel), n
calibrated per target duration against the same ground truth, one torch.cuda.CUDAGraph of 1000
launches replayed 5 times after an upload replay, its mean replay time over 1000. For each size,
`reps` calls of do_bench with its defaults (warmup 25 ms, rep 100 ms, a 256 MB cache flush before
each launch, one event pair per launch), the median of each call's samples.

    python3 benchmarks/compare/triton_timing_bias.py [reps] [targets_us...]   defaults: 5; 1 5 20 100 1000

Prints a table and lines `FIGURE {json}` (one per size).
"""
import json
import statistics
import sys
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

BLOCK = 1024


@triton.jit
def timing_bias_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    y = tl.load(y_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, x + y, mask=inside)


def graph_truth(fn, launches=1000, replays=5):
    """Milliseconds per launch from a CUDA graph of `launches` launches (mean over `replays`)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # compiled and warm before capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    graph.replay()  # upload
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    total = 0.0
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        total += start.elapsed_time(end)
    return total / replays / launches


def do_bench_median(fn):
    """do_bench with its default budgets; the median of its samples (older Tritons: quantiles)."""
    try:
        return do_bench(fn, return_mode="median")
    except TypeError:
        return do_bench(fn, quantiles=[0.5])[0]


def main():
    reps = max(1, int(sys.argv[1])) if len(sys.argv) > 1 else 5
    targets = [float(t) for t in sys.argv[2:]] or [1, 5, 20, 100, 1000]
    max_n = int(max(1.0, max(targets)) * 1e-6 * 6e12 / 12.0)
    x = torch.zeros(max_n, device="cuda", dtype=torch.float32)
    y = torch.zeros_like(x)
    out = torch.empty_like(x)

    def launcher(n):
        grid = (triton.cdiv(n, BLOCK),)
        return lambda: timing_bias_add[grid](x, y, out, n, BLOCK=BLOCK)

    print(f"triton {triton.__version__}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name()}")
    print(f"timing bias of do_bench: out = x + y; truth = graph of 1000 launches; {reps} calls per size")
    print(f"  {'target':>8} {'n':>11} {'truth us':>10} | {'do_bench us':>11} {'bias':>8} {'wall ms':>8}")
    for target in targets:
        n = min(max(int(target * 1e-6 * 3e12 / 12.0), 1 << 12), max_n)
        truth = graph_truth(launcher(n))
        for _ in range(2):
            n = min(max(int(n * target / (truth * 1e3)), 1 << 12), max_n)
            truth = graph_truth(launcher(n))
        fn = launcher(n)
        times, walls = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            times.append(do_bench_median(fn) * 1e3)
            walls.append((time.perf_counter() - t0) * 1e3)
        truth_us, got = truth * 1e3, statistics.median(times)
        bias = 100.0 * (got / truth_us - 1.0)
        wall = statistics.mean(walls)
        print(f"  {target:8.0f} {n:11d} {truth_us:10.3f} | {got:11.3f} {bias:+7.1f}% {wall:8.1f}")
        print("FIGURE " + json.dumps({
            "figure": "timing_bias", "side": "triton", "target_us": target, "n": n, "truth_us": round(truth_us, 4),
            "do_bench_us": round(got, 4), "bias_pct": round(bias, 2), "wall_ms": round(wall, 2),
        }))


if __name__ == "__main__":
    main()
