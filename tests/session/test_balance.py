"""Binocular balance (fogged alternate occlusion), the letter chart and the simulated fellow eye."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.session.balance import (
    FOG_D,
    MAX_CHANGE_D,
    BalanceEnd,
    BalanceQuestion,
    balance_step,
    reason_not_to_balance,
    simulated_clearer,
)
from visiontune.session.chart import read_chart_simulated
from visiontune.session.simulated_visit import fellow_eye_case, visit_cases

END_OD = Prescription(-1.25, -0.5, 90.0)
END_OS = Prescription(-2.0, -0.75, 175.0)


def test_first_question_fogs_both_end_points_by_the_same_plus():
    q = balance_step(END_OD, END_OS, [])
    assert isinstance(q, BalanceQuestion) and q.index == 0
    assert (q.plus_od_d, q.plus_os_d) == (FOG_D, FOG_D) == (0.75, 0.75)
    assert q.lens_od == Prescription(-0.5, -0.5, 90.0) and q.lens_os == Prescription(-1.25, -0.75, 175.0)


@pytest.mark.parametrize(
    "answers, outcome, change_od, change_os",
    [
        (["equal"], "equal", 0.0, 0.0),
        (["OS", "equal"], "equal", 0.0, 0.25),  # left clearer: +0.25 on the left, then equal
        (["OD", "OD", "equal"], "equal", 0.5, 0.0),
        (["OS", "OD"], "right eye clearer", 0.0, 0.25),  # swapped sides: the right eye is left clearer
        (["OD", "OS"], "right eye clearer", 0.0, 0.0),  # the step on the right eye went past: taken back
        (["OD", "OD", "OS"], "right eye clearer", 0.25, 0.0),
        (["OD", "OD", "OD"], "not balanced", 0.0, 0.0),  # more than +0.50 D would be needed
        (["OS", "OS", "OS"], "not balanced", 0.0, 0.0),
    ],
)
def test_the_procedure_ends_equal_or_with_the_right_eye_clearer(answers, outcome, change_od, change_os):
    for k in range(len(answers)):  # every prefix asks the next question with the plus so far
        q = balance_step(END_OD, END_OS, answers[:k])
        assert isinstance(q, BalanceQuestion) and q.index == k
        assert q.lens_od.sphere_d == pytest.approx(END_OD.sphere_d + q.plus_od_d)
    end = balance_step(END_OD, END_OS, answers)
    assert isinstance(end, BalanceEnd)
    assert (end.outcome, end.plus_change_od_d, end.plus_change_os_d) == (outcome, change_od, change_os)
    assert max(end.plus_change_od_d, end.plus_change_os_d) <= MAX_CHANGE_D
    assert (end.reason is not None) == (outcome == "not balanced")


def test_a_bad_answer_is_refused():
    with pytest.raises(InvalidInputError, match="answers\\[1\\]: expected 'OD', 'OS' or 'equal'"):
        balance_step(END_OD, END_OS, ["OD", "left"])


def test_eyes_that_see_differently_are_not_balanced():
    assert reason_not_to_balance(0.0, 0.2) is None
    assert "differ by 0.30 logMAR" in reason_not_to_balance(0.0, 0.3)


def _run_balance(patient_od, patient_os, end_od, end_os, seeds):
    answers = []
    while isinstance(step := balance_step(end_od, end_os, answers), BalanceQuestion):
        answers.append(simulated_clearer(patient_od, patient_os, step, *seeds))
    return step, answers


def _case(rx: Prescription, seed: int, **changes):
    case = simulated_case(seed=1, protocol=load_protocol("clinical-sloan"))
    return dataclasses.replace(
        case,
        true_rx=rx,
        seed=seed,
        best_corrected_logmar=0.0,
        age_years=60.0,
        accommodation_d=0.0,
        letter_difficulty=False,
        drift=False,
        **changes,
    )


def test_simulated_patient_with_an_over_minused_left_eye_gets_plus_on_that_eye():
    """OD refracted right, OS ended 0.50 D too minus: in fog the left eye looks clearer, so the
    balance puts plus on it (+0.50 D most of the time) and never on the right eye. When the
    patient still calls the left eye clearer at equal blur, the +0.50 D limit ends it "not
    balanced", changing nothing."""
    truth = Prescription(-2.0, -0.5, 90.0)
    od = _case(truth, 11).patient(10)
    os_ = _case(truth, 12).patient(10)
    over_minus = Prescription(-2.5, -0.5, 90.0)
    ends = [_run_balance(od, os_, truth, over_minus, (s, s + 1))[0] for s in range(200)]
    assert all(e.plus_change_od_d == 0.0 for e in ends)
    assert np.mean([e.plus_change_os_d == 0.5 for e in ends]) > 0.7
    assert all(e.plus_change_os_d > 0 or e.outcome == "not balanced" for e in ends)
    assert np.mean([e.outcome == "not balanced" for e in ends]) < 0.15


