"""``visiontune app``: the clinician's desktop app (PySide6).

``visiontune app --simulate`` opens it with a simulated patient who answers every trial
(at ``--pace`` seconds per step; 0 = one step per key press), on the embedded SQLite trial
log. Without a screen calibration the app runs in simulated mode only.

Before any window opens, what the command line names is checked, so that a mistake is one
clear message and exit code 2, never a window that waits: a display (on Linux without
``DISPLAY``/``WAYLAND_DISPLAY`` and without an explicit ``QT_QPA_PLATFORM`` the app says it
needs one and points to ``visiontune session run --simulate``; ``QT_QPA_PLATFORM=offscreen``
runs it off screen, for tests and screenshots), ``--protocol``, ``--device`` (``manual`` or
``cv5000:PORT``: :mod:`visiontune.devices.choice`), ``--lens-device`` (the manual device's kind,
``trial-frame`` or ``manual-phoropter``: :mod:`visiontune.refraction.lens_devices`), ``--db`` (opened and checked as
a trial log), and the trial log's app lock (:mod:`visiontune.session.instance_lock`: a second
app on the same log is refused, naming the host, pid and start time of the one that holds it;
the lock of a killed app is taken over, and said). With ``--exit-after`` a failure of the
session engine or an unexpected error ends the app with exit code 2 and the message on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from visiontune.app.logic.settings import load_settings_for_app
from visiontune.display import load_calibration
from visiontune.errors import ConfigurationError, InvalidInputError, StoreError, VisionTuneError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="a simulated patient answers (the default when no screen calibration exists)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="simulated auto-answer pace in seconds per step (0 = one step per key; default 0.6)",
    )
    parser.add_argument("--db", metavar="PATH", help="SQLite trial log (default: the user data directory)")
    parser.add_argument(
        "--protocol", metavar="NAME", help="shipped protocol name or .toml path (default: the last used)"
    )
    parser.add_argument(
        "--windowed", action="store_true", help="patient screen as a window, not full screen on the second display"
    )
    parser.add_argument(
        "--exit-after",
        type=int,
        default=None,
        metavar="N",
        help="start a simulated session at once and close after N answers (smoke tests)",
    )
    parser.add_argument("--settings", metavar="PATH", help="settings file (default: <config dir>/visiontune/app.toml)")
    parser.add_argument("--calibration", metavar="PATH", help="screen calibration JSON (default: the saved one)")
    parser.add_argument("--export-dir", metavar="PATH", help="folder for the exports of finished sessions")
    parser.add_argument("--log-dir", metavar="PATH", help="folder of app.log (default: the user log directory)")
    parser.add_argument(
        "--device",
        metavar="manual|cv5000:PORT",
        default=None,
        help="the lens device: 'manual' (trial frame or phoropter, the clinician confirms each lens) "
        "or 'cv5000:PORT' (a Topcon CV-5000 sets and confirms each lens before the letter is "
        "shown; the port `python -m visiontune.devices.emulator` prints runs a SIMULATED one); "
        "default: the saved setting",
    )
    parser.add_argument(
        "--lens-device",
        metavar="KIND",
        default=None,
        help="the manual device's kind, as `session run --lens-device`: 'trial-frame' (4 s a change "
        "of lens) or 'manual-phoropter' (1 s); each session and visit eye is priced at its "
        "seconds (visiontune.refraction.lens_devices) and the device is the manual one; "
        "'motorized-phoropter' is the CV-5000 (--device cv5000:PORT); default: the saved setting",
    )


#: What the app says when it has no display to open on.
NO_DISPLAY_MESSAGE = (
    "the app needs a display, and none is set (no DISPLAY or WAYLAND_DISPLAY): run a simulated session "
    "without a screen with `visiontune session run --simulate` (what `bash run` does without a display), "
    "or set QT_QPA_PLATFORM=offscreen to run the app off screen (tests, screenshots)"
)


#: Qt platforms that show nothing on a screen: no dialog is shown there (nobody could close it).
HEADLESS_PLATFORMS = ("offscreen", "minimal")


def check_display(environ=os.environ, platform: str = sys.platform) -> None:
    """ConfigurationError (:data:`NO_DISPLAY_MESSAGE`) on Linux without a display and without an
    explicit ``QT_QPA_PLATFORM`` (Qt would fall back to its offscreen platform: a window nobody sees)."""
    if not platform.startswith("linux") or environ.get("QT_QPA_PLATFORM"):
        return
    if not environ.get("DISPLAY") and not environ.get("WAYLAND_DISPLAY"):
        raise ConfigurationError(NO_DISPLAY_MESSAGE)


def open_trial_log(db: str | None):
    """Check the trial log the app will use (``--db`` or the default) and lock it for this app:
    its path and the :class:`~visiontune.session.instance_lock.InstanceLock` (StoreError naming what is wrong,
    :class:`~visiontune.session.instance_lock.InstanceLockedError` naming who holds it)."""
    from visiontune.session.instance_lock import InstanceLock
    from visiontune.session.store import TrialStore

    try:
        with TrialStore.open(db) as store:
            path = store.path
    except StoreError as exc:
        raise StoreError(f"--db: {exc}") from None
    return path, InstanceLock.acquire(path)


def check_protocol(name: str | None) -> None:
    """ProtocolError for a ``--protocol`` the engine would refuse at Start."""
    if name is None:
        return
    from visiontune.refraction.protocol import load_protocol

    try:
        load_protocol(name)
    except ConfigurationError as exc:
        raise type(exc)(f"--protocol: {exc}") from None


def check_device(spec: str | None) -> str | None:
    """The ``--device`` setting, normalised (InvalidInputError naming ``--device`` otherwise).
    Nothing is opened here: a port that does not open is the device panel's fault to show."""
    if spec is None:
        return None
    from visiontune.devices.choice import parse_device_spec

    try:
        kind, port = parse_device_spec(spec)
    except InvalidInputError as exc:
        raise InvalidInputError(f"--device: {exc}") from None
    if not str(spec).isprintable():
        raise InvalidInputError(f"--device: a serial port name has no control characters, got {spec!r}")
    return "manual" if kind == "manual" else f"cv5000:{port}"


