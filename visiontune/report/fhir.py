"""The final prescription as a FHIR ``VisionPrescription`` resource, validated by a FHIR model.

Built with ``fhir.resources`` (its ``R4B`` package: the ``VisionPrescription`` resource is
the same in R4 4.0.1 and R4B 4.3.0) and validated by constructing the pydantic model, so a
resource this module returns is one the library accepts. Mapping:

* ``lensSpecification[]``: ``product`` = ``lens`` (``ex-visionprescriptionproduct``); ``eye``
  ``right`` (OD), ``left`` (OS), or both (OU: the one correction found, written for each eye);
  ``sphere`` / ``cylinder`` = the result's ``rounded`` values (0.25 D steps, the Rx to
  dispense); ``axis`` = the rounded axis (integer degrees 1-180), left out when the cylinder
  is zero; ``note`` gives the exact estimate, the 95% intervals, the predicted acuity and the
  answers used (by kind: letters, comparisons, sliders, chart lines, when not all were letters).
* ``status`` = ``draft``: a machine estimate until a clinician signs it; ``prescriber`` is a
  display-only reference to the VisionTune version (no practitioner is known here).
* ``patient`` = the pseudonymous id (``identifier``); ``created`` / ``dateWritten`` = the
  session's finish time; ``identifier`` = the session id.
* A simulated session carries the HL7 ``v3-ActReason#HTEST`` (test health data) tag in
  ``meta.tag`` and a ``SIMULATED`` note on every lens specification.
"""

from __future__ import annotations

import json
from typing import Any

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity_units import format_snellen
from visiontune.report.finished_session import SessionRecord
from visiontune.session.trial_text import answer_kinds_text

__all__ = ["PATIENT_ID_SYSTEM", "SESSION_ID_SYSTEM", "vision_prescription", "vision_prescription_json"]

PATIENT_ID_SYSTEM = "urn:visiontune:patient-id"
SESSION_ID_SYSTEM = "urn:visiontune:session-id"
_PRODUCT_SYSTEM = "http://terminology.hl7.org/CodeSystem/ex-visionprescriptionproduct"
_ACT_REASON_SYSTEM = "http://terminology.hl7.org/CodeSystem/v3-ActReason"
_EYES = {"OD": ("right",), "OS": ("left",), "OU": ("right", "left")}


def _note_text(record: SessionRecord) -> str:
    r = record.result
    e, lvl = r.estimate, round(100 * r.interval_level)
    lo, hi = r.predicted_va_interval
    kinds = answer_kinds_text(r.trials_used, r.comparisons_used, r.sliders_used, r.lines_used)
    text = (
        f"VisionTune session {record.session_id}: exact estimate sphere {e.sphere_d:+.3f} D, cylinder "
        f"{e.cylinder_d:+.3f} D, axis {e.axis_deg:.0f} deg; {lvl}% credible intervals sphere "
        f"[{r.sphere_interval_d[0]:+.2f}, {r.sphere_interval_d[1]:+.2f}] D, cylinder "
        f"[{r.cylinder_interval_d[0]:+.2f}, {r.cylinder_interval_d[1]:+.2f}] D; predicted acuity "
        f"{r.predicted_va_logmar:.2f} logMAR ({format_snellen(r.predicted_va_logmar)}), interval "
        f"[{lo:.2f}, {hi:.2f}] logMAR; {r.trials_used} answers" + (f" ({kinds})." if kinds else ".")
    )
    if r.over_minus_risk is not None:
        text += (
            f" Over-minus check (a patient who may accommodate): more minus than the correction by over 0.25 D "
            f"{100.0 * r.over_minus_risk:.1f}% likely."
        )
    if record.info.eye.value == "OU":
        text += " Binocular session: one correction for both eyes."
    return text


def vision_prescription_dict(record: SessionRecord) -> dict[str, Any]:
    """The resource as a plain JSON-ready dict (before validation)."""
    info, rounded = record.info, record.result.rounded
    notes = [{"text": _note_text(record)}]
    if info.simulated:
        notes.insert(0, {"text": "SIMULATED: answers from a simulated patient, not a real refraction."})
    axis = round(rounded.axis_deg)
    if rounded.cylinder_d != 0.0:
        if axis == 0:
            axis = 180
        if not 1 <= axis <= 180 or axis != rounded.axis_deg:
            raise InvalidInputError(f"result.rounded.axis_deg: expected whole degrees in 1-180, got {rounded.axis_deg}")
    specs = []
    for eye in _EYES[info.eye.value]:
        spec = {
            "product": {"coding": [{"system": _PRODUCT_SYSTEM, "code": "lens"}]},
            "eye": eye,
            "sphere": rounded.sphere_d,
            "cylinder": rounded.cylinder_d,
            "note": notes,
        }
        if rounded.cylinder_d != 0.0:
            spec["axis"] = axis
        specs.append(spec)
    when = (info.finished_at or info.created_at).isoformat()
    resource: dict[str, Any] = {
        "resourceType": "VisionPrescription",
        "id": f"visiontune-session-{info.session_id}",
        "identifier": [{"system": SESSION_ID_SYSTEM, "value": str(info.session_id)}],
        "status": "draft",
        "created": when,
        "dateWritten": when,
        "patient": {"identifier": {"system": PATIENT_ID_SYSTEM, "value": info.patient_id}},
        "prescriber": {"display": f"VisionTune {info.software_version} (automated estimate, to be confirmed)"},
        "lensSpecification": specs,
    }
    if info.simulated:
        resource["meta"] = {"tag": [{"system": _ACT_REASON_SYSTEM, "code": "HTEST", "display": "test health data"}]}
    return resource


def vision_prescription(record: SessionRecord):
    """A validated ``fhir.resources.R4B.visionprescription.VisionPrescription`` for ``record``.

    Raises :class:`~visiontune.errors.InvalidInputError` if the library rejects the resource.
    """
    from fhir.resources.R4B.visionprescription import VisionPrescription
    from pydantic import ValidationError

    try:
        return VisionPrescription(**vision_prescription_dict(record))
    except ValidationError as exc:
        raise InvalidInputError(f"session {record.session_id}: FHIR VisionPrescription invalid: {exc}") from None


def vision_prescription_json(record: SessionRecord) -> str:
    """The validated resource as JSON text (FHIR JSON, absent elements left out)."""
    model = vision_prescription(record)
    return json.dumps(json.loads(model.model_dump_json(exclude_none=True)), indent=2) + "\n"
