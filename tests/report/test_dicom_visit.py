"""DICOM objects of a visit: required attributes present, values read back, validator clean."""

from __future__ import annotations

import shutil
import stat
import subprocess

import pydicom
import pytest
from visit_helpers import make_visit, measured_eye, skipped_eye

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription
from visiontune.report.dicom_visit import (
    SUBJECTIVE_REFRACTION_SOP_CLASS,
    VISUAL_ACUITY_SOP_CLASS,
    subjective_refraction_dataset,
    visual_acuity_dataset,
    write_visit_dicom,
)

SRF, VA = SUBJECTIVE_REFRACTION_SOP_CLASS, VISUAL_ACUITY_SOP_CLASS

# Type 1 and Type 2 attributes of every module the two IODs require (PS3.3 A.60 "Ophthalmic
# Refractive Measurements" IODs; C.7.1.1 Patient, C.7.2.1 General Study, C.7.3.1 General Series,
# C.7.5.1 General Equipment, C.7.5.2 Enhanced General Equipment, C.8.27 General Ophthalmic
# Refractive Measurements / Subjective Refraction / Visual Acuity Measurements, C.12.1 SOP Common),
# module names and types as dicom3tools' dciodvfy reports them. "Seq>Attr": in every item of Seq.
COMMON = {
    "Patient": ("PatientName", "PatientID", "PatientBirthDate", "PatientSex"),
    "GeneralStudy": (
        "StudyInstanceUID",
        "StudyDate",
        "StudyTime",
        "ReferringPhysicianName",
        "StudyID",
        "AccessionNumber",
    ),
    "GeneralSeries": ("Modality", "SeriesInstanceUID", "SeriesNumber"),
    "GeneralEquipment": ("Manufacturer",),
    "EnhancedGeneralEquipment": ("Manufacturer", "ManufacturerModelName", "DeviceSerialNumber", "SoftwareVersions"),
    "GeneralOphthalmicRefractiveMeasurements": ("InstanceNumber", "ContentDate", "ContentTime"),
    "SOPCommon": ("SOPClassUID", "SOPInstanceUID"),
}
TYPE_1 = {  # attributes that must also have a value
    "StudyInstanceUID",
    "Modality",
    "SeriesInstanceUID",
    "ManufacturerModelName",
    "DeviceSerialNumber",
    "SoftwareVersions",
    "InstanceNumber",
    "ContentDate",
    "ContentTime",
    "SOPClassUID",
    "SOPInstanceUID",
    "ViewingDistanceType",
    "VisualAcuityTypeCodeSequence",
    "BackgroundColor",
    "Optotype",
    "OptotypePresentation",
    "SpherePower",
    "CylinderPower",
    "CylinderAxis",
    "DecimalVisualAcuity",
    "PatientID",
}
SPECIFIC = {
    SRF: {
        "SubjectiveRefractionMeasurements": (
            "SubjectiveRefractionRightEyeSequence>SpherePower",
            "SubjectiveRefractionRightEyeSequence>CylinderSequence>CylinderPower",
            "SubjectiveRefractionRightEyeSequence>CylinderSequence>CylinderAxis",
            "SubjectiveRefractionLeftEyeSequence>SpherePower",
            "SubjectiveRefractionLeftEyeSequence>CylinderSequence>CylinderPower",
            "SubjectiveRefractionLeftEyeSequence>CylinderSequence>CylinderAxis",
        ),
    },
    VA: {
        "VisualAcuityMeasurements": (
            "ViewingDistanceType",
            "VisualAcuityTypeCodeSequence",
            "BackgroundColor",
            "Optotype",
            "OptotypePresentation",
            "OptotypeDetailedDefinition",
            "VisualAcuityRightEyeSequence>DecimalVisualAcuity",
            "VisualAcuityLeftEyeSequence>DecimalVisualAcuity",
            "VisualAcuityBothEyesOpenSequence>DecimalVisualAcuity",
        ),
        "GeneralOphthalmicRefractiveMeasurements (2C, refraction referenced)": (
            "ReferencedRefractiveMeasurementsSequence>ReferencedSOPClassUID",
            "ReferencedRefractiveMeasurementsSequence>ReferencedSOPInstanceUID",
        ),
    },
}


