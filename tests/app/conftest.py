"""Fixtures of the app tests: a small fixed-hyperparameter protocol, every file in tmp_path,
and a main window driven by qtbot (closed, with its worker thread, at teardown)."""

from __future__ import annotations

import logging

import pytest
from app_helpers import write_protocol


@pytest.fixture(autouse=True, scope="session")
def _widget_application(qapp):
    """A QApplication before any app test: a test that exports a PDF without widgets would
    otherwise leave a QGuiApplication behind (report.pdf creates one when none runs), and a
    later test's window could not be built on it (Qt aborts)."""
    return qapp


@pytest.fixture
def paths(tmp_path):
    """Every file the app touches, in tmp_path; the app log configured there."""
    from visiontune.app import logs

    p = {
        "db": tmp_path / "log.sqlite3",
        "settings": tmp_path / "config" / "app.toml",
        "calibration": tmp_path / "config" / "calibration.json",
        "exports": tmp_path / "exports",
        "logs": tmp_path / "logs",
        "protocol": write_protocol(tmp_path),
    }
    p["log_file"] = logs.configure_logging(p["logs"])
    yield p
    root = logging.getLogger(logs.LOGGER_NAME)
    for h in list(root.handlers):
        if getattr(h, "_visiontune_app", False):
            root.removeHandler(h)
            h.close()


@pytest.fixture
def make_window(qtbot, paths):
    """``make_window(pace_s=0.0, simulate=True, protocol=None, exit_after=None) -> MainWindow``
    shown, with the trial log open (its session list received)."""
    from visiontune.app.logic.settings import load_settings
    from visiontune.app.main_window import AppOptions, MainWindow

    windows = []

    def make(pace_s=0.0, simulate=True, protocol=None, exit_after=None, windowed=True):
        options = AppOptions(
            db_path=paths["db"],
            simulate=simulate,
            pace_s=pace_s,
            protocol=str(protocol or paths["protocol"]),
            windowed=windowed,
            exit_after=exit_after,
            settings_path=paths["settings"],
            calibration_path=paths["calibration"],
            export_dir=paths["exports"],
        )
        window = MainWindow(options, load_settings(paths["settings"]))
        qtbot.addWidget(window)
        window.resize(1280, 860)
        window.show()
        qtbot.waitUntil(lambda: window.worker.store is not None, timeout=20_000)
        windows.append(window)
        return window

    yield make
    for w in windows:
        w.close()
