"""The one way VisionTune writes a file a patient's data may be in: user-only and atomic.

- :func:`write_private`: the bytes go to a temporary file (mode 0600) in the destination's
  folder, are flushed to disk (``fsync``), then renamed over the destination (``os.replace``)
  and the folder is fsynced. A reader never sees half a file; an existing file of looser mode
  is replaced by a 0600 one; on any failure (a full disk included) the temporary file is
  removed and the destination is as it was.
- The destination must be a new path or an existing *regular* file: a device (``/dev/full``),
  a folder, a FIFO, a socket, or a symlink to one of them is refused with a clear error, never
  replaced (a rename would swap a device node for a plain file when run as root).
- :func:`open_private_append`: opens a log-like file for appending, created 0600 whatever the
  umask (an existing one this user owns is set back to 0600); the same destinations refused.
- :func:`create_private`, :func:`open_private_fd`, :func:`make_private`: the raw operations for
  a file another library writes (the SQLite trial log) or a lock file: create a new empty file
  0600, open a descriptor on one (created 0600, an existing one this user owns set back to 0600),
  set an existing file this user owns to 0600; ``OSError`` is passed on for the caller to word.
- :func:`private_dir`: creates a folder and its missing parents with mode 0700 whatever the
  umask (``mkdir``'s mode is masked by the umask; the mode is set again with ``chmod``).
- :func:`read_regular_file`: reads a small file, refusing a device or FIFO (which could block
  or never end) and anything larger than a limit.

Every failure is raised as the :class:`~visiontune.errors.VisionTuneError` subclass the
caller names, with a message naming the path and what was wrong.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from visiontune.errors import VisionTuneError

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "check_destination",
    "create_private",
    "make_private",
    "open_private_append",
    "open_private_fd",
    "private_dir",
    "read_regular_file",
    "write_private",
]

FILE_MODE = 0o600
DIR_MODE = 0o700

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or str(exc)


def check_destination(
    path: str | os.PathLike, *, name: str = "file", error: type[VisionTuneError] = VisionTuneError
) -> Path:
    """``path`` as an absolute :class:`Path` if it may be written by :func:`write_private`:
    a new path, or an existing regular file (directly or through a symlink). Anything else
    (device, folder, FIFO, socket, symlink to one) raises ``error`` naming ``name``."""
    try:
        out = Path(os.fsdecode(path)).expanduser().absolute()
    except (TypeError, ValueError):
        raise error(f"{name}: expected a file path, got {path!r}") from None
    if "\x00" in str(out):
        raise error(f"{name}: a file path cannot contain a NUL character, got {str(path)!r}")
    try:
        st = os.stat(out)  # follows a symlink: what would be written is its target's kind
    except FileNotFoundError:
        return out  # a new path (or a dangling symlink, which the rename replaces)
    except NotADirectoryError:
        raise error(f"{name}: {out}: a part of the path is not a folder") from None
    except OSError as exc:
        raise error(f"{name}: {out}: cannot be checked ({_reason(exc)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name}: {out} is {_kind(st.st_mode)}; expected a regular file or a new file path")
    return out


def private_dir(
    path: str | os.PathLike, *, tighten: bool = False, error: type[VisionTuneError] = VisionTuneError
) -> Path:
    """Create folder ``path`` and any missing parents with mode 0700, whatever the umask.

    ``tighten``: also set an existing ``path`` (not its parents) to 0700 when this user owns
    it, for VisionTune's own folders (config, log, data); never for a folder the user named.
    Returns the absolute path; ``error`` on failure or when ``path`` is not a folder.
    """
    folder = Path(path).expanduser().absolute()
    missing = []
    p = folder
    while not p.exists() and not p.is_symlink() and p != p.parent:
        missing.append(p)
        p = p.parent
    try:
        for p in reversed(missing):
            try:
                os.mkdir(p, DIR_MODE)
            except FileExistsError:
                continue  # created by someone else meanwhile: not ours to change
            os.chmod(p, DIR_MODE)
        st = os.stat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise error(f"{folder}: is {_kind(st.st_mode)}, expected a folder")
        if tighten and folder not in missing and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != DIR_MODE:
            os.chmod(folder, DIR_MODE)
    except OSError as exc:
        raise error(f"{folder}: cannot create the folder ({_reason(exc)})") from None
    return folder


def write_private(
    path: str | os.PathLike,
    data: bytes | str,
    *,
    name: str = "file",
    error: type[VisionTuneError] = VisionTuneError,
) -> Path:
    """Write ``data`` (``str`` is encoded UTF-8) to ``path`` atomically, mode 0600; return it.

    The parent folder must exist. ``error`` (naming ``name`` and the path) for a destination
    that is not a regular file or a new path, and for any OS failure (full disk, read-only
    medium, permission); no temporary file is left behind.
    """
    out = check_destination(path, name=name, error=error)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not out.parent.is_dir():
        raise error(f"{name}: folder {out.parent} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name[:64]}.", suffix=".tmp", dir=out.parent)
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        check_destination(out, name=name, error=error)  # it may have changed while writing
        os.replace(tmp, out)
        tmp = None
        _fsync_dir(out.parent)
    except OSError as exc:
        raise error(f"{name}: cannot write {out} ({_reason(exc)})") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return out


def open_private_append(
    path: str | os.PathLike,
    *,
    name: str = "file",
    error: type[VisionTuneError] = VisionTuneError,
) -> int:
    """Open ``path`` for appending and return the descriptor (close-on-exec): a new file is
    created with mode 0600 whatever the umask, an existing one this user owns is set back to
    0600. For a file written line by line (a log), where :func:`write_private`'s whole-file
    replacement does not fit. ``error`` (naming ``name`` and the path) for a destination
    :func:`check_destination` refuses and for any OS failure.
    """
    out = check_destination(path, name=name, error=error)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(out, flags, FILE_MODE)
    except OSError as exc:
        raise error(f"{name}: cannot open {out} ({_reason(exc)})") from None
    try:
        _make_fd_private(fd)
    except OSError as exc:
        os.close(fd)
        raise error(f"{name}: cannot make {out} user-only ({_reason(exc)})") from None
    return fd


def _make_fd_private(fd: int) -> None:
    if os.fstat(fd).st_uid == os.geteuid():
        os.fchmod(fd, FILE_MODE)


def open_private_fd(path: str | os.PathLike, flags: int) -> int:
    """``os.open(path, flags)``, close-on-exec, for a file kept user-only: a file it creates has
    mode 0600 whatever the umask, an existing one this user owns is set back to 0600. ``OSError``
    is passed on, the descriptor closed."""
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        _make_fd_private(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_private(path: str | os.PathLike) -> None:
    """Create ``path`` as a new empty file with mode 0600 whatever the umask.

    ``FileExistsError`` if anything is at ``path`` (a symlink included); any other ``OSError``
    is passed on, the file removed again if this call created it.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
        finally:
            os.close(fd)
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise


def make_private(path: str | os.PathLike) -> None:
    """Set the existing regular file ``path`` (not a symlink) to 0600 when this user owns it;
    nothing for a missing path. Other ``OSError`` is passed on."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != FILE_MODE:
        os.chmod(path, FILE_MODE)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (best effort: some file systems refuse fsync on a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_regular_file(
    path: str | os.PathLike,
    *,
    name: str = "file",
    max_bytes: int = 1_000_000,
    error: type[VisionTuneError] = VisionTuneError,
) -> bytes:
    """The bytes of regular file ``path`` (at most ``max_bytes``).

    FileNotFoundError is passed on (callers say what to do about a missing file); a folder,
    device, FIFO, an oversized file or any other OS failure raises ``error``.
    """
    p = Path(os.fsdecode(path)).expanduser()
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise error(f"{name}: {p} is a folder, expected a file") from None
    except OSError as exc:
        raise error(f"{name}: cannot read {p} ({_reason(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{name}: {p} is {_kind(st.st_mode)}, expected a regular file")
        if st.st_size > max_bytes:
            raise error(f"{name}: {p} is {st.st_size} bytes, more than the {max_bytes} a valid file can be")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise error(f"{name}: {p} is more than the {max_bytes} bytes a valid file can be")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{name}: cannot read {p} ({_reason(exc)})") from None
    finally:
        os.close(fd)
