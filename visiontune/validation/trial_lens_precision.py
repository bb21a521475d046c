"""How precise a posterior must be for a *trial lens* to be filed within 0.25 D with 85% probability.

The bound of ``benchmarks/time_bound.py`` asks of an isotropic normal posterior ``N(c, σ² I)`` of the
correction ``P* = (M, J0, J45)`` that the lens filed *at its centre* be within ``t = 0.25 D`` with
probability ``q = 0.85``: ``P(χ²₃ <= t²/σ²) >= q``, ``σ <= t / sqrt(χ²₃(q))`` (0.108 D). A session files
a trial lens, on the 0.25 D grid of sphere and cylinder and the axis steps of the trial set
(:mod:`visiontune.refraction.lenses`), and the stop waits until *that* lens is 85% probably within
0.25 D (``stopping.precision.filed_within_probability``). Up to 0.125 D of sphere and of cylinder from
the centre, the trial lens leaves less of the 0.25 D window to the posterior's spread, so the same
probability asks a smaller ``σ``; how much smaller depends on where the correction lies between the
trial lenses, so it differs from patient to patient.

:func:`trial_lens_within_probability` is ``max_L P(|P(L) - X| <= t)`` over the trial lenses ``L``
around ``c`` (:func:`~visiontune.refraction.lenses.neighbouring_lenses` of the trial lens nearest ``c``,
the lenses the session weighs when it files, :meth:`OpticsEngine._most_probable_lens`), ``X ~ N(c, σ² I)``,
by Monte Carlo over fixed standard normal draws (common random numbers, so it is a smooth function of
``σ`` and ``c``). :func:`sigma_needed_on_trial_lenses` is the largest ``σ`` at which it still reaches
``q``: with the posterior centred on the correction, the precision a patient's session needs before
its lens to file can be 85% probably within 0.25 D.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.refraction.lenses import LensSteps, neighbouring_lenses, trial_lens

__all__ = ["SIGMA_GRID_D", "continuous_sigma", "sigma_needed_on_trial_lenses", "trial_lens_within_probability"]

#: The ``σ`` (D) searched by :func:`sigma_needed_on_trial_lenses`, ascending: 0.01 to 0.2 D, 2% apart.
SIGMA_GRID_D = np.geomspace(0.01, 0.2, 152)


def continuous_sigma(target_d: float = 0.25, probability: float = 0.85) -> float:
    """``t / sqrt(χ²₃(q))``: the ``σ`` at which a lens at the centre of ``N(c, σ² I)`` is within ``t``
    with probability ``q`` (module docstring; 0.108 D for 0.25 D and 0.85)."""
    return float(target_d / np.sqrt(chi2.ppf(probability, 3)))


def _normal_draws(n_draws: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((int(n_draws), 3))


def _candidates(centre: np.ndarray, steps: LensSteps) -> np.ndarray:
    nearest = trial_lens(centre, steps)
    return np.array([lens.power_vector_array() for lens in neighbouring_lenses(nearest, steps)])


def _within(centre: np.ndarray, sigmas: np.ndarray, lenses: np.ndarray, draws: np.ndarray, target_d: float):
    """``(len(sigmas),)``: ``max_L mean_i 1[|L - (c + σ z_i)| <= t]`` for each ``σ``."""
    offset = lenses[:, None, :] - centre  # (L, 1, 3)
    out = np.empty(len(sigmas))
    for k, sigma in enumerate(sigmas):
        d2 = np.sum((offset - sigma * draws[None, :, :]) ** 2, axis=2)  # (L, n)
        out[k] = float(np.max(np.mean(d2 <= target_d**2 + 1e-12, axis=1)))
    return out


def _checked(centre, steps: LensSteps, target_d: float) -> np.ndarray:
    c = np.asarray(centre, dtype=float)
    if c.shape != (3,) or not np.all(np.isfinite(c)):
        raise InvalidInputError(f"centre: expected 3 finite numbers (M, J0, J45), got {centre!r}")
    if not isinstance(steps, LensSteps) or steps.step_d <= 0.0:
        raise InvalidInputError(f"steps: expected LensSteps with a lens step above 0, got {steps!r}")
    check_number("target_d", target_d, 1e-3, 10)
    return c


def trial_lens_within_probability(
    centre,
    sigma: float,
    steps: LensSteps,
    *,
    target_d: float = 0.25,
    n_draws: int = 20000,
    seed: int = 0,
) -> float:
    """``max_L P(|P(L) - X| <= target_d)``, ``X ~ N(centre, sigma² I)``, over the trial lenses ``L`` of
    ``steps`` around ``centre (3,)`` (module docstring); Monte Carlo over ``n_draws`` normal draws of
    ``seed``."""
    c = _checked(centre, steps, target_d)
    check_number("sigma", sigma, 1e-6, 10)
    draws = _normal_draws(n_draws, seed)
    return float(_within(c, np.array([float(sigma)]), _candidates(c, steps), draws, target_d)[0])


def sigma_needed_on_trial_lenses(
    centre,
    steps: LensSteps,
    *,
    target_d: float = 0.25,
    probability: float = 0.85,
    n_draws: int = 4000,
    seed: int = 0,
) -> float:
    """The largest ``σ`` of :data:`SIGMA_GRID_D` below which :func:`trial_lens_within_probability` is
    at least ``probability`` at every ``σ`` of the grid (module docstring); the grid's smallest when
    none is. Never more than :func:`continuous_sigma` plus the grid's 2%: a trial lens can do no
    better than a lens at the centre."""
    c = _checked(centre, steps, target_d)
    check_number("probability", probability, 0.01, 0.999)
    p = _within(c, SIGMA_GRID_D, _candidates(c, steps), _normal_draws(n_draws, seed), target_d)
    failing = np.flatnonzero(p < probability)
    if len(failing) == 0:
        return float(SIGMA_GRID_D[-1])
    return float(SIGMA_GRID_D[max(int(failing[0]) - 1, 0)])
