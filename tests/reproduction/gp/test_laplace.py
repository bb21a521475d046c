"""Laplace approximation (R&W Alg. 3.1/3.2/5.1) against independent oracles.

Oracles: the exact posterior p(f | y) ∝ N(f; 0, K) ∏ Φ(y'_i f_i) evaluated by numerical
integration / on a dense grid (its mode), direct dense linear algebra with K⁻¹ for the
Laplace evidence and predictions (R&W Eqs. 3.21-3.24, 3.32), finite differences for the
gradients. (GPy, a common reference implementation, is not installable here, so no
cross-library comparison is made.)
"""

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.stats import norm

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.laplace import (
    laplace_lml_grad,
    laplace_mode,
    predict_latent,
    predict_latent_cov,
    probit_log_likelihood_terms,
)


def se_gram(X1, X2, lengthscale=0.8, variance=1.3):
    d2 = ((X1[:, None, :] - X2[None, :, :]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2 / lengthscale**2)


def neg_log_post(f, K, y):
    """-log N(f; 0, K) - Σ log Φ(y' f) up to a constant, with a dense solve (independent of the engine)."""
    ys = 2 * y - 1
    return 0.5 * f @ np.linalg.solve(K, f) - norm.logcdf(ys * f).sum()


def laplace_evidence_direct(K, y, f_hat):
    """log q(y|X) = log p(y|f̂) - ½ f̂ᵀK⁻¹f̂ - ½ log|I + K W| (R&W Eq. 3.32), W by finite differences."""
    ys = 2 * y - 1
    h = 1e-4

    def lp(f):
        return norm.logcdf(ys * f)

    W = -(lp(f_hat + h) - 2 * lp(f_hat) + lp(f_hat - h)) / h**2
    sign, logdet = np.linalg.slogdet(np.eye(len(y)) + K @ np.diag(W))
    return lp(f_hat).sum() - 0.5 * f_hat @ np.linalg.solve(K, f_hat) - 0.5 * logdet, W


CASES = {
    "1d_n1": (np.array([[0.3]]), np.array([1.0])),
    "1d_n2": (np.array([[-0.4], [0.5]]), np.array([1.0, 0.0])),
    "2d_n2": (np.array([[0.1, -0.2], [0.6, 0.4]]), np.array([1.0, 1.0])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mode_is_the_mode_of_the_exact_posterior(case):
    X, y = CASES[case]
    K = se_gram(X, X)
    approx = laplace_mode(K, y)
    n = len(y)
    # Dense-grid oracle: argmax of the unnormalised exact posterior.
    sd = np.sqrt(np.diag(K))
    grids = [np.linspace(-5 * s, 5 * s, 801 if n == 1 else 401) for s in sd]
    mesh = np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, n)
    Kinv = np.linalg.inv(K)
    logp = -0.5 * np.einsum("ij,jk,ik->i", mesh, Kinv, mesh) + norm.logcdf((2 * y - 1) * mesh).sum(1)
    grid_mode = mesh[np.argmax(logp)]
    spacing = np.array([g[1] - g[0] for g in grids])
    assert np.all(np.abs(grid_mode - approx.mean) <= spacing)
    # Refined oracle: a generic optimiser on the exact log posterior.
    ref = optimize.minimize(neg_log_post, np.zeros(n), args=(K, y), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(approx.mean, ref.x, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_evidence_matches_the_laplace_formula(case):
    X, y = CASES[case]
    K = se_gram(X, X)
    approx = laplace_mode(K, y)
    expected, W = laplace_evidence_direct(K, y, approx.mean)
    assert approx.log_marginal_likelihood == pytest.approx(expected, abs=1e-6)
    np.testing.assert_allclose(approx.sqrt_w**2, W, rtol=1e-5)


def test_laplace_evidence_is_close_to_exact_evidence_in_1d():
    """For one point, exact Z = ∫ N(f; 0, k) Φ(f) df = Φ(0/√(1+k)) = ½; Laplace is near it."""
    K = np.array([[1.3]])
    approx = laplace_mode(K, np.array([1.0]))
    z, _ = integrate.quad(lambda f: norm.pdf(f, scale=np.sqrt(1.3)) * norm.cdf(f), -np.inf, np.inf)
    assert z == pytest.approx(0.5, abs=1e-10)
    assert abs(approx.log_marginal_likelihood - np.log(z)) < 0.05


def test_predictions_match_dense_formulas():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (12, 2))
    y = (rng.uniform(size=12) < 0.5).astype(float)
    Xs = rng.uniform(-1, 1, (5, 2))
    K = se_gram(X, X) + 1e-8 * np.eye(12)
    approx = laplace_mode(K, y)
    ks, kss = se_gram(X, Xs), se_gram(Xs, Xs)
    mu, var = predict_latent(approx, ks, np.diag(kss))
    W = approx.sqrt_w**2
    mu_ref = ks.T @ np.linalg.solve(K, approx.mean)  # R&W Eq. 3.21: k*ᵀK⁻¹f̂
    cov_ref = kss - ks.T @ np.linalg.solve(K + np.diag(1 / W), ks)  # R&W Eq. 3.24
    np.testing.assert_allclose(mu, mu_ref, atol=1e-6)
    np.testing.assert_allclose(var, np.diag(cov_ref), atol=1e-8)
    mu2, cov = predict_latent_cov(approx, ks, kss)
    np.testing.assert_allclose(cov, cov_ref, atol=1e-8)
    np.testing.assert_allclose(approx.covariance(K), np.linalg.inv(np.linalg.inv(K) + np.diag(W)), atol=1e-5)


def test_mode_satisfies_the_fixed_point_equation():
    """At the mode f̂ = K ∇log p(y | f̂) (R&W Eq. 3.17)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 1))
    y = (X[:, 0] > 0).astype(float)
    K = se_gram(X, X, lengthscale=0.5, variance=10.0)
    approx = laplace_mode(K, y)
    _, d1, _, _ = probit_log_likelihood_terms(approx.mean, 2 * y - 1)
    np.testing.assert_allclose(approx.mean, K @ d1, atol=1e-6)


def test_likelihood_derivatives_match_finite_differences():
    f = np.linspace(-9, 6, 31)
    ys = np.where(np.arange(31) % 2, 1.0, -1.0)
    h = 1e-5
    terms = [probit_log_likelihood_terms(f + s * h, ys) for s in (1, 0, -1)]
    np.testing.assert_allclose(terms[1][0], norm.logcdf(ys * f), rtol=1e-10)
    for k in range(3):
        fd = (terms[0][k] - terms[2][k]) / (2 * h)
        np.testing.assert_allclose(terms[1][k + 1], fd, rtol=1e-5, atol=1e-6)


def _gram_and_grads(X, theta):
    ls, var = np.exp(theta)
    K = se_gram(X, X, ls, var)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return K, np.stack([K * d2 / ls**2, K])


def test_log_evidence_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (25, 2))
    y = (np.sin(2 * X[:, 0]) + 0.5 * rng.normal(size=25) > 0).astype(float)
    theta = np.log([0.7, 2.5])
    K, dK = _gram_and_grads(X, theta)
    grad = laplace_lml_grad(laplace_mode(K, y), K, y, dK)
    h = 1e-5
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        lp = laplace_mode(_gram_and_grads(X, theta + e)[0], y).log_marginal_likelihood
        lm = laplace_mode(_gram_and_grads(X, theta - e)[0], y).log_marginal_likelihood
        assert grad[j] == pytest.approx((lp - lm) / (2 * h), rel=1e-5, abs=1e-7)


def test_warm_start_reaches_the_same_mode_faster():
    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, (60, 1))
    y = (rng.uniform(size=60) < 0.7).astype(float)
    K = se_gram(X, X, 0.4, 5.0)
    cold = laplace_mode(K, y)
    warm = laplace_mode(K, y, f0=cold.mean)
    np.testing.assert_allclose(warm.mean, cold.mean, atol=1e-7)
    assert warm.n_iter < cold.n_iter
    bad_start = laplace_mode(K, y, f0=np.full(60, 40.0))  # a poor start still converges
    np.testing.assert_allclose(bad_start.mean, cold.mean, atol=1e-6)


def test_empty_data_is_the_prior():
    approx = laplace_mode(np.zeros((0, 0)), np.zeros(0))
    mu, var = predict_latent(approx, np.zeros((0, 3)), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(mu, 0.0)
    np.testing.assert_array_equal(var, [1.0, 2.0, 3.0])
    assert approx.log_marginal_likelihood == 0.0


@pytest.mark.parametrize(
    "K, y, name",
    [
        (np.array([[np.nan]]), [1.0], "K"),
        (np.array([[np.inf]]), [1.0], "K"),
        (np.eye(2), [1.0, 2.0], "y"),
        (np.eye(2), [1.0, np.nan], "y"),
        (np.eye(3), [1.0, 0.0], "K"),
        (np.ones(2), [1.0, 0.0], "K"),
    ],
)
def test_bad_input_names_the_argument(K, y, name):
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        laplace_mode(K, y)


def test_bad_warm_start_names_the_argument():
    with pytest.raises(InvalidInputError, match=r"^f0:"):
        laplace_mode(np.eye(2), [1.0, 0.0], f0=[0.0])


# ----------------------------------------------------------------------------- non-zero prior mean


def test_a_prior_mean_offset_gives_the_mode_evidence_and_predictions_of_f_minus_m():
    """Latent ``m + g``, ``g ~ GP(0, K)`` (R&W §2.7): the mode of ``g`` maximises the exact log
    posterior ``-½ gᵀK⁻¹g + Σ log Φ(y'(m + g))`` (generic optimiser), the evidence is R&W Eq. 3.32
    at ``m + ĝ``, and predictions of ``g`` are ``k*ᵀK⁻¹ĝ`` and R&W Eq. 3.24 with that ``W``."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (10, 2))
    y = (rng.uniform(size=10) < 0.6).astype(float)
    m = rng.normal(0.0, 1.0, 10)
    K = se_gram(X, X) + 1e-8 * np.eye(10)
    approx = laplace_mode(K, y, offset=m)
    ys = 2 * y - 1

    def negative(g):
        return 0.5 * g @ np.linalg.solve(K, g) - norm.logcdf(ys * (m + g)).sum()

    ref = optimize.minimize(negative, np.zeros(10), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(approx.mean, ref.x, atol=1e-6)
    assert approx.log_marginal_likelihood == pytest.approx(
        -ref.fun - 0.5 * np.linalg.slogdet(np.eye(10) + K @ np.diag(approx.sqrt_w**2))[1], abs=1e-6
    )
    h = 1e-4

    def lp(f):
        return norm.logcdf(ys * f)

    W = -(lp(m + approx.mean + h) - 2 * lp(m + approx.mean) + lp(m + approx.mean - h)) / h**2
    np.testing.assert_allclose(approx.sqrt_w**2, W, rtol=1e-5)
    Xs = rng.uniform(-1, 1, (4, 2))
    ks, kss = se_gram(X, Xs), se_gram(Xs, Xs)
    mu, var = predict_latent(approx, ks, np.diag(kss))
    np.testing.assert_allclose(mu, ks.T @ np.linalg.solve(K, approx.mean), atol=1e-6)
    np.testing.assert_allclose(var, np.diag(kss - ks.T @ np.linalg.solve(K + np.diag(1 / W), ks)), atol=1e-7)


def test_a_zero_offset_is_no_offset_and_a_bad_one_is_refused():
    X, y = CASES["2d_n2"]
    K = se_gram(X, X)
    a, b = laplace_mode(K, y), laplace_mode(K, y, offset=np.zeros(2))
    assert np.array_equal(a.mean, b.mean) and a.log_marginal_likelihood == b.log_marginal_likelihood
    with pytest.raises(InvalidInputError, match="offset: expected 2 prior-mean values"):
        laplace_mode(K, y, offset=np.zeros(3))
    with pytest.raises(InvalidInputError, match="offset"):
        laplace_mode(K, y, offset=np.array([0.0, np.nan]))


def test_with_a_vanishing_kernel_the_offset_is_the_whole_latent():
    """K -> 0: ĝ -> 0, the evidence is Σ log Φ(y' m) (the likelihood at the mean function)."""
    X, y = CASES["2d_n2"]
    m = np.array([0.4, -1.1])
    approx = laplace_mode(1e-12 * se_gram(X, X), y, offset=m)
    np.testing.assert_allclose(approx.mean, 0.0, atol=1e-10)
    assert approx.log_marginal_likelihood == pytest.approx(norm.logcdf((2 * y - 1) * m).sum(), abs=1e-9)
