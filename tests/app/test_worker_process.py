"""The session engine outside Qt: the command executor in-process, then the spawned engine process.

Oracles: a second, independent connection to the trial log (an answer is committed before the
engine says anything else), pickle round trips (every value crosses the pipe), the OS process
table (the engine exits with the GUI, even a SIGKILLed one) and the session lock (released)."""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from app_helpers import write_protocol

from visiontune.app.logic.messages import (
    Busy,
    Close,
    Closed,
    EstimateReady,
    Failed,
    Finish,
    Finished,
    Idle,
    ListSessions,
    LogRecord,
    Opened,
    OpenStore,
    Present,
    RecordAnswer,
    Recorded,
    ResumeSession,
    SessionChanged,
    SessionsListed,
    StartSession,
    StoreOpened,
    Updated,
)
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.worker_process import CONTEXT, EngineProcess
from visiontune.app.logic.worker_values import NewSession
from visiontune.session.engine import Answer, RefractionSession
from visiontune.session.store import TrialStore


def assert_same(a, b, where="value"):
    """Recursive equality that understands numpy arrays inside dataclasses, dicts and tuples."""
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_frozen_values(value, where="value"):
    """Every dataclass sent to the GUI is frozen, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        assert value.__dataclass_params__.frozen, f"{where}: {type(value).__name__} is not frozen"
        for f in dataclasses.fields(value):
            assert_frozen_values(getattr(value, f.name), f"{where}.{f.name}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            assert_frozen_values(v, f"{where}[{i}]")


def request(patient="SIM-HOST", protocol=None):
    return NewSession(patient_id=patient, eye="OD", protocol=str(protocol), simulated=True)


def test_an_answer_is_committed_before_the_engine_says_anything_else(tmp_path):
    db, protocol = tmp_path / "log.sqlite3", write_protocol(tmp_path, max_trials=10)
    events, committed_at_confirmation = [], []

    def emit(event):
        if isinstance(event, Recorded):  # read the log through a second connection, as another process would
            with TrialStore.open(db) as other:
                committed_at_confirmation.append(len(other.trials(event.trial.session_id)))
        events.append(event)

    host = SessionHost(emit)
    host.handle(OpenStore(str(db)))
    host.handle(StartSession(request(protocol=protocol)))
    sid = host.session.session_id
    for k in range(3):
        del events[:]
        host.handle(Present())
        host.handle(RecordAnswer(Answer(correct=bool(k % 2))))
        kinds = [type(event) for event in events]
        assert kinds == [Idle, Recorded, Updated, EstimateReady, Idle], kinds
        assert committed_at_confirmation[-1] == k + 1  # in the log when "recorded" is said, before the refit
        trial, snap = events[1].trial, events[2].snapshot
        assert trial.index == k and trial.correct is bool(k % 2)
        assert snap.n_trials == k + 1 and snap.last_trial == trial and snap.query.index == k + 1
    host.handle(Close())
    assert events[-2:] == [Closed(), Idle()]
    with TrialStore.open(db) as store, RefractionSession.resume(store, sid) as session:  # lock released
        assert [t.correct for t in session.trials()] == [False, True, False]


def test_every_value_sent_to_the_gui_is_a_frozen_dataclass_that_survives_pickling(tmp_path):
    db, protocol = tmp_path / "log.sqlite3", write_protocol(tmp_path, max_trials=4)
    events = []
    host = SessionHost(events.append)
    host.handle(OpenStore(str(db)))
    host.handle(StartSession(request(protocol=protocol)))
    for _ in range(4):
        host.handle(RecordAnswer(Answer(correct=True)))
    host.handle(Finish("budget", None))
    host.handle(ListSessions())
    host.handle(Close())
    kinds = {type(event) for event in events}
    assert {
        StoreOpened,
        SessionsListed,
        Opened,
        Recorded,
        Updated,
        EstimateReady,
        Finished,
        Busy,
        SessionChanged,
        Closed,
    } <= kinds
    assert Failed not in kinds
    for event in events:
        assert_frozen_values(event, type(event).__name__)  # the event and every value it carries
        assert_same(event, pickle.loads(pickle.dumps(event)), type(event).__name__)
    finished = next(e.view for e in events if isinstance(e, Finished))
    with pytest.raises(dataclasses.FrozenInstanceError):
        finished.result = {}


def test_failures_are_one_message_and_the_host_goes_on(tmp_path):
    events = []
    host = SessionHost(events.append)
    host.handle(RecordAnswer(Answer(correct=True)))
    host.handle(("no_such_command", None))  # an old-style string command: refused by its type
    host.handle(OpenStore(str(tmp_path / "log.sqlite3")))
    host.handle(ResumeSession(999))
    failures = [e.message for e in events if isinstance(e, Failed)]
    assert failures[0] == "no session is open"
    assert "unknown message of type builtins.tuple" in failures[1] and "no session 999" in failures[2]
    assert "OpenStore" in failures[1]  # the refusal names what the engine takes
    assert [type(e) for e in events].count(Idle) == 4  # one per command, failed or not
    host.handle(Close())


def test_the_engine_modules_import_no_qt_and_the_engine_is_spawned():
    code = (
        "import sys, visiontune.app.logic.worker_process, visiontune.app.logic.session_host; "
        "print(sorted(m for m in sys.modules if m.startswith(('PySide', 'shiboken', 'pyqtgraph'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
    assert CONTEXT.get_start_method() == "spawn"


def drain_until(engine, kind, timeout_s=60.0):
    """Events received up to and including the first of type ``kind``."""
    got, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if engine._events.poll(0.2):
            got.append(engine.recv())
            if isinstance(got[-1], kind):
                return got
    raise AssertionError(f"no {kind.__name__} within {timeout_s} s; got {[type(e).__name__ for e in got]}")


def test_the_engine_process_runs_commands_in_order_and_closes_cleanly(tmp_path):
    db, protocol = tmp_path / "log.sqlite3", write_protocol(tmp_path, max_trials=10)
    engine = EngineProcess(log_level=logging.INFO)
    try:
        assert engine.pid != os.getpid()
        engine.send(OpenStore(str(db)))
        engine.send(StartSession(request(protocol=protocol)))
        for _ in range(2):
            engine.send(Present())
            engine.send(RecordAnswer(Answer(correct=True)))
        engine.send(Close())  # queued behind the answers: they run first
        events = drain_until(engine, Closed, timeout_s=120.0)
        kinds = [type(e) for e in events if not isinstance(e, LogRecord)]
        assert kinds.count(Recorded) == 2 and kinds.index(Opened) < kinds.index(Recorded)
        assert kinds[-1] is Closed and Failed not in kinds
        logged = [e.fields["msg"] for e in events if isinstance(e, LogRecord)]
        assert any("trial 1:" in m for m in logged)  # the engine's log reaches the GUI process
        assert engine.stop(30.0) == 0
    finally:
        engine.stop(0.0)
        engine.close_events()
    sid = next(e.snapshot for e in events if isinstance(e, Opened)).session_id
    with TrialStore.open(db) as store, RefractionSession.resume(store, sid) as session:
        assert len(session.trials()) == 2


GUI_STAND_IN = """
import sys, time
from visiontune.app.logic.messages import Opened, OpenStore, StartSession
from visiontune.app.logic.worker_process import EngineProcess
from visiontune.app.logic.worker_values import NewSession

