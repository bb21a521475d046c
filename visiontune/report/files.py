"""Writing export files: user-only (mode 0600), atomic, never over the user's files, a file of
another kind or a device (:mod:`visiontune.output_guard`).

Clinical data stays on the machine and readable by its owner only: every file goes through
:func:`visiontune.private_files.write_private` (a 0600 temporary file in the destination
folder, fsynced, renamed over the destination). A destination that is not a regular file or
a new path (``/dev/full``, a folder, a FIFO) is refused before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from visiontune import output_guard, private_files
from visiontune.errors import InvalidInputError, StoreError

__all__ = ["EXPORT_KINDS", "check_output_path", "write_private"]

FILE_MODE = private_files.FILE_MODE


#: The kind of file each export writes, by its option name (``--pdf``, ``pdf``, ``--dicom-dir``).
EXPORT_KINDS = {
    "pdf": output_guard.PDF,
    "csv": output_guard.CSV,
    "json": output_guard.EXPORT_JSON,
    "fhir": output_guard.FHIR,
    "dicom": output_guard.DICOM,
    "dicom-dir": output_guard.DICOM,
}


def check_output_path(
    name: str, path: str | os.PathLike, protected: tuple[Path, ...] = (), kind: output_guard.OutputKind | None = None
) -> Path:
    """``path`` as an absolute :class:`Path` if export ``name`` may write a ``kind`` file there
    (default: the kind of :data:`EXPORT_KINDS` named by ``name``). Refused: a folder, a device or
    any other non-regular file, a missing parent folder, the user's files and any of
    ``protected`` (the trial log in use, its ``-wal``/``-shm``) by identity, an existing file of
    another kind (:func:`visiontune.output_guard.guard_output_path`)."""
    kind = kind or EXPORT_KINDS[name.lstrip("-")]
    out = output_guard.guard_output_path(path, kind, protected=protected, name=name, error=InvalidInputError)
    try:
        parent_ok = out.parent.is_dir()
    except OSError:
        parent_ok = False
    if not parent_ok:
        raise InvalidInputError(f"{name}: folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{name}: cannot write in folder {out.parent} (permission denied)")
    return out


def write_private(path: Path, data: bytes, *, name: str = "export") -> None:
    """Write ``data`` to ``path`` atomically with mode 0600 (StoreError on an OS failure or
    a destination that became a non-regular file)."""
    private_files.write_private(path, data, name=name, error=StoreError)
