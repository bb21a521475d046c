"""Kernel selection of the benchmark functions (Fauvel & Chalk (contextual BO) §4, table S1): the exact GP regression
likelihood against scipy's Gaussian density and finite differences, the predictive mean against a
direct solve, and the stored choices against a recomputation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from visiontune.errors import InvalidInputError
from visiontune.reproduction import kernel_selection as KS
from visiontune.reproduction.benchmark_functions import FUNCTIONS, get_function


def _data(n=25, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sin(3 * X[:, 0]) + X[:, -1] ** 2 + 0.05 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("kind", KS.KINDS)
def test_log_marginal_likelihood_is_the_gaussian_density_and_its_gradient_is_exact(kind):
    X, y = _data()
    kernel = KS.kernel_of(kind, [0.3, 0.7], 1.3)
    log_noise = np.log(0.02)
    value, grad = KS.log_marginal_likelihood(kernel, log_noise, X, y)
    cov = kernel(X) + 0.02 * np.eye(len(y))
    assert value == pytest.approx(multivariate_normal(np.zeros(len(y)), cov).logpdf(y), rel=1e-10)
    theta = np.append(kernel.params, log_noise)  # log-lengthscales, log-variance, log noise
    h, fd = 1e-6, []
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        up = KS.log_marginal_likelihood(kernel.with_params((theta + e)[:-1]), (theta + e)[-1], X, y, grad=False)
        dn = KS.log_marginal_likelihood(kernel.with_params((theta - e)[:-1]), (theta - e)[-1], X, y, grad=False)
        fd.append((up - dn) / (2 * h))
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_fixed_variance_is_not_a_parameter():
    k = KS.kernel_of("matern52", [0.2, 0.4], 1.0, fixed_variance=True)
    assert k.params.size == 2 and k.variance == 1.0
    X, y = _data()
    _, grad = KS.log_marginal_likelihood(k, np.log(1e-3), X, y)
    assert grad.shape == (3,)


def test_predictive_mean_is_the_direct_solve():
    X, y = _data(30)
    fit = KS.RegressionFit("se", np.array([0.25, 0.5]), 1.0, 1e-3, 0.0)
    Xs = np.random.default_rng(1).random((7, 2))
    K = fit.kernel(X) + 1e-3 * np.eye(30)
    np.testing.assert_allclose(KS.predict_mean(fit, X, y, Xs), fit.kernel(Xs, X) @ np.linalg.solve(K, y), rtol=1e-8)


def test_fit_recovers_the_lengthscale_of_a_gp_sample():
    # oracle: a draw from a GP with SE lengthscale 0.2 (variance 1, noise 1e-4); the ML estimate is close
    rng = np.random.default_rng(3)
    X = rng.random((200, 1))
    true = KS.kernel_of("se", [0.2], 1.0)
    y = rng.multivariate_normal(np.zeros(200), true(X) + 1e-4 * np.eye(200))
    fit = KS.fit_regression("se", X, y)
    assert fit.lengthscales[0] == pytest.approx(0.2, rel=0.25)
    assert fit.variance == 1.0
    assert fit.log_likelihood >= KS.log_marginal_likelihood(true, np.log(1e-4), X, y, grad=False) - 1e-6


def test_bad_inputs_name_the_argument():
    X, y = _data()
    with pytest.raises(InvalidInputError, match="kind"):
        KS.kernel_of("rbf", [0.1])
    with pytest.raises(InvalidInputError, match="y"):
        KS.log_marginal_likelihood(KS.kernel_of("se", [0.1, 0.1]), 0.0, X, y[:-1])
    with pytest.raises(InvalidInputError, match="n_train"):
        KS.design(get_function("forrester"), n_train=1)
    with pytest.raises(InvalidInputError, match="choices"):
        KS.agreement_with_table_s1({})


def test_stored_table_covers_every_function_and_reports_the_agreement_with_table_s1():
    table = json.loads((KS.DEFAULT_OUTPUT).read_text(encoding="utf-8"))
    assert table["command"] == "python -m visiontune.reproduction.kernel_selection"
    assert (table["n_train"], table["n_test"]) == (1000, 3000)
    choices = KS.load_choices()
    assert set(choices) == set(FUNCTIONS)
    for name, c in choices.items():
        assert c.kind in KS.KINDS and c.lengthscales.shape == (get_function(name).dimension,)
        assert c.kind == min(c.rmse, key=c.rmse.get)  # the kept kind has the lowest test RMSE
    rate, differ = KS.agreement_with_table_s1({n: c.kind for n, c in choices.items()})
    assert rate == pytest.approx(table["agreement_with_table_s1"]) and differ == table["differ_from_table_s1"]
    assert rate == pytest.approx(1 - sum(get_function(n).kernel != c.kind for n, c in choices.items()) / len(choices))


def _clear_winners(margin=2.0):
    """Stored functions of dimension <= 2 whose winner's RMSE beats the runner-up by ``margin``x."""
    out = []
    for name, c in KS.load_choices().items():
        r = sorted(c.rmse.values())
        if get_function(name).dimension <= 2 and r[1] > margin * r[0]:
            out.append(name)
    return out


def test_stored_choice_reproduces_on_a_small_recomputation():
    names = _clear_winners()[:3]
    assert names, "no function with a clear winner in the stored table"
    choices = KS.load_choices()
    for name in names:
        small = KS.select_kernel(name, n_train=250, n_test=800, seed=7)  # other points, fewer of them
        assert small.kind == choices[name].kind, (name, small.rmse, choices[name].rmse)


@pytest.mark.slow
def test_stored_entry_is_exactly_the_protocols_output():
    stored = KS.load_choices()["forrester"]
    again = KS.select_kernel("forrester")
    assert again.kind == stored.kind
    np.testing.assert_allclose(again.lengthscales, stored.lengthscales, rtol=1e-6)
    assert again.rmse == pytest.approx(stored.rmse, rel=1e-6)
