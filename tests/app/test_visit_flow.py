"""A visit in the app, by keyboard: the right eye, the left eye, the binocular balance (R / L /
=, each answer recorded before the next question), the finish page with both eyes side by
side, a sign-off kept beside the found prescription, and the visit's records exported. A
simulated visit says SIMULATED on every page and in every record; a real patient's never."""

from __future__ import annotations

import csv
import json
import shutil
import stat
import subprocess

import pydicom
import pytest
from app_helpers import SCREENSHOTS, write_visit_protocol
from engine_helpers import engine_host, last_event, run_open_eye
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from visiontune.app.logic.keys import Phase
from visiontune.app.logic.messages import (
    BalanceAnswer,
    Close,
    CreateVisit,
    Failed,
    NearSkip,
    NextEye,
    Opened,
    ShowVisit,
    SkipEye,
    VisitViewed,
)
from visiontune.app.logic.visit_flow import NewVisit, Step, interpret_visit_key, next_step, parse_acuity, read_signoff
from visiontune.display import Calibration, save_calibration
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.session.store import TrialStore
from visiontune.session.visit import eye_statuses, final_prescription

KEYS = {"OD": Qt.Key.Key_R, "OS": Qt.Key.Key_L, "equal": Qt.Key.Key_Equal}
TEXTS = {"OD": "r", "OS": "l", "equal": "="}


def _refract_eye(qtbot, window, eye, answer, simulated=True):
    """Run the open session of ``eye`` to its stopping rule by keys, then F F. ``answer(q)``
    types the answer to query ``q`` (after Enter has shown the letter)."""
    view = window.session_view
    qtbot.waitUntil(lambda: window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.eye == eye, timeout=60_000)
    assert view.eye_badge.text().startswith({"OD": "RIGHT EYE (OD)", "OS": "LEFT EYE (OS)"}[eye])
    assert view.eye_badge.isVisible() and f"Visit {window.snapshot.visit_id}" in view.header.text()
    assert view.banner.isVisible() == simulated and ("SIMULATED" in window.windowTitle()) == simulated
    while window.phase != Phase.STOPPED:
        n = window.snapshot.n_trials
        q = window.snapshot.query
        qtbot.keyClick(view, Qt.Key.Key_Return)
        answer(q)
        qtbot.waitUntil(
            lambda n=n: window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.n_trials == n + 1,
            timeout=60_000,
        )
    qtbot.keyClick(view, Qt.Key.Key_F)
    qtbot.keyClick(view, Qt.Key.Key_F)


def _wait_page(qtbot, window, step, timeout=60_000):
    visits = window.visits
    if step == Step.FINISH:  # a presbyope's near step comes first: skipped here, with its reason (its own tests:
        # tests/app/test_visit_near_app.py)
        qtbot.waitUntil(
            lambda: not visits.pending and visits.view is not None and visits.view.step in (Step.NEAR, Step.FINISH),
            timeout=timeout,
        )
        if visits.view.step == Step.NEAR:
            qtbot.keyClicks(visits.near_view.skip_reason, "not part of this test")
            qtbot.mouseClick(visits.near_view.skip_button, Qt.MouseButton.LeftButton)
    page = visits.finish_view if step == Step.FINISH else visits.step_view
    qtbot.waitUntil(
        lambda: (
            window.stack.currentWidget() is page
            and visits.view is not None
            and visits.view.step == step
            and not visits.pending
        ),
        timeout=timeout,
    )
    return visits.view


def _visible_texts(widget) -> list[str]:
    return [w.text() for w in widget.findChildren(QLabel) if w.isVisibleTo(widget) and w.text()]


def _grab(window, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(SCREENSHOTS / name))


