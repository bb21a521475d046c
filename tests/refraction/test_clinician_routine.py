"""The clinician's routine on a noise-free patient (the oracle: its answers follow the blur exactly),
its bookkeeping of seconds and changes, and its keyed answers on a simulated patient."""

from __future__ import annotations

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.clinician_routine import RoutineSettings, run_routine
from visiontune.refraction.loop import ComparisonReply, LineReply, PendingComparison, PendingLine
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.simulated import simulated_presenter


class ExactPatient:
    """Answers by the blur alone: ``b = |P(L) - P*|`` with a too-minus ``M`` cleared by up to
    ``amplitude`` D of accommodation; a line is read (all five) iff ``log10(1 + b²) <= s``
    (Blendowske 2015 with VA* = 0); a comparison names the lens of smaller blur, "=" within
    ``jnd`` D."""

    def __init__(self, truth: Prescription, amplitude: float = 0.0, jnd: float = 0.02):
        self.truth, self.amplitude, self.jnd = truth.power_vector_array(), amplitude, jnd
        self.log: list = []

    def blur(self, lens: Prescription) -> float:
        r = lens.power_vector_array() - self.truth
        if r[0] < 0.0:  # too minus: a hyperopic residual, cleared by accommodation
            r[0] = min(0.0, r[0] + self.amplitude)
        return float(np.linalg.norm(r))

    def present(self, query):
        self.log.append(query)
        if isinstance(query, PendingLine):
            read = np.log10(1.0 + self.blur(query.lens) ** 2) <= query.s_logmar + 1e-9
            return LineReply((bool(read),) * len(query.letters))
        assert isinstance(query, PendingComparison)
        b1, b2 = self.blur(query.lens1), self.blur(query.lens2)
        return ComparisonReply("1" if b1 < b2 - self.jnd else "2" if b2 < b1 - self.jnd else "=")


def _error(rx: Prescription, truth: Prescription) -> float:
    return float(np.linalg.norm(rx.power_vector_array() - truth.power_vector_array()))


@pytest.mark.parametrize(
    ("truth", "start"),
    [
        (Prescription(-2.0, -1.0, 20.0), Prescription(-1.25, -0.75, 40.0)),
        (Prescription(+1.5, -1.5, 95.0), Prescription(+2.25, -1.0, 75.0)),
        (Prescription(-0.5, -0.75, 170.0), Prescription(-0.5, 0.0, 180.0)),
        (Prescription(-3.0, 0.0, 180.0), Prescription(-3.75, -0.5, 90.0)),
    ],
)
def test_a_noise_free_patient_is_refracted_to_within_a_quarter_dioptre(truth, start):
    patient = ExactPatient(truth)
    result = run_routine(patient, start, seed=3)
    assert _error(result.filed, truth) <= 0.25 + 1e-9, (result.filed, truth)
    assert _error(result.filed, truth) < _error(start, truth)


@pytest.mark.parametrize("start_axis", [10.0, 50.0, 175.0])
def test_the_axis_turns_to_the_true_axis_from_either_side(start_axis):
    truth, start = Prescription(-1.0, -1.5, 30.0), Prescription(-1.0, -1.5, start_axis)
    result = run_routine(ExactPatient(truth), start, seed=0)
    turned = abs((result.filed.to_minus_cylinder().axis_deg - 30.0 + 90.0) % 180.0 - 90.0)
    assert turned <= 5.0 + 1e-9, result.filed


def test_an_accommodating_eye_is_not_over_minused_from_a_too_minus_start():
    truth = Prescription(+0.5, 0.0, 180.0)
    start = Prescription(-0.75, 0.0, 180.0)  # 1.25 D too minus, read clearly by accommodating
    result = run_routine(ExactPatient(truth, amplitude=4.0), start, seed=1)
    assert result.filed.power_vector_array()[0] - truth.power_vector_array()[0] >= -0.25 - 1e-9
    assert _error(result.filed, truth) <= 0.25 + 1e-9


def test_seconds_count_answers_and_changes_at_the_settings_durations():
    truth, start = Prescription(-2.0, -1.0, 20.0), Prescription(-1.25, -0.75, 40.0)
    settings = RoutineSettings(comparison_seconds=5.0, line_seconds=6.0, change_seconds=4.0)
    patient = ExactPatient(truth)
    result = run_routine(patient, start, settings=settings, seed=3)
    lines = sum(isinstance(q, PendingLine) for q in patient.log)
    comparisons = sum(isinstance(q, PendingComparison) for q in patient.log)
    assert (result.lines, result.comparisons) == (lines, comparisons)
    assert result.seconds == pytest.approx(5.0 * comparisons + 6.0 * lines + 4.0 * result.changes)
    # every change of the lens in place is counted once: the lenses read through, in order
    placed = [q.lens for q in patient.log if isinstance(q, PendingLine)]
    assert result.changes >= len({p.power_vector_array().round(6).tobytes() for p in placed})
    free = run_routine(ExactPatient(truth), start, settings=RoutineSettings(change_seconds=0.0), seed=3)
    assert free.seconds == pytest.approx(result.seconds - 4.0 * result.changes)


def test_keyed_answers_make_the_routine_repeatable_on_a_simulated_patient():
    case = draw_cases(population_by_name("adult-clinic"), 3, 1)[2]
    runs = [run_routine(simulated_presenter(case.patient(10)), case.start_rx, seed=case.seed) for _ in range(2)]
    assert runs[0].filed == runs[1].filed and runs[0].seconds == runs[1].seconds


def test_bad_settings_are_refused_with_the_field_named():
    with pytest.raises(InvalidInputError, match="change_seconds"):
        RoutineSettings(change_seconds=float("nan"))
