"""A SIGKILLed ``validate`` leaves no worker running (its joblib workers once ran on under PID 1
for over 6 minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from visiontune.validation.worker_lifetime import POLL_SECONDS


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (a container's PID 1 may never reap an orphan)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find the workers")
def test_workers_of_a_sigkilled_validate_exit(tmp_path):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "VISIONTUNE_DATA_DIR": str(tmp_path / "data")}
    parent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "visiontune",
            "validate",
            "--quick",
            "--jobs",
            "2",
            "--no-progress",
            "--out",
            str(tmp_path / "out"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and parent.poll() is None:
            workers = [
                p for p in _children(parent.pid) if "loky" in _cmdline(p) and "resource_tracker" not in _cmdline(p)
            ]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2, "validate --jobs 2 started no loky workers within 120 s"
        time.sleep(2.0)  # the workers are running cases now
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10 * POLL_SECONDS + 3.0
        while time.monotonic() < deadline and any(_running(p) for p in workers):
            time.sleep(0.1)
        left = [p for p in workers if _running(p)]
        assert not left, f"workers {left} still run {10 * POLL_SECONDS + 3.0:.0f} s after their validate was SIGKILLed"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in workers:  # only the workers this test started
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
