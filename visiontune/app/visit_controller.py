"""The visit in the main window: its pages, its keys, and the engine commands they send.

:class:`VisitController` adds the visit's two pages (:class:`~visiontune.app.visit_step_view.VisitStepView`:
the next eye and the balance question; :class:`~visiontune.app.visit_finish_view.VisitFinishView`)
to the window's stack and follows the engine's ``visit_view`` events
(:class:`~visiontune.app.visit_flow.VisitView`): a visit's eyes run in the ordinary session
view; when one finishes (``finished`` with a ``visit_id``) the controller asks the engine where
the visit stands and shows that page. Every answer and sign-off goes to the engine
(:mod:`visiontune.app.visit_host`), which writes it to the trial log before the next question
is computed. A simulated patient answers the balance (Enter types its answer; with a pace,
it answers by itself), as the headless ``visiontune visit run --simulate`` does.
"""

from __future__ import annotations

import dataclasses
import logging

from PySide6.QtCore import QObject, QTimer

from visiontune.app.keys import Rejected
from visiontune.app.visit_finish_view import VisitFinishView
from visiontune.app.visit_flow import (
    ANSWER_WORDS,
    EYE_NAMES,
    NewVisit,
    Step,
    VisitAction,
    VisitCommand,
    VisitView,
    interpret_visit_key,
)
from visiontune.app.visit_step_view import VisitStepView

log = logging.getLogger("visiontune.app")


