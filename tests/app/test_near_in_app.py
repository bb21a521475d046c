"""The near addition in the app's engine: a simulated presbyope's visit run through the engine
(both eyes, no balance) reaches the near step, whose letters the simulated patient answers through
the ``visit_near`` command; it files an add per eye, and the visit's exports carry it (the near page
itself: tests/app/test_visit_near_app.py)."""

from __future__ import annotations

import json

from app_helpers import write_visit_protocol

from visiontune.app.session_host import SessionHost
from visiontune.app.simulation import case_patient, simulated_reply
from visiontune.app.visit_flow import NewVisit, Step
from visiontune.session.engine import Answer
from visiontune.session.near_store import near_add_records
from visiontune.session.store import TrialStore


def _last(events, *kinds):
    return next(v for k, v in reversed(events) if k in kinds)


def _run_open_eye(host, events):
    snap = _last(events, "opened", "updated")
    patient = case_patient(snap.simulated_case, snap.n_alternatives)
    while snap.query is not None:
        q = snap.query
        host.handle("present")
        reply = simulated_reply(
            patient,
            s_logmar=q.s_logmar,
            lens=q.lens,
            letter_shown=q.letter,
            letters=snap.letters,
            seed=snap.seed,
            trial_index=q.index,
        )
        host.handle("record", Answer(letter_named=reply.letter_named))
        snap = _last(events, "opened", "updated")
    host.handle("finish", ("budget", None))


def test_a_simulated_presbyopes_visit_in_the_engine_files_and_exports_an_add_per_eye(tmp_path):
    db = tmp_path / "log.sqlite3"
    events = []
    host = SessionHost(lambda kind, value: events.append((kind, value)))
    host.handle("open_store", str(db))
    protocol = write_visit_protocol(tmp_path, max_trials=4)
    host.handle("visit_create", NewVisit("SIM-N", str(protocol), True, age_years=66.0))
    _run_open_eye(host, events)
    host.handle("visit_next", 1)
    _run_open_eye(host, events)
    host.handle("visit_balance", (1, 0, None))  # no balance: the near step follows (age 66)
    assert _last(events, "visit_view").step == Step.NEAR
    host.handle("visit_near", (1, "begin", 40.0))
    while (view := _last(events, "visit_view")).step == Step.NEAR:
        q = view.near_question
        host.handle("visit_near", (1, "answer", (q.eye, q.index, q.simulated_correct)))
    assert _last(events, "visit_view").step == Step.FINISH
    out = tmp_path / "out"
    out.mkdir()
    host.handle("visit_export", (1, str(out)))
    assert "failed" not in [k for k, _ in events], [v for k, v in events if k == "failed"]
    host.handle("close")
    with TrialStore.open(db) as store:
        adds = near_add_records(store, 1)
    assert set(adds) == {"OD", "OS"} and all(a.distance_cm == 40.0 for a in adds.values())
    [doc_path] = [p for p in out.rglob("*.json") if "fhir" not in p.name]
    record = json.loads(doc_path.read_text())["record"]
    assert {n["eye"]: n["add_d"] for n in record["near"]} == {e: a.add_d for e, a in adds.items()}
