"""The demo patient: the command line's patient for the same seed and protocol, recorded with the
session so that a resumed session answers exactly as an uninterrupted one; answers follow the
psychometric function (Monte Carlo against the closed form); wrong answers never name the letter shown."""

import numpy as np
import pytest
from app_helpers import write_protocol
from scipy.stats import norm

from visiontune.app.logic.messages import (
    Close,
    Closed,
    Failed,
    Opened,
    OpenStore,
    Present,
    RecordAnswer,
    Recorded,
    ResumeSession,
    StartSession,
    Updated,
)
from visiontune.app.logic.session_host import SessionHost, record_simulated_session
from visiontune.app.logic.simulation import SIMULATED_PATIENT_NOTE, case_patient, new_case, simulated_reply
from visiontune.app.logic.worker_values import NewSession
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.session.engine import Answer, RefractionSession
from visiontune.session.store import TrialStore

SLOAN = tuple("CDHKNORSVZ")


def test_the_patient_is_the_command_lines_for_the_same_seed_and_protocol(tmp_path):
    optics = load_protocol("clinical-sloan")
    gp = load_protocol(write_protocol(tmp_path))
    for seed in (0, 11):
        assert new_case(seed, optics) == simulated_case(seed=seed, protocol=optics)
        assert new_case(seed, gp) == simulated_case(seed=seed, protocol=gp)
    # a GP protocol searches at its fixed axis: its patient's cylinder is at that axis, no start
    paper = new_case(11, gp)
    assert paper.true_rx.axis_deg == 90.0 and paper.start_rx is None
    # an optics protocol's patient has an autorefraction to start from
    assert new_case(0, optics).start_source == "autorefraction" and new_case(0, optics).start_rx is not None
    # a typed age replaces the case's (its accommodation follows)
    assert new_case(0, optics, age_years=30.0).age_years == 30.0


def test_answers_follow_the_psychometric_function(tmp_path):
    """Frequency of correct answers over 4000 trials vs ``P = γ + (1-γ) Φ(a (s - VA(x)))``
    (Fauvel & Chalk (contextual BO), Eq. 13) for the paper's patient (slope 5, no lapse, no letter difficulty)."""
    case = new_case(5, load_protocol(write_protocol(tmp_path)))
    patient = case_patient(case.to_dict(), 10)
    lens = Prescription(case.true_rx.sphere_d + 0.75, case.true_rx.cylinder_d, 90.0)
    va = float(patient.acuity_logmar(lens))
    for s in (va, va + 0.2):
        expected = 0.1 + 0.9 * norm.cdf(5.0 * (s - va))
        replies = [
            simulated_reply(patient, s_logmar=s, lens=lens, letter_shown="K", letters=SLOAN, seed=5, trial_index=i)
            for i in range(4000)
        ]
        freq = np.mean([r.correct for r in replies])
        assert abs(freq - expected) < 4 * np.sqrt(expected * (1 - expected) / 4000)
        assert all((r.letter_named == "K") == r.correct for r in replies)
    wrong = [r.letter_named for r in replies if not r.correct]
    counts = np.array([wrong.count(x) for x in SLOAN if x != "K"])
    assert counts.min() > 0.6 * counts.mean()  # wrong letters spread over the other 9


def test_replies_are_keyed_by_the_trial_index():
    patient = case_patient(new_case(3, load_protocol("clinical-sloan")).to_dict(), 10)

    def reply(i):
        return simulated_reply(
            patient, s_logmar=0.3, lens=Prescription(0, 0, 90), letter_shown="C", letters=SLOAN, seed=3, trial_index=i
        )

    forwards = [reply(i) for i in range(50)]
    assert [reply(i) for i in reversed(range(50))][::-1] == forwards  # whatever was asked before


def test_bad_letters_are_rejected():
    patient = case_patient(new_case(3, load_protocol("clinical-sloan")).to_dict(), 10)
    with pytest.raises(InvalidInputError, match="letter_shown"):
        simulated_reply(
            patient, s_logmar=0.0, lens=Prescription(0, 0, 90), letter_shown="Q", letters=SLOAN, seed=1, trial_index=0
        )


def trial_rows(db, session_id):
    with TrialStore.open(db) as store:
        return [(t.s_logmar, t.lens, t.letter_shown, t.letter_named, t.correct) for t in store.trials(session_id)]


def answer(host, events, n):
    """Answer ``n`` queries as the GUI's simulated patient does (the patient of the snapshot)."""
    snap = next(e.value for e in reversed(events) if isinstance(e, Opened | Updated))
    patient = case_patient(snap.simulated_case, snap.n_alternatives)
    for _ in range(n):
        q = snap.query
        reply = simulated_reply(
            patient,
            s_logmar=q.s_logmar,
            lens=q.lens,
            letter_shown=q.letter,
            letters=snap.letters,
            seed=snap.seed,
            trial_index=q.index,
        )
        host.handle(Present())
        host.handle(RecordAnswer(Answer(letter_named=reply.letter_named)))
        snap = next(e.value for e in reversed(events) if isinstance(e, Opened | Updated))


def test_the_case_is_recorded_and_a_resumed_session_answers_as_an_uninterrupted_one(tmp_path):
    """A session closed after 3 answers and resumed gives the same 7 trials as one run in one
    go: the patient comes from the note recorded with the session (here with a typed age that
    the seed alone would not give), not from the seed."""
    start = {
        "patient_id": "SIM-RES",
        "eye": "OD",
        "protocol": "clinical-sloan",
        "simulated": True,
        "seed": 4,
        "age_years": 33.0,
    }
    events = []
    host = SessionHost(events.append)
    host.handle(OpenStore(str(tmp_path / "a.sqlite3")))
    host.handle(StartSession(NewSession(**start)))
    snap = next(e.value for e in events if isinstance(e, Opened))
    sid = snap.session_id
    assert snap.simulated_case["age_years"] == 33.0 and snap.start.age_years == 33.0
    answer(host, events, 3)
    host.handle(Close())
    with TrialStore.open(tmp_path / "a.sqlite3") as store, RefractionSession.resume(store, sid) as session:
        assert session.recorded_note(SIMULATED_PATIENT_NOTE) == snap.simulated_case
    events.clear()
    host = SessionHost(events.append)
    host.handle(OpenStore(str(tmp_path / "a.sqlite3")))
    host.handle(ResumeSession(sid))
    assert next(e.value for e in events if isinstance(e, Opened)).simulated_case == snap.simulated_case
    answer(host, events, 4)
    host.handle(Close())

    events.clear()
    host = SessionHost(events.append)
    host.handle(OpenStore(str(tmp_path / "b.sqlite3")))
    host.handle(StartSession(NewSession(**start)))
    answer(host, events, 7)
    host.handle(Close())
    assert not any(isinstance(e, Failed) for e in events)
    assert trial_rows(tmp_path / "a.sqlite3", sid) == trial_rows(tmp_path / "b.sqlite3", 1)


def test_record_simulated_session_replays_what_a_gui_receives(tmp_path):
    events = record_simulated_session(tmp_path / "log.sqlite3", "clinical-sloan", 3, seed=2)
    assert [type(e) for e in events].count(Recorded) == 3 and Closed() in events
    snap = next(e.value for e in events if isinstance(e, Opened))
    assert (
        snap.simulated
        and snap.simulated_case == simulated_case(seed=2, protocol=load_protocol("clinical-sloan")).to_dict()
    )
