"""The GUI's side of the session engine: a thin Qt relay to the engine process.

The engine (trial log, :class:`~visiontune.session.engine.RefractionSession`, refits,
estimates, exports) runs in a spawned child process (:mod:`visiontune.app.worker_process`,
:class:`~visiontune.app.session_host.SessionHost`), so its GIL-heavy work never stalls the
GUI's event loop. :class:`SessionWorker` keeps the interface the window had with the
old worker thread: :meth:`SessionWorker.submit` sends a command down a pipe; a relay
``QThread`` blocks on the event pipe's ``recv`` (which releases the GIL) and hands each event
to the GUI thread, where it is emitted as the signal of the same name with the same frozen
value (:class:`Snapshot`, :class:`EstimateView`, ...).

Every answer is committed by the engine before anything else happens; ``recorded`` (the trial
as stored) is the engine's confirmation, sent before the refit.

If the engine dies (killed, out of memory, a crash in native code), the window gets one
``failed`` message, an ``idle`` for every command that was still in flight, and the engine is
restarted: the trial log is reopened and the open session resumed from it (``opened`` again),
so nothing that was confirmed is lost. Three deaths within a minute stop the restarts.
:meth:`SessionWorker.shutdown` closes the session and the store and waits for the engine to exit.
"""

from __future__ import annotations

import collections
import logging
import time

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from visiontune.app.worker_process import EngineProcess, relog
from visiontune.app.worker_values import (
    EstimateView,
    FinishedView,
    NewSession,
    SessionSummary,
    Snapshot,
    export_basename,
)
from visiontune.errors import SessionError

__all__ = [
    "EstimateView",
    "FinishedView",
    "NewSession",
    "SessionSummary",
    "SessionWorker",
    "Snapshot",
    "export_basename",
]

log = logging.getLogger("visiontune.app.worker")

#: Restarts allowed within :data:`RESTART_WINDOW_S` before the worker gives up.
MAX_RESTARTS = 3
RESTART_WINDOW_S = 60.0
_ENGINE_EXITED = "__engine_exited__"


