"""The trial-log table of archive sends, ``visit_archive_sends`` (its meaning:
:mod:`visiontune.session.archive_sends`); imports nothing, so the migrations can hold it."""

from __future__ import annotations

__all__ = ["SCHEMA_ARCHIVE_SENDS"]

#: The schema step that adds ``visit_archive_sends`` (:mod:`visiontune.session.archive_sends`).
SCHEMA_ARCHIVE_SENDS: tuple[str, ...] = (
    """CREATE TABLE visit_archive_sends (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        visit_id    INTEGER NOT NULL REFERENCES visits(id),
        what        TEXT NOT NULL CHECK (what IN ('dicom', 'fhir')),
        destination TEXT NOT NULL CHECK (length(trim(destination)) > 0),
        status      TEXT NOT NULL CHECK (status IN ('started', 'sent', 'failed')),
        detail_json TEXT CHECK (detail_json IS NULL OR json_valid(detail_json)),
        at          TEXT NOT NULL
    )""",
    "CREATE INDEX visit_archive_sends_by_visit ON visit_archive_sends(visit_id, id)",
    """CREATE TRIGGER visit_archive_sends_no_update BEFORE UPDATE ON visit_archive_sends
       BEGIN SELECT RAISE(ABORT, 'visit_archive_sends are append-only: UPDATE is forbidden'); END""",
    """CREATE TRIGGER visit_archive_sends_no_delete BEFORE DELETE ON visit_archive_sends
       BEGIN SELECT RAISE(ABORT, 'visit_archive_sends are append-only: DELETE is forbidden'); END""",
)
