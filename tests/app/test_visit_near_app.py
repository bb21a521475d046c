"""The near addition in the app's visit: the near page after the balance for a presbyope (by keys,
the simulated patient answering, each answer in the trial log before the next letter), the add per
eye on the finish page, an engine killed mid-step resumed at the same letter, a real patient's
letters sized for the near distance from the screen's calibration, and refusals."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from app_helpers import SCREENSHOTS, write_visit_protocol
from engine_helpers import engine_host, last_event, run_open_eye
from PySide6.QtCore import Qt

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Phase, Rejected
from visiontune.app.logic.messages import (
    BalanceAnswer,
    Close,
    CreateVisit,
    Failed,
    NearAnswer,
    NearBegin,
    NearSkip,
    NextEye,
    ShowVisit,
    VisitViewed,
)
from visiontune.app.logic.visit_flow import NewVisit, Step, VisitAction, interpret_near_key
from visiontune.app.visit_near_view import patient_screen_logmar
from visiontune.display import Calibration, save_calibration
from visiontune.errors import SessionError
from visiontune.session import near_store
from visiontune.session.near_skip import near_skip
from visiontune.session.simulated_visit import drive_simulated_visit
from visiontune.session.store import TrialStore

SEED = 11


def _failures(events):
    return [e.value for e in events if isinstance(e, Failed)]


def _to_near(tmp_path, db, age=66.0, patient="SIM-NEAR"):
    """A simulated visit (seed SEED) refracted in both eyes, no balance: at the near step."""
    host, events = engine_host(db)
    protocol = write_visit_protocol(tmp_path, max_trials=4)
    host.handle(CreateVisit(NewVisit(patient, str(protocol), True, age_years=age, seed=SEED)))
    run_open_eye(host, events)
    host.handle(NextEye(1))
    run_open_eye(host, events)
    host.handle(ShowVisit(1))
    if last_event(events, VisitViewed).step == Step.BALANCE:
        host.handle(BalanceAnswer(1, None, None))
    assert not _failures(events)
    return host, events


def _answer_near(host, events, limit=None):
    done = 0
    while (view := last_event(events, VisitViewed)).step == Step.NEAR and (limit is None or done < limit):
        q = view.near_question
        host.handle(NearAnswer(1, q.eye, q.index, q.simulated_correct))
        assert not _failures(events)
        done += 1
    return done


def _adds(db):
    with TrialStore.open(db, read_only=True) as store:
        return {
            e: (a.add_d, a.lower_d, a.upper_d, a.near_va_logmar, a.near_point_cm, a.far_point_cm)
            for e, a in near_store.near_add_records(store, 1).items()
        }


def test_the_app_files_the_adds_the_headless_simulated_visit_files(tmp_path):
    """The same simulated answerer: the log copied after the step began, finished headless
    (visiontune visit run's driver), files the same adds as the app's letters answered one by one."""
    db = tmp_path / "app.sqlite3"
    host, events = _to_near(tmp_path, db)
    view = last_event(events, VisitViewed)
    assert view.step == Step.NEAR and view.near is not None and not view.near.begun
    host.handle(NearBegin(1, 40.0))
    q = last_event(events, VisitViewed).near_question
    assert (q.eye, q.index, q.distance_cm) == ("OD", 0, 40.0) and q.simulated_correct is not None
    assert q.distance_rx is not None and q.letter.isalpha()
    with sqlite3.connect(db) as src, sqlite3.connect(tmp_path / "headless.sqlite3") as dst:
        src.backup(dst)
    n = _answer_near(host, events)
    finish = last_event(events, VisitViewed)
    assert finish.step == Step.FINISH and set(finish.near.adds) == {"OD", "OS"}
    with TrialStore.open(db, read_only=True) as store:
        answers = sum(len(near_store.near_answers(store, 1, e)) for e in ("OD", "OS"))
    assert answers == n  # every key became one recorded answer
    with TrialStore.open(tmp_path / "headless.sqlite3") as store:
        assert drive_simulated_visit(store, 1)
    assert _adds(db) == _adds(tmp_path / "headless.sqlite3")
    host.handle(Close())


_CHILD = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_visit_near_app import _to_near, _answer_near
    from pathlib import Path
    from visiontune.app.logic.messages import NearBegin
    host, events = _to_near(Path({tmp!r}), Path({db!r}))
    host.handle(NearBegin(1, 40.0))
    _answer_near(host, events, limit={limit})
    os.kill(os.getpid(), signal.SIGKILL)  # the engine killed mid-step: no close, nothing flushed by hand
""")


