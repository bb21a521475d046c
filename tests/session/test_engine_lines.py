"""Chart lines (several letters of one size read aloud through one lens) in a clinical session
over the SQLite trial log: schema v5 (a v4 log migrates, its trials read as before; raw SQL that
stores a malformed line is refused), each line recorded with its letters and each one's right or
wrong before anything else happens, replayed after a crash to the same next question and the
same particles, asked as the bench asks them, undone like a letter, and a SIGKILLed session with
lines resumed to the uninterrupted one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.session.old_logs import log_at_version
from tests.session.test_engine_kill import _kill_resume_and_rerun
from tests.simulated_sessions import SimulatedCase, answer_until, assert_resumes_as_left, left_as
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.loop import is_line
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.engine import Answer, ComparisonReply, LineReply, PendingLine
from visiontune.session.migrations import SCHEMA_VERSION
from visiontune.session.store import TrialStore

PROTOCOL_PATH = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines.toml"
PROTOCOL = load_protocol(PROTOCOL_PATH)
SIM = SimulatedCase(PROTOCOL)


@pytest.fixture
def store(tmp_path):
    with TrialStore.open(tmp_path / "log.sqlite3") as s:
        yield s


def test_a_v4_log_migrates_to_v5_and_a_malformed_line_is_refused(tmp_path):
    path = tmp_path / "log.sqlite3"
    conn = log_at_version(path, 4)
    conn.execute(
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, letter_shown, correct, "
        "presented_at, answered_at) VALUES (1, 0, 0.3, -1.0, -0.5, 90, 'H', 1, '2026-01-01T00:00:01+00:00', "
        "'2026-01-01T00:00:02+00:00')"
    )
    conn.close()
    with TrialStore.open(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        (letter,) = s.trials(1)
        assert letter.line_correct is None and letter.letter_shown == "H" and letter.correct
        with s.open_session(1) as handle:
            t = handle.record_trial(Trial(1, 0.2, Prescription(-1.0, -0.5, 90), "CDHKN", True, line_correct="11010"))
        assert s.trials(1)[1] == t and t.line_correct == "11010"
    conn = sqlite3.connect(path, isolation_level=None)
    insert = (
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, letter_shown, correct, "
        "presented_at, answered_at, line_correct, sphere2_d, cylinder2_d, axis2_deg, comparison) VALUES "
        "(1, 2, 0.2, -1.0, -0.5, 90, ?, 1, '2026-01-01T00:00:05+00:00', '2026-01-01T00:00:06+00:00', ?, {})"
    )
    for shown, answers, second in (
        ("CDHKN", "1101", "NULL, NULL, NULL, NULL"),  # one answer short
        ("CDHKN", "11012", "NULL, NULL, NULL, NULL"),  # not right/wrong
        ("C", "1", "NULL, NULL, NULL, NULL"),  # a line of one letter
        ("CDHKN", "11011", "-0.5, -0.5, 90, '1'"),
    ):  # also a comparison
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(insert.format(second), (shown, answers))
    conn.close()
    with pytest.raises(InvalidInputError, match="line_correct"):
        Trial(0, 0.2, Prescription(-1.0, -0.5, 90), "CDHKN", True, line_correct="110")


def test_lines_are_logged_and_resume_to_the_same_question_and_particles(store):
    presenter = SIM.presenter()
    with SIM.session(store) as session:
        q = answer_until(session, presenter, PendingLine)
        reply = presenter.present(q)
        session.record(reply)
        session.run(presenter, max_steps=3)
        left = left_as(session)
    stored = [t for t in store.trials(left[0]) if t.index == q.index][0]
    assert stored.letter_shown == "".join(q.letters) and stored.line_correct == "".join("01"[c] for c in reply.correct)
    assert (stored.lens.sphere_d, stored.lens.cylinder_d, stored.lens.axis_deg) == (
        q.lens.sphere_d,
        q.lens.cylinder_d,
        q.lens.axis_deg % 180.0,
    )
    assert_resumes_as_left(store, left)


def test_the_bench_and_the_clinic_ask_the_same_lines(store):
    bench, ours = SIM.bench_and_clinic(store, 30)

    def key(t):
        return (
            t.s_logmar,
            t.lens.sphere_d,
            t.lens.cylinder_d,
            t.lens.axis_deg % 180,
            t.comparison,
            t.letter_shown,
            t.line_correct,
            t.correct,
        )

    assert [key(t) for t in ours] == [key(t) for t in bench] and any(is_line(t) for t in ours)


def test_a_wrong_kind_of_answer_records_nothing_and_a_line_is_undone(store):
    presenter = SIM.presenter()
    with SIM.session(store) as session:
        q = answer_until(session, presenter, PendingLine)
        n = len(store.trials(session.session_id, include_void=True))
        for wrong in (Answer(correct=True), ComparisonReply("1"), LineReply((True,) * (len(q.letters) + 1))):
            with pytest.raises(InvalidInputError, match="nothing was recorded"):
                session.record(wrong)
        assert len(store.trials(session.session_id, include_void=True)) == n
        before = session.engine.posterior(session.trials()).theta.copy()
        session.record(LineReply.from_count(2, len(q.letters)))
        undone = session.undo()
        assert undone.void and undone.line_correct == "11000"
        np.testing.assert_array_equal(session.engine.posterior(session.trials()).theta, before)


def test_a_session_with_lines_killed_and_resumed_is_the_uninterrupted_one(tmp_path):
    """SIGKILLed three times and resumed to its end, the session holds the same letters,
    comparisons, lines (letters, each one's answer) and result as the same session uninterrupted."""
    text = PROTOCOL.source_text.replace("max_trials = 120", "max_trials = 24")
    proto_path = tmp_path / "lines.toml"
    proto_path.write_text(text.replace("min_trials = 20", "min_trials = 24"))  # the budget ends it
    db, whole, sid = _kill_resume_and_rerun(tmp_path, proto_path, 3, 13)
    with TrialStore.open(db) as a, TrialStore.open(whole) as b:

        def content(t):
            return (t.lens, t.lens2, t.comparison, t.letter_shown, t.line_correct, t.correct)

        killed, reference = [content(t) for t in a.trials(sid)], [content(t) for t in b.trials(1)]
        assert len(killed) == 24 and killed == reference
        assert any(t[4] is not None for t in killed)  # lines were asked
        result = a.get_session(sid).result
        assert result["rounded"] == b.get_session(1).result["rounded"]
        assert result["lines_used"] == sum(t[4] is not None for t in killed)
