"""The trial log: an embedded SQLite database, the session's source of truth.

Durability: WAL journal, ``synchronous=FULL``, foreign keys on, and every write in its own
``BEGIN IMMEDIATE ... COMMIT`` transaction, so an answer is on disk when
:meth:`SessionHandle.record_trial` returns. Trials and events are append-only (see
:mod:`visiontune.session.schema`); undoing a trial writes an ``undo`` event.

Files are created user-only (mode 0600; SQLite gives its ``-wal``/``-shm`` files the mode of
the database). Default location: ``$VISIONTUNE_DATA_DIR/visiontune.sqlite3`` if that variable is
set, else the platformdirs user data dir ``visiontune/visiontune.sqlite3``.

An existing file is checked read-only before anything is written: not SQLite, damaged
(``PRAGMA quick_check``) or of a newer schema -> :class:`StoreError` and the file is left
byte-for-byte as it was.

One process at a time may hold a session open: :meth:`TrialStore.open_session` takes an
exclusive ``flock`` on ``<db>.session-<id>.lock`` next to the database (POSIX only); the kernel
releases it when the handle is closed or the process dies.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import visiontune
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.session.migrations import SCHEMA_VERSION, apply_migrations, read_schema_version
from visiontune.session.records import (
    Event,
    EventKind,
    Eye,
    Lens,
    Patient,
    SessionInfo,
    SessionState,
    Trial,
    TrialInput,
)

DATA_DIR_ENV = "VISIONTUNE_DATA_DIR"
DATABASE_NAME = "visiontune.sqlite3"
_SQLITE_HEADER = b"SQLite format 3\x00"
_PATIENT_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")

Clock = Callable[[], datetime]


def default_database_path() -> Path:
    """``$VISIONTUNE_DATA_DIR/visiontune.sqlite3``, else the platformdirs user data dir."""
    env = os.environ.get(DATA_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser() / DATABASE_NAME
    import platformdirs

    return Path(platformdirs.user_data_dir("visiontune", appauthor=False)) / DATABASE_NAME


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _parse_ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _to_json(name: str, value: Any) -> str | None:
    """JSON text of a mapping / dataclass / JSON string (``None`` stays ``None``)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError as exc:
            raise InvalidInputError(f"{name}: not valid JSON text ({exc})") from None
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: cannot be stored as JSON ({exc})") from None


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _check_existing_file(path: Path) -> None:
    """Read-only checks of an existing database file; raise StoreError naming ``path``."""
    if not path.is_file():
        raise StoreError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size == 0:
        return  # an empty file is an empty database: initialised as version 0
    with open(path, "rb") as fh:
        header = fh.read(len(_SQLITE_HEADER))
    if header != _SQLITE_HEADER:
        raise StoreError(f"{path}: not a VisionTune trial log (not an SQLite database file)")
    wal = path.with_name(path.name + "-wal")
    # No -wal file: nobody has the database open and no crash left frames to recover, so it
    # can be read as immutable (no locks, no -wal/-shm files created next to it). If that read
    # fails, check again in ordinary read-only mode in case a writer appeared meanwhile.
    modes = ("ro&immutable=1", "ro") if not wal.exists() else ("ro",)
    for attempt, mode in enumerate(modes):
        try:
            _read_only_check(path, mode)
            return
        except StoreError:
            if attempt == len(modes) - 1 or not wal.exists():
                raise


def _read_only_check(path: Path, mode: str) -> None:
    """``PRAGMA quick_check`` and the schema version through a read-only connection."""
    uri = f"file:{quote(str(path))}?mode={mode}"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot be opened ({exc})") from None
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
        if rows != [("ok",)]:
            details = "; ".join(str(r[0]) for r in rows[:3])
            raise StoreError(f"{path}: the database is damaged (quick_check: {details})")
        version = read_schema_version(conn, path)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path}: schema version {version} is newer than this VisionTune supports "
                f"(version {SCHEMA_VERSION}); upgrade VisionTune to open it"
            )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: the database is damaged or not a trial log ({exc})") from None
    finally:
        conn.close()


