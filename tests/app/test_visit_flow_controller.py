"""The visit's controller without Qt: a fake engine records the commands; each page action is one
command, no second answer while one is with the engine, a skip needs its reason, the autopilot
steps at its pace only where a simulated patient answers, and the autopilots of the session and
the visit drive a real in-process engine through a whole simulated visit to the trials and
balance answers of the headless ``visiontune visit run --simulate`` of the same seed (which
scores each letter without naming one)."""

from __future__ import annotations

import subprocess
import sys

from app_helpers import write_visit_protocol

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Phase
from visiontune.app.logic.messages import (
    BalanceAnswer,
    Command,
    CreateVisit,
    EngineEvent,
    EstimateReady,
    ExportVisit,
    Failed,
    Finished,
    Idle,
    NextEye,
    Opened,
    OpenStore,
    RecordAcuity,
    Recorded,
    ShowVisit,
    SignOff,
    SkipEye,
    Updated,
    VisitViewed,
)
from visiontune.app.logic.session_controller import SessionController
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.visit_flow import (
    BalanceQuestionView,
    BalanceSummary,
    NewVisit,
    Step,
    VisitAction,
    VisitCommand,
    VisitView,
)
from visiontune.app.logic.visit_flow_controller import VisitFlowController, window_title
from visiontune.app.logic.worker_values import FinishedView
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.session.near_store import near_add_records
from visiontune.session.simulated_visit import drive_simulated_visit, visit_cases
from visiontune.session.store import TrialStore
from visiontune.session.visit import create_visit, eye_statuses