def test_a_whole_simulated_visit_by_keyboard(qtbot, make_window, paths, tmp_path):
    protocol = write_visit_protocol(tmp_path, max_trials=6)
    window = make_window(pace_s=0.0, protocol=protocol)
    start = window.start_view
    start.patient_id.clear()
    qtbot.keyClicks(start.patient_id, "SIM-VISIT")
    qtbot.keyClick(start.eye, Qt.Key.Key_End)  # the last choice: a visit
    assert start.is_visit() and start.start_button.text() == "Start visit" and start.os_row.isVisibleTo(start)
    qtbot.keyClick(start.start_button, Qt.Key.Key_Space)

    # --- the right eye, then the left eye, in the session view, answered by the simulated patient
    _refract_eye(qtbot, window, "OD", lambda q: qtbot.keyClick(window.session_view, Qt.Key.Key_Return))
    between = _wait_page(qtbot, window, Step.REFRACT)
    step_view = window.visits.step_view
    assert between.eye == "OS" and step_view.title.text() == "Next: LEFT EYE (OS)"
    assert "Occlude the right eye (OD)" in step_view.body.text() and step_view.banner.isVisible()
    qtbot.keyClick(step_view, Qt.Key.Key_Space)  # nothing but Enter / Space starts the next eye
    _refract_eye(qtbot, window, "OS", lambda q: qtbot.keyClick(window.session_view, Qt.Key.Key_Return))

    # --- the balance: R first (typed), then the simulated patient's answers (Enter)
    view = _wait_page(qtbot, window, Step.BALANCE)
    assert view.question.index == 0 and view.question.plus_od_d == view.question.plus_os_d == 0.75
    assert "Which eye sees the line more clearly?" in step_view.prompt.text()
    assert step_view.simulated_reply.text().startswith("Simulated patient says:")
    typed = []
    qtbot.keyClick(step_view, Qt.Key.Key_Backspace)
    assert "cannot be undone" in window.status.currentMessage()
    qtbot.keyClicks(step_view, "r")
    typed.append("OD")
    while True:
        qtbot.waitUntil(
            lambda: (
                not window.visits.pending
                and window.visits.view.step != Step.BALANCE
                or window.visits.view.question is not None
                and window.visits.view.question.index == len(typed)
            ),
            timeout=30_000,
        )
        view = window.visits.view
        assert len(view.balance.answers) == len(typed)  # recorded before the next question
        if view.step != Step.BALANCE:
            break
        typed.append(view.question.simulated_answer)
        qtbot.keyClick(step_view, Qt.Key.Key_Return)

    # --- the finish page: both eyes side by side
    view = _wait_page(qtbot, window, Step.FINISH)
    finish = window.visits.finish_view
    assert finish.banner.isVisible() and "SIMULATED" in window.windowTitle()
    for eye in ("OD", "OS"):
        column = finish.columns[eye]
        details = column.details.text()
        assert column.lens.text() and column.heading.text().startswith({"OD": "RIGHT", "OS": "LEFT"}[eye])
        for text in ("credible region", "S \u00b1", "C \u00b1", "logMAR", "6/", "20/", "decimal", "Found by"):
            assert text in details, (eye, text)
        assert column.truth.text().startswith("SIMULATED patient's true correction")
        assert not column.acuity_box.isVisibleTo(finish)  # a simulated patient reads its own chart
    assert finish.columns["OD"].geometry().x() < finish.columns["OS"].geometry().x()  # right eye on the left
    assert view.balance.outcome in ("equal", "right eye clearer", "not balanced")
    assert "Binocular balance" in finish.balance.text()

    # --- sign off the right eye: bad input first (nothing recorded), then an edit
    od = finish.columns["OD"]
    found_od = view.eyes["OD"].found
    edited = Prescription(found_od.sphere_d - 0.25, found_od.cylinder_d, found_od.axis_deg)
    for field, text in (
        (od.sphere, f"{edited.sphere_d:+.2f}"),
        (od.cylinder, f"{edited.cylinder_d:+.2f}"),
        (od.axis, "200"),
        (od.by, "Dr K. Board"),
    ):
        field.clear()
        qtbot.keyClicks(field, text)
    qtbot.keyClick(od.by, Qt.Key.Key_Return)
    assert od.error.text().startswith("Axis: expected degrees in [0, 180]") and not window.visits.pending
    od.axis.clear()
    qtbot.keyClicks(od.axis, f"{edited.axis_deg:.0f}")
    qtbot.keyClick(od.by, Qt.Key.Key_Return)
    qtbot.waitUntil(
        lambda: window.visits.view.eyes["OD"].signed is not None and not window.visits.pending, timeout=30_000
    )
    view = window.visits.view
    assert view.eyes["OD"].signed.is_equivalent(edited, 1e-9) and view.eyes["OD"].found == found_od
    assert "Dr K. Board" in od.details.text() and "the found one is kept beside it" in od.details.text()
    _grab(window, "visit_finish.png")

    # --- accept and export, by keyboard
    qtbot.keyClick(finish.export_button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: bool(window.visits.view.exports) and not window.visits.pending, timeout=60_000)
    assert "Exported" in finish.exports.text()
    vid = view.visit_id
    window.close()

    # --- the trial log: the visit, both eyes, the balance answers as typed, the sign-off beside
    with TrialStore.open(paths["db"]) as store:
        visit = store.get_visit(vid)
        assert visit.simulated and visit.patient_id == "SIM-VISIT"
        statuses = eye_statuses(store, vid)
        assert [s.state for s in statuses.values()] == ["finished", "finished"]
        assert statuses["OD"].found == found_od  # the found prescription is kept
        [signed] = store.visit_signoffs(vid)
        assert (signed.eye, signed.by) == ("OD", "Dr K. Board") and signed.prescription.is_equivalent(edited, 1e-9)
        assert [a.clearer for a in store.balance_answers(vid)] == typed
        balance = store.visit_balance(vid)
        final_od = final_prescription(store, vid, "OD")
        assert final_od.sphere_d == pytest.approx(edited.sphere_d + balance.plus_change_od_d)
        acuities = store.visit_acuities(vid)
        assert any(a.eye == "OD" and a.lenses["OD"].is_equivalent(final_od, 1e-6) for a in acuities)  # read again

    # --- the records: every file user-only and SIMULATED
    folder = paths["exports"] / f"visiontune-visit-{vid}-SIM-VISIT-SIMULATED"
    base = folder / folder.name
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        [f"{folder.name}.{x}" for x in ("csv", "fhir.json", "json", "pdf")]
        + [
            f"visit-{vid}-subjective-refraction.dcm",
            f"visit-{vid}-visual-acuity.dcm",
            f"visit-{vid}-autorefraction.dcm",
        ]
    )  # the start: the simulated autorefraction
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}
    doc = json.loads(base.with_suffix(".json").read_text())
    assert doc["mark"] == "SIMULATED" and doc["record"]["simulated"] is True
    rows = list(csv.DictReader(base.with_suffix(".csv").open()))
    assert [r["eye"] for r in rows] == ["OD", "OS"] and {r["simulated"] for r in rows} == {"1"}
    bundle = json.loads((folder / f"{folder.name}.fhir.json").read_text())
    assert all(e["resource"]["meta"]["tag"][0]["code"] == "HTEST" for e in bundle["entry"])
    for name in names:
        if name.endswith(".dcm"):
            ds = pydicom.dcmread(folder / name)
            assert ds.StudyDescription.startswith("SIMULATED") and "SIMULATED" in ds.PatientComments
    assert base.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
    if shutil.which("pdftotext"):
        text = subprocess.run(
            ["pdftotext", str(base.with_suffix(".pdf")), "-"], capture_output=True, text=True, check=True
        ).stdout
        assert "SIMULATED" in text and "Dr K. Board" in text

    # --- the app log says what each key did
    log = paths["log_file"].read_text(encoding="utf-8")
    assert "key 'r' -> balance-answer OD" in log and "key Backspace ignored (visit balance)" in log
    assert "key Space -> continue" in log and "sign-off requested (visit 1 OD)" in log


