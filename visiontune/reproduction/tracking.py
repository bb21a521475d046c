"""The reported solution of a benchmark run, tracked from one iteration to the next.

A sweep scores every iteration by the true value at the model's reported solution (docs/design.md,
"Stratified analysis"):

- binary scenarios: ``x̂ = argmax_x μ_c(s0, x)``, ``μ_c = Φ(μ_f / √(1 + σ_f²))`` (Fauvel & Chalk (binary/preferential
  BO), Eq. 3; the context ``s0`` only for contextual problems);
- preferential scenarios: ``x̂ = argmax_x μ_f(s0, x)``, the posterior mean of the utility
  (same paper §4.2, MUC's champion).

:func:`visiontune.reproduction.acquisition.solution.solution` searches afresh each time (512 Sobol candidates and
10 L-BFGS-B starts, the authors' acquisition optimiser). One answer moves the posterior mean
little, so the sweep instead warm-starts from the previous solution: ``n_candidates`` (64) fresh
scrambled Sobol candidates plus the previous solution; L-BFGS-B from the previous solution and
from the 3 best candidates; keep the best end point. The policies' own acquisition optimisation is
unchanged. The tracker draws its candidates from its own generator, so the answers and decisions
of a run do not depend on how the solution is searched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_int
from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.optimize import as_box, refine_in_box, sobol_points

__all__ = ["SolutionTracker", "solution_objective", "warm_maximize"]


def solution_objective(model, problem):
    """``fn(X (m, d)) -> (values (m,), grads (m, d))`` whose argmax is the reported solution:
    ``μ_c(s0, x)`` for binary problems, ``μ_f(s0, x)`` of the utility for preferential ones."""
    s0 = problem.reference_context
    if problem.scenario.endswith("preferential"):

        def fn(X):
            opts = X if problem.c == 0 else np.column_stack([np.broadcast_to(s0, (X.shape[0], problem.c)), X])
            mu, _, dmu, _ = model.predict_value_with_grad(opts)
            return mu, dmu[:, problem.c :]

        return fn

    def fn(X):
        return F.mean_probability(model, X)

    return fn if problem.c == 0 else F.at_context(fn, s0)


def warm_maximize(
    fn, box, rng: np.random.Generator, previous=None, *, n_candidates: int = 64, n_best: int = 3
) -> tuple[np.ndarray, float]:
    """Maximise ``fn`` over ``box (d, 2)`` from ``n_candidates`` Sobol points and ``previous (d,)``.

    L-BFGS-B (in unit-cube coordinates, one run on the sum over the starts) from ``previous`` (when
    given) and from the ``n_best`` best candidates; returns ``(x (d,), fn(x))`` of the best point seen.
    """
    box = as_box("box", box)
    check_int("n_candidates", n_candidates, lo=1, whole_float=True)
    check_int("n_best", n_best, lo=1, whole_float=True)
    X = sobol_points(box, int(n_candidates), rng)
    if previous is not None:
        prev = np.clip(np.asarray(previous, dtype=float).reshape(1, -1), box[:, 0], box[:, 1])
        if prev.shape[1] != box.shape[0]:
            raise InvalidInputError(f"previous: expected {box.shape[0]} coordinates, got {prev.shape[1]}")
        X = np.vstack([prev, X])
    values = np.where(np.isfinite(v := fn(X)[0]), v, -np.inf)
    order = np.argsort(-values, kind="stable")
    starts = list(dict.fromkeys(([0] if previous is not None else []) + order[:n_best].tolist()))
    return refine_in_box(
        fn,
        box,
        X[starts],
        incumbent=(X[order[0]].copy(), float(values[order[0]])),
        options={"ftol": 1e-10, "gtol": 1e-6},
    )


@dataclass
class SolutionTracker:
    """Reported solution of one run, warm-started from the previous iteration (module docstring).

    ``problem``: the run's :class:`~visiontune.reproduction.acquisition.binary_policies.Problem`; ``rng``: the
    tracker's own generator; ``n_candidates``: fresh Sobol candidates per iteration. Mutable by design (it holds
    the previous solution); one tracker per run.
    """

    problem: object
    rng: np.random.Generator
    n_candidates: int = 64
    previous: np.ndarray | None = None

    def __call__(self, model) -> np.ndarray:
        """The reported solution ``x̂ (d,)`` of ``model``."""
        x, _ = warm_maximize(
            solution_objective(model, self.problem),
            self.problem.box,
            self.rng,
            self.previous,
            n_candidates=self.n_candidates,
        )
        self.previous = x
        return x
