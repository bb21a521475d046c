"""RefractionSession: the log is the truth; replay gives the same queries; undo/pause/finish."""

import numpy as np
import pytest

from tests.protocol_text import small_protocol_text
from visiontune.errors import InvalidInputError, SessionError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.session.engine import Answer, RefractionSession, SimulatedPresenter
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore


def protocol(max_trials=8, extra=""):
    text = small_protocol_text("engine-test", purpose="engine tests", max_trials=max_trials)
    return parse_protocol(text + extra, "engine-test.toml")


@pytest.fixture
def store(tmp_path):
    with TrialStore.open(tmp_path / "log.sqlite3") as s:
        yield s


def patient(seed=3):
    return SimulatedPatient(Prescription(1.0, -1.0, 90.0), slope=5.0, n_alternatives=10, seed=seed)


def start(store, proto=None, **kw):
    return RefractionSession.start(store, patient_id="P1", eye="OD", protocol=proto or protocol(), simulated=True, **kw)


def test_every_answer_is_in_the_log_and_queries_lie_in_the_boxes(store):
    with start(store) as session:
        result = session.run(SimulatedPresenter(patient()))
    trials = store.trials(session.session_id)
    assert len(trials) == 8 == result["trials_used"]
    for t in trials:
        assert -1.0 <= t.s_logmar <= 2.0
        assert -4.0 <= t.lens.sphere_d <= 4.0 and -4.0 <= t.lens.cylinder_d <= 4.0
        assert t.lens.sphere_d % 0.25 == 0 and t.lens.cylinder_d % 0.25 == 0  # trial lens steps
        assert t.lens.axis_deg == 90.0
        assert t.letter_shown in "CDHKNORSVZ"
    assert store.get_session(session.session_id).state == SessionState.FINISHED
    assert result["stopped_by"] == "budget" and result["simulated"] is True
    lo, hi = result["credible_interval"]["sphere_d"]
    assert lo <= hi
    assert result["credible_interval"]["axis_pm_deg"] is None  # the GP protocol fixes the axis


def test_replaying_the_log_proposes_the_logged_queries(tmp_path):
    """A second session fed the same answers proposes exactly the same queries, trial by trial."""
    with TrialStore.open(tmp_path / "a.sqlite3") as a, TrialStore.open(tmp_path / "b.sqlite3") as b:
        with start(a) as first:
            first.run(SimulatedPresenter(patient()), max_steps=7)
            logged = first.trials()
            next_first = first.next_query()
        with start(b) as second:
            for t in logged:
                q = second.next_query()
                assert (q.s_logmar, q.lens.sphere_d, q.lens.cylinder_d, q.letter) == (
                    t.s_logmar,
                    t.lens.sphere_d,
                    t.lens.cylinder_d,
                    t.letter_shown,
                )
                second.record(Answer(correct=t.correct))
            assert second.next_query() == next_first


def test_resume_after_close_proposes_the_same_next_query(store):
    with start(store) as session:
        session.run(SimulatedPresenter(patient()), max_steps=5)
        expected = session.next_query()
        sid = session.session_id
    with RefractionSession.resume(store, sid) as again:
        assert again.next_query() == expected
        assert len(again.trials()) == 5


def test_one_session_cannot_be_opened_twice(store):
    with start(store) as session:
        with pytest.raises(SessionError, match="open"):
            RefractionSession.resume(store, session.session_id)


def test_undo_voids_the_last_answer_and_the_model_forgets_it(store):
    with start(store) as session:
        session.run(SimulatedPresenter(patient()), max_steps=4)
        before = session.engine.model(session.trials()).predict(np.array([[0.0, 1.0, -1.0]]))
        session.record(Answer(correct=True))
        voided = session.undo()
        assert voided.index == 4
        after = session.engine.model(session.trials()).predict(np.array([[0.0, 1.0, -1.0]]))
        np.testing.assert_allclose(after, before)
        all_trials = session.trials(include_void=True)
        assert [t.void for t in all_trials] == [False] * 4 + [True]
        assert session.next_query().index == 5


