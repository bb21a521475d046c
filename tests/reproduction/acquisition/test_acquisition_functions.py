"""Acquisition functions: values against numerical integration over f, gradients against finite differences."""

import numpy as np
import pytest
from acq_helpers import KnownMomentsModel, TableModel, expect, fd_grad, probit_model
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import multivariate_normal, norm

from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.optimize import maximize

MU = np.array([-3.0, -1.0, -0.2, 0.0, 0.4, 1.5, 3.0])
VAR = np.array([0.01, 0.5, 2.0, 1.0, 4.0, 0.2, 9.0])
LN2_C = np.sqrt(np.pi * np.log(2) / 2)


def _entropy_bits(p):
    p = np.clip(p, 1e-300, 1 - 1e-16)
    return -(p * np.log2(p) + (1 - p) * np.log2(1 - p))


def test_ucb_phi_matches_integration_over_the_latent_posterior():
    model = TableModel({(float(i),): (m, v) for i, (m, v) in enumerate(zip(MU, VAR))})
    X = np.arange(len(MU), dtype=float)[:, None]
    beta = norm.ppf(0.95)
    mean_c = expect(ndtr, MU, VAR)
    var_c = expect(lambda f: ndtr(f) ** 2, MU, VAR) - mean_c**2
    values, _ = F.ucb_phi(model, X, beta)
    assert np.allclose(values, mean_c + beta * np.sqrt(var_c), atol=1e-7)
    assert np.allclose(F.mean_probability(model, X)[0], mean_c, atol=1e-10)
    assert np.allclose(F.ucb_f(model, X, 2.0)[0], MU + 2.0 * np.sqrt(VAR))


def test_bald_is_close_to_the_exact_mutual_information():
    # Houlsby's closed form approximates E[h(Phi(f))] by a Gaussian; exact MI by quadrature.
    model = TableModel({(float(i),): (m, v) for i, (m, v) in enumerate(zip(MU, VAR))})
    X = np.arange(len(MU), dtype=float)[:, None]
    exact = _entropy_bits(expect(ndtr, MU, VAR)) - expect(lambda f: _entropy_bits(ndtr(f)), MU, VAR)
    values, _ = F.bald(model, X)
    assert np.allclose(values, exact, atol=0.02)


@pytest.mark.parametrize("p_star", [0.1, 0.5, 0.93])
def test_binary_ei_matches_quadrature(p_star):
    model = TableModel({(float(i),): (m, v) for i, (m, v) in enumerate(zip(MU, VAR))})
    X = np.arange(len(MU), dtype=float)[:, None]
    values, _ = F.binary_ei(model, X, incumbent=p_star)
    for m, v, got in zip(MU, VAR, values):
        s = np.sqrt(v)
        oracle = integrate.quad(
            lambda f: max(ndtr(f) - p_star, 0.0) * norm.pdf(f, m, s),
            m - 12 * s,
            m + 12 * s,
            points=[norm.ppf(p_star)],
            limit=200,
            epsabs=1e-12,
        )[0]
        assert got == pytest.approx(oracle, abs=1e-8)


def test_bivariate_normal_cdf_matches_scipy():
    rng = np.random.default_rng(0)
    for h, k, rho in zip(rng.normal(0, 1.5, 20), rng.normal(0, 1.5, 20), rng.uniform(-0.99, 0.99, 20)):
        want = multivariate_normal(cov=[[1, rho], [rho, 1]]).cdf([h, k])
        assert F._bvn_cdf(np.array(h), np.array(k), np.array(rho)) == pytest.approx(want, abs=1e-6)
    assert F._bvn_cdf(np.array(0.0), np.array(0.0), np.array(0.5)) == pytest.approx(0.25 + np.arcsin(0.5) / (2 * np.pi))


