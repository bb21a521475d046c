"""The trial log: an embedded SQLite database, the session's source of truth.

Durability: WAL journal, ``synchronous=FULL``, foreign keys on, and every write in its own
``BEGIN IMMEDIATE ... COMMIT`` transaction, so an answer is on disk when
:meth:`SessionHandle.record_trial` returns. Trials and events are append-only (see
:mod:`visiontune.session.schema`); undoing a trial writes an ``undo`` event. Sessions are never
deleted: one without answers (a protocol an older version accepted and the engine refused)
can be discarded, which closes it for good with the reason on record
(:meth:`SessionHandle.discard`).

Files are user-only whatever the umask: the database, its ``-wal``/``-shm`` files (SQLite
gives them the database's mode) and the session lock files are 0600, a folder created for
them 0700. Default location: ``$VISIONTUNE_DATA_DIR/visiontune.sqlite3`` if that variable is
set, else the platformdirs user data dir ``visiontune/visiontune.sqlite3``.

An existing file is checked read-only before anything is written: not SQLite, damaged
(``PRAGMA quick_check``) or of a newer schema -> :class:`StoreError` and the file is left
byte-for-byte as it was. A new database that cannot be initialised (a full disk) is removed
again, not left as a 0-byte file.

Damage SQLite's checks do not see (text that is not UTF-8, JSON that does not parse, a
timestamp that is not one) is confined to its session: :meth:`TrialStore.list_sessions`
returns such a session with :attr:`SessionInfo.damage` saying what is wrong and the others
intact; :meth:`TrialStore.get_session`, :meth:`TrialStore.trials` and the session's parsing
properties raise :class:`StoreError` for it.

One process at a time may hold a session open: :meth:`TrialStore.open_session` takes an
exclusive ``flock`` on ``<db>.session-<id>.lock`` next to the database (POSIX only); the kernel
releases it when the handle is closed or the process dies. Closing the handle removes the
lock file (while still holding the lock; a process that opened the old file meanwhile sees it
is no longer the file at that path and retries).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import operator
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import visiontune
from visiontune import output_guard, private_files
from visiontune._validate import check_int, check_number
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.optics import Prescription
from visiontune.output_guard import DATA_DIR_ENV, DATABASE_NAME
from visiontune.refraction.protocol import Protocol, parse_protocol
from visiontune.refraction.trial import Trial, check_next
from visiontune.session import store_open
from visiontune.session import visit_records as vr
from visiontune.session.migrations import SCHEMA_VERSION, apply_migrations, read_schema_version
from visiontune.session.records import (
    DamagedText,
    Event,
    EventKind,
    Eye,
    Patient,
    SessionInfo,
    SessionState,
    decode_text,
    json_problem,
    lens_fields,
    slider_path_from_json,
    slider_path_json,
)

_SQLITE_HEADER = b"SQLite format 3\x00"
_PATIENT_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
#: SQLite integers are signed 64-bit: the largest session id there can be.
MAX_SESSION_ID = 2**63 - 1
#: Longest reason a discarded session may record (characters).
MAX_DISCARD_REASON_CHARS = 500
#: Seconds a read-only check waits for another program's lock before saying it is locked.
READ_CHECK_TIMEOUT_S = 5.0
#: Seconds a connection waits for another writer's lock before a write fails as locked.
LOCK_TIMEOUT_S = 10.0

Clock = Callable[[], datetime]


def default_database_path() -> Path:
    """``$VISIONTUNE_DATA_DIR/visiontune.sqlite3``, else the platformdirs user data dir."""
    return output_guard.default_trial_log_path()


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _parse_ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _session_id(value: Any) -> int:
    """``value`` as a session id SQLite can hold; StoreError if it is outside int64."""
    if isinstance(value, bool):
        raise InvalidInputError(f"session_id: expected an integer session id, got {value!r}")
    try:
        sid = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"session_id: expected an integer session id, got {value!r}") from None
    if not -MAX_SESSION_ID - 1 <= sid <= MAX_SESSION_ID:
        raise StoreError(f"session id {sid} is out of range: trial log session ids are 1 to {MAX_SESSION_ID}")
    return sid


_is_locked = store_open.is_locked
_locked_error = store_open.locked_error


def _text_problem(value: Any) -> str | None:
    if isinstance(value, DamagedText):
        return "not valid UTF-8 text"
    if not isinstance(value, str):
        return f"expected text, found {type(value).__name__} {repr(value)[:40]}"
    return None


def _checked_ts(column: str, value: Any, damage: list[str], *, optional: bool = False) -> datetime | None:
    """``value`` parsed as an aware ISO 8601 timestamp, or ``None`` with a line in ``damage``."""
    if value is None and optional:
        return None
    problem = _text_problem(value)
    if problem is None:
        try:
            ts = datetime.fromisoformat(value)
        except ValueError:
            problem = f"{value[:40]!r} is not an ISO 8601 timestamp"
        else:
            if ts.tzinfo is not None and ts.utcoffset() is not None:
                return ts
            problem = f"{value[:40]!r} has no time zone"
    damage.append(f"{column}: {problem}")
    return None


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
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{path}: not a regular file")
        if st.st_size == 0:
            return  # an empty file is an empty database: initialised as version 0
        with open(path, "rb") as fh:
            header = fh.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the trial log ({exc.strerror or exc})") from None
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


#: Public name of the read-only check (used by the exports, which must not write the log).
check_existing_database = _check_existing_file


def _read_only_connect(path: Path, mode: str) -> sqlite3.Connection:
    uri = f"file:{quote(str(path))}?mode={mode}"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=READ_CHECK_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot be opened ({exc})") from None
    conn.text_factory = decode_text
    return conn


def read_schema_version_read_only(path: str | os.PathLike) -> int:
    """The schema version of the trial log at ``path``, read without writing anything (no
    ``-wal``/``-shm`` files are created when none exist)."""
    path = Path(path)
    wal = path.with_name(path.name + "-wal")
    conn = _read_only_connect(path, "ro" if wal.exists() else "ro&immutable=1")
    try:
        return read_schema_version(conn, path)
    except sqlite3.Error as exc:
        if _is_locked(exc):
            raise _locked_error(path, exc) from None
        raise StoreError(f"{path}: not a readable trial log ({exc})") from None
    finally:
        conn.close()


def _read_only_check(path: Path, mode: str) -> None:
    """``PRAGMA quick_check`` and the schema version through a read-only connection."""
    conn = _read_only_connect(path, mode)
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
        if rows != [("ok",)]:
            details = "; ".join(" ".join(str(r[0]).split()) for r in rows[:3])
            raise StoreError(f"{path}: the database is damaged (quick_check: {details})")
        version = read_schema_version(conn, path)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path}: schema version {version} is newer than this VisionTune supports "
                f"(version {SCHEMA_VERSION}); upgrade VisionTune to open it"
            )
    except sqlite3.Error as exc:
        if _is_locked(exc):
            raise _locked_error(path, exc) from None
        raise StoreError(f"{path}: the database is damaged or not a trial log ({exc})") from None
    finally:
        conn.close()


class _SessionLock:
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


def _remove_new_database(path: Path) -> None:
    """Remove a database this process has just created and could not initialise."""
    for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        try:
            os.unlink(p)
        except OSError:
            pass


def _make_user_only(path: Path) -> None:
    """Set the database and its ``-wal``/``-shm`` files to 0600 when this user owns them."""
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        private_files.make_private(p)


class TrialStore:
    """The trial log database. Use :meth:`open`; a context manager closing the connection."""

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Clock) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.path = path
        self._clock = clock

    # --- lifecycle --------------------------------------------------------------------------
    @classmethod
    def open(
        cls, path: str | os.PathLike | None = None, *, clock: Clock | None = None, read_only: bool = False
    ) -> TrialStore:
        """Open (creating if needed, mode 0600) and migrate the trial log at ``path``.

        ``path`` defaults to :func:`default_database_path`. ``clock`` returns aware datetimes
        (default: UTC now); tests inject a fake one. ``read_only``: read an existing log
        without writing anything, not even ``-wal``/``-shm`` files
        (:func:`~visiontune.session.store_open.connect_read_only`; StoreError "no such trial
        log" for a missing one); a log of an older schema is first upgraded as without it.
        """
        default = path is None
        path = Path(default_database_path() if path is None else path).expanduser().absolute()
        if read_only:
            store = cls._open_read_only(path, clock)
            if store is not None:
                return store
        created = False
        try:
            if os.path.lexists(path):
                _check_existing_file(path)
                store_open.check_room_to_write(path)
            else:
                store_open.check_room_to_write(path)
                private_files.private_dir(path.parent, tighten=default, error=StoreError)
                try:
                    private_files.create_private(path)
                    created = True
                except FileExistsError:
                    _check_existing_file(path)  # created by another process in between
        except OSError as exc:  # a name too long (ENAMETOOLONG), no space for the new file...
            raise store_open.os_failure(path, exc, "cannot create the trial log") from None
        conn = None
        try:
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=LOCK_TIMEOUT_S)
            conn.text_factory = decode_text
            conn.execute("PRAGMA foreign_keys = ON")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{path}: cannot switch to WAL journal (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            apply_migrations(conn, path)
            _make_user_only(path)
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if created:
                _remove_new_database(path)  # no 0-byte or half-initialised file left behind
            if isinstance(exc, sqlite3.Error):
                raise store_open.sqlite_failure(path, exc, "cannot open the trial log") from None
            if isinstance(exc, OSError):
                raise StoreError(f"{path}: cannot open the trial log ({exc.strerror or exc})") from None
            raise
        return cls(conn, path, clock or _utc_now)

    @classmethod
    def _open_read_only(cls, path: Path, clock: Clock | None) -> TrialStore | None:
        """The log at ``path`` opened read-only, or ``None`` when it is of an older schema
        (an empty file is version 0) and must be upgraded by an ordinary open first."""
        conn = store_open.connect_read_only(path, READ_CHECK_TIMEOUT_S)
        try:
            _check_existing_file(path)  # header, quick_check, newer schema
            conn.text_factory = decode_text
            version = read_schema_version(conn, path)
        except sqlite3.Error as exc:
            conn.close()
            raise store_open.sqlite_failure(path, exc, "not a readable trial log") from None
        except BaseException:
            conn.close()
            raise
        if version < SCHEMA_VERSION:
            conn.close()
            return None
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
            raise store_open.sqlite_failure(self.path, exc, "cannot start a write") from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise store_open.sqlite_failure(self.path, exc, "write failed") from exc
            raise

    # --- patients ---------------------------------------------------------------------------
    def create_patient(self, patient_id: str) -> Patient:
        """Register a pseudonymous patient id (1-64 of ``A-Z a-z 0-9 . _ -``)."""
        if (
            not isinstance(patient_id, str)
            or not 1 <= len(patient_id) <= 64
            or not set(patient_id) <= _PATIENT_ID_CHARS
        ):
            raise InvalidInputError(f"patient_id: expected 1-64 characters from A-Z a-z 0-9 . _ -, got {patient_id!r}")
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
        return self._patient_from_row(row)

    def list_patients(self) -> list[Patient]:
        rows = self.conn.execute("SELECT id, created_at FROM patients ORDER BY created_at, id").fetchall()
        return [self._patient_from_row(r) for r in rows]

    def _patient_from_row(self, r) -> Patient:
        damage: list[str] = []
        if (problem := _text_problem(r[0])) is not None:
            damage.append(f"id: {problem}")
        created = _checked_ts("created_at", r[1], damage)
        if damage:
            raise StoreError(f"{self.path}: patient {str(r[0])[:64]!r} is damaged: {'; '.join(damage)}")
        return Patient(r[0], created)

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

        ``protocol``: a :class:`~visiontune.refraction.protocol.Protocol` (its source text is
        snapshotted) or protocol TOML text (validated). ``seed`` defaults to the protocol's.
        ``calibration`` / ``starting_rx``: mapping, dataclass or JSON text, or ``None``.
        """

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
        seed = check_int("seed", seed, lo=0)
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
        """The row as a SessionInfo; a damaged column is ``None`` and named in ``damage``."""
        damage: list[str] = []

        def text(column: str, value: Any) -> str | None:
            problem = _text_problem(value)
            if problem is not None:
                damage.append(f"{column}: {problem}")
                return value if isinstance(value, str) else None
            return value

        def enum(column: str, kind, value: Any):
            try:
                return kind(value)
            except ValueError:
                damage.append(f"{column}: {str(value)[:40]!r} is not one of {', '.join(m.value for m in kind)}")
                return None

        patient_id = text("patient_id", r[1])
        eye = enum("eye", Eye, r[2])
        protocol_toml = text("protocol_toml", r[3])
        software_version = text("software_version", r[4])
        seed = r[5]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            damage.append(f"seed: expected an integer >= 0, found {str(seed)[:40]!r}")
            seed = None
        if r[6] not in (0, 1):
            damage.append(f"simulated: expected 0 or 1, found {str(r[6])[:40]!r}")
        state = enum("state", SessionState, r[7])
        created_at = _checked_ts("created_at", r[8], damage)
        finished_at = _checked_ts("finished_at", r[9], damage, optional=True)
        json_columns = (("calibration_json", r[10]), ("starting_rx_json", r[11]), ("result_json", r[12]))
        for column, value in json_columns:
            if value is not None and not isinstance(value, str):
                damage.append(f"{column}: expected JSON text, found {type(value).__name__}")
                continue
            problem = json_problem(value)
            if problem is not None:
                damage.append(f"{column}: {problem}")
        return SessionInfo(
            session_id=r[0],
            patient_id=patient_id,
            eye=eye,
            protocol_toml=protocol_toml,
            software_version=software_version,
            seed=seed,
            simulated=r[6] == 1,
            state=state,
            created_at=created_at,
            finished_at=finished_at,
            calibration_json=r[10],
            starting_rx_json=r[11],
            result_json=r[12],
            damage=tuple(damage),
        )

    def get_session(self, session_id: int, *, allow_damaged: bool = False) -> SessionInfo:
        """The session's row; SessionError if there is none, StoreError if the id cannot be a
        session id (outside SQLite's 64-bit integers) or the row is damaged (saying what is
        wrong) unless ``allow_damaged`` (then see :attr:`SessionInfo.damage`)."""
        sid = _session_id(session_id)
        row = self.conn.execute(f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,)).fetchone()
        if row is None:
            raise SessionError(f"no session {sid} in {self.path}")
        info = self._session_from_row(row)
        if info.damage and not allow_damaged:
            raise StoreError(f"session {sid} in {self.path} is damaged: {'; '.join(info.damage)}")
        return info

    def list_sessions(
        self,
        patient_id: str | None = None,
        state: SessionState | str | None = None,
        *,
        include_discarded: bool = False,
    ) -> list[SessionInfo]:
        """Sessions in creation order, optionally of one patient and/or in one state.

        A damaged session is listed too, with :attr:`SessionInfo.damage` saying what is wrong;
        it never hides or breaks the others. A discarded session (:meth:`SessionHandle.discard`)
        is left out unless ``include_discarded``."""
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
        infos = [self._session_from_row(r) for r in self.conn.execute(sql + " ORDER BY id", args)]
        return infos if include_discarded else [i for i in infos if not i.discarded]

    def trial_count(self, session_id: int, include_void: bool = False) -> int:
        """How many trials the session holds (not void ones unless ``include_void``), without
        reading their contents (so a damaged trial row does not stop a listing)."""
        sid = _session_id(session_id)
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
            "t.slider_knob, t.slider_path, t.slider_choice, t.line_correct "
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
        lock = _SessionLock(self.path, session_id)
        return SessionHandle(self, session_id, lock)

    # --- visits (schema v2: visiontune.session.visit_schema) --------------------------------
    # Values and checks live in visiontune.session.visit_records (imported here, per method,
    # to keep this block self-contained).
    _VISIT_COLUMNS = (
        "id, patient_id, age_years, habitual_od_json, habitual_os_json, cylinder_form, clinician, "
        "simulated, software_version, created_at"
    )

    def create_visit(
        self,
        patient_id: str,
        *,
        age_years: int | None = None,
        habitual_od=None,
        habitual_os=None,
        cylinder_form: str = "minus",
        clinician: str | None = None,
        simulated: bool = False,
        software_version: str | None = None,
    ) -> int:
        """Create a visit of an existing patient; return its id. ``age_years``: whole years
        0-130 or ``None``; ``habitual_od`` / ``habitual_os``: the spectacles worn
        (:class:`~visiontune.optics.Prescription`) or ``None``; ``cylinder_form``: the
        clinic's ``"minus"`` or ``"plus"``; ``clinician``: who refracts, optional."""

        self.get_patient(patient_id)
        if age_years is not None:
            age_years = check_int("age_years", age_years, 0, 130)
        habitual = [
            None if rx is None else vr.check_prescription(f"habitual_{e.lower()}", rx)
            for e, rx in (("OD", habitual_od), ("OS", habitual_os))
        ]
        if cylinder_form not in vr.CYLINDER_FORMS:
            raise InvalidInputError(f"cylinder_form: expected 'minus' or 'plus', got {cylinder_form!r}")
        clinician = vr.check_name("clinician", clinician, optional=True)
        if not isinstance(simulated, bool):
            raise InvalidInputError(f"simulated: expected True or False, got {simulated!r}")
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO visits (patient_id, age_years, habitual_od_json, habitual_os_json, cylinder_form, "
                "clinician, simulated, software_version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    patient_id,
                    age_years,
                    vr.rx_json(habitual[0]),
                    vr.rx_json(habitual[1]),
                    cylinder_form,
                    clinician,
                    int(simulated),
                    software_version or visiontune.__version__,
                    _ts(self.now()),
                ),
            )
            return int(cur.lastrowid)

    def get_visit(self, visit_id: int):
        """The visit's :class:`~visiontune.session.visit_records.VisitInfo`; SessionError if
        there is none, StoreError if its row is damaged."""

        vid = check_int("visit_id", visit_id)
        row = None
        if 1 <= vid <= MAX_SESSION_ID:
            row = self.conn.execute(f"SELECT {self._VISIT_COLUMNS} FROM visits WHERE id = ?", (vid,)).fetchone()
        if row is None:
            raise SessionError(f"no visit {vid} in {self.path}")
        return vr.VisitInfo.from_row(row)

    def list_visits(self, patient_id: str | None = None) -> list:
        """Visits in creation order (of one patient when ``patient_id`` is given)."""

        sql, args = f"SELECT {self._VISIT_COLUMNS} FROM visits", ()
        if patient_id is not None:
            sql, args = sql + " WHERE patient_id = ?", (patient_id,)
        return [vr.VisitInfo.from_row(r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def visit_eyes(self, visit_id: int) -> dict:
        """``{"OD": VisitEye, "OS": VisitEye}`` for the eyes started or skipped (the latest row
        of an eye: an eye whose discarded session was replaced shows the new one)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT visit_id, eye, session_id, skip_reason, at FROM visit_eyes WHERE visit_id = ? ORDER BY id", (vid,)
        ).fetchall()
        return {eye.eye: eye for eye in (vr.VisitEye.from_row(r) for r in rows)}

    def visit_of_session(self, session_id: int):
        """The :class:`~visiontune.session.visit_records.VisitEye` linking ``session_id`` to
        a visit, or ``None`` for a session outside any visit."""

        row = self.conn.execute(
            "SELECT visit_id, eye, session_id, skip_reason, at FROM visit_eyes WHERE session_id = ?",
            (_session_id(session_id),),
        ).fetchone()
        return None if row is None else vr.VisitEye.from_row(row)

    def check_visit_eye_free(self, visit_id: int, eye: str) -> None:
        """SessionError unless ``eye`` of the visit may get a session or be skipped: it has
        none yet, or only a discarded one."""
        current = self.visit_eyes(visit_id).get(eye)
        if current is None:
            return
        if current.skipped:
            raise SessionError(f"visit {visit_id}: {eye} was skipped ({current.skip_reason})")
        if not self.get_session(current.session_id, allow_damaged=True).discarded:
            raise SessionError(
                f"visit {visit_id}: {eye} already has session {current.session_id} "
                "(resume that one; an eye has one refraction per visit)"
            )

    def link_visit_session(self, visit_id: int, eye: str, session_id: int):
        """Make ``session_id`` the refraction of ``eye`` in the visit (one committed write).
        The session must be of the visit's patient, that eye and the same kind (simulated or
        not), and linked to no other visit; the eye must have no session yet (or only a
        discarded one) and not be skipped."""

        visit = self.get_visit(visit_id)
        eye = vr.check_eye(eye)
        info = self.get_session(session_id)
        if (info.patient_id, info.eye.value, info.simulated) != (visit.patient_id, eye, visit.simulated):
            raise InvalidInputError(
                f"session {info.session_id} ({info.patient_id} {info.eye.value}, "
                f"{'simulated' if info.simulated else 'real patient'}) cannot be {eye} of visit {visit.visit_id} "
                f"({visit.patient_id}, {'simulated' if visit.simulated else 'real patient'})"
            )
        other = self.visit_of_session(info.session_id)
        if other is not None:
            raise SessionError(f"session {info.session_id} is already {other.eye} of visit {other.visit_id}")
        self.check_visit_eye_free(visit.visit_id, eye)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO visit_eyes (visit_id, eye, session_id, skip_reason, at) VALUES (?, ?, ?, NULL, ?)",
                (visit.visit_id, eye, info.session_id, _ts(self.now())),
            )
        return self.visit_eyes(visit.visit_id)[eye]

    def skip_visit_eye(self, visit_id: int, eye: str, reason: str):
        """Record that ``eye`` is not refracted in this visit and why (a prosthetic eye, an
        amblyopic eye...). SessionError if the eye already has a session (other than a
        discarded one) or was skipped."""

        visit = self.get_visit(visit_id)
        eye = vr.check_eye(eye)
        reason = vr.check_name("reason", reason)
        self.check_visit_eye_free(visit.visit_id, eye)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO visit_eyes (visit_id, eye, session_id, skip_reason, at) VALUES (?, ?, NULL, ?, ?)",
                (visit.visit_id, eye, reason, _ts(self.now())),
            )
        return self.visit_eyes(visit.visit_id)[eye]

    def record_balance_answer(
        self, visit_id: int, index: int, *, lens_od, lens_os, plus_od_d: float, plus_os_d: float, clearer: str
    ):
        """Append the answer to balance question ``index`` (the next one of the visit): the
        lenses before each eye, their plus over each end point (D) and which eye was clearer
        (``"OD"``, ``"OS"`` or ``"equal"``). Durable when this returns. SessionError when the
        index is not the next one (answered meanwhile) or the balance has its outcome."""

        vid = self.get_visit(visit_id).visit_id
        od = vr.check_prescription("lens_od", lens_od)
        os_ = vr.check_prescription("lens_os", lens_os)
        plus = [check_number(n, v, -4, 4) for n, v in (("plus_od_d", plus_od_d), ("plus_os_d", plus_os_d))]
        clearer = vr.check_eye(clearer, vr.BALANCE_ANSWERS)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM visit_balance WHERE visit_id = ?", (vid,)).fetchone():
                raise SessionError(f"visit {vid}: the binocular balance is over; no more answers")
            expected = conn.execute("SELECT count(*) FROM visit_balance_answers WHERE visit_id = ?", (vid,)).fetchone()[
                0
            ]
            if index != expected:
                raise SessionError(f"visit {vid}: balance question {index} is not the next one ({expected} is)")
            conn.execute(
                "INSERT INTO visit_balance_answers (visit_id, idx, od_sphere_d, od_cylinder_d, od_axis_deg, "
                "os_sphere_d, os_cylinder_d, os_axis_deg, plus_od_d, plus_os_d, clearer, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    vid,
                    index,
                    od.sphere_d,
                    od.cylinder_d,
                    od.axis_deg,
                    os_.sphere_d,
                    os_.cylinder_d,
                    os_.axis_deg,
                    plus[0],
                    plus[1],
                    clearer,
                    _ts(self.now()),
                ),
            )
        return self.balance_answers(vid)[index]

    def balance_answers(self, visit_id: int) -> list:
        """The visit's balance answers in order (:class:`~visiontune.session.visit_records.BalanceAnswer`)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT visit_id, idx, od_sphere_d, od_cylinder_d, od_axis_deg, os_sphere_d, os_cylinder_d, os_axis_deg, "
            "plus_od_d, plus_os_d, clearer, at FROM visit_balance_answers WHERE visit_id = ? ORDER BY idx",
            (vid,),
        ).fetchall()
        return [vr.BalanceAnswer.from_row(r) for r in rows]

    def record_balance(
        self,
        visit_id: int,
        *,
        outcome: str,
        method: str,
        plus_change_od_d: float = 0.0,
        plus_change_os_d: float = 0.0,
        reason: str | None = None,
    ):
        """Record the balance's outcome (once per visit): ``outcome`` one of ``equal``,
        ``right eye clearer``, ``not balanced``, ``not done`` (then ``reason`` says why and
        both changes are 0), the ``method`` and the plus change of each eye's sphere (D)."""

        vid = self.get_visit(visit_id).visit_id
        if outcome not in vr.BALANCE_OUTCOMES:
            raise InvalidInputError(f"outcome: expected one of {', '.join(vr.BALANCE_OUTCOMES)}, got {outcome!r}")
        method = vr.check_name("method", method)
        changes = [
            check_number(n, v, -4, 4)
            for n, v in (("plus_change_od_d", plus_change_od_d), ("plus_change_os_d", plus_change_os_d))
        ]
        reason = vr.check_name("reason", reason, optional=outcome != "not done")
        if outcome == "not done" and any(changes):
            raise InvalidInputError("plus_change: a balance that was not done changes no eye")
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM visit_balance WHERE visit_id = ?", (vid,)).fetchone():
                raise SessionError(f"visit {vid}: the binocular balance already has its outcome")
            conn.execute(
                "INSERT INTO visit_balance (visit_id, outcome, method, plus_change_od_d, plus_change_os_d, reason, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (vid, outcome, method, changes[0], changes[1], reason, _ts(self.now())),
            )
        return self.visit_balance(vid)

    def visit_balance(self, visit_id: int):
        """The balance's :class:`~visiontune.session.visit_records.BalanceOutcome`, or ``None``."""

        vid = self.get_visit(visit_id).visit_id
        row = self.conn.execute(
            "SELECT visit_id, outcome, method, plus_change_od_d, plus_change_os_d, reason, at "
            "FROM visit_balance WHERE visit_id = ?",
            (vid,),
        ).fetchone()
        return None if row is None else vr.BalanceOutcome.from_row(row)

    def sign_off(self, visit_id: int, eye: str, prescription, by: str):
        """Record a prescription of ``eye`` edited and signed by the clinician ``by``; it is kept
        beside the one the refraction found (never in its place). The eye must have a finished
        refraction and the prescription pass a session's checks
        (:func:`~visiontune.session.visit_records.check_signed_prescription`: range, 0.25 D steps,
        whole-degree axis, the visit's cylinder form); InvalidInputError otherwise, nothing written."""

        visit = self.get_visit(visit_id)
        eye = vr.check_eye(eye)
        rx = vr.check_signed_prescription("prescription", prescription, visit.cylinder_form)
        by = vr.check_name("by", by)
        link = self.visit_eyes(visit.visit_id).get(eye)
        if link is None or link.skipped:
            what = "was skipped" if link is not None else "has no refraction"
            raise InvalidInputError(f"visit {visit.visit_id}: {eye} {what}: there is no prescription to sign off")
        info = self.get_session(link.session_id)
        if info.state != SessionState.FINISHED or info.discarded:
            state = "discarded" if info.discarded else info.state.value
            raise InvalidInputError(
                f"visit {visit.visit_id}: the refraction of {eye} (session {info.session_id}) is "
                f"{state}; finish it before signing off"
            )
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO visit_signoffs (visit_id, eye, sphere_d, cylinder_d, axis_deg, by_name, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (visit.visit_id, eye, rx.sphere_d, rx.cylinder_d, rx.axis_deg, by, _ts(self.now())),
            )
            sid = int(cur.lastrowid)
        return next(s for s in self.visit_signoffs(visit.visit_id) if s.signoff_id == sid)

    def visit_signoffs(self, visit_id: int) -> list:
        """Every sign-off of the visit in order (:class:`~visiontune.session.visit_records.VisitSignOff`)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT id, visit_id, eye, sphere_d, cylinder_d, axis_deg, by_name, at "
            "FROM visit_signoffs WHERE visit_id = ? ORDER BY id",
            (vid,),
        ).fetchall()
        return [vr.VisitSignOff.from_row(r) for r in rows]

    def record_visit_acuity(
        self, visit_id: int, eye: str, va_logmar: float, *, lenses: dict, method: str, detail: Any = None
    ):
        """Record an acuity (logMAR, -1 to 3) of ``eye`` (``OD``, ``OS``, or ``OU`` with both
        eyes open) read through ``lenses`` (``{"OD": Prescription, "OS": Prescription}``: the
        eyes that were open), how (``method``) and its ``detail`` (JSON-able)."""

        vid = self.get_visit(visit_id).visit_id
        eye = vr.check_eye(eye, ("OD", "OS", "OU"))
        va_logmar = check_number("va_logmar", va_logmar, -1, 3)
        needed = {"OD", "OS"} if eye == "OU" else {eye}
        if not isinstance(lenses, dict) or set(lenses) != needed:
            raise InvalidInputError(f"lenses: expected the lens of {' and '.join(sorted(needed))}, got {lenses!r}")
        lenses_json = json.dumps(
            {e: json.loads(vr.rx_json(vr.check_prescription(f"lenses[{e}]", rx))) for e, rx in sorted(lenses.items())},
            sort_keys=True,
        )
        method = vr.check_name("method", method)
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO visit_acuities (visit_id, eye, va_logmar, lenses_json, method, detail_json, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (vid, eye, float(va_logmar), lenses_json, method, _to_json("detail", detail), _ts(self.now())),
            )
            aid = int(cur.lastrowid)
        return next(a for a in self.visit_acuities(vid) if a.acuity_id == aid)

    def visit_acuities(self, visit_id: int) -> list:
        """Every acuity recorded in the visit, in order (:class:`~visiontune.session.visit_records.VisitAcuity`)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT id, visit_id, eye, va_logmar, lenses_json, method, detail_json, at "
            "FROM visit_acuities WHERE visit_id = ? ORDER BY id",
            (vid,),
        ).fetchall()
        return [vr.VisitAcuity.from_row(r) for r in rows]


