"""The session controller without Qt: a fake engine records the commands, a fake clock times the
F F confirmation; the phases of a lens / letter / answer cycle, undo, pause, the keys refused
while the engine is busy (nothing recorded twice), and the autopilot driving a real in-process
engine to the same trials as the headless simulated session of the same seed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from app_helpers import write_protocol

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Phase
from visiontune.app.logic.messages import (
    Command,
    EngineEvent,
    EstimateReady,
    Failed,
    Finish,
    Finished,
    Idle,
    Opened,
    OpenStore,
    Pause,
    Present,
    RecordAnswer,
    Recorded,
    ResumePaused,
    StartSession,
    Undo,
    Updated,
)
from visiontune.app.logic.session_controller import (
    AUTO_RETRY_S,
    FINISH_CONFIRM_S,
    FinishedPage,
    Prompt,
    SessionController,
)
from visiontune.app.logic.session_host import SessionHost, record_simulated_session
from visiontune.app.logic.simulation import case_patient, new_case, simulated_reply
from visiontune.app.logic.worker_device import DeviceView
from visiontune.app.logic.worker_values import FinishedView, NewSession, Snapshot
from visiontune.optics import Prescription
from visiontune.refraction.loop import PendingComparison, PendingQuery, simulated_comparison
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.engine import Answer, ComparisonReply
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore

SLOAN = tuple("CDHKNORSVZ")


class FakeEngine:
    """Records what the controller sends; nothing answers unless the test says so."""

    def __init__(self) -> None:
        self.sent: list[Command] = []

    def submit(self, command: Command) -> None:
        self.sent.append(command)

    def names(self) -> list[type]:
        """The types of the commands sent, in order."""
        return [type(command) for command in self.sent]


class Clock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def snapshot(
    n_trials: int = 0,
    *,
    letter: str = "K",
    paused: bool = False,
    stop_reason: str | None = None,
    simulated_case: dict | None = None,
    visit_id: int | None = None,
    prior_s: float = 0.0,
) -> Snapshot:
    query = None
    if not paused and stop_reason is None:
        query = PendingQuery(index=n_trials, s_logmar=0.3, lens=Prescription(-1.0, -0.5, 90.0), letter=letter)
    return Snapshot(
        session_id=1,
        patient_id="P-1",
        eye="OD",
        simulated=simulated_case is not None,
        seed=7,
        protocol_name="app-test",
        state=SessionState.PAUSED if paused else SessionState.OPEN,
        n_trials=n_trials,
        max_trials=40,
        query=query,
        stop_reason=stop_reason,
        letters=SLOAN,
        letter_set="sloan",
        n_alternatives=len(SLOAN),
        cylinder_form="minus",
        context_box=(-1.0, 2.0),
        prior_duration_s=prior_s,
        simulated_case=simulated_case,
        visit_id=visit_id,
    )


def make(**kwargs):
    engine, clock, events = FakeEngine(), Clock(100.0), []
    controller = SessionController(engine, clock=clock, export_dir=lambda: "/exports", **kwargs)
    controller.connect(lambda kind, value: events.append((kind, value)))
    return controller, engine, clock, events


def statuses(events) -> list[str]:
    return [value[0] for kind, value in events if kind == Shown.STATUS]


def last(events, kind: str):
    return next(v for k, v in reversed(events) if k == kind)


def answer_cycle(controller, engine, key: tuple[str, str]) -> Answer:
    """Enter shows the letter, ``key`` answers; the engine's answer is returned (not yet delivered)."""
    controller.on_key("Return", "\r", False)
    controller.on_key(*key, False)
    command = engine.sent[-1]
    assert isinstance(command, RecordAnswer)
    return command.answer


def deliver(controller, snap: Snapshot, commands: int) -> None:
    """The engine's answer to the last command(s): the new snapshot, one idle per command."""
    controller.on_updated(snap)
    for _ in range(commands):
        controller.on_idle()


