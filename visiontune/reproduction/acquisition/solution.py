"""The reported best point of a problem, whatever its scenario: ``argmax_x mu_c(s0, x)`` for
binary answers, ``argmax_x mu_f(s0, x)`` of the utility for preferences. Above both
:mod:`visiontune.reproduction.acquisition.binary_policies` (binary rules) and
:mod:`visiontune.reproduction.acquisition.preferential`, which it chooses between.
"""

from __future__ import annotations

import numpy as np

from visiontune._validate import check_rng
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.binary_policies import (
    OptimiserSettings,
    Problem,
    _at_reference,
)
from visiontune.reproduction.acquisition.preferential import preference_solution

__all__ = ["solution"]


def solution(
    model, problem: Problem, rng: np.random.Generator, *, optimiser: OptimiserSettings | None = None
) -> np.ndarray:
    """The reported best ``x (d,)``: ``argmax_x mu_c(s0, x)``, the predictive probability of success
    at the reference context (Fauvel & Chalk (binary/preferential BO) §3 "pure exploitation"; docs/design.md scores
    ``Phi(g(x_hat))`` at ``x_hat = argmax mu_c``). Preferential problems: ``argmax_x mu_f(x)`` of the utility.
    """
    if problem.scenario.endswith("preferential"):
        return preference_solution(model, problem, rng, optimiser=optimiser)
    optimiser = optimiser or OptimiserSettings()
    fn = _at_reference(lambda X: F.mean_probability(model, X), problem)
    values = _at_reference(lambda X: F.mean_probability(model, X, grad=False), problem)
    return optimiser.run(fn, problem.box, check_rng(rng), values_only=values)[0]