def test_an_engine_killed_mid_step_resumes_at_the_same_letter_and_files_the_same_adds(tmp_path):
    killed, whole = tmp_path / "killed.sqlite3", tmp_path / "whole.sqlite3"
    (tmp_path / "k").mkdir()
    code = _CHILD.format(tests=os.path.dirname(__file__), tmp=str(tmp_path / "k"), db=str(killed), limit=5)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    host, events = engine_host(killed)
    host.handle(ShowVisit(1))
    view = last_event(events, VisitViewed)
    assert view.step == Step.NEAR and view.near.begun and view.near.answers == {"OD": 5, "OS": 0}
    assert (view.near_question.eye, view.near_question.index) == ("OD", 5)
    _answer_near(host, events)
    assert last_event(events, VisitViewed).step == Step.FINISH
    host.handle(Close())
    host, events = _to_near(tmp_path, whole)
    host.handle(NearBegin(1, 40.0))
    _answer_near(host, events)
    host.handle(Close())
    assert _adds(killed) == _adds(whole) and len(_adds(whole)) == 2


def test_refusals_leave_the_log_as_it_was(tmp_path):
    db = tmp_path / "log.sqlite3"
    host, events = _to_near(tmp_path, db)
    host.handle(NearSkip(1, "  "))  # a skip needs its reason
    assert "type why" in _failures(events)[-1]
    host.handle(NearBegin(1, 10.0))  # not a near distance
    assert "near distance" in _failures(events)[-1].lower() or "distance" in _failures(events)[-1]
    host.handle(NearAnswer(1, "OD", 0, True))  # nothing asked before it begins
    assert "nothing recorded" in _failures(events)[-1]
    host.handle(NearBegin(1, 33.0))
    assert last_event(events, VisitViewed).near_question.distance_cm == 33.0
    host.handle(NearBegin(1, 40.0))
    assert "begun already" in _failures(events)[-1]
    host.handle(NearAnswer(1, "OS", 0, True))  # not the letter asked (OD's first)
    assert "the letter asked is OD letter 1" in _failures(events)[-1]
    host.handle(NearSkip(1, "changed my mind"))
    assert "has begun" in _failures(events)[-1]
    host.handle(("visit_near", (1, "fly", None)))  # not a command: refused by its type
    assert "unknown message of type builtins.tuple" in _failures(events)[-1]
    with TrialStore.open(db, read_only=True) as store:
        assert near_store.near_answers(store, 1, "OD") == [] and near_skip(store, 1) is None
        assert near_store.near_setup(store, 1).distance_cm == 33.0
    host.handle(Close())


def test_a_skipped_near_step_is_recorded_with_its_reason_and_cannot_begin(tmp_path):
    db = tmp_path / "log.sqlite3"
    host, events = _to_near(tmp_path, db)
    host.handle(NearSkip(1, "reads without glasses"))
    view = last_event(events, VisitViewed)
    assert view.step == Step.FINISH and view.near.skip_reason == "reads without glasses"
    host.handle(NearBegin(1, 40.0))
    assert "skipped" in _failures(events)[-1]
    host.handle(Close())
    with TrialStore.open(db, read_only=True) as store:
        assert near_skip(store, 1).reason == "reads without glasses" and near_store.near_setup(store, 1) is None
    with sqlite3.connect(db) as conn, pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM visit_near_skips")


def test_a_young_patient_has_no_near_step_unless_the_clinician_asks(tmp_path):
    db = tmp_path / "log.sqlite3"
    host, events = _to_near(tmp_path, db, age=30.0)
    view = last_event(events, VisitViewed)
    assert view.step == Step.FINISH and view.near is None
    host.handle(NearBegin(1, 40.0))  # the finish page's "Near addition"
    assert last_event(events, VisitViewed).step == Step.NEAR
    _answer_near(host, events)
    assert set(last_event(events, VisitViewed).near.adds) == {"OD", "OS"}
    host.handle(Close())