def test_the_controller_imports_no_qt():
    code = (
        "import sys, visiontune.app.logic.session_controller as c; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _shown(*lenses: Prescription) -> Trial:
    """A stored trial that showed ``lenses`` (one: a letter; two: a comparison), the last left in place."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return Trial(
        0,
        0.3,
        lenses[0],
        "K",
        True,
        None,
        at,
        at,
        session_id=1,
        lens2=lenses[1] if len(lenses) > 1 else None,
        comparison="1" if len(lenses) > 1 else None,
    )


@pytest.mark.parametrize(
    "shown, query, text, caption",
    [
        (
            (Prescription(-1.0, -0.5, 90.0),),
            PendingQuery(1, 0.3, Prescription(-1.0, -0.5, 90.0), "K"),
            "The lens in place stays: press Enter",
            "Keep this lens",
        ),
        (
            (Prescription(-1.5, 0.5, 0.0),),
            PendingQuery(1, 0.3, Prescription(-1.0, -0.5, 90.0), "K"),  # the same lens, plus form
            "The lens in place stays: press Enter",
            "Keep this lens",
        ),
        (
            (Prescription(-1.25, -0.5, 90.0),),
            PendingQuery(1, 0.3, Prescription(-1.0, -0.5, 90.0), "K"),
            "Place lens S \u22121.00 / C \u22120.50 \u00d7 090 in the trial frame, then press Enter",
            "Set this lens",
        ),
        (
            (Prescription(-2.0, 0.0, 0.0), Prescription(-1.0, -0.5, 90.0)),
            PendingComparison(1, 0.3, Prescription(-1.0, -0.5, 90.0), Prescription(-0.75, -0.5, 90.0), "K"),
            "Lens 1 is the lens in place: keep it, have lens 2 ready",
            "Compare lens 1 and lens 2",
        ),
        (
            (
                Prescription(-1.0, -0.5, 90.0),
                Prescription(-2.0, 0.0, 0.0),
            ),  # lens 1 shown first, but lens 2 was left in place
            PendingComparison(1, 0.3, Prescription(-1.0, -0.5, 90.0), Prescription(-0.75, -0.5, 90.0), "K"),
            "Set lens 1 and lens 2",
            "Compare lens 1 and lens 2",
        ),
        (
            (Prescription(-1.0, -0.5, 90.0),),  # a +/-0.50 D flipper held before the lens in place
            PendingComparison(
                1,
                0.3,
                Prescription(-0.5, -0.5, 90.0),
                Prescription(-1.5, -0.5, 90.0),
                "K",
                None,
                Prescription(-1.0, -0.5, 90.0),
            ),
            "The lens in place stays: \u00b10.50 D flipper before S \u22121.00 / C \u22120.50 \u00d7 090: "
            "1 +0.50, 2 \u22120.50. Hold it before the lens",
            "Hold a lens before the lens in place",
        ),
        (
            (Prescription(-2.0, 0.0, 0.0),),  # the frame lens is not in place: set it first
            PendingComparison(
                1,
                0.3,
                Prescription(-1.0, -0.5, 90.0),
                Prescription(-0.5, -0.5, 90.0),
                "K",
                None,
                Prescription(-1.0, -0.5, 90.0),
            ),
            "Set the lens in the frame: +0.50 D sphere before S \u22121.00 / C \u22120.50 \u00d7 090: "
            "1 without, 2 with.",
            "Hold a lens before the lens in place",
        ),
    ],
)
def test_the_prompt_says_when_the_lens_in_place_stays(shown, query, text, caption):
    controller, _, _, events = make()
    controller.submit(StartSession("request"))
    controller.on_opened(dataclasses.replace(snapshot(1), query=query, last_trial=_shown(*shown)))
    controller.on_idle()
    prompt = last(events, Shown.PROMPT)
    assert prompt.instruction.startswith(text) and prompt.caption == caption


@pytest.mark.parametrize(
    ("frame", "text"),
    [
        (None, "sets lens 1, then lens 2;"),
        (
            Prescription(-1.0, -0.5, 90.0),  # a +/-0.50 D flipper held before it: the device sets the frame lens
            "sets the lens in the frame (\u00b10.50 D flipper before S \u22121.00 / C \u22120.50 \u00d7 090: "
            "1 +0.50, 2 \u22120.50);",
        ),
    ],
)
def test_a_device_that_confirms_says_which_lenses_it_sets_for_a_comparison(frame, text):
    controller, _, _, events = make()
    controller.on_device(DeviceView("cv5000:/dev/ttyUSB0", "cv5000", "/dev/ttyUSB0", "device", connected=True))
    pair = PendingComparison(1, 0.3, Prescription(-0.5, -0.5, 90.0), Prescription(-1.5, -0.5, 90.0), "K", None, frame)
    controller.on_opened(dataclasses.replace(snapshot(1), query=pair))
    controller.on_idle()
    prompt = last(events, Shown.PROMPT)
    assert text in prompt.instruction and prompt.caption == "The device sets this lens"


def test_a_lens_letter_answer_cycle_goes_through_its_phases_and_sends_each_command_once():
    controller, engine, _, events = make()
    controller.submit(StartSession("request"))
    assert controller.phase == Phase.BUSY and engine.names() == [StartSession]
    controller.on_opened(snapshot(0))
    controller.on_idle()
    assert controller.phase == Phase.LENS and controller.worker_idle
    kinds = [k for k, _ in events]
    assert kinds[:3] == [Shown.OPENED, Shown.SNAPSHOT, Shown.PROMPT]
    assert events[2][1] == Prompt(
        "Place lens S \u22121.00 / C \u22120.50 \u00d7 090 in the trial frame, then press "
        "Enter (or Space) to show the letter.",
        caption="Set this lens",
    )

    events.clear()
    controller.on_key("Return", "\r", False)
    assert controller.phase == Phase.ANSWER and engine.names() == [StartSession, Present]
    assert (Shown.PRESENT, snapshot(0).query) in events
    prompt = next(v for k, v in events if k == Shown.PROMPT)
    assert prompt.letter.startswith("Letter shown: K") and prompt.caption is None
    assert not any(k == Shown.SIMULATED_REPLY for k, _ in events)  # a real patient: no simulated answer

    controller.on_key("D", "d", False)
    assert controller.phase == Phase.BUSY
    assert engine.sent[-1] == RecordAnswer(Answer(letter_named="D"))
    assert statuses(events)[-1] == "Recording the answer: named D\u2026"
    controller.on_recorded(None)
    assert statuses(events)[-1] == "Answer 1 of 40 recorded: named D."  # "recorded" only once the engine confirms
    assert last(events, Shown.ANSWERS) == (1, 40)  # the page's count moves with it
    deliver(controller, snapshot(1, letter="S"), commands=2)  # present + record
    assert controller.phase == Phase.LENS and controller.answers_this_run == 1
    assert next(v for k, v in reversed(events) if k == Shown.PROMPT).caption == "Set this lens"

    # + and - judge the answer; Escape takes the letter back without recording anything
    assert answer_cycle(controller, engine, ("Plus", "+")) == Answer(correct=True)
    deliver(controller, snapshot(2), commands=2)
    assert answer_cycle(controller, engine, ("Minus", "-")) == Answer(correct=False)
    deliver(controller, snapshot(3), commands=2)
    controller.on_key("Return", "\r", False)
    n_sent = len(engine.sent)
    controller.on_key("Escape", "\x1b", False)
    assert controller.phase == Phase.LENS and len(engine.sent) == n_sent
    assert (Shown.BLANK, None) in events and engine.names().count(RecordAnswer) == 3


def test_a_mistyped_key_is_refused_with_a_message_and_nothing_is_sent():
    controller, engine, _, events = make()
    controller.on_opened(snapshot(0))
    controller.on_key("K", "k", False)  # a letter before the lens is confirmed
    assert controller.phase == Phase.LENS and engine.sent == []
    assert "set the lens" in statuses(events)[-1]
    controller.on_key("Return", "\r", False)
    controller.on_key("Q", "q", False)  # not a Sloan letter
    assert controller.phase == Phase.ANSWER and engine.names() == [Present]
    assert "'Q' is not a letter of this chart" in statuses(events)[-1]
    controller.on_key("Return", "\r", False)  # Enter types an answer only for a simulated patient
    assert engine.names() == [Present] and "type the letter the patient names" in statuses(events)[-1]


def test_keys_while_the_engine_is_busy_never_record_an_answer_twice():
    controller, engine, _, events = make()
    controller.on_opened(snapshot(0))
    controller.on_key("Return", "\r", False)
    for name, text in [("D", "d"), ("D", "d"), ("Plus", "+"), ("Return", "\r"), ("Space", " "), ("Backspace", "")]:
        controller.on_key(name, text, False)
    assert engine.names() == [Present, RecordAnswer]
    assert statuses(events)[-1] == "Computing the next lens, one moment."
    deliver(controller, snapshot(1), commands=2)
    controller.on_key("D", "d", False)  # the new lens is not confirmed yet: still nothing
    assert engine.names() == [Present, RecordAnswer]


def test_a_failed_command_returns_to_the_phase_before_it():
    controller, engine, _, _ = make()
    controller.on_opened(snapshot(0))
    controller.on_key("Return", "\r", False)
    controller.on_key("D", "d", False)
    assert controller.phase == Phase.BUSY
    controller.on_failed("the disk is full")
    controller.on_idle()
    assert controller.phase == Phase.ANSWER
    controller.on_key("D", "d", False)  # the clinician types the answer again
    assert engine.names() == [Present, RecordAnswer, RecordAnswer]


def test_undo_says_which_answer_and_needs_an_answer_to_undo():
    controller, engine, _, events = make()
    controller.on_opened(snapshot(0))
    controller.on_key("Backspace", "", False)
    assert engine.sent == [] and statuses(events)[-1] == "Nothing to undo."
    controller.on_updated(snapshot(3))
    controller.on_key("Backspace", "", False)
    assert engine.names() == [Undo] and controller.phase == Phase.BUSY
    assert statuses(events)[-1] == "Answer 3 of 40 undone (kept in the log, marked void)."
    deliver(controller, snapshot(2), commands=1)
    assert controller.phase == Phase.LENS and controller.answers_this_run == 0  # an undo is not an answer
    # a met stopping rule still allows the last answer to be undone
    controller.on_updated(snapshot(2, stop_reason="max_trials"))
    assert controller.phase == Phase.STOPPED
    controller.on_key("Return", "\r", False)
    assert engine.names() == [Undo]
    controller.on_key("Backspace", "", False)
    assert engine.names() == [Undo, Undo]


def test_pause_blanks_the_patient_screen_refuses_answers_and_resumes():
    controller, engine, _, events = make()
    controller.on_opened(snapshot(2))
    controller.on_key("Return", "\r", False)
    events.clear()
    controller.on_key("P", "p", False)
    assert engine.names() == [Present, Pause] and (Shown.BLANK, None) in events
    assert statuses(events) == ["Paused."]
    deliver(controller, snapshot(2, paused=True), commands=2)
    assert controller.phase == Phase.PAUSED
    assert next(v for k, v in reversed(events) if k == Shown.PROMPT).caption == "Paused"
    controller.on_key("D", "d", False)
    controller.on_key("Return", "\r", False)
    assert engine.names() == [Present, Pause] and "paused" in statuses(events)[-1].lower()
    controller.on_key("P", "p", False)
    assert engine.names()[-1] == ResumePaused and statuses(events)[-1] == "Resumed."
    deliver(controller, snapshot(2), commands=1)
    assert controller.phase == Phase.LENS


def test_finish_needs_a_second_f_within_the_confirmation_time():
    controller, engine, clock, events = make()
    controller.on_opened(snapshot(4))
    controller.on_key("F", "f", False)
    assert engine.sent == [] and controller.phase == Phase.LENS
    assert events[-1] == (Shown.STATUS, ("Press F again to finish the session.", int(FINISH_CONFIRM_S * 1000)))
    clock.t += FINISH_CONFIRM_S + 0.01  # too late: the second F arms again
    controller.on_key("F", "f", False)
    assert engine.sent == [] and statuses(events)[-1] == "Press F again to finish the session."
    clock.t += FINISH_CONFIRM_S - 0.01  # in time
    controller.on_key("F", "f", False)
    assert engine.sent == [Finish("clinician", "/exports")] and controller.phase == Phase.BUSY
    assert (Shown.BUSY_PAGE, "Computing the result and exporting the report\u2026") in events
    # the confirmation is spent: after a failed finish one F only arms again
    controller.on_failed("export failed")
    controller.on_idle()
    clock.t += 0.001  # well within the time the spent confirmation was armed for
    controller.on_key("F", "f", False)
    assert engine.names() == [Finish] and statuses(events)[-1] == "Press F again to finish the session."


def test_a_stopped_session_of_a_visit_finishes_without_exporting_and_hands_over_to_the_visit():
    controller, engine, clock, events = make()
    controller.on_opened(snapshot(6, stop_reason="precision", visit_id=3))
    assert controller.phase == Phase.STOPPED
    controller.on_key("F", "f", False)
    clock.t += 1.0
    controller.on_key("F", "f", False)
    assert engine.sent == [Finish("precision", None)]  # exported with its visit
    view = FinishedView(1, "P-1", "OD", False, {"rounded": {}}, visit_id=3)
    controller.on_finished(view)
    assert controller.phase == Phase.FINISHED and events[-1] == (Shown.VISIT_EYE_FINISHED, view)


def test_the_elapsed_time_counts_from_the_opening_on_top_of_the_time_before():
    controller, _, clock, _ = make()
    assert controller.elapsed_s() is None
    controller.on_opened(snapshot(2, prior_s=60.0))
    clock.t += 12.5
    assert controller.elapsed_s() == pytest.approx(72.5)
    controller.reset()
    assert controller.elapsed_s() is None and controller.phase == Phase.FINISHED


def test_the_latest_estimate_wins_and_is_taken_once():
    controller, _, _, _ = make()
    controller.on_estimate("first")
    controller.on_estimate("second")
    assert controller.take_pending_estimate() == "second" and controller.take_pending_estimate() is None


@pytest.fixture(scope="module")
def case():
    return new_case(11, load_protocol("clinical-sloan"))


def test_the_autopilot_answers_as_the_simulated_patient_at_its_pace(case):
    controller, engine, _, events = make(pace_s=0.4)
    snap = snapshot(0, simulated_case=case.to_dict(), letter="H")
    controller.on_opened(snap)
    assert controller.simulated and events[-1] == (Shown.AUTOPILOT, 0.4)
    controller.auto_step()
    assert controller.phase == Phase.ANSWER and engine.names() == [Present]
    assert last(events, Shown.AUTOPILOT) == 0.4  # the answer comes at the same pace
    controller.auto_step()  # the engine has not said "idle" for the present: wait
    assert engine.names() == [Present] and events[-1] == (Shown.AUTOPILOT, AUTO_RETRY_S)
    controller.on_idle()
    controller.auto_step()
    q = snap.query
    want = simulated_reply(
        case_patient(snap.simulated_case, snap.n_alternatives),
        s_logmar=q.s_logmar,
        lens=q.lens,
        letter_shown=q.letter,
        letters=SLOAN,
        seed=snap.seed,
        trial_index=q.index,
    )
    assert engine.sent[-1] == RecordAnswer(Answer(letter_named=want.letter_named))
    assert (Shown.SIMULATED_REPLY, f"Simulated patient says: {want.letter_named}") in events
    # the next lens waits for the plots to show the answer just recorded
    deliver(controller, snapshot(1, simulated_case=case.to_dict()), commands=1)
    controller.auto_step()
    assert engine.names() == [Present, RecordAnswer] and events[-1] == (Shown.AUTOPILOT, AUTO_RETRY_S)
    controller.last_estimate = type("Drawn", (), {"n_trials": 1})()
    controller.auto_step()
    assert engine.names() == [Present, RecordAnswer, Present]
    # stopping the simulated patient stops the autopilot; Enter then is a key like any other
    controller.sim_patient = None
    controller.auto_step()
    assert engine.names() == [Present, RecordAnswer, Present]


def test_with_no_pace_the_simulated_patient_answers_one_step_per_key(case):
    controller, engine, _, events = make(pace_s=0.0)
    controller.on_opened(snapshot(0, simulated_case=case.to_dict()))
    assert events[-1] == (Shown.AUTOPILOT, None)
    controller.on_key("Space", " ", False)
    reply = controller.sim_reply.letter_named
    controller.on_key("Space", " ", False)
    assert engine.sent == [Present(), RecordAnswer(Answer(letter_named=reply))]


class HostEngine:
    """A real session engine in this process; commands wait until :meth:`run` (as in the pipe)."""

    def __init__(self) -> None:
        self.queue: list[Command] = []
        self.events: list[EngineEvent] = []
        self.host = SessionHost(self.events.append)

    def submit(self, command: Command) -> None:
        self.queue.append(command)

    def run(self, controller: SessionController) -> None:
        """Run the queued commands; hand their events to the controller (an estimate drawn at once)."""
        handlers = {
            Opened: controller.on_opened,
            Updated: controller.on_updated,
            Recorded: controller.on_recorded,
            Finished: controller.on_finished,
            Failed: controller.on_failed,
        }
        while self.queue:
            self.events.clear()
            self.host.handle(self.queue.pop(0))
            for event in list(self.events):
                if type(event) in handlers:
                    handlers[type(event)](event.value)
                elif isinstance(event, Idle):
                    controller.on_idle()
                elif isinstance(event, EstimateReady):
                    controller.on_estimate(event.estimate)
                    controller.last_estimate = controller.take_pending_estimate()


def test_the_autopilot_runs_a_session_to_its_end_as_the_headless_simulation_does(tmp_path):
    protocol = write_protocol(tmp_path, max_trials=4, name="auto.toml")
    headless = record_simulated_session(tmp_path / "headless.sqlite3", str(protocol), 4, seed=5, finish=False)
    engine, clock, events = HostEngine(), Clock(), []
    controller = SessionController(engine, pace_s=0.25, clock=clock, export_dir=lambda: tmp_path / "exports")
    controller.connect(lambda kind, value: events.append((kind, value)))
    engine.host.handle(OpenStore(str(tmp_path / "app.sqlite3")))
    try:
        controller.submit(StartSession(NewSession("SIM-REPLAY", "OD", str(protocol), simulated=True, seed=5)))
        engine.run(controller)
        for _ in range(40):
            if controller.phase == Phase.FINISHED:
                break
            assert last(events, Shown.AUTOPILOT) == 0.25  # the engine and the plots are never behind here
            controller.auto_step()
            engine.run(controller)
    finally:
        engine.host.shutdown()
    mine = [v for k, v in events if k == Shown.FINISHED]
    assert len(mine) == 1 and isinstance(mine[0], FinishedPage)
    page = mine[0]
    reason = last(events, Shown.SNAPSHOT).stop_reason  # the autopilot finished the stopped session by itself
    assert reason is not None and page.view.result["stopped_by"] == reason
    assert page.truth.startswith("SIMULATED patient's true correction") and page.view.exports
    assert statuses(events)[-1] == f"Session {page.view.session_id} finished. Exported to {tmp_path / 'exports'}."
    assert controller.answers_this_run == 4
    want = [(t.letter_shown, t.letter_named, t.correct) for t in (e.value for e in headless if isinstance(e, Recorded))]
    assert len(want) == 4
    with TrialStore.open(tmp_path / "app.sqlite3") as store:
        got = [(t.letter_shown, t.letter_named, t.correct) for t in store.trials(page.view.session_id)]
    assert got == want


def comparison_snapshot(n_trials: int = 0, *, simulated_case: dict | None = None) -> Snapshot:
    query = PendingComparison(
        index=n_trials,
        s_logmar=0.2,
        lens1=Prescription(-1.0, -0.5, 90.0),
        lens2=Prescription(-0.5, -0.5, 90.0),
        letter="R",
    )
    return dataclasses.replace(snapshot(n_trials, simulated_case=simulated_case), query=query)


@pytest.mark.parametrize(("key", "choice"), [(("1", "1"), "1"), (("2", "2"), "2"), (("Equal", "="), "=")])
def test_a_comparison_is_shown_and_answered_with_1_2_or_equal(key, choice):
    controller, engine, _, events = make()
    controller.on_opened(comparison_snapshot(0))
    assert controller.phase == Phase.LENS
    assert last(events, Shown.PROMPT).caption == "Compare lens 1 and lens 2"
    controller.on_key("Return", "\r", False)
    assert controller.phase == Phase.COMPARE and engine.names() == [Present]
    assert last(events, Shown.PRESENT).letter == "R"  # the letter stays in view while the lenses change
    assert last(events, Shown.PROMPT).letter.startswith("Letter in view: R")
    controller.on_key("K", "k", False)  # a letter means nothing here: refused, nothing sent
    assert engine.names() == [Present] and "press 1 or 2 for the clearer lens" in statuses(events)[-1]
    controller.on_key(*key, False)
    assert engine.sent[-1] == RecordAnswer(ComparisonReply(choice)) and controller.phase == Phase.BUSY
    controller.on_key("1", "1", False)  # busy: the answer is not sent twice
    assert engine.names() == [Present, RecordAnswer]


def test_escape_during_a_comparison_goes_back_to_setting_the_lenses():
    controller, engine, _, events = make()
    controller.on_opened(comparison_snapshot(2))
    controller.on_key("Space", " ", False)
    controller.on_key("Escape", "", False)
    assert controller.phase == Phase.LENS and (Shown.BLANK, None) in events
    controller.on_key("Backspace", "", False)
    assert engine.sent[-1] == Undo()


def test_the_simulated_patient_answers_a_comparison(case):
    controller, engine, _, events = make(pace_s=0.0)
    snap = comparison_snapshot(0, simulated_case=case.to_dict())
    controller.on_opened(snap)
    controller.on_key("Space", " ", False)
    want = simulated_comparison(case_patient(snap.simulated_case, snap.n_alternatives), snap.query)
    text = "no difference" if want == "=" else f"lens {want} is clearer"
    assert (Shown.SIMULATED_REPLY, f"Simulated patient says: {text}") in events
    controller.on_key("Space", " ", False)
    assert engine.sent == [Present(), RecordAnswer(ComparisonReply(want))]


def test_the_autopilot_runs_a_comparison_session_as_the_headless_simulation_does(tmp_path):
    """A protocol with comparisons: the app's autopilot records the trials, comparisons included,
    that the headless simulated session of the same seed records."""
    headless = record_simulated_session(
        tmp_path / "headless.sqlite3", "clinical-sloan-compare", 6, seed=5, finish=False
    )
    engine, events = HostEngine(), []
    controller = SessionController(engine, pace_s=0.25, clock=Clock(), export_dir=lambda: tmp_path / "exports")
    controller.connect(lambda kind, value: events.append((kind, value)))
    engine.host.handle(OpenStore(str(tmp_path / "app.sqlite3")))
    try:
        controller.submit(
            StartSession(NewSession("SIM-REPLAY", "OD", "clinical-sloan-compare", simulated=True, seed=5))
        )
        engine.run(controller)
        while controller.answers_this_run < 6:
            controller.auto_step()
            engine.run(controller)
        sid = controller.snapshot.session_id
    finally:
        engine.host.shutdown()
    want = [(t.comparison, t.letter_named, t.correct) for t in (e.value for e in headless if isinstance(e, Recorded))]
    with TrialStore.open(tmp_path / "app.sqlite3") as store:
        got = [(t.comparison, t.letter_named, t.correct) for t in store.trials(sid)]
    assert got == want and any(c is not None for c, _, _ in got)
