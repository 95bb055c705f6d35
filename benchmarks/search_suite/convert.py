#!/usr/bin/env python3
"""Converts stored tuning ground truths into the search suite's one format (benchmarks/search_suite/data).

    benchmarks/search_suite/convert.py --hub DIR [--repo DIR] [--table suite_h200_spaces.json --table-commit SHA]

--hub: a checkout (or bare git directory) of github.com/AutoTuningAssociation/benchmark_hub; files are
read with `git show COMMIT:PATH`, so the commit named below is the one converted. --repo: this repository
(for the H200 table, benchmarks/cuda_search_spaces.json at the commit named below); --table: a table that
bench_cuda_search_suite (or bench_cuda_search_spaces --sizes, with --table-tool) wrote on the GPU machine
(new H200 spaces; a table's spaces with a "key" become multi-size spaces of one group). Writes one
JSON file per space; see README.md beside this script for the format and the sources. Standard library only.
"""
import argparse, gzip, json, math, os, subprocess, sys

HUB_URL = "https://github.com/AutoTuningAssociation/benchmark_hub"
HUB_COMMIT = "8eeb99e7179e6838af95d392ac6c60cebfd8c434"
HUB_LICENCE = "MIT (Copyright (c) 2025 AutoTuningAssociation)"
H200_COMMIT = "cfc13fe75a22556260dd50f5fa0c4c9d1f82ca64"

# name, file in the hub, kernel description, categorical parameters (switches and method selectors).
HUB_SPACES = [
    ("pnpoly-rtx3090", "currently_unused/cachefiles/KernelTuner data/pnpoly/RTX_3090.json.gz",
     "point-in-polygon (cn_pnpoly, Kernel Tuner's example), 20M points", ["between_method", "use_method"]),
    ("convolution-rtx3090", "currently_unused/cachefiles/KernelTuner data/convolution/RTX_3090.json.gz",
     "2D convolution 4096x4096, 15x15 filter (Kernel Tuner's example)", ["read_only", "use_padding"]),
    ("convolution-a100", "cachefiles/convolution_milo/A100.json.gz",
     "2D convolution 4096x4096, 15x15 filter (HIP/CUDA version)", ["read_only", "use_padding", "use_shmem"]),
    ("convolution-w6600", "cachefiles/convolution_milo/W6600.json.gz",
     "2D convolution 4096x4096, 15x15 filter (HIP/CUDA version)", ["read_only", "use_padding", "use_shmem"]),
    ("xgemm-rtx3090", "currently_unused/cachefiles/KernelTuner data/gemm/RTX_3090.json.gz",
     "CLBlast Xgemm 4096x4096 fp32", ["SA", "SB"]),
    ("dedispersion-a100", "cachefiles/dedispersion_milo/A100.json.gz",
     "radio-astronomy dedispersion, 25000 samples x 2048 DMs", ["tile_stride_x", "tile_stride_y"]),
    ("dedispersion-mi250x", "cachefiles/dedispersion_milo/MI250X.json.gz",
     "radio-astronomy dedispersion, 25000 samples x 2048 DMs", ["tile_stride_x", "tile_stride_y"]),
]
# Held out (benchmarks/search_suite/held_out): the same kernels on GPUs that no strategy or variant was ever
# chosen on, converted after the default strategy was fixed, to report what it does on spaces it was not
# tuned to. Same columns as HUB_SPACES.
HELD_OUT_SPACES = [
    ("convolution-mi250x", "cachefiles/convolution_milo/MI250X.json.gz",
     "2D convolution 4096x4096, 15x15 filter (HIP/CUDA version)", ["read_only", "use_padding", "use_shmem"]),
    ("convolution-w7800", "cachefiles/convolution_milo/W7800.json.gz",
     "2D convolution 4096x4096, 15x15 filter (HIP/CUDA version)", ["read_only", "use_padding", "use_shmem"]),
    ("convolution-a6000", "cachefiles/convolution_milo/A6000.json.gz",
     "2D convolution 4096x4096, 15x15 filter (HIP/CUDA version)", ["read_only", "use_padding", "use_shmem"]),
    ("dedispersion-w6600", "cachefiles/dedispersion_milo/W6600.json.gz",
     "radio-astronomy dedispersion, 25000 samples x 2048 DMs", ["tile_stride_x", "tile_stride_y"]),
    ("dedispersion-a4000", "cachefiles/dedispersion_milo/A4000.json.gz",
     "radio-astronomy dedispersion, 25000 samples x 2048 DMs", ["tile_stride_x", "tile_stride_y"]),
    ("convolution-rtx2080ti", "currently_unused/cachefiles/KernelTuner data/convolution/RTX_2080_Ti.json.gz",
     "2D convolution 4096x4096, 15x15 filter (Kernel Tuner's example)", ["read_only", "use_padding"]),
    ("pnpoly-rtx2080ti", "currently_unused/cachefiles/KernelTuner data/pnpoly/RTX_2080_Ti.json.gz",
     "point-in-polygon (cn_pnpoly, Kernel Tuner's example)", ["between_method", "use_method"]),
    ("xgemm-rtx2080ti", "currently_unused/cachefiles/KernelTuner data/gemm/RTX_2080_Ti.json.gz",
     "CLBlast Xgemm 4096x4096 fp32", ["SA", "SB"]),
]
H200_KINDS = {"stencil": ["SMEM"], "reduction": ["SHUFFLE"], "gemm": [], "histogram": ["METHOD"]}
GPU_NAMES = {"dedispersion-mi250x": "AMD Instinct MI250X (LUMI)", "convolution-mi250x": "AMD Instinct MI250X (LUMI)"}