def test_near_keys():
    assert interpret_near_key("Return", "\r", begun=False).action == VisitAction.NEAR_BEGIN
    assert isinstance(interpret_near_key("Plus", "+", begun=False), Rejected)
    assert interpret_near_key("Plus", "+", begun=True).answer == "+"
    assert interpret_near_key("Minus", "-", begun=True).answer == "-"
    assert interpret_near_key("Return", "\r", begun=True, simulated_correct=False).answer == "-"
    assert "Type the patient's answer" in interpret_near_key("Return", "\r", begun=True).message
    assert "cannot be undone" in interpret_near_key("Backspace", "\b", begun=True).message
    assert isinstance(interpret_near_key("R", "r", begun=True), Rejected)


CAL = Calibration(
    screen_width_mm=520.0, screen_height_mm=292.5, width_px=1920, height_px=1080, viewing_distance_mm=4000.0
)


def _real_visit(db, cal=CAL):
    """A real patient's visit (age 55) refracted in both eyes on a screen calibrated for 4 m."""
    from visiontune.refraction.loop import SimulatedPresenter
    from visiontune.refraction.protocol import load_protocol
    from visiontune.refraction.start import StartingPoint
    from visiontune.session.simulated_visit import visit_cases
    from visiontune.session.visit import create_visit, start_eye

    protocol = load_protocol("clinical-sloan")
    cases = visit_cases(7, protocol)
    with TrialStore.open(db) as store:
        vid = create_visit(store, "P-0042", simulated=False, age_years=55, clinician="Dr A. Optom")
        for eye in ("OD", "OS"):
            with start_eye(
                store,
                vid,
                eye,
                protocol=protocol,
                seed=7,
                calibration=cal.to_dict(),
                start=StartingPoint(cases[eye].start_rx, "autorefraction", 55),
            ) as session:
                assert session.run(SimulatedPresenter(cases[eye].patient(10))) is not None
    return vid


def test_a_real_patients_letter_is_sized_for_the_near_distance_from_the_screens_geometry(tmp_path):
    db = tmp_path / "real.sqlite3"
    vid = _real_visit(db)
    host, events = engine_host(db)
    host.handle(ShowVisit(vid))
    host.handle(BalanceAnswer(vid, None, None)) if last_event(events, VisitViewed).step == Step.BALANCE else None
    assert last_event(events, VisitViewed).step == Step.NEAR
    host.handle(NearBegin(vid, 40.0))
    q = last_event(events, VisitViewed).near_question
    assert q.simulated_correct is None  # a real patient: the clinician types + or -
    arcmin = math.pi / (180 * 60)
    height = 2 * 400.0 * math.tan(5 * 10**q.size_logmar * arcmin / 2)  # ISO 8596 letter at 40 cm
    assert q.height_mm == pytest.approx(height, rel=1e-12)
    assert q.height_px == pytest.approx(height / (520.0 / 1920), rel=1e-9)
    assert patient_screen_logmar(q.size_logmar, 40.0, CAL) == pytest.approx(
        math.log10(2 * math.atan(height / 8000.0) / (5 * arcmin)), abs=1e-12
    )  # as tall at 4 m as at 40 cm
    assert "calibration is for 400 cm" in q.geometry and "drawn for 40 cm" in q.geometry
    host.handle(NearAnswer(vid, q.eye, q.index, True))
    again = last_event(events, VisitViewed).near_question
    assert (again.eye, again.index) == ("OD", 1)
    with TrialStore.open(db, read_only=True) as store:
        [a] = near_store.near_answers(store, vid, "OD")
        assert (a.letter, a.correct, a.add_d, a.size_logmar) == (q.letter, True, q.add_d, q.size_logmar)
    host.handle(Close())


