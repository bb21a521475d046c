"""``visiontune app``: the clinician's desktop app (PySide6).

``visiontune app --simulate`` opens it with a simulated patient who answers every trial
(at ``--pace`` seconds per step; 0 = one step per key press), on the embedded SQLite trial
log. Without a screen calibration the app runs in simulated mode only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from visiontune.app.settings import AppSettings, load_settings
from visiontune.display import load_calibration
from visiontune.errors import ConfigurationError, InvalidInputError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--simulate", action="store_true",
                        help="a simulated patient answers (the default when no screen calibration exists)")  # fmt: skip
    parser.add_argument("--pace", type=float, default=None, metavar="SECONDS",
                        help="simulated auto-answer pace in seconds per step (0 = one step per key; default 0.6)")  # fmt: skip
    parser.add_argument("--db", metavar="PATH", help="SQLite trial log (default: the user data directory)")
    parser.add_argument("--protocol", metavar="NAME", help="shipped protocol name or .toml path (default: the last used)")
    parser.add_argument("--windowed", action="store_true",
                        help="patient screen as a window, not full screen on the second display")  # fmt: skip
    parser.add_argument("--exit-after", type=int, default=None, metavar="N",
                        help="start a simulated session at once and close after N answers (smoke tests)")  # fmt: skip
    parser.add_argument("--settings", metavar="PATH", help="settings file (default: <config dir>/visiontune/app.toml)")
    parser.add_argument("--calibration", metavar="PATH", help="screen calibration JSON (default: the saved one)")
    parser.add_argument("--export-dir", metavar="PATH", help="folder for the exports of finished sessions")
    parser.add_argument("--log-dir", metavar="PATH", help="folder of app.log (default: the user log directory)")


def run(args: argparse.Namespace) -> int:
    if args.pace is not None and not 0 <= args.pace <= 60:
        raise InvalidInputError(f"--pace: expected 0 to 60 seconds, got {args.pace}")
    if args.exit_after is not None and args.exit_after < 1:
        raise InvalidInputError(f"--exit-after: expected a number of answers >= 1, got {args.exit_after}")
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from visiontune.app import logs  # late: Qt, after the platform is chosen
    from visiontune.app.main_window import AppOptions, MainWindow  # late: Qt

    log_file = logs.configure_logging(args.log_dir)
    app = QApplication.instance() or QApplication(["visiontune"])
    app.setApplicationName("VisionTune")
    reporter = logs.ErrorReporter()
    previous_hook = logs.install_excepthook(reporter)
    settings_problem = None
    try:
        settings = load_settings(args.settings)
    except ConfigurationError as exc:
        settings, settings_problem = AppSettings(), f"{exc}\nThe default settings are used."
    try:
        load_calibration(args.calibration or (settings.calibration_path or None))
        calibrated = True
    except ConfigurationError:
        calibrated = False
    pace = settings.pace_s if args.pace is None else float(args.pace)
    options = AppOptions(
        db_path=None if args.db is None else Path(args.db), simulate=bool(args.simulate or not calibrated),
        pace_s=pace, protocol=args.protocol, windowed=bool(args.windowed), exit_after=args.exit_after,
        settings_path=None if args.settings is None else Path(args.settings),
        calibration_path=None if args.calibration is None else Path(args.calibration),
        export_dir=None if args.export_dir is None else Path(args.export_dir),
    )  # fmt: skip
    window = MainWindow(options, settings)
    reporter.parent = window
    window.reporter = reporter
    logs.log.info("app started (log %s, %s)", log_file, "simulated" if options.simulate else "calibrated screen")
    if settings_problem:
        reporter.report(settings_problem)
    if options.exit_after is not None:
        window.start_view.simulated.setChecked(True)
        window.start_view._start()
    if args.windowed or options.exit_after is not None:
        window.show()
    else:
        window.showMaximized()
    try:
        return int(app.exec())
    finally:
        sys.excepthook = previous_hook