class _SessionLock:
    """An exclusive, non-blocking ``flock`` on ``<db>.session-<id>.lock`` holding our pid."""

    def __init__(self, db_path: Path, session_id: int) -> None:
        import fcntl

        self.path = db_path.with_name(f"{db_path.name}.session-{session_id}.lock")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            where = "this process" if holder == str(os.getpid()) else "another process"
            raise SessionError(f"session {session_id} is open in {where} (pid {holder})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        os.fsync(fd)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


class TrialStore:
    """The trial log database. Use :meth:`open`; a context manager closing the connection."""

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Clock) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.path = path
        self._clock = clock

    # --- lifecycle --------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike | None = None, *, clock: Clock | None = None) -> TrialStore:
        """Open (creating if needed, mode 0600) and migrate the trial log at ``path``.

        ``path`` defaults to :func:`default_database_path`. ``clock`` returns aware datetimes
        (default: UTC now); tests inject a fake one.
        """
        path = Path(default_database_path() if path is None else path).expanduser().absolute()
        if path.exists():
            _check_existing_file(path)
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                _check_existing_file(path)  # created by another process in between
            except OSError as exc:
                raise StoreError(f"{path}: cannot create the trial log ({exc})") from None
        try:
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=10.0)
            conn.execute("PRAGMA foreign_keys = ON")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{path}: cannot switch to WAL journal (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            apply_migrations(conn, path)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the trial log ({exc})") from None
        return cls(conn, path, clock or _utc_now)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"{self.path}: the trial store is closed")
        return self._conn

    @property
    def schema_version(self) -> int:
        return read_schema_version(self.conn, self.path)

    def now(self) -> datetime:
        """The store clock (aware datetime)."""
        return self._clock()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction; any failure rolls back (sqlite errors -> StoreError)."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot start a write ({exc})") from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{self.path}: write failed ({exc})") from exc
            raise

    # --- patients ---------------------------------------------------------------------------
    def create_patient(self, patient_id: str) -> Patient:
        """Register a pseudonymous patient id (1-64 of ``A-Z a-z 0-9 . _ -``)."""
        if not isinstance(patient_id, str) or not 1 <= len(patient_id) <= 64 or not set(patient_id) <= _PATIENT_ID_CHARS:
            raise InvalidInputError(
                f"patient_id: expected 1-64 characters from A-Z a-z 0-9 . _ -, got {patient_id!r}"
            )
        created = self.now()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM patients WHERE id = ?", (patient_id,)).fetchone():
                raise InvalidInputError(f"patient_id: patient {patient_id!r} already exists")
            conn.execute("INSERT INTO patients (id, created_at) VALUES (?, ?)", (patient_id, _ts(created)))
        return self.get_patient(patient_id)

    def get_patient(self, patient_id: str) -> Patient:
        row = self.conn.execute("SELECT id, created_at FROM patients WHERE id = ?", (patient_id,)).fetchone()
        if row is None:
            raise InvalidInputError(f"patient_id: no patient {patient_id!r} in {self.path}")
        return Patient(row[0], _parse_ts(row[1]))

    def list_patients(self) -> list[Patient]:
        rows = self.conn.execute("SELECT id, created_at FROM patients ORDER BY created_at, id").fetchall()
        return [Patient(r[0], _parse_ts(r[1])) for r in rows]

    # --- sessions ---------------------------------------------------------------------------
    def create_session(
        self,
        patient_id: str,
        *,
        eye: Eye | str,
        protocol,
        seed: int | None = None,
        calibration: Any = None,
        simulated: bool = False,
        starting_rx: Any = None,
        software_version: str | None = None,
    ) -> int:
        """Create a session in state ``open``; return its id.

        ``protocol``: a :class:`~visiontune.session.protocol.Protocol` (its source text is
        snapshotted) or protocol TOML text (validated). ``seed`` defaults to the protocol's.
        ``calibration`` / ``starting_rx``: mapping, dataclass or JSON text, or ``None``.
        """
        from visiontune.session.protocol import Protocol, parse_protocol

        self.get_patient(patient_id)
        try:
            eye = Eye(eye)
        except ValueError:
            raise InvalidInputError(f"eye: expected one of OD, OS, OU, got {eye!r}") from None
        if isinstance(protocol, Protocol):
            protocol_obj = protocol
        elif isinstance(protocol, str):
            protocol_obj = parse_protocol(protocol, source="protocol")
        else:
            raise InvalidInputError(f"protocol: expected a Protocol or TOML text, got {type(protocol).__name__}")
        if seed is None:
            seed = protocol_obj.seed
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidInputError(f"seed: expected an integer >= 0, got {seed!r}")
        if not isinstance(simulated, bool):
            raise InvalidInputError(f"simulated: expected True or False, got {simulated!r}")
        row = (
            patient_id,
            eye.value,
            protocol_obj.source_text,
            software_version or visiontune.__version__,
            seed,
            _to_json("calibration", calibration),
            int(simulated),
            SessionState.OPEN.value,
            _ts(self.now()),
            _to_json("starting_rx", starting_rx),
        )
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO sessions (patient_id, eye, protocol_toml, software_version, seed, "
                "calibration_json, simulated, state, created_at, starting_rx_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cur.lastrowid)

    _SESSION_COLUMNS = (
        "id, patient_id, eye, protocol_toml, software_version, seed, simulated, state, "
        "created_at, finished_at, calibration_json, starting_rx_json, result_json"
    )

    @staticmethod
    def _session_from_row(r) -> SessionInfo:
        return SessionInfo(
            session_id=r[0], patient_id=r[1], eye=Eye(r[2]), protocol_toml=r[3], software_version=r[4],
            seed=r[5], simulated=bool(r[6]), state=SessionState(r[7]), created_at=_parse_ts(r[8]),
            finished_at=_parse_ts(r[9]), calibration_json=r[10], starting_rx_json=r[11], result_json=r[12],
        )  # fmt: skip

    def get_session(self, session_id: int) -> SessionInfo:
        """The session's row; SessionError if there is none."""
        row = self.conn.execute(
            f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionError(f"no session {session_id} in {self.path}")
        return self._session_from_row(row)

    def list_sessions(
        self, patient_id: str | None = None, state: SessionState | str | None = None
    ) -> list[SessionInfo]:
        """Sessions in creation order, optionally of one patient and/or in one state."""
        where, args = [], []
        if patient_id is not None:
            where.append("patient_id = ?")
            args.append(patient_id)
        if state is not None:
            try:
                where.append("state = ?")
                args.append(SessionState(state).value)
            except ValueError:
                raise InvalidInputError(f"state: expected open, paused or finished, got {state!r}") from None
        sql = f"SELECT {self._SESSION_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._session_from_row(r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def trials(self, session_id: int, include_void: bool = False) -> list[Trial]:
        """The session's trials in index order (read-only; no lock needed)."""
        self.get_session(session_id)
        rows = self.conn.execute(
            "SELECT t.session_id, t.idx, t.s_logmar, t.sphere_d, t.cylinder_d, t.axis_deg, "
            "t.sphere2_d, t.cylinder2_d, t.axis2_deg, t.letter_shown, t.letter_named, t.correct, "
            "t.presented_at, t.answered_at, "
            "EXISTS (SELECT 1 FROM events e WHERE e.trial_id = t.id AND e.kind = 'undo') "
            "FROM trials t WHERE t.session_id = ? ORDER BY t.idx",
            (session_id,),
        ).fetchall()
        out = [_trial_from_row(r) for r in rows]
        return out if include_void else [t for t in out if not t.void]

    def events(self, session_id: int) -> list[Event]:
        """The session's events in the order they were written."""
        self.get_session(session_id)
        rows = self.conn.execute(
            "SELECT e.id, e.session_id, e.kind, e.at, t.idx, e.payload_json FROM events e "
            "LEFT JOIN trials t ON t.id = e.trial_id WHERE e.session_id = ? ORDER BY e.id",
            (session_id,),
        ).fetchall()
        return [Event(r[0], r[1], EventKind(r[2]), _parse_ts(r[3]), r[4], r[5]) for r in rows]

    def open_session(self, session_id: int) -> SessionHandle:
        """Take the session's exclusive lock and return a handle to record into it.

        SessionError "session N is open in another process (pid P)" if someone holds it.
        """
        self.get_session(session_id)
        lock = _SessionLock(self.path, session_id)
        return SessionHandle(self, session_id, lock)


def _lens(s, c, a) -> Lens | None:
    return None if s is None else Lens(s, c, a)


def _trial_from_row(r) -> Trial:
    return Trial(
        session_id=r[0], index=r[1], s_logmar=r[2], lens=_lens(r[3], r[4], r[5]), lens2=_lens(r[6], r[7], r[8]),
        letter_shown=r[9], letter_named=r[10], correct=bool(r[11]), presented_at=_parse_ts(r[12]),
        answered_at=_parse_ts(r[13]), void=bool(r[14]),
    )  # fmt: skip


class SessionHandle:
    """A session held open by this process: record trials, undo, pause, resume, finish.

    Each call is one committed transaction. Use as a context manager (releases the lock).
    """

    def __init__(self, store: TrialStore, session_id: int, lock: _SessionLock) -> None:
        self._store = store
        self.session_id = session_id
        self._lock: _SessionLock | None = lock

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
        return SessionState(row[0])

    def _require(self, conn: sqlite3.Connection, action: str, *allowed: SessionState) -> None:
        state = self._state(conn)
        if state not in allowed:
            hint = {SessionState.PAUSED: "; resume it first", SessionState.FINISHED: ""}.get(state, "")
            raise SessionError(f"session {self.session_id} is {state.value}: cannot {action}{hint}")

    def _event(self, conn, kind: EventKind, at: datetime, trial_id=None, payload=None) -> None:
        conn.execute(
            "INSERT INTO events (session_id, kind, trial_id, at, payload_json) VALUES (?, ?, ?, ?, ?)",
            (self.session_id, kind.value, trial_id, _ts(at), payload),
        )

    def record_trial(self, trial: TrialInput) -> Trial:
        """Append one answered trial; it is durable (committed, fsynced) when this returns.

        SessionError if the session is paused or finished or the handle closed.
        """
        if not isinstance(trial, TrialInput):
            raise InvalidInputError(f"trial: expected a TrialInput, got {type(trial).__name__}")
        now = self._store.now()
        presented = trial.presented_at or now
        answered = trial.answered_at or max(now, presented)
        lens2 = trial.lens2
        with self._store._write() as conn:
            self._require(conn, "record a trial", SessionState.OPEN)
            index = conn.execute("SELECT count(*) FROM trials WHERE session_id = ?", (self.session_id,)).fetchone()[0]
            conn.execute(
                "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, sphere2_d, "
                "cylinder2_d, axis2_deg, letter_shown, letter_named, correct, presented_at, answered_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.session_id, index, trial.s_logmar, trial.lens.sphere_d, trial.lens.cylinder_d,
                    trial.lens.axis_deg, None if lens2 is None else lens2.sphere_d,
                    None if lens2 is None else lens2.cylinder_d, None if lens2 is None else lens2.axis_deg,
                    trial.letter_shown, trial.letter_named, int(trial.correct), _ts(presented), _ts(answered),
                ),
            )  # fmt: skip
        return Trial(
            session_id=self.session_id, index=index, s_logmar=trial.s_logmar, lens=trial.lens, lens2=lens2,
            letter_shown=trial.letter_shown, letter_named=trial.letter_named, correct=trial.correct,
            presented_at=_parse_ts(_ts(presented)), answered_at=_parse_ts(_ts(answered)), void=False,
        )  # fmt: skip

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
            payload = None if reason is None else _to_json("reason", {"reason": str(reason)})
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
        result_json = _to_json("result", result)
        with self._store._write() as conn:
            self._require(conn, "finish", SessionState.OPEN, SessionState.PAUSED)
            now = self._store.now()
            self._event(conn, EventKind.FINISH, now, payload=result_json)
            conn.execute(
                "UPDATE sessions SET state = 'finished', finished_at = ?, result_json = ? WHERE id = ?",
                (_ts(now), result_json, self.session_id),
            )

    def note(self, text: str, data: Any = None) -> None:
        """Append a note, allowed in any state (even finished). Payload ``{"text": text}``, plus
        ``"data"`` (JSON-able) when given, e.g. the hyperparameters fitted for this session."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"text: expected a non-empty string, got {text!r}")
        payload = {"text": text} if data is None else {"text": text, "data": json.loads(_to_json("data", data))}
        with self._store._write() as conn:
            self._state(conn)
            self._event(conn, EventKind.NOTE, self._store.now(), payload=json.dumps(payload, sort_keys=True))


__all__ = [
    "DATA_DIR_ENV",
    "DATABASE_NAME",
    "SessionHandle",
    "TrialStore",
    "default_database_path",
]
