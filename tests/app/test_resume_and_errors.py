"""Closing mid-session loses nothing and the next start offers to resume; errors reach the
user as one dialog and the log, and the app keeps running."""

import logging
import sys

from PySide6.QtCore import Qt

from visiontune.app import logs
from visiontune.app.logic.keys import Phase
from visiontune.errors import SessionError
from visiontune.session.engine import RefractionSession
from visiontune.session.store import TrialStore


def answer_n(qtbot, window, n):
    for _ in range(n):
        qtbot.keyClick(window.session_view, Qt.Key.Key_Return)
        qtbot.keyClick(window.session_view, Qt.Key.Key_Plus)
        qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=30_000)


def test_closing_mid_session_loses_nothing_and_the_next_start_offers_resume(qtbot, make_window, paths):
    first = make_window()
    first.start_view.patient_id.setText("SIM-RESUME")
    qtbot.mouseClick(first.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: first.phase == Phase.LENS, timeout=30_000)
    answer_n(qtbot, first, 4)
    sid = first.snapshot.session_id
    first.close()  # mid-session
    with TrialStore.open(paths["db"]) as store, RefractionSession.resume(store, sid) as engine:
        assert len(engine.trials()) == 4
        expected = engine.next_query()  # what an uninterrupted session proposes next

    second = make_window()
    start = second.start_view
    qtbot.waitUntil(lambda: start.resume_last.isVisible(), timeout=20_000)
    assert f"Session {sid}" in start.resume_banner.text() and "4 answers" in start.resume_banner.text()
    qtbot.mouseClick(start.resume_last, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: second.phase == Phase.LENS, timeout=30_000)
    assert second.snapshot.n_trials == 4 and second.snapshot.query == expected
    answer_n(qtbot, second, 1)
    assert second.snapshot.n_trials == 5


def test_a_worker_error_is_one_dialog_and_a_log_line_and_the_app_goes_on(qtbot, make_window, paths):
    window = make_window()
    window.resume_session(999)  # no such session
    qtbot.waitUntil(lambda: window.reporter.dialog is not None and window.reporter.dialog.isVisible(), timeout=20_000)
    assert "no session 999" in window.reporter.dialog.text()
    assert window.stack.currentWidget() is window.start_view
    window.resume_session(998)
    qtbot.waitUntil(lambda: "998" in window.reporter.dialog.text(), timeout=20_000)
    dialogs = [w for w in window.findChildren(type(window.reporter.dialog)) if w.isVisible()]
    assert len(dialogs) == 1 and "999" in dialogs[0].text()  # appended to the open dialog, not a second one
    logs.flush_log()
    assert "no session 999" in paths["log_file"].read_text(encoding="utf-8")
    # still usable: a session starts
    window.start_view.patient_id.setText("SIM-AFTER")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=30_000)


def test_excepthook_logs_the_traceback_and_reports(qtbot, paths):
    reporter = logs.ErrorReporter()
    previous = logs.install_excepthook(reporter)
    try:
        try:
            raise ZeroDivisionError("boom in a slot")
        except ZeroDivisionError:
            sys.excepthook(*sys.exc_info())
        try:
            raise SessionError("session 3 is finished")
        except SessionError:
            sys.excepthook(*sys.exc_info())
    finally:
        sys.excepthook = previous
    text = reporter.dialog.text()
    assert "Unexpected error: ZeroDivisionError: boom in a slot" in text and "session 3 is finished" in text
    assert str(paths["log_file"]) in text
    logs.flush_log()
    log_text = paths["log_file"].read_text(encoding="utf-8")
    assert "Traceback" in log_text and "ZeroDivisionError" in log_text
    reporter.dialog.close()
    logging.getLogger("visiontune").info("after")  # logging still works