def git_show(gitdir, commit, path):
    return subprocess.run(["git", "-C", gitdir, "show", f"{commit}:{path}"], check=True, capture_output=True).stdout


def sig(t):
    return float(f"{t:.6g}")


def near_optimal(params, rows):
    """The configs within 2% of the optimum, how many regions they form (connected by one step on one
    axis: the next value of an ordered parameter, any value of a categorical one), and the largest
    distance between two regions' best configs (the sum over axes of the position difference as a
    fraction of the axis length, 1 for a differing categorical value)."""
    times = [r[-1] for r in rows if r[-1] is not None]
    opt = min(times)
    near = {tuple(r[:-1]): r[-1] for r in rows if r[-1] is not None and r[-1] <= opt * 1.02}
    seen, regions = set(), []
    for p in sorted(near, key=near.get):
        if p in seen:
            continue
        stack, comp = [p], []
        seen.add(p)
        while stack:
            q = stack.pop()
            comp.append(q)
            for d, prm in enumerate(params):
                n = len(prm["values"])
                steps = range(n) if prm["kind"] == "categorical" else (q[d] - 1, q[d] + 1)
                for v in steps:
                    if 0 <= v < n and v != q[d]:
                        r = q[:d] + (v,) + q[d + 1:]
                        if r in near and r not in seen:
                            seen.add(r)
                            stack.append(r)
        regions.append(min(comp, key=near.get))

    def dist(a, b):
        s = 0.0
        for d, prm in enumerate(params):
            n = len(prm["values"])
            if prm["kind"] == "categorical":
                s += a[d] != b[d]
            elif n > 1:
                s += abs(a[d] - b[d]) / (n - 1)
        return s
    far = max((dist(a, b) for a in regions for b in regions), default=0.0)
    return {"within_2pct": len(near), "regions": len(regions), "max_region_distance": round(far, 3)}


def write(out_dir, space):
    rows = space["results"]
    valid = [r[-1] for r in rows if r[-1] is not None]
    space["size"] = len(rows)
    space["valid"] = len(valid)
    space["optimum"] = min(valid)
    space["near_optimal"] = near_optimal(space["params"], rows)
    keys = ["format", "name", "description", "source", "objective", "size", "valid", "optimum", "near_optimal",
            "multi_size", "params", "fixed", "results"]
    ordered = {k: space[k] for k in keys if k in space}
    path = os.path.join(out_dir, space["name"] + ".json")
    with open(path, "w") as f:
        # one line per result row: diffable, and compact enough (20,000 rows are about 500 KB)
        head = json.dumps({k: v for k, v in ordered.items() if k not in ("params", "results")}, indent=1)[:-2]
        f.write(head + ',\n "params": [\n')
        f.write(",\n".join("  " + json.dumps(p) for p in ordered["params"]))
        f.write('\n ],\n "results": [\n')
        f.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in rows))
        f.write("\n ]\n}\n")
    print(f"{path}: {len(rows)} configs, {len(valid)} valid, optimum {space['optimum']:.6g} ms, "
          f"near-optimal {space['near_optimal']}")