def test_a_real_patients_visit_never_says_simulated(qtbot, make_window, paths, tmp_path):
    save_calibration(Calibration(527.0, 296.4375, 1920, 1080, 1000.0), paths["calibration"])
    protocol = write_visit_protocol(tmp_path, max_trials=4, logmar=(0.0, 1.0))
    window = make_window(simulate=False, protocol=protocol)
    start = window.start_view
    start.simulated.setChecked(False)
    start.choose_visit()
    for field, text in (
        (start.patient_id, "P-0042"),
        (start.sphere, "-1.25"),
        (start.cylinder, "-0.50"),
        (start.axis, "90"),
        (start.os_sphere, "-1.00"),
        (start.os_cylinder, "-0.25"),
        (start.os_axis, "85"),
    ):
        field.clear()
        qtbot.keyClicks(field, text)
    qtbot.keyClick(start.start_button, Qt.Key.Key_Space)

    def name_the_letter(q):  # the patient reads every letter
        qtbot.keyClicks(window.session_view, q.letter.lower())

    _refract_eye(qtbot, window, "OD", name_the_letter, simulated=False)
    assert window.snapshot.start.rx == Prescription(-1.25, -0.5, 90.0)
    _wait_page(qtbot, window, Step.REFRACT)
    qtbot.keyClick(window.visits.step_view, Qt.Key.Key_Return)
    _refract_eye(qtbot, window, "OS", name_the_letter, simulated=False)
    assert window.snapshot.start.rx == Prescription(-1.0, -0.25, 85.0)
    qtbot.waitUntil(
        lambda: (
            window.visits.view is not None and window.visits.view.step != Step.REFRACT and not window.visits.pending
        ),
        timeout=60_000,
    )
    if window.visits.view.step == Step.BALANCE:
        step_view = window.visits.step_view
        assert not step_view.banner.isVisibleTo(step_view) and not step_view.simulated_reply.isVisibleTo(step_view)
        qtbot.keyClick(step_view, Qt.Key.Key_Return)  # no simulated patient: Enter answers nothing
        assert "Type the patient's answer" in window.status.currentMessage()
        qtbot.keyClicks(step_view, "=")
    view = _wait_page(qtbot, window, Step.FINISH)
    finish = window.visits.finish_view
    od = finish.columns["OD"]
    assert od.acuity_box.isVisibleTo(finish) and "not yet measured" in od.details.text()
    qtbot.keyClicks(od.acuity, "6/6")
    qtbot.keyClick(od.acuity, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.visits.view.eyes["OD"].measured_va_logmar is not None, timeout=30_000)
    assert "+0.00 logMAR \u00b7 6/6.0 \u00b7 20/20 \u00b7 decimal 1.00" in od.details.text()
    texts = _visible_texts(finish)
    assert texts and not any("SIMULATED" in t for t in texts), texts
    assert not finish.banner.isVisibleTo(finish) and "SIMULATED" not in window.windowTitle()
    assert "patient P-0042" in finish.title.text()
    qtbot.keyClick(finish.export_button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: bool(window.visits.view.exports) and not window.visits.pending, timeout=60_000)
    folder = paths["exports"] / f"visiontune-visit-{view.visit_id}-P-0042"
    for path in folder.iterdir():
        assert b"SIMULATED" not in path.read_bytes() and b"HTEST" not in path.read_bytes(), path.name
    window.close()
    with TrialStore.open(paths["db"]) as store:
        visit = store.get_visit(view.visit_id)
        assert not visit.simulated and visit.habitual_od is None  # an autorefraction is no habitual Rx
        [acuity] = store.visit_acuities(view.visit_id)
        assert (acuity.eye, acuity.va_logmar) == ("OD", 0.0) and "clinician" in acuity.method