ACQS = {
    "ucb_phi": lambda m, X: F.ucb_phi(m, X, F.BETA_UCB_PHI),
    "ucb_f": lambda m, X: F.ucb_f(m, X),
    "binary_ei": lambda m, X: F.binary_ei(m, X, incumbent=0.6),
    "bald": F.bald,
    "mean_probability": F.mean_probability,
    "posterior_mean": F.posterior_mean,
}


@pytest.mark.parametrize("name", sorted(ACQS))
@pytest.mark.parametrize("d", [1, 3])
def test_gradients_match_finite_differences(name, d):
    model = KnownMomentsModel(d, seed=d)
    X = np.random.default_rng(1).uniform(-2, 2, (15, d))
    fn = ACQS[name]
    values, grads = fn(model, X)
    assert values.shape == (15,) and grads.shape == (15, d)
    assert np.allclose(grads, fd_grad(lambda Z: fn(model, Z)[0], X), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["ucb_phi", "ucb_f", "binary_ei", "bald"])
@pytest.mark.parametrize("d", [1, 2])
def test_optimiser_reaches_the_dense_grid_max(name, d):
    model = KnownMomentsModel(d, seed=10 + d)
    fn = ACQS[name]
    box = np.array([[-2.0, 2.0]] * d)
    axes = [np.linspace(-2, 2, 4001 if d == 1 else 401)] * d
    grid = np.column_stack([a.ravel() for a in np.meshgrid(*axes)])
    grid_max = fn(model, grid)[0].max()
    x, v = maximize(lambda Z: fn(model, Z), box, np.random.default_rng(0))
    assert v >= grid_max - 0.01 * abs(grid_max)
    assert v == pytest.approx(fn(model, x[None])[0][0])


def test_ucb_phi_and_ucb_f_disagree_on_a_confident_high_mean():
    # Fauvel & Chalk (binary/preferential BO), figure S5: A has a high latent mean known with confidence (Phi(f) ~ 1, no
    # epistemic variance left); B has mean 0 and a large latent variance. UCB_f (beta = 1) picks A,
    # UCB_Phi (beta = Phi^-1(0.99)) picks B where the answer probability is uncertain.
    model = TableModel({(0.0,): (3.0, 0.3**2), (1.0,): (0.0, 1.5**2)})
    X = np.array([[0.0], [1.0]])
    assert np.argmax(F.ucb_f(model, X)[0]) == 0
    assert np.argmax(F.ucb_phi(model, X)[0]) == 1
    assert np.argmax(F.mean_probability(model, X)[0]) == 0


def test_bald_prefers_uncertain_f_to_a_coin_flip_with_known_f():
    # mu_c = 0.5 at both; at A f = 0 is known (the answer is a coin flip, nothing to learn),
    # at B f is uncertain: the mutual information is at B.
    model = TableModel({(0.0,): (0.0, 1e-4), (1.0,): (0.0, 4.0), (2.0,): (2.5, 0.05)})
    X = np.array([[0.0], [1.0], [2.0]])
    assert np.allclose(F.mean_probability(model, X[:2])[0], 0.5)
    values = F.bald(model, X)[0]
    assert np.argmax(values) == 1 and values[0] < 1e-3


def test_context_wrappers_fix_columns_and_drop_their_gradients():
    model = KnownMomentsModel(3, seed=4)
    s, x = np.array([0.3]), np.array([0.2, -0.7])
    Xs = np.random.default_rng(2).uniform(-1, 1, (6, 2))
    v, g = F.at_context(lambda Z: F.ucb_phi(model, Z), s)(Xs)
    v_full, g_full = F.ucb_phi(model, np.column_stack([np.full(6, 0.3), Xs]))
    assert np.array_equal(v, v_full) and np.array_equal(g, g_full[:, 1:])
    S = np.linspace(-1, 1, 5)[:, None]
    v, g = F.over_context(lambda Z: F.bald(model, Z), x)(S)
    v_full, g_full = F.bald(model, np.column_stack([S, np.tile(x, (5, 1))]))
    assert np.array_equal(v, v_full) and np.array_equal(g, g_full[:, :1])


