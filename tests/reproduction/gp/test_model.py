"""ProbitGP and PreferenceGP: predictions, gradients, evidence, preference algebra, bad input.

Oracles: finite differences (input and hyperparameter gradients), dense linear algebra with
K⁻¹ (R&W Eqs. 3.21-3.24), the algebra of g(x, x') = f(x) - f(x') (Fauvel & Chalk (binary/preferential BO), Eq. 6).
"""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.kernels import Matern52, SquaredExponential, refraction_kernel
from visiontune.reproduction.gp.laplace import laplace_mode
from visiontune.reproduction.gp.model import PreferenceGP, ProbitGP

INFERENCES = ("laplace", "ep")


@pytest.fixture(scope="module")
def data2d():
    rng = np.random.default_rng(10)
    X = rng.uniform(-1, 1, (30, 2))
    y = (np.sin(3 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=30) > 0).astype(float)
    return X, y


@pytest.fixture(scope="module")
def refraction_data():
    rng = np.random.default_rng(11)
    X = np.column_stack([rng.uniform(-1, 2, 40), rng.uniform(-4, 4, (40, 2))])
    y = (X[:, 0] > np.log10(1 + 0.5 * (X[:, 1] ** 2 + (X[:, 1] + X[:, 2]) ** 2))).astype(float)
    return X, y


def fd_input_grad(fn, Xs, h=1e-6):
    out_mu, out_var = np.zeros_like(Xs), np.zeros_like(Xs)
    for j in range(Xs.shape[1]):
        e = np.zeros(Xs.shape[1])
        e[j] = h
        (mp, vp), (mm, vm) = fn(Xs + e), fn(Xs - e)
        out_mu[:, j], out_var[:, j] = (mp - mm) / (2 * h), (vp - vm) / (2 * h)
    return out_mu, out_var


@pytest.mark.parametrize("inference", INFERENCES)
def test_predictive_gradients_match_finite_differences(data2d, refraction_data, inference):
    X, y = data2d
    model = ProbitGP(Matern52([0.5, 0.7], 2.0), X, y, inference)
    Xs = np.random.default_rng(0).uniform(-1, 1, (6, 2))
    mu, var, dmu, dvar = model.predict_with_grad(Xs)
    fd_mu, fd_var = fd_input_grad(model.predict, Xs)
    np.testing.assert_allclose(dmu, fd_mu, atol=1e-6)
    np.testing.assert_allclose(dvar, fd_var, atol=1e-6)
    # Non-stationary kernel: k(x, x) depends on the letter size s, so ∂k(x,x)/∂x ≠ 0.
    Xr, yr = refraction_data
    model = ProbitGP(refraction_kernel(0.8, [1.5, 2.0], 1.5), Xr, yr, inference)
    Xs = Xr[:5] + 0.1
    _, _, dmu, dvar = model.predict_with_grad(Xs)
    fd_mu, fd_var = fd_input_grad(model.predict, Xs)
    np.testing.assert_allclose(dmu, fd_mu, atol=1e-5)
    np.testing.assert_allclose(dvar, fd_var, atol=1e-5)
    assert np.any(np.abs(dvar[:, 0]) > 1e-3)