class FakeCommands:
    """Records what the controller sends, and how: ``submit`` (the session waits) or ``send``."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Command]] = []

    def submit(self, command: Command) -> None:
        self.sent.append(("submit", command))

    def send(self, command: Command) -> None:
        self.sent.append(("send", command))

    def names(self) -> list[type]:
        """The types of the commands sent, in order."""
        return [type(command) for _, command in self.sent]


def visit_view(
    step: Step,
    *,
    simulated: bool = True,
    eye: str | None = None,
    answer: str | None = "OS",
    index: int = 0,
    opening: bool = False,
    message: str = "",
) -> VisitView:
    question = None
    if step == Step.BALANCE:
        lens = Prescription(-1.0, -0.5, 90.0)
        question = BalanceQuestionView(index, 0.75, 0.75, lens, lens, answer if simulated else None)
    return VisitView(
        visit_id=4,
        patient_id="SIM-9",
        simulated=simulated,
        cylinder_form="minus",
        age_years=None,
        step=step,
        eyes={},
        balance=BalanceSummary("fogged alternate occlusion"),
        eye=eye,
        question=question,
        opening=opening,
        message=message,
    )


def make(pace_s: float = 0.0):
    commands, events = FakeCommands(), []
    flow = VisitFlowController(commands, pace_s=pace_s, export_dir=lambda: "/exports")
    flow.connect(lambda kind, value: events.append((kind, value)))
    return flow, commands, events


def statuses(events) -> list[str]:
    return [value[0] for kind, value in events if kind == Shown.STATUS]


def last(events, kind: str):
    return next(v for k, v in reversed(events) if k == kind)


def test_the_visit_controller_imports_no_qt():
    code = (
        "import sys, visiontune.app.logic.visit_flow_controller; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_second_answer_is_sent_while_one_is_with_the_engine():
    flow, commands, events = make()
    flow.on_view(visit_view(Step.BALANCE, index=2))
    flow.on_key("R", "r", False)
    assert commands.sent == [("send", BalanceAnswer(4, 2, "OD"))] and flow.pending
    assert statuses(events)[-1] == "Balance answer 3: right eye clearer; recording\u2026"
    for name, text in (("L", "l"), ("Equal", "="), ("Return", "\r"), ("N", "n")):
        flow.on_key(name, text, False)
    flow.auto_step()
    assert len(commands.sent) == 1 and statuses(events)[-1] == "One moment: the last answer is being recorded."
    flow.on_view(visit_view(Step.BALANCE, index=3))  # the answer is in the trial log: the next question
    assert not flow.pending
    flow.on_key("L", "l", False)
    assert commands.sent[-1] == ("send", BalanceAnswer(4, 3, "OS")) and flow.pending
    flow.on_failed("the disk is full")  # a failed command frees the page: the answer may be typed again
    assert not flow.pending
    flow.on_key("L", "l", False)
    assert commands.names() == [BalanceAnswer] * 3


def test_each_action_is_one_engine_command():
    flow, commands, events = make()
    request = NewVisit("SIM-9", "visit-test", True, seed=3)
    flow.start(request)
    assert commands.sent == [("submit", CreateVisit(request))] and flow.view is None and not flow.pending
    assert last(events, Shown.BUSY_PAGE) == "Preparing the visit of SIM-9 (right eye, then left eye)\u2026"
    flow.eye_finished(FinishedView(1, "SIM-9", "OD", True, {"rounded": {}}, visit_id=4))
    assert commands.sent[-1] == ("send", ShowVisit(4)) and flow.pending
    assert last(events, Shown.BUSY_PAGE) == "Right eye (OD) done. Preparing the next step\u2026"

    flow.on_view(visit_view(Step.REFRACT, eye="OS"))
    flow.perform(VisitCommand(VisitAction.CONTINUE), "test")
    assert commands.sent[-1] == ("submit", NextEye(4)) and flow.pending  # the session waits for the eye
    assert last(events, Shown.BUSY_PAGE) == "Opening the left eye (OS)\u2026"
    flow.on_view(visit_view(Step.BALANCE))
    flow.perform(VisitCommand(VisitAction.ANSWER, "equal"), "test")
    assert commands.sent[-1] == ("send", BalanceAnswer(4, 0, "equal"))
    flow.on_view(visit_view(Step.BALANCE, index=1))
    flow.perform(VisitCommand(VisitAction.NO_BALANCE), "test")
    assert commands.sent[-1] == ("send", BalanceAnswer(4, None, None))
    assert statuses(events)[-1] == "No binocular balance: recorded as not done."

    flow.on_view(visit_view(Step.FINISH))
    rx = Prescription(-1.25, -0.5, 90.0)
    flow.sign_off("OD", rx, "Dr A")
    assert commands.sent[-1] == ("send", SignOff(4, "OD", rx, "Dr A")) and flow.pending
    flow.on_view(visit_view(Step.FINISH))
    flow.record_acuity("OS", 0.1)
    assert commands.sent[-1] == ("send", RecordAcuity(4, "OS", 0.1))
    flow.on_view(visit_view(Step.FINISH))
    flow.export()
    assert commands.sent[-1] == ("send", ExportVisit(4, "/exports"))
    assert statuses(events)[-1] == "Exporting the visit's records to /exports\u2026"


def test_the_next_eye_is_skipped_only_with_its_reason():
    flow, commands, events = make()
    flow.on_view(visit_view(Step.REFRACT, eye="OS"))
    flow.skip("OS", "")
    assert commands.sent == [] and not flow.pending
    assert statuses(events)[-1] == "Type why the left eye (OS) is not refracted, then skip it."
    flow.skip("OS", "amblyopic eye")
    assert commands.sent == [("send", SkipEye(4, "OS", "amblyopic eye"))] and flow.pending


def test_keys_refused_on_a_page_send_nothing_and_say_why():
    flow, commands, events = make()
    flow.on_key("Return", "\r", False)  # no visit yet: nothing at all
    assert commands.sent == [] and events == []
    flow.on_view(visit_view(Step.REFRACT, eye="OS"))
    flow.on_key("R", "r", False)
    assert commands.sent == [] and statuses(events)[-1] == "Press Enter to start the next eye."
    flow.on_view(visit_view(Step.BALANCE, simulated=False))
    flow.on_key("Return", "\r", False)  # a real patient: Enter types no answer
    flow.on_key("Backspace", "", False)
    assert commands.sent == [] and "cannot be undone" in statuses(events)[-1]
    flow.on_view(visit_view(Step.FINISH))
    flow.on_key("R", "r", False)
    assert commands.sent == [] and statuses(events)[-1].startswith("The visit is at its finish")


def test_a_view_shows_its_page_and_an_opening_eye_only_its_waiting_text():
    flow, _, events = make(pace_s=0.5)
    flow.on_view(visit_view(Step.REFRACT, eye="OS", opening=True))
    assert events == [(Shown.AUTOPILOT, None), (Shown.BUSY_TEXT, "Opening the left eye (OS)\u2026")]
    events.clear()
    view = visit_view(Step.BALANCE, message="OS skipped: no balance question about it.")
    flow.on_view(view)
    assert events == [
        (Shown.PAGE, view),
        (Shown.STATUS, ("OS skipped: no balance question about it.", 6000)),
        (Shown.AUTOPILOT, 0.5),
    ]
    assert window_title(view) == "VisionTune \u2014 visit 4 \u00b7 SIM-9 \u00b7 binocular balance \u00b7 SIMULATED"
    real = visit_view(Step.REFRACT, simulated=False, eye="OS")
    assert window_title(real) == "VisionTune \u2014 visit 4 \u00b7 SIM-9 \u00b7 next OS"
    flow.stop()
    assert events[-1] == (Shown.AUTOPILOT, None)


def test_the_autopilot_steps_only_where_a_simulated_patient_answers():
    flow, commands, events = make(pace_s=0.4)
    flow.on_view(visit_view(Step.REFRACT, eye="OS"))
    assert last(events, Shown.AUTOPILOT) == 0.4
    flow.auto_step()
    assert commands.sent == [("submit", NextEye(4))]
    flow.on_view(visit_view(Step.BALANCE, answer="OD", index=1))
    assert last(events, Shown.AUTOPILOT) == 0.4
    flow.auto_step()
    assert commands.sent[-1] == ("send", BalanceAnswer(4, 1, "OD"))
    for view in (visit_view(Step.FINISH), visit_view(Step.BALANCE, simulated=False)):
        flow.on_view(view)
        assert last(events, Shown.AUTOPILOT) is None
        flow.auto_step()
    assert len(commands.sent) == 2  # a real patient's answer is typed; the finish is the clinician's
    still, _, still_events = make(pace_s=0.0)
    still.on_view(visit_view(Step.REFRACT, eye="OS"))
    assert last(still_events, Shown.AUTOPILOT) is None  # no pace: one step per key
    still.on_key("Space", " ", False)
    still.on_view(visit_view(Step.BALANCE, answer="equal"))
    still.on_key("Return", "\r", False)
    assert still.commands.sent == [("submit", NextEye(4)), ("send", BalanceAnswer(4, 0, "equal"))]


class HostEngine:
    """A real session engine in this process; commands wait until :meth:`run` (as in the pipe);
    its events go where the window sends them (the session's controller, the visit's)."""

    def __init__(self) -> None:
        self.queue: list[Command] = []
        self.events: list[EngineEvent] = []
        self.host = SessionHost(self.events.append)

    def submit(self, command: Command) -> None:
        self.queue.append(command)

    def run(self, session: SessionController, visit: VisitFlowController) -> None:
        handlers = {
            Opened: session.on_opened,
            Updated: session.on_updated,
            Recorded: session.on_recorded,
            Finished: session.on_finished,
            VisitViewed: visit.on_view,
        }
        while self.queue:
            self.events.clear()
            self.host.handle(self.queue.pop(0))
            for event in list(self.events):
                assert not isinstance(event, Failed), event.message
                if type(event) in handlers:
                    handlers[type(event)](event.value)
                elif isinstance(event, Idle):
                    session.on_idle()
                elif isinstance(event, EstimateReady):
                    session.on_estimate(event.estimate)
                    session.last_estimate = session.take_pending_estimate()


def test_the_autopilots_run_a_simulated_visit_to_its_finish_as_the_headless_run_does(tmp_path):
    path = write_visit_protocol(tmp_path, max_trials=4)
    with TrialStore.open(tmp_path / "headless.sqlite3") as store:
        age = round(visit_cases(7, load_protocol(path))["OD"].age_years)  # as the app records it
        headless_id = create_visit(store, "SIM-AUTO", simulated=True, age_years=age)
        assert drive_simulated_visit(store, headless_id, protocol=load_protocol(path), seed=7)

    engine = HostEngine()
    session = SessionController(engine, pace_s=0.25, export_dir=lambda: tmp_path / "exports")
    flow = VisitFlowController(session, pace_s=0.25, export_dir=lambda: tmp_path / "exports")
    timers: dict[str, float | None] = {"session": None, "visit": None}
    pages: list[object] = []

    def on_session(kind, value):
        if kind == Shown.AUTOPILOT:
            timers["session"] = value
        elif kind == Shown.VISIT_EYE_FINISHED:
            flow.eye_finished(value)
        elif kind == Shown.OPENED:
            pages.append("session")

    def on_visit(kind, value):
        if kind == Shown.AUTOPILOT:
            timers["visit"] = value
        elif kind in (Shown.PAGE, Shown.BUSY_PAGE):
            pages.append(value.step if kind == Shown.PAGE else "busy")

    session.connect(on_session)
    flow.connect(on_visit)
    engine.host.handle(OpenStore(str(tmp_path / "app.sqlite3")))
    try:
        flow.start(NewVisit("SIM-AUTO", str(path), True, seed=7))
        engine.run(session, flow)
        for _ in range(400):  # the near step's letters too (a presbyope: the headless run does it as well)
            if flow.view is not None and flow.view.step == Step.FINISH:
                break
            if timers["session"] is not None and session.phase != Phase.FINISHED:
                timers["session"] = None
                session.auto_step()
            else:
                assert timers["visit"] == 0.25 and pages[-1] in (Step.REFRACT, Step.BALANCE, Step.NEAR)  # a step page
                timers["visit"] = None
                flow.auto_step()
            engine.run(session, flow)
        vid = flow.visit_id
    finally:
        engine.host.shutdown()
    assert flow.view.step == Step.FINISH and not flow.pending and timers["visit"] is None
    assert pages.count("session") == 2 and Step.REFRACT in pages  # OD, the page before OS, OS
    assert {e.state for e in flow.view.eyes.values()} == {"finished"}

    def record(db, visit_id):
        with TrialStore.open(db) as store:
            eyes = eye_statuses(store, visit_id)
            trials = {
                eye: [(t.s_logmar, t.lens, t.letter_shown, t.correct) for t in store.trials(eyes[eye].session_id)]
                for eye in ("OD", "OS")
            }
            near = {e: (a.add_d, a.lower_d, a.upper_d) for e, a in near_add_records(store, visit_id).items()}
            return trials, [(a.index, a.clearer) for a in store.balance_answers(visit_id)], near

    mine, want = record(tmp_path / "app.sqlite3", vid), record(tmp_path / "headless.sqlite3", headless_id)
    assert [len(t) for t in mine[0].values()] == [4, 4]
    assert (Step.NEAR in pages) == bool(want[2])  # the near page, answered by the autopilot, for a presbyope
    assert mine == want
    assert len(mine[1]) == len(flow.view.balance.answers) >= 1 and Step.BALANCE in pages  # answered by the autopilot