# --- the engine's side, without the window ---------------------------------------------------
def _past_near(host, events, visit_id=1):
    """The visit's view past a presbyope's near step (skipped with a reason: its own tests are
    tests/app/test_visit_near_app.py)."""
    view = last_event(events, VisitViewed)
    if view.step == Step.NEAR:
        assert set(view.near.adds) == set() and not view.near.begun
        host.handle(NearSkip(visit_id, "not part of this test"))
        view = last_event(events, VisitViewed)
    return view


def test_an_eye_skipped_on_the_start_page_has_no_session_and_no_balance(tmp_path):
    host, events = engine_host(tmp_path / "log.sqlite3")
    protocol = write_visit_protocol(tmp_path, max_trials=3)
    spectacles = Prescription(-1.0, -0.5, 90.0)
    host.handle(
        CreateVisit(
            NewVisit(
                "SIM-1",
                str(protocol),
                True,
                starts={"OD": spectacles},
                start_source="spectacles",
                skip={"OS": "prosthetic eye"},
            )
        )
    )
    assert not any(isinstance(e, Failed) for e in events)
    opened = last_event(events, Opened)
    assert opened.eye == "OD" and opened.start.rx == spectacles and opened.start.source == "spectacles"
    finished = run_open_eye(host, events)
    assert finished.visit_id == 1 and finished.exports == {}  # exported with the visit, not alone
    host.handle(ShowVisit(1))
    view = _past_near(host, events)
    assert view.step == Step.FINISH and view.eyes["OS"].state == "skipped"
    assert view.balance.outcome == "not done" and "OS skipped (prosthetic eye)" in view.balance.reason
    host.handle(Close())
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        assert len(store.list_sessions()) == 1 and [a.eye for a in store.visit_acuities(1)] == ["OD"]
        assert store.get_visit(1).habitual_od == spectacles and store.get_visit(1).habitual_os is None


