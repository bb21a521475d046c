"""The typed messages between the window, its controllers and the engine process.

Oracles: the dataclass machinery (frozen, fields), pickle round trips (what crosses the pipe),
the receivers' own dispatch tables (every message type has exactly one handler, none is left
without), and the refusals (a message of another type is refused naming that type, nothing done)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from visiontune.app.logic import messages
from visiontune.app.logic.events import EventSource, Shown
from visiontune.app.logic.messages import (
    COMMAND_TYPES,
    EVENT_TYPES,
    Command,
    EngineEvent,
    Failed,
    Idle,
    LogRecord,
    NearAnswer,
    Opened,
    RecordAnswer,
)
from visiontune.app.logic.session_host import SessionHost
from visiontune.errors import InvalidInputError
from visiontune.session.engine import Answer


def test_every_message_is_a_frozen_dataclass_listed_once():
    public = [getattr(messages, n) for n in messages.__all__]
    commands = [c for c in public if isinstance(c, type) and issubclass(c, Command) and c is not Command]
    events = [c for c in public if isinstance(c, type) and issubclass(c, EngineEvent) and c is not EngineEvent]
    assert sorted(c.__name__ for c in commands) == sorted(c.__name__ for c in COMMAND_TYPES)
    assert sorted(c.__name__ for c in events) == sorted(c.__name__ for c in EVENT_TYPES)
    assert len(set(COMMAND_TYPES)) == len(COMMAND_TYPES) and len(set(EVENT_TYPES)) == len(EVENT_TYPES)
    for kind in (*COMMAND_TYPES, *EVENT_TYPES):
        assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen, kind.__name__
        assert kind.__doc__ and kind.__doc__ != kind.__mro__[1].__doc__, f"{kind.__name__} has no docstring of its own"


def test_a_message_pickles_to_an_equal_one_and_its_value_is_what_it_carries():
    command = NearAnswer(3, "OS", 2, True)
    assert pickle.loads(pickle.dumps(command)) == command and command.label == "NearAnswer"
    with pytest.raises(dataclasses.FrozenInstanceError):
        command.index = 4
    answer = RecordAnswer(Answer(letter_named="K"))
    assert pickle.loads(pickle.dumps(answer)) == answer
    assert Failed("no session is open").value == "no session is open" and Idle().value is None
    assert LogRecord({"msg": "x"}).value == {"msg": "x"}
    assert Opened("snapshot").value == "snapshot"  # the one field, whatever it holds


def test_the_host_has_one_handler_per_command_type_and_refuses_any_other(tmp_path):
    events = []
    host = SessionHost(events.append)
    assert set(host.handlers) == set(COMMAND_TYPES)

    @dataclasses.dataclass(frozen=True)
    class Stranger(Command):
        """A command no receiver knows."""

    for message in (Stranger(), "present", Opened(None)):  # an unknown command, a bare name, an event
        events.clear()
        host.handle(message)
        assert [type(e) for e in events] == [Failed, Idle], events
        assert f"unknown message of type {type(message).__module__}.{type(message).__qualname__}" in events[0].message
    host.shutdown()


def test_the_worker_dispatches_every_event_type_but_the_relayed_log_records(qtbot):
    from visiontune.app.worker import SessionWorker

    worker = SessionWorker()
    assert set(worker.signal_of) - {t for t in worker.signal_of if t.__name__ == "_EngineExited"} == set(
        EVENT_TYPES
    ) - {LogRecord}
    with qtbot.waitSignal(worker.failed) as got:
        worker.signal_of[Failed](Failed("the engine said so"))
    assert got.args == ["the engine said so"]


def test_a_controller_event_is_a_shown_member_and_a_bare_name_is_refused_before_any_listener():
    heard = []
    source = EventSource()
    source.connect(lambda kind, value: heard.append((kind, value)))
    source.say("hello", 10)
    assert heard == [(Shown.STATUS, ("hello", 10))] and type(heard[0][0]) is Shown
    with pytest.raises(InvalidInputError, match="expected a Shown member, got builtins.str 'status'"):
        source._emit("status", ("hello", 10))
    assert len(heard) == 1
