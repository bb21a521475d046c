"""Writing export files: user-only (mode 0600), atomic, never over the trial log.

Clinical data stays on the machine and readable by its owner only: every file is written to
a temporary file created with mode 0600 in the destination folder, flushed to disk, then
renamed over the destination (so a reader never sees half a file, and an existing file of
looser mode is replaced by a 0600 one).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from visiontune.errors import InvalidInputError, StoreError

__all__ = ["check_output_path", "write_private"]

FILE_MODE = 0o600


def check_output_path(name: str, path: str | os.PathLike, protected: tuple[Path, ...] = ()) -> Path:
    """``path`` as an absolute :class:`Path`, refusing a folder, a missing parent folder, or
    any of the ``protected`` files (the trial log and its ``-wal``/``-shm`` companions)."""
    try:
        out = Path(path).expanduser().absolute()
    except TypeError:
        raise InvalidInputError(f"{name}: expected a file path, got {path!r}") from None
    if out.is_dir():
        raise InvalidInputError(f"{name}: {out} is a folder, expected a file path")
    if not out.parent.is_dir():
        raise InvalidInputError(f"{name}: folder {out.parent} does not exist")
    resolved = out.resolve()
    for p in protected:
        for q in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm"), p.with_name(p.name + "-journal")):
            if resolved == q.resolve():
                raise InvalidInputError(f"{name}: {out} is the trial log; exports never write over it")
    return out


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with mode 0600 (StoreError on an OS failure)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise StoreError(f"{path}: cannot write the export ({exc})") from None
