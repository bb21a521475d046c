"""The trial log's trials and events: reading them (:class:`TrialsAndEvents`, a part of
:class:`~visiontune.session.store.TrialStore`) and writing them through a session held open by
this process (:class:`SessionHandle`, holding the session's :class:`SessionLock`).

Trials and events are append-only: undoing a trial writes an ``undo`` event, a trial row never
changes. Every write is one committed transaction (the store's ``_write``), so an answer is on
disk when :meth:`SessionHandle.record_trial` returns. One process at a time may hold a session
open: an exclusive ``flock`` on ``<db>.session-<id>.lock`` next to the database (POSIX only),
released by the kernel when the handle is closed or the process dies.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from visiontune import private_files
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.refraction.trial import Trial, check_next
from visiontune.session.records import (
    Event,
    EventKind,
    SessionInfo,
    SessionState,
    json_problem,
    slider_path_from_json,
    slider_path_json,
)
from visiontune.session.store_columns import (
    check_session_id,
    checked_ts,
    lens_columns,
    lens_from_columns,
    parse_ts,
    text_problem,
    to_json,
    ts_text,
)

__all__ = ["MAX_DISCARD_REASON_CHARS", "SessionHandle", "SessionLock", "TrialsAndEvents"]

#: Longest reason a discarded session may record (characters).
MAX_DISCARD_REASON_CHARS = 500


class TrialsAndEvents:
    """The trial log's trials and events, read; sessions opened to write them (a part of
    :class:`~visiontune.session.store.TrialStore`, which gives it ``conn``, ``path`` and
    ``get_session``)."""

    def trial_count(self, session_id: int, include_void: bool = False) -> int:
        """How many trials the session holds (not void ones unless ``include_void``), without
        reading their contents (so a damaged trial row does not stop a listing)."""
        sid = check_session_id(session_id)
        sql = "SELECT count(*) FROM trials t WHERE t.session_id = ?"
        if not include_void:
            sql += " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.trial_id = t.id AND e.kind = 'undo')"
        return int(self.conn.execute(sql, (sid,)).fetchone()[0])

    def trials(self, session_id: int, include_void: bool = False) -> list[Trial]:
        """The session's trials in index order (read-only; no lock needed). StoreError naming
        the session and the trial if a stored trial is damaged."""
        session_id = self.get_session(session_id).session_id
        rows = self.conn.execute(
            "SELECT t.session_id, t.idx, t.s_logmar, t.sphere_d, t.cylinder_d, t.axis_deg, "
            "t.sphere2_d, t.cylinder2_d, t.axis2_deg, t.letter_shown, t.letter_named, t.correct, "
            "t.presented_at, t.answered_at, "
            "EXISTS (SELECT 1 FROM events e WHERE e.trial_id = t.id AND e.kind = 'undo'), t.comparison, "
            "t.slider_knob, t.slider_path, t.slider_choice, t.line_correct, "
            "t.frame_sphere_d, t.frame_cylinder_d, t.frame_axis_deg "
            "FROM trials t WHERE t.session_id = ? ORDER BY t.idx",
            (session_id,),
        ).fetchall()
        out = [_trial_from_row(r, f"session {session_id} in {self.path}") for r in rows]
        return out if include_void else [t for t in out if not t.void]

    def events(self, session_id: int) -> list[Event]:
        """The session's events in the order they were written (StoreError if one is damaged)."""
        session_id = self.get_session(session_id).session_id
        rows = self.conn.execute(
            "SELECT e.id, e.session_id, e.kind, e.at, t.idx, e.payload_json FROM events e "
            "LEFT JOIN trials t ON t.id = e.trial_id WHERE e.session_id = ? ORDER BY e.id",
            (session_id,),
        ).fetchall()
        return [_event_from_row(r, f"session {session_id} in {self.path}") for r in rows]

    def open_session(self, session_id: int) -> SessionHandle:
        """Take the session's exclusive lock and return a handle to record into it.

        SessionError "session N is open in another process (pid P)" if someone holds it.
        """
        session_id = self.get_session(session_id).session_id
        lock = SessionLock(self.path, session_id)
        return SessionHandle(self, session_id, lock)


