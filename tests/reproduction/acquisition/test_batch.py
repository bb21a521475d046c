"""Batch preferential rules (Fauvel & Chalk (binary/preferential BO), §4.3, table 3): batch MUC against a grid search on
a 1-D problem, its objective against an explicit pairwise sum, batch KSS members distinct, rankings as duels."""

import numpy as np
import pytest
from acq_helpers import fd_grad

from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.batch import (
    BatchKSS,
    BatchMUC,
    RandomBatch,
    batch_uncertainty,
)
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.solution import solution
from visiontune.reproduction.gp import moments
from visiontune.reproduction.gp.kernels import SquaredExponential
from visiontune.reproduction.gp.model import PreferenceGP

PROBLEM = Problem(box=[[-2.0, 2.0]], scenario="batch-preferential")


def utility(x):
    return np.sin(2 * x) - 0.3 * x**2


def _model(n_batches=6, m=3, seed=0):
    """A model fitted on ``n_batches`` rankings of ``m`` random options by a noisy patient."""
    rng = np.random.default_rng(seed)
    duels, ys = [], []
    for _ in range(n_batches):
        options = rng.uniform(-2, 2, (m, 1))
        noisy = utility(options[:, 0]) + 0.5 * rng.standard_normal(m)
        d, y = PreferenceGP.from_ranking(options[np.argsort(-noisy)])
        duels.append(d)
        ys.append(y)
    duels, y = np.vstack(duels), np.concatenate(ys)
    return PreferenceGP(SquaredExponential([0.7], 2.0), duels, y), Data(duels, y)


def _pairwise_sum(model, members):
    total = 0.0
    for i in range(len(members)):
        for j in range(i + 1, len(members)):
            mu, var = model.predict([[members[i], members[j]]])
            total += moments.epistemic_variance(mu, var)[0]
    return total


def test_from_ranking_gives_every_pair_with_the_better_option_first():
    duels, y = PreferenceGP.from_ranking([[3.0], [1.0], [2.0]])
    assert duels.tolist() == [[3.0, 1.0], [3.0, 2.0], [1.0, 2.0]] and y.tolist() == [1, 1, 1]


def test_batch_uncertainty_is_the_sum_over_all_pairs_and_its_gradient_finite_differences():
    model, _ = _model()
    champion = np.array([0.4])
    Z = np.array([[-1.2, 1.5, 0.1], [0.9, -0.3, -1.7]])  # m = 4
    values = batch_uncertainty(model, champion, Z, grad=False)
    for z, v in zip(Z, values):
        assert v == pytest.approx(_pairwise_sum(model, [0.4, *z]), abs=1e-12)
    assert np.allclose(
        batch_uncertainty(model, champion, Z)[1],
        fd_grad(lambda W: batch_uncertainty(model, champion, W, grad=False), Z),
        atol=1e-6,
    )


def test_batch_muc_champion_is_the_mean_argmax_and_challengers_beat_a_grid_search():
    model, data = _model(seed=1)
    q = BatchMUC(m=3, n_initial=0)(model, PROBLEM, data, np.random.default_rng(0))
    grid = np.linspace(-2, 2, 2001)
    assert model.predict_value(q.x[None])[0][0] >= model.predict_value(grid[:, None])[0].max() - 1e-6
    assert np.allclose(q.batch[0], solution(model, PROBLEM, np.random.default_rng(3)), atol=1e-3)
    g = np.linspace(-2, 2, 161)
    A, B = np.meshgrid(g, g, indexing="ij")
    best_on_grid = batch_uncertainty(model, q.x, np.column_stack([A.ravel(), B.ravel()]), grad=False).max()
    chosen = batch_uncertainty(model, q.x, q.batch[1:].reshape(1, -1), grad=False)[0]
    assert chosen >= best_on_grid - 1e-6
    assert len({float(v) for v in q.batch[:, 0]}) == 3 and np.min(np.abs(np.diff(np.sort(q.batch[:, 0])))) > 1e-3


def test_batch_kss_gives_m_distinct_sample_maxima_reproducibly():
    model, data = _model(seed=2)
    rule = BatchKSS(m=4, n_initial=0, n_basis=256)
    q1 = rule(model, PROBLEM, data, np.random.default_rng(5))
    q2 = rule(model, PROBLEM, data, np.random.default_rng(5))
    assert q1 == q2 and q1.batch.shape == (4, 1)
    assert len({float(v) for v in q1.batch[:, 0]}) == 4
    assert np.array_equal(q1.x, q1.batch[0]) and np.array_equal(q1.x2, q1.batch[1])


def test_batch_kss_redraws_coinciding_maxima():
    # a model that has seen nothing but one tie-free ranking; with a long lengthscale the samples'
    # maxima often sit on the same box edge, so distinctness needs the redraws
    from visiontune.reproduction.acquisition.binary_policies import sample_optimiser
    from visiontune.reproduction.acquisition.dueling import sample_maxima

    model = PreferenceGP(SquaredExponential([20.0], 1.0), *PreferenceGP.from_ranking([[2.0], [-2.0]]))
    raw = sample_maxima(model, PROBLEM, np.random.default_rng(0), 5, 64, sample_optimiser())
    assert len({float(v) for v in raw[:, 0]}) < 5  # independent samples do collide here
    for seed in range(5):
        q = BatchKSS(m=5, n_initial=0, n_basis=64)(model, PROBLEM, None, np.random.default_rng(seed))
        assert len({float(v) for v in q.batch[:, 0]}) == 5


def test_batch_rules_validate_size_and_scenario():
    model, data = _model()
    for cls in (BatchMUC, BatchKSS, RandomBatch):
        with pytest.raises(InvalidInputError, match="m"):
            cls(m=2)
    with pytest.raises(ConfigurationError, match="batch-preferential"):
        BatchMUC()(model, Problem(box=[[-2.0, 2.0]], scenario="preferential"), data, np.random.default_rng(0))
    assert set(registry.names("batch-preferential")) == {"batch-MUC", "batch-KSS", "random-batch"}
