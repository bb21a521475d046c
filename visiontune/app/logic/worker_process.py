"""The session engine's process: a spawned child running a :class:`SessionHost` (Qt-free).

Why a process: the refit and the next-query search (L-BFGS, the GP's Python loops) hold
Python's GIL for tens of milliseconds at a time; in a thread of the GUI process they stalled
the event loop 100-280 ms. In a child process they cannot.

- Started with the ``spawn`` start method: a fresh interpreter that inherits no Qt state, no
  SQLite connection and no session lock. It imports this module, never PySide6.
- Two one-way pipes: commands GUI -> engine, events engine -> GUI, both the typed messages of
  :mod:`visiontune.app.logic.messages` (frozen dataclasses of picklable frozen values,
  :mod:`visiontune.app.logic.worker_values`). Commands run in the order sent, one at a time
  (:meth:`SessionHost.handle`, which dispatches on the command's type).
- The engine's log records travel as :class:`~visiontune.app.logic.messages.LogRecord` events and are
  re-logged in the GUI process, so the app has one log file.
- No orphan: the engine blocks on the command pipe; when the GUI process ends for any reason
  (even SIGKILL) the pipe closes, ``recv`` raises ``EOFError`` and the engine closes the
  session and the store and exits. It ignores SIGINT (a Ctrl-C in the terminal goes to the
  GUI, which closes the engine in order).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from multiprocessing.connection import Connection

from visiontune.app.logic.messages import Close, Command, EngineEvent, LogRecord
from visiontune.app.logic.session_host import SessionHost
from visiontune.errors import SessionError

LOGGER_NAME = "visiontune"
#: The start method: a fresh interpreter, no Qt state inherited (docs/design.md, "PsychoPy and Qt in one application").
CONTEXT = multiprocessing.get_context("spawn")
#: The engine's niceness increment (POSIX): under CPU contention the GUI's paint gets the core
#: first; on an idle machine it changes nothing (the two processes run on separate cores).
ENGINE_NICE = 5


class _PipeLogHandler(logging.Handler):
    """Sends each record (message already formatted, traceback as text) over the event pipe."""

    def __init__(self, send) -> None:
        super().__init__()
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        fields = {
            "name": record.name,
            "levelno": record.levelno,
            "levelname": record.levelname,
            "msg": record.getMessage(),
            "created": record.created,
            "msecs": record.msecs,
            "pathname": record.pathname,
            "lineno": record.lineno,
            "funcName": record.funcName,
            "process": record.process,
            "processName": record.processName,
        }
        if record.exc_info:
            fields["exc_text"] = logging.Formatter().formatException(record.exc_info)
        elif record.exc_text:
            fields["exc_text"] = record.exc_text
        self._send(LogRecord(fields))


def relog(fields: dict) -> None:
    """Log, in this process, a record forwarded by the engine (:class:`_PipeLogHandler`)."""
    record = logging.makeLogRecord(dict(fields, args=None))
    logger = logging.getLogger(record.name)
    if logger.isEnabledFor(record.levelno):
        logger.handle(record)


def serve(commands: Connection, events: Connection, log_level: int = logging.INFO, nice: int = 0) -> None:
    """The engine process's main loop: receive a command, run it, send its events; repeat.

    Ends after :class:`~visiontune.app.logic.messages.Close`, or when the command pipe closes (the GUI
    is gone), or when the event pipe breaks; in every case the session and the store are closed first.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice > 0 and hasattr(os, "nice"):
        os.nice(nice)
    parent_gone = False

    def send(event: EngineEvent) -> None:
        nonlocal parent_gone
        if parent_gone:
            return
        try:
            events.send(event)
        except (BrokenPipeError, ConnectionError, OSError):
            parent_gone = True

    root = logging.getLogger(LOGGER_NAME)
    root.setLevel(log_level)
    root.addHandler(_PipeLogHandler(send))
    root.propagate = False
    host = SessionHost(send)
    try:
        while not parent_gone:
            try:
                command = commands.recv()
            except (EOFError, OSError):
                break  # the GUI process is gone: close up and exit
            host.handle(command)  # a command of an unknown type is refused there (Failed), nothing done
            if isinstance(command, Close):
                break
    finally:
        host.shutdown()
        commands.close()
        events.close()


class EngineProcess:
    """The GUI's handle on one engine process (Qt-free): spawn, send commands, receive events.

    ``send`` is called from the GUI thread and ``recv`` from one relay thread (two separate
    one-way pipes, so the two never share a descriptor).
    """

    def __init__(self, log_level: int | None = None, nice: int | None = None) -> None:
        if log_level is None:
            log_level = logging.getLogger(LOGGER_NAME).getEffectiveLevel()
        nice = ENGINE_NICE if nice is None else nice
        cmd_recv, self._commands = CONTEXT.Pipe(duplex=False)
        self._events, evt_send = CONTEXT.Pipe(duplex=False)
        self.process = CONTEXT.Process(
            target=serve, args=(cmd_recv, evt_send, int(log_level), nice), name="visiontune-session-engine", daemon=True
        )
        self.process.start()
        # Only the child keeps its ends: its exit then closes the event pipe (EOF for the
        # relay) and our exit closes the command pipe (EOF for the child).
        cmd_recv.close()
        evt_send.close()

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def is_alive(self) -> bool:
        return self.process.is_alive()

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def send(self, command: Command) -> None:
        """Queue one command for the engine. Raises SessionError if the engine is gone."""
        try:
            self._commands.send(command)
        except (BrokenPipeError, ConnectionError, OSError, ValueError) as exc:
            raise SessionError(f"the session engine is not running ({type(exc).__name__})") from None

    def recv(self) -> EngineEvent:
        """The next event; blocks (releasing the GIL). EOFError once the engine is gone."""
        return self._events.recv()

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """Wait up to ``timeout_s`` for the engine to exit (after :class:`Close` or a crash), then
        terminate it, then kill it; close our pipe ends. Returns the exit code."""
        self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(2.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2.0)
        self._commands.close()
        return self.process.exitcode

    def close_events(self) -> None:
        """Close the event end (after the relay has stopped reading)."""
        self._events.close()
