"""The trial log: an embedded SQLite database, the session's source of truth.

:class:`TrialStore` opens it and composes the parts, each keeping one thing: patients and
sessions (:mod:`visiontune.session.store_sessions`), trials and events and the session held
open to write them (:mod:`visiontune.session.store_trials`), visits
(:mod:`visiontune.session.store_visits`), a visit's balance, sign-off and acuities
(:mod:`visiontune.session.store_visit_outcomes`); the columns' text forms are
:mod:`visiontune.session.store_columns`. This module keeps the file: opening, checking,
migrating it, its user-only mode, and the one committed transaction every write goes through.

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

import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from visiontune import output_guard, private_files
from visiontune.errors import StoreError
from visiontune.output_guard import DATA_DIR_ENV, DATABASE_NAME
from visiontune.session import store_open
from visiontune.session.migrations import SCHEMA_VERSION, apply_migrations, read_schema_version
from visiontune.session.records import decode_text
from visiontune.session.store_columns import MAX_SESSION_ID, utc_now
from visiontune.session.store_sessions import PatientsAndSessions
from visiontune.session.store_trials import MAX_DISCARD_REASON_CHARS, SessionHandle, TrialsAndEvents
from visiontune.session.store_visit_outcomes import VisitOutcomes
from visiontune.session.store_visits import Visits

_SQLITE_HEADER = b"SQLite format 3\x00"
#: Seconds a read-only check waits for another program's lock before saying it is locked.
READ_CHECK_TIMEOUT_S = 5.0
#: Seconds a connection waits for another writer's lock before a write fails as locked.
LOCK_TIMEOUT_S = 10.0

Clock = Callable[[], datetime]


def default_database_path() -> Path:
    """``$VISIONTUNE_DATA_DIR/visiontune.sqlite3``, else the platformdirs user data dir."""
    return output_guard.default_trial_log_path()


_is_locked = store_open.is_locked
_locked_error = store_open.locked_error


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


class TrialStore(PatientsAndSessions, TrialsAndEvents, Visits, VisitOutcomes):
    """The trial log database. Use :meth:`open`; a context manager closing the connection.

    The facade: it opens the connection (checked, migrated, user-only files), gives each part
    ``conn``, ``path``, ``now`` and one committed transaction (``_write``), and composes the parts,
    each keeping one thing: patients and sessions (:mod:`~visiontune.session.store_sessions`),
    trials and events (:mod:`~visiontune.session.store_trials`), visits
    (:mod:`~visiontune.session.store_visits`), and a visit's balance, sign-off and acuities
    (:mod:`~visiontune.session.store_visit_outcomes`)."""

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
        return cls(conn, path, clock or utc_now)

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
        return cls(conn, path, clock or utc_now)

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


__all__ = [
    "DATA_DIR_ENV",
    "DATABASE_NAME",
    "MAX_DISCARD_REASON_CHARS",
    "MAX_SESSION_ID",
    "SessionHandle",
    "TrialStore",
    "default_database_path",
]
