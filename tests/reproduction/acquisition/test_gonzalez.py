"""González et al. 2017 PBO (ICML): soft-Copeland score against brute-force Monte Carlo, the
Condorcet winner and PBO-PE / PBO-DTS against dense grids, PBO-CEI against refits from scratch."""

import numpy as np
import pytest
from acq_helpers import expect, fd_grad
from scipy.special import ndtr

from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.dueling import challenge_variance
from visiontune.reproduction.acquisition.gonzalez import (
    PBOCEI,
    PBODTS,
    PBOPE,
    condorcet_winner,
    copeland_expected_improvement,
    sampled_copeland,
    soft_copeland,
)
from visiontune.reproduction.acquisition.optimize import sobol_points
from visiontune.reproduction.gp import moments
from visiontune.reproduction.gp.kernels import SquaredExponential
from visiontune.reproduction.gp.model import PreferenceGP
from visiontune.reproduction.gp.sampling import sample_posterior_functions

PROBLEM = Problem(box=[[-2.0, 2.0]], scenario="preferential")
GRID = np.linspace(-2, 2, 2001)[:, None]


def _model(n=20, seed=0):
    rng = np.random.default_rng(seed)
    duels = rng.uniform(-2, 2, (n, 2))

    def utility(x):
        return np.sin(2 * x) - 0.3 * x**2

    y = (rng.random(n) < ndtr(2 * (utility(duels[:, 0]) - utility(duels[:, 1])))).astype(float)
    return PreferenceGP(SquaredExponential([0.7], 2.0), duels, y), Data(duels, y)


def test_soft_copeland_is_the_box_average_of_the_win_probability():
    # oracle: C(x) = Vol^-1 int P(x beats x') dx' by plain Monte Carlo over 20000 uniform x',
    # with P = E[Phi(g)] integrated by Gauss-Hermite (not the closed form)
    model, _ = _model(seed=1)
    X = np.array([[-1.5], [0.0], [0.7], [1.9]])
    xs = np.random.default_rng(0).uniform(-2, 2, 20000)
    oracle = []
    for x in X[:, 0]:
        mu, var = model.predict(np.column_stack([np.full_like(xs, x), xs]))
        oracle.append(expect(ndtr, mu, var).mean())
    L = sobol_points(PROBLEM.box, 1024, np.random.default_rng(1))
    assert np.allclose(soft_copeland(model, PROBLEM, X, L), oracle, atol=5e-3)
    # gradient of the landmark average against finite differences
    L64 = L[:64]
    assert np.allclose(
        soft_copeland(model, PROBLEM, X, L64, grad=True)[1],
        fd_grad(lambda Z: soft_copeland(model, PROBLEM, Z, L64), X),
        atol=1e-6,
    )


def test_condorcet_winner_is_the_grid_argmax_of_the_score():
    model, _ = _model(seed=2)
    x, value = condorcet_winner(model, PROBLEM, np.random.default_rng(4), n_landmarks=32)
    L = sobol_points(PROBLEM.box, 32, np.random.default_rng(4))  # the landmarks it drew first
    assert value == pytest.approx(soft_copeland(model, PROBLEM, x[None], L)[0])
    assert value >= soft_copeland(model, PROBLEM, GRID, L).max() - 1e-7


def test_pbo_pe_duel_maximises_the_epistemic_variance_over_all_pairs():
    model, data = _model(seed=3)
    q = PBOPE(n_initial=0)(model, PROBLEM, data, np.random.default_rng(0))
    g = np.linspace(-2, 2, 161)
    A, B = np.meshgrid(g, g, indexing="ij")
    mu, var = model.predict(np.column_stack([A.ravel(), B.ravel()]))
    m, v = model.predict([[q.x[0], q.x2[0]]])
    assert moments.epistemic_variance(m, v)[0] >= moments.epistemic_variance(mu, var).max() - 1e-6
    assert abs(q.x[0] - q.x2[0]) > 1e-3


