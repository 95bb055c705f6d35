#!/usr/bin/env python3
"""Markdown tables of search-suite figures, for RESULTS.md: per space, one row per strategy (cotune's
and other tools'), mean regret and share of seeds within 2% of the optimum at 10% and 25% budgets, then
each strategy's worst case over the spaces against issue 35's targets.

    benchmarks/search_suite/tables.py RESULTS.json [MORE.json ...]

Takes results.json files of bench_search_suite and of kt_replay.py (same schema); a space may appear in
several files (its rows are joined). Standard library only.
"""
import json, sys


def main():
    spaces, order = {}, []
    for fn in sys.argv[1:]:
        doc = json.load(open(fn))
        for sp in doc["spaces"]:
            if sp["name"] not in spaces:
                spaces[sp["name"]] = {"size": sp["size"], "valid": sp["valid"], "rows": []}
                order.append(sp["name"])
            for st in sp["strategies"]:
                label = st["name"] if st["tool"] == "cotune" else f"{st['tool']}:{st['name']}"
                pts = {round(p["share"], 4): p for p in st["points"]}
                seeds = st.get("seeds") or (st.get("seeds_run") or [doc.get("seeds", "?")])
                if isinstance(seeds, list):
                    seeds = f"{min(seeds)}-{max(seeds)}" if min(seeds) != max(seeds) else str(seeds[0])
                spaces[sp["name"]]["rows"].append((label, pts, seeds))
    worst = {}
    for name in order:
        sp = spaces[name]
        print(f"\n**{name}** ({sp['size']:,} configs, {sp['valid']:,} valid)\n")
        print("| strategy | seeds | 10%: mean regret | 10%: in 2% | 25%: mean regret | 25%: in 2% |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, pts, seeds in sp["rows"]:
            cells = []
            for share in (0.1, 0.25):
                p = pts.get(share)
                cells += [f"{100 * p['mean_regret']:.2f}%", f"{100 * p['within_2pct']:.0f}%"] if p else ["-", "-"]
                if p:
                    w = worst.setdefault(label, {"r10": 0, "in10": 1, "r25": 0, "n": 0, "n25": 0, "s10": 0, "s25": 0})
                    if share == 0.1:
                        w["r10"] = max(w["r10"], p["mean_regret"])
                        w["in10"] = min(w["in10"], p["within_2pct"])
                        w["n"] += 1
                        w["s10"] += p["mean_regret"]
                    else:
                        w["r25"] = max(w["r25"], p["mean_regret"])
                        w["n25"] += 1
                        w["s25"] += p["mean_regret"]
            print(f"| {label} | {seeds} | " + " | ".join(cells) + " |")
    print("\n**Worst over the spaces** (targets: at 10%, mean regret <= 1% and in 2% >= 90%; at 25%, <= 0.2%)\n")
    print("| strategy | spaces | 10%: max mean regret | 10%: min in 2% | 10%: mean over spaces | "
          "25%: max mean regret | 25%: mean over spaces | targets met |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for label, w in worst.items():
        met = w["r10"] <= 0.01 and w["in10"] >= 0.9 and w["r25"] <= 0.002 and w["n25"] == w["n"]
        m25 = f"{100 * w['s25'] / w['n25']:.2f}%" if w["n25"] else "-"
        print(f"| {label} | {w['n']} | {100 * w['r10']:.2f}% | {100 * w['in10']:.0f}% | {100 * w['s10'] / w['n']:.2f}% | "
              f"{100 * w['r25']:.2f}% | {m25} | {'yes' if met else 'no'} |")


if __name__ == "__main__":
    sys.exit(main())
