"""Contextual binary knowledge gradient (cBKG, seed 002 §3.2, Eq. 6-7; supp. C), discretised.

``KG(s, x) = sum_{c in {0,1}} p(c | s, x, D) mu*_{D + (s, x, c)} - mu*_D`` with
``mu*_D = max_{x'} E[f(s0, x') | D]`` the maximum of the latent posterior mean at the reference
context (002 Eq. 6) and ``p(c = 1 | s, x, D) = mu_c(s, x)`` (000 Eq. 3). Each look-ahead
posterior is a real refit of the model (Laplace or EP, warm-started from the current one).

Simplifications (say so when comparing with 002 table 1): the inner maximum is taken over a
finite reference set of ``x'`` (scrambled Sobol points plus the current solution), and the
outer maximum over a Sobol candidate set of ``(s, x)``, without the analytic gradient of
002 supp. B. Cost: two refits per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import points
from visiontune.acquisition import functions as F
from visiontune.acquisition.optimize import sobol_points
from visiontune.acquisition.policy import (
    Data,
    Problem,
    Query,
    _check_n_initial,
    _check_rng,
    _n_data,
    _random_query,
    solution,
)
from visiontune.errors import ConfigurationError

__all__ = ["CBKG", "knowledge_gradient"]


def _refit(model, z: np.ndarray, c: float):
    cls = type(model)
    X = np.vstack([model.X.reshape(-1, z.size), z[None, :]])
    return cls(model.kernel, X, np.append(model.y, c), inference=model.inference, warm_start=model.warm_start_state)


def knowledge_gradient(model, problem: Problem, Z, reference) -> np.ndarray:
    """``KG (m,)`` at model inputs ``Z (m, c + d)`` (002 Eq. 7), inner max over ``reference (k, d)``.

    ``model``: a fitted ``ProbitGP`` on inputs ``(s, x)``; the posterior mean is taken at
    ``problem.reference_context`` (none for a binary problem).
    """
    Z = points("Z", Z, dim=problem.c + problem.d)
    R = points("reference", reference, dim=problem.d)
    if problem.c:
        R = np.column_stack([np.broadcast_to(problem.reference_context, (len(R), problem.c)), R])
    best_now = float(np.max(model.predict(R)[0]))
    p1 = F.mean_probability(model, Z, grad=False)
    kg = np.empty(len(Z))
    for i, z in enumerate(Z):
        best = [float(np.max(_refit(model, z, c).predict(R)[0])) for c in (0.0, 1.0)]
        kg[i] = (1.0 - p1[i]) * best[0] + p1[i] * best[1] - best_now
    return kg


@dataclass(frozen=True, kw_only=True)
class CBKG:
    """Query ``(s, x) = argmax KG`` over ``n_candidates`` Sobol points of the input box
    (002 §3.2, discretised: see module docstring)."""

    n_initial: int = 0
    n_candidates: int = 64
    n_reference: int = 128

    def __post_init__(self):
        _check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = _check_rng(rng)
        if problem.scenario not in ("binary", "contextual-binary"):
            raise ConfigurationError(f"cBKG: serves binary problems, got {problem.scenario!r}")
        if _n_data(data) < self.n_initial:
            return _random_query(problem, rng)
        reference = np.vstack([sobol_points(problem.box, self.n_reference, rng), solution(model, problem, rng)])
        Z = sobol_points(problem.input_box, self.n_candidates, rng)
        z = Z[int(np.argmax(knowledge_gradient(model, problem, Z, reference)))]
        return Query(x=z[problem.c :], s=z[: problem.c] if problem.c else None)
