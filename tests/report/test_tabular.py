"""CSV and JSON exports: documented columns, voided answers marked, exact round trips."""

from __future__ import annotations

import csv
import io
import json

import pytest

from visiontune.errors import InvalidInputError
from visiontune.report import load_session
from visiontune.report.tabular import (
    CSV_COLUMNS,
    session_from_json,
    session_json_text,
    trials_from_csv,
    trials_to_csv,
)


@pytest.fixture
def record(store, make_session):
    return load_session(store, make_session(n_trials=15, undo_at=(3, 8, 14), simulated=True))


def test_csv_one_row_per_answer_with_voids_marked(record):
    rows = list(csv.DictReader(io.StringIO(trials_to_csv(record))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [int(r["trial_index"]) for r in rows] == list(range(15))
    assert [int(r["trial_index"]) for r in rows if r["void"] == "1"] == [3, 8, 14]
    assert {r["simulated"] for r in rows} == {"1"} and {r["schema_version"] for r in rows} == {"2"}
    duel = rows[6]
    assert (duel["sphere2_d"], duel["cylinder2_d"], duel["axis2_deg"]) == ("0.25", "-0.25", "45.5")
    assert rows[4]["letter_named"] == "" and rows[0]["correct"] == "0" and rows[1]["correct"] == "1"
    assert [r["comparison"] for r in rows].count("") == 14 and rows[10]["comparison"] == "="
    assert (rows[10]["sphere2_d"], rows[10]["cylinder2_d"], rows[10]["axis2_deg"]) == ("-0.5", "-0.75", "10.0")


def test_a_schema_1_csv_without_comparisons_still_reads(store, record):
    """Files written before comparisons (schema 1: no ``comparison`` column) read back as letters."""
    rows = list(csv.DictReader(io.StringIO(trials_to_csv(record))))
    old = io.StringIO()
    writer = csv.DictWriter(old, [c for c in CSV_COLUMNS if c != "comparison"], lineterminator="\n")
    writer.writeheader()
    for r in rows:
        if r["comparison"] == "":
            writer.writerow({**{k: v for k, v in r.items() if k != "comparison"}, "schema_version": "1"})
    trials, simulated = trials_from_csv(old.getvalue())
    expected = [t for t in store.trials(record.session_id, include_void=True) if t.comparison is None]
    assert trials == expected and len(trials) == 14 and simulated is True
    with pytest.raises(InvalidInputError, match="column schema_version: expected 1"):
        trials_from_csv(old.getvalue().replace(",1,1\n", ",1,2\n", 1))


def test_csv_round_trip_reproduces_the_trials(store, record):
    trials, simulated = trials_from_csv(trials_to_csv(record))
    assert trials == list(store.trials(record.session_id, include_void=True))
    assert simulated is True
    assert any(t.lens2 is not None for t in trials) and any(t.letter_named is None for t in trials)
    assert [t.comparison for t in trials if t.comparison is not None] == ["="]


def test_csv_of_real_session_is_not_marked(store, make_session):
    rec = load_session(store, make_session(simulated=False))
    assert trials_from_csv(trials_to_csv(rec))[1] is False


def test_json_round_trip_reproduces_session_trials_and_result(store, record):
    doc = json.loads(session_json_text(record))
    assert doc["schema"] == "visiontune.session-export" and doc["schema_version"] == 2
    assert doc["simulated"] is True and doc["mark"] == "SIMULATED"
    loaded = session_from_json(doc)
    assert loaded == record
    assert list(loaded.trials) == store.trials(record.session_id, include_void=True)
    assert loaded.info.result == store.get_session(record.session_id).result
    assert loaded.events == tuple(store.events(record.session_id))


def test_json_carries_no_nan_and_is_plain_json(record):
    text = session_json_text(record)
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))


def test_csv_errors_name_line_and_column(record):
    text = trials_to_csv(record)
    lines = text.splitlines()
    cells = lines[3].split(",")
    cells[CSV_COLUMNS.index("sphere_d")] = "minus one"
    bad = "\n".join([*lines[:3], ",".join(cells), *lines[4:]])
    with pytest.raises(InvalidInputError, match=r"csv line 4, column sphere_d: expected a number, got 'minus one'"):
        trials_from_csv(bad)
    with pytest.raises(InvalidInputError, match="csv: expected the header"):
        trials_from_csv("a,b\n1,2\n")
    newer = text.replace(",1,2\n", ",1,3\n", 1)
    with pytest.raises(InvalidInputError, match="column schema_version"):
        trials_from_csv(newer)


def test_json_wrong_schema_or_version(record):
    doc = json.loads(session_json_text(record))
    with pytest.raises(InvalidInputError, match="schema_version: this VisionTune reads versions 1 and 2, got 3"):
        session_from_json({**doc, "schema_version": 3})
    v1 = {**doc, "schema_version": 1, "trials": [t for t in doc["trials"] if t["comparison"] is None]}
    assert all(t.comparison is None for t in session_from_json(v1).trials)
    with pytest.raises(InvalidInputError, match="json: schema"):
        session_from_json({**doc, "schema": "other"})
    del doc["trials"][0]["lens"]
    with pytest.raises(InvalidInputError, match="missing key 'lens'"):
        session_from_json(doc)


def _trials_strategy():
    from datetime import UTC, datetime, timedelta

    from hypothesis import strategies as st

    from visiontune.session.records import Lens, Trial

    power = st.floats(-20, 20, allow_nan=False)
    lens = st.builds(Lens, power, power, st.floats(0, 179.999, allow_nan=False))
    text = st.text(alphabet='AZ,"\n é;', min_size=1, max_size=4)
    when = st.integers(0, 10**9).map(lambda us: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=us))
    trial = st.builds(
        lambda i, s, l1, l2, shown, named, ok, t, void: Trial(1, i, s, l1, shown, named, ok, t, t, lens2=l2, void=void),
        st.integers(0, 10**6), st.floats(-3, 3, allow_nan=False), lens, st.none() | lens, text, st.none() | text,
        st.booleans(), when, st.booleans(),
    )  # fmt: skip
    return st.lists(trial, max_size=8)


def test_csv_round_trip_of_arbitrary_trials(record):
    """Any floats (shortest repr), quotes, commas and newlines in letters survive the CSV."""
    import dataclasses

    from hypothesis import given, settings

    @settings(max_examples=60, deadline=None)
    @given(_trials_strategy())
    def check(trials):
        rec = dataclasses.replace(record, trials=tuple(trials))
        assert trials_from_csv(trials_to_csv(rec)) == (trials, True if trials else None)

    check()
