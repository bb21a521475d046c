"""Posterior sample paths: feature approximation of the prior kernel, sample moments against
the exact Gaussian posterior and the probit models' predictive moments, antisymmetry of
preference samples, gradients against finite differences, and the sample maximiser."""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.kernels import (
    Constant,
    Linear,
    Matern32,
    Matern52,
    Preference,
    SquaredExponential,
    contextual_benchmark_kernel,
    refraction_kernel,
)
from visiontune.reproduction.gp.model import PreferenceGP, ProbitGP
from visiontune.reproduction.gp.sampling import prior_features, sample_posterior_functions

N_SAMPLES = 4000


def _uniform(box, n, seed):
    box = np.asarray(box, float)
    return box[:, 0] + np.random.default_rng(seed).random((n, box.shape[0])) * (box[:, 1] - box[:, 0])


# ---- features --------------------------------------------------------------------------

# (kernel, box, stated max |φφᵀ - K| on the box, relative to the prior variance)
FEATURE_CASES = {
    "se_1d": (SquaredExponential([0.3], 1.5), [[-1, 1]], 1e-8),
    "m32_1d": (Matern32([0.3], 1.5), [[-1, 1]], 1e-4),
    "m52_1d": (Matern52([0.3], 1.5), [[-1, 1]], 1e-5),
    "se_2d": (SquaredExponential([0.3, 0.5], 2.0), [[-1, 1], [0, 3]], 1e-8),
    "m32_2d": (Matern32([0.3, 0.5], 2.0), [[-1, 1], [0, 3]], 5e-3),
    "m52_2d": (Matern52([0.3, 0.5], 2.0), [[-1, 1], [0, 3]], 5e-4),
    "se_3d": (SquaredExponential([0.2, 0.2, 0.2], 1.0), [[0, 1]] * 3, 1e-4),
    "m52_3d": (Matern52([0.3, 0.3, 0.3], 1.0), [[0, 1]] * 3, 0.03),
    "refraction": (refraction_kernel(2.0, [1.0, 1.5], 1.0), [[-1, 2], [-4, 4], [-4, 4]], 1e-8),
    "benchmark": (contextual_benchmark_kernel(Matern52, [0.2, 0.2], 1.0, 2), [[0, 1]] * 3, 2e-3),
    "const_plus_se": (Constant(0.5) + SquaredExponential([0.4], 1.0, dims=(1,)), [[0, 1], [0, 1]], 1e-8),
    "se_5d_random_features": (SquaredExponential([0.3] * 5, 1.0), [[0, 1]] * 5, 0.12),
    "se_2d_short_random_features": (SquaredExponential([0.01, 0.01], 1.0), [[0, 1]] * 2, 0.12),
}


@pytest.mark.parametrize("name", list(FEATURE_CASES))
def test_features_reproduce_the_prior_kernel_on_the_box(name):
    kernel, box, tol = FEATURE_CASES[name]
    fm = prior_features(kernel, box, rng=np.random.default_rng(0))
    X = _uniform(box, 150, 1)
    V = fm.values(X)
    assert V.shape == (150, fm.n_features)
    scale = np.max(kernel.diag(X))
    err = np.abs(V @ V.T - kernel(X)) / scale
    assert err.max() < tol
    if name.endswith("random_features"):
        assert err.mean() < 0.02  # Monte-Carlo features: error ~ √(2/M) per entry


def test_short_lengthscale_falls_back_to_random_features_only_when_needed():
    box = [[0, 1], [0, 1]]
    X = _uniform(box, 100, 4)
    short = SquaredExponential([0.01, 0.01], 1.0)
    hilbert = prior_features(short, box)  # no rng: Hilbert-space basis, visibly too coarse
    V = hilbert.values(X)
    assert np.abs(np.sum(V * V, axis=1) - 1.0).max() > 0.05
    fourier = prior_features(short, box, rng=np.random.default_rng(0))
    V = fourier.values(X)
    assert np.abs(np.sum(V * V, axis=1) - 1.0).max() < 0.1
    # a resolvable lengthscale keeps the (deterministic) Hilbert-space basis even with an rng
    ok = SquaredExponential([0.1, 0.1], 1.0)
    np.testing.assert_array_equal(
        prior_features(ok, box, rng=np.random.default_rng(0)).values(X), prior_features(ok, box).values(X)
    )


