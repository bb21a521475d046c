"""A chart line's keys, pure: what each key means while a line is read (no Qt), and the controller
routing them to the line's entry with a fake engine (nothing sent until the line is complete)."""

from __future__ import annotations

import dataclasses

import pytest

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Action, Command, Phase, Rejected, interpret_key, legend
from visiontune.app.logic.messages import Command as EngineCommand
from visiontune.app.logic.messages import Pause, Present, RecordAnswer, Undo
from visiontune.app.logic.session_controller import LineView, SessionController, line_reply_text
from visiontune.app.logic.worker_values import Snapshot
from visiontune.optics import Prescription
from visiontune.refraction.loop import LineReply, PendingLine
from visiontune.session.records import SessionState

SLOAN = tuple("CDHKNORSVZ")
LETTERS26 = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def key(name, text="", letters=SLOAN, **kw):
    return interpret_key(name, text, phase=Phase.LINE, letters=letters, **kw)


@pytest.mark.parametrize(
    "name,text,expected",
    [
        ("Plus", "+", "+"),
        ("Equal", "=", "+"),
        ("Minus", "-", "-"),
        ("K", "k", "K"),
        ("N", "n", "N"),  # a Sloan letter: the entry decides (named when N is on the line)
        ("3", "3", "3"),
        ("Backspace", "", "BACKSPACE"),
        ("Return", "\r", "ENTER"),
        ("Space", " ", "ENTER"),
    ],
)
def test_a_lines_keys_go_to_its_entry(name, text, expected):
    assert key(name, text) == Command(Action.LINE_KEY, expected)


def test_y_is_right_unless_it_is_a_letter_of_the_chart():
    assert key("Y", "y") == Command(Action.LINE_KEY, "+")
    assert key("Y", "y", letters=LETTERS26) == Command(Action.LINE_KEY, "Y")


def test_a_simulated_lines_enter_is_the_simulated_answer_and_other_keys_are_refused_with_a_sentence():
    assert key("Return", "\r", simulated=True) == Command(Action.SIMULATED_ANSWER)
    refused = key("Q", "q")
    assert isinstance(refused, Rejected) and "not a letter of this chart" in refused.message
    refused = key("Comma", ",")
    assert isinstance(refused, Rejected) and "Enter records the line" in refused.message
    assert key("P", "p") == Command(Action.PAUSE_TOGGLE)  # not a Sloan letter
    assert key("P", "p", letters=LETTERS26) == Command(Action.LINE_KEY, "P")
    assert key("P", "p", letters=LETTERS26, ctrl=True) == Command(Action.PAUSE_TOGGLE)
    assert "a line: a key per letter" in legend(SLOAN)


class _Engine:
    def __init__(self) -> None:
        self.sent: list[EngineCommand] = []

    def submit(self, command: EngineCommand) -> None:
        self.sent.append(command)


def _snapshot(n_trials: int = 2) -> Snapshot:
    line = PendingLine(n_trials, 0.3, Prescription(-1.0, -0.5, 90.0), tuple("DKNRS"))
    return Snapshot(
        session_id=1,
        patient_id="P1",
        eye="OD",
        simulated=False,
        seed=0,
        protocol_name="lines",
        state=SessionState.OPEN,
        n_trials=n_trials,
        max_trials=20,
        query=line,
        stop_reason=None,
        letters=SLOAN,
        letter_set="sloan",
        n_alternatives=10,
        cylinder_form="minus",
        context_box=(-0.3, 1.3),
        prior_duration_s=0.0,
    )


def _controller():
    engine, said = _Engine(), []
    c = SessionController(engine, clock=lambda: 0.0)
    c.connect(lambda kind, value: said.append((kind, value)))
    c.on_opened(_snapshot())
    return c, engine, said


def _keys(c, *keys):
    for k in keys:
        c.on_key(*k) if isinstance(k, tuple) else c.on_key(k.upper(), k)


