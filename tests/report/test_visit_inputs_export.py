"""The visit's inputs in every record: pupillary distance, examiner, the clinician who signed off,
the starting and habitual prescriptions with their sources, the acuity with both eyes open, and
local time with its UTC offset; each read back from each format (pdftotext, pydicom + dciodvfy,
fhir.resources, CSV, JSON)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta, timezone

import pydicom
import pytest
from fhir.resources.R4B.bundle import Bundle
from visit_helpers import make_visit, measured_eye

from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.acuity_units import logmar_to_decimal
from visiontune.report.dicom_visit import prior_dicom_files, visit_dicom_files
from visiontune.report.visit_export import load_visit
from visiontune.report.visit_record import RECORD_SCHEMA_VERSION, SignOff, VisitRecord, time_text
from visiontune.session.store import TrialStore
from visiontune.session.visit import end_point
from visiontune.session.visit_records import record_visit_inputs

HAS_PDFTOTEXT = shutil.which("pdftotext") is not None
HAS_DCIODVFY = shutil.which("dciodvfy") is not None


@pytest.fixture
def paris_time(monkeypatch):
    """The machine's local zone is one hour east of UTC (POSIX TZ "CET-1", no daylight saving)."""
    monkeypatch.setenv("TZ", "CET-1")
    time.tzset()
    yield timezone(timedelta(hours=1))
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(scope="module")
def visit_db(tmp_path_factory):
    """A simulated visit with PD 31.5/32, an examiner, the left eye signed off by Dr Test."""
    db = tmp_path_factory.mktemp("inputs") / "log.sqlite3"
    assert (
        main(
            [
                "visit",
                "run",
                "--simulate",
                "--seed",
                "5",
                "--quiet",
                "--db",
                str(db),
                "--pd",
                "31.5/32",
                "--examiner",
                "J. Examiner",
            ]
        )
        == 0
    )
    with TrialStore.open(db) as store:
        rx = end_point(store, 1, "OS")
        store.sign_off(1, "OS", Prescription(rx.sphere_d + 0.25, rx.cylinder_d, rx.axis_deg), "Dr Test")
    # the acuities through the new final prescription (OS, and both eyes open) are read on resuming
    assert main(["visit", "resume", "1", "--simulate", "--quiet", "--db", str(db)]) == 0
    return db


@pytest.fixture
def exported(visit_db, tmp_path, paris_time):
    out = tmp_path / "out"
    (out / "dicom").mkdir(parents=True)
    assert (
        main(
            [
                "visit",
                "export",
                "1",
                "--db",
                str(visit_db),
                "--pdf",
                str(out / "v.pdf"),
                "--fhir",
                str(out / "v.fhir.json"),
                "--dicom-dir",
                str(out / "dicom"),
                "--csv",
                str(out / "v.csv"),
                "--json",
                str(out / "v.json"),
            ]
        )
        == 0
    )
    with TrialStore.open(visit_db, read_only=True) as store:
        record = load_visit(store, 1).record
        created = store.get_visit(1).created_at
        ou = [a for a in store.visit_acuities(1) if a.eye == "OU"][-1]
    return out, record, created, ou


def test_the_record_holds_the_inputs_in_local_time(exported, paris_time):
    _, record, created, ou = exported
    assert created.utcoffset() == timedelta(0)  # the log keeps UTC
    assert record.recorded_at == created and record.recorded_at.utcoffset() == timedelta(hours=1)
    assert (record.pd_mm, record.pd_od_mm, record.pd_os_mm) == (63.5, 31.5, 32.0)
    assert record.examiner == "J. Examiner" and record.signed_by == ("Dr Test",)
    assert record.os.signed_off.at.utcoffset() == timedelta(hours=1)
    assert record.start_source_od == record.start_source_os == "autorefraction"  # the simulated autorefraction
    assert record.start_od is not None and record.binocular_va_logmar == ou.va_logmar


