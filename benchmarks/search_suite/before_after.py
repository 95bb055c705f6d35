#!/usr/bin/env python3
"""Before/after table of one cotune strategy on the search suite, for RESULTS.md: per space, random's,
the old and the new strategy's mean regret (share of seeds within 2% of the optimum) at 10% and 25%
budgets, whether the space was used to choose the change ("chosen on") or held out, and the mean over
spaces per group; then where the new one is worse than random at any budget.

    benchmarks/search_suite/before_after.py --before B.json[,B2.json] --after A.json[,A2.json] \\
        [--old-name bayes-local-before] [--new-name bayes-local] [--chosen s1,s2,...]

Takes results.json files of bench_search_suite (random is read from the "after" files). Standard library only.
"""
import argparse, json


def load(files, name):
    out = {}
    for f in files.split(","):
        for sp in json.load(open(f))["spaces"]:
            for st in sp["strategies"]:
                if st["name"] == name:
                    out[sp["name"]] = (st["seeds"], {round(p["share"], 2): p for p in st["points"]})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--old-name", default="bayes-local-before")
    ap.add_argument("--new-name", default="bayes-local")
    ap.add_argument("--chosen", default="convolution-w6600,convolution-a100,h200-stencil")
    a = ap.parse_args()
    chosen = set(a.chosen.split(","))
    B, A, R = load(a.before, a.old_name), load(a.after, a.new_name), load(a.after, "random")

    def cell(p, s):
        return f"{100 * p[s]['mean_regret']:.2f}% ({100 * p[s]['within_2pct']:.0f}%)"

    print("| space | used to choose | seeds before / after | random 10% | before 10% | after 10% | random 25% | before 25% "
          "| after 25% | targets met before / after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    names = sorted(A, key=lambda n: (n not in chosen, n))

    def met(p):
        return p[0.1]["mean_regret"] <= 0.01 and p[0.1]["within_2pct"] >= 0.9 and p[0.25]["mean_regret"] <= 0.002

    for n in names:
        an, rn = A[n][1], R[n][1]
        bn = B[n][1] if n in B else None
        print(f"| {n} | {'yes' if n in chosen else 'held out'} | {B[n][0] if bn else '-'} / {A[n][0]} | {cell(rn, 0.1)} | "
              f"{cell(bn, 0.1) if bn else '-'} | **{cell(an, 0.1)}** | {cell(rn, 0.25)} | {cell(bn, 0.25) if bn else '-'} | "
              f"**{cell(an, 0.25)}** | {('yes' if met(bn) else 'no') if bn else '-'} / {'yes' if met(an) else 'no'} |")
    print()
    for group, sel in (("used to choose", lambda n: n in chosen), ("held out", lambda n: n not in chosen), ("all", lambda n: True)):
        ns = [n for n in names if sel(n)]
        nb = [n for n in ns if n in B]
        parts = []
        for s in (0.1, 0.25):
            mean = lambda T, ks: sum(T[k][1][s]["mean_regret"] for k in ks) / len(ks)
            parts.append(f"at {int(s * 100)}%: before {100 * mean(B, nb):.2f}% ({len(nb)} spaces), after {100 * mean(A, ns):.2f}%, "
                         f"random {100 * mean(R, ns):.2f}%")
        print(f"- {group} ({len(ns)} spaces), mean regret over the spaces: " + "; ".join(parts))
    worse = [f"{n} at {int(s * 100)}% ({100 * A[n][1][s]['mean_regret']:.2f}% against {100 * R[n][1][s]['mean_regret']:.2f}%)"
             for n in names for s in (0.05, 0.1, 0.25, 0.5) if A[n][1][s]["mean_regret"] > R[n][1][s]["mean_regret"] + 1e-12]
    print(f"- after, worse than random: {', '.join(worse) if worse else 'nowhere'}")


if __name__ == "__main__":
    main()