def _refract_eye(qtbot, window):
    view = window.session_view
    qtbot.waitUntil(lambda: window.phase == Phase.LENS and window.snapshot is not None, timeout=60_000)
    while window.phase != Phase.STOPPED:
        n = window.snapshot.n_trials
        qtbot.keyClick(view, Qt.Key.Key_Return)
        qtbot.keyClick(view, Qt.Key.Key_Return)
        qtbot.waitUntil(
            lambda n=n: window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.n_trials == n + 1,
            timeout=60_000,
        )
    qtbot.keyClick(view, Qt.Key.Key_F)
    qtbot.keyClick(view, Qt.Key.Key_F)


def _wait_step(qtbot, window, step, page):
    visits = window.visits
    qtbot.waitUntil(
        lambda: (
            window.stack.currentWidget() is page
            and visits.view is not None
            and visits.view.step == step
            and not visits.pending
        ),
        timeout=60_000,
    )
    return visits.view


def test_a_whole_simulated_visit_through_the_near_page_by_keys(qtbot, make_window, tmp_path):
    protocol = write_visit_protocol(tmp_path, max_trials=4)
    window = make_window(pace_s=0.0, protocol=protocol)
    start = window.start_view
    start.patient_id.clear()
    qtbot.keyClicks(start.patient_id, "SIM-READER")
    qtbot.keyClicks(start.age, "66")
    qtbot.keyClick(start.eye, Qt.Key.Key_End)  # a visit
    qtbot.keyClick(start.start_button, Qt.Key.Key_Space)
    _refract_eye(qtbot, window)
    step_view = window.visits.step_view
    _wait_step(qtbot, window, Step.REFRACT, step_view)
    qtbot.keyClick(step_view, Qt.Key.Key_Return)
    _refract_eye(qtbot, window)
    qtbot.waitUntil(
        lambda: (
            window.visits.view is not None
            and window.visits.view.step in (Step.BALANCE, Step.NEAR)
            and not window.visits.pending
        ),
        timeout=60_000,
    )
    if window.visits.view.step == Step.BALANCE:
        qtbot.keyClicks(step_view, "n")
    page = window.visits.near_view
    view = _wait_step(qtbot, window, Step.NEAR, page)
    assert not view.near.begun and page.skip_box.isVisibleTo(page) and "40 cm" in page.body.text()
    assert page.banner.isVisible() and "near addition" in window.windowTitle()
    qtbot.keyClicks(page, "+")  # nothing to answer before the step begins
    assert "Press Enter to begin" in window.status.currentMessage()
    qtbot.keyClick(page, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.visits.view.near_question is not None and not window.visits.pending, timeout=60_000)
    shot = None
    typed = 0
    while window.visits.view.step == Step.NEAR:
        q = window.visits.view.near_question
        assert page.letter.text() == q.letter and "logMAR at 40 cm" in page.size.text()
        assert page.lens.text() and "RIGHT EYE (OD)" in page.distance_rx.text()
        assert page.simulated_reply.text().startswith("Simulated patient")
        if shot is None and q.index == 2:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            assert window.grab().save(str(SCREENSHOTS / "visit-near-page.png"))
            shot = q
        qtbot.keyClicks(page, "+" if q.simulated_correct else "-")  # the simulated patient's answer, typed
        typed += 1
        qtbot.waitUntil(
            lambda t=typed: (
                not window.visits.pending
                and (window.visits.view.step != Step.NEAR or sum(window.visits.view.near.answers.values()) == t)
            ),
            timeout=60_000,
        )
    finish = window.visits.finish_view
    view = _wait_step(qtbot, window, Step.FINISH, finish)
    text = finish.near.text()
    for eye in ("OD", "OS"):
        add = view.near.adds[eye]
        assert f"{eye}: " in text and f"Add +{add.add_d:.2f} D" in text
    for part in ("95%", "clear from", "near acuity", "at 40 cm", "SIMULATED; true add +"):
        assert part in text, part
    assert finish.near.isVisible() and not finish.near_button.isVisibleTo(finish)
    assert window.grab().save(str(SCREENSHOTS / "visit-near-finish.png"))
    with TrialStore.open(window.options.db_path, read_only=True) as store:
        visit_id = view.visit_id
        assert sum(len(near_store.near_answers(store, visit_id, e)) for e in ("OD", "OS")) == typed
    # --- the exports carry the add, its region, the range of clear vision and the near acuity
    qtbot.mouseClick(finish.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(window.visits.view.exports) and not window.visits.pending, timeout=60_000)
    exports = window.visits.view.exports
    [doc] = [p for p in exports["json"] if "fhir" not in p]
    record = json.loads(open(doc, encoding="utf-8").read())["record"]
    assert {n["eye"]: (n["add_d"], n["near_va_logmar"]) for n in record["near"]} == {
        e: (a.add_d, a.near_va_logmar) for e, a in view.near.adds.items()
    }
    [table] = exports["csv"]
    with open(table, newline="", encoding="utf-8") as f:
        rows = {r["eye"]: r for r in csv.DictReader(f)}
    for eye, add in view.near.adds.items():
        assert float(rows[eye]["near_add_d"]) == add.add_d
        assert float(rows[eye]["near_va_logmar"]) == pytest.approx(add.near_va_logmar, abs=0.005)


