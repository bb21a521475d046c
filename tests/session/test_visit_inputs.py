"""A visit's inputs in the trial log: pupillary distance, sources of the start and habitual
prescriptions, the examiner (the visit_inputs table, its migration, the store API)."""

from __future__ import annotations

import sqlite3

import pytest

from visiontune.errors import InvalidInputError, SessionError
from visiontune.session.migrations import MIGRATIONS, SCHEMA_VERSION, apply_migrations
from visiontune.session.store import TrialStore
from visiontune.session.visit_inputs_schema import SCHEMA_VISIT_INPUTS
from visiontune.session.visit_records import parse_pd, record_visit_inputs, visit_input_rows, visit_inputs


@pytest.fixture
def visit(store):
    store.create_patient("P-1")
    return store.create_visit("P-1", age_years=50)


def test_inputs_recorded_and_merged_field_by_field(store, visit):
    assert visit_inputs(store, visit).pd_mm is None
    first = record_visit_inputs(
        store,
        visit,
        pd_od_mm=31.5,
        pd_os_mm=32.0,
        start_source_od="autorefraction",
        start_source_os="autorefraction",
        habitual_source="lensmeter",
        from_file="ark1_20261128.xml",
    )
    assert (first.pd_mm, first.pd_od_mm, first.pd_os_mm) == (63.5, 31.5, 32.0)
    assert first.start_file("OD") == "ark1_20261128.xml" and first.habitual_file == "ark1_20261128.xml"
    second = record_visit_inputs(store, visit, examiner="  J. Examiner ", start_source_os="typed")
    assert second.examiner == "J. Examiner"
    assert second.pd_mm == 63.5 and second.pd_file == "ark1_20261128.xml"  # kept from the first entry
    assert second.start_source("OD") == "autorefraction" and second.start_file("OD") == "ark1_20261128.xml"
    assert second.start_source("OS") == "typed" and second.start_file("OS") is None
    third = record_visit_inputs(store, visit, pd_mm=62)
    assert (third.pd_mm, third.pd_od_mm, third.pd_os_mm, third.pd_file) == (62.0, None, None, None)
    assert len(visit_input_rows(store, visit)) == 3  # every entry kept


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pd_mm": 95}, "pd_mm: 95 mm is not a pupillary distance"),
        ({"pd_mm": 6.3}, "pd_mm: 6.3 mm is not a pupillary distance"),
        ({"pd_mm": float("nan")}, "pd_mm: expected a finite number"),
        ({"pd_mm": "63"}, "pd_mm: expected a finite number"),
        ({"pd_od_mm": 31.5}, "give both monocular distances"),
        ({"pd_od_mm": 31.5, "pd_os_mm": 63}, "OS: 63 mm is not a monocular pupillary distance"),
        ({"pd_mm": 60, "pd_od_mm": 31.5, "pd_os_mm": 31.5}, "60 mm is not the sum"),
        ({"start_source_od": "guess"}, "start_source_od: expected one of autorefraction"),
        ({"habitual_source": "autorefraction"}, "habitual_source: expected one of lensmeter"),
        ({"examiner": "  "}, "examiner: expected a non-empty text"),
        ({"examiner": "Dr\nX"}, "examiner: expected printable text on one line"),
        ({"examiner": "x" * 201}, "examiner: at most 200 characters"),
        ({"from_file": "a.xml"}, "nothing to record"),
        ({}, "nothing to record"),
    ],
)
def test_bad_inputs_refused_and_nothing_written(store, visit, kwargs, match):
    record_visit_inputs(store, visit, pd_mm=64)
    before = list(store.conn.iterdump())
    with pytest.raises(InvalidInputError, match=match):
        record_visit_inputs(store, visit, **kwargs)
    assert list(store.conn.iterdump()) == before


def test_no_such_visit(store):
    with pytest.raises(SessionError, match="no visit 9"):
        record_visit_inputs(store, 9, pd_mm=63)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("63", (63.0, None, None)),
        (" 63 mm", (63.0, None, None)),
        ("31.5/32", (63.5, 31.5, 32.0)),
        ("31.5 / 31.5", (63.0, 31.5, 31.5)),
    ],
)
def test_parse_pd(text, expected):
    assert parse_pd(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "expected a distance in mm"),
        ("sixty", "'sixty' is not a distance"),
        ("30/30/3", "has 3 parts"),
        ("630", "--pd: 630 mm is not a pupillary distance"),
        ("31.5/", "is not a distance"),
        ("45/45", "--pd OD: 45 mm is not a monocular"),
    ],
)
def test_parse_pd_refusals(text, match):
    with pytest.raises(InvalidInputError, match=match):
        parse_pd(text)


def test_table_is_append_only_and_checked_by_raw_sql(store, visit):
    record_visit_inputs(store, visit, pd_mm=63, examiner="A")
    conn = store.conn
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE visit_inputs SET pd_mm = 64")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM visit_inputs")
    for sql in (
        "INSERT INTO visit_inputs (visit_id, pd_mm, at) VALUES (1, 120, 'x')",
        "INSERT INTO visit_inputs (visit_id, pd_mm, pd_od_mm, at) VALUES (1, 63, 31, 'x')",
        "INSERT INTO visit_inputs (visit_id, pd_mm, pd_od_mm, pd_os_mm, at) VALUES (1, 70, 31, 31, 'x')",
        "INSERT INTO visit_inputs (visit_id, start_source_od, at) VALUES (1, 'guess', 'x')",
    ):
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql)


def test_migration_from_the_previous_version_keeps_visits(tmp_path):
    path = tmp_path / "log.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    mine = next(i for i, m in enumerate(MIGRATIONS) if m.statements is SCHEMA_VISIT_INPUTS)
    apply_migrations(conn, path, MIGRATIONS[:mine])
    conn.execute("INSERT INTO patients (id, created_at) VALUES ('P1', '2026-01-01T00:00:00+00:00')")
    conn.execute(
        "INSERT INTO visits (patient_id, cylinder_form, simulated, software_version, created_at) "
        "VALUES ('P1', 'minus', 0, 't', '2026-01-01T00:00:00+00:00')"
    )
    assert "visit_inputs" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    with TrialStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert [v.patient_id for v in store.list_visits()] == ["P1"]
        assert record_visit_inputs(store, 1, pd_mm=60.5, examiner="B").pd_mm == 60.5
