"""A lens held before the trial lens (a flipper, a Jackson cross-cylinder, a plus sphere "with or
without") in a clinical session over the SQLite trial log: schema v10 (a v9 log migrates, its
trials read as before; raw SQL that stores a partial or misplaced frame lens is refused), the frame
lens recorded with the answer and counted as the lens in place, replayed after a crash to the same
next question and the same particles, asked as the bench asks it, and a SIGKILLed session resumed
to the uninterrupted one."""

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
from visiontune.optics.prescription import PowerVector
from visiontune.refraction.clinical_pairs import cross_cylinder
from visiontune.refraction.lenses import changes_along, lens_changes, lens_left_in_place
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.engine import PendingComparison
from visiontune.session.migrations import SCHEMA_VERSION
from visiontune.session.store import TrialStore

PROTOCOL_PATH = (
    Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines-held.toml"
)
PROTOCOL = load_protocol(PROTOCOL_PATH)
SIM = SimulatedCase(PROTOCOL)
BASE = Prescription(-1.0, -0.5, 90.0)


def _held(index: int, power: np.ndarray, base: Prescription = BASE, answer: str = "1") -> Trial:
    """A comparison of ``base ± power`` (power vectors) held before ``base``."""
    pv = base.power_vector_array()
    one, two = _lens(pv + power), _lens(pv - power)
    return Trial(index, 0.2, one, "H", answer == "1", lens2=two, comparison=answer, frame_lens=base)


def _lens(pv) -> Prescription:
    return PowerVector(*pv).to_prescription()


@pytest.fixture
def store(tmp_path):
    with TrialStore.open(tmp_path / "log.sqlite3") as s:
        yield s


def test_a_v9_log_migrates_to_v10_and_a_partial_or_misplaced_frame_lens_is_refused(tmp_path):
    path = tmp_path / "log.sqlite3"
    conn = log_at_version(path, 9)
    conn.execute(
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, sphere2_d, cylinder2_d, "
        "axis2_deg, comparison, letter_shown, correct, presented_at, answered_at) VALUES (1, 0, 0.3, -1.0, -0.5, "
        "90, -1.25, -0.5, 90, '2', 'H', 0, '2026-01-01T00:00:01+00:00', '2026-01-01T00:00:02+00:00')"
    )
    conn.close()
    with TrialStore.open(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        (old,) = s.trials(1)
        assert old.frame_lens is None and old.comparison == "2" and old.lens2 == Prescription(-1.25, -0.5, 90)
        with s.open_session(1) as handle:
            t = handle.record_trial(_held(1, cross_cylinder(0.5, 45.0)))
        assert s.trials(1)[1] == t and t.frame_lens == BASE
    conn = sqlite3.connect(path, isolation_level=None)
    insert = (
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, letter_shown, correct, "
        "presented_at, answered_at, sphere2_d, cylinder2_d, axis2_deg, comparison, frame_sphere_d, "
        "frame_cylinder_d, frame_axis_deg) VALUES (1, 2, 0.2, -0.5, -0.5, 90, 'H', 1, "
        "'2026-01-01T00:00:05+00:00', '2026-01-01T00:00:06+00:00', {})"
    )
    for values in (
        "-1.5, -0.5, 90, '1', -1.0, NULL, 90",  # a frame lens without its cylinder
        "-1.5, -0.5, 90, '1', -1.0, -0.5, 180",  # its axis out of [0, 180)
        "NULL, NULL, NULL, NULL, -1.0, -0.5, 90",  # on a letter
    ):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(insert.format(values))
    conn.close()


def test_a_trial_refuses_a_frame_lens_its_lenses_were_not_held_before():
    pv = BASE.power_vector_array()
    elsewhere = Prescription(-3.0, 0.0, 180.0)
    with pytest.raises(InvalidInputError, match="frame_lens"):  # lens 1 and lens 2 are not held before it
        Trial(0, 0.2, _lens(pv + [0.5, 0, 0]), "H", True, lens2=_lens(pv), comparison="1", frame_lens=elsewhere)
    with pytest.raises(InvalidInputError, match="frame_lens: only a comparison"):
        Trial(0, 0.2, BASE, "H", True, frame_lens=BASE)
    with_without = Trial(0, 0.2, BASE, "H", True, lens2=_lens(pv + [0.75, 0, 0]), comparison="1", frame_lens=BASE)
    assert with_without.frame_lens == BASE  # "with or without": lens 1 is the frame lens


def test_a_lens_held_before_the_lens_in_place_is_no_change_and_leaves_it_in_place():
    placed = Trial(0, 0.2, BASE, "H", True)
    flips = _held(1, cross_cylinder(0.75, 135.0))
    elsewhere = Prescription(-0.5, -0.5, 90.0)
    moved = _held(2, np.array([0.5, 0.0, 0.0]), base=elsewhere)
    assert lens_left_in_place(flips) == BASE and changes_along([flips.frame_lens], BASE) == 0
    assert lens_changes([placed, flips]) == 1  # the first lens placed; the flips change nothing
    assert lens_changes([placed, flips, moved]) == 2 and lens_left_in_place(moved) == elsewhere


def test_held_lenses_are_logged_and_resume_to_the_same_question_and_particles(store):
    presenter = SIM.presenter()
    with SIM.session(store) as session:
        for _ in range(6):
            q = answer_until(session, presenter, PendingComparison)
            if q.frame_lens is not None:
                break
            session.record(presenter.present(q))
        assert q.frame_lens is not None, "no lens held before the trial lens in the first comparisons"
        session.record(presenter.present(q))
        session.run(presenter, max_steps=3)
        left = left_as(session)
    stored = [t for t in store.trials(left[0]) if t.index == q.index][0]
    assert stored.frame_lens == q.frame_lens and (stored.lens, stored.lens2) == (q.lens1, q.lens2)
    mean = (stored.lens.power_vector_array() + stored.lens2.power_vector_array()) / 2
    assert np.allclose(mean, stored.frame_lens.power_vector_array(), atol=1e-9) or stored.lens == stored.frame_lens
    assert_resumes_as_left(store, left)


def test_the_bench_and_the_clinic_ask_the_same_held_lenses(store):
    bench, ours = SIM.bench_and_clinic(store, 30)

    def key(t):
        return (t.s_logmar, t.lens, t.lens2, t.frame_lens, t.comparison, t.line_correct, t.correct)

    assert [key(t) for t in ours] == [key(t) for t in bench]
    assert any(t.frame_lens is not None for t in ours)


def test_a_session_with_held_lenses_killed_and_resumed_is_the_uninterrupted_one(tmp_path):
    """SIGKILLed three times and resumed to its end, the session holds the same lenses, frame
    lenses, answers and result as the same session uninterrupted."""
    text = PROTOCOL.source_text.replace("max_trials = 120", "max_trials = 24")
    proto_path = tmp_path / "held.toml"
    proto_path.write_text(text.replace("min_trials = 20", "min_trials = 24"))  # the budget ends it
    db, whole, sid = _kill_resume_and_rerun(tmp_path, proto_path, 3, 17)
    with TrialStore.open(db) as a, TrialStore.open(whole) as b:

        def content(t):
            return (t.lens, t.lens2, t.frame_lens, t.comparison, t.letter_shown, t.line_correct, t.correct)

        killed, reference = [content(t) for t in a.trials(sid)], [content(t) for t in b.trials(1)]
        assert len(killed) == 24 and killed == reference
        assert any(t[2] is not None for t in killed)  # lenses were held before the trial lens
        assert a.get_session(sid).result["rounded"] == b.get_session(1).result["rounded"]
