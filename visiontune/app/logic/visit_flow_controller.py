"""The visit's controller: the engine commands of its pages, their guard, the autopilot (no Qt).

:class:`VisitFlowController` is the visit as the clinician drives it between and after the
refractions of its eyes (:mod:`visiontune.app.logic.visit_flow`), in plain Python: the window's
:class:`~visiontune.app.visit_controller.VisitController` forwards it the keys and requests of
the visit pages and the engine's ``visit_view`` events, and draws what it announces; the
controller sends the engine its commands through anything with the
:class:`~visiontune.app.logic.session_controller.SessionController`'s ``submit`` (the session waits)
and ``send`` (it does not) (:class:`Commands`), so a test drives it with a fake engine, without
a display. Commands are the typed messages of :mod:`visiontune.app.logic.messages`.

While a visit command is with the engine (:attr:`VisitFlowController.pending`, from the command
to the engine's next ``visit_view`` or ``failed``) no second answer is sent: a key or the
autopilot only hears "one moment". Each action of a page goes to the engine as one command:

- the next eye (Enter between eyes): ``NextEye``;
- a balance answer (R / L / =, or the simulated patient's): ``BalanceAnswer``
  ``(visit id, question index, answer)``; no balance (N): ``BalanceAnswer(visit id, None, None)``;
- skipping the next eye: ``SkipEye(visit id, eye, reason)``, only with a reason;
- a sign-off, an acuity, the export: ``SignOff``, ``RecordAcuity``, ``ExportVisit``;
- the near addition (the near page): Enter begins it at the clinic's distance (``near_distance_cm``,
  ``NearBegin``), ``+`` / ``-`` answer its letter (Enter: the simulated patient's answer; ``NearAnswer``);
  skipping it needs a reason (``NearSkip``); the finish page's "Near addition" begins it for a
  patient the age rule leaves out.

The autopilot (a simulated visit with a pace): on a page other than the finish the controller
asks for a step after ``pace_s`` seconds (the ``"autopilot"`` event; the window runs the timer
and calls :meth:`VisitFlowController.auto_step` while the step page is on screen). A step starts
the next eye or gives the simulated patient's balance answer.

Listeners are called ``listener(kind, value)`` (``kind``: a :class:`~visiontune.app.logic.events.Shown`
member, named here by its value) with:

- ``"status"`` ``(text, timeout_ms)``: the status line;
- ``"busy_page"`` str: show the waiting page with this text;
- ``"busy_text"`` str: the waiting page's text (the page stays as it is: the eye's session opens next);
- ``"page"`` :class:`~visiontune.app.logic.visit_flow.VisitView`: show the page of its step (the next eye
  or the balance question on the step page, else the finish page) titled :func:`window_title`;
- ``"autopilot"`` float or None: call :meth:`~VisitFlowController.auto_step` after this many
  seconds (None: do not).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from visiontune.app.logic.events import EventSource, Listener, Shown
from visiontune.app.logic.messages import (
    BalanceAnswer,
    Command,
    CreateVisit,
    ExportVisit,
    NearAnswer,
    NearBegin,
    NearSkip,
    NextEye,
    RecordAcuity,
    ShowVisit,
    SignOff,
    SkipEye,
    VisitInputs,
)
from visiontune.app.logic.visit_flow import (
    ANSWER_WORDS,
    EYE_NAMES,
    NewVisit,
    Step,
    VisitAction,
    VisitCommand,
    VisitView,
    interpret_visit_key,
)
from visiontune.optics import Prescription
from visiontune.refraction.near_add import DEFAULT_NEAR_DISTANCE_CM, check_near_distance_cm

__all__ = ["Commands", "Listener", "VisitFlowController", "window_title"]

log = logging.getLogger("visiontune.app")


class Commands(Protocol):
    """Where the controller's commands go: ``submit`` puts the session in wait for the engine
    (a visit is created, an eye opened), ``send`` does not."""

    def submit(self, command: Command) -> None: ...

    def send(self, command: Command) -> None: ...


def window_title(view: VisitView) -> str:
    """``VisionTune — visit 3 · P-1 · binocular balance · SIMULATED``."""
    sim = " \u00b7 SIMULATED" if view.simulated else ""
    where = {
        Step.REFRACT: f"next {view.eye}",
        Step.BALANCE: "binocular balance",
        Step.NEAR: "near addition",
        Step.FINISH: "finish",
    }[view.step]
    return f"VisionTune \u2014 visit {view.visit_id} \u00b7 {view.patient_id} \u00b7 {where}{sim}"


class VisitFlowController(EventSource):
    """The visit's state (see the module doc). ``commands``: where commands go; ``pace_s``: the
    autopilot's pace, seconds (0: the simulated patient answers one step per key);
    ``export_dir``: the folder a visit is exported to (asked when exporting)."""

    def __init__(
        self,
        commands: Commands,
        *,
        pace_s: float = 0.0,
        export_dir: Callable[[], Path | str] = Path.cwd,
        near_distance_cm: float = DEFAULT_NEAR_DISTANCE_CM,
    ) -> None:
        self.commands = commands
        #: the clinic's near distance (cm), where a near step begins
        self.near_distance_cm = check_near_distance_cm(near_distance_cm)
        self.pace_s = pace_s
        self.export_dir = export_dir
        super().__init__()
        self.view: VisitView | None = None
        #: A visit command is with the engine: no second answer meanwhile.
        self.pending = False

    @property
    def visit_id(self) -> int | None:
        return None if self.view is None else self.view.visit_id

    def _send(self, command: Command) -> None:
        self.pending = True
        self.commands.send(command)

    # ------------------------------------------------------------------ from the window
    def start(self, request: NewVisit) -> None:
        """Create the visit (from the start page, its calibration checked) and open its first eye."""
        skipped = ", ".join(f"{e} ({r})" for e, r in request.skip.items()) or "none"
        starts = ", ".join(f"{e} {rx.format() if rx else 'none'}" for e, rx in request.starts.items())
        log.info(
            "visit requested: patient %s, protocol %s, starts %s (%s), skipped %s, %s cylinder, %s",
            request.patient_id,
            request.protocol,
            starts,
            request.start_source,
            skipped,
            request.cylinder_form,
            "SIMULATED" if request.simulated else "real patient",
        )
        self.view = None
        self._emit(Shown.BUSY_PAGE, f"Preparing the visit of {request.patient_id} (right eye, then left eye)\u2026")
        self.commands.submit(CreateVisit(request))

    def eye_finished(self, finished) -> None:
        """A session of visit ``finished.visit_id`` finished (or was opened from the list)."""
        self._emit(
            Shown.BUSY_PAGE,
            f"{EYE_NAMES.get(finished.eye, finished.eye).capitalize()} ({finished.eye}) done. "
            "Preparing the next step\u2026",
        )
        self._send(ShowVisit(finished.visit_id))

    def stop(self) -> None:
        """The window leaves the visit (or closes): no autopilot step comes."""
        self._emit(Shown.AUTOPILOT, None)

    # ------------------------------------------------------------------ from the engine
    def on_view(self, view: VisitView) -> None:
        self.pending = False
        self.view = view
        if view.opening:  # the session view follows (opened)
            self._emit(Shown.AUTOPILOT, None)
            self._emit(Shown.BUSY_TEXT, f"Opening the {EYE_NAMES[view.eye].lower()} ({view.eye})\u2026")
            return
        self._emit(Shown.PAGE, view)
        if view.message:
            self.say(view.message)
        self._emit(Shown.AUTOPILOT, self.auto_delay_s())

    def on_failed(self, _message: str = "") -> None:
        """The last command failed: the visit is where it was, ready for the next one."""
        self.pending = False

    # ------------------------------------------------------------------ keys and the autopilot
    def on_key(self, name: str, text: str, ctrl: bool = False) -> None:
        view = self.view
        if view is None:
            return
        answer = view.question.simulated_answer if view.question is not None else None
        nq = view.near_question
        result = interpret_visit_key(
            name,
            text,
            step=view.step,
            simulated_answer=answer,
            near_begun=view.near is not None and view.near.begun,
            simulated_correct=None if nq is None else nq.simulated_correct,
        )
        self.dispatch_key(result, name, text, f"visit {view.step.value}")

    def perform(self, command: VisitCommand, source: str) -> None:
        """Carry out one command (from a key, or ``"auto"``: the autopilot); logged; refused
        while the last one is with the engine."""
        view = self.view
        log.info(
            "%s -> %s%s (visit %d, %s)",
            source,
            command.action.value,
            f" {command.answer}" if command.answer else "",
            view.visit_id,
            view.step.value,
        )
        if self.pending:
            self.say("One moment: the last answer is being recorded.")
            return
        if command.action == VisitAction.CONTINUE:
            self._emit(Shown.BUSY_PAGE, f"Opening the {EYE_NAMES[view.eye].lower()} ({view.eye})\u2026")
            self.pending = True
            self.commands.submit(NextEye(view.visit_id))
        elif command.action == VisitAction.ANSWER:
            q = view.question
            self.say(f"Balance answer {q.index + 1}: {ANSWER_WORDS[command.answer]}; recording\u2026")
            self._send(BalanceAnswer(view.visit_id, q.index, command.answer))
        elif command.action == VisitAction.NO_BALANCE:
            self.say("No binocular balance: recorded as not done.")
            self._send(BalanceAnswer(view.visit_id, None, None))
        elif command.action == VisitAction.NEAR_BEGIN:
            self.begin_near()
        elif command.action == VisitAction.NEAR_ANSWER:
            q = view.near_question
            if q is None:
                self.say("No near letter is asked now.")
                return
            self.say(
                f"{q.eye} near letter {q.index + 1}: {'read right' if command.answer == '+' else 'wrong'}; "
                "recording\u2026"
            )
            self._send(NearAnswer(view.visit_id, q.eye, q.index, command.answer == "+"))

    def auto_delay_s(self) -> float | None:
        """When the autopilot steps next on this page (None: it does not; a real patient, no
        pace, or the finish)."""
        view = self.view
        if view is None or not view.simulated or self.pace_s <= 0 or view.step == Step.FINISH:
            return None
        return self.pace_s

    def auto_step(self) -> None:
        """One step of the simulated patient: start the next eye, or answer the balance question."""
        view = self.view
        if view is None:
            return
        nq = view.near_question
        if view.step == Step.REFRACT:
            self.perform(VisitCommand(VisitAction.CONTINUE), "auto")
        elif view.step == Step.NEAR and (view.near is None or not view.near.begun):
            self.perform(VisitCommand(VisitAction.NEAR_BEGIN), "auto")
        elif view.step == Step.NEAR and nq is not None and nq.simulated_correct is not None:
            self.perform(VisitCommand(VisitAction.NEAR_ANSWER, "+" if nq.simulated_correct else "-"), "auto")
        elif view.step == Step.BALANCE and view.question is not None and view.question.simulated_answer:
            self.perform(VisitCommand(VisitAction.ANSWER, view.question.simulated_answer), "auto")

    # ------------------------------------------------------------------ page actions
    def skip(self, eye: str, reason: str) -> None:
        """Skip the next eye: sent only with the reason it is not refracted."""
        if not reason:
            self.say(f"Type why the {EYE_NAMES[eye].lower()} ({eye}) is not refracted, then skip it.")
            return
        log.info("skip %s requested (visit %d): %s", eye, self.visit_id, reason)
        self._send(SkipEye(self.visit_id, eye, reason))

    def begin_near(self) -> None:
        """Begin the near addition at the clinic's near distance (the near page, or the finish page's
        "Near addition" for a patient the age rule leaves out)."""
        if self.pending:
            self.say("One moment: the last answer is being recorded.")
            return
        log.info("near addition requested (visit %d) at %g cm", self.visit_id, self.near_distance_cm)
        self.say(f"Near addition at {self.near_distance_cm:g} cm\u2026")
        self._send(NearBegin(self.visit_id, self.near_distance_cm))

    def skip_near(self, reason: str) -> None:
        """The near addition not done: sent only with the reason."""
        if not reason:
            self.say("Type why the near addition is not done, then skip it.")
            return
        log.info("near addition skipped (visit %d): %s", self.visit_id, reason)
        self._send(NearSkip(self.visit_id, reason))

    def sign_off(self, eye: str, rx: Prescription, by: str) -> None:
        log.info("sign-off requested (visit %d %s): %s by %s", self.visit_id, eye, rx.format(), by)
        self.say(f"Signing off {eye}\u2026")
        self._send(SignOff(self.visit_id, eye, rx, by))

    def record_inputs(self, pd: str, examiner: str) -> None:
        """The pupillary distance and the examiner typed on the finish page (checked by the engine)."""
        log.info("PD and examiner recorded (visit %d)", self.visit_id)
        self._send(VisitInputs(self.visit_id, pd, examiner))

    def record_acuity(self, eye: str, logmar: float) -> None:
        log.info("acuity recorded (visit %d %s): %+.2f logMAR", self.visit_id, eye, logmar)
        self._send(RecordAcuity(self.visit_id, eye, logmar))

    def export(self) -> None:
        folder = self.export_dir()
        log.info("export requested (visit %d) to %s", self.visit_id, folder)
        self.say(f"Exporting the visit's records to {folder}\u2026")
        self._send(ExportVisit(self.visit_id, str(folder)))
