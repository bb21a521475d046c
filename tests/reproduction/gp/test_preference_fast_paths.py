"""PreferenceGP's fast paths (MUC within 50 ms) give the numbers of the plain formulas.

Oracles: the generic probit engine on the 4-term preference kernel (``ProbitGP(Preference(k))``,
Fauvel & Chalk (binary/preferential BO), Eq. 6: the path PreferenceGP used before; ``μ_g(x, x') = μ_f(x) - μ_f(x')`` for
the utility mean), ``predict_value_with_grad`` for the mean-only path, and central finite differences for
every gradient. Kernels: plain SE, the refraction kernel ``θ s s' + k_SE`` (Fauvel & Chalk (contextual BO), Eq. 15, a
sum with a linear part) and the benchmark kernel ``s s' k(x, x')`` (a product); Laplace and EP.
"""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.kernels import (
    Matern52,
    Preference,
    SquaredExponential,
    contextual_benchmark_kernel,
    refraction_kernel,
)
from visiontune.reproduction.gp.model import PreferenceGP, ProbitGP

KERNELS = {
    "se_2d": (SquaredExponential([0.8, 1.3], 2.0), 0),
    "refraction": (refraction_kernel(0.7, [1.5, 1.2], 4.0), 1),
    "benchmark_product": (contextual_benchmark_kernel(Matern52, [0.4, 0.6], 1.5, 2), 1),
}


def _data(kernel_name, n=40, seed=0):
    """``n`` duels between random options; contextual kernels share the context within a duel (Fauvel & Chalk
    (contextual BO), Eq. 11)."""
    _, c = KERNELS[kernel_name]
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(-2, 2, (n, 2)), rng.uniform(-2, 2, (n, 2))
    if c:
        s = rng.uniform(0, 1, (n, 1))
        x1, x2 = np.hstack([s, x1]), np.hstack([s, x2])

    def utility(o):
        return -np.sum((o[:, -2:] - 0.5) ** 2, axis=1)

    y = (rng.random(n) < 1 / (1 + np.exp(-2 * (utility(x1) - utility(x2))))).astype(float)
    return np.hstack([x1, x2]), y


def _models(kernel_name, inference, n=40):
    base, _ = KERNELS[kernel_name]
    duels, y = _data(kernel_name, n)
    return PreferenceGP(base, duels, y, inference), ProbitGP(Preference(base), duels, y, inference)


def _fd(fn, X, h=1e-6):
    """Central differences of ``fn(X) -> tuple of (m,) arrays``, one (m, d) array per output."""
    outs = [np.zeros(X.shape) for _ in fn(X)]
    for j in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[j] = h
        for out, p, m in zip(outs, fn(X + e), fn(X - e)):
            out[:, j] = (p - m) / (2 * h)
    return outs


def _test_duels(kernel_name, m=23, seed=3):
    _, c = KERNELS[kernel_name]
    rng = np.random.default_rng(seed)
    o1, o2 = rng.uniform(-2.5, 2.5, (m, 2)), rng.uniform(-2.5, 2.5, (m, 2))
    if c:
        o1 = np.hstack([rng.uniform(0, 1, (m, 1)), o1])
        o2 = np.hstack([rng.uniform(0, 1, (m, 1)), o2])
    return np.hstack([o1, o2])


@pytest.mark.parametrize("inference", ["laplace", "ep"])
@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_duel_predictions_match_the_four_term_kernel(kernel_name, inference):
    fast, slow = _models(kernel_name, inference)
    for m in (5, 23):  # below and above the trmm switch of laplace.reduction (16 columns)
        duels = _test_duels(kernel_name, m)
        for a, b in zip(fast.predict(duels), slow.predict(duels)):
            assert np.allclose(a, b, rtol=1e-9, atol=1e-11)
        for a, b in zip(fast.predict_with_grad(duels), slow.predict_with_grad(duels)):
            assert np.allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_duel_gradients_match_finite_differences(kernel_name):
    fast, _ = _models(kernel_name, "laplace")
    duels = _test_duels(kernel_name, 7)
    _, _, dmu, dvar = fast.predict_with_grad(duels)
    fd_mu, fd_var = _fd(fast.predict, duels)
    assert np.allclose(dmu, fd_mu, atol=1e-6)
    assert np.allclose(dvar, fd_var, atol=1e-6)


