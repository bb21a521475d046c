"""Writing export files: user-only (mode 0600), atomic, never over the trial log or a device.

Clinical data stays on the machine and readable by its owner only: every file goes through
:func:`visiontune.private_files.write_private` (a 0600 temporary file in the destination
folder, fsynced, renamed over the destination). A destination that is not a regular file or
a new path (``/dev/full``, a folder, a FIFO) is refused before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from visiontune import private_files
from visiontune.errors import InvalidInputError, StoreError

__all__ = ["check_output_path", "write_private"]

FILE_MODE = private_files.FILE_MODE


def check_output_path(name: str, path: str | os.PathLike, protected: tuple[Path, ...] = ()) -> Path:
    """``path`` as an absolute :class:`Path`, refusing a folder, a device or any other
    non-regular file, a missing parent folder, or any of the ``protected`` files (the trial
    log and its ``-wal``/``-shm`` companions)."""
    out = private_files.check_destination(path, name=name, error=InvalidInputError)
    try:
        parent_ok = out.parent.is_dir()
    except OSError:
        parent_ok = False
    if not parent_ok:
        raise InvalidInputError(f"{name}: folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{name}: cannot write in folder {out.parent} (permission denied)")
    resolved = out.resolve()
    for p in protected:
        for q in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm"), p.with_name(p.name + "-journal")):
            if resolved == q.resolve():
                raise InvalidInputError(f"{name}: {out} is the trial log; exports never write over it")
    return out


def write_private(path: Path, data: bytes, *, name: str = "export") -> None:
    """Write ``data`` to ``path`` atomically with mode 0600 (StoreError on an OS failure or
    a destination that became a non-regular file)."""
    private_files.write_private(path, data, name=name, error=StoreError)
