"""One app at a time on a trial log: a lock file that names its holder and never stays stuck.

:meth:`InstanceLock.acquire` takes an exclusive, non-blocking ``flock`` on
``<db>.app.lock`` next to the trial log and writes its holder into it (one JSON line: ``pid``,
``host``, ``since``, UTC ISO 8601). The kernel releases a ``flock`` when its holder's process
ends, however it ends (closed, crashed, SIGKILLed), so the lock is never left stuck: the liveness
check is the kernel's, not a guess from a pid that may have been reused. Then:

- the lock is held by a running process: :class:`InstanceLockedError`, whose message names the
  holder (``host``, ``pid``, since when) from the file;
- the file is there but nobody holds it (its holder was killed before it could remove it): the
  lock is taken over, and :attr:`InstanceLock.taken_over` is the dead holder's record, for a
  message saying so;
- otherwise the file is created (mode 0600) and removed again by :meth:`InstanceLock.release`
  (while still holding the lock, so a process that opened the old file meanwhile sees that it
  is no longer the file at that path, and tries again).

The lock file is never followed through a symlink, and anything at its path that is not a
regular file is refused, never written over.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from visiontune import private_files
from visiontune.errors import StoreError

__all__ = ["InstanceLock", "InstanceLockedError", "LockHolder", "lock_path"]

#: The most bytes read from a lock file (a holder's record is one short line).
_RECORD_MAX_BYTES = 4096
#: Attempts when the lock file is replaced between our open and our flock.
_ATTEMPTS = 100


def lock_path(db_path: str | os.PathLike) -> Path:
    """``<db>.app.lock``: the lock file of the trial log ``db_path``."""
    db = Path(db_path)
    return db.with_name(f"{db.name}.app.lock")


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a lock: process ``pid`` on ``host`` since ``since`` (aware datetime, or
    None when the record does not say)."""

    pid: int | None
    host: str
    since: datetime | None

    @classmethod
    def me(cls) -> LockHolder:
        return cls(os.getpid(), socket.gethostname(), datetime.now(UTC).replace(microsecond=0))

    def to_json(self) -> str:
        since = None if self.since is None else self.since.isoformat()
        return json.dumps({"pid": self.pid, "host": self.host, "since": since}) + "\n"

    @classmethod
    def from_text(cls, text: str) -> LockHolder:
        """The record of a lock file; what it cannot say is left unknown (pid None, host "unknown host")."""
        try:
            data = json.loads(text)
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        pid = data.get("pid")
        host = data.get("host")
        try:
            since = datetime.fromisoformat(data["since"])
            since = since if since.tzinfo is not None else since.replace(tzinfo=UTC)
        except (KeyError, TypeError, ValueError):
            since = None
        return cls(
            pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            host if isinstance(host, str) and host.strip() else "unknown host",
            since,
        )

    def describe(self) -> str:
        """``host clinic-3, pid 4242, since 2026-11-28 06:40 UTC`` (what the record says)."""
        pid = "pid unknown" if self.pid is None else f"pid {self.pid}"
        since = "" if self.since is None else f", since {self.since.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        return f"host {self.host!r}, {pid}{since}"


class InstanceLockedError(StoreError):
    """The trial log is open in another running app; ``holder`` says who, ``path`` is the lock file."""

    def __init__(self, message: str, holder: LockHolder, path: Path) -> None:
        super().__init__(message)
        self.holder = holder
        self.path = path


class InstanceLock:
    """The held lock of one trial log (see the module doc). Use :meth:`acquire`; a context
    manager releasing it."""

    def __init__(self, path: Path, fd: int, holder: LockHolder, taken_over: LockHolder | None) -> None:
        self.path = path
        self.holder = holder
        #: The record of a holder that died without releasing the lock (None: the lock was free).
        self.taken_over = taken_over
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, db_path: str | os.PathLike, *, what: str = "VisionTune app") -> InstanceLock:
        """Lock the trial log ``db_path`` for this process. :class:`InstanceLockedError` naming
        the holder when another running process has it (``what`` names what holds it in the
        message); :class:`StoreError` when the lock file cannot be made."""
        path = lock_path(db_path)
        try:
            fd, previous = _open_and_lock(path, Path(db_path), what)
            holder = LockHolder.me()
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.to_json().encode("utf-8"), 0)
            os.fsync(fd)
        except OSError as exc:
            raise StoreError(f"{path}: cannot lock the trial log {db_path} ({exc.strerror or exc})") from None
        return cls(path, fd, holder, previous)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file (still holding the lock) and unlock; never raises."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(fd, self.path):
                os.unlink(self.path)
        except OSError:
            pass  # a read-only folder: the file stays, and the next holder takes it over
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def __enter__(self) -> InstanceLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    mine = os.fstat(fd)
    try:
        there = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _read_record(fd: int) -> LockHolder | None:
    text = os.pread(fd, _RECORD_MAX_BYTES, 0).decode("utf-8", "replace").strip()
    return LockHolder.from_text(text) if text else None


def _open_and_lock(path: Path, db_path: Path, what: str) -> tuple[int, LockHolder | None]:
    """The flocked descriptor of the lock file at ``path`` and the record it held before (None
    for a new or empty file); retried when the file was replaced between open and flock."""
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    for _ in range(_ATTEMPTS):
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise StoreError(
                f"{path}: expected the trial log's lock file, found something else there "
                "(not a regular file); it is left as it is: move it away"
            )
        try:
            fd = private_files.open_private_fd(path, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StoreError(
                    f"{path}: expected the trial log's lock file, found a symbolic link; "
                    "it is left as it is: move it away"
                ) from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_record(fd) or LockHolder(None, "unknown host", None)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise InstanceLockedError(
                f"the trial log {db_path} is in use by another {what} ({holder.describe()}); close that one "
                f"first (its lock, {path}, goes when it ends, even by a crash)",
                holder,
                path,
            ) from None
        if _same_file(fd, path):
            return fd, _read_record(fd)
        os.close(fd)
    raise StoreError(f"{path}: the lock file keeps changing; try again")