def _missing(ds, path: str) -> list[str]:
    """``path`` (``A>B>C``) absent anywhere along the way, or a Type 1 leaf without a value."""
    head, _, rest = path.partition(">")
    if head not in ds:
        return [path]
    if not rest:
        value = ds[head].value
        return [f"{path} (Type 1, empty)"] if head in TYPE_1 and value in (None, "", []) else []
    items = ds[head].value
    if not items:
        return [f"{head} (empty sequence)"]
    return [m for item in items for m in _missing(item, rest)]


@pytest.fixture
def files(tmp_path):
    return write_visit_dicom(make_visit(), tmp_path)


@pytest.mark.parametrize("sop_class", [SRF, VA])
def test_every_required_attribute_of_every_module_is_present(files, sop_class):
    ds = next(pydicom.dcmread(p) for p in files if pydicom.dcmread(p).SOPClassUID == sop_class)
    missing = []
    for module, paths in {**COMMON, **SPECIFIC[sop_class]}.items():
        missing += [f"{module}: {m}" for p in paths for m in _missing(ds, p)]
    assert missing == []


def test_files_read_back_with_the_values_of_the_visit(files):
    visit = make_visit()
    srf, va = (pydicom.dcmread(p) for p in files)
    assert (srf.SOPClassUID, srf.Modality, va.SOPClassUID, va.Modality) == (SRF, "SRF", VA, "VA")
    assert (
        srf.file_meta.MediaStorageSOPClassUID == SRF and srf.SOPInstanceUID == srf.file_meta.MediaStorageSOPInstanceUID
    )
    assert srf.PatientID == va.PatientID == "P-0042" and srf.PatientAge == "047Y"
    assert srf.StudyInstanceUID == va.StudyInstanceUID and srf.SeriesInstanceUID != va.SeriesInstanceUID
    assert srf.StudyDate == "20260304" and srf.ContentTime == "093000"
    right = srf.SubjectiveRefractionRightEyeSequence[0]
    left = srf.SubjectiveRefractionLeftEyeSequence[0]
    # OD: found -1.25/-0.50x90 + balance +0.25; OS: signed off -1.75/-0.75x175
    assert (right.SpherePower, right.CylinderSequence[0].CylinderPower, right.CylinderSequence[0].CylinderAxis) == (
        -1.0,
        -0.5,
        90.0,
    )
    assert (left.SpherePower, left.CylinderSequence[0].CylinderPower, left.CylinderSequence[0].CylinderAxis) == (
        -1.75,
        -0.75,
        175.0,
    )
    assert va.VisualAcuityRightEyeSequence[0].DecimalVisualAcuity == pytest.approx(10**-0.02, abs=1e-4)
    assert va.VisualAcuityLeftEyeSequence[0].DecimalVisualAcuity == pytest.approx(1.0)
    assert va.VisualAcuityBothEyesOpenSequence[0].DecimalVisualAcuity == pytest.approx(10**0.04, abs=1e-4)
    code = va.VisualAcuityTypeCodeSequence[0]
    assert (code.CodeValue, code.CodingSchemeDesignator) == ("111687", "DCM")
    ref = va.ReferencedRefractiveMeasurementsSequence[0]
    assert (ref.ReferencedSOPClassUID, ref.ReferencedSOPInstanceUID) == (SRF, srf.SOPInstanceUID)
    assert "OD measured" in va.SeriesDescription and "OS predicted" in va.SeriesDescription
    assert visit.software_version in srf.SoftwareVersions


def test_files_are_private(files):
    assert [stat.S_IMODE(p.stat().st_mode) for p in files] == [0o600, 0o600]