def test_preference_features_reproduce_the_preference_kernel():
    base = SquaredExponential([0.4, 0.6], 1.3)
    box = [[0, 1], [-1, 1]]
    fm = prior_features(Preference(base), box)
    duels = np.hstack([_uniform(box, 40, 2), _uniform(box, 40, 3)])
    V = fm.values(duels)
    np.testing.assert_allclose(V @ V.T, Preference(base)(duels), atol=1e-8)


@pytest.mark.parametrize(
    "name", ["m52_2d", "se_3d", "refraction", "benchmark", "const_plus_se", "se_5d_random_features"]
)
def test_feature_jacobian_matches_finite_differences(name):
    kernel, box, _ = FEATURE_CASES[name]
    fm = prior_features(kernel, box, n_basis=300, rng=np.random.default_rng(0))
    X = _uniform(box, 4, 5)
    J = fm.jacobian(X)
    h = 1e-6
    for c in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[c] = h
        fd = (fm.values(X + e) - fm.values(X - e)) / (2 * h)
        np.testing.assert_allclose(J[:, :, c], fd, atol=1e-6 * max(1.0, np.abs(fd).max()))


# ---- sample moments ---------------------------------------------------------------------


class GaussianRegression:
    """Exact GP regression y = f + ε, ε ~ N(0, noise): the posterior of f(X) is Gaussian,
    so pathwise conditioning on draws of f(X) must reproduce the exact predictive moments."""

    def __init__(self, kernel, X, y, noise):
        self.kernel, self.X, self.y = kernel, X, y
        self._K = kernel(X)
        self._A = np.linalg.inv(self._K + noise * np.eye(len(y)))

    def training_posterior(self):
        K, A = self._K, self._A
        return K @ A @ self.y, K - K @ A @ K

    def predict_cov(self, Xs):
        ks = self.kernel(Xs, self.X)
        return ks @ self._A @ self.y, self.kernel(Xs) - ks @ self._A @ ks.T


def _assert_moments(draws, mean, cov, extra_tol=1e-3):
    """``draws (S, m)`` against ``N(mean, cov)``: 5 Monte-Carlo standard errors (+ feature error)."""
    S = draws.shape[0]
    emp_mean = draws.mean(axis=0)
    emp_cov = np.cov(draws, rowvar=False)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(emp_mean - mean) <= 5 * sd / np.sqrt(S) + extra_tol)
    se_cov = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / S)
    assert np.all(np.abs(emp_cov - cov) <= 5 * se_cov + extra_tol)


def test_samples_match_the_exact_gaussian_regression_posterior():
    kernel = SquaredExponential([0.3], 1.5)
    box = np.array([[-1.0, 1.0]])
    rng = np.random.default_rng(10)
    X = _uniform(box, 8, 11)
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(8)
    model = GaussianRegression(kernel, X, y, noise=0.05)
    samples = sample_posterior_functions(model, box, N_SAMPLES, rng, n_basis=256)
    Xs = np.linspace(-1, 1, 10)[:, None]
    mean, cov = model.predict_cov(Xs)
    draws = samples.evaluate(Xs)
    assert draws.shape == (N_SAMPLES, 10)
    _assert_moments(draws, mean, cov)


@pytest.mark.parametrize("inference", ["laplace", "ep"])
def test_samples_match_the_probit_gp_posterior(inference):
    kernel = Matern52([0.4, 0.6], 1.2)
    box = np.array([[0.0, 1.0], [-1.0, 1.0]])
    X = _uniform(box, 20, 12)
    y = (np.sin(4 * X[:, 0]) + X[:, 1] > 0.3).astype(float)
    model = ProbitGP(kernel, X, y, inference=inference)
    samples = sample_posterior_functions(model, box, N_SAMPLES, np.random.default_rng(13), n_basis=1024)
    Xs = _uniform(box, 10, 14)
    mean, cov = model.predict_cov(Xs)
    _assert_moments(samples.evaluate(Xs), mean, cov, extra_tol=3e-3)


def test_samples_of_the_refraction_model_match_its_posterior():
    """Linear part in s plus a stationary part in (S, C) (Fauvel & Chalk (contextual BO), Eq. 15)."""
    kernel = refraction_kernel(1.5, [1.5, 2.0], 1.0)
    box = np.array([[-1.0, 2.0], [-4.0, 4.0], [-4.0, 4.0]])
    X = _uniform(box, 25, 15)
    y = (X[:, 0] > 0.1 * (X[:, 1] ** 2 + X[:, 2] ** 2) - 0.5).astype(float)
    model = ProbitGP(kernel, X, y)
    samples = sample_posterior_functions(model, box, N_SAMPLES, np.random.default_rng(16), n_basis=1024)
    Xs = _uniform(box, 10, 17)
    mean, cov = model.predict_cov(Xs)
    _assert_moments(samples.evaluate(Xs), mean, cov, extra_tol=3e-3)