def test_bad_arguments_are_named():
    model = KnownMomentsModel(1)
    with pytest.raises(InvalidInputError, match="beta"):
        F.ucb_phi(model, [[0.0]], beta=-1.0)
    with pytest.raises(InvalidInputError, match="X"):
        F.bald(model, [[np.nan]])
    with pytest.raises(InvalidInputError, match="incumbent"):
        F.binary_ei(model, [[0.0]], incumbent=1.0)


# ---------------------------------------------------------------- on the real ProbitGP


@pytest.mark.parametrize("inference", ["laplace", "ep"])
@pytest.mark.parametrize("name", ["ucb_phi", "ucb_f", "binary_ei", "bald", "mean_probability"])
def test_gradients_on_a_fitted_probit_gp(name, inference):
    model = probit_model(2, n=25, seed=3, context=True, inference=inference)
    X = np.column_stack([np.random.default_rng(4).uniform(0.05, 1, 8), np.random.default_rng(5).uniform(-2, 2, (8, 2))])
    fn = ACQS[name]
    values, grads = fn(model, X)
    assert np.allclose(grads, fd_grad(lambda Z: fn(model, Z)[0], X), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["ucb_phi", "ucb_f", "binary_ei", "bald"])
@pytest.mark.parametrize("d", [1, 2])
def test_optimiser_reaches_the_grid_max_on_a_fitted_probit_gp(name, d):
    model = probit_model(d, n=20, seed=d)
    fn = ACQS[name]
    axes = [np.linspace(-2, 2, 2001 if d == 1 else 301)] * d
    grid = np.column_stack([a.ravel() for a in np.meshgrid(*axes)])
    grid_max = fn(model, grid)[0].max()
    x, v = maximize(lambda Z: fn(model, Z), [[-2.0, 2.0]] * d, np.random.default_rng(0))
    assert v >= grid_max - 0.01 * abs(grid_max)


def test_ucb_f_exploits_a_confident_high_mean_where_ucb_phi_explores():
    # Fauvel & Chalk (binary/preferential BO), figure S5 on a real posterior: 40 successes around x = -1 give a high
    # latent mean known with confidence there; UCB_f (beta = 1) stays on it, UCB_Phi leaves it.
    from visiontune.reproduction.gp.kernels import SquaredExponential
    from visiontune.reproduction.gp.model import ProbitGP

    model = ProbitGP(SquaredExponential([0.4], 4.0), np.linspace(-1.2, -0.8, 40)[:, None], np.ones(40))
    rng = np.random.default_rng(0)
    x_f, _ = maximize(lambda Z: F.ucb_f(model, Z), [[-2.0, 2.0]], rng)
    x_phi, _ = maximize(lambda Z: F.ucb_phi(model, Z), [[-2.0, 2.0]], rng)
    assert abs(x_f[0] + 1.0) < 0.05
    assert abs(x_phi[0] + 1.0) > 0.3
    mu, var = model.predict(np.array([x_f, x_phi]))
    assert mu[0] > mu[1] and var[0] < var[1]
    assert F.mean_probability(model, x_f[None])[0][0] > 0.9


@pytest.mark.parametrize("name", ["ucb_phi", "ucb_f", "binary_ei", "bald", "mean_probability", "posterior_mean"])
def test_values_only_mode_gives_the_same_values(name):
    model = probit_model(2, n=15, seed=8)
    X = np.random.default_rng(9).uniform(-2, 2, (20, 2))
    fn = getattr(F, name)
    kw = {"incumbent": 0.6} if name == "binary_ei" else {}
    assert np.allclose(fn(model, X, grad=False, **kw), fn(model, X, **kw)[0], rtol=1e-12, atol=1e-14)
    vals = F.at_context(lambda Z: fn(model, Z, grad=False, **kw), [0.1])(X[:, :1])
    assert np.allclose(vals, fn(model, np.column_stack([np.full(20, 0.1), X[:, :1]]), **kw)[0])
