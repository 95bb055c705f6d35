#!/usr/bin/env python3
"""Transfer between tuned keys, replayed on the search suite (issue 37, item 3).

The suite holds one problem size per space, so there are no multi-size spaces to replay. What it has
are spaces of the same kernel and parameters on two GPUs (convolution A100 / W6600, dedispersion
A100 / MI250X): a transfer between neighbours of a kind, used here as the nearest thing the suite
offers. For each ordered pair (source tuned, target new), the target's search is seeded with the
source's best K configs (what cotune's transfer_seeds hands a new key's search: the winners of its
nearest tuned keys), then goes on as the strategy would. Reported: evaluations until a config within
2% of the target's optimum is evaluated, without and with the seeds, mean and median over seeds.

Strategy replayed: uniform random sampling without replacement (cotune's `random`), seeds first.
Python standard library only.

    python3 benchmarks/search_suite/transfer.py [--seeds 200] [--k 4]
"""
import argparse
import json
import os
import random
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = [("convolution-a100", "convolution-w6600"), ("convolution-w6600", "convolution-a100"),
         ("dedispersion-a100", "dedispersion-mi250x"), ("dedispersion-mi250x", "dedispersion-a100")]


def load(name):
    with open(os.path.join(HERE, "data", name + ".json")) as f:
        d = json.load(f)
    names = [(p["name"], tuple(p["values"])) for p in d["params"]]
    times = {}
    for row in d["results"]:
        cfg = tuple(p[1][i] for p, i in zip(names, row[:-1]))
        times[cfg] = row[-1]
    return names, times, d["optimum"]


def evaluations_to_near(order, times, target_ms):
    for k, cfg in enumerate(order, 1):
        t = times[cfg]
        if t is not None and t <= target_ms:
            return k
    return len(order)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--k", type=int, default=4, help="source configs that seed the target's search")
    args = ap.parse_args()
    print(f"| source (tuned) | target (new) | configs | seeds within 2% | random: mean / median evaluations | "
          f"seeded: mean / median | ratio of means | best seed / target optimum |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for src, dst in PAIRS:
        sp, st, _ = load(src)
        dp, dt, dopt = load(dst)
        assert [p[0] for p in sp] == [p[0] for p in dp], (src, dst)
        ranked = sorted((c for c in st if st[c] is not None and c in dt), key=lambda c: st[c])
        seeds = ranked[:args.k]
        near = dopt * 1.02
        configs = list(dt)
        plain, seeded = [], []
        for s in range(args.seeds):
            rng = random.Random(s)
            order = configs[:]
            rng.shuffle(order)
            plain.append(evaluations_to_near(order, dt, near))
            rest = [c for c in order if c not in seeds]
            seeded.append(evaluations_to_near(seeds + rest, dt, near))
        good = sum(1 for c in seeds if dt[c] is not None and dt[c] <= near)
        best_seed = min((dt[c] for c in seeds if dt[c] is not None), default=float("inf"))
        pm, sm = statistics.mean(plain), statistics.mean(seeded)
        print(f"| {src} | {dst} | {len(configs):,} | {good} of {len(seeds)} | {pm:.0f} / {statistics.median(plain):.0f} | "
              f"{sm:.0f} / {statistics.median(seeded):.0f} | {sm / pm:.2f} | {best_seed / dopt:.2f}x |")


if __name__ == "__main__":
    main()
