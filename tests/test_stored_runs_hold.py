"""What replays exactly and what holds on any machine (tests/stored_runs.py, docs/results/README.md):
on this machine a stored run's case runs twice alike and a session killed mid-way and rebuilt from
its log is the uninterrupted one, to the last bit; the recorded answers belong to their stores; and
the cross-machine checks fail on a figure or a question that moved. The stores' figures and the
answers are read from the text fixture tests/fixtures/stored_runs.json: no store is needed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.record_stored_answers import NEAR_TIE, decision_gaps, robust_prefix
from tests.stored_runs import (
    ESTIMATE_TOLERANCE_D,
    MIN_SAME_TRIALS,
    STORED_CASES,
    assert_answers_are_the_stores,
    assert_recomputes,
    assert_resimulates,
    assert_resumes_alike,
    assert_runs_twice_alike,
    read_answers,
    stored_answers,
)

#: Short stored runs of each kind of session: letters and comparisons priced by lens change,
#: sliders, a mixed session of benchmarks/comparisons.py, a trial frame's.
SHORT = [
    "clinical-validation-clinical-sloan-compare.sqlite/clinical-sloan-compare-seed1/adult-clinic/evr/2",
    "clinical-validation-clinical-sloan-compare-sliders-evr-stop.sqlite/clinical-sloan-compare-sliders-evr-stop-seed1/adult-clinic/evr/3",
    "comparisons.sqlite/clinical-sloan-seed1-comparisons/adult-clinic/mixed, blur model / Eq. 11 patient/0",
    "clinical-validation-clinical-sloan-compare-trial-frame.sqlite/clinical-sloan-compare-trial-frame-seed1/adult-clinic/evr/0",
]


def _short_id(key: str) -> str:
    c = STORED_CASES[key]
    store = c.store.removeprefix("clinical-validation-").removesuffix(".sqlite")
    return f"{store}-{c.population}-{c.case_id}-{c.policy[:10]}"


@pytest.mark.replay
@pytest.mark.parametrize("key", SHORT, ids=_short_id)
def test_a_stored_runs_case_run_twice_is_the_same_to_the_last_bit(key):
    assert_runs_twice_alike(STORED_CASES[key])


@pytest.mark.replay
@pytest.mark.parametrize("key", SHORT, ids=_short_id)
def test_a_stored_runs_session_killed_mid_way_and_rebuilt_from_its_log_is_the_uninterrupted_one(key):
    case = STORED_CASES[key]
    assert_resumes_alike(case, len(stored_answers(case)["trials"]) // 2)


def test_every_stored_run_held_has_its_answers_recorded_and_they_are_the_stores():
    """(c) for every registered run, read from text: the recorded answers' count, kinds and stop
    are the store's; nothing recorded that is not registered."""
    recorded = read_answers()
    assert set(recorded) == set(STORED_CASES)
    for case in STORED_CASES.values():
        answers = recorded[case.key]
        assert_answers_are_the_stores(case, answers, case.stored())
        assert MIN_SAME_TRIALS <= answers["robust_prefix"] <= len(answers["trials"])


@pytest.fixture(scope="module")
def short_case():
    case = STORED_CASES[SHORT[0]]
    return case, stored_answers(case), case.stored()


def test_a_recomputed_figure_that_moved_fails(short_case):
    case, answers, stored = short_case
    assert_recomputes(case, answers, stored)
    for key, moved in (
        ("exact_error_d", stored["exact_error_d"] + 10 * ESTIMATE_TOLERANCE_D),
        ("error_d", stored["error_d"] + 0.25),
        ("covered_50", not stored["covered_50"]),
        ("lens_changes", stored["lens_changes"] + 1),
        ("stopped_by", "budget"),
    ):
        with pytest.raises(AssertionError):
            assert_recomputes(case, answers, {**stored, key: moved})


def test_an_answer_changed_changes_the_recomputed_result(short_case):
    """(a) uses the answers: the same log with the last few answers flipped files another result."""
    case, answers, stored = short_case
    flipped = [
        dict(t, correct=not t["correct"], comparison={"1": "2", "2": "1"}.get(t["comparison"], t["comparison"]))
        if i >= len(answers["trials"]) - 6
        else t
        for i, t in enumerate(answers["trials"])
    ]
    again, _ = case.recompute(flipped, answers["stopped_by"])
    assert again["exact_error_d"] != pytest.approx(stored["exact_error_d"], abs=ESTIMATE_TOLERANCE_D)


def test_a_question_asked_otherwise_before_the_first_near_tie_fails(short_case):
    case, answers, _ = short_case
    trials = case.run()[1]
    assert assert_resimulates(case, answers, trials) >= answers["robust_prefix"]
    moved = [dict(t) for t in answers["trials"]]
    sphere, *rest = moved[MIN_SAME_TRIALS - 1]["lens"]
    moved[MIN_SAME_TRIALS - 1]["lens"] = [sphere + 0.25, *rest]
    with pytest.raises(AssertionError, match=f"trial {MIN_SAME_TRIALS - 1}"):
        assert_resimulates(case, {**answers, "trials": moved}, trials)
    late = len(moved) - 1  # a question after the recorded first near-tie may move
    moved = [dict(t) for t in answers["trials"]]
    moved[late] = dict(moved[late], s_logmar=moved[late]["s_logmar"] + 0.1)
    assert assert_resimulates(case, {**answers, "trials": moved, "robust_prefix": late}, trials) == late


def test_near_ties_are_the_decisions_within_a_relative_gap():
    """The recorder's tracer: an argmax whose best two values differ by less than NEAR_TIE (relative)
    and a value rounded to a step within NEAR_TIE of its edge are near-ties; the first one bounds
    the prefix another CPU must ask alike."""
    from visiontune.refraction import lenses, optics_rules

    with decision_gaps() as gaps:
        optics_rules.np.argmax(np.array([1.0, 1.0 + 1e-12, 0.5]))
        optics_rules.np.argmax(np.array([1.0, 2.0]))
        lenses.np.floor(np.array([2.0 + 1e-13, 0.5]))
    assert gaps[0][1] < NEAR_TIE < gaps[1][1] and gaps[2][1] < NEAR_TIE
    assert robust_prefix([(0, 0.5), (3, 0.1), (7, NEAR_TIE / 2), (9, 0.0)], 12) == 7
    assert robust_prefix([(0, 0.5)], 12) == 12
    assert optics_rules.np is np  # restored


def test_a_case_registered_for_a_store_is_refused_for_another_protocol():
    from tests.stored_runs import RESULTS, assert_holds, load_protocol

    case = STORED_CASES[SHORT[0]]
    other = load_protocol("clinical-sloan")
    with pytest.raises(AssertionError, match="another protocol"):
        assert_holds(RESULTS / case.store, case.experiment, other, case.population, case.case_id)
    assert dataclasses.replace(case, case_id=99).key not in STORED_CASES


def test_the_fixture_is_as_the_recorder_writes_it():
    """tests/fixtures/stored_runs.json is the recorder's text (not edited by hand): each registered
    run once, its metrics without decision times, its stop the metrics' stop."""
    import json

    from tests.record_stored_answers import fixture_text
    from tests.stored_runs import ANSWERS

    text = ANSWERS.read_text()
    raw = json.loads(text)
    assert fixture_text(raw) == text
    assert list(raw) == list(STORED_CASES)
    for run in raw.values():
        assert "decision_ms" not in run["metrics"] and run["metrics"]["stopped_by"] == run["stopped_by"]
