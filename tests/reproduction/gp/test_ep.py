"""Expectation propagation (R&W Alg. 3.5/3.6, Eq. 3.65, Eq. 5.27) against the exact posterior.

Oracle: p(f | y) ∝ N(f; 0, K) ∏ Φ(y'_i f_i) integrated numerically (scipy.integrate for one
latent, a dense tensor grid for two), plus the closed form of the evidence as a Gaussian
orthant probability Z = P(y' ∘ (f + ε) > 0), f + ε ~ N(0, K + I), and finite differences.
EP is known to be very accurate for the probit likelihood, and exact for a single site.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal, norm

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.ep import ep_lml_grad, expectation_propagation
from visiontune.reproduction.gp.laplace import predict_latent


def se_gram(X1, X2, lengthscale=0.8, variance=1.3):
    d2 = ((X1[:, None, :] - X2[None, :, :]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2 / lengthscale**2)


def exact_moments_1d(k, y):
    ys = 2 * y - 1

    def dens(f):
        return norm.pdf(f, scale=np.sqrt(k)) * norm.cdf(ys * f)

    z = integrate.quad(dens, -np.inf, np.inf, epsabs=1e-13)[0]
    m1 = integrate.quad(lambda f: f * dens(f), -np.inf, np.inf, epsabs=1e-13)[0] / z
    m2 = integrate.quad(lambda f: f * f * dens(f), -np.inf, np.inf, epsabs=1e-13)[0] / z
    return z, m1, m2 - m1**2


def exact_moments_grid(K, y, points=801, width=9.0):
    """Exact log Z, mean and covariance of the 2-latent posterior on a dense grid (trapezoid rule)."""
    sd = np.sqrt(np.diag(K))
    g = [np.linspace(-width * s, width * s, points) for s in sd]
    F1, F2 = np.meshgrid(*g, indexing="ij")
    F = np.stack([F1, F2], -1)
    dens = multivariate_normal(np.zeros(2), K).pdf(F) * norm.cdf((2 * y[0] - 1) * F1) * norm.cdf((2 * y[1] - 1) * F2)

    def integ(A):
        return np.trapezoid(np.trapezoid(A, g[1], axis=1), g[0])

    z = integ(dens)
    mean = np.array([integ(F1 * dens), integ(F2 * dens)]) / z
    c11 = integ((F1 - mean[0]) ** 2 * dens) / z
    c22 = integ((F2 - mean[1]) ** 2 * dens) / z
    c12 = integ((F1 - mean[0]) * (F2 - mean[1]) * dens) / z
    return np.log(z), mean, np.array([[c11, c12], [c12, c22]])


def orthant_log_z(K, y):
    """Closed form: Z = P(y'_i (f_i + ε_i) > 0 ∀i) with f + ε ~ N(0, K + I)."""
    D = np.diag(2 * y - 1)
    cov = D @ (K + np.eye(len(y))) @ D
    return np.log(multivariate_normal(np.zeros(len(y)), cov).cdf(np.zeros(len(y))))


@pytest.mark.parametrize("y", [1.0, 0.0])
def test_single_site_ep_is_exact(y):
    X = np.array([[0.3]])
    K = se_gram(X, X)
    approx = expectation_propagation(K, [y])
    z, m, v = exact_moments_1d(K[0, 0], y)
    assert approx.log_marginal_likelihood == pytest.approx(np.log(z), abs=1e-8)
    assert approx.mean[0] == pytest.approx(m, abs=1e-8)
    assert approx.covariance(K)[0, 0] == pytest.approx(v, abs=1e-8)


CASES = {
    "1d_n2": (np.array([[-0.4], [0.5]]), np.array([1.0, 0.0])),
    "2d_n2": (np.array([[0.1, -0.2], [0.6, 0.4]]), np.array([1.0, 1.0])),
    "1d_n2_close": (np.array([[0.0], [0.05]]), np.array([0.0, 1.0])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_site_ep_matches_the_exact_posterior(case):
    X, y = CASES[case]
    K = se_gram(X, X)
    approx = expectation_propagation(K, y)
    log_z, mean, cov = exact_moments_grid(K, y)
    assert log_z == pytest.approx(orthant_log_z(K, y), abs=1e-5)  # the two oracles agree
    assert approx.log_marginal_likelihood == pytest.approx(log_z, abs=2e-3)
    np.testing.assert_allclose(approx.mean, mean, atol=1e-3)
    np.testing.assert_allclose(approx.covariance(K), cov, atol=1e-2)


def test_ep_predictive_moments_match_exact_predictive():
    """Exact predictive: E[f*] = k*ᵀK⁻¹E[f], V[f*] = k** - k*ᵀK⁻¹k* + k*ᵀK⁻¹ Cov[f] K⁻¹k* (R&W Eq. 3.60 form)."""
    X, y = CASES["1d_n2"]
    Xs = np.array([[-1.0], [0.0], [1.2]])
    K = se_gram(X, X)
    ks, kss = se_gram(X, Xs), se_gram(Xs, Xs)
    mu, var = predict_latent(expectation_propagation(K, y), ks, np.diag(kss))
    _, mean, cov = exact_moments_grid(K, y)
    A = np.linalg.solve(K, ks)
    mu_ref = A.T @ mean
    var_ref = np.diag(kss) - np.einsum("ij,ij->j", ks, A) + np.einsum("ij,ik,kj->j", A, cov, A)
    np.testing.assert_allclose(mu, mu_ref, atol=1e-3)
    np.testing.assert_allclose(var, var_ref, atol=1e-2)


def test_ep_is_more_accurate_than_laplace_for_evidence():
    from visiontune.reproduction.gp.laplace import laplace_mode

    X, y = CASES["2d_n2"]
    K = se_gram(X, X, variance=4.0)
    exact = orthant_log_z(K, y)
    ep_err = abs(expectation_propagation(K, y).log_marginal_likelihood - exact)
    la_err = abs(laplace_mode(K, y).log_marginal_likelihood - exact)
    assert ep_err < la_err


def test_damping_does_not_change_the_fixed_point():
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, (30, 1))
    y = (rng.uniform(size=30) < 0.5).astype(float)
    K = se_gram(X, X, 0.5, 3.0)
    a = expectation_propagation(K, y, damping=1.0)
    b = expectation_propagation(K, y, damping=0.4)
    np.testing.assert_allclose(a.mean, b.mean, atol=1e-6)
    assert a.log_marginal_likelihood == pytest.approx(b.log_marginal_likelihood, abs=1e-8)


def test_warm_start_sites_converge_faster_to_the_same_result():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, (30, 1))
    y = (rng.uniform(size=30) < 0.5).astype(float)
    K = se_gram(X, X, 0.5, 3.0)
    cold = expectation_propagation(K, y)
    warm = expectation_propagation(K, y, sites=(cold.tau_site, cold.nu_site))
    assert warm.n_iter < cold.n_iter
    np.testing.assert_allclose(warm.mean, cold.mean, atol=1e-7)


def test_log_evidence_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, (20, 2))
    y = (np.cos(2 * X[:, 1]) + 0.5 * rng.normal(size=20) > 0).astype(float)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)

    def gram(theta):
        ls, var = np.exp(theta)
        K = var * np.exp(-0.5 * d2 / ls**2)
        return K, np.stack([K * d2 / ls**2, K])

    theta = np.log([0.6, 2.0])
    K, dK = gram(theta)
    grad = ep_lml_grad(expectation_propagation(K, y, tol=1e-12), K, y, dK)
    h = 1e-5
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        lp = expectation_propagation(gram(theta + e)[0], y, tol=1e-12).log_marginal_likelihood
        lm = expectation_propagation(gram(theta - e)[0], y, tol=1e-12).log_marginal_likelihood
        assert grad[j] == pytest.approx((lp - lm) / (2 * h), rel=1e-4, abs=1e-6)


def test_empty_data_is_the_prior():
    approx = expectation_propagation(np.zeros((0, 0)), [])
    assert approx.n == 0 and approx.log_marginal_likelihood == 0.0


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(K=np.array([[np.nan]]), y=[1.0]), "K"),
        (dict(K=np.eye(2), y=[1.0, -1.0]), "y"),
        (dict(K=np.eye(3), y=[1.0, 0.0]), "K"),
        (dict(K=np.eye(2), y=[1.0, 0.0], damping=0.0), "damping"),
        (dict(K=np.eye(2), y=[1.0, 0.0], damping=1.5), "damping"),
        (dict(K=np.eye(2), y=[1.0, 0.0], sites=(np.zeros(3), np.zeros(3))), "sites"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        expectation_propagation(**kwargs)