def check_lens_device(kind: str | None, device: str | None) -> str | None:
    """The ``--lens-device`` kind for the app's manual device (InvalidInputError naming
    ``--lens-device`` otherwise): ``trial-frame`` or ``manual-phoropter``, not with ``--device
    cv5000:PORT`` (whose change time is the motorized phoropter's); ``motorized-phoropter`` is
    the CV-5000 driver, set by ``--device``."""
    if kind is None:
        return None
    from visiontune.refraction.lens_devices import DEVICE_KINDS

    if kind not in DEVICE_KINDS:
        raise InvalidInputError(f"--lens-device: expected one of {', '.join(DEVICE_KINDS)}, got {kind!r}")
    if kind == "motorized-phoropter":
        if device is not None and device.startswith("cv5000:"):
            return None  # the CV-5000 is the motorized phoropter: the manual kind keeps its saved setting
        raise InvalidInputError(
            "--lens-device motorized-phoropter: the app's motorized phoropter is the Topcon "
            "CV-5000 driver; set it with --device cv5000:PORT"
        )
    if device is not None and device != "manual":
        raise InvalidInputError(
            f"--lens-device {kind}: --device {device} is the motorized phoropter (its own change "
            "time); the kind is the manual device's"
        )
    return kind


def run(args: argparse.Namespace) -> int:
    args.device = check_device(getattr(args, "device", None))
    args.lens_device = check_lens_device(getattr(args, "lens_device", None), args.device)
    if args.lens_device is not None:  # a manual kind asked for: the manual device
        args.device = "manual"
    if args.pace is not None and not 0 <= args.pace <= 60:
        raise InvalidInputError(f"--pace: expected 0 to 60 seconds, got {args.pace}")
    if args.exit_after is not None and args.exit_after < 1:
        raise InvalidInputError(f"--exit-after: expected a number of answers >= 1, got {args.exit_after}")
    check_display()
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
    platform = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0]
    interactive = args.exit_after is None and platform not in HEADLESS_PLATFORMS
    try:
        check_protocol(args.protocol)
        db_path, lock = open_trial_log(args.db)
    except VisionTuneError as exc:
        if interactive:
            _show_refusal(str(exc))
        raise
    try:
        return _run_window(args, db_path, lock)
    finally:
        lock.release()


def _show_refusal(message: str) -> None:
    """The message of a refused start in a dialog too (an app started from a desktop icon has no terminal)."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    app = QApplication.instance() or QApplication(["visiontune"])
    QMessageBox.critical(None, "VisionTune", f"VisionTune cannot start: {message}")
    del app


def _run_window(args: argparse.Namespace, db_path: Path, lock) -> int:
    from PySide6.QtWidgets import QApplication

    from visiontune.app import logs  # late: Qt, after the platform is chosen
    from visiontune.app.main_window import AppOptions, MainWindow  # late: Qt

    log_file = logs.configure_logging(args.log_dir)
    app = QApplication.instance() or QApplication(["visiontune"])
    app.setApplicationName("VisionTune")
    reporter = logs.ErrorReporter()
    previous_hook = logs.install_excepthook(reporter)
    settings, settings_problem = load_settings_for_app(args.settings)  # never a start-up failure, nothing written
    try:
        load_calibration(args.calibration or (settings.calibration_path or None))
        calibrated = True
    except ConfigurationError:
        calibrated = False
    pace = settings.pace_s if args.pace is None else float(args.pace)
    options = AppOptions(
        db_path=db_path,
        simulate=bool(args.simulate or not calibrated),
        pace_s=pace,
        protocol=args.protocol,
        windowed=bool(args.windowed),
        exit_after=args.exit_after,
        settings_path=None if args.settings is None else Path(args.settings),
        calibration_path=None if args.calibration is None else Path(args.calibration),
        export_dir=None if args.export_dir is None else Path(args.export_dir),
        device=args.device,
        lens_device=args.lens_device,
    )
    window = MainWindow(options, settings)
    reporter.parent = window
    window.reporter = reporter
    if options.exit_after is not None:  # a smoke run: a failure ends it, never a dialog nobody closes
        reporter.fatal = window.abort
    logs.log.info(
        "app started (log %s, %s, trial log locked: %s)",
        log_file,
        "simulated" if options.simulate else "calibrated screen",
        lock.holder.describe(),
    )
    if lock.taken_over is not None:
        taken = (
            f"The trial log's lock was left by a VisionTune app that is no longer running "
            f"({lock.taken_over.describe()}); this app has taken it over."
        )
        print(f"visiontune app: {taken}", file=sys.stderr)
        reporter.report(taken)
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
        code = int(app.exec())
        return window.exit_code or code
    finally:
        sys.excepthook = previous_hook
