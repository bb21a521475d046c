"""The clinician's main window: start screen, session view, finish view; keys; session engine.

The window never touches the trial log: through a :class:`~visiontune.app.worker.SessionWorker`
it drives the session engine, a child process that owns the store and the session (refit and
next query off the GUI process, so they never stall its event loop). The view
keeps a :class:`~visiontune.app.keys.Phase`; each key goes through
:func:`~visiontune.app.keys.interpret_key` and is logged with what it did.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent, QFont, QGuiApplication
from PySide6.QtWidgets import QLabel, QMainWindow, QStackedWidget, QStatusBar

from visiontune.app import logs
from visiontune.app.calibration_dialog import CalibrationDialog, describe
from visiontune.app.finish_view import FinishView
from visiontune.app.keys import Action, Command, Phase, Rejected, interpret_key
from visiontune.app.session_view import SessionView, acuity_text, lens_text
from visiontune.app.settings import AppSettings, save_settings
from visiontune.app.simulation import SimulatedReply, case_patient, simulated_reply
from visiontune.app.start_view import StartView
from visiontune.app.visit_controller import VisitController
from visiontune.app.worker import EstimateView, FinishedView, NewSession, SessionWorker, Snapshot
from visiontune.display import Calibration, load_calibration, load_letter_set
from visiontune.errors import CalibrationError, ConfigurationError, VisionTuneError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import in_form
from visiontune.refraction.protocol import list_protocols, load_protocol
from visiontune.session.engine import Answer
from visiontune.session.records import SessionState

log = logging.getLogger("visiontune.app")
FINISH_CONFIRM_S = 3.0
#: Estimates are drawn at most once per this many milliseconds (the latest one): about a frame.
RENDER_INTERVAL_MS = 16
#: The hidden pages are laid out and painted at the new size this long after the window's last resize.
PREWARM_DELAY_MS = 250


@dataclass(frozen=True)
class AppOptions:
    """How the app was started. ``db_path``/``settings_path``/``calibration_path``/``export_dir``:
    None = the platformdirs defaults. ``pace_s``: simulated auto-answer pace, seconds (0 = one
    step per key). ``exit_after``: close after this many answers (smoke tests)."""

    db_path: Path | None = None
    simulate: bool = True
    pace_s: float = 0.6
    protocol: str | None = None
    windowed: bool = False
    exit_after: int | None = None
    settings_path: Path | None = None
    calibration_path: Path | None = None
    export_dir: Path | None = None


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


class MainWindow(QMainWindow):
    def __init__(self, options: AppOptions, settings: AppSettings) -> None:
        super().__init__()
        self.options = options
        self.settings = settings.replace(protocol=options.protocol or settings.protocol)
        self.reporter = logs.ErrorReporter(self)
        self.phase = Phase.FINISHED
        self.snapshot: Snapshot | None = None
        self.calibration: Calibration | None = None
        self.patient_window = None
        self.sim_patient = None
        self.sim_reply: SimulatedReply | None = None
        self.answers_this_run = 0
        self._phase_before_busy = Phase.FINISHED
        self._last_command = ""
        self._finish_armed_until = 0.0
        self._opened_at = time.monotonic()
        self._closing = False
        self.last_estimate: EstimateView | None = None
        self._pending_estimate: EstimateView | None = None
        self._commands_in_flight = 0
        self._sim_session_id: int | None = None
        self._cylinder_form = "minus"

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
        self.start_view.simulated.setChecked(options.simulate)
        if options.simulate:
            self.start_view.patient_id.setText("SIM-0001")
        self.start_view.set_screens(screen_descriptions(), self.settings.patient_screen)
        self._load_calibration()
        self.start_view.start_requested.connect(self.start_session)
        self.start_view.resume_requested.connect(self.resume_session)
        self.start_view.view_requested.connect(lambda sid: self._submit("view", sid))
        self.start_view.calibrate_requested.connect(self.open_calibration)
        self.session_view.key_pressed.connect(self.on_key)
        self.finish_view.back_requested.connect(self.show_start)
        self.finish_view.export_requested.connect(lambda sid: self._submit("export", (sid, str(self.export_dir))))

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
        self._recording = ""
        self.visits = VisitController(self)  # the visit's pages and flow (OD, OS, balance, finish)
        self.start_view.visit_requested.connect(self.visits.start)
        self.worker.start()
        self._send("open_store", None if options.db_path is None else str(options.db_path))

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

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
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

    def _submit(self, name: str, payload=None) -> None:
        self._last_command = name
        if self.phase != Phase.BUSY:
            self._phase_before_busy = self.phase
        self.phase = Phase.BUSY
        self._send(name, payload)

    def _send(self, name: str, payload=None) -> None:
        self._commands_in_flight += 1
        self.worker.submit(name, payload)

    def say(self, message: str, timeout_ms: int = 6000) -> None:
        self.status.showMessage(message, timeout_ms)

    def _set_title(self) -> None:
        snap = self.snapshot
        if snap is None or self.stack.currentWidget() is self.start_view:
            self.setWindowTitle("VisionTune")
            return
        sim = " \u00b7 SIMULATED" if snap.simulated else ""
        visit = f"visit {snap.visit_id} \u00b7 " if snap.visit_id is not None else ""
        self.setWindowTitle(f"VisionTune \u2014 {visit}session {snap.session_id} \u00b7 {snap.patient_id} {snap.eye}{sim}")

    def _save_settings(self) -> None:
        try:
            save_settings(self.settings, self.options.settings_path)
        except (OSError, ConfigurationError) as exc:
            log.warning("settings not saved: %s", exc)

    # ------------------------------------------------------------------ start screen
    def show_start(self) -> None:
        self.visits.stop()
        self.snapshot = None
        self.phase = Phase.FINISHED
        self.stack.setCurrentWidget(self.start_view)
        self._set_title()
        self._send("list")

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
                self.reporter.report("A patient session needs a calibrated screen: use 'Calibrate the patient screen' "
                                     "first (or tick 'Simulated patient').")  # fmt: skip
                return False
            self._check_displayable(load_protocol(protocol).logmar_range)
            calibration = self.calibration.to_dict()
        self.settings = self.settings.replace(protocol=protocol, patient_screen=self.start_view.screen_name(),
                                              cylinder_form=self.start_view.cylinder_form_name())  # fmt: skip
        self._save_settings()
        return calibration

    def _start_session(self, request: NewSession) -> None:
        calibration = self.prepare_start(request.simulated, request.protocol)
        if calibration is False:
            return
        start = "none" if request.starting_rx is None else request.starting_rx.format()
        log.info("start requested: patient %s %s, protocol %s, start %s (%s), %s cylinder, %s", request.patient_id,
                 request.eye, request.protocol, start, request.start_source, request.cylinder_form,
                 "SIMULATED" if request.simulated else "real patient")  # fmt: skip
        self._show_busy(f"Preparing session for {request.patient_id} ({request.eye})\u2026")
        self._submit("start", dataclasses.replace(request, calibration=calibration))

    def resume_session(self, session_id: int) -> None:
        log.info("resume requested: session %d", session_id)
        self._show_busy(f"Reopening session {session_id}\u2026")
        self._submit("resume", session_id)

    def _check_displayable(self, logmar_range) -> None:
        from visiontune.display import displayable_logmar_range

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
        from visiontune.display import save_calibration

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
        self._opened_at = time.monotonic()
        self.status.clearMessage()  # the "preparing" message of the start is over
        self.sim_patient = None
        self._sim_session_id = snap.session_id
        self._cylinder_form = snap.cylinder_form
        if snap.simulated and snap.simulated_case is not None:  # the patient recorded with the session
            self.sim_patient = case_patient(snap.simulated_case, snap.n_alternatives)
            log.info("SIMULATED patient for session %d: true correction %s", snap.session_id,
                     in_form(self.sim_patient.true_rx, snap.cylinder_form).format())  # fmt: skip
        else:
            self._open_patient_window(snap)
        self.last_estimate = self._pending_estimate = None
        self.stack.setCurrentWidget(self.session_view)
        self.session_view.setFocus()
        self.on_updated(snap)

    def _open_patient_window(self, snap: Snapshot) -> None:
        from visiontune.display.qt_renderer import PatientWindow

        if self.patient_window is not None:
            self.patient_window.close()
        screens = QGuiApplication.screens()
        screen = self._patient_screen()
        fullscreen = not self.options.windowed and len(screens) > 1 and screen is not None
        self.patient_window = PatientWindow(self.calibration, load_letter_set(snap.letter_set), screen=screen,
                                            fullscreen=fullscreen)  # fmt: skip
        self.patient_window.show()
        self.patient_window.blank()
        self.activateWindow()

    def on_updated(self, snap: Snapshot) -> None:
        self.snapshot = snap
        if self._last_command == "record":
            self.answers_this_run += 1
        self.session_view.show_snapshot(snap)
        self._set_title()
        self._blank_patient()
        self.sim_reply = None
        self.session_view.simulated_reply.setText("")
        self.session_view.letter.setText("")
        if snap.state == SessionState.PAUSED:
            self._enter(Phase.PAUSED)
        elif snap.stop_reason is not None:
            self._enter(Phase.STOPPED)
        elif snap.query is not None:
            self._enter(Phase.LENS)
        if self.options.exit_after is not None and self.answers_this_run >= self.options.exit_after:
            log.info("exit after %d answers", self.answers_this_run)
            QTimer.singleShot(0, self.close)

    @property
    def worker_idle(self) -> bool:
        return self._commands_in_flight == 0

    def on_idle(self) -> None:
        self._commands_in_flight = max(0, self._commands_in_flight - 1)

    def on_estimate(self, view: EstimateView) -> None:
        """Keep the latest estimate; draw it on the next render tick (issue 10). Estimates that
        arrive faster than :data:`RENDER_INTERVAL_MS` are coalesced, latest wins, and the
        drawing runs in its own event-loop pass, not in the one that handled the event."""
        self._pending_estimate = view
        if not self.render_timer.isActive():
            self.render_timer.start()

    def _render_pending(self) -> None:
        view, self._pending_estimate = self._pending_estimate, None
        if view is not None and not self._closing:
            self._show_estimate(view)

    def _show_estimate(self, view: EstimateView) -> None:
        self.last_estimate = view
        self.session_view.show_estimate(view)

    def on_finished(self, view: FinishedView) -> None:
        self._close_patient_window()
        self.phase = Phase.FINISHED
        if view.visit_id is not None:  # an eye of a visit: the visit goes on (next eye, balance, finish)
            self.visits.eye_finished(view)
            return
        truth = ""
        if view.simulated and self.sim_patient is not None and view.result and self._sim_session_id == view.session_id:
            est = view.result["rounded"]
            found = Prescription(est["sphere_d"], est["cylinder_d"], est["axis_deg"])
            true_rx = in_form(self.sim_patient.true_rx, view.result.get("cylinder_form") or self._cylinder_form)
            truth = (f"Simulated patient's true correction: {lens_text(true_rx)}; "
                     f"acuity through the prescription found: {acuity_text(float(self.sim_patient.acuity_logmar(found)))}.")
        self.finish_view.show_result(view, truth)
        self.stack.setCurrentWidget(self.finish_view)
        sim = " \u00b7 SIMULATED" if view.simulated else ""
        self.setWindowTitle(f"VisionTune \u2014 session {view.session_id} finished \u00b7 {view.patient_id} {view.eye}{sim}")
        self.say(f"Session {view.session_id} finished." + (f" Exported to {self.export_dir}." if view.exports else ""))

    def on_failed(self, message: str) -> None:
        self.reporter.report(message)
        if self.phase == Phase.BUSY:
            self.phase = self._phase_before_busy
        if self.stack.currentWidget() is self.busy_page:
            self.show_start()

    # ------------------------------------------------------------------ phases
    def _enter(self, phase: Phase) -> None:
        self.phase = phase
        v, snap = self.session_view, self.snapshot
        self.auto_timer.stop()
        if phase == Phase.LENS:
            v.lens_caption.setText(f"Trial {snap.n_trials + 1}: set this lens")
            v.instruction.setText("Set the lens, then press Enter (or Space) to show the letter.")
        elif phase == Phase.ANSWER:
            q = snap.query
            v.letter.setText(f"Letter shown: {q.letter}   size {acuity_text(q.s_logmar)}")
            v.instruction.setText("Type the letter the patient names, or + / \u2212 for correct / incorrect.")
        elif phase == Phase.PAUSED:
            v.lens_caption.setText("Paused")
            v.instruction.setText("Session paused. Press P to resume, F to finish.")
        elif phase == Phase.STOPPED:
            v.instruction.setText(f"Stopping rule met ({snap.stop_reason}). Press F to finish "
                                  "(Backspace undoes the last answer).")  # fmt: skip
        self._schedule_auto()

    def _schedule_auto(self) -> None:
        if self.sim_patient is None or self.pace_s <= 0 or self.phase not in (Phase.LENS, Phase.ANSWER, Phase.STOPPED):
            return
        self.auto_timer.start(int(round(1000 * self.pace_s)))

    def _auto_step(self) -> None:
        if self.sim_patient is None or self._closing:
            return
        n = self.snapshot.n_trials if self.snapshot is not None else 0
        if not self.worker_idle or (n and (self.last_estimate is None or self.last_estimate.n_trials != n)):
            self.auto_timer.start(20)  # let the worker finish and the plots show this answer first
            return
        if self.phase == Phase.LENS:
            self.perform(Command(Action.CONFIRM_LENS), "auto")
        elif self.phase == Phase.ANSWER:
            self.perform(Command(Action.SIMULATED_ANSWER), "auto")
        elif self.phase == Phase.STOPPED:
            self._finish(self.snapshot.stop_reason)

    # ------------------------------------------------------------------ keys
    def on_key(self, name: str, text: str, ctrl: bool) -> None:
        letters = self.snapshot.letters if self.snapshot is not None else ()
        simulated = self.sim_patient is not None
        result = interpret_key(name, text, phase=self.phase, letters=letters, simulated=simulated, ctrl=ctrl)
        typed = repr(text) if text and text.isprintable() and not text.isspace() else name
        if isinstance(result, Rejected):
            log.info("key %s ignored (%s): %s", typed, self.phase.value, result.message)
            self.say(result.message)
            return
        self.perform(result, f"key {typed}")

    def perform(self, command: Command, source: str) -> None:
        """Carry out one command (from a key or the simulated-patient timer); logged."""
        snap = self.snapshot
        action = command.action
        detail = f" {command.letter}" if command.letter else ""
        log.info("%s -> %s%s (phase %s)", source, action.value, detail, self.phase.value)
        if action == Action.BLANK:
            self._blank_patient()
            if self.phase == Phase.ANSWER:
                self._enter(Phase.LENS)
            self.say("Patient screen blanked.")
        elif action == Action.CONFIRM_LENS:
            self._show_letter()
        elif action == Action.SIMULATED_ANSWER:
            reply = self.sim_reply
            self._record(Answer(letter_named=reply.letter_named), f"simulated patient says {reply.letter_named}")
        elif action == Action.ANSWER_LETTER:
            self._record(Answer(letter_named=command.letter), f"named {command.letter}")
        elif action == Action.ANSWER_CORRECT:
            self._record(Answer(correct=True), "correct")
        elif action == Action.ANSWER_WRONG:
            self._record(Answer(correct=False), "incorrect")
        elif action == Action.UNDO:
            if snap is None or snap.n_trials == 0:
                self.say("Nothing to undo.")
                return
            self.say(f"Answer {snap.n_trials} undone (kept in the log, marked void).")
            self._submit("undo")
        elif action == Action.PAUSE_TOGGLE:
            if self.phase == Phase.PAUSED:
                self.say("Resumed.")
                self._submit("resume_paused")
            else:
                self._blank_patient()
                self.say("Paused.")
                self._submit("pause")
        elif action == Action.FINISH:
            if time.monotonic() <= self._finish_armed_until or self.phase == Phase.STOPPED and source == "auto":
                self._finish(snap.stop_reason or "clinician")
            else:
                self._finish_armed_until = time.monotonic() + FINISH_CONFIRM_S
                self.say("Press F again to finish the session.", int(FINISH_CONFIRM_S * 1000))

    def _show_letter(self) -> None:
        q = self.snapshot.query
        if self.patient_window is not None:
            self.patient_window.show(q.letter, q.s_logmar)
        self._send("present")
        self._enter(Phase.ANSWER)
        if self.sim_patient is not None:
            self.sim_reply = simulated_reply(self.sim_patient, s_logmar=q.s_logmar, lens=q.lens, letter_shown=q.letter,
                                             letters=self.snapshot.letters, seed=self.snapshot.seed, trial_index=q.index)  # fmt: skip
            self.session_view.simulated_reply.setText(f"Simulated patient says: {self.sim_reply.letter_named}")

    def _record(self, answer: Answer, what: str) -> None:
        self._blank_patient()
        self._recording = f"Answer {self.snapshot.n_trials + 1} recorded: {what}."
        self.say(f"Recording answer {self.snapshot.n_trials + 1}: {what}\u2026")
        self._submit("record", answer)

    def on_recorded(self, _trial) -> None:
        """The engine has committed the answer to the trial log: only now say "recorded"."""
        self.say(self._recording or "Answer recorded.")

    def _finish(self, stopped_by: str) -> None:
        self._finish_armed_until = 0.0
        log.info("finish requested (%s)", stopped_by)
        in_visit = self.snapshot is not None and self.snapshot.visit_id is not None  # exported with its visit
        self._show_busy("Computing the result" + ("" if in_visit else " and exporting the report") + "\u2026")
        self._submit("finish", (stopped_by, None if in_visit else str(self.export_dir)))

    def _blank_patient(self) -> None:
        if self.patient_window is not None:
            self.patient_window.blank()

    def _close_patient_window(self) -> None:
        if self.patient_window is not None:
            self.patient_window.close()
            self.patient_window = None

    def _tick_elapsed(self) -> None:
        if self.snapshot is not None and self.stack.currentWidget() is self.session_view:
            self.session_view.set_elapsed(self.snapshot.prior_duration_s + time.monotonic() - self._opened_at)

    # ------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if not self._closing:
            self._closing = True
            self.auto_timer.stop()
            self.visits.stop()
            self.elapsed_timer.stop()
            self.render_timer.stop()
            self.prewarm_timer.stop()
            log.info("closing: every answer is already in the trial log")
            self._close_patient_window()
            self._save_settings()
            if not self.worker.shutdown(60_000):
                log.error("the session engine did not stop cleanly within 60 s")
            logs.flush_log()
        super().closeEvent(event)