def test_simulated_patient_with_two_right_end_points_mostly_changes_nothing():
    truth = Prescription(-2.0, -0.5, 90.0)
    od, os_ = _case(truth, 11).patient(10), _case(truth, 12).patient(10)
    ends = [_run_balance(od, os_, truth, truth, (s, s + 1))[0] for s in range(200)]
    assert np.mean([(e.plus_change_od_d, e.plus_change_os_d) == (0.0, 0.0) for e in ends]) > 0.7
    assert all(e.outcome != "not balanced" for e in ends)


def test_simulated_answers_are_keyed_so_a_resumed_balance_hears_the_same():
    truth = Prescription(-2.0, -0.5, 90.0)
    od, os_ = _case(truth, 11).patient(10), _case(truth, 12).patient(10)
    q = balance_step(truth, truth, [])
    assert {simulated_clearer(od, os_, q, 5, 6) for _ in range(5)} == {simulated_clearer(od, os_, q, 5, 6)}


def test_chart_reads_the_acuity_through_the_lens():
    """Letter-by-letter score 1.1 - 0.02 N: about the patient's acuity through the lens, and
    0.30 logMAR worse through 1 D of blur (Blendowske: log10(1 + 1) = 0.30)."""
    truth = Prescription(-2.0, -0.5, 90.0)
    patient = _case(truth, 3, slope=8.0, lapse=0.0).patient(10)
    letters = tuple("CDHKNORSVZ")
    sharp = [read_chart_simulated(patient, truth, letters, s).va_logmar for s in range(40)]
    blurred = [read_chart_simulated(patient, Prescription(-1.0, -0.5, 90.0), letters, s).va_logmar for s in range(40)]
    assert abs(np.mean(sharp) - 0.0) < 0.1
    assert np.mean(blurred) - np.mean(sharp) == pytest.approx(0.30, abs=0.08)
    reading = read_chart_simulated(patient, truth, letters, 7)
    assert reading == read_chart_simulated(patient, truth, letters, 7)
    assert reading.va_logmar == pytest.approx(1.1 - 0.02 * reading.letters_correct)
    assert sum(n for _, n in reading.lines) == reading.letters_correct
    assert all(n >= 3 for _, n in reading.lines[:-1])  # stopped after the first line with 3 or more wrong


def test_fellow_eye_is_the_same_person_with_a_close_mirrored_refraction():
    protocol = load_protocol("clinical-sloan")
    diffs, j45 = [], []
    for seed in range(150):
        cases = visit_cases(seed, protocol)
        od, os_ = cases["OD"], cases["OS"]
        assert (os_.age_years, os_.slope, os_.best_corrected_logmar, os_.acuity_model) == (
            od.age_years,
            od.slope,
            od.best_corrected_logmar,
            od.acuity_model,
        )
        assert os_.seed != od.seed and os_.start_source == od.start_source
        pv_od, pv_os = od.true_rx.power_vector_array(), os_.true_rx.power_vector_array()
        diffs.append(np.linalg.norm(pv_os - pv_od * [1, 1, -1]))
        j45.append((pv_od[2], pv_os[2]))
    assert np.median(diffs) < 0.4 and np.mean(np.array(diffs) < 0.5) > 0.7
    od45, os45 = np.array(j45).T
    assert np.corrcoef(od45, os45)[0, 1] < -0.3  # oblique axes mirrored
    assert visit_cases(3, protocol)["OS"] == fellow_eye_case(visit_cases(3, protocol)["OD"], 3, protocol)


def test_gp_protocol_left_eye_stays_at_its_fixed_axis():
    protocol = load_protocol("paper-ucb-ald")
    os_ = visit_cases(4, protocol)["OS"]
    assert os_.true_rx.axis_deg == protocol.search_space.axis_deg