def test_letters_are_scored_and_a_mistyped_letter_records_nothing(store):
    with start(store) as session:
        q = session.next_query()
        wrong = next(c for c in "CDHKNORSVZ" if c != q.letter)
        with pytest.raises(InvalidInputError, match="not a letter"):
            session.record(Answer(letter_named="Q"))
        assert session.trials() == []
        t = session.record(Answer(letter_named=q.letter.lower()))
        assert t.correct and t.letter_named == q.letter
        q2 = session.next_query()
        t2 = session.record(Answer(letter_named=next(c for c in "CDHKNORSVZ" if c != q2.letter)))
        assert not t2.correct
        t3 = session.record(Answer())  # "don't know"
        assert not t3.correct and t3.letter_named is None
        assert wrong in "CDHKNORSVZ"


def test_pause_blocks_queries_until_resumed_and_finish_is_final(store):
    with start(store) as session:
        session.run(SimulatedPresenter(patient()), max_steps=3)
        session.pause()
        with pytest.raises(SessionError, match="paused"):
            session.next_query()
        sid = session.session_id
    with RefractionSession.resume(store, sid) as again:
        assert again.state == SessionState.OPEN
        again.record(Answer(correct=False))
        result = again.finish()
        assert result["stopped_by"] == "clinician" and result["trials_used"] == 4
    kinds = [e.kind.value for e in store.events(sid)]
    assert kinds == ["pause", "resume", "finish"]
    with pytest.raises(SessionError, match="finished"):
        RefractionSession.resume(store, sid)


def test_precision_rule_stops_once_the_credible_widths_are_met(store):
    loose = protocol(max_trials=30, extra="").source_text.replace(
        "max_trials = 30", "max_trials = 30\nmin_trials = 6\n\n[stopping.precision]\nsphere_d = 8.0\ncylinder_d = 8.0"
    )
    with start(store, parse_protocol(loose, "loose.toml")) as session:
        result = session.run(SimulatedPresenter(patient()))
    assert result["stopped_by"] == "precision"
    assert result["trials_used"] == 6


def test_shipped_protocols_build_sessions(store):
    """Every shipped protocol starts a session whose first query is a lens and a letter size."""
    from visiontune.refraction.protocol import list_protocols

    for name in list_protocols():
        with start(store, load_protocol(name)) as session:
            query = session.next_query()
            lo, hi = session.protocol.logmar_range
            assert lo <= query.s_logmar <= hi and np.isfinite(query.lens.sphere_d)


@pytest.mark.slow
def test_shipped_hyperparameters_are_the_simulation_fit():
    """paper-ucb-ald's explicit hyperparameters are what `fit = "simulation"` gives (Fauvel & Chalk (contextual BO),
    §5.2)."""
    from visiontune.reproduction.engines.gp_engine import design_slope, gp_kernel
    from visiontune.reproduction.engines.gp_hyperparameters import fit_refraction_hyperparameters

    p = load_protocol("paper-ucb-ald")
    hp = fit_refraction_hyperparameters(
        design_slope(p),
        p.n_alternatives,
        search_box=np.array([p.search_space.sphere_d, p.search_space.cylinder_d]),
        context_box=np.array([p.logmar_range]),
    )
    np.testing.assert_allclose(np.exp(gp_kernel(p).params), np.exp(hp.kernel().params), rtol=2e-3)


def test_the_trials_are_read_from_the_store_once_and_kept_exactly(store, monkeypatch):
    """The loop asks for the trials several times per answer; the session
    reads them from the store once and then keeps them (appending what it records, reading
    again after an undo), and what it keeps is what the store holds."""
    reads = []
    real = TrialStore.trials
    monkeypatch.setattr(TrialStore, "trials", lambda self, *a, **k: reads.append(1) or real(self, *a, **k))
    with start(store, protocol(max_trials=30)) as session:
        session.run(SimulatedPresenter(patient()), max_steps=6)
        assert len(reads) == 1
        session.record(Answer(correct=False))
        session.undo()
        session.run(SimulatedPresenter(patient()), max_steps=1)
        assert len(reads) == 3  # SessionHandle.undo reads the voided trial back; the session reads again
        session.run(SimulatedPresenter(patient()), max_steps=2)
        assert len(reads) == 3
        kept = session.trials(include_void=True)
        assert kept == real(store, session.session_id, include_void=True)
        assert [t.void for t in kept] == [False] * 6 + [True] + [False] * 3
        assert session.trials() == [t for t in kept if not t.void]
