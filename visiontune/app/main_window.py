"""The clinician's main window: start screen, session view, finish view; the Qt side of a session.

The window never touches the trial log: through a :class:`~visiontune.app.worker.SessionWorker`
it drives the session engine, a child process that owns the store and the session (refit and
next query off the GUI process, so they never stall its event loop). The session itself (its
:class:`~visiontune.app.logic.keys.Phase`, what each key does, the F F confirmation, the simulated
patient's autopilot, the status line) is the Qt-free
:class:`~visiontune.app.logic.session_controller.SessionController`: the window forwards it the keys
and the worker's signals and draws the events it announces; the window keeps the widgets, the
Qt timers (autopilot, elapsed time, estimate drawing, page prewarming) and the patient screen.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent, QFont, QGuiApplication
from PySide6.QtWidgets import QLabel, QMainWindow, QStackedWidget, QStatusBar

from visiontune.app import logs
from visiontune.app.calibration_dialog import CalibrationDialog, describe
from visiontune.app.finish_view import FinishView
from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Command
from visiontune.app.logic.messages import Command as EngineCommand
from visiontune.app.logic.messages import (
    ExportSession,
    ListSessions,
    OpenStore,
    ResumeSession,
    SetDevice,
    StartSession,
    ViewSession,
)
from visiontune.app.logic.session_controller import FinishedPage, Prompt, SessionController
from visiontune.app.logic.settings import AppSettings, save_settings
from visiontune.app.session_view import SessionView
from visiontune.app.start_view import StartView
from visiontune.app.visit_controller import VisitController
from visiontune.app.worker import EstimateView, FinishedView, NewSession, SessionWorker, Snapshot
from visiontune.display import (
    Calibration,
    displayable_logmar_range,
    load_calibration,
    load_letter_set,
    save_calibration,
)
from visiontune.display.qt_renderer import PatientWindow
from visiontune.errors import CalibrationError, ConfigurationError, VisionTuneError, one_line
from visiontune.refraction.loop import PendingLine
from visiontune.refraction.protocol import list_protocols, load_protocol

log = logging.getLogger("visiontune.app")
#: Estimates are drawn at most once per this many milliseconds (the latest one): about a frame.
RENDER_INTERVAL_MS = 16
#: The hidden pages are laid out and painted at the new size this long after the window's last resize.
PREWARM_DELAY_MS = 250


@dataclass(frozen=True)
class AppOptions:
    """How the app was started. ``db_path``/``settings_path``/``calibration_path``/``export_dir``:
    None = the platformdirs defaults. ``pace_s``: simulated auto-answer pace, seconds (0 = one
    step per key). ``exit_after``: close after this many answers (smoke tests). ``device``: the
    lens device (``manual`` or ``cv5000:PORT``; None = the saved setting). ``lens_device``: the
    manual device's kind (``trial-frame`` or ``manual-phoropter``; None = the saved setting)."""

    db_path: Path | None = None
    simulate: bool = True
    pace_s: float = 0.6
    protocol: str | None = None
    windowed: bool = False
    exit_after: int | None = None
    settings_path: Path | None = None
    calibration_path: Path | None = None
    export_dir: Path | None = None
    device: str | None = None
    lens_device: str | None = None


def screen_descriptions() -> list[tuple[str, str]]:
    """``(name, "2: DP-1, 1920 × 1080 px")`` for every screen; a single screen is "this screen"."""
    screens = QGuiApplication.screens()
    out = []
    for i, s in enumerate(screens, 1):
        size = s.size() * s.devicePixelRatio()
        label = s.name() or ("this screen" if len(screens) == 1 else f"screen {i}")
        primary = " (clinician's screen)" if s == QGuiApplication.primaryScreen() and len(screens) > 1 else ""
        out.append((s.name(), f"{i}: {label}, {size.width()} \u00d7 {size.height()} px{primary}"))
    return out


def default_export_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("visiontune", appauthor=False)) / "exports"


def _controller_state(name: str, settable: bool = False) -> property:
    """The controller's ``name`` read (and written, if ``settable``) through the window."""

    def get(window):
        return getattr(window.controller, name)

    def put(window, value) -> None:
        setattr(window.controller, name, value)

    return property(get, put if settable else None)