def test_prior_samples_have_the_prior_covariance():
    kernel = contextual_benchmark_kernel(SquaredExponential, [0.3], 2.0, 1)
    box = np.array([[0.0, 1.0], [0.0, 1.0]])
    model = ProbitGP(kernel, np.zeros((0, 2)), np.zeros(0))
    samples = sample_posterior_functions(model, box, N_SAMPLES, np.random.default_rng(18), n_basis=256)
    Xs = _uniform(box, 10, 19)
    _assert_moments(samples.evaluate(Xs), np.zeros(10), kernel(Xs))


def _preference_model(inference="laplace"):
    base = SquaredExponential([0.3, 0.5], 1.0)
    box = np.array([[0.0, 1.0], [0.0, 1.0]])
    A, B = _uniform(box, 15, 20), _uniform(box, 15, 21)

    def util(Z):
        return -((Z[:, 0] - 0.6) ** 2) - (Z[:, 1] - 0.3) ** 2

    y = (util(A) > util(B)).astype(float)
    return PreferenceGP(base, np.hstack([A, B]), y, inference=inference), box


def test_preference_samples_match_the_posterior_of_g_and_of_the_utility():
    model, box = _preference_model()
    samples = sample_posterior_functions(model, box, N_SAMPLES, np.random.default_rng(22), n_basis=1024)
    duels = np.hstack([_uniform(box, 10, 23), _uniform(box, 10, 24)])
    mean, cov = model.predict_cov(duels)
    _assert_moments(samples.evaluate(duels), mean, cov, extra_tol=3e-3)
    options = _uniform(box, 10, 25)
    mu, var = model.predict_value(options)
    draws = samples.values(options)
    cov_f = _value_cov(model, options)
    np.testing.assert_allclose(np.diag(cov_f), var, atol=1e-10)
    _assert_moments(draws, mu, cov_f, extra_tol=3e-3)


def _value_cov(model, options):
    """Joint posterior covariance of the utility at ``options`` from the model's own predictions:
    var f(x_i) from predict_value; cov via the duel variance var g = var f_i + var f_j - 2 cov."""
    _, var = model.predict_value(options)
    i, j = np.meshgrid(np.arange(len(options)), np.arange(len(options)), indexing="ij")
    _, var_g = model.predict(np.hstack([options[i.ravel()], options[j.ravel()]]))
    return (var[:, None] + var[None, :] - var_g.reshape(len(options), -1)) / 2


def test_preference_samples_are_antisymmetric():
    model, box = _preference_model()
    samples = sample_posterior_functions(model, box, 5, np.random.default_rng(26), n_basis=512)
    a, b = _uniform(box, 30, 27), _uniform(box, 30, 28)
    g_ab = samples.evaluate(np.hstack([a, b]))
    g_ba = samples.evaluate(np.hstack([b, a]))
    np.testing.assert_allclose(g_ab, -g_ba, atol=1e-12)
    np.testing.assert_allclose(samples.evaluate(np.hstack([a, a])), 0.0, atol=1e-12)
    assert np.abs(g_ab).max() > 0.1  # not trivially zero


def test_a_single_sample_is_a_callable_function_with_a_gradient():
    model, box = _preference_model()
    f = sample_posterior_functions(model, box, 1, np.random.default_rng(29), n_basis=512)
    duels = np.hstack([_uniform(box, 6, 30), _uniform(box, 6, 31)])
    assert f(duels).shape == (6,) and f.grad(duels).shape == (6, 4)
    np.testing.assert_allclose(f(duels), f[0](duels))
    np.testing.assert_allclose(f[0].value(duels[:, :2]) - f[0].value(duels[:, 2:]), f(duels), atol=1e-12)
    many = sample_posterior_functions(model, box, 3, np.random.default_rng(29), n_basis=512)
    with pytest.raises(InvalidInputError, match="n_samples"):
        many(duels)


