"""Comparison answers (visiontune.optics.comparison_answers) against closed forms written out per
scalar, root finding for the blur thresholds, finite differences, and Monte Carlo frequencies
of the keyed simulated patient."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.optics.comparison_answers import (
    COMPARISON_ANSWERS,
    ComparisonModel,
    answer_comparison_trial,
    blur_discrimination_signal,
    patient_comparison_probabilities,
    ternary_probabilities,
)


def phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def ternary_scalar(delta: float, tau: float, eps: float) -> list[float]:
    p1, p2 = phi(delta - tau), phi(-delta - tau)
    return [(1 - eps) * p + eps / 3 for p in (p1, p2, 1 - p1 - p2)]


# ------------------------------------------------------------------ the three answers
def test_ternary_probabilities_match_the_scalar_closed_form():
    rng = np.random.default_rng(0)
    delta = rng.normal(0, 2, (4, 5))
    for tau, eps in ((0.0, 0.0), (0.5, 0.04), (1.3, 0.2)):
        p = ternary_probabilities(delta, tau, eps)
        assert p.shape == (4, 5, 3)
        ref = np.array([[ternary_scalar(d, tau, eps) for d in row] for row in delta])
        np.testing.assert_allclose(p, ref, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
        # swapping the lenses (δ -> -δ) swaps "1" and "2" and keeps "="
        q = ternary_probabilities(-delta, tau, eps)
        np.testing.assert_allclose(q[..., [1, 0, 2]], p, rtol=1e-12, atol=1e-15)


def test_without_band_and_lapse_it_is_the_forced_choice_of_eq_11():
    d = np.linspace(-3, 3, 13)
    p = ternary_probabilities(d, 0.0, 0.0)
    np.testing.assert_allclose(p[:, 2], 0.0, atol=1e-15)
    np.testing.assert_allclose(p[:, 0], [phi(x) for x in d], rtol=1e-12)


def test_equal_is_likeliest_when_the_lenses_are_alike():
    tau = 0.5
    d = np.linspace(-4, 4, 161)
    p_eq = ternary_probabilities(d, tau, 0.0)[:, 2]
    assert d[np.argmax(p_eq)] == pytest.approx(0.0, abs=1e-12)
    assert p_eq.max() == pytest.approx(2 * phi(tau) - 1, rel=1e-12)  # 0.383 at τ = 0.5
    assert np.all(np.diff(p_eq[d >= 0]) < 0)  # falls as |δ| grows: "=" says |δ| is small


# ------------------------------------------------------------------ the blur discrimination model
def _threshold(model: ComparisonModel, pedestal: float) -> float:
    """ΔB with forced-choice P(correct) = 0.75 from a pedestal blur (root finding, no algebra)."""
    forced = ComparisonModel(
        "blur",
        indifference=0.0,
        lapse=0.0,
        threshold_at_focus_d=model.threshold_at_focus_d,
        weber_fraction=model.weber_fraction,
    )
    return brentq(
        lambda db: (
            ternary_probabilities(blur_discrimination_signal(pedestal, pedestal + db, forced), 0.0, 0.0)[0] - 0.75
        ),
        1e-9,
        50.0,
        xtol=1e-13,
    )


@pytest.mark.parametrize("t0, weber", [(0.15, 0.12), (0.10, 0.2), (0.3, 0.08)])
def test_blur_thresholds_are_the_settings_and_follow_a_dipper(t0, weber):
    model = ComparisonModel("blur", threshold_at_focus_d=t0, weber_fraction=weber)
    # from focus: the threshold is T0; far from focus: Weber's law ΔB / B -> W
    assert _threshold(model, 0.0) == pytest.approx(t0, rel=1e-9)
    assert _threshold(model, 40.0) / 40.0 == pytest.approx(weber, rel=2e-3)
    pedestals = np.linspace(0.0, 3.0, 301)
    th = np.array([_threshold(model, b) for b in pedestals])
    # the dipper: the smallest threshold is below T0, near b = b_i; beyond, thresholds grow with blur
    i = int(np.argmin(th))
    assert th[i] < 0.8 * t0
    assert 0.3 * model.intrinsic_blur_d < pedestals[i] < 1.5 * model.intrinsic_blur_d
    assert np.all(np.diff(th[pedestals > 2 * model.intrinsic_blur_d]) > 0)


def test_default_blur_constants_match_the_cited_thresholds():
    model = ComparisonModel("blur")
    assert _threshold(model, 0.0) == pytest.approx(0.15, rel=1e-9)  # Jacobs et al. 1989: 0.10-0.18 D
    dip = min(_threshold(model, b) for b in np.linspace(0.05, 1.0, 96))
    assert 0.05 <= dip <= 0.08  # change-in-blur threshold 0.05-0.07 D (Jacobs et al. 1989)
    assert model.intrinsic_blur_d == pytest.approx(0.297, abs=1e-3)


def test_blur_signal_slope_by_finite_differences():
    model = ComparisonModel("blur")
    bi2, w = model.intrinsic_blur_d**2, model.log_blur_noise
    for b in (0.0, 0.1, 0.3, 1.0, 2.5):
        h = 1e-6
        fd = (blur_discrimination_signal(b, b + h, model) - blur_discrimination_signal(b, b - h, model)) / (2 * h)
        assert fd == pytest.approx(b / ((b * b + bi2) * w), rel=1e-6, abs=1e-6)


def test_model_settings_are_validated():
    with pytest.raises(InvalidInputError, match="kind"):
        ComparisonModel("duochrome")
    with pytest.raises(InvalidInputError, match="indifference"):
        ComparisonModel(indifference=-0.1)
    with pytest.raises(InvalidInputError, match="latent"):
        ComparisonModel(latent="cubic")
    assert ComparisonModel(latent="probit").uses_size and not ComparisonModel().uses_size
    assert not ComparisonModel("blur", latent="probit").uses_size


# ------------------------------------------------------------------ the simulated patient
PATIENT_RX = Prescription(-1.25, -0.75, 30.0)


def _patient(seed=3, **kw) -> SimulatedPatient:
    return SimulatedPatient(
        PATIENT_RX, best_corrected_logmar=-0.05, slope=4.0, n_alternatives=10, lapse=0.02, seed=seed, **kw
    )


def test_thurstone_patient_is_eq_11_with_the_linear_latent():
    patient = _patient()
    model = ComparisonModel(indifference=0.4, lapse=0.03)
    l1, l2 = Prescription(-1.0, -0.75, 30.0), Prescription(-1.75, -0.25, 40.0)
    va1, va2 = patient.acuity_logmar(l1), patient.acuity_logmar(l2)
    # closed form: δ = a (VA2 - VA1) (Blendowske acuity: VA* + log10(1 + β²)); s cancels
    for s in (0.0, 0.3, 0.9):
        p = patient_comparison_probabilities(patient, 0, s, l1, l2, model)
        np.testing.assert_allclose(p, ternary_scalar(4.0 * (va2 - va1), 0.4, 0.03), rtol=1e-9)
    beta1 = np.linalg.norm(l1.power_vector_array() - PATIENT_RX.power_vector_array())
    assert va1 == pytest.approx(-0.05 + math.log10(1 + beta1**2), rel=1e-12)


def test_blur_patient_uses_the_accommodated_blur():
    patient = _patient(age_years=25)  # usable accommodation 2/3 * (18.5 - 7.5) = 7.3 D
    model = ComparisonModel("blur", lapse=0.0)
    truth = PATIENT_RX.power_vector_array()
    minus = Prescription(PATIENT_RX.sphere_d - 1.0, PATIENT_RX.cylinder_d, PATIENT_RX.axis_deg)
    plus = Prescription(PATIENT_RX.sphere_d + 0.5, PATIENT_RX.cylinder_d, PATIENT_RX.axis_deg)
    # 1 D too minus is cancelled by accommodation: the correction and it look alike (δ = 0)
    p = patient_comparison_probabilities(patient, 0, 0.2, PATIENT_RX, minus, model)
    assert p[0] == pytest.approx(p[1], rel=1e-12)
    # 0.5 D too plus is blur: the correction is the clearer, δ = ln(ρ(0.5)/ρ(0)) / w
    p = patient_comparison_probabilities(patient, 0, 0.2, PATIENT_RX, plus, model)
    bi = model.intrinsic_blur_d
    delta = 0.5 * math.log((0.25 + bi**2) / bi**2) / model.log_blur_noise
    np.testing.assert_allclose(p, ternary_scalar(delta, 0.5, 0.0), rtol=1e-9)
    assert np.linalg.norm(plus.power_vector_array() - truth) == pytest.approx(0.5)


@pytest.mark.parametrize("kind", ["thurstone", "blur"])
def test_keyed_answers_follow_their_probabilities(kind):
    """Monte Carlo: over 6000 trial indices the answer frequencies match the probabilities
    (each within 4.5 binomial standard errors), and trial k's answer does not depend on order."""
    patient = _patient(seed=11)
    model = ComparisonModel(kind, indifference=0.5, lapse=0.05)
    l1, l2 = Prescription(-1.0, -0.75, 30.0), Prescription(-1.25, -0.25, 30.0)
    p = patient_comparison_probabilities(patient, 0, 0.2, l1, l2, model)
    assert p.min() > 0.05  # all three answers are frequent enough for the check to bite
    n = 6000
    answers = [answer_comparison_trial(patient, k, 0.2, l1, l2, model) for k in range(n)]
    freq = np.array([answers.count(a) for a in COMPARISON_ANSWERS]) / n
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) < 4.5 * se), (freq, p)
    # keyed: the same k gives the same answer whatever was asked before, and another patient seed differs
    again = [answer_comparison_trial(patient, k, 0.2, l1, l2, model) for k in range(n - 1, -1, -1)][::-1]
    assert again == answers
    other = [answer_comparison_trial(_patient(seed=12), k, 0.2, l1, l2, model) for k in range(200)]
    assert other != answers[:200]


def test_comparison_stream_is_not_the_letter_stream():
    """The comparison at trial k draws its own uniform: u_k of the letters would make the answer
    a function of the letter answer at the same k."""
    patient = _patient(seed=5)
    model = ComparisonModel(indifference=0.0, lapse=0.0)
    l1, l2 = Prescription(-1.0, -0.75, 30.0), Prescription(-1.5, -0.75, 30.0)
    p1 = patient_comparison_probabilities(patient, 0, 0.2, l1, l2, model)[0]
    via_letter_u = [patient.trial_uniform(k) < p1 for k in range(400)]
    answers = [answer_comparison_trial(patient, k, 0.2, l1, l2, model) == "1" for k in range(400)]
    assert via_letter_u != answers
    with pytest.raises(InvalidInputError, match="integer seed"):
        answer_comparison_trial(SimulatedPatient(PATIENT_RX, seed=np.random.default_rng(0)), 0, 0.2, l1, l2, model)
