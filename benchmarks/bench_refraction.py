"""Benchmark: median time per decision of UCB-ALD and TS-ALD at n = 260 answers (plain script).

A decision = the policy's query (x-rule at the reference letter size, then BALD over s) from
the probit GP fitted to n answers of a simulated patient (002 §5, slope 5, 26 letters, shipped
hyperparameters), plus the refit on the new answer (warm-started Laplace) and the estimate
``argmax_x μ_c(s0, x)``: one trial of :func:`visiontune.bench.refraction.run_refraction`.
The n answers come from a UCB-ALD run (``run_refraction(..., trials=n)``), so the data look
like those of a real run.

Run: OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/bench_refraction.py [--n 260] [--repeats 15]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from visiontune.acquisition import registry  # noqa: E402
from visiontune.acquisition.policy import Data, solution  # noqa: E402
from visiontune.bench.refraction import refraction_problem, run_refraction  # noqa: E402
from visiontune.gp import ProbitGP  # noqa: E402


def time_decisions(policy_name: str, run, repeats: int) -> list[float]:
    problem = refraction_problem(run.reference_context)
    X = np.array([[r.s, *r.x] for r in run.records])
    y = np.array([float(r.correct) for r in run.records])
    kernel = run.hyperparameters.kernel()
    model = ProbitGP(kernel, X[:-1], y[:-1])
    policy = registry.make(policy_name)
    times = []
    for i in range(repeats + 1):
        rng = np.random.default_rng(i)
        t0 = time.perf_counter()
        query = policy(model, problem, Data(X[:-1], y[:-1]), rng)
        refit = ProbitGP(kernel, X, y, warm_start=model.warm_start_state)
        solution(refit, problem, rng)
        if i:  # the first is a warm-up
            times.append(time.perf_counter() - t0)
        assert query.s is not None
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=260)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    run = run_refraction("UCB-ALD", slope=5.0, trials=args.n, seed=0)
    for name in ("UCB-ALD", "TS-ALD"):
        t = np.array(time_decisions(name, run, args.repeats))
        print(f"{name}: n = {args.n}, median {1e3 * np.median(t):.0f} ms per decision "
              f"(min {1e3 * t.min():.0f}, max {1e3 * t.max():.0f}, {len(t)} repeats)")  # fmt: skip


if __name__ == "__main__":
    main()
