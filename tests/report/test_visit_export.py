"""``visiontune visit export``: a visit read from the trial log, its PDF, FHIR Bundle, DICOM, CSV, JSON.

Two visits from the log: a simulated one run headless from the command line, and a real
patient's built through the store API as the app would (answers keyed by the clinician; here a
simulated patient stands in for them, but nothing marks the visit simulated). Records of the
real visit never carry the SIMULATED marks; those of the simulated one always do.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import stat
import subprocess

import pydicom
import pytest
from fhir.resources.R4B.bundle import Bundle

from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.report.visit_export import (
    VisitExportPaths,
    export_visit,
    load_visit,
    render_visit,
)
from visiontune.report.visit_pdf import rx_text
from visiontune.report.visit_record import VisitRecord
from visiontune.session.balance import BalanceQuestion, balance_step
from visiontune.session.simulated_visit import visit_cases
from visiontune.session.store import TrialStore
from visiontune.session.visit import (
    create_visit,
    end_point,
    final_prescription,
    record_balance_answer,
    record_balance_end,
    start_eye,
)

HAS_POPPLER = shutil.which("pdftotext") is not None and shutil.which("pdftoppm") is not None
HAS_DCIODVFY = shutil.which("dciodvfy") is not None
MARKS = (b"SIMULATED", b"HTEST")


@pytest.fixture(scope="module")
def simulated_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("sim") / "log.sqlite3"
    assert main(["visit", "run", "--simulate", "--seed", "5", "--quiet", "--db", str(db)]) == 0
    return db


@pytest.fixture(scope="module")
def real_db(tmp_path_factory):
    """A real patient's visit: both eyes refracted, balanced (left eye +0.25 D), the left eye's
    prescription edited and signed off, acuity read through the right eye's final lens and
    with both eyes open."""
    db = tmp_path_factory.mktemp("real") / "log.sqlite3"
    protocol = load_protocol("clinical-sloan")
    cases = visit_cases(7, protocol)
    with TrialStore.open(db) as store:
        vid = create_visit(
            store,
            "P-0042",
            simulated=False,
            age_years=47,
            habitual_od=Prescription(-1.0, -0.25, 85.0),
            clinician="Dr A. Optom",
        )
        for eye in ("OD", "OS"):
            case = cases[eye]
            start = StartingPoint(case.start_rx, "autorefraction", case.age_years)
            with start_eye(store, vid, eye, protocol=protocol, seed=7, start=start) as session:
                assert session.run(SimulatedPresenter(case.patient(10))) is not None
        end_od, end_os = end_point(store, vid, "OD"), end_point(store, vid, "OS")
        answers = []
        for clearer in ("OS", "equal"):
            q = balance_step(end_od, end_os, answers)
            assert isinstance(q, BalanceQuestion)
            record_balance_answer(store, vid, q, clearer)
            answers.append(clearer)
        record_balance_end(store, vid, balance_step(end_od, end_os, answers))
        store.sign_off(
            vid, "OS", Prescription(end_os.sphere_d + 0.25, end_os.cylinder_d, end_os.axis_deg), "Dr A. Optom"
        )
        finals = {e: final_prescription(store, vid, e) for e in ("OD", "OS")}
        store.record_visit_acuity(vid, "OD", -0.02, lenses={"OD": finals["OD"]}, method="ETDRS chart at 4 m")
        store.record_visit_acuity(vid, "OU", -0.08, lenses=finals, method="ETDRS chart at 4 m")
    return db


def _export(db, out, *extra) -> int:
    (out / "dicom").mkdir(parents=True, exist_ok=True)
    return main(
        [
            "visit",
            "export",
            "1",
            "--db",
            str(db),
            "--pdf",
            str(out / "visit.pdf"),
            "--fhir",
            str(out / "fhir.json"),
            "--dicom-dir",
            str(out / "dicom"),
            "--csv",
            str(out / "visit.csv"),
            "--json",
            str(out / "visit.json"),
            *extra,
        ]
    )


def _files(out) -> list:
    return sorted(p for p in out.rglob("*") if p.is_file())


def _pdf_pages(path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return [t for t in text.split("\f") if t.strip()]


def _record(db) -> VisitRecord:
    with TrialStore.open(db) as store:
        return load_visit(store, 1).record


@pytest.fixture(scope="module")
def simulated_files(simulated_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-out")
    assert _export(simulated_db, out) == 0
    return out


@pytest.fixture(scope="module")
def real_files(real_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("real-out")
    assert _export(real_db, out) == 0
    return out


# --- what the log gives the record -------------------------------------------------------------
def test_record_of_the_real_visit_keeps_found_signed_balance_and_acuities(real_db):
    with TrialStore.open(real_db) as store:
        loaded = load_visit(store, 1)
        finals = {e: final_prescription(store, 1, e) for e in ("OD", "OS")}
    r = loaded.record
    assert (r.visit_id, r.patient_id, r.age_years, r.clinician, r.simulated) == (
        "1",
        "P-0042",
        47,
        "Dr A. Optom",
        False,
    )
    assert r.habitual_od == Prescription(-1.0, -0.25, 85.0) and set(loaded.sessions) == {"OD", "OS"}
    assert r.os.signed_off is not None and r.os.signed_off.by == "Dr A. Optom"
    assert not r.os.prescription.is_equivalent(r.os.signed_off.prescription)  # the found one is kept beside
    assert r.balance.plus_change_os_d == 0.25 and "fogged alternate occlusion" in r.balance.method
    for e in ("OD", "OS"):
        assert r.balanced_prescription(e).is_equivalent(finals[e], 1e-9)
    assert r.od.measured_va_logmar == -0.02 and r.binocular_va_logmar == -0.08
    assert r.os.measured_va_logmar is None  # none was read through the left eye's final lens
    for e in r.eyes:
        assert e.session_id == loaded.sessions[e.eye].session_id and e.answers_used >= 20
        result = loaded.sessions[e.eye].result
        assert (e.comparisons_used, e.sliders_used) == (result.comparisons_used, result.sliders_used)
        assert 0 <= e.axis_pm_deg <= 90 and e.m_pm_d > 0 and e.j0_pm_d == e.j45_pm_d > 0


# --- the simulated visit's records ------------------------------------------------------------
def test_simulated_visit_writes_every_record_private(simulated_files):
    names = sorted(p.name for p in _files(simulated_files))
    # the simulated patient's start is its simulated autorefraction: its own DICOM object beside the visit's two
    assert names == [
        "fhir.json",
        "visit-1-autorefraction.dcm",
        "visit-1-subjective-refraction.dcm",
        "visit-1-visual-acuity.dcm",
        "visit.csv",
        "visit.json",
        "visit.pdf",
    ]
    assert {stat.S_IMODE(p.stat().st_mode) for p in _files(simulated_files)} == {0o600}


@pytest.mark.skipif(not HAS_POPPLER, reason="poppler-utils (pdftotext, pdftoppm) not installed")
def test_simulated_pdf_has_both_eyes_the_balance_and_the_banner_on_every_page(simulated_db, simulated_files):
    record = _record(simulated_db)
    pages = _pdf_pages(simulated_files / "visit.pdf")
    assert len(pages) == 2
    for text in pages:
        assert "SIMULATED - simulated patient, not a clinical record" in text
    first = " ".join(pages[0].split())
    for text in (
        "Right eye (OD)",
        "Left eye (OS)",
        "SIM-0001",
        "fogged alternate occlusion",
        "Measured acuity",
        rx_text(record.balanced_prescription("OD")),
        rx_text(record.balanced_prescription("OS")),
    ):
        assert text in first, text
    assert "acuity maps" in pages[1]
    subprocess.run(
        [
            "pdftoppm",
            "-r",
            "60",
            "-f",
            "1",
            "-l",
            "1",
            "-png",
            str(simulated_files / "visit.pdf"),
            str(simulated_files / "page"),
        ],
        check=True,
    )
    png = simulated_files / "page-1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_simulated_fhir_bundle_validates_and_is_tagged(simulated_db, simulated_files):
    record = _record(simulated_db)
    text = (simulated_files / "fhir.json").read_text()
    bundle = Bundle.model_validate_json(text)
    assert bundle.type == "collection"
    doc = json.loads(text)
    [vp] = [e["resource"] for e in doc["entry"] if e["resource"]["resourceType"] == "VisionPrescription"]
    specs = {s["eye"]: s for s in vp["lensSpecification"]}
    for eye, side in (("OD", "right"), ("OS", "left")):
        assert specs[side]["sphere"] == pytest.approx(record.balanced_prescription(eye).sphere_d)
    assert all(e["resource"]["meta"]["tag"][0]["code"] == "HTEST" for e in doc["entry"])
    # per eye the refraction and the acuity, the acuity with both eyes open (measured in the visit), and
    # each eye's starting prescription (the simulated autorefraction)
    assert record.binocular_va_logmar is not None and record.start_source_od == "autorefraction"
    assert len([e for e in doc["entry"] if e["resource"]["resourceType"] == "Observation"]) == 7


def test_simulated_dicom_reads_back_with_the_final_prescriptions(simulated_db, simulated_files):
    record = _record(simulated_db)
    files = sorted((simulated_files / "dicom").iterdir())
    ar, srf, va = (pydicom.dcmread(p) for p in files)
    assert (ar.Modality, srf.Modality, va.Modality) == ("AR", "SRF", "VA")
    assert ar.PatientID == srf.PatientID == va.PatientID == "SIM-0001"
    assert ar.StudyInstanceUID == srf.StudyInstanceUID == va.StudyInstanceUID
    start = record.start_od
    item = ar.AutorefractionRightEyeSequence[0]
    assert (float(item.SpherePower), float(item.CylinderSequence[0].CylinderPower)) == pytest.approx(
        (start.sphere_d, start.cylinder_d)
    )
    right = srf.SubjectiveRefractionRightEyeSequence[0]
    assert float(right.SpherePower) == pytest.approx(record.balanced_prescription("OD").sphere_d)
    assert float(right.CylinderSequence[0].CylinderPower) == pytest.approx(
        record.balanced_prescription("OD").cylinder_d
    )
    assert float(va.VisualAcuityRightEyeSequence[0].DecimalVisualAcuity) == pytest.approx(
        10**-record.od.measured_va_logmar, rel=0.01
    )
    for ds in (ar, srf, va):
        assert ds.StudyDescription.startswith("SIMULATED") and "SIMULATED" in ds.PatientComments


@pytest.mark.skipif(not HAS_DCIODVFY, reason="dicom3tools' dciodvfy not installed")
@pytest.mark.parametrize("which", ["simulated_files", "real_files"])
def test_dciodvfy_finds_no_error_and_no_warning(which, request):
    for path in sorted((request.getfixturevalue(which) / "dicom").iterdir()):
        out = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True, timeout=60, check=False)
        report = out.stdout + out.stderr
        assert "Error" not in report and "Warning" not in report, report


def test_simulated_csv_and_json_have_both_eyes_with_power_vectors(simulated_db, simulated_files):
    record = _record(simulated_db)
    rows = list(csv.DictReader((simulated_files / "visit.csv").open()))
    assert [r["eye"] for r in rows] == ["OD", "OS"] and {r["simulated"] for r in rows} == {"1"}
    m = record.balanced_prescription("OD").power_vector_array()[0]
    assert float(rows[0]["rx_m_d"]) == pytest.approx(m)
    doc = json.loads((simulated_files / "visit.json").read_text())
    assert doc["mark"] == "SIMULATED" and VisitRecord.from_dict(doc["record"]) == record


# --- the real visit's records: never a SIMULATED mark ---------------------------------------
def test_real_visit_records_never_carry_the_simulated_marks(real_db, real_files):
    for path in _files(real_files):
        data = path.read_bytes()
        for mark in MARKS:
            assert mark not in data, (path.name, mark)
    if HAS_POPPLER:
        pages = _pdf_pages(real_files / "visit.pdf")
        assert len(pages) == 2 and all("SIMULATED" not in t for t in pages)
        first = " ".join(pages[0].split())
        assert "1 (patient)" in first and "Dr A. Optom" in first and "P-0042" in first
    assert "meta" not in json.loads((real_files / "fhir.json").read_text())
    Bundle.model_validate_json((real_files / "fhir.json").read_text())
    for path in (real_files / "dicom").iterdir():
        ds = pydicom.dcmread(path)
        assert "PatientComments" not in ds and ds.PatientID == "P-0042"
    assert {r["simulated"] for r in csv.DictReader((real_files / "visit.csv").open())} == {"0"}
    assert json.loads((real_files / "visit.json").read_text())["mark"] is None


def test_real_visit_dicom_has_the_binocular_acuity(real_files):
    va = next(pydicom.dcmread(p) for p in (real_files / "dicom").iterdir() if "visual-acuity" in p.name)
    assert float(va.VisualAcuityBothEyesOpenSequence[0].DecimalVisualAcuity) == pytest.approx(10**0.08, rel=0.01)


# --- bad input: a clear message, nothing written, nothing recorded lost ----------------------
def _dump(db) -> list[str]:
    with TrialStore.open(db) as store:
        return list(store.conn.iterdump())


def test_a_visit_with_no_finished_eye_is_refused(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    protocol = load_protocol("clinical-sloan")
    with TrialStore.open(db) as store:
        vid = create_visit(store, "P1", simulated=False)
        case = visit_cases(3, protocol)["OD"]
        with start_eye(store, vid, "OD", protocol=protocol, start=StartingPoint(case.start_rx, "autorefraction")) as s:
            s.run(SimulatedPresenter(case.patient(10)), max_steps=3)
    before = _dump(db)
    out = tmp_path / "out"
    assert _export(db, out) == 2
    err = capsys.readouterr().err
    assert "visit 1: no eye has a finished refraction (OD open (session 1), OS not started)" in err
    assert _files(out) == [] and _dump(db) == before


def test_a_visit_with_one_eye_still_open_is_refused(real_db, tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    shutil.copy(real_db, db)
    protocol = load_protocol("clinical-sloan")
    with TrialStore.open(db) as store:
        vid = create_visit(store, "P-0042", simulated=False)
        for eye in ("OD", "OS"):
            case = visit_cases(3, protocol)[eye]
            with start_eye(
                store, vid, eye, protocol=protocol, start=StartingPoint(case.start_rx, "autorefraction")
            ) as s:
                s.run(SimulatedPresenter(case.patient(10)), max_steps=3)
                if eye == "OD":
                    s.finish("clinician")  # the clinician stopped the right eye early
    before = _dump(db)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["visit", "export", "2", "--db", str(db), "--pdf", str(out / "v.pdf")]) == 2
    assert (
        "visit 2: OS not done (OD finished (session 3), OS open (session 4)); finish that refraction"
        in capsys.readouterr().err
    )
    assert _files(out) == [] and _dump(db) == before


def test_dicom_without_a_patient_id_is_refused_and_nothing_is_written(real_db, tmp_path, capsys):
    before = _dump(real_db)
    out = tmp_path / "out"
    assert _export(real_db, out, "--omit-patient-id") == 2
    assert "a DICOM object needs a Patient ID" in capsys.readouterr().err
    with pytest.raises(InvalidInputError, match="patient_id is missing; a DICOM object needs a Patient ID"):
        export_visit(real_db, 1, VisitExportPaths(pdf=out / "v.pdf", dicom_dir=out / "dicom"), omit_patient_id=True)
    assert _files(out) == [] and _dump(real_db) == before


def test_without_the_patient_id_the_other_records_are_written(real_db, tmp_path):
    out = tmp_path / "out"
    written = export_visit(
        real_db, 1, VisitExportPaths(fhir=out.with_name("f.json"), json=out.with_name("v.json")), omit_patient_id=True
    )
    assert set(written) == {"fhir", "json"}
    text = out.with_name("f.json").read_text() + out.with_name("v.json").read_text()
    assert "P-0042" not in text


def test_every_path_is_checked_before_the_first_file_is_written(real_db, tmp_path, capsys):
    (tmp_path / "dicom").mkdir()
    assert (
        main(
            [
                "visit",
                "export",
                "1",
                "--db",
                str(real_db),
                "--pdf",
                str(tmp_path / "v.pdf"),
                "--dicom-dir",
                str(tmp_path / "dicom"),
                "--csv",
                str(tmp_path / "no" / "v.csv"),
            ]
        )
        == 2
    )
    assert "--csv: folder" in capsys.readouterr().err
    assert _files(tmp_path) == []
    assert main(["visit", "export", "1", "--db", str(real_db)]) == 2
    assert "nothing to export" in capsys.readouterr().err
    with TrialStore.open(real_db) as store:
        loaded = load_visit(store, 1)
    with pytest.raises(InvalidInputError, match="is also the"):
        render_visit(loaded, VisitExportPaths(csv=tmp_path / "x", json=tmp_path / "x"))
    assert re.search("is not an existing folder", _dicom_dir_error(loaded, tmp_path))


def _dicom_dir_error(loaded, tmp_path) -> str:
    try:
        render_visit(loaded, VisitExportPaths(dicom_dir=tmp_path / "missing"))
    except InvalidInputError as exc:
        return str(exc)
    return ""
