"""The near addition in the app's engine: a simulated presbyope's visit run through the engine
(both eyes, no balance) reaches the near step, whose letters the simulated patient answers through
the ``visit_near`` command; it files an add per eye, and the visit's exports carry it (the near page
itself: tests/app/test_visit_near_app.py)."""

from __future__ import annotations

import json

from app_helpers import write_visit_protocol
from engine_helpers import engine_host, last_event, run_open_eye

from visiontune.app.logic.messages import (
    BalanceAnswer,
    Close,
    CreateVisit,
    ExportVisit,
    Failed,
    NearAnswer,
    NearBegin,
    NextEye,
    VisitViewed,
)
from visiontune.app.logic.visit_flow import NewVisit, Step
from visiontune.session.near_store import near_add_records
from visiontune.session.store import TrialStore


def test_a_simulated_presbyopes_visit_in_the_engine_files_and_exports_an_add_per_eye(tmp_path):
    db = tmp_path / "log.sqlite3"
    host, events = engine_host(db)
    protocol = write_visit_protocol(tmp_path, max_trials=4)
    host.handle(CreateVisit(NewVisit("SIM-N", str(protocol), True, age_years=66.0)))
    run_open_eye(host, events)
    host.handle(NextEye(1))
    run_open_eye(host, events)
    host.handle(BalanceAnswer(1, 0, None))  # no balance: the near step follows (age 66)
    assert last_event(events, VisitViewed).step == Step.NEAR
    host.handle(NearBegin(1, 40.0))
    while (view := last_event(events, VisitViewed)).step == Step.NEAR:
        q = view.near_question
        host.handle(NearAnswer(1, q.eye, q.index, q.simulated_correct))
    assert last_event(events, VisitViewed).step == Step.FINISH
    out = tmp_path / "out"
    out.mkdir()
    host.handle(ExportVisit(1, str(out)))
    assert not any(isinstance(e, Failed) for e in events), [e.value for e in events if isinstance(e, Failed)]
    host.handle(Close())
    with TrialStore.open(db) as store:
        adds = near_add_records(store, 1)
    assert set(adds) == {"OD", "OS"} and all(a.distance_cm == 40.0 for a in adds.values())
    [doc_path] = [p for p in out.rglob("*.json") if "fhir" not in p.name]
    record = json.loads(doc_path.read_text())["record"]
    assert {n["eye"]: n["add_d"] for n in record["near"]} == {e: a.add_d for e, a in adds.items()}
