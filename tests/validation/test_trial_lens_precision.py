"""The posterior precision a trial lens to file needs, against closed forms (the noncentral χ²)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import chi2, ncx2

from visiontune.errors import InvalidInputError
from visiontune.refraction.lenses import LensSteps
from visiontune.validation.trial_lens_precision import (
    SIGMA_GRID_D,
    continuous_sigma,
    sigma_needed_on_trial_lenses,
    trial_lens_within_probability,
)

T = 0.25


#: The relative spacing of the searched grid (geometric: the same everywhere).
GRID_STEP = float(SIGMA_GRID_D[1] / SIGMA_GRID_D[0] - 1.0)


def test_continuous_sigma_is_the_chi_square_radius():
    sigma = continuous_sigma(T, 0.85)
    assert chi2.cdf(T**2 / sigma**2, 3) == pytest.approx(0.85, abs=1e-12)
    assert sigma == pytest.approx(0.1084, abs=1e-4)


@pytest.mark.parametrize("sigma", [0.06, 0.1, 0.15])
def test_a_centre_on_a_trial_lens_is_the_central_chi_square(sigma):
    # The lens at the centre is the best (Anderson's theorem): P = P(χ²₃ <= t²/σ²).
    p = trial_lens_within_probability([-1.0, 0.0, 0.0], sigma, LensSteps(), n_draws=40000, seed=3)
    exact = chi2.cdf(T**2 / sigma**2, 3)
    assert p == pytest.approx(exact, abs=4.0 * np.sqrt(exact * (1 - exact) / 40000) + 1e-9)


@pytest.mark.parametrize("sigma", [0.06, 0.1])
def test_a_centre_half_a_step_between_lenses_is_the_noncentral_chi_square(sigma):
    # M = -1.125, no cylinder: the nearest trial lenses (spheres -1.00 and -1.25, or -1.00 / -0.25)
    # are all 0.125 D away, so P = P(χ'²₃(λ = (0.125/σ)²) <= t²/σ²).
    p = trial_lens_within_probability([-1.125, 0.0, 0.0], sigma, LensSteps(), n_draws=40000, seed=4)
    exact = ncx2.cdf(T**2 / sigma**2, 3, (0.125 / sigma) ** 2)
    assert p == pytest.approx(exact, abs=4.0 * np.sqrt(exact * (1 - exact) / 40000) + 1e-9)


def test_sigma_needed_half_a_step_away_matches_the_noncentral_root():
    exact = brentq(lambda s: ncx2.cdf(T**2 / s**2, 3, (0.125 / s) ** 2) - 0.85, 0.01, 0.2)
    found = sigma_needed_on_trial_lenses([-1.125, 0.0, 0.0], LensSteps(), n_draws=20000, seed=5)
    # the grid's point at or just below the root, within the Monte Carlo's error of a percent or so
    assert exact * (1 - 2.5 * GRID_STEP) <= found <= exact * (1 + GRID_STEP)


def test_on_a_lens_it_needs_the_continuous_sigma_and_off_it_less():
    on = sigma_needed_on_trial_lenses([-1.0, 0.0, 0.0], LensSteps(), n_draws=20000)
    off = sigma_needed_on_trial_lenses([-1.125, 0.0, 0.0], LensSteps(), n_draws=20000)
    assert on == pytest.approx(continuous_sigma(), rel=2.5 * GRID_STEP)
    assert off < 0.8 * on


def test_coarser_lens_steps_need_more_precision():
    centre = [-2.37, 0.11, -0.05]
    fine = sigma_needed_on_trial_lenses(centre, LensSteps(step_d=0.125))
    coarse = sigma_needed_on_trial_lenses(centre, LensSteps(step_d=0.5))
    assert coarse < fine <= continuous_sigma() * (1 + GRID_STEP)


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: sigma_needed_on_trial_lenses([0.0, np.nan, 0.0], LensSteps()), "centre"),
        (lambda: sigma_needed_on_trial_lenses([0.0, 0.0], LensSteps()), "centre"),
        (lambda: sigma_needed_on_trial_lenses([0.0, 0.0, 0.0], LensSteps(step_d=0.0)), "steps"),
        (lambda: sigma_needed_on_trial_lenses([0.0, 0.0, 0.0], LensSteps(), probability=1.5), "probability"),
        (lambda: trial_lens_within_probability([0.0, 0.0, 0.0], -0.1, LensSteps()), "sigma"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(InvalidInputError, match=field):
        call()
