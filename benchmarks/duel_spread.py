"""Diagnostic: how often a preferential rule duels a point with a near copy of itself.

A duel ``[x, x2]`` with ``x2`` next to ``x`` teaches almost nothing: its answer is a coin toss,
whatever the utility. For each rule and function, one benchmark run (``visiontune bench``'s own
:func:`visiontune.reproduction.sweep.run_one`, same protocol and seeds) records every duel after the
initial random ones; the script prints, per rule, the fraction of those duels whose members are
within ``--tol`` of the unit box (largest coordinate difference) and the median distance.

This is how the first Dueling UCB (marginal ``sigma_f``) was found to duel near copies in about
70% of its queries, how EI-pref's documented pathology (Fauvel & Chalk (binary/preferential BO), §5.2) was measured,
and how EIIG as printed in table S1 (``k log mu_c - I``) was found to share it (60% near copies; EIIG+I: 1%).

Run: python benchmarks/duel_spread.py [--rules Dueling-UCB EI-pref MUC] [--functions ackley ...]
[--seeds 1] [--tol 0.01]
"""

from __future__ import annotations

import argparse

import numpy as np

from visiontune.reproduction import sweep
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.benchmark_experiments import get_experiment


class RecordingPolicy:
    """A policy that keeps the largest coordinate difference of each duel it proposes."""

    def __init__(self, policy, distances: list):
        self._policy, self._distances = policy, distances

    def __call__(self, model, problem, data, rng):
        query = self._policy(model, problem, data, rng)
        width = problem.box[:, 1] - problem.box[:, 0]
        self._distances.append(float(np.max(np.abs(query.x - query.x2) / width)))
        return query


def duel_distances(rule: str, function: str, seed: int, experiment) -> np.ndarray:
    """Distances (fractions of the box) of the duels after the initial random ones of one run."""
    distances: list[float] = []
    make = registry.make
    registry.make = lambda name, **kw: RecordingPolicy(make(name, **kw), distances)
    try:
        sweep.run_one(
            sweep.RunSpec(
                experiment.name, experiment.scenario, rule, function, seed, experiment.iterations, experiment.n_initial
            )
        )
    finally:
        registry.make = make
    return np.array(distances[experiment.n_initial :])


def main(argv=None) -> None:
    experiment = get_experiment("000-table2")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", nargs="+", default=["Dueling-UCB", "EI-pref", "MUC", "random-duel"])
    parser.add_argument("--functions", nargs="+", default=list(experiment.functions[:10]))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--tol", type=float, default=0.01, help="near copy: within this fraction of the box")
    args = parser.parse_args(argv)
    print(
        f"Fauvel & Chalk (binary/preferential BO), Table 2 protocol ({experiment.iterations} iterations, "
        f"{experiment.n_initial} random first); "
        f"{len(args.functions)} functions x {args.seeds} seed(s); near copy: within {args.tol:g} of the box"
    )
    for rule in args.rules:
        d = np.concatenate([duel_distances(rule, f, s, experiment) for f in args.functions for s in range(args.seeds)])
        print(
            f"{rule:>14}: {100 * np.mean(d < args.tol):5.1f}% near copies of {d.size} duels; "
            f"median distance {np.median(d):.4f}"
        )


if __name__ == "__main__":
    main()
