"""Visits in the trial log (schema v2): both eyes linked, skips, balance, sign-offs, acuities.

What is recorded is append-only and never replaced; a refused write leaves the log as it was.
"""

from __future__ import annotations

import sqlite3

import pytest

from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.optics import Prescription
from visiontune.session.store import SessionHandle
from visiontune.session.visit import eye_statuses, final_prescription

RESULT = {"rounded": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0}, "predicted_va_logmar": 0.02}


def _dump(store) -> list[str]:
    return list(store.conn.iterdump())


@pytest.fixture
def visit(store):
    store.create_patient("P-0042")
    return store.create_visit(
        "P-0042", age_years=47, habitual_od=Prescription(-1.0, -0.25, 85.0), clinician="Dr A. Optom"
    )


def _session(store, protocol, eye="OD", patient="P-0042", simulated=False, finish=True, trials=0, make_trial=None):
    sid = store.create_session(patient, eye=eye, protocol=protocol, seed=3, simulated=simulated)
    with store.open_session(sid) as handle:
        for i in range(trials):
            handle.record_trial(make_trial(i))
        if finish:
            handle.finish(RESULT)
    return sid


def test_visit_holds_patient_age_habitual_form_and_kind(store, visit):
    info = store.get_visit(visit)
    assert (info.patient_id, info.age_years, info.clinician, info.cylinder_form, info.simulated) == (
        "P-0042",
        47,
        "Dr A. Optom",
        "minus",
        False,
    )
    assert info.habitual_od == Prescription(-1.0, -0.25, 85.0) and info.habitual_os is None
    assert [v.visit_id for v in store.list_visits("P-0042")] == [visit]
    assert eye_statuses(store, visit)["OD"].state == "not started"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"age_years": 131}, r"age_years: expected an integer in \[0, 130\], got 131"),
        ({"age_years": 40.5}, "age_years"),
        ({"cylinder_form": "cross"}, "cylinder_form: expected 'minus' or 'plus'"),
        ({"habitual_os": (-1.0, 0.0, 180.0)}, "habitual_os: expected a Prescription"),
        ({"clinician": "Dr\nX"}, "clinician: expected printable text on one line"),
    ],
)
def test_bad_visit_is_refused_and_nothing_is_written(store, kwargs, message):
    store.create_patient("P1")
    before = _dump(store)
    with pytest.raises(InvalidInputError, match=message):
        store.create_visit("P1", **kwargs)
    assert _dump(store) == before


def test_sessions_link_to_their_eyes_and_state_follows_the_session(store, visit, protocol, make_trial):
    od = _session(store, protocol, "OD", finish=False, trials=3, make_trial=make_trial)
    store.link_visit_session(visit, "OD", od)
    assert store.visit_of_session(od).visit_id == visit and store.visit_of_session(od).eye == "OD"
    assert eye_statuses(store, visit)["OD"].state == "open" and eye_statuses(store, visit)["OD"].answers == 3
    with store.open_session(od) as handle:
        handle.pause()
    assert eye_statuses(store, visit)["OD"].state == "paused"
    with store.open_session(od) as handle:
        handle.resume()
        handle.finish(RESULT)
    status = eye_statuses(store, visit)["OD"]
    assert status.finished and status.found == Prescription(-1.25, -0.5, 90.0) and status.predicted_va_logmar == 0.02


def test_a_link_must_match_patient_eye_and_kind_and_each_eye_has_one(store, visit, protocol):
    store.create_patient("OTHER")
    before = _dump(store)
    with pytest.raises(InvalidInputError, match="cannot be OD of visit"):
        store.link_visit_session(visit, "OD", _session(store, protocol, "OD", patient="OTHER"))
    with pytest.raises(InvalidInputError, match="cannot be OS of visit"):
        store.link_visit_session(visit, "OS", _session(store, protocol, "OD"))
    with pytest.raises(InvalidInputError, match="cannot be OD of visit"):
        store.link_visit_session(visit, "OD", _session(store, protocol, "OD", simulated=True))
    assert store.visit_eyes(visit) == {}
    od = _session(store, protocol, "OD")
    store.link_visit_session(visit, "OD", od)
    with pytest.raises(SessionError, match="OD already has session"):
        store.link_visit_session(visit, "OD", _session(store, protocol, "OD"))
    with pytest.raises(SessionError, match="already has session"):
        store.skip_visit_eye(visit, "OD", "changed my mind")
    other = store.create_visit("P-0042")
    with pytest.raises(SessionError, match=f"already OD of visit {visit}"):
        store.link_visit_session(other, "OD", od)
    assert len(before) < len(_dump(store))  # only the sessions and the one link were added


