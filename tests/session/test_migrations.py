"""The schema-version mechanism, exercised with fake migrations on top of the real v1, and the
real v1 -> v2 migration (the visit tables)."""

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


def _v1_log(path):
    """A trial log at schema v1 (before the visit tables) holding patient P1."""
    conn = _conn(path)
    assert apply_migrations(conn, path, MIGRATIONS[:1]) == 1
    conn.execute("INSERT INTO patients (id, created_at) VALUES ('P1', '2026-01-01T00:00:00+00:00')")
    conn.close()


def test_fake_v1_to_v2_migration_runs_once_and_keeps_data(tmp_path):
    path = tmp_path / "log.sqlite3"
    _v1_log(path)
    fake = MIGRATIONS[:1] + (Migration(1, apply=_add_column), Migration(2, ("CREATE TABLE extra (x)",)))
    conn = _conn(path)
    assert apply_migrations(conn, path, fake) == 3
    assert read_schema_version(conn, path) == 3
    assert conn.execute("SELECT id, year_of_birth FROM patients").fetchall() == [("P1", None)]
    assert apply_migrations(conn, path, fake) == 3  # nothing left to do: no duplicate column error
    conn.close()
    # the real VisionTune (v2) now refuses the v3 file
    with pytest.raises(StoreError, match="schema version 3 is newer than this VisionTune supports"):
        TrialStore.open(path)


def test_failed_migration_rolls_back_completely(tmp_path):
    path = tmp_path / "log.sqlite3"
    with TrialStore.open(path) as store:
        store.create_patient("P1")
    broken = MIGRATIONS + (Migration(SCHEMA_VERSION, ("CREATE TABLE half (x)", "INSERT INTO no_such_table VALUES (1)")),)
    conn = _conn(path)
    with pytest.raises(StoreError, match=rf"migration v{SCHEMA_VERSION} -> v{SCHEMA_VERSION + 1} failed: no such table"):
        apply_migrations(conn, path, broken)
    assert read_schema_version(conn, path) == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0
    conn.close()


def test_non_contiguous_migration_list_is_rejected(tmp_path):
    conn = _conn(tmp_path / "a.db")
    with pytest.raises(StoreError, match="not contiguous"):
        apply_migrations(conn, "a.db", MIGRATIONS + (Migration(SCHEMA_VERSION + 1),))
    assert read_schema_version(conn, "a.db") == 0


V1_TABLES = ("meta", "patients", "sessions", "trials", "events")


def _schema_sql(conn, names) -> dict:
    marks = ",".join("?" * len(names))
    rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE tbl_name IN ({marks}) ORDER BY name", names)
    return dict(rows.fetchall())


def test_real_v1_log_migrates_to_v2_with_its_tables_and_rows_unchanged(tmp_path):
    """v2 adds the visit tables only: the v1 tables, indexes and triggers are as they were, and
    a v1 session (with its trials) reads back the same after the upgrade."""
    path = tmp_path / "log.sqlite3"
    _v1_log(path)
    conn = _conn(path)
    conn.execute(
        "INSERT INTO sessions (patient_id, eye, protocol_toml, software_version, seed, simulated, state, created_at) "
        "VALUES ('P1', 'OD', 'name = \"x\"', '0.1.0', 7, 0, 'open', '2026-01-01T00:00:00+00:00')"
    )
    before_schema = _schema_sql(conn, V1_TABLES)
    before_rows = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in V1_TABLES if t != "meta"}
    conn.close()
    with TrialStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 2
        assert store.list_visits() == []
    conn = _conn(path)
    assert _schema_sql(conn, V1_TABLES) == before_schema
    assert {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in before_rows} == before_rows
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"visits", "visit_eyes", "visit_balance_answers", "visit_balance", "visit_signoffs",
            "visit_acuities"} <= tables  # fmt: skip
    conn.close()
