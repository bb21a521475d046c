"""The visit's inputs in the app: PD and examiner given with the visit (or on the finish page),
the acuity with both eyes open (read by a simulated patient, typed by the clinician), and the
finish page's form; bad input refused with its field named and nothing recorded."""

from __future__ import annotations

import math

import pytest
from app_helpers import write_visit_protocol
from engine_helpers import engine_host, last_event, run_open_eye

from visiontune.app.logic.messages import (
    BalanceAnswer,
    Close,
    CreateVisit,
    Failed,
    NearSkip,
    NextEye,
    RecordAcuity,
    ShowVisit,
    VisitInputs,
    VisitViewed,
)
from visiontune.app.logic.visit_flow import NewVisit, Step, inputs_text
from visiontune.app.logic.visit_host import CLINICIAN_BINOCULAR_METHOD
from visiontune.app.visit_finish_view import VisitFinishView
from visiontune.session.binocular_acuity import BINOCULAR_CHART_METHOD
from visiontune.session.store import TrialStore
from visiontune.session.visit import final_prescription
from visiontune.session.visit_records import visit_inputs


@pytest.fixture
def finished_visit(tmp_path):
    """A simulated visit created with PD 31.5/32 and an examiner, both eyes refracted, no balance."""
    db = tmp_path / "log.sqlite3"
    host, events = engine_host(db)
    protocol = write_visit_protocol(tmp_path, max_trials=3)
    host.handle(CreateVisit(NewVisit("SIM-PD", str(protocol), True, pd="31.5/32", examiner="J. Examiner")))
    run_open_eye(host, events)
    host.handle(NextEye(1))
    run_open_eye(host, events)
    host.handle(ShowVisit(1))
    if last_event(events, VisitViewed).step == Step.BALANCE:
        host.handle(BalanceAnswer(1, None, None))
    if last_event(events, VisitViewed).step == Step.NEAR:  # a presbyope: not what this test is about
        host.handle(NearSkip(1, "not part of this test"))
    assert not any(isinstance(e, Failed) for e in events)
    yield db, host, events
    host.handle(Close())


def test_pd_examiner_and_the_acuity_with_both_eyes_open(finished_visit):
    db, host, events = finished_visit
    view = last_event(events, VisitViewed)
    assert view.step == Step.FINISH
    assert (view.pd_text, view.examiner) == ("63.5 mm (31.5/32)", "J. Examiner")
    with TrialStore.open(db, read_only=True) as store:
        ou = [a for a in store.visit_acuities(1) if a.eye == "OU"]
        assert len(ou) == 1 and ou[0].method == BINOCULAR_CHART_METHOD  # the simulated patient read it
        assert view.binocular_va_logmar == ou[0].va_logmar
        given = visit_inputs(store, 1)
        assert (given.pd_mm, given.examiner) == (63.5, "J. Examiner")
    assert "PD 63.5 mm (31.5/32)" in inputs_text(view) and "examiner J. Examiner" in inputs_text(view)
    # the clinician types the acuity with both eyes open, and a new PD and examiner
    host.handle(RecordAcuity(1, "OU", -0.1))
    host.handle(VisitInputs(1, "62", "K. Other"))
    view = last_event(events, VisitViewed)
    assert (view.binocular_va_logmar, view.pd_text, view.examiner) == (-0.1, "62 mm", "K. Other")
    with TrialStore.open(db, read_only=True) as store:
        last = store.visit_acuities(1)[-1]
        assert last.eye == "OU" and last.method == CLINICIAN_BINOCULAR_METHOD
        assert all(last.lenses[e].is_equivalent(final_prescription(store, 1, e), 1e-9) for e in ("OD", "OS"))


@pytest.mark.parametrize(
    ("pd", "examiner", "problem"),
    [
        ("95", "J", "PD: 95 mm is not a pupillary distance"),
        ("31.5/", "J", "PD: '31.5/' is not a distance"),
        ("", "", "PD and examiner: type the pupillary distance"),
    ],
)
def test_bad_inputs_on_the_finish_page_are_refused(finished_visit, pd, examiner, problem):
    db, host, events = finished_visit
    with TrialStore.open(db, read_only=True) as store:
        before = list(store.conn.iterdump())
    host.handle(VisitInputs(1, pd, examiner))
    assert problem in last_event(events, Failed)
    with TrialStore.open(db, read_only=True) as store:
        assert list(store.conn.iterdump()) == before


def test_a_visit_with_a_bad_pd_is_not_created(tmp_path):
    db = tmp_path / "log.sqlite3"
    host, events = engine_host(db)
    protocol = write_visit_protocol(tmp_path, max_trials=3)
    host.handle(CreateVisit(NewVisit("SIM-PD", str(protocol), True, pd="120", examiner="J")))
    assert "PD: 120 mm is not a pupillary distance" in last_event(events, Failed)
    host.handle(Close())
    with TrialStore.open(db, read_only=True) as store:
        assert store.list_visits() == []


def test_the_finish_page_sends_the_acuity_with_both_eyes_open_and_the_inputs(qtbot, finished_visit):
    db, host, events = finished_visit
    view = last_event(events, VisitViewed)
    page = VisitFinishView()
    qtbot.addWidget(page)
    page.show_visit(view)
    assert "Both eyes open:" in page.inputs.text() and "63.5 mm" in page.inputs.text()
    assert page.both_box.isHidden()  # a simulated patient reads the chart itself
    with qtbot.waitSignal(page.acuity_requested) as sent:
        page.both_acuity.setText("6/9")
        page._both_acuity()
    assert sent.args[0] == "OU" and sent.args[1] == pytest.approx(round(math.log10(9 / 6), 2))  # to 0.01 logMAR
    with qtbot.assertNotEmitted(page.acuity_requested):
        page.both_acuity.setText("six")
        page._both_acuity()
    assert page.message.text().startswith("Both eyes open:")
    with qtbot.waitSignal(page.inputs_requested) as sent:
        page.pd.setText("31/31")
        page.examiner.setText("J. Examiner")
        page._inputs()
    assert sent.args == ["31/31", "J. Examiner"]


def test_the_start_page_takes_pd_and_examiner_and_names_a_bad_pd(qtbot):
    from visiontune.app.start_view import StartView

    view = StartView(["clinical-sloan"])
    qtbot.addWidget(view)
    requests = []
    view.visit_requested.connect(requests.append)
    view.choose_visit()
    assert not view.people_row.isHidden()
    view.simulated.setChecked(True)
    view.patient_id.setText("SIM-7")
    view.pd.setText("6.3")
    view.start_button.click()
    assert view.form_error.text().startswith("PD: 6.3 mm is not a pupillary distance") and not requests
    assert "b00020" in view.pd.styleSheet() and "b00020" not in view.examiner.styleSheet()
    view.pd.setText("31.5/32")
    view.examiner.setText("  J. Examiner ")
    view.start_button.click()
    [request] = requests
    assert (request.pd, request.examiner) == ("31.5/32", "J. Examiner")
    view.eye.setCurrentText("OD")  # a single session has no visit inputs
    assert view.people_row.isHidden()