def from_kernel_tuner(name, cache, kernel, categorical, source):
    """A Kernel Tuner cache file: parameters with one value become `fixed`, failures become null."""
    tp = cache["tune_params"]
    keys = cache["tune_params_keys"]
    varying = [k for k in keys if len(tp[k]) > 1]
    for k in categorical:
        assert k in varying, f"{name}: categorical {k} is not a varying parameter"
    params = [{"name": k, "kind": "categorical" if k in categorical else "ordered", "values": sorted(tp[k])}
              for k in varying]
    pos = [{v: i for i, v in enumerate(p["values"])} for p in params]
    rows, failures = [], {}
    for entry in cache["cache"].values():
        t = entry["time"]
        ok = isinstance(t, (int, float)) and math.isfinite(t) and t < 1e20
        if not ok:
            failures[str(t)] = failures.get(str(t), 0) + 1
        rows.append([pos[d][entry[p["name"]]] for d, p in enumerate(params)] + [sig(t) if ok else None])
    rows.sort(key=lambda r: r[:-1])
    source = dict(source, kernel=kernel, family=name.split("-")[0], gpu=GPU_NAMES.get(name) or cache.get("device_name"),
                  problem_size=cache.get("problem_size"), failures=failures)
    return {"format": "cotune-search-suite-1", "name": name,
            "description": f"{kernel} on {source['gpu']}: Kernel Tuner brute-force cache",
            "source": source, "objective": "time in ms (Kernel Tuner's `time`: mean of its runs); null: failed",
            "params": params, "fixed": {k: tp[k][0] for k in keys if len(tp[k]) == 1}, "results": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", help="without it, only --table files are converted")
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "data"))
    ap.add_argument("--held-out", default=os.path.join(os.path.dirname(__file__), "held_out"),
                    help="where --hub's held-out spaces are written")
    ap.add_argument("--table", action="append", default=[],
                    help="a table written by bench_cuda_search_suite (suite_h200_spaces.json); repeatable")
    ap.add_argument("--table-commit", default="", help="the commit of this repository that measured --table")
    ap.add_argument("--table-tool", default="bench_cuda_search_suite",
                    help="the program that wrote --table (bench_cuda_search_spaces for its --sizes tables)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.hub:
        os.makedirs(a.held_out, exist_ok=True)
        for out, spaces in ((a.out, HUB_SPACES), (a.held_out, HELD_OUT_SPACES)):
            for name, path, kernel, categorical in spaces:
                raw = gzip.decompress(git_show(a.hub, HUB_COMMIT, path))
                cache = json.loads(raw)
                src = {"url": f"{HUB_URL}/blob/{HUB_COMMIT}/{path.replace(' ', '%20')}", "repository": HUB_URL,
                       "commit": HUB_COMMIT, "file": path, "licence": HUB_LICENCE}
                write(out, from_kernel_tuner(name, cache, kernel, categorical, src))
        table = json.loads(git_show(a.repo, H200_COMMIT, "benchmarks/cuda_search_spaces.json"))
        from_cotune_table(a.out, table, {"url": "this repository, benchmarks/cuda_search_spaces.json "
                                                "(bench_cuda_search_spaces, CUDA backend)",
                                         "commit": H200_COMMIT, "licence": "this repository's"})
    for t in a.table:
        from_cotune_table(a.out, json.load(open(t)), {"url": f"this repository, measured by {a.table_tool} "
                                                             "(CUDA backend)", "file": os.path.basename(t),
                                                      "commit": a.table_commit, "licence": "this repository's"})


def from_cotune_table(out, table, source):
    """A table of bench_cuda_search_spaces or bench_cuda_search_suite (format cotune-search-spaces-1)."""
    for sp in table["spaces"]:
        short = sp["name"].split(" ")[0]
        cands = sp["candidates"]
        names = sorted(cands[0]["config"]["params"])
        params = [{"name": k, "kind": "categorical" if k in H200_KINDS.get(short, []) else "ordered",
                   "values": sorted({c["config"]["params"][k] for c in cands})} for k in names]
        pos = [{v: i for i, v in enumerate(p["values"])} for p in params]
        rows = sorted([pos[d][c["config"]["params"][p["name"]]] for d, p in enumerate(params)] +
                      [sig(c["time_ms"]) if c["status"] == "ok" else None] for c in cands)
        failures = {}
        for c in cands:
            if c["status"] != "ok":
                failures[c["status"]] = failures.get(c["status"], 0) + 1
        space = {"format": "cotune-search-suite-1", "name": f"h200-{short}",
                 "description": f"{sp['name']}: {sp['problem']}, measured whole by cotune on the H200",
                 "source": dict(source, kernel=f"{sp['name']} ({sp['problem']})", family=short, gpu=table["device"],
                                date=table["date"], failures=failures),
                 "objective": "time in ms (cotune's median); null: failed", "params": params, "fixed": {},
                 "results": rows}
        if "key" in sp:
            # One of several problem sizes (bench_cuda_search_spaces --sizes): named by the key's numbers
            # ("M=512, N=512, K=512" -> h200-gemm-512x512x512), grouped for the transfer replay.
            numbers = [part.split("=", 1)[1] for part in sp["key"].split(", ") if "=" in part]
            space["name"] = f"h200-{short}-{'x'.join(numbers)}"
            space["multi_size"] = {"group": f"h200-{short}-sizes", "key": sp["key"]}
            space["source"]["problem_size"] = sp["problem"]
        write(out, space)

if __name__ == "__main__":
    sys.exit(main())