@pytest.mark.skipif(not HAS_PDFTOTEXT, reason="pdftotext (poppler-utils) not installed")
def test_pdf_shows_them(exported):
    out, record, created, ou = exported
    text = subprocess.run(
        ["pdftotext", "-layout", str(out / "v.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    local = created.astimezone(timezone(timedelta(hours=1)))
    assert f"Date {local:%Y-%m-%d %H:%M} +01:00" in " ".join(text.split())
    flat = " ".join(text.split())
    assert "Examiner J. Examiner" in flat and "Signed off by Dr Test" in flat.replace("\ufb00", "ff")
    assert "PD 63.5 mm (OD 31.5 / OS 32.0)" in flat
    assert flat.count("(autorefraction)") == 2 and "Starting Rx" in flat
    assert f"{ou.va_logmar:.2f} logMAR".replace("-", "\u2212") in flat.split("Binocular acuity")[1]


def test_dicom_carries_them_and_is_clean(exported):
    out, record, created, ou = exported
    files = sorted((out / "dicom").glob("*.dcm"))
    # the visit's two, and the Autorefraction Measurements of the simulated autorefraction it started from
    assert [f.name for f in files] == [
        "visit-1-autorefraction.dcm",
        "visit-1-subjective-refraction.dcm",
        "visit-1-visual-acuity.dcm",
    ]
    local = created.astimezone(timezone(timedelta(hours=1)))
    for path in files:
        ds = pydicom.dcmread(path)
        assert str(ds.OperatorsName) == "J. Examiner^" and str(ds.PhysiciansOfRecord) == "Dr Test^"
        assert ds.TimezoneOffsetFromUTC == "+0100"
        assert (ds.StudyDate, ds.StudyTime) == (local.strftime("%Y%m%d"), local.strftime("%H%M%S"))
        if ds.Modality == "SRF":
            assert ds.DistancePupillaryDistance == 63.5
        elif ds.Modality == "AR":
            item = ds.AutorefractionLeftEyeSequence[0]
            assert float(item.SpherePower) == pytest.approx(record.start_os.sphere_d)
        else:
            assert float(ds.VisualAcuityBothEyesOpenSequence[0].DecimalVisualAcuity) == pytest.approx(
                float(logmar_to_decimal(ou.va_logmar)), abs=1e-4
            )
        if HAS_DCIODVFY:
            run = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True, timeout=60, check=False)
            report = run.stdout + run.stderr
            iod = {"SRF": "SubjectiveRefractionMeasurements", "AR": "AutorefractionMeasurements"}.get(
                ds.Modality, "VisualAcuityMeasurements"
            )
            assert iod in report
            assert not [line for line in report.splitlines() if line.startswith(("Error", "Warning"))], report


def test_fhir_carries_them_and_validates(exported):
    out, record, created, ou = exported
    text = (out / "v.fhir.json").read_text()
    Bundle.model_validate_json(text)
    doc = json.loads(text)
    resources = [e["resource"] for e in doc["entry"]]
    names = {r["id"]: r["name"][0]["text"] for r in resources if r["resourceType"] == "Practitioner"}
    assert sorted(names.values()) == ["Dr Test", "J. Examiner"]
    [vp] = [r for r in resources if r["resourceType"] == "VisionPrescription"]
    assert names[vp["prescriber"]["reference"].removeprefix("urn:uuid:")] == "Dr Test"
    observations = [r for r in resources if r["resourceType"] == "Observation"]
    for o in observations:
        assert o["effectiveDateTime"].endswith("+01:00")
        if o["code"]["coding"][0]["code"] not in ("starting-prescription", "habitual-prescription"):  # measured here
            assert names[o["performer"][0]["reference"].removeprefix("urn:uuid:")] == "J. Examiner"
    [pd] = [o for o in observations if o["code"]["coding"][0]["code"] == "pupillary-distance"]
    assert pd["valueQuantity"]["value"] == 63.5 and pd["valueQuantity"]["code"] == "mm"
    assert [c["valueQuantity"]["value"] for c in pd["component"]] == [31.5, 32.0]
    starts = [o for o in observations if o["code"]["coding"][0]["code"] == "starting-prescription"]
    assert [o["method"]["text"] for o in starts] == ["source: autorefraction"] * 2
    assert starts[0]["component"][0]["valueQuantity"]["value"] == pytest.approx(record.shown(record.start_od).sphere_d)
    [both] = [o for o in observations if o.get("bodySite", {}).get("text") == "both eyes (OU)"]
    assert both["valueQuantity"]["value"] == pytest.approx(ou.va_logmar)


def test_csv_and_json_carry_them(exported):
    out, record, created, ou = exported
    rows = list(csv.DictReader((out / "v.csv").open()))
    assert [r["eye"] for r in rows] == ["OD", "OS"]
    for r, mono in zip(rows, ("31.5", "32.0"), strict=True):
        assert (r["examiner"], r["pd_mm"], r["pd_eye_mm"], r["start_source"]) == (
            "J. Examiner",
            "63.5",
            mono,
            "autorefraction",
        )
        assert r["recorded_at"].endswith("+01:00") and float(r["binocular_va_logmar"]) == ou.va_logmar
    assert rows[1]["signed_by"] == "Dr Test" and rows[1]["signed_at"].endswith("+01:00")
    doc = json.loads((out / "v.json").read_text())
    assert VisitRecord.from_dict(doc["record"]) == record
    assert doc["record"]["schema_version"] == RECORD_SCHEMA_VERSION


@pytest.mark.parametrize(
    ("pd", "problem"),
    [
        ("95", "95 mm is not a pupillary distance"),
        ("31.5/", "not a distance"),
        ("31.5/63", "63 mm is not a monocular"),
        ("abc", "'abc' is not"),
    ],
)
def test_bad_pd_is_refused_before_anything_is_written(tmp_path, capsys, pd, problem):
    db = tmp_path / "log.sqlite3"
    assert main(["visit", "run", "--simulate", "--quiet", "--db", str(db), "--pd", pd]) != 0
    assert problem in capsys.readouterr().err
    assert not db.exists()


def test_blank_examiner_is_refused(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    assert main(["visit", "run", "--simulate", "--quiet", "--db", str(db), "--examiner", "  "]) != 0
    assert "--examiner: expected a non-empty text" in capsys.readouterr().err
    assert not db.exists()


def test_dicom_refuses_a_name_a_person_name_cannot_hold(visit_db, tmp_path):
    with TrialStore.open(visit_db) as store:
        record = load_visit(store, 1).record
    for bad in ("x" * 64, "A\\B"):
        with pytest.raises(InvalidInputError, match="examiner .*a DICOM Person Name holds at most 63 characters"):
            visit_dicom_files(dataclasses.replace(record, examiner=bad))


def test_the_latest_examiner_and_pd_are_in_force(visit_db, tmp_path):
    db = tmp_path / "copy.sqlite3"
    shutil.copy(visit_db, db)
    with TrialStore.open(db) as store:
        record_visit_inputs(store, 1, pd_mm=64.0, examiner="K. Other", habitual_source="typed")
        record = load_visit(store, 1).record
    assert (record.pd_mm, record.pd_od_mm, record.examiner) == (64.0, None, "K. Other")
    assert record.habitual_source is None  # this visit has no habitual prescription: no source shown


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (datetime(2026, 11, 28, 10, 42, tzinfo=timezone(timedelta(hours=1))), "2026-11-28 10:42 +01:00"),
        (datetime(2026, 11, 28, 4, 12, tzinfo=timezone(timedelta(hours=-5, minutes=-30))), "2026-11-28 04:12 -05:30"),
        (datetime(2026, 11, 28, 9, 42, tzinfo=UTC), "2026-11-28 09:42 +00:00"),
    ],
)
def test_time_text(t, text):
    assert time_text(t) == text


def test_record_inputs_round_trip_and_refusals():
    at = datetime(2026, 11, 28, 10, 42, tzinfo=timezone(timedelta(hours=1)))
    visit = make_visit(
        recorded_at=at,
        pd_mm=62.0,
        examiner="J. Examiner",
        start_od=Prescription(-1.0, -0.5, 90.0),
        start_source_od="retinoscopy",
        start_source_os="none",
        habitual_source="spectacle prescription",
        os=measured_eye("OS", signed_off=SignOff(Prescription(-1.75, -0.75, 175.0), "Dr Test", at)),
    )
    doc = visit.to_dict()
    assert VisitRecord.from_dict(doc) == visit
    assert visit.signed_by == ("Dr Test",) and visit.pd_text == "62.0 mm"
    old = {**doc, "schema_version": 3}
    with pytest.raises(InvalidInputError, match=r"unknown key\(s\) pd_mm.*v3"):
        VisitRecord.from_dict(old)
    for bad, match in (
        ({"pd_mm": 120}, "visit.pd_mm: 120 mm is not a pupillary distance"),
        ({"pd_od_mm": 31.0}, "give both monocular distances"),
        ({"start_od": Prescription(-1, 0, 180)}, "start_source_od: a starting prescription needs"),
        ({"start_od": Prescription(-1, 0, 180), "start_source_od": "guess"}, "expected one of"),
        ({"habitual_od": None, "habitual_source": "typed"}, "there is no habitual prescription"),
        ({"habitual_source": "autorefraction"}, "habitual_source: expected one of lensmeter"),
        ({"examiner": " "}, "visit.examiner: expected a non-empty text"),
    ):
        with pytest.raises(InvalidInputError, match=match):
            make_visit(**bad)


def test_the_habitual_and_autorefraction_starts_as_their_own_dicom_objects(tmp_path):
    visit = make_visit(
        start_od=Prescription(-1.0, -0.5, 90.0),
        start_source_od="autorefraction",
        start_os=Prescription(-2.0, -0.75, 5.0),
        start_source_os="retinoscopy",
        habitual_source="lensmeter",
        examiner="J. Examiner",
    )
    files = prior_dicom_files(visit)
    assert sorted(files) == ["visit-V-0001-autorefraction.dcm", "visit-V-0001-lensometry.dcm"]
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        ds = pydicom.dcmread(path)
        assert (
            ds.StudyInstanceUID
            == pydicom.dcmread(
                io.BytesIO(visit_dicom_files(visit)["visit-V-0001-subjective-refraction.dcm"])
            ).StudyInstanceUID
        )  # one study
        if ds.Modality == "LEN":  # the habitual spectacles, OD only
            assert "LeftLensSequence" not in ds and ds.MeasurementLaterality == "R"
            lens = ds.RightLensSequence[0]
            cyl = lens.CylinderSequence[0]
            assert (lens.SpherePower, cyl.CylinderPower, cyl.CylinderAxis) == (-1.0, -0.25, 85.0)
            assert ds.LensDescription == "habitual spectacles (lensmeter)"
        else:  # the autorefraction of OD; OS started from retinoscopy: no object holds it
            assert ds.Modality == "AR" and "AutorefractionLeftEyeSequence" not in ds
            item = ds.AutorefractionRightEyeSequence[0]
            assert (item.SpherePower, item.CylinderSequence[0].CylinderPower) == (-1.0, -0.5)
        assert str(ds.OperatorsName) == "J. Examiner^"
        if HAS_DCIODVFY:
            run = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True, timeout=60, check=False)
            report = run.stdout + run.stderr
            assert ("LensometryMeasurements" if ds.Modality == "LEN" else "AutorefractionMeasurements") in report
            assert not [line for line in report.splitlines() if line.startswith(("Error", "Warning"))], report
    assert prior_dicom_files(make_visit(habitual_od=None)) == {}


def test_visit_show_prints_the_inputs(visit_db, capsys):
    assert main(["visit", "show", "1", "--db", str(visit_db)]) == 0
    out = capsys.readouterr().out
    assert "pupillary distance 63.5 mm (OD 31.5 / OS 32)" in out and "examiner J. Examiner" in out
    assert "OU  acuity with both eyes open" in out
    assert main(["visit", "show", "1", "--json", "--db", str(visit_db)]) == 0
    inputs = json.loads(capsys.readouterr().out)["inputs"]
    assert (inputs["pd_mm"], inputs["pd_od_mm"], inputs["pd_os_mm"], inputs["examiner"]) == (
        63.5,
        31.5,
        32.0,
        "J. Examiner",
    )
