"""A chart line in the session's records: the PDF's trial table shows it as a line (its letters,
each right or wrong, the count, its size and lens), the CSV and the JSON carry ``line_correct``
and read it back (a wrong one refused, naming where), the FHIR note and the PDF summary count the
lines. The session: a SIMULATED engine session of the chart-line protocol, a line undone and asked
again."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from tests.report.short_sessions import short_session
from visiontune.errors import InvalidInputError
from visiontune.refraction.loop import PendingLine
from visiontune.report import load_session
from visiontune.report.fhir import vision_prescription
from visiontune.report.pdf import is_note, pdf_bytes, report_lines, trial_rows
from visiontune.report.tabular import (
    CSV_COLUMNS,
    session_from_json,
    session_json_text,
    trials_from_csv,
    trials_to_csv,
)

LINES = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines-filed.toml"


@pytest.fixture
def line_session(store, tmp_path):
    """A finished SIMULATED session of the chart-line protocol (12 answers, 1000 particles, seed 3:
    lines at answers 1 and 5), its first line answered, undone (void) and asked again; -> session id."""
    session, presenter = short_session(store, tmp_path, LINES, "SIM-LINES", max_trials=12, min_trials=0)
    with session:
        q = session.next_query()
        assert isinstance(q, PendingLine)
        session.record(presenter.present(q))
        session.undo()
        session.run(presenter)
        return session.session_id


def _lines(record):
    return [t for t in record.trials if t.line_correct is not None]


def test_the_pdf_shows_each_line_as_a_line(store, line_session):
    record = load_session(store, line_session)
    lines = _lines(record)
    assert len(lines) >= 2 and any(t.void for t in lines)
    rows = trial_rows(record)
    for t in lines:
        i = next(k for k, r in enumerate(rows) if r[0] == str(t.index + 1))
        row, note = rows[i], rows[i + 1]
        right = t.line_correct.count("1")
        assert row[1] == f"{t.s_logmar:.2f}" and row[5:8] == (t.letter_shown, "line", f"{right} of 5")
        assert row[8] == ("void" if t.void else "")
        marks = " ".join(f"{x}{'+' if c == '1' else '-'}" for x, c in zip(t.letter_shown, t.line_correct, strict=True))
        assert is_note(note) and note[1].startswith(f"line {marks} ({right} of 5 right) through S ")
    summary = dict(report_lines(record))
    n_lines = sum(not t.void for t in lines)
    assert record.result.lines_used == n_lines
    assert f"{n_lines} chart line" in summary["Answers"] and "1 voided" in summary["Answers"]
    reader = PdfReader(io.BytesIO(pdf_bytes(record)))
    text = re.sub(r"\s+", " ", " ".join(page.extract_text() for page in reader.pages))
    for t in lines:
        marks = " ".join(f"{x}{'+' if c == '1' else '-'}" for x, c in zip(t.letter_shown, t.line_correct, strict=True))
        assert f"line {marks} ({t.line_correct.count('1')} of 5 right)" in text
    assert "SIMULATED" in text


def test_the_csv_and_the_json_carry_line_correct_and_read_it_back(store, line_session):
    record = load_session(store, line_session)
    text = trials_to_csv(record)
    rows = list(csv.DictReader(io.StringIO(text)))
    stored = store.trials(line_session, include_void=True)
    assert [r["line_correct"] or None for r in rows] == [t.line_correct for t in stored]
    for r in rows:
        if r["line_correct"]:
            assert r["kind"] == "letter" and len(r["letter_shown"]) == len(r["line_correct"]) == 5
            assert r["correct"] == ("1" if r["line_correct"].count("1") >= 3 else "0")
    trials, simulated = trials_from_csv(text)
    assert simulated is True and trials == stored
    doc = json.loads(session_json_text(record))
    assert [t["line_correct"] for t in doc["trials"]] == [t.line_correct for t in stored]
    assert session_from_json(doc) == record
    line_row = next(k for k, r in enumerate(rows) if r["line_correct"]) + 2  # the file's line
    bad = _replace_cell(text, line_row, "line_correct", "1101")  # four answers to five letters
    with pytest.raises(InvalidInputError, match=rf"csv line {line_row}: line_correct"):
        trials_from_csv(bad)
    with pytest.raises(InvalidInputError, match=rf"csv line {line_row}: line_correct"):
        trials_from_csv(_replace_cell(text, line_row, "line_correct", "11x10"))
    first_line = next(k for k, t in enumerate(doc["trials"]) if t["line_correct"])
    doc["trials"][first_line]["line_correct"] = "111"
    with pytest.raises(InvalidInputError, match=rf"json: trials\[{first_line}\]: line_correct"):
        session_from_json(doc)


def test_a_version_3_json_and_a_schema_4_csv_without_lines_still_read(store, make_session):
    record = load_session(store, make_session(n_trials=8, undo_at=(3,), simulated=True))
    doc = json.loads(session_json_text(record))
    old = {
        **doc,
        "schema_version": 3,
        "trials": [{k: v for k, v in t.items() if k != "line_correct"} for t in doc["trials"]],
    }
    assert session_from_json(old) == record
    rows = list(csv.DictReader(io.StringIO(trials_to_csv(record))))
    out = io.StringIO()
    v4 = [c for c in CSV_COLUMNS if c != "line_correct" and not c.startswith("frame_")]
    writer = csv.DictWriter(out, v4, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({**{k: v for k, v in r.items() if k in v4}, "schema_version": "4"})
    assert trials_from_csv(out.getvalue())[0] == list(record.trials)


def test_the_fhir_note_counts_the_lines(store, line_session):
    record = load_session(store, line_session)
    resource = vision_prescription(record)
    notes = [n.text for spec in resource.lensSpecification for n in (spec.note or [])]
    n_lines = record.result.lines_used
    assert any(f"{n_lines} chart line" in n for n in notes), notes


def _replace_cell(text: str, line: int, column: str, value: str) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    rows[line - 1][CSV_COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()
