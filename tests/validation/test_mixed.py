"""Mixed sessions (comparisons in the one trial loop, run by visiontune.validation.mixed): the
letter-only protocol is unchanged (held to the stored validation runs), the loop
with comparisons off asks the letter loop's queries, a log of both kinds is the source of
truth (undo, rebuild), and the metrics add up."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tests.stored_runs import MIXED_LABELS, assert_holds
from visiontune.errors import InvalidInputError
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.loop import (
    Answer,
    ComparisonReply,
    MemoryLog,
    PendingComparison,
    Refraction,
    SimulatedPresenter,
    is_comparison,
)
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.mixed import MixedCaseSpec, run_mixed_case

ROOT = Path(__file__).resolve().parents[2]
#: Names the runs held; their figures and answers are read from tests/fixtures/stored_runs.json.
STORE = ROOT / "docs" / "results" / "clinical-validation.sqlite"
PROTOCOL = load_protocol("clinical-sloan")
CASES = draw_cases(population_by_name("adult-clinic"), 3, 1)


def _start(case) -> StartingPoint:
    return StartingPoint(case.start_rx, case.start_source, case.age_years)


@pytest.mark.replay
def test_letter_only_protocol_holds_to_the_stored_validation():
    """Cases 0 and 1 of the stored validation (clinical-sloan-seed1, adult-clinic, evr): the
    recorded answers give the stored stop, filed lens and coverage (estimate within 1e-9 D), and
    run_case asks the recorded questions up to the first near-tie: the posterior's generic
    likelihood and the shared scoring changed nothing for letters."""
    for case_id in (0, 1):
        assert_holds(STORE, "clinical-sloan-seed1", PROTOCOL, "adult-clinic", case_id)


def test_mixed_loop_with_comparisons_off_asks_the_letter_loops_queries():
    case = CASES[2]
    patient = case.patient(PROTOCOL.n_alternatives)
    letters = Refraction(MemoryLog(), PROTOCOL, seed=case.seed, start=_start(case), simulated=True)
    letters.run(SimulatedPresenter(patient), max_steps=25)
    mixed = Refraction(
        MemoryLog(),
        dataclasses.replace(PROTOCOL, comparisons=MixedSettings(comparisons=False)),
        seed=case.seed,
        start=_start(case),
        simulated=True,
    )
    mixed.run(
        SimulatedPresenter(case.patient(PROTOCOL.n_alternatives), comparison_model=ComparisonModel()), max_steps=25
    )
    a = [(t.s_logmar, t.lens, t.letter_shown, t.correct) for t in letters.trials()]
    b = [(t.s_logmar, t.lens, t.letter_shown, t.correct) for t in mixed.trials()]
    assert len(a) == 25 and a == b
    assert letters.current_estimate().rounded == mixed.current_estimate().rounded


def _mixed(case, model: ComparisonModel | None = None) -> Refraction:
    protocol = dataclasses.replace(PROTOCOL, comparisons=MixedSettings(comparison=model or ComparisonModel()))
    return Refraction(MemoryLog(), protocol, seed=case.seed, start=_start(case), simulated=True)


def test_a_mixed_log_is_the_source_of_truth():
    case = CASES[0]
    r = _mixed(case)
    presenter = SimulatedPresenter(case.patient(PROTOCOL.n_alternatives), comparison_model=ComparisonModel(lapse=0.02))
    r.run(presenter, max_steps=30)
    kinds = {is_comparison(t) for t in r.trials()}
    assert kinds == {True, False}  # both kinds were asked
    # undo the last answer (of either kind): voided, kept in the log; the posterior is rebuilt
    # from the 29 valid answers, bit for bit the posterior of a session that never had the 30th
    before = r.engine.posterior(r.trials()[:29]).theta.copy()
    r.engine.posterior(r.trials())  # back on all 30
    voided = r.undo()
    assert voided.void and len(r.trials(include_void=True)) == 30 and len(r.trials()) == 29
    np.testing.assert_array_equal(r.engine.posterior(r.trials()).theta, before)
    q = r.next_query()
    assert q.index == 30  # void trials count in k, as in the letter loop
    # a session rebuilt from the same log (a crash, a new engine) proposes the same question and
    # has the same posterior bit for bit
    again = Refraction(r.log, r.protocol, seed=case.seed, start=_start(case), simulated=True)
    assert again.next_query() == q
    np.testing.assert_array_equal(again.engine.posterior(again.trials()).theta, r.engine.posterior(r.trials()).theta)
    # the answer's kind must match the question's
    wrong = Answer(correct=True) if isinstance(q, PendingComparison) else ComparisonReply("1")
    with pytest.raises(InvalidInputError, match="pending"):
        r.record(wrong)
    with pytest.raises(InvalidInputError, match="choice"):
        ComparisonReply("3")


def test_run_mixed_case_metrics_add_up():
    case = CASES[1]
    spec = MixedCaseSpec(
        "t",
        PROTOCOL.source_text,
        PROTOCOL.source,
        "mixed",
        "adult-clinic",
        case,
        MixedSettings(comparison=ComparisonModel("blur")),
    )
    m = run_mixed_case(spec).metrics
    assert m["letters"] + m["comparisons"] == m["answers"] == len(m["error_by_answer"]) == len(m["seconds_by_answer"])
    assert m["patient_s"] == pytest.approx(3.0 * m["letters"] + 5.0 * m["comparisons"])
    assert m["seconds_by_answer"][-1] == pytest.approx(m["patient_s"])
    assert np.all(np.diff(m["seconds_by_answer"]) > 0)
    assert m["error_by_answer"][-1] == pytest.approx(m["error_d"], abs=1e-12)
    assert 0 <= m["equal_answers"] <= m["comparisons"]
    assert {"covered_50", "covered_80", "covered_95", "start_error_d"} <= set(m)


COMPARISONS_STORE = ROOT / "docs" / "results" / "comparisons.sqlite"


@pytest.mark.replay
@pytest.mark.parametrize("label", list(MIXED_LABELS))
def test_mixed_sessions_hold_to_the_stored_comparison_runs(label):
    """Case 0 of stored rows of docs/results/comparisons.md (benchmarks/comparisons.py's settings,
    tests/stored_runs.py MIXED_LABELS): the recorded answers give the stored figures, the rerun
    asks the recorded questions up to the first near-tie: the comparison likelihood's per-lens
    and per-outcome evaluation changed no answer."""
    protocol = load_protocol("clinical-sloan")
    assert_holds(COMPARISONS_STORE, "clinical-sloan-seed1-comparisons", protocol, "adult-clinic", 0, policy=label)