def test_the_clinics_near_distance_is_a_setting_and_the_near_step_begins_there(tmp_path):
    from visiontune.app.logic.settings import AppSettings, load_settings
    from visiontune.app.logic.visit_flow_controller import VisitFlowController
    from visiontune.errors import ConfigurationError

    path = tmp_path / "app.toml"
    path.write_text("near_distance_cm = 33\n", encoding="utf-8")
    assert load_settings(path, check_protocol=False).near_distance_cm == 33.0
    assert AppSettings().near_distance_cm == 40.0
    for bad in (10, 150, float("nan")):
        with pytest.raises(ConfigurationError, match="near_distance_cm"):
            AppSettings(near_distance_cm=bad)
    sent = []

    class Commands:
        def submit(self, command):
            sent.append(command)

        def send(self, command):
            sent.append(command)

    flow = VisitFlowController(Commands(), near_distance_cm=33.0)
    flow.view = type("V", (), {"visit_id": 4})()
    flow.begin_near()
    flow.skip_near("")  # a skip without its reason is not sent
    assert sent == [NearBegin(4, 33.0)]


def test_a_real_patients_near_letter_is_drawn_on_the_patient_screen_at_its_near_height(qtbot, make_window, paths):
    vid = _real_visit(paths["db"])
    save_calibration(CAL, paths["calibration"])
    window = make_window(simulate=False)
    assert window.calibration is not None
    host, events = engine_host(paths["db"])
    host.handle(ShowVisit(vid))
    if last_event(events, VisitViewed).step == Step.BALANCE:
        host.handle(BalanceAnswer(vid, None, None))
    host.handle(NearBegin(vid, 40.0))
    view = last_event(events, VisitViewed)
    window.visits.flow.on_view(view)
    q = view.near_question
    screen = window.visits.near_window
    assert window.stack.currentWidget() is window.visits.near_view and screen is not None
    letter, height_px = screen.current
    assert letter == q.letter and height_px == pytest.approx(q.height_px, rel=1e-9)  # its near height, in pixels
    assert not window.visits.near_view.simulated_reply.isVisibleTo(window.visits.near_view)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(SCREENSHOTS / "visit-near-real.png"))
    tiny = dataclasses.replace(view, near_question=dataclasses.replace(q, size_logmar=-0.3))  # 1.1 px here
    window.visits.flow.on_view(tiny)
    assert screen.current is None  # blank, not a grey blob: the page says to show a printed letter
    host.handle(NearSkip(vid, "x"))  # refused: begun; the page stays
    assert "has begun" in _failures(events)[-1]
    host.handle(Close())
    window.visits.stop()
    assert window.visits.near_window is None


