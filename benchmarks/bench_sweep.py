"""Benchmark: sweep throughput in decisions per second per core (plain script, prints tables).

A decision is one iteration of a run: policy call, simulated answer, model refit (Laplace,
warm-started) and the reported solution (see visiontune/reproduction/sweep.py). Measured three ways:

- serial, before/after: ``run_one`` in this process with the reported solution searched afresh
  (``solution_search="full"``: 512 candidates + 10 L-BFGS starts, the previous behaviour) and
  tracked (``"tracked"``: 64 candidates + warm start, the default), per (scenario, rule) on each
  function; the median over ``--repeats`` timings of ``--seeds`` runs, in decisions/s of one core;
- parallel: ``run_sweep(jobs=N)`` (joblib loky) on a fresh store, decisions/s divided by N, with
  the CPU time of the worker processes over the wall time (2.0 = both cores busy all along).

Run: OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/bench_sweep.py \\
    [--iterations 30] [--seeds 2] [--repeats 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from visiontune.reproduction.benchmark_experiments import Experiment
from visiontune.reproduction.sweep import RunSpec, run_one, run_sweep
from visiontune.validation.results_store import ResultsStore

CASES = (
    ("binary", "UCB_Phi"),
    ("binary", "random"),
    ("contextual-binary", "UCB-ALD"),
    ("contextual-binary", "random-contextual"),
    ("preferential", "MUC"),
    ("batch-preferential", "random-batch"),
)
FUNCTIONS = ("forrester", "six_hump_camel", "hartmann3")


def _rate(scenario, rule, fname, args, search) -> float:
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for seed in range(args.seeds):
            run_one(RunSpec("bench", scenario, rule, fname, seed, args.iterations, 5), solution_search=search)
        times.append(time.perf_counter() - start)
    return args.seeds * args.iterations / statistics.median(times)


def _children_cpu() -> float:
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    run_one(RunSpec("warm-up", "binary", "random", "forrester", 0, 3, 2))  # imports, caches
    print(
        f"serial, {args.iterations} iterations x {args.seeds} seeds per cell, median of {args.repeats} "
        f"(decisions/s, one core): full solution search -> tracked"
    )
    print(f"{'scenario':<19} {'rule':<18} " + " ".join(f"{f:>22}" for f in FUNCTIONS))
    for scenario, rule in CASES:
        cells = [
            f"{_rate(scenario, rule, f, args, 'full'):8.1f} -> {_rate(scenario, rule, f, args, 'tracked'):8.1f}"
            for f in FUNCTIONS
        ]
        print(f"{scenario:<19} {rule:<18} " + " ".join(f"{c:>22}" for c in cells))

    exp = Experiment(
        "bench-parallel",
        "contextual-binary",
        ("UCB-ALD", "TS-ALD", "random-contextual"),
        ("forrester", "six_hump_camel"),
        n_seeds=2 * args.seeds,
        iterations=args.iterations,
        n_initial=5,
        source="benchmark",
    )
    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "b.sqlite") as store:
        cpu0 = _children_cpu()
        summary = run_sweep(exp, store, jobs=args.jobs, progress=False)
        busy = (_children_cpu() - cpu0) / summary.seconds
    print(
        f"parallel sweep, jobs={args.jobs}: {summary.ran} runs, "
        f"{summary.decisions} decisions in {summary.seconds:.1f} s "
        f"-> {summary.decisions / summary.seconds / args.jobs:.1f} decisions/s per core "
        f"({summary.decisions / summary.cpu_seconds:.1f} per second of run time); "
        f"worker CPU / wall = {busy:.2f} cores busy"
    )


if __name__ == "__main__":
    main()
