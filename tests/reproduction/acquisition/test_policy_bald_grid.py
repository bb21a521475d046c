"""BALD over one letter-size dimension by a vectorised grid: as good as a dense grid and
as the multistart L-BFGS-B search it replaces, cheaper, and free of random draws."""

import numpy as np
import pytest
from acq_helpers import probit_model

from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.binary_policies import BALD, OptimiserSettings, Problem
from visiontune.reproduction.gp_refraction_run import refraction_problem, run_refraction

CTX = Problem(box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5])


class CountingModel:
    """Wraps a model; counts the calls of ``predict`` and ``predict_with_grad``."""

    def __init__(self, model):
        self.model, self.calls = model, []
        self.X = model.X

    def predict(self, X):
        self.calls.append(("predict", len(X)))
        return self.model.predict(X)

    def predict_with_grad(self, X):
        self.calls.append(("grad", len(X)))
        return self.model.predict_with_grad(X)


@pytest.mark.parametrize("seed, x", [(1, 0.3), (2, -1.4), (7, 1.1)])
def test_grid_choice_is_the_dense_grid_maximum(seed, x):
    model = probit_model(1, n=25, seed=seed, context=True)
    s = BALD().choose_context(model, CTX, np.array([x]), np.random.default_rng(0))
    s_grid = np.linspace(0.0, 1.0, 20001)
    info = F.bald(model, np.column_stack([s_grid, np.full_like(s_grid, x)]), grad=False)
    assert F.bald(model, [[s[0], x]], grad=False)[0] >= info.max() - 1e-7


def test_grid_and_lbfgs_searches_agree_on_a_refraction_model():
    """On the final model of a 40-trial UCB-ALD refraction run, the grid's BALD value is at least
    the L-BFGS-B search's (the previous default) and the dense grid's, to 1e-6."""
    run = run_refraction("UCB-ALD", slope=5.0, trials=40, seed=3)
    model, problem = run.final_model, refraction_problem()
    for x in ([0.0, 0.0], list(run.records[-1].x), [3.5, -3.5]):
        x = np.array(x)
        grid = BALD().choose_context(model, problem, x, np.random.default_rng(0))
        lbfgs = BALD(grid_size=0).choose_context(model, problem, x, np.random.default_rng(0))

        def value(s):
            return F.bald(model, [[s[0], *x]], grad=False)[0]

        dense = np.linspace(-1.0, 2.0, 6001)
        best = F.bald(model, np.column_stack([dense, np.tile(x, (len(dense), 1))]), grad=False).max()
        assert value(grid) >= value(lbfgs) - 1e-6
        assert value(grid) >= best - 1e-6


def test_grid_search_costs_three_value_calls_and_no_random_draw():
    counting = CountingModel(probit_model(1, n=30, seed=4, context=True))
    rng = np.random.default_rng(11)
    state = rng.bit_generator.state
    BALD().choose_context(counting, CTX, np.array([0.2]), rng)
    assert [c[0] for c in counting.calls] == ["predict"] * 3
    assert rng.bit_generator.state == state
    counting.calls.clear()
    BALD(grid_size=0).choose_context(counting, CTX, np.array([0.2]), rng)
    assert any(c[0] == "grad" for c in counting.calls) and len(counting.calls) > 3


def test_two_context_dimensions_use_the_optimiser():
    problem = Problem(box=[[-2.0, 2.0]], context_box=[[0.0, 1.0], [0.0, 1.0]], reference_context=[0.5, 0.5])

    class TwoContext:
        X = np.zeros((0, 3))

        def predict(self, X):
            X = np.atleast_2d(X)
            return X[:, 0] - X[:, 1], 0.1 + X[:, 0] * (1 - X[:, 0]) + X[:, 1] ** 2

        def predict_with_grad(self, X):
            X = np.atleast_2d(X)
            mu, var = self.predict(X)
            dmu = np.column_stack([np.ones(len(X)), -np.ones(len(X)), np.zeros(len(X))])
            dvar = np.column_stack([1 - 2 * X[:, 0], 2 * X[:, 1], np.zeros(len(X))])
            return mu, var, dmu, dvar

    s = BALD(optimiser=OptimiserSettings(64, 3)).choose_context(
        TwoContext(), problem, np.array([0.0]), np.random.default_rng(0)
    )
    assert s.shape == (2,) and np.all((0 <= s) & (s <= 1))


@pytest.mark.parametrize("bad", [1, 2, -1, 2.5, True])
def test_bad_grid_size_names_the_argument(bad):
    with pytest.raises(InvalidInputError, match="grid_size"):
        BALD(grid_size=bad)