@pytest.mark.parametrize("inference", INFERENCES)
def test_log_evidence_gradient_matches_finite_differences(refraction_data, inference):
    X, y = refraction_data
    kernel = refraction_kernel(0.8, [1.5, 2.0], 1.5)
    grad = ProbitGP(kernel, X, y, inference).log_marginal_likelihood_grad()
    theta, h = kernel.params, 1e-5
    assert grad.shape == theta.shape == (4,)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        lp = ProbitGP(kernel.with_params(theta + e), X, y, inference).log_marginal_likelihood()
        lm = ProbitGP(kernel.with_params(theta - e), X, y, inference).log_marginal_likelihood()
        assert grad[j] == pytest.approx((lp - lm) / (2 * h), rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("inference", INFERENCES)
def test_joint_covariance_is_consistent(data2d, inference):
    X, y = data2d
    model = ProbitGP(SquaredExponential([0.5, 0.5], 1.0), X, y, inference)
    Xs = np.random.default_rng(1).uniform(-1, 1, (8, 2))
    mu, var = model.predict(Xs)
    mu2, cov = model.predict_cov(Xs)
    np.testing.assert_allclose(mu2, mu)
    np.testing.assert_allclose(np.diag(cov), var, atol=1e-10)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-10)
    # At the training inputs the predictive posterior is the training posterior.
    mean, cov_train = model.training_posterior()
    mu_x, cov_x = model.predict_cov(X)
    np.testing.assert_allclose(mu_x, mean, atol=1e-6)
    np.testing.assert_allclose(cov_x, cov_train, atol=1e-8)


def test_training_posterior_matches_dense_formula(data2d):
    X, y = data2d
    kernel = SquaredExponential([0.5, 0.5], 1.0)
    model = ProbitGP(kernel, X, y)
    mean, cov = model.training_posterior()
    K = kernel(X) + 1e-10 * np.eye(len(y))
    # At the mode, W = -∇∇log Φ(y'f̂); cov = (K⁻¹ + W)⁻¹ (R&W Eq. 3.20), mean = f̂ = K ∇log p.
    from scipy.stats import norm

    z = (2 * y - 1) * mean
    r = np.exp(norm.logpdf(z) - norm.logcdf(z))
    W = r**2 + z * r
    np.testing.assert_allclose(cov, np.linalg.inv(np.linalg.inv(K) + np.diag(W)), atol=1e-5)
    np.testing.assert_allclose(mean, K @ ((2 * y - 1) * r), atol=1e-6)


def test_answers_move_the_posterior_the_right_way():
    kernel = SquaredExponential([0.3], 1.0)
    X = np.array([[0.0], [0.1], [0.05]])
    for inference in INFERENCES:
        up = ProbitGP(kernel, X, [1, 1, 1], inference).predict([[0.05]])[0][0]
        down = ProbitGP(kernel, X, [0, 0, 0], inference).predict([[0.05]])[0][0]
        far_mu, far_var = ProbitGP(kernel, X, [1, 1, 1], inference).predict([[5.0]])
        assert up > 0.3 and down == pytest.approx(-up)
        assert abs(far_mu[0]) < 1e-6 and far_var[0] == pytest.approx(1.0, abs=1e-6)


def test_no_data_is_the_prior():
    kernel = refraction_kernel(2.0, [1.0, 1.0], 1.5)
    model = ProbitGP(kernel, np.zeros((0, 3)), [])
    Xs = np.array([[0.5, 1.0, -1.0], [1.0, 0.0, 0.0]])
    mu, var, dmu, dvar = model.predict_with_grad(Xs)
    np.testing.assert_array_equal(mu, 0.0)
    np.testing.assert_allclose(var, kernel.diag(Xs))
    np.testing.assert_allclose(dvar[:, 0], 2 * 2.0 * Xs[:, 0])  # ∂(θ s² + v)/∂s
    np.testing.assert_array_equal(dmu, 0.0)
    assert model.log_marginal_likelihood() == 0.0
    mean, cov = model.training_posterior()
    assert mean.shape == (0,) and cov.shape == (0, 0)


@pytest.mark.parametrize("inference", INFERENCES)
def test_warm_start_gives_the_same_model(data2d, inference):
    X, y = data2d
    kernel = SquaredExponential([0.5, 0.5], 1.0)
    prev = ProbitGP(kernel, X[:-1], y[:-1], inference)
    cold = ProbitGP(kernel, X, y, inference)
    warm = ProbitGP(kernel, X, y, inference, warm_start=prev.warm_start_state)
    Xs = np.random.default_rng(2).uniform(-1, 1, (5, 2))
    for a, b in zip(cold.predict(Xs), warm.predict(Xs)):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert warm.log_marginal_likelihood() == pytest.approx(cold.log_marginal_likelihood(), abs=1e-7)
    with pytest.raises(InvalidInputError, match="^warm_start:"):
        ProbitGP(kernel, X, y, inference, warm_start=np.zeros((3, 2)))


