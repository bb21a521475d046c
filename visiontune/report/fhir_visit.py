"""A visit as a FHIR R4 ``Bundle``: Patient, VisionPrescription (both eyes), Observations.

Built as plain JSON dicts and validated by constructing ``fhir.resources``' pydantic models
(its ``R4B`` package, as :mod:`visiontune.report.fhir`: ``Bundle``, ``Patient``,
``Observation`` and ``VisionPrescription`` have the same elements in R4 4.0.1 and R4B 4.3.0).

**Bundle type ``collection``**, not ``document``: a ``document`` Bundle must start with a
``Composition`` and is an attested, immutable clinical document (FHIR R4 Bundle, "document"
rules bdl-11 and following). This export is a set of machine-made results (the prescription a
``draft`` until the clinic's system files it) that the receiving system takes apart and files
resource by resource; ``collection`` says exactly that and carries no attestation claim.
Every entry has a ``fullUrl`` ``urn:uuid:...`` (stable: UUID 5 of the visit id and the
resource's role, so a re-export gives the same ids) and references use those URLs.

Entries, in order:

* ``Patient``: ``identifier`` = the pseudonymous id (system :data:`PATIENT_ID_SYSTEM`), no name
  or birth date (VisionTune never holds them). Without an id the Patient has no identifier.
* ``VisionPrescription`` (``status`` ``draft``, ``prescriber`` the clinician as display text):
  one ``lensSpecification`` per measured eye (``eye`` right/left, ``product`` ``lens`` of
  ``ex-visionprescriptionproduct``) with the prescription to dispense: the final one (signed
  off if the clinician edited it, else found) plus the binocular balance's plus change, in the
  clinic's cylinder form; ``axis`` whole degrees 1-180, left out for a zero cylinder; ``note``
  gives the found Rx, the signed-off Rx with who/when, the balance and the ± values. The near
  addition filed for the eye, if any, is the specification's ``add`` (D), with its credible
  region, range of clear vision, near acuity and near distance in a second ``note``.
* ``Observation`` per measured eye, the subjective refraction (the *found* prescription, clinic
  form): ``code`` LOINC ``79895-9`` "Subjective refraction panel" and SNOMED CT ``251794006``
  "Refraction"; ``method`` SNOMED CT ``397277005`` "Subjective refraction (procedure)";
  ``bodySite`` text (right eye / left eye); ``component`` sphere, cylinder, axis coded
  SNOMED CT ``251795007`` "Power of sphere", ``251797004`` "Power of cylinder", ``251799001``
  "Axis of cylinder" (eye-independent, as the HL7 eye-care IG does) and the per-eye LOINC
  codes of the PhenX refractive-error panel 62706-7 (right eye: sphere ``65890-6``, cylinder
  ``65892-2``, axis ``65891-4``; left eye: ``65894-8``, ``65896-3``, ``65895-5``); units UCUM
  ``[diop]`` and ``deg``; Thibos ``M``, ``J0``, ``J45`` as components with local codes
  (:data:`LOCAL_CODE_SYSTEM`; no standard code found); the ± values in ``note``.
* ``Observation`` per measured eye, the distance visual acuity: SNOMED CT ``251739003``
  "Distance visual acuity", ``valueQuantity`` in logMAR (``unit`` "logMAR", no UCUM code:
  UCUM has none), ``method`` text saying measured through the final Rx or predicted by the
  model; Snellen and decimal in ``note``. One more with ``bodySite`` "both eyes" when the
  binocular acuity is known.

Sources of the codes (checked 2026-11, not against a terminology server):
LOINC 79895-9 (Subjective refraction panel, NEI eyeGENE; healthit.gov ISA "refraction" entry and
the LOINC term page); LOINC 62706-7 panel and its members 65890-6, 65892-2, 65891-4, 65894-8,
65896-3, 65895-5 (https://loinc.org/62706-7/; these six are LOINC status TRIAL, PhenX
"Spherical power / Cylindrical power / Cylinder axis, Right/Left eye"); SNOMED CT codes from the
HL7 Specialty Eyecare CDA IG value sets RefractionObservationCodes and RefractionMethodCodes
(http://hl7.org/cda/us/eyecare/ValueSet/RefractionObservationCodes) and the HL7 FHIR eye-care IG
example Observation "observation-refraction-re-0" (code 251794006). The NEI per-eye codes
"Sphere/Cylinder/Axis--WO cycloplegia by Subjective refraction" would fit better but only the
right-eye cylinder (79848-8) could be verified, so they are not used. No SNOMED code for the eye
as a body site could be verified: ``bodySite`` is text only.

The visit's people and inputs:

* ``Practitioner`` per person named (``name.text`` only): the examiner who ran the refraction
  (each Observation's ``performer``) and each clinician who signed a prescription off (the
  VisionPrescription's ``prescriber``: the clinician who signed, else the examiner as display
  text, with VisionTune named beside).
* ``Observation`` pupillary distance (mm, UCUM ``mm``; local code ``pupillary-distance``, the
  monocular distances as components ``pupillary-distance-right`` / ``-left``): LOINC's PD codes
  are method-specific (e.g. 95297-8 "Pupillary distance.binocular far Autorefractor.auto",
  98461-7 "... by Phoropter") and a typed PD's method is not known, so none is claimed.
* ``Observation`` per eye, the starting and the habitual prescriptions (local codes
  ``starting-prescription`` / ``habitual-prescription``; components the eye-independent SNOMED
  CT sphere, cylinder and axis codes above), ``method`` text its source (autorefraction,
  retinoscopy, habitual spectacles, typed; lensmeter, spectacle prescription).

Dates and times (``effectiveDateTime``, ``created``, the Bundle's ``timestamp``) are the visit's
local time with its UTC offset (``2026-11-28T10:42:00+01:00``).

A simulated visit carries the HL7 ``v3-ActReason#HTEST`` (test health data) tag in ``meta.tag``
of the Bundle and of every resource, and a SIMULATED note; a real visit carries neither.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity_units import format_snellen, logmar_to_decimal
from visiontune.optics.prescription import Prescription
from visiontune.report.files import check_output_path, write_private
from visiontune.report.visit_record import EYE_NAMES, EyeRecord, NearAddition, VisitRecord

__all__ = [
    "LOCAL_CODE_SYSTEM",
    "PATIENT_ID_SYSTEM",
    "VISIT_ID_SYSTEM",
    "visit_bundle",
    "visit_bundle_dict",
    "visit_bundle_json",
    "write_visit_fhir",
]

PATIENT_ID_SYSTEM = "urn:visiontune:patient-id"  # as visiontune.report.fhir
VISIT_ID_SYSTEM = "urn:visiontune:visit-id"
SESSION_ID_SYSTEM = "urn:visiontune:session-id"
LOCAL_CODE_SYSTEM = "urn:visiontune:code"
LOINC = "http://loinc.org"
SNOMED = "http://snomed.info/sct"
UCUM = "http://unitsofmeasure.org"
_ACT_REASON = "http://terminology.hl7.org/CodeSystem/v3-ActReason"
_PRODUCT = "http://terminology.hl7.org/CodeSystem/ex-visionprescriptionproduct"
_CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
_SIMULATED_NOTE = "SIMULATED: answers from a simulated patient, not a real refraction."
_FHIR_EYE = {"OD": "right", "OS": "left"}

#: per-eye LOINC codes (PhenX 62706-7 members) of sphere, cylinder, axis
LOINC_REFRACTION = {
    "OD": {
        "sphere": ("65890-6", "Spherical power [Inverse Length] Right eye"),
        "cylinder": ("65892-2", "Cylindrical power [Inverse Length] Right eye"),
        "axis": ("65891-4", "Cylinder axis Right eye"),
    },
    "OS": {
        "sphere": ("65894-8", "Spherical power [Inverse Length] Left eye"),
        "cylinder": ("65896-3", "Cylindrical power [Inverse Length] Left eye"),
        "axis": ("65895-5", "Cylinder axis Left eye"),
    },
}
SNOMED_REFRACTION = {
    "sphere": ("251795007", "Power of sphere"),
    "cylinder": ("251797004", "Power of cylinder"),
    "axis": ("251799001", "Axis of cylinder"),
}
SUBJECTIVE_REFRACTION_PANEL = ("79895-9", "Subjective refraction panel")
SNOMED_REFRACTION_CODE = ("251794006", "Refraction")
SNOMED_SUBJECTIVE_REFRACTION = ("397277005", "Subjective refraction (procedure)")
SNOMED_DISTANCE_VA = ("251739003", "Distance visual acuity")


def _uuid(record: VisitRecord, role: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{VISIT_ID_SYSTEM}:{record.visit_id}:{role}"))


def _meta(record: VisitRecord) -> dict[str, Any]:
    if not record.simulated:
        return {}
    return {"meta": {"tag": [{"system": _ACT_REASON, "code": "HTEST", "display": "test health data"}]}}


def _notes(record: VisitRecord, *texts: str) -> list[dict[str, str]]:
    notes = [{"text": t} for t in texts if t]
    if record.simulated:
        notes.insert(0, {"text": _SIMULATED_NOTE})
    return notes


def _axis(p: Prescription) -> int:
    axis = round(p.axis_deg)
    return 180 if axis == 0 else int(axis)


def _diopters(value: float) -> dict[str, Any]:
    return {"value": round(value, 4) + 0.0, "unit": "diopter", "system": UCUM, "code": "[diop]"}


def _degrees(value: float) -> dict[str, Any]:
    return {"value": value, "unit": "degree", "system": UCUM, "code": "deg"}


def _concept(*codings: tuple[str, str, str], text: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"coding": [{"system": s, "code": c, "display": d} for s, c, d in codings]}
    if text:
        out["text"] = text
    return out


def _pm_text(record: VisitRecord, e: EyeRecord) -> str:
    return (
        f"95% credible half-widths: sphere ±{e.sphere_pm_d:.2f} D, cylinder ±{e.cylinder_pm_d:.2f} D, "
        f"axis ±{e.axis_pm_deg:.0f} deg; M ±{e.m_pm_d:.2f} D, J0 ±{e.j0_pm_d:.2f} D, J45 ±{e.j45_pm_d:.2f} D. "
        f"{e.answers_text}, stopped by {e.stopped_by}; VisionTune session {e.session_id}."
    )


def _acuity_text(va: float) -> str:
    return (
        f"{va:.2f} logMAR = Snellen {format_snellen(va, 6)} ({format_snellen(va)}), decimal {logmar_to_decimal(va):.2f}"
    )


def _lens_note(record: VisitRecord, e: EyeRecord) -> str:
    found = record.shown(e.prescription)
    text = f"Found by VisionTune: {found.format()}."
    if e.signed_off is not None:
        s = e.signed_off
        text += f" Edited and signed off by {s.by} at {s.at.isoformat()}: {record.shown(s.prescription).format()}."
    if record.balance is not None:
        change = record.balance.plus_change_od_d if e.eye == "OD" else record.balance.plus_change_os_d
        text += f" Binocular balance ({record.balance.method}): {change:+.2f} D sphere."
    return text + " " + _pm_text(record, e)


def _near_note(near: NearAddition) -> str:
    return (
        f"Near addition {near.add_d:+.2f} D for {near.distance_cm:g} cm (95% credible region "
        f"{near.lower_d:+.2f} to {near.upper_d:+.2f} D; tentative add by age {near.tentative_add_d:+.2f} D); "
        f"range of clear vision through it {near.range_text}; near acuity through it "
        f"{near.near_va_logmar:+.2f} logMAR. Method: {near.method}."
    )


def _patient(record: VisitRecord) -> dict[str, Any]:
    resource: dict[str, Any] = {"resourceType": "Patient", "id": _uuid(record, "patient"), **_meta(record)}
    if record.patient_id is not None:
        resource["identifier"] = [{"system": PATIENT_ID_SYSTEM, "value": record.patient_id}]
    return resource


def _vision_prescription(record: VisitRecord, patient_url: str) -> dict[str, Any]:
    specs = []
    for e in record.measured_eyes:
        p = record.balanced_prescription(e.eye)
        spec: dict[str, Any] = {
            "product": {"coding": [{"system": _PRODUCT, "code": "lens"}]},
            "eye": _FHIR_EYE[e.eye],
            "sphere": round(p.sphere_d, 4) + 0.0,
            "cylinder": round(p.cylinder_d, 4) + 0.0,
            "note": _notes(record, _lens_note(record, e)),
        }
        if p.cylinder_d != 0.0:
            spec["axis"] = _axis(p)
        near = record.near_add(e.eye)
        if near is not None:
            spec["add"] = round(near.add_d, 4) + 0.0
            spec["note"] += _notes(record, _near_note(near))
        specs.append(spec)
    when = record.recorded_at.isoformat()
    prescriber = (record.signed_by[0] if record.signed_by else record.examiner_or_clinician) or "unknown clinician"
    return {
        "resourceType": "VisionPrescription",
        "id": _uuid(record, "vision-prescription"),
        **_meta(record),
        "identifier": [{"system": VISIT_ID_SYSTEM, "value": record.visit_id}],
        "status": "draft",
        "created": when,
        "dateWritten": when,
        "patient": {"reference": patient_url},
        "prescriber": {
            **_practitioner_ref(record, prescriber),
            "display": f"{prescriber} (with VisionTune {record.software_version})",
        },
        "lensSpecification": specs,
    }


def _refraction(record: VisitRecord, e: EyeRecord, patient_url: str) -> dict[str, Any]:
    p = record.shown(e.prescription)
    m, j0, j45 = (float(v) for v in e.prescription.power_vector_array())
    loinc = LOINC_REFRACTION[e.eye]

    def rx_component(kind: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"code": _concept((SNOMED, *SNOMED_REFRACTION[kind]), (LOINC, *loinc[kind])), "valueQuantity": value}

    def local(code: str, display: str, value: float) -> dict[str, Any]:
        return {"code": _concept((LOCAL_CODE_SYSTEM, code, display)), "valueQuantity": _diopters(value)}

    components = [rx_component("sphere", _diopters(p.sphere_d)), rx_component("cylinder", _diopters(p.cylinder_d))]
    if p.cylinder_d != 0.0:
        components.append(rx_component("axis", _degrees(_axis(p))))
    components += [
        local("power-vector-M", "Thibos power vector M (spherical equivalent)", m),
        local("power-vector-J0", "Thibos power vector J0", j0),
        local("power-vector-J45", "Thibos power vector J45", j45),
    ]
    return {
        "resourceType": "Observation",
        "id": _uuid(record, f"refraction-{e.eye}"),
        **_meta(record),
        "identifier": [{"system": SESSION_ID_SYSTEM, "value": str(e.session_id)}],
        "status": "final",
        "category": [{"coding": [{"system": _CATEGORY, "code": "exam", "display": "Exam"}]}],
        "code": _concept(
            (LOINC, *SUBJECTIVE_REFRACTION_PANEL),
            (SNOMED, *SNOMED_REFRACTION_CODE),
            text=f"Subjective refraction, {EYE_NAMES[e.eye]}",
        ),
        "subject": {"reference": patient_url},
        "effectiveDateTime": record.recorded_at.isoformat(),
        "bodySite": {"text": EYE_NAMES[e.eye]},
        "method": _concept(
            (SNOMED, *SNOMED_SUBJECTIVE_REFRACTION),
            text="VisionTune: Bayesian optimisation over lenses from letter-reading answers",
        ),
        "component": components,
        "note": _notes(record, _pm_text(record, e)),
        **_performer(record),
    }


def _acuity(record: VisitRecord, role: str, va: float, site: str, how: str, patient_url: str) -> dict[str, Any]:
    return {
        "resourceType": "Observation",
        "id": _uuid(record, role),
        **_meta(record),
        "status": "final",
        "category": [{"coding": [{"system": _CATEGORY, "code": "exam", "display": "Exam"}]}],
        "code": _concept((SNOMED, *SNOMED_DISTANCE_VA), text="Distance visual acuity (logMAR)"),
        "subject": {"reference": patient_url},
        "effectiveDateTime": record.recorded_at.isoformat(),
        "bodySite": {"text": site},
        "method": {"text": how},
        "valueQuantity": {"value": round(va, 4) + 0.0, "unit": "logMAR"},
        "note": _notes(record, _acuity_text(va)),
        **_performer(record),
    }


def _people(record: VisitRecord) -> list[str]:
    """Everyone named on the visit, each once: the examiner, then the clinicians who signed off."""
    names = [record.examiner_or_clinician, *record.signed_by]
    return list(dict.fromkeys(n for n in names if n))


def _practitioner(record: VisitRecord, name: str) -> dict[str, Any]:
    return {
        "resourceType": "Practitioner",
        "id": _uuid(record, f"practitioner:{name}"),
        **_meta(record),
        "name": [{"text": name}],
    }


def _practitioner_ref(record: VisitRecord, name: str) -> dict[str, Any]:
    if name not in _people(record):
        return {}
    return {"reference": f"urn:uuid:{_uuid(record, f'practitioner:{name}')}"}


def _performer(record: VisitRecord) -> dict[str, Any]:
    """``performer``: the examiner who ran the refraction, when named."""
    name = record.examiner_or_clinician
    if not name:
        return {}
    return {"performer": [{**_practitioner_ref(record, name), "display": f"{name} (examiner)"}]}


def _pd(record: VisitRecord, patient_url: str) -> dict[str, Any]:
    def mm(value: float) -> dict[str, Any]:
        return {"value": round(value, 2) + 0.0, "unit": "mm", "system": UCUM, "code": "mm"}

    resource = {
        "resourceType": "Observation",
        "id": _uuid(record, "pupillary-distance"),
        **_meta(record),
        "status": "final",
        "category": [{"coding": [{"system": _CATEGORY, "code": "exam", "display": "Exam"}]}],
        "code": _concept(
            (LOCAL_CODE_SYSTEM, "pupillary-distance", "Pupillary distance, binocular"), text="Pupillary distance (mm)"
        ),
        "subject": {"reference": patient_url},
        "effectiveDateTime": record.recorded_at.isoformat(),
        "valueQuantity": mm(record.pd_mm),
        "note": _notes(record, ""),
        **_performer(record),
    }
    if record.pd_od_mm is not None:
        resource["component"] = [
            {
                "code": _concept((LOCAL_CODE_SYSTEM, "pupillary-distance-right", "Pupillary distance, right eye")),
                "valueQuantity": mm(record.pd_od_mm),
            },
            {
                "code": _concept((LOCAL_CODE_SYSTEM, "pupillary-distance-left", "Pupillary distance, left eye")),
                "valueQuantity": mm(record.pd_os_mm),
            },
        ]
    if not resource["note"]:
        del resource["note"]
    return resource


def _prior_rx(
    record: VisitRecord, kind: str, eye: str, rx: Prescription, source: str | None, patient_url: str
) -> dict[str, Any]:
    """A starting or habitual prescription of ``eye`` as an Observation (``kind`` ``starting`` or
    ``habitual``), with its source as the method."""
    p = record.shown(rx)
    components = [
        {"code": _concept((SNOMED, *SNOMED_REFRACTION["sphere"])), "valueQuantity": _diopters(p.sphere_d)},
        {"code": _concept((SNOMED, *SNOMED_REFRACTION["cylinder"])), "valueQuantity": _diopters(p.cylinder_d)},
    ]
    if p.cylinder_d != 0.0:
        components.append({"code": _concept((SNOMED, *SNOMED_REFRACTION["axis"])), "valueQuantity": _degrees(_axis(p))})
    what = "Starting prescription" if kind == "starting" else "Habitual prescription (spectacles worn)"
    resource = {
        "resourceType": "Observation",
        "id": _uuid(record, f"{kind}-{eye}"),
        **_meta(record),
        "status": "final",
        "category": [{"coding": [{"system": _CATEGORY, "code": "exam", "display": "Exam"}]}],
        "code": _concept((LOCAL_CODE_SYSTEM, f"{kind}-prescription", what), text=f"{what}, {EYE_NAMES[eye]}"),
        "subject": {"reference": patient_url},
        "effectiveDateTime": record.recorded_at.isoformat(),
        "bodySite": {"text": EYE_NAMES[eye]},
        "component": components,
        "note": _notes(record, f"{what}: {p.format()}" + (f" ({source})." if source else ".")),
    }
    if source:
        resource["method"] = {"text": f"source: {source}"}
    return resource


def _inputs(record: VisitRecord, patient_url: str) -> list[dict[str, Any]]:
    """The Practitioners, the pupillary distance and each eye's starting and habitual prescriptions."""
    out: list[dict[str, Any]] = [_practitioner(record, name) for name in _people(record)]
    if record.pd_mm is not None:
        out.append(_pd(record, patient_url))
    for eye in ("OD", "OS"):
        if record.start(eye) is not None:
            out.append(_prior_rx(record, "starting", eye, record.start(eye), record.start_source(eye), patient_url))
        if record.habitual(eye) is not None:
            out.append(_prior_rx(record, "habitual", eye, record.habitual(eye), record.habitual_source, patient_url))
    return out


