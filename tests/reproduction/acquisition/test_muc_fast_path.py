"""MUC / MUC-ALD on PreferenceGP's fast paths (MUC within 50 ms) choose the duel of the plain path.

Oracle: the same policy on a wrapper that hides ``challenge`` and ``predict_value_mean*`` and
routes duel predictions to the 4-term preference kernel (``ProbitGP(Preference(k))``), i.e. the
computation without the fast paths; and a dense grid of the challenger's epistemic variance (Fauvel & Chalk
(binary/preferential BO), Eq. 9).
"""

import numpy as np
import pytest

from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.preferential import MUC, _challenge_moments
from visiontune.reproduction.gp import moments
from visiontune.reproduction.gp.kernels import SquaredExponential, contextual_benchmark_kernel
from visiontune.reproduction.gp.model import PreferenceGP

PREFERENTIAL = Problem(box=[[-4.0, 4.0], [-4.0, 4.0]], scenario="preferential")
# Context kernel s s' k(x, x') (Fauvel & Chalk (contextual BO), §4): with the refraction kernel theta s s' + k(x, x')
# the context term cancels in g((s, x), (s, x2)), BALD over s is flat and s is decided by round-off.
CONTEXTUAL = Problem(
    box=[[-4.0, 4.0], [-4.0, 4.0]],
    context_box=[[0.0, 1.0]],
    reference_context=[0.5],
    scenario="contextual-preferential",
)


class PlainPath:
    """A PreferenceGP seen through the methods MUC used before the fast paths."""

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


def _model(contextual, n=60, seed=0):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(-4, 4, (n, 2)), rng.uniform(-4, 4, (n, 2))

    def utility(x):
        return -np.log10(1 + 0.5 * ((x[:, 0] - 1.5) ** 2 + (x[:, 0] + x[:, 1] - 0.5) ** 2))

    y = (rng.random(n) < 1 / (1 + np.exp(-5 * (utility(x1) - utility(x2))))).astype(float)
    if contextual:
        s = rng.uniform(0, 1, (n, 1))
        duels, base = np.hstack([s, x1, s, x2]), contextual_benchmark_kernel(SquaredExponential, [1.5, 1.5], 4.0, 2)
    else:
        duels, base = np.hstack([x1, x2]), SquaredExponential([1.5, 1.5], 4.0)
    return PreferenceGP(base, duels, y), Data(duels, y)


@pytest.mark.parametrize("problem", [PREFERENTIAL, CONTEXTUAL], ids=["MUC", "MUC-ALD"])
def test_fast_and_plain_paths_choose_the_same_duel(problem):
    model, data = _model(problem.c > 0)
    for seed in range(3):
        fast = MUC(n_initial=0)(model, problem, data, np.random.default_rng(seed))
        plain = MUC(n_initial=0)(PlainPath(model), problem, data, np.random.default_rng(seed))
        assert np.allclose(fast.x, plain.x, atol=1e-6) and np.allclose(fast.x2, plain.x2, atol=1e-6)
        if problem.c:
            assert np.allclose(fast.s, plain.s, atol=1e-6)


def test_fast_challenger_is_within_one_percent_of_the_dense_grid_max():
    model, data = _model(False)
    q = MUC(n_initial=0)(model, PREFERENTIAL, data, np.random.default_rng(1))
    g = np.linspace(-4, 4, 201)
    grid = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    predict, _ = _challenge_moments(model, PREFERENTIAL, q.x)
    v_grid = moments.epistemic_variance(*predict(grid))
    v_q = moments.epistemic_variance(*predict(q.x2[None, :]))[0]
    assert v_q >= 0.99 * v_grid.max()
    mu_grid = model.predict_value(grid)[0]
    assert model.predict_value(q.x[None, :])[0][0] >= mu_grid.max() - 0.01 * np.ptp(mu_grid)
