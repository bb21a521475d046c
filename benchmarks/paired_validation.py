"""Two clinical validations on the same simulated patients, compared patient by patient.

Reads two validation stores (``visiontune validate``'s SQLite, table ``clinic_runs``), pairs the
runs of one policy by population and case, and prints two Markdown tables: per model the answers,
within 0.25 / 0.50 D, median and 90th percentile error, coverage and answer -> next lens time; and
the discordant patients within 0.25 D (with the exact McNemar test: a two-sided binomial test of
the discordant counts at 1/2) and within 0.50 D. Every patient is SIMULATED.

Run (docs/results/clinical-validation-optics-gp.md):
    python benchmarks/paired_validation.py \\
        docs/results/clinical-validation.sqlite clinical-sloan-seed1 "optics (clinical-sloan)" \\
        docs/results/clinical-validation-optics-gp.sqlite clinical-sloan-optics-gp-seed1 \\
        "optics-gp (clinical-sloan-optics-gp)"
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import binomtest

from visiontune.validation.clinic import stored_metrics

_EPS = 1e-9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for which in ("a", "b"):
        p.add_argument(f"store_{which}")
        p.add_argument(f"experiment_{which}")
        p.add_argument(f"label_{which}")
    p.add_argument("--populations", default="adult-clinic,adult-clinic-misspecified")
    p.add_argument("--policy", default="evr")
    args = p.parse_args()
    print(
        "| population | model | n | answers (median) | within 0.25 D | within 0.50 D | median error (D) | 90th pct (D) "
        "| coverage 50 / 80 / 95% | answer -> next lens, median / p99 (ms) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    pairs = {}
    for pop in args.populations.split(","):
        a = stored_metrics(args.store_a, pop, args.policy, args.experiment_a)
        b = stored_metrics(args.store_b, pop, args.policy, args.experiment_b)
        ids = sorted(i for i in set(a) & set(b) if "refused" not in a[i] and "refused" not in b[i])
        for label, d in ((args.label_a, a), (args.label_b, b)):
            e = np.array([d[i]["error_d"] for i in ids])
            cov = [100 * np.mean([d[i][f"covered_{lv}"] for i in ids]) for lv in (50, 80, 95)]
            ms = np.concatenate([d[i]["decision_ms"] for i in ids])
            print(
                f"| {pop} | {label} | {len(ids)} | {int(np.median([d[i]['answers'] for i in ids]))} "
                f"| {100 * np.mean(e <= 0.25 + _EPS):.0f}% | {100 * np.mean(e <= 0.5 + _EPS):.0f}% "
                f"| {np.median(e):.2f} "
                f"| {np.percentile(e, 90):.2f} | {cov[0]:.0f}% / {cov[1]:.0f}% / {cov[2]:.0f}% "
                f"| {np.median(ms):.1f} / {np.percentile(ms, 99):.1f} |"
            )
        pairs[pop] = (ids, a, b)
    print()
    print(
        f"| population | n | {args.label_b} within 0.25 D, {args.label_a} not | {args.label_a} within 0.25 D, "
        f"{args.label_b} not | exact McNemar p | within 0.50 D, {args.label_b} only / {args.label_a} only "
        f"| median paired error difference, {args.label_b} - {args.label_a} (D) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for pop, (ids, a, b) in pairs.items():
        ea, eb = (np.array([d[i]["error_d"] for i in ids]) for d in (a, b))
        only_b, only_a = (
            int(np.sum((eb <= 0.25 + _EPS) & (ea > 0.25 + _EPS))),
            int(np.sum((ea <= 0.25 + _EPS) & (eb > 0.25 + _EPS))),
        )
        half_b, half_a = (
            int(np.sum((eb <= 0.5 + _EPS) & (ea > 0.5 + _EPS))),
            int(np.sum((ea <= 0.5 + _EPS) & (eb > 0.5 + _EPS))),
        )
        pval = binomtest(only_b, only_b + only_a).pvalue if only_b + only_a else 1.0
        print(
            f"| {pop} | {len(ids)} | {only_b} | {only_a} | {pval:.2f} | {half_b} / {half_a} "
            f"| {np.median(eb - ea):+.3f} |"
        )


if __name__ == "__main__":
    main()
