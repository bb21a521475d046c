"""The 1-D grid maximiser used for the letter size (BALD over s): as good as a dense grid."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.acquisition.optimize import grid_maximize_1d


def _counted(fn):
    calls = []

    def wrapped(S):
        calls.append(S.shape)
        return fn(S[:, 0])

    return wrapped, calls


@pytest.mark.parametrize("peak", [-0.93, -0.2, 0.4137, 1.25, 1.999])
def test_interior_maximum_of_a_smooth_function_is_found_to_closed_form(peak):
    """Oracle: the closed-form argmax of a Gaussian bump (also at the end of the interval)."""
    fn, calls = _counted(lambda s: np.exp(-0.5 * ((s - peak) / 0.4) ** 2))
    s, v = grid_maximize_1d(fn, [-1.0, 2.0])
    assert s.shape == (1,)
    assert abs(s[0] - peak) < 1e-4
    assert v == pytest.approx(1.0, abs=1e-8)
    assert len(calls) <= 3 and all(c[1] == 1 for c in calls)


def test_asymmetric_function_matches_brent():
    """Oracle: scipy's bounded Brent search on an asymmetric, non-quadratic function."""

    def f(s):
        return np.log1p(np.exp(3 * s)) - s**2 + 0.3 * np.sin(4 * s)

    s, v = grid_maximize_1d(lambda S: f(S[:, 0]), [-1.0, 2.0])
    ref = minimize_scalar(lambda t: -f(t), bounds=(-1.0, 2.0), method="bounded", options={"xatol": 1e-10})
    assert s[0] == pytest.approx(ref.x, abs=1e-4)
    assert v >= -ref.fun - 1e-9


@pytest.mark.parametrize("slope, end", [(1.0, 2.0), (-1.0, -1.0)])
def test_monotone_function_reaches_the_end_of_the_interval(slope, end):
    s, v = grid_maximize_1d(lambda S: slope * S[:, 0], [-1.0, 2.0])
    assert s[0] == end and v == pytest.approx(slope * end)


def test_multimodal_function_picks_the_global_maximum_dense_grid_oracle():
    def f(s):
        return np.sin(5 * s) + 0.3 * s

    s, v = grid_maximize_1d(lambda S: f(S[:, 0]), [-1.0, 2.0])
    dense = np.linspace(-1.0, 2.0, 300001)
    assert v >= f(dense).max() - 1e-8
    assert abs(s[0] - dense[np.argmax(f(dense))]) < 1e-4


def test_degenerate_interval_returns_its_point():
    s, v = grid_maximize_1d(lambda S: -(S[:, 0] ** 2), [0.5, 0.5])
    assert s[0] == 0.5 and v == -0.25


def test_bad_inputs_name_the_argument():
    def f(S):
        return S[:, 0]

    with pytest.raises(InvalidInputError, match="interval"):
        grid_maximize_1d(f, [[0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(InvalidInputError, match="interval"):
        grid_maximize_1d(f, [1.0, 0.0])
    with pytest.raises(InvalidInputError, match="n_grid"):
        grid_maximize_1d(f, [0.0, 1.0], n_grid=2)
    with pytest.raises(InvalidInputError, match="n_refine"):
        grid_maximize_1d(f, [0.0, 1.0], n_refine=True)
    with pytest.raises(NumericalError, match="values_fn"):
        grid_maximize_1d(lambda S: np.full(len(S), np.nan), [0.0, 1.0])