class MainWindow(QMainWindow):
    """The widgets of the app; the open session's state is :attr:`controller`'s (read through
    ``phase``, ``snapshot``, ``sim_patient``, ``sim_reply``, ``last_estimate``, ``worker_idle``)."""

    phase = _controller_state("phase")
    snapshot = _controller_state("snapshot")
    sim_patient = _controller_state("sim_patient", settable=True)
    sim_reply = _controller_state("sim_reply")
    last_estimate = _controller_state("last_estimate")
    answers_this_run = _controller_state("answers_this_run")
    worker_idle = _controller_state("worker_idle")

    def __init__(self, options: AppOptions, settings: AppSettings) -> None:
        super().__init__()
        self.options = options
        self.settings = settings.replace(
            protocol=options.protocol or settings.protocol,
            device=options.device or settings.device,
            lens_device=options.lens_device or settings.lens_device,
        )
        #: The device setting the engine has been sent (None: none yet).
        self.engine_device: str | None = None
        #: The manual device's kind the engine has been sent (None: none yet).
        self.engine_lens_kind: str | None = None
        self.reporter = logs.ErrorReporter(self)
        self.calibration: Calibration | None = None
        self.patient_window = None
        self._closing = False
        #: The app's exit code: 2 once :meth:`abort` ended it.
        self.exit_code = 0

        self.setWindowTitle("VisionTune")
        self.start_view = StartView(list_protocols())
        self.session_view = SessionView()
        self.finish_view = FinishView()
        self.busy_page = QLabel("")
        self.busy_page.setObjectName("busyPage")
        font = QFont(self.busy_page.font())
        font.setPointSize(16)
        self.busy_page.setFont(font)
        self.busy_page.setWordWrap(True)
        self.stack = QStackedWidget()
        for w in (self.start_view, self.session_view, self.finish_view, self.busy_page):
            self.stack.addWidget(w)
        self.setCentralWidget(self.stack)
        self.status = QStatusBar()
        self.setStatusBar(self.status)
        self.resize(1280, 860)

        self.start_view.set_protocol(self.settings.protocol)
        self.start_view.set_cylinder_form(self.settings.cylinder_form)
        self.start_view.set_device(self.settings.device)
        self.start_view.set_lens_kind(self.settings.lens_device)
        self.start_view.simulated.setChecked(options.simulate)
        if options.simulate:
            self.start_view.patient_id.setText("SIM-0001")
        self.start_view.set_screens(screen_descriptions(), self.settings.patient_screen)
        self._load_calibration()
        self.start_view.start_requested.connect(self.start_session)
        self.start_view.resume_requested.connect(self.resume_session)
        self.start_view.view_requested.connect(lambda sid: self._submit(ViewSession(sid)))
        self.start_view.calibrate_requested.connect(self.open_calibration)
        self.session_view.key_pressed.connect(self.on_key)
        self.session_view.retry_requested.connect(lambda: self.controller.retry_device())
        self.session_view.device_lens_requested.connect(lambda k: self.controller.device_lens(k))
        self.session_view.manual_requested.connect(self.use_trial_frame)
        self.finish_view.back_requested.connect(self.show_start)
        self.finish_view.export_requested.connect(lambda sid: self._submit(ExportSession(sid, str(self.export_dir))))

        self.worker = SessionWorker(self)
        self.worker.sessions_listed.connect(self.start_view.set_sessions)
        self.worker.opened.connect(self.on_opened)
        self.worker.updated.connect(self.on_updated)
        self.worker.estimate_ready.connect(self.on_estimate)
        self.worker.finished.connect(self.on_finished)
        self.worker.failed.connect(self.on_failed)
        self.worker.busy.connect(self.on_busy)
        self.worker.idle.connect(self.on_idle)
        self.worker.recorded.connect(self.on_recorded)
        self.worker.device.connect(lambda view: self.controller.on_device(view))
        self.worker.presented.connect(lambda index: self.controller.on_presented(index))
        self.worker.device_fault.connect(lambda message: self.controller.on_device_fault(message))
        self.controller = SessionController(
            self.worker, pace_s=self.pace_s, exit_after=options.exit_after, export_dir=lambda: self.export_dir
        )
        self.controller.connect(self._on_controller_event)
        self.visits = VisitController(self)  # the visit's pages and flow (OD, OS, balance, finish)
        self.start_view.visit_requested.connect(self.visits.start)
        self.worker.start()
        self._send_device(self.settings.device)
        self._send(OpenStore(None if options.db_path is None else str(options.db_path)))

        self.elapsed_timer = QTimer(self)
        self.elapsed_timer.setInterval(1000)
        self.elapsed_timer.timeout.connect(self._tick_elapsed)
        self.elapsed_timer.start()
        self.auto_timer = QTimer(self)
        self.auto_timer.setSingleShot(True)
        self.auto_timer.timeout.connect(self._auto_step)
        self.render_timer = QTimer(self)
        self.render_timer.setSingleShot(True)
        self.render_timer.setInterval(RENDER_INTERVAL_MS)
        self.render_timer.timeout.connect(self._render_pending)
        self.show_start()
        # Lay out and paint the session and finish views once now, and again (debounced) at the
        # window's size whenever it changes: the first paint of the pyqtgraph plots (fonts,
        # layout, the axes' pixmaps) costs 50-100 ms, better on the start screen than when the
        # session opens; the page then shows without a resize (see _prewarm_pages).
        self.prewarm_timer = QTimer(self)
        self.prewarm_timer.setSingleShot(True)
        self.prewarm_timer.setInterval(PREWARM_DELAY_MS)
        self.prewarm_timer.timeout.connect(self._prewarm_pages)
        self._prewarm_pages(self.size())

    # ------------------------------------------------------------------ helpers
    def _prewarm_pages(self, size=None) -> None:
        """Give the hidden session and finish pages the stack's size and paint them once
        offscreen, so that switching to them costs neither a resize nor a first paint."""
        size = self.stack.size() if size is None else size
        for page in (self.session_view, self.finish_view):
            if page is not self.stack.currentWidget() and not self._closing:
                page.resize(size)
                page.grab()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.prewarm_timer.start()

    @property
    def export_dir(self) -> Path:
        if self.options.export_dir is not None:
            return Path(self.options.export_dir)
        return Path(self.settings.export_dir) if self.settings.export_dir else default_export_dir()

    @property
    def pace_s(self) -> float:
        pace = self.options.pace_s
        return max(pace, 0.001) if self.options.exit_after is not None else pace

    def _calibration_path(self) -> Path | None:
        if self.options.calibration_path is not None:
            return Path(self.options.calibration_path)
        return Path(self.settings.calibration_path) if self.settings.calibration_path else None

    def _load_calibration(self) -> None:
        try:
            self.calibration = load_calibration(self._calibration_path())
        except ConfigurationError as exc:
            self.calibration = None
            log.info("no usable calibration: %s", exc)
        self.start_view.set_calibration(describe(self.calibration), self.calibration is not None)

    def _submit(self, command: EngineCommand) -> None:
        """Send a command the session waits for (see :meth:`SessionController.submit`)."""
        self.controller.submit(command)

    def _send(self, command: EngineCommand) -> None:
        self.controller.send(command)

    def say(self, message: str, timeout_ms: int = 6000) -> None:
        self.status.showMessage(message, timeout_ms)

    def _set_title(self) -> None:
        snap = self.snapshot
        if snap is None or self.stack.currentWidget() is self.start_view:
            self.setWindowTitle("VisionTune")
            return
        sim = " \u00b7 SIMULATED" if snap.simulated else ""
        visit = f"visit {snap.visit_id} \u00b7 " if snap.visit_id is not None else ""
        self.setWindowTitle(
            f"VisionTune \u2014 {visit}session {snap.session_id} \u00b7 {snap.patient_id} {snap.eye}{sim}"
        )

    def _save_settings(self) -> None:
        try:
            save_settings(self.settings, self.options.settings_path)
        except (OSError, ConfigurationError) as exc:
            log.warning("settings not saved: %s", exc)

    # ------------------------------------------------------------------ start screen
    def show_start(self) -> None:
        self.visits.stop()
        self.controller.reset()
        self.stack.setCurrentWidget(self.start_view)
        self._set_title()
        self._send(ListSessions())

    def start_session(self, request: NewSession) -> None:
        try:
            self._start_session(request)
        except VisionTuneError as exc:
            self.reporter.report(str(exc))

    def prepare_start(self, simulated: bool, protocol: str):
        """Before a session or a visit starts: a real patient needs a calibrated screen that
        shows the protocol's letter sizes (reported, and False returned, otherwise); the
        settings are saved. Returns the calibration to store (None when simulated)."""
        calibration = None
        if not simulated:
            if self.calibration is None:
                self.reporter.report(
                    "A patient session needs a calibrated screen: use 'Calibrate the patient screen' "
                    "first (or tick 'Simulated patient')."
                )
                return False
            self._check_displayable(load_protocol(protocol).logmar_range)
            calibration = self.calibration.to_dict()
        device = self.start_view.device_spec()  # InvalidInputError naming the field: nothing saved, nothing sent
        lens_kind = self.start_view.lens_kind_name()
        self.settings = self.settings.replace(
            protocol=protocol,
            patient_screen=self.start_view.screen_name(),
            cylinder_form=self.start_view.cylinder_form_name(),
            device=device,
            lens_device=lens_kind,
        )
        self._save_settings()
        self._send_device(device)
        return calibration

    def use_trial_frame(self) -> None:
        """After a device fault: go on with the manual trial frame (this session only; the saved
        setting is kept and sent again at the next start or resume)."""
        if self.controller.device_fault is None:
            return
        log.info("lens device fault: going on with the manual trial frame")
        self._send_device("manual")
        self.controller.retry_device()

    def _send_device(self, spec: str) -> None:
        """Tell the engine the lens device (``manual`` or ``cv5000:PORT``) when it changed."""
        lens_kind = self.settings.lens_device  # the manual device's kind (trial frame or manual phoropter)
        if spec != self.engine_device or lens_kind != self.engine_lens_kind:
            log.info("lens device: %s (manual device: %s)", spec, lens_kind)
            self.engine_device, self.engine_lens_kind = spec, lens_kind
            self._send(SetDevice(spec, lens_kind))

    def _start_session(self, request: NewSession) -> None:
        calibration = self.prepare_start(request.simulated, request.protocol)
        if calibration is False:
            return
        start = "none" if request.starting_rx is None else request.starting_rx.format()
        log.info(
            "start requested: patient %s %s, protocol %s, start %s (%s), %s cylinder, %s",
            request.patient_id,
            request.eye,
            request.protocol,
            start,
            request.start_source,
            request.cylinder_form,
            "SIMULATED" if request.simulated else "real patient",
        )
        self._show_busy(f"Preparing session for {request.patient_id} ({request.eye})\u2026")
        self._submit(StartSession(dataclasses.replace(request, calibration=calibration)))

    def resume_session(self, session_id: int) -> None:
        log.info("resume requested: session %d", session_id)
        try:
            device = self.start_view.device_spec()
            lens_kind = self.start_view.lens_kind_name()
        except VisionTuneError as exc:
            self.start_view.show_error(str(exc))
            return
        if device != self.settings.device or lens_kind != self.settings.lens_device:
            self.settings = self.settings.replace(device=device, lens_device=lens_kind)
            self._save_settings()
        self._send_device(device)
        self._show_busy(f"Reopening session {session_id}\u2026")
        self._submit(ResumeSession(session_id))

    def _check_displayable(self, logmar_range) -> None:
        shown = displayable_logmar_range(self.calibration)
        lo, hi = logmar_range
        if lo < shown.min_logmar or hi > shown.max_logmar:
            raise CalibrationError(
                f"protocol letter sizes [{lo:g}, {hi:g}] logMAR do not fit this screen at this distance "
                f"(it shows [{shown.min_logmar:.2f}, {shown.max_logmar:.2f}]): change the distance or the protocol"
            )

    def _show_busy(self, text: str) -> None:
        self.busy_page.setText(text)
        self.stack.setCurrentWidget(self.busy_page)

    def open_calibration(self) -> None:
        screen = self._patient_screen() or QGuiApplication.primaryScreen()
        size = screen.size() * screen.devicePixelRatio()
        dialog = CalibrationDialog(width_px=size.width(), height_px=size.height(), parent=self)
        dialog.accepted.connect(lambda: self._calibration_saved(dialog.calibration))
        dialog.open()
        self.calibration_dialog = dialog

    def _calibration_saved(self, calibration: Calibration) -> None:
        path = save_calibration(calibration, self._calibration_path())
        log.info("calibration saved to %s: %s", path, describe(calibration))
        self.settings = self.settings.replace(calibration_path=str(path))
        self._save_settings()
        self._load_calibration()

    def _patient_screen(self):
        name = self.start_view.screen_name()
        return next((s for s in QGuiApplication.screens() if s.name() == name), None)

    # ------------------------------------------------------------------ worker results
    def on_busy(self, message: str) -> None:
        self.say(message, 0)
        if self.stack.currentWidget() is self.busy_page:
            self.busy_page.setText(message + "\u2026")

    def on_opened(self, snap: Snapshot) -> None:
        self.controller.on_opened(snap)

    def on_updated(self, snap: Snapshot) -> None:
        self.controller.on_updated(snap)

    def on_idle(self) -> None:
        self.controller.on_idle()

    def on_recorded(self, trial) -> None:
        self.controller.on_recorded(trial)

    def on_estimate(self, view: EstimateView) -> None:
        """Keep the latest estimate; draw it on the next render tick. Estimates that arrive
        faster than :data:`RENDER_INTERVAL_MS` are coalesced, latest wins, and the drawing runs
        in its own event-loop pass, not in the one that handled the event."""
        self.controller.on_estimate(view)
        if not self.render_timer.isActive():
            self.render_timer.start()

    def _render_pending(self) -> None:
        view = self.controller.take_pending_estimate()
        if view is not None and not self._closing:
            self._show_estimate(view)

    def _show_estimate(self, view: EstimateView) -> None:
        self.controller.last_estimate = view
        self.session_view.show_estimate(view)

    def on_finished(self, view: FinishedView) -> None:
        self._close_patient_window()
        self.controller.on_finished(view)

    def on_failed(self, message: str) -> None:
        self.reporter.report(message)
        self.controller.on_failed(message)
        if self.options.exit_after is not None:  # a smoke run: nobody is there to read the dialog
            self.abort(message)
        elif self.stack.currentWidget() is self.busy_page:
            self.show_start()

    def abort(self, message: str) -> None:
        """End the app with exit code 2, ``message`` on stderr and in the log (a smoke run's failure)."""
        if self.exit_code:
            return
        self.exit_code = 2
        log.error("ending the app (exit code 2): %s", message)
        print(f"visiontune app: error: {one_line(message)}", file=sys.stderr)
        QTimer.singleShot(0, self.close)

    # ------------------------------------------------------------------ keys
    def on_key(self, name: str, text: str, ctrl: bool) -> None:
        self.controller.on_key(name, text, ctrl)

    def perform(self, command: Command, source: str) -> None:
        """Carry out one command (from a key or the simulated-patient timer); logged."""
        self.controller.perform(command, source)

    def _auto_step(self) -> None:
        if not self._closing:
            self.controller.auto_step()

    # ------------------------------------------------------------------ what the controller says
    def _on_controller_event(self, kind: Shown, value) -> None:
        """Show what the session's controller says (dispatched on the event's kind)."""
        handler = self._controller_handlers.get(kind)
        if handler is None:  # refused in the log; nothing shown, nothing recorded is touched
            log.error("session controller event: no handler for %s %r", type(kind).__name__, kind)
            return
        handler(value)

    @functools.cached_property
    def _controller_handlers(self) -> dict[Shown, Callable[[object], None]]:
        """What the window does with each kind of the session controller's events (each looked
        up when the event comes, as the window stands then)."""
        return {
            Shown.STATUS: lambda value: self.say(*value),
            Shown.PROMPT: lambda value: self._show_prompt(value),
            Shown.AUTOPILOT: lambda value: (
                self.auto_timer.stop() if value is None else self.auto_timer.start(round(1000 * value))
            ),
            Shown.ANSWERS: lambda value: self.session_view.show_answers(*value),
            Shown.SNAPSHOT: lambda value: self._show_snapshot(value),
            Shown.PRESENT: lambda value: self._present(value),
            Shown.BLANK: lambda _value: self._blank_patient(),
            Shown.SIMULATED_REPLY: lambda value: self.session_view.simulated_reply.setText(value),
            Shown.SLIDER: lambda value: self.session_view.show_slider(value),
            Shown.LINE: lambda value: self.session_view.show_line(value),
            Shown.OPENED: lambda value: self._show_opened(value),
            Shown.BUSY_PAGE: lambda value: self._show_busy(value),
            Shown.FINISHED: lambda value: self._show_finished(value),
            Shown.VISIT_EYE_FINISHED: lambda value: self.visits.eye_finished(value),
            Shown.EXIT: lambda _value: QTimer.singleShot(0, self.close),
            Shown.DEVICE: lambda value: self.session_view.show_device(value),
            Shown.DEVICE_FAULT: lambda value: self.session_view.show_device_fault(value),
            Shown.DEVICE_LENSES: lambda value: self.session_view.show_lens_buttons(value),
        }

    def _present(self, query) -> None:
        """The question on the patient screen: its letter, or a chart line's letters at chart
        spacing. A line wider than the screen at its size leaves the screen blank and the page says
        to show it on a printed chart (the answers are keyed as usual)."""
        if self.patient_window is None:
            return
        if not isinstance(query, PendingLine):
            self.patient_window.show(query.letter, query.s_logmar)
            return
        try:
            self.patient_window.show_line(query.letters, query.s_logmar)
        except CalibrationError as exc:
            self.patient_window.blank()
            message = f"The patient screen cannot show this line ({exc}): show it on a printed chart."
            log.warning("%s", message)
            self.session_view.instruction.setText(
                "The patient screen cannot show this line at this size: show it on a printed chart, then key "
                "each letter as it is read (the status line says why)."
            )
            self.say(message, 0)

    def _show_opened(self, snap: Snapshot) -> None:
        self.status.clearMessage()  # the "preparing" message of the start is over
        if not self.controller.simulated:
            self._open_patient_window(snap)
        self.stack.setCurrentWidget(self.session_view)
        self.session_view.setFocus()

    def _open_patient_window(self, snap: Snapshot) -> None:
        if self.patient_window is not None:
            self.patient_window.close()
        screens = QGuiApplication.screens()
        screen = self._patient_screen()
        fullscreen = not self.options.windowed and len(screens) > 1 and screen is not None
        self.patient_window = PatientWindow(
            self.calibration, load_letter_set(snap.letter_set), screen=screen, fullscreen=fullscreen
        )
        self.patient_window.show()
        self.patient_window.blank()
        self.activateWindow()

    def _show_snapshot(self, snap: Snapshot) -> None:
        self.session_view.show_snapshot(snap)
        self._set_title()
        self._blank_patient()
        self.session_view.simulated_reply.setText("")
        self.session_view.letter.setText("")
        self.session_view.show_device_fault(self.controller.device_fault)

    def _show_prompt(self, prompt: Prompt) -> None:
        v = self.session_view
        if prompt.caption is not None:
            v.lens_caption.setText(prompt.caption)
        if prompt.letter is not None:
            v.letter.setText(prompt.letter)
        v.instruction.setText(prompt.instruction)

    def _show_finished(self, page: FinishedPage) -> None:
        view = page.view
        self.finish_view.show_result(view, page.truth)
        self.stack.setCurrentWidget(self.finish_view)
        sim = " \u00b7 SIMULATED" if view.simulated else ""
        self.setWindowTitle(
            f"VisionTune \u2014 session {view.session_id} finished \u00b7 {view.patient_id} {view.eye}{sim}"
        )

    def _blank_patient(self) -> None:
        if self.patient_window is not None:
            self.patient_window.blank()

    def _close_patient_window(self) -> None:
        if self.patient_window is not None:
            self.patient_window.close()
            self.patient_window = None

    def _tick_elapsed(self) -> None:
        elapsed = self.controller.elapsed_s()
        if elapsed is not None and self.stack.currentWidget() is self.session_view:
            self.session_view.set_elapsed(elapsed)

    # ------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._closing:
            self._closing = True
            self.auto_timer.stop()
            self.visits.stop()
            self.elapsed_timer.stop()
            self.render_timer.stop()
            self.prewarm_timer.stop()
            log.info("closing: every answer is already in the trial log")
            self._close_patient_window()  # settings are saved when changed, never on closing
            if not self.worker.shutdown(60_000):
                log.error("the session engine did not stop cleanly within 60 s")
            logs.flush_log()
        super().closeEvent(event)