def test_the_controller_keys_a_line_and_sends_one_answer_when_it_is_complete():
    c, engine, said = _controller()
    c.on_key("Return", "\r")
    assert c.phase == Phase.LINE and engine.sent == [Present()]
    present = [v for k, v in said if k == Shown.PRESENT]
    assert present and isinstance(present[-1], PendingLine)
    _keys(c, "+", "k", "-", ("Backspace", ""))
    assert c.line_entry.marks == [True, True] and engine.sent == [Present()]
    _keys(c, "o")  # a Sloan letter not at this place: named, wrong
    _keys(c, "+", "s")
    views = [v for k, v in said if k == Shown.LINE]
    assert views[-1] == LineView(tuple("DKNRS"), (True, True, False, True, True), 0.3)
    assert views[-1].line_text() == "D+  K+  N-  R+  S+" and views[-1].complete
    assert engine.sent == [Present()]  # nothing recorded before Enter
    c.on_key("Return", "\r")
    assert engine.sent[-1] == RecordAnswer(LineReply((True, True, False, True, True)))
    assert c.phase == Phase.BUSY
    c.on_key("Plus", "+")  # the line is with the engine: refused, not sent twice
    assert len([c for c in engine.sent if isinstance(c, RecordAnswer)]) == 1


def test_a_refused_key_says_why_and_keeps_the_letters_keyed():
    c, engine, said = _controller()
    c.on_key("Return", "\r")
    _keys(c, "+", "-")
    c.on_key("4", "4")  # a count after letters
    c.on_key("Return", "\r")  # not complete
    status = [v[0] for k, v in said if k == Shown.STATUS]
    assert "Backspace to start again" in status[-2] and "2 keyed so far" in status[-1]
    assert "the letters keyed are kept (D+  K-  N_  R_  S_)" in status[-1]
    assert c.line_entry.marks == [True, False] and c.phase == Phase.LINE
    assert [c for c in engine.sent if isinstance(c, RecordAnswer)] == []


def test_a_count_records_the_line_read_to_that_letter_and_backspace_with_nothing_keyed_undoes():
    c, engine, _ = _controller()
    c.on_key("Return", "\r")
    c.on_key("Backspace", "")  # no letter keyed: the last answer undone, as elsewhere
    assert engine.sent[-1] == Undo()
    c, engine, _ = _controller()
    c.on_key("Return", "\r")
    c.on_key("2", "2")
    assert engine.sent[-1] == RecordAnswer(LineReply((True, True, False, False, False)))
    assert line_reply_text((True, True, False, False, False)) == "2 of 5 right: + + \u2212 \u2212 \u2212"


def test_escape_blanks_the_line_and_keeps_its_keys_for_when_it_is_shown_again():
    c, engine, said = _controller()
    c.on_key("Return", "\r")
    _keys(c, "+", "+", "-")
    c.on_key("Escape", "")
    assert c.phase == Phase.LENS and said[-1][0] in (Shown.AUTOPILOT, Shown.PROMPT, Shown.STATUS)
    c.on_key("Return", "\r")
    assert c.phase == Phase.LINE and c.line_entry.marks == [True, True, False]
    c.on_updated(_snapshot(3))  # the next question: a new line, nothing keyed
    assert c.line_entry is None


def test_a_pause_mid_line_keeps_its_keys_and_the_next_question_drops_them():
    c, engine, _ = _controller()
    c.on_key("Return", "\r")
    _keys(c, "+", "-", "+")
    c.on_key("P", "p")
    assert engine.sent[-1] == Pause()
    c.on_updated(dataclasses.replace(_snapshot(), state=SessionState.PAUSED, query=None))
    assert c.phase == Phase.PAUSED and c.line_entry.marks == [True, False, True]
    c.on_key("P", "p")
    c.on_updated(_snapshot())  # resumed: the same line asked again
    c.on_key("Return", "\r")
    assert c.phase == Phase.LINE and c.line_entry.marks == [True, False, True]
    _keys(c, "+", "+", ("Return", "\r"))
    assert engine.sent[-1] == RecordAnswer(LineReply((True, False, True, True, True)))
    c.on_updated(_snapshot(3))
    c.on_key("Return", "\r")
    assert c.line_entry.marks == []  # the next line starts with nothing keyed
