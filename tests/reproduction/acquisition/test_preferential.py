"""Preferential policies: MUC's champion and challenger against dense grids; KSS duels."""

import numpy as np
import pytest

from visiontune.errors import ConfigurationError
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.preferential import KSS, MUC, preference_solution
from visiontune.reproduction.gp import moments
from visiontune.reproduction.gp.kernels import SquaredExponential
from visiontune.reproduction.gp.model import PreferenceGP

PROBLEM = Problem(box=[[-2.0, 2.0]], scenario="preferential")


def _model(n=25, seed=0):
    rng = np.random.default_rng(seed)
    duels = rng.uniform(-2, 2, (n, 2))

    def utility(x):
        return np.sin(2 * x) - 0.3 * x**2

    y = (rng.random(n) < 1 / (1 + np.exp(-3 * (utility(duels[:, 0]) - utility(duels[:, 1]))))).astype(float)
    return PreferenceGP(SquaredExponential([0.7], 2.0), duels, y), Data(duels, y)


def test_muc_champion_maximises_the_utility_mean_and_challenger_the_duel_uncertainty():
    model, data = _model()
    q = MUC(n_initial=0)(model, PROBLEM, data, np.random.default_rng(0))
    grid = np.linspace(-2, 2, 4001)[:, None]
    mu = model.predict_value(grid)[0]
    assert model.predict_value(q.x[None])[0][0] >= mu.max() - 1e-6
    duel_mu, duel_var = model.predict(np.column_stack([np.full(len(grid), q.x[0]), grid[:, 0]]))
    v = moments.epistemic_variance(duel_mu, duel_var)
    m, s = model.predict([[q.x[0], q.x2[0]]])
    assert moments.epistemic_variance(m, s)[0] >= v.max() - 1e-6
    assert abs(q.x2[0] - q.x[0]) > 1e-3
    assert np.allclose(preference_solution(model, PROBLEM, np.random.default_rng(1)), q.x, atol=1e-3)


def test_kss_duels_two_distinct_sample_maxima_and_is_reproducible():
    model, data = _model(seed=1)
    rule = KSS(n_initial=0, n_basis=256)
    q1 = rule(model, PROBLEM, data, np.random.default_rng(5))
    q2 = rule(model, PROBLEM, data, np.random.default_rng(5))
    assert q1 == q2 and not np.allclose(q1.x, q1.x2)


def test_preferential_rules_refuse_other_scenarios():
    model, data = _model()
    with pytest.raises(ConfigurationError, match="preferential"):
        MUC()(model, Problem(box=[[-2.0, 2.0]]), data, np.random.default_rng(0))


def test_muc_ald_duels_at_the_reference_context_then_picks_the_most_informative_context():
    from visiontune.reproduction.acquisition import acquisition_functions as F
    from visiontune.reproduction.gp.kernels import contextual_benchmark_kernel

    problem = Problem(
        box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5], scenario="contextual-preferential"
    )
    rng = np.random.default_rng(3)
    n = 30
    s, a, b = rng.uniform(0, 1, n), rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-3 * s * (np.sin(2 * a) - np.sin(2 * b))))).astype(float)
    duels = np.column_stack([s, a, s, b])
    model = PreferenceGP(contextual_benchmark_kernel(SquaredExponential, [0.7], 2.0, 1), duels, y)
    q = MUC(n_initial=0)(model, problem, Data(duels, y), np.random.default_rng(0))
    grid = np.linspace(-2, 2, 2001)
    mu = model.predict_value(np.column_stack([np.full_like(grid, 0.5), grid]))[0]
    assert model.predict_value([[0.5, q.x[0]]])[0][0] >= mu.max() - 1e-6
    m, v = model.predict(
        np.column_stack([np.full_like(grid, 0.5), np.full_like(grid, q.x[0]), np.full_like(grid, 0.5), grid])
    )
    m2, v2 = model.predict([[0.5, q.x[0], 0.5, q.x2[0]]])
    assert moments.epistemic_variance(m2, v2)[0] >= moments.epistemic_variance(m, v).max() - 1e-6
    s_grid = np.linspace(0, 1, 1001)
    info = F.bald(
        model, np.column_stack([s_grid, np.full_like(s_grid, q.x[0]), s_grid, np.full_like(s_grid, q.x2[0])])
    )[0]
    assert F.bald(model, [[q.s[0], q.x[0], q.s[0], q.x2[0]]])[0][0] >= info.max() - 1e-5
    assert q.s[0] > 0.05  # at s = 0 the duel's outcome is a known coin flip


def test_solution_of_every_preferential_scenario_is_the_utility_mean_argmax():
    from visiontune.reproduction.acquisition.solution import solution
    from visiontune.reproduction.gp.kernels import contextual_benchmark_kernel

    model, _ = _model(seed=2)
    grid = np.linspace(-2, 2, 4001)[:, None]
    for scenario in ("preferential", "batch-preferential"):
        x = solution(model, Problem(box=[[-2.0, 2.0]], scenario=scenario), np.random.default_rng(0))
        assert model.predict_value(x[None])[0][0] >= model.predict_value(grid)[0].max() - 1e-6
    # contextual duels: the utility mean at the reference context (was mu_c of a binary model)
    rng = np.random.default_rng(3)
    s, a, b = rng.uniform(0, 1, 20), rng.uniform(-2, 2, 20), rng.uniform(-2, 2, 20)
    y = (rng.random(20) < 1 / (1 + np.exp(-3 * s * (np.sin(2 * a) - np.sin(2 * b))))).astype(float)
    ctx_model = PreferenceGP(
        contextual_benchmark_kernel(SquaredExponential, [0.7], 2.0, 1), np.column_stack([s, a, s, b]), y
    )
    problem = Problem(
        box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5], scenario="contextual-preferential"
    )
    x = solution(ctx_model, problem, np.random.default_rng(0))
    mu = ctx_model.predict_value(np.column_stack([np.full(len(grid), 0.5), grid[:, 0]]))[0]
    assert ctx_model.predict_value([[0.5, x[0]]])[0][0] >= mu.max() - 1e-6


def _contextual_model(n=30, seed=3):
    from visiontune.reproduction.gp.kernels import contextual_benchmark_kernel

    rng = np.random.default_rng(seed)
    s, a, b = rng.uniform(0, 1, n), rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-3 * s * (np.sin(2 * a) - np.sin(2 * b))))).astype(float)
    duels = np.column_stack([s, a, s, b])
    return PreferenceGP(contextual_benchmark_kernel(SquaredExponential, [0.7], 2.0, 1), duels, y), Data(duels, y)


@pytest.mark.parametrize("rule", [MUC, lambda **kw: KSS(n_basis=256, **kw)])
def test_random_context_controls_keep_the_duel_and_draw_s_uniformly(rule):
    problem = Problem(
        box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5], scenario="contextual-preferential"
    )
    model, data = _contextual_model()
    ald = rule(n_initial=0)(model, problem, data, np.random.default_rng(4))
    contexts = []
    for seed in (4, 5, 6, 7):
        q = rule(n_initial=0, random_context=True)(model, problem, data, np.random.default_rng(seed))
        contexts.append(q.s[0])
        if seed == 4:  # the context is drawn last: same duel as the ALD rule with the same seed
            assert np.array_equal(q.x, ald.x) and np.array_equal(q.x2, ald.x2)
    assert np.ptp(contexts) > 0.05 and all(0 <= s <= 1 for s in contexts)
