"""Speed of one policy decision at n = 260 (targets: UCB-ALD <= 50 ms, TS-ALD <= 80, MUC <= 50).

Run: ``python benchmarks/bench_acquisition.py [--repeats 15] [--n 260]``; prints the median and
the quartiles of the wall time (and the median CPU time) of one decision per policy;
``--plain`` also times MUC and MUC-ALD without PreferenceGP's fast paths.
Preferential policies (MUC, MUC-ALD, KSS, ...) get a ``PreferenceGP`` on ``n`` duels between
random lenses answered by the same patient (``P = Phi(f(s, x1) - f(s, x2))``, Fauvel & Chalk (contextual BO), Eq. 11).
Binary ones: ``ProbitGP`` (Laplace)
with the refraction kernel ``theta s s' + k_SE((S, C), (S', C'))`` (Fauvel & Chalk (contextual BO), Eq. 15) on ``n``
simulated answers of a letter task (26 letters, slope 5 logMAR^-1,
``VA = log10(1 + blur^2)``, docs/design.md), lens box ``[-4, 4]^2`` D, letter sizes ``[-1, 2]`` logMAR.
Small BLAS matrices are slower with several threads on a busy machine: compare with
``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import ndtr

from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.preferential import MUC
from visiontune.reproduction.gp.kernels import SquaredExponential, refraction_kernel
from visiontune.reproduction.gp.model import PreferenceGP, ProbitGP

PROBLEM = Problem(box=[[-4.0, 4.0], [-4.0, 4.0]], context_box=[[-1.0, 2.0]], reference_context=[0.0])
PREFERENTIAL = {
    "preferential": Problem(box=[[-4.0, 4.0], [-4.0, 4.0]], scenario="preferential"),
    "contextual-preferential": Problem(
        box=[[-4.0, 4.0], [-4.0, 4.0]],
        context_box=[[-1.0, 2.0]],
        reference_context=[0.0],
        scenario="contextual-preferential",
    ),
}


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


def latent(s, lens, best=(1.5, -1.0), slope=5.0):
    """``a (s - VA(x))`` of the simulated patient (the acuity model of docs/design.md)."""
    dS, dC = lens[:, 0] - best[0], lens[:, 1] - best[1]
    return slope * (s - np.log10(1 + 0.5 * (dS**2 + (dS + dC) ** 2)))


def simulated_duels(n: int, rng: np.random.Generator, contextual: bool):
    """``n`` duels ``[(s,) x1, (s,) x2]`` between random lenses and the patient's preferences."""
    s = rng.uniform(-1, 2, n) if contextual else np.zeros(n)
    x1, x2 = rng.uniform(-4, 4, (n, 2)), rng.uniform(-4, 4, (n, 2))
    y = (rng.random(n) < ndtr(latent(s, x1) - latent(s, x2))).astype(float)
    if contextual:
        return np.column_stack([s, x1, s, x2]), y
    return np.column_stack([x1, x2]), y


def preference_model(n: int, rng: np.random.Generator, contextual: bool):
    duels, y = simulated_duels(n, rng, contextual)
    base = refraction_kernel(1.0, [1.5, 1.5], 4.0) if contextual else SquaredExponential([1.5, 1.5], 4.0)
    return PreferenceGP(base, duels, y), Data(duels, y)


class PlainPreferencePath:
    """A PreferenceGP seen through the methods MUC used before its fast paths: duel predictions on the
    4-term preference kernel, the champion from ``predict_value_with_grad`` (``--plain``)."""

    def __init__(self, model):
        self._model = model

    def predict(self, duels):
        return self._model._gp.predict(duels)

    def predict_with_grad(self, duels):
        return self._model._gp.predict_with_grad(duels)

    def predict_value(self, X):
        return self._model.predict_value(X)

    def predict_value_with_grad(self, X):
        return self._model.predict_value_with_grad(X)


def _time(policy, fitted, problem, data, repeats):
    wall, cpu = [], []
    for k in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        policy(fitted, problem, data, np.random.default_rng(k))
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    q1, med, q3 = np.percentile(np.array(wall) * 1e3, [25, 50, 75])
    return f"wall {med:8.1f} ms  [{q1:.1f}, {q3:.1f}]   cpu {np.median(cpu) * 1e3:8.1f} ms"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=260)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--policies",
        nargs="*",
        default=["UCB-ALD", "TS-ALD", "BALD", "UCB-random-context", "cBKG", "MUC", "KSS", "MUC-ALD", "KSS-ALD"],
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="also time MUC / MUC-ALD without PreferenceGP's fast paths, as before they existed",
    )
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X, y = simulated_answers(args.n, rng)
    model = ProbitGP(refraction_kernel(1.0, [1.5, 1.5], 4.0), X, y)
    data = Data(X, y)
    print(f"n = {args.n} answers, {args.repeats} repeats; median [q1, q3] of one decision")
    preference_models = {}
    for name in args.policies:
        policy = registry.make(name, n_initial=0)
        scenario = registry.get(name).scenario
        problem, fitted, fitted_data = PROBLEM, model, data
        if scenario in PREFERENTIAL:
            if scenario not in preference_models:  # own seed: the same data whatever the policy order
                contextual = scenario.startswith("contextual")
                preference_models[scenario] = preference_model(
                    args.n, np.random.default_rng(1 + contextual), contextual
                )
            problem, (fitted, fitted_data) = PREFERENTIAL[scenario], preference_models[scenario]
        print(f"{name:<20} {_time(policy, fitted, problem, fitted_data, args.repeats)}")
        if args.plain and isinstance(policy, MUC):  # KSS samples need the model itself
            plain = PlainPreferencePath(fitted)
            print(f"{name + ' (plain)':<20} {_time(policy, plain, problem, fitted_data, args.repeats)}")


if __name__ == "__main__":
    main()