def _trial_from_row(r, where: str) -> Trial:
    damage: list[str] = []
    for column, value in (("letter_shown", r[9]), ("letter_named", r[10])):
        if value is not None and (problem := text_problem(value)) is not None:
            damage.append(f"{column}: {problem}")
    presented = checked_ts("presented_at", r[12], damage)
    answered = checked_ts("answered_at", r[13], damage)
    if not damage:
        try:
            return Trial(
                session_id=r[0],
                index=r[1],
                s_logmar=r[2],
                lens=lens_from_columns(r[3], r[4], r[5]),
                lens2=lens_from_columns(r[6], r[7], r[8]),
                letter_shown=r[9],
                letter_named=r[10],
                correct=bool(r[11]),
                presented_at=presented,
                answered_at=answered,
                void=bool(r[14]),
                comparison=r[15],
                slider_knob=r[16],
                slider_lenses=None if r[17] is None else slider_path_from_json(r[17]),
                slider_choice=r[18],
                line_correct=r[19],
                frame_lens=lens_from_columns(r[20], r[21], r[22]),
            )
        except (InvalidInputError, TypeError, ValueError) as exc:
            damage.append(str(exc))
    raise StoreError(f"{where}: trial {r[1]} is damaged: {'; '.join(damage)}")


def _event_from_row(r, where: str) -> Event:
    damage: list[str] = []
    try:
        kind = EventKind(r[2])
    except ValueError:
        damage.append(f"kind: {str(r[2])[:40]!r} is not an event kind")
    at = checked_ts("at", r[3], damage)
    if r[5] is not None and (problem := json_problem(r[5]) if isinstance(r[5], str) else "not text") is not None:
        damage.append(f"payload_json: {problem}")
    if damage:
        raise StoreError(f"{where}: event {r[0]} is damaged: {'; '.join(damage)}")
    return Event(r[0], r[1], kind, at, r[4], r[5])


