"""The visit in the main window: its pages, and the Qt side of the visit's controller.

:class:`VisitController` adds the visit's two pages (:class:`~visiontune.app.visit_step_view.VisitStepView`:
the next eye and the balance question; :class:`~visiontune.app.visit_finish_view.VisitFinishView`)
to the window's stack and renders the Qt-free
:class:`~visiontune.app.logic.visit_flow_controller.VisitFlowController` (:attr:`VisitController.flow`):
it forwards it the pages' keys and requests and the engine's ``visit_view`` events
(:class:`~visiontune.app.logic.visit_flow.VisitView`), draws the page each view is at, and runs its
autopilot's timer. A visit's eyes run in the ordinary session view; when one finishes
(``finished`` with a ``visit_id``) the flow asks the engine where the visit stands. Every answer
and sign-off goes to the engine (:mod:`visiontune.app.logic.visit_host`), which writes it to the
trial log before the next question is computed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QGuiApplication

from visiontune.app.logic.events import Shown
from visiontune.app.logic.visit_flow import NewVisit, Step, VisitCommand, VisitView
from visiontune.app.logic.visit_flow_controller import VisitFlowController, window_title
from visiontune.app.visit_finish_view import VisitFinishView
from visiontune.app.visit_near_view import VisitNearView, patient_screen_logmar
from visiontune.app.visit_step_view import VisitStepView
from visiontune.display.optotypes import load_letter_set
from visiontune.display.qt_renderer import PatientWindow
from visiontune.errors import CalibrationError

log = logging.getLogger("visiontune.app")


class VisitController(QObject):
    """The visit pages of ``window`` (a :class:`~visiontune.app.main_window.MainWindow`); the
    visit's state is :attr:`flow`'s (read through ``view``, ``pending`` and ``visit_id``)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.flow = VisitFlowController(
            window.controller,
            pace_s=window.pace_s,
            export_dir=lambda: window.export_dir,
            near_distance_cm=window.settings.near_distance_cm,
        )
        self.flow.connect(self._on_flow_event)
        self.step_view = VisitStepView()
        self.finish_view = VisitFinishView()
        self.near_view = VisitNearView()  # the near addition (visit_near_view)
        for page in (self.step_view, self.finish_view, self.near_view):
            window.stack.addWidget(page)
        window.worker.visit_view.connect(self.flow.on_view)
        window.worker.failed.connect(self.on_failed)
        self.step_view.key_pressed.connect(self.flow.on_key)
        self.step_view.skip_requested.connect(self.flow.skip)
        self.near_view.key_pressed.connect(self.flow.on_key)
        self.near_view.skip_requested.connect(self.flow.skip_near)
        self.finish_view.near_requested.connect(self.flow.begin_near)
        self.finish_view.signoff_requested.connect(self.flow.sign_off)
        self.finish_view.acuity_requested.connect(self.flow.record_acuity)
        self.finish_view.inputs_requested.connect(self.flow.record_inputs)
        self.finish_view.export_requested.connect(self.flow.export)
        self.finish_view.back_requested.connect(window.show_start)
        #: the patient screen of a real patient's near letters (the session's own closes with its session)
        self.near_window = None
        self.auto_timer = QTimer(self)
        self.auto_timer.setSingleShot(True)
        self.auto_timer.timeout.connect(self._auto_step)

    @property
    def view(self) -> VisitView | None:
        return self.flow.view

    @property
    def pending(self) -> bool:
        return self.flow.pending

    @property
    def visit_id(self) -> int | None:
        return self.flow.visit_id

    @property
    def pages(self) -> tuple:
        return (self.step_view, self.finish_view, self.near_view)

    # ------------------------------------------------------------------ from the window
    def start(self, request: NewVisit) -> None:
        """Create the visit (from the start page) once the screen is ready for it."""
        calibration = self.window.prepare_start(request.simulated, request.protocol)
        if calibration is False:
            return
        self.flow.start(dataclasses.replace(request, calibration=calibration))

    def eye_finished(self, finished) -> None:
        self.flow.eye_finished(finished)

    def perform(self, command: VisitCommand, source: str) -> None:
        self.flow.perform(command, source)

    def stop(self) -> None:
        self.flow.stop()
        self.close_near_window()

    def on_failed(self, message: str) -> None:
        self.flow.on_failed(message)
        if self.window.stack.currentWidget() is self.finish_view:
            self.finish_view.show_failure(message)

    def _auto_step(self) -> None:
        if not self.window._closing and self.window.stack.currentWidget() in (self.step_view, self.near_view):
            self.flow.auto_step()

    # ------------------------------------------------------------------ what the flow says
    def _on_flow_event(self, kind: Shown, value) -> None:
        """Show what the visit's controller says (dispatched on the event's kind)."""
        w = self.window
        handlers: dict[Shown, Callable[[object], None]] = {
            Shown.STATUS: lambda v: w.say(*v),
            Shown.BUSY_PAGE: lambda v: w._show_busy(v),
            Shown.BUSY_TEXT: lambda v: w.busy_page.setText(v),
            Shown.PAGE: lambda v: self._show_page(v),
            Shown.AUTOPILOT: lambda v: (
                self.auto_timer.stop() if v is None else self.auto_timer.start(int(round(1000 * v)))
            ),
        }
        handler = handlers.get(kind)
        if handler is None:  # refused in the log; nothing shown, nothing recorded is touched
            log.error("visit controller event: no handler for %s %r", type(kind).__name__, kind)
            return
        handler(value)

    def _near_patient_screen(self, view: VisitView) -> None:
        """A real patient's near letter on the patient screen, as tall as its size at the near
        distance (:func:`~visiontune.app.visit_near_view.patient_screen_logmar`); blank between letters."""
        w, q = self.window, view.near_question
        if view.simulated or w.calibration is None:
            return
        if self.near_window is None:
            screen = w._patient_screen()
            fullscreen = not w.options.windowed and len(QGuiApplication.screens()) > 1 and screen is not None
            self.near_window = PatientWindow(
                w.calibration, load_letter_set("sloan"), screen=screen, fullscreen=fullscreen
            )
            self.near_window.show()
        if q is None:
            self.near_window.blank()
            return
        try:
            self.near_window.show(q.letter, patient_screen_logmar(q.size_logmar, q.distance_cm, w.calibration))
        except CalibrationError:  # too small (or large) for this screen: the page says to show a printed letter
            self.near_window.blank()

    def close_near_window(self) -> None:
        if self.near_window is not None:
            self.near_window.close()
            self.near_window = None

    def _show_page(self, view: VisitView) -> None:
        if view.step == Step.REFRACT:
            self.step_view.show_next_eye(view)
        elif view.step == Step.BALANCE:
            self.step_view.show_question(view)
        elif view.step == Step.NEAR:
            self.near_view.show_near(view)
            self._near_patient_screen(view)
        else:
            self.finish_view.show_visit(view)
            self.finish_view.show_failure("")
        page = self.finish_view if view.step == Step.FINISH else self.step_view
        if view.step == Step.NEAR:
            page = self.near_view
        else:
            self.close_near_window()
        self.window.stack.setCurrentWidget(page)
        if page in (self.step_view, self.near_view):
            page.setFocus()
        self.window.setWindowTitle(window_title(view))
        self.window.status.clearMessage()  # the engine's "busy" line is over
