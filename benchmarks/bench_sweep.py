"""Benchmark: sweep throughput in decisions per second per core (plain script, prints a table).

A decision is one iteration of a run: policy call, simulated answer, ProbitGP refit (Laplace,
warm-started) and the reported solution argmax mu_c (see visiontune/bench/sweep.py).
Measured two ways:

- serial: ``run_one`` in this process, per (scenario, rule) on each function; decisions/s of one core;
- parallel: ``run_sweep(jobs=N)`` with joblib on a fresh store; decisions/s of the sweep divided by N
  (includes worker start-up and store commits).

Run: OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/bench_sweep.py [--iterations 30] [--seeds 2] [--jobs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from visiontune.bench.experiments import Experiment
from visiontune.bench.store import ResultsStore
from visiontune.bench.sweep import RunSpec, run_one, run_sweep

CASES = (
    ("binary", "UCB_Phi"),
    ("binary", "TS"),
    ("binary", "random"),
    ("contextual-binary", "UCB-ALD"),
    ("contextual-binary", "TS-ALD"),
    ("contextual-binary", "cBKG"),
)
FUNCTIONS = ("forrester", "six_hump_camel", "hartmann3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    run_one(RunSpec("warm-up", "binary", "random", "forrester", 0, 3, 2))  # imports, caches
    print(f"serial, {args.iterations} iterations x {args.seeds} seeds per cell (decisions/s, one core)")
    print(f"{'scenario':<18} {'rule':<10} " + " ".join(f"{f:>15}" for f in FUNCTIONS))
    for scenario, rule in CASES:
        cells = []
        for fname in FUNCTIONS:
            start = time.perf_counter()
            for seed in range(args.seeds):
                run_one(RunSpec("bench", scenario, rule, fname, seed, args.iterations, 5))
            cells.append(args.seeds * args.iterations / (time.perf_counter() - start))
        print(f"{scenario:<18} {rule:<10} " + " ".join(f"{c:15.1f}" for c in cells))

    exp = Experiment("bench-parallel", "contextual-binary", ("UCB-ALD", "TS-ALD", "random-contextual"),
                     ("forrester", "six_hump_camel"), n_seeds=2 * args.seeds, iterations=args.iterations,
                     n_initial=5, source="benchmark")
    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "b.sqlite") as store:
        summary = run_sweep(exp, store, jobs=args.jobs, progress=False)
    print(f"parallel sweep, jobs={args.jobs}: {summary.ran} runs, {summary.decisions} decisions in {summary.seconds:.1f} s "
          f"-> {summary.decisions / summary.seconds / args.jobs:.1f} decisions/s per core "
          f"({summary.decisions / summary.cpu_seconds:.1f} per second of run time)")


if __name__ == "__main__":
    main()
