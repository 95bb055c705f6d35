#!/usr/bin/env python3
"""Kernel Tuner's strategies on the search suite's spaces, replayed in its simulation mode.

    python3 benchmarks/search_suite/kt_replay.py [--seeds N] [--strategies a,b] [--spaces a,b]
                                                    [--budgets 0.05,0.1,0.25,0.5] [--out FILE.json]

Needs kernel_tuner (tested with 1.5.0 from PyPI, in a virtual environment: see README.md). Each data file
becomes a Kernel Tuner cache file (every config, the failed ones as RuntimeFailedConfig) and each strategy
searches it with `simulation_mode=True` and `strategy_options={"max_fevals": budget}`; the space Kernel
Tuner walks is exactly the data file's configs (a restriction admits those and no others: failed ones
too, so that a failure costs an evaluation, as it does cotune's strategies). Seeds: Python's and
NumPy's global generators, which Kernel Tuner's strategies draw from. Metrics as bench_search_suite's:
mean regret (best true time found / optimum - 1; the slowest valid time when nothing valid was found)
and the share of seeds within 2% of the optimum. Writes the same JSON schema as bench_search_suite's
results.json (tool "kernel_tuner"), which `bench_search_suite --with FILE` draws beside cotune's.
"""
import argparse, json, os, random, sys, tempfile, time, warnings


def kt_cache(space, path):
    params = space["params"]
    cache = {}
    for row in space["results"]:
        values = [p["values"][i] for p, i in zip(params, row[:-1])]
        entry = {p["name"]: v for p, v in zip(params, values)}
        entry["time"] = row[-1] if row[-1] is not None else "RuntimeFailedConfig"
        for k in ("compile_time", "verification_time", "benchmark_time"):
            entry[k] = 0
        cache[",".join(str(v) for v in values)] = entry
    doc = {"device_name": "suite", "kernel_name": space["name"].replace("-", "_"), "problem_size": [1],
           "tune_params_keys": [p["name"] for p in params],
           "tune_params": {p["name"]: p["values"] for p in params}, "objective": "time", "cache": cache}
    with open(path, "w") as f:
        json.dump(doc, f)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "data"))
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--strategies", default="bayes_opt,genetic_algorithm,simulated_annealing")
    ap.add_argument("--spaces", default="")
    ap.add_argument("--budgets", default="0.05,0.1,0.25,0.5")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds per (space, strategy, budget): seeds left when it is spent are not run (0: none)")
    ap.add_argument("--out", default="kernel_tuner_results.json")
    a = ap.parse_args()

    import numpy as np
    import kernel_tuner
    from kernel_tuner import tune_kernel
    from constraint import FunctionConstraint

    warnings.simplefilter("ignore")
    budgets = [float(b) for b in a.budgets.split(",")]
    only = [s for s in a.spaces.split(",") if s]
    out = {"format": "cotune-search-suite-results-1", "tool": "kernel_tuner",
           "kernel_tuner": kernel_tuner.__version__ if hasattr(kernel_tuner, "__version__") else "?",
           "seeds": a.seeds, "spaces": []}
    tmp = tempfile.mkdtemp(prefix="kt-suite-")
    for fn in sorted(os.listdir(a.data)):
        if not fn.endswith(".json"):
            continue
        space = json.load(open(os.path.join(a.data, fn)))
        if only and space["name"] not in only:
            continue
        path = os.path.join(tmp, fn)
        doc = kt_cache(space, path)
        keys = set(tuple(p["values"][i] for p, i in zip(space["params"], row[:-1])) for row in space["results"])
        times = [r[-1] for r in space["results"] if r[-1] is not None]
        opt, slowest, size = min(times), max(times), len(space["results"])
        entry = {"name": space["name"], "size": size, "valid": len(times), "optimum": opt, "strategies": []}
        print(f"{space['name']}: {size} configs, optimum {opt:.6g} ms", flush=True)
        for strategy in [s for s in a.strategies.split(",") if s]:
            line = {"name": strategy, "tool": "kernel_tuner", "points": [], "seeds_run": []}
            t0 = time.time()
            for share in budgets:
                evals = max(1, round(share * size))
                regrets, tb = [], time.time()
                for seed in range(1, a.seeds + 1):
                    if a.time_limit and time.time() - tb > a.time_limit:
                        break
                    random.seed(seed)
                    np.random.seed(seed)
                    results, _ = tune_kernel(
                        doc["kernel_name"], "", (1,), [], dict(doc["tune_params"]), cache=path,
                        simulation_mode=True, strategy=strategy, strategy_options={"max_fevals": evals},
                        restrictions=[FunctionConstraint(lambda *v: v in keys)], quiet=True, verbose=False,
                        objective="time")
                    found = [r["time"] for r in results if r and "__error__" not in r and isinstance(r.get("time"), (int, float))]
                    best = min(found) if found else slowest
                    regrets.append(best / opt - 1)
                n = len(regrets)
                line["points"].append({"share": share, "evaluations": evals,
                                       "mean_regret": sum(regrets) / n if n else float("nan"),
                                       "within_2pct": sum(r <= 0.02 + 1e-12 for r in regrets) / n if n else 0.0})
                line["seeds_run"].append(n)
                print(f"  {strategy:<20} {share:>5.0%}: mean regret {100 * line['points'][-1]['mean_regret']:.2f}%, "
                      f"in 2% {100 * line['points'][-1]['within_2pct']:.0f}% ({n} seeds, {time.time() - tb:.0f} s)",
                      flush=True)
            line["seconds"] = round(time.time() - t0, 1)
            entry["strategies"].append(line)
        out["spaces"].append(entry)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    print(f"figures: {a.out}")


if __name__ == "__main__":
    sys.exit(main())
