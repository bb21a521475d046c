"""The 34 benchmark objectives of Fauvel & Chalk (contextual BO), table S1 (the binary/preferential paper uses the same
set).

Each function is the *minimisation* form of Surjanovic & Bingham, "Virtual Library of
Simulation Experiments: Test Functions and Datasets" (www.sfu.ca/~ssurjano, "S&B" below),
with that page's standard parameters, except Ursem waves, which S&B does not list (see
:func:`ursem_waves`). Every function takes ``X: (n, d)`` already-validated float points and
returns ``(n,)`` values; validation lives in :class:`visiontune.reproduction.benchmark_functions.TestFunction`.

Where a formula has an exact zero at its minimiser but is written in S&B as a difference of
terms (Bohachevsky), it is rearranged into a sum of non-negative terms so that rounding can
never push it below zero; the value is unchanged.
"""

from __future__ import annotations

import numpy as np

TWO_PI = 2.0 * np.pi


def ackley(X: np.ndarray) -> np.ndarray:
    """Ackley, S&B: ``-a exp(-b sqrt(mean x_i²)) - exp(mean cos(c x_i)) + a + e``.

    Parameters ``a = 20, b = 0.2, c = 2π`` (S&B's recommended values).
    """
    a, b, c = 20.0, 0.2, TWO_PI
    root_mean_square = np.sqrt(np.mean(X**2, axis=1))
    return -a * np.exp(-b * root_mean_square) - np.exp(np.mean(np.cos(c * X), axis=1)) + a + np.e


def beale(X: np.ndarray) -> np.ndarray:
    """Beale, S&B: ``(1.5 - x1 + x1x2)² + (2.25 - x1 + x1x2²)² + (2.625 - x1 + x1x2³)²``."""
    x1, x2 = X[:, 0], X[:, 1]
    return (1.5 - x1 + x1 * x2) ** 2 + (2.25 - x1 + x1 * x2**2) ** 2 + (2.625 - x1 + x1 * x2**3) ** 2


def bohachevsky(X: np.ndarray) -> np.ndarray:
    """Bohachevsky function 1 (S&B ``boha1``): ``x1² + 2x2² - 0.3cos(3πx1) - 0.4cos(4πx2) + 0.7``.

    Computed as ``x1² + 2x2² + 0.3(1 - cos 3πx1) + 0.4(1 - cos 4πx2)`` (same value, never < 0).
    """
    x1, x2 = X[:, 0], X[:, 1]
    return x1**2 + 2.0 * x2**2 + 0.3 * (1.0 - np.cos(3.0 * np.pi * x1)) + 0.4 * (1.0 - np.cos(4.0 * np.pi * x2))


def three_hump_camel(X: np.ndarray) -> np.ndarray:
    """Three-hump camel, S&B ``camel3``: ``2x1² - 1.05x1⁴ + x1⁶/6 + x1x2 + x2²``."""
    x1, x2 = X[:, 0], X[:, 1]
    return 2.0 * x1**2 - 1.05 * x1**4 + x1**6 / 6.0 + x1 * x2 + x2**2


def six_hump_camel(X: np.ndarray) -> np.ndarray:
    """Six-hump camel, S&B ``camel6``: ``(4 - 2.1x1² + x1⁴/3)x1² + x1x2 + (-4 + 4x2²)x2²``."""
    x1, x2 = X[:, 0], X[:, 1]
    return (4.0 - 2.1 * x1**2 + x1**4 / 3.0) * x1**2 + x1 * x2 + (-4.0 + 4.0 * x2**2) * x2**2


def colville(X: np.ndarray) -> np.ndarray:
    """Colville, S&B: ``100(x1² - x2)² + (x1 - 1)² + (x3 - 1)² + 90(x3² - x4)²
    + 10.1((x2 - 1)² + (x4 - 1)²) + 19.8(x2 - 1)(x4 - 1)``."""
    x1, x2, x3, x4 = X[:, 0], X[:, 1], X[:, 2], X[:, 3]
    return (
        100.0 * (x1**2 - x2) ** 2
        + (x1 - 1.0) ** 2
        + (x3 - 1.0) ** 2
        + 90.0 * (x3**2 - x4) ** 2
        + 10.1 * ((x2 - 1.0) ** 2 + (x4 - 1.0) ** 2)
        + 19.8 * (x2 - 1.0) * (x4 - 1.0)
    )


