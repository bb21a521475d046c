"""The near addition in every record of a visit: the VisitRecord's JSON, the CSV, the FHIR Bundle
(VisionPrescription lensSpecification.add, validated by fhir.resources), the DICOM Subjective
Refraction (Add Near Sequence, dciodvfy clean) and the PDF's table, each read back."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess

import pydicom
import pytest
from visit_helpers import make_visit

from visiontune.errors import InvalidInputError
from visiontune.report.dicom_visit import write_visit_dicom
from visiontune.report.fhir_visit import visit_bundle, visit_bundle_json
from visiontune.report.tabular_visit import visit_csv, visit_json
from visiontune.report.visit_pdf import visit_pdf_bytes, visit_table
from visiontune.report.visit_record import NearAddition, VisitRecord

METHOD = "near letters through candidate adds (test)"


def _near(eye="OD", **over):
    values = {
        "eye": eye,
        "add_d": 1.75,
        "lower_d": 1.5,
        "upper_d": 2.0,
        "tentative_add_d": 1.5,
        "near_va_logmar": 0.04,
        "distance_cm": 40.0,
        "method": METHOD,
        "near_point_cm": 30.8,
        "far_point_cm": 57.1,
    }
    values.update(over)
    return NearAddition(**values)


@pytest.fixture
def visit():
    return make_visit(near=(_near("OS", add_d=2.0, lower_d=1.75, upper_d=2.25, far_point_cm=50.0), _near("OD")))


def test_the_record_orders_the_adds_and_reads_them_back(visit):
    assert [n.eye for n in visit.near] == ["OD", "OS"] and visit.near_add("OS").add_d == 2.0
    again = VisitRecord.from_dict(json.loads(json.dumps(visit.to_dict())))
    assert again == visit and again.near_add("OD").range_text == "30.8 cm to 57.1 cm"
    assert _near(far_point_cm=None, add_d=0.0, lower_d=0.0).range_text == "30.8 cm to infinity"


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"add_d": 2.5}, "does not hold the add"),
        ({"add_d": float("nan")}, "add_d"),
        ({"distance_cm": 0}, "distance_cm"),
        ({"near_point_cm": -3.0}, "near_point_cm"),
        ({"eye": "OU"}, "near.eye"),
    ],
)
def test_a_bad_near_addition_is_refused_naming_the_field(over, match):
    with pytest.raises(InvalidInputError, match=match):
        _near(**over)


def test_two_adds_for_one_eye_and_near_in_an_old_record_are_refused(visit):
    with pytest.raises(InvalidInputError, match="one add per eye"):
        make_visit(near=(_near("OD"), _near("OD")))
    doc = visit.to_dict()
    doc["schema_version"] = 2
    with pytest.raises(InvalidInputError, match=r"unknown key\(s\) near"):
        VisitRecord.from_dict(doc)


def test_csv_and_json_carry_the_add_per_eye(visit):
    rows = {r["eye"]: r for r in csv.DictReader(io.StringIO(visit_csv(visit)))}
    assert (rows["OD"]["near_add_d"], rows["OS"]["near_add_d"]) == ("1.75", "2.0")
    assert (rows["OD"]["near_add_lower_d"], rows["OD"]["near_add_upper_d"]) == ("1.5", "2.0")
    assert rows["OD"]["near_distance_cm"] == "40.0" and rows["OD"]["near_va_logmar"] == "0.04"
    plain = {r["eye"]: r for r in csv.DictReader(io.StringIO(visit_csv(make_visit())))}
    assert plain["OD"]["near_add_d"] == ""
    doc = json.loads(visit_json(visit))
    assert VisitRecord.from_dict(doc["record"]) == visit
    assert {e["eye"]: e["near_add_d"] for e in doc["eyes"]} == {"OD": 1.75, "OS": 2.0}


def test_fhir_vision_prescription_has_the_add_and_validates(visit):
    visit_bundle(visit)  # fhir.resources' models: raises when invalid
    doc = json.loads(visit_bundle_json(visit))
    [vp] = [e["resource"] for e in doc["entry"] if e["resource"]["resourceType"] == "VisionPrescription"]
    specs = {s["eye"]: s for s in vp["lensSpecification"]}
    assert (specs["right"]["add"], specs["left"]["add"]) == (1.75, 2.0)
    assert "Near addition +1.75 D for 40 cm" in specs["right"]["note"][-1]["text"]
    doc = json.loads(visit_bundle_json(make_visit()))
    [vp] = [e["resource"] for e in doc["entry"] if e["resource"]["resourceType"] == "VisionPrescription"]
    assert all("add" not in s for s in vp["lensSpecification"])


def test_dicom_subjective_refraction_has_add_near_per_eye(tmp_path, visit):
    paths = write_visit_dicom(visit, tmp_path)
    [srf] = [p for p in paths if p.name.endswith("subjective-refraction.dcm")]
    ds = pydicom.dcmread(srf)
    right = ds.SubjectiveRefractionRightEyeSequence[0].AddNearSequence[0]
    left = ds.SubjectiveRefractionLeftEyeSequence[0].AddNearSequence[0]
    assert (right.AddPower, left.AddPower) == (1.75, 2.0) and right.ViewingDistance == pytest.approx(0.4)
    if shutil.which("dciodvfy") is not None:
        out = subprocess.run(["dciodvfy", str(srf)], capture_output=True, text=True, timeout=60, check=False)
        report = out.stdout + out.stderr
        assert "Error" not in report and "Warning" not in report, report


def test_pdf_table_has_the_near_rows(visit):
    rows = {label: (od, os_) for label, od, os_ in visit_table(visit)}
    assert rows["Near addition"][0].startswith("Add +1.75 D for 40 cm (95% +1.50 to +2.00 D")
    assert "near acuity +0.04 logMAR" in rows["Near vision"][1] and "50 cm" in rows["Near vision"][1]
    assert "Near addition" not in {label for label, _, _ in visit_table(make_visit())}
    assert visit_pdf_bytes(visit)[:5] == b"%PDF-"
