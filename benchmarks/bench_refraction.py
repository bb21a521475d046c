"""Benchmark: the cost of the refraction simulation (Fauvel & Chalk (contextual BO) §5), per session and per decision.

**Per session**: ``run_refraction(rule, slope=5, trials=260, seed)`` for each rule of
``--rules`` (default UCB-ALD and TS-ALD) and each seed of ``--seeds``; prints the median CPU time
(``time.process_time``, this process, one BLAS thread) and wall time per session, and the
extrapolated wall time of the paper's Table 3 experiment: 960 sessions (6 rules x 8 slopes x 20
repetitions) of 260 trials on ``--cores`` (2) processes,

    T_960 = 960 x median_CPU / cores        (ideal: each process has a core to itself)
    T_960_wall = 960 x median_wall / cores  (as contended as this measurement was)

with the median over every timed session (the random-context and random rules cost less than the
ALD rules, so the extrapolation is an upper bound for them; joint BALD optimises a 3-D
acquisition and costs about as much as UCB-ALD).

**Per decision** (``--decisions``): one trial at n answers (policy query, warm-started refit,
estimate by :func:`visiontune.reproduction.acquisition.solution.solution`), median over repeats, as before.

Run: OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/bench_refraction.py [--seeds 0,1,2]
     [--rules UCB-ALD,TS-ALD] [--trials 260] [--decisions]
"""

from __future__ import annotations

import os

# One BLAS thread, set before numpy loads: hence the imports below this loop (E402).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from visiontune.reproduction.acquisition import registry  # noqa: E402
from visiontune.reproduction.acquisition.binary_policies import Data  # noqa: E402
from visiontune.reproduction.acquisition.solution import solution  # noqa: E402
from visiontune.reproduction.gp import ProbitGP  # noqa: E402
from visiontune.reproduction.gp_refraction_run import refraction_problem, run_refraction  # noqa: E402

#: Sessions of the paper's refraction experiment (Fauvel & Chalk (contextual BO), Table 3): 6 rules x 8 slopes
#: x 20 repetitions.
PAPER_SESSIONS = 6 * 8 * 20


def time_session(rule: str, seed: int, trials: int, slope: float = 5.0) -> tuple[float, float, float]:
    """``(cpu_seconds, wall_seconds, final_va_logmar)`` of one simulated session."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    run = run_refraction(rule, slope=slope, trials=trials, seed=seed)
    return time.process_time() - cpu0, time.perf_counter() - wall0, run.final_va_logmar


def time_decisions(policy_name: str, run, repeats: int) -> list[float]:
    """Wall seconds of ``repeats`` decisions (query + refit + full estimate) at n = len(run.records) - 1."""
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="UCB-ALD,TS-ALD", help="comma-separated refraction policies")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (one session each)")
    parser.add_argument("--trials", type=int, default=260)
    parser.add_argument("--cores", type=int, default=2, help="processes of the extrapolated experiment")
    parser.add_argument("--decisions", action="store_true", help="also time single decisions at n = --trials")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    every_cpu, every_wall = [], []
    for rule in rules:
        rows = [time_session(rule, seed, args.trials) for seed in seeds]
        cpu, wall, va = (np.array(col) for col in zip(*rows))
        every_cpu += cpu.tolist()
        every_wall += wall.tolist()
        print(
            f"{rule}: {args.trials} trials, slope 5, seeds {args.seeds}: median {np.median(cpu):.2f} s CPU, "
            f"{np.median(wall):.2f} s wall per session (CPU min {cpu.min():.2f}, max {cpu.max():.2f}); "
            f"final VA {', '.join(f'{v:.3f}' for v in va)} logMAR",
            flush=True,
        )
    cpu_med, wall_med = float(np.median(every_cpu)), float(np.median(every_wall))
    print(
        f"Table 3 experiment ({PAPER_SESSIONS} sessions x {args.trials} trials, {args.cores} processes), "
        f"extrapolated from the median session: {PAPER_SESSIONS * cpu_med / args.cores / 60:.1f} min "
        f"(CPU-bound, one core per process); {PAPER_SESSIONS * wall_med / args.cores / 60:.1f} min "
        f"(at this measurement's wall/CPU ratio {wall_med / cpu_med:.2f})"
    )
    if args.decisions:
        run = run_refraction("UCB-ALD", slope=5.0, trials=args.trials, seed=0)
        for name in ("UCB-ALD", "TS-ALD"):
            t = np.array(time_decisions(name, run, args.repeats))
            print(
                f"{name}: n = {args.trials}, median {1e3 * np.median(t):.0f} ms per decision "
                f"(min {1e3 * t.min():.0f}, max {1e3 * t.max():.0f}, {len(t)} repeats)"
            )


if __name__ == "__main__":
    main()
