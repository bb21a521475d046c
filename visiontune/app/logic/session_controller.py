"""The session view's controller: phases, keys, finishing, the simulated patient's autopilot (no Qt).

:class:`SessionController` is the session as the clinician drives it, in plain Python: the
main window forwards it the keys and the engine's events and draws what it announces; the
controller sends the engine its commands (the typed messages of :mod:`visiontune.app.logic.messages`)
through anything with the :class:`~visiontune.app.worker.SessionWorker`'s ``submit(command)`` (:class:`Engine`),
so a test drives it with a fake engine and a fake clock, without a display.

Its state machine (:class:`~visiontune.app.logic.keys.Phase`; each key goes through
:func:`~visiontune.app.logic.keys.interpret_key`, which rejects a key that means nothing in the
phase with a sentence for the status line, and nothing is sent)::

    FINISHED --start / resume sent--> BUSY --opened / updated--> LENS
    LENS    --Enter / Space: Present sent, the letter on the patient screen--> ANSWER
            (a comparison: --> COMPARE, the letter kept in view while lens 1 and lens 2 are shown)
            (a slider: --> SLIDE, the knob at its starting lens, the letters kept in view)
            (a chart line: --> LINE, the line's letters on the patient screen at chart spacing)
    ANSWER  --letter / + / - / the simulated answer: RecordAnswer sent--> BUSY
    COMPARE --1 / 2 / = / the simulated answer: RecordAnswer sent--> BUSY
    SLIDE   --Left / Right (or , / .): the knob one click along its path ("slider" announced)--> SLIDE
    SLIDE   --Enter / Space (the lens the knob is at) / the simulated answer: RecordAnswer sent--> BUSY
    LINE    --a letter's key (+ / - / the letter named) or Backspace: the entry changes ("line" said)--> LINE
    LINE    --a count, or Enter / Space once every letter is keyed, or the simulated line: RecordAnswer sent--> BUSY
    BUSY    --updated--> LENS, or STOPPED (a stopping rule is met), or PAUSED
    ANSWER, COMPARE, SLIDE, LINE --Escape: the patient screen blanked--> LENS (a line's keys kept)
    LENS, ANSWER, COMPARE, SLIDE, STOPPED --Backspace: Undo sent--> BUSY (LINE: with no letter keyed)
    any but FINISHED --P: Pause (or ResumePaused when PAUSED) sent--> BUSY
    any but FINISHED --F, then F again within FINISH_CONFIRM_S: Finish sent--> BUSY --finished--> FINISHED
    BUSY    --failed--> the phase before BUSY

While BUSY the engine has the last command: an answer key is rejected, so an answer is never
sent twice. ``present`` and ``open_store``/``list`` are sent without entering BUSY.

With a lens device that confirms the lens itself (a motorized phoropter,
:class:`~visiontune.app.logic.worker_device.DeviceView` ``waits_for_device``), Enter in LENS sends
``present`` and waits (BUSY) while the device sets the lenses; only its confirmation
(:meth:`SessionController.on_presented`) shows the letter. A device fault
(:meth:`SessionController.on_device_fault`) leaves the session PAUSED with the message and a
Retry (:meth:`SessionController.retry_device`, or P): ``retry_device`` opens the device again and
resumes the session at the lens to set (LENS). With the manual trial frame the Enter key is the
clinician's confirmation: the letter is shown at once, as before. While a comparison is on
screen the device holds lens 2 (it set lens 1, then lens 2); :meth:`SessionController.device_lens`
(the page's "Lens 1" / "Lens 2" buttons) has it show either again, and a slider's knob moves
the device with it (the knob's starting lens set when the letters appear): ``device_lens``.

The autopilot (a simulated session with a pace): on entering LENS, ANSWER, COMPARE, SLIDE or STOPPED the
controller asks for a step after ``pace_s`` seconds (the ``"autopilot"`` event, a delay or
None to cancel; the window runs the timer and calls :meth:`SessionController.auto_step`).
A step confirms the lens, gives the simulated patient's answer
(:func:`~visiontune.app.logic.simulation.simulated_reply`; to a comparison
:func:`~visiontune.refraction.loop.simulated_comparison`; to a slider
:func:`~visiontune.refraction.loop.simulated_slider`, the knob moved to its choice) or finishes a
stopped session; it waits
(:data:`AUTO_RETRY_S`) while a command is with the engine or the plots do not yet show the
last answer.

Listeners are called ``listener(kind, value)`` (``kind``: a :class:`~visiontune.app.logic.events.Shown`
member, named here by its value) with, in order of the change:

- ``"status"`` ``(text, timeout_ms)``: the status line (``timeout_ms`` 0: until replaced);
- ``"opened"`` :class:`~visiontune.app.worker.Snapshot`: the session page opens (for a real
  patient the window opens the patient screen);
- ``"answers"`` ``(count, budget)``: the answers recorded, as soon as the engine confirms one
  (the one count the page shows: :func:`~visiontune.app.logic.texts.answers_text`);
- ``"snapshot"`` :class:`~visiontune.app.worker.Snapshot`: draw the session after a change;
  the letter line and the simulated reply are cleared and the patient screen blanked;
- ``"prompt"`` :class:`Prompt`: the phase's caption, instruction and letter line;
- ``"present"`` :class:`~visiontune.refraction.loop.PendingQuery` (or ``PendingComparison``): show
  its letter to the patient;
- ``"slider"`` :class:`SliderView`: draw a slider's knob, its lenses and the one it is at;
- ``"line"`` :class:`LineView`: draw a chart line's letters and what was keyed for each;
- ``"blank"`` None: blank the patient screen;
- ``"simulated_reply"`` str: the simulated patient's answer line;
- ``"autopilot"`` float or None: call :meth:`~SessionController.auto_step` after this many
  seconds (None: do not);
- ``"busy_page"`` str: show the waiting page with this text;
- ``"finished"`` :class:`FinishedPage`: show the finish page;
- ``"visit_eye_finished"`` :class:`~visiontune.app.worker.FinishedView`: an eye of a visit is done;
- ``"exit"`` None: the answers asked for by ``exit_after`` are in; close the app;
- ``"device"`` :class:`~visiontune.app.logic.worker_device.DeviceView`: draw the lens device's state;
- ``"device_fault"`` str: the device failed, the session is paused (the message; Retry offered);
- ``"device_lenses"`` int: show that many "show lens N on the device" buttons (0: hide them).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from visiontune.app.logic.chart_line_entry import LineEntry
from visiontune.app.logic.events import EventSource, Listener, Shown
from visiontune.app.logic.keys import Action, Command, Phase, interpret_key
from visiontune.app.logic.messages import Command as EngineCommand
from visiontune.app.logic.messages import (
    Finish,
    Pause,
    Present,
    RecordAnswer,
    ResumePaused,
    RetryDevice,
    ShowLens,
    Undo,
)
from visiontune.app.logic.simulation import SimulatedReply, case_patient, simulated_reply
from visiontune.app.logic.texts import MINUS, acuity_text, answer_text, lens_text
from visiontune.app.logic.worker_device import DeviceView
from visiontune.app.logic.worker_values import EstimateView, FinishedView, Snapshot
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.refraction.lenses import in_form, lens_left_in_place, same_lens
from visiontune.refraction.loop import LineReply, PendingLine, simulated_comparison, simulated_line, simulated_slider
from visiontune.session.engine import Answer, ComparisonReply, PendingComparison, PendingSlider, SliderReply
from visiontune.session.lens_device import question_lenses
from visiontune.session.records import SessionState
from visiontune.session.trial_text import held_text

__all__ = [
    "AUTO_RETRY_S",
    "FINISH_CONFIRM_S",
    "Engine",
    "FinishedPage",
    "LineView",
    "Listener",
    "Prompt",
    "SessionController",
    "SliderView",
    "slider_lines",
    "slider_notes",
]

log = logging.getLogger("visiontune.app")

#: The second F finishes the session if pressed within this many seconds of the first.
FINISH_CONFIRM_S = 3.0
#: The autopilot looks again after this many seconds while the engine or the plots are behind.
AUTO_RETRY_S = 0.02


class Engine(Protocol):
    """What the controller needs of the session engine: one command at a time (each is
    answered, eventually, by :meth:`SessionController.on_idle`)."""

    def submit(self, command: EngineCommand) -> None: ...


@dataclass(frozen=True)
class Prompt:
    """What the session page says in a phase: ``instruction``; ``caption`` (above the lens) and
    ``letter`` (the letter line) are None where the phase leaves them as they are."""

    instruction: str
    caption: str | None = None
    letter: str | None = None


@dataclass(frozen=True)
class SliderView:
    """A slider on screen: the ``knob``, its ``lenses`` (clinic's cylinder form, knob order),
    ``position`` (the lens the knob is at), ``start`` (where it started) and the simulated
    patient's ``simulated_choice`` (None for a real patient)."""

    knob: str
    lenses: tuple[Prescription, ...]
    position: int
    start: int
    simulated_choice: int | None = None

    def lines(self) -> list[str]:
        return slider_lines(self)


def slider_notes(view: SliderView, i: int) -> str:
    """What lens ``i`` of the knob's path is besides a lens: ``"(start)"``, ``"(simulated: clearest)"``,
    both in one bracket, or ``""``."""
    notes = [n for n, on in (("start", i == view.start), ("simulated: clearest", i == view.simulated_choice)) if on]
    return f"({', '.join(notes)})" if notes else ""


def slider_lines(view: SliderView) -> list[str]:
    """One line per lens of the knob's path: the one the knob is at marked ``▶``, then
    :func:`slider_notes`."""
    out = []
    for i, lens in enumerate(view.lenses):
        notes = slider_notes(view, i)
        mark = "▶" if i == view.position else " "
        out.append(f"{mark} {i + 1:2d}  {lens_text(lens)}" + (f"  {notes}" if notes else ""))
    return out


@dataclass(frozen=True)
class LineView:
    """A chart line on screen: its ``letters`` (reading order), the ``marks`` keyed so far (True
    right, False wrong, one per letter keyed, in order), its size ``s_logmar`` and the simulated
    patient's answers (``simulated``, one per letter; None for a real patient)."""

    letters: tuple[str, ...]
    marks: tuple[bool, ...]
    s_logmar: float
    simulated: tuple[bool, ...] | None = None

    @property
    def complete(self) -> bool:
        return len(self.marks) == len(self.letters)

    def line_text(self) -> str:
        """Each letter with what was keyed for it: ``D+  K-  N_`` (``_``: not keyed yet)."""
        signs = ["+" if m else "-" for m in self.marks] + ["_"] * (len(self.letters) - len(self.marks))
        return "  ".join(f"{x}{sign}" for x, sign in zip(self.letters, signs, strict=True))


def line_reply_text(correct: tuple[bool, ...]) -> str:
    """A line's answers in reading order: ``4 of 5 right: + + − + +``."""
    return f"{sum(correct)} of {len(correct)} right: " + " ".join("+" if c else MINUS for c in correct)


@dataclass(frozen=True)
class FinishedPage:
    """A finished session to show: the engine's ``view`` and, for a simulated patient, the
    ``truth`` line (its true correction and its acuity through the prescription found)."""

    view: FinishedView
    truth: str = ""


class SessionController(EventSource):
    """The session view's state (see the module doc). ``engine``: where commands go;
    ``pace_s``: the autopilot's pace, seconds (0: the simulated patient answers one step per
    key); ``exit_after``: announce ``"exit"`` after this many answers; ``export_dir``: the
    folder a finished session is exported to (asked when finishing); ``clock``: seconds,
    monotonic (the F F confirmation and the elapsed time)."""

    def __init__(
        self,
        engine: Engine,
        *,
        pace_s: float = 0.0,
        exit_after: int | None = None,
        export_dir: Callable[[], Path | str] = Path.cwd,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.pace_s = pace_s
        self.exit_after = exit_after
        self.export_dir = export_dir
        self.clock = clock
        super().__init__()
        self.phase = Phase.FINISHED
        self.snapshot: Snapshot | None = None
        self.sim_patient: SimulatedPatient | None = None
        self.sim_reply: SimulatedReply | None = None
        #: The simulated patient's answer to the comparison on screen (``"1"``, ``"2"`` or ``"="``).
        self.sim_choice: str | None = None
        #: The slider on screen: where its knob is, and the simulated patient's choice.
        self.slider_position: int | None = None
        self.sim_slider: int | None = None
        #: The chart line on screen: the clinician's keys so far, and the simulated patient's line.
        self.line_entry: LineEntry | None = None
        self.sim_line: tuple[bool, ...] | None = None
        self._line_index: int | None = None
        self.answers_this_run = 0
        #: The estimate drawn last (set by the window when it draws one) and the latest not yet drawn.
        self.last_estimate: EstimateView | None = None
        self.pending_estimate: EstimateView | None = None
        self.commands_in_flight = 0
        self.last_command: EngineCommand | None = None
        self._phase_before_busy = Phase.FINISHED
        self._finish_armed_until = float("-inf")
        self._opened_at = clock()
        self._recording = ""
        self._sim_session_id: int | None = None
        self._cylinder_form = "minus"
        #: The lens device as the engine last described it; the fault that paused the session (None: none).
        self.device: DeviceView | None = None
        self.device_fault: str | None = None
        self._awaiting_lenses = False
        self._lens_buttons = 0

    # ------------------------------------------------------------------ commands out
    def submit(self, command: EngineCommand) -> None:
        """Send a command the session waits for (BUSY until the engine answers)."""
        self.last_command = command
        if self.phase != Phase.BUSY:
            self._phase_before_busy = self.phase
        self.phase = Phase.BUSY
        self.send(command)

    def send(self, command: EngineCommand) -> None:
        """Send a command without changing the phase."""
        self.commands_in_flight += 1
        self.engine.submit(command)

    @property
    def worker_idle(self) -> bool:
        return self.commands_in_flight == 0

    @property
    def simulated(self) -> bool:
        """A simulated patient answers in this window (None once it is stopped)."""
        return self.sim_patient is not None

    def reset(self) -> None:
        """Back to the start page: no session."""
        self.snapshot = None
        self.phase = Phase.FINISHED

    def elapsed_s(self) -> float | None:
        """Seconds spent in the open session, this opening included (None without a session)."""
        if self.snapshot is None:
            return None
        return self.snapshot.prior_duration_s + self.clock() - self._opened_at

    # ------------------------------------------------------------------ engine events in
    def on_opened(self, snap: Snapshot) -> None:
        self._opened_at = self.clock()
        self.line_entry, self._line_index = None, None
        self.sim_patient = None
        self._sim_session_id = snap.session_id
        self._cylinder_form = snap.cylinder_form
        if snap.simulated and snap.simulated_case is not None:  # the patient recorded with the session
            self.sim_patient = case_patient(snap.simulated_case, snap.n_alternatives)
            log.info(
                "SIMULATED patient for session %d: true correction %s",
                snap.session_id,
                in_form(self.sim_patient.true_rx, snap.cylinder_form).format(),
            )
        self.last_estimate = self.pending_estimate = None
        self._emit(Shown.OPENED, snap)
        self.on_updated(snap)

    def on_updated(self, snap: Snapshot) -> None:
        self.snapshot = snap
        self._awaiting_lenses = False
        if snap.state != SessionState.PAUSED:
            self.device_fault = None
        if isinstance(self.last_command, RecordAnswer):
            self.answers_this_run += 1
        self.sim_reply = self.sim_choice = self.slider_position = self.sim_slider = None
        q = snap.query
        if q is not None and not (isinstance(q, PendingLine) and q.index == self._line_index):
            self.line_entry = self.sim_line = None  # another question; a pause (no query) keeps a line's keys
        self._emit(Shown.SNAPSHOT, snap)
        if snap.state == SessionState.PAUSED:
            self._enter(Phase.PAUSED)
        elif snap.stop_reason is not None:
            self._enter(Phase.STOPPED)
        elif snap.query is not None:
            self._enter(Phase.LENS)
        if self.exit_after is not None and self.answers_this_run >= self.exit_after:
            log.info("exit after %d answers", self.answers_this_run)
            self._emit(Shown.EXIT)

    def on_recorded(self, _trial: object = None) -> None:
        """The engine has committed the answer to the trial log: only now say "recorded", with the
        count of answers it makes (``"answers"`` announced with it, so both say the same number)."""
        snap = self.snapshot
        if snap is None:
            self.say("Answer recorded.")
            return
        count = snap.n_trials + 1
        self._emit(Shown.ANSWERS, (count, snap.max_trials))
        what = f": {self._recording}." if self._recording else "."
        self.say(f"{answer_text(count, snap.max_trials)} recorded{what}")

    def on_idle(self) -> None:
        self.commands_in_flight = max(0, self.commands_in_flight - 1)

    def on_estimate(self, view: EstimateView) -> None:
        """Keep the latest estimate until the window draws it (latest wins)."""
        self.pending_estimate = view

    def take_pending_estimate(self) -> EstimateView | None:
        view, self.pending_estimate = self.pending_estimate, None
        return view

    def on_finished(self, view: FinishedView) -> None:
        self.phase = Phase.FINISHED
        if view.visit_id is not None:  # an eye of a visit: the visit goes on (next eye, balance, finish)
            self._emit(Shown.VISIT_EYE_FINISHED, view)
            return
        self._emit(Shown.FINISHED, FinishedPage(view, self._truth(view)))
        exported = f" Exported to {self.export_dir()}." if view.exports else ""
        self.say(f"Session {view.session_id} finished." + exported)

    def _truth(self, view: FinishedView) -> str:
        patient = self.sim_patient
        if not (view.simulated and patient is not None and view.result and self._sim_session_id == view.session_id):
            return ""
        est = view.result["rounded"]
        found = Prescription(est["sphere_d"], est["cylinder_d"], est["axis_deg"])
        true_rx = in_form(patient.true_rx, view.result.get("cylinder_form") or self._cylinder_form)
        off = float(np.linalg.norm(found.power_vector_array() - patient.true_rx.power_vector_array()))
        return (
            f"SIMULATED patient's true correction: {lens_text(true_rx)}, {off:.2f} D from the prescription "
            f"found (power-vector distance); acuity through the prescription found: "
            f"{acuity_text(float(patient.acuity_logmar(found)))}."
        )

    def on_failed(self, _message: str = "") -> None:
        """The last command failed: the session is where it was before it."""
        self._awaiting_lenses = False
        if self.phase == Phase.BUSY:
            self.phase = self._phase_before_busy

    # ------------------------------------------------------------------ the lens device
    def on_device(self, view: DeviceView) -> None:
        """The engine's description of the lens device (after every change)."""
        self.device = view
        self._emit(Shown.DEVICE, view)

    def on_presented(self, trial_index: int) -> None:
        """The device confirmed the lenses of question ``trial_index``: show it now."""
        snap = self.snapshot
        if not self._awaiting_lenses or snap is None or snap.query is None or snap.query.index != trial_index:
            return
        self._awaiting_lenses = False
        self._reveal()

    def on_device_fault(self, message: str) -> None:
        """The device did not set the lenses: the session is paused (the engine's ``updated``
        follows), nothing was shown, every answer kept; the clinician is told and offered Retry."""
        self._awaiting_lenses = False
        self.device_fault = message
        self._emit(Shown.BLANK)
        self._emit(Shown.DEVICE_FAULT, message)
        self.say(f"Lens device fault: {message}")

    def retry_device(self) -> None:
        """Open the device again and resume the session it paused (the Retry button, or P)."""
        if self.device_fault is None or self.phase != Phase.PAUSED:
            self.say("Nothing to retry: the lens device has no fault.")
            return
        self.say("Opening the lens device again\u2026")
        self.submit(RetryDevice())

    def _manual_where(self) -> str:
        """Where the clinician sets a lens by hand: ``on the phoropter`` or ``in the trial frame``
        (the manual device's kind, :attr:`~visiontune.app.logic.worker_device.DeviceView.device_kind`)."""
        return "on the phoropter" if _phoropter(self.device) else "in the trial frame"

    def _place_text(self, lens) -> str:
        """``Place lens S −1.25 / C −0.50 × 030 in the trial frame`` or ``Set ... on the
        phoropter``: the lens to put before the eye, on the manual device's kind."""
        verb = "Set" if _phoropter(self.device) else "Place lens"
        return f"{verb} {lens_text(self._form(lens))} {self._manual_where()}"

    def _waits_for_device(self) -> bool:
        return self.device is not None and self.device.waits_for_device

    def device_lens(self, position: int) -> None:
        """Have the device show lens ``position`` of the comparison on screen (0: lens 1, 1: lens 2)."""
        if self.phase != Phase.COMPARE or not self._waits_for_device():
            self.say("The device shows lens 1 or lens 2 while a comparison is on screen.")
            return
        self.send(ShowLens(int(position)))
        self.say(f"The {self.device.label} is setting lens {int(position) + 1}\u2026")

    def _lens_buttons_for(self, phase: Phase) -> None:
        """Show the comparison's lens buttons in COMPARE with a device that sets lenses; hide them otherwise."""
        wanted = 2 if phase == Phase.COMPARE and self._waits_for_device() else 0
        if wanted != self._lens_buttons:
            self._lens_buttons = wanted
            self._emit(Shown.DEVICE_LENSES, wanted)

    # ------------------------------------------------------------------ phases
    def _enter(self, phase: Phase) -> None:
        self.phase = phase
        snap = self.snapshot
        self._lens_buttons_for(phase)
        if phase == Phase.LENS and isinstance(snap.query, PendingSlider):
            q = snap.query
            start = lens_text(self._form(q.start_lens))
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"Set the {q.knob} knob at its starting lens ({start}), then press Enter "
                    "(or Space) to show the letters.",
                    caption=f"Turn the {q.knob} knob",
                ),
            )
        elif phase == Phase.SLIDE:
            q = snap.query
            device = f" (the {self.device.label} follows the knob)" if self._waits_for_device() else ""
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"Turn the {q.knob} knob with ← / → (or , / .) while the patient "
                    f"reads{device}; press Enter (or Space) at the lens where the letters are "
                    "clearest.",
                    caption=f"Turn the {q.knob} knob" if device else None,
                    letter=f"Letters in view: {q.letter}  size {acuity_text(q.s_logmar)}",
                ),
            )
        elif phase == Phase.LENS and self._waits_for_device():
            what = "this lens"
            if isinstance(snap.query, PendingComparison):  # a held lens: the device sets the frame lens only
                what = (
                    "lens 1, then lens 2"
                    if snap.query.frame_lens is None
                    else f"the lens in the frame ({_held_text(snap)})"
                )
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"Press Enter (or Space): the {self.device.label} sets {what}; the letter "
                    "is shown once the device confirms it.",
                    caption="The device sets this lens",
                ),
            )
        elif phase == Phase.LENS and isinstance(snap.query, PendingComparison) and snap.query.frame_lens is not None:
            kept = _in_place(snap, snap.query.frame_lens)
            self._emit(
                Shown.PROMPT,
                Prompt(
                    ("The lens in place stays" if kept else "Set the lens in the frame")
                    + f": {_held_text(snap)}. Hold it before "
                    f"the lens ({self._manual_where()}), then press Enter (or Space) to show the letter.",
                    caption="Hold a lens before the lens in place",
                ),
            )
        elif phase == Phase.LENS and isinstance(snap.query, PendingComparison):
            kept = _in_place(snap, snap.query.lens1)
            self._emit(
                Shown.PROMPT,
                Prompt(
                    ("Lens 1 is the lens in place: keep it, have lens 2 ready" if kept else "Set lens 1 and lens 2")
                    + f" ({self._manual_where()}), then press Enter "
                    "(or Space) to show the letter.",
                    caption="Compare lens 1 and lens 2",
                ),
            )
        elif phase == Phase.LENS and isinstance(snap.query, PendingLine):
            kept = _in_place(snap, snap.query.lens)
            self._emit(
                Shown.PROMPT,
                Prompt(
                    ("The lens in place stays" if kept else self._place_text(snap.query.lens))
                    + ", then press Enter (or Space) to show the line.",
                    caption="Keep this lens: a chart line" if kept else "Set this lens: a chart line",
                ),
            )
        elif phase == Phase.LINE:
            q = snap.query
            device = self._waits_for_device()
            caption = "Lens confirmed by the device: a chart line" if device else "A chart line, read aloud"
            self._emit(
                Shown.PROMPT,
                Prompt(
                    "Key each letter as it is read: + or \u2212, or the letter named; or the number read "
                    f"right (0-{len(q.letters)}). Backspace takes one back, Enter records the line.",
                    caption=caption,
                    letter=f"Line of {len(q.letters)}: size {acuity_text(q.s_logmar)}",
                ),
            )
        elif phase == Phase.LENS and _in_place(snap, snap.query.lens):
            self._emit(
                Shown.PROMPT,
                Prompt("The lens in place stays: press Enter (or Space) to show the letter.", caption="Keep this lens"),
            )
        elif phase == Phase.LENS:
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"{self._place_text(snap.query.lens)}, then press Enter (or Space) to show the letter.",
                    caption="Set this lens",
                ),
            )
        elif phase == Phase.COMPARE and self._waits_for_device():
            q = snap.query
            self._emit(
                Shown.PROMPT,
                Prompt(
                    "The device set lens 1, then lens 2: lens 2 is in place. Switch with the "
                    "Lens 1 / Lens 2 buttons: \u201cwhich is clearer, 1 or 2?\u201d Press 1 or 2, "
                    "or = for no difference.",
                    caption="Compare lens 1 and lens 2 (on the device)",
                    letter=f"Letter in view: {q.letter}   size {acuity_text(q.s_logmar)}",
                ),
            )
        elif phase == Phase.COMPARE:
            q = snap.query
            self._emit(
                Shown.PROMPT,
                Prompt(
                    "Show lens 1, then lens 2: “which is clearer, 1 or 2?” Press 1 or 2, or = for no difference.",
                    letter=f"Letter in view: {q.letter}   size {acuity_text(q.s_logmar)}",
                ),
            )
        elif phase == Phase.ANSWER:
            q = snap.query
            caption = "Lens confirmed by the device" if self._waits_for_device() else None
            self._emit(
                Shown.PROMPT,
                Prompt(
                    "Type the letter the patient names, or + / \u2212 for correct / incorrect.",
                    caption=caption,
                    letter=f"Letter shown: {q.letter}   size {acuity_text(q.s_logmar)}",
                ),
            )
        elif phase == Phase.PAUSED and self.device_fault is not None:
            kept = snap.n_trials
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"The lens device did not set the lens: nothing was shown, all {kept} answers "
                    "are kept. Check the device and its cable, then Retry (or P), or go on by "
                    "hand with \u201cUse the trial frame\u201d; F finishes.",
                    caption="Paused: lens device fault",
                ),
            )
        elif phase == Phase.PAUSED:
            self._emit(Shown.PROMPT, Prompt("Session paused. Press P to resume, F to finish.", caption="Paused"))
        elif phase == Phase.STOPPED:
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"Stopping rule met ({snap.stop_reason}). Press F to finish (Backspace undoes the last answer)."
                ),
            )
        self._emit(Shown.AUTOPILOT, self.auto_delay_s())

    def auto_delay_s(self) -> float | None:
        """When the autopilot steps next from this phase (None: it does not)."""
        if (
            self.sim_patient is None
            or self.pace_s <= 0
            or self.phase not in (Phase.LENS, Phase.ANSWER, Phase.COMPARE, Phase.SLIDE, Phase.LINE, Phase.STOPPED)
        ):
            return None
        return self.pace_s

    def auto_step(self) -> None:
        """One step of the simulated patient's session (see the module doc)."""
        if self.sim_patient is None:
            return
        n = self.snapshot.n_trials if self.snapshot is not None else 0
        if not self.worker_idle or (n and (self.last_estimate is None or self.last_estimate.n_trials != n)):
            self._emit(Shown.AUTOPILOT, AUTO_RETRY_S)  # let the worker finish and the plots show this answer first
            return
        if self.phase == Phase.LENS:
            self.perform(Command(Action.CONFIRM_LENS), "auto")
        elif self.phase in (Phase.ANSWER, Phase.COMPARE, Phase.SLIDE, Phase.LINE):
            self.perform(Command(Action.SIMULATED_ANSWER), "auto")
        elif self.phase == Phase.STOPPED:
            self._finish(self.snapshot.stop_reason)

    # ------------------------------------------------------------------ keys
    def on_key(self, name: str, text: str, ctrl: bool = False) -> None:
        letters = self.snapshot.letters if self.snapshot is not None else ()
        result = interpret_key(name, text, phase=self.phase, letters=letters, simulated=self.simulated, ctrl=ctrl)
        self.dispatch_key(result, name, text, self.phase.value)

    def perform(self, command: Command, source: str) -> None:
        """Carry out one command (from a key, or ``"auto"``: the autopilot); logged."""
        snap = self.snapshot
        action = command.action
        detail = f" {command.letter}" if command.letter else ""
        log.info("%s -> %s%s (phase %s)", source, action.value, detail, self.phase.value)
        if action == Action.BLANK:
            self._emit(Shown.BLANK)
            if self.phase in (Phase.ANSWER, Phase.COMPARE, Phase.SLIDE, Phase.LINE):
                self._enter(Phase.LENS)
            self.say("Patient screen blanked.")
        elif action == Action.CONFIRM_LENS:
            self._show_letter()
        elif action in (Action.SLIDER_LEFT, Action.SLIDER_RIGHT):
            self._turn(-1 if action == Action.SLIDER_LEFT else 1)
        elif action == Action.SLIDER_CHOOSE:
            self._choose(self.slider_position, "")
        elif action == Action.SIMULATED_ANSWER and self.phase == Phase.SLIDE:
            self.slider_position = self.sim_slider
            self._emit(Shown.SLIDER, self._slider_view())
            self._choose(self.sim_slider, "simulated patient says ")
        elif action == Action.LINE_KEY:
            self._line_key(command.letter)
        elif action == Action.SIMULATED_ANSWER and self.phase == Phase.LINE:
            if self.line_entry.marks:  # the clinician has keyed letters: Enter records those, not the simulation's
                self._line_key("ENTER")
            else:
                self.line_entry.marks = list(self.sim_line)
                self._emit(Shown.LINE, self._line_view())
                self._record_line(LineReply(self.sim_line), "simulated patient reads ")
        elif action == Action.SIMULATED_ANSWER and self.phase == Phase.COMPARE:
            self._record(ComparisonReply(self.sim_choice), f"simulated patient says {_choice_text(self.sim_choice)}")
        elif action == Action.SIMULATED_ANSWER:
            reply = self.sim_reply
            self._record(Answer(letter_named=reply.letter_named), f"simulated patient says {reply.letter_named}")
        elif action == Action.ANSWER_COMPARISON:
            self._record(ComparisonReply(command.letter), _choice_text(command.letter))
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
            self.say(f"{answer_text(snap.n_trials, snap.max_trials)} undone (kept in the log, marked void).")
            self.submit(Undo())
        elif action == Action.PAUSE_TOGGLE:
            if self.phase == Phase.PAUSED and self.device_fault is not None:
                self.retry_device()
            elif self.phase == Phase.PAUSED:
                self.say("Resumed.")
                self.submit(ResumePaused())
            else:
                self._awaiting_lenses = False  # a confirmation arriving now shows nothing: the session pauses
                self._emit(Shown.BLANK)
                self.say("Paused.")
                self.submit(Pause())
        elif action == Action.FINISH:
            if self.clock() <= self._finish_armed_until or self.phase == Phase.STOPPED and source == "auto":
                self._finish(snap.stop_reason or "clinician")
            else:
                self._finish_armed_until = self.clock() + FINISH_CONFIRM_S
                self.say("Press F again to finish the session.", int(FINISH_CONFIRM_S * 1000))

    def _show_letter(self) -> None:
        """The lens is set: with a device that confirms it, ask the device first (the letter
        waits for :meth:`on_presented`); at the trial frame the Enter key confirmed it."""
        q = self.snapshot.query
        if self._waits_for_device():
            self._awaiting_lenses = True
            self._emit(
                Shown.PROMPT,
                Prompt(
                    f"The {self.device.label} is setting the lens\u2026 the letter is shown "
                    "once the device confirms it.",
                    caption="Device setting the lens",
                ),
            )
            self.submit(Present())
            return
        self._reveal(send_present=True)
        if self.device is not None:  # the trial frame: what the clinician confirmed, for the device panel
            lens = lens_text(self._form(question_lenses(q)[-1]))
            od, os_ = (lens, "occluded") if self.snapshot.eye == "OD" else ("occluded", lens)
            self.device = dataclasses.replace(self.device, od=od, os=os_, confirmed_at=datetime.now(UTC), trial=q.index)
            self._emit(Shown.DEVICE, self.device)

    def _reveal(self, send_present: bool = False) -> None:
        """Show the question: its letter on the patient screen (``send_present``: and tell the
        engine, at the trial frame), then the phase that takes its answer."""
        snap = self.snapshot
        q = snap.query
        self._emit(Shown.PRESENT, q)
        if send_present:
            self.send(Present())
        if isinstance(q, PendingSlider):
            self.slider_position = q.start
            if self._waits_for_device():  # the device set the whole path: back to the knob's start
                self.send(ShowLens(q.start))
            if self.sim_patient is not None:
                self.sim_slider = simulated_slider(self.sim_patient, q)
            self._enter(Phase.SLIDE)
            self._emit(Shown.SLIDER, self._slider_view())
            if self.sim_slider is not None:
                self._emit(
                    Shown.SIMULATED_REPLY,
                    f"Simulated patient says: clearest at lens {self.sim_slider + 1} "
                    f"({lens_text(self._form(q.lenses[self.sim_slider]))})",
                )
            return
        if isinstance(q, PendingLine):
            if self.line_entry is None or self._line_index != q.index or self.line_entry.letters != q.letters:
                self.line_entry = LineEntry(tuple(q.letters), tuple(snap.letters))
                self._line_index = q.index  # shown again (Escape, a pause), its keys are kept
            if self.sim_patient is not None:
                self.sim_line = simulated_line(self.sim_patient, q).correct
            self._enter(Phase.LINE)
            self._emit(Shown.LINE, self._line_view())
            if self.sim_line is not None:
                self._emit(Shown.SIMULATED_REPLY, f"Simulated patient reads: {line_reply_text(self.sim_line)}")
            return
        if isinstance(q, PendingComparison):
            self._enter(Phase.COMPARE)
            if self.sim_patient is not None:
                self.sim_choice = simulated_comparison(self.sim_patient, q)
                self._emit(Shown.SIMULATED_REPLY, f"Simulated patient says: {_choice_text(self.sim_choice)}")
            return
        self._enter(Phase.ANSWER)
        if self.sim_patient is not None:
            self.sim_reply = simulated_reply(
                self.sim_patient,
                s_logmar=q.s_logmar,
                lens=q.lens,
                letter_shown=q.letter,
                letters=snap.letters,
                seed=snap.seed,
                trial_index=q.index,
            )
            self._emit(Shown.SIMULATED_REPLY, f"Simulated patient says: {self.sim_reply.letter_named}")

    def _form(self, lens: Prescription) -> Prescription:
        return in_form(lens, self._cylinder_form)

    def _line_view(self) -> LineView:
        q = self.snapshot.query
        return LineView(tuple(q.letters), tuple(self.line_entry.marks), float(q.s_logmar), self.sim_line)

    def _line_key(self, key: str) -> None:
        """One key of a chart line to its :class:`~visiontune.app.logic.chart_line_entry.LineEntry`; the
        line recorded when the key completes it. A key the entry refuses is said, and nothing keyed
        changes; Backspace with no letter keyed undoes the last answer, as elsewhere."""
        entry = self.line_entry
        if key == "BACKSPACE" and not entry.marks:
            self.perform(Command(Action.UNDO), "key")
            return
        try:
            reply = entry.press(key)
        except InvalidInputError as exc:
            self.say(f"{exc}: nothing recorded, the letters keyed are kept ({entry.status}).")
            return
        self._emit(Shown.LINE, self._line_view())
        if reply is not None:
            self._record_line(reply, "")
            return
        if key == "BACKSPACE":
            self.say(f"Letter {len(entry.marks) + 1} taken back: {entry.status}.")
        elif entry.complete:
            self.say(f"Every letter keyed ({entry.status}): Enter records the line, Backspace takes one back.")
        else:
            self.say(f"Keyed: {entry.status}.")

    def _record_line(self, reply: LineReply, who: str) -> None:
        q = self.snapshot.query
        read = " ".join(x + ("+" if c else MINUS) for x, c in zip(q.letters, reply.correct, strict=True))
        self._record(reply, f"{who}line {sum(reply.correct)} of {len(reply.correct)} right ({read})")

    def _slider_view(self) -> SliderView:
        q = self.snapshot.query
        lenses = tuple(self._form(x) for x in q.lenses)
        return SliderView(q.knob, lenses, self.slider_position, q.start, self.sim_slider)

    def _turn(self, step: int) -> None:
        """The knob one click along its path (it stops at either end)."""
        q = self.snapshot.query
        position = self.slider_position + step
        if not 0 <= position < len(q.lenses):
            self.say(
                f"The {q.knob} knob is at the end of its path (lens {self.slider_position + 1} of {len(q.lenses)})."
            )
            return
        self.slider_position = position
        if self._waits_for_device():  # the device's knob: the lens follows
            self.send(ShowLens(position))
        self._emit(Shown.SLIDER, self._slider_view())
        self.say(f"Knob at lens {position + 1} of {len(q.lenses)}: {lens_text(self._form(q.lenses[position]))}.")

    def _choose(self, position: int, who: str) -> None:
        q = self.snapshot.query
        lens = lens_text(self._form(q.lenses[position]))
        self._record(SliderReply(position), f"{who}clearest at lens {position + 1} of {len(q.lenses)} ({lens})")

    def _record(self, answer: Answer | ComparisonReply | SliderReply | LineReply, what: str) -> None:
        self._emit(Shown.BLANK)
        self._recording = what
        self.say(f"Recording the answer: {what}\u2026")
        self.submit(RecordAnswer(answer))

    def _finish(self, stopped_by: str) -> None:
        self._finish_armed_until = float("-inf")
        log.info("finish requested (%s)", stopped_by)
        in_visit = self.snapshot is not None and self.snapshot.visit_id is not None  # exported with its visit
        self._emit(
            Shown.BUSY_PAGE, "Computing the result" + ("" if in_visit else " and exporting the report") + "\u2026"
        )
        self.submit(Finish(stopped_by, None if in_visit else str(self.export_dir())))


def _phoropter(device) -> bool:
    """True when the manual device is a phoropter (its kind set so), False at a trial frame."""
    return device is not None and getattr(device, "device_kind", "trial-frame") != "trial-frame"


def _held_text(snap: Snapshot) -> str:
    """The lens held before the frame lens of the pending comparison, in the clinic's cylinder form."""
    q = snap.query
    return held_text(q.lens1, q.lens2, q.frame_lens, lambda x: lens_text(in_form(x, snap.cylinder_form)), MINUS)


def _in_place(snap: Snapshot, lens) -> bool:
    """Whether ``lens`` is the lens the last answer left before the eye
    (:func:`~visiontune.refraction.lenses.lens_left_in_place`): the lens the session counts as in
    place when it prices a change of lens."""
    return snap.last_trial is not None and same_lens(lens_left_in_place(snap.last_trial), lens)


def _choice_text(choice: str) -> str:
    return "no difference" if choice == "=" else f"lens {choice} is clearer"
