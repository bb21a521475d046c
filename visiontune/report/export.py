"""Export one finished session to any of PDF, CSV, JSON and FHIR files (each mode 0600).

Reads the trial log only (:func:`visiontune.report.finished_session.load_session`); every output is
rendered in memory first, so a failure writes nothing, then each file is written atomically.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from visiontune.errors import InvalidInputError, StoreError
from visiontune.report.fhir import vision_prescription_json
from visiontune.report.files import check_output_path, write_private
from visiontune.report.finished_session import SessionRecord, load_session
from visiontune.report.pdf import pdf_bytes
from visiontune.report.tabular import session_json_text, trials_to_csv
from visiontune.session.migrations import SCHEMA_VERSION
from visiontune.session.store import (
    TrialStore,
    check_existing_database,
    default_database_path,
    read_schema_version_read_only,
)

__all__ = ["ExportPaths", "export_record", "export_session", "render"]

PathLike = str | os.PathLike


@dataclass(frozen=True)
class ExportPaths:
    """Where to write each export; ``None`` skips that format."""

    pdf: PathLike | None = None
    csv: PathLike | None = None
    json: PathLike | None = None
    fhir: PathLike | None = None

    def items(self) -> list[tuple[str, PathLike]]:
        pairs = (("pdf", self.pdf), ("csv", self.csv), ("json", self.json), ("fhir", self.fhir))
        return [(k, v) for k, v in pairs if v is not None]


def render(record: SessionRecord, kind: str) -> bytes:
    """The bytes of one export format (``"pdf"``, ``"csv"``, ``"json"`` or ``"fhir"``)."""
    if kind == "pdf":
        return pdf_bytes(record)
    if kind == "csv":
        return trials_to_csv(record).encode("utf-8")
    if kind == "json":
        return session_json_text(record).encode("utf-8")
    if kind == "fhir":
        return vision_prescription_json(record).encode("utf-8")
    raise InvalidInputError(f"kind: expected pdf, csv, json or fhir, got {kind!r}")


def export_record(record: SessionRecord, paths: ExportPaths, protected: tuple[Path, ...] = ()) -> dict[str, Path]:
    """Write the requested exports of ``record``; return ``{kind: path written}``.

    Every path is checked and every output rendered before the first file is written.
    Two formats given the same path, or a path in ``protected`` (the trial log), raise
    :class:`~visiontune.errors.InvalidInputError`.
    """
    items = paths.items()
    if not items:
        raise InvalidInputError("paths: nothing to export (give at least one of pdf, csv, json, fhir)")
    checked = {kind: check_output_path(f"--{kind}", p, protected) for kind, p in items}
    seen: dict[Path, str] = {}
    for kind, p in checked.items():
        if p in seen:
            raise InvalidInputError(f"--{kind}: {p} is also the --{seen[p]} output")
        seen[p] = kind
    rendered = {kind: render(record, kind) for kind in checked}
    for kind, p in checked.items():
        write_private(p, rendered[kind], name=f"--{kind}")
    return checked


def export_session(db_path: PathLike | None, session_id: int, paths: ExportPaths) -> dict[str, Path]:
    """Open the trial log at ``db_path`` (default location if ``None``), read session
    ``session_id`` and write the requested exports; return ``{kind: path}``.

    SessionError for an unknown or unfinished session. The log is only read: a missing log
    is not created and a log of an older schema is not migrated (StoreError for both).
    """
    path = Path(default_database_path() if db_path is None else db_path).expanduser().absolute()
    _check_log_read_only(path)
    with TrialStore.open(path, read_only=True) as store:
        record = load_session(store, session_id)
        return export_record(record, paths, protected=(store.path,))


def _check_log_read_only(path: Path) -> None:
    """StoreError unless ``path`` is a trial log at the current schema, checked without
    writing anything: no lock, no ``-wal``/``-shm`` files created beside it (a damaged log
    stays byte-identical and alone), nothing created or migrated."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StoreError(f"{path}: no trial log there (give --db PATH)") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the trial log ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{path}: not a trial log (not a regular file)")
    check_existing_database(path)  # header, quick_check, newer schema: read-only
    version = read_schema_version_read_only(path)
    if version < SCHEMA_VERSION:
        raise StoreError(
            f"{path}: trial log schema version {version} is older than {SCHEMA_VERSION}; open it once with "
            "VisionTune (e.g. visiontune sessions list) to upgrade it, then export"
        )