def test_plus_cylinder_clinic_and_a_skipped_eye():
    visit = make_visit(cylinder_form="plus", os=skipped_eye(), balance=None, binocular_va_logmar=None)
    srf = subjective_refraction_dataset(visit)
    assert "SubjectiveRefractionLeftEyeSequence" not in srf and srf.MeasurementLaterality == "R"
    item = srf.SubjectiveRefractionRightEyeSequence[0]
    lens = Prescription(item.SpherePower, item.CylinderSequence[0].CylinderPower, item.CylinderSequence[0].CylinderAxis)
    assert lens == Prescription(-1.75, 0.5, 180.0) and lens.is_equivalent(visit.od.prescription)
    va = visual_acuity_dataset(visit)
    assert "VisualAcuityLeftEyeSequence" not in va and "VisualAcuityBothEyesOpenSequence" not in va


def test_simulated_visit_is_marked_and_real_one_is_not(tmp_path):
    (tmp_path / "sim").mkdir()
    (tmp_path / "real").mkdir()
    for p in write_visit_dicom(make_visit(simulated=True), tmp_path / "sim"):
        ds = pydicom.dcmread(p)
        assert ds.StudyDescription.startswith("SIMULATED") and ds.SeriesDescription.startswith("SIMULATED")
        assert "SIMULATED" in ds.PatientComments
    for p in write_visit_dicom(make_visit(simulated=False), tmp_path / "real"):
        assert b"SIMULATED" not in p.read_bytes()
        assert "PatientComments" not in pydicom.dcmread(p)


def test_changed_record_gets_new_instance_uids_same_study():
    a, b = (
        subjective_refraction_dataset(make_visit()),
        subjective_refraction_dataset(make_visit(binocular_va_logmar=0.0)),
    )
    assert a.StudyInstanceUID == b.StudyInstanceUID and a.SOPInstanceUID != b.SOPInstanceUID
    assert a.SOPInstanceUID == subjective_refraction_dataset(make_visit()).SOPInstanceUID
    assert len(a.SOPInstanceUID) <= 64


@pytest.mark.parametrize(
    ("visit", "message"),
    [
        (lambda: make_visit(patient_id=None), "patient_id is missing; a DICOM object needs a Patient ID"),
        (lambda: make_visit(od=skipped_eye("OD"), os=skipped_eye("OS"), balance=None), "no eye was measured"),
    ],
)
def test_bad_visit_is_refused_and_nothing_is_written(tmp_path, visit, message):
    with pytest.raises(InvalidInputError, match=message):
        write_visit_dicom(visit(), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidInputError, match="is not an existing folder"):
        write_visit_dicom(make_visit(), tmp_path / "nowhere")


@pytest.mark.skipif(
    shutil.which("dciodvfy") is None, reason="dicom3tools' dciodvfy not installed (apt-get install dicom3tools)"
)
@pytest.mark.parametrize("simulated", [False, True])
def test_dciodvfy_finds_no_error_and_no_warning(tmp_path, simulated):
    visit = make_visit(simulated=simulated, od=measured_eye("OD", prescription=Prescription(0.5, 0.0, 180.0)))
    for path in write_visit_dicom(visit, tmp_path):
        out = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True, timeout=60, check=False)
        report = out.stdout + out.stderr
        assert "Error" not in report and "Warning" not in report, report
        assert ("SubjectiveRefractionMeasurements" in report) or ("VisualAcuityMeasurements" in report)


@pytest.mark.skipif(shutil.which("dciodvfy") is None, reason="dicom3tools' dciodvfy not installed")
def test_dciodvfy_oracle_catches_a_missing_required_attribute(tmp_path):
    """The validator itself: without Sphere Power it reports the Type 1 attribute missing."""
    from visiontune.report.dicom_visit import dicom_bytes

    ds = subjective_refraction_dataset(make_visit())
    del ds.SubjectiveRefractionRightEyeSequence[0].SpherePower
    path = tmp_path / "bad.dcm"
    path.write_bytes(dicom_bytes(ds))
    out = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert "Missing attribute Type 1 Required Element=<SpherePower>" in out.stdout + out.stderr


def test_patient_id_dicom_cannot_hold_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="backslash"):
        write_visit_dicom(make_visit(patient_id="P\\0042"), tmp_path)
    with pytest.raises(InvalidInputError, match="at most 64 characters"):
        write_visit_dicom(make_visit(patient_id="P" * 65), tmp_path)
    assert list(tmp_path.iterdir()) == []
