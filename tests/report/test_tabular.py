"""CSV and JSON exports: documented columns, voided answers marked, exact round trips (letters,
comparisons and sliders), older schemas still read, bad sliders refused with the place named."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest

from visiontune.errors import InvalidInputError
from visiontune.refraction.trial import trial_kind
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
    assert {r["simulated"] for r in rows} == {"1"} and {r["schema_version"] for r in rows} == {"6"}
    assert {r["mark"] for r in rows} == {"SIMULATED"}  # a simulated session says so on every row
    duel = rows[6]
    assert (duel["sphere2_d"], duel["cylinder2_d"], duel["axis2_deg"]) == ("0.25", "-0.25", "45.5")
    assert rows[4]["letter_named"] == "" and rows[0]["correct"] == "0" and rows[1]["correct"] == "1"
    assert [r["comparison"] for r in rows].count("") == 14 and rows[10]["comparison"] == "="
    assert (rows[10]["sphere2_d"], rows[10]["cylinder2_d"], rows[10]["axis2_deg"]) == ("-0.5", "-0.75", "10.0")
    assert [r["kind"] for r in rows].count("letter") == 14 and rows[10]["kind"] == "comparison"
    assert {(r["slider_knob"], r["slider_choice"], r["slider_path"]) for r in rows} == {("", "", "")}


def _older_csv(rows: list[dict], version: int, dropped: tuple[str, ...]) -> str:
    """The rows as a file of an older schema: the columns ``dropped`` left out."""
    out = io.StringIO()
    dropped = (
        *dropped,
        "mark",
        "line_correct",
        "frame_sphere_d",
        "frame_cylinder_d",
        "frame_axis_deg",
    )  # 4's, 5's, 6's
    writer = csv.DictWriter(out, [c for c in CSV_COLUMNS if c not in dropped], lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({**{k: v for k, v in r.items() if k not in dropped}, "schema_version": str(version)})
    return out.getvalue()


_SLIDER_COLUMNS = ("kind", "slider_knob", "slider_choice", "slider_path")


def test_a_schema_1_csv_without_comparisons_still_reads(store, record):
    """Files written before comparisons (schema 1: no ``comparison`` column) read back as letters."""
    rows = [r for r in csv.DictReader(io.StringIO(trials_to_csv(record))) if r["comparison"] == ""]
    old = _older_csv(rows, 1, (*_SLIDER_COLUMNS, "comparison"))
    trials, simulated = trials_from_csv(old)
    expected = [t for t in store.trials(record.session_id, include_void=True) if t.comparison is None]
    assert trials == expected and len(trials) == 14 and simulated is True
    with pytest.raises(InvalidInputError, match="column schema_version: expected 1"):
        trials_from_csv(old.replace(",1,1\n", ",1,2\n", 1))


#: A file VisionTune wrote before sliders (schema 2, the writer of commit b472817): a "don't know"
#: letter, a duel, and a voided comparison answered "=".
SCHEMA_2_CSV = """\
session_id,trial_index,void,s_logmar,sphere_d,cylinder_d,axis_deg,sphere2_d,cylinder2_d,axis2_deg,letter_shown,letter_named,correct,comparison,presented_at,answered_at,simulated,schema_version
1,0,0,0.0,-2.5,-1.75,90.0,,,,N,,1,,2026-03-04T09:00:03+00:00,2026-03-04T09:00:03+00:00,1,2
1,1,0,0.1,-2.25,-1.625,90.0,0.25,-0.25,45.5,R,S,0,,2026-03-04T09:00:04+00:00,2026-03-04T09:00:04+00:00,1,2
1,2,1,0.3,-1.75,-1.375,90.0,-0.5,-0.75,10.0,C,C,1,=,2026-03-04T09:00:05+00:00,2026-03-04T09:00:05+00:00,1,2
"""


def test_a_schema_2_csv_written_before_sliders_still_reads():
    from datetime import UTC, datetime

    from visiontune.optics import Prescription as Lens
    from visiontune.refraction.trial import Trial

    def at(s):
        return datetime(2026, 3, 4, 9, 0, s, tzinfo=UTC)

    trials, simulated = trials_from_csv(SCHEMA_2_CSV)
    assert simulated is True
    assert trials == [
        Trial(0, 0.0, Lens(-2.5, -1.75, 90.0), "N", True, None, at(3), at(3), session_id=1),
        Trial(
            1,
            0.1,
            Lens(-2.25, -1.625, 90.0),
            "R",
            False,
            "S",
            at(4),
            at(4),
            lens2=Lens(0.25, -0.25, 45.5),
            session_id=1,
        ),
        Trial(
            2,
            0.3,
            Lens(-1.75, -1.375, 90.0),
            "C",
            True,
            "C",
            at(5),
            at(5),
            lens2=Lens(-0.5, -0.75, 10.0),
            void=True,
            comparison="=",
            session_id=1,
        ),
    ]
    assert all(t.slider_choice is None and t.slider_knob is None and t.slider_lenses is None for t in trials)
    with pytest.raises(InvalidInputError, match="csv line 2, column schema_version: expected 2"):
        trials_from_csv(SCHEMA_2_CSV.replace(",1,2\n", ",1,3\n", 1))


def test_csv_round_trip_reproduces_the_trials(store, record):
    trials, simulated = trials_from_csv(trials_to_csv(record))
    assert trials == list(store.trials(record.session_id, include_void=True))
    assert simulated is True
    assert any(t.lens2 is not None for t in trials) and any(t.letter_named is None for t in trials)
    assert [t.comparison for t in trials if t.comparison is not None] == ["="]


@pytest.fixture
def sliders(store, slider_session):
    """The SIMULATED engine session with letters, comparisons and sliders (one slider voided)."""
    record = load_session(store, slider_session)
    kinds = [(trial_kind(t), t.void) for t in record.trials]
    assert {"letter", "comparison", "slider"} <= {k for k, _ in kinds} and ("slider", True) in kinds
    return record


def _fields(trials) -> list[dict]:
    """Every field of every trial, as plain values (the path's lenses too)."""
    return [dataclasses.asdict(t) for t in trials]


def test_csv_round_trip_of_letters_comparisons_and_sliders(store, sliders):
    text = trials_to_csv(sliders)
    trials, simulated = trials_from_csv(text)
    stored = store.trials(sliders.session_id, include_void=True)
    assert simulated is True and trials == stored and _fields(trials) == _fields(stored)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["kind"] for r in rows] == [trial_kind(t) for t in stored]
    for r, t in zip(rows, stored, strict=True):
        if t.slider_choice is None:
            assert (r["slider_knob"], r["slider_choice"], r["slider_path"]) == ("", "", "")
            continue
        path = json.loads(r["slider_path"])  # the knob's path, read independently of the reader
        assert r["slider_knob"] == t.slider_knob and int(r["slider_choice"]) == t.slider_choice
        assert [(x["sphere_d"], x["cylinder_d"], x["axis_deg"]) for x in path] == [
            (x.sphere_d, x.cylinder_d, x.axis_deg % 180.0)
            for x in t.slider_lenses  # the file's axes in [0, 180)
        ]
        chosen = path[int(r["slider_choice"])]
        assert (float(r["sphere_d"]), float(r["cylinder_d"]), float(r["axis_deg"])) == (
            chosen["sphere_d"],
            chosen["cylinder_d"],
            chosen["axis_deg"],
        )