def test_an_eye_whose_last_answer_was_written_but_not_its_add_is_filed_on_the_next_command(tmp_path):
    """The engine stopped between the eye's last answer and its add (two writes): the next command
    files the add from the log before anything else is asked."""
    from visiontune.app.logic import visit_near_host

    db = tmp_path / "real.sqlite3"
    vid = _real_visit(db)
    with TrialStore.open(db) as store:
        with pytest.raises(SessionError, match="follows both eyes' refractions and the binocular balance"):
            visit_near_host.begin(store, vid, 40.0)
        store.record_balance(vid, outcome="not done", method="fogged balance", reason="not requested by the clinician")
        visit_near_host.begin(store, vid, 40.0)
        while True:
            q = visit_near_host.question(store, vid)
            assert q.eye == "OD"
            near_store.record_near_answer(
                store,
                vid,
                "OD",
                q.index,
                phase=q.phase,
                add_d=q.add_d,
                size_logmar=q.size_logmar,
                letter=q.letter,
                correct=q.index % 3 != 2,
            )
            after = visit_near_host.question(store, vid)
            if after.eye == "OS":  # OD's letters are over, its add not filed: the engine "stopped" here
                break
        assert near_store.near_add_records(store, vid) == {}
        n_od = len(near_store.near_answers(store, vid, "OD"))
    host, events = engine_host(db)
    host.handle(ShowVisit(vid))
    view = last_event(events, VisitViewed)
    assert not _failures(events) and view.step == Step.NEAR and set(view.near.adds) == {"OD"}
    assert view.near.answers["OD"] == n_od and view.near_question.eye == "OS"
    host.handle(Close())


def test_the_app_started_again_continues_a_killed_near_step_from_the_session_list(qtbot, make_window, paths, tmp_path):
    (tmp_path / "k").mkdir()
    code = _CHILD.format(tests=os.path.dirname(__file__), tmp=str(tmp_path / "k"), db=str(paths["db"]), limit=3)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    with TrialStore.open(paths["db"], read_only=True) as store:
        od_session = next(s.session_id for s in store.list_sessions() if s.eye.value == "OD")
    window = make_window()
    window.start_view.view_requested.emit(od_session)  # the visit's right eye, opened from the list
    page = window.visits.near_view
    view = _wait_step(qtbot, window, Step.NEAR, page)
    assert view.near.begun and view.near.answers == {"OD": 3, "OS": 0}
    q = view.near_question
    assert (q.eye, q.index) == ("OD", 3) and page.letter.text() == q.letter
    assert "letter 4" in page.title.text()


def test_the_flow_sends_one_near_command_a_key_and_none_while_one_is_with_the_engine(tmp_path):
    from visiontune.app.logic.visit_flow_controller import VisitFlowController

    host, events = _to_near(tmp_path, tmp_path / "log.sqlite3")
    sent, said = [], []

    class Commands:
        def submit(self, command):
            sent.append(command)

        def send(self, command):
            sent.append(command)

    flow = VisitFlowController(Commands())
    flow.connect(lambda kind, value: said.append(value) if kind == Shown.STATUS else None)
    flow.on_view(last_event(events, VisitViewed))
    flow.on_key("Plus", "+")  # not begun: refused
    flow.on_key("Return", "\r")
    assert sent == [NearBegin(1, 40.0)] and flow.pending
    flow.on_key("Return", "\r")  # the begin is with the engine
    assert len(sent) == 1
    host.handle(sent[-1])
    flow.on_view(last_event(events, VisitViewed))
    q = flow.view.near_question
    flow.on_key("Minus", "-")
    flow.on_key("Plus", "+")  # one moment: the first is with the engine
    assert sent[1:] == [NearAnswer(1, q.eye, q.index, False)]
    assert any("One moment" in text for text, *_ in said)
    host.handle(Close())


def test_a_near_letter_too_small_for_the_screens_pixels_is_sent_to_a_printed_card(tmp_path):
    coarse = Calibration(
        screen_width_mm=2000.0, screen_height_mm=1125.0, width_px=1920, height_px=1080, viewing_distance_mm=6000.0
    )  # a projection: 1.04 mm a pixel
    db = tmp_path / "real.sqlite3"
    vid = _real_visit(db, coarse)
    host, events = engine_host(db)
    host.handle(ShowVisit(vid))
    if last_event(events, VisitViewed).step == Step.BALANCE:
        host.handle(BalanceAnswer(vid, None, None))
    host.handle(NearBegin(vid, 40.0))
    q = last_event(events, VisitViewed).near_question
    assert q.height_px == pytest.approx(q.height_mm / (2000.0 / 1920), rel=1e-9) and q.height_px < 5
    assert "below the 5 px this screen draws faithfully" in q.geometry and "printed near letter" in q.geometry
    host.handle(Close())
