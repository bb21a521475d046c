"""The sweep's warm-started reported solution: as good as a dense grid (the oracle) and as the
policies' full 512-candidate search, for binary and preferential models."""

from __future__ import annotations

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition.binary_policies import Problem
from visiontune.reproduction.acquisition.solution import solution
from visiontune.reproduction.gp import PreferenceGP, ProbitGP
from visiontune.reproduction.gp import kernels as K
from visiontune.reproduction.tracking import SolutionTracker, solution_objective, warm_maximize


def test_warm_maximize_finds_the_grid_maximum_of_a_smooth_function():
    def fn(X):
        v = np.sin(5 * X[:, 0]) * np.cos(3 * X[:, 1]) - (X[:, 0] - 0.3) ** 2
        g = np.column_stack(
            [
                5 * np.cos(5 * X[:, 0]) * np.cos(3 * X[:, 1]) - 2 * (X[:, 0] - 0.3),
                -3 * np.sin(5 * X[:, 0]) * np.sin(3 * X[:, 1]),
            ]
        )
        return v, g

    box = np.array([[0.0, 1.0], [0.0, 1.0]])
    g = np.linspace(0, 1, 801)
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    grid_max = fn(G)[0].max()
    x, v = warm_maximize(fn, box, np.random.default_rng(0), n_candidates=64)
    assert v == pytest.approx(fn(x[None])[0][0]) and v >= grid_max - 1e-6
    # warm start: from a point in the basin of the maximum, 1 candidate is enough
    x2, v2 = warm_maximize(fn, box, np.random.default_rng(1), previous=x + 0.02, n_candidates=1)
    assert v2 >= grid_max - 1e-6


def test_bad_arguments_are_named():
    def fn(X):
        return (X[:, 0], np.ones_like(X))

    with pytest.raises(InvalidInputError, match="n_candidates"):
        warm_maximize(fn, [[0, 1]], np.random.default_rng(0), n_candidates=0)
    with pytest.raises(InvalidInputError, match="previous"):
        warm_maximize(fn, [[0, 1]], np.random.default_rng(0), previous=[0.1, 0.2])


def _binary_models(contextual: bool, n=12, seed=0):
    rng = np.random.default_rng(seed)
    if contextual:
        kernel = K.contextual_benchmark_kernel(K.SquaredExponential, [0.15], 1.0, 1)
        problem = Problem([[0.0, 1.0]], context_box=[[0.0, 1.0]], reference_context=[0.5], scenario="contextual-binary")
        X = rng.random((n, 2))
    else:
        kernel = K.Matern52([0.15], 1.0)
        problem = Problem([[0.0, 1.0]], scenario="binary")
        X = rng.random((n, 1))
    y = (rng.random(n) < 0.5 + 0.4 * np.sin(6 * X[:, -1])).astype(float)
    return problem, [ProbitGP(kernel, X[:k], y[:k]) for k in range(3, n + 1)]


@pytest.mark.parametrize("contextual", [False, True])
def test_tracked_solution_matches_the_grid_and_the_full_search_binary(contextual):
    problem, models = _binary_models(contextual)
    tracker = SolutionTracker(problem, np.random.default_rng(5))
    grid = np.linspace(0, 1, 4001)[:, None]
    for model in models:
        fn = solution_objective(model, problem)
        x = tracker(model)
        best = fn(x[None])[0][0]
        assert best >= fn(grid)[0].max() - 1e-6  # oracle: dense grid of mu_c(s0, x)
        full = solution(model, problem, np.random.default_rng(0))
        assert best >= fn(full[None])[0][0] - 1e-6
        assert np.array_equal(tracker.previous, x)


def test_tracked_solution_of_a_preference_model_is_the_argmax_of_the_utility_mean():
    rng = np.random.default_rng(2)
    X = rng.random((15, 2))

    def util(u):
        return -((u - 0.6) ** 2)

    y = (util(X[:, 0]) > util(X[:, 1])).astype(float)
    model = PreferenceGP(K.SquaredExponential([0.2], 1.0), X, y)
    problem = Problem([[0.0, 1.0]], scenario="preferential")
    x = SolutionTracker(problem, np.random.default_rng(0))(model)
    grid = np.linspace(0, 1, 4001)[:, None]
    mu = model.predict_value(grid)[0]
    assert model.predict_value(x[None])[0][0] >= mu.max() - 1e-6
    assert abs(x[0] - grid[np.argmax(mu), 0]) < 0.01