def test_the_next_eye_skipped_between_eyes_discards_its_empty_session(tmp_path):
    host, events = engine_host(tmp_path / "log.sqlite3")
    protocol = write_visit_protocol(tmp_path, max_trials=3)
    host.handle(CreateVisit(NewVisit("SIM-2", str(protocol), True)))
    run_open_eye(host, events)
    host.handle(ShowVisit(1))
    assert last_event(events, VisitViewed).eye == "OS"
    host.handle(SkipEye(1, "OS", "amblyopic eye"))
    view = _past_near(host, events)
    assert view.step == Step.FINISH and view.eyes["OS"].skip_reason == "amblyopic eye"
    host.handle(BalanceAnswer(1, None, None))  # the balance is over: refused, nothing recorded
    assert "the binocular balance is over" in last_event(events, Failed)
    host.handle(Close())
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        os_session = [s for s in store.list_sessions(include_discarded=True) if s.eye.value == "OS"]
        assert len(os_session) == 1 and os_session[0].discarded


def test_no_balance_on_request_and_a_stale_answer_is_refused(tmp_path):
    host, events = engine_host(tmp_path / "log.sqlite3")
    protocol = write_visit_protocol(tmp_path, max_trials=8)
    host.handle(CreateVisit(NewVisit("SIM-3", str(protocol), True)))
    run_open_eye(host, events)
    host.handle(NextEye(1))
    run_open_eye(host, events)
    host.handle(ShowVisit(1))
    view = last_event(events, VisitViewed)
    if view.step == Step.BALANCE:
        host.handle(BalanceAnswer(1, 5, "OD"))  # not the question asked
        assert "is not the one asked" in last_event(events, Failed)
        host.handle(BalanceAnswer(1, None, None))
        view = last_event(events, VisitViewed)
        assert view.balance.reason == "not requested by the clinician"
    view = _past_near(host, events)
    assert view.step == Step.FINISH
    host.handle(Close())
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        assert store.balance_answers(1) == []


def test_a_visit_begun_headless_is_resumed_and_finished_by_the_app(tmp_path):
    """``visiontune visit run`` stopped after 2 answers of OD (OS not started): the app's engine
    resumes OD, then starts OS the way the headless run would (seed ^ 1, the same simulated
    person), then asks the balance."""
    from visiontune.refraction.protocol import load_protocol
    from visiontune.session.simulated_visit import drive_simulated_visit, recorded_case, visit_cases
    from visiontune.session.visit import create_visit

    db = tmp_path / "log.sqlite3"
    protocol = load_protocol(write_visit_protocol(tmp_path, max_trials=4))
    with TrialStore.open(db) as store:
        vid = create_visit(store, "SIM-CLI", simulated=True)
        assert not drive_simulated_visit(store, vid, protocol=protocol, seed=7, max_steps=2)
    host, events = engine_host(db)
    host.handle(NextEye(vid))
    snap = last_event(events, Opened)
    assert (snap.eye, snap.n_trials, snap.visit_id) == ("OD", 2, vid)
    run_open_eye(host, events)
    host.handle(NextEye(vid))
    snap = last_event(events, Opened)
    assert (snap.eye, snap.seed, snap.n_trials) == ("OS", 7 ^ 1, 0)
    run_open_eye(host, events)
    host.handle(ShowVisit(vid))
    assert last_event(events, VisitViewed).step in (Step.BALANCE, Step.FINISH)
    assert not any(isinstance(e, Failed) for e in events)
    host.handle(Close())
    with TrialStore.open(db) as store:
        os_case = recorded_case(store, eye_statuses(store, vid)["OS"].session_id)
        assert os_case.true_rx == visit_cases(7, protocol)["OS"].true_rx


