"""A trial log written by an older VisionTune: the schema of an earlier version, one patient and one
open session, for the tests of a migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from visiontune.session.migrations import MIGRATIONS, apply_migrations


def log_at_version(path: Path, version: int) -> sqlite3.Connection:
    """A connection to a new trial log at ``path`` migrated to schema ``version`` only, holding
    patient ``P1`` and its open session 1 (eye OD, seed 7, not simulated)."""
    conn = sqlite3.connect(path, isolation_level=None)
    assert apply_migrations(conn, path, MIGRATIONS[:version]) == version
    conn.execute("INSERT INTO patients (id, created_at) VALUES ('P1', '2026-01-01T00:00:00+00:00')")
    conn.execute(
        "INSERT INTO sessions (patient_id, eye, protocol_toml, software_version, seed, simulated, state, "
        "created_at) VALUES ('P1', 'OD', 'name = \"x\"', '0.1.0', 7, 0, 'open', '2026-01-01T00:00:00+00:00')"
    )
    return conn