def test_json_round_trip_of_letters_comparisons_and_sliders(store, sliders):
    doc = json.loads(session_json_text(sliders))
    assert doc["schema_version"] == 5 and doc["mark"] == "SIMULATED"
    loaded = session_from_json(doc)
    assert loaded == sliders and _fields(loaded.trials) == _fields(store.trials(sliders.session_id, include_void=True))
    slider = next(t for t in doc["trials"] if t["kind"] == "slider")
    assert set(slider["slider"]) == {"knob", "choice", "path"} and len(slider["slider"]["path"]) >= 2
    assert slider["lens"] == slider["slider"]["path"][slider["slider"]["choice"]]
    assert {t["kind"] for t in doc["trials"] if t["slider"] is None} == {"letter", "comparison"}


def test_a_schema_2_json_without_sliders_still_reads(record):
    doc = json.loads(session_json_text(record))
    old = {
        **doc,
        "schema_version": 2,
        "trials": [{k: v for k, v in t.items() if k not in ("kind", "slider")} for t in doc["trials"]],
    }
    assert session_from_json(old) == record


def _replace_cell(text: str, line: int, column: str, value: str) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    rows[line - 1][CSV_COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def test_bad_sliders_in_a_csv_are_refused_naming_the_line(sliders):
    text = trials_to_csv(sliders)
    line = 2 + next(i for i, t in enumerate(sliders.trials) if t.slider_choice is not None)
    t = sliders.trials[line - 2]
    other = (t.slider_choice + 1) % len(t.slider_lenses)
    one_lens = json.dumps(json.loads(list(csv.DictReader(io.StringIO(text)))[line - 2]["slider_path"])[:1])
    for column, value, message in (
        ("slider_knob", "focus", "slider_knob: expected one of sphere, cylinder, axis, got 'focus'"),
        ("slider_knob", "", "slider: expected the knob, its lenses and the choice together"),
        ("slider_choice", "9", r"slider_choice: expected an index in \[0, 8\], got 9"),
        ("slider_choice", "two", "column slider_choice: expected an integer"),
        ("slider_choice", str(other), f"slider_choice: the lens .* is not lens {other} of the path"),
        ("slider_path", one_lens, "slider_lenses: expected at least 2 Prescription values"),
        ("slider_path", "[1, 2]", "column slider_path: slider_path: expected a list of lenses"),
        ("kind", "letter", "kind: expected 'slider' for this trial"),
        ("comparison", "1", "slider: a trial is a slider or a comparison, not both"),
    ):
        with pytest.raises(InvalidInputError, match=rf"csv line {line}\b.*{message}"):
            trials_from_csv(_replace_cell(text, line, column, value))
    first = trial_kind(sliders.trials[0])
    with pytest.raises(InvalidInputError, match=f"csv line 2: kind: expected '{first}' for this trial"):
        trials_from_csv(_replace_cell(text, 2, "kind", "slider" if first != "slider" else "letter"))


def test_bad_sliders_in_a_json_are_refused_naming_the_trial(sliders):
    doc = json.loads(session_json_text(sliders))
    i = next(k for k, t in enumerate(doc["trials"]) if t["kind"] == "slider")

    def with_slider(**change):
        trials = [dict(t) for t in doc["trials"]]
        trials[i] = {**trials[i], "slider": {**trials[i]["slider"], **change}}
        return {**doc, "trials": trials}

    for change, message in (
        ({"knob": "focus"}, "slider_knob: expected one of"),
        ({"choice": True}, "slider_choice: expected an index"),
        ({"choice": 99}, "slider_choice: expected an index"),
        ({"path": doc["trials"][i]["slider"]["path"][:1]}, "slider_lenses: expected at least 2"),
        ({"path": "sphere"}, "slider.path: expected a list of lenses"),
    ):
        with pytest.raises(InvalidInputError, match=rf"json: trials\[{i}\].*{message}"):
            session_from_json(with_slider(**change))
    wrong_kind = {**doc, "trials": [{**t, "kind": "letter"} if k == i else t for k, t in enumerate(doc["trials"])]}
    with pytest.raises(InvalidInputError, match=rf"json: trials\[{i}\]: kind: expected 'slider'"):
        session_from_json(wrong_kind)


def test_csv_of_real_session_is_not_marked(store, make_session):
    rec = load_session(store, make_session(simulated=False))
    assert trials_from_csv(trials_to_csv(rec))[1] is False


def test_json_round_trip_reproduces_session_trials_and_result(store, record):
    doc = json.loads(session_json_text(record))
    assert doc["schema"] == "visiontune.session-export" and doc["schema_version"] == 5
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
    newer = text.replace(",1,6,SIMULATED\n", ",1,7,SIMULATED\n", 1)
    with pytest.raises(InvalidInputError, match="column schema_version"):
        trials_from_csv(newer)
    with pytest.raises(InvalidInputError, match="csv line 2, column mark: expected 'SIMULATED' exactly when"):
        trials_from_csv(text.replace(",1,6,SIMULATED\n", ",1,6,\n", 1))


def test_json_wrong_schema_or_version(record):
    doc = json.loads(session_json_text(record))
    with pytest.raises(InvalidInputError, match="schema_version: this VisionTune reads versions 1 to 5, got 6"):
        session_from_json({**doc, "schema_version": 6})
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

    from visiontune.optics import Prescription as Lens
    from visiontune.refraction.slider import KNOBS
    from visiontune.refraction.trial import Trial

    power = st.floats(-20, 20, allow_nan=False)
    lens = st.builds(Lens, power, power, st.floats(0, 179.999, allow_nan=False))
    text = st.text(alphabet='AZ,"\n é;', min_size=1, max_size=4).filter(str.strip)  # a letter is never blank
    when = st.integers(0, 10**9).map(lambda us: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=us))
    trial = st.builds(
        lambda i, s, l1, l2, shown, named, ok, t, void: Trial(
            i, s, l1, shown, ok, named, t, t, lens2=l2, void=void, session_id=1
        ),
        st.integers(0, 10**6),
        st.floats(-3, 3, allow_nan=False),
        lens,
        st.none() | lens,
        text,
        st.none() | text,
        st.booleans(),
        when,
        st.booleans(),
    )

    @st.composite
    def slider(draw):
        path = tuple(draw(st.lists(lens, min_size=2, max_size=5)))
        choice = draw(st.integers(0, len(path) - 1))
        t = draw(trial)
        return dataclasses.replace(
            t,
            lens=path[choice],
            lens2=None,
            slider_knob=draw(st.sampled_from(KNOBS)),
            slider_lenses=path,
            slider_choice=choice,
        )

    return st.lists(trial | slider(), max_size=8)


def test_csv_round_trip_of_arbitrary_trials(record):
    """Any floats (shortest repr), quotes, commas and newlines in letters, any slider path survive the CSV."""
    from hypothesis import given, settings

    @settings(max_examples=60, deadline=None)
    @given(_trials_strategy())
    def check(trials):
        rec = dataclasses.replace(record, trials=tuple(trials))
        assert trials_from_csv(trials_to_csv(rec)) == (trials, True if trials else None)

    check()
