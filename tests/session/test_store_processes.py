"""Durability and session locks across real processes (SIGKILL, lock holders)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from visiontune.errors import SessionError
from visiontune.session.store import TrialStore

CHILD_PRELUDE = textwrap.dedent(
    """
    import os, signal, sys
    from visiontune.optics import Prescription
    from visiontune.refraction.trial import Trial
    from visiontune.session.store import TrialStore
    path, sid, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = TrialStore.open(path)
    handle = store.open_session(sid)
    """
)

RECORD_THEN_DIE = CHILD_PRELUDE + textwrap.dedent(
    """
    for i in range(k):
        handle.record_trial(Trial(i, 0.1 * i, Prescription(-0.25 * i, 0.0, 90.0), "E", i % 2 == 0, "E"))
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint, no atexit
    """
)

HOLD_LOCK = CHILD_PRELUDE + textwrap.dedent(
    """
    print("locked", flush=True)
    sys.stdin.readline()  # wait for the parent
    """
)


def _spawn(script, *args, **kw):
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], **kw)


@pytest.mark.parametrize("k", [1, 7])
def test_trials_survive_sigkill_right_after_record(store, session_id, k):
    child = _spawn(RECORD_THEN_DIE, store.path, session_id, k, stderr=subprocess.PIPE)
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, err.decode()
    assert store.path.with_name(store.path.name + "-wal").exists()  # died without a checkpoint
    with TrialStore.open(store.path) as fresh:
        trials = fresh.trials(session_id)
        assert [t.index for t in trials] == list(range(k))
        assert [t.correct for t in trials] == [i % 2 == 0 for i in range(k)]
        assert [t.lens.sphere_d for t in trials] == [-0.25 * i for i in range(k)]
        with fresh.open_session(session_id):  # the dead child's lock is gone
            pass


def test_lock_held_by_child_then_released_when_it_dies(store, session_id):
    child = _spawn(
        HOLD_LOCK, store.path, session_id, 0, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert child.stdout.readline().strip() == b"locked", child.stderr.read().decode()
        with pytest.raises(
            SessionError, match=rf"^session {session_id} is open in another process \(pid {child.pid}\)$"
        ):
            store.open_session(session_id)
        other = store.create_session("P001", eye="OS", protocol=store.get_session(session_id).protocol_toml)
        with store.open_session(other):  # only that one session is locked
            pass
    finally:
        child.kill()
        child.wait(timeout=30)
    with store.open_session(session_id) as handle:
        assert handle.info.state == "open"


def test_lock_released_when_child_closes_normally(store, session_id):
    script = CHILD_PRELUDE + "handle.close()\nprint('closed', flush=True)\nsys.stdin.readline()\n"
    child = _spawn(script, store.path, session_id, 0, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == b"closed"
        with store.open_session(session_id):  # child process still alive, lock released
            pass
    finally:
        child.kill()
        child.wait(timeout=30)
