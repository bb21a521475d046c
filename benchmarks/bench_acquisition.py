"""Speed of one policy decision on the refraction problem (target: UCB-ALD <= 50 ms at n = 260).

Run: ``python benchmarks/bench_acquisition.py [--repeats 15] [--n 260]``; prints the median and
the quartiles of the wall time (and the median CPU time) of one decision per policy. The model: ``ProbitGP`` (Laplace)
with the refraction kernel ``theta s s' + k_SE((S, C), (S', C'))`` (002 Eq. 15) on ``n``
simulated answers of a letter task (26 letters, slope 5 logMAR^-1,
``VA = log10(1 + blur^2)``, DESIGN.md), lens box ``[-4, 4]^2`` D, letter sizes ``[-1, 2]`` logMAR.
Small BLAS matrices are slower with several threads on a busy machine: compare with
``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import ndtr

from visiontune.acquisition import registry
from visiontune.acquisition.policy import Data, Problem
from visiontune.gp.kernels import refraction_kernel
from visiontune.gp.model import ProbitGP

PROBLEM = Problem(box=[[-4.0, 4.0], [-4.0, 4.0]], context_box=[[-1.0, 2.0]], reference_context=[0.0])


def simulated_answers(n: int, rng: np.random.Generator, best=(1.5, -1.0), slope=5.0, n_letters=26):
    """``n`` random (s, S, C) trials and answers of a patient whose best correction is ``best``."""
    s = rng.uniform(-1, 2, n)
    lens = rng.uniform(-4, 4, (n, 2))
    dS, dC = lens[:, 0] - best[0], lens[:, 1] - best[1]
    blur = np.sqrt(0.5 * (dS**2 + (dS + dC) ** 2))
    va = np.log10(1 + blur**2)
    gamma = 1.0 / n_letters
    p = gamma + (1 - gamma) * ndtr(slope * (s - va))
    return np.column_stack([s, lens]), (rng.random(n) < p).astype(float)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=260)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--policies", nargs="*", default=["UCB-ALD", "TS-ALD", "BALD", "UCB-random-context"])
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X, y = simulated_answers(args.n, rng)
    model = ProbitGP(refraction_kernel(1.0, [1.5, 1.5], 4.0), X, y)
    data = Data(X, y)
    print(f"n = {args.n} answers, {args.repeats} repeats; median [q1, q3] of one decision")
    for name in args.policies:
        policy = registry.make(name, n_initial=0)
        wall, cpu = [], []
        for k in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            policy(model, PROBLEM, data, np.random.default_rng(k))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        q1, med, q3 = np.percentile(np.array(wall) * 1e3, [25, 50, 75])
        print(f"{name:<20} wall {med:8.1f} ms  [{q1:.1f}, {q3:.1f}]   cpu {np.median(cpu) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