def visit_bundle_dict(record: VisitRecord) -> dict[str, Any]:
    """The Bundle as a plain JSON-ready dict (before validation). Raises InvalidInputError for a
    visit with no measured eye."""
    if not isinstance(record, VisitRecord):
        raise InvalidInputError(f"record: expected a VisitRecord, got {type(record).__name__}")
    record.check_recordable()
    patient = _patient(record)
    patient_url = f"urn:uuid:{patient['id']}"
    resources = [patient, _vision_prescription(record, patient_url)]
    for e in record.measured_eyes:
        resources.append(_refraction(record, e, patient_url))
    for e in record.measured_eyes:
        how = (
            "measured through the final prescription"
            if e.measured_va_logmar is not None
            else "predicted by the VisionTune model through the found prescription (not measured)"
        )
        resources.append(_acuity(record, f"acuity-{e.eye}", e.acuity_logmar, EYE_NAMES[e.eye], how, patient_url))
    if record.binocular_va_logmar is not None:
        resources.append(
            _acuity(
                record,
                "acuity-OU",
                record.binocular_va_logmar,
                "both eyes (OU)",
                "measured with both eyes open through the balanced prescription",
                patient_url,
            )
        )
    resources += _inputs(record, patient_url)
    return {
        "resourceType": "Bundle",
        "id": _uuid(record, "bundle"),
        **_meta(record),
        "identifier": {"system": VISIT_ID_SYSTEM, "value": record.visit_id},
        "type": "collection",
        "timestamp": record.recorded_at.isoformat(),
        "entry": [{"fullUrl": f"urn:uuid:{r['id']}", "resource": r} for r in resources],
    }


def visit_bundle(record: VisitRecord):
    """A validated ``fhir.resources.R4B.bundle.Bundle`` of ``record`` (every entry validated as
    its own resource type). Raises InvalidInputError if the library rejects it."""
    from fhir.resources.R4B.bundle import Bundle
    from pydantic import ValidationError

    data = visit_bundle_dict(record)
    try:
        return Bundle.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"visit {record.visit_id}: FHIR Bundle invalid: {exc}") from None


def visit_bundle_json(record: VisitRecord) -> str:
    """The validated Bundle as FHIR JSON text (absent elements left out)."""
    model = visit_bundle(record)
    return json.dumps(json.loads(model.model_dump_json(exclude_none=True)), indent=2, ensure_ascii=False) + "\n"


def write_visit_fhir(record: VisitRecord, path: str | os.PathLike, protected: tuple[Path, ...] = ()) -> Path:
    """Write the Bundle's JSON to ``path`` (mode 0600, atomic); nothing is written on an error."""
    out = check_output_path("fhir", path, protected)
    write_private(out, visit_bundle_json(record).encode("utf-8"))
    return out
