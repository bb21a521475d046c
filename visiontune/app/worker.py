"""The GUI's side of the session engine: a thin Qt relay to the engine process.

The engine (trial log, :class:`~visiontune.session.engine.RefractionSession`, refits,
estimates, exports) runs in a spawned child process (:mod:`visiontune.app.logic.worker_process`,
:class:`~visiontune.app.logic.session_host.SessionHost`), so its GIL-heavy work never stalls the
GUI's event loop. :meth:`SessionWorker.submit` sends a command (a typed message of
:mod:`visiontune.app.logic.messages`) down a pipe; a relay ``QThread`` blocks on the event pipe's
``recv`` (which releases the GIL) and hands each event to the GUI thread, where it is
dispatched on its type (:attr:`SessionWorker.signal_of`) and emitted as its Qt signal with the
frozen value it carries (:class:`Snapshot`, :class:`EstimateView`, ...).

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
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from visiontune.app.logic.messages import (
    Busy,
    Close,
    Closed,
    Command,
    DeviceFault,
    DeviceShown,
    EngineEvent,
    EstimateReady,
    Failed,
    Finished,
    Idle,
    LogRecord,
    Opened,
    OpenStore,
    Presented,
    Recorded,
    ResumeSession,
    SessionChanged,
    SessionsListed,
    SetDevice,
    StoreOpened,
    Updated,
    VisitViewed,
    refuse_unknown,
)
from visiontune.app.logic.worker_process import EngineProcess, relog
from visiontune.app.logic.worker_values import (
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


@dataclass(frozen=True)
class _EngineExited(EngineEvent):
    """The relay's own last event: the engine's end of the event pipe closed."""


class _Relay(QThread):
    """Blocks on the engine's event pipe; forwards every event to the GUI thread (queued signal).
    Log records are re-logged here directly. Ends when the engine's end of the pipe closes."""

    event = Signal(object, object)

    def __init__(self, engine: EngineProcess, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self.setObjectName("visiontune-engine-relay")

    def run(self) -> None:
        while True:
            try:
                event = self.engine.recv()
            except (EOFError, OSError):
                break
            except Exception as exc:  # an unreadable event must not kill the relay silently
                log.exception("unreadable event from the session engine")
                self.event.emit(self.engine, Failed(f"Unreadable message from the session engine: {exc}"))
                continue
            if isinstance(event, LogRecord):
                relog(event.fields)
            else:
                self.event.emit(self.engine, event)
        self.event.emit(self.engine, _EngineExited())


class SessionWorker(QObject):
    """The session engine as the GUI sees it: commands in, signals out (see module doc).

    Commands (``submit(command)``): the typed commands of :mod:`visiontune.app.logic.messages`
    (:class:`~visiontune.app.logic.messages.OpenStore`, ``StartSession``, ``RecordAnswer``, ``Finish``,
    ..., and the visit commands, each answered by ``visit_view``). The last ``OpenStore`` and
    ``SetDevice`` are kept and sent again to a restarted engine. Each command ends with exactly
    one ``idle``. The device's signals: ``device`` (:class:`~visiontune.app.logic.worker_device.DeviceView`),
    ``presented`` (the trial whose lenses the device confirmed), ``device_fault`` (the message;
    the session paused).

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

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store: str | None = None
        self.session_id: int | None = None
        self._engine: EngineProcess | None = None
        self._relay: _Relay | None = None
        self._open_store: OpenStore | None = None  # the last one sent (sent again after a restart)
        self._set_device: SetDevice | None = None
        self._in_flight: collections.deque[bool] = collections.deque()  # True = the GUI's, False = the relay's own
        self._restarts: collections.deque[float] = collections.deque()
        self._closing = False
        #: What each engine event becomes in the GUI thread (dispatched on the event's type).
        self.signal_of: dict[type, Callable[[EngineEvent], None]] = {
            StoreOpened: self._on_store_opened,
            SessionChanged: self._on_session_changed,
            Idle: self._on_idle,
            Closed: self._on_closed,
            _EngineExited: lambda _event: self._engine_exited(),
            SessionsListed: lambda e: self.sessions_listed.emit(e.sessions),
            Opened: lambda e: self.opened.emit(e.snapshot),
            Updated: lambda e: self.updated.emit(e.snapshot),
            Recorded: lambda e: self.recorded.emit(e.trial),
            EstimateReady: lambda e: self.estimate_ready.emit(e.estimate),
            Finished: lambda e: self.finished.emit(e.view),
            Failed: lambda e: self.failed.emit(e.message),
            Busy: lambda e: self.busy.emit(e.message),
            VisitViewed: lambda e: self.visit_view.emit(e.view),
            DeviceShown: lambda e: self.device.emit(e.view),
            Presented: lambda e: self.presented.emit(e.index),
            DeviceFault: lambda e: self.device_fault.emit(e.message),
        }

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

    def submit(self, command: Command) -> None:
        """Send one command to the engine (from the GUI thread). Engine gone: ``failed`` + ``idle``."""
        if isinstance(command, OpenStore):
            self._open_store = command
        if isinstance(command, SetDevice):
            self._set_device = command
        if isinstance(command, Close):
            self._closing = True
        self._send(command, from_gui=True)

    def _send(self, command: Command, *, from_gui: bool) -> None:
        try:
            if self._engine is None:
                raise SessionError("the session engine is not running")
            self._engine.send(command)
        except SessionError as exc:
            if from_gui and not isinstance(command, Close):
                message = f"{exc}: '{command.label}' was not done."
                QTimer.singleShot(0, lambda: (self.failed.emit(message), self.idle.emit()))
            return
        self._in_flight.append(from_gui)

    def shutdown(self, timeout_ms: int = 60_000) -> bool:
        """Close the session and the store, wait for the engine to exit (terminate it after
        ``timeout_ms``). True if it closed in time."""
        if self._engine is None:
            return True
        if not self._closing:
            self.submit(Close())
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
        if self._set_device is not None:
            self._send(self._set_device, from_gui=False)
        if self._open_store is not None:
            self._send(self._open_store, from_gui=False)
            if session_id is not None:
                self._send(ResumeSession(session_id), from_gui=False)
        self.restarted.emit(self._engine.pid)

    # ------------------------------------------------------------------ events (GUI thread)
    @Slot(object, object)
    def _on_event(self, engine: EngineProcess, event: EngineEvent) -> None:
        if engine is not self._engine:
            return  # a late event of an engine already replaced
        handler = self.signal_of.get(type(event))
        if handler is None:  # refused in the log, nothing else done (the trial log is the engine's, untouched)
            log.error("%s", refuse_unknown(event, self.signal_of, "event from the session engine"))
            return
        handler(event)

    def _on_store_opened(self, event: StoreOpened) -> None:
        self.store = event.path

    def _on_session_changed(self, event: SessionChanged) -> None:
        self.session_id = event.session_id

    def _on_idle(self, _event: Idle) -> None:
        if self._in_flight and self._in_flight.popleft():
            self.idle.emit()

    def _on_closed(self, _event: Closed) -> None:
        self.session_id = None
        self.closed.emit()

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