def test_the_start_page_reads_a_visit_and_names_the_wrong_field(qtbot):
    from visiontune.app.start_view import StartView

    view = StartView(["clinical-sloan"])
    qtbot.addWidget(view)
    requests = []
    view.visit_requested.connect(requests.append)
    view.choose_visit()
    view.simulated.setChecked(False)
    view.patient_id.setText("P-7")
    view.start_source.setCurrentIndex(view.start_source.findData("spectacles"))
    view.sphere.setText("-2")
    view.os_sphere.setText("-1,5")
    view.os_cylinder.setText("-0.5")
    view.start_button.click()
    assert view.form_error.text().startswith("OS Axis: a cylinder of -0.50 D needs its axis")
    assert "b00020" in view.os_axis.styleSheet() and "b00020" not in view.axis.styleSheet()
    view.skip_od.setText("prosthetic eye")
    view.skip_os.setText("amblyopic eye")
    view.start_button.click()
    assert view.form_error.text().startswith("Not refracted: a visit refracts at least one eye") and not requests
    view.skip_os.clear()
    view.os_axis.setText("180")
    view.start_button.click()
    [request] = requests
    assert request.skip == {"OD": "prosthetic eye"} and request.starts == {"OS": Prescription(-1.5, -0.5, 180.0)}
    assert request.start_source == "spectacles" and not request.simulated


# --- the Qt-free pieces -------------------------------------------------------------------------
def test_the_steps_and_keys_of_a_visit():
    assert next_step({"OD": "not started", "OS": "open"}, False) == (Step.REFRACT, "OD")
    assert next_step({"OD": "finished", "OS": "paused"}, False) == (Step.REFRACT, "OS")
    assert next_step({"OD": "skipped", "OS": "discarded"}, False) == (Step.REFRACT, "OS")
    assert next_step({"OD": "finished", "OS": "skipped"}, False) == (Step.BALANCE, None)
    assert next_step({"OD": "finished", "OS": "finished"}, True) == (Step.FINISH, None)
    key = interpret_visit_key
    assert key("R", "r", step=Step.BALANCE).answer == "OD"
    assert key("L", "l", step=Step.BALANCE).answer == "OS"
    assert key("Equal", "=", step=Step.BALANCE).answer == "equal"
    assert key("Return", "\r", step=Step.BALANCE, simulated_answer="OS").answer == "OS"
    assert "R (right eye clearer)" in key("Return", "\r", step=Step.BALANCE).message
    assert key("N", "n", step=Step.BALANCE).action.value == "no-balance"
    assert key("Space", " ", step=Step.REFRACT).action.value == "continue"
    assert "Enter" in key("R", "r", step=Step.REFRACT).message


def test_sign_off_and_acuity_input_is_checked_before_anything_is_sent():
    assert read_signoff("\u22121.25", "-0.50", "90", " Dr A ", "minus") == (Prescription(-1.25, -0.5, 90.0), "Dr A")
    for args, start in (
        (("-1", "-0.5", "181", "A", "minus"), "Axis: expected degrees in [0, 180]"),
        (("-1", "+0.5", "90", "A", "minus"), "Cylinder: cylinder +0.50 D is in plus-cylinder form"),
        (("-1", "-0.5", "", "A", "minus"), "Axis: a cylinder of -0.50 D needs its axis"),
        (("", "", "", "A", "minus"), "Sphere:"),
        (("-1", "", "", " ", "minus"), "Name:"),
    ):
        with pytest.raises(InvalidInputError) as exc:
            read_signoff(*args)
        assert str(exc.value).startswith(start), str(exc.value)
    assert parse_acuity("6/12") == pytest.approx(0.3, abs=0.01) and parse_acuity("\u22120.08") == -0.08
    with pytest.raises(InvalidInputError, match="Acuity:"):
        parse_acuity("good")
