"""Worker processes of a sweep end when the sweep's process dies.

A sweep stopped by Ctrl-C, SIGTERM or SIGHUP terminates its joblib/loky workers itself
(:func:`visiontune.validation.parallel_runs.signals_stop_the_sweep`). A SIGKILLed (or crashed) sweep
cannot: its workers were reparented to PID 1 and ran their queued runs on for minutes, for a
store nobody would read. :class:`DiesWithParent` wraps the function the workers run: its first
call in a worker starts a daemon thread that polls ``os.getppid()`` every
:data:`POLL_SECONDS` and ends the worker (``os._exit``) once the parent is no longer the
sweep's process. (``prctl(PR_SET_PDEATHSIG)`` is not used: it fires when the parent *thread*
that forked the worker ends, and loky forks from a manager thread that may end before the
process does.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds between two looks at the parent process.
POLL_SECONDS = 0.5
#: Exit status of a worker whose sweep died.
ORPHAN_EXIT_STATUS = 70

_watching: int | None = None  # the parent pid this process's watchdog compares with
_lock = threading.Lock()


def exit_when_parent_dies(parent_pid: int, poll_seconds: float = POLL_SECONDS) -> None:
    """Start (once per process) a daemon thread ending this process when its parent is no
    longer ``parent_pid``. Does nothing in the process ``parent_pid`` itself."""
    global _watching
    if os.getpid() == parent_pid:
        return
    with _lock:
        if _watching == parent_pid:
            return
        _watching = parent_pid

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_seconds)
        os._exit(ORPHAN_EXIT_STATUS)

    threading.Thread(target=watch, name="visiontune-parent-watch", daemon=True).start()


class DiesWithParent:
    """``fn`` as a picklable callable for worker processes that end with the process that
    made this object (see the module text)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.parent_pid = os.getpid()

    def __call__(self, arg: Any) -> Any:
        exit_when_parent_dies(self.parent_pid)
        return self.fn(arg)
