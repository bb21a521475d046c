"""Schema versions of the trial log and the migrations between them.

``meta.schema_version`` holds the version; an empty database is version 0. Each
:class:`Migration` takes the database from ``from_version`` to ``from_version + 1`` inside one
transaction together with the version bump, so a failed migration leaves the database as it
was. A database newer than :data:`SCHEMA_VERSION` is never touched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from visiontune.errors import StoreError
from visiontune.session.archive_sends_schema import SCHEMA_ARCHIVE_SENDS
from visiontune.session.near_schema import SCHEMA_NEAR_ADDITION
from visiontune.session.near_skip import SCHEMA_NEAR_SKIPS
from visiontune.session.schema import SCHEMA_V1, SCHEMA_V3_COMPARISONS, SCHEMA_V4_SLIDERS
from visiontune.session.store_open import disk_full_failure
from visiontune.session.visit_inputs_schema import SCHEMA_VISIT_INPUTS
from visiontune.session.visit_schema import SCHEMA_V2_VISITS

#: Version 5: a trial may be a chart line (:mod:`visiontune.refraction.chart_line`: several letters of
#: one size read aloud through one lens): ``letter_shown`` holds the line's letters in reading order,
#: one character each, and ``line_correct`` one ``'1'`` (right) or ``'0'`` (wrong) per letter; ``correct``
#: is 1 when more than half were right. NULL for every other trial (all of a version 4 log); a line
#: has one lens, no comparison and no slider.
SCHEMA_V5_CHART_LINES: tuple[str, ...] = (
    """ALTER TABLE trials ADD COLUMN line_correct TEXT
       CHECK (line_correct IS NULL OR (typeof(line_correct) = 'text' AND length(line_correct) >= 2
              AND length(line_correct) = length(letter_shown) AND line_correct NOT GLOB '*[^01]*'
              AND sphere2_d IS NULL AND comparison IS NULL AND slider_choice IS NULL))""",
)

#: Version 10: a comparison may be a lens held before the trial lens in the frame (a flipper, a
#: Jackson cross-cylinder, or a sphere "with or without"; :mod:`visiontune.refraction.clinical_pairs`):
#: ``frame_sphere_d``, ``frame_cylinder_d``, ``frame_axis_deg`` that trial lens, all three or none,
#: only on a comparison; NULL for every other trial (all of a version 9 log).
SCHEMA_V10_FRAME_LENS: tuple[str, ...] = (
    "ALTER TABLE trials ADD COLUMN frame_sphere_d REAL",
    "ALTER TABLE trials ADD COLUMN frame_cylinder_d REAL",
    """ALTER TABLE trials ADD COLUMN frame_axis_deg REAL
       CHECK ((frame_sphere_d IS NULL) = (frame_axis_deg IS NULL)
              AND (frame_cylinder_d IS NULL) = (frame_axis_deg IS NULL)
              AND (frame_axis_deg IS NULL
                   OR (frame_axis_deg >= 0 AND frame_axis_deg < 180 AND comparison IS NOT NULL)))""",
)


@dataclass(frozen=True)
class Migration:
    """Steps from ``from_version`` to ``from_version + 1``: SQL statements, or a callable."""

    from_version: int
    statements: tuple[str, ...] = ()
    apply: Callable[[sqlite3.Connection], None] | None = None

    @property
    def to_version(self) -> int:
        return self.from_version + 1


#: Every migration, in order. Version 0 is the empty file; version 2 adds the visit tables
#: (:mod:`visiontune.session.visit_schema`) and changes nothing in the version 1 tables;
#: version 3 adds the answer of a comparison trial (``trials.comparison``, NULL for letters);
#: version 4 a slider trial (``trials.slider_knob``, ``slider_path``, ``slider_choice``, NULL otherwise);
#: version 5 a chart line (``trials.line_correct``, :data:`SCHEMA_V5_CHART_LINES`, NULL otherwise);
#: version 10 the frame lens of a lens held before it (:data:`SCHEMA_V10_FRAME_LENS`, NULL otherwise).
MIGRATIONS: tuple[Migration, ...] = (
    Migration(from_version=0, statements=SCHEMA_V1),
    Migration(from_version=1, statements=SCHEMA_V2_VISITS),
    Migration(from_version=2, statements=SCHEMA_V3_COMPARISONS),
    Migration(from_version=3, statements=SCHEMA_V4_SLIDERS),
    Migration(from_version=4, statements=SCHEMA_V5_CHART_LINES),
    # the near addition of a visit: visit_near, visit_near_answers, visit_near_adds (near_schema.py)
    Migration(from_version=5, statements=SCHEMA_NEAR_ADDITION),
    # a visit's inputs: pupillary distance, sources of the start and habitual prescriptions, examiner
    # (visit_inputs, visit_inputs_schema.py)
    Migration(from_version=6, statements=SCHEMA_VISIT_INPUTS),
    # sends of a visit's records to the clinic's archive (visit_archive_sends, archive_sends_schema.py)
    Migration(from_version=7, statements=SCHEMA_ARCHIVE_SENDS),
    # a visit's near addition not done, with the clinician's reason (visit_near_skips, near_skip.py)
    Migration(from_version=8, statements=SCHEMA_NEAR_SKIPS),
    Migration(from_version=9, statements=SCHEMA_V10_FRAME_LENS),
)

#: The version this VisionTune writes and reads.
SCHEMA_VERSION: int = MIGRATIONS[-1].to_version


def read_schema_version(conn: sqlite3.Connection, path: Path | str) -> int:
    """Return the schema version of an open database (0 if it has no tables at all).

    Raises StoreError naming ``path`` for a database that is not a VisionTune trial log.
    """
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return 0
    if "meta" not in tables:
        raise StoreError(f"{path}: not a VisionTune trial log (no 'meta' table; tables: {sorted(tables)})")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise StoreError(f"{path}: not a VisionTune trial log (meta.schema_version is {row!r})") from None


def apply_migrations(
    conn: sqlite3.Connection,
    path: Path | str,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> int:
    """Bring the database to the last version of ``migrations``; return that version.

    ``conn`` must be in autocommit mode (``isolation_level=None``). Each step runs in its own
    ``BEGIN IMMEDIATE`` transaction with the ``meta`` update, so the version on disk always
    matches the schema. A newer database raises StoreError and is left untouched.
    """
    target = migrations[-1].to_version if migrations else 0
    for expected, migration in enumerate(migrations):
        if migration.from_version != expected:
            raise StoreError(f"migrations list is not contiguous: step {expected} starts at v{migration.from_version}")
    version = read_schema_version(conn, path)
    if version > target:
        raise StoreError(
            f"{path}: schema version {version} is newer than this VisionTune supports "
            f"(version {target}); upgrade VisionTune to open it"
        )
    while version < target:
        migration = migrations[version]
        conn.execute("BEGIN IMMEDIATE")
        try:
            if read_schema_version(conn, path) != version:  # another process migrated meanwhile
                conn.execute("ROLLBACK")
                version = read_schema_version(conn, path)
                continue
            for statement in migration.statements:
                conn.execute(statement)
            if migration.apply is not None:
                migration.apply(conn)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(migration.to_version),),
            )
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # SQLite has already rolled back after a full disk (SQLITE_FULL)
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                doing = f"migration v{migration.from_version} -> v{migration.to_version} failed"
                raise disk_full_failure(Path(path), exc, doing) or StoreError(f"{path}: {doing}: {exc}") from exc
            raise
        version = migration.to_version
    return version
