"""Benchmark: approximate posterior sampling for Thompson sampling (plain script, prints medians).

Model: ``ProbitGP`` (Laplace) with the refraction kernel ``θ s s' + k_SE((S, C), (S', C'))``
(Fauvel & Chalk (contextual BO), Eq. 15) on n = 260 simulated letter-task answers (benchmarks/bench_gp.py), box
``s ∈ [-1, 2]`` logMAR, ``(S, C) ∈ [-4, 4]²`` D; 4096 Hilbert-space features (Fauvel & Chalk (binary/preferential BO),
supp. D). Timed steps: building the feature map (first time, then from the cache); drawing one sample
path (decoupled update, contextual BO supp. G Eq. S43); evaluating it at 128 candidates, formed
features ``φ(X) w`` versus the separable contraction; value + gradient at 4 L-BFGS points;
one sample maximisation (``ThompsonX``); one TS-ALD decision (target: <= 80 ms).

Run: OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/bench_sampling.py [--repeats 20]
[--keep-heap]. Prints the wall-time median and minimum, the median CPU time, and the load
average (a shared machine: compare minima and CPU times across runs).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from bench_gp import _median_ms, keep_heap, load_average, simulate_refraction

from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import Data, Problem, ThompsonX
from visiontune.reproduction.gp import sampling
from visiontune.reproduction.gp.kernels import refraction_kernel
from visiontune.reproduction.gp.model import ProbitGP
from visiontune.reproduction.gp.sampling import prior_features, sample_posterior_functions

PROBLEM = Problem(box=[[-4.0, 4.0], [-4.0, 4.0]], context_box=[[-1.0, 2.0]], reference_context=[0.0])
BOX = np.array([[-1.0, 2.0], [-4.0, 4.0], [-4.0, 4.0]])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--n", type=int, default=260)
    parser.add_argument("--n-basis", type=int, default=4096)
    parser.add_argument("--keep-heap", action="store_true", help="glibc: keep freed memory (bench_gp.py docstring)")
    args = parser.parse_args(argv)
    if args.keep_heap:
        print(f"keep-heap: {'on' if keep_heap() else 'not available'}")
    print(f"load average {load_average()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    rng = np.random.default_rng(0)
    X, y = simulate_refraction(args.n, rng)
    kernel = refraction_kernel(1.0, [1.5, 1.5], 4.0)
    model = ProbitGP(kernel, X, y)
    nb, reps = args.n_basis, args.repeats
    print(f"n = {args.n} answers, {nb} features, {reps} repeats; wall median (min, cpu median) in ms")

    def cold_features():
        sampling._HILBERT_CACHE.clear()
        prior_features(kernel, BOX, nb, rng=np.random.default_rng(1))

    print(f"feature map, built          {_median_ms(cold_features, reps):8.2f}")
    cached_ms = _median_ms(lambda: prior_features(kernel, BOX, nb, rng=np.random.default_rng(1)), reps)
    print(f"feature map, from the cache {cached_ms:8.2f}")
    draw_ms = _median_ms(lambda: sample_posterior_functions(model, BOX, 1, np.random.default_rng(2), nb), reps)
    print(f"draw one sample path        {draw_ms:8.2f}")

    f = sample_posterior_functions(model, BOX, 1, np.random.default_rng(3), nb)
    cand = np.column_stack([np.zeros(128), np.random.default_rng(4).uniform(-4, 4, (128, 2))])
    starts = cand[:4]
    fm = f.features
    w = f.weights
    print(f"prior path at 128 points: formed features phi(X) w {_median_ms(lambda: fm.values(cand) @ w, reps):8.2f}")
    print(
        f"prior path at 128 points: separable contraction   {_median_ms(lambda: f._prior_path.values(cand), reps):8.2f}"
    )
    print(f"sample value at 128 candidates                    {_median_ms(lambda: f(cand), reps):8.2f}")
    grad_ms = _median_ms(lambda: (f(starts), f.grad(starts)), reps)
    print(f"sample value + gradient at 4 points               {grad_ms:8.2f}")
    ts = ThompsonX(n_basis=nb)
    seeds = iter(range(10**6))
    print(
        f"ThompsonX.choose_x (draw + maximise)              "
        f"{_median_ms(lambda: ts.choose_x(model, PROBLEM, np.random.default_rng(next(seeds))), reps):8.2f}"
    )
    policy, data = registry.make("TS-ALD", n_initial=0), Data(X, y)
    print(
        f"TS-ALD decision (target <= 80 ms)                 "
        f"{_median_ms(lambda: policy(model, PROBLEM, data, np.random.default_rng(next(seeds))), reps):8.2f}"
    )
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