class SessionHandle:
    """A session held open by this process: record trials, undo, pause, resume, finish.

    Each call is one committed transaction. Use as a context manager (releases the lock).
    ``store``: the :class:`~visiontune.session.store.TrialStore` (of which :class:`TrialsAndEvents`
    is a part) whose one-transaction ``_write`` and clock it writes with.
    """

    def __init__(self, store: TrialsAndEvents, session_id: int, lock: SessionLock) -> None:
        self._store = store
        self.session_id = session_id
        self._lock: SessionLock | None = lock

    def close(self) -> None:
        """Release the session lock (idempotent); the session keeps its state."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __del__(self) -> None:  # a dropped handle must not keep the session locked
        self.close()

    def __enter__(self) -> SessionHandle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def info(self) -> SessionInfo:
        return self._store.get_session(self.session_id)

    @property
    def protocol(self):
        """The session's protocol snapshot, parsed."""
        return self.info.protocol

    def trials(self, include_void: bool = False) -> list[Trial]:
        return self._store.trials(self.session_id, include_void)

    def events(self) -> list[Event]:
        return self._store.events(self.session_id)

    def _state(self, conn: sqlite3.Connection) -> SessionState:
        if self._lock is None:
            raise SessionError(f"session {self.session_id}: the handle is closed")
        row = conn.execute("SELECT state FROM sessions WHERE id = ?", (self.session_id,)).fetchone()
        try:
            return SessionState(row[0])
        except (TypeError, ValueError):
            raise StoreError(
                f"session {self.session_id} in {self._store.path} is damaged: "
                f"state: {str(row and row[0])[:40]!r} is not a session state"
            ) from None

    def _require(self, conn: sqlite3.Connection, action: str, *allowed: SessionState) -> None:
        state = self._state(conn)
        if state not in allowed:
            hint = {SessionState.PAUSED: "; resume it first", SessionState.FINISHED: ""}.get(state, "")
            raise SessionError(f"session {self.session_id} is {state.value}: cannot {action}{hint}")

    def _event(self, conn, kind: EventKind, at: datetime, trial_id=None, payload=None) -> None:
        conn.execute(
            "INSERT INTO events (session_id, kind, trial_id, at, payload_json) VALUES (?, ?, ?, ?, ?)",
            (self.session_id, kind.value, trial_id, ts_text(at), payload),
        )

    def record_trial(self, trial: Trial) -> Trial:
        """Append one answered trial (its ``index`` the session's next,
        :func:`~visiontune.refraction.trial.check_next`); it is durable (committed, fsynced) when
        this returns, and returned as it will be read back: ``session_id`` set, ``presented_at``
        (when ``None``) and ``answered_at`` stamped by the store clock.

        SessionError if the session is paused or finished or the handle closed.
        """
        if not isinstance(trial, Trial):
            raise InvalidInputError(f"trial: expected a Trial, got {type(trial).__name__}")
        now = self._store.now()
        presented = parse_ts(ts_text(trial.presented_at or now))
        answered = parse_ts(ts_text(trial.answered_at or max(now, presented)))
        with self._store._write() as conn:
            self._require(conn, "record a trial", SessionState.OPEN)
            index = conn.execute("SELECT count(*) FROM trials WHERE session_id = ?", (self.session_id,)).fetchone()[0]
            check_next(trial, index)
            conn.execute(
                "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, sphere2_d, "
                "cylinder2_d, axis2_deg, letter_shown, letter_named, correct, presented_at, answered_at, comparison, "
                "slider_knob, slider_path, slider_choice, line_correct, frame_sphere_d, frame_cylinder_d, "
                "frame_axis_deg) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.session_id,
                    index,
                    trial.s_logmar,
                    *lens_columns(trial.lens),
                    *lens_columns(trial.lens2),
                    trial.letter_shown,
                    trial.letter_named,
                    int(trial.correct),
                    ts_text(presented),
                    ts_text(answered),
                    trial.comparison,
                    trial.slider_knob,
                    None if trial.slider_lenses is None else slider_path_json(trial.slider_lenses),
                    trial.slider_choice,
                    trial.line_correct,
                    *lens_columns(trial.frame_lens),
                ),
            )
        return dataclasses.replace(trial, session_id=self.session_id, presented_at=presented, answered_at=answered)

    def undo(self, reason: str | None = None) -> Trial | None:
        """Void the last non-void trial with an ``undo`` event and return it (``void=True``).

        Returns ``None`` (and writes nothing) when no trial is left to void.
        """
        with self._store._write() as conn:
            self._require(conn, "undo", SessionState.OPEN)
            row = conn.execute(
                "SELECT id, idx FROM trials t WHERE session_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM events e WHERE e.trial_id = t.id AND e.kind = 'undo') ORDER BY idx DESC LIMIT 1",
                (self.session_id,),
            ).fetchone()
            if row is None:
                return None
            payload = None if reason is None else to_json("reason", {"reason": str(reason)})
            self._event(conn, EventKind.UNDO, self._store.now(), trial_id=row[0], payload=payload)
        return next(t for t in self.trials(include_void=True) if t.index == row[1])

    def pause(self) -> None:
        """``open`` -> ``paused`` (a ``pause`` event)."""
        self._transition(EventKind.PAUSE, SessionState.PAUSED, "pause", SessionState.OPEN)

    def resume(self) -> None:
        """``paused`` -> ``open`` (a ``resume`` event)."""
        self._transition(EventKind.RESUME, SessionState.OPEN, "resume", SessionState.PAUSED)

    def _transition(self, kind: EventKind, to: SessionState, action: str, *allowed: SessionState) -> None:
        with self._store._write() as conn:
            self._require(conn, action, *allowed)
            self._event(conn, kind, self._store.now())
            conn.execute("UPDATE sessions SET state = ? WHERE id = ?", (to.value, self.session_id))

    def finish(self, result: Any) -> None:
        """``open``/``paused`` -> ``finished`` (final), storing ``result`` (mapping, dataclass or JSON)."""
        result_json = to_json("result", result)
        with self._store._write() as conn:
            self._require(conn, "finish", SessionState.OPEN, SessionState.PAUSED)
            now = self._store.now()
            self._event(conn, EventKind.FINISH, now, payload=result_json)
            conn.execute(
                "UPDATE sessions SET state = 'finished', finished_at = ?, result_json = ? WHERE id = ?",
                (ts_text(now), result_json, self.session_id),
            )

    def discard(self, reason: str) -> None:
        """Close an ``open``/``paused`` session that has no answers, for good and on the record:
        a ``finish`` event and ``result_json`` ``{"discarded": true, "reason": reason}`` (the row,
        its events and any voided trials stay; nothing is deleted). A discarded session is
        never resumed and :meth:`TrialStore.list_sessions` leaves it out unless asked.

        SessionError if the session holds a valid answer (finish it instead) or is finished."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInputError(f"reason: expected a non-empty text saying why, got {reason!r}")
        if len(reason) > MAX_DISCARD_REASON_CHARS:
            raise InvalidInputError(
                f"reason: expected at most {MAX_DISCARD_REASON_CHARS} characters, got {len(reason)}"
            )
        record = json.dumps({"discarded": True, "reason": reason.strip()}, sort_keys=True)
        with self._store._write() as conn:
            self._require(conn, "discard it", SessionState.OPEN, SessionState.PAUSED)
            answers = conn.execute(
                "SELECT count(*) FROM trials t WHERE t.session_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM events e WHERE e.trial_id = t.id AND e.kind = 'undo')",
                (self.session_id,),
            ).fetchone()[0]
            if answers:
                raise SessionError(
                    f"session {self.session_id} holds {answers} answer{'s' if answers != 1 else ''}: "
                    "only a session without answers can be discarded (finish it instead)"
                )
            now = self._store.now()
            self._event(conn, EventKind.FINISH, now, payload=record)
            conn.execute(
                "UPDATE sessions SET state = 'finished', finished_at = ?, result_json = ? WHERE id = ?",
                (ts_text(now), record, self.session_id),
            )

    def note(self, text: str, data: Any = None) -> None:
        """Append a note, allowed in any state (even finished). Payload ``{"text": text}``, plus
        ``"data"`` (JSON-able) when given, e.g. the hyperparameters fitted for this session."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"text: expected a non-empty string, got {text!r}")
        payload = {"text": text} if data is None else {"text": text, "data": json.loads(to_json("data", data))}
        with self._store._write() as conn:
            self._state(conn)
            self._event(conn, EventKind.NOTE, self._store.now(), payload=json.dumps(payload, sort_keys=True))


