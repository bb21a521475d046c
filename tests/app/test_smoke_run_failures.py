"""A smoke run (``--exit-after``) has nobody to close an error dialog: a failure of the session
engine or an unexpected error ends the app with exit code 2 and the message on stderr."""

from __future__ import annotations

from visiontune.app import logs
from visiontune.errors import StoreError


def test_an_engine_failure_ends_a_smoke_run_with_exit_code_2(make_window, qtbot, capsys):
    window = make_window(exit_after=3)
    window.resume_session(999)  # the engine answers "failed": there is no session 999
    qtbot.waitUntil(lambda: window.exit_code == 2 and not window.isVisible(), timeout=20_000)
    err = capsys.readouterr().err
    assert "visiontune app: error: " in err and "999" in err


def test_an_engine_failure_without_exit_after_keeps_the_app_open(make_window, qtbot):
    window = make_window()
    window.resume_session(999)
    qtbot.waitUntil(lambda: window.reporter.dialog is not None and window.reporter.dialog.isVisible(), timeout=20_000)
    assert window.isVisible() and window.exit_code == 0


def test_an_error_escaping_a_slot_calls_the_reporters_fatal_hook(qtbot):
    reporter = logs.ErrorReporter()
    ended = []
    reporter.fatal = ended.append
    reporter.report_exception(StoreError("the trial log went away"))
    reporter.report_exception(RuntimeError("a bug"))
    assert ended[0] == "the trial log went away" and ended[1].startswith("Unexpected error: RuntimeError: a bug")
    reporter.dialog.close()