def test_model_is_immutable(data2d):
    X, y = data2d
    model = ProbitGP(SquaredExponential([0.5, 0.5]), X, y)
    with pytest.raises(AttributeError):
        model.y = y
    with pytest.raises(ValueError):
        model.X[0, 0] = 1.0


# ----------------------------------------------------------------------------- preferences


def test_from_ranking_gives_all_consistent_duels():
    options = np.array([[0.1, 0.2], [0.5, -0.3], [0.9, 0.9], [-0.7, 0.0]])
    duels, y = PreferenceGP.from_ranking(options)
    m = len(options)
    assert duels.shape == (m * (m - 1) // 2, 4) and np.all(y == 1)
    rank = {tuple(o): i for i, o in enumerate(options)}
    pairs = {(rank[tuple(d[:2])], rank[tuple(d[2:])]) for d in duels}
    assert pairs == {(i, j) for i in range(m) for j in range(i + 1, m)}  # every pair once, winner first


@pytest.fixture(scope="module")
def preference_model():
    rng = np.random.default_rng(12)
    a, b = rng.uniform(-1, 1, (25, 1)), rng.uniform(-1, 1, (25, 1))

    def utility(x):
        return -((x[:, 0] - 0.3) ** 2)

    y = (utility(a) - utility(b) + 0.05 * rng.normal(size=25) > 0).astype(float)
    return lambda inference: PreferenceGP(SquaredExponential([0.4], 1.0), np.hstack([a, b]), y, inference)


@pytest.mark.parametrize("inference", INFERENCES)
def test_preference_mean_is_antisymmetric_and_matches_utility(preference_model, inference):
    model = preference_model(inference)
    rng = np.random.default_rng(3)
    x, xp = rng.uniform(-1, 1, (7, 1)), rng.uniform(-1, 1, (7, 1))
    mu, var = model.predict(np.hstack([x, xp]))
    mu_swap, var_swap = model.predict(np.hstack([xp, x]))
    np.testing.assert_allclose(mu, -mu_swap, atol=1e-10)
    np.testing.assert_allclose(var, var_swap, atol=1e-10)
    mf, _ = model.predict_value(x)
    mfp, _ = model.predict_value(xp)
    np.testing.assert_allclose(mu, mf - mfp, atol=1e-10)
    _, cov_g = model.predict_cov(np.hstack([x, x]))
    np.testing.assert_allclose(cov_g, 0.0, atol=1e-10)  # g(x, x) = 0 exactly
    # The utility's maximiser is near the true one (0.3).
    grid = np.linspace(-1, 1, 201)[:, None]
    assert abs(grid[np.argmax(model.predict_value(grid)[0]), 0] - 0.3) < 0.25


@pytest.mark.parametrize("inference", INFERENCES)
def test_predict_value_gradient_matches_finite_differences(preference_model, inference):
    model = preference_model(inference)
    X = np.array([[-0.6], [0.1], [0.75]])
    _, _, dmu, dvar = model.predict_value_with_grad(X)
    fd_mu, fd_var = fd_input_grad(model.predict_value, X)
    np.testing.assert_allclose(dmu, fd_mu, atol=1e-6)
    np.testing.assert_allclose(dvar, fd_var, atol=1e-6)
    duels = np.array([[-0.6, 0.2], [0.1, 0.9]])
    _, _, dmu, dvar = model.predict_with_grad(duels)
    fd_mu, fd_var = fd_input_grad(model.predict, duels)
    np.testing.assert_allclose(dmu, fd_mu, atol=1e-6)
    np.testing.assert_allclose(dvar, fd_var, atol=1e-6)


def test_preference_with_no_duels_is_the_prior():
    model = PreferenceGP(SquaredExponential([0.4], 2.0), np.zeros((0, 2)), [])
    mu, var = model.predict_value([[0.0], [0.5]])
    np.testing.assert_allclose(var, 2.0)
    mu, var = model.predict([[0.0, 0.5]])
    np.testing.assert_allclose(var, 2 * 2.0 * (1 - np.exp(-0.5 * 0.25 / 0.16)))


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "X, y, inference, name",
    [
        ([[0.0], [np.nan]], [1, 0], "laplace", "X"),
        ([[0.0], [np.inf]], [1, 0], "laplace", "X"),
        ([[0.0], [1.0]], [1, np.nan], "laplace", "y"),
        ([[0.0], [1.0]], [1, 2], "laplace", "y"),
        ([[0.0], [1.0]], [1, -1], "ep", "y"),
        ([[0.0], [1.0]], [1, 0, 1], "laplace", "y"),
        ([[0.0], [1.0]], [1, 0], "vb", "inference"),
        ([[0.0], [1.0]], [1, 0], None, "inference"),
    ],
)
def test_bad_input_names_the_argument(X, y, inference, name):
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        ProbitGP(SquaredExponential([1.0]), X, y, inference)


