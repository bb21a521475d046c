"""The visit record: validated values, JSON round trip, clear errors naming the field."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

import pytest
from visit_helpers import VISIT_AT, make_visit, measured_eye, skipped_eye

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription
from visiontune.report.visit_record import (
    _INPUT_KEYS,
    RECORD_SCHEMA_VERSION,
    BinocularBalance,
    EyeRecord,
    SignOff,
    VisitRecord,
)


def test_round_trip_through_json_keeps_every_value():
    visit = make_visit(simulated=True)
    text = json.dumps(visit.to_dict())
    back = VisitRecord.from_dict(json.loads(text))
    assert back == visit
    assert back.os.signed_off.prescription == Prescription(-1.75, -0.75, 175.0)
    assert back.os.prescription == Prescription(-2.0, -0.75, 175.0)  # the found one is kept beside it
    assert back.simulated is True and back.recorded_at == VISIT_AT


def test_round_trip_with_a_skipped_eye_and_no_patient():
    visit = make_visit(os=skipped_eye("OS", "amblyopic eye"), patient_id=None, balance=None, habitual_od=None)
    back = VisitRecord.from_dict(json.loads(json.dumps(visit.to_dict())))
    assert back == visit and back.os.skip_reason == "amblyopic eye" and back.patient_id is None
    assert back.measured_eyes == (back.od,)


def test_final_prescription_is_the_signed_one_and_acuity_prefers_the_measured():
    visit = make_visit()
    assert visit.od.final_prescription == visit.od.prescription
    assert visit.os.final_prescription == Prescription(-1.75, -0.75, 175.0)
    assert visit.od.acuity_logmar == 0.02 and visit.os.acuity_logmar == 0.0


def test_prescriptions_are_shown_in_the_clinic_form():
    found = Prescription(-1.75, 0.5, 180.0)  # a plus-cylinder lens from the engine
    minus = make_visit(od=measured_eye("OD", prescription=found))
    plus = make_visit(od=measured_eye("OD", prescription=found), cylinder_form="plus", os=skipped_eye(), balance=None)
    assert minus.shown(found) == Prescription(-1.25, -0.5, 90.0)
    assert plus.shown(found) == found
    assert minus.shown(found).is_equivalent(found)


def test_balanced_prescription_adds_the_plus_change_to_the_sphere():
    visit = make_visit()
    assert visit.balanced_prescription("OD") == Prescription(-1.0, -0.5, 90.0)
    assert visit.balanced_prescription("OS") == Prescription(-1.75, -0.75, 175.0)
    assert make_visit(os=skipped_eye()).balanced_prescription("OS") is None


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: make_visit(
                os=measured_eye("OS", signed_off=SignOff(Prescription(-2.5, 0.75, 85.0), "Dr A", VISIT_AT))
            ),
            "visit.OS.signed_off.prescription: cylinder +0.75 D is in plus-cylinder form",
        ),
        (lambda: make_visit(cylinder_form="plus"), "visit.OS.signed_off.prescription: cylinder -0.75 D is in minus"),
        (lambda: make_visit(cylinder_form="cross"), "visit.cylinder_form: expected 'minus' or 'plus'"),
        (lambda: measured_eye("OD", sphere_pm_d=-0.1), "visit.OD.sphere_pm_d: expected a finite number >= 0"),
        (lambda: measured_eye("OD", j45_pm_d=None), "visit.OD.j45_pm_d: a measured eye needs"),
        (lambda: measured_eye("OD", stopped_by="boredom"), "visit.OD.stopped_by"),
        (lambda: measured_eye("OD", prescription=None), "visit.OD.prescription: a measured eye needs"),
        (lambda: measured_eye("OD", predicted_va_logmar=float("nan")), "visit.OD.predicted_va_logmar"),
        (lambda: EyeRecord(eye="OU"), "eye: expected 'OD' or 'OS'"),
        (lambda: EyeRecord(eye="OS", status="skipped"), "visit.OS.skip_reason: expected a non-empty text"),
        (lambda: EyeRecord(eye="OS", status="skipped", skip_reason="x", session_id=3), "a skipped eye has no results"),
        (lambda: make_visit(od=measured_eye("OS")), "visit.od: expected the record of eye OD"),
        (
            lambda: make_visit(recorded_at=datetime(2026, 3, 4, 9, 30)),
            "visit.recorded_at: expected a time with a time zone",
        ),
        (lambda: make_visit(age_years=-3), "visit.age_years"),
        (lambda: make_visit(patient_id="  "), "visit.patient_id: expected a non-empty text"),
        (lambda: make_visit(simulated="yes"), "visit.simulated"),
        (
            lambda: make_visit(os=skipped_eye(), balance=BinocularBalance("equal plus", 0.25, 0.25)),
            "visit.balance.plus_change_os_d: +0.25 D applied to eye OS, which was skipped",
        ),
        (lambda: BinocularBalance("", 0.25, 0.0), "balance.method"),
    ],
)
def test_bad_input_is_refused_naming_the_field(build, message):
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        build()


@pytest.mark.parametrize("axis", [-5.0, 180.5, 270.0])
def test_axis_outside_0_180_is_refused_when_read(axis):
    doc = make_visit().to_dict()
    doc["od"]["prescription"]["axis_deg"] = axis
    with pytest.raises(InvalidInputError, match=r"visit\.OD\.prescription\.axis_deg: expected degrees in \[0, 180\]"):
        VisitRecord.from_dict(doc)
    doc = make_visit().to_dict()
    doc["os"]["signed_off"]["prescription"]["axis_deg"] = axis
    with pytest.raises(InvalidInputError, match=r"visit\.OS\.signed_off\.prescription\.axis_deg"):
        VisitRecord.from_dict(doc)


def test_axis_outside_0_180_is_refused_by_the_prescription_itself():
    with pytest.raises(InvalidInputError, match="axis_deg"):
        Prescription(-1.0, -0.5, 181.0)


def test_unknown_keys_and_other_schema_versions_are_refused():
    doc = make_visit().to_dict()
    doc["od"]["colour"] = "blue"
    with pytest.raises(InvalidInputError, match=r"visit\.OD: unknown key\(s\) colour"):
        VisitRecord.from_dict(doc)
    doc = make_visit().to_dict()
    doc["schema_version"] = RECORD_SCHEMA_VERSION + 1
    with pytest.raises(
        InvalidInputError, match=f"visit.schema: expected visiontune.visit-record version 1 to {RECORD_SCHEMA_VERSION}"
    ):
        VisitRecord.from_dict(doc)


def test_the_answers_by_kind_round_trip_and_a_version_1_record_still_reads():
    """Schema 2 records how many answers were comparisons and sliders; a record of version 1
    (before sliders) reads with the counts not recorded, and may not carry them."""
    visit = make_visit(od=measured_eye("OD", comparisons_used=10, sliders_used=4))
    doc = visit.to_dict()
    assert doc["schema_version"] == RECORD_SCHEMA_VERSION
    assert (doc["od"]["comparisons_used"], doc["od"]["sliders_used"]) == (10, 4)
    assert VisitRecord.from_dict(doc) == visit
    assert visit.od.answers_text == "64 answers (50 letters, 10 comparisons, 4 sliders)"
    assert visit.os.answers_text == "64 answers"  # not recorded: no kinds named
    v1 = {
        **{k: v for k, v in doc.items() if k not in ("near", *_INPUT_KEYS)},
        "schema_version": 1,
        "od": {k: v for k, v in doc["od"].items() if k not in ("comparisons_used", "sliders_used", "lines_used")},
        "os": {k: v for k, v in doc["os"].items() if k not in ("comparisons_used", "sliders_used", "lines_used")},
    }
    old = VisitRecord.from_dict(v1)
    assert (old.od.comparisons_used, old.od.sliders_used) == (None, None) and old.od.answers_used == 64
    with pytest.raises(
        InvalidInputError,
        match=r"visit\.OD: unknown key\(s\) comparisons_used, lines_used, sliders_used "
        r"\(visiontune.visit-record v1\)",
    ):
        VisitRecord.from_dict({**v1, "od": doc["od"]})
    with pytest.raises(InvalidInputError, match=r"visit\.OD\.sliders_used: expected an integer in \[0, 4\]"):
        measured_eye("OD", comparisons_used=60, sliders_used=5)
    with pytest.raises(InvalidInputError, match="a skipped eye has no results, got sliders_used"):
        EyeRecord(eye="OS", status="skipped", skip_reason="prosthetic eye", sliders_used=0)


def test_a_visit_without_a_measured_eye_cannot_be_recorded():
    visit = make_visit(od=skipped_eye("OD", "prosthetic eye"), os=skipped_eye("OS", "amblyopic eye"), balance=None)
    with pytest.raises(InvalidInputError, match="visit V-0001: no eye was measured .*OD skipped \\(prosthetic eye\\)"):
        visit.check_recordable()
    make_visit().check_recordable()  # one measured eye is enough


def test_records_are_frozen():
    visit = make_visit()
    with pytest.raises(dataclasses.FrozenInstanceError):
        visit.simulated = True  # type: ignore[misc]


# --- CSV / JSON of a visit (visiontune.report.tabular_visit) ---------------------------------
def test_csv_has_one_row_per_eye_with_power_vectors_beside_s_c_axis(tmp_path):
    import csv
    import io
    import stat

    from visiontune.report.tabular_visit import VISIT_CSV_COLUMNS, VISIT_CSV_SCHEMA, write_visit_tabular

    visit = make_visit(simulated=True)
    paths = write_visit_tabular(visit, tmp_path / "v.csv", tmp_path / "v.json")
    assert {stat.S_IMODE(p.stat().st_mode) for p in paths.values()} == {0o600}
    rows = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    assert tuple(rows[0]) == VISIT_CSV_COLUMNS and [r["eye"] for r in rows] == ["OD", "OS"]
    od, os_ = rows
    found = Prescription(float(od["found_sphere_d"]), float(od["found_cylinder_d"]), float(od["found_axis_deg"]))
    assert found == visit.od.prescription
    m, j0, j45 = visit.od.prescription.power_vector_array()
    assert (float(od["found_m_d"]), float(od["found_j0_d"]), float(od["found_j45_d"])) == (m, j0, j45)
    assert (float(od["rx_sphere_d"]), float(od["balance_plus_change_d"])) == (-1.0, 0.25)
    assert (float(os_["signed_sphere_d"]), os_["signed_by"], float(os_["rx_sphere_d"])) == (-1.75, "Dr A. Optom", -1.75)
    assert float(os_["j45_pm_d"]) == 0.1 and os_["measured_va_logmar"] == "" and od["simulated"] == "1"
    assert (od["answers_used"], od["comparisons_used"], od["sliders_used"], od["schema"]) == (
        "64",
        "",
        "",
        VISIT_CSV_SCHEMA,
    )
    assert od["mark"] == os_["mark"] == "SIMULATED"
    doc = json.loads(paths["json"].read_text())
    assert doc["mark"] == "SIMULATED" and VisitRecord.from_dict(doc["record"]) == visit


def test_tabular_of_a_real_visit_in_plus_cylinder_with_a_skipped_eye():
    from visiontune.report.tabular_visit import visit_csv, visit_json

    visit = make_visit(cylinder_form="plus", os=skipped_eye("OS", "amblyopic eye"), balance=None)
    text = visit_csv(visit)
    assert "SIMULATED" not in text and "SIMULATED" not in visit_json(visit)
    od, os_ = text.splitlines()[1:]
    assert ",plus,OD,measured,,-1.75,0.5,180.0," in od
    assert ",OS,skipped,amblyopic eye,,," in os_
    assert json.loads(visit_json(visit))["mark"] is None


def test_tabular_refuses_a_visit_without_a_measured_eye(tmp_path):
    from visiontune.report.tabular_visit import write_visit_tabular

    visit = make_visit(od=skipped_eye("OD"), os=skipped_eye("OS"), balance=None)
    with pytest.raises(InvalidInputError, match="no eye was measured"):
        write_visit_tabular(visit, tmp_path / "v.csv", tmp_path / "v.json")
    assert list(tmp_path.iterdir()) == []