@pytest.mark.parametrize("inference", ["laplace", "ep"])
@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_challenge_matches_the_duel_rows_and_finite_differences(kernel_name, inference):
    fast, slow = _models(kernel_name, inference)
    duels = _test_duels(kernel_name, 20)
    D = duels.shape[1] // 2
    champion, X = duels[0, :D], duels[:, D:]
    rows = np.hstack([np.broadcast_to(champion, X.shape), X])
    duel = fast.challenge(champion)
    mu, var = duel.predict(X)
    smu, svar, sdmu, sdvar = slow.predict_with_grad(rows)
    assert np.allclose(mu, smu, rtol=1e-9, atol=1e-11) and np.allclose(var, svar, rtol=1e-9, atol=1e-11)
    for m in (6, 20):
        fmu, fvar, fdmu, fdvar = duel.predict_with_grad(X[:m])
        assert np.allclose(fmu, smu[:m], rtol=1e-9, atol=1e-11)
        assert np.allclose(fvar, svar[:m], rtol=1e-9, atol=1e-11)
        assert np.allclose(fdmu, sdmu[:m, D:], rtol=1e-9, atol=1e-11)  # the challenger's columns only
        assert np.allclose(fdvar, sdvar[:m, D:], rtol=1e-9, atol=1e-11)
    fd_mu, fd_var = _fd(duel.predict, X[:6])
    _, _, dmu, dvar = duel.predict_with_grad(X[:6])
    assert np.allclose(dmu, fd_mu, atol=1e-6) and np.allclose(dvar, fd_var, atol=1e-6)
    # the duel of the champion with itself is certain: g(x*, x*) = 0
    mu0, var0 = duel.predict(champion[None, :])
    assert abs(mu0[0]) < 1e-10 and var0[0] < 1e-10


@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_utility_mean_only_matches_predict_value_and_finite_differences(kernel_name):
    fast, slow = _models(kernel_name, "laplace")
    X = _test_duels(kernel_name, 11)[:, : fast.duels.shape[1] // 2]
    mu_full, _, dmu_full, _ = fast.predict_value_with_grad(X)
    mu, dmu = fast.predict_value_mean_with_grad(X)
    assert np.allclose(mu, mu_full, rtol=1e-10, atol=1e-12) and np.allclose(dmu, dmu_full, rtol=1e-10, atol=1e-12)
    assert np.allclose(fast.predict_value_mean(X), mu, rtol=1e-12, atol=1e-14)
    assert np.allclose(dmu, _fd(lambda Z: (fast.predict_value_mean(Z),), X)[0], atol=1e-6)
    # μ_g(x, x') = μ_f(x) - μ_f(x') against the 4-term engine
    rows = np.hstack([X[:-1], X[1:]])
    assert np.allclose(mu[:-1] - mu[1:], slow.predict(rows)[0], rtol=1e-9, atol=1e-11)


def test_fast_paths_without_data_are_the_prior():
    base = SquaredExponential([0.5, 0.9], 2.0)
    model = PreferenceGP(base, np.zeros((0, 4)), [])
    rng = np.random.default_rng(0)
    X, champion = rng.uniform(-1, 1, (5, 2)), np.array([0.1, -0.2])
    assert np.array_equal(model.predict_value_mean(X), np.zeros(5))
    mu, dmu = model.predict_value_mean_with_grad(X)
    assert np.array_equal(mu, np.zeros(5)) and np.array_equal(dmu, np.zeros((5, 2)))
    mu, var, dmu, dvar = model.challenge(champion).predict_with_grad(X)
    prior = 2 * 2.0 - 2 * base(champion[None, :], X)[0]  # k(x*, x*) + k(x, x) - 2 k(x*, x)
    assert np.array_equal(mu, np.zeros(5)) and np.allclose(var, prior)
    assert np.allclose(dvar, _fd(lambda Z: model.challenge(champion).predict(Z), X)[1], atol=1e-6)


def test_bad_input_names_the_argument():
    fast, _ = _models("se_2d", "laplace", n=10)
    with pytest.raises(InvalidInputError, match="champion"):
        fast.challenge([0.0, 1.0, 2.0])
    with pytest.raises(InvalidInputError, match="champion"):
        fast.challenge([np.nan, 1.0])
    with pytest.raises(InvalidInputError, match="X"):
        fast.challenge([0.0, 1.0]).predict([[0.0, 1.0, 2.0]])
    with pytest.raises(InvalidInputError, match="duels"):
        fast.predict([[0.0, 1.0, 2.0]])
    with pytest.raises(InvalidInputError, match="X"):
        fast.predict_value_mean([[np.inf, 0.0]])
