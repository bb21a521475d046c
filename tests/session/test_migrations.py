"""The schema-version mechanism, exercised with fake migrations on top of the real v1."""

from __future__ import annotations

import sqlite3

import pytest

from visiontune.errors import StoreError
from visiontune.session.migrations import MIGRATIONS, SCHEMA_VERSION, Migration, apply_migrations, read_schema_version
from visiontune.session.store import TrialStore


def _conn(path):
    return sqlite3.connect(path, isolation_level=None)


def test_empty_database_is_version_0_and_migrates_to_current(tmp_path):
    conn = _conn(tmp_path / "a.db")
    assert read_schema_version(conn, "a.db") == 0
    assert apply_migrations(conn, "a.db") == SCHEMA_VERSION
    assert read_schema_version(conn, "a.db") == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"meta", "patients", "sessions", "trials", "events"} <= tables
    assert apply_migrations(conn, "a.db") == SCHEMA_VERSION  # idempotent


def _add_column(conn):
    conn.execute("ALTER TABLE patients ADD COLUMN year_of_birth INTEGER")


def test_fake_v1_to_v2_migration_runs_once_and_keeps_data(tmp_path):
    path = tmp_path / "log.sqlite3"
    with TrialStore.open(path) as store:
        store.create_patient("P1")
    fake = MIGRATIONS + (Migration(1, apply=_add_column), Migration(2, ("CREATE TABLE extra (x)",)))
    conn = _conn(path)
    assert apply_migrations(conn, path, fake) == 3
    assert read_schema_version(conn, path) == 3
    assert conn.execute("SELECT id, year_of_birth FROM patients").fetchall() == [("P1", None)]
    assert apply_migrations(conn, path, fake) == 3  # nothing left to do: no duplicate column error
    conn.close()
    # the real VisionTune (v1) now refuses the v3 file
    with pytest.raises(StoreError, match="schema version 3 is newer than this VisionTune supports"):
        TrialStore.open(path)


def test_failed_migration_rolls_back_completely(tmp_path):
    path = tmp_path / "log.sqlite3"
    with TrialStore.open(path) as store:
        store.create_patient("P1")
    broken = MIGRATIONS + (Migration(1, ("CREATE TABLE half (x)", "INSERT INTO no_such_table VALUES (1)")),)
    conn = _conn(path)
    with pytest.raises(StoreError, match=r"migration v1 -> v2 failed: no such table: no_such_table"):
        apply_migrations(conn, path, broken)
    assert read_schema_version(conn, path) == 1
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0
    conn.close()


def test_non_contiguous_migration_list_is_rejected(tmp_path):
    conn = _conn(tmp_path / "a.db")
    with pytest.raises(StoreError, match="not contiguous"):
        apply_migrations(conn, "a.db", MIGRATIONS + (Migration(2),))
    assert read_schema_version(conn, "a.db") == 0
