"""Robustness of probit GP inference on awkward data (hypothesis).

Datasets up to n = 400 in 1 to 6 dims, all answers equal, repeated points, lengthscales
1e-3..1e3: inference must never raise, outputs must be finite, variances non-negative.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visiontune.reproduction.gp.kernels import Matern32, SquaredExponential
from visiontune.reproduction.gp.model import PreferenceGP, ProbitGP


@st.composite
def datasets(draw, max_n=400):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(0, max_n))
    d = draw(st.integers(1, 6))
    X = rng.uniform(-1, 1, (n, d))
    if n and draw(st.booleans()):  # repeated points
        X = X[rng.integers(0, max(1, n // 4), size=n)]
    labels = draw(st.sampled_from(["random", "ones", "zeros", "checker"]))
    y = {
        "random": (rng.uniform(size=n) < 0.5),
        "ones": np.ones(n),
        "zeros": np.zeros(n),
        "checker": np.arange(n) % 2,  # contradictory answers on repeated points
    }[labels].astype(float)
    lengthscale = 10 ** draw(st.floats(-3, 3))
    variance = 10 ** draw(st.floats(-2, 2))
    cls = draw(st.sampled_from([SquaredExponential, Matern32]))
    return cls([lengthscale] * d, variance), X, y


def check_outputs(model, Xs):
    mu, var = model.predict(Xs)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(var)) and np.all(var >= 0)
    mu, var, dmu, dvar = model.predict_with_grad(Xs)
    assert np.all(np.isfinite(dmu)) and np.all(np.isfinite(dvar))
    _, cov = model.predict_cov(Xs)
    assert np.all(np.isfinite(cov)) and np.all(np.diag(cov) >= -1e-9)
    assert np.isfinite(model.log_marginal_likelihood())
    assert np.all(np.isfinite(model.log_marginal_likelihood_grad()))
    mean, cov = model.training_posterior()
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))


SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(datasets())
def test_laplace_never_fails(data):
    kernel, X, y = data
    model = ProbitGP(kernel, X, y, "laplace")
    Xs = np.random.default_rng(0).uniform(-1, 1, (7, X.shape[1]))
    check_outputs(model, Xs)


@SETTINGS
@given(datasets(max_n=200))
def test_ep_never_fails(data):
    kernel, X, y = data
    model = ProbitGP(kernel, X, y, "ep")
    Xs = np.random.default_rng(0).uniform(-1, 1, (7, X.shape[1]))
    check_outputs(model, Xs)


@settings(max_examples=10, deadline=None)
@given(datasets(max_n=100), st.sampled_from(["laplace", "ep"]))
def test_preference_never_fails(data, inference):
    kernel, X, y = data
    n, d = X.shape
    rng = np.random.default_rng(n)
    duels = np.hstack([X, X[rng.permutation(n)] if n else X])  # includes ties x == x'
    model = PreferenceGP(kernel, duels, y, inference)
    Xs = rng.uniform(-1, 1, (5, d))
    mu, var, dmu, dvar = model.predict_value_with_grad(Xs)
    assert np.all(np.isfinite(mu)) and np.all(var >= 0) and np.all(np.isfinite(dvar))
    check_outputs(model, np.hstack([Xs, Xs[::-1]]))


@pytest.mark.parametrize("inference", ["laplace", "ep"])
@pytest.mark.parametrize("lengthscale", [1e-3, 1e3])
@pytest.mark.parametrize("labels", ["ones", "checker"])
def test_extreme_corners(inference, lengthscale, labels):
    """The corners hypothesis may not reach: n = 400 (200 for EP) repeated points, extreme lengthscales."""
    rng = np.random.default_rng(0)
    n = 400 if inference == "laplace" else 200
    X = rng.uniform(-1, 1, (n // 8, 6))[rng.integers(0, n // 8, size=n)]
    y = np.ones(n) if labels == "ones" else (np.arange(n) % 2).astype(float)
    model = ProbitGP(SquaredExponential([lengthscale] * 6, 100.0), X, y, inference)
    check_outputs(model, rng.uniform(-1, 1, (5, 6)))
    if labels == "ones":  # every answer correct: the latent mean is positive at the data
        assert np.all(model.predict(X[:5])[0] > 0)
