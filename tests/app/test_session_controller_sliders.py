"""Slider questions in the session controller (no Qt): the knob's path shown with the lens it is
at, Left / Right (or , / .) turning it one click, Enter recording that lens as the clearest; the
simulated patient's choice shown and typed by Enter; and the autopilot recording the trials,
sliders included, of the headless simulated session of the same seed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_session_controller import Clock, HostEngine, last, make, snapshot, statuses

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Action, Command, Phase, Rejected, interpret_key, legend
from visiontune.app.logic.messages import OpenStore, Present, RecordAnswer, Recorded, StartSession, Undo
from visiontune.app.logic.session_controller import SessionController, SliderView, slider_lines
from visiontune.app.logic.session_host import record_simulated_session
from visiontune.app.logic.simulation import case_patient, new_case
from visiontune.app.logic.worker_values import NewSession
from visiontune.optics import Prescription
from visiontune.refraction.loop import PendingSlider, simulated_slider
from visiontune.refraction.protocol import load_protocol
from visiontune.session.engine import SliderReply
from visiontune.session.store import TrialStore

SLOAN = tuple("CDHKNORSVZ")
SLIDER_PROTOCOL = Path(__file__).resolve().parent.parent / "protocols" / "sloan-compare-sliders.toml"
LENSES = tuple(Prescription(s, -0.5, 90.0) for s in (-1.5, -1.25, -1.0, -0.75, -0.5))


def slider_snapshot(n_trials: int = 0, *, simulated_case: dict | None = None):
    query = PendingSlider(index=n_trials, s_logmar=0.2, knob="sphere", lenses=LENSES, start=2, letter="R")
    return dataclasses.replace(snapshot(n_trials, simulated_case=simulated_case), query=query)


@pytest.mark.parametrize(
    ("name", "text", "action"),
    [
        ("Left", "", Action.SLIDER_LEFT),
        ("Comma", ",", Action.SLIDER_LEFT),
        ("Less", "<", Action.SLIDER_LEFT),
        ("Right", "", Action.SLIDER_RIGHT),
        ("Period", ".", Action.SLIDER_RIGHT),
        ("Return", "\r", Action.SLIDER_CHOOSE),
        ("Space", " ", Action.SLIDER_CHOOSE),
    ],
)
def test_slider_keys(name, text, action):
    assert interpret_key(name, text, phase=Phase.SLIDE, letters=SLOAN) == Command(action)


def test_slider_keys_elsewhere_and_in_a_simulated_session():
    assert interpret_key("Return", "\r", phase=Phase.SLIDE, letters=SLOAN, simulated=True) == Command(
        Action.SIMULATED_ANSWER
    )
    refused = interpret_key("K", "k", phase=Phase.SLIDE, letters=SLOAN)
    assert isinstance(refused, Rejected) and "turn the knob with" in refused.message
    assert isinstance(interpret_key("Left", "", phase=Phase.ANSWER, letters=SLOAN), Rejected)
    assert interpret_key("Backspace", "", phase=Phase.SLIDE, letters=SLOAN) == Command(Action.UNDO)
    assert "turn the slider knob, Enter  clearest" in legend(SLOAN)


def test_a_slider_is_shown_turned_and_answered_at_the_lens_the_knob_is_at():
    controller, engine, _, events = make()
    controller.on_opened(slider_snapshot(0))
    assert controller.phase == Phase.LENS
    assert last(events, Shown.PROMPT).caption == "Turn the sphere knob"
    controller.on_key("Return", "\r", False)
    assert controller.phase == Phase.SLIDE and engine.names() == [Present]
    assert last(events, Shown.PRESENT).letter == "R" and last(events, Shown.PROMPT).letter.startswith(
        "Letters in view: R"
    )
    assert last(events, Shown.SLIDER) == SliderView("sphere", LENSES, 2, 2)
    controller.on_key("Right", "", False)
    controller.on_key("Period", ".", False)
    assert last(events, Shown.SLIDER).position == 4 and statuses(events)[-1].startswith("Knob at lens 5 of 5")
    controller.on_key("Right", "", False)  # the end of the path: the knob stays
    assert last(events, Shown.SLIDER).position == 4 and "end of its path" in statuses(events)[-1]
    controller.on_key("Left", "", False)
    controller.on_key("K", "k", False)  # nothing recorded
    assert engine.names() == [Present]
    controller.on_key("Return", "\r", False)
    assert engine.sent[-1] == RecordAnswer(SliderReply(3)) and controller.phase == Phase.BUSY
    assert "clearest at lens 4 of 5" in statuses(events)[-1]
    controller.on_key("Return", "\r", False)  # busy: not sent twice
    assert engine.names() == [Present, RecordAnswer]


def test_escape_during_a_slider_goes_back_to_setting_the_knob():
    controller, engine, _, events = make()
    controller.on_opened(slider_snapshot(2))
    controller.on_key("Space", " ", False)
    controller.on_key("Escape", "", False)
    assert controller.phase == Phase.LENS and (Shown.BLANK, None) in events
    controller.on_key("Backspace", "", False)
    assert engine.sent[-1] == Undo()


def test_the_simulated_patient_answers_a_slider():
    case = new_case(11, load_protocol("clinical-sloan"))
    controller, engine, _, events = make(pace_s=0.0)
    snap = slider_snapshot(0, simulated_case=case.to_dict())
    controller.on_opened(snap)
    controller.on_key("Space", " ", False)
    want = simulated_slider(case_patient(snap.simulated_case, snap.n_alternatives), snap.query)
    assert last(events, Shown.SIMULATED_REPLY).startswith(f"Simulated patient says: clearest at lens {want + 1}")
    assert last(events, Shown.SLIDER).simulated_choice == want
    controller.on_key("Space", " ", False)
    assert engine.sent == [Present(), RecordAnswer(SliderReply(want))]
    assert last(events, Shown.SLIDER).position == want


def test_slider_lines_mark_the_knob_the_start_and_the_simulated_choice():
    lines = slider_lines(SliderView("sphere", LENSES, 3, 2, simulated_choice=0))
    assert len(lines) == 5 and lines[3].startswith("\u25b6  4") and "(start)" in lines[2]
    assert "(simulated: clearest)" in lines[0] and not any(x.startswith("\u25b6") for x in lines[:3])


def test_the_autopilot_runs_a_slider_session_as_the_headless_simulation_does(tmp_path, monkeypatch):
    """A protocol with sliders: the app's autopilot records the trials, sliders included, that the
    headless simulated session of the same seed records. Both at the protocol's own change time
    (0 s): priced at any lens device's (0.5 s and up) this protocol asks no slider in 14 answers;
    the pricing by device is tested in test_lens_device_kind_app."""
    from visiontune.app.logic.session_host import SessionHost

    monkeypatch.setattr(SessionHost, "_manual_kind_protocol", lambda _self, protocol: protocol)
    n = 14
    headless = record_simulated_session(tmp_path / "headless.sqlite3", str(SLIDER_PROTOCOL), n, seed=5, finish=False)
    engine, events = HostEngine(), []
    controller = SessionController(engine, pace_s=0.25, clock=Clock(), export_dir=lambda: tmp_path / "exports")
    controller.connect(lambda kind, value: events.append((kind, value)))
    engine.host.handle(OpenStore(str(tmp_path / "app.sqlite3")))
    try:
        controller.submit(StartSession(NewSession("SIM-REPLAY", "OD", str(SLIDER_PROTOCOL), simulated=True, seed=5)))
        engine.run(controller)
        while controller.answers_this_run < n:
            controller.auto_step()
            engine.run(controller)
        sid = controller.snapshot.session_id
    finally:
        engine.host.shutdown()
    want = [
        (t.comparison, t.slider_knob, t.slider_choice, t.letter_named, t.correct)
        for t in (e.value for e in headless if isinstance(e, Recorded))
    ]
    with TrialStore.open(tmp_path / "app.sqlite3") as store:
        got = [(t.comparison, t.slider_knob, t.slider_choice, t.letter_named, t.correct) for t in store.trials(sid)]
    assert got == want and any(c is not None for _, _, c, _, _ in got)


def test_the_session_view_shows_the_knob_and_highlights_the_lens_it_is_at(qtbot):
    """(Qt) The snapshot of a slider shows the knob at its start; a "slider" event moves the highlight."""
    from visiontune.app.logic.texts import lens_text
    from visiontune.app.session_view import SessionView

    view = SessionView()
    qtbot.addWidget(view)
    view.show_snapshot(slider_snapshot(0))
    assert view.lens.text() == f"sphere: {lens_text(LENSES[2])}"
    start_text = view.slider_path.text()
    assert start_text.count("&#9654;") == 1 and "(start)</span>" in start_text
    view.show_slider(SliderView("sphere", LENSES, 4, 2, simulated_choice=4))
    moved = view.slider_path.text()
    assert moved.count("&#9654;") == 1 and moved.index("&#9654;") > moved.index("(start)")
    assert "(simulated: clearest)</span>" in moved
    view.show_snapshot(snapshot(1))  # a letter: no path
    assert view.slider_path.text() == ""
