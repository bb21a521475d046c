"""The simulated patient of a clinic: accommodation, attention drift, oblique axes."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import hofstetter_amplitude_d
from visiontune.optics.acuity import PupilBlurAcuity
from visiontune.optics.attention import AttentionDrift
from visiontune.optics.patient import SimulatedPatient
from visiontune.optics.prescription import Prescription

RX = Prescription(-2.25, -1.25, 35)  # an oblique astigmat


def shifted(rx: Prescription, d_sphere: float) -> Prescription:
    return Prescription(rx.sphere_d + d_sphere, rx.cylinder_d, rx.axis_deg)


def test_young_patient_reads_through_over_minus_but_not_through_plus():
    young = SimulatedPatient(RX, slope=5.0, n_alternatives=10, age_years=25, seed=1)
    # Hofstetter mean 18.5 - 0.3 · 25 = 11 D, of which 2/3 are used
    assert young.accommodation_amplitude_d == pytest.approx(11.0)
    assert young.usable_accommodation_d == pytest.approx(11.0 * 2 / 3)
    for s in (-0.1, 0.0, 0.2):
        p_best = young.probability_correct(s, RX)
        assert young.probability_correct(s, shifted(RX, -1.0)) == pytest.approx(p_best, abs=1e-12)
        assert young.probability_correct(s, shifted(RX, -3.0)) == pytest.approx(p_best, abs=1e-12)
        assert young.probability_correct(s, shifted(RX, +1.0)) < p_best - 0.05
    assert young.blur_diopters(shifted(RX, -1.0)) == pytest.approx(0.0, abs=1e-12)
    assert young.blur_diopters(shifted(RX, +1.0)) == pytest.approx(1.0)
    # only M is accommodated: a cylinder error is still seen through any amount of minus
    wrong_axis = Prescription(-3.25, -1.25, 65)
    assert young.blur_diopters(wrong_axis) == pytest.approx(
        np.hypot(*(wrong_axis.power_vector_array() - RX.power_vector_array())[1:])
    )
    # frequencies, through the keyed answers: over-minus read as often as the correction
    n = 3000
    s = 0.0
    p = young.probability_correct(s, RX)
    hits_best = np.mean([young.answer_trial(k, s, RX) for k in range(n)])
    hits_minus = np.mean([young.answer_trial(k, s, shifted(RX, -1.0)) for k in range(n)])
    assert hits_best == hits_minus  # same key, same probability: the same answers
    assert abs(hits_best - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_presbyope_does_not_read_through_over_minus():
    assert hofstetter_amplitude_d(60, "mean") == pytest.approx(0.5)
    old = SimulatedPatient(RX, slope=5.0, n_alternatives=10, age_years=60, seed=1)
    assert old.usable_accommodation_d == pytest.approx(0.5 * 2 / 3)
    # -1 D of over-minus leaves -1 + 1/3 = -2/3 D: VA = log10(1 + 4/9) = 0.1597 logMAR
    assert old.blur_diopters(shifted(RX, -1.0)) == pytest.approx(2 / 3)
    assert old.acuity_logmar(shifted(RX, -1.0)) == pytest.approx(math.log10(1 + 4 / 9))
    assert old.probability_correct(0.0, shifted(RX, -1.0)) < old.probability_correct(0.0, RX) - 0.2
    # a quarter diopter of over-minus is still within reach (0.25 < 1/3)
    assert old.probability_correct(0.0, shifted(RX, -0.25)) == pytest.approx(old.probability_correct(0.0, RX))
    # no age, no amplitude: the paper's patient (no accommodation)
    plain = SimulatedPatient(RX, slope=5.0, n_alternatives=10, seed=1)
    assert plain.usable_accommodation_d == 0.0
    assert plain.blur_diopters(shifted(RX, -1.0)) == pytest.approx(1.0)


def test_accommodation_amplitude_and_fraction_keywords():
    given = SimulatedPatient(RX, age_years=70, accommodation_d=3.0, accommodation_fraction=0.5)
    assert given.accommodation_amplitude_d == 3.0 and given.usable_accommodation_d == 1.5
    assert given.blur_diopters(shifted(RX, -1.5)) == pytest.approx(0.0, abs=1e-12)
    assert given.blur_diopters(shifted(RX, -2.0)) == pytest.approx(0.5)
    none_used = SimulatedPatient(RX, age_years=20, accommodation_fraction=0.0)
    assert none_used.blur_diopters(shifted(RX, -1.0)) == pytest.approx(1.0)
    # arrays of lenses as (sphere, cylinder) at the patient's axis, and Prescription lists
    lenses = np.array([[-3.25, -1.25], [-1.25, -1.25], [-2.25, -1.25]])
    assert given.blur_diopters(lenses) == pytest.approx([0.0, 1.0, 0.0], abs=1e-12)
    assert given.blur_diopters([shifted(RX, -1.0), shifted(RX, 1.0)]) == pytest.approx([0.0, 1.0], abs=1e-12)
    # works with any acuity model
    pupil = SimulatedPatient(RX, acuity_model=PupilBlurAcuity(0.0, 5.0), age_years=30)
    assert pupil.acuity_logmar(shifted(RX, -2.0)) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(age_years=-1.0), "age_years"),
        (dict(age_years=float("nan")), "age_years"),
        (dict(age_years=True), "age_years"),
        (dict(accommodation_d=-0.5), "accommodation_d"),
        (dict(accommodation_d=[1.0, 2.0]), "accommodation_d"),
        (dict(accommodation_fraction=1.5), "accommodation_fraction"),
        (dict(drift="slow"), "drift"),
        (dict(drift=AttentionDrift(lapse_increase=0.9), lapse=0.05, n_alternatives=10), "drift"),
    ],
)
def test_bad_clinical_parameters_raise_naming_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        SimulatedPatient(RX, **kwargs)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(lapse_increase=-0.1), "lapse_increase"),
        (dict(over_trials=0), "over_trials"),
        (dict(over_trials=2.5), "over_trials"),
        (dict(logmar_per_100_trials=float("inf")), "logmar_per_100_trials"),
    ],
)
def test_bad_drift_parameters(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        AttentionDrift(**kwargs)


def test_drift_changes_the_probability_as_documented():
    drift = AttentionDrift(lapse_increase=0.06, over_trials=100, logmar_per_100_trials=0.05)
    patient = SimulatedPatient(RX, slope=4.0, n_alternatives=10, lapse=0.02, seed=3, drift=drift)
    steady = SimulatedPatient(RX, slope=4.0, n_alternatives=10, lapse=0.02, seed=3)
    lens, s = shifted(RX, 0.5), 0.3
    va = patient.acuity_logmar(lens)
    for k in (0, 50, 100, 300):
        lapse = 0.02 + 0.06 * min(k / 100, 1.0)
        shift = 0.05 * k / 100
        want = 0.1 + (1 - 0.1 - lapse) * ndtr(4.0 * (s - va - shift))
        assert patient.probability_correct_at_trial(k, s, lens) == pytest.approx(want, abs=1e-12)
    assert patient.probability_correct_at_trial(0, s, lens) == pytest.approx(steady.probability_correct(s, lens))
    assert steady.probability_correct_at_trial(300, s, lens) == pytest.approx(steady.probability_correct(s, lens))
    # the stream-based answer() ignores the drift (it does not know k)
    assert patient.probability_correct(s, lens) == pytest.approx(steady.probability_correct(s, lens))
    # answers: late trials (k >= 200: lapse 8%, shift >= 0.1 logMAR) are read less often, as computed
    n = 2000
    late = range(200, 200 + n)
    hits = np.mean([patient.answer_trial(k, s, lens) for k in late])
    expected = np.mean([patient.probability_correct_at_trial(k, s, lens) for k in late])
    assert abs(hits - expected) < 4 * math.sqrt(expected * (1 - expected) / n)
    assert expected < steady.probability_correct(s, lens) - 0.15
    # at letters far too large only the lapse is left: 1 - λ(k)
    assert patient.probability_correct_at_trial(100, 3.0, lens) == pytest.approx(1 - 0.08, abs=1e-6)


def test_drift_in_duels_only_through_the_probit_latent():
    drift = AttentionDrift(lapse_increase=0.1, over_trials=50, logmar_per_100_trials=0.1)
    x1, x2 = RX, shifted(RX, 1.0)
    linear = SimulatedPatient(RX, slope=3.0, n_alternatives=10, drift=drift)
    assert linear.preference_probability_at_trial(80, 0.2, x1, x2) == pytest.approx(
        linear.preference_probability(0.2, x1, x2)
    )
    probit = SimulatedPatient(RX, slope=3.0, n_alternatives=10, drift=drift, preference_latent="probit")
    assert probit.preference_probability_at_trial(80, 0.2, x1, x2) != pytest.approx(
        probit.preference_probability(0.2, x1, x2)
    )
    assert probit.preference_probability_at_trial(0, 0.2, x1, x2) == pytest.approx(
        probit.preference_probability(0.2, x1, x2)
    )


@pytest.mark.parametrize("axis", [1.0, 22.5, 45.0, 97.0, 135.0, 179.0])
def test_oblique_axes_everywhere(axis):
    true_rx = Prescription(-1.0, -2.0, axis)
    patient = SimulatedPatient(
        true_rx, slope=5.0, n_alternatives=10, age_years=30, seed=2, drift=AttentionDrift(0.02, 100, 0.01)
    )
    # the same lens in plus-cylinder form is the same lens
    assert patient.probability_correct(0.1, true_rx.transposed()) == pytest.approx(
        patient.probability_correct(0.1, true_rx)
    )
    assert patient.blur_diopters(true_rx.transposed()) == pytest.approx(0.0, abs=1e-9)
    # the cylinder 90° off: blur is the cylinder vector's full length |ΔJ| = |C| = 2 D, accommodation can't help
    crossed = Prescription(-1.0, -2.0, (axis + 90.0) % 180.0)
    assert patient.blur_diopters(crossed) == pytest.approx(2.0)
    assert patient.answer_trial(7, 0.1, crossed) == patient.answer_trial(7, 0.1, crossed)
    assert isinstance(patient.prefers_trial(3, 0.1, true_rx, crossed), bool)