class _Relay(QThread):
    """Blocks on the engine's event pipe; forwards every event to the GUI thread (queued signal).
    Log records are re-logged here directly. Ends when the engine's end of the pipe closes."""

    event = Signal(object, str, object)

    def __init__(self, engine: EngineProcess, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self.setObjectName("visiontune-engine-relay")

    def run(self) -> None:
        while True:
            try:
                kind, value = self.engine.recv()
            except (EOFError, OSError):
                break
            except Exception as exc:  # an unreadable event must not kill the relay silently
                log.exception("unreadable event from the session engine")
                self.event.emit(self.engine, "failed", f"Unreadable message from the session engine: {exc}")
                continue
            if kind == "log":
                relog(value)
            else:
                self.event.emit(self.engine, kind, value)
        self.event.emit(self.engine, _ENGINE_EXITED, None)


class SessionWorker(QObject):
    """The session engine as the GUI sees it: commands in, signals out (see module doc).

    Commands (``submit(name, payload)``): ``open_store`` (db path or None), ``list``, ``start``
    (:class:`NewSession`), ``resume`` (session id), ``view`` (finished session id), ``present``,
    ``record`` (:class:`~visiontune.session.engine.Answer`), ``undo``, ``pause``,
    ``resume_paused``, ``finish`` (``(stopped_by, export folder or None)``), ``export``
    (``(session id, folder)``), ``close``, ``device`` (the lens-device setting, ``manual`` or
    ``cv5000:PORT``; kept, and sent again to a restarted engine), ``retry_device``, ``device_lens``
    (a position: the device shows that lens of the question on screen), and the visit
    commands (``visit_*``, :mod:`visiontune.app.visit_host`; each answered by ``visit_view``).
    Each command ends with exactly one ``idle``. The device's signals: ``device``
    (:class:`~visiontune.app.worker_device.DeviceView`), ``presented`` (the trial whose lenses
    the device confirmed), ``device_fault`` (the message; the session paused).

    ``store``: path of the open trial log (None until the engine confirms it);
    ``session_id``: the engine's open session (None if none); ``pid``: the engine's process id.
    """

    sessions_listed = Signal(object)
    opened = Signal(object)
    updated = Signal(object)
    recorded = Signal(object)
    estimate_ready = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    busy = Signal(str)
    idle = Signal()
    closed = Signal()
    restarted = Signal(int)
    visit_view = Signal(object)
    device = Signal(object)
    presented = Signal(object)
    device_fault = Signal(str)

    _SIGNALS = (
        "sessions_listed",
        "opened",
        "updated",
        "recorded",
        "estimate_ready",
        "finished",
        "failed",
        "busy",
        "visit_view",
        "device",
        "presented",
        "device_fault",
    )

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store: str | None = None
        self.session_id: int | None = None
        self._engine: EngineProcess | None = None
        self._relay: _Relay | None = None
        self._db_path = None
        self._opened_store = False
        self._device_spec: str | None = None
        self._in_flight: collections.deque[bool] = collections.deque()  # True = the GUI's, False = the relay's own
        self._restarts: collections.deque[float] = collections.deque()
        self._closing = False

    # ------------------------------------------------------------------ lifecycle
    @property
    def pid(self) -> int | None:
        return None if self._engine is None else self._engine.pid

    @property
    def running(self) -> bool:
        return self._engine is not None and self._engine.is_alive()

    def start(self) -> None:
        """Spawn the engine process and its relay thread (returns at once; the engine's imports
        take a second or two, commands sent meanwhile wait in the pipe)."""
        if self._engine is not None:
            raise SessionError("the session engine is already started")
        self._closing = False
        self._engine = EngineProcess()
        self._relay = _Relay(self._engine, self)
        self._relay.event.connect(self._on_event)
        self._relay.start()
        log.info("session engine started (pid %s)", self._engine.pid)

    def submit(self, name: str, payload=None) -> None:
        """Send one command to the engine (from the GUI thread). Engine gone: ``failed`` + ``idle``."""
        if name == "open_store":
            self._db_path, self._opened_store = payload, True
        if name == "device":
            self._device_spec = payload
        if name == "close":
            self._closing = True
        self._send(name, payload, from_gui=True)

    def _send(self, name: str, payload, *, from_gui: bool) -> None:
        try:
            if self._engine is None:
                raise SessionError("the session engine is not running")
            self._engine.send(name, payload)
        except SessionError as exc:
            if from_gui and name != "close":
                message = f"{exc}: '{name}' was not done."
                QTimer.singleShot(0, lambda: (self.failed.emit(message), self.idle.emit()))
            return
        self._in_flight.append(from_gui)

    def shutdown(self, timeout_ms: int = 60_000) -> bool:
        """Close the session and the store, wait for the engine to exit (terminate it after
        ``timeout_ms``). True if it closed in time."""
        if self._engine is None:
            return True
        if not self._closing:
            self.submit("close")
        engine, relay = self._engine, self._relay
        clean = relay.wait(timeout_ms)
        code = engine.stop(0.0 if not clean else 5.0)
        relay.wait(5_000)
        engine.close_events()
        self._engine = self._relay = None
        log.info("session engine stopped (exit code %s)", code)
        return bool(clean and code == 0)

    def kill_engine(self) -> None:
        """Kill the engine process at once (what a crash looks like; for tests and a stuck engine)."""
        if self._engine is not None and self._engine.is_alive():
            self._engine.process.kill()

    def restart(self) -> None:
        """Start a new engine, reopen the trial log and resume the open session from it."""
        if self._engine is not None:
            old, relay = self._engine, self._relay
            old.stop(0.0)
            relay.wait(5_000)
            old.close_events()
            self._engine = self._relay = None
        session_id = self.session_id
        self._in_flight.clear()
        self.store = None
        self.start()
        if self._device_spec is not None:
            self._send("device", self._device_spec, from_gui=False)
        if self._opened_store:
            self._send("open_store", self._db_path, from_gui=False)
            if session_id is not None:
                self._send("resume", session_id, from_gui=False)
        self.restarted.emit(self._engine.pid)

    # ------------------------------------------------------------------ events (GUI thread)
    @Slot(object, str, object)
    def _on_event(self, engine: EngineProcess, kind: str, value) -> None:
        if engine is not self._engine:
            return  # a late event of an engine already replaced
        if kind == "store_opened":
            self.store = value
        elif kind == "session":
            self.session_id = value
        elif kind == "idle":
            if self._in_flight and self._in_flight.popleft():
                self.idle.emit()
        elif kind == "closed":
            self.session_id = None
            self.closed.emit()
        elif kind == _ENGINE_EXITED:
            self._engine_exited()
        elif kind in self._SIGNALS:
            getattr(self, kind).emit(value)
        else:
            log.warning("unknown event %r from the session engine", kind)

    def _engine_exited(self) -> None:
        if self._closing:
            return
        engine = self._engine
        code = engine.stop(2.0)
        pending = sum(self._in_flight)
        self._in_flight.clear()
        log.error(
            "the session engine (pid %s) stopped unexpectedly, exit code %s; %d command(s) were in flight",
            engine.pid,
            code,
            pending,
        )
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > RESTART_WINDOW_S:
            self._restarts.popleft()
        can_restart = len(self._restarts) < MAX_RESTARTS
        where = f"session {self.session_id}" if self.session_id is not None else "the session list"
        if can_restart:
            what = (
                f"It has been restarted and {where} reopened from the trial log: every answer confirmed as "
                "recorded is kept; an answer not yet confirmed must be given again."
            )
        else:
            what = (
                "It stopped too often to restart it again: every answer confirmed as recorded is in the "
                "trial log; close the app and open it again to resume."
            )
        if can_restart:  # first, so that whatever the window sends on the error goes to the new engine
            self._restarts.append(now)
            self.restart()
        else:
            engine.close_events()
            self._engine = self._relay = None
        self.failed.emit(f"The session engine stopped unexpectedly (exit code {code}). {what}")
        for _ in range(pending):
            self.idle.emit()
