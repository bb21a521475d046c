"""A visit as DICOM: Subjective Refraction Measurements and Visual Acuity Measurements objects.

Two composite objects (pydicom), written as Part 10 files (explicit VR little endian), and up to
two more of what the visit started from, built by :func:`prior_dicom_files` (below); ``visit export``
writes, and ``visit send --dicom`` sends, all of them (:func:`export_dicom_files`):

* **Subjective Refraction Measurements** (SOP Class ``1.2.840.10008.5.1.4.1.1.78.4``, Modality
  ``SRF``; PS3.3 A.60 "Subjective Refraction Measurements IOD"): per measured eye an item of
  Subjective Refraction Right / Left Eye Sequence (0046,0097)/(0046,0098) with Sphere Power
  (0046,0146) and a Cylinder Sequence (0046,0018) item of Cylinder Power (0046,0147) and Cylinder
  Axis (0022,0009), whole degrees 1-180. The values are the visit's *final* prescription (signed
  off when the clinician edited one, else the
  found one) with the binocular balance's plus change, in the clinic's cylinder form: the end
  point of the subjective refraction. The near addition filed for an eye, if any, is its Add Near
  Sequence (0046,0100) item: Add Power (0046,0104, D) and Viewing Distance (0046,0106, metres).
  (Note: UID ``...78.6``, sometimes quoted for this object,
  is the Spectacle Prescription Report.)
* **Visual Acuity Measurements** (SOP Class ``1.2.840.10008.5.1.4.1.1.78.5``, Modality ``VA``):
  Visual Acuity Type Code Sequence (0046,0121) = ``(111687, DCM, "Prescription Visual Acuity")``
  (CID 4216), letters (Optotype ``LETTERS``) shown one at a time (Optotype Presentation
  ``SINGLE``) on white at distance; Visual Acuity Right / Left / Both Eyes Open Sequence items
  with Decimal Visual Acuity (0046,0137) (= 10^-logMAR). Acuity measured through the final
  prescription when it was, else the model's predicted acuity (the Series Description says which).
  Its Referenced Refractive Measurements Sequence (0046,0145) points to the refraction object.
  (The acuity is not repeated inside the refraction object's eye sequences: dciodvfy reports
  Decimal Visual Acuity there as not part of the Subjective Refraction Measurements IOD.)

Modules (PS3.3 A.60; checked with dicom3tools' ``dciodvfy``; their Type 1 and 2 attributes are
listed in ``tests/report/test_dicom_visit.py``): Patient, General Study, Patient Study (age),
General Series, Subjective Refraction / Visual Acuity Measurements Series, General Equipment,
Enhanced General Equipment, General Ophthalmic Refractive Measurements, Subjective Refraction /
Visual Acuity Measurements, SOP Common.

People, inputs and time: Operators' Name (0008,1070, General Series) is the examiner who ran the
refraction; Physician(s) of Record (0008,1048, General Study) the clinicians who signed a
prescription off (none: not signed off); the binocular pupillary distance is Distance Pupillary
Distance (0046,0060, mm) of the refraction object (the DICOM objects have no monocular PD). Dates
and times are the visit's local time with Timezone Offset From UTC (0008,0201). A name a DICOM
Person Name cannot hold (more than 63 characters, a backslash, a control character) is refused;
a name is written as its family-name component (``J. Examiner^``).
The starting and habitual prescriptions have no attribute in these two IODs; they are objects of
their own, in the same study:

* **Lensometry Measurements** (SOP Class ``1.2.840.10008.5.1.4.1.1.78.1``, Modality ``LEN``;
  PS3.3 A.58), when the visit has a habitual prescription: Right / Left Lens Sequence items of
  the spectacles worn (Sphere Power, Cylinder Sequence; no Lens Segment Type: whether they are
  progressive is not recorded), Lens Description saying where the powers came from
  (``habitual spectacles (lensmeter)``, ``... (typed)``...).
* **Autorefraction Measurements** (SOP Class ``1.2.840.10008.5.1.4.1.1.78.2``, Modality ``AR``;
  PS3.3 A.59), when an eye's starting prescription came from autorefraction: Autorefraction
  Right / Left Eye Sequence items of that reading. A start from retinoscopy or typed without its
  origin has no DICOM object (no IOD holds it); the PDF, FHIR, CSV and JSON records carry it.

The Patient ID is the pseudonymous id; a visit without one is refused
(:class:`~visiontune.errors.InvalidInputError`) before anything is written. Patient's Name, Birth
Date and Sex are empty (Type 2: VisionTune does not hold them). A simulated visit says
``SIMULATED`` in Study Description, Series Description and Patient Comments; a real one never
carries the word. UIDs are ``2.25.`` UIDs from a SHA-256 hash: the Study Instance UID of the visit id
(both objects in one study), series and SOP instance UIDs from the record's content too, so a
changed record never reuses an instance UID.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity_units import logmar_to_decimal
from visiontune.report.files import check_output_path, write_private
from visiontune.report.visit_record import VisitRecord

__all__ = [
    "AUTOREFRACTION_SOP_CLASS",
    "LENSOMETRY_SOP_CLASS",
    "SUBJECTIVE_REFRACTION_SOP_CLASS",
    "VISUAL_ACUITY_SOP_CLASS",
    "autorefraction_dataset",
    "dicom_bytes",
    "export_dicom_files",
    "lensometry_dataset",
    "prior_dicom_files",
    "subjective_refraction_dataset",
    "visit_dicom_files",
    "visual_acuity_dataset",
    "write_visit_dicom",
]

SUBJECTIVE_REFRACTION_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.78.4"
LENSOMETRY_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.78.1"
AUTOREFRACTION_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.78.2"
VISUAL_ACUITY_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.78.5"
MANUFACTURER = "VisionTune project"
MODEL_NAME = "VisionTune"
PRESCRIPTION_VA = ("111687", "DCM", "Prescription Visual Acuity")  # CID 4216 (pydicom.sr codes.cid4216)


def _uid(*parts: str) -> str:
    """A ``2.25.`` UID from a SHA-256 of ``parts`` (deterministic, within 64 characters)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()[:16]
    return f"2.25.{int.from_bytes(digest, 'big')}"


