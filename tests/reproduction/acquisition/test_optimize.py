"""The acquisition optimiser: finds the global max of smooth multimodal functions on boxes."""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.acquisition.optimize import as_box, maximize, sobol_points


def _bumps(X):
    """Sum of Gaussian bumps with a narrow (sd 0.1) global max at (0.7, -0.3, ...); values and gradients."""
    X = np.atleast_2d(X)
    c1 = np.full(X.shape[1], 0.7)
    c1[1::2] = -0.3
    c2 = -0.5 * np.ones(X.shape[1])
    d1, d2 = X - c1, X - c2
    e1 = 1.2 * np.exp(-0.5 * np.sum(d1**2, 1) / 0.1**2)
    e2 = 1.0 * np.exp(-0.5 * np.sum(d2**2, 1) / 0.4**2)
    v = e1 + e2 + 0.1 * np.sin(5 * X).sum(1)
    g = -e1[:, None] * d1 / 0.1**2 - e2[:, None] * d2 / 0.4**2 + 0.5 * np.cos(5 * X)
    return v, g


@pytest.mark.parametrize("grad", [True, False])
def test_finds_the_grid_maximum_in_1d(grad):
    box = [[-2.0, 2.0]]
    grid = np.linspace(-2, 2, 200001)[:, None]
    grid_max = _bumps(grid)[0].max()
    fn = _bumps if grad else (lambda X: _bumps(X)[0])
    x, v = maximize(fn, box, np.random.default_rng(0), grad=grad)
    assert v >= grid_max - 0.01 * abs(grid_max)
    assert v == pytest.approx(_bumps(x)[0][0])
    assert abs(x[0] - 0.7) < 0.02


def test_finds_the_grid_maximum_in_2d():
    box = [[-2.0, 2.0], [-1.0, 1.0]]
    g1, g2 = np.meshgrid(np.linspace(-2, 2, 1601), np.linspace(-1, 1, 801))
    grid_max = _bumps(np.column_stack([g1.ravel(), g2.ravel()]))[0].max()
    x, v = maximize(_bumps, box, np.random.default_rng(1))
    assert v >= grid_max - 0.01 * abs(grid_max)
    assert np.allclose(x, [0.7, -0.3], atol=0.02)


@pytest.mark.parametrize("d", [1, 3, 6])
def test_result_is_inside_the_box_and_deterministic(d):
    box = np.column_stack([-np.arange(1, d + 1), np.arange(1, d + 1) * 0.5])
    x1, v1 = maximize(_bumps, box, np.random.default_rng(7))
    x2, v2 = maximize(_bumps, box, np.random.default_rng(7))
    assert x1.shape == (d,)
    assert np.all(x1 >= box[:, 0]) and np.all(x1 <= box[:, 1])
    assert np.array_equal(x1, x2) and v1 == v2


def test_never_worse_than_the_best_candidate_and_fixed_sides_stay_fixed():
    box = [[-1.0, 1.0], [0.25, 0.25]]
    cands = sobol_points(box, 512, np.random.default_rng(3))
    assert np.all(cands[:, 1] == 0.25)
    x, v = maximize(lambda X: _bumps(X)[0], box, np.random.default_rng(3), grad=False, n_starts=0)
    assert v == pytest.approx(_bumps(cands)[0].max())
    x, v = maximize(_bumps, box, np.random.default_rng(3))
    assert x[1] == 0.25 and v >= _bumps(cands)[0].max()


def test_sobol_points_are_reproducible_and_spread():
    a = sobol_points([[0, 1], [0, 1]], 256, np.random.default_rng(5))
    b = sobol_points([[0, 1], [0, 1]], 256, np.random.default_rng(5))
    assert np.array_equal(a, b)
    counts = np.histogram2d(a[:, 0], a[:, 1], bins=4, range=[[0, 1], [0, 1]])[0]
    assert np.all(counts == 16)  # a scrambled Sobol set of 2^8 points is stratified


def test_bad_inputs_name_the_argument():
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidInputError, match="box"):
        maximize(_bumps, [[1.0, 0.0]], rng)
    with pytest.raises(InvalidInputError, match="box"):
        as_box("box", [[0.0, np.nan]])
    with pytest.raises(InvalidInputError, match="rng"):
        maximize(_bumps, [[0.0, 1.0]], 0)
    with pytest.raises(InvalidInputError, match="n_candidates"):
        maximize(_bumps, [[0.0, 1.0]], rng, n_candidates=0)
    with pytest.raises(NumericalError, match="acq"):
        maximize(lambda X: np.full(len(X), np.nan), [[0.0, 1.0]], rng, grad=False)
    with pytest.raises(InvalidInputError, match="acq"):
        maximize(lambda X: np.zeros(len(X)), [[0.0, 1.0]], rng, grad=True)


def test_values_only_scores_the_candidates_and_gives_the_same_answer():
    calls = []

    def both(X):
        calls.append(len(X))
        return _bumps(X)

    x1, v1 = maximize(both, [[-2.0, 2.0]], np.random.default_rng(4), values_only=lambda X: _bumps(X)[0])
    assert max(calls) <= 10  # gradients only at the starts, never on the 512 candidates
    x2, v2 = maximize(_bumps, [[-2.0, 2.0]], np.random.default_rng(4))
    assert v1 == pytest.approx(v2, abs=1e-6) and abs(x1[0] - 0.7) < 0.02