class VisitController(QObject):
    """The visit flow of ``window`` (a :class:`~visiontune.app.main_window.MainWindow`)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.view: VisitView | None = None
        self.pending = False  # a visit command is with the engine: no second answer meanwhile
        self.step_view = VisitStepView()
        self.finish_view = VisitFinishView()
        for page in (self.step_view, self.finish_view):
            window.stack.addWidget(page)
        window.worker.visit_view.connect(self.on_view)
        window.worker.failed.connect(self.on_failed)
        self.step_view.key_pressed.connect(self.on_key)
        self.step_view.skip_requested.connect(self.skip)
        self.finish_view.signoff_requested.connect(self.sign_off)
        self.finish_view.acuity_requested.connect(self.record_acuity)
        self.finish_view.export_requested.connect(self.export)
        self.finish_view.back_requested.connect(window.show_start)
        self.auto_timer = QTimer(self)
        self.auto_timer.setSingleShot(True)
        self.auto_timer.timeout.connect(self._auto_step)

    @property
    def visit_id(self) -> int | None:
        return None if self.view is None else self.view.visit_id

    @property
    def pages(self) -> tuple:
        return (self.step_view, self.finish_view)

    def _send(self, name: str, payload) -> None:
        self.pending = True
        self.window._send(name, payload)

    # ------------------------------------------------------------------ from the window
    def start(self, request: NewVisit) -> None:
        """Create the visit (from the start page) and open its first eye."""
        calibration = self.window.prepare_start(request.simulated, request.protocol)
        if calibration is False:
            return
        skipped = ", ".join(f"{e} ({r})" for e, r in request.skip.items()) or "none"
        starts = ", ".join(f"{e} {rx.format() if rx else 'none'}" for e, rx in request.starts.items())
        log.info("visit requested: patient %s, protocol %s, starts %s (%s), skipped %s, %s cylinder, %s",
                 request.patient_id, request.protocol, starts, request.start_source, skipped, request.cylinder_form,
                 "SIMULATED" if request.simulated else "real patient")  # fmt: skip
        self.view = None
        self.window._show_busy(f"Preparing the visit of {request.patient_id} (right eye, then left eye)\u2026")
        self.window._submit("visit_create", dataclasses.replace(request, calibration=calibration))

    def eye_finished(self, finished) -> None:
        """A session of visit ``finished.visit_id`` finished (or was opened from the list)."""
        self.window._show_busy(f"{EYE_NAMES.get(finished.eye, finished.eye).capitalize()} ({finished.eye}) done. "
                               "Preparing the next step\u2026")  # fmt: skip
        self._send("visit_show", finished.visit_id)

    def stop(self) -> None:
        self.auto_timer.stop()

    # ------------------------------------------------------------------ from the engine
    def on_view(self, view: VisitView) -> None:
        self.pending = False
        self.view = view
        self.auto_timer.stop()
        w = self.window
        if view.opening:  # the session view follows (opened)
            w.busy_page.setText(f"Opening the {EYE_NAMES[view.eye].lower()} ({view.eye})\u2026")
            return
        if view.step == Step.REFRACT:
            self.step_view.show_next_eye(view)
            page = self.step_view
        elif view.step == Step.BALANCE:
            self.step_view.show_question(view)
            page = self.step_view
        else:
            self.finish_view.show_visit(view)
            self.finish_view.show_failure("")
            page = self.finish_view
        w.stack.setCurrentWidget(page)
        if page is self.step_view:
            self.step_view.setFocus()
        sim = " \u00b7 SIMULATED" if view.simulated else ""
        where = {Step.REFRACT: f"next {view.eye}", Step.BALANCE: "binocular balance", Step.FINISH: "finish"}[view.step]
        w.setWindowTitle(f"VisionTune \u2014 visit {view.visit_id} \u00b7 {view.patient_id} \u00b7 {where}{sim}")
        w.status.clearMessage()  # the engine's "busy" line is over
        if view.message:
            w.say(view.message)
        self._schedule_auto()

    def on_failed(self, message: str) -> None:
        self.pending = False
        if self.window.stack.currentWidget() is self.finish_view:
            self.finish_view.show_failure(message)

    # ------------------------------------------------------------------ keys
    def on_key(self, name: str, text: str, ctrl: bool) -> None:
        view = self.view
        if view is None:
            return
        answer = view.question.simulated_answer if view.question is not None else None
        result = interpret_visit_key(name, text, step=view.step, simulated_answer=answer)
        typed = repr(text) if text and text.isprintable() and not text.isspace() else name
        if isinstance(result, Rejected):
            log.info("key %s ignored (visit %s): %s", typed, view.step.value, result.message)
            self.window.say(result.message)
            return
        self.perform(result, f"key {typed}")

    def perform(self, command: VisitCommand, source: str) -> None:
        view = self.view
        log.info("%s -> %s%s (visit %d, %s)", source, command.action.value,
                 f" {command.answer}" if command.answer else "", view.visit_id, view.step.value)  # fmt: skip
        if self.pending:
            self.window.say("One moment: the last answer is being recorded.")
            return
        if command.action == VisitAction.CONTINUE:
            self.window._show_busy(f"Opening the {EYE_NAMES[view.eye].lower()} ({view.eye})\u2026")
            self.pending = True
            self.window._submit("visit_next", view.visit_id)
        elif command.action == VisitAction.ANSWER:
            q = view.question
            self.window.say(f"Balance answer {q.index + 1}: {ANSWER_WORDS[command.answer]}; recording\u2026")
            self._send("visit_balance", (view.visit_id, q.index, command.answer))
        elif command.action == VisitAction.NO_BALANCE:
            self.window.say("No binocular balance: recorded as not done.")
            self._send("visit_balance", (view.visit_id, None, None))

    def _schedule_auto(self) -> None:
        view = self.view
        pace = self.window.pace_s
        if view is None or not view.simulated or pace <= 0 or view.step == Step.FINISH:
            return
        self.auto_timer.start(int(round(1000 * pace)))

    def _auto_step(self) -> None:
        view = self.view
        if view is None or self.window._closing or self.window.stack.currentWidget() is not self.step_view:
            return
        if view.step == Step.REFRACT:
            self.perform(VisitCommand(VisitAction.CONTINUE), "auto")
        elif view.step == Step.BALANCE and view.question is not None and view.question.simulated_answer:
            self.perform(VisitCommand(VisitAction.ANSWER, view.question.simulated_answer), "auto")

    # ------------------------------------------------------------------ page actions
    def skip(self, eye: str, reason: str) -> None:
        if not reason:
            self.window.say(f"Type why the {EYE_NAMES[eye].lower()} ({eye}) is not refracted, then skip it.")
            return
        log.info("skip %s requested (visit %d): %s", eye, self.visit_id, reason)
        self._send("visit_skip", (self.visit_id, eye, reason))

    def sign_off(self, eye: str, rx, by: str) -> None:
        log.info("sign-off requested (visit %d %s): %s by %s", self.visit_id, eye, rx.format(), by)
        self.window.say(f"Signing off {eye}\u2026")
        self._send("visit_signoff", (self.visit_id, eye, rx, by))

    def record_acuity(self, eye: str, logmar: float) -> None:
        log.info("acuity recorded (visit %d %s): %+.2f logMAR", self.visit_id, eye, logmar)
        self._send("visit_acuity", (self.visit_id, eye, logmar))

    def export(self) -> None:
        folder = self.window.export_dir
        log.info("export requested (visit %d) to %s", self.visit_id, folder)
        self.window.say(f"Exporting the visit's records to {folder}\u2026")
        self._send("visit_export", (self.visit_id, str(folder)))