def test_pbo_dts_first_member_maximises_the_sampled_copeland_score_second_the_duel_uncertainty():
    model, data = _model(seed=4)
    q = PBODTS(n_initial=0, n_basis=256, n_landmarks=32)(model, PROBLEM, data, np.random.default_rng(9))
    rng = np.random.default_rng(9)  # replay the rule's draws: landmarks, then the sample
    L = sobol_points(PROBLEM.box, 32, rng)
    f = sample_posterior_functions(model, PROBLEM.input_box, 1, rng, n_basis=256)[0]
    assert sampled_copeland(f, PROBLEM, q.x[None], L)[0] >= sampled_copeland(f, PROBLEM, GRID, L).max() - 1e-6
    fl = f.value(L)
    assert sampled_copeland(f, PROBLEM, [[0.3]], L)[0] == pytest.approx(ndtr(f.value([[0.3]])[0] - fl).mean())
    X = np.linspace(-1.9, 1.9, 5)[:, None]
    assert np.allclose(
        sampled_copeland(f, PROBLEM, X, L, grad=True)[1],
        fd_grad(lambda Z: sampled_copeland(f, PROBLEM, Z, L), X),
        atol=1e-5,
    )
    assert (
        challenge_variance(model, PROBLEM, q.x2[None], q.x, grad=False)[0]
        >= challenge_variance(model, PROBLEM, GRID, q.x, grad=False).max() - 1e-6
    )


def test_copeland_expected_improvement_matches_explicit_refits_from_scratch():
    model, _ = _model(n=10, seed=5)
    z = np.array([0.6, -1.1])
    R = np.linspace(-2, 2, 21)[:, None]
    L = sobol_points(PROBLEM.box, 16, np.random.default_rng(0))

    def best(m):  # max over R of (1/M) sum_k E[Phi(g(r, l_k))], Gauss-Hermite
        mu, var = m.predict(np.column_stack([np.repeat(R[:, 0], len(L)), np.tile(L[:, 0], len(R))]))
        return expect(ndtr, mu, var).reshape(len(R), len(L)).mean(1).max()

    mu, var = model.predict(z[None])
    p = expect(ndtr, mu, var)[0]
    refits = [PreferenceGP(model.base_kernel, np.vstack([model.X, z]), np.append(model.y, a)) for a in (1, 0)]
    oracle = p * max(best(refits[0]) - best(model), 0) + (1 - p) * max(best(refits[1]) - best(model), 0)
    assert copeland_expected_improvement(model, PROBLEM, z[None], R, L)[0] == pytest.approx(oracle, abs=1e-7)


def test_pbo_cei_picks_the_best_candidate_duel():
    model, data = _model(n=8, seed=6)
    rule = PBOCEI(n_initial=0, n_candidates=8, n_reference=8, n_landmarks=8)
    q = rule(model, PROBLEM, data, np.random.default_rng(1))
    rng = np.random.default_rng(1)  # replay: landmarks, Condorcet winner, reference set, candidates
    L = sobol_points(PROBLEM.box, 8, rng)
    winner = condorcet_winner(model, PROBLEM, rng, n_landmarks=8)[0]
    R = np.vstack([sobol_points(PROBLEM.box, 8, rng), winner])
    Z = sobol_points(np.vstack([PROBLEM.box, PROBLEM.box]), 8, rng)
    cei = copeland_expected_improvement(model, PROBLEM, Z, R, L)
    assert np.allclose([q.x[0], q.x2[0]], Z[np.argmax(cei)])


def test_gonzalez_rules_validate():
    model, data = _model()
    with pytest.raises(InvalidInputError, match="n_candidates"):
        PBOCEI(n_candidates=0)
    with pytest.raises(InvalidInputError, match="landmarks"):
        soft_copeland(model, PROBLEM, [[0.0]], [[0.0, 1.0]])
    ctx = Problem(
        box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5], scenario="contextual-preferential"
    )
    with pytest.raises(ConfigurationError, match="non-contextual"):
        copeland_expected_improvement(model, ctx, [[0.0, 1.0]], [[0.0]], [[0.0]])
