"""A lens held before the trial lens (a flipper, a cross-cylinder, a plus sphere "with or without")
in the session's records: its text names what was held, its power and axes, and the lens in the
frame (checked by rebuilding the two lenses from the text); the CSV (schema 6) and the JSON
(version 5) carry the frame lens and read it back, a schema 5 CSV and a version 4 JSON still read;
the PDF's trial table follows such a comparison with that text. The session: a SIMULATED engine
session of the held-lens protocol."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.report.short_sessions import short_session
from visiontune.optics import Prescription
from visiontune.optics.prescription import PowerVector
from visiontune.refraction.clinical_pairs import cross_cylinder
from visiontune.report import load_session
from visiontune.report.pdf import trial_rows
from visiontune.report.tabular import CSV_COLUMNS, session_from_json, session_json_text, trials_from_csv, trials_to_csv
from visiontune.session.trial_text import held_text

HELD = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines-held.toml"
FRAME = Prescription(-2.0, -1.25, 30.0)


def _lens(pv) -> Prescription:
    return PowerVector(*pv).to_prescription()


@pytest.mark.parametrize("power", [0.25, 0.5, 1.0])
@pytest.mark.parametrize("minus_axis", [10.0, 45.0, 135.0, 170.0])
def test_the_text_of_a_cross_cylinder_gives_back_its_two_lenses(power, minus_axis):
    at = FRAME.power_vector_array()
    one, two = _lens(at + cross_cylinder(power, minus_axis)), _lens(at - cross_cylinder(power, minus_axis))
    text = held_text(one, two, FRAME)
    found = re.fullmatch(r"±(\d\.\d\d) D cross-cylinder before (.+): 1 minus axis (\d{3}), 2 minus axis (\d{3})", text)
    assert found, text
    assert float(found[1]) == power and found[2] == FRAME.format()
    axis_1, axis_2 = float(found[3]), float(found[4])
    assert abs((axis_2 - axis_1) % 180.0 - 90.0) < 1e-9
    np.testing.assert_allclose(at + cross_cylinder(power, axis_1), one.power_vector_array(), atol=0.01 * power)


def test_the_text_of_a_flipper_and_of_a_sphere_with_or_without():
    at = FRAME.power_vector_array()
    flip = held_text(_lens(at + [0.75, 0, 0]), _lens(at - [0.75, 0, 0]), FRAME)
    assert flip == f"±0.75 D flipper before {FRAME.format()}: 1 +0.75, 2 -0.75"
    assert (
        held_text(FRAME, _lens(at + [0.5, 0, 0]), FRAME) == f"+0.50 D sphere before {FRAME.format()}: 1 without, 2 with"
    )


@pytest.fixture
def held_session(store, tmp_path):
    """A finished SIMULATED session of the held-lens protocol (24 answers, 1000 particles); -> its id."""
    session, presenter = short_session(store, tmp_path, HELD, "SIM-HELD", max_trials=24, min_trials=24)
    with session:
        session.run(presenter)
        assert any(t.frame_lens is not None for t in session.trials()), "no lens was held in 24 answers"
        return session.session_id


def test_the_csv_and_the_json_carry_the_frame_lens_and_read_it_back(store, held_session):
    record = load_session(store, held_session)
    stored = store.trials(held_session, include_void=True)
    text = trials_to_csv(record)
    rows = list(csv.DictReader(io.StringIO(text)))
    for row, t in zip(rows, stored, strict=True):
        frame = [row[c] for c in ("frame_sphere_d", "frame_cylinder_d", "frame_axis_deg")]
        assert (frame == ["", "", ""]) == (t.frame_lens is None) and row["schema_version"] == "6"
        if t.frame_lens is not None:
            assert float(frame[0]) == t.frame_lens.sphere_d and row["kind"] == "comparison"
    trials, simulated = trials_from_csv(text)
    assert simulated is True and trials == stored
    doc = json.loads(session_json_text(record))
    assert doc["schema_version"] == 5
    assert [t["frame_lens"] is None for t in doc["trials"]] == [t.frame_lens is None for t in stored]
    assert session_from_json(doc) == record
    held = next(k for k, t in enumerate(doc["trials"]) if t["frame_lens"] is not None)
    doc["trials"][held]["frame_lens"]["sphere_d"] += 1.0  # no longer the lens the two were held before
    with pytest.raises(Exception, match=rf"trials\[{held}\].*frame_lens"):
        session_from_json(doc)


def test_a_version_4_json_and_a_schema_5_csv_still_read(store, make_session):
    record = load_session(store, make_session(n_trials=8, undo_at=(3,), simulated=True))
    doc = json.loads(session_json_text(record))
    old = {
        **doc,
        "schema_version": 4,
        "trials": [{k: v for k, v in t.items() if k != "frame_lens"} for t in doc["trials"]],
    }
    assert session_from_json(old) == record
    rows = list(csv.DictReader(io.StringIO(trials_to_csv(record))))
    v5 = [c for c in CSV_COLUMNS if not c.startswith("frame_")]
    out = io.StringIO()
    writer = csv.DictWriter(out, v5, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({**{k: v for k, v in r.items() if k in v5}, "schema_version": "5"})
    assert trials_from_csv(out.getvalue())[0] == list(record.trials)


def test_the_pdf_follows_a_held_comparison_with_what_was_held(store, held_session):
    record = load_session(store, held_session)
    rows = trial_rows(record)
    held = [t for t in record.trials if t.frame_lens is not None]
    notes = [r[1] for r in rows if r[0] == "" and ("cross-cylinder" in r[1] or "flipper" in r[1] or "sphere" in r[1])]
    assert notes == [held_text(t.lens, t.lens2, t.frame_lens) for t in held]