if __name__ == "__main__":  # the engine is spawned: it re-imports this module
    engine = EngineProcess()
    engine.send(OpenStore(sys.argv[1]))
    engine.send(StartSession(NewSession("SIM-ORPHAN", "OD", sys.argv[2], True)))
    while True:
        event = engine.recv()
        if isinstance(event, Opened):
            print(engine.pid, event.snapshot.session_id, flush=True)
            break
    time.sleep(600)
"""


def test_a_killed_gui_leaves_no_orphan_engine_and_no_locked_session(tmp_path):
    db, protocol = tmp_path / "log.sqlite3", write_protocol(tmp_path, max_trials=10)
    script = tmp_path / "gui_stand_in.py"
    script.write_text(textwrap.dedent(GUI_STAND_IN), encoding="utf-8")
    gui = subprocess.Popen([sys.executable, str(script), str(db), str(protocol)], stdout=subprocess.PIPE, text=True)
    try:
        engine_pid, sid = map(int, gui.stdout.readline().split())
        assert is_running(engine_pid)
        gui.send_signal(signal.SIGKILL)
        gui.wait(10)
        deadline = time.monotonic() + 30.0
        while is_running(engine_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not is_running(engine_pid), "the engine outlived its GUI"
    finally:
        gui.kill()
        gui.wait(10)
    with TrialStore.open(db) as store, RefractionSession.resume(store, sid) as session:  # lock released
        assert session.session_id == sid


def is_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an orphan's zombie awaits init's reaping)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