def test_a_skipped_eye_keeps_its_reason_and_takes_no_session(store, visit, protocol):
    store.skip_visit_eye(visit, "OS", "prosthetic eye")
    assert eye_statuses(store, visit)["OS"].state == "skipped"
    assert store.visit_eyes(visit)["OS"].skip_reason == "prosthetic eye"
    with pytest.raises(SessionError, match=r"OS was skipped \(prosthetic eye\)"):
        store.link_visit_session(visit, "OS", _session(store, protocol, "OS"))
    with pytest.raises(InvalidInputError, match="reason: expected a non-empty text"):
        store.skip_visit_eye(visit, "OD", "  ")


def test_raw_sql_cannot_change_or_break_what_was_recorded(store, visit, protocol):
    od = _session(store, protocol, "OD")
    store.link_visit_session(visit, "OD", od)
    store.sign_off(visit, "OD", Prescription(-1.0, -0.5, 90.0), "Dr B")
    conn = store.conn
    for sql in (
        "UPDATE visits SET age_years = 50",
        "DELETE FROM visit_eyes",
        "UPDATE visit_signoffs SET sphere_d = 0",
        "DELETE FROM visit_signoffs",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(sql)
    with pytest.raises(sqlite3.DatabaseError, match="already has its session"):
        conn.execute("INSERT INTO visit_eyes (visit_id, eye, skip_reason, at) VALUES (?, 'OD', 'x', 'now')", (visit,))
    os_other = _session(store, protocol, "OD")  # wrong eye for OS
    with pytest.raises(sqlite3.DatabaseError, match="same patient, eye and kind"):
        conn.execute(
            "INSERT INTO visit_eyes (visit_id, eye, session_id, at) VALUES (?, 'OS', ?, 'now')", (visit, os_other)
        )


def test_an_eye_whose_session_was_discarded_can_be_started_again(store, visit, protocol):
    if not hasattr(SessionHandle, "discard"):
        pytest.skip("this store has no discarded sessions")
    first = _session(store, protocol, "OD", finish=False)
    store.link_visit_session(visit, "OD", first)
    with store.open_session(first) as handle:
        handle.discard("protocol refused by the engine")
    assert eye_statuses(store, visit)["OD"].state == "discarded"
    second = _session(store, protocol, "OD", finish=False)
    store.link_visit_session(visit, "OD", second)
    assert store.visit_eyes(visit)["OD"].session_id == second
    assert store.visit_of_session(first).visit_id == visit  # the first link is kept


def test_balance_answers_are_in_order_and_end_with_one_outcome(store, visit):
    lens = Prescription(-0.5, -0.5, 90.0)
    kw = {"lens_od": lens, "lens_os": lens, "plus_od_d": 0.75, "plus_os_d": 0.75}
    with pytest.raises(SessionError, match="question 1 is not the next one"):
        store.record_balance_answer(visit, 1, clearer="OD", **kw)
    store.record_balance_answer(visit, 0, clearer="OD", **kw)
    with pytest.raises(InvalidInputError, match="clearer|eye: expected one of OD, OS, equal"):
        store.record_balance_answer(visit, 1, clearer="right", **kw)
    store.record_balance_answer(visit, 1, clearer="equal", **{**kw, "plus_od_d": 1.0})
    assert [(a.index, a.plus_od_d, a.clearer) for a in store.balance_answers(visit)] == [
        (0, 0.75, "OD"),
        (1, 1.0, "equal"),
    ]
    outcome = store.record_balance(visit, outcome="equal", method="fogged", plus_change_od_d=0.25)
    assert (outcome.outcome, outcome.plus_change_od_d, outcome.plus_change_os_d, outcome.done) == (
        "equal",
        0.25,
        0.0,
        True,
    )
    with pytest.raises(SessionError, match="balance is over"):
        store.record_balance_answer(visit, 2, clearer="OD", **kw)
    with pytest.raises(SessionError, match="already has its outcome"):
        store.record_balance(visit, outcome="not done", method="fogged", reason="x")


def test_a_balance_not_done_says_why_and_changes_nothing(store, visit):
    with pytest.raises(InvalidInputError, match="reason: expected a non-empty text"):
        store.record_balance(visit, outcome="not done", method="fogged")
    with pytest.raises(InvalidInputError, match="changes no eye"):
        store.record_balance(visit, outcome="not done", method="fogged", plus_change_os_d=0.25, reason="x")
    with pytest.raises(InvalidInputError, match="outcome: expected one of"):
        store.record_balance(visit, outcome="done", method="fogged")
    assert store.visit_balance(visit) is None
    assert not store.record_balance(visit, outcome="not done", method="fogged", reason="OS skipped").done


def test_sign_off_is_kept_beside_the_found_prescription_and_the_latest_is_in_force(store, visit, protocol):
    store.link_visit_session(visit, "OD", _session(store, protocol, "OD"))
    first = store.sign_off(visit, "OD", Prescription(-1.0, -0.5, 90.0), "Dr B")
    store.sign_off(visit, "OD", Prescription(-1.25, -0.75, 90.0), "Dr C")
    assert eye_statuses(store, visit)["OD"].found == Prescription(-1.25, -0.5, 90.0)  # never replaced
    assert [(s.by, s.prescription.cylinder_d) for s in store.visit_signoffs(visit)] == [("Dr B", -0.5), ("Dr C", -0.75)]
    assert final_prescription(store, visit, "OD") == Prescription(-1.25, -0.75, 90.0)
    assert first.at < store.visit_signoffs(visit)[1].at
    store.record_balance(visit, outcome="equal", method="fogged", plus_change_od_d=0.25)
    assert final_prescription(store, visit, "OD") == Prescription(-1.0, -0.75, 90.0)


@pytest.mark.parametrize(
    "setup, eye, rx, by, message",
    [
        (
            "finished",
            "OD",
            Prescription(-1.5, 0.5, 180.0),
            "Dr B",
            r"cylinder \+0.50 D is in plus-cylinder form but this visit writes minus cylinders; enter S -1.00 / C "
            r"-0.50 x 090",
        ),
        ("finished", "OD", Prescription(-1.5, -0.5, 180.0), " ", "by: expected a non-empty text"),
        ("open", "OD", Prescription(-1.5, -0.5, 180.0), "Dr B", r"session \d+\) is open; finish it before signing off"),
        ("finished", "OS", Prescription(-1.5, -0.5, 180.0), "Dr B", "OS has no refraction"),
        ("skipped", "OS", Prescription(-1.5, -0.5, 180.0), "Dr B", "OS was skipped"),
    ],
)
def test_bad_sign_off_is_refused_and_nothing_is_recorded(store, visit, protocol, setup, eye, rx, by, message):
    store.link_visit_session(visit, "OD", _session(store, protocol, "OD", finish=setup != "open"))
    if setup == "skipped":
        store.skip_visit_eye(visit, "OS", "amblyopic eye")
    before = _dump(store)
    with pytest.raises(InvalidInputError, match=message):
        store.sign_off(visit, eye, rx, by)
    assert _dump(store) == before and store.visit_signoffs(visit) == []


def test_an_axis_outside_0_180_never_reaches_the_log():
    with pytest.raises(InvalidInputError, match=r"axis_deg: must be in \[0, 180\] degrees, got 190"):
        Prescription.parse("-1.00 -0.50 x 190")


def test_plus_cylinder_visit_takes_plus_cylinder_sign_offs(store, protocol):
    store.create_patient("P1")
    vid = store.create_visit("P1", cylinder_form="plus")
    store.link_visit_session(vid, "OD", _session(store, protocol, "OD", patient="P1"))
    with pytest.raises(InvalidInputError, match="minus-cylinder form but this visit writes plus"):
        store.sign_off(vid, "OD", Prescription(-1.25, -0.5, 90.0), "Dr B")
    store.sign_off(vid, "OD", Prescription(-1.75, 0.5, 180.0), "Dr B")
    assert eye_statuses(store, vid)["OD"].found == Prescription(-1.75, 0.5, 180.0)  # found shown in the visit's form


def test_acuities_name_the_lenses_they_were_read_through(store, visit):
    od, os_ = Prescription(-1.0, -0.5, 90.0), Prescription(-2.0, 0.0, 180.0)
    a = store.record_visit_acuity(visit, "OD", -0.04, lenses={"OD": od}, method="chart", detail={"letters": 57})
    assert (a.eye, a.va_logmar, a.lenses, a.detail) == ("OD", -0.04, {"OD": od}, {"letters": 57})
    store.record_visit_acuity(visit, "OU", -0.1, lenses={"OD": od, "OS": os_}, method="chart")
    with pytest.raises(InvalidInputError, match="lenses: expected the lens of OD and OS"):
        store.record_visit_acuity(visit, "OU", -0.1, lenses={"OD": od}, method="chart")
    with pytest.raises(InvalidInputError, match=r"va_logmar: expected a finite number in \[-1, 3\]"):
        store.record_visit_acuity(visit, "OS", 4.0, lenses={"OS": os_}, method="chart")
    assert [x.eye for x in store.visit_acuities(visit)] == ["OD", "OU"]


def test_unknown_visit_and_bad_ids(store):
    with pytest.raises(SessionError, match="no visit 9"):
        store.get_visit(9)
    with pytest.raises(InvalidInputError, match="visit_id: expected an integer, got .1.$"):
        store.get_visit("1")
    with pytest.raises(SessionError, match="no visit"):
        store.get_visit(2**70)


def test_damaged_visit_row_is_named(store, visit):
    store.conn.execute("DROP TRIGGER visits_no_update")
    store.conn.execute("UPDATE visits SET created_at = 'yesterday' WHERE id = ?", (visit,))
    with pytest.raises(StoreError, match=f"visit {visit} is damaged: created_at: 'yesterday' is not an ISO 8601"):
        store.get_visit(visit)
