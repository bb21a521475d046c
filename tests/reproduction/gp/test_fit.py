"""Hyperparameter fitting by maximum approximate evidence (multistart L-BFGS-B).

Oracle: answers simulated from a known GP draw (the true lengthscale is known), and the
evidence itself (the fit must not be worse than its start, nor than a grid search).
"""

import numpy as np
import pytest
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.fit import fit_hyperparameters, log_evidence
from visiontune.reproduction.gp.kernels import Matern32, SquaredExponential, refraction_kernel


def simulate_gp_answers(kernel, X, rng):
    K = kernel(X) + 1e-8 * np.eye(len(X))
    f = np.linalg.cholesky(K) @ rng.normal(size=len(X))
    return (rng.uniform(size=len(X)) < ndtr(f)).astype(float)


def gp_draw(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, 1))
    true = SquaredExponential([0.15], 2.0)
    return X, simulate_gp_answers(true, X, rng), true


def check_lengthscale_recovery(X, y, true):
    start = SquaredExponential([1.0], 1.0)
    fitted = fit_hyperparameters(start, X, y, n_starts=2, rng=np.random.default_rng(1))
    assert isinstance(fitted, SquaredExponential)
    assert 0.5 < fitted.lengthscales[0] / true.lengthscales[0] < 2.0
    ev_start, ev_fit = log_evidence(start, X, y), log_evidence(fitted, X, y)
    assert ev_fit > ev_start + 10.0
    assert ev_fit >= log_evidence(true, X, y) - 1e-6  # the maximiser beats the truth on its own data
    # A local maximum: nearby lengthscales have lower evidence.
    for factor in (0.8, 1.25):
        nearby = fitted.with_params(fitted.params + np.array([np.log(factor), 0.0]))
        assert log_evidence(nearby, X, y) < ev_fit


@pytest.mark.slow
def test_recovers_the_lengthscale_from_1000_answers():
    """The lengthscale recovered from 1000 answers: ~5 s single-threaded, much longer on a loaded 2-core box."""
    check_lengthscale_recovery(*gp_draw(1000))


def test_recovers_the_lengthscale_from_300_answers():
    check_lengthscale_recovery(*gp_draw(300, seed=3))


@pytest.fixture(scope="module")
def small_data():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (60, 2))
    y = simulate_gp_answers(SquaredExponential([0.4, 2.0], 3.0), X, rng)
    return X, y


@pytest.mark.parametrize("inference", ["laplace", "ep"])
def test_fit_beats_a_grid_search_and_its_start(small_data, inference):
    X, y = small_data
    start = Matern32([1.0, 1.0], 1.0)
    fitted = fit_hyperparameters(start, X, y, inference=inference, n_starts=3, rng=3)
    ev = log_evidence(fitted, X, y, inference=inference)
    assert ev > log_evidence(start, X, y, inference=inference)
    grid = np.log([0.1, 0.3, 1.0, 3.0])
    best_grid = max(
        log_evidence(start.with_params([a, b, c]), X, y, inference=inference)
        for a in grid
        for b in grid
        for c in np.log([0.3, 1.0, 3.0, 10.0])
    )
    assert ev >= best_grid - 1e-6
    assert np.all(fitted.params >= start.bounds[:, 0] - 1e-12)
    assert np.all(fitted.params <= start.bounds[:, 1] + 1e-12)


def test_fit_is_reproducible_for_a_seed(small_data):
    X, y = small_data
    start = SquaredExponential([1.0, 1.0], 1.0)
    a = fit_hyperparameters(start, X, y, n_starts=3, rng=np.random.default_rng(7))
    b = fit_hyperparameters(start, X, y, n_starts=3, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.params, b.params)


def test_refraction_kernel_fit_improves_evidence():
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.uniform(-1, 2, 150), rng.uniform(-4, 4, (150, 2))])
    blur2 = 0.5 * ((X[:, 1] - 1) ** 2 + (X[:, 1] - 1 + X[:, 2] + 0.5) ** 2)
    p = 1 / 26 + 25 / 26 * ndtr(5 * (X[:, 0] - np.log10(1 + blur2)))
    y = (rng.uniform(size=150) < p).astype(float)
    start = refraction_kernel(1.0, [1.0, 1.0], 1.0)
    fitted = fit_hyperparameters(start, X, y, n_starts=2, rng=5)
    assert fitted.param_names == start.param_names
    assert log_evidence(fitted, X, y) > log_evidence(start, X, y)


def test_preference_fit_returns_the_utility_kernel():
    rng = np.random.default_rng(6)
    a, b = rng.uniform(-1, 1, (50, 1)), rng.uniform(-1, 1, (50, 1))

    def u(x):
        return np.sin(4 * x[:, 0])

    y = (rng.uniform(size=50) < ndtr(3 * (u(a) - u(b)))).astype(float)
    duels = np.hstack([a, b])
    start = SquaredExponential([2.0], 1.0)
    fitted = fit_hyperparameters(start, duels, y, preference=True, n_starts=2, rng=0)
    assert isinstance(fitted, SquaredExponential)
    assert log_evidence(fitted, duels, y, preference=True) > log_evidence(start, duels, y, preference=True)
    assert fitted.lengthscales[0] < 2.0  # a wiggly utility needs a shorter lengthscale than the start


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(inference="variational"), "inference"),
        (dict(n_starts=0), "n_starts"),
        (dict(n_starts=2.5), "n_starts"),
        (dict(rng="seed"), "rng"),
        (dict(X=[[0.0], [np.nan]]), "X"),
        (dict(y=[1.0, 3.0]), "y"),
        (dict(y=[1.0]), "y"),
        (dict(kernel="se"), "kernel"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    args = dict(kernel=SquaredExponential([1.0]), X=[[0.0], [1.0]], y=[1.0, 0.0], rng=0)
    args.update(kwargs)
    kernel, X, y = args.pop("kernel"), args.pop("X"), args.pop("y")
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        fit_hyperparameters(kernel, X, y, **args)


def test_rng_is_required():
    with pytest.raises(TypeError):
        fit_hyperparameters(SquaredExponential([1.0]), [[0.0]], [1.0])
