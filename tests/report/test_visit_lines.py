"""A visit's eye refracted with chart lines: the record counts its lines beside its comparisons and
sliders (record schema 5, the visit CSV's ``lines_used``), says them in its answers text (the
visit PDF's), and a record of version 4 still reads, without them."""

from __future__ import annotations

import csv
import io
import json

import pytest
from visit_helpers import make_visit, measured_eye

from visiontune.errors import InvalidInputError
from visiontune.report.tabular_visit import VISIT_CSV_COLUMNS, visit_csv, visit_json
from visiontune.report.visit_record import RECORD_SCHEMA_VERSION, EyeRecord, VisitRecord


def test_an_eyes_lines_are_counted_said_and_round_trip():
    visit = make_visit(od=measured_eye("OD", comparisons_used=40, lines_used=6))
    assert visit.od.answers_text == "64 answers (18 letters, 40 comparisons, 6 chart lines)"
    doc = visit.to_dict()
    assert doc["schema_version"] == RECORD_SCHEMA_VERSION == 5 and doc["od"]["lines_used"] == 6
    assert VisitRecord.from_dict(json.loads(json.dumps(doc))) == visit
    rows = list(csv.DictReader(io.StringIO(visit_csv(visit))))
    assert VISIT_CSV_COLUMNS[-1] == "lines_used" and [r["lines_used"] for r in rows] == ["6", ""]
    assert json.loads(visit_json(visit))["eyes"][0]["lines_used"] == 6
    v4 = {
        **doc,
        "schema_version": 4,
        "od": {k: v for k, v in doc["od"].items() if k != "lines_used"},
        "os": {k: v for k, v in doc["os"].items() if k != "lines_used"},
    }
    old = VisitRecord.from_dict(v4)
    assert old.od.lines_used is None and old.od.comparisons_used == 40
    with pytest.raises(
        InvalidInputError, match=r"visit\.OD: unknown key\(s\) lines_used \(visiontune.visit-record v4\)"
    ):
        VisitRecord.from_dict({**v4, "od": doc["od"]})


def test_more_lines_than_answers_and_a_skipped_eyes_lines_are_refused():
    with pytest.raises(InvalidInputError, match=r"visit\.OD\.lines_used: expected an integer in \[0, 4\]"):
        measured_eye("OD", comparisons_used=60, lines_used=5)
    with pytest.raises(InvalidInputError, match="a skipped eye has no results, got lines_used"):
        EyeRecord(eye="OS", status="skipped", skip_reason="prosthetic eye", lines_used=0)