class SessionLock:
    """An exclusive, non-blocking ``flock`` on ``<db>.session-<id>.lock`` holding our pid."""

    def __init__(self, db_path: Path, session_id: int) -> None:
        self.path = db_path.with_name(f"{db_path.name}.session-{session_id}.lock")
        self._fd: int | None = None
        try:
            fd = self._acquire(session_id)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            os.fsync(fd)
        except OSError as exc:
            if self._fd is not None:
                self.release()
            raise StoreError(f"{self.path}: cannot lock session {session_id} ({exc.strerror or exc})") from None

    def _acquire(self, session_id: int) -> int:
        """Open and flock the lock file; retry when its previous holder removed it between
        our open and our flock (the descriptor then names a file no longer at the path)."""
        import fcntl

        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        for _ in range(100):
            fd = private_files.open_private_fd(self.path, flags)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                where = "this process" if holder == str(os.getpid()) else "another process"
                raise SessionError(f"session {session_id} is open in {where} (pid {holder})") from None
            mine = os.fstat(fd)
            try:
                there = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                there = None
            if there is not None and (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                self._fd = fd
                return fd
            os.close(fd)
        raise SessionError(f"session {session_id}: its lock file {self.path} keeps changing; try again")

    def release(self) -> None:
        """Remove the lock file (still holding the lock, so nobody else holds it) and unlock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            mine = os.fstat(fd)
            there = os.stat(self.path, follow_symlinks=False)
            if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                os.unlink(self.path)
        except OSError:
            pass  # already gone, or a read-only folder: the file stays, harmless
        finally:
            os.close(fd)  # closing the descriptor releases the flock
