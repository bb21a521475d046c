"""Opening the trial log to read it, and what a failure to open or write it means to a user.

Reading needs no write. :func:`connect_read_only` opens the log through an SQLite URI with
``mode=ro``: nothing is created (a missing log is "no such trial log", never an empty one in
new folders), nothing is migrated, and it works on a read-only mount, on a 0444 file in a 0555
folder and on a full disk. When the log has no ``-wal`` file beside it, no connection has it
open in WAL mode (the last one to close removes the ``-wal``; a crash leaves it) and every
committed answer is in the main file: it is then opened with ``immutable=1`` too, so SQLite
creates no ``-wal``/``-shm`` files and takes no locks (SQLite URI parameters,
https://www.sqlite.org/uri.html). With a ``-wal`` file (a writer has it open, or a crash left
frames the next writer recovers) it is opened ``mode=ro`` so those frames are read; a
read-only folder where SQLite cannot build its shared-memory index then gives a clear error,
never a silently older view.

A write that fails because the disk is full is reported as a full disk: SQLite's
``SQLITE_FULL``, an ``ENOSPC``, or a "disk I/O error" (``SQLITE_IOERR``, what SQLite reports
when it cannot extend its ``-shm`` file) on a file system with less than :data:`LOW_SPACE_BYTES`
free. Every write is one transaction, so nothing already recorded is lost; the message says so.
A log is not opened for writing on a file system with less than :data:`MIN_FREE_BYTES` free,
so a full disk leaves no ``-wal``/``-shm`` files behind.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from visiontune.errors import StoreError

#: A log is not opened for writing with less free space than this (bytes): SQLite's WAL index
#: (``-shm``) takes 32 KiB at once, and a write a few 4 KiB pages of ``-wal``.
MIN_FREE_BYTES = 64 * 1024
#: A "disk I/O error" with less free space than this (bytes) is taken for a full disk.
LOW_SPACE_BYTES = 1024 * 1024
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL = 5, 6, 8, 10, 13


def free_bytes(path: Path) -> int | None:
    """Bytes this user may still write on the file system holding ``path`` (its nearest
    existing folder); ``None`` when that cannot be told. Root may use the blocks reserved for
    it, so for root the free blocks count, for others the available ones."""
    folder = Path(path)
    while not os.path.isdir(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return blocks * st.f_frsize


def disk_full_error(path: Path, what_failed: str) -> StoreError:
    """The full-disk message: what failed, that nothing recorded is lost, what to do."""
    return StoreError(
        f"{path}: the disk is full ({what_failed}); nothing already in the trial log is lost (every write "
        f"is one transaction). Free some space on the disk holding {path.parent} and try again"
    )


def check_room_to_write(path: Path) -> None:
    """StoreError (disk full) before a log is opened for writing on a nearly full disk."""
    free = free_bytes(path)
    if free is not None and free < MIN_FREE_BYTES:
        raise disk_full_error(path, f"{free} bytes free, a write needs at least {MIN_FREE_BYTES // 1024} KiB")


def is_locked(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (code is not None and (code & 0xFF) in (_SQLITE_BUSY, _SQLITE_LOCKED)) or "locked" in str(exc)


def locked_error(path: Path, exc: sqlite3.Error) -> StoreError:
    return StoreError(f"{path}: the trial log is locked by another program ({exc}); try again when it is done")


def disk_full_failure(path: Path, exc: sqlite3.Error, doing: str) -> StoreError | None:
    """The full-disk StoreError when ``exc`` means a full disk (see the module text), else ``None``."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    free = free_bytes(path)
    if code == _SQLITE_FULL or (code == _SQLITE_IOERR and free is not None and free < LOW_SPACE_BYTES):
        return disk_full_error(path, f"{doing}: {exc}")
    return None


def sqlite_failure(path: Path, exc: sqlite3.Error, doing: str) -> StoreError:
    """``exc`` (raised while ``doing``, e.g. "cannot open the trial log") as a StoreError
    naming ``path``: locked, disk full and read-only get their own words."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if is_locked(exc):
        return locked_error(path, exc)
    full = disk_full_failure(path, exc, doing)
    if full is not None:
        return full
    if code == _SQLITE_READONLY:
        return StoreError(f"{path}: {doing}: the trial log is read-only here ({exc}); nothing was written")
    return StoreError(f"{path}: {doing} ({exc})")


def os_failure(path: Path, exc: OSError, doing: str) -> StoreError:
    """``exc`` as a StoreError naming ``path``: a full disk and a name too long get their own words."""
    if exc.errno == errno.ENOSPC:
        return disk_full_error(path, f"{doing}: no space left on the device")
    if exc.errno == errno.ENAMETOOLONG:
        longest = max(Path(path).parts, key=len)
        return StoreError(
            f"{path}: {doing}: a file or folder name in this path is too long for the file system "
            f"({len(longest)} characters in {longest[:24]!r}...; most allow 255 bytes)"
        )
    return StoreError(f"{path}: {doing} ({exc.strerror or exc})")


def connect_read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """A read-only connection to the existing log ``path`` (see the module text): StoreError
    "no such trial log" for a missing one, nothing created or written either way."""
    doing = "cannot read the trial log"
    try:
        mode_bits = os.stat(path).st_mode
    except FileNotFoundError:
        raise StoreError(f"no such trial log: {path}") from None
    except OSError as exc:
        raise os_failure(path, exc, doing) from None
    if not stat.S_ISREG(mode_bits):
        # a FIFO or a device would block SQLite's open or feed it endless bytes
        raise StoreError(f"{path}: {doing}: not a trial log (not a regular file)")
    wal = path.with_name(path.name + "-wal")
    mode = "ro" if os.path.lexists(wal) else "ro&immutable=1"
    conn = None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode={mode}", uri=True, isolation_level=None, timeout=timeout)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # SQLite opens lazily: open now
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if mode == "ro" and not os.access(path.parent, os.W_OK):
            raise StoreError(
                f"{path}: cannot read the trial log: a -wal file beside it holds answers not yet merged into it, "
                f"and its folder is read-only, so SQLite cannot read them ({exc}); open it once where its folder "
                "is writable (any VisionTune command merges them)"
            ) from None
        raise sqlite_failure(path, exc, doing) from None
    return conn