@pytest.mark.parametrize("which", ["binary", "refraction", "preference"])
def test_sample_gradients_match_finite_differences(which):
    if which == "preference":
        model, box = _preference_model()
        X = np.hstack([_uniform(box, 5, 32), _uniform(box, 5, 33)])
    else:
        kernel = Matern32([0.4, 0.6], 1.2) if which == "binary" else refraction_kernel(1.0, [1.5, 2.0], 1.0)
        box = np.array([[0.0, 1.0], [-1.0, 1.0]] if which == "binary" else [[-1, 2], [-4, 4], [-4, 4]], float)
        X0 = _uniform(box, 12, 34)
        model = ProbitGP(kernel, X0, (X0[:, 0] > 0.4).astype(float))
        X = _uniform(box, 5, 35)
    samples = sample_posterior_functions(model, box, 3, np.random.default_rng(36), n_basis=512)
    G = samples.evaluate_grad(X)
    h = 1e-6
    for c in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[c] = h
        fd = (samples.evaluate(X + e) - samples.evaluate(X - e)) / (2 * h)
        np.testing.assert_allclose(G[:, :, c], fd, rtol=1e-5, atol=1e-6)


# ---- maximiser --------------------------------------------------------------------------


# ---- bad input ----------------------------------------------------------------------------


def test_bad_input_raises_naming_the_argument():
    kernel = SquaredExponential([0.3, 0.3], 1.0)
    model = ProbitGP(kernel, np.zeros((0, 2)), np.zeros(0))
    rng = np.random.default_rng(0)
    box = [[0, 1], [0, 1]]
    with pytest.raises(InvalidInputError, match="box"):
        sample_posterior_functions(model, [[0, 1, 2]], 1, rng)
    with pytest.raises(InvalidInputError, match="box"):
        sample_posterior_functions(model, [[1, 0], [0, 1]], 1, rng)
    with pytest.raises(InvalidInputError, match="box"):
        sample_posterior_functions(model, [[0, np.nan], [0, 1]], 1, rng)
    with pytest.raises(InvalidInputError, match="n_samples"):
        sample_posterior_functions(model, box, 0, rng)
    with pytest.raises(InvalidInputError, match="rng"):
        sample_posterior_functions(model, box, 1, 42)
    with pytest.raises(InvalidInputError, match="n_basis"):
        sample_posterior_functions(model, box, 1, rng, n_basis=0)
    with pytest.raises(InvalidInputError, match="n_samples"):
        sample_posterior_functions(model, box, "many", rng)
    with pytest.raises(InvalidInputError, match="model"):
        sample_posterior_functions(object(), box, 1, rng)
    with pytest.raises(InvalidInputError, match="kernel"):
        prior_features(SquaredExponential([0.3, 0.3]) * Matern32([0.5, 0.5]), box)
    with pytest.raises(InvalidInputError, match="rng"):
        prior_features(SquaredExponential([0.3] * 4), [[0, 1]] * 4)
    trained = ProbitGP(kernel, np.zeros((2, 2)), np.ones(2))
    with pytest.raises(InvalidInputError, match="box"):
        sample_posterior_functions(trained, [[0, 1]] * 3, 1, rng)
    f = sample_posterior_functions(trained, box, 1, rng, n_basis=64)
    with pytest.raises(InvalidInputError, match="X"):
        f(np.ones((3, 3)))
    with pytest.raises(InvalidInputError, match="X"):
        f(np.array([[np.nan, 0.0]]))


def test_linear_times_linear_and_sums_are_supported():
    kernel = Linear(0.5, dims=(0,)) * Linear(2.0, dims=(1,)) + Constant(0.3)
    box = [[-1, 1], [-1, 1]]
    fm = prior_features(kernel, box)
    X = _uniform(box, 10, 42)
    np.testing.assert_allclose(fm.values(X) @ fm.values(X).T, kernel(X), atol=1e-12)


def test_repeated_training_inputs_do_not_break_the_update():
    """A session repeats lenses: K is then singular; samples must still match the posterior."""
    kernel = SquaredExponential([0.3, 0.4], 1.0)
    box = np.array([[0.0, 1.0], [0.0, 1.0]])
    X = np.repeat(_uniform(box, 8, 43), 3, axis=0)
    y = np.random.default_rng(44).integers(0, 2, size=24).astype(float)
    model = ProbitGP(kernel, X, y)
    samples = sample_posterior_functions(model, box, N_SAMPLES, np.random.default_rng(45), n_basis=1024)
    Xs = np.vstack([X[:4], _uniform(box, 6, 46)])
    mean, cov = model.predict_cov(Xs)
    _assert_moments(samples.evaluate(Xs), mean, cov, extra_tol=3e-3)