def _content_key(record: VisitRecord) -> str:
    return json.dumps(record.to_dict(), sort_keys=True)


def _instance_uid(record: VisitRecord, kind: str) -> str:
    return _uid("visiontune", "instance", kind, record.visit_id, _content_key(record))


def _da(t: datetime) -> str:
    return t.strftime("%Y%m%d")


def _tm(t: datetime) -> str:
    return t.strftime("%H%M%S")


def _offset(t: datetime) -> str:
    minutes = int(t.utcoffset().total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def _check(record: VisitRecord) -> None:
    if not isinstance(record, VisitRecord):
        raise InvalidInputError(f"record: expected a VisitRecord, got {type(record).__name__}")
    if record.patient_id is None:
        raise InvalidInputError(
            f"visit {record.visit_id}: patient_id is missing; a DICOM object needs a Patient ID "
            "(give the visit a pseudonymous patient id); nothing was written"
        )
    if "\\" in record.patient_id or any(ord(c) < 32 for c in record.patient_id):
        raise InvalidInputError(
            f"visit.patient_id: DICOM Patient ID cannot hold a backslash or control character, got "
            f"{record.patient_id!r}"
        )
    if len(record.patient_id) > 64:
        raise InvalidInputError(
            f"visit.patient_id: DICOM Patient ID holds at most 64 characters, got {len(record.patient_id)}"
        )
    for what, name in (("examiner", record.examiner_or_clinician), *(("signed off by", n) for n in record.signed_by)):
        if name is not None and (len(name) > 63 or "\\" in name or any(ord(c) < 32 for c in name)):
            raise InvalidInputError(
                f"visit: {what} {name[:70]!r}: a DICOM Person Name holds at most 63 characters, "
                "no backslash or control character; nothing was written"
            )
    record.check_recordable()


def _person_name(name: str) -> str:
    """A name as typed, as a DICOM Person Name: the whole text is the family-name component,
    with its ``^`` delimiter (PS3.5 6.2: without a ``^`` a PN with spaces reads as the retired
    ACR-NEMA form), unless the clinic typed the components with ``^`` itself."""
    return name if "^" in name else name + "^"


def _base(record: VisitRecord, sop_class: str, modality: str, kind: str, series_number: int, description: str):
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import PYDICOM_IMPLEMENTATION_UID, ExplicitVRLittleEndian

    key = _content_key(record)
    mark = "SIMULATED - " if record.simulated else ""
    t = record.recorded_at
    ds = Dataset()
    ds.SpecificCharacterSet = "ISO_IR 192"
    # SOP Common
    ds.SOPClassUID = sop_class
    ds.SOPInstanceUID = _instance_uid(record, kind)
    ds.InstanceCreationDate, ds.InstanceCreationTime = _da(t), _tm(t)
    ds.TimezoneOffsetFromUTC = _offset(t)
    # Patient
    ds.PatientName = ""
    ds.PatientID = record.patient_id
    ds.PatientBirthDate = ""
    ds.PatientSex = ""
    if record.simulated:
        ds.PatientComments = "SIMULATED patient: answers from a simulated observer, not a person"
    # Patient Study
    if record.age_years is not None:
        ds.PatientAge = f"{record.age_years:03d}Y"
    # General Study
    ds.StudyInstanceUID = _uid("visiontune", "study", record.visit_id)
    ds.StudyDate, ds.StudyTime = _da(t), _tm(t)
    ds.ReferringPhysicianName = ""
    ds.StudyID = record.visit_id[:16]
    ds.AccessionNumber = ""
    ds.StudyDescription = f"{mark}Refraction visit {record.visit_id}"[:64]
    # General Series / measurements series
    ds.Modality = modality
    ds.SeriesInstanceUID = _uid("visiontune", "series", kind, record.visit_id, key)
    ds.SeriesNumber = series_number
    ds.SeriesDate, ds.SeriesTime = _da(t), _tm(t)
    ds.SeriesDescription = f"{mark}{description}"[:64]
    if record.examiner_or_clinician:
        ds.OperatorsName = _person_name(record.examiner_or_clinician)
    if record.signed_by:
        ds.PhysiciansOfRecord = [_person_name(n) for n in record.signed_by]
    # General Equipment / Enhanced General Equipment
    ds.Manufacturer = MANUFACTURER
    ds.ManufacturerModelName = MODEL_NAME
    ds.DeviceSerialNumber = f"software-{record.software_version}"[:64]
    ds.SoftwareVersions = record.software_version[:64]
    # General Ophthalmic Refractive Measurements
    ds.InstanceNumber = 1
    ds.ContentDate, ds.ContentTime = _da(t), _tm(t)
    ds.file_meta = FileMetaDataset()
    ds.file_meta.MediaStorageSOPClassUID = sop_class
    ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.file_meta.ImplementationClassUID = PYDICOM_IMPLEMENTATION_UID
    ds.file_meta.ImplementationVersionName = f"VISIONTUNE{record.software_version}"[:16]
    return ds


def _laterality(record: VisitRecord, both: bool = False) -> str:
    eyes = {e.eye for e in record.measured_eyes}
    if both or eyes == {"OD", "OS"}:
        return "B"
    return "R" if eyes == {"OD"} else "L"


def subjective_refraction_dataset(record: VisitRecord):
    """The Subjective Refraction Measurements object of ``record`` (a pydicom Dataset)."""
    from pydicom.dataset import Dataset

    _check(record)
    ds = _base(
        record,
        SUBJECTIVE_REFRACTION_SOP_CLASS,
        "SRF",
        "srf",
        1,
        f"Subjective refraction, final Rx in {record.cylinder_form} cylinder",
    )
    ds.MeasurementLaterality = _laterality(record)
    if record.pd_mm is not None:
        ds.DistancePupillaryDistance = float(record.pd_mm)
    for e in record.measured_eyes:
        p = record.balanced_prescription(e.eye)
        item = Dataset()
        item.SpherePower = float(p.sphere_d)
        cyl = Dataset()
        cyl.CylinderPower = float(p.cylinder_d)
        cyl.CylinderAxis = float(round(p.axis_deg))
        item.CylinderSequence = [cyl]
        near = record.near_add(e.eye)
        if near is not None:
            add = Dataset()
            add.AddPower = float(near.add_d)
            add.ViewingDistance = round(float(near.distance_cm) / 100.0, 4)
            item.AddNearSequence = [add]
        name = "SubjectiveRefractionRightEyeSequence" if e.eye == "OD" else "SubjectiveRefractionLeftEyeSequence"
        setattr(ds, name, [item])
    return ds


def visual_acuity_dataset(record: VisitRecord):
    """The Visual Acuity Measurements object of ``record`` (a pydicom Dataset)."""
    from pydicom.dataset import Dataset

    _check(record)
    how = ", ".join(
        f"{e.eye} {'measured' if e.measured_va_logmar is not None else 'predicted'}" for e in record.measured_eyes
    )
    ds = _base(record, VISUAL_ACUITY_SOP_CLASS, "VA", "va", 2, f"Visual acuity through final Rx ({how})")
    ds.MeasurementLaterality = _laterality(record, both=record.binocular_va_logmar is not None)
    ds.ViewingDistanceType = "DISTANCE"
    code = Dataset()
    code.CodeValue, code.CodingSchemeDesignator, code.CodeMeaning = PRESCRIPTION_VA
    ds.VisualAcuityTypeCodeSequence = [code]
    ds.BackgroundColor = "WHITE"
    ds.Optotype = "LETTERS"
    ds.OptotypePresentation = "SINGLE"
    ds.OptotypeDetailedDefinition = "Latin capital letters, shown one at a time (VisionTune protocol)"
    ref = Dataset()
    ref.ReferencedSOPClassUID = SUBJECTIVE_REFRACTION_SOP_CLASS
    ref.ReferencedSOPInstanceUID = _instance_uid(record, "srf")
    ds.ReferencedRefractiveMeasurementsSequence = [ref]

    def item(logmar: float):
        it = Dataset()
        it.DecimalVisualAcuity = round(float(logmar_to_decimal(logmar)), 4)
        return [it]

    for e in record.measured_eyes:
        name = "VisualAcuityRightEyeSequence" if e.eye == "OD" else "VisualAcuityLeftEyeSequence"
        setattr(ds, name, item(e.acuity_logmar))
    if record.binocular_va_logmar is not None:
        ds.VisualAcuityBothEyesOpenSequence = item(record.binocular_va_logmar)
    return ds


def _lens_item(record: VisitRecord, rx):
    from pydicom.dataset import Dataset

    p = record.shown(rx)
    item = Dataset()
    item.SpherePower = float(p.sphere_d)
    cyl = Dataset()
    cyl.CylinderPower = float(p.cylinder_d)
    cyl.CylinderAxis = float(round(p.axis_deg)) if p.cylinder_d != 0.0 else 180.0
    item.CylinderSequence = [cyl]
    return item


def _laterality_of(eyes) -> str:
    eyes = set(eyes)
    return "B" if eyes == {"OD", "OS"} else ("R" if eyes == {"OD"} else "L")


def lensometry_dataset(record: VisitRecord):
    """The Lensometry Measurements object of the habitual spectacles (a pydicom Dataset), or
    ``None`` when the visit has no habitual prescription."""
    eyes = [e for e in ("OD", "OS") if record.habitual(e) is not None]
    if not eyes:
        return None
    _check(record)
    source = record.habitual_source or "source not recorded"
    ds = _base(record, LENSOMETRY_SOP_CLASS, "LEN", "len", 3, f"Habitual spectacles ({source})")
    ds.MeasurementLaterality = _laterality_of(eyes)
    ds.LensDescription = f"habitual spectacles ({source})"[:64]
    for e in eyes:
        item = _lens_item(record, record.habitual(e))
        setattr(ds, "RightLensSequence" if e == "OD" else "LeftLensSequence", [item])
    return ds


def autorefraction_dataset(record: VisitRecord):
    """The Autorefraction Measurements object of the starting prescriptions read by an
    autorefractor (a pydicom Dataset), or ``None`` when no eye started from one."""
    eyes = [e for e in ("OD", "OS") if record.start(e) is not None and record.start_source(e) == "autorefraction"]
    if not eyes:
        return None
    _check(record)
    ds = _base(record, AUTOREFRACTION_SOP_CLASS, "AR", "ar", 4, "Starting prescription (autorefraction)")
    ds.MeasurementLaterality = _laterality_of(eyes)
    for e in eyes:
        item = _lens_item(record, record.start(e))
        setattr(ds, "AutorefractionRightEyeSequence" if e == "OD" else "AutorefractionLeftEyeSequence", [item])
    return ds


def dicom_bytes(ds) -> bytes:
    """``ds`` as a DICOM Part 10 file (preamble, file meta, explicit VR little endian)."""
    from io import BytesIO

    buf = BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    return buf.getvalue()


def write_visit_dicom(record: VisitRecord, folder: str | os.PathLike, protected: tuple[Path, ...] = ()) -> list[Path]:
    """Write both objects into ``folder`` as ``visit-<id>-subjective-refraction.dcm`` and
    ``visit-<id>-visual-acuity.dcm`` (mode 0600, atomic) and return their paths.

    Both objects are built before anything is written: a visit without a patient id or without
    a measured eye raises InvalidInputError and leaves the folder untouched.
    """
    try:
        base = Path(folder).expanduser().absolute()
    except TypeError:
        raise InvalidInputError(f"dicom folder: expected a folder path, got {folder!r}") from None
    if not base.is_dir():
        raise InvalidInputError(f"dicom folder: {base} is not an existing folder")
    blobs = visit_dicom_files(record)
    paths = []
    for name, data in blobs.items():
        out = check_output_path("dicom", base / name, protected)
        write_private(out, data)
        paths.append(out)
    return paths


def visit_dicom_files(record: VisitRecord) -> dict[str, bytes]:
    """``{file name: Part 10 bytes}`` of both objects (names as :func:`write_visit_dicom`
    writes them), built in memory; InvalidInputError as there, before anything is written."""
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in record.visit_id)
    return {
        f"visit-{safe_id}-subjective-refraction.dcm": dicom_bytes(subjective_refraction_dataset(record)),
        f"visit-{safe_id}-visual-acuity.dcm": dicom_bytes(visual_acuity_dataset(record)),
    }


def prior_dicom_files(record: VisitRecord) -> dict[str, bytes]:
    """``{file name: Part 10 bytes}`` of the objects of what the visit started from: the
    Lensometry Measurements of the habitual spectacles and the Autorefraction Measurements of the
    starting prescriptions read by an autorefractor, each when there is one (``visit-<id>-lensometry.dcm``,
    ``visit-<id>-autorefraction.dcm``); :func:`export_dicom_files` adds them to the visit's two."""
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in record.visit_id)
    out = {}
    for kind, ds in (("lensometry", lensometry_dataset(record)), ("autorefraction", autorefraction_dataset(record))):
        if ds is not None:
            out[f"visit-{safe_id}-{kind}.dcm"] = dicom_bytes(ds)
    return out


def export_dicom_files(record: VisitRecord) -> dict[str, bytes]:
    """Every DICOM object of the visit, as ``visit export --dicom-dir`` writes them and ``visit send
    --dicom`` sends them: the two of :func:`visit_dicom_files`, then those of :func:`prior_dicom_files`
    (the habitual spectacles' Lensometry Measurements, the autorefraction start's Autorefraction
    Measurements), one study; built in memory, InvalidInputError before anything is written."""
    return {**visit_dicom_files(record), **prior_dicom_files(record)}
