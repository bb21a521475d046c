"""Comparison questions ("which is clearer, 1 or 2?") in a clinical session over the SQLite trial
log: recorded with both lenses and the answer, replayed after a crash to the same next question,
undone like letters, asked exactly as the bench asks them, and counted in the result."""

from __future__ import annotations

import numpy as np
import pytest

from tests.simulated_sessions import SimulatedCase
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import lens_changes
from visiontune.refraction.loop import MemoryLog, Refraction, is_comparison
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.result import parse_result
from visiontune.session.engine import (
    Answer,
    ComparisonReply,
    PendingComparison,
    PendingQuery,
    RefractionSession,
)
from visiontune.session.store import TrialStore

PROTOCOL = load_protocol("clinical-sloan-compare")
SIM = SimulatedCase(PROTOCOL)
CASE, START = SIM.case, SIM.start
_session, _presenter = SIM.session, SIM.presenter


@pytest.fixture
def store(tmp_path):
    with TrialStore.open(tmp_path / "log.sqlite3") as s:
        yield s


def test_comparisons_are_logged_with_both_lenses_and_resume_to_the_same_question(store):
    with _session(store) as session:
        session.run(_presenter(), max_steps=12)
        expected = session.next_query()
        sid = session.session_id
        theta = session.engine.posterior(session.trials()).theta.copy()
    stored = store.trials(sid)
    comparisons = [t for t in stored if t.comparison is not None]
    assert comparisons and len(stored) == 12  # the Eq. 11 protocol asks comparisons from the start
    for t in comparisons:
        assert t.lens2 is not None and t.lens2 != t.lens and t.comparison in ("1", "2", "=")
        assert t.correct == (t.comparison == "1") and t.letter_shown in "CDHKNORSVZ"
        for lens in (t.lens, t.lens2):
            assert lens.sphere_d % 0.25 == 0 and lens.cylinder_d % 0.25 == 0
    with RefractionSession.resume(store, sid) as again:  # a new process: the log is all there is
        assert again.next_query() == expected
        np.testing.assert_array_equal(again.engine.posterior(again.trials()).theta, theta)


def test_the_bench_and_the_clinic_ask_the_same_questions(store):
    """The in-memory log (bench) and the SQLite log (clinic) give the same 15 questions and answers."""
    bench = Refraction(MemoryLog(), PROTOCOL, seed=CASE.seed, start=START, simulated=True)
    bench.run(_presenter(), max_steps=15)
    with _session(store) as clinic:
        clinic.run(_presenter(), max_steps=15)
        ours = [
            (
                t.s_logmar,
                t.lens.sphere_d,
                t.lens.cylinder_d,
                t.lens.axis_deg % 180,
                t.comparison,
                None if t.lens2 is None else t.lens2.sphere_d,
            )
            for t in clinic.trials()
        ]
    theirs = [
        (
            t.s_logmar,
            t.lens.sphere_d,
            t.lens.cylinder_d,
            t.lens.axis_deg % 180,
            t.comparison,
            None if t.lens2 is None else t.lens2.sphere_d,
        )
        for t in bench.trials()
    ]
    assert ours == theirs and any(is_comparison(t) for t in bench.trials())


def test_undo_of_a_comparison_and_a_wrong_kind_of_answer(store):
    with _session(store) as session:
        session.run(_presenter(), max_steps=3)
        while not isinstance(q := session.next_query(), PendingComparison):
            session.record(Answer(correct=True))
        assert isinstance(q.lens1, Prescription) and q.lens1 != q.lens2
        n = len(store.trials(session.session_id, include_void=True))
        with pytest.raises(InvalidInputError, match="a comparison is pending; expected 1, 2 or ="):
            session.record(Answer(correct=True))
        assert len(store.trials(session.session_id, include_void=True)) == n  # nothing was recorded
        before = session.engine.posterior(session.trials()).theta.copy()
        trial = session.record(ComparisonReply("2"))
        assert trial.comparison == "2" and trial.lens2 is not None
        voided = session.undo()
        assert voided.void and voided.comparison == "2" and voided.index == n
        # the model forgets it (the posterior of the answers before it, bit for bit); the next
        # question is trial n + 1 (void trials keep their index)
        np.testing.assert_array_equal(session.engine.posterior(session.trials()).theta, before)
        assert session.next_query().index == n + 1
        with pytest.raises(InvalidInputError, match="choice: expected one of 1, 2, ="):
            ComparisonReply("3")


def test_result_counts_the_comparisons(store):
    with _session(store) as session:
        session.run(_presenter(), max_steps=10)
        result = session.finish("clinician")
    n_comp = sum(t.comparison is not None for t in store.trials(session.session_id))
    assert result["comparisons_used"] == n_comp > 0 and result["trials_used"] == 10
    assert parse_result(result).comparisons_used == n_comp
    changes = lens_changes(session.trials())
    assert session.patient_seconds() == pytest.approx(5.0 * n_comp + 3.0 * (10 - n_comp) + 4.0 * changes)
    with pytest.raises(Exception, match=r"comparisons_used: expected an integer in \[0, trials_used = 10\]"):
        parse_result({**result, "comparisons_used": 11})


def test_a_letter_only_session_asks_no_comparison(store):
    """Without ``[comparisons]`` every question is a letter and the result has no count."""
    with RefractionSession.start(
        store,
        patient_id="P1",
        eye="OD",
        protocol=load_protocol("clinical-sloan"),
        simulated=True,
        seed=CASE.seed,
        start=START,
    ) as session:
        assert isinstance(session.next_query(), PendingQuery)
        session.run(_presenter(), max_steps=5)
        assert not any(t.comparison for t in store.trials(session.session_id))
        assert "comparisons_used" not in session.finish("clinician")