def _lens(s, c, a) -> Prescription | None:
    """A lens read from its three columns (``None`` where the sphere is NULL)."""
    return None if s is None else Prescription(s, c, a)


def _lens_columns(lens: Prescription | None) -> tuple:
    """A lens's three columns (:func:`~visiontune.session.records.lens_fields`), NULLs for none."""
    return (None, None, None) if lens is None else tuple(lens_fields(lens).values())


def _trial_from_row(r, where: str) -> Trial:
    damage: list[str] = []
    for column, value in (("letter_shown", r[9]), ("letter_named", r[10])):
        if value is not None and (problem := _text_problem(value)) is not None:
            damage.append(f"{column}: {problem}")
    presented = _checked_ts("presented_at", r[12], damage)
    answered = _checked_ts("answered_at", r[13], damage)
    if not damage:
        try:
            return Trial(
                session_id=r[0],
                index=r[1],
                s_logmar=r[2],
                lens=_lens(r[3], r[4], r[5]),
                lens2=_lens(r[6], r[7], r[8]),
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
    at = _checked_ts("at", r[3], damage)
    if r[5] is not None and (problem := json_problem(r[5]) if isinstance(r[5], str) else "not text") is not None:
        damage.append(f"payload_json: {problem}")
    if damage:
        raise StoreError(f"{where}: event {r[0]} is damaged: {'; '.join(damage)}")
    return Event(r[0], r[1], kind, at, r[4], r[5])


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
            (self.session_id, kind.value, trial_id, _ts(at), payload),
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
        presented = _parse_ts(_ts(trial.presented_at or now))
        answered = _parse_ts(_ts(trial.answered_at or max(now, presented)))
        with self._store._write() as conn:
            self._require(conn, "record a trial", SessionState.OPEN)
            index = conn.execute("SELECT count(*) FROM trials WHERE session_id = ?", (self.session_id,)).fetchone()[0]
            check_next(trial, index)
            conn.execute(
                "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, sphere2_d, "
                "cylinder2_d, axis2_deg, letter_shown, letter_named, correct, presented_at, answered_at, comparison, "
                "slider_knob, slider_path, slider_choice, line_correct) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.session_id,
                    index,
                    trial.s_logmar,
                    *_lens_columns(trial.lens),
                    *_lens_columns(trial.lens2),
                    trial.letter_shown,
                    trial.letter_named,
                    int(trial.correct),
                    _ts(presented),
                    _ts(answered),
                    trial.comparison,
                    trial.slider_knob,
                    None if trial.slider_lenses is None else slider_path_json(trial.slider_lenses),
                    trial.slider_choice,
                    trial.line_correct,
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
                (_ts(now), record, self.session_id),
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