def cross_in_tray(X: np.ndarray) -> np.ndarray:
    """Cross-in-tray, S&B ``crossit``: ``-1e-4 (|sin x1 sin x2 exp(|100 - ‖x‖/π|)| + 1)^0.1``."""
    x1, x2 = X[:, 0], X[:, 1]
    radius = np.sqrt(x1**2 + x2**2)
    inner = np.abs(np.sin(x1) * np.sin(x2) * np.exp(np.abs(100.0 - radius / np.pi))) + 1.0
    return -1e-4 * inner**0.1


def dixon_price(X: np.ndarray) -> np.ndarray:
    """Dixon-Price, S&B ``dixonpr``: ``(x1 - 1)² + Σ_{i=2..d} i (2x_i² - x_{i-1})²``."""
    i = np.arange(2, X.shape[1] + 1)
    return (X[:, 0] - 1.0) ** 2 + np.sum(i * (2.0 * X[:, 1:] ** 2 - X[:, :-1]) ** 2, axis=1)


def drop_wave(X: np.ndarray) -> np.ndarray:
    """Drop-wave, S&B ``drop``: ``-(1 + cos(12 ‖x‖)) / (0.5 ‖x‖² + 2)``."""
    squared_norm = np.sum(X**2, axis=1)
    return -(1.0 + np.cos(12.0 * np.sqrt(squared_norm))) / (0.5 * squared_norm + 2.0)


def eggholder(X: np.ndarray) -> np.ndarray:
    """Eggholder, S&B ``egg``: ``-(x2 + 47) sin√|x2 + x1/2 + 47| - x1 sin√|x1 - (x2 + 47)|``."""
    x1, x2 = X[:, 0], X[:, 1]
    return -(x2 + 47.0) * np.sin(np.sqrt(np.abs(x2 + x1 / 2.0 + 47.0))) - x1 * np.sin(np.sqrt(np.abs(x1 - (x2 + 47.0))))


def forrester(X: np.ndarray) -> np.ndarray:
    """Forrester et al. (2008), S&B ``forretal08``: ``(6x - 2)² sin(12x - 4)``."""
    x = X[:, 0]
    return (6.0 * x - 2.0) ** 2 * np.sin(12.0 * x - 4.0)


def goldstein_price(X: np.ndarray) -> np.ndarray:
    """Goldstein-Price, S&B ``goldpr`` (original, not the rescaled ``goldprsc``):
    ``[1 + (x1+x2+1)²(19 - 14x1 + 3x1² - 14x2 + 6x1x2 + 3x2²)]
    × [30 + (2x1-3x2)²(18 - 32x1 + 12x1² + 48x2 - 36x1x2 + 27x2²)]``."""
    x1, x2 = X[:, 0], X[:, 1]
    first = 1.0 + (x1 + x2 + 1.0) ** 2 * (19.0 - 14.0 * x1 + 3.0 * x1**2 - 14.0 * x2 + 6.0 * x1 * x2 + 3.0 * x2**2)
    second = 30.0 + (2.0 * x1 - 3.0 * x2) ** 2 * (
        18.0 - 32.0 * x1 + 12.0 * x1**2 + 48.0 * x2 - 36.0 * x1 * x2 + 27.0 * x2**2
    )
    return first * second


def griewank(X: np.ndarray) -> np.ndarray:
    """Griewank, S&B: ``Σ x_i²/4000 - Π cos(x_i/√i) + 1``."""
    i = np.arange(1, X.shape[1] + 1)
    return np.sum(X**2, axis=1) / 4000.0 - np.prod(np.cos(X / np.sqrt(i)), axis=1) + 1.0


def gramacy_lee(X: np.ndarray) -> np.ndarray:
    """Gramacy & Lee (2012), S&B ``grlee12``: ``sin(10πx)/(2x) + (x - 1)⁴``."""
    x = X[:, 0]
    return np.sin(10.0 * np.pi * x) / (2.0 * x) + (x - 1.0) ** 4


HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN3_A = np.array([[3.0, 10.0, 30.0], [0.1, 10.0, 35.0], [3.0, 10.0, 30.0], [0.1, 10.0, 35.0]])
HARTMANN3_P = 1e-4 * np.array(
    [[3689.0, 1170.0, 2673.0], [4699.0, 4387.0, 7470.0], [1091.0, 8732.0, 5547.0], [381.0, 5743.0, 8828.0]]
)
HARTMANN6_A = np.array(
    [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ]
)
HARTMANN6_P = 1e-4 * np.array(
    [
        [1312.0, 1696.0, 5569.0, 124.0, 8283.0, 5886.0],
        [2329.0, 4135.0, 8307.0, 3736.0, 1004.0, 9991.0],
        [2348.0, 1451.0, 3522.0, 2883.0, 3047.0, 6650.0],
        [4047.0, 8828.0, 8732.0, 5743.0, 1091.0, 381.0],
    ]
)


def _hartmann_sum(X: np.ndarray, A: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``Σ_i α_i exp(-Σ_j A_ij (x_j - P_ij)²)`` for ``X: (n, d)``, ``A, P: (4, d)``."""
    squared = np.sum(A[None, :, :] * (X[:, None, :] - P[None, :, :]) ** 2, axis=2)  # (n, 4)
    return np.exp(-squared) @ HARTMANN_ALPHA


def hartmann3(X: np.ndarray) -> np.ndarray:
    """Hartmann 3-D, S&B ``hart3``: ``-Σ_i α_i exp(-Σ_j A_ij (x_j - P_ij)²)``,
    ``α = (1, 1.2, 3, 3.2)``, S&B's 4×3 ``A`` and ``P``."""
    return -_hartmann_sum(X, HARTMANN3_A, HARTMANN3_P)


def hartmann4(X: np.ndarray) -> np.ndarray:
    """Hartmann 4-D, S&B ``hart4``: ``(1.1 - Σ_i α_i exp(-Σ_{j≤4} A_ij (x_j - P_ij)²)) / 0.839``,
    with the first four columns of the 6-D ``A`` and ``P`` (S&B's form, after Picheny et al.
    2013; the affine factor does not change the scaled target)."""
    return (1.1 - _hartmann_sum(X, HARTMANN6_A[:, :4], HARTMANN6_P[:, :4])) / 0.839


def hartmann6(X: np.ndarray) -> np.ndarray:
    """Hartmann 6-D, S&B ``hart6``: ``-Σ_i α_i exp(-Σ_j A_ij (x_j - P_ij)²)``, S&B's 4×6 ``A``, ``P``."""
    return -_hartmann_sum(X, HARTMANN6_A, HARTMANN6_P)


def holder_table(X: np.ndarray) -> np.ndarray:
    """Hölder table, S&B ``holder``: ``-|sin x1 cos x2 exp(|1 - ‖x‖/π|)|``."""
    x1, x2 = X[:, 0], X[:, 1]
    radius = np.sqrt(x1**2 + x2**2)
    return -np.abs(np.sin(x1) * np.cos(x2) * np.exp(np.abs(1.0 - radius / np.pi)))


LANGERMANN_C = np.array([1.0, 2.0, 5.0, 2.0, 3.0])
LANGERMANN_A = np.array([[3.0, 5.0], [5.0, 2.0], [2.0, 1.0], [1.0, 4.0], [7.0, 9.0]])


def langermann(X: np.ndarray) -> np.ndarray:
    """Langermann, S&B ``langer``: ``Σ_i c_i exp(-r_i/π) cos(π r_i)``, ``r_i = Σ_j (x_j - A_ij)²``,
    ``m = 5``, ``c = (1, 2, 5, 2, 3)``, ``A = [[3,5],[5,2],[2,1],[1,4],[7,9]]`` (S&B's d = 2 values)."""
    r = np.sum((X[:, None, :] - LANGERMANN_A[None, :, :]) ** 2, axis=2)  # (n, 5)
    return (np.exp(-r / np.pi) * np.cos(np.pi * r)) @ LANGERMANN_C


def levy(X: np.ndarray) -> np.ndarray:
    """Levy, S&B: ``w_i = 1 + (x_i - 1)/4``, ``sin²(πw_1) + Σ_{i<d} (w_i - 1)²(1 + 10 sin²(πw_i + 1))
    + (w_d - 1)²(1 + sin²(2πw_d))``."""
    w = 1.0 + (X - 1.0) / 4.0
    middle = np.sum((w[:, :-1] - 1.0) ** 2 * (1.0 + 10.0 * np.sin(np.pi * w[:, :-1] + 1.0) ** 2), axis=1)
    last = (w[:, -1] - 1.0) ** 2 * (1.0 + np.sin(TWO_PI * w[:, -1]) ** 2)
    return np.sin(np.pi * w[:, 0]) ** 2 + middle + last


def levy13(X: np.ndarray) -> np.ndarray:
    """Levy N.13, S&B ``levy13``: ``sin²(3πx1) + (x1 - 1)²(1 + sin²(3πx2)) + (x2 - 1)²(1 + sin²(2πx2))``."""
    x1, x2 = X[:, 0], X[:, 1]
    return (
        np.sin(3.0 * np.pi * x1) ** 2
        + (x1 - 1.0) ** 2 * (1.0 + np.sin(3.0 * np.pi * x2) ** 2)
        + (x2 - 1.0) ** 2 * (1.0 + np.sin(TWO_PI * x2) ** 2)
    )


PERM0_BETA = 10.0
PERM_BETA = 0.5


def perm0db(X: np.ndarray) -> np.ndarray:
    """Perm 0, d, β, S&B ``perm0db``: ``Σ_{i=1..d} (Σ_{j=1..d} (j + β)(x_j^i - j^{-i}))²``, β = 10
    (S&B's default, also the authors' toolbox value)."""
    d = X.shape[1]
    j = np.arange(1, d + 1, dtype=float)
    total = np.zeros(X.shape[0])
    for i in range(1, d + 1):
        inner = np.sum((j + PERM0_BETA) * (X**i - j ** (-float(i))), axis=1)
        total += inner**2
    return total


def permdb(X: np.ndarray) -> np.ndarray:
    """Perm d, β, S&B ``permdb``: ``Σ_{i=1..d} (Σ_{j=1..d} (j^i + β)((x_j/j)^i - 1))²``, β = 0.5
    (S&B's default)."""
    d = X.shape[1]
    j = np.arange(1, d + 1, dtype=float)
    total = np.zeros(X.shape[0])
    for i in range(1, d + 1):
        inner = np.sum((j**i + PERM_BETA) * ((X / j) ** i - 1.0), axis=1)
        total += inner**2
    return total


def powell(X: np.ndarray) -> np.ndarray:
    """Powell, S&B: ``Σ_{k=1..d/4} (x_{4k-3} + 10x_{4k-2})² + 5(x_{4k-1} - x_{4k})²
    + (x_{4k-2} - 2x_{4k-1})⁴ + 10(x_{4k-3} - x_{4k})⁴`` (d a multiple of 4)."""
    a, b, c, e = X[:, 0::4], X[:, 1::4], X[:, 2::4], X[:, 3::4]
    return np.sum((a + 10.0 * b) ** 2 + 5.0 * (c - e) ** 2 + (b - 2.0 * c) ** 4 + 10.0 * (a - e) ** 4, axis=1)


def rosenbrock(X: np.ndarray) -> np.ndarray:
    """Rosenbrock, S&B ``rosen``: ``Σ_{i<d} 100(x_{i+1} - x_i²)² + (x_i - 1)²``."""
    return np.sum(100.0 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (X[:, :-1] - 1.0) ** 2, axis=1)


def rotated_hyper_ellipsoid(X: np.ndarray) -> np.ndarray:
    """Rotated hyper-ellipsoid, S&B ``rothyp``: ``Σ_{i=1..d} Σ_{j=1..i} x_j²``."""
    return np.sum(np.cumsum(X**2, axis=1), axis=1)


def schaffer4(X: np.ndarray) -> np.ndarray:
    """Schaffer N.4, S&B ``schaffer4``: ``0.5 + (cos²(sin|x1² - x2²|) - 0.5) / (1 + 0.001(x1² + x2²))²``."""
    x1, x2 = X[:, 0], X[:, 1]
    return 0.5 + (np.cos(np.sin(np.abs(x1**2 - x2**2))) ** 2 - 0.5) / (1.0 + 0.001 * (x1**2 + x2**2)) ** 2


def schwefel(X: np.ndarray) -> np.ndarray:
    """Schwefel, S&B ``schwef``: ``418.9829 d - Σ x_i sin√|x_i|`` (S&B's constant; the value at the
    minimiser is therefore 2.5e-5, not exactly 0)."""
    return 418.9829 * X.shape[1] - np.sum(X * np.sin(np.sqrt(np.abs(X))), axis=1)


SHEKEL_BETA = 0.1 * np.array([1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 3.0, 7.0, 5.0, 5.0])
SHEKEL_C = np.array(
    [
        [4.0, 1.0, 8.0, 6.0, 3.0, 2.0, 5.0, 8.0, 6.0, 7.0],
        [4.0, 1.0, 8.0, 6.0, 7.0, 9.0, 3.0, 1.0, 2.0, 3.6],
        [4.0, 1.0, 8.0, 6.0, 3.0, 2.0, 5.0, 8.0, 6.0, 7.0],
        [4.0, 1.0, 8.0, 6.0, 7.0, 9.0, 3.0, 1.0, 2.0, 3.6],
    ]
)


def shekel(X: np.ndarray) -> np.ndarray:
    """Shekel, S&B: ``-Σ_{i=1..m} (Σ_{j=1..4} (x_j - C_ji)² + β_i)^{-1}``, m = 10,
    ``β = (1, 2, 2, 4, 4, 6, 3, 7, 5, 5)/10``, S&B's 4×10 ``C``."""
    squared = np.sum((X[:, :, None] - SHEKEL_C[None, :, :]) ** 2, axis=1)  # (n, m)
    return -np.sum(1.0 / (squared + SHEKEL_BETA[None, :]), axis=1)


def shubert(X: np.ndarray) -> np.ndarray:
    """Shubert, S&B: ``(Σ_{i=1..5} i cos((i+1)x1 + i)) (Σ_{i=1..5} i cos((i+1)x2 + i))``."""
    i = np.arange(1, 6, dtype=float)
    factors = [np.sum(i * np.cos((i + 1.0) * X[:, k, None] + i), axis=1) for k in range(2)]
    return factors[0] * factors[1]


def sphere(X: np.ndarray) -> np.ndarray:
    """Sphere, S&B ``spheref``: ``Σ x_i²``."""
    return np.sum(X**2, axis=1)


def sum_squares(X: np.ndarray) -> np.ndarray:
    """Sum squares, S&B ``sumsqu``: ``Σ_i i x_i²``."""
    return np.sum(np.arange(1, X.shape[1] + 1) * X**2, axis=1)


def trid(X: np.ndarray) -> np.ndarray:
    """Trid, S&B: ``Σ (x_i - 1)² - Σ_{i≥2} x_i x_{i-1}``."""
    return np.sum((X - 1.0) ** 2, axis=1) - np.sum(X[:, 1:] * X[:, :-1], axis=1)


def ursem_waves(X: np.ndarray) -> np.ndarray:
    """Ursem waves, definition of the authors' MATLAB ``BO_toolbox`` (``Ursem_waves``, docs/design.md):
    ``-(0.3 x1)³ + (x2² - 4.5 x2²) x1 x2 + 4.7 cos(3x1 - x2²(2 + x1)) sin(2.5πx1)``,
    ``x1 ∈ [-0.9, 1.2]``, ``x2 ∈ [-1.2, 1.2]``.

    Not in S&B. Other sources (e.g. Jamil & Yang 2013) start with ``-0.9 x1²`` instead of
    ``-(0.3 x1)³``; this is the toolbox's variant, so its minimum is not the -8.5536 quoted there.
    """
    x1, x2 = X[:, 0], X[:, 1]
    return (
        -((0.3 * x1) ** 3)
        + (x2**2 - 4.5 * x2**2) * x1 * x2
        + 4.7 * np.cos(3.0 * x1 - x2**2 * (2.0 + x1)) * np.sin(2.5 * np.pi * x1)
    )
