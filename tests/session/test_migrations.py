"""The schema-version mechanism, exercised with fake migrations on top of the real v1, the
real v1 -> v2 migration (the visit tables), v2 -> v3 (the answer of a comparison trial) and v3 -> v4
(a slider trial: the knob, its path and the choice)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.session.old_logs import log_at_version
from visiontune.errors import InvalidInputError, StoreError
from visiontune.optics import Prescription
from visiontune.refraction.trial import Trial
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
    # a fake chain one version past the real one
    fake = (
        MIGRATIONS[:1]
        + (Migration(1, apply=_add_column),)
        + tuple(Migration(v, (f"CREATE TABLE extra{v} (x)",)) for v in range(2, SCHEMA_VERSION + 1))
    )
    newer = SCHEMA_VERSION + 1
    conn = _conn(path)
    assert apply_migrations(conn, path, fake) == newer
    assert read_schema_version(conn, path) == newer
    assert conn.execute("SELECT id, year_of_birth FROM patients").fetchall() == [("P1", None)]
    assert apply_migrations(conn, path, fake) == newer  # nothing left to do: no duplicate column error
    conn.close()
    # the real VisionTune refuses the newer file
    with pytest.raises(StoreError, match=f"schema version {newer} is newer than this VisionTune supports"):
        TrialStore.open(path)


def test_failed_migration_rolls_back_completely(tmp_path):
    path = tmp_path / "log.sqlite3"
    with TrialStore.open(path) as store:
        store.create_patient("P1")
    broken = MIGRATIONS + (
        Migration(SCHEMA_VERSION, ("CREATE TABLE half (x)", "INSERT INTO no_such_table VALUES (1)")),
    )
    conn = _conn(path)
    with pytest.raises(
        StoreError, match=rf"migration v{SCHEMA_VERSION} -> v{SCHEMA_VERSION + 1} failed: no such table"
    ):
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
    assert apply_migrations(conn, path, MIGRATIONS[:2]) == 2
    assert _schema_sql(conn, V1_TABLES) == before_schema
    conn.close()
    with TrialStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
        assert store.list_visits() == []
    conn = _conn(path)
    assert {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in before_rows} == before_rows
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "visits",
        "visit_eyes",
        "visit_balance_answers",
        "visit_balance",
        "visit_signoffs",
        "visit_acuities",
    } <= tables
    conn.close()


def test_real_v2_log_migrates_to_v3_and_its_trials_read_as_letters(tmp_path):
    """v3 adds ``trials.comparison``: a v2 session's letter trial reads back the same (no
    comparison), a comparison can then be recorded and read, and raw SQL that stores a
    comparison without its second lens or with another answer is refused."""
    path = tmp_path / "log.sqlite3"
    conn = log_at_version(path, 2)
    conn.execute(
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, letter_shown, correct, "
        "presented_at, answered_at) VALUES (1, 0, 0.3, -1.0, -0.5, 90, 'H', 1, '2026-01-01T00:00:01+00:00', "
        "'2026-01-01T00:00:02+00:00')"
    )
    conn.close()
    with TrialStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        (old,) = store.trials(1)
        assert (old.correct, old.comparison, old.lens2, old.lens.sphere_d) == (True, None, None, -1.0)
        with store.open_session(1) as handle:
            t = handle.record_trial(
                Trial(
                    1, 0.2, Prescription(-1.0, -0.5, 90), "H", False, lens2=Prescription(-0.5, -0.5, 90), comparison="="
                )
            )
        assert [x.comparison for x in store.trials(1)] == [None, "="] and t.comparison == "="
        assert store.trials(1)[1].lens2 == Prescription(-0.5, -0.5, 90)
    conn = _conn(path)
    for values in ("NULL, NULL, NULL, '1'", "-0.5, -0.5, 90, 'x'"):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(
                "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, sphere2_d, "
                "cylinder2_d, "
                "axis2_deg, comparison, letter_shown, correct, presented_at, answered_at) VALUES (1, 2, 0.3, -1.0, "
                f"-0.5, 90, {values}, 'H', 0, '2026-01-01T00:00:03+00:00', '2026-01-01T00:00:04+00:00')"
            )
    conn.close()
    with pytest.raises(InvalidInputError, match="comparison: expected one of 1, 2, = with a second lens"):
        Trial(0, 0.2, Prescription(-1.0, -0.5, 90), "H", False, comparison="1")


_SLIDER_PATH = (
    '[{"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0}, '
    '{"sphere_d": -1.0, "cylinder_d": -0.5, "axis_deg": 90.0}]'
)


def test_real_v3_log_migrates_to_v4_and_its_trials_read_as_before(tmp_path):
    """v4 adds ``trials.slider_knob``, ``slider_path``, ``slider_choice``: a v3 session's letter
    and comparison read back the same (no slider), a slider can then be recorded and read, and
    raw SQL that stores half a slider, an unknown knob, a choice off the path, a path that is not
    a JSON list of two lenses or more, or a slider that is also a comparison is refused."""
    path = tmp_path / "log.sqlite3"
    conn = log_at_version(path, 3)
    conn.execute(
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, letter_shown, correct, "
        "presented_at, answered_at) VALUES (1, 0, 0.3, -1.0, -0.5, 90, 'H', 1, '2026-01-01T00:00:01+00:00', "
        "'2026-01-01T00:00:02+00:00')"
    )
    conn.execute(
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, sphere2_d, cylinder2_d, "
        "axis2_deg, comparison, letter_shown, correct, presented_at, answered_at) VALUES (1, 1, 0.3, -1.0, -0.5, 90, "
        "-0.5, -0.5, 90, '2', 'H', 0, '2026-01-01T00:00:03+00:00', '2026-01-01T00:00:04+00:00')"
    )
    conn.close()
    with TrialStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
        letter, comparison = store.trials(1)
        assert (letter.comparison, letter.slider_knob, letter.slider_lenses, letter.slider_choice) == (None,) * 4
        assert comparison.comparison == "2" and comparison.slider_choice is None
        lenses = (Prescription(-1.25, -0.5, 90), Prescription(-1.0, -0.5, 90), Prescription(-0.75, -0.5, 90))
        with store.open_session(1) as handle:
            t = handle.record_trial(
                Trial(2, 0.2, lenses[1], "H", False, slider_knob="sphere", slider_lenses=lenses, slider_choice=1)
            )
        read = store.trials(1)[2]
        assert read == t and (read.slider_knob, read.slider_lenses, read.slider_choice) == ("sphere", lenses, 1)
    conn = _conn(path)
    columns = "sphere2_d, cylinder2_d, axis2_deg, comparison, slider_knob, slider_path, slider_choice"
    for values in (
        f"NULL, NULL, NULL, NULL, 'sphere', '{_SLIDER_PATH}', NULL",  # half a slider
        f"NULL, NULL, NULL, NULL, 'power', '{_SLIDER_PATH}', 0",  # no such knob
        f"NULL, NULL, NULL, NULL, 'sphere', '{_SLIDER_PATH}', 2",  # off the path
        "NULL, NULL, NULL, NULL, 'sphere', 'not json', 0",
        "NULL, NULL, NULL, NULL, 'sphere', '[{\"sphere_d\": 1}]', 0",  # one lens
        f"-0.5, -0.5, 90, '1', 'sphere', '{_SLIDER_PATH}', 0",
    ):  # and a comparison
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(
                f"INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, {columns}, "
                f"letter_shown, correct, presented_at, answered_at) VALUES (1, 3, 0.3, -1.0, -0.5, 90, {values}, "
                "'H', 0, '2026-01-01T00:00:05+00:00', '2026-01-01T00:00:06+00:00')"
            )
    conn.close()
