"""Reference values of the 34 objectives away from their optima.

Oracles: values worked out by hand from the S&B formulas (closed forms written out in each
case), and, for the tabulated families (Hartmann, Shekel, Langermann, Shubert), an
independent scalar re-implementation with plain ``math`` loops over S&B's tables.
"""

import math

import numpy as np
import pytest

from visiontune.reproduction.benchmark_functions import FUNCTIONS

HAND_VALUES = [
    ("ackley", (1.0, 1.0), 20.0 * (1.0 - math.exp(-0.2))),
    ("beale", (0.0, 0.0), 1.5**2 + 2.25**2 + 2.625**2),
    ("bohachevsky", (1.0, 1.0), 1.0 + 2.0 + 0.3 * 2.0),
    ("three_hump_camel", (1.0, 1.0), 2.0 - 1.05 + 1.0 / 6.0 + 1.0 + 1.0),
    ("six_hump_camel", (1.0, 1.0), 4.0 - 2.1 + 1.0 / 3.0 + 1.0),
    ("colville", (0.0, 0.0, 0.0, 0.0), 1.0 + 1.0 + 10.1 * 2.0 + 19.8),
    ("cross_in_tray", (0.0, 0.0), -1e-4),
    ("dixon_price", (1.0, 1.0), 2.0),
    ("drop_wave", (1.0, 0.0), -(1.0 + math.cos(12.0)) / 2.5),
    ("eggholder", (0.0, 0.0), -47.0 * math.sin(math.sqrt(47.0))),
    ("forrester", (0.5,), math.sin(2.0)),
    ("goldstein_price", (0.0, 0.0), 600.0),
    ("griewank", (10.0, 0.0), 100.0 / 4000.0 - math.cos(10.0) + 1.0),
    ("gramacy_lee", (0.75,), -1.0 / 1.5 + 0.25**4),
    ("holder_table", (math.pi / 2.0, 0.0), -math.exp(0.5)),
    ("levy", (-3.0, 1.0), 1.0 + 10.0 * math.sin(1.0) ** 2),
    ("levy13", (0.0, 0.0), 2.0),
    ("perm0db", (0.0, 0.0), 17.0**2 + 14.0**2),
    ("permdb", (0.0, 0.0), 4.0**2 + 6.0**2),
    ("powell", (1.0, 1.0, 1.0, 1.0), 121.0 + 1.0),
    ("rosenbrock", (0.0, 0.0), 1.0),
    ("rotated_hyper_ellipsoid", (1.0, 2.0), 1.0 + (1.0 + 4.0)),
    ("schaffer4", (0.0, 0.0), 1.0),
    ("schwefel", (0.0, 0.0), 2.0 * 418.9829),
    ("sphere", (1.0, 2.0), 5.0),
    ("sum_squares", (1.0, 2.0), 1.0 + 2.0 * 4.0),
    ("trid", (0.0, 0.0), 2.0),
    ("ursem_waves", (1.0, 0.0), -(0.3**3) + 4.7 * math.cos(3.0)),
]


@pytest.mark.parametrize(("name", "point", "expected"), HAND_VALUES, ids=[v[0] for v in HAND_VALUES])
def test_value_worked_out_by_hand(name, point, expected):
    value = FUNCTIONS[name](np.array([point]))
    assert value.shape == (1,)
    assert value[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)


# --- independent scalar oracles for the tabulated functions (S&B's constants retyped) ---

_ALPHA = (1.0, 1.2, 3.0, 3.2)
_A3 = ((3, 10, 30), (0.1, 10, 35), (3, 10, 30), (0.1, 10, 35))
_P3 = ((0.3689, 0.1170, 0.2673), (0.4699, 0.4387, 0.7470), (0.1091, 0.8732, 0.5547), (0.0381, 0.5743, 0.8828))
_A6 = ((10, 3, 17, 3.5, 1.7, 8), (0.05, 10, 17, 0.1, 8, 14), (3, 3.5, 1.7, 10, 17, 8), (17, 8, 0.05, 10, 0.1, 14))
_P6 = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)


def _hartmann_scalar(x, A, P):
    total = 0.0
    for i in range(4):
        total += _ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(len(x))))
    return total


def _shekel_scalar(x):
    beta = (0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5)
    centres = (
        (4, 4, 4, 4),
        (1, 1, 1, 1),
        (8, 8, 8, 8),
        (6, 6, 6, 6),
        (3, 7, 3, 7),
        (2, 9, 2, 9),
        (5, 3, 5, 3),
        (8, 1, 8, 1),
        (6, 2, 6, 2),
        (7, 3.6, 7, 3.6),
    )
    return -sum(1.0 / (sum((x[j] - c[j]) ** 2 for j in range(4)) + b) for c, b in zip(centres, beta))


def _langermann_scalar(x):
    c = (1, 2, 5, 2, 3)
    A = ((3, 5), (5, 2), (2, 1), (1, 4), (7, 9))
    total = 0.0
    for ci, ai in zip(c, A):
        r = (x[0] - ai[0]) ** 2 + (x[1] - ai[1]) ** 2
        total += ci * math.exp(-r / math.pi) * math.cos(math.pi * r)
    return total


def _shubert_scalar(x):
    factors = [sum(i * math.cos((i + 1) * xi + i) for i in range(1, 6)) for xi in x]
    return factors[0] * factors[1]


SCALAR_ORACLES = {
    "hartmann3": lambda x: -_hartmann_scalar(x, _A3, _P3),
    "hartmann4": lambda x: (1.1 - _hartmann_scalar(x, [a[:4] for a in _A6], [p[:4] for p in _P6])) / 0.839,
    "hartmann6": lambda x: -_hartmann_scalar(x, _A6, _P6),
    "shekel": _shekel_scalar,
    "langermann": _langermann_scalar,
    "shubert": _shubert_scalar,
}


@pytest.mark.parametrize("name", sorted(SCALAR_ORACLES))
def test_tabulated_function_matches_scalar_oracle(name):
    function = FUNCTIONS[name]
    rng = np.random.default_rng(7)
    X = function.lower + (function.upper - function.lower) * rng.random((25, function.dimension))
    expected = [SCALAR_ORACLES[name](tuple(float(v) for v in x)) for x in X]
    np.testing.assert_allclose(function(X), expected, rtol=1e-12, atol=1e-12)


def test_functions_are_vectorised_row_by_row():
    rng = np.random.default_rng(3)
    for function in FUNCTIONS.values():
        X = function.lower + (function.upper - function.lower) * rng.random((6, function.dimension))
        batch = function(X)
        assert batch.shape == (6,)
        singles = np.array([function(x)[0] for x in X])
        np.testing.assert_allclose(batch, singles, rtol=1e-13, atol=1e-13, err_msg=function.name)