def test_bad_kernel_and_test_points_name_the_argument(data2d):
    X, y = data2d
    with pytest.raises(InvalidInputError, match="^kernel:"):
        ProbitGP("se", X, y)
    with pytest.raises(InvalidInputError, match="lengthscales"):
        ProbitGP(SquaredExponential([1.0, -1.0]), X, y)
    with pytest.raises(InvalidInputError, match="variance"):
        ProbitGP(SquaredExponential([1.0, 1.0], 0.0), X, y)
    model = ProbitGP(SquaredExponential([1.0, 1.0]), X, y)
    with pytest.raises(InvalidInputError, match="^Xs:"):
        model.predict(np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match="^Xs:"):
        model.predict_with_grad([[np.nan, 0.0]])
    with pytest.raises(InvalidInputError, match="^base_kernel:"):
        PreferenceGP(3, np.zeros((2, 2)), [1, 0])
    with pytest.raises(InvalidInputError, match="^options:"):
        PreferenceGP.from_ranking([[0.0]])
    pref = PreferenceGP(SquaredExponential([1.0]), [[0.0, 1.0]], [1])
    with pytest.raises(InvalidInputError, match="^X:"):
        pref.predict_value([[0.0, 1.0]])


def test_a_prior_mean_is_added_to_the_latent_of_the_laplace_fit_only():
    """``ProbitGP(..., prior_mean=m)`` fits ``f = m + g``: the fit is :func:`laplace_mode` with
    ``offset=m`` (checked against oracles in tests/reproduction/gp/test_laplace.py); EP and the evidence
    gradient refuse it."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (8, 2))
    y = (rng.uniform(size=8) < 0.5).astype(float)
    m = rng.normal(0.0, 1.0, 8)
    kernel = SquaredExponential([0.7, 0.7], 1.5)
    gp = ProbitGP(kernel, X, y, prior_mean=m)
    ref = laplace_mode(kernel(X), y, offset=m)
    np.testing.assert_array_equal(gp.training_posterior()[0], ref.mean)
    assert gp.log_marginal_likelihood() == ref.log_marginal_likelihood
    assert gp.has_prior_mean and not ProbitGP(kernel, X, y).has_prior_mean
    with pytest.raises(InvalidInputError, match="prior_mean: supported with inference='laplace' only"):
        ProbitGP(kernel, X, y, "ep", prior_mean=m)
    with pytest.raises(InvalidInputError, match="not implemented for a model with a prior_mean"):
        gp.log_marginal_likelihood_grad()
