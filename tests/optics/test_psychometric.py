"""Psychometric function of Fauvel & Chalk (contextual BO), Eq. 13 (with lapse) against closed forms."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics.psychometric import PsychometricFunction


def phi(z):
    """Standard normal CDF via math.erf (independent of scipy's ndtr)."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@settings(max_examples=100, deadline=None)
@given(st.floats(0.1, 10), st.integers(2, 30), st.floats(0, 0.4), st.floats(-3, 3), st.floats(-1, 2))
def test_closed_form(slope, n, lapse_fraction, s, va):
    lapse = lapse_fraction * (1 - 1 / n)
    psy = PsychometricFunction(slope, n, lapse)
    expected = 1 / n + (1 - 1 / n - lapse) * phi(slope * (s - va))
    assert psy.probability_correct(s, va) == pytest.approx(expected, abs=1e-12)
    wrong = lapse + (1 - 1 / n - lapse) * 0.5 * math.erfc(slope * (s - va) / math.sqrt(2))
    assert psy.probability_wrong(s, va) == pytest.approx(wrong, rel=1e-9, abs=1e-300)
    # Eq. 14 latent: Φ(f) = P, checked in the tail that does not round, Φ(-f) = 1 - P (erfc oracle)
    f = psy.probit_latent(s, va)
    assert math.isfinite(f)
    if f < 0:
        assert phi(f) == pytest.approx(expected, rel=1e-9)
    else:
        assert 0.5 * math.erfc(f / math.sqrt(2)) == pytest.approx(wrong, rel=1e-9, abs=1e-300)


def test_limits_and_inflexion():
    psy = PsychometricFunction(slope=5.0, n_alternatives=26, lapse=0.02)
    gamma = 1 / 26
    assert psy.guess_rate == pytest.approx(gamma)
    assert psy.probability_correct(-50.0, 0.0) == pytest.approx(gamma, abs=1e-15)  # tiny letters: chance
    assert psy.probability_correct(50.0, 0.0) == pytest.approx(1 - 0.02, abs=1e-15)  # huge letters: 1 - lapse
    assert psy.probability_correct(0.3, 0.3) == pytest.approx(gamma + (1 - gamma - 0.02) / 2)
    # without lapse VA is where P = (1 + γ)/2 (contextual BO §5.1)
    assert PsychometricFunction(5.0, 26).probability_correct(0.3, 0.3) == pytest.approx((1 + gamma) / 2)


def test_slope_at_inflexion_by_finite_differences():
    psy = PsychometricFunction(slope=3.0, n_alternatives=10, lapse=0.05)
    h = 1e-5
    deriv = (psy.probability_correct(0.2 + h, 0.2) - psy.probability_correct(0.2 - h, 0.2)) / (2 * h)
    assert deriv == pytest.approx((1 - 0.1 - 0.05) * 3.0 / math.sqrt(2 * math.pi), rel=1e-7)


def test_lapse_is_a_guessing_mixture():
    # Documented reading: with probability q = λ/(1-γ) the patient guesses (P = γ).
    gamma, lapse = 0.1, 0.09
    psy, clean = PsychometricFunction(2.0, 10, lapse), PsychometricFunction(2.0, 10, 0.0)
    q = lapse / (1 - gamma)
    s = np.linspace(-1, 2, 13)
    assert psy.probability_correct(s, 0.4) == pytest.approx(q * gamma + (1 - q) * clean.probability_correct(s, 0.4))


@settings(max_examples=100, deadline=None)
@given(st.floats(0.1, 10), st.integers(2, 30), st.floats(0, 0.9), st.floats(0.001, 0.999), st.floats(-1, 2))
def test_threshold_inverts(slope, n, lapse_fraction, u, va):
    lapse = lapse_fraction * (1 - 1 / n)
    psy = PsychometricFunction(slope, n, lapse)
    p = 1 / n + u * (1 - 1 / n - lapse)
    s = psy.threshold(p, va)
    assert psy.probability_correct(s, va) == pytest.approx(p, rel=1e-9)


def test_threshold_at_midpoint_is_va():
    psy = PsychometricFunction(5.0, 26)
    assert psy.threshold((1 + 1 / 26) / 2, va=0.4) == pytest.approx(0.4)
    assert psy.threshold(np.array([0.3, 0.9]), 0.0).shape == (2,)


def test_broadcasting():
    psy = PsychometricFunction(5.0, 26)
    p = psy.probability_correct(np.linspace(-1, 2, 7)[:, None], np.array([0.0, 0.5]))
    assert p.shape == (7, 2)
    assert np.all(np.diff(p, axis=0) > 0) and np.all(p[:, 0] > p[:, 1])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(slope=0.0, n_alternatives=26), "slope"),
        (dict(slope=-1.0, n_alternatives=26), "slope"),
        (dict(slope=np.nan, n_alternatives=26), "slope"),
        (dict(slope=5.0, n_alternatives=1), "n_alternatives"),
        (dict(slope=5.0, n_alternatives=2.5), "n_alternatives"),
        (dict(slope=5.0, n_alternatives=True), "n_alternatives"),
        (dict(slope=5.0, n_alternatives=26, lapse=-0.01), "lapse"),
        (dict(slope=5.0, n_alternatives=4, lapse=0.75), "lapse"),
        (dict(slope=5.0, n_alternatives=26, lapse=np.nan), "lapse"),
    ],
)
def test_bad_parameters_raise_naming_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        PsychometricFunction(**kwargs)


@pytest.mark.parametrize("p", [1 / 26, 0.98, 1.0, 0.0, np.nan])
def test_threshold_outside_range(p):
    with pytest.raises(InvalidInputError, match="probability"):
        PsychometricFunction(5.0, 26, lapse=0.02).threshold(p)


def test_bad_letter_size():
    with pytest.raises(InvalidInputError, match="s:"):
        PsychometricFunction(5.0, 26).probability_correct(np.nan, 0.0)
    with pytest.raises(InvalidInputError, match="va"):
        PsychometricFunction(5.0, 26).probability_correct(0.0, [np.inf])
