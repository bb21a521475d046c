"""The one rule every writer obeys: no command writes over a file it did not create for that purpose.

:func:`guard_output_path` is called by every VisionTune writer (calibration, settings, exports,
simulate outputs, results stores) before it writes, and refuses, with a message naming the path
and what is there:

- the user's own files, matched by identity (same device and inode, so a hard link, a symlink or
  another spelling of the path is caught, not only the same name): the trial log and its
  ``-wal``/``-shm``/``-journal`` companions, the screen calibration, the app settings (the
  well-known locations of :func:`user_files`, plus any the caller is using, ``protected``),
  except the one file the writer itself keeps (``kind.own``: the calibration writer may replace
  the calibration);
- an existing file that is not of the kind the command writes (:class:`OutputKind`: a PDF only
  over a PDF, the calibration only over a file that parses as a VisionTune calibration, ...); an
  empty file holds nothing and may be replaced;
- whatever :func:`visiontune.private_files.check_destination` refuses (a device, folder, FIFO).

:func:`write_output` is the guard followed by the atomic 0600 write
(:func:`visiontune.private_files.write_private`). The defaults of the user's files live here so
that every layer can protect them: :func:`default_trial_log_path` (``$VISIONTUNE_DATA_DIR`` else
the platformdirs user data dir), :func:`default_config_path` (the platformdirs user config dir).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from visiontune import private_files
from visiontune.errors import VisionTuneError

__all__ = [
    "CSV",
    "DATA_DIR_ENV",
    "DATABASE_NAME",
    "DICOM",
    "FHIR",
    "EXPORT_JSON",
    "SIMULATION_JSON",
    "VALIDATION_JSON",
    "MARKDOWN",
    "PDF",
    "PNG",
    "OutputKind",
    "default_config_path",
    "default_trial_log_path",
    "guard_output_path",
    "json_kind",
    "user_files",
    "write_output",
]

DATA_DIR_ENV = "VISIONTUNE_DATA_DIR"
DATABASE_NAME = "visiontune.sqlite3"
_SQLITE_HEADER = b"SQLite format 3\x00"
#: SQLite's companions of a database file (write-ahead log, shared memory, rollback journal).
_COMPANIONS = ("-wal", "-shm", "-journal")
#: The largest existing file read to recognise its kind; a bigger one is not replaced.
MAX_RECOGNISED_BYTES = 64_000_000


@dataclass(frozen=True)
class OutputKind:
    """What a writer writes: ``name`` (in messages, e.g. ``"PDF"``), ``recognise(data)`` True
    when the bytes of an existing non-empty file are of this kind (so it may be replaced), and
    ``own``: the key in :func:`user_files` of the user file this writer keeps (``"calibration"``,
    ``"settings"``), the only one of them it may write."""

    name: str
    recognise: Callable[[bytes], bool]
    own: str | None = None


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json_object(data: bytes) -> dict | None:
    text = _text(data)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _is_csv(data: bytes) -> bool:
    text = _text(data)
    return text is not None and "," in text.lstrip("\ufeff").split("\n", 1)[0]


PDF = OutputKind("PDF", lambda data: data.startswith(b"%PDF-"))
PNG = OutputKind("PNG image", lambda data: data.startswith(b"\x89PNG\r\n\x1a\n"))
#: DICOM Part 10: a 128-byte preamble then ``DICM``.
DICOM = OutputKind("DICOM file", lambda data: data[128:132] == b"DICM")
CSV = OutputKind("CSV table", _is_csv)


def json_kind(name: str, *keys: str) -> OutputKind:
    """A JSON object holding at least one of ``keys``: what one VisionTune writer puts in its
    documents, so that another JSON file (a calibration, someone's data) is not replaced."""
    return OutputKind(name, lambda data: bool(set(keys) & set(_json_object(data) or {})))


#: Session and visit exports (``"schema": "visiontune.session-export"`` / ``"visiontune.visit-export"``).
EXPORT_JSON = json_kind("VisionTune JSON export", "schema")
#: ``simulate --json``: a paper run (``"simulated": true``) or a protocol run (``simulated_patient``).
SIMULATION_JSON = json_kind("simulate --json document", "simulated", "simulated_patient")
#: ``validate``'s summary beside its page.
VALIDATION_JSON = json_kind("validation summary", "meta")
FHIR = OutputKind("FHIR resource", lambda data: "resourceType" in (_json_object(data) or {}))
MARKDOWN = OutputKind("Markdown page", lambda data: _text(data) is not None)


def default_trial_log_path() -> Path:
    """``$VISIONTUNE_DATA_DIR/visiontune.sqlite3``, else the platformdirs user data dir."""
    env = os.environ.get(DATA_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser() / DATABASE_NAME
    import platformdirs

    return Path(platformdirs.user_data_dir("visiontune", appauthor=False)) / DATABASE_NAME


def default_config_path(name: str) -> Path:
    """``<user config dir>/visiontune/<name>`` (platformdirs)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("visiontune", appauthor=False)) / name


def user_files() -> dict[str, Path]:
    """The user's files at their default places: ``trial log``, ``calibration``, ``settings``."""
    return {
        "trial log": default_trial_log_path(),
        "calibration": default_config_path("calibration.json"),
        "settings": default_config_path("app.toml"),
    }


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _what_it_is(data: bytes) -> str:
    if data.startswith(_SQLITE_HEADER):
        return "a SQLite database (a trial log or a results store)"
    for kind in (PDF, PNG, DICOM, FHIR, CSV):
        if kind.recognise(data):
            return f"a {kind.name}"
    if _json_object(data) is not None:
        return "a JSON document of another kind"
    return "text of another kind" if _text(data) is not None else "binary data of another kind"


def guard_output_path(
    path: str | os.PathLike,
    kind: OutputKind,
    *,
    protected: Mapping[str, str | os.PathLike] | Iterable[str | os.PathLike] = (),
    name: str = "output",
    error: type[VisionTuneError] = VisionTuneError,
) -> Path:
    """``path`` as an absolute :class:`Path` if a ``kind`` file may be written there; else
    ``error`` naming ``name``, the path and why (see the module docstring).

    ``protected``: the user files the command is using besides the defaults of
    :func:`user_files` (its ``--db``, ``--settings``, ``--calibration``), as ``{role: path}``
    or paths (role "trial log"); each with its SQLite companions.
    """
    out = private_files.check_destination(path, name=name, error=error)
    extra = protected.items() if isinstance(protected, Mapping) else (("trial log", p) for p in protected)
    here = _identity(out)
    if here is not None:
        for role, file in [*user_files().items(), *extra]:
            base = Path(os.fsdecode(file)).expanduser()
            same_file = here == _identity(base)
            if same_file and role == kind.own:
                continue
            if same_file or any(here == _identity(base.with_name(base.name + s)) for s in _COMPANIONS):
                raise error(f"{name}: {out} is the {role} ({base}); a {kind.name} is never written over it")
    try:
        data = private_files.read_regular_file(out, name=name, max_bytes=MAX_RECOGNISED_BYTES, error=error)
    except FileNotFoundError:
        return out
    if data and not kind.recognise(data):
        raise error(
            f"{name}: {out} exists and is {_what_it_is(data)}, not a {kind.name}; it is not replaced "
            "(choose another path or remove that file)"
        )
    return out


def write_output(
    path: str | os.PathLike,
    data: bytes | str,
    kind: OutputKind,
    *,
    protected: Mapping[str, str | os.PathLike] | Iterable[str | os.PathLike] = (),
    name: str = "output",
    error: type[VisionTuneError] = VisionTuneError,
) -> Path:
    """:func:`guard_output_path` then :func:`~visiontune.private_files.write_private` (atomic,
    mode 0600); the parent folder must exist. Returns the path written."""
    out = guard_output_path(path, kind, protected=protected, name=name, error=error)
    return private_files.write_private(out, data, name=name, error=error)
