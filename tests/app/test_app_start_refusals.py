"""``visiontune app`` never waits for nobody: without a display, with a ``--db`` or
``--protocol`` it cannot use, or on a trial log another app holds, it says what is wrong and
exits 2 before a window opens; in a smoke run (``--exit-after``) a failure of the session
engine ends it with exit code 2. Each command runs in a child process with a timeout, so a
hang fails the test instead of stalling the suite."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from app_helpers import write_protocol

from visiontune.session.instance_lock import InstanceLock, lock_path
from visiontune.session.store import TrialStore

#: Long enough for a loaded 2-core machine; a run that hangs ends here and fails the test.
TIMEOUT_S = 120


def app_env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(
        {
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "VISIONTUNE_DATA_DIR": str(tmp_path / "data"),
            "OPENBLAS_NUM_THREADS": "1",
        }
    )
    env.update(extra)
    return env


def run_app(tmp_path, *argv, env=None) -> subprocess.CompletedProcess:
    env = app_env(tmp_path, QT_QPA_PLATFORM="offscreen") if env is None else env
    return subprocess.run(
        [sys.executable, "-m", "visiontune", "app", *argv], env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.mark.parametrize("argv", [(), ("--exit-after", "1")])
def test_without_a_display_the_app_says_it_needs_one_and_points_to_the_headless_session(tmp_path, argv):
    proc = run_app(tmp_path, *argv, env=app_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "needs a display" in proc.stderr and "visiontune session run --simulate" in proc.stderr
    assert "propagateSizeHints" not in proc.stderr  # Qt never started


def test_an_explicit_offscreen_platform_honours_exit_after(tmp_path):
    db = tmp_path / "log.sqlite3"
    proc = run_app(
        tmp_path, "--db", str(db), "--protocol", str(write_protocol(tmp_path)), "--pace", "0.01", "--exit-after", "2"
    )
    assert proc.returncode == 0, proc.stderr
    with TrialStore.open(db) as store:
        (info,) = store.list_sessions()
        assert len(store.trials(info.session_id)) == 2
    assert not lock_path(db).exists()  # released at exit


def _not_a_log(tmp_path, kind: str) -> str:
    if kind == "folder":
        (tmp_path / "folder").mkdir()
        return str(tmp_path / "folder")
    if kind == "device":
        return "/dev/zero"
    (tmp_path / "notes.txt").write_text("not a trial log\n")
    (tmp_path / "link.sqlite3").symlink_to(tmp_path / "notes.txt")
    return str(tmp_path / "link.sqlite3")


@pytest.mark.parametrize(
    "kind,says",
    [("folder", "not a regular file"), ("device", "not a regular file"), ("symlink", "not a VisionTune trial log")],
)
def test_a_db_that_is_not_a_trial_log_is_refused_with_exit_code_2(tmp_path, kind, says):
    db = _not_a_log(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run_app(tmp_path, "--db", db, "--exit-after", "1")
    assert proc.returncode == 2, proc.stderr
    assert f"--db: {db}: {says}" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in ("cfg", "state")) == before
    if kind == "symlink":
        assert (tmp_path / "notes.txt").read_text() == "not a trial log\n"


@pytest.mark.parametrize(
    "protocol,says", [("/dev/zero", "no such protocol file"), ("nope", "no shipped protocol of that name")]
)
def test_a_protocol_the_engine_cannot_run_is_refused_with_exit_code_2(tmp_path, protocol, says):
    proc = run_app(tmp_path, "--protocol", protocol, "--exit-after", "1")
    assert proc.returncode == 2, proc.stderr
    assert f"--protocol: {protocol}: {says}" in proc.stderr


def test_a_second_app_on_the_same_trial_log_is_refused_naming_the_holder(tmp_path):
    db = tmp_path / "log.sqlite3"
    TrialStore.open(db).close()
    with InstanceLock.acquire(db):
        proc = run_app(tmp_path, "--db", str(db), "--exit-after", "1")
    assert proc.returncode == 2, proc.stderr
    assert "in use by another VisionTune app" in proc.stderr
    assert f"host {socket.gethostname()!r}, pid {os.getpid()}, since " in proc.stderr
    with TrialStore.open(db) as store:
        assert store.list_sessions() == []  # the second app started nothing


def test_the_lock_of_a_killed_app_is_taken_over_and_said(tmp_path):
    db = tmp_path / "log.sqlite3"
    TrialStore.open(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from visiontune.session.instance_lock "
            "import InstanceLock; InstanceLock.acquire(sys.argv[1]); print('held', flush=True); "
            "time.sleep(600)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert f'"pid": {holder.pid}' in lock_path(db).read_text()  # the killed app's record stays behind
    started = time.time()
    proc = run_app(
        tmp_path, "--db", str(db), "--protocol", str(write_protocol(tmp_path)), "--pace", "0.01", "--exit-after", "1"
    )
    assert proc.returncode == 0, proc.stderr
    assert "no longer running" in proc.stderr and f"pid {holder.pid}" in proc.stderr and "taken it over" in proc.stderr
    assert time.time() - started < TIMEOUT_S
