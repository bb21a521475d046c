"""The shared multistart L-BFGS-B refine: against closed-form maximisers of a quadratic (inside the box and on
its faces, sides of very different scales) and against a dense grid for the local maxima of two bumps."""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition.optimize import refine_in_box

BOX = np.array([[-1.0, 3.0], [100.0, 500.0], [0.002, 0.003]])


def _quadratic(c):
    """``-sum(((x - c) / w)^2)`` (``w`` the box's widths): values and gradients; over the box the maximiser is
    ``clip(c, low, high)`` (separable)."""
    w = BOX[:, 1] - BOX[:, 0]

    def fn(X):
        return -np.sum(((X - c) / w) ** 2, axis=1), -2.0 * (X - c) / w**2

    return fn


def _bumps(X):
    """Bumps of height 1 at 0.2 and 2 at 0.8 (sd 0.1) on ``[0, 1]``: values and gradients."""
    e1, e2 = np.exp(-0.5 * ((X[:, 0] - 0.2) / 0.1) ** 2), 2.0 * np.exp(-0.5 * ((X[:, 0] - 0.8) / 0.1) ** 2)
    return e1 + e2, (-(X[:, 0] - 0.2) / 0.01 * e1 - (X[:, 0] - 0.8) / 0.01 * e2)[:, None]


STARTS = np.array([[2.9, 110.0, 0.0021], [-0.9, 480.0, 0.0029], [1.0, 300.0, 0.0025]])


@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("c", [[0.7, 321.0, 0.0025], [3.5, 321.0, 0.001], [-4.0, 800.0, 0.0026]])
def test_finds_the_closed_form_maximiser_of_a_quadratic_inside_and_on_the_faces(grad, c):
    c = np.array(c)
    fn = _quadratic(c)
    x_star = np.clip(c, BOX[:, 0], BOX[:, 1])
    v_star = fn(x_star[None])[0][0]
    x, v = refine_in_box(fn if grad else (lambda X: fn(X)[0]), BOX, STARTS, grad=grad)
    w = BOX[:, 1] - BOX[:, 0]
    assert np.all(np.abs(x - x_star) <= (1e-6 if grad else 1e-4) * w)
    assert v == fn(x[None])[0][0] and v >= v_star - (1e-10 if grad else 1e-7)
    on_face = c != x_star
    assert np.all(np.abs(x - x_star)[on_face] <= 1e-12 * w[on_face])
    assert np.all((x >= BOX[:, 0]) & (x <= BOX[:, 1]))


def test_each_start_climbs_its_own_bump_and_the_best_end_point_wins():
    grid = np.linspace(0.0, 1.0, 400001)[:, None]
    values = _bumps(grid)[0]
    low_basin = grid[:, 0] < 0.5
    local = int(np.argmax(np.where(low_basin, values, -np.inf)))
    x, v = refine_in_box(_bumps, [[0.0, 1.0]], [[0.05]])
    assert abs(x[0] - grid[local, 0]) < 1e-4 and v == pytest.approx(values[local], abs=1e-9)
    assert v < values.max() - 0.9  # a local refine: the start in the lower basin does not reach the global max
    x, v = refine_in_box(_bumps, [[0.0, 1.0]], [[0.05], [0.95], [0.3]])
    assert abs(x[0] - grid[int(np.argmax(values)), 0]) < 1e-4 and v == pytest.approx(values.max(), abs=1e-9)


def test_incumbent_fixed_sides_and_non_finite_values():
    box = [[0.0, 1.0], [0.25, 0.25]]

    def fn(X):  # maximiser (0.9, .) over the box; not finite beyond x_0 = 0.6
        v = np.where(X[:, 0] > 0.6, np.nan, -((X[:, 0] - 0.9) ** 2) - X[:, 1] ** 2)
        return v, np.column_stack([-2.0 * (X[:, 0] - 0.9), -2.0 * X[:, 1]])

    start = np.array([[0.1, 0.25]])
    x, v = refine_in_box(fn, box, start)
    assert x[1] == 0.25 and x[0] <= 0.6 and np.isfinite(v) and v >= fn(start)[0][0]  # never a non-finite point

    def smooth(X):
        return (-((X[:, 0] - 0.9) ** 2), np.column_stack([-2.0 * (X[:, 0] - 0.9), 0.0 * X[:, 1]]))

    x, v = refine_in_box(smooth, box, start, incumbent=(start[0], smooth(start)[0][0]))
    assert abs(x[0] - 0.9) < 1e-6 and x[1] == 0.25 and v > -1e-12
    incumbent = (np.array([0.9, 0.25]), 1.0)
    assert refine_in_box(smooth, box, start, incumbent=incumbent) is incumbent
    assert refine_in_box(smooth, box, np.empty((0, 2)), incumbent=incumbent) is incumbent
    with pytest.raises(InvalidInputError, match="starts"):
        refine_in_box(smooth, box, np.empty((0, 2)))

    def nan_scores(X):
        return np.full(len(X), np.nan)

    assert refine_in_box(smooth, box, start, values_only=nan_scores, incumbent=(start[0], -5.0))[1] == -5.0
    assert refine_in_box(smooth, box, start, values_only=nan_scores)[1] == -np.inf
